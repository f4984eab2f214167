// Collective operations as NCCL and MPI run them, turned into flow lists (sim/workload.h) that
// the workload runner or the A/B runner plays: every send of every step is a flow, and a step
// waits for exactly the flows whose data it consumes (event-driven, no global barrier).
//
// Sizes follow nccl-tests: `bytes` is the buffer the collective is named for (all-reduce and
// broadcast, reduce: the buffer; all-gather, gather: the gathered output; reduce-scatter,
// scatter: the input; all-to-all: each rank's send buffer), in 4-byte elements. Within a step the data is cut into exact parts
// (sizes differ by at most one byte), so the bytes a rank sends are exactly the algorithm's.
//
// NCCL's structure where it shapes the traffic: `channels` independent copies of the algorithm
// each carry a share of the buffer, and ring, chain and tree algorithms pipeline their data in
// `chunk_bytes` pieces, up to `slots` of them in flight on a rank pair; a ring step moves
// `chunk_steps` pieces per rank, each forwarded on its own as it arrives. Every flow names its
// channel (FlowSpec::channel), and as NCCL opens one connection per channel, the A/B runner
// opens one RoCEv2 QP per rank pair and channel: each QP has its own UDP source port, so the
// channels of a pair hash onto different ECMP paths. UET keeps one PDC per pair for all
// channels, since a PDC sprays its packets over paths itself.
//
// Conventions as in sim/workload.h: flow ids are indices; hosts are Network host numbers; bad
// arguments return InvalidArgument naming the parameter and its valid range. Pure: the same
// spec gives the same flows, bit for bit.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/rng.h"
#include "sim/workload.h"

namespace uet::sim {

enum class Collective : uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kAllToAll,
  kReduce,
  kGather,
  kScatter,
};

// ring: NCCL's ring (all-reduce = reduce-scatter then all-gather, 2(n-1) steps); for broadcast
// and reduce NCCL's chain along the ring (from the root, or ending at it). tree: NCCL's double
// binary tree (all-reduce; two trees, each half the buffer, every rank a leaf in one of them
// when n is even). hd: recursive halving-doubling (Rabenseifner;
// all-reduce at any n, reduce-scatter and all-gather at powers of two). pairwise: all-to-all in
// n-1 shifted exchanges, each a sendrecv whose send waits for both ranks to be through the
// previous one (MPI's pairwise exchange); batched: all-to-all, gather and scatter with every
// send posted at once (NCCL's grouped send/recv).
enum class CollectiveAlgo : uint8_t { kRing, kTree, kHalvingDoubling, kPairwise, kBatched };

// Names as flags spell them: allreduce, reducescatter, allgather, broadcast, alltoall, reduce,
// gather, scatter; ring, tree, hd, pairwise, batched.
std::string_view to_string(Collective c) noexcept;
std::string_view to_string(CollectiveAlgo a) noexcept;
absl::StatusOr<Collective> parse_collective(std::string_view name);
absl::StatusOr<CollectiveAlgo> parse_collective_algo(std::string_view name);

// Whether the collective has a root rank (broadcast, reduce, gather, scatter) and whether it
// reduces (all-reduce, reduce-scatter, reduce): nccl-tests' root and redop columns.
bool collective_has_root(Collective c) noexcept;
bool collective_reduces(Collective c) noexcept;

// The algorithms a collective can run with, the first being its default.
std::vector<CollectiveAlgo> collective_algos(Collective c);

// nccl-tests' bus bandwidth factor (its PERFORMANCE.md): busbw = algbw * factor, so that busbw
// of an optimal algorithm is the per-rank link rate it needs. all-reduce 2(n-1)/n,
// reduce-scatter, all-gather, all-to-all, gather and scatter (n-1)/n, broadcast and reduce 1.
double bus_bandwidth_factor(Collective c, uint32_t ranks) noexcept;

// nccl-tests' size alignment: the size rounded down to whole elements per rank where the
// collective splits the buffer by rank (reduce-scatter, all-gather, all-to-all, gather,
// scatter), to whole elements otherwise.
inline constexpr uint32_t kCollectiveElementBytes = 4;  // float, as nccl-tests' default
uint64_t collective_aligned_bytes(Collective c, uint32_t ranks, uint64_t bytes) noexcept;

// Bounds of a spec.
inline constexpr uint32_t kMaxCollectiveChannels = 64;
inline constexpr uint32_t kMaxCollectiveSlots = 64;
inline constexpr uint32_t kMaxCollectiveChunkSteps = 64;
inline constexpr uint64_t kMinCollectiveChunk = 4096;
inline constexpr uint64_t kMaxCollectiveChunk = uint64_t{1} << 30;
inline constexpr uint64_t kMaxCollectiveBytes = uint64_t{1} << 40;

struct CollectiveSpec {
  Collective collective = Collective::kAllReduce;
  CollectiveAlgo algo = CollectiveAlgo::kRing;
  std::vector<uint32_t> hosts;        // rank r runs on host hosts[r]; distinct; at least 2 ranks
  uint64_t bytes = 0;                 // nccl-tests' size; aligned with collective_aligned_bytes()
  uint32_t channels = 1;              // 1..kMaxCollectiveChannels; fewer when the buffer is small
  uint64_t chunk_bytes = 512 * 1024;  // pipelining unit; NCCL's default step for Simple
  // Chunks in flight per rank pair and channel (NCCL_STEPS): a send waits for the one `slots`
  // earlier on the same pair to complete. 1..kMaxCollectiveSlots.
  uint32_t slots = 8;
  // Ring (all-reduce, reduce-scatter, all-gather): chunks each ring step moves per rank,
  // each its own send, forwarded as soon as it has arrived. NCCL's ALLREDUCE_CHUNKSTEPS,
  // ALLGATHER_CHUNKSTEPS and REDUCESCATTER_CHUNKSTEPS: NCCL_STEPS / 2 = 4
  // (src/include/collectives.h). 1..kMaxCollectiveChunkSteps.
  uint32_t chunk_steps = 4;
  uint32_t root = 0;  // broadcast, reduce, gather, scatter: the root rank
};

struct CollectivePlan {
  std::vector<FlowSpec> flows;
  uint64_t bytes = 0;     // the aligned size the flows carry
  uint32_t channels = 0;  // the channels used: as asked, or fewer so that no part is empty
  // Per rank: the bytes it sends, summed over its flows (the tests' ledger).
  std::vector<uint64_t> sent_by_rank;
};

// The flows of one collective. Refused (InvalidArgument, naming the field): fewer than 2
// ranks, a host twice, an algorithm the collective does not have, hd reduce-scatter or
// all-gather at a rank count that is not a power of two, a size that leaves a rank less than
// one element, more than kMaxWorkloadFlows flows.
absl::StatusOr<CollectivePlan> collective_flows(const CollectiveSpec& spec);

// The hierarchical form, for hosts that stand for GPUs of multi-GPU servers: `gpus` consecutive
// ranks are one server, each with its own NIC (one rail per GPU index). An all-reduce is an
// intra-server reduce-scatter, then an all-reduce of the buffer's 1/gpus share among the
// servers on every rail at once (over the fabric, with `spec.algo`), then an intra-server
// all-gather; the intra-server phases are compute tasks of `latency` plus (gpus-1)/gpus of the
// buffer at `gbps` (NVLink-class). All-reduce only; n a multiple of gpus, at least 2 servers.
struct ServerSpec {
  uint32_t gpus = 8;
  double gbps = 3600;  // per direction: NVLink 4's 450 GB/s
  Time latency = 1 * kMicrosecond;
};
absl::StatusOr<CollectivePlan> hierarchical_flows(const CollectiveSpec& spec,
                                                  const ServerSpec& server);

// Where ranks run. contiguous: rank r on host r; strided: ranks spread evenly over the hosts
// (rank r on host r * hosts / ranks), so neighbours sit on different leaves; random: a
// uniformly random set of hosts in random order, from `rng`. ranks: 2..hosts.
enum class RankPlacement : uint8_t { kContiguous, kStrided, kRandom };
absl::StatusOr<RankPlacement> parse_rank_placement(std::string_view name);
absl::StatusOr<std::vector<uint32_t>> place_ranks(uint32_t ranks, uint32_t hosts,
                                                  RankPlacement placement, Rng& rng);

// Communicators of a job laid out as data x tensor parallelism, tensor-parallel ranks adjacent
// (as Megatron-LM orders them): rank r = d * tp + t. world: one communicator of every rank;
// tensor: dp communicators of tp consecutive ranks; data: tp communicators of the dp ranks
// that share t. Each communicator lists its members' hosts in rank order. dp * tp must equal
// the number of ranks.
enum class ParallelGroup : uint8_t { kWorld, kData, kTensor };
absl::StatusOr<ParallelGroup> parse_parallel_group(std::string_view name);
absl::StatusOr<std::vector<std::vector<uint32_t>>> communicators(
    const std::vector<uint32_t>& rank_hosts, uint32_t dp, uint32_t tp, ParallelGroup group);

// NCCL's double binary tree, by rank: the parent (-1 at the root) and up to two children of
// `rank` in tree 0 or 1. Tree 0 is the in-order binary tree on 0..n-1 whose root 0 has one
// child; tree 1 mirrors it (n even) or shifts it by one rank (n odd).
struct TreeNode {
  int32_t parent = -1;
  int32_t child[2] = {-1, -1};
};
std::vector<TreeNode> binary_tree(uint32_t ranks, int tree);

}  // namespace uet::sim
