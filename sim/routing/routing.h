// Routing: the one question a switch asks, "which output port for this frame at this switch".
//
// Minimal routing is shortest-path ECMP from tables (ecmp_table.h), kept per destination ToR
// (or group-minimal, RoutingConfig::group_minimal: fewest links between switch groups first):
// a host has one NIC port to one switch (its ToR), so at any other switch its routes are its
// ToR's, and at its ToR the route is that one port. Beside it, two non-minimal modes send a
// frame through an intermediate group first (a dragonfly group, or one switch by default):
// Valiant always (Valiant & Brebner, "Universal schemes for parallel communication", 1981),
// UGAL-L when the first switch's queues say the minimal path is the more loaded (Kim, Dally,
// Scott, Abts, "Technology-driven, highly-scalable dragonfly topology", ISCA 2008, §4.2;
// Singh's thesis, "Load-balanced routing in interconnection networks", 2005). The intermediate
// is drawn from the frame's flow hash, so a UET sender's per-packet entropy values spread its
// packets over intermediates as they spread them over a Clos's paths, and a RoCEv2 QP (one
// source port) keeps one path. Dimension order on a torus restricts every group to the ports
// of the first dimension that still differs (RoutingConfig::dimension_order).
//
// A frame carries three bits of routing state (RouteState), set at its first switch and read
// at the others: a detour was chosen, the intermediate group was reached. The intermediate is
// recomputed from the flow hash at each switch, never stored.
//
// Families: a routing family answers port(switch, destination host, flow hash) for minimal
// paths; the tables answer it for any graph. Fat-trees and leaf-spines, recognised in build()
// from the graph itself, answer it by address arithmetic instead (clos.h: the same ports, no
// table per switch and destination ToR), in the minimal mode without dimension order or
// group-minimal switch groups; the choice is a flag read once per frame. The non-minimal
// modes keep the tables (they need hop counts and the group table towards intermediates
// beside them).
//
// Ownership: a Network owns its Routing by value and rebuilds it (build()) at finalize() and
// when switches learn of a link change; per frame it is only read, but for the memo of recent
// choices (prefetching computes a hop's choice early and forwarding reuses it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "sim/fast_mod.h"
#include "sim/rng.h"
#include "sim/routing/clos.h"
#include "sim/routing/ecmp_table.h"
#include "sim/routing/graph.h"
#include "sim/routing/lossless_classes.h"

namespace uet::sim {

enum class RoutingMode : uint8_t {
  kMinimal,  // shortest paths, ECMP over all of them (on a torus: over every dimension order)
  kValiant,  // via an intermediate group drawn from the flow hash, then minimally
  kUgal,     // UGAL-L: at the first switch, minimal or Valiant by local queue bytes x hops
};

// What UGAL-L weighs at a candidate port.
enum class UgalSignal : uint8_t {
  kQueue,       // the bytes queued at the port
  // ... and the bytes the next switch holds that came in through the link (its ingress
  // count, what PFC meters): the downstream buffer, which booksim2's credits count
  kDownstream,
};

enum class DeadlockFree : uint8_t {
  kOff,     // one lossless class: PFC deadlocks where routes close a cycle
  kTagger,  // lossless classes as virtual channels (lossless_classes.h): Tagger, the dateline
};

struct RoutingConfig {
  RoutingMode mode = RoutingMode::kMinimal;
  // A group keeps only its ports of the lowest class (Network::set_port_classes): on a torus
  // with a port's class its dimension, dimension-order routing.
  bool dimension_order = false;
  // UGAL-L detours only when the minimal port's queue bytes x hops exceed the Valiant port's
  // by more than this: a frame's worth of slack, so that an idle fabric routes minimally.
  uint64_t ugal_bias_bytes = 4096;
  UgalSignal ugal_signal = UgalSignal::kQueue;
  // Group-minimal paths where the fabric has switch groups (Network::set_switch_groups): the
  // fewest links between groups, then the fewest inside them, so a dragonfly's minimal path
  // is local-global-local (Kim et al. ISCA 2008, §4 MIN) rather than any shortest path,
  // and Valiant's and UGAL-L's legs are such paths too. Without groups: shortest paths.
  bool group_minimal = false;
  // Valiant's and UGAL-L's detours as booksim2's dragonflynew takes them (its intermediate is
  // a random node, not a group): inside the intermediate group minimally to a switch of it
  // drawn from the flow hash, and only from there to the destination; and frames bound for
  // their own group do not detour. Off: minimal from the switch the frame enters the group
  // at, every frame detouring (Kim et al. ISCA 2008, §4 VAL).
  bool valiant_via_switch = false;
  // Minimal routes on a fat-tree or leaf-spine by address arithmetic (clos.h), the same
  // routes as the tables'; false: by tables (to check one against the other).
  bool structured = true;
  // Lossless classes as virtual channels where routes would close a PFC cycle
  // (lossless_classes.h); build() fails when the switches have too few priorities.
  DeadlockFree deadlock_free = DeadlockFree::kOff;

  // Whether minimal routes come from the structure (clos.h) on a graph that is a fat-tree or
  // leaf-spine: what a memory estimate made before the build can count on.
  bool computes_clos(bool has_switch_groups) const noexcept {
    return structured && mode == RoutingMode::kMinimal && !dimension_order &&
           !(group_minimal && has_switch_groups);
  }
};

// The mode is one of RoutingMode's, the UGAL-L signal one of UgalSignal's, the bias at most
// 1 GiB.
absl::Status check_routing(const RoutingConfig& config);

// A frame's routing state, 0 before its first switch (Network::FrameMeta::route_state).
struct RouteState {
  static constexpr uint8_t kDecided = 1;  // its first switch chose minimal or a detour
  static constexpr uint8_t kDetour = 2;   // it goes through the intermediate group
  static constexpr uint8_t kReached = 4;  // ... and has reached it: minimal from here
};

// UGAL-L's rule (Kim et al. 2008, §4.2): minimal unless q_min * H_min > q_via * H_via + bias.
constexpr bool ugal_detours(uint64_t q_min, uint32_t h_min, uint64_t q_via, uint32_t h_via,
                            uint64_t bias) noexcept {
  return q_min * h_min > q_via * h_via + bias;
}

class Routing {
 public:
  // Replaces every table. `g.group_of_switch`, when given, has one entry per switch, every
  // group in [0, groups) holding at least one switch.
  absl::Status build(const RoutingGraph& g, const RoutingConfig& config);

  const RoutingConfig& config() const noexcept { return config_; }
  bool minimal() const noexcept { return config_.mode == RoutingMode::kMinimal; }
  // The minimal routes are computed from the fabric's structure (clos()), not tables.
  bool structured() const noexcept { return structured_; }
  const ClosRouting& clos() const noexcept { return clos_; }

  // The lossless class a frame takes at each hop (config().deadlock_free; off: one class).
  const LosslessClasses& lossless() const noexcept { return lossless_; }

  // ----- minimal
  // The port switch `s` forwards a frame to `dst_host` with this flow hash through, on a
  // shortest path; kNone: no route.
  uint32_t port(uint32_t s, uint32_t dst_host, uint64_t flow_hash) const noexcept {
    if (structured_) return clos_.port(s, dst_host, flow_hash);
    return table_port(s, dst_host, flow_hash);
  }
  // port() from the tables (!structured()).
  uint32_t table_port(uint32_t s, uint32_t dst_host, uint64_t flow_hash) const noexcept {
    if (dst_host >= hosts_ || s >= tors_.switches()) return kNone;
    const Dst& d = dst_[dst_host];
    if (s == d.tor) return d.tor_port;  // the last hop: a one-port group, no hash to draw
    return tors_.port(d.route_base, s, flow_hash);
  }
  bool knows_host(uint32_t dst_host) const noexcept { return dst_host < hosts_; }
  // What port() reads first at switch `s` for a known host, for a prefetch.
  const void* route_entry(uint32_t dst_host, uint32_t s) const noexcept {
    if (structured_) return clos_.entry(s);
    return tors_.route_entry(dst_[dst_host].route_base, s);
  }

  // ----- every mode
  // The first switch's choice for a frame (its state before: 0): `queue_bytes(port)` is
  // the load at that port of the switch by config().ugal_signal (UGAL-L reads the two
  // candidates').
  template <class QueueBytes>
  uint8_t decide(uint32_t s, uint32_t dst_host, uint64_t flow_hash,
                 const QueueBytes& queue_bytes) const noexcept {
    if (config_.mode == RoutingMode::kValiant) return valiant_state(s, dst_host, flow_hash);
    const UgalChoice c = ugal_choice(s, dst_host, flow_hash);
    if (c.via_port == kNone) return RouteState::kDecided;
    const bool detour = ugal_detours(queue_bytes(c.min_port), c.min_hops, queue_bytes(c.via_port),
                                     c.via_hops, config_.ugal_bias_bytes);
    return detour ? RouteState::kDecided | RouteState::kDetour : RouteState::kDecided;
  }
  // The port for a frame whose first switch has decided (`state`), updating the state as
  // the frame passes its intermediate group; kNone: no route.
  uint32_t port_stateful(uint32_t s, uint32_t dst_host, uint64_t flow_hash,
                         uint8_t& state) const noexcept;
  // The intermediate group of a frame with this flow hash, and switch `s`'s group.
  uint32_t via_group(uint64_t flow_hash) const noexcept {
    uint64_t x = flow_hash ^ via_mul_;
    return groups_mod_.mod(static_cast<uint32_t>(splitmix64(x) >> 32));
  }
  // With valiant_via_switch, the switch of the intermediate group a frame with this flow hash
  // passes through; kNone otherwise.
  uint32_t via_switch(uint64_t flow_hash) const noexcept;
  uint32_t group_of(uint32_t s) const noexcept { return group_of_[s]; }
  uint32_t groups() const noexcept { return groups_mod_.d; }

  // ----- the memo of recent minimal choices, by frame id
  // An entry holds every input of port() (build() clears them all), so a hit is exactly
  // what port() would return. In the non-minimal modes entries are written with no switch,
  // so they never hit: a frame's choice there depends on its state too.
  struct Memo {
    uint64_t flow_hash = 0;
    uint32_t sw = kNone;
    uint32_t dst_host = kNone;
    uint32_t out = kNone;
  };
  static constexpr size_t kMemo = 64;
  uint32_t port_memo(uint32_t s, uint32_t dst_host, uint64_t flow_hash,
                     uint32_t frame) const noexcept {
    return port_memo(s, dst_host, flow_hash, frame,
                     [&](Memo& m) { return port_remember(m, s, dst_host, flow_hash); });
  }
  // The same, calling `miss(entry)` for what the memo does not hold.
  template <class Miss>
  uint32_t port_memo(uint32_t s, uint32_t dst_host, uint64_t flow_hash, uint32_t frame,
                     const Miss& miss) const noexcept {
    Memo& m = memo_[frame % kMemo];
    if (m.sw == s && m.dst_host == dst_host && m.flow_hash == flow_hash) [[likely]]
      return m.out;
    return miss(m);
  }
  // port(), written into `m`.
  uint32_t port_remember(Memo& m, uint32_t s, uint32_t dst_host, uint64_t flow_hash) const noexcept;
  // The port last memoised under `frame` (any frame's: a hint for a prefetch).
  uint32_t memo_out(uint32_t frame) const noexcept { return memo_[frame % kMemo].out; }

  // Bytes the tables hold (routes, groups, ports, per switch and per destination host).
  size_t table_bytes() const noexcept;

 private:
  struct Dst {
    uint32_t tor;         // kNone: the host's link reaches no switch
    uint32_t tor_port;    // kNone: down (no route anywhere)
    uint32_t route_base;  // its ToR's column in tors_, or the no-route column
  };
  struct UgalChoice {
    uint32_t min_port = kNone;
    uint32_t min_hops = 0;
    uint32_t via_port = kNone;  // kNone: no detour to weigh
    uint32_t via_hops = 0;
  };
  absl::Status build_minimal(const RoutingGraph& g);
  absl::Status build_groups(const RoutingGraph& g);
  uint32_t remember_exceptional(Memo& m, uint32_t s, uint32_t dst_host,
                                uint64_t flow_hash) const noexcept;
  uint8_t valiant_state(uint32_t s, uint32_t dst_host, uint64_t flow_hash) const noexcept;
  bool local_only(uint32_t s, uint32_t dst_host) const noexcept;
  UgalChoice ugal_choice(uint32_t s, uint32_t dst_host, uint64_t flow_hash) const noexcept;
  // The switch a frame with this flow hash enters group `via` at, from `s`, and the hops to it.
  uint32_t walk_to_group(uint32_t s, uint32_t via, uint64_t flow_hash,
                         uint32_t& hops) const noexcept;
  // From `s` in the intermediate group, the port towards via_switch(); kNone: none, or there.
  uint32_t toward_via_switch(uint32_t s, uint64_t flow_hash) const noexcept;

  RoutingConfig config_;
  bool structured_ = false;  // minimal routes from clos_; else from tors_ and dst_
  ClosRouting clos_;
  EcmpTable tors_;        // a column per ToR, then the no-route column
  std::vector<Dst> dst_;  // by destination host
  uint32_t hosts_ = 0;    // the graph's hosts
  // Non-minimal modes only.
  EcmpTable groups_;                // a column per group
  std::vector<uint32_t> group_of_;  // by switch
  FastMod groups_mod_;              // the number of groups
  uint64_t via_mul_ = 0;            // the intermediate's hash seed * the golden ratio
  std::vector<uint32_t> peer_;      // UGAL: by port, the switch it reaches (kNone: none)
  // valiant_via_switch only: switches by group (group_first_ indexes group_switches_), and
  // by switch its column's base in tors_ (kNone: no host, so no column).
  std::vector<uint32_t> group_first_, group_switches_, tor_base_;
  mutable std::array<Memo, kMemo> memo_{};
  LosslessClasses lossless_;
};

}  // namespace uet::sim
