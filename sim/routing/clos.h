// Minimal routes of a 3-tier k-ary fat-tree or a 2-tier leaf-spine computed from switch, host
// and port numbers, with no table per switch and destination: the structured routing family
// beside the tables (ecmp_table.h), answering exactly what the tables would.
//
// A fabric is recognised from the routing graph alone, as the topology builders number it
// (sim/topology.h: hosts first, ToRs, then aggregation switches, then cores or spines; ports
// two per link in connect() order: the host links, then per pod its ToR-aggregation links by
// ToR and aggregation switch and its aggregation-core links by aggregation switch and core; a
// leaf-spine's links by leaf and spine). Any graph that matches, link for link, is that fabric,
// so its shortest-path routes are known without a search:
//   ToR (or leaf) not the destination's: every up link;
//   aggregation switch: the down link to the destination's ToR in its pod, else every up link;
//   core (or spine): the down link to the destination's pod (or leaf).
// These are the tables' groups: a group is the switch's links to switches one hop closer, in
// port order, and a port is drawn from it by the same hash of the flow and the switch's seed.
//
// Links that are down (missing from the graph where the numbering puts one) are exceptions.
// Every switch keeps its distances but where a switch lost all of its links one hop closer;
// a destination ToR whose distances change that way (its column) is routed by a table column
// computed as the tables compute it, and a switch with a link down keeps its groups without
// that link elsewhere. Either set grows with the failures, not with the fabric.
//
// Ownership: a Routing owns its ClosRouting by value; build() (control path) replaces
// everything, port() (per frame) only reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/fast_mod.h"
#include "sim/rng.h"
#include "sim/routing/ecmp_table.h"
#include "sim/routing/graph.h"

namespace uet::sim {

// x / d for x < 2^24 and 1 <= d < 2^16 by one multiplication: with m = ceil(2^40 / d) =
// (2^40 + e) / d, e < d, m * x / 2^40 = x / d + e * x / (d * 2^40), whose second term stays
// below 1/d while e * x < 2^40, so the floor is exact; m * x < 2^64.
struct Div24 {
  uint64_t m = uint64_t{1} << 40;
  static constexpr Div24 of(uint32_t d) noexcept {
    return Div24{((uint64_t{1} << 40) + d - 1) / d};
  }
  constexpr uint32_t div(uint32_t x) const noexcept { return static_cast<uint32_t>((m * x) >> 40); }
};

// The numbers a recognised fabric is described by.
struct ClosShape {
  uint32_t hosts = 0;
  uint32_t per_tor = 0;  // hosts per ToR
  uint32_t tors = 0;
  uint32_t half = 0;  // a fat-tree's k/2 (ToRs and aggregation switches per pod); 0: leaf-spine
  uint32_t tops = 0;  // cores (half^2) or spines
  uint32_t switches = 0;
  bool fat_tree() const noexcept { return half != 0; }
  uint32_t pods() const noexcept { return tors / half; }
  uint32_t first_top() const noexcept { return fat_tree() ? 2 * tors : tors; }
};

class ClosRouting {
 public:
  // Recognises `g` and builds its routes: true when `g` is a fat-tree or leaf-spine as the
  // builders number them (links down allowed), false when it is not (nothing built).
  absl::StatusOr<bool> build(const RoutingGraph& g);

  const ClosShape& shape() const noexcept { return shape_; }
  // The port switch `s` forwards a frame to `dst_host` through, on a shortest path; kNone: no
  // route. The same as the tables' EcmpTable::port for this graph.
  uint32_t port(uint32_t s, uint32_t dst_host, uint64_t flow_hash) const noexcept {
    if (exceptional_) [[unlikely]]
      return port_exceptional(s, dst_host, flow_hash);
    return port_intact(s, dst_host, flow_hash);
  }
  // port() where no link is down (!exceptional()).
  uint32_t port_intact(uint32_t s, uint32_t dst_host, uint64_t flow_hash) const noexcept {
    if (dst_host >= shape_.hosts || s >= shape_.switches) return kNone;
    const uint32_t t = tor_div_.div(dst_host);
    if (s == t) return host_port(dst_host);
    return intact_port(s, t, flow_hash);
  }
  // Some link is down: port() takes the exceptions into account.
  bool exceptional() const noexcept { return exceptional_; }
  // What port() reads at switch `s` (its record), for a prefetch.
  const void* entry(uint32_t s) const noexcept { return sw_.data() + s; }
  // Destination ToRs routed by a table column (their distances changed by failures), and
  // switches with a link down.
  uint32_t exception_columns() const noexcept { return static_cast<uint32_t>(column_tors_.size()); }
  uint32_t exception_switches() const noexcept { return static_cast<uint32_t>(rows_.size()); }
  size_t bytes() const noexcept;

 private:
  // One per switch: the seed and where its up and down ports start.
  struct Switch {
    uint64_t seed_mul;  // the switch's seed * the golden ratio, as EcmpTable keeps it
    uint32_t up;        // its first up port (ToR, leaf, aggregation); kNone: none
    uint32_t down;      // its down port to the first ToR of its pod, or to pod or leaf 0
    uint32_t first_tor;  // an aggregation switch's pod's first ToR
  };
  // A switch with a link down: its up ports still up, and its down ports that are down.
  struct Row {
    uint32_t first_up = 0;
    uint32_t up_count = 0;
    uint64_t up_mod_m = 0;  // FastMod::of(up_count).m
    uint32_t first_down = 0;
    uint32_t down_count = 0;
  };
  // A switch-to-switch link the numbering gives switch `sw` that the graph does not have.
  struct DownLink {
    uint32_t sw, port, peer;
  };

  void set_shape(const ClosShape& c);
  bool matches(const RoutingGraph& g, std::vector<DownLink>& down_links,
               std::vector<uint32_t>& down_hosts) const;
  void number_switches(const RoutingGraph& g);
  absl::Status build_exceptions(const RoutingGraph& g, const std::vector<DownLink>& down_links,
                                const std::vector<uint32_t>& down_hosts);
  std::vector<uint32_t> changed_columns(const std::vector<DownLink>& down_links) const;
  uint32_t port_exceptional(uint32_t s, uint32_t dst_host, uint64_t flow_hash) const noexcept;
  // Calls f(port, peer) for each of switch `s`'s switch-to-switch links of the intact
  // fabric, in port order.
  template <class F>
  void for_each_link(uint32_t s, const F& f) const;
  // The intact fabric's hop count from switch `s` to ToR `t`.
  uint32_t distance(uint32_t s, uint32_t t) const noexcept;
  // 0: ToR or leaf, 1: aggregation switch or spine, 2: core.
  uint32_t tier(uint32_t s) const noexcept {
    return s < shape_.tors ? 0 : s < core0_ ? 1 : shape_.fat_tree() ? 2 : 1;
  }

  uint32_t host_port(uint32_t dst_host) const noexcept { return 2 * dst_host + 1; }
  uint32_t up_port(const Switch& w, uint64_t flow_hash) const noexcept {
    uint64_t x = flow_hash ^ w.seed_mul;  // mix64(flow_hash, seed), as EcmpTable::port
    const uint64_t h = splitmix64(x);
    return w.up + 2 * up_mod_.mod(static_cast<uint32_t>(h >> 32));
  }
  // The intact fabric's port at `s` towards ToR `t` (s != t): its down port on the way, or
  // one of its up ports.
  uint32_t intact_port(uint32_t s, uint32_t t, uint64_t flow_hash) const noexcept {
    const Switch& w = sw_[s];
    if (s < shape_.tors) return up_port(w, flow_hash);
    if (!shape_.fat_tree()) return w.down + t * spine_stride_;
    if (s >= core0_) return w.down + pod_div_.div(t) * core_stride_;
    const uint32_t i = t - w.first_tor;  // the ToR's place in the switch's pod, if there
    if (i >= shape_.half) return up_port(w, flow_hash);
    return w.down + i * agg_stride_;
  }
  // The intact group's single port at `s` towards ToR `t` (s != t); kNone: its up ports.
  uint32_t down_port(uint32_t s, uint32_t t) const noexcept {
    if (tier(s) == 0 || (tier(s) == 1 && shape_.fat_tree() &&
                         pod_div_.div(s - shape_.tors) != pod_div_.div(t))) {
      return kNone;
    }
    return intact_port(s, t, 0);
  }

  ClosShape shape_;
  Div24 tor_div_;  // host -> its ToR
  Div24 pod_div_;  // ToR or aggregation switch (from the first) -> its pod
  FastMod up_mod_;  // a switch's up ports: half, or spines
  uint32_t core0_ = 0;  // the first core
  uint32_t agg_stride_ = 0, core_stride_ = 0, spine_stride_ = 0;  // between down ports
  std::vector<Switch> sw_;
  // Failures.
  bool exceptional_ = false;
  std::vector<uint64_t> host_down_;      // by host, a bit: its ToR's port to it is down
  std::vector<uint32_t> column_of_tor_;  // by ToR: its column's base in columns_, or kNone
  std::vector<uint32_t> column_tors_;    // the ToRs with a column
  EcmpTable columns_;
  std::vector<uint32_t> row_of_switch_;  // by switch: its row, or kNone
  std::vector<Row> rows_;
  std::vector<uint32_t> row_ports_;
};

}  // namespace uet::sim
