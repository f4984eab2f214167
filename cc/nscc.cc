#include "cc/nscc.h"

#include "absl/strings/str_cat.h"

namespace uet::cc {

absl::StatusOr<NsccConfig> NsccConfig::derive(NsccConfig c) {
  if (!(c.link_gbps >= 1 && c.link_gbps <= 3200)) {
    return absl::InvalidArgumentError(absl::StrCat("NsccConfig.link_gbps=", c.link_gbps, " out of range: 1..3200"));
  }
  if (c.base_rtt < 100 * kNanosecond || c.base_rtt > kSecond) {
    return absl::InvalidArgumentError(absl::StrCat("NsccConfig.base_rtt=", c.base_rtt, " ps out of range: 100 ns..1 s"));
  }
  if (c.mtu < 256 || c.mtu > 9000) {
    return absl::InvalidArgumentError(absl::StrCat("NsccConfig.mtu=", c.mtu, " out of range: 256..9000"));
  }
  if (!(c.gamma > 0 && c.gamma <= 1) || !(c.max_bdp_factor >= 1 && c.max_bdp_factor <= 16)) {
    return absl::InvalidArgumentError("NsccConfig: gamma in (0, 1], max_bdp_factor in [1, 16]");
  }
  // htsim uec.cpp: parameters scale from the reference network (100 Gb/s, 12 us).
  constexpr double kRefBdp = 100e9 / 8 * 12e-6;  // 150 KB
  constexpr double kRefRtt = 12e-6 * 1e12;       // ps
  const double rtt_s = static_cast<double>(c.base_rtt) * 1e-12;
  c.bdp = c.link_gbps * 1e9 / 8 * rtt_s;
  c.maxwnd = c.max_bdp_factor * c.bdp;
  c.minwnd = c.mtu;
  c.target_delay_ps = (c.trimming ? 0.75 : 1.0) * static_cast<double>(c.base_rtt);
  const double a = c.bdp / kRefBdp;
  const double b = c.target_delay_ps / kRefRtt;
  c.alpha = 4.0 * c.mtu * a * b / c.target_delay_ps;
  c.fi = 5.0 * c.mtu * a;
  c.eta = 0.15 * c.mtu * a;
  c.fi_scale = 0.25 * a;
  c.qa_threshold_ps = 4 * c.target_delay_ps;
  if (c.maxwnd < c.minwnd) c.maxwnd = c.minwnd;
  return c;
}

}  // namespace uet::cc
