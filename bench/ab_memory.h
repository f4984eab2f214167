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

// Bytes. Measured with /usr/bin/time -v on uet-ab --topology=fattree: permutations of 64 KiB
// and of 256 KiB flows at k=52 (35,152 hosts) give the cost per host with its one peer, less
// its six ports, its flow and its share of kBase: a part that is there anyway and a part that
// grows with the flow's size (its window and frames in flight), up to kFlightCap; an
// all-to-all of 64 KiB flows at k=8 (127 peers per host) against the permutation there, the
// cost per further communicating pair (with its flow).
struct MeasuredMemory {
  static constexpr double kBase = 5.9 * (1 << 20);      // the process, fabric-independent
  static constexpr double kUetPerHost = 4.5 * 1024;     // with its first pair, idle
  static constexpr double kUetPerFlightByte = 0.0210;   // ... and per byte of its flow
  static constexpr double kRocePerHost = 2.0 * 1024;    // with its first pair, idle
  static constexpr double kRocePerFlightByte = 0.0245;  // ... and per byte of its flow
  static constexpr double kFlightCap = 512 * 1024;      // a window of 128 packets of 4 KiB
  static constexpr double kUetPerPair = 3.2 * 1024;     // ordered pair: a PDC at each end
  static constexpr double kRocePerPair = 1.3 * 1024;    // unordered pair and channel: a QP each side
  // Per flow: the planned list (sim::FlowSpec, and its `after` ids), the player's record and
  // dependents; measured as an all-reduce ring at k=16 (2,095,104 flows, two `after` ids
  // each) against the permutation there (1024 flows).
  static constexpr double kPerFlow = 176;
  // Not measured, sized from the structures: per port (sim::Port and its queues' first slots),
  // per ECMP route entry (route_entries(): a 16-bit group number).
  static constexpr double kPerPort = 512;
  static constexpr double kPerRoute = 2;
};

struct MemoryEstimate {
  double bytes = 0;  // the sum of the terms below
  // The terms: hosts with their first pair, further communicating pairs, flows, ports, route
  // table entries, the target buffer of the largest flow.
  double hosts = 0, pairs = 0, flows = 0, ports = 0, routes = 0, buffer = 0;
  std::string why;  // the terms: "35152 hosts x 33.5 KiB uet (1.12 GiB) + ..."
};

// One run's peak: its fabric, its flows' communicating pairs, its transport, the target
// buffer of its largest flow. Every count is carried in 64 bits or a double: exact at 10^6
// hosts and 10^9 route entries.
MemoryEstimate estimate_memory(const RunConfig& config);

// Entries of the fabric's route tables (sim/routing/ecmp_table.h): one per switch and
// destination column (each ToR, and the column of hosts' own switches); 0 for a fat-tree or
// leaf-spine routed minimally, whose routes are computed from addresses.
uint64_t route_entries(const Fabric& f) noexcept;

// MemAvailable from /proc/meminfo in bytes; 0 when it cannot be read.
uint64_t memory_available();

}  // namespace uet::ab
