// The PFC watchdog of a switch, as lossless fabrics deploy it (SONiC pfcwd; Juniper, Arista,
// Cisco and NVIDIA switches have the same three parts): detection, mitigation, restoration.
//
// Detection: an egress queue of a lossless class (each class its own queue, watched apart)
// that stays paused (XOFF from its peer,
// no XON since) for detection_time is declared stormed. SONiC detects even an empty queue so
// (sonic-mgmt docs/pfcwd: "even when the queue is empty, as soon as the duration for a queue
// in paused state exceeds T0"); so does this model. A real switch polls (SONiC every 200 ms);
// the simulator checks each pause once, an event at pause + detection_time, so the check
// costs nothing per frame and fires at exactly detection_time.
// Mitigation (SONiC's default action, drop): the queue's frames are discarded and every
// later frame for it is discarded on arrival, so the switch stops buffering for it and its
// ingresses stop pausing their upstreams: the back-pressure stops at this queue. Report (SONiC's
// "alert"): counted and recorded, the queue stays paused.
// Restoration: once no pause has held the queue for restoration_time (SONiC: no PFC frame
// received over T1), it is served again; while its peer still asserts XOFF the storm goes on.
// Defaults are SONiC's (sonic-utilities pfcwd/main.py: DEFAULT_DETECTION_TIME 200,
// DEFAULT_RESTORATION_TIME 200 ms, DEFAULT_ACTION 'drop'); Juniper's are alike (100 ms poll,
// detection after 2 polls, 200 ms recovery). The watchdog watches switch egress queues only:
// hosts never send pauses here, so a host NIC is never part of a cycle.
//
// Deadlock or storm: when it fires, the watchdog also walks the wait-for graph from the queue:
// an egress queue waits on the egress queues of its peer switch that are themselves paused and
// hold frames buffered under the peer's ingress that paused it (that ingress cannot drop below
// XON while they wait). A cycle there is a PFC deadlock (cyclic buffer dependency, Hu et al.,
// "Deadlocks in Datacenter Networks: Why Do They Form, and How to Avoid Them", HotNets 2016):
// no queue on it can ever move again. A firing with no cycle is a storm: a long pause (an
// incast, a slow receiver) that resolves by itself.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "transport/time.h"

namespace uet::sim {

enum class PfcWatchdogAction : uint8_t {
  kDrop,    // discard the stormed queue's frames until restoration (SONiC's default)
  kReport,  // count and record only (SONiC's "alert"): a deadlock stays a deadlock
};

struct PfcWatchdogConfig {
  // Off in the simulator by default: its checks are events, so a run that never pauses long
  // would still end later under run_until(kNever); uet-ab turns it on as SONiC ships it.
  bool enabled = false;
  Time detection_time = 200 * kMillisecond;
  Time restoration_time = 200 * kMillisecond;
  PfcWatchdogAction action = PfcWatchdogAction::kDrop;
};

// Detection and restoration times in [1 ns, 60 s] (SONiC takes 100 ms to 5 s and 100 ms to
// 60 s; the simulator's runs are shorter, so shorter times are allowed).
absl::Status check_pfc_watchdog(const PfcWatchdogConfig& watchdog);

// One PFC deadlock the watchdog found: when, the queue whose detection found it, and the
// cycle's egress queues in wait-for order (each waits on the next; the last on the first),
// starting at the smallest (port, priority). A fabric split over processes walks only the ports
// its own process runs: a cycle through another process's switches is found by none of them
// (its firings count as storms), while what the watchdog does to the queues is the same.
struct PfcDeadlock {
  Time at = 0;
  uint32_t port = 0;
  uint8_t priority = 0;
  std::vector<uint32_t> cycle;        // the queues' ports
  std::vector<uint8_t> priorities;    // and their priorities, entry by entry
};

// An egress port's watchdog counters, summed over its lossless classes.
struct PfcWatchdogStats {
  uint64_t firings = 0;  // pauses that lasted detection_time (storms, deadlocks or not)
  uint64_t drops = 0;    // lossless frames the drop action discarded
  bool stormed = false;  // dropping now (action drop, before restoration)
};

// By port and priority, beside Port (whose layout is full): the watchdog's state, sized at
// the first pause of a run with the watchdog on.
struct PfcWatchState {
  uint32_t pauses = 0;    // pause episodes of the queue; the current one's number
  uint32_t reported = 0;  // the episode in which it was last part of a reported cycle
  uint32_t checks = 0;    // watchdog events scheduled for it: their keys' counter
  bool stormed = false;
  uint64_t firings = 0;
  uint64_t drops = 0;
};

}  // namespace uet::sim
