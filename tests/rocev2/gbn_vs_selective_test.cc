// A/B: the same losses repaired by RoCEv2's go-back-N and by UET's selective retransmission,
// on the fake link and on the simulator, with identical seeds, sizes and loss patterns.
// The numbers are printed for reports; the assertions hold the qualitative contrast.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "sim/network.h"
#include "sim/topology.h"
#include "tests/common/fake_link.h"
#include "tests/common/spray_fabric.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

using testing::FakeLink;
using testing::Verdict;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

struct Result {
  uint64_t lost = 0;
  EndpointStats a;
  Time done = 0;
  bool intact = false;
};

// Data frames of either transport, and their PSN.
bool data_psn(const wire::Decoded& d, uint32_t* psn) {
  if (d.bth != nullptr) {
    if (static_cast<uint8_t>(d.bth->opcode()) >
        static_cast<uint8_t>(wire::RoceOpcode::kRcWriteOnly))
      return false;
    *psn = d.bth->psn();
    return true;
  }
  if (d.pds_type == wire::PdsType::kRudReq) {
    *psn = d.pds_as<wire::PdsRudRod>()->psn();
    return true;
  }
  return false;
}

// A writes `packets` × 4 KB to B; the first transmission of every tenth packet is lost.
Result run_fake(bool roce, uint32_t packets, double gbps) {
  std::unique_ptr<Endpoint> a, b;
  if (roce) {
    RoceConfig c;
    c.local_ip4 = kIpA;
    auto ra = std::move(*RoceEndpoint::create(c));
    c.local_ip4 = kIpB;
    auto rb = std::move(*RoceEndpoint::create(c));
    EXPECT_TRUE(ra->connect_qp(kIpB, 0x100, 0x100, 0, 0).ok());
    EXPECT_TRUE(rb->connect_qp(kIpA, 0x100, 0x100, 0, 0).ok());
    a = std::move(ra);
    b = std::move(rb);
  } else {
    UetConfig c;
    c.local_ip4 = kIpA;
    a = std::move(*UetEndpoint::create(c));
    c.local_ip4 = kIpB;
    b = std::move(*UetEndpoint::create(c));
  }
  std::vector<uint8_t> src(size_t{packets} * 4096), dst(src.size());
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 13 + 5);
  const uint32_t key = *b->register_memory(dst.data(), dst.size());
  FakeLink link(a.get(), b.get());
  link.set_rate_gbps(gbps);
  Result r;
  std::set<uint32_t> seen;
  link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    uint32_t psn = 0;
    if (from != 0 || !data_psn(d, &psn) || !seen.insert(psn).second) return Verdict{};
    if (seen.size() % 10 == 5) {
      ++r.lost;
      return Verdict{0, 0};
    }
    return Verdict{};
  });
  EXPECT_TRUE(a->post_write({1, kIpB, key, 0, src.data(), src.size()}).ok());
  link.run(kSecond);
  std::vector<Completion> c(4);
  c.resize(a->poll_completions(c));
  EXPECT_EQ(c.size(), 1u);
  r.intact = c.size() == 1 && c[0].status == OpStatus::kSuccess && dst == src;
  r.a = a->stats();
  r.done = link.now();
  return r;
}

void print(const char* what, const Result& r) {
  std::printf(
      "[ %-34s ] lost %3llu  resent %4llu  (%.2f per loss)  timeouts %llu\n", what,
      static_cast<unsigned long long>(r.lost),
      static_cast<unsigned long long>(r.a.retransmitted_packets),
      r.lost ? static_cast<double>(r.a.retransmitted_packets) / static_cast<double>(r.lost) : 0.0,
      static_cast<unsigned long long>(r.a.timeouts));
}

TEST(GoBackNVersusSelective_FakeLink, EveryTenthPacketLostOnce) {
  for (double gbps : {0.0, 100.0}) {
    const Result uet = run_fake(false, 200, gbps);
    const Result roce = run_fake(true, 200, gbps);
    print(gbps == 0 ? "UET    all sent at once" : "UET    100 Gb/s link", uet);
    print(gbps == 0 ? "RoCEv2 all sent at once" : "RoCEv2 100 Gb/s link", roce);
    EXPECT_TRUE(uet.intact);
    EXPECT_TRUE(roce.intact);
    EXPECT_EQ(uet.lost, 20u);
    EXPECT_EQ(roce.lost, 20u);
    EXPECT_EQ(uet.a.retransmitted_packets, uet.lost);        // exactly the lost packets
    EXPECT_GT(roce.a.retransmitted_packets, 2 * roce.lost);  // everything after each hole
  }
}

// The simulator: an 8-host leaf-spine permutation with 1 % loss on fabric links, no PFC,
// same seed for both transports. UET runs single-path here too (ev_count 1) and sprayed.
struct SimResult {
  uint64_t lost = 0, retx = 0, data = 0, timeouts = 0;
  Time last_completion = 0;
  bool intact = true;
};

SimResult run_sim(const std::function<std::unique_ptr<Endpoint>(uint32_t h)>& make,
                  const std::function<void(std::vector<std::unique_ptr<Endpoint>>&)>& connect) {
  sim::Network net(testing::spray_network(/*seed=*/17));
  EXPECT_TRUE(testing::build_spray_fabric(net, /*fabric_loss=*/0.01).ok());
  const uint32_t n = 8, shift = 3;
  const size_t bytes = 1 << 20;
  std::vector<std::unique_ptr<Endpoint>> eps;
  std::vector<std::vector<uint8_t>> src(n), dst(n);
  std::vector<uint32_t> keys(n);
  for (uint32_t h = 0; h < n; ++h) {
    eps.push_back(make(h));
    src[h].resize(bytes);
    for (size_t i = 0; i < bytes; ++i) src[h][i] = static_cast<uint8_t>(i * 31 + h);
    dst[h].assign(bytes, 0);
    keys[h] = *eps[h]->register_memory(dst[h].data(), dst[h].size());
  }
  connect(eps);
  for (uint32_t h = 0; h < n; ++h) {
    const uint32_t to = (h + shift) % n;
    EXPECT_TRUE(eps[h]
                    ->post_write({h, sim::Network::host_ip4(to), keys[to], 0, src[h].data(), bytes})
                    .ok());
  }
  for (uint32_t h = 0; h < n; ++h) net.attach(h, eps[h].get());
  SimResult r;
  uint32_t done = 0;
  while (done < n && net.now() < kSecond) {
    net.run_until(net.now() + 2 * kMicrosecond);
    for (uint32_t h = 0; h < n; ++h) {
      Completion c;
      if (eps[h]->poll_completions(std::span(&c, 1)) == 1) {
        ++done;
        r.intact = r.intact && c.status == OpStatus::kSuccess;
        r.last_completion = net.now();
      }
    }
  }
  EXPECT_EQ(done, n);
  for (uint32_t h = 0; h < n; ++h) {
    r.intact = r.intact && dst[(h + shift) % n] == src[h];
    const EndpointStats s = eps[h]->stats();
    r.retx += s.retransmitted_packets;
    r.data += s.data_packets;
    r.timeouts += s.timeouts;
  }
  for (size_t p = 0; p < net.num_ports(); ++p)
    r.lost += net.port_stats(static_cast<uint32_t>(p)).wire_losses;
  return r;
}

void print(const char* what, const SimResult& r) {
  std::printf(
      "[ %-22s ] wire losses %3llu  data %5llu  resent %5llu  timeouts %llu  last done %.1f us\n",
      what, static_cast<unsigned long long>(r.lost), static_cast<unsigned long long>(r.data),
      static_cast<unsigned long long>(r.retx), static_cast<unsigned long long>(r.timeouts),
      static_cast<double>(r.last_completion) / 1e6);
}

TEST(GoBackNVersusSelective_Sim, PermutationWithOnePercentLoss) {
  const auto uet_with = [](uint16_t evs) {
    return [evs](uint32_t h) -> std::unique_ptr<Endpoint> {
      UetConfig c = testing::sim_host_config<UetConfig>(h);
      c.pathsel.ev_count = evs;
      c.seed = h + 1;
      return std::move(*UetEndpoint::create(c));
    };
  };
  const auto no_connect = [](std::vector<std::unique_ptr<Endpoint>>&) {};
  const SimResult uet1 = run_sim(uet_with(1), no_connect);
  const SimResult uet16 = run_sim(uet_with(16), no_connect);
  const SimResult roce = run_sim(
      [](uint32_t h) -> std::unique_ptr<Endpoint> {
        RoceConfig c = testing::sim_host_config<RoceConfig>(h);
        c.ack_timeout_exp = 10;
        c.seed = h + 1;
        return std::move(*RoceEndpoint::create(c));
      },
      [](std::vector<std::unique_ptr<Endpoint>>& eps) {
        const uint32_t n = static_cast<uint32_t>(eps.size());
        for (uint32_t h = 0; h < n; ++h) {
          auto& ep = static_cast<RoceEndpoint&>(*eps[h]);
          for (uint32_t to : {(h + 3) % n, (h + n - 3) % n}) {
            EXPECT_TRUE(
                ep.connect_qp(sim::Network::host_ip4(to), 0x100 + to, 0x100 + h, h, to).ok());
          }
        }
      });
  print("UET single path", uet1);
  print("UET sprayed x16", uet16);
  print("RoCEv2 go-back-N", roce);
  EXPECT_TRUE(uet1.intact);
  EXPECT_TRUE(uet16.intact);
  EXPECT_TRUE(roce.intact);
  EXPECT_GT(roce.retx, roce.lost);
}

}  // namespace
}  // namespace uet
