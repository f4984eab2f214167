#include "dpdk-io/host_loop.h"

#include <algorithm>
#include <array>

namespace uet::io {

size_t HostLoop::poll_once() {
  std::array<Frame*, kMaxBurst> burst{};
  ++stats_.passes;

  const size_t received = io_.rx_burst(burst);
  if (received > 0) {
    const std::span<Frame* const> frames(burst.data(), received);
    engine_.rx(frames, clock_());
    io_.release_rx(frames);
    stats_.rx_frames += received;
  }

  const Time now = now_ = clock_();
  if (engine_.next_deadline() <= now) {
    engine_.on_timer(now);
    ++stats_.timer_runs;
  }

  size_t sent = 0;
  const size_t lent = io_.alloc_tx(burst);
  if (lent > 0) {
    // The timers' `now`: the engine's tx() follows on_timer() at once (one clock read less
    // per pass, which an idle poll is mostly made of).
    const size_t filled = engine_.tx(std::span<Frame* const>(burst.data(), lent), now);
    sent = io_.tx_burst(std::span<Frame* const>(burst.data(), filled),
                        std::span<Frame* const>(burst.data() + filled, lent - filled));
    stats_.tx_frames += filled;
    // Frames the device refused are counted by the backend; the engine's retransmission
    // recovers them like any loss.
    if (filled == 0) sent = 0;
  }

  const size_t moved = received + sent;
  if (moved == 0) ++stats_.idle_passes;
  return moved;
}

bool HostLoop::run_until(absl::FunctionRef<bool()> done, Time timeout, Time max_idle_wait) {
  const Time give_up = clock_() + timeout;
  while (!done()) {
    const Time now = clock_();
    if (now >= give_up) return false;
    if (poll_once() == 0) {
      io_.wait(std::min({engine_.next_deadline(), now + max_idle_wait, give_up}));
    }
  }
  return true;
}

bool HostLoop::linger(Time quiet, Time cap, absl::FunctionRef<bool()> outstanding,
                      Time max_idle_wait) {
  if (stats_.rx_frames == 0 && stats_.tx_frames == 0) return true;  // nothing to answer for
  const Time start = clock_();
  Time last_rx = start;
  for (;;) {
    const uint64_t rx = stats_.rx_frames, tx = stats_.tx_frames;
    const bool moved = poll_once() > 0;
    const Time now = now_;
    if (stats_.rx_frames != rx) last_rx = now;
    const bool waiting = outstanding();
    if (!waiting && stats_.tx_frames == tx && now - last_rx >= quiet) return true;
    if (now - start >= cap) return false;
    if (!moved) {
      const Time until = waiting ? start + cap : std::min(last_rx + quiet, start + cap);
      io_.wait(std::min({engine_.next_deadline(), now + max_idle_wait, until}));
    }
  }
}

}  // namespace uet::io
