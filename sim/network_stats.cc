// The ports' counters as a run reads them: the queue and pause integrals folded up to now,
// and every counter of a port, its hot ones and its rare ones. Control path.
#include "sim/network.h"

namespace uet::sim {

void Network::flush_stats() {
  for (uint32_t i = 0; i < ports_.size(); ++i) {
    if (!owns_port(i)) continue;
    Port& p = ports_[i];
    account_queue(p);
    if (!classes_.empty()) account_classes(i);
    if (p.paused[0]) {
      rare_stats(i).paused_time += now_ - paused_since_[i];
      paused_since_[i] = now_;
    }
    for (int c = 0; c < kExtraClasses; ++c) {
      if (!paused_at(i, c + kPortPriorities)) continue;
      rare_stats(i).paused_time += now_ - classes_[i][c].paused_since;
      classes_[i][c].paused_since = now_;
    }
  }
}

PortStats Network::port_stats(uint32_t port) const noexcept {
  PortStats s;
  if (!owns_port(port)) return s;  // another rank's counters are there
  const Port& p = ports_[port];
  s.tx_frames = p.stats.tx_frames;
  s.tx_bytes = p.stats.tx_bytes;
  s.max_queue_bytes = p.stats.max_queue_bytes;
  s.queue_byte_ps = p.stats.queue_byte_ps;
  s.drops = p.stats.drops;
  s.trims = p.stats.trims;
  s.ecn_marks = p.stats.ecn_marks;
  if (p.rare == kNone) return s;
  const PortRareStats& r = rare_[p.rare];
  s.lossless_drops = r.lossless_drops;
  s.wire_losses = r.wire_losses;
  s.corruptions = r.corruptions;
  s.duplicates = r.duplicates;
  s.reorders = r.reorders;
  s.pauses_sent = r.pauses_sent;
  s.paused_time = r.paused_time;
  s.corrupted_arrivals = r.corrupted_arrivals;
  s.damaged_arrivals = r.damaged_arrivals;
  s.corrupted_rewrites = r.corrupted_rewrites;
  s.corrupted_unchecked = r.corrupted_unchecked;
  return s;
}

}  // namespace uet::sim
