// A FIFO ring of trivially copyable items that grows by doubling and never shrinks: after
// warm-up, push and pop touch no allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace uet::sim {

template <typename T>
class Ring {
 public:
  bool empty() const noexcept { return head_ == tail_; }
  size_t size() const noexcept { return tail_ - head_; }
  const T& front() const noexcept { return buf_[head_ & mask_]; }

  void push(const T& v) {
    if (size() == buf_.size()) grow();
    buf_[tail_++ & mask_] = v;
  }
  T pop() noexcept { return buf_[head_++ & mask_]; }

 private:
  void grow() {
    const size_t n = buf_.empty() ? 16 : buf_.size() * 2;
    std::vector<T> next(n);
    for (size_t i = 0; i < size(); ++i) next[i] = buf_[(head_ + i) & mask_];
    tail_ = size();
    head_ = 0;
    buf_.swap(next);
    mask_ = n - 1;
  }
  std::vector<T> buf_;
  size_t mask_ = 0;
  size_t head_ = 0;
  size_t tail_ = 0;
};

}  // namespace uet::sim
