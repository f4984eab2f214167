// The AI/HPC topology builders (sim/topology.h): shape refusals, sizes, layouts, and, on small
// instances exhaustively, that every ordered pair of hosts has a loop-free route of exactly the
// minimal hop count (the family's formula), before and after link failures.
#include "sim/topology.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace uet::sim {
namespace {

// The switch a host's NIC link reaches.
uint32_t tor(const Network& net, uint32_t h) {
  return net.port(net.port(net.host(h).port).peer).owner;
}

// Follows ecmp_port() from host a's ToR towards host b with one flow hash: the switch-to-switch
// hops, or -1 with `why` when there is no route, a switch is revisited or the wrong host is
// reached.
int walk(const Network& net, uint32_t a, uint32_t b, uint64_t hash, std::string* why) {
  std::vector<bool> seen(net.num_switches(), false);
  uint32_t sw = tor(net, a);
  for (int hops = 0;; ++hops) {
    if (seen[sw]) {
      *why = absl::StrCat("revisits switch ", sw);
      return -1;
    }
    seen[sw] = true;
    const uint32_t out = net.ecmp_port(sw, b, hash);
    if (out == kNone) {
      *why = absl::StrCat("no route at switch ", sw);
      return -1;
    }
    const Port& peer = net.port(net.port(out).peer);
    if (peer.at_host) {
      if (peer.owner == b) return hops;
      *why = absl::StrCat("reached host ", peer.owner);
      return -1;
    }
    sw = peer.owner;
  }
}

// Every ordered pair, with several hashes: the route's hops equal expected(a, b); a negative
// expectation means the pair must have no route.
void expect_routes(const Network& net, const std::function<int(uint32_t, uint32_t)>& expected) {
  int failures = 0;
  for (uint32_t a = 0; a < net.num_hosts() && failures < 5; ++a) {
    for (uint32_t b = 0; b < net.num_hosts() && failures < 5; ++b) {
      if (a == b) continue;
      const int want = expected(a, b);
      for (uint64_t hash :
           {uint64_t{1}, uint64_t{0x9E37}, uint64_t{0xDEADBEEF12345}, uint64_t{77}}) {
        std::string why;
        const int got = walk(net, a, b, hash * (a * 131 + b + 1), &why);
        if (got != want) {
          ADD_FAILURE() << "host " << a << " -> " << b << ": " << got << " hops, want " << want
                        << " " << why;
          ++failures;
          break;
        }
      }
    }
  }
}

// Switch-to-switch distances over links that are up, breadth first from `from`.
std::vector<int> bfs(const Network& net, uint32_t from) {
  std::vector<int> dist(net.num_switches(), -1);
  std::vector<uint32_t> q{from};
  dist[from] = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    for (uint32_t p : net.node(net.switch_node(q[i])).ports) {
      const Port& peer = net.port(net.port(p).peer);
      if (!net.port(p).up || peer.at_host || dist[peer.owner] >= 0) continue;
      dist[peer.owner] = dist[q[i]] + 1;
      q.push_back(peer.owner);
    }
  }
  return dist;
}

// Fails `n` switch-to-switch links (every `step`-th such link, both ends) and waits for the
// switches to see it; then every pair routes minimally over what is left (-1 where the graph
// fell apart).
void fail_and_expect_minimal(Network& net, uint32_t n, uint32_t step) {
  uint32_t seen = 0, failed = 0;
  for (uint32_t p = 0; p < net.num_ports() && failed < n; p += 2) {
    if (net.port(p).at_host || net.port(p + 1).at_host || seen++ % step != 0) continue;
    net.set_link_up(p, false, net.now());
    net.set_link_up(p + 1, false, net.now());
    ++failed;
  }
  ASSERT_EQ(failed, n);
  net.run_until(net.now() + SwitchConfig{}.failure_detection + 1);
  std::vector<std::vector<int>> dist;
  for (uint32_t s = 0; s < net.num_switches(); ++s) dist.push_back(bfs(net, s));
  expect_routes(net, [&](uint32_t a, uint32_t b) { return dist[tor(net, a)][tor(net, b)]; });
}

void expect_size(const Network& net, const TopologySize& s) {
  EXPECT_EQ(net.num_hosts(), s.hosts);
  EXPECT_EQ(net.num_switches(), s.switches);
  EXPECT_EQ(net.num_ports(), 2 * s.links);
  EXPECT_EQ(s.links, s.hosts + s.fabric_links);
}

// ----- dragonfly

// The consecutive arrangement, as sim/topology.h words it: router (in its group) of group i's
// n-th global link towards group j.
uint32_t global_router(const DragonflyConfig& c, uint32_t i, uint32_t j, uint32_t n) {
  const uint32_t g = c.groups();
  return (n * (g - 1) + (j < i ? j : j - 1)) / c.h;
}

// Router-to-router hops from the documented wiring alone (all-to-all groups, the consecutive
// global arrangement): 1 over a link, 2 through a common neighbour (in either group, or a third
// group over two global links, which shortest paths take where it saves a local hop), else 3
// (local, global, local).
std::vector<std::vector<int>> dragonfly_hops(const DragonflyConfig& c) {
  const uint32_t routers = c.groups() * c.a;
  std::vector<std::vector<bool>> adj(routers, std::vector<bool>(routers, false));
  for (uint32_t r = 0; r < routers; ++r) {
    for (uint32_t q = 0; q < routers; ++q) adj[r][q] = r != q && r / c.a == q / c.a;
  }
  for (uint32_t i = 0; i < c.groups(); ++i) {
    for (uint32_t j = 0; j < c.groups(); ++j) {
      if (i == j) continue;
      for (uint32_t n = 0; n < c.a * c.h / (c.groups() - 1); ++n) {
        const uint32_t r = i * c.a + global_router(c, i, j, n),
                       q = j * c.a + global_router(c, j, i, n);
        adj[r][q] = adj[q][r] = true;
      }
    }
  }
  std::vector<std::vector<int>> hops(routers, std::vector<int>(routers, 3));
  for (uint32_t r = 0; r < routers; ++r) {
    for (uint32_t q = 0; q < routers; ++q) {
      if (r == q) {
        hops[r][q] = 0;
      } else if (adj[r][q]) {
        hops[r][q] = 1;
      } else {
        for (uint32_t y = 0; y < routers; ++y) {
          if (adj[r][y] && adj[y][q]) hops[r][q] = 2;
        }
      }
    }
  }
  return hops;
}

// Expect: Kim et al.'s balanced dragonfly (a = 2p = 2h, g = a*h + 1) and one with fewer groups
// (two global links per pair) route every pair in at most 3 hops, exactly the documented
// wiring's minimum; the layout names each router's group; with 6 failed links every pair still has
// a minimal route over what is left.
TEST(Topology_Dragonfly, EveryPairMinimalWithinThreeHops) {
  for (uint32_t g : {0u, 5u}) {
    DragonflyConfig c;
    c.p = 1;
    c.a = 4;
    c.h = 2;
    c.g = g;
    Network net(NetworkConfig{});
    TopologyLayout layout;
    ASSERT_TRUE(build_dragonfly(net, c, &layout).ok());
    expect_size(net, dragonfly_size(c));
    ASSERT_EQ(layout.group.size(), net.num_switches());
    EXPECT_EQ(layout.groups, c.groups());
    for (uint32_t s = 0; s < net.num_switches(); ++s) EXPECT_EQ(layout.group[s], s / c.a);
    const std::vector<std::vector<int>> hops = dragonfly_hops(c);
    expect_routes(net, [&](uint32_t a, uint32_t b) { return hops[a / c.p][b / c.p]; });
    fail_and_expect_minimal(net, 6, 7);
  }
}

// Expect: Dragonfly+ routes 0 hops under one leaf, 2 within a group, 3 between groups; the
// group of each leaf and spine.
TEST(Topology_DragonflyPlus, LeafSpineGroupsTwoHopsInsideThreeAcross) {
  DragonflyPlusConfig c;
  c.leaves = 3;
  c.spines = 2;
  c.hosts_per_leaf = 2;
  c.h = 2;  // 5 groups
  Network net(NetworkConfig{});
  TopologyLayout layout;
  ASSERT_TRUE(build_dragonfly_plus(net, c, &layout).ok());
  expect_size(net, dragonfly_plus_size(c));
  EXPECT_EQ(net.num_hosts(), 5u * 3 * 2);
  for (uint32_t s = 0; s < net.num_switches(); ++s) EXPECT_EQ(layout.group[s], s / 5);
  expect_routes(net, [&](uint32_t a, uint32_t b) {
    const uint32_t la = a / 2, lb = b / 2;
    return la == lb ? 0 : la / 3 == lb / 3 ? 2 : 3;
  });
  fail_and_expect_minimal(net, 4, 5);
}

// ----- torus, mesh, hypercube

int ring_hops(int dx, int k, bool wrap) {
  dx = std::abs(dx);
  return wrap ? std::min(dx, k - dx) : dx;
}

// Expect: on a 4x4x4 torus, a 5x3 mesh and 2x3 / 3x2x2 tori (dimensions of 2: one link, not
// two), every pair routes in sum over d of min(|dx|, k - |dx|) hops (a mesh: |dx|); each
// switch port's dimension and direction lead to the neighbour one step along that dimension.
TEST(Topology_Torus, HopsAreTheSumOverDimensionsOfTheRingDistance) {
  struct Case {
    std::vector<uint32_t> dims;
    bool wrap;
    uint32_t per_switch;
  };
  for (const Case& k : {Case{{4, 4, 4}, true, 1}, Case{{5, 3}, false, 2}, Case{{2, 3}, true, 1},
                        Case{{3, 2, 2}, true, 2}}) {
    TorusConfig c;
    c.dims = k.dims;
    c.wraparound = k.wrap;
    c.hosts_per_switch = k.per_switch;
    Network net(NetworkConfig{});
    TopologyLayout layout;
    ASSERT_TRUE(build_torus(net, c, &layout).ok());
    expect_size(net, torus_size(c));
    auto coord = [&](uint32_t s, size_t d) {
      for (size_t i = 0; i < d; ++i) s /= c.dims[i];
      return static_cast<int>(s % c.dims[d]);
    };
    expect_routes(net, [&](uint32_t a, uint32_t b) {
      int hops = 0;
      for (size_t d = 0; d < c.dims.size(); ++d) {
        hops += ring_hops(coord(tor(net, a), d) - coord(tor(net, b), d),
                          static_cast<int>(c.dims[d]), k.wrap);
      }
      return hops;
    });
    ASSERT_EQ(layout.port_dim.size(), net.num_ports());
    for (uint32_t p = 0; p < net.num_ports(); ++p) {
      const Port& me = net.port(p);
      const Port& peer = net.port(me.peer);
      if (me.at_host || peer.at_host) {
        EXPECT_EQ(layout.port_dim[p], TopologyLayout::kNoDim);
        continue;
      }
      const size_t d = layout.port_dim[p];
      ASSERT_LT(d, c.dims.size());
      const int kd = static_cast<int>(c.dims[d]);
      EXPECT_EQ((coord(me.owner, d) + layout.port_dir[p] + kd) % kd, coord(peer.owner, d)) << p;
      for (size_t e = 0; e < c.dims.size(); ++e) {
        if (e != d) {
          EXPECT_EQ(coord(me.owner, e), coord(peer.owner, e));
        }
      }
      EXPECT_EQ(layout.group[me.owner], static_cast<uint32_t>(coord(me.owner, c.dims.size() - 1)));
    }
    fail_and_expect_minimal(net, 3, 4);
  }
}

// Expect: a 4-cube with two hosts per switch routes in the Hamming distance of the switches;
// port p's dimension d leads to s ^ (1 << d), +1 from the switch whose bit is clear.
TEST(Topology_Hypercube, HopsAreTheHammingDistance) {
  HypercubeConfig c;
  c.dim = 4;
  c.hosts_per_switch = 2;
  Network net(NetworkConfig{});
  TopologyLayout layout;
  ASSERT_TRUE(build_hypercube(net, c, &layout).ok());
  expect_size(net, hypercube_size(c));
  expect_routes(net,
                [&](uint32_t a, uint32_t b) { return std::popcount(tor(net, a) ^ tor(net, b)); });
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    const Port& me = net.port(p);
    if (me.at_host || net.port(me.peer).at_host) continue;
    const uint32_t d = layout.port_dim[p];
    EXPECT_EQ(net.port(me.peer).owner, me.owner ^ (1u << d));
    EXPECT_EQ(layout.port_dir[p], (me.owner >> d & 1) == 0 ? 1 : -1);
  }
  fail_and_expect_minimal(net, 5, 3);
}

// ----- rail-optimised

// Expect: joined planes route every pair (0 hops under one leaf, else leaf-spine-leaf: 2);
// kept apart, pairs on one rail route in 0 or 2 hops and pairs on different rails have no
// route at all; leaves are grouped by block of servers, spines in none.
TEST(Topology_Rail, JoinedPlanesRouteAcrossRailsApartOnlyWithin) {
  for (bool joined : {true, false}) {
    RailConfig c;
    c.servers = 6;
    c.gpus_per_server = 4;
    c.servers_per_leaf = 2;
    c.spines = 2;
    c.planes_joined = joined;
    Network net(NetworkConfig{});
    TopologyLayout layout;
    ASSERT_TRUE(build_rail(net, c, &layout).ok());
    expect_size(net, rail_size(c));
    EXPECT_EQ(net.num_switches(), 3u * 4 + (joined ? 2 : 8));
    for (uint32_t h = 0; h < net.num_hosts(); ++h) {
      const uint32_t leaf = tor(net, h);
      EXPECT_EQ(leaf, (h / 4) / 2 * 4 + h % 4) << h;  // block-major, rail within
      EXPECT_EQ(layout.group[leaf], (h / 4) / 2);
    }
    EXPECT_EQ(layout.group.back(), kNone);
    expect_routes(net, [&](uint32_t a, uint32_t b) {
      if (!joined && a % 4 != b % 4) return -1;
      return tor(net, a) == tor(net, b) ? 0 : 2;
    });
  }
}

// ----- refusals

// Expect: each check names the family, the field and its range.
TEST(Topology_Checks, RefusalsNameTheFieldAndRange) {
  auto message = [](const absl::Status& s) { return std::string(s.message()); };
  DragonflyConfig df;
  df.a = 0;
  EXPECT_EQ(message(check_dragonfly(df)), "dragonfly: routers per group a 0 out of range: 1..256");
  df.a = 4;
  df.g = 4;  // g - 1 = 3 does not divide a*h = 8
  EXPECT_NE(message(check_dragonfly(df)).find("g - 1 must divide a*h = 8"), std::string::npos);
  df.g = 10;
  EXPECT_EQ(message(check_dragonfly(df)), "dragonfly: groups g 10 out of range: 2..9");
  df.g = 0;
  df.global_link.gbps = 0;
  EXPECT_NE(message(check_dragonfly(df)).find("global links: link rate 0"), std::string::npos);
  DragonflyPlusConfig dp;
  dp.h = 300;
  EXPECT_EQ(message(check_dragonfly_plus(dp)),
            "dragonfly+: global links per spine h 300 out of range: 1..256");
  TorusConfig t;
  t.dims = {4, 1};
  EXPECT_EQ(message(check_torus(t)), "torus: dimension 1 size 1 out of range: 2..256");
  t.dims = {2, 2, 2, 2};
  EXPECT_EQ(message(check_torus(t)), "torus: dimensions 4 out of range: 1..3");
  t.dims = {256, 256, 256};
  EXPECT_NE(message(check_torus(t)).find("16777216 hosts, at most"), std::string::npos);
  HypercubeConfig hc;
  hc.dim = 17;
  EXPECT_EQ(message(check_hypercube(hc)), "hypercube: dimension 17 out of range: 1..16");
  RailConfig r;
  r.gpus_per_server = 65;
  EXPECT_EQ(message(check_rail(r)), "rail: gpus per server (rails) 65 out of range: 1..64");
  Network net(NetworkConfig{});
  EXPECT_FALSE(build_rail(net, r).ok());
  EXPECT_EQ(net.num_hosts(), 0u);  // refused before a node is added
}

}  // namespace
}  // namespace uet::sim
