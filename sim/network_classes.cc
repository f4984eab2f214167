// The further lossless classes (sim/routing/lossless_classes.h), where frames change class
// (Network::tagging_): Tagger's and the dateline's rule applied as a switch does, a frame
// buffered at its ingress under the priority it arrived in (its PFC priority on that link) and
// queued at its egress in the class the rule gives (Hu et al., CoNEXT 2017, §5: "a switch ...
// re-tags"); the further classes' transmission, pause and queue accounting. The per-event
// path reaches here only where tagging_ is set (run_events<true>); a fabric whose frames keep
// class 0 runs none of it.
#include <algorithm>
#include <array>

#include "sim/frame_parse.h"
#include "sim/network.h"
#include "sim/network_inline.h"

namespace uet::sim {

namespace {
// The DSCP of each lossless class (0, 1, 2), which a switch that moves a frame into another
// class writes, as Tagger's switches rewrite the tag the next hop classifies by (Hu et al.,
// CoNEXT 2017, §5: the tag is carried in the DSCP field); spec/rocev2.md §1. A frame moved
// back into class 0 gets the data class's code point, kDscpData: the one its sender marked,
// since every sender in the simulator marks its data so (the engines' default dscp_data,
// which no tool changes, and UdpApp's). Classes 1 and 2 are code points no engine sends and
// classify_dscp() reads as data.
constexpr std::array<uint8_t, kLosslessPriorities> kClassDscp = {
    kDscpData, ROCEV2_DSCP_LOSSLESS_1, ROCEV2_DSCP_LOSSLESS_2};
static_assert(classify_dscp(ROCEV2_DSCP_LOSSLESS_1) == Priority::kData &&
              classify_dscp(ROCEV2_DSCP_LOSSLESS_2) == Priority::kData &&
              ROCEV2_DSCP_LOSSLESS_1 != kDscpData && ROCEV2_DSCP_LOSSLESS_2 != kDscpData);
}  // namespace

// The frame was queued upstream in priority m.prio and arrived through `in_port`; the rule
// reads the upstream egress (the link's far end) and `out`. The control class stays.
void Network::forward_tagged(uint32_t in_port, uint32_t out, FrameId f) {
  const int in_prio = meta(f).prio;
  int prio = in_prio;
  if (in_prio != 1) {
    const auto cls = static_cast<uint8_t>(lossless_class(in_prio));
    const uint8_t next = routing_.lossless().next(cls, peer_of(in_port), out);
    prio = lossless_priority(next);
    // Its DSCP says so from this hop on (a pcap of the next link shows it); the IPv4
    // checksum is recomputed, over any damage too.
    if (next != cls && set_dscp(frame_bytes(f), kClassDscp[next])) {
      FrameMeta& m = meta(f);
      if (m.corrupted) {
        ++rare_stats(out).corrupted_rewrites;
        m.corrupted = false;
      }
    }
  }
  enqueue_tagged(out, f, prio, in_port, in_prio);
}

// enqueue's switch side, by priority: a lossless class admitted by its ingress counter (XOFF
// + headroom) and marked by its own queue, control by its buffer limit. No trimming: with PFC
// on nothing lossless is trimmed.
bool Network::enqueue_tagged(uint32_t port, FrameId f, int prio, uint32_t ingress, int in_prio) {
  Port& p = ports_[port];
  FrameMeta& m = meta(f);
  const SwitchConfig& sc = config_.switches;  // every switch's (Switch::config)
  if (prio == 1) {
    const uint64_t limit = p.scaled ? scaled_[port].control_buffer_bytes : sc.control_buffer_bytes;
    if (p.queued_bytes[1] + m.bytes > limit) {
      ++p.stats.drops;
      drop(f);
      return false;
    }
  } else {
    if (pfc_stormed_ != 0 && pfc_storm_drop(port, prio, f)) [[unlikely]] return false;
    if (ingress_bytes_of(ingress, in_prio) + m.bytes > sc.pfc.xoff_bytes + sc.pfc.headroom_bytes) {
      ++rare_stats(port).lossless_drops;
      drop(f);
      return false;
    }
    const uint64_t q = prio == 0 ? p.queued_bytes[0] : classes_[port][prio - 2].queued_bytes;
    if (sc.ecn.enabled) mark_ecn(p, port, f, m, q);
  }
  uint64_t& in_bytes = ingress_bytes_of(ingress, in_prio);
  in_bytes += m.bytes;
  if (in_prio != 1 && ((ports_[ingress].pause_sent >> in_prio) & 1) == 0 &&
      in_bytes > sc.pfc.xoff_bytes) {
    send_pfc(ingress, in_prio, true);
  }
  if (prio < kPortPriorities) {
    account_queue(p);
  } else {
    account_classes(port);
  }
  m.prio = static_cast<uint8_t>(prio) & 3;
  const QueuedFrame q{f, m.bytes, ingress | static_cast<uint32_t>(in_prio) << 24};
  if (prio < kPortPriorities) {
    p.queue[prio].push(q, ring_pool_);
    p.queued_bytes[prio] += m.bytes;
  } else {
    PortClass& c = classes_[port][prio - 2];
    c.queue.push(q, ring_pool_);
    c.queued_bytes += m.bytes;
    p.classes |= static_cast<uint8_t>(1u << (prio - 2));
  }
  p.stats.max_queue_bytes = std::max(p.stats.max_queue_bytes, queue_total(port));
  kick_port<true>(port);
  return true;
}

// start_tx where a further class holds frames: control first (start_tx_inline), then the
// highest lossless class not paused, class 0 last: a frame that crossed more global links
// (or a dateline) is nearer its destination, and the classes above never wait on those below.
void Network::start_tx_class(uint32_t port) {
  Port& p = ports_[port];
  int prio = -1;
  for (int c = kNumPriorities - 1; c >= kPortPriorities && prio < 0; --c) {
    if (((p.classes >> (c - 2)) & 1) != 0 && !paused_at(port, c)) prio = c;
  }
  if (prio < 0) {
    if (p.queue[0].empty() || p.paused[0]) return;
    prio = 0;
  }
  QueuedFrame q;
  if (prio == 0) {
    account_queue(p);
    q = p.queue[0].pop(ring_pool_);
    p.queued_bytes[0] -= q.bytes;
  } else {
    account_classes(port);
    PortClass& c = classes_[port][prio - 2];
    q = c.queue.pop(ring_pool_);
    c.queued_bytes -= q.bytes;
    if (c.queue.empty()) p.classes &= static_cast<uint8_t>(~(1u << (prio - 2)));
  }
  if (q.ingress != kNone) release_ingress(q.ingress, q.bytes);
  const Time done = send_frame(p, port, q.frame, q.bytes);
  const bool ready = (p.classes & ~(p.classes >> 4) & 3) != 0;  // held, not paused
  if ((!p.queue[0].empty() && !p.paused[0]) || (!p.queue[1].empty() && !p.paused[1]) || ready) {
    events_q_.push(done, kTxDone, port, 0, event_key(port, 0));
    p.done_scheduled = true;
  }
}

// A PFC frame for a further class reaches the upstream egress `port` (on_pfc's other half).
void Network::on_pfc_class(uint32_t port, int prio, bool pause) {
  if (classes_.empty() || pause == paused_at(port, prio)) return;
  Port& p = ports_[port];
  PortClass& c = classes_[port][prio - 2];
  const auto bit = static_cast<uint8_t>(1u << (prio + 2));  // 4 + class's bit
  if (pause) {
    p.classes |= bit;
    c.paused_since = now_;
    if (config_.switches.pfc.watchdog.enabled) pfc_watch_paused(port, prio);
    return;
  }
  p.classes &= static_cast<uint8_t>(~bit);
  rare_stats(port).paused_time += now_ - c.paused_since;
  kick_port<true>(port);
}

// The further classes' queued bytes at a port (Port::classes says which hold frames).
uint64_t Network::classes_bytes(uint32_t port) const noexcept {
  uint64_t bytes = 0;
  for (const PortClass& c : classes_[port]) bytes += c.queued_bytes;
  return bytes;
}

void Network::account_classes(uint32_t port) noexcept {
  Port& p = ports_[port];
  Time& last = classes_[port][0].last_change;
  if (const uint64_t q = classes_bytes(port); q != 0) {
    p.stats.queue_byte_ps += static_cast<double>(q) * static_cast<double>(now_ - last);
  }
  last = now_;
}

// A frame leaves a switch's buffer where frames change class: its ingress counter (the
// priority it arrived in, packed in QueuedFrame::ingress) gives its bytes back, and the
// ingress resumes its upstream at XON.
void Network::release_ingress(uint32_t packed, uint32_t bytes) {
  const uint32_t in = packed & kIngressPortMask;
  const auto prio = static_cast<int>(packed >> 24);
  uint64_t& b = ingress_bytes_of(in, prio);
  b -= bytes;
  const PfcConfig& pfc = config_.switches.pfc;
  if (pfc.enabled && prio != 1 && ((ports_[in].pause_sent >> prio) & 1) != 0 &&
      b <= pfc.xon_bytes) {
    send_pfc(in, prio, false);
  }
}

}  // namespace uet::sim
