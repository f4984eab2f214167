// Hostile peers against the RoCEv2 RC engine: forged frames built byte by byte (FrameBuilder,
// the RoCEv2 header accessors), each dropped, or answered as IB RC says (transport/rocev2/NOTES.md
// §2: one NAK per PSN gap, duplicates re-ACKed and never
// executed again, NAK codes 1-4 fatal), counted in RoceCounters, and never growing anything:
// QPs, completions and answers stay bounded whatever arrives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/roce_forge.h"
#include "tests/common/roce_pair.h"
#include "tests/common/rss.h"
#include "transport/rocev2/psn.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/wire/builder.h"
#include "transport/wire/decode.h"
#include "transport/wire/roce_headers.h"

namespace uet {
namespace {

using wire::AethNak;
using wire::AethType;
using wire::RoceOpcode;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002, kIpStranger = 0x0A000009;
constexpr uint32_t kQpA = 0x100, kQpB = 0x105;
constexpr uint32_t kPsnA = 1000, kPsnB = 777000;  // A's first PSN (B expects it), and B's
constexpr uint32_t kMtu = 4096;

// Forged frames go from A to B's QP at A's first PSN unless a test says otherwise.
struct Forged : testing::RoceForged {
  Forged() {
    dest_qp = kQpB;
    psn = kPsnA;
    src = kIpA;
    dst = kIpB;
  }
  Forged(RoceOpcode o, uint32_t p) : Forged() {
    op = o;
    psn = p;
  }
};

using testing::forge;

// A request asking for an ACK whose RETH names `len` bytes at offset `va` of region `rkey`.
Forged with_reth(RoceOpcode op, uint32_t psn, uint32_t rkey, uint64_t va, uint32_t len) {
  Forged f(op, psn);
  f.ack_req = true;
  f.va = va;
  f.rkey = rkey;
  f.dma_length = len;
  return f;
}

// A WRITE ONLY of `len` bytes of `fill` at offset `va` of region `rkey`.
Forged write_only(uint32_t psn, uint32_t rkey, uint64_t va, uint32_t len, uint8_t fill = 0xAB) {
  Forged f = with_reth(RoceOpcode::kRcWriteOnly, psn, rkey, va, len);
  f.payload.assign(len, fill);
  return f;
}

// A frame from B to A's QP.
Forged to_a(RoceOpcode op, uint32_t psn) {
  Forged f(op, psn);
  f.dest_qp = kQpA;
  f.src = kIpB;
  f.dst = kIpA;
  return f;
}

// An ACK or NAK from B to A's QP.
Forged aeth_to_a(AethType type, uint8_t value, uint32_t psn) {
  Forged f = to_a(RoceOpcode::kRcAck, psn);
  f.aeth_type = type;
  f.aeth_value = value;
  return f;
}

Forged send_only(uint32_t psn, uint32_t len, RoceOpcode op = RoceOpcode::kRcSendOnly) {
  Forged f(op, psn);
  f.payload.assign(len, 0x3C);
  f.ack_req = true;
  return f;
}

Forged read_request(uint32_t psn, uint32_t rkey, uint64_t va, uint32_t len) {
  return with_reth(RoceOpcode::kRcReadRequest, psn, rkey, va, len);
}

using testing::deliver;

// What an endpoint sends now, decoded (at most `max` frames: the engine must stop by itself).
struct Out {
  RoceOpcode op;
  uint32_t psn = 0, dest_qp = 0;
  AethType aeth_type = AethType::kAck;
  uint8_t aeth_value = 0;
};
std::vector<Out> drain(RoceEndpoint& ep, Time now = 0, size_t max = 10000) {
  std::vector<Out> out;
  std::vector<uint8_t> buf(9216);
  for (size_t i = 0; i < max; ++i) {
    wire::Decoded d;
    const uint32_t len = testing::take_decoded(ep, buf, now, &d);
    if (len == 0) break;
    Out o{d.bth->opcode(), d.bth->psn(), d.bth->dest_qp()};
    if (d.aeth != nullptr) {
      o.aeth_type = d.aeth->syndrome_type();
      o.aeth_value = d.aeth->syndrome_value();
    }
    out.push_back(o);
  }
  return out;
}

using testing::rss_kib;

RoceConfig config_for(uint32_t ip, uint8_t retry_cnt = 7) {
  RoceConfig c = testing::roce_config(ip, /*ack_timeout_exp=*/8);
  c.mtu = kMtu;
  c.retry_cnt = retry_cnt;
  return c;
}

// A and B with one connected QP pair; B has registered a region (all zero). Most tests hand
// frames over themselves (deliver, drain) and leave the pair's link idle.
struct Peers : testing::RocePair {
  std::vector<uint8_t> region = std::vector<uint8_t>(64 * 1024, 0);
  uint32_t rkey = 0;
  std::vector<uint8_t> src = std::vector<uint8_t>(64 * 1024, 0x5C);

  explicit Peers(uint8_t retry_cnt = 7, uint32_t psn_a = kPsnA, uint32_t psn_b = kPsnB)
      : RocePair(config_for(kIpA, retry_cnt), config_for(kIpB, retry_cnt),
                 {kQpA, kQpB, psn_a, psn_b}) {
    rkey = *b->register_memory(region.data(), region.size());
  }
  bool region_untouched() const {
    return std::all_of(region.begin(), region.end(), [](uint8_t x) { return x == 0; });
  }
  QpInfo qa() const { return *a->qp_info(kQpA); }
  QpInfo qb() const { return *b->qp_info(kQpB); }
  // A posts a write of `packets` full packets and sends them all; nothing is delivered.
  void a_sends(uint32_t packets) {
    ASSERT_TRUE(a->post_write({42, kIpB, rkey, 0, src.data(), uint64_t{packets} * kMtu}).ok());
    const auto sent = drain(*a);
    ASSERT_EQ(sent.size(), packets);
  }
  size_t completions_at_a() {
    std::vector<Completion> c(64);
    return a->poll_completions(c);
  }
};

// ------------------------------------------------------------------------- forged PSNs

// Expect (§2.1, rxe check_psn): a PSN ahead of the expected one is a sequence error: one NAK
// carrying the expected PSN, then silence until the expected PSN comes; nothing placed.
TEST(RoceHostile_Psn, FarAheadGetsOneNakAndIsNeverPlaced) {
  Peers p;
  for (uint32_t ahead : {1u, 1000u, 0x7FFFFFu}) {  // 0x7FFFFF: the far edge of "ahead"
    deliver(*p.b, forge(write_only(roce::psn_add(kPsnA, ahead), p.rkey, 0, 64)));
  }
  EXPECT_EQ(p.b->counters().rx_out_of_order, 3u);
  const auto out = drain(*p.b);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op, RoceOpcode::kRcAck);
  EXPECT_EQ(out[0].aeth_type, AethType::kNak);
  EXPECT_EQ(out[0].aeth_value, static_cast<uint8_t>(AethNak::kPsnSeqError));
  EXPECT_EQ(out[0].psn, kPsnA);
  EXPECT_EQ(out[0].dest_qp, kQpA);
  // More of the same: still no second NAK for the same gap.
  for (int i = 0; i < 100; ++i) deliver(*p.b, forge(write_only(kPsnA + 5, p.rkey, 0, 64)));
  EXPECT_TRUE(drain(*p.b).empty());
  EXPECT_TRUE(p.region_untouched());
  EXPECT_EQ(p.qb().epsn, kPsnA);
  EXPECT_EQ(p.qb().state, QpState::kRts);
  // The expected PSN is still accepted.
  deliver(*p.b, forge(write_only(kPsnA, p.rkey, 0, 64)));
  EXPECT_EQ(p.b->counters().rx_placed, 1u);
  EXPECT_EQ(p.qb().epsn, kPsnA + 1);
}

// Expect (§2.1): a PSN behind the expected one is a duplicate: ACKed again with the last
// in-order PSN, never executed again (the bytes are not placed).
TEST(RoceHostile_Psn, BehindIsADuplicateReAckedAndNeverPlaced) {
  Peers p;
  deliver(*p.b, forge(write_only(kPsnA, p.rkey, 0, 64, 0x11)));
  ASSERT_EQ(p.b->counters().rx_placed, 1u);
  drain(*p.b);
  for (uint32_t behind : {1u, 2u, 500u, 0x800000u}) {  // 0x800000: the far edge of "behind"
    deliver(*p.b,
            forge(write_only(roce::psn_add(kPsnA + 1, 0x1000000u - behind), p.rkey, 0, 64, 0x99)));
  }
  EXPECT_EQ(p.b->counters().rx_duplicates, 4u);
  EXPECT_EQ(p.b->counters().rx_placed, 1u);
  EXPECT_TRUE(
      std::all_of(p.region.begin(), p.region.begin() + 64, [](uint8_t x) { return x == 0x11; }));
  const auto out = drain(*p.b);
  ASSERT_EQ(out.size(), 1u);  // one coalesced ACK for four duplicates
  EXPECT_EQ(out[0].aeth_type, AethType::kAck);
  EXPECT_EQ(out[0].psn, kPsnA);
  EXPECT_EQ(p.qb().epsn, kPsnA + 1);
}

// Expect: PSN order is modulo 2^24 (rxe psn_compare): across the wrap, 0x000000 follows
// 0xFFFFFF, a forged 0x000002 is ahead (NAK) and 0xFFFFF0 behind (duplicate).
TEST(RoceHostile_Psn, WrappedPsnsAreOrderedModulo2To24) {
  Peers p(7, /*psn_a=*/0xFFFFFE);
  deliver(*p.b, forge(write_only(0x000002, p.rkey, 0, 8)));  // ahead by 4
  EXPECT_EQ(p.b->counters().rx_out_of_order, 1u);
  ASSERT_EQ(drain(*p.b).size(), 1u);                         // the NAK for 0xFFFFFE
  deliver(*p.b, forge(write_only(0xFFFFF0, p.rkey, 0, 8)));  // behind by 14
  EXPECT_EQ(p.b->counters().rx_duplicates, 1u);
  for (uint32_t psn : {0xFFFFFEu, 0xFFFFFFu, 0x000000u}) {
    deliver(*p.b, forge(write_only(psn, p.rkey, 8 * (psn & 3), 8, static_cast<uint8_t>(psn))));
  }
  EXPECT_EQ(p.b->counters().rx_placed, 3u);
  EXPECT_EQ(p.qb().epsn, 0x000001u);
  EXPECT_EQ(p.qb().msn, 3u);
}

// ------------------------------------------------------------------------- unknown QPs

// Expect: a frame for a QP that is not connected, or from anyone but the QP's peer, or not
// to our address, is dropped silently (no NAK: the sender is not known to be a peer).
TEST(RoceHostile_Qp, UnknownDestinationQpsAndStrangersAreDroppedSilently) {
  Peers p;
  const RoceConfig& c = p.b->config();
  for (uint32_t qp : {0u, 1u, c.qpn_base - 1, c.qpn_base + 7, c.qpn_base + c.max_qps, 0xFFFFFFu}) {
    Forged f = write_only(kPsnA, p.rkey, 0, 64);
    f.dest_qp = qp;
    deliver(*p.b, forge(f));
  }
  Forged stranger = write_only(kPsnA, p.rkey, 0, 64);
  stranger.src = kIpStranger;  // right QP, wrong peer
  deliver(*p.b, forge(stranger));
  EXPECT_EQ(p.b->counters().rx_unknown_qp, 7u);
  Forged elsewhere = write_only(kPsnA, p.rkey, 0, 64);
  elsewhere.dst = kIpStranger;  // not for us at all
  deliver(*p.b, forge(elsewhere));
  EXPECT_EQ(p.b->counters().rx_not_ours, 1u);
  EXPECT_TRUE(drain(*p.b).empty());
  EXPECT_TRUE(p.region_untouched());
  EXPECT_EQ(p.qb().epsn, kPsnA);
  // No QP came into being.
  for (uint32_t q = 0; q < c.max_qps; ++q) {
    if (c.qpn_base + q == kQpB) continue;
    EXPECT_EQ(p.b->qp_info(c.qpn_base + q)->state, QpState::kReset) << q;
  }
}

// Every field of two QpInfos.
void expect_same_info(const QpInfo& x, const QpInfo& y) {
  EXPECT_EQ(x.state, y.state);
  EXPECT_EQ(x.peer_ip4, y.peer_ip4);
  EXPECT_EQ(x.remote_qpn, y.remote_qpn);
  EXPECT_EQ(x.udp_sport, y.udp_sport);
  EXPECT_EQ(x.next_psn, y.next_psn);
  EXPECT_EQ(x.max_psn, y.max_psn);
  EXPECT_EQ(x.una, y.una);
  EXPECT_EQ(x.epsn, y.epsn);
  EXPECT_EQ(x.msn, y.msn);
  EXPECT_EQ(x.writes_outstanding, y.writes_outstanding);
  EXPECT_EQ(x.reads_outstanding, y.reads_outstanding);
  EXPECT_EQ(x.responses_queued, y.responses_queued);
  EXPECT_EQ(x.rate_gbps, y.rate_gbps);
  EXPECT_EQ(x.alpha, y.alpha);
}

// Expect: QPs are allocated in chunks as they are connected; a QPN in range whose chunk was
// never allocated is a reset QP: every kind of frame for it is dropped and counted exactly as
// for a reset QP of an allocated chunk (byte-identical counters, nothing sent), qp_info
// answers the same, and nothing is allocated by the frames.
TEST(RoceHostile_Qp, NeverAllocatedQpnsAreTreatedAsResetOnes) {
  static_assert(std::has_unique_object_representations_v<RoceCounters>, "compared bytewise");
  Peers allocated, unallocated;
  const RoceConfig& c = allocated.b->config();
  const uint32_t in_chunk = kQpB + 2;                                     // kQpB's chunk, reset
  const uint32_t no_chunk = c.qpn_base + 2 * RoceEndpoint::kQpChunk + 3;  // chunk never used
  ASSERT_LT(no_chunk, c.qpn_base + c.max_qps);
  ASSERT_EQ(unallocated.b->qps_allocated(), RoceEndpoint::kQpChunk);
  const size_t footprint = unallocated.b->footprint();
  Forged cnp;
  cnp.op = RoceOpcode::kCnp;
  cnp.psn = 0;
  Forged response = write_only(kPsnB, 0, 0, 64);
  response.op = RoceOpcode::kRcReadResponseOnly;
  Forged ack = aeth_to_a(AethType::kNak, static_cast<uint8_t>(AethNak::kPsnSeqError), kPsnB);
  ack.src = kIpA;
  ack.dst = kIpB;
  Forged atomic = write_only(kPsnA, allocated.rkey, 0, 64);
  atomic.op = RoceOpcode::kRcFetchAdd;
  const std::vector<Forged> frames = {write_only(kPsnA, allocated.rkey, 0, 64),
                                      send_only(kPsnA, 64),
                                      read_request(kPsnA, allocated.rkey, 0, 4096),
                                      ack,
                                      response,
                                      cnp,
                                      atomic};
  for (Forged f : frames) {
    f.dest_qp = in_chunk;
    deliver(*allocated.b, forge(f));
    f.dest_qp = no_chunk;
    deliver(*unallocated.b, forge(f));
  }
  EXPECT_EQ(unallocated.b->counters().rx_unknown_qp, frames.size());
  const RoceCounters in = allocated.b->counters(), out = unallocated.b->counters();
  EXPECT_EQ(std::memcmp(&in, &out, sizeof(RoceCounters)), 0);
  EXPECT_TRUE(drain(*allocated.b).empty());
  EXPECT_TRUE(drain(*unallocated.b).empty());
  expect_same_info(*allocated.b->qp_info(in_chunk), *unallocated.b->qp_info(no_chunk));
  EXPECT_EQ(unallocated.b->qp_info(no_chunk)->state, QpState::kReset);
  EXPECT_EQ(unallocated.b->qp_info(c.qpn_base + c.max_qps).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(unallocated.b->qps_allocated(), RoceEndpoint::kQpChunk);
  EXPECT_EQ(unallocated.b->footprint(), footprint);
  EXPECT_TRUE(unallocated.region_untouched());
}

// ------------------------------------------------------------------ ACKs and NAKs never due

// Expect: an ACK or NAK must name a PSN the requester sent and that is not acknowledged yet
// (ACK: una - 1 .. max_psn - 1; NAK: una .. max_psn - 1); anything else is ignored (counted
// rx_stale_acks): no completion, no go-back-N, no state change.
TEST(RoceHostile_Ack, AcksAndNaksForPsnsNeverSentAreIgnored) {
  Peers p;
  // Nothing outstanding at all.
  deliver(*p.a, forge(aeth_to_a(AethType::kAck, 0x1F, kPsnA)));
  deliver(*p.a, forge(aeth_to_a(AethType::kNak, 0, kPsnA)));
  EXPECT_EQ(p.a->counters().rx_stale_acks, 2u);
  // Eight packets outstanding: kPsnA .. kPsnA + 7.
  p.a_sends(8);
  const uint32_t stale[][2] = {
      {0, kPsnA + 8},        // ACK beyond the last PSN sent
      {0, kPsnA + 0x10000},  // far beyond
      {0, kPsnA - 2},        // ACK behind una - 1
      {3, kPsnA + 8},        // NAK beyond
      {3, kPsnA - 1},        // NAK behind una
  };
  for (const auto& s : stale) {
    deliver(*p.a, forge(aeth_to_a(static_cast<AethType>(s[0]), 0, s[1])));
  }
  EXPECT_EQ(p.a->counters().rx_stale_acks, 2u + 5u);
  EXPECT_EQ(p.a->counters().rx_acks, 0u);
  EXPECT_EQ(p.a->counters().go_back_n, 0u);
  EXPECT_EQ(p.completions_at_a(), 0u);
  EXPECT_EQ(p.qa().una, kPsnA);
  EXPECT_EQ(p.qa().next_psn, kPsnA + 8);
  EXPECT_EQ(p.qa().state, QpState::kRts);
  EXPECT_TRUE(drain(*p.a).empty());  // nothing resent
  // The genuine ACK still completes the write.
  deliver(*p.a, forge(aeth_to_a(AethType::kAck, 0x1F, kPsnA + 7)));
  EXPECT_EQ(p.completions_at_a(), 1u);
}

// Expect (§1.5): AETH syndrome type 2 is reserved: ignored. An RNR NAK acknowledges the PSNs
// before it and holds everything for its timer (code 14: 1.28 ms), then resends from its PSN;
// a copy of it restarts nothing. A NAK with a reserved code (5..31) ends the write as rxe does
// with any NAK it does not know (IB_WC_REM_OP_ERR, here kPdcClosed) and the QP fails.
TEST(RoceHostile_Ack, ReservedSyndromesAndUnknownNakCodes) {
  Peers p;
  p.a_sends(4);
  deliver(*p.a, forge(aeth_to_a(AethType::kReservedType, 0, kPsnA + 1)));
  EXPECT_EQ(p.a->counters().rx_stale_acks, 1u);
  deliver(*p.a, forge(aeth_to_a(AethType::kRnrNak, 14, kPsnA + 1)));
  deliver(*p.a, forge(aeth_to_a(AethType::kRnrNak, 14, kPsnA + 1)));  // a copy
  EXPECT_EQ(p.a->counters().rx_rnr_naks, 2u);
  EXPECT_EQ(p.a->counters().rx_rnr_ignored, 1u);
  EXPECT_EQ(p.qa().state, QpState::kRts);
  EXPECT_EQ(p.qa().una, kPsnA + 1);
  EXPECT_EQ(p.completions_at_a(), 0u);
  EXPECT_TRUE(drain(*p.a, 1279 * kMicrosecond).empty());  // the timer runs
  const auto resent = drain(*p.a, 1280 * kMicrosecond);
  ASSERT_EQ(resent.size(), 3u);
  EXPECT_EQ(resent[0].psn, kPsnA + 1);
  EXPECT_EQ(p.a->counters().rnr_retries, 1u);
  deliver(*p.a, forge(aeth_to_a(AethType::kNak, 0x1D, kPsnA + 1)));
  EXPECT_EQ(p.a->counters().rx_nak_fatal, 1u);
  EXPECT_EQ(p.qa().state, QpState::kError);
  std::vector<Completion> c(4);
  c.resize(p.a->poll_completions(c));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kPdcClosed);
  // In the error state everything is dropped and counted.
  deliver(*p.a, forge(aeth_to_a(AethType::kAck, 0x1F, kPsnA + 3)));
  EXPECT_EQ(p.a->counters().rx_qp_error, 1u);
  EXPECT_TRUE(drain(*p.a).empty());
}

// ----------------------------------------------------- NAKs during a go-back-N (the soak's)

// Expect (rxe started_retry): a NAK sequence error while a go-back-N is under way starts no
// other round and consumes no retry: a duplicated NAK (the fabric copied it) or NAKs for
// packets of an older round (reordered by a path change) would otherwise exhaust retry_cnt
// while the responder is making progress. Found by tests/soak (retries exhausted on a live
// QP); with retry_cnt 1 the second NAK used to fail the QP.
TEST(RoceHostile_Nak, DuplicateNaksDuringAGoBackNStartNothingAndConsumeNoRetry) {
  Peers p(/*retry_cnt=*/1);
  p.a_sends(8);
  const Forged nak = aeth_to_a(AethType::kNak, 0, kPsnA + 2);
  deliver(*p.a, forge(nak));  // starts a go-back-N from kPsnA + 2 (one retry used)
  deliver(*p.a, forge(nak));  // its duplicates: the round under way already resends kPsnA + 2
  deliver(*p.a, forge(nak));
  EXPECT_EQ(p.a->counters().rx_nak_seq, 3u);
  EXPECT_EQ(p.a->counters().rx_nak_seq_ignored, 2u);
  EXPECT_EQ(p.a->counters().go_back_n, 1u);
  EXPECT_EQ(p.qa().state, QpState::kRts);
  // Progress, then another gap: each NAK naming a newer PSN acknowledges what came before it,
  // restores the retry budget and starts a new round from its PSN (a loss inside the round).
  for (uint32_t k = 3; k < 6; ++k) {
    deliver(*p.a, forge(aeth_to_a(AethType::kNak, 0, kPsnA + k)));
  }
  EXPECT_EQ(p.a->counters().go_back_n, 4u);
  EXPECT_EQ(p.a->counters().rx_nak_seq_ignored, 2u);
  EXPECT_EQ(p.qa().state, QpState::kRts) << "progress restored the retry budget each time";
  EXPECT_EQ(p.qa().una, kPsnA + 5);
  // The last round resends from kPsnA + 5 (the cursor never goes behind una).
  const auto resent = drain(*p.a);
  ASSERT_EQ(resent.size(), 3u);
  EXPECT_EQ(resent[0].psn, kPsnA + 5);
  // Its duplicate is ignored; an ACK ends the round and the next NAK starts a new one.
  deliver(*p.a, forge(aeth_to_a(AethType::kNak, 0, kPsnA + 5)));
  EXPECT_EQ(p.a->counters().go_back_n, 4u);
  deliver(*p.a, forge(aeth_to_a(AethType::kAck, 0x1F, kPsnA + 5)));
  deliver(*p.a, forge(aeth_to_a(AethType::kNak, 0, kPsnA + 6)));
  EXPECT_EQ(p.a->counters().go_back_n, 5u);
  EXPECT_EQ(p.qa().state, QpState::kRts);
}

// Expect: a duplicated NAK on a lossy link (FakeLink copies every NAK three times) costs one
// go-back-N, and the write completes intact with a retry budget of one.
TEST(RoceHostile_Nak, TriplicatedNaksOnTheWireCostOneRound) {
  Peers p(/*retry_cnt=*/1);
  testing::FakeLink& link = *p.link;
  int data = 0;
  link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 0 && d.bth->opcode() != RoceOpcode::kRcAck && ++data == 3) v.copies = 0;
    if (from == 1 && d.aeth != nullptr && d.aeth->syndrome_type() == AethType::kNak) {
      v.copies = 3;
      v.dup_delay = 100 * kNanosecond;
    }
    return v;
  });
  link.set_rate_gbps(100);
  ASSERT_TRUE(p.a->post_write({7, kIpB, p.rkey, 0, p.src.data(), 10 * kMtu}).ok());
  link.run(kSecond);
  std::vector<Completion> c(4);
  c.resize(p.a->poll_completions(c));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess) << static_cast<int>(c[0].status);
  EXPECT_TRUE(std::equal(p.src.begin(), p.src.begin() + 10 * kMtu, p.region.begin()));
  EXPECT_EQ(p.a->counters().go_back_n, 1u);
  EXPECT_EQ(p.a->counters().rx_nak_seq_ignored, 2u);
}

// ------------------------------------------------------------------ unimplemented opcodes

// Expect: SEND with invalidate, UC and UD opcodes, sent to a connected QP by its peer, are
// counted as rx_unsupported and dropped: nothing placed, nothing sent, the QP stays up.
// (Atomics are implemented: tests/rocev2/roce_atomic_test.cc forges them.)
TEST(RoceHostile_Opcode, UnimplementedOpcodesAreCountedAndDropped) {
  Peers p;
  const RoceOpcode ops[] = {
      RoceOpcode::kRcSendLastInv, RoceOpcode::kRcSendOnlyInv, RoceOpcode::kUcSendOnly,
      RoceOpcode::kUcWriteOnly,   RoceOpcode::kUdSendOnly,    RoceOpcode::kUdSendOnlyImm,
  };
  for (const RoceOpcode op : ops) {
    Forged f = write_only(kPsnA, p.rkey, 0, 64);
    f.op = op;
    deliver(*p.b, forge(f));
  }
  EXPECT_EQ(p.b->counters().rx_unsupported, std::size(ops));
  EXPECT_EQ(p.b->counters().rx_malformed, 0u);  // well-formed, just not implemented
  EXPECT_TRUE(drain(*p.b).empty());
  EXPECT_TRUE(p.region_untouched());
  EXPECT_EQ(p.qb().state, QpState::kRts);
  EXPECT_EQ(p.qb().epsn, kPsnA);
  // An opcode no table knows fails decoding.
  std::vector<uint8_t> bad = forge(write_only(kPsnA, p.rkey, 0, 64));
  bad[wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize] = 0x1E;
  deliver(*p.b, bad);
  EXPECT_EQ(p.b->counters().rx_malformed, 1u);
}

// ------------------------------------------------------------------ SEND, RNR, READ

// Expect (IB RNR): a SEND with no receive buffer posted gets one RNR NAK (type 1, the
// configured min_rnr_timer, the SEND's PSN) per arrival and is not executed; packets behind
// it are dropped without a NAK; once a buffer is posted the same PSN is accepted.
TEST(RoceHostile_Send, NoBufferGetsAnRnrNakAndNothingMoves) {
  Peers p;
  deliver(*p.b, forge(send_only(kPsnA, 100)));
  deliver(*p.b, forge(send_only(kPsnA + 1, 100)));  // behind it: silent
  auto out = drain(*p.b);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op, RoceOpcode::kRcAck);
  EXPECT_EQ(out[0].aeth_type, AethType::kRnrNak);
  EXPECT_EQ(out[0].aeth_value, p.b->config().min_rnr_timer);
  EXPECT_EQ(out[0].psn, kPsnA);
  EXPECT_EQ(p.b->counters().rx_rnr, 1u);
  EXPECT_EQ(p.b->counters().rx_out_of_order, 1u);
  EXPECT_EQ(p.qb().epsn, kPsnA);
  EXPECT_EQ(p.qb().state, QpState::kRts);
  std::vector<uint8_t> buf(128, 0);
  ASSERT_TRUE(p.b->post_recv({9, buf.data(), buf.size()}).ok());
  deliver(*p.b, forge(send_only(kPsnA, 100, RoceOpcode::kRcSendOnlyImm)));
  out = drain(*p.b);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].aeth_type, AethType::kAck);
  std::vector<Completion> c(4);
  c.resize(p.b->poll_completions(c));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 9u);
  EXPECT_EQ(c[0].bytes, 100u);
  EXPECT_TRUE(c[0].has_imm);
  EXPECT_EQ(buf[99], 0x3C);
  EXPECT_EQ(buf[100], 0);
  // A SEND MIDDLE with no FIRST, or a WRITE MIDDLE inside a SEND: NAK invalid request.
  deliver(*p.b, forge(send_only(kPsnA + 1, kMtu, RoceOpcode::kRcSendMiddle)));
  out = drain(*p.b);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].aeth_type, AethType::kNak);
  EXPECT_EQ(out[0].aeth_value, static_cast<uint8_t>(AethNak::kInvalidRequest));
  EXPECT_EQ(p.qb().state, QpState::kError);
}

// Expect: a READ request with a bad key or a range outside the region (VA near 2^64 too) gets
// a NAK remote access error and reads nothing; the responder QP fails.
TEST(RoceHostile_Read, BadKeyOrRangeGetsARemoteAccessNak) {
  for (int c = 0; c < 3; ++c) {
    Peers p;
    const Forged f = c == 0   ? read_request(kPsnA, p.rkey + 1, 0, 64)
                     : c == 1 ? read_request(kPsnA, p.rkey, p.region.size() - 8, 64)
                              : read_request(kPsnA, p.rkey, ~uint64_t{0} - 15, 32);
    deliver(*p.b, forge(f));
    const auto out = drain(*p.b);
    ASSERT_EQ(out.size(), 1u) << c;
    EXPECT_EQ(out[0].op, RoceOpcode::kRcAck);
    EXPECT_EQ(out[0].aeth_type, AethType::kNak);
    EXPECT_EQ(out[0].aeth_value, static_cast<uint8_t>(AethNak::kRemoteAccessError));
    EXPECT_EQ(p.b->counters().rx_bad_rkey + p.b->counters().rx_bad_range, 1u);
    EXPECT_EQ(p.b->counters().tx_read_responses, 0u);
    EXPECT_EQ(p.qb().state, QpState::kError);
  }
}

// Expect: READ requests beyond max_rd_atomic unanswered recycle the oldest queued response
// (rxe: responder resources are a ring; keeping within max_rd_atomic is the requester's job),
// so the queue stays within max_rd_atomic and the QP stays up; a flood of duplicate READ
// requests (PSNs already executed) keeps the queue within max_rd_atomic too; responses nobody
// asked for are counted and dropped at the requester, which places nothing.
TEST(RoceHostile_Read, RequestFloodsAndUnsolicitedResponsesAreBounded) {
  Peers p;
  const uint32_t max = p.b->config().max_rd_atomic;
  for (uint32_t i = 0; i < max; ++i) deliver(*p.b, forge(read_request(kPsnA + i, p.rkey, 0, 64)));
  EXPECT_EQ(p.qb().responses_queued, max);
  for (int i = 0; i < 10000; ++i) deliver(*p.b, forge(read_request(kPsnA + 3, p.rkey, 0, 64)));
  EXPECT_EQ(p.qb().responses_queued, 4u);  // the duplicate replaced the queue's tail
  EXPECT_EQ(p.qb().state, QpState::kRts);
  // 2 max new requests in order: the queue fills, then each recycles its oldest entry.
  for (uint32_t psn = kPsnA + max; psn != kPsnA + 3 * max; ++psn) {
    deliver(*p.b, forge(read_request(psn, p.rkey, 0, 64)));
    EXPECT_LE(p.qb().responses_queued, max);
  }
  EXPECT_EQ(p.b->counters().rx_read_overflow, max + 4);
  EXPECT_EQ(p.qb().state, QpState::kRts);
  const auto out = drain(*p.b);  // the newest max requests are answered, in PSN order
  ASSERT_EQ(out.size(), max);
  for (uint32_t i = 0; i < max; ++i) {
    EXPECT_EQ(out[i].op, RoceOpcode::kRcReadResponseOnly);
    EXPECT_EQ(out[i].psn, kPsnA + 2 * max + i);
  }
  // Unsolicited responses at A (no read outstanding; then one outstanding at another PSN).
  Forged resp = to_a(RoceOpcode::kRcReadResponseOnly, kPsnA);
  resp.payload.assign(64, 0x99);
  for (uint32_t at : {kPsnA, kPsnA + 5, kPsnA - 1}) {
    resp.psn = at;
    deliver(*p.a, forge(resp));
  }
  EXPECT_EQ(p.a->counters().rx_read_unexpected + p.a->counters().rx_read_dup, 3u);
  std::vector<uint8_t> dst(64, 0);
  ASSERT_TRUE(p.a->post_read({1, kIpB, p.rkey, 0, dst.data(), 64}).ok());
  ASSERT_EQ(drain(*p.a).size(), 1u);
  resp.psn = kPsnA;
  resp.op = RoceOpcode::kRcReadResponseFirst;  // wrong opcode for a 1-packet read
  deliver(*p.a, forge(resp));
  resp.op = RoceOpcode::kRcReadResponseOnly;
  resp.payload.assign(65, 0x99);  // wrong length
  deliver(*p.a, forge(resp));
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_EQ(p.completions_at_a(), 0u);
  resp.payload.assign(64, 0x99);
  deliver(*p.a, forge(resp));
  EXPECT_EQ(p.completions_at_a(), 1u);
  EXPECT_EQ(dst[63], 0x99);
}

// Expect: a READ re-issued from inside a response still queued replaces that response (the
// requester holds everything before the PSN it asks from), so the queue never holds more
// than the requester's max_rd_atomic reads: the requester's next new READs are accepted.
// (Keeping the old response's head grew the queue past max_rd_atomic and failed the QP with
// a resource error under uet-perf over a loaded io_uring loopback.)
TEST(RoceHostile_Read, ReissueFromInsideAQueuedResponseReplacesIt) {
  Peers p;
  const uint32_t max = p.b->config().max_rd_atomic;
  deliver(*p.b, forge(read_request(kPsnA, p.rkey, 0, 16 * kMtu)));
  EXPECT_EQ(p.qb().responses_queued, 1u);
  deliver(*p.b, forge(read_request(kPsnA + 8, p.rkey, 8 * kMtu, 8 * kMtu)));  // re-issue
  EXPECT_EQ(p.qb().responses_queued, 1u);
  for (uint32_t i = 0; i + 1 < max; ++i)
    deliver(*p.b, forge(read_request(kPsnA + 16 + i, p.rkey, 0, 64)));
  EXPECT_EQ(p.qb().responses_queued, max);
  EXPECT_EQ(p.qb().state, QpState::kRts);
  EXPECT_EQ(p.b->counters().rx_read_overflow, 0u);
  const auto out = drain(*p.b);
  ASSERT_EQ(out.size(), 8u + (max - 1));
  EXPECT_EQ(out[0].op, RoceOpcode::kRcReadResponseFirst);
  EXPECT_EQ(out[0].psn, kPsnA + 8);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].psn, kPsnA + 8 + i);
}

// Expect: a fatal NAK (invalid request) for a later READ fails the QP even while responses of
// an earlier READ are missing: the oldest WR ends with kRemoteInvalidRequest, the other is
// flushed; no re-issue. (It used to be taken as a read gap and ignored: the requester then
// re-issued for ever to a responder in the error state.)
TEST(RoceHostile_Read, FatalNakIsNotMistakenForAReadGap) {
  Peers p;
  std::vector<uint8_t> d1(16 * kMtu), d2(64);
  ASSERT_TRUE(p.a->post_read({1, kIpB, p.rkey, 0, d1.data(), d1.size()}).ok());
  ASSERT_TRUE(p.a->post_read({2, kIpB, p.rkey, 0, d2.data(), d2.size()}).ok());
  const auto reqs = drain(*p.a);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].psn, kPsnA + 16);
  deliver(*p.a, forge(aeth_to_a(AethType::kNak, static_cast<uint8_t>(AethNak::kInvalidRequest),
                                kPsnA + 16)));
  std::vector<Completion> c(4);
  c.resize(p.a->poll_completions(c));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].wr_id, 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteInvalidRequest);
  EXPECT_EQ(c[1].status, OpStatus::kFlushed);
  EXPECT_EQ(p.qa().state, QpState::kError);
  EXPECT_EQ(p.a->counters().rx_read_gap, 0u);
  EXPECT_TRUE(drain(*p.a).empty());
}

// ------------------------------------------------------------------ bad ICRC, truncation

// Expect (spec/rocev2.md §6): a flipped bit anywhere the ICRC covers (BTH, RETH, payload, the
// ICRC itself) fails the ICRC; a truncated frame fails a length check. Either is counted and
// dropped before it touches any state: the intact frame is then accepted as the first.
TEST(RoceHostile_Integrity, BadIcrcAndTruncatedFramesTouchNothing) {
  Peers p;
  const std::vector<uint8_t> good = forge(write_only(kPsnA, p.rkey, 0, 300));
  constexpr size_t kBth = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize;
  uint64_t flips = 0, icrc = 0;
  for (size_t at = kBth; at < good.size(); ++at) {
    if (at == kBth + 4) continue;  // BTH byte 4 (FECN/BECN/reserved) is masked by the ICRC
    std::vector<uint8_t> bad = good;
    bad[at] ^= static_cast<uint8_t>(1u << (at % 8));
    wire::Decoded d;
    const wire::WireError err = wire::decode_frame(bad, &d);
    EXPECT_NE(err, wire::WireError::kOk) << "flip at " << at;
    icrc += err == wire::WireError::kBadIcrc;  // else TVer or pad count checked first
    deliver(*p.b, bad);
    ++flips;
  }
  EXPECT_GE(icrc, flips - 4);
  EXPECT_EQ(p.b->counters().rx_bad_icrc, icrc);
  EXPECT_EQ(p.b->counters().wire[wire::WireError::kBadIcrc], icrc);
  for (size_t len = 0; len < good.size(); ++len) {
    deliver(*p.b, std::vector<uint8_t>(good.begin(), good.begin() + static_cast<ptrdiff_t>(len)));
  }
  EXPECT_EQ(p.b->counters().rx_malformed, flips + good.size());
  EXPECT_EQ(p.b->counters().rx_data, 0u);
  EXPECT_TRUE(drain(*p.b).empty());
  EXPECT_TRUE(p.region_untouched());
  deliver(*p.b, good);
  EXPECT_EQ(p.b->counters().rx_placed, 1u);
  EXPECT_EQ(p.qb().epsn, kPsnA + 1);
}

// Expect: RETH ranges are checked without overflow (VA near 2^64), and lengths against the
// opcode (FIRST/MIDDLE exactly one MTU): NAK remote access error / invalid request, the
// responder QP moves to the error state (rxe: class C errors), nothing placed.
TEST(RoceHostile_Reth, WrappingRangeIsARemoteAccessError) {
  Peers p;
  Forged f = write_only(kPsnA, p.rkey, ~uint64_t{0} - 15, 32);
  deliver(*p.b, forge(f));
  EXPECT_EQ(p.b->counters().rx_bad_range, 1u);
  const auto out = drain(*p.b);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].aeth_type, AethType::kNak);
  EXPECT_EQ(out[0].aeth_value, static_cast<uint8_t>(AethNak::kRemoteAccessError));
  EXPECT_EQ(p.qb().state, QpState::kError);
  EXPECT_TRUE(p.region_untouched());
}

TEST(RoceHostile_Reth, ShortMiddlePacketIsAnInvalidRequest) {
  Peers p;
  Forged first = write_only(kPsnA, p.rkey, 0, kMtu);
  first.op = RoceOpcode::kRcWriteFirst;
  first.dma_length = 3 * kMtu;
  deliver(*p.b, forge(first));
  Forged middle;
  middle.op = RoceOpcode::kRcWriteMiddle;
  middle.psn = kPsnA + 1;
  middle.payload.assign(100, 0xCD);  // must be one MTU
  deliver(*p.b, forge(middle));
  EXPECT_EQ(p.b->counters().rx_invalid_request, 1u);
  const auto out = drain(*p.b);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].aeth_value, static_cast<uint8_t>(AethNak::kInvalidRequest));
  EXPECT_EQ(p.qb().state, QpState::kError);
}

// ------------------------------------------------------------------------------ floods

// Expect: floods of forged frames cost a bounded answer (one NAK per gap, one ACK for any
// number of duplicates, nothing for unknown QPs, CNPs or stale ACKs), grow no table and no
// memory, and leave the QP working.
TEST(RoceHostile_Flood, FloodsGetBoundedAnswersAndGrowNothing) {
  Peers p;
  const std::vector<uint8_t> ahead = forge(write_only(kPsnA + 77, p.rkey, 0, 1024));
  const std::vector<uint8_t> unknown_qp = [&] {
    Forged f = write_only(kPsnA, p.rkey, 0, 1024);
    f.dest_qp = 0x100 + 40;
    return forge(f);
  }();
  Forged cnp;
  cnp.op = RoceOpcode::kCnp;
  cnp.dest_qp = kQpB;
  cnp.psn = 0;
  const std::vector<uint8_t> cnp_frame = forge(cnp);
  const uint64_t rss_before = rss_kib();
  const size_t footprint_b = p.b->footprint();
  constexpr int kFlood = 100'000;
  for (int i = 0; i < kFlood; ++i) {
    deliver(*p.b, ahead, i);
    deliver(*p.b, unknown_qp, i);
    deliver(*p.b, cnp_frame, i);
  }
  const auto out = drain(*p.b, kFlood);
  ASSERT_EQ(out.size(), 1u);  // the one NAK for the gap
  EXPECT_EQ(out[0].aeth_type, AethType::kNak);
  EXPECT_EQ(p.b->counters().rx_out_of_order, uint64_t{kFlood});
  EXPECT_EQ(p.b->counters().rx_unknown_qp, uint64_t{kFlood});
  EXPECT_EQ(p.b->counters().rx_cnps, uint64_t{kFlood});
  EXPECT_GT(p.qb().rate_gbps, 0.0);  // DCQCN is floored, not driven to zero
  // Duplicates: one ACK however many.
  deliver(*p.b, forge(write_only(kPsnA, p.rkey, 0, 1024)), kFlood);
  drain(*p.b, kFlood);
  const std::vector<uint8_t> dup = forge(write_only(kPsnA, p.rkey, 0, 1024, 0x77));
  for (int i = 0; i < kFlood; ++i) deliver(*p.b, dup, kFlood);
  EXPECT_EQ(drain(*p.b, kFlood).size(), 1u);
  // Stale ACKs at the requester.
  p.a_sends(2);
  const size_t footprint_a = p.a->footprint();
  const std::vector<uint8_t> stale = forge(aeth_to_a(AethType::kAck, 0x1F, kPsnA + 1000));
  for (int i = 0; i < kFlood; ++i) deliver(*p.a, stale, i);
  EXPECT_EQ(p.a->counters().rx_stale_acks, uint64_t{kFlood});
  EXPECT_TRUE(drain(*p.a).empty());
  EXPECT_EQ(p.completions_at_a(), 0u);
  EXPECT_EQ(p.a->footprint(), footprint_a);
  // Nothing grew: no QP appeared, the tables are what they were, memory is flat.
  const RoceConfig& c = p.b->config();
  size_t connected = 0;
  for (uint32_t q = 0; q < c.max_qps; ++q)
    connected += p.b->qp_info(c.qpn_base + q)->state != QpState::kReset;
  EXPECT_EQ(connected, 1u);
  EXPECT_EQ(p.qb().writes_outstanding, 0u);
  EXPECT_EQ(p.b->footprint(), footprint_b);
#if !defined(__SANITIZE_ADDRESS__)  // ASan's shadow and quarantine move RSS on their own
  EXPECT_LT(rss_kib(), rss_before + 1024) << "5 x 10^5 forged frames grew memory";
#else
  (void)rss_before;
#endif
  EXPECT_TRUE(
      std::all_of(p.region.begin() + 1024, p.region.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(
      std::all_of(p.region.begin(), p.region.begin() + 1024, [](uint8_t x) { return x == 0xAB; }));
}

}  // namespace
}  // namespace uet
