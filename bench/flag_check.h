// The benchmark tools' flag checks (uet-ab, uet-perf): the first refusal is kept and names its
// flag and the valid range (DESIGN.md, "Errors, bad input, limits").
#pragma once

#include <string>

namespace uet::bench {

// Collects the first refusal; later checks leave it as it is. `error` is empty while every
// flag checked so far is fine.
struct FlagCheck {
  // `digits`: significant digits of the numbers in a range refusal (6: printf's %g).
  explicit FlagCheck(int digits = 6) : digits_(digits) {}

  // Refuses "--FLAG=V out of range: LO..HI" unless lo <= v <= hi (a NaN is out of range).
  void range(const char* flag, double v, double lo, double hi);
  // Refuses with `e` (the caller's words) unless something was refused before.
  void fail(std::string e);

  std::string error;

 private:
  int digits_;
};

}  // namespace uet::bench
