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
#include <cstring>
#include <span>

#include "transport/wire/checksum.h"
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
// the total length changes) instead of summing the header again, and the UDP checksum from
// the kept sum of the pseudo-header's addresses and protocol and the destination port: only
// the source port, the lengths and the bytes after the UDP header are summed per frame.
// What a FrameBuilder takes from its EncapTemplate besides the bytes, kept together so a frame
// copies it as one 16-byte block (field by field: ten loads and stores per frame).
struct EncapLayout {
  uint32_t ip_sum = 0;   // IPv4: ones'-complement sum of the header, total length and checksum 0
  uint32_t udp_sum = 0;  // pseudo-header addresses + protocol 17 + destination port, folded
  uint8_t len = 0;       // bytes of encapsulation (0: the Encap did not fit; never)
  uint8_t l3 = 0;        // offset of the IP header
  uint8_t l4 = 0;        // offset of the UDP (or entropy) header
  bool ipv6 = false;
  bool ip_only = false;
  bool udp_checksum = true;
  bool icrc = false;
  bool icrc_compute = true;
};
static_assert(sizeof(EncapLayout) == 16);

class EncapTemplate {
 public:
  EncapTemplate() = default;
  explicit EncapTemplate(const Encap& encap) noexcept;

  size_t size() const noexcept { return layout_.len; }
  // IPv4: the TOS byte (DSCP and ECN) and the header's sum as kept (EncapLayout::ip_sum), for
  // FrameBuilder::set_ipv4_tos() to build another template's frames from this one.
  uint8_t ipv4_tos() const noexcept { return bytes_[layout_.l3 + 1]; }
  uint32_t ipv4_sum() const noexcept { return layout_.ip_sum; }

 private:
  friend class FrameBuilder;
  // Ethernet + 802.1Q + IPv6 + UDP is the longest encapsulation.
  static constexpr size_t kMaxSize = Ethernet::kSize + Vlan::kSize + Ipv6::kSize + Udp::kSize;
  std::array<uint8_t, kMaxSize> bytes_{};
  EncapLayout layout_;
};

class FrameBuilder {
 public:
  // Writes the encapsulation headers at the start of `buf`.
  FrameBuilder(std::span<uint8_t> buf, const Encap& encap) noexcept;
  // The same from a template, with `sport` as the UDP source port (UET entropy in the IP-only
  // form): the frame is byte for byte what FrameBuilder(buf, encap with that sport) writes.
  FrameBuilder(std::span<uint8_t> buf, const EncapTemplate& encap, uint16_t sport) noexcept
      : buf_(buf) {
    start(encap, sport);
  }

  // Appends header H, zero-filled; null when the buffer is full (finish() then says kNoRoom).
  template <typename H>
  H* add() noexcept {
    return reinterpret_cast<H*>(add_bytes(H::kSize));
  }
  // Appends n zero bytes and returns them for the caller to fill; null when full.
  uint8_t* add_bytes(size_t n) noexcept {
    uint8_t* p = reserve(n);
    if (p != nullptr) std::memset(p, 0, n);
    return p;
  }
  // As add_bytes(), without zeroing what is about to be overwritten (a 4 KiB payload).
  bool append(std::span<const uint8_t> bytes) noexcept {
    uint8_t* p = reserve(bytes.size());
    if (p == nullptr) return false;
    if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
    return true;
  }
  // As append(), and when the frame carries a UDP checksum the bytes are summed while they are
  // copied, so finish() sums only the rest of the datagram. The appended bytes must not change
  // afterwards (forget_payload_sum() when they do, e.g. sealed in place).
  bool append_summed(std::span<const uint8_t> bytes) noexcept {
    uint8_t* p = reserve(bytes.size());
    if (p == nullptr) return false;
    if (bytes.empty()) return true;
    const size_t at = static_cast<size_t>(p - buf_.data());
    if (!t_.udp_checksum || (sum_len_ != 0 && sum_begin_ + sum_len_ != at)) {
      std::memcpy(p, bytes.data(), bytes.size());  // one pre-summed run per frame; others copy
      return true;
    }
    if (sum_len_ == 0) sum_begin_ = at;
    // A run that starts at an odd offset into the datagram has its bytes in swapped halves.
    const uint64_t run = csum_copy(0, p, bytes.data(), bytes.size());
    sum_ += ((at - t_.len) & 1) != 0 ? swap_halves(run) : run;
    sum_len_ += bytes.size();
    return true;
  }
  // Zero-copy transmit (Frame::ref): `bytes` go on the wire here without being copied into the
  // buffer; what is added afterwards follows them. Summed now when the frame carries a UDP
  // checksum, so finish() covers them; at most one referenced run, not with append_summed().
  bool reference(std::span<const uint8_t> bytes) noexcept {
    if (overflow_ || ref_ != nullptr || sum_len_ != 0) return false;
    ref_ = bytes.data();
    ref_len_ = bytes.size();
    ref_at_ = len_;
    if (t_.udp_checksum) {
      const uint64_t run = csum_add(0, bytes.data(), bytes.size());
      sum_ = ((ref_at_ - t_.len) & 1) != 0 ? swap_halves(run) : run;
    }
    return true;
  }
  const uint8_t* referenced() const noexcept { return ref_; }
  size_t referenced_len() const noexcept { return ref_len_; }
  size_t referenced_at() const noexcept { return ref_at_; }
  // The bytes append_summed() summed were changed in place: finish() sums them again.
  void forget_payload_sum() noexcept {
    if (ref_ == nullptr) sum_ = 0, sum_begin_ = 0, sum_len_ = 0;
  }
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
  size_t transport_offset() const noexcept { return t_.len; }
  // Offsets of the IP header and of the UDP (or entropy) header, and the form: what TSS
  // reads to seal the frame (spec/uet.md §5.2).
  size_t l3_offset() const noexcept { return t_.l3; }
  size_t l4_offset() const noexcept { return t_.l4; }
  bool is_ipv6() const noexcept { return t_.ipv6; }
  // An IPv4 frame's TOS byte in place of its template's, with the header sum a template of
  // that byte keeps (EncapTemplate::ipv4_tos and ipv4_sum of it): byte for byte that
  // template's frame. Before anything is added.
  void set_ipv4_tos(uint8_t tos, uint32_t ip_sum) noexcept {
    if (overflow_) return;
    buf_[t_.l3 + 1] = tos;
    t_.ip_sum = ip_sum;
  }
  bool is_ip_only() const noexcept { return t_.ip_only; }

  // Sets IP/UDP lengths, the IPv4 header checksum, the ICRC and the UDP checksum.
  // `elided`: payload bytes that follow on the wire but not in the buffer (a host that carries
  // payloads by length, Frame::wire_len): the IP and UDP lengths count them, and the UDP
  // checksum, which would cover them, is sent as 0 ("not computed"). No ICRC with elided bytes.
  // Inline for the common frame (IPv4, UDP, no ICRC); the others are finished out of line.
  WireError finish(size_t* frame_len, size_t elided = 0) noexcept {
    if (t_.icrc || t_.ipv6 || t_.ip_only) return finish_other(frame_len, elided);
    const size_t total = len_ + ref_len_ + elided;  // on the wire
    if (overflow_ || total > 0xFFFF) return WireError::kNoRoom;
    uint8_t* const b = buf_.data();
    const size_t l3_len = total - t_.l3;
    Ipv4* ip = as<Ipv4>(b + t_.l3);
    ip->set_total_length(static_cast<uint16_t>(l3_len));
    ip->set_checksum(csum_finish(t_.ip_sum + l3_len));  // the template's sum + the length word
    const size_t udp_len = total - t_.l4;
    Udp* udp = as<Udp>(b + t_.l4);
    udp->set_length(static_cast<uint16_t>(udp_len));
    udp->set_checksum(t_.udp_checksum && elided == 0 ? udp_checksum_from_sum(udp_len) : 0);
    *frame_len = len_;
    return WireError::kOk;
  }

 private:
  void start(const EncapTemplate& encap, uint16_t sport) noexcept {
    t_ = encap.layout_;
    t_.udp_sum += uint32_t{sport};
    if (buf_.size() < t_.len) {
      overflow_ = true;
      return;
    }
    if (buf_.size() >= EncapTemplate::kMaxSize) {
      // One fixed-size copy (a few vector moves) beats a short variable one; the bytes past
      // len_ are the template's zeros and are overwritten by what is added next.
      std::memcpy(buf_.data(), encap.bytes_.data(), EncapTemplate::kMaxSize);
    } else {
      std::memcpy(buf_.data(), encap.bytes_.data(), t_.len);
    }
    len_ = t_.len;
    uint8_t* l4 = buf_.data() + t_.l4;
    if (t_.ip_only) {
      as<UetEntropy>(l4)->set_entropy(sport);
    } else {
      as<Udp>(l4)->set_sport(sport);
    }
  }
  // The UDP checksum (RFC 768) of the frame as built, UDP length `udp_len`, from the kept sum
  // of the pseudo-header and ports: the same value as udp_checksum() over the whole datagram.
  uint16_t udp_checksum_from_sum(size_t udp_len) const noexcept {
    // The length counts twice: in the pseudo-header and in the UDP header.
    uint64_t sum = uint64_t{t_.udp_sum} + 2 * uint64_t{udp_len};
    const uint8_t* const from = buf_.data() + t_.len;
    if (sum_len_ == 0 && ref_ == nullptr) {
      sum = csum_add(sum, from, len_ - t_.len);
    } else {  // before the pre-summed run, the run, after it (at its parity on the wire)
      const size_t head_end = ref_ != nullptr ? ref_at_ : sum_begin_;
      const size_t tail_at = ref_ != nullptr ? ref_at_ : sum_begin_ + sum_len_;
      const size_t run_len = ref_ != nullptr ? ref_len_ : sum_len_;
      sum = csum_add(sum, from, head_end - t_.len) + sum_;
      const uint64_t tail = csum_add(0, buf_.data() + tail_at, len_ - tail_at);
      sum += ((head_end + run_len - t_.len) & 1) != 0 ? swap_halves(tail) : tail;
    }
    const uint16_t c = csum_finish(sum);
    return c == 0 ? 0xFFFF : c;
  }
  // A one's-complement sum folded to 16 bits with its bytes exchanged: the same bytes summed
  // one position later (RFC 1071 §2(B), byte order independence).
  static uint64_t swap_halves(uint64_t s) noexcept {
    while ((s >> 16) != 0) s = (s & 0xFFFF) + (s >> 16);
    return ((s & 0xFF) << 8) | (s >> 8);
  }
  WireError finish_other(size_t* frame_len, size_t elided) noexcept;

  std::span<uint8_t> buf_;
  size_t len_ = 0;
  EncapLayout t_;  // the template's; udp_sum with the source port added
  bool overflow_ = false;
  // The run of bytes append_summed() summed: [sum_begin_, sum_begin_ + sum_len_); or the
  // referenced run's sum.
  uint64_t sum_ = 0;
  size_t sum_begin_ = 0, sum_len_ = 0;
  // The referenced run: on the wire after the first ref_at_ bytes of the buffer.
  const uint8_t* ref_ = nullptr;
  size_t ref_len_ = 0, ref_at_ = 0;
};

}  // namespace uet::wire
