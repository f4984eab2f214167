// sim/htsim_cm: htsim connection matrices as uet-htsim runs them, and every refusal.
#include "sim/htsim_cm.h"

#include <gtest/gtest.h>

#include <string>

namespace uet::sim {
namespace {

TEST(HtsimCm, PermutationWithIdsAndWholeMicrosecondStarts) {
  const auto cm = parse_connection_matrix(
      "Nodes 4\n"
      "Connections 3\n"
      "0->1 id 7 start 0 size 2000000\n"
      "\n"
      "1->2 id 8 start 20.7 size 1000\n"
      "2->3 start 3 size 1\n");
  ASSERT_TRUE(cm.ok()) << cm.status();
  EXPECT_EQ(cm->nodes, 4u);
  ASSERT_EQ(cm->flows.size(), 3u);
  EXPECT_EQ(cm->flows[0].src, 0u);
  EXPECT_EQ(cm->flows[0].dst, 1u);
  EXPECT_EQ(cm->flows[0].bytes, 2000000u);
  EXPECT_EQ(cm->flows[1].start, 20 * kMicrosecond);  // 20.7 is read as 20 us, as uet-htsim does
  EXPECT_EQ(cm->flows[2].start, 3 * kMicrosecond);
  EXPECT_EQ(cm->flows[2].id, 2u);
  EXPECT_EQ(cm->htsim_ids, (std::vector<uint64_t>{7, 8, 2}));
}

TEST(HtsimCm, TriggersBecomePrerequisites) {
  // A serial all-to-all step and a barrier, the shapes htsim's generators write.
  const auto cm = parse_connection_matrix(
      "Nodes 3\nConnections 4\nTriggers 2\n"
      "0->1 id 1 start 0 size 100 send_done_trigger 1\n"
      "0->2 id 2 start 99 size 100 trigger 1\n"
      "1->2 id 3 start 0 size 100 recv_done_trigger 2\n"
      "2->0 id 4 start 0 size 100 trigger 2\n"
      "trigger id 1 oneshot\n"
      "trigger id 2 barrier count 1\n");
  ASSERT_TRUE(cm.ok()) << cm.status();
  EXPECT_TRUE(cm->flows[0].after.empty());
  EXPECT_EQ(cm->flows[1].after, (std::vector<uint32_t>{0}));
  EXPECT_EQ(cm->flows[1].start, 0);  // a triggered flow ignores its start time
  EXPECT_EQ(cm->flows[3].after, (std::vector<uint32_t>{2}));
}

TEST(HtsimCm, BarrierWaitsForEveryFlowThatFiresIt) {
  const auto cm = parse_connection_matrix(
      "Nodes 4\n"
      "0->3 size 10 send_done_trigger 5\n"
      "1->3 size 10 send_done_trigger 5\n"
      "2->3 size 10 send_done_trigger 5\n"
      "3->0 size 10 trigger 5\n"
      "trigger id 5 barrier count 3\n");
  ASSERT_TRUE(cm.ok()) << cm.status();
  EXPECT_EQ(cm->flows[3].after, (std::vector<uint32_t>{0, 1, 2}));
}

// Each malformed input is refused with its line number and a message naming the problem.
struct Bad {
  const char* text;
  const char* expect;  // a substring of the message
};

class HtsimCmRefuses : public ::testing::TestWithParam<Bad> {};

TEST_P(HtsimCmRefuses, WithLineAndReason) {
  const auto cm = parse_connection_matrix(GetParam().text, "t.cm");
  ASSERT_FALSE(cm.ok()) << GetParam().text;
  EXPECT_EQ(cm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(cm.status().message()).find(GetParam().expect), std::string::npos)
      << cm.status().message();
  EXPECT_EQ(std::string(cm.status().message()).rfind("t.cm:", 0), 0u) << cm.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    All, HtsimCmRefuses,
    ::testing::Values(
        Bad{"0->1 size 10\n", "no 'Nodes N' line"},
        Bad{"Nodes 1\n", "Nodes 1 out of range"},
        Bad{"Nodes x\n", "Nodes needs one non-negative integer"},
        Bad{"Nodes 4\nConnections 2\n0->1 size 10\n", "'Connections 2' but 1 flow lines"},
        Bad{"Nodes 4\n0->4 size 10\n", ":2: node out of range"},
        Bad{"Nodes 4\n1->1 size 10\n", ":2: flow from node 1 to itself"},
        Bad{"Nodes 4\n0->1 start 0\n", ":2: flow has no size"},
        Bad{"Nodes 4\n0->1 size 0\n", "size must be at least 1 byte"},
        Bad{"Nodes 4\n0->1 size ten\n", "'size' needs a non-negative integer, got 'ten'"},
        Bad{"Nodes 4\n0->1 size 10 colour red\n", "unknown key 'colour'"},
        Bad{"Nodes 4\n0->1 size 10 prio 2\n", "prio other than 0"},
        Bad{"Nodes 4\n0->1 size 10 start -3\n", "start must be a time"},
        Bad{"Nodes 4\n0->1 size\n", "'size' has no value"},
        Bad{"Nodes 4\nhello world\n", ":2: expected a flow"},
        Bad{"Nodes 4\nFailures 1\n", "failures in connection matrices are not supported"},
        Bad{"Nodes 4\nfailure switch_type TOR\n", "not supported"},
        Bad{"Nodes 4\n0->1 size 10 trigger 3\n", "trigger 3 is not defined"},
        Bad{"Nodes 4\n0->1 size 10 trigger 3\ntrigger id 3 oneshot\n", "trigger 3 is never fired"},
        Bad{"Nodes 4\n0->1 size 1 send_done_trigger 3\n1->2 size 1 send_done_trigger 3\n"
            "2->3 size 1 trigger 3\ntrigger id 3 oneshot\n",
            ":5: oneshot/multishot trigger 3 is fired by 2 flows"},
        Bad{"Nodes 4\n0->1 size 1 send_done_trigger 3\n2->3 size 1 trigger 3\n"
            "trigger id 3 barrier count 2\n",
            ":4: barrier trigger 3 has count 2 but 1 flows fire it"},
        Bad{"Nodes 4\ntrigger id 3 sometimes\n", "trigger type 'sometimes' unknown"},
        Bad{"Nodes 4\ntrigger id 3 oneshot\ntrigger id 3 oneshot\n", "trigger 3 defined twice"},
        Bad{"Nodes 4\nTriggers 2\ntrigger id 3 oneshot\n", "'Triggers 2' but 1 trigger lines"}));

TEST(HtsimCm, LoadNamesAMissingFile) {
  const auto cm = load_connection_matrix("/nonexistent/x.cm");
  ASSERT_FALSE(cm.ok());
  EXPECT_EQ(cm.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace uet::sim
