// FastMod against the % operator.
#include "sim/fast_mod.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "sim/rng.h"

namespace uet::sim {
namespace {

// Small divisors (ECMP group sizes) with every residue class near 0 and 2^32, then seeded
// random divisors and dividends over the whole 32-bit range. Expect: x % d every time.
TEST(FastMod_Mod, EqualsTheRemainderForEdgesAndRandomValues) {
  for (uint32_t d = 1; d <= 300; ++d) {
    const FastMod f = FastMod::of(d);
    for (uint32_t x = 0; x < 1000; ++x) ASSERT_EQ(f.mod(x), x % d) << x << " mod " << d;
    for (uint32_t x = UINT32_MAX; x > UINT32_MAX - 1000; --x) ASSERT_EQ(f.mod(x), x % d) << x << " mod " << d;
  }
  Rng rng(11);
  for (int i = 0; i < 2000; ++i) {
    const auto d = static_cast<uint32_t>(1 + rng.below(UINT32_MAX));
    const FastMod f = FastMod::of(d);
    for (int j = 0; j < 500; ++j) {
      const auto x = static_cast<uint32_t>(rng.next());
      ASSERT_EQ(f.mod(x), x % d) << x << " mod " << d;
    }
  }
  EXPECT_EQ(FastMod::of(UINT32_MAX).mod(UINT32_MAX), 0u);
  EXPECT_EQ(FastMod::of(UINT32_MAX).mod(UINT32_MAX - 1), UINT32_MAX - 1);
}

}  // namespace
}  // namespace uet::sim
