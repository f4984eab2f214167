// The simulator's event list: a calendar of time buckets, each sorted once when it becomes
// current; 16-byte events in the ring and the current bucket, 24-byte ones in the heaps.
//
// Total order: (time, key, kind). The key is the caller's (48 bits): the simulator derives it
// from the port or host that schedules the event and that scheduler's own counter, never
// from a global count, so events at the same picosecond run in an order that does not depend
// on which other events a process holds (a fabric split over processes runs them as one
// process does), and a run is a pure function of its inputs and seed. An event scheduled at
// the current time with a smaller key than those already popped is simply the next one
// popped. Equal (time, key, kind) come out in an unspecified order: callers keep keys unique.
// No allocation per event once the arrays have grown to the run's peak size; no virtual call
// per event (the simulator switches on `kind`).
//
// Layout (an exact calendar queue): time is cut into buckets of 2^kBucketShift ps. The events
// of the next kBuckets - 1 buckets are appended, in scheduling order, to a ring of per-bucket
// lists of 16-event chunks (one pool with a free list, so memory follows the events pending,
// not the busiest bucket; a bitmap says which lists are non-empty); later ones go to `far_`, a
// heap on (time, key). When the current bucket is used up, the earliest non-empty bucket (ring
// or far heap) becomes current: its far events, then its ring chunks, are copied into `cur_`,
// and sorted on (time, key): a radix sort on the time's 12-bit offset within the bucket,
// then order_ties() sorts each group of equal times that is not in key order. Most buckets need less: cur_ is often a few runs already in order
// (events scheduled at one delay after times that only grow), so up to kMaxRuns runs are
// merged instead. An event scheduled into the current bucket after it was loaded (rare: less
// than 4 ns ahead) is inserted at its place, or at the next position if its place was popped
// already (into `late_` when that would move more than kMaxShift events); one scheduled
// before it (only after run_until stopped short of the current bucket) goes to `late_`, a
// small heap merged at pop. Every event in the ring or far heap
// belongs to a later bucket than every event in `cur_` and `late_`, so pops come out in
// exactly the order of one global heap on (time, key, kind): no per-event heap work, and the
// chunks are read sequentially instead of one pointer chase per event.
//
// Inside a bucket an event's time is its 12-bit offset from the bucket's start, so the ring
// and cur_ hold 16-byte Nodes (offset, key and kind in one word, in that order from the top,
// so that words order as (time, key, kind) within a bucket; then a and b):
// a third less memory traffic per push, sort and pop than the 24-byte Event that pop()
// returns. The heaps (few events) keep whole Events.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "transport/transport.h"

namespace uet::sim {

// 24 bytes: the key (48 bits) and the kind share one word.
struct Event {
  Time time;
  uint64_t key_kind;  // key << 8 | kind
  uint32_t a;         // meaning per kind: usually a port, host or link index
  uint32_t b;         // meaning per kind: usually a frame id or a generation number
  uint8_t kind() const noexcept { return static_cast<uint8_t>(key_kind); }
};
static_assert(sizeof(Event) == 24);

// A 4-ary min-heap of events on (time, key, kind).
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
    return x.time < y.time || (x.time == y.time && x.key_kind < y.key_kind);
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
  static constexpr uint32_t kChunkEvents = 16;  // events per ring chunk (256 bytes)
  static constexpr int kKindBits = 4;  // kinds 0..15
  static constexpr int kKeyBits = 48;
  static constexpr uint64_t kMaxKey = (uint64_t{1} << kKeyBits) - 1;
  static constexpr int kOffsetShift = kKindBits + kKeyBits;  // the offset's 12 bits on top
  static_assert(kOffsetShift + kBucketShift == 64);
  static constexpr size_t kMaxRuns = 4;  // a bucket of more sorted runs is radix-sorted
  static constexpr ptrdiff_t kMaxShift = 256;  // events a push into the current bucket moves

  // An event inside the ring or the current bucket (16 bytes): its bucket is implicit.
  struct Node {
    uint64_t word;  // (time offset in the bucket) << 52 | key << 4 | kind
    uint32_t a;
    uint32_t b;
    uint8_t kind() const noexcept { return static_cast<uint8_t>(word & 15); }
    uint32_t offset() const noexcept { return static_cast<uint32_t>(word >> kOffsetShift); }
    uint64_t key() const noexcept { return (word >> kKindBits) & kMaxKey; }
    // The word of an Event's key_kind: the comparison from_late needs.
    uint64_t key_kind() const noexcept { return key() << 8 | kind(); }
  };
  static_assert(sizeof(Node) == 16);

  // The current bucket's array: a vector of Nodes that leaves what it grows by uninitialised
  // and appends a ring chunk as one fixed-size copy (inline moves, no memcpy call per chunk).
  class NodeArray {
   public:
    size_t size() const noexcept { return size_; }
    Node* data() noexcept { return v_.get(); }
    const Node* data() const noexcept { return v_.get(); }
    Node& operator[](size_t i) noexcept { return v_[i]; }
    const Node& operator[](size_t i) const noexcept { return v_[i]; }
    Node* begin() noexcept { return v_.get(); }
    Node* end() noexcept { return v_.get() + size_; }
    const Node* begin() const noexcept { return v_.get(); }
    const Node* end() const noexcept { return v_.get() + size_; }
    void clear() noexcept { size_ = 0; }
    void reserve(size_t n) {
      if (n > cap_) regrow(n);
    }
    void push_back(const Node& n) {
      reserve(size_ + 1);
      v_[size_++] = n;
    }
    void insert(const Node* at, const Node& n) {
      const auto i = static_cast<size_t>(at - v_.get());
      reserve(size_ + 1);
      std::memmove(v_.get() + i + 1, v_.get() + i, (size_ - i) * sizeof(Node));
      v_[i] = n;
      ++size_;
    }
    // Appends the first `count` events of `ev` (it copies all of them: room is kept).
    void append_chunk(const Node (&ev)[kChunkEvents], uint32_t count) {
      reserve(size_ + kChunkEvents);
      std::memcpy(v_.get() + size_, ev, sizeof(ev));
      size_ += count;
    }

   private:
    void regrow(size_t n) {
      n = std::max(n, 2 * cap_);
      auto next = std::make_unique_for_overwrite<Node[]>(n);
      if (size_ > 0) std::memcpy(next.get(), v_.get(), size_ * sizeof(Node));
      v_ = std::move(next);
      cap_ = n;
    }
    std::unique_ptr<Node[]> v_;
    size_t size_ = 0;
    size_t cap_ = 0;
  };

  void reserve(size_t n) {
    cur_.reserve(4096);
    (void)scratch(4096);
    far_.reserve(n);
  }
  // Pending events: pushed minus popped.
  bool empty() const noexcept { return pushed_ == popped_; }
  size_t size() const noexcept { return static_cast<size_t>(pushed_ - popped_); }
  // The earliest event's time (kNever if none). Not const: it may make a later bucket current.
  Time next_time() noexcept {
    if (pos_ == cur_.size() && late_.empty() && !advance()) return kNever;
    return from_late() ? late_.top().time : time_of(cur_[pos_]);
  }
  uint64_t scheduled() const noexcept { return pushed_; }
  // The current bucket from its next event on: window(n)[k], k < n, is what ahead(k) returns
  // (the same hint, with one bounds check for several k).
  const Node* window(size_t& n) const noexcept {
    n = cur_.size() - pos_;
    return cur_.data() + pos_;
  }
  // The event `k` places after the next one in the current bucket, if it holds that many
  // (events scheduled into the current bucket since it was loaded may come before it): a hint
  // for prefetching what that event will touch, never for deciding anything.
  const Node* ahead(size_t k) const noexcept {
    return pos_ + k < cur_.size() ? &cur_[pos_ + k] : nullptr;
  }

  // `kind` < 16, `key` <= kMaxKey. The common case (a ring slot whose tail chunk has room) is
  // inline; the rest (a new chunk, the far heap, late_) is push_slow().
  void push(Time t, uint8_t kind, uint32_t a, uint32_t b, uint64_t key) {
    ++pushed_;
    const int64_t ahead = (t >> kBucketShift) - current_;
    if (ahead > 0 && ahead < kBuckets) [[likely]] {
      const auto slot = static_cast<size_t>((t >> kBucketShift) & (kBuckets - 1));
      // The fill level lives beside the list heads (a few KiB, cached), so appending only
      // stores into the chunk: no load from it to wait for.
      const uint32_t c = tail_[slot];
      const uint32_t fill = fill_[slot];
      if (c != kNil && fill != kChunkEvents) [[likely]] {
        Node& n = chunks_[c].ev[fill];
        n.word = node_word(key, t, kind);
        n.a = a;
        n.b = b;
        fill_[slot] = fill + 1;
        return;
      }
    }
    push_slow(t, kind, a, b, key);
  }

  // What the event loop needs of a popped event: all but the key, which only orders the list
  // (so the loop does not rebuild it from the Node's word).
  struct Due {
    Time time;
    uint32_t a;
    uint32_t b;
    uint8_t kind;
  };

  // Pops the earliest event into `e` if there is one at or before `until`: the same as
  // `!empty() && next_time() <= until` then pop(), deciding from the same comparisons once.
  bool pop_until(Time until, Due& e) noexcept {
    // The common case inline (the current bucket has events and none came late); the rest
    // (loading the next bucket, merging late_) out of line, so the loop saves no registers.
    if (pos_ < cur_.size() && late_.empty()) [[likely]] return take_current(until, e);
    return pop_until_slow(until, e);
  }

 private:
  // Pops cur_[pos_] into `e` unless it is after `until`.
  [[gnu::always_inline]] bool take_current(Time until, Due& e) noexcept {
    const Node n = cur_[pos_];
    const Time t = time_of(n);
    if (t > until) return false;
    ++pos_;
    ++popped_;
    e = Due{t, n.a, n.b, n.kind()};
    return true;
  }

  [[gnu::noinline]] bool pop_until_slow(Time until, Due& e) noexcept {
    if (pos_ == cur_.size() && late_.empty() && !advance()) return false;
    if (from_late()) [[unlikely]] {
      if (late_.top().time > until) return false;
      ++popped_;
      const Event l = late_.pop();
      e = Due{l.time, l.a, l.b, l.kind()};
      return true;
    }
    return take_current(until, e);
  }

 public:
  // The earliest event; the queue must not be empty.
  Event pop() noexcept {
    if (pos_ == cur_.size() && late_.empty()) advance();
    ++popped_;
    if (from_late()) [[unlikely]] return late_.pop();
    const Node n = cur_[pos_++];
    return Event{time_of(n), n.key_kind(), n.a, n.b};
  }

 private:
  [[gnu::noinline]] void push_slow(Time t, uint8_t kind, uint32_t a, uint32_t b, uint64_t key) {
    const int64_t bucket = t >> kBucketShift;
    if (bucket == current_) {
      // Into the sorted current bucket at its place on (time, key): where one heap would pop
      // it (at pos_ if that place was popped already: it is then the earliest pending). A
      // shift of the bucket's tail, rarely (events less than a bucket ahead), instead of a
      // heap merged into every later pop of the bucket.
      const Node n{node_word(key, t, kind), a, b};
      const auto at =
          std::upper_bound(cur_.begin() + pos_, cur_.end(), n,
                           [](const Node& x, const Node& y) { return x.word < y.word; });
      // A long tail (a crowded bucket: every host of a large fabric starting at once) goes to
      // late_ instead, which pops in the same order: shifting it each time would be quadratic.
      if (cur_.end() - at <= kMaxShift) {
        cur_.insert(at, n);
      } else {
        late_.push(Event{t, (key << 8) | kind, a, b});
      }
    } else if (bucket < current_) {
      late_.push(Event{t, (key << 8) | kind, a, b});
    } else if (bucket - current_ < kBuckets) {
      const auto slot = static_cast<size_t>(bucket & (kBuckets - 1));
      uint32_t c = tail_[slot];
      const uint32_t fresh = new_chunk();  // the slot is empty or its tail chunk is full
      if (c == kNil) {
        head_[slot] = fresh;
        bucket_[slot] = bucket;
        nonempty_[slot / 64] |= uint64_t{1} << (slot % 64);
      } else {
        next_[c] = fresh;
      }
      tail_[slot] = c = fresh;
      Node& n = chunks_[c].ev[0];
      n.word = node_word(key, t, kind);
      n.a = a;
      n.b = b;
      fill_[slot] = 1;
    } else {
      far_.push(Event{t, (key << 8) | kind, a, b});
    }
  }
  static uint64_t node_word(uint64_t key, Time t, uint8_t kind) noexcept {
    return (static_cast<uint64_t>(t) & 4095) << kOffsetShift | key << kKindBits | kind;
  }
  Time time_of(const Node& n) const noexcept {
    return (current_ << kBucketShift) | static_cast<Time>(n.offset());
  }
  // Whether the earliest event is in late_ rather than at cur_[pos_] (one of them is not empty).
  bool from_late() const noexcept {
    if (late_.empty()) return false;
    if (pos_ == cur_.size()) return true;
    const Event& l = late_.top();
    const Time t = time_of(cur_[pos_]);
    return l.time < t || (l.time == t && l.key_kind < cur_[pos_].key_kind());
  }
  uint32_t new_chunk() {
    uint32_t c = free_;
    if (c == kNil) {
      c = static_cast<uint32_t>(chunks_.size());
      chunks_.emplace_back();
      next_.push_back(kNil);
    } else {
      free_ = next_[c];
    }
    next_[c] = kNil;
    return c;
  }
  // Makes the earliest non-empty bucket current and loads it, sorted, into cur_ (cur_ is
  // used up and late_ empty). Returns false when there are no events at all.
  bool advance() {
    if (empty()) return false;
    int64_t next = INT64_MAX;
    if (const int64_t d = next_nonempty(current_ + 1); d >= 0) next = current_ + 1 + d;
    if (!far_.empty()) next = std::min(next, far_.top().time >> kBucketShift);
    current_ = next;
    cur_.clear();
    pos_ = 0;
    // The far heap's events of this bucket first (in order), then the ring's chunks (in
    // scheduling order); sort_current orders them all.
    while (!far_.empty() && (far_.top().time >> kBucketShift) == next) {
      const Event e = far_.pop();
      cur_.push_back(Node{node_word(e.key_kind >> 8, e.time, e.kind()), e.a, e.b});
    }
    const auto slot = static_cast<size_t>(next & (kBuckets - 1));
    // A ring slot holds only events of one bucket in (old current, old current + kBuckets);
    // if the far heap's bucket came first, this slot belongs to a later bucket: leave it.
    const uint32_t head = head_[slot];
    if (head != kNil && bucket_[slot] == next) {
      for (uint32_t c = head; c != kNil; c = next_[c]) {
        const uint32_t count = next_[c] == kNil ? fill_[slot] : kChunkEvents;  // all but the tail are full
        cur_.append_chunk(chunks_[c].ev, count);
      }
      next_[tail_[slot]] = free_;  // the whole list goes back to the pool
      free_ = head;
      head_[slot] = tail_[slot] = kNil;
      fill_[slot] = 0;
      nonempty_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
    }
    sort_current();
    return true;
  }
  // Sorts cur_ on (offset, key, kind), which is the order of the Nodes' words.
  void sort_current() {
    const size_t n = cur_.size();
    Node* const v = cur_.data();
    if (n <= 32) {  // small buckets: insertion sort
      for (size_t i = 1; i < n; ++i) {
        const Node e = v[i];
        size_t j = i;
        for (; j > 0 && e.word < v[j - 1].word; --j) v[j] = v[j - 1];
        v[j] = e;
      }
      return;
    }
    // Each maximal run of non-decreasing times is in time order, and merging the runs orders
    // the bucket by time; order_ties() then orders equal times by key. In sim_bench most
    // buckets are one run (no work: events scheduled at one fixed delay after ever later
    // times) or two to four (one or two merge passes against the radix sort's three); more
    // fall back to the radix sort.
    std::array<size_t, kMaxRuns + 1> bound;  // run r is [bound[r], bound[r + 1])
    size_t runs = 1;
    bound[0] = 0;
    uint64_t prev = v[0].word;
    bool ties_unordered = false;  // within a run: an equal time with a smaller key
    for (size_t i = 1; i < n; ++i) {
      const uint64_t w = v[i].word;
      if (w < prev) [[unlikely]] {
        if ((w ^ prev) >> kOffsetShift != 0) {
          if (runs == kMaxRuns) return radix_sort_current();
          bound[runs++] = i;
        } else {
          ties_unordered = true;
        }
      }
      prev = w;
    }
    if (runs == 1) {
      if (ties_unordered) order_ties();
      return;
    }
    bound[runs] = n;
    const auto by_time = [](const Node& x, const Node& y) {
      return x.word >> kOffsetShift < y.word >> kOffsetShift;
    };
    // Merge passes, pairwise, between cur_ and the scratch buffer.
    Node* from = v;
    Node* to = scratch(n);
    while (runs > 1) {
      size_t merged = 0;
      for (size_t r = 0; r < runs; r += 2) {
        if (r + 1 == runs) {
          std::copy(from + bound[r], from + bound[r + 1], to + bound[r]);
        } else {
          std::merge(from + bound[r], from + bound[r + 1], from + bound[r + 1],
                     from + bound[r + 2], to + bound[r], by_time);
        }
        bound[merged++] = bound[r];
      }
      bound[merged] = n;
      runs = merged;
      std::swap(from, to);
    }
    if (from != v) std::copy(from, from + n, v);
    order_ties();
  }
  // cur_ is in time order: puts each run of equal times in key order. One compare per event
  // when they are (the common case: most times are unique, or their events were scheduled
  // in key order); a group that is not is sorted whole (a quadratic insertion would not do:
  // a thousand hosts' events at one picosecond, scheduled in reverse key order, happen).
  void order_ties() {
    Node* const v = cur_.data();
    const size_t n = cur_.size();
    const auto by_word = [](const Node& x, const Node& y) { return x.word < y.word; };
    for (size_t i = 1; i < n; ++i) {
      if (v[i].word >= v[i - 1].word) [[likely]] continue;
      const uint64_t t = v[i].word >> kOffsetShift;
      size_t begin = i - 1;
      while (begin > 0 && v[begin - 1].word >> kOffsetShift == t) --begin;
      size_t end = i + 1;
      while (end < n && v[end].word >> kOffsetShift == t) ++end;
      std::sort(v + begin, v + end, by_word);
      i = end;
    }
  }
  // Two radix passes on the offset (12 bits), then the keys of equal offsets (order_ties).
  void radix_sort_current() {
    const size_t n = cur_.size();
    const auto key = [](const Node& x) { return x.offset(); };
    static_assert(kBucketShift == 12, "two 6-bit radix passes");
    std::array<uint32_t, 65> lo{}, hi{};
    for (const Node& e : cur_) {
      const uint32_t off = key(e);
      ++lo[(off & 63) + 1];
      ++hi[(off >> 6) + 1];
    }
    for (size_t i = 1; i < 65; ++i) {
      lo[i] += lo[i - 1];
      hi[i] += hi[i - 1];
    }
    Node* const tmp = scratch(n);
    for (const Node& e : cur_) tmp[lo[key(e) & 63]++] = e;
    for (size_t i = 0; i < n; ++i) cur_[hi[key(tmp[i]) >> 6]++] = tmp[i];
    order_ties();
  }
  // Sort scratch space for n Nodes, left uninitialised (a vector would zero it per bucket).
  Node* scratch(size_t n) {
    if (n > tmp_size_) {
      tmp_size_ = std::max(n, 2 * tmp_size_);
      tmp_ = std::make_unique_for_overwrite<Node[]>(tmp_size_);
    }
    return tmp_.get();
  }
  static constexpr std::array<uint32_t, kBuckets> filled_ring() {
    std::array<uint32_t, kBuckets> r{};
    r.fill(kNil);
    return r;
  }
  // Distance from bucket `from` to the first non-empty ring slot at or after it (circular);
  // -1 if the ring is empty.
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
    return -1;
  }

  static constexpr uint32_t kNil = UINT32_MAX;
  struct alignas(64) Chunk {
    Node ev[kChunkEvents];
  };
  static_assert(sizeof(Chunk) == 256);
  NodeArray cur_;  // the current bucket, sorted; cur_[pos_] is its next event
  size_t pos_ = 0;
  // Scheduled before the current bucket after it was loaded (run_until stopped), or into it
  // ahead of more than kMaxShift of its events.
  EventHeap late_;
  std::unique_ptr<Node[]> tmp_;  // sort scratch (scratch())
  size_t tmp_size_ = 0;
  // The ring: per slot a list of chunks in scheduling order, from one pool with a free list,
  // so memory follows the events pending, not the busiest bucket.
  std::vector<Chunk> chunks_;
  std::vector<uint32_t> next_;  // per chunk: the next chunk of its bucket (or free list), or kNil
  uint32_t free_ = kNil;
  std::array<uint32_t, kBuckets> head_ = filled_ring();
  std::array<uint32_t, kBuckets> tail_ = filled_ring();
  std::array<uint32_t, kBuckets> fill_{};  // events in the slot's tail chunk
  std::array<int64_t, kBuckets> bucket_{};  // the bucket a non-empty slot's list belongs to
  std::array<uint64_t, kBuckets / 64> nonempty_{};
  EventHeap far_;  // kBuckets or more buckets after the current one when scheduled
  int64_t current_ = 0;
  uint64_t popped_ = 0;
  uint64_t pushed_ = 0;
};

}  // namespace uet::sim
