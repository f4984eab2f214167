// The benchmark tools' flag checks (uet-ab, uet-perf, uet-trace-gen): the first refusal is kept
// and names its flag and the valid range (DESIGN.md, "Errors, bad input, limits").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/string_view.h"
#include "transport/tss/crypto.h"

namespace uet::bench {

// Collects the first refusal; later checks leave it as it is. `error` is empty while every
// flag checked so far is fine.
struct FlagCheck {
  // What a refusal names: the flag with its value (--FLAG=V) or the flag alone (--FLAG).
  enum class Quote { kValue, kFlag };
  // `digits`: significant digits of the numbers in a range refusal (6: printf's %g).
  explicit FlagCheck(int digits = 6, Quote quote = Quote::kValue)
      : digits_(digits), quote_(quote) {}

  // Refuses "--FLAG=V out of range: LO..HI" unless lo <= v <= hi (a NaN is out of range).
  void range(absl::string_view flag, double v, double lo, double hi);
  // The same for a flag's own value, named as it is defined; returns the value.
  template <typename T>
  T range(const absl::Flag<T>& flag, double lo, double hi) {
    const T v = absl::GetFlag(flag);
    range(absl::GetFlagReflectionHandle(flag).Name(), static_cast<double>(v), lo, hi);
    return v;
  }
  // Refuses "--FLAG=V unknown: A, B or C" unless v is one of `names` (A, B, C).
  void one_of(const char* flag, absl::string_view v,
              std::initializer_list<absl::string_view> names);
  // Refuses with `e` (the caller's words) unless something was refused before.
  void fail(std::string e);

  std::string error;

 private:
  int digits_;
  Quote quote_;
};

// RoCEv2's payload sizes per packet, InfiniBand's path MTUs, as a refusal lists them.
inline constexpr char kRoceMtus[] = "256, 512, 1024, 2048, 4096";
constexpr bool is_roce_mtu(uint32_t mtu) {
  return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

// --tss_backend=NAME (spec/uet.md §5: the AES-256-GCM library) into *backend; the refusal, or ""
// when NAME is known, available here, and anything but auto only with --tss (`tss_on`).
std::string tss_backend_refusal(const std::string& name, bool tss_on, tss::Backend* backend);

}  // namespace uet::bench
