// Loss recovery in the UET engine (transport/uet/uet_endpoint.h): the RFC 6298 RTT estimator
// sets the RTO, and the tail-loss probe repairs a lost last packet without a timeout.
#include <gtest/gtest.h>

#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/mentions.h"
#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

UetConfig config_for(uint32_t ip) {
  UetConfig c = testing::uet_config(ip, /*seed=*/99);
  c.idle_timeout = 0;  // one PDC keeps its RTT estimate across writes; link.now() is the repair
  return c;
}

// A writes from 1 MiB of 0x5A into a 1 MiB region at B.
struct Pair : testing::UetPair {
  explicit Pair(const UetConfig& a = config_for(kIpA)) : UetPair(a, config_for(kIpB), 1 << 20) {}
  // Posts a WRITE of `bytes` from A to B and runs the link until nothing is left to do.
  void write(uint64_t id, uint64_t bytes) {
    EXPECT_TRUE(ea->post_write({id, kIpB, rkey, 0, src.data(), bytes}).ok());
    link.run(kSecond);
  }
};

bool is_eom_request(const wire::Decoded& d) {
  const auto* ses = d.ses_as<wire::SesStandardRequest>();
  return d.pds_type == wire::PdsType::kRudReq && ses != nullptr && ses->eom();
}

TEST(UetRecovery_Tlp, LostLastPacketIsRepairedByOneProbeWithoutTimeout) {
  Pair t;
  // A first write gives the estimator its samples; the second write loses its last packet.
  t.write(1, 20 * 4096);
  bool dropped = false;
  Time dropped_at = 0;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 0 && is_eom_request(d) && !dropped) {
      dropped = true;
      dropped_at = t.link.now();
      v.copies = 0;
    }
    return v;
  });
  t.write(2, 20 * 4096);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  ASSERT_TRUE(dropped);
  // Expect: one probe, no timeout, the repair well before the initial 50 us RTO.
  EXPECT_EQ(t.ea->counters().tlp_probes, 1u);
  EXPECT_EQ(t.ea->counters().timeouts, 0u);
  EXPECT_EQ(t.ea->counters().tx_retx, 1u);
  EXPECT_LT(t.link.now() - dropped_at, 30 * kMicrosecond);
}

// RFC 8985 §6.2: when the last PSN is acknowledged and an older one is not, no later ACK can
// show the hole, so the reorder count is waived: the older one is resent once it has been out
// an RTT + the reordering window, not at the probe timeout after the last ACK (2 srtt +
// ack_delay) nor at the RTO. Here the first of a two-packet write is lost; the probe is off,
// so RACK alone repairs it.
TEST(UetRecovery_Rack, HoleBeforeAnAcknowledgedLastPacketGoesAfterOneRtt) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;
  a.min_rto = 40 * kMicrosecond;
  a.reorder_window = kMicrosecond;
  Pair t(a);
  t.write(1, 20 * 4096);
  Time dropped_at = 0, resent_at = 0;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from != 0 || d.pds_type != wire::PdsType::kRudReq) return v;
    const auto* ses = d.ses_as<wire::SesStandardRequest>();
    if (ses == nullptr || !ses->som()) return v;
    if (!wire::as<wire::PdsRudRod>(d.pds)->retx()) {
      dropped_at = t.link.now();
      v.copies = 0;
    } else if (resent_at == 0) {
      resent_at = t.link.now();
    }
    return v;
  });
  t.write(2, 2 * 4096);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  ASSERT_GT(resent_at, 0);
  EXPECT_EQ(t.ea->counters().timeouts, 0u);
  // Expect: resent one RTT (~4 us) + 1 us after it went, by RACK; the probe timeout would
  // have sent it 2 srtt + 2 us after the last packet's ACK (~14 us after the loss), the RTO
  // 40 us after.
  EXPECT_LT(resent_at - dropped_at, 8 * kMicrosecond);
}

// RFC 8985 §6.2 steps 2 and 4: in recovery with no reordering seen, the resend whose ACK
// echoes RETX (§3.7) was delivered after the lost last packet was sent, so that packet is
// resent at once, not at the RTO. Packet 10 of a write and its last packet are lost; RACK
// resends 10 (count); its ACK shows the last packet lost. The probe is off.
TEST(UetRecovery_Rack, ResendDeliveredAfterALostLastPacketShowsItLost) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;
  Pair t(a);
  t.write(1, 20 * 4096);
  int firsts = 0;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from != 0 || d.pds_type != wire::PdsType::kRudReq) return v;
    if (wire::as<wire::PdsRudRod>(d.pds)->retx()) return v;
    if (firsts++ == 10 || is_eom_request(d)) v.copies = 0;
    return v;
  });
  t.write(2, 20 * 4096);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  // Expect: both repaired by RACK (two inferred losses), no timeout.
  EXPECT_EQ(t.ea->counters().fast_retx, 2u);
  EXPECT_EQ(t.ea->counters().timeouts, 0u);
}

TEST(UetRecovery_Tlp, DisabledFallsBackToTheRto) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;
  Pair t(a);
  t.write(1, 20 * 4096);
  bool dropped = false;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 0 && is_eom_request(d) && !dropped) {
      dropped = true;
      v.copies = 0;
    }
    return v;
  });
  t.write(2, 20 * 4096);
  EXPECT_EQ(t.ea->counters().tlp_probes, 0u);
  EXPECT_EQ(t.ea->counters().timeouts, 1u);
}

// After samples of a ~4 us round trip, the RTO is the estimate clamped at min_rto (10 us),
// not the initial 50 us: a peer that goes silent is retried 10, 20, 40 us later.
TEST(UetRecovery_Rto, EstimateReplacesTheInitialRto) {
  UetConfig a = config_for(kIpA);
  a.max_retries = 3;
  a.tlp = false;
  Pair t(a);
  t.write(1, 20 * 4096);
  const Time silent_from = t.link.now();
  t.link.set_filter([](int from, const wire::Decoded&, std::vector<uint8_t>&) {
    testing::Verdict v;
    v.copies = from == 0 ? 0 : 1;
    return v;
  });
  t.write(2, 4096);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kRetriesExhausted);
  // Expect: 10 + 20 + 40 + 80 us (with the initial RTO it would be 50 + 100 + 200 + 400).
  EXPECT_GT(t.link.now() - silent_from, 140 * kMicrosecond);
  EXPECT_LT(t.link.now() - silent_from, 200 * kMicrosecond);
}

// Karn (RFC 6298 §5.7): after a timeout the backed-off RTO holds until an ACK gives a valid
// sample; an ACK of a retransmitted packet does not reset it to the (stale) estimate. Here
// three packets are lost; after the timeout (RTO 10 us, now 20 us) they go again one at a
// time, the second delayed 12 us: with the RTO reset to 10 us at the first resend's ACK it
// would time out again (spuriously).
TEST(UetRecovery_Rto, BackoffHoldsUntilAValidSample) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;
  Pair t(a);
  t.write(1, 20 * 4096);
  ASSERT_EQ(t.ea->counters().timeouts, 0u);
  int resends = 0;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from != 0 || d.pds_type != wire::PdsType::kRudReq) return v;
    if (!wire::as<wire::PdsRudRod>(d.pds)->retx()) {
      v.copies = 0;  // every first transmission is lost
    } else if (++resends == 2) {
      v.delay = 12 * kMicrosecond;
    }
    return v;
  });
  t.write(2, 3 * 4096);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  EXPECT_EQ(resends, 3);
  EXPECT_EQ(t.ea->counters().timeouts, 3u);  // the three lost PSNs, in one expiry
}

// The RTO's floor at rto_srtt_pct of srtt: after steady samples rttvar has decayed to little,
// so RFC 6298 alone puts the RTO just above srtt, and a packet held up by a queue that built
// faster than the estimate follows times out spuriously. At 200 % a 1.6 srtt round trip
// (39 us against srtt 24 us) does not.
TEST(UetRecovery_Rto, FloorAtTwiceSrttAbsorbsAQueueThatBuiltUp) {
  for (const uint32_t pct : {0u, 200u}) {
    SCOPED_TRACE(pct);
    UetConfig a = config_for(kIpA);
    a.tlp = false;
    a.rto_srtt_pct = pct;
    Pair t(a);
    bool hold_next = false;
    t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
      testing::Verdict v;
      if (from == 1) v.delay = 20 * kMicrosecond;  // every ACK: a steady 20 us round trip
      if (from == 0 && d.pds_type == wire::PdsType::kRudReq && hold_next) {
        hold_next = false;
        v.delay = 15 * kMicrosecond;  // one request queues: 39 us, 1.6 srtt
      }
      return v;
    });
    // One sample per round trip: ten writes, one after the other, settle the estimate
    // (srtt 24 us, rttvar 12 us * 0.75^9 < 1 us).
    for (uint64_t id = 1; id <= 10; ++id) {
      t.write(id, 4 * 4096);
    }
    ASSERT_EQ(t.ea->counters().timeouts, 0u);
    hold_next = true;
    t.write(11, 4096);
    const std::vector<Completion> c = t.completions();
    ASSERT_EQ(c.size(), 11u);
    EXPECT_EQ(c[10].status, OpStatus::kSuccess);
    EXPECT_EQ(t.ea->counters().timeouts, pct == 0 ? 1u : 0u);
  }
}

// The RTO's floor at rto_rtt_max_pct of the largest sample: one round trip of 200 us (a
// host's scheduling stall), then 40 of ~4 us settle srtt and rttvar, so the estimate alone
// falls to min_rto (10 us). A request held 100 us (the next stall) then times out with the
// floor off; at 150 % the RTO stays at 300 us and it does not (RFC 6298 §2.4).
TEST(UetRecovery_Rto, FloorAtTheLargestSampleAbsorbsAStallLikeAnEarlierOne) {
  for (const uint32_t pct : {0u, 150u}) {
    SCOPED_TRACE(pct);
    UetConfig a = config_for(kIpA);
    a.tlp = false;
    a.rto = kMillisecond;  // the first, slow round trip is a sample, not a timeout
    a.rto_rtt_max_pct = pct;
    Pair t(a);
    Time ack_delay = 0, hold = 0;
    t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
      testing::Verdict v;
      if (from == 1) v.delay = ack_delay;
      if (from == 0 && d.pds_type == wire::PdsType::kRudReq && hold > 0) {
        v.delay = hold;
        hold = 0;
      }
      return v;
    });
    ack_delay = 200 * kMicrosecond;
    t.write(1, 4 * 4096);
    ack_delay = 0;
    for (uint64_t id = 2; id <= 41; ++id) t.write(id, 4 * 4096);
    ASSERT_EQ(t.ea->counters().timeouts, 0u);
    EXPECT_GE(t.ea->counters().rtt_max, 200 * kMicrosecond);
    hold = 100 * kMicrosecond;
    t.write(42, 4096);
    const std::vector<Completion> c = t.completions();
    ASSERT_EQ(c.size(), 42u);
    EXPECT_EQ(c[41].status, OpStatus::kSuccess);
    // Expect: a spurious timeout without the floor, none with it; the floor counted only
    // when set.
    if (pct == 0) {
      EXPECT_GE(t.ea->counters().timeouts, 1u);
      EXPECT_EQ(t.ea->counters().rto_below_rtt_max, 0u);
    } else {
      EXPECT_EQ(t.ea->counters().timeouts, 0u);
      EXPECT_GT(t.ea->counters().rto_below_rtt_max, 0u);
    }
  }
}

// The tail-loss probe waits for the same floor: after a 200 us round trip and 40 of ~4 us,
// the last packet of a write is held 100 us. With the floor off the probe goes after
// 2 srtt + ack_delay (a resend of a packet that was not lost); at 150 % it waits 300 us.
TEST(UetRecovery_Tlp, WaitsForTheLargestSampleFloor) {
  for (const uint32_t pct : {0u, 150u}) {
    SCOPED_TRACE(pct);
    UetConfig a = config_for(kIpA);
    a.rto = kMillisecond;
    a.min_rto = kMillisecond;  // the RTO stays out of the way: only the probe can resend
    a.rto_rtt_max_pct = pct;
    Pair t(a);
    Time ack_delay = 0;
    bool hold_eom = false;
    t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
      testing::Verdict v;
      if (from == 1) v.delay = ack_delay;
      if (from == 0 && hold_eom && is_eom_request(d)) {
        v.delay = 100 * kMicrosecond;
        hold_eom = false;
      }
      return v;
    });
    ack_delay = 200 * kMicrosecond;
    t.write(1, 4 * 4096);
    ack_delay = 0;
    for (uint64_t id = 2; id <= 41; ++id) t.write(id, 4 * 4096);
    ASSERT_EQ(t.ea->counters().tx_retx, 0u);
    hold_eom = true;
    t.write(42, 4 * 4096);
    ASSERT_EQ(t.completions().size(), 42u);
    // Expect: one spurious probe without the floor, none with it; no timeout either way.
    EXPECT_EQ(t.ea->counters().tlp_probes, pct == 0 ? 1u : 0u);
    EXPECT_EQ(t.ea->counters().timeouts, 0u);
  }
}

// The floor is bounded by max_rto like the rest of the estimate.
TEST(UetRecovery_Rto, FloorAtTheLargestSampleStopsAtMaxRto) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;
  a.rto_rtt_max_pct = 1000;
  a.max_rto = 1 * kMillisecond;
  a.max_retries = 1;
  Pair t(a);
  Time ack_delay = 300 * kMicrosecond;
  bool silent = false;
  t.link.set_filter([&](int from, const wire::Decoded&, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 1) v.delay = ack_delay;
    if (silent && from == 0) v.copies = 0;
    return v;
  });
  t.write(1, 4 * 4096);  // rtt_max 300 us: the floor would be 3 ms
  ack_delay = 0;
  silent = true;
  const Time from = t.link.now();
  t.write(2, 4096);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kRetriesExhausted);
  // Expect: given up one max_rto (1 ms) after the send, not 3 ms.
  EXPECT_LT(t.link.now() - from, 1500 * kMicrosecond);
}

// RFC 6298 §5.3: only an ACK that acknowledges new data restarts the RTO. Here the last of
// three packets is lost and the ACK of the first two arrives ten times, 3 us apart (a
// duplicate, or a late original of a resent PSN, acknowledges nothing new): the timeout must
// still fire one RTO after the progress, not one RTO after the last duplicate.
TEST(UetRecovery_Rto, DuplicateAcksDoNotPostponeTheTimeout) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;
  Pair t(a);
  t.write(1, 4 * 4096);  // an RTT sample: the RTO is now min_rto (10 us)
  bool lost = false;
  Time resent_at = -1;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 0 && is_eom_request(d)) {
      if (!lost) {
        lost = true;
        v.copies = 0;
      } else if (resent_at < 0) {
        resent_at = t.link.now();
      }
    }
    if (from == 1 && d.pds_type == wire::PdsType::kAckCc) {
      v.copies = 10;
      v.dup_delay = 3 * kMicrosecond;
    }
    return v;
  });
  const Time start = t.link.now();
  t.write(2, 3 * 4096);
  ASSERT_TRUE(lost);
  ASSERT_GE(resent_at, 0);
  EXPECT_EQ(t.ea->counters().timeouts, 1u);
  // Expect: the first two packets' ACK (after ack_delay) + one RTO: about 15 us; with every
  // duplicate restarting the timer it would be ~27 us later.
  EXPECT_LT(resent_at - start, 20 * kMicrosecond);
}

// After a 4-packet write (an RTT estimate), a 12-packet write whose second request is lost
// once; both writes' completions.
std::vector<Completion> second_of_twelve_lost(Pair& t) {
  t.write(1, 4 * 4096);
  t.link.set_filter([requests = 0](int from, const wire::Decoded& d,
                                   std::vector<uint8_t>&) mutable {
    testing::Verdict v;
    if (from == 0 && d.pds_type == wire::PdsType::kRudReq &&
        !wire::as<wire::PdsRudRod>(d.pds)->retx() && ++requests == 2) {
      v.copies = 0;
    }
    return v;
  });
  t.write(2, 12 * 4096);
  return t.completions();
}

// RFC 8985 §6.3, the reorder timer: the second of 12 packets is lost; the others' ACKs show
// the hole, but all were sent within the reordering window of it and nothing newer follows.
// The hole goes again once it has been out the newest delivered packet's round trip plus the
// window, by the timer; before, it waited for the RTO. (TLP is off: its probe would resend
// the last packet first.)
TEST(UetRecovery_Rack, ReorderTimerResendsAHoleWhenNoLaterAckCanShowIt) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;
  Pair t(a);
  const std::vector<Completion> c = second_of_twelve_lost(t);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  EXPECT_EQ(t.ea->counters().timeouts, 0u);
  EXPECT_EQ(t.ea->counters().fast_retx, 1u);
  EXPECT_EQ(t.ea->counters().tx_retx, 1u);
}

// A 48-packet write at 100 Gb/s after an RTT estimate: requests 2 and 4 are lost and so is
// the first resend (of 2), so 4's resend arrives past a hole and is ACKed at once, showing a
// loss repaired by its resend; request `delayed` (0: none) arrives 3 us late; request 30 is
// lost. Returns how long request 30's resend went after it; `retx` counts the resends.
Time second_hole_repair(int delayed, uint64_t* retx) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;
  Pair t(a);
  t.link.set_rate_gbps(100);
  t.write(1, 4 * 4096);
  int requests = 0, resends = 0;
  Time lost_at = -1, resent_at = -1;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from != 0 || d.pds_type != wire::PdsType::kRudReq) return v;
    if (wire::as<wire::PdsRudRod>(d.pds)->retx()) {
      if (++resends == 1) v.copies = 0;
      if (resends == 4) resent_at = t.link.now();
      return v;
    }
    ++requests;
    if (requests == 2 || requests == 4 || requests == 30) v.copies = 0;
    if (requests == 30) lost_at = t.link.now();
    if (requests == delayed) v.delay = 3 * kMicrosecond;
    return v;
  });
  t.write(2, 48 * 4096);
  const std::vector<Completion> c = t.completions();
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(t.ea->counters().timeouts, 0u);
  *retx = t.ea->counters().tx_retx;
  return lost_at >= 0 && resent_at >= 0 ? resent_at - lost_at : -1;
}

// RFC 8985 §6.2 step 4: a PDC that has repaired a loss RACK inferred and seen no reordering
// resends a later hole without the reordering window; one that has seen a packet arrive out
// of order keeps the window.
TEST(UetRecovery_Rack, NoReorderingWindowInRecoveryUntilReorderingIsSeen) {
  uint64_t retx_plain = 0, retx_reordered = 0;
  const Time plain = second_hole_repair(0, &retx_plain);
  const Time reordered = second_hole_repair(10, &retx_reordered);
  ASSERT_GT(plain, 0);
  ASSERT_GT(reordered, 0);
  // Expect: each loss costs one resend, and the last hole goes over a microsecond sooner.
  EXPECT_EQ(retx_plain, 4u);
  EXPECT_EQ(retx_reordered, 4u);
  EXPECT_LT(plain + kMicrosecond, reordered) << plain << " vs " << reordered;
}

// Two 48-packet writes at 100 Gb/s after an RTT estimate, on one PDC: the 10th request of
// each arrives `delay` late, past the reordering window, with no loss. `first` and `second`
// count each write's resends; `spurious` the ACKs that showed one was spurious.
struct LateRequests {
  uint64_t first = 0, second = 0, spurious = 0;
};
LateRequests late_twice(Time delay, uint32_t adapt, bool rack = true) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;
  a.rack = rack;
  a.reorder_adapt_recoveries = adapt;
  a.reorder_window = kMicrosecond;  // below srtt: room to widen
  a.reorder_threshold = 2;          // the time rule decides, not the count
  Pair t(a);
  t.link.set_rate_gbps(100);
  t.write(1, 4 * 4096);
  int requests = 0;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 0 && d.pds_type == wire::PdsType::kRudReq &&
        !wire::as<wire::PdsRudRod>(d.pds)->retx() && ++requests % 48 == 10) {
      v.delay = delay;
    }
    return v;
  });
  LateRequests r;
  t.write(2, 48 * 4096);
  r.first = t.ea->counters().tx_retx;
  t.write(3, 48 * 4096);
  r.second = t.ea->counters().tx_retx - r.first;
  r.spurious = t.ea->counters().spurious_retx;
  EXPECT_EQ(t.completions().size(), 3u);
  EXPECT_EQ(t.ea->counters().timeouts, 0u);
  return r;
}

// RFC 8985 §6.2 step 4: the target gets the late request twice and says so (§3.7 `retx` on
// a PSN already acknowledged); the PDC widens its window and does not resend the next
// request that is as late. Without the adaptation it resends both.
TEST(UetRecovery_Rack, SpuriousResendWidensTheWindow) {
  const Time delay = 1250 * kNanosecond;
  const LateRequests adapted = late_twice(delay, 16);
  EXPECT_EQ(adapted.first, 1u);
  EXPECT_EQ(adapted.spurious, 1u);
  EXPECT_EQ(adapted.second, 0u);  // Expect: the second late request waited
  const LateRequests fixed = late_twice(delay, 0);
  EXPECT_EQ(fixed.first, 1u);
  EXPECT_EQ(fixed.spurious, 2u);
  EXPECT_EQ(fixed.second, 1u);
}

// UetConfig::rack off (uet-htsim's sender without -sleek): a request late past the window
// is not resent; a lost one that is not the last is repaired by the tail-loss probe.
TEST(UetRecovery_Rack, DisabledResendsNoLateRequestAndTheProbeRepairsALoss) {
  const LateRequests late = late_twice(1250 * kNanosecond, 16, /*rack=*/false);
  EXPECT_EQ(late.first, 0u);
  EXPECT_EQ(late.second, 0u);
  EXPECT_EQ(late.spurious, 0u);

  UetConfig a = config_for(kIpA);
  a.rack = false;
  Pair t(a);
  const std::vector<Completion> c = second_of_twelve_lost(t);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  // Expect: no inference from the SACKs; the probe resends the one hole, no timeout.
  EXPECT_EQ(t.ea->counters().fast_retx, 0u);
  EXPECT_EQ(t.ea->counters().tlp_probes, 1u);
  EXPECT_EQ(t.ea->counters().timeouts, 0u);
  EXPECT_EQ(t.ea->counters().tx_retx, 1u);
}

// §3.7: an ACK echoes the RETX flag of the packet that triggered it, and only that.
TEST(UetRecovery_Ack, EchoesTheTriggersRetxFlag) {
  Pair t;
  bool dropped = false;
  int retx_acks = 0, plain_acks = 0;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 0 && is_eom_request(d) && !dropped) {
      dropped = true;
      v.copies = 0;
    }
    if (from == 1 && d.pds_type == wire::PdsType::kAckCc) {
      (wire::as<wire::PdsAck>(d.pds)->retx() ? retx_acks : plain_acks)++;
    }
    return v;
  });
  t.write(1, 20 * 4096);
  ASSERT_TRUE(dropped);
  EXPECT_EQ(t.ea->counters().tx_retx, 1u);
  EXPECT_EQ(retx_acks, 1);  // the resent last packet's ACK
  EXPECT_GT(plain_acks, 0);
}

// Each timer field set out of its range: the refusal names it.
TEST(UetRecovery_Config, OutOfRangeTimersAreRefusedNamingTheField) {
  const struct {
    const char* field;
    void (*set)(UetConfig&);
  } cases[] = {
      {"rto_srtt_pct", [](UetConfig& c) { c.rto_srtt_pct = 1001; }},
      {"rto_rtt_max_pct", [](UetConfig& c) { c.rto_rtt_max_pct = 1001; }},
      {"min_rto", [](UetConfig& c) { c.min_rto = c.rto + 1; }},
      {"reorder_adapt_recoveries", [](UetConfig& c) { c.reorder_adapt_recoveries = 256; }},
  };
  for (const auto& k : cases) {
    UetConfig c = config_for(kIpA);
    k.set(c);
    const auto ep = UetEndpoint::create(c);
    EXPECT_FALSE(ep.ok()) << k.field;
    EXPECT_TRUE(testing_util::Mentions(ep.status(), k.field));
  }
}

// §3.7: the last packet of a write asks for an ACK (AR). When it overtakes the packets before
// it (sprayed over a shorter path), the target ACKs it at once as out of order, and again as
// soon as the packets it overtook have arrived, not an ack_delay later. Here the first packet
// is held 3 us and the target's ack_delay is 40 us.
TEST(UetRecovery_Ack, RequestThatOvertookIsAnsweredWhenTheHoleFills) {
  UetConfig a = config_for(kIpA);
  a.tlp = false;  // only the target's ACKs can complete the write
  UetConfig b = config_for(kIpB);
  b.ack_delay = 40 * kMicrosecond;
  b.ack_every = 64;
  testing::UetPair t(a, b, 1 << 20);
  Time held_until = 0, last_ack = 0;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 1) last_ack = t.link.now();
    const auto* ses = d.ses_as<wire::SesStandardRequest>();
    if (from == 0 && d.pds_type == wire::PdsType::kRudReq && ses != nullptr && ses->som() &&
        held_until == 0) {
      v.delay = 3 * kMicrosecond;
      held_until = t.link.now() + v.delay;
    }
    return v;
  });
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 3 * 4096}).ok());
  t.link.run(kSecond);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(t.ea->counters().tx_retx, 0u);
  // Expect: the last ACK within a few us of the held packet's arrival (link and
  // serialisation), not ack_delay (40 us) after it.
  ASSERT_GT(held_until, 0);
  EXPECT_LT(last_ack - held_until, 10 * kMicrosecond);
}

}  // namespace
}  // namespace uet
