// The per-hop pieces both forwarding paths inline: the one for a fabric whose frames keep
// their lossless class (network.cc) and the one where switches change it (network_classes.cc).
// Member definitions for those two files only (always_inline needs the body in the caller's
// file); everything else reaches them through Network's own functions.
#pragma once

#include <cstdint>

#include "sim/frame_parse.h"
#include "sim/network.h"

namespace uet::sim {

// RED (ecn_mark_probability's body, here to be inlined where a switch queues a frame).
[[gnu::always_inline]] inline double red_probability(const EcnConfig& ecn,
                                                     uint64_t queue_bytes) noexcept {
  if (queue_bytes >= ecn.kmax_bytes) return 1;
  if (queue_bytes <= ecn.kmin_bytes) return 0;
  return ecn.pmax * static_cast<double>(queue_bytes - ecn.kmin_bytes) /
         static_cast<double>(ecn.kmax_bytes - ecn.kmin_bytes);
}

inline Time Network::serialization(const Port& p, uint32_t bytes) const noexcept {
  // bytes * 8e12 / rate exactly when rate divides 8e12 (no rounding to do).
  if (p.ps_per_byte != 0) [[likely]] return static_cast<Time>(uint64_t{bytes} * p.ps_per_byte);
  // Exact to the picosecond, rounded up: bits * 1e12 / rate.
  __extension__ using U128 = unsigned __int128;
  const U128 num = static_cast<U128>(bytes) * 8 * 1'000'000'000'000ULL;
  return static_cast<Time>((num + static_cast<uint64_t>(p.rate_bps) - 1) /
                           static_cast<uint64_t>(p.rate_bps));
}

// The frame's fate on the wire, from start_tx: it occupies the port for its serialization
// (+ preamble, IFG, FCS), until the time returned, and arrives after the propagation delay.
[[gnu::always_inline]] inline Time Network::send_frame(Port& p, uint32_t port, FrameId f,
                                                       uint32_t bytes) {
  Time done = now_ + serialization(p, bytes + 24);
  if (p.at_host && host_cost_) [[unlikely]] done += host_cost(bytes);
  p.busy_until = done;
  ++p.stats.tx_frames;
  p.stats.tx_bytes += bytes;
  if (p.plain) [[likely]] {  // up, unimpaired, untapped: start_tx_rare's no-draw case
    events_q_.push(done + p.delay, kArrive, p.peer, f, arrival_key(port, p));
  } else {
    start_tx_rare(port, f, bytes, done);
  }
  return done;
}

// Starts the port now if it is idle, else makes sure its kTxDone will come.
template <bool kClasses>
[[gnu::always_inline]] inline void Network::kick_port(uint32_t port) {
  Port& p = ports_[port];
  if (p.done_scheduled) return;
  if (now_ >= p.busy_until) {
    start_tx<kClasses>(port);
  } else {
    events_q_.push(p.busy_until, kTxDone, port, 0, event_key(port, 0));
    p.done_scheduled = true;
  }
}

// RED on the queue the frame joins (`queue_bytes` before it), marking CE in its IP header.
[[gnu::always_inline]] inline void Network::mark_ecn(Port& p, uint32_t port, FrameId f,
                                                     FrameMeta& m, uint64_t queue_bytes) {
  const EcnConfig& ecn = p.scaled ? scaled_[port].ecn : config_.switches.ecn;
  const double prob = red_probability(ecn, queue_bytes);
  if (prob > 0 && p.rng.chance(prob) && mark_ce(frame_bytes(f))) {
    ++p.stats.ecn_marks;
    if (m.corrupted) {  // the IPv4 checksum is recomputed over the damaged header
      ++rare_stats(port).corrupted_rewrites;
      m.corrupted = false;
    }
  }
}

}  // namespace uet::sim
