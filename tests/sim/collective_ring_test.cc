// The ring's chunk steps (CollectiveSpec::chunk_steps, NCCL's CHUNKSTEPS): a ring step moves
// several pieces, each its own send waiting only for the same piece one hop back, so a rank
// forwards each piece as it arrives; on a fabric this hides the wait for each completion.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "sim/collective.h"
#include "sim/topology.h"
#include "sim/workload_runner.h"
#include "tests/common/mentions.h"

namespace uet::sim {
namespace {

using ::uet::testing_util::Mentions;

CollectiveSpec ring(uint32_t n, uint64_t bytes, uint64_t chunk, uint32_t chunk_steps) {
  CollectiveSpec s;
  s.hosts.resize(n);
  std::iota(s.hosts.begin(), s.hosts.end(), 0u);
  s.bytes = bytes;
  s.chunk_bytes = chunk;
  s.chunk_steps = chunk_steps;
  return s;
}

// Per rank, its sends' flow ids in the order they were built (= the stream's order).
std::vector<std::vector<uint32_t>> streams(const std::vector<FlowSpec>& flows, uint32_t n) {
  std::vector<std::vector<uint32_t>> by_rank(n);
  for (const FlowSpec& f : flows) by_rank[f.src].push_back(f.id);
  return by_rank;
}

TEST(CollectiveRing, EachPieceWaitsForTheSamePieceOneHopBackAndItsSlot) {
  // 4 ranks, 8 pieces of 4 parts (8 loops) in groups of 4: 2 groups x 6 steps x 4 sends a rank.
  const uint32_t n = 4, cs = 4, slots = 8, steps = 6;
  auto plan = collective_flows(ring(n, n * 8 * 4096, 4096, cs));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto by_rank = streams(plan->flows, n);
  for (uint32_t r = 0; r < n; ++r) {
    const std::vector<uint32_t>& own = by_rank[r];
    const std::vector<uint32_t>& pred = by_rank[(r + n - 1) % n];
    ASSERT_EQ(own.size(), size_t{2} * steps * cs);
    for (size_t q = 0; q < own.size(); ++q) {
      const FlowSpec& f = plan->flows[own[q]];
      EXPECT_EQ(f.dst, (r + 1) % n);
      // Expect: send q = (group, step k, piece j) waits for the predecessor's send of piece j
      // at step k-1 (cs sends earlier in its stream) and for its own send `slots` earlier.
      std::set<uint32_t> want;
      const size_t in_group = q % (size_t{steps} * cs);
      if (in_group >= cs) want.insert(pred[q - cs]);
      if (q >= slots) want.insert(own[q - slots]);
      EXPECT_EQ(std::set<uint32_t>(f.after.begin(), f.after.end()), want)
          << "rank " << r << " send " << q;
    }
  }
  // Expect: the same bytes as one piece per step, in as many flows.
  auto one = collective_flows(ring(n, n * 8 * 4096, 4096, 1));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->flows.size(), plan->flows.size());
  EXPECT_EQ(one->sent_by_rank, plan->sent_by_rank);
}

TEST(CollectiveRing, AShortLastGroupStillCarriesEveryByte) {
  // 5 loops in groups of 4: the second group has one loop.
  const uint32_t n = 3;
  auto plan = collective_flows(ring(n, n * 5 * 4096 + 12, 4096, 4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<uint64_t> received(n, 0);
  for (const FlowSpec& f : plan->flows) received[f.dst] += f.bytes;
  const uint64_t total = n * 5 * 4096 + 12;
  for (uint32_t r = 0; r < n; ++r) EXPECT_EQ(plan->sent_by_rank[r], received[(r + 1) % n]);
  EXPECT_EQ(std::accumulate(received.begin(), received.end(), uint64_t{0}),
            2 * uint64_t{n - 1} * total);
}

TEST(CollectiveRing, AShareOfOnePieceStillMovesInTwoSlices) {
  // 8 ranks, 64 KiB chunks: a 512 KiB share is one piece of 8 parts. NCCL cuts each part in
  // two slices (CHUNKSTEPS / SLICESTEPS), none below 1/32 of a 128 KiB slice (4 KiB).
  const uint32_t n = 8, steps = 14;
  auto cut = [&](uint64_t bytes, uint32_t chunk_steps) {
    auto plan = collective_flows(ring(n, bytes, 64 << 10, chunk_steps));
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? plan->flows.size() / (size_t{steps} * n) : 0;
  };
  // Expect: two pieces a step at 512 KiB; one with one chunk step (no slicing) and one where
  // half a part would be below 4 KiB; a share of many chunks is cut by the chunk.
  EXPECT_EQ(cut(n * (64 << 10), 4), 2u);
  EXPECT_EQ(cut(n * (64 << 10), 1), 1u);
  EXPECT_EQ(cut(n * (4 << 10) + 4 * n, 4), 1u);
  EXPECT_EQ(cut(n * 5 * (64 << 10), 4), 5u);
  EXPECT_EQ(cut(n * 5 * (64 << 10), 1), 5u);
}

TEST(CollectiveRing, RefusesChunkStepsOutOfRange) {
  for (uint32_t bad : {0u, kMaxCollectiveChunkSteps + 1}) {
    EXPECT_TRUE(Mentions(collective_flows(ring(4, 4 * 4096, 4096, bad)).status(),
                         "chunk_steps " + std::to_string(bad) + " out of range [1, 64]"));
  }
}

Time ring_time(const CollectiveSpec& s) {
  auto plan = collective_flows(s);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return kNever;
  Network net(NetworkConfig{});
  LeafSpineConfig c;
  c.leaves = 2;
  c.spines = 2;
  c.hosts_per_leaf = 4;
  c.host_link.gbps = c.fabric_link.gbps = 100;
  c.host_link.delay = c.fabric_link.delay = 500 * kNanosecond;
  EXPECT_TRUE(build_leaf_spine(net, c).ok());
  WorkloadRunnerConfig rc;
  rc.spray = true;
  auto runner = WorkloadRunner::create(net, plan->flows, rc);
  EXPECT_TRUE(runner.ok()) << runner.status();
  if (!runner.ok()) return kNever;
  net.run_until(kSecond);
  EXPECT_TRUE((*runner)->done());
  Time end = 0;
  for (const FlowRecord& r : (*runner)->records()) end = std::max(end, r.finish);
  return end;
}

TEST(CollectiveRing, ChunkStepsHideEachPiecesCompletionWait) {
  // 8 ranks, 16 KiB pieces (1.3 us at 100 Gb/s), 16 loops. One piece per step: a rank's link
  // idles from the end of its send until the next piece has come in from its predecessor (two
  // hops of 0.5 us and the piece's own time). Four: the group's other pieces fill that wait.
  const uint64_t piece = 16 << 10, bytes = 8 * 16 * piece;
  const Time one = ring_time(ring(8, bytes, piece, 1));
  const Time four = ring_time(ring(8, bytes, piece, 4));
  // A rank sends 2 * 7 * 16 pieces: 293.6 us of wire at 100 Gb/s.
  const Time wire = 2 * 7 * 16 * piece * 8 * kNanosecond / 100;
  // Expect: one piece per step loses a third of the wire time or more to the waits; four
  // lose under 10 %.
  EXPECT_GT(one * 3, wire * 4) << one << " vs wire " << wire;
  EXPECT_GT(four, wire);
  EXPECT_LT(four * 10, wire * 11) << four << " vs wire " << wire;
}

}  // namespace
}  // namespace uet::sim
