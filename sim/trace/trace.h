// Training steps from execution traces: MLCommons Chakra files (the protobuf format ASTRA-sim
// reads; sim/trace/chakra.proto) read into per-rank node lists and turned into one flow DAG
// (sim/workload.h) that the A/B runner plays.
//
// A trace is one file per rank, PREFIX.0.et, PREFIX.1.et, ...: a GlobalMetadata message and
// then Node messages, each preceded by its length as a varint. What a node becomes:
// - COMP_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, METADATA_NODE: a compute task of
//   duration_micros on the rank's host (FlowSpec::compute);
// - COMM_COLL_NODE (attributes comm_type, comm_size, pg_name): a collective over the ranks of
//   its communicator (sim/collective.h, the collective's default algorithm). pg_name names the
//   communicator (ASTRA-sim's convention: absent, "" or "0" is every rank; any other name is
//   looked up in the communicator groups, read_comm_groups()), and the k-th node of a
//   communicator in every member's file is one collective. Each rank joins when its own
//   prerequisites are done, and its node is done when every flow that rank sends or receives
//   in it has completed. BARRIER is an all-reduce of one element per rank. REDUCE, GATHER,
//   SCATTER and BROADCAST take their root from the attribute root_rank (a global rank of the
//   communicator; our extension, as Chakra has no root field; absent: the communicator's first
//   rank). involved_dim is not read: the fabric is one dimension;
// - COMM_SEND_NODE (comm_dst, comm_tag, comm_size) and COMM_RECV_NODE (comm_src, comm_tag):
//   matched in order per (sender, receiver, tag); one flow that starts when both sides' own
//   prerequisites are done.
// Dependencies are data_deps and ctrl_deps, within the rank's file.
//
// Bad input is refused with the file, the node id and the reason: a missing file or a
// truncated message, an unknown node type, a dependency on a node the file lacks or a cycle,
// collectives that differ between ranks, a communicator the groups do not define or a rank
// outside its communicator, a send without its receive.
#pragma once

#include <cstdint>
#include <map>
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
  std::string group;                               // collective: pg_name; "" every rank
  int64_t root = -1;                               // collective: root_rank; -1 absent
  uint64_t bytes = 0;                              // collective, send
  uint32_t peer = 0;                               // send: the destination rank; recv: the source
  int64_t tag = 0;                                 // send, recv
  std::vector<uint64_t> deps;                      // data and control dependencies
};

// Communicators by pg_name: the member ranks in rank order of the communicator (the order a
// ring visits them).
using CommGroups = std::map<std::string, std::vector<uint32_t>>;

struct Trace {
  std::vector<std::vector<TraceNode>> ranks;  // per rank, in file order
  CommGroups groups;                          // the communicators pg_name refers to
};

// Reads PREFIX.0.et, PREFIX.1.et, ... up to the first rank without a file (at least 2).
absl::StatusOr<Trace> read_chakra(const std::string& prefix);
// Writes one file per rank in the same format (the generator's output and the tests' input).
// The groups are not part of the .et files: write_comm_groups() writes them.
absl::Status write_chakra(const std::string& prefix, const Trace& trace);

// The communicator groups of a trace in ASTRA-sim's format (its --comm-group-configuration): one
// JSON object whose keys are the pg_name values and whose values are arrays of member ranks,
// e.g. {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]}. Refused, naming the file and the group: not
// such an object, a name "" or "0" (those mean every rank), a member that is not an integer in
// [0, ranks), a rank twice in one group, an empty group.
absl::StatusOr<CommGroups> read_comm_groups(const std::string& path, uint32_t ranks);
absl::Status write_comm_groups(const std::string& path, const CommGroups& groups);

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
// - hybrid_step: a data x tensor parallel job (tensor-parallel ranks adjacent, as Megatron-LM
//   lays them out: rank = d * tp + t) with communicators "tp<d>" and "dp<t>": per layer,
//   forward compute and an all-reduce of `tp_bytes` of activations in the tensor-parallel
//   group; then per layer (last first) backward compute, the activations' all-reduce in the
//   tensor-parallel group and the layer's gradient bucket of `dp_bytes` all-reduced in the
//   data-parallel group, overlapping the rest of the backward pass.
Trace data_parallel_step(uint32_t ranks, uint32_t layers, uint64_t bucket_bytes,
                         uint64_t forward_us, uint64_t backward_us_per_layer);
Trace moe_layer(uint32_t ranks, uint64_t bytes, uint64_t attention_us, uint64_t expert_us);
Trace hybrid_step(uint32_t dp, uint32_t tp, uint32_t layers, uint64_t tp_bytes,
                  uint64_t dp_bytes, uint64_t compute_us_per_layer);

}  // namespace uet::sim
