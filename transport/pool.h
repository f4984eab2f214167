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

// A FIFO ring addressed by free-running 32-bit counters: the entry of counter c lives at
// c & (size - 1), the size a power of 2. grow_ring() makes room for `at_least` entries
// (doubling from 8), moving the live entries, counters [head, tail), to their new places;
// the caller keeps its own bound on tail - head.
template <typename T>
void grow_ring(std::vector<T>& ring, uint32_t head, uint32_t tail, size_t at_least) {
  if (ring.size() >= at_least) return;
  const size_t n = std::bit_ceil(std::max<size_t>(at_least, std::max<size_t>(8, ring.size() * 2)));
  std::vector<T> next(n);
  for (uint32_t c = head; c != tail; ++c) next[c & (n - 1)] = ring[c & (ring.size() - 1)];
  ring = std::move(next);
}

}  // namespace uet
