// This process's resident memory, for tests that print (and, without AddressSanitizer, whose
// shadow and quarantine move RSS on their own, bound) what a flood or a soak cost.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace uet::testing {

// Resident now, in KiB (/proc/self/statm).
inline uint64_t rss_kib() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

// The most ever resident, in KiB (getrusage: Linux reports KiB).
inline uint64_t peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss);
}

// Growth since `before_kib`, in KiB (negative when pages were returned).
inline int64_t rss_delta_kib(uint64_t before_kib) {
  return static_cast<int64_t>(rss_kib()) - static_cast<int64_t>(before_kib);
}

// The line each resource-exhaustion test prints (tests/README.md, "Resource exhaustion").
inline void print_exhaustion(const char* attack, uint64_t frames, size_t peak, size_t bound,
                             int64_t rss_delta) {
  std::printf("exhaustion | %s | %llu frames | peak %zu B | bound %zu B | RSS %+lld KiB\n", attack,
              static_cast<unsigned long long>(frames), peak, bound,
              static_cast<long long>(rss_delta));
}

}  // namespace uet::testing
