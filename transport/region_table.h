// An endpoint's registered memory regions, by key: both engines' region tables (UET memory
// keys, spec/uet.md §4.2, BAD_MKEY §4.9; RoCEv2 R_Keys, spec/rocev2.md §3.1). A key names a
// slot and the slot's 8-bit generation, as an IB R_Key names an MPT index and an 8-bit key
// byte (IBA 10.6.3.1 "key portion"): deregistering a region moves its slot to the next
// generation, so its key is refused from then on, and a later registration of the slot gets
// a different key.
//
//   key = generation << kIndexBits | (slot + 1)      (slot + 1 >= 1: no key is 0)
//
// A first registration of a slot has generation 0, so its key is slot + 1: 1, 2, 3, ... as
// long as nothing is deregistered. A freed slot waits until kReuseAfter other slots have been
// freed after it (a FIFO), so a key comes back only after 256 registrations of its slot and at
// least 256 x kReuseAfter deregistrations in between. That is the wrap IB has too: a peer still
// holding a key that old reaches whatever region its slot holds then. Keys are only as
// unguessable as slot numbers; a peer that must be kept out needs job-based access (UET §4.1).
//
// Ownership: one table per endpoint, touched by its thread only. It grows by one slot per
// registration beyond the free ones, up to kMaxRegions; find() is the data path's look-up
// (a mask, a bounds check and one compare).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "transport/pool.h"

namespace uet {

struct Region {
  uint8_t* base = nullptr;
  uint64_t length = 0;
  bool stream = false;  // placed with streaming stores (the engines' stream_placement_from)
  uint8_t gen = 0;      // the slot's generation: the high byte of its next key
  uint32_t key = 0;     // the key the region is registered under; 0: the slot is free
};

// Whether [p, p + len) and [lo, lo + n) share a byte (deregister_memory's check of an
// operation's buffers; a null or empty buffer shares none).
inline bool overlaps(const void* p, uint64_t len, const uint8_t* lo, uint64_t n) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(lo);
  return p != nullptr && len > 0 && a < b + n && b < a + len;
}

template <uint32_t kIndexBits>
class RegionTable {
  static_assert(kIndexBits >= 8 && kIndexBits <= 24, "8 generation bits above the index");

 public:
  static constexpr uint32_t kMaxRegions = (uint32_t{1} << kIndexBits) - 1;
  // Freed slots that wait before the oldest of them is reused.
  static constexpr uint32_t kReuseAfter = 64;

  static constexpr uint32_t slot_of(uint64_t key) noexcept {
    return static_cast<uint32_t>(key & kMaxRegions) - 1;
  }
  static constexpr uint32_t key_of(uint32_t slot, uint8_t gen) noexcept {
    return uint32_t{gen} << kIndexBits | (slot + 1);
  }

  // The region `key` names now; null for a key never given, or deregistered since.
  const Region* find(uint64_t key) const noexcept {
    const uint32_t i = slot_of(key);
    return i < made_ && slots_[i].key == key ? &slots_[i] : nullptr;
  }
  // A live region's slot (slot_of of a key find() accepted).
  const Region& operator[](uint32_t slot) const noexcept { return slots_[slot]; }
  // Slots made so far (live or free); the live regions.
  uint32_t slots() const noexcept { return made_; }
  uint32_t live() const noexcept {
    return slots() - static_cast<uint32_t>(free_.size() - free_head_);
  }

  // Registers [base, base + length); `verb` names the caller in a refusal.
  absl::StatusOr<uint32_t> add(uint8_t* base, uint64_t length, bool stream, const char* verb) {
    if (base == nullptr || length == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(verb, ": base must be non-null and length > 0"));
    }
    uint32_t slot;
    if (free_.size() - free_head_ > kReuseAfter ||
        (free_.size() > free_head_ && made_ >= kMaxRegions)) {
      slot = free_[free_head_++];
      if (free_head_ * 2 >= free_.size()) {  // drop the taken half: O(1) amortised
        free_.erase(free_.begin(), free_.begin() + free_head_);
        free_head_ = 0;
      }
    } else if (made_ < kMaxRegions) {
      slot = made_++;
      slots_.emplace_back();
    } else {
      return absl::ResourceExhaustedError(
          absl::StrCat(verb, ": ", kMaxRegions, " regions registered"));
    }
    Region& r = slots_[slot];
    r.base = base;
    r.length = length;
    r.stream = stream;
    r.key = key_of(slot, r.gen);
    return r.key;
  }

  // deregister_memory's precondition (transport/api.h), both engines': `key` names a live
  // region (else NotFound) that none of the endpoint's own posted `what` uses
  // (`using_count(base, length)` counts them; else FailedPrecondition). Nothing changes.
  template <typename Count>
  absl::Status check_deregister(uint64_t key, Count using_count, const char* what) const {
    const Region* r = find(key);
    if (r == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("deregister_memory: key ", key, " names no registered region"));
    }
    if (const uint32_t n = using_count(r->base, r->length); n > 0) {
      return absl::FailedPreconditionError(absl::StrCat("deregister_memory: key ", key, ": ", n,
                                                        " ", what,
                                                        " posted here still use the region; "
                                                        "poll their completions"));
    }
    return absl::OkStatus();
  }

  // Deregisters the region `key` names: its key is refused from now on. The caller has made
  // sure nothing in flight still uses its memory.
  absl::Status remove(uint64_t key, const char* verb) {
    if (find(key) == nullptr) {
      return absl::NotFoundError(absl::StrCat(verb, ": key ", key, " names no registered region"));
    }
    Region& r = slots_[slot_of(key)];
    r = Region{.gen = static_cast<uint8_t>(r.gen + 1)};
    free_.push_back(slot_of(key));
    return absl::OkStatus();
  }

  size_t memory_bytes() const noexcept {
    return slots_.capacity() * sizeof(Region) + free_.capacity() * sizeof(uint32_t);
  }
  // The most memory_bytes() reaches with at most `slots` slots made (the live regions, and up
  // to kReuseAfter + 1 freed ones waiting for reuse). The FIFO keeps fewer taken entries than
  // waiting ones, so it holds fewer than 2 x slots.
  static size_t bytes_bound(uint32_t slots) noexcept {
    const size_t n = slots < kMaxRegions ? slots : kMaxRegions;
    return appended_capacity(n) * sizeof(Region) + appended_capacity(2 * n) * sizeof(uint32_t);
  }

 private:
  std::vector<Region> slots_;
  uint32_t made_ = 0;           // slots_.size(), kept so that find() compares without a division
  std::vector<uint32_t> free_;  // freed slots, oldest first from free_head_
  size_t free_head_ = 0;
};

}  // namespace uet
