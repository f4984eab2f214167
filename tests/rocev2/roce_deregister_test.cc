// deregister_memory in the RoCEv2 RC engine (transport/api.h, transport/region_table.h), on
// the fake link: a deregistered region's R_Key gets NAK remote access error (rx_bad_rkey) and
// the WR completes kRemoteAccessError, as IB's responder does for an invalid R_Key; a WRITE
// under way into it and READ responses still to come from it stop there; its memory is never
// touched again; the requester's own WRs keep a region registered until they complete.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/roce_pair.h"
#include "transport/rocev2/roce_endpoint.h"

namespace uet {
namespace {

using testing::drain;
using testing::FakeLink;
using testing::nonzero_pattern;
using testing::Verdict;
using testing::write_request;
using wire::RoceOpcode;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kQpA = 0x100, kQpB = 0x105;

RoceConfig config_for(uint32_t ip) { return testing::roce_config(ip, /*ack_timeout_exp=*/8); }

struct Pair : testing::RocePair {
  Pair() : RocePair(config_for(kIpA), config_for(kIpB), {kQpA, kQpB, 100, 200}) {}
  // After a NAK both QPs are in the error state (IB); connected again from fresh PSNs.
  void reconnect(uint32_t psn) {
    ASSERT_TRUE(a->connect_qp(kIpB, kQpA, kQpB, psn, psn + 1000).ok());
    ASSERT_TRUE(b->connect_qp(kIpA, kQpB, kQpA, psn + 1000, psn).ok());
  }
};

bool zero(const std::vector<uint8_t>& v, size_t from = 0) {
  return std::all_of(v.begin() + static_cast<ptrdiff_t>(from), v.end(),
                     [](uint8_t x) { return x == 0; });
}

TEST(RoceDeregister_Write, OldRkeyGetsRemoteAccessErrorAndMemoryUntouched) {
  Pair p;
  std::vector<uint8_t> dst(8192, 0), src = nonzero_pattern(4096, 1);
  const uint32_t key = *p.b->register_memory(dst.data(), dst.size());
  EXPECT_EQ(key, 1u);  // a first registration's R_Key, as before deregistration existed
  ASSERT_TRUE(p.a->post_write(write_request(1, kIpB, key, src)).ok());
  p.link->run(kSecond);
  auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);

  ASSERT_TRUE(p.b->deregister_memory(key).ok());
  std::fill(dst.begin(), dst.end(), 0);
  ASSERT_TRUE(p.a->post_write(write_request(2, kIpB, key, src, 4096)).ok());
  p.link->run(2 * kSecond);
  c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  // Expect: NAK remote access error, counted at the responder; nothing placed.
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(p.b->counters().rx_bad_rkey, 1u);
  EXPECT_EQ(p.a->counters().rx_nak_fatal, 1u);
  EXPECT_TRUE(zero(dst));
  EXPECT_TRUE(absl::IsNotFound(p.b->deregister_memory(key)));
  // Expect: the next registration another key; the old one still refused, the new one works.
  const uint32_t again = *p.b->register_memory(dst.data(), dst.size());
  EXPECT_NE(again, key);
  p.reconnect(5000);
  ASSERT_TRUE(p.a->post_write(write_request(3, kIpB, again, src, 4096)).ok());
  p.link->run(3 * kSecond);
  ASSERT_TRUE(p.a->post_write(write_request(4, kIpB, key, src)).ok());
  p.link->run(4 * kSecond);
  c = drain(*p.a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[1].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(p.b->counters().rx_bad_rkey, 2u);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 4096));
  EXPECT_TRUE(std::all_of(dst.begin(), dst.begin() + 4096, [](uint8_t x) { return x == 0; }));
}

// A 64-packet WRITE at 10 Gb/s: the responder's region goes while the message is under way;
// its next packet is not placed, the QP fails with NAK remote access error.
TEST(RoceDeregister_Write, RestOfAMessageUnderWayIsRefused) {
  Pair p;
  p.link->set_rate_gbps(10);
  constexpr size_t kBytes = 64 * 4096;
  std::vector<uint8_t> dst(kBytes, 0), src = nonzero_pattern(kBytes, 2);
  const uint32_t key = *p.b->register_memory(dst.data(), dst.size());
  int writes_seen = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 0 && d.bth != nullptr && d.bth->opcode() == RoceOpcode::kRcWriteMiddle &&
        ++writes_seen == 12) {
      EXPECT_TRUE(p.b->deregister_memory(key).ok());
    }
    return Verdict{};
  });
  ASSERT_TRUE(p.a->post_write(write_request(1, kIpB, key, src)).ok());
  p.link->run(2 * kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(p.b->counters().rx_bad_rkey, 1u);
  const size_t placed =
      static_cast<size_t>(std::find(dst.begin(), dst.end(), uint8_t{0}) - dst.begin());
  EXPECT_GE(placed, 4096u);
  EXPECT_LE(placed, 13 * 4096u);
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + static_cast<ptrdiff_t>(placed), dst.begin()));
  EXPECT_TRUE(zero(dst, placed));
}

// A 16-response READ at 10 Gb/s: the region goes after the responder has sent 3 responses;
// the rest are never built from it, and the READ completes kRemoteAccessError.
TEST(RoceDeregister_Read, ResponsesStillToComeStop) {
  Pair p;
  p.link->set_rate_gbps(10);
  std::vector<uint8_t> remote = nonzero_pattern(16 * 4096, 3), local(16 * 4096, 0);
  const uint32_t key = *p.b->register_memory(remote.data(), remote.size());
  int responses = 0;
  p.link->set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 1 && d.bth != nullptr && d.bth->opcode() >= RoceOpcode::kRcReadResponseFirst &&
        d.bth->opcode() <= RoceOpcode::kRcReadResponseOnly && ++responses == 3) {
      EXPECT_TRUE(p.b->deregister_memory(key).ok());
    }
    return Verdict{};
  });
  ReadRequest rr{
      .wr_id = 9, .peer = kIpB, .rkey = key, .local = local.data(), .length = local.size()};
  ASSERT_TRUE(p.a->post_read(rr).ok());
  p.link->run(2 * kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(responses, 3);  // Expect: no response after the deregistration
  EXPECT_EQ(p.b->counters().rx_bad_rkey, 1u);
  EXPECT_TRUE(std::equal(remote.begin(), remote.begin() + 3 * 4096, local.begin()));
  EXPECT_TRUE(zero(local, 3 * 4096));
}

TEST(RoceDeregister_Requester, RegionInUseByAWrIsRefusedUntilCompletion) {
  Pair p;
  std::vector<uint8_t> dst(4096, 0), src = nonzero_pattern(4096, 4);
  const uint32_t far = *p.b->register_memory(dst.data(), dst.size());
  const uint32_t mine = *p.a->register_memory(src.data(), src.size());
  ASSERT_TRUE(p.a->post_write(write_request(1, kIpB, far, src)).ok());
  const absl::Status busy = p.a->deregister_memory(mine);
  EXPECT_TRUE(absl::IsFailedPrecondition(busy)) << busy;
  EXPECT_NE(busy.message().find("1 work request"), std::string::npos) << busy;
  p.link->run(kSecond);
  ASSERT_EQ(drain(*p.a).size(), 1u);
  EXPECT_TRUE(p.a->deregister_memory(mine).ok());
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
}

// One slot through 300 generations (64 other slots freed first, so each registration takes
// the oldest free slot): 256 distinct R_Keys, then they come round; the key before the
// current one refused on the wire, the current one placed.
TEST(RoceDeregister_Generations, WrapAfter256StaysRefusingThePreviousKey) {
  Pair p;
  std::vector<uint8_t> dst(4096, 0), src = nonzero_pattern(64, 5);
  std::vector<uint32_t> filler;
  for (int i = 0; i < 65; ++i) filler.push_back(*p.b->register_memory(dst.data(), dst.size()));
  for (const uint32_t k : filler) ASSERT_TRUE(p.b->deregister_memory(k).ok());
  std::vector<uint32_t> keys;
  for (int i = 0; i < 65 * 300; ++i) {
    const uint32_t k = *p.b->register_memory(dst.data(), dst.size());
    if ((k & 0xFFFFFF) == 1) keys.push_back(k);
    if (keys.size() < 300 || (k & 0xFFFFFF) != 1) {
      ASSERT_TRUE(p.b->deregister_memory(k).ok());
    }
  }
  ASSERT_EQ(keys.size(), 300u);
  std::vector<uint32_t> first(keys.begin(), keys.begin() + 256);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(std::unique(first.begin(), first.end()), first.end());
  EXPECT_EQ(keys[255], filler[0]);
  EXPECT_EQ(keys[256], keys[0]);
  ASSERT_TRUE(p.a->post_write(write_request(1, kIpB, keys[299], src)).ok());
  p.link->run(kSecond);
  ASSERT_TRUE(p.a->post_write(write_request(2, kIpB, keys[298], src)).ok());
  p.link->run(2 * kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  EXPECT_EQ(c[1].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(p.b->counters().rx_bad_rkey, 1u);
  EXPECT_LE(p.b->footprint(), RoceEndpoint::footprint_bound(config_for(kIpB), 66));
}

}  // namespace
}  // namespace uet
