// ab::validate (bench/ab_runner.h) against a fabric whose frames cannot hold the run's headers:
// refused up front, naming frame_capacity and the least it may be, instead of a run whose
// every operation fails kFrameTooSmall; at that least the run completes every flow.
#include <cstdint>
#include <string>

#include "bench/ab_runner.h"
#include "gtest/gtest.h"
#include "sim/rng.h"
#include "sim/workload.h"

namespace uet::ab {
namespace {

// 8 hosts on a 2-leaf, 2-spine fabric: a permutation of 16 KB flows.
RunConfig small_run(TransportKind t, Verb verb) {
  RunConfig c;
  c.fabric.leaves = 2;
  c.fabric.spines = 2;
  c.fabric.hosts_per_leaf = 4;
  sim::Rng rng(3);
  c.flows = *sim::permutation(8, 16 * 1024, rng);
  c.transport = t;
  c.verb = verb;
  return c;
}

struct Case {
  const char* name;
  RunConfig run;
  uint32_t least;  // the longest header stack, counted here from spec/ (uet.def, rocev2.def)
};

std::vector<Case> cases() {
  constexpr uint32_t kEncap = 14 + 20 + 8;  // Ethernet, IPv4, UDP
  std::vector<Case> v;
  // UET WRITE under NSCC: a READ response (ACK_CCX 40 + SES response with data 20) is longer
  // than the request (RUD 12 + SES standard 44).
  v.push_back({"uet_write", small_run(TransportKind::kUet, Verb::kWrite), kEncap + 40 + 20});
  // UET rendezvous send under RCCC: RUD_CC 16 + SES standard 44 + rendezvous extension 24.
  Case rdv{"uet_send_rendezvous_rccc", small_run(TransportKind::kUet, Verb::kSend),
           kEncap + 16 + 44 + 24};
  rdv.run.uet_cc = CcMode::kRccc;
  rdv.run.uet_rendezvous_bytes = 4096;
  v.push_back(rdv);
  // UET fetching add: RUD 12 + SES standard 44 + atomic extension 4 + one uint64 operand.
  v.push_back({"uet_atomic", small_run(TransportKind::kUet, Verb::kAtomic),
               kEncap + 12 + 44 + 4 + 8});
  // RoCEv2 WRITE: BTH 12 + RETH 16 + ImmDt 4 + ICRC 4; an atomic: BTH + AtomicETH 28 + ICRC.
  v.push_back({"roce_write", small_run(TransportKind::kRocev2, Verb::kWrite),
               kEncap + 12 + 16 + 4 + 4});
  v.push_back({"roce_atomic", small_run(TransportKind::kRocev2, Verb::kAtomic),
               kEncap + 12 + 28 + 4});
  return v;
}

// Expect: one byte below the run's longest header stack is refused with a message naming
// frame_capacity and that least value; at it, validate() passes.
TEST(AbValidate_FrameCapacity, BelowTheLongestHeaderStackIsRefused) {
  for (Case& c : cases()) {
    c.run.fabric.frame_capacity = c.least - 1;
    const absl::Status s = validate(c.run);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(s.message().find("frame_capacity " + std::to_string(c.least - 1)),
              std::string::npos)
        << c.name << ": " << s.message();
    EXPECT_NE(s.message().find("at least " + std::to_string(c.least) + " bytes"),
              std::string::npos)
        << c.name << ": " << s.message();
    c.run.fabric.frame_capacity = c.least;
    EXPECT_TRUE(validate(c.run).ok()) << c.name << ": " << validate(c.run).message();
  }
}

// Expect: at exactly the least frame_capacity every flow completes without an error (the
// engines refuse no frame, so that least is enough).
TEST(AbValidate_FrameCapacity, TheLeastCompletesEveryFlow) {
  for (Case& c : cases()) {
    c.run.fabric.frame_capacity = c.least;
    const absl::StatusOr<RunResult> r = run(c.run);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().message();
    EXPECT_EQ(r->flows.completed, c.run.flows.size()) << c.name;
    EXPECT_EQ(r->failed, 0u) << c.name;
  }
}

}  // namespace
}  // namespace uet::ab
