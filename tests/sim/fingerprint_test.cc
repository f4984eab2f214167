// A fingerprint of whole runs, pinned to the values the simulator gave when it was recorded, so
// that a speed-up (event list, port layout, caching) that changes any result fails here: the
// hash covers every frame a host receives (time, host, length, bytes), every port's counters,
// every flow's record and the event count. A deliberate change of behaviour must update the
// pinned values and say why.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "sim/network.h"
#include "sim/rng.h"
#include "sim/topology.h"
#include "sim/udp_app.h"

namespace uet::sim {
namespace {

struct Hash {
  uint64_t h = 0xCBF29CE484222325ULL;
  void add(uint64_t v) { h = mix64(v, h); }
};

// Forwards to a UdpApp and hashes every frame the host receives.
class Recorder : public Transport {
 public:
  Recorder(uint32_t host, UdpApp* app, Hash* hash) : host_(host), app_(app), hash_(hash) {}
  void rx(std::span<Frame* const> frames, Time now) override {
    for (const Frame* f : frames) {
      hash_->add(static_cast<uint64_t>(now));
      hash_->add(host_);
      hash_->add(uint64_t{f->len} << 32 | f->wire_len);
      for (uint32_t i = 0; i < f->len; ++i) hash_->add(f->data[i]);
    }
    app_->rx(frames, now);
  }
  size_t tx(std::span<Frame* const> out, Time now) override { return app_->tx(out, now); }
  Time next_deadline() const override { return app_->next_deadline(); }
  void on_timer(Time now) override { app_->on_timer(now); }

 private:
  uint32_t host_;
  UdpApp* app_;
  Hash* hash_;
};

// Starts a late incast flow from a callback (exercises Network::schedule).
class Starter : public Scheduled {
 public:
  explicit Starter(std::vector<std::unique_ptr<UdpApp>>* apps) : apps_(apps) {}
  void fire(Network& net, Time now, uint32_t cookie) override {
    (*apps_)[cookie]->add_flow(UdpFlow{1000 + cookie, 0, 200000, now, 0xD000, false});
    net.kick(cookie);
  }

 private:
  std::vector<std::unique_ptr<UdpApp>>* apps_;
};

// A k=4 fat-tree, 2:1 oversubscribed at the ToRs, with every link impairment on (or none), a sprayed
// and an ECMP permutation, staggered starts, an incast started by callbacks, a link failure
// and recovery and a degraded link.
uint64_t run_fingerprint(bool pfc, uint32_t capacity, bool impaired = true) {
  NetworkConfig nc;
  nc.seed = 7;
  nc.frame_capacity = capacity;
  nc.switches.pfc.enabled = pfc;
  nc.switches.buffer_bytes = 256 * 1024;
  nc.switches.ecn.kmin_bytes = 20 * 1024;
  nc.switches.ecn.kmax_bytes = 100 * 1024;
  Network net(nc);
  FatTreeConfig fc;
  fc.k = 4;
  fc.hosts_per_tor = 4;
  LinkConfig l;
  l.gbps = 100;
  l.delay = 500 * kNanosecond;
  if (impaired) {
    l.loss = 1e-3;
    l.corrupt = 1e-3;
    l.duplicate = 1e-3;
    l.reorder = 2e-3;
  }
  fc.host_link = fc.tor_agg_link = fc.agg_core_link = l;
  EXPECT_TRUE(build_fat_tree(net, fc).ok());
  const auto hosts = static_cast<uint32_t>(net.num_hosts());
  Hash hash;
  std::vector<FlowRecord> records;
  std::vector<std::unique_ptr<UdpApp>> apps;
  std::vector<std::unique_ptr<Recorder>> recorders;
  Rng rng(3);
  for (uint32_t h = 0; h < hosts; ++h) {
    apps.push_back(std::make_unique<UdpApp>(h, &records, 4096));
    recorders.push_back(std::make_unique<Recorder>(h, apps.back().get(), &hash));
  }
  for (uint32_t h = 0; h < hosts; ++h) {
    const uint32_t dst = (h + 1 + static_cast<uint32_t>(rng.below(hosts - 1))) % hosts;
    const auto start = static_cast<Time>(rng.below(20 * kMicrosecond));
    apps[h]->add_flow(UdpFlow{h, dst, 1500000 + 1000 * h, start,
                              static_cast<uint16_t>(0xC000 | h), h % 2 == 0});
  }
  for (uint32_t h = 0; h < hosts; ++h) net.attach(h, recorders[h].get());
  Starter starter(&apps);
  for (uint32_t h = 1; h < 9; ++h) net.schedule(30 * kMicrosecond + h * 100, &starter, h);
  const uint32_t core_port = net.node(net.switch_node(static_cast<uint32_t>(net.num_switches()) - 1)).ports[0];
  net.set_link_up(core_port, false, 40 * kMicrosecond);
  net.set_link_up(core_port, true, 90 * kMicrosecond);
  net.set_link_rate(net.host(5).port, 0.5, 10 * kMicrosecond);
  net.run_until(150 * kMicrosecond);
  net.flush_stats();

  PortStats sum;
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    const PortStats& s = net.port_stats(p);
    sum.drops += s.drops;
    sum.ecn_marks += s.ecn_marks;
    sum.pauses_sent += s.pauses_sent;
    sum.corruptions += s.corruptions;
    sum.reorders += s.reorders;
    sum.duplicates += s.duplicates;
  }
  std::printf("drops %llu, ecn marks %llu, pauses %llu, corruptions %llu, reorders %llu, dups %llu\n",
              static_cast<unsigned long long>(sum.drops), static_cast<unsigned long long>(sum.ecn_marks),
              static_cast<unsigned long long>(sum.pauses_sent),
              static_cast<unsigned long long>(sum.corruptions),
              static_cast<unsigned long long>(sum.reorders),
              static_cast<unsigned long long>(sum.duplicates));
  hash.add(net.events_processed());
  hash.add(net.events_pending());
  hash.add(static_cast<uint64_t>(net.now()));
  hash.add(net.frames().peak());
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    const PortStats& s = net.port_stats(p);
    for (uint64_t v : {s.tx_frames, s.tx_bytes, s.drops, s.lossless_drops, s.wire_losses,
                       s.corruptions, s.duplicates, s.reorders, s.trims, s.ecn_marks,
                       s.pauses_sent, static_cast<uint64_t>(s.paused_time), s.max_queue_bytes,
                       std::bit_cast<uint64_t>(s.queue_byte_ps), s.corrupted_arrivals,
                       s.damaged_arrivals, s.corrupted_rewrites, s.corrupted_unchecked}) {
      hash.add(v);
    }
  }
  for (const FlowRecord& r : records) {
    for (uint64_t v : {uint64_t{r.src}, uint64_t{r.dst}, r.bytes, static_cast<uint64_t>(r.start),
                       static_cast<uint64_t>(r.finish), r.received, r.sent}) {
      hash.add(v);
    }
  }
  std::printf("fingerprint pfc=%d capacity=%u: 0x%016llx (%llu events)\n", pfc, capacity,
              static_cast<unsigned long long>(hash.h),
              static_cast<unsigned long long>(net.events_processed()));
  return hash.h;
}

// Recorded from the simulator whose events due at one picosecond run in the order of their
// keys (scheduler, then its counter), not of a global scheduling count, and which counts a
// frame caught in flight by a link's death at the receiving port.
TEST(Sim_Fingerprint, LossyFabricFullFramesMatchesTheRecordedRun) {
  EXPECT_EQ(run_fingerprint(false, 4096 + 256), 0xed26efbfe18f5da2ULL);
}

TEST(Sim_Fingerprint, LossyFabricHeadersOnlyMatchesTheRecordedRun) {
  EXPECT_EQ(run_fingerprint(false, 128), 0x0ebfc7a6120084aeULL);
}

TEST(Sim_Fingerprint, CleanLinksMatchesTheRecordedRun) {
  EXPECT_EQ(run_fingerprint(false, 128, false), 0x43432ab2c99becabULL);
}

TEST(Sim_Fingerprint, LosslessFabricMatchesTheRecordedRun) {
  EXPECT_EQ(run_fingerprint(true, 4096 + 256), 0x67ea6b23a5c8f674ULL);
}

}  // namespace
}  // namespace uet::sim
