// Training steps from execution traces: MLCommons Chakra files (the protobuf format ASTRA-sim
// reads; sim/trace/chakra.proto) read into per-rank node lists and turned into one flow DAG
// (sim/workload.h) that the A/B runner plays.
//
// A trace is one file per rank, PREFIX.0.et, PREFIX.1.et, ...: a GlobalMetadata message and
// then Node messages, each preceded by its length as a varint. What a node becomes:
// - any node with is_cpu_op true, whatever its type (PyTorch's host-side ops, the c10d call
//   of a collective among them): host work of duration_micros on the rank's CPU stream
//   (zero: it takes no time), never communication;
// - INVALID_NODE: nothing (ASTRA-sim skips it): done when its dependencies are;
// - COMP_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, METADATA_NODE otherwise: a compute task of
//   duration_micros on the rank's GPU stream (memory nodes: its memory stream). A stream runs
//   one node at a time, the ready one with the lowest id first, and the streams of a rank
//   overlap: a node waits for its dependencies, not for another stream (ASTRA-sim's
//   HardwareResource and its issue loop). is_cpu_op absent is false (ASTRA-sim's FeederV3
//   default), so traces that never set it communicate from their COMM nodes;
// - COMM_COLL_NODE (attributes comm_type, comm_size, pg_name): a collective over the ranks of
//   its communicator (sim/collective.h, the collective's default algorithm). pg_name names the
//   communicator (ASTRA-sim's convention: absent, "" or "0" is every rank; any other name is
//   looked up in the communicator groups: those PyTorch's "## process_group:init ##" metadata
//   node records in the files, every rank's alike, or read_comm_groups()'s), and the k-th node of a
//   communicator in every member's file is one collective. Each rank joins when its own
//   prerequisites are done, and its node is done when every flow that rank sends or receives
//   in it has completed. BARRIER is an all-reduce of one element per rank. REDUCE, GATHER,
//   SCATTER and BROADCAST take their root from the attribute root_rank (a global rank of the
//   communicator; our extension, as Chakra has no root field; absent: the communicator's first
//   rank). involved_dim is not read: the fabric is one dimension;
// - COMM_SEND_NODE (comm_dst, comm_tag, comm_size) and COMM_RECV_NODE (comm_src, comm_tag):
//   matched in order per (sender, receiver, tag); one flow that starts when both sides' own
//   prerequisites are done.
// Dependencies are data_deps and ctrl_deps, within the rank's file (one named twice counts
// once). Attributes not named here (rf_id, op_schema, fw_parent, seq_id, tid, ...) and fields
// the reader does not declare (inputs, outputs) are ignored; the metadata's schema version is
// not checked (Chakra's tools write "0.0.4" and "1.0.x" alike).
// comm_size is the buffer as ASTRA-sim's collectives take it (its ring cuts data_size by the
// ring's ranks for all-reduce, all-gather, reduce-scatter and all-to-all alike), which is
// sim/collective.h's convention: all-gather's gathered output, reduce-scatter's input,
// all-to-all's send buffer per rank.
//
// Bad input is refused with the file, the node id and the reason: a missing file or a
// truncated message, an unknown node type, a dependency on a node the file lacks or a cycle,
// collectives that differ between ranks, a communicator the groups do not define or a rank
// outside its communicator, a send without its receive.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
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
  std::vector<uint64_t> deps;                      // data dependencies (data_deps)
  std::vector<uint64_t> ctrl_deps;                 // control dependencies: waited for alike
  // Chakra's is_cpu_op: a host op (compute on the CPU stream, whatever chakra_type says).
  bool cpu = false;
  // The Chakra NodeType read or to write when not the kind's own (COMP_NODE for compute,
  // COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE): INVALID_NODE, MEM_LOAD_NODE,
  // METADATA_NODE, or COMM_COLL_NODE for a host op (a c10d call); -1: the kind's own.
  int chakra_type = -1;
  // Attributes written beside the ones above and ignored when read, as converters add them.
  std::vector<std::pair<std::string, std::variant<int64_t, std::string>>> extra;
};

// A compute node's stream on its rank (FlowSpec::stream).
inline constexpr uint8_t kCpuStream = 1, kGpuStream = 2, kMemoryStream = 3;
uint8_t stream_of(const TraceNode& t);

// Communicators by pg_name: the member ranks in rank order of the communicator (the order a
// ring visits them).
using CommGroups = std::map<std::string, std::vector<uint32_t>>;

struct Trace {
  std::vector<std::vector<TraceNode>> ranks;  // per rank, in file order
  CommGroups groups;  // the communicators pg_name refers to (read_chakra: the files' metadata)
};

// Reads PREFIX.0.et, PREFIX.1.et, ... up to the first rank without a file (at least 2).
absl::StatusOr<Trace> read_chakra(const std::string& prefix);
// Reads one rank's file alone (PREFIX.r.et, or any file in the format), for tools that build a
// job from one captured rank; peers of sends and receives are not checked against a job.
absl::StatusOr<std::vector<TraceNode>> read_chakra_file(const std::string& file);
// A data-parallel job of `ranks` ranks from one rank's nodes: every rank runs them, and each
// collective spans the job (its pg_name dropped; `regrouped` counts those that named another
// process group). Refused: point-to-point nodes, which have no partner in such a job.
absl::StatusOr<Trace> replicate_rank(const std::vector<TraceNode>& nodes, uint32_t ranks,
                                     uint64_t* regrouped);
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

// One collective of the plan: the tasks that start and end each member's part in it.
struct TraceCollective {
  Collective collective = Collective::kAllReduce;
  bool barrier = false;
  uint64_t bytes = 0;
  std::string group;            // "" every rank
  std::vector<uint32_t> gates;  // per member: the task its flows wait for (its node's start)
  std::vector<uint32_t> dones;  // per member: the task that waits for its flows (its end)
};

struct TracePlan {
  std::vector<FlowSpec> flows;  // flows and compute tasks
  Time compute_only = 0;        // the step's length if every flow took no time
  uint64_t collectives = 0, p2p = 0, compute_nodes = 0;
  uint64_t network_bytes = 0;  // bytes the flows carry
  std::vector<TraceCollective> collective_list;  // in plan order
};

// A played step's collectives by kind and size: how many, and how long each took from the
// first member's start to the last member's end.
struct CollectiveSummary {
  std::string kind;  // to_string(Collective), or "barrier"
  uint64_t bytes = 0;
  uint64_t count = 0;
  Time busy = 0;     // the time at least one of them was in progress (at most the step's)
  Time total = 0;    // their durations summed (overlapping ones each count)
  Time longest = 0;
};
// `finish[i]`: when flow or task i of the plan finished (kNever: it did not); collectives
// that did not finish are left out. Ordered by kind, then size.
std::vector<CollectiveSummary> summarize_collectives(const TracePlan& plan,
                                                     const std::vector<Time>& finish);

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
// - converted_step: a data-parallel training step in the shape Chakra's PyTorch converter
//   writes: every operator a CPU op (is_cpu_op, a few microseconds, chained on the host
//   thread) launching its GPU kernels (is_cpu_op false); per layer two forward kernels, then
//   backward (last layer first) two kernels and the gradient bucket's all-reduce as both
//   halves, the host's "c10d::allreduce_" (a COMM_COLL_NODE without comm_type) and the
//   GPU's "ncclKernel_AllReduce_RING_LL_Sum_float" (comm_type, comm_size, pg_name "0"); the
//   optimizer's kernels after every all-reduce. Every node carries the converter's other
//   attributes (rf_id, seq_id, tid, fw_parent, op_schema), and deps are split between
//   data_deps and ctrl_deps as the converter splits them. Kernel times vary by layer
//   (deterministically): 4 + 9 * layers nodes per rank.
Trace converted_step(uint32_t ranks, uint32_t layers, uint64_t bucket_bytes, uint64_t kernel_us);

}  // namespace uet::sim
