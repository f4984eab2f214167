// Collectives as flow lists (sim/collective.h): the trees' shape, the bytes every algorithm
// makes each rank send and receive (against closed forms, not against the generator), the
// dependency structure, and runs on a small fabric where every flow completes.
#include "sim/collective.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <set>

#include "sim/topology.h"
#include "sim/workload_runner.h"
#include "tests/common/mentions.h"

namespace uet::sim {
namespace {

using ::uet::testing_util::Mentions;

std::vector<uint32_t> iota_hosts(uint32_t n) {
  std::vector<uint32_t> h(n);
  std::iota(h.begin(), h.end(), 0u);
  return h;
}

CollectiveSpec spec(Collective c, CollectiveAlgo a, uint32_t n, uint64_t bytes) {
  CollectiveSpec s;
  s.collective = c;
  s.algo = a;
  s.hosts = iota_hosts(n);
  s.bytes = bytes;
  return s;
}

struct Ledger {
  std::vector<uint64_t> sent, received;
};

Ledger ledger(const std::vector<FlowSpec>& flows, uint32_t hosts) {
  Ledger l{std::vector<uint64_t>(hosts, 0), std::vector<uint64_t>(hosts, 0)};
  for (const FlowSpec& f : flows) {
    l.sent[f.src] += f.bytes;
    l.received[f.dst] += f.bytes;
  }
  return l;
}

// ------------------------------------------------------------------ double binary tree

// Every rank but one root has a parent that lists it as a child, the root reaches every rank,
// and the depth is logarithmic.
void expect_tree(const std::vector<TreeNode>& t, uint32_t n, int which) {
  SCOPED_TRACE(testing::Message() << "n=" << n << " tree " << which);
  ASSERT_EQ(t.size(), n);
  int roots = 0;
  uint32_t root = 0;
  for (uint32_t r = 0; r < n; ++r) {
    if (t[r].parent < 0) {
      ++roots;
      root = r;
      continue;
    }
    const TreeNode& p = t[static_cast<uint32_t>(t[r].parent)];
    EXPECT_TRUE(p.child[0] == static_cast<int32_t>(r) || p.child[1] == static_cast<int32_t>(r))
        << r << "'s parent " << t[r].parent << " does not list it";
    for (int32_t c : t[r].child)
      if (c >= 0) {
        EXPECT_EQ(t[static_cast<uint32_t>(c)].parent, static_cast<int32_t>(r));
      }
  }
  ASSERT_EQ(roots, 1);
  std::vector<uint32_t> depth(n, 0), stack{root};
  size_t seen = 0;
  uint32_t deepest = 0;
  while (!stack.empty()) {
    const uint32_t r = stack.back();
    stack.pop_back();
    ++seen;
    deepest = std::max(deepest, depth[r]);
    for (int32_t c : t[r].child) {
      if (c < 0) continue;
      depth[static_cast<uint32_t>(c)] = depth[r] + 1;
      stack.push_back(static_cast<uint32_t>(c));
    }
  }
  EXPECT_EQ(seen, n);
  EXPECT_LE(deepest, std::bit_width(n) + 1u);
}

TEST(Collective_BinaryTree, BothTreesSpanEveryRankAtLogDepth) {
  for (uint32_t n = 2; n <= 70; ++n) {
    expect_tree(binary_tree(n, 0), n, 0);
    expect_tree(binary_tree(n, 1), n, 1);
  }
}

TEST(Collective_BinaryTree, EveryRankIsALeafInOneTreeWhenTheCountIsEven) {
  for (uint32_t n = 2; n <= 70; n += 2) {
    const auto t0 = binary_tree(n, 0), t1 = binary_tree(n, 1);
    for (uint32_t r = 0; r < n; ++r) {
      const bool leaf0 = t0[r].child[0] < 0 && t0[r].child[1] < 0;
      const bool leaf1 = t1[r].child[0] < 0 && t1[r].child[1] < 0;
      EXPECT_TRUE(leaf0 || leaf1) << "n=" << n << " rank " << r;
    }
  }
}

TEST(Collective_BinaryTree, MatchesTheInOrderShape) {
  // Expect, for 14 ranks: 0 -> 8; 8 -> 4, 12; 12 -> 10, 13 (14 is missing, 13 moves up).
  const auto t = binary_tree(14, 0);
  EXPECT_EQ(t[0].child[1], 8);
  EXPECT_EQ(t[8].child[0], 4);
  EXPECT_EQ(t[8].child[1], 12);
  EXPECT_EQ(t[12].child[0], 10);
  EXPECT_EQ(t[12].child[1], 13);
  EXPECT_EQ(t[13].parent, 12);
  // Tree 1 of an even count mirrors: rank 13 plays rank 0's part.
  EXPECT_EQ(binary_tree(14, 1)[13].child[1], 5);
}

// ------------------------------------------------------------------ bytes per rank

TEST(Collective_Bytes, RingAllReduceSendsAndReceivesTwiceNMinusOneOverNOfTheBuffer) {
  for (uint32_t n : {2u, 3u, 8u, 13u}) {
    for (uint32_t channels : {1u, 4u}) {
      CollectiveSpec s = spec(Collective::kAllReduce, CollectiveAlgo::kRing, n, 0);
      s.bytes = uint64_t{n} * channels * 3 * 4096;  // three 4 KiB chunks per part and channel
      s.channels = channels;
      s.chunk_bytes = 4096;
      auto plan = collective_flows(s);
      ASSERT_TRUE(plan.ok()) << plan.status();
      EXPECT_EQ(plan->channels, channels);
      const Ledger l = ledger(plan->flows, n);
      for (uint32_t r = 0; r < n; ++r) {
        EXPECT_EQ(l.sent[r], 2 * (n - 1) * s.bytes / n) << "n=" << n << " rank " << r;
        EXPECT_EQ(l.received[r], 2 * (n - 1) * s.bytes / n);
        EXPECT_EQ(plan->sent_by_rank[r], l.sent[r]);
      }
      // Expect: 3 pipelined pieces per channel, each 2(n-1) steps of n flows.
      EXPECT_EQ(plan->flows.size(), size_t{channels} * 3 * 2 * (n - 1) * n);
    }
  }
}

TEST(Collective_Bytes, UnevenSizesAreCutExactlyNotRoundedUp) {
  // 4 * 1001 bytes over 7 ranks: parts differ by a byte; nothing is lost or invented.
  CollectiveSpec s = spec(Collective::kAllReduce, CollectiveAlgo::kRing, 7, 4004);
  auto plan = collective_flows(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const Ledger l = ledger(plan->flows, 7);
  EXPECT_EQ(std::accumulate(l.sent.begin(), l.sent.end(), uint64_t{0}), 2 * 6 * uint64_t{4004});
  for (uint32_t r = 0; r < 7; ++r) {
    EXPECT_GE(l.sent[r], 2 * 6 * 4004 / 7 - 2);
    EXPECT_LE(l.sent[r], 2 * 6 * 4004 / 7 + 2);
  }
}

TEST(Collective_Bytes, RingReduceScatterAndAllGatherMoveNMinusOneOverN) {
  for (Collective c : {Collective::kReduceScatter, Collective::kAllGather}) {
    const uint32_t n = 6;
    const uint64_t bytes = n * 4096 * 2;
    auto plan = collective_flows(spec(c, CollectiveAlgo::kRing, n, bytes));
    ASSERT_TRUE(plan.ok()) << plan.status();
    const Ledger l = ledger(plan->flows, n);
    for (uint32_t r = 0; r < n; ++r) {
      EXPECT_EQ(l.sent[r], (n - 1) * bytes / n) << to_string(c);
      EXPECT_EQ(l.received[r], (n - 1) * bytes / n) << to_string(c);
    }
  }
}

// Expect: `bytes` go once along each hop of `chain`: its first rank receives nothing, its
// last sends nothing.
void expect_chain(const Ledger& l, const std::vector<uint32_t>& chain, uint64_t bytes) {
  EXPECT_EQ(l.received[chain.front()], 0u);
  EXPECT_EQ(l.sent[chain.back()], 0u);
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    EXPECT_EQ(l.sent[chain[i]], bytes) << "rank " << chain[i];
    EXPECT_EQ(l.received[chain[i + 1]], bytes) << "rank " << chain[i + 1];
  }
}

TEST(Collective_Bytes, BroadcastChainCarriesTheBufferOnceIntoEveryOtherRank) {
  CollectiveSpec s = spec(Collective::kBroadcast, CollectiveAlgo::kRing, 5, 100'000);
  s.root = 3;
  auto plan = collective_flows(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const Ledger l = ledger(plan->flows, 5);
  // Expect: the chain 3 -> 4 -> 0 -> 1 -> 2 from the root.
  expect_chain(l, {3, 4, 0, 1, 2}, 100'000);
}

TEST(Collective_Bytes, ReduceChainEndsAtTheRootCarryingTheBufferOncePerHop) {
  CollectiveSpec s = spec(Collective::kReduce, CollectiveAlgo::kRing, 5, 100'000);
  s.root = 1;
  s.chunk_bytes = 16 * 1024;
  auto plan = collective_flows(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const Ledger l = ledger(plan->flows, 5);
  // Expect: the chain 2 -> 3 -> 4 -> 0 -> 1 into the root.
  expect_chain(l, {2, 3, 4, 0, 1}, 100'000);
  // A hop forwards a piece only after the previous hop brought it.
  for (const FlowSpec& f : plan->flows) {
    if (f.src == 2) continue;
    ASSERT_FALSE(f.after.empty());
    EXPECT_EQ(plan->flows[f.after.front()].dst, f.src);
  }
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kReduce, 5), 1.0);
}

TEST(Collective_Bytes, GatherAndScatterMoveEachRanksPartStraightToOrFromTheRoot) {
  const uint32_t n = 6;
  const uint64_t bytes = collective_aligned_bytes(Collective::kGather, n, 600'001);
  EXPECT_EQ(bytes, 600'000u);  // whole elements per rank
  for (Collective c : {Collective::kGather, Collective::kScatter}) {
    SCOPED_TRACE(to_string(c));
    CollectiveSpec s = spec(c, CollectiveAlgo::kBatched, n, 600'001);
    s.root = 4;
    s.channels = 4;  // one exchange per rank: channels do not apply
    auto plan = collective_flows(s);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->flows.size(), n - 1);
    EXPECT_EQ(plan->channels, 1u);
    const Ledger l = ledger(plan->flows, n);
    const uint64_t part = bytes / n;
    for (uint32_t r = 0; r < n; ++r) {
      const uint64_t moved = r == 4 ? 0 : part;
      EXPECT_EQ(c == Collective::kGather ? l.sent[r] : l.received[r], moved) << "rank " << r;
    }
    EXPECT_EQ(c == Collective::kGather ? l.received[4] : l.sent[4], bytes - part);
    for (const FlowSpec& f : plan->flows) EXPECT_TRUE(f.after.empty());  // posted at once
  }
  EXPECT_TRUE(Mentions(collective_flows(spec(Collective::kGather, CollectiveAlgo::kRing, 4, 4096))
                           .status(),
                       "gather has no algorithm ring: batched"));
  CollectiveSpec far = spec(Collective::kScatter, CollectiveAlgo::kBatched, 4, 4096);
  far.root = 4;
  EXPECT_TRUE(Mentions(collective_flows(far).status(), "root 4 out of range [0, 3]"));
}

TEST(Collective_Bytes, TreeAllReduceSendsEachHalfUpOnceAndDownToEveryChild) {
  for (uint32_t n : {2u, 5u, 8u, 14u}) {
    const uint64_t bytes = 2 * 3 * 4096;  // each tree's half in three chunks
    CollectiveSpec s = spec(Collective::kAllReduce, CollectiveAlgo::kTree, n, bytes);
    s.chunk_bytes = 4096;
    auto plan = collective_flows(s);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const Ledger l = ledger(plan->flows, n);
    const uint64_t half = bytes / 2;
    for (uint32_t r = 0; r < n; ++r) {
      uint64_t sent = 0, received = 0;
      for (int t = 0; t < 2; ++t) {
        const TreeNode node = binary_tree(n, t)[r];
        const uint64_t children = (node.child[0] >= 0) + (node.child[1] >= 0);
        sent += half * (children + (node.parent >= 0));
        received += half * (children + (node.parent >= 0));
      }
      EXPECT_EQ(l.sent[r], sent) << "n=" << n << " rank " << r;
      EXPECT_EQ(l.received[r], received) << "n=" << n << " rank " << r;
    }
  }
}

TEST(Collective_Bytes, HalvingDoublingAllReduceAtPowersOfTwoAndBetween) {
  // p = 8 for both. At 8 ranks every rank sends and receives 2(p-1)/p of the buffer; at 11,
  // the first 6 ranks pair up: even ones hand over and get the result back.
  const uint64_t bytes = 8 * 4096;
  for (uint32_t n : {8u, 11u}) {
    auto plan =
        collective_flows(spec(Collective::kAllReduce, CollectiveAlgo::kHalvingDoubling, n, bytes));
    ASSERT_TRUE(plan.ok()) << plan.status();
    const Ledger l = ledger(plan->flows, n);
    const uint32_t paired = 2 * (n - 8);
    for (uint32_t r = 0; r < n; ++r) {
      const bool even_extra = r < paired && r % 2 == 0, odd_extra = r < paired && r % 2 == 1;
      const uint64_t core = 2 * 7 * bytes / 8;
      const uint64_t moved = even_extra ? bytes : odd_extra ? core + bytes : core;
      EXPECT_EQ(l.sent[r], moved) << n << " " << r;
      EXPECT_EQ(l.received[r], moved) << n << " " << r;
    }
    if (n == 8) {
      EXPECT_EQ(plan->flows.size(), 2u * 3 * 8);  // log2(8) steps each way, every rank sending
    }
  }
}

TEST(Collective_Bytes, HalvingReduceScatterAndDoublingAllGatherMoveNMinusOneOverN) {
  for (Collective c : {Collective::kReduceScatter, Collective::kAllGather}) {
    const uint64_t bytes = 16 * 4096;
    auto plan = collective_flows(spec(c, CollectiveAlgo::kHalvingDoubling, 16, bytes));
    ASSERT_TRUE(plan.ok()) << plan.status();
    const Ledger l = ledger(plan->flows, 16);
    for (uint32_t r = 0; r < 16; ++r) {
      EXPECT_EQ(l.sent[r], 15 * bytes / 16) << to_string(c);
      EXPECT_EQ(l.received[r], 15 * bytes / 16) << to_string(c);
    }
  }
}

TEST(Collective_Bytes, AllToAllSendsEveryOtherRankItsBlock) {
  for (CollectiveAlgo a : {CollectiveAlgo::kPairwise, CollectiveAlgo::kBatched}) {
    const uint32_t n = 9;
    const uint64_t bytes = n * 1000 * 4;
    auto plan = collective_flows(spec(Collective::kAllToAll, a, n, bytes));
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->flows.size(), size_t{n} * (n - 1));
    std::set<std::pair<uint32_t, uint32_t>> pairs;
    for (const FlowSpec& f : plan->flows) {
      EXPECT_EQ(f.bytes, bytes / n);
      pairs.emplace(f.src, f.dst);
      if (a == CollectiveAlgo::kBatched) {
        EXPECT_TRUE(f.after.empty());
      }
    }
    EXPECT_EQ(pairs.size(), size_t{n} * (n - 1));  // each ordered pair exactly once
  }
}

TEST(Collective_Bytes, RanksRunOnTheirPlacedHosts) {
  CollectiveSpec s = spec(Collective::kAllReduce, CollectiveAlgo::kRing, 4, 4 * 4096);
  s.hosts = {10, 3, 7, 0};
  auto plan = collective_flows(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const FlowSpec& f : plan->flows) {
    // Expect: the ring 10 -> 3 -> 7 -> 0 -> 10 on hosts.
    const uint32_t next = f.src == 10 ? 3 : f.src == 3 ? 7 : f.src == 7 ? 0 : 10;
    EXPECT_EQ(f.dst, next);
  }
}

// ------------------------------------------------------------------ structure

// `c` by `a` on 8 ranks: 4 chunks of 4 KiB each over `channels` channels.
absl::StatusOr<CollectivePlan> eight_rank_plan(Collective c, CollectiveAlgo a, uint32_t channels) {
  CollectiveSpec s = spec(c, a, 8, 8 * 4 * 4096);
  s.chunk_bytes = 4096;
  s.channels = channels;
  return collective_flows(s);
}

TEST(Collective_Structure, PrerequisitesAreEarlierFlowsSoNoCycleCanForm) {
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast, Collective::kAllToAll, Collective::kReduce,
                       Collective::kGather, Collective::kScatter}) {
    for (CollectiveAlgo a : collective_algos(c)) {
      auto plan = eight_rank_plan(c, a, /*channels=*/2);
      ASSERT_TRUE(plan.ok()) << to_string(c) << " " << to_string(a) << ": " << plan.status();
      for (const FlowSpec& f : plan->flows) {
        EXPECT_EQ(f.id, &f - plan->flows.data());
        for (uint32_t p : f.after) EXPECT_LT(p, f.id) << to_string(c) << " " << to_string(a);
      }
    }
  }
}

TEST(Collective_Structure, RingStepWaitsForTheDataItForwardsAndAFreeSlot) {
  CollectiveSpec s = spec(Collective::kAllReduce, CollectiveAlgo::kRing, 4, 4 * 4 * 4096);
  s.chunk_bytes = 4096;  // four pieces, 6 steps each, one piece per step
  s.slots = 2;
  s.chunk_steps = 1;
  auto plan = collective_flows(s);
  ASSERT_TRUE(plan.ok());
  // Flow (piece * 6 + step) * 4 + rank. Expect: step 1 of rank 2 waits only on rank 1's step 0
  // (the part it reduces): its stream has a free slot.
  const FlowSpec& f = plan->flows[1 * 4 + 2];
  EXPECT_EQ(f.src, 2u);
  EXPECT_EQ(f.after, (std::vector<uint32_t>{1}));
  EXPECT_TRUE(plan->flows[3].after.empty());  // step 0 starts at once
  // Expect: rank 2's third send (step 2) also waits for its first (step 0) to free a slot.
  EXPECT_EQ(
      std::set<uint32_t>(plan->flows[2 * 4 + 2].after.begin(), plan->flows[2 * 4 + 2].after.end()),
      (std::set<uint32_t>{1 * 4 + 1, 2}));
  // Expect: the second piece's step 0 on rank 0 (send 6) waits for its send 4 only.
  EXPECT_EQ(plan->flows[6 * 4 + 0].after, (std::vector<uint32_t>{4 * 4 + 0}));
}

TEST(Collective_Structure, PairwiseExchangeWaitsForBothEndsOfTheLastOne) {
  const uint32_t n = 5;
  auto plan = collective_flows(spec(Collective::kAllToAll, CollectiveAlgo::kPairwise, n, n * 4096));
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Flow (k - 1) * n + i: exchange k of rank i, to i + k. Expect: exchange 2 of rank 0 (to 2)
  // waits for rank 0's send (flow 0) and receive (from 4: flow 4) of exchange 1, and for the
  // receiver's: rank 2's send (flow 2) and its receive from 1 (flow 1).
  const FlowSpec& f = plan->flows[1 * n + 0];
  EXPECT_EQ(f.dst, 2u);
  EXPECT_EQ(std::set<uint32_t>(f.after.begin(), f.after.end()), (std::set<uint32_t>{0, 1, 2, 4}));
  for (uint32_t i = 0; i < n; ++i) EXPECT_TRUE(plan->flows[i].after.empty());
}

TEST(Collective_Structure, PairwiseReceiverTakesOneBlockAtATime) {
  // Expect: every block of exchange k > 1 waits for the block its receiver took in exchange
  // k - 1, so no two blocks ever travel to one rank at once.
  const uint32_t n = 7;
  auto plan = collective_flows(spec(Collective::kAllToAll, CollectiveAlgo::kPairwise, n, n * 4096));
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (uint32_t k = 2; k < n; ++k) {
    for (uint32_t i = 0; i < n; ++i) {
      const FlowSpec& f = plan->flows[(k - 1) * n + i];
      const uint32_t last = (k - 2) * n + (f.dst + n - (k - 1)) % n;  // into f.dst, exchange k-1
      ASSERT_EQ(plan->flows[last].dst, f.dst);
      EXPECT_NE(std::find(f.after.begin(), f.after.end(), last), f.after.end())
          << "exchange " << k << " of rank " << i;
    }
  }
}

// ------------------------------------------------------------------ channels

// Expect: channel c's flows carry channel == c (the runner gives each (pair, channel) its own
// connection). Channels are built one after another, each its own copy of the algorithm: a
// ring all-reduce's channel c is the c-th block of 3 pieces x 2(n-1) steps x n flows, in which
// each of the n ranks sends 2(n-1)/n of the channel's share of the buffer.
TEST(Collective_Channels, RingFlowsCarryTheirChannel) {
  constexpr uint32_t n = 5, kChannels = 4;
  CollectiveSpec s = spec(Collective::kAllReduce, CollectiveAlgo::kRing, n, 0);
  s.bytes = uint64_t{n} * kChannels * 3 * 4096;
  s.channels = kChannels;
  s.chunk_bytes = 4096;
  auto plan = collective_flows(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->channels, kChannels);
  const size_t per_channel = size_t{3} * 2 * (n - 1) * n;
  ASSERT_EQ(plan->flows.size(), kChannels * per_channel);
  std::vector<uint64_t> bytes(kChannels, 0);
  for (const FlowSpec& f : plan->flows) {
    ASSERT_EQ(f.channel, f.id / per_channel) << "flow " << f.id;
    bytes[f.channel] += f.bytes;
  }
  for (uint32_t c = 0; c < kChannels; ++c) EXPECT_EQ(bytes[c], 2 * (n - 1) * s.bytes / kChannels);
}

// Expect: every algorithm with channels tags its flows 0..channels-1, each channel an
// independent copy (a flow waits only on flows of its own channel); all-to-all, gather and
// scatter (grouped sends) have one channel.
TEST(Collective_Channels, EveryAlgorithmTagsEachChannelsFlows) {
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast, Collective::kAllToAll, Collective::kReduce,
                       Collective::kGather, Collective::kScatter}) {
    const bool grouped =
        c == Collective::kAllToAll || c == Collective::kGather || c == Collective::kScatter;
    for (CollectiveAlgo a : collective_algos(c)) {
      auto plan = eight_rank_plan(c, a, /*channels=*/3);
      ASSERT_TRUE(plan.ok()) << to_string(c) << " " << to_string(a) << ": " << plan.status();
      EXPECT_EQ(plan->channels, grouped ? 1u : 3u) << to_string(c);
      std::set<uint32_t> seen;
      for (const FlowSpec& f : plan->flows) {
        seen.insert(f.channel);
        for (uint32_t p : f.after)
          EXPECT_EQ(plan->flows[p].channel, f.channel) << to_string(c) << " " << to_string(a);
      }
      std::set<uint32_t> want;
      for (uint32_t ch = 0; ch < plan->channels; ++ch) want.insert(ch);
      EXPECT_EQ(seen, want) << to_string(c) << " " << to_string(a);
    }
  }
}

// Expect: the hierarchical form's rail flows carry their channel; its compute tasks channel 0.
TEST(Collective_Channels, HierarchicalRailFlowsCarryTheirChannel) {
  CollectiveSpec s = spec(Collective::kAllReduce, CollectiveAlgo::kRing, 8, 8 << 20);
  s.channels = 2;
  ServerSpec server;
  server.gpus = 4;
  auto plan = hierarchical_flows(s, server);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->channels, 2u);
  std::vector<uint64_t> bytes(2, 0);
  for (const FlowSpec& f : plan->flows) {
    if (f.compute) {
      EXPECT_EQ(f.channel, 0u);
      continue;
    }
    ASSERT_LT(f.channel, 2u);
    bytes[f.channel] += f.bytes;
  }
  EXPECT_GT(bytes[1], 0u);
  EXPECT_EQ(bytes[0], bytes[1]);  // each rail's share splits evenly between the channels
}

TEST(Collective_Spec, SmallBuffersUseFewerChannels) {
  CollectiveSpec s = spec(Collective::kAllReduce, CollectiveAlgo::kRing, 8, 8 * 4 * 3);
  s.channels = 16;
  auto plan = collective_flows(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->channels, 3u);  // 96 bytes: 3 shares of 32, one element per rank each
}

TEST(Collective_Spec, RefusesBadSpecsNamingTheField) {
  auto refuse = [](CollectiveSpec s) { return collective_flows(s).status(); };
  EXPECT_TRUE(Mentions(refuse(spec(Collective::kAllReduce, CollectiveAlgo::kRing, 1, 4096)),
                       "ranks 1 out of range"));
  CollectiveSpec twice = spec(Collective::kAllReduce, CollectiveAlgo::kRing, 3, 4096);
  twice.hosts = {1, 2, 1};
  EXPECT_TRUE(Mentions(refuse(twice), "host 1 runs two ranks"));
  EXPECT_TRUE(Mentions(refuse(spec(Collective::kBroadcast, CollectiveAlgo::kTree, 4, 4096)),
                       "broadcast has no algorithm tree: ring"));
  EXPECT_TRUE(Mentions(
      refuse(spec(Collective::kReduceScatter, CollectiveAlgo::kHalvingDoubling, 6, 6 * 4096)),
      "power-of-two rank count"));
  EXPECT_TRUE(
      Mentions(refuse(spec(Collective::kAllReduce, CollectiveAlgo::kRing, 8, 16)), "too small"));
  CollectiveSpec chunk = spec(Collective::kAllReduce, CollectiveAlgo::kRing, 4, 4096);
  chunk.chunk_bytes = 100;
  EXPECT_TRUE(Mentions(refuse(chunk), "chunk_bytes 100 out of range"));
  CollectiveSpec many =
      spec(Collective::kAllReduce, CollectiveAlgo::kRing, 1024, uint64_t{1} << 36);
  many.chunk_bytes = 4096;
  EXPECT_TRUE(Mentions(refuse(many), "at most 16777216"));
  CollectiveSpec root = spec(Collective::kBroadcast, CollectiveAlgo::kRing, 4, 4096);
  root.root = 4;
  EXPECT_TRUE(Mentions(refuse(root), "root 4 out of range [0, 3]"));
}

TEST(Collective_Spec, SizesAlignAsNcclTestsDo) {
  EXPECT_EQ(collective_aligned_bytes(Collective::kAllReduce, 8, 1001), 1000u);
  EXPECT_EQ(collective_aligned_bytes(Collective::kAllGather, 8, 1001), 992u);  // 8 x 4 B units
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllToAll, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kBroadcast, 8), 1.0);
}

TEST(Collective_Placement, PlacesDistinctHostsAsAsked) {
  Rng rng(5);
  auto strided = place_ranks(4, 16, RankPlacement::kStrided, rng);
  ASSERT_TRUE(strided.ok());
  EXPECT_EQ(*strided, (std::vector<uint32_t>{0, 4, 8, 12}));
  auto random = place_ranks(10, 64, RankPlacement::kRandom, rng);
  ASSERT_TRUE(random.ok());
  EXPECT_EQ(std::set<uint32_t>(random->begin(), random->end()).size(), 10u);
  for (uint32_t h : *random) EXPECT_LT(h, 64u);
  Rng same(5);
  (void)place_ranks(4, 16, RankPlacement::kStrided, same);
  EXPECT_EQ(*place_ranks(10, 64, RankPlacement::kRandom, same), *random);  // seeded
  EXPECT_TRUE(Mentions(place_ranks(17, 16, RankPlacement::kContiguous, rng).status(),
                       "ranks 17 out of range [2, 16]"));
}

TEST(Collective_Communicators, SplitsDataAndTensorGroupsMegatronStyle) {
  const std::vector<uint32_t> hosts = {10, 11, 12, 13, 14, 15};  // dp 3 x tp 2
  auto tp = communicators(hosts, 3, 2, ParallelGroup::kTensor);
  ASSERT_TRUE(tp.ok()) << tp.status();
  EXPECT_EQ(*tp, (std::vector<std::vector<uint32_t>>{{10, 11}, {12, 13}, {14, 15}}));
  auto dp = communicators(hosts, 3, 2, ParallelGroup::kData);
  ASSERT_TRUE(dp.ok()) << dp.status();
  EXPECT_EQ(*dp, (std::vector<std::vector<uint32_t>>{{10, 12, 14}, {11, 13, 15}}));
  EXPECT_EQ(communicators(hosts, 3, 2, ParallelGroup::kWorld)->front(), hosts);
  EXPECT_TRUE(Mentions(communicators(hosts, 4, 2, ParallelGroup::kData).status(),
                       "dp 4 x tp 2 must equal the 6 ranks"));
  EXPECT_TRUE(
      Mentions(communicators(hosts, 6, 1, ParallelGroup::kTensor).status(), "nothing to exchange"));
}

TEST(Collective_Hierarchical, RailsAllReduceTheirShareBetweenIntraServerPhases) {
  // 3 servers of 4 GPUs, 12 MiB: each rail all-reduces 3 MiB among 3 servers.
  CollectiveSpec s = spec(Collective::kAllReduce, CollectiveAlgo::kRing, 12, 12 << 20);
  ServerSpec server;
  server.gpus = 4;
  server.gbps = 1000;
  server.latency = 2 * kMicrosecond;
  auto plan = hierarchical_flows(s, server);
  ASSERT_TRUE(plan.ok()) << plan.status();
  size_t tasks = 0;
  for (const FlowSpec& f : plan->flows) {
    if (f.compute) {
      ++tasks;
      // Expect: 2 us + 3/4 of 12 MiB at 1000 Gb/s.
      EXPECT_EQ(f.start,
                2 * kMicrosecond + static_cast<Time>(0.75 * (12 << 20) * 8 / 1000.0 * 1000));
      continue;
    }
    // Expect: rails only: a flow joins GPUs of the same index on different servers.
    EXPECT_EQ(f.src % 4, f.dst % 4);
    EXPECT_NE(f.src / 4, f.dst / 4);
  }
  EXPECT_EQ(tasks, 24u);
  for (uint32_t r = 0; r < 12; ++r) EXPECT_EQ(plan->sent_by_rank[r], 2 * (3 << 20) * 2 / 3);
  EXPECT_TRUE(
      Mentions(hierarchical_flows(
                   spec(Collective::kAllToAll, CollectiveAlgo::kPairwise, 12, 12 << 20), server)
                   .status(),
               "all-reduce only"));
  server.gpus = 8;
  EXPECT_TRUE(Mentions(hierarchical_flows(s, server).status(), "divide the 12 ranks"));
}

// ------------------------------------------------------------------ on a fabric

void fabric(Network& net, uint32_t leaves, uint32_t per_leaf) {
  LeafSpineConfig c;
  c.leaves = leaves;
  c.spines = 2;
  c.hosts_per_leaf = per_leaf;
  c.host_link.gbps = c.fabric_link.gbps = 100;
  c.host_link.delay = c.fabric_link.delay = 500 * kNanosecond;
  ASSERT_TRUE(build_leaf_spine(net, c).ok());
}

Time run_to_end(const std::vector<FlowSpec>& flows, uint32_t leaves, uint32_t per_leaf,
                std::vector<uint64_t>* received = nullptr,
                std::vector<FlowRecord>* records = nullptr) {
  Network net(NetworkConfig{});
  fabric(net, leaves, per_leaf);
  WorkloadRunnerConfig rc;
  rc.spray = true;
  auto runner = WorkloadRunner::create(net, flows, rc);
  EXPECT_TRUE(runner.ok()) << runner.status();
  if (!runner.ok()) return kNever;
  net.run_until(kSecond);
  EXPECT_TRUE((*runner)->done());
  Time end = 0;
  if (received != nullptr) received->assign(net.num_hosts(), 0);
  for (const FlowRecord& r : (*runner)->records()) {
    EXPECT_EQ(r.received, r.bytes);
    end = std::max(end, r.finish);
    if (received != nullptr) (*received)[r.dst] += r.received;
  }
  if (records != nullptr) *records = (*runner)->records();
  return end;
}

TEST(Collective_Run, EveryAlgorithmCompletesAndDeliversItsBytesPerHost) {
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast, Collective::kAllToAll, Collective::kReduce,
                       Collective::kGather, Collective::kScatter}) {
    for (CollectiveAlgo a : collective_algos(c)) {
      SCOPED_TRACE(testing::Message() << to_string(c) << " " << to_string(a));
      CollectiveSpec s = spec(c, a, 8, 8 * 64 * 1024);
      s.hosts = {1, 3, 5, 7, 9, 11, 13, 15};  // odd hosts of 16: half the fabric idle
      s.chunk_bytes = 16 * 1024;
      auto plan = collective_flows(s);
      ASSERT_TRUE(plan.ok()) << plan.status();
      std::vector<uint64_t> received;
      run_to_end(plan->flows, 4, 4, &received);
      const Ledger want = ledger(plan->flows, 16);
      for (uint32_t h = 0; h < 16; ++h) {
        EXPECT_EQ(received[h], want.received[h]) << "host " << h;
        if (h % 2 == 0) {
          EXPECT_EQ(received[h], 0u) << "host " << h << " runs no rank";
        }
      }
    }
  }
}

TEST(Collective_Run, PairwiseRanksReceiveOneBlockAtATime) {
  // 16 ranks on 4 leaves of 4 (2 spines: 2:1 oversubscribed, so blocks take uneven times),
  // 256 KiB per block.
  auto plan =
      collective_flows(spec(Collective::kAllToAll, CollectiveAlgo::kPairwise, 16, 16 << 18));
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<FlowRecord> records;
  run_to_end(plan->flows, 4, 4, nullptr, &records);
  // Expect: into every host, each block starts after the one before it has arrived.
  std::vector<std::vector<const FlowRecord*>> into(16);
  for (const FlowRecord& r : records) into[r.dst].push_back(&r);
  for (uint32_t h = 0; h < 16; ++h) {
    std::sort(into[h].begin(), into[h].end(),
              [](const FlowRecord* a, const FlowRecord* b) { return a->start < b->start; });
    for (size_t b = 1; b < into[h].size(); ++b) {
      EXPECT_GE(into[h][b]->start, into[h][b - 1]->finish)
          << "host " << h << ": block from " << into[h][b]->src << " started before the one from "
          << into[h][b - 1]->src << " arrived";
    }
  }
}

TEST(Collective_Run, PipeliningShortensABroadcastChain) {
  // 8 ranks, 2 MiB: sent whole, every hop waits for the previous one's full buffer; in 32 KiB
  // chunks the hops overlap.
  CollectiveSpec s = spec(Collective::kBroadcast, CollectiveAlgo::kRing, 8, 2 << 20);
  s.chunk_bytes = 2 << 20;
  auto whole = collective_flows(s);
  s.chunk_bytes = 32 << 10;
  auto chunked = collective_flows(s);
  s.slots = 1;
  auto stop_and_wait = collective_flows(s);
  ASSERT_TRUE(whole.ok() && chunked.ok() && stop_and_wait.ok());
  const Time t_whole = run_to_end(whole->flows, 2, 4);
  const Time t_chunked = run_to_end(chunked->flows, 2, 4);
  const Time t_one_slot = run_to_end(stop_and_wait->flows, 2, 4);
  // Expect: the whole-buffer chain takes ~7 buffer times, the pipelined one ~1 buffer time
  // plus 7 chunks; with one slot each chunk also waits out a round trip.
  EXPECT_LT(t_chunked * 4, t_whole) << t_chunked << " vs " << t_whole;
  EXPECT_LT(t_chunked, t_one_slot) << t_chunked << " vs " << t_one_slot;
}

}  // namespace
}  // namespace uet::sim
