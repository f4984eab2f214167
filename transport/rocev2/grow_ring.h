// A ring addressed by monotonic 64-bit positions (slot = position & (capacity - 1)) whose
// storage grows by doubling, on the control path, up to the bound its owner enforces. The
// owner keeps the live range [head, tail) and never lets tail - head exceed the bound; the
// ring holds no positions of its own, so the RoCEv2 engine's queues keep their counters.
// Capacities are powers of 2 (the last one the bound rounded up), so the data path indexes by
// mask, not by division.
//
// Ownership: one owner, one thread. reserve() allocates (when the live entries and the
// newcomers would not fit) and is called only where work is posted; operator[] never
// allocates. Storage is kept until the ring is destroyed: reuse keeps its capacity.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace uet::roce {

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

  uint32_t capacity() const noexcept { return capacity_; }
  size_t bytes() const noexcept { return size_t{capacity_} * sizeof(T); }

 private:
  std::unique_ptr<T[]> slots_;
  uint64_t mask_ = 0;
  uint32_t capacity_ = 0;
};

}  // namespace uet::roce
