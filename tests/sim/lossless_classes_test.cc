// Deadlock freedom of the lossless-class rules (sim/routing/lossless_classes.h), checked on
// the channel dependency graph in the test's own code: a node per (switch egress port, class),
// an edge from each hop of a route to its next, over every host pair and many flow hashes of
// small dragonflies and tori in each routing mode. Dally & Seitz (IEEE TC 1987): routes are
// deadlock-free when that graph is acyclic. With one class (the rule off) the same routes
// close cycles: the deadlocks PFC runs into.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "sim/network.h"
#include "sim/routing/lossless_classes.h"
#include "sim/topology.h"
#include "route_walk.h"
#include "test_fabrics.h"

namespace uet::sim {
namespace {

using Fabric = test::Built;

// A torus (a mesh without `wraparound`) of `dims`, its ports' dimensions as their classes.
Fabric torus(std::vector<uint32_t> dims, const RoutingConfig& rc, bool wraparound = true) {
  Fabric f;
  TorusConfig c;
  c.dims = std::move(dims);
  c.wraparound = wraparound;
  EXPECT_TRUE(build_torus(*f.net, c, &f.layout).ok());
  EXPECT_TRUE(f.net->set_port_classes(f.layout.port_dim).ok());
  EXPECT_TRUE(f.net->set_routing(rc).ok());
  return f;
}

// The graph routing reads, from the network's public view (as Network::compute_routes
// makes it): switches' up links to switches in port order, hosts' ToR ports.
struct Graph {
  RoutingGraph g;
  std::vector<uint32_t> groups;
};
Graph graph_of(const Fabric& f) {
  const Network& net = *f.net;
  Graph out;
  RoutingGraph& g = out.g;
  g.switches = static_cast<uint32_t>(net.num_switches());
  for (uint32_t s = 0; s < g.switches; ++s) {
    g.first.push_back(static_cast<uint32_t>(g.links.size()));
    for (uint32_t p : net.node(net.switch_node(s)).ports) {
      const Port& peer = net.port(net.port(p).peer);
      if (net.port(p).up && !peer.at_host) g.links.push_back(RoutingGraph::Link{p, peer.owner});
    }
  }
  g.first.push_back(static_cast<uint32_t>(g.links.size()));
  for (uint32_t h = 0; h < net.num_hosts(); ++h) {
    const uint32_t tor_port = net.port(net.host(h).port).peer;
    g.hosts.push_back(RoutingGraph::HostLink{test::tor_of(net, h), tor_port});
  }
  if (f.layout.port_dim.empty()) {
    out.groups = f.layout.group;
    g.group_of_switch = out.groups;
  } else {
    g.port_class = f.layout.port_dim;
  }
  return out;
}

// Every route's hops as (port, class) -> (next port, next class) edges; `rule` null: one class.
using Node = std::pair<uint32_t, uint8_t>;
std::map<Node, std::vector<Node>> dependencies(const Fabric& f, const LosslessClasses* rule,
                                               int hashes, bool* all_reached) {
  const Network& net = *f.net;
  std::map<Node, std::vector<Node>> edges;
  *all_reached = true;
  for (uint32_t s = 0; s < net.num_hosts(); ++s) {
    for (uint32_t d = 0; d < net.num_hosts(); ++d) {
      if (s == d) continue;
      for (int i = 0; i < hashes; ++i) {
        const test::Walk w = test::walk(net, s, d, mix64(static_cast<uint64_t>(i), 0xC1A55));
        *all_reached &= w.reached && !w.loop;
        uint32_t up = kNone;
        uint8_t cls = 0;
        for (uint32_t out : w.ports) {
          const uint8_t next = rule == nullptr ? 0 : rule->next(cls, up, out);
          if (up != kNone) edges[{up, cls}].push_back({out, next});
          up = out;
          cls = next;
        }
      }
    }
  }
  return edges;
}

// A cycle anywhere in the graph, by depth-first search with colours.
bool cyclic(const std::map<Node, std::vector<Node>>& edges) {
  std::map<Node, int> colour;  // 1: on the path, 2: done
  for (const auto& [start, unused] : edges) {
    if (colour[start] != 0) continue;
    std::vector<std::pair<Node, size_t>> path{{start, 0}};
    colour[start] = 1;
    while (!path.empty()) {
      auto& [n, i] = path.back();
      const auto it = edges.find(n);
      if (it == edges.end() || i == it->second.size()) {
        colour[n] = 2;
        path.pop_back();
        continue;
      }
      const Node m = it->second[i++];
      if (colour[m] == 1) return true;
      if (colour[m] == 0) {
        colour[m] = 1;
        path.push_back({m, 0});
      }
    }
  }
  return false;
}

RoutingConfig config(RoutingMode mode, bool group_minimal, bool dimension_order = false) {
  RoutingConfig rc;
  rc.mode = mode;
  rc.group_minimal = group_minimal;
  rc.dimension_order = dimension_order;
  return rc;
}

constexpr int kAvailable = 8;  // the rule's tables, not the switches' kNumPriorities

struct Case {
  RoutingMode mode;
  bool group_minimal;
  uint32_t classes;
};

TEST(LosslessClasses_Tagger, DragonflyAcyclicWithClassesCyclicWithout) {
  for (const Case c : {Case{RoutingMode::kMinimal, true, 2}, Case{RoutingMode::kMinimal, false, 3},
                       Case{RoutingMode::kValiant, true, 3}, Case{RoutingMode::kUgal, true, 3},
                       Case{RoutingMode::kValiant, false, 5}}) {
    SCOPED_TRACE(testing::Message() << "mode " << static_cast<int>(c.mode) << " group_minimal "
                                    << c.group_minimal);
    const RoutingConfig rc = config(c.mode, c.group_minimal);
    const Fabric f = test::dragonfly(1, 4, 2, &rc);  // 9 groups of 4 switches
    const Graph g = graph_of(f);
    absl::StatusOr<LosslessClasses> rule = LosslessClasses::tagger(g.g, rc, kAvailable);
    ASSERT_TRUE(rule.ok()) << rule.status();
    EXPECT_EQ(rule->classes(), c.classes);
    bool reached = false;
    // Expect: one class closes cycles (local-global-local turns around the groups); Tagger's
    // classes break every one.
    EXPECT_TRUE(cyclic(dependencies(f, nullptr, 8, &reached)));
    EXPECT_TRUE(reached);
    EXPECT_FALSE(cyclic(dependencies(f, &*rule, 8, &reached)));
  }
}

TEST(LosslessClasses_Tagger, DragonflyPlusAcyclicWithClassesCyclicWithout) {
  for (const RoutingMode mode : {RoutingMode::kMinimal, RoutingMode::kValiant}) {
    SCOPED_TRACE(testing::Message() << "mode " << static_cast<int>(mode));
    const RoutingConfig rc = config(mode, true);
    const Fabric f = test::dragonfly_plus(&rc);
    const Graph g = graph_of(f);
    absl::StatusOr<LosslessClasses> rule = LosslessClasses::tagger(g.g, rc, kAvailable);
    ASSERT_TRUE(rule.ok()) << rule.status();
    bool reached = false;
    // Expect: Valiant's down-up turn at the intermediate group closes cycles with one class
    // (this small fabric's minimal routes do not); Tagger's classes none in either mode.
    EXPECT_EQ(cyclic(dependencies(f, nullptr, 8, &reached)), mode == RoutingMode::kValiant);
    EXPECT_TRUE(reached);
    EXPECT_FALSE(cyclic(dependencies(f, &*rule, 8, &reached)));
  }
}

TEST(LosslessClasses_Dateline, TorusDimensionOrderAcyclicWithClassesCyclicWithout) {
  for (const std::vector<uint32_t>& dims :
       {std::vector<uint32_t>{6}, std::vector<uint32_t>{4, 4}, std::vector<uint32_t>{3, 4, 3}}) {
    SCOPED_TRACE(testing::Message() << dims.size() << " dimensions");
    const RoutingConfig rc = config(RoutingMode::kMinimal, false, /*dimension_order=*/true);
    const Fabric f = torus(dims, rc);
    const Graph g = graph_of(f);
    absl::StatusOr<LosslessClasses> rule =
        LosslessClasses::dateline(g.g, rc, kAvailable);
    ASSERT_TRUE(rule.ok()) << rule.status();
    EXPECT_EQ(rule->classes(), 2u);
    bool reached = false;
    // Expect: each ring is a cycle with one class; the dateline cuts it.
    EXPECT_TRUE(cyclic(dependencies(f, nullptr, 4, &reached)));
    EXPECT_TRUE(reached);
    EXPECT_FALSE(cyclic(dependencies(f, &*rule, 4, &reached)));
  }
}

TEST(LosslessClasses_Dateline, MeshNeedsOneClass) {
  const RoutingConfig rc = config(RoutingMode::kMinimal, false, true);
  const Fabric f = torus({4, 3}, rc, /*wraparound=*/false);
  const Graph g = graph_of(f);
  absl::StatusOr<LosslessClasses> rule =
      LosslessClasses::dateline(g.g, rc, kAvailable);
  ASSERT_TRUE(rule.ok()) << rule.status();
  EXPECT_EQ(rule->classes(), 1u);
  bool reached = false;
  EXPECT_FALSE(cyclic(dependencies(f, nullptr, 4, &reached)));
}

TEST(LosslessClasses_Check, TooFewClassesOrWrongRoutesAreErrors) {
  const RoutingConfig rc = config(RoutingMode::kMinimal, true);
  const Fabric f = test::dragonfly(1, 4, 2, &rc);
  const Graph g = graph_of(f);
  // One lossless priority: group-minimal routes need two.
  const absl::StatusOr<LosslessClasses> few = LosslessClasses::tagger(g.g, rc, 1);
  EXPECT_EQ(few.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(few.status().message().find("needs 2 lossless classes"), absl::string_view::npos)
      << few.status();
  // The switches' (kNumPriorities less the control class): valiant's legs of up to two global
  // links need five.
  const RoutingConfig valiant = config(RoutingMode::kValiant, false);
  const absl::StatusOr<LosslessClasses> five =
      LosslessClasses::tagger(g.g, valiant, kNumPriorities - 1);
  EXPECT_NE(five.status().message().find("needs 5 lossless classes, the switches have 3"),
            absl::string_view::npos)
      << five.status();
  RoutingGraph no_groups = g.g;
  no_groups.group_of_switch = {};
  EXPECT_FALSE(LosslessClasses::tagger(no_groups, rc, kAvailable).ok());
  const RoutingConfig shortest = config(RoutingMode::kMinimal, false, false);
  const Fabric t = torus({4, 4}, shortest);
  const Graph tg = graph_of(t);
  const absl::StatusOr<LosslessClasses> any_order = LosslessClasses::dateline(tg.g, shortest, kAvailable);
  EXPECT_EQ(any_order.status().code(), absl::StatusCode::kInvalidArgument);
}

// Through the network: the switches have three lossless priorities, so Tagger on a
// group-minimal dragonfly takes two, routes needing more are a clear error (the routes stay
// as they were), and on a Clos it needs no class more.
TEST(LosslessClasses_Check, SetRoutingChecksThePriorities) {
  RoutingConfig rc = config(RoutingMode::kMinimal, true);
  Fabric f = test::dragonfly(1, 4, 2, &rc);
  rc.deadlock_free = DeadlockFree::kTagger;
  ASSERT_TRUE(f.net->set_routing(rc).ok());
  EXPECT_EQ(f.net->routing().lossless().classes(), 2u);
  RoutingConfig too_many = config(RoutingMode::kValiant, false);
  too_many.deadlock_free = DeadlockFree::kTagger;
  const absl::Status s = f.net->set_routing(too_many);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("deadlock_free"), absl::string_view::npos) << s;
  EXPECT_EQ(f.net->routing().lossless().classes(), 2u);
  Network clos{NetworkConfig{}};
  FatTreeConfig ft;
  ASSERT_TRUE(build_fat_tree(clos, ft).ok());
  ASSERT_TRUE(clos.set_routing(rc).ok());
  EXPECT_EQ(clos.routing().lossless().classes(), 1u);
  rc.deadlock_free = static_cast<DeadlockFree>(7);
  EXPECT_EQ(check_routing(rc).code(), absl::StatusCode::kInvalidArgument);
}

// The rule itself: up after a raising port, reset when the dimension changes, capped.
TEST(LosslessClasses_Next, RaisesResetsAndCaps) {
  const RoutingConfig rc = config(RoutingMode::kMinimal, false, true);
  const Fabric f = torus({4}, rc);
  const Graph g = graph_of(f);
  absl::StatusOr<LosslessClasses> rule =
      LosslessClasses::dateline(g.g, rc, kAvailable);
  ASSERT_TRUE(rule.ok());
  uint32_t wrap = kNone, plain = kNone;
  for (const RoutingGraph::Link& l : g.g.links) (rule->raises(l.port) ? wrap : plain) = l.port;
  ASSERT_NE(wrap, kNone);
  ASSERT_NE(plain, kNone);
  // The wraparound links by the layout's directions: +1 towards the higher coordinate, yet
  // towards a lower switch number.
  for (uint32_t s = 0; s < g.g.switches; ++s) {
    for (uint32_t i = g.g.first[s]; i < g.g.first[s + 1]; ++i) {
      const RoutingGraph::Link& l = g.g.links[i];
      EXPECT_EQ(rule->raises(l.port), (f.layout.port_dir[l.port] > 0) != (l.peer > s)) << l.port;
    }
  }
  EXPECT_EQ(rule->next(0, kNone, plain), 0);
  EXPECT_EQ(rule->next(0, wrap, plain), 1);
  EXPECT_EQ(rule->next(1, wrap, plain), 1);  // capped at the last class
  EXPECT_EQ(rule->next(1, plain, wrap), 1);
  const uint32_t host_port = g.g.hosts[0].tor_port;
  EXPECT_EQ(rule->next(1, wrap, host_port), 0);  // another "dimension": the host's link
}

}  // namespace
}  // namespace uet::sim
