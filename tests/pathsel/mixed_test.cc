// Mixed (pathsel/mixed.h): REPS's recycled EVs first; when REPS has none, the bitmap's
// spraying, which skips EVs with bad news where plain REPS would draw any EV at random.
#include "pathsel/mixed.h"

#include <gtest/gtest.h>

#include <set>

namespace uet::pathsel {
namespace {

PathSelConfig mixed_config(uint32_t n) { return {.algorithm = Algorithm::kMixed, .ev_count = n}; }

TEST(Mixed_NextEv, RecyclesGoodEvsFirstInTheOrderTheyCameBack) {
  Mixed m(mixed_config(64), 1);
  m.on_ack(40, /*ecn=*/false, 0);
  m.on_ack(7, /*ecn=*/false, 0);
  m.on_ack(19, /*ecn=*/true, 0);  // marked: not recycled
  EXPECT_EQ(m.next_ev(0), 40);
  EXPECT_EQ(m.next_ev(0), 7);
  EXPECT_EQ(m.reps().fresh(), 0u);
}

TEST(Mixed_NextEv, ExploresOnlyEvsWithoutBadNews) {
  // 8 EVs, 6 of them NACKed (penalty 4 each): with nothing to recycle, the next packets go
  // to the two clean EVs, where REPS would pick any of the 8.
  Mixed m(mixed_config(8), 2);
  for (uint16_t ev = 0; ev < 6; ++ev) m.on_nack(ev, 0);
  std::set<uint16_t> used;
  for (int i = 0; i < 6; ++i) used.insert(m.next_ev(0));
  EXPECT_EQ(used, (std::set<uint16_t>{6, 7}));
}

TEST(Mixed_OnTimeout, FreezesLikeReps) {
  PathSelConfig c = mixed_config(32);
  Mixed m(c, 3);
  m.on_ack(5, false, 0);
  m.on_ack(9, false, 0);
  m.on_timeout(12, kMicrosecond);
  EXPECT_TRUE(m.reps().frozen());
  EXPECT_EQ(m.bitmap().penalty(12), c.bitmap_max_penalty);
  // Frozen: the cached EVs, round robin, fresh or not.
  EXPECT_EQ(m.next_ev(2 * kMicrosecond), 5);
  EXPECT_EQ(m.next_ev(2 * kMicrosecond), 9);
  EXPECT_EQ(m.next_ev(2 * kMicrosecond), 5);
}

}  // namespace
}  // namespace uet::pathsel
