// UET 1.0.1 header structs and value enums, expanded from spec/uet.def (spec/uet.md).
#pragma once

#include "spec/uet.def"
#include "transport/wire/header_gen.h"

namespace uet::wire {

#define UET_WIRE_ENUM(id, Name, title) WIRE_DEFINE_ENUM(UET, id, Name)
UET_VALUE_TABLES(UET_WIRE_ENUM)
#undef UET_WIRE_ENUM

#define UET_WIRE_HEADER(...) WIRE_DEFINE_HEADER(UET, __VA_ARGS__)
UET_HEADERS(UET_WIRE_HEADER)
#undef UET_WIRE_HEADER

inline constexpr const HeaderDesc* kUetHeaders[] = {UET_HEADERS(WIRE_DESC_PTR)};

inline constexpr uint16_t kUetUdpPort = UET_UDP_DPORT;
inline constexpr uint8_t kUetIpProtoDefault = UET_IP_PROTO_DEFAULT;
inline constexpr uint8_t kSesVersion = UET_SES_VERSION;
inline constexpr uint8_t kDscpTrimmed = UET_DSCP_TRIMMED;

}  // namespace uet::wire
