// The simulator's event list: a 4-ary min-heap of small POD events in one growing array.
//
// Total order: (time, sequence number). The sequence number is assigned at scheduling, so
// events at the same picosecond run in the order they were scheduled, and a run is a pure
// function of its inputs and seed. No allocation per event once the array has grown to the
// run's peak size; no virtual call per event (the simulator switches on `kind`).
#pragma once

#include <cstdint>
#include <vector>

#include "transport/transport.h"

namespace uet::sim {

// 24 bytes: the sequence number (56 bits, 7e16 events) and the kind share one word.
struct Event {
  Time time;
  uint64_t seq_kind;  // seq << 8 | kind
  uint32_t a;         // meaning per kind: usually a port, host or link index
  uint32_t b;         // meaning per kind: usually a frame id or a generation number
  uint8_t kind() const noexcept { return static_cast<uint8_t>(seq_kind); }
};
static_assert(sizeof(Event) == 24);

class EventQueue {
 public:
  void reserve(size_t n) { heap_.reserve(n); }
  bool empty() const noexcept { return heap_.empty(); }
  size_t size() const noexcept { return heap_.size(); }
  Time next_time() const noexcept { return heap_.empty() ? kNever : heap_.front().time; }
  uint64_t scheduled() const noexcept { return seq_; }

  void push(Time t, uint8_t kind, uint32_t a, uint32_t b) {
    heap_.push_back(Event{t, (seq_++ << 8) | kind, a, b});
    sift_up(heap_.size() - 1);
  }

  Event pop() noexcept {
    Event top = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
    return top;
  }

 private:
  static bool before(const Event& x, const Event& y) noexcept {
    return x.time < y.time || (x.time == y.time && x.seq_kind < y.seq_kind);
  }
  void sift_up(size_t i) noexcept {
    Event e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  void sift_down(size_t i) noexcept {
    const size_t n = heap_.size();
    Event e = heap_[i];
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t last = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < last; ++c)
        if (before(heap_[c], heap_[best])) best = c;
      if (!before(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }

  std::vector<Event> heap_;
  uint64_t seq_ = 0;
};

}  // namespace uet::sim
