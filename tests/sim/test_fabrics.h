// The fabrics several simulator tests build alike: a PFC ring of switches (the lossless
// switch and PFC watchdog tests), small dragonflies (the lossless-class and group-minimal
// routing tests), and what those tests read off them.
#ifndef UET_TESTS_SIM_TEST_FABRICS_H_
#define UET_TESTS_SIM_TEST_FABRICS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/network.h"
#include "sim/topology.h"
#include "sim/udp_app.h"

namespace uet::sim::test {

// A 100 Gb/s link of `delay`.
inline LinkConfig link100(Time delay = 500 * kNanosecond) {
  LinkConfig l;
  l.gbps = 100;
  l.delay = delay;
  return l;
}

// PFC on with watchdog `wd`; ECN and trimming off, so that pauses alone hold frames back.
inline NetworkConfig pfc_config(PfcWatchdogConfig wd) {
  NetworkConfig nc;
  nc.switches.pfc.enabled = true;
  nc.switches.pfc.watchdog = wd;
  nc.switches.ecn.enabled = false;
  nc.switches.trimming = false;
  return nc;
}

// A watchdog that detects in 100 us, restores in 100 us and then acts as `action`.
inline PfcWatchdogConfig watchdog(PfcWatchdogAction action) {
  PfcWatchdogConfig wd;
  wd.enabled = true;
  wd.detection_time = 100 * kMicrosecond;
  wd.restoration_time = 100 * kMicrosecond;
  wd.action = action;
  return wd;
}

// Builds into `net` (finalized) a ring of `switches` switches numbered round it (the link from
// the last to switch 0 closes it), `hosts_per` hosts each (host h on switch h / hosts_per), on
// 100 Gb/s links but host `slow`'s at 25 Gb/s. Returns the switches' nodes in ring order.
inline std::vector<uint32_t> build_ring(Network& net, uint32_t switches, uint32_t hosts_per,
                                        uint32_t slow = kNone) {
  const uint32_t hosts = switches * hosts_per;
  for (uint32_t h = 0; h < hosts; ++h) net.add_host("h");
  std::vector<uint32_t> sw;
  for (uint32_t s = 0; s < switches; ++s) sw.push_back(net.add_switch("s"));
  for (uint32_t h = 0; h < hosts; ++h) {
    LinkConfig l = link100();
    if (h == slow) l.gbps = 25;
    EXPECT_TRUE(net.connect(net.host_node(h), sw[h / hosts_per], l).ok());
  }
  for (uint32_t s = 0; s < switches; ++s) {
    EXPECT_TRUE(net.connect(sw[s], sw[(s + 1) % switches], link100()).ok());
  }
  EXPECT_TRUE(net.finalize().ok());
  return sw;
}

// Node `a`'s port to node `b`, kNone when they are not linked.
inline uint32_t port_between(const Network& net, uint32_t a, uint32_t b) {
  for (uint32_t p : net.node(a).ports) {
    if (net.port_node(Network::peer_of(p)) == b) return p;
  }
  return kNone;
}

// The bytes the flows' sinks received.
inline uint64_t received(const std::vector<FlowRecord>& rec) {
  uint64_t r = 0;
  for (const FlowRecord& f : rec) r += f.received;
  return r;
}

// A fabric built by a topology builder, with its layout (groups, port dimensions).
struct Built {
  std::unique_ptr<Network> net = std::make_unique<Network>(NetworkConfig{});
  TopologyLayout layout;
};

// A dragonfly of `p` hosts a switch, `a` switches a group and `h` global links a switch (Kim
// et al. ISCA 2008), its groups set; routed as `rc` says when given.
inline Built dragonfly(uint32_t p, uint32_t a, uint32_t h, const RoutingConfig* rc = nullptr) {
  Built f;
  DragonflyConfig c;
  c.p = p;
  c.a = a;
  c.h = h;
  EXPECT_TRUE(build_dragonfly(*f.net, c, &f.layout).ok());
  EXPECT_TRUE(f.net->set_switch_groups(f.layout.group).ok());
  if (rc != nullptr) {
    EXPECT_TRUE(f.net->set_routing(*rc).ok());
  }
  return f;
}

// The smallest dragonfly+ with more than one route between groups: 2 leaves and 2 spines a
// group, one host a leaf, 2 global links a spine; routed as `rc` says when given.
inline Built dragonfly_plus(const RoutingConfig* rc = nullptr) {
  Built f;
  DragonflyPlusConfig c;
  c.leaves = 2;
  c.spines = 2;
  c.hosts_per_leaf = 1;
  c.h = 2;
  EXPECT_TRUE(build_dragonfly_plus(*f.net, c, &f.layout).ok());
  EXPECT_TRUE(f.net->set_switch_groups(f.layout.group).ok());
  if (rc != nullptr) {
    EXPECT_TRUE(f.net->set_routing(*rc).ok());
  }
  return f;
}

}  // namespace uet::sim::test

#endif  // UET_TESTS_SIM_TEST_FABRICS_H_
