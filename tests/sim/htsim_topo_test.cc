// sim/htsim_topo: htsim .topo files onto our leaf-spine and fat-tree builders, and every
// refusal. The shapes are checked by building them and counting nodes and links.
#include "sim/htsim_topo.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace uet::sim {
namespace {

// A 32-host leaf-spine with 4:1 oversubscribed leaves (the layout of htsim's own tests).
constexpr const char* kLeafSpine = R"(
Nodes 32
Tiers 2
Podsize 32

Tier 0
Downlink_speed_Gbps 100
Radix_Down 8
Radix_Up 2
Downlink_Latency_ns 1000
Switch_Latency_ns 0
Oversubscribed 4

Tier 1
Downlink_speed_Gbps 100
Radix_Down 4
Downlink_Latency_ns 1000
Switch_Latency_ns 0
)";

TEST(HtsimTopo, TwoTiersBecomeALeafSpine) {
  const auto t = parse_htsim_topology(kLeafSpine);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->kind, HtsimTopology::Kind::kLeafSpine);
  EXPECT_EQ(t->hosts, 32u);
  EXPECT_EQ(t->leaf_spine.leaves, 4u);
  EXPECT_EQ(t->leaf_spine.spines, 2u);
  EXPECT_EQ(t->leaf_spine.hosts_per_leaf, 8u);
  EXPECT_EQ(t->leaf_spine.host_link.delay, kMicrosecond);
  EXPECT_EQ(t->leaf_spine.fabric_link.gbps, 100);
  Network net(NetworkConfig{});
  ASSERT_TRUE(build_leaf_spine(net, t->leaf_spine).ok());
  EXPECT_EQ(net.num_hosts(), 32u);
  EXPECT_EQ(net.num_switches(), 6u);
}

TEST(HtsimTopo, RatesDecideTheUplinksAndSwitchLatencyJoinsTheLinks) {
  // 400 G hosts, 800 G spine links, no oversubscription: 16 x 400 / 800 = 8 uplinks.
  const auto t = parse_htsim_topology(
      "nodes 64\ntiers 2\n"
      "tier 0\ndownlink_speed_gbps 400\nradix_down 16\ndownlink_latency_ns 500\nswitch_latency_ns 250\n"
      "tier 1\ndownlink_speed_gbps 800\nradix_down 4\ndownlink_latency_ns 700\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->leaf_spine.spines, 8u);
  EXPECT_EQ(t->leaf_spine.host_link.gbps, 400);
  EXPECT_EQ(t->leaf_spine.fabric_link.gbps, 800);
  EXPECT_EQ(t->leaf_spine.host_link.delay, 750 * kNanosecond);
  EXPECT_EQ(t->leaf_spine.fabric_link.delay, 700 * kNanosecond);
  EXPECT_EQ(t->host_gbps, 400);
}

TEST(HtsimTopo, ThreeTiersBecomeAKAryFatTree) {
  // k = 8: 8 pods of 4 ToRs x 4 hosts = 128 hosts, 16 cores.
  const auto t = parse_htsim_topology(R"(
Nodes 128
Tiers 3
Podsize 16
Tier 0
Downlink_speed_Gbps 100
Radix_Down 4
Radix_Up 4
Downlink_Latency_ns 1000
Tier 1
Downlink_speed_Gbps 100
Radix_Down 4
Radix_Up 4
Downlink_Latency_ns 1000
Tier 2
Downlink_speed_Gbps 200
Radix_Down 8
Downlink_Latency_ns 1500
)");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->kind, HtsimTopology::Kind::kFatTree);
  EXPECT_EQ(t->fat_tree.k, 8u);
  EXPECT_EQ(t->fat_tree.hosts_per_tor, 4u);
  EXPECT_EQ(t->fat_tree.agg_core_link.gbps, 200);
  EXPECT_EQ(t->fat_tree.agg_core_link.delay, 1500 * kNanosecond);
  Network net(NetworkConfig{});
  ASSERT_TRUE(build_fat_tree(net, t->fat_tree).ok());
  EXPECT_EQ(net.num_hosts(), 128u);
  EXPECT_EQ(net.num_switches(), 8u * 4 + 8u * 4 + 16u);
}

struct Bad {
  const char* text;
  const char* expect;
};
class HtsimTopoRefuses : public ::testing::TestWithParam<Bad> {};

TEST_P(HtsimTopoRefuses, WithLineAndReason) {
  const auto t = parse_htsim_topology(GetParam().text, "t.topo");
  ASSERT_FALSE(t.ok()) << GetParam().text;
  EXPECT_NE(std::string(t.status().message()).find(GetParam().expect), std::string::npos)
      << t.status().message();
  EXPECT_EQ(std::string(t.status().message()).rfind("t.topo:", 0), 0u);
}

constexpr const char* kTiers = "Tier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\nDownlink_Latency_ns 1000\n"
                               "Tier 1\nDownlink_speed_Gbps 100\nRadix_Down 4\nDownlink_Latency_ns 1000\n";

INSTANTIATE_TEST_SUITE_P(
    All, HtsimTopoRefuses,
    ::testing::Values(
        Bad{"Tiers 2\n", "Nodes and Tiers are required"},
        Bad{"Nodes 32\nTiers 4\n", "Tiers 4: 2 or 3"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nBundle 2\n", ":4: Bundle > 1"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nQueue_Down 100\n", "Queue_Down is not supported"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nColour 3\n", "unknown key 'Colour'"},
        Bad{"Nodes 32\nTiers 2\nDownlink_speed_Gbps 100\n", "outside a Tier block"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nRadix_Down x\n", "needs a non-negative number"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nRadix_Down 8 9\n", "expected 'Key value'"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\n"
            "Downlink_Latency_ns 1\n",
            "no 'Tier 1' block"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nRadix_Down 8\nTier 1\nDownlink_speed_Gbps 100\n"
            "Radix_Down 4\nDownlink_Latency_ns 1\n",
            "Tier 0 needs Downlink_speed_Gbps"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\nRadix_Up 3\n"
            "Downlink_Latency_ns 1\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 4\n"
            "Downlink_Latency_ns 1\n",
            "Radix_Up 3 but the rates and Oversubscribed give 8 uplinks"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\n"
            "Downlink_Latency_ns 1\nOversubscribed 3\nTier 1\nDownlink_speed_Gbps 100\n"
            "Radix_Down 4\nDownlink_Latency_ns 1\n",
            "not a whole number"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\n"
            "Downlink_Latency_ns 1\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 5\n"
            "Downlink_Latency_ns 1\n",
            "Radix_Down 5 but there are 4 leaves"},
        Bad{"Nodes 32\nTiers 2\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\n"
            "Downlink_Latency_ns 1\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 4\n"
            "Downlink_Latency_ns 1\nTier 2\nDownlink_speed_Gbps 100\nRadix_Down 4\n"
            "Downlink_Latency_ns 1\n",
            "Tier 2 beyond Tiers 2"},
        Bad{"Nodes 96\nTiers 3\nPodsize 32\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\n"
            "Downlink_Latency_ns 1\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 4\n"
            "Downlink_Latency_ns 1\nTier 2\nDownlink_speed_Gbps 100\nRadix_Down 3\n"
            "Downlink_Latency_ns 1\n",
            "is not a k-ary fat-tree"}));

TEST(HtsimTopo, NodesNotAMultipleOfTheToRIsRefused) {
  const auto t = parse_htsim_topology(std::string("Nodes 30\nTiers 2\n") + kTiers, "t.topo");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(std::string(t.status().message()).find("Nodes 30 is not a multiple"), std::string::npos)
      << t.status();
}

// A shape the builder would refuse (more uplinks than a leaf-spine may have spines) is refused
// here, naming the file, not at run time; uplink counts are bounded before any cast.
TEST(HtsimTopo, ShapesTheBuilderRefusesAreRefusedNamingTheFile) {
  const std::string base =
      "nodes 16\ntiers 2\ntier 0\ndownlink_speed_gbps 100\nradix_down 8\n"
      "downlink_latency_ns 200\ntier 1\nradix_down 2\ndownlink_latency_ns 1\n";
  for (const auto& [rate, why] : {std::pair<const char*, const char*>{"1", "spines 800 (1..256)"},
                                  {"1e-12", "uplinks: 1..16777214"}}) {
    const auto t = parse_htsim_topology(base + "downlink_speed_gbps " + rate + "\n", "f.topo");
    ASSERT_FALSE(t.ok()) << rate;
    const std::string m(t.status().message());
    EXPECT_EQ(m.rfind("f.topo:", 0), 0u) << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace uet::sim
