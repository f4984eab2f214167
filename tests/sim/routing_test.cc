// Routing (sim/routing/): every host pair reached without a loop, minimal and dimension-order
// paths as long as the breadth-first distance, Valiant paths through their intermediate
// group, UGAL-L's choice by queue bytes; on a ring, a 2D torus, a small dragonfly and a
// fat-tree, with links failed; and whole runs in each mode delivering every byte.
#include "sim/routing/routing.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/network.h"
#include "sim/topology.h"
#include "sim/udp_app.h"
#include "route_walk.h"

namespace uet::sim {
namespace {

LinkConfig link(double gbps) {
  LinkConfig l;
  l.gbps = gbps;
  l.delay = 100 * kNanosecond;
  return l;
}

// ------------------------------------------------------------------ fabrics

// A built fabric and what the tests check it against.
struct Fabric {
  std::unique_ptr<Network> net = std::make_unique<Network>(NetworkConfig{});
  std::vector<uint8_t> port_class;  // by port: the dimension a torus link moves along
  std::vector<uint32_t> group;      // by switch: its dragonfly group
};

// Joins two nodes and records the class of both new ports.
void join(Fabric& f, uint32_t a, uint32_t b, uint8_t cls, double gbps = 100) {
  ASSERT_TRUE(f.net->connect(a, b, link(gbps)).ok());
  f.port_class.push_back(cls);
  f.port_class.push_back(cls);
}

// An X x Y torus of switches (a ring when Y = 1), `hosts` hosts on each; switch x + X * y.
// Port classes: 0 for links along x, 1 along y.
Fabric torus(uint32_t x_size, uint32_t y_size, uint32_t hosts = 1) {
  Fabric f;
  std::vector<uint32_t> sw;
  for (uint32_t i = 0; i < x_size * y_size; ++i)
    sw.push_back(f.net->add_switch(absl::StrCat("s", i)));
  for (uint32_t i = 0; i < x_size * y_size * hosts; ++i) {
    join(f, f.net->add_host(absl::StrCat("h", i)), sw[i / hosts], 0);
  }
  for (uint32_t y = 0; y < y_size; ++y) {
    for (uint32_t x = 0; x < x_size; ++x) {
      if (x_size > 1) join(f, sw[x + x_size * y], sw[(x + 1) % x_size + x_size * y], 0);
      if (y_size > 1) join(f, sw[x + x_size * y], sw[x + x_size * ((y + 1) % y_size)], 1);
    }
  }
  EXPECT_TRUE(f.net->finalize().ok());
  return f;
}

// A dragonfly (Kim et al. 2008, §3): g = a * h + 1 groups of `a` switches, each group a full
// mesh, one global link between every two groups (switch t / h of a group holds its t-th);
// `p` hosts per switch. Switch a * group + i.
Fabric dragonfly(uint32_t a, uint32_t h, uint32_t p, double host_gbps = 100) {
  Fabric f;
  const uint32_t g = a * h + 1;
  std::vector<uint32_t> sw;
  for (uint32_t i = 0; i < g * a; ++i) {
    sw.push_back(f.net->add_switch(absl::StrCat("s", i)));
    f.group.push_back(i / a);
  }
  for (uint32_t i = 0; i < g * a * p; ++i) {
    join(f, f.net->add_host(absl::StrCat("h", i)), sw[i / p], 0, host_gbps);
  }
  for (uint32_t grp = 0; grp < g; ++grp) {
    for (uint32_t i = 0; i < a; ++i) {
      for (uint32_t j = i + 1; j < a; ++j) join(f, sw[grp * a + i], sw[grp * a + j], 0);
    }
  }
  std::vector<uint32_t> used(g, 0);  // global links per group so far
  for (uint32_t i = 0; i < g; ++i) {
    for (uint32_t j = i + 1; j < g; ++j) {
      join(f, sw[i * a + used[i]++ / h], sw[j * a + used[j]++ / h], 1);
    }
  }
  EXPECT_TRUE(f.net->finalize().ok());
  EXPECT_TRUE(f.net->set_switch_groups(f.group).ok());
  return f;
}

Fabric fat_tree(uint32_t k) {
  Fabric f;
  FatTreeConfig c;
  c.k = k;
  EXPECT_TRUE(build_fat_tree(*f.net, c).ok());
  return f;
}

// ------------------------------------------------------------------ references

using test::tor_of;
using test::walk;
using test::Walk;

// Switch-to-switch hop counts over links that are up, from every switch (the plain way).
std::vector<std::vector<uint32_t>> switch_distances(const Network& net) {
  const auto n = static_cast<uint32_t>(net.num_switches());
  std::vector<std::vector<uint32_t>> dist(n, std::vector<uint32_t>(n, kNone));
  for (uint32_t from = 0; from < n; ++from) {
    std::vector<uint32_t> frontier{from};
    dist[from][from] = 0;
    for (size_t i = 0; i < frontier.size(); ++i) {
      for (uint32_t p : net.node(net.switch_node(frontier[i])).ports) {
        const Port& peer = net.port(net.port(p).peer);
        if (!net.port(p).up || peer.at_host || dist[from][peer.owner] != kNone) continue;
        dist[from][peer.owner] = dist[from][frontier[i]] + 1;
        frontier.push_back(peer.owner);
      }
    }
  }
  return dist;
}

constexpr int kHashes = 24;

uint64_t hash_of(int i) { return mix64(static_cast<uint64_t>(i), 0xF10A); }

// Every pair of hosts whose ToRs are connected, kHashes hashes: reached, loop-free and as
// long as the distance; the number of walks checked.
int expect_minimal_everywhere(const Network& net) {
  const auto dist = switch_distances(net);
  int walks = 0;
  for (uint32_t s = 0; s < net.num_hosts(); ++s) {
    for (uint32_t d = 0; d < net.num_hosts(); ++d) {
      const uint32_t a = tor_of(net, s), b = tor_of(net, d);
      if (s == d || a == kNone || b == kNone || !net.port(net.host(d).port).up ||
          !net.port(net.host(s).port).up || dist[a][b] == kNone) {
        continue;
      }
      for (int i = 0; i < kHashes; ++i) {
        const Walk w = walk(net, s, d, hash_of(i));
        EXPECT_TRUE(w.reached && !w.loop) << s << " -> " << d;
        EXPECT_EQ(w.ports.size(), dist[a][b]) << s << " -> " << d;
        ++walks;
      }
    }
  }
  return walks;
}

// Takes the links through `ports` down and runs past the detection delay (routes refreshed).
void fail_links(Network& net, const std::vector<uint32_t>& ports) {
  for (uint32_t p : ports) net.set_link_up(p, false, net.now());
  net.run_until(net.now() + SwitchConfig{}.failure_detection + 1);
}

// Switch `s`'s `skip`-th port to another switch.
uint32_t switch_port(const Network& net, uint32_t s, int skip = 0) {
  for (uint32_t p : net.node(net.switch_node(s)).ports) {
    if (!net.port(net.port(p).peer).at_host && skip-- == 0) return p;
  }
  return kNone;
}

// ------------------------------------------------------------------ minimal

TEST(Routing_Minimal, EveryPairReachedLoopFreeAtTheBreadthFirstDistance) {
  Fabric ring = torus(6, 1), grid = torus(4, 3), fly = dragonfly(2, 2, 1), tree = fat_tree(4);
  for (Fabric* f : {&ring, &grid, &fly, &tree}) {
    // Expect: every pair, every hash, a shortest path.
    EXPECT_GT(expect_minimal_everywhere(*f->net), 0);
  }
  // A ring cut once is a line; the torus and the dragonfly lose links, the fat-tree a core's.
  fail_links(*ring.net, {switch_port(*ring.net, 0)});
  fail_links(*grid.net, {switch_port(*grid.net, 0), switch_port(*grid.net, 5, 1)});
  fail_links(*fly.net, {switch_port(*fly.net, 0, 1), switch_port(*fly.net, 3)});
  fail_links(*tree.net, {switch_port(*tree.net, 16), switch_port(*tree.net, 0)});
  for (Fabric* f : {&ring, &grid, &fly, &tree}) {
    // Expect: still every pair, on the shortest paths that are left.
    EXPECT_GT(expect_minimal_everywhere(*f->net), 0);
  }
}

// On a torus minimal routing sprays over every dimension order; dimension order keeps the
// first dimension that differs, both ring directions when they tie.
TEST(Routing_DimensionOrder, FirstDimensionFirstAtTheBreadthFirstDistance) {
  Fabric f = torus(4, 3);
  Network& net = *f.net;
  // Host i is on switch i: (0,0) to (1,1) may go along x or y first.
  std::set<uint8_t> first_class;
  for (int i = 0; i < 64; ++i)
    first_class.insert(f.port_class[walk(net, 0, 5, hash_of(i)).ports[0]]);
  EXPECT_EQ(first_class, (std::set<uint8_t>{0, 1}));
  ASSERT_TRUE(net.set_port_classes(f.port_class).ok());
  RoutingConfig rc;
  rc.dimension_order = true;
  ASSERT_TRUE(net.set_routing(rc).ok());
  // Expect: every path shortest, its classes in order (x before y).
  EXPECT_GT(expect_minimal_everywhere(net), 0);
  for (uint32_t s = 0; s < net.num_hosts(); ++s) {
    for (uint32_t d = 0; d < net.num_hosts(); ++d) {
      for (int i = 0; i < 8; ++i) {
        const Walk w = walk(net, s, d, hash_of(i));
        for (size_t k = 1; k < w.ports.size(); ++k) {
          EXPECT_LE(f.port_class[w.ports[k - 1]], f.port_class[w.ports[k]]) << s << " -> " << d;
        }
      }
    }
  }
  // Expect: (0,0) to (2,0) is two hops either way round the x ring: both directions taken.
  std::set<uint32_t> second_switch;
  for (int i = 0; i < 64; ++i) second_switch.insert(walk(net, 0, 2, hash_of(i)).switches[1]);
  EXPECT_EQ(second_switch, (std::set<uint32_t>{1, 3}));
  // A failed x link: still shortest over what is left, still loop-free.
  fail_links(net, {switch_port(net, 0), switch_port(net, 6, 1)});
  EXPECT_GT(expect_minimal_everywhere(net), 0);
}

TEST(Routing_Config, BadGroupsClassesAndModesAreRefusedByName) {
  Fabric f = dragonfly(2, 2, 1);
  Network& net = *f.net;
  EXPECT_EQ(net.set_switch_groups({0, 1}).code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint32_t> gap(net.num_switches(), 0);
  gap[1] = 2;  // group 1 empty
  const absl::Status s = net.set_switch_groups(gap);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("group 1 has no switch"), std::string::npos) << s;
  EXPECT_FALSE(net.set_port_classes({1, 2, 3}).ok());
  RoutingConfig rc;
  rc.dimension_order = true;  // no classes given
  EXPECT_EQ(net.set_routing(rc).code(), absl::StatusCode::kFailedPrecondition);
  rc.dimension_order = false;
  rc.ugal_bias_bytes = uint64_t{1} << 40;
  EXPECT_NE(net.set_routing(rc).message().find("ugal_bias_bytes"), std::string::npos);
  rc.ugal_bias_bytes = 0;
  rc.ugal_signal = static_cast<UgalSignal>(5);
  EXPECT_NE(net.set_routing(rc).message().find("ugal_signal"), std::string::npos);
  rc.ugal_signal = UgalSignal::kDownstream;
  rc.mode = static_cast<RoutingMode>(7);
  EXPECT_FALSE(net.set_routing(rc).ok());
}

// ------------------------------------------------------------------ Valiant

// Every pair and hash reached without a loop; where the first switch is neither the
// destination's ToR nor in the intermediate group, the path enters that group and is
// minimal to it and minimal from where it entered. Returns how many paths were longer than
// minimal.
int expect_valiant_everywhere(const Network& net) {
  const auto dist = switch_distances(net);
  const Routing& r = net.routing();
  int longer = 0;
  for (uint32_t s = 0; s < net.num_hosts(); ++s) {
    for (uint32_t d = 0; d < net.num_hosts(); ++d) {
      const uint32_t a = tor_of(net, s), b = tor_of(net, d);
      if (s == d || dist[a][b] == kNone) continue;
      for (int i = 0; i < kHashes; ++i) {
        const uint64_t h = hash_of(i);
        const Walk w = walk(net, s, d, h);
        EXPECT_TRUE(w.reached && !w.loop) << s << " -> " << d;
        if (a == b || r.group_of(a) == r.via_group(h)) continue;
        size_t k = 0;  // where the path enters the intermediate group
        while (k < w.switches.size() && r.group_of(w.switches[k]) != r.via_group(h)) ++k;
        if (k == w.switches.size()) {
          ADD_FAILURE() << s << " -> " << d << " misses its intermediate";
          continue;
        }
        uint32_t to_group = kNone;
        for (uint32_t v = 0; v < net.num_switches(); ++v) {
          if (r.group_of(v) == r.via_group(h)) to_group = std::min(to_group, dist[a][v]);
        }
        EXPECT_EQ(k, to_group);
        EXPECT_EQ(w.ports.size(), k + dist[w.switches[k]][b]);
        longer += w.ports.size() > dist[a][b];
      }
    }
  }
  return longer;
}

TEST(Routing_Valiant, PathsPassTheirIntermediateGroupThenGoMinimally) {
  Fabric ring = torus(6, 1), grid = torus(4, 3), fly = dragonfly(2, 2, 1), tree = fat_tree(4);
  RoutingConfig rc;
  rc.mode = RoutingMode::kValiant;
  for (Fabric* f : {&ring, &grid, &fly, &tree}) {
    ASSERT_TRUE(f->net->set_routing(rc).ok());
    // Expect: the intermediate group is a dragonfly group; else every switch its own.
    EXPECT_EQ(f->net->routing().groups(), f == &fly ? 5u : f->net->num_switches());
    // Expect: every pair through its intermediate; some paths longer than minimal.
    EXPECT_GT(expect_valiant_everywhere(*f->net), 0);
  }
  fail_links(*ring.net, {switch_port(*ring.net, 2)});
  fail_links(*grid.net, {switch_port(*grid.net, 0), switch_port(*grid.net, 7, 1)});
  fail_links(*fly.net, {switch_port(*fly.net, 0, 1), switch_port(*fly.net, 5, 2)});
  fail_links(*tree.net, {switch_port(*tree.net, 16), switch_port(*tree.net, 3)});
  for (Fabric* f : {&ring, &grid, &fly, &tree}) EXPECT_GT(expect_valiant_everywhere(*f->net), 0);
}

TEST(Routing_Valiant, DimensionOrderOnBothLegs) {
  Fabric f = torus(4, 3);
  Network& net = *f.net;
  ASSERT_TRUE(net.set_port_classes(f.port_class).ok());
  RoutingConfig rc;
  rc.mode = RoutingMode::kValiant;
  rc.dimension_order = true;
  ASSERT_TRUE(net.set_routing(rc).ok());
  EXPECT_GT(expect_valiant_everywhere(net), 0);
  // Expect: classes in order up to the intermediate, and again after it.
  for (int i = 0; i < kHashes; ++i) {
    const uint64_t h = hash_of(i);
    const Walk w = walk(net, 0, 7, h);
    size_t k = 0;
    while (net.routing().group_of(w.switches[k]) != net.routing().via_group(h) &&
           k + 1 < w.switches.size()) {
      ++k;
    }
    for (size_t j = 1; j < w.ports.size(); ++j) {
      if (j != k) {
        EXPECT_LE(f.port_class[w.ports[j - 1]], f.port_class[w.ports[j]]);
      }
    }
  }
}

// ------------------------------------------------------------------ UGAL

TEST(Routing_Ugal, RuleWeighsQueueBytesByHops) {
  // Expect: minimal on a tie and within the bias; non-minimal past it.
  EXPECT_FALSE(ugal_detours(0, 3, 0, 5, 0));
  EXPECT_FALSE(ugal_detours(5000, 3, 3000, 5, 0));  // 15000 <= 15000
  EXPECT_TRUE(ugal_detours(5001, 3, 3000, 5, 0));
  EXPECT_FALSE(ugal_detours(5001, 3, 3000, 5, 4096));
  EXPECT_TRUE(ugal_detours(6400, 3, 0, 5, 4096));
}

// At a first switch, a destination and hash whose minimal and Valiant ports differ: minimal
// with idle queues, Valiant with a loaded minimal port, minimal again with the Valiant port
// loaded as much.
TEST(Routing_Ugal, FirstSwitchDetoursWhenTheMinimalPortIsLoaded) {
  Fabric f = dragonfly(2, 2, 1);
  Network& net = *f.net;
  RoutingConfig rc;
  rc.mode = RoutingMode::kUgal;
  ASSERT_TRUE(net.set_routing(rc).ok());
  const Routing& r = net.routing();
  int cases = 0;
  for (uint32_t d = 2; d < net.num_hosts(); ++d) {
    for (int i = 0; i < kHashes; ++i) {
      const uint64_t h = hash_of(i);
      const uint32_t via = r.via_group(h);
      if (via == 0 || via == f.group[tor_of(net, d)]) continue;
      const uint32_t min_port = r.port(0, d, h);
      uint8_t probe = RouteState::kDecided | RouteState::kDetour;
      const uint32_t via_port = r.port_stateful(0, d, h, probe);
      if (min_port == via_port) continue;
      ++cases;
      const auto idle = [](uint32_t) -> uint64_t { return 0; };
      const auto loaded = [&](uint32_t p) -> uint64_t { return p == min_port ? 200'000 : 0; };
      const auto both = [&](uint32_t p) -> uint64_t {
        return p == min_port || p == via_port ? 200'000 : 0;
      };
      EXPECT_EQ(r.decide(0, d, h, idle), RouteState::kDecided);
      EXPECT_EQ(r.decide(0, d, h, loaded), RouteState::kDecided | RouteState::kDetour);
      EXPECT_EQ(r.decide(0, d, h, both), RouteState::kDecided);
      // Expect: the network asks its idle queues: minimal; the walk is the minimal path.
      uint8_t state = 0;
      EXPECT_EQ(net.route_port(0, d, h, state), min_port);
      EXPECT_EQ(walk(net, 0, d, h).ports.size(), switch_distances(net)[0][tor_of(net, d)]);
    }
  }
  EXPECT_GT(cases, 10);
}

// ------------------------------------------------------------------ whole runs

struct RunResult {
  uint64_t sent = 0, received = 0, drops = 0;
  std::map<uint32_t, uint64_t> global_tx;  // by global (class 1) switch port: frames sent
};

// Each host sends `bytes` to host (i + shift) mod n, sprayed or on one source port, and the
// run goes until every flow is done.
RunResult run_flows(Fabric& f, uint64_t bytes, uint32_t shift, bool spray,
                    const std::vector<uint32_t>& senders = {}) {
  Network& net = *f.net;
  const auto n = static_cast<uint32_t>(net.num_hosts());
  std::vector<FlowRecord> rec;
  std::vector<std::unique_ptr<UdpApp>> apps;
  for (uint32_t h = 0; h < n; ++h) apps.push_back(std::make_unique<UdpApp>(h, &rec, 4000));
  std::vector<uint32_t> from = senders;
  if (from.empty()) {
    for (uint32_t h = 0; h < n; ++h) from.push_back(h);
  }
  for (uint32_t i = 0; i < from.size(); ++i) {
    const uint32_t s = from[i];
    apps[s]->add_flow(
        UdpFlow{i, (s + shift) % n, bytes, 0, static_cast<uint16_t>(0xC000 + s), spray});
  }
  for (uint32_t h = 0; h < n; ++h) net.attach(h, apps[h].get());
  net.run_until(net.now() + 10 * kMillisecond);
  RunResult r;
  for (const FlowRecord& fr : rec) {
    r.sent += fr.sent;
    r.received += fr.received;
  }
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    r.drops += net.port(p).stats.drops + net.port_stats(p).lossless_drops;
    if (!f.port_class.empty() && f.port_class[p] == 1 && net.port(p).stats.tx_frames > 0) {
      r.global_tx[p] = net.port(p).stats.tx_frames;
    }
  }
  return r;
}

TEST(Routing_Run, EveryModeDeliversEveryByteOnEveryFabric) {
  for (const RoutingMode mode :
       {RoutingMode::kMinimal, RoutingMode::kValiant, RoutingMode::kUgal}) {
    for (int shape = 0; shape < 3; ++shape) {
      for (const bool spray : {false, true}) {
        Fabric f = shape == 0 ? torus(4, 3, 2) : shape == 1 ? dragonfly(2, 2, 2) : fat_tree(4);
        RoutingConfig rc;
        rc.mode = mode;
        if (shape == 0) {
          ASSERT_TRUE(f.net->set_port_classes(f.port_class).ok());
          rc.dimension_order = true;
        }
        ASSERT_TRUE(f.net->set_routing(rc).ok());
        const RunResult r = run_flows(f, 60'000, 5, spray);
        // Expect: every byte sent arrived, nothing dropped.
        EXPECT_EQ(r.sent, 60'000u * f.net->num_hosts()) << int(mode) << shape << spray;
        EXPECT_EQ(r.received, r.sent) << int(mode) << shape << spray;
        EXPECT_EQ(r.drops, 0u) << int(mode) << shape << spray;
      }
    }
  }
}

// One flow from group 0 to group 1 of the dragonfly: minimal routing keeps it on the one
// global link between them; Valiant spreads its sprayed packets over intermediates (the EV
// picks the path) and keeps a fixed source port on one.
TEST(Routing_Run, SprayedValiantSpreadsOverIntermediatesAFixedPortKeepsOne) {
  RoutingConfig rc;
  rc.mode = RoutingMode::kValiant;
  size_t minimal_links = 0, fixed_links = 0, sprayed_links = 0;
  for (int run = 0; run < 3; ++run) {
    Fabric f = dragonfly(2, 2, 1);
    if (run > 0) {
      ASSERT_TRUE(f.net->set_routing(rc).ok());
    }
    // Host 0 (group 0) to host 2 (group 1).
    const RunResult r = run_flows(f, 400'000, 2, /*spray=*/run == 2, {0});
    EXPECT_EQ(r.received, 400'000u);
    (run == 0 ? minimal_links : run == 1 ? fixed_links : sprayed_links) = r.global_tx.size();
  }
  // Expect: one global link, then at most two (to an intermediate and on), then most of them.
  EXPECT_EQ(minimal_links, 1u);
  EXPECT_LE(fixed_links, 2u);
  EXPECT_GE(sprayed_links, 6u);
}

// Hosts of switch 0 (group 0) send to group 1 at four times the fabric's rate: UGAL-L's
// first switch sees the minimal port's queue and detours; one host at the fabric's rate
// leaves every queue empty and stays minimal.
TEST(Routing_Run, UgalDetoursUnderLoadAndStaysMinimalWhenIdle) {
  RoutingConfig rc;
  rc.mode = RoutingMode::kUgal;
  Fabric loaded = dragonfly(2, 2, 2, /*host_gbps=*/400);
  ASSERT_TRUE(loaded.net->set_routing(rc).ok());
  const RunResult busy = run_flows(loaded, 300'000, 4, /*spray=*/true, {0, 1});
  Fabric idle = dragonfly(2, 2, 2);
  ASSERT_TRUE(idle.net->set_routing(rc).ok());
  const RunResult calm = run_flows(idle, 300'000, 4, /*spray=*/true, {0});
  // Expect: every byte delivered both times; the loaded run uses global links beyond the
  // one minimal link between groups 0 and 1, the idle run only that one.
  EXPECT_EQ(busy.received, 600'000u);
  EXPECT_EQ(busy.drops, 0u);
  EXPECT_GT(busy.global_tx.size(), 2u);
  EXPECT_EQ(calm.received, 300'000u);
  EXPECT_EQ(calm.global_tx.size(), 1u);
}

// Lossy, hosts 0 (switch 0) and 2 (switch 1) of group 0 both send to group 3, whose global
// link is switch 1's: it is offered twice its rate, while switch 0's local queue towards
// switch 1 stays near empty (one host's rate on a link of that rate). Reading its own queue,
// switch 0 sends every frame of host 0 minimally over that local link; reading what switch 1
// holds from it too, it detours some of them out through its own global links.
TEST(Routing_Run, UgalDownstreamSignalSeesTheNextSwitchsBuffer) {
  struct Counts {
    uint64_t from_host0 = 0;     // frames host 0's NIC sent
    uint64_t to_switch1 = 0;     // frames switch 0 sent over its link to switch 1
    uint64_t hot_queue = 0;      // the most any port of switch 1 queued
  };
  const auto run = [](UgalSignal signal) {
    Fabric f = dragonfly(2, 2, 2);
    Network& net = *f.net;
    RoutingConfig rc;
    rc.mode = RoutingMode::kUgal;
    rc.ugal_signal = signal;
    EXPECT_TRUE(net.set_routing(rc).ok());
    const RunResult r = run_flows(f, 2'000'000, 12, /*spray=*/true, {0, 2});
    EXPECT_GT(r.received, 0u);
    Counts c;
    for (uint32_t p = 0; p < net.num_ports(); ++p) {
      const Port& q = net.port(p);
      if (q.at_host) {
        if (q.owner == 0) c.from_host0 = q.stats.tx_frames;
        continue;
      }
      const Port& peer = net.port(q.peer);
      if (q.owner == 0 && !peer.at_host && peer.owner == 1) c.to_switch1 = q.stats.tx_frames;
      if (q.owner == 1) c.hot_queue = std::max(c.hot_queue, q.stats.max_queue_bytes);
    }
    return c;
  };
  const Counts local = run(UgalSignal::kQueue);
  const Counts down = run(UgalSignal::kDownstream);
  // Expect: switch 1's global queue fills both times; every frame of host 0 on the local
  // link with the queue signal, a tenth or more of them elsewhere with the downstream one.
  EXPECT_GT(local.hot_queue, 32'000u);
  EXPECT_GT(down.hot_queue, 4'096u);
  EXPECT_GT(local.from_host0, 400u);
  EXPECT_EQ(local.to_switch1, local.from_host0);
  EXPECT_GT(down.from_host0, 400u);
  EXPECT_LT(down.to_switch1 * 10, down.from_host0 * 9) << down.to_switch1 << " of " << down.from_host0;
}

}  // namespace
}  // namespace uet::sim
