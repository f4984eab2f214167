// The RoCEv2 RC engine on a fake host (two endpoints joined by an in-memory link with simulated
// time, where the test loses, duplicates, delays or marks frames); on the simulator in
// roce_fabric_test.cc.
#include "transport/rocev2/roce_endpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/mentions.h"
#include "tests/common/roce_pair.h"
#include "transport/rocev2/psn.h"
#include "transport/wire/checksum.h"

namespace uet {
namespace {

using testing::FakeLink;
using testing::Sent;
using testing::Verdict;
using wire::RoceOpcode;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kQpA = 0x100, kQpB = 0x105;  // distinct, to catch a swapped DestQP
constexpr uint32_t kPsnA = 1000, kPsnB = 777000;

// Local ACK timeout 1.05 ms.
RoceConfig config_for(uint32_t ip) { return testing::roce_config(ip, /*ack_timeout_exp=*/8); }

// Two endpoints with one connected QP pair, the link between them, A's `bytes` of seeded
// source and B's region of as many zeros and a page more.
struct Pair : testing::RocePair {
  std::vector<uint8_t> src, dst;
  uint32_t rkey = 0;

  Pair(const RoceConfig& ca, const RoceConfig& cb, size_t bytes, uint32_t psn_a = kPsnA,
       uint32_t psn_b = kPsnB)
      : RocePair(ca, cb, {kQpA, kQpB, psn_a, psn_b}) {
    src.resize(bytes);
    std::mt19937 rng(1);
    for (auto& x : src) x = static_cast<uint8_t>(rng());
    dst.assign(bytes + 4096, 0);
    rkey = *b->register_memory(dst.data(), dst.size());
  }
  explicit Pair(size_t bytes) : Pair(config_for(kIpA), config_for(kIpB), bytes) {}

  absl::Status write(uint64_t id, uint64_t offset = 0, uint64_t len = 0) {
    return a->post_write({id, kIpB, rkey, offset, src.data(), len == 0 ? src.size() : len});
  }
  bool intact() const { return std::equal(src.begin(), src.end(), dst.begin()); }
};

std::vector<Completion> drain(RoceEndpoint& ep) {
  std::vector<Completion> out(256);
  out.resize(ep.poll_completions(out));
  return out;
}

bool is_write(const wire::Decoded& d) {
  if (d.bth == nullptr) return false;
  const auto op = d.bth->opcode();
  return op == RoceOpcode::kRcWriteFirst || op == RoceOpcode::kRcWriteMiddle ||
         op == RoceOpcode::kRcWriteLast || op == RoceOpcode::kRcWriteOnly;
}
bool is_ack(const wire::Decoded& d) {
  return d.bth != nullptr && d.bth->opcode() == RoceOpcode::kRcAck;
}

// Data frames from A in the log, in sending order.
std::vector<Sent> data_from_a(const FakeLink& link) {
  std::vector<Sent> out;
  for (const Sent& s : link.log())
    if (s.from == 0 && s.roce && s.opcode <= static_cast<uint8_t>(RoceOpcode::kRcWriteOnly))
      out.push_back(s);
  return out;
}
size_t count_from(const FakeLink& link, int from, RoceOpcode op, int aeth_type = -1) {
  size_t n = 0;
  for (const Sent& s : link.log())
    if (s.from == from && s.roce && s.opcode == static_cast<uint8_t>(op) &&
        (aeth_type < 0 || s.aeth_type == aeth_type))
      ++n;
  return n;
}

// Sets the IP ECN bits to CE (and the IPv4 checksum); the ICRC masks them (spec/rocev2.md §6).
void mark_ce(std::vector<uint8_t>& bytes) {
  auto* ip = wire::as<wire::Ipv4>(bytes.data() + wire::Ethernet::kSize);
  ip->set_ecn(3);
  ip->set_checksum(0);
  ip->set_checksum(wire::ipv4_header_checksum(ip->raw, wire::Ipv4::kSize));
}

// ------------------------------------------------------------------------- clean path

TEST(RoceEndpoint_Write, OneMegabyteArrivesIntactWithoutRetransmission) {
  Pair p(1 << 20);
  p.link->set_rate_gbps(100);
  ASSERT_TRUE(p.write(7).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 7u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[0].bytes, 1u << 20);
  EXPECT_TRUE(p.intact());
  EXPECT_EQ(p.a->counters().tx_data, 256u);
  EXPECT_EQ(p.a->counters().tx_retx, 0u);
  EXPECT_EQ(p.a->counters().go_back_n, 0u);
  EXPECT_EQ(p.b->counters().rx_placed, 256u);
  // Expect: AckReq every 64 packets and on the last, so four ACKs, the last with MSN 1.
  EXPECT_EQ(p.b->counters().tx_acks, 4u);
  EXPECT_EQ(p.b->counters().tx_naks, 0u);
  EXPECT_EQ(p.b->qp_info(kQpB)->msn, 1u);
  EXPECT_EQ(p.b->qp_info(kQpB)->epsn, kPsnA + 256);
  EXPECT_EQ(p.a->qp_info(kQpA)->una, kPsnA + 256);
}

// spec/rocev2.md §1–§4: what every packet of a write looks like on the wire.
// Zero-copy transmit: with tx_by_reference every WRITE packet, first sends and the go-back-N
// resends alike, references its payload in the posted buffer; the frames the link gathers
// (pad and ICRC after the payload) are byte for byte those of the copying engine.
TEST(RoceEndpoint_Write, ByReferenceSendsTheSameFramesWithoutCopyingThePayload) {
  std::vector<uint32_t> digests[2];
  for (const bool by_ref : {false, true}) {
    RoceConfig ca = config_for(kIpA);
    ca.tx_by_reference = by_ref;
    Pair p(ca, config_for(kIpB), 100'003);  // an odd last packet: padded
    int writes_seen = 0;
    p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
      return Verdict{from == 0 && is_write(d) && ++writes_seen == 5 ? 0 : 1};  // go-back-N
    });
    ASSERT_TRUE(p.write(9).ok());
    p.link->run(kSecond);
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OpStatus::kSuccess);
    EXPECT_TRUE(p.intact());
    EXPECT_GE(p.a->counters().tx_retx, 1u);
    const uint64_t referenced =
        testing::collect_references(p.link->log(), by_ref, p.src, &digests[by_ref]);
    if (by_ref) {
      EXPECT_GT(referenced, p.src.size());  // every byte, and the resent ones again
    }
  }
  EXPECT_EQ(digests[0], digests[1]);
}

TEST(RoceEndpoint_Wire, PacketsAreFirstMiddleLastWithOneSourcePortAndTheIcrc) {
  Pair p(10 * 4096 + 3);  // 11 packets, the last one 3 bytes (1 pad byte)
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  ASSERT_EQ(drain(*p.a).size(), 1u);
  EXPECT_TRUE(p.intact());
  const auto data = data_from_a(*p.link);
  ASSERT_EQ(data.size(), 11u);
  const uint16_t sport = p.a->udp_sport(kQpA);
  EXPECT_EQ(sport & 0xC000, 0xC000);
  for (size_t i = 0; i < data.size(); ++i) {
    const Sent& s = data[i];
    const auto want = i == 0                 ? RoceOpcode::kRcWriteFirst
                      : i + 1 == data.size() ? RoceOpcode::kRcWriteLast
                                             : RoceOpcode::kRcWriteMiddle;
    EXPECT_EQ(s.opcode, static_cast<uint8_t>(want)) << i;
    EXPECT_EQ(s.has_reth, i == 0) << i;
    EXPECT_EQ(s.psn, kPsnA + i);
    EXPECT_EQ(s.dest_qp, kQpB);
    EXPECT_EQ(s.ack_req, i + 1 == data.size());
    EXPECT_EQ(s.sport, sport);  // one path per QP
    EXPECT_EQ(s.dport, 4791);
    EXPECT_EQ(s.udp_checksum, 0);
    EXPECT_EQ(s.dscp, 26);
    EXPECT_EQ(s.ecn, 2);  // ECT(0)
    EXPECT_EQ(s.priority, Priority::kData);
  }
  // The ACK: opcode 0x11, AETH ACK with credit code 0x1F, MSN 1, the last PSN.
  ASSERT_EQ(count_from(*p.link, 1, RoceOpcode::kRcAck), 1u);
  for (const Sent& s : p.link->log()) {
    if (s.from != 1) continue;
    EXPECT_EQ(s.aeth_type, 0);
    EXPECT_EQ(s.aeth_value, 0x1F);
    EXPECT_EQ(s.msn, 1u);
    EXPECT_EQ(s.psn, kPsnA + 10);
    EXPECT_EQ(s.dest_qp, kQpA);
    EXPECT_EQ(s.sport, p.b->udp_sport(kQpB));
  }
}

TEST(RoceEndpoint_Wire, SmallWriteIsOneOnlyPacketWithReth) {
  Pair p(100);
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  ASSERT_EQ(drain(*p.a).size(), 1u);
  EXPECT_TRUE(p.intact());
  const auto data = data_from_a(*p.link);
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(data[0].opcode, static_cast<uint8_t>(RoceOpcode::kRcWriteOnly));
  EXPECT_TRUE(data[0].has_reth);
  EXPECT_TRUE(data[0].ack_req);
}

TEST(RoceEndpoint_Wire, BadIcrcIsDroppedCountedAndRepaired) {
  Pair p(20 * 4096);
  int n = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
    if (from == 0 && is_write(d) && ++n == 5) bytes[bytes.size() - 100] ^= 0x01;  // payload bit
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(p.intact());
  EXPECT_EQ(p.b->counters().rx_bad_icrc, 1u);
  EXPECT_EQ(p.b->counters().wire[wire::WireError::kBadIcrc], 1u);
  EXPECT_EQ(p.b->counters().tx_naks, 1u);
  EXPECT_EQ(p.a->counters().tx_retx, 16u);  // packets 4..19 again
}

// ------------------------------------------------------------------------- loss

// The point of the comparison: one loss costs everything sent after it.
TEST(RoceEndpoint_Loss, LostMiddlePacketOneNakAndGoBackNToTheEnd) {
  Pair p(1 << 20);  // 256 packets, all sent before the NAK returns (no window in RC)
  int n = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && is_write(d) && n++ == 100) return Verdict{0, 0};
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(p.intact());
  // Expect: one NAK (PSN sequence error, carrying PSN 100), the 155 packets after the hole
  // dropped silently, and go-back-N resending 100..255: 156 packets for one loss.
  EXPECT_EQ(p.b->counters().tx_naks, 1u);
  EXPECT_EQ(count_from(*p.link, 1, RoceOpcode::kRcAck, 3), 1u);
  EXPECT_EQ(p.b->counters().rx_out_of_order, 155u);
  EXPECT_EQ(p.a->counters().rx_nak_seq, 1u);
  EXPECT_EQ(p.a->counters().go_back_n, 1u);
  EXPECT_EQ(p.a->counters().tx_retx, 156u);
  EXPECT_EQ(p.a->counters().bytes_resent, 156u * 4096);
  EXPECT_EQ(p.a->counters().timeouts, 0u);
  EXPECT_EQ(p.b->counters().rx_placed, 256u);
  EXPECT_EQ(p.b->counters().rx_duplicates, 0u);
  // The NAK names the hole; the resend resumes mid-message: MIDDLE, no RETH, that PSN.
  for (const Sent& s : p.link->log()) {
    if (s.from == 1 && s.aeth_type == 3) {
      EXPECT_EQ(s.aeth_value, 0);  // PSN sequence error
      EXPECT_EQ(s.psn, kPsnA + 100);
    }
  }
  const auto data = data_from_a(*p.link);
  ASSERT_EQ(data.size(), 256u + 156u);
  EXPECT_EQ(data[256].psn, kPsnA + 100);
  EXPECT_EQ(data[256].opcode, static_cast<uint8_t>(RoceOpcode::kRcWriteMiddle));
  EXPECT_FALSE(data[256].has_reth);
  EXPECT_EQ(data.back().opcode, static_cast<uint8_t>(RoceOpcode::kRcWriteLast));
}

// The same loss on a 100 Gb/s link, where the requester sends only as fast as its link: the
// NAK returns after one round trip, and go-back-N resends what was sent in that time.
TEST(RoceEndpoint_Loss, LostMiddlePacketOnARatedLinkResendsOneRoundTripOfPackets) {
  Pair p(1 << 20);
  p.link->set_rate_gbps(100);
  int n = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && is_write(d) && n++ == 100) return Verdict{0, 0};
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  ASSERT_EQ(drain(*p.a).size(), 1u);
  EXPECT_TRUE(p.intact());
  // Expect: resent = every packet first sent before the NAK arrived, from the hole on.
  const auto data = data_from_a(*p.link);
  size_t first = 0;
  while (first < data.size() && data[first].psn != kPsnA + 100) ++first;
  size_t again = first + 1;
  while (again < data.size() && data[again].psn != kPsnA + 100) ++again;
  ASSERT_LT(again, data.size());
  const uint64_t sent_before_nak = again;  // log entries before the resend are first sends
  EXPECT_EQ(p.b->counters().tx_naks, 1u);
  EXPECT_EQ(p.a->counters().tx_retx, sent_before_nak - 100);
  EXPECT_EQ(p.a->counters().tx_data, 256u);
  EXPECT_GT(p.a->counters().tx_retx, 5u);   // a round trip of 100 Gb/s ...
  EXPECT_LT(p.a->counters().tx_retx, 30u);  // ... is a handful of 4 KB packets
  std::printf("[ rated    ] one loss on a 100 Gb/s link, 2 us each way: %llu packets resent\n",
              static_cast<unsigned long long>(p.a->counters().tx_retx));
}

TEST(RoceEndpoint_Loss, LostFirstPacketResendsTheFirstWithItsReth) {
  Pair p(8 * 4096);
  bool dropped = false;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && d.reth != nullptr && !dropped) {
      dropped = true;
      return Verdict{0, 0};
    }
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  ASSERT_EQ(drain(*p.a).size(), 1u);
  EXPECT_TRUE(p.intact());
  const auto data = data_from_a(*p.link);
  ASSERT_EQ(data.size(), 16u);
  EXPECT_EQ(data[8].opcode, static_cast<uint8_t>(RoceOpcode::kRcWriteFirst));
  EXPECT_TRUE(data[8].has_reth);
}

TEST(RoceEndpoint_Loss, LostLastPacketTimesOutAndResendsFromTheOldestUnacked) {
  Pair p(1 << 20);
  p.link->set_rate_gbps(100);  // ACKs leave one by one, as their AckReq packets arrive
  bool dropped = false;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && is_write(d) && d.bth->opcode() == RoceOpcode::kRcWriteLast && !dropped) {
      dropped = true;
      return Verdict{0, 0};
    }
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(p.intact());
  // Expect: no NAK (nothing came after the hole); the ACK timeout (4.096 µs · 2^8) fires once,
  // T after the last ACK that made progress (PSN 191: AckReq every 64), and go-back-N resends
  // from PSN 192. Each duplicate is re-ACKed with PSN 254, and the first such ACK moves the
  // cursor past what the responder already has, straight to 255.
  EXPECT_EQ(p.b->counters().tx_naks, 0u);
  EXPECT_EQ(p.a->counters().timeouts, 1u);
  EXPECT_EQ(p.a->counters().go_back_n, 1u);
  const auto data = data_from_a(*p.link);
  ASSERT_GT(data.size(), 257u);
  EXPECT_EQ(data[256].psn, kPsnA + 192);
  EXPECT_EQ(data.back().psn, kPsnA + 255);
  Time last_progress = 0;
  for (const Sent& s : p.link->log())
    if (s.from == 1 && s.psn == kPsnA + 191) last_progress = s.at;
  const Time t = 4096 * kNanosecond << 8;
  EXPECT_GE(data[256].at, last_progress + t);
  EXPECT_LT(data[256].at, last_progress + t + 5 * kMicrosecond);  // + one-way delay
  EXPECT_EQ(p.a->counters().tx_retx, data.size() - 256);
  EXPECT_LT(p.a->counters().tx_retx, 64u);
  EXPECT_EQ(p.b->counters().rx_duplicates, p.a->counters().tx_retx - 1);
  EXPECT_EQ(p.b->counters().rx_placed, 256u);
}

TEST(RoceEndpoint_Loss, LostAcksAreCoveredByLaterAcks) {
  Pair p(1 << 20);
  p.link->set_rate_gbps(100);
  int acks = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 1 && is_ack(d) && ++acks <= 3) return Verdict{0, 0};  // all but the last
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(p.intact());
  EXPECT_EQ(p.a->counters().rx_acks, 1u);
  EXPECT_EQ(p.a->counters().tx_retx, 0u);
  EXPECT_EQ(p.a->counters().timeouts, 0u);
}

TEST(RoceEndpoint_Loss, LostFinalAckTimesOutAndDuplicatesAreReAckedNotPlaced) {
  Pair p(1 << 20);
  p.link->set_rate_gbps(100);
  int acks = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 1 && is_ack(d) && ++acks == 4) return Verdict{0, 0};  // the one for PSN 255
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(p.intact());
  // Expect: the timeout resends from PSN 192 (the last ACK that arrived covered 191); every
  // resend is a duplicate, re-ACKed, and the first re-ACK (PSN 255) completes the write.
  EXPECT_EQ(p.a->counters().timeouts, 1u);
  const auto data = data_from_a(*p.link);
  ASSERT_GT(data.size(), 256u);
  EXPECT_EQ(data[256].psn, kPsnA + 192);
  EXPECT_EQ(p.a->counters().tx_retx, data.size() - 256);
  EXPECT_LT(p.a->counters().tx_retx, 64u);
  EXPECT_EQ(p.b->counters().rx_duplicates, p.a->counters().tx_retx);
  EXPECT_EQ(p.b->counters().rx_placed, 256u);  // never placed twice
  EXPECT_GE(p.b->counters().tx_acks, 5u);
}

// ------------------------------------------------------------------------- duplicates, order

TEST(RoceEndpoint_Duplicates, LateDuplicatesAreNeverPlacedTwice) {
  // Two writes to the same place; every packet of the first also arrives a second time, 50 µs
  // late, after the second write has landed. A duplicate placed again would bring it back.
  Pair p(16 * 4096);
  std::vector<uint8_t> second(p.src.size());
  for (size_t i = 0; i < second.size(); ++i) second[i] = static_cast<uint8_t>(i * 7 + 1);
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && is_write(d) && roce::psn_diff(d.bth->psn(), kPsnA + 16) < 0)
      return Verdict{2, 0, 50 * kMicrosecond};
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  ASSERT_TRUE(p.a->post_write({2, kIpB, p.rkey, 0, second.data(), second.size()}).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(second.begin(), second.end(), p.dst.begin()));
  EXPECT_EQ(p.b->counters().rx_placed, 32u);
  EXPECT_EQ(p.b->counters().rx_duplicates, 16u);
  EXPECT_EQ(p.a->counters().tx_retx, 0u);
}

TEST(RoceEndpoint_Duplicates, ReplayOfAnOldWriteAfterANewOneIsIgnored) {
  Pair p(4 * 4096);
  std::vector<std::vector<uint8_t>> first_write;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
    if (from == 0 && is_write(d)) first_write.push_back(bytes);
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  p.link->set_filter(nullptr);
  std::vector<uint8_t> second(p.src.size(), 0xAB);
  ASSERT_TRUE(p.a->post_write({2, kIpB, p.rkey, 0, second.data(), second.size()}).ok());
  p.link->run(kSecond);
  // Replay write 1's frames straight into B.
  for (auto& bytes : first_write) {
    Frame f{bytes.data(), static_cast<uint32_t>(bytes.size()), 0,
            static_cast<uint32_t>(bytes.size())};
    Frame* fp = &f;
    p.b->rx(std::span<Frame* const>(&fp, 1), p.link->now());
  }
  EXPECT_TRUE(std::equal(second.begin(), second.end(), p.dst.begin()));
  EXPECT_EQ(p.b->counters().rx_duplicates, 4u);
  EXPECT_EQ(p.b->counters().rx_placed, 8u);
}

TEST(RoceEndpoint_Reorder, OvertakenPacketCausesOneNakAndGoBackN) {
  Pair p(1 << 20);
  int n = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && is_write(d) && n++ == 10) return Verdict{1, 1 * kMicrosecond};  // late
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(p.intact());
  // Expect: 11 arrives before 10: NAK(10); 10 arrives and is placed, the rest were dropped;
  // the requester resends 10..255 (10 itself now a duplicate): RC pays for reordering as for loss.
  EXPECT_EQ(p.b->counters().tx_naks, 1u);
  EXPECT_EQ(p.b->counters().rx_out_of_order, 245u);
  EXPECT_EQ(p.a->counters().tx_retx, 246u);
  EXPECT_EQ(p.b->counters().rx_duplicates, 1u);
  EXPECT_EQ(p.b->counters().rx_placed, 256u);
}

TEST(RoceEndpoint_Reorder, JitterAndDuplicationStillDeliverOnceIntact) {
  Pair p(200 * 4096 + 77);
  std::mt19937_64 rng(5);
  p.link->set_filter([&](int from, const wire::Decoded&, std::vector<uint8_t>&) {
    return Verdict{from == 0 && rng() % 7 == 0 ? 2 : 1,
                   static_cast<Time>(rng() % (5 * kMicrosecond))};
  });
  ASSERT_TRUE(p.write(1).ok());
  ASSERT_TRUE(p.write(2, 0, 4096).ok());
  p.link->run(10 * kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  EXPECT_TRUE(p.intact());
  EXPECT_EQ(p.b->counters().rx_placed, 202u);
  EXPECT_EQ(p.b->qp_info(kQpB)->msn, 2u);
}

// ------------------------------------------------------------------------- PSN wrap

TEST(RoceEndpoint_Psn, GoBackNAcrossTheWrapAt2To24) {
  Pair p(config_for(kIpA), config_for(kIpB), 1 << 20, /*psn_a=*/0xFFFFF0);
  int n = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && is_write(d) && n++ == 10) return Verdict{0, 0};  // PSN 0xFFFFFA
    return Verdict{};
  });
  ASSERT_TRUE(p.write(1).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(p.intact());
  EXPECT_EQ(p.a->counters().tx_retx, 246u);
  const auto data = data_from_a(*p.link);
  EXPECT_EQ(data[15].psn, 0xFFFFFFu);
  EXPECT_EQ(data[16].psn, 0u);
  EXPECT_EQ(data[256].psn, 0xFFFFFAu);
  EXPECT_EQ(p.a->qp_info(kQpA)->una, (0xFFFFF0u + 256) & 0xFFFFFF);
  EXPECT_EQ(p.b->qp_info(kQpB)->epsn, 0xF0u);
}

// ------------------------------------------------------------------------- errors

TEST(RoceEndpoint_Errors, RetriesExhaustedAfterTimeoutTimesRetriesPlusOne) {
  RoceConfig a = config_for(kIpA);
  a.ack_timeout_exp = 4;  // 65.536 µs
  a.retry_cnt = 3;
  Pair p(a, config_for(kIpB), 8192);
  p.link->set_filter([](int from, const wire::Decoded&, std::vector<uint8_t>&) {
    return Verdict{from == 0 ? 0 : 1, 0};
  });
  ASSERT_TRUE(p.write(5).ok());
  ASSERT_TRUE(p.write(6).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].wr_id, 5u);
  EXPECT_EQ(c[0].status, OpStatus::kRetriesExhausted);
  EXPECT_EQ(c[1].wr_id, 6u);
  EXPECT_EQ(c[1].status, OpStatus::kFlushed);
  // Expect: sent at 0, retried at T, 2T, 3T; the fourth expiry ends it at exactly 4T.
  const Time t = 4096 * kNanosecond << 4;
  EXPECT_EQ(p.link->now(), 4 * t);
  EXPECT_EQ(p.a->counters().timeouts, 4u);
  EXPECT_EQ(p.a->counters().go_back_n, 3u);
  EXPECT_EQ(p.a->counters().tx_retx, 3u * 4);
  EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kError);
  // A write posted to a QP in the error state is flushed at once.
  ASSERT_TRUE(p.write(7).ok());
  const auto c2 = drain(*p.a);
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_EQ(c2[0].status, OpStatus::kFlushed);
  // connect_qp revives the QP.
  EXPECT_TRUE(p.a->connect_qp(kIpB, kQpA, kQpB, 5000, kPsnB).ok());
  EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kRts);
}

TEST(RoceEndpoint_Errors, RetryCountSevenRetriesForEver) {
  RoceConfig a = config_for(kIpA);
  a.ack_timeout_exp = 4;
  a.retry_cnt = 7;
  Pair p(a, config_for(kIpB), 4096);
  p.link->set_filter([](int from, const wire::Decoded&, std::vector<uint8_t>&) {
    return Verdict{from == 0 ? 0 : 1, 0};
  });
  ASSERT_TRUE(p.write(5).ok());
  p.link->run(10 * kMillisecond);
  EXPECT_TRUE(drain(*p.a).empty());
  EXPECT_EQ(p.a->counters().timeouts,
            static_cast<uint64_t>(10 * kMillisecond / (4096 * kNanosecond << 4)));
  EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kRts);
}

TEST(RoceEndpoint_Errors, TimeoutExponentZeroMeansNoTimer) {
  RoceConfig a = config_for(kIpA);
  a.ack_timeout_exp = 0;
  Pair p(a, config_for(kIpB), 4096);
  p.link->set_filter([](int from, const wire::Decoded&, std::vector<uint8_t>&) {
    return Verdict{from == 0 ? 0 : 1, 0};
  });
  ASSERT_TRUE(p.write(5).ok());
  p.link->run(kSecond);
  EXPECT_TRUE(drain(*p.a).empty());
  EXPECT_EQ(p.a->counters().timeouts, 0u);
  EXPECT_EQ(p.a->next_deadline(), kNever);
}

TEST(RoceEndpoint_Errors, BadRkeyIsRemoteAccessErrorAndTheQpFails) {
  Pair p(3 * 4096);
  ASSERT_TRUE(p.a->post_write({1, kIpB, p.rkey + 5, 0, p.src.data(), p.src.size()}).ok());
  ASSERT_TRUE(p.write(2).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(c[1].status, OpStatus::kFlushed);  // IB_WC_WR_FLUSH_ERR
  EXPECT_EQ(p.b->counters().rx_bad_rkey, 1u);
  EXPECT_EQ(p.b->counters().tx_naks, 1u);
  EXPECT_EQ(p.b->counters().rx_placed, 0u);
  EXPECT_EQ(p.a->counters().rx_nak_fatal, 1u);
  EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kError);
  EXPECT_EQ(p.b->qp_info(kQpB)->state, QpState::kError);
  for (const Sent& s : p.link->log()) {
    if (s.from == 1) {
      EXPECT_EQ(s.aeth_type, 3);
      EXPECT_EQ(s.aeth_value, 2);  // remote access error
      EXPECT_EQ(s.psn, kPsnA);
    }
  }
  EXPECT_TRUE(std::all_of(p.dst.begin(), p.dst.end(), [](uint8_t x) { return x == 0; }));
}

TEST(RoceEndpoint_Errors, RangeOutsideTheRegionIsRemoteAccessErrorAfterEarlierWritesComplete) {
  Pair p(3 * 4096);
  ASSERT_TRUE(p.write(1, 0, 4096).ok());
  ASSERT_TRUE(p.a->post_write({2, kIpB, p.rkey, p.dst.size() - 100, p.src.data(), 4096}).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[1].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(p.b->counters().rx_bad_range, 1u);
  EXPECT_TRUE(std::equal(p.src.begin(), p.src.begin() + 4096, p.dst.begin()));
}

// ------------------------------------------------------------------------- congestion

// Runs a stream of writes from A for `duration`, every data frame CE-marked while `mark` says.
void stream(Pair& p, Time duration, const std::function<bool(Time)>& mark) {
  p.link->set_filter([&p, mark](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
    if (from == 0 && is_write(d) && mark(p.link->now())) mark_ce(bytes);
    return Verdict{};
  });
  uint64_t id = 0;
  for (Time t = p.link->now(); t < duration; t += 10 * kMicrosecond) {
    p.link->advance_to(t);
    (void)p.write(++id, 0, 64 * 1024);
    p.link->run(t + 10 * kMicrosecond);
    (void)drain(*p.a);
  }
}

TEST(RoceEndpoint_Cnp, CeMarkedDataGetsAtMostOneCnpPerIntervalThatDecodes) {
  Pair p(64 * 1024);
  stream(p, 500 * kMicrosecond, [](Time) { return true; });
  std::vector<Time> cnps;
  for (const Sent& s : p.link->log()) {
    if (s.from != 1 || s.opcode != static_cast<uint8_t>(RoceOpcode::kCnp)) continue;
    cnps.push_back(s.at);
    // spec/rocev2.md §5: 0x81, BECN, DestQP = the sender's QP, PSN 0, IP length 60.
    EXPECT_TRUE(s.becn);
    EXPECT_EQ(s.dest_qp, kQpA);
    EXPECT_EQ(s.psn, 0u);
    EXPECT_FALSE(s.ack_req);
    EXPECT_EQ(s.ip_total_length, 60);
    EXPECT_EQ(s.udp_length, 40);
    EXPECT_EQ(s.dscp, 48);
    EXPECT_EQ(s.ecn, 0);
    EXPECT_EQ(s.priority, Priority::kControl);
  }
  ASSERT_GE(cnps.size(), 8u);
  EXPECT_LE(cnps.size(), 11u);  // 500 µs / 50 µs, plus the first
  for (size_t i = 1; i < cnps.size(); ++i) EXPECT_GE(cnps[i] - cnps[i - 1], 50 * kMicrosecond);
  EXPECT_EQ(p.b->counters().tx_cnps, cnps.size());
  EXPECT_EQ(p.a->counters().rx_cnps, cnps.size());
  EXPECT_GT(p.b->counters().rx_ce, cnps.size());
}

TEST(RoceEndpoint_Dcqcn, RateDropsAfterCnpsAndRecovers) {
  Pair p(64 * 1024);
  stream(p, 300 * kMicrosecond, [](Time t) { return t < 200 * kMicrosecond; });
  const QpInfo cut = *p.a->qp_info(kQpA);
  EXPECT_LT(cut.rate_gbps, 50);
  EXPECT_GT(p.a->counters().pacing_waits, 0u);
  // Paced: consecutive data frames leave at least one frame time at the current rate apart.
  const auto data = data_from_a(*p.link);
  size_t paced = 0;
  for (size_t i = 1; i < data.size(); ++i)
    if (data[i].at > data[i - 1].at) ++paced;
  EXPECT_GT(paced, 10u);
  // No more marks: the timers bring the rate back to line rate, without traffic.
  p.link->set_filter(nullptr);
  p.link->run(20 * kMillisecond);
  const QpInfo back = *p.a->qp_info(kQpA);
  EXPECT_DOUBLE_EQ(back.rate_gbps, 100);
  EXPECT_LT(back.alpha, cut.alpha);
  EXPECT_EQ(p.a->next_deadline(), kNever);
}

// ------------------------------------------------------------------------- control path

TEST(RoceEndpoint_Config, RefusedWithTheFieldAndRange) {
  RoceConfig c = config_for(kIpA);
  c.mtu = 1500;
  auto ep = RoceEndpoint::create(c);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(std::string(ep.status().message()).find("RoceConfig.mtu"), std::string::npos);
  EXPECT_NE(std::string(ep.status().message()).find("256, 512, 1024, 2048 or 4096"),
            std::string::npos);
  c = config_for(kIpA);
  c.retry_cnt = 8;
  ep = RoceEndpoint::create(c);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(std::string(ep.status().message()).find("retry_cnt"), std::string::npos);
  c = config_for(kIpA);
  c.dcqcn.g = 2;
  EXPECT_FALSE(RoceEndpoint::create(c).ok());
}

TEST(RoceEndpoint_Connect, OneQpPerPeerAndQpnsInRange) {
  auto a = std::move(*RoceEndpoint::create(config_for(kIpA)));
  EXPECT_EQ(a->connect_qp(kIpB, 0x50, 0x200, 0, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a->connect_qp(kIpB, 0x100, 0x200, 1 << 24, 0).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(a->connect_qp(kIpB, 0x100, 0x200, 0, 0).ok());
  EXPECT_EQ(a->connect_qp(kIpB, 0x101, 0x201, 0, 0).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(a->connect_qp(kIpB, 0x100, 0x200, 0, 0).code(), absl::StatusCode::kFailedPrecondition);
  std::vector<uint8_t> buf(10);
  EXPECT_EQ(a->post_write({1, 0x0A000009, 1, 0, buf.data(), buf.size()}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a->post_write({1, kIpB, 1, 0, buf.data(), 0}).code(),
            absl::StatusCode::kInvalidArgument);
}

// Each verb refuses a length out of range or a missing buffer, naming itself and the range;
// SEND and WRITE with immediate may carry no bytes, WRITE and READ may not.
TEST(RoceEndpoint_Connect, VerbsRefuseBadLengthsNamingTheVerb) {
  auto a = std::move(*RoceEndpoint::create(config_for(kIpA)));
  ASSERT_TRUE(a->connect_qp(kIpB, 0x100, 0x200, 0, 0).ok());
  std::vector<uint8_t> buf(10);
  const uint64_t too_long = (uint64_t{1} << 31) + 1;
  auto send = [&](const uint8_t* p, uint64_t len) {
    SendRequest sr;
    sr.peer = kIpB;
    sr.local = p;
    sr.length = len;
    return a->post_send(sr);
  };
  struct Case {
    const char* verb;
    std::function<absl::Status(const uint8_t*, uint64_t)> post;
    bool empty_ok;
  };
  const std::vector<Case> cases = {
      {"post_write",
       [&](const uint8_t* p, uint64_t n) {
         return a->post_write({1, kIpB, 1, 0, p, n});
       },
       false},
      {"post_read",
       [&](const uint8_t* p, uint64_t n) {
         return a->post_read({2, kIpB, 1, 0, const_cast<uint8_t*>(p), n});
       },
       false},
      {"post_write_with_imm",
       [&](const uint8_t* p, uint64_t n) {
         return a->post_write_with_imm({3, kIpB, 1, 0, p, n}, 7);
       },
       true},
      {"post_send", send, true},
  };
  for (const Case& c : cases) {
    for (const auto& [p, n] : std::vector<std::pair<const uint8_t*, uint64_t>>{
             {buf.data(), too_long}, {nullptr, 10}, {buf.data(), 0}}) {
      const absl::Status s = c.post(p, n);
      if (n == 0 && c.empty_ok) {
        EXPECT_TRUE(s.ok()) << c.verb << ": " << s;
        continue;
      }
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.verb << " length " << n;
      EXPECT_EQ(std::string(s.message()).rfind(std::string(c.verb) + ": length must be ", 0), 0u)
          << s;
      EXPECT_NE(std::string(s.message()).find(c.empty_ok ? "0..2^31" : "1..2^31"),
                std::string::npos)
          << s;
    }
    EXPECT_TRUE(c.post(buf.data(), buf.size()).ok()) << c.verb;
  }
}

// NCCL opens one connection per channel: two QPs to one peer, on channels 0 and 1, each
// carry the WRITEs posted on their channel, under their own UDP source port (path).
TEST(RoceEndpoint_Connect, ChannelsToOnePeerAreSeparateQpsWithTheirOwnSourcePorts) {
  auto a = std::move(*RoceEndpoint::create(config_for(kIpA)));
  auto b = std::move(*RoceEndpoint::create(config_for(kIpB)));
  ASSERT_TRUE(a->connect_qp(kIpB, kQpA, kQpB, kPsnA, kPsnB, 0).ok());
  ASSERT_TRUE(b->connect_qp(kIpA, kQpB, kQpA, kPsnB, kPsnA, 0).ok());
  ASSERT_TRUE(a->connect_qp(kIpB, kQpA + 1, kQpB + 1, kPsnA + 50, kPsnB + 50, 1).ok());
  ASSERT_TRUE(b->connect_qp(kIpA, kQpB + 1, kQpA + 1, kPsnB + 50, kPsnA + 50, 1).ok());
  EXPECT_EQ(a->qp_info(kQpA)->channel, 0u);
  EXPECT_EQ(a->qp_info(kQpA + 1)->channel, 1u);
  FakeLink link(a.get(), b.get());
  std::vector<uint8_t> src(5 * 4096), dst(5 * 4096);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  const uint32_t rkey = *b->register_memory(dst.data(), dst.size());
  WriteRequest w0{1, kIpB, rkey, 0, src.data(), 3 * 4096};  // 3 packets on channel 0
  WriteRequest w1{2, kIpB, rkey, 3 * 4096, src.data() + 3 * 4096, 2 * 4096};
  w1.channel = 1;  // 2 packets on channel 1
  ASSERT_TRUE(a->post_write(w0).ok());
  ASSERT_TRUE(a->post_write(w1).ok());
  link.run(kSecond);
  const auto c = drain(*a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  EXPECT_EQ(src, dst);
  // Expect: channel 0's packets go to QP B on A's first QP's port, channel 1's to QP B+1 on
  // the second's, with the PSNs of their own QPs; the two ports differ.
  const uint16_t sport0 = a->udp_sport(kQpA), sport1 = a->udp_sport(kQpA + 1);
  EXPECT_NE(sport0, sport1);
  size_t on0 = 0, on1 = 0;
  for (const Sent& s : data_from_a(link)) {
    if (s.dest_qp == kQpB) {
      EXPECT_EQ(s.sport, sport0);
      EXPECT_EQ(s.psn, kPsnA + on0++);
    } else {
      EXPECT_EQ(s.dest_qp, kQpB + 1);
      EXPECT_EQ(s.sport, sport1);
      EXPECT_EQ(s.psn, kPsnA + 50 + on1++);
    }
  }
  EXPECT_EQ(on0, 3u);
  EXPECT_EQ(on1, 2u);
  EXPECT_EQ(b->qp_info(kQpB)->msn, 1u);
  EXPECT_EQ(b->qp_info(kQpB + 1)->msn, 1u);
}

// Expect: a post naming a channel with no QP is refused, naming the channel; one QP per peer
// and channel.
TEST(RoceEndpoint_Connect, PostOnAnUnconnectedChannelIsRefusedNamingIt) {
  using testing_util::Mentions;
  auto a = std::move(*RoceEndpoint::create(config_for(kIpA)));
  ASSERT_TRUE(a->connect_qp(kIpB, 0x100, 0x200, 0, 0, 0).ok());
  ASSERT_TRUE(a->connect_qp(kIpB, 0x101, 0x201, 0, 0, 1).ok());
  const absl::Status again = a->connect_qp(kIpB, 0x102, 0x202, 0, 0, 1);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(Mentions(again, "channel 1"));
  std::vector<uint8_t> buf(10);
  WriteRequest w{1, kIpB, 1, 0, buf.data(), buf.size()};
  w.channel = 3;
  const absl::Status s = a->post_write(w);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Mentions(s, "post_write: no QP connected to peer"));
  EXPECT_TRUE(Mentions(s, "on channel 3"));
  ReadRequest r{2, kIpB, 1, 0, buf.data(), buf.size()};
  r.channel = 2;
  EXPECT_TRUE(Mentions(a->post_read(r), "post_read: no QP connected to peer"));
  EXPECT_TRUE(Mentions(a->post_read(r), "on channel 2"));
  SendRequest sr{3, kIpB, buf.data(), buf.size()};
  sr.channel = 9;
  EXPECT_TRUE(Mentions(a->post_send(sr), "on channel 9"));
  w.channel = 1;
  EXPECT_TRUE(a->post_write(w).ok());  // the connected channels take posts
  EXPECT_EQ(a->qp_info(0x101)->writes_outstanding, 1u);
  EXPECT_EQ(a->qp_info(0x100)->writes_outstanding, 0u);
}

// tx() passes over QPs with nothing to send: with 15 QPs connected and each waiting for its
// ACK, a call visits none; a write posted on one makes it visit that one alone.
TEST(RoceEndpoint_Tx, IdleQpsAreNotVisited) {
  auto a = std::move(*RoceEndpoint::create(config_for(kIpA)));
  std::vector<uint8_t> src(1024, 1), buf(9216);
  Frame f{buf.data(), 0, 0, static_cast<uint32_t>(buf.size())};
  Frame* fp = &f;
  auto tx = [&] {
    size_t frames = 0;
    while (a->tx(std::span<Frame* const>(&fp, 1), kMicrosecond) == 1) ++frames;
    return frames;
  };
  for (uint32_t peer = 1; peer <= 15; ++peer) {
    ASSERT_TRUE(a->connect_qp(kIpB + peer, 0x100 + peer, 0x200, 0, 0).ok());
    ASSERT_TRUE(a->post_write({peer, kIpB + peer, 1, 0, src.data(), src.size()}).ok());
  }
  EXPECT_EQ(tx(), 15u);  // one single-packet write per QP; nothing answers
  const uint64_t before = a->counters().tx_qp_visits;
  EXPECT_EQ(tx(), 0u);
  // Expect: every QP waits for its ACK; none is looked at.
  EXPECT_EQ(a->counters().tx_qp_visits, before);
  ASSERT_TRUE(a->post_write({99, kIpB + 7, 1, 0, src.data(), src.size()}).ok());
  EXPECT_EQ(tx(), 1u);
  // Expect: the QP to peer 7 sends the new write, then is found idle: two visits.
  EXPECT_EQ(a->counters().tx_qp_visits, before + 2);
}

TEST(RoceEndpoint_Post, SendQueueAndCompletionQueueAreBounded) {
  RoceConfig c = config_for(kIpA);
  c.max_send_wr = 4;
  c.cq_entries = 6;
  Pair p(c, config_for(kIpB), 100);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(p.write(i).ok());
  EXPECT_EQ(p.write(9).code(), absl::StatusCode::kResourceExhausted);  // SQ full
  p.link->run(kSecond);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(p.write(10 + i).ok());
  EXPECT_EQ(p.write(19).code(), absl::StatusCode::kResourceExhausted);  // 6 completions owed
  p.link->run(kSecond);
  EXPECT_EQ(drain(*p.a).size(), 6u);
  EXPECT_TRUE(p.write(20).ok());
}

// ------------------------------------------------------------------------- memory

// Expect: the tables cost what is used, not what the bounds allow. Created with the largest
// bounds (fixed tables were 65536 QPs and 2^24 completions: 670+ MB), the endpoint holds
// nothing; connecting the last QPN allocates one chunk of QPs (and the chunk index up to it);
// a few posts grow the rings to their first size.
TEST(RoceEndpoint_Memory, LargestBoundsCostLittleUntilUsed) {
  RoceConfig c = config_for(kIpA);
  c.max_qps = 65536;
  c.cq_entries = 1u << 24;
  c.max_recvs = 65536;
  c.max_send_wr = 65536;
  auto a = std::move(*RoceEndpoint::create(c));
  EXPECT_EQ(a->qps_allocated(), 0u);
  EXPECT_EQ(a->footprint(), 0u);
  const uint32_t last = c.qpn_base + c.max_qps - 1;
  ASSERT_TRUE(a->connect_qp(kIpB, last, 0x200, 0, 0).ok());
  EXPECT_EQ(a->qps_allocated(), RoceEndpoint::kQpChunk);
  const size_t connected = a->footprint();
  EXPECT_GT(connected, 0u);
  EXPECT_LT(connected, 64u * 1024) << "one chunk of QPs, its index and one read queue";
  std::vector<uint8_t> buf(100);
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(a->post_write({i, kIpB, 1, 0, buf.data(), buf.size()}).ok());
    ASSERT_TRUE(a->post_recv({100 + i, buf.data(), buf.size()}).ok());
  }
  EXPECT_GT(a->footprint(), connected);
  EXPECT_LT(a->footprint() - connected, 4096u) << "first ring sizes: a few entries each";
  EXPECT_EQ(a->qp_info(c.qpn_base)->state, QpState::kReset);  // its chunk was never allocated
  EXPECT_EQ(a->qp_info(last)->writes_outstanding, 3u);
  EXPECT_EQ(a->qps_allocated(), RoceEndpoint::kQpChunk);
}

// Expect: bounds that are not powers of two refuse exactly at the bound, with the same
// messages as fixed tables did, and everything accepted up to it completes in posting order
// (the rings grew far enough for the bound, and their storage rounding lets no more in).
TEST(RoceEndpoint_Memory, BoundsRefuseExactlyAtTheConfiguredValues) {
  RoceConfig c = config_for(kIpA);
  c.max_send_wr = 11;
  c.cq_entries = 13;
  c.max_recvs = 5;
  Pair p(c, config_for(kIpB), 11 * 100);
  auto write = [&](uint64_t i) {
    return p.a->post_write({i, kIpB, p.rkey, i % 11 * 100, p.src.data() + i % 11 * 100, 100});
  };
  std::vector<uint8_t> rbuf(64);
  auto recv = [&](uint64_t i) { return p.a->post_recv({1000 + i, rbuf.data(), rbuf.size()}); };
  for (uint64_t i = 0; i < 11; ++i) ASSERT_TRUE(write(i).ok()) << i;
  absl::Status s = write(11);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "post_write: send queue full (max_send_wr)");
  for (uint64_t i = 0; i < 2; ++i) ASSERT_TRUE(recv(i).ok()) << i;  // 13 slots reserved
  s = recv(2);
  EXPECT_EQ(s.message(), "post_recv: completion queue full (cq_entries); poll first");
  p.link->run(kSecond);
  s = write(11);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "post_write: completion queue full (cq_entries); poll first");
  const auto done = drain(*p.a);
  ASSERT_EQ(done.size(), 11u);
  for (uint64_t i = 0; i < 11; ++i) {
    EXPECT_EQ(done[i].wr_id, i);
    EXPECT_EQ(done[i].status, OpStatus::kSuccess);
  }
  EXPECT_TRUE(p.intact());
  for (uint64_t i = 2; i < 5; ++i) ASSERT_TRUE(recv(i).ok()) << i;
  s = recv(5);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "post_recv: receive queue full (max_recvs)");
  for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(write(20 + i).ok()) << i;  // 5 + 8 = 13
  s = write(28);
  EXPECT_EQ(s.message(), "post_write: completion queue full (cq_entries); poll first");
  p.link->run(2 * kSecond);
  const auto again = drain(*p.a);
  ASSERT_EQ(again.size(), 8u);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_EQ(again[i].wr_id, 20 + i);
}

// Expect: growing the send queue while its WRs wrap around the old storage, and the
// completion ring while unpolled completions wrap around it, keeps every WR and completion
// at its place: each write lands where it was aimed and completions come out in posting
// order.
TEST(RoceEndpoint_Memory, WritesAndCompletionsKeepTheirOrderAcrossRingGrowth) {
  constexpr uint64_t kLen = 1000, kWrites = 28;
  Pair p(kWrites * kLen);
  auto write = [&](uint64_t i) {
    return p.a->post_write({i, kIpB, p.rkey, i * kLen, p.src.data() + i * kLen, kLen});
  };
  std::vector<uint64_t> order;
  auto poll = [&](size_t max) {
    std::vector<Completion> c(max);
    c.resize(p.a->poll_completions(c));
    for (const Completion& x : c) {
      EXPECT_EQ(x.status, OpStatus::kSuccess);
      EXPECT_EQ(x.bytes, kLen);
      order.push_back(x.wr_id);
    }
  };
  for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(write(i).ok());
  p.link->run(kSecond);
  poll(8);  // both rings: 8 entries, all consumed
  // WRs 8..15 sit in slots 0..7; the ninth grows the send queue to 16 (their slots: 8..15).
  for (uint64_t i = 8; i < 17; ++i) ASSERT_TRUE(write(i).ok());
  p.link->run(2 * kSecond);
  poll(3);  // completions 11..16 unpolled; 16 sits in slot 0 of 16
  // The completion ring grows to 32 at the 17th reserved slot (completion 16: slot 16).
  for (uint64_t i = 17; i < kWrites; ++i) ASSERT_TRUE(write(i).ok());
  p.link->run(3 * kSecond);
  poll(64);
  ASSERT_EQ(order.size(), kWrites);
  for (uint64_t i = 0; i < kWrites; ++i) EXPECT_EQ(order[i], i);
  EXPECT_TRUE(p.intact());
  EXPECT_EQ(p.a->counters().tx_retx, 0u);
}

// Expect: a QP in the error state connected again keeps its slot and its queues' storage
// (nothing shrinks, nothing is allocated again) and works as before.
TEST(RoceEndpoint_Memory, ReconnectingReusesTheQueuesItHas) {
  constexpr uint64_t kLen = 500;
  Pair p(40 * kLen);
  auto write = [&](uint64_t id, uint64_t i) {
    return p.a->post_write({id, kIpB, p.rkey, i * kLen, p.src.data() + i * kLen, kLen});
  };
  for (uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(write(i, i).ok());
  p.link->run(kSecond);
  EXPECT_EQ(drain(*p.a).size(), 20u);
  ASSERT_TRUE(p.a->post_write({99, kIpB, p.rkey + 7, 0, p.src.data(), 10}).ok());  // bad R_Key
  p.link->run(2 * kSecond);
  ASSERT_EQ(p.a->qp_info(kQpA)->state, QpState::kError);
  ASSERT_EQ(p.b->qp_info(kQpB)->state, QpState::kError);
  const size_t fa = p.a->footprint(), fb = p.b->footprint();
  ASSERT_TRUE(p.a->connect_qp(kIpB, kQpA, kQpB, 5000, 9000).ok());
  ASSERT_TRUE(p.b->connect_qp(kIpA, kQpB, kQpA, 9000, 5000).ok());
  EXPECT_EQ(p.a->footprint(), fa);
  EXPECT_EQ(p.b->footprint(), fb);
  drain(*p.a);
  std::fill(p.dst.begin(), p.dst.end(), 0);
  for (uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(write(100 + i, 20 + i).ok());
  p.link->run(3 * kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 20u);
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(c[i].wr_id, 100 + i);
  EXPECT_TRUE(
      std::equal(p.src.begin() + 20 * kLen, p.src.begin() + 40 * kLen, p.dst.begin() + 20 * kLen));
  EXPECT_EQ(p.a->footprint(), fa) << "the queues had room: nothing grew";
  EXPECT_EQ(p.a->qps_allocated(), RoceEndpoint::kQpChunk);
}

// ------------------------------------------------------------------------- hostile input

// Sends a hand-built RoCEv2 frame to `ep`.
void inject(RoceEndpoint& ep, uint32_t src, uint32_t dst, RoceOpcode op, uint32_t dest_qp,
            uint32_t psn, size_t payload, uint32_t rkey = 1) {
  std::vector<uint8_t> buf(9000);
  wire::Encap e;
  e.src_ip4 = src;
  e.dst_ip4 = dst;
  e.sport = 0xC000;
  e.dport = wire::kRoceUdpPort;
  e.udp_checksum = false;
  e.icrc = true;
  wire::FrameBuilder b(buf, e);
  auto* bth = b.add<wire::Bth>();
  bth->set_opcode(op);
  bth->set_dest_qp(dest_qp);
  bth->set_psn(psn);
  bth->set_pkey(0xFFFF);
  if (op == RoceOpcode::kRcWriteFirst || op == RoceOpcode::kRcWriteOnly) {
    auto* r = b.add<wire::Reth>();
    r->set_rkey(rkey);
    r->set_dma_length(static_cast<uint32_t>(payload));
  }
  b.add_bytes(payload);
  size_t n = 0;
  ASSERT_EQ(b.finish(&n), wire::WireError::kOk);
  testing::deliver(ep, std::span<const uint8_t>(buf.data(), n));
}

TEST(RoceEndpoint_Hostile, UnknownQpWrongPeerAndBadOpcodeSequenceAreCounted) {
  Pair p(4096);
  inject(*p.b, kIpA, kIpB, RoceOpcode::kRcWriteOnly, 0x7777, kPsnA, 16);      // no such QP
  inject(*p.b, kIpA, kIpB, RoceOpcode::kRcWriteOnly, 0x100 + 63, kPsnA, 16);  // not connected
  inject(*p.b, 0x0A000009, kIpB, RoceOpcode::kRcWriteOnly, kQpB, kPsnA, 16);  // wrong peer
  EXPECT_EQ(p.b->counters().rx_unknown_qp, 3u);
  inject(*p.b, kIpA, kIpB, RoceOpcode::kUcSendOnly, kQpB, kPsnA, 16);  // UC: not implemented
  EXPECT_EQ(p.b->counters().rx_unsupported, 1u);
  inject(*p.b, kIpA, kIpB, RoceOpcode::kRcWriteOnly, kQpB, kPsnA, 16, /*rkey=*/1);
  EXPECT_EQ(p.b->counters().rx_placed, 1u);
  // A MIDDLE without a FIRST: NAK invalid request, and the QP fails.
  inject(*p.b, kIpA, kIpB, RoceOpcode::kRcWriteMiddle, kQpB, kPsnA + 1, 4096);
  EXPECT_EQ(p.b->counters().rx_invalid_request, 1u);
  EXPECT_EQ(p.b->qp_info(kQpB)->state, QpState::kError);
  inject(*p.b, kIpA, kIpB, RoceOpcode::kRcWriteOnly, kQpB, kPsnA + 2, 16);
  EXPECT_EQ(p.b->counters().rx_qp_error, 1u);
  std::vector<uint8_t> out(256);
  Frame f{out.data(), 0, 0, static_cast<uint32_t>(out.size())};
  Frame* fp = &f;
  ASSERT_EQ(p.b->tx(std::span<Frame* const>(&fp, 1), 0), 1u);
  wire::Decoded d;
  ASSERT_EQ(wire::decode_frame(std::span(out.data(), f.len), &d), wire::WireError::kOk);
  EXPECT_EQ(d.aeth->syndrome_type(), wire::AethType::kNak);
  EXPECT_EQ(d.aeth->syndrome_value(), 1);  // invalid request
}

}  // namespace
}  // namespace uet
