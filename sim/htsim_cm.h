// htsim connection matrices (.cm files): the workload format of htsim and of the official UEC
// simulator (uet-htsim), read into our flow lists so an experiment written for htsim reruns
// here unchanged (the format of uet-htsim's connection matrices, below).
//
//   Nodes 128
//   Connections 3
//   Triggers 1
//   0->5 id 1 start 0 size 2000000 send_done_trigger 1
//   1->6 id 2 start 20 size 2000000
//   5->0 id 3 start 0 size 1000 trigger 1
//   trigger id 1 oneshot
//
// Semantics, as uet-htsim (40ccb05) runs them:
//   - `start` is read as whole microseconds ("20" and "20.7" both start at 20 us), whatever the
//     parser's comment in htsim says.
//   - A flow with `trigger k` waits for trigger k and ignores its start time; a flow with
//     `send_done_trigger k` or `recv_done_trigger k` fires k when it completes (both mean
//     "completes" here: a WRITE completes when its bytes are placed and acknowledged).
//   - Triggers: `oneshot` and `multishot` with one flow firing them, `barrier` with `count n`
//     equal to the number of flows firing it. Other shapes, `failure` lines, `prio` other than 0
//     and unknown keys are refused with the line number, never silently ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/workload.h"

namespace uet::sim {

struct ConnectionMatrix {
  uint32_t nodes = 0;
  std::vector<FlowSpec> flows;     // flows[i].id == i, in file order
  std::vector<uint64_t> htsim_ids; // the file's `id` of each flow (its line's index if absent)
};

// Errors name `where` and the line: "perm.cm:7: ...".
absl::StatusOr<ConnectionMatrix> parse_connection_matrix(std::string_view text,
                                                         std::string_view where = "cm");
absl::StatusOr<ConnectionMatrix> load_connection_matrix(const std::string& path);

}  // namespace uet::sim
