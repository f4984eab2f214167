// PDC lifecycle in the UET engine (transport/uet/uet_endpoint.h, spec/uet.md §3.3, §3.12):
// refusals kept until cleared, trimmed frames never PDC-fatal, CLOSE / REQ_CLOSE teardown, a
// close racing a new write (short-lived peers on the simulator: uet_fabric_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/wire/checksum.h"

namespace uet {
namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr Time kIdle = 20 * kMicrosecond;

UetConfig config_for(uint32_t ip) {
  UetConfig c = testing::uet_config(ip, /*seed=*/7);
  c.idle_timeout = kIdle;
  return c;
}

// A writes from 64 KiB of 0x5A into a 64 KiB region at B.
struct Pair : testing::UetPair {
  explicit Pair(const UetConfig& a = config_for(kIpA), const UetConfig& b = config_for(kIpB))
      : UetPair(a, b, 1 << 16) {}
};

bool is_ctrl(const wire::Decoded& d, wire::CtrlType t) {
  const auto* c = d.pds_type == wire::PdsType::kCtrl ? d.pds_as<wire::PdsCtrl>() : nullptr;
  return c != nullptr && c->ctl_type() == t;
}

// A refused write whose refusal ACK is lost, and its duplicate's refusal lost too: the
// target keeps the refusal (a hole in CACK/SACK) and answers each copy with it, until the
// initiator's clear PSN passes it; then the cumulative ACK moves on.
TEST(UetPdc_Refusal, KeptUntilClearedAndRepeatedForEveryDuplicate) {
  Pair t;
  int refusals = 0;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 1 && d.ses_as<wire::SesResponse>() != nullptr && ++refusals <= 2) v.copies = 0;
    return v;
  });
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey + 9, 0, t.src.data(), 100}).ok());
  for (uint64_t i = 2; i < 6; ++i) {
    ASSERT_TRUE(t.ea->post_write({i, kIpB, t.rkey, 0, t.src.data(), 4096}).ok());
  }
  t.link.run(kSecond);
  // A later write carries a clear PSN past the refused one.
  t.link.set_filter(nullptr);
  ASSERT_TRUE(t.ea->post_write({6, kIpB, t.rkey, 0, t.src.data(), 4096}).ok());
  t.link.run(kSecond);
  const auto c = t.completions();
  ASSERT_EQ(c.size(), 6u);
  // Expect: the refused write fails with the reason whatever was lost; the others succeed.
  EXPECT_EQ(c[0].wr_id, 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError) << to_string(c[0].status);
  for (size_t i = 1; i < c.size(); ++i) EXPECT_EQ(c[i].status, OpStatus::kSuccess) << i;
  EXPECT_EQ(t.eb->counters().rx_bad_key, 1u);
  EXPECT_GE(t.eb->counters().tx_refusal_repeats, 2u);
  EXPECT_GE(refusals, 3);
  EXPECT_GE(t.eb->counters().refusals_cleared, 1u);
}

// A trimmed request carries no UDP checksum: one whose DPDCID was damaged is dropped and
// counted, not answered with INV_DPDCID (which would kill the initiator's PDC).
TEST(UetPdc_Trimmed, DamagedTrimmedHeaderIsNotPdcFatal) {
  Pair t;
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 4096}).ok());
  t.link.run(t.link.now() + 5 * kMicrosecond);  // established
  bool damaged = false;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
    testing::Verdict v;
    if (from == 0 && d.pds_type == wire::PdsType::kRudReq && !damaged) {
      damaged = true;
      constexpr size_t ip = wire::Ethernet::kSize, udp = ip + wire::Ipv4::kSize,
                       pds = udp + wire::Udp::kSize;
      bytes[ip + 1] = static_cast<uint8_t>(45 << 2);  // the fabric's trimmed DSCP
      bytes[udp + 6] = bytes[udp + 7] = 0;            // "not computed"
      bytes[pds + 10] = 0x03;                         // DPDCID damaged: 0x03xx
      bytes[ip + 10] = bytes[ip + 11] = 0;
      const uint16_t sum = wire::ipv4_header_checksum(bytes.data() + ip, wire::Ipv4::kSize);
      bytes[ip + 10] = static_cast<uint8_t>(sum >> 8);
      bytes[ip + 11] = static_cast<uint8_t>(sum);
    }
    return v;
  });
  ASSERT_TRUE(t.ea->post_write({2, kIpB, t.rkey, 4096, t.src.data(), 3 * 4096}).ok());
  t.link.run(kSecond);
  const auto c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess) << to_string(c[1].status);
  ASSERT_TRUE(damaged);
  EXPECT_EQ(t.eb->counters().rx_trimmed_unverified, 1u);
  EXPECT_EQ(t.eb->counters().rx_unknown_pdc, 0u);
  EXPECT_EQ(t.eb->counters().tx_nacks, 0u);
}

// Idle teardown: after idle_timeout the initiator sends CLOSE, the target frees its PDC and
// ACKs; both tables are empty.
TEST(UetPdc_Close, IdlePdcIsClosedAtBothEnds) {
  Pair t;
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 8192}).ok());
  t.link.run(kSecond);
  ASSERT_EQ(t.completions().size(), 1u);
  EXPECT_EQ(t.ea->pdcs_in_use(), 0u);
  EXPECT_EQ(t.eb->pdcs_in_use(), 0u);
  EXPECT_EQ(t.ea->counters().tx_close, 1u);
  EXPECT_EQ(t.ea->counters().pdcs_closed, 1u);
  EXPECT_EQ(t.eb->counters().pdcs_closed, 1u);
  EXPECT_EQ(t.ea->counters().close_abandoned, 0u);
}

// REQ_CLOSE: an initiator that never closes on its own (idle_timeout 0) closes when its
// target asks.
TEST(UetPdc_Close, TargetAsksWithReqClose) {
  UetConfig a = config_for(kIpA);
  a.idle_timeout = 0;
  Pair t(a);
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 8192}).ok());
  t.link.run(kSecond);
  EXPECT_EQ(t.completions().size(), 1u);
  EXPECT_GE(t.eb->counters().tx_req_close, 1u);
  EXPECT_EQ(t.ea->counters().tx_close, 1u);
  EXPECT_EQ(t.ea->pdcs_in_use(), 0u);
  EXPECT_EQ(t.eb->pdcs_in_use(), 0u);
}

// A lost CLOSE and a lost CLOSE ACK are retried; a target that already freed the PDC still
// ACKs the CLOSE.
TEST(UetPdc_Close, LostCloseAndLostCloseAckAreRetried) {
  Pair t;
  int closes = 0, close_acks = 0;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 0 && is_ctrl(d, wire::CtrlType::kClose) && ++closes == 1) v.copies = 0;
    if (from == 1 && closes > 0 && d.pds_type == wire::PdsType::kAckCc && ++close_acks == 1) {
      v.copies = 0;
    }
    return v;
  });
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 8192}).ok());
  t.link.run(kSecond);
  EXPECT_EQ(t.completions().size(), 1u);
  EXPECT_EQ(closes, 3);
  EXPECT_EQ(t.ea->pdcs_in_use(), 0u);
  EXPECT_EQ(t.eb->pdcs_in_use(), 0u);
  EXPECT_EQ(t.ea->counters().close_abandoned, 0u);
  EXPECT_EQ(t.ea->counters().pdcs_closed, 1u);
}

// Holds back the control packets of `type` that `from` (0: A, 1: B) sends by `delay`.
void delay_ctrl(Pair& t, int from, wire::CtrlType type, Time delay) {
  t.link.set_filter([=](int f, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (f == from && is_ctrl(d, type)) v.delay = delay;
    return v;
  });
}

// Runs the link a microsecond and lets a microsecond pass, until `done()` or 1000 steps.
template <class Done>
void step_until(Pair& t, Done done) {
  for (int step = 0; step < 1000 && !done(); ++step) {
    t.link.run(t.link.now() + kMicrosecond);
    t.link.advance_to(t.link.now() + kMicrosecond);
  }
}

// A write posted while the PDC to that peer is closing (its CLOSE in flight) opens a new PDC;
// the old one still closes; both writes succeed and both tables drain.
TEST(UetPdc_Close, CloseRacingANewWrite) {
  Pair t;
  delay_ctrl(t, /*from=*/0, wire::CtrlType::kClose, 30 * kMicrosecond);
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 8192}).ok());
  step_until(t, [&] { return t.ea->counters().tx_close != 0; });
  ASSERT_EQ(t.ea->counters().tx_close, 1u);
  EXPECT_EQ(t.eb->pdcs_in_use(), 1u);  // the CLOSE has not arrived
  std::fill(t.src.begin(), t.src.end(), uint8_t{0xC3});
  ASSERT_TRUE(t.ea->post_write({2, kIpB, t.rkey, 0, t.src.data(), 8192}).ok());
  EXPECT_EQ(t.ea->pdcs_in_use(), 2u);  // the closing one and a new one
  t.link.run(kSecond);
  const auto c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::all_of(t.dst.begin(), t.dst.begin() + 8192, [](uint8_t x) { return x == 0xC3; }));
  EXPECT_EQ(t.ea->pdcs_in_use(), 0u);
  EXPECT_EQ(t.eb->pdcs_in_use(), 0u);
  EXPECT_EQ(t.eb->counters().pdcs_closed, 2u);
}

// A REQ_CLOSE that arrives while the initiator has a new write outstanding: the initiator
// finishes the write, then closes.
TEST(UetPdc_Close, ReqCloseRacingANewWrite) {
  UetConfig a = config_for(kIpA);
  a.idle_timeout = 0;
  Pair t(a);
  bool posted = false;
  delay_ctrl(t, /*from=*/1, wire::CtrlType::kReqClose, 10 * kMicrosecond);
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 8192}).ok());
  step_until(t, [&] { return t.eb->counters().tx_req_close != 0; });
  ASSERT_EQ(t.eb->counters().tx_req_close, 1u);
  ASSERT_TRUE(t.ea->post_write({2, kIpB, t.rkey, 0, t.src.data(), 16 * 4096}).ok());
  posted = true;
  t.link.run(kSecond);
  const auto c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_TRUE(posted);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  EXPECT_EQ(t.ea->pdcs_in_use(), 0u);
  EXPECT_EQ(t.eb->pdcs_in_use(), 0u);
}

// tx() passes over PDCs with nothing to send: with 15 PDCs open and idle, a call visits none,
// and a write posted on one makes it visit that one alone.
TEST(UetPdc_Tx, IdlePdcsAreNotVisited) {
  auto ep = std::move(*UetEndpoint::create(config_for(kIpA)));
  std::vector<uint8_t> src(4096, 1), buf(9216);
  Frame f{buf.data(), 0, 0, static_cast<uint32_t>(buf.size())};
  Frame* fp = &f;
  auto tx = [&] {
    size_t frames = 0;
    while (ep->tx(std::span<Frame* const>(&fp, 1), kMicrosecond) == 1) ++frames;
    return frames;
  };
  for (uint32_t peer = 1; peer <= 15; ++peer) {
    ASSERT_TRUE(ep->post_write({peer, kIpB + peer, 1, 0, src.data(), src.size()}).ok());
  }
  EXPECT_EQ(tx(), 15u);  // one single-packet write (its SYN) to each peer; nothing answers
  ASSERT_EQ(ep->pdcs_in_use(), 15u);
  const uint64_t before = ep->counters().tx_pdc_visits;
  EXPECT_EQ(tx(), 0u);
  // Expect: every PDC waits for its ACK; none is looked at.
  EXPECT_EQ(ep->counters().tx_pdc_visits, before);
  ASSERT_TRUE(ep->post_write({99, kIpB + 7, 1, 0, src.data(), src.size()}).ok());
  EXPECT_EQ(tx(), 1u);
  // Expect: the PDC to peer 7 sends its second write, then is found idle: two visits.
  EXPECT_EQ(ep->counters().tx_pdc_visits, before + 2);
}

TEST(UetPdc_Config, IdleTimeoutOutOfRangeIsRefused) {
  UetConfig c = config_for(kIpA);
  c.idle_timeout = 10;  // 10 ps
  const auto ep = UetEndpoint::create(c);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(std::string(ep.status().message()).find("idle_timeout"), std::string::npos);
}

}  // namespace
}  // namespace uet
