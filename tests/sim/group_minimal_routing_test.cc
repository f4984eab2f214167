// Group-minimal routing (RoutingConfig::group_minimal) on dragonflies built by
// topology_dragonfly.cc: every inter-group route crosses the fewest global links there are
// (exactly one on an intact dragonfly, Kim et al. ISCA 2008 §4 MIN) and then the fewest
// local ones, Valiant's at most two, all loop-free, with links failed too; and the same checks
// find two-global-link routes when group-minimal is off (plain shortest paths).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "sim/network.h"
#include "sim/routing/routing.h"
#include "sim/topology.h"
#include "route_walk.h"
#include "test_fabrics.h"

namespace uet::sim {
namespace {

using Fly = test::Built;
using test::dragonfly;
using test::dragonfly_plus;
using test::tor_of;

// The least (global links, local links) from every switch to every switch over links that
// are up, in the test's own way: Dijkstra on pairs compared in that order.
using Cost = std::pair<uint32_t, uint32_t>;
std::vector<std::vector<Cost>> lexicographic(const Fly& f) {
  const Network& net = *f.net;
  const auto n = static_cast<uint32_t>(net.num_switches());
  constexpr Cost kFar{UINT32_MAX, UINT32_MAX};
  std::vector<std::vector<Cost>> cost(n, std::vector<Cost>(n, kFar));
  for (uint32_t from = 0; from < n; ++from) {
    using Item = std::pair<Cost, uint32_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> open;
    open.push({cost[from][from] = Cost{0, 0}, from});
    while (!open.empty()) {
      const auto [c, s] = open.top();
      open.pop();
      if (c != cost[from][s]) continue;
      for (uint32_t p : net.node(net.switch_node(s)).ports) {
        const Port& peer = net.port(net.port(p).peer);
        if (!net.port(p).up || peer.at_host) continue;
        const bool global = f.layout.group[s] != f.layout.group[peer.owner];
        const Cost next{c.first + global, c.second + !global};
        if (next < cost[from][peer.owner]) open.push({cost[from][peer.owner] = next, peer.owner});
      }
    }
  }
  return cost;
}

// A walk's links between groups and inside one.
struct Links {
  uint32_t global = 0, local = 0;
};

Links links(const Fly& f, const test::Walk& w) {
  Links l;
  for (size_t i = 1; i < w.switches.size(); ++i)
    (f.layout.group[w.switches[i - 1]] != f.layout.group[w.switches[i]] ? l.global : l.local)++;
  return l;
}

uint64_t hash_of(int i) { return mix64(static_cast<uint64_t>(i), 0xD7A6); }
constexpr int kHashes = 16;

struct Tally {
  int walks = 0;
  int unreached = 0;    // or looped
  int not_minimal = 0;  // minimal mode: not the least (global, local)
  int over_global = 0;  // more global links than allowed
};

// Every host pair, kHashes hashes, in the network's routing mode: reached and loop-free,
// (global, local) against the least there is, and global links against `max_global` (0: the
// fewest there are).
Tally tally(const Fly& f, uint32_t max_global) {
  const auto cost = lexicographic(f);
  const Network& net = *f.net;
  Tally t;
  for (uint32_t s = 0; s < net.num_hosts(); ++s) {
    for (uint32_t d = 0; d < net.num_hosts(); ++d) {
      const Cost least = cost[tor_of(net, s)][tor_of(net, d)];
      if (s == d || least.first == UINT32_MAX) continue;
      for (int i = 0; i < kHashes; ++i) {
        const test::Walk w = test::walk(net, s, d, hash_of(i));
        const Links l = links(f, w);
        ++t.walks;
        t.unreached += !w.reached || w.loop;
        t.not_minimal += Cost{l.global, l.local} != least;
        t.over_global += l.global > (max_global == 0 ? least.first : max_global);
      }
    }
  }
  return t;
}

RoutingConfig config(RoutingMode mode, bool group_minimal) {
  RoutingConfig rc;
  rc.mode = mode;
  rc.group_minimal = group_minimal;
  return rc;
}

// The global link between groups 0 and 1 (the port at group 0's end).
uint32_t global_port_0_1(const Fly& f) {
  const Network& net = *f.net;
  for (uint32_t s = 0; s < net.num_switches(); ++s) {
    if (f.layout.group[s] != 0) continue;
    for (uint32_t p : net.node(net.switch_node(s)).ports) {
      const Port& peer = net.port(net.port(p).peer);
      if (!peer.at_host && f.layout.group[peer.owner] == 1) return p;
    }
  }
  return kNone;
}

TEST(Routing_GroupMinimal, EveryRouteOneGlobalLinkThenFewestLocal) {
  const RoutingConfig rc = config(RoutingMode::kMinimal, true);
  for (Fly* f : {new Fly(dragonfly(1, 4, 2, &rc)), new Fly(dragonfly(2, 2, 2, &rc)),
                 new Fly(dragonfly_plus(&rc))}) {
    std::unique_ptr<Fly> own(f);
    const Tally t = tally(*f, 0);
    EXPECT_GT(t.walks, 1000);
    EXPECT_EQ(t.unreached, 0);
    EXPECT_EQ(t.not_minimal, 0);
    EXPECT_EQ(t.over_global, 0);
  }
}

TEST(Routing_GroupMinimal, ShortestPathsOffTakeTwoGlobalLinks) {
  // Expect: plain shortest paths (group-minimal off) are not the dragonfly's MIN: some cross
  // two global links where one would do, so the checks above are able to fail.
  const RoutingConfig rc = config(RoutingMode::kMinimal, false);
  const Tally t = tally(dragonfly(1, 4, 2, &rc), 0);
  EXPECT_EQ(t.unreached, 0);
  EXPECT_GT(t.not_minimal, 0);
  EXPECT_GT(t.over_global, 0);
}

TEST(Routing_GroupMinimal, FailedGlobalLinkFallsBackToFewestGlobalLinks) {
  Fly f = dragonfly(1, 4, 2);
  ASSERT_TRUE(f.net->set_routing(config(RoutingMode::kMinimal, true)).ok());
  const uint32_t p = global_port_0_1(f);
  ASSERT_NE(p, kNone);
  f.net->set_link_up(p, false, f.net->now());
  f.net->run_until(f.net->now() + SwitchConfig{}.failure_detection + 1);
  // Expect: groups 0 and 1 now two global links apart, as the reference says; every route
  // still the least (global, local) over what is up.
  const auto cost = lexicographic(f);
  EXPECT_EQ(cost[0][f.net->num_switches() / f.layout.groups].first, 2u);
  const Tally t = tally(f, 0);
  EXPECT_EQ(t.unreached, 0);
  EXPECT_EQ(t.not_minimal, 0);
}

TEST(Routing_GroupMinimal, ValiantAtMostTwoGlobalLinks) {
  for (bool on : {true, false}) {
    Fly f = dragonfly(1, 4, 2);
    ASSERT_TRUE(f.net->set_routing(config(RoutingMode::kValiant, on)).ok());
    const Tally t = tally(f, 2);
    EXPECT_EQ(t.unreached, 0);
    EXPECT_GT(t.not_minimal, 0);  // detours
    // Expect: both legs group-minimal, so at most one global link each (Kim et al. §4 VAL);
    // off, a leg may take two.
    if (on) {
      EXPECT_EQ(t.over_global, 0);
    } else {
      EXPECT_GT(t.over_global, 0);
    }
  }
}

TEST(Routing_GroupMinimal, ValiantViaSwitchPassesTheDrawnSwitch) {
  for (bool via_switch : {true, false}) {
    Fly f = dragonfly(1, 4, 2);
    RoutingConfig rc = config(RoutingMode::kValiant, true);
    rc.valiant_via_switch = via_switch;
    ASSERT_TRUE(f.net->set_routing(rc).ok());
    const Network& net = *f.net;
    const Routing& routing = net.routing();
    int detours = 0, missed = 0, two_local = 0, unreached = 0, in_group_global = 0;
    for (uint32_t s = 0; s < net.num_hosts(); ++s) {
      for (uint32_t d = 0; d < net.num_hosts(); ++d) {
        for (int i = 0; s != d && i < kHashes; ++i) {
          const uint64_t h = hash_of(i);
          const test::Walk w = test::walk(net, s, d, h);
          unreached += !w.reached || w.loop;
          const uint32_t via = routing.via_group(h);
          const uint32_t from = f.layout.group[tor_of(net, s)];
          if (from == f.layout.group[tor_of(net, d)]) {
            in_group_global += links(f, w).global > 0;
            if (via_switch) continue;
          }
          if (tor_of(net, s) == tor_of(net, d) || from == via) continue;
          ++detours;
          const uint32_t at = via_switch ? routing.via_switch(h) : kNone;
          missed += via_switch && std::find(w.switches.begin(), w.switches.end(), at) ==
                                      w.switches.end();
          int local_in_via = 0;
          for (size_t k = 1; k < w.switches.size(); ++k) {
            local_in_via += f.layout.group[w.switches[k - 1]] == via &&
                            f.layout.group[w.switches[k]] == via;
          }
          two_local += local_in_via >= 2;
        }
      }
    }
    EXPECT_EQ(unreached, 0);
    EXPECT_GT(detours, 0);
    // Expect: on, every detour passes its drawn switch (booksim2's random intermediate node),
    // some through two local links of the intermediate group, and traffic within a group
    // stays in it; off, minimal from the entry switch, at most one local link there, and
    // traffic within a group detours too.
    EXPECT_EQ(missed, 0);
    if (via_switch) {
      EXPECT_GT(two_local, 0);
      EXPECT_EQ(in_group_global, 0);
    } else {
      EXPECT_EQ(two_local, 0);
      EXPECT_GT(in_group_global, 0);
      EXPECT_EQ(routing.via_switch(hash_of(0)), kNone);
    }
  }
}

TEST(Routing_GroupMinimal, ValiantViaSwitchRefusesLosslessClasses) {
  Fly f = dragonfly(1, 4, 2);
  RoutingConfig rc = config(RoutingMode::kValiant, true);
  rc.valiant_via_switch = true;
  rc.deadlock_free = DeadlockFree::kTagger;
  EXPECT_FALSE(f.net->set_routing(rc).ok());
  EXPECT_FALSE(check_routing(rc).ok());
}

TEST(Routing_GroupMinimal, ValiantAndUgalWithAFailedGlobalLink) {
  for (RoutingMode mode : {RoutingMode::kValiant, RoutingMode::kUgal}) {
    Fly f = dragonfly(1, 4, 2);
    ASSERT_TRUE(f.net->set_routing(config(mode, true)).ok());
    f.net->set_link_up(global_port_0_1(f), false, f.net->now());
    f.net->run_until(f.net->now() + SwitchConfig{}.failure_detection + 1);
    // Valiant: each leg at most two global links (one where it avoids the failed link).
    const Tally t = tally(f, mode == RoutingMode::kValiant ? 4 : 0);
    EXPECT_EQ(t.unreached, 0);
    // Expect: UGAL-L on idle queues routes minimally.
    if (mode == RoutingMode::kUgal) {
      EXPECT_EQ(t.not_minimal, 0);
    }
    EXPECT_EQ(t.over_global, 0);
  }
}

TEST(Routing_GroupMinimal, WithoutGroupsShortestPaths) {
  // Expect: with no switch groups the flag changes nothing: a fat-tree's routes stay its
  // computed ones (structured).
  Network net{NetworkConfig{}};
  FatTreeConfig c;
  c.k = 4;
  ASSERT_TRUE(build_fat_tree(net, c).ok());
  ASSERT_TRUE(net.set_routing(config(RoutingMode::kMinimal, true)).ok());
  EXPECT_TRUE(net.routing().structured());
}

}  // namespace
}  // namespace uet::sim
