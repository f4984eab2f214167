// The fabric as routing sees it: switches, the up links between them in port order, each
// host's ToR and the ToR's port to it. Network builds it from its ports at finalize() and at
// every link change (Network::compute_routes); routing reads nothing else of the Network, so
// a routing family is written and tested against this view alone.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace uet::sim {

inline constexpr uint32_t kNone = UINT32_MAX;  // no port, switch, host or group

struct RoutingGraph {
  struct Link {
    uint32_t port;  // the switch's port
    uint32_t peer;  // the switch it reaches
  };
  struct HostLink {
    uint32_t tor;       // the switch the host's NIC link reaches; kNone: not a switch
    uint32_t tor_port;  // that switch's port to the host; kNone: the link is down
  };
  uint32_t switches = 0;
  // Switch s's up links to other switches are links[first[s] .. first[s + 1]), in port order
  // (an ECMP group keeps that order). first has switches + 1 entries.
  std::vector<uint32_t> first;
  std::vector<Link> links;
  std::vector<HostLink> hosts;  // by host
  std::vector<uint64_t> seeds;  // by switch: its ECMP hash seed
  // By port, the class a port moves along (a torus dimension), for dimension-order routing;
  // empty: no classes.
  std::span<const uint8_t> port_class;
  // By switch, its group (Valiant's intermediate unit: a dragonfly group, or one switch);
  // empty: every switch its own group.
  std::span<const uint32_t> group_of_switch;
  uint64_t seed = 0;  // the fabric's seed, for choices that are not a switch's own (intermediates)
};

}  // namespace uet::sim
