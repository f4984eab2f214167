#include "sim/mpi_ranks.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transport/module.h"

namespace uet::sim {
namespace {

// Set by a launcher in every rank's environment: Open MPI's mpirun, PMIx (Slurm's srun),
// PMI-1/2 (older srun, MPICH's Hydra).
bool launched_as_ranks(int* size) {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (const char* s = std::getenv(v); s != nullptr && std::atoi(s) > 0) {
      *size = std::atoi(s);
      return true;
    }
  }
  if (std::getenv("PMIX_RANK") != nullptr) {
    *size = 0;  // PMIx without a size variable: MPI says
    return true;
  }
  return false;
}

#if UET_HAVE_MPI
// FNV-1a over the arguments and the build, so ranks can compare one number.
uint64_t run_fingerprint(int argc, char** argv) {
  uint64_t h = 0xCBF29CE484222325ULL;
  auto add = [&h](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= static_cast<const uint8_t*>(p)[i];
      h *= 0x100000001B3ULL;
    }
  };
  const char build[] = __DATE__ " " __TIME__ " " __VERSION__;
  add(build, sizeof(build));
  for (int i = 1; i < argc; ++i) add(argv[i], std::strlen(argv[i]) + 1);
  return h;
}

#endif

}  // namespace

absl::StatusOr<std::unique_ptr<Ranks>> start_ranks(int* argc, char*** argv) {
  int launched = 0;
  if (!launched_as_ranks(&launched)) return std::unique_ptr<Ranks>(new OneRank());
#if UET_HAVE_MPI
  auto entry = module_symbol("libuet_mpi_ranks.so", "uet_start_mpi_ranks",
                             "running as several ranks (mpirun or srun)");
  if (!entry.ok()) return entry.status();
  absl::StatusOr<std::unique_ptr<Ranks>> ranks;
  reinterpret_cast<decltype(&uet_start_mpi_ranks)>(*entry)(argc, argv, run_fingerprint(*argc, *argv),
                                                          &ranks);
  return ranks;
#else
  (void)argc;
  (void)argv;
  if (launched == 1) return std::unique_ptr<Ranks>(new OneRank());
  return absl::FailedPreconditionError(
      "started as several ranks (mpirun or srun), but this build has no MPI: install Open MPI "
      "(scripts/setup.sh) and configure again");
#endif
}

}  // namespace uet::sim
