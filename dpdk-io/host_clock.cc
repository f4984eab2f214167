// The host clock of the real hosts: CLOCK_MONOTONIC, or the CPU's time-stamp counter scaled to
// it once use_tsc_clock() has calibrated it (packet_io.h).
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "dpdk-io/packet_io.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace uet::io {
namespace {

int64_t gettime_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Picoseconds since the first reading in this process: CLOCK_MONOTONIC's own origin would
// overflow int64 picoseconds after 106 days of uptime.
int64_t epoch_ns() noexcept {
  static const int64_t epoch = gettime_ns();
  return epoch;
}

Time gettime_now() noexcept { return (gettime_ns() - epoch_ns()) * kNanosecond; }

#if defined(__x86_64__)
__extension__ typedef unsigned __int128 Wide;

// time = at + (tsc - tsc_at) * ps_per_tick_q32 / 2^32: one multiply per reading.
struct TscScale {
  uint64_t tsc_at = 0;
  Time at = 0;
  uint64_t ps_per_tick_q32 = 0;
};
TscScale g_scale;
std::atomic<const TscScale*> g_tsc{nullptr};  // set once, then read-only

// A TSC reading and the CLOCK_MONOTONIC reading taken between two TSC readings, from the
// tightest of a few tries (a try the VM's host interrupts brackets microseconds).
struct Pair {
  uint64_t tsc = 0, width = ~uint64_t{0};
  int64_t ns = 0;
};
Pair tight_pair() noexcept {
  Pair best;
  for (int i = 0; i < 8; ++i) {
    const uint64_t t0 = __rdtsc();
    const int64_t ns = gettime_ns();
    const uint64_t t1 = __rdtsc();
    if (t1 - t0 < best.width) best = {t0 + (t1 - t0) / 2, t1 - t0, ns};
  }
  return best;
}

// Whether the kernel keeps its own time with the TSC: it then found the counter invariant and
// in step on every CPU (Linux's clocksource watchdog demotes it otherwise).
bool kernel_trusts_tsc() noexcept {
  std::FILE* f =
      std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return false;
  char name[32] = {};
  const bool read = std::fgets(name, sizeof(name), f) != nullptr;
  std::fclose(f);
  return read && std::strncmp(name, "tsc\n", 4) == 0;
}
#endif

}  // namespace

Time monotonic_now() noexcept {
#if defined(__x86_64__)
  if (const TscScale* s = g_tsc.load(std::memory_order_acquire); s != nullptr) {
    // Another CPU's counter may read a few ticks behind the calibrating one's: never before.
    const auto ticks = static_cast<int64_t>(__rdtsc() - s->tsc_at);
    if (ticks <= 0) return s->at;
    return s->at + static_cast<Time>((Wide(ticks) * s->ps_per_tick_q32) >> 32);
  }
#endif
  return gettime_now();
}

#if defined(__x86_64__)
namespace {
bool calibrate_tsc() noexcept {
  if (!kernel_trusts_tsc()) return false;
  (void)epoch_ns();
  // Over 20 ms between readings bracketed by at most 1000 ticks: the rate within 40 parts per
  // million.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const Pair a = tight_pair();
    const timespec span{0, 20'000'000};
    nanosleep(&span, nullptr);
    const Pair b = tight_pair();
    constexpr uint64_t kMaxWidth = 1'000;  // ticks: a bracket the host did not interrupt
    if (b.tsc <= a.tsc || b.ns <= a.ns || a.width > kMaxWidth || b.width > kMaxWidth) continue;
    const Wide ps = Wide(static_cast<uint64_t>(b.ns - a.ns)) * 1000;
    g_scale.ps_per_tick_q32 = static_cast<uint64_t>((ps << 32) / (b.tsc - a.tsc));
    g_scale.tsc_at = b.tsc;
    g_scale.at = (b.ns - epoch_ns()) * kNanosecond;
    g_tsc.store(&g_scale, std::memory_order_release);
    return true;
  }
  return false;
}
}  // namespace
#endif

bool use_tsc_clock() noexcept {
#if defined(__x86_64__)
  static const bool in_use = calibrate_tsc();  // once, whichever thread asks first
  return in_use;
#else
  return false;
#endif
}

bool tsc_clock_in_use() noexcept {
#if defined(__x86_64__)
  return g_tsc.load(std::memory_order_acquire) != nullptr;
#else
  return false;
#endif
}

}  // namespace uet::io
