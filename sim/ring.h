// A FIFO ring of trivially copyable items whose storage comes from a RingPool shared by many
// rings (a fabric's port queues): a ring takes the smallest buffer when it first holds an item,
// a bigger one as it fills (doubling), and gives a big one (kShrinkLog or more) back when it
// drains; a small one it keeps, so that shallow bursts cost no pool traffic. So the memory of
// many queues follows how many are deep at once, not how deep each ever was; once the pool
// holds the run's peak, push and pop touch no allocator. A Ring
// is 24 bytes, so a port's two class queues share a cache line with its other per-frame state.
// The pool owns every buffer and outlives its rings; single-threaded.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

namespace uet::sim {

// Buffers of 2^c items by class c, kept on a free list per class when no ring holds them.
template <typename T>
class RingPool {
  static_assert(sizeof(T) >= sizeof(void*) && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

 public:
  static constexpr uint32_t kMinLog = 2;     // a ring's smallest buffer: 4 items
  static constexpr uint32_t kShrinkLog = 6;  // a drained ring gives back 64 items or more
  RingPool() = default;
  RingPool(const RingPool&) = delete;
  RingPool& operator=(const RingPool&) = delete;
  ~RingPool() {
    for (T* b : all_) ::operator delete(b);
  }

  // A buffer of 2^log items (contents unspecified).
  T* take(uint32_t log) {
    if (void* b = free_[log]) {
      free_[log] = *static_cast<void**>(b);
      return static_cast<T*>(b);
    }
    all_.push_back(static_cast<T*>(::operator new(sizeof(T) << log)));
    bytes_ += sizeof(T) << log;
    return all_.back();
  }
  void give(T* b, uint32_t log) noexcept {
    *reinterpret_cast<void**>(b) = free_[log];
    free_[log] = b;
  }
  // Bytes of every buffer the pool has made (held by rings or free).
  size_t bytes() const noexcept { return bytes_; }

 private:
  std::array<void*, 32> free_{};
  std::vector<T*> all_;
  size_t bytes_ = 0;
};

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

  void push(const T& v, RingPool<T>& pool) {
    if (buf_ == nullptr || size() == size_t{mask_} + 1) [[unlikely]] grow(pool);
    buf_[tail_++ & mask_] = v;
  }
  // The last item pushed (the ring keeps its buffer: the caller pushes again).
  T pop_back() noexcept { return buf_[--tail_ & mask_]; }
  T pop(RingPool<T>& pool) noexcept {
    const T v = buf_[head_++ & mask_];
    // A shallow ring (the common case) fails the first test.
    if (mask_ >= kShrinkMask && head_ == tail_) [[unlikely]] shrink(pool);
    return v;
  }

 private:
  static constexpr uint32_t kMinMask = (1u << RingPool<T>::kMinLog) - 1;
  static constexpr uint32_t kShrinkMask = (1u << RingPool<T>::kShrinkLog) - 1;
  static uint32_t log_of(uint32_t mask) noexcept {
    return static_cast<uint32_t>(std::bit_width(mask));
  }
  [[gnu::noinline]] void grow(RingPool<T>& pool) {
    if (buf_ == nullptr) {
      buf_ = pool.take(RingPool<T>::kMinLog);
      mask_ = kMinMask;
      head_ = tail_ = 0;
      return;
    }
    const uint32_t log = log_of(mask_);
    T* next = pool.take(log + 1);
    const size_t count = size();
    for (size_t i = 0; i < count; ++i) next[i] = buf_[(head_ + i) & mask_];
    pool.give(buf_, log);
    tail_ = static_cast<uint32_t>(count);
    head_ = 0;
    buf_ = next;
    mask_ = (mask_ << 1) | 1;
  }
  // Empty with a big buffer: it goes back; the next push takes the smallest.
  [[gnu::noinline]] void shrink(RingPool<T>& pool) noexcept {
    pool.give(buf_, log_of(mask_));
    buf_ = nullptr;
    mask_ = 0;
    head_ = tail_ = 0;
  }
  T* buf_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t head_ = 0;  // wrap modulo 2^32: size() is tail_ - head_
  uint32_t tail_ = 0;
};

}  // namespace uet::sim
