// The EAL the DPDK tests run in: one process, no hugepages, PCI or telemetry, and two memif
// ports joined through a socket of their own (port 0 the server, port 1 the client).
#pragma once

#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "dpdk-io/dpdk_io.h"

namespace uet::testing {

// The socket a test's memif pair meets on, named after `program` and the pid so that suites
// run side by side do not meet; the test unlinks it when done.
inline std::string memif_socket(const std::string& program) {
  return "/tmp/uet_" + program + "_" + std::to_string(getpid()) + ".sock";
}

// The EAL of process `program` on lcores `lcores` (its -l list), its memif pair on `sock`.
inline absl::StatusOr<std::unique_ptr<io::DpdkEal>> memif_pair_eal(const std::string& program,
                                                                   const std::string& lcores,
                                                                   const std::string& sock) {
  const std::string vdev = ",socket=" + sock + ",socket-abstract=no,bsize=9216";
  return io::DpdkEal::init({program, "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
                            "--no-telemetry", "-l", lcores, "--log-level=lib.eal:error",
                            "--vdev=net_memif0,role=server" + vdev,
                            "--vdev=net_memif1,role=client" + vdev});
}

// The configurations of a pair test's two ports: port 0 (memif's server) at `a`, port 1 at `b`,
// with pools small enough for the EAL's 256 MB.
inline std::pair<io::DpdkIoConfig, io::DpdkIoConfig> memif_pair_configs(uint32_t a, uint32_t b) {
  io::DpdkIoConfig ca, cb;
  ca.port_id = 0;
  ca.local_ip4 = a;
  cb.port_id = 1;
  cb.local_ip4 = b;
  ca.mbufs = cb.mbufs = 2047;
  ca.mbuf_cache = cb.mbuf_cache = 64;
  return {ca, cb};
}

// Closes the client's port, then lets the interrupt thread finish the server's side of the
// disconnect before the server's port and pool go (22.11's memif races otherwise).
inline void close_client_and_settle(std::unique_ptr<io::DpdkIo>& client,
                                    const io::DpdkIo& server) {
  client.reset();
  const Time until = io::monotonic_now() + 2 * kSecond;
  while (server.link().up && io::monotonic_now() < until) usleep(1000);
  usleep(20'000);
}

}  // namespace uet::testing
