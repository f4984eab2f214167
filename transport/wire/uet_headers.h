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

// §3.2: whether a PDS type is a request (it carries a request SES header, §6 rule 4), and one
// on a PDC (it consumes a PSN and may be trimmed, §3.3, §3.14); UET_PDS_REQUESTS.
constexpr bool is_request(PdsType t) noexcept {
#define UET_WIRE_REQUEST(id, on_pdc) t == PdsType::id ||
  return UET_PDS_REQUESTS(UET_WIRE_REQUEST) false;
#undef UET_WIRE_REQUEST
}
constexpr bool is_pdc_request(PdsType t) noexcept {
#define UET_WIRE_PDC_REQUEST(id, on_pdc) (on_pdc && t == PdsType::id) ||
  return UET_PDS_REQUESTS(UET_WIRE_PDC_REQUEST) false;
#undef UET_WIRE_PDC_REQUEST
}
// §4: whether a next-header value names a request SES header; UET_NEXT_HDR_REQUESTS.
constexpr bool is_request_ses(NextHeader nh) noexcept {
#define UET_WIRE_REQUEST_SES(id) nh == NextHeader::id ||
  return UET_NEXT_HDR_REQUESTS(UET_WIRE_REQUEST_SES) false;
#undef UET_WIRE_REQUEST_SES
}

}  // namespace uet::wire
