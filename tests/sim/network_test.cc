// The fabric simulator's core: exact timing, ECMP, ECN, trimming, PFC, failures, determinism.
#include "sim/network.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/topology.h"
#include "sim/udp_app.h"

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

}  // namespace
}  // namespace uet::sim
