// The benchmark tools' flag checks (bench/flag_check.h).
#include "bench/flag_check.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace uet::bench {

void FlagCheck::range(const char* flag, double v, double lo, double hi) {
  if (error.empty() && !(v >= lo && v <= hi)) {
    error = absl::StrFormat("--%s=%.*g out of range: %.*g..%.*g", flag, digits_, v, digits_, lo,
                            digits_, hi);
  }
}

void FlagCheck::fail(std::string e) {
  if (error.empty()) error = std::move(e);
}

}  // namespace uet::bench
