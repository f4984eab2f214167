// A pcap file writer (nanosecond timestamps, LINKTYPE_ETHERNET), for the simulator's taps,
// the perf tool's --pcap and the test fixtures that tshark reads.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace uet::wire {

class PcapWriter {
 public:
  static absl::StatusOr<PcapWriter> open(const std::string& path, uint32_t snaplen = 65535);

  // Appends one frame captured at `time_ns`; the record is cut to the snap length.
  // `wire_len` > frame.size() records a frame whose payload was not stored (the simulator at
  // scale): readers then see a capture shorter than the packet, as with a snap length.
  absl::Status write(std::span<const uint8_t> frame, uint64_t time_ns, uint32_t wire_len = 0);
  absl::Status close();

 private:
  struct Closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  PcapWriter(std::FILE* f, uint32_t snaplen) : file_(f), snaplen_(snaplen) {}
  std::unique_ptr<std::FILE, Closer> file_;
  uint32_t snaplen_;
};

}  // namespace uet::wire
