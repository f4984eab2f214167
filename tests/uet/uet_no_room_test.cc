// A host whose frames cannot hold a data packet's headers: the UET engine counts each refused
// frame (tx_no_room) and, when the refusal lasts until the RTO, fails the PDC's operations
// kFrameTooSmall instead of leaving them idle for ever.
#include <gtest/gtest.h>

#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr size_t kBytes = 8192;

// A WRITE request's headers (spec/uet.md §3.3 RUD request, §4.2 standard SES request) on
// Ethernet, IPv4 and UDP: the smallest frame that carries one.
constexpr uint32_t kWriteHeaders = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize +
                                   wire::PdsRudRod::kSize + wire::SesStandardRequest::kSize;

// Offers A `tries` frames of `size` bytes at `now`; returns how many it filled.
size_t offer(UetEndpoint& a, uint32_t size, int tries, Time now) {
  std::vector<uint8_t> buf(size);
  size_t sent = 0;
  for (int i = 0; i < tries; ++i) {
    Frame f{buf.data(), 0, 0, size};
    Frame* fp = &f;
    sent += a.tx(std::span<Frame* const>(&fp, 1), now);
  }
  return sent;
}

// Expect: frames one byte short of a WRITE's headers are refused (nothing sent, each counted);
// the engine still has a deadline (no silent stall), and at it the WRITE completes
// kFrameTooSmall with no bytes.
TEST(UetNoRoom_Write, FramesTooSmallForTheHeadersFailTheWriteAtTheRto) {
  testing::UetPair p(testing::uet_config(kIpA, 7), testing::uet_config(kIpB, 8), kBytes);
  UetEndpoint& a = *p.ea;
  ASSERT_TRUE(a.post_write({1, kIpB, p.rkey, 0, p.src.data(), kBytes}).ok());
  EXPECT_EQ(offer(a, kWriteHeaders - 1, 3, 0), 0u);
  EXPECT_EQ(a.counters().tx_no_room, 3u);
  EXPECT_TRUE(p.completions().empty());
  const Time at = a.next_deadline();
  ASSERT_NE(at, kNever) << "a refused frame must leave a timer, or the write waits for ever";
  a.on_timer(at);
  const std::vector<Completion> done = p.completions();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 1u);
  EXPECT_EQ(done[0].status, OpStatus::kFrameTooSmall);
  EXPECT_EQ(done[0].bytes, 0u);
  EXPECT_EQ(offer(a, 9216, 1, at), 0u);  // nothing left to send
}

// Expect: one refused frame followed by frames that fit: the WRITE goes and completes
// kSuccess, also when its last packet (and the tail-loss probe that resends it) is lost so
// that an RTO fires later: the refusal is forgotten once a frame fits.
TEST(UetNoRoom_Write, ARefusalFollowedByFramesThatFitCompletes) {
  testing::UetPair p(testing::uet_config(kIpA, 7), testing::uet_config(kIpB, 8), kBytes);
  int eom_dropped = 0;
  p.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    const auto* ses = d.ses_as<wire::SesStandardRequest>();
    testing::Verdict v;
    if (from == 0 && ses != nullptr && ses->eom() && eom_dropped < 2) {
      ++eom_dropped;
      v.copies = 0;
    }
    return v;
  });
  UetEndpoint& a = *p.ea;
  ASSERT_TRUE(a.post_write({1, kIpB, p.rkey, 0, p.src.data(), kBytes}).ok());
  EXPECT_EQ(offer(a, kWriteHeaders - 1, 1, 0), 0u);
  EXPECT_EQ(a.counters().tx_no_room, 1u);
  p.link.run(kSecond);
  const std::vector<Completion> done = p.completions();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, OpStatus::kSuccess);
  EXPECT_EQ(p.dst, p.src);
  EXPECT_EQ(eom_dropped, 2);
  EXPECT_GE(a.counters().timeouts, 1u);
  EXPECT_EQ(a.counters().tx_no_room, 1u);
}

// Expect: UetConfig::frame_overhead() is all a full data packet holds besides its payload:
// under RCCC (RUD_CC requests, the longest) a WRITE's full packet goes whole in a frame of
// payload_bytes + frame_overhead(), and a frame one byte shorter leaves its payload out (the
// host would carry it by length).
TEST(UetNoRoom_Overhead, AFullWritePacketFillsPayloadBytesPlusFrameOverhead) {
  UetConfig ca = testing::uet_config(kIpA, 7);
  ca.cc = CcMode::kRccc;
  testing::UetPair p(ca, testing::uet_config(kIpB, 8), kBytes);
  ASSERT_TRUE(p.ea->post_write({1, kIpB, p.rkey, 0, p.src.data(), kBytes}).ok());
  const uint32_t full = ca.payload_bytes + ca.frame_overhead();
  std::vector<uint8_t> buf(full);
  Frame f{buf.data(), 0, 0, full - 1};
  Frame* fp = &f;
  ASSERT_EQ(p.ea->tx(std::span<Frame* const>(&fp, 1), 0), 1u);
  EXPECT_EQ(f.bytes_on_wire(), full);
  EXPECT_EQ(f.len, full - ca.payload_bytes);  // headers only
  Frame g{buf.data(), 0, 0, full};
  fp = &g;
  ASSERT_EQ(p.ea->tx(std::span<Frame* const>(&fp, 1), 0), 1u);
  EXPECT_EQ(g.len, full);  // whole
  EXPECT_EQ(g.bytes_on_wire(), full);
  EXPECT_EQ(p.ea->counters().tx_no_room, 0u);
}

}  // namespace
}  // namespace uet
