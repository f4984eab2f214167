// The lossy fabric the engines' simulator tests spray over (the permutations of
// uet_endpoint_test, uet_modes_test and gbn_vs_selective_test): 8 hosts on 2 leaves, 4 spines,
// random loss on every fabric link and ECN off, so that loss alone drives the repair.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "sim/network.h"
#include "sim/topology.h"

namespace uet::testing {

// The simulator's config: seeded with `seed`, switches without ECN marking.
inline sim::NetworkConfig spray_network(uint64_t seed) {
  sim::NetworkConfig nc;
  nc.seed = seed;
  nc.switches.ecn.enabled = false;
  return nc;
}

// Builds the 2-leaf, 4-spine, 4-hosts-a-leaf fabric into `net`, losing `fabric_loss` of the
// frames on each fabric (leaf-spine) link.
inline absl::Status build_spray_fabric(sim::Network& net, double fabric_loss) {
  sim::LeafSpineConfig ls;
  ls.leaves = 2;
  ls.spines = 4;
  ls.hosts_per_leaf = 4;
  ls.fabric_link.loss = fabric_loss;
  return sim::build_leaf_spine(net, ls);
}

}  // namespace uet::testing
