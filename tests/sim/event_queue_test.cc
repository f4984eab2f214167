// The calendar event list against a reference: one binary heap on (time, key, kind).
#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <queue>
#include <vector>

#include "sim/rng.h"

namespace uet::sim {
namespace {

struct Later {
  bool operator()(const Event& x, const Event& y) const { return EventHeap::before(y, x); }
};

// The queue under test beside the reference heap, fed the same events. Keys are unique:
// the scheduling order (as a single global counter would give), or random high bits above
// it, so that an event often has a smaller key than ones scheduled before it (as the
// simulator's per-target keys do), including ones already popped at the same time.
struct AgainstHeap {
  explicit AgainstHeap(uint64_t seed) : rng(seed), random_keys(seed % 2 == 0) {}
  void push(Time t) {
    const auto a = static_cast<uint32_t>(rng.next());
    const uint64_t key = random_keys ? rng.below(1 << 20) << 24 | seq : seq;
    q.push(t, static_cast<uint8_t>(seq % 8), a, static_cast<uint32_t>(seq), key);
    ref.push(Event{t, (key << 8) | (seq % 8), a, static_cast<uint32_t>(seq)});
    ++seq;
  }
  // Pops both and asserts they agree; returns the event's time.
  Time pop_matches() {
    const Event e = q.pop();
    const Event x = ref.top();
    ref.pop();
    EXPECT_EQ(e.time, x.time);
    EXPECT_EQ(e.key_kind, x.key_kind);
    EXPECT_EQ(e.a, x.a);
    EXPECT_EQ(e.b, x.b);
    return e.time;
  }
  // Pops a random number of events (up to all), each checked (with `peek`, the queue's next
  // time first); after one in `one_in` pushes a new one up to `within` after it, into the
  // current bucket. Returns the last time popped (`now` if none); stops at a failure.
  Time pop_some(Time now, bool peek, uint64_t one_in, Time within) {
    const uint64_t pops = rng.below(ref.size() + 1);
    for (uint64_t i = 0; i < pops && !::testing::Test::HasFailure(); ++i) {
      if (peek) {
        EXPECT_EQ(q.next_time(), ref.top().time);
      }
      now = pop_matches();
      if (rng.below(one_in) == 0) push(now + static_cast<Time>(rng.below(within)));
    }
    EXPECT_EQ(q.size(), ref.size());
    return now;
  }
  // Pops everything left, in the heap's order.
  void drain_matches() {
    while (!ref.empty() && !::testing::Test::HasFailure()) pop_matches();
    EXPECT_TRUE(q.empty());
  }
  Rng rng;
  EventQueue q;
  std::priority_queue<Event, std::vector<Event>, Later> ref;
  bool random_keys;
  uint64_t seq = 0;
};

// Random pushes (ties, near and far times, pushes behind the current bucket after a peek)
// interleaved with pops. Expect: the exact order of a single (time, key, kind) heap.
TEST(EventQueue_Order, MatchesOneGlobalHeapIncludingTies) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    AgainstHeap h(seed);
    Rng& rng = h.rng;
    EventQueue& q = h.q;
    auto& ref = h.ref;
    Time now = 0;
    for (int step = 0; step < 200000; ++step) {
      const uint64_t r = rng.below(100);
      if (r < 55 || ref.empty()) {
        Time dt = 0;
        const uint64_t kind = rng.below(10);
        if (kind < 3) dt = static_cast<Time>(rng.below(4));                 // ties, same bucket
        else if (kind < 8) dt = static_cast<Time>(rng.below(2'000'000));     // within the ring
        else if (kind < 9) dt = static_cast<Time>(rng.below(50'000'000));    // far
        else dt = static_cast<Time>(rng.below(5'000'000'000));               // very far
        h.push(now + dt);
      } else if (r < 60) {
        // Peek (may make a later bucket current), then schedule behind it, as run_until does
        // when it stops at `until` before the next event.
        ASSERT_EQ(q.next_time(), ref.top().time);
        h.push(now + static_cast<Time>(rng.below(3)));
      } else {
        ASSERT_EQ(q.next_time(), ref.top().time);
        now = h.pop_matches();
        ASSERT_FALSE(HasFailure());
      }
      ASSERT_EQ(q.size(), ref.size());
    }
    h.drain_matches();
    EXPECT_EQ(q.next_time(), kNever);
  }
}

// Dense buckets (hundreds of events per 4 ns bucket, many at the same picosecond, as a
// fabric whose hosts move in lockstep makes them), some scheduled while their bucket was
// still beyond the ring (far) and later ones into the same bucket through the ring.
// Expect: the exact order of a single (time, key, kind) heap.
TEST(EventQueue_Order, DenseBucketsWithFarAndRingEventsMatchOneGlobalHeap) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    AgainstHeap h(seed);
    Rng& rng = h.rng;
    Time now = 0;
    for (int round = 0; round < 300; ++round) {
      // A burst: a few distinct times (ties) and a spread over a few buckets, near and far.
      const Time base = now + static_cast<Time>(rng.below(3)) * EventQueue::kBuckets *
                                  (Time{1} << EventQueue::kBucketShift);
      const uint64_t burst = 1 + rng.below(600);
      for (uint64_t i = 0; i < burst; ++i) {
        const Time dt = rng.below(2) == 0 ? static_cast<Time>(rng.below(4) * 1000)
                                          : static_cast<Time>(rng.below(40'000));
        h.push(base + dt);
      }
      now = h.pop_some(now, /*peek=*/true, 8, 5000);
      ASSERT_FALSE(HasFailure());
    }
    h.drain_matches();
  }
}

// Buckets filled by a few runs each in time order (with ties), as a fabric scheduling at
// fixed delays after ever later times makes them: one run, a few (merged), or more than
// EventQueue::kMaxRuns (radix-sorted); runs may span bucket boundaries.
// Expect: the exact order of a single (time, key, kind) heap.
TEST(EventQueue_Order, BucketsOfFewSortedRunsMatchOneGlobalHeap) {
  constexpr Time kBucket = Time{1} << EventQueue::kBucketShift;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    AgainstHeap h(seed);
    Rng& rng = h.rng;
    Time now = 0;
    for (int round = 0; round < 400; ++round) {
      const Time base = (now / kBucket + 1 + static_cast<Time>(rng.below(8))) * kBucket;
      const uint64_t runs = 1 + rng.below(2 * EventQueue::kMaxRuns);
      for (uint64_t r = 0; r < runs; ++r) {
        Time t = base + static_cast<Time>(rng.below(kBucket));
        const uint64_t len = 1 + rng.below(80);
        for (uint64_t i = 0; i < len; ++i) {
          h.push(t);
          if (rng.below(3) != 0) t += static_cast<Time>(rng.below(kBucket / 16));  // else a tie
        }
      }
      now = h.pop_some(now, /*peek=*/false, 16, kBucket);
      ASSERT_FALSE(HasFailure());
    }
    h.drain_matches();
  }
}

// One crowded bucket (thousands of events within 4 ns, as every host of a large fabric starting
// at once makes), then pushes into it while it is popped: most land deep inside it, beyond
// what the queue shifts in place, some at times already passed (peeked behind, as run_until
// stops). Expect: the exact order of a single (time, key, kind) heap, ties included.
TEST(EventQueue_Order, PushesDeepIntoACrowdedBucketMatchOneGlobalHeap) {
  constexpr Time kBucket = Time{1} << EventQueue::kBucketShift;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    AgainstHeap h(seed);
    Rng& rng = h.rng;
    auto& ref = h.ref;
    for (int i = 0; i < 5000; ++i) h.push(static_cast<Time>(rng.below(kBucket)));
    Time now = 0;
    while (!ref.empty()) {
      now = h.pop_matches();
      ASSERT_FALSE(HasFailure());
      const uint64_t r = rng.below(4);
      if (r == 0) h.push(now + static_cast<Time>(rng.below(kBucket - now % kBucket)));
      if (r == 1) h.push(now);  // a tie at the current time, its key maybe below popped ones
      if (r == 2 && h.seq < 20000) {
        h.push(now + static_cast<Time>(rng.below(3 * kBucket)));
        ASSERT_EQ(h.q.next_time(), ref.top().time);
      }
      ASSERT_EQ(h.q.size(), ref.size());
    }
    h.drain_matches();
  }
}

}  // namespace
}  // namespace uet::sim
