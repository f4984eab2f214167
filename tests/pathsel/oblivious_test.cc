// Oblivious: every EV once per round, in a fresh random order each round, deaf to feedback.
#include "pathsel/oblivious.h"

#include <gtest/gtest.h>

#include <vector>

namespace uet::pathsel {
namespace {

Oblivious make(uint32_t n, uint64_t seed) {
  return Oblivious({.algorithm = Algorithm::kOblivious, .ev_count = n}, seed);
}

TEST(Oblivious_NextEv, EachRoundUsesEveryEvExactlyOnce) {
  for (uint32_t n : {1u, 2u, 12u, 16u, 100u}) {
    Oblivious o = make(n, 7);
    for (int round = 0; round < 50; ++round) {
      std::vector<int> seen(n, 0);
      for (uint32_t i = 0; i < n; ++i) {
        const uint16_t ev = o.next_ev(0);
        ASSERT_LT(ev, n);
        ++seen[ev];
      }
      for (uint32_t ev = 0; ev < n; ++ev) ASSERT_EQ(seen[ev], 1) << "n " << n << " ev " << ev;
    }
  }
}

TEST(Oblivious_NextEv, CoversAllEvsUniformlyInADifferentOrderEachRound) {
  constexpr uint32_t n = 16;
  Oblivious o = make(n, 42);
  std::vector<int> count(n, 0);
  std::vector<uint16_t> previous_round, round;
  int rounds_reordered = 0;
  for (int r = 0; r < 1000; ++r) {
    round.clear();
    for (uint32_t i = 0; i < n; ++i) round.push_back(o.next_ev(0));
    for (uint16_t ev : round) ++count[ev];
    if (!previous_round.empty() && round != previous_round) ++rounds_reordered;
    previous_round = round;
  }
  // Expect: exactly 1000 packets per EV, and the order changes from round to round.
  for (uint32_t ev = 0; ev < n; ++ev) EXPECT_EQ(count[ev], 1000) << "ev " << ev;
  EXPECT_GT(rounds_reordered, 900);
}

TEST(Oblivious_NextEv, FeedbackChangesNothing) {
  Oblivious a = make(16, 5), b = make(16, 5);
  for (int i = 0; i < 500; ++i) {
    const uint16_t ev = a.next_ev(i);
    ASSERT_EQ(b.next_ev(i), ev);
    b.on_ack(ev, true, i);
    b.on_nack(ev, i);
    b.on_timeout(ev, i);
  }
}

}  // namespace
}  // namespace uet::pathsel
