// RCCC inside the UET engine (transport/uet/, cc/rccc.h; spec/uet.md §3.4, §3.8.2, §3.12).
// 1. On the fake link (two endpoints, 100 Gb/s, simulated time): the sender spends its
//    speculative allowance and then only what was granted; grants let it finish; messages
//    arrive intact; lost credit is asked for again (no deadlock); READs need no credit.
// 2. On the simulator (uet_fabric_test.cc): an 8:1 incast of 2 MB writes with RCCC ends within
//    1.10x of the ideal with the fastest sender within 10 % of the slowest, and two flows
//    sharing the receiver's link get a fair share each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

UetConfig config_for(uint32_t ip, CcMode cc) {
  UetConfig c = testing::uet_config(ip, /*seed=*/42);
  c.cc = cc;
  c.rccc.speculative = 64 * 1024;  // 16 packets before any grant
  return c;
}

// Two endpoints on the fake link at 100 Gb/s; B holds the target region.
UetConfig with_grant_rate(UetConfig c, double fraction) {
  c.rccc.grant_rate_fraction = fraction;
  return c;
}

struct Pair {
  // `grant_rate`: B's grant pacing, as a fraction of the line rate.
  explicit Pair(CcMode cc, double grant_rate = cc::RcccConfig{}.grant_rate_fraction)
      : a(std::move(*UetEndpoint::create(config_for(kIpA, cc)))),
        b(std::move(*UetEndpoint::create(with_grant_rate(config_for(kIpB, cc), grant_rate)))),
        link(a.get(), b.get()) {
    link.set_rate_gbps(100);
  }
  std::unique_ptr<UetEndpoint> a, b;
  testing::FakeLink link;
};

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(3);
  for (auto& x : v) x = static_cast<uint8_t>(rng());
  return v;
}

bool is_request(const wire::Decoded& d) {
  return d.pds_type == wire::PdsType::kRudReq || d.pds_type == wire::PdsType::kRudCcReq;
}

// A frame from B that carries credit: a CREDIT packet or an ACK_CC with cc_type CREDIT.
bool carries_credit(const wire::Decoded& d) {
  if (const auto* c = d.pds_as<wire::PdsCtrl>(); c != nullptr) {
    return c->ctl_type() == wire::CtrlType::kCredit;
  }
  if (const auto* a = d.pds_as<wire::PdsAckCc>(); a != nullptr) {
    return a->cc_type() == wire::CcType::kCredit;
  }
  return false;
}

// ------------------------------------------------------------------ config

TEST(UetRccc_Config, RefusesBadCcAndRcccFieldsNamingThem) {
  UetConfig c = config_for(kIpA, CcMode::kRccc);
  c.rccc.quantum = 100;
  auto ep = UetEndpoint::create(c);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(std::string(ep.status().message()).rfind("UetConfig.rccc.quantum=100", 0), 0u)
      << ep.status();
  c = config_for(kIpA, CcMode::kRccc);
  c.rccc.max_credit_target = uint64_t{1} << 24;
  ep = UetEndpoint::create(c);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(std::string(ep.status().message()).find("UetConfig.rccc.max_credit_target"),
            std::string::npos);
  c = config_for(kIpA, CcMode::kRccc);
  c.cc = static_cast<CcMode>(7);
  ep = UetEndpoint::create(c);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(std::string(ep.status().message()).find("UetConfig.cc=7"), std::string::npos);
  EXPECT_STREQ(to_string(CcMode::kNsccRccc), "nscc+rccc");
}

// ------------------------------------------------------------------ fake link

TEST(UetRccc_Engine, NsccAloneSendsPlainRudRequestsAndNoCredit) {
  Pair p(CcMode::kNscc);
  const auto src = pattern(256 * 1024);
  std::vector<uint8_t> dst(src.size());
  const uint32_t key = *p.b->register_memory(dst.data(), dst.size());
  int cc_requests = 0;
  p.link.set_filter([&](int, const wire::Decoded& d, std::vector<uint8_t>&) {
    cc_requests += d.pds_type == wire::PdsType::kRudCcReq || carries_credit(d);
    return testing::Verdict{};
  });
  ASSERT_TRUE(p.a->post_write({1, kIpB, key, 0, src.data(), src.size()}).ok());
  p.link.run(kSecond);
  // Expect: the default is untouched by RCCC: RUD requests, no grants.
  EXPECT_EQ(cc_requests, 0);
  EXPECT_EQ(p.b->counters().credit_granted, 0u);
  EXPECT_TRUE(src == dst);
}

// Sends `bytes` A -> B under `cc` and checks the credit bound at every data packet A sends.
void write_against_credit(CcMode cc) {
  Pair p(cc, /*grant_rate=*/0.8);  // credit, not the sender's link, is the bottleneck
  constexpr size_t kBytes = 1 << 20;
  const auto src = pattern(kBytes);
  std::vector<uint8_t> dst(kBytes);
  const uint32_t key = *p.b->register_memory(dst.data(), dst.size());
  const uint64_t spec = config_for(kIpA, cc).rccc.speculative;
  uint64_t sent = 0, before_credit = 0, violations = 0;
  uint32_t last_target = 1, first_target = 0;
  p.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from != 0 || !is_request(d)) return testing::Verdict{};
    EXPECT_EQ(d.pds_type, wire::PdsType::kRudCcReq) << "RCCC requests are RUD_CC (§3.4)";
    if (const auto* h = d.pds_as<wire::PdsRudRodCc>(); h != nullptr) {
      if (sent == 0) first_target = h->credit_target();
      last_target = h->credit_target();
    }
    sent += d.payload.size() + d.elided;
    const uint64_t credit = p.a->counters().credit_received;
    if (credit == 0) before_credit = sent;
    // One packet may overdraw (credit > 0 lets a whole packet go).
    if (sent > spec + credit + 4096) ++violations;
    return testing::Verdict{};
  });
  ASSERT_TRUE(p.a->post_write({9, kIpB, key, 0, src.data(), src.size()}).ok());
  p.link.run(kSecond);
  Completion c;
  ASSERT_EQ(p.a->poll_completions(std::span(&c, 1)), 1u);
  const UetCounters& a = p.a->counters();
  const UetCounters& b = p.b->counters();
  std::printf("[ %s ] speculative %lu, sent before credit %lu, credit %lu (CREDIT %lu, in ACKs %lu), "
              "stalls %lu\n",
              to_string(cc), spec, before_credit, a.credit_received, a.rx_credit, a.rx_credit_acks,
              a.credit_stalls);
  // Expect: the speculative allowance, then only credit: never more than granted (+1 packet).
  EXPECT_EQ(violations, 0u);
  EXPECT_LE(before_credit, spec + 4096);
  EXPECT_GT(a.credit_stalls, 0u) << "it waited for credit at least once";
  // Expect: grants are what let the rest of the megabyte go, and they all arrived.
  EXPECT_GE(a.credit_received + spec, kBytes);
  EXPECT_EQ(a.credit_received, b.credit_granted);
  EXPECT_EQ(a.rx_credit + a.rx_credit_acks, b.tx_credit + b.tx_credit_acks);
  EXPECT_GT(b.tx_credit, 0u);
  // The first request asked for the backlog beyond the allowance (capped); the last for none.
  EXPECT_EQ(first_target, std::min<uint64_t>(kBytes - 4096 - (spec - 4096), 225'000));
  EXPECT_EQ(last_target, 0u);
  // Expect: the message is intact.
  EXPECT_EQ(c.status, OpStatus::kSuccess);
  EXPECT_TRUE(src == dst);
  EXPECT_EQ(a.tx_credit_req, 0u) << "nothing lost: no need to ask again";
}

TEST(UetRccc_Engine, SendsSpeculativePlusGrantedBytesAndTheWriteArrivesIntact) {
  write_against_credit(CcMode::kRccc);
}

TEST(UetRccc_Engine, WithNsccTooCreditStillBoundsWhatIsSent) {
  write_against_credit(CcMode::kNsccRccc);
}

TEST(UetRccc_Engine, LostCreditIsAskedForAgainAndTheWriteCompletes) {
  Pair p(CcMode::kRccc);
  constexpr size_t kBytes = 1 << 20;
  const auto src = pattern(kBytes);
  std::vector<uint8_t> dst(kBytes);
  const uint32_t key = *p.b->register_memory(dst.data(), dst.size());
  // Every frame from B that carries credit is lost for the first 100 us, and then every
  // fourth one: plain ACK_CC and CREDIT alike.
  int dropped = 0, seen = 0;
  p.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 1 && carries_credit(d) && (p.link.now() < 100 * kMicrosecond || ++seen % 4 == 0)) {
      ++dropped;
      v.copies = 0;
    }
    return v;
  });
  ASSERT_TRUE(p.a->post_write({5, kIpB, key, 0, src.data(), src.size()}).ok());
  p.link.run(kSecond);
  Completion c;
  ASSERT_EQ(p.a->poll_completions(std::span(&c, 1)), 1u);
  const UetCounters& a = p.a->counters();
  std::printf("[ lost credit ] dropped %d credit frames; CREDIT_REQ sent %lu, received %lu\n",
              dropped, a.tx_credit_req, p.b->counters().rx_credit_req);
  // Expect: the sender asked again after stalling, the receiver heard it and granted anew.
  EXPECT_GT(dropped, 10);
  EXPECT_GT(a.tx_credit_req, 0u);
  EXPECT_EQ(p.b->counters().rx_credit_req, a.tx_credit_req);
  EXPECT_GT(p.b->counters().credit_granted, a.credit_received) << "some grants were lost";
  EXPECT_EQ(c.status, OpStatus::kSuccess);
  EXPECT_TRUE(src == dst);
}

TEST(UetRccc_Engine, LosingEveryEarlyFrameFromTheTargetStillCompletes) {
  // No ACK and no credit reaches A for 300 us: the PDC is not established, so a CREDIT_REQ
  // could name no target PDC; the credit timer lets one packet go as a probe.
  Pair p(CcMode::kRccc);
  const auto src = pattern(512 * 1024);
  std::vector<uint8_t> dst(src.size());
  const uint32_t key = *p.b->register_memory(dst.data(), dst.size());
  p.link.set_filter([&](int from, const wire::Decoded&, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 1 && p.link.now() < 300 * kMicrosecond) v.copies = 0;
    return v;
  });
  ASSERT_TRUE(p.a->post_write({6, kIpB, key, 0, src.data(), src.size()}).ok());
  p.link.run(kSecond);
  Completion c;
  ASSERT_EQ(p.a->poll_completions(std::span(&c, 1)), 1u);
  EXPECT_EQ(c.status, OpStatus::kSuccess);
  EXPECT_TRUE(src == dst);
  std::printf("[ silent target ] probes %lu, timeouts %lu, CREDIT_REQ %lu\n",
              p.a->counters().credit_probes, p.a->counters().timeouts,
              p.a->counters().tx_credit_req);
  // Expect: with no credit and no PDC id to ask with, the sender probed, one packet at a time.
  EXPECT_GT(p.a->counters().credit_probes, 0u);
}

TEST(UetRccc_Engine, ReadsNeedNoCredit) {
  Pair p(CcMode::kRccc);
  const auto remote = pattern(512 * 1024);
  std::vector<uint8_t> local(remote.size());
  std::vector<uint8_t> region = remote;
  const uint32_t key = *p.b->register_memory(region.data(), region.size());
  ASSERT_TRUE(
      p.a->post_read(
             {.wr_id = 3, .peer = kIpB, .rkey = key, .local = local.data(), .length = local.size()})
          .ok());
  p.link.run(kSecond);
  Completion c;
  ASSERT_EQ(p.a->poll_completions(std::span(&c, 1)), 1u);
  // Expect: 128 READ requests of 4 KiB each, far beyond the 64 KiB allowance, go without a
  // grant: they carry no payload toward the target.
  EXPECT_EQ(c.status, OpStatus::kSuccess);
  EXPECT_TRUE(local == remote);
  EXPECT_EQ(p.a->counters().credit_received, 0u);
  EXPECT_EQ(p.a->counters().credit_stalls, 0u);
}

}  // namespace
}  // namespace uet
