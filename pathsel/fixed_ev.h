// FixedEv: one EV for the PDC's lifetime, chosen once from the seed. Every packet hashes to
// the same path: the single-path ECMP baseline (what a RoCEv2 QP gets from its one UDP
// source port). Feedback changes nothing.
#pragma once

#include <cstdint>

#include "pathsel/config.h"
#include "pathsel/rng.h"

namespace uet::pathsel {

class FixedEv {
 public:
  FixedEv() = default;  // EV 0
  FixedEv(const PathSelConfig& c, uint64_t seed) noexcept
      : ev_(static_cast<uint16_t>(Rng(seed).below(c.ev_count))) {}

  uint16_t next_ev(Time) noexcept { return ev_; }
  void on_ack(uint16_t, bool, Time) noexcept {}
  void on_nack(uint16_t, Time) noexcept {}
  void on_timeout(uint16_t, Time) noexcept {}

 private:
  uint16_t ev_ = 0;
};

}  // namespace uet::pathsel
