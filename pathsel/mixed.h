// Mixed: REPS's recycled EVs first, the bitmap's penalty-aware spraying when REPS has none,
// after uet-htsim's UecMpMixed (htsim/sim/uec_mp.cpp @40ccb05, `-load_balancing_algo mixed`).
//
// Plain REPS explores uniformly at random whenever its buffer holds no fresh EV, so a flow
// keeps rediscovering a path it has already lost packets on (a degraded link: its packets
// sit behind a long queue, are resent, and the EV never comes back to be recycled, but the
// next exploration may draw it again). Mixed explores through the bitmap instead, which skips
// EVs penalised by ECN, NACKs, inferred losses and timeouts. Every event feeds both.
//
// State: a Reps and a Bitmap (one byte per EV, allocated at construction); nothing after.
#pragma once

#include <cstdint>

#include "pathsel/bitmap.h"
#include "pathsel/config.h"
#include "pathsel/reps.h"

namespace uet::pathsel {

class Mixed {
 public:
  Mixed() = default;
  // The two engines draw from generators seeded apart.
  Mixed(const PathSelConfig& c, uint64_t seed) : reps_(c, seed), bitmap_(c, ~seed) {}

  uint16_t next_ev(Time now) noexcept {
    uint16_t ev = 0;
    return reps_.take_recycled(now, ev) ? ev : bitmap_.next_ev(now);
  }
  void on_ack(uint16_t ev, bool ecn, Time now) noexcept {
    reps_.on_ack(ev, ecn, now);
    bitmap_.on_ack(ev, ecn, now);
  }
  void on_nack(uint16_t ev, Time now) noexcept {
    reps_.on_nack(ev, now);
    bitmap_.on_nack(ev, now);
  }
  void on_timeout(uint16_t ev, Time now) noexcept {
    reps_.on_timeout(ev, now);
    bitmap_.on_timeout(ev, now);
  }

  // For tests and statistics.
  const Reps& reps() const noexcept { return reps_; }
  const Bitmap& bitmap() const noexcept { return bitmap_; }

 private:
  Reps reps_;
  Bitmap bitmap_;
};

}  // namespace uet::pathsel
