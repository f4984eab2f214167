// Ethernet, 802.1Q, IPv4, IPv6 and UDP header structs, expanded from spec/net.def.
#pragma once

#include "spec/net.def"
#include "transport/wire/header_gen.h"

namespace uet::wire {

#define NET_WIRE_HEADER(...) WIRE_DEFINE_HEADER(NET, __VA_ARGS__)
NET_HEADERS(NET_WIRE_HEADER)
#undef NET_WIRE_HEADER

inline constexpr const HeaderDesc* kNetHeaders[] = {NET_HEADERS(WIRE_DESC_PTR)};

}  // namespace uet::wire
