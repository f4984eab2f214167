// The RoCEv2 RC engine's atomics on a fake host (tests/common/fake_link.h): FETCH_ADD and
// CMP_SWAP (spec/rocev2.md §3.3, §3.4) with exact results, executed once however often a
// request travels (the responder's replay cache), under seeded loss, duplication and
// reordering; refusals at the responder (NAKs) and at post time; the max_rd_atomic limit
// shared with RDMA READ; forged responses and requests a hostile peer might send. Every frame
// either side emits decodes with decode_frame(), ICRC included (the fake link checks).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/roce_forge.h"
#include "tests/common/roce_pair.h"
#include "transport/rocev2/roce_endpoint.h"

namespace uet {
namespace {

using testing::drain;
using testing::FakeLink;
using testing::Sent;
using testing::Verdict;
using wire::AethNak;
using wire::AethType;
using wire::RoceOpcode;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kQpA = 0x100, kQpB = 0x105;
constexpr uint32_t kPsnA = 1000, kPsnB = 777000;
constexpr size_t kWords = 16;  // B's region: 16 64-bit words

RoceConfig config_for(uint32_t ip, uint32_t max_rd_atomic = 16) {
  RoceConfig c = testing::roce_config(ip, /*ack_timeout_exp=*/8);  // 1.05 ms
  c.max_rd_atomic = max_rd_atomic;
  return c;
}

// A and B with one connected QP pair; B registers `words` (8-byte aligned, host order).
struct Pair : testing::RocePair {
  std::vector<uint64_t> words = std::vector<uint64_t>(kWords, 0);
  uint32_t rkey = 0;

  Pair(const RoceConfig& ca, const RoceConfig& cb, uint32_t psn_a = kPsnA)
      : RocePair(ca, cb, {kQpA, kQpB, psn_a, kPsnB}) {
    rkey = *b->register_memory(reinterpret_cast<uint8_t*>(words.data()), kWords * 8);
  }
  Pair() : Pair(config_for(kIpA), config_for(kIpB)) {}
};

const uint8_t* bytes_of(const uint64_t& v) { return reinterpret_cast<const uint8_t*>(&v); }

AtomicRequest fetch_add(uint64_t id, uint32_t rkey, uint64_t offset, const uint64_t& add,
                        uint64_t* result) {
  AtomicRequest ar;
  ar.wr_id = id;
  ar.peer = kIpB;
  ar.rkey = rkey;
  ar.remote_offset = offset;
  ar.op = AtomicOp::kSum;
  ar.type = AtomicType::kUint64;
  ar.count = 1;
  ar.operand = bytes_of(add);
  ar.result = reinterpret_cast<uint8_t*>(result);
  return ar;
}

AtomicRequest cmp_swap(uint64_t id, uint32_t rkey, uint64_t offset, const uint64_t& compare,
                       const uint64_t& swap, uint64_t* result) {
  AtomicRequest ar = fetch_add(id, rkey, offset, swap, result);
  ar.op = AtomicOp::kCswap;
  ar.compare = bytes_of(compare);
  return ar;
}

bool is_op(const wire::Decoded& d, RoceOpcode op) {
  return d.bth != nullptr && d.bth->opcode() == op;
}
bool is_atomic(const wire::Decoded& d) {
  return is_op(d, RoceOpcode::kRcFetchAdd) || is_op(d, RoceOpcode::kRcCompareSwap);
}

std::vector<Sent> frames(const FakeLink& link, int from, RoceOpcode op) {
  std::vector<Sent> out;
  for (const Sent& s : link.log())
    if (s.from == from && s.roce && s.opcode == static_cast<uint8_t>(op)) out.push_back(s);
  return out;
}

void expect_atomic_success(const std::vector<Completion>& c, size_t n) {
  ASSERT_EQ(c.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(c[i].wr_id, i + 1) << i;
    EXPECT_EQ(c[i].status, OpStatus::kSuccess) << i;
    EXPECT_EQ(c[i].op, Opcode::kAtomic) << i;
    EXPECT_EQ(c[i].bytes, 8u) << i;
  }
}

// A forged request from A to B's QP (the tests that play the requester themselves).
testing::RoceForged forged_atomic(RoceOpcode op, uint32_t psn, uint32_t rkey, uint64_t va,
                                  uint64_t swap_add, uint64_t compare = 0) {
  testing::RoceForged f;
  f.op = op;
  f.dest_qp = kQpB;
  f.psn = psn;
  f.ack_req = true;
  f.va = va;
  f.rkey = rkey;
  f.swap_add = swap_add;
  f.compare = compare;
  f.src = kIpA;
  f.dst = kIpB;
  return f;
}

// What B sends now, decoded: opcode, PSN, AETH, and the AtomicAckETH's original value.
struct Out {
  RoceOpcode op = RoceOpcode::kRcAck;
  uint32_t psn = 0;
  AethType aeth_type = AethType::kAck;
  uint8_t aeth_value = 0;
  uint64_t orig = 0;
};
std::vector<Out> take_all(RoceEndpoint& ep) {
  std::vector<Out> out;
  std::vector<uint8_t> buf(9216);
  for (int i = 0; i < 1000; ++i) {
    wire::Decoded d;
    if (testing::take_decoded(ep, buf, 0, &d) == 0) break;
    Out o;
    o.op = d.bth->opcode();
    o.psn = d.bth->psn();
    if (d.aeth != nullptr) {
      o.aeth_type = d.aeth->syndrome_type();
      o.aeth_value = d.aeth->syndrome_value();
    }
    if (d.atomic_ack_eth != nullptr) o.orig = d.atomic_ack_eth->orig_data();
    out.push_back(o);
  }
  return out;
}

// ------------------------------------------------------------------------- results

// Expect (§3.3, §3.4): FETCH_ADD returns the word's original value and leaves the sum, for an
// unsigned word and a signed one (a negative addend wraps modulo 2^64); each is one request
// (AtomicETH, AckReq, the addend big-endian on the wire) answered by one ATOMIC ACKNOWLEDGE
// (AETH ACK, the MSN counting both by the last) and nothing else; the completion is kAtomic,
// 8 bytes.
TEST(RoceAtomic_FetchAdd, ReturnsTheOriginalValueAndLeavesTheSum) {
  Pair p;
  p.words[1] = 100;
  p.words[2] = 5;
  const uint64_t add = 0x0102'0304'0506'0708;
  const int64_t minus_seven = -7;
  uint64_t minus_bits = 0;
  std::memcpy(&minus_bits, &minus_seven, 8);
  std::vector<std::array<uint8_t, 8>> wire_add;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && is_atomic(d)) {
      std::array<uint8_t, 8> raw{};
      std::copy_n(d.atomic_eth->raw + 12, 8, raw.begin());  // §3.3: swap_add at byte 12
      wire_add.push_back(raw);
    }
    return Verdict{};
  });
  uint64_t r1 = 0xDEAD, r2 = 0xDEAD;
  ASSERT_TRUE(p.a->post_atomic(fetch_add(1, p.rkey, 8, add, &r1)).ok());
  AtomicRequest s = fetch_add(2, p.rkey, 16, minus_bits, &r2);
  s.type = AtomicType::kInt64;
  ASSERT_TRUE(p.a->post_atomic(s).ok());
  p.link->run(kSecond);
  ASSERT_NO_FATAL_FAILURE(expect_atomic_success(drain(*p.a), 2));
  EXPECT_EQ(r1, 100u);
  EXPECT_EQ(p.words[1], 100 + add);
  EXPECT_EQ(r2, 5u);
  EXPECT_EQ(static_cast<int64_t>(p.words[2]), -2);
  for (size_t i : {0u, 3u, 15u}) EXPECT_EQ(p.words[i], 0u) << i;
  ASSERT_EQ(wire_add.size(), 2u);
  EXPECT_EQ(wire_add[0], (std::array<uint8_t, 8>{1, 2, 3, 4, 5, 6, 7, 8}));
  const auto req = frames(*p.link, 0, RoceOpcode::kRcFetchAdd);
  ASSERT_EQ(req.size(), 2u);
  const auto ack = frames(*p.link, 1, RoceOpcode::kRcAtomicAck);
  ASSERT_EQ(ack.size(), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(req[i].psn, kPsnA + i);
    EXPECT_TRUE(req[i].ack_req);
    EXPECT_EQ(req[i].dest_qp, kQpB);
    EXPECT_EQ(ack[i].psn, kPsnA + i);
    EXPECT_EQ(ack[i].aeth_type, 0);  // ACK
  }
  EXPECT_LE(ack[0].msn, ack[1].msn);
  EXPECT_EQ(ack[1].msn, 2u);
  EXPECT_EQ(p.link->log().size(), 4u);  // no plain ACK beside the atomic ones
  EXPECT_EQ(p.a->counters().tx_atomics, 2u);
  EXPECT_EQ(p.a->counters().rx_atomic_acks, 2u);
  EXPECT_EQ(p.a->counters().atomic_resends, 0u);
  EXPECT_EQ(p.b->counters().rx_atomics, 2u);
  EXPECT_EQ(p.b->counters().tx_atomic_acks, 2u);
  EXPECT_EQ(p.b->counters().rx_atomic_replays, 0u);
  EXPECT_EQ(p.a->qp_info(kQpA)->reads_outstanding, 0u);
  EXPECT_EQ(p.b->qp_info(kQpB)->responses_queued, 0u);
}

// Expect (§3.3): CMP_SWAP stores the swap value only when the word equals the compare value and
// returns the original value either way; without a result buffer the value is discarded and
// the atomic still completes.
TEST(RoceAtomic_CmpSwap, SwapsOnlyOnEqualAndAlwaysReturnsTheOriginal) {
  Pair p;
  p.words[3] = 7;
  const uint64_t seven = 7, forty_two = 42, ninety_nine = 99;
  uint64_t r1 = 0, r2 = 0;
  ASSERT_TRUE(p.a->post_atomic(cmp_swap(1, p.rkey, 24, seven, forty_two, &r1)).ok());
  ASSERT_TRUE(p.a->post_atomic(cmp_swap(2, p.rkey, 24, seven, ninety_nine, &r2)).ok());
  AtomicRequest discard = cmp_swap(3, p.rkey, 24, forty_two, ninety_nine, nullptr);
  discard.type = AtomicType::kInt64;
  ASSERT_TRUE(p.a->post_atomic(discard).ok());
  p.link->run(kSecond);
  ASSERT_NO_FATAL_FAILURE(expect_atomic_success(drain(*p.a), 3));
  EXPECT_EQ(r1, 7u);           // equal: swapped to 42
  EXPECT_EQ(r2, 42u);          // 42 != 7: not swapped
  EXPECT_EQ(p.words[3], 99u);  // the third compared 42: swapped
  EXPECT_EQ(frames(*p.link, 0, RoceOpcode::kRcCompareSwap).size(), 3u);
  EXPECT_EQ(p.b->counters().rx_atomics, 3u);
}

// ------------------------------------------------------------------------- executed once

// Expect (IB): a lost ATOMIC ACKNOWLEDGE is recovered by sending the request again -- after the
// ACK timeout, or at once when an ACK for a later PSN shows the response missing -- and the
// responder answers the duplicate from its replay cache without adding again: the word holds
// one sum, the result is the value before it.
TEST(RoceAtomic_Replay, LostResponseIsAnsweredFromTheCacheNotExecutedAgain) {
  for (const bool write_behind : {false, true}) {
    Pair p;
    p.words[0] = 1000;
    int acks = 0;
    p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
      if (from == 1 && is_op(d, RoceOpcode::kRcAtomicAck) && acks++ == 0) return Verdict{0};
      return Verdict{};
    });
    const uint64_t one = 1;
    uint64_t r = 0;
    ASSERT_TRUE(p.a->post_atomic(fetch_add(1, p.rkey, 0, one, &r)).ok());
    const std::vector<uint8_t> src(64, 0x5A);
    if (write_behind) {
      ASSERT_TRUE(p.a->post_write(testing::write_request(2, kIpB, p.rkey, src, 64)).ok());
    }
    p.link->run(kSecond);
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), write_behind ? 2u : 1u);
    for (const Completion& x : c) EXPECT_EQ(x.status, OpStatus::kSuccess);
    EXPECT_EQ(c[0].op, Opcode::kAtomic);
    EXPECT_EQ(r, 1000u);
    EXPECT_EQ(p.words[0], 1001u);
    const RoceCounters& ka = p.a->counters();
    const RoceCounters& kb = p.b->counters();
    EXPECT_EQ(ka.timeouts, write_behind ? 0u : 1u) << write_behind;
    EXPECT_EQ(ka.go_back_n, 1u);
    EXPECT_EQ(ka.atomic_resends, 1u);
    EXPECT_EQ(ka.rx_atomic_acks, 1u);
    EXPECT_EQ(kb.rx_atomics, 1u);
    EXPECT_EQ(kb.rx_atomic_replays, 1u);
    EXPECT_EQ(kb.tx_atomic_acks, 2u);
    EXPECT_EQ(ka.rx_read_gap, write_behind ? 1u : 0u);  // the write's ACK passed the atomic
  }
}

// Expect: every atomic request arrives twice and every response twice: each PSN executes once
// (rx_atomics = N) and every second copy is answered from the replay cache (replays = N); the
// requester takes one response per atomic and drops the other three as duplicates; no resend.
TEST(RoceAtomic_Replay, EveryRequestTwiceAndEveryResponseTwiceStillExecutesOnce) {
  Pair p;
  constexpr uint64_t kN = 40;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if ((from == 0 && is_atomic(d)) || (from == 1 && is_op(d, RoceOpcode::kRcAtomicAck)))
      return Verdict{2, 0, 300 * kNanosecond};
    return Verdict{};
  });
  const uint64_t one = 1;
  std::vector<uint64_t> r(kN, ~uint64_t{0});
  for (uint64_t i = 0; i < kN; ++i)
    ASSERT_TRUE(p.a->post_atomic(fetch_add(i + 1, p.rkey, 0, one, &r[i])).ok());
  p.link->run(kSecond);
  ASSERT_NO_FATAL_FAILURE(expect_atomic_success(drain(*p.a), kN));
  for (uint64_t i = 0; i < kN; ++i) EXPECT_EQ(r[i], i) << i;  // in order, each once
  EXPECT_EQ(p.words[0], kN);
  const RoceCounters& ka = p.a->counters();
  const RoceCounters& kb = p.b->counters();
  EXPECT_EQ(kb.rx_atomics, kN);
  EXPECT_EQ(kb.rx_atomic_replays, kN);
  EXPECT_EQ(kb.rx_atomic_replay_miss, 0u);
  EXPECT_EQ(kb.tx_atomic_acks, 2 * kN);
  EXPECT_EQ(ka.rx_atomic_acks, kN);
  EXPECT_EQ(ka.rx_atomic_ack_dup, 3 * kN);
  EXPECT_EQ(ka.atomic_resends, 0u);
  EXPECT_EQ(ka.go_back_n, 0u);
}

// Expect (IB: the responder keeps the results of its last max_rd_atomic atomics; an older
// duplicate is a class D error, dropped, as rxe duplicate_request): with a cache of 4, a
// duplicate of the 1st of 6 atomics is dropped and counted -- nothing sent, nothing executed --
// while a duplicate of the 4th is answered with its saved original value, not executed again.
TEST(RoceAtomic_Replay, DuplicateOlderThanTheCacheIsDroppedAndCounted) {
  Pair p(config_for(kIpA, 4), config_for(kIpB, 4));
  std::vector<Out> first;
  for (uint32_t i = 0; i < 6; ++i) {  // one at a time, as a requester limited to 4 would
    testing::deliver(*p.b, testing::forge(forged_atomic(RoceOpcode::kRcFetchAdd, kPsnA + i, p.rkey,
                                                        8, uint64_t{1} << (4 * i))));
    for (const Out& o : take_all(*p.b)) first.push_back(o);
  }
  ASSERT_EQ(first.size(), 6u);
  uint64_t before = 0;
  for (uint32_t i = 0; i < 6; ++i) {
    EXPECT_EQ(first[i].op, RoceOpcode::kRcAtomicAck);
    EXPECT_EQ(first[i].psn, kPsnA + i);
    EXPECT_EQ(first[i].orig, before);
    before += uint64_t{1} << (4 * i);
  }
  EXPECT_EQ(p.words[1], 0x11'1111u);
  // The oldest: evicted (the cache holds PSNs +2..+5).
  testing::deliver(*p.b,
                   testing::forge(forged_atomic(RoceOpcode::kRcFetchAdd, kPsnA, p.rkey, 8, 1)));
  EXPECT_TRUE(take_all(*p.b).empty());
  EXPECT_EQ(p.b->counters().rx_atomic_replay_miss, 1u);
  // The 4th: replayed with the value it found, 0x111.
  testing::deliver(*p.b,
                   testing::forge(forged_atomic(RoceOpcode::kRcFetchAdd, kPsnA + 3, p.rkey, 8, 1)));
  const auto replay = take_all(*p.b);
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(replay[0].op, RoceOpcode::kRcAtomicAck);
  EXPECT_EQ(replay[0].psn, kPsnA + 3);
  EXPECT_EQ(replay[0].orig, 0x111u);
  EXPECT_EQ(p.words[1], 0x11'1111u);
  EXPECT_EQ(p.b->counters().rx_atomics, 6u);
  EXPECT_EQ(p.b->counters().rx_atomic_replays, 1u);
  EXPECT_EQ(p.b->qp_info(kQpB)->state, QpState::kRts);
  EXPECT_EQ(p.b->qp_info(kQpB)->epsn, kPsnA + 6);
}

// Expect: 300 FETCH_ADDs of 1 on one word mixed with WRITEs, from one QP whose PSNs wrap past
// 2^24, with 8 % of the frames lost, 8 % duplicated and 15 % delayed (reordered) in each
// direction, per seed: everything completes in posting order, the word ends exactly 300
// higher and the 300 fetched values are distinct (0..299) -- each add executed exactly once.
// max_rd_atomic 4 makes the replay cache small; resends, replays and stale duplicates older
// than the cache (dropped) are all exercised.
TEST(RoceAtomic_Lossy, EveryAddExecutesExactlyOnceUnderLossDuplicationAndReordering) {
  uint64_t replays = 0, resends = 0, misses = 0;
  for (const uint32_t seed : {1u, 2u, 3u, 4u}) {
    RoceConfig ca = config_for(kIpA, 4);
    ca.max_send_wr = 512;
    Pair p(ca, config_for(kIpB, 4), /*psn_a=*/0xFF'FF00);
    std::mt19937 rng(seed);
    p.link->set_filter([&](int, const wire::Decoded&, std::vector<uint8_t>&) {
      const int x = std::uniform_int_distribution<int>(0, 99)(rng);
      if (x < 8) return Verdict{0};
      if (x < 16)
        return Verdict{2, 0, std::uniform_int_distribution<int>(1, 20)(rng) * kMicrosecond};
      if (x < 31) return Verdict{1, std::uniform_int_distribution<int>(1, 10)(rng) * kMicrosecond};
      return Verdict{};
    });
    constexpr uint64_t kAdds = 300;
    const uint64_t one = 1;
    const std::vector<uint8_t> src(64, 0xC3);
    std::vector<uint64_t> r(kAdds, ~uint64_t{0});
    std::vector<Opcode> kind;
    uint64_t id = 0;
    for (uint64_t i = 0; i < kAdds; ++i) {
      ASSERT_TRUE(p.a->post_atomic(fetch_add(id++, p.rkey, 0, one, &r[i])).ok());
      kind.push_back(Opcode::kAtomic);
      if (i % 5 == 4) {  // a WRITE behind: its ACK may pass a lost atomic response
        ASSERT_TRUE(p.a->post_write(testing::write_request(id++, kIpB, p.rkey, src, 64)).ok());
        kind.push_back(Opcode::kWrite);
      }
    }
    p.link->run(100 * kSecond);
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), kind.size()) << "seed " << seed;
    for (size_t i = 0; i < c.size(); ++i) {
      EXPECT_EQ(c[i].wr_id, i) << "seed " << seed;
      EXPECT_EQ(c[i].op, kind[i]) << "seed " << seed;
      EXPECT_EQ(c[i].status, OpStatus::kSuccess) << "seed " << seed << " wr " << i;
    }
    EXPECT_EQ(p.words[0], kAdds) << "seed " << seed;
    const std::set<uint64_t> fetched(r.begin(), r.end());
    EXPECT_EQ(fetched.size(), kAdds) << "seed " << seed;
    EXPECT_EQ(*fetched.rbegin(), kAdds - 1) << "seed " << seed;
    EXPECT_EQ(p.b->counters().rx_atomics, kAdds) << "seed " << seed;
    EXPECT_EQ(p.a->counters().rx_atomic_acks, kAdds) << "seed " << seed;
    EXPECT_EQ(p.a->counters().rx_malformed + p.b->counters().rx_malformed, 0u);
    EXPECT_EQ(p.a->qp_info(kQpA)->reads_outstanding, 0u);
    replays += p.b->counters().rx_atomic_replays;
    resends += p.a->counters().atomic_resends;
    misses += p.b->counters().rx_atomic_replay_miss;
  }
  EXPECT_GT(replays, 0u);
  EXPECT_GT(resends, 0u);
  EXPECT_GT(misses, 0u);
}

// ------------------------------------------------------------------------- refusals

// Expect (§3.3, IB C9 remote access): an atomic naming a bad R_Key, or a word outside the
// region, is NAKed REMOTE ACCESS ERROR: kRemoteAccessError at the requester, the WR behind it
// flushed, no word changed, the result buffer untouched.
TEST(RoceAtomic_Refused, BadKeyAndOutOfRangeAreRemoteAccessErrorsAndChangeNothing) {
  enum Bad { kKey, kJustPast, kFar };
  for (const Bad bad : {kKey, kJustPast, kFar}) {
    Pair p;
    for (size_t i = 0; i < kWords; ++i) p.words[i] = i * 3;
    const std::vector<uint64_t> before = p.words;
    const uint32_t key = bad == kKey ? p.rkey + 5 : p.rkey;
    const uint64_t off = bad == kKey ? 0 : bad == kJustPast ? kWords * 8 : uint64_t{1} << 40;
    const uint64_t one = 1;
    uint64_t r1 = 0xFEED, r2 = 0xFEED;
    ASSERT_TRUE(p.a->post_atomic(fetch_add(1, key, off, one, &r1)).ok());
    ASSERT_TRUE(p.a->post_atomic(fetch_add(2, p.rkey, 0, one, &r2)).ok());
    p.link->run(kSecond);
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError) << bad;
    EXPECT_EQ(c[0].op, Opcode::kAtomic);
    EXPECT_EQ(c[0].bytes, 0u);
    EXPECT_EQ(c[1].status, OpStatus::kFlushed);
    EXPECT_EQ(p.words, before) << bad;
    EXPECT_EQ(r1, 0xFEEDu);
    EXPECT_EQ(r2, 0xFEEDu);
    const auto naks = frames(*p.link, 1, RoceOpcode::kRcAck);
    ASSERT_EQ(naks.size(), 1u);
    EXPECT_EQ(naks[0].aeth_type, 3);
    EXPECT_EQ(naks[0].aeth_value, static_cast<uint8_t>(AethNak::kRemoteAccessError));
    EXPECT_EQ(naks[0].psn, kPsnA);
    EXPECT_TRUE(frames(*p.link, 1, RoceOpcode::kRcAtomicAck).empty());
    EXPECT_EQ(p.b->counters().rx_atomic_refused, 1u);
    EXPECT_EQ(p.b->counters().rx_bad_rkey, bad == kKey ? 1u : 0u);
    EXPECT_EQ(p.b->counters().rx_bad_range, bad == kKey ? 0u : 1u);
    EXPECT_EQ(p.b->counters().rx_atomics, 0u);
    EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kError);
  }
}

// Expect (rxe RESPST_ERR_MISALIGNED_ATOMIC, IB class C): a word not 8-byte aligned is NAKed
// INVALID REQUEST (kRemoteInvalidRequest) and nothing changes -- in memory, through the API (a
// region registered at an address 4 bytes off alignment, the offset itself aligned), and as a
// VA (forged: post_atomic refuses a misaligned offset).
TEST(RoceAtomic_Refused, MisalignedIsAnInvalidRequestAndChangesNothing) {
  {
    Pair p;
    std::vector<uint64_t> backing(8, 0);
    uint8_t* odd = reinterpret_cast<uint8_t*>(backing.data()) + 4;
    const uint32_t key = *p.b->register_memory(odd, 32);
    const uint64_t one = 1;
    uint64_t r = 0xFEED;
    ASSERT_TRUE(p.a->post_atomic(fetch_add(1, key, 8, one, &r)).ok());
    p.link->run(kSecond);
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OpStatus::kRemoteInvalidRequest);
    EXPECT_EQ(c[0].op, Opcode::kAtomic);
    EXPECT_EQ(r, 0xFEEDu);
    EXPECT_TRUE(std::all_of(backing.begin(), backing.end(), [](uint64_t w) { return w == 0; }));
    const auto naks = frames(*p.link, 1, RoceOpcode::kRcAck);
    ASSERT_EQ(naks.size(), 1u);
    EXPECT_EQ(naks[0].aeth_value, static_cast<uint8_t>(AethNak::kInvalidRequest));
    EXPECT_EQ(p.b->counters().rx_atomic_misaligned, 1u);
    EXPECT_EQ(p.b->counters().rx_atomic_refused, 1u);
  }
  {
    Pair p;
    testing::deliver(
        *p.b, testing::forge(forged_atomic(RoceOpcode::kRcCompareSwap, kPsnA, p.rkey, 4, 77, 0)));
    const auto out = take_all(*p.b);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].op, RoceOpcode::kRcAck);
    EXPECT_EQ(out[0].aeth_type, AethType::kNak);
    EXPECT_EQ(out[0].aeth_value, static_cast<uint8_t>(AethNak::kInvalidRequest));
    EXPECT_EQ(out[0].psn, kPsnA);
    EXPECT_TRUE(std::all_of(p.words.begin(), p.words.end(), [](uint64_t w) { return w == 0; }));
    EXPECT_EQ(p.b->counters().rx_atomic_misaligned, 1u);
    EXPECT_EQ(p.b->counters().rx_atomics, 0u);
    EXPECT_EQ(p.b->qp_info(kQpB)->state, QpState::kError);
  }
}

// Expect: what RC cannot carry is refused when posted, with a message naming the field and
// the values RC accepts; nothing is queued, completed or sent. A valid one still goes.
TEST(RoceAtomic_Post, RefusalsNameTheFieldAndTheValidValues) {
  Pair p;
  const uint64_t one = 1;
  uint64_t r = 0;
  struct Case {
    std::function<void(AtomicRequest&)> edit;
    absl::StatusCode code;
    std::vector<std::string> says;
  };
  using absl::StatusCode;
  const std::vector<Case> cases = {
      {[](AtomicRequest& a) { a.op = AtomicOp::kMin; },
       StatusCode::kUnimplemented,
       {"op", "MIN", "kSum", "kCswap"}},
      {[](AtomicRequest& a) { a.op = AtomicOp::kCswapNe; },
       StatusCode::kUnimplemented,
       {"op", "CSWAP_NE", "kSum", "kCswap"}},
      {[](AtomicRequest& a) { a.type = AtomicType::kUint32; },
       StatusCode::kUnimplemented,
       {"type", "UINT32", "kUint64", "kInt64"}},
      {[](AtomicRequest& a) { a.type = AtomicType::kDouble; },
       StatusCode::kUnimplemented,
       {"type", "DOUBLE"}},
      {[](AtomicRequest& a) { a.count = 2; }, StatusCode::kInvalidArgument, {"count", "2", "1"}},
      {[](AtomicRequest& a) { a.count = 0; }, StatusCode::kInvalidArgument, {"count", "1"}},
      {[](AtomicRequest& a) { a.remote_offset = 12; },
       StatusCode::kInvalidArgument,
       {"remote_offset", "12", "8"}},
      {[](AtomicRequest& a) { a.operand = nullptr; },
       StatusCode::kInvalidArgument,
       {"operand", "8 bytes"}},
      {[](AtomicRequest& a) {
         a.op = AtomicOp::kCswap;
         a.compare = nullptr;
       },
       StatusCode::kInvalidArgument,
       {"compare", "8 bytes"}},
      {[](AtomicRequest& a) { a.mode = DeliveryMode::kRudi; },
       StatusCode::kUnimplemented,
       {"mode", "kRud or kRod"}},
      {[](AtomicRequest& a) { a.mode = DeliveryMode::kUud; },
       StatusCode::kUnimplemented,
       {"mode", "kRud or kRod"}},
      {[](AtomicRequest& a) { a.channel = 3; },
       StatusCode::kFailedPrecondition,
       {"channel 3", "connect_qp"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    AtomicRequest a = fetch_add(1, p.rkey, 0, one, &r);
    cases[i].edit(a);
    const absl::Status s = p.a->post_atomic(a);
    EXPECT_EQ(s.code(), cases[i].code) << i << ": " << s;
    for (const std::string& word : cases[i].says)
      EXPECT_NE(std::string(s.message()).find(word), std::string::npos)
          << i << ": \"" << s.message() << "\" does not name " << word;
    EXPECT_NE(std::string(s.message()).find("post_atomic"), std::string::npos) << i;
  }
  EXPECT_EQ(p.a->qp_info(kQpA)->writes_outstanding, 0u);
  p.link->run(kSecond);
  EXPECT_TRUE(drain(*p.a).empty());
  EXPECT_TRUE(p.link->log().empty());
  AtomicRequest ok = fetch_add(9, p.rkey, 8 * (kWords - 1), one, &r);  // the last word
  ok.mode = DeliveryMode::kRod;
  ASSERT_TRUE(p.a->post_atomic(ok).ok());
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(p.words[kWords - 1], 1u);
}

// ------------------------------------------------------------------------- limit

// Expect (IB max_rd_atomic): READs and atomics together never exceed max_rd_atomic outstanding;
// the rest wait (read_waits) and everything completes in posting order with its value.
TEST(RoceAtomic_Limit, AtomicsAndReadsShareMaxRdAtomic) {
  Pair p(config_for(kIpA, 2), config_for(kIpB));
  p.words[5] = 0x5555;
  int outstanding = 0, peak = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && (is_atomic(d) || is_op(d, RoceOpcode::kRcReadRequest)))
      peak = std::max(peak, ++outstanding);
    if (from == 1 &&
        (is_op(d, RoceOpcode::kRcAtomicAck) || is_op(d, RoceOpcode::kRcReadResponseOnly)))
      --outstanding;
    return Verdict{};
  });
  const uint64_t one = 1;
  std::vector<uint64_t> r(4, ~uint64_t{0}), rd(2, 0);
  const std::vector<Opcode> kind = {Opcode::kAtomic, Opcode::kRead, Opcode::kAtomic,
                                    Opcode::kAtomic, Opcode::kRead, Opcode::kAtomic};
  size_t atomics = 0, reads = 0;
  for (size_t i = 0; i < kind.size(); ++i) {
    if (kind[i] == Opcode::kAtomic) {
      ASSERT_TRUE(p.a->post_atomic(fetch_add(i + 1, p.rkey, 0, one, &r[atomics++])).ok());
    } else {
      auto* dst = reinterpret_cast<uint8_t*>(&rd[reads++]);
      ASSERT_TRUE(p.a->post_read({i + 1, kIpB, p.rkey, 40, dst, 8}).ok());
    }
  }
  p.link->run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), kind.size());
  for (size_t i = 0; i < kind.size(); ++i) {
    EXPECT_EQ(c[i].wr_id, i + 1);
    EXPECT_EQ(c[i].op, kind[i]);
    EXPECT_EQ(c[i].status, OpStatus::kSuccess);
  }
  EXPECT_EQ(r, (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(rd, (std::vector<uint64_t>{0x5555, 0x5555}));
  EXPECT_EQ(p.words[0], 4u);
  EXPECT_EQ(peak, 2);
  EXPECT_GT(p.a->counters().read_waits, 0u);
  EXPECT_EQ(p.a->qp_info(kQpA)->reads_outstanding, 0u);
}

// ------------------------------------------------------------------------- hostile peers

std::vector<uint8_t> atomic_ack_to_a(uint32_t psn, uint64_t orig, AethType type = AethType::kAck) {
  testing::RoceForged f;
  f.op = RoceOpcode::kRcAtomicAck;
  f.dest_qp = kQpA;
  f.psn = psn;
  f.src = kIpB;
  f.dst = kIpA;
  f.aeth_type = type;
  f.aeth_value = type == AethType::kAck ? ROCEV2_AETH_CREDITS_UNLIMITED : 0;
  f.orig_data = orig;
  return testing::forge(f);
}

// Expect: ATOMIC ACKNOWLEDGEs that answer no outstanding atomic -- nothing sent yet, a WRITE's
// PSN, a NAK syndrome, a PSN never sent -- and a READ response at the atomic's PSN are counted
// and dropped: nothing completes, the result buffer is untouched. The real one then completes
// the WRITE before it and the atomic; a copy of it is a duplicate and changes nothing.
TEST(RoceAtomic_Hostile, AcksForNoOutstandingAtomicAreCountedAndDropped) {
  Pair p;  // the link stays idle: the test hands frames over itself
  testing::deliver(*p.a, atomic_ack_to_a(kPsnA, 1));
  const std::vector<uint8_t> src(8, 1);
  const uint64_t one = 1;
  uint64_t r = 0xFEED;
  ASSERT_TRUE(p.a->post_write(testing::write_request(1, kIpB, p.rkey, src, 64)).ok());
  ASSERT_TRUE(p.a->post_atomic(fetch_add(2, p.rkey, 0, one, &r)).ok());
  std::vector<uint8_t> buf(9216);
  wire::Decoded d;
  ASSERT_NE(testing::take_decoded(*p.a, buf, 0, &d), 0u);
  EXPECT_EQ(d.bth->opcode(), RoceOpcode::kRcWriteOnly);
  ASSERT_NE(testing::take_decoded(*p.a, buf, 0, &d), 0u);
  EXPECT_EQ(d.bth->opcode(), RoceOpcode::kRcFetchAdd);
  EXPECT_EQ(d.bth->psn(), kPsnA + 1);
  testing::deliver(*p.a, atomic_ack_to_a(kPsnA, 2));                      // the WRITE's PSN
  testing::deliver(*p.a, atomic_ack_to_a(kPsnA + 1, 3, AethType::kNak));  // not an ACK
  testing::deliver(*p.a, atomic_ack_to_a(kPsnA + 2, 4));                  // never sent
  testing::RoceForged response;
  response.op = RoceOpcode::kRcReadResponseOnly;
  response.dest_qp = kQpA;
  response.psn = kPsnA + 1;
  response.src = kIpB;
  response.dst = kIpA;
  response.payload.assign(8, 0x77);
  testing::deliver(*p.a, testing::forge(response));
  EXPECT_EQ(p.a->counters().rx_atomic_ack_unexpected, 4u);
  EXPECT_EQ(p.a->counters().rx_read_unexpected, 1u);
  EXPECT_TRUE(drain(*p.a).empty());
  EXPECT_EQ(r, 0xFEEDu);
  testing::deliver(*p.a, atomic_ack_to_a(kPsnA + 1, 41));
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].op, Opcode::kWrite);
  EXPECT_EQ(c[1].op, Opcode::kAtomic);
  for (const Completion& x : c) EXPECT_EQ(x.status, OpStatus::kSuccess);
  EXPECT_EQ(r, 41u);
  testing::deliver(*p.a, atomic_ack_to_a(kPsnA + 1, 99));
  EXPECT_EQ(p.a->counters().rx_atomic_ack_dup, 1u);
  EXPECT_EQ(r, 41u);
  EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kRts);
  EXPECT_EQ(p.a->qp_info(kQpA)->reads_outstanding, 0u);
}

// Expect (§4): an atomic inside a WRITE message (after its FIRST) is an invalid request: NAK
// INVALID REQUEST, the responder's QP fails, the word is unchanged.
TEST(RoceAtomic_Hostile, AtomicInsideAMessageIsAnInvalidRequest) {
  Pair p;
  std::vector<uint8_t> big(2 * 4096, 0);
  const uint32_t big_key = *p.b->register_memory(big.data(), big.size());
  testing::RoceForged first;
  first.op = RoceOpcode::kRcWriteFirst;
  first.dest_qp = kQpB;
  first.psn = kPsnA;
  first.src = kIpA;
  first.dst = kIpB;
  first.rkey = big_key;
  first.dma_length = static_cast<uint32_t>(big.size());
  first.payload.assign(4096, 0x42);
  testing::deliver(*p.b, testing::forge(first));
  testing::deliver(*p.b,
                   testing::forge(forged_atomic(RoceOpcode::kRcFetchAdd, kPsnA + 1, p.rkey, 0, 5)));
  const auto out = take_all(*p.b);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].aeth_type, AethType::kNak);
  EXPECT_EQ(out[0].aeth_value, static_cast<uint8_t>(AethNak::kInvalidRequest));
  EXPECT_EQ(out[0].psn, kPsnA + 1);
  EXPECT_EQ(p.words[0], 0u);
  EXPECT_EQ(p.b->counters().rx_invalid_request, 1u);
  EXPECT_EQ(p.b->counters().rx_atomics, 0u);
  EXPECT_EQ(p.b->qp_info(kQpB)->state, QpState::kError);
}

}  // namespace
}  // namespace uet
