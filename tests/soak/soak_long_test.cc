// The long tier (ctest label `long`, registered with -DUET_LONG_TESTS=ON; tests/README.md):
// the soak at 10^6 messages per transport, UET with every delivery mode, RCCC, tagged sends
// (the longer ones by rendezvous, some deferrable) and atomics mixed in, and both transports
// on a 1024-host fabric carrying a permutation and incasts while links fail. See tests/soak/soak.h for what
// is checked; UET_SOAK_SEED and UET_SOAK_MESSAGES override the seed and the count.
#include <gtest/gtest.h>

#include "tests/soak/soak.h"

namespace uet::soak {
namespace {

SoakConfig million(Kind kind) {
  SoakConfig c{.kind = kind, .seed = 2026, .messages = 1'000'000};
  if (kind == Kind::kUet) {
    c.bad_key = 0.002;
    c.uet_rod = 0.15;
    c.uet_rudi = 0.15;
    c.uet_uud = 0.05;
    c.uet_rccc = 0.5;
    c.uet_idle_timeout = 20 * kMicrosecond;  // PDCs close and reopen all along
    c.uet_tagged = 0.2;  // tagged sends, half held unexpected until their receive is posted
    c.uet_rendezvous_bytes = 8192;  // the longer ones by rendezvous
    c.uet_deferrable = 0.2;         // some deferrable: deferred while unexpected
    c.atomics = 0.1;     // fetching adds, each pair's counter checked exactly
  }
  return c;
}

// 1024 hosts (32 leaves of 32, 16 spines): every host writes to its permutation partner,
// and 8 hosts are each written to by 32 others, under every fault (UET: every mode, RCCC on
// half the hosts); links fail five times as often as in the 32-host soak (the fabric has 32
// times the links).
SoakConfig large(Kind kind) {
  SoakConfig c{.kind = kind, .seed = 2027, .messages = 1'000'000};
  c.leaves = 32;
  c.spines = 16;
  c.hosts_per_leaf = 32;
  c.pattern = Pattern::kPermutationIncast;
  c.incasts = 8;
  c.incast_fan_in = 32;
  c.max_message = 32 * 1024;
  c.ring_bytes = 64 * 1024;
  c.max_outstanding_per_pair = 8;
  c.max_outstanding_per_host = 16;
  c.failure_every = 20 * kMicrosecond;
  if (kind == Kind::kUet) {
    c.uet_rod = 0.1;
    c.uet_rudi = 0.1;
    c.uet_uud = 0.05;
    c.uet_rccc = 0.5;
  }
  return c;
}

TEST(SoakLong_Uet, MillionMessagesEveryModeAndRcccUnderEveryFault) {
  run_checked(million(Kind::kUet));
}
TEST(SoakLong_Roce, MillionMessagesUnderEveryFault) { run_checked(million(Kind::kRoce)); }
TEST(SoakLong_Uet, ThousandHostsPermutationAndIncastsUnderFailures) {
  run_checked(large(Kind::kUet));
}
TEST(SoakLong_Roce, ThousandHostsPermutationAndIncastsUnderFailures) {
  run_checked(large(Kind::kRoce));
}

}  // namespace
}  // namespace uet::soak
