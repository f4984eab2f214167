// transport/ready_bits.h: the round robin that passes over clear bits ends where, and visits
// what, the round robin that visits every position would; bits follow a swap-remove.
#include "transport/ready_bits.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace uet {
namespace {

// One tx() turn over `size` positions from `rr`, visiting every position: a visit "sends"
// when `sends` says so, until `budget` sends or `size` idle visits in a row.
struct Turn {
  std::vector<uint32_t> visited;
  uint32_t rr = 0;
};

Turn every_position(const std::vector<bool>& sends, uint32_t rr, size_t budget) {
  Turn t;
  const size_t size = sends.size();
  size_t n = 0;
  for (size_t idle = 0; n < budget && idle < size;) {
    if (rr >= size) rr = 0;
    t.visited.push_back(rr);
    if (sends[rr]) {
      ++n;
      idle = 0;
    } else {
      ++idle;
    }
    ++rr;
  }
  t.rr = rr;
  return t;
}

// The same turn with ReadyBits set exactly where a visit would send; the visited list keeps
// only the visits that happen.
Turn ready_only(const std::vector<bool>& sends, uint32_t rr, size_t budget) {
  const size_t size = sends.size();
  ReadyBits bits;
  bits.grow_to(size);
  for (uint32_t i = 0; i < size; ++i)
    if (sends[i]) bits.set(i);
  Turn t;
  size_t n = 0;
  for (size_t idle = 0; n < budget && idle < size;) {
    if (rr >= size) rr = 0;
    if (!bits.skip_idle(rr, idle, size)) break;
    if (rr >= size) continue;
    t.visited.push_back(rr);
    ++n;
    idle = 0;
    ++rr;
  }
  t.rr = rr;
  return t;
}

TEST(ReadyBits_Turn, SkippingClearBitsEndsWhereVisitingEveryPositionEnds) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    const size_t size = 1 + rng() % 200;
    const double density = static_cast<double>(rng() % 5) / 8.0;  // 0 .. 0.5 of them busy
    std::vector<bool> sends(size);
    for (size_t i = 0; i < size; ++i) sends[i] = std::uniform_real_distribution<>(0, 1)(rng) < density;
    const auto rr = static_cast<uint32_t>(rng() % (size + 1));  // rr == size happens (wraps)
    const size_t budget = 1 + rng() % 40;
    const Turn all = every_position(sends, rr, budget);
    const Turn ready = ready_only(sends, rr, budget);
    std::vector<uint32_t> busy;
    for (uint32_t v : all.visited)
      if (sends[v]) busy.push_back(v);
    ASSERT_EQ(ready.visited, busy) << "trial " << trial;
    ASSERT_EQ(ready.rr, all.rr) << "trial " << trial << " size " << size;
  }
}

TEST(ReadyBits_Move, SwapRemoveCarriesTheLastBit) {
  ReadyBits b;
  b.grow_to(130);
  b.set(129);
  b.move(129, 3);
  EXPECT_TRUE(b.test(3));
  EXPECT_FALSE(b.test(129));
  b.move(128, 3);  // a clear last bit clears the target
  EXPECT_FALSE(b.test(3));
  b.set(7);
  b.move(7, 7);  // the removed position was the last: only cleared
  EXPECT_FALSE(b.test(7));
  EXPECT_EQ(b.next(0, 130), 130u);
  b.set(64);
  EXPECT_EQ(b.next(0, 130), 64u);
  EXPECT_EQ(b.next(65, 130), 130u);
  EXPECT_EQ(b.next(64, 64), 64u);  // beyond the list: nothing
}

}  // namespace
}  // namespace uet
