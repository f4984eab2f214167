// Torus, mesh and hypercube (sim/topology.h): their checks, sizes and builders.
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/topology.h"
#include "sim/topology_internal.h"

namespace uet::sim {

using topology_internal::check_hosts;
using topology_internal::check_links;
using topology_internal::check_range;

namespace {

uint64_t torus_switches(const TorusConfig& c) noexcept {
  uint64_t n = 1;
  for (uint32_t k : c.dims) n *= k;
  return n;
}

// Links along dimension d: k - 1 in a line, k around a ring of more than 2 (a ring of 2 is
// one link).
uint64_t links_along(uint32_t k, bool wraparound) noexcept {
  return wraparound && k > 2 ? k : k - 1;
}

// The layout's record of the link just connected between a (+1 side) and b (-1 side).
void record_link(TopologyLayout* layout, const Network& net, uint8_t dim) {
  if (layout == nullptr) return;
  layout->port_dim.resize(net.num_ports(), TopologyLayout::kNoDim);
  layout->port_dir.resize(net.num_ports(), 0);
  const size_t p = net.num_ports() - 2;
  layout->port_dim[p] = layout->port_dim[p + 1] = dim;
  layout->port_dir[p] = 1;
  layout->port_dir[p + 1] = -1;
}

// Hosts first (host x on switch x / per_switch), then `switches` switches named by `name`.
template <typename Name>
absl::Status add_nodes(Network& net, uint64_t switches, uint32_t per_switch, const LinkConfig& host,
                       Name name, std::vector<uint32_t>& sw) {
  std::vector<uint32_t> hosts;
  for (uint64_t i = 0; i < switches * per_switch; ++i)
    hosts.push_back(net.add_host(absl::StrCat("h", i)));
  for (uint64_t s = 0; s < switches; ++s) sw.push_back(net.add_switch(name(s)));
  for (uint64_t i = 0; i < hosts.size(); ++i)
    SIM_TRY(net.connect(hosts[i], sw[i / per_switch], host));
  return absl::OkStatus();
}

}  // namespace

absl::Status check_torus(const TorusConfig& c) {
  const char* what = c.wraparound ? "torus" : "mesh";
  SIM_TRY(check_range(what, "dimensions", c.dims.size(), 1, 3));
  for (size_t d = 0; d < c.dims.size(); ++d) {
    const std::string field = absl::StrCat("dimension ", d, " size");
    SIM_TRY(check_range(what, field.c_str(), c.dims[d], 2, 256));
  }
  SIM_TRY(check_range(what, "hosts per switch", c.hosts_per_switch, 1, 256));
  SIM_TRY(check_hosts(what, torus_size(c).hosts));
  return check_links({{"host", &c.host_link}, {"fabric", &c.fabric_link}});
}

absl::Status check_hypercube(const HypercubeConfig& c) {
  SIM_TRY(check_range("hypercube", "dimension", c.dim, 1, 16));
  SIM_TRY(check_range("hypercube", "hosts per switch", c.hosts_per_switch, 1, 256));
  SIM_TRY(check_hosts("hypercube", hypercube_size(c).hosts));
  return check_links({{"host", &c.host_link}, {"fabric", &c.fabric_link}});
}

TopologySize torus_size(const TorusConfig& c) noexcept {
  TopologySize s;
  s.switches = torus_switches(c);
  s.hosts = s.switches * c.hosts_per_switch;
  for (uint32_t k : c.dims) {
    if (k >= 1) s.fabric_links += s.switches / k * links_along(k, c.wraparound);
  }
  s.links = s.hosts + s.fabric_links;
  return s;
}

TopologySize hypercube_size(const HypercubeConfig& c) noexcept {
  TopologySize s;
  s.switches = uint64_t{1} << c.dim;
  s.hosts = s.switches * c.hosts_per_switch;
  s.fabric_links = s.switches * c.dim / 2;
  s.links = s.hosts + s.fabric_links;
  return s;
}

absl::Status build_torus(Network& net, const TorusConfig& c, TopologyLayout* layout) {
  SIM_TRY(check_torus(c));
  const uint64_t n = torus_switches(c);
  const size_t dims = c.dims.size();
  // Switch s's coordinates: x0 fastest.
  auto coord = [&](uint64_t s, size_t d) {
    for (size_t i = 0; i < d; ++i) s /= c.dims[i];
    return static_cast<uint32_t>(s % c.dims[d]);
  };
  std::vector<uint32_t> sw;
  SIM_TRY(add_nodes(
      net, n, c.hosts_per_switch, c.host_link,
      [&](uint64_t s) {
        std::vector<uint32_t> x;
        for (size_t d = 0; d < dims; ++d) x.push_back(coord(s, d));
        return absl::StrCat("sw", absl::StrJoin(x, "_"));
      },
      sw));
  if (layout != nullptr) *layout = TopologyLayout{};
  for (uint64_t s = 0; s < n; ++s) {
    uint64_t stride = 1;
    for (size_t d = 0; d < dims; ++d) {
      const uint32_t k = c.dims[d], x = coord(s, d);
      if (x + 1 < k) {
        SIM_TRY(net.connect(sw[s], sw[s + stride], c.fabric_link));
        record_link(layout, net, static_cast<uint8_t>(d));
      } else if (c.wraparound && k > 2) {
        SIM_TRY(net.connect(sw[s], sw[s - (k - 1) * stride], c.fabric_link));
        record_link(layout, net, static_cast<uint8_t>(d));
      }
      stride *= k;
    }
  }
  if (layout != nullptr) {
    layout->port_dim.resize(net.num_ports(), TopologyLayout::kNoDim);
    layout->port_dir.resize(net.num_ports(), 0);
    for (uint64_t s = 0; s < n; ++s) layout->group.push_back(coord(s, dims - 1));
    layout->groups = c.dims.back();
  }
  return net.finalize();
}

absl::Status build_hypercube(Network& net, const HypercubeConfig& c, TopologyLayout* layout) {
  SIM_TRY(check_hypercube(c));
  const uint32_t n = 1u << c.dim;
  std::vector<uint32_t> sw;
  SIM_TRY(add_nodes(
      net, n, c.hosts_per_switch, c.host_link, [](uint64_t s) { return absl::StrCat("sw", s); },
      sw));
  if (layout != nullptr) *layout = TopologyLayout{};
  for (uint32_t s = 0; s < n; ++s) {
    for (uint32_t d = 0; d < c.dim; ++d) {
      if ((s >> d & 1) != 0) continue;
      SIM_TRY(net.connect(sw[s], sw[s | 1u << d], c.fabric_link));
      record_link(layout, net, static_cast<uint8_t>(d));
    }
  }
  if (layout != nullptr) {
    layout->port_dim.resize(net.num_ports(), TopologyLayout::kNoDim);
    layout->port_dir.resize(net.num_ports(), 0);
  }
  return net.finalize();
}

}  // namespace uet::sim
