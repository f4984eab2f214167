// Structured routing (sim/routing/clos.h) against the tables it stands in for: on fat-trees
// (k = 2 to 8, oversubscribed too) and leaf-spines, intact and with seeded random sets of
// failed links (symmetric through the Network, one-way through a graph built here), every
// switch, destination host and a spread of flow hashes gives the same port; a whole run gives
// the same counters; fabrics wired otherwise are left to the tables.
#include "sim/routing/clos.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/network.h"
#include "sim/routing/routing.h"
#include "sim/topology.h"
#include "sim/udp_app.h"
#include "test_fabrics.h"

namespace uet::sim {
namespace {

LinkConfig link() { return test::link100(100 * kNanosecond); }

// A fabric to build twice: a fat-tree (k > 0) or a leaf-spine.
struct Shape {
  uint32_t k = 0, per_tor = 0;  // fat-tree
  uint32_t leaves = 0, spines = 0, per_leaf = 0;
  std::string name() const {
    return k > 0 ? absl::StrCat("fat-tree k=", k, " per_tor=", per_tor)
                 : absl::StrCat("leaf-spine ", leaves, "x", spines, " per_leaf=", per_leaf);
  }
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {
      {.k = 2}, {.k = 4}, {.k = 4, .per_tor = 3}, {.k = 6}, {.k = 6, .per_tor = 1}, {.k = 8},
      {.leaves = 1, .spines = 2, .per_leaf = 3}, {.leaves = 4, .spines = 2, .per_leaf = 8},
      {.leaves = 5, .spines = 3, .per_leaf = 1}, {.leaves = 6, .spines = 7, .per_leaf = 4},
  };
  return all;
}

// The shape built, its minimal routes structured or from tables.
std::unique_ptr<Network> build(const Shape& shape, bool structured) {
  auto net = std::make_unique<Network>(NetworkConfig{});
  RoutingConfig rc;
  rc.structured = structured;
  EXPECT_TRUE(net->set_routing(rc).ok());
  if (shape.k > 0) {
    FatTreeConfig c;
    c.k = shape.k;
    c.hosts_per_tor = shape.per_tor;
    c.host_link = c.tor_agg_link = c.agg_core_link = link();
    EXPECT_TRUE(build_fat_tree(*net, c).ok()) << shape.name();
  } else {
    LeafSpineConfig c;
    c.leaves = shape.leaves;
    c.spines = shape.spines;
    c.hosts_per_leaf = shape.per_leaf;
    c.host_link = c.fabric_link = link();
    EXPECT_TRUE(build_leaf_spine(*net, c).ok()) << shape.name();
  }
  return net;
}

constexpr int kHashes = 12;

// Every switch, destination host and kHashes flow hashes: the same port from both. Returns
// the number of routed answers (not kNone); a disagreement fails the test, naming the first.
template <class Structured, class Tables>
int expect_same(uint32_t switches, uint32_t hosts, const Structured& structured,
                const Tables& tables, const std::string& what) {
  int routed = 0, differ = 0;
  for (uint32_t s = 0; s <= switches; ++s) {  // one past the last: no route from either
    for (uint32_t d = 0; d <= hosts; ++d) {
      for (int i = 0; i < kHashes; ++i) {
        const uint64_t h = mix64(static_cast<uint64_t>(i), 0xC105 + d);
        const uint32_t a = structured(s, d, h), b = tables(s, d, h);
        if (a != b && differ++ == 0) {
          ADD_FAILURE() << what << ": switch " << s << ", host " << d << ", hash " << h
                        << ": structured " << a << ", tables " << b;
        }
        routed += b != kNone;
      }
    }
  }
  EXPECT_EQ(differ, 0) << what;
  return routed;
}

int expect_same_ports(const Network& a, const Network& b, const std::string& what) {
  EXPECT_TRUE(a.routing().structured()) << what;
  EXPECT_FALSE(b.routing().structured()) << what;
  return expect_same(
      static_cast<uint32_t>(a.num_switches()), static_cast<uint32_t>(a.num_hosts()),
      [&](uint32_t s, uint32_t d, uint64_t h) { return a.ecmp_port(s, d, h); },
      [&](uint32_t s, uint32_t d, uint64_t h) { return b.ecmp_port(s, d, h); }, what);
}

// Links to fail: `fabric` switch-to-switch links and `host_links` host links, drawn by `rng`
// (a port of each; repeats allowed).
std::vector<uint32_t> draw_links(const Network& net, Rng& rng, int fabric, int host_links) {
  std::vector<uint32_t> fabric_ports, host_ports, out;
  for (uint32_t p = 0; p < net.num_ports(); p += 2) {
    const bool at_host = net.port(p).at_host || net.port(p + 1).at_host;
    (at_host ? host_ports : fabric_ports).push_back(p + static_cast<uint32_t>(rng.below(2)));
  }
  for (int i = 0; i < fabric; ++i) out.push_back(fabric_ports[rng.below(fabric_ports.size())]);
  for (int i = 0; i < host_links; ++i) out.push_back(host_ports[rng.below(host_ports.size())]);
  return out;
}

void set_links(Network& net, const std::vector<uint32_t>& ports, bool up) {
  for (uint32_t p : ports) net.set_link_up(p, up, net.now());
  net.run_until(net.now() + SwitchConfig{}.failure_detection + 1);
}

TEST(ClosRouting_Intact, EveryPortAsTheTablesOnFatTreesAndLeafSpines) {
  for (const Shape& shape : shapes()) {
    auto a = build(shape, true), b = build(shape, false);
    // Expect: recognised, no exceptions, every answer the tables'.
    EXPECT_EQ(a->routing().clos().exception_switches(), 0u) << shape.name();
    EXPECT_GT(expect_same_ports(*a, *b, shape.name()), 0);
    // Expect: the structured routes hold less than the tables (a record per switch).
    EXPECT_LT(a->ecmp_table_bytes(), b->ecmp_table_bytes()) << shape.name();
  }
}

TEST(ClosRouting_Failures, RandomFailedLinksEveryPortAsTheTables) {
  Rng rng(40);
  for (const Shape& shape : shapes()) {
    for (int set = 0; set < 6; ++set) {
      auto a = build(shape, true), b = build(shape, false);
      const int fabric = 1 + static_cast<int>(rng.below(set < 3 ? 2 : 6));
      const std::vector<uint32_t> down = draw_links(*a, rng, fabric, set % 2);
      set_links(*a, down, false);
      set_links(*b, down, false);
      const std::string what = absl::StrCat(shape.name(), ", failure set ", set);
      // Expect: exceptions made, and every answer the tables'.
      EXPECT_GT(a->routing().clos().exception_switches(), 0u) << what;
      EXPECT_GT(expect_same_ports(*a, *b, what), 0);
      // Half of them back up: the same again.
      const std::vector<uint32_t> back(down.begin(), down.begin() + (down.size() + 1) / 2);
      set_links(*a, back, true);
      set_links(*b, back, true);
      expect_same_ports(*a, *b, what + ", half restored");
    }
  }
}

// How many ToRs a failure sends to a table column: a ToR's up link only its own; an
// aggregation switch's core link the ToRs of its pod (the core reaches them through it).
TEST(ClosRouting_Failures, ExceptionsStaySmall) {
  auto a = build(Shape{.k = 8}, true), b = build(Shape{.k = 8}, false);
  const uint32_t hosts = 128;  // k^3 / 4
  // Link numbering (sim/topology.h): host links, then pod 0's ToR 0 - aggregation 0 link,
  // and after the pod's 16 ToR-aggregation links, aggregation 0 - core 0.
  const uint32_t tor_agg = 2 * hosts, agg_core = 2 * (hosts + 16);
  set_links(*a, {tor_agg}, false);
  set_links(*b, {tor_agg}, false);
  EXPECT_EQ(a->routing().clos().exception_columns(), 1u);
  EXPECT_EQ(a->routing().clos().exception_switches(), 2u);
  expect_same_ports(*a, *b, "ToR-aggregation down");
  set_links(*a, {tor_agg}, true);
  set_links(*b, {tor_agg}, true);
  set_links(*a, {agg_core}, false);
  set_links(*b, {agg_core}, false);
  EXPECT_EQ(a->routing().clos().exception_columns(), 4u);
  expect_same_ports(*a, *b, "aggregation-core down");
  set_links(*a, {agg_core}, true);
  set_links(*b, {agg_core}, true);
  // Expect: all up again, no exceptions left.
  EXPECT_EQ(a->routing().clos().exception_columns(), 0u);
  EXPECT_EQ(a->routing().clos().exception_switches(), 0u);
  EXPECT_GT(expect_same_ports(*a, *b, "restored"), 0);
}

// The routing graph of a network (as Network::compute_routes builds it), with the ports in
// `one_way_down` left out on their side only: links down in one direction.
RoutingGraph graph_of(const Network& net, const std::vector<uint32_t>& one_way_down) {
  RoutingGraph g;
  g.switches = static_cast<uint32_t>(net.num_switches());
  std::vector<bool> down(net.num_ports());
  for (uint32_t p : one_way_down) down[p] = true;
  for (uint32_t s = 0; s < g.switches; ++s) {
    g.first.push_back(static_cast<uint32_t>(g.links.size()));
    g.seeds.push_back(net.sw(s).seed);
    for (uint32_t p : net.node(net.switch_node(s)).ports) {
      const Port& peer = net.port(net.port(p).peer);
      if (!down[p] && !peer.at_host) g.links.push_back(RoutingGraph::Link{p, peer.owner});
    }
  }
  g.first.push_back(static_cast<uint32_t>(g.links.size()));
  for (uint32_t h = 0; h < net.num_hosts(); ++h) {
    const uint32_t q = net.port(net.host(h).port).peer;
    g.hosts.push_back(RoutingGraph::HostLink{net.port(q).owner, down[q] ? kNone : q});
  }
  return g;
}

TEST(ClosRouting_Failures, OneWayDownLinksEveryPortAsTheTables) {
  Rng rng(7);
  for (const Shape& shape : shapes()) {
    auto net = build(shape, true);
    for (int set = 0; set < 6; ++set) {
      std::vector<uint32_t> down = draw_links(*net, rng, 1 + static_cast<int>(rng.below(5)), set % 2);
      const RoutingGraph g = graph_of(*net, down);
      Routing structured, tables;
      RoutingConfig rc;
      ASSERT_TRUE(structured.build(g, rc).ok());
      rc.structured = false;
      ASSERT_TRUE(tables.build(g, rc).ok());
      ASSERT_TRUE(structured.structured());
      const std::string what = absl::StrCat(shape.name(), ", one-way set ", set);
      expect_same(
          g.switches, static_cast<uint32_t>(g.hosts.size()),
          [&](uint32_t s, uint32_t d, uint64_t h) { return structured.port(s, d, h); },
          [&](uint32_t s, uint32_t d, uint64_t h) { return tables.port(s, d, h); }, what);
    }
  }
}

// A 4-ary fat-tree wired in another order (cores before aggregation switches) is a fat-tree
// the numbering does not describe: routed by tables, and right.
TEST(ClosRouting_Recognise, OtherNumberingsAreLeftToTheTables) {
  Network net{NetworkConfig{}};
  std::vector<uint32_t> hosts, tors, aggs, cores;
  for (uint32_t i = 0; i < 16; ++i) hosts.push_back(net.add_host(absl::StrCat("h", i)));
  for (uint32_t i = 0; i < 8; ++i) tors.push_back(net.add_switch(absl::StrCat("t", i)));
  for (uint32_t i = 0; i < 4; ++i) cores.push_back(net.add_switch(absl::StrCat("c", i)));
  for (uint32_t i = 0; i < 8; ++i) aggs.push_back(net.add_switch(absl::StrCat("a", i)));
  for (uint32_t i = 0; i < 16; ++i) ASSERT_TRUE(net.connect(hosts[i], tors[i / 2], link()).ok());
  for (uint32_t pod = 0; pod < 4; ++pod) {
    for (uint32_t t = 0; t < 2; ++t)
      for (uint32_t a = 0; a < 2; ++a)
        ASSERT_TRUE(net.connect(tors[pod * 2 + t], aggs[pod * 2 + a], link()).ok());
    for (uint32_t a = 0; a < 2; ++a)
      for (uint32_t j = 0; j < 2; ++j)
        ASSERT_TRUE(net.connect(aggs[pod * 2 + a], cores[a * 2 + j], link()).ok());
  }
  ASSERT_TRUE(net.finalize().ok());
  EXPECT_FALSE(net.routing().structured());
  // A torus is no Clos either.
  Network ring{NetworkConfig{}};
  TorusConfig tc;
  tc.dims = {4};
  ASSERT_TRUE(build_torus(ring, tc).ok());
  EXPECT_FALSE(ring.routing().structured());
  // Non-minimal modes and dimension order keep the tables on a fat-tree.
  auto tree = build(Shape{.k = 4}, true);
  EXPECT_TRUE(tree->routing().structured());
  RoutingConfig rc;
  rc.mode = RoutingMode::kValiant;
  ASSERT_TRUE(tree->set_routing(rc).ok());
  EXPECT_FALSE(tree->routing().structured());
  rc.mode = RoutingMode::kMinimal;
  ASSERT_TRUE(tree->set_routing(rc).ok());
  EXPECT_TRUE(tree->routing().structured());
}

// Every host sends to host i + 5 (sprayed) over a fat-tree with links down: every counter of
// every port the same with either routing.
TEST(ClosRouting_Run, FailedLinksSameCountersEitherWay) {
  for (const bool spray : {false, true}) {
    std::unique_ptr<Network> nets[2] = {build(Shape{.k = 6}, true), build(Shape{.k = 6}, false)};
    std::vector<FlowRecord> rec[2];
    std::vector<std::unique_ptr<UdpApp>> apps[2];
    Rng rng(3);
    const std::vector<uint32_t> down = draw_links(*nets[0], rng, 4, 1);
    for (int n = 0; n < 2; ++n) {
      Network& net = *nets[n];
      set_links(net, down, false);
      const auto hosts = static_cast<uint32_t>(net.num_hosts());
      for (uint32_t h = 0; h < hosts; ++h) {
        apps[n].push_back(std::make_unique<UdpApp>(h, &rec[n], 4000));
        apps[n][h]->add_flow(UdpFlow{h, (h + 5) % hosts, 40'000, net.now(),
                                     static_cast<uint16_t>(0xC000 + h), spray});
      }
      for (uint32_t h = 0; h < hosts; ++h) net.attach(h, apps[n][h].get());
      net.run_until(net.now() + 2 * kMillisecond);
    }
    uint64_t frames = 0;
    for (uint32_t p = 0; p < nets[0]->num_ports(); ++p) {
      const PortStats& x = nets[0]->port_stats(p);
      const PortStats& y = nets[1]->port_stats(p);
      EXPECT_EQ(x.tx_frames, y.tx_frames) << p;
      EXPECT_EQ(x.tx_bytes, y.tx_bytes) << p;
      EXPECT_EQ(x.drops, y.drops) << p;
      frames += x.tx_frames;
    }
    EXPECT_EQ(nets[0]->events_processed(), nets[1]->events_processed());
    EXPECT_GT(frames, 0u);
  }
}

// Div24 against the division operator: every dividend below 2^24 for small and awkward
// divisors, seeded random ones for the rest of [1, 2^16).
TEST(ClosRouting_Div24, EqualsTheQuotient) {
  for (uint32_t d : {1u, 2u, 3u, 7u, 80u, 255u, 256u, 65535u}) {
    const Div24 f = Div24::of(d);
    for (uint32_t x = 0; x < (1u << 24); ++x) ASSERT_EQ(f.div(x), x / d) << x << " / " << d;
  }
  Rng rng(24);
  for (int i = 0; i < 2000; ++i) {
    const auto d = static_cast<uint32_t>(1 + rng.below((1u << 16) - 1));
    const Div24 f = Div24::of(d);
    for (int j = 0; j < 500; ++j) {
      const auto x = static_cast<uint32_t>(rng.below(1u << 24));
      ASSERT_EQ(f.div(x), x / d) << x << " / " << d;
    }
  }
}

}  // namespace
}  // namespace uet::sim
