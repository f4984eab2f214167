// The fabric simulator's core: exact timing, ECMP, ECN, trimming, PFC, failures, determinism.
#include "sim/network.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "sim/topology.h"
#include "sim/udp_app.h"
#include "transport/wire/builder.h"
#include "transport/wire/decode.h"

namespace uet::sim {
namespace {

// Two hosts through one switch; host 0 sends one packet of `payload` bytes to host 1.
TEST(Network_Timing, SerializationAndPropagationExactToThePicosecond) {
  NetworkConfig nc;
  Network net(nc);
  const uint32_t h0 = net.add_host("h0"), h1 = net.add_host("h1"), s = net.add_switch("s");
  LinkConfig l;
  l.gbps = 100;
  l.delay = 1234567;  // ps
  ASSERT_TRUE(net.connect(h0, s, l).ok());
  ASSERT_TRUE(net.connect(h1, s, l).ok());
  ASSERT_TRUE(net.finalize().ok());
  std::vector<FlowRecord> rec;
  UdpApp a0(0, &rec, 1000), a1(1, &rec, 1000);
  a0.add_flow(UdpFlow{0, 1, 1000, 0, 0xC001});
  net.attach(0, &a0);
  net.attach(1, &a1);
  net.run_until(kSecond);
  ASSERT_NE(rec[0].finish, kNever);
  // Frame: 14 + 20 + 8 + 16 + 1000 = 1058 bytes, + 24 (preamble, IFG, FCS) on the wire.
  // At 100 Gb/s one byte takes 80 ps; store-and-forward over two links.
  const Time per_hop = (1058 + 24) * 80 + 1234567;
  // Expect: the sink sees the last byte exactly two hops after the start.
  EXPECT_EQ(rec[0].finish, 2 * per_hop);
  EXPECT_EQ(rec[0].received, 1000u);
}

// More hosts than 16 bits number: 70,000 on a leaf-spine. Flows to host 65,535 (the old
// "no host" mark), 65,536 and the last host, each from another leaf.
// Expect: every flow arrives whole at its own host.
TEST(Network_Scale, RoutesToHostsBeyondSixteenBits) {
  NetworkConfig nc;
  nc.frame_capacity = 256;
  Network net(nc);
  LeafSpineConfig c;
  c.leaves = 280;
  c.spines = 2;
  c.hosts_per_leaf = 250;
  ASSERT_TRUE(build_leaf_spine(net, c).ok());
  ASSERT_EQ(net.num_hosts(), 70000u);
  std::vector<FlowRecord> rec;
  const std::vector<std::pair<uint32_t, uint32_t>> pairs = {{0, 65535}, {1, 65536}, {300, 69999}};
  std::vector<std::unique_ptr<UdpApp>> apps;
  for (uint32_t i = 0; i < pairs.size(); ++i) {
    const auto [src, dst] = pairs[i];
    apps.push_back(std::make_unique<UdpApp>(src, &rec, 1000));
    apps.back()->add_flow(UdpFlow{i, dst, 5000, 0, static_cast<uint16_t>(0xC000 + i)});
    net.attach(src, apps.back().get());
    apps.push_back(std::make_unique<UdpApp>(dst, &rec, 1000));
    net.attach(dst, apps.back().get());
  }
  net.run_until(kMillisecond);
  for (uint32_t i = 0; i < pairs.size(); ++i) {
    EXPECT_EQ(rec[i].received, 5000u) << pairs[i].second;
    EXPECT_NE(rec[i].finish, kNever) << pairs[i].second;
    EXPECT_EQ(apps[2 * i + 1]->rx_frames(), 5u) << pairs[i].second;
  }
}

// ------------------------------------------------------------------ helpers

// `leaves` leaves of `hosts_per_leaf` hosts and `spines` spines; links as the test sets them.
LeafSpineConfig leaf_spine(uint32_t leaves, uint32_t spines, uint32_t hosts_per_leaf) {
  LeafSpineConfig c;
  c.leaves = leaves;
  c.spines = spines;
  c.hosts_per_leaf = hosts_per_leaf;
  return c;
}

LinkConfig link(double gbps, Time delay = 500 * kNanosecond) {
  LinkConfig l;
  l.gbps = gbps;
  l.delay = delay;
  return l;
}

// A UET source: RUD requests with a standard SES WRITE header and a payload, back to back.
class UetSource : public Transport {
 public:
  UetSource(uint32_t host, uint32_t dst, uint32_t packets, uint32_t payload)
      : host_(host), dst_(dst), left_(packets), payload_(payload) {}
  void rx(std::span<Frame* const> frames, Time) override {
    for (Frame* f : frames) {
      wire::Decoded d;
      const auto err = wire::decode_frame(std::span<const uint8_t>(f->data, f->len), &d);
      if (err != wire::WireError::kOk) {
        ++bad;
        continue;
      }
      ++received;
      if (d.ipv4->dscp() == kDscpTrimmed) {
        ++trimmed;
        ++trimmed_from[d.ipv4->src()];
        trimmed_len = f->len;
        trimmed_payload = d.payload.size();
      }
      if (d.ecn == 3) ++ce;
    }
  }
  size_t tx(std::span<Frame* const> out, Time) override {
    if (left_ == 0) return 0;
    Frame& f = *out[0];
    wire::Encap e;
    e.src_ip4 = Network::host_ip4(host_);
    e.dst_ip4 = Network::host_ip4(dst_);
    e.dscp = kDscpData;
    e.ecn = 2;
    e.sport = static_cast<uint16_t>(0xC000 + left_);
    wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), e);
    auto* pds = b.add<wire::PdsRudRod>();
    pds->set_type(wire::PdsType::kRudReq);
    pds->set_next_hdr(wire::NextHeader::kReqStd);
    pds->set_psn(left_);
    auto* ses = b.add<wire::SesStandardRequest>();
    ses->set_opcode(wire::SesOpcode::kWrite);
    ses->set_som(true);
    b.add_bytes(payload_);
    size_t n = 0;
    if (b.finish(&n) != wire::WireError::kOk) return 0;
    f.len = static_cast<uint32_t>(n);
    f.priority = Priority::kData;
    --left_;
    return 1;
  }
  Time next_deadline() const override { return kNever; }
  void on_timer(Time) override {}

  uint64_t received = 0, trimmed = 0, bad = 0, ce = 0;
  std::map<uint32_t, uint64_t> trimmed_from;  // by source IPv4 address
  uint32_t trimmed_len = 0;
  size_t trimmed_payload = 0;

 private:
  uint32_t host_, dst_, left_, payload_;
};

// A 2:1 incast: hosts 0 and 1 each send 200 UET requests of 4000 bytes to host 2 through one
// switch (100 Gb/s links); `setup` may change the network before the run.
struct TwoToOne {
  uint64_t received = 0, ce = 0, bad = 0;
  PortStats down;  // the switch port towards host 2
};
TwoToOne two_to_one(const NetworkConfig& nc, const std::function<void(Network&)>& setup = {}) {
  Network net(nc);
  LeafSpineConfig c = leaf_spine(1, 1, 3);
  c.host_link = link(100);
  c.fabric_link = link(100);
  EXPECT_TRUE(build_leaf_spine(net, c).ok());
  UetSource s0(0, 2, 200, 4000), s1(1, 2, 200, 4000), sink(2, 0, 0, 0);
  net.attach(0, &s0);
  net.attach(1, &s1);
  net.attach(2, &sink);
  if (setup) setup(net);
  net.run_until(kSecond);
  return TwoToOne{sink.received, sink.ce, sink.bad,
                  net.port_stats(net.port(net.host(2).port).peer)};
}

// ------------------------------------------------------------------ ECMP

TEST(Network_Ecmp, SpreadsFlowsEvenlyAcrossUplinks) {
  Network net(NetworkConfig{});
  LeafSpineConfig c = leaf_spine(2, 4, 2);
  c.host_link = link(100);
  c.fabric_link = link(100);
  ASSERT_TRUE(build_leaf_spine(net, c).ok());
  std::map<uint32_t, int> count;
  Rng rng(7);
  constexpr int kFlows = 40000;
  for (int i = 0; i < kFlows; ++i) ++count[net.ecmp_port(0, /*dst=*/3, rng.next())];
  ASSERT_EQ(count.size(), 4u);  // every uplink, nothing else
  double chi2 = 0;
  for (auto [port, n] : count) {
    EXPECT_EQ(net.port(port).node, net.switch_node(0));
    chi2 += (n - kFlows / 4.0) * (n - kFlows / 4.0) / (kFlows / 4.0);
  }
  // Expect: uniform; chi-square with 3 degrees of freedom below the p = 0.001 critical value.
  EXPECT_LT(chi2, 16.27);
  // Expect: one flow always takes one path; a host on the same leaf is reached directly.
  for (uint64_t h = 0; h < 100; ++h) EXPECT_EQ(net.ecmp_port(0, 3, h), net.ecmp_port(0, 3, h));
  EXPECT_EQ(net.port(net.ecmp_port(0, 1, 42)).peer, net.host(1).port);
}

TEST(Network_Ecmp, SwitchesHashWithTheirOwnSeed) {
  Network net(NetworkConfig{});
  LeafSpineConfig c = leaf_spine(2, 4, 1);
  ASSERT_TRUE(build_leaf_spine(net, c).ok());
  // Leaf 0 and leaf 1 both pick among 4 spines; with independent seeds their choices for the
  // same hashes must not all coincide (that would polarise traffic in deeper fabrics).
  int same = 0;
  for (uint64_t h = 0; h < 1000; ++h) {
    const uint32_t a = net.port(net.ecmp_port(0, 1, h)).peer;
    const uint32_t b = net.port(net.ecmp_port(1, 0, h)).peer;
    same += net.port(a).node == net.port(b).node;
  }
  EXPECT_LT(same, 400);
}

// What ecmp_port() must return, computed the plain way: a breadth-first search from the
// destination host over the links that are up (hosts other than it do not forward); a
// switch's group is its up ports, in port order, whose peer is one hop closer; it picks
// the group's (mix64(hash, seed) >> 32) mod size-th port.
std::vector<std::vector<uint32_t>> reference_groups(const Network& net, uint32_t dst) {
  std::vector<uint32_t> dist(net.num_hosts() + net.num_switches(), kNone);
  const uint32_t from = net.host_node(dst);
  dist[from] = 0;
  std::vector<uint32_t> frontier{from};
  for (size_t i = 0; i < frontier.size(); ++i) {
    const uint32_t n = frontier[i];
    if (net.node(n).kind == NodeKind::kHost && n != from) continue;
    for (uint32_t p : net.node(n).ports) {
      const uint32_t m = net.port(net.port(p).peer).node;
      if (net.port(p).up && dist[m] == kNone) {
        dist[m] = dist[n] + 1;
        frontier.push_back(m);
      }
    }
  }
  std::vector<std::vector<uint32_t>> groups(net.num_switches());
  for (uint32_t s = 0; s < net.num_switches(); ++s) {
    const uint32_t d = dist[net.switch_node(s)];
    if (d == kNone) continue;
    for (uint32_t p : net.node(net.switch_node(s)).ports) {
      const uint32_t peer = dist[net.port(net.port(p).peer).node];
      if (net.port(p).up && peer != kNone && peer + 1 == d) groups[s].push_back(p);
    }
  }
  return groups;
}

// Every (switch, destination) pair of `net`, for `hashes` flow hashes: the number that differ.
int ecmp_mismatches(const Network& net, int hashes) {
  int wrong = 0;
  Rng rng(11);
  for (uint32_t dst = 0; dst < net.num_hosts(); ++dst) {
    const std::vector<std::vector<uint32_t>> groups = reference_groups(net, dst);
    for (uint32_t s = 0; s < net.num_switches(); ++s) {
      for (int i = 0; i < hashes; ++i) {
        const uint64_t h = i < 4 ? static_cast<uint64_t>(i) : rng.next();
        const std::vector<uint32_t>& g = groups[s];
        const uint32_t want = g.empty() ? kNone : g[(mix64(h, net.sw(s).seed) >> 32) % g.size()];
        wrong += net.ecmp_port(s, dst, h) != want;
      }
    }
  }
  return wrong;
}

// Takes the links through `ports` down and runs past the detection delay (ECMP refreshed).
void fail_links(Network& net, const std::vector<uint32_t>& ports) {
  for (uint32_t p : ports) {
    ASSERT_NE(p, kNone);
    net.set_link_up(p, false, net.now());
  }
  net.run_until(net.now() + SwitchConfig{}.failure_detection + 1);
}

// The first port of switch `s` whose peer is a switch (an uplink), or a host when `to_host`.
uint32_t port_of(const Network& net, uint32_t s, bool to_host, int skip = 0) {
  for (uint32_t p : net.node(net.switch_node(s)).ports) {
    if (net.port(net.port(p).peer).at_host == to_host && skip-- == 0) return p;
  }
  return kNone;
}

TEST(Network_Ecmp, MatchesAPerHostBreadthFirstSearchWithLinksDown) {
  {
    Network net(NetworkConfig{});
    LeafSpineConfig c = leaf_spine(4, 3, 3);
    ASSERT_TRUE(build_leaf_spine(net, c).ok());
    EXPECT_EQ(ecmp_mismatches(net, 64), 0);
    // A leaf-spine link, another leaf's two uplinks and a host link go down.
    fail_links(net, {port_of(net, 0, false), port_of(net, 1, false), port_of(net, 1, false, 1),
                     net.host(5).port});
    // Expect: the same ports as the reference, for every switch, host and hash.
    EXPECT_EQ(ecmp_mismatches(net, 64), 0);
    EXPECT_EQ(net.ecmp_port(0, 5, 1), kNone);
  }
  {
    Network net(NetworkConfig{});
    FatTreeConfig c;
    c.k = 6;
    c.hosts_per_tor = 2;
    ASSERT_TRUE(build_fat_tree(net, c).ok());
    EXPECT_EQ(ecmp_mismatches(net, 32), 0);
    // Switches 0..17 are ToRs, 18..35 aggregation, 36..44 cores (sim/topology.cc).
    fail_links(net, {port_of(net, 0, false), port_of(net, 18, false, 4), port_of(net, 36, false),
                     port_of(net, 40, false, 2), net.host(7).port, port_of(net, 3, true)});
    EXPECT_EQ(ecmp_mismatches(net, 32), 0);
    // A ToR cut off from its aggregation switches.
    fail_links(net, {port_of(net, 5, false), port_of(net, 5, false, 1), port_of(net, 5, false, 2)});
    EXPECT_EQ(ecmp_mismatches(net, 32), 0);
  }
  {
    // An irregular fabric: five switches in a ring with a chord, a host pair wired directly.
    Network net(NetworkConfig{});
    std::vector<uint32_t> sw, h;
    for (int i = 0; i < 5; ++i) sw.push_back(net.add_switch(absl::StrCat("s", i)));
    for (int i = 0; i < 7; ++i) h.push_back(net.add_host(absl::StrCat("h", i)));
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(net.connect(sw[i], sw[(i + 1) % 5], link(100)).ok());
    ASSERT_TRUE(net.connect(sw[0], sw[2], link(100)).ok());
    ASSERT_TRUE(net.connect(sw[3], sw[0], link(100)).ok());  // a second link 0-3 beside 3-4-0
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(net.connect(h[i], sw[(i * 2) % 5], link(100)).ok());
    ASSERT_TRUE(net.connect(h[5], h[6], link(100)).ok());
    ASSERT_TRUE(net.finalize().ok());
    EXPECT_EQ(ecmp_mismatches(net, 256), 0);
    EXPECT_EQ(net.ecmp_port(0, 6, 1), kNone);
    fail_links(net, {port_of(net, 0, false, 1), port_of(net, 4, false)});
    EXPECT_EQ(ecmp_mismatches(net, 256), 0);
  }
}

// ------------------------------------------------------------------ ECN

TEST(Network_Ecn, MarkingProbabilityFollowsKminKmaxPmax) {
  EcnConfig e;
  e.kmin_bytes = 100'000;
  e.kmax_bytes = 200'000;
  e.pmax = 0.2;
  EXPECT_EQ(ecn_mark_probability(e, 0), 0);
  EXPECT_EQ(ecn_mark_probability(e, 100'000), 0);
  EXPECT_NEAR(ecn_mark_probability(e, 150'000), 0.1, 1e-12);
  EXPECT_NEAR(ecn_mark_probability(e, 199'999), 0.2, 1e-5);
  EXPECT_EQ(ecn_mark_probability(e, 200'000), 1);
  Rng rng(3);
  int marks = 0;
  for (int i = 0; i < 100000; ++i) marks += rng.chance(ecn_mark_probability(e, 150'000));
  EXPECT_NEAR(marks / 100000.0, 0.1, 0.005);
}

TEST(Network_Ecn, IncastMarksCeInTheRealIpHeader) {
  NetworkConfig nc;
  nc.switches.ecn.kmin_bytes = 20'000;
  nc.switches.ecn.kmax_bytes = 60'000;
  nc.switches.ecn.pmax = 0.5;
  nc.switches.trimming = false;
  const TwoToOne r = two_to_one(nc);
  // Expect: a 2:1 incast builds a queue past kmin, marks some frames, and every marked frame
  // still decodes (the IPv4 checksum was fixed) with CE set.
  EXPECT_GT(r.down.ecn_marks, 10u);
  EXPECT_EQ(r.ce, r.down.ecn_marks);
  EXPECT_EQ(r.bad, 0u);
  EXPECT_EQ(r.received + r.down.drops, 400u);
}

// ------------------------------------------------------------------ trimming

// A 4:1 incast of UET requests into 32 KiB, with the switches' control class of
// `control_bytes`; the sink's counts and the port towards it.
struct TrimRun {
  uint64_t received = 0, trimmed = 0, bad = 0;
  std::map<uint32_t, uint64_t> trimmed_from;
  uint32_t trimmed_len = 0;
  size_t trimmed_payload = 0;
  PortStats down;
};
TrimRun four_to_one(uint64_t control_bytes, bool trim_last_half) {
  NetworkConfig nc;
  nc.switches.buffer_bytes = 32 * 1024;
  nc.switches.control_buffer_bytes = control_bytes;
  nc.switches.trim_last_half = trim_last_half;
  nc.switches.ecn.enabled = false;
  Network net(nc);
  LeafSpineConfig c = leaf_spine(1, 1, 5);
  c.host_link = link(100);
  EXPECT_TRUE(build_leaf_spine(net, c).ok());
  std::vector<std::unique_ptr<UetSource>> src;
  for (uint32_t h = 0; h < 4; ++h) {
    src.push_back(std::make_unique<UetSource>(h, 4, 100, 4000));
    net.attach(h, src.back().get());
  }
  UetSource sink(4, 0, 0, 0);
  net.attach(4, &sink);
  net.run_until(kSecond);
  return TrimRun{sink.received,       sink.trimmed,         sink.bad,
                 sink.trimmed_from,   sink.trimmed_len,     sink.trimmed_payload,
                 net.port_stats(net.port(net.host(4).port).peer)};
}

TEST(Network_Trimming, OverflowCutsUetRequestsToTheirHeaders) {
  const TrimRun r = four_to_one(SwitchConfig{}.control_buffer_bytes, false);
  // Expect: a 4:1 incast into 32 KiB trims instead of dropping; every request arrives, whole or
  // as its 98 header bytes (Eth 14 + IPv4 20 + UDP 8 + PDS 12 + SES 44) marked with the
  // trimmed DSCP, and still decodes (lengths and checksum rewritten).
  EXPECT_GT(r.down.trims, 50u);
  EXPECT_EQ(r.down.drops, 0u);
  EXPECT_EQ(r.received, 400u);
  EXPECT_EQ(r.trimmed, r.down.trims);
  EXPECT_EQ(r.trimmed_len, 98u);
  EXPECT_EQ(r.trimmed_payload, 0u);
  EXPECT_EQ(r.bad, 0u);
}

TEST(Network_Trimming, AFullControlClassDropsTheTrimmedHeaders) {
  // Expect: trimmed headers queue in the control class; with room for one (98 bytes) the
  // others arriving together are dropped, and the sink misses exactly those.
  const TrimRun roomy = four_to_one(256 * 1024, false), tight = four_to_one(100, false);
  EXPECT_GT(roomy.down.trims, 50u);
  EXPECT_EQ(roomy.down.drops, 0u);
  EXPECT_EQ(roomy.received, 400u);
  EXPECT_GT(tight.down.trims, 50u);
  EXPECT_GT(tight.down.drops, 10u);
  EXPECT_EQ(tight.received + tight.down.drops, 400u);
  EXPECT_EQ(tight.trimmed + tight.down.drops, tight.down.trims);
}

TEST(Network_Trimming, TrimmingTheLastQueuedHalfTheTimeSpreadsTrimsOverSenders) {
  // Expect: four senders in step at line rate: trimming only arrivals cuts the frames of the
  // senders whose arrivals come after the port's departures; trimming the last queued frame
  // half the time (SwitchConfig::trim_last_half) spreads the trims over all four, still
  // delivering every request whole or as its header.
  const TrimRun arriving = four_to_one(256 * 1024, false), either = four_to_one(256 * 1024, true);
  ASSERT_GT(arriving.down.trims, 50u);
  ASSERT_GT(either.down.trims, 50u);
  EXPECT_EQ(either.received, 400u);
  EXPECT_EQ(either.trimmed, either.down.trims);
  EXPECT_EQ(either.down.drops, 0u);
  auto least_share = [](const TrimRun& r) {
    uint64_t least = r.trimmed_from.size() < 4 ? 0 : ~uint64_t{0};
    for (const auto& [ip, n] : r.trimmed_from) least = std::min(least, n);
    return static_cast<double>(least) / static_cast<double>(r.trimmed);
  };
  for (const TrimRun* r : {&arriving, &either}) {
    for (const auto& [ip, n] : r->trimmed_from) std::printf(" %lu", n);
    std::printf(" trims by sender (%s)\n", r == &arriving ? "arriving only" : "last half the time");
  }
  EXPECT_LT(least_share(arriving), 0.05);
  EXPECT_GT(least_share(either), 0.12);
}

TEST(Network_Trimming, PlainUdpIsDroppedNotTrimmed) {
  NetworkConfig nc;
  nc.switches.buffer_bytes = 32 * 1024;
  Network net(nc);
  LeafSpineConfig c = leaf_spine(1, 1, 3);
  ASSERT_TRUE(build_leaf_spine(net, c).ok());
  std::vector<FlowRecord> rec;
  UdpApp a0(0, &rec), a1(1, &rec), a2(2, &rec);
  a0.add_flow(UdpFlow{0, 2, 400'000, 0, 0xC000});
  a1.add_flow(UdpFlow{1, 2, 400'000, 0, 0xC001});
  net.attach(0, &a0);
  net.attach(1, &a1);
  net.attach(2, &a2);
  net.run_until(kSecond);
  const Port& down = net.port(net.port(net.host(2).port).peer);
  EXPECT_EQ(down.stats.trims, 0u);
  EXPECT_GT(down.stats.drops, 0u);
  EXPECT_EQ(rec[0].received + rec[1].received + down.stats.drops * 4096, 800'000u);
}

// ------------------------------------------------------------------ PFC

struct IncastResult {
  uint64_t drops = 0, lossless_drops = 0, delivered = 0;
  uint64_t leaf1_pauses = 0, spine_pauses = 0, leaf0_pauses = 0;
  Time host_paused = 0;
};

// 8 senders on leaf 0, one receiver on leaf 1, one spine; fabric links fast enough that the
// only bottleneck is the receiver's port, so back-pressure must travel hop by hop.
IncastResult incast_8_to_1(bool pfc) {
  NetworkConfig nc;
  nc.switches.pfc.enabled = pfc;
  nc.switches.buffer_bytes = 256 * 1024;
  nc.switches.trimming = false;
  nc.switches.ecn.enabled = false;
  Network net(nc);
  const uint32_t leaf0 = [&] {
    for (int i = 0; i < 9; ++i) net.add_host("h");
    return net.add_switch("leaf0");
  }();
  const uint32_t leaf1 = net.add_switch("leaf1"), spine = net.add_switch("spine");
  for (uint32_t h = 0; h < 8; ++h) EXPECT_TRUE(net.connect(net.host_node(h), leaf0, link(100)).ok());
  EXPECT_TRUE(net.connect(net.host_node(8), leaf1, link(100)).ok());
  EXPECT_TRUE(net.connect(leaf0, spine, link(800)).ok());
  EXPECT_TRUE(net.connect(spine, leaf1, link(800)).ok());
  EXPECT_TRUE(net.finalize().ok());
  std::vector<FlowRecord> rec;
  std::vector<std::unique_ptr<UdpApp>> apps;
  for (uint32_t h = 0; h < 9; ++h) {
    apps.push_back(std::make_unique<UdpApp>(h, &rec));
    if (h < 8) apps.back()->add_flow(UdpFlow{h, 8, 1'000'000, 0, static_cast<uint16_t>(0xC000 + h)});
  }
  for (uint32_t h = 0; h < 9; ++h) net.attach(h, apps[h].get());
  net.run_until(kSecond);
  net.flush_stats();
  IncastResult r;
  for (size_t p = 0; p < net.num_ports(); ++p) {
    r.drops += net.port(static_cast<uint32_t>(p)).stats.drops;
    r.lossless_drops += net.port_stats(static_cast<uint32_t>(p)).lossless_drops;
  }
  for (uint32_t h = 0; h < 8; ++h) {
    r.delivered += rec[h].received;
    r.host_paused += net.port_stats(net.host(h).port).paused_time;
  }
  for (uint32_t p : net.node(leaf1).ports)
    if (net.port(net.port(p).peer).node == spine) r.leaf1_pauses = net.port_stats(p).pauses_sent;
  for (uint32_t p : net.node(spine).ports)
    if (net.port(net.port(p).peer).node == leaf0) r.spine_pauses = net.port_stats(p).pauses_sent;
  for (uint32_t p : net.node(leaf0).ports)
    if (net.port(net.port(p).peer).node != spine) r.leaf0_pauses += net.port_stats(p).pauses_sent;
  return r;
}

TEST(Network_Pfc, LosslessClassHasZeroDropsUnder8To1Incast) {
  const IncastResult r = incast_8_to_1(/*pfc=*/true);
  EXPECT_EQ(r.drops, 0u);
  EXPECT_EQ(r.lossless_drops, 0u);
  EXPECT_EQ(r.delivered, 8'000'000u);
  // Expect: pauses travel receiver leaf -> spine -> sender leaf -> hosts.
  EXPECT_GT(r.leaf1_pauses, 0u);
  EXPECT_GT(r.spine_pauses, 0u);
  EXPECT_GT(r.leaf0_pauses, 0u);
  EXPECT_GT(r.host_paused, 0);
}

TEST(Network_Pfc, WithoutPfcTheSameIncastDrops) {
  const IncastResult r = incast_8_to_1(/*pfc=*/false);
  EXPECT_GT(r.drops, 0u);
  EXPECT_LT(r.delivered, 8'000'000u);
}

// ------------------------------------------------------------------ failures

TEST(Network_Failure, DeadLinkLeavesEcmpAfterTheDetectionDelay) {
  NetworkConfig nc;
  nc.switches.failure_detection = 20 * kMicrosecond;
  Network net(nc);
  LeafSpineConfig c = leaf_spine(2, 2, 1);
  ASSERT_TRUE(build_leaf_spine(net, c).ok());
  std::vector<FlowRecord> rec;
  UdpApp a0(0, &rec), a1(1, &rec);
  a0.add_flow(UdpFlow{0, 1, 20'000'000, 0, 0xC000, /*spray=*/true});
  net.attach(0, &a0);
  net.attach(1, &a1);
  uint32_t dead = kNone;  // leaf 0's port to spine 0
  for (uint32_t p : net.node(net.switch_node(0)).ports)
    if (net.port(net.port(p).peer).node == net.switch_node(2)) dead = p;
  ASSERT_NE(dead, kNone);
  net.set_link_up(dead, false, 100 * kMicrosecond);
  net.run_until(100 * kMicrosecond + 20 * kMicrosecond + 1);
  const uint64_t tx_at_detection = net.port(dead).stats.tx_frames;
  const uint64_t drops_at_detection = net.port(dead).stats.drops;
  net.run_until(kSecond);
  // Expect: frames sent into the dead link before detection are lost; afterwards no frame is
  // queued to it and the flow finishes over the other spine.
  EXPECT_GT(drops_at_detection, 0u);
  EXPECT_LE(net.port(dead).stats.tx_frames, tx_at_detection + 1);
  for (uint64_t h = 0; h < 1000; ++h) EXPECT_NE(net.ecmp_port(0, 1, h), dead);
  EXPECT_EQ(rec[0].sent, 20'000'000u);
  EXPECT_GT(rec[0].received, 19'000'000u);
}

// ------------------------------------------------------------------ determinism

std::string run_and_capture(uint64_t seed, const std::string& path) {
  NetworkConfig nc;
  nc.seed = seed;
  Network net(nc);
  LeafSpineConfig c = leaf_spine(2, 2, 2);
  c.fabric_link = link(100);
  c.fabric_link.loss = 0.01;
  EXPECT_TRUE(build_leaf_spine(net, c).ok());
  EXPECT_TRUE(net.tap(net.port(net.host(3).port).peer, path).ok());
  std::vector<FlowRecord> rec;
  std::vector<std::unique_ptr<UdpApp>> apps;
  for (uint32_t h = 0; h < 4; ++h) apps.push_back(std::make_unique<UdpApp>(h, &rec));
  apps[0]->add_flow(UdpFlow{0, 3, 2'000'000, 0, 0xC000, true});
  apps[1]->add_flow(UdpFlow{1, 3, 2'000'000, 5 * kMicrosecond, 0xC100, true});
  for (uint32_t h = 0; h < 4; ++h) net.attach(h, apps[h].get());
  net.run_until(kSecond);
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Network_Determinism, SameSeedSamePcapDifferentSeedDifferent) {
  const std::string dir = ::testing::TempDir();
  const std::string a = run_and_capture(11, dir + "/det_a.pcap");
  const std::string b = run_and_capture(11, dir + "/det_b.pcap");
  const std::string c = run_and_capture(12, dir + "/det_c.pcap");
  ASSERT_GT(a.size(), 1'000'000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// ------------------------------------------------------------------ link impairments

TEST(Network_Link, LossAndCorruptionAreSeededAndCaught) {
  NetworkConfig nc;
  nc.seed = 5;
  Network net(nc);
  const uint32_t h0 = net.add_host("h0"), h1 = net.add_host("h1");
  LinkConfig l = link(100);
  l.loss = 0.02;
  l.corrupt = 0.05;
  ASSERT_TRUE(net.connect(h0, h1, l).ok());
  ASSERT_TRUE(net.finalize().ok());
  std::vector<FlowRecord> rec;
  UdpApp a0(0, &rec, 1024), a1(1, &rec, 1024);
  a0.add_flow(UdpFlow{0, 1, 20000 * 1024, 0, 0xC000});
  net.attach(0, &a0);
  net.attach(1, &a1);
  net.run_until(kSecond);
  const PortStats& st = net.port_stats(net.host(0).port);
  // Expect: about 2 % lost and 5 % of the rest corrupted; every corrupted frame fails its
  // IP or UDP checksum at the sink and is not counted as data.
  EXPECT_NEAR(double(st.wire_losses) / 20000, 0.02, 0.005);
  EXPECT_NEAR(double(st.corruptions) / 20000, 0.05 * 0.98, 0.01);
  EXPECT_EQ(a1.rx_bad(), st.corruptions);
  EXPECT_EQ(net.port_stats(net.host(1).port).corrupted_arrivals, st.corruptions);
  EXPECT_EQ(rec[0].received, (20000 - st.wire_losses - st.corruptions) * 1024);
}

// A sink that remembers, per UdpApp packet (by its byte offset), how often it came, a hash of
// its bytes, and in which order packets arrived.
class OrderSink : public Transport {
 public:
  void rx(std::span<Frame* const> frames, Time) override {
    for (Frame* f : frames) {
      wire::Decoded d;
      if (wire::decode_frame(std::span<const uint8_t>(f->data, f->len), &d) !=
          wire::WireError::kUnsupportedUdpPort) {  // valid IP/UDP, not UET/RoCE: a UdpApp frame
        ++bad;
        continue;
      }
      const uint64_t offset = wire::load_be(d.udp->raw + wire::Udp::kSize + 8, 8);
      uint64_t h = 1469598103934665603ULL;  // FNV-1a over the whole frame
      for (uint32_t i = 0; i < f->len; ++i) h = (h ^ f->data[i]) * 1099511628211ULL;
      auto [it, first] = hash.emplace(offset, h);
      if (!first && it->second != h) ++differing_copies;
      ++copies[offset];
      if (offset < highest) ++overtaken;  // a later packet arrived first
      highest = std::max(highest, offset);
    }
  }
  size_t tx(std::span<Frame* const>, Time) override { return 0; }
  Time next_deadline() const override { return kNever; }
  void on_timer(Time) override {}

  std::map<uint64_t, uint64_t> hash, copies;
  uint64_t bad = 0, differing_copies = 0, overtaken = 0, highest = 0;
};

struct ImpairedRun {
  PortStats link;  // the sender's port
  PortStats rx;    // the sink's port
  std::map<uint64_t, uint64_t> copies;
  uint64_t bad = 0, differing_copies = 0, overtaken = 0;
};

// `packets` UdpApp packets of 1 KiB over one impaired 100 Gb/s link.
ImpairedRun run_impaired(const LinkConfig& l, uint64_t seed, uint32_t packets) {
  NetworkConfig nc;
  nc.seed = seed;
  Network net(nc);
  const uint32_t h0 = net.add_host("h0"), h1 = net.add_host("h1");
  EXPECT_TRUE(net.connect(h0, h1, l).ok());
  EXPECT_TRUE(net.finalize().ok());
  std::vector<FlowRecord> rec;
  UdpApp a0(0, &rec, 1024);
  OrderSink sink;
  a0.add_flow(UdpFlow{0, 1, uint64_t{packets} * 1024, 0, 0xC000});
  net.attach(0, &a0);
  net.attach(1, &sink);
  net.run_until(kSecond);
  return ImpairedRun{net.port_stats(net.host(0).port),
                     net.port_stats(net.host(1).port),
                     sink.copies,
                     sink.bad,
                     sink.differing_copies,
                     sink.overtaken};
}

TEST(Network_Link, DuplicationDeliversByteIdenticalCopies) {
  LinkConfig l = link(100);
  l.duplicate = 0.05;
  const ImpairedRun r = run_impaired(l, 7, 20000);
  // Expect: about 5 % of the packets twice, byte for byte, and every packet at least once.
  EXPECT_NEAR(double(r.link.duplicates) / 20000, 0.05, 0.01);
  ASSERT_EQ(r.copies.size(), 20000u);
  uint64_t twice = 0;
  for (const auto& [offset, n] : r.copies) {
    EXPECT_TRUE(n == 1 || n == 2) << offset;
    twice += n == 2;
  }
  EXPECT_EQ(twice, r.link.duplicates);
  EXPECT_EQ(r.differing_copies, 0u);
  EXPECT_EQ(r.bad, 0u);
}

TEST(Network_Link, ReorderingHoldsFramesBackSoLaterOnesOvertake) {
  LinkConfig l = link(100);
  const ImpairedRun in_order = run_impaired(l, 7, 20000);
  EXPECT_EQ(in_order.overtaken, 0u);
  EXPECT_EQ(in_order.link.reorders, 0u);
  l.reorder = 0.1;
  l.reorder_delay = 2 * kMicrosecond;  // a 1 KiB frame takes 86.6 ns at 100 Gb/s
  const ImpairedRun r = run_impaired(l, 7, 20000);
  // Expect: about 10 % held back, most of them overtaken by the frames behind them, and
  // every frame delivered exactly once, intact.
  EXPECT_NEAR(double(r.link.reorders) / 20000, 0.1, 0.01);
  EXPECT_GT(r.overtaken, r.link.reorders * 8 / 10);
  EXPECT_LE(r.overtaken, r.link.reorders);
  ASSERT_EQ(r.copies.size(), 20000u);
  for (const auto& [offset, n] : r.copies) EXPECT_EQ(n, 1u) << offset;
  EXPECT_EQ(r.bad, 0u);
}

TEST(Network_Link, ImpairmentsFollowTheSeed) {
  LinkConfig l = link(100);
  l.loss = 0.01;
  l.corrupt = 0.01;
  l.duplicate = 0.02;
  l.reorder = 0.05;
  const ImpairedRun a = run_impaired(l, 3, 5000), b = run_impaired(l, 3, 5000),
                    c = run_impaired(l, 4, 5000);
  EXPECT_EQ(a.copies, b.copies);
  EXPECT_EQ(a.overtaken, b.overtaken);
  EXPECT_EQ(a.link.duplicates, b.link.duplicates);
  EXPECT_NE(a.copies, c.copies);
  // Expect: every damaged frame that arrived (a corrupted frame's copy too) fails the sink's
  // IP or UDP checksum; no clean one does.
  EXPECT_GT(a.link.corruptions, 0u);
  EXPECT_GE(a.rx.corrupted_arrivals, a.link.corruptions);
  EXPECT_EQ(a.bad, a.rx.corrupted_arrivals);
}

TEST(Network_Link, ImpairmentOutOfRangeIsRefused) {
  Network net(NetworkConfig{});
  const uint32_t h0 = net.add_host("h0"), h1 = net.add_host("h1");
  LinkConfig l = link(100);
  l.duplicate = 1.5;
  EXPECT_EQ(net.connect(h0, h1, l).code(), absl::StatusCode::kInvalidArgument);
  l.duplicate = 0;
  l.reorder_delay = -1;
  EXPECT_EQ(net.connect(h0, h1, l).code(), absl::StatusCode::kInvalidArgument);
}

// The shape checks refuse an infinite, NaN or vanishing link rate on any tier, naming it,
// before anything (the engines' timers) is derived from it.
TEST(Network_Link, TopologyChecksRefuseBadRatesNamingTheTier) {
  for (double gbps : {std::numeric_limits<double>::infinity(), std::nan(""), 0.0, 1e-300}) {
    LeafSpineConfig ls;
    ls.fabric_link.gbps = gbps;
    const absl::Status s = check_leaf_spine(ls);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << gbps;
    EXPECT_NE(s.message().find("fabric links: link rate"), std::string::npos) << s;
    FatTreeConfig ft;
    ft.agg_core_link.gbps = gbps;
    EXPECT_NE(check_fat_tree(ft).message().find("aggregation-core links"), std::string::npos);
  }
  LeafSpineConfig ls;
  ls.host_link.delay = 11 * kSecond;
  EXPECT_NE(check_leaf_spine(ls).message().find("host links: delay"), std::string::npos);
  EXPECT_TRUE(check_leaf_spine(LeafSpineConfig{}).ok());
}

TEST(Network_Link, DegradedRateStretchesSerialization) {
  Network net(NetworkConfig{});
  const uint32_t h0 = net.add_host("h0"), h1 = net.add_host("h1");
  ASSERT_TRUE(net.connect(h0, h1, link(100, 0)).ok());
  ASSERT_TRUE(net.finalize().ok());
  std::vector<FlowRecord> rec;
  UdpApp a0(0, &rec, 1000), a1(1, &rec, 1000);
  a0.add_flow(UdpFlow{0, 1, 1000, 10 * kMicrosecond, 0xC000});
  net.attach(0, &a0);
  net.attach(1, &a1);
  net.set_link_rate(net.host(0).port, 0.25, 5 * kMicrosecond);  // 100 -> 25 Gb/s
  net.run_until(kSecond);
  // Expect: one 1058-byte frame (+24 on the wire) at 25 Gb/s: 320 ps per byte.
  EXPECT_EQ(rec[0].finish, 10 * kMicrosecond + (1058 + 24) * 320);
}

// The 2:1 incast into host 2 with its link at a quarter of its rate, the buffers scaled or not.
PortStats degraded_incast(bool scale_queues) {
  NetworkConfig nc;
  nc.switches.buffer_bytes = 256 * 1024;
  nc.switches.ecn.kmin_bytes = 100'000;
  nc.switches.ecn.kmax_bytes = 200'000;
  nc.switches.ecn.pmax = 1;
  nc.switches.trimming = false;
  const TwoToOne r = two_to_one(nc, [&](Network& net) {
    net.set_link_rate(net.host(2).port, 0.25, 0, scale_queues);
  });
  EXPECT_EQ(r.bad, 0u);
  return r.down;
}

TEST(Network_Link, DegradedLinkScalesItsBuffersAndEcnThresholdsOnRequest) {
  const PortStats scaled = degraded_incast(true);
  const PortStats fixed = degraded_incast(false);
  // Expect: scaled, the 25 Gb/s port holds at most a quarter of the 256 KiB (plus the frame
  // that found room) and marks from a quarter of kmin (25 kB), which its queue passes; with
  // full-rate limits the same incast queues far past 64 KiB.
  EXPECT_LE(scaled.max_queue_bytes, 64u * 1024);
  EXPECT_GT(scaled.drops, 0u);
  EXPECT_GT(scaled.ecn_marks, 0u);
  EXPECT_GT(fixed.max_queue_bytes, 128u * 1024);
  EXPECT_GT(fixed.ecn_marks, 0u);
}

// What a host's transport is handed: in tx an empty frame of the pool's capacity; in rx the
// bytes and lengths the sender wrote (its payload carried by length), kData as real hosts
// deliver, whatever priority the sender gave it.
class LentFrames : public Transport {
 public:
  LentFrames(uint32_t host, uint32_t dst, uint32_t frames)
      : host_(host), dst_(dst), left_(frames) {}
  void rx(std::span<Frame* const> frames, Time) override {
    for (const Frame* f : frames) {
      const uint8_t marker = f->len > 60 ? f->data[60] : uint8_t{0};
      got.push_back({f->len, f->wire_len, f->priority, f->capacity, marker});
    }
  }
  size_t tx(std::span<Frame* const> out, Time) override {
    if (left_ == 0) return 0;
    Frame& f = *out[0];
    if (f.len != 0 || f.wire_len != 0 || f.priority != Priority::kData || f.ref_len != 0) {
      ++not_empty;
    }
    capacity = f.capacity;
    wire::Encap e;
    e.src_ip4 = Network::host_ip4(host_);
    e.dst_ip4 = Network::host_ip4(dst_);
    e.sport = static_cast<uint16_t>(0xC000 + left_);
    wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), e);
    b.add_bytes(40);
    size_t n = 0;
    if (b.finish(&n) != wire::WireError::kOk) return 0;
    f.data[60] = static_cast<uint8_t>(left_);
    f.len = static_cast<uint32_t>(n);
    f.wire_len = f.len + 1000 * left_;
    f.priority = left_ % 2 == 0 ? Priority::kControl : Priority::kData;
    --left_;
    return 1;
  }
  Time next_deadline() const override { return kNever; }
  void on_timer(Time) override {}

  struct Got {
    uint32_t len, wire_len;
    Priority priority;
    uint32_t capacity;
    uint8_t marker;
  };
  std::vector<Got> got;
  uint64_t not_empty = 0;
  uint32_t capacity = 0;

 private:
  uint32_t host_, dst_, left_;
};

// Expect: every tx handed an empty frame of the pool's 128 bytes; the receiver gets the five
// frames in order with the sender's len, wire_len (len + 1000 x 5..1) and marker byte, each
// with priority kData, though the sender marked every other one kControl.
TEST(Network_Host, RxGetsTheSentLengthsAndBytesInKData) {
  NetworkConfig nc;
  nc.frame_capacity = 128;
  Network net(nc);
  const uint32_t h0 = net.add_host("h0"), h1 = net.add_host("h1");
  ASSERT_TRUE(net.connect(h0, h1, link(100)).ok());
  ASSERT_TRUE(net.finalize().ok());
  LentFrames a(0, 1, 5), b(1, 0, 0);
  net.attach(0, &a);
  net.attach(1, &b);
  net.run_until(kSecond);
  EXPECT_EQ(a.not_empty, 0u);
  EXPECT_EQ(a.capacity, 128u);
  ASSERT_EQ(b.got.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) {
    const auto& g = b.got[i];
    const uint32_t left = 5 - i;
    EXPECT_GT(g.len, 60u) << i;
    EXPECT_EQ(g.wire_len, g.len + 1000 * left) << i;
    EXPECT_EQ(g.marker, left) << i;
    EXPECT_EQ(g.priority, Priority::kData) << i;
    EXPECT_EQ(g.capacity, 128u) << i;
  }
}

}  // namespace
}  // namespace uet::sim
