// What a switch reads and rewrites in a frame: the real Ethernet/IP/UDP headers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/transport.h"

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
bool parse_frame(const Frame& f, FrameInfo* info) noexcept;

// The fabric's traffic class of a DSCP value (sim/network.h code points).
Priority classify_dscp(uint8_t dscp) noexcept;

// Sets ECN to CE on an ECN-capable frame, fixing the IPv4 header checksum. False when the
// frame is Not-ECT (nothing to mark) or not IP.
bool mark_ce(Frame& f) noexcept;

// Cuts a UET RUD/ROD request to its headers (spec/uet.md §3.14): rewrites IP and UDP lengths,
// sets `dscp`, zeroes the UDP checksum, fixes the IPv4 checksum and moves the frame to the
// control class. False if the frame is not a trimmable UET request.
bool trim_uet(Frame& f, uint8_t dscp) noexcept;

}  // namespace uet::sim
