// The PFC watchdog (sim/pfc_watchdog.h): a check per pause of a switch egress's lossless
// class, at pause + detection_time; when the pause has held that long, the cycle search in
// the wait-for graph and the action (drop or report); restoration. Control path: nothing here
// runs per frame but pfc_storm_drop, and only while a queue is stormed.
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/network.h"

namespace uet::sim {

namespace {
// In a kPfcWatch event's `b`: a restoration check; otherwise the pause episode it checks.
constexpr uint32_t kRestoreBit = 1u << 31;
constexpr uint32_t kEpisodeMask = kRestoreBit - 1;
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
  if (port >= pfc_watch_.size()) return {};
  const PfcWatchState& w = pfc_watch_[port];
  return PfcWatchdogStats{w.firings, w.drops, w.stormed};
}

// Every check of a port has its own key (the port, its count of checks), so checks run in
// the same order on every process of a split fabric; they never leave the port's process.
void Network::pfc_schedule_check(uint32_t port, Time at, uint32_t b) {
  PfcWatchState& w = pfc_watch_[port];
  events_q_.push(at, kPfcWatch, port, b, event_key(port, w.checks++));
}

// A switch egress's data class was just paused: check it once the pause has held for
// detection_time. A stormed queue is left to its restoration check.
void Network::pfc_watch_paused(uint32_t port) {
  if (ports_[port].at_host) return;
  if (pfc_watch_.empty()) pfc_watch_.resize(ports_.size());
  PfcWatchState& w = pfc_watch_[port];
  ++w.pauses;
  if (w.stormed) return;
  pfc_schedule_check(port, now_ + config_.switches.pfc.watchdog.detection_time,
                     w.pauses & kEpisodeMask);
}

void Network::on_pfc_watch(uint32_t port, uint32_t b) {
  // Counted apart from the fabric's events (events_processed).
  --events_;
  ++pfc_watch_events_;
  if ((b & kRestoreBit) != 0) return pfc_restore(port);
  PfcWatchState& w = pfc_watch_[port];
  // The episode it was scheduled for, still paused: no XON came since (an XON and a new
  // pause would have begun another episode).
  if ((w.pauses & kEpisodeMask) != b || !ports_[port].paused[0] || w.stormed) return;
  ++w.firings;
  std::vector<uint32_t> cycle = pfc_wait_cycle(port);
  // Every queue of a deadlock fires: one record per deadlock, unless a queue of it resumed
  // and paused again since it was recorded.
  const bool known = std::all_of(cycle.begin(), cycle.end(), [&](uint32_t p) {
    return pfc_watch_[p].reported == pfc_watch_[p].pauses;
  });
  if (!cycle.empty() && !known) {
    for (uint32_t p : cycle) pfc_watch_[p].reported = pfc_watch_[p].pauses;
    pfc_deadlocks_.push_back(PfcDeadlock{now_, port, std::move(cycle)});
  }
  if (config_.switches.pfc.watchdog.action == PfcWatchdogAction::kDrop) pfc_storm(port);
}

// Drop: every frame of the queue is discarded and its bytes leave its ingress's count, as
// start_tx gives them back (the ingress may resume its upstream); arrivals are discarded
// until restoration (pfc_storm_drop).
void Network::pfc_storm(uint32_t port) {
  PfcWatchState& w = pfc_watch_[port];
  w.stormed = true;
  ++pfc_stormed_;
  Port& p = ports_[port];
  account_queue(p);
  const PfcConfig& pfc = config_.switches.pfc;
  while (!p.queue[0].empty()) {
    const QueuedFrame q = p.queue[0].pop(ring_pool_);
    p.queued_bytes[0] -= q.bytes;
    Port& ip = ports_[q.ingress];
    ip.ingress_bytes[0] -= q.bytes;
    if (ip.pause_sent[0] && ip.ingress_bytes[0] <= pfc.xon_bytes) send_pfc(q.ingress, 0, false);
    drop(q.frame);
    ++w.drops;
  }
  pfc_schedule_check(port, now_ + pfc.watchdog.restoration_time, kRestoreBit);
}

// SONiC restores a queue once no pause frame came for the restoration time; here a pause is
// a state, so the queue is restored once its peer no longer asserts XOFF, checked every
// restoration_time.
void Network::pfc_restore(uint32_t port) {
  PfcWatchState& w = pfc_watch_[port];
  if (!w.stormed) return;
  if (ports_[port].paused[0]) {
    pfc_schedule_check(port, now_ + config_.switches.pfc.watchdog.restoration_time, kRestoreBit);
    return;
  }
  w.stormed = false;
  --pfc_stormed_;
}

bool Network::pfc_storm_drop(uint32_t port, FrameId f) {
  if (port >= pfc_watch_.size() || !pfc_watch_[port].stormed) return false;
  ++pfc_watch_[port].drops;
  drop(f);
  return true;
}

// The egress ports `egress` waits on: the paused (not stormed) egress queues of its peer
// switch holding frames buffered under the ingress that paused it. Only this process's
// ports (another's state is not kept here).
void Network::pfc_waits_on(uint32_t egress, std::vector<uint32_t>& out) const {
  out.clear();
  const uint32_t in = peer_of(egress);
  if (!owns_port(in)) return;
  const Port& ip = ports_[in];
  if (ip.at_host) return;
  for (uint32_t e : node_ports(ip.node)) {
    const Port& ep = ports_[e];
    if (!ep.paused[0] || pfc_watch_[e].stormed) continue;
    const Ring<QueuedFrame>& q = ep.queue[0];
    for (size_t i = 0; i < q.size(); ++i) {
      if (q.at(i).ingress == in) {
        out.push_back(e);
        break;
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
