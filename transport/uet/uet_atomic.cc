// Atomics (spec/uet.md §4.5.1, §4.5.2): ATOMIC and FETCHING_ATOMIC on RUD and ROD. One packet
// each: the standard request names the region (match_bits), the offset and the operand bytes
// (request_length); the extension header the operation and type; the payload the operands. The
// target executes a request once: a plain ATOMIC is recorded as a WRITE is, a fetching one is
// answered like a refusal (Pdc::Target::gtd) whose answer carries the old values, held until
// the initiator's clear PSN passes it, so a duplicate is answered again and never executed
// again (NOTES.md, "Atomics").
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/atomic.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::test_bit;

// The API's atomic operations and types are the wire's values (spec/uet.def).
static_assert(static_cast<uint8_t>(AtomicOp::kMswap) ==
              static_cast<uint8_t>(wire::AtomicOpcode::kMswap));
static_assert(static_cast<uint8_t>(AtomicOp::kCswap) == UET_ATOMIC_CAS_FIRST &&
              static_cast<uint8_t>(AtomicOp::kCswapGt) == UET_ATOMIC_CAS_LAST);
static_assert(static_cast<uint8_t>(AtomicType::kFp16) ==
              static_cast<uint8_t>(wire::AtomicDataType::kFp16));

namespace {

// §4.5.2 [choice]: an operand narrower than the 16-byte compare and swap fields fills their
// first bytes, in host order as in memory; the rest is zero (spec/uet.md §4.5.2).
constexpr size_t kCasCompare = 4, kCasSwap = 20;

// The operand bytes the payload carries: none for READ and the CSWAP family (theirs ride in
// the extension header), the swap values then the masks for MSWAP, else the operands.
uint64_t payload_for(AtomicOp op, uint64_t bytes) noexcept {
  if (op == AtomicOp::kRead || atomic_is_cswap(op)) return 0;
  return op == AtomicOp::kMswap ? 2 * bytes : bytes;
}

}  // namespace

absl::Status UetEndpoint::post_atomic(const AtomicRequest& ar) {
  constexpr const char* kVerb = "post_atomic";
  if (absl::Status s = check_mode(ar.mode, Opcode::kAtomic, kVerb); !s.ok()) return s;
  const AtomicFault fault = atomic_supported(ar.op, ar.type);
  if (fault == AtomicFault::kUnsupportedType) {
    return absl::InvalidArgumentError(absl::StrCat(
        kVerb, ": type ", static_cast<int>(ar.type), " is not an AtomicType (0..",
        kNumAtomicTypes - 1, ")"));
  }
  if (fault != AtomicFault::kNone) {
    return absl::InvalidArgumentError(
        absl::StrCat(kVerb, ": op ", to_string(ar.op), " is not defined on type ",
                     to_string(ar.type), " (transport/atomic.h atomic_supported)"));
  }
  const uint64_t size = atomic_size(ar.type);
  const uint64_t most = atomic_is_cswap(ar.op) ? (size <= 16 ? 1 : 0) : kMaxAtomicBytes / size;
  if (ar.count < 1 || ar.count > most) {
    return absl::InvalidArgumentError(absl::StrCat(
        kVerb, ": count must be 1..", most, " for ", to_string(ar.op), " on ",
        to_string(ar.type), " (kMaxAtomicBytes; the CSWAP family: one element of at most 16 "
        "bytes)"));
  }
  if (ar.op != AtomicOp::kRead && ar.operand == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(kVerb, ": operand must be non-null for ",
                                                   to_string(ar.op)));
  }
  if (atomic_has_compare(ar.op) && ar.compare == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        kVerb, ": compare must be non-null for ", to_string(ar.op), " (its compare values or masks)"));
  }
  if (ar.op == AtomicOp::kRead && ar.result == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(kVerb, ": result must be non-null for READ (it fetches)"));
  }
  Op op{posted_verb(ar)};
  op.to = ar.to;
  op.compare = ar.compare;
  op.amo_op = ar.op;
  op.amo_type = ar.type;
  return post_in_mode(ar.mode, ar.peer, op, kVerb);
}

// §4.5: the extension header and the operands after the standard request of atomic `o`.
bool UetEndpoint::put_atomic(const Op& o, wire::FrameBuilder& b) {
  const auto n = static_cast<size_t>(o.length);
  if (atomic_is_cswap(o.amo_op)) {
    wire::SesCompareSwap* h = b.add<wire::SesCompareSwap>();
    if (h == nullptr) return false;
    h->set_atomic_opcode(static_cast<wire::AtomicOpcode>(o.amo_op));
    h->set_data_type(static_cast<wire::AtomicDataType>(o.amo_type));
    std::memcpy(h->raw + kCasCompare, o.compare, n);
    std::memcpy(h->raw + kCasSwap, o.src, n);
    return true;
  }
  wire::SesAtomic* h = b.add<wire::SesAtomic>();
  if (h == nullptr) return false;
  h->set_atomic_opcode(static_cast<wire::AtomicOpcode>(o.amo_op));
  h->set_data_type(static_cast<wire::AtomicDataType>(o.amo_type));
  const size_t carried = payload_for(o.amo_op, n);
  if (carried == 0) return true;
  uint8_t* at = b.add_bytes(carried);
  if (at == nullptr) return false;
  std::memcpy(at, o.src, n);
  if (o.amo_op == AtomicOp::kMswap) std::memcpy(at + n, o.compare, n);
  return true;
}

// §4.9: why the target cannot run this atomic (kNull: it can), counted.
wire::SesReturnCode UetEndpoint::atomic_refusal(const wire::SesStandardRequest& ses,
                                                const uint8_t* ext,
                                                std::span<const uint8_t> payload, size_t elided) {
  const auto op = static_cast<AtomicOp>(ext[0]);
  const auto type = static_cast<AtomicType>(ext[1]);
  const AtomicFault fault = atomic_supported(op, type);
  if (fault == AtomicFault::kUnsupportedType) return wire::SesReturnCode::kAmoUnsupportedDt;
  if (fault != AtomicFault::kNone) return wire::SesReturnCode::kAmoUnsupportedOp;
  const uint64_t size = atomic_size(type);
  const uint64_t len = ses.request_length();
  if (len == 0 || len % size != 0 || (atomic_is_cswap(op) && len != size) ||
      len > (atomic_is_cswap(op) ? 16 : kMaxAtomicBytes)) {
    return wire::SesReturnCode::kAmoUnsupportedSize;
  }
  // The operands must all be here (a frame carried by length has none to compute with).
  if (elided != 0 || payload.size() != payload_for(op, len) || !ses.som() || !ses.eom()) {
    return wire::SesReturnCode::kAmoUnsupportedSize;
  }
  const uint64_t key = ses.match_bits(), at = ses.buffer_offset();
  if (const wire::SesReturnCode why = check_region(key, at, len); why != wire::SesReturnCode::kNull)
    return why;
  // Aligned to the element (at most 8 bytes), as the host's own atomics need.
  const auto addr = reinterpret_cast<uintptr_t>(region_base(key) + at);
  if (addr % std::min<uint64_t>(size, 8) != 0) return wire::SesReturnCode::kAmoUnaligned;
  return wire::SesReturnCode::kNull;
}

// §4.5.1 at the target: checked, then executed once. kRecord: a plain ATOMIC, recorded as
// received; kDone: refused, or a fetching one answered with its held values (Pdc::Target::gtd);
// kWait: every result is held (NACKed NO_SES_MSG_AVAIL: it comes again, or gives up with `ie`).
UetEndpoint::Exec UetEndpoint::rx_atomic(Pdc& p, const wire::SesStandardRequest& ses,
                                         const uint8_t* ext, std::span<const uint8_t> payload,
                                         size_t elided, uint32_t psn) {
  if (ses.ie()) {  // §4.1: given up by its initiator (no result was free): never executed
    ++rare().rx_initiator_err;
    return Exec::kRecord;
  }
  if (const wire::SesReturnCode why = atomic_refusal(ses, ext, payload, elided);
      why != wire::SesReturnCode::kNull) {
    ++rare().rx_atomic_refused;
    refuse(p, psn, static_cast<uint8_t>(why), ses.message_id());
    return Exec::kDone;
  }
  const bool fetching = ses.opcode() == wire::SesOpcode::kFetchingAtomic;
  uint16_t result = 0;
  if (fetching) {
    if (tab().amo_results.empty()) {  // the endpoint's first fetching atomic: its result table
      tab().amo_results.assign(size_t{config_.atomic_results} * kMaxAtomicBytes, 0);
      tab().amo_free.resize(config_.atomic_results);
      for (uint32_t i = 0; i < config_.atomic_results; ++i) {
        tab().amo_free[i] = static_cast<uint16_t>(config_.atomic_results - i);
      }
    }
    if (tab().amo_free.empty()) {
      ++rare().rx_atomic_full;
      queue_nack(p, wire::NackCode::kNoSesMsgAvail, psn);
      return Exec::kWait;
    }
    result = tab().amo_free.back();
    tab().amo_free.pop_back();
  }
  const auto op = static_cast<AtomicOp>(ext[0]);
  const uint64_t len = ses.request_length();
  const uint8_t* operand = payload.data();
  const uint8_t* compare = op == AtomicOp::kMswap ? payload.data() + len : nullptr;
  if (atomic_is_cswap(op)) {
    compare = ext + kCasCompare;
    operand = ext + kCasSwap;
  }
  uint8_t* fetched = fetching ? tab().amo_results.data() + size_t{result - 1u} * kMaxAtomicBytes
                              : nullptr;
  const uint64_t key = ses.match_bits();
  atomic_apply(op, static_cast<AtomicType>(ext[1]), region_base(key) + ses.buffer_offset(),
               operand, compare, fetched, static_cast<uint32_t>(len / atomic_size(
                                                                    static_cast<AtomicType>(ext[1]))));
  ++rare().rx_atomics;
  if (!fetching) return Exec::kRecord;
  // Held like a refusal: a hole in the receive state until the initiator clears it, the
  // answer (with the values) repeated to every duplicate.
  refuse(p, psn, static_cast<uint8_t>(wire::SesReturnCode::kOk), ses.message_id(), result,
         static_cast<uint32_t>(len));
  return Exec::kDone;
}

void UetEndpoint::free_result(uint16_t result) noexcept { tab().amo_free.push_back(result); }

}  // namespace uet
