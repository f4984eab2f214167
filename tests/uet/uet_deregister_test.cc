// deregister_memory in the UET engine (transport/api.h, transport/region_table.h), on the
// fake link: a deregistered region's key is refused BAD_MKEY (spec/uet.md §4.9) at the target
// and completes kRemoteAccessError at the initiator, for whole messages, for the rest of a
// message under way and for READ answers queued; its memory is never touched again; the
// initiator's own operations keep a region registered until they complete.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

using testing::drain;
using testing::FakeLink;
using testing::nonzero_pattern;
using testing::pattern;
using testing::Verdict;
using testing::write_request;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

UetConfig config_for(uint32_t ip) {
  UetConfig c = testing::host_config<UetConfig>(ip);
  c.seed = 5;
  return c;
}

struct Pair {
  Pair()
      : a(std::move(*UetEndpoint::create(config_for(kIpA)))),
        b(std::move(*UetEndpoint::create(config_for(kIpB)))),
        link(a.get(), b.get()) {}
  std::unique_ptr<UetEndpoint> a, b;
  FakeLink link;
};

bool is_write(const wire::Decoded& d) {
  const auto* ses = d.ses_as<wire::SesStandardRequest>();
  return ses != nullptr && ses->opcode() == wire::SesOpcode::kWrite;
}

TEST(UetDeregister_Write, OldKeyRefusedBadMkeyAndMemoryUntouched) {
  Pair p;
  std::vector<uint8_t> dst(8192, 0), src = pattern(4096, 1);
  const uint32_t key = *p.b->register_memory(dst.data(), dst.size());
  EXPECT_EQ(key, 1u);  // a first registration's key, as before deregistration existed
  ASSERT_TRUE(p.a->post_write(write_request(1, kIpB, key, src)).ok());
  p.link.run(kSecond);
  auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess);
  ASSERT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));

  ASSERT_TRUE(p.b->deregister_memory(key).ok());
  std::fill(dst.begin(), dst.end(), 0);
  ASSERT_TRUE(p.a->post_write(write_request(2, kIpB, key, src, 4096)).ok());
  p.link.run(2 * kSecond);
  c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  // Expect: the initiator's error completion carries BAD_MKEY; the target counts the key.
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(c[0].return_code, static_cast<uint8_t>(wire::SesReturnCode::kBadMkey));
  EXPECT_EQ(p.b->counters().rx_bad_key, 1u);
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](uint8_t x) { return x == 0; }));
  // Expect: a second deregistration is NotFound; a new registration another key, the old
  // one still refused.
  EXPECT_TRUE(absl::IsNotFound(p.b->deregister_memory(key)));
  const uint32_t again = *p.b->register_memory(dst.data(), dst.size());
  EXPECT_NE(again, key);
  ASSERT_TRUE(p.a->post_write(write_request(3, kIpB, key, src)).ok());
  ASSERT_TRUE(p.a->post_write(write_request(4, kIpB, again, src, 4096)).ok());
  p.link.run(3 * kSecond);
  c = drain(*p.a);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].wr_id, 3u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
  EXPECT_EQ(p.b->counters().rx_bad_key, 2u);
  EXPECT_TRUE(std::all_of(dst.begin(), dst.begin() + 4096, [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 4096));
}

// A 64-packet WRITE at 10 Gb/s: the target's region goes after its 10th packet is placed.
TEST(UetDeregister_Write, RestOfAMessageUnderWayIsRefused) {
  Pair p;
  p.link.set_rate_gbps(10);
  constexpr size_t kBytes = 64 * 4096;
  std::vector<uint8_t> dst(kBytes, 0), src = nonzero_pattern(kBytes, 2);
  const uint32_t key = *p.b->register_memory(dst.data(), dst.size());
  int writes_seen = 0;
  p.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    // Frames reach B in the order they are sent: when the 12th leaves A, 10 have arrived
    // at the latest (two frame times at least between).
    if (from == 0 && is_write(d) && ++writes_seen == 12) {
      EXPECT_TRUE(p.b->deregister_memory(key).ok());
    }
    return Verdict{};
  });
  ASSERT_TRUE(p.a->post_write(write_request(1, kIpB, key, src)).ok());
  p.link.run(2 * kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(c[0].return_code, static_cast<uint8_t>(wire::SesReturnCode::kBadMkey));
  // Expect: what arrived before is placed; nothing from the deregistration on.
  const size_t placed = static_cast<size_t>(
      std::find_if(dst.begin(), dst.end(), [](uint8_t x) { return x == 0; }) - dst.begin());
  EXPECT_GE(placed, 4096u);
  EXPECT_LE(placed, 12 * 4096u);
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + static_cast<ptrdiff_t>(placed), dst.begin()));
  EXPECT_TRUE(std::all_of(dst.begin() + static_cast<ptrdiff_t>(placed), dst.end(),
                          [](uint8_t x) { return x == 0; }));
  EXPECT_GE(p.b->counters().rx_bad_key, 1u);
}

// A READ answered once, its answer lost, the region deregistered: the READ sent again is
// refused, not answered from the region.
TEST(UetDeregister_Read, ReadAgainAfterDeregistrationIsRefused) {
  Pair p;
  std::vector<uint8_t> remote = pattern(4096, 3), local(4096, 0);
  const uint32_t key = *p.b->register_memory(remote.data(), remote.size());
  bool done = false;
  p.link.set_filter([&](int from, const wire::Decoded&, std::vector<uint8_t>&) {
    // B's first frame is the READ's answer being built: it is dropped, and the region goes
    // before the READ comes again.
    if (from == 1 && !done) {
      done = true;
      EXPECT_TRUE(p.b->deregister_memory(key).ok());
      return Verdict{.copies = 0};
    }
    return Verdict{};
  });
  ReadRequest rr{.wr_id = 7, .peer = kIpB, .rkey = key, .local = local.data(), .length = 4096};
  ASSERT_TRUE(p.a->post_read(rr).ok());
  p.link.run(2 * kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_TRUE(std::all_of(local.begin(), local.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_GE(p.b->counters().rx_bad_key, 1u);
}

// A READ's answer is queued when the READ arrives and reads the region when its ACK is built:
// deregistered in between, the answer goes as BAD_MKEY, never as the region's bytes.
TEST(UetDeregister_Read, QueuedAnswerTurnsIntoRefusal) {
  Pair p;
  std::vector<uint8_t> remote = pattern(4096, 3), local(4096, 0);
  const uint32_t key = *p.b->register_memory(remote.data(), remote.size());
  // B gets the READ and queues its answer; the region goes before B's next tx().
  ReadRequest rr{.wr_id = 7, .peer = kIpB, .rkey = key, .local = local.data(), .length = 4096};
  ASSERT_TRUE(p.a->post_read(rr).ok());
  std::vector<uint8_t> buf(9216);
  Frame f{buf.data(), 0, 0, static_cast<uint32_t>(buf.size())};
  Frame* fp = &f;
  ASSERT_EQ(p.a->tx(std::span<Frame* const>(&fp, 1), 0), 1u);
  std::vector<uint8_t> req(buf.begin(), buf.begin() + f.len);
  Frame in{req.data(), static_cast<uint32_t>(req.size()), 0, static_cast<uint32_t>(req.size())};
  Frame* inp = &in;
  p.b->rx(std::span<Frame* const>(&inp, 1), kMicrosecond);
  ASSERT_TRUE(p.b->deregister_memory(key).ok());
  EXPECT_EQ(p.b->counters().rx_bad_key, 1u);
  // Expect: the ACK B builds now carries the refusal, no data; A completes in error.
  Frame out{buf.data(), 0, 0, static_cast<uint32_t>(buf.size())};
  Frame* outp = &out;
  ASSERT_EQ(p.b->tx(std::span<Frame* const>(&outp, 1), 2 * kMicrosecond), 1u);
  wire::Decoded d;
  std::vector<uint8_t> ack(buf.begin(), buf.begin() + out.len);
  ASSERT_EQ(wire::decode_frame(ack, &d), wire::WireError::kOk);
  EXPECT_EQ(d.ses_as<wire::SesResponseData>(), nullptr);
  const auto* rsp = d.ses_as<wire::SesResponse>();
  ASSERT_NE(rsp, nullptr);
  EXPECT_EQ(rsp->return_code(), wire::SesReturnCode::kBadMkey);
  Frame back{ack.data(), static_cast<uint32_t>(ack.size()), 0, static_cast<uint32_t>(ack.size())};
  Frame* backp = &back;
  p.a->rx(std::span<Frame* const>(&backp, 1), 3 * kMicrosecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError);
  EXPECT_EQ(c[0].return_code, static_cast<uint8_t>(wire::SesReturnCode::kBadMkey));
}

// The initiator's own operations: a region whose memory a posted WRITE still sends from (or
// a READ lands in) is not deregistered until the operation completes.
TEST(UetDeregister_Initiator, RegionInUseBySourceIsRefusedUntilCompletion) {
  Pair p;
  std::vector<uint8_t> dst(4096, 0), src = pattern(4096, 4), rdst(4096, 0);
  const uint32_t far = *p.b->register_memory(dst.data(), dst.size());
  const uint32_t mine = *p.a->register_memory(src.data(), src.size());
  const uint32_t landing = *p.a->register_memory(rdst.data(), rdst.size());
  ASSERT_TRUE(p.a->post_write(write_request(1, kIpB, far, src)).ok());
  ReadRequest rr{.wr_id = 2, .peer = kIpB, .rkey = far, .local = rdst.data() + 100, .length = 10};
  ASSERT_TRUE(p.a->post_read(rr).ok());
  const absl::Status busy = p.a->deregister_memory(mine);
  EXPECT_TRUE(absl::IsFailedPrecondition(busy)) << busy;
  EXPECT_NE(busy.message().find("1 operation"), std::string::npos) << busy;
  EXPECT_TRUE(absl::IsFailedPrecondition(p.a->deregister_memory(landing)));
  p.link.run(kSecond);
  ASSERT_EQ(drain(*p.a).size(), 2u);
  // Expect: once completed, both go; the region was usable all along.
  EXPECT_TRUE(p.a->deregister_memory(mine).ok());
  EXPECT_TRUE(p.a->deregister_memory(landing).ok());
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
}

// One slot registered and deregistered 300 times (64 other slots freed first, so each
// registration takes the oldest): 256 distinct keys, then they come round again; a key of
// the previous generation is refused at every step, and the table stays 65 slots.
TEST(UetDeregister_Generations, WrapAfter256StaysRefusingThePreviousKey) {
  Pair p;
  std::vector<uint8_t> dst(4096, 0), src = pattern(64, 5);
  std::vector<uint32_t> filler;
  for (int i = 0; i < 65; ++i) filler.push_back(*p.b->register_memory(dst.data(), dst.size()));
  for (const uint32_t k : filler) ASSERT_TRUE(p.b->deregister_memory(k).ok());
  std::vector<uint32_t> keys;  // slot 0's
  uint32_t previous = filler[0];
  for (int i = 0; i < 65 * 300; ++i) {
    const uint32_t k = *p.b->register_memory(dst.data(), dst.size());
    if ((k & 0xFFFF) == 1) {
      keys.push_back(k);
      if (keys.size() % 50 == 0) {  // now and then over the wire: old refused, new placed
        ASSERT_TRUE(p.a->post_write(write_request(1, kIpB, previous, src)).ok());
        ASSERT_TRUE(p.a->post_write(write_request(2, kIpB, k, src)).ok());
        p.link.run(p.link.now() + kSecond);
        const auto c = drain(*p.a);
        ASSERT_EQ(c.size(), 2u);
        EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError) << std::hex << previous;
        EXPECT_EQ(c[1].status, OpStatus::kSuccess) << std::hex << k;
      }
      previous = k;
    }
    ASSERT_TRUE(p.b->deregister_memory(k).ok());
  }
  ASSERT_EQ(keys.size(), 300u);
  std::vector<uint32_t> first(keys.begin(), keys.begin() + 256);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(std::unique(first.begin(), first.end()), first.end());  // 256 distinct keys
  EXPECT_EQ(keys[255], filler[0]);                                  // generation 0 again
  EXPECT_EQ(keys[256], keys[0]);
  // Keys stay clear of rendezvous keys (bit 31) and within 24 bits.
  for (const uint32_t k : keys) EXPECT_LT(k, 1u << 24);
  EXPECT_LE(p.b->memory_bytes(), UetEndpoint::memory_bound(config_for(kIpB), 66));
}

}  // namespace
}  // namespace uet
