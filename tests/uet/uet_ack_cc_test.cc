// ACK_CC in the UET engine (transport/uet/uet_endpoint.h, spec/uet.md §3.8): the initiator
// keeps new PSNs within the window the target advertises (MPR past CACK), and the target
// fills the NSCC state (service_time, rcvd_bytes, ooo_count) that the sender's NSCC reads.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/wire/checksum.h"

namespace uet {
namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr size_t kIp = wire::Ethernet::kSize, kUdp = kIp + wire::Ipv4::kSize,
                 kPds = kUdp + wire::Udp::kSize;

UetConfig config_for(uint32_t ip) {
  UetConfig c = testing::uet_config(ip, /*seed=*/5);
  c.idle_timeout = 0;  // one PDC for the whole test
  return c;
}

// A writes from 4 MiB of 0x5A into a 4 MiB region at B.
struct Pair : testing::UetPair {
  Pair(const UetConfig& a, const UetConfig& b) : UetPair(a, b, 4 << 20) {}
};

// The frame's UDP checksum as "not computed" (accepted, §2.1), after a test rewrote it.
void drop_udp_checksum(std::vector<uint8_t>& bytes) { bytes[kUdp + 6] = bytes[kUdp + 7] = 0; }

void set_ip_ce(std::vector<uint8_t>& bytes) {
  bytes[kIp + 1] |= 3;
  bytes[kIp + 10] = bytes[kIp + 11] = 0;
  const uint16_t sum = wire::ipv4_header_checksum(bytes.data() + kIp, wire::Ipv4::kSize);
  bytes[kIp + 10] = static_cast<uint8_t>(sum >> 8);
  bytes[kIp + 11] = static_cast<uint8_t>(sum);
}

const wire::PdsAckCc* ack_cc(const wire::Decoded& d) {
  return d.pds_type == wire::PdsType::kAckCc ? d.pds_as<wire::PdsAckCc>() : nullptr;
}

// What the initiator may send as the target's ACK_CCs reach it: each ACK emitted at t arrives
// at t + FakeLink::kDelay (no rate, no extra delay), before anything the initiator sends then.
// For every PSN sent for the first time, how far it lies past the latest CACK + MPR.
struct WindowWatch {
  struct Seen {
    Time at;
    uint32_t cack;
    uint8_t mpr;
  };
  std::vector<Seen> acks;
  size_t arrived = 0;
  std::set<uint32_t> sent;
  int first_flight = 0;       // new PSNs sent before any ACK_CC arrived
  int32_t worst = INT32_MIN;  // max over later new PSNs of psn - (cack + mpr)
  void on_ack(Time emitted, const wire::PdsAckCc& h) {
    acks.push_back({emitted + testing::FakeLink::kDelay, h.cack_psn(), h.mpr()});
  }
  void on_data(Time now, uint32_t psn) {
    while (arrived < acks.size() && acks[arrived].at <= now) ++arrived;
    if (!sent.insert(psn).second) return;  // a retransmission
    if (arrived == 0) {
      ++first_flight;
      return;
    }
    const Seen& a = acks[arrived - 1];
    worst = std::max(worst, static_cast<int32_t>(psn - (a.cack + a.mpr)));
  }
};

// A target whose receive window (mpr 64) is a quarter of the initiator's: once its first
// ACK_CC has told the initiator so, the initiator never sends a new PSN more than 64 past the
// target's CACK, so the target refuses none as out of window, and the window is used in full.
TEST(UetAckCc_Mpr, TargetWithSmallerWindowIsNeverOverrun) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.payload_bytes = b.payload_bytes = 256;  // the PSN window binds, not the byte window
  a.window_bytes = 1 << 20;
  b.mpr = 64;
  Pair t(a, b);
  WindowWatch w;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (const wire::PdsAckCc* h = ack_cc(d); from == 1 && h != nullptr) {
      EXPECT_EQ(h->mpr(), 64);  // §3.8: in PSNs
      w.on_ack(t.link.now(), *h);
    }
    if (from == 0 && d.pds_type == wire::PdsType::kRudReq) {
      w.on_data(t.link.now(), wire::as<wire::PdsRudRod>(d.pds)->psn());
    }
    return testing::Verdict{};
  });
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 256}).ok());
  t.link.run(kSecond);  // the PDC is established; the initiator has heard the MPR
  ASSERT_TRUE(t.ea->post_write({2, kIpB, t.rkey, 0, t.src.data(), 600 * 256}).ok());
  t.link.run(kSecond);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  // Expect: no new PSN past CACK + MPR, exactly reaching it; nothing refused for the window.
  EXPECT_EQ(w.first_flight, 1);  // the first write's one packet
  EXPECT_EQ(w.worst, 0);
  EXPECT_EQ(t.eb->counters().rx_out_of_window, 0u);
}

// ACKs rewritten to advertise MPR 10: before the first ACK_CC the initiator sends its
// configured window; after it, never a new PSN beyond the latest CACK + 10.
TEST(UetAckCc_Mpr, InitiatorHonoursTheAdvertisedMpr) {
  Pair t(config_for(kIpA), config_for(kIpB));
  WindowWatch w;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
    if (const wire::PdsAckCc* h = ack_cc(d); from == 1 && h != nullptr) {
      bytes[kPds + 13] = 10;  // mpr
      drop_udp_checksum(bytes);
      w.on_ack(t.link.now(), *wire::as<wire::PdsAckCc>(bytes.data() + kPds));
    }
    if (from == 0 && d.pds_type == wire::PdsType::kRudReq) {
      w.on_data(t.link.now(), wire::as<wire::PdsRudRod>(d.pds)->psn());
    }
    return testing::Verdict{};
  });
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 200 * 4096}).ok());
  t.link.run(kSecond);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  // Expect: a first flight wider than 10 (the configured window), then CACK + 10 at most.
  EXPECT_GT(w.first_flight, 10);
  EXPECT_EQ(w.worst, 0);
  EXPECT_EQ(t.eb->counters().rx_out_of_window, 0u);
}

// A write refused packet by packet (a bad key) holds the target's CACK behind every refused
// PSN until the initiator's clear PSN passes it (§3.3). Longer than the MPR, it still
// completes and the window is kept: with no request in range left to carry the clear PSN, a
// CLEAR control packet (§3.12) does.
TEST(UetAckCc_Mpr, RefusedPsnsBehindCackAreClearedWithoutOverrunningTheWindow) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.payload_bytes = b.payload_bytes = 256;
  b.mpr = 64;
  Pair t(a, b);
  WindowWatch w;
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (const wire::PdsAckCc* h = ack_cc(d); from == 1 && h != nullptr) w.on_ack(t.link.now(), *h);
    if (from == 0 && d.pds_type == wire::PdsType::kRudReq) {
      w.on_data(t.link.now(), wire::as<wire::PdsRudRod>(d.pds)->psn());
    }
    return testing::Verdict{};
  });
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 256}).ok());
  t.link.run(kSecond);  // the initiator has heard the MPR
  ASSERT_TRUE(t.ea->post_write({2, kIpB, t.rkey + 9, 0, t.src.data(), 200 * 256}).ok());
  ASSERT_TRUE(t.ea->post_write({3, kIpB, t.rkey, 0, t.src.data(), 200 * 256}).ok());
  t.link.run(kSecond);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 3u);
  // Expect: the refusal, then the good write; no PSN past CACK + MPR, none timed out.
  EXPECT_EQ(c[1].status, OpStatus::kRemoteAccessError) << to_string(c[1].status);
  EXPECT_EQ(c[2].status, OpStatus::kSuccess) << to_string(c[2].status);
  EXPECT_EQ(w.worst, 0);
  EXPECT_EQ(t.eb->counters().rx_out_of_window, 0u);
  EXPECT_EQ(t.ea->counters().timeouts, 0u);
  EXPECT_GE(t.ea->counters().tx_clear, 1u);
  EXPECT_EQ(t.eb->counters().rx_clear, t.ea->counters().tx_clear);
}

// Collects the target's ACK_CC headers and strips AR from the initiator's requests (so the
// target ACKs after ack_delay or ack_every); once `reorder` is set, the first request sent
// after it arrives last.
void collect_acks_without_ar(Pair& t, std::vector<wire::PdsAckCc>& acks, const bool& reorder) {
  t.link.set_filter([&acks, &reorder, requests = 0](int from, const wire::Decoded& d,
                                                    std::vector<uint8_t>& bytes) mutable {
    testing::Verdict v;
    if (const wire::PdsAckCc* h = ack_cc(d); from == 1 && h != nullptr) acks.push_back(*h);
    if (from == 0 && d.pds_type == wire::PdsType::kRudReq) {
      bytes[kPds + 1] &= ~0x08;  // no AR
      drop_udp_checksum(bytes);
      if (reorder && requests++ == 0) v.delay = kMicrosecond;
    }
    return v;
  });
}

// The NSCC state of ACK_CC, as the target fills it on a fake-link exchange: service_time is
// how long the trigger waited for its ACK (here the coalescing delay, in ns), rcvd_bytes the
// payload received so far, ooo_count the requests that arrived past a hole.
TEST(UetAckCc_State, TargetFillsServiceTimeReceivedBytesAndOutOfOrderCount) {
  UetConfig b = config_for(kIpB);
  b.ack_delay = 5 * kMicrosecond;
  Pair t(config_for(kIpA), b);
  std::vector<wire::PdsAckCc> acks;
  bool reorder = false;
  collect_acks_without_ar(t, acks, reorder);
  // Three packets arrive together and wait ack_delay for one ACK.
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 3 * 4096}).ok());
  t.link.run(kSecond);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].cc_type(), wire::CcType::kNscc);
  EXPECT_EQ(acks[0].service_time(), 5000u);  // ns
  EXPECT_EQ(acks[0].rcvd_bytes(), 3u * 4096);
  EXPECT_EQ(acks[0].ooo_count(), 0u);
  EXPECT_EQ(acks[0].rc(), false);
  EXPECT_EQ(acks[0].rcv_cwnd_pend(), 0u);
  // Five more, the first delayed: the other four arrive past a hole and are ACKed at once.
  reorder = true;
  ASSERT_TRUE(t.ea->post_write({2, kIpB, t.rkey, 0, t.src.data(), 4 * 4096 + 100}).ok());
  t.link.run(kSecond);
  ASSERT_GE(acks.size(), 3u);
  EXPECT_EQ(acks[1].service_time(), 0u);  // out of order: ACKed as it arrived
  EXPECT_EQ(acks[1].ooo_count(), 4u);
  EXPECT_EQ(acks.back().ooo_count(), 4u);
  EXPECT_EQ(acks.back().rcvd_bytes(), 7u * 4096 + 100);
  EXPECT_EQ(acks.back().cack_psn(), acks[0].cack_psn() + 5);
  EXPECT_EQ(t.completions().size(), 2u);
}

// ack_out_of_order = false (uet-htsim's sink): requests past a hole wait for ack_every or
// ack_delay like any other, so the five of a write whose first arrives last share one ACK.
TEST(UetAckCc_State, OutOfOrderRequestsCoalesceWhenNotAckedAtOnce) {
  UetConfig b = config_for(kIpB);
  b.ack_delay = 5 * kMicrosecond;
  b.ack_every = 8;
  b.ack_out_of_order = false;
  Pair t(config_for(kIpA), b);
  std::vector<wire::PdsAckCc> acks;
  const bool reorder = true;
  collect_acks_without_ar(t, acks, reorder);
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 4 * 4096 + 100}).ok());
  t.link.run(kSecond);
  // Expect: one ACK, ack_delay after the first four (not one each as they arrived), for all five.
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].ooo_count(), 4u);
  EXPECT_EQ(acks[0].rcvd_bytes(), 4u * 4096 + 100);
  // ns: its trigger, the late first request, waited for the deadline the second one set.
  EXPECT_EQ(acks[0].service_time(), 4000u);
  EXPECT_EQ(t.completions().size(), 1u);
}

// A target that holds every packet 20 us before its ACK and says so (service_time), over a
// 4 us fabric whose packets are all CE-marked. NSCC must judge the 4 us: marks without queueing
// delay leave the window alone (cc/nscc.h), so the write runs at a full window per round trip.
// Judging the 24 us instead, NSCC sees 20 us of queueing and cuts the window to one packet.
TEST(UetAckCc_State, NsccRttSampleExcludesServiceTime) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.base_rtt = b.base_rtt = 4 * kMicrosecond;
  Pair t(a, b);
  t.link.set_rate_gbps(100);
  t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
    testing::Verdict v;
    if (from == 0 && d.pds_type == wire::PdsType::kRudReq) set_ip_ce(bytes);
    if (from == 1 && ack_cc(d) != nullptr) {
      v.delay = 20 * kMicrosecond;
      bytes[kPds + 24] = 20000 >> 8;  // service_time, ns
      bytes[kPds + 25] = 20000 & 0xFF;
      drop_udp_checksum(bytes);
    }
    return v;
  });
  constexpr uint64_t kBytes = 256 * 4096;
  ASSERT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), kBytes}).ok());
  t.link.run(kSecond);
  const std::vector<Completion> c = t.completions();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  // Expect: NSCC's maxwnd (1.5 x 100 Gb/s x 4 us = 75 KB, 18 packets) per ~25 us round trip,
  // so ~15 round trips (~370 us); a window of one packet would take milliseconds.
  EXPECT_LT(t.link.now(), 600 * kMicrosecond);
}

// A target reporting the largest receiver penalty (rcv_cwnd_pend 127) on every ACK_CC of a
// 4 us fabric: the sender takes the newly received bytes (the rcvd_bytes delta) x 127/128
// off its window at each ACK, so the same write takes many times longer than with penalty 0.
TEST(UetAckCc_State, ReceiverPenaltyCutsTheSendersWindow) {
  auto run = [](uint8_t pend) {
    UetConfig a = config_for(kIpA), b = config_for(kIpB);
    a.base_rtt = b.base_rtt = 4 * kMicrosecond;
    Pair t(a, b);
    t.link.set_rate_gbps(100);
    t.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
      if (const wire::PdsAckCc* h = ack_cc(d);
          from == 1 && h != nullptr && h->cc_type() == wire::CcType::kNscc) {
        bytes[kPds + 26] = pend;  // rc 0, rcv_cwnd_pend
        drop_udp_checksum(bytes);
      }
      return testing::Verdict{};
    });
    EXPECT_TRUE(t.ea->post_write({1, kIpB, t.rkey, 0, t.src.data(), 512 * 4096}).ok());
    t.link.run(kSecond);
    EXPECT_EQ(t.completions().size(), 1u);
    return t.link.now();
  };
  const Time free = run(0), penalised = run(127);
  // Expect: a window of a few packets per round trip instead of a full one (~180 us).
  EXPECT_GT(penalised, 5 * free);
}

}  // namespace
}  // namespace uet
