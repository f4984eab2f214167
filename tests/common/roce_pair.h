// Two RoCEv2 RC endpoints with one connected QP pair on the fake link
// (tests/common/fake_link.h), the set-up the RoCEv2 engine tests share. Each test keeps the
// values it asserts on (QPNs, first PSNs, timeouts, region sizes) at its call site.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "tests/common/fake_link.h"
#include "transport/rocev2/roce_endpoint.h"

namespace uet::testing {

// A RoCEv2 endpoint at `ip` (host_config) whose local ACK timeout is 4.096 us x
// 2^`ack_timeout_exp`.
inline RoceConfig roce_config(uint32_t ip, uint8_t ack_timeout_exp) {
  RoceConfig c = host_config<RoceConfig>(ip);
  c.ack_timeout_exp = ack_timeout_exp;
  return c;
}

// One RC connection: A's QP `qp_a` sends from `psn_a` to B's QP `qp_b`, which sends from `psn_b`.
struct QpPair {
  uint32_t qp_a = 0, qp_b = 0;
  uint32_t psn_a = 0, psn_b = 0;
};

// A and B (addresses from their configs) connected by `qps`, and the link between them (tests
// that hand frames to the endpoints themselves leave it idle).
struct RocePair {
  RocePair(const RoceConfig& ca, const RoceConfig& cb, const QpPair& qps)
      : a(std::move(*RoceEndpoint::create(ca))), b(std::move(*RoceEndpoint::create(cb))) {
    EXPECT_TRUE(a->connect_qp(cb.local_ip4, qps.qp_a, qps.qp_b, qps.psn_a, qps.psn_b).ok());
    EXPECT_TRUE(b->connect_qp(ca.local_ip4, qps.qp_b, qps.qp_a, qps.psn_b, qps.psn_a).ok());
    link = std::make_unique<FakeLink>(a.get(), b.get());
  }
  std::unique_ptr<RoceEndpoint> a, b;
  std::unique_ptr<FakeLink> link;
};

}  // namespace uet::testing
