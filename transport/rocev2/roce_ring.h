// The RoCEv2 engine's rings (send queues, responder queues, the completion ring, the receive
// queue): a power of 2 of slots that follows the live entries, from one slot up to the
// owner's bound, and gives storage back when the live entries fit a quarter of it.
//
// Owned by one RoceEndpoint, touched on its thread only. The owner keeps the positions
// (head, tail: 64-bit counts that never wrap) and calls reserve() before a push that may not
// fit and shrink() on its control path (transport/rocev2/NOTES.md §6); indexing and pushing
// never allocate.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace uet {

template <typename T>
class RoceRing {
 public:
  // The entry at `pos`; pos must be live (head <= pos < tail), so the ring is not empty.
  T& operator[](uint64_t pos) noexcept { return slots_[pos & mask_]; }
  const T& operator[](uint64_t pos) const noexcept { return slots_[pos & mask_]; }

  // Room for `need` entries while [head, tail) are live (tail - head <= need <= bound):
  // doubles the storage (from one slot) until `need` fit, never beyond `bound` rounded up to
  // a power of 2. Live entries keep their positions, so order is unchanged.
  void reserve(uint64_t head, uint64_t tail, uint64_t need, uint32_t bound) {
    if (need <= capacity_) return;
    uint64_t cap = std::max<uint64_t>(capacity_, 1);
    while (cap < need) cap *= 2;
    move_to(head, tail, std::min<uint64_t>(cap, std::bit_ceil(uint64_t{bound})));
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

  uint32_t capacity() const noexcept { return capacity_; }
  size_t bytes() const noexcept { return size_t{capacity_} * sizeof(T); }
  // The most bytes() reaches for an owner's `bound`: reserve() stops at the bound rounded up.
  static size_t bytes_bound(uint32_t bound) noexcept {
    return std::bit_ceil(size_t{bound}) * sizeof(T);
  }

 private:
  void move_to(uint64_t head, uint64_t tail, uint64_t cap) {
    auto slots = std::make_unique<T[]>(cap);
    for (uint64_t p = head; p != tail; ++p) slots[p & (cap - 1)] = std::move(slots_[p & mask_]);
    slots_ = std::move(slots);
    capacity_ = static_cast<uint32_t>(cap);
    mask_ = capacity_ - 1;
  }

  std::unique_ptr<T[]> slots_;
  uint32_t capacity_ = 0;
  uint32_t mask_ = 0;
};

}  // namespace uet
