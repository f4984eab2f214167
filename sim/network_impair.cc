// A frame's fate on a link that is not plain (Port::plain): a tap records it, a down link
// drops it, an impaired one may lose, damage, hold back or duplicate it, and a cut port hands
// it to the rank that runs its peer. start_tx calls start_tx_rare for such a link only; the
// common case is in network.cc. And the failures and degradations a run schedules (a link
// down or up, its rate cut), with a degraded port's scaled limits.
#include <algorithm>
#include <cstring>
#include <span>

#include "sim/frame_parse.h"
#include "sim/network.h"
#include "transport/wire/decode.h"

namespace uet::sim {

namespace {
constexpr uint32_t kScaleQueuesBit = 1u << 31;  // in a kLinkRate event's `b`
// A byte limit or threshold scaled to a degraded link's fraction of its rate (at least 1).
uint64_t scaled_bytes(uint64_t bytes, double scale) noexcept {
  return std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(bytes) * scale));
}
}  // namespace

void Network::set_link_up(uint32_t port, bool up, Time at) {
  at = std::max(at, now_);
  events_q_.push(at, kLinkState, port, up ? 1 : 0, event_key(port, control_events_++));
}

void Network::set_link_rate(uint32_t port, double fraction, Time at, bool scale_queues) {
  at = std::max(at, now_);
  const double f = std::clamp(fraction, 0.0001, 1.0);
  // `b`: the fraction in millionths (at most 1e6 < 2^20), bit 31 the queue scaling.
  events_q_.push(at, kLinkRate, port,
                 static_cast<uint32_t>(f * 1e6) | (scale_queues ? kScaleQueuesBit : 0),
                 event_key(port, control_events_++));
}

// A kLinkRate event (dispatch): `b` is the link's fraction of its rate in millionths, and
// kScaleQueuesBit.
void Network::on_link_rate(uint32_t port, uint32_t b) {
  const double fraction = static_cast<double>(b & ~kScaleQueuesBit) / 1e6;
  const bool scale = (b & kScaleQueuesBit) != 0;
  for (uint32_t p : {port, peer_of(port)}) {
    if (!owns_port(p)) continue;  // another rank's: not stored here
    set_rate(ports_[p], static_cast<int64_t>(link_config(p).gbps * 1e9 * fraction));
    ports_[p].scaled = scale && fraction < 1;
    if (ports_[p].scaled) {
      // What enqueue admits and marks by at this port until the rate changes again.
      const SwitchConfig& sc = config_.switches;  // every switch's (Switch::config)
      if (scaled_.size() < ports_.size()) scaled_.resize(ports_.size());
      ScaledLimits& l = scaled_[p];
      l.buffer_bytes = scaled_bytes(sc.buffer_bytes, fraction);
      l.control_buffer_bytes = scaled_bytes(sc.control_buffer_bytes, fraction);
      l.ecn = sc.ecn;
      l.ecn.kmin_bytes = scaled_bytes(sc.ecn.kmin_bytes, fraction);
      l.ecn.kmax_bytes =
          std::max(scaled_bytes(sc.ecn.kmax_bytes, fraction), l.ecn.kmin_bytes + 1);
    }
  }
}

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

}  // namespace uet::sim
