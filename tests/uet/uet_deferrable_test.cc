// Deferrable sends (spec/uet.md §4.2 DEFERRABLE_SEND, DEFERRABLE_TSEND, DEFERRABLE_RTR;
// transport/uet/uet_deferrable.cc) on the fake link: a target with no receive defers the
// message without its bytes and asks for the restart once one is posted; bytes exact and each
// message completed once on both ends, under loss, duplication and reordering both ways, RUD
// and ROD; tagged matching order across deferred and staged messages; the RTR that overtakes
// the deferral; truncation and a buffer too short; a restart that never comes; bounds and
// refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "tests/common/payload.h"
#include "tests/common/uet_pair.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

using testing::by_wr_id;
using testing::drain;
using testing::pattern;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

UetConfig config_for(uint32_t ip) { return testing::uet_config(ip, /*seed=*/47); }

struct Link : testing::UetLink {
  explicit Link(const UetConfig& a = config_for(kIpA), const UetConfig& b = config_for(kIpB))
      : UetLink(a, b, /*jitter_seed=*/11) {}
};

SendRequest dsend(uint64_t wr_id, const std::vector<uint8_t>& msg,
                  DeliveryMode mode = DeliveryMode::kRud) {
  SendRequest s;
  s.wr_id = wr_id;
  s.peer = kIpB;
  s.local = msg.data();
  s.length = msg.size();
  s.mode = mode;
  s.deferrable = true;
  return s;
}
TaggedSendRequest dtsend(uint64_t wr_id, const std::vector<uint8_t>& msg, uint64_t tag,
                         DeliveryMode mode = DeliveryMode::kRud) {
  TaggedSendRequest ts = testing::tagged_send(wr_id, kIpB, msg, tag, mode);
  ts.deferrable = true;
  return ts;
}
RecvBuffer recv(uint64_t wr_id, std::vector<uint8_t>& buf) {
  return RecvBuffer{wr_id, buf.data(), buf.size()};
}

// The SES opcode of a request frame, or -1.
int opcode_of(const wire::Decoded& d) {
  const auto* ses = d.ses_as<wire::SesStandardRequest>();
  return ses == nullptr ? -1 : static_cast<int>(ses->opcode());
}
constexpr int kRtr = static_cast<int>(wire::SesOpcode::kDeferrableRtr);

// ------------------------------------------------------------------------- deferral

TEST(UetDeferrable_Send, NoBufferDefersWithoutRetriesAndTheRestartFillsTheNextPostedOne) {
  Link link;
  int rtrs = 0;
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from == 1 && opcode_of(d) == kRtr) ++rtrs;
    return 1;
  });
  const std::vector<uint64_t> sizes = {0, 1, 10000, 30000};
  std::vector<std::vector<uint8_t>> msgs, bufs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    msgs.push_back(pattern(sizes[i], static_cast<uint32_t>(i + 1)));
    bufs.emplace_back(sizes[i] + 10, 0xEE);
    SendRequest s = dsend(i, msgs[i]);
    s.has_imm = true;
    s.imm = 0x1000 + static_cast<uint32_t>(i);
    ASSERT_TRUE(link.a().post_send(s).ok());
  }
  link.run(link.now() + 10 * kMillisecond);
  // Deferred, each answered once: no completion, no RNR retry while the target waits.
  EXPECT_TRUE(drain(link.a()).empty());
  EXPECT_EQ(link.b().counters().rx_deferred, sizes.size());
  EXPECT_EQ(link.a().counters().tx_deferred, sizes.size());
  EXPECT_EQ(link.b().counters().rx_rnr, 0u);
  EXPECT_EQ(link.a().counters().rnr_retx, 0u);
  EXPECT_EQ(rtrs, 0);
  for (size_t i = 0; i < sizes.size(); ++i) ASSERT_TRUE(link.b().post_recv(recv(i, bufs[i])).ok());
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(rc.at(i).status, OpStatus::kSuccess);
    EXPECT_EQ(rc.at(i).bytes, sizes[i]);
    EXPECT_TRUE(rc.at(i).has_imm);
    EXPECT_EQ(rc.at(i).imm, 0x1000 + i);
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[i].begin())) << i;
    EXPECT_TRUE(std::all_of(bufs[i].begin() + static_cast<ptrdiff_t>(sizes[i]), bufs[i].end(),
                            [](uint8_t x) { return x == 0xEE; }));
  }
  const auto sc = by_wr_id(drain(link.a()));
  ASSERT_EQ(sc.size(), sizes.size());
  for (const auto& [id, c] : sc) {
    EXPECT_EQ(c.status, OpStatus::kSuccess) << id;
    EXPECT_EQ(c.op, Opcode::kSend);
    EXPECT_EQ(c.bytes, sizes[id]);
  }
  EXPECT_EQ(rtrs, static_cast<int>(sizes.size()));
  EXPECT_EQ(link.b().counters().tx_rtr, sizes.size());
  EXPECT_EQ(link.a().counters().tx_restarts, sizes.size());
  EXPECT_EQ(link.b().counters().rx_restarts, sizes.size());
  EXPECT_EQ(link.a().counters().rx_rtr_stale, 0u);
}

TEST(UetDeferrable_Send, WithABufferPostedItGoesAsASend) {
  Link link;
  const std::vector<uint8_t> msg = pattern(20000, 9);
  std::vector<uint8_t> buf(20000, 0);
  ASSERT_TRUE(link.b().post_recv(recv(1, buf)).ok());
  ASSERT_TRUE(link.a().post_send(dsend(1, msg)).ok());
  link.run(kSecond);
  ASSERT_EQ(drain(link.b()).size(), 1u);
  ASSERT_EQ(drain(link.a()).size(), 1u);
  EXPECT_TRUE(msg == buf);
  EXPECT_EQ(link.b().counters().rx_deferred, 0u);
  EXPECT_EQ(link.b().counters().tx_rtr, 0u);
}

// FI_TAGGED order holds across kinds: a receive takes the first arrived message it matches,
// deferred (no bytes held) or staged; a message a receive waits for is never deferred.
TEST(UetDeferrable_Tagged, ReceivesMatchDeferredAndStagedMessagesInArrivalOrder) {
  Link link;
  const std::vector<uint8_t> d1 = pattern(9000, 1), p2 = pattern(3000, 2), d3 = pattern(5000, 3),
                             d4 = pattern(7000, 4);
  ASSERT_TRUE(link.a().post_tsend(dtsend(1, d1, 0x77)).ok());
  link.run(link.now() + kMillisecond);
  ASSERT_TRUE(link.a().post_tsend(testing::tagged_send(2, kIpB, p2, 0x77)).ok());
  link.run(link.now() + kMillisecond);
  ASSERT_TRUE(link.a().post_tsend(dtsend(3, d3, 0x78)).ok());
  link.run(link.now() + kMillisecond);
  EXPECT_EQ(link.b().counters().rx_deferred, 2u);
  EXPECT_EQ(link.b().counters().rx_tagged_unexpected, 1u);
  std::vector<uint8_t> b1(9000, 0), b2(9000, 0), b3(5000, 0), b4(7000, 0);
  // Wildcard tag: the deferred 0x77 came first, then the staged 0x77, then 0x78.
  ASSERT_TRUE(link.b().post_trecv(testing::tagged_recv(11, b1, 0x70, 0x0F)).ok());
  ASSERT_TRUE(link.b().post_trecv(testing::tagged_recv(12, b2, 0x70, 0x0F)).ok());
  ASSERT_TRUE(link.b().post_trecv(testing::tagged_recv(13, b3, 0x78)).ok());
  // Posted first, so the deferrable send that matches it goes at once.
  ASSERT_TRUE(link.b().post_trecv(testing::tagged_recv(14, b4, 0x79, 0, kIpA)).ok());
  ASSERT_TRUE(link.a().post_tsend(dtsend(4, d4, 0x79)).ok());
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), 4u);
  EXPECT_EQ(rc.at(11).tag, 0x77u);
  EXPECT_EQ(rc.at(11).bytes, d1.size());
  EXPECT_TRUE(std::equal(d1.begin(), d1.end(), b1.begin()));
  EXPECT_EQ(rc.at(12).bytes, p2.size());
  EXPECT_TRUE(std::equal(p2.begin(), p2.end(), b2.begin()));
  EXPECT_EQ(rc.at(13).tag, 0x78u);
  EXPECT_TRUE(d3 == b3);
  EXPECT_TRUE(d4 == b4);
  for (const auto& [id, c] : rc) EXPECT_EQ(c.status, OpStatus::kSuccess) << id;
  const auto sc = by_wr_id(drain(link.a()));
  ASSERT_EQ(sc.size(), 4u);
  for (const auto& [id, c] : sc) EXPECT_EQ(c.status, OpStatus::kSuccess) << id;
  EXPECT_EQ(link.b().counters().rx_deferred, 2u);
  EXPECT_EQ(link.b().counters().rx_restarts, 2u);
}

// The point of deferral: messages far larger than the unexpected list's bytes wait without
// them (a plain tagged send would be NACKed until a receive came).
TEST(UetDeferrable_Tagged, MessagesLargerThanTheUnexpectedBytesWaitWithoutThem) {
  UetConfig b = config_for(kIpB);
  b.unexpected_bytes = b.payload_bytes;
  Link link(config_for(kIpA), b);
  constexpr int kMsgs = 6;
  std::vector<std::vector<uint8_t>> msgs, bufs;
  for (int i = 0; i < kMsgs; ++i) {
    msgs.push_back(pattern(64 * 1024 + static_cast<uint64_t>(i), static_cast<uint32_t>(i + 5)));
    bufs.emplace_back(msgs[i].size(), 0);
    ASSERT_TRUE(link.a().post_tsend(dtsend(i, msgs[i], 500 + i)).ok());
  }
  link.run(link.now() + 20 * kMillisecond);
  EXPECT_EQ(link.b().counters().rx_deferred, static_cast<uint64_t>(kMsgs));
  EXPECT_EQ(link.b().counters().rx_unexpected_full, 0u);
  for (int i = kMsgs - 1; i >= 0; --i) {  // in the reverse order: each finds its own
    ASSERT_TRUE(link.b().post_trecv(testing::tagged_recv(i, bufs[i], 500 + i)).ok());
  }
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), static_cast<size_t>(kMsgs));
  for (int i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(rc.at(i).status, OpStatus::kSuccess);
    EXPECT_TRUE(msgs[i] == bufs[i]) << i;
  }
  EXPECT_EQ(by_wr_id(drain(link.a())).size(), static_cast<size_t>(kMsgs));
}

// ------------------------------------------------------------------------------ faults

TEST(UetDeferrable_Faults, LossDuplicationAndReorderingBothWaysDeliverEachMessageOnce) {
  for (DeliveryMode mode : {DeliveryMode::kRud, DeliveryMode::kRod}) {
    SCOPED_TRACE(mode == DeliveryMode::kRud ? "RUD" : "ROD");
    Link link;
    testing::RandomFaults faults(/*seed=*/29, /*loss_every=*/12, /*dup_every=*/7);
    link.set_jitter(8 * kMicrosecond);
    link.set_filter([&](int, const wire::Decoded&) { return faults(); });  // both ways
    constexpr int kMsgs = 16;
    std::vector<std::vector<uint8_t>> msgs, bufs;
    for (int i = 0; i < kMsgs; ++i) {
      msgs.push_back(pattern(1 + 5000 * static_cast<uint64_t>(i), static_cast<uint32_t>(40 + i)));
      // Untagged messages take the receives in arrival order: each buffer holds the largest.
      bufs.emplace_back(i % 2 == 0 ? msgs[i].size() : 5000 * kMsgs, 0xEE);
    }
    // Even: tagged; odd: untagged. A quarter of the receives before the sends, the rest after.
    auto post_rx = [&](int i) {
      if (i % 2 == 0) {
        ASSERT_TRUE(link.b().post_trecv(testing::tagged_recv(i, bufs[i], i)).ok());
      } else {
        ASSERT_TRUE(link.b().post_recv(recv(i, bufs[i])).ok());
      }
    };
    for (int i = 0; i < kMsgs / 4; ++i) post_rx(i);
    for (int i = 0; i < kMsgs; ++i) {
      if (i % 2 == 0) {
        ASSERT_TRUE(link.a().post_tsend(dtsend(i, msgs[i], i, mode)).ok());
      } else {
        ASSERT_TRUE(link.a().post_send(dsend(i, msgs[i], mode)).ok());
      }
    }
    link.run(link.now() + 2 * kMillisecond);
    for (int i = kMsgs / 4; i < kMsgs; ++i) post_rx(i);
    link.run(kSecond);
    const auto rc = by_wr_id(drain(link.b()));
    ASSERT_EQ(rc.size(), static_cast<size_t>(kMsgs));
    // Untagged receives fill in posting order: each odd message is in some odd buffer of its
    // size; tagged ones in their own.
    for (int i = 0; i < kMsgs; ++i) {
      EXPECT_EQ(rc.at(i).status, OpStatus::kSuccess) << i;
      if (i % 2 == 0) {
        EXPECT_TRUE(msgs[i] == bufs[i]) << "message " << i;
      }
    }
    for (int i = 1; i < kMsgs; i += 2) {
      bool found = false;
      for (int j = 1; j < kMsgs; j += 2) {
        found |= rc.at(j).bytes == msgs[i].size() &&
                 std::equal(msgs[i].begin(), msgs[i].end(), bufs[j].begin());
      }
      EXPECT_TRUE(found) << "message " << i;
    }
    const auto sc = by_wr_id(drain(link.a()));
    ASSERT_EQ(sc.size(), static_cast<size_t>(kMsgs));
    for (const auto& [id, c] : sc) EXPECT_EQ(c.status, OpStatus::kSuccess) << id;
    EXPECT_GT(faults.lost, 0);
    EXPECT_GT(faults.duplicated, 0);
    EXPECT_GT(link.b().counters().rx_deferred, 0u);
    EXPECT_EQ(link.b().counters().rx_restarts, link.a().counters().tx_restarts);
    EXPECT_EQ(link.b().counters().defer_timeouts, 0u);
  }
}

// A receive posted while the deferred message's packets are still arriving: the RTR reaches
// the initiator before the deferral does, and the restart goes when the deferral retires.
TEST(UetDeferrable_Faults, AnRtrThatOvertakesTheDeferralRestartsItWhenItRetires) {
  Link link;
  const std::vector<uint8_t> msg = pattern(200000, 12);
  std::vector<uint8_t> buf(200000, 0);
  // B's frames in sending order: its first RTR, its last NO_MATCH answer.
  int frames = 0, rtr_at = -1, last_no_match = -1;
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from != 1) return 1;
    ++frames;
    if (opcode_of(d) == kRtr && rtr_at < 0) rtr_at = frames;
    const auto* rsp = d.ses_as<wire::SesResponse>();
    if (rsp != nullptr && rsp->return_code() == wire::SesReturnCode::kNoMatch) {
      last_no_match = frames;
    }
    return 1;
  });
  bool posted = false;
  link.set_probe([&] {
    if (!posted && link.b().counters().rx_deferred == 1) {
      posted = true;
      ASSERT_TRUE(link.b().post_recv(recv(1, buf)).ok());
    }
  });
  ASSERT_TRUE(link.a().post_send(dsend(1, msg)).ok());
  link.run(kSecond);
  ASSERT_TRUE(posted);
  ASSERT_GT(rtr_at, 0);
  EXPECT_LT(rtr_at, last_no_match);  // the RTR went while the deferral was still answered
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(msg == buf);
  const auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  EXPECT_EQ(link.a().counters().tx_restarts, 1u);
  EXPECT_EQ(link.a().counters().rx_rtr_stale, 0u);
}

// The restart never arrives (its every frame lost): the reserved receive completes
// kRetriesExhausted after deferral_timeout, the send fails at its PDC's retry limit, and
// nothing is left held.
TEST(UetDeferrable_Faults, ARestartThatNeverComesFailsBothEnds) {
  UetConfig b = config_for(kIpB);
  b.deferral_timeout = 20 * kMillisecond;
  Link link(config_for(kIpA), b);
  bool cut = false;
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from == 1 && opcode_of(d) == kRtr) cut = true;
    return from == 0 && cut ? 0 : 1;  // A is cut off once the RTR goes
  });
  const std::vector<uint8_t> msg = pattern(8000, 13);
  std::vector<uint8_t> buf(8000, 0xEE), buf2(100, 0);
  ASSERT_TRUE(link.a().post_send(dsend(1, msg)).ok());
  link.run(link.now() + kMillisecond);
  ASSERT_TRUE(link.b().post_recv(recv(1, buf)).ok());
  ASSERT_TRUE(link.b().post_recv(recv(2, buf2)).ok());
  link.run(10 * kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), 1u);  // the second buffer waits for a SEND of its own
  EXPECT_EQ(rc.at(1).status, OpStatus::kRetriesExhausted);
  EXPECT_EQ(rc.at(1).bytes, 0u);
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](uint8_t x) { return x == 0xEE; }));
  EXPECT_EQ(link.b().counters().defer_timeouts, 1u);
  const auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_NE(sc[0].status, OpStatus::kSuccess);
}

// The token as it travels (spec/uet.md §4.2, and the golden vectors
// uet_rud_req_std_deferrable_tsend_engine / uet_rud_req_std_deferrable_rtr): in buffer_offset
// with the initiator's PID in `initiator`; back in the RTR's match_bits, addressed to that PID;
// again in the restart's buffer_offset, under a new message ID.
TEST(UetDeferrable_Wire, TheTokenGoesInBufferOffsetAndComesBackInTheRtrsMatchBits) {
  UetConfig a = config_for(kIpA);
  a.pid_on_fep = 5;  // B keeps PID 0, as in the vectors
  Link link(a);
  std::vector<wire::SesStandardRequest> sends, rtrs;
  int no_match = 0;
  link.set_filter([&](int from, const wire::Decoded& d) {
    const auto* ses = d.ses_as<wire::SesStandardRequest>();
    if (from == 0 && ses != nullptr &&
        ses->opcode() == wire::SesOpcode::kDeferrableTsend) {
      sends.push_back(*ses);
    }
    if (from == 1 && ses != nullptr && ses->opcode() == wire::SesOpcode::kDeferrableRtr) {
      rtrs.push_back(*ses);
    }
    const auto* rsp = d.ses_as<wire::SesResponse>();
    if (from == 1 && rsp != nullptr && rsp->return_code() == wire::SesReturnCode::kNoMatch) {
      ++no_match;
    }
    return 1;
  });
  const std::vector<uint8_t> msg = pattern(200, 19);
  ASSERT_TRUE(link.a().post_tsend(dtsend(1, msg, 0x1B3)).ok());
  link.run(link.now() + kMillisecond);
  std::vector<uint8_t> buf(200, 0);
  ASSERT_TRUE(link.b().post_trecv(testing::tagged_recv(1, buf, 0x1B3)).ok());
  link.run(kSecond);
  ASSERT_EQ(sends.size(), 2u);
  ASSERT_EQ(rtrs.size(), 1u);
  EXPECT_EQ(no_match, 1);
  EXPECT_EQ(sends[0].buffer_offset(), 0x10000u);  // generation 1, slot 0
  EXPECT_EQ(sends[0].initiator(), 5u);
  EXPECT_EQ(sends[0].match_bits(), 0x1B3u);
  EXPECT_EQ(rtrs[0].match_bits(), 0x10000u);
  EXPECT_EQ(rtrs[0].pid_on_fep(), 5u);
  EXPECT_EQ(rtrs[0].request_length(), 0u);
  EXPECT_EQ(sends[1].buffer_offset(), 0x10000u);
  EXPECT_NE(sends[1].message_id(), sends[0].message_id());
  EXPECT_TRUE(msg == buf);
}

// ---------------------------------------------------------------- short buffers, bounds

TEST(UetDeferrable_Buffers, ARestartLongerThanItsReceiveTruncatesTaggedAndFailsUntagged) {
  Link link;
  const std::vector<uint8_t> msg = pattern(12000, 14);
  ASSERT_TRUE(link.a().post_tsend(dtsend(1, msg, 5)).ok());
  ASSERT_TRUE(link.a().post_send(dsend(2, msg)).ok());
  link.run(link.now() + kMillisecond);
  std::vector<uint8_t> tb(5000, 0), ub(5000, 0xEE);
  ASSERT_TRUE(link.b().post_trecv(testing::tagged_recv(1, tb, 5)).ok());
  ASSERT_TRUE(link.b().post_recv(recv(2, ub)).ok());
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_EQ(rc.at(1).status, OpStatus::kTruncated);
  EXPECT_EQ(rc.at(1).bytes, tb.size());
  EXPECT_TRUE(std::equal(tb.begin(), tb.end(), msg.begin()));
  EXPECT_EQ(rc.at(2).status, OpStatus::kLengthError);
  EXPECT_TRUE(std::all_of(ub.begin(), ub.end(), [](uint8_t x) { return x == 0xEE; }));
  const auto sc = by_wr_id(drain(link.a()));
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc.at(1).status, OpStatus::kSuccess);
  EXPECT_EQ(sc.at(2).status, OpStatus::kLengthError);
}

// A full deferred list: the messages past it go as their plain sends would (staged, or
// NACKed and retried), and every one arrives once the receives come.
TEST(UetDeferrable_Bounds, PastAFullListMessagesGoAsPlainSends) {
  UetConfig b = config_for(kIpB);
  b.max_unexpected = 2;
  Link link(config_for(kIpA), b);
  constexpr int kMsgs = 5;
  std::vector<std::vector<uint8_t>> msgs, bufs;
  for (int i = 0; i < kMsgs; ++i) {
    msgs.push_back(pattern(3000, static_cast<uint32_t>(60 + i)));
    bufs.emplace_back(3000, 0);
    ASSERT_TRUE(link.a().post_tsend(dtsend(i, msgs[i], i)).ok());
  }
  // The receives come once the list is full and a message past it was NACKed (before its
  // retries run out: rnr_retries).
  bool posted = false;
  link.set_probe([&] {
    if (posted || link.b().counters().rx_unexpected_full == 0) return;
    posted = true;
    EXPECT_EQ(link.b().counters().rx_deferred, 2u);
    for (int i = 0; i < kMsgs; ++i) {
      ASSERT_TRUE(link.b().post_trecv(testing::tagged_recv(i, bufs[i], i)).ok());
    }
  });
  link.run(kSecond);
  const auto rc = by_wr_id(drain(link.b()));
  ASSERT_EQ(rc.size(), static_cast<size_t>(kMsgs));
  for (int i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(rc.at(i).status, OpStatus::kSuccess) << i;
    EXPECT_TRUE(msgs[i] == bufs[i]) << i;
  }
  const auto sc = by_wr_id(drain(link.a()));
  ASSERT_EQ(sc.size(), static_cast<size_t>(kMsgs));
  for (const auto& [id, c] : sc) EXPECT_EQ(c.status, OpStatus::kSuccess) << id;
}

TEST(UetDeferrable_Bounds, SendsPastDeferrableSendsAreRefusedUntilOneCompletes) {
  UetConfig a = config_for(kIpA);
  a.deferrable_sends = 2;
  Link link(a);
  const std::vector<uint8_t> msg = pattern(100, 15);
  ASSERT_TRUE(link.a().post_send(dsend(1, msg)).ok());
  ASSERT_TRUE(link.a().post_send(dsend(2, msg)).ok());
  const absl::Status full = link.a().post_send(dsend(3, msg));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("deferrable_sends"), std::string::npos);
  std::vector<uint8_t> buf(100, 0);
  ASSERT_TRUE(link.b().post_recv(recv(1, buf)).ok());
  link.run(link.now() + 10 * kMillisecond);
  ASSERT_EQ(drain(link.a()).size(), 1u);
  EXPECT_TRUE(link.a().post_send(dsend(3, msg)).ok());
}

TEST(UetDeferrable_Refused, ModesWithoutAPdcAndRocev2RefuseItByName) {
  Link link;
  const std::vector<uint8_t> msg = pattern(100, 16);
  for (DeliveryMode mode : {DeliveryMode::kRudi, DeliveryMode::kUud}) {
    const absl::Status s = link.a().post_send(dsend(1, msg, mode));
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(s.message().find("deferrable"), std::string::npos) << s.message();
  }
  auto roce = RoceEndpoint::create(testing::host_config<RoceConfig>(kIpA));
  ASSERT_TRUE(roce.ok());
  SendRequest s = dsend(1, msg);
  const absl::Status r = (*roce)->post_send(s);
  EXPECT_EQ(r.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(r.message().find("deferrable"), std::string::npos);
}

TEST(UetDeferrable_Config, OutOfRangeFieldsAreNamed) {
  UetConfig c = config_for(kIpA);
  c.deferrable_sends = 0;
  testing::expect_refused(c, "deferrable_sends");
  c.deferrable_sends = 65536;
  testing::expect_refused(c, "deferrable_sends");
  c = config_for(kIpA);
  c.deferral_timeout = 0;
  testing::expect_refused(c, "deferral_timeout");
}

}  // namespace
}  // namespace uet
