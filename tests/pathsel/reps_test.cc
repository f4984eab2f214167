// REPS (pathsel/reps.h): recycle the EVs of unmarked ACKs, explore otherwise, freeze on a
// timeout. Constants as uet-htsim: a buffer of 8, a 10 ms freeze, 16 explorations after it.
#include "pathsel/reps.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <vector>

#include "pathsel/oblivious.h"

namespace uet::pathsel {
namespace {

PathSelConfig reps_config(uint32_t n = 64) {
  return {.algorithm = Algorithm::kReps, .ev_count = n};
}

TEST(Reps_NextEv, ExploresRandomEvsWhileTheBufferIsEmpty) {
  Reps r(reps_config(64), 3);
  std::set<uint16_t> seen;
  for (int i = 0; i < 500; ++i) {
    const uint16_t ev = r.next_ev(0);
    ASSERT_LT(ev, 64);
    seen.insert(ev);
  }
  // Expect: nothing was recycled, so every EV came from exploration, spread over the space.
  EXPECT_GT(seen.size(), 55u);
  EXPECT_EQ(r.fresh(), 0u);
}

TEST(Reps_OnAck, RecyclesUnmarkedEvsEarliestFirstAndEachOnce) {
  Reps r(reps_config(), 1);
  r.on_ack(11, false, 0);
  r.on_ack(22, false, 0);
  r.on_ack(33, false, 0);
  EXPECT_EQ(r.fresh(), 3u);
  // Expect: the cached EVs come back in the order their ACKs arrived, each once.
  EXPECT_EQ(r.next_ev(0), 11);
  EXPECT_EQ(r.next_ev(0), 22);
  EXPECT_EQ(r.next_ev(0), 33);
  EXPECT_EQ(r.fresh(), 0u);
}

TEST(Reps_OnAck, MarkedNackedAndTimedOutEvsAreNotRecycled) {
  PathSelConfig c = reps_config();
  c.reps_freezing = false;  // the timeout here is only about recycling
  Reps r(c, 1);
  r.on_ack(11, false, 0);
  r.on_ack(22, true, 0);  // ECN echoed
  r.on_nack(33, 0);
  r.on_timeout(44, 0);
  r.on_ack(55, false, 0);
  EXPECT_EQ(r.fresh(), 2u);
  EXPECT_EQ(r.next_ev(0), 11);
  EXPECT_EQ(r.next_ev(0), 55);
}

TEST(Reps_OnAck, ABufferOfEightKeepsTheNewestEight) {
  Reps r(reps_config(), 1);
  for (uint16_t ev = 1; ev <= 10; ++ev) r.on_ack(ev, false, 0);
  EXPECT_EQ(r.fresh(), 8u);
  // Expect: 1 and 2 were overwritten; 3..10 come back oldest first.
  for (uint16_t ev = 3; ev <= 10; ++ev) EXPECT_EQ(r.next_ev(0), ev);
  EXPECT_EQ(r.fresh(), 0u);
}

// A closed loop: 8 packets in flight, each ACKed in order; EVs 0..3 of 16 always come back
// ECN-marked. REPS learns to avoid them; oblivious spraying keeps a quarter of its packets on
// them.
template <class Selector>
double marked_share(Selector s) {
  std::deque<uint16_t> in_flight;
  int marked = 0, sent = 0;
  for (int i = 0; i < 8; ++i) in_flight.push_back(s.next_ev(0));
  for (int i = 0; i < 20000; ++i) {
    const uint16_t ev = in_flight.front();
    in_flight.pop_front();
    s.on_ack(ev, ev < 4, i);
    const uint16_t next = s.next_ev(i);
    in_flight.push_back(next);
    if (i >= 1000) {  // after a warm-up
      ++sent;
      marked += next < 4;
    }
  }
  return static_cast<double>(marked) / sent;
}

TEST(Reps_Loop, StopsUsingMarkedEvs) {
  const double reps = marked_share(Reps(reps_config(16), 9));
  const double oblivious = marked_share(Oblivious(reps_config(16), 9));
  // Expect: marked paths fall out of use with REPS; oblivious stays at 4/16.
  EXPECT_LT(reps, 0.01);
  EXPECT_NEAR(oblivious, 0.25, 0.01);
}

TEST(Reps_Freeze, ATimeoutFreezesAndTheCachedEvsAreReusedInTurn) {
  Reps r(reps_config(), 1);
  r.on_ack(4, false, 0);
  r.on_ack(5, false, 0);
  r.on_ack(6, false, 0);
  r.on_timeout(9, kMicrosecond);
  ASSERT_TRUE(r.frozen());
  // Expect: while frozen, the cached EVs are reused round robin, fresh or not; no exploring.
  const std::vector<uint16_t> want = {4, 5, 6, 4, 5, 6, 4};
  for (uint16_t ev : want) EXPECT_EQ(r.next_ev(2 * kMicrosecond), ev);
  // An unmarked ACK while frozen still joins the cache.
  r.on_ack(7, false, 3 * kMicrosecond);
  EXPECT_EQ(r.cached(), 4u);
}

TEST(Reps_Freeze, FrozenWithNothingCachedExplores) {
  Reps r(reps_config(64), 2);
  r.on_timeout(0, 0);
  ASSERT_TRUE(r.frozen());
  std::set<uint16_t> seen;
  for (int i = 0; i < 100; ++i) seen.insert(r.next_ev(kMicrosecond));
  EXPECT_GT(seen.size(), 30u);
}

TEST(Reps_Freeze, ThawsAfterTenMillisecondsThenClearsAndExploresSixteen) {
  Reps r(reps_config(), 1);
  r.on_ack(4, false, 0);
  r.on_timeout(4, kMillisecond);
  // A second timeout while frozen does not extend the freeze.
  r.on_timeout(4, 6 * kMillisecond);
  EXPECT_TRUE(r.frozen());
  r.next_ev(11 * kMillisecond);  // exactly at the end: still frozen (htsim: now > exit time)
  EXPECT_TRUE(r.frozen());
  r.on_ack(5, false, 11 * kMillisecond + 1);
  // Expect: thawed, the cache cleared (then 5 recycled), 16 explorations ahead.
  EXPECT_FALSE(r.frozen());
  EXPECT_EQ(r.cached(), 1u);
  EXPECT_EQ(r.exploring(), 16u);
  for (int i = 0; i < 16; ++i) r.next_ev(12 * kMillisecond);
  EXPECT_EQ(r.exploring(), 0u);
  // Expect: then the recycled EV again.
  EXPECT_EQ(r.next_ev(12 * kMillisecond), 5);
}

TEST(Reps_Freeze, NoFreezeWhileExploringOrWhenDisabled) {
  Reps r(reps_config(), 1);
  r.on_timeout(0, 0);
  r.next_ev(20 * kMillisecond);  // thaws: 16 to explore, one used
  ASSERT_EQ(r.exploring(), 15u);
  r.on_timeout(0, 20 * kMillisecond);
  EXPECT_FALSE(r.frozen());  // htsim: a timeout freezes only when explore_counter == 0

  PathSelConfig c = reps_config();
  c.reps_freezing = false;
  Reps off(c, 1);
  off.on_timeout(0, 0);
  EXPECT_FALSE(off.frozen());
}

TEST(Reps_Determinism, SameSeedSameSequence) {
  Reps a(reps_config(), 77), b(reps_config(), 77), other(reps_config(), 78);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint16_t ev = a.next_ev(i);
    ASSERT_EQ(b.next_ev(i), ev);
    differ += other.next_ev(i) != ev;
    const bool mark = i % 3 == 0;
    a.on_ack(ev, mark, i);
    b.on_ack(ev, mark, i);
    other.on_ack(ev, mark, i);
  }
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace uet::pathsel
