// The processes of a run (sim/partition.h's Ranks): MPI's world when the program was started
// by mpirun or srun, one process otherwise.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "sim/partition.h"

namespace uet::sim {

// Call first in main(), with main's arguments. Under mpirun/srun (a launcher's rank variables
// in the environment) it initialises MPI, and checks that every rank runs the same build with
// the same arguments (a refusal names the first rank that differs); MPI is finalised when the
// returned object goes. Otherwise, or in a build without MPI when one process was started, a
// OneRank. A build without MPI started as several ranks is refused.
absl::StatusOr<std::unique_ptr<Ranks>> start_ranks(int* argc, char*** argv);

}  // namespace uet::sim

// libuet_mpi_ranks.so's entry point, which start_ranks() opens under a launcher: MPI
// initialised and every rank's `fingerprint` (the program's build and arguments) compared, or
// the refusal.
extern "C" void uet_start_mpi_ranks(int* argc, char*** argv, uint64_t fingerprint,
                                    absl::StatusOr<std::unique_ptr<uet::sim::Ranks>>* out);
