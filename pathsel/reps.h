// REPS, Recycled Entropy Packet Spraying (Bonato et al., arXiv:2407.21625), as the UEC
// simulator implements it: ultraethernet/uet-htsim @40ccb05,
// htsim/sim/uec_mp.cpp (UecMpReps) and htsim/sim/buffer_reps.{h,cpp} (CircularBufferREPS).
//
// - An ACK that came back without ECN puts its EV into a circular buffer of `reps_buffer`
//   (8) EVs, each usable once (repsMaxLifetimeEntropy = 1); the newest overwrites the oldest.
// - next_ev takes the earliest fresh EV in the buffer; with none fresh it explores a random EV.
//   ECN-marked ACKs, NACKs and timeouts recycle nothing, so congested or broken paths drop
//   out of use by themselves.
// - A timeout (when not already frozen and not exploring) freezes REPS for `reps_freeze`
//   (10 ms): it then cycles through the cached EVs, fresh or not, instead of exploring, so
//   it keeps to paths known to work while a failure is routed around. When the freeze is over
//   the buffer is cleared and the next `reps_explore_after_freeze` (16) packets explore.
//
// Differences from htsim: htsim ends a freeze only when feedback arrives; here next_ev()
// ends it too, so a PDC that stopped hearing back does not stay frozen. htsim aborts when a
// freeze is needed without trimming; here freezing is a config switch (reps_freezing).
//
// State: the buffer (at most 32 entries, fixed size) and a few counters; no allocation.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "pathsel/config.h"
#include "pathsel/rng.h"

namespace uet::pathsel {

class Reps {
 public:
  static constexpr uint32_t kMaxBuffer = 32;

  Reps() = default;
  Reps(const PathSelConfig& c, uint64_t seed) noexcept
      : n_(c.ev_count),
        size_(std::clamp<uint32_t>(c.reps_buffer, 1, kMaxBuffer)),
        freezing_(c.reps_freezing),
        freeze_(c.reps_freeze),
        explore_after_freeze_(c.reps_explore_after_freeze),
        rng_(seed) {}

  uint16_t next_ev(Time now) noexcept {
    uint16_t ev = 0;
    return take_recycled(now, ev) ? ev : explore();
  }

  // The next recycled EV, if REPS has one (a fresh cached EV, or while frozen a cached one);
  // false when it would explore: after a freeze (those packets count down here), or with
  // nothing cached to reuse. `mixed` (mixed.h) then explores with the bitmap instead.
  bool take_recycled(Time now, uint16_t& ev) noexcept {
    thaw_if_due(now);
    if (explore_ > 0) {
      --explore_;
      return false;
    }
    if (frozen_ ? count_ == 0 : fresh_ == 0) return false;
    ev = frozen_ ? take_frozen() : take_earliest_fresh();
    return true;
  }

  void on_ack(uint16_t ev, bool ecn, Time now) noexcept {
    thaw_if_due(now);
    if (!ecn) recycle(ev);  // htsim: PATH_GOOD is added in both modes, PATH_ECN never
  }
  void on_nack(uint16_t, Time now) noexcept { thaw_if_due(now); }
  void on_timeout(uint16_t, Time now) noexcept {
    if (freezing_ && !frozen_ && explore_ == 0) {
      frozen_ = true;
      thaw_at_ = now + freeze_;
    }
    thaw_if_due(now);
  }

  // For tests and statistics.
  bool frozen() const noexcept { return frozen_; }
  uint32_t fresh() const noexcept { return fresh_; }   // cached EVs not yet reused
  uint32_t cached() const noexcept { return count_; }  // entries written since the last reset
  uint32_t exploring() const noexcept { return explore_; }

 private:
  struct Entry {
    uint16_t ev = 0;
    bool valid = false;  // fresh: recycled and not yet reused
  };

  uint16_t explore() noexcept { return static_cast<uint16_t>(rng_.below(n_)); }

  // CircularBufferREPS::add: write at head, overwriting the oldest entry.
  void recycle(uint16_t ev) noexcept {
    if (ev >= n_) return;
    Entry& e = buf_[head_];
    if (!e.valid) ++fresh_;
    e = Entry{ev, true};
    head_ = (head_ + 1) % size_;
    count_ = std::min(count_ + 1, size_);
  }

  // CircularBufferREPS::remove_earliest_fresh. Outside a freeze the fresh entries are always
  // the `fresh_` entries just behind head (writes go to head; reuse takes the oldest fresh).
  uint16_t take_earliest_fresh() noexcept {
    Entry& e = buf_[(head_ + size_ - fresh_) % size_];
    e.valid = false;
    --fresh_;
    return e.ev;
  }

  // CircularBufferREPS::remove_frozen: round robin over the cached entries, fresh or not.
  uint16_t take_frozen() noexcept {
    Entry& e = buf_[frozen_head_];
    if (e.valid) {
      e.valid = false;
      --fresh_;
    }
    frozen_head_ = (frozen_head_ + 1) % count_;
    return e.ev;
  }

  void thaw_if_due(Time now) noexcept {
    if (!frozen_ || now <= thaw_at_) return;
    frozen_ = false;
    buf_.fill(Entry{});
    head_ = count_ = fresh_ = frozen_head_ = 0;
    explore_ = explore_after_freeze_;
  }

  uint32_t n_ = 1;
  uint32_t size_ = 8;
  bool freezing_ = true;
  Time freeze_ = 10 * kMillisecond;
  uint32_t explore_after_freeze_ = 16;
  Rng rng_;

  std::array<Entry, kMaxBuffer> buf_{};
  uint32_t head_ = 0;         // next entry written
  uint32_t count_ = 0;        // entries written since the last reset, at most size_
  uint32_t fresh_ = 0;        // valid entries
  uint32_t frozen_head_ = 0;  // next entry reused while frozen
  uint32_t explore_ = 0;      // packets left to explore after a freeze
  bool frozen_ = false;
  Time thaw_at_ = 0;
};

}  // namespace uet::pathsel
