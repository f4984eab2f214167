// Training steps from execution traces: MLCommons Chakra files (the protobuf format ASTRA-sim
// reads; sim/trace/chakra.proto) read into per-rank node lists and turned into one flow DAG
// (sim/workload.h) that the A/B runner plays.
//
// A trace is one file per rank, PREFIX.0.et, PREFIX.1.et, ...: a GlobalMetadata message and
// then Node messages, each preceded by its length as a varint. What a node becomes:
// - COMP_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, METADATA_NODE: a compute task of
//   duration_micros on the rank's host (FlowSpec::compute);
// - COMM_COLL_NODE (attributes comm_type, comm_size): the i-th collective node of every rank
//   is one collective over all ranks (sim/collective.h, the collective's default algorithm);
//   each rank joins when its own prerequisites are done, and its node is done when every flow
//   that rank sends or receives in it has completed. BARRIER is an all-reduce of one element
//   per rank. pg_name and involved_dim are not read: every collective spans every rank;
// - COMM_SEND_NODE (comm_dst, comm_tag, comm_size) and COMM_RECV_NODE (comm_src, comm_tag):
//   matched in order per (sender, receiver, tag); one flow that starts when both sides' own
//   prerequisites are done.
// Dependencies are data_deps and ctrl_deps, within the rank's file.
//
// Bad input is refused with the file, the node id and the reason: a missing file or a
// truncated message, an unknown node type, a dependency on a node the file lacks or a cycle,
// collectives that differ between ranks, a send without its receive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/collective.h"
#include "sim/workload.h"

namespace uet::sim {

struct TraceNode {
  enum class Kind : uint8_t { kCompute, kCollective, kSend, kRecv };
  uint64_t id = 0;
  std::string name;
  Kind kind = Kind::kCompute;
  uint64_t duration_us = 0;                        // compute
  Collective collective = Collective::kAllReduce;  // collective
  bool barrier = false;                            // collective: Chakra's BARRIER
  uint64_t bytes = 0;                              // collective, send
  uint32_t peer = 0;                               // send: the destination rank; recv: the source
  int64_t tag = 0;                                 // send, recv
  std::vector<uint64_t> deps;                      // data and control dependencies
};

struct Trace {
  std::vector<std::vector<TraceNode>> ranks;  // per rank, in file order
};

// Reads PREFIX.0.et, PREFIX.1.et, ... up to the first rank without a file (at least 2).
absl::StatusOr<Trace> read_chakra(const std::string& prefix);
// Writes one file per rank in the same format (the generator's output and the tests' input).
absl::Status write_chakra(const std::string& prefix, const Trace& trace);

struct TraceOptions {
  uint32_t channels = 1;
  uint64_t chunk_bytes = 512 * 1024;
  uint32_t slots = 8;
};

struct TracePlan {
  std::vector<FlowSpec> flows;  // flows and compute tasks
  Time compute_only = 0;        // the step's length if every flow took no time
  uint64_t collectives = 0, p2p = 0, compute_nodes = 0;
  uint64_t network_bytes = 0;  // bytes the flows carry
};

// rank_hosts[r]: the host of rank r; one per rank of the trace.
absl::StatusOr<TracePlan> trace_flows(const Trace& trace, const std::vector<uint32_t>& rank_hosts,
                                      const TraceOptions& options = {});

// Generated steps, for tests and examples:
// - data_parallel_step: forward compute, then backward compute layer by layer (last layer
//   first); each layer's gradient bucket is all-reduced as soon as its backward is done, so
//   the all-reduces overlap the rest of the backward pass; the optimizer step waits for all.
// - moe_layer: attention compute, all-to-all dispatch of `bytes`, expert compute, all-to-all
//   combine, on every rank.
Trace data_parallel_step(uint32_t ranks, uint32_t layers, uint64_t bucket_bytes,
                         uint64_t forward_us, uint64_t backward_us_per_layer);
Trace moe_layer(uint32_t ranks, uint64_t bytes, uint64_t attention_us, uint64_t expert_us);

}  // namespace uet::sim
