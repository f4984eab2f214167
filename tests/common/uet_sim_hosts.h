// UET endpoints on the hosts of a simulated fabric, each with one region to be written: the
// set-up of the engine tests that drive many peers through sim::Network.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "sim/network.h"
#include "tests/common/spray_fabric.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::testing {

struct UetSimHosts {
  // Hosts 0..n-1 of `net`: host h's endpoint from sim_host_config with `configure(h, c)`
  // applied, its 64 KiB region of zeros registered as key 1, attached to the host.
  UetSimHosts(sim::Network& net, uint32_t n,
              const std::function<void(uint32_t h, UetConfig& c)>& configure)
      : mem(n, std::vector<uint8_t>(1 << 16, 0)) {
    for (uint32_t h = 0; h < n; ++h) {
      UetConfig c = sim_host_config<UetConfig>(h);
      configure(h, c);
      eps.push_back(std::move(*UetEndpoint::create(c)));
      EXPECT_EQ(*eps[h]->register_memory(mem[h].data(), mem[h].size()), 1u);
      net.attach(h, eps[h].get());
    }
  }

  std::vector<std::unique_ptr<UetEndpoint>> eps;
  std::vector<std::vector<uint8_t>> mem;
};

}  // namespace uet::testing
