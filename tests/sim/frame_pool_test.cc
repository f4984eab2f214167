// FramePool: the Frame an engine is handed is built from the frame's slot and its bytes in
// place; store() keeps what it wrote; a frame comes out of alloc() empty.
#include "sim/frame_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace uet::sim {
namespace {

// A frame written through its view (bytes, lengths, priority) and stored: a later view has
// the same lengths, priority and bytes, at the same address. Expect: what was stored.
TEST(FramePool_View, StoreKeepsLengthsPriorityAndBytes) {
  FramePool pool(128);
  const FrameId id = pool.alloc();
  Frame f = pool.view(id);
  ASSERT_EQ(f.capacity, 128u);
  std::memset(f.data, 0xAB, 100);
  f.len = 100;
  f.wire_len = 4200;
  f.priority = Priority::kControl;
  pool.store(id, f);
  const Frame g = pool.view(id);
  EXPECT_EQ(g.data, f.data);
  EXPECT_EQ(g.len, 100u);
  EXPECT_EQ(g.wire_len, 4200u);
  EXPECT_EQ(g.priority, Priority::kControl);
  EXPECT_EQ(g.ref_len, 0u);
  EXPECT_EQ(g.data[99], 0xAB);
  EXPECT_EQ(pool.len(id), 100u);
  EXPECT_EQ(pool.bytes_on_wire(id), 4200u);
  EXPECT_EQ(pool.priority(id), Priority::kControl);
}

// Frames released and allocated again, across the pool's growth (more than a slab of 1024
// frames, so the slots are remapped): each comes out empty, with its own bytes. Expect: len
// and wire_len 0, priority kData, distinct addresses, in_use() the frames held.
TEST(FramePool_View, AllocReturnsAnEmptyFrameAfterReuseAndGrowth) {
  FramePool pool(64);
  std::vector<FrameId> ids;
  for (int i = 0; i < 3000; ++i) {
    const FrameId id = pool.alloc();
    const Frame f = pool.view(id);
    ASSERT_EQ(f.len, 0u) << i;
    ASSERT_EQ(f.wire_len, 0u) << i;
    ASSERT_EQ(f.priority, Priority::kData) << i;
    Frame w = f;
    w.len = 64;
    w.wire_len = 9000;
    w.priority = Priority::kControl;
    pool.store(id, w);
    ids.push_back(id);
  }
  EXPECT_EQ(pool.in_use(), 3000u);
  EXPECT_NE(pool.data(ids[0]), pool.data(ids[2999]));
  EXPECT_EQ(pool.len(ids[0]), 64u);  // kept across the remaps
  for (int i = 0; i < 1000; ++i) pool.release(ids[static_cast<size_t>(i)]);
  EXPECT_EQ(pool.in_use(), 2000u);
  for (int i = 0; i < 1000; ++i) {
    const Frame f = pool.view(pool.alloc());
    ASSERT_EQ(f.len, 0u) << i;
    ASSERT_EQ(f.wire_len, 0u) << i;
    ASSERT_EQ(f.priority, Priority::kData) << i;
  }
  EXPECT_EQ(pool.in_use(), 3000u);
  EXPECT_EQ(pool.peak(), 3072u);  // three slabs: the reused frames came from the free list
}

}  // namespace
}  // namespace uet::sim
