// transport/tss/crypto.h: the KDF against the spec's worked example (UE 1.0.2 §3.7.8.4, as the
// reference provider's KDF test quotes it), the IV, AES-256-GCM round trips and tampering with
// each backend, and the backends against each other (seal with one, open with the other).
#include "transport/tss/crypto.h"

#include <gtest/gtest.h>

#include <random>
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

// A Kdf keyed once gives the spec's example again and again (its CMAC re-initialised under the
// same key each block), follows a new key, and derives nothing once cleared.
TEST(Kdf_KeyedOnce, RepeatsTheSpecExampleFollowsANewKeyAndForgetsOnClear) {
  Kdf kdf;
  DerivedKey k;
  EXPECT_FALSE(kdf.derive(UET_TSS_LABEL_CLUSTER, kdf_context4(1, 2, 3), &k));  // no key yet
  ASSERT_TRUE(kdf.set_key(key_of(kMaster)));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(kdf.derive(UET_TSS_LABEL_CLUSTER, kdf_context4(0x1DC0, 0x74E5, 0xC0A82A01), &k));
    EXPECT_EQ(hex(k.key), "151b4ddb30112971ddeff3213000ee74d8f18aac2135601f1e5215e505fed449") << i;
    EXPECT_EQ(hex(k.iv_mask), "a7c6992c26b0bd5dd5c20e0c") << i;
  }
  Key other = key_of(kMaster);
  other[0] ^= 1;
  DerivedKey want;
  ASSERT_TRUE(tss::kdf(other, UET_TSS_LABEL_SERVER, kdf_context4(5, 0, 7), &want));
  ASSERT_TRUE(kdf.set_key(other));
  ASSERT_TRUE(kdf.derive(UET_TSS_LABEL_SERVER, kdf_context4(5, 0, 7), &k));
  EXPECT_EQ(hex(k.key), hex(want.key));
  EXPECT_EQ(hex(k.iv_mask), hex(want.iv_mask));
  Kdf moved = std::move(kdf);
  EXPECT_FALSE(kdf.keyed());  // NOLINT(bugprone-use-after-move): moved-from is empty
  ASSERT_TRUE(moved.derive(UET_TSS_LABEL_SERVER, kdf_context4(5, 0, 7), &k));
  EXPECT_EQ(hex(k.key), hex(want.key));
  moved.clear();
  EXPECT_FALSE(moved.derive(UET_TSS_LABEL_SERVER, kdf_context4(5, 0, 7), &k));
}

TEST(Kdf_Context, Ipv6FormPutsFourZeroBytesFirst) {
  std::array<uint8_t, 16> a{};
  a[0] = 0x20;
  a[15] = 0xbc;
  EXPECT_EQ(hex(kdf_context6(0x1DC0, 0x74E5, a)),
            "00000000" "1dc0" "000074e5" "20" + std::string(28, '0') + "bc");
}

class Gcm_RoundTrip : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    // setup.sh installs ipsec-mb and this CPU family has AES-NI: absent is a set-up fault.
    ASSERT_TRUE(backend_available(GetParam())) << backend_name(GetParam()) << " unavailable";
  }
};

TEST_P(Gcm_RoundTrip, SealsAndOpensInPlaceAndCatchesEveryFlippedBit) {
  Gcm tx, rx;
  const Key k = key_of(kMaster);
  ASSERT_TRUE(tx.set_key(k, true, GetParam()));
  ASSERT_TRUE(rx.set_key(k, false, GetParam()));
  EXPECT_EQ(tx.backend(), GetParam());
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

TEST_P(Gcm_RoundTrip, RekeyingReusesTheContextAndTheOldKeyNoLongerOpens) {
  Gcm tx, rx;
  Key k1 = key_of(kMaster), k2 = k1;
  k2[31] ^= 1;
  ASSERT_TRUE(tx.set_key(k1, true, GetParam()));
  ASSERT_TRUE(rx.set_key(k1, false, GetParam()));
  const Iv iv = packet_iv(1, 2, Iv{});
  std::vector<uint8_t> aad(8, 0xAA), data(64, 0x55);
  Tag tag{};
  ASSERT_TRUE(tx.seal(iv, aad, data, tag.data()));
  ASSERT_TRUE(rx.set_key(k2, false, GetParam()));
  std::vector<uint8_t> c = data;
  EXPECT_FALSE(rx.open(iv, aad, c, tag.data()));
  ASSERT_TRUE(rx.set_key(k1, false, GetParam()));
  c = data;
  EXPECT_TRUE(rx.open(iv, aad, c, tag.data()));
  // A sealing context does not open, nor an opening one seal.
  c = data;
  EXPECT_FALSE(tx.open(iv, aad, c, tag.data()));
  EXPECT_FALSE(rx.seal(iv, aad, c, tag.data()));
}

INSTANTIATE_TEST_SUITE_P(, Gcm_RoundTrip, testing::Values(Backend::kIpsecMb, Backend::kOpenSsl),
                         [](const testing::TestParamInfo<Backend>& i) {
                           return i.param == Backend::kIpsecMb ? std::string("IpsecMb")
                                                               : std::string("OpenSsl");
                         });

// Random keys, IVs, AAD and payloads of every length up to a jumbo frame, each split between
// the in-place part and the part read from elsewhere at a random point: what one backend seals
// the other opens to the same plaintext, both give the same ciphertext and tag, and a flipped
// tag bit fails on both.
TEST(Gcm_Backends, SealWithOneOpenWithTheOther) {
  ASSERT_TRUE(backend_available(Backend::kIpsecMb));
  std::mt19937_64 rng(20261206);
  auto bytes = [&](size_t n) {
    std::vector<uint8_t> v(n);
    for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
    return v;
  };
  constexpr Backend kBoth[] = {Backend::kIpsecMb, Backend::kOpenSsl};
  for (int round = 0; round < 600; ++round) {
    Key k;
    const std::vector<uint8_t> kb = bytes(kKeyBytes);
    std::copy(kb.begin(), kb.end(), k.begin());
    Iv iv;
    const std::vector<uint8_t> ivb = bytes(kIvBytes);
    std::copy(ivb.begin(), ivb.end(), iv.begin());
    const std::vector<uint8_t> aad = bytes(1 + rng() % 96);
    const size_t n = round < 300 ? static_cast<size_t>(round) : rng() % 9001;
    const std::vector<uint8_t> msg = bytes(n);
    const size_t split = n == 0 ? 0 : rng() % (n + 1);

    std::vector<uint8_t> ct[2];
    Tag tag[2];
    for (int b = 0; b < 2; ++b) {
      Gcm g;
      ASSERT_TRUE(g.set_key(k, true, kBoth[b]));
      ct[b] = msg;  // [0, split) in place, [split, n) encrypted from `msg` into ct
      ASSERT_TRUE(g.seal(iv, aad, std::span(ct[b].data(), split),
                         std::span(msg.data() + split, n - split), ct[b].data() + split,
                         tag[b].data()));
    }
    ASSERT_EQ(ct[0], ct[1]) << "round " << round << ", " << n << " bytes split at " << split;
    ASSERT_EQ(tag[0], tag[1]) << "round " << round;
    for (int b = 0; b < 2; ++b) {
      Gcm g;
      ASSERT_TRUE(g.set_key(k, false, kBoth[b]));
      std::vector<uint8_t> pt = ct[1 - b];
      ASSERT_TRUE(g.open(iv, aad, pt, tag[1 - b].data())) << backend_name(kBoth[b]);
      ASSERT_EQ(pt, msg);
      pt = ct[1 - b];
      Tag bad = tag[1 - b];
      bad[rng() % kTagBytes] ^= static_cast<uint8_t>(1u << (rng() % 8));
      EXPECT_FALSE(g.open(iv, aad, pt, bad.data())) << backend_name(kBoth[b]);
      // The unverified prefix of a trimmed frame.
      std::vector<uint8_t> prefix(ct[1 - b].begin(), ct[1 - b].begin() + split);
      ASSERT_TRUE(g.decrypt_unverified(iv, prefix));
      ASSERT_TRUE(std::equal(prefix.begin(), prefix.end(), msg.begin()));
    }
  }
}

TEST(Gcm_Backends, NamesParseAndAutoResolves) {
  Backend b;
  for (const char* name : {"auto", "ipsec-mb", "openssl"}) {
    ASSERT_TRUE(parse_backend(name, &b)) << name;
    EXPECT_STREQ(backend_name(b), name);
  }
  EXPECT_FALSE(parse_backend("aesni", &b));
  EXPECT_NE(best_backend(), Backend::kAuto);
  EXPECT_NE(backend_detail(Backend::kIpsecMb).find("ipsec-mb 1."), std::string::npos);
  EXPECT_NE(backend_detail(Backend::kOpenSsl).find("openssl 3."), std::string::npos);
  Gcm g;
  ASSERT_TRUE(g.set_key(Key{}, true));
  EXPECT_EQ(g.backend(), best_backend());
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
