// An in-memory PacketIo pair: what one end sends, the other receives, in order, after the
// caller's own drop filter. It is the reference implementation of the PacketIo contract and
// lets tests drive two engines through HostLoop without a device. Fixed pools, no allocation
// after construction; single-threaded (both ends polled by the same thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "dpdk-io/packet_io.h"

namespace uet::io {

class MemoryWire {
 public:
  // `frames_per_end` buffers of `frame_capacity` bytes each, per end.
  MemoryWire(uint32_t frames_per_end, uint32_t frame_capacity);
  ~MemoryWire();

  PacketIo& end(int i) noexcept;

  // Called for every frame sent by end `from` (0 or 1); return false to lose it.
  void set_filter(std::function<bool(int from, const Frame&)> keep) { keep_ = std::move(keep); }

 private:
  class End;
  std::unique_ptr<End> ends_[2];
  std::function<bool(int, const Frame&)> keep_;
};

}  // namespace uet::io
