// Builds frames in place: Ethernet [802.1Q] / IPv4 | IPv6 / UDP (or UET's IP-only form), then
// whatever transport headers and payload the caller adds, then lengths, checksums and (for
// RoCEv2) the ICRC in finish().
//
// Data path: the builder lives on the stack and writes into a buffer the host lends (an mbuf,
// a simulator frame, a test vector); add<H>() returns the header in place, zero-filled, for
// the caller to fill with its accessors. Nothing is allocated or copied twice.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/wire/header_gen.h"
#include "transport/wire/net_headers.h"
#include "transport/wire/roce_headers.h"
#include "transport/wire/uet_headers.h"
#include "transport/wire/wire_error.h"

namespace uet::wire {

using MacAddr = std::array<uint8_t, 6>;
using Ipv6Addr = std::array<uint8_t, 16>;

// Everything below the transport headers of one frame.
struct Encap {
  MacAddr src_mac{};
  MacAddr dst_mac{};
  bool vlan = false;
  uint16_t vlan_tci = 0;  // PCP, DEI, VID

  bool ipv6 = false;
  uint32_t src_ip4 = 0;  // host byte order
  uint32_t dst_ip4 = 0;
  Ipv6Addr src_ip6{};
  Ipv6Addr dst_ip6{};
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint8_t ttl = 64;
  uint16_t ip_id = 0;
  bool dont_fragment = true;
  uint32_t flow_label = 0;

  // UDP (UET: dport 4793 and the EV in sport; RoCEv2: dport 4791), or UET's IP-only form
  // with a 4-byte entropy header carrying the EV.
  bool ip_only = false;
  uint8_t ip_proto = kUetIpProtoDefault;
  uint16_t sport = 0;
  uint16_t dport = kUetUdpPort;
  bool udp_checksum = true;  // false: send 0 ("not computed")

  bool icrc = false;  // RoCEv2: append the ICRC in finish()
  bool icrc_compute = true;  // false: append it as zeros, for a NIC that fills it in
};

class FrameBuilder {
 public:
  // Writes the encapsulation headers at the start of `buf`.
  FrameBuilder(std::span<uint8_t> buf, const Encap& encap) noexcept;

  // Appends header H, zero-filled; null when the buffer is full (finish() then says kNoRoom).
  template <typename H>
  H* add() noexcept {
    return reinterpret_cast<H*>(add_bytes(H::kSize));
  }
  // Appends n zero bytes and returns them for the caller to fill; null when full.
  uint8_t* add_bytes(size_t n) noexcept;
  bool append(std::span<const uint8_t> bytes) noexcept;

  size_t size() const noexcept { return len_; }
  // Offset of the first byte after the encapsulation (the UET or BTH header).
  size_t transport_offset() const noexcept { return transport_; }

  // Sets IP/UDP lengths, the IPv4 header checksum, the ICRC and the UDP checksum.
  WireError finish(size_t* frame_len) noexcept;

 private:
  std::span<uint8_t> buf_;
  Encap encap_;
  size_t len_ = 0;
  size_t l3_ = 0;
  size_t l4_ = 0;
  size_t transport_ = 0;
  bool overflow_ = false;
};

}  // namespace uet::wire
