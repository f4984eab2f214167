// htsim topology files (.topo), as the official UEC simulator (uet-htsim) reads them with
// -topo, mapped onto our builders so a fabric described for htsim is built here unchanged.
//
//   Nodes 1024            Tiers 2 or 3; Podsize: hosts per pod (3 tiers), or Nodes
//   Tiers 3
//   Podsize 128
//
//   Tier 0                one block per tier, 0 = ToR (its downlinks go to hosts)
//   Downlink_speed_Gbps 100
//   Radix_Down 16         ports down (hosts per ToR at tier 0)
//   Radix_Up 16           ports up (optional: derived from the rates and Oversubscribed)
//   Downlink_Latency_ns 1000
//   Switch_Latency_ns 0
//   Oversubscribed 1      down/up capacity ratio of this tier (optional, default 1)
//   Bundle 1              parallel links per switch pair (only 1 is supported)
//
// Mapping: 2 tiers -> leaf-spine (leaves = Nodes / Radix_Down[0], spines = the ToR's uplinks);
// 3 tiers -> our k-ary fat-tree (k = Nodes / Podsize pods of k/2 ToRs and k/2 aggregation
// switches, (k/2)^2 cores), so a 3-tier file must describe that shape. A tier's downlinks get
// its Downlink_speed_Gbps and Downlink_Latency_ns; a switch's latency is added to the delay of
// the links below it (our switches forward in zero time). Keys are case-insensitive; '#'
// starts a comment. Anything the mapping cannot honour (Bundle > 1, Queue_* sizes, a shape
// that is not ours) is refused with the file, line and reason, never approximated silently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sim/topology.h"

namespace uet::sim {

struct HtsimTopology {
  enum class Kind : uint8_t { kLeafSpine, kFatTree } kind = Kind::kLeafSpine;
  LeafSpineConfig leaf_spine;  // kind == kLeafSpine
  FatTreeConfig fat_tree;      // kind == kFatTree
  uint32_t hosts = 0;
  double host_gbps = 0;
  Time host_delay = 0;
};

absl::StatusOr<HtsimTopology> parse_htsim_topology(std::string_view text,
                                                   std::string_view where = "topo");
absl::StatusOr<HtsimTopology> load_htsim_topology(const std::string& path);

}  // namespace uet::sim
