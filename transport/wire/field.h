// Typed access to one field of a wire header, as described by a row of a spec/ table.
//
// A field is a big-endian unsigned integer of `W` bytes at byte offset `Off`, masked with
// `Mask` (0 = all bits) and shifted down by the mask's trailing zeros (spec/README.md).
// Everything here is constexpr, branch-free after inlining, and never allocates: the
// header structs in *_headers.h call these from their generated accessors.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace uet::wire {

// The `kind` column of a spec table.
enum class Kind : uint8_t { UDEC, UHEX, SDEC, FLAG, RSVD, BYTES };

// Big-endian load/store of 1..8 bytes.
constexpr uint64_t load_be(const uint8_t* p, size_t width) noexcept {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v = (v << 8) | p[i];
  return v;
}

constexpr void store_be(uint8_t* p, size_t width, uint64_t v) noexcept {
  for (size_t i = width; i-- > 0;) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}

// The same with the width known at compile time (every generated accessor): 1, 2, 4 and 8
// bytes are one load or store and a byte swap, 3, 5, 6 and 7 two of them; constant evaluation
// takes the loops above.
template <size_t W>
constexpr uint64_t load_be_n(const uint8_t* p) noexcept {
  if (std::is_constant_evaluated() || std::endian::native != std::endian::little) {
    return load_be(p, W);
  } else if constexpr (W == 1) {
    return p[0];
  } else if constexpr (W == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return __builtin_bswap16(v);
  } else if constexpr (W == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return __builtin_bswap32(v);
  } else if constexpr (W == 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return __builtin_bswap64(v);
  } else if constexpr (W == 3) {
    return load_be_n<2>(p) << 8 | p[2];
  } else {  // 5..7: the first four bytes, then the rest
    return load_be_n<4>(p) << (8 * (W - 4)) | load_be_n<W - 4>(p + 4);
  }
}

template <size_t W>
constexpr void store_be_n(uint8_t* p, uint64_t v) noexcept {
  if (std::is_constant_evaluated() || std::endian::native != std::endian::little) {
    store_be(p, W, v);
  } else if constexpr (W == 1) {
    p[0] = static_cast<uint8_t>(v);
  } else if constexpr (W == 2) {
    const uint16_t x = __builtin_bswap16(static_cast<uint16_t>(v));
    std::memcpy(p, &x, 2);
  } else if constexpr (W == 4) {
    const uint32_t x = __builtin_bswap32(static_cast<uint32_t>(v));
    std::memcpy(p, &x, 4);
  } else if constexpr (W == 8) {
    const uint64_t x = __builtin_bswap64(v);
    std::memcpy(p, &x, 8);
  } else if constexpr (W == 3) {
    store_be_n<2>(p, v >> 8);
    p[2] = static_cast<uint8_t>(v);
  } else {
    store_be_n<4>(p, v >> (8 * (W - 4)));
    store_be_n<W - 4>(p + 4, v);
  }
}

constexpr uint64_t width_mask(size_t width) noexcept {
  return width >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1;
}

// The mask of a row, with 0 meaning "every bit of the width".
constexpr uint64_t effective_mask(size_t width, uint64_t mask) noexcept {
  return mask == 0 ? width_mask(width) : mask;
}

namespace detail {

template <uint64_t MaxValue>
using UintFor = std::conditional_t<
    (MaxValue <= 0xFF), uint8_t,
    std::conditional_t<(MaxValue <= 0xFFFF), uint16_t,
                       std::conditional_t<(MaxValue <= 0xFFFFFFFF), uint32_t, uint64_t>>>;

template <size_t W>
using IntFor = std::conditional_t<
    (W == 1), int8_t,
    std::conditional_t<(W == 2), int16_t, std::conditional_t<(W <= 4), int32_t, int64_t>>>;

}  // namespace detail

// Field<...>::Value is the accessor type: the value table's enum when the row names one,
// bool for FLAG, a signed integer for SDEC, otherwise the narrowest unsigned integer.
template <size_t Off, size_t W, uint64_t Mask, Kind K, typename Enum>
struct Field {
  static_assert(W >= 1 && W <= 8, "integer fields are 1..8 bytes; use BYTES for wider");
  static constexpr uint64_t kMask = effective_mask(W, Mask);
  static constexpr int kShift = std::countr_zero(kMask);
  static constexpr uint64_t kMax = kMask >> kShift;
  static constexpr size_t kOff = Off;
  static constexpr size_t kWidth = W;
  static_assert((kMask & ~width_mask(W)) == 0, "mask wider than the field");

  using Raw = detail::UintFor<kMax>;
  using Value = std::conditional_t<
      !std::is_void_v<Enum>, Enum,
      std::conditional_t<K == Kind::FLAG, bool,
                         std::conditional_t<K == Kind::SDEC, detail::IntFor<W>, Raw>>>;

  static constexpr Value get(const uint8_t* hdr) noexcept {
    const uint64_t raw = (load_be_n<W>(hdr + Off) & kMask) >> kShift;
    if constexpr (K == Kind::SDEC) {
      // Sign-extend from the field's bit width.
      constexpr int bits = std::popcount(kMask);
      const uint64_t sign = uint64_t{1} << (bits - 1);
      return static_cast<Value>(static_cast<int64_t>((raw ^ sign) - sign));
    } else {
      return static_cast<Value>(raw);
    }
  }

  // Values wider than the field are truncated to its bits; neighbouring bits are kept.
  static constexpr void set(uint8_t* hdr, Value v) noexcept {
    const uint64_t bits = (static_cast<uint64_t>(v) << kShift) & kMask;
    if constexpr (kMask == width_mask(W)) {  // the whole bytes: nothing to keep
      store_be_n<W>(hdr + Off, bits);
    } else {
      store_be_n<W>(hdr + Off, (load_be_n<W>(hdr + Off) & ~kMask) | bits);
    }
  }
};

// BYTES fields: an opaque run of W bytes.
template <size_t Off, size_t W, uint64_t Mask, typename Enum>
struct Field<Off, W, Mask, Kind::BYTES, Enum> {
  static_assert(Mask == 0, "BYTES fields have no mask");
  using Value = std::span<const uint8_t, W>;
  static constexpr Value get(const uint8_t* hdr) noexcept { return Value(hdr + Off, W); }
  static constexpr void set(uint8_t* hdr, Value v) noexcept {
    for (size_t i = 0; i < W; ++i) hdr[Off + i] = v[i];
  }
};

// Reflection: a row of a spec table, for tools and tests that walk headers generically.
struct FieldDesc {
  std::string_view name;
  uint16_t offset;
  uint16_t width;
  uint64_t mask;  // effective mask (never 0) for integer kinds; 0 for BYTES
  Kind kind;
  std::string_view vals;  // value table id, "none" if there is none
  std::string_view title;
};

struct HeaderDesc {
  std::string_view id;
  std::string_view prefix;   // display-filter prefix: "pds", "ses.std", "bth", ...
  std::string_view section;  // section in spec/*.md
  std::string_view title;
  uint16_t size;
  std::span<const FieldDesc> fields;

  const FieldDesc* field(std::string_view name) const noexcept {
    for (const FieldDesc& f : fields)
      if (f.name == name) return &f;
    return nullptr;
  }
};

// Reads any integer field (sign-extended for SDEC) as a 64-bit value.
uint64_t read_field(const uint8_t* hdr, const FieldDesc& f) noexcept;
// Writes any integer field; bits outside the field are kept.
void write_field(uint8_t* hdr, const FieldDesc& f, uint64_t value) noexcept;

struct ValueDesc {
  uint32_t value;
  std::string_view name;
  std::string_view meaning;
};

}  // namespace uet::wire
