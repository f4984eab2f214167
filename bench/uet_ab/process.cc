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

}  // namespace uet::ab
