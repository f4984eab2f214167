// NSCC, the UET sender's window congestion control (research/uec.md §3, after SMaRTT and the
// UEC simulator): a pure engine. Events in (ACKed bytes with their ECN echo and RTT sample,
// NACKed bytes, timeouts), a window out; time is passed in, nothing is read from a clock.
//
// The four quadrants on ECN x (queueing delay vs target):
//   no ECN, delay >= target: fair increase        (inc += fi * acked)
//   no ECN, delay <  target: proportional increase (inc += alpha * acked * (target - delay))
//   ECN,    delay >= target: multiplicative decrease, at most once per base RTT
//   ECN,    delay <  target: no change (the path selector moves the flow)
// Increases accumulate and are applied once per adjust period (cwnd += inc / cwnd, plus eta).
// A NACK for a trimmed packet takes its bytes off the window. Not yet: QuickAdapt, the
// receiver's rcv_cwnd_pend signal, RCCC credits (the cc/ issue).
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/statusor.h"
#include "transport/transport.h"

namespace uet::cc {

struct NsccConfig {
  double link_gbps = 100;
  Time base_rtt = 12 * kMicrosecond;  // unloaded round trip of the fabric
  uint32_t mtu = 4096;
  bool trimming = true;               // target delay 0.75 x base RTT with trimming, else 1 x
  double gamma = 0.8;                 // multiplicative-decrease gain
  double max_bdp_factor = 1.5;        // maxwnd = 1.5 x BDP

  // Derived in one place (derive()): the reference is 100 Gb/s and 12 us (BDP 150 KB).
  double bdp = 0, maxwnd = 0, minwnd = 0, target_delay_ps = 0;
  double alpha = 0, fi = 0, eta = 0;

  // Validates and fills the derived fields; names the field and range on error.
  static absl::StatusOr<NsccConfig> derive(NsccConfig c);
};

class Nscc {
 public:
  explicit Nscc(const NsccConfig& c) : c_(c), cwnd_(c.maxwnd) {}

  uint64_t window() const noexcept { return static_cast<uint64_t>(cwnd_); }

  // `acked` bytes newly acknowledged; `ecn`: the ACK echoed CE; `rtt`: a sample (<= 0: none).
  void on_ack(uint64_t acked, bool ecn, Time rtt, Time now) noexcept {
    if (rtt > 0) avg_delay_ += 0.0125 * (static_cast<double>(rtt - c_.base_rtt) - avg_delay_);
    const double delay = rtt > 0 ? static_cast<double>(rtt - c_.base_rtt) : avg_delay_;
    const double a = static_cast<double>(acked);
    if (!ecn) {
      if (delay >= c_.target_delay_ps) {
        inc_ += c_.fi * a;
      } else {
        inc_ += c_.alpha * a * (c_.target_delay_ps - delay);
      }
    } else if (delay >= c_.target_delay_ps && now - last_decrease_ >= c_.base_rtt) {
      const double d = std::max(avg_delay_, delay);
      const double f = d > 0 ? 1 - c_.gamma * (d - c_.target_delay_ps) / d : 1;
      cwnd_ = std::max(cwnd_ * std::max(f, 0.5), c_.minwnd);
      last_decrease_ = now;
    }
    acked_since_adjust_ += a;
    if (now - last_adjust_ >= c_.base_rtt || acked_since_adjust_ >= 8.0 * c_.mtu) {
      cwnd_ = std::clamp(cwnd_ + inc_ / cwnd_ + c_.eta, c_.minwnd, c_.maxwnd);
      inc_ = 0;
      acked_since_adjust_ = 0;
      last_adjust_ = now;
    }
  }

  // A trimmed (or otherwise NACKed) packet of `bytes`.
  void on_nack(uint64_t bytes, Time) noexcept {
    cwnd_ = std::max(cwnd_ - static_cast<double>(bytes), c_.minwnd);
  }

  void on_timeout(Time) noexcept { cwnd_ = c_.minwnd; }

 private:
  NsccConfig c_;
  double cwnd_;
  double inc_ = 0;
  double avg_delay_ = 0;
  double acked_since_adjust_ = 0;
  Time last_adjust_ = 0;
  Time last_decrease_ = -kSecond;
};

}  // namespace uet::cc
