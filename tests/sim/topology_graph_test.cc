// Fabrics from a graph file (sim/topology_graph.h): parsing, its line-numbered refusals, and the
// built fabric's nodes, links and routes.
#include "sim/topology_graph.h"

#include <gtest/gtest.h>

#include <string>

namespace uet::sim {
namespace {

constexpr char kRing[] = R"(# three switches in a ring, a host on each, and a 4th host on s0
host a
host b   # comment after a declaration
host c
host d
switch s0
switch s1
switch s2
link a s0 100 500
link b s1 100 500
link c s2 100 500
link d s0 25 1000.5
link s0 s1 400 1000
link s1 s2 400 1000
link s2 s0 400 1000
link s2 s0 400 1000   # a parallel link
)";

// Expect: hosts in file order, then switches; links in file order with their rate and delay
// (fractional nanoseconds kept as picoseconds); every pair routes, hosts under one switch in
// 0 switch-to-switch hops and the others in 1.
TEST(TopologyGraph_Parse, BuildsHostsSwitchesAndLinksInFileOrder) {
  auto g = parse_graph_topology(kRing, "ring.graph");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->hosts.size(), 4u);
  EXPECT_EQ(g->switches.size(), 3u);
  ASSERT_EQ(g->links.size(), 8u);
  const TopologySize size = graph_size(*g);
  EXPECT_EQ(size.fabric_links, 4u);
  Network net(NetworkConfig{});
  ASSERT_TRUE(build_graph(net, *g).ok());
  EXPECT_EQ(net.num_hosts(), 4u);
  EXPECT_EQ(net.node(net.host_node(3)).name, "d");
  EXPECT_EQ(net.node(net.switch_node(2)).name, "s2");
  EXPECT_EQ(net.link_config(6).gbps, 25);        // the 4th link, d - s0
  EXPECT_EQ(net.link_config(6).delay, 1000500);  // ps
  EXPECT_EQ(net.port(net.host(3).port).peer, 7u);
  for (uint32_t a = 0; a < 4; ++a) {
    for (uint32_t b = 0; b < 4; ++b) {
      if (a == b) continue;
      const uint32_t tor = net.port(net.port(net.host(a).port).peer).owner;
      const uint32_t out = net.ecmp_port(tor, b, 12345);
      ASSERT_NE(out, kNone) << a << " " << b;
      const Port& next = net.port(net.port(out).peer);
      const bool same = (a == 0 && b == 3) || (a == 3 && b == 0);
      EXPECT_EQ(next.at_host, same) << a << " -> " << b;
      if (!same) {  // one hop to the destination's switch, then down
        EXPECT_EQ(net.port(net.ecmp_port(next.owner, b, 12345)).peer, net.host(b).port);
      }
    }
  }
}

struct Bad {
  const char* text;
  const char* error;
};

// Expect: each mistake refused with the file, the line and what is wrong.
TEST(TopologyGraph_Parse, RefusesMistakesWithTheirLine) {
  const Bad cases[] = {
      {"host a\nhost a\n", "g:2: 'a' declared twice"},
      {"host a\nswitch s\nlink a t 100 500\n", "g:3: 't' is not declared"},
      {"host a\nswitch s\nlink a s 0 500\n", "g:3: GBPS '0' out of range: 0.001..10000"},
      {"host a\nswitch s\nlink a s 100 -1\n", "g:3: DELAY_NS '-1' out of range: 0..1e10"},
      {"host a\nswitch s\nlink a s 100\n", "g:3: expected 'link A B GBPS DELAY_NS'"},
      {"host a\nswitch s\nswitch t\nlink a s 1 1\nlink a t 1 1\n",
       "g:5: host 'a' already has its one link"},
      {"host a\nhost b\nlink a b 1 1\n", "g:3: a host's link must reach a switch"},
      {"switch s\nswitch s2\nlink s s 1 1\n", "g:3: a link joins two different nodes"},
      {"host a\nswitch s\n", "g:1: host 'a' has no link"},
      {"host a\nswitch s\nswitch t\nlink a s 1 1\n", "g:3: switch 't' has no link"},
      {"switch s\n", "no host"},
      {"router r\n", "g:1: unknown keyword 'router': host, switch or link"},
      {"host a b\n", "g:1: expected 'host NAME'"},
      {"host a,b\n", "g:1: name 'a,b': letters, digits and _ . : - / only"},
  };
  for (const Bad& c : cases) {
    auto g = parse_graph_topology(c.text, "g");
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_NE(std::string(g.status().message()).find(c.error), std::string::npos)
        << g.status() << " wanted " << c.error;
  }
  EXPECT_FALSE(load_graph_topology("/nonexistent/x.graph").ok());
}

}  // namespace
}  // namespace uet::sim
