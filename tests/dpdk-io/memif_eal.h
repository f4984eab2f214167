// The EAL the DPDK tests run in: one process, no hugepages, PCI or telemetry, and two memif
// ports joined through a socket of their own (port 0 the server, port 1 the client).
#pragma once

#include <unistd.h>

#include <memory>
#include <string>

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

}  // namespace uet::testing
