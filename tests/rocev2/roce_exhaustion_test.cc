// Resource exhaustion at the RoCEv2 engine's receive path. RC QPs are connected out of band
// (connect_qp), so no frame can open one: floods to every QPN in and out of range with random
// PSNs, READs larger than any region, ACKs far ahead. footprint() must not grow past what
// connect_qp made and stays within RoceEndpoint::footprint_bound(); each attack prints one
// line (attack, frames, peak footprint(), bound, RSS delta) for tests/README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/roce_forge.h"
#include "tests/common/roce_pair.h"
#include "tests/common/rss.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/wire/roce_headers.h"

namespace uet {
namespace {

using wire::AethNak;
using wire::AethType;
using wire::RoceOpcode;

constexpr uint32_t kIpB = 0x0A000002;    // the endpoint under attack
constexpr uint32_t kPeer0 = 0x0A000100;  // its peers: kPeer0 + i on QP qpn_base + i
constexpr uint32_t kRemoteQpn = 0x200;

RoceConfig config_for(uint32_t ip) { return testing::roce_config(ip, /*ack_timeout_exp=*/8); }

using testing::rss_kib;

void report(const char* attack, uint64_t frames, size_t peak, size_t bound, uint64_t rss_before) {
  const int64_t rss = testing::rss_delta_kib(rss_before);
  testing::print_exhaustion(attack, frames, peak, bound, rss);
#if !defined(__SANITIZE_ADDRESS__)  // ASan's shadow and quarantine move RSS on their own
  EXPECT_LT(rss, 2048) << attack;
#endif
}

// Forged frames ask for an ACK and carry their payload unpadded, from kPeer0 to B's first QP
// unless a test says otherwise.
struct Forged : testing::RoceForged {
  Forged() {
    dest_qp = 0x100;
    src = kPeer0;
    dst = kIpB;
    ack_req = true;
    pad = false;
  }
};

using testing::forge;

using testing::deliver;

// What the endpoint sends now: frames, remote-access NAKs, read-response payload bytes.
struct Sent {
  size_t frames = 0, access_naks = 0, other_naks = 0, read_bytes = 0;
};
Sent drain(RoceEndpoint& ep, Time now) {
  Sent s;
  std::vector<uint8_t> buf(9216);
  for (int i = 0; i < 100000; ++i) {
    wire::Decoded d;
    const uint32_t len = testing::take_decoded(ep, buf, now, &d);
    if (len == 0) break;
    ++s.frames;
    const RoceOpcode op = d.bth->opcode();
    if (op == RoceOpcode::kRcReadResponseFirst || op == RoceOpcode::kRcReadResponseMiddle ||
        op == RoceOpcode::kRcReadResponseLast || op == RoceOpcode::kRcReadResponseOnly) {
      s.read_bytes += d.payload.size();
    }
    if (d.aeth != nullptr && d.aeth->syndrome_type() == AethType::kNak) {
      const bool access =
          d.aeth->syndrome_value() == static_cast<uint8_t>(AethNak::kRemoteAccessError);
      ++(access ? s.access_naks : s.other_naks);
    }
  }
  return s;
}

// An endpoint with `qps` QPs connected (QP qpn_base + i to kPeer0 + i), a 64 KiB region.
struct Target {
  RoceConfig config;
  std::unique_ptr<RoceEndpoint> ep;
  std::vector<uint8_t> region = std::vector<uint8_t>(64 * 1024, 0);
  uint32_t rkey = 0;
  Target(RoceConfig c, uint32_t qps) : config(c), ep(std::move(*RoceEndpoint::create(c))) {
    for (uint32_t i = 0; i < qps; ++i) connect(i);
    rkey = *ep->register_memory(region.data(), region.size());
  }
  void connect(uint32_t i) {
    EXPECT_TRUE(
        ep->connect_qp(kPeer0 + i, config.qpn_base + i, kRemoteQpn + i, 1000 + i, 5000 + i).ok());
  }
  uint32_t connected() const {
    uint32_t n = 0;
    for (uint32_t q = 0; q < config.max_qps; ++q)
      n += ep->qp_info(config.qpn_base + q)->state != QpState::kReset;
    return n;
  }
};

// ---------------------------------------------------------------------- the bound itself

// Every table of a small config at its bound (every QP connected, every send queue, the
// receive queue and the completion ring full, max_rd_atomic atomics executed on every QP,
// their answers queued): footprint() comes close to footprint_bound() and never passes it.
TEST(RoceExhaustion_Bound, FullTablesComeCloseToTheBoundAndStayUnder) {
  RoceConfig c = config_for(kIpB);
  c.max_qps = 20;  // a chunk and a part of one
  c.max_send_wr = 8;
  c.max_rd_atomic = 4;
  c.max_recvs = 8;
  c.cq_entries = 256;
  constexpr uint32_t kRegions = 3;
  const size_t bound = RoceEndpoint::footprint_bound(c, kRegions + 1);
  Target t(c, c.max_qps);
  std::vector<uint8_t> buf(4096);
  for (uint32_t i = 0; i < kRegions; ++i)
    ASSERT_TRUE(t.ep->register_memory(buf.data(), buf.size()).ok());
  for (uint32_t q = 0; q < c.max_qps; ++q) {
    for (uint32_t w = 0; w < c.max_send_wr; ++w)
      ASSERT_TRUE(t.ep->post_write({w, kPeer0 + q, 1, 0, buf.data(), 64}).ok());
  }
  for (uint32_t r = 0; r < c.max_recvs; ++r) ASSERT_TRUE(t.ep->post_recv({r, buf.data(), 64}).ok());
  for (uint32_t q = 0; q < c.max_qps; ++q) {
    for (uint32_t a = 0; a < c.max_rd_atomic; ++a) {
      Forged f;
      f.op = RoceOpcode::kRcFetchAdd;
      f.src = kPeer0 + q;
      f.dest_qp = c.qpn_base + q;
      f.psn = 5000 + q + a;  // in order from the QP's first expected PSN
      f.rkey = t.rkey;
      f.va = 8 * a;
      f.swap_add = 1;
      deliver(*t.ep, forge(f));
    }
  }
  EXPECT_EQ(t.ep->counters().rx_atomics, uint64_t{c.max_qps} * c.max_rd_atomic);
  EXPECT_EQ(t.ep->qp_info(c.qpn_base)->responses_queued, c.max_rd_atomic);
  EXPECT_EQ(t.ep->qps_allocated(), c.max_qps);
  const size_t bytes = t.ep->footprint();
  std::printf("full small config: %zu of %zu bytes (%.0f %%)\n", bytes, bound,
              100.0 * static_cast<double>(bytes) / static_cast<double>(bound));
  EXPECT_LE(bytes, bound);
  EXPECT_GE(bytes, bound * 9 / 10);
}

// ------------------------------------------------------------------------- QPN floods

// 10^5 frames to every QPN in and out of range (below qpn_base, the table, past it, any
// 24 bits), random opcodes and PSNs, from strangers and from the connected peers; ACKs
// claiming PSNs far ahead. No QP appears, no table grows; the answers are bounded.
TEST(RoceExhaustion_Qp, FramesToEveryQpnOpenNothing) {
  RoceConfig c = config_for(kIpB);
  c.max_qps = 64;
  const size_t bound = RoceEndpoint::footprint_bound(c, 1);
  Target t(c, 4);
  const uint32_t allocated = t.ep->qps_allocated();
  const size_t before = t.ep->footprint();
  std::mt19937_64 rng(5);
  const uint64_t rss_before = rss_kib();
  constexpr uint64_t kFrames = 100'000;
  size_t peak = 0, answers = 0, drains = 0;
  const RoceOpcode ops[] = {RoceOpcode::kRcWriteOnly,   RoceOpcode::kRcSendOnly,
                            RoceOpcode::kRcReadRequest, RoceOpcode::kRcAck,
                            RoceOpcode::kRcWriteFirst,  RoceOpcode::kRcReadResponseOnly};
  for (uint64_t i = 1; i <= kFrames; ++i) {
    Forged f;
    f.op = ops[rng() % std::size(ops)];
    switch (rng() % 4) {
      case 0:
        f.dest_qp = static_cast<uint32_t>(rng() % (c.qpn_base + c.max_qps + 1000));
        break;
      case 1:
        f.dest_qp = static_cast<uint32_t>(rng() & 0xFFFFFF);
        break;
      default:
        f.dest_qp = c.qpn_base + static_cast<uint32_t>(rng() % 4);
        break;  // connected
    }
    // A stranger, or the QP's own peer (then only the PSN and the payload are forged).
    f.src = rng() % 2 ? 0x0B000000u | static_cast<uint32_t>(rng() & 0xFFFFFF)
                      : kPeer0 + (f.dest_qp - c.qpn_base) % 4;
    f.psn = static_cast<uint32_t>(rng() & 0xFFFFFF);
    f.rkey = static_cast<uint32_t>(rng() % 4);
    f.va = rng();
    f.dma_length = static_cast<uint32_t>(rng() % (1u << 31));
    f.payload.assign(f.op == RoceOpcode::kRcWriteFirst ? c.mtu : rng() % 256, 0xAB);
    deliver(*t.ep, forge(f), static_cast<Time>(i) * 10 * kNanosecond);
    if (i % 1000 != 0) continue;
    const Time now = static_cast<Time>(i) * 10 * kNanosecond;
    if (t.ep->next_deadline() <= now) t.ep->on_timer(now);
    answers += drain(*t.ep, now).frames;
    ++drains;
    peak = std::max(peak, t.ep->footprint());
    ASSERT_LE(t.ep->footprint(), bound);
  }
  const RoceCounters& k = t.ep->counters();
  // Expect: no QP was opened or allocated by the wire; the tables are exactly as connect_qp
  // made them; strangers were dropped unanswered; at most a NAK, an ACK and a read's
  // responses per QP per burst went out.
  EXPECT_EQ(t.ep->qps_allocated(), allocated);
  EXPECT_EQ(t.connected(), 4u);
  EXPECT_EQ(t.ep->footprint(), before);
  EXPECT_GT(k.rx_unknown_qp, kFrames / 3);
  EXPECT_LE(answers, drains * 4 * (2 + c.max_rd_atomic));
  report("frames to every QPN, random PSNs", kFrames, peak, bound, rss_before);
}

// ----------------------------------------------------------------------- oversized READs

// READ requests larger than any region (DMA lengths up to 2^31, VAs whose end wraps 2^64,
// keys of no region) at each QP's expected PSN, then more behind them: one remote-access NAK
// per QP (the QP enters the error state, the rest are dropped), no response byte, no growth.
// The QPs are connected again between rounds (as an application recovers them).
TEST(RoceExhaustion_Read, LargerThanAnyRegionIsNakedWithoutGrowth) {
  RoceConfig c = config_for(kIpB);
  c.max_qps = 64;
  const size_t bound = RoceEndpoint::footprint_bound(c, 1);
  Target t(c, c.max_qps);
  const size_t before = t.ep->footprint();
  std::mt19937_64 rng(9);
  const uint64_t rss_before = rss_kib();
  constexpr uint32_t kRounds = 100, kPerQp = 8;
  uint64_t frames = 0;
  size_t peak = 0;
  Sent total;
  for (uint32_t round = 0; round < kRounds; ++round) {
    const Time now = static_cast<Time>(round) * kMicrosecond;
    for (uint32_t q = 0; q < c.max_qps; ++q) {
      for (uint32_t j = 0; j < kPerQp; ++j) {
        Forged f;
        f.op = RoceOpcode::kRcReadRequest;
        f.src = kPeer0 + q;
        f.dest_qp = c.qpn_base + q;
        f.psn = (5000 + q + j) & 0xFFFFFF;  // the expected PSN first
        f.rkey = t.rkey;
        switch ((round + j) % 4) {
          case 0:  // longer than the region, up to 2^31
            f.va = rng() % t.region.size();
            f.dma_length = static_cast<uint32_t>(t.region.size() + 1 + rng() % (1u << 31));
            break;
          case 1:  // VA + length wraps 2^64
            f.va = ~uint64_t{0} - rng() % 4096;
            f.dma_length = 4096 + static_cast<uint32_t>(rng() % 4096);
            break;
          case 2:  // the largest DMA length the RETH carries, from offset 0
            f.dma_length = 1u << 31;
            break;
          default:  // a key of no region
            f.rkey = t.rkey + 1 + static_cast<uint32_t>(rng() % 1000);
            f.dma_length = 64;
            break;
        }
        deliver(*t.ep, forge(f), now);
        ++frames;
      }
    }
    const Sent s = drain(*t.ep, now);
    total.access_naks += s.access_naks;
    total.other_naks += s.other_naks;
    total.read_bytes += s.read_bytes;
    peak = std::max(peak, t.ep->footprint());
    ASSERT_LE(t.ep->footprint(), bound);
    for (uint32_t q = 0; q < c.max_qps; ++q) {
      ASSERT_EQ(t.ep->qp_info(c.qpn_base + q)->state, QpState::kError);
      t.connect(q);
    }
  }
  const RoceCounters& k = t.ep->counters();
  // Expect: one remote-access NAK per QP and round, nothing read, nothing grown.
  EXPECT_EQ(total.access_naks, uint64_t{kRounds} * c.max_qps);
  EXPECT_EQ(total.other_naks, 0u);
  EXPECT_EQ(total.read_bytes, 0u);
  EXPECT_EQ(k.tx_read_responses, 0u);
  EXPECT_EQ(k.rx_bad_rkey + k.rx_bad_range, uint64_t{kRounds} * c.max_qps);
  EXPECT_EQ(k.rx_qp_error, uint64_t{kRounds} * c.max_qps * (kPerQp - 1));
  EXPECT_EQ(t.ep->footprint(), before);
  EXPECT_TRUE(std::all_of(t.region.begin(), t.region.end(), [](uint8_t x) { return x == 0; }));
  report("READs larger than any region", frames, peak, bound, rss_before);
}

}  // namespace
}  // namespace uet
