// Ethernet, 802.1Q, IPv4, IPv6 and UDP header structs, expanded from spec/net.def.
#pragma once

#include "spec/net.def"
#include "transport/wire/header_gen.h"

namespace uet::wire {

#define NET_WIRE_HEADER(...) WIRE_DEFINE_HEADER(NET, __VA_ARGS__)
NET_HEADERS(NET_WIRE_HEADER)
#undef NET_WIRE_HEADER

inline constexpr const HeaderDesc* kNetHeaders[] = {NET_HEADERS(WIRE_DESC_PTR)};

// The UDP source port in the dynamic range that carries the low 14 bits of `entropy` (UET's
// EV, spec/uet.md §2.4; RoCEv2's flow hash, spec/rocev2.md §1).
constexpr uint16_t dynamic_port(uint32_t entropy) noexcept {
  return static_cast<uint16_t>(NET_UDP_DYNAMIC_PORT_BASE | (entropy & NET_UDP_DYNAMIC_PORT_MASK));
}

}  // namespace uet::wire
