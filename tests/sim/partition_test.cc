// A fabric split over ranks (sim/partition.h): who runs what, the lookahead, and the records
// one rank hands another (Network::deliver_remote), good and bad.
#include "sim/partition.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sim/topology.h"

namespace uet::sim {
namespace {

LeafSpineConfig leaf_spine(Time fabric_delay) {
  LeafSpineConfig c;
  c.leaves = 4;
  c.spines = 4;
  c.hosts_per_leaf = 4;
  c.fabric_link.delay = fabric_delay;
  return c;
}

// Expect: hosts with their leaf, leaves in two blocks, spines two per rank (each has two
// links to either side: the tie goes to the rank with fewer spines), the lookahead the
// leaf-spine delay, and 8 cut links (each spine's two to the other rank's leaves).
TEST(Partition_Split, LeafSpineHostsWithTheirLeafSpinesSpreadEvenly) {
  Network net(NetworkConfig{});
  ASSERT_TRUE(build_leaf_spine(net, leaf_spine(700 * kNanosecond)).ok());
  auto split = split_fabric(net, 2);
  ASSERT_TRUE(split.ok()) << split.status();
  const auto& r = split->rank_of_node;
  for (uint32_t h = 0; h < 16; ++h) EXPECT_EQ(r[net.host_node(h)], h < 8 ? 0 : 1) << h;
  for (uint32_t l = 0; l < 4; ++l) EXPECT_EQ(r[net.switch_node(l)], l < 2 ? 0 : 1) << l;
  uint32_t spines_on_0 = 0;
  for (uint32_t s = 4; s < 8; ++s) spines_on_0 += r[net.switch_node(s)] == 0 ? 1 : 0;
  EXPECT_EQ(spines_on_0, 2u);
  EXPECT_EQ(split->lookahead, 700 * kNanosecond);
  EXPECT_EQ(split->cut_links, 8u);
}

// Expect: a fat-tree splits by pods (aggregation switches stay with their pod's ToRs), the
// cores spread evenly in blocks, and the lookahead is the cut tier's delay (aggregation-core), not the
// shorter ToR-aggregation one.
TEST(Partition_Split, FatTreeSplitsByPodsAndTakesTheCutTiersDelay) {
  Network net(NetworkConfig{});
  FatTreeConfig c;
  c.k = 4;
  c.tor_agg_link.delay = 100 * kNanosecond;
  c.agg_core_link.delay = 900 * kNanosecond;
  ASSERT_TRUE(build_fat_tree(net, c).ok());
  auto split = split_fabric(net, 2);
  ASSERT_TRUE(split.ok()) << split.status();
  // A pod is 4 hosts; every host shares a rank with the switches of its pod.
  for (uint32_t h = 0; h < net.num_hosts(); ++h) {
    const uint32_t tor = net.port(net.port(net.host(h).port).peer).node;
    EXPECT_EQ(split->rank_of_node[net.host_node(h)], h < 8 ? 0 : 1);
    EXPECT_EQ(split->rank_of_node[tor], h < 8 ? 0 : 1);
    for (uint32_t p : net.node(tor).ports) {
      const uint32_t m = net.port(net.port(p).peer).node;
      if (net.node(m).kind == NodeKind::kSwitch) {
        EXPECT_EQ(split->rank_of_node[m], h < 8 ? 0 : 1);
      }
    }
  }
  // The cores (the last 4 switches) tie, two links to either rank: in blocks by number, so
  // an aggregation switch's links to them (consecutive ports) are cut together or not at all.
  ASSERT_EQ(net.num_switches(), 20u);
  for (uint32_t s = 16; s < 20; ++s) {
    EXPECT_EQ(split->rank_of_node[net.switch_node(s)], s < 18 ? 0 : 1) << s;
  }
  EXPECT_EQ(split->lookahead, 900 * kNanosecond);
}

// Expect: a cut link without delay is refused (no lookahead), naming the link; with more
// ranks than ToRs the extra ranks get nothing but the split stands.
TEST(Partition_Split, RefusesACutLinkWithoutDelayAndLeavesExtraRanksIdle) {
  Network zero(NetworkConfig{});
  ASSERT_TRUE(build_leaf_spine(zero, leaf_spine(0)).ok());
  auto refused = split_fabric(zero, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("has no delay"), std::string::npos)
      << refused.status();
  EXPECT_TRUE(split_fabric(zero, 1).ok());  // nothing cut: no lookahead needed

  Network net(NetworkConfig{});
  ASSERT_TRUE(build_leaf_spine(net, leaf_spine(500 * kNanosecond)).ok());
  auto split = split_fabric(net, 8);
  ASSERT_TRUE(split.ok()) << split.status();
  std::vector<int> nodes(8, 0);
  for (uint16_t r : split->rank_of_node) ++nodes[r];
  EXPECT_EQ(nodes[1] + nodes[3] + nodes[5] + nodes[7], 0);
}

// Expect: with the builder's groups, a dragonfly goes to ranks group by group (9 groups on 4
// ranks: 3, 2, 2, 2), so only global links are cut; a Dragonfly+ group's spines go with its
// leaves; a torus goes by slabs of its last dimension; fewer groups than ranks: ToR blocks.
TEST(Partition_Split, WholeDragonflyGroupsAndTorusSlabsPerRank) {
  DragonflyConfig df;
  df.p = 1;
  df.a = 4;
  df.h = 2;
  Network net(NetworkConfig{});
  TopologyLayout layout;
  ASSERT_TRUE(build_dragonfly(net, df, &layout).ok());
  auto split = split_fabric(net, 4, layout.group);
  ASSERT_TRUE(split.ok()) << split.status();
  for (uint32_t s = 0; s < net.num_switches(); ++s) {
    EXPECT_EQ(split->rank_of_node[net.switch_node(s)], s / 4 * 4 / 9) << s;
  }
  for (uint32_t h = 0; h < net.num_hosts(); ++h) {
    EXPECT_EQ(split->rank_of_node[net.host_node(h)], h / 4 * 4 / 9) << h;
  }
  uint64_t cut_global = 0;
  for (uint32_t p = 0; p < net.num_ports(); p += 2) {
    const Port& a = net.port(p);
    const Port& b = net.port(p + 1);
    if (split->rank_of_node[a.node] == split->rank_of_node[b.node]) continue;
    EXPECT_FALSE(a.at_host || b.at_host);
    EXPECT_NE(a.owner / 4, b.owner / 4);  // a global link
    ++cut_global;
  }
  EXPECT_EQ(split->cut_links, cut_global);

  DragonflyPlusConfig dp;
  dp.leaves = 2;
  dp.spines = 2;
  dp.h = 1;  // 3 groups of 4 switches
  Network plus(NetworkConfig{});
  ASSERT_TRUE(build_dragonfly_plus(plus, dp, &layout).ok());
  auto by_group = split_fabric(plus, 3, layout.group);
  ASSERT_TRUE(by_group.ok()) << by_group.status();
  for (uint32_t s = 0; s < plus.num_switches(); ++s) {
    EXPECT_EQ(by_group->rank_of_node[plus.switch_node(s)], s / 4) << s;
  }

  TorusConfig t;
  t.dims = {4, 4, 4};
  Network torus(NetworkConfig{});
  ASSERT_TRUE(build_torus(torus, t, &layout).ok());
  auto slabs = split_fabric(torus, 2, layout.group);
  ASSERT_TRUE(slabs.ok()) << slabs.status();
  for (uint32_t s = 0; s < 64; ++s) {
    EXPECT_EQ(slabs->rank_of_node[torus.switch_node(s)], s / 16 < 2 ? 0 : 1) << s;
  }
  EXPECT_EQ(slabs->cut_links, 2u * 16);              // z = 1 to 2 and the wraparound z = 3 to 0
  auto many = split_fabric(torus, 8, layout.group);  // 4 slabs, 8 ranks: 8 blocks of switches
  ASSERT_TRUE(many.ok()) << many.status();
  EXPECT_EQ(many->rank_of_node[torus.switch_node(63)], 7);
  EXPECT_FALSE(split_fabric(torus, 2, std::vector<uint32_t>(3, 0)).ok());
}

// A frame arriving through a cut link, as its sender's rank records it.
class Sink : public Transport {
 public:
  void rx(std::span<Frame* const> frames, Time now) override {
    for (const Frame* f : frames) got.emplace_back(now, f->len);
  }
  size_t tx(std::span<Frame* const>, Time) override { return 0; }
  Time next_deadline() const override { return kNever; }
  void on_timer(Time) override {}
  std::vector<std::pair<Time, uint32_t>> got;
};

// Two ranks, one host each, one switch each (host 0 - s0 - s1 - host 1, the s0-s1 link cut).
struct TwoRanks {
  explicit TwoRanks(uint16_t rank) : net(NetworkConfig{}) {
    h0 = net.add_host("h0");
    h1 = net.add_host("h1");
    s0 = net.add_switch("s0");
    s1 = net.add_switch("s1");
    LinkConfig l;
    EXPECT_TRUE(net.connect(h0, s0, l).ok());
    EXPECT_TRUE(net.connect(h1, s1, l).ok());
    EXPECT_TRUE(net.connect(s0, s1, l).ok());
    EXPECT_TRUE(net.finalize().ok());
    auto split = split_fabric(net, 2);
    EXPECT_TRUE(split.ok());
    EXPECT_TRUE(net.set_partition(split->rank_of_node, rank, 2).ok());
  }
  Network net;
  uint32_t h0, h1, s0, s1;
};

// Expect: rank 0's frame from host 0 to host 1 leaves through its outbox for rank 1 (nothing
// for itself) as a record of its bytes and 40 more, and rank 1, handed those records,
// delivers the same bytes to host 1 at the time one process would: three hops of
// serialization and delay.
TEST(Partition_Remote, AFrameCrossesTheCutAsItsRecordsAndArrivesOnTime) {
  TwoRanks a(0), b(1);
  Sink sink;
  b.net.attach(1, &sink);
  // One frame from host 0's NIC, as a transport would hand it over.
  struct OneFrame : Transport {
    bool sent = false;
    void rx(std::span<Frame* const>, Time) override {}
    size_t tx(std::span<Frame* const> out, Time) override {
      if (sent) return 0;
      sent = true;
      Frame& f = *out[0];
      std::memset(f.data, 0, 100);
      // Ethernet + IPv4 to host 1 (10.0.0.2), enough for the switches to route it.
      f.data[12] = 0x08;
      f.data[14] = 0x45;
      f.data[16] = 0;
      f.data[17] = 86;
      f.data[22] = 64;
      f.data[23] = 17;
      const uint32_t dst = Network::host_ip4(1);
      for (int i = 0; i < 4; ++i) f.data[30 + i] = static_cast<uint8_t>(dst >> (24 - 8 * i));
      f.len = 100;
      return 1;
    }
    Time next_deadline() const override { return kNever; }
    void on_timer(Time) override {}
  } source;
  a.net.attach(0, &source);
  a.net.kick(0);
  a.net.run_until(10 * kMicrosecond);
  EXPECT_EQ(a.net.remote_records(), 1u);
  EXPECT_EQ(a.net.earliest_sent(), 2 * (9920 + 500 * kNanosecond));  // its arrival at s1
  EXPECT_TRUE(a.net.outboxes()[0].empty());
  // Its record: 40 bytes (time, port and kind, counter, lengths, metadata) and the frame's
  // 100 bytes, unpadded.
  EXPECT_EQ(a.net.outboxes()[1].size(), 40u + 100u);
  EXPECT_EQ(a.net.earliest_sent(), kNever);  // written out
  ASSERT_TRUE(b.net.deliver_remote(a.net.outboxes()[1]).ok());
  b.net.run_until(20 * kMicrosecond);
  ASSERT_EQ(sink.got.size(), 1u);
  EXPECT_EQ(sink.got[0].second, 100u);
  // (100 + 24 bytes at 100 Gb/s = 9.92 ns) + 500 ns, three times.
  EXPECT_EQ(sink.got[0].first, 3 * (9920 + 500 * kNanosecond));
}

// Expect: records a rank cannot place are refused with the reason (data loss), never
// scheduled: cut short, for a port this rank does not run, due before its clock, a PFC frame
// for a priority that does not exist, and a frame longer than a pool frame.
TEST(Partition_Remote, RefusesRecordsItCannotPlace) {
  TwoRanks b(1);
  b.net.run_until(kMicrosecond);
  // A well-formed PFC record for rank 1's end of the cut link (the s1 port facing s0), as
  // Network lays it out: time, port | kind << 24, the key's counter, b (priority | pause << 8);
  // an arrival: time, port | kind << 24, counter, wire_len, len, meta, bytes.
  uint32_t cut = 0;
  for (uint32_t p = 0; p < b.net.num_ports(); ++p) {
    if (b.net.port(p).remote && b.net.owns_port(p)) cut = p;
  }
  constexpr uint8_t kArrive = 1, kPfc = 3;
  auto record = [&](Time t, uint32_t port, uint8_t kind, uint32_t len) {
    std::vector<uint8_t> r(kind == kArrive ? 40 : 20, 0);
    const uint32_t word = port | uint32_t{kind} << 24;
    std::memcpy(r.data(), &t, 8);
    std::memcpy(r.data() + 8, &word, 4);
    if (kind == kArrive) std::memcpy(r.data() + 20, &len, 4);
    return r;
  };
  const auto pending = b.net.events_pending();
  auto expect_refused = [&](std::vector<uint8_t> r, const char* why) {
    const absl::Status s = b.net.deliver_remote(r);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << why << ": " << s;
    EXPECT_EQ(b.net.events_pending(), pending) << why;
  };
  auto cut_short = record(2 * kMicrosecond, cut, kPfc, 0);
  cut_short.resize(16);
  expect_refused(cut_short, "cut short");
  expect_refused(record(2 * kMicrosecond, b.net.host(0).port, kPfc, 0), "another rank's port");
  expect_refused(record(kMicrosecond / 2, cut, kPfc, 0), "before this rank's clock");
  auto bad_pfc = record(2 * kMicrosecond, cut, kPfc, 0);
  const uint32_t priority = 7;  // beyond the two classes PFC pauses
  std::memcpy(bad_pfc.data() + 16, &priority, 4);
  expect_refused(bad_pfc, "PFC for a priority that does not exist");
  auto bad_counter = record(2 * kMicrosecond, cut, kPfc, 0);
  const uint32_t counter = 1u << 24;  // a key's counter has 24 bits
  std::memcpy(bad_counter.data() + 12, &counter, 4);
  expect_refused(bad_counter, "a counter beyond 24 bits");
  auto too_long = record(2 * kMicrosecond, cut, kArrive, 100000);
  too_long.resize(too_long.size() + 100000);
  expect_refused(too_long, "longer than a frame");
  auto frame_cut = record(2 * kMicrosecond, cut, kArrive, 100);
  frame_cut.resize(frame_cut.size() + 99);
  expect_refused(frame_cut, "a frame's bytes cut short");
  // Expect: the same PFC record, well formed, is scheduled.
  EXPECT_TRUE(b.net.deliver_remote(record(2 * kMicrosecond, cut, kPfc, 0)).ok());
  EXPECT_EQ(b.net.events_pending(), pending + 1);
}

// Expect: a rank keeps every port's node, peer and link state but the counters of its own
// ports only (another rank's read as zero, and cannot be tapped), refuses a second split, and
// after a link of another rank's fails, routes as one process does: the link states of the
// whole fabric are kept on every rank.
TEST(Partition_Ports, ARankStoresItsOwnPortsAndKnowsEveryLink) {
  TwoRanks a(0);
  Network whole(NetworkConfig{});  // the same fabric in one process
  for (const char* n : {"h0", "h1"}) whole.add_host(n);
  for (const char* n : {"s0", "s1"}) whole.add_switch(n);
  LinkConfig l;
  ASSERT_TRUE(whole.connect(0, 2, l).ok());
  ASSERT_TRUE(whole.connect(1, 3, l).ok());
  ASSERT_TRUE(whole.connect(2, 3, l).ok());
  ASSERT_TRUE(whole.finalize().ok());
  const uint32_t h1_port = a.net.host(1).port;  // rank 1's host link
  ASSERT_FALSE(a.net.owns_port(h1_port));
  ASSERT_TRUE(a.net.owns_port(a.net.host(0).port));
  for (uint32_t p = 0; p < a.net.num_ports(); ++p) {
    EXPECT_EQ(a.net.port_node(p), whole.port(p).node) << p;
    EXPECT_EQ(Network::peer_of(p), whole.port(p).peer) << p;
    EXPECT_TRUE(a.net.link_up(p)) << p;
  }
  EXPECT_EQ(a.net.port(a.net.host(0).port).owner, 0u);
  EXPECT_EQ(a.net.port_stats(h1_port).tx_frames, 0u);
  EXPECT_EQ(a.net.tap(h1_port, "/dev/null").code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint16_t> all_here(4, 0);
  EXPECT_EQ(a.net.set_partition(all_here, 0, 1).code(), absl::StatusCode::kFailedPrecondition);
  // s1's route to host 1 before and after host 1's link fails (detected 10 us later).
  const uint32_t before = whole.ecmp_port(1, 1, 0);
  for (Network* n : {&a.net, &whole}) {
    n->set_link_up(h1_port, false, kMicrosecond);
    n->run_until(20 * kMicrosecond);
  }
  EXPECT_FALSE(a.net.link_up(h1_port));
  EXPECT_FALSE(a.net.link_up(Network::peer_of(h1_port)));
  EXPECT_NE(whole.ecmp_port(1, 1, 0), before);
  for (uint32_t sw = 0; sw < 2; ++sw) {
    for (uint32_t h = 0; h < 2; ++h) {
      EXPECT_EQ(a.net.ecmp_port(sw, h, 0), whole.ecmp_port(sw, h, 0)) << sw << " " << h;
    }
  }
}

// A fat-tree (k = 4) split over 2 ranks, once with every port stored at finalize() and copied
// at the split, once with the ports made only at the split (NetworkConfig::ports_at_partition).
// Expect: on each rank the two hold the same ports, field by field (another rank's: zero
// bytes in both), and the same number of ports.
TEST(Partition_Ports, PortsMadeAtTheSplitAreThoseOfTheWholeFabric) {
  for (uint16_t rank = 0; rank < 2; ++rank) {
    NetworkConfig late_config;
    late_config.seed = 7;
    late_config.ports_at_partition = true;
    NetworkConfig copied_config = late_config;
    copied_config.ports_at_partition = false;
    Network late(late_config), copied(copied_config);
    FatTreeConfig ft;
    ft.host_link.loss = 0.001;  // impaired host links
    for (Network* n : {&late, &copied}) {
      ASSERT_TRUE(build_fat_tree(*n, ft).ok());
      auto split = split_fabric(*n, 2);
      ASSERT_TRUE(split.ok()) << split.status();
      ASSERT_TRUE(n->set_partition(split->rank_of_node, rank, 2).ok());
    }
    ASSERT_EQ(late.num_ports(), copied.num_ports());
    uint32_t cut = 0;
    for (uint32_t p = 0; p < late.num_ports(); ++p) {
      const Port& a = late.port(p);
      const Port& b = copied.port(p);
      EXPECT_EQ(a.peer, b.peer) << p;
      EXPECT_EQ(a.node, b.node) << p;
      EXPECT_EQ(a.owner, b.owner) << p;
      EXPECT_EQ(a.at_host, b.at_host) << p;
      EXPECT_EQ(a.up, b.up) << p;
      EXPECT_EQ(a.impaired, b.impaired) << p;
      EXPECT_EQ(a.remote, b.remote) << p;
      EXPECT_EQ(a.plain, b.plain) << p;
      EXPECT_EQ(a.rate_bps, b.rate_bps) << p;
      EXPECT_EQ(a.ps_per_byte, b.ps_per_byte) << p;
      EXPECT_EQ(a.delay, b.delay) << p;
      Rng ra = a.rng, rb = b.rng;
      EXPECT_EQ(ra.next(), rb.next()) << p;
      cut += a.remote ? 1 : 0;
      if (!late.owns_port(p)) {
        EXPECT_EQ(a.rate_bps, 0) << p;
      }
    }
    EXPECT_GT(cut, 0u);
  }
}

}  // namespace
}  // namespace uet::sim
