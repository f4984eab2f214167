#include "sim/frame_parse.h"

#include "sim/network.h"
#include "sim/rng.h"
#include "transport/wire/checksum.h"
#include "transport/wire/decode.h"
#include "transport/wire/net_headers.h"

namespace uet::sim {

using wire::as;

bool parse_frame(const Frame& f, FrameInfo* info) noexcept {
  const uint8_t* d = f.data;
  size_t at = wire::Ethernet::kSize;
  if (f.len < at) return false;
  uint16_t type = as<wire::Ethernet>(d)->ethertype();
  if (type == NET_ETHERTYPE_VLAN) {
    if (f.len < at + wire::Vlan::kSize) return false;
    type = as<wire::Vlan>(d + at)->ethertype();
    at += wire::Vlan::kSize;
  }
  info->l3 = at;
  if (type == NET_ETHERTYPE_IPV4) {
    if (f.len < at + wire::Ipv4::kSize) return false;
    const wire::Ipv4* ip = as<wire::Ipv4>(d + at);
    info->ipv6 = false;
    info->protocol = ip->protocol();
    info->src_ip4 = ip->src();
    info->dst_ip4 = ip->dst();
    info->dscp = ip->dscp();
    info->ecn = ip->ecn();
    info->l4 = at + size_t{ip->ihl()} * 4;
  } else if (type == NET_ETHERTYPE_IPV6) {
    if (f.len < at + wire::Ipv6::kSize) return false;
    const wire::Ipv6* ip = as<wire::Ipv6>(d + at);
    info->ipv6 = true;
    info->protocol = ip->next_header();
    info->src_ip4 = static_cast<uint32_t>(wire::load_be_n<4>(ip->src().data() + 12));
    info->dst_ip4 = static_cast<uint32_t>(wire::load_be_n<4>(ip->dst().data() + 12));
    info->dscp = ip->dscp();
    info->ecn = ip->ecn();
    info->l4 = at + wire::Ipv6::kSize;
  } else {
    return false;
  }
  if (f.len < info->l4 + 4) return false;
  info->sport = static_cast<uint16_t>(wire::load_be_n<2>(d + info->l4));
  info->dport = info->protocol == NET_IPPROTO_UDP
                    ? static_cast<uint16_t>(wire::load_be_n<2>(d + info->l4 + 2))
                    : 0;
  info->flow_hash = mix64((uint64_t{info->src_ip4} << 32) | info->dst_ip4,
                          (uint64_t{info->protocol} << 32) | (uint64_t{info->sport} << 16) |
                              info->dport);
  return true;
}

Priority classify_dscp(uint8_t dscp) noexcept {
  return dscp == kDscpControl || dscp == kDscpCnp || dscp == kDscpTrimmed ? Priority::kControl
                                                                          : Priority::kData;
}

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
  switch (d.pds_type) {
    case wire::PdsType::kRudReq:
    case wire::PdsType::kRodReq:
    case wire::PdsType::kRudCcReq:
    case wire::PdsType::kRodCcReq:
      break;
    default:
      return false;
  }
  const wire::HeaderRef& last = d.stack[d.depth - 1];
  const size_t headers_end = uet + last.offset + last.desc->size;
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
