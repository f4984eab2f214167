// Per-flow results of a run (DESIGN.md, "Simulator": per-flow FCT, goodput, queue and pause
// statistics): flow completion times, slowdown against an ideal, aggregate goodput, and a
// fabric-wide summary of the port counters.
//
// Pure functions of the records and specs (control path, after the run); nothing here is
// called per packet. Units: FCTs in microseconds, rates in Gb/s (10^9 bit/s), sizes in bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "sim/network.h"
#include "sim/udp_app.h"
#include "sim/workload.h"

namespace uet::sim {

// The path of a flow alone on an idle fabric, for its ideal FCT: every link at `gbps`,
// store-and-forward at each switch. The caller derives it from the topology (hops and the
// sum of link delays differ between a same-leaf and a cross-spine pair).
struct PathModel {
  double gbps = 100;
  uint32_t hops = 2;     // links from source to sink
  Time propagation = 0;  // sum of the delays of those links
  uint32_t payload_per_packet = 4096;
  // Bytes each frame adds on the wire: Ethernet 14 + IPv4 20 + UDP 8 + UdpApp header 16, and
  // the 24 bytes the Network charges for preamble, inter-frame gap and FCS.
  uint32_t frame_overhead = 14 + 20 + 8 + 16 + 24;
};

// Serialising every frame at the source, plus one largest frame per following hop (store and
// forward), plus propagation: exact to the picosecond for the UdpApp on an idle path whose
// links all run at `gbps`.
Time ideal_fct(uint64_t bytes, const PathModel& path);

// The ideal FCT of one flow (> 0), computed by the caller from the topology.
using IdealFct = std::function<Time(const FlowSpec&)>;

struct FlowStats {
  size_t total = 0;
  size_t completed = 0;
  // Over completed flows; 0 when none completed.
  double fct_min_us = 0;
  double fct_p50_us = 0;
  double fct_p99_us = 0;
  double fct_max_us = 0;
  // FCT / ideal FCT, over completed flows.
  double slowdown_mean = 0;
  double slowdown_p50 = 0;
  double slowdown_p99 = 0;
  double slowdown_max = 0;
  // Makespan: from the first flow's start to the last completion.
  Time first_start = 0;
  Time last_finish = 0;
  uint64_t completed_bytes = 0;
  double goodput_gbps = 0;  // completed bytes over the makespan
};

// Percentiles are nearest-rank. `records` and `flows` are indexed by flow id (as the
// WorkloadRunner keeps them) and must have the same size.
absl::StatusOr<FlowStats> flow_stats(std::span<const FlowRecord> records,
                                     std::span<const FlowSpec> flows, const IdealFct& ideal);

// One line: "flows 16/16 fct_us min .. p50 .. p99 .. max .. slowdown p50 .. p99 .. goodput ..".
std::string format_flow_stats(const FlowStats& s);

// Every port's counters summed, at the network's current time (calls net.flush_stats()).
// Queue averages divide the queue integral since t = 0 by `window`; 0 means net.now(). Pass
// the makespan when the run was driven well past the last completion (run_until(kSecond)).
struct PortSummary {
  uint64_t drops = 0;           // buffer overflow in the lossy class, down links
  uint64_t lossless_drops = 0;  // lossless class beyond PFC headroom (a misconfiguration)
  uint64_t wire_losses = 0;
  uint64_t corruptions = 0;
  uint64_t trims = 0;
  uint64_t ecn_marks = 0;
  uint64_t pauses = 0;           // PFC XOFF frames sent
  Time paused_time = 0;          // summed over ports, data class
  uint64_t max_queue_bytes = 0;  // the largest queue any port held
  // The port with the largest time-averaged queue, and that average over the window.
  uint32_t busiest_port = kNone;
  double busiest_avg_queue_bytes = 0;
};

PortSummary port_summary(Network& net, Time window = 0);

std::string format_port_summary(const PortSummary& s);

}  // namespace uet::sim
