// Frames for the simulator: fixed-capacity buffers in slabs, handed out by index.
//
// A frame carries real bytes: the full frame when `capacity` fits the MTU (integrity tests,
// pcap taps), or just the headers with the payload carried by length (Frame::wire_len) when
// a large fabric is simulated with a small capacity. Ids are indices. What varies per frame
// (its Slot: lengths and priority, 12 bytes where a Frame is 40: its address and capacity
// follow from its id) and the owner's metadata for each (kMetaBytes, e.g. what switches read
// from the headers) are arrays indexed by id, grown by remapping pages (PageArea), so the
// per-hop code reaches them as it would a vector's, and the pool's memory follows the peak of
// frames in flight with no copy and no transient second copy; the frames' bytes are in slabs
// of kSlabFrames that never move. An engine is handed a Frame built from the slot (view())
// and what it wrote goes back with store(). The
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
#include <type_traits>
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
    for (FrameId id = free_head_; id != kNoFrame; id = slot(id).len) ++free;
    return peak_ - free;
  }
  size_t peak() const noexcept { return peak_; }

  FrameId alloc() {
    if (free_head_ == kNoFrame) grow();
    const FrameId id = free_head_;
    Slot& s = slot(id);
    free_head_ = s.len;
    s = Slot{};
    return id;
  }
  void release(FrameId id) noexcept {
    slot(id).len = free_head_;
    free_head_ = id;
  }

  // Frame `id` as engines and codecs take it: its bytes in place (writes to them land in the
  // pool), its lengths and priority copied from its slot (store() keeps changes to those). The
  // simulator's engines never transmit by reference (tx_by_reference), so `ref` stays empty.
  Frame view(FrameId id) const noexcept {
    const Slot& s = slot(id);
    Frame f;
    f.data = data_at(id);
    f.len = s.len;
    f.wire_len = s.wire_len;
    f.capacity = capacity_;
    f.priority = s.priority;
    return f;
  }
  // view() into a Frame the caller keeps (its capacity already the pool's, `ref` empty): the
  // fields a frame's own are written, nothing else, as hosts do once per frame.
  void view_into(FrameId id, Frame& f) const noexcept {
    const Slot& s = slot(id);
    f.data = data_at(id);
    f.len = s.len;
    f.wire_len = s.wire_len;
    f.priority = s.priority;
  }
  void store(FrameId id, const Frame& f) noexcept {
    Slot& s = slot(id);
    s.len = f.len;
    s.wire_len = f.wire_len;
    s.priority = f.priority;
  }
  uint8_t* data(FrameId id) const noexcept { return data_at(id); }
  uint32_t len(FrameId id) const noexcept { return slot(id).len; }
  uint32_t wire_len(FrameId id) const noexcept { return slot(id).wire_len; }
  Priority priority(FrameId id) const noexcept { return slot(id).priority; }
  // Frame::bytes_on_wire() of frame `id`.
  uint32_t bytes_on_wire(FrameId id) const noexcept {
    const Slot& s = slot(id);
    return std::max(s.wire_len, s.len);
  }
  // Frame `id`'s metadata (kMetaBytes; the owner casts them to its type).
  uint8_t* meta(FrameId id) noexcept { return meta_.data() + size_t{id} * kMetaBytes; }
  const uint8_t* meta(FrameId id) const noexcept { return meta_.data() + size_t{id} * kMetaBytes; }
  // Where frame `id`'s slot, metadata and bytes live, computed without reading the slot
  // (for prefetching). Null for an id the pool has not grown to.
  const void* frame_hint(FrameId id) const noexcept { return id < peak_ ? slots() + id : nullptr; }
  const uint8_t* meta_hint(FrameId id) const noexcept { return id < peak_ ? meta(id) : nullptr; }
  const uint8_t* data_hint(FrameId id) const noexcept {
    return id < peak_ ? data_at(id) : nullptr;
  }
  // The frame alloc() would return now (kNoFrame if the pool must grow first).
  FrameId next_hint() const noexcept { return free_head_; }

 private:
  static constexpr uint32_t kSlabFrames = 1024;
  // What a Frame holds that is not its address or capacity.
  struct Slot {
    uint32_t len = 0;  // a free frame's: the next free frame's id
    uint32_t wire_len = 0;
    Priority priority = Priority::kData;
  };
  static_assert(sizeof(Slot) == 12 && std::is_trivially_copyable_v<Slot>);

  Slot* slots() const noexcept { return std::launder(reinterpret_cast<Slot*>(slots_.data())); }
  Slot& slot(FrameId id) noexcept { return slots()[id]; }
  const Slot& slot(FrameId id) const noexcept { return slots()[id]; }
  uint8_t* data_at(FrameId id) const noexcept {
    return slabs_[id / kSlabFrames].get() + size_t{id % kSlabFrames} * capacity_;
  }

  // Slots, metadata and bytes for kSlabFrames more frames; the new frames go on the free
  // list lowest id first (the list is empty when it grows). The bytes never move (a Frame
  // handed out points to them); the slots and metadata may (as a vector's would).
  void grow() {
    const uint32_t first = peak_;
    const size_t n = size_t{first} + kSlabFrames;
    slots_.reserve(n * sizeof(Slot));
    meta_.reserve(n * kMetaBytes);
    slabs_.push_back(std::unique_ptr<uint8_t[]>(new uint8_t[size_t{kSlabFrames} * capacity_]()));
    peak_ = static_cast<uint32_t>(n);
    for (uint32_t i = kSlabFrames; i-- > 0;) {
      Slot* s = new (slots_.data() + size_t{first + i} * sizeof(Slot)) Slot;
      std::memcpy(meta(first + i), meta_init_, kMetaBytes);
      s->len = free_head_;
      free_head_ = first + i;
    }
  }

  uint32_t capacity_;
  uint8_t meta_init_[kMetaBytes] = {};
  PageArea slots_;   // Slot by id
  PageArea meta_;    // kMetaBytes by id
  std::vector<std::unique_ptr<uint8_t[]>> slabs_;  // the bytes of kSlabFrames frames each
  uint32_t peak_ = 0;
  FrameId free_head_ = kNoFrame;
};

}  // namespace uet::sim
