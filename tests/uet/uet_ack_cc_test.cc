// ACK_CC in the UET engine (transport/uet/uet_endpoint.h, spec/uet.md §3.8): the initiator
// keeps new PSNs within the window the target advertises (MPR past CACK).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "tests/common/fake_link.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr size_t kIp = wire::Ethernet::kSize, kUdp = kIp + wire::Ipv4::kSize,
                 kPds = kUdp + wire::Udp::kSize;

UetConfig config_for(uint32_t ip) {
  UetConfig c;
  c.local_ip4 = ip;
  c.local_mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(ip)};
  c.seed = 5;
  c.idle_timeout = 0;  // one PDC for the whole test
  return c;
}

struct Pair {
  Pair(UetConfig a, UetConfig b)
      : ea(std::move(*UetEndpoint::create(a))),
        eb(std::move(*UetEndpoint::create(b))),
        link(ea.get(), eb.get()) {
    dst.assign(4 << 20, 0);
    src.assign(4 << 20, 0x5A);
    rkey = *eb->register_memory(dst.data(), dst.size());
  }
  std::vector<Completion> completions() {
    std::vector<Completion> c(64);
    c.resize(ea->poll_completions(c));
    return c;
  }
  std::unique_ptr<UetEndpoint> ea, eb;
  testing::FakeLink link;
  std::vector<uint8_t> src, dst;
  uint32_t rkey = 0;
};

// The frame's UDP checksum as "not computed" (accepted, §2.1), after a test rewrote it.
void drop_udp_checksum(std::vector<uint8_t>& bytes) { bytes[kUdp + 6] = bytes[kUdp + 7] = 0; }

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

}  // namespace
}  // namespace uet
