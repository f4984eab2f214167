#include "bench/ab_eta.h"

#include <algorithm>

namespace uet::ab {

double work_done(const Progress& p) noexcept {
  if (p.total_link_frames > 0 && p.sent_bytes > 0 && p.data_frame_bytes > 0) {
    // Frames per data frame so far: ACKs, resends and trims cost events too. Full data frames
    // stand for all of them (the bytes of ACKs and last frames are a few per cent).
    const double data_frames = static_cast<double>(p.sent_bytes) / static_cast<double>(p.data_frame_bytes);
    const double per_data = std::max(1.0, static_cast<double>(p.sent_frames) / data_frames);
    return std::min(1.0, static_cast<double>(p.link_frames) /
                             (static_cast<double>(p.total_link_frames) * per_data));
  }
  const double flows = p.flows > 0 ? static_cast<double>(p.flows_done) / static_cast<double>(p.flows) : 0;
  const double bytes = p.total_bytes > 0 ? static_cast<double>(p.delivered_bytes) /
                                               static_cast<double>(p.total_bytes) : 0;
  return std::min(1.0, std::max(flows, bytes));
}

void EtaEstimate::add(double wall_s, double done) {
  if (any_ && wall_s <= last_.wall) return;
  last_ = {wall_s, std::clamp(done, any_ ? last_.done : 0.0, 1.0)};
  any_ = true;
  if (points_.empty() || ++skipped_ >= stride_) {
    skipped_ = 0;
    if (points_.size() == kKeep) {
      for (size_t i = 0; i < kKeep / 2; ++i) points_[i] = points_[2 * i];
      points_.resize(kKeep / 2);
      stride_ *= 2;
    }
    points_.push_back(last_);
  }
}

double EtaEstimate::seconds_left() const {
  if (!any_ || last_.done <= 0 || points_.empty()) return -1;
  if (last_.done >= 1) return 0;
  // The newest kept point at least the window before the last observation (the first if none).
  const double window = std::max(kMinSpan, kRecent * last_.wall);
  const Point* from = &points_.front();
  for (const Point& p : points_) {
    if (last_.wall - p.wall < window) break;
    from = &p;
  }
  const double span = last_.wall - from->wall;
  const double gained = last_.done - from->done;
  if (span < kMinSpan) return -1;
  // No gain in the window (a stall): the whole run's average rate, rather than never.
  if (gained <= 0) return last_.wall * (1 - last_.done) / last_.done;
  return span * (1 - last_.done) / gained;
}

}  // namespace uet::ab
