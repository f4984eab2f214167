// Bitmap: oblivious spraying that skips EVs with bad news, after uet-htsim's UecMpBitmap
// (htsim/sim/uec_mp.cpp @40ccb05). Each EV has a small penalty: an ECN-marked ACK adds
// `bitmap_ecn_penalty` (1), a NACK or inferred loss `bitmap_nack_penalty` (4), a timeout sets
// it to `bitmap_max_penalty` (15, also the cap). next_ev walks the oblivious order (oblivious.h)
// and returns the first EV with no penalty; the first penalised EV it passes on each call is
// forgiven one step, so a penalised EV comes back after being skipped `penalty` times. When
// every EV is penalised the last one looked at is used.
//
// State: one byte per EV, allocated at construction; nothing after.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pathsel/config.h"
#include "pathsel/oblivious.h"

namespace uet::pathsel {

class Bitmap {
 public:
  Bitmap() = default;
  Bitmap(const PathSelConfig& c, uint64_t seed)
      : walk_(c, seed),
        penalty_(c.ev_count, 0),
        ecn_(static_cast<uint8_t>(c.bitmap_ecn_penalty)),
        nack_(static_cast<uint8_t>(c.bitmap_nack_penalty)),
        max_(static_cast<uint8_t>(c.bitmap_max_penalty)) {}

  uint16_t next_ev(Time now) noexcept {
    bool forgave = false;
    uint16_t ev = 0;
    for (size_t tries = 0; tries < penalty_.size(); ++tries) {
      ev = walk_.next_ev(now);
      uint8_t& p = penalty_[ev];
      if (p == 0) return ev;
      if (!forgave) {  // htsim: only the first penalised EV met per packet is forgiven
        --p;
        forgave = true;
      }
    }
    return ev;
  }

  void on_ack(uint16_t ev, bool ecn, Time) noexcept {
    if (ecn) add(ev, ecn_);
  }
  void on_nack(uint16_t ev, Time) noexcept { add(ev, nack_); }
  void on_timeout(uint16_t ev, Time) noexcept { add(ev, max_); }

  // For tests and statistics.
  uint8_t penalty(uint16_t ev) const noexcept { return ev < penalty_.size() ? penalty_[ev] : 0; }

 private:
  void add(uint16_t ev, uint8_t amount) noexcept {
    if (ev >= penalty_.size()) return;
    penalty_[ev] = static_cast<uint8_t>(std::min<uint32_t>(penalty_[ev] + amount, max_));
  }

  Oblivious walk_;
  std::vector<uint8_t> penalty_;  // empty when default-constructed: next_ev() gives EV 0
  uint8_t ecn_ = 1, nack_ = 4, max_ = 15;
};

}  // namespace uet::pathsel
