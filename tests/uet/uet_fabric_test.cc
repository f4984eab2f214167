// The UET engine on the simulator (sim/): a permutation under loss with spraying (RUD and ROD),
// PDC tables cycling through short-lived peers, closed PDCs lending their windows, and RCCC's
// incast and fair shares. The engine's unit tests (uet_*_test.cc) run on the fake link alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "sim/network.h"
#include "sim/topology.h"
#include "tests/common/payload.h"
#include "tests/common/spray_fabric.h"
#include "tests/common/uet_sim_hosts.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

// 16 hosts on two leaves of 8 (2 spines) whose PDCs close after 20 us idle: host h seeded
// `seed_base` + h, with max_pdcs(h) PDCs.
testing::UetSimHosts idle_closing_hosts(sim::Network& net, uint64_t seed_base,
                                        uint32_t (*max_pdcs)(uint32_t)) {
  EXPECT_TRUE(testing::build_two_leaves(net, /*spines=*/2, /*hosts_per_leaf=*/8).ok());
  return testing::UetSimHosts(net, 16, [&](uint32_t h, UetConfig& c) {
    c.idle_timeout = 20 * kMicrosecond;
    c.seed = seed_base + h;
    c.max_pdcs = max_pdcs(h);
  });
}

// One sender writes to 14 peers one at a time, three rounds, each PDC closing when idle: ids
// are fresh until max_pdcs (42 are used), but the windows are parked and reused, so memory
// follows the two PDCs live at once, not the 42 ids.
TEST(UetMemory_Pdc, ClosedPdcsLendTheirWindowsToNewOnes) {
  sim::Network net(testing::seeded_network(5));
  const uint32_t n = 16;
  testing::UetSimHosts hosts = idle_closing_hosts(net, 40, [](uint32_t) { return 64u; });
  ASSERT_FALSE(HasFailure());
  auto& eps = hosts.eps;
  std::vector<uint8_t> src(4096, 0x3C);
  uint64_t ok = 0, posted = 0;
  size_t peak_live = 0;
  auto poll = [&] {
    Completion c;
    while (eps[1]->poll_completions(std::span(&c, 1)) == 1) ok += c.status == OpStatus::kSuccess;
    peak_live = std::max(peak_live, eps[1]->pdcs_in_use());
  };
  for (int round = 0; round < 3; ++round) {
    for (uint32_t to = 2; to < n; ++to) {
      while (eps[1]->pdcs_in_use() >= 2) {
        net.run_until(net.now() + kMicrosecond);
        poll();
      }
      ASSERT_TRUE(
          eps[1]->post_write({to, sim::Network::host_ip4(to), 1, 0, src.data(), 4096}).ok());
      ++posted;
      net.kick(1);
    }
  }
  for (int i = 0; i < 2000 && eps[1]->pdcs_in_use() > 0; ++i) {
    net.run_until(net.now() + 5 * kMicrosecond);
    poll();
  }
  EXPECT_EQ(ok, posted);
  EXPECT_EQ(eps[1]->pdcs_in_use(), 0u);
  // Fresh ids first, as the FIFO of ids wants: 42 used, the table grown in chunks to 64.
  EXPECT_EQ(eps[1]->pdcs_allocated(), 64u);
  // Expect: an initiator's window is 256 slots of 40 bytes; parked windows are reused, so
  // at most peak_live (+ the spare being handed on) of them exist, beside 42 PDCs' state.
  const size_t window = 256 * 40;
  std::printf("42 PDC ids, %zu live at most: %zu bytes\n", peak_live, eps[1]->memory_bytes());
  EXPECT_LE(peak_live, 2u);
  EXPECT_LT(eps[1]->memory_bytes(), (peak_live + 1) * (window + 4096) + 64 * 2048);
}

TEST(UetEndpoint_Sim, PermutationWithLossAndSprayingDeliversEveryByteOnce) {
  sim::Network net(testing::spray_network(/*seed=*/17));
  ASSERT_TRUE(testing::build_spray_fabric(net, /*fabric_loss=*/0.01).ok());
  const uint32_t n = 8;
  std::vector<std::unique_ptr<UetEndpoint>> eps;
  std::vector<std::vector<uint8_t>> src(n), dst(n);
  std::vector<uint32_t> keys(n);
  for (uint32_t h = 0; h < n; ++h) {
    UetConfig c = testing::sim_host_config<UetConfig>(h);
    c.pathsel.ev_count = 16;  // spray
    c.seed = h + 1;
    eps.push_back(std::move(*UetEndpoint::create(c)));
    src[h].resize(512 * 1024 + 123);
    for (size_t i = 0; i < src[h].size(); ++i) src[h][i] = static_cast<uint8_t>(i * 31 + h);
    dst[h].assign(src[h].size(), 0);
    keys[h] = *eps[h]->register_memory(dst[h].data(), dst[h].size());
  }
  for (uint32_t h = 0; h < n; ++h) {
    const uint32_t to = (h + 3) % n;
    ASSERT_TRUE(eps[h]->post_write({h, sim::Network::host_ip4(to), keys[to], 0, src[h].data(),
                                    src[h].size()}).ok());
  }
  for (uint32_t h = 0; h < n; ++h) net.attach(h, eps[h].get());
  net.run_until(kSecond);
  uint64_t retx = 0;
  for (uint32_t h = 0; h < n; ++h) {
    std::vector<Completion> c(4);
    c.resize(eps[h]->poll_completions(c));
    ASSERT_EQ(c.size(), 1u) << "host " << h;
    EXPECT_EQ(c[0].status, OpStatus::kSuccess) << "host " << h;
    const uint32_t from = (h + n - 3) % n;
    EXPECT_EQ(dst[h], src[from]) << "host " << h;
    retx += eps[h]->counters().tx_retx;
  }
  uint64_t lost = 0;
  for (size_t p = 0; p < net.num_ports(); ++p) {
    lost += net.port_stats(static_cast<uint32_t>(p)).wire_losses;
  }
  EXPECT_GT(lost, 0u);
  EXPECT_GE(retx, 1u);
}

// Many short-lived peers through small tables on the simulator: one target with max_pdcs 4
// is written by 15 senders in waves of 4 (each wave's PDCs close before the next opens), and
// one sender with max_pdcs 2 writes to every other host in turn. Every write succeeds and
// every table drains to 0.
TEST(UetPdc_Sim, ShortLivedPeersCycleThroughSmallPdcTables) {
  sim::Network net(testing::seeded_network(3));
  const uint32_t n = 16;
  testing::UetSimHosts hosts = idle_closing_hosts(net, 100, [](uint32_t h) -> uint32_t {
    return h == 0 ? 4 : h == 1 ? 2 : 16;
  });
  ASSERT_FALSE(HasFailure());
  auto& eps = hosts.eps;
  std::vector<uint8_t> src(1 << 14, 0x77);
  uint64_t ok = 0, posted = 0;
  size_t peak0 = 0, peak1 = 0;
  auto poll = [&] {
    for (uint32_t h = 0; h < n; ++h) {
      Completion c;
      while (eps[h]->poll_completions(std::span(&c, 1)) == 1) ok += c.status == OpStatus::kSuccess;
    }
    peak0 = std::max(peak0, eps[0]->pdcs_in_use());
    peak1 = std::max(peak1, eps[1]->pdcs_in_use());
  };
  auto settle = [&] {  // until every PDC in the fabric is closed
    for (int i = 0; i < 2000; ++i) {
      net.run_until(net.now() + 5 * kMicrosecond);
      poll();
      bool any = false;
      for (auto& e : eps) any = any || e->pdcs_in_use() > 0;
      if (!any) return;
    }
    ADD_FAILURE() << "PDCs did not drain";
  };
  // Host 1 (max_pdcs 2) to hosts 2..15, one at a time: each opens a PDC, the previous closes.
  for (uint32_t to = 2; to < n; ++to) {
    while (eps[1]->pdcs_in_use() >= 2) {
      net.run_until(net.now() + kMicrosecond);
      poll();
    }
    ASSERT_TRUE(eps[1]->post_write({to, sim::Network::host_ip4(to), 1, 0, src.data(), 4096}).ok());
    ++posted;
    net.kick(1);
  }
  settle();
  // Hosts 1..15 to host 0 (max_pdcs 4) in waves of 4, three rounds.
  for (int round = 0; round < 3; ++round) {
    for (uint32_t first = 1; first < n; first += 4) {
      for (uint32_t h = first; h < std::min(first + 4, n); ++h) {
        ASSERT_TRUE(
            eps[h]->post_write({h, sim::Network::host_ip4(0), 1, 4096 * (h % 8), src.data(), 4096}).ok());
        ++posted;
        net.kick(h);
      }
      settle();
    }
  }
  EXPECT_EQ(ok, posted);
  EXPECT_LE(peak0, 4u);
  EXPECT_LE(peak1, 2u);
  EXPECT_EQ(eps[0]->counters().rx_no_pdc_avail, 0u);
  EXPECT_EQ(eps[0]->counters().pdcs_closed, 45u);
  for (uint32_t h = 0; h < n; ++h) EXPECT_EQ(eps[h]->pdcs_in_use(), 0u) << h;
}

struct SimRun {
  bool intact = true;
  bool in_order = true;
  size_t worst_late = 0;
  Time finish = 0;
  uint64_t retx = 0, lost = 0, staged = 0;
};

// 8 hosts on a leaf-spine with 1 % random loss on fabric links and 16 sprayed EVs (RUD; ROD
// keeps one EV): a permutation, 8 WRITEs of 64 KiB per host into consecutive chunks.
SimRun run_permutation(DeliveryMode mode, double loss) {
  sim::Network net(testing::spray_network(/*seed=*/23));
  EXPECT_TRUE(testing::build_spray_fabric(net, loss).ok());
  const uint32_t n = 8, ops = 8;
  const size_t op_len = 64 * 1024;
  std::vector<std::unique_ptr<UetEndpoint>> eps;
  std::vector<std::vector<uint8_t>> src(n), dst(n);
  std::vector<uint32_t> keys(n);
  for (uint32_t h = 0; h < n; ++h) {
    UetConfig c = testing::sim_host_config<UetConfig>(h);
    c.pathsel.ev_count = 16;
    c.seed = h + 1;
    eps.push_back(std::move(*UetEndpoint::create(c)));
    src[h] = testing::nonzero_pattern(ops * op_len, h + 100);
    dst[h].assign(src[h].size(), 0);
    keys[h] = *eps[h]->register_memory(dst[h].data(), dst[h].size());
  }
  for (uint32_t h = 0; h < n; ++h) {
    const uint32_t to = (h + 3) % n;
    for (uint32_t k = 0; k < ops; ++k) {
      WriteRequest wr{k,          sim::Network::host_ip4(to), keys[to],
                      k * op_len, src[h].data() + k * op_len, op_len,
                      mode};
      EXPECT_TRUE(eps[h]->post_write(wr).ok());
    }
  }
  for (uint32_t h = 0; h < n; ++h) net.attach(h, eps[h].get());
  SimRun r;
  std::vector<uint32_t> done(n, 0);
  for (Time t = 2 * kMicrosecond; t <= 100 * kMillisecond && r.finish == 0; t += 2 * kMicrosecond) {
    net.run_until(t);
    for (uint32_t h = 0; h < n; ++h) {
      r.worst_late = std::max(r.worst_late, testing::out_of_order_chunks(dst[h], 4096));
      std::vector<Completion> c(16);
      c.resize(eps[h]->poll_completions(c));
      for (const Completion& x : c) {
        if (x.wr_id != done[h] || x.status != OpStatus::kSuccess) r.in_order = false;
        ++done[h];
      }
    }
    if (std::all_of(done.begin(), done.end(), [&](uint32_t d) { return d == ops; })) {
      r.finish = t;
    }
  }
  for (uint32_t h = 0; h < n; ++h) {
    const uint32_t from = (h + n - 3) % n;
    if (dst[h] != src[from]) r.intact = false;
    r.retx += eps[h]->counters().tx_retx;
    r.staged += eps[h]->counters().rod_staged;
  }
  for (size_t p = 0; p < net.num_ports(); ++p) {
    r.lost += net.port_stats(static_cast<uint32_t>(p)).wire_losses;
  }
  return r;
}

// Expect: every byte exactly once for both; ROD places in PSN order at every sampled moment.
// The finishing times are printed for comparison (aggregate goodput = 8 x 512 KiB / time).
class UetModes_Sim : public ::testing::TestWithParam<double> {};

TEST_P(UetModes_Sim, RudAndRodUnderLossAndSprayingDeliverEveryByteRodInOrder) {
  const double loss = GetParam();
  const SimRun rud = run_permutation(DeliveryMode::kRud, loss);
  const SimRun rod = run_permutation(DeliveryMode::kRod, loss);
  for (const SimRun* r : {&rud, &rod}) {
    EXPECT_TRUE(r->intact);
    EXPECT_TRUE(r->in_order);
    EXPECT_GT(r->finish, 0);
    EXPECT_GT(r->lost, 0u);
    EXPECT_GT(r->retx, 0u);
  }
  EXPECT_EQ(rod.worst_late, 0u);
  EXPECT_GT(rod.staged, 0u);
  const double bits = 8.0 * 8 * 8 * 64 * 1024;
  std::printf(
      "permutation 8 x 512 KiB, %.0f%% loss: RUD %.1f us (%.1f Gb/s), ROD %.1f us "
      "(%.1f Gb/s)\n",
      loss * 100, static_cast<double>(rud.finish) / kMicrosecond,
      bits / (static_cast<double>(rud.finish) / kSecond) / 1e9,
      static_cast<double>(rod.finish) / kMicrosecond,
      bits / (static_cast<double>(rod.finish) / kSecond) / 1e9);
}

INSTANTIATE_TEST_SUITE_P(Loss, UetModes_Sim, ::testing::Values(0.01, 0.05), [](const auto& tp) {
  return tp.param < 0.02 ? "OnePercent" : "FivePercent";
});

struct Flow {
  uint32_t src, dst;
  uint64_t bytes;
};

struct Result {
  std::vector<Time> fct;  // per flow, from t = 0
  bool ok = true;
  uint64_t trims = 0, timeouts = 0, credit_req = 0;
};

// Leaf-spine: 2 leaves x 8 hosts, 2 spines, 100 Gb/s, 500 ns links; every flow starts at 0.
Result run_flows(const std::vector<Flow>& flows, CcMode cc) {
  sim::NetworkConfig nc;
  nc.seed = 11;
  nc.frame_capacity = 512;  // payloads by length: this is about timing
  sim::Network net(nc);
  sim::LeafSpineConfig ls;
  ls.leaves = 2;
  ls.spines = 2;
  ls.hosts_per_leaf = 8;
  EXPECT_TRUE(sim::build_leaf_spine(net, ls).ok());
  constexpr uint32_t kHosts = 16;
  uint64_t most = 1;
  for (const Flow& f : flows) most = std::max(most, f.bytes);
  std::vector<uint8_t> src(most), dst(most);
  std::vector<std::unique_ptr<UetEndpoint>> eps;
  for (uint32_t h = 0; h < kHosts; ++h) {
    UetConfig c = testing::sim_host_config<UetConfig>(h);
    c.cc = cc;
    c.pathsel.ev_count = 16;
    c.pathsel.algorithm = pathsel::Algorithm::kReps;
    c.base_rtt = 8 * 500 * kNanosecond + 4 * 340 * kNanosecond + kMicrosecond;  // as ab_runner
    c.seed = 1000003 + h;
    eps.push_back(std::move(*UetEndpoint::create(c)));
    EXPECT_EQ(*eps[h]->register_memory(dst.data(), dst.size()), 1u);
    net.attach(h, eps[h].get());
  }
  for (uint32_t i = 0; i < flows.size(); ++i) {
    const Flow& f = flows[i];
    EXPECT_TRUE(eps[f.src]
                    ->post_write({i, sim::Network::host_ip4(f.dst), 1, 0, src.data(), f.bytes})
                    .ok());
    net.kick(f.src);
  }
  Result r;
  r.fct.assign(flows.size(), kNever);
  size_t done = 0;
  while (done < flows.size() && net.now() < 50 * kMillisecond) {
    net.run_until(net.now() + kMicrosecond);
    for (uint32_t h = 0; h < kHosts; ++h) {
      Completion c;
      while (eps[h]->poll_completions(std::span(&c, 1)) == 1) {
        ++done;
        r.ok = r.ok && c.status == OpStatus::kSuccess;
        r.fct[c.wr_id] = net.now();
      }
    }
  }
  r.ok = r.ok && done == flows.size();
  for (uint32_t h = 0; h < kHosts; ++h) {
    r.timeouts += eps[h]->counters().timeouts;
    r.credit_req += eps[h]->counters().tx_credit_req;
  }
  for (uint32_t p = 0; p < net.num_ports(); ++p) r.trims += net.port(p).stats.trims;
  return r;
}

// Ideal incast (the definition): every payload byte at the receiver's line rate plus
// one base RTT (headers not counted: they are part of what RCCC must fit in the 10 %).
double ideal_us(uint64_t total_payload) {
  return static_cast<double>(total_payload) * 8 / 100e3 + 7.4;  // 100 Gb/s; base RTT ~7.4 us
}

TEST(UetRccc_Sim, IncastEightToOneFinishesFairlyNearTheIdeal) {
  constexpr uint64_t kBytes = 2 << 20;
  std::vector<Flow> flows;
  for (uint32_t s = 1; s <= 8; ++s) flows.push_back({s + 7, 0, kBytes});  // 8..15 -> host 0
  const double ideal = ideal_us(8 * kBytes);
  for (CcMode cc : {CcMode::kNscc, CcMode::kRccc, CcMode::kNsccRccc}) {
    const Result r = run_flows(flows, cc);
    ASSERT_TRUE(r.ok) << to_string(cc);
    const auto [lo, hi] = std::minmax_element(r.fct.begin(), r.fct.end());
    const double last = static_cast<double>(*hi) / kMicrosecond;
    const double first = static_cast<double>(*lo) / kMicrosecond;
    std::printf("[ incast 8x2MB %-9s ] last %.1f us = %.3f x ideal %.1f us; fastest/slowest %.3f; "
                "trims %lu timeouts %lu credit_req %lu\n",
                to_string(cc), last, last / ideal, ideal, first / last, r.trims, r.timeouts,
                r.credit_req);
    if (cc == CcMode::kNscc) continue;  // reported for comparison
    // Expect (issue): with RCCC the last completion within 1.10x of the ideal and the fastest
    // sender within 10 % of the slowest.
    EXPECT_LE(last, 1.10 * ideal) << to_string(cc);
    EXPECT_GE(first, 0.90 * last) << to_string(cc);
  }
}

TEST(UetRccc_Sim, TwoFlowsSharingTheReceiversLinkEachGetAFairShare) {
  // Two equal writes into host 0 from another leaf, started together. Over [0, first finish]
  // the later flow got bytes - (its lead after that) x line rate; each flow's share of what
  // both got in that interval must be within 10 % of half.
  constexpr uint64_t kBytes = 4 << 20;
  const std::vector<Flow> flows = {{8, 0, kBytes}, {9, 0, kBytes}};
  for (CcMode cc : {CcMode::kNscc, CcMode::kRccc, CcMode::kNsccRccc}) {
    const Result r = run_flows(flows, cc);
    ASSERT_TRUE(r.ok) << to_string(cc);
    const double t1 = static_cast<double>(std::min(r.fct[0], r.fct[1]));
    const double t2 = static_cast<double>(std::max(r.fct[0], r.fct[1]));
    const double rate = 2.0 * kBytes / t2;  // bytes per ps both flows achieved together
    const double later = static_cast<double>(kBytes) - (t2 - t1) * rate;
    const double fair = (static_cast<double>(kBytes) + later) / 2;
    std::printf("[ 2 flows %-9s ] finish %.1f / %.1f us; shares %.3f / %.3f of fair\n",
                to_string(cc), t1 / kMicrosecond, t2 / kMicrosecond, kBytes / fair, later / fair);
    // Expect: each within 10 % of the fair share over the interval both were sending.
    EXPECT_LE(static_cast<double>(kBytes), 1.10 * fair) << to_string(cc);
    EXPECT_GE(later, 0.90 * fair) << to_string(cc);
  }
}

}  // namespace
}  // namespace uet
