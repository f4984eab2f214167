// One bit per connection in an engine's active list: the connection may have a frame for
// tx(). An engine sets a bit whenever something reaches its connection (a frame, a post, a
// timer that fires) and clears it when tx() finds the connection with nothing that time
// alone could release; tx()'s round robin then passes over clear bits as if it had visited
// them, so it costs the busy connections, not the open ones, and sends what visiting every
// connection would.
//
// Owned by one engine, touched on its thread only. Grows a word at a time with the active
// list (grow_to), so it is bounded by the engine's connection bound. The first 64 positions
// live in the owner itself: most hosts of a large simulation hold a connection or two, and
// tx() then reads its bits without a cache miss on a heap block of their own.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace uet {

class ReadyBits {
 public:
  // Room for positions [0, n): called as the active list grows to n.
  void grow_to(size_t n) {
    while ((more_.size() + 1) * 64 < n) more_.push_back(0);
  }
  void set(uint32_t i) noexcept { word(i >> 6) |= bit(i); }
  void clear(uint32_t i) noexcept { word(i >> 6) &= ~bit(i); }
  bool test(uint32_t i) const noexcept { return (word(i >> 6) & bit(i)) != 0; }

  // The active list's swap-remove: position `last` moves to `to`, and `last` is cleared.
  void move(uint32_t last, uint32_t to) noexcept {
    const bool was = test(last);
    clear(last);
    if (to == last) return;
    was ? set(to) : clear(to);
  }

  // The first set position in [from, size), or size.
  uint32_t next(uint32_t from, uint32_t size) const noexcept {
    if (from >= size) return size;
    uint32_t w = from >> 6;
    uint64_t bits = word(w) & (~uint64_t{0} << (from & 63));
    while (bits == 0) {
      if (++w * 64 >= size) return size;
      bits = more_[w - 1];
    }
    const uint32_t at = w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
    return at < size ? at : size;
  }

  // One step of a round robin at `rr` (< size) that ends after `size` idle visits in a row:
  // moves `rr` over the clear positions before the next set one (up to the end of the list),
  // counting each as an idle visit. False when the idle visits run out among them; `rr` is
  // then where visiting them one by one would have left it. Afterwards rr may equal size
  // (the caller wraps).
  bool skip_idle(uint32_t& rr, size_t& idle, size_t size) const noexcept {
    const uint32_t at = next(rr, static_cast<uint32_t>(size));
    const size_t skip = at - rr, left = size - idle;
    if (skip >= left) {
      rr += static_cast<uint32_t>(left);
      return false;
    }
    idle += skip;
    rr = at;
    return true;
  }

  size_t bytes() const noexcept { return more_.capacity() * sizeof(uint64_t); }

 private:
  static constexpr uint64_t bit(uint32_t i) noexcept { return uint64_t{1} << (i & 63); }
  uint64_t& word(uint32_t w) noexcept { return w == 0 ? first_ : more_[w - 1]; }
  const uint64_t& word(uint32_t w) const noexcept { return w == 0 ? first_ : more_[w - 1]; }
  uint64_t first_ = 0;          // positions 0..63
  std::vector<uint64_t> more_;  // positions from 64, a word each
};

}  // namespace uet
