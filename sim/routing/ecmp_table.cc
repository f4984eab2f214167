// Building the ECMP tables (control path): a breadth-first search per column, a group per
// (column, switch), identical groups stored once per switch.
#include "sim/routing/ecmp_table.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <span>
#include <utility>
#include <vector>

namespace uet::sim {
namespace {

// Every switch's distance in hops to the nearest of `targets` (kNone: unreachable), breadth
// first from all of them at once; `frontier` is scratch.
void distances_from(std::span<const uint32_t> targets, const RoutingGraph& g,
                    std::vector<uint32_t>& dist, std::vector<uint32_t>& frontier) {
  std::fill(dist.begin(), dist.end(), kNone);
  frontier.clear();
  for (uint32_t t : targets) {
    if (dist[t] == kNone) {
      dist[t] = 0;
      frontier.push_back(t);
    }
  }
  for (size_t next = 0; next < frontier.size(); ++next) {
    const uint32_t n = frontier[next];
    for (uint32_t i = g.first[n]; i < g.first[n + 1]; ++i) {
      if (dist[g.links[i].peer] == kNone) {
        dist[g.links[i].peer] = dist[n] + 1;
        frontier.push_back(g.links[i].peer);
      }
    }
  }
}

// Each switch's ECMP groups, identical ones stored once: a route names its switch's group by
// number, 16 bits, group 0 being the empty one (no route).
class SwitchGroups {
 public:
  explicit SwitchGroups(uint32_t n_sw)
      : groups_(n_sw, std::vector<std::vector<uint32_t>>(1)), index_(n_sw) {
    for (auto& index : index_) index.emplace(std::vector<uint32_t>{}, 0);
  }
  // Sets `id` to the number of `group` at switch `s`, numbering it if new; false when the
  // switch has no number left.
  bool number(uint32_t s, const std::vector<uint32_t>& group, uint16_t& id) {
    auto it = index_[s].find(group);
    if (it == index_[s].end()) {
      if (groups_[s].size() >= 65535) return false;
      it = index_[s].emplace(group, static_cast<uint16_t>(groups_[s].size())).first;
      groups_[s].push_back(group);
    }
    id = it->second;
    return true;
  }
  // Switch `s`'s groups by number.
  const std::vector<std::vector<uint32_t>>& of(uint32_t s) const { return groups_[s]; }

 private:
  std::vector<std::vector<std::vector<uint32_t>>> groups_;
  std::vector<std::map<std::vector<uint32_t>, uint16_t>> index_;
};

// Dimension order: only the group's ports of the lowest class (on a torus, the first
// dimension in which the switch still differs from the target; both ring directions of it
// when they tie).
void keep_lowest_class(std::span<const uint8_t> port_class, std::vector<uint32_t>& group) {
  if (group.empty()) return;
  uint8_t lowest = UINT8_MAX;
  for (uint32_t p : group) lowest = std::min(lowest, port_class[p]);
  std::erase_if(group, [&](uint32_t p) { return port_class[p] != lowest; });
}

// Path costs for group-minimal routes: a link between two groups weighs more than any path
// inside groups can (at most switches - 1 links), so a cost reads (global links, local links).
struct GroupCost {
  std::span<const uint32_t> group_of;  // empty: every switch its own group
  uint64_t global = 1;                 // the weight of a link between groups

  uint64_t weight(uint32_t s, uint32_t peer) const noexcept {
    if (group_of.empty() || group_of[s] != group_of[peer]) return global;
    return 1;
  }
};
constexpr uint64_t kUnreached = UINT64_MAX;

// Every switch's least cost to the nearest of `targets` (kUnreached: unreachable), Dijkstra
// from all of them at once over the links reversed (links come in pairs, so the same links).
void costs_from(std::span<const uint32_t> targets, const RoutingGraph& g, const GroupCost& w,
                std::vector<uint64_t>& cost) {
  using Item = std::pair<uint64_t, uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> open;
  std::fill(cost.begin(), cost.end(), kUnreached);
  for (uint32_t t : targets) {
    if (cost[t] != 0) open.emplace(cost[t] = 0, t);
  }
  while (!open.empty()) {
    const auto [c, n] = open.top();
    open.pop();
    if (c != cost[n]) continue;
    for (uint32_t i = g.first[n]; i < g.first[n + 1]; ++i) {
      const uint32_t peer = g.links[i].peer;
      const uint64_t via = c + w.weight(n, peer);
      if (via < cost[peer]) open.emplace(cost[peer] = via, peer);
    }
  }
}

// The routes towards one column, by switch, from every switch's cost `cost` to it: a switch's
// group is its links to switches one link's weight closer. `group` is scratch.
absl::Status route_column(const RoutingGraph& g, const std::vector<uint64_t>& cost,
                          const GroupCost& w, bool dimension_order, SwitchGroups& groups,
                          std::vector<uint32_t>& group, uint16_t* route) {
  for (uint32_t s = 0; s < cost.size(); ++s) {
    const uint64_t d = cost[s];
    if (d == 0 || d == kUnreached) continue;  // a target itself, or no route
    group.clear();
    for (uint32_t i = g.first[s]; i < g.first[s + 1]; ++i) {
      const uint32_t peer = g.links[i].peer;
      if (cost[peer] != kUnreached && cost[peer] + w.weight(s, peer) == d) {
        group.push_back(g.links[i].port);
      }
    }
    if (dimension_order) keep_lowest_class(g.port_class, group);
    if (!groups.number(s, group, route[s])) {
      return absl::ResourceExhaustedError("too many ECMP groups at one switch (at most 65535)");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EcmpTable::build(const RoutingGraph& g, const Columns& columns,
                              const Options& options) {
  const uint32_t n_sw = g.switches;
  const size_t routes = size_t{columns.count()} * n_sw;
  if (routes > UINT32_MAX) return absl::ResourceExhaustedError("ECMP table too large");
  if (options.dimension_order) {
    for (const RoutingGraph::Link& l : g.links) {
      if (l.port >= g.port_class.size()) {
        return absl::FailedPreconditionError(
            "dimension-order routing needs a class for every switch port (set_port_classes)");
      }
    }
  }
  SwitchGroups groups(n_sw);
  route_.assign(routes, 0);
  dist_.assign(options.distances ? routes : 0, kNoDistance);
  // Plain tables weigh every link 1 (a breadth-first search gives the costs).
  GroupCost w;
  if (options.group_minimal) w = GroupCost{g.group_of_switch, uint64_t{n_sw} + 1};
  std::vector<uint32_t> dist(n_sw);
  std::vector<uint64_t> cost(n_sw);
  std::vector<uint32_t> frontier;
  std::vector<uint32_t> group;
  for (uint32_t c = 0; c < columns.count(); ++c) {
    const std::span<const uint32_t> targets(columns.switches.data() + columns.first[c],
                                            columns.first[c + 1] - columns.first[c]);
    if (options.group_minimal) {
      costs_from(targets, g, w, cost);
    } else {
      distances_from(targets, g, dist, frontier);
      for (uint32_t s = 0; s < n_sw; ++s) cost[s] = dist[s] == kNone ? kUnreached : dist[s];
    }
    uint16_t* route = route_.data() + size_t{c} * n_sw;
    if (absl::Status s = route_column(g, cost, w, options.dimension_order, groups, group, route);
        !s.ok()) {
      return s;
    }
    if (!options.distances) continue;
    for (uint32_t s = 0; s < n_sw; ++s) {
      // Hops: (global links, local links) read back from the cost.
      const uint64_t hops =
          cost[s] == kUnreached ? kNoDistance : cost[s] / w.global + cost[s] % w.global;
      dist_[size_t{c} * n_sw + s] = static_cast<uint16_t>(std::min<uint64_t>(hops, kNoDistance));
    }
  }
  switch_.clear();
  group_.clear();
  ports_.clear();
  for (uint32_t s = 0; s < n_sw; ++s) {
    switch_.push_back(
        Switch{g.seeds[s] * 0x9E3779B97F4A7C15ULL, static_cast<uint32_t>(group_.size())});
    for (const std::vector<uint32_t>& gr : groups.of(s)) {
      // An empty group (no route) keeps size 0 as its mark; FastMod::of needs d >= 1.
      const FastMod mod =
          gr.empty() ? FastMod{0, 0} : FastMod::of(static_cast<uint32_t>(gr.size()));
      group_.push_back(Group{mod.m, mod.d, static_cast<uint32_t>(ports_.size())});
      ports_.insert(ports_.end(), gr.begin(), gr.end());
    }
  }
  switches_ = n_sw;
  return absl::OkStatus();
}

size_t EcmpTable::bytes() const noexcept {
  return route_.size() * sizeof(uint16_t) + switch_.size() * sizeof(Switch) +
         group_.size() * sizeof(Group) + ports_.size() * sizeof(uint32_t) +
         dist_.size() * sizeof(uint16_t);
}

}  // namespace uet::sim
