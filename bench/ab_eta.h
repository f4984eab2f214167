// uet-ab's ETA (the progress line): the share of a run's work done so far against wall time,
// extrapolated at the rate of the recent past, so that a run whose work slows down (an incast's
// tail) is not promised the pace of its start. Pure: fed observations, it reads no clock.
#pragma once

#include <cstddef>
#include <vector>

#include "bench/ab_runner.h"

namespace uet::ab {

// The share of a run's work done (0..1) by what its fabric has carried: every link's frames
// against the flows' data frames times the links of their paths, times the frames each data
// frame has brought so far (ACKs, resends; a frame costs events at each hop); else the larger
// of the flows' and the delivered bytes' shares.
double work_done(const Progress& p) noexcept;

class EtaEstimate {
 public:
  // One observation: `done` (0..1) of the run's work after `wall_s` seconds of running (both
  // never decreasing; an earlier or equal wall_s replaces nothing and is ignored).
  void add(double wall_s, double done);
  // Seconds left; negative while unknown (no work seen yet, or under kMinSpan of observations).
  double seconds_left() const;

  // The rate is the work done over the last kRecent of the run's wall time (at least kMinSpan
  // seconds): long enough to smooth a line's noise, short enough to see a phase change.
  static constexpr double kRecent = 0.1;
  static constexpr double kMinSpan = 2;

 private:
  struct Point {
    double wall, done;
  };
  // Thinned as they come (at most kKeep, every other one dropped when full): the window
  // reaches a tenth of the run whatever its length.
  static constexpr size_t kKeep = 256;
  std::vector<Point> points_;
  size_t stride_ = 1, skipped_ = 0;
  Point last_{0, 0};
  bool any_ = false;
};

}  // namespace uet::ab
