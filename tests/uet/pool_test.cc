// GrowRing: storage that doubles on reserve() up to a bound and shrinks at a quarter, entries
// kept at their positions.
#include "transport/pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace uet {
namespace {

// Expect: nothing is allocated before the first reserve; capacities go 8, 16, 32 ... and stop
// at the bound rounded up to a power of 2 (mask indexing); a reserve that fits changes
// nothing.
TEST(GrowRing_Reserve, DoublesFromEightAndStopsAtTheBoundRoundedUp) {
  GrowRing<uint64_t> r;
  EXPECT_EQ(r.capacity(), 0u);
  EXPECT_EQ(r.bytes(), 0u);
  r.reserve(0, 0, 1, 100);
  EXPECT_EQ(r.capacity(), 8u);
  EXPECT_EQ(r.bytes(), 8 * sizeof(uint64_t));
  r.reserve(0, 0, 8, 100);
  EXPECT_EQ(r.capacity(), 8u);
  r.reserve(0, 0, 9, 100);
  EXPECT_EQ(r.capacity(), 16u);
  r.reserve(0, 0, 33, 100);
  EXPECT_EQ(r.capacity(), 64u);
  r.reserve(0, 0, 65, 100);
  EXPECT_EQ(r.capacity(), 128u);
  r.reserve(0, 0, 100, 100);
  EXPECT_EQ(r.capacity(), 128u);
  GrowRing<uint64_t> small;
  small.reserve(0, 0, 1, 3);
  EXPECT_EQ(small.capacity(), 4u);
  GrowRing<uint64_t> one;
  one.reserve(0, 0, 1, 1);
  EXPECT_EQ(one.capacity(), 1u);
  one[5] = 9;  // every position is slot 0
  EXPECT_EQ(one[6], 9u);
}

// Expect: growing while the live entries wrap around the old storage (positions 8..15 of a
// ring of 8 sit in slots 0..7, and belong in slots 8..15 of a ring of 16) keeps every entry
// at its position, and the old slots' stale entries are not carried over.
TEST(GrowRing_Reserve, LiveEntriesKeepTheirPositionsAcrossGrowth) {
  GrowRing<uint64_t> r;
  r.reserve(0, 0, 8, 1024);
  for (uint64_t p = 0; p < 8; ++p) r[p] = 1000 + p;
  uint64_t head = 3, tail = 8;                      // 0..2 consumed
  for (; tail < 11; ++tail) r[tail] = 1000 + tail;  // wraps into slots 0..2
  r.reserve(head, tail, tail - head + 1, 1024);
  ASSERT_EQ(r.capacity(), 16u);
  for (uint64_t p = head; p < tail; ++p) EXPECT_EQ(r[p], 1000 + p) << p;
  for (uint64_t p = 0; p < head; ++p) EXPECT_EQ(r[p], 0u) << "consumed entry " << p << " kept";
  // Far positions, wrapping many times.
  head = 1'000'003;
  tail = head;
  for (; tail < head + 16; ++tail) r[tail] = tail;
  r.reserve(head, tail, 17, 1024);
  ASSERT_EQ(r.capacity(), 32u);
  for (uint64_t p = head; p < tail; ++p) EXPECT_EQ(r[p], p) << p;
}

// Expect: a reserve that fits does not move the storage (references stay valid).
TEST(GrowRing_Reserve, FittingReserveKeepsTheStorage) {
  GrowRing<uint64_t> r;
  r.reserve(0, 0, 5, 64);
  r[4] = 7;
  const uint64_t* before = &r[4];
  r.reserve(0, 5, 8, 64);
  EXPECT_EQ(&r[4], before);
  EXPECT_EQ(r[4], 7u);
}

// Pushing 1..20 entries doubles the storage from one slot; the bound (not a power of 2)
// caps it at the bound rounded up; order survives every move.
TEST(GrowRing_Reserve, FromOneSlotDoublesUpToTheBound) {
  GrowRing<uint64_t, 1> r;
  EXPECT_EQ(r.capacity(), 0u);
  uint64_t head = 5, tail = 5;  // positions need not start at 0
  std::vector<uint32_t> seen;
  for (uint64_t v = 0; v < 20; ++v) {
    r.reserve(head, tail, tail - head + 1, 20);
    r[tail++] = v;
    seen.push_back(r.capacity());
  }
  // Expect: 1, 2, 4, 4, 8 x4, 16 x8, 32 x4 (20 rounded up); every entry in order.
  EXPECT_EQ(seen.front(), 1u);
  EXPECT_EQ(seen[1], 2u);
  EXPECT_EQ(seen[3], 4u);
  EXPECT_EQ(seen[15], 16u);
  EXPECT_EQ(seen.back(), 32u);
  EXPECT_EQ(r.bytes(), (GrowRing<uint64_t, 1>::bytes_bound(20)));
  for (uint64_t p = head; p != tail; ++p) EXPECT_EQ(r[p], p - head);
}

// Shrinking waits until what must be kept fits a quarter of the storage, keeps twice that
// (at least `keep` slots) and the live entries in order.
TEST(GrowRing_Shrink, GivesBackAtAQuarterAndKeepsOrder) {
  GrowRing<uint64_t, 1> r;
  uint64_t head = 0, tail = 0;
  for (uint64_t v = 0; v < 64; ++v) {
    r.reserve(head, tail, tail - head + 1, 1024);
    r[tail++] = v;
  }
  ASSERT_EQ(r.capacity(), 64u);
  head = 40;  // 24 live: more than a quarter
  r.shrink(head, tail, tail - head, 2);
  EXPECT_EQ(r.capacity(), 64u);
  head = 61;  // 3 live
  r.shrink(head, tail, tail - head, 2);
  EXPECT_EQ(r.capacity(), 8u);
  for (uint64_t p = head; p != tail; ++p) EXPECT_EQ(r[p], p);
  r.shrink(head, tail, 16, 2);  // the owner must keep room for 16 (reserved completions)
  EXPECT_EQ(r.capacity(), 8u);
  head = tail;
  r.shrink(head, tail, 0, 2);
  EXPECT_EQ(r.capacity(), 2u) << "never below keep";
  r.shrink(head, tail, 0, 2);
  EXPECT_EQ(r.capacity(), 2u);
}

}  // namespace
}  // namespace uet
