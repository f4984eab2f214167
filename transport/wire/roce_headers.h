// RoCEv2 header structs and value enums, expanded from spec/rocev2.def (spec/rocev2.md).
#pragma once

#include "spec/rocev2.def"
#include "transport/wire/header_gen.h"

namespace uet::wire {

#define ROCEV2_WIRE_ENUM(id, Name, title) WIRE_DEFINE_ENUM(ROCEV2, id, Name)
ROCEV2_VALUE_TABLES(ROCEV2_WIRE_ENUM)
#undef ROCEV2_WIRE_ENUM

#define ROCEV2_WIRE_HEADER(...) WIRE_DEFINE_HEADER(ROCEV2, __VA_ARGS__)
ROCEV2_HEADERS(ROCEV2_WIRE_HEADER)
#undef ROCEV2_WIRE_HEADER

inline constexpr const HeaderDesc* kRoceHeaders[] = {ROCEV2_HEADERS(WIRE_DESC_PTR)};

inline constexpr uint16_t kRoceUdpPort = ROCEV2_UDP_DPORT;
inline constexpr size_t kIcrcSize = ROCEV2_ICRC_SIZE;

// Extended headers and payload permission of each opcode (spec/rocev2.md §4).
struct RoceLayout {
  bool known;
  uint8_t ext;  // ROCEV2_X_* bits
  bool payload;
};

constexpr RoceLayout roce_layout(uint8_t opcode) noexcept {
#define ROCEV2_LAYOUT_CASE(k, x, p) \
  case static_cast<uint8_t>(RoceOpcode::k): \
    return RoceLayout{true, static_cast<uint8_t>(x), (p) != 0};
  switch (opcode) { ROCEV2_OPCODE_LAYOUT(ROCEV2_LAYOUT_CASE) }
#undef ROCEV2_LAYOUT_CASE
  return RoceLayout{false, 0, false};
}

// AETH credit count code -> credits; -1 for 0x1F ("unlimited").
constexpr int aeth_credits(uint8_t code) noexcept {
#define ROCEV2_CREDIT_CASE(c, n) \
  case c:                        \
    return n;
  switch (code) { ROCEV2_AETH_CREDITS(ROCEV2_CREDIT_CASE) }
#undef ROCEV2_CREDIT_CASE
  return -1;
}

// RNR NAK timer code -> microseconds.
constexpr uint32_t rnr_timer_us(uint8_t code) noexcept {
#define ROCEV2_RNR_CASE(c, us) \
  case c:                      \
    return us;
  switch (code & 0x1F) { ROCEV2_RNR_TIMER_US(ROCEV2_RNR_CASE) }
#undef ROCEV2_RNR_CASE
  return 0;
}

}  // namespace uet::wire
