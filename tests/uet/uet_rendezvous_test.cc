// Rendezvous (spec/uet.md §4.5.3; transport/uet/uet_rendezvous.cc) on the fake link: sends
// across the size threshold, tagged and untagged, posted first or unexpected; the bytes exact
// and both ends complete only when every byte is placed; loss, duplication and reordering in
// both directions; truncation and a buffer too short (these four both ways the rest can move:
// READ by the target, or pushed after its CTS); sources exhausted (the rest go eagerly);
// a target that never reads (the send times out, the key is withdrawn); READs of a source that
// are not the reader's to make; a refused rendezvous request; ROD's matching order.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/common/payload.h"
#include "tests/common/uet_pair.h"
#include "tests/common/uet_tagged_pair.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

using testing::drain;
using testing::pattern;

using testing::by_wr_id;
using testing::kIpA;
using testing::kIpB;
using testing::trecv;
using testing::tsend;

constexpr uint64_t kThreshold = 16 * 1024;
constexpr testing::TaggedSetup kSetup{
    .seed = 43, .jitter_seed = 9, .rendezvous_bytes = kThreshold, .push = false};
constexpr testing::TaggedConfig<kSetup> config_for;
using Link = testing::TaggedLink<kSetup>;

// ----------------------------------------------------------------------- the threshold

TEST(UetRendezvous_Threshold, LongerThanTheThresholdGoesByReadShorterEagerly) {
  Link link;
  const std::vector<uint64_t> sizes = {kThreshold - 1, kThreshold, kThreshold + 1, 200000};
  std::vector<std::vector<uint8_t>> msgs, bufs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    msgs.push_back(pattern(sizes[i], static_cast<uint32_t>(i + 1)));
    bufs.emplace_back(sizes[i] + 100, 0xEE);
    ASSERT_TRUE(link.b().post_trecv(trecv(i, bufs[i], i)).ok());
    ASSERT_TRUE(link.a().post_tsend(tsend(i, msgs[i], i)).ok());
  }
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(rc.at(i).status, OpStatus::kSuccess);
    EXPECT_EQ(rc.at(i).bytes, sizes[i]);
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[i].begin())) << "message " << i;
    EXPECT_TRUE(std::all_of(bufs[i].begin() + static_cast<ptrdiff_t>(sizes[i]), bufs[i].end(),
                            [](uint8_t x) { return x == 0xEE; }));
  }
  const auto sc = by_wr_id(drain(link.a()));
  ASSERT_EQ(sc.size(), sizes.size());
  for (const auto& [id, c] : sc) EXPECT_EQ(c.status, OpStatus::kSuccess) << id;
  // Two went by rendezvous: the rest of each READ back (4 KiB payloads) and held until cleared.
  EXPECT_EQ(link.a().counters().tx_rendezvous, 2u);
  EXPECT_EQ(link.b().counters().rx_rendezvous, 2u);
  const uint32_t eager = 4096 - 24;
  const uint64_t reads = (kThreshold + 1 - eager + 4095) / 4096 + (200000 - eager + 4095) / 4096;
  EXPECT_EQ(link.a().counters().rx_rdv_reads, reads);
  EXPECT_GE(link.a().counters().refusals_cleared, reads);
}

// ------------------------------------------- either way the rest moves (READ or pushed)

// The suites below run twice: the target READs the rest, or (pushed) answers with a CTS and
// the initiator WRITEs it. `push()` says which; `way()` asserts the way it moved.
class BothWays : public ::testing::TestWithParam<bool> {
 protected:
  bool push() const { return GetParam(); }
  UetConfig a() const { return config_for(kIpA, push()); }
  UetConfig b() const { return config_for(kIpB, push()); }
  // `messages` went by rendezvous the test's way: pushed (one CTS and one WRITE each, no READ)
  // or READ (no CTS).
  void way(Link& link, uint64_t messages) const {
    EXPECT_EQ(link.b().counters().tx_rdv_cts, push() ? messages : 0u);
    EXPECT_EQ(link.a().counters().tx_rdv_pushes, push() ? messages : 0u);
    EXPECT_EQ(link.b().counters().rx_rdv_pushed, push() ? messages : 0u);
    EXPECT_EQ(link.a().counters().rx_rdv_reads > 0, !push());
    EXPECT_EQ(link.b().counters().rx_rdv_bad_push, 0u);
  }
};
std::string way_name(const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "Pushed" : "Read";
}
class UetRendezvous_Completion : public BothWays {};
class UetRendezvous_Faults : public BothWays {};
class UetRendezvous_Send : public BothWays {};
class UetRendezvous_Truncation : public BothWays {};
INSTANTIATE_TEST_SUITE_P(Ways, UetRendezvous_Completion, ::testing::Bool(), way_name);
INSTANTIATE_TEST_SUITE_P(Ways, UetRendezvous_Faults, ::testing::Bool(), way_name);
INSTANTIATE_TEST_SUITE_P(Ways, UetRendezvous_Send, ::testing::Bool(), way_name);
INSTANTIATE_TEST_SUITE_P(Ways, UetRendezvous_Truncation, ::testing::Bool(), way_name);

// Each side's completion comes only once every byte is in the receive buffer.
TEST_P(UetRendezvous_Completion, NeitherEndCompletesBeforeEveryByteIsPlaced) {
  for (bool posted_first : {true, false}) {
    SCOPED_TRACE(posted_first ? "posted first" : "unexpected first");
    Link link(a(), b());
    const std::vector<uint8_t> msg = pattern(300000, 7);
    std::vector<uint8_t> buf(msg.size(), 0);
    if (posted_first) { ASSERT_TRUE(link.b().post_trecv(trecv(5, buf, 77)).ok()); }
    ASSERT_TRUE(link.a().post_tsend(tsend(9, msg, 77)).ok());
    bool sent = false, received = false;
    if (!posted_first) {
      link.run(link.now() + 200 * kMicrosecond);
      EXPECT_TRUE(drain(link.a()).empty());  // waits for a receive to ask for the rest
      ASSERT_TRUE(link.b().post_trecv(trecv(5, buf, 77)).ok());
    }
    // (run() stops at the last event before `until`: the test keeps its own clock.)
    Time t = link.now();
    for (int step = 0; step < 20000 && !(sent && received); ++step) {
      t += kMicrosecond;
      link.run(t);
      for (const Completion& c : drain(link.a())) {
        EXPECT_EQ(c.status, OpStatus::kSuccess);
        EXPECT_TRUE(std::equal(msg.begin(), msg.end(), buf.begin())) << "sender completed early";
        sent = true;
      }
      for (const Completion& c : drain(link.b())) {
        EXPECT_EQ(c.status, OpStatus::kSuccess);
        EXPECT_EQ(c.bytes, msg.size());
        EXPECT_TRUE(std::equal(msg.begin(), msg.end(), buf.begin())) << "receiver completed early";
        received = true;
      }
    }
    EXPECT_TRUE(sent);
    EXPECT_TRUE(received);
    EXPECT_EQ(link.b().counters().rx_tagged_unexpected, posted_first ? 0u : 1u);
    way(link, 1);
  }
}

TEST_P(UetRendezvous_Faults, LossDuplicationAndReorderingBothWaysDeliverEachMessageOnce) {
  for (DeliveryMode mode : {DeliveryMode::kRud, DeliveryMode::kRod}) {
    SCOPED_TRACE(mode == DeliveryMode::kRud ? "RUD" : "ROD");
    Link link(a(), b());
    testing::RandomFaults faults(/*seed=*/23, /*loss_every=*/14, /*dup_every=*/7);
    link.set_jitter(8 * kMicrosecond);
    link.set_filter([&](int, const wire::Decoded&) { return faults(); });  // both ways
    constexpr int kMsgs = 16;
    std::vector<std::vector<uint8_t>> msgs, bufs;
    for (int i = 0; i < kMsgs; ++i) {
      msgs.push_back(pattern(kThreshold - 5000 + 9000 * static_cast<uint64_t>(i),
                             static_cast<uint32_t>(30 + i)));
      bufs.emplace_back(msgs[i].size(), 0xEE);
    }
    // Half the receives before the messages, half after.
    for (int i = 0; i < kMsgs / 2; ++i) {
      ASSERT_TRUE(link.b().post_trecv(trecv(i, bufs[i], i)).ok());
    }
    for (int i = 0; i < kMsgs; ++i) {
      ASSERT_TRUE(link.a().post_tsend(tsend(i, msgs[i], i, mode)).ok());
    }
    link.run(link.now() + kMillisecond);
    for (int i = kMsgs / 2; i < kMsgs; ++i) {
      ASSERT_TRUE(link.b().post_trecv(trecv(i, bufs[i], i)).ok());
    }
    link.run(kSecond);
    const auto rc = by_wr_id(drain(link.b()));
    ASSERT_EQ(rc.size(), static_cast<size_t>(kMsgs));
    for (int i = 0; i < kMsgs; ++i) {
      EXPECT_EQ(rc.at(i).status, OpStatus::kSuccess) << i;
      EXPECT_EQ(rc.at(i).bytes, msgs[i].size());
      EXPECT_TRUE(msgs[i] == bufs[i]) << "message " << i;
    }
    const auto sc = by_wr_id(drain(link.a()));
    ASSERT_EQ(sc.size(), static_cast<size_t>(kMsgs));
    for (const auto& [id, c] : sc) EXPECT_EQ(c.status, OpStatus::kSuccess) << id;
    EXPECT_GT(faults.lost, 0);
    EXPECT_GT(faults.duplicated, 0);
    EXPECT_GT(link.a().counters().tx_rendezvous, 0u);
    EXPECT_EQ(link.a().counters().rdv_timeouts, 0u);
    way(link, link.a().counters().tx_rendezvous);
  }
}

TEST_P(UetRendezvous_Send, UntaggedSendsGoIntoPostedBuffersAndTooShortOnesFailBothEnds) {
  Link link(a(), b());
  const std::vector<uint8_t> big = pattern(100000, 3), bigger = pattern(120000, 4);
  std::vector<uint8_t> buf1(100000, 0), buf2(50000, 0xEE);
  ASSERT_TRUE(link.b().post_recv({1, buf1.data(), buf1.size()}).ok());
  ASSERT_TRUE(link.b().post_recv({2, buf2.data(), buf2.size()}).ok());
  SendRequest s1{.wr_id = 11, .peer = kIpB, .local = big.data(), .length = big.size(),
                 .has_imm = true, .imm = 0xABCD};
  SendRequest s2{.wr_id = 12, .peer = kIpB, .local = bigger.data(), .length = bigger.size()};
  ASSERT_TRUE(link.a().post_send(s1).ok());
  ASSERT_TRUE(link.a().post_send(s2).ok());
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_EQ(rc.at(1).status, OpStatus::kSuccess);
  EXPECT_EQ(rc.at(1).bytes, big.size());
  EXPECT_TRUE(rc.at(1).has_imm);
  EXPECT_EQ(rc.at(1).imm, 0xABCDu);
  EXPECT_TRUE(big == buf1);
  EXPECT_EQ(rc.at(2).status, OpStatus::kLengthError);
  EXPECT_TRUE(std::all_of(buf2.begin(), buf2.end(), [](uint8_t x) { return x == 0xEE; }));
  const auto sc = by_wr_id(drain(link.a()));
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc.at(11).status, OpStatus::kSuccess);
  EXPECT_EQ(sc.at(12).status, OpStatus::kLengthError);
  EXPECT_EQ(link.a().counters().tx_rendezvous, 2u);
  // Only the first moved its rest (the second was refused whole): 4 KiB READs, or one push.
  EXPECT_EQ(link.a().counters().rx_rdv_reads, push() ? 0u : (100000 - (4096 - 24) + 4095) / 4096);
  way(link, 1);
}

TEST_P(UetRendezvous_Truncation, TheBytesThatFitArePlacedPostedOrUnexpected) {
  for (bool posted_first : {true, false}) {
    SCOPED_TRACE(posted_first ? "posted first" : "unexpected first");
    Link link(a(), b());
    const std::vector<uint8_t> msg = pattern(90000, 8);
    std::vector<uint8_t> buf(30000, 0xEE);
    if (posted_first) { ASSERT_TRUE(link.b().post_trecv(trecv(3, buf, 11)).ok()); }
    ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 11)).ok());
    link.run(link.now() + 100 * kMicrosecond);
    if (!posted_first) { ASSERT_TRUE(link.b().post_trecv(trecv(3, buf, 11)).ok()); }
    link.run(kSecond);
    const auto rc = drain(link.b());
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OpStatus::kTruncated);
    EXPECT_EQ(rc[0].bytes, buf.size());
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), msg.begin()));
    const auto sc = drain(link.a());  // the sender's message was delivered (FI_ETRUNC)
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
    way(link, 1);
  }
}

// probe_tagged (FI_PEEK, MPI_Iprobe) and FI_CLAIM (MPI_Improbe, MPI_Mrecv): an eager and a
// rendezvous message wait unexpected. A probe finds each by its tag with its whole length,
// sender and data and leaves it; a claimed one is passed by post_trecv and taken only by
// recv_claimed, once, whole; a tag nothing carries finds nothing.
TEST(UetRendezvous_Probe, PeekFindsWholeMessagesAndAClaimReservesOne) {
  Link link;
  const std::vector<uint8_t> eager = pattern(3000, 21), big = pattern(70000, 22);
  TaggedSendRequest te = tsend(1, eager, 7), tb = tsend(2, big, 8);
  te.has_data = true;
  te.data = 0xDA7A;
  ASSERT_TRUE(link.a().post_tsend(te).ok());
  ASSERT_TRUE(link.a().post_tsend(tb).ok());
  link.run(link.now() + kMillisecond);  // both wait unexpected at B
  TaggedRecv any;
  any.ignore = ~uint64_t{0};
  Probed p;
  ASSERT_TRUE(link.b().probe_tagged(any, false, &p).ok());
  EXPECT_EQ(p.tag, 7u);  // the first to arrive
  TaggedRecv want8;
  want8.tag = 8;
  ASSERT_TRUE(link.b().probe_tagged(want8, false, &p).ok());
  EXPECT_EQ(p.length, big.size());  // rendezvous: the whole message, not its eager part
  EXPECT_EQ(p.peer, kIpA);
  TaggedRecv want9;
  want9.tag = 9;
  EXPECT_TRUE(absl::IsNotFound(link.b().probe_tagged(want9, false, &p)));
  TaggedRecv want7;
  want7.tag = 7;
  Probed c;
  ASSERT_TRUE(link.b().probe_tagged(want7, true, &c).ok());
  EXPECT_EQ(c.length, eager.size());
  EXPECT_TRUE(c.has_data);
  EXPECT_EQ(c.data, 0xDA7Au);
  // Claimed: neither a probe nor a receive for tag 7 sees it any more.
  EXPECT_TRUE(absl::IsNotFound(link.b().probe_tagged(want7, false, &p)));
  std::vector<uint8_t> other(4000, 0xEE), got(4000, 0xEE), big_buf(big.size(), 0xEE);
  ASSERT_TRUE(link.b().post_trecv(trecv(10, other, 7)).ok());
  ASSERT_TRUE(link.b().recv_claimed(c.claim, trecv(11, got, 0)).ok());
  EXPECT_TRUE(absl::IsNotFound(link.b().recv_claimed(c.claim, trecv(12, got, 0))));
  // The probed, unclaimed rendezvous message is still a receive's to take.
  ASSERT_TRUE(link.b().post_trecv(trecv(13, big_buf, 8)).ok());
  link.run(kSecond);
  auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), 2u);  // 10 still waits for a tag-7 message
  EXPECT_EQ(rc[11].status, OpStatus::kSuccess);
  EXPECT_EQ(rc[11].bytes, eager.size());
  EXPECT_TRUE(rc[11].has_imm);
  EXPECT_EQ(rc[11].imm, 0xDA7Au);
  EXPECT_TRUE(std::equal(eager.begin(), eager.end(), got.begin()));
  EXPECT_EQ(rc[13].status, OpStatus::kSuccess);
  EXPECT_TRUE(big_buf == big);
  EXPECT_TRUE(std::all_of(other.begin(), other.end(), [](uint8_t v) { return v == 0xEE; }));
  EXPECT_EQ(drain(link.a()).size(), 2u);  // both senders completed
}

// Each end sends the other a rendezvous message on the PDC its READ of the other's shares:
// each send waits for the other's clear, and each READ completes only behind its PDC's send.
// With the first two CLEARs lost, both still complete, whole, long before rendezvous_timeout.
// (UetAtomic_Clear is the test that a lost CLEAR goes again.)
TEST(UetRendezvous_Clear, CrossedSendsCompleteThoughTheirFirstClearsAreLost) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.rendezvous_timeout = b.rendezvous_timeout = 20 * kMillisecond;
  Link link(a, b);
  int clears_lost = 0;
  link.set_filter([&](int, const wire::Decoded& d) {
    if (d.pds_type == wire::PdsType::kCtrl &&
        wire::as<wire::PdsCtrl>(d.pds)->ctl_type() == wire::CtrlType::kClear && clears_lost < 2) {
      ++clears_lost;
      return 0;
    }
    return 1;
  });
  const std::vector<uint8_t> ma = pattern(50000, 1), mb = pattern(70000, 2);
  std::vector<uint8_t> at_b(ma.size(), 0), at_a(mb.size(), 0);
  ASSERT_TRUE(link.b().post_trecv(trecv(1, at_b, 5)).ok());
  ASSERT_TRUE(link.a().post_trecv(trecv(2, at_a, 6)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(10, ma, 5)).ok());
  TaggedSendRequest back = tsend(20, mb, 6);
  back.peer = kIpA;
  ASSERT_TRUE(link.b().post_tsend(back).ok());
  link.run(link.now() + 5 * kMillisecond);
  std::vector<Completion> ca = drain(link.a()), cb = drain(link.b());
  ASSERT_EQ(ca.size(), 2u);  // its send and its receive
  ASSERT_EQ(cb.size(), 2u);
  for (const Completion& c : ca) EXPECT_EQ(c.status, OpStatus::kSuccess) << c.wr_id;
  for (const Completion& c : cb) EXPECT_EQ(c.status, OpStatus::kSuccess) << c.wr_id;
  EXPECT_TRUE(ma == at_b);
  EXPECT_TRUE(mb == at_a);
  EXPECT_EQ(clears_lost, 2);
  EXPECT_EQ(link.a().counters().rdv_timeouts + link.b().counters().rdv_timeouts, 0u);
}

// fi_pingpong's pattern: each side keeps a receive posted, and answers a message with one of
// its own once it has it, round after round; every send completes at both ends, and at once:
// the reader's CLEAR of one round's READ answers does not wait an RTO behind the last round's.
// (The timers are a kernel-socket host's, as fabric/ sets them.)
TEST(UetRendezvous_PingPong, RoundsOfAnsweredMessagesEachComplete) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  for (UetConfig* c : {&a, &b}) {
    c->rendezvous_bytes = 65536;
    c->rto = c->min_rto = 50 * kMillisecond;
    c->max_rto = 200 * kMillisecond;
    c->rto_rtt_max_pct = 150;
    c->base_rtt = 50 * kMicrosecond;
    c->idle_timeout = kSecond;
    c->rendezvous_timeout = c->deferral_timeout = 1000 * kSecond;
  }
  Link link(a, b);
  constexpr int kRounds = 4;
  const std::vector<uint8_t> ping = pattern(98304, 1), pong = pattern(98304, 2);
  std::vector<uint8_t> at_a(pong.size(), 0), at_b(ping.size(), 0);
  ASSERT_TRUE(link.b().post_trecv(trecv(100, at_b, 7)).ok());
  for (int r = 0; r < kRounds; ++r) {
    const Time round_start = link.now();
    ASSERT_TRUE(link.a().post_trecv(trecv(200 + r, at_a, 7)).ok());
    ASSERT_TRUE(link.a().post_tsend(tsend(300 + r, ping, 7)).ok());
    // B answers once its receive completes.
    bool b_got = false, b_sent = false;
    Time t = link.now();
    for (int step = 0; step < 100000 && !b_sent; ++step) {
      link.run(t += 20 * kMicrosecond);
      for (const Completion& c : drain(link.b())) {
        ASSERT_EQ(c.status, OpStatus::kSuccess) << "round " << r << " wr " << c.wr_id;
        if (c.op != Opcode::kTaggedRecv) continue;
        b_got = true;
        EXPECT_TRUE(at_b == ping) << r;
        ASSERT_TRUE(link.b().post_trecv(trecv(101 + r, at_b, 7)).ok());
        TaggedSendRequest back = tsend(400 + r, pong, 7);
        back.peer = kIpA;
        ASSERT_TRUE(link.b().post_tsend(back).ok());
        b_sent = true;
      }
    }
    ASSERT_TRUE(b_got) << "round " << r;
    // A's send and receive complete, and so does B's answer.
    int a_done = 0, b_done = 0;
    for (int step = 0; step < 100000 && (a_done < 2 || b_done < 1); ++step) {
      link.run(t += 20 * kMicrosecond);
      for (const Completion& c : drain(link.a())) {
        EXPECT_EQ(c.status, OpStatus::kSuccess) << "round " << r << " wr " << c.wr_id;
        ++a_done;
      }
      for (const Completion& c : drain(link.b())) {
        EXPECT_EQ(c.status, OpStatus::kSuccess) << "round " << r << " wr " << c.wr_id;
        EXPECT_EQ(c.wr_id, 400u + r);
        ++b_done;
      }
    }
    // Nothing was lost: no round waits for a timer (an RTO is 50 ms here).
    EXPECT_LT(link.now() - round_start, kMillisecond) << "round " << r;
    ASSERT_EQ(a_done, 2) << "round " << r;
    ASSERT_EQ(b_done, 1) << "round " << r;
    EXPECT_TRUE(at_a == pong) << r;
  }
}

// ----------------------------------------------------------------------------- bounds

TEST(UetRendezvous_Bounds, WithEverySourceExposedTheNextSendsGoEagerly) {
  UetConfig a = config_for(kIpA);
  a.rendezvous_sources = 1;
  Link link(a);
  std::vector<std::vector<uint8_t>> msgs, bufs;
  for (int i = 0; i < 3; ++i) {
    msgs.push_back(pattern(50000, static_cast<uint32_t>(i)));
    bufs.emplace_back(50000, 0);
    ASSERT_TRUE(link.b().post_trecv(trecv(i, bufs[i], 5)).ok());
    ASSERT_TRUE(link.a().post_tsend(tsend(i, msgs[i], 5)).ok());
  }
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(msgs[i] == bufs[i]) << i;  // in posting order
  EXPECT_EQ(link.a().counters().tx_rendezvous, 1u);
  EXPECT_EQ(link.a().counters().tx_rendezvous_eager, 2u);
  // The source is free again: the next one goes by rendezvous.
  ASSERT_TRUE(link.b().post_trecv(trecv(9, bufs[0], 5)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(9, msgs[2], 5)).ok());
  link.run(kSecond);
  EXPECT_EQ(link.a().counters().tx_rendezvous, 2u);
  EXPECT_TRUE(msgs[2] == bufs[0]);
}

// A rendezvous request the target NACKs NO_SES_MSG_AVAIL (its unexpected list full) is
// retried as a SEND with no buffer is (§3.10), rnr_retries times, then given up: the send
// completes kNoResources and its source is withdrawn; the target keeps nothing of it.
TEST(UetRendezvous_Bounds, ARequestRefusedForLackOfResourcesGivesUpAfterTheRetries) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.rnr_retries = 3;
  b.max_unexpected = 1;
  Link link(a, b);
  const std::vector<uint8_t> m1 = pattern(100, 1), m2 = pattern(60000, 2);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, m1, 1)).ok());  // fills the list
  link.run(link.now() + 50 * kMicrosecond);
  ASSERT_TRUE(link.a().post_tsend(tsend(2, m2, 2)).ok());
  link.run(link.now() + kSecond);
  const auto sc = by_wr_id(drain(link.a()));
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc.at(1).status, OpStatus::kSuccess);
  EXPECT_EQ(sc.at(2).status, OpStatus::kNoResources);
  EXPECT_EQ(sc.at(2).bytes, 0u);
  // Expect: the first try and 3 retries, and no more after the give-up.
  EXPECT_EQ(link.b().counters().rx_unexpected_full, 4u);
  EXPECT_EQ(link.a().counters().tx_rendezvous, 1u);
  // The source is free again: the next send goes by rendezvous and lands whole.
  std::vector<uint8_t> buf(60000, 0);
  ASSERT_TRUE(link.b().post_trecv(trecv(9, buf, 3)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(3, m2, 3)).ok());
  link.run(link.now() + kSecond);
  EXPECT_EQ(link.a().counters().tx_rendezvous, 2u);
  EXPECT_TRUE(buf == m2);
  EXPECT_EQ(by_wr_id(drain(link.a())).at(3).status, OpStatus::kSuccess);
}

TEST(UetRendezvous_Timeout, ASourceNoOneReadsIsWithdrawnAndItsSendFails) {
  UetConfig a = config_for(kIpA);
  a.rendezvous_timeout = 500 * kMicrosecond;
  Link link(a);
  const std::vector<uint8_t> msg = pattern(60000, 2);
  std::vector<uint8_t> buf(60000, 0xEE);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 4)).ok());
  link.run(link.now() + 2 * kMillisecond);  // no receive posted: it waits unexpected
  auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kRetriesExhausted);
  EXPECT_EQ(link.a().counters().rdv_timeouts, 1u);
  // The receive posted late READs a withdrawn key: refused, it completes with the error.
  ASSERT_TRUE(link.b().post_trecv(trecv(2, buf, 4)).ok());
  link.run(kSecond);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, OpStatus::kRemoteAccessError);
  EXPECT_GE(link.a().counters().rx_rdv_bad_read, 1u);
}

// hold_probe_after: while a source waits on a live target, REQ_ACKs are answered and the send
// completes when the target reads, however late; once the target is gone, the next send's
// REQ_ACKs go unanswered and it fails within the retry budget, not rendezvous_timeout.
TEST(UetRendezvous_Liveness, ASourceWaitsOnALiveTargetAndFailsWhenItDies) {
  UetConfig a = config_for(kIpA);
  a.hold_probe_after = kMillisecond;
  a.rendezvous_timeout = 1000 * kSecond;
  Link link(a);
  const std::vector<uint8_t> msg = pattern(60000, 3);
  std::vector<uint8_t> buf(60000, 0xEE);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 4)).ok());
  link.run(link.now() + 20 * kMillisecond);  // no receive posted: the source waits
  EXPECT_TRUE(drain(link.a()).empty());
  const uint64_t probes = link.a().counters().tx_req_ack;
  EXPECT_GE(probes, 10u);  // one per hold_probe_after, each answered
  EXPECT_EQ(link.b().counters().rx_req_ack, probes);
  EXPECT_EQ(link.a().counters().hold_probe_failures, 0u);
  ASSERT_TRUE(link.b().post_trecv(trecv(2, buf, 4)).ok());
  link.run(link.now() + 10 * kMillisecond);
  auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(buf == msg);

  // B dies once it has acknowledged the next request (nothing of B's arrives any more).
  ASSERT_TRUE(link.a().post_tsend(tsend(3, msg, 5)).ok());
  link.run(link.now() + 2 * kMillisecond);
  link.set_filter([](int from, const wire::Decoded&) { return from == 1 ? 0 : 1; });
  const Time died = link.now();
  const uint64_t probes_before = link.a().counters().tx_req_ack;
  link.run(died + kSecond);
  sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kRetriesExhausted);
  EXPECT_EQ(link.a().counters().hold_probe_failures, 1u);
  EXPECT_EQ(link.a().counters().rdv_timeouts, 0u);
  EXPECT_EQ(link.a().counters().tx_req_ack - probes_before, a.max_retries);
}

// ----------------------------------------------------------------- hostile and refused

// The reader may read only the source's own bytes, and only while the send waits for it.
TEST(UetRendezvous_Hostile, ReadsOutsideTheSourceOrAfterItsSendAreRefused) {
  Link link;
  std::optional<uint32_t> key;  // the source's key, as A's rendezvous request names it
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from == 0 && d.ses_rendezvous != nullptr) {
      key = static_cast<uint32_t>(d.ses_rendezvous->read_match_bits());
    }
    return 1;
  });
  const std::vector<uint8_t> msg = pattern(40000, 6);
  std::vector<uint8_t> buf(40000, 0), stolen(4096, 0);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 8)).ok());
  link.run(link.now() + 100 * kMicrosecond);  // unexpected at B: the source waits
  ASSERT_TRUE(key.has_value());
  // Past its end.
  ReadRequest past{.wr_id = 50, .peer = kIpA, .rkey = *key, .remote_offset = 39000,
                   .local = stolen.data(), .length = 4000};
  ASSERT_TRUE(link.b().post_read(past).ok());
  link.run(link.now() + 200 * kMicrosecond);
  auto bc = drain(link.b());
  ASSERT_EQ(bc.size(), 1u);
  EXPECT_EQ(bc[0].status, OpStatus::kRemoteAccessError);
  // The send completes normally once its receive has read it.
  ASSERT_TRUE(link.b().post_trecv(trecv(2, buf, 8)).ok());
  link.run(kSecond);
  EXPECT_EQ(drain(link.b()).size(), 1u);
  EXPECT_TRUE(msg == buf);
  ASSERT_EQ(drain(link.a()).size(), 1u);
  // After it, the key names nothing.
  ReadRequest after{.wr_id = 51, .peer = kIpA, .rkey = *key, .remote_offset = 5000,
                    .local = stolen.data(), .length = 4000};
  ASSERT_TRUE(link.b().post_read(after).ok());
  link.run(kSecond);
  bc = drain(link.b());
  ASSERT_EQ(bc.size(), 1u);
  EXPECT_EQ(bc[0].status, OpStatus::kRemoteAccessError);
  EXPECT_TRUE(std::all_of(stolen.begin(), stolen.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_EQ(link.a().counters().rx_rdv_bad_read, 2u);
}

// A target of another job refuses the rendezvous request: the send fails at once, its source
// is free again, and nothing is read.
TEST(UetRendezvous_Refused, ARefusedRequestFreesItsSource) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.rendezvous_sources = 1;
  b.job_id = 7;  // A sends as job 0
  Link link(a, b);
  const std::vector<uint8_t> msg = pattern(50000, 1);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 2)).ok());
  link.run(kSecond);
  auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kAccessDenied);
  EXPECT_EQ(link.a().counters().rx_rdv_reads, 0u);
  ASSERT_TRUE(link.a().post_tsend(tsend(2, msg, 2)).ok());
  link.run(kSecond);
  EXPECT_EQ(link.a().counters().tx_rendezvous, 2u);  // the one source, used again
  EXPECT_EQ(link.a().counters().tx_rendezvous_eager, 0u);
}

TEST(UetRendezvous_Config, OutOfRangeFieldsAreNamed) {
  UetConfig c = config_for(kIpA);
  c.rendezvous_bytes = 100;
  testing::expect_refused(c, "rendezvous_bytes");
  c = config_for(kIpA);
  c.rendezvous_sources = 0;
  testing::expect_refused(c, "rendezvous_sources");
  c = config_for(kIpA);
  c.rendezvous_timeout = 0;
  testing::expect_refused(c, "rendezvous_timeout");
  c = config_for(kIpA);
  c.hold_probe_after = kNanosecond;
  testing::expect_refused(c, "hold_probe_after");
}

}  // namespace
}  // namespace uet
