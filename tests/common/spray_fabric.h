// The lossy fabric the engines' simulator tests spray over (the permutations of
// uet_endpoint_test, uet_modes_test and gbn_vs_selective_test): 8 hosts on 2 leaves, 4 spines,
// random loss on every fabric link and ECN off, so that loss alone drives the repair; and the
// plain two-leaf fabrics and host configs the other simulator tests build on.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "sim/network.h"
#include "sim/topology.h"

namespace uet::testing {

// The simulator's defaults, seeded with `seed`.
inline sim::NetworkConfig seeded_network(uint64_t seed) {
  sim::NetworkConfig nc;
  nc.seed = seed;
  return nc;
}

// The simulator's config: seeded with `seed`, switches without ECN marking.
inline sim::NetworkConfig spray_network(uint64_t seed) {
  sim::NetworkConfig nc = seeded_network(seed);
  nc.switches.ecn.enabled = false;
  return nc;
}

// Builds 2 leaves of `hosts_per_leaf` hosts and `spines` spines into `net`, losing
// `fabric_loss` of the frames on each fabric (leaf-spine) link.
inline absl::Status build_two_leaves(sim::Network& net, uint32_t spines, uint32_t hosts_per_leaf,
                                     double fabric_loss = 0) {
  sim::LeafSpineConfig ls;
  ls.leaves = 2;
  ls.spines = spines;
  ls.hosts_per_leaf = hosts_per_leaf;
  ls.fabric_link.loss = fabric_loss;
  return sim::build_leaf_spine(net, ls);
}

// The 2-leaf, 4-spine, 4-hosts-a-leaf fabric.
inline absl::Status build_spray_fabric(sim::Network& net, double fabric_loss) {
  return build_two_leaves(net, /*spines=*/4, /*hosts_per_leaf=*/4, fabric_loss);
}

// A config of either engine for simulated host `h`: its address and MAC, the rest default.
template <class Config>
Config sim_host_config(uint32_t h) {
  Config c;
  c.local_ip4 = sim::Network::host_ip4(h);
  c.local_mac = sim::Network::host_mac(h);
  return c;
}

}  // namespace uet::testing
