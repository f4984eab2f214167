// The A/B runner's fabrics (bench/ab_runner.h, Fabric): each kind built from its sizes and
// per-tier links, the links failures pick from, and the unloaded paths that slowdowns and
// the player's notices are measured against. Private to the runner.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/ab_runner.h"
#include "sim/network.h"
#include "sim/topology.h"
#include "sim/workload.h"

namespace uet::ab {

// Builds and finalizes `f` into `net`; fills `layout` (empty for leaf-spine and fat-tree).
absl::Status build_fabric(sim::Network& net, const Fabric& f, sim::TopologyLayout* layout);

// The link through port `p` is one `failed_links` picks from (ab_runner.h, top_tier_links):
// both ends switches, and for leaf-spine and fat-tree one of them at or above switch
// `first_top`, for a dragonfly or Dragonfly+ the two in different groups.
bool failure_candidate(const Fabric& f, const sim::Network& net, const sim::TopologyLayout& layout,
                       uint32_t first_top, uint32_t p);

// Each flow's unloaded path: the links it crosses and their one-way propagation. Leaf-spine
// and fat-tree by their closed forms (links by tier); every other kind by a breadth-first
// search of the built fabric from each source switch the flows (and the notices between
// dependent flows' hosts) name, once per run, keeping for the pairs they need the fewest
// links and, among such paths, the least propagation. A notice between hosts with no path
// (rail planes kept apart: two GPUs of one server) takes their two host links' delays, as if
// it crossed the server.
class IdealPaths {
 public:
  // On `net` as built (before any link fails). Refuses a pair with no path, naming the flow.
  static absl::StatusOr<IdealPaths> compute(const Fabric& f, const sim::Network& net,
                                            const std::vector<sim::FlowSpec>& flows);
  uint32_t links(uint32_t a, uint32_t b) const;
  Time propagation(uint32_t a, uint32_t b) const;

 private:
  struct Path {
    uint32_t links;
    Time delay;
  };
  Path path(uint32_t a, uint32_t b) const;

  const Fabric* fabric_ = nullptr;
  bool searched_ = false;                        // not a closed form
  std::vector<uint32_t> tor_;                    // by host, searched kinds
  std::vector<Time> host_delay_;                 // by host: its link's delay
  absl::flat_hash_map<uint64_t, Path> between_;  // (source switch << 32 | destination switch)
};

}  // namespace uet::ab
