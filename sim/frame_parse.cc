#include "sim/frame_parse.h"

#include "sim/network.h"
#include "sim/rng.h"
#include "transport/wire/checksum.h"
#include "transport/wire/decode.h"
#include "transport/wire/net_headers.h"

namespace uet::sim {

using wire::as;

namespace {

void set_dscp_ecn(Frame& f, const FrameInfo& info, uint8_t dscp, uint8_t ecn) noexcept {
  uint8_t* ip = f.data + info.l3;
  if (info.ipv6) {
    wire::Ipv6* h = as<wire::Ipv6>(ip);
    h->set_dscp(dscp);
    h->set_ecn(ecn);
  } else {
    wire::Ipv4* h = as<wire::Ipv4>(ip);
    h->set_dscp(dscp);
    h->set_ecn(ecn);
    h->set_checksum(wire::ipv4_header_checksum(ip, info.l4 - info.l3));
  }
}

}  // namespace

bool mark_ce(Frame& f) noexcept {
  FrameInfo info;
  if (!parse_frame(f, &info) || info.ecn == 0) return false;
  if (info.ecn != 3) set_dscp_ecn(f, info, info.dscp, 3);
  return true;
}

bool set_dscp(Frame& f, uint8_t dscp) noexcept {
  FrameInfo info;
  if (!parse_frame(f, &info) || info.dscp == dscp) return false;
  set_dscp_ecn(f, info, dscp, info.ecn);
  return true;
}

bool trim_uet(Frame& f, uint8_t dscp) noexcept {
  FrameInfo info;
  if (!parse_frame(f, &info) || info.protocol != NET_IPPROTO_UDP ||
      info.dport != wire::kUetUdpPort) {
    return false;
  }
  const size_t uet = info.l4 + wire::Udp::kSize;
  if (f.len <= uet) return false;
  wire::Decoded d;
  const wire::WireError err = wire::decode_uet(std::span<const uint8_t>(f.data + uet, f.len - uet), &d);
  // With the payload carried by length, the SES length check cannot pass; the headers did.
  if ((err != wire::WireError::kOk && err != wire::WireError::kBadSesLength) || d.depth == 0) {
    return false;
  }
  size_t headers_end = 0;
  if (!d.sealed.empty()) {
    // spec/uet.md §5.5: the PDS type of a sealed frame is ciphertext; any sealed frame is cut
    // to its TSS header and the bytes that hold the longest request's PDS and SES headers.
    const wire::HeaderRef& tss = d.stack[d.depth - 1];
    headers_end = uet + tss.offset + tss.desc->size + kSealedTrimBytes;
  } else {
    if (!wire::is_pdc_request(d.pds_type)) return false;
    const wire::HeaderRef& last = d.stack[d.depth - 1];
    headers_end = uet + last.offset + last.desc->size;
  }
  if (headers_end >= f.bytes_on_wire()) return false;  // nothing to cut
  f.len = static_cast<uint32_t>(headers_end);
  f.wire_len = 0;
  f.priority = Priority::kControl;
  uint8_t* ip = f.data + info.l3;
  if (info.ipv6) {
    as<wire::Ipv6>(ip)->set_payload_length(static_cast<uint16_t>(f.len - info.l4));
  } else {
    as<wire::Ipv4>(ip)->set_total_length(static_cast<uint16_t>(f.len - info.l3));
  }
  wire::Udp* udp = as<wire::Udp>(f.data + info.l4);
  udp->set_length(static_cast<uint16_t>(f.len - info.l4));
  udp->set_checksum(0);
  set_dscp_ecn(f, info, dscp, info.ecn);
  return true;
}

}  // namespace uet::sim
