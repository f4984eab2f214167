// The peak memory of an A/B run, estimated from its configuration before it starts, so that
// uet-ab can refuse a run the machine cannot hold instead of being killed by the OOM killer.
//
// The per-host and per-pair costs below are measured, not derived from the engines' layouts:
// they are slopes of a whole run's peak RSS, so they include the engines, the frames in
// flight and the simulator's per-host state. Re-measure them whenever the engines' memory
// changes (bench/README.md, "Checked before the first run; memory estimate", says how;
// bench/NOTES.md, under the same heading, has the runs and the arithmetic).
#pragma once

#include <cstdint>
#include <string>

#include "bench/ab_runner.h"

namespace uet::ab {

// Bytes. Measured with /usr/bin/time -v on uet-ab --topology=fattree: a permutation at k=8
// (128 hosts) and k=16 (1024 hosts) gives the cost per host with its one peer; an all-to-all
// at k=8 (127 peers per host) the cost per further communicating pair (with its flow).
struct MeasuredMemory {
  static constexpr double kBase = 5.9 * (1 << 20);     // the process, fabric-independent
  static constexpr double kUetPerHost = 33.5 * 1024;   // with its first pair
  static constexpr double kUetPerPair = 14.2 * 1024;   // ordered pair: a PDC at each end
  static constexpr double kRocePerHost = 22.6 * 1024;  // with its first pair
  static constexpr double kRocePerPair = 3.6 * 1024;   // unordered pair and channel: a QP each side
  // Not measured, sized from the structures: per flow (the planned list, the run's copy, its
  // records and the player's state), per port (sim::Port and its queues' first slots), per
  // ECMP route entry (one per switch and ToR).
  static constexpr double kPerFlow = 512;
  static constexpr double kPerPort = 512;
  static constexpr double kPerRoute = 2;
};

struct MemoryEstimate {
  double bytes = 0;
  std::string why;  // the terms: "35152 hosts x 33.5 KiB uet + ..."
};

// One run's peak: its fabric, its flows' communicating pairs, its transport, the target
// buffer of its largest flow.
MemoryEstimate estimate_memory(const RunConfig& config);

// MemAvailable from /proc/meminfo in bytes; 0 when it cannot be read.
uint64_t memory_available();

}  // namespace uet::ab
