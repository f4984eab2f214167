// The fault-injection soak: 10^5 messages of random sizes per transport between 32
// hosts under loss, corruption, duplication, reordering, trimming (UET) and link failures.
// Label `soak` (not in the fast tier); soak_fast_test.cc runs 10^4. See tests/soak/soak.h.
#include "tests/soak/soak.h"

#include <gtest/gtest.h>

namespace uet::soak {
namespace {

SoakConfig full(Kind kind) {
  SoakConfig c{.kind = kind, .seed = 2024, .messages = 100'000};
  return c;
}

TEST(Soak_Uet, HundredThousandMessagesUnderEveryFaultArriveOnceIntact) {
  const SoakConfig c = full(Kind::kUet);
  run_checked(c);
}

TEST(Soak_Roce, HundredThousandMessagesUnderEveryFaultArriveOnceIntact) {
  const SoakConfig c = full(Kind::kRoce);
  run_checked(c);
}

}  // namespace
}  // namespace uet::soak
