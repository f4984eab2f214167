// stream_copy() writes exactly what memcpy would, at every destination alignment and at the
// lengths around its 16- and 64-byte steps, and nothing outside [dst, dst + len).
#include "transport/wire/stream_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace uet::wire {
namespace {

TEST(StreamCopy, WritesExactlyTheBytesMemcpyWould) {
  std::mt19937 rng(21);
  std::vector<uint8_t> src(10000);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  int cases = 0;
  for (size_t at = 0; at < 32; ++at) {
    for (size_t len : {0, 1, 15, 16, 17, 63, 64, 65, 127, 4096, 4097, 9000}) {
      std::vector<uint8_t> dst(len + 96, 0xEE);
      stream_copy(dst.data() + at, src.data() + 3, len);
      stream_fence();
      for (size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= at && i < at + len;
        ASSERT_EQ(dst[i], inside ? src[3 + i - at] : 0xEE) << "at " << at << " len " << len
                                                           << " byte " << i;
      }
      ++cases;
    }
  }
  EXPECT_EQ(cases, 32 * 12);
}

}  // namespace
}  // namespace uet::wire
