// The arithmetic of atomics (spec/uet.md §4.5.1), apart from how they travel: which operation
// a type admits and what it does to the target's elements. The UET engine's target runs it on
// registered memory; tests and tools use it as the reference. Sans-IO, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/api.h"

namespace uet {

// Why an atomic cannot run on a type (the AMO_* return codes of spec/uet.md §4.9).
enum class AtomicFault : uint8_t {
  kNone,
  kUnsupportedOp,    // the operation is not defined on the type (a bitwise op on a float)
  kUnsupportedType,  // the type is not one of the spec's
};

// Which operations a type admits, as libfabric's fi_atomicvalid tables them: integers take
// every operation; real floating types (FLOAT, DOUBLE, LONG_DOUBLE, BF16, FP16) no bitwise op
// and no MSWAP; complex types neither those nor MIN, MAX and the ordered compares.
AtomicFault atomic_supported(AtomicOp op, AtomicType type) noexcept;

// Applies `op` to `count` elements of `type` at `target` (any alignment) with the operand
// elements at `operand` (the swap values for CSWAP*, MSWAP; unread by READ) and `compare`
// (CSWAP*: the compare values; MSWAP: the masks; else unread). With `fetched`, the values
// the elements held before land there. The pair must be supported (atomic_supported).
// Integers wrap; floating results follow the host's arithmetic (no exception is raised, so
// the AMO_FP_* codes are never returned).
void atomic_apply(AtomicOp op, AtomicType type, uint8_t* target, const uint8_t* operand,
                  const uint8_t* compare, uint8_t* fetched, uint32_t count) noexcept;

// Whether `op` takes compare values (the CSWAP family) or masks (MSWAP) besides its operand.
constexpr bool atomic_is_cswap(AtomicOp op) noexcept {
  return op >= AtomicOp::kCswap && op <= AtomicOp::kCswapGt;
}
constexpr bool atomic_has_compare(AtomicOp op) noexcept {
  return atomic_is_cswap(op) || op == AtomicOp::kMswap;
}

}  // namespace uet
