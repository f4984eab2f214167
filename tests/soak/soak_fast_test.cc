// The fault-injection soak, small (about 10^4 messages per transport): the fast tier's version
// of soak_test.cc. See tests/soak/soak.h for what is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/network.h"
#include "tests/common/fake_link.h"
#include "tests/soak/soak.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::soak {
namespace {

SoakConfig small(Kind kind) {
  SoakConfig c{.kind = kind, .seed = 11, .messages = 10'000};
  c.leaves = 2;  // 16 hosts
  c.peers = 6;
  c.bad_key = kind == Kind::kUet ? 0.005 : 0;
  return c;
}

TEST(Soak_Uet, TenThousandMessagesUnderEveryFaultArriveOnceIntact) {
  SoakConfig c = small(Kind::kUet);
  c.bad_key = 0;  // see BadKeyWritesEndInRemoteAccessErrorUnderFaults below
  run_checked(c);
}

// The same soak with some writes posted with a key the target never issued: each must end
// in kRemoteAccessError with nothing placed, even when the ACK carrying the refusal is lost
// (Soak_UetRegression below).
TEST(Soak_Uet, BadKeyWritesEndInRemoteAccessErrorUnderFaults) {
  const SoakConfig c = small(Kind::kUet);
  run_checked(c);
}

// The same soak with PDCs closing after 5 us idle (spec/uet.md §3.12): PDCs close and reopen
// all the time under every fault, with bad-key writes in flight.
TEST(Soak_Uet, PdcsClosingAndReopeningUnderFaults) {
  SoakConfig c = small(Kind::kUet);
  c.uet_idle_timeout = 5 * kMicrosecond;
  const SoakResult r = run_checked(c);
  EXPECT_GT(r.pdcs_closed, 300u);  // 514 at this seed, 192 of them in the final drain
}

// Half the writes go ROD (their own PDCs, in-order execution at the target), with bad-key
// writes and PDCs closing after 5 us idle, under every fault.
TEST(Soak_Uet, RodAndRudWritesMixedUnderFaults) {
  SoakConfig c = small(Kind::kUet);
  c.uet_rod = 0.5;
  c.uet_idle_timeout = 5 * kMicrosecond;
  const SoakResult r = run_checked(c);
  EXPECT_GT(r.rod_posted, 4000u);
  EXPECT_GT(r.rod_staged, 0u);  // out-of-order ROD arrivals were held, and still placed once
}

// Every UET delivery mode at once -- RUD, ROD, RUDI (no PDC, copies executed again) and UUD
// (one packet, unreliable) -- with half the hosts on RCCC credit, bad keys and PDCs closing,
// under every fault. A RUDI copy landing after its range was reused, or a UUD write placed
// in part, fails the run.
TEST(Soak_Uet, EveryDeliveryModeAndRcccMixedUnderFaults) {
  SoakConfig c = small(Kind::kUet);
  c.uet_rod = 0.2;
  c.uet_rudi = 0.2;
  c.uet_uud = 0.1;
  c.uet_rccc = 0.5;
  c.uet_idle_timeout = 5 * kMicrosecond;
  const SoakResult r = run_checked(c);
  EXPECT_GT(r.rudi_posted, 1500u);
  EXPECT_GT(r.uud_posted, 700u);
  EXPECT_GT(r.uud_lost, 0u);                  // the faults reach UUD too, and nothing repairs it
  EXPECT_GT(r.rudi_executed, r.rudi_posted);  // duplicates and resends were run again
  EXPECT_GT(r.rccc_hosts, 0u);
}

// Tagged sends (the longer ones by rendezvous, some deferrable) and fetching atomics (RUD and ROD) mixed with
// writes of every mode under every fault, half the tagged sends matched on arrival and half held
// unexpected until their receive is posted: each received exactly once, whole, with its tag,
// source and header data, no rendezvous timed out; each atomic executed exactly once (every
// pair's counter equals its adds, expect_sound).
TEST(Soak_Uet, TaggedSendsAndAtomicsMixedWithEveryModeUnderFaultsRunOnceWhole) {
  SoakConfig c = small(Kind::kUet);
  c.uet_tagged = 0.4;
  c.uet_rendezvous_bytes = 8192;  // the longer tagged sends go by rendezvous
  c.uet_deferrable = 0.3;          // some deferrable instead (deferred when unexpected)
  c.atomics = 0.15;
  c.uet_rod = 0.2;
  c.uet_rudi = 0.1;
  c.uet_uud = 0.05;
  c.uet_rccc = 0.5;
  c.uet_idle_timeout = 20 * kMicrosecond;
  const SoakResult r = run_checked(c);
  EXPECT_GT(r.tagged_posted, 2000u);
  EXPECT_GT(r.tagged_late, 900u);
  EXPECT_GT(r.atomics_ok, 500u);
  EXPECT_GT(r.atomic_replays, 0u);
  EXPECT_GT(r.retransmissions, 0u);
  EXPECT_GT(r.rendezvous, 200u);
  EXPECT_GT(r.rendezvous_reads, r.rendezvous);
  EXPECT_EQ(r.rendezvous_timeouts, 0u);
  EXPECT_GT(r.deferrals, 100u);
  EXPECT_GT(r.deferral_restarts, 100u);
  EXPECT_EQ(r.deferral_timeouts, 0u);
}

// TSS (spec/uet.md §5): every frame sealed, keys rotating every 500 us with the AN bit, under
// every fault (trimming included: trimmed sealed requests are read without their tag), with
// PDCs closing and reopening (the start-PSN guard, §5.6) and every delivery mode.
TEST(Soak_Uet, SealedFramesWithKeyRotationUnderFaultsArriveOnceIntact) {
  SoakConfig c = small(Kind::kUet);
  c.uet_tss = true;
  c.tss_rotate_every = 500 * kMicrosecond;
  c.uet_rod = 0.1;
  c.uet_rudi = 0.1;
  c.uet_uud = 0.05;
  c.uet_idle_timeout = 20 * kMicrosecond;
  const SoakResult r = run_checked(c);
  EXPECT_GE(r.tss_rotations, 2u);
  EXPECT_GT(r.pdcs_closed, 0u);
  // The fabric's duplicates are caught as replays (a retransmission has a fresh TSC).
  const uint64_t replays = r.tss_drops[static_cast<size_t>(tss::Drop::kReplay)];
  EXPECT_GT(replays, 0u);
  EXPECT_LE(replays, r.duplicates);
}

// An RCCC initiator that stalls on credit while resending, and whose resend a late ACK then
// makes needless, finds nothing new to send when its credit timer fires. The timer must
// still clear the blocked mark (on_timer()): otherwise the next stall neither asks for credit
// (credit_blocked() returns early for a blocked PDC) nor arms a timer, and that PDC's writes
// wait for ever. The long soak's UET run (soak_long_test.cc) up to its first stuck message
// gets there at this seed (tests/README.md, "Long tier").
TEST(Soak_UetRegression, CreditTimerThatFoundNothingToSendDoesNotSilenceTheNextStall) {
  SoakConfig c;
  c.kind = Kind::kUet;
  c.seed = 2026;
  c.messages = 42'000;  // the first stuck message was 40527
  c.bad_key = 0.002;
  c.uet_rod = 0.15;
  c.uet_rudi = 0.15;
  c.uet_uud = 0.05;
  c.uet_rccc = 0.5;
  c.uet_idle_timeout = 20 * kMicrosecond;
  const SoakResult r = run_checked(c);
  EXPECT_TRUE(r.first_stuck.empty()) << r.first_stuck;
}

TEST(Soak_Roce, TenThousandMessagesUnderEveryFaultArriveOnceIntact) {
  const SoakConfig c = small(Kind::kRoce);
  run_checked(c);
}

// RC's FETCH_ADD mixed with the writes under every fault (PFC, go-back-N): each executed once,
// however often go-back-N resends it (the responder replays duplicates from its cache), every
// pair's counter exact (expect_sound).
TEST(Soak_Roce, FetchAddsMixedWithWritesUnderEveryFaultRunOnce) {
  SoakConfig c = small(Kind::kRoce);
  c.atomics = 0.15;
  const SoakResult r = run_checked(c);
  EXPECT_GT(r.atomics_ok, 1000u);
  EXPECT_GT(r.atomic_replays, 0u);  // go-back-N resent some, each answered from the cache
}

// UET engine bug found by the soak (fixed: the target keeps a refusal, as a hole in CACK/SACK,
// until the initiator's clear PSN passes it; transport/uet/uet_endpoint.h Pdc::gtd): a write
// the target refused (bad key) completes as a SUCCESS when the one ACK that carries the
// refusal (the SES response) is lost, or overtaken, and a later ACK covers its PSN.
// Diagnosis: build_ack() marks the refused PSN received only when it builds the ACK carrying
// the response (rsp ring), then forgets the refusal; every later ACK's CACK/SACK covers the
// PSN without a response, and rx_ack() completes the write with kSuccess. A duplicate of the
// refused packet is re-ACKed without the response too. Proposed fix (spec/uet.md §3.3
// clear_psn_offset, §4.6): the target keeps each refusal until the initiator clears it (the
// initiator sends clear_psn_offset = base_psn - psn on its requests), attaches the oldest
// live refusal to every ACK that covers its PSN (capping CACK below, and leaving out of the
// SACK, any second live refusal it cannot carry), and answers a duplicate of a refused PSN
// with the stored refusal.
TEST(Soak_UetRegression, LostAckCarryingTheRefusalStillEndsInRemoteAccessError) {
  UetConfig ca, cb;
  ca.local_ip4 = sim::Network::host_ip4(0);
  cb.local_ip4 = sim::Network::host_ip4(1);
  ca.local_mac = sim::Network::host_mac(0);
  cb.local_mac = sim::Network::host_mac(1);
  auto a = std::move(*UetEndpoint::create(ca));
  auto b = std::move(*UetEndpoint::create(cb));
  std::vector<uint8_t> src(100, 0x5A), dst(4096, 0);
  const uint32_t key = *b->register_memory(dst.data(), dst.size());
  testing::FakeLink link(a.get(), b.get());
  int refusals = 0;
  link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 1 && d.ses_as<wire::SesResponse>() != nullptr && ++refusals == 1) v.copies = 0;
    return v;
  });
  ASSERT_TRUE(a->post_write({1, cb.local_ip4, key + 7, 0, src.data(), src.size()}).ok());
  ASSERT_TRUE(a->post_write({2, cb.local_ip4, key, 0, src.data(), src.size()}).ok());
  link.run(kSecond);
  std::vector<Completion> c(4);
  c.resize(a->poll_completions(c));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].wr_id, 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRemoteAccessError) << to_string(c[0].status);
  EXPECT_EQ(c[1].status, OpStatus::kSuccess);
}

// UET engine bug found by the soak (fixed: a SYN with another start PSN replaces the stale
// target PDC, and PDC ids are reused FIFO): a PDC the initiator closed (here: retries exhausted while
// the peer's ACKs were lost; in the soak: a NACK INV_DPDCID) cannot be opened again. The next
// write to that peer allocates a new initiator PDC -- the same PDC id, as the free list is a
// stack -- and sends a SYN with a new random start PSN. The target still holds its PDC for
// (peer, SPDCID) (target PDCs are never freed), finds it through target_by_peer_pdc_ in
// rx_request() and takes the SYN for a packet of the old PDC: the new PSNs are far outside
// the old window (NACK PSN_OOR_WINDOW) and its ACKs carry the old PSN space, which the new
// initiator PDC drops as stale. Every later write to that peer ends in kRetriesExhausted.
// Proposed fix: record the start PSN (psn - psn_offset) in the target PDC; a SYN for an
// existing (peer, SPDCID) with another start PSN opens a new incarnation (reset the target
// PDC's receive state, or free it and allocate anew), while a SYN with the same start PSN is
// a retransmission as today. The initiator could also avoid reusing a just-closed PDC id
// (a FIFO free list).
TEST(Soak_UetRegression, WriteAfterAFailedPdcOpensANewOneTheTargetAccepts) {
  UetConfig ca, cb;
  ca.local_ip4 = sim::Network::host_ip4(0);
  cb.local_ip4 = sim::Network::host_ip4(1);
  ca.local_mac = sim::Network::host_mac(0);
  cb.local_mac = sim::Network::host_mac(1);
  ca.max_retries = 2;
  auto a = std::move(*UetEndpoint::create(ca));
  auto b = std::move(*UetEndpoint::create(cb));
  std::vector<uint8_t> src(100, 0x5A), dst(4096, 0);
  const uint32_t key = *b->register_memory(dst.data(), dst.size());
  testing::FakeLink link(a.get(), b.get());
  bool lose_acks = true;  // B's answers are lost: A's first PDC times out for good
  link.set_filter([&](int from, const wire::Decoded&, std::vector<uint8_t>&) {
    testing::Verdict v;
    if (from == 1 && lose_acks) v.copies = 0;
    return v;
  });
  ASSERT_TRUE(a->post_write({1, cb.local_ip4, key, 0, src.data(), src.size()}).ok());
  link.run(kSecond);
  std::vector<Completion> c(4);
  c.resize(a->poll_completions(c));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, OpStatus::kRetriesExhausted);
  // The path heals; the next write opens a new PDC.
  lose_acks = false;
  std::fill(src.begin(), src.end(), uint8_t{0xA7});
  ASSERT_TRUE(a->post_write({2, cb.local_ip4, key, 0, src.data(), src.size()}).ok());
  link.run(link.now() + kSecond);
  c.resize(4);
  c.resize(a->poll_completions(c));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 2u);
  EXPECT_EQ(c[0].status, OpStatus::kSuccess) << to_string(c[0].status);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
}

}  // namespace
}  // namespace uet::soak
