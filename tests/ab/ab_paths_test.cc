// RunConfig::path_report (bench/ab_paths.h): the flows per link, tier by tier, of a run.
#include "bench/ab_paths.h"

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "bench/ab_runner.h"
#include "gtest/gtest.h"
#include "sim/rng.h"
#include "sim/workload.h"

namespace uet::ab {
namespace {

// A 16-host k=4 fat-tree, a permutation of 64 KB UET writes, `evs` EVs a PDC.
RunConfig permutation_run(uint16_t evs, pathsel::Algorithm lb) {
  RunConfig c;
  c.fabric.kind = Fabric::Kind::kFatTree;
  c.fabric.k = 4;
  sim::Rng rng(7);
  c.flows = *sim::permutation(16, 64 * 1024, rng);
  c.transport = TransportKind::kUet;
  c.uet_evs = evs;
  c.uet_lb = lb;
  c.path_report = true;
  return c;
}

uint64_t histogram_links(const TierLoad& t) {
  return std::accumulate(t.histogram.begin(), t.histogram.end(), uint64_t{0});
}

uint64_t histogram_flows(const TierLoad& t) {
  uint64_t sum = 0;
  for (size_t n = 0; n < t.histogram.size(); ++n) sum += n * t.histogram[n];
  return sum;
}

TEST(PathReport_OnePath, EachFlowCountsOnceOnEachLinkOfItsPath) {
  const RunConfig c = permutation_run(1, pathsel::Algorithm::kFixed);
  auto r = run(c);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->flows.completed, c.flows.size());
  const PathReport& p = r->paths;
  // Expect: one path per flow, every path reaching its host.
  EXPECT_EQ(p.flows, c.flows.size());
  EXPECT_EQ(p.paths, c.flows.size());
  EXPECT_FALSE(p.unreached);
  // Expect: the tiers a fat-tree's paths climb and descend, in that order, each histogram
  // covering all of its tier's links.
  std::vector<std::string> names;
  for (const TierLoad& t : p.tiers) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"host->ToR", "ToR->agg", "agg->core", "core->agg",
                                             "agg->ToR", "ToR->host"}));
  uint64_t flow_links = 0;
  for (const TierLoad& t : p.tiers) {
    EXPECT_EQ(histogram_links(t), t.links) << t.name;
    EXPECT_EQ(t.max_flows + 1, t.histogram.size()) << t.name;
    flow_links += histogram_flows(t);
  }
  // Expect: the histograms' flows add up to each flow's links on a shortest path.
  uint64_t path_links = 0;
  for (const sim::FlowSpec& f : c.flows) path_links += host_path_links(c.fabric, f.src, f.dst);
  EXPECT_EQ(flow_links, path_links);
  EXPECT_EQ(p.flow_links, path_links);
  // Expect: a host sends one flow, so its link carries one, with at least the flow's bytes.
  EXPECT_EQ(p.tiers.front().histogram, (std::vector<uint32_t>{0, 16}));
  EXPECT_GE(p.tiers.front().max_bytes, 64u * 1024);
}

TEST(PathReport_Sprayed, AFlowCountsOnceOnALinkSeveralOfItsPathsCross) {
  const RunConfig c = permutation_run(16, pathsel::Algorithm::kOblivious);
  auto r = run(c);
  ASSERT_TRUE(r.ok()) << r.status();
  const PathReport& p = r->paths;
  // Expect: more paths than flows, yet still one flow on each host's link.
  EXPECT_EQ(p.flows, c.flows.size());
  EXPECT_GT(p.paths, p.flows);
  EXPECT_EQ(p.tiers.front().histogram, (std::vector<uint32_t>{0, 16}));
  EXPECT_EQ(p.tiers.back().histogram, (std::vector<uint32_t>{0, 16}));
  uint64_t path_links = 0;
  for (const sim::FlowSpec& f : c.flows) path_links += host_path_links(c.fabric, f.src, f.dst);
  EXPECT_GT(p.flow_links, path_links);  // a sprayed flow crosses several ToR uplinks
}

TEST(PathReport_Off, NoTiersUnlessAsked) {
  RunConfig c = permutation_run(1, pathsel::Algorithm::kFixed);
  c.path_report = false;
  auto r = run(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->paths.tiers.empty());
  EXPECT_EQ(r->paths.flows, 0u);
}

}  // namespace
}  // namespace uet::ab
