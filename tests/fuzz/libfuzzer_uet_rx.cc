// libFuzzer entry point for uet::fuzz::uet_rx_target (build with -DUET_LIBFUZZER=ON and clang).
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uet::fuzz::uet_rx_target(data, size);
  return 0;
}
