// transport/api.h: posted_verb() keeps what both engines carry of each request, and leaves
// the rest at its default (the engines add their own fields; a stale one would go on the wire).
#include "transport/api.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace uet {
namespace {

std::array<uint8_t, 64> buf{};

TEST(PostedVerb_FromRequest, WriteTakesThePayloadAndTheRemoteRegion) {
  const WriteRequest wr{.wr_id = 7, .peer = 9, .rkey = 3, .remote_offset = 4096,
                        .local = buf.data(), .length = 64};
  const PostedVerb v = posted_verb(wr);
  // Expect: a WRITE from `local` to (rkey, remote_offset); no destination, no immediate.
  EXPECT_EQ(v.op, Opcode::kWrite);
  EXPECT_EQ(v.wr_id, 7u);
  EXPECT_EQ(v.rkey, 3u);
  EXPECT_EQ(v.remote_offset, 4096u);
  EXPECT_EQ(v.src, buf.data());
  EXPECT_EQ(v.dst, nullptr);
  EXPECT_EQ(v.length, 64u);
  EXPECT_FALSE(v.has_imm);
  EXPECT_EQ(v.imm, 0u);
}

TEST(PostedVerb_FromRequest, ReadLandsAtLocal) {
  const ReadRequest rr{.wr_id = 8, .peer = 9, .rkey = 5, .remote_offset = 128,
                       .local = buf.data(), .length = 32};
  const PostedVerb v = posted_verb(rr);
  // Expect: a READ of (rkey, remote_offset) into `local`; nothing read from here.
  EXPECT_EQ(v.op, Opcode::kRead);
  EXPECT_EQ(v.wr_id, 8u);
  EXPECT_EQ(v.rkey, 5u);
  EXPECT_EQ(v.remote_offset, 128u);
  EXPECT_EQ(v.src, nullptr);
  EXPECT_EQ(v.dst, buf.data());
  EXPECT_EQ(v.length, 32u);
}

TEST(PostedVerb_FromRequest, SendCarriesItsImmediate) {
  const SendRequest sr{.wr_id = 9, .peer = 9, .local = buf.data(), .length = 16,
                       .has_imm = true, .imm = 0xDEADBEEF};
  const PostedVerb v = posted_verb(sr);
  // Expect: a SEND with 32 bits of immediate; no remote region.
  EXPECT_EQ(v.op, Opcode::kSend);
  EXPECT_EQ(v.src, buf.data());
  EXPECT_EQ(v.length, 16u);
  EXPECT_TRUE(v.has_imm);
  EXPECT_EQ(v.imm, 0xDEADBEEFu);
  EXPECT_EQ(v.rkey, 0u);
  EXPECT_EQ(v.remote_offset, 0u);
}

TEST(PostedVerb_FromRequest, TaggedSendCarriesAll64BitsOfHeaderData) {
  const TaggedSendRequest ts{.wr_id = 10, .peer = 9, .local = buf.data(), .length = 8,
                             .tag = 77, .has_data = true, .data = 0x0123456789ABCDEFull};
  const PostedVerb v = posted_verb(ts);
  // Expect: the header data whole in imm (the tag is UET's to add).
  EXPECT_EQ(v.op, Opcode::kTaggedSend);
  EXPECT_EQ(v.wr_id, 10u);
  EXPECT_TRUE(v.has_imm);
  EXPECT_EQ(v.imm, 0x0123456789ABCDEFull);
  EXPECT_EQ(v.length, 8u);
}

TEST(PostedVerb_FromRequest, AtomicLengthIsItsElementsBytes) {
  std::array<uint8_t, 16> result{};
  const AtomicRequest ar{.wr_id = 11, .peer = 9, .rkey = 2, .remote_offset = 24,
                         .op = AtomicOp::kSum, .type = AtomicType::kUint32, .count = 3,
                         .operand = buf.data(), .result = result.data()};
  const PostedVerb v = posted_verb(ar);
  // Expect: the operands as src, the fetched values as dst, 3 x 4 bytes.
  EXPECT_EQ(v.op, Opcode::kAtomic);
  EXPECT_EQ(v.rkey, 2u);
  EXPECT_EQ(v.remote_offset, 24u);
  EXPECT_EQ(v.src, buf.data());
  EXPECT_EQ(v.dst, result.data());
  EXPECT_EQ(v.length, 12u);
}

}  // namespace
}  // namespace uet
