// The simulator's event list: a calendar of time buckets in front of small 4-ary min-heaps of
// 24-byte POD events.
//
// Total order: (time, sequence number). The sequence number is assigned at scheduling, so
// events at the same picosecond run in the order they were scheduled, and a run is a pure
// function of its inputs and seed. No allocation per event once the arrays have grown to the
// run's peak size; no virtual call per event (the simulator switches on `kind`).
//
// Layout (an exact calendar queue): time is cut into buckets of 2^kBucketShift ps. The events
// of the current bucket live in `near_`, a heap on (time, seq); those of the next kBuckets - 1
// buckets are pushed unsorted onto a ring of per-bucket lists (nodes from one pool with a free
// list, so memory follows the events pending, not the busiest bucket; a bitmap says which
// lists are non-empty); later ones go to `far_`, a heap on (time, seq). When `near_` runs dry the
// earliest non-empty bucket (ring or far heap) becomes current and its events are heapified
// into `near_`. Every event outside `near_` belongs to a later bucket than every event in it,
// so pops come out in exactly the (time, seq) order of one global heap, while each heap
// operation works on a few hundred cache-resident events instead of every pending one.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
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

// A 4-ary min-heap of events on (time, seq).
class EventHeap {
 public:
  bool empty() const noexcept { return v_.empty(); }
  size_t size() const noexcept { return v_.size(); }
  const Event& top() const noexcept { return v_.front(); }
  void reserve(size_t n) { v_.reserve(n); }

  void push(const Event& e) {
    v_.push_back(e);
    sift_up(v_.size() - 1);
  }
  Event pop() noexcept {
    Event top = v_.front();
    v_.front() = v_.back();
    v_.pop_back();
    if (!v_.empty()) sift_down(0);
    return top;
  }
  // Adds an event without restoring the heap order; call heapify() before the next pop.
  void append(const Event& e) { v_.push_back(e); }
  // Restores the heap order over everything (Floyd's bottom-up build).
  void heapify() noexcept {
    if (v_.size() < 2) return;
    for (size_t i = (v_.size() - 2) / 4 + 1; i-- > 0;) sift_down(i);
  }

  static bool before(const Event& x, const Event& y) noexcept {
    return x.time < y.time || (x.time == y.time && x.seq_kind < y.seq_kind);
  }

 private:
  void sift_up(size_t i) noexcept {
    Event e = v_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!before(e, v_[parent])) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = e;
  }
  void sift_down(size_t i) noexcept {
    const size_t n = v_.size();
    Event e = v_[i];
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t last = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < last; ++c)
        if (before(v_[c], v_[best])) best = c;
      if (!before(v_[best], e)) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = e;
  }

  std::vector<Event> v_;
};

class EventQueue {
 public:
  static constexpr int kBucketShift = 12;  // 4.096 ns per bucket
  static constexpr int64_t kBuckets = 1024;  // the ring spans 4.2 us; later events go to far_

  void reserve(size_t n) {
    near_.reserve(n);
    far_.reserve(n);
  }
  bool empty() const noexcept { return size_ == 0; }
  size_t size() const noexcept { return size_; }
  // The earliest event's time (kNever if none). Not const: it may make a later bucket current.
  Time next_time() noexcept {
    if (near_.empty() && !advance()) return kNever;
    return near_.top().time;
  }
  uint64_t scheduled() const noexcept { return seq_; }

  void push(Time t, uint8_t kind, uint32_t a, uint32_t b) {
    const Event e{t, (seq_++ << 8) | kind, a, b};
    ++size_;
    const int64_t bucket = t >> kBucketShift;
    if (bucket <= current_) {
      near_.push(e);
    } else if (bucket - current_ < kBuckets) {
      const auto slot = static_cast<size_t>(bucket & (kBuckets - 1));
      uint32_t node = free_;
      if (node == kNil) {
        node = static_cast<uint32_t>(nodes_.size());
        nodes_.push_back(Node{e, ring_[slot]});
      } else {
        free_ = nodes_[node].next;
        nodes_[node] = Node{e, ring_[slot]};
      }
      ring_[slot] = node;
      nonempty_[slot / 64] |= uint64_t{1} << (slot % 64);
      ++in_ring_;
    } else {
      far_.push(e);
    }
  }

  // The earliest event; the queue must not be empty.
  Event pop() noexcept {
    if (near_.empty()) advance();
    --size_;
    return near_.pop();
  }

 private:
  // Makes the earliest non-empty bucket current and loads it into near_ (which is empty).
  // Returns false when there are no events at all.
  bool advance() {
    if (size_ == 0) return false;
    int64_t next = INT64_MAX;
    if (in_ring_ > 0) next = current_ + 1 + next_nonempty(current_ + 1);
    if (!far_.empty()) next = std::min(next, far_.top().time >> kBucketShift);
    current_ = next;
    const auto slot = static_cast<size_t>(next & (kBuckets - 1));
    // A ring slot holds only events of one bucket in (old current, old current + kBuckets);
    // if the far heap's bucket came first, this slot belongs to a later bucket: leave it.
    const uint32_t head = ring_[slot];
    if (head != kNil && (nodes_[head].event.time >> kBucketShift) == next) {
      uint32_t last = head;
      for (uint32_t n = head; n != kNil; n = nodes_[n].next) {
        near_.append(nodes_[n].event);
        --in_ring_;
        last = n;
      }
      nodes_[last].next = free_;  // the whole list goes back to the pool
      free_ = head;
      ring_[slot] = kNil;
      nonempty_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
    }
    while (!far_.empty() && (far_.top().time >> kBucketShift) == next) near_.append(far_.pop());
    near_.heapify();
    return true;
  }
  static constexpr std::array<uint32_t, kBuckets> filled_ring() {
    std::array<uint32_t, kBuckets> r{};
    r.fill(kNil);
    return r;
  }
  // Distance from bucket `from` to the first non-empty ring slot at or after it (circular).
  int64_t next_nonempty(int64_t from) const noexcept {
    const auto start = static_cast<size_t>(from & (kBuckets - 1));
    constexpr size_t kWords = kBuckets / 64;
    size_t w = start / 64;
    uint64_t bits = nonempty_[w] & (~uint64_t{0} << (start % 64));
    for (size_t i = 0; i <= kWords; ++i) {
      if (bits != 0) {
        const size_t slot = w * 64 + static_cast<size_t>(std::countr_zero(bits));
        return static_cast<int64_t>((slot - start) & (kBuckets - 1));
      }
      w = (w + 1) % kWords;
      bits = nonempty_[w];
    }
    return 0;  // unreachable while in_ring_ > 0
  }

  static constexpr uint32_t kNil = UINT32_MAX;
  struct Node {
    Event event;
    uint32_t next;  // the next node of the same bucket, or kNil
  };
  EventHeap near_;  // the current bucket (and anything scheduled at or before it)
  std::vector<Node> nodes_;  // the ring's lists; grows to the peak the ring held, then reused
  uint32_t free_ = kNil;
  std::array<uint32_t, kBuckets> ring_ = filled_ring();
  std::array<uint64_t, kBuckets / 64> nonempty_{};
  EventHeap far_;  // kBuckets or more buckets after the current one when scheduled
  int64_t current_ = 0;
  size_t size_ = 0;
  size_t in_ring_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace uet::sim
