// FrameBuilder::append_summed() sums the payload while it copies it, so finish() sums only the
// rest: the frames must be byte for byte (UDP checksum included) those built by copying the payload
// into add_bytes(), for every split of headers and payload, odd and even offsets, several
// appends in a row or apart, IPv4, IPv6 and VLAN, and a checksum that checks. reference()
// leaves the payload where it is (zero-copy transmit): gathered, the frame must be the same
// bytes, UDP checksum or ICRC included.
#include "transport/wire/builder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/common/payload.h"
#include "transport/transport.h"
#include "transport/wire/checksum.h"
#include "transport/wire/icrc.h"

namespace uet::wire {
namespace {

Encap encap(bool ipv6, bool vlan) {
  Encap e;
  e.src_mac = {0x02, 0, 0, 0, 0, 1};
  e.dst_mac = {0x02, 0, 0, 0, 0, 2};
  e.vlan = vlan;
  e.ipv6 = ipv6;
  e.src_ip4 = 0x0A000001;
  e.dst_ip4 = 0x0A000002;
  e.src_ip6[15] = 1;
  e.dst_ip6[15] = 2;
  e.sport = 0xC123;
  e.udp_checksum = true;
  return e;
}

// Pieces: (is_payload, length). Payload pieces go through append_summed() or, for the reference,
// add_bytes() + memcpy; header pieces through add_bytes() filled with a pattern.
std::vector<uint8_t> build(const Encap& e, const std::vector<std::pair<bool, size_t>>& pieces,
                           const std::vector<uint8_t>& data, bool use_append) {
  std::vector<uint8_t> buf(12000);
  FrameBuilder b(buf, e);
  size_t used = 0;
  for (const auto& [payload, n] : pieces) {
    if (payload && use_append) {
      EXPECT_TRUE(b.append_summed({data.data() + used, n}));
    } else {
      uint8_t* p = b.add_bytes(n);
      EXPECT_NE(p, nullptr);
      std::memcpy(p, data.data() + used, n);
    }
    used += n;
  }
  size_t len = 0;
  EXPECT_EQ(b.finish(&len), WireError::kOk);
  buf.resize(len);
  return buf;
}

TEST(FrameBuilder_Append, PreSummedPayloadGivesTheSameFrameAsCopying) {
  const std::vector<uint8_t> data = testing::pattern(20000, 7);
  int cases = 0;
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      const Encap e = encap(ipv6, vlan);
      for (size_t head : {0, 1, 12, 13, 44, 45}) {
        for (size_t payload : {1, 2, 3, 127, 128, 129, 4096, 4097, 8999}) {
          for (size_t tail : {0, 1, 4}) {
            // One payload run between headers; then the run in two appends; then two runs
            // apart (only the first is pre-summed).
            const std::vector<std::vector<std::pair<bool, size_t>>> shapes = {
                {{false, head}, {true, payload}, {false, tail}},
                {{false, head},
                 {true, payload / 2 + 1},
                 {true, payload - payload / 2},
                 {false, tail}},
                {{false, head}, {true, payload}, {false, 3}, {true, 5}, {false, tail}}};
            for (const auto& shape : shapes) {
              const auto a = build(e, shape, data, true), b = build(e, shape, data, false);
              ASSERT_EQ(a, b) << "ipv6 " << ipv6 << " vlan " << vlan << " head " << head
                              << " payload " << payload << " tail " << tail;
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 2 * 2 * 6 * 9 * 3 * 3);
}

TEST(FrameBuilder_Append, ChecksumOfAPreSummedFrameVerifies) {
  std::vector<uint8_t> data(5000, 0xA5);
  const Encap e = encap(false, false);
  const auto f = build(e, {{false, 13}, {true, 4097}}, data, true);
  // Expect: the UDP checksum over pseudo-header + datagram folds to 0xFFFF (RFC 768).
  const size_t udp = 14 + 20;
  uint64_t sum = csum_add(0, f.data() + 26, 8);  // source and destination addresses
  sum += 17 + (f.size() - udp);
  sum = csum_add(sum, f.data() + udp, f.size() - udp);
  EXPECT_EQ(csum_finish(sum), 0);
}

TEST(FrameBuilder_Append, ForgottenSumIsComputedAgainFromTheBytes) {
  std::vector<uint8_t> data(600, 0x11);
  std::vector<uint8_t> buf(2000);
  FrameBuilder b(buf, encap(false, false));
  ASSERT_TRUE(b.append_summed(data));
  buf[42 + 10] ^= 0xFF;  // the payload changed in place (as sealing does)
  b.forget_payload_sum();
  size_t len = 0;
  ASSERT_EQ(b.finish(&len), WireError::kOk);
  std::vector<uint8_t> changed = data;
  changed[10] ^= 0xFF;
  std::vector<uint8_t> ref(2000);
  FrameBuilder r(ref, encap(false, false));
  std::memcpy(r.add_bytes(600), changed.data(), 600);
  size_t rlen = 0;
  ASSERT_EQ(r.finish(&rlen), WireError::kOk);
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + len, ref.begin()));
}

// The frame `b` finished in `buf` (`len` bytes), with the payload it references.
Frame built_frame(std::vector<uint8_t>& buf, size_t len, const FrameBuilder& b) {
  Frame f;
  f.data = buf.data();
  f.capacity = static_cast<uint32_t>(buf.size());
  f.len = static_cast<uint32_t>(len);
  f.ref = b.referenced();
  f.ref_len = static_cast<uint32_t>(b.referenced_len());
  f.ref_at = static_cast<uint32_t>(b.referenced_at());
  return f;
}

// Headers, one payload run referenced (or copied, for the reference frame), then `tail`
// bytes; the referenced frame gathered with flatten().
std::vector<uint8_t> build_referenced(const Encap& e, size_t head, size_t payload, size_t tail,
                                      const std::vector<uint8_t>& data, bool by_reference) {
  std::vector<uint8_t> buf(12000);
  FrameBuilder b(buf, e);
  std::memcpy(b.add_bytes(head), data.data(), head);
  if (by_reference) {
    EXPECT_TRUE(b.reference({data.data() + head, payload}));
    EXPECT_FALSE(b.reference({data.data(), 1}));  // one referenced run per frame
  } else {
    std::memcpy(b.add_bytes(payload), data.data() + head, payload);
  }
  std::memcpy(b.add_bytes(tail), data.data() + head + payload, tail);
  size_t len = 0;
  EXPECT_EQ(b.finish(&len), WireError::kOk);
  Frame f = built_frame(buf, len, b);
  EXPECT_EQ(f.bytes_on_wire(), by_reference ? len + payload : len);
  EXPECT_TRUE(flatten(f));
  EXPECT_EQ(f.ref_len, 0u);
  buf.resize(f.len);
  return buf;
}

TEST(FrameBuilder_Reference, GatheredFrameIsTheCopiedFrame) {
  const std::vector<uint8_t> data = testing::pattern(20000, 8);
  int cases = 0;
  for (bool icrc : {false, true}) {
    for (bool ipv6 : {false, true}) {
      for (bool ip_only : {false, true}) {
        Encap e = encap(ipv6, false);
        e.ip_only = ip_only && !icrc;
        e.ip_proto = 253;
        e.icrc = icrc;
        e.udp_checksum = !icrc;
        for (size_t head : {12, 13, 44}) {
          for (size_t payload : {1, 2, 3, 128, 4096, 4097}) {
            for (size_t tail : {0, 1, 3}) {
              const auto a = build_referenced(e, head, payload, tail, data, true);
              const auto b = build_referenced(e, head, payload, tail, data, false);
              ASSERT_EQ(a, b) << "icrc " << icrc << " ipv6 " << ipv6 << " ip_only " << ip_only
                              << " head " << head << " payload " << payload << " tail " << tail;
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 2 * 2 * 2 * 3 * 6 * 3);
}

// A frame whose buffer cannot take its referenced payload is not gathered.
TEST(FrameBuilder_Reference, FlattenRefusesAFrameTooSmallForItsPayload) {
  std::vector<uint8_t> payload(100, 7), buf(120);
  FrameBuilder b(buf, encap(false, false));
  ASSERT_NE(b.add_bytes(12), nullptr);
  ASSERT_TRUE(b.reference(payload));
  size_t len = 0;
  ASSERT_EQ(b.finish(&len), WireError::kOk);
  Frame f = built_frame(buf, len, b);
  EXPECT_FALSE(flatten(f));
  EXPECT_EQ(f.ref_len, 100u);  // untouched
}

}  // namespace
}  // namespace uet::wire
