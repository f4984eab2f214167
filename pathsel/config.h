// Path selection: which entropy value (EV) each packet of a PDC carries (spec/uet.md §2.4).
// One config struct for every selector (STYLE.md 7); the selectors
// themselves are pure engines in fixed_ev.h, oblivious.h, reps.h, bitmap.h and mixed.h,
// dispatched by path_selector.h.
//
// A selector speaks in EV *indices* 0..ev_count-1. The transport turns an index into the
// 16 bits that travel on the wire (the UDP source port, or the entropy header), so the
// selectors know nothing of ports or hashing.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "transport/time.h"

namespace uet::pathsel {

enum class Algorithm : uint8_t {
  kFixed,      // one EV per PDC: single-path ECMP, what RoCEv2 gets
  kOblivious,  // spray: every EV once per round, in a new random order each round
  kReps,       // recycle the EVs of unmarked ACKs, explore otherwise, freeze on failure
  kBitmap,     // spray, skipping EVs penalised by ECN, NACKs and timeouts
  kMixed,      // REPS's recycled EVs first, else the bitmap's spraying (mixed.h)
};
inline constexpr int kNumAlgorithms = 5;

const char* to_string(Algorithm a) noexcept;

struct PathSelConfig {
  Algorithm algorithm = Algorithm::kOblivious;
  // EVs to choose from, 1..16384 (the UET engine sends the EV in the UDP source port's
  // dynamic range 49152..65535, which holds 16384 values). 1 makes every selector a fixed EV.
  uint32_t ev_count = 1;

  // REPS (Bonato et al., arXiv:2407.21625), with the constants of the UEC simulator
  // (ultraethernet/uet-htsim @40ccb05, htsim/sim/buffer_reps.cpp and uec_mp.cpp UecMpReps):
  uint32_t reps_buffer = 8;                 // recycled EVs kept (repsBufferSize = 8), 1..32
  bool reps_freezing = true;                // freeze on a timeout (repsUseFreezing = true)
  Time reps_freeze = 10 * kMillisecond;     // how long (exit_freeze_after = 1e10 ps)
  uint32_t reps_explore_after_freeze = 16;  // random EVs after thawing (explore_counter = 16)

  // Bitmap, after uet-htsim's UecMpBitmap: a penalty per EV, added on bad news and taken
  // down by one each time the spraying order skips the EV (the first skipped per packet).
  uint32_t bitmap_ecn_penalty = 1;   // an ECN-marked ACK (htsim: 1)
  uint32_t bitmap_nack_penalty = 4;  // a NACK or an inferred loss (htsim: 4)
  uint32_t bitmap_max_penalty = 15;  // the cap, and what a timeout sets (htsim: _max_penalty 15)

  // Checks every field; the message names the field and its valid range, e.g.
  // "pathsel.ev_count must be in 1..16384, got 0".
  absl::Status validate() const;
};

}  // namespace uet::pathsel
