// Burst-granularity frame I/O for real hosts: what a DPDK port and an io_uring UDP socket set
// have in common, and all the host loop (host_loop.h) needs to drive an engine.
//
// Contract (DESIGN.md, "frames are lent, not copied"):
//   - rx_burst() lends received frames: data starts at the Ethernet header (no FCS), len is
//     set. They stay valid until release_rx(); the engine reads them in Transport::rx().
//   - alloc_tx() lends empty frames (len 0, no reference, capacity set) for Transport::tx()
//     to fill, in order. tx_burst() then takes back every frame alloc_tx() lent: the filled
//     ones are sent (or dropped and counted if the device refuses them), the unused ones are
//     recycled. Of the unused ones only the first may have been written (a frame begun and
//     given up); a backend may lend the others again without emptying them.
//   - One virtual call per burst, never per packet. A PacketIo is driven by one thread.
//
// Backends: dpdk_io.h (a DPDK ethdev port and queue), uring_io.h (kernel UDP sockets through
// io_uring; the Ethernet/IPv4/UDP headers are synthesised on receive and stripped on send).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/transport.h"

namespace uet::io {

inline constexpr size_t kMaxBurst = 32;

// Counters every backend keeps.
struct IoStats {
  uint64_t rx_packets = 0, rx_bytes = 0;
  uint64_t tx_packets = 0, tx_bytes = 0;
  uint64_t rx_dropped = 0;   // received but not handed up (not for us, malformed, no buffer)
  uint64_t tx_dropped = 0;   // filled but not sent (device ring full, unroutable, too big)
  uint64_t tx_no_buffer = 0; // alloc_tx() calls that found the pool empty
};

class PacketIo {
 public:
  virtual ~PacketIo() = default;

  // Up to out.size() received frames; returns how many (a prefix of `out`).
  virtual size_t rx_burst(std::span<Frame*> out) = 0;
  virtual void release_rx(std::span<Frame* const> frames) = 0;

  // Up to out.size() empty frames; returns how many (a prefix of `out`).
  virtual size_t alloc_tx(std::span<Frame*> out) = 0;
  // `filled` and `unused` together are exactly the frames of the last alloc_tx().
  // Returns how many of `filled` went out.
  virtual size_t tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) = 0;

  // Blocks until a frame may have arrived or `deadline` (host clock, see monotonic_now()) has
  // passed, whichever comes first. Busy-polling backends (DPDK) return at once.
  virtual void wait(Time deadline) { (void)deadline; }

  virtual IoStats stats() const = 0;
};

// The host clock as a transport Time: picoseconds since its first reading in this process.
// Real hosts pass it to the engines. CLOCK_MONOTONIC through the vDSO, or the TSC after
// use_tsc_clock(): one instruction to read, where the loops read the clock on every pass.
Time monotonic_now() noexcept;
// Switches monotonic_now() to the CPU's time-stamp counter, calibrated against
// CLOCK_MONOTONIC over 20 ms, where the kernel keeps its own time with it (x86-64, clocksource
// "tsc"); returns whether monotonic_now() now reads it. Readings before and after are on one
// scale. It calibrates once, at the first call; later calls return what that one found.
bool use_tsc_clock() noexcept;
bool tsc_clock_in_use() noexcept;

}  // namespace uet::io
