// The PFC watchdog (sim/pfc_watchdog.h): a check per pause of a switch egress's lossless
// queue (each lossless class watched apart), at pause + detection_time; when the pause has
// held that long, the cycle search in the wait-for graph and the action (drop or report);
// restoration. Control path: nothing here runs per frame but pfc_storm_drop, and only while a
// queue is stormed.
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/network.h"

namespace uet::sim {

namespace {
// In a kPfcWatch event's `b`: a restoration check; the queue's priority; otherwise the pause
// episode it checks.
constexpr uint32_t kRestoreBit = 1u << 31;
constexpr int kPrioShift = 29;
constexpr uint32_t kEpisodeMask = (1u << kPrioShift) - 1;
constexpr Time kMaxWatchdogTime = 60 * kSecond;
}  // namespace

absl::Status check_pfc_watchdog(const PfcWatchdogConfig& w) {
  for (const auto& [name, t] : {std::pair{"detection_time", w.detection_time},
                                std::pair{"restoration_time", w.restoration_time}}) {
    if (t < kNanosecond || t > kMaxWatchdogTime) {
      return absl::InvalidArgumentError(
          absl::StrCat("PFC watchdog ", name, " ", t, " ps: must be in [1 ns, 60 s]"));
    }
  }
  return absl::OkStatus();
}

PfcWatchdogStats Network::pfc_watchdog(uint32_t port) const noexcept {
  PfcWatchdogStats s;
  if (size_t{port} * kNumPriorities >= pfc_watch_.size()) return s;
  for (int prio = 0; prio < kNumPriorities; ++prio) {
    const PfcWatchState& w = pfc_watch(port, prio);
    s.firings += w.firings;
    s.drops += w.drops;
    s.stormed |= w.stormed;
  }
  return s;
}

// Every check of a queue has its own key (the port; its class and count of checks), so checks
// run in the same order on every process of a split fabric; they never leave the port's
// process. Class 0's keys are the port's count alone.
void Network::pfc_schedule_check(uint32_t port, int prio, Time at, uint32_t b) {
  PfcWatchState& w = pfc_watch(port, prio);
  const uint64_t counter = uint64_t{w.checks++} + (uint64_t(lossless_class(prio)) << 21);
  events_q_.push(at, kPfcWatch, port, b | static_cast<uint32_t>(prio) << kPrioShift,
                 event_key(port, counter));
}

// A switch egress's lossless queue was just paused: check it once the pause has held for
// detection_time. A stormed queue is left to its restoration check.
void Network::pfc_watch_paused(uint32_t port, int prio) {
  if (ports_[port].at_host) return;
  if (pfc_watch_.empty()) pfc_watch_.resize(ports_.size() * kNumPriorities);
  PfcWatchState& w = pfc_watch(port, prio);
  ++w.pauses;
  if (w.stormed) return;
  pfc_schedule_check(port, prio, now_ + config_.switches.pfc.watchdog.detection_time,
                     w.pauses & kEpisodeMask);
}

void Network::on_pfc_watch(uint32_t port, uint32_t b) {
  // Counted apart from the fabric's events (events_processed).
  --events_;
  ++pfc_watch_events_;
  const auto prio = static_cast<int>((b >> kPrioShift) & 3);
  if ((b & kRestoreBit) != 0) return pfc_restore(port, prio);
  PfcWatchState& w = pfc_watch(port, prio);
  // The episode it was scheduled for, still paused: no XON came since (an XON and a new
  // pause would have begun another episode).
  if ((w.pauses & kEpisodeMask) != (b & kEpisodeMask) || !paused_at(port, prio) || w.stormed) {
    return;
  }
  ++w.firings;
  std::vector<uint32_t> cycle = pfc_wait_cycle(port * kNumPriorities + static_cast<uint32_t>(prio));
  // Every queue of a deadlock fires: one record per deadlock, unless a queue of it resumed
  // and paused again since it was recorded.
  auto state = [&](uint32_t q) -> PfcWatchState& { return pfc_watch_[q]; };
  const bool known = std::all_of(cycle.begin(), cycle.end(),
                                 [&](uint32_t q) { return state(q).reported == state(q).pauses; });
  if (!cycle.empty() && !known) {
    PfcDeadlock d{now_, port, static_cast<uint8_t>(prio), {}, {}};
    for (uint32_t q : cycle) {
      state(q).reported = state(q).pauses;
      d.cycle.push_back(q / kNumPriorities);
      d.priorities.push_back(static_cast<uint8_t>(q % kNumPriorities));
    }
    pfc_deadlocks_.push_back(std::move(d));
  }
  if (config_.switches.pfc.watchdog.action == PfcWatchdogAction::kDrop) pfc_storm(port, prio);
}

// Drop: every frame of the queue is discarded and its bytes leave its ingress's count, as
// start_tx gives them back (the ingress may resume its upstream); arrivals are discarded
// until restoration (pfc_storm_drop).
void Network::pfc_storm(uint32_t port, int prio) {
  PfcWatchState& w = pfc_watch(port, prio);
  w.stormed = true;
  ++pfc_stormed_;
  Port& p = ports_[port];
  if (prio < kPortPriorities) {
    account_queue(p);
  } else {
    account_classes(port);
  }
  const PfcConfig& pfc = config_.switches.pfc;
  Ring<QueuedFrame>& queue = queue_of(port, prio);
  while (!queue.empty()) {
    const QueuedFrame q = queue.pop(ring_pool_);
    if (prio == 0) {
      p.queued_bytes[0] -= q.bytes;
    } else {
      classes_[port][prio - 2].queued_bytes -= q.bytes;
    }
    if (tagging_) {
      release_ingress(q.ingress, q.bytes);
    } else {
      Port& ip = ports_[q.ingress];
      ip.ingress_bytes[0] -= q.bytes;
      if ((ip.pause_sent & 1) != 0 && ip.ingress_bytes[0] <= pfc.xon_bytes) {
        send_pfc(q.ingress, 0, false);
      }
    }
    drop(q.frame);
    ++w.drops;
  }
  if (prio >= kPortPriorities) p.classes &= static_cast<uint8_t>(~(1u << (prio - 2)));
  pfc_schedule_check(port, prio, now_ + pfc.watchdog.restoration_time, kRestoreBit);
}

// SONiC restores a queue once no pause frame came for the restoration time; here a pause is
// a state, so the queue is restored once its peer no longer asserts XOFF, checked every
// restoration_time.
void Network::pfc_restore(uint32_t port, int prio) {
  PfcWatchState& w = pfc_watch(port, prio);
  if (!w.stormed) return;
  if (paused_at(port, prio)) {
    pfc_schedule_check(port, prio, now_ + config_.switches.pfc.watchdog.restoration_time,
                       kRestoreBit);
    return;
  }
  w.stormed = false;
  --pfc_stormed_;
}

bool Network::pfc_storm_drop(uint32_t port, int prio, FrameId f) {
  if (size_t{port} * kNumPriorities >= pfc_watch_.size() || !pfc_watch(port, prio).stormed) {
    return false;
  }
  ++pfc_watch(port, prio).drops;
  drop(f);
  return true;
}

// The queues `queue` (port * kNumPriorities + priority) waits on: the paused (not stormed)
// lossless queues of its peer switch holding frames buffered under the ingress that paused
// it, in that priority. Only this process's ports (another's state is not kept here).
void Network::pfc_waits_on(uint32_t queue, std::vector<uint32_t>& out) const {
  out.clear();
  const uint32_t egress = queue / kNumPriorities;
  const auto prio = static_cast<uint32_t>(queue % kNumPriorities);
  const uint32_t in = peer_of(egress);
  if (!owns_port(in)) return;
  const Port& ip = ports_[in];
  if (ip.at_host) return;
  // Where frames change class, the ingress's priority is packed beside it (QueuedFrame).
  const uint32_t want = tagging_ ? in | prio << 24 : in;
  const int last = classes_.empty() ? 0 : kNumPriorities - 1;
  for (uint32_t e : node_ports(ip.node)) {
    for (int c = 0; c <= last; c += c == 0 ? 2 : 1) {  // the lossless priorities: 0, 2, 3
      if (!paused_at(e, c) || pfc_watch(e, c).stormed) continue;
      const Ring<QueuedFrame>& q = queue_of(e, c);
      for (size_t i = 0; i < q.size(); ++i) {
        if (q.at(i).ingress == want) {
          out.push_back(e * kNumPriorities + static_cast<uint32_t>(c));
          break;
        }
      }
    }
  }
}

// A cycle of the wait-for graph reachable from `from` (a depth-first search), in wait-for
// order from its smallest port; empty if none.
std::vector<uint32_t> Network::pfc_wait_cycle(uint32_t from) const {
  enum : uint8_t { kOpen = 1, kDone = 2 };
  absl::flat_hash_map<uint32_t, uint8_t> state;
  struct Step {
    uint32_t port;
    std::vector<uint32_t> next;
    size_t i = 0;
  };
  std::vector<Step> path;
  auto enter = [&](uint32_t p) {
    state[p] = kOpen;
    path.push_back(Step{p, {}, 0});
    pfc_waits_on(p, path.back().next);
  };
  enter(from);
  while (!path.empty()) {
    Step& s = path.back();
    if (s.i == s.next.size()) {
      state[s.port] = kDone;
      path.pop_back();
      continue;
    }
    const uint32_t n = s.next[s.i++];
    const auto it = state.find(n);
    if (it == state.end()) {
      enter(n);
    } else if (it->second == kOpen) {  // back to a port on the path: the cycle is its rest
      auto at = std::find_if(path.begin(), path.end(), [&](const Step& x) { return x.port == n; });
      std::vector<uint32_t> cycle;
      for (; at != path.end(); ++at) cycle.push_back(at->port);
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      return cycle;
    }
  }
  return {};
}

}  // namespace uet::sim
