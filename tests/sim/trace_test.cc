// Chakra traces (sim/trace/trace.h): the files round-trip, the generated steps turn into the
// flows and tasks they describe, the step's compute-only length follows the dependencies, and
// bad traces are refused naming the rank, the node and the reason.
#include "sim/trace/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/common/mentions.h"

namespace uet::sim {
namespace {

using ::uet::testing_util::Mentions;

class TraceFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("uet_trace_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string prefix(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

std::vector<uint32_t> hosts(uint32_t n) {
  std::vector<uint32_t> h(n);
  for (uint32_t i = 0; i < n; ++i) h[i] = i;
  return h;
}

TraceNode compute(uint64_t id, uint64_t us, std::vector<uint64_t> deps = {}) {
  TraceNode t;
  t.id = id;
  t.duration_us = us;
  t.deps = std::move(deps);
  return t;
}

TraceNode collective(uint64_t id, Collective c, uint64_t bytes, std::vector<uint64_t> deps) {
  TraceNode t;
  t.id = id;
  t.kind = TraceNode::Kind::kCollective;
  t.collective = c;
  t.bytes = bytes;
  t.deps = std::move(deps);
  return t;
}

TraceNode p2p(uint64_t id, bool send, uint32_t peer, uint64_t bytes, std::vector<uint64_t> deps) {
  TraceNode t;
  t.id = id;
  t.kind = send ? TraceNode::Kind::kSend : TraceNode::Kind::kRecv;
  t.peer = peer;
  t.bytes = send ? bytes : 0;
  t.tag = 7;
  t.deps = std::move(deps);
  return t;
}

TEST_F(TraceFiles, Chakra_RoundTripsEveryNodeKind) {
  Trace t;
  t.ranks.resize(2);
  t.ranks[0] = {compute(1, 30), collective(2, Collective::kAllToAll, 4096, {1}),
                p2p(3, true, 1, 1000, {2})};
  t.ranks[1] = {compute(1, 10), collective(2, Collective::kAllToAll, 4096, {1}),
                p2p(3, false, 0, 0, {2})};
  t.ranks[1][0].name = "matmul";
  for (size_t r = 0; r < 2; ++r) {
    TraceNode g = collective(4, Collective::kGather, 8192, {3});
    g.group = "7";
    g.root = 1;
    t.ranks[r].push_back(g);
  }
  ASSERT_TRUE(write_chakra(prefix("rt"), t).ok());
  auto back = read_chakra(prefix("rt"));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->ranks.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(back->ranks[r].size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      const TraceNode &a = t.ranks[r][i], &b = back->ranks[r][i];
      EXPECT_EQ(a.id, b.id);
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.kind, b.kind);
      EXPECT_EQ(a.duration_us, b.duration_us);
      EXPECT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(a.peer, b.peer);
      EXPECT_EQ(a.deps, b.deps);
      EXPECT_EQ(a.group, b.group);
      EXPECT_EQ(a.root, b.root);
    }
  }
  EXPECT_EQ(back->ranks[0][1].collective, Collective::kAllToAll);
  EXPECT_EQ(back->ranks[0][3].collective, Collective::kGather);
}

TEST_F(TraceFiles, CommGroups_ReadAstraSimsFormatAndRefuseBadGroups) {
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(prefix(name)) << text;
    return prefix(name);
  };
  auto g = read_comm_groups(write("ok.json", R"({"1": [0, 2, 4], "tp0": [5, 1]})"), 6);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->size(), 2u);
  EXPECT_EQ(g->at("1"), (std::vector<uint32_t>{0, 2, 4}));
  EXPECT_EQ(g->at("tp0"), (std::vector<uint32_t>{5, 1}));  // the listed order is the ring's
  const CommGroups groups = *g;
  ASSERT_TRUE(write_comm_groups(prefix("again.json"), groups).ok());
  auto again = read_comm_groups(prefix("again.json"), 6);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, groups);

  EXPECT_TRUE(Mentions(read_comm_groups(prefix("absent.json"), 6).status(), "absent.json"));
  // Each bad file (name, text) and what the refusal must say.
  const struct {
    const char* name;
    const char* text;
    const char* says;
  } bad[] = {
      {"list.json", "[1, 2]", "not a JSON object of groups"},
      {"far.json", R"({"2": [0, 6]})", "group \"2\": member 6 is not a rank in [0, 5]"},
      {"half.json", R"({"2": [0, 1.5]})", "is not a rank"},
      {"twice.json", R"({"2": [3, 3]})", "rank 3 listed twice"},
      {"world.json", R"({"0": [0, 1]})", "name every rank"},
      {"empty.json", R"({"5": []})", "no members"},
      {"flat.json", R"({"5": 3})", "not an array of ranks"},
  };
  for (const auto& b : bad) {
    EXPECT_TRUE(Mentions(read_comm_groups(write(b.name, b.text), 6).status(), b.says)) << b.name;
  }
}

TEST_F(TraceFiles, Chakra_RefusesMissingAndTruncatedFiles) {
  EXPECT_TRUE(Mentions(read_chakra(prefix("none")).status(), "none.0.et"));
  Trace t = moe_layer(2, 4096, 10, 10);
  ASSERT_TRUE(write_chakra(prefix("cut"), t).ok());
  const std::string f1 = prefix("cut") + ".1.et";
  std::filesystem::resize_file(f1, std::filesystem::file_size(f1) - 3);
  EXPECT_TRUE(Mentions(read_chakra(prefix("cut")).status(), "cut.1.et: message"));
  // A node type the simulator does not model (CHECKPOINT_NODE = 10, hand-encoded: metadata
  // {version "x"}, then node {id 5, type 10}).
  for (int r = 0; r < 2; ++r) {
    std::ofstream out(prefix("odd") + "." + std::to_string(r) + ".et", std::ios::binary);
    const char bytes[] = {3, 0x0a, 1, 'x', 4, 0x08, 5, 0x18, 10};
    out.write(bytes, sizeof bytes);
  }
  EXPECT_TRUE(Mentions(read_chakra(prefix("odd")).status(), "odd.0.et: node 5: node type 10"));
}

TEST(Trace_Flows, DataParallelStepOverlapsAllReducesWithBackward) {
  // 4 ranks, 3 layers: forward 100 us, 3 x 50 us backward, an all-reduce per layer, an
  // optimizer step of 25 us after every all-reduce.
  const Trace t = data_parallel_step(4, 3, 4 * 4096, 100, 50);
  auto plan = trace_flows(t, hosts(4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->collectives, 3u);
  EXPECT_EQ(plan->compute_nodes, 4u * 5);
  // Expect: with a free network the step is its compute chain: 100 + 3 * 50 + 25 us.
  EXPECT_EQ(plan->compute_only, 275 * kMicrosecond);
  // Each all-reduce is a 4-rank ring of one piece: 2 * 3 steps x 4 flows of 4 KiB.
  size_t data = 0;
  for (const FlowSpec& f : plan->flows) data += f.compute ? 0 : 1;
  EXPECT_EQ(data, 3u * 24);
  EXPECT_EQ(plan->network_bytes, 3u * 24 * 4096);
  // Expect: tasks stay on their rank's host, flows go between two.
  for (const FlowSpec& f : plan->flows) EXPECT_TRUE(f.compute ? f.src == f.dst : f.src != f.dst);
}

TEST(Trace_Flows, CollectivesRunWithinTheirCommunicators) {
  // 2 x 2: "tp0" = {0, 1}, "tp1" = {2, 3}, "dp0" = {0, 2}, "dp1" = {1, 3}.
  const Trace t = hybrid_step(2, 2, 3, 8192, 4 * 4096, 10);
  ASSERT_EQ(t.ranks.size(), 4u);
  EXPECT_EQ(t.groups.at("tp1"), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(t.groups.at("dp1"), (std::vector<uint32_t>{1, 3}));
  const std::vector<uint32_t> on = {20, 21, 22, 23};
  auto plan = trace_flows(t, on);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Per layer two tensor-parallel all-reduces (forward, backward) in each of 2 groups, one
  // data-parallel all-reduce in each of 2 groups.
  EXPECT_EQ(plan->collectives, 3u * 2 * 2 + 3u * 2);
  // Expect: every flow stays within one communicator: tp pairs differ in the last bit of the
  // rank, dp pairs in the other.
  uint64_t tp_bytes = 0, dp_bytes = 0;
  for (const FlowSpec& f : plan->flows) {
    if (f.compute) continue;
    const uint32_t a = f.src - 20, b = f.dst - 20;
    ASSERT_TRUE((a ^ b) == 1 || (a ^ b) == 2) << a << " -> " << b;
    ((a ^ b) == 1 ? tp_bytes : dp_bytes) += f.bytes;
  }
  // A 2-rank ring all-reduce sends each rank's buffer once (two steps of half).
  EXPECT_EQ(tp_bytes, 3u * 2 * 2 * 2 * 8192);
  EXPECT_EQ(dp_bytes, 3u * 2 * 2 * 4 * 4096);
  // Expect: with a free network, 3 forward layers (10 us), 3 backward (20 us), the optimizer.
  EXPECT_EQ(plan->compute_only, (3 * 10 + 3 * 20 + 10) * kMicrosecond);
}

TEST(Trace_Flows, RootedCollectivesTakeTheirRootFromRootRank) {
  Trace t;
  t.ranks.resize(4);
  t.groups["odd"] = {3, 1};
  for (uint32_t r = 0; r < 4; ++r) {
    TraceNode scatter = collective(1, Collective::kScatter, 4 * 4096, {});
    scatter.root = 2;
    t.ranks[r].push_back(scatter);
    if (r % 2 == 1) {
      TraceNode reduce = collective(2, Collective::kReduce, 4096, {1});
      reduce.group = "odd";
      reduce.root = 1;
      t.ranks[r].push_back(reduce);
    }
  }
  auto plan = trace_flows(t, hosts(4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->collectives, 2u);
  std::vector<std::pair<uint32_t, uint32_t>> moves;
  for (const FlowSpec& f : plan->flows)
    if (!f.compute) moves.emplace_back(f.src, f.dst);
  // Expect: the scatter from rank 2 to the other three, then the reduce 3 -> 1.
  EXPECT_EQ(moves, (std::vector<std::pair<uint32_t, uint32_t>>{{2, 0}, {2, 1}, {2, 3}, {3, 1}}));
}

TEST(Trace_Flows, PointToPointSendMeetsItsReceive) {
  Trace t;
  t.ranks.resize(3);
  t.ranks[0] = {compute(1, 40), p2p(2, true, 2, 5000, {1})};
  t.ranks[1] = {compute(1, 5)};
  t.ranks[2] = {compute(1, 70), p2p(2, false, 0, 0, {1}), compute(3, 10, {2})};
  auto plan = trace_flows(t, {10, 11, 12});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->p2p, 1u);
  // Expect: the send starts when both sides are ready (70 us), then 10 us of compute.
  EXPECT_EQ(plan->compute_only, 80 * kMicrosecond);
  const FlowSpec* flow = nullptr;
  for (const FlowSpec& f : plan->flows)
    if (!f.compute) flow = &f;
  ASSERT_NE(flow, nullptr);
  EXPECT_EQ(flow->src, 10u);
  EXPECT_EQ(flow->dst, 12u);
  EXPECT_EQ(flow->bytes, 5000u);
}

TEST(Trace_Flows, RefusesBadTracesNamingRankNodeAndReason) {
  auto refuse = [](Trace t) {
    return trace_flows(t, hosts(static_cast<uint32_t>(t.ranks.size()))).status();
  };
  Trace missing;
  missing.ranks = {{compute(1, 1, {9})}, {compute(1, 1)}};
  EXPECT_TRUE(Mentions(refuse(missing), "rank 0 (0.et): node 1: depends on node 9"));
  Trace cycle;
  cycle.ranks = {{compute(1, 1, {2}), compute(2, 1, {1})}, {compute(1, 1)}};
  EXPECT_TRUE(Mentions(refuse(cycle), "dependency cycle"));
  // Rank 0 sends to rank 1 after receiving from it; rank 1 does the same: a deadlock.
  Trace deadlock;
  deadlock.ranks = {{p2p(1, false, 1, 0, {}), p2p(2, true, 1, 100, {1})},
                    {p2p(1, false, 0, 0, {}), p2p(2, true, 0, 100, {1})}};
  EXPECT_TRUE(Mentions(refuse(deadlock), "waits on a dependency cycle"));
  Trace differ;
  differ.ranks = {{collective(1, Collective::kAllReduce, 4096, {})},
                  {collective(1, Collective::kAllToAll, 4096, {})}};
  EXPECT_TRUE(Mentions(refuse(differ), "rank 1 (1.et): node 1: collective #0 is alltoall"));
  Trace lonely;
  lonely.ranks = {{p2p(1, true, 1, 100, {})}, {compute(1, 1)}};
  EXPECT_TRUE(Mentions(refuse(lonely), "1 sends to rank 1 with tag 7, 0 receives"));
  Trace fewer;
  fewer.ranks = {{collective(1, Collective::kAllReduce, 4096, {})}, {compute(1, 1)}};
  EXPECT_TRUE(Mentions(refuse(fewer), "has 0 collective nodes, rank 0 has 1"));
  // Communicators: a name the groups lack, a rank outside its group, a root outside it.
  Trace unknown = fewer;
  unknown.ranks[0][0].group = "tp3";
  EXPECT_TRUE(Mentions(refuse(unknown),
                       "rank 0 (0.et): node 1: pg_name \"tp3\" is not a communicator group "
                       "(no groups were given)"));
  Trace outside = fewer;
  outside.groups["g"] = {1, 2};
  outside.ranks = {{collective(1, Collective::kAllReduce, 4096, {})},
                   {collective(1, Collective::kAllReduce, 4096, {})},
                   {collective(1, Collective::kAllReduce, 4096, {})}};
  for (auto& r : outside.ranks) r[0].group = "g";
  EXPECT_TRUE(Mentions(refuse(outside), "rank 0 (0.et): node 1: pg_name \"g\" does not include rank 0"));
  Trace fewer_in_group = outside;
  fewer_in_group.ranks[0].clear();
  fewer_in_group.ranks[2].clear();
  EXPECT_TRUE(Mentions(refuse(fewer_in_group),
                       "rank 2 (2.et) has 0 collective nodes of \"g\", rank 1 has 1"));
  Trace rootless = outside;
  rootless.ranks[0].clear();
  for (auto& r : rootless.ranks)
    for (auto& n : r) n.collective = Collective::kBroadcast, n.root = 0;
  EXPECT_TRUE(Mentions(refuse(rootless), "root_rank 0 is not in the communicator of \"g\""));
  Trace reduce_scatter_mismatch = outside;
  reduce_scatter_mismatch.ranks[0].clear();
  reduce_scatter_mismatch.ranks[2][0].root = 2;
  reduce_scatter_mismatch.ranks[1][0].collective = Collective::kReduce;
  reduce_scatter_mismatch.ranks[2][0].collective = Collective::kReduce;
  EXPECT_TRUE(Mentions(refuse(reduce_scatter_mismatch), "rank 2 (2.et): node 1: collective #0 of \"g\""));
}

}  // namespace
}  // namespace uet::sim
