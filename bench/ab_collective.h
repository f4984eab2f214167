// Collectives on the A/B runner, reported as nccl-tests reports them: per size, the time of
// one collective, its algorithm bandwidth (size / time) and bus bandwidth (algbw times the
// collective's factor, sim/collective.h), per transport, with the UET/RoCEv2 ratio.
//
// A collective's time runs from its start on every rank (t = 0) to the completion of its last
// WRITE at its initiator (every byte acknowledged). Iterations are independent runs with seeds
// seed, seed+1, ...: they differ in ECMP hashing, spraying and loss draws, as one job differs
// from the next on a real cluster; `time` is their mean, as nccl-tests prints, and p99 their
// 99th percentile.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/ab_runner.h"
#include "sim/collective.h"

namespace uet::ab {

// nccl-tests' -b/-e/-f as one flag: "BEGIN:END:FACTOR" with K, M, G suffixes (powers of 1024),
// e.g. "8K:1G:2"; a single size "1M" is one row. Sizes grow by the integer factor from BEGIN
// while they do not exceed END. At most 64 sizes, each 4..2^40 bytes.
absl::StatusOr<std::vector<uint64_t>> parse_sizes(std::string_view text);

// One transport's figures at one size, over its iterations.
struct CollectiveFigures {
  TransportKind transport = TransportKind::kUet;
  std::vector<double> iteration_us;  // per iteration
  double time_us = 0;                // mean over iterations
  double p99_us = 0;
  double algbw_gbytes = 0;  // GB/s (10^9 bytes), as nccl-tests
  double busbw_gbytes = 0;
  uint64_t flows = 0;   // per iteration
  uint64_t failed = 0;  // flows not completed with success, over all iterations
  uint64_t retransmitted = 0, timeouts = 0, drops = 0, trims = 0, pfc_pauses = 0;
  uint64_t events = 0;
  double wall_s = 0;
};

// Folds one transport's iterations at one size (`bytes` as planned, aligned).
CollectiveFigures collective_figures(const std::vector<RunResult>& iterations,
                                     sim::Collective collective, uint32_t ranks, uint64_t bytes);

// The table nccl-tests prints, with one block of columns per transport and the busbw ratio.
std::string collective_header(const std::vector<TransportKind>& transports);
std::string collective_row(uint64_t bytes, sim::Collective collective, uint32_t root,
                           const std::vector<CollectiveFigures>& figures);

}  // namespace uet::ab
