// Atomics: their arithmetic (transport/atomic.h) for every operation the spec's types admit,
// and the UET engine's ATOMIC / FETCHING_ATOMIC (transport/uet/uet_atomic.cc) on the fake link:
// results exact, each request executed exactly once under loss, duplication and reordering
// (and when every frame is duplicated), the CSWAP family, MSWAP and vectors, the refusals with
// their return codes, a full result table, and the requests the API refuses by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "sim/network.h"
#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/spray_fabric.h"
#include "tests/common/uet_pair.h"
#include "tests/common/uet_sim_hosts.h"
#include "transport/atomic.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

using testing::drain;

// ------------------------------------------------------------------------------ arithmetic

template <class T>
T run(AtomicOp op, AtomicType type, T target, T operand, T compare = T{}, T* fetched = nullptr) {
  T old{};
  atomic_apply(op, type, reinterpret_cast<uint8_t*>(&target),
               reinterpret_cast<const uint8_t*>(&operand),
               reinterpret_cast<const uint8_t*>(&compare), reinterpret_cast<uint8_t*>(&old), 1);
  if (fetched != nullptr) *fetched = old;
  return target;
}

TEST(Atomic_Supported, IntegersTakeEveryOpRealsNoBitwiseComplexNoOrder) {
  int supported = 0;
  for (size_t t = 0; t < kNumAtomicTypes; ++t) {
    for (size_t o = 0; o < kNumAtomicOps; ++o) {
      supported += atomic_supported(static_cast<AtomicOp>(o), static_cast<AtomicType>(t)) ==
                   AtomicFault::kNone;
    }
  }
  // 10 integer types x 20 ops, 5 real types x 16 (no BOR, BAND, BXOR, MSWAP), 3 complex x 10
  // (nor MIN, MAX and the four ordered compares).
  EXPECT_EQ(supported, 10 * 20 + 5 * 16 + 3 * 10);
  EXPECT_EQ(atomic_supported(AtomicOp::kBor, AtomicType::kFloat), AtomicFault::kUnsupportedOp);
  EXPECT_EQ(atomic_supported(AtomicOp::kMin, AtomicType::kDoubleComplex),
            AtomicFault::kUnsupportedOp);
  EXPECT_EQ(atomic_supported(AtomicOp::kCswap, AtomicType::kDoubleComplex), AtomicFault::kNone);
  EXPECT_EQ(atomic_supported(AtomicOp::kSum, static_cast<AtomicType>(18)),
            AtomicFault::kUnsupportedType);
  EXPECT_EQ(atomic_supported(static_cast<AtomicOp>(20), AtomicType::kUint8),
            AtomicFault::kUnsupportedOp);
}

TEST(Atomic_Apply, IntegerOperationsAndTheValueFetched) {
  constexpr auto I32 = AtomicType::kInt32;
  int32_t old = 0;
  EXPECT_EQ(run<int32_t>(AtomicOp::kMin, I32, 5, -3, 0, &old), -3);
  EXPECT_EQ(old, 5);
  EXPECT_EQ(run<int32_t>(AtomicOp::kMax, I32, 5, -3), 5);
  EXPECT_EQ(run<int32_t>(AtomicOp::kSum, I32, 5, -3), 2);
  EXPECT_EQ(run<int32_t>(AtomicOp::kDiff, I32, 5, -3), 8);
  EXPECT_EQ(run<int32_t>(AtomicOp::kProd, I32, 5, -3), -15);
  EXPECT_EQ(run<int32_t>(AtomicOp::kLor, I32, 0, 7), 1);
  EXPECT_EQ(run<int32_t>(AtomicOp::kLand, I32, 2, 0), 0);
  EXPECT_EQ(run<int32_t>(AtomicOp::kLxor, I32, 2, 9), 0);
  EXPECT_EQ(run<int32_t>(AtomicOp::kBor, I32, 0x0C, 0x03), 0x0F);
  EXPECT_EQ(run<int32_t>(AtomicOp::kBand, I32, 0x0C, 0x06), 0x04);
  EXPECT_EQ(run<int32_t>(AtomicOp::kBxor, I32, 0x0C, 0x06), 0x0A);
  EXPECT_EQ(run<int32_t>(AtomicOp::kRead, I32, 41, 99, 0, &old), 41);
  EXPECT_EQ(old, 41);
  EXPECT_EQ(run<int32_t>(AtomicOp::kWrite, I32, 41, 99), 99);
  // The CSWAP family compares the compare value with the target, as libfabric's FI_CSWAP_*.
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswap, I32, 10, 77, 10), 77);
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswap, I32, 10, 77, 11), 10);
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswapNe, I32, 10, 77, 11), 77);
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswapLe, I32, 10, 77, 10), 77);
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswapLe, I32, 10, 77, 11), 10);
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswapLt, I32, 10, 77, 9), 77);
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswapLt, I32, 10, 77, 10), 10);
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswapGe, I32, 10, 77, 10), 77);
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswapGt, I32, 10, 77, 10), 10);
  EXPECT_EQ(run<int32_t>(AtomicOp::kCswapGt, I32, 10, 77, 11), 77);
  // MSWAP: the mask's bits from the swap value, the rest kept.
  EXPECT_EQ(run<uint32_t>(AtomicOp::kMswap, AtomicType::kUint32, 0xAAAA5555u, 0x12345678u,
                          0xFFFF0000u),
            0x12345555u);
}

TEST(Atomic_Apply, IntegersWrapWithoutOverflowAt8To128Bits) {
  EXPECT_EQ(run<uint8_t>(AtomicOp::kSum, AtomicType::kUint8, 200, 100), 44);
  EXPECT_EQ(run<uint16_t>(AtomicOp::kProd, AtomicType::kUint16, 65535, 65535), 1);
  EXPECT_EQ(run<int8_t>(AtomicOp::kSum, AtomicType::kInt8, 127, 1), -128);
  EXPECT_EQ(run<int64_t>(AtomicOp::kSum, AtomicType::kInt64, INT64_MAX, 1), INT64_MIN);
  __extension__ using U128 = unsigned __int128;
  const U128 big = (U128{1} << 100) + 5;
  EXPECT_TRUE(run<U128>(AtomicOp::kSum, AtomicType::kUint128, big, big) == (U128{1} << 101) + 10);
  __extension__ using I128 = __int128;
  EXPECT_TRUE(run<I128>(AtomicOp::kMin, AtomicType::kInt128, I128{-1} << 100, 3) ==
              I128{-1} << 100);
}

TEST(Atomic_Apply, FloatingTypesComplexAndHalves) {
  EXPECT_EQ(run<float>(AtomicOp::kSum, AtomicType::kFloat, 1.5f, 2.25f), 3.75f);
  EXPECT_EQ(run<double>(AtomicOp::kMax, AtomicType::kDouble, -1.0, 0.5), 0.5);
  EXPECT_EQ(run<long double>(AtomicOp::kProd, AtomicType::kLongDouble, 3.0L, 0.5L), 1.5L);
  EXPECT_EQ(run<double>(AtomicOp::kLand, AtomicType::kDouble, 0.25, 3.0), 1.0);
  const std::complex<double> z =
      run<std::complex<double>>(AtomicOp::kProd, AtomicType::kDoubleComplex, {1, 2}, {3, 4});
  EXPECT_EQ(z, std::complex<double>(-5, 10));
  EXPECT_EQ(run<std::complex<float>>(AtomicOp::kCswap, AtomicType::kFloatComplex, {1, 1}, {9, 9},
                                     {1, 1}),
            std::complex<float>(9, 9));
  // bfloat16 1.5 (0x3FC0) + 2.25 (0x4010) = 3.75 (0x4070); FP16 1.5 (0x3E00) + 2.25 (0x4080)
  // = 3.75 (0x4380): exact in both, so the rounding back is checked too.
  EXPECT_EQ(run<uint16_t>(AtomicOp::kSum, AtomicType::kBf16, 0x3FC0, 0x4010), 0x4070);
  EXPECT_EQ(run<uint16_t>(AtomicOp::kSum, AtomicType::kFp16, 0x3E00, 0x4080), 0x4380);
  EXPECT_EQ(run<uint16_t>(AtomicOp::kMin, AtomicType::kFp16, 0x3E00, 0xC080), 0xC080);  // -2.25
}

TEST(Atomic_Apply, VectorsUpdateEveryElementAndFetchEach) {
  uint32_t target[4] = {1, 2, 3, 4}, operand[4] = {10, 20, 30, 40}, fetched[4] = {};
  atomic_apply(AtomicOp::kSum, AtomicType::kUint32, reinterpret_cast<uint8_t*>(target),
               reinterpret_cast<const uint8_t*>(operand), nullptr,
               reinterpret_cast<uint8_t*>(fetched), 4);
  EXPECT_EQ(std::vector<uint32_t>(target, target + 4), (std::vector<uint32_t>{11, 22, 33, 44}));
  EXPECT_EQ(std::vector<uint32_t>(fetched, fetched + 4), (std::vector<uint32_t>{1, 2, 3, 4}));
}

// ------------------------------------------------------------------------------ the engine

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

UetConfig config_for(uint32_t ip) {
  UetConfig c = testing::uet_config(ip, /*seed=*/43);
  c.idle_timeout = 0;
  return c;
}

struct Link : testing::UetLink {
  explicit Link(const UetConfig& a = config_for(kIpA), const UetConfig& b = config_for(kIpB))
      : UetLink(a, b, /*jitter_seed=*/9) {}
};

// Target memory at B: 64 bytes, 16-aligned, registered.
struct Target {
  explicit Target(UetEndpoint& b) {
    auto k = b.register_memory(mem, sizeof mem);
    EXPECT_TRUE(k.ok());
    key = *k;
  }
  alignas(16) uint8_t mem[64] = {};
  uint32_t key = 0;
  template <class T>
  T at(size_t off) const {
    T v;
    std::memcpy(&v, mem + off, sizeof v);
    return v;
  }
};

AtomicRequest atomic(uint64_t wr_id, uint32_t key, uint64_t off, AtomicOp op, AtomicType type,
                     const void* operand, void* result = nullptr, const void* compare = nullptr,
                     DeliveryMode mode = DeliveryMode::kRud) {
  AtomicRequest ar;
  ar.wr_id = wr_id;
  ar.peer = kIpB;
  ar.rkey = key;
  ar.remote_offset = off;
  ar.op = op;
  ar.type = type;
  ar.operand = static_cast<const uint8_t*>(operand);
  ar.compare = static_cast<const uint8_t*>(compare);
  ar.result = static_cast<uint8_t*>(result);
  ar.mode = mode;
  return ar;
}

class UetAtomic_Faults : public ::testing::TestWithParam<DeliveryMode> {};

// Expect: N fetching adds of 1 under loss (both ways), duplication and reordering leave the
// counter at exactly N, and the values fetched are 0..N-1, each once: every request executed
// once, every answer to its own request.
TEST_P(UetAtomic_Faults, FetchAddsUnderLossDuplicationAndReorderingRunOnceEach) {
  Link link;
  Target t(link.b());
  std::mt19937 rng(23);
  link.set_jitter(8 * kMicrosecond);
  int lost = 0, duplicated = 0;
  link.set_filter([&](int, const wire::Decoded&) {
    const auto r = static_cast<uint32_t>(rng() % 20);
    if (r == 0) return ++lost, 0;
    if (r <= 3) return ++duplicated, 2;
    return 1;
  });
  constexpr int kN = 300;
  const uint64_t one = 1;
  std::vector<uint64_t> fetched(kN, ~uint64_t{0});
  int posted = 0;
  while (posted < kN) {
    for (; posted < kN; ++posted) {
      const absl::Status s = link.a().post_atomic(atomic(posted, t.key, 8, AtomicOp::kSum,
                                                         AtomicType::kUint64, &one,
                                                         &fetched[posted], nullptr, GetParam()));
      if (!s.ok()) break;  // max_ops: let some complete first
    }
    link.run(link.now() + 200 * kMicrosecond);
  }
  link.run(kSecond);
  const auto done = drain(link.a(), 4 * kN);
  ASSERT_EQ(done.size(), static_cast<size_t>(kN));
  for (const Completion& c : done) {
    EXPECT_EQ(c.status, OpStatus::kSuccess) << c.wr_id;
    EXPECT_EQ(c.op, Opcode::kAtomic);
    EXPECT_EQ(c.bytes, 8u);
  }
  EXPECT_EQ(t.at<uint64_t>(8), static_cast<uint64_t>(kN));
  std::set<uint64_t> seen(fetched.begin(), fetched.end());
  EXPECT_EQ(seen.size(), static_cast<size_t>(kN));
  EXPECT_EQ(*seen.begin(), 0u);
  EXPECT_EQ(*seen.rbegin(), static_cast<uint64_t>(kN - 1));
  EXPECT_EQ(link.b().counters().rx_atomics, static_cast<uint64_t>(kN));
  EXPECT_GT(lost, 0);
  EXPECT_GT(duplicated, 0);
  EXPECT_GT(link.b().counters().rx_duplicates, 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, UetAtomic_Faults,
                         ::testing::Values(DeliveryMode::kRud, DeliveryMode::kRod));

// Expect: with every frame delivered twice (requests and answers, the copies late), plain and
// fetching atomics still run once each: the duplicates of fetching ones are answered from the
// held values (replays), never executed again.
TEST(UetAtomic_Duplicates, EveryFrameTwiceStillExecutesOnce) {
  Link link;
  Target t(link.b());
  link.set_jitter(5 * kMicrosecond);
  link.set_filter([](int, const wire::Decoded&) { return 2; });
  constexpr int kN = 64;
  const uint32_t one = 1;
  std::vector<uint32_t> fetched(kN, 0);
  for (int i = 0; i < kN; ++i) {
    const bool fetch = i % 2 == 0;
    ASSERT_TRUE(link.a()
                    .post_atomic(atomic(i, t.key, 0, AtomicOp::kSum, AtomicType::kUint32, &one,
                                        fetch ? &fetched[i] : nullptr))
                    .ok());
  }
  link.run(kSecond);
  const auto done = drain(link.a(), 4 * kN);
  ASSERT_EQ(done.size(), static_cast<size_t>(kN));
  for (const Completion& c : done) EXPECT_EQ(c.status, OpStatus::kSuccess);
  EXPECT_EQ(t.at<uint32_t>(0), static_cast<uint32_t>(kN));
  EXPECT_EQ(link.b().counters().rx_atomics, static_cast<uint64_t>(kN));
  EXPECT_GT(link.b().counters().rx_atomic_replays, 0u);
  std::set<uint32_t> seen;
  for (int i = 0; i < kN; i += 2) seen.insert(fetched[i]);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kN / 2));  // each fetch saw its own value
}

// Expect: the CSWAP family's compare (in the extension header, §4.5.2) decides, and the value
// before comes back either way; MSWAP's masks and a vector's elements travel in the payload.
TEST(UetAtomic_Ops, CompareSwapFamilyMswapAndVectorsOverTheWire) {
  Link link;
  Target t(link.b());
  const int64_t ten = 10;
  std::memcpy(t.mem, &ten, 8);
  struct Case {
    AtomicOp op;
    int64_t delta;  // compare = the target's value + delta
    bool swaps;     // whether `compare <op> target` holds (libfabric's order)
  };
  const Case cases[] = {{AtomicOp::kCswap, 1, false},   {AtomicOp::kCswap, 0, true},
                        {AtomicOp::kCswapNe, 1, true},  {AtomicOp::kCswapNe, 0, false},
                        {AtomicOp::kCswapLe, 1, false}, {AtomicOp::kCswapLe, 0, true},
                        {AtomicOp::kCswapLt, 0, false}, {AtomicOp::kCswapLt, -1, true},
                        {AtomicOp::kCswapGe, -1, false}, {AtomicOp::kCswapGe, 0, true},
                        {AtomicOp::kCswapGt, 0, false}, {AtomicOp::kCswapGt, 1, true}};
  int64_t value = ten;
  for (const Case& c : cases) {
    const int64_t swap = value + 100, compare = value + c.delta;
    int64_t before = -1;
    ASSERT_TRUE(link.a()
                    .post_atomic(atomic(1, t.key, 0, c.op, AtomicType::kInt64, &swap, &before,
                                        &compare))
                    .ok());
    link.run(link.now() + kMillisecond);
    const auto done = drain(link.a());
    ASSERT_EQ(done.size(), 1u) << to_string(c.op);
    EXPECT_EQ(done[0].status, OpStatus::kSuccess);
    EXPECT_EQ(before, value) << to_string(c.op);
    if (c.swaps) value = swap;
    EXPECT_EQ(t.at<int64_t>(0), value) << to_string(c.op);
  }
  // MSWAP on a 32-bit word at offset 16; a 4-element vector SUM of uint32 at offset 32.
  const uint32_t word = 0xAAAA5555u, swap = 0x12345678u, mask = 0xFFFF0000u;
  std::memcpy(t.mem + 16, &word, 4);
  uint32_t before = 0;
  ASSERT_TRUE(link.a()
                  .post_atomic(atomic(2, t.key, 16, AtomicOp::kMswap, AtomicType::kUint32, &swap,
                                      &before, &mask))
                  .ok());
  const uint32_t add[4] = {1, 2, 3, 4};
  uint32_t olds[4] = {9, 9, 9, 9};
  AtomicRequest vec =
      atomic(3, t.key, 32, AtomicOp::kSum, AtomicType::kUint32, add, olds);
  vec.count = 4;
  ASSERT_TRUE(link.a().post_atomic(vec).ok());
  link.run(link.now() + kMillisecond);
  ASSERT_EQ(drain(link.a()).size(), 2u);
  EXPECT_EQ(before, word);
  EXPECT_EQ(t.at<uint32_t>(16), 0x12345555u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(t.at<uint32_t>(32 + 4 * i), add[i]);
    EXPECT_EQ(olds[i], 0u);
  }
}

// Expect: refused requests complete with the target's return code (§4.9) and change nothing.
TEST(UetAtomic_Refusals, EachCompletesWithItsReturnCodeAndNothingChanges) {
  UetConfig b = config_for(kIpB);
  b.job_id = 7;
  UetConfig a = config_for(kIpA);
  a.job_id = 7;
  Link link(a, b);
  Target t(link.b());
  const uint64_t one = 1;
  uint64_t got = 0;
  struct Case {
    const char* name;
    uint32_t key;
    uint64_t off;
    wire::SesReturnCode code;
    OpStatus status;
  };
  const Case cases[] = {
      {"unaligned", t.key, 4, wire::SesReturnCode::kAmoUnaligned, OpStatus::kRemoteInvalidRequest},
      {"past the region", t.key, 64, wire::SesReturnCode::kBadAddr, OpStatus::kRemoteAccessError},
      {"unknown key", t.key + 5, 0, wire::SesReturnCode::kBadMkey, OpStatus::kRemoteAccessError},
  };
  uint64_t id = 0;
  for (const Case& c : cases) {
    for (const bool fetch : {false, true}) {
      ASSERT_TRUE(link.a()
                      .post_atomic(atomic(++id, c.key, c.off, AtomicOp::kSum, AtomicType::kUint64,
                                          &one, fetch ? &got : nullptr))
                      .ok());
      link.run(link.now() + kMillisecond);
      const auto done = drain(link.a());
      ASSERT_EQ(done.size(), 1u) << c.name;
      EXPECT_EQ(done[0].status, c.status) << c.name;
      EXPECT_EQ(done[0].return_code, static_cast<uint8_t>(c.code)) << c.name;
    }
  }
  for (uint8_t byte : t.mem) EXPECT_EQ(byte, 0);
  EXPECT_EQ(link.b().counters().rx_atomics, 0u);
  EXPECT_EQ(link.b().counters().rx_atomic_refused, 6u);
  // Another job's atomic: refused BAD_JOB_ID before it is looked at.
  UetConfig other = config_for(kIpA);
  other.job_id = 8;
  Link foreign(other, b);
  Target ft(foreign.b());
  ASSERT_TRUE(foreign.a()
                  .post_atomic(atomic(9, ft.key, 0, AtomicOp::kSum, AtomicType::kUint64, &one, &got))
                  .ok());
  foreign.run(kMillisecond);
  const auto done = drain(foreign.a());
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, OpStatus::kAccessDenied);
  EXPECT_EQ(done[0].return_code, static_cast<uint8_t>(wire::SesReturnCode::kBadJobId));
  EXPECT_EQ(ft.at<uint64_t>(0), 0u);
}

// Expect: requests whose extension a hostile peer rewrote (an undefined type or operation, a
// bitwise operation on a float) are refused with the AMO code and leave memory alone.
TEST(UetAtomic_Refusals, RewrittenExtensionsAreRefusedWithTheAmoCode) {
  struct Case {
    int byte;       // 0: atomic opcode, 1: data type
    uint8_t value;
    wire::SesReturnCode code;
  };
  const Case cases[] = {{1, 0x20, wire::SesReturnCode::kAmoUnsupportedDt},
                        {0, 0x14, wire::SesReturnCode::kAmoUnsupportedOp},
                        {1, static_cast<uint8_t>(AtomicType::kFloat),
                         wire::SesReturnCode::kAmoUnsupportedOp}};
  for (const Case& c : cases) {
    Link link;
    Target t(link.b());
    link.set_filter(testing::UetLink::RewriteFilter(
        [&](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
          if (from == 0 && d.ses_atomic != nullptr) {
            bytes[static_cast<size_t>(d.ses_atomic->raw - bytes.data()) + c.byte] = c.value;
            bytes[14 + 20 + 6] = bytes[14 + 20 + 7] = 0;  // no UDP checksum (IPv4 allows it)
          }
          return 1;
        }));
    const uint32_t bits = 0x0F;
    uint32_t got = 0;
    ASSERT_TRUE(link.a()
                    .post_atomic(atomic(1, t.key, 0, AtomicOp::kBor, AtomicType::kUint32, &bits,
                                        &got))
                    .ok());
    link.run(kMillisecond);
    const auto done = drain(link.a());
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].return_code, static_cast<uint8_t>(c.code));
    EXPECT_EQ(t.at<uint32_t>(0), 0u);
    EXPECT_EQ(link.b().counters().rx_atomic_refused, 1u);
  }
}

// Expect: with one result slot, fetching atomics in flight together find it held, are NACKed
// and come again; all complete with exact values.
TEST(UetAtomic_Results, AFullResultTableNacksAndEveryFetchStillCompletes) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.rnr_retries = 64;  // each RTO round frees one slot for one of them
  b.atomic_results = 1;
  Link link(a, b);
  Target t(link.b());
  constexpr int kN = 16;
  const uint64_t one = 1;
  std::vector<uint64_t> fetched(kN, ~uint64_t{0});
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(link.a()
                    .post_atomic(atomic(i, t.key, 0, AtomicOp::kSum, AtomicType::kUint64, &one,
                                        &fetched[i]))
                    .ok());
  }
  link.run(kSecond);
  const auto done = drain(link.a(), 4 * kN);
  ASSERT_EQ(done.size(), static_cast<size_t>(kN));
  for (const Completion& c : done) EXPECT_EQ(c.status, OpStatus::kSuccess) << c.wr_id;
  EXPECT_EQ(t.at<uint64_t>(0), static_cast<uint64_t>(kN));
  EXPECT_EQ(std::set<uint64_t>(fetched.begin(), fetched.end()).size(), static_cast<size_t>(kN));
  EXPECT_GT(link.b().counters().rx_atomic_full, 0u);
}

// Expect: an atomic NACKed more often than rnr_retries gives up (kNoResources, NO_SES_MSG_AVAIL)
// and is never executed, even by the copy it sends with `ie`: the target's count of executed
// atomics is the successes' count, and the counter holds exactly that.
TEST(UetAtomic_Results, OneThatGivesUpIsNeverExecuted) {
  UetConfig a = config_for(kIpA), b = config_for(kIpB);
  a.rnr_retries = 1;
  b.atomic_results = 1;
  Link link(a, b);
  Target t(link.b());
  constexpr int kN = 16;
  const uint64_t one = 1;
  std::vector<uint64_t> fetched(kN, 0);
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(link.a()
                    .post_atomic(atomic(i, t.key, 0, AtomicOp::kSum, AtomicType::kUint64, &one,
                                        &fetched[i]))
                    .ok());
  }
  link.run(kSecond);
  const auto done = drain(link.a(), 4 * kN);
  ASSERT_EQ(done.size(), static_cast<size_t>(kN));
  uint64_t ok = 0;
  for (const Completion& c : done) {
    if (c.status == OpStatus::kSuccess) {
      ++ok;
    } else {
      EXPECT_EQ(c.status, OpStatus::kNoResources) << c.wr_id;
    }
  }
  EXPECT_GT(ok, 0u);
  EXPECT_LT(ok, static_cast<uint64_t>(kN));
  EXPECT_EQ(t.at<uint64_t>(0), ok);
  EXPECT_EQ(link.b().counters().rx_atomics, ok);
  EXPECT_GT(link.b().counters().rx_initiator_err, 0u);
}

// Expect: peers that fetched once and went quiet (PDCs never closed) do not keep the target's
// held results: with nothing left to send, each sends a CLEAR (§3.3), so with two result slots
// seven peers' fetching adds in turn all succeed, none retried into kNoResources.
TEST(UetAtomic_Sim, QuietPeersClearTheResultsTheTargetHolds) {
  sim::Network net(testing::seeded_network(5));
  ASSERT_TRUE(testing::build_spray_fabric(net, /*fabric_loss=*/0).ok());
  constexpr uint32_t kHosts = 8;
  testing::UetSimHosts hosts(net, kHosts, [](uint32_t h, UetConfig& c) {
    c.idle_timeout = 0;  // PDCs never close: a CLOSE would clear them anyway
    c.rnr_retries = 2;
    if (h == 0) c.atomic_results = 2;
  });
  const uint64_t one = 1;
  std::vector<uint64_t> fetched(kHosts, ~uint64_t{0});
  for (uint32_t h = 1; h < kHosts; ++h) {
    AtomicRequest ar = atomic(h, 1, 0, AtomicOp::kSum, AtomicType::kUint64, &one, &fetched[h]);
    ar.peer = sim::Network::host_ip4(0);
    ASSERT_TRUE(hosts.eps[h]->post_atomic(ar).ok());
    net.kick(h);
    net.run_until(net.now() + 200 * kMicrosecond);
    const auto done = drain(*hosts.eps[h]);
    ASSERT_EQ(done.size(), 1u) << "host " << h;
    EXPECT_EQ(done[0].status, OpStatus::kSuccess) << "host " << h;
    EXPECT_EQ(fetched[h], h - 1);
  }
  uint64_t value = 0;
  std::memcpy(&value, hosts.mem[0].data(), 8);
  EXPECT_EQ(value, kHosts - 1);
  EXPECT_EQ(hosts.eps[0]->counters().rx_atomic_full, 0u);
  EXPECT_GE(hosts.eps[0]->counters().refusals_cleared, kHosts - 2);  // freed by the CLEARs
}

// Expect: an initiator whose fetched value the target holds tells it so (§3.3 clear PSN) even
// when a WRITE was still in flight as the value came back, and its first CLEAR is lost: the
// CLEAR goes again an RTO later and the target frees the result (PDCs never close here).
TEST(UetAtomic_Clear, ALostClearGoesAgainAndFreesTheHeldResult) {
  Link link;
  Target t(link.b());
  std::vector<uint8_t> big(3 * 4096, 0x11), dst(3 * 4096, 0);
  const uint32_t wkey = *link.b().register_memory(dst.data(), dst.size());
  int clears = 0;
  link.set_filter([&](int from, const wire::Decoded& d) {
    const bool clear = d.pds_type == wire::PdsType::kCtrl &&
                       wire::as<wire::PdsCtrl>(d.pds)->ctl_type() == wire::CtrlType::kClear;
    if (from == 0 && clear && clears++ == 0) return 0;  // the first CLEAR is lost
    return 1;
  });
  const uint64_t one = 1;
  uint64_t fetched = ~uint64_t{0};
  ASSERT_TRUE(link.a()
                  .post_atomic(atomic(1, t.key, 0, AtomicOp::kSum, AtomicType::kUint64, &one,
                                      &fetched))
                  .ok());
  link.run(link.now() + kMicrosecond);  // the atomic is on its way; then a WRITE follows it
  WriteRequest wr{.wr_id = 2, .peer = kIpB, .rkey = wkey, .local = big.data(),
                  .length = big.size()};
  ASSERT_TRUE(link.a().post_write(wr).ok());
  link.run(link.now() + 10 * kMillisecond);
  const auto done = drain(link.a());
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(fetched, 0u);
  EXPECT_TRUE(big == dst);
  EXPECT_GE(clears, 2);  // the lost one, and the one sent again
  EXPECT_EQ(link.b().counters().refusals_cleared, 1u);  // the held result, freed
}

// Expect: requests the engine cannot carry are refused at posting, naming what is wrong.
TEST(UetAtomic_Post, BadRequestsAreRefusedNamingTheField) {
  Link link;
  const uint64_t v = 1;
  uint64_t r = 0;
  struct Case {
    AtomicRequest ar;
    absl::StatusCode code;
    const char* mentions;
  };
  AtomicRequest base = atomic(1, 1, 0, AtomicOp::kSum, AtomicType::kUint64, &v, &r);
  std::vector<Case> cases;
  auto with = [&](auto change, absl::StatusCode code, const char* mentions) {
    AtomicRequest ar = base;
    change(ar);
    cases.push_back({ar, code, mentions});
  };
  using C = absl::StatusCode;
  with([](AtomicRequest& a) { a.count = 0; }, C::kInvalidArgument, "count must be 1..4");
  with([](AtomicRequest& a) { a.count = 5; }, C::kInvalidArgument, "count must be 1..4");
  with([](AtomicRequest& a) { a.op = AtomicOp::kCswap; a.count = 2; }, C::kInvalidArgument,
       "count must be 1..1");
  with([](AtomicRequest& a) { a.operand = nullptr; }, C::kInvalidArgument, "operand");
  with([](AtomicRequest& a) { a.op = AtomicOp::kMswap; }, C::kInvalidArgument, "compare");
  with([](AtomicRequest& a) { a.op = AtomicOp::kRead; a.result = nullptr; }, C::kInvalidArgument,
       "result");
  with([](AtomicRequest& a) { a.op = AtomicOp::kBxor; a.type = AtomicType::kDouble; },
       C::kInvalidArgument, "BXOR is not defined on type DOUBLE");
  with([](AtomicRequest& a) { a.type = static_cast<AtomicType>(40); }, C::kInvalidArgument,
       "not an AtomicType");
  with([](AtomicRequest& a) { a.mode = DeliveryMode::kRudi; }, C::kUnimplemented,
       "kRudi does not carry atomics");
  with([](AtomicRequest& a) { a.mode = DeliveryMode::kUud; }, C::kUnimplemented,
       "kUud does not carry atomics");
  for (const Case& c : cases) {
    const absl::Status s = link.a().post_atomic(c.ar);
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_NE(s.message().find(c.mentions), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace uet
