// The UET engine's delivery modes besides RUD (transport/uet/uet_rod.cc, uet_rudi.cc,
// uet_uud.cc): ROD (in-order execution at the target, selective repair), RUDI (no PDC, packet
// IDs, one response per request) and UUD (no PDC, no ACK). On the fake link
// (tests/common/fake_link.h: simulated time, every emitted frame must decode); on the simulator
// in uet_fabric_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

using testing::drain;
using testing::nonzero_pattern;
using testing::out_of_order_chunks;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr size_t kPkt = 4096;  // UetConfig::payload_bytes default

UetConfig config_for(uint32_t ip) { return testing::uet_config(ip, /*seed=*/5); }

// A and B on the fake link (tests/common/uet_pair.h); the filter returns the copies (0 = lost).
struct Link : testing::UetLink {
  explicit Link(const UetConfig& a = config_for(kIpA), const UetConfig& b = config_for(kIpB))
      : UetLink(a, b, /*jitter_seed=*/13) {}
};

bool is_req(const wire::Decoded& d, wire::PdsType t) { return d.pds_type == t; }
uint32_t psn_of(const wire::Decoded& d) { return d.pds_as<wire::PdsRudRod>()->psn(); }

// ------------------------------------------------------------------ ROD

class UetModes_RodVsRud : public ::testing::TestWithParam<DeliveryMode> {};

// 64 single-packet WRITEs to consecutive chunks; every 7th PSN lost on its first try and the
// rest jittered. Expect (ROD): at every moment the target's written chunks are a prefix
// (placement in PSN order), completions in posting order, every byte intact. RUD places out of
// order (the check can fail), which shows the probe sees reordering at all.
TEST_P(UetModes_RodVsRud, WritesArePlacedInPsnOrderUnderLossAndReordering) {
  const DeliveryMode mode = GetParam();
  Link link;
  const size_t n = 64;
  std::vector<uint8_t> src = nonzero_pattern(n * kPkt, 1), dst(n * kPkt, 0);
  const uint32_t rkey = *link.b().register_memory(dst.data(), dst.size());
  std::map<uint32_t, int> seen;
  link.set_jitter(6 * kMicrosecond);
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from != 0 || d.pds_as<wire::PdsRudRod>() == nullptr) return 1;
    return seen[psn_of(d)]++ == 0 && seen.size() % 7 == 3 ? 0 : 1;
  });
  size_t worst = 0;
  link.set_probe([&] { worst = std::max(worst, out_of_order_chunks(dst, kPkt)); });
  for (size_t i = 0; i < n; ++i) {
    WriteRequest wr{i, kIpB, rkey, i * kPkt, src.data() + i * kPkt, kPkt, mode};
    ASSERT_TRUE(link.a().post_write(wr).ok());
  }
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(c[i].wr_id, i);
    EXPECT_EQ(c[i].status, OpStatus::kSuccess);
  }
  EXPECT_EQ(dst, src);
  if (mode == DeliveryMode::kRod) {
    EXPECT_EQ(worst, 0u) << "ROD placed a chunk before an earlier one";
    EXPECT_GT(link.b().counters().rod_staged, 0u);
    EXPECT_EQ(link.b().counters().rod_executed_late, link.b().counters().rod_staged);
  } else {
    EXPECT_GT(worst, 0u) << "RUD should place out of order here";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, UetModes_RodVsRud,
                         ::testing::Values(DeliveryMode::kRod, DeliveryMode::kRud),
                         [](const auto& tp) {
                           return tp.param == DeliveryMode::kRod ? std::string("Rod")
                                                                 : std::string("Rud");
                         });

// Without reordering, a lost PSN is the only thing resent: staged packets behind it are
// SACKed, not resent (selective repair, not go-back-N).
TEST(UetModes_Rod, OnlyTheLostPsnsAreResent) {
  Link link;
  std::vector<uint8_t> src = nonzero_pattern(200 * kPkt, 2), dst(200 * kPkt, 0);
  const uint32_t rkey = *link.b().register_memory(dst.data(), dst.size());
  std::map<uint32_t, int> seen;
  int dropped = 0;
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from != 0 || !is_req(d, wire::PdsType::kRodReq)) return 1;
    if (seen[psn_of(d)]++ == 0 && seen.size() % 10 == 5) {
      ++dropped;
      return 0;
    }
    return 1;
  });
  WriteRequest wr{1, kIpB, rkey, 0, src.data(), src.size(), DeliveryMode::kRod};
  ASSERT_TRUE(link.a().post_write(wr).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(dst, src);
  // Expect: one retransmission per lost packet; nothing else went twice.
  EXPECT_EQ(link.a().counters().tx_retx, static_cast<uint64_t>(dropped))
      << "timeouts " << link.a().counters().timeouts << " fast " << link.a().counters().fast_retx;
  EXPECT_EQ(link.a().counters().tx_data, 200u);
  EXPECT_EQ(link.b().counters().rx_duplicates, 0u);
  EXPECT_GT(link.b().counters().rod_staged, 0u);
}

// Two WRITEs to the same bytes, the first one's packets lost once: on ROD the later WRITE
// wins (it runs after the first); a READ posted after both sees the second's data.
TEST(UetModes_Rod, LaterWriteWinsAndReadSeesEarlierWrites) {
  Link link;
  const size_t len = 16 * kPkt;
  std::vector<uint8_t> first = nonzero_pattern(len, 3), second = nonzero_pattern(len, 4), dst(len, 0), back(len, 0);
  const uint32_t rkey = *link.b().register_memory(dst.data(), dst.size());
  std::map<uint32_t, int> seen;
  uint32_t first_psn = 0;
  bool have_first = false;
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from != 0 || !is_req(d, wire::PdsType::kRodReq)) return 1;
    const uint32_t psn = psn_of(d);
    if (!have_first) {
      have_first = true;
      first_psn = psn;
    }
    // The first WRITE's packets 0, 5 and 10 are lost on their first try.
    const uint32_t k = psn - first_psn;
    return seen[psn]++ == 0 && k < 16 && k % 5 == 0 ? 0 : 1;
  });
  ASSERT_TRUE(link.a().post_write({1, kIpB, rkey, 0, first.data(), len, DeliveryMode::kRod}).ok());
  ASSERT_TRUE(link.a().post_write({2, kIpB, rkey, 0, second.data(), len, DeliveryMode::kRod}).ok());
  ASSERT_TRUE(link.a().post_read({3, kIpB, rkey, 0, back.data(), len, DeliveryMode::kRod}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c[i].wr_id, i + 1);
    EXPECT_EQ(c[i].status, OpStatus::kSuccess);
  }
  EXPECT_EQ(dst, second);
  EXPECT_EQ(back, second);
  EXPECT_GT(link.b().counters().rod_staged, 0u);
}

// SENDs of three packets each, the first SEND's middle packet lost once and everything
// jittered: on ROD message i lands in buffer i and receive completions come in order.
TEST(UetModes_Rod, SendsClaimBuffersInMessageOrder) {
  Link link;
  const size_t n = 8, len = 3 * kPkt - 100;
  std::vector<std::vector<uint8_t>> msgs, bufs;
  for (size_t i = 0; i < n; ++i) {
    msgs.push_back(nonzero_pattern(len, static_cast<uint32_t>(20 + i)));
    bufs.emplace_back(len + 50, 0);
    ASSERT_TRUE(link.b().post_recv({100 + i, bufs[i].data(), bufs[i].size()}).ok());
  }
  std::map<uint32_t, int> seen;
  link.set_jitter(5 * kMicrosecond);
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from != 0 || !is_req(d, wire::PdsType::kRodReq)) return 1;
    return seen[psn_of(d)]++ == 0 && seen.size() == 2 ? 0 : 1;
  });
  for (size_t i = 0; i < n; ++i) {
    SendRequest sr;
    sr.wr_id = i;
    sr.peer = kIpB;
    sr.local = msgs[i].data();
    sr.length = len;
    sr.mode = DeliveryMode::kRod;
    ASSERT_TRUE(link.a().post_send(sr).ok());
  }
  link.run(kSecond);
  const auto ca = drain(link.a());
  const auto cb = drain(link.b());
  ASSERT_EQ(ca.size(), n);
  ASSERT_EQ(cb.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(ca[i].wr_id, i);
    EXPECT_EQ(ca[i].status, OpStatus::kSuccess);
    EXPECT_EQ(cb[i].wr_id, 100 + i);
    EXPECT_EQ(cb[i].status, OpStatus::kSuccess);
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[i].begin())) << "buffer " << i;
  }
}

// ROD and RUD to one peer use two PDCs (a PDC has one mode); a ROD request on the RUD PDC is
// refused with PDC_MODE_MISMATCH.
TEST(UetModes_Rod, OwnPdcPerModeAndMismatchIsNacked) {
  Link link;
  std::vector<uint8_t> src = nonzero_pattern(kPkt, 5), dst(2 * kPkt, 0);
  const uint32_t rkey = *link.b().register_memory(dst.data(), dst.size());
  ASSERT_TRUE(link.a().post_write({1, kIpB, rkey, 0, src.data(), kPkt, DeliveryMode::kRud}).ok());
  ASSERT_TRUE(
      link.a().post_write({2, kIpB, rkey, kPkt, src.data(), kPkt, DeliveryMode::kRod}).ok());
  EXPECT_EQ(link.a().pdcs_in_use(), 2u);
  link.run(100 * kMicrosecond);
  EXPECT_EQ(drain(link.a()).size(), 2u);
  EXPECT_EQ(link.b().pdcs_in_use(), 2u);
  // A hand-made ROD request (no SYN) naming the RUD PDC's ids.
  std::vector<uint8_t> buf(256);
  wire::FrameBuilder fb(buf, wire::Encap{.src_ip4 = kIpA, .dst_ip4 = kIpB});
  auto* p = fb.add<wire::PdsRudRod>();
  p->set_type(wire::PdsType::kRodReq);
  p->set_psn(12345);
  // The initiator's first PDC is id 0, the target's first is id 0.
  p->set_spdcid(0);
  p->set_dpdcid(0);
  size_t len = 0;
  ASSERT_EQ(fb.finish(&len), wire::WireError::kOk);
  Frame f{buf.data(), static_cast<uint32_t>(len), 0, static_cast<uint32_t>(len)};
  Frame* fp = &f;
  link.b().rx(std::span<Frame* const>(&fp, 1), 0);
  EXPECT_EQ(link.b().counters().rx_mode_mismatch, 1u);
}

TEST(UetModes_Config, RodWindowAndModeTablesAreValidated) {
  UetConfig c = config_for(kIpA);
  c.rod_window = 100;
  EXPECT_NE(std::string(UetEndpoint::create(c).status().message()).find("rod_window"),
            std::string::npos);
  c = config_for(kIpA);
  c.rod_window = 512;  // > mpr
  EXPECT_FALSE(UetEndpoint::create(c).ok());
  c = config_for(kIpA);
  c.rudi_packets = 0;
  EXPECT_NE(std::string(UetEndpoint::create(c).status().message()).find("rudi_packets"),
            std::string::npos);
  c = config_for(kIpA);
  c.rod_buffers = 0;
  EXPECT_NE(std::string(UetEndpoint::create(c).status().message()).find("rod_buffers"),
            std::string::npos);
  c = config_for(kIpA);
  c.uud_queue = 70000;
  EXPECT_NE(std::string(UetEndpoint::create(c).status().message()).find("uud_queue"),
            std::string::npos);
}

// ------------------------------------------------------------------ RUDI

// A WRITE and a READ over RUDI with requests and responses lost on their first try and some
// requests duplicated: the data is intact, each op completes once, no PDC is ever opened.
TEST(UetModes_Rudi, LostRequestsAndResponsesRecoverAndDuplicatesAreHarmless) {
  Link link;
  const size_t len = 40 * kPkt + 77;
  std::vector<uint8_t> src = nonzero_pattern(len, 6), dst(len, 0), remote = nonzero_pattern(len, 7), back(len, 0);
  const uint32_t wkey = *link.b().register_memory(dst.data(), dst.size());
  const uint32_t rkey = *link.b().register_memory(remote.data(), remote.size());
  // Per packet ID, by order of first sight: every 5th request and every 4th response (of
  // another packet) lost on the first try; every 6th request delivered twice, always.
  std::map<uint32_t, size_t> index;
  std::map<uint32_t, int> req_sent, rsp_sent;
  int req_lost = 0, rsp_lost = 0, dups = 0;
  link.set_filter([&](int, const wire::Decoded& d) {
    const auto* r = d.pds_as<wire::PdsRudi>();
    if (r == nullptr) return 1;
    const size_t idx = index.emplace(r->pkt_id(), index.size()).first->second;
    if (d.pds_type == wire::PdsType::kRudiReq) {
      if (req_sent[r->pkt_id()]++ == 0 && idx % 5 == 1) {
        ++req_lost;
        return 0;
      }
      if (idx % 6 == 3) {
        ++dups;
        return 2;
      }
      return 1;
    }
    if (rsp_sent[r->pkt_id()]++ == 0 && idx % 4 == 2) {
      ++rsp_lost;
      return 0;
    }
    return 1;
  });
  ASSERT_TRUE(link.a().post_write({1, kIpB, wkey, 0, src.data(), len, DeliveryMode::kRudi}).ok());
  ASSERT_TRUE(link.a().post_read({2, kIpB, rkey, 0, back.data(), len, DeliveryMode::kRudi}).ok());
  EXPECT_EQ(link.a().pdcs_in_use(), 0u);
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].wr_id, 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[1].wr_id, 2u);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  EXPECT_EQ(c[1].bytes, len);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(back, remote);
  EXPECT_EQ(link.a().pdcs_in_use(), 0u);
  EXPECT_EQ(link.b().pdcs_in_use(), 0u);
  const UetCounters& a = link.a().counters();
  const UetCounters& b = link.b().counters();
  EXPECT_GT(req_lost, 0);
  EXPECT_GT(rsp_lost, 0);
  // Expect: every lost request or response cost one resend (the RTO, same ID) ...
  EXPECT_EQ(a.tx_rudi_retx, static_cast<uint64_t>(req_lost + rsp_lost));
  EXPECT_EQ(a.tx_rudi, 41u + 41u);
  // ... the target executed every copy (idempotent), and answers to copies are stale.
  EXPECT_GT(dups, 0);
  EXPECT_EQ(b.rx_rudi_req, a.tx_rudi + a.tx_rudi_retx - req_lost + dups);
  EXPECT_EQ(a.rx_rudi_resp, 82u);
  EXPECT_EQ(a.rx_rudi_stale, static_cast<uint64_t>(dups));
}

TEST(UetModes_Rudi, BadKeyFailsAndDeadPeerExhaustsRetries) {
  Link link;
  std::vector<uint8_t> src = nonzero_pattern(kPkt, 8), dst(kPkt, 0);
  const uint32_t key = *link.b().register_memory(dst.data(), dst.size());
  ASSERT_TRUE(
      link.a().post_write({1, kIpB, key + 7, 0, src.data(), kPkt, DeliveryMode::kRudi}).ok());
  link.run(kSecond);
  auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  link.set_filter([](int, const wire::Decoded&) { return 0; });
  ASSERT_TRUE(link.a().post_write({2, kIpB, key, 0, src.data(), kPkt, DeliveryMode::kRudi}).ok());
  link.run(100 * kSecond);
  c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRetriesExhausted);
  EXPECT_EQ(link.a().counters().rudi_gave_up, 1u);
}

// ------------------------------------------------------------------ UUD

TEST(UetModes_Uud, DatagramsArriveIntactLossesAreSimplyLost) {
  Link link;
  const size_t n = 10;
  std::vector<std::vector<uint8_t>> msgs, bufs;
  for (size_t i = 0; i < n; ++i) {
    msgs.push_back(nonzero_pattern(100 + 300 * i, static_cast<uint32_t>(40 + i)));
    bufs.emplace_back(kPkt, 0);
    ASSERT_TRUE(link.b().post_recv({200 + i, bufs[i].data(), bufs[i].size()}).ok());
  }
  int sent = 0;
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from != 0 || d.pds_type != wire::PdsType::kUudReq) return 1;
    return sent++ % 3 == 1 ? 0 : 1;  // datagrams 1, 4, 7 are lost
  });
  for (size_t i = 0; i < n; ++i) {
    SendRequest sr;
    sr.wr_id = i;
    sr.peer = kIpB;
    sr.local = msgs[i].data();
    sr.length = msgs[i].size();
    sr.mode = DeliveryMode::kUud;
    sr.has_imm = true;
    sr.imm = static_cast<uint32_t>(i);
    ASSERT_TRUE(link.a().post_send(sr).ok());
  }
  link.run(kSecond);
  const auto ca = drain(link.a());
  const auto cb = drain(link.b());
  // Expect: the sender completes all ten on transmission; the receiver got the seven that
  // arrived, in order, in consecutive buffers; no PDC, no ACK, no retransmission.
  ASSERT_EQ(ca.size(), n);
  for (const auto& c : ca) EXPECT_EQ(c.status, OpStatus::kSuccess);
  ASSERT_EQ(cb.size(), 7u);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 3 == 1) continue;
    EXPECT_EQ(cb[k].wr_id, 200 + k);
    EXPECT_EQ(cb[k].bytes, msgs[i].size());
    EXPECT_TRUE(cb[k].has_imm);
    EXPECT_EQ(cb[k].imm, i);
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[k].begin())) << "buffer " << k;
    ++k;
  }
  EXPECT_EQ(link.a().counters().tx_uud, n);
  EXPECT_EQ(link.b().counters().rx_uud, 7u);
  EXPECT_EQ(link.b().counters().tx_acks + link.b().counters().tx_nacks, 0u);
  EXPECT_EQ(link.a().pdcs_in_use() + link.b().pdcs_in_use(), 0u);
}

TEST(UetModes_Uud, OversizeIsRefusedAtPostAndWritesArePlaced) {
  Link link;
  std::vector<uint8_t> big(kPkt + 1, 1), dst(kPkt, 0);
  SendRequest sr;
  sr.peer = kIpB;
  sr.local = big.data();
  sr.length = big.size();
  sr.mode = DeliveryMode::kUud;
  const absl::Status s = link.a().post_send(sr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("payload_bytes 4096"), std::string::npos) << s.message();
  const uint32_t key = *link.b().register_memory(dst.data(), dst.size());
  std::vector<uint8_t> src = nonzero_pattern(kPkt, 9);
  ASSERT_TRUE(link.a().post_write({1, kIpB, key, 0, src.data(), kPkt, DeliveryMode::kUud}).ok());
  // A datagram with no buffer posted is dropped and counted.
  sr.length = 10;
  ASSERT_TRUE(link.a().post_send(sr).ok());
  link.run(kSecond);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(drain(link.a()).size(), 2u);
  EXPECT_EQ(link.b().counters().rx_uud, 1u);
  EXPECT_EQ(link.b().counters().rx_uud_dropped, 1u);
}

// ------------------------------------------------------------------ hostile

// Frames with made-up RUDI IDs and floods of RUDI and UUD requests: every table stays
// bounded, everything unmatched is counted.
TEST(UetModes_Hostile, GarbageIdsAndFloodsAreBoundedAndCounted) {
  UetConfig bc = config_for(kIpB);
  bc.rudi_responses = 16;
  auto target = std::move(*UetEndpoint::create(bc));
  auto initiator = std::move(*UetEndpoint::create(config_for(kIpA)));
  std::vector<uint8_t> mem(kPkt, 0);
  const uint32_t key = *target->register_memory(mem.data(), mem.size());
  std::vector<uint8_t> buf(512);
  std::mt19937 rng(21);
  auto frame = [&](uint32_t src, uint32_t dst, wire::PdsType type, uint32_t id, bool ses,
                   UetEndpoint& to) {
    wire::FrameBuilder fb(buf, wire::Encap{.src_ip4 = src, .dst_ip4 = dst});
    if (type == wire::PdsType::kUudReq) {
      fb.add<wire::PdsUud>()->set_type(type);
    } else {
      auto* p = fb.add<wire::PdsRudi>();
      p->set_type(type);
      p->set_pkt_id(id);
      if (type == wire::PdsType::kRudiResp) {
        p->set_next_hdr(wire::NextHeader::kRsp);
        auto* r = fb.add<wire::SesResponse>();
        r->set_opcode(wire::SesRspOpcode::kResponse);
      }
    }
    if (ses && type != wire::PdsType::kRudiResp) {
      auto* pds = reinterpret_cast<wire::PdsPrologue*>(buf.data() + fb.transport_offset());
      pds->set_next_hdr(wire::NextHeader::kReqStd);
      auto* s = fb.add<wire::SesStandardRequest>();
      s->set_opcode(wire::SesOpcode::kWrite);
      s->set_som(true);
      s->set_eom(true);
      s->set_match_bits(key);
      s->set_request_length(8);
      std::fill_n(fb.add_bytes(8), 8, 0xAB);
    }
    size_t n = 0;
    ASSERT_EQ(fb.finish(&n), wire::WireError::kOk);
    testing::deliver(to, std::span<const uint8_t>(buf.data(), n));
  };
  // RUDI responses nobody asked for.
  for (int i = 0; i < 1000; ++i) {
    frame(kIpB, kIpA, wire::PdsType::kRudiResp, static_cast<uint32_t>(rng()), false, *initiator);
  }
  EXPECT_EQ(initiator->counters().rx_rudi_stale, 1000u);
  EXPECT_TRUE(drain(*initiator).empty());
  // A flood of RUDI WRITE requests with no tx in between: 16 answered, the rest dropped.
  for (int i = 0; i < 1000; ++i) frame(kIpA, kIpB, wire::PdsType::kRudiReq, i, true, *target);
  EXPECT_EQ(target->counters().rx_rudi_req, 16u);
  EXPECT_EQ(target->counters().rudi_rsp_full, 984u);
  // UUD: with no buffers posted, SENDs are dropped; WRITEs are placed; bare headers dropped.
  for (int i = 0; i < 500; ++i) frame(kIpA, kIpB, wire::PdsType::kUudReq, 0, i % 2 == 0, *target);
  EXPECT_EQ(target->counters().rx_uud, 250u);
  EXPECT_EQ(target->counters().rx_uud_dropped, 250u);
  EXPECT_EQ(target->pdcs_in_use(), 0u);
  // The responses go out: at most the ring's 16.
  std::vector<uint8_t> out(512);
  size_t sent = 0;
  for (int i = 0; i < 100; ++i) {
    Frame f{out.data(), 0, 0, static_cast<uint32_t>(out.size())};
    Frame* fp = &f;
    if (target->tx(std::span<Frame* const>(&fp, 1), 0) == 0) break;
    ++sent;
  }
  EXPECT_EQ(sent, 16u);
}

// Hand-made ROD WRITEs from two PDCs of a peer to a target with one reorder buffer: the
// buffer goes to the first PDC with a hole and comes back when its hole fills; meanwhile the
// other PDC's out-of-order arrival is dropped (counted), and PSNs past rod_window are NACKed.
TEST(UetModes_Hostile, RodReorderBuffersAreBoundedAndLent) {
  UetConfig bc = config_for(kIpB);
  bc.rod_buffers = 1;
  bc.rod_window = 64;
  auto target = std::move(*UetEndpoint::create(bc));
  std::vector<uint8_t> mem(4 * kPkt, 0);
  const uint32_t key = *target->register_memory(mem.data(), mem.size());
  std::vector<uint8_t> buf(kPkt + 256);
  // PSN `start + k` of PDC `spdcid` (SYN: psn_offset k), writing byte `v` x 8 at chunk k.
  auto write = [&](uint16_t spdcid, uint32_t start, uint32_t k, uint8_t v) {
    wire::FrameBuilder fb(buf, wire::Encap{.src_ip4 = kIpA, .dst_ip4 = kIpB});
    auto* p = fb.add<wire::PdsRudRod>();
    p->set_type(wire::PdsType::kRodReq);
    p->set_next_hdr(wire::NextHeader::kReqStd);
    p->set_psn(start + k);
    p->set_spdcid(spdcid);
    p->set_syn(true);
    p->set_psn_offset(static_cast<uint16_t>(k));
    auto* s = fb.add<wire::SesStandardRequest>();
    s->set_opcode(wire::SesOpcode::kWrite);
    s->set_som(true);
    s->set_eom(true);
    s->set_match_bits(key);
    s->set_buffer_offset(uint64_t{k % 4} * kPkt);
    s->set_request_length(8);
    std::fill_n(fb.add_bytes(8), 8, v);
    size_t n = 0;
    ASSERT_EQ(fb.finish(&n), wire::WireError::kOk);
    testing::deliver(*target, std::span<const uint8_t>(buf.data(), n));
  };
  write(1, 1000, 1, 0x11);  // PDC 1: out of order, takes the only buffer
  EXPECT_EQ(target->counters().rod_staged, 1u);
  EXPECT_EQ(mem[kPkt], 0);  // held, not placed
  write(2, 5000, 2, 0x22);  // PDC 2: out of order, no buffer left
  EXPECT_EQ(target->counters().rod_no_buffer, 1u);
  write(1, 1000, 100, 0x33);  // beyond rod_window (64): PSN_OOR_WINDOW
  EXPECT_EQ(target->counters().rx_out_of_window, 1u);
  write(1, 1000, 0, 0x44);  // PDC 1's hole fills: both placed, in order; buffer returned
  EXPECT_EQ(mem[0], 0x44);
  EXPECT_EQ(mem[kPkt], 0x11);
  EXPECT_EQ(target->counters().rod_executed_late, 1u);
  write(2, 5000, 2, 0x22);  // PDC 2 may hold now
  EXPECT_EQ(target->counters().rod_staged, 2u);
  EXPECT_EQ(mem[2 * kPkt], 0);
  write(2, 5000, 0, 0x55);
  write(2, 5000, 1, 0x66);
  EXPECT_EQ(mem[2 * kPkt], 0x22);
  EXPECT_EQ(target->counters().rod_executed_late, 2u);
  EXPECT_EQ(target->pdcs_in_use(), 2u);
}

}  // namespace
}  // namespace uet
