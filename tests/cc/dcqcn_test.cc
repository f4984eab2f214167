// The DCQCN reaction point alone: exact rates and α after CNPs, timers and bytes.
#include "cc/dcqcn.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <cmath>

namespace uet {
namespace {

constexpr double kG = 1e9;

// A reaction point on `c` that has taken one CNP at time 0.
Dcqcn after_one_cnp(const DcqcnConfig& c) {
  Dcqcn d;
  d.reset(&c);
  d.on_cnp(0);
  return d;
}

TEST(Dcqcn_Cut, FirstCnpHalvesTheRateWithAlphaOne) {
  DcqcnConfig c;
  Dcqcn d;
  d.reset(&c);
  EXPECT_FALSE(d.limited());
  EXPECT_EQ(d.next_event(), kNever);
  d.on_cnp(0);
  // Expect: α = (1 − g)·1 + g = 1, RC = 100·(1 − 1/2), RT = the old RC.
  EXPECT_DOUBLE_EQ(d.alpha(), 1.0);
  EXPECT_DOUBLE_EQ(d.rate_bps(), 50 * kG);
  EXPECT_DOUBLE_EQ(d.target_bps(), 100 * kG);
  EXPECT_TRUE(d.limited());
  EXPECT_EQ(d.next_event(), 55 * kMicrosecond);
}

TEST(Dcqcn_Cut, RateNeverFallsBelowTheMinimum) {
  DcqcnConfig c;
  Dcqcn d;
  d.reset(&c);
  for (int i = 0; i < 100; ++i) d.on_cnp(i * kMicrosecond);
  EXPECT_DOUBLE_EQ(d.rate_bps(), c.min_rate_gbps * kG);
  EXPECT_EQ(d.cuts(), 100u);
}

TEST(Dcqcn_Alpha, DecaysEveryPeriodWithoutCnp) {
  DcqcnConfig c;
  c.initial_alpha = 0.5;
  Dcqcn d = after_one_cnp(c);
  const double a0 = (1 - c.g) * 0.5 + c.g;
  EXPECT_DOUBLE_EQ(d.alpha(), a0);
  d.on_timer(3 * 55 * kMicrosecond);
  EXPECT_NEAR(d.alpha(), a0 * std::pow(1 - c.g, 3), 1e-12);
}

TEST(Dcqcn_Increase, FastRecoveryThenAdditiveThenStopsAtLineRate) {
  DcqcnConfig c;
  Dcqcn d = after_one_cnp(c);
  // Five fast-recovery rounds towards RT = 100: 75, 87.5, 93.75, 96.875, 98.4375.
  double expect = 50;
  for (int i = 1; i <= 5; ++i) {
    d.on_timer(i * 55 * kMicrosecond);
    expect = (100 + expect) / 2;
    EXPECT_DOUBLE_EQ(d.rate_bps(), expect * kG) << "round " << i;
    EXPECT_DOUBLE_EQ(d.target_bps(), 100 * kG);
  }
  // Then additive increase: RT is capped at line rate, RC keeps halving the distance, and the
  // timers stop within 0.1 % of line rate.
  Time t = 5 * 55 * kMicrosecond;
  while (d.limited()) {
    t += 55 * kMicrosecond;
    ASSERT_LT(t, 10 * kMillisecond);
    d.on_timer(t);
  }
  EXPECT_DOUBLE_EQ(d.rate_bps(), 100 * kG);
  EXPECT_EQ(d.next_event(), kNever);
}

TEST(Dcqcn_Increase, ByteCounterAdvancesItsOwnStage) {
  DcqcnConfig c;
  c.byte_counter = 1'000'000;
  Dcqcn d = after_one_cnp(c);
  d.on_sent(999'999, 1);
  EXPECT_DOUBLE_EQ(d.rate_bps(), 50 * kG);
  d.on_sent(1, 2);
  EXPECT_DOUBLE_EQ(d.rate_bps(), 75 * kG);  // one fast-recovery step
}

TEST(Dcqcn_Increase, HyperIncreaseWhenBothStagesPassF) {
  DcqcnConfig c;
  c.byte_counter = 1500;
  c.fast_recovery_rounds = 1;
  c.hai_rate_gbps = 10;
  Dcqcn d = after_one_cnp(c);
  d.on_cnp(1);  // RC 25, RT 50 (α ≈ 1)
  const double rc = d.rate_bps(), rt = d.target_bps();
  d.on_sent(1500, 2);  // byte stage 1 ≥ F: additive (timer stage 0)
  const double rt1 = std::min(rt + c.ai_rate_gbps * kG, 100 * kG);
  const double rc1 = (rt1 + rc) / 2;
  EXPECT_DOUBLE_EQ(d.rate_bps(), rc1);
  d.on_timer(55 * kMicrosecond + 1);  // timer stage 1: both ≥ F → hyper, i = 1
  const double rt2 = std::min(rt1 + c.hai_rate_gbps * kG, 100 * kG);
  EXPECT_DOUBLE_EQ(d.rate_bps(), (rt2 + rc1) / 2);
}

TEST(Dcqcn_Alpha, DecaysMissedWhileStoppedAreAppliedAtTheNextCnp) {
  DcqcnConfig c;
  Dcqcn stopped = after_one_cnp(c);
  // It recovers to line rate and stops its timers.
  Time t = 0;
  while (stopped.limited()) {
    t += 55 * kMicrosecond;
    stopped.on_timer(t);
  }
  const Time later = t + 7 * 55 * kMicrosecond + 3;
  stopped.on_cnp(later);
  // Expect: α as if its timer had run all along: decays at 55, 110, ... up to `later`.
  const auto decays = static_cast<double>(later / (55 * kMicrosecond));
  const double a = std::pow(1 - c.g, decays);
  EXPECT_NEAR(stopped.alpha(), (1 - c.g) * a + c.g, 1e-12);
}

TEST(Dcqcn_Pacing, GapIsTheSerializationTimeAtTheCurrentRate) {
  DcqcnConfig c;
  Dcqcn d = after_one_cnp(c);  // 50 Gb/s
  EXPECT_EQ(d.gap(4194), static_cast<Time>(std::ceil(4194 * 8e12 / 50e9)));
}

TEST(Dcqcn_Config, RefusedWithTheFieldAndRange) {
  DcqcnConfig c;
  c.g = 0;
  EXPECT_NE(std::string(c.validate().message()).find("DcqcnConfig.g"), std::string::npos);
  c = DcqcnConfig{};
  c.min_rate_gbps = 200;
  EXPECT_NE(std::string(c.validate().message()).find("min_rate_gbps"), std::string::npos);
}

TEST(Dcqcn_Disabled, CnpsLeaveTheRateAtLineRate) {
  DcqcnConfig c;
  c.enabled = false;
  Dcqcn d = after_one_cnp(c);
  EXPECT_FALSE(d.limited());
  EXPECT_EQ(d.next_event(), kNever);
}

// The named profiles: each is valid, carries its source's signature values, and a QP under
// each recovers to line rate after one CNP (at very different speeds).
TEST(Dcqcn_Preset, ProfilesCarryTheirSourcesValues) {
  const auto htsim = DcqcnConfig::preset("htsim", 100);
  const auto ns3 = DcqcnConfig::preset("dcqcn-ns3", 100);
  const auto cx = DcqcnConfig::preset("connectx", 100);
  ASSERT_TRUE(htsim.ok() && ns3.ok() && cx.ok());
  const DcqcnConfig def;
  EXPECT_EQ(htsim->g, def.g);  // the default is htsim's profile
  EXPECT_EQ(htsim->ai_rate_gbps, 5);
  EXPECT_EQ(htsim->hai_rate_gbps, 10);
  EXPECT_EQ(ns3->increase_period, 60 * kMicrosecond);
  EXPECT_EQ(ns3->byte_counter, 300'000'000u);
  EXPECT_EQ(ns3->initial_alpha, 0.5);
  EXPECT_EQ(cx->g, 5.0 / 1024);
  EXPECT_EQ(cx->alpha_period, kMicrosecond);
  EXPECT_EQ(cx->min_rate_gbps, 0.001);
  EXPECT_EQ(cx->fast_recovery_rounds, 1u);
  // Rates scale with the line rate where the source defines them relative to it.
  EXPECT_EQ(DcqcnConfig::preset("htsim", 400)->ai_rate_gbps, 20);
}

TEST(Dcqcn_Preset, UnknownNameIsRefusedWithTheList) {
  const auto p = DcqcnConfig::preset("dctcp", 100);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message()).find("htsim, dcqcn-ns3 or connectx"),
            std::string::npos);
}

TEST(Dcqcn_Preset, EachRecoversToLineRateAfterOneCnp) {
  Time recovered[3] = {0, 0, 0};
  const char* names[3] = {"htsim", "dcqcn-ns3", "connectx"};
  for (int i = 0; i < 3; ++i) {
    const DcqcnConfig c = *DcqcnConfig::preset(names[i], 100);
    Dcqcn d = after_one_cnp(c);
    ASSERT_LT(d.rate_bps(), 100e9) << names[i];
    for (int guard = 0; guard < 10'000'000 && d.next_event() != kNever; ++guard) {
      d.on_timer(d.next_event());
      recovered[i] = d.next_event() == kNever ? recovered[i] : d.next_event();
    }
    EXPECT_EQ(d.rate_bps(), 100e9) << names[i];
    EXPECT_EQ(d.next_event(), kNever) << names[i] << ": timers stop at line rate";
  }
  // ConnectX's timer (300 us) is five times the others': it recovers slowest.
  EXPECT_GT(recovered[2], recovered[0]);
  EXPECT_GT(recovered[2], recovered[1]);
  std::printf("recovery after one CNP: htsim %.0f us, dcqcn-ns3 %.0f us, connectx %.0f us\n",
              static_cast<double>(recovered[0]) / kMicrosecond,
              static_cast<double>(recovered[1]) / kMicrosecond,
              static_cast<double>(recovered[2]) / kMicrosecond);
}

}  // namespace
}  // namespace uet
