// uet-ab: the process's plumbing (bench/uet_ab/uet_ab.h).
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) {
  g_stop.store(true, std::memory_order_relaxed);
  std::signal(SIGINT, SIG_DFL);
}

// Split over MPI ranks, only rank 0 writes results (stdout, --json, --csv, --plot, experiment
// files); the others run the same code on the same flags, their files going to /dev/null, so
// that every rank makes the same collective calls in the same order.
bool g_writes = true;
std::FILE* open_output(const std::string& path) {
  return std::fopen(g_writes ? path.c_str() : "/dev/null", "w");
}

// The process's resident memory now (/proc/self/statm), in bytes; 0 when unknown.
double resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const bool ok = std::fscanf(f, "%llu %llu", &size, &resident) == 2;
  std::fclose(f);
  return ok ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) : 0;
}

std::string memory_refusal(double need, const std::string& why, const std::string& lower) {
  const bool given = absl::GetFlag(FLAGS_max_memory_gb) > 0;
  const double limit = given ? absl::GetFlag(FLAGS_max_memory_gb) * double(1 << 30)
                             : static_cast<double>(memory_available());
  if (limit <= 0 || need <= limit) return "";
  return absl::StrFormat(
      "this run needs about %.3g GiB (%s), the machine has %.3g GiB %s: lower %s%s",
      need / double(1 << 30), why, limit / double(1 << 30),
      given ? "allowed (--max_memory_gb)" : "available", lower,
      given ? "" : "; --max_memory_gb=N overrides the limit");
}

}  // namespace uet::ab
