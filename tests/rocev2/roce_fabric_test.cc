// The RoCEv2 engine on the simulator (sim/): permutations over PFC and under loss (go-back-N),
// two flows into one host under DCQCN with and without PFC, payloads carried by length, and
// tshark reading what a lossy run put on the wire. The unit tests (roce_*_test.cc) run on the
// fake link alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/network.h"
#include "sim/topology.h"
#include "tests/common/spray_fabric.h"
#include "transport/rocev2/roce_endpoint.h"

namespace uet {
namespace {

struct SimRun {
  uint64_t retx = 0, go_back_n = 0, timeouts = 0, naks = 0, cnps = 0, wire_losses = 0;
  uint64_t lossless_drops = 0, drops = 0, pauses = 0, bytes_resent = 0;
  Time finish = 0;
};

// 2 leaves of 4 hosts, 2 spines: three flows crossing each way over two uplinks, at least two
// share one.
absl::Status build_two_leaves(sim::Network& net, double fabric_loss = 0) {
  return testing::build_two_leaves(net, /*spines=*/2, /*hosts_per_leaf=*/4, fabric_loss);
}

// An 8-host leaf-spine permutation (host h writes to h + 3), one QP per pair.
SimRun permutation(bool pfc, double fabric_loss, size_t bytes, uint32_t frame_capacity = 0,
                   const std::string& pcap_prefix = "") {
  sim::NetworkConfig nc;
  nc.seed = 17;
  nc.switches.pfc.enabled = pfc;
  if (frame_capacity != 0) nc.frame_capacity = frame_capacity;
  sim::Network net(nc);
  EXPECT_TRUE(build_two_leaves(net, fabric_loss).ok());
  const uint32_t n = 8, shift = 3;
  std::vector<std::unique_ptr<RoceEndpoint>> eps;
  std::vector<std::vector<uint8_t>> src(n), dst(n);
  std::vector<uint32_t> keys(n);
  for (uint32_t h = 0; h < n; ++h) {
    RoceConfig c = testing::sim_host_config<RoceConfig>(h);
    c.ack_timeout_exp = 10;  // 4.2 ms
    c.seed = h + 1;
    eps.push_back(std::move(*RoceEndpoint::create(c)));
    src[h].resize(bytes);
    for (size_t i = 0; i < bytes; ++i) src[h][i] = static_cast<uint8_t>(i * 31 + h);
    dst[h].assign(bytes, 0);
    keys[h] = *eps[h]->register_memory(dst[h].data(), dst[h].size());
  }
  // QP 0x100 + peer index on each side: h's QP to `to` is 0x100 + to, and vice versa.
  for (uint32_t h = 0; h < n; ++h) {
    for (uint32_t to : {(h + shift) % n, (h + n - shift) % n}) {
      EXPECT_TRUE(eps[h]
                      ->connect_qp(sim::Network::host_ip4(to), 0x100 + to, 0x100 + h, 1000 * h + to,
                                   1000 * to + h)
                      .ok());
    }
  }
  for (uint32_t h = 0; h < n; ++h) {
    const uint32_t to = (h + shift) % n;
    EXPECT_TRUE(eps[h]
                    ->post_write({h, sim::Network::host_ip4(to), keys[to], 0, src[h].data(), bytes})
                    .ok());
  }
  if (!pcap_prefix.empty()) {  // host 0's NIC port (what it sends) and its ToR port (receives)
    const uint32_t nic = net.host(0).port;
    EXPECT_TRUE(net.tap(nic, pcap_prefix + "-tx.pcap").ok());
    EXPECT_TRUE(net.tap(net.port(nic).peer, pcap_prefix + "-rx.pcap").ok());
  }
  for (uint32_t h = 0; h < n; ++h) net.attach(h, eps[h].get());
  net.run_until(kSecond);
  SimRun r;
  for (uint32_t h = 0; h < n; ++h) {
    std::vector<Completion> c(4);
    c.resize(eps[h]->poll_completions(c));
    EXPECT_EQ(c.size(), 1u) << "host " << h;
    if (!c.empty()) {
      EXPECT_EQ(c[0].status, OpStatus::kSuccess) << "host " << h;
    }
    const uint32_t from = (h + n - shift) % n;
    if (frame_capacity == 0) {
      EXPECT_EQ(dst[h], src[from]) << "host " << h;
    } else {  // full packets travel by length and place nothing; a last packet that fits is real
      const size_t tail = bytes % 4096;
      EXPECT_TRUE(
          std::all_of(dst[h].begin(), dst[h].end() - tail, [](uint8_t x) { return x == 0; }));
      EXPECT_TRUE(std::equal(dst[h].end() - tail, dst[h].end(), src[from].end() - tail));
    }
    const RoceCounters& k = eps[h]->counters();
    r.retx += k.tx_retx;
    r.go_back_n += k.go_back_n;
    r.timeouts += k.timeouts;
    r.naks += k.tx_naks;
    r.cnps += k.tx_cnps;
    r.bytes_resent += k.bytes_resent;
    EXPECT_EQ(k.rx_malformed, 0u) << "host " << h;
  }
  for (size_t i = 0; i < net.num_ports(); ++i) {
    const sim::PortStats& s = net.port_stats(static_cast<uint32_t>(i));
    r.wire_losses += s.wire_losses;
    r.lossless_drops += s.lossless_drops;
    r.drops += s.drops;
    r.pauses += s.pauses_sent;
  }
  r.finish = net.now();
  return r;
}

TEST(RoceEndpoint_Sim, PermutationOverPfcIsIntactWithoutRetransmission) {
  const SimRun r = permutation(/*pfc=*/true, 0, 2 * 1024 * 1024 + 123);
  EXPECT_EQ(r.wire_losses + r.drops + r.lossless_drops, 0u);
  EXPECT_EQ(r.retx, 0u);
  EXPECT_EQ(r.go_back_n, 0u);
  EXPECT_EQ(r.timeouts, 0u);
  // The fabric was congested: PFC paused it and ECN marks drew CNPs.
  EXPECT_GT(r.pauses, 0u);
  EXPECT_GT(r.cnps, 0u);
  std::printf("[ pfc      ] pauses %llu, CNPs %llu, retx %llu\n",
              static_cast<unsigned long long>(r.pauses), static_cast<unsigned long long>(r.cnps),
              static_cast<unsigned long long>(r.retx));
}

TEST(RoceEndpoint_Sim, PermutationWithOnePercentLossIsRepairedByGoBackN) {
  const SimRun r = permutation(/*pfc=*/false, 0.01, 512 * 1024 + 123);
  EXPECT_GT(r.wire_losses, 0u);
  EXPECT_GT(r.naks, 0u);
  EXPECT_GT(r.go_back_n, 0u);
  // Go-back-N resends more than was lost.
  EXPECT_GT(r.retx, r.wire_losses);
  std::printf(
      "[ 1%% loss  ] wire losses %llu, NAKs %llu, go-back-N %llu, timeouts %llu, "
      "retx %llu (%llu bytes)\n",
      static_cast<unsigned long long>(r.wire_losses), static_cast<unsigned long long>(r.naks),
      static_cast<unsigned long long>(r.go_back_n), static_cast<unsigned long long>(r.timeouts),
      static_cast<unsigned long long>(r.retx), static_cast<unsigned long long>(r.bytes_resent));
}

// Two flows into one host: hosts 4 and 5 (the other leaf of build_two_leaves) write into
// host 0, the second starting 100 us after the first. RC places in order, so what a flow has
// delivered is the first byte of its buffer still zero.
struct TwoIntoOne {
  TwoIntoOne(const sim::NetworkConfig& nc, const DcqcnConfig& dcqcn, size_t bytes)
      : net(nc), src(bytes, 0xA5), dst(2, std::vector<uint8_t>(bytes, 0)) {
    EXPECT_TRUE(build_two_leaves(net).ok());
    for (uint32_t h = 0; h < 8; ++h) {
      RoceConfig c = testing::sim_host_config<RoceConfig>(h);
      c.dcqcn = dcqcn;
      c.seed = h + 1;
      eps.push_back(std::move(*RoceEndpoint::create(c)));
      net.attach(h, eps[h].get());
    }
    for (auto& d : dst) keys.push_back(*eps[0]->register_memory(d.data(), d.size()));
    for (uint32_t h : {4u, 5u}) {
      EXPECT_TRUE(eps[h]->connect_qp(sim::Network::host_ip4(0), 0x100, 0x100 + h, 1000 * h, h).ok());
      EXPECT_TRUE(eps[0]->connect_qp(sim::Network::host_ip4(h), 0x100 + h, 0x100, h, 1000 * h).ok());
    }
    post(0);
    net.run_until(100 * kMicrosecond);
    post(1);
  }
  void post(uint32_t i) {
    const uint32_t h = 4 + i;
    EXPECT_TRUE(eps[h]->post_write({i, sim::Network::host_ip4(0), keys[i], 0, src.data(), src.size()}).ok());
    net.kick(h);
  }
  double placed(uint32_t i) const {
    return static_cast<double>(std::find(dst[i].begin(), dst[i].end(), 0) - dst[i].begin());
  }
  // The longest queue any port has held, drops and PFC pauses summed over all ports.
  sim::PortStats fabric() const {
    sim::PortStats t;
    for (size_t i = 0; i < net.num_ports(); ++i) {
      const sim::PortStats& s = net.port_stats(static_cast<uint32_t>(i));
      t.max_queue_bytes = std::max(t.max_queue_bytes, s.max_queue_bytes);
      t.drops += s.drops;
      t.pauses_sent += s.pauses_sent;
    }
    return t;
  }
  sim::Network net;
  std::vector<uint8_t> src;
  std::vector<std::vector<uint8_t>> dst;
  std::vector<std::unique_ptr<RoceEndpoint>> eps;
  std::vector<uint32_t> keys;
};

// The DCQCN tests' fabric: seed 5, PFC on or off.
sim::NetworkConfig dcqcn_fabric(bool pfc) {
  sim::NetworkConfig nc;
  nc.seed = 5;
  nc.switches.pfc.enabled = pfc;
  return nc;
}

// Two flows sharing a bottleneck converge to within 10 % of the fair share, over a
// lossless (PFC) fabric with ECN as RoCEv2 is deployed: what each placed between 400 and
// 800 us must be within 10 % of half of both. This fairness is PFC's as much as DCQCN's: with
// the fabric's defaults an ingress pauses its upstream at 64 KiB, below ECN's 100 KiB, so
// few frames are marked, and with DCQCN disabled the shares are as fair (1.00 / 1.00). The
// next test checks DCQCN without PFC.
TEST(RoceEndpoint_Sim, TwoFlowsIntoOneHostShareFairlyOverPfcUnderDcqcn) {
  for (const char* preset : {"connectx", "dcqcn-ns3", "htsim"}) {
    SCOPED_TRACE(preset);
    constexpr size_t kBytes = 8 << 20;
    TwoIntoOne t(dcqcn_fabric(/*pfc=*/true), *DcqcnConfig::preset(preset, 100), kBytes);
    t.net.run_until(400 * kMicrosecond);
    const double a0 = t.placed(0), b0 = t.placed(1);
    t.net.run_until(800 * kMicrosecond);
    const double a = t.placed(0) - a0, b = t.placed(1) - b0;
    ASSERT_LT(t.placed(0), static_cast<double>(kBytes)) << "both flows still sending";
    ASSERT_LT(t.placed(1), static_cast<double>(kBytes));
    const double fair = (a + b) / 2;
    std::printf("[ dcqcn %-9s ] 400-800 us: %.2f / %.2f MB, shares %.3f / %.3f of fair\n", preset,
                a / 1e6, b / 1e6, a / fair, b / fair);
    // Expect: the link is used (more than 80 % of 100 Gb/s) and shared within 10 %.
    EXPECT_GT(a + b, 0.8 * 12.5e9 * 400e-6);
    EXPECT_NEAR(a / fair, 1.0, 0.10);
    EXPECT_NEAR(b / fair, 1.0, 0.10);
  }
}

// DCQCN on its own: no PFC and switch buffers deep enough (64 MiB) that nothing is dropped,
// so only DCQCN stands between two line-rate senders and a queue that grows at 100 Gb/s (25
// MB in 2 ms, as the disabled run shows). Under the htsim and DCQCN-authors' profiles the
// CNPs hold every queue below 1 MiB while both flows keep sending. (The "connectx" profile
// is left out: with the 50 us CNP interval its byte-counter recovery undoes each cut within
// ~30 us and the queue grows as if DCQCN were off; cc/dcqcn.h says more.)
TEST(RoceEndpoint_Sim, DcqcnAloneHoldsTheQueueOfTwoFlowsIntoOneHost) {
  for (const char* preset : {"dcqcn-ns3", "htsim", "off"}) {
    SCOPED_TRACE(preset);
    sim::NetworkConfig nc = dcqcn_fabric(/*pfc=*/false);
    nc.switches.buffer_bytes = 64 << 20;
    DcqcnConfig dcqcn = *DcqcnConfig::preset(preset == std::string("off") ? "htsim" : preset, 100);
    dcqcn.enabled = preset != std::string("off");
    constexpr size_t kBytes = 32 << 20;
    TwoIntoOne t(nc, dcqcn, kBytes);
    t.net.run_until(1 * kMillisecond);
    const double a0 = t.placed(0), b0 = t.placed(1);
    t.net.run_until(2 * kMillisecond);
    const double a = t.placed(0) - a0, b = t.placed(1) - b0;
    const sim::PortStats f = t.fabric();
    const uint64_t cnps = t.eps[4]->counters().rx_cnps + t.eps[5]->counters().rx_cnps;
    std::printf("[ dcqcn %-9s ] 1-2 ms: %.1f / %.1f Gb/s, max queue %llu KiB, %llu CNPs\n", preset,
                a * 8 / 1e6, b * 8 / 1e6, static_cast<unsigned long long>(f.max_queue_bytes / 1024),
                static_cast<unsigned long long>(cnps));
    ASSERT_EQ(f.drops, 0u);
    EXPECT_GT(cnps, 0u);
    if (!dcqcn.enabled) {
      // Expect: without DCQCN the queue holds the excess of two line-rate senders.
      EXPECT_GT(f.max_queue_bytes, 16u << 20);
      continue;
    }
    // Expect: DCQCN keeps every queue under 1 MiB, and each flow above 10 Gb/s.
    EXPECT_LT(f.max_queue_bytes, 1u << 20);
    EXPECT_GT(a * 8 / 1e6, 10.0);
    EXPECT_GT(b * 8 / 1e6, 10.0);
  }
}

// At scale the simulator stores headers only and carries payloads by length: the engine
// builds header-only frames (no ICRC) and the responder accounts lengths without placing.
TEST(RoceEndpoint_Sim, PayloadsCarriedByLengthComplete) {
  const SimRun r = permutation(/*pfc=*/true, 0, 256 * 1024 + 5, /*frame_capacity=*/128);
  EXPECT_EQ(r.retx, 0u);
}

// Wireshark's own InfiniBand dissector (tshark from Debian) reads what a lossy, ECN-marked run
// put on the wire: writes, ACKs, NAKs and CNPs, with no malformed-packet or expert warnings.
TEST(RoceEndpoint_Tshark, SimulatedFramesDecodeInWiresharkWithoutWarnings) {
  if (std::system("command -v tshark > /dev/null 2>&1") != 0) GTEST_SKIP() << "no tshark";
  const std::string dir = ::testing::TempDir() + "roce_tshark";
  std::filesystem::create_directories(dir);
  const SimRun r = permutation(/*pfc=*/false, 0.01, 512 * 1024 + 123, 0, dir + "/h0");
  ASSERT_GT(r.naks, 0u);
  for (const char* side : {"tx", "rx"}) {
    const std::string pcap = dir + "/h0-" + side + ".pcap", out = dir + "/" + side + ".txt";
    const std::string cmd = "WIRESHARK_CONFIG_DIR=" + dir + " tshark -n -r " + pcap +
                            " -T fields -E separator=, -e infiniband.bth.opcode -e _ws.malformed"
                            " -e _ws.expert > " +
                            out + " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(out);
    std::map<std::string, int> opcodes;
    std::string line;
    int frames = 0;
    while (std::getline(in, line)) {
      ++frames;
      std::stringstream ss(line);
      std::string op, malformed, expert;
      std::getline(ss, op, ',');
      std::getline(ss, malformed, ',');
      std::getline(ss, expert, ',');
      ++opcodes[op];
      EXPECT_TRUE(malformed.empty() && expert.empty())
          << side << " frame " << frames << ": " << line;
    }
    EXPECT_GT(frames, 100) << side;
    EXPECT_GT(opcodes["17"], 0) << side << ": ACKs";  // 0x11
    std::printf("[ tshark %s ] %d frames:", side, frames);
    for (const auto& [op, count] : opcodes) std::printf(" opcode %s x%d", op.c_str(), count);
    std::printf("\n");
  }
}

}  // namespace
}  // namespace uet
