// The host clock: CLOCK_MONOTONIC, or the TSC scaled to it (packet_io.h). Its own executable:
// the switch is process-wide and this test must see the clock before it.
#include <time.h>

#include <gtest/gtest.h>

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

// monotonic_now() against CLOCK_MONOTONIC read just before and after it, the tightest of a
// few tries: how far the host clock is from CLOCK_MONOTONIC less `offset_ns`, within +-width.
struct Offset {
  double ns = 0;
  int64_t width = INT64_MAX;
};
Offset offset_from_gettime(int64_t origin_ns) {
  Offset best;
  for (int i = 0; i < 16; ++i) {
    const int64_t g0 = gettime_ns();
    const Time m = monotonic_now();
    const int64_t g1 = gettime_ns();
    if (g1 - g0 < best.width) {
      best.width = g1 - g0;
      best.ns = static_cast<double>(m) / kNanosecond - static_cast<double>((g0 + g1) / 2 - origin_ns);
    }
  }
  return best;
}

// Where the kernel keeps time with the TSC, the host clock moves to it on the same scale
// (no step at the switch), at CLOCK_MONOTONIC's rate, and never backwards.
TEST(HostClock, TscClockContinuesCLOCK_MONOTONICAtItsRate) {
  ASSERT_FALSE(tsc_clock_in_use());
  // Before the switch the host clock is CLOCK_MONOTONIC from its first reading: find that
  // origin.
  (void)monotonic_now();
  int64_t origin_ns = 0;
  {
    int64_t width = INT64_MAX;
    for (int i = 0; i < 16; ++i) {
      const int64_t g0 = gettime_ns();
      const Time m = monotonic_now();
      const int64_t g1 = gettime_ns();
      if (g1 - g0 < width) {
        width = g1 - g0;
        origin_ns = (g0 + g1) / 2 - m / kNanosecond;
      }
    }
  }
  const Time before = monotonic_now();
  const bool tsc = use_tsc_clock();
#if defined(__x86_64__)
  EXPECT_EQ(tsc, clocksource() == "tsc") << "clocksource " << clocksource();
#else
  EXPECT_FALSE(tsc);
#endif
  EXPECT_EQ(tsc_clock_in_use(), tsc);
  EXPECT_EQ(use_tsc_clock(), tsc);  // calibrated once
  EXPECT_GE(monotonic_now(), before);

  // No step: the clocks agree right after the switch (to the brackets, a microsecond each
  // when the VM's host does not interrupt them) ...
  const Offset at_switch = offset_from_gettime(origin_ns);
  EXPECT_LT(std::abs(at_switch.ns), 2'000.0 + static_cast<double>(at_switch.width));
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
  const Offset later = offset_from_gettime(origin_ns);
  EXPECT_LT(std::abs(later.ns - at_switch.ns),
            20'000.0 + static_cast<double>(later.width + at_switch.width))
      << "drifted " << later.ns - at_switch.ns << " ns in 200 ms";
}

}  // namespace
}  // namespace uet::io
