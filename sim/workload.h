// Workloads for the simulator: pure generators of flow lists (DESIGN.md, "Simulator":
// permutation, N:1 incast, all-to-all, ring all-reduce steps, Poisson arrivals from a flow-size
// CDF). A generator only describes traffic; WorkloadRunner (sim/workload_runner.h) plays it on a
// Network.
//
// Conventions: flow ids are indices (flows[i].id == i); hosts are host numbers as in
// Network::host(); times are picoseconds. A flow with an empty `after` starts at `start`
// (relative to the start of the run); a flow with prerequisites starts `start` after the last
// of them has been completely received. Generators are pure: the same arguments and the same
// Rng state give the same flows, bit for bit. Bad arguments return InvalidArgument naming the
// parameter and its valid range.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/rng.h"
#include "transport/transport.h"

namespace uet::sim {

struct FlowSpec {
  uint32_t id = 0;
  uint32_t src = 0;
  uint32_t dst = 0;
  uint64_t bytes = 0;
  Time start = 0;               // absolute, or a delay after the last of `after` completes
  std::vector<uint32_t> after;  // ids of flows that must complete before this one starts
  // Not a flow but a task on host `src` (dst == src, bytes == 0) that completes `start` after
  // its prerequisites: compute time in a trace, or a join of prerequisites. The A/B runner
  // plays them; the UDP workload runner refuses them.
  bool compute = false;
  // A compute task's stream on its host: 0, none (it runs as soon as its prerequisites are
  // done, beside any other); tasks of one host and one stream s > 0 run one at a time, the
  // ready one with the lowest id first (a rank's CPU or GPU stream in a trace).
  uint8_t stream = 0;
  // The connection within the host pair: flows of the same (src, dst, channel) share one
  // connection (a RoCEv2 QP; UET opens one PDC per host pair whatever the channel). A
  // collective sets it to the channel (the parallel ring or tree) the flow belongs to, as NCCL
  // opens one connection per channel; every other generator leaves it 0.
  uint16_t channel = 0;
};

// Bounds every generator and the runner enforce: a flow list is held in memory.
inline constexpr uint32_t kMaxWorkloadHosts = (1u << 24) - 2;  // Network::finalize()'s kMaxHosts
inline constexpr uint64_t kMaxWorkloadFlows = uint64_t{1} << 24;

inline constexpr uint64_t kMaxCdfBytes = uint64_t{1} << 53;  // the largest size a CDF may name

// An empirical flow-size distribution: points (bytes, P[size <= bytes]) with bytes strictly
// increasing, probabilities non-decreasing in [0, 1] and the last exactly 1. Between points the
// CDF is linear (sizes uniform within a segment); below the first point it has a step of
// `p` at the first size.
struct FlowSizeCdf {
  struct Point {
    uint64_t bytes;
    double p;
  };
  std::vector<Point> points;

  // Validates the points; `where` prefixes messages (a file name).
  static absl::StatusOr<FlowSizeCdf> create(std::vector<Point> points,
                                            std::string_view where = "cdf");
  // Inverse transform sampling with linear interpolation between points; at least 1 byte.
  uint64_t sample(Rng& rng) const;
  // The exact mean of the piecewise-linear distribution, in bytes.
  double mean() const;
};

// Parses the text format: one "bytes cumulative_probability" pair per line; '#' starts a
// comment; blank lines are ignored. Errors name `where` and the line: "web.cdf:7: ...".
absl::StatusOr<FlowSizeCdf> parse_cdf(std::string_view text, std::string_view where = "cdf");
absl::StatusOr<FlowSizeCdf> load_cdf(const std::string& path);

// The path of a data file shipped in sim/data/ (for example "websearch.cdf", "hadoop.cdf"),
// resolved against the source tree the library was built from.
std::string sim_data_path(std::string_view file);

// ----- generators

// Every host sends `bytes` to one other host and receives from exactly one: a uniformly random
// derangement of the hosts (a random permutation with no fixed point). Flow i is sent by host i.
// hosts: 2..kMaxWorkloadHosts; bytes >= 1.
absl::StatusOr<std::vector<FlowSpec>> permutation(uint32_t hosts, uint64_t bytes, Rng& rng);

// `fan_in` senders each send `bytes` to `dst`, all at t = 0. The senders are the hosts after
// dst in ring order: dst+1, dst+2, ... (mod hosts). fan_in: 1..hosts-1; dst < hosts.
absl::StatusOr<std::vector<FlowSpec>> incast(uint32_t hosts, uint32_t fan_in, uint32_t dst,
                                             uint64_t bytes);

// A permutation of `bytes` (drawn as permutation() draws it) plus `incasts` incasts of
// `fan_in` senders of `bytes` each, all at t = 0, as uet-htsim's "permutation + incasts"
// matrices: the receivers are distinct hosts drawn uniformly after the permutation, each
// incast's senders distinct hosts drawn uniformly from the others (a host may send in the
// permutation and in several incasts). Flow ids: the permutation's 0..hosts-1 (flow i sent by
// host i), then incast j's fan_in flows, j = 0, 1, ...
// hosts: 2..kMaxWorkloadHosts; incasts: 1..hosts; fan_in: 1..hosts-1; bytes >= 1; at most
// kMaxWorkloadFlows flows in all.
absl::StatusOr<std::vector<FlowSpec>> permutation_incasts(uint32_t hosts, uint32_t incasts,
                                                          uint32_t fan_in, uint64_t bytes,
                                                          Rng& rng);

// Every ordered pair (src, dst), src != dst, sends `bytes` at t = 0: hosts * (hosts - 1)
// flows, ordered by src, then by dst - src (mod hosts).
absl::StatusOr<std::vector<FlowSpec>> all_to_all(uint32_t hosts, uint64_t bytes);

// The ring all-reduce (reduce-scatter, then all-gather) over hosts 0..N-1 in ring order:
// 2(N-1) steps; in each step every host i sends ceil(total_bytes / N) to (i+1) mod N. Flow
// id = step * N + i. Host i's step-k flow (k >= 1) waits for its own step k-1 flow to be
// received and for its predecessor's step k-1 flow (into i) to be received.
// hosts: 2..kMaxWorkloadHosts; total_bytes >= hosts.
absl::StatusOr<std::vector<FlowSpec>> ring_allreduce(uint32_t hosts, uint64_t total_bytes);
inline uint32_t ring_allreduce_steps(uint32_t hosts) { return 2 * (hosts - 1); }

// Open-loop Poisson arrivals at every host over [0, duration): flow sizes drawn from `cdf`,
// arrival rate chosen so that the offered payload load on each host link is `load` of
// `host_gbps` (rate = load * host_gbps / 8 / cdf.mean() flows per second per host);
// destinations uniform over the other hosts. Flows are ordered by start time.
// hosts: 2..kMaxWorkloadHosts; load: (0, 1]; host_gbps: (0, 10000]; duration > 0; the
// expected number of flows at most kMaxWorkloadFlows.
absl::StatusOr<std::vector<FlowSpec>> poisson(uint32_t hosts, double load, double host_gbps,
                                              const FlowSizeCdf& cdf, Time duration, Rng& rng);

// Appends `more` to `flows`, renumbering its ids (and its `after` references) to follow on,
// so that workloads can be combined (a Poisson background plus an incast).
void append_flows(std::vector<FlowSpec>& flows, std::vector<FlowSpec> more);

// The `after` edges reversed: per flow, the flows that wait for it, in compressed rows (those
// of flow f are ids[begin[f] .. begin[f + 1]), in flow order), as the players release them.
struct FlowDependents {
  std::vector<uint32_t> begin;  // flows.size() + 1 offsets into ids
  std::vector<uint32_t> ids;
};
// Every `after` id must name a flow of `flows` (ids are indices).
FlowDependents flow_dependents(const std::vector<FlowSpec>& flows);

}  // namespace uet::sim
