// DCQCN reaction point for one RC QP: the sender's rate limiter that reacts to CNPs.
//
// The algorithm is the one of the DCQCN authors' ns-3 code, with the
// equations of Zhu et al., SIGCOMM 2015:
//
//   on CNP:    RT = RC;  α = (1 − g)·α + g;  RC = max(min_rate, RC·(1 − α/2));
//              timer and byte stages back to 0; α timer and rate-increase timer restarted.
//   α timer:   every alpha_period without a CNP, α = (1 − g)·α.
//   increase:  each rate-increase period (timer stage) and each byte_counter bytes sent (byte
//              stage), one step:
//                fast recovery    (both stages < F):  RC = (RT + RC)/2
//                additive         (one stage ≥ F):    RT += ai_rate;             RC = (RT + RC)/2
//                hyper            (both stages ≥ F):  RT += hai_rate·(min − F + 1); RC = (RT +
//                RC)/2
//
// Parameter profile [choice]: g = 1/256, α timer 55 µs, F = 5,
// byte counter 10 MB, min rate 100 Mb/s (the authors' config and htsim); rate-increase timer
// 55 µs (htsim's update period); ai = line/20, hai = line/10 (htsim); initial α = 1 (htsim;
// NVIDIA firmware starts at 1023/1024). The target rate is clamped to RC on every CNP (the
// authors' sample config, CLAMP_TARGET_RATE 1). Not modelled: the hyper-stage halving of the
// timer and byte counter, and NVIDIA's rate_reduce_monitor_period (one cut per CNP here).
//
// When RC is back at line rate the timers stop (no idle wake-ups); the α decays missed while
// stopped are applied when the next CNP arrives, so α is the same as with the timer running.
//
// This is a pure engine: time comes in, a rate comes out; no clock, no allocation, no virtual
// call. It is the reaction-point interface a cc/ implementation must offer to plug into the
// RoCEv2 engine (the RoceReactionPoint concept below); the engine holds one per QP by value.
#pragma once

#include <concepts>
#include <cstdint>

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/time.h"

namespace uet {

struct DcqcnConfig {
  bool enabled = true;                       // false: CNPs are counted, the rate stays at line rate
  double line_rate_gbps = 100;               // the NIC's rate: RC starts and ends here, 1..10000
  double min_rate_gbps = 0.1;                // floor of RC, (0, line]
  double g = 1.0 / 256;                      // α gain, (0, 1]
  double initial_alpha = 1.0;                // [0, 1]
  Time alpha_period = 55 * kMicrosecond;     // α decay period K, 1 µs..1 s
  Time increase_period = 55 * kMicrosecond;  // rate-increase timer T, 1 µs..1 s
  uint64_t byte_counter = 10'000'000;        // bytes per byte-counter stage B, >= 1500
  uint32_t fast_recovery_rounds = 5;         // F, 1..64
  double ai_rate_gbps = 5;                   // additive increase step, [0, line]
  double hai_rate_gbps = 10;                 // hyper increase step, [0, line]

  absl::Status validate() const;

  // Named parameter profiles for a NIC of `line_rate_gbps`:
  //   "htsim"     the default above: htsim's dcqcn.cpp (g 1/256, K = T = 55 us, B 10 MB, F 5,
  //               AI line/20, HAI line/10, min 100 Mb/s, initial alpha 1).
  //   "dcqcn-ns3" the DCQCN authors' ns-3 code and sample config (the SIGCOMM'15 paper's own
  //               implementation; the paper text gives the equations, the config the values):
  //               g 1/256, K 55 us, T 60 us, B 300 MB, F 5, AI 40 Mb/s, HAI 200 Mb/s,
  //               min 100 Mb/s, initial alpha 0.5.
  //   "connectx"  NVIDIA ConnectX firmware defaults: g 5/1024 (dce_tcp_g 1019), alpha updated
  //               every 1 us (dce_tcp_rtt), initial alpha 1023/1024, min 1 Mb/s; and, recalled
  //               but not confirmed by NVIDIA's pages: T 300 us
  //               (rpg_time_reset), B 32767 B (rpg_byte_reset), F 1 (rpg_threshold), AI 5 Mb/s,
  //               HAI 50 Mb/s. Not modelled: rate_reduce_monitor_period (4 us).
  //               With RoceConfig's 50 us CNP interval its small byte counter and F 1 undo
  //               each cut before the next CNP, so without PFC it does not hold a queue
  //               (bench/NOTES.md, "Choices in the sources").
  // Unknown names are refused with the list.
  static absl::StatusOr<DcqcnConfig> preset(std::string_view name, double line_rate_gbps);
};

// What the RoCEv2 engine needs from a reaction point (one object per QP).
template <typename R>
concept RoceReactionPoint = requires(R r, const R cr, const DcqcnConfig* c, Time t, uint32_t n) {
  r.reset(c);                                 // a fresh QP: line rate
  r.on_cnp(t);                                // a CNP for this QP arrived at t
  r.on_sent(n, t);                            // n bytes of data left at t
  r.on_timer(t);                              // t >= next_event()
  { cr.next_event() } -> std::same_as<Time>;  // kNever when idle
  { cr.rate_bps() } -> std::convertible_to<double>;
  { cr.limited() } -> std::same_as<bool>;  // below line rate: the engine paces
  { cr.gap(n) } -> std::same_as<Time>;     // time n bytes take at the current rate
};

class Dcqcn {
 public:
  void reset(const DcqcnConfig* c) noexcept;
  void on_cnp(Time now) noexcept;
  void on_sent(uint32_t bytes, Time now) noexcept;
  void on_timer(Time now) noexcept;

  Time next_event() const noexcept {
    return alpha_next_ < increase_next_ ? alpha_next_ : increase_next_;
  }
  double rate_bps() const noexcept { return rc_; }
  double target_bps() const noexcept { return rt_; }
  double alpha() const noexcept { return alpha_; }
  bool limited() const noexcept { return rc_ < line_; }
  Time gap(uint32_t bytes) const noexcept;
  uint64_t cuts() const noexcept { return cuts_; }

 private:
  void increase() noexcept;
  void stop_if_recovered() noexcept;

  const DcqcnConfig* c_ = nullptr;
  double line_ = 0;
  double rc_ = 0;  // current rate, b/s
  double rt_ = 0;  // target rate, b/s
  double alpha_ = 1;
  Time alpha_next_ = kNever;    // next α decay while running
  Time alpha_resume_ = kNever;  // next α decay that was due when the timers stopped
  Time increase_next_ = kNever;
  uint32_t t_stage_ = 0;
  uint32_t b_stage_ = 0;
  uint64_t bytes_ = 0;
  uint64_t cuts_ = 0;
};

static_assert(RoceReactionPoint<Dcqcn>);

}  // namespace uet
