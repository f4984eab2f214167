// TSS in the UET engine (UetConfig::tss, spec/uet.md §5) on the fake link: every frame sealed,
// writes intact under loss, reordering and a key rotation mid-flow; and what a hostile or
// mistaken peer gets: clear frames, tampered bytes, replays, an unknown domain, a retired key,
// a replayed SYN of a closed PDC. Each is dropped with its reason counted and nothing placed.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/payload.h"
#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/wire/checksum.h"

namespace uet {
namespace {

using testing::drain;
using testing::pattern;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kSdi = 0x00ABCD;

tss::Key key_n(uint8_t n) {
  tss::Key k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(n * 29 + i * 7);
  return k;
}

UetConfig config_for(uint32_t ip, bool sealed = true, uint32_t sdi = kSdi) {
  UetConfig c = testing::uet_config(ip, /*seed=*/7);
  c.idle_timeout = 20 * kMicrosecond;  // PDCs close soon after their last write
  if (sealed) {
    c.tss.enabled = true;
    tss::DomainConfig d;
    d.sdi = sdi;
    d.key[0] = key_n(1);
    d.installed[0] = true;
    c.tss.domains.push_back(d);
    c.tss.tx_sdi = sdi;
  }
  return c;
}

// Two endpoints on the fake link and a 1 MiB region at B, poisoned.
struct Pair {
  std::unique_ptr<UetEndpoint> a, b;
  testing::FakeLink link;
  std::vector<uint8_t> region = std::vector<uint8_t>(1 << 20, 0xEE);
  uint32_t rkey = 0;
  Pair(const UetConfig& ca, const UetConfig& cb)
      : a(std::move(*UetEndpoint::create(ca))), b(std::move(*UetEndpoint::create(cb))),
        link(a.get(), b.get()) {
    rkey = *b->register_memory(region.data(), region.size());
  }
  // The engine reads a write's bytes until it completes: the pair keeps a copy that long.
  void write(uint64_t wr_id, const std::vector<uint8_t>& src, uint64_t offset = 0) {
    sources.push_back(std::make_unique<std::vector<uint8_t>>(src));
    const std::vector<uint8_t>& kept = *sources.back();
    ASSERT_TRUE(a->post_write({wr_id, kIpB, rkey, offset, kept.data(), kept.size()}).ok());
  }
  std::vector<std::unique_ptr<std::vector<uint8_t>>> sources;
  // A's one write completed successfully and `src` is at `offset` in B's region.
  ::testing::AssertionResult delivered(const std::vector<uint8_t>& src, uint64_t offset) {
    const auto c = drain(*a);
    if (c.size() != 1) return ::testing::AssertionFailure() << c.size() << " completions";
    if (c[0].status != OpStatus::kSuccess) return ::testing::AssertionFailure() << "not a success";
    if (!std::equal(src.begin(), src.end(), region.begin() + static_cast<ptrdiff_t>(offset)))
      return ::testing::AssertionFailure() << "bytes differ";
    return ::testing::AssertionSuccess();
  }
  bool untouched() const {
    return std::all_of(region.begin(), region.end(), [](uint8_t v) { return v == 0xEE; });
  }
};

bool sealed(const wire::Decoded& d) { return d.tss != nullptr && d.pds == nullptr; }

// Refreshes the UDP checksum after a test rewrote a byte, so only TSS can notice.
void refresh_udp(std::vector<uint8_t>& bytes) {
  wire::Udp* u = wire::as<wire::Udp>(bytes.data() + 34);
  u->set_checksum(0);
}

TEST(UetTss_RoundTrip, WritesArriveIntactAndEveryFrameOnTheWireIsSealed) {
  Pair p(config_for(kIpA), config_for(kIpB));
  size_t clear = 0;
  p.link.set_filter([&](int, const wire::Decoded& d, std::vector<uint8_t>&) {
    clear += !sealed(d);
    return testing::Verdict{};
  });
  const auto src = pattern(256 * 1024 + 77, 1);
  p.write(1, src, 1000);
  p.link.run(kSecond);
  EXPECT_TRUE(p.delivered(src, 1000));
  // Expect: requests, ACKs and the closing CLOSE all sealed; the target opened all it got.
  EXPECT_EQ(clear, 0u);
  EXPECT_GT(p.a->tss()->counters().sealed, 64u);
  EXPECT_EQ(p.b->tss()->counters().opened, p.a->tss()->counters().sealed);
  EXPECT_EQ(p.a->tss()->counters().opened, p.b->tss()->counters().sealed);
  EXPECT_EQ(p.b->tss()->counters().dropped() + p.a->tss()->counters().dropped(), 0u);
  EXPECT_GT(p.a->counters().pdcs_closed, 0u);
}

TEST(UetTss_RoundTrip, LossReorderingDuplicationAndARotationMidFlowDeliverEachWriteOnce) {
  Pair p(config_for(kIpA), config_for(kIpB));
  std::mt19937_64 rng(5);
  p.link.set_filter([&](int, const wire::Decoded&, std::vector<uint8_t>&) {
    testing::Verdict v;
    const uint64_t r = rng() % 100;
    if (r < 3) v.copies = 0;                                       // lost
    if (r >= 3 && r < 6) v.copies = 2;                             // duplicated
    v.delay = static_cast<Time>(rng() % 3000) * kNanosecond;       // reordered
    v.dup_delay = static_cast<Time>(rng() % 3000) * kNanosecond;
    return v;
  });
  std::vector<std::vector<uint8_t>> srcs;
  for (int i = 0; i < 8; ++i) srcs.push_back(pattern(64 * 1024, 10 + i));
  for (int i = 0; i < 4; ++i) p.write(i, srcs[i], uint64_t(i) * 64 * 1024);
  p.link.run(p.link.now() + 30 * kMicrosecond);  // mid-flow
  // §5.4: install the new key at both, switch both, run, retire the old one at both.
  for (UetEndpoint* ep : {p.a.get(), p.b.get()}) {
    ASSERT_TRUE(ep->tss()->install_key(kSdi, 1, key_n(2)).ok());
  }
  for (UetEndpoint* ep : {p.a.get(), p.b.get()}) ASSERT_TRUE(ep->tss()->activate(1).ok());
  for (int i = 4; i < 8; ++i) p.write(i, srcs[i], uint64_t(i) * 64 * 1024);
  p.link.run(p.link.now() + 100 * kMicrosecond);
  for (UetEndpoint* ep : {p.a.get(), p.b.get()}) ASSERT_TRUE(ep->tss()->retire(kSdi, 0).ok());
  p.link.run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 8u);
  for (const Completion& x : c) EXPECT_EQ(x.status, OpStatus::kSuccess) << x.wr_id;
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(std::equal(srcs[i].begin(), srcs[i].end(), p.region.begin() + i * 64 * 1024))
        << i;
  }
  // Expect: the duplicates were caught as replays by TSS (not executed twice), and frames of
  // both associations were opened.
  const auto& kb = p.b->tss()->counters();
  EXPECT_GT(kb.drops[static_cast<size_t>(tss::Drop::kReplay)], 0u);
  EXPECT_EQ(p.b->tss()->tx_an(), 1);
  EXPECT_EQ(kb.drops[static_cast<size_t>(tss::Drop::kBadTag)], 0u);
}

TEST(UetTss_Hostile, ClearFramesAreRefusedAndNothingIsPlaced) {
  UetConfig clear = config_for(kIpA, /*sealed=*/false);
  clear.max_retries = 2;
  Pair p(clear, config_for(kIpB));
  p.write(1, pattern(8192, 2));
  p.link.run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NE(c[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(p.untouched());
  EXPECT_GT(p.b->counters().rx_clear_refused, 0u);
  EXPECT_EQ(p.b->counters().tx_acks, 0u);  // never answered
}

TEST(UetTss_Hostile, SealedFramesAtAClearEndpointAreRefused) {
  UetConfig clear = config_for(kIpB, /*sealed=*/false);
  UetConfig a = config_for(kIpA);
  a.max_retries = 2;
  Pair p(a, clear);
  p.write(1, pattern(8192, 2));
  p.link.run(kSecond);
  EXPECT_TRUE(p.untouched());
  EXPECT_GT(p.b->counters().rx_sealed_unexpected, 0u);
}

// spec/uet.md §5.1: sealed frames go with UDP checksum 0 unless TssConfig::udp_checksum; a
// byte damaged on the way then fails the tag (bad_tag), or the checksum when one is sent, and
// either way nothing damaged is placed and the write completes from a retransmission.
TEST(UetTss_Checksum, SealedFramesCarryNoUdpChecksumAndTheTagCatchesDamage) {
  for (const bool with_checksum : {false, true}) {
    UetConfig ca = config_for(kIpA), cb = config_for(kIpB);
    ca.tss.udp_checksum = cb.tss.udp_checksum = with_checksum;
    Pair p(ca, cb);
    size_t frames = 0, zero = 0, damaged = 0;
    p.link.set_filter([&](int from, const wire::Decoded&, std::vector<uint8_t>& bytes) {
      ++frames;
      const wire::Udp* u = wire::as<wire::Udp>(bytes.data() + 34);
      zero += u->checksum() == 0;
      if (from == 0 && bytes.size() > 1000 && damaged < 3) {  // a payload byte, as sent
        bytes[bytes.size() - 100] ^= 0x10;
        ++damaged;
      }
      return testing::Verdict{};
    });
    const auto src = pattern(64 * 1024, 4);
    p.write(1, src);
    p.link.run(kSecond);
    EXPECT_TRUE(p.delivered(src, 0));
    EXPECT_EQ(damaged, 3u);
    const uint64_t bad_tag = p.b->tss()->counters().drops[static_cast<size_t>(tss::Drop::kBadTag)];
    const uint64_t bad_sum =
        p.b->counters().wire[wire::WireError::kBadUdpChecksum];
    if (with_checksum) {
      EXPECT_EQ(zero, 0u);
      EXPECT_EQ(bad_sum, 3u);
      EXPECT_EQ(bad_tag, 0u);
    } else {
      EXPECT_EQ(zero, frames);
      EXPECT_EQ(bad_tag, 3u);
      EXPECT_EQ(bad_sum, 0u);
    }
  }
}

TEST(UetTss_Hostile, ATamperedByteInEveryRequestIsCaughtAndNothingIsPlaced) {
  for (const size_t at : {size_t{14 + 12}, size_t{14 + 20 + 1}, size_t{42 + 5}, size_t{42 + 12},
                          size_t{42 + 12 + 60}}) {  // IP src, UDP sport, TSC, PDS, payload
    UetConfig a = config_for(kIpA);
    a.max_retries = 2;
    Pair p(a, config_for(kIpB));
    p.link.set_filter([&](int from, const wire::Decoded&, std::vector<uint8_t>& bytes) {
      if (from == 0 && bytes.size() > 1000) {
        bytes[at] ^= 0x04;
        refresh_udp(bytes);
        if (at < 34) {  // an IP byte: keep the IPv4 header checksum right
          wire::Ipv4* ip = wire::as<wire::Ipv4>(bytes.data() + 14);
          ip->set_checksum(0);
          ip->set_checksum(wire::csum_finish(wire::csum_add(0, bytes.data() + 14, 20)));
        }
      }
      return testing::Verdict{};
    });
    p.write(1, pattern(8192, 3));
    p.link.run(kSecond);
    EXPECT_TRUE(p.untouched()) << "byte " << at;
    const auto& k = p.b->tss()->counters();
    // A changed source address or TSC may name no receive state or a stale one; every other
    // change fails the tag.
    EXPECT_GT(k.dropped(), 0u) << "byte " << at;
    EXPECT_EQ(k.opened, 0u) << "byte " << at;
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_NE(c[0].status, OpStatus::kSuccess);
  }
}

TEST(UetTss_Hostile, ReplayedFramesAreDroppedAndDoNotWriteAgain) {
  Pair p(config_for(kIpA), config_for(kIpB));
  std::vector<std::vector<uint8_t>> captured;
  p.link.set_filter([&](int from, const wire::Decoded&, std::vector<uint8_t>& bytes) {
    if (from == 0) captured.push_back(bytes);
    return testing::Verdict{};
  });
  p.write(1, pattern(32 * 1024, 4));
  p.link.run(p.link.now() + 10 * kMicrosecond);  // written, PDC not yet closed
  ASSERT_EQ(drain(*p.a).size(), 1u);
  std::fill(p.region.begin(), p.region.end(), 0xEE);  // the application reuses the region
  for (const auto& f : captured) testing::deliver(*p.b, f, p.link.now());
  EXPECT_TRUE(p.untouched());
  EXPECT_GE(p.b->tss()->counters().drops[static_cast<size_t>(tss::Drop::kReplay)],
            captured.size());
}

TEST(UetTss_Hostile, AReplayedSynOfAClosedPdcIsRefusedWithNewStartPsn) {
  Pair p(config_for(kIpA), config_for(kIpB));
  std::vector<uint8_t> first;
  p.link.set_filter([&](int from, const wire::Decoded&, std::vector<uint8_t>& bytes) {
    if (from == 0 && first.empty()) first = bytes;  // the SYN
    return testing::Verdict{};
  });
  p.write(1, pattern(4096, 5));
  p.link.run(kSecond);  // written and closed
  ASSERT_EQ(p.b->pdcs_in_use(), 0u);
  ASSERT_FALSE(first.empty());
  // As it was: the replay window still knows its TSC.
  std::fill(p.region.begin(), p.region.end(), 0xEE);
  testing::deliver(*p.b, first, p.link.now());
  EXPECT_TRUE(p.untouched());
  EXPECT_EQ(p.b->tss()->counters().drops[static_cast<size_t>(tss::Drop::kReplay)], 1u);
  // The same SYN re-sealed under a TSC the window has not seen (a window that forgot it,
  // or a restarted initiator's SYN): the start-PSN guard refuses it (§5.6).
  tss::TssConfig tc = config_for(kIpA).tss;
  auto resealer = std::move(*tss::Sublayer::create(tc, kIpA));
  ASSERT_TRUE(resealer->resume_counter(1'000'000).ok());
  std::vector<uint8_t> f = first;
  wire::Decoded d;
  ASSERT_EQ(wire::decode_frame(f, &d), wire::WireError::kOk);
  std::span<uint8_t> plain;
  tss::Drop why;
  auto opener = std::move(*tss::Sublayer::create(config_for(kIpB).tss, kIpB));
  ASSERT_TRUE(opener->open(f.data(), d, &plain, &why));  // to plaintext, in place
  tss::SealLayout l;
  l.l3 = 14;
  l.l4 = 34;
  l.tss = 42;
  ASSERT_TRUE(resealer->seal(f.data(), f.size() - tss::kTagBytes, l));
  refresh_udp(f);
  testing::deliver(*p.b, f, p.link.now());
  p.link.run(p.link.now() + 100 * kMicrosecond);
  EXPECT_TRUE(p.untouched());
  EXPECT_EQ(p.b->counters().rx_malformed, 0u);
  EXPECT_EQ(p.b->counters().rx_start_psn_refused, 1u);
  EXPECT_EQ(p.b->pdcs_in_use(), 0u);
}

TEST(UetTss_Hostile, AnUnknownDomainAndARetiredKeyAreDropped) {
  UetConfig a = config_for(kIpA, true, 0x111111);
  a.max_retries = 2;
  Pair p(a, config_for(kIpB));
  p.write(1, pattern(8192, 6));
  p.link.run(kSecond);
  EXPECT_TRUE(p.untouched());
  EXPECT_GT(p.b->tss()->counters().drops[static_cast<size_t>(tss::Drop::kUnknownSdi)], 0u);

  Pair q(config_for(kIpA), config_for(kIpB));
  ASSERT_TRUE(q.b->tss()->install_key(kSdi, 1, key_n(9)).ok());
  ASSERT_TRUE(q.b->tss()->activate(1).ok());
  ASSERT_TRUE(q.b->tss()->retire(kSdi, 0).ok());  // B no longer accepts what A sends
  q.write(1, pattern(8192, 7));
  q.link.run(q.link.now() + 200 * kMicrosecond);
  EXPECT_TRUE(q.untouched());
  EXPECT_GT(q.b->tss()->counters().drops[static_cast<size_t>(tss::Drop::kNoKey)], 0u);
}

TEST(UetTss_Trimmed, ATrimmedSealedRequestEarnsASealedNackAndIsResent) {
  Pair p(config_for(kIpA), config_for(kIpB));
  bool trimmed = false;
  size_t clear = 0;
  p.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
    clear += !sealed(d);
    if (from == 0 && !trimmed && bytes.size() > 1000) {
      // A switch cuts it to the TSS header and 64 bytes of ciphertext (spec/uet.md §5.5).
      trimmed = true;
      bytes.resize(42 + 12 + 64);
      wire::Ipv4* ip = wire::as<wire::Ipv4>(bytes.data() + 14);
      ip->set_total_length(static_cast<uint16_t>(bytes.size() - 14));
      ip->set_dscp(45);
      ip->set_checksum(0);
      ip->set_checksum(wire::csum_finish(wire::csum_add(0, bytes.data() + 14, 20)));
      wire::Udp* u = wire::as<wire::Udp>(bytes.data() + 34);
      u->set_length(static_cast<uint16_t>(bytes.size() - 34));
      u->set_checksum(0);
    }
    return testing::Verdict{};
  });
  const auto src = pattern(64 * 1024, 8);
  p.write(1, src);
  p.link.run(kSecond);
  EXPECT_TRUE(p.delivered(src, 0));
  EXPECT_EQ(p.b->tss()->counters().trimmed_unverified, 1u);
  EXPECT_EQ(p.b->counters().rx_trimmed, 1u);  // NACK TRIMMED sent ...
  EXPECT_GE(p.a->counters().nack_retx, 1u);   // ... and the packet resent at once
  EXPECT_EQ(p.a->counters().timeouts, 0u);
  EXPECT_EQ(clear, 0u);
}

TEST(UetTss_Hostile, SealedSynsFromMoreSendersThanMaxSourcesStayWithinTheBound) {
  UetConfig cb = config_for(kIpB);
  cb.tss.max_sources = 64;
  auto b = std::move(*UetEndpoint::create(cb));
  std::vector<uint8_t> region(1 << 16);
  const uint32_t rkey = *b->register_memory(region.data(), region.size());
  const auto src = pattern(4096, 9);
  // 500 senders, each with the domain's key, each opening a PDC to B with one write.
  for (uint32_t i = 0; i < 500; ++i) {
    const uint32_t ip = 0x0B000000 + i;
    auto a = std::move(*UetEndpoint::create(config_for(ip)));
    ASSERT_TRUE(a->post_write({i, kIpB, rkey, 0, src.data(), src.size()}).ok());
    std::vector<uint8_t> buf(9216);
    Frame f{buf.data(), 0, 0, static_cast<uint32_t>(buf.size())};
    Frame* fp = &f;
    ASSERT_EQ(a->tx(std::span<Frame* const>(&fp, 1), 0), 1u);
    testing::deliver(*b, std::span<const uint8_t>(buf.data(), f.len), 0);
  }
  // Expect: receive state for 64 senders, the rest refused by reason, memory within bound.
  EXPECT_EQ(b->tss()->sources(), 64u);
  EXPECT_EQ(b->tss()->counters().drops[static_cast<size_t>(tss::Drop::kSourcesFull)], 436u);
  EXPECT_LE(b->memory_bytes(), UetEndpoint::memory_bound(cb, 1));
}

// A host whose socket sends from a port of its own (io_uring) rewrites every frame's UDP
// source port on the way; §5.2 authenticates the ports.
TEST(UetTss_SourcePort, ARewrittenSourcePortFailsTheTagUnlessBothSealWithThatPort) {
  constexpr uint16_t kSocketPort = 40001;
  for (const bool fixed : {false, true}) {
    UetConfig a = config_for(kIpA), b = config_for(kIpB);
    a.max_retries = 2;
    if (fixed) a.udp_source_port = b.udp_source_port = kSocketPort;
    Pair p(a, b);
    size_t other_port = 0;
    p.link.set_filter([&](int, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
      other_port += d.udp->sport() != kSocketPort;
      wire::as<wire::Udp>(bytes.data() + 34)->set_sport(kSocketPort);
      refresh_udp(bytes);
      return testing::Verdict{};
    });
    const auto src = pattern(64 * 1024, 4);
    p.write(1, src);
    p.link.run(kSecond);
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), 1u) << "fixed " << fixed;
    if (!fixed) {
      // Expect: the EV's port was sealed, another arrived: every tag fails, nothing placed.
      EXPECT_GT(other_port, 0u);
      EXPECT_NE(c[0].status, OpStatus::kSuccess);
      EXPECT_TRUE(p.untouched());
      EXPECT_GT(p.b->tss()->counters().drops[static_cast<size_t>(tss::Drop::kBadTag)], 0u);
      EXPECT_EQ(p.b->tss()->counters().opened, 0u);
    } else {
      // Expect: every frame already left from the socket's port, so all open on both sides.
      EXPECT_EQ(other_port, 0u);
      EXPECT_EQ(c[0].status, OpStatus::kSuccess);
      EXPECT_TRUE(std::equal(src.begin(), src.end(), p.region.begin()));
      EXPECT_EQ(p.b->tss()->counters().opened, p.a->tss()->counters().sealed);
      EXPECT_EQ(p.a->tss()->counters().opened, p.b->tss()->counters().sealed);
      EXPECT_EQ(p.a->tss()->counters().dropped() + p.b->tss()->counters().dropped(), 0u);
    }
  }
}

// §5.7: a domain bound to a job carries only that job's traffic. B (job 7) accepts domain
// kSdi, bound to job 7, and domain kSdi + 1, bound to job 9 (another tenant's). A's writes
// name job 7: sealed in B's own job's domain they land; sealed with the other tenant's key
// they are refused before the SES, though the job they name is B's, and nothing is placed.
TEST(UetTss_Job, AFrameSealedInAnotherJobsDomainIsRefused) {
  for (const bool own_domain : {true, false}) {
    const uint32_t tx_sdi = own_domain ? kSdi : kSdi + 1;
    UetConfig ca = config_for(kIpA, true, tx_sdi), cb = config_for(kIpB);
    ca.job_id = cb.job_id = 7;
    ca.max_retries = 2;
    tss::DomainConfig other = cb.tss.domains[0];
    other.sdi = kSdi + 1;
    other.key[0] = key_n(9);
    other.job_id = 9;
    cb.tss.domains[0].job_id = 7;
    cb.tss.domains.push_back(other);
    ca.tss.domains[0].key[0] = own_domain ? key_n(1) : key_n(9);
    Pair p(ca, cb);
    const auto src = pattern(16 * 1024, 5);
    p.write(1, src);
    p.link.run(kSecond);
    const auto c = drain(*p.a);
    ASSERT_EQ(c.size(), 1u);
    if (own_domain) {
      EXPECT_EQ(c[0].status, OpStatus::kSuccess);
      EXPECT_TRUE(std::equal(src.begin(), src.end(), p.region.begin()));
      EXPECT_EQ(p.b->counters().rx_tss_cross_job, 0u);
    } else {
      EXPECT_NE(c[0].status, OpStatus::kSuccess);
      EXPECT_TRUE(p.untouched());
      EXPECT_GT(p.b->counters().rx_tss_cross_job, 0u);
      // Every frame opened (the key is good): the binding, not the cipher, refused them.
      EXPECT_GT(p.b->tss()->counters().opened, 0u);
      EXPECT_EQ(p.b->tss()->counters().dropped(), 0u);
    }
  }
}

// Server mode (spec/uet.md §5.3): B serves with the domain key, A is a client given only its
// derived key and IV mask; writes, ACKs and CLOSE all sealed with A's key, both ways.
TEST(UetTss_Server, AClientWritesToAServerWithItsDerivedKey) {
  UetConfig ca = config_for(kIpA), cb = config_for(kIpB);
  cb.tss.domains[0].mode = tss::Mode::kServer;
  tss::DerivedKey k;
  ASSERT_TRUE(tss::client_key(key_n(1), 0, kIpA, &k));
  ca.tss.domains[0].mode = tss::Mode::kClient;
  ca.tss.domains[0].key[0] = k.key;
  ca.tss.domains[0].iv_mask[0] = k.iv_mask;
  Pair p(ca, cb);
  const auto src = pattern(128 * 1024 + 5, 6);
  p.write(1, src, 64);
  p.link.run(kSecond);
  EXPECT_TRUE(p.delivered(src, 64));
  EXPECT_EQ(p.b->tss()->counters().opened, p.a->tss()->counters().sealed);
  EXPECT_EQ(p.a->tss()->counters().opened, p.b->tss()->counters().sealed);
  EXPECT_EQ(p.a->tss()->counters().dropped() + p.b->tss()->counters().dropped(), 0u);
}

// Per-client rotation (§5.3) mid-flow, under loss and reordering: A moves to epoch 1; B
// follows on A's first epoch-1 frame, stragglers of epoch 0 still open, every write lands
// once, and no frame fails its tag on either side.
TEST(UetTss_Server, AClientRotatesItsEpochMidFlowWithoutAFailedTag) {
  UetConfig ca = config_for(kIpA), cb = config_for(kIpB);
  cb.tss.domains[0].mode = tss::Mode::kServer;
  tss::DerivedKey k0, k1;
  ASSERT_TRUE(tss::client_key(key_n(1), 0, kIpA, &k0));
  ASSERT_TRUE(tss::client_key(key_n(1), 1, kIpA, &k1));
  ca.tss.domains[0].mode = tss::Mode::kClient;
  ca.tss.domains[0].key[0] = k0.key;
  ca.tss.domains[0].iv_mask[0] = k0.iv_mask;
  Pair p(ca, cb);
  std::mt19937_64 rng(9);
  std::array<size_t, 2> b_sent_in{};  // B's frames by epoch
  p.link.set_filter([&](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
    if (from == 1 && d.tss != nullptr) ++b_sent_in[std::min<uint64_t>(d.tss->tsc() >> 48, 1)];
    testing::Verdict v;
    if (rng() % 100 < 2) v.copies = 0;
    v.delay = static_cast<Time>(rng() % 3000) * kNanosecond;
    return v;
  });
  std::vector<std::vector<uint8_t>> srcs;
  for (int i = 0; i < 6; ++i) srcs.push_back(pattern(64 * 1024, 20 + i));
  for (int i = 0; i < 3; ++i) p.write(i, srcs[i], uint64_t(i) * 64 * 1024);
  p.link.run(p.link.now() + 30 * kMicrosecond);  // mid-flow
  ASSERT_TRUE(p.a->tss()->rotate_client_epoch(1, k1.key, k1.iv_mask).ok());
  for (int i = 3; i < 6; ++i) p.write(i, srcs[i], uint64_t(i) * 64 * 1024);
  p.link.run(kSecond);
  const auto c = drain(*p.a);
  ASSERT_EQ(c.size(), 6u);
  for (const Completion& x : c) EXPECT_EQ(x.status, OpStatus::kSuccess) << x.wr_id;
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(std::equal(srcs[i].begin(), srcs[i].end(), p.region.begin() + i * 64 * 1024))
        << i;
  }
  for (const UetEndpoint* ep : {p.a.get(), p.b.get()}) {
    EXPECT_EQ(ep->tss()->counters().drops[static_cast<size_t>(tss::Drop::kBadTag)], 0u);
    EXPECT_EQ(ep->tss()->counters().drops[static_cast<size_t>(tss::Drop::kNoKey)], 0u);
  }
  EXPECT_EQ(p.b->tss()->counters().peer_epochs, 1u);
  EXPECT_EQ(p.a->tss()->counters().peer_epochs, 1u);
  EXPECT_GT(b_sent_in[0], 0u);
  EXPECT_GT(b_sent_in[1], 0u);  // B followed A into epoch 1
}

TEST(UetTss_Config, ABadTssConfigIsRefusedNamingTheField) {
  UetConfig c = config_for(kIpA);
  c.tss.replay_window = 3;
  auto ep = UetEndpoint::create(c);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(ep.status().message().find("UetConfig.tss: TssConfig.replay_window=3"),
            std::string::npos)
      << ep.status();
}

}  // namespace
}  // namespace uet
