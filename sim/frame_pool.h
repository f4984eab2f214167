// Frames for the simulator: fixed-capacity buffers in slabs, handed out by index.
//
// A frame carries real bytes: the full frame when `capacity` fits the MTU (integrity tests,
// pcap taps), or just the headers with the payload carried by length (Frame::wire_len) when
// a large fabric is simulated with a small capacity. Ids are indices. Frames and the owner's
// metadata for each (kMetaBytes, e.g. what switches read from the headers) are arrays indexed
// by id, grown by remapping pages (PageArea), so the per-hop code reaches them as it would a
// vector's, and the pool's memory follows the peak of frames in flight with no copy and no
// transient second copy; the frames' bytes are in slabs of kSlabFrames that never move. The
// free list is a stack threaded through the free frames' `len`, so
// allocation is O(1), needs no side array and never touches the heap once the pool has grown
// to the run's peak. Owned by the Network; single-threaded.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "transport/transport.h"

namespace uet::sim {

using FrameId = uint32_t;
inline constexpr FrameId kNoFrame = UINT32_MAX;

// Anonymous memory that grows by remapping its pages (mremap): the contents keep their
// pages, so growing copies nothing and never holds two copies at once (as a vector's growth
// does); the address may change. Its size doubles, but only pages written become resident.
class PageArea {
 public:
  PageArea() = default;
  PageArea(const PageArea&) = delete;
  PageArea& operator=(const PageArea&) = delete;
  ~PageArea() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  uint8_t* data() const noexcept { return static_cast<uint8_t*>(base_); }
  // Room for at least `bytes` (zero-filled beyond what was there).
  void reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    constexpr size_t kPage = 4096;
    const size_t n = (std::max(bytes, 2 * bytes_) + kPage - 1) / kPage * kPage;
    void* p = base_ == nullptr
                  ? mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                  : mremap(base_, bytes_, n, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base_ = p;
    bytes_ = n;
  }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

class FramePool {
 public:
  static constexpr uint32_t kMetaBytes = 16;  // the owner's metadata per frame
  // `meta_init`: the kMetaBytes every new frame's metadata holds (null: zeros).
  explicit FramePool(uint32_t capacity, const void* meta_init = nullptr) : capacity_(capacity) {
    if (meta_init != nullptr) std::memcpy(meta_init_, meta_init, kMetaBytes);
  }

  uint32_t capacity() const noexcept { return capacity_; }
  // Frames allocated and not released (walks the free list: for reports, not per frame).
  size_t in_use() const noexcept {
    size_t free = 0;
    for (FrameId id = free_head_; id != kNoFrame; id = (*this)[id].len) ++free;
    return peak_ - free;
  }
  size_t peak() const noexcept { return peak_; }

  FrameId alloc() {
    if (free_head_ == kNoFrame) grow();
    const FrameId id = free_head_;
    Frame& f = (*this)[id];
    free_head_ = f.len;
    f.len = 0;
    f.wire_len = 0;
    f.priority = Priority::kData;
    return id;
  }
  void release(FrameId id) noexcept {
    (*this)[id].len = free_head_;
    free_head_ = id;
  }

  Frame& operator[](FrameId id) noexcept { return frames()[id]; }
  const Frame& operator[](FrameId id) const noexcept { return frames()[id]; }
  // Frame `id`'s metadata (kMetaBytes; the owner casts them to its type).
  uint8_t* meta(FrameId id) noexcept { return meta_.data() + size_t{id} * kMetaBytes; }
  const uint8_t* meta(FrameId id) const noexcept { return meta_.data() + size_t{id} * kMetaBytes; }
  // Where frame `id`'s Frame, metadata and bytes live, computed without reading the Frame
  // (for prefetching). Null for an id the pool has not grown to.
  const Frame* frame_hint(FrameId id) const noexcept {
    return id < peak_ ? frames() + id : nullptr;
  }
  const uint8_t* meta_hint(FrameId id) const noexcept { return id < peak_ ? meta(id) : nullptr; }
  const uint8_t* data_hint(FrameId id) const noexcept {
    return id < peak_ ? data_at(id) : nullptr;
  }
  // The frame alloc() would return now (kNoFrame if the pool must grow first).
  FrameId next_hint() const noexcept { return free_head_; }

 private:
  static constexpr uint32_t kSlabFrames = 1024;

  Frame* frames() const noexcept { return std::launder(reinterpret_cast<Frame*>(frames_.data())); }
  uint8_t* data_at(FrameId id) const noexcept {
    return slabs_[id / kSlabFrames].get() + size_t{id % kSlabFrames} * capacity_;
  }

  // Frames, metadata and bytes for kSlabFrames more frames; the new frames go on the free
  // list lowest id first (the list is empty when it grows). The bytes never move (a Frame
  // points to them); the Frames and metadata may (as a vector's would).
  void grow() {
    const uint32_t first = peak_;
    const size_t n = size_t{first} + kSlabFrames;
    frames_.reserve(n * sizeof(Frame));
    meta_.reserve(n * kMetaBytes);
    slabs_.push_back(std::unique_ptr<uint8_t[]>(new uint8_t[size_t{kSlabFrames} * capacity_]()));
    peak_ = static_cast<uint32_t>(n);
    for (uint32_t i = kSlabFrames; i-- > 0;) {
      Frame* f = new (frames_.data() + size_t{first + i} * sizeof(Frame)) Frame;
      f->data = data_at(first + i);
      f->capacity = capacity_;
      std::memcpy(meta(first + i), meta_init_, kMetaBytes);
      f->len = free_head_;
      free_head_ = first + i;
    }
  }

  uint32_t capacity_;
  uint8_t meta_init_[kMetaBytes] = {};
  PageArea frames_;  // Frame by id
  PageArea meta_;    // kMetaBytes by id
  std::vector<std::unique_ptr<uint8_t[]>> slabs_;  // the bytes of kSlabFrames frames each
  uint32_t peak_ = 0;
  FrameId free_head_ = kNoFrame;
};

}  // namespace uet::sim
