// The RoCEv2 RC engine's two-sided and read verbs on a fake host (tests/common/fake_link.h):
// SEND (with immediate) into the shared receive queue, RDMA WRITE with immediate, RNR NAKs and
// their retries, RDMA READ (responses placed by offset, go-back-N re-issue with an advanced
// RETH, duplicates), max_rd_atomic, and all of them mixed on one QP under loss. Every frame
// either side emits decodes with decode_frame(), ICRC included (the fake link checks).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/roce_pair.h"
#include "tests/common/send_check.h"
#include "transport/rocev2/psn.h"
#include "transport/rocev2/roce_endpoint.h"

namespace uet {
namespace {

using testing::drain;
using testing::FakeLink;
using testing::pattern;
using testing::Sent;
using testing::Verdict;
using wire::RoceOpcode;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kQpA = 0x100, kQpB = 0x105;
constexpr uint32_t kPsnA = 1000, kPsnB = 777000;
constexpr uint32_t kMtu = 4096;

RoceConfig config_for(uint32_t ip) {
  RoceConfig c = testing::roce_config(ip, /*ack_timeout_exp=*/8);  // 1.05 ms
  c.min_rnr_timer = 1;                                             // 10 µs
  return c;
}

// A and B with one connected QP pair; B registers `region` (for writes and reads).
struct Pair : testing::RocePair {
  std::vector<uint8_t> region;
  uint32_t rkey = 0;

  Pair(const RoceConfig& ca, const RoceConfig& cb, size_t region_bytes = 2 << 20)
      : RocePair(ca, cb, {kQpA, kQpB, kPsnA, kPsnB}) {
    region = pattern(region_bytes, 99);
    rkey = *b->register_memory(region.data(), region.size());
  }
  Pair() : Pair(config_for(kIpA), config_for(kIpB)) {}
};

std::vector<Sent> frames(const FakeLink& link, int from, std::initializer_list<RoceOpcode> ops) {
  std::vector<Sent> out;
  for (const Sent& s : link.log()) {
    if (s.from != from || !s.roce) continue;
    for (RoceOpcode op : ops)
      if (s.opcode == static_cast<uint8_t>(op)) out.push_back(s);
  }
  return out;
}

bool is_op(const wire::Decoded& d, RoceOpcode op) {
  return d.bth != nullptr && d.bth->opcode() == op;
}
bool is_read_response(const wire::Decoded& d) {
  return d.bth != nullptr && d.bth->opcode() >= RoceOpcode::kRcReadResponseFirst &&
         d.bth->opcode() <= RoceOpcode::kRcReadResponseOnly;
}

SendRequest send_req(uint64_t id, const std::vector<uint8_t>& msg, bool has_imm = false,
                     uint32_t imm = 0) {
  SendRequest s;
  s.wr_id = id;
  s.peer = kIpB;
  s.local = msg.empty() ? nullptr : msg.data();
  s.length = msg.size();
  s.has_imm = has_imm;
  s.imm = imm;
  return s;
}

// ------------------------------------------------------------------------- SEND

// Expect: each SEND lands in the next posted buffer (FIFO), whole, nothing written past it;
// receive completions follow posting order with the peer, the length and the immediate data;
// the sender completes kSend once ACKed. On the wire: SEND ONLY / FIRST, MIDDLE, LAST, with the
// _WITH_IMMEDIATE variant on the last packet when there is immediate data.
TEST(RoceVerbs_Send, SizesLandInPostedBuffersInPostingOrderWithImmediate) {
  Pair p;
  testing::SendsIntoPostedBuffers sends({0, 1, kMtu, kMtu + 1, 50000});
  ASSERT_NO_FATAL_FAILURE(sends.post(*p.a, kIpB, *p.b));
  p.link->run(kSecond);
  const auto rc = drain(*p.b);
  ASSERT_NO_FATAL_FAILURE(sends.expect_landed(drain(*p.a), rc, kIpA));
  for (const Completion& c : rc) {
    if (!c.has_imm) {
      EXPECT_EQ(c.imm, 0u);  // RoCEv2 reports no stale immediate data
    }
  }
  // 0 B: ONLY_IMM; 1 B: ONLY; 4096: ONLY_IMM; 4097: FIRST + LAST; 50000: FIRST, 11 MIDDLE,
  // LAST_IMM.
  const auto data = frames(*p.link, 0,
                           {RoceOpcode::kRcSendFirst, RoceOpcode::kRcSendMiddle,
                            RoceOpcode::kRcSendLast, RoceOpcode::kRcSendLastImm,
                            RoceOpcode::kRcSendOnly, RoceOpcode::kRcSendOnlyImm});
  const std::vector<RoceOpcode> want = [] {
    std::vector<RoceOpcode> w = {RoceOpcode::kRcSendOnlyImm, RoceOpcode::kRcSendOnly,
                                 RoceOpcode::kRcSendOnlyImm, RoceOpcode::kRcSendFirst,
                                 RoceOpcode::kRcSendLast, RoceOpcode::kRcSendFirst};
    for (int i = 0; i < 11; ++i) w.push_back(RoceOpcode::kRcSendMiddle);
    w.push_back(RoceOpcode::kRcSendLastImm);
    return w;
  }();
  ASSERT_EQ(data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(data[i].opcode, static_cast<uint8_t>(want[i])) << i;
    EXPECT_EQ(data[i].psn, kPsnA + i) << i;
    EXPECT_FALSE(data[i].has_reth);
  }
  EXPECT_EQ(p.b->counters().rx_sends, sends.sizes.size());
  EXPECT_EQ(p.b->counters().rx_rnr, 0u);
  EXPECT_EQ(p.a->counters().tx_retx, 0u);
  EXPECT_EQ(p.b->qp_info(kQpB)->msn, sends.sizes.size());
}

// Expect: the shared receive queue grows (from 8 buffers) while the buffers posted wrap around
// its old storage, and every SEND still lands in the next buffer in posting order, and a
// WRITE with immediate consumes the next one after them.
TEST(RoceVerbs_Send, BuffersKeepTheirPostingOrderAcrossReceiveQueueGrowth) {
  Pair p;
  constexpr size_t kMsgs = 17, kLen = 300;
  std::vector<std::vector<uint8_t>> msgs, bufs;
  for (size_t i = 0; i < kMsgs; ++i) {
    msgs.push_back(pattern(kLen, static_cast<uint32_t>(i + 40)));
    bufs.emplace_back(kLen, 0xEE);
  }
  auto post = [&](size_t i) { return p.b->post_recv({100 + i, bufs[i].data(), kLen}); };
  for (size_t i = 0; i < 8; ++i) ASSERT_TRUE(post(i).ok());
  for (size_t i = 0; i < 8; ++i) ASSERT_TRUE(p.a->post_send(send_req(i, msgs[i])).ok());
  p.link->run(kSecond);
  // Buffers 8..15 take slots 0..7; the ninth grows the queue to 16 (their slots: 8..15).
  for (size_t i = 8; i < kMsgs; ++i) ASSERT_TRUE(post(i).ok());
  std::vector<uint8_t> spare(64, 0xEE);
  ASSERT_TRUE(p.b->post_recv({999, spare.data(), spare.size()}).ok());
  for (size_t i = 8; i < kMsgs; ++i) ASSERT_TRUE(p.a->post_send(send_req(i, msgs[i])).ok());
  WriteRequest wr{50, kIpB, p.rkey, 0, msgs[0].data(), 16};
  ASSERT_TRUE(p.a->post_write_with_imm(wr, 0x1234).ok());
  p.link->run(2 * kSecond);
  EXPECT_EQ(drain(*p.a).size(), kMsgs + 1);
  const auto rc = drain(*p.b);
  ASSERT_EQ(rc.size(), kMsgs + 1);
  for (size_t i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(rc[i].wr_id, 100 + i);
    EXPECT_EQ(rc[i].status, OpStatus::kSuccess);
    EXPECT_EQ(rc[i].bytes, kLen);
    EXPECT_EQ(bufs[i], msgs[i]) << "message " << i;
  }
  EXPECT_EQ(rc[kMsgs].wr_id, 999u);
  EXPECT_TRUE(rc[kMsgs].has_imm);
  EXPECT_EQ(rc[kMsgs].imm, 0x1234u);
  EXPECT_EQ(p.b->counters().rx_rnr, 0u);
}

// Expect (IB local length error): a SEND longer than its buffer completes that buffer with
// kLengthError and the bytes earlier packets placed; the responder NAKs INVALID REQUEST and its
// QP fails; the requester completes kRemoteInvalidRequest and flushes the rest (kFlushed).
TEST(RoceVerbs_Send, LongerThanTheBufferIsALengthErrorAndARemoteInvalidRequest) {
  Pair p;
  const auto msg = pattern(9000, 3);  // 3 packets; the buffer holds one and a bit
  std::vector<uint8_t> mem(8000, 0x11);
  ASSERT_TRUE(p.b->post_recv({1, mem.data(), 5000}).ok());
  ASSERT_TRUE(p.b->post_recv({2, mem.data() + 5000, 3000}).ok());
  ASSERT_TRUE(p.a->post_send(send_req(10, msg)).ok());
  ASSERT_TRUE(p.a->post_send(send_req(11, msg)).ok());
  p.link->run(kSecond);
  const auto sc = drain(*p.a);
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0].status, OpStatus::kRemoteInvalidRequest);
  EXPECT_EQ(sc[1].status, OpStatus::kFlushed);
  const auto rc = drain(*p.b);
  ASSERT_EQ(rc.size(), 1u);  // buffer 2 stays posted
  EXPECT_EQ(rc[0].wr_id, 1u);
  EXPECT_EQ(rc[0].op, Opcode::kRecv);
  EXPECT_EQ(rc[0].status, OpStatus::kLengthError);
  EXPECT_EQ(rc[0].bytes, kMtu);  // the first packet was placed, as on IB
  EXPECT_TRUE(std::equal(msg.begin(), msg.begin() + kMtu, mem.begin()));
  EXPECT_TRUE(std::all_of(mem.begin() + kMtu, mem.end(), [](uint8_t x) { return x == 0x11; }));
  EXPECT_EQ(p.b->counters().rx_length_error, 1u);
  EXPECT_EQ(p.a->counters().rx_nak_fatal, 1u);
  const auto naks = frames(*p.link, 1, {RoceOpcode::kRcAck});
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].aeth_type, 3);
  EXPECT_EQ(naks[0].aeth_value, 1);  // invalid request
  EXPECT_EQ(naks[0].psn, kPsnA + 1);
  EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kError);
  EXPECT_EQ(p.b->qp_info(kQpB)->state, QpState::kError);
}

// ------------------------------------------------------------------ WRITE with immediate

// Expect (IB): RDMA WRITE with immediate places its data like a WRITE (RETH on the first
// packet, the ImmDt on the last: WRITE LAST_WITH_IMMEDIATE / ONLY_WITH_IMMEDIATE) and consumes
// one receive buffer, completing kRecv with the immediate data and 0 bytes; nothing is written
// into the buffer. A zero-length one carries no payload and checks no key.
TEST(RoceVerbs_WriteImm, PlacesDataAndConsumesABufferWithTheImmediate) {
  Pair p;
  const auto src = pattern(10000, 4);
  std::vector<uint8_t> rbuf(64, 0x33), rbuf2(64, 0x44);
  ASSERT_TRUE(p.b->post_recv({7, rbuf.data(), rbuf.size()}).ok());
  ASSERT_TRUE(p.b->post_recv({8, rbuf2.data(), rbuf2.size()}).ok());
  ASSERT_TRUE(p.a->post_write_with_imm({1, kIpB, p.rkey, 100, src.data(), src.size()}, 0xDEADBEEF)
                  .ok());
  ASSERT_TRUE(p.a->post_write_with_imm({2, kIpB, 0, 0, nullptr, 0}, 42).ok());
  p.link->run(kSecond);
  const auto sc = drain(*p.a);
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0].op, Opcode::kWrite);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  EXPECT_EQ(sc[0].bytes, src.size());
  EXPECT_EQ(sc[1].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), p.region.begin() + 100));
  const auto rc = drain(*p.b);
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_EQ(rc[0].wr_id, 7u);
  EXPECT_EQ(rc[0].op, Opcode::kRecv);
  EXPECT_EQ(rc[0].bytes, 0u);
  EXPECT_TRUE(rc[0].has_imm);
  EXPECT_EQ(rc[0].imm, 0xDEADBEEFu);
  EXPECT_EQ(rc[0].peer, kIpA);
  EXPECT_EQ(rc[1].wr_id, 8u);
  EXPECT_EQ(rc[1].imm, 42u);
  EXPECT_TRUE(std::all_of(rbuf.begin(), rbuf.end(), [](uint8_t x) { return x == 0x33; }));
  const auto data = frames(*p.link, 0,
                           {RoceOpcode::kRcWriteFirst, RoceOpcode::kRcWriteMiddle,
                            RoceOpcode::kRcWriteLastImm, RoceOpcode::kRcWriteOnlyImm,
                            RoceOpcode::kRcWriteLast, RoceOpcode::kRcWriteOnly});
  ASSERT_EQ(data.size(), 4u);
  EXPECT_EQ(data[0].opcode, static_cast<uint8_t>(RoceOpcode::kRcWriteFirst));
  EXPECT_EQ(data[1].opcode, static_cast<uint8_t>(RoceOpcode::kRcWriteMiddle));
  EXPECT_EQ(data[2].opcode, static_cast<uint8_t>(RoceOpcode::kRcWriteLastImm));
  EXPECT_FALSE(data[2].has_reth);
  EXPECT_EQ(data[3].opcode, static_cast<uint8_t>(RoceOpcode::kRcWriteOnlyImm));
  EXPECT_TRUE(data[3].has_reth);
  EXPECT_EQ(p.b->counters().rx_write_imm, 2u);
}

// ------------------------------------------------------------------------- RNR

// Expect (IB RNR): a SEND with no receive buffer gets an RNR NAK (AETH type 1, the responder's
// min_rnr_timer code) and is not executed; the requester waits the coded 10 µs and resends from
// that PSN; once a buffer is posted the SEND lands and both sides complete.
TEST(RoceVerbs_Rnr, BufferPostedLaterSucceedsAfterRnrRetries) {
  RoceConfig ca = config_for(kIpA);
  ca.rnr_retry = 6;
  Pair p(ca, config_for(kIpB));
  const auto msg = pattern(6000, 5);
  ASSERT_TRUE(p.a->post_send(send_req(1, msg, true, 9)).ok());
  p.link->run(35 * kMicrosecond);
  EXPECT_TRUE(drain(*p.a).empty());
  std::vector<uint8_t> buf(8192, 0);
  p.link->advance_to(35 * kMicrosecond);
  ASSERT_TRUE(p.b->post_recv({3, buf.data(), buf.size()}).ok());
  p.link->run(kSecond);
  const auto sc = drain(*p.a);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  const auto rc = drain(*p.b);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].bytes, msg.size());
  EXPECT_EQ(rc[0].imm, 9u);
  EXPECT_TRUE(std::equal(msg.begin(), msg.end(), buf.begin()));
  const auto naks = frames(*p.link, 1, {RoceOpcode::kRcAck});
  size_t rnr = 0;
  for (const Sent& s : naks) {
    if (s.aeth_type != 1) continue;
    ++rnr;
    EXPECT_EQ(s.aeth_value, 1);  // min_rnr_timer code 1 = 10 µs
    EXPECT_EQ(s.psn, kPsnA);
  }
  // Sent at 0, NAKed at 4 µs, resent at 14, 28 µs (NAKed at 18, 32 µs), then at 42 µs: 3 RNRs.
  EXPECT_EQ(rnr, 3u);
  EXPECT_EQ(p.a->counters().rx_rnr_naks, 3u);
  EXPECT_EQ(p.a->counters().rnr_retries, 3u);
  EXPECT_EQ(p.b->counters().rx_rnr, 3u);
  EXPECT_EQ(p.b->counters().tx_rnr_naks, 3u);
  EXPECT_EQ(p.b->counters().rx_sends, 1u);
  // The second packet of each round reached B behind the RNR'd first: dropped without a NAK.
  EXPECT_EQ(p.b->counters().rx_out_of_order, 3u);
  EXPECT_EQ(p.b->counters().tx_naks, 3u);
  EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kRts);
}

// Expect: with no buffer ever, the SEND ends kReceiverNotReady after rnr_retry resends
// (rnr_retry + 1 RNR NAKs), the QP enters the error state, the WRs behind it and those posted
// later are flushed (kFlushed).
TEST(RoceVerbs_Rnr, NeverPostedEndsInReceiverNotReadyAndFlushesLaterWrs) {
  RoceConfig ca = config_for(kIpA);
  ca.rnr_retry = 3;
  Pair p(ca, config_for(kIpB));
  const auto msg = pattern(100, 6);
  ASSERT_TRUE(p.a->post_send(send_req(1, msg)).ok());
  ASSERT_TRUE(p.a->post_write({2, kIpB, p.rkey, 0, msg.data(), msg.size()}).ok());
  ASSERT_TRUE(p.a->post_send(send_req(3, msg)).ok());
  p.link->run(kSecond);
  const auto sc = drain(*p.a);
  ASSERT_EQ(sc.size(), 3u);
  EXPECT_EQ(sc[0].wr_id, 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kReceiverNotReady);
  EXPECT_EQ(sc[1].status, OpStatus::kFlushed);
  EXPECT_EQ(sc[2].status, OpStatus::kFlushed);
  EXPECT_EQ(p.a->counters().rx_rnr_naks, 4u);
  EXPECT_EQ(p.a->counters().rnr_retries, 3u);
  EXPECT_EQ(p.a->counters().timeouts, 0u);
  EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kError);
  // B answers at 2 µs, then after each 10 µs wait plus a 4 µs round trip: 2, 16, 30, 44 µs.
  std::vector<Time> rnr_at;
  for (const Sent& s : frames(*p.link, 1, {RoceOpcode::kRcAck}))
    if (s.aeth_type == 1) rnr_at.push_back(s.at);
  EXPECT_EQ(rnr_at, (std::vector<Time>{2 * kMicrosecond, 16 * kMicrosecond, 30 * kMicrosecond,
                                       44 * kMicrosecond}));
  ASSERT_TRUE(p.a->post_send(send_req(4, msg)).ok());
  const auto later = drain(*p.a);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].status, OpStatus::kFlushed);
  EXPECT_EQ(later[0].op, Opcode::kSend);
  EXPECT_TRUE(drain(*p.b).empty());  // nothing received; the write was never executed
  EXPECT_EQ(p.b->counters().rx_placed, 0u);
}

// Expect: a WRITE with immediate that finds no buffer is RNR NAKed at its last packet and
// resent from there; the data is placed once and the immediate delivered once.
TEST(RoceVerbs_Rnr, WriteWithImmediateWaitsForABuffer) {
  Pair p;
  const auto src = pattern(3 * kMtu, 8);
  ASSERT_TRUE(p.a->post_write_with_imm({1, kIpB, p.rkey, 0, src.data(), src.size()}, 77).ok());
  p.link->run(20 * kMicrosecond);
  std::vector<uint8_t> buf(16);
  p.link->advance_to(20 * kMicrosecond);
  ASSERT_TRUE(p.b->post_recv({5, buf.data(), buf.size()}).ok());
  p.link->run(kSecond);
  const auto sc = drain(*p.a);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  const auto rc = drain(*p.b);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].imm, 77u);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), p.region.begin()));
  EXPECT_GE(p.b->counters().rx_rnr, 1u);
  for (const Sent& s : frames(*p.link, 1, {RoceOpcode::kRcAck})) {
    if (s.aeth_type == 1) {
      EXPECT_EQ(s.psn, kPsnA + 2);  // the LAST_WITH_IMMEDIATE
    }
  }
  EXPECT_EQ(p.b->counters().rx_placed, 3u);
  EXPECT_EQ(p.b->counters().rx_write_imm, 1u);
}

// ------------------------------------------------------------------------- READ

// Expect: a READ of 1 B, 4 KiB and 1 MiB lands at ReadRequest::local intact and completes
// kRead; on the wire one READ REQUEST (RETH) per read, and responses ONLY, or FIRST, MIDDLE…,
// LAST, whose PSNs are the request's PSN onwards, one per packet; the next request's PSN
// follows the previous read's last response PSN.
TEST(RoceVerbs_Read, OneByteFourKibAndOneMibArriveIntact) {
  Pair p;
  const std::vector<std::pair<uint64_t, uint64_t>> reads = {{5, 1}, {8192, kMtu}, {0, 1 << 20}};
  std::vector<std::vector<uint8_t>> dst;
  for (size_t i = 0; i < reads.size(); ++i) {
    dst.emplace_back(reads[i].second + 8, 0xEE);
    ASSERT_TRUE(p.a->post_read({i, kIpB, p.rkey, reads[i].first, dst[i].data(), reads[i].second})
                    .ok());
  }
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), reads.size());
  for (size_t i = 0; i < reads.size(); ++i) {
    EXPECT_EQ(c[i].wr_id, i);
    EXPECT_EQ(c[i].op, Opcode::kRead);
    EXPECT_EQ(c[i].status, OpStatus::kSuccess);
    EXPECT_EQ(c[i].bytes, reads[i].second);
    const auto from = p.region.begin() + static_cast<ptrdiff_t>(reads[i].first);
    EXPECT_TRUE(std::equal(from, from + static_cast<ptrdiff_t>(reads[i].second), dst[i].begin()))
        << "read " << i;
    EXPECT_EQ(dst[i][reads[i].second], 0xEE) << "nothing written past the read";
  }
  const auto req = frames(*p.link, 0, {RoceOpcode::kRcReadRequest});
  ASSERT_EQ(req.size(), 3u);
  EXPECT_EQ(req[0].psn, kPsnA);
  EXPECT_EQ(req[1].psn, kPsnA + 1);
  EXPECT_EQ(req[2].psn, kPsnA + 2);
  for (const Sent& s : req) EXPECT_TRUE(s.has_reth);
  const auto resp = frames(*p.link, 1,
                           {RoceOpcode::kRcReadResponseFirst, RoceOpcode::kRcReadResponseMiddle,
                            RoceOpcode::kRcReadResponseLast, RoceOpcode::kRcReadResponseOnly});
  ASSERT_EQ(resp.size(), 1u + 1 + 256);
  for (size_t i = 0; i < resp.size(); ++i) EXPECT_EQ(resp[i].psn, kPsnA + i) << i;
  EXPECT_EQ(resp[0].opcode, static_cast<uint8_t>(RoceOpcode::kRcReadResponseOnly));
  EXPECT_EQ(resp[1].opcode, static_cast<uint8_t>(RoceOpcode::kRcReadResponseOnly));
  EXPECT_EQ(resp[2].opcode, static_cast<uint8_t>(RoceOpcode::kRcReadResponseFirst));
  EXPECT_EQ(resp[3].opcode, static_cast<uint8_t>(RoceOpcode::kRcReadResponseMiddle));
  EXPECT_EQ(resp.back().opcode, static_cast<uint8_t>(RoceOpcode::kRcReadResponseLast));
  EXPECT_EQ(resp.back().msn, 3u);  // AETH on LAST: three messages executed
  EXPECT_EQ(p.a->counters().tx_reads, 3u);
  EXPECT_EQ(p.a->counters().rx_read_responses, 258u);
  EXPECT_EQ(p.b->counters().rx_read_requests, 3u);
  EXPECT_EQ(p.b->counters().tx_read_responses, 258u);
  EXPECT_EQ(p.b->counters().tx_acks, 0u);  // responses are the acknowledgement
  EXPECT_EQ(p.a->qp_info(kQpA)->una, kPsnA + 258);
  EXPECT_EQ(p.b->qp_info(kQpB)->epsn, kPsnA + 258);
}

struct ReadReq {
  uint32_t psn;
  uint64_t va;
  uint32_t dma;
};

// Expect (IB go-back-N for reads): a lost response is noticed by the next one; the requester
// re-issues the READ from the first missing PSN with its RETH advanced by the bytes it has
// (VA + k·MTU, length − k·MTU); the responder answers from that PSN; data intact. A lost last
// response has no successor: the ACK timeout re-issues from it.
TEST(RoceVerbs_Read, LostResponsesAreReissuedFromTheFirstMissingPsn) {
  for (const int lost : {5, 15}) {
    Pair p;
    std::vector<ReadReq> reqs;
    int n = 0;
    p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
      if (from == 0 && is_op(d, RoceOpcode::kRcReadRequest))
        reqs.push_back({d.bth->psn(), d.reth->va(), d.reth->dma_length()});
      if (from == 1 && is_read_response(d) && n++ == lost) return Verdict{0};
      return Verdict{};
    });
    std::vector<uint8_t> dst(16 * kMtu, 0);
    ASSERT_TRUE(p.a->post_read({1, kIpB, p.rkey, 1000, dst.data(), dst.size()}).ok());
    p.link->run(kSecond);
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OpStatus::kSuccess);
    EXPECT_TRUE(std::equal(dst.begin(), dst.end(), p.region.begin() + 1000)) << "lost " << lost;
    ASSERT_EQ(reqs.size(), 2u) << "lost " << lost;
    EXPECT_EQ(reqs[0].psn, kPsnA);
    EXPECT_EQ(reqs[0].va, 1000u);
    EXPECT_EQ(reqs[0].dma, 16 * kMtu);
    EXPECT_EQ(reqs[1].psn, kPsnA + static_cast<uint32_t>(lost));
    EXPECT_EQ(reqs[1].va, 1000u + static_cast<uint64_t>(lost) * kMtu);
    EXPECT_EQ(reqs[1].dma, (16u - static_cast<uint32_t>(lost)) * kMtu);
    EXPECT_EQ(p.a->counters().read_reissues, 1u);
    EXPECT_EQ(p.a->counters().go_back_n, 1u);
    EXPECT_EQ(p.a->counters().timeouts, lost == 15 ? 1u : 0u);
    EXPECT_EQ(p.a->counters().rx_read_responses, 16u);
    EXPECT_EQ(p.b->counters().rx_read_requests, 2u);
    EXPECT_EQ(p.b->counters().tx_read_responses, 16u + 16 - static_cast<uint64_t>(lost));
  }
}

// Expect: every response delivered twice is placed once; the copies are counted as duplicates.
TEST(RoceVerbs_Read, DuplicateResponsesAreDropped) {
  Pair p;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 1 && is_read_response(d)) return Verdict{2, 0, 100 * kNanosecond};
    return Verdict{};
  });
  std::vector<uint8_t> dst(8 * kMtu + 10, 0);
  ASSERT_TRUE(p.a->post_read({1, kIpB, p.rkey, 0, dst.data(), dst.size()}).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(dst.begin(), dst.end(), p.region.begin()));
  EXPECT_EQ(p.a->counters().rx_read_responses, 9u);
  EXPECT_EQ(p.a->counters().rx_read_dup, 9u);
  EXPECT_EQ(p.a->counters().tx_retx, 0u);
}

// Expect: a READ naming a bad key, or a range outside the region, is NAKed REMOTE ACCESS
// ERROR: kRemoteAccessError at the requester, the WRs behind it flushed, nothing read.
TEST(RoceVerbs_Read, BadKeyAndBadRangeAreRemoteAccessErrors) {
  for (const bool bad_key : {true, false}) {
    Pair p;
    std::vector<uint8_t> dst(kMtu, 0);
    const uint32_t key = bad_key ? p.rkey + 5 : p.rkey;
    const uint64_t off = bad_key ? 0 : p.region.size() - 10;
    ASSERT_TRUE(p.a->post_read({1, kIpB, key, off, dst.data(), dst.size()}).ok());
    ASSERT_TRUE(p.a->post_read({2, kIpB, p.rkey, 0, dst.data(), dst.size()}).ok());
    p.link->run(kSecond);
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
    EXPECT_EQ(c[0].op, Opcode::kRead);
    EXPECT_EQ(c[1].status, OpStatus::kFlushed);
    EXPECT_EQ(p.b->counters().rx_bad_rkey, bad_key ? 1u : 0u);
    EXPECT_EQ(p.b->counters().rx_bad_range, bad_key ? 0u : 1u);
    EXPECT_EQ(p.b->counters().tx_read_responses, 0u);
    const auto naks = frames(*p.link, 1, {RoceOpcode::kRcAck});
    ASSERT_EQ(naks.size(), 1u);
    EXPECT_EQ(naks[0].aeth_type, 3);
    EXPECT_EQ(naks[0].aeth_value, 2);
    EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](uint8_t x) { return x == 0; }));
  }
}

// Expect: at most max_rd_atomic READs are outstanding at once; the others (and anything
// behind them) wait for a completion; all complete, in order.
TEST(RoceVerbs_Read, OutstandingReadsAreBoundedByMaxRdAtomic) {
  RoceConfig ca = config_for(kIpA);
  ca.max_rd_atomic = 2;
  Pair p(ca, config_for(kIpB));
  int outstanding = 0, peak = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && is_op(d, RoceOpcode::kRcReadRequest)) peak = std::max(peak, ++outstanding);
    if (from == 1 && is_op(d, RoceOpcode::kRcReadResponseOnly)) --outstanding;
    return Verdict{};
  });
  std::vector<std::vector<uint8_t>> dst(6, std::vector<uint8_t>(100));
  for (size_t i = 0; i < dst.size(); ++i)
    ASSERT_TRUE(p.a->post_read({i, kIpB, p.rkey, i * 100, dst[i].data(), 100}).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), dst.size());
  for (size_t i = 0; i < dst.size(); ++i) {
    EXPECT_EQ(c[i].wr_id, i);
    EXPECT_EQ(c[i].status, OpStatus::kSuccess);
    EXPECT_TRUE(std::equal(dst[i].begin(), dst[i].end(), p.region.begin() + i * 100));
  }
  EXPECT_EQ(peak, 2);
  EXPECT_GT(p.a->counters().read_waits, 0u);
  EXPECT_EQ(p.a->qp_info(kQpA)->reads_outstanding, 0u);
}

// ------------------------------------------------------------------------- mixed

// Expect: WRITEs, READs and SENDs (some with immediate) interleaved on one QP, with 3 % of the
// frames lost in each direction, all complete successfully in posting order (RC), every byte
// where it belongs, every SEND in its buffer in order, and the recovery paths were exercised.
TEST(RoceVerbs_Mixed, WriteReadSendOnOneQpUnderLoss) {
  Pair p;
  std::mt19937 rng(7);
  p.link->set_filter([&](int, const wire::Decoded&, std::vector<uint8_t>&) {
    return Verdict{std::uniform_int_distribution<int>(0, 99)(rng) < 3 ? 0 : 1};
  });
  constexpr int kOps = 60;
  std::vector<std::vector<uint8_t>> src(kOps), dst(kOps), rbuf;
  std::vector<Opcode> kind(kOps);
  std::vector<uint64_t> off(kOps);
  size_t sends = 0;
  for (int i = 0; i < kOps; ++i) {
    const size_t len = 1 + (static_cast<size_t>(i) * 7919) % (5 * kMtu);
    off[i] = static_cast<uint64_t>(i) * 6 * kMtu;
    src[i] = pattern(len, static_cast<uint32_t>(1000 + i));
    kind[i] = i % 3 == 0 ? Opcode::kWrite : i % 3 == 1 ? Opcode::kRead : Opcode::kSend;
    const auto id = static_cast<uint64_t>(i);
    if (kind[i] == Opcode::kWrite) {
      ASSERT_TRUE(p.a->post_write({id, kIpB, p.rkey, off[i], src[i].data(), len}).ok());
    } else if (kind[i] == Opcode::kRead) {
      dst[i].assign(len, 0);
      ASSERT_TRUE(p.a->post_read({id, kIpB, p.rkey, off[i], dst[i].data(), len}).ok());
    } else {
      rbuf.emplace_back(5 * kMtu, 0);
      ASSERT_TRUE(p.b->post_recv({id, rbuf.back().data(), rbuf.back().size()}).ok());
      ASSERT_TRUE(p.a->post_send(send_req(id, src[i], sends % 2 == 0, 5000u + i)).ok());
      ++sends;
    }
  }
  p.link->run(10 * kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), static_cast<size_t>(kOps));
  for (int i = 0; i < kOps; ++i) {
    EXPECT_EQ(c[i].wr_id, static_cast<uint64_t>(i));
    EXPECT_EQ(c[i].op, kind[i]);
    EXPECT_EQ(c[i].status, OpStatus::kSuccess) << i;
    const auto at = p.region.begin() + static_cast<ptrdiff_t>(off[i]);
    if (kind[i] == Opcode::kWrite) {
      EXPECT_TRUE(std::equal(src[i].begin(), src[i].end(), at)) << "write " << i;
    } else if (kind[i] == Opcode::kRead) {
      EXPECT_TRUE(std::equal(dst[i].begin(), dst[i].end(), at)) << "read " << i;
    }
  }
  const auto rc = drain(*p.b);
  ASSERT_EQ(rc.size(), sends);
  size_t r = 0;
  for (int i = 0; i < kOps; ++i) {
    if (kind[i] != Opcode::kSend) continue;
    EXPECT_EQ(rc[r].wr_id, static_cast<uint64_t>(i));
    EXPECT_EQ(rc[r].status, OpStatus::kSuccess);
    EXPECT_EQ(rc[r].bytes, src[i].size());
    EXPECT_EQ(rc[r].has_imm, r % 2 == 0);
    EXPECT_TRUE(std::equal(src[i].begin(), src[i].end(), rbuf[r].begin())) << "send " << i;
    ++r;
  }
  const RoceCounters& ka = p.a->counters();
  const RoceCounters& kb = p.b->counters();
  EXPECT_GT(ka.go_back_n, 0u);
  EXPECT_GT(ka.tx_retx, 0u);
  EXPECT_GT(ka.read_reissues, 0u);
  EXPECT_EQ(kb.rx_sends, sends);
  EXPECT_GE(kb.rx_read_requests, static_cast<uint64_t>(kOps / 3));
  EXPECT_EQ(ka.rx_malformed + kb.rx_malformed, 0u);
  EXPECT_EQ(p.a->qp_info(kQpA)->writes_outstanding, 0u);
  EXPECT_EQ(p.b->qp_info(kQpB)->responses_queued, 0u);
}

}  // namespace
}  // namespace uet
