// Checksum offload between a host and the engines (transport.h Frame::checksums_ok,
// UetConfig::udp_checksum, RoceConfig::icrc_offload): what a NIC (or io_uring's kernel) does
// is not done twice, and what it does not do is still done by the engine.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/wire/decode.h"
#include "transport/wire/icrc.h"

namespace uet {
namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

std::unique_ptr<UetEndpoint> uet_ep(uint32_t ip, bool udp_checksum) {
  UetConfig c = testing::host_config<UetConfig>(ip);
  c.udp_checksum = udp_checksum;
  return std::move(*UetEndpoint::create(c));
}

// A's first frame of a one-packet WRITE to B.
std::vector<uint8_t> first_write_frame(UetEndpoint& a, uint32_t rkey, std::vector<uint8_t>& src) {
  EXPECT_TRUE(a.post_write(testing::write_request(1, kIpB, rkey, src)).ok());
  std::vector<uint8_t> buf(9216);
  Frame f{buf.data(), 0, 0, static_cast<uint32_t>(buf.size())};
  Frame* fp = &f;
  EXPECT_EQ(a.tx(std::span<Frame* const>(&fp, 1), 0), 1u);
  buf.resize(f.len);
  return buf;
}

void deliver(Endpoint& ep, std::vector<uint8_t> bytes, bool checksums_ok) {
  Frame f{bytes.data(), static_cast<uint32_t>(bytes.size()), 0,
          static_cast<uint32_t>(bytes.size())};
  f.checksums_ok = checksums_ok;
  Frame* fp = &f;
  ep.rx(std::span<Frame* const>(&fp, 1), 0);
}

uint16_t udp_checksum_of(const std::vector<uint8_t>& bytes) {
  wire::Decoded d;
  EXPECT_EQ(wire::decode_frame(bytes, &d), wire::WireError::kOk);
  return d.udp != nullptr ? d.udp->checksum() : 0xFFFF;
}

// A (computing UDP checksums or not) and B, and A's first frame of a 1000-byte WRITE into B.
struct FirstWrite {
  explicit FirstWrite(bool a_computes)
      : a(uet_ep(kIpA, a_computes)),
        b(uet_ep(kIpB, true)),
        src(1000, 0x42),
        dst(1000, 0),
        rkey(*b->register_memory(dst.data(), dst.size())),
        frame(first_write_frame(*a, rkey, src)) {}
  std::unique_ptr<UetEndpoint> a, b;
  std::vector<uint8_t> src, dst;
  uint32_t rkey;
  std::vector<uint8_t> frame;
};

// Expect: by default UET computes the UDP checksum; with udp_checksum = false it sends 0
// ("not computed", for the NIC or kernel to fill) and the peer accepts the frame.
TEST(ChecksumOffload, UetSendsZeroWhenTheHostComputesTheUdpChecksum) {
  for (const bool compute : {true, false}) {
    FirstWrite w(compute);
    EXPECT_EQ(udp_checksum_of(w.frame) != 0, compute);
    deliver(*w.b, w.frame, /*checksums_ok=*/false);
    EXPECT_EQ(w.b->counters().rx_malformed, 0u);
    EXPECT_EQ(w.b->counters().rx_data, 1u);
    EXPECT_EQ(w.dst, w.src);
  }
}

// Expect: a frame whose UDP checksum is wrong is dropped as malformed (counted as a checksum
// error) unless the host marks it verified; then the engine does not check it again.
TEST(ChecksumOffload, UetChecksUdpUnlessTheHostVerifiedIt) {
  for (const bool host_verified : {false, true}) {
    FirstWrite w(/*a_computes=*/true);
    const size_t csum = wire::Ethernet::kSize + wire::Ipv4::kSize + 6;  // UDP checksum field
    w.frame[csum] ^= 0x5A;
    deliver(*w.b, w.frame, host_verified);
    EXPECT_EQ(w.b->counters().rx_malformed, host_verified ? 0u : 1u);
    EXPECT_EQ(w.b->counters().wire[wire::WireError::kBadUdpChecksum], host_verified ? 0u : 1u);
    EXPECT_EQ(w.b->counters().rx_data, host_verified ? 1u : 0u);
  }
}

// Expect: with icrc_offload a RoCEv2 endpoint sends the ICRC as zeros (the RNIC fills it in)
// and does not check received ones; without it, that zero ICRC is rejected.
TEST(ChecksumOffload, RoceIcrcLeftToTheNic) {
  for (const bool receiver_offloads : {false, true}) {
    RoceConfig ca = testing::host_config<RoceConfig>(kIpA);
    RoceConfig cb = testing::host_config<RoceConfig>(kIpB);
    ca.icrc_offload = true;
    cb.icrc_offload = receiver_offloads;
    auto a = std::move(*RoceEndpoint::create(ca));
    auto b = std::move(*RoceEndpoint::create(cb));
    ASSERT_TRUE(a->connect_qp(kIpB, 0x100, 0x101, 10, 20).ok());
    ASSERT_TRUE(b->connect_qp(kIpA, 0x101, 0x100, 20, 10).ok());
    std::vector<uint8_t> src(1000, 0x42), dst(1000, 0);
    const uint32_t rkey = *b->register_memory(dst.data(), dst.size());
    ASSERT_TRUE(a->post_write(testing::write_request(1, kIpB, rkey, src)).ok());
    std::vector<uint8_t> buf(9216);
    Frame f{buf.data(), 0, 0, static_cast<uint32_t>(buf.size())};
    Frame* fp = &f;
    ASSERT_EQ(a->tx(std::span<Frame* const>(&fp, 1), 0), 1u);
    buf.resize(f.len);
    EXPECT_EQ(buf[buf.size() - 4] | buf[buf.size() - 3] | buf[buf.size() - 2] | buf.back(), 0);
    deliver(*b, buf, /*checksums_ok=*/true);
    EXPECT_EQ(b->counters().rx_bad_icrc, receiver_offloads ? 0u : 1u);
    EXPECT_EQ(dst == src, receiver_offloads);
  }
}

}  // namespace
}  // namespace uet
