// FixedEv: one EV per PDC whatever happens (the single-path ECMP baseline).
#include "pathsel/fixed_ev.h"

#include <gtest/gtest.h>

#include <set>

namespace uet::pathsel {
namespace {

TEST(FixedEv_NextEv, AlwaysTheSameEvWhateverTheFeedback) {
  PathSelConfig c;
  c.algorithm = Algorithm::kFixed;
  c.ev_count = 64;
  FixedEv f(c, 1234);
  const uint16_t ev = f.next_ev(0);
  EXPECT_LT(ev, 64);
  for (int i = 0; i < 1000; ++i) {
    const Time now = i * kMicrosecond;
    ASSERT_EQ(f.next_ev(now), ev);
    f.on_ack(ev, /*ecn=*/true, now);
    f.on_nack(ev, now);
    f.on_timeout(ev, now);
  }
  // Expect: the marked, NACKed, timed-out EV is still the one used.
  EXPECT_EQ(f.next_ev(kSecond), ev);
}

TEST(FixedEv_NextEv, TheSeedChoosesTheEv) {
  PathSelConfig c;
  c.ev_count = 64;
  std::set<uint16_t> evs;
  for (uint64_t seed = 0; seed < 64; ++seed) evs.insert(FixedEv(c, seed).next_ev(0));
  // Expect: PDCs with different seeds spread over the EV space.
  EXPECT_GT(evs.size(), 20u);
  EXPECT_LT(*evs.rbegin(), 64);
}

}  // namespace
}  // namespace uet::pathsel
