// NSCC, the UET sender's window congestion control (spec/uet.md §3.8.1,
// after SMaRTT and the UEC simulator): a pure engine. Events in (ACKed bytes with their ECN
// echo and RTT sample, NACKed bytes, timeouts), a window out; time is passed in, nothing is
// read from a clock.
//
// The four quadrants on ECN x (queueing delay vs target):
//   no ECN, delay >= target: fair increase        (inc += fi * acked)
//   no ECN, delay <  target: proportional increase (inc += alpha * acked * (target - delay))
//   ECN,    delay >= target: multiplicative decrease, at most once per base RTT, when the
//                            average delay exceeds the target too:
//                            cwnd *= max(1 - gamma (avg - target) / avg, 0.5)
//   ECN,    delay <  target: no change (the path selector moves the flow)
// The average delay is an EWMA (1/80) of the samples, except that an unmarked sample above
// the target counts as base_rtt / 4 (queueing the ECN marks do not blame on this flow, as
// uet-htsim's update_delay) and a NACK as one base RTT of delay. Decreasing on the sample
// itself, or on max(sample, average), would cut windows on every sprayed packet that met a
// queue (bench/NOTES.md, "Choices in the sources").
// Increases accumulate and are applied once per adjust period (cwnd += inc / cwnd, plus eta).
// Fast increase: after a whole window of ACKs with a queueing delay under 1 us, each ACK adds
// acked * fi_scale at once. A NACK for a trimmed packet takes its bytes off the window.
//
// QuickAdapt (htsim uec.cpp quick_adapt): time is cut into measurement
// periods of base RTT + target delay. When a period closes (at the first ACK or NACK after its
// end), if a NACK came since the last cut, or this is a loss, or the closing ACK's delay is
// above qa_threshold (4 x target), and the bytes acknowledged in the whole period are below
// maxwnd >> qa_gate (3), the window drops to those bytes (at least one MTU). Until as many
// bytes as were in flight then have been acknowledged or NACKed, ECN-marked ACKs and NACKs
// change nothing (their signals predate the cut); unmarked ACKs do and count as achieved, so a
// second NACK does not cut the window to one MTU (bench/NOTES.md, "Choices in the sources").
//
// The receiver's rcv_cwnd_pend (ACK_CC, 0..127) takes newly_received * pend / 128 off the
// window (on_receiver_pending; the bytes are the rcvd_bytes delta, spec/uet.md §3.8.1).
// RCCC's credits are cc/rccc.h; the engine can run both (UetConfig::cc).
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/statusor.h"
#include "transport/time.h"

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
  double alpha = 0, fi = 0, eta = 0, fi_scale = 0;
  uint32_t qa_gate = 3;             // QuickAdapt arms below maxwnd >> qa_gate achieved bytes
  double qa_threshold_ps = 0;       // ... or when the delay exceeds this (4 x target)
  Time fast_increase_delay = kMicrosecond;  // "no queue" for the fast increase

  // Validates and fills the derived fields; names the field and range on error.
  static absl::StatusOr<NsccConfig> derive(NsccConfig c);
};

class Nscc {
 public:
  // `c` is read, not copied: it must outlive the engine (an endpoint's one config serves all
  // its PDCs), so a temporary is refused.
  explicit Nscc(const NsccConfig& c) noexcept : c_(&c), cwnd_(c.maxwnd) {}
  explicit Nscc(const NsccConfig&&) = delete;
  // An engine with no window (the default configuration, not derived), for a PDC that does
  // not send.
  Nscc() noexcept : Nscc(kIdle) {}

  // cwnd_ stays in [minwnd, maxwnd], far below 2^63: converted through int64_t, one
  // instruction, where a double -> uint64_t conversion branches on the top bit (the sender asks
  // for the window at every packet).
  uint64_t window() const noexcept { return static_cast<uint64_t>(static_cast<int64_t>(cwnd_)); }
  uint64_t quick_adapts() const noexcept { return quick_adapts_; }
  uint64_t decreases() const noexcept { return decreases_; }
  uint64_t fast_increases() const noexcept { return fast_increases_; }

  // `acked` bytes newly acknowledged; `ecn`: the ACK echoed CE; `rtt`: a sample (<= 0: none),
  // without the time the receiver held the packet (spec/uet.md §3.8.1 service_time).
  void on_ack(uint64_t acked, bool ecn, Time rtt, Time now) noexcept {
    const double a = static_cast<double>(acked);
    const double delay = rtt > 0 ? static_cast<double>(rtt - c_->base_rtt) : avg_delay_;
    if (rtt > 0) update_avg_delay(delay, ecn);
    achieved_ += a;
    ignored_ += a;
    if (quick_adapt(false, ecn, delay, now)) return;

    if (!ecn) {
      if (delay >= c_->target_delay_ps) {
        inc_ += c_->fi * a;
        low_delay_bytes_ = 0;
      } else {
        inc_ += c_->alpha * a * (c_->target_delay_ps - delay);
        if (delay < static_cast<double>(c_->fast_increase_delay)) {
          low_delay_bytes_ += a;
          if (low_delay_bytes_ >= cwnd_) {
            cwnd_ = std::min(cwnd_ + a * c_->fi_scale, c_->maxwnd);
            ++fast_increases_;
          }
        } else {
          low_delay_bytes_ = 0;
        }
      }
    } else {
      low_delay_bytes_ = 0;
      if (delay >= c_->target_delay_ps && avg_delay_ > c_->target_delay_ps &&
          now - last_decrease_ >= c_->base_rtt) {
        const double f = 1 - c_->gamma * (avg_delay_ - c_->target_delay_ps) / avg_delay_;
        cwnd_ = std::max(cwnd_ * std::max(f, 0.5), c_->minwnd);
        last_decrease_ = now;
        ++decreases_;
      }
    }
    acked_since_adjust_ += a;
    if (now - last_adjust_ >= c_->base_rtt || acked_since_adjust_ >= 8.0 * c_->mtu) {
      cwnd_ = std::clamp(cwnd_ + inc_ / cwnd_ + c_->eta, c_->minwnd, c_->maxwnd);
      inc_ = 0;
      acked_since_adjust_ = 0;
      last_adjust_ = now;
    }
  }

  // A trimmed, NACKed or otherwise lost packet of `bytes`.
  void on_nack(uint64_t bytes, Time now) noexcept {
    const double b = static_cast<double>(bytes);
    ignored_ += b;
    update_avg_delay(static_cast<double>(c_->base_rtt), true);
    qa_triggered_ = true;
    if (!quick_adapt(true, true, 0, now)) cwnd_ = std::max(cwnd_ - b, c_->minwnd);
  }

  // The receiver's rcv_cwnd_pend (0..127) on an ACK reporting `received` newly received bytes.
  void on_receiver_pending(uint64_t received, uint8_t pend) noexcept {
    const double cut = static_cast<double>(received) * static_cast<double>(pend & 0x7F) / 128.0;
    cwnd_ = std::max(cwnd_ - cut, c_->minwnd);
  }

  void on_timeout(Time) noexcept { cwnd_ = c_->minwnd; }

 private:
  void update_avg_delay(double delay, bool ecn) noexcept {
    const double sample = !ecn && delay > c_->target_delay_ps
                              ? 0.25 * static_cast<double>(c_->base_rtt)
                              : delay;
    avg_delay_ += 0.0125 * (sample - avg_delay_);
  }
  // htsim UecSrc::quick_adapt. While the bytes in flight at the last cut are still being
  // acknowledged, ECN-marked ACKs and NACKs (`skip`) change nothing (their signals predate
  // the cut). Otherwise, when a measurement period is over: if a NACK triggered it, or this
  // is a loss, or this ACK's delay is extreme, and the period achieved less than
  // maxwnd >> qa_gate, the window drops to what it achieved. Returns whether the caller's
  // own window update is to be skipped.
  bool quick_adapt(bool loss, bool skip, double delay, Time now) noexcept {
    bool done = false;
    if (ignored_ < to_ignore_ && skip) {
      done = true;
    } else if (qa_end_ == kNever || now > qa_end_) {
      if (qa_end_ != kNever && (qa_triggered_ || loss || delay > c_->qa_threshold_ps) &&
          achieved_ < c_->maxwnd / static_cast<double>(1u << c_->qa_gate)) {
        to_ignore_ = cwnd_;  // at most this much was in flight at the cut
        ignored_ = 0;
        cwnd_ = std::max(achieved_, c_->minwnd);
        qa_triggered_ = false;
        ++quick_adapts_;
        done = true;
      }
      achieved_ = 0;
      qa_end_ = now + c_->base_rtt + static_cast<Time>(c_->target_delay_ps);
    }
    if (done) {
      inc_ = 0;
      acked_since_adjust_ = 0;
    }
    return done;
  }

  static constexpr NsccConfig kIdle{};

  const NsccConfig* c_;
  double cwnd_;
  double inc_ = 0;
  double avg_delay_ = 0;
  double acked_since_adjust_ = 0;
  double low_delay_bytes_ = 0;
  double achieved_ = 0;     // bytes acknowledged in this measurement period
  double ignored_ = 0;      // bytes acknowledged or NACKed since the last cut ...
  double to_ignore_ = 0;    // ... and what was in flight then
  bool qa_triggered_ = false;  // a NACK since the last cut (htsim _trigger_qa)
  Time qa_end_ = kNever;
  Time last_adjust_ = 0;
  Time last_decrease_ = -kSecond;
  uint64_t quick_adapts_ = 0, decreases_ = 0, fast_increases_ = 0;
};

}  // namespace uet::cc
