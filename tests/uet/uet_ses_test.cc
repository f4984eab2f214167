// SES READ and SEND in the UET engine (transport/uet/uet_endpoint.h), on the fake link
// (tests/common/fake_link.h: simulated time, every emitted frame must decode). The test decides
// per frame what is lost, duplicated or delayed.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/send_check.h"
#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

using testing::drain;
using testing::pattern;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

UetConfig config_for(uint32_t ip) { return testing::uet_config(ip, /*seed=*/99); }

// A and B on the fake link (tests/common/uet_pair.h); the filter returns the copies (0 = lost).
struct Link : testing::UetLink {
  explicit Link(const UetConfig& a = config_for(kIpA), const UetConfig& b = config_for(kIpB))
      : UetLink(a, b, /*jitter_seed=*/11) {}
};

bool is_request(const wire::Decoded& d) { return d.pds_type == wire::PdsType::kRudReq; }
bool is_read_data(const wire::Decoded& d) {
  return d.ses_as<wire::SesResponseData>() != nullptr;
}

// ------------------------------------------------------------------ READ

class UetSes_ReadSize : public ::testing::TestWithParam<size_t> {};

TEST_P(UetSes_ReadSize, ArrivesIntactWithOneResponsePerChunk) {
  const size_t n = GetParam();
  Link link;
  std::vector<uint8_t> remote = pattern(n + 100, 3), local(n, 0);
  const uint32_t rkey = *link.b().register_memory(remote.data(), remote.size());
  ReadRequest rr;
  rr.wr_id = 42;
  rr.peer = kIpB;
  rr.rkey = rkey;
  rr.remote_offset = 100;
  rr.local = local.data();
  rr.length = n;
  ASSERT_TRUE(link.a().post_read(rr).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 42u);
  EXPECT_EQ(c[0].op, Opcode::kRead);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[0].bytes, n);
  EXPECT_TRUE(std::equal(local.begin(), local.end(), remote.begin() + 100));
  // Expect: one READ request and one ACK with data per 4 KiB chunk, nothing resent.
  const uint64_t chunks = (n + 4095) / 4096;
  EXPECT_EQ(link.a().counters().tx_data, chunks);
  EXPECT_EQ(link.a().counters().tx_retx, 0u);
  EXPECT_EQ(link.b().counters().tx_read_data, chunks);
  EXPECT_EQ(link.a().counters().rx_read_data, chunks);
  EXPECT_TRUE(drain(link.b()).empty());  // a READ completes nothing at the target
}

INSTANTIATE_TEST_SUITE_P(Sizes, UetSes_ReadSize, ::testing::Values(1, 4096, 1 << 20));

TEST(UetSes_Read, LossReorderingAndDuplicationPlaceEveryChunkOnce) {
  Link link;
  const size_t n = 1 << 20;
  std::vector<uint8_t> remote = pattern(n, 5), local(n, 0);
  const uint32_t rkey = *link.b().register_memory(remote.data(), remote.size());
  std::mt19937 rng(9);
  int lost_requests = 0, lost_data = 0;
  link.set_jitter(10 * kMicrosecond);
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from == 0 && is_request(d)) {
      if (rng() % 20 == 0) {
        ++lost_requests;
        return 0;
      }
      return rng() % 10 == 0 ? 2 : 1;  // some READs arrive twice
    }
    if (from == 1 && is_read_data(d)) {
      if (rng() % 20 == 0) {
        ++lost_data;
        return 0;
      }
      return rng() % 10 == 0 ? 2 : 1;  // some data arrives twice
    }
    return 1;
  });
  ASSERT_TRUE(link.a().post_read({1, kIpB, rkey, 0, local.data(), n}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[0].op, Opcode::kRead);
  EXPECT_TRUE(local == remote);
  EXPECT_GT(lost_requests, 0);
  EXPECT_GT(lost_data, 0);
  // Expect: every chunk placed exactly once; duplicates and repeats dropped and counted.
  EXPECT_EQ(link.a().counters().rx_read_data, 256u);
  EXPECT_GT(link.a().counters().rx_stale_read_data, 0u);
  EXPECT_GT(link.b().counters().rx_duplicates, 0u);
  EXPECT_GT(link.a().counters().tx_retx, 0u);
}

TEST(UetSes_Read, BadKeyAndBadRangeAreRemoteAccessErrors) {
  Link link;
  std::vector<uint8_t> remote = pattern(8192, 1), local(16384, 0);
  const uint32_t rkey = *link.b().register_memory(remote.data(), remote.size());
  ASSERT_TRUE(link.a().post_read({1, kIpB, rkey + 7, 0, local.data(), 4096}).ok());
  ASSERT_TRUE(link.a().post_read({2, kIpB, rkey, 4096, local.data(), 8192}).ok());  // past the end
  ASSERT_TRUE(link.a().post_read({3, kIpB, rkey, 0, local.data(), 8192}).ok());
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(c[0].bytes, 0u);
  EXPECT_EQ(c[1].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(c[2].status, OpStatus::kSuccess);
  for (const auto& x : c) EXPECT_EQ(x.op, Opcode::kRead);
  EXPECT_EQ(link.b().counters().rx_bad_key, 1u);
  EXPECT_EQ(link.b().counters().rx_bad_range, 1u);  // the second chunk of read 2
  EXPECT_TRUE(std::equal(remote.begin(), remote.end(), local.begin()));
}

TEST(UetSes_Read, UnsupportedModeVerbPairsAreRefusedNamingModeAndVerb) {
  Link link;
  std::vector<uint8_t> local(64);
  // Expect: READ over UUD and SEND over RUDI are refused (uet_modes.cc check_mode).
  ReadRequest rr{1, kIpB, 1, 0, local.data(), 64, DeliveryMode::kUud};
  const absl::Status s = link.a().post_read(rr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(s.message()).find("kUud"), std::string::npos) << s.message();
  EXPECT_NE(std::string(s.message()).find("READ"), std::string::npos) << s.message();
  SendRequest sr;
  sr.peer = kIpB;
  sr.mode = DeliveryMode::kRudi;
  const absl::Status t = link.a().post_send(sr);
  EXPECT_NE(std::string(t.message()).find("kRudi"), std::string::npos) << t.message();
  EXPECT_NE(std::string(t.message()).find("SEND"), std::string::npos) << t.message();
}

// ------------------------------------------------------------------ SEND

TEST(UetSes_Send, SeveralSizesLandInPostedBuffersInPostingOrder) {
  Link link;
  testing::SendsIntoPostedBuffers sends({0, 1, 4096, 4097, 50000});
  ASSERT_NO_FATAL_FAILURE(sends.post(link.a(), kIpB, link.b()));
  link.run(kSecond);
  ASSERT_NO_FATAL_FAILURE(sends.expect_landed(drain(link.a()), drain(link.b()), kIpA));
  // Expect: the SOM packet carries the immediate data in header_data with `hd`.
  EXPECT_EQ(link.a().counters().tx_retx, 0u);
}

TEST(UetSes_Send, LossReorderingAndDuplicationDeliverEveryMessageOnceInOrderOfBuffers) {
  Link link;
  std::mt19937 rng(4);
  link.set_jitter(15 * kMicrosecond);
  link.set_filter([&](int from, const wire::Decoded& d) {
    if (from == 0 && is_request(d)) return rng() % 12 == 0 ? 0 : rng() % 8 == 0 ? 2 : 1;
    return rng() % 15 == 0 ? 0 : 1;  // ACKs lost too
  });
  constexpr int kMsgs = 12;
  std::vector<std::vector<uint8_t>> msgs, bufs;
  for (int i = 0; i < kMsgs; ++i) {
    msgs.push_back(pattern(3000 + 7000 * static_cast<size_t>(i), static_cast<uint32_t>(i)));
    bufs.emplace_back(100000, 0);
    ASSERT_TRUE(link.b().post_recv({static_cast<uint64_t>(i), bufs[i].data(), bufs[i].size()}).ok());
  }
  for (int i = 0; i < kMsgs; ++i) {
    SendRequest sr{static_cast<uint64_t>(i), kIpB, msgs[i].data(), msgs[i].size()};
    ASSERT_TRUE(link.a().post_send(sr).ok());
  }
  link.run(kSecond);
  const auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), static_cast<size_t>(kMsgs));
  for (const auto& c : sc) EXPECT_EQ(c.status, OpStatus::kSuccess);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), static_cast<size_t>(kMsgs));
  std::vector<bool> seen(kMsgs, false);
  for (int i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(rc[i].wr_id, static_cast<uint64_t>(i));  // buffer posting order
    ASSERT_EQ(rc[i].status, OpStatus::kSuccess);
    // Whichever message claimed buffer i (arrival order), it is whole and delivered once.
    const int m = static_cast<int>((rc[i].bytes - 3000) / 7000);
    ASSERT_LT(m, kMsgs);
    EXPECT_FALSE(seen[m]);
    seen[m] = true;
    EXPECT_EQ(rc[i].bytes, msgs[m].size());
    EXPECT_TRUE(std::equal(msgs[m].begin(), msgs[m].end(), bufs[i].begin())) << "buffer " << i;
  }
  EXPECT_GT(link.a().counters().tx_retx, 0u);
  EXPECT_GT(link.b().counters().rx_duplicates, 0u);
}

TEST(UetSes_Send, NoBufferUntilLaterIsRetriedAndSucceeds) {
  Link link;
  std::vector<uint8_t> msg = pattern(10000, 2), buf(10000, 0);
  ASSERT_TRUE(link.a().post_send({9, kIpB, msg.data(), msg.size(), DeliveryMode::kRud, true, 77}).ok());
  link.run(120 * kMicrosecond);
  EXPECT_TRUE(drain(link.a()).empty());
  EXPECT_GE(link.b().counters().rx_rnr, 3u);  // every packet NACKed RCVD_SES_PROCG
  ASSERT_TRUE(link.b().post_recv({5, buf.data(), buf.size()}).ok());
  link.run(kSecond);
  const auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  EXPECT_EQ(sc[0].op, Opcode::kSend);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 5u);
  EXPECT_EQ(rc[0].status, OpStatus::kSuccess);
  EXPECT_EQ(rc[0].bytes, 10000u);
  EXPECT_TRUE(rc[0].has_imm);
  EXPECT_EQ(rc[0].imm, 77u);
  EXPECT_EQ(buf, msg);
  // Expect: RNR waits are not losses: no timeouts counted, the resends are RNR resends.
  EXPECT_EQ(link.a().counters().timeouts, 0u);
  EXPECT_GT(link.a().counters().rnr_retx, 0u);
}

TEST(UetSes_Send, NoBufferEverEndsInReceiverNotReadyAndThePdcStaysUsable) {
  UetConfig a = config_for(kIpA);
  a.rnr_retries = 3;
  a.idle_timeout = 0;  // the same PDC carries the second SEND (no CLOSE, no REQ_CLOSE)
  UetConfig b = config_for(kIpB);
  b.idle_timeout = 0;
  Link link(a, b);
  std::vector<uint8_t> msg = pattern(9000, 2), msg2 = pattern(5000, 3), buf(9000, 0);
  ASSERT_TRUE(link.a().post_send({1, kIpB, msg.data(), msg.size()}).ok());
  link.run(kSecond);
  auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kReceiverNotReady);
  EXPECT_EQ(sc[0].op, Opcode::kSend);
  EXPECT_EQ(sc[0].bytes, 0u);
  EXPECT_TRUE(drain(link.b()).empty());
  // Expect: the abandoned packets went once more with `ie` and were dropped, claiming nothing.
  EXPECT_EQ(link.b().counters().rx_initiator_err, 3u);
  EXPECT_EQ(link.a().counters().timeouts, 0u);
  ASSERT_TRUE(link.b().post_recv({7, buf.data(), buf.size()}).ok());
  ASSERT_TRUE(link.a().post_send({2, kIpB, msg2.data(), msg2.size()}).ok());
  link.run(kSecond);
  sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 7u);
  EXPECT_EQ(rc[0].bytes, msg2.size());
  EXPECT_TRUE(std::equal(msg2.begin(), msg2.end(), buf.begin()));
  EXPECT_EQ(link.a().pdcs_in_use(), 1u);
}

// The initiator counts a PSN's RNR NACKs beside its send window, by PSN % mpr. Expect: a SEND
// whose PSN lands where an earlier PSN was NACKed (64 PSNs later, mpr 64) gets its own
// rnr_retries NACKs before giving up, not what the earlier one left.
TEST(UetSes_Send, RnrCountStartsAfreshWhereAnEarlierPsnWasCounted) {
  UetConfig a = config_for(kIpA);
  a.mpr = 64;
  a.rnr_retries = 3;
  a.idle_timeout = 0;  // one PDC carries every PSN below
  UetConfig b = config_for(kIpB);
  b.mpr = 64;
  b.idle_timeout = 0;
  Link link(a, b);
  std::vector<uint8_t> msg = pattern(100, 4), buf(100, 0);
  // Its first PSN: a one-packet SEND NACKed twice, then received.
  ASSERT_TRUE(link.a().post_send({1, kIpB, msg.data(), msg.size()}).ok());
  Time t = 0;
  while (link.b().counters().rx_rnr < 2 && t < kSecond) link.run(t += kMicrosecond);
  ASSERT_EQ(link.b().counters().rx_rnr, 2u);
  ASSERT_TRUE(link.b().post_recv({5, buf.data(), buf.size()}).ok());
  link.run(t += kSecond);
  auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  // The next 63 PSNs: a WRITE of 63 packets.
  std::vector<uint8_t> data = pattern(63 * size_t{a.payload_bytes}, 5), mem(data.size(), 0);
  const uint32_t rkey = *link.b().register_memory(mem.data(), mem.size());
  WriteRequest wr;
  wr.wr_id = 2;
  wr.peer = kIpB;
  wr.rkey = rkey;
  wr.local = data.data();
  wr.length = data.size();
  ASSERT_TRUE(link.a().post_write(wr).ok());
  link.run(t += kSecond);
  sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  EXPECT_EQ(mem, data);
  // PSN 64: the first one's position. No buffer: NACKed rnr_retries times, then a last time
  // that gives it up.
  const uint64_t before = link.b().counters().rx_rnr;
  ASSERT_TRUE(link.a().post_send({3, kIpB, msg.data(), msg.size()}).ok());
  link.run(t += kSecond);
  sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kReceiverNotReady);
  EXPECT_EQ(link.b().counters().rx_rnr - before, a.rnr_retries + 1u);
}

TEST(UetSes_Send, LongerThanTheBufferIsALengthErrorAtBothEnds) {
  Link link;
  std::vector<uint8_t> msg = pattern(9000, 6), ok = pattern(700, 8);
  std::vector<uint8_t> mem(3000, 0x11);
  ASSERT_TRUE(link.b().post_recv({1, mem.data(), 1000}).ok());
  ASSERT_TRUE(link.b().post_recv({2, mem.data() + 1000, 1000}).ok());
  ASSERT_TRUE(link.a().post_send({10, kIpB, msg.data(), msg.size()}).ok());
  ASSERT_TRUE(link.a().post_send({11, kIpB, ok.data(), ok.size()}).ok());
  link.run(kSecond);
  const auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0].status, OpStatus::kLengthError);
  EXPECT_EQ(sc[1].status, OpStatus::kSuccess);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_EQ(rc[0].wr_id, 1u);
  EXPECT_EQ(rc[0].status, OpStatus::kLengthError);
  EXPECT_EQ(rc[0].bytes, 0u);
  EXPECT_EQ(rc[1].wr_id, 2u);
  EXPECT_EQ(rc[1].status, OpStatus::kSuccess);
  // Expect: no byte of the long message written anywhere; the next message landed.
  EXPECT_TRUE(std::all_of(mem.begin(), mem.begin() + 1000, [](uint8_t b) { return b == 0x11; }));
  EXPECT_TRUE(std::equal(ok.begin(), ok.end(), mem.begin() + 1000));
  EXPECT_TRUE(std::all_of(mem.begin() + 1700, mem.end(), [](uint8_t b) { return b == 0x11; }));
  EXPECT_EQ(link.b().counters().rx_length_error, 1u);
}

TEST(UetSes_Send, ZeroLengthSendWithImmediateLost) {
  Link link;
  int dropped = 0;
  link.set_filter([&](int from, const wire::Decoded& d) {
    return from == 0 && is_request(d) && dropped++ == 0 ? 0 : 1;
  });
  std::vector<uint8_t> buf(16, 0);
  ASSERT_TRUE(link.b().post_recv({3, buf.data(), buf.size()}).ok());
  ASSERT_TRUE(link.a().post_send({4, kIpB, nullptr, 0, DeliveryMode::kRud, true, 5}).ok());
  link.run(kSecond);
  const auto sc = drain(link.a());
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, OpStatus::kSuccess);
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].bytes, 0u);
  EXPECT_TRUE(rc[0].has_imm);
  EXPECT_EQ(rc[0].imm, 5u);
  EXPECT_EQ(link.a().counters().timeouts, 1u);  // the only packet, repaired by its RTO
}

// MSG_ERROR (spec/uet.md §4.1, our choice): the initiator declares a message in progress in
// error. Forged frames into B alone: a three-packet SEND, its error between the second and
// the third packet; then an error naming no message.
struct Packet {
  uint32_t psn = 0;
  wire::SesOpcode op = wire::SesOpcode::kSend;
  uint16_t message_id = 9;
  bool som = false, eom = false;
  uint32_t offset = 0, payload = 0, length = 300;
};
std::vector<uint8_t> forge_request(const Packet& r) {
  std::vector<uint8_t> buf(1024);
  wire::FrameBuilder fb(buf, wire::Encap{.src_ip4 = kIpA, .dst_ip4 = kIpB, .sport = 0xC000});
  auto* p = fb.add<wire::PdsRudRod>();
  p->set_type(wire::PdsType::kRudReq);
  p->set_psn(r.psn);
  p->set_spdcid(7);
  p->set_clear_psn_offset(-1);
  p->set_syn(true);  // no ACK read here: every packet SYN, start PSN 5000
  p->set_psn_offset(static_cast<uint16_t>(r.psn - 5000));
  p->set_next_hdr(wire::NextHeader::kReqStd);
  auto* s = fb.add<wire::SesStandardRequest>();
  s->set_opcode(r.op);
  s->set_som(r.som);
  s->set_eom(r.eom);
  s->set_message_id(r.message_id);
  s->set_request_length(r.length);
  if (!r.som && r.payload > 0) {
    s->set_payload_length(static_cast<uint16_t>(r.payload));
    s->set_message_offset(r.offset);
  }
  if (r.payload > 0) std::fill_n(fb.add_bytes(r.payload), r.payload, 0xAB);
  size_t n = 0;
  EXPECT_EQ(fb.finish(&n), wire::WireError::kOk);
  buf.resize(n);
  return buf;
}

TEST(UetSes_MsgError, EndsTheMessageItNamesInErrorAndNothingElse) {
  auto b = std::move(*UetEndpoint::create(config_for(kIpB)));
  std::vector<uint8_t> buf(300, 0), buf2(300, 0);
  ASSERT_TRUE(b->post_recv({1, buf.data(), buf.size()}).ok());
  ASSERT_TRUE(b->post_recv({2, buf2.data(), buf2.size()}).ok());
  testing::deliver(*b, forge_request({.psn = 5000, .som = true, .payload = 100}));
  testing::deliver(*b, forge_request({.psn = 5001, .offset = 100, .payload = 100}));
  testing::deliver(*b, forge_request({.psn = 5002, .op = wire::SesOpcode::kMsgError,
                                      .som = true, .eom = true, .length = 0}));
  EXPECT_EQ(b->counters().rx_msg_error, 1u);
  EXPECT_TRUE(drain(*b).empty());  // its last packet is still to come
  testing::deliver(*b, forge_request({.psn = 5003, .eom = true, .offset = 200, .payload = 100}));
  auto rc = drain(*b);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 1u);
  EXPECT_EQ(rc[0].status, OpStatus::kRemoteInvalidRequest);
  EXPECT_EQ(rc[0].bytes, 0u);
  // One naming a message not in progress: acknowledged, counted, nothing ended.
  testing::deliver(*b, forge_request({.psn = 5004, .op = wire::SesOpcode::kMsgError,
                                      .message_id = 77, .som = true, .eom = true, .length = 0}));
  EXPECT_EQ(b->counters().rx_msg_error_unknown, 1u);
  testing::deliver(*b, forge_request({.psn = 5005, .message_id = 10, .som = true, .eom = true,
                                      .payload = 50, .length = 50}));
  rc = drain(*b);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 2u);
  EXPECT_EQ(rc[0].status, OpStatus::kSuccess);
  EXPECT_EQ(rc[0].bytes, 50u);
}

// ------------------------------------------------------------------ mixed

TEST(UetSes_Mixed, WriteReadSendOnOnePdcUnderLossCompleteInPostingOrder) {
  Link link;
  std::mt19937 rng(21);
  link.set_filter([&](int, const wire::Decoded&) { return rng() % 25 == 0 ? 0 : 1; });
  std::vector<uint8_t> wsrc = pattern(300000, 1), region(600000, 0);
  std::vector<uint8_t> remote_init = pattern(200000, 2);
  std::copy(remote_init.begin(), remote_init.end(), region.begin() + 400000);
  const uint32_t rkey = *link.b().register_memory(region.data(), region.size());
  std::vector<uint8_t> rdst(200000, 0), smsg = pattern(123456, 3), rbuf(200000, 0);
  ASSERT_TRUE(link.b().post_recv({50, rbuf.data(), rbuf.size()}).ok());
  ASSERT_TRUE(link.a().post_write({1, kIpB, rkey, 0, wsrc.data(), wsrc.size()}).ok());
  ASSERT_TRUE(link.a().post_read({2, kIpB, rkey, 400000, rdst.data(), rdst.size()}).ok());
  ASSERT_TRUE(link.a().post_send({3, kIpB, smsg.data(), smsg.size()}).ok());
  ASSERT_TRUE(link.a().post_read({4, kIpB, rkey, 0, rdst.data(), 1000}).ok());  // written data
  link.run(kSecond);
  const auto c = drain(link.a());
  ASSERT_EQ(c.size(), 4u);
  const Opcode ops[] = {Opcode::kWrite, Opcode::kRead, Opcode::kSend, Opcode::kRead};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(c[i].wr_id, i + 1);
    EXPECT_EQ(c[i].op, ops[i]);
    EXPECT_EQ(c[i].status, OpStatus::kSuccess);
  }
  EXPECT_TRUE(std::equal(wsrc.begin(), wsrc.end(), region.begin()));
  // Read 4 went after write 1 on the same PDC, but RUD does not order them: only check
  // read 2 (untouched memory) and the tail of rdst read 4 did not touch.
  EXPECT_TRUE(std::equal(remote_init.begin() + 1000, remote_init.end(), rdst.begin() + 1000));
  const auto rc = drain(link.b());
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].bytes, smsg.size());
  EXPECT_TRUE(std::equal(smsg.begin(), smsg.end(), rbuf.begin()));
  // One PDC each side, closed once idle (spec/uet.md §3.12).
  EXPECT_EQ(link.a().counters().pdcs_closed, 1u);
  EXPECT_EQ(link.b().counters().pdcs_closed, 1u);
  EXPECT_EQ(link.a().pdcs_in_use(), 0u);
  EXPECT_EQ(link.b().pdcs_in_use(), 0u);
  EXPECT_GT(link.a().counters().tx_retx, 0u);
}

}  // namespace
}  // namespace uet
