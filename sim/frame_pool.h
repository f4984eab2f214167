// Frames for the simulator: fixed-capacity buffers in slabs, handed out by index.
//
// A frame carries real bytes: the full frame when `capacity` fits the MTU (integrity tests,
// pcap taps), or just the headers with the payload carried by length (Frame::wire_len) when
// a large fabric is simulated with a small capacity. Ids are indices; the free list is a
// stack, so allocation is O(1) and never touches the heap once the pool has grown to the
// run's peak. Owned by the Network; single-threaded.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/transport.h"

namespace uet::sim {

using FrameId = uint32_t;
inline constexpr FrameId kNoFrame = UINT32_MAX;

class FramePool {
 public:
  explicit FramePool(uint32_t capacity) : capacity_(capacity) {}

  uint32_t capacity() const noexcept { return capacity_; }
  size_t in_use() const noexcept { return frames_.size() - free_.size(); }
  size_t peak() const noexcept { return frames_.size(); }

  FrameId alloc() {
    if (free_.empty()) grow();
    const FrameId id = free_.back();
    free_.pop_back();
    Frame& f = frames_[id];
    f.len = 0;
    f.wire_len = 0;
    f.priority = Priority::kData;
    return id;
  }
  void release(FrameId id) noexcept { free_.push_back(id); }

  Frame& operator[](FrameId id) noexcept { return frames_[id]; }
  const Frame& operator[](FrameId id) const noexcept { return frames_[id]; }
  // Where frame `id`'s Frame and its bytes live, computed without reading the Frame (for
  // prefetching: a slab's frames are consecutive). Null for an id the pool has not grown to.
  const Frame* frame_hint(FrameId id) const noexcept {
    return id < frames_.size() ? frames_.data() + id : nullptr;
  }
  // The frame alloc() would return now (kNoFrame if the pool must grow first).
  FrameId next_hint() const noexcept { return free_.empty() ? kNoFrame : free_.back(); }
  const uint8_t* data_hint(FrameId id) const noexcept {
    return id < frames_.size() ? slabs_[id / kSlabFrames].get() + size_t{id % kSlabFrames} * capacity_
                               : nullptr;
  }

 private:
  static constexpr uint32_t kSlabFrames = 1024;
  void grow() {
    slabs_.push_back(std::make_unique<uint8_t[]>(size_t{kSlabFrames} * capacity_));
    uint8_t* base = slabs_.back().get();
    const auto first = static_cast<FrameId>(frames_.size());
    frames_.resize(frames_.size() + kSlabFrames);
    free_.reserve(frames_.size());
    for (uint32_t i = kSlabFrames; i-- > 0;) {
      Frame& f = frames_[first + i];
      f.data = base + size_t{i} * capacity_;
      f.capacity = capacity_;
      free_.push_back(first + i);
    }
  }

  uint32_t capacity_;
  std::vector<std::unique_ptr<uint8_t[]>> slabs_;
  std::vector<Frame> frames_;
  std::vector<FrameId> free_;
};

}  // namespace uet::sim
