// A frame's way through the routing, asked switch by switch as forwarding asks it: the routing
// tests' shared reference walker.
#ifndef UET_TESTS_SIM_ROUTE_WALK_H_
#define UET_TESTS_SIM_ROUTE_WALK_H_

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "sim/network.h"

namespace uet::sim::test {

// The switch a host hangs off, kNone when its link reaches another host.
inline uint32_t tor_of(const Network& net, uint32_t host) {
  const Port& peer = net.port(net.port(net.host(host).port).peer);
  return peer.at_host ? kNone : peer.owner;
}

struct Walk {
  bool reached = false;
  bool loop = false;               // a (switch, routing state) came twice
  std::vector<uint32_t> switches;  // in order, from the source's ToR
  std::vector<uint32_t> ports;     // the switch-to-switch ports taken
};

inline Walk walk(const Network& net, uint32_t src, uint32_t dst, uint64_t hash) {
  Walk w;
  uint32_t sw = tor_of(net, src);
  uint8_t state = 0;
  std::set<std::pair<uint32_t, uint8_t>> seen;
  while (sw != kNone) {
    if (!seen.insert({sw, state}).second) {
      w.loop = true;
      return w;
    }
    w.switches.push_back(sw);
    const uint32_t out = net.route_port(sw, dst, hash, state);
    if (out == kNone) return w;
    const Port& peer = net.port(net.port(out).peer);
    if (peer.at_host) {
      w.reached = peer.owner == dst;
      return w;
    }
    w.ports.push_back(out);
    sw = peer.owner;
  }
  return w;
}

}  // namespace uet::sim::test

#endif  // UET_TESTS_SIM_ROUTE_WALK_H_
