// Deadlock freedom for PFC: lossless priorities used as virtual channels, the class a frame
// is queued in raised at the hops where the channel dependency graph would otherwise close a
// cycle (Hu et al., "Deadlocks in Datacenter Networks: Why Do They Form, and How to Avoid
// Them", HotNets 2016: PFC deadlock is a cycle of buffer dependencies).
//
// Two rules, both "the class at a switch's egress from the class at the upstream egress and
// the two ports", so a switch applies either with two table reads and no call through a
// pointer:
// - Dragonfly (and Dragonfly+): Tagger (Hu et al., "Tagger: Practical PFC Deadlock
//   Prevention in Data Center Networks", CoNEXT 2017): the class goes up by one after every
//   global link, so inside a class a frame only moves local -> global; 2 classes for
//   group-minimal routes (local-global-local), 3 for Valiant and UGAL-L (two global links),
//   the virtual channels Kim et al. (ISCA 2008) give the dragonfly's MIN and VAL routes.
// - Torus with dimension-order routing: the dateline (Dally & Seitz, "Deadlock-free message
//   routing in multiprocessor interconnection networks", IEEE TC 1987): in each dimension a
//   frame starts in class 0 and moves to class 1 once it has crossed that ring's wraparound
//   link; a new dimension starts again at 0, and dimension order makes the dimensions acyclic.
//
// Control path: build computes the tables; LosslessClasses::next is the per-hop rule.
// Ownership: whoever forwards owns one beside its Routing and rebuilds it with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/routing/graph.h"

namespace uet::sim {

struct RoutingConfig;

// The lossless priorities of the simulated switches: every priority but the control class's
// (transport.h's kNumPriorities, checked in the .cc). Class 0 is priority 0 (the data class),
// class c > 0 priority c + 1 (lossless_priority).
inline constexpr int kLosslessPriorities = 3;
constexpr int lossless_priority(int cls) noexcept { return cls == 0 ? 0 : cls + 1; }
constexpr int lossless_class(int priority) noexcept { return priority < 2 ? 0 : priority - 1; }

class LosslessClasses {
 public:
  static constexpr uint8_t kNoDim = 0xFF;

  // Tagger over the graph's switch groups (g.group_of_switch): the routes of `config` need
  // 1 + their most global links classes; an error names the count when more than
  // `available` lossless classes are needed.
  static absl::StatusOr<LosslessClasses> tagger(const RoutingGraph& g, const RoutingConfig& config,
                                                int available);
  // The dateline on a torus, its dimensions the graph's port classes (g.port_class): a ring's
  // wraparound link is the one of its dimension whose switches' numbers lie furthest apart
  // (topology_torus.cc numbers switches x0 fastest, so every other link of dimension d joins
  // numbers one stride apart). Needs minimal dimension-order routes and, with wraparound
  // links, 2 classes.
  static absl::StatusOr<LosslessClasses> dateline(const RoutingGraph& g,
                                                  const RoutingConfig& config, int available);
  // The rule `config.deadlock_free` asks of this graph: Tagger where it has switch groups, the
  // dateline where its ports have classes, else one class (a Clos needs no more).
  static absl::StatusOr<LosslessClasses> build(const RoutingGraph& g, const RoutingConfig& config,
                                               int available);

  uint32_t classes() const noexcept { return classes_; }
  // The class of a frame at egress `out` of a switch, having been queued in class `cls` at
  // the upstream switch's egress `up` (kNone: the frame came from a host, class 0). Capped at
  // the last class: a route longer than build() counted (links down) stays lossless but is
  // not covered.
  uint8_t next(uint8_t cls, uint32_t up, uint32_t out) const noexcept {
    if (up == kNone || up >= raise_.size() || out >= dim_.size() || dim_[up] != dim_[out]) return 0;
    const uint32_t c = uint32_t{cls} + raise_[up];
    return static_cast<uint8_t>(c < classes_ ? c : classes_ - 1);
  }
  // By port: the frame's class goes up after crossing it (a global link, a wraparound link).
  bool raises(uint32_t port) const noexcept { return port < raise_.size() && raise_[port] != 0; }
  size_t bytes() const noexcept { return dim_.size() + raise_.size(); }

 private:
  std::vector<uint8_t> dim_;    // by port: its dimension; kNoDim for every port off a torus
  std::vector<uint8_t> raise_;  // by port: 1 after a global or wraparound link
  uint32_t classes_ = 1;
};

}  // namespace uet::sim
