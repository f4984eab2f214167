// The UET engine on a fake host: two endpoints joined by an in-memory link with simulated
// time, where the test decides which frames are lost, duplicated, reordered or trimmed. (On
// the simulator: uet_fabric_test.cc.)
#include "transport/uet/uet_endpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/uet_pair.h"
#include "transport/wire/checksum.h"

namespace uet {
namespace {

using testing::drain;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

UetConfig config_for(uint32_t ip) { return testing::uet_config(ip, /*seed=*/99); }

// Two UET endpoints on the shared fake link (tests/common/uet_pair.h): simulated time, and a
// filter that decides per frame how many copies arrive (0 = lost) and may rewrite its bytes.
struct FakeLink : testing::UetLink {
  FakeLink(const UetConfig& a, const UetConfig& b) : UetLink(a, b, /*jitter_seed=*/7) {}
};

struct Transfer {
  std::vector<uint8_t> src, dst;
  uint32_t rkey = 0;
};

Transfer make_transfer(FakeLink& link, size_t bytes) {
  Transfer t;
  t.src.resize(bytes);
  std::mt19937 rng(1);
  for (auto& b : t.src) b = static_cast<uint8_t>(rng());
  t.dst.assign(bytes + 4096, 0);
  t.rkey = *link.b().register_memory(t.dst.data(), t.dst.size());
  return t;
}

bool is_data(const wire::Decoded& d) { return d.pds_type == wire::PdsType::kRudReq; }

TEST(UetEndpoint_Write, OneMegabyteArrivesIntactWithoutRetransmission) {
  FakeLink link(config_for(kIpA), config_for(kIpB));
  Transfer t = make_transfer(link, 1 << 20);
  ASSERT_TRUE(link.a().post_write({7, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 7u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[0].bytes, 1u << 20);
  EXPECT_TRUE(std::equal(t.src.begin(), t.src.end(), t.dst.begin()));
  EXPECT_EQ(link.a().counters().tx_data, 256u);
  EXPECT_EQ(link.a().counters().tx_retx, 0u);
  // One PDC each side, closed once idle (spec/uet.md §3.12).
  EXPECT_EQ(link.a().counters().pdcs_closed, 1u);
  EXPECT_EQ(link.b().counters().pdcs_closed, 1u);
  EXPECT_EQ(link.b().pdcs_in_use(), 0u);
}

// Zero-copy transmit: with tx_by_reference every data packet, first sends and the resend of
// a lost one alike, references its payload in the posted buffer instead of carrying a copy,
// and the frames the link gathers are byte for byte those of the copying engine.
TEST(UetEndpoint_Write, ByReferenceSendsTheSameFramesWithoutCopyingThePayload) {
  std::vector<uint32_t> digests[2];
  for (const bool by_ref : {false, true}) {
    UetConfig ca = config_for(kIpA);
    ca.tx_by_reference = by_ref;
    FakeLink link(ca, config_for(kIpB));
    Transfer t = make_transfer(link, 100'003);  // an odd last packet
    int data_seen = 0;
    link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
      return from == 0 && is_data(d) && ++data_seen == 5 ? 0 : 1;  // lose one: resent
    });
    ASSERT_TRUE(link.a().post_write({3, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
    link.run(kSecond);
    const auto c = drain(link.a());
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OpStatus::kSuccess);
    EXPECT_TRUE(std::equal(t.src.begin(), t.src.end(), t.dst.begin()));
    EXPECT_GE(link.a().counters().tx_retx, 1u);
    const uint64_t referenced =
        testing::collect_references(link.log(), by_ref, t.src, &digests[by_ref]);
    // Every byte once, and the lost packet's bytes again.
    if (by_ref) {
      EXPECT_GT(referenced, t.src.size());
    }
  }
  EXPECT_EQ(digests[0], digests[1]);
}

TEST(UetEndpoint_Loss, LosingTheSynIsRepairedByTimeout) {
  FakeLink link(config_for(kIpA), config_for(kIpB));
  Transfer t = make_transfer(link, 4096);
  bool dropped = false;
  link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && is_data(d) && d.pds_as<wire::PdsRudRod>()->syn() && !dropped) {
      dropped = true;
      return 0;
    }
    return 1;
  });
  ASSERT_TRUE(link.a().post_write({1, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(t.src.begin(), t.src.end(), t.dst.begin()));
  EXPECT_EQ(link.a().counters().timeouts, 1u);
  EXPECT_EQ(link.a().counters().tx_retx, 1u);
}

TEST(UetEndpoint_Loss, EveryTenthPacketLostOnceResendsExactlyThose) {
  FakeLink link(config_for(kIpA), config_for(kIpB));
  Transfer t = make_transfer(link, 200 * 4096);
  std::map<uint32_t, int> seen;
  int dropped = 0;
  link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from != 0 || !is_data(d)) return 1;
    const uint32_t psn = d.pds_as<wire::PdsRudRod>()->psn();
    if (seen[psn]++ == 0 && seen.size() % 10 == 5) {  // first and middle packets included
      ++dropped;
      return 0;
    }
    return 1;
  });
  ASSERT_TRUE(link.a().post_write({1, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(t.src.begin(), t.src.end(), t.dst.begin()));
  // Expect: selective repair, not go-back-N: one retransmission per lost packet.
  EXPECT_EQ(link.a().counters().tx_retx, static_cast<uint64_t>(dropped))
      << "timeouts " << link.a().counters().timeouts << " fast " << link.a().counters().fast_retx;
  EXPECT_EQ(link.a().counters().tx_data, 200u);
}

TEST(UetEndpoint_Loss, LastPacketAndAcksLost) {
  FakeLink link(config_for(kIpA), config_for(kIpB));
  Transfer t = make_transfer(link, 50 * 4096);
  std::mt19937 rng(3);
  bool last_dropped = false;
  link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 1) return rng() % 3 == 0 ? 0 : 1;  // a third of the ACKs vanish
    const auto* ses = d.ses_as<wire::SesStandardRequest>();
    if (ses != nullptr && ses->eom() && !last_dropped) {
      last_dropped = true;
      return 0;
    }
    return 1;
  });
  ASSERT_TRUE(link.a().post_write({1, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(t.src.begin(), t.src.end(), t.dst.begin()));
}

TEST(UetEndpoint_Reorder, ReorderingAndDuplicatesDeliverOnce) {
  FakeLink link(config_for(kIpA), config_for(kIpB));
  Transfer t = make_transfer(link, 100 * 4096);
  link.set_jitter(20 * kMicrosecond);  // packets overtake each other
  link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    return from == 0 && is_data(d) ? 2 : 1;  // every request arrives twice
  });
  ASSERT_TRUE(link.a().post_write({1, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(t.src.begin(), t.src.end(), t.dst.begin()));
  EXPECT_GE(link.b().counters().rx_duplicates, 100u);
  EXPECT_EQ(link.b().counters().rx_data, link.a().counters().tx_data * 2 +
                                             link.a().counters().tx_retx * 2);
}

// spec/uet.md §3.14: a trimmed request is NACKed and resent at once, without a timeout.
TEST(UetEndpoint_Trim, TrimmedRequestIsNackedAndResent) {
  FakeLink link(config_for(kIpA), config_for(kIpB));
  Transfer t = make_transfer(link, 20 * 4096);
  bool trimmed = false;
  int requests = 0;
  link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
    if (from == 0 && is_data(d) && ++requests == 5 && !trimmed) {
      trimmed = true;  // the 5th request (SOM=0) cut to its headers, as a switch does
      const size_t cut = 14 + 20 + 8 + 12 + 44;
      bytes.resize(cut);
      auto* ip = wire::as<wire::Ipv4>(bytes.data() + 14);
      ip->set_total_length(static_cast<uint16_t>(cut - 14));
      ip->set_dscp(45);
      ip->set_checksum(wire::ipv4_header_checksum(bytes.data() + 14, 20));
      auto* udp = wire::as<wire::Udp>(bytes.data() + 34);
      udp->set_length(static_cast<uint16_t>(cut - 34));
      udp->set_checksum(0);
    }
    return 1;
  });
  ASSERT_TRUE(link.a().post_write({1, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(t.src.begin(), t.src.end(), t.dst.begin()));
  EXPECT_EQ(link.b().counters().rx_trimmed, 1u);
  EXPECT_EQ(link.b().counters().tx_nacks, 1u);
  EXPECT_EQ(link.a().counters().nack_retx, 1u);
  EXPECT_EQ(link.a().counters().timeouts, 0u);
}

TEST(UetEndpoint_Errors, DeadPeerEndsInRetriesExhausted) {
  UetConfig a = config_for(kIpA);
  a.max_retries = 3;
  FakeLink link(a, config_for(kIpB));
  Transfer t = make_transfer(link, 8192);
  link.set_filter([](int from, const wire::Decoded&, std::vector<uint8_t>&) { return from == 0 ? 0 : 1; });
  ASSERT_TRUE(link.a().post_write({5, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRetriesExhausted);
  // Expect: the timeouts back off 50, 100, 200 us; the fourth ends it at ~750 us.
  // The first RTO times out both packets; from then on the window (cut by the timeout) holds
  // one resend at a time, so only the first PSN is in flight to time out again, twice.
  EXPECT_EQ(link.a().counters().timeouts, 2u + 2);
  EXPECT_GT(link.now(), 700 * kMicrosecond);
  EXPECT_LT(link.now(), 900 * kMicrosecond);
  EXPECT_EQ(link.a().pdcs_in_use(), 0u);
}

TEST(UetEndpoint_Errors, BadKeyAndBadRangeAreRemoteAccessErrors) {
  FakeLink link(config_for(kIpA), config_for(kIpB));
  Transfer t = make_transfer(link, 8192);
  ASSERT_TRUE(link.a().post_write({1, kIpB, t.rkey + 5, 0, t.src.data(), 4096}).ok());
  ASSERT_TRUE(link.a().post_write({2, kIpB, t.rkey, t.dst.size() - 100, t.src.data(), 4096}).ok());
  ASSERT_TRUE(link.a().post_write({3, kIpB, t.rkey, 0, t.src.data(), 4096}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(c[1].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(c[2].status, OpStatus::kSuccess);
  EXPECT_EQ(link.b().counters().rx_bad_key, 1u);
  EXPECT_EQ(link.b().counters().rx_bad_range, 1u);
  EXPECT_TRUE(std::equal(t.src.begin(), t.src.begin() + 4096, t.dst.begin()));
}

TEST(UetEndpoint_Config, RefusedWithTheFieldAndRange) {
  UetConfig c = config_for(kIpA);
  c.mpr = 100;
  const auto ep = UetEndpoint::create(c);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(std::string(ep.status().message()).find("mpr"), std::string::npos);
  EXPECT_NE(std::string(ep.status().message()).find("power of 2"), std::string::npos);
}

// Hostile peers: a request naming a PDC we never made, and more SYNs than the table holds.
// A RUD request from `src` (PDS only, no SES) handed to `target`: a SYN opening PDC `spdcid`,
// or a request for the target's PDC `dpdcid`.
void send_request(UetEndpoint& target, uint32_t src, uint16_t spdcid, bool syn, uint16_t dpdcid) {
  std::vector<uint8_t> buf(256);
  wire::FrameBuilder fb(buf, wire::Encap{.src_ip4 = src, .dst_ip4 = kIpB, .sport = 0xC000});
  auto* p = fb.add<wire::PdsRudRod>();
  p->set_type(wire::PdsType::kRudReq);
  p->set_psn(1000);
  p->set_spdcid(spdcid);
  if (syn) {
    p->set_syn(true);
  } else {
    p->set_dpdcid(dpdcid);
  }
  size_t n = 0;
  ASSERT_EQ(fb.finish(&n), wire::WireError::kOk);
  testing::deliver(target, std::span<const uint8_t>(buf.data(), n));
}

TEST(UetEndpoint_Hostile, UnknownPdcAndSynFloodAreBoundedAndNacked) {
  UetConfig b = config_for(kIpB);
  b.max_pdcs = 4;
  auto target = std::move(*UetEndpoint::create(b));
  auto send = [&](uint16_t spdcid, bool syn, uint16_t dpdcid) {
    send_request(*target, kIpA, spdcid, syn, dpdcid);
  };
  send(1, false, 3);
  EXPECT_EQ(target->counters().rx_unknown_pdc, 1u);
  for (uint16_t i = 0; i < 100; ++i) send(static_cast<uint16_t>(100 + i), true, 0);
  EXPECT_EQ(target->pdcs_in_use(), 4u);
  EXPECT_EQ(target->counters().rx_no_pdc_avail, 96u);
  // The NACKs go out (a bounded number), with the codes the spec gives.
  std::vector<uint8_t> out(512);
  std::map<wire::NackCode, int> codes;
  for (int i = 0; i < 200; ++i) {
    Frame f{out.data(), 0, 0, static_cast<uint32_t>(out.size())};
    Frame* fp = &f;
    if (target->tx(std::span<Frame* const>(&fp, 1), 0) == 0) break;
    wire::Decoded d;
    ASSERT_EQ(wire::decode_frame(std::span(out.data(), f.len), &d), wire::WireError::kOk);
    if (d.pds_type == wire::PdsType::kNack) ++codes[d.pds_as<wire::PdsNack>()->nack_code()];
  }
  EXPECT_EQ(codes[wire::NackCode::kInvDpdcid], 1);
  EXPECT_GE(codes[wire::NackCode::kNoPdcAvail], 1);
  EXPECT_LE(codes[wire::NackCode::kNoPdcAvail], 64);  // the stateless ring is bounded
}

// ------------------------------------------------------------------ memory

// Every table at its largest bound: an endpoint that has done nothing holds none of them.
TEST(UetMemory_Create, HoldsNoTableUntilUsed) {
  UetConfig c = config_for(kIpB);
  c.max_pdcs = 65535;
  c.max_ops = 65536;
  c.max_recvs = 65536;
  c.max_recv_messages = 4096;
  c.rudi_packets = 65536;
  c.rudi_responses = 65536;
  c.uud_queue = 65536;
  c.rod_buffers = 65535;
  c.mpr = 4096;
  auto ep = std::move(*UetEndpoint::create(c));
  // Expect: no PDC made, no byte held (the old engine held hundreds of MB here).
  EXPECT_EQ(ep->pdcs_allocated(), 0u);
  EXPECT_EQ(ep->memory_bytes(), 0u);
}

// A SYN flood from 1000 PDC ids against max_pdcs 100: the table grows to 100 and no further,
// and a second flood costs nothing more.
TEST(UetMemory_Pdc, SynFloodGrowsTheTableToMaxPdcsAndNoFurther) {
  UetConfig c = config_for(kIpB);
  c.max_pdcs = 100;
  auto target = std::move(*UetEndpoint::create(c));
  for (uint16_t i = 0; i < 1000; ++i)
    send_request(*target, kIpA, static_cast<uint16_t>(1 + i), true, 0);
  EXPECT_EQ(target->pdcs_allocated(), 100u);
  EXPECT_EQ(target->counters().rx_no_pdc_avail, 900u);
  const size_t after_first = target->memory_bytes();
  for (uint16_t i = 0; i < 1000; ++i)
    send_request(*target, kIpA + 1, static_cast<uint16_t>(1 + i), true, 0);
  EXPECT_EQ(target->pdcs_allocated(), 100u);
  EXPECT_EQ(target->memory_bytes(), after_first);
  // A target PDC holds its state and receive bitmaps, no send window (a few KB, not the
  // initiator's mpr slots).
  std::printf("100 target PDCs: %zu bytes\n", after_first);
  EXPECT_LT(after_first, 100u * 4096);
}

// An application that polls one completion at a time and always leaves one waiting: the
// queue drops what was polled, so 2000 writes cost what the first 100 did (the queue used to
// keep every polled entry until it was empty once, growing by one per write).
TEST(UetMemory_Completions, PartialPollsDoNotGrowTheQueue) {
  UetConfig a = config_for(kIpA);
  a.idle_timeout = 0;  // one PDC throughout
  FakeLink link(a, config_for(kIpB));
  Transfer t = make_transfer(link, 256);
  ASSERT_TRUE(link.a().post_write({0, kIpB, t.rkey, 0, t.src.data(), 256}).ok());
  size_t after_100 = 0;
  for (uint64_t i = 1; i <= 2000; ++i) {
    ASSERT_TRUE(link.a().post_write({i, kIpB, t.rkey, 0, t.src.data(), 256}).ok());
    link.run(link.now() + kMillisecond);
    Completion c;
    ASSERT_EQ(link.a().poll_completions(std::span(&c, 1)), 1u);
    EXPECT_EQ(c.wr_id, i - 1);
    if (i == 100) after_100 = link.a().memory_bytes();
  }
  // Expect: memory flat after warm-up, and within the bound.
  EXPECT_EQ(link.a().memory_bytes(), after_100);
  EXPECT_LE(link.a().memory_bytes(), UetEndpoint::memory_bound(a, 0));
}

// The send window grows with the flight, from 16 slots by doubling, never past mpr, and goes
// back when its PDC closes: a one-packet write takes 16 slots, a long write fills it to mpr
// (window_bytes allows twice as many packets), and the idle PDC's close returns every slot.
TEST(UetMemory_Window, SendWindowGrowsWithTheFlightToMprAndGoesBackAtClose) {
  UetConfig a = config_for(kIpA);
  a.mpr = 128;
  a.payload_bytes = 1024;  // window_bytes: 256 packets
  UetConfig b = config_for(kIpB);
  b.mpr = 128;
  b.payload_bytes = 1024;
  FakeLink link(a, b);
  Transfer t = make_transfer(link, 1 << 20);
  size_t most = 0, most_bytes = 0;
  link.set_filter([&](int, const wire::Decoded&, std::vector<uint8_t>&) {
    most = std::max(most, link.a().window_slots());
    most_bytes = std::max(most_bytes, link.a().memory_bytes());
    return 1;
  });
  ASSERT_TRUE(link.a().post_write({1, kIpB, t.rkey, 0, t.src.data(), 256}).ok());
  link.run(link.now() + 100 * kMicrosecond);
  EXPECT_EQ(most, 16u);
  const size_t one_packet = most_bytes;
  ASSERT_TRUE(link.a().post_write({2, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
  link.run(link.now() + 100 * kMicrosecond);
  ASSERT_EQ(drain(link.a()).size(), 2u);
  EXPECT_TRUE(std::equal(t.src.begin(), t.src.end(), t.dst.begin()));
  // Expect: the window at mpr (a power of 2) and no further, its 32-byte slots counted.
  EXPECT_EQ(most, 128u);
  EXPECT_GE(most_bytes - one_packet, (128u - 16u) * 16u);
  EXPECT_LE(most_bytes, UetEndpoint::memory_bound(a, 0));
  // Expect: once idle, the PDC closes and its send window goes back.
  link.run(link.now() + 10 * a.idle_timeout);
  EXPECT_EQ(link.a().pdcs_in_use(), 0u);
  EXPECT_EQ(link.a().window_slots(), 0u);
  const size_t closed = link.a().memory_bytes();
  // A second long write opens a new PDC (the freed one's other parts parked for it): its
  // window grows again and goes back again, and only it.
  most = most_bytes = 0;
  ASSERT_TRUE(link.a().post_write({3, kIpB, t.rkey, 0, t.src.data(), t.src.size()}).ok());
  link.run(link.now() + 100 * kMicrosecond);
  ASSERT_EQ(drain(link.a()).size(), 1u);
  EXPECT_EQ(most, 128u);
  EXPECT_GE(most_bytes, closed + 128u * 16u);
  const size_t open = link.a().memory_bytes();
  link.run(link.now() + 10 * a.idle_timeout);
  EXPECT_EQ(link.a().window_slots(), 0u);
  EXPECT_EQ(link.a().memory_bytes(), open - 128u * 16u);
}

}  // namespace
}  // namespace uet
