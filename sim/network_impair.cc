// A frame's fate on a link that is not plain (Port::plain): a tap records it, a down link
// drops it, an impaired one may lose, damage, hold back or duplicate it, and a cut port hands
// it to the rank that runs its peer. start_tx calls start_tx_rare for such a link only; the
// common case is in network.cc.
#include <cstring>
#include <span>

#include "sim/frame_parse.h"
#include "sim/network.h"
#include "transport/wire/decode.h"

namespace uet::sim {

// The frame's fate on a tapped, down or impaired link (start_tx's uncommon case).
void Network::start_tx_rare(uint32_t port, FrameId f, uint32_t bytes, Time done) {
  Port& p = ports_[port];
  const LinkConfig& link = link_config(port);
  if (p.tapped) {
    (void)taps_[port]->write(std::span<const uint8_t>(pool_.data(f), pool_.len(f)),
                             static_cast<uint64_t>(now_ / kNanosecond), bytes);
  }
  if (!p.up) {
    ++p.stats.drops;
    drop(f);
  } else if (!p.impaired) {  // no draws: the same as every chance() below failing
    arrive_at_peer(port, done + p.delay, f, arrival_key(port, p));
  } else if (p.rng.chance(link.loss)) {
    ++rare_stats(port).wire_losses;
    drop(f);
  } else {
    // One bit after the Ethernet header, as a switch's memory (not the wire, whose FCS
    // would catch it) might damage it: IP/UDP checksums, the ICRC or the receiver must.
    // A frame is damaged at most once on its way (one memory error per frame: two flips
    // can cancel in the Internet checksum, which is not what this models).
    if (p.rng.chance(link.corrupt) && !meta(f).damaged) {
      const Frame fr = pool_.view(f);  // its bytes are flipped in place
      constexpr uint32_t kL2 = 14;
      const uint64_t bit = kL2 * 8 + p.rng.below(uint64_t{fr.len - kL2} * 8);
      const bool sealed = sealed_untrimmed(fr);  // before the flip, which may hit the type
      fr.data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      ++rare_stats(port).corruptions;
      meta(f).parsed = false;  // the next switch reads the damaged headers
      meta(f).damaged = true;
      if (damage_detectable(fr, bit / 8, sealed)) {
        meta(f).corrupted = true;
      } else {
        ++rare_stats(port).corrupted_unchecked;
      }
    }
    Time arrive = done + p.delay;
    if (p.rng.chance(link.reorder) && link.reorder_delay > 0) {
      arrive += 1 + static_cast<Time>(p.rng.below(static_cast<uint64_t>(link.reorder_delay)));
      ++rare_stats(port).reorders;
    }
    // The draw decides a copy before the original leaves (it may go to another process).
    const bool copy = p.rng.chance(link.duplicate);
    if (copy) duplicate(port, f, done + p.delay);
    arrive_at_peer(port, arrive, f, arrival_key(port, p));
  }
}

// Whether an end-to-end check covers byte `at` of a frame: the IPv4 header checksum covers
// the IP header, the UDP checksum the rest, unless the sender or a trimming switch left it 0;
// then only RoCEv2 frames (UDP port 4791) are covered, by their ICRC. (Exact for IPv4; in
// IPv6, which has no header checksum, damage to the traffic class, flow label or hop limit
// escapes every check but is counted as detectable here.) A sealed UET frame (TSS, spec/uet.md
// §5.2) has its tag instead: it covers the rest, and its AAD the ports. Called only when a
// frame is damaged; `sealed`: it was a sealed UET frame with its tag before the damage.
bool Network::damage_detectable(const Frame& f, size_t at, bool sealed) noexcept {
  FrameInfo info;
  if (!parse_frame(f, &info) || at < info.l4 || info.protocol != NET_IPPROTO_UDP) return true;
  if (f.len < info.l4 + wire::Udp::kSize) return true;
  if (wire::load_be(f.data + info.l4 + 6, 2) != 0 || info.dport == wire::kRoceUdpPort) return true;
  if (sealed) return true;
  // No checksum: the receiver still sees a damaged destination port, length or checksum.
  return at >= info.l4 + 2 && at < info.l4 + wire::Udp::kSize;
}

// A UET frame over UDP led by a TSS header, not trimmed (a trim cuts the tag, §5.5).
bool Network::sealed_untrimmed(const Frame& f) noexcept {
  FrameInfo info;
  if (!parse_frame(f, &info) || info.protocol != NET_IPPROTO_UDP) return false;
  if (info.dport != wire::kUetUdpPort || info.dscp == kDscpTrimmed) return false;
  const size_t at = info.l4 + wire::Udp::kSize;
  return f.len >= at + wire::PdsPrologue::kSize &&
         wire::as<wire::PdsPrologue>(f.data + at)->type() == wire::PdsType::kEnc;
}

// A byte-identical copy of frame `f` arrives at the peer of `port` up to reorder_delay after
// `at` (the copy may overtake the original or come after it). The copy is a pool frame: no
// allocation once the pool has grown to the run's peak.
void Network::duplicate(uint32_t port, FrameId f, Time at) {
  Port& p = ports_[port];
  const FrameMeta m = meta(f);
  const FrameId c = pool_.alloc();  // may grow the pool: take references afterwards
  const Frame from = pool_.view(f);
  std::memcpy(pool_.data(c), from.data, from.len);
  pool_.store(c, from);
  meta(c) = m;
  ++rare_stats(port).duplicates;
  if (const Time hold = link_config(port).reorder_delay; hold > 0) {
    at += static_cast<Time>(p.rng.below(static_cast<uint64_t>(hold) + 1));
  }
  arrive_at_peer(port, at, c, arrival_key(port, p) + 1);
}

void Network::arrive_at_peer(uint32_t port, Time at, FrameId f, uint64_t key) {
  const Port& p = ports_[port];
  if (p.remote) [[unlikely]] {
    send_remote(p.peer, at, key, kArrive, 0, f);
    return;
  }
  events_q_.push(at, kArrive, p.peer, f, key);
}

PortStats Network::port_stats(uint32_t port) const noexcept {
  PortStats s;
  if (!owns_port(port)) return s;  // another rank's counters are there
  const Port& p = ports_[port];
  s.tx_frames = p.stats.tx_frames;
  s.tx_bytes = p.stats.tx_bytes;
  s.max_queue_bytes = p.stats.max_queue_bytes;
  s.queue_byte_ps = p.stats.queue_byte_ps;
  s.drops = p.stats.drops;
  s.trims = p.stats.trims;
  s.ecn_marks = p.stats.ecn_marks;
  if (p.rare == kNone) return s;
  const PortRareStats& r = rare_[p.rare];
  s.lossless_drops = r.lossless_drops;
  s.wire_losses = r.wire_losses;
  s.corruptions = r.corruptions;
  s.duplicates = r.duplicates;
  s.reorders = r.reorders;
  s.pauses_sent = r.pauses_sent;
  s.paused_time = r.paused_time;
  s.corrupted_arrivals = r.corrupted_arrivals;
  s.damaged_arrivals = r.damaged_arrivals;
  s.corrupted_rewrites = r.corrupted_rewrites;
  s.corrupted_unchecked = r.corrupted_unchecked;
  return s;
}

}  // namespace uet::sim
