// The PFC watchdog (sim/pfc_watchdog.h): a constructed deadlock on a ring (cyclic buffer
// dependency), found as a cycle and either left in place (report) or broken (drop); an incast's
// long pauses on a fat-tree, storms but never a cycle.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/network.h"
#include "sim/partition.h"
#include "sim/topology.h"
#include "sim/udp_app.h"
#include "test_fabrics.h"

namespace uet::sim {
namespace {

using test::link100;
using test::watchdog;

// A ring of kSwitches switches with kHostsPer hosts each, PFC on. Host j of switch i sends
// kBytes at line rate to host j of switch i + 2, two hops clockwise (the shortest way round
// five switches): each clockwise link carries two hosts' flows at line rate, twice its rate,
// and every flow waits at the middle switch for the next clockwise link.
struct RingRun {
  static constexpr uint32_t kSwitches = 5;
  static constexpr uint32_t kHostsPer = 2;
  static constexpr uint64_t kBytes = 4096 * 2000;

  // Split over `ranks` processes (sim/partition.h), this one running rank `rank`.
  explicit RingRun(PfcWatchdogConfig wd, uint16_t rank = 0, uint16_t ranks = 1)
      : net(test::pfc_config(wd)) {
    const std::vector<uint32_t> sw = test::build_ring(net, kSwitches, kHostsPer);
    if (ranks > 1) {
      auto split = split_fabric(net, ranks);
      EXPECT_TRUE(split.ok());
      lookahead = split->lookahead;
      EXPECT_TRUE(net.set_partition(split->rank_of_node, rank, ranks).ok());
    }
    for (uint32_t s = 0; s < kSwitches; ++s) {
      clockwise.push_back(test::port_between(net, sw[s], sw[(s + 1) % kSwitches]));
    }
    const uint32_t hosts = kSwitches * kHostsPer;
    rec.resize(hosts);  // by flow: every flow's, at its sink's process too
    for (uint32_t h = 0; h < hosts; ++h) apps.push_back(std::make_unique<UdpApp>(h, &rec));
    for (uint32_t h = 0; h < hosts; ++h) {
      if (!net.owns_host(h)) continue;
      apps[h]->add_flow(
          UdpFlow{h, (h + 2 * kHostsPer) % hosts, kBytes, 0, static_cast<uint16_t>(0xC000 + h)});
      net.attach(h, apps[h].get());
    }
  }
  uint64_t received() const { return test::received(rec); }

  Network net;
  Time lookahead = kNever;
  std::vector<uint32_t> clockwise;  // switch i's port to switch i + 1
  std::vector<FlowRecord> rec;
  std::vector<std::unique_ptr<UdpApp>> apps;
};

uint64_t total_drops(const Network& net) {
  uint64_t d = 0;
  for (uint32_t p = 0; p < net.num_ports(); ++p) d += net.pfc_watchdog(p).drops;
  return d;
}

// Expect: the ring deadlocks (every clockwise queue paused, nothing moves: no event is left
// to run), and without the watchdog nothing says so.
TEST(PfcWatchdog_Ring, WithoutTheWatchdogTheRingDeadlocksSilently) {
  RingRun r(PfcWatchdogConfig{});
  r.net.run_until(kSecond);
  EXPECT_EQ(r.net.events_pending(), 0u);
  EXPECT_LT(r.received(), RingRun::kBytes * r.rec.size() / 10);
  for (uint32_t p : r.clockwise) EXPECT_TRUE(r.net.port(p).paused[0]) << p;
  EXPECT_TRUE(r.net.pfc_deadlocks().empty());
  EXPECT_EQ(r.net.pfc_watchdog_checks(), 0u);
}

// Expect (report): one deadlock, found detection_time after the pause of the first clockwise
// queue to fire; its cycle is the ring's clockwise ports in order; every clockwise queue fires
// once and stays paused; no frame is dropped and the run ends with nothing left to run, having
// delivered what the run without the watchdog delivers.
TEST(PfcWatchdog_Ring, ReportFindsTheClockwiseCycleAndTheRunEnds) {
  RingRun off(PfcWatchdogConfig{});
  off.net.run_until(kSecond);
  RingRun r(watchdog(PfcWatchdogAction::kReport));
  r.net.run_until(kSecond);
  ASSERT_EQ(r.net.pfc_deadlocks().size(), 1u);
  const PfcDeadlock& d = r.net.pfc_deadlocks()[0];
  EXPECT_EQ(d.cycle, r.clockwise);  // switch 0's port first: the smallest number
  EXPECT_GT(d.at, 100 * kMicrosecond);
  EXPECT_LT(d.at, 200 * kMicrosecond);
  EXPECT_NE(std::find(r.clockwise.begin(), r.clockwise.end(), d.port), r.clockwise.end());
  for (uint32_t p : r.clockwise) {
    EXPECT_EQ(r.net.pfc_watchdog(p).firings, 1u) << p;
    EXPECT_TRUE(r.net.port(p).paused[0]) << p;
  }
  EXPECT_EQ(r.net.pfc_watchdog_checks(), r.clockwise.size());
  EXPECT_EQ(total_drops(r.net), 0u);
  EXPECT_EQ(r.net.events_pending(), 0u);
  EXPECT_EQ(r.received(), off.received());
  EXPECT_EQ(r.net.events_processed(), off.net.events_processed());
}

// Expect (drop): every clockwise queue storms, is emptied and restored, traffic resumes and
// the ring deadlocks again, each time found as the same cycle; every flow sends all its bytes
// and each one is delivered or dropped by the watchdog (no other loss); at the end every queue
// is restored. The same seed gives the same run.
TEST(PfcWatchdog_Ring, DropBreaksTheDeadlockAndCountsWhatItDrops) {
  RingRun report(watchdog(PfcWatchdogAction::kReport));
  report.net.run_until(kSecond);
  RingRun r(watchdog(PfcWatchdogAction::kDrop));
  r.net.run_until(kSecond);
  const auto& found = r.net.pfc_deadlocks();
  ASSERT_GE(found.size(), 2u);
  EXPECT_EQ(found[0].at, report.net.pfc_deadlocks()[0].at);
  for (size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].cycle, r.clockwise) << i;
    if (i > 0) {
      EXPECT_GT(found[i].at, found[i - 1].at + 200 * kMicrosecond) << i;
    }
  }
  EXPECT_GT(r.received(), report.received());
  for (const FlowRecord& f : r.rec) EXPECT_EQ(f.sent, RingRun::kBytes);
  EXPECT_EQ(r.received() + total_drops(r.net) * 4096, RingRun::kBytes * r.rec.size());
  for (uint32_t p = 0; p < r.net.num_ports(); ++p) {
    EXPECT_EQ(r.net.port(p).stats.drops + r.net.port_stats(p).lossless_drops, 0u) << p;
    EXPECT_FALSE(r.net.pfc_watchdog(p).stormed) << p;
  }
  for (uint32_t p : r.clockwise) {
    EXPECT_EQ(r.net.pfc_watchdog(p).firings, found.size()) << p;
    EXPECT_GT(r.net.pfc_watchdog(p).drops, 0u) << p;
  }
  EXPECT_EQ(r.net.events_pending(), 0u);

  RingRun again(watchdog(PfcWatchdogAction::kDrop));
  again.net.run_until(kSecond);
  ASSERT_EQ(again.net.pfc_deadlocks().size(), found.size());
  for (size_t i = 0; i < found.size(); ++i) EXPECT_EQ(again.net.pfc_deadlocks()[i].at, found[i].at);
  EXPECT_EQ(again.received(), r.received());
  EXPECT_EQ(again.net.events_processed(), r.net.events_processed());
}

// Runs two ranks of one split fabric to `until` in this process, in the conservative windows
// run_windows() keeps (sim/partition.cc), handing each rank's outbox to the other.
void run_two(Network& a, Network& b, Time lookahead, Time until) {
  for (;;) {
    const Time next = std::min(a.next_event_time(), b.next_event_time());
    if (next > until) break;
    const Time end = lookahead >= until - next ? until : next + lookahead - 1;
    a.run_until(end);
    b.run_until(end);
    const std::vector<uint8_t> to_b = std::exchange(a.outboxes()[1], {});
    const std::vector<uint8_t> to_a = std::exchange(b.outboxes()[0], {});
    ASSERT_TRUE(b.deliver_remote(to_b).ok());
    ASSERT_TRUE(a.deliver_remote(to_a).ok());
    if (end == until) break;
  }
}

// Expect: split over two processes (the ring cut in two), the drop action's run is one
// process's: the same frames delivered per flow and the same watchdog counters per port. The
// cycle crosses the cut, so neither process finds it (each walks only its own ports) and
// the firings count as storms there.
TEST(PfcWatchdog_Ring, SplitOverTwoRanksActsAsOneProcess) {
  RingRun one(watchdog(PfcWatchdogAction::kDrop));
  one.net.run_until(kSecond);
  RingRun a(watchdog(PfcWatchdogAction::kDrop), 0, 2), b(watchdog(PfcWatchdogAction::kDrop), 1, 2);
  ASSERT_NE(a.lookahead, kNever);
  run_two(a.net, b.net, a.lookahead, kSecond);
  for (size_t f = 0; f < one.rec.size(); ++f) {
    EXPECT_EQ(a.rec[f].received + b.rec[f].received, one.rec[f].received) << f;
  }
  uint64_t firings = 0;
  for (uint32_t p = 0; p < one.net.num_ports(); ++p) {
    const Network& owner = a.net.owns_port(p) ? a.net : b.net;
    EXPECT_EQ(owner.pfc_watchdog(p).firings, one.net.pfc_watchdog(p).firings) << p;
    EXPECT_EQ(owner.pfc_watchdog(p).drops, one.net.pfc_watchdog(p).drops) << p;
    EXPECT_EQ(owner.port(p).stats.tx_frames, one.net.port(p).stats.tx_frames) << p;
    firings += owner.pfc_watchdog(p).firings;
  }
  EXPECT_GT(firings, 0u);
  EXPECT_FALSE(one.net.pfc_deadlocks().empty());
  EXPECT_TRUE(a.net.pfc_deadlocks().empty());
  EXPECT_TRUE(b.net.pfc_deadlocks().empty());
}

// An incast on a k = 4 fat-tree: 15 hosts send to host 0 at line rate, PFC on; the
// watchdog (report) checks every pause that lasts 5 us.
struct IncastRun {
  explicit IncastRun(PfcWatchdogConfig wd) : net(test::pfc_config(wd)) {
    FatTreeConfig fc;
    fc.k = 4;
    fc.host_link = fc.tor_agg_link = fc.agg_core_link = link100();
    EXPECT_TRUE(build_fat_tree(net, fc).ok());
    const auto hosts = static_cast<uint32_t>(net.num_hosts());
    for (uint32_t h = 0; h < hosts; ++h) apps.push_back(std::make_unique<UdpApp>(h, &rec));
    for (uint32_t h = 1; h < hosts; ++h) {
      apps[h]->add_flow(UdpFlow{h, 0, kBytes, 0, static_cast<uint16_t>(0xC000 + h)});
    }
    for (uint32_t h = 0; h < hosts; ++h) net.attach(h, apps[h].get());
    net.run_until(kSecond);
  }
  static constexpr uint64_t kBytes = 4096 * 200;
  Network net;
  std::vector<FlowRecord> rec;
  std::vector<std::unique_ptr<UdpApp>> apps;
};

// Expect: pauses outlast the detection time hundreds of times (storms), yet no cycle is ever
// found (up-down routing has no cyclic buffer dependency); every flow completes, at the same
// times as without the watchdog (report changes nothing).
TEST(PfcWatchdog_FatTree, IncastPausesLongButNeverFormsACycle) {
  PfcWatchdogConfig wd = watchdog(PfcWatchdogAction::kReport);
  wd.detection_time = 5 * kMicrosecond;
  IncastRun r(wd);
  IncastRun off(PfcWatchdogConfig{});
  uint64_t firings = 0;
  for (uint32_t p = 0; p < r.net.num_ports(); ++p) firings += r.net.pfc_watchdog(p).firings;
  EXPECT_GT(firings, 100u);
  EXPECT_TRUE(r.net.pfc_deadlocks().empty());
  ASSERT_EQ(r.rec.size(), off.rec.size());
  for (size_t f = 1; f < r.rec.size(); ++f) {
    EXPECT_EQ(r.rec[f].received, IncastRun::kBytes) << f;
    EXPECT_EQ(r.rec[f].finish, off.rec[f].finish) << f;
  }
}

// Expect: detection and restoration times outside [1 ns, 60 s] are refused by name.
TEST(PfcWatchdog_Config, RefusesTimesOutOfRange) {
  PfcWatchdogConfig wd;
  EXPECT_TRUE(check_pfc_watchdog(wd).ok());
  wd.detection_time = 0;
  absl::Status s = check_pfc_watchdog(wd);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("detection_time"), std::string::npos) << s;
  wd.detection_time = kMillisecond;
  wd.restoration_time = 61 * kSecond;
  s = check_pfc_watchdog(wd);
  EXPECT_NE(s.message().find("restoration_time"), std::string::npos) << s;
}

}  // namespace
}  // namespace uet::sim
