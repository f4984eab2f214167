// Topology builders: leaf-spine and 3-tier fat-tree (k-ary), with per-tier links and
// oversubscription. Hosts are added first, so host i is node i and has address 10.0.0.1 + i.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "sim/network.h"

namespace uet::sim {

struct LeafSpineConfig {
  uint32_t leaves = 4;
  uint32_t spines = 2;
  uint32_t hosts_per_leaf = 8;  // oversubscription = hosts_per_leaf * host rate / (spines * fabric rate)
  LinkConfig host_link;
  LinkConfig fabric_link;
};

// k pods of k/2 ToRs and k/2 aggregation switches, (k/2)^2 cores. With hosts_per_tor = k/2 the
// fabric is non-blocking (k^3/4 hosts); more hosts per ToR oversubscribe the ToR uplinks.
struct FatTreeConfig {
  uint32_t k = 4;
  uint32_t hosts_per_tor = 0;  // 0: k/2
  LinkConfig host_link;
  LinkConfig tor_agg_link;
  LinkConfig agg_core_link;
};

absl::Status build_leaf_spine(Network& net, const LeafSpineConfig& c);
absl::Status build_fat_tree(Network& net, const FatTreeConfig& c);

// The shape checks the builders make before adding a node (sizes in range, at most
// kMaxHosts hosts), so a caller can refuse a fabric without building it.
absl::Status check_leaf_spine(const LeafSpineConfig& c);
absl::Status check_fat_tree(const FatTreeConfig& c);

}  // namespace uet::sim
