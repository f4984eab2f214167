// The lossless-class rules' tables (control path): which ports raise a frame's class, and
// how many classes the routes need.
#include "sim/routing/lossless_classes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sim/routing/routing.h"
#include "transport/transport.h"

namespace uet::sim {

static_assert(kLosslessPriorities == kNumPriorities - 1, "every priority but control's");

namespace {

absl::Status check_available(uint32_t needed, int available, absl::string_view why) {
  if (available < 1 || needed > static_cast<uint32_t>(available)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "deadlock_free: ", why, " needs ", needed, " lossless classes, the switches have ",
        available, " (kNumPriorities less the control class); use --deadlock_free=off"));
  }
  return absl::OkStatus();
}

// Ports the graph names, host ports included: the tables' size.
size_t port_count(const RoutingGraph& g) {
  uint32_t n = 0;
  for (const RoutingGraph::Link& l : g.links) n = std::max(n, l.port + 1);
  for (const RoutingGraph::HostLink& h : g.hosts) {
    if (h.tor_port != kNone) n = std::max(n, h.tor_port + 1);
  }
  return n;
}

}  // namespace

absl::StatusOr<LosslessClasses> LosslessClasses::tagger(const RoutingGraph& g,
                                                        const RoutingConfig& config,
                                                        int available) {
  if (g.group_of_switch.size() != g.switches) {
    return absl::InvalidArgumentError(
        absl::StrCat("deadlock_free tagger: ", g.group_of_switch.size(), " switch groups for ",
                     g.switches, " switches (a dragonfly's groups are needed)"));
  }
  // Global links per leg: one on a group-minimal route, two on a shortest one (global-global
  // is as short as local-global-local); Valiant and UGAL-L have two legs.
  const uint32_t per_leg = config.group_minimal ? 1 : 2;
  const uint32_t legs = config.mode == RoutingMode::kMinimal ? 1 : 2;
  LosslessClasses r;
  r.classes_ = 1 + per_leg * legs;
  if (absl::Status s = check_available(r.classes_, available, "tagger on this dragonfly");
      !s.ok()) {
    return s;
  }
  const size_t n = port_count(g);
  r.dim_.assign(n, kNoDim);
  r.raise_.assign(n, 0);
  for (uint32_t s = 0; s < g.switches; ++s) {
    for (uint32_t i = g.first[s]; i < g.first[s + 1]; ++i) {
      const RoutingGraph::Link& l = g.links[i];
      r.raise_[l.port] = g.group_of_switch[s] != g.group_of_switch[l.peer] ? 1 : 0;
    }
  }
  return r;
}

absl::StatusOr<LosslessClasses> LosslessClasses::dateline(const RoutingGraph& g,
                                                          const RoutingConfig& config,
                                                          int available) {
  if (config.mode != RoutingMode::kMinimal || !config.dimension_order) {
    return absl::InvalidArgumentError(
        "deadlock_free dateline: needs minimal dimension-order routes (routing minimal, "
        "dimension_order on); other torus routes turn between dimensions in cycles");
  }
  if (g.port_class.size() < port_count(g)) {
    return absl::InvalidArgumentError(
        absl::StrCat("deadlock_free dateline: ", g.port_class.size(), " port classes for ",
                     port_count(g), " ports (a torus's dimensions are needed)"));
  }
  LosslessClasses r;
  r.dim_.assign(g.port_class.begin(), g.port_class.end());
  r.raise_.assign(r.dim_.size(), 0);
  // By dimension, the least distance between the numbers of two switches a link joins: the
  // stride; a ring's wraparound link joins switches (k - 1) strides apart.
  auto apart = [&](uint32_t s, const RoutingGraph::Link& l) {
    return l.peer > s ? l.peer - s : s - l.peer;
  };
  std::vector<uint32_t> stride(256, UINT32_MAX);
  for (uint32_t s = 0; s < g.switches; ++s) {
    for (uint32_t i = g.first[s]; i < g.first[s + 1]; ++i) {
      uint32_t& st = stride[g.port_class[g.links[i].port]];
      st = std::min(st, apart(s, g.links[i]));
    }
  }
  bool wraps = false;
  for (uint32_t s = 0; s < g.switches; ++s) {
    for (uint32_t i = g.first[s]; i < g.first[s + 1]; ++i) {
      const RoutingGraph::Link& l = g.links[i];
      const bool wrap = apart(s, l) > stride[g.port_class[l.port]];
      r.raise_[l.port] = wrap ? 1 : 0;
      wraps |= wrap;
    }
  }
  r.classes_ = wraps ? 2 : 1;
  if (absl::Status s = check_available(r.classes_, available, "the dateline on this torus");
      !s.ok()) {
    return s;
  }
  return r;
}

absl::StatusOr<LosslessClasses> LosslessClasses::build(const RoutingGraph& g,
                                                       const RoutingConfig& config,
                                                       int available) {
  if (config.deadlock_free == DeadlockFree::kOff) return LosslessClasses{};
  if (!g.group_of_switch.empty()) return tagger(g, config, available);
  if (!g.port_class.empty()) return dateline(g, config, available);
  // A Clos's shortest routes go up then down: no cycle. A detour through an intermediate
  // switch turns down-up there, and no rule here covers it.
  if (config.mode != RoutingMode::kMinimal) {
    return absl::InvalidArgumentError(
        "deadlock_free: no lossless-class rule for Valiant or UGAL-L routes without switch "
        "groups (a dragonfly) or port classes (a torus)");
  }
  return LosslessClasses{};
}

}  // namespace uet::sim
