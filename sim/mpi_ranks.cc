#include "sim/mpi_ranks.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#if UET_HAVE_MPI
// The C API only: the deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

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

class MpiRanks final : public Ranks {
 public:
  // `rank` < `size` <= UINT16_MAX (rank numbers are 16 bits in Network).
  MpiRanks(int rank, int size)
      : rank_(static_cast<uint16_t>(rank)), size_(static_cast<uint16_t>(size)) {}
  ~MpiRanks() override { MPI_Finalize(); }
  uint16_t size() const noexcept override { return size_; }
  uint16_t rank() const noexcept override { return rank_; }

  absl::Status exchange(std::vector<std::vector<uint8_t>>& out,
                        std::vector<std::span<const uint8_t>>& in) override {
    const int n = size_;
    send_counts_.assign(n, 0);
    for (int r = 0; r < n; ++r) {
      if (r == rank_) continue;
      if (out[r].size() > INT32_MAX) {
        return absl::ResourceExhaustedError(absl::StrCat(
            out[r].size(), " bytes for rank ", r, " in one window: at most 2 GiB"));
      }
      send_counts_[r] = static_cast<int>(out[r].size());
    }
    recv_counts_.assign(n, 0);
    MPI_Alltoall(send_counts_.data(), 1, MPI_INT, recv_counts_.data(), 1, MPI_INT,
                 MPI_COMM_WORLD);
    send_displs_.assign(n, 0);
    recv_displs_.assign(n, 0);
    size_t send_total = 0, recv_total = 0;
    for (int r = 0; r < n; ++r) {
      send_displs_[r] = static_cast<int>(send_total);
      recv_displs_[r] = static_cast<int>(recv_total);
      send_total += static_cast<size_t>(send_counts_[r]);
      recv_total += static_cast<size_t>(recv_counts_[r]);
    }
    if (send_total > INT32_MAX || recv_total > INT32_MAX) {
      return absl::ResourceExhaustedError("more than 2 GiB between ranks in one window");
    }
    send_buf_.resize(send_total);
    for (int r = 0; r < n; ++r) {
      if (send_counts_[r] > 0) {
        std::memcpy(send_buf_.data() + send_displs_[r], out[r].data(), out[r].size());
      }
      out[r].clear();
    }
    recv_buf_.resize(recv_total);
    MPI_Alltoallv(send_buf_.data(), send_counts_.data(), send_displs_.data(), MPI_BYTE,
                  recv_buf_.data(), recv_counts_.data(), recv_displs_.data(), MPI_BYTE,
                  MPI_COMM_WORLD);
    in.resize(n);
    for (int r = 0; r < n; ++r) {
      in[r] = std::span<const uint8_t>(recv_buf_.data() + recv_displs_[r],
                                       static_cast<size_t>(recv_counts_[r]));
    }
    return absl::OkStatus();
  }

  int64_t min_all(int64_t v) override {
    int64_t m = v;
    MPI_Allreduce(&v, &m, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    return m;
  }
  void sum_all(std::span<uint64_t> v) override { reduce(v, MPI_SUM); }
  void max_all(std::span<uint64_t> v) override { reduce(v, MPI_MAX); }

  std::vector<std::vector<uint8_t>> all_gather(std::span<const uint8_t> mine) override {
    const int n = size_;
    const auto count = static_cast<int>(mine.size());
    std::vector<int> counts(n), displs(n);
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    size_t total = 0;
    for (int r = 0; r < n; ++r) {
      displs[r] = static_cast<int>(total);
      total += static_cast<size_t>(counts[r]);
    }
    std::vector<uint8_t> all(total);
    MPI_Allgatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), displs.data(),
                   MPI_BYTE, MPI_COMM_WORLD);
    std::vector<std::vector<uint8_t>> by_rank;
    for (int r = 0; r < n; ++r) {
      by_rank.emplace_back(all.begin() + displs[r], all.begin() + displs[r] + counts[r]);
    }
    return by_rank;
  }

  [[noreturn]] void abort(std::string_view why) override {
    std::fprintf(stderr, "rank %u of %u: %.*s\n", rank_, size_, static_cast<int>(why.size()),
                 why.data());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
  }

 private:
  void reduce(std::span<uint64_t> v, MPI_Op op) {
    if (v.empty()) return;
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T, op,
                  MPI_COMM_WORLD);
  }
  uint16_t rank_ = 0;
  uint16_t size_ = 1;
  std::vector<int> send_counts_, recv_counts_, send_displs_, recv_displs_;
  std::vector<uint8_t> send_buf_, recv_buf_;
};
#endif

}  // namespace

absl::StatusOr<std::unique_ptr<Ranks>> start_ranks(int* argc, char*** argv) {
  int launched = 0;
  if (!launched_as_ranks(&launched)) return std::unique_ptr<Ranks>(new OneRank());
#if UET_HAVE_MPI
  MPI_Init(argc, argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > UINT16_MAX) {
    MPI_Finalize();
    return absl::InvalidArgumentError(absl::StrCat(size, " ranks: at most ", UINT16_MAX));
  }
  auto ranks = std::make_unique<MpiRanks>(rank, size);
  // Every rank must run the same program on the same flags: compare one fingerprint.
  const uint64_t mine = run_fingerprint(*argc, *argv);
  std::vector<uint64_t> all(ranks->size());
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (uint16_t r = 0; r < ranks->size(); ++r) {
    if (all[r] != all[0]) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", r, " runs another build or other flags than rank 0: every rank must run "
          "the same binary with the same arguments"));
    }
  }
  return std::unique_ptr<Ranks>(std::move(ranks));
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
