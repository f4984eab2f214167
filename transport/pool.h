// Storage that grows with what an engine uses, up to the bounds its config names, so an
// endpoint costs its live state and not its maxima (../shared/DESIGN.md "Memory follows live
// state"). Growth happens when a connection opens or work is posted (amortised, never once
// per packet in steady state); nothing shrinks, so a table that has grown is reused as is.
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

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  std::vector<T*> ptrs_;
};

// A ring addressed by its owner's free-running positions (slot = position & (capacity - 1))
// whose storage doubles, where work is posted, up to the bound its owner enforces. The owner
// keeps the live range [head, tail) and never lets tail - head pass the bound; the ring holds
// no positions of its own. Capacities are powers of 2 (the last one the bound rounded up), so
// the data path indexes by mask, not by division. Storage is kept until the ring is
// destroyed: reuse keeps its capacity.
template <typename T>
class GrowRing {
 public:
  // The first allocation holds this many entries (fewer when the bound is smaller).
  static constexpr uint32_t kMinCapacity = 8;

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
    cap = std::min<uint64_t>(cap, std::bit_ceil(uint64_t{bound}));
    auto slots = std::make_unique<T[]>(cap);
    for (uint64_t p = head; p != tail; ++p) slots[p & (cap - 1)] = std::move(slots_[p & mask_]);
    slots_ = std::move(slots);
    capacity_ = static_cast<uint32_t>(cap);
    mask_ = cap - 1;
  }

  // The same for an owner whose counters are 32-bit (and may wrap).
  void reserve32(uint32_t head, uint32_t tail, uint64_t need, uint32_t bound) {
    reserve(head, uint64_t{head} + (tail - head), need, bound);
  }

  uint32_t capacity() const noexcept { return capacity_; }
  size_t bytes() const noexcept { return size_t{capacity_} * sizeof(T); }

 private:
  std::unique_ptr<T[]> slots_;
  uint64_t mask_ = 0;
  uint32_t capacity_ = 0;
};

}  // namespace uet
