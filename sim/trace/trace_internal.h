// What the trace files share: file names, the error every bad node gets, ASTRA-sim's world
// communicator, and the process groups a rank's metadata defines (comm_groups.cc) as the
// reader (chakra_read.cc) collects them. Internal to sim/trace/ (use sim/trace/trace.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sim/trace/trace.h"
#include "sim/workload.h"

namespace uet::chakra {
class Node;
}  // namespace uet::chakra

namespace uet::sim::trace_internal {

inline constexpr uint32_t kMaxTraceRanks = kMaxWorkloadHosts;

// Rank r's file of a trace: PREFIX.r.et.
inline std::string rank_file(const std::string& prefix, size_t rank) {
  return absl::StrCat(prefix, ".", rank, ".et");
}

inline absl::Status bad_node(const std::string& file, uint64_t id, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": node ", id, ": ", std::string(why)));
}

// ASTRA-sim's default communicator: no pg_name, an empty one or "0" is every rank.
inline bool is_world(const std::string& group) { return group.empty() || group == "0"; }

// Process groups a rank's metadata defines, by pg_name, with the node that defined each.
struct DefinedGroup {
  std::vector<uint32_t> members;
  uint64_t node = 0;
};
using DefinedGroups = std::map<std::string, DefinedGroup>;

// Chakra's comm_type (CollectiveCommType) and the collective it is played as, both ways
// (comm_type.cc): sets `t`'s collective, and barrier for BARRIER, false for a type not
// modelled; and the comm_type a collective node is written with.
bool collective_of(int64_t comm_type, TraceNode* t);
int64_t comm_type(const TraceNode& t);

// The groups a METADATA_NODE of `file` defines (PyTorch's "## process_group:init ##"), added
// to `out`; other metadata nodes define nothing.
absl::Status read_groups(const chakra::Node& n, const std::string& file, uint32_t ranks,
                         DefinedGroups* out);

}  // namespace uet::sim::trace_internal
