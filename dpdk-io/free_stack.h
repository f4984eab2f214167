// A stack of free buffers (frames, or their indices into a pool), never more than the pool:
// what a host hands buffers out from and takes them back into. Sized once at creation; push
// and pop never allocate (the data-path rule, DESIGN.md).
#pragma once

#include <cassert>
#include <cstddef>
#include <utility>
#include <vector>

namespace uet::io {

template <typename T>
class FreeStack {
 public:
  // The whole pool, free; pop() takes the last first.
  void fill(std::vector<T> items) {
    items_ = std::move(items);
    count_ = items_.size();
  }
  size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  T pop() noexcept {
    assert(count_ > 0);
    return items_[--count_];
  }
  void push(T item) noexcept {
    assert(count_ < items_.size());
    items_[count_++] = item;
  }

 private:
  std::vector<T> items_;
  size_t count_ = 0;
};

}  // namespace uet::io
