// The per-event path: the event loop, ports (queues, transmission, PFC), switch forwarding
// and the host seam (a NIC pulling from its transport). A frame's fate on a link that is not
// plain, and the link failures and degradations a run schedules, are in network_impair.cc,
// building the fabric in network_build.cc, its routes in sim/routing/, the exchange between
// the ranks of a fabric split over processes in network_ranks.cc, the PFC watchdog in
// network_pfc.cc, the further lossless classes (where switches change a frame's class) in
// network_classes.cc, the counters as read in network_stats.cc, the per-hop pieces both
// paths inline in network_inline.h.
#include "sim/network.h"

#include <algorithm>

#include "sim/frame_parse.h"
#include "sim/network_inline.h"
#include "transport/wire/checksum.h"
#include "transport/wire/decode.h"

namespace uet::sim {

const Network::FrameMeta Network::kFreshMeta{};

Network::Network(const NetworkConfig& config)
    : config_(config), pool_(config.frame_capacity, &kFreshMeta) {
  // The current bucket's arrays; the far heap grows with what is scheduled far ahead.
  events_q_.reserve(0);
  frame_.capacity = pool_.capacity();
  host_cost_ = config.host_cost.ps_per_frame > 0 || config.host_cost.ps_per_byte > 0;
}

uint32_t Network::register_callback(Scheduled* target) {
  // Workloads schedule through one or a few targets: remember the last one, so the common
  // case skips the hash lookup.
  if (target != last_callback_) {
    auto [it, inserted] = callback_index_.emplace(target, static_cast<uint32_t>(callbacks_.size()));
    if (inserted) callbacks_.push_back(target);
    last_callback_ = target;
    last_callback_index_ = it->second;
  }
  return last_callback_index_;
}

void Network::schedule(Time at, Scheduled* target, uint32_t cookie) {
  at = std::max(at, now_);
  const uint32_t index = register_callback(target);
  // `a` indexes the callback table; `b` is the caller's cookie, which orders calls due at
  // the same time (before the table's index: a process that never scheduled through an
  // earlier target numbers its targets differently).
  events_q_.push(at, kCall, index, cookie, call_key(index, cookie));
}

void Network::kick(uint32_t host) {
  host_pull(host);
  host_arm_timer(host);
}

uint32_t Network::route_port(uint32_t sw, uint32_t dst_host, uint64_t flow_hash,
                             uint8_t& state) const noexcept {
  if (routing_.minimal()) return routing_.port(sw, dst_host, flow_hash);
  if (state == 0) {
    state = routing_.decide(sw, dst_host, flow_hash, [this](uint32_t p) { return ugal_load(p); });
  }
  return routing_.port_stateful(sw, dst_host, flow_hash, state);
}

uint64_t Network::ugal_load(uint32_t port) const noexcept {
  const uint64_t q = queue_total(port);
  if (routing_.config().ugal_signal != UgalSignal::kDownstream) return q;
  const Port& p = ports_[port];
  if (p.peer == kNone || p.remote || ports_[p.peer].at_host) return q;
  // What the next switch buffers from this link, in every class it may be buffered under.
  const Port& in = ports_[p.peer];
  uint64_t held = in.ingress_bytes[0] + in.ingress_bytes[1];
  if (p.peer < classes_.size()) {
    for (const PortClass& c : classes_[p.peer]) held += c.ingress_bytes;
  }
  return q + held;
}

uint32_t Network::route_miss(Routing::Memo& memo, uint32_t sw, FrameMeta& m) noexcept {
  if (routing_.minimal()) [[likely]] {
    return routing_.port_remember(memo, sw, m.dst_host, m.flow_hash);
  }
  uint8_t state = m.route_state;
  const uint32_t out = route_port(sw, m.dst_host, m.flow_hash, state);
  m.route_state = state & 7;
  return out;
}

// Prefetching: the current bucket is a sorted array, so the loop knows the next events and
// asks for what they will touch before it gets there, in stages, each naming lines the
// earlier stage brought in: kPrefetchFar events ahead the port and the frame's metadata;
// kPrefetchMid ahead a queue's head, the frame's route entry or its bytes; kPrefetchNear ahead
// the egress port a switch will pick (computed from the now-cached route and memoised for the
// later stage and switch_forward; the ECMP groups, a few KiB, stay cached) or the
// host's transport; kPrefetchLast ahead the slot in the egress queue the frame will be
// written to. Hints only: nothing is decided from them. Every helper and stage here is
// always_inline: GCC finds a function whose only effects are prefetches free of side effects
// and deletes calls to it, so a stage (or, once prefetch_ahead is inlined into run_until, the
// prefetch() wrapper itself) left out of line silently vanishes; check the disassembly.
namespace {
constexpr size_t kPrefetchFar = 12;
constexpr size_t kPrefetchMid = 8;
constexpr size_t kPrefetchNear = 4;
constexpr size_t kPrefetchLast = 2;
[[gnu::always_inline]] inline void prefetch(const void* p) noexcept { __builtin_prefetch(p, 0, 3); }
[[gnu::always_inline]] inline void prefetch_lines(const void* p, int lines) noexcept {
  for (int i = 0; i < lines; ++i) prefetch(static_cast<const char*>(p) + 64 * i);
}
// The queue a tx-done's start_tx will serve: control first (only data is ever paused).
[[gnu::always_inline]] inline const Ring<QueuedFrame>& served(const Port& p) noexcept {
  return p.queue[1].empty() ? p.queue[0] : p.queue[1];
}
}  // namespace

// The stages, each for the event it runs ahead of. Nothing in them reads past the stage's own
// event; a prefetch of any address is harmless. An arrival's frame has its metadata (see
// Network::FrameMeta), so the stages read it unchecked.
[[gnu::always_inline]] inline void Network::prefetch_far(const EventQueue::Node& e) const noexcept {
  if (e.kind() == kArrive) {
    prefetch(&ports_[e.a]);
    prefetch(pool_.meta_hint(e.b));
  } else if (e.kind() == kTxDone) {
    prefetch_lines(&ports_[e.a], 3);
  }
}

[[gnu::always_inline]] inline void Network::prefetch_mid(const EventQueue::Node& e) const noexcept {
  if (e.kind() == kArrive) {
    const Port& p = ports_[e.a];
    const FrameMeta& m = meta(e.b);
    if (p.at_host || !m.parsed) {
      // The frame's slot and first bytes, from their address alone: no load to wait for here.
      prefetch(pool_.frame_hint(e.b));
      if (p.at_host) {
        prefetch_lines(reinterpret_cast<const char*>(&p) + 64, 2);  // host_pull's enqueue
        prefetch(&hosts_[p.owner]);
      }
    } else if (routing_.knows_host(m.dst_host)) {
      prefetch(routing_.route_entry(m.dst_host, p.owner));
    }
  } else if (e.kind() == kTxDone) {
    const Port& p = ports_[e.a];
    if (const auto& q = served(p); !q.empty()) prefetch(&q.front());
    if (p.at_host) {
      prefetch(&hosts_[p.owner]);
      // The frame the NIC will pull next (the pool's free list is a stack, so it is the
      // one alloc() returns unless frames come and go before then): the transport writes
      // its bytes, the NIC its metadata.
      const FrameId f = pool_.next_hint();
      if (f != kNoFrame) {
        __builtin_prefetch(pool_.frame_hint(f), 1, 3);
        __builtin_prefetch(pool_.meta_hint(f), 1, 3);
      }
    }
  }
}

[[gnu::always_inline]] inline void Network::prefetch_near(
    const EventQueue::Node& e) const noexcept {
  if (e.kind() == kArrive) {
    const Port& p = ports_[e.a];
    const FrameMeta& m = meta(e.b);
    if (p.at_host) {
      // The host's transport (rx, tx and next_deadline are called on it): its Host entry
      // is cached since kPrefetchMid.
      if (const Transport* t = hosts_[p.owner].transport) prefetch_lines(t, 2);
    } else if (m.parsed) {
      const uint32_t out = routing_.port_memo(p.owner, m.dst_host, m.flow_hash, e.b);
      if (out != kNone) prefetch_lines(&ports_[out], 3);
    }
  } else if (e.kind() == kTxDone) {
    const Port& p = ports_[e.a];
    if (p.at_host) {
      if (const Transport* t = hosts_[p.owner].transport) prefetch_lines(t, 2);
    }
    // The switch ingress the next frame was buffered under (PFC accounting in start_tx);
    // the queue's head is cached since kPrefetchMid.
    const auto& q = served(p);
    if (!q.empty() && q.front().ingress != kNone) prefetch(&ports_[q.front().ingress]);
  }
}

[[gnu::always_inline]] inline void Network::prefetch_last(
    const EventQueue::Node& e) const noexcept {
  if (e.kind() != kArrive) return;
  // prefetch_near memoised this hop's egress under the frame's id: read it back without
  // checking the key (a hint: an entry another frame overwrote since, or none for a host
  // arrival, only prefetches some other port's slot).
  const uint32_t out = routing_.memo_out(e.b);
  if (out == kNone || ports_[e.a].at_host) return;
  const bool control = (meta(e.b).prio & 1) != 0;  // a hint: class 2's (3) too
  if (const QueuedFrame* slot = ports_[out].queue[control ? 1 : 0].back_slot()) prefetch(slot);
}

// The per-event path (prefetch, dispatch, arrival, tx-done, forwarding, and enqueue and
// kick_port, which have two or three callers) is inlined into run_until: the calls and their
// register saves cost more than the small bodies. start_tx, with more callers, stays a call.
[[gnu::always_inline]] inline void Network::prefetch_ahead() const noexcept {
  size_t n = 0;
  const EventQueue::Node* w = events_q_.window(n);
  if (n > kPrefetchFar) [[likely]] {  // the bucket holds every stage's event: no more checks
    prefetch_far(w[kPrefetchFar]);
    prefetch_mid(w[kPrefetchMid]);
    prefetch_near(w[kPrefetchNear]);
    prefetch_last(w[kPrefetchLast]);
    return;
  }
  if (n > kPrefetchMid) prefetch_mid(w[kPrefetchMid]);
  if (n > kPrefetchNear) prefetch_near(w[kPrefetchNear]);
  if (n > kPrefetchLast) prefetch_last(w[kPrefetchLast]);
}

void Network::run_until(Time until) {
  if (tagging_) {
    run_events<true>(until);
  } else {
    run_events<false>(until);
  }
  if (now_ < until && until != kNever) now_ = until;
}

template <bool kClasses>
void Network::run_events(Time until) {
  EventQueue::Due e;
  while (events_q_.pop_until(until, e)) {
    prefetch_ahead();
    now_ = e.time;
    ++events_;
    dispatch<kClasses>(e, until);
  }
}

template <bool kClasses>
[[gnu::always_inline]] inline void Network::dispatch(const EventQueue::Due& e, Time until) {
  // Arrivals and tx-dones are nearly every event: two compares before the jump table.
  if (e.kind == kArrive) [[likely]] {
    on_arrive<kClasses>(e.a, e.b);
    return;
  }
  if (e.kind == kTxDone) [[likely]] {
    on_tx_done<kClasses>(e.a);
    return;
  }
  switch (e.kind) {
    case kTxDone:
    case kArrive:
      break;  // above
    case kHostTimer:
      on_host_timer(e.a, e.b);
      break;
    case kPfc:
      on_pfc<kClasses>(e.a, e.b);
      break;
    case kLinkState:
      count_once_per_fabric();
      on_link_state<kClasses>(e.a, e.b != 0);
      break;
    case kLinkRate:
      count_once_per_fabric();
      on_link_rate(e.a, e.b);
      break;
    case kRouteRefresh:
      count_once_per_fabric();
      (void)compute_routes();
      // The routes changed tagging_: the rest of the run goes on in the other loop (this one
      // then finds nothing due and returns too).
      if (tagging_ != kClasses) [[unlikely]] run_events<!kClasses>(until);
      break;
    case kCall:
      callbacks_[e.a]->fire(*this, now_, e.b);
      break;
    case kPfcWatch:
      on_pfc_watch(e.a, e.b);
      break;
  }
}

// dispatch's rarer kinds, inlined into it as the per-event path is into run_until.
[[gnu::always_inline]] inline void Network::on_host_timer(uint32_t host, uint32_t gen) {
  Host& h = hosts_[host];
  if (gen != h.timer_gen) return;  // superseded
  h.deadline = kNever;
  if (h.transport != nullptr) h.transport->on_timer(now_);
  host_pull(host);
  host_arm_timer(host);
}

// A PFC frame reaches the upstream egress `port`: `b` is its priority | pause << 8.
template <bool kClasses>
[[gnu::always_inline]] inline void Network::on_pfc(uint32_t port, uint32_t b) {
  Port& p = ports_[port];
  const int prio = static_cast<int>(b & 0xFF);
  const bool pause = (b >> 8) != 0;
  if (prio >= kPortPriorities) [[unlikely]] return on_pfc_class(port, prio, pause);
  if (pause && !p.paused[prio]) {
    p.paused[prio] = true;
    if (prio == 0) {
      if (paused_since_.empty()) paused_since_.resize(ports_.size());
      paused_since_[port] = now_;
      if (config_.switches.pfc.watchdog.enabled) pfc_watch_paused(port, 0);
    }
  } else if (!pause && p.paused[prio]) {
    p.paused[prio] = false;
    if (prio == 0) rare_stats(port).paused_time += now_ - paused_since_[port];
    kick_port<kClasses>(port);
    if (p.at_host) {
      host_pull(p.owner);
      host_arm_timer(p.owner);
    }
  }
}

template <bool kClasses>
[[gnu::always_inline]] inline void Network::on_link_state(uint32_t port, bool up) {
  link_up_[port / 2] = up;
  for (uint32_t p : {port, peer_of(port)}) {
    if (!owns_port(p)) continue;  // another rank's: not stored here
    ports_[p].up = up;
    update_plain(ports_[p]);
  }
  // Switches learn of the change after the detection delay.
  events_q_.push(now_ + config_.switches.failure_detection, kRouteRefresh, 0, 0,
                 event_key(port, 0));
  if (up) {
    for (uint32_t p : {port, peer_of(port)}) {
      if (owns_port(p)) kick_port<kClasses>(p);
    }
  }
}

// Serves the control class first, then data; a paused class waits. The frame's fate on the
// link (down, lost, corrupted, held back, duplicated) is decided as it starts; it arrives after
// serialization and propagation (plus the hold-back). Each impairment draws from the link's
// generator only when its probability is non-zero, so adding one leaves other runs unchanged.
template <bool kClasses>
[[gnu::always_inline]] inline void Network::start_tx_inline(uint32_t port) {
  Port& p = ports_[port];
  if (p.done_scheduled || now_ < p.busy_until) return;
  int prio = 1;
  if (p.queue[1].empty() || p.paused[1]) {
    // The further lossless classes, where they hold frames, before class 0 (lossless_classes.h).
    if constexpr (kClasses) {
      if (p.classes != 0) return start_tx_class(port);
    }
    if (p.queue[0].empty() || p.paused[0]) return;
    prio = 0;
  }
  account_queue(p);
  const QueuedFrame q = p.queue[prio].pop(ring_pool_);
  p.queued_bytes[prio] -= q.bytes;
  // PFC: the frame leaves this switch's buffer; the ingress it came through may resume.
  if (q.ingress != kNone) {
    if constexpr (kClasses) {
      release_ingress(q.ingress, q.bytes);
    } else {
      Port& ip = ports_[q.ingress];
      ip.ingress_bytes[prio] -= q.bytes;
      const SwitchConfig& sc = config_.switches;  // every switch's (Switch::config)
      if (sc.pfc.enabled && prio == 0 && (ip.pause_sent & 1) != 0 &&
          ip.ingress_bytes[0] <= sc.pfc.xon_bytes) {
        send_pfc(q.ingress, 0, false);
      }
    }
  }
  const Time done = send_frame(p, port, q.frame, q.bytes);
  bool more = false;
  for (int pr = 0; pr < kPortPriorities; ++pr) more |= !p.queue[pr].empty() && !p.paused[pr];
  if (more || p.at_host || (kClasses && p.classes != 0)) {
    events_q_.push(done, kTxDone, port, 0, event_key(port, 0));
    p.done_scheduled = true;
  }
}

// Out of line for enqueue's and the control events' kick_port; a tx-done (most calls) runs
// the body inlined into run_until, without the call and its register saves.
template <bool kClasses>
void Network::start_tx(uint32_t port) {
  start_tx_inline<kClasses>(port);
}
template void Network::start_tx<false>(uint32_t port);
template void Network::start_tx<true>(uint32_t port);

template <bool kClasses>
[[gnu::always_inline]] inline void Network::on_tx_done(uint32_t port) {
  Port& p = ports_[port];
  p.done_scheduled = false;
  start_tx_inline<kClasses>(port);
  if (p.at_host) {
    host_pull(p.owner);
    host_arm_timer(p.owner);  // tx() may have moved the deadline (pacing, RTO)
  }
}

template <bool kClasses>
[[gnu::always_inline]] inline void Network::on_arrive(uint32_t port, FrameId f) {
  const Port& p = ports_[port];
  if (!p.up) {  // the link died while the frame was in flight
    // Counted where it died (the sender's port may run in another process).
    ++ports_[port].stats.drops;
    drop(f);
    return;
  }
  if (p.at_host) {
    if (meta(f).damaged) {
      ++rare_stats(port).damaged_arrivals;
      if (meta(f).corrupted) ++rare_stats(port).corrupted_arrivals;
    }
    host_deliver(p.owner, f);
  } else {
    switch_forward<kClasses>(port, f);
  }
}

// Reads what switches forward on from the frame's headers into `m` and marks it parsed;
// false (and `m` untouched) if a switch cannot forward the frame: not IP, or an IPv4 header
// length below 20 bytes (damaged): a router cannot forward it (RFC 1812 §5.2.2), and marking
// or trimming it would checksum a negative length.
bool Network::parse_meta(const Frame& fr, FrameMeta& m) noexcept {
  FrameInfo info;
  if (!parse_frame(fr, &info) || (!info.ipv6 && info.l4 < info.l3 + wire::Ipv4::kSize)) return false;
  const uint32_t dst = host_of_ip4(info.dst_ip4);
  m.dst_host = (dst < kNoHost24 ? dst : kNoHost24) & kNoHost24;
  m.flow_hash = info.flow_hash;
  m.prio = classify_dscp(info.dscp) == Priority::kControl ? 1 : 0;
  m.parsed = true;
  return true;
}

// parse_meta at a switch (a bit flipped on the way, or the sender could not read it): a
// lossless class a switch moved the frame to is kept. Rare: kept out of the per-event path.
[[gnu::noinline, gnu::cold]] bool Network::reparse_meta(const Frame& fr, FrameMeta& m) noexcept {
  const uint8_t moved = m.prio == 1 ? 0 : m.prio;
  if (!parse_meta(fr, m)) return false;
  if (m.prio == 0) m.prio = moved & 3;
  return true;
}

// SwitchConfig::trim_last_half: with probability 1/2, trim the data class's last frame into
// the control class (or drop it when that is full) so that an arrival of `bytes` fits.
// False: the arrival is to be trimmed instead.
[[gnu::noinline]] bool Network::trim_last(Port& p, uint32_t port, uint64_t bytes, uint64_t limit,
                                          uint64_t control_limit) {
  if (p.queue[0].empty() || !p.rng.chance(0.5)) return false;
  const QueuedFrame last = p.queue[0].at(p.queue[0].size() - 1);
  if (p.queued_bytes[0] - last.bytes + bytes > limit || !trim(last.frame)) return false;
  account_queue(p);
  p.queue[0].pop_back();
  p.queued_bytes[0] -= last.bytes;
  FrameMeta& lm = meta(last.frame);
  lm.bytes = pool_.bytes_on_wire(last.frame);
  lm.prio = 1;  // kDscpTrimmed: the control class
  ++p.stats.trims;
  if (lm.corrupted) {  // the rewritten checksums now cover the damage
    ++rare_stats(port).corrupted_rewrites;
    lm.corrupted = false;
  }
  if (last.ingress != kNone) ports_[last.ingress].ingress_bytes[0] -= last.bytes;
  if (p.queued_bytes[1] + lm.bytes > control_limit) {
    ++p.stats.drops;
    drop(last.frame);
    return true;
  }
  if (last.ingress != kNone) ports_[last.ingress].ingress_bytes[1] += lm.bytes;
  p.queue[1].push(QueuedFrame{last.frame, lm.bytes, last.ingress}, ring_pool_);
  p.queued_bytes[1] += lm.bytes;
  return true;
}

bool Network::trim(FrameId f) noexcept {
  Frame fr = pool_.view(f);
  if (!trim_uet(fr, kDscpTrimmed)) return false;
  pool_.store(fr);
  return true;
}

template <bool kClasses>
[[gnu::always_inline]] inline void Network::switch_forward(uint32_t in_port, FrameId f) {
  const uint32_t sw = ports_[in_port].owner;
  FrameMeta& m = meta(f);  // a frame in flight has its metadata
  // Parsed by the sending host, unless it could not be or a bit flipped on the way since.
  if (!m.parsed && !reparse_meta(pool_.view(f), m)) {
    ++ports_[in_port].stats.drops;
    drop(f);
    return;
  }
  // Minimal routing's choice, memoised; or by the frame's routing state.
  const uint32_t out = routing_.port_memo(sw, m.dst_host, m.flow_hash, f,
                                          [&](Routing::Memo& e) { return route_miss(e, sw, m); });
  if (out == kNone) {
    ++ports_[in_port].stats.drops;
    drop(f);
    return;
  }
  if constexpr (kClasses) {
    forward_tagged(in_port, out, f);
  } else {
    enqueue(out, f, static_cast<Priority>(m.prio), in_port);
  }
}

// Admission, ECN marking and trimming at a switch output port (or a host NIC, where nothing
// is ever dropped: the host only pulls what fits).
[[gnu::always_inline]] inline bool Network::enqueue(uint32_t port, FrameId f, Priority prio, uint32_t ingress) {
  Port& p = ports_[port];
  FrameMeta& m = meta(f);  // host_pull gave a new frame its metadata
  uint32_t buffered_under = kNone;
  int pr = static_cast<int>(prio);
  if (!p.at_host) {
    const SwitchConfig& sc = config_.switches;  // every switch's (Switch::config)
    const bool lossless = sc.pfc.enabled && pr == 0;
    uint64_t limit = pr == 0 ? sc.buffer_bytes : sc.control_buffer_bytes;
    uint64_t control_limit = sc.control_buffer_bytes;
    if (p.scaled) [[unlikely]] {
      const ScaledLimits& l = scaled_[port];
      limit = pr == 0 ? l.buffer_bytes : l.control_buffer_bytes;
      control_limit = l.control_buffer_bytes;
    }
    if (lossless) {
      if (pfc_stormed_ != 0 && pfc_storm_drop(port, 0, f)) [[unlikely]] return false;
      // Lossless admission is per ingress, as a switch's PFC priority groups do: up to XOFF,
      // then the headroom that absorbs what is in flight while the pause travels upstream.
      if (ports_[ingress].ingress_bytes[0] + m.bytes >
          sc.pfc.xoff_bytes + sc.pfc.headroom_bytes) {
        ++rare_stats(port).lossless_drops;
        drop(f);
        return false;
      }
    } else if (p.queued_bytes[pr] + m.bytes > limit) {
      if (pr == 0 && sc.trim_last_half && sc.trimming && trim_last(p, port, m.bytes, limit, control_limit)) {
        // The last queued request was trimmed in its place: the arrival joins the data class.
      } else if (pr == 0 && sc.trimming && trim(f)) {
        m.bytes = pool_.bytes_on_wire(f);
        ++p.stats.trims;
        if (m.corrupted) {  // the rewritten checksums now cover the damage
          ++rare_stats(port).corrupted_rewrites;
          m.corrupted = false;
        }
        m.prio = 1;  // kDscpTrimmed: the control class
        pr = static_cast<int>(Priority::kControl);
        if (p.queued_bytes[pr] + m.bytes > control_limit) {
          ++p.stats.drops;
          drop(f);
          return false;
        }
      } else {
        ++p.stats.drops;
        drop(f);
        return false;
      }
    }
    if (pr == 0 && sc.ecn.enabled) mark_ecn(p, port, f, m, p.queued_bytes[0]);
    // PFC: count the frame against its ingress in the class and size it was queued with
    // (trimming may have changed both); start_tx gives it back.
    buffered_under = ingress;
    Port& ip = ports_[ingress];
    ip.ingress_bytes[pr] += m.bytes;
    if (lossless && (ip.pause_sent & 1) == 0 && ip.ingress_bytes[0] > sc.pfc.xoff_bytes) {
      send_pfc(ingress, 0, true);
    }
  }
  account_queue(p);
  p.queue[pr].push(QueuedFrame{f, m.bytes, buffered_under}, ring_pool_);
  p.queued_bytes[pr] += m.bytes;
  p.stats.max_queue_bytes = std::max(p.stats.max_queue_bytes, p.queued_bytes[0] + p.queued_bytes[1]);
  kick_port<false>(port);  // a host NIC's or a switch's that keeps classes: none beyond 0
  return true;
}

double ecn_mark_probability(const EcnConfig& ecn, uint64_t queue_bytes) noexcept {
  return red_probability(ecn, queue_bytes);
}

void Network::send_pfc(uint32_t ingress_port, int prio, bool pause) {
  Port& ip = ports_[ingress_port];
  const auto bit = static_cast<uint8_t>(1u << prio);
  ip.pause_sent = static_cast<uint8_t>(pause ? ip.pause_sent | bit : ip.pause_sent & ~bit);
  uint64_t& sent = rare_stats(ingress_port).pauses_sent;
  if (pause) ++sent;
  // The pause frame travels the link back to the upstream egress.
  const uint32_t b = static_cast<uint32_t>(prio) | (pause ? 0x100u : 0u);
  const uint64_t key =
      event_key(ingress_port, sent << 2 | (pause ? 0u : 2u) | static_cast<uint32_t>(prio));
  if (ip.remote) [[unlikely]] {
    send_remote(ip.peer, now_ + ip.delay, key, kPfc, b, kNoFrame);
    return;
  }
  events_q_.push(now_ + ip.delay, kPfc, ip.peer, b, key);
}

void Network::host_deliver(uint32_t host, FrameId f) {
  Host& h = hosts_[host];
  if (h.transport != nullptr) {
    pool_.view_into(f, frame_);
    h.transport->rx(frame_span_, now_);
  }
  pool_.release(f);
  host_pull(host);
  host_arm_timer(host);
}

// The NIC asks its transport for a frame whenever it has nothing it may send.
void Network::host_pull(uint32_t host) {
  Host& h = hosts_[host];
  if (h.transport == nullptr || h.port == kNone) return;
  Port& p = ports_[h.port];
  constexpr size_t kNicQueueFrames = 64;
  for (;;) {
    bool sendable = false;
    size_t queued = 0;
    for (int pr = 0; pr < kPortPriorities; ++pr) {
      queued += p.queue[pr].size();
      if (!p.queue[pr].empty() && !p.paused[pr]) sendable = true;
    }
    if (sendable || queued >= kNicQueueFrames) return;
    const FrameId f = pool_.alloc_into(frame_);
    Frame* const fr = &frame_;
    if (h.transport->tx(frame_span_, now_) == 0) {
      fr->priority = Priority::kData;  // it may have been written to
      pool_.release(f);
      return;
    }
    pool_.store(*fr);
    FrameMeta& m = meta(f);
    // A new frame: its headers are read now, while its bytes are in cache (they do not change
    // before the first switch, which reads them again only if a bit flips on the way or they
    // cannot be forwarded).
    m.parsed = false;
    m.damaged = m.corrupted = false;
    m.route_state = 0;
    m.prio = 0;
    m.bytes = fr->bytes_on_wire();
    (void)parse_meta(*fr, m);
    const Priority prio = fr->priority;
    fr->priority = Priority::kData;  // what the next tx starts from and an rx reports
    enqueue(h.port, f, prio, kNone);
  }
}

void Network::host_arm_timer(uint32_t host) {
  Host& h = hosts_[host];
  if (h.transport == nullptr) return;
  const Time d = h.transport->next_deadline();
  if (d == h.deadline) return;
  if (d == kNever) {  // nothing to wait for: make any scheduled timer stale
    h.deadline = kNever;
    ++h.timer_gen;
    return;
  }
  h.deadline = d;
  ++h.timer_gen;
  events_q_.push(std::max(d, now_), kHostTimer, host, h.timer_gen,
                 event_key(host, h.timer_gen));
}

}  // namespace uet::sim
