// Expands the spec/ tables into C++: one enum per value table, one header struct per header
// row with an accessor pair per field, and reflection tables (FieldDesc/HeaderDesc).
//
// A header struct is a trivially copyable array of bytes (alignment 1) with accessors
// generated from its rows:
//
//   struct PdsAck {
//     uint8_t raw[12];
//     constexpr uint32_t cack_psn() const noexcept;          // from F(cack_psn, 4, 4, 0, ...)
//     constexpr void set_cack_psn(uint32_t v) noexcept;
//     ...
//     constexpr bool reserved_clear() const noexcept;        // every RSVD row is zero
//   };
//
// so a received frame is read in place (`const PdsAck& h = *as<PdsAck>(p)`) and a frame being
// built is written in place; nothing is copied. Used by net_headers.h, uet_headers.h and
// roce_headers.h, each of which expands one spec/*.def file with its family prefix.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "transport/wire/field.h"

#define WIRE_PASTE3_(a, b, c) a##b##c
#define WIRE_PASTE3(a, b, c) WIRE_PASTE3_(a, b, c)

// ----------------------------------------------------------------- value tables
#define WIRE_ENUM_ROW(k, v, n, d) k = v,
#define WIRE_VALUE_DESC_ROW(k, v, n, d) ::uet::wire::ValueDesc{v, n, d},
#define WIRE_TO_STRING_ROW(k, v, n, d) \
  case v:                              \
    return n;

#define WIRE_DEFINE_ENUM(P, id, Name)                                                      \
  enum class Name : uint32_t { WIRE_PASTE3(P, _VALS_, id)(WIRE_ENUM_ROW) };                \
  inline constexpr ::uet::wire::ValueDesc k##Name##Values[] = {                            \
      WIRE_PASTE3(P, _VALS_, id)(WIRE_VALUE_DESC_ROW)};                                    \
  constexpr std::string_view to_string(Name v) noexcept {                                  \
    switch (static_cast<uint32_t>(v)) { WIRE_PASTE3(P, _VALS_, id)(WIRE_TO_STRING_ROW) } \
    return {};                                                                             \
  }                                                                                        \
  namespace vals_enum {                                                                    \
  using id = Name;                                                                         \
  }

// ---------------------------------------------------------------------- headers
#define WIRE_FIELD_ACCESSORS(name, off, width, mask, kind, vals, title)                         \
  using name##_field =                                                                          \
      ::uet::wire::Field<off, width, mask, ::uet::wire::Kind::kind, ::uet::wire::vals_enum::vals>; \
  constexpr name##_field::Value name() const noexcept { return name##_field::get(raw); }        \
  constexpr void set_##name(name##_field::Value v) noexcept { name##_field::set(raw, v); }

#define WIRE_RSVD_ZERO_UDEC(off, width, mask) true
#define WIRE_RSVD_ZERO_UHEX(off, width, mask) true
#define WIRE_RSVD_ZERO_SDEC(off, width, mask) true
#define WIRE_RSVD_ZERO_FLAG(off, width, mask) true
#define WIRE_RSVD_ZERO_BYTES(off, width, mask) true
#define WIRE_RSVD_ZERO_RSVD(off, width, mask) \
  ((::uet::wire::load_be_n<width>(raw + (off)) & ::uet::wire::effective_mask(width, mask)) == 0)
#define WIRE_RSVD_CHECK(name, off, width, mask, kind, vals, title) \
  &&WIRE_RSVD_ZERO_##kind(off, width, mask)

#define WIRE_DESC_MASK_UDEC(w, m) ::uet::wire::effective_mask(w, m)
#define WIRE_DESC_MASK_UHEX(w, m) ::uet::wire::effective_mask(w, m)
#define WIRE_DESC_MASK_SDEC(w, m) ::uet::wire::effective_mask(w, m)
#define WIRE_DESC_MASK_FLAG(w, m) ::uet::wire::effective_mask(w, m)
#define WIRE_DESC_MASK_RSVD(w, m) ::uet::wire::effective_mask(w, m)
#define WIRE_DESC_MASK_BYTES(w, m) uint64_t{0}
#define WIRE_FIELD_DESC(name, off, width, mask, kind, vals, title)                      \
  ::uet::wire::FieldDesc{#name, off, width, WIRE_DESC_MASK_##kind(width, mask),          \
                         ::uet::wire::Kind::kind, #vals, title},

#define WIRE_DEFINE_HEADER(P, id, Name, size, prefix, section, title)                       \
  struct Name {                                                                             \
    static constexpr size_t kSize = size;                                                   \
    uint8_t raw[size];                                                                      \
    WIRE_PASTE3(P, _FIELDS_, id)(WIRE_FIELD_ACCESSORS)                                      \
    constexpr bool reserved_clear() const noexcept {                                        \
      return true WIRE_PASTE3(P, _FIELDS_, id)(WIRE_RSVD_CHECK);                            \
    }                                                                                       \
  };                                                                                        \
  static_assert(sizeof(Name) == (size), "header size must match its spec row");             \
  static_assert(alignof(Name) == 1 && std::is_trivially_copyable_v<Name>);                  \
  inline constexpr ::uet::wire::FieldDesc k##Name##Fields[] = {                             \
      WIRE_PASTE3(P, _FIELDS_, id)(WIRE_FIELD_DESC)};                                       \
  inline constexpr ::uet::wire::HeaderDesc k##Name##Desc = {#id,    prefix, section, title, \
                                                             size,  k##Name##Fields};       \
  template <>                                                                               \
  struct HeaderTraits<Name> {                                                               \
    static constexpr const HeaderDesc& desc = k##Name##Desc;                                \
  };

#define WIRE_DESC_PTR(id, Name, size, prefix, section, title) &k##Name##Desc,

namespace uet::wire {

namespace vals_enum {
using none = void;
}

// HeaderTraits<H>::desc is the reflection entry of header struct H.
template <typename H>
struct HeaderTraits;

// Views `p` as header H in place. The caller has checked that H::kSize bytes are there.
template <typename H>
constexpr const H* as(const uint8_t* p) noexcept {
  return reinterpret_cast<const H*>(p);
}
template <typename H>
constexpr H* as(uint8_t* p) noexcept {
  return reinterpret_cast<H*>(p);
}

// Header H built in registers, for the data path: set<H::name_field>(v) merges a field into
// 64-bit words holding the header's bytes big-endian (word i: bytes 8i..8i+7), and store()
// writes each word once. The same bytes as H's set_ accessors on a zeroed H, without their
// narrow read-modify-write stores (a header filled in memory by byte and short stores, then
// copied with wide loads, stalls on store forwarding; bench/NOTES.md, "Third round (h/engine3)").
template <typename H>
class HeaderWords {
 public:
  static constexpr size_t kWords = (H::kSize + 7) / 8;

  template <typename F>
  constexpr void set(typename F::Value v) noexcept {
    static_assert(F::kOff + F::kWidth <= H::kSize, "field outside the header");
    const uint64_t bits = (static_cast<uint64_t>(v) << F::kShift) & F::kMask;
    constexpr size_t first = F::kOff / 8, last = (F::kOff + F::kWidth - 1) / 8;
    if constexpr (first == last) {
      constexpr int sh = 8 * static_cast<int>(8 - F::kOff % 8 - F::kWidth);
      w_[first] = (w_[first] & ~(F::kMask << sh)) | (bits << sh);
    } else {  // the field's high bytes end word `first`, its low bytes start word `last`
      constexpr int low = 8 * static_cast<int>(F::kOff + F::kWidth - 8 * last);
      w_[first] = (w_[first] & ~(F::kMask >> low)) | (bits >> low);
      w_[last] = (w_[last] & ~(F::kMask << (64 - low))) | (bits << (64 - low));
    }
  }

  // The first N words as built so far, and such words ORed into this header: for fields packed
  // once and merged into many headers (the bits they set must still be clear in each).
  template <size_t N>
  constexpr std::array<uint64_t, N> words() const noexcept {
    static_assert(N <= kWords);
    std::array<uint64_t, N> w{};
    for (size_t i = 0; i < N; ++i) w[i] = w_[i];
    return w;
  }
  template <size_t N>
  constexpr void merge_words(const std::array<uint64_t, N>& w) noexcept {
    static_assert(N <= kWords);
    for (size_t i = 0; i < N; ++i) w_[i] |= w[i];
  }

  // Writes the first N bytes of the header (all of it by default) to `p`.
  template <size_t N = H::kSize>
  void store(uint8_t* p) const noexcept {
    static_assert(N <= H::kSize);
    // Unrolled at compile time, so every word index is a constant and the words can stay in
    // registers.
    [&]<size_t... I>(std::index_sequence<I...>) {
      (store_be_n<8>(p + 8 * I, w_[I]), ...);
    }(std::make_index_sequence<N / 8>{});
    if constexpr (N % 8 != 0) store_be_n<N % 8>(p + N / 8 * 8, w_[N / 8] >> (64 - 8 * (N % 8)));
  }

 private:
  uint64_t w_[kWords] = {};
};

}  // namespace uet::wire
