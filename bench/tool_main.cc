// The benchmark tools' error lines (bench/tool_main.h).
#include "bench/tool_main.h"

#include <cstdio>

namespace uet::bench {

int tool_error(const char* tool, absl::string_view why, int rc) {
  std::fprintf(stderr, "%s: %.*s\n", tool, static_cast<int>(why.size()), why.data());
  return rc;
}

int tool_error(const char* tool, const absl::Status& s, int rc) {
  return tool_error(tool, s.message(), rc);
}

}  // namespace uet::bench
