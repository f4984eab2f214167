// The reports of a played trace step: its collectives by kind and size (sim/trace/trace.h).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/trace/trace.h"

namespace uet::sim {

std::vector<CollectiveSummary> summarize_collectives(const TracePlan& plan,
                                                     const std::vector<Time>& finish) {
  std::map<std::pair<std::string, uint64_t>, CollectiveSummary> rows;
  std::map<std::pair<std::string, uint64_t>, std::vector<std::pair<Time, Time>>> spans;
  for (const TraceCollective& c : plan.collective_list) {
    Time start = kNever, end = 0;
    bool done = true;
    for (uint32_t g : c.gates) start = std::min(start, finish[g]);
    for (uint32_t d : c.dones) {
      done = done && finish[d] != kNever;
      end = std::max(end, finish[d]);
    }
    if (!done || start == kNever) continue;
    const std::string kind = c.barrier ? "barrier" : std::string(to_string(c.collective));
    CollectiveSummary& row = rows[{kind, c.bytes}];
    row.kind = kind;
    row.bytes = c.bytes;
    ++row.count;
    row.total += end - start;
    row.longest = std::max(row.longest, end - start);
    spans[{kind, c.bytes}].emplace_back(start, end);
  }
  std::vector<CollectiveSummary> out;
  for (auto& [key, row] : rows) {
    std::vector<std::pair<Time, Time>>& s = spans[key];
    std::sort(s.begin(), s.end());
    Time covered_to = 0;
    for (const auto& [start, end] : s) {  // the union of the spans
      if (end <= covered_to) continue;
      row.busy += end - std::max(start, covered_to);
      covered_to = end;
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace uet::sim
