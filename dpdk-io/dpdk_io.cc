// The DPDK backend's data path (dpdk_io.h): RX and TX bursts over the lent mbufs, the backlog,
// zero-copy chains, checksum offload, ARP and the inboxes of the other FEPs. Called only from the
// queue's own lcore: no lock, and no allocation but mbufs from the port's pools. The set-up is
// dpdk_setup.cc; what both share is dpdk_internal.h.
#include "dpdk-io/dpdk_internal.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstring>

namespace uet::io {
namespace {

// A backlog the device has taken nothing from for kStuckAfter is offered to it once per
// kStuckPoll only (a ring that drains takes frames within microseconds).
constexpr Time kStuckAfter = kMillisecond;
constexpr Time kStuckPoll = 100 * kMicrosecond;

// A device freed the mbuf of a referenced payload: the registered memory is no longer read.
void on_reference_freed(void* /*addr*/, void* count) { --*static_cast<uint64_t*>(count); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Data path

void DpdkIo::solicit(uint32_t ip4) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) {
    ++stats_.tx_no_buffer;
    return;
  }
  uint8_t* p = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t len = build_arp({p, rte_pktmbuf_tailroom(m)}, kArpRequest, mac_, local_ip4_,
                               kBroadcastMac, ip4);
  m->data_len = static_cast<uint16_t>(len);
  m->pkt_len = static_cast<uint32_t>(len);
  ++counters_.arp_requests_sent;
  send_control(m);
}

void DpdkIo::send_control(rte_mbuf* m) {
  const uint32_t len = m->pkt_len;  // the driver may free m as soon as it has it
  for (uint32_t attempt = 0; attempt <= config_.tx_retries; ++attempt) {
    if (rte_eth_tx_burst(config_.port_id, queue_, &m, 1) == 1) {
      ++stats_.tx_packets;
      stats_.tx_bytes += len;
      return;
    }
    rte_pause();
  }
  ++stats_.tx_dropped;
  ++counters_.tx_ring_full;
  rte_pktmbuf_free(m);
}

void DpdkIo::handle_arp(rte_mbuf* m) {
  ++counters_.arp_rx;
  uint8_t* p = rte_pktmbuf_mtod(m, uint8_t*);
  const auto arp = parse_arp({p, m->data_len});
  if (!arp || arp->tpa != local_ip4_) {
    if (!arp || !redirect(arp->tpa, m)) rte_pktmbuf_free(m);
    return;
  }
  // RFC 826: the target learns the sender (requests and replies alike).
  if (arp->spa != 0) {
    if (neigh_.set(arp->spa, arp->sha, /*is_static=*/false)) {
      ++counters_.arp_learned;
    } else {
      ++counters_.neighbour_table_full;
    }
  }
  if (arp->op != kArpRequest) {
    rte_pktmbuf_free(m);
    return;
  }
  // Answer in place: the request's mbuf becomes the reply.
  const size_t len = build_arp({p, static_cast<size_t>(m->data_len) + rte_pktmbuf_tailroom(m)},
                               kArpReply, mac_, local_ip4_, arp->sha, arp->spa);
  if (len == 0) {
    rte_pktmbuf_free(m);
    return;
  }
  m->data_len = static_cast<uint16_t>(len);
  m->pkt_len = static_cast<uint32_t>(len);
  m->ol_flags = 0;
  ++counters_.arp_requests_answered;
  send_control(m);
}

bool DpdkIo::redirect(uint32_t ip4, rte_mbuf* m) {
  const uint32_t fep = ip4 - config_.local_ip4;  // wraps for addresses below the base
  if (inbox_ == nullptr || fep >= fep_count_ || fep == queue_) return false;
  if (rte_ring_mp_enqueue(port_->inbox[fep], m) != 0) {
    ++counters_.rx_redirect_full;
    ++stats_.rx_dropped;
    rte_pktmbuf_free(m);
    return true;
  }
  ++counters_.rx_redirected;
  return true;
}

size_t DpdkIo::rx_burst(std::span<Frame*> out) {
  const auto want = static_cast<uint16_t>(std::min(out.size(), kMaxBurst));
  uint16_t n = 0;
  if (inbox_ != nullptr) {
    n = static_cast<uint16_t>(rte_ring_sc_dequeue_burst(
        inbox_, reinterpret_cast<void**>(scratch_.data()), want, nullptr));
    counters_.rx_from_inbox += n;
  }
  if (n < want) {
    n = static_cast<uint16_t>(
        n + rte_eth_rx_burst(config_.port_id, queue_, scratch_.data() + n,
                             static_cast<uint16_t>(want - n)));
  }
  size_t k = 0;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = scratch_[i];
    if (m->nb_segs != 1) {
      ++counters_.rx_multi_segment;
      ++stats_.rx_dropped;
      rte_pktmbuf_free(m);
      continue;
    }
    if ((m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK)) != 0 &&
        ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
         (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_BAD)) {
      ++counters_.rx_bad_checksum;
      ++stats_.rx_dropped;
      rte_pktmbuf_free(m);
      continue;
    }
    uint8_t* p = rte_pktmbuf_mtod(m, uint8_t*);
    const uint16_t type = ether_type({p, m->data_len});
    if (type == kEtherTypeArp) {
      handle_arp(m);
      continue;
    }
    if (type != kEtherTypeIpv4 && type != kEtherTypeIpv6) {
      ++counters_.rx_not_ip;
      ++stats_.rx_dropped;
      rte_pktmbuf_free(m);
      continue;
    }
    if (inbox_ != nullptr) {  // several FEPs on this port: another one's frame goes to it
      const auto dst = ipv4_destination({p, m->data_len});
      if (dst && *dst != local_ip4_ && redirect(*dst, m)) continue;
    }
    Frame& f = rx_frames_[k];
    f.data = p;
    f.len = m->data_len;
    f.wire_len = 0;
    f.capacity = m->data_len;
    f.priority = Priority::kData;
    // The NIC verified both checksums (RX offload): the engine need not.
    f.checksums_ok =
        (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
        (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD;
    counters_.rx_checksum_verified += f.checksums_ok ? 1 : 0;
    rx_mbufs_[k] = m;
    out[k] = &f;
    ++k;
    ++stats_.rx_packets;
    stats_.rx_bytes += m->data_len;
  }
  return k;
}

void DpdkIo::release_rx(std::span<Frame* const> frames) {
  size_t n = 0;
  for (Frame* f : frames) scratch_[n++] = rx_mbufs_[static_cast<size_t>(f - rx_frames_.data())];
  rte_pktmbuf_free_bulk(scratch_.data(), static_cast<unsigned>(n));
}

void DpdkIo::flush_backlog() {
  while (backlog_len_ > 0) {
    // A device stuck for a while is polled, not spun on: a peer that stopped or died leaves
    // this thread mostly outside the PMD (memif unmaps its rings under a running TX burst).
    if (backlog_stuck_since_ >= 0) {
      const Time now = monotonic_now();
      if (now - backlog_stuck_since_ >= kStuckAfter && now - backlog_tried_ < kStuckPoll) return;
      backlog_tried_ = now;
    }
    const uint16_t n = rte_eth_tx_burst(config_.port_id, queue_, backlog_.data() + backlog_head_,
                                        static_cast<uint16_t>(backlog_len_));
    if (n == 0) {
      // Nothing taken: hold the frames for tx_hold at most, then drop them as a NIC does on a
      // down link, so the engine's retransmissions, not the device, decide an operation's fate.
      const Time now = monotonic_now();
      if (backlog_stuck_since_ < 0) backlog_stuck_since_ = now;
      if (now - backlog_stuck_since_ < config_.tx_hold) return;
      rte_pktmbuf_free_bulk(backlog_.data() + backlog_head_, static_cast<unsigned>(backlog_len_));
      counters_.tx_stalled += backlog_len_;
      ++counters_.tx_stalls;
      stats_.tx_dropped += backlog_len_;
      backlog_len_ = 0;
      break;
    }
    backlog_stuck_since_ = -1;
    for (uint16_t i = 0; i < n; ++i) stats_.tx_bytes += backlog_lens_[backlog_head_ + i];
    stats_.tx_packets += n;
    backlog_head_ += n;
    backlog_len_ -= n;
  }
  backlog_head_ = 0;
  backlog_stuck_since_ = -1;
}

size_t DpdkIo::alloc_tx(std::span<Frame*> out) {
  // Backpressure: while the device ring is full, frames wait in the backlog and the engine is
  // lent no more than the backlog can take, so it holds its packets instead of losing them.
  if (backlog_len_ > 0) flush_backlog();
  const size_t room = backlog_.size() - backlog_len_;
  const size_t want = std::min({out.size(), kMaxBurst, room});
  if (tx_held_ < want) top_up_tx(want);
  tx_lent_ = std::min(want, tx_held_);
  // Held frames are empty already (reset when their mbuf came, or when left unused): an idle
  // poll writes no frame.
  for (size_t i = 0; i < tx_lent_; ++i) out[i] = &tx_frames_[tx_slot(i)];
  return tx_lent_;
}

// Empties a frame for lending again; its data and capacity stay its mbuf's.
void DpdkIo::reset_tx_frame(Frame& f) noexcept {
  f.len = 0;
  f.wire_len = 0;
  f.ref = nullptr;
  f.ref_len = f.ref_at = 0;
  f.priority = Priority::kData;
}

// Allocates mbufs into the slots after the held ones, up to `want` held. The bulk call is all
// or nothing: halve the top-up until it succeeds.
void DpdkIo::top_up_tx(size_t want) {
  std::array<rte_mbuf*, kTxSlots> fresh;
  unsigned more = static_cast<unsigned>(want - tx_held_);
  while (more > 0 && rte_pktmbuf_alloc_bulk(pool_, fresh.data(), more) != 0) more /= 2;
  if (more == 0) ++stats_.tx_no_buffer;
  for (unsigned j = 0; j < more; ++j) {
    const size_t s = tx_slot(tx_held_ + j);
    rte_mbuf* m = fresh[j];
    tx_mbufs_[s] = m;
    tx_frames_[s].data = rte_pktmbuf_mtod(m, uint8_t*);
    tx_frames_[s].capacity = std::min<uint32_t>(rte_pktmbuf_tailroom(m), max_frame_);
    reset_tx_frame(tx_frames_[s]);
  }
  tx_held_ += more;
}

// A caller that filled other frames than a prefix of what it was lent: the mbufs kept (the
// unused ones, then those not lent) move to the front and their frames are set again.
void DpdkIo::regroup_tx(std::span<Frame* const> unused) {
  size_t kept = 0;
  for (Frame* f : unused) scratch_[kept++] = tx_mbufs_[static_cast<size_t>(f - tx_frames_.data())];
  for (size_t i = tx_lent_; i < tx_held_; ++i) scratch_[kept++] = tx_mbufs_[tx_slot(i)];
  tx_head_ = tx_held_ = 0;
  for (size_t i = 0; i < kept; ++i) {
    tx_mbufs_[i] = scratch_[i];
    tx_frames_[i].data = rte_pktmbuf_mtod(scratch_[i], uint8_t*);
    tx_frames_[i].capacity = std::min<uint32_t>(rte_pktmbuf_tailroom(scratch_[i]), max_frame_);
    reset_tx_frame(tx_frames_[i]);
  }
  tx_held_ = kept;
}

void DpdkIo::free_held_tx() {
  for (size_t i = 0; i < tx_held_; ++i) scratch_[i] = tx_mbufs_[tx_slot(i)];
  if (tx_held_ > 0) rte_pktmbuf_free_bulk(scratch_.data(), static_cast<unsigned>(tx_held_));
  tx_head_ = tx_held_ = tx_lent_ = 0;
}

void DpdkIo::on_miss(uint32_t ip4) {
  const Time now = monotonic_now();
  for (Pending& p : pending_) {
    if (p.ip4 == ip4) {
      if (now - p.sent < config_.arp_interval) return;
      p.sent = now;
      solicit(ip4);
      return;
    }
  }
  pending_[pending_next_] = {ip4, now};
  pending_next_ = (pending_next_ + 1) % static_cast<uint32_t>(pending_.size());
  solicit(ip4);
}

// Sets the mbuf's lengths. A referenced payload (Frame::ref) is chained behind the headers as
// an external buffer, and the bytes after it (RoCEv2's pad and ICRC) in a third segment;
// without a gathering port, or with no small mbuf left, it is copied into the frame instead.
bool DpdkIo::chain_reference(rte_mbuf* m, Frame& f) {
  const uint32_t tail = f.len - f.ref_at;  // what follows the payload (RoCEv2: pad and ICRC)
  if (f.ref_len >= config_.reference_from && f.ref_len > 0 && ext_pool_ != nullptr &&
      tail <= dpdk_detail::kExtTailRoom) {
    std::array<rte_mbuf*, 2> seg{};
    if (rte_pktmbuf_alloc_bulk(ext_pool_, seg.data(), tail > 0 ? 2 : 1) == 0) {
      auto* shinfo = static_cast<rte_mbuf_ext_shared_info*>(rte_mbuf_to_priv(seg[0]));
      shinfo->free_cb = on_reference_freed;
      shinfo->fcb_opaque = references_;
      rte_mbuf_ext_refcnt_set(shinfo, 1);
      void* addr = const_cast<uint8_t*>(f.ref);
      const rte_iova_t iova = iova_is_va_
                                  ? static_cast<rte_iova_t>(reinterpret_cast<uintptr_t>(addr))
                                  : RTE_BAD_IOVA;  // a virtual device: read by CPU
      rte_pktmbuf_attach_extbuf(seg[0], addr, iova, static_cast<uint16_t>(f.ref_len), shinfo);
      seg[0]->data_len = static_cast<uint16_t>(f.ref_len);
      ++*references_;
      m->next = seg[0];
      m->nb_segs = 2;
      if (tail > 0) {
        std::memcpy(rte_pktmbuf_mtod(seg[1], uint8_t*), f.data + f.ref_at, tail);
        seg[1]->data_len = static_cast<uint16_t>(tail);
        seg[0]->next = seg[1];
        m->nb_segs = 3;
      }
      m->data_len = static_cast<uint16_t>(f.ref_at);
      m->pkt_len = f.len + f.ref_len;
      ++counters_.tx_referenced;
      return true;
    }
    ++counters_.tx_no_ext_mbuf;
  }
  if (f.ref_len > 0) {
    if (!flatten(f)) return false;
    ++counters_.tx_flattened;
  }
  m->data_len = static_cast<uint16_t>(f.len);
  m->pkt_len = f.len;
  return true;
}

// A UDP frame (over IPv4, or IPv6 without extension headers; one 802.1Q tag or none) whose
// checksum is 0 is marked for the device to fill in (RFC 768: 0 means none was computed).
bool DpdkIo::offload_udp_checksum(rte_mbuf* m, const Frame& f) noexcept {
  // The headers are in the frame's own bytes (a payload by reference comes after them).
  const std::span<const uint8_t> own(f.data, f.ref_len > 0 ? f.ref_at : f.len);
  size_t l2 = 0;
  const uint16_t type = ether_type(own, &l2);
  size_t l3 = 0;
  uint64_t flags = RTE_MBUF_F_TX_UDP_CKSUM;
  if (type == kEtherTypeIpv4 && own.size() >= l2 + 20) {
    l3 = (own[l2] & 0x0Fu) * 4u;
    if (l3 < 20 || own[l2 + 9] != NET_IPPROTO_UDP) return false;
    flags |= RTE_MBUF_F_TX_IPV4;
  } else if (type == kEtherTypeIpv6 && own.size() >= l2 + 40) {
    l3 = 40;
    if (own[l2 + 6] != NET_IPPROTO_UDP) return false;
    flags |= RTE_MBUF_F_TX_IPV6;
  } else {
    return false;
  }
  if (own.size() < l2 + l3 + 8) return false;
  const uint8_t* udp = own.data() + l2 + l3;
  if (udp[6] != 0 || udp[7] != 0) return false;
  m->tx_offload = rte_mbuf_tx_offload(l2, l3, 0, 0, 0, 0, 0);
  m->ol_flags |= flags;
  return true;
}

// rte_eth_tx_prepare: what the device needs before it fills checksums (the pseudo-header sum
// in the checksum field, for most NICs). A frame it refuses is dropped and counted.
uint16_t DpdkIo::prepare_tx(std::array<rte_mbuf*, kMaxBurst>& send,
                            std::array<uint32_t, kMaxBurst>& lens, uint16_t k) {
  uint16_t done = 0;
  while (done < k) {
    done += rte_eth_tx_prepare(config_.port_id, queue_, send.data() + done,
                               static_cast<uint16_t>(k - done));
    if (done == k) break;
    ++counters_.tx_prepare_refused;
    ++stats_.tx_dropped;
    rte_pktmbuf_free(send[done]);
    std::copy(send.begin() + done + 1, send.begin() + k, send.begin() + done);
    std::copy(lens.begin() + done + 1, lens.begin() + k, lens.begin() + done);
    --k;
  }
  return k;
}

size_t DpdkIo::tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) {
  // Frames are filled in order: of the unused ones only the first can hold a frame begun and
  // given up (packet_io.h); the others are still empty.
  if (!unused.empty()) reset_tx_frame(*unused[0]);
  if (filled.empty() && backlog_len_ == 0) {  // an idle poll: every frame stays where it is
    tx_lent_ = 0;
    return 0;
  }
  std::array<rte_mbuf*, kMaxBurst> send;
  std::array<uint32_t, kMaxBurst> lens;  // the driver may free an mbuf as soon as it has it
  uint16_t k = 0;
  size_t freed = 0;
  bool prefix = filled.size() <= tx_lent_;  // HostLoop's case: the first frames lent, in order
  for (size_t i = 0; i < filled.size(); ++i) {
    Frame* f = filled[i];
    const auto slot = static_cast<size_t>(f - tx_frames_.data());
    prefix = prefix && slot == tx_slot(i);
    rte_mbuf* m = tx_mbufs_[slot];
    const uint32_t bytes = f->len + f->ref_len;
    if (f->len == 0 || bytes > max_frame_ || f->wire_len > bytes || !chain_reference(m, *f)) {
      ++counters_.tx_too_big;
      ++stats_.tx_dropped;
      scratch_[freed++] = m;
      continue;
    }
    if (offloads_.tx_udp_checksum_used && offload_udp_checksum(m, *f))
      ++counters_.tx_checksum_offloaded;
    if (const auto dst = ipv4_destination({f->data, f->len})) {
      const wire::MacAddr* mac = neigh_.find(*dst);
      if (mac == nullptr) {
        ++counters_.tx_no_neighbour;
        ++stats_.tx_dropped;
        scratch_[freed++] = m;
        on_miss(*dst);
        continue;
      }
      std::memcpy(f->data, mac->data(), 6);
    }
    lens[k] = bytes;
    send[k++] = m;
  }
  if (freed > 0) rte_pktmbuf_free_bulk(scratch_.data(), static_cast<unsigned>(freed));
  // Kept for the next alloc_tx(): the unused frames' mbufs, then those not lent this time.
  if (prefix) {
    tx_head_ = tx_slot(filled.size());
    tx_held_ -= filled.size();
  } else {
    regroup_tx(unused);
  }
  tx_lent_ = 0;

  if (offloads_.tx_udp_checksum_used) k = prepare_tx(send, lens, k);

  // Queue behind the backlog, then push as much as the ring takes (retrying briefly); what
  // is left waits in the backlog for the next burst. Nothing is dropped for a full ring
  // unless the backlog itself is full (a frame alloc_tx lent past its room: never).
  if (backlog_head_ + backlog_len_ + k > backlog_.size()) {
    std::copy_n(backlog_.begin() + backlog_head_, backlog_len_, backlog_.begin());
    std::copy_n(backlog_lens_.begin() + backlog_head_, backlog_len_, backlog_lens_.begin());
    backlog_head_ = 0;
  }
  uint16_t queued = 0;
  for (; queued < k && backlog_len_ < backlog_.size(); ++queued) {
    backlog_[backlog_head_ + backlog_len_] = send[queued];
    backlog_lens_[backlog_head_ + backlog_len_] = lens[queued];
    ++backlog_len_;
  }
  if (queued < k) {
    counters_.tx_ring_full += k - queued;
    stats_.tx_dropped += k - queued;
    rte_pktmbuf_free_bulk(send.data() + queued, static_cast<unsigned>(k - queued));
  }
  for (uint32_t attempt = 0; backlog_len_ > 0; ++attempt) {
    flush_backlog();
    if (backlog_len_ == 0 || attempt >= config_.tx_retries) break;
    rte_pause();
  }
  if (backlog_len_ > 0) ++counters_.tx_ring_full_waits;
  return queued;  // sent, or queued in the backlog to go first next time
}

}  // namespace uet::io
