// What a switch reads and rewrites in a frame: the real Ethernet/IP/UDP headers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/network.h"
#include "sim/rng.h"
#include "transport/transport.h"
#include "transport/wire/net_headers.h"

namespace uet::sim {

struct FrameInfo {
  bool ipv6 = false;
  size_t l3 = 0;            // offset of the IP header
  size_t l4 = 0;            // offset of the UDP (or UET entropy) header
  uint8_t protocol = 0;
  uint32_t src_ip4 = 0;     // IPv6: the last 32 bits of the address
  uint32_t dst_ip4 = 0;
  uint16_t sport = 0;       // UET IP-only form: the entropy value
  uint16_t dport = 0;
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint64_t flow_hash = 0;   // of the 5-tuple, before the switch's seed is mixed in
};

// Parses Ethernet [802.1Q] / IPv4 | IPv6 / UDP. False if the frame is not IP or is too short.
// Inline (as classify_dscp): the sending host parses every frame it queues, and its caller
// keeps only some of the fields.
inline bool parse_frame(const Frame& f, FrameInfo* info) noexcept {
  using wire::as;
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

// The fabric's traffic class of a DSCP value (sim/network.h code points).
constexpr Priority classify_dscp(uint8_t dscp) noexcept {
  return dscp == kDscpControl || dscp == kDscpCnp || dscp == kDscpTrimmed ? Priority::kControl
                                                                          : Priority::kData;
}

// Sets ECN to CE on an ECN-capable frame, fixing the IPv4 header checksum. False when the
// frame is Not-ECT (nothing to mark) or not IP.
bool mark_ce(Frame& f) noexcept;

// Sets the DSCP (ECN kept), fixing the IPv4 header checksum. False when the frame is not IP
// or already carries `dscp`.
bool set_dscp(Frame& f, uint8_t dscp) noexcept;

// Cuts a UET RUD/ROD request to its headers (spec/uet.md §3.14): rewrites IP and UDP lengths,
// sets `dscp`, zeroes the UDP checksum, fixes the IPv4 checksum and moves the frame to the
// control class. False if the frame is not a trimmable UET request.
bool trim_uet(Frame& f, uint8_t dscp) noexcept;
// Ciphertext a switch keeps of a sealed UET frame it trims (spec/uet.md §5.5 [choice]): a
// RUD_CC/ROD_CC PDS header (16) and a standard SES request (44), rounded up.
inline constexpr size_t kSealedTrimBytes = 64;

}  // namespace uet::sim
