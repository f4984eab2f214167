// Pushed rendezvous (UetConfig::rendezvous_push; transport/uet/uet_rendezvous.cc, NOTES.md
// "Rendezvous") on the fake link: the target answers the rendezvous request with a CTS (a
// DEFERRABLE_RTR naming the source's key, its sink key in buffer_offset) and the initiator
// WRITEs the rest. The frames on the wire (no READ); an initiator in READ mode serving a
// pushing target; a CTS for a withdrawn source, a sender gone silent or dead after the CTS
// (and one alive but slow), and WRITEs under a sink key that names no receive. What both ways
// share (completion, faults, untagged sends, truncation) runs in uet_rendezvous_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "tests/common/payload.h"
#include "tests/common/uet_pair.h"
#include "tests/common/uet_tagged_pair.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

using testing::drain;
using testing::pattern;

using testing::kIpA;
using testing::kIpB;
using testing::trecv;
using testing::tsend;

constexpr uint64_t kThreshold = 16 * 1024;
constexpr uint32_t kEager = 4096 - 24;
constexpr testing::TaggedSetup kSetup{
    .seed = 47, .jitter_seed = 5, .rendezvous_bytes = kThreshold, .push = true};
constexpr testing::TaggedConfig<kSetup> config_for;
using Link = testing::TaggedLink<kSetup>;

// Request frames by SES opcode, each way.
struct Opcodes {
  std::vector<wire::SesOpcode> a_to_b, b_to_a;
  std::vector<wire::SesStandardRequest> ctss;
  int count(const std::vector<wire::SesOpcode>& v, wire::SesOpcode op) const {
    return static_cast<int>(std::count(v.begin(), v.end(), op));
  }
};
void watch(Link& link, Opcodes& ops) {
  link.set_filter([&ops](int from, const wire::Decoded& d) {
    if (const auto* ses = d.ses_as<wire::SesStandardRequest>(); ses != nullptr) {
      (from == 0 ? ops.a_to_b : ops.b_to_a).push_back(ses->opcode());
      if (from == 1 && ses->opcode() == wire::SesOpcode::kDeferrableRtr) ops.ctss.push_back(*ses);
    }
    return 1;
  });
}

// ----------------------------------------------------------------------- the wire

TEST(UetRendezvousPush_Wire, TheTargetSendsACtsAndTheRestComesAsWritesNotReads) {
  for (bool posted_first : {true, false}) {
    SCOPED_TRACE(posted_first ? "posted first" : "unexpected first");
    Link link;
    Opcodes ops;
    watch(link, ops);
    const std::vector<uint8_t> msg = pattern(200000, 3);
    std::vector<uint8_t> buf(msg.size() + 100, 0xEE);
    if (posted_first) { ASSERT_TRUE(link.b().post_trecv(trecv(1, buf, 9)).ok()); }
    ASSERT_TRUE(link.a().post_tsend(tsend(2, msg, 9)).ok());
    link.run(link.now() + 200 * kMicrosecond);
    if (!posted_first) {
      EXPECT_TRUE(ops.ctss.empty());  // nothing matched it: no CTS yet
      EXPECT_TRUE(drain(link.a()).empty());
      ASSERT_TRUE(link.b().post_trecv(trecv(1, buf, 9)).ok());
    }
    link.run(kSecond);
    const auto rc = drain(link.b());
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OpStatus::kSuccess);
    EXPECT_EQ(rc[0].bytes, msg.size());
    EXPECT_TRUE(std::equal(msg.begin(), msg.end(), buf.begin()));
    EXPECT_TRUE(std::all_of(buf.begin() + static_cast<ptrdiff_t>(msg.size()), buf.end(),
                            [](uint8_t x) { return x == 0xEE; }));
    const auto sc = drain(link.a());
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
    EXPECT_EQ(sc[0].wr_id, 2u);
    // Expect: one request with the eager bytes, one CTS naming its source and a sink key
    // (bit 31), the rest in 4 KiB WRITEs; no READ either way.
    EXPECT_EQ(ops.count(ops.a_to_b, wire::SesOpcode::kRendezvousTsend), 1);
    ASSERT_EQ(ops.ctss.size(), 1u);
    EXPECT_EQ(ops.ctss[0].match_bits() >> 31, 1u);
    EXPECT_EQ(ops.ctss[0].buffer_offset() >> 31, 1u);
    EXPECT_EQ(ops.count(ops.a_to_b, wire::SesOpcode::kWrite),
              static_cast<int>((msg.size() - kEager + 4095) / 4096));
    EXPECT_EQ(ops.count(ops.a_to_b, wire::SesOpcode::kRead), 0);
    EXPECT_EQ(ops.count(ops.b_to_a, wire::SesOpcode::kRead), 0);
    EXPECT_EQ(link.a().counters().rx_rdv_reads, 0u);
    EXPECT_EQ(link.a().counters().tx_rdv_pushes, 1u);
    EXPECT_EQ(link.b().counters().tx_rdv_cts, 1u);
    EXPECT_EQ(link.b().counters().rx_rdv_pushed, 1u);
    EXPECT_EQ(link.b().counters().rx_tagged_unexpected, posted_first ? 0u : 1u);
  }
}

// Completion, faults, untagged sends and truncation, the same in both ways:
// uet_rendezvous_test.cc (UetRendezvous_*/Ways.*/Pushed).

// Completion order (NOTES.md, "Rendezvous"): on the CTS the rendezvous send hands its
// completion over to its WRITE, so an eager send posted after it on the same RUD PDC completes
// once acknowledged, not behind the push; the rendezvous send completes when its WRITE does.
TEST(UetRendezvousPush_Order, AnEagerSendPostedAfterAPushedOneDoesNotWaitForThePush) {
  Link link;
  const std::vector<uint8_t> big = pattern(600000, 4), small = pattern(1000, 5);
  std::vector<uint8_t> bbuf(big.size(), 0), sbuf(small.size(), 0);
  ASSERT_TRUE(link.b().post_trecv(trecv(1, bbuf, 1)).ok());
  ASSERT_TRUE(link.b().post_trecv(trecv(2, sbuf, 2)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(11, big, 1)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(12, small, 2)).ok());
  std::vector<uint64_t> order;
  Time t = link.now();
  for (int step = 0; step < 100000 && order.size() < 2; ++step) {
    t += kMicrosecond;
    link.run(t);
    for (const Completion& c : drain(link.a())) {
      EXPECT_EQ(c.status, OpStatus::kSuccess);
      // Expect: the pushed send completes only with every byte placed.
      if (c.wr_id == 11) {
        EXPECT_EQ(c.bytes, big.size());
        EXPECT_TRUE(bbuf == big) << "the pushed send completed early";
      }
      order.push_back(c.wr_id);
    }
  }
  link.run(kSecond);
  EXPECT_EQ(drain(link.b()).size(), 2u);
  EXPECT_TRUE(sbuf == small);
  // Expect: the eager send first, though posted second on the same PDC.
  EXPECT_EQ(order, (std::vector<uint64_t>{12, 11}));
  EXPECT_EQ(link.a().counters().tx_rdv_pushes, 1u);
}

// --------------------------------------------------------------- the two ends' modes

// The mode is the target's alone: an initiator configured for READs pushes when asked, and
// a pushing initiator is READ by a target that reads.
TEST(UetRendezvousPush_Modes, EitherInitiatorServesEitherTarget) {
  for (bool target_pushes : {true, false}) {
    SCOPED_TRACE(target_pushes ? "target pushes" : "target reads");
    Link link(config_for(kIpA, !target_pushes), config_for(kIpB, target_pushes));
    const std::vector<uint8_t> msg = pattern(70000, 5);
    std::vector<uint8_t> buf(msg.size(), 0);
    ASSERT_TRUE(link.b().post_trecv(trecv(1, buf, 3)).ok());
    ASSERT_TRUE(link.a().post_tsend(tsend(2, msg, 3)).ok());
    link.run(kSecond);
    const auto rc = drain(link.b());
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OpStatus::kSuccess);
    EXPECT_TRUE(msg == buf);
    ASSERT_EQ(drain(link.a()).size(), 1u);
    EXPECT_EQ(link.a().counters().tx_rdv_pushes, target_pushes ? 1u : 0u);
    EXPECT_EQ(link.a().counters().rx_rdv_reads > 0, !target_pushes);
  }
}

// -------------------------------------------------------------------- failures

// A source withdrawn before its receive came: the CTS is refused, and the receive completes
// with the error at once, as a READ of the withdrawn key would.
TEST(UetRendezvousPush_Timeout, ACtsForAWithdrawnSourceFailsItsReceive) {
  UetConfig a = config_for(kIpA);
  a.rendezvous_timeout = 500 * kMicrosecond;
  Link link(a);
  const std::vector<uint8_t> msg = pattern(60000, 2);
  std::vector<uint8_t> buf(60000, 0xEE);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 4)).ok());
  link.run(link.now() + 2 * kMillisecond);
  auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kRetriesExhausted);
  const Time posted = link.now();
  ASSERT_TRUE(link.b().post_trecv(trecv(2, buf, 4)).ok());
  link.run(posted + 10 * kMillisecond);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(link.a().counters().tx_rdv_pushes, 0u);
  EXPECT_GE(link.a().counters().rx_rdv_bad_read, 1u);
  EXPECT_EQ(link.b().counters().rx_rdv_pushed, 0u);
}

// The sender goes silent once the CTS has reached it: the receive does not wait for ever but
// completes kRetriesExhausted after rendezvous_timeout.
TEST(UetRendezvousPush_Timeout, AReceiveWhosePushNeverComesFails) {
  UetConfig b = config_for(kIpB);
  b.rendezvous_timeout = 2 * kMillisecond;
  Link link(config_for(kIpA), b);
  bool cts_seen = false;
  link.set_filter([&](int from, const wire::Decoded& d) {
    const auto* ses = d.ses_as<wire::SesStandardRequest>();
    if (from == 1 && ses != nullptr && ses->opcode() == wire::SesOpcode::kDeferrableRtr) {
      cts_seen = true;
      return 1;
    }
    // After the CTS, A's WRITEs are lost (its ACKs still go: the CTS completes at B).
    return from == 0 && cts_seen && ses != nullptr ? 0 : 1;
  });
  const std::vector<uint8_t> msg = pattern(60000, 2);
  std::vector<uint8_t> buf(60000, 0xEE);
  ASSERT_TRUE(link.b().post_trecv(trecv(2, buf, 4)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 4)).ok());
  link.run(link.now() + 50 * kMillisecond);
  ASSERT_TRUE(cts_seen);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, OpStatus::kRetriesExhausted);
  EXPECT_EQ(link.b().counters().rdv_push_timeouts, 1u);
}

// hold_probe_after: the CTS holds its PDC while the push is under way, so the receive learns
// that the sender died (silent from just after the CTS was acknowledged and a few WRITE
// packets landed) within the retry budget, with rendezvous_timeout far away.
TEST(UetRendezvousPush_Liveness, AReceiveFailsWithinTheRetryBudgetWhenItsSenderDiesMidPush) {
  UetConfig b = config_for(kIpB);
  b.hold_probe_after = kMillisecond;
  b.rendezvous_timeout = 1000 * kSecond;
  Link link(config_for(kIpA), b);
  int writes = 0;
  bool dead = false;
  link.set_filter([&](int from, const wire::Decoded& d) {
    const auto* ses = d.ses_as<wire::SesStandardRequest>();
    if (from == 1) return 1;
    // A dies once 3 of its WRITE packets are through and B has the CTS's ACK: from then on
    // nothing of A's arrives, not even the answers to B's REQ_ACKs.
    if (ses != nullptr && ses->opcode() == wire::SesOpcode::kWrite && ++writes > 3) dead = true;
    if (ses == nullptr && link.b().counters().rx_acks > 0) dead = true;
    return dead ? 0 : 1;
  });
  const std::vector<uint8_t> msg = pattern(200000, 2);
  std::vector<uint8_t> buf(msg.size(), 0);
  ASSERT_TRUE(link.b().post_trecv(trecv(2, buf, 4)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 4)).ok());
  std::vector<Completion> rc;
  for (Time t = link.now(); rc.empty() && t < 10 * kSecond;) {
    t += kMillisecond;
    link.run(t);
    rc = drain(link.b());
  }
  ASSERT_TRUE(dead);
  // Expect: mid-push (some pushed bytes placed, not all), then the receive fails
  // kRetriesExhausted after the unanswered REQ_ACKs, long before rendezvous_timeout.
  EXPECT_NE(buf[kEager], 0);
  EXPECT_NE(buf, msg);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 2u);
  EXPECT_EQ(rc[0].status, OpStatus::kRetriesExhausted);
  EXPECT_EQ(rc[0].return_code, 0);  // no SES return code: the sender never answered
  EXPECT_LT(link.now(), 2 * kSecond);
  EXPECT_EQ(link.b().counters().hold_probe_failures, 1u);
  EXPECT_EQ(link.b().counters().tx_req_ack, b.max_retries);
  EXPECT_EQ(link.b().counters().rdv_push_timeouts, 0u);
}

// While the sender lives, the CTS's REQ_ACKs are answered and the receive waits for the push,
// however slow (here its first packets are lost and resent on RTOs, hold_probe_after apart).
TEST(UetRendezvousPush_Liveness, AReceiveWaitsForALiveSendersPush) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.hold_probe_after = b.hold_probe_after = 100 * kMicrosecond;
  Link link(a, b);
  std::optional<Time> first_write;
  link.set_filter([&](int from, const wire::Decoded& d) {
    const auto* ses = d.ses_as<wire::SesStandardRequest>();
    if (from == 0 && ses != nullptr && ses->opcode() == wire::SesOpcode::kWrite) {
      if (!first_write) first_write = link.now();
      return link.now() < *first_write + kMillisecond ? 0 : 1;  // lost for 1 ms (RTOs)
    }
    return 1;
  });
  const std::vector<uint8_t> msg = pattern(60000, 5);
  std::vector<uint8_t> buf(msg.size(), 0);
  ASSERT_TRUE(link.b().post_trecv(trecv(2, buf, 4)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 4)).ok());
  link.run(10 * kSecond);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(buf == msg);
  ASSERT_EQ(drain(link.a()).size(), 1u);
  EXPECT_GT(link.b().counters().tx_req_ack, 0u);
  EXPECT_EQ(link.b().counters().hold_probe_failures, 0u);
}

// WRITEs under sink keys: one naming no receive ever, one naming a receive already complete;
// both refused without a byte placed, and the message itself delivered whole.
TEST(UetRendezvousPush_Hostile, WritesUnderSinkKeysThatNameNoReceiveAreRefused) {
  Link link;
  Opcodes ops;
  watch(link, ops);
  std::vector<uint8_t> junk = pattern(4000, 99);
  WriteRequest stray{.wr_id = 50, .peer = kIpB, .rkey = 0x80000003u, .remote_offset = 0,
                     .local = junk.data(), .length = junk.size()};
  ASSERT_TRUE(link.a().post_write(stray).ok());
  link.run(link.now() + kMillisecond);
  auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(link.b().counters().rx_rdv_bad_push, 1u);
  // A message waits unexpected; its receive's CTS names the sink, which no one may use
  // once the receive is complete.
  const std::vector<uint8_t> msg = pattern(40000, 6);
  std::vector<uint8_t> buf(40000, 0);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 8)).ok());
  link.run(link.now() + 100 * kMicrosecond);
  ASSERT_TRUE(link.b().post_trecv(trecv(2, buf, 8)).ok());
  link.run(kSecond);
  ASSERT_EQ(ops.ctss.size(), 1u);
  const auto sink = static_cast<uint32_t>(ops.ctss[0].buffer_offset());
  EXPECT_TRUE(msg == buf);
  ASSERT_EQ(drain(link.b()).size(), 1u);
  ASSERT_EQ(drain(link.a()).size(), 1u);
  WriteRequest after{.wr_id = 51, .peer = kIpB, .rkey = sink, .remote_offset = 0,
                     .local = junk.data(), .length = junk.size()};
  ASSERT_TRUE(link.a().post_write(after).ok());
  link.run(kSecond);
  sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kRemoteAccessError);
  EXPECT_TRUE(msg == buf);  // nothing of the stray WRITEs landed
  EXPECT_EQ(link.b().counters().rx_rdv_bad_push, 2u);
}

}  // namespace
}  // namespace uet
