// transport/region_table.h: keys of a slot and its generation, refused once deregistered,
// freed slots reused oldest first after kReuseAfter others, generations wrapping at 256.
#include "transport/region_table.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace uet {
namespace {

using Table = RegionTable<16>;

TEST(RegionTable_Add, FirstRegistrationsAreKeysOneTwoThree) {
  Table t;
  std::vector<uint8_t> mem(64);
  for (uint32_t i = 1; i <= 5; ++i) {
    auto k = t.add(mem.data(), mem.size(), false, "register_memory");
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(*k, i);  // Expect: generation 0 gives slot + 1, the keys before deregistration
  }
  EXPECT_EQ(t.live(), 5u);
  EXPECT_EQ(t.find(0), nullptr);
  EXPECT_EQ(t.find(6), nullptr);
  EXPECT_EQ(t.find(uint64_t{1} << 32 | 1), nullptr);  // a 64-bit key with more above
  ASSERT_NE(t.find(3), nullptr);
  EXPECT_EQ(t.find(3)->base, mem.data());
}

TEST(RegionTable_Add, RefusesNullAndEmptyNamingTheCaller) {
  Table t;
  uint8_t b = 0;
  auto k = t.add(nullptr, 8, false, "register_memory");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("register_memory"), std::string::npos);
  EXPECT_FALSE(t.add(&b, 0, false, "register_memory").ok());
}

TEST(RegionTable_Remove, KeyIsRefusedAndNextRegistrationOfTheSlotDiffers) {
  Table t;
  std::vector<uint8_t> mem(64);
  const uint32_t k1 = *t.add(mem.data(), mem.size(), false, "r");
  ASSERT_TRUE(t.remove(k1, "d").ok());
  EXPECT_EQ(t.find(k1), nullptr);
  // Expect: a second removal and an unknown key are NotFound.
  EXPECT_TRUE(absl::IsNotFound(t.remove(k1, "d")));
  EXPECT_TRUE(absl::IsNotFound(t.remove(77, "d")));
  // The freed slot waits: the next kReuseAfter registrations take new slots.
  std::set<uint32_t> keys{k1};
  for (uint32_t i = 0; i < Table::kReuseAfter; ++i) {
    const uint32_t k = *t.add(mem.data(), mem.size(), false, "r");
    EXPECT_TRUE(keys.insert(k).second) << k;
    ASSERT_TRUE(t.remove(k, "d").ok());
  }
  // Expect: slot 0 comes back with generation 1; its old key stays refused.
  const uint32_t again = *t.add(mem.data(), mem.size(), false, "r");
  EXPECT_EQ(Table::slot_of(again), 0u);
  EXPECT_EQ(again, Table::key_of(0, 1));
  EXPECT_NE(again, k1);
  EXPECT_EQ(t.find(k1), nullptr);
  EXPECT_NE(t.find(again), nullptr);
  EXPECT_EQ(t.slots(), Table::kReuseAfter + 1);
}

// Slot 0 registered and deregistered 256 times (each time the oldest free slot): its key
// comes back in the 257th, as an IB key byte does; each generation refuses the others' keys.
TEST(RegionTable_Remove, GenerationWrapsAfter256AndNeverGivesKeyZero) {
  Table t;
  std::vector<uint8_t> mem(64);
  // kReuseAfter + 1 slots freed, so every add reuses the oldest free slot.
  std::vector<uint32_t> filler;
  for (uint32_t i = 0; i <= Table::kReuseAfter; ++i) {
    filler.push_back(*t.add(mem.data(), mem.size(), false, "r"));
  }
  for (const uint32_t k : filler) ASSERT_TRUE(t.remove(k, "d").ok());
  const uint32_t slots = t.slots();
  std::vector<uint32_t> slot0;  // slot 0's keys, generation by generation
  for (int round = 0; round < 300 * static_cast<int>(slots); ++round) {
    const uint32_t k = *t.add(mem.data(), mem.size(), false, "r");
    ASSERT_NE(k, 0u);
    if (Table::slot_of(k) == 0) slot0.push_back(k);
    for (size_t g = 0; g + 1 < slot0.size() && g < 3; ++g) {
      if (slot0[g] != k) {
        EXPECT_EQ(t.find(slot0[g]), nullptr);
      }
    }
    ASSERT_TRUE(t.remove(k, "d").ok());
  }
  EXPECT_EQ(t.slots(), slots);  // Expect: bounded, no slot made after the first
  ASSERT_GE(slot0.size(), 258u);
  EXPECT_EQ(slot0[0], Table::key_of(0, 1));  // (generation 0 was the filler's)
  for (size_t g = 1; g < 255; ++g) EXPECT_NE(slot0[g], slot0[0]);
  EXPECT_EQ(slot0[255], filler[0]);  // generation 0 again: the filler's old key ...
  EXPECT_EQ(slot0[256], slot0[0]);   // ... and then generation 1's
}

TEST(RegionTable_Add, FullTableReusesFreedSlotsAtOnceElseRefuses) {
  RegionTable<8> t;  // 255 slots
  std::vector<uint8_t> mem(8);
  std::vector<uint32_t> keys;
  for (uint32_t i = 0; i < RegionTable<8>::kMaxRegions; ++i) {
    keys.push_back(*t.add(mem.data(), mem.size(), false, "r"));
  }
  auto full = t.add(mem.data(), mem.size(), false, "register_memory");
  ASSERT_FALSE(full.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(full.status()));
  EXPECT_NE(full.status().message().find("255"), std::string::npos);
  ASSERT_TRUE(t.remove(keys[7], "d").ok());
  // Expect: at the bound a freed slot is taken without waiting, under a new generation.
  const uint32_t k = *t.add(mem.data(), mem.size(), false, "r");
  EXPECT_EQ(RegionTable<8>::slot_of(k), 7u);
  EXPECT_NE(k, keys[7]);
  EXPECT_LE(t.memory_bytes(), RegionTable<8>::bytes_bound(t.slots()));
}

TEST(RegionTable_Overlaps, SharedBytesOnly) {
  uint8_t m[32] = {};
  EXPECT_TRUE(overlaps(m + 4, 4, m, 8));
  EXPECT_FALSE(overlaps(m + 8, 4, m, 8));
  EXPECT_FALSE(overlaps(m, 0, m, 8));
  EXPECT_FALSE(overlaps(nullptr, 8, m, 8));
  EXPECT_TRUE(overlaps(m, 32, m + 31, 1));
}

}  // namespace
}  // namespace uet
