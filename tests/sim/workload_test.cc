// Workloads (sim/workload.h), the runner that plays them (sim/workload_runner.h) and the flow
// statistics (sim/flow_stats.h): generator properties first, then end-to-end runs on small
// fabrics.
#include "sim/workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "sim/flow_stats.h"
#include "sim/topology.h"
#include "sim/workload_runner.h"

namespace uet::sim {
namespace {

// A message check without gmock: prints both strings on failure.
::testing::AssertionResult Mentions(const std::string& message, const std::string& text) {
  if (message.find(text) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << message << "\" does not mention \"" << text << "\"";
}

// ------------------------------------------------------------------ flow-size CDF

TEST(FlowSizeCdf_Parse, ReadsPairsSkippingCommentsAndBlankLines) {
  const auto cdf = parse_cdf("# header\n\n100 0.5  # half\n\t300\t1\r\n", "t.cdf");
  ASSERT_TRUE(cdf.ok()) << cdf.status();
  ASSERT_EQ(cdf->points.size(), 2u);
  EXPECT_EQ(cdf->points[1].bytes, 300u);
  EXPECT_EQ(cdf->points[1].p, 1.0);
  // Expect: a step of 1/2 at 100 bytes, then uniform over (100, 300]: mean 50 + 100 = 150.
  EXPECT_DOUBLE_EQ(cdf->mean(), 150.0);
}

TEST(FlowSizeCdf_Parse, RejectsMalformedFilesNamingTheLine) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"100 0.5\n100 1\n", "bad.cdf:2: sizes must increase: 100 after 100"},
      {"100 0.5\n# c\n200 0.4\n300 1\n", "bad.cdf:3: probabilities must not decrease"},
      {"100 1.5\n", "bad.cdf:1: probability 1.5 out of range [0, 1]"},
      {"100 -0.1\n200 1\n", "bad.cdf:1: probability -0.1 out of range [0, 1]"},
      {"100 0.2\n200 0.9\n\n", "bad.cdf:2: the last probability is 0.9, must be 1"},
      {"100 0.2 7\n", "bad.cdf:1: expected \"bytes cumulative_probability\", got 3 fields"},
      {"1e3 0.2\n", "bad.cdf:1: size \"1e3\" is not a whole number of bytes"},
      {"-5 0.2\n", "bad.cdf:1: size \"-5\" is not a whole number"},
      {"100 half\n", "bad.cdf:1: probability \"half\" is not a number"},
      {"# only comments\n", "bad.cdf: no points"},
      {"0 1\n", "the largest size must be at least 1 byte"},
      // Above 2^53 a size is not exact in the double the sampler interpolates in.
      {"1844674407370955161 1\n", "the largest size is 1844674407370955161 bytes, at most"},
      {"0 0.6\n1 1\n", "P[size <= 0] is 0.6, must be 0"},  // a flow has a byte
  };
  for (const auto& c : cases) {
    const auto cdf = parse_cdf(c.text, "bad.cdf");
    ASSERT_FALSE(cdf.ok()) << c.text;
    EXPECT_EQ(cdf.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Mentions(std::string(cdf.status().message()), c.message)) << c.text;
  }
}

// The largest size a CDF may name is sampled exactly: no sample passes the last point.
TEST(FlowSizeCdf_Sample, NeverPassesTheLastPoint) {
  for (const char* text : {"9007199254740992 1\n", "9007199254740000 0.5\n9007199254740992 1\n"}) {
    const auto cdf = parse_cdf(text, "big.cdf");
    ASSERT_TRUE(cdf.ok()) << cdf.status();
    Rng rng(7);
    for (int i = 0; i < 1000; ++i) EXPECT_LE(cdf->sample(rng), kMaxCdfBytes) << text;
  }
}

TEST(FlowSizeCdf_Load, NamesThePathAndLineAndReportsMissingFiles) {
  const std::string path = ::testing::TempDir() + "/workload_test_bad.cdf";
  {
    std::ofstream out(path);
    out << "# ok\n10 0.5\n5 1\n";
  }
  const auto bad = load_cdf(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Mentions(std::string(bad.status().message()), path + ":3: sizes must increase"));
  const auto missing = load_cdf(path + ".absent");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(FlowSizeCdf_Load, ShippedDistributionsHaveTheirStatedMeans) {
  const auto web = load_cdf(sim_data_path("websearch.cdf"));
  const auto hadoop = load_cdf(sim_data_path("hadoop.cdf"));
  ASSERT_TRUE(web.ok()) << web.status();
  ASSERT_TRUE(hadoop.ok()) << hadoop.status();
  // Expect: the means written in the files' headers.
  EXPECT_NEAR(web->mean(), 1'711'250, 1);
  EXPECT_NEAR(hadoop->mean(), 120'421, 1);
  EXPECT_EQ(web->points.back().bytes, 30'000'000u);
  EXPECT_EQ(hadoop->points.back().bytes, 10'000'000u);
}

TEST(FlowSizeCdf_Sample, SamplesFollowTheCdf) {
  const auto web = load_cdf(sim_data_path("websearch.cdf"));
  const auto hadoop = load_cdf(sim_data_path("hadoop.cdf"));
  ASSERT_TRUE(web.ok() && hadoop.ok());
  Rng rng(42);
  constexpr int kN = 200'000;
  double web_sum = 0, hadoop_sum = 0;
  int web_small = 0, hadoop_small = 0;
  uint64_t web_min = UINT64_MAX, web_max = 0;
  for (int i = 0; i < kN; ++i) {
    const uint64_t w = web->sample(rng), h = hadoop->sample(rng);
    web_sum += static_cast<double>(w);
    hadoop_sum += static_cast<double>(h);
    web_small += w <= 80'000;
    hadoop_small += h <= 700;
    web_min = std::min(web_min, w);
    web_max = std::max(web_max, w);
  }
  // Expect: sample means within 3% of the exact means (the web-search sizes have a
  // coefficient of variation of ~2.3, so the standard error here is ~0.5%), the CDF's own
  // points hit, and every sample within the support.
  EXPECT_NEAR(web_sum / kN / web->mean(), 1.0, 0.03);
  EXPECT_NEAR(hadoop_sum / kN / hadoop->mean(), 1.0, 0.03);
  EXPECT_NEAR(web_small / double{kN}, 0.53, 0.01);
  EXPECT_NEAR(hadoop_small / double{kN}, 0.50, 0.01);
  EXPECT_GE(web_min, 1u);
  EXPECT_LE(web_max, 30'000'000u);
}

TEST(FlowSizeCdf_Sample, OnePointIsAFixedSize) {
  const auto cdf = FlowSizeCdf::create({{4096, 1.0}});
  ASSERT_TRUE(cdf.ok());
  Rng rng(1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(cdf->sample(rng), 4096u);
  EXPECT_EQ(cdf->mean(), 4096);
}

// ------------------------------------------------------------------ generators

TEST(Permutation_Generate, IsADerangementAndABijection) {
  for (uint32_t hosts : {2u, 3u, 16u, 1024u}) {
    Rng rng(hosts);
    const auto flows = permutation(hosts, 1000, rng);
    ASSERT_TRUE(flows.ok()) << flows.status();
    ASSERT_EQ(flows->size(), hosts);
    std::set<uint32_t> senders, receivers;
    for (uint32_t i = 0; i < hosts; ++i) {
      const FlowSpec& f = (*flows)[i];
      EXPECT_EQ(f.id, i);
      EXPECT_NE(f.src, f.dst);
      EXPECT_LT(f.dst, hosts);
      EXPECT_EQ(f.bytes, 1000u);
      EXPECT_EQ(f.start, 0);
      EXPECT_TRUE(f.after.empty());
      senders.insert(f.src);
      receivers.insert(f.dst);
    }
    // Expect: every host sends once and receives once.
    EXPECT_EQ(senders.size(), hosts);
    EXPECT_EQ(receivers.size(), hosts);
  }
}

std::vector<uint32_t> destinations(const std::vector<FlowSpec>& flows) {
  std::vector<uint32_t> d;
  for (const FlowSpec& f : flows) d.push_back(f.dst);
  return d;
}

TEST(Permutation_Generate, SameSeedSameFlowsDifferentSeedDifferent) {
  Rng a(7), b(7), c(8);
  const auto fa = permutation(64, 1, a), fb = permutation(64, 1, b), fc = permutation(64, 1, c);
  ASSERT_TRUE(fa.ok() && fb.ok() && fc.ok());
  EXPECT_EQ(destinations(*fa), destinations(*fb));
  EXPECT_NE(destinations(*fa), destinations(*fc));
}

TEST(Permutation_Generate, RejectsBadArgumentsNamingTheRange) {
  Rng rng(1);
  EXPECT_TRUE(Mentions(std::string(permutation(1, 10, rng).status().message()),
                       "hosts 1 out of range [2, 16777214]"));
  EXPECT_TRUE(Mentions(std::string(permutation(20'000'000, 10, rng).status().message()),
                       "hosts 20000000 out of range [2, 16777214]"));
  EXPECT_TRUE(Mentions(std::string(permutation(4, 0, rng).status().message()),
                       "bytes 0 out of range [1, 2^64)"));
}

TEST(Incast_Generate, FanInDistinctSendersToOneDestination) {
  const auto flows = incast(16, 8, 13, 5000);
  ASSERT_TRUE(flows.ok()) << flows.status();
  ASSERT_EQ(flows->size(), 8u);
  std::set<uint32_t> senders;
  for (const FlowSpec& f : *flows) {
    EXPECT_EQ(f.dst, 13u);
    EXPECT_NE(f.src, 13u);
    EXPECT_EQ(f.start, 0);
    senders.insert(f.src);
  }
  EXPECT_EQ(senders.size(), 8u);
  EXPECT_EQ(incast(16, 15, 0, 1)->size(), 15u);
  EXPECT_TRUE(Mentions(std::string(incast(16, 16, 0, 1).status().message()),
                       "fan_in 16 out of range [1, 15]"));
  EXPECT_TRUE(Mentions(std::string(incast(16, 0, 0, 1).status().message()),
                       "fan_in 0 out of range [1, 15]"));
  EXPECT_TRUE(Mentions(std::string(incast(16, 4, 16, 1).status().message()),
                       "dst 16 out of range [0, 15]"));
}

TEST(PermutationIncasts_Generate, PermutationThenIncastsToDistinctReceivers) {
  Rng rng(11), again(11), perm_only(11);
  const auto flows = permutation_incasts(32, 6, 5, 4096, rng);
  ASSERT_TRUE(flows.ok()) << flows.status();
  ASSERT_EQ(flows->size(), 32u + 6u * 5u);
  // The permutation comes first, drawn as permutation() draws it from the same seed.
  const auto perm = permutation(32, 4096, perm_only);
  ASSERT_TRUE(perm.ok());
  EXPECT_EQ(destinations(*perm),
            destinations(std::vector<FlowSpec>(flows->begin(), flows->begin() + 32)));
  std::set<uint32_t> receivers;
  for (uint32_t j = 0; j < 6; ++j) {
    std::set<uint32_t> senders;
    const uint32_t dst = (*flows)[32 + j * 5].dst;
    receivers.insert(dst);
    for (uint32_t i = 0; i < 5; ++i) {
      const FlowSpec& f = (*flows)[32 + j * 5 + i];
      EXPECT_EQ(f.id, 32 + j * 5 + i);
      EXPECT_EQ(f.dst, dst);
      EXPECT_NE(f.src, dst);
      EXPECT_EQ(f.bytes, 4096u);
      EXPECT_EQ(f.start, 0);
      senders.insert(f.src);
    }
    EXPECT_EQ(senders.size(), 5u) << "incast " << j << "'s senders are not distinct";
  }
  EXPECT_EQ(receivers.size(), 6u) << "two incasts share a receiver";
  const auto same = permutation_incasts(32, 6, 5, 4096, again);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(destinations(*same), destinations(*flows));
  std::vector<uint32_t> src_a, src_b;
  for (const FlowSpec& f : *flows) src_a.push_back(f.src);
  for (const FlowSpec& f : *same) src_b.push_back(f.src);
  EXPECT_EQ(src_a, src_b);
  // Every host a receiver, every other host a sender: the bounds themselves are drawable.
  Rng full(3);
  const auto all = permutation_incasts(8, 8, 7, 1, full);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 8u + 8u * 7u);
  std::set<uint32_t> every_receiver;
  for (uint32_t j = 0; j < 8; ++j) {
    std::set<uint32_t> senders;
    for (uint32_t i = 0; i < 7; ++i) senders.insert((*all)[8 + j * 7 + i].src);
    const uint32_t dst = (*all)[8 + j * 7].dst;
    EXPECT_EQ(senders.size(), 7u);
    EXPECT_EQ(senders.count(dst), 0u);
    every_receiver.insert(dst);
  }
  EXPECT_EQ(every_receiver.size(), 8u);
}

TEST(PermutationIncasts_Generate, RejectsBadArgumentsNamingTheRange) {
  Rng rng(1);
  EXPECT_TRUE(Mentions(std::string(permutation_incasts(16, 0, 4, 1, rng).status().message()),
                       "incasts 0 out of range [1, 16]"));
  EXPECT_TRUE(Mentions(std::string(permutation_incasts(16, 17, 4, 1, rng).status().message()),
                       "incasts 17 out of range [1, 16]"));
  EXPECT_TRUE(Mentions(std::string(permutation_incasts(16, 2, 16, 1, rng).status().message()),
                       "fan_in 16 out of range [1, 15]"));
  EXPECT_TRUE(Mentions(std::string(permutation_incasts(16, 2, 0, 1, rng).status().message()),
                       "fan_in 0 out of range [1, 15]"));
  EXPECT_TRUE(Mentions(std::string(permutation_incasts(1, 1, 1, 1, rng).status().message()),
                       "hosts 1 out of range"));
  EXPECT_TRUE(Mentions(
      std::string(permutation_incasts(1'000'000, 1'000'000, 16, 1, rng).status().message()),
      "more than 16777216"));
  EXPECT_TRUE(Mentions(std::string(permutation_incasts(16, 2, 4, 0, rng).status().message()),
                       "bytes 0 out of range"));
}

TEST(AllToAll_Generate, EveryOrderedPairOnce) {
  const auto flows = all_to_all(9, 100);
  ASSERT_TRUE(flows.ok());
  ASSERT_EQ(flows->size(), 9u * 8u);
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t i = 0; i < flows->size(); ++i) {
    const FlowSpec& f = (*flows)[i];
    EXPECT_EQ(f.id, i);
    EXPECT_NE(f.src, f.dst);
    pairs.emplace(f.src, f.dst);
  }
  EXPECT_EQ(pairs.size(), 72u);
  EXPECT_TRUE(Mentions(std::string(all_to_all(5000, 1).status().message()), "at most 4096 hosts"));
}

TEST(RingAllreduce_Generate, TwoNMinusOneStepsWithRingEdges) {
  constexpr uint32_t kN = 5;
  const auto flows = ring_allreduce(kN, 1'000'000);
  ASSERT_TRUE(flows.ok()) << flows.status();
  const uint32_t steps = ring_allreduce_steps(kN);
  ASSERT_EQ(steps, 8u);
  ASSERT_EQ(flows->size(), steps * kN);
  for (uint32_t k = 0; k < steps; ++k) {
    std::set<uint32_t> senders;
    for (uint32_t i = 0; i < kN; ++i) {
      const FlowSpec& f = (*flows)[k * kN + i];
      EXPECT_EQ(f.id, k * kN + i);
      EXPECT_EQ(f.src, i);
      EXPECT_EQ(f.dst, (i + 1) % kN);
      EXPECT_EQ(f.bytes, 200'000u);
      senders.insert(f.src);
      if (k == 0) {
        EXPECT_TRUE(f.after.empty());
        continue;
      }
      // Expect: host i's previous send received, and its predecessor's previous send (which
      // host i received) received.
      const FlowSpec& own = (*flows)[(k - 1) * kN + i];
      const FlowSpec& into = (*flows)[(k - 1) * kN + (i + kN - 1) % kN];
      EXPECT_EQ(f.after, (std::vector<uint32_t>{own.id, into.id}));
      EXPECT_EQ(own.src, i);
      EXPECT_EQ(into.dst, i);
    }
    EXPECT_EQ(senders.size(), kN);  // every host sends in every step
  }
  EXPECT_TRUE(Mentions(std::string(ring_allreduce(4, 3).status().message()),
                       "total_bytes 3 out of range [4, 2^64)"));
}

TEST(Poisson_Generate, OfferedLoadWithinFivePercentOfTarget) {
  const auto web = load_cdf(sim_data_path("websearch.cdf"));
  ASSERT_TRUE(web.ok());
  constexpr uint32_t kHosts = 16;
  constexpr double kLoad = 0.6, kGbps = 100;
  // ~4400 flows per second per host; 0.5 s gives ~35,000 flows, enough that the heavy tail
  // (a flow's size has a coefficient of variation of ~2.3) averages to within ~1.5%.
  constexpr Time kDuration = kSecond / 2;
  Rng rng(2024);
  const auto flows = poisson(kHosts, kLoad, kGbps, *web, kDuration, rng);
  ASSERT_TRUE(flows.ok()) << flows.status();
  double bytes = 0;
  std::vector<double> per_host(kHosts);
  Time last = -1;
  for (uint32_t i = 0; i < flows->size(); ++i) {
    const FlowSpec& f = (*flows)[i];
    EXPECT_EQ(f.id, i);
    EXPECT_NE(f.src, f.dst);
    EXPECT_LT(f.dst, kHosts);
    EXPECT_GE(f.start, last);  // ordered by start
    EXPECT_LT(f.start, kDuration);
    last = f.start;
    bytes += static_cast<double>(f.bytes);
    per_host[f.src] += static_cast<double>(f.bytes);
  }
  EXPECT_GT(flows->size(), 30'000u);
  const double capacity = kGbps * 1e9 / 8 * 0.5;  // bytes one host link carries in 0.5 s
  // Expect: offered bytes per host link = load x capacity, within 5% over all hosts.
  EXPECT_NEAR(bytes / kHosts / capacity, kLoad, 0.05 * kLoad);
  for (double b : per_host) EXPECT_NEAR(b / capacity, kLoad, 0.3 * kLoad);
}

TEST(Poisson_Generate, HadoopMeanSizeAndSeeds) {
  const auto hadoop = load_cdf(sim_data_path("hadoop.cdf"));
  ASSERT_TRUE(hadoop.ok());
  Rng a(5), b(5), c(6);
  const Time d = 20 * kMillisecond;
  const auto fa = poisson(8, 0.3, 100, *hadoop, d, a);
  const auto fb = poisson(8, 0.3, 100, *hadoop, d, b);
  const auto fc = poisson(8, 0.3, 100, *hadoop, d, c);
  ASSERT_TRUE(fa.ok() && fb.ok() && fc.ok());
  ASSERT_EQ(fa->size(), fb->size());
  for (size_t i = 0; i < fa->size(); ++i) {
    EXPECT_EQ((*fa)[i].start, (*fb)[i].start);
    EXPECT_EQ((*fa)[i].bytes, (*fb)[i].bytes);
    EXPECT_EQ((*fa)[i].dst, (*fb)[i].dst);
  }
  EXPECT_NE(destinations(*fa), destinations(*fc));
  // 0.3 x 12.5 GB/s / 120 kB = ~31,000 flows/s per host: ~5,000 flows in 20 ms at 8 hosts.
  const double expected = 0.3 * 12.5e9 / hadoop->mean() * 0.02 * 8;
  EXPECT_NEAR(static_cast<double>(fa->size()) / expected, 1.0, 0.05);
}

TEST(Poisson_Generate, RejectsBadArgumentsNamingTheRange) {
  const auto cdf = FlowSizeCdf::create({{1000, 1.0}});
  ASSERT_TRUE(cdf.ok());
  Rng rng(1);
  EXPECT_TRUE(Mentions(std::string(poisson(8, 0, 100, *cdf, kMillisecond, rng).status().message()),
                       "load 0 out of range (0, 1]"));
  EXPECT_TRUE(
      Mentions(std::string(poisson(8, 1.5, 100, *cdf, kMillisecond, rng).status().message()),
               "load 1.5 out of range (0, 1]"));
  EXPECT_TRUE(Mentions(std::string(poisson(8, 0.5, 0, *cdf, kMillisecond, rng).status().message()),
                       "host_gbps 0 out of range (0, 10000]"));
  EXPECT_TRUE(Mentions(std::string(poisson(8, 0.5, 100, *cdf, 0, rng).status().message()),
                       "duration 0 ps out of range"));
  EXPECT_TRUE(Mentions(std::string(poisson(8, 1, 100, *cdf, kSecond, rng).status().message()),
                       "more than 16777216"));
}

TEST(AppendFlows_Combine, RenumbersIdsAndEdges) {
  auto flows = *incast(4, 2, 0, 100);
  append_flows(flows, *ring_allreduce(2, 10));
  ASSERT_EQ(flows.size(), 2u + 4u);
  for (uint32_t i = 0; i < flows.size(); ++i) EXPECT_EQ(flows[i].id, i);
  EXPECT_EQ(flows[4].after, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(flows[5].after, (std::vector<uint32_t>{3, 2}));
}

// ------------------------------------------------------------------ flow statistics

TEST(FlowStats_Compute, PercentilesSlowdownAndGoodput) {
  std::vector<FlowSpec> flows;
  std::vector<FlowRecord> rec;
  // 100 flows of 1,000 bytes; flow i starts at i us and takes (i + 1) us. Flow 100 never ends.
  for (uint32_t i = 0; i <= 100; ++i) {
    flows.push_back(FlowSpec{i, 0, 1, 1000, 0, {}});
    FlowRecord r;
    r.bytes = 1000;
    r.start = i * kMicrosecond;
    r.finish = i < 100 ? r.start + (i + 1) * kMicrosecond : kNever;
    rec.push_back(r);
  }
  const auto s = flow_stats(rec, flows, [](const FlowSpec&) { return Time{kMicrosecond / 2}; });
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->total, 101u);
  EXPECT_EQ(s->completed, 100u);
  EXPECT_DOUBLE_EQ(s->fct_min_us, 1);
  EXPECT_DOUBLE_EQ(s->fct_p50_us, 50);
  EXPECT_DOUBLE_EQ(s->fct_p99_us, 99);
  EXPECT_DOUBLE_EQ(s->fct_max_us, 100);
  EXPECT_DOUBLE_EQ(s->slowdown_p50, 100);
  EXPECT_DOUBLE_EQ(s->slowdown_max, 200);
  EXPECT_DOUBLE_EQ(s->slowdown_mean, 101);
  // Expect: 100 kB completed between t = 0 and the last finish at 99 + 100 = 199 us.
  EXPECT_EQ(s->last_finish, 199 * kMicrosecond);
  EXPECT_NEAR(s->goodput_gbps, 100'000 * 8 / 199e-6 / 1e9, 1e-9);
  EXPECT_FALSE(format_flow_stats(*s).empty());

  rec.pop_back();
  EXPECT_FALSE(flow_stats(rec, flows, [](const FlowSpec&) { return Time{1}; }).ok());
}

TEST(FlowStats_IdealFct, CountsFramesHeadersAndStoreAndForward) {
  PathModel p;
  p.gbps = 100;
  p.hops = 2;
  p.propagation = 2 * 1234567;
  p.payload_per_packet = 1000;
  // The Network_Timing case: one 1,058-byte frame + 24, twice, plus two propagation delays.
  EXPECT_EQ(ideal_fct(1000, p), 2 * ((1058 + 24) * 80 + 1234567));
  p.payload_per_packet = 4096;
  // Three frames (4096, 4096, 1808) at the source; at the second hop the short last frame
  // waits behind the full one ahead of it, so the pipeline adds one full frame time.
  const Time full = (4096 + 82) * 80, last = (1808 + 82) * 80;
  EXPECT_EQ(ideal_fct(10'000, p), 2 * full + last + full + 2 * 1234567);
  p.hops = 4;
  p.propagation = 4 * 1234567;
  EXPECT_EQ(ideal_fct(10'000, p), 2 * full + last + 3 * full + 4 * 1234567);
}

// ------------------------------------------------------------------ the runner, end to end

LinkConfig link(double gbps, Time delay = 500 * kNanosecond) {
  LinkConfig l;
  l.gbps = gbps;
  l.delay = delay;
  return l;
}

// A leaf-spine with every link at 100 Gb/s and 500 ns.
void leaf_spine(Network& net, uint32_t leaves, uint32_t spines, uint32_t per_leaf) {
  LeafSpineConfig c;
  c.leaves = leaves;
  c.spines = spines;
  c.hosts_per_leaf = per_leaf;
  c.host_link = link(100);
  c.fabric_link = link(100);
  ASSERT_TRUE(build_leaf_spine(net, c).ok());
}

// The ideal of a flow on that leaf-spine: 2 links within a leaf, 4 across the spines.
IdealFct leaf_spine_ideal(uint32_t per_leaf) {
  return [per_leaf](const FlowSpec& f) {
    PathModel p;
    p.hops = f.src / per_leaf == f.dst / per_leaf ? 2 : 4;
    p.propagation = p.hops * 500 * kNanosecond;
    return ideal_fct(f.bytes, p);
  };
}

TEST(WorkloadRunner_Create, RejectsBadFlowLists) {
  Network net(NetworkConfig{});
  leaf_spine(net, 1, 1, 4);
  auto message = [&](std::vector<FlowSpec> flows) {
    return std::string(WorkloadRunner::create(net, std::move(flows)).status().message());
  };
  EXPECT_TRUE(Mentions(message({FlowSpec{1, 0, 1, 10, 0, {}}}), "id 1 must equal its index"));
  EXPECT_TRUE(
      Mentions(message({FlowSpec{0, 2, 2, 10, 0, {}}}), "must be distinct hosts in [0, 3]"));
  EXPECT_TRUE(Mentions(message({FlowSpec{0, 0, 9, 10, 0, {}}}), "must be distinct hosts"));
  EXPECT_TRUE(Mentions(message({FlowSpec{0, 0, 1, 0, 0, {}}}), "bytes must be >= 1"));
  EXPECT_TRUE(Mentions(message({FlowSpec{0, 0, 1, 10, -1, {}}}), "start -1 ps out of range"));
  EXPECT_TRUE(Mentions(message({FlowSpec{0, 0, 1, 10, 0, {5}}}), "after names flow 5"));
  EXPECT_TRUE(Mentions(message({FlowSpec{0, 0, 1, 10, 0, {}}, FlowSpec{1, 1, 2, 10, 0, {2}},
                                FlowSpec{2, 2, 3, 10, 0, {1}}}),
                       "dependency cycle"));
}

TEST(WorkloadRunner_Run, LoneFlowTakesExactlyItsIdealFct) {
  Network net(NetworkConfig{});
  leaf_spine(net, 2, 1, 1);
  auto runner = WorkloadRunner::create(net, {FlowSpec{0, 0, 1, 10'000, 3 * kMicrosecond, {}}});
  ASSERT_TRUE(runner.ok()) << runner.status();
  net.run_until(kSecond);
  const FlowRecord& r = (*runner)->records()[0];
  // Expect: started at the requested time; finished after exactly the modelled ideal.
  EXPECT_EQ(r.start, 3 * kMicrosecond);
  EXPECT_EQ(r.finish - r.start, leaf_spine_ideal(1)((*runner)->flows()[0]));
  EXPECT_TRUE((*runner)->done());
}

TEST(WorkloadRunner_Run, DependentFlowStartsItsDelayAfterThePrerequisite) {
  Network net(NetworkConfig{});
  leaf_spine(net, 1, 1, 3);
  std::vector<FlowSpec> flows = {FlowSpec{0, 0, 1, 50'000, 0, {}}, FlowSpec{1, 1, 2, 50'000, 0, {}},
                                 FlowSpec{2, 2, 0, 20'000, 7 * kMicrosecond, {0, 1}}};
  auto runner = WorkloadRunner::create(net, flows);
  ASSERT_TRUE(runner.ok()) << runner.status();
  net.run_until(2 * kMicrosecond);
  EXPECT_EQ((*runner)->started(), 2u);
  EXPECT_EQ((*runner)->records()[2].start, kNever);  // not yet
  net.run_until(kSecond);
  const auto& rec = (*runner)->records();
  ASSERT_TRUE((*runner)->done());
  // Expect: the dependent flow starts 7 us after the later of its two prerequisites.
  EXPECT_EQ(rec[2].start, std::max(rec[0].finish, rec[1].finish) + 7 * kMicrosecond);
}

TEST(WorkloadRunner_Run, LeafSpinePermutationAtLineRateIsNearIdeal) {
  NetworkConfig nc;
  nc.seed = 3;
  Network net(nc);
  leaf_spine(net, 4, 4, 4);
  Rng rng(99);
  auto flows = permutation(16, 1'000'000, rng);
  ASSERT_TRUE(flows.ok());
  WorkloadRunnerConfig rc;
  rc.spray = true;  // every leaf's 400 Gb/s of uplink demand spread over its 4 spines
  auto runner = WorkloadRunner::create(net, *flows, rc);
  ASSERT_TRUE(runner.ok()) << runner.status();
  net.run_until(kSecond);
  const auto s = flow_stats((*runner)->records(), (*runner)->flows(), leaf_spine_ideal(4));
  ASSERT_TRUE(s.ok()) << s.status();
  const PortSummary ports = port_summary(net);
  // Expect: every flow completes, none beats the ideal, all within 15% of it (spraying
  // balances the uplinks only statistically), nothing dropped.
  EXPECT_EQ(s->completed, 16u) << format_flow_stats(*s);
  const Time best = leaf_spine_ideal(4)(FlowSpec{0, 0, 1, 1'000'000, 0, {}});  // same leaf
  EXPECT_GE(s->fct_min_us * 1.0001, static_cast<double>(best) / kMicrosecond);
  EXPECT_LT(s->slowdown_max, 1.15) << format_flow_stats(*s);
  EXPECT_GT(s->goodput_gbps, 16 * 100 * 0.9 * 4096 / 4178) << format_flow_stats(*s);
  EXPECT_EQ(ports.drops, 0u) << format_port_summary(ports);
}

// Expect: no flow of `r` started before its prerequisites completed; each started `f.start`
// after the last of them completed (no polling delay).
void expect_started_on_prerequisites(const WorkloadRunner& r) {
  const auto& rec = r.records();
  for (const FlowSpec& f : r.flows()) {
    Time ready = 0;
    for (uint32_t a : f.after) {
      EXPECT_GE(rec[f.id].start, rec[a].finish) << "flow " << f.id << " after " << a;
      ready = std::max(ready, rec[a].finish);
    }
    EXPECT_EQ(rec[f.id].start, ready + f.start) << "flow " << f.id;
  }
}

TEST(WorkloadRunner_Run, TwoHostRingAllreduceRespectsStepOrder) {
  Network net(NetworkConfig{});
  leaf_spine(net, 2, 1, 1);  // the two hosts on different leaves
  auto flows = ring_allreduce(2, 2'000'000);
  ASSERT_TRUE(flows.ok());
  auto runner = WorkloadRunner::create(net, *flows);
  ASSERT_TRUE(runner.ok()) << runner.status();
  net.run_until(kSecond);
  ASSERT_TRUE((*runner)->done());
  expect_started_on_prerequisites(**runner);
  // Expect: each step's flows overlap (both directions busy).
  const auto& rec = (*runner)->records();
  for (uint32_t k = 0; k < ring_allreduce_steps(2); ++k) {
    EXPECT_LT(rec[2 * k].start, rec[2 * k + 1].finish);
    EXPECT_LT(rec[2 * k + 1].start, rec[2 * k].finish);
  }
}

TEST(WorkloadRunner_Run, EightHostRingWithDelaysOnALeafSpine) {
  Network net(NetworkConfig{});
  leaf_spine(net, 2, 2, 4);
  auto flows = ring_allreduce(8, 800'000);
  ASSERT_TRUE(flows.ok());
  for (FlowSpec& f : *flows)
    if (!f.after.empty()) f.start = 2 * kMicrosecond;  // a reduction step between transfers
  auto runner = WorkloadRunner::create(net, *flows);
  ASSERT_TRUE(runner.ok()) << runner.status();
  net.run_until(kSecond);
  ASSERT_TRUE((*runner)->done());
  expect_started_on_prerequisites(**runner);
}

TEST(WorkloadRunner_Run, EightToOneIncastWithPfcHasZeroDrops) {
  NetworkConfig nc;
  nc.switches.pfc.enabled = true;
  nc.switches.ecn.enabled = false;
  nc.switches.trimming = false;
  nc.switches.buffer_bytes = 256 * 1024;
  Network net(nc);
  leaf_spine(net, 2, 2, 8);
  auto flows = incast(16, 8, 4, 1'000'000);  // senders 5..12: three on the receiver's leaf
  ASSERT_TRUE(flows.ok());
  auto runner = WorkloadRunner::create(net, *flows);
  ASSERT_TRUE(runner.ok()) << runner.status();
  net.run_until(kSecond);
  const auto s = flow_stats((*runner)->records(), (*runner)->flows(), leaf_spine_ideal(8));
  ASSERT_TRUE(s.ok());
  const PortSummary ports = port_summary(net, s->last_finish - s->first_start);
  // Expect: lossless: every byte arrives, PFC paused the senders, and the receiver's link
  // ran at line rate (8 MB at 100 Gb/s, less the per-frame overhead).
  EXPECT_EQ(s->completed, 8u) << format_flow_stats(*s);
  EXPECT_EQ(ports.drops, 0u) << format_port_summary(ports);
  EXPECT_EQ(ports.lossless_drops, 0u);
  EXPECT_GT(ports.pauses, 0u);
  EXPECT_GT(ports.paused_time, 0);
  EXPECT_GT(s->goodput_gbps, 0.95 * 100 * 4096 / 4178) << format_flow_stats(*s);
  EXPECT_GT(s->slowdown_max, 6.0);  // the last sender shares the link with seven others
  // Expect: of the switches' queues, the one that stood longest is the receiver's downlink
  // (paused senders hold as much in their NICs' queues: PFC pushed the queue back to them).
  uint32_t busiest_switch_port = kNone;
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    if (net.port(p).at_host) continue;
    if (busiest_switch_port == kNone ||
        net.port(p).stats.queue_byte_ps > net.port(busiest_switch_port).stats.queue_byte_ps) {
      busiest_switch_port = p;
    }
  }
  ASSERT_NE(busiest_switch_port, kNone);
  EXPECT_EQ(net.port(busiest_switch_port).peer, net.host(4).port);
  // PFC holds ~XOFF (64 KiB) or more in the receiver's downlink for most of the makespan.
  EXPECT_GT(ports.busiest_avg_queue_bytes, 32 * 1024) << format_port_summary(ports);
  EXPECT_GE(ports.max_queue_bytes, nc.switches.pfc.xoff_bytes);
}

}  // namespace
}  // namespace uet::sim
