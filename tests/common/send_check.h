// The SEND scenario both engines' tests run: messages of several sizes into receive buffers
// posted in order (an SRQ), half of them with immediate data, checked the same way on each.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tests/common/payload.h"
#include "transport/api.h"

namespace uet::testing {

// Message i: `sizes[i]` bytes of pattern(sizes[i], i + 10), with immediate data
// 0xABC00000 + i when i is even; receive buffer i: 64 KiB of 0xEE posted as wr_id 100 + i.
struct SendsIntoPostedBuffers {
  explicit SendsIntoPostedBuffers(std::vector<size_t> s) : sizes(std::move(s)) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      msgs.push_back(pattern(sizes[i], static_cast<uint32_t>(i + 10)));
      bufs.emplace_back(65536, 0xEE);
    }
  }

  // Posts the buffers at `to`, then SEND i (wr_id i) from `from` to `peer`.
  void post(Endpoint& from, uint32_t peer, Endpoint& to) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      ASSERT_TRUE(to.post_recv({100 + i, bufs[i].data(), bufs[i].size()}).ok());
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      SendRequest s;
      s.wr_id = i;
      s.peer = peer;
      s.local = msgs[i].empty() ? nullptr : msgs[i].data();
      s.length = msgs[i].size();
      s.has_imm = i % 2 == 0;
      s.imm = 0xABC00000u + static_cast<uint32_t>(i);
      ASSERT_TRUE(from.post_send(s).ok());
    }
  }

  // Expect: the sender's completions `sc` are the SENDs in order, whole; the receiver's `rc`
  // follow buffer posting order, from `from_ip`, with the immediate data, each message whole
  // in its buffer and nothing written past it.
  void expect_landed(const std::vector<Completion>& sc, const std::vector<Completion>& rc,
                     uint32_t from_ip) const {
    ASSERT_EQ(sc.size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_EQ(sc[i].wr_id, i);
      EXPECT_EQ(sc[i].op, Opcode::kSend);
      EXPECT_EQ(sc[i].status, OpStatus::kSuccess);
      EXPECT_EQ(sc[i].bytes, sizes[i]);
    }
    ASSERT_EQ(rc.size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_EQ(rc[i].wr_id, 100 + i) << "receive completions follow buffer posting order";
      EXPECT_EQ(rc[i].op, Opcode::kRecv);
      EXPECT_EQ(rc[i].status, OpStatus::kSuccess);
      EXPECT_EQ(rc[i].bytes, sizes[i]);
      EXPECT_EQ(rc[i].peer, from_ip);
      EXPECT_EQ(rc[i].has_imm, i % 2 == 0);
      if (rc[i].has_imm) {
        EXPECT_EQ(rc[i].imm, 0xABC00000u + i);
      }
      EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[i].begin())) << "message " << i;
      EXPECT_EQ(bufs[i][sizes[i]], 0xEE) << "nothing written past the message";
    }
  }

  std::vector<size_t> sizes;
  std::vector<std::vector<uint8_t>> msgs, bufs;
};

}  // namespace uet::testing
