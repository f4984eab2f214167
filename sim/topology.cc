#include "sim/topology.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/topology_internal.h"

namespace uet::sim {

using topology_internal::check_links;

absl::Status check_leaf_spine(const LeafSpineConfig& c) {
  if (c.leaves < 1 || c.leaves > 1024 || c.spines < 1 || c.spines > 256 || c.hosts_per_leaf < 1 ||
      c.hosts_per_leaf > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "leaf-spine: leaves ", c.leaves, " (1..1024), spines ", c.spines, " (1..256), hosts per leaf ",
        c.hosts_per_leaf, " (1..256)"));
  }
  if (uint64_t{c.leaves} * c.hosts_per_leaf > kMaxHosts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "leaf-spine: ", c.leaves, " leaves x ", c.hosts_per_leaf,
        " hosts per leaf = ", c.leaves * c.hosts_per_leaf, " hosts, at most ", kMaxHosts));
  }
  return check_links({{"host", &c.host_link}, {"fabric", &c.fabric_link}});
}

absl::Status check_fat_tree(const FatTreeConfig& c) {
  if (c.k < 2 || c.k > 256 || c.k % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("fat-tree: k=", c.k, " must be even, 2..256"));
  }
  const uint32_t per_tor = c.hosts_per_tor == 0 ? c.k / 2 : c.hosts_per_tor;
  if (per_tor > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("fat-tree: hosts per ToR ", per_tor, " (1..256)"));
  }
  if (uint64_t{c.k} * (c.k / 2) * per_tor > kMaxHosts) {
    return absl::InvalidArgumentError(absl::StrCat("fat-tree: k=", c.k, " with ", per_tor,
                                                   " hosts per ToR = ", c.k * (c.k / 2) * per_tor,
                                                   " hosts, at most ", kMaxHosts));
  }
  return check_links({{"host", &c.host_link},
                      {"ToR-aggregation", &c.tor_agg_link},
                      {"aggregation-core", &c.agg_core_link}});
}

absl::Status build_leaf_spine(Network& net, const LeafSpineConfig& c) {
  SIM_TRY(check_leaf_spine(c));
  std::vector<uint32_t> hosts, leaves, spines;
  for (uint32_t i = 0; i < c.leaves * c.hosts_per_leaf; ++i)
    hosts.push_back(net.add_host(absl::StrCat("h", i)));
  for (uint32_t i = 0; i < c.leaves; ++i) leaves.push_back(net.add_switch(absl::StrCat("leaf", i)));
  for (uint32_t i = 0; i < c.spines; ++i) spines.push_back(net.add_switch(absl::StrCat("spine", i)));
  for (uint32_t i = 0; i < hosts.size(); ++i)
    SIM_TRY(net.connect(hosts[i], leaves[i / c.hosts_per_leaf], c.host_link));
  for (uint32_t l : leaves)
    for (uint32_t s : spines) SIM_TRY(net.connect(l, s, c.fabric_link));
  return net.finalize();
}

absl::Status build_fat_tree(Network& net, const FatTreeConfig& c) {
  SIM_TRY(check_fat_tree(c));
  const uint32_t half = c.k / 2;
  const uint32_t per_tor = c.hosts_per_tor == 0 ? half : c.hosts_per_tor;
  std::vector<uint32_t> hosts, tors, aggs, cores;
  const uint32_t n_tors = c.k * half;
  for (uint32_t i = 0; i < n_tors * per_tor; ++i) hosts.push_back(net.add_host(absl::StrCat("h", i)));
  for (uint32_t i = 0; i < n_tors; ++i) tors.push_back(net.add_switch(absl::StrCat("tor", i)));
  for (uint32_t i = 0; i < n_tors; ++i) aggs.push_back(net.add_switch(absl::StrCat("agg", i)));
  for (uint32_t i = 0; i < half * half; ++i) cores.push_back(net.add_switch(absl::StrCat("core", i)));
  for (uint32_t i = 0; i < hosts.size(); ++i) SIM_TRY(net.connect(hosts[i], tors[i / per_tor], c.host_link));
  for (uint32_t pod = 0; pod < c.k; ++pod) {
    for (uint32_t t = 0; t < half; ++t)
      for (uint32_t a = 0; a < half; ++a)
        SIM_TRY(net.connect(tors[pod * half + t], aggs[pod * half + a], c.tor_agg_link));
    // Aggregation switch a of every pod connects to core group a.
    for (uint32_t a = 0; a < half; ++a)
      for (uint32_t j = 0; j < half; ++j)
        SIM_TRY(net.connect(aggs[pod * half + a], cores[a * half + j], c.agg_core_link));
  }
  return net.finalize();
}

}  // namespace uet::sim
