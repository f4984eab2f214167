// The host side of the sans-IO rule for real I/O: one engine (a Transport) driven over one
// PacketIo by one thread. Receive a burst, run due timers, fill and send a burst; when a pass
// moves nothing, sleep in the backend until the engine's next deadline.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "dpdk-io/packet_io.h"
#include "transport/transport.h"

namespace uet::io {

struct HostLoopStats {
  uint64_t passes = 0;
  uint64_t idle_passes = 0;   // passes that moved no frame
  uint64_t rx_frames = 0;
  uint64_t tx_frames = 0;
  uint64_t timer_runs = 0;
};

class HostLoop {
 public:
  using Clock = Time (*)();

  HostLoop(PacketIo& io, Transport& engine, Clock clock = &monotonic_now) noexcept
      : io_(io), engine_(engine), clock_(clock) {}

  // One pass; returns the frames it moved (received + sent).
  size_t poll_once();

  // Polls until done() is true (checked after every pass) or `timeout` of host time has
  // passed; returns done(). Idle passes wait in PacketIo::wait() until the engine's next
  // deadline, at most `max_idle_wait`, so done() is seen promptly.
  bool run_until(absl::FunctionRef<bool()> done, Time timeout,
                 Time max_idle_wait = 100 * kMicrosecond);

  // After the application has closed, as TCP's TIME_WAIT and SO_LINGER keep a closed
  // connection answering: polls on, so that a peer whose last ACK from us was lost (on the
  // wire, or in a device ring torn down when this process leaves) has it again when it
  // retransmits. Ends once `outstanding()` (asked after every pass) is false, the last pass
  // sent nothing and no frame has arrived for `quiet`; at `cap` in any case. At once if the
  // loop never moved a frame. Returns false when the cap ended it.
  bool linger(Time quiet, Time cap, absl::FunctionRef<bool()> outstanding,
              Time max_idle_wait = 100 * kMicrosecond);

  const HostLoopStats& stats() const noexcept { return stats_; }
  // The clock as the last pass read it (before its tx()): a caller polling in a loop can take
  // its own checks from it instead of reading the clock again.
  Time last_now() const noexcept { return now_; }

 private:
  PacketIo& io_;
  Transport& engine_;
  Clock clock_;
  Time now_ = 0;
  HostLoopStats stats_;
};

}  // namespace uet::io
