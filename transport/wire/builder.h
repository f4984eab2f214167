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

// The encapsulation of one Encap written once, for frames that differ from each other only in
// the UDP source port (or UET entropy) and the lengths: a PDC's frames to its peer. A
// FrameBuilder made from it copies the bytes, writes the source port, and its finish() takes
// the IPv4 header checksum from the sum kept here (RFC 1071 §2(C), incremental update: only
// the total length changes) instead of summing the header again.
class EncapTemplate {
 public:
  EncapTemplate() = default;
  explicit EncapTemplate(const Encap& encap) noexcept;

  size_t size() const noexcept { return len_; }

 private:
  friend class FrameBuilder;
  // Ethernet + 802.1Q + IPv6 + UDP is the longest encapsulation.
  static constexpr size_t kMaxSize = Ethernet::kSize + Vlan::kSize + Ipv6::kSize + Udp::kSize;
  std::array<uint8_t, kMaxSize> bytes_{};
  uint8_t len_ = 0;  // 0: the Encap did not fit (never: kMaxSize is the longest)
  uint8_t l3_ = 0;
  uint8_t l4_ = 0;
  bool ipv6_ = false;
  bool ip_only_ = false;
  bool udp_checksum_ = true;
  bool icrc_ = false;
  bool icrc_compute_ = true;
  uint32_t ip_sum_ = 0;  // IPv4: ones'-complement sum of the header, total length and checksum 0
};

class FrameBuilder {
 public:
  // Writes the encapsulation headers at the start of `buf`.
  FrameBuilder(std::span<uint8_t> buf, const Encap& encap) noexcept;
  // The same from a template, with `sport` as the UDP source port (UET entropy in the IP-only
  // form): the frame is byte for byte what FrameBuilder(buf, encap with that sport) writes.
  FrameBuilder(std::span<uint8_t> buf, const EncapTemplate& encap, uint16_t sport) noexcept;

  // Appends header H, zero-filled; null when the buffer is full (finish() then says kNoRoom).
  template <typename H>
  H* add() noexcept {
    return reinterpret_cast<H*>(add_bytes(H::kSize));
  }
  // Appends n zero bytes and returns them for the caller to fill; null when full.
  uint8_t* add_bytes(size_t n) noexcept;
  bool append(std::span<const uint8_t> bytes) noexcept;
  // Appends n bytes left as they are, for the caller to write every one of (headers built in
  // locals, copied with a fixed size); null when full.
  uint8_t* reserve(size_t n) noexcept {
    if (overflow_ || buf_.size() - len_ < n) {
      overflow_ = true;
      return nullptr;
    }
    uint8_t* p = buf_.data() + len_;
    len_ += n;
    return p;
  }

  size_t size() const noexcept { return len_; }
  // Offset of the first byte after the encapsulation (the UET or BTH header).
  size_t transport_offset() const noexcept { return transport_; }

  // Sets IP/UDP lengths, the IPv4 header checksum, the ICRC and the UDP checksum.
  // `elided`: payload bytes that follow on the wire but not in the buffer (a host that carries
  // payloads by length, Frame::wire_len): the IP and UDP lengths count them, and the UDP
  // checksum, which would cover them, is sent as 0 ("not computed"). No ICRC with elided bytes.
  WireError finish(size_t* frame_len, size_t elided = 0) noexcept;

 private:
  void start(const EncapTemplate& encap, uint16_t sport) noexcept;

  std::span<uint8_t> buf_;
  size_t len_ = 0;
  uint32_t ip_sum_ = 0;  // EncapTemplate::ip_sum_
  uint8_t l3_ = 0;
  uint8_t l4_ = 0;
  uint8_t transport_ = 0;
  bool ipv6_ = false;
  bool ip_only_ = false;
  bool udp_checksum_ = true;
  bool icrc_ = false;
  bool icrc_compute_ = true;
  bool overflow_ = false;
};

}  // namespace uet::wire
