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

ProgressLine::ProgressLine(std::string label)
    : label_(std::move(label)), tty_(isatty(STDERR_FILENO) != 0),
      on_(tty_ || absl::GetFlag(FLAGS_progress)) {}

ProgressLine::~ProgressLine() {
  if (shown_ && tty_) std::fprintf(stderr, "\n");
}

void ProgressLine::operator()(const Progress& p) {
  if (!on_) return;
  // Every report feeds the estimate (about one a second), whether a line is printed or not.
  if (p.wall_s > p.setup_s) eta_.add(p.wall_s - p.setup_s, work_done(p));
  if (p.wall_s < 2 || (shown_ && p.wall_s - last_wall_ < (tty_ ? 2 : 5))) return;
  // Events/s since the last line; the first line's since the set-up ended.
  const double since = shown_ ? last_wall_ : p.setup_s;
  const uint64_t events = p.events - (shown_ ? last_events_ : 0);
  const double rate = p.wall_s > since ? static_cast<double>(events) / (p.wall_s - since) : 0;
  last_wall_ = p.wall_s;
  last_events_ = p.events;
  shown_ = true;
  const double bytes_share =
      p.total_bytes > 0 ? std::min(1.0, static_cast<double>(p.delivered_bytes) /
                                            static_cast<double>(p.total_bytes))
                        : 0;
  const double left = eta_.seconds_left();
  const std::string eta = left < 0 ? "?" : absl::StrFormat("~%.0f s", left);
  std::fprintf(stderr,
               "%s[%s] simulated %.3f ms, %.2f M events/s, flows %zu/%zu, bytes %.0f%%, RSS %.2f "
               "GiB, set-up %.0f s, wall %.0f s, ETA %s%s",
               tty_ ? "\r" : "", label_.c_str(), static_cast<double>(p.sim_time) / kMillisecond,
               rate / 1e6, p.flows_done, p.flows, 100 * bytes_share,
               resident_bytes() / double(1 << 30), p.setup_s, p.wall_s, eta.c_str(),
               tty_ ? "   " : "\n");
}

}  // namespace uet::ab
