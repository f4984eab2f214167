// PathSelector: one type for every algorithm, dispatched without virtual calls; the same seed
// and events give the same EVs.
#include "pathsel/path_selector.h"

#include <gtest/gtest.h>

#include <vector>

namespace uet::pathsel {
namespace {

constexpr Algorithm kAll[] = {Algorithm::kFixed, Algorithm::kOblivious, Algorithm::kReps,
                              Algorithm::kBitmap, Algorithm::kMixed};

std::vector<uint16_t> run(Algorithm a, uint64_t seed) {
  PathSelConfig c;
  c.algorithm = a;
  c.ev_count = 32;
  PathSelector s(c, seed);
  std::vector<uint16_t> evs;
  for (int i = 0; i < 2000; ++i) {
    const Time now = i * kMicrosecond;
    const uint16_t ev = s.next_ev(now);
    evs.push_back(ev);
    if (i % 7 == 0) {
      s.on_nack(ev, now);
    } else if (i == 500) {
      s.on_timeout(ev, now);
    } else {
      s.on_ack(ev, /*ecn=*/i % 5 == 0, now);
    }
  }
  return evs;
}

TEST(PathSelector_Create, PicksTheConfiguredAlgorithm) {
  for (Algorithm a : kAll) {
    PathSelConfig c;
    c.algorithm = a;
    c.ev_count = 8;
    auto s = PathSelector::create(c, 1);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->algorithm(), a) << to_string(a);
  }
  PathSelConfig c;
  c.algorithm = Algorithm::kReps;
  EXPECT_NE(PathSelector(c, 1).as<Reps>(), nullptr);
  EXPECT_EQ(PathSelector(c, 1).as<Bitmap>(), nullptr);
  EXPECT_EQ(PathSelector().algorithm(), Algorithm::kFixed);
  EXPECT_EQ(PathSelector().next_ev(0), 0);
}

TEST(PathSelector_Create, RefusesABadConfig) {
  PathSelConfig c;
  c.ev_count = 0;
  EXPECT_FALSE(PathSelector::create(c, 1).ok());
}

TEST(PathSelector_Determinism, SameSeedSameSequenceOtherSeedOtherSequence) {
  for (Algorithm a : kAll) {
    const std::vector<uint16_t> x = run(a, 11), y = run(a, 11), z = run(a, 12);
    EXPECT_EQ(x, y) << to_string(a);
    for (uint16_t ev : x) ASSERT_LT(ev, 32) << to_string(a);
    if (a != Algorithm::kFixed) {
      EXPECT_NE(x, z) << to_string(a);
    }
  }
}

// The same events through PathSelector and through the bare engine it wraps (a template, so
// every algorithm is driven the same way): the same EVs. on_ack skips the visit for the
// selectors that ignore feedback; the others must still hear every ACK.
template <typename Engine>
void expect_same_as_engine(Algorithm a, uint32_t ev_count) {
  PathSelConfig c;
  c.algorithm = a;
  c.ev_count = ev_count;
  PathSelector s(c, 3);
  Engine e(c, 3);
  for (int i = 0; i < 3000; ++i) {
    const Time now = i * kMicrosecond;
    const uint16_t ev = s.next_ev(now);
    ASSERT_EQ(e.next_ev(now), ev) << to_string(a) << " packet " << i;
    if (i % 11 == 0) {
      s.on_nack(ev, now);
      e.on_nack(ev, now);
    } else {
      s.on_ack(ev, /*ecn=*/i % 3 == 0, now);
      e.on_ack(ev, /*ecn=*/i % 3 == 0, now);
    }
  }
}

TEST(PathSelector_OnAck, EveryAlgorithmHearsWhatItsEngineHears) {
  for (uint32_t n : {1u, 32u}) {
    expect_same_as_engine<FixedEv>(Algorithm::kFixed, n);
    expect_same_as_engine<Oblivious>(Algorithm::kOblivious, n);
    expect_same_as_engine<Reps>(Algorithm::kReps, n);
    expect_same_as_engine<Bitmap>(Algorithm::kBitmap, n);
    expect_same_as_engine<Mixed>(Algorithm::kMixed, n);
  }
  // Expect: feedback matters to REPS (the check above would pass vacuously otherwise).
  PathSelConfig c;
  c.algorithm = Algorithm::kReps;
  c.ev_count = 32;
  PathSelector fed(c, 3), deaf(c, 3);
  int differ = 0;
  for (int i = 0; i < 3000; ++i) {
    const Time now = i * kMicrosecond;
    const uint16_t ev = fed.next_ev(now);
    differ += ev != deaf.next_ev(now);
    fed.on_ack(ev, /*ecn=*/false, now);
  }
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace uet::pathsel
