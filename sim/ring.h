// A FIFO ring of trivially copyable items that grows by doubling and never shrinks: after
// warm-up, push and pop touch no allocator. 24 bytes, so a port's two class queues share a
// cache line with its other per-frame state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace uet::sim {

template <typename T>
class Ring {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  bool empty() const noexcept { return head_ == tail_; }
  size_t size() const noexcept { return static_cast<uint32_t>(tail_ - head_); }
  const T& front() const noexcept { return buf_[head_ & mask_]; }
  const T& at(size_t i) const noexcept { return buf_[(head_ + i) & mask_]; }  // i < size()
  // Where the next push() writes (only for prefetching; the ring may be unallocated or full).
  const T* back_slot() const noexcept { return buf_ ? &buf_[tail_ & mask_] : nullptr; }

  void push(const T& v) {
    if (buf_ == nullptr || size() == size_t{mask_} + 1) grow();
    buf_[tail_++ & mask_] = v;
  }
  T pop() noexcept { return buf_[head_++ & mask_]; }

 private:
  void grow() {
    const size_t n = buf_ == nullptr ? 16 : (size_t{mask_} + 1) * 2;
    auto next = std::make_unique<T[]>(n);
    const size_t count = size();
    for (size_t i = 0; i < count; ++i) next[i] = buf_[(head_ + i) & mask_];
    tail_ = static_cast<uint32_t>(count);
    head_ = 0;
    buf_ = std::move(next);
    mask_ = static_cast<uint32_t>(n - 1);
  }
  std::unique_ptr<T[]> buf_;
  uint32_t mask_ = 0;
  uint32_t head_ = 0;  // wrap modulo 2^32: size() is tail_ - head_
  uint32_t tail_ = 0;
};

}  // namespace uet::sim
