// transport/tss/crypto.h: the KDF against the spec's worked example (UE 1.0.2 §3.7.8.4, as the
// reference provider's KDF test quotes it), the IV, and AES-256-GCM round trips and tampering.
#include "transport/tss/crypto.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace uet::tss {
namespace {

template <size_t N>
std::string hex(const std::array<uint8_t, N>& a) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : a) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

Key key_of(const char* h) {
  Key k{};
  EXPECT_TRUE(parse_key(h, &k));
  return k;
}

const char* kMaster = "34448a064292601b11a0978f56a2d34cf3fc35ede1a6bc04f8db3e5243a2b0ca";

TEST(Kdf_SpecExample, ClusterIpv4DerivesTheSpecKeyAndIvMask) {
  // TSC 0x1DC074E500000023: epoch 0x1DC0, rekey (mask 0x0000FFFF00000000, shift 32) 0x74E5,
  // source 192.168.42.1.
  const auto ctx = kdf_context4(0x1DC0, 0x000074E5, 0xC0A82A01);
  EXPECT_EQ(hex(ctx), "1dc0000074e5c0a82a01");
  DerivedKey k;
  ASSERT_TRUE(kdf(key_of(kMaster), UET_TSS_LABEL_CLUSTER, ctx, &k));
  EXPECT_EQ(hex(k.key), "151b4ddb30112971ddeff3213000ee74d8f18aac2135601f1e5215e505fed449");
  EXPECT_EQ(hex(k.iv_mask), "a7c6992c26b0bd5dd5c20e0c");
  // The packet IV: source || TSC, masked.
  EXPECT_EQ(hex(packet_iv(0xC0A82A01, 0x1DC074E500000023, k.iv_mask)),
            "676eb32d3b70c9b8d5c20e2f");
}

TEST(Kdf_SpecExample, EveryContextByteChangesTheKey) {
  DerivedKey base;
  ASSERT_TRUE(kdf(key_of(kMaster), "U1", kdf_context4(1, 2, 3), &base));
  DerivedKey other;
  ASSERT_TRUE(kdf(key_of(kMaster), "U2", kdf_context4(1, 2, 3), &other));
  EXPECT_NE(hex(base.key), hex(other.key));
  ASSERT_TRUE(kdf(key_of(kMaster), "U1", kdf_context4(1, 2, 4), &other));
  EXPECT_NE(hex(base.key), hex(other.key));
  ASSERT_TRUE(kdf(key_of(kMaster), "U1", kdf_context4(2, 2, 3), &other));
  EXPECT_NE(hex(base.key), hex(other.key));
}

TEST(Kdf_Context, Ipv6FormPutsFourZeroBytesFirst) {
  std::array<uint8_t, 16> a{};
  a[0] = 0x20;
  a[15] = 0xbc;
  EXPECT_EQ(hex(kdf_context6(0x1DC0, 0x74E5, a)),
            "00000000" "1dc0" "000074e5" "20" + std::string(28, '0') + "bc");
}

TEST(Gcm_RoundTrip, SealsAndOpensInPlaceAndCatchesEveryFlippedBit) {
  Gcm tx, rx;
  const Key k = key_of(kMaster);
  ASSERT_TRUE(tx.set_key(k, true));
  ASSERT_TRUE(rx.set_key(k, false));
  const Iv iv = packet_iv(0x0A000001, 7, Iv{});
  std::vector<uint8_t> aad = {1, 2, 3, 4, 5};
  std::vector<uint8_t> msg(100);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> ct = msg;
  Tag tag{};
  ASSERT_TRUE(tx.seal(iv, aad, ct, tag.data()));
  EXPECT_NE(ct, msg);
  std::vector<uint8_t> pt = ct;
  ASSERT_TRUE(rx.open(iv, aad, pt, tag.data()));
  EXPECT_EQ(pt, msg);
  // Expect: any one bit of ciphertext, AAD or tag flipped fails authentication.
  for (size_t bit = 0; bit < (ct.size() + aad.size() + tag.size()) * 8; bit += 13) {
    std::vector<uint8_t> c = ct, a = aad;
    Tag t = tag;
    size_t byte = bit / 8;
    uint8_t m = static_cast<uint8_t>(1u << (bit % 8));
    if (byte < c.size()) {
      c[byte] ^= m;
    } else if ((byte -= c.size()) < a.size()) {
      a[byte] ^= m;
    } else {
      t[byte - a.size()] ^= m;
    }
    EXPECT_FALSE(rx.open(iv, a, c, t.data())) << "bit " << bit;
  }
  // The unverified prefix decryption (trimmed packets) yields the plaintext prefix.
  std::vector<uint8_t> prefix(ct.begin(), ct.begin() + 20);
  ASSERT_TRUE(rx.decrypt_unverified(iv, prefix));
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), msg.begin()));
}

TEST(ParseKey, RefusesWrongLengthAndNonHex) {
  Key k;
  EXPECT_FALSE(parse_key("00", &k));
  EXPECT_FALSE(parse_key(std::string(64, 'g'), &k));
  EXPECT_TRUE(parse_key(std::string(64, 'A'), &k));
  EXPECT_EQ(k[0], 0xAA);
}

}  // namespace
}  // namespace uet::tss
