// What the collective files share: the flow DAG builder and the per-channel schedules
// (collective_schedules.cc) that collective_flows() (collective.cc) checks, sizes and calls.
// Internal to sim/ (use sim/collective.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "sim/collective.h"
#include "sim/workload.h"

namespace uet::sim::collective_internal {

inline constexpr uint32_t kNone = UINT32_MAX;
static_assert(kMaxCollectiveChannels - 1 <= UINT16_MAX, "a channel fits FlowSpec::channel");

// Part i of `total` cut into `parts` pieces that differ by at most one byte.
constexpr uint64_t split(uint64_t total, uint64_t parts, uint64_t i) noexcept {
  return total / parts + (i < total % parts ? 1 : 0);
}

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) noexcept { return a / b + (a % b != 0); }

// Appends flows, resolving ranks to hosts and tagging each with the channel being built;
// `after` may name kNone (no such prerequisite).
class Dag {
 public:
  Dag(CollectivePlan& plan, const std::vector<uint32_t>& hosts) : plan_(plan), hosts_(hosts) {}

  // The channel the flows added from now on belong to (FlowSpec::channel).
  void set_channel(uint32_t c) { channel_ = static_cast<uint16_t>(c); }

  uint32_t add(uint32_t src, uint32_t dst, uint64_t bytes, std::initializer_list<uint32_t> after) {
    const auto id = static_cast<uint32_t>(plan_.flows.size());
    FlowSpec f{id, hosts_[src], hosts_[dst], bytes, 0, {}};
    f.channel = channel_;
    for (uint32_t a : after)
      if (a != kNone && std::find(f.after.begin(), f.after.end(), a) == f.after.end())
        f.after.push_back(a);
    plan_.flows.push_back(std::move(f));
    plan_.sent_by_rank[src] += bytes;
    return id;
  }
  // For prerequisite lists built at run time (a tree root waits on all its children).
  uint32_t add(uint32_t src, uint32_t dst, uint64_t bytes, const std::vector<uint32_t>& after) {
    const uint32_t id = add(src, dst, bytes, {});
    for (uint32_t a : after)
      if (a != kNone) plan_.flows[id].after.push_back(a);
    return id;
  }

 private:
  CollectivePlan& plan_;
  const std::vector<uint32_t>& hosts_;
  uint16_t channel_ = 0;
};

// ----- ring (and chain): the part each rank sends at each step.

inline uint32_t ring_steps(Collective c, uint32_t n) {
  return c == Collective::kAllReduce ? 2 * (n - 1) : n - 1;
}

// The pieces a ring channel's share is cut into, each n parts of at most `chunk`. A share
// smaller than one piece per chunk step still moves in several: NCCL cuts a ring step's chunk
// into CHUNKSTEPS / SLICESTEPS slices (SLICESTEPS = NCCL_STEPS / 4 = 2 steps), none below 1/32
// of a full slice (src/include/collectives.h, src/device/prims_simple.h).
inline uint64_t ring_loops(uint64_t channel_bytes, uint32_t n, uint64_t chunk,
                           uint32_t chunk_steps) {
  const uint64_t loops = ceil_div(channel_bytes, uint64_t{n} * chunk);
  const uint64_t slices = std::max<uint32_t>(1, chunk_steps / 2);
  const uint64_t min_slice = 2 * chunk / 32;
  return std::max(loops, std::min(slices, channel_bytes / (uint64_t{n} * min_slice)));
}

// One channel of the ring (all-reduce, reduce-scatter, all-gather).
void ring_channel(Dag& dag, Collective c, uint32_t n, uint64_t channel_bytes, uint64_t chunk,
                  uint32_t slots, uint32_t chunk_steps);
// Broadcast and reduce: a chain along the ring from rank `first`.
void chain_channel(Dag& dag, uint32_t n, uint32_t first, uint64_t channel_bytes, uint64_t chunk,
                   uint32_t slots);

// ----- double binary tree: one tree's share of one channel, reduced up and broadcast down.

void tree_channel(Dag& dag, const std::vector<TreeNode>& t, uint64_t bytes, uint64_t chunk,
                  uint32_t slots);

// ----- recursive halving-doubling

// Per virtual rank: the range of blocks it holds and its last send and receive.
struct HdState {
  std::vector<uint32_t> lo, last_send, last_recv;
  explicit HdState(uint32_t p) : lo(p, 0), last_send(p, kNone), last_recv(p, kNone) {}
};

// Reduce-scatter by recursive halving and all-gather by recursive doubling over the virtual
// ranks `real` maps to ranks (a power of two of them).
void hd_halving(Dag& dag, HdState& s, const std::vector<uint32_t>& real, uint64_t bytes);
void hd_doubling(Dag& dag, HdState& s, const std::vector<uint32_t>& real, uint64_t bytes);
// Rabenseifner's all-reduce at any n.
void hd_allreduce_channel(Dag& dag, uint32_t n, uint64_t bytes);

// ----- all-to-all, gather and scatter: each rank's part moved once, unchunked.

void alltoall(Dag& dag, uint32_t n, uint64_t bytes, bool pairwise);
void direct(Dag& dag, uint32_t n, uint32_t root, uint64_t bytes, bool to_root);

}  // namespace uet::sim::collective_internal
