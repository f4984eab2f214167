// Chakra traces (sim/trace/trace.h): the files round-trip, the generated steps turn into the
// flows and tasks they describe, the step's compute-only length follows the dependencies, and
// bad traces are refused naming the rank, the node and the reason.
#include "sim/trace/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "sim/trace/chakra.pb.h"
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

TEST(Trace_Flows, CollectivesAreSummarizedByKindAndSize) {
  // Two ranks: all-reduces of 4 KiB, 4 KiB and 8 KiB, one after another.
  Trace t;
  for (int r = 0; r < 2; ++r) {
    t.ranks.push_back({collective(1, Collective::kAllReduce, 4096, {}),
                       collective(2, Collective::kAllReduce, 4096, {}),
                       collective(3, Collective::kAllReduce, 8192, {1, 2})});
  }
  auto plan = trace_flows(t, hosts(2));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->collective_list.size(), 3u);
  // Played by hand: the 4 KiB ones over [0, 10] and [5, 30] us (rank 1 joins the second at
  // 8), the 8 KiB one over [40, 50], finishing rank by rank.
  std::vector<Time> finish(plan->flows.size(), kNever);
  auto at = [&](const TraceCollective& c, std::vector<Time> gates, std::vector<Time> dones) {
    for (size_t m = 0; m < 2; ++m) {
      finish[c.gates[m]] = gates[m] * kMicrosecond;
      finish[c.dones[m]] = dones[m] * kMicrosecond;
    }
  };
  at(plan->collective_list[0], {0, 0}, {9, 10});
  at(plan->collective_list[1], {5, 8}, {30, 20});
  at(plan->collective_list[2], {40, 40}, {50, 45});
  auto rows = summarize_collectives(*plan, finish);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].bytes, 4096u);
  EXPECT_EQ(rows[0].count, 2u);
  EXPECT_EQ(rows[0].busy, 30 * kMicrosecond);   // [0, 30]: the union
  EXPECT_EQ(rows[0].total, 35 * kMicrosecond);  // 10 + 25
  EXPECT_EQ(rows[0].longest, 25 * kMicrosecond);
  EXPECT_EQ(rows[1].bytes, 8192u);
  EXPECT_EQ(rows[1].busy, 10 * kMicrosecond);
  // A collective not finished on a member is left out.
  finish[plan->collective_list[2].dones[1]] = kNever;
  rows = summarize_collectives(*plan, finish);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kind, "allreduce");
}

// ---------------------------------------------------------------- traces as converters write them

// Writes one raw Chakra file per rank: metadata {version}, then the nodes.
void write_raw(const std::string& prefix, const std::vector<std::vector<chakra::Node>>& ranks,
               const std::string& version = "1.0.1") {
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::string bytes;
    auto append = [&bytes](const google::protobuf::Message& m) {
      const std::string body = m.SerializeAsString();
      google::protobuf::io::StringOutputStream raw(&bytes);
      google::protobuf::io::CodedOutputStream out(&raw);
      out.WriteVarint32(static_cast<uint32_t>(body.size()));
      out.WriteRaw(body.data(), static_cast<int>(body.size()));
    };
    chakra::GlobalMetadata m;
    m.set_version(version);
    append(m);
    for (const chakra::Node& n : ranks[r]) append(n);
    std::ofstream(prefix + "." + std::to_string(r) + ".et", std::ios::binary) << bytes;
  }
}

chakra::Node raw_node(uint64_t id, chakra::NodeType type, uint64_t us, int is_cpu_op) {
  chakra::Node n;
  n.set_id(id);
  n.set_type(type);
  n.set_duration_micros(us);
  if (is_cpu_op >= 0) {
    chakra::AttributeProto* a = n.add_attr();
    a->set_name("is_cpu_op");
    a->set_bool_val(is_cpu_op != 0);
  }
  return n;
}

TEST_F(TraceFiles, Chakra_ReadsAConvertedStepAndPlaysItsStreams) {
  // 4 ranks, 3 layers, as Chakra's PyTorch converter writes a step: host ops launching
  // kernels, each all-reduce as a c10d host call (COMM_COLL_NODE, is_cpu_op, no comm_type)
  // and an NCCL kernel (comm_type), extra attributes, deps split into data and control.
  const Trace t = converted_step(4, 3, 1 << 20, 100);
  ASSERT_EQ(t.ranks[0].size(), 4u + 9 * 3);
  ASSERT_TRUE(write_chakra(prefix("conv"), t).ok());
  auto read = read_chakra(prefix("conv"));
  ASSERT_TRUE(read.ok()) << read.status();
  size_t c10d = 0, nccl = 0, cpu = 0;
  for (const TraceNode& n : read->ranks[0]) {
    cpu += n.cpu;
    if (n.name == "c10d::allreduce_") {
      ++c10d;
      EXPECT_TRUE(n.cpu && n.kind == TraceNode::Kind::kCompute && n.duration_us == 5);
    }
    if (n.kind == TraceNode::Kind::kCollective) {
      ++nccl;
      EXPECT_TRUE(!n.cpu && n.collective == Collective::kAllReduce && n.bytes == (1u << 20) &&
                  n.group.empty() && n.deps.size() == 2);
    }
  }
  EXPECT_EQ(c10d, 3u);
  EXPECT_EQ(nccl, 3u);
  EXPECT_EQ(cpu, 2u * 3 + 2 * 3 + 2);  // forward 2, backward 2 (with the c10d call), optimizer 2
  auto plan = trace_flows(*read, hosts(4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->collectives, 3u);
  EXPECT_EQ(plan->compute_nodes, 4u * (4 + 8 * 3));
  // Expect: the host runs ahead (a few us per op), so with a free network the step is the
  // first launch (3 us) and then the GPU stream's kernels back to back: forward 100 + 150 +
  // 200 and 12 + 18 + 25, backward 2 x (200 + 150 + 100), the optimizer's 100 and 12.
  EXPECT_EQ(plan->compute_only, (3 + 450 + 55 + 900 + 112) * kMicrosecond);
}

TEST_F(TraceFiles, Chakra_OneRanksFileBecomesADataParallelJob) {
  // Rank 2's file of a converted step, read alone and replicated to 6 ranks: every rank runs
  // its nodes, and the job plays as the step it came from (the same compute alone).
  const Trace t = converted_step(4, 3, 1 << 20, 100);
  ASSERT_TRUE(write_chakra(prefix("src"), t).ok());
  auto nodes = read_chakra_file(prefix("src") + ".2.et");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  uint64_t regrouped = 0;
  auto job = replicate_rank(*nodes, 6, &regrouped);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->ranks.size(), 6u);
  EXPECT_EQ(regrouped, 0u);
  auto plan = trace_flows(*job, hosts(6));
  auto original = trace_flows(t, hosts(4));
  ASSERT_TRUE(plan.ok() && original.ok());
  EXPECT_EQ(plan->compute_only, original->compute_only);
  EXPECT_EQ(plan->collectives, 3u);
  // A collective of another process group spans the job; a send has no partner: refused.
  std::vector<TraceNode> grouped = *nodes;
  for (TraceNode& n : grouped)
    if (n.kind == TraceNode::Kind::kCollective) n.group = "7";
  ASSERT_TRUE(replicate_rank(grouped, 2, &regrouped).ok());
  EXPECT_EQ(regrouped, 3u);
  std::vector<TraceNode> with_send = *nodes;
  with_send.push_back(p2p(9999, true, 1, 100, {}));
  EXPECT_TRUE(Mentions(replicate_rank(with_send, 2, &regrouped).status(),
                       "node 9999: a point-to-point send has no partner"));
  EXPECT_TRUE(Mentions(replicate_rank(*nodes, 1, &regrouped).status(), "ranks 1 out of range"));
  EXPECT_TRUE(Mentions(read_chakra_file(prefix("none.0.et")).status(), "none.0.et: cannot open"));
}

TEST_F(TraceFiles, Chakra_ThousandsOfNodesPerRankReadAndPlan) {
  // A converted step of 8 ranks and 500 layers: 4504 nodes per rank, 36,032 in the job.
  const Trace t = converted_step(8, 500, 1 << 20, 50);
  ASSERT_TRUE(write_chakra(prefix("big"), t).ok());
  auto read = read_chakra(prefix("big"));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->ranks[7].size(), 4504u);
  auto plan = trace_flows(*read, hosts(8));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->collectives, 500u);
  EXPECT_EQ(plan->compute_nodes, 8u * (4504 - 500));
  EXPECT_EQ(plan->collective_list.size(), 500u);
}

TEST_F(TraceFiles, Chakra_StepTimeDoesNotDependOnHowDepsAreSpread) {
  // The converted step, then the same with every ctrl_dep moved into data_deps and each
  // kernel also depending on the kernel before its predecessor (implied already): the same
  // plan, the same step.
  const Trace t = converted_step(4, 5, 1 << 20, 100);
  Trace spread = t;
  for (auto& rank : spread.ranks) {
    std::vector<uint64_t> kernels;
    for (TraceNode& n : rank) {
      n.deps.insert(n.deps.end(), n.ctrl_deps.begin(), n.ctrl_deps.end());
      n.ctrl_deps.clear();
      if (!n.cpu && n.kind == TraceNode::Kind::kCompute) {
        if (kernels.size() >= 2) n.deps.push_back(kernels[kernels.size() - 2]);
        n.ctrl_deps = n.deps;  // named twice: counted once when read
        kernels.push_back(n.id);
      }
    }
  }
  ASSERT_TRUE(write_chakra(prefix("a"), t).ok());
  ASSERT_TRUE(write_chakra(prefix("b"), spread).ok());
  auto a = read_chakra(prefix("a"));
  auto b = read_chakra(prefix("b"));
  ASSERT_TRUE(a.ok() && b.ok());
  auto pa = trace_flows(*a, hosts(4));
  auto pb = trace_flows(*b, hosts(4));
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ(pa->compute_only, pb->compute_only);
  EXPECT_EQ(pa->network_bytes, pb->network_bytes);
  EXPECT_EQ(pa->flows.size(), pb->flows.size());
}

TEST_F(TraceFiles, Chakra_StreamsRunOneNodeAtATimeAndOverlapEachOther) {
  // On each rank: two GPU kernels and a memory load with no dependencies, a host op, and an
  // all-reduce after all of them. is_cpu_op written as int32 on rank 1 (older producers),
  // absent on the memory node (a GPU-side op).
  std::vector<std::vector<chakra::Node>> ranks(2);
  for (int r = 0; r < 2; ++r) {
    auto& nodes = ranks[r];
    nodes.push_back(raw_node(10, chakra::COMP_NODE, 100, 0));
    nodes.push_back(raw_node(11, chakra::COMP_NODE, 100, 0));
    nodes.push_back(raw_node(12, chakra::MEM_LOAD_NODE, 150, -1));
    chakra::Node host = raw_node(13, chakra::COMP_NODE, 120, r == 0 ? 1 : -1);
    if (r == 1) {
      chakra::AttributeProto* a = host.add_attr();
      a->set_name("is_cpu_op");
      a->set_int32_val(1);
    }
    nodes.push_back(host);
    chakra::Node ar = raw_node(14, chakra::COMM_COLL_NODE, 0, 0);
    for (uint64_t d : {10, 11, 12, 13}) ar.add_ctrl_deps(d);
    chakra::AttributeProto* type = ar.add_attr();
    type->set_name("comm_type");
    type->set_int64_val(chakra::ALL_REDUCE);
    chakra::AttributeProto* size = ar.add_attr();
    size->set_name("comm_size");
    size->set_uint64_val(8192);
    chakra::AttributeProto* unknown = ar.add_attr();
    unknown->set_name("op_schema");
    unknown->set_string_val("nccl:all_reduce");
    nodes.push_back(ar);
  }
  write_raw(prefix("streams"), ranks, "0.0.4");
  auto read = read_chakra(prefix("streams"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->ranks[1][3].cpu);
  EXPECT_EQ(stream_of(read->ranks[0][2]), kMemoryStream);
  auto plan = trace_flows(*read, hosts(2));
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Expect: the two kernels one after the other (200 us) on the GPU stream, beside the host
  // op (120) and the load (150) on theirs: 200 us, not 100 (all at once) nor 470 (one stream).
  EXPECT_EQ(plan->compute_only, 200 * kMicrosecond);
  EXPECT_EQ(plan->collectives, 1u);
}

TEST_F(TraceFiles, Chakra_ProcessGroupsComeFromPyTorchsMetadata) {
  // 4 ranks; each file opens with the converter's "## process_group:init ##" METADATA_NODE
  // (its inputs' values: the groups' JSON inside a Python list), then one all-reduce in its
  // tensor-parallel group: "1" = {0, 2}, "2" = {1, 3}. No groups file is needed.
  const std::string groups =
      R"(['[{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "ranks": [], )"
      R"("group_size": 4, "group_count": 3}, {"pg_name": "1", "pg_desc": "tp", "ranks": [0, 2]}, )"
      R"({"pg_name": "2", "pg_desc": "tp", "ranks": [1, 3]}]'])";
  auto job = [&](const std::string& rank1_groups) {
    std::vector<std::vector<chakra::Node>> ranks(4);
    for (int r = 0; r < 4; ++r) {
      chakra::Node init = raw_node(1, chakra::METADATA_NODE, 0, 1);
      init.set_name("## process_group:init ##");
      init.mutable_inputs()->set_values(r == 1 ? rank1_groups : groups);
      chakra::Node ar = raw_node(2, chakra::COMM_COLL_NODE, 0, 0);
      ar.add_ctrl_deps(1);
      for (const auto& [name, v] : {std::pair<const char*, int64_t>{"comm_type", chakra::ALL_REDUCE},
                                    {"comm_size", 65536}}) {
        chakra::AttributeProto* a = ar.add_attr();
        a->set_name(name);
        a->set_int64_val(v);
      }
      chakra::AttributeProto* pg = ar.add_attr();
      pg->set_name("pg_name");
      pg->set_string_val(r % 2 == 0 ? "1" : "2");
      ranks[r] = {init, ar};
    }
    return ranks;
  };
  write_raw(prefix("pg"), job(groups));
  auto read = read_chakra(prefix("pg"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->groups.size(), 2u);
  EXPECT_EQ(read->groups.at("1"), (std::vector<uint32_t>{0, 2}));
  auto plan = trace_flows(*read, hosts(4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->collectives, 2u);
  // Expect: each all-reduce stays within its pair.
  for (const FlowSpec& f : plan->flows) {
    if (!f.compute) {
      EXPECT_EQ(f.src % 2, f.dst % 2) << f.src << " -> " << f.dst;
    }
  }
  // A rank whose metadata disagrees is refused, naming its file and node.
  write_raw(prefix("pgbad"),
            job(R"(['[{"pg_name": "1", "ranks": [0, 1]}, {"pg_name": "2", "ranks": [2, 3]}]'])"));
  EXPECT_TRUE(Mentions(read_chakra(prefix("pgbad")).status(),
                       "pgbad.1.et: node 1: process group \"1\" is [0, 1] here, [0, 2]"));
  write_raw(prefix("pgrank"), job(R"(['[{"pg_name": "1", "ranks": [0, 9]}]'])"));
  EXPECT_TRUE(Mentions(read_chakra(prefix("pgrank")).status(),
                       "pgrank.1.et: node 1: process group \"1\": member 9 is not a rank in [0, 3]"));
}

TEST_F(TraceFiles, Chakra_AstraSimsMicrobenchmarksOfEveryCollectiveType) {
  // The shape of ASTRA-sim's example micro-benchmarks: one COMM_COLL_NODE per rank file, GPU
  // side, with comm_type, comm_size and involved_dim (a bool list, not read). Every
  // CollectiveCommType value, 8 ranks, 1 MiB.
  for (int type = chakra::ALL_REDUCE; type <= chakra::BARRIER; ++type) {
    std::vector<std::vector<chakra::Node>> ranks(8);
    for (auto& r : ranks) {
      chakra::Node n = raw_node(0, chakra::COMM_COLL_NODE, 0, 0);
      n.set_name(chakra::CollectiveCommType_Name(type));
      chakra::AttributeProto* a = n.add_attr();
      a->set_name("comm_type");
      a->set_int64_val(type);
      a = n.add_attr();
      a->set_name("comm_size");
      a->set_int64_val(1 << 20);
      a = n.add_attr();
      a->set_name("involved_dim");
      a->mutable_bool_list()->add_values(true);
      r.push_back(n);
    }
    const std::string p = prefix(chakra::CollectiveCommType_Name(type));
    write_raw(p, ranks);
    auto read = read_chakra(p);
    ASSERT_TRUE(read.ok()) << chakra::CollectiveCommType_Name(type) << ": " << read.status();
    auto plan = trace_flows(*read, hosts(8));
    ASSERT_TRUE(plan.ok()) << chakra::CollectiveCommType_Name(type) << ": " << plan.status();
    EXPECT_EQ(plan->collectives, 1u);
    EXPECT_GT(plan->network_bytes, 0u) << chakra::CollectiveCommType_Name(type);
  }
}

TEST_F(TraceFiles, Chakra_HostOpsOfAnyTypeAreHostWorkAndGpuOnesMustCommunicate) {
  // A host op of a type the simulator does not model (STORAGE_NODE) is host time; the same
  // node as a GPU op is refused, as is a GPU collective without comm_type.
  std::vector<std::vector<chakra::Node>> ok(2), storage(2), no_type(2);
  for (int r = 0; r < 2; ++r) {
    ok[r].push_back(raw_node(1, chakra::STORAGE_NODE, 40, 1));
    ok[r].push_back(raw_node(2, chakra::COMM_COLL_NODE, 0, 1));  // a c10d call of no duration
    // An INVALID_NODE takes no time and no stream (ASTRA-sim skips it), whatever it says.
    chakra::Node invalid = raw_node(3, chakra::INVALID_NODE, 500, 0);
    invalid.add_data_deps(2);
    ok[r].push_back(invalid);
    storage[r].push_back(raw_node(1, chakra::STORAGE_NODE, 40, 0));
    no_type[r].push_back(raw_node(1, chakra::COMM_COLL_NODE, 0, 0));
  }
  write_raw(prefix("ok"), ok);
  write_raw(prefix("storage"), storage);
  write_raw(prefix("notype"), no_type);
  auto read = read_chakra(prefix("ok"));
  ASSERT_TRUE(read.ok()) << read.status();
  auto plan = trace_flows(*read, hosts(2));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->compute_only, 40 * kMicrosecond);
  EXPECT_EQ(plan->collectives, 0u);
  EXPECT_TRUE(Mentions(read_chakra(prefix("storage")).status(),
                       "storage.0.et: node 1: node type 8 is not modelled: INVALID, COMP"));
  EXPECT_TRUE(Mentions(read_chakra(prefix("notype")).status(),
                       "notype.0.et: node 1: collective without comm_type (a GPU op"));
}

}  // namespace
}  // namespace uet::sim
