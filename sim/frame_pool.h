// Frames for the simulator: fixed-capacity buffers in slabs, handed out by index.
//
// A frame carries real bytes: the full frame when `capacity` fits the MTU (integrity tests,
// pcap taps), or just the headers with the payload carried by length (Frame::wire_len) when
// a large fabric is simulated with a small capacity. Ids are indices. A slab is one
// allocation holding kSlabFrames Frames, then the owner's metadata for each (`meta_size`
// bytes a frame, e.g. what switches read from the headers), then their bytes; the pool grows a
// slab at a time and never moves one, so its memory follows the peak of frames in flight
// with no copy and no transient doubling, and a reference to a frame stays valid while the
// pool grows. The free list is a stack threaded through the free frames' `len`, so
// allocation is O(1), needs no side array and never touches the heap once the pool has grown
// to the run's peak. Owned by the Network; single-threaded.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "transport/transport.h"

namespace uet::sim {

using FrameId = uint32_t;
inline constexpr FrameId kNoFrame = UINT32_MAX;

class FramePool {
 public:
  // `meta_init`: `meta_size` bytes every frame's metadata holds when its slab is made.
  explicit FramePool(uint32_t capacity, uint32_t meta_size = 0, const void* meta_init = nullptr)
      : capacity_(capacity), meta_size_(meta_size) {
    if (meta_size != 0) {
      const auto* m = static_cast<const uint8_t*>(meta_init);
      meta_init_.assign(m, m + meta_size);
    }
  }

  uint32_t capacity() const noexcept { return capacity_; }
  size_t in_use() const noexcept { return peak() - free_count_; }
  size_t peak() const noexcept { return slabs_.size() * kSlabFrames; }

  FrameId alloc() {
    if (free_head_ == kNoFrame) grow();
    const FrameId id = free_head_;
    Frame& f = (*this)[id];
    free_head_ = f.len;
    --free_count_;
    f.len = 0;
    f.wire_len = 0;
    f.priority = Priority::kData;
    return id;
  }
  void release(FrameId id) noexcept {
    (*this)[id].len = free_head_;
    free_head_ = id;
    ++free_count_;
  }

  Frame& operator[](FrameId id) noexcept { return slab_frames(id)[id % kSlabFrames]; }
  const Frame& operator[](FrameId id) const noexcept { return slab_frames(id)[id % kSlabFrames]; }
  // Frame `id`'s metadata (meta_size bytes; the owner casts them to its type).
  uint8_t* meta(FrameId id) noexcept { return meta_at(id); }
  const uint8_t* meta(FrameId id) const noexcept { return meta_at(id); }
  // Where frame `id`'s Frame, metadata and bytes live, computed without reading the Frame
  // (for prefetching). Null for an id the pool has not grown to.
  const Frame* frame_hint(FrameId id) const noexcept {
    return id < peak() ? &(*this)[id] : nullptr;
  }
  const uint8_t* meta_hint(FrameId id) const noexcept {
    return id < peak() ? meta_at(id) : nullptr;
  }
  const uint8_t* data_hint(FrameId id) const noexcept {
    return id < peak() ? data_at(id) : nullptr;
  }
  // The frame alloc() would return now (kNoFrame if the pool must grow first).
  FrameId next_hint() const noexcept { return free_head_; }

 private:
  static constexpr uint32_t kSlabFrames = 1024;
  static constexpr size_t kFramesBytes = size_t{kSlabFrames} * sizeof(Frame);

  Frame* slab_frames(FrameId id) const noexcept {
    return std::launder(reinterpret_cast<Frame*>(slabs_[id / kSlabFrames].get()));
  }
  uint8_t* meta_at(FrameId id) const noexcept {
    return slabs_[id / kSlabFrames].get() + kFramesBytes + size_t{id % kSlabFrames} * meta_size_;
  }
  uint8_t* data_at(FrameId id) const noexcept {
    return slabs_[id / kSlabFrames].get() + kFramesBytes + size_t{kSlabFrames} * meta_size_ +
           size_t{id % kSlabFrames} * capacity_;
  }

  // A new slab's frames go on the free list lowest id first (the list is empty when it grows).
  void grow() {
    const auto first = static_cast<FrameId>(peak());
    const size_t bytes = kFramesBytes + size_t{kSlabFrames} * (meta_size_ + capacity_);
    slabs_.push_back(std::unique_ptr<uint8_t[]>(new uint8_t[bytes]()));
    for (uint32_t i = kSlabFrames; i-- > 0;) {
      Frame* f = new (slabs_.back().get() + size_t{i} * sizeof(Frame)) Frame;
      f->data = data_at(first + i);
      f->capacity = capacity_;
      if (meta_size_ != 0) std::memcpy(meta_at(first + i), meta_init_.data(), meta_size_);
      f->len = free_head_;
      free_head_ = first + i;
    }
    free_count_ += kSlabFrames;
  }

  uint32_t capacity_;
  uint32_t meta_size_;
  std::vector<uint8_t> meta_init_;
  std::vector<std::unique_ptr<uint8_t[]>> slabs_;
  FrameId free_head_ = kNoFrame;
  size_t free_count_ = 0;
};

}  // namespace uet::sim
