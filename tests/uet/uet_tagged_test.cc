// SES tagged messages and job-based access in the UET engine (transport/uet/uet_tagged.cc), on
// the fake link (tests/common/fake_link.h): matching as FI_TAGGED defines it, the unexpected
// list and its bounds, truncation, header data, multi-packet messages under loss, duplication
// and reordering; and requests for another job, process, resource index or generation refused
// with their return codes before a byte is placed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/uet_pair.h"
#include "tests/common/uet_tagged_pair.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {
namespace {

using testing::drain;
using testing::pattern;

using testing::by_wr_id;
using testing::kIpA;
using testing::kIpB;
using testing::trecv;
using testing::tsend;

constexpr uint32_t kIpC = 0x0A000003;
constexpr testing::TaggedSetup kSetup{.seed = 41, .jitter_seed = 5};
constexpr testing::TaggedConfig<kSetup> config_for;
using Link = testing::TaggedLink<kSetup>;

// ------------------------------------------------------------------------------ matching

// One row of FI_TAGGED's matching rules: receives posted (before or after the messages),
// messages sent one at a time, and which receive each message must land in.
struct MatchCase {
  std::string name;
  bool receives_first;  // post the receives before any message is sent
  std::vector<TaggedRecv> recvs;  // base/length filled in by the test; wr_id = index
  std::vector<uint64_t> tags;     // message i: tag tags[i], 100 + i bytes of pattern i
  std::vector<int> expect;        // message i lands in receive expect[i] (-1: none)
};

class UetTagged_Match : public ::testing::TestWithParam<MatchCase> {};

TEST_P(UetTagged_Match, EachMessageLandsInTheReceiveFiTaggedNames) {
  const MatchCase& mc = GetParam();
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.idle_timeout = b.idle_timeout = 0;
  Link link(a, b);
  std::vector<std::vector<uint8_t>> bufs(mc.recvs.size(), std::vector<uint8_t>(256, 0xEE));
  std::vector<std::vector<uint8_t>> msgs;
  for (size_t i = 0; i < mc.tags.size(); ++i) {
    msgs.push_back(pattern(100 + i, static_cast<uint32_t>(i + 1)));
  }
  auto post_recvs = [&] {
    for (size_t r = 0; r < mc.recvs.size(); ++r) {
      TaggedRecv tr = mc.recvs[r];
      tr.wr_id = r;
      tr.base = bufs[r].data();
      tr.length = bufs[r].size();
      ASSERT_TRUE(link.b().post_trecv(tr).ok());
    }
  };
  if (mc.receives_first) post_recvs();
  // One message at a time, each delivered before the next: their arrival order is their
  // send order.
  for (size_t i = 0; i < mc.tags.size(); ++i) {
    ASSERT_TRUE(link.a().post_tsend(tsend(1000 + i, msgs[i], mc.tags[i])).ok());
    link.run(link.now() + 100 * kMicrosecond);
  }
  if (!mc.receives_first) post_recvs();
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  for (size_t i = 0; i < mc.tags.size(); ++i) {
    if (mc.expect[i] < 0) continue;
    const auto r = static_cast<uint64_t>(mc.expect[i]);
    ASSERT_TRUE(rc.count(r)) << "message " << i << " should complete receive " << r;
    const Completion& c = rc.at(r);
    EXPECT_EQ(c.op, Opcode::kTaggedRecv);
    EXPECT_EQ(c.status, OpStatus::kSuccess);
    EXPECT_EQ(c.tag, mc.tags[i]) << "receive " << r;
    EXPECT_EQ(c.bytes, msgs[i].size());
    EXPECT_EQ(c.peer, kIpA);
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[r].begin())) << "receive " << r;
  }
  // Expect: exactly the receives some message names completed, each once.
  size_t expected = 0;
  for (int e : mc.expect) expected += e >= 0;
  EXPECT_EQ(rc.size(), expected);
  // Every send completes, matched or still unexpected (FI_TAGGED: the send is done when sent).
  const auto sc = drain(link.a());
  EXPECT_EQ(sc.size(), mc.tags.size());
  for (const Completion& c : sc) {
    EXPECT_EQ(c.status, OpStatus::kSuccess);
    EXPECT_EQ(c.op, Opcode::kTaggedSend);
  }
}

TaggedRecv r(uint64_t tag, uint64_t ignore = 0, uint32_t source = 0) {
  return TaggedRecv{0, nullptr, 0, tag, ignore, source};
}

INSTANTIATE_TEST_SUITE_P(
    Rules, UetTagged_Match,
    ::testing::Values(
        MatchCase{"ExactTag", true, {r(7), r(8)}, {8, 7}, {1, 0}},
        MatchCase{"IgnoreBitsMatchAnyValueThere", true, {r(0x10, 0x0F)}, {0x1F}, {0}},
        MatchCase{"IgnoreBitsDoNotWidenOtherBits", true, {r(0x10, 0x0F)}, {0x2F}, {-1}},
        MatchCase{"FirstPostedOfTwoMatchingWins", true, {r(5), r(5)}, {5, 5}, {0, 1}},
        MatchCase{"WildcardPostedFirstTakesTheMessage", true, {r(0, ~uint64_t{0}), r(9)}, {9}, {0}},
        MatchCase{"UnexpectedThenPosted", false, {r(3)}, {3}, {0}},
        MatchCase{"UnexpectedMatchedInArrivalOrder", false, {r(4), r(4)}, {4, 4}, {0, 1}},
        MatchCase{"ReceiveTakesFirstMatchingUnexpectedOnly", false, {r(6)}, {5, 6, 6}, {-1, 0, -1}},
        MatchCase{"DirectedReceiveFromTheSender", true, {r(1, 0, kIpA)}, {1}, {0}},
        MatchCase{"DirectedReceiveFromAnotherSourceWaits", true, {r(1, 0, kIpC), r(1)}, {1}, {1}},
        MatchCase{"AnySourceAfterADirectedMiss", false, {r(2, 0, kIpC), r(2, 0, 0)}, {2}, {1}}),
    [](const ::testing::TestParamInfo<MatchCase>& i) { return i.param.name; });

// ROD executes a PDC's requests in PSN order, so messages are matched in send order even when
// the fabric reorders their packets (spec/uet.md §3.3).
TEST(UetTagged_Order, RodMatchesSameTagMessagesInSendOrderUnderReordering) {
  Link link;
  link.set_jitter(20 * kMicrosecond);
  constexpr int kMsgs = 16;
  std::vector<std::vector<uint8_t>> msgs, bufs(kMsgs, std::vector<uint8_t>(20000, 0));
  for (int i = 0; i < kMsgs; ++i) {
    ASSERT_TRUE(link.b().post_trecv({static_cast<uint64_t>(i), bufs[i].data(), bufs[i].size(), 42})
                    .ok());
  }
  for (int i = 0; i < kMsgs; ++i) {
    msgs.push_back(pattern(3000 + 1000 * i, static_cast<uint32_t>(i)));
    ASSERT_TRUE(link.a().post_tsend(tsend(i, msgs[i], 42, DeliveryMode::kRod)).ok());
  }
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), static_cast<size_t>(kMsgs));
  for (int i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(rc.at(i).bytes, msgs[i].size()) << "receive " << i << " got another message";
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[i].begin()));
  }
  EXPECT_GT(link.b().counters().rod_staged, 0u);  // the jitter did reorder
}

// ------------------------------------------------------------------ multi-packet, faults

TEST(UetTagged_Faults, LossDuplicationAndReorderingDeliverEveryMessageOnceAndWhole) {
  Link link;
  testing::RandomFaults faults(/*seed=*/17, /*loss_every=*/15, /*dup_every=*/8);
  link.set_jitter(10 * kMicrosecond);
  link.set_filter([&](int from, const wire::Decoded& d) {
    return from != 0 || d.ses == nullptr ? 1 : faults();
  });
  constexpr int kMsgs = 24;
  std::vector<std::vector<uint8_t>> msgs, bufs(kMsgs, std::vector<uint8_t>(64 * 1024, 0xEE));
  // Half the receives are posted before, half after the messages (those wait unexpected).
  for (int i = 0; i < kMsgs / 2; ++i) {
    ASSERT_TRUE(link.b().post_trecv({static_cast<uint64_t>(i), bufs[i].data(), bufs[i].size(),
                                     static_cast<uint64_t>(i)})
                    .ok());
  }
  for (int i = 0; i < kMsgs; ++i) {
    msgs.push_back(pattern(1 + 2600 * i, static_cast<uint32_t>(i + 3)));  // 1 B .. ~60 KB
    TaggedSendRequest ts = tsend(i, msgs[i], static_cast<uint64_t>(i));
    ts.has_data = i % 2 == 0;
    ts.data = 0xD00D000000000000ull + static_cast<uint64_t>(i);
    ASSERT_TRUE(link.a().post_tsend(ts).ok());
  }
  link.run(link.now() + 2 * kMillisecond);
  for (int i = kMsgs / 2; i < kMsgs; ++i) {
    ASSERT_TRUE(link.b().post_trecv({static_cast<uint64_t>(i), bufs[i].data(), bufs[i].size(),
                                     static_cast<uint64_t>(i)})
                    .ok());
  }
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), static_cast<size_t>(kMsgs));
  for (int i = 0; i < kMsgs; ++i) {
    const Completion& c = rc.at(i);
    EXPECT_EQ(c.status, OpStatus::kSuccess);
    EXPECT_EQ(c.bytes, msgs[i].size());
    EXPECT_EQ(c.tag, static_cast<uint64_t>(i));
    EXPECT_EQ(c.has_imm, i % 2 == 0);
    if (i % 2 == 0) { EXPECT_EQ(c.imm, 0xD00D000000000000ull + static_cast<uint64_t>(i)); }
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[i].begin())) << "message " << i;
    // Nothing past the message is written.
    EXPECT_TRUE(std::all_of(bufs[i].begin() + static_cast<ptrdiff_t>(msgs[i].size()),
                            bufs[i].end(), [](uint8_t x) { return x == 0xEE; }));
  }
  EXPECT_EQ(drain(link.a()).size(), static_cast<size_t>(kMsgs));
  EXPECT_GT(faults.lost, 0);
  EXPECT_GT(faults.duplicated, 0);
  EXPECT_GT(link.b().counters().rx_duplicates, 0u);
  EXPECT_GT(link.b().counters().rx_tagged_unexpected, 0u);
  EXPECT_GT(link.b().counters().rx_tagged_matched, 0u);
}

// --------------------------------------------------------------- truncation and bounds

TEST(UetTagged_Truncation, LongerThanTheBufferPlacesWhatFitsPostedOrUnexpected) {
  for (bool posted_first : {true, false}) {
    SCOPED_TRACE(posted_first ? "posted first" : "unexpected first");
    Link link;
    std::vector<uint8_t> msg = pattern(10000, 8), buf(4096, 0xEE);
    if (posted_first) { ASSERT_TRUE(link.b().post_trecv(trecv(3, buf, 11)).ok()); }
    ASSERT_TRUE(link.a().post_tsend(tsend(1, msg, 11)).ok());
    link.run(link.now() + kMillisecond);
    if (!posted_first) { ASSERT_TRUE(link.b().post_trecv(trecv(3, buf, 11)).ok()); }
    link.run(kSecond);
    const auto rc = drain(link.b());
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OpStatus::kTruncated);
    EXPECT_EQ(rc[0].bytes, buf.size());
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), msg.begin()));
    // Expect: the sender's message was delivered (FI_TAGGED: truncation is the receiver's).
    const auto sc = drain(link.a());
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
    EXPECT_EQ(link.b().counters().rx_truncated, 1u);
  }
}

// cancel_recv (fi_cancel, MPI_Cancel): a receive no message has claimed is withdrawn and
// completes kCanceled with no bytes; the messages sent afterwards pass it by, into the
// receives posted beside it (tagged: the next match; untagged: the next buffer, in order). A
// receive a message claimed, or an unknown wr_id, is NotFound.
TEST(UetTagged_Cancel, AWaitingReceiveIsWithdrawnAndTheNextOneTakesItsMessage) {
  Link link;
  std::vector<uint8_t> t1(64, 0xEE), t2(64, 0xEE), t2b(64, 0xEE), u1(64, 0xEE), u2(64, 0xEE);
  ASSERT_TRUE(link.b().post_trecv(trecv(1, t1, 11)).ok());
  ASSERT_TRUE(link.b().post_trecv(trecv(2, t2, 22)).ok());
  ASSERT_TRUE(link.b().post_trecv(trecv(3, t2b, 22)).ok());
  ASSERT_TRUE(link.b().post_recv({4, u1.data(), u1.size()}).ok());
  ASSERT_TRUE(link.b().post_recv({5, u2.data(), u2.size()}).ok());
  ASSERT_TRUE(link.b().cancel_recv(2).ok());  // tagged, first of two for tag 22
  ASSERT_TRUE(link.b().cancel_recv(4).ok());  // untagged, the oldest buffer
  EXPECT_TRUE(absl::IsNotFound(link.b().cancel_recv(2)));
  EXPECT_TRUE(absl::IsNotFound(link.b().cancel_recv(99)));
  auto first = drain(link.b());
  ASSERT_EQ(first.size(), 2u);
  for (const Completion& c : first) {
    EXPECT_EQ(c.status, OpStatus::kCanceled) << c.wr_id;
    EXPECT_EQ(c.bytes, 0u) << c.wr_id;
  }
  EXPECT_EQ(first[0].wr_id, 2u);
  EXPECT_EQ(first[0].op, Opcode::kTaggedRecv);
  EXPECT_EQ(first[1].wr_id, 4u);
  EXPECT_EQ(first[1].op, Opcode::kRecv);

  const std::vector<uint8_t> m22 = pattern(40, 3), m11 = pattern(30, 4), mu = pattern(20, 5);
  ASSERT_TRUE(link.a().post_tsend(tsend(10, m22, 22)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(11, m11, 11)).ok());
  ASSERT_TRUE(link.a().post_send({12, kIpB, mu.data(), mu.size()}).ok());
  link.run(kSecond);
  auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), 3u);
  EXPECT_EQ(rc[3].status, OpStatus::kSuccess);  // tag 22 went to the receive left
  EXPECT_TRUE(std::equal(m22.begin(), m22.end(), t2b.begin()));
  EXPECT_EQ(rc[1].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(m11.begin(), m11.end(), t1.begin()));
  EXPECT_EQ(rc[5].status, OpStatus::kSuccess);  // the untagged one to the buffer after
  EXPECT_TRUE(std::equal(mu.begin(), mu.end(), u2.begin()));
  EXPECT_TRUE(std::all_of(t2.begin(), t2.end(), [](uint8_t v) { return v == 0xEE; }));
  EXPECT_TRUE(std::all_of(u1.begin(), u1.end(), [](uint8_t v) { return v == 0xEE; }));
  // Claimed and completed: nothing left to withdraw.
  EXPECT_TRUE(absl::IsNotFound(link.b().cancel_recv(3)));
  EXPECT_TRUE(absl::IsNotFound(link.b().cancel_recv(5)));
}

// A probe answers for the message a receive would take now (MPI: a probe and the receive
// after it agree). X (5 packets) and then Y (1) carry one tag; X's last packet is held back:
// Y is whole but X comes first, so the probe finds nothing yet. Once X is whole, the probe
// names X, and a receive gets X; then the probe names Y.
TEST(UetTagged_Probe, AProbeWaitsForTheMessageAReceiveWouldTakeNotALaterOne) {
  Link link;
  bool hold = true;
  link.set_filter([&](int from, const wire::Decoded& d) {
    const auto* ses = d.ses_as<wire::SesStandardRequest>();
    return from == 0 && hold && ses != nullptr && ses->eom() && !ses->som() ? 0 : 1;
  });
  const std::vector<uint8_t> x = pattern(5 * 4096, 31), y = pattern(100, 32);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, x, 5)).ok());
  ASSERT_TRUE(link.a().post_tsend(tsend(2, y, 5)).ok());
  link.run(link.now() + 200 * kMicrosecond);
  TaggedRecv match;
  match.tag = 5;
  Probed p;
  EXPECT_TRUE(absl::IsNotFound(link.b().probe_tagged(match, false, &p)));
  hold = false;
  link.run(link.now() + 100 * kMillisecond);
  ASSERT_TRUE(link.b().probe_tagged(match, false, &p).ok());
  EXPECT_EQ(p.length, x.size());
  std::vector<uint8_t> buf(x.size(), 0xEE);
  ASSERT_TRUE(link.b().post_trecv(trecv(7, buf, 5)).ok());
  EXPECT_TRUE(buf == x);
  ASSERT_TRUE(link.b().probe_tagged(match, false, &p).ok());
  EXPECT_EQ(p.length, y.size());
}

TEST(UetTagged_Bounds, AFullUnexpectedListNacksUntilItDrainsOrTheSenderGivesUp) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.rnr_retries = 3;
  b.max_unexpected = 1;
  Link link(a, b);
  std::vector<uint8_t> m1 = pattern(3000, 1), m2 = pattern(3000, 2), m3 = pattern(3000, 3);
  std::vector<uint8_t> b1(4096), b3(4096);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, m1, 1)).ok());
  link.run(link.now() + 50 * kMicrosecond);
  ASSERT_TRUE(link.a().post_tsend(tsend(2, m2, 2)).ok());  // no room: NACKed, given up
  link.run(link.now() + 5 * kMillisecond);
  auto sc = by_wr_id(drain(link.a()));
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc.at(1).status, OpStatus::kSuccess);
  EXPECT_EQ(sc.at(2).status, OpStatus::kNoResources);
  EXPECT_GE(link.b().counters().rx_unexpected_full, 4u);  // the first try and 3 retries
  // The first message is still there for its receive, and the list takes a new one after.
  ASSERT_TRUE(link.b().post_trecv(trecv(10, b1, 1)).ok());
  auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 10u);
  EXPECT_TRUE(std::equal(m1.begin(), m1.end(), b1.begin()));
  ASSERT_TRUE(link.a().post_tsend(tsend(3, m3, 3)).ok());
  link.run(link.now() + kMillisecond);
  ASSERT_TRUE(link.b().post_trecv(trecv(11, b3, 3)).ok());
  rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_TRUE(std::equal(m3.begin(), m3.end(), b3.begin()));
  // Expect: the given-up message never reached a receive, and nothing of it stayed.
  ASSERT_TRUE(link.b().post_trecv(trecv(12, b3, 2)).ok());
  EXPECT_TRUE(drain(link.b()).empty());
}

TEST(UetTagged_Bounds, UnexpectedBytesBoundTheListAndPostTrecvIsBounded) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.rnr_retries = 2;
  b.unexpected_bytes = 8192;
  b.max_trecvs = 2;
  Link link(a, b);
  std::vector<uint8_t> big = pattern(6000, 1), next = pattern(4000, 2), buf(8192);
  ASSERT_TRUE(link.a().post_tsend(tsend(1, big, 1)).ok());
  link.run(link.now() + 50 * kMicrosecond);
  ASSERT_TRUE(link.a().post_tsend(tsend(2, next, 2)).ok());  // 6000 + 4000 > 8192
  link.run(link.now() + 5 * kMillisecond);
  const auto sc = by_wr_id(drain(link.a()));
  EXPECT_EQ(sc.at(2).status, OpStatus::kNoResources);
  EXPECT_GT(link.b().counters().rx_unexpected_full, 0u);
  ASSERT_TRUE(link.b().post_trecv(trecv(1, buf, 77)).ok());
  ASSERT_TRUE(link.b().post_trecv(trecv(2, buf, 78)).ok());
  const absl::Status full = link.b().post_trecv(trecv(3, buf, 79));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(full.message()).find("max_trecvs"), std::string::npos);
  EXPECT_LE(link.b().memory_bytes(), UetEndpoint::memory_bound(b, 0));
}

TEST(UetTagged_Post, RefusedWhereTheModeCannotCarryItAndBadArgumentsNamed) {
  Link link;
  std::vector<uint8_t> msg(100), buf(100);
  const absl::Status rudi = link.a().post_tsend(tsend(1, msg, 1, DeliveryMode::kRudi));
  EXPECT_EQ(rudi.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(rudi.message()).find("kRud or kRod"), std::string::npos);
  EXPECT_EQ(link.a().post_tsend(tsend(1, msg, 1, DeliveryMode::kUud)).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(link.b().post_trecv({1, nullptr, 10, 0}).code(), absl::StatusCode::kInvalidArgument);
  // A zero-byte tagged message is a message.
  ASSERT_TRUE(link.b().post_trecv(trecv(4, buf, 9)).ok());
  TaggedSendRequest ts = tsend(2, msg, 9);
  ts.length = 0;
  ASSERT_TRUE(link.a().post_tsend(ts).ok());
  link.run(kSecond);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].bytes, 0u);
  EXPECT_EQ(rc[0].status, OpStatus::kSuccess);
}

// ---------------------------------------------------------------------- job-based access

// B serves job 7 as PID 5 (its job's first PID on the FEP is 3) with resource indexes 0..1.
UetConfig job_config(uint32_t ip, uint32_t job) {
  UetConfig c = config_for(ip);
  c.job_id = job;
  c.pid_on_fep = 5;
  c.job_pid_base = 3;
  c.resource_indexes = 2;
  return c;
}

struct AccessCase {
  std::string name;
  uint32_t initiator_job;
  SesAddress to;
  bool disable_ri1;
  wire::SesReturnCode code;  // kNull: accepted
};

class UetTagged_Access : public ::testing::TestWithParam<AccessCase> {};

// Every operation a request can carry is refused, placed nowhere and counted, with the
// spec's return code at the initiator; a request addressed right is served.
TEST_P(UetTagged_Access, RefusedBeforeAByteIsPlaced) {
  const AccessCase& ac = GetParam();
  for (DeliveryMode mode : {DeliveryMode::kRud, DeliveryMode::kRod, DeliveryMode::kRudi}) {
    SCOPED_TRACE(static_cast<int>(mode));
    Link link(job_config(kIpA, ac.initiator_job), job_config(kIpB, 7));
    if (ac.disable_ri1) { ASSERT_TRUE(link.b().disable_resource(1).ok()); }
    std::vector<uint8_t> region(16384, 0), src = pattern(10000, 4), read_back(4096, 0xEE);
    std::vector<uint8_t> recv_buf(16384, 0), trecv_buf(16384, 0);
    const uint32_t key = *link.b().register_memory(region.data(), region.size());
    ASSERT_TRUE(link.b().post_recv({50, recv_buf.data(), recv_buf.size()}).ok());
    ASSERT_TRUE(link.b().post_trecv(trecv(60, trecv_buf, 1)).ok());
    WriteRequest wr{1, kIpB, key, 0, src.data(), src.size(), mode};
    wr.to = ac.to;
    ReadRequest rr{2, kIpB, key, 0, read_back.data(), read_back.size(), mode};
    rr.to = ac.to;
    ASSERT_TRUE(link.a().post_write(wr).ok());
    ASSERT_TRUE(link.a().post_read(rr).ok());
    size_t ops = 2;
    if (mode != DeliveryMode::kRudi) {
      SendRequest sr{3, kIpB, src.data(), src.size(), mode};
      sr.to = ac.to;
      TaggedSendRequest ts = tsend(4, src, 1, mode);
      ts.to = ac.to;
      ASSERT_TRUE(link.a().post_send(sr).ok());
      ASSERT_TRUE(link.a().post_tsend(ts).ok());
      ops = 4;
    }
    link.run(kSecond);
    const auto sc = drain(link.a());
    ASSERT_EQ(sc.size(), ops);
    const auto rc = drain(link.b());
    if (ac.code == wire::SesReturnCode::kNull) {
      for (const Completion& c : sc) EXPECT_EQ(c.status, OpStatus::kSuccess) << to_string(c.op);
      EXPECT_TRUE(std::equal(src.begin(), src.end(), region.begin()));
      EXPECT_EQ(rc.size(), ops - 2);
      continue;
    }
    for (const Completion& c : sc) {
      EXPECT_EQ(c.status, OpStatus::kAccessDenied) << to_string(c.op);
      EXPECT_EQ(c.return_code, static_cast<uint8_t>(ac.code)) << to_string(c.op);
      EXPECT_EQ(c.bytes, 0u);
    }
    // Expect: nothing placed, read, received or matched.
    EXPECT_TRUE(std::all_of(region.begin(), region.end(), [](uint8_t x) { return x == 0; }));
    EXPECT_TRUE(std::all_of(read_back.begin(), read_back.end(), [](uint8_t x) { return x == 0xEE; }));
    EXPECT_TRUE(std::all_of(recv_buf.begin(), recv_buf.end(), [](uint8_t x) { return x == 0; }));
    EXPECT_TRUE(std::all_of(trecv_buf.begin(), trecv_buf.end(), [](uint8_t x) { return x == 0; }));
    EXPECT_TRUE(rc.empty());
    const UetCounters& k = link.b().counters();
    EXPECT_GT(k.rx_bad_job + k.rx_bad_pid + k.rx_bad_index + k.rx_disabled + k.rx_bad_generation,
              0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Codes, UetTagged_Access,
    ::testing::Values(
        AccessCase{"Absolute", 7, {5, false, 0, 0}, false, wire::SesReturnCode::kNull},
        AccessCase{"Relative", 7, {2, true, 1, 0}, false, wire::SesReturnCode::kNull},
        AccessCase{"AnotherJob", 8, {5, false, 0, 0}, false, wire::SesReturnCode::kBadJobId},
        AccessCase{"AnotherPid", 7, {4, false, 0, 0}, false, wire::SesReturnCode::kBadPid},
        AccessCase{"RelativeOffByOne", 7, {3, true, 0, 0}, false, wire::SesReturnCode::kBadPid},
        AccessCase{"UnconfiguredIndex", 7, {5, false, 2, 0}, false, wire::SesReturnCode::kBadIndex},
        AccessCase{"DisabledIndex", 7, {5, false, 1, 0}, true, wire::SesReturnCode::kDisabled},
        AccessCase{"StaleGeneration", 7, {5, false, 0, 3}, false,
                   wire::SesReturnCode::kBadGeneration}),
    [](const ::testing::TestParamInfo<AccessCase>& i) { return i.param.name; });

TEST(UetTagged_Access, ReEnablingAnIndexStartsANewGeneration) {
  Link link(job_config(kIpA, 7), job_config(kIpB, 7));
  std::vector<uint8_t> region(4096, 0), src = pattern(4096, 6);
  const uint32_t key = *link.b().register_memory(region.data(), region.size());
  ASSERT_TRUE(link.b().disable_resource(0).ok());
  const auto gen = link.b().enable_resource(0);
  ASSERT_TRUE(gen.ok());
  EXPECT_EQ(*gen, 1);
  WriteRequest wr{1, kIpB, key, 0, src.data(), src.size()};
  wr.to.pid_on_fep = 5;  // generation 0: the old one
  ASSERT_TRUE(link.a().post_write(wr).ok());
  link.run(kSecond);
  auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].return_code, static_cast<uint8_t>(wire::SesReturnCode::kBadGeneration));
  EXPECT_EQ(link.b().counters().rx_bad_generation, 1u);
  wr.wr_id = 2;
  wr.to.ri_generation = 1;
  ASSERT_TRUE(link.a().post_write(wr).ok());
  link.run(kSecond);
  sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  EXPECT_EQ(region, src);
  EXPECT_EQ(link.b().enable_resource(2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(link.b().disable_resource(4095).code(), absl::StatusCode::kInvalidArgument);
}

TEST(UetTagged_Access, UudDatagramsForAnotherJobAreDroppedAndCounted) {
  Link link(job_config(kIpA, 9), job_config(kIpB, 7));
  std::vector<uint8_t> region(4096, 0), src = pattern(1000, 6), buf(4096, 0);
  const uint32_t key = *link.b().register_memory(region.data(), region.size());
  ASSERT_TRUE(link.b().post_recv({1, buf.data(), buf.size()}).ok());
  WriteRequest wr{1, kIpB, key, 0, src.data(), src.size(), DeliveryMode::kUud};
  wr.to.pid_on_fep = 5;
  SendRequest sr{2, kIpB, src.data(), src.size(), DeliveryMode::kUud};
  sr.to.pid_on_fep = 5;
  ASSERT_TRUE(link.a().post_write(wr).ok());
  ASSERT_TRUE(link.a().post_send(sr).ok());
  link.run(kSecond);
  EXPECT_TRUE(std::all_of(region.begin(), region.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(drain(link.b()).empty());
  EXPECT_EQ(link.b().counters().rx_bad_job, 2u);
  EXPECT_EQ(link.b().counters().rx_uud_dropped, 2u);
}

TEST(UetTagged_Config, OutOfRangeFieldsAreNamed) {
  auto refused = [](auto set, const char* field) {
    UetConfig c = config_for(kIpA);
    set(c);
    const absl::Status s = c.validate();
    EXPECT_FALSE(s.ok()) << field;
    EXPECT_NE(std::string(s.message()).find(field), std::string::npos) << s.message();
  };
  refused([](UetConfig& c) { c.job_id = 1u << 24; }, "UetConfig.job_id");
  refused([](UetConfig& c) { c.pid_on_fep = 4096; }, "UetConfig.pid_on_fep");
  refused([](UetConfig& c) { c.job_pid_base = 1; }, "UetConfig.job_pid_base");  // > pid 0
  refused([](UetConfig& c) { c.resource_indexes = 0; }, "UetConfig.resource_indexes");
  refused([](UetConfig& c) { c.resource_indexes = 4097; }, "UetConfig.resource_indexes");
  refused([](UetConfig& c) { c.max_trecvs = 0; }, "UetConfig.max_trecvs");
  refused([](UetConfig& c) { c.max_unexpected = 0; }, "UetConfig.max_unexpected");
  refused([](UetConfig& c) { c.unexpected_bytes = 100; }, "UetConfig.unexpected_bytes");
}

// The address an initiator packs once per operation (address_word, address_words) and the
// word the target compares against: the same bytes 4..11 and `rel` as the accessors write.
TEST(UetTagged_Access, PackedAddressIsWhatTheAccessorsWrite) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t r = rng();
    const SesAddress to{.pid_on_fep = static_cast<uint16_t>(r),
                        .relative = (r >> 16 & 1) != 0,
                        .resource_index = static_cast<uint16_t>(r >> 17),
                        .ri_generation = static_cast<uint8_t>(r >> 33)};
    const auto job = static_cast<uint32_t>(r >> 41);
    wire::SesStandardRequest ses{};
    ses.set_ri_generation(to.ri_generation);
    ses.set_job_id(job);
    ses.set_pid_on_fep(to.pid_on_fep);
    ses.set_resource_index(to.resource_index);
    ses.set_rel(to.relative);
    ASSERT_EQ(internal::address_word(job, to), wire::load_be_n<8>(ses.raw + 4)) << i;
    const std::array<uint64_t, 2> w = internal::address_words(job, to);
    ASSERT_EQ(w[0], wire::load_be_n<8>(ses.raw)) << i;
    ASSERT_EQ(w[1] >> 32, wire::load_be_n<4>(ses.raw + 8)) << i;
    ASSERT_EQ(w[1] & 0xFFFFFFFF, 0u) << i;
  }
}

}  // namespace
}  // namespace uet

