// checksum.cc: the RFC 1071 sum against a word-by-word reference, for every length and
// alignment, and chained over arbitrary splits (callers sum pseudo-header, header and payload
// in pieces).
#include "transport/wire/checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace uet::wire {
namespace {

// The textbook definition: big-endian 16-bit words, the odd byte padded with zero, end-around
// carry after every addition.
uint16_t reference_sum(const uint8_t* d, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i < len; i += 2) {
    sum += (uint32_t{d[i]} << 8) | (i + 1 < len ? d[i + 1] : 0);
    sum = (sum & 0xFFFF) + (sum >> 16);
  }
  return static_cast<uint16_t>(sum);
}

uint16_t fold(uint64_t s) {
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  return static_cast<uint16_t>(s);
}

// 0x0000 and 0xFFFF are both zero in ones' complement.
bool same_sum(uint16_t a, uint16_t b) { return a == b || (a % 0xFFFF) == (b % 0xFFFF); }

TEST(Checksum, Rfc1071Example) {
  // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
  const uint8_t d[] = {0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7};
  EXPECT_EQ(fold(csum_add(0, d, sizeof(d))), 0xDDF2);
  EXPECT_EQ(csum_finish(csum_add(0, d, sizeof(d))), static_cast<uint16_t>(~0xDDF2));
}

TEST(Checksum, EveryLengthAndAlignmentMatchesTheReference) {
  std::mt19937 rng(11);
  std::vector<uint8_t> buf(9216 + 8);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t len = 0; len <= 600; ++len) {  // the vector kernel's blocks and every tail
      const uint8_t* d = buf.data() + offset;
      ASSERT_TRUE(same_sum(fold(csum_add(0, d, len)), reference_sum(d, len)))
          << "offset " << offset << " len " << len;
    }
  }
  for (size_t len : {1024u, 4095u, 4096u, 9000u, 9216u}) {
    ASSERT_TRUE(same_sum(fold(csum_add(0, buf.data() + 3, len)), reference_sum(buf.data() + 3, len)))
        << len;
  }
}

// The fused copy: the bytes land exactly in [dst, dst + len) (guards either side untouched)
// and the sum is csum_add()'s, for every length over the vector blocks and odd starts.
TEST(Checksum, CopyWritesExactlyTheBytesAndSumsAsCsumAdd) {
  std::mt19937 rng(13);
  std::vector<uint8_t> src(9216 + 8);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  std::vector<uint8_t> dst(9216 + 64);
  auto check = [&](size_t from, size_t to, size_t len) {
    std::fill(dst.begin(), dst.end(), 0xA5);
    const uint64_t sum = csum_copy(7, dst.data() + to, src.data() + from, len);
    ASSERT_TRUE(same_sum(fold(sum), fold(csum_add(7, src.data() + from, len))))
        << "from " << from << " to " << to << " len " << len;
    ASSERT_EQ(std::memcmp(dst.data() + to, src.data() + from, len), 0) << len;
    for (size_t i = 0; i < to; ++i) ASSERT_EQ(dst[i], 0xA5) << "before, len " << len;
    for (size_t i = to + len; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << "after, len " << len;
  };
  for (size_t len = 0; len <= 600; ++len) check(len % 8, (len * 7) % 32, len);
  for (size_t len : {4095u, 4096u, 9000u, 9216u}) check(3, 5, len);
}

// The vector kernel (where the CPU has one) and the portable sum agree on every length,
// all-ones data included (the lanes' carries).
TEST(Checksum, VectorAndPortableSumsAgree) {
  std::mt19937 rng(14);
  std::vector<uint8_t> buf(9216 + 8);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len = 0; len <= 9216; len += 1 + len / 16) {
    ASSERT_TRUE(same_sum(fold(csum_add(0, buf.data() + 1, len)),
                         fold(detail::csum_add_portable(0, buf.data() + 1, len))))
        << len;
  }
  std::vector<uint8_t> ff(65535, 0xFF);
  EXPECT_TRUE(same_sum(fold(csum_add(0, ff.data(), ff.size())),
                       fold(detail::csum_add_portable(0, ff.data(), ff.size()))));
}

// Past the lengths at which the vector kernel widens its 32-bit lanes (every 512 KiB; unwidened,
// they would overflow before 8 MiB), with words at both ends of the signed range it sums them in
// (0x0000 and 0xFFFF become -32768 and 32767; 0x8000 and 0x7FFF become 0 and -1) and random
// ones, copied and not.
TEST(Checksum, LongBuffersAgreeWithThePortableSum) {
  std::mt19937 rng(15);
  std::vector<uint8_t> random((1 << 23) + 100);
  for (auto& b : random) b = static_cast<uint8_t>(rng());
  std::vector<uint8_t> dst(random.size());
  for (const int fill : {0x00, 0xFF, 0x80, 0x7F, -1}) {  // -1: the random bytes
    std::vector<uint8_t> buf = random;
    if (fill >= 0) std::fill(buf.begin(), buf.end(), static_cast<uint8_t>(fill));
    for (size_t len : {(size_t{1} << 19) - 32, size_t{1} << 19, (size_t{1} << 19) + 96,
                       (size_t{1} << 23) + 98}) {
      const uint16_t want = fold(detail::csum_add_portable(0, buf.data(), len));
      ASSERT_TRUE(same_sum(fold(csum_add(0, buf.data(), len)), want)) << fill << " " << len;
      ASSERT_TRUE(same_sum(fold(csum_copy(0, dst.data(), buf.data(), len)), want))
          << fill << " " << len;
      ASSERT_EQ(0, std::memcmp(dst.data(), buf.data(), len)) << fill << " " << len;
    }
  }
}

TEST(Checksum, AllOnesDataDoesNotLoseCarries) {
  std::vector<uint8_t> ff(65535, 0xFF);
  for (size_t len : {2u, 32u, 4096u, 65534u, 65535u})
    EXPECT_TRUE(same_sum(fold(csum_add(0, ff.data(), len)), reference_sum(ff.data(), len))) << len;
}

TEST(Checksum, ChainedOverEvenSplitsEqualsWhole) {
  std::mt19937 rng(12);
  std::vector<uint8_t> buf(5000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (int trial = 0; trial < 500; ++trial) {
    const size_t len = rng() % buf.size();
    size_t cut = rng() % (len + 1);
    cut &= ~size_t{1};  // pieces after the first must start at an even offset
    const uint64_t whole = csum_add(0, buf.data(), len);
    const uint64_t parts = csum_add(csum_add(0, buf.data(), cut), buf.data() + cut, len - cut);
    ASSERT_TRUE(same_sum(fold(whole), fold(parts))) << "len " << len << " cut " << cut;
  }
}

// The 20-byte fast path of ipv4_header_checksum() against the reference, the checksum field
// (bytes 10-11) left out whatever it holds.
TEST(Checksum, Ipv4HeaderWithoutOptionsMatchesTheReference) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 2000; ++trial) {
    uint8_t h[24];
    for (auto& b : h) b = static_cast<uint8_t>(rng());
    for (size_t len : {20u, 24u}) {
      std::vector<uint8_t> z(h, h + len);
      z[10] = z[11] = 0;
      const auto want = static_cast<uint16_t>(~reference_sum(z.data(), len));
      ASSERT_TRUE(same_sum(ipv4_header_checksum(h, len), want)) << trial << " len " << len;
    }
  }
}

// The receive check against ipv4_header_checksum(): true exactly when the field holds what it
// computes, with and without options, for random headers, headers carrying their own checksum,
// and the field's two ones'-complement zeros swapped (0x0000 <-> 0xFFFF must fail).
TEST(Checksum, Ipv4HeaderCheckMatchesTheComputedChecksumExactly) {
  std::mt19937 rng(17);
  int accepted = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    uint8_t h[24];
    for (auto& b : h) b = static_cast<uint8_t>(rng());
    for (size_t len : {20u, 24u}) {
      const uint16_t sum = ipv4_header_checksum(h, len);
      const auto field = [&] { return static_cast<uint16_t>(h[10] << 8 | h[11]); };
      ASSERT_EQ(ipv4_header_checksum_ok(h, len), sum == field()) << trial << " len " << len;
      if (trial % 2 == 0) {  // store the right checksum: accepted; one bit off: refused
        h[10] = static_cast<uint8_t>(sum >> 8);
        h[11] = static_cast<uint8_t>(sum);
        ASSERT_TRUE(ipv4_header_checksum_ok(h, len)) << trial << " len " << len;
        ++accepted;
        h[11] ^= 1;
        ASSERT_FALSE(ipv4_header_checksum_ok(h, len)) << trial << " len " << len;
        h[11] ^= 1;
      }
    }
  }
  EXPECT_EQ(accepted, 4000);
  // A header whose checksum is 0x0000 (its sum is 0xFFFF): 0xFFFF in the field must fail.
  for (int trial = 0; trial < 100000; ++trial) {
    uint8_t h[20];
    for (auto& b : h) b = static_cast<uint8_t>(rng());
    // Make the sum 0xFFFF: put the ones' complement of the rest into bytes 18-19.
    h[18] = h[19] = 0;
    const auto rest = static_cast<uint16_t>(~ipv4_header_checksum(h, 20));
    const auto need = static_cast<uint16_t>(0xFFFF - rest);  // rest + need = 0xFFFF
    h[18] = static_cast<uint8_t>(need >> 8);
    h[19] = static_cast<uint8_t>(need);
    if (ipv4_header_checksum(h, 20) != 0) continue;
    h[10] = h[11] = 0;
    ASSERT_TRUE(ipv4_header_checksum_ok(h, 20));
    h[10] = h[11] = 0xFF;
    ASSERT_FALSE(ipv4_header_checksum_ok(h, 20));
    return;
  }
  FAIL() << "no header with checksum 0x0000 built";
}

// RFC 768 by the book: pseudo-header (addresses, zero, protocol 17, UDP length), then the UDP
// header with its checksum field zero and the payload, summed word by word; 0 is sent as FFFF.
uint16_t reference_udp(const uint8_t* ip, bool ipv6, const uint8_t* udp, size_t udp_len) {
  std::vector<uint8_t> all(ipv6 ? ip + 8 : ip + 12, ipv6 ? ip + 40 : ip + 20);
  all.push_back(0);
  all.push_back(17);
  all.push_back(static_cast<uint8_t>(udp_len >> 8));
  all.push_back(static_cast<uint8_t>(udp_len));
  all.insert(all.end(), udp, udp + udp_len);
  all[all.size() - udp_len + 6] = all[all.size() - udp_len + 7] = 0;
  const auto c = static_cast<uint16_t>(~reference_sum(all.data(), all.size()));
  return c == 0 ? 0xFFFF : c;
}

// udp_checksum() sums in one native pass: every length (odd ones too), both address families,
// random bytes and all-ones bytes, and a datagram whose checksum computes to 0 (sent as FFFF).
TEST(Checksum, UdpChecksumMatchesTheReference) {
  std::mt19937 rng(23);
  std::vector<uint8_t> ip(40), udp(300);
  for (bool v6 : {false, true}) {
    for (size_t len = 8; len <= udp.size(); ++len) {
      for (int trial = 0; trial < 8; ++trial) {
        for (auto& b : ip) b = static_cast<uint8_t>(trial == 0 ? 0xFF : rng());
        for (auto& b : udp) b = static_cast<uint8_t>(trial == 0 ? 0xFF : rng());
        ASSERT_EQ(udp_checksum(ip.data(), v6, udp.data(), len),
                  reference_udp(ip.data(), v6, udp.data(), len))
            << "v6 " << v6 << " len " << len << " trial " << trial;
      }
    }
  }
  // Make the sum FFFF (checksum 0) with the last two payload bytes: sent as FFFF.
  for (auto& b : ip) b = static_cast<uint8_t>(rng());
  for (auto& b : udp) b = static_cast<uint8_t>(rng());
  constexpr size_t len = 64;
  udp[len - 2] = udp[len - 1] = 0;
  const auto rest = static_cast<uint16_t>(~reference_udp(ip.data(), false, udp.data(), len));
  const auto need = static_cast<uint16_t>(0xFFFF - rest);
  udp[len - 2] = static_cast<uint8_t>(need >> 8);
  udp[len - 1] = static_cast<uint8_t>(need);
  EXPECT_EQ(reference_udp(ip.data(), false, udp.data(), len), 0xFFFF);
  EXPECT_EQ(udp_checksum(ip.data(), false, udp.data(), len), 0xFFFF);
}

}  // namespace
}  // namespace uet::wire
