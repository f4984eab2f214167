// The provider's messaging above the RoCEv2 RC engine (fabric/rc_messaging.h) on the fake link
// (tests/common/fake_link.h): tagged and untagged messages eager and by rendezvous, matched in
// posting and arrival order with every byte checked; the unexpected list, probes and claims,
// truncation, cancel; flow control when every receive buffer holds an unexpected message;
// seeded loss; a target that never connected its initiator; QPs revived after an access
// error; a rendezvous send held by a dead target failing through the PING.
#include "fabric/rc_messaging.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/roce_pair.h"

namespace uet::fabric {
namespace {

using testing::drain;
using testing::FakeLink;
using testing::Verdict;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kEager = 1024;

RcMessagingConfig messaging(uint32_t rx_buffers = 32) {
  RcMessagingConfig m;
  m.eager_bytes = kEager;
  m.rx_buffers = rx_buffers;
  m.tx_buffers = 32;
  m.max_sends = 256;
  m.hold_probe_after = 20 * kMillisecond;
  return m;
}

std::unique_ptr<RcMessaging> endpoint(uint32_t ip, const RcMessagingConfig& m) {
  RoceConfig c = testing::roce_config(ip, /*ack_timeout_exp=*/8);  // 1.05 ms
  c.max_qps = 65536;
  c.qpn_base = RcMessaging::kQpnBase;
  c.retry_cnt = 3;
  c.max_recvs = 4096;
  auto e = RoceEndpoint::create(c);
  EXPECT_TRUE(e.ok()) << e.status();
  auto r = std::make_unique<RcMessaging>(std::move(*e), m);
  EXPECT_TRUE(r->init().ok());
  return r;
}

// A connected to B (B learns A from A's first frame, as a target outside A's job would).
struct Pair {
  explicit Pair(uint32_t b_rx_buffers = 32)
      : a(endpoint(kIpA, messaging())), b(endpoint(kIpB, messaging(b_rx_buffers))),
        link(a.get(), b.get()) {
    EXPECT_TRUE(a->connect(kIpB).ok());
  }
  void run(Time d = 200 * kMillisecond) { link.run(link.now() + d); }
  std::unique_ptr<RcMessaging> a, b;
  FakeLink link;
  std::vector<Completion> done_a, done_b;
  void collect() {
    for (const Completion& c : drain(*a)) done_a.push_back(c);
    for (const Completion& c : drain(*b)) done_b.push_back(c);
  }
};

std::vector<uint8_t> bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed * 131 + i * 7 + (i >> 8));
  return v;
}

TaggedSendRequest tsend(uint64_t wr_id, const std::vector<uint8_t>& m, uint64_t tag) {
  return TaggedSendRequest{.wr_id = wr_id, .peer = kIpB, .local = m.data(), .length = m.size(),
                           .tag = tag, .has_data = true, .data = tag * 1000};
}

TEST(RcMessaging, TaggedMessagesEagerAndByRendezvousLandInTheReceiveTheirTagNames) {
  Pair p;
  const auto small = bytes(100, 1), big = bytes(200'000, 2), empty = bytes(0, 3);
  std::vector<uint8_t> r1(300'000), r2(1000), r3(10);
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 1, .base = r1.data(), .length = r1.size(), .tag = 7}).ok());
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 2, .base = r2.data(), .length = r2.size(), .tag = 8}).ok());
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 3, .base = r3.data(), .length = r3.size(), .tag = 9}).ok());
  ASSERT_TRUE(p.a->post_tsend(tsend(10, small, 8)).ok());
  ASSERT_TRUE(p.a->post_tsend(tsend(11, big, 7)).ok());
  ASSERT_TRUE(p.a->post_tsend(tsend(12, empty, 9)).ok());
  p.run();
  p.collect();
  ASSERT_EQ(p.done_a.size(), 3u);
  for (const Completion& c : p.done_a) EXPECT_EQ(c.status, OpStatus::kSuccess);
  ASSERT_EQ(p.done_b.size(), 3u);
  for (const Completion& c : p.done_b) {
    EXPECT_EQ(c.status, OpStatus::kSuccess);
    EXPECT_EQ(c.op, Opcode::kTaggedRecv);
    EXPECT_EQ(c.peer, kIpA);
    EXPECT_TRUE(c.has_imm);
    EXPECT_EQ(c.imm, c.tag * 1000);
    const uint64_t want = c.wr_id == 1 ? big.size() : c.wr_id == 2 ? small.size() : 0;
    EXPECT_EQ(c.bytes, want) << "receive " << c.wr_id;
  }
  EXPECT_TRUE(std::equal(big.begin(), big.end(), r1.begin()));
  EXPECT_TRUE(std::equal(small.begin(), small.end(), r2.begin()));
  EXPECT_EQ(p.a->counters().rendezvous_sent, 1u);
  EXPECT_EQ(p.b->counters().rendezvous_read, 1u);
  EXPECT_EQ(p.a->counters().eager_sent, 2u);
}

TEST(RcMessaging, UnexpectedMessagesWaitInArrivalOrderForProbesClaimsAndReceives) {
  Pair p;
  const auto m1 = bytes(10, 1), m2 = bytes(5000, 2), m3 = bytes(20, 3);
  ASSERT_TRUE(p.a->post_tsend(tsend(1, m1, 0x51)).ok());
  ASSERT_TRUE(p.a->post_tsend(tsend(2, m2, 0x52)).ok());
  ASSERT_TRUE(p.a->post_tsend(tsend(3, m3, 0x53)).ok());
  p.run();
  p.collect();
  EXPECT_EQ(p.done_a.size(), 2u) << "the eager sends complete; the rendezvous one waits";
  EXPECT_EQ(p.b->counters().unexpected, 3u);
  // A probe of 0x5? sees the first arrival; one with FI_CLAIM sets the second aside.
  Probed seen;
  ASSERT_TRUE(p.b->probe_tagged({.tag = 0x50, .ignore = 0xF}, false, &seen).ok());
  EXPECT_EQ(seen.tag, 0x51u);
  EXPECT_EQ(seen.length, m1.size());
  EXPECT_EQ(seen.peer, kIpA);
  ASSERT_TRUE(p.b->probe_tagged({.tag = 0x52}, true, &seen).ok());
  const uint64_t claim = seen.claim;
  EXPECT_NE(claim, 0u);
  EXPECT_EQ(seen.length, m2.size());
  EXPECT_FALSE(p.b->probe_tagged({.tag = 0x52}, false, &seen).ok()) << "a claimed one is hidden";
  // Wildcard receives take the unclaimed ones in arrival order: 0x51, then 0x53.
  std::vector<uint8_t> r1(64), r2(64), r3(8000);
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 1, .base = r1.data(), .length = 64, .ignore = ~0ull}).ok());
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 2, .base = r2.data(), .length = 64, .ignore = ~0ull}).ok());
  ASSERT_TRUE(p.b->recv_claimed(claim, {.wr_id = 3, .base = r3.data(), .length = 8000}).ok());
  EXPECT_FALSE(p.b->recv_claimed(claim, {.wr_id = 4, .base = r3.data(), .length = 8000}).ok());
  p.run();
  p.collect();
  ASSERT_EQ(p.done_b.size(), 3u);
  EXPECT_EQ(p.done_b[0].tag, 0x51u);
  EXPECT_EQ(p.done_b[1].tag, 0x53u);
  EXPECT_TRUE(std::equal(m1.begin(), m1.end(), r1.begin()));
  EXPECT_TRUE(std::equal(m3.begin(), m3.end(), r2.begin()));
  EXPECT_TRUE(std::equal(m2.begin(), m2.end(), r3.begin()));
  EXPECT_EQ(p.done_a.size(), 3u) << "the rendezvous send completes at FIN";
}

TEST(RcMessaging, ATruncatedReceiveTakesWhatFitsAndTheSendSucceeds) {
  Pair p;
  const auto eager = bytes(600, 1), rdv = bytes(50'000, 2);
  std::vector<uint8_t> r1(100), r2(3000);
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 1, .base = r1.data(), .length = 100, .tag = 1}).ok());
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 2, .base = r2.data(), .length = 3000, .tag = 2}).ok());
  ASSERT_TRUE(p.a->post_tsend(tsend(1, eager, 1)).ok());
  ASSERT_TRUE(p.a->post_tsend(tsend(2, rdv, 2)).ok());
  p.run();
  p.collect();
  ASSERT_EQ(p.done_b.size(), 2u);
  for (const Completion& c : p.done_b) {
    EXPECT_EQ(c.status, OpStatus::kTruncated);
    EXPECT_EQ(c.bytes, c.wr_id == 1 ? 100u : 3000u);
  }
  EXPECT_TRUE(std::equal(r1.begin(), r1.end(), eager.begin()));
  EXPECT_TRUE(std::equal(r2.begin(), r2.end(), rdv.begin()));
  ASSERT_EQ(p.done_a.size(), 2u);
  for (const Completion& c : p.done_a) EXPECT_EQ(c.status, OpStatus::kSuccess);
}

TEST(RcMessaging, ACanceledReceiveCompletesCanceledAndTheNextMessageGoesPastIt) {
  Pair p;
  std::vector<uint8_t> r1(64, 0xEE), r2(64);
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 1, .base = r1.data(), .length = 64, .tag = 5}).ok());
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 2, .base = r2.data(), .length = 64, .tag = 5}).ok());
  ASSERT_TRUE(p.b->cancel_recv(1).ok());
  EXPECT_FALSE(p.b->cancel_recv(1).ok());
  const auto m = bytes(30, 9);
  ASSERT_TRUE(p.a->post_tsend(tsend(1, m, 5)).ok());
  p.run();
  p.collect();
  ASSERT_EQ(p.done_b.size(), 2u);
  EXPECT_EQ(p.done_b[0].wr_id, 1u);
  EXPECT_EQ(p.done_b[0].status, OpStatus::kCanceled);
  EXPECT_EQ(p.done_b[1].wr_id, 2u);
  EXPECT_EQ(p.done_b[1].status, OpStatus::kSuccess);
  EXPECT_EQ(r1[0], 0xEE);
  EXPECT_TRUE(std::equal(m.begin(), m.end(), r2.begin()));
}

TEST(RcMessaging, UntaggedSendsFillUntaggedReceivesFirstComeFirstServed) {
  Pair p;
  std::vector<std::vector<uint8_t>> r(4, std::vector<uint8_t>(4000));
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(p.b->post_recv({.wr_id = i, .base = r[i].data(), .length = 4000}).ok());
  }
  std::vector<std::vector<uint8_t>> m;
  for (uint32_t i = 0; i < 4; ++i) m.push_back(bytes(i % 2 ? 3000 : 40, i));
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(p.a->post_send({.wr_id = i, .peer = kIpB, .local = m[i].data(),
                                .length = m[i].size(), .has_imm = true,
                                .imm = static_cast<uint32_t>(i + 40)}).ok());
  }
  p.run();
  p.collect();
  // Receive i took message i (the eager ones complete before the rendezvous ones).
  ASSERT_EQ(p.done_b.size(), 4u);
  for (const Completion& c : p.done_b) {
    ASSERT_LT(c.wr_id, 4u);
    EXPECT_EQ(c.op, Opcode::kRecv);
    EXPECT_EQ(c.bytes, m[c.wr_id].size());
    EXPECT_EQ(c.imm, c.wr_id + 40);
    EXPECT_TRUE(std::equal(m[c.wr_id].begin(), m[c.wr_id].end(), r[c.wr_id].begin()));
  }
}

// Every receive buffer holds an unexpected message: the engine answers RNR, the sender waits,
// and once receives are posted every message arrives, in order.
TEST(RcMessaging, WhenEveryBufferHoldsAnUnexpectedMessageTheSenderWaits) {
  Pair p(/*b_rx_buffers=*/8);
  std::vector<std::vector<uint8_t>> m;
  for (uint32_t i = 0; i < 20; ++i) m.push_back(bytes(200 + i, i));
  for (uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(p.a->post_tsend(tsend(i, m[i], i)).ok());
  p.run(50 * kMillisecond);
  p.collect();
  EXPECT_EQ(p.b->counters().unexpected, 8u);
  EXPECT_LT(p.done_a.size(), 20u);
  EXPECT_GT(p.b->rc().counters().tx_rnr_naks, 0u);
  std::vector<std::vector<uint8_t>> r(20, std::vector<uint8_t>(512));
  for (uint64_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(p.b->post_trecv({.wr_id = i, .base = r[i].data(), .length = 512, .tag = i}).ok());
  }
  p.run(2 * kSecond);
  p.collect();
  ASSERT_EQ(p.done_b.size(), 20u);
  for (uint64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(p.done_b[i].status, OpStatus::kSuccess);
    const auto& want = m[p.done_b[i].wr_id];
    EXPECT_EQ(p.done_b[i].bytes, want.size());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), r[p.done_b[i].wr_id].begin()));
  }
  EXPECT_EQ(p.done_a.size(), 20u);
}

TEST(RcMessaging, UnderSeededLossEveryMessageArrivesWholeAndInSendOrder) {
  Pair p;
  std::mt19937_64 rng(20261206);
  p.link.set_filter([&](int, const wire::Decoded&, std::vector<uint8_t>&) {
    return Verdict{.copies = rng() % 100 < 5 ? 0 : 1};
  });
  constexpr int kN = 40;
  std::vector<std::vector<uint8_t>> m, r;
  for (int i = 0; i < kN; ++i) {
    m.push_back(bytes(i % 3 == 0 ? 30'000 + i : 10 + i * 20, i));
    r.emplace_back(40'000);
  }
  for (int i = 0; i < kN; ++i) {
    // One tag for all: only the order can put each in its receive.
    ASSERT_TRUE(p.b->post_trecv({.wr_id = static_cast<uint64_t>(i), .base = r[i].data(),
                                 .length = r[i].size(), .tag = 3}).ok());
  }
  for (int i = 0; i < kN; ++i) {
    absl::Status s;
    // With every transmit buffer in flight the post is refused (FI_EAGAIN): run, then retry.
    for (int tries = 0; !(s = p.a->post_tsend(tsend(i, m[i], 3))).ok() && tries < 100; ++tries) {
      ASSERT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
      p.run(10 * kMillisecond);
      p.collect();
    }
    ASSERT_TRUE(s.ok()) << s;
  }
  p.run(5 * kSecond);
  p.collect();
  ASSERT_EQ(p.done_b.size(), static_cast<size_t>(kN));
  for (const Completion& c : p.done_b) {
    const auto i = static_cast<size_t>(c.wr_id);
    ASSERT_LT(i, m.size());
    EXPECT_EQ(c.status, OpStatus::kSuccess);
    EXPECT_EQ(c.bytes, m[i].size()) << "message " << i;
    EXPECT_TRUE(std::equal(m[i].begin(), m[i].end(), r[i].begin())) << "message " << i;
  }
  EXPECT_EQ(p.done_a.size(), static_cast<size_t>(kN));
  EXPECT_GT(p.a->rc().counters().tx_retx + p.b->rc().counters().tx_retx, 0u);
}

// A rendezvous source is exposed (registered) for its send alone: once the send has
// completed at FIN its key is withdrawn, and a READ naming it is refused.
TEST(RcMessaging, ARendezvousSourceKeyIsWithdrawnWhenItsSendCompletes) {
  Pair p;
  const auto big = bytes(200'000, 6);
  std::vector<uint8_t> r(200'000);
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(p.b->post_trecv({.wr_id = i, .base = r.data(), .length = r.size(), .tag = 5}).ok());
    ASSERT_TRUE(p.a->post_tsend(tsend(10 + i, big, 5)).ok());
  }
  p.run();
  p.collect();
  ASSERT_EQ(p.done_a.size(), 3u);
  for (const Completion& c : p.done_a) EXPECT_EQ(c.status, OpStatus::kSuccess);
  EXPECT_EQ(p.b->counters().rendezvous_read, 3u);
  // Expect: the three sources' keys (A's first registrations: 1, 2, 3) are gone.
  for (uint32_t key = 1; key <= 3; ++key) {
    EXPECT_TRUE(absl::IsNotFound(p.a->deregister_memory(key))) << key;
  }
  std::vector<uint8_t> got(100, 0);
  ASSERT_TRUE(p.b->post_read({.wr_id = 20, .peer = kIpA, .rkey = 1, .local = got.data(),
                              .length = got.size()}).ok());
  p.run();
  p.collect();
  ASSERT_EQ(p.done_b.size(), 4u);
  EXPECT_EQ(p.done_b[3].wr_id, 20u);
  EXPECT_EQ(p.done_b[3].status, OpStatus::kRemoteAccessError);
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t x) { return x == 0; }));
}

TEST(RcMessaging, AfterAnAccessErrorBothQpsAreConnectedAgain) {
  Pair p;
  std::vector<uint8_t> region(4096);
  auto key = p.b->register_memory(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  const auto src = bytes(512, 4);
  ASSERT_TRUE(p.a->post_write({.wr_id = 1, .peer = kIpB, .rkey = *key, .remote_offset = 4000,
                               .local = src.data(), .length = src.size()}).ok());
  p.run();
  p.collect();
  ASSERT_EQ(p.done_a.size(), 1u);
  EXPECT_EQ(p.done_a[0].status, OpStatus::kRemoteAccessError);
  // The next WRITE and a message go through the revived QPs.
  ASSERT_TRUE(p.a->post_write({.wr_id = 2, .peer = kIpB, .rkey = *key, .remote_offset = 0,
                               .local = src.data(), .length = src.size()}).ok());
  std::vector<uint8_t> r(64);
  ASSERT_TRUE(p.b->post_trecv({.wr_id = 3, .base = r.data(), .length = 64, .tag = 1}).ok());
  const auto m = bytes(50, 5);
  ASSERT_TRUE(p.a->post_tsend(tsend(4, m, 1)).ok());
  p.run();
  p.collect();
  ASSERT_EQ(p.done_a.size(), 3u);
  EXPECT_EQ(p.done_a[1].status, OpStatus::kSuccess);
  EXPECT_EQ(p.done_a[2].status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), region.begin()));
  ASSERT_EQ(p.done_b.size(), 1u);
  EXPECT_TRUE(std::equal(m.begin(), m.end(), r.begin()));
}

TEST(RcMessaging, ARendezvousSendHeldByADeadTargetFailsThroughThePing) {
  Pair p;
  const auto big = bytes(100'000, 6);
  ASSERT_TRUE(p.a->post_tsend(tsend(1, big, 1)).ok());
  p.run(10 * kMillisecond);
  p.collect();
  EXPECT_TRUE(p.done_a.empty()) << "the target holds it: no receive posted";
  EXPECT_EQ(p.b->counters().unexpected, 1u);
  // While the target lives, PINGs are answered and the send waits on.
  p.run(100 * kMillisecond);
  p.collect();
  EXPECT_TRUE(p.done_a.empty());
  EXPECT_GT(p.a->counters().pings_sent, 0u);
  EXPECT_EQ(p.a->counters().pings_failed, 0u);
  // The target dies: nothing of it reaches A any more.
  p.link.set_filter([](int, const wire::Decoded&, std::vector<uint8_t>&) {
    return Verdict{.copies = 0};
  });
  p.run(500 * kMillisecond);
  p.collect();
  ASSERT_EQ(p.done_a.size(), 1u);
  EXPECT_EQ(p.done_a[0].status, OpStatus::kRetriesExhausted);
  EXPECT_EQ(p.a->counters().pings_failed, 1u);
}

TEST(RcMessaging, PeersWhoseAddressesShareTheirLow16BitsAreRefused) {
  auto a = endpoint(kIpA, messaging());
  EXPECT_TRUE(a->connect(0x0B000002).ok());
  EXPECT_TRUE(a->connect(0x0B000002).ok()) << "again: nothing to do";
  const absl::Status s = a->connect(0x0C000002);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("low 16 bits"), std::string_view::npos) << s;
}

}  // namespace
}  // namespace uet::fabric
