// Storage that grows with what an engine uses, up to the bounds its config names, so an
// endpoint costs its live state and not its maxima (../shared/DESIGN.md "Memory follows live
// state"). Growth happens when a connection opens, work is posted or a flight grows
// (amortised, never once per packet in steady state); nothing shrinks unless its owner gives
// a ring back (GrowRing::release) or shrinks it on its control path (GrowRing::shrink), so a
// table that has grown is otherwise reused as is.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace uet {

// Objects by index 0..size()-1, created a chunk at a time as ids are first needed. Addresses
// are stable (an object never moves) and a lookup is one load (ptrs_[id]), so ids stay
// indices, not hash keys.
template <typename T>
class ChunkedTable {
 public:
  uint32_t size() const noexcept { return static_cast<uint32_t>(ptrs_.size()); }
  T* get(uint32_t id) noexcept { return id < ptrs_.size() ? ptrs_[id] : nullptr; }
  const T* get(uint32_t id) const noexcept { return id < ptrs_.size() ? ptrs_[id] : nullptr; }
  T& operator[](uint32_t id) noexcept { return *ptrs_[id]; }
  const T& operator[](uint32_t id) const noexcept { return *ptrs_[id]; }

  // Adds ids size().. : a chunk as large as the table so far (doubling), 2 to 64 objects,
  // never past `max`. Returns false when the table already holds `max`.
  bool grow(uint32_t max) {
    if (size() >= max) return false;
    const uint32_t n = std::min(std::clamp<uint32_t>(size(), 2, 64), max - size());
    chunks_.push_back(std::make_unique<T[]>(n));
    for (uint32_t i = 0; i < n; ++i) ptrs_.push_back(&chunks_.back()[i]);
    return true;
  }
  // Bytes the table holds itself (objects and index), not what the objects point to.
  size_t bytes() const noexcept { return size() * sizeof(T) + ptrs_.capacity() * sizeof(T*); }
  // The most bytes() reaches growing to `max`: every object, and the index appended to one
  // pointer at a time (appended_capacity).
  static size_t bytes_bound(uint32_t max) noexcept;

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  std::vector<T*> ptrs_;
};

// A ring addressed by its owner's free-running positions (slot = position & (capacity - 1))
// whose storage doubles, where work is posted, up to the bound its owner enforces. The owner
// keeps the live range [head, tail) and never lets tail - head pass the bound; the ring holds
// no positions of its own. Capacities are powers of 2 (the last one the bound rounded up), so
// the data path indexes by mask, not by division. Storage is kept until the owner releases
// it (release()): reuse keeps its capacity. kFirst: the entries of the first allocation (fewer
// when the bound is smaller), small where one entry is large or a short flight is usual.
template <typename T, uint32_t kFirst = 8>
class GrowRing {
 public:
  static_assert(std::has_single_bit(kFirst));
  static constexpr uint32_t kMinCapacity = kFirst;

  GrowRing() = default;
  // A moved-from ring is empty (capacity 0), so it neither reports nor indexes storage it no
  // longer has.
  GrowRing(GrowRing&& o) noexcept
      : slots_(std::move(o.slots_)), mask_(o.mask_), capacity_(o.capacity_) {
    o.release();
  }
  GrowRing& operator=(GrowRing&& o) noexcept {
    if (this != &o) {
      slots_ = std::move(o.slots_);
      mask_ = o.mask_;
      capacity_ = o.capacity_;
      o.release();
    }
    return *this;
  }

  // The entry at `pos`; pos must be live (head <= pos < tail), so the ring is not empty.
  T& operator[](uint64_t pos) noexcept { return slots_[pos & mask_]; }
  const T& operator[](uint64_t pos) const noexcept { return slots_[pos & mask_]; }

  // Room for `need` entries while [head, tail) are live (need >= tail - head, need <= bound):
  // doubles the storage (from kMinCapacity) until `need` fit, never beyond `bound` rounded up
  // to a power of 2, and moves every live entry to its position's slot in the new storage, so
  // order is unchanged.
  void reserve(uint64_t head, uint64_t tail, uint64_t need, uint32_t bound) {
    if (need <= capacity_) return;
    uint64_t cap = std::max<uint64_t>(capacity_, kMinCapacity);
    while (cap < need) cap *= 2;
    move_to(head, tail, std::min<uint64_t>(cap, std::bit_ceil(uint64_t{bound})));
  }

  // The same for an owner whose counters are 32-bit (and may wrap).
  void reserve32(uint32_t head, uint32_t tail, uint64_t need, uint32_t bound) {
    reserve(head, uint64_t{head} + (tail - head), need, bound);
  }

  // Gives storage back once the `need` entries the owner must keep room for (live or
  // reserved, need >= tail - head) fit a quarter of it: to twice their power of 2, never
  // below `keep` slots (a flight that stays small never reallocates). Shrinking only at a
  // quarter keeps a flight that moves around one size from reallocating at every call.
  void shrink(uint64_t head, uint64_t tail, uint64_t need, uint32_t keep) {
    if (capacity_ <= keep || need * 4 > capacity_) return;
    const uint64_t cap = std::max<uint64_t>(std::bit_ceil(need * 2), keep);
    if (cap < capacity_) move_to(head, tail, cap);
  }

  // Gives the storage back (nothing may be live): the next reserve() starts again from
  // kMinCapacity.
  void release() noexcept {
    slots_.reset();
    mask_ = 0;
    capacity_ = 0;
  }

  uint32_t capacity() const noexcept { return capacity_; }
  size_t bytes() const noexcept { return size_t{capacity_} * sizeof(T); }
  // The most bytes() reaches for an owner's `bound`: reserve() stops at the bound rounded up.
  static size_t bytes_bound(uint32_t bound) noexcept {
    return std::bit_ceil(size_t{bound}) * sizeof(T);
  }

 private:
  // Moves the live entries to their positions' slots in new storage of `cap` slots.
  void move_to(uint64_t head, uint64_t tail, uint64_t cap) {
    auto slots = std::make_unique<T[]>(cap);
    for (uint64_t p = head; p != tail; ++p) slots[p & (cap - 1)] = std::move(slots_[p & mask_]);
    slots_ = std::move(slots);
    capacity_ = static_cast<uint32_t>(cap);
    mask_ = capacity_ - 1;
  }

  std::unique_ptr<T[]> slots_;
  uint32_t mask_ = 0;
  uint32_t capacity_ = 0;
};

// Bounds of standard containers an engine grows towards its config's bounds, for the
// memory_bound() functions. They hold for libstdc++ and libc++ and the Abseil release we build
// with; the engines' tests check each bound against a table grown to it.

// A vector that grows by push_back/emplace_back only, to at most n elements: its capacity
// doubles from 1, so it ends at n rounded up to a power of 2.
constexpr size_t appended_capacity(size_t n) noexcept { return n == 0 ? 0 : std::bit_ceil(n); }

// A vector grown by resize() to at most n elements: a reallocation takes max(2 x capacity,
// new size) (libstdc++ _M_default_append, libc++ __recommend), so less than 2n.
constexpr size_t resized_capacity(size_t n) noexcept { return n == 0 ? 0 : 2 * n - 1; }

// Bytes an absl::flat_hash_map holds: a slot and a control byte per unit of capacity.
template <typename Map>
size_t hash_bytes(const Map& m) noexcept {
  return m.capacity() * (sizeof(typename Map::value_type) + 1);
}

// The most hash_bytes() reaches for a map that never holds more than n entries, however
// many are inserted and erased: capacities are 2^k - 1, and a full table (tombstones fill it
// too) doubles to 2c + 1 only if c <= 15 or more than 25/32 of it is live, else it drops its
// tombstones in place (raw_hash_set.h rehash_and_grow_if_necessary). The entry being
// inserted is not yet live, so at most n - 1 are.
template <typename Map>
size_t hash_bytes_bound(size_t n) noexcept {
  size_t c = 1;
  while (c <= 15 || c * 25 < (n == 0 ? 0 : n - 1) * 32) c = 2 * c + 1;
  return (n == 0 ? 0 : c) * (sizeof(typename Map::value_type) + 1);
}

template <typename T>
size_t ChunkedTable<T>::bytes_bound(uint32_t max) noexcept {
  return size_t{max} * sizeof(T) + appended_capacity(max) * sizeof(T*);
}

}  // namespace uet
