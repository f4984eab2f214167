// The sans-IO surface every protocol engine implements and every host drives (DESIGN.md,
// "The one rule"): frames in, frames out, one deadline. The simulator (sim/), the DPDK and
// io_uring hosts (dpdk-io/) and the tests' fake host call exactly these four functions, at
// burst granularity, so the per-packet work has no virtual call.
//
// Ownership: frames are lent by the host. In rx() the engine reads them and must not keep the
// pointers after returning; in tx() it fills empty frames the host gives it. Time and
// randomness come from outside: an engine never reads a clock.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

#include "spec/rocev2.def"
#include "spec/uet.def"
#include "transport/time.h"

namespace uet {

// Traffic classes a NIC or switch queues a frame in.
enum class Priority : uint8_t {
  kData = 0,     // requests and data
  kControl = 1,  // ACKs, NACKs, credits, CNPs and trimmed headers: served first
};
// Priorities 2 and 3 are further lossless classes a switch moves a frame into on its way
// (Tagger, the dateline: sim/routing/lossless_classes.h); hosts send in 0 and 1 only.
inline constexpr int kNumPriorities = 4;

// DSCP code points the engines mark by default and the simulated fabric classifies on
// (spec/uet.md §2.5, spec/rocev2.md §1; a trimmed UET request's is wire::kDscpTrimmed).
inline constexpr uint8_t kDscpData = UET_DSCP_DATA;
inline constexpr uint8_t kDscpControl = UET_DSCP_CONTROL;
inline constexpr uint8_t kDscpCnp = ROCEV2_DSCP_CNP;
// One data class for both transports: the A/B runs them through the same fabric queues.
static_assert(UET_DSCP_DATA == ROCEV2_DSCP_DATA);

// A frame buffer lent by the host: Ethernet header first, no FCS.
struct Frame {
  uint8_t* data = nullptr;
  uint32_t len = 0;       // bytes present at `data`
  uint32_t wire_len = 0;  // bytes on the wire: > len only when a host carries payloads by
                          // length (the simulator at scale); 0 means "same as len"
  uint32_t capacity = 0;  // bytes writable at `data`
  Priority priority = Priority::kData;
  // Set by a host whose NIC or kernel has verified the frame's IPv4 header checksum and UDP
  // checksum (checksum offload, or io_uring's sockets): engines skip their own check. RoCEv2's
  // ICRC is not covered (RoceConfig::icrc_offload).
  bool checksums_ok = false;
  // Zero-copy transmit, for a host whose device gathers (DPDK external buffers): on the wire,
  // `ref_len` bytes at `ref` (registered memory) come between the first `ref_at` bytes at
  // `data` and the rest (RoCEv2's pad and ICRC). Engines set it only when their config says
  // the host takes it (tx_by_reference); `ref` stays valid until the operation completes.
  const uint8_t* ref = nullptr;
  uint32_t ref_len = 0;
  uint32_t ref_at = 0;

  uint32_t bytes_on_wire() const noexcept {
    return wire_len > len + ref_len ? wire_len : len + ref_len;
  }
};

// Copies a referenced payload into the frame's own buffer, for a host whose device cannot
// gather; false when the buffer is too small for the whole frame.
inline bool flatten(Frame& f) noexcept {
  if (f.ref_len == 0) return true;
  if (f.len > f.capacity || f.capacity - f.len < f.ref_len || f.ref_at > f.len) return false;
  std::memmove(f.data + f.ref_at + f.ref_len, f.data + f.ref_at, f.len - f.ref_at);
  std::memcpy(f.data + f.ref_at, f.ref, f.ref_len);
  f.len += f.ref_len;
  f.ref = nullptr;
  f.ref_len = f.ref_at = 0;
  return true;
}

class Transport {
 public:
  virtual ~Transport() = default;

  // Frames that arrived at `now`.
  virtual void rx(std::span<Frame* const> frames, Time now) = 0;
  // Fills up to out.size() empty frames with what congestion control, credits and pacing
  // allow to send at `now`; returns how many were filled (a prefix of `out`). Of the frames
  // after that prefix, only the first may have been written to.
  virtual size_t tx(std::span<Frame* const> out, Time now) = 0;
  // The earliest time on_timer() must run (retransmission, ACK coalescing, pacing), or kNever.
  virtual Time next_deadline() const = 0;
  virtual void on_timer(Time now) = 0;
};

}  // namespace uet
