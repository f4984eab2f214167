// The progress line's ETA (bench/ab_eta.h), fed synthetic runs sampled once a second: unknown
// only until two seconds of work are seen, exact at a steady pace, and within 1.5x of the truth
// when a run's pace changes, once the change is a tenth of the run old.
#include <cmath>
#include <functional>

#include "bench/ab_eta.h"
#include "gtest/gtest.h"

namespace uet::ab {
namespace {

// A run of `total` seconds whose work done at time t is work(t); the estimate after each
// second's observation against the truth, checked for t in [from, to).
void expect_within(const std::function<double(double)>& work, double total, double from,
                   double to, double factor) {
  EtaEstimate e;
  for (double t = 1; t < total; t += 1) {
    e.add(t, work(t));
    if (t < from || t >= to) continue;
    const double left = e.seconds_left(), truth = total - t;
    ASSERT_GE(left, 0) << "unknown at " << t << " s";
    EXPECT_LE(left, truth * factor + 1) << "at " << t << " s of " << total;
    EXPECT_GE(left, truth / factor - 1) << "at " << t << " s of " << total;
  }
}

TEST(EtaEstimate, UnknownUntilWorkIsSeenOverTwoSeconds) {
  EtaEstimate e;
  EXPECT_LT(e.seconds_left(), 0);
  e.add(1, 0);
  e.add(2, 0);
  EXPECT_LT(e.seconds_left(), 0);  // nothing done yet
  e.add(2.5, 0.01);
  EXPECT_LT(e.seconds_left(), 0);  // 1.5 s observed
  e.add(3, 0.02);
  EXPECT_NEAR(e.seconds_left(), 2 * 0.98 / 0.02, 1e-9);  // 2 % in 2 s: 98 s left
  e.add(4, 1);
  EXPECT_EQ(e.seconds_left(), 0);
}

TEST(EtaEstimate, ExactAtASteadyPace) {
  EtaEstimate e;
  for (int t = 1; t <= 400; ++t) {
    e.add(t, t / 1000.0);
    if (t < 3) continue;
    ASSERT_NEAR(e.seconds_left(), 1000 - t, 1e-6) << t;
  }
}

TEST(EtaEstimate, IgnoresTimeGoingBackAndWorkShrinking) {
  EtaEstimate e;
  e.add(10, 0.1);
  e.add(20, 0.2);
  e.add(15, 0.9);  // earlier: ignored
  e.add(30, 0.1);  // less done than before: held at 0.2, a stall
  EXPECT_NEAR(e.seconds_left(), 30 * 0.8 / 0.2, 1e-9);
}

// A slow start (the first windows' burst, most events per byte) then a steady pace.
TEST(EtaEstimate, SlowStartThenSteady) {
  auto work = [](double t) { return t < 50 ? 0.05 * t / 50 : 0.05 + 0.95 * (t - 50) / 450; };
  expect_within(work, 500, 60, 500, 1.5);
}

// 97 % of the work at one pace in 400 s, the last 3 % (an incast's tail) at an eighth of it in
// 100 s: within 1.5x of the truth until the tail's share of it grows past that (no estimate
// from the past sees a slower pace to come), and again once the tail is a window (a tenth of
// the run) old. The run's average pace says 7 s at 450 s, with 50 left.
TEST(EtaEstimate, SlowTailCaughtWithinATenthOfTheRun) {
  auto work = [](double t) { return t < 400 ? 0.97 * t / 400 : 0.97 + 0.03 * (t - 400) / 100; };
  expect_within(work, 500, 3, 200, 1.5);
  expect_within(work, 500, 450, 500, 1.5);
}

// Thinning keeps the window a share of the run: a day-long run at a steady pace stays exact.
TEST(EtaEstimate, LongRunsThinTheirPoints) {
  EtaEstimate e;
  for (int t = 1; t <= 86400; ++t) e.add(t, t / 100000.0);
  EXPECT_NEAR(e.seconds_left(), 100000 - 86400, 1e-3);
}

TEST(WorkDone, FramesCarriedAgainstTheWorkloadsPathsAndItsAcksElseTheShares) {
  Progress p;
  p.total_link_frames = 6000;  // 1000 data frames over 6 links each
  p.data_frame_bytes = 4000;
  p.sent_bytes = 400 * 4000;   // 400 data frames sent ...
  p.sent_frames = 600;         // ... and 200 ACKs: 1.5 frames a data frame
  p.link_frames = 2250;
  EXPECT_DOUBLE_EQ(work_done(p), 0.25);  // of 9000 frame hops
  p.sent_frames = 300;  // fewer frames than full data frames (short last frames): never below 1
  EXPECT_DOUBLE_EQ(work_done(p), 2250.0 / 6000);
  p.link_frames = 7000;  // never past the end
  EXPECT_DOUBLE_EQ(work_done(p), 1);
  p.total_link_frames = 0;  // no paths known: the larger of the flows' and bytes' shares
  p.total_bytes = 1000;
  p.delivered_bytes = 900;
  p.flows = 10;
  p.flows_done = 5;
  EXPECT_DOUBLE_EQ(work_done(p), 0.9);
}

}  // namespace
}  // namespace uet::ab
