// libuet_mpi_ranks.so (sim/mpi_ranks.h): the ranks of a run over MPI, opened by
// start_ranks() only under a launcher, so that one process never maps Open MPI.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sim/mpi_ranks.h"
#include "sim/partition.h"

// The C API only: the deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

namespace uet::sim {
namespace {

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

absl::StatusOr<std::unique_ptr<Ranks>> start_mpi(int* argc, char*** argv, uint64_t mine) {
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
}

}  // namespace
}  // namespace uet::sim

extern "C" __attribute__((visibility("default"))) void uet_start_mpi_ranks(
    int* argc, char*** argv, uint64_t fingerprint,
    absl::StatusOr<std::unique_ptr<uet::sim::Ranks>>* out) {
  *out = uet::sim::start_mpi(argc, argv, fingerprint);
}
