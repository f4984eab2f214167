#include "transport/atomic.h"

#include <complex>
#include <cstring>
#include <type_traits>

namespace uet {
namespace {

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 Uint128;

// bfloat16 is the high half of a float: widened exactly, narrowed to nearest even.
struct Bf16 {
  uint16_t bits;
};
float widen(Bf16 h) noexcept {
  const uint32_t b = uint32_t{h.bits} << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
Bf16 narrow_bf16(float f) noexcept {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return Bf16{static_cast<uint16_t>((b >> 16) | 0x40)};
  b += 0x7FFFu + ((b >> 16) & 1);  // round to nearest, ties to even
  return Bf16{static_cast<uint16_t>(b >> 16)};
}

enum class Kind { kInt, kReal, kComplex };

// An element type: how it is stored (S) and computed (V).
template <class S, Kind K, class V = S>
struct Elem {
  using Stored = S;
  using Value = V;
  static constexpr Kind kKind = K;
  static V load(const uint8_t* p) noexcept {
    S s;
    std::memcpy(&s, p, sizeof s);
    if constexpr (std::is_same_v<S, Bf16>) {
      return widen(s);
    } else {
      return static_cast<V>(s);
    }
  }
  static void store(uint8_t* p, V v) noexcept {
    S s{};  // LONG_DOUBLE's six padding bytes are stored as zeros
    if constexpr (std::is_same_v<S, Bf16>) {
      s = narrow_bf16(v);
    } else {
      s = static_cast<S>(v);
    }
    std::memcpy(p, &s, sizeof s);
  }
};

// Integer arithmetic wraps: done unsigned, at least as wide as unsigned int (no promotion to
// a signed int that could overflow).
template <class T>
struct Wide {
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <>
struct Wide<Int128> {
  using type = Uint128;
};
template <>
struct Wide<Uint128> {
  using type = Uint128;
};

template <class E>
typename E::Value combine(AtomicOp op, typename E::Value t, typename E::Value o,
                          typename E::Value c) noexcept {
  using V = typename E::Value;
  constexpr Kind K = E::kKind;
  const auto truth = [](bool b) { return b ? V(1) : V(0); };
  if constexpr (K == Kind::kInt) {
    using W = typename Wide<V>::type;
    const W tw = static_cast<W>(t), ow = static_cast<W>(o), cw = static_cast<W>(c);
    switch (op) {
      case AtomicOp::kSum: return static_cast<V>(tw + ow);
      case AtomicOp::kDiff: return static_cast<V>(tw - ow);
      case AtomicOp::kProd: return static_cast<V>(tw * ow);
      case AtomicOp::kBor: return static_cast<V>(tw | ow);
      case AtomicOp::kBand: return static_cast<V>(tw & ow);
      case AtomicOp::kBxor: return static_cast<V>(tw ^ ow);
      case AtomicOp::kMswap: return static_cast<V>((ow & cw) | (tw & ~cw));
      default: break;
    }
  } else {
    switch (op) {
      case AtomicOp::kSum: return t + o;
      case AtomicOp::kDiff: return t - o;
      case AtomicOp::kProd: return t * o;
      default: break;
    }
  }
  switch (op) {
    case AtomicOp::kLor: return truth(t != V(0) || o != V(0));
    case AtomicOp::kLand: return truth(t != V(0) && o != V(0));
    case AtomicOp::kLxor: return truth((t != V(0)) != (o != V(0)));
    case AtomicOp::kRead: return t;
    case AtomicOp::kWrite: return o;
    case AtomicOp::kCswap: return c == t ? o : t;
    case AtomicOp::kCswapNe: return c != t ? o : t;
    default: break;
  }
  if constexpr (K != Kind::kComplex) {
    switch (op) {  // as libfabric: the compare value on the left (FI_CSWAP_LE: compare <= target)
      case AtomicOp::kMin: return o < t ? o : t;
      case AtomicOp::kMax: return o > t ? o : t;
      case AtomicOp::kCswapLe: return c <= t ? o : t;
      case AtomicOp::kCswapLt: return c < t ? o : t;
      case AtomicOp::kCswapGe: return c >= t ? o : t;
      case AtomicOp::kCswapGt: return c > t ? o : t;
      default: break;
    }
  }
  return t;  // unsupported pairs never reach here (atomic_supported)
}

template <class E>
void apply(AtomicOp op, uint8_t* target, const uint8_t* operand, const uint8_t* compare,
           uint8_t* fetched, uint32_t count) noexcept {
  using V = typename E::Value;
  constexpr size_t n = sizeof(typename E::Stored);
  const bool reads_operand = op != AtomicOp::kRead;
  const bool reads_compare = atomic_has_compare(op);
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t* at = target + i * n;
    const V t = E::load(at);
    const V o = reads_operand ? E::load(operand + i * n) : V{};
    const V c = reads_compare ? E::load(compare + i * n) : V{};
    if (fetched != nullptr) std::memcpy(fetched + i * n, at, n);  // the bytes as they were
    if (op != AtomicOp::kRead) E::store(at, combine<E>(op, t, o, c));
  }
}

}  // namespace

AtomicFault atomic_supported(AtomicOp op, AtomicType type) noexcept {
  if (static_cast<size_t>(type) >= kNumAtomicTypes) return AtomicFault::kUnsupportedType;
  if (static_cast<size_t>(op) >= kNumAtomicOps) return AtomicFault::kUnsupportedOp;
  const bool integer = type <= AtomicType::kUint128;
  const bool complex = type == AtomicType::kFloatComplex || type == AtomicType::kDoubleComplex ||
                       type == AtomicType::kLongDoubleComplex;
  if (integer) return AtomicFault::kNone;
  switch (op) {
    case AtomicOp::kBor:
    case AtomicOp::kBand:
    case AtomicOp::kBxor:
    case AtomicOp::kMswap:
      return AtomicFault::kUnsupportedOp;
    case AtomicOp::kMin:
    case AtomicOp::kMax:
    case AtomicOp::kCswapLe:
    case AtomicOp::kCswapLt:
    case AtomicOp::kCswapGe:
    case AtomicOp::kCswapGt:
      return complex ? AtomicFault::kUnsupportedOp : AtomicFault::kNone;
    default:
      return AtomicFault::kNone;
  }
}

void atomic_apply(AtomicOp op, AtomicType type, uint8_t* target, const uint8_t* operand,
                  const uint8_t* compare, uint8_t* fetched, uint32_t count) noexcept {
  switch (type) {
    case AtomicType::kInt8: return apply<Elem<int8_t, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kUint8: return apply<Elem<uint8_t, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kInt16: return apply<Elem<int16_t, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kUint16: return apply<Elem<uint16_t, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kInt32: return apply<Elem<int32_t, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kUint32: return apply<Elem<uint32_t, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kInt64: return apply<Elem<int64_t, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kUint64: return apply<Elem<uint64_t, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kInt128: return apply<Elem<Int128, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kUint128: return apply<Elem<Uint128, Kind::kInt>>(op, target, operand, compare, fetched, count);
    case AtomicType::kFloat: return apply<Elem<float, Kind::kReal>>(op, target, operand, compare, fetched, count);
    case AtomicType::kDouble: return apply<Elem<double, Kind::kReal>>(op, target, operand, compare, fetched, count);
    case AtomicType::kFloatComplex: return apply<Elem<std::complex<float>, Kind::kComplex>>(op, target, operand, compare, fetched, count);
    case AtomicType::kDoubleComplex: return apply<Elem<std::complex<double>, Kind::kComplex>>(op, target, operand, compare, fetched, count);
    case AtomicType::kLongDouble: return apply<Elem<long double, Kind::kReal>>(op, target, operand, compare, fetched, count);
    case AtomicType::kLongDoubleComplex: return apply<Elem<std::complex<long double>, Kind::kComplex>>(op, target, operand, compare, fetched, count);
    case AtomicType::kBf16: return apply<Elem<Bf16, Kind::kReal, float>>(op, target, operand, compare, fetched, count);
    case AtomicType::kFp16: return apply<Elem<_Float16, Kind::kReal, float>>(op, target, operand, compare, fetched, count);
  }
}

static_assert(sizeof(long double) == 16 && sizeof(_Float16) == 2,
              "AtomicType's sizes (atomic_size) are x86-64's");

}  // namespace uet
