// Dragonfly and Dragonfly+ (sim/topology.h): their checks, sizes and builders.
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/topology.h"
#include "sim/topology_internal.h"

namespace uet::sim {

using topology_internal::check_hosts;
using topology_internal::check_links;
using topology_internal::check_range;

namespace {

// The groups' count against their global ports: 2..ports+1, g - 1 dividing the ports (so every
// pair of groups gets the same number of global links).
absl::Status check_groups(const char* what, uint32_t g, uint64_t ports, const char* ports_name) {
  SIM_TRY(check_range(what, "groups g", g, 2, ports + 1));
  if (ports % (g - 1) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": groups g ", g, ": g - 1 must divide ",
                                                   ports_name, " = ", ports,
                                                   " (every pair of groups as many global links)"));
  }
  return absl::OkStatus();
}

// The global links of `groups` groups with `ports` global ports each, port k of a group on
// its switch first + k / h (`first(i)` the group's first global switch): the consecutive
// arrangement of sim/topology.h, pair by pair (i < j), n-th link by n-th link.
template <typename First>
absl::Status connect_global(Network& net, uint32_t groups, uint32_t ports, uint32_t h, First first,
                            const LinkConfig& link) {
  const uint32_t per_pair = ports / (groups - 1);
  for (uint32_t i = 0; i < groups; ++i) {
    for (uint32_t j = i + 1; j < groups; ++j) {
      for (uint32_t n = 0; n < per_pair; ++n) {
        // Group i counts group j as its (j - 1)-th other group; group j counts i as its i-th.
        const uint32_t ki = n * (groups - 1) + (j - 1);
        const uint32_t kj = n * (groups - 1) + i;
        SIM_TRY(net.connect(first(i) + ki / h, first(j) + kj / h, link));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status check_dragonfly(const DragonflyConfig& c) {
  constexpr const char* kWhat = "dragonfly";
  SIM_TRY(check_range(kWhat, "hosts per router p", c.p, 1, 256));
  SIM_TRY(check_range(kWhat, "routers per group a", c.a, 1, 256));
  SIM_TRY(check_range(kWhat, "global links per router h", c.h, 1, 256));
  SIM_TRY(check_groups(kWhat, c.groups(), uint64_t{c.a} * c.h, "a*h"));
  SIM_TRY(check_hosts(kWhat, dragonfly_size(c).hosts));
  return check_links(
      {{"host", &c.host_link}, {"local", &c.local_link}, {"global", &c.global_link}});
}

absl::Status check_dragonfly_plus(const DragonflyPlusConfig& c) {
  constexpr const char* kWhat = "dragonfly+";
  SIM_TRY(check_range(kWhat, "leaves per group", c.leaves, 1, 256));
  SIM_TRY(check_range(kWhat, "spines per group", c.spines, 1, 256));
  SIM_TRY(check_range(kWhat, "hosts per leaf", c.hosts_per_leaf, 1, 256));
  SIM_TRY(check_range(kWhat, "global links per spine h", c.h, 1, 256));
  SIM_TRY(check_groups(kWhat, c.groups(), uint64_t{c.spines} * c.h, "spines*h"));
  SIM_TRY(check_hosts(kWhat, dragonfly_plus_size(c).hosts));
  return check_links(
      {{"host", &c.host_link}, {"local", &c.local_link}, {"global", &c.global_link}});
}

TopologySize dragonfly_size(const DragonflyConfig& c) noexcept {
  const uint64_t g = c.groups(), a = c.a;
  TopologySize s;
  s.hosts = g * a * c.p;
  s.switches = g * a;
  s.fabric_links = g * a * (a - 1) / 2 + g * a * c.h / 2;
  s.links = s.hosts + s.fabric_links;
  return s;
}

TopologySize dragonfly_plus_size(const DragonflyPlusConfig& c) noexcept {
  const uint64_t g = c.groups();
  TopologySize s;
  s.hosts = g * c.leaves * c.hosts_per_leaf;
  s.switches = g * (uint64_t{c.leaves} + c.spines);
  s.fabric_links = g * c.leaves * c.spines + g * c.spines * c.h / 2;
  s.links = s.hosts + s.fabric_links;
  return s;
}

absl::Status build_dragonfly(Network& net, const DragonflyConfig& c, TopologyLayout* layout) {
  SIM_TRY(check_dragonfly(c));
  const uint32_t g = c.groups(), routers = g * c.a;
  std::vector<uint32_t> hosts, sw;
  for (uint32_t i = 0; i < routers * c.p; ++i) hosts.push_back(net.add_host(absl::StrCat("h", i)));
  for (uint32_t i = 0; i < routers; ++i) {
    sw.push_back(net.add_switch(absl::StrCat("g", i / c.a, "r", i % c.a)));
  }
  for (uint32_t i = 0; i < hosts.size(); ++i)
    SIM_TRY(net.connect(hosts[i], sw[i / c.p], c.host_link));
  for (uint32_t grp = 0; grp < g; ++grp) {
    for (uint32_t r = 0; r < c.a; ++r) {
      for (uint32_t q = r + 1; q < c.a; ++q) {
        SIM_TRY(net.connect(sw[grp * c.a + r], sw[grp * c.a + q], c.local_link));
      }
    }
  }
  SIM_TRY(connect_global(
      net, g, c.a * c.h, c.h, [&](uint32_t grp) { return sw[grp * c.a]; }, c.global_link));
  if (layout != nullptr) {
    *layout = TopologyLayout{};
    for (uint32_t i = 0; i < routers; ++i) layout->group.push_back(i / c.a);
    layout->groups = g;
  }
  return net.finalize();
}

absl::Status build_dragonfly_plus(Network& net, const DragonflyPlusConfig& c,
                                  TopologyLayout* layout) {
  SIM_TRY(check_dragonfly_plus(c));
  const uint32_t g = c.groups(), per_group = c.leaves + c.spines;
  std::vector<uint32_t> hosts, sw;
  for (uint32_t i = 0; i < g * c.leaves * c.hosts_per_leaf; ++i) {
    hosts.push_back(net.add_host(absl::StrCat("h", i)));
  }
  for (uint32_t grp = 0; grp < g; ++grp) {
    for (uint32_t l = 0; l < c.leaves; ++l)
      sw.push_back(net.add_switch(absl::StrCat("g", grp, "leaf", l)));
    for (uint32_t s = 0; s < c.spines; ++s)
      sw.push_back(net.add_switch(absl::StrCat("g", grp, "spine", s)));
  }
  for (uint32_t i = 0; i < hosts.size(); ++i) {
    const uint32_t leaf = i / c.hosts_per_leaf;  // numbered across groups
    SIM_TRY(net.connect(hosts[i], sw[leaf / c.leaves * per_group + leaf % c.leaves], c.host_link));
  }
  for (uint32_t grp = 0; grp < g; ++grp) {
    for (uint32_t l = 0; l < c.leaves; ++l) {
      for (uint32_t s = 0; s < c.spines; ++s) {
        SIM_TRY(
            net.connect(sw[grp * per_group + l], sw[grp * per_group + c.leaves + s], c.local_link));
      }
    }
  }
  SIM_TRY(connect_global(
      net, g, c.spines * c.h, c.h, [&](uint32_t grp) { return sw[grp * per_group + c.leaves]; },
      c.global_link));
  if (layout != nullptr) {
    *layout = TopologyLayout{};
    for (uint32_t i = 0; i < g * per_group; ++i) layout->group.push_back(i / per_group);
    layout->groups = g;
  }
  return net.finalize();
}

}  // namespace uet::sim
