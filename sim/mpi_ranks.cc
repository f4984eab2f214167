#include "sim/mpi_ranks.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

  // One message each way per pair of ranks, the bound in its last 8 bytes: no count
  // exchange, no packing copy (each outbox is sent as it is, each message received into a
  // buffer of its own that only grows).
  absl::StatusOr<int64_t> exchange(std::vector<std::vector<uint8_t>>& out,
                                   std::vector<std::span<const uint8_t>>& in,
                                   int64_t bound) override {
    const int n = size_;
    requests_.clear();
    for (int r = 0; r < n; ++r) {
      if (r == rank_) continue;
      out[r].insert(out[r].end(), reinterpret_cast<const uint8_t*>(&bound),
                    reinterpret_cast<const uint8_t*>(&bound) + sizeof(bound));
      if (out[r].size() > INT32_MAX) {
        return absl::ResourceExhaustedError(absl::StrCat(
            out[r].size(), " bytes for rank ", r, " in one window: at most 2 GiB"));
      }
      requests_.emplace_back();
      MPI_Isend(out[r].data(), static_cast<int>(out[r].size()), MPI_BYTE, r, kExchangeTag,
                MPI_COMM_WORLD, &requests_.back());
    }
    recv_.resize(n);
    in.assign(n, {});
    int64_t earliest = bound;
    for (int r = 0; r < n; ++r) {
      if (r == rank_) continue;
      MPI_Message message;
      MPI_Status status;
      probe(r, &message, &status);
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      if (count < static_cast<int>(sizeof(int64_t))) {
        return absl::DataLossError(absl::StrCat(count, " bytes from rank ", r, ": no bound"));
      }
      if (recv_[r].size() < static_cast<size_t>(count)) recv_[r].resize(count);
      MPI_Mrecv(recv_[r].data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      const size_t records = static_cast<size_t>(count) - sizeof(int64_t);
      int64_t theirs;
      std::memcpy(&theirs, recv_[r].data() + records, sizeof(theirs));
      earliest = std::min(earliest, theirs);
      in[r] = std::span<const uint8_t>(recv_[r].data(), records);
    }
    for (MPI_Request& request : requests_) wait(&request);
    for (auto& o : out) o.clear();
    return earliest;
  }

  int64_t min_all(int64_t v) override {
    int64_t m = v;
    MPI_Request request;
    MPI_Iallreduce(&v, &m, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD, &request);
    wait(&request);
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
  // A rank that waits for another polls a while, then sleeps between polls: spinning would
  // keep the CPU share the slower rank needs when the ranks share their cores with other work
  // (Linux gives a session's processes one share together: sched(7), "autogroup"). A window
  // is milliseconds of work, so a sleep's tens of microseconds cost little when the cores
  // are free.
  static void idle(int polls) {
    constexpr int kSpinPolls = 2000;
    if (polls < kSpinPolls) return;
    const timespec pause{0, 20'000};
    nanosleep(&pause, nullptr);
  }
  void wait(MPI_Request* request) {
    for (int polls = 0, done = 0;; ++polls) {
      MPI_Test(request, &done, MPI_STATUS_IGNORE);
      if (done != 0) return;
      idle(polls);
    }
  }
  void probe(int from, MPI_Message* message, MPI_Status* status) {
    for (int polls = 0, found = 0;; ++polls) {
      MPI_Improbe(from, kExchangeTag, MPI_COMM_WORLD, &found, message, status);
      if (found != 0) return;
      idle(polls);
    }
  }
  void reduce(std::span<uint64_t> v, MPI_Op op) {
    if (v.empty()) return;
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T, op,
                   MPI_COMM_WORLD, &request);
    wait(&request);
  }
  uint16_t rank_ = 0;
  uint16_t size_ = 1;
  static constexpr int kExchangeTag = 7;
  std::vector<MPI_Request> requests_;
  std::vector<std::vector<uint8_t>> recv_;  // by rank: the last message's bytes
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
