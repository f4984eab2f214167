// libFuzzer entry point for one target of fuzz_targets.h, chosen at build time by
// UET_FUZZ_TARGET (tests/fuzz/CMakeLists.txt; clang with -DUET_LIBFUZZER=ON).
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uet::fuzz::UET_FUZZ_TARGET(data, size);
  return 0;
}
