// Rail-optimised planes (sim/topology.h): the check, size and builder.
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/topology.h"
#include "sim/topology_internal.h"

namespace uet::sim {

using topology_internal::check_hosts;
using topology_internal::check_links;
using topology_internal::check_range;

absl::Status check_rail(const RailConfig& c) {
  constexpr const char* kWhat = "rail";
  SIM_TRY(check_range(kWhat, "servers", c.servers, 1, 65536));
  SIM_TRY(check_range(kWhat, "gpus per server (rails)", c.gpus_per_server, 1, 64));
  SIM_TRY(check_range(kWhat, "servers per leaf", c.servers_per_leaf, 1, 256));
  SIM_TRY(check_range(kWhat, "spines per plane", c.spines, 1, 256));
  SIM_TRY(check_hosts(kWhat, rail_size(c).hosts));
  return check_links({{"host", &c.host_link}, {"fabric", &c.fabric_link}});
}

TopologySize rail_size(const RailConfig& c) noexcept {
  const uint64_t rails = c.gpus_per_server, leaves = uint64_t{c.blocks()} * rails;
  TopologySize s;
  s.hosts = uint64_t{c.servers} * rails;
  const uint64_t spines = c.planes_joined ? c.spines : uint64_t{c.spines} * rails;
  s.switches = leaves + spines;
  // Joined: every spine to every leaf; apart: each plane's spines to its rail's leaves.
  s.fabric_links = leaves * c.spines;
  s.links = s.hosts + s.fabric_links;
  return s;
}

absl::Status build_rail(Network& net, const RailConfig& c, TopologyLayout* layout) {
  SIM_TRY(check_rail(c));
  const uint32_t rails = c.gpus_per_server, blocks = c.blocks(), leaves = blocks * rails;
  const uint32_t spines = c.planes_joined ? c.spines : c.spines * rails;
  std::vector<uint32_t> hosts, sw;
  for (uint32_t i = 0; i < c.servers * rails; ++i) {
    hosts.push_back(net.add_host(absl::StrCat("s", i / rails, "gpu", i % rails)));
  }
  for (uint32_t l = 0; l < leaves; ++l) {
    sw.push_back(net.add_switch(absl::StrCat("rail", l % rails, "leaf", l / rails)));
  }
  for (uint32_t s = 0; s < spines; ++s) {
    sw.push_back(net.add_switch(c.planes_joined
                                    ? absl::StrCat("spine", s)
                                    : absl::StrCat("rail", s / c.spines, "spine", s % c.spines)));
  }
  for (uint32_t i = 0; i < hosts.size(); ++i) {
    const uint32_t server = i / rails, rail = i % rails;
    SIM_TRY(net.connect(hosts[i], sw[server / c.servers_per_leaf * rails + rail], c.host_link));
  }
  for (uint32_t l = 0; l < leaves; ++l) {
    // Joined: every spine; apart: the spines of this leaf's rail.
    const uint32_t first = c.planes_joined ? 0 : (l % rails) * c.spines;
    for (uint32_t s = 0; s < c.spines; ++s) {
      SIM_TRY(net.connect(sw[l], sw[leaves + first + s], c.fabric_link));
    }
  }
  if (layout != nullptr) {
    *layout = TopologyLayout{};
    for (uint32_t l = 0; l < leaves; ++l) layout->group.push_back(l / rails);
    layout->group.resize(leaves + spines, kNone);
    layout->groups = blocks;
  }
  return net.finalize();
}

}  // namespace uet::sim
