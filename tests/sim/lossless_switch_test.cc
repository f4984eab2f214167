// The switches' side of the lossless classes (sim/routing/lossless_classes.h): a frame's class
// carried in its metadata, raised where the rule says, each class its own priority with its
// own ingress accounting, PFC pause and egress queue. On rings with a dateline: the ring that
// deadlocks with one lossless class completes with two; a pause of one class leaves the other
// flowing.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/network.h"
#include "sim/topology.h"
#include "sim/udp_app.h"
#include "test_fabrics.h"
#include "transport/wire/checksum.h"

namespace uet::sim {
namespace {

// A ring of `switches` switches, numbered round it (the link from the last to switch 0 is the
// wraparound, the dateline's), `hosts_per` hosts each, PFC on, minimal dimension-order routes
// along its one dimension; with `tagger` the dateline's two classes. Host `slow`'s link runs
// at 25 Gb/s.
struct Ring {
  Ring(uint32_t switches, uint32_t hosts_per, bool tagger, PfcWatchdogConfig wd = {},
       uint32_t slow = kNone)
      : net(test::pfc_config(wd)),
        hosts(switches * hosts_per),
        sw(test::build_ring(net, switches, hosts_per, slow)) {
    EXPECT_TRUE(net.set_port_classes(std::vector<uint8_t>(net.num_ports(), 0)).ok());
    RoutingConfig rc;
    rc.dimension_order = true;
    rc.deadlock_free = tagger ? DeadlockFree::kTagger : DeadlockFree::kOff;
    EXPECT_TRUE(net.set_routing(rc).ok());
    for (uint32_t h = 0; h < hosts; ++h) apps.push_back(std::make_unique<UdpApp>(h, &rec));
  }
  void flow(uint32_t src, uint32_t dst, uint64_t bytes) {
    apps[src]->add_flow(UdpFlow{src, dst, bytes, 0, static_cast<uint16_t>(0xC000 + src)});
  }
  void start() {
    for (uint32_t h = 0; h < hosts; ++h) net.attach(h, apps[h].get());
  }
  // Switch a's port to switch b.
  uint32_t port_to(uint32_t a, uint32_t b) const { return test::port_between(net, sw[a], sw[b]); }
  uint64_t received() const { return test::received(rec); }

  Network net;
  uint32_t hosts;
  std::vector<uint32_t> sw;
  std::vector<FlowRecord> rec;
  std::vector<std::unique_ptr<UdpApp>> apps;
};

PfcWatchdogConfig report() { return test::watchdog(PfcWatchdogAction::kReport); }

// Runs `net` in steps of `step` until nothing is pending (at most `limit`), then expects a
// lossless run that PFC kept moving: no cycle reported, no frame lost, some link paused,
// frames queued at some point in `priority` (the class that breaks the cycle), and nothing
// left to run.
void run_lossless_to_the_end(Network& net, Time limit, Time step, int priority) {
  bool class_used = false;
  for (Time t = 0; t < limit && net.events_pending() > 0; t += step) {
    net.run_until(t);
    for (uint32_t p = 0; p < net.num_ports(); ++p) class_used |= net.queue_bytes(p, priority) > 0;
  }
  EXPECT_TRUE(net.pfc_deadlocks().empty());
  uint64_t pauses = 0;
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    const PortStats s = net.port_stats(p);
    EXPECT_EQ(s.drops + s.lossless_drops, 0u) << p;
    pauses += s.pauses_sent;
  }
  EXPECT_GT(pauses, 0u);
  EXPECT_TRUE(class_used);
  EXPECT_EQ(net.events_pending(), 0u);
}

// Five switches, two hosts each, every host sending to the host two switches on clockwise
// at line rate: each clockwise link carries two flows, and every flow waits at the middle
// switch for the next clockwise link (pfc_watchdog_test's deadlocking ring).
void ring_flows(Ring& r, uint64_t bytes) {
  for (uint32_t h = 0; h < r.hosts; ++h) r.flow(h, (h + 4) % r.hosts, bytes);
  r.start();
}

// Expect: with one lossless class the ring deadlocks (the watchdog reports the cycle, most
// bytes never arrive); with the dateline's two it completes: every byte delivered, none lost,
// PFC paused links (so the classes, not an idle fabric, kept it moving), no cycle reported,
// frames queued in class 1 (priority 2) on the way, and nothing left to run.
TEST(LosslessSwitch_Ring, TheDatelineBreaksTheDeadlock) {
  constexpr uint64_t kBytes = 4096 * 2000;
  Ring off(5, 2, false, report());
  ring_flows(off, kBytes);
  off.net.run_until(kSecond);
  ASSERT_FALSE(off.net.pfc_deadlocks().empty());
  EXPECT_LT(off.received(), kBytes * off.hosts / 2);

  Ring on(5, 2, true, report());
  ASSERT_EQ(on.net.routing().lossless().classes(), 2u);
  ring_flows(on, kBytes);
  run_lossless_to_the_end(on.net, kSecond, 10 * kMicrosecond, 2);
  EXPECT_EQ(on.received(), kBytes * on.hosts);
}

// Eight switches, two hosts each. Flow A, host 14 (switch 7) to host 2 (switch 1), crosses the
// wraparound 7 -> 0 and so leaves switch 0 for switch 1 in class 1 (priority 2); host 2's link
// runs at a quarter of the rate, so switch 1's ingress from switch 0 pauses priority 2. Flow B,
// host 0 (switch 0) to host 4 (switch 2), shares the link 0 -> 1 in class 0 and is never
// congested past it.
// Expect: while switch 0's port to switch 1 has priority 2 paused, it keeps sending (flow B's
// class 0 frames); priority 0 there is never paused; every byte of every flow arrives.
TEST(LosslessSwitch_Ring, PauseOnOneClassDoesNotStopTheOther) {
  constexpr uint64_t kBytes = 4096 * 1000;
  Ring r(8, 2, true, {}, 2);
  r.flow(14, 2, kBytes);
  r.flow(0, 4, kBytes);
  r.start();
  const uint32_t p01 = r.port_to(0, 1);
  ASSERT_NE(p01, kNone);
  uint32_t paused_steps = 0, sent_while_paused = 0;
  bool class0_paused = false;
  uint64_t tx = r.net.port(p01).stats.tx_frames;
  for (Time t = 0; t < 2 * kMillisecond; t += 500 * kNanosecond) {
    const bool before = r.net.queue_paused(p01, 2);
    r.net.run_until(t);
    const uint64_t now_tx = r.net.port(p01).stats.tx_frames;
    class0_paused |= r.net.queue_paused(p01, 0);
    if (before && r.net.queue_paused(p01, 2)) {
      ++paused_steps;
      sent_while_paused += static_cast<uint32_t>(now_tx - tx);
    }
    tx = now_tx;
  }
  EXPECT_GT(paused_steps, 10u);
  // 500 ns at 100 Gb/s is about 1.5 frames of 4 KiB: most steps send one.
  EXPECT_GT(sent_while_paused, paused_steps / 2);
  EXPECT_FALSE(class0_paused);
  r.net.run_until(kSecond);
  EXPECT_EQ(r.received(), 2 * kBytes);
}

// The IPv4 frames of a pcap (Ethernet, no VLAN): their headers' bytes, each from the IP header.
std::vector<std::string> pcap_ipv4_headers(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  auto u32 = [&](size_t at) {  // the writer's (little-endian) byte order
    return uint32_t{uint8_t(b[at])} | uint32_t{uint8_t(b[at + 1])} << 8 |
           uint32_t{uint8_t(b[at + 2])} << 16 | uint32_t{uint8_t(b[at + 3])} << 24;
  };
  for (size_t at = 24; at + 16 <= b.size();) {
    const uint32_t len = u32(at + 8);
    if (len >= 34 && uint8_t(b[at + 16 + 12]) == 0x08 && uint8_t(b[at + 16 + 13]) == 0x00) {
      out.push_back(b.substr(at + 16 + 14, 20));
    }
    at += 16 + len;
  }
  return out;
}

// PauseOnOneClassDoesNotStopTheOther's two flows, the hosts' links off the ring's dimension
// (as the torus builder numbers them, so a frame leaves for a host in class 0), switch 0's
// link to switch 1 tapped and switch 1's to host 2: flow A (host 14, 10.0.0.15) crossed the
// wraparound and leaves switch 0 in class 1, flow B (host 0, 10.0.0.1) in class 0; switch 1
// moves A back to class 0 on its way to host 2.
// Expect: on the ring link every frame of A carries class 1's DSCP (27), every frame of B the
// data class's (26); on host 2's link every frame of A carries again the DSCP its sender
// marked (UdpApp's, 26); ECN as sent, and each IPv4 header checksum is right.
TEST(LosslessSwitch_Ring, ASwitchThatChangesTheClassRewritesTheDscp) {
  const std::string ring_path = ::testing::TempDir() + "/lossless_dscp.pcap";
  const std::string host_path = ::testing::TempDir() + "/lossless_dscp_host.pcap";
  {
    Ring r(8, 2, true);
    std::vector<uint8_t> dims(r.net.num_ports(), 0);
    for (uint32_t h = 0; h < r.hosts; ++h) {
      for (uint32_t p : r.net.node(r.net.host_node(h)).ports) {
        dims[p] = dims[Network::peer_of(p)] = LosslessClasses::kNoDim;
      }
    }
    ASSERT_TRUE(r.net.set_port_classes(dims).ok());
    r.flow(14, 2, 4096 * 20);
    r.flow(0, 4, 4096 * 20);
    const uint32_t p01 = r.port_to(0, 1);
    const uint32_t p1h2 = test::port_between(r.net, r.sw[1], r.net.host_node(2));
    ASSERT_NE(p01, kNone);
    ASSERT_NE(p1h2, kNone);
    ASSERT_TRUE(r.net.tap(p01, ring_path).ok());
    ASSERT_TRUE(r.net.tap(p1h2, host_path).ok());
    r.start();
    r.net.run_until(kSecond);
    EXPECT_EQ(r.received(), 2 * 4096 * 20u);
  }
  // Frames by source host (the last byte of the source address), and their DSCPs.
  auto dscps = [](const std::string& path) {
    std::map<uint8_t, std::vector<uint8_t>> by_source;
    for (const std::string& h : pcap_ipv4_headers(path)) {
      const auto* ip = reinterpret_cast<const uint8_t*>(h.data());
      EXPECT_EQ(ip[1] & 3, 2) << "ECN";  // ECT(0), as the UDP app sends it (no marking here)
      EXPECT_TRUE(wire::ipv4_header_checksum_ok(ip, 20));
      by_source[ip[15]].push_back(ip[1] >> 2);
    }
    return by_source;
  };
  auto all_are = [](const std::vector<uint8_t>& v, uint8_t dscp) {
    return std::all_of(v.begin(), v.end(), [&](uint8_t d) { return d == dscp; });
  };
  auto ring = dscps(ring_path);
  EXPECT_GT(ring[15].size(), 10u);
  EXPECT_GT(ring[1].size(), 10u);
  EXPECT_TRUE(all_are(ring[15], ROCEV2_DSCP_LOSSLESS_1));
  EXPECT_TRUE(all_are(ring[1], kDscpData));
  auto host = dscps(host_path);
  EXPECT_GT(host[15].size(), 10u);
  EXPECT_TRUE(all_are(host[15], kDscpData));  // UdpApp marks its frames kDscpData
}

// uet-load's 72-host dragonfly: 9 groups of 4 switches, two hosts and two global links a
// switch, PFC on, the watchdog reporting, group-minimal routes in `mode`; every host sends
// `bytes` at line rate to the host of its place in the next group (worst case: group i to i + 1),
// with a source port per packet, so Valiant and UGAL-L spread its packets over intermediate
// groups. With one lossless class a detour's global link into its intermediate group waits on
// a local link there that other frames take to their first global link, and so on round the
// groups.
struct WorstCaseFly {
  static constexpr uint32_t kP = 2;
  static constexpr uint32_t kA = 4;
  // uet-load's switches: 64 KiB a port, XOFF at half of it.
  static NetworkConfig config() {
    NetworkConfig nc = test::pfc_config(report());
    nc.switches.buffer_bytes = 64 * 1024;
    nc.switches.pfc.xoff_bytes = 32 * 1024;
    nc.switches.pfc.xon_bytes = 24 * 1024;
    return nc;
  }
  WorstCaseFly(RoutingMode mode, bool tagger, uint64_t bytes) : net(config()) {
    DragonflyConfig c;
    c.p = kP;
    c.a = kA;
    c.h = 2;
    c.host_link = c.local_link = test::link100(100 * kNanosecond);
    c.global_link = test::link100(1000 * kNanosecond);
    TopologyLayout layout;
    EXPECT_TRUE(build_dragonfly(net, c, &layout).ok());
    EXPECT_TRUE(net.set_switch_groups(layout.group).ok());
    RoutingConfig rc;
    rc.mode = mode;
    rc.group_minimal = true;
    rc.deadlock_free = tagger ? DeadlockFree::kTagger : DeadlockFree::kOff;
    EXPECT_TRUE(net.set_routing(rc).ok());
    const uint32_t hosts = static_cast<uint32_t>(net.num_hosts());
    for (uint32_t h = 0; h < hosts; ++h) apps.push_back(std::make_unique<UdpApp>(h, &rec, 1024));
    for (uint32_t h = 0; h < hosts; ++h) {
      apps[h]->add_flow(UdpFlow{h, (h + kP * kA) % hosts, bytes, 0,
                                static_cast<uint16_t>(0xC000 + h),
                                /*spray=*/true});
      net.attach(h, apps[h].get());
    }
  }
  uint64_t received() const { return test::received(rec); }

  Network net;
  std::vector<FlowRecord> rec;
  std::vector<std::unique_ptr<UdpApp>> apps;
};

// Expect, for Valiant and UGAL-L: with one lossless class the watchdog reports a cycle of
// paused queues and most bytes never arrive; with Tagger's three (a class more after each
// global link, as Kim et al.'s virtual channels) every byte arrives, none lost, though PFC
// paused links, with frames queued in the last class (past a detour's second global link),
// no cycle reported and nothing left to run.
TEST(LosslessSwitch_Dragonfly, DetoursDeadlockWithOneClassNotWithTagger) {
  constexpr uint64_t kBytes = 1024 * 1000;
  for (const RoutingMode mode : {RoutingMode::kValiant, RoutingMode::kUgal}) {
    SCOPED_TRACE(testing::Message() << "mode " << static_cast<int>(mode));
    WorstCaseFly off(mode, false, kBytes);
    off.net.run_until(10 * kMillisecond);
    ASSERT_FALSE(off.net.pfc_deadlocks().empty());
    EXPECT_GE(off.net.pfc_deadlocks().front().cycle.size(), 2u);
    EXPECT_LT(off.received(), kBytes * off.rec.size() / 2);

    WorstCaseFly on(mode, true, kBytes);
    ASSERT_EQ(on.net.routing().lossless().classes(), 3u);
    run_lossless_to_the_end(on.net, 10 * kMillisecond, 5 * kMicrosecond, lossless_priority(2));
    EXPECT_EQ(on.received(), kBytes * on.rec.size());
  }
}

}  // namespace
}  // namespace uet::sim
