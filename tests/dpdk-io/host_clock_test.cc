// The host clock: CLOCK_MONOTONIC, or the TSC scaled to it (packet_io.h). Its own executable:
// the switch is process-wide and this test must see the clock before it.
#include <gtest/gtest.h>
#include <time.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "dpdk-io/packet_io.h"

namespace uet::io {
namespace {

int64_t gettime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string clocksource() {
  std::FILE* f =
      std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return "";
  char name[32] = {};
  if (std::fgets(name, sizeof(name), f) == nullptr) name[0] = '\0';
  std::fclose(f);
  return std::string(name, strcspn(name, "\n"));
}

// The host clock less CLOCK_MONOTONIC (read just before and after it), in ns, from the
// tightest of a few tries: within +-width of the truth.
struct Offset {
  double ns = 0;
  int64_t width = INT64_MAX;
};
Offset offset_from_gettime() {
  Offset best;
  for (int i = 0; i < 16; ++i) {
    const int64_t g0 = gettime_ns();
    const Time m = monotonic_now();
    const int64_t g1 = gettime_ns();
    if (g1 - g0 < best.width) {
      best.width = g1 - g0;
      best.ns = static_cast<double>(m) / kNanosecond - static_cast<double>(g0 + (g1 - g0) / 2);
    }
  }
  return best;
}

// Where the kernel keeps time with the TSC, the host clock moves to it on the same scale
// (no step at the switch), at CLOCK_MONOTONIC's rate, and never backwards.
TEST(HostClock, TscClockContinuesCLOCK_MONOTONICAtItsRate) {
  ASSERT_FALSE(tsc_clock_in_use());
  const Offset before = offset_from_gettime();  // CLOCK_MONOTONIC from its first reading
  const Time last_before = monotonic_now();
  const bool tsc = use_tsc_clock();
#if defined(__x86_64__)
  EXPECT_EQ(tsc, clocksource() == "tsc") << "clocksource " << clocksource();
#else
  EXPECT_FALSE(tsc);
#endif
  EXPECT_EQ(tsc_clock_in_use(), tsc);
  EXPECT_EQ(use_tsc_clock(), tsc);  // calibrated once
  EXPECT_GE(monotonic_now(), last_before);

  // No step: the clocks agree right after the switch as before it (to the brackets, tens of
  // nanoseconds when the VM's host does not interrupt them) ...
  const Offset at_switch = offset_from_gettime();
  EXPECT_LT(std::abs(at_switch.ns - before.ns),
            2'000.0 + static_cast<double>(at_switch.width + before.width));
  // ... and 200 ms later (calibrated within 40 ppm: 8 us), never going backwards.
  Time last = monotonic_now();
  uint64_t reads = 0, backwards = 0;
  for (const int64_t until = gettime_ns() + 200'000'000; gettime_ns() < until;) {
    for (int i = 0; i < 100; ++i, ++reads) {
      const Time t = monotonic_now();
      if (t < last) ++backwards;
      last = t;
    }
  }
  EXPECT_EQ(backwards, 0u) << "of " << reads;
  const Offset later = offset_from_gettime();
  EXPECT_LT(std::abs(later.ns - at_switch.ns),
            20'000.0 + static_cast<double>(later.width + at_switch.width))
      << "drifted " << later.ns - at_switch.ns << " ns in 200 ms";
}

}  // namespace
}  // namespace uet::io
