// HeaderWords (transport/wire/header_gen.h): a header built in registers is byte for byte the
// header the generated set_ accessors write, for every field of the headers the data path
// builds that way, fields crossing 8-byte words included.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "spec/uet.def"
#include "transport/wire/uet_headers.h"

namespace uet::wire {
namespace {

// Sets every field of H, in table order, to a value derived from `seed` both ways (later
// fields overwrite the bits of earlier overlapping ones the same way in both) and compares.
#define SET_BOTH(name, off, width, mask, kind, vals, title)                         \
  {                                                                                 \
    using F = H::name##_field;                                                      \
    const auto v = static_cast<F::Value>(pattern(seed, off, width));                \
    words.set<F>(v);                                                                \
    ref.set_##name(v);                                                              \
    words.store(got);                                                               \
    ASSERT_EQ(std::memcmp(got, ref.raw, H::kSize), 0) << #name << " seed " << seed; \
  }

uint64_t pattern(uint64_t seed, int off, int width) {
  uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t(off) << 32 | uint64_t(width));
  x ^= x >> 29;
  return seed == 0 ? ~uint64_t{0} : seed == 1 ? 0 : x * 0xBF58476D1CE4E5B9ull;
}

template <typename H>
void fill_and_compare(void (*fill)(HeaderWords<H>&, H&, uint8_t*, uint64_t)) {
  for (uint64_t seed = 0; seed < 64; ++seed) {
    HeaderWords<H> words;
    H ref{};
    uint8_t got[H::kSize];
    fill(words, ref, got, seed);
  }
}

TEST(HeaderWords_Set, RudRequestMatchesAccessors) {
  using H = PdsRudRodCc;
  fill_and_compare<H>([](HeaderWords<H>& words, H& ref, uint8_t* got, uint64_t seed) {
    UET_FIELDS_pds_rud_rod_cc(SET_BOTH)
  });
}

TEST(HeaderWords_Set, StandardSesRequestMatchesAccessors) {
  using H = SesStandardRequest;
  fill_and_compare<H>([](HeaderWords<H>& words, H& ref, uint8_t* got, uint64_t seed) {
    UET_FIELDS_ses_std(SET_BOTH)
  });
}

TEST(HeaderWords_Set, AckCcMatchesAccessors) {
  using H = PdsAckCc;
  fill_and_compare<H>([](HeaderWords<H>& words, H& ref, uint8_t* got, uint64_t seed) {
    UET_FIELDS_pds_ack_cc(SET_BOTH)
  });
}

// store<N>() writes the first N bytes and nothing after them.
TEST(HeaderWords_Store, PrefixLeavesTheRestAlone) {
  HeaderWords<PdsRudRodCc> words;
  words.set<PdsRudRodCc::psn_field>(0x01020304);
  words.set<PdsRudRodCc::credit_target_field>(0xABCDEF);
  uint8_t buf[PdsRudRodCc::kSize];
  std::memset(buf, 0x77, sizeof(buf));
  words.store<PdsRudRod::kSize>(buf);
  PdsRudRodCc ref{};
  ref.set_psn(0x01020304);
  EXPECT_EQ(std::memcmp(buf, ref.raw, PdsRudRod::kSize), 0);
  for (size_t i = PdsRudRod::kSize; i < sizeof(buf); ++i) EXPECT_EQ(buf[i], 0x77) << i;
}

}  // namespace
}  // namespace uet::wire
