// cc/nscc.h: NSCC's derived parameters, its four quadrants, the adjust period, fast increase,
// QuickAdapt and the receiver's pending signal, each driven by hand-made ACK sequences.
#include "cc/nscc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace uet::cc {
namespace {

constexpr Time kRtt = 12 * kMicrosecond;

NsccConfig reference() {
  NsccConfig c;  // 100 Gb/s, 12 us, 4096 B, trimming: UEC's reference network
  return *NsccConfig::derive(c);
}
// An engine reads its config where it lies (Nscc takes no temporary).
const NsccConfig kReference = reference();

TEST(Nscc_Derive, ReferenceNetworkValues) {
  const NsccConfig c = reference();
  EXPECT_DOUBLE_EQ(c.bdp, 150'000);
  EXPECT_DOUBLE_EQ(c.maxwnd, 225'000);
  EXPECT_DOUBLE_EQ(c.minwnd, 4096);
  EXPECT_DOUBLE_EQ(c.target_delay_ps, 9e6);  // 0.75 x 12 us with trimming
  EXPECT_DOUBLE_EQ(c.fi, 5 * 4096);
  EXPECT_DOUBLE_EQ(c.eta, 0.15 * 4096);
  EXPECT_DOUBLE_EQ(c.fi_scale, 0.25);
  EXPECT_DOUBLE_EQ(c.alpha, 4.0 * 4096 * 1 * 0.75 / 9e6);
  EXPECT_DOUBLE_EQ(c.qa_threshold_ps, 36e6);
  NsccConfig no_trim;
  no_trim.trimming = false;
  EXPECT_DOUBLE_EQ(NsccConfig::derive(no_trim)->target_delay_ps, 12e6);
}

TEST(Nscc_Derive, ScalesWithBdp) {
  NsccConfig c;
  c.link_gbps = 400;
  const NsccConfig d = *NsccConfig::derive(c);
  EXPECT_DOUBLE_EQ(d.bdp, 600'000);
  EXPECT_DOUBLE_EQ(d.fi, 4 * 5 * 4096);
  EXPECT_DOUBLE_EQ(d.fi_scale, 1.0);
}

TEST(Nscc_Derive, RefusesEachBadField) {
  auto bad = [](auto mutate, const char* field) {
    NsccConfig c;
    mutate(c);
    const auto d = NsccConfig::derive(c);
    ASSERT_FALSE(d.ok()) << field;
    EXPECT_NE(std::string(d.status().message()).find(field), std::string::npos) << d.status();
  };
  bad([](NsccConfig& c) { c.link_gbps = 0; }, "link_gbps");
  bad([](NsccConfig& c) { c.base_rtt = 10 * kNanosecond; }, "base_rtt");
  bad([](NsccConfig& c) { c.mtu = 100; }, "mtu");
  bad([](NsccConfig& c) { c.gamma = 0; }, "gamma");
  bad([](NsccConfig& c) { c.max_bdp_factor = 0.5; }, "max_bdp_factor");
}

TEST(Nscc_Window, StartsAtMaxAndTimeoutDropsToOneMtu) {
  Nscc n(kReference);
  EXPECT_EQ(n.window(), 225'000u);
  n.on_timeout(0);
  EXPECT_EQ(n.window(), 4096u);
}

// ACKs of one MTU each, every `gap`, with a fixed RTT sample and ECN echo.
Time feed(Nscc& n, int acks, Time start, Time gap, Time rtt, bool ecn) {
  Time t = start;
  for (int i = 0; i < acks; ++i, t += gap) n.on_ack(4096, ecn, rtt, t);
  return t;
}

TEST(Nscc_Quadrants, MultiplicativeDecreaseAtMostOncePerBaseRtt) {
  Nscc n(kReference);
  const Time rtt = kRtt + 30 * kMicrosecond;  // 30 us of queueing: above the 9 us target
  // The average delay (EWMA 1/80) passes the target on the 29th sample: 30 (1 - 0.9875^29)
  // = 9.17 us; the decrease waits for it.
  Time t = feed(n, 28, 100 * kMicrosecond, 100 * kNanosecond, rtt, true);
  EXPECT_EQ(n.decreases(), 0u);
  n.on_ack(4096, true, rtt, t);
  const uint64_t after_one = n.window();
  EXPECT_LT(after_one, 225'000u);
  EXPECT_EQ(n.decreases(), 1u);
  feed(n, 10, t + kMicrosecond, kMicrosecond, rtt, true);  // within one base RTT
  EXPECT_EQ(n.decreases(), 1u);
  n.on_ack(4096, true, rtt, t + kRtt);
  EXPECT_EQ(n.decreases(), 2u);
  EXPECT_LT(n.window(), after_one);
}

TEST(Nscc_Quadrants, DecreaseScalesWithTheAverageDelay) {
  // htsim uec.cpp (spec/uet.md §3.8.1): cwnd *= max(1 - gamma (avg_delay - target) / avg_delay, 0.5), taken
  // once avg_delay > target. The 29th ACK at 30 us of delay: avg = 30 (1 - 0.9875^29) us.
  Nscc n(kReference);
  feed(n, 29, 100 * kMicrosecond, 100 * kNanosecond, kRtt + 30 * kMicrosecond, true);
  ASSERT_EQ(n.decreases(), 1u);
  const double avg = 30e6 * (1 - std::pow(0.9875, 29));
  EXPECT_NEAR(static_cast<double>(n.window()), 225'000 * (1 - 0.8 * (avg - 9e6) / avg), 1.0);
}

TEST(Nscc_Quadrants, DecreaseIsAtMostHalf) {
  Nscc n(kReference);
  // One sample of 10 ms: avg 125 us, 1 - 0.8 (125 - 9) / 125 = 0.26, held at 0.5.
  n.on_ack(4096, true, kRtt + 10 * kMillisecond, kMicrosecond);
  EXPECT_EQ(n.decreases(), 1u);
  EXPECT_EQ(n.window(), 225'000u / 2);
}

TEST(Nscc_Quadrants, UnmarkedDelayDoesNotCountTowardsADecrease) {
  // An unmarked ACK above the target delay is queueing on a path the sender is not causing
  // (spraying, another flow's queue): uet-htsim's update_delay moves the average towards
  // base_rtt / 4 for it. After many such ACKs a marked one with a long delay cuts nothing;
  // after the same ACKs marked, it does.
  Nscc unmarked(kReference), marked(kReference);
  const Time t = feed(unmarked, 400, kMicrosecond, 100 * kNanosecond, kRtt + 20 * kMicrosecond, false);
  feed(marked, 400, kMicrosecond, 100 * kNanosecond, kRtt + 20 * kMicrosecond, true);
  unmarked.on_ack(4096, true, kRtt + 30 * kMicrosecond, t + kRtt);
  EXPECT_EQ(unmarked.decreases(), 0u);
  EXPECT_GT(marked.decreases(), 0u);
}

TEST(Nscc_Quadrants, EcnWithLowDelayChangesNothingButEta) {
  // ECN on a short queue: NSCC leaves the window to the path selector (NOOP quadrant).
  Nscc noop(kReference), fair(kReference);
  noop.on_timeout(0);
  fair.on_timeout(0);
  feed(noop, 64, kMicrosecond, 200 * kNanosecond, kRtt + kMicrosecond, true);
  feed(fair, 64, kMicrosecond, 200 * kNanosecond, kRtt + 20 * kMicrosecond, false);
  EXPECT_EQ(noop.decreases(), 0u);
  // Only eta per adjust period (8 MTUs of ACKs): 8 periods.
  EXPECT_LE(noop.window(), 4096 + 8 * static_cast<uint64_t>(0.15 * 4096) + 8);
  EXPECT_GT(fair.window(), noop.window());
}

TEST(Nscc_Quadrants, ProportionalIncreaseGrowsFasterOnAShorterQueue) {
  Nscc near(kReference), empty(kReference);
  near.on_timeout(0);
  empty.on_timeout(0);
  feed(near, 40, kMicrosecond, 300 * kNanosecond, kRtt + 8 * kMicrosecond, false);
  feed(empty, 40, kMicrosecond, 300 * kNanosecond, kRtt + 2 * kMicrosecond, false);
  EXPECT_GT(empty.window(), near.window());
}

TEST(Nscc_Window, NeverAboveMaxNorBelowOneMtu) {
  Nscc n(kReference);
  feed(n, 5000, 0, 100 * kNanosecond, kRtt, false);
  EXPECT_LE(n.window(), 225'000u);
  for (int i = 0; i < 100; ++i) n.on_nack(100'000, i * kMicrosecond);
  EXPECT_GE(n.window(), 4096u);
}

TEST(Nscc_FastIncrease, AfterAWholeWindowWithoutQueueing) {
  NsccConfig c = reference();
  Nscc n(c);
  n.on_timeout(0);
  // 1 us of queueing is not "no queue": no fast increase.
  feed(n, 8, kMicrosecond, 100 * kNanosecond, kRtt + 2 * kMicrosecond, false);
  EXPECT_EQ(n.fast_increases(), 0u);
  // Zero queueing for more than a window of bytes: fast increase, acked * fi_scale per ACK.
  const uint64_t before = n.window();
  const int acks = static_cast<int>(before / 4096) + 4;  // a window's worth, and some
  feed(n, acks, 3 * kMicrosecond, 100 * kNanosecond, kRtt, false);
  EXPECT_GT(n.fast_increases(), 0u);
  EXPECT_GT(n.window(), before);
}

TEST(Nscc_Nack, TakesTheBytesOff) {
  Nscc n(kReference);
  n.on_nack(4096, kMicrosecond);
  EXPECT_EQ(n.window(), 225'000u - 4096);
}

TEST(Nscc_QuickAdapt, CutsToWhatWasAchievedThenSkipsMarkedAcksForTheInFlightBytes) {
  const NsccConfig c = reference();
  Nscc n(c);
  const Time period = kRtt + static_cast<Time>(c.target_delay_ps);  // 21 us
  n.on_ack(4096, false, kRtt, 0);  // starts the first period (htsim: its bytes do not count)
  // A trickle: the ACK closing period 1 counts in it; 2 MTUs in period 2, far below
  // maxwnd >> 3 (28 KB), and a NACK, which takes its bytes off at once.
  n.on_ack(4096, false, kRtt, period + kMicrosecond);  // period 2 ends at 2 period + 1 us
  n.on_ack(4096, false, kRtt, period + 2 * kMicrosecond);
  n.on_nack(4096, period + 3 * kMicrosecond);
  EXPECT_EQ(n.quick_adapts(), 0u) << "the period is not over yet";
  EXPECT_EQ(n.window(), 225'000u - 4096);
  n.on_ack(4096, false, kRtt, 2 * period + 2 * kMicrosecond);  // closes period 2
  EXPECT_EQ(n.quick_adapts(), 1u);
  const uint64_t cut = n.window();
  EXPECT_EQ(cut, 2u * 4096) << "the bytes achieved in the triggered period";
  // Marked ACKs for what was in flight at the cut change nothing, with any delay (they
  // would otherwise cut the window by half) ...
  feed(n, 40, 2 * period + 3 * kMicrosecond, 100 * kNanosecond, kRtt + 30 * kMicrosecond, true);
  EXPECT_EQ(n.window(), cut);
  EXPECT_EQ(n.decreases(), 0u);
  // ... an unmarked one is not skipped.
  n.on_ack(4096, false, kRtt, 2 * period + 8 * kMicrosecond);
  EXPECT_GT(n.window(), cut);
}

TEST(Nscc_QuickAdapt, NotWhenEnoughWasAchieved) {
  const NsccConfig c = reference();
  Nscc n(c);
  const Time period = kRtt + static_cast<Time>(c.target_delay_ps);
  n.on_ack(4096, false, kRtt, 0);
  // 40 MTUs (164 KB) per period: above maxwnd >> 3; a NACK then does not arm QuickAdapt.
  feed(n, 40, kMicrosecond, 400 * kNanosecond, kRtt, false);
  n.on_nack(4096, 17 * kMicrosecond);
  feed(n, 10, period + kMicrosecond, kMicrosecond, kRtt, false);
  EXPECT_EQ(n.quick_adapts(), 0u);
}

TEST(Nscc_QuickAdapt, AnExtremeDelayOnThePeriodsLastAckTriggersItToo) {
  const NsccConfig c = reference();
  Nscc n(c);
  const Time period = kRtt + static_cast<Time>(c.target_delay_ps);
  n.on_ack(4096, false, kRtt, 0);
  n.on_ack(4096, false, kRtt + 50 * kMicrosecond, kMicrosecond);  // 50 us > 36 us, mid-period
  EXPECT_EQ(n.quick_adapts(), 0u) << "htsim looks at the delay only when a period closes";
  n.on_ack(4096, false, kRtt + 50 * kMicrosecond, period + kMicrosecond);  // closes it
  EXPECT_EQ(n.quick_adapts(), 1u);
  EXPECT_EQ(n.window(), 2u * 4096);
  // An extreme delay earlier in the period, with a normal one closing it: no cut.
  Nscc m(c);
  m.on_ack(4096, false, kRtt, 0);
  m.on_ack(4096, false, kRtt + 50 * kMicrosecond, kMicrosecond);
  m.on_ack(4096, false, kRtt, period + kMicrosecond);
  EXPECT_EQ(m.quick_adapts(), 0u);
}

TEST(Nscc_ReceiverPending, TakesItsShareOfTheAckedBytes) {
  Nscc n(kReference);
  n.on_receiver_pending(8192, 64);  // half of 8 KB
  EXPECT_EQ(n.window(), 225'000u - 4096);
  n.on_receiver_pending(8192, 0);
  EXPECT_EQ(n.window(), 225'000u - 4096);
}

}  // namespace
}  // namespace uet::cc
