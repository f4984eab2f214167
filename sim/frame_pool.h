// Frames for the simulator: fixed-capacity buffers handed out by index.
//
// A frame carries real bytes: the full frame when `capacity` fits the MTU (integrity tests,
// pcap taps), or just the headers with the payload carried by length (Frame::wire_len) when
// a large fabric is simulated with a small capacity. Ids are indices. Each frame is its
// bytes and, just before them, an 8-byte slot with its lengths (what a Frame holds besides
// the address and capacity that follow from the id), so one address reaches both; the
// owner's metadata for each (kMetaBytes, e.g. what switches read from the headers) is a
// second array by id. Both grow by remapping pages (PageArea), so the per-hop code reaches
// them as it would a vector's, and the pool's memory follows the peak of frames in flight
// with no copy and no transient second copy. An engine is handed a Frame pointing at the
// bytes with the lengths copied (alloc_into, view_into) and what it wrote goes back with
// store(): valid until the next alloc(), which may move the frames. The free list is a stack
// threaded through the free frames' `len`, so allocation is O(1), needs no side array and
// never touches the heap once the pool has grown to the run's peak. Owned by the Network;
// single-threaded.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

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
  explicit FramePool(uint32_t capacity, const void* meta_init = nullptr)
      : capacity_(capacity), stride_(kSlotBytes + (size_t{capacity} + 7) / 8 * 8) {
    if (meta_init != nullptr) std::memcpy(meta_init_, meta_init, kMetaBytes);
  }

  uint32_t capacity() const noexcept { return capacity_; }
  // Frames allocated and not released (walks the free list: for reports, not per frame).
  size_t in_use() const noexcept {
    size_t free = 0;
    for (FrameId id = free_head_; id != kNoFrame; id = slot(id).len) ++free;
    return peak_ - free;
  }
  size_t peak() const noexcept { return peak_; }

  // An empty frame (len and wire_len 0).
  FrameId alloc() {
    const FrameId id = pop();
    slot(id) = Slot{};
    return id;
  }
  // alloc() for a host's transport to fill: `f` (whose capacity is the pool's, `ref` empty)
  // points at the frame's bytes, empty; its lengths become the frame's with store(). The
  // frame's own slot is not written until then.
  FrameId alloc_into(Frame& f) {
    const FrameId id = pop();
    f.data = at(id) + kSlotBytes;
    f.len = 0;
    f.wire_len = 0;
    lend(f);
    return id;
  }
  void release(FrameId id) noexcept {
    slot(id).len = free_head_;
    free_head_ = id;
  }

  // Frame `id` as engines and codecs take it: its bytes in place (writes to them land in the
  // pool), its lengths copied from its slot (store() keeps changes to those). The priority is
  // not kept (kData, as the hosts deliver a frame: the fabric keeps the class it queues a frame
  // in with the owner's metadata), and the simulator's engines never transmit by reference
  // (tx_by_reference), so `ref` stays empty.
  Frame view(FrameId id) const noexcept {
    Frame f;
    f.capacity = capacity_;
    view_into(id, f);
    return f;
  }
  // view() into a Frame the caller keeps (its capacity the pool's, `ref` empty): the fields
  // that are a frame's own are written, nothing else, as hosts do once per frame.
  void view_into(FrameId id, Frame& f) const noexcept {
    const Slot& s = slot(id);
    f.data = at(id) + kSlotBytes;
    f.len = s.len;
    f.wire_len = s.wire_len;
    lend(f);
  }
  void store(FrameId id, const Frame& f) noexcept { keep(slot(id), f); }
  // store() into the frame `f` points at (from alloc_into, view_into or view, no alloc()
  // since): its slot is just before its bytes, so no address is computed from an id.
  void store(const Frame& f) noexcept {
    check_lent(f);
    keep(*std::launder(reinterpret_cast<Slot*>(f.data - kSlotBytes)), f);
  }
  uint8_t* data(FrameId id) const noexcept { return at(id) + kSlotBytes; }
  uint32_t len(FrameId id) const noexcept { return slot(id).len; }
  uint32_t wire_len(FrameId id) const noexcept { return slot(id).wire_len; }
  // Frame::bytes_on_wire() of frame `id`.
  uint32_t bytes_on_wire(FrameId id) const noexcept {
    const Slot& s = slot(id);
    return std::max(s.wire_len, s.len);
  }
  // Frame `id`'s metadata (kMetaBytes; the owner casts them to its type).
  uint8_t* meta(FrameId id) noexcept { return meta_.data() + size_t{id} * kMetaBytes; }
  const uint8_t* meta(FrameId id) const noexcept { return meta_.data() + size_t{id} * kMetaBytes; }
  // Where frame `id`'s slot (its first bytes after it) and metadata live, computed without
  // reading them (for prefetching). Null for an id the pool has not grown to.
  const uint8_t* frame_hint(FrameId id) const noexcept { return id < peak_ ? at(id) : nullptr; }
  const uint8_t* meta_hint(FrameId id) const noexcept { return id < peak_ ? meta(id) : nullptr; }
  // The frame alloc() would return now (kNoFrame if the pool must grow first).
  FrameId next_hint() const noexcept { return free_head_; }
  // Debug builds: asserts that `f`, if it is the Frame lent last (alloc_into, view_into),
  // was lent after the latest alloc, which may have moved its bytes or given its frame to
  // another. store() checks it; a host may too. Nothing under NDEBUG.
  void check_lent([[maybe_unused]] const Frame& f) const noexcept {
#ifndef NDEBUG
    assert((f.data != lent_data_ || lent_gen_ == alloc_gen_) &&
           "FramePool: a lent Frame used after the next alloc");
#endif
  }

 private:
  static constexpr uint32_t kGrowFrames = 1024;
  // What a Frame holds that is not its address or capacity (its priority is not kept).
  struct Slot {
    uint32_t len = 0;  // a free frame's: the next free frame's id
    uint32_t wire_len = 0;
  };
  static constexpr size_t kSlotBytes = sizeof(Slot);
  static_assert(kSlotBytes == 8 && std::is_trivially_copyable_v<Slot>);

  uint8_t* at(FrameId id) const noexcept { return frames_.data() + size_t{id} * stride_; }
  Slot& slot(FrameId id) noexcept { return *std::launder(reinterpret_cast<Slot*>(at(id))); }
  const Slot& slot(FrameId id) const noexcept {
    return *std::launder(reinterpret_cast<const Slot*>(at(id)));
  }
  static void keep(Slot& s, const Frame& f) noexcept {
    s.len = f.len;
    s.wire_len = f.wire_len;
  }
  FrameId pop() {
#ifndef NDEBUG
    ++alloc_gen_;
#endif
    if (free_head_ == kNoFrame) grow();
    const FrameId id = free_head_;
    free_head_ = slot(id).len;
    return id;
  }

  // Slots, bytes and metadata for kGrowFrames more frames; the new frames go on the free list
  // lowest id first (the list is empty when it grows). They may move (as a vector's would);
  // no Frame handed out is held across an alloc(). Out of line: alloc() stays small.
  [[gnu::noinline]] void grow() {
    const uint32_t first = peak_;
    const size_t n = size_t{first} + kGrowFrames;
    frames_.reserve(n * stride_);
    meta_.reserve(n * kMetaBytes);
    peak_ = static_cast<uint32_t>(n);
    for (uint32_t i = kGrowFrames; i-- > 0;) {
      Slot* s = new (at(first + i)) Slot;
      std::memcpy(meta(first + i), meta_init_, kMetaBytes);
      s->len = free_head_;
      free_head_ = first + i;
    }
  }

  uint32_t capacity_;
  size_t stride_;  // a slot and the bytes after it, 8-byte aligned
  uint8_t meta_init_[kMetaBytes] = {};
  PageArea frames_;  // by id: a Slot, then `capacity_` bytes
  PageArea meta_;    // kMetaBytes by id
  uint32_t peak_ = 0;
  FrameId free_head_ = kNoFrame;
  // Debug builds: allocations so far, and the latest lend (check_lent).
  void lend([[maybe_unused]] const Frame& f) const noexcept {
#ifndef NDEBUG
    lent_data_ = f.data;
    lent_gen_ = alloc_gen_;
#endif
  }
#ifndef NDEBUG
  uint64_t alloc_gen_ = 0;
  mutable uint64_t lent_gen_ = 0;
  mutable const uint8_t* lent_data_ = nullptr;
#endif
};

}  // namespace uet::sim
