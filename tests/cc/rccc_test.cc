// cc/rccc.h: the receiver shares its rate fairly in paced quanta; a sender speculates, then
// sends against credit; together they finish an incast fairly at the receiver's line rate.
#include "cc/rccc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace uet::cc {
namespace {

TEST(Rccc_Config, RefusesEachBadField) {
  auto bad = [](auto mutate, const char* field) {
    RcccConfig c;
    mutate(c);
    const absl::Status s = c.validate();
    ASSERT_FALSE(s.ok()) << field;
    EXPECT_NE(std::string(s.message()).find(field), std::string::npos) << s;
  };
  EXPECT_TRUE(RcccConfig{}.validate().ok());
  bad([](RcccConfig& c) { c.link_gbps = 0.5; }, "link_gbps");
  bad([](RcccConfig& c) { c.quantum = 100; }, "quantum");
  bad([](RcccConfig& c) { c.speculative = uint64_t{1} << 25; }, "speculative");
  bad([](RcccConfig& c) { c.max_credit_target = 100; }, "max_credit_target");
  bad([](RcccConfig& c) { c.max_credit_target = uint64_t{1} << 24; }, "max_credit_target");
  bad([](RcccConfig& c) { c.max_senders = 0; }, "max_senders");
  bad([](RcccConfig& c) { c.grant_rate_fraction = 0; }, "grant_rate_fraction");
}

// Takes every grant due up to `until`, polling every `step`.
std::vector<uint64_t> drain(RcccReceiver& r, Time from, Time until, Time step, uint32_t n) {
  std::vector<uint64_t> got(n, 0);
  for (Time t = from; t < until; t += step) {
    while (auto g = r.next_grant(t)) got[g->sender] += g->bytes;
  }
  return got;
}

TEST(Rccc_Receiver, SharesItsRateEquallyAndPacesAtTheLineRate) {
  RcccConfig c;
  c.max_credit_target = (uint64_t{1} << 24) - 1;
  RcccReceiver r(c);
  constexpr uint32_t kSenders = 7;
  for (uint32_t s = 0; s < kSenders; ++s) r.on_request(s, c.max_credit_target, 0);
  EXPECT_EQ(r.active_senders(), kSenders);
  const Time span = 500 * kMicrosecond;
  const auto got = drain(r, 0, span, 100 * kNanosecond, kSenders);
  const auto [lo, hi] = std::minmax_element(got.begin(), got.end());
  EXPECT_LE(*hi - *lo, c.quantum) << "round robin: within one quantum";
  uint64_t total = 0;
  for (uint64_t g : got) total += g;
  const double line = 100e9 / 8 * 0.99 * 500e-6;  // bytes at 99 % of 100 Gb/s (the default)
  EXPECT_NEAR(static_cast<double>(total), line, c.quantum * 1.5);
}

TEST(Rccc_Receiver, GrantsOnlyWhatIsWantedAndGoesIdle) {
  RcccConfig c;
  RcccReceiver r(c);
  EXPECT_EQ(r.next_event(), kNever);
  r.on_request(3, 40'000, 0);
  const auto got = drain(r, 0, 100 * kMicrosecond, 50 * kNanosecond, 4);
  EXPECT_EQ(got[3], 40'000u);
  EXPECT_EQ(r.active_senders(), 0u);
  EXPECT_EQ(r.next_event(), kNever);
  // A newer target replaces the older one.
  r.on_request(3, 100'000, 200 * kMicrosecond);
  r.on_request(3, 10'000, 200 * kMicrosecond);
  EXPECT_EQ(drain(r, 200 * kMicrosecond, 300 * kMicrosecond, 50 * kNanosecond, 4)[3], 10'000u);
  // Out-of-range senders and closes are ignored or forgotten, never a crash.
  r.on_request(c.max_senders + 5, 1000, 0);
  r.on_request(1, 50'000, 300 * kMicrosecond);
  r.on_close(1);
  EXPECT_FALSE(r.next_grant(400 * kMicrosecond).has_value());
}

TEST(Rccc_Receiver, AnIdleReceiverDoesNotBankCredit) {
  RcccConfig c;
  RcccReceiver r(c);
  r.on_request(0, 4096, 0);
  ASSERT_TRUE(r.next_grant(0).has_value());
  // Long idle, then demand: grants come at line rate from now, not a burst for the idle time.
  r.on_request(0, c.max_credit_target, kMillisecond);
  const auto got = drain(r, kMillisecond, kMillisecond + 10 * kMicrosecond, 10 * kNanosecond, 1);
  EXPECT_LE(got[0], static_cast<uint64_t>(100e9 / 8 * 0.99 * 10e-6) + 2 * c.quantum);
}

TEST(Rccc_Sender, SpeculatesThenSendsAgainstCredit) {
  RcccConfig c;
  c.speculative = 8192;
  RcccSender s(c);
  EXPECT_EQ(s.credit_target(100'000), 100'000u - 8192);
  ASSERT_TRUE(s.can_send());
  s.on_sent(4096);
  ASSERT_TRUE(s.can_send());
  s.on_sent(4096);
  EXPECT_FALSE(s.can_send());
  EXPECT_EQ(s.credit_target(50'000), 50'000u);
  s.on_credit(4096);
  EXPECT_TRUE(s.can_send());
  EXPECT_EQ(s.credit_target(1'000'000), c.max_credit_target);  // capped
  EXPECT_EQ(s.credit_target(0), 0u);
}

// A sender in debt (a packet went on the last byte of credit, or a resend) asks for the debt
// as well: a backlog smaller than the debt asking only for itself would never reach positive
// credit with one grant, and waited a credit timeout per grant (a 1-byte message behind a
// 740-byte debt stalled a soak run).
TEST(Rccc_Sender, ADebtIsAskedForWithTheBacklog) {
  RcccConfig c;
  c.speculative = 1000;
  RcccSender s(c);
  s.on_sent(1740);
  ASSERT_EQ(s.credit(), -740);
  EXPECT_EQ(s.credit_target(1), 741u);
  s.on_credit(s.credit_target(1));
  EXPECT_TRUE(s.can_send());
  EXPECT_EQ(s.credit_target(1), 0u);
}

TEST(Rccc_Sender, StopSpeculatingDropsTheAllowanceButKeepsADebt) {
  RcccConfig c;
  c.speculative = 65536;
  RcccSender s(c);
  s.on_sent(4096);
  s.stop_speculating();
  // Expect: the 61440 unused speculative bytes are gone; only grants let it send now.
  EXPECT_EQ(s.credit(), 0);
  EXPECT_FALSE(s.can_send());
  s.on_credit(4096);
  s.on_sent(8192);  // one packet may overdraw
  s.stop_speculating();
  EXPECT_EQ(s.credit(), -4096) << "a debt is not forgiven";
}

// An incast on the credit loop alone (one-way delay 2 us each way, no other fabric): 16 senders
// with 1 MB each, no speculation. Every byte is sent against credit; they finish together at
// the receiver's granted rate.
TEST(Rccc_Loop, IncastFinishesFairlyAtTheGrantRate) {
  RcccConfig c;
  c.speculative = 0;
  RcccReceiver r(c);
  constexpr uint32_t kN = 16;
  constexpr uint64_t kBytes = 1'000'000;
  constexpr Time kDelay = 2 * kMicrosecond;
  std::vector<RcccSender> senders(kN, RcccSender(c));
  std::vector<uint64_t> left(kN, kBytes);
  std::vector<Time> done(kN, kNever);
  struct InFlight {
    Time at;
    uint32_t sender;
    uint64_t bytes;
  };
  std::vector<InFlight> grants;    // receiver -> sender, arriving at `at`
  std::vector<InFlight> requests;  // sender -> receiver: every packet carries credit_target
  for (uint32_t s = 0; s < kN; ++s) r.on_request(s, senders[s].credit_target(left[s]), kDelay);
  const Time step = 20 * kNanosecond;
  for (Time t = kDelay; t < 10 * kMillisecond; t += step) {
    while (auto g = r.next_grant(t)) grants.push_back({t + kDelay, g->sender, g->bytes});
    // Deliver what is due, in sending order (one fixed delay: FIFO).
    size_t due = 0;
    while (due < grants.size() && grants[due].at <= t) {
      senders[grants[due].sender].on_credit(grants[due].bytes);
      ++due;
    }
    grants.erase(grants.begin(), grants.begin() + static_cast<std::ptrdiff_t>(due));
    due = 0;
    while (due < requests.size() && requests[due].at <= t) {
      r.on_request(requests[due].sender, requests[due].bytes, t);
      ++due;
    }
    requests.erase(requests.begin(), requests.begin() + static_cast<std::ptrdiff_t>(due));
    for (uint32_t s = 0; s < kN; ++s) {
      while (left[s] > 0 && senders[s].can_send()) {
        const auto b = static_cast<uint32_t>(std::min<uint64_t>(left[s], 4096));
        senders[s].on_sent(b);
        left[s] -= b;
        requests.push_back({t + kDelay, s, senders[s].credit_target(left[s])});
        if (left[s] == 0) done[s] = t + kDelay;
      }
    }
    if (std::all_of(left.begin(), left.end(), [](uint64_t l) { return l == 0; })) break;
  }
  const auto [first, last] = std::minmax_element(done.begin(), done.end());
  ASSERT_NE(*last, kNever) << "every sender finished";
  const double ideal = kN * kBytes * 8 / (100e9 * 0.99) * 1e12;  // ps at the grant rate
  EXPECT_LT(static_cast<double>(*last), ideal * 1.05 + 4 * kDelay);
  EXPECT_GT(static_cast<double>(*first), 0.9 * static_cast<double>(*last))
      << "fastest sender within 10 % of the slowest";
}

}  // namespace
}  // namespace uet::cc
