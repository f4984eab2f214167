// Shortest-path ECMP towards sets of target switches, in flat tables: the table-driven routing
// family, for any graph.
//
// A column is a set of target switches (one ToR, or the switches of one Valiant group). A
// switch's route in a column is its group of up links to switches one hop closer to the
// nearest target, from one breadth-first search per column started at all its targets at once
// over the switch-to-switch links. Group-minimal tables order paths by (links between groups,
// links inside groups) instead, a Dijkstra search per column, and a route's links are those
// one step closer in that order. A switch's identical groups are stored once and named by a
// 16-bit number (0: the empty group, no route); a switch picks a group's port by hashing the
// frame's flow hash with its own seed.
//
// Ownership: a Routing owns its tables; build() (control path) replaces them whole, port()
// (per frame) only reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "sim/fast_mod.h"
#include "sim/rng.h"
#include "sim/routing/graph.h"

namespace uet::sim {

class EcmpTable {
 public:
  // Column c's targets are switches[first[c] .. first[c + 1]); a column without any has no
  // routes (the place of destinations nothing reaches).
  struct Columns {
    std::vector<uint32_t> first{0};
    std::vector<uint32_t> switches;
    uint32_t count() const noexcept { return static_cast<uint32_t>(first.size() - 1); }
  };
  struct Options {
    bool distances = false;        // keep every switch's hop count to each column (UGAL)
    bool dimension_order = false;  // a group keeps only its ports of the lowest class
    // Group-minimal (dragonfly MIN, Kim et al. ISCA 2008 §4): fewest links between switch
    // groups (g.group_of_switch) first, then fewest links inside one; distances stay hops.
    bool group_minimal = false;
  };
  static constexpr uint16_t kNoDistance = UINT16_MAX;

  // Fails when a switch would need more than 65535 distinct groups or the table more than
  // 2^32 routes; `g.port_class` must cover every port when dimension_order is asked for.
  absl::Status build(const RoutingGraph& g, const Columns& columns, const Options& options);

  uint32_t switches() const noexcept { return switches_; }
  // Where the column's routes start: the argument port() and route_entry() take.
  uint32_t base(uint32_t column) const noexcept { return column * switches_; }
  // The port switch `s` takes towards the column at `base` for this flow hash; kNone: no
  // route, or `s` is one of the column's targets.
  uint32_t port(uint32_t base, uint32_t s, uint64_t flow_hash) const noexcept {
    const Switch& sw = switch_[s];
    const Group& g = group_[sw.first_group + route_[base + s]];
    if (g.size == 0) return kNone;
    uint64_t x = flow_hash ^ sw.seed_mul;  // mix64(flow_hash, seed), the multiply done once
    const uint64_t h = splitmix64(x);
    // The high half fits 32 bits: its remainder by the group size, by multiplications.
    return ports_[g.first_port + g.size_mod().mod(static_cast<uint32_t>(h >> 32))];
  }
  // The route port() reads first, for a prefetch.
  const uint16_t* route_entry(uint32_t base, uint32_t s) const noexcept {
    return route_.data() + base + s;
  }
  // Switch hops from `s` to the column's nearest target (kNoDistance: unreachable); only
  // when built with Options::distances.
  uint32_t distance(uint32_t base, uint32_t s) const noexcept { return dist_[base + s]; }
  // Bytes the tables hold.
  size_t bytes() const noexcept;

 private:
  struct Switch {
    uint64_t seed_mul;  // the switch's seed * the golden ratio, as mix64 multiplies it
    uint32_t first_group;
  };
  // 16 bytes (a FastMod member would pad it to 24, which the compiler then copies through
  // the stack): the group's size with its FastMod multiplier, and its first port.
  struct Group {
    uint64_t mod_m;  // FastMod::of(size).m
    uint32_t size;   // 0: no route
    uint32_t first_port;
    FastMod size_mod() const noexcept { return FastMod{mod_m, size}; }
  };
  static_assert(sizeof(Group) == 16);

  std::vector<Switch> switch_;
  std::vector<uint16_t> route_;  // [base + switch] -> the switch's group
  std::vector<Group> group_;
  std::vector<uint32_t> ports_;
  std::vector<uint16_t> dist_;  // [base + switch], with Options::distances
  uint32_t switches_ = 0;
};

}  // namespace uet::sim
