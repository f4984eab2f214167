// The three real RoCEv2 frames of tests/wire/real_frames.h, captured from or built by
// other implementations (ConnectX-4 Lx, Linux rdma_rxe, scapy): our ICRC must match theirs.
#include "transport/wire/icrc.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_replace.h"
#include "tests/wire/real_frames.h"

namespace uet::wire {
namespace {

std::vector<uint8_t> hex(std::string_view s) {
  const std::string bytes = absl::HexStringToBytes(absl::StrReplaceAll(std::string(s), {{" ", ""}}));
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

uint32_t icrc_of_ipv4_frame(const std::vector<uint8_t>& f) {
  constexpr size_t kEth = 14;
  return compute_icrc(f.data() + kEth, f.size() - kEth - 4, /*ipv6=*/false, 20);
}

TEST(Icrc_RealFrames, ConnectX4CnpMatchesCapture) {
  const auto f = hex(kCx4CnpFrame);
  EXPECT_EQ(icrc_of_ipv4_frame(f), load_icrc(f.data() + f.size() - 4));
  EXPECT_EQ(load_icrc(f.data() + f.size() - 4), 0x2a00fd82u);  // wire bytes 82 fd 00 2a
}

TEST(Icrc_RealFrames, RxeReadRequestMatchesCapture) {
  const auto f = hex(kRxeReadRequestFrame);
  EXPECT_EQ(icrc_of_ipv4_frame(f), load_icrc(f.data() + f.size() - 4));
}

TEST(Icrc_RealFrames, ScapyUcSendOnlyMatches) {
  const auto f = hex(kScapyUcSendOnlyFrame);
  EXPECT_EQ(icrc_of_ipv4_frame(f), load_icrc(f.data() + f.size() - 4));
}

// The ICRC ignores exactly the fields routers may change; anything else changes it.
TEST(Icrc_Masking, VariantFieldsDoNotChangeIt) {
  auto f = hex(kRxeReadRequestFrame);
  const uint32_t want = icrc_of_ipv4_frame(f);
  f[14 + 1] ^= 0x03;   // ECN bits (a switch marks CE)
  f[14 + 8] -= 1;      // TTL decremented
  f[14 + 10] ^= 0x5A;  // IP checksum rewritten
  f[34 + 6] ^= 0xFF;   // UDP checksum
  f[42 + 4] |= 0x80;   // BTH FECN
  EXPECT_EQ(icrc_of_ipv4_frame(f), want);
}

TEST(Icrc_Masking, InvariantFieldsChangeIt) {
  const auto orig = hex(kRxeReadRequestFrame);
  const uint32_t want = icrc_of_ipv4_frame(orig);
  // IP id, source address, UDP source port, BTH opcode, QP, PSN, RETH length.
  for (size_t at : {14u + 4, 14u + 12, 34u, 42u, 42u + 7, 42u + 11, 54u + 15}) {
    auto f = orig;
    f[at] ^= 0x01;
    EXPECT_NE(icrc_of_ipv4_frame(f), want) << "byte " << at;
  }
}

TEST(Icrc_Ipv6, TrafficClassFlowLabelHopLimitAreMasked) {
  // An IPv6 RoCEv2 ACK built by hand; only the masked fields differ between the two copies.
  std::vector<uint8_t> ip6(40 + 8 + 12 + 4, 0);
  ip6[0] = 0x60;
  ip6[5] = 8 + 12 + 4;
  ip6[6] = 17;
  ip6[7] = 64;
  for (int i = 0; i < 32; ++i) ip6[8 + i] = static_cast<uint8_t>(i);
  ip6[40 + 2] = 0x12;
  ip6[40 + 3] = 0xb7;
  ip6[48] = 0x11;
  const uint32_t a = compute_icrc(ip6.data(), ip6.size(), true, 40);
  ip6[0] = 0x6F;  // traffic class high nibble
  ip6[1] = 0xFF;  // traffic class low nibble + flow label
  ip6[3] = 0x42;  // flow label
  ip6[7] = 3;     // hop limit
  EXPECT_EQ(compute_icrc(ip6.data(), ip6.size(), true, 40), a);
  ip6[8] ^= 1;  // source address is covered
  EXPECT_NE(compute_icrc(ip6.data(), ip6.size(), true, 40), a);
}

// ISA-L's CRC-32 against zlib's, the reference the ICRC is defined by: every length 0..600
// (the kernel's 16/64/256-byte blocks and their tails), odd starts, chained calls, and 9000 B.
TEST(Icrc_Crc32, MatchesZlibAtEveryLengthAlignmentAndSeed) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(9000 + 64);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len = 0; len <= 600; ++len) {
    for (size_t at : {size_t{0}, size_t{1}, size_t{3}, size_t{13}}) {
      const uLong want = crc32(0, buf.data() + at, static_cast<uInt>(len));
      ASSERT_EQ(icrc_crc32(0, buf.data() + at, len), want) << "len " << len << " at " << at;
    }
  }
  const uLong seed = crc32(0, buf.data(), 37);
  EXPECT_EQ(icrc_crc32(static_cast<uint32_t>(seed), buf.data() + 37, 9000),
            crc32(seed, buf.data() + 37, 9000));
  static constexpr uint8_t kLrh[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  EXPECT_EQ(icrc_crc32(0, kLrh, sizeof(kLrh)), crc32(0, kLrh, sizeof(kLrh)));
}

}  // namespace
}  // namespace uet::wire
