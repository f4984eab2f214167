// Oblivious: spray over all EVs regardless of feedback, as uet-htsim's UecMpOblivious
// (htsim/sim/uec_mp.cpp @40ccb05): an index counts through the EV space and is XORed with a
// random value drawn anew at each wrap, so every round of ev_count packets uses every EV
// exactly once, in a different order each round.
//
// htsim needs a power-of-two EV count; here the walk runs over the next power of two and
// skips indices >= ev_count, which keeps "each EV once per round" for any count. A call takes
// at most span - ev_count + 1 steps (span < 2 * ev_count).
#pragma once

#include <bit>
#include <cstdint>

#include "pathsel/config.h"
#include "pathsel/rng.h"

namespace uet::pathsel {

class Oblivious {
 public:
  Oblivious() = default;
  Oblivious(const PathSelConfig& c, uint64_t seed) noexcept
      : n_(c.ev_count), span_(std::bit_ceil(c.ev_count)), rng_(seed) {
    xor_ = rng_.below(span_);
  }

  uint16_t next_ev(Time) noexcept {
    // One EV (span 1): every round is EV 0, and the order drawn at each wrap is always 0 too;
    // the generator serves only that draw, so skipping it changes no EV ever returned.
    if (span_ == 1) return 0;
    for (;;) {
      const uint32_t ev = index_ ^ xor_;
      if (++index_ == span_) {  // a round is over: a new order for the next one
        index_ = 0;
        xor_ = rng_.below(span_);
      }
      if (ev < n_) return static_cast<uint16_t>(ev);
    }
  }
  void on_ack(uint16_t, bool, Time) noexcept {}
  void on_nack(uint16_t, Time) noexcept {}
  void on_timeout(uint16_t, Time) noexcept {}

 private:
  uint32_t n_ = 1;
  uint32_t span_ = 1;   // n_ rounded up to a power of two
  uint32_t index_ = 0;  // position in the current round
  uint32_t xor_ = 0;    // this round's order
  Rng rng_;
};

}  // namespace uet::pathsel
