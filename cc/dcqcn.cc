#include "cc/dcqcn.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace uet {

namespace {

absl::Status bad(const char* field, double value, const char* range) {
  return absl::InvalidArgumentError(absl::StrCat("DcqcnConfig.", std::string(field), "=", value,
                                                 " out of range: ", std::string(range)));
}

// RC this close to line rate counts as recovered: fast recovery only approaches RT
// geometrically, and the timers must stop some time.
constexpr double kRecovered = 1e-3;

}  // namespace

absl::Status DcqcnConfig::validate() const {
  if (!(line_rate_gbps >= 1 && line_rate_gbps <= 10000))
    return bad("line_rate_gbps", line_rate_gbps, "1..10000");
  if (!(min_rate_gbps > 0 && min_rate_gbps <= line_rate_gbps))
    return bad("min_rate_gbps", min_rate_gbps, "(0, line_rate_gbps]");
  if (!(g > 0 && g <= 1)) return bad("g", g, "(0, 1]");
  if (!(initial_alpha >= 0 && initial_alpha <= 1))
    return bad("initial_alpha", initial_alpha, "[0, 1]");
  if (alpha_period < kMicrosecond || alpha_period > kSecond)
    return bad("alpha_period", static_cast<double>(alpha_period), "1 us..1 s (ps)");
  if (increase_period < kMicrosecond || increase_period > kSecond)
    return bad("increase_period", static_cast<double>(increase_period), "1 us..1 s (ps)");
  if (byte_counter < 1500) return bad("byte_counter", static_cast<double>(byte_counter), ">= 1500");
  if (fast_recovery_rounds < 1 || fast_recovery_rounds > 64)
    return bad("fast_recovery_rounds", fast_recovery_rounds, "1..64");
  if (!(ai_rate_gbps >= 0 && ai_rate_gbps <= line_rate_gbps))
    return bad("ai_rate_gbps", ai_rate_gbps, "[0, line_rate_gbps]");
  if (!(hai_rate_gbps >= 0 && hai_rate_gbps <= line_rate_gbps))
    return bad("hai_rate_gbps", hai_rate_gbps, "[0, line_rate_gbps]");
  return absl::OkStatus();
}

absl::StatusOr<DcqcnConfig> DcqcnConfig::preset(std::string_view name, double line_rate_gbps) {
  DcqcnConfig c;
  c.line_rate_gbps = line_rate_gbps;
  if (name == "htsim") {
    c.ai_rate_gbps = line_rate_gbps / 20;
    c.hai_rate_gbps = line_rate_gbps / 10;
  } else if (name == "dcqcn-ns3") {
    c.initial_alpha = 0.5;
    c.increase_period = 60 * kMicrosecond;
    c.byte_counter = 300'000'000;
    c.ai_rate_gbps = 0.04;
    c.hai_rate_gbps = 0.2;
  } else if (name == "connectx") {
    c.g = 5.0 / 1024;
    c.alpha_period = kMicrosecond;
    c.initial_alpha = 1023.0 / 1024;
    c.min_rate_gbps = 0.001;
    c.increase_period = 300 * kMicrosecond;
    c.byte_counter = 32767;
    c.fast_recovery_rounds = 1;
    c.ai_rate_gbps = 0.005;
    c.hai_rate_gbps = 0.05;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("dcqcn preset '", std::string(name),
                                                   "' unknown: htsim, dcqcn-ns3 or connectx"));
  }
  if (absl::Status s = c.validate(); !s.ok()) return s;
  return c;
}

void Dcqcn::reset(const DcqcnConfig* c) noexcept {
  *this = Dcqcn{};
  c_ = c;
  line_ = c->line_rate_gbps * 1e9;
  rc_ = rt_ = line_;
  alpha_ = c->initial_alpha;
}

void Dcqcn::on_cnp(Time now) noexcept {
  if (!c_->enabled) return;
  const double g = c_->g;
  // The α decays that would have run while the timers were stopped.
  if (alpha_resume_ != kNever && now >= alpha_resume_) {
    const double n = static_cast<double>((now - alpha_resume_) / c_->alpha_period + 1);
    alpha_ *= std::pow(1 - g, n);
  }
  alpha_resume_ = kNever;
  rt_ = rc_;
  alpha_ = (1 - g) * alpha_ + g;
  rc_ = std::max(c_->min_rate_gbps * 1e9, rc_ * (1 - alpha_ / 2));
  t_stage_ = b_stage_ = 0;
  bytes_ = 0;
  alpha_next_ = now + c_->alpha_period;
  increase_next_ = now + c_->increase_period;
  ++cuts_;
}

void Dcqcn::on_sent(uint32_t bytes, Time now) noexcept {
  (void)now;
  if (!limited()) return;
  bytes_ += bytes;
  if (bytes_ < c_->byte_counter) return;
  bytes_ -= c_->byte_counter;
  ++b_stage_;
  increase();
  stop_if_recovered();
}

void Dcqcn::on_timer(Time now) noexcept {
  while (alpha_next_ <= now) {
    alpha_ *= 1 - c_->g;
    alpha_next_ += c_->alpha_period;
  }
  while (increase_next_ <= now) {
    ++t_stage_;
    increase();
    increase_next_ += c_->increase_period;
    stop_if_recovered();
  }
}

void Dcqcn::increase() noexcept {
  const uint32_t f = c_->fast_recovery_rounds;
  if (t_stage_ >= f && b_stage_ >= f) {
    rt_ += c_->hai_rate_gbps * 1e9 * (std::min(t_stage_, b_stage_) - f + 1);
  } else if (t_stage_ >= f || b_stage_ >= f) {
    rt_ += c_->ai_rate_gbps * 1e9;
  }  // else fast recovery: RT stays
  rt_ = std::min(rt_, line_);
  rc_ = std::min((rt_ + rc_) / 2, line_);
}

void Dcqcn::stop_if_recovered() noexcept {
  if (line_ - rc_ > kRecovered * line_) return;
  rc_ = rt_ = line_;
  alpha_resume_ = alpha_next_;
  alpha_next_ = kNever;
  increase_next_ = kNever;
  t_stage_ = b_stage_ = 0;
  bytes_ = 0;
}

Time Dcqcn::gap(uint32_t bytes) const noexcept {
  return static_cast<Time>(std::ceil(static_cast<double>(bytes) * 8e12 / rc_));
}

}  // namespace uet
