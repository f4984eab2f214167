// What the DPDK backend's files share (dpdk_io.h is the class): the port-wide state its queues
// share, set up once by the control path (dpdk_setup.cc) and read by the data path
// (dpdk_io.cc), and the layout both sides agree on. DPDK's types are only named here; the
// .cc files include DPDK's headers.
//
// Ownership: the Port is created by DpdkIo::create_queues() on the main thread and shared by
// the port's DpdkIo (one per queue, one lcore each); it is read-only once started, but for the
// pool and the inbox rings (DPDK's lock-free structures) and each queue's own reference count.
// The last DpdkIo destroyed (after every lcore has stopped) destroys it.
#pragma once

// Only dpdk-io/'s DPDK target defines the macro.
#ifndef UET_PRIVATE_DPDK_IO_DPDK
#error "dpdk-io/dpdk_internal.h is private to dpdk-io's DPDK backend (use dpdk-io/dpdk_io.h)"
#endif

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dpdk-io/dpdk_io.h"

struct rte_eth_dev_info;
struct rte_flow;

namespace uet::io {
namespace dpdk_detail {

// Bytes a small mbuf of the zero-copy pool holds after a referenced payload; longer tails are
// gathered into the frame instead.
inline constexpr uint32_t kExtTailRoom = 64;

}  // namespace dpdk_detail

// The port-wide state, shared by the port's queues.
struct DpdkIo::Port {
  uint16_t port_id = 0;
  rte_mempool* pool = nullptr;
  bool started = false;
  std::vector<rte_ring*> inbox;  // per queue, when there is more than one
  std::vector<rte_flow*> flows;
  std::string steering = "single queue";
  wire::MacAddr mac{};
  uint32_t mtu = 0, max_frame = 0;
  Offloads offloads;
  uint32_t rx_posted = 0;  // mbufs the device holds for receiving from its start (NICs, tap)
  // Zero-copy transmit: small mbufs that carry a referenced payload (as an external buffer,
  // its shared info in their private area) or the bytes after it; null when the port cannot
  // gather. Per queue, the referenced payloads a device still holds (the free callback runs
  // on whatever frees the mbuf, so the counts live here, past every DpdkIo).
  rte_mempool* ext_pool = nullptr;
  std::unique_ptr<uint64_t[]> references;

  // Undoes what start() did, however far it got: flow rules, the port, the rings, the pools.
  ~Port();

  // Configures and starts port_id for config (dpdk_setup.cc); on an error ~Port cleans up.
  absl::Status start(const DpdkIoConfig& config);

 private:
  absl::Status create_pools(const DpdkIoConfig& config, const rte_eth_dev_info& info, int socket);
  absl::Status create_inboxes(uint16_t queues, int socket);
  absl::Status configure(const DpdkIoConfig& config, const rte_eth_dev_info& info, int socket);
  absl::Status set_mac(const DpdkIoConfig& config);
  void steer(const DpdkIoConfig& config, const rte_eth_dev_info& info);
  // One rule per queue: ETH / IPV4 dst == base + q -> QUEUE q. Returns "" or why the PMD
  // refused (then no rule is left in place).
  std::string add_flow_rules(uint32_t base_ip4, uint16_t queues);
};

}  // namespace uet::io
