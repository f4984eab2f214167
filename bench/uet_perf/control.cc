// uet-perf (bench/uet_perf/main.cc): the control connection.
#include "bench/uet_perf/control.h"

namespace uet::perf {

uint64_t field_u64(const Fields& f, const std::string& k, bool* ok) {
  uint64_t v = 0;
  auto it = f.find(k);
  if (it == f.end() || !absl::SimpleAtoi(it->second, &v)) *ok = false;
  return v;
}

}  // namespace uet::perf
