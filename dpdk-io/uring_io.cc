// The io_uring UDP backend's data path (uring_io.h): rx_burst/release_rx/alloc_tx/tx_burst/
// wait, which never allocate: every buffer, msghdr and cmsg area was carved at create()
// (uring_setup.cc).
#include "dpdk-io/uring_internal.h"

namespace uet::io {

using namespace uring_detail;  // NOLINT: this backend's own helpers

// ---------------------------------------------------------------------------- data path

uint8_t* UringIo::rx_buffer(uint32_t bid) const noexcept {
  return rx_frames_[bid].data - (kRxPrefix - kSynthLen);
}

// A free SQE; when the queue is full, what is queued is handed to the kernel first. Null
// only if the kernel took none of it.
io_uring_sqe* UringIo::next_sqe() {
  io_uring* ring = &ring_->ring;
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe != nullptr) return sqe;
  io_uring_submit(ring);
  return io_uring_get_sqe(ring);
}

void UringIo::arm_rx() {
  io_uring* ring = &ring_->ring;
  io_uring_sqe* sqe = next_sqe();
  if (sqe == nullptr) return;  // tried again on the next burst
  io_uring_prep_recvmsg_multishot(sqe, kRxFixedFile, &ring_->rx_msg, 0);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
  sqe->buf_group = kBufGroup;
  io_uring_sqe_set_data64(sqe, kRxTag);
  io_uring_submit(ring);
  rx_armed_ = true;
  ++counters_.rx_rearms;
}

void UringIo::maybe_arm_rx() {
  // Re-arm only when the kernel has a buffer to fill; otherwise it would stop again at once.
  if (!rx_armed_ && !rx_failed_ && rx_in_kernel_ > 0) arm_rx();
}

void UringIo::recycle_rx(uint16_t bid) {
  io_uring_buf_ring_add(ring_->buf_ring, rx_buffer(bid), rx_buf_len_, bid,
                        io_uring_buf_ring_mask(rx_count_), 0);
  io_uring_buf_ring_advance(ring_->buf_ring, 1);
  ++rx_in_kernel_;
}

namespace {

// What a receive's control messages say (kRxControl: IP_TOS, IP_TTL, SO_RXQ_OVFL, UDP_GRO).
struct RxControl {
  uint8_t tos = 0, ttl = 64;
  int segment = 0;         // UDP_GRO: the size of each coalesced datagram
  bool ovfl_seen = false;  // SO_RXQ_OVFL came: the socket's drops so far, modulo 2^32
  uint32_t ovfl = 0;
};

RxControl read_rx_control(io_uring_recvmsg_out* out, msghdr* msg) noexcept {
  RxControl rc;
  for (cmsghdr* c = io_uring_recvmsg_cmsg_firsthdr(out, msg); c != nullptr;
       c = io_uring_recvmsg_cmsg_nexthdr(out, msg, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && c->cmsg_len >= CMSG_LEN(1)) {
      rc.tos = *CMSG_DATA(c);
    } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL &&
               c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int v = 0;
      std::memcpy(&v, CMSG_DATA(c), sizeof(v));
      rc.ttl = static_cast<uint8_t>(v);
    } else if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO &&
               c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      std::memcpy(&rc.segment, CMSG_DATA(c), sizeof(rc.segment));
    } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL &&
               c->cmsg_len >= CMSG_LEN(sizeof(uint32_t))) {
      std::memcpy(&rc.ovfl, CMSG_DATA(c), sizeof(rc.ovfl));
      rc.ovfl_seen = true;
    }
  }
  return rc;
}

}  // namespace

void UringIo::on_rx_completion(int32_t res, uint32_t flags) {
  if (!(flags & IORING_CQE_F_MORE)) {
    rx_armed_ = false;
    // -ENOBUFS: every buffer is lent out; re-armed when one comes back. Anything else that
    // ends the receive for good (a kernel without it) must not be retried in a loop.
    if (res < 0 && res != -ENOBUFS && res != -ECANCELED && res != -EINTR) rx_failed_ = true;
  }
  if (res < 0 && res != -ENOBUFS && res != -ECANCELED) {
    ++counters_.rx_errors;
    counters_.last_rx_errno = -res;
  }
  if (!(flags & IORING_CQE_F_BUFFER)) return;
  const auto bid = static_cast<uint16_t>(flags >> IORING_CQE_BUFFER_SHIFT);
  --rx_in_kernel_;
  if (bid >= rx_count_) return;  // not ours: cannot happen with one buffer group
  if (res < 0) {
    recycle_rx(bid);
    return;
  }
  uint8_t* buf = rx_buffer(bid);
  msghdr* msg = &ring_->rx_msg;
  io_uring_recvmsg_out* out = io_uring_recvmsg_validate(buf, res, msg);
  if (out == nullptr || out->namelen < sizeof(sockaddr_in)) {
    ++counters_.rx_bad;
    ++stats_.rx_dropped;
    recycle_rx(bid);
    return;
  }
  const RxControl rc = read_rx_control(out, msg);
  if (rc.ovfl_seen) {
    const uint32_t lost = rc.ovfl - rxq_ovfl_seen_;  // cumulative, modulo 2^32
    rxq_ovfl_seen_ = rc.ovfl;
    counters_.rx_kernel_dropped += lost;
    stats_.rx_dropped += lost;
  }
  if (out->flags & MSG_TRUNC) {
    ++counters_.rx_truncated;
    ++stats_.rx_dropped;
    recycle_rx(bid);
    return;
  }
  sockaddr_in src{};
  std::memcpy(&src, io_uring_recvmsg_name(out), sizeof(src));
  const auto* payload = static_cast<const uint8_t*>(io_uring_recvmsg_payload(out, msg));
  const size_t payload_len = io_uring_recvmsg_payload_length(out, res, msg);

  const uint32_t src_ip = ntohl(src.sin_addr.s_addr);
  const uint16_t sport = ntohs(src.sin_port);
  const int segment = rc.segment;
  if (segment > 0 && payload_len > static_cast<size_t>(segment)) {
    // Coalesced: split when lent (lend_split), each segment into a frame of the split pool.
    const size_t count = (payload_len + segment - 1) / segment;
    if (static_cast<size_t>(segment) + kSynthLen > config_.frame_capacity) {
      counters_.rx_truncated += count;
      stats_.rx_dropped += count;
      recycle_rx(bid);
      return;
    }
    ++counters_.rx_gro_receives;
    counters_.rx_gro_datagrams += count;
    rx_split_[bid] = RxSplit{src_ip, sport, rc.tos, rc.ttl, static_cast<uint32_t>(segment),
                             static_cast<uint32_t>(payload - rx_buffer(bid)),
                             static_cast<uint32_t>(payload - rx_buffer(bid) + payload_len)};
  } else {
    // Everything needed is read: write Ethernet / IPv4 / UDP over the consumed prefix.
    if (setup_.gro) rx_split_[bid].segment = 0;
    assert(payload == rx_frames_[bid].data + kSynthLen);
    synthesize(rx_frames_[bid], src_ip, sport, rc.tos, rc.ttl, payload_len);
  }
  rx_ready_[(rx_ready_head_ + rx_ready_count_) % rx_count_] = bid;
  ++rx_ready_count_;
}

// Ethernet / IPv4 / UDP in front of the payload at f.data + 42, as a NIC would deliver them.
void UringIo::synthesize(Frame& f, uint32_t src_ip, uint16_t sport, uint8_t tos, uint8_t ttl,
                         size_t payload_len) const noexcept {
  wire::Ethernet* eth = wire::as<wire::Ethernet>(f.data);
  std::memcpy(eth->raw, config_.local_mac.data(), 6);  // dst
  eth->raw[6] = 0x02;  // src: a locally administered MAC made of the source address
  eth->raw[7] = 0x00;
  wire::store_be_n<4>(eth->raw + 8, src_ip);
  eth->set_ethertype(NET_ETHERTYPE_IPV4);
  uint8_t* ip = f.data + kEthLen;
  write_ip_udp(ip, src_ip, config_.local_ip4, tos, ttl, sport, config_.udp_port, payload_len);
  wire::as<wire::Ipv4>(ip)->set_checksum(wire::ipv4_header_checksum(ip, kIpLen));
  f.len = static_cast<uint32_t>(kSynthLen + payload_len);
  f.wire_len = 0;
  f.priority = Priority::kData;
  f.checksums_ok = true;  // the kernel verified the UDP checksum; the IP header is ours
}

void UringIo::reap() {
  io_uring* ring = &ring_->ring;
  // DEFER_TASKRUN: the kernel posts our completions only when we ask (IORING_ENTER_GETEVENTS).
  // TASKRUN_FLAG: the kernel flags the SQ ring when work is pending, so the (costly) entry is
  // made only then, not on every poll of an idle ring.
  if (setup_.defer_taskrun && io_uring_cq_ready(ring) == 0 &&
      (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_TASKRUN) != 0)
    io_uring_get_events(ring);
  std::array<io_uring_cqe*, 64> cqes{};
  for (;;) {
    const unsigned n = io_uring_peek_batch_cqe(ring, cqes.data(), cqes.size());
    if (n == 0) return;
    for (unsigned i = 0; i < n; ++i) {
      const io_uring_cqe* cqe = cqes[i];
      const uint64_t tag = cqe->user_data;
      if (tag == kRxTag) {
        on_rx_completion(cqe->res, cqe->flags);
      } else if (tag == kWakeTag) {
        wake_armed_ = false;
        uint64_t count;
        [[maybe_unused]] const ssize_t r = read(wake_fd_, &count, sizeof(count));  // resets it
      } else if (tag < tx_count_) {
        on_tx_completion(static_cast<uint32_t>(tag), cqe->res, cqe->flags);
      } else if ((tag & kGsoTag) != 0 && (tag & ~kGsoTag) < gso_.size()) {
        on_gso_completion(static_cast<uint32_t>(tag & ~kGsoTag), cqe->res, cqe->flags);
      }
    }
    io_uring_cq_advance(ring, n);
  }
}

// Takes one of a send's completions: its result, or for a zero-copy send also its
// notification (io_uring_prep_send_zc(3)); true once the kernel no longer reads the buffers.
bool UringIo::send_zc_done(bool& result_seen, bool& notif_due, bool& notif_seen, int32_t res,
                           uint32_t flags) {
  if (flags & IORING_CQE_F_NOTIF) {
    ++counters_.tx_zc_notifs;
    if (static_cast<uint32_t>(res) & uapi::kNotifUsageZcCopied) ++counters_.tx_zc_copied;
    notif_seen = true;
  } else {
    if (res < 0) {
      ++counters_.tx_send_errors;
      counters_.last_send_errno = -res;
      if (res == -EINVAL && zc_flags_ != 0) {
        // Linux 6.1 has SENDMSG_ZC but refuses IORING_SEND_ZC_REPORT_USAGE (6.2): go without.
        zc_flags_ = 0;
        setup_.zc_usage_known = false;
      }
    }
    result_seen = true;
    notif_due = (flags & IORING_CQE_F_MORE) != 0;
  }
  if (!result_seen || (notif_due && !notif_seen)) return false;  // the kernel still reads it
  result_seen = notif_due = notif_seen = false;
  return true;
}

void UringIo::on_tx_completion(uint32_t index, int32_t res, uint32_t flags) {
  TxSlot& s = tx_slots_[index];
  if (!(flags & IORING_CQE_F_NOTIF)) {
    if (res < 0) {
      ++stats_.tx_dropped;
    } else {
      ++stats_.tx_packets;
      stats_.tx_bytes += tx_slots_[index].frame_bytes;
    }
  }
  if (!send_zc_done(s.result_seen, s.notif_due, s.notif_seen, res, flags)) return;
  tx_free_.push(index);
  --tx_in_flight_;
}

void UringIo::on_gso_completion(uint32_t gi, int32_t res, uint32_t flags) {
  GsoSend& g = gso_[gi];
  if (!(flags & IORING_CQE_F_NOTIF)) {
    if (res < 0) {
      stats_.tx_dropped += g.count;
      // A segment longer than the route's MTU allows (EINVAL before Linux 6.x, EMSGSIZE
      // since): datagrams sent one by one may be fragmented, a GSO segment may not. One by
      // one from now on.
      if (res == -EINVAL || res == -EMSGSIZE) {
        setup_.gso = false;
        ++counters_.tx_gso_refused;
      }
    } else {
      stats_.tx_packets += g.count;
      for (uint32_t i = 0, at = g.head; i < g.count; ++i, at = tx_slots_[at].next)
        stats_.tx_bytes += tx_slots_[at].frame_bytes;
    }
  }
  if (!send_zc_done(g.result_seen, g.notif_due, g.notif_seen, res, flags)) return;
  for (uint32_t i = 0, at = g.head; i < g.count; ++i, at = tx_slots_[at].next)
    tx_free_.push(at);
  tx_in_flight_ -= g.count;
  gso_free_.push(gi);
}

size_t UringIo::rx_burst(std::span<Frame*> out) {
  reap();
  maybe_arm_rx();
  size_t n = 0;
  while (n < out.size() && rx_ready_count_ > 0) {
    const uint16_t bid = rx_ready_[rx_ready_head_];
    if (setup_.gro && rx_split_[bid].segment != 0) {
      const size_t lent = lend_split(out.subspan(n));
      n += lent;
      if (lent == 0) break;  // the split pool is lent out
      continue;
    }
    Frame* f = &rx_frames_[bid];
    rx_ready_head_ = (rx_ready_head_ + 1) % rx_count_;
    --rx_ready_count_;
    ++stats_.rx_packets;
    stats_.rx_bytes += f->len;
    out[n++] = f;
  }
  return n;
}

// Copies segments of the coalesced receive at the head of rx_ready_ into split frames; the
// kernel's buffer goes back once its last segment is out.
size_t UringIo::lend_split(std::span<Frame*> out) {
  const uint16_t bid = rx_ready_[rx_ready_head_];
  RxSplit& r = rx_split_[bid];
  const uint8_t* buf = rx_buffer(bid);
  size_t n = 0;
  while (n < out.size() && r.next < r.end) {
    if (split_free_.empty()) {
      ++counters_.rx_split_waits;
      break;
    }
    Frame* f = &rx_frames_[split_free_.pop()];
    const uint32_t len = std::min(r.segment, r.end - r.next);
    std::memcpy(f->data + kSynthLen, buf + r.next, len);
    synthesize(*f, r.src_ip, r.sport, r.tos, r.ttl, len);
    r.next += len;
    ++stats_.rx_packets;
    stats_.rx_bytes += f->len;
    out[n++] = f;
  }
  if (r.next >= r.end) {
    r.segment = 0;
    rx_ready_head_ = (rx_ready_head_ + 1) % rx_count_;
    --rx_ready_count_;
    recycle_rx(bid);
  }
  return n;
}

void UringIo::release_rx(std::span<Frame* const> frames) {
  for (Frame* f : frames) {
    const auto index = static_cast<uint32_t>(f - rx_frames_.data());
    if (index < rx_count_) {
      recycle_rx(static_cast<uint16_t>(index));
    } else {
      split_free_.push(index);
    }
  }
}

size_t UringIo::alloc_tx(std::span<Frame*> out) {
  if (tx_free_.size() < out.size()) reap();  // sends completed since the last burst
  size_t n = 0;
  while (n < out.size() && !tx_free_.empty()) {
    Frame* f = &tx_frames_[tx_free_.pop()];
    f->len = 0;
    f->wire_len = 0;
    f->priority = Priority::kData;
    f->ref = nullptr;
    f->ref_len = f->ref_at = 0;
    out[n++] = f;
  }
  if (n < out.size() && tx_free_.empty()) ++stats_.tx_no_buffer;
  return n;
}

namespace {

// What a frame to send says in its Ethernet [802.1Q] / IPv4 / UDP headers, read in place.
struct UdpView {
  uint8_t* ip = nullptr;       // the IPv4 header
  size_t ihl = 0;              // its length
  uint8_t* payload = nullptr;  // after the UDP header
  size_t payload_len = 0;      // by the UDP length
  uint32_t dst = 0;
  uint16_t sport = 0, dport = 0;
  uint8_t tos = 0, ttl = 0;
};

// Reads the headers in the first n bytes at p, whose lengths cover `logical` bytes (a
// referenced payload included). False unless an unfragmented IPv4 UDP datagram whose lengths
// hold.
bool read_udp(uint8_t* p, size_t n, size_t logical, UdpView& v) noexcept {
  size_t l3 = kEthLen;
  if (n < kEthLen) return false;
  uint16_t type = wire::as<wire::Ethernet>(p)->ethertype();
  if (type == NET_ETHERTYPE_VLAN) {
    if (n < kEthLen + wire::Vlan::kSize) return false;
    type = wire::as<wire::Vlan>(p + kEthLen)->ethertype();
    l3 += wire::Vlan::kSize;
  }
  if (type != NET_ETHERTYPE_IPV4 || n < l3 + kIpLen) return false;
  v.ip = p + l3;
  const wire::Ipv4& h = *wire::as<wire::Ipv4>(v.ip);
  v.ihl = size_t{h.ihl()} * 4;
  const uint16_t total = h.total_length();
  if (h.version() != 4 || v.ihl < kIpLen || total < v.ihl + kUdpLen || total > logical - l3 ||
      l3 + v.ihl + kUdpLen > n)
    return false;
  if (h.protocol() != NET_IPPROTO_UDP || h.mf() || h.frag_offset() != 0)
    return false;  // not UDP, fragment
  uint8_t* udp_at = v.ip + v.ihl;
  const wire::Udp& udp = *wire::as<wire::Udp>(udp_at);
  const uint16_t udp_len = udp.length();
  if (udp_len < kUdpLen || udp_len > total - v.ihl) return false;
  v.payload = udp_at + kUdpLen;
  v.payload_len = udp_len - kUdpLen;
  v.dst = h.dst();
  v.tos = static_cast<uint8_t>(h.dscp() << 2 | h.ecn());
  v.ttl = h.ttl();
  v.sport = udp.sport();
  v.dport = udp.dport();
  return true;
}

// The ICRC at icrc_at, over IPv4 (no options) / UDP headers `have` and `after` bytes behind
// them, changed to cover `want` instead. False if they are the same (nothing to change).
bool patch_icrc(const uint8_t* have, const uint8_t* want, uint8_t* icrc_at,
                size_t after) noexcept {
  uint8_t delta[kIpLen + kUdpLen];
  std::memcpy(delta, have, sizeof(delta));
  mask_ip_udp(delta, kIpLen);
  bool differs = false;
  for (size_t i = 0; i < sizeof(delta); ++i) {
    delta[i] ^= want[i];
    differs |= delta[i] != 0;
  }
  if (!differs) return false;
  // CRC-32 is affine: crc(M') = crc(M) ^ lin(M ^ M'), and lin(delta . 0^k) is
  // lin(delta) shifted over k zero bytes: zlib's crc32_combine_op with the operator for k,
  // remembered for the last k (a run's data packets share one length; a pure function's memo).
  static constexpr uint8_t kZeros[kIpLen + kUdpLen] = {};
  const uLong lin = crc32(0, delta, sizeof(delta)) ^ crc32(0, kZeros, sizeof(kZeros));
  struct Shift {
    size_t len = SIZE_MAX;
    uLong op = 0;
  };
  static thread_local Shift shift;
  if (shift.len != after) {
    shift.op = crc32_combine_gen(static_cast<z_off_t>(after));
    shift.len = after;
  }
  const uLong shifted = crc32_combine_op(lin, 0, shift.op);
  wire::store_icrc(icrc_at, wire::load_icrc(icrc_at) ^ static_cast<uint32_t>(shifted));
  return true;
}

// The ICRC computed again over the masked headers `want` and the BTH and payload after them.
void recompute_icrc(const uint8_t* want, const uint8_t* payload, uint8_t* icrc_at,
                    size_t after) noexcept {
  static constexpr uint8_t kMaskedLrh[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  uint8_t bth[wire::Bth::kSize];
  std::memcpy(bth, payload, sizeof(bth));
  bth[4] = 0xFF;
  uint32_t crc = wire::icrc_crc32(0, kMaskedLrh, sizeof(kMaskedLrh));
  crc = wire::icrc_crc32(crc, want, kIpLen + kUdpLen);
  crc = wire::icrc_crc32(crc, bth, sizeof(bth));
  crc = wire::icrc_crc32(crc, payload + sizeof(bth), after - sizeof(bth));
  wire::store_icrc(icrc_at, crc);
}

// RoCEv2: makes the ICRC cover the headers the receiver will see (uring_io.h): sent from
// src_ip and the EV socket's port src_port. Returns whether it changed.
bool rewrite_icrc(const UdpView& v, uint32_t src_ip, uint16_t src_port) noexcept {
  uint8_t want[kIpLen + kUdpLen];
  write_ip_udp(want, src_ip, v.dst, v.tos, v.ttl, src_port, v.dport, v.payload_len);
  mask_ip_udp(want, kIpLen);
  uint8_t* icrc_at = v.payload + v.payload_len - wire::kIcrcSize;
  const size_t after = v.payload_len - wire::kIcrcSize;  // bytes after the UDP header
  if (v.ihl == kIpLen) return patch_icrc(v.ip, want, icrc_at, after);
  // IP options (never sent by our engines): recompute over the wire headers.
  recompute_icrc(want, v.payload, icrc_at, after);
  return true;
}

// The UDP payload as up to three pieces: after the UDP header, the referenced bytes, the
// rest; cut at the UDP length. The kernel gathers them (no copy here). False if they fall
// short of it (cannot happen: the lengths were checked against the logical length).
bool gather_payload(const Frame& f, const UdpView& v, iovec* iov, uint8_t& iovcnt) noexcept {
  const iovec pieces[3] = {
      {v.payload,
       static_cast<size_t>((f.ref_len > 0 ? f.data + f.ref_at : f.data + f.len) - v.payload)},
      {const_cast<uint8_t*>(f.ref), f.ref_len},
      {f.data + f.ref_at, f.ref_len > 0 ? f.len - f.ref_at : 0},
  };
  size_t left = v.payload_len;
  iovcnt = 0;
  for (const iovec& piece : pieces) {
    const size_t take = std::min(piece.iov_len, left);
    if (take == 0) continue;
    iov[iovcnt++] = iovec{piece.iov_base, take};
    left -= take;
  }
  return left == 0;
}

// One control message at `at` carrying `value`; returns the bytes it takes.
template <typename T>
size_t put_cmsg(uint8_t* at, int level, int type, T value) noexcept {
  cmsghdr* c = reinterpret_cast<cmsghdr*>(at);
  c->cmsg_level = level;
  c->cmsg_type = type;
  c->cmsg_len = CMSG_LEN(sizeof(T));
  std::memcpy(CMSG_DATA(c), &value, sizeof(T));
  return CMSG_SPACE(sizeof(T));
}

}  // namespace

// Reads Ethernet [802.1Q] / IPv4 / UDP in place and fills the frame's sendmsg.
bool UringIo::prepare_send(Frame& f, uint32_t tx_index) {
  if (f.wire_len > f.len) return false;  // payload carried by length: nothing to send
  // The headers must come before a referenced payload; the lengths they state cover it.
  const size_t n = f.ref_len > 0 ? std::min(f.ref_at, f.len) : f.len;
  const size_t logical = size_t{f.len} + f.ref_len;
  UdpView v;
  if (!read_udp(f.data, n, logical, v)) return false;
  const uint32_t socket = v.sport % config_.ev_sockets;
  // The ICRC below is rewritten in one buffer: a RoCEv2 payload is gathered in first.
  if (f.ref_len > 0 && v.dport == wire::kRoceUdpPort && !flatten(f)) return false;
  if (v.dport == wire::kRoceUdpPort && v.payload_len >= wire::Bth::kSize + wire::kIcrcSize &&
      rewrite_icrc(v, config_.local_ip4, ev_ports_[socket])) {
    ++counters_.tx_icrc_updates;
  }

  TxSlot& s = tx_slots_[tx_index];
  s.dst.sin_addr.s_addr = htonl(v.dst);
  s.dst.sin_port = htons(v.dport);
  if (!gather_payload(f, v, s.iov, s.iovcnt)) return false;
  s.msg.msg_iovlen = s.iovcnt;
  s.len = static_cast<uint32_t>(v.payload_len);
  s.frame_bytes = static_cast<uint32_t>(logical);
  s.socket = static_cast<uint16_t>(socket);
  s.tos = v.tos;
  s.ttl = v.ttl;
  // IP_TOS carries DSCP and ECN (the kernel keeps the ECN bits of a UDP socket's TOS);
  // IP_TTL the hop limit, when the frame has a valid one.
  size_t control = put_cmsg(s.control, IPPROTO_IP, IP_TOS, int{v.tos});
  if (v.ttl != 0) control += put_cmsg(s.control + control, IPPROTO_IP, IP_TTL, int{v.ttl});
  s.msg.msg_controllen = control;
  return true;
}

size_t UringIo::tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) {
  for (Frame* f : unused) tx_free_.push(static_cast<uint32_t>(f - tx_frames_.data()));
  size_t queued = 0;
  uint32_t ready[kMaxBurst];
  size_t n = 0;
  for (Frame* f : filled) {
    const auto index = static_cast<uint32_t>(f - tx_frames_.data());
    if (!prepare_send(*f, index)) {
      ++counters_.tx_unparseable;
      ++stats_.tx_dropped;
      tx_free_.push(index);
      continue;
    }
    if (!setup_.gso) {
      queued += submit_one(index);
      continue;
    }
    ready[n++] = index;
    if (n == kMaxBurst) {
      queued += send_grouped(std::span<const uint32_t>(ready, n));
      n = 0;
    }
  }
  if (n > 0) queued += send_grouped(std::span<const uint32_t>(ready, n));
  if (queued > 0) io_uring_submit(&ring_->ring);
  return queued;
}

// Groups the prepared buffers for UDP_SEGMENT (uring_io.h): same socket, destination, TOS and
// TTL; one payload size but the last; at most 64 datagrams and 65507 bytes. A group is sent
// in the order its first buffer came, so each socket's and destination's order holds.
size_t UringIo::send_grouped(std::span<const uint32_t> ready) {
  struct Group {
    uint32_t head, tail, count, segment, bytes;
    bool closed;  // a shorter datagram ended it
  };
  Group groups[kMaxBurst];
  size_t open[kMaxBurst];  // per group: index of the newest group with the same key, or ~0
  size_t g = 0;
  for (const uint32_t index : ready) {
    TxSlot& s = tx_slots_[index];
    const uint32_t len = s.len;
    size_t k = g;  // the newest group with this one's key
    for (size_t i = g; i-- > 0;) {
      const TxSlot& h = tx_slots_[groups[i].head];
      if (open[i] == ~size_t{0} && h.socket == s.socket && h.tos == s.tos && h.ttl == s.ttl &&
          h.dst.sin_addr.s_addr == s.dst.sin_addr.s_addr && h.dst.sin_port == s.dst.sin_port) {
        k = i;
        break;
      }
    }
    if (k < g) {
      Group& grp = groups[k];
      if (!grp.closed && len <= grp.segment && grp.count < kGsoMaxSegments &&
          grp.bytes + len <= kMaxUdpPayload) {
        tx_slots_[grp.tail].next = index;
        grp.tail = index;
        ++grp.count;
        grp.bytes += len;
        grp.closed = len < grp.segment;
        continue;
      }
      open[k] = g;  // superseded: later buffers of this key go to the new group
    }
    groups[g] = Group{index, index, 1, len, len, false};
    open[g] = ~size_t{0};
    ++g;
  }
  size_t queued = 0;
  for (size_t i = 0; i < g; ++i) {
    const Group& grp = groups[i];
    queued += grp.count == 1 ? submit_one(grp.head) : submit_group(grp.head, grp.count, grp.segment);
  }
  return queued;
}

// Returns 1 if queued; else the buffer is dropped (counted) and free again.
bool UringIo::submit_one(uint32_t index) {
  io_uring_sqe* sqe = next_sqe();
  if (sqe == nullptr) {
    ++counters_.tx_no_sqe;
    ++stats_.tx_dropped;
    tx_free_.push(index);
    return false;
  }
  const TxSlot& s = tx_slots_[index];
  if (setup_.zero_copy_send) {
    io_uring_prep_sendmsg_zc(sqe, static_cast<int>(1 + s.socket), &s.msg, 0);
    sqe->ioprio |= zc_flags_;
    ++counters_.tx_zc_sends;
  } else {
    io_uring_prep_sendmsg(sqe, static_cast<int>(1 + s.socket), &s.msg, 0);
  }
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, index);
  ++tx_in_flight_;
  return true;
}

// One sendmsg for `count` datagrams chained from `head`; returns how many were queued (all
// or none: then they are dropped and counted).
uint32_t UringIo::submit_group(uint32_t head, uint32_t count, uint32_t segment) {
  io_uring_sqe* sqe = !gso_free_.empty() ? next_sqe() : nullptr;
  if (sqe == nullptr) {  // no SQE (a group is never short of a GsoSend: see carve_pool)
    for (uint32_t i = 0, at = head; i < count; ++i, at = tx_slots_[at].next)
      tx_free_.push(at);
    counters_.tx_no_sqe += count;
    stats_.tx_dropped += count;
    return 0;
  }
  const uint32_t gi = gso_free_.pop();
  GsoSend& g = gso_[gi];
  const TxSlot& h = tx_slots_[head];
  g.dst = h.dst;
  g.head = head;
  g.count = count;
  size_t iovs = 0;
  for (uint32_t i = 0, at = head; i < count; ++i, at = tx_slots_[at].next) {
    const TxSlot& m = tx_slots_[at];
    std::copy_n(m.iov, m.iovcnt, g.iov + iovs);
    iovs += m.iovcnt;
  }
  g.msg.msg_iovlen = iovs;
  // The head's IP_TOS / IP_TTL, then UDP_SEGMENT: the size the kernel cuts at.
  std::memcpy(g.control, h.control, h.msg.msg_controllen);
  g.msg.msg_controllen =
      h.msg.msg_controllen + put_cmsg(g.control + h.msg.msg_controllen, IPPROTO_UDP, UDP_SEGMENT,
                                      static_cast<uint16_t>(segment));
  // Copied, never zero-copy: a zero-copy skb pins each page as a fragment, at most
  // MAX_SKB_FRAGS (17) of them, and a group's buffers span more: EMSGSIZE.
  io_uring_prep_sendmsg(sqe, static_cast<int>(1 + h.socket), &g.msg, 0);
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, kGsoTag | gi);
  ++counters_.tx_gso_sends;
  counters_.tx_gso_datagrams += count;
  tx_in_flight_ += count;
  return count;
}

void UringIo::wait(Time deadline) {
  maybe_arm_rx();
  io_uring* ring = &ring_->ring;
  if (wake_fd_ >= 0 && !wake_armed_) {
    if (io_uring_sqe* sqe = next_sqe(); sqe != nullptr) {
      io_uring_prep_poll_add(sqe, wake_fd_, POLLIN);
      io_uring_sqe_set_data64(sqe, kWakeTag);
      io_uring_submit(ring);
      wake_armed_ = true;
    }
  }
  if (rx_ready_count_ > 0 || io_uring_cq_ready(ring) > 0) return;
  const Time now = monotonic_now();
  if (deadline <= now) return;
  const Time ns = (deadline - now + kNanosecond - 1) / kNanosecond;
  __kernel_timespec ts{};
  ts.tv_sec = ns / 1'000'000'000;
  ts.tv_nsec = ns % 1'000'000'000;
  io_uring_cqe* cqe = nullptr;
  io_uring_wait_cqe_timeout(ring, &cqe, &ts);  // -ETIME at the deadline; the CQE stays queued
}

void UringIo::wake() noexcept {
  const uint64_t one = 1;
  // Fails only when the counter would overflow, i.e. a wake is pending anyway.
  if (wake_fd_ < 0) return;
  [[maybe_unused]] const ssize_t r = write(wake_fd_, &one, sizeof(one));
}

}  // namespace uet::io
