// Resource exhaustion at the UET engine's receive path: forged frames from a peer that opens
// PDCs without end, ACKs whose SACK bitmap claims every PSN, READs larger than any region.
// Memory must stay within UetEndpoint::memory_bound() at every sample, and each attack
// prints one line (attack, frames, peak memory_bytes(), bound, RSS delta) for tests/README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/rss.h"
#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;  // initiator, target

UetConfig config_for(uint32_t ip) { return testing::uet_config(ip, /*seed=*/99); }

using testing::rss_delta_kib;
using testing::rss_kib;

void report(const char* attack, uint64_t frames, size_t peak, size_t bound, int64_t rss) {
  testing::print_exhaustion(attack, frames, peak, bound, rss);
}

// One forged RUD request (SES standard header when `op` is not kNoop... or none at all).
struct Req {
  uint32_t src = kIpA, dst = kIpB;
  wire::PdsType type = wire::PdsType::kRudReq;
  uint16_t spdcid = 1, dpdcid = 0;
  bool syn = true;
  uint32_t psn = 1000;
  uint16_t psn_offset = 0;  // SYN: start PSN = psn - offset
  int16_t clear_psn_offset = -1;
  bool ses = false;
  wire::SesOpcode op = wire::SesOpcode::kWrite;
  uint16_t message_id = 1;
  uint64_t key = 0, offset = 0;
  uint32_t length = 0;  // request_length
  uint32_t payload = 0;
};

// The forged frames below are built in one buffer, valid until the next is forged (a flood
// allocates nothing per frame).
std::vector<uint8_t>& forge_buffer() {
  static std::vector<uint8_t> buf(9216);
  return buf;
}
std::span<const uint8_t> forged(size_t n) { return std::span(forge_buffer().data(), n); }

std::span<const uint8_t> forge(const Req& r) {
  std::vector<uint8_t>& buf = forge_buffer();
  wire::FrameBuilder fb(buf, wire::Encap{.src_ip4 = r.src, .dst_ip4 = r.dst, .sport = 0xC000});
  auto* p = fb.add<wire::PdsRudRod>();
  p->set_type(r.type);
  p->set_psn(r.psn);
  p->set_spdcid(r.spdcid);
  p->set_clear_psn_offset(r.clear_psn_offset);
  if (r.syn) {
    p->set_syn(true);
    p->set_psn_offset(r.psn_offset);
  } else {
    p->set_dpdcid(r.dpdcid);
  }
  if (r.ses) {
    p->set_next_hdr(wire::NextHeader::kReqStd);
    auto* s = fb.add<wire::SesStandardRequest>();
    s->set_opcode(r.op);
    s->set_som(true);
    s->set_eom(true);
    s->set_message_id(r.message_id);
    s->set_match_bits(r.key);
    s->set_buffer_offset(r.offset);
    s->set_request_length(r.length);
    if (r.payload > 0) std::fill_n(fb.add_bytes(r.payload), r.payload, 0xAB);
  }
  size_t n = 0;
  EXPECT_EQ(fb.finish(&n), wire::WireError::kOk);
  return forged(n);
}

// One forged ACK_CC from `src` to initiator PDC `dpdcid`.
struct Ack {
  uint32_t src = kIpB, dst = kIpA;
  uint16_t spdcid = 0, dpdcid = 0;
  uint32_t cack = 0;
  uint16_t sack_psn_offset = 1;
  uint64_t sack_bitmap = 0;
};

std::span<const uint8_t> forge(const Ack& a) {
  std::vector<uint8_t>& buf = forge_buffer();
  wire::FrameBuilder fb(buf, wire::Encap{.src_ip4 = a.src, .dst_ip4 = a.dst, .sport = 0xC000});
  auto* h = fb.add<wire::PdsAckCc>();
  h->set_type(wire::PdsType::kAckCc);
  h->set_next_hdr(wire::NextHeader::kNone);
  h->set_cack_psn(a.cack);
  h->set_spdcid(a.spdcid);
  h->set_dpdcid(a.dpdcid);
  h->set_cc_type(wire::CcType::kNscc);
  h->set_mpr(16);
  h->set_sack_psn_offset(a.sack_psn_offset);
  h->set_sack_bitmap(a.sack_bitmap);
  size_t n = 0;
  EXPECT_EQ(fb.finish(&n), wire::WireError::kOk);
  return forged(n);
}

// A NACK from `src` naming initiator PDC `dpdcid`.
std::span<const uint8_t> forge_nack(uint32_t src, uint16_t dpdcid, wire::NackCode code) {
  std::vector<uint8_t>& buf = forge_buffer();
  wire::FrameBuilder fb(buf, wire::Encap{.src_ip4 = src, .dst_ip4 = kIpB, .sport = 0xC000});
  auto* h = fb.add<wire::PdsNack>();
  h->set_type(wire::PdsType::kNack);
  h->set_nack_code(code);
  h->set_dpdcid(dpdcid);
  size_t n = 0;
  EXPECT_EQ(fb.finish(&n), wire::WireError::kOk);
  return forged(n);
}

using testing::deliver;

// What an endpoint sends now, by kind: frames, NACK codes, SES return codes on ACKs, READ
// data bytes. At most `max` frames: the engine must stop by itself.
struct Sent {
  size_t frames = 0, acks = 0, nacks = 0, read_data_bytes = 0;
  std::map<wire::NackCode, size_t> nack_codes;
  std::map<wire::SesReturnCode, size_t> rsp_codes;
  std::vector<std::vector<uint8_t>> held;  // the frames, when kept
};
Sent drain(UetEndpoint& ep, Time now, bool keep = false, size_t max = 1'000'000) {
  Sent s;
  std::vector<uint8_t> buf(9216);
  for (size_t i = 0; i < max; ++i) {
    wire::Decoded d;
    const uint32_t len = testing::take_decoded(ep, buf, now, &d);
    if (len == 0) break;
    ++s.frames;
    if (d.pds_type == wire::PdsType::kNack) {
      ++s.nacks;
      ++s.nack_codes[d.pds_as<wire::PdsNack>()->nack_code()];
    }
    if (d.pds_type == wire::PdsType::kAckCc) {
      ++s.acks;
      if (const auto* rd = d.ses_as<wire::SesResponseData>(); rd != nullptr) {
        s.read_data_bytes += d.payload.size();
        ++s.rsp_codes[rd->return_code()];
      } else if (const auto* r = d.ses_as<wire::SesResponse>(); r != nullptr) {
        ++s.rsp_codes[r->return_code()];
      }
    }
    if (keep) s.held.emplace_back(buf.begin(), buf.begin() + len);
  }
  return s;
}

// Runs timers due by `now`.
void tick(UetEndpoint& ep, Time now) {
  if (ep.next_deadline() <= now) ep.on_timer(now);
}

// --------------------------------------------------------------------- the bound itself

// Every table a small config names, filled by posts and forged frames with no tx in
// between: memory_bytes() comes close to memory_bound() and never passes it.
TEST(UetExhaustion_Bound, FullTablesComeCloseToTheBoundAndStayUnder) {
  UetConfig c = config_for(kIpB);
  c.max_pdcs = 8;
  c.mpr = 64;
  c.max_ops = 8;
  c.max_recvs = 8;
  c.max_recv_messages = 4;
  c.rudi_packets = 8;
  c.rudi_responses = 8;
  c.uud_queue = 8;
  c.rod_buffers = 2;
  c.payload_bytes = 256;
  c.window_bytes = 64 * 256;
  c.max_trecvs = 8;
  c.max_unexpected = 8;
  c.unexpected_bytes = 256;
  c.resource_indexes = 16;
  c.rendezvous_bytes = 512;
  c.rendezvous_sources = 4;
  c.deferrable_sends = 4;
  constexpr uint32_t kRegions = 4;
  const size_t bound = UetEndpoint::memory_bound(c, kRegions);
  auto ep = std::move(*UetEndpoint::create(c));
  std::vector<uint8_t> mem(1 << 16, 0);
  std::vector<uint8_t> recv_mem(4096);
  size_t peak = 0;
  auto sample = [&] {
    peak = std::max(peak, ep->memory_bytes());
    ASSERT_LE(ep->memory_bytes(), bound);
  };
  for (uint32_t i = 0; i < kRegions; ++i)
    ASSERT_TRUE(ep->register_memory(mem.data(), mem.size()).ok());
  for (uint32_t i = 0; i < c.max_recvs; ++i)
    ASSERT_TRUE(ep->post_recv({i, recv_mem.data(), 512}).ok());
  // Tagged receives (their tables and the unexpected list's, in full with the first) and
  // the resource indexes' states (with the first change).
  for (uint32_t i = 0; i < c.max_trecvs; ++i)
    ASSERT_TRUE(ep->post_trecv({i, recv_mem.data(), 512, i}).ok());
  ASSERT_TRUE(ep->disable_resource(15).ok());
  // RUDI and UUD tables (each allocated in full by its first post).
  WriteRequest rudi{1, kIpA + 20, 1, 0, mem.data(), 256};
  rudi.mode = DeliveryMode::kRudi;
  ASSERT_TRUE(ep->post_write(rudi).ok());
  WriteRequest uud{2, kIpA + 20, 1, 0, mem.data(), 256};
  uud.mode = DeliveryMode::kUud;
  ASSERT_TRUE(ep->post_write(uud).ok());
  sample();
  // 8 initiator PDCs, each with max_ops operations posted; a NACK INV_DPDCID fails each
  // (its writes complete kPdcClosed) and parks its windows for the target PDCs below.
  // The first operation is a rendezvous send (the sources' table, in full with it).
  TaggedSendRequest ts;
  ts.peer = kIpA + 100;
  ts.local = mem.data();
  ts.length = 1024;
  ASSERT_TRUE(ep->post_tsend(ts).ok());
  EXPECT_EQ(ep->counters().tx_rendezvous, 1u);
  // Then a deferrable send (the restart slots' table, in full with it).
  SendRequest ds{.wr_id = 1, .peer = kIpA + 100, .local = mem.data(), .length = 256};
  ds.deferrable = true;
  ASSERT_TRUE(ep->post_send(ds).ok());
  // Each write is 8 packets, so the PDCs' sends fill their windows (mpr PSNs in flight).
  for (uint32_t peer = 0; peer < c.max_pdcs; ++peer) {
    for (uint32_t w = peer == 0 ? 2 : 0; w < c.max_ops; ++w)
      ASSERT_TRUE(ep->post_write({w, kIpA + 100 + peer, 1, 0, mem.data(), 2048}).ok());
  }
  EXPECT_EQ(ep->pdcs_allocated(), 8u);
  sample();
  drain(*ep, 0);
  EXPECT_EQ(ep->window_slots(), 8u * c.mpr);
  sample();
  for (uint16_t id = 0; id < c.max_pdcs; ++id)
    deliver(*ep, forge_nack(kIpA + 100 + id, id, wire::NackCode::kInvDpdcid), 0);
  EXPECT_EQ(ep->pdcs_in_use(), 0u);
  sample();
  // 8 target PDCs: 6 RUD ones answering 64 READs each (one refused: bad key; the response
  // ring fills to mpr), 2 ROD ones holding an out-of-order request in a reorder buffer.
  for (uint16_t peer = 0; peer < c.max_pdcs; ++peer) {
    const bool rod = peer >= 6;
    Req r;
    r.src = kIpA + 200 + peer;
    r.type = rod ? wire::PdsType::kRodReq : wire::PdsType::kRudReq;
    r.spdcid = 7;
    r.ses = true;
    r.op = wire::SesOpcode::kRead;
    r.key = 1;
    r.length = 256;
    // A ROD READ waits for its response before the next PSN runs, so a ROD PDC gets one.
    const uint32_t reads = rod ? 1 : 64;
    for (uint32_t i = 0; i < reads; ++i) {
      r.syn = true;  // every packet until the first ACK (none is read here)
      r.psn = 5000 + i;
      r.psn_offset = static_cast<uint16_t>(i);
      r.message_id = static_cast<uint16_t>(i + 1);
      r.key = i == 0 ? 99 : 1;  // the first is refused: its code is kept (Pdc::gtd)
      deliver(*ep, forge(r), 0);
    }
    if (rod) {  // PSN 5002 past the hole at 5001: staged
      r.psn = 5002;
      r.psn_offset = 2;
      r.op = wire::SesOpcode::kWrite;
      r.key = 1;
      r.payload = r.length = 256;
      deliver(*ep, forge(r), 0);
    }
  }
  EXPECT_EQ(ep->pdcs_in_use(), 8u);
  EXPECT_EQ(ep->counters().rod_staged, 2u);
  // A RUDI request: the target's response ring.
  {
    std::vector<uint8_t> buf(512);
    wire::FrameBuilder fb(buf, wire::Encap{.src_ip4 = kIpA, .dst_ip4 = kIpB});
    auto* p = fb.add<wire::PdsRudi>();
    p->set_type(wire::PdsType::kRudiReq);
    p->set_pkt_id(1);
    p->set_next_hdr(wire::NextHeader::kReqStd);
    auto* s = fb.add<wire::SesStandardRequest>();
    s->set_opcode(wire::SesOpcode::kWrite);
    s->set_som(true);
    s->set_eom(true);
    s->set_match_bits(1);
    s->set_request_length(8);
    std::fill_n(fb.add_bytes(8), 8, 0xAB);
    size_t n = 0;
    ASSERT_EQ(fb.finish(&n), wire::WireError::kOk);
    buf.resize(n);
    deliver(*ep, buf, 0);
  }
  sample();
  // Expect: within the bound, and most of it used (what is missing: completions, which the
  // bound counts at twice the operations that may be outstanding, and hash-map slack). The
  // send windows went back with their PDCs before the target PDCs came: they filled above
  // (window_slots), so the rest of the bound is what the other tables must come close to.
  // (Three quarters: each PDC holds one role's state, while the bound keeps room for parked
  // windows of both roles, as a table may hold both when its PDCs change role.)
  const size_t windows = c.max_pdcs * size_t{c.mpr} * 32;  // 32-byte PSN slots
  std::printf("full small config: %zu of %zu bytes (%.0f %%), send windows %zu\n", peak, bound,
              100.0 * static_cast<double>(peak) / static_cast<double>(bound), windows);
  EXPECT_GE(peak, (bound - windows) * 3 / 4);
}

// A target PDC whose initiator fell silent mid-message is taken by a new peer's SYN (the
// table full): the tagged messages it was receiving end. One matched to a posted receive
// completes it kPdcClosed with nothing counted as placed; one held unexpected leaves the list,
// so a receive posted later does not take its half.
TEST(UetExhaustion_Reclaim, TaggedMessagesCutOffWithTheirPdcEndTheirReceives) {
  UetConfig c = config_for(kIpB);
  c.max_pdcs = 1;
  c.idle_timeout = 20 * kMicrosecond;
  auto ep = std::move(*UetEndpoint::create(c));
  std::vector<uint8_t> buf(1000, 0xEE), late(1000, 0xEE);
  ASSERT_TRUE(ep->post_trecv({7, buf.data(), buf.size(), 0x55}).ok());
  Req r;
  r.ses = true;
  r.op = wire::SesOpcode::kTaggedSend;
  r.length = 1000;  // 256 bytes of it arrive
  r.payload = 256;
  r.key = 0x55;  // match_bits: the tag
  deliver(*ep, forge(r), 0);
  r.syn = false;
  r.dpdcid = 0;
  r.psn = 1001;
  r.message_id = 2;
  r.key = 0x66;  // no receive for it: unexpected
  deliver(*ep, forge(r), 0);
  EXPECT_EQ(ep->counters().rx_tagged_matched, 1u);
  EXPECT_EQ(ep->counters().rx_tagged_unexpected, 1u);
  Time now = 0;
  for (int step = 0; step < 200; ++step) {  // REQ_CLOSEs go unanswered
    now += c.idle_timeout / 2;
    tick(*ep, now);
    drain(*ep, now);
  }
  Req other;
  other.src = kIpA + 9;
  deliver(*ep, forge(other), now);
  EXPECT_EQ(ep->counters().req_close_abandoned, 1u);
  std::vector<Completion> cs(8);
  cs.resize(ep->poll_completions(cs));
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].wr_id, 7u);
  EXPECT_EQ(cs[0].status, OpStatus::kPdcClosed);
  EXPECT_EQ(cs[0].bytes, 0u);
  ASSERT_TRUE(ep->post_trecv({8, late.data(), late.size(), 0x66}).ok());
  EXPECT_EQ(ep->poll_completions(cs), 0u);
  EXPECT_TRUE(std::all_of(late.begin(), late.end(), [](uint8_t x) { return x == 0xEE; }));
}

// Large configs: the bound is finite and adds up (no term overflows), and an endpoint that
// has done nothing is far below it.
TEST(UetExhaustion_Bound, GrowsWithEveryTable) {
  UetConfig c = config_for(kIpB);
  const size_t base = UetEndpoint::memory_bound(c, 1);
  auto more = [&](auto set) {
    UetConfig d = c;
    set(d);
    return UetEndpoint::memory_bound(d, 1);
  };
  EXPECT_GT(more([](UetConfig& d) { d.max_pdcs *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.mpr *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.max_ops *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.max_recvs *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.rod_buffers *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.rudi_packets *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.rudi_responses *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.uud_queue *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.max_trecvs *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.max_unexpected *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.unexpected_bytes *= 2; }), base);
  EXPECT_GT(more([](UetConfig& d) { d.resource_indexes *= 2; }), base);
  EXPECT_GT(UetEndpoint::memory_bound(c, 100), base);
  auto ep = std::move(*UetEndpoint::create(c));
  EXPECT_EQ(ep->memory_bytes(), 0u);
}

// ---------------------------------------------------------------------------- SYN flood

// A peer that opens PDCs without end: 10^5 SYNs from random source PDC ids and random
// source addresses (with the timers and tx run every 1000 frames, as a host would).
void syn_flood(uint32_t max_pdcs) {
  UetConfig c = config_for(kIpB);
  c.max_pdcs = max_pdcs;
  c.idle_timeout = 20 * kMicrosecond;
  const size_t bound = UetEndpoint::memory_bound(c, 1);
  auto target = std::move(*UetEndpoint::create(c));
  std::vector<uint8_t> mem(1 << 16, 0);
  const uint32_t rkey = *target->register_memory(mem.data(), mem.size());
  std::mt19937_64 rng(max_pdcs);
  const uint64_t rss_before = rss_kib();
  constexpr uint64_t kFrames = 100'000;
  constexpr Time kGap = 10 * kNanosecond;
  size_t peak = 0, drains = 0, max_nacks = 0;
  Sent answered;
  Req r;
  for (uint64_t i = 1; i <= kFrames; ++i) {
    const Time now = static_cast<Time>(i) * kGap;
    r.src = 0x0B000000u | static_cast<uint32_t>(rng() & 0xFFFFFF);
    r.spdcid = static_cast<uint16_t>(rng());
    r.psn = static_cast<uint32_t>(rng());
    deliver(*target, forge(r), now);
    if (i % 1000 != 0) continue;
    tick(*target, now);
    const Sent s = drain(*target, now);
    ++drains;
    answered.frames += s.frames;
    answered.nacks += s.nacks;
    for (const auto& [code, k] : s.nack_codes) answered.nack_codes[code] += k;
    max_nacks = std::max(max_nacks, s.nacks);
    peak = std::max(peak, target->memory_bytes());
    // Expect: the table never passes max_pdcs, memory never passes the bound.
    ASSERT_LE(target->pdcs_allocated(), max_pdcs);
    ASSERT_LE(target->memory_bytes(), bound) << "after " << i << " SYNs";
  }
  const UetCounters& k = target->counters();
  // Expect: every SYN either opened (or reopened) a PDC or was refused NO_PDC_AVAIL.
  EXPECT_EQ(k.rx_data + k.rx_no_pdc_avail, kFrames);
  EXPECT_GT(k.rx_no_pdc_avail, 0u);
  EXPECT_EQ(target->pdcs_allocated(), max_pdcs);
  // Expect: the answers are bounded: at most the stateless ring (64) of NACKs per burst, all
  // NO_PDC_AVAIL; the rest are an ACK and REQ_CLOSEs per PDC opened.
  EXPECT_LE(max_nacks, 64u);
  EXPECT_EQ(answered.nack_codes[wire::NackCode::kNoPdcAvail], answered.nacks);
  EXPECT_LE(answered.frames - answered.nacks, k.rx_data * (1 + c.max_retries));
  // Expect: PDCs whose initiator never answers REQ_CLOSE are kept (an initiator behind a
  // failed link may come back) but handed to new SYNs when the table is full: during the
  // flood, which is why it opens more than max_pdcs in all, and after it.
  EXPECT_GT(k.req_close_abandoned, 0u);
  Time now = static_cast<Time>(kFrames) * kGap;
  for (int step = 0; step < 200; ++step) {
    now += c.idle_timeout / 2;
    tick(*target, now);
    drain(*target, now);
  }
  EXPECT_EQ(target->pdcs_in_use(), max_pdcs);
  const uint64_t reclaimed = target->counters().req_close_abandoned;
  peak = std::max(peak, target->memory_bytes());
  EXPECT_LE(target->memory_bytes(), bound);
  // Expect: a legitimate peer opens a PDC and its write lands intact.
  auto a = std::move(*UetEndpoint::create(config_for(kIpA)));
  testing::FakeLink link(a.get(), target.get());
  link.advance_to(now);
  std::vector<uint8_t> src(64 * 1024);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_TRUE(a->post_write({5, kIpB, rkey, 0, src.data(), src.size()}).ok());
  link.run(now + 100 * kMillisecond);
  Completion done;
  ASSERT_EQ(a->poll_completions(std::span(&done, 1)), 1u);
  EXPECT_EQ(done.status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), mem.begin()));
  // Its SYN took an unanswered PDC.
  EXPECT_EQ(target->counters().req_close_abandoned, reclaimed + 1);
  EXPECT_LE(target->memory_bytes(), bound);
  const int64_t rss = rss_delta_kib(rss_before);
  char attack[64];
  std::snprintf(attack, sizeof attack, "SYN flood, max_pdcs %u", max_pdcs);
  report(attack, kFrames, peak, bound, rss);
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(static_cast<size_t>(std::max<int64_t>(rss, 0)) * 1024, bound + (8u << 20));
#endif
}

TEST(UetExhaustion_SynFlood, RandomPdcIdsAndAddressesAgainst64Pdcs) { syn_flood(64); }
TEST(UetExhaustion_SynFlood, RandomPdcIdsAndAddressesAgainst4096Pdcs) { syn_flood(4096); }

// ------------------------------------------------------------------------ forged SACKs

// An initiator with a write in flight (packets sent, none delivered yet) gets 3 x 10^4
// ACKs from its peer's address naming its PDC, whose SACK bitmaps claim every PSN past what
// it sent, or whose CACK is far ahead. Then the held packets arrive and the write finishes.
TEST(UetExhaustion_Sack, BitmapsClaimingEveryPsnCompleteNothing) {
  UetConfig ac = config_for(kIpA);
  ac.idle_timeout = 0;  // one PDC throughout
  UetConfig bc = config_for(kIpB);
  bc.idle_timeout = 0;
  const size_t bound = UetEndpoint::memory_bound(ac, 0);
  auto a = std::move(*UetEndpoint::create(ac));
  auto b = std::move(*UetEndpoint::create(bc));
  std::vector<uint8_t> mem(1 << 17, 0);
  const uint32_t rkey = *b->register_memory(mem.data(), mem.size());
  testing::FakeLink link(a.get(), b.get());
  std::vector<uint8_t> src(64 * 1024);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 13 + 5);
  // A first write establishes the PDC (the attacker knows both PDC ids and the PSNs).
  ASSERT_TRUE(a->post_write({1, kIpB, rkey, 0, src.data(), 4096}).ok());
  link.run(kSecond);
  Completion done;
  ASSERT_EQ(a->poll_completions(std::span(&done, 1)), 1u);
  // The write under attack: sent, held back.
  ASSERT_TRUE(a->post_write({2, kIpB, rkey, 8192, src.data(), src.size()}).ok());
  const Time now = link.now() + kMicrosecond;
  link.advance_to(now);
  Sent out = drain(*a, now, /*keep=*/true);  // as many as its window lets go
  ASSERT_GE(out.frames, 1u);
  wire::Decoded d0, dn;
  ASSERT_EQ(wire::decode_frame(out.held.front(), &d0), wire::WireError::kOk);
  ASSERT_EQ(wire::decode_frame(out.held.back(), &dn), wire::WireError::kOk);
  const auto* first = d0.pds_as<wire::PdsRudRod>();
  const uint32_t base = first->psn(), next = dn.pds_as<wire::PdsRudRod>()->psn() + 1;
  const uint16_t a_pdc = first->spdcid(), b_pdc = first->dpdcid();
  const size_t mem_before = a->memory_bytes();
  const uint64_t rss_before = rss_kib();
  const UetCounters k0 = a->counters();
  std::mt19937_64 rng(3);
  constexpr uint64_t kFrames = 30'000;
  uint64_t unsent = 0, ahead = 0;
  size_t peak = 0;
  for (uint64_t i = 0; i < kFrames; ++i) {
    Ack f;
    f.spdcid = b_pdc;
    f.dpdcid = a_pdc;
    f.sack_bitmap = ~uint64_t{0};
    switch (i % 3) {
      case 0:  // CACK acknowledges nothing new; the bitmap claims the 64 PSNs never sent
        f.cack = base - 1;
        f.sack_psn_offset = static_cast<uint16_t>(next - base + 1 + rng() % 1000);
        ++unsent;
        break;
      case 1:  // CACK far ahead of anything sent
        f.cack = next + 1 + static_cast<uint32_t>(rng() % (1u << 30));
        ++ahead;
        break;
      default:  // CACK behind the window, bitmap reaching past it
        f.cack = base - 2 - static_cast<uint32_t>(rng() % (1u << 30));
        f.sack_psn_offset = static_cast<uint16_t>(rng());
        ++ahead;
        break;
    }
    deliver(*a, forge(f), now);
    if (i % 1000 == 999) {
      tick(*a, now);
      peak = std::max(peak, a->memory_bytes());
      ASSERT_LE(a->memory_bytes(), bound);
    }
  }
  const UetCounters& k = a->counters();
  // Expect: nothing completes, every forged ACK is counted for why it did nothing, and the
  // tables did not move.
  EXPECT_EQ(a->poll_completions(std::span(&done, 1)), 0u);
  EXPECT_EQ(k.rx_sack_unsent - k0.rx_sack_unsent, unsent);
  EXPECT_EQ(k.rx_stale_ack - k0.rx_stale_ack, ahead);
  EXPECT_EQ(a->memory_bytes(), mem_before);
  // Expect: the held packets arrive, and the write completes with every byte in place.
  for (const auto& f : out.held) deliver(*b, f, now);
  link.run(now + kSecond);
  ASSERT_EQ(a->poll_completions(std::span(&done, 1)), 1u);
  EXPECT_EQ(done.wr_id, 2u);
  EXPECT_EQ(done.status, OpStatus::kSuccess);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), mem.begin() + 8192));
  report("forged SACK/CACK at an initiator", kFrames, peak, bound, rss_delta_kib(rss_before));
}

// ---------------------------------------------------------------------- oversized READs

// READ requests on one PDC asking for more than any region holds: lengths to 2^32 - 1,
// offsets whose end wraps 2^64, keys of no region, and lengths within the region but over
// one packet. Each is refused with its SES code (§4.9); no data goes out; memory is flat.
TEST(UetExhaustion_Read, LargerThanAnyRegionIsRefusedWithoutAllocating) {
  UetConfig c = config_for(kIpB);
  const size_t bound = UetEndpoint::memory_bound(c, 1);
  auto target = std::move(*UetEndpoint::create(c));
  std::vector<uint8_t> mem(1 << 16, 0x5A);
  ASSERT_EQ(*target->register_memory(mem.data(), mem.size()), 1u);
  std::mt19937_64 rng(11);
  const uint64_t rss_before = rss_kib();
  constexpr uint64_t kFrames = 50'000;
  const uint32_t start = 777;
  size_t mem_warm = 0, peak = 0;
  std::map<wire::SesReturnCode, uint64_t> expected;
  Sent answered;
  Req r;
  r.ses = true;
  r.op = wire::SesOpcode::kRead;
  r.spdcid = 9;
  for (uint64_t i = 0; i < kFrames; ++i) {
    const Time now = static_cast<Time>(i) * 10 * kNanosecond;
    r.psn = start + static_cast<uint32_t>(i);
    r.syn = i < 64;  // until the first ACK
    r.psn_offset = static_cast<uint16_t>(i);
    r.dpdcid = 0;
    r.message_id = static_cast<uint16_t>(i);
    r.key = 1;
    switch (i % 4) {
      case 0:  // longer than the region, up to 2^32 - 1
        r.offset = rng() % mem.size();
        r.length = static_cast<uint32_t>(mem.size() + 1 + rng() % (0xFFFFFFFFu - mem.size()));
        ++expected[wire::SesReturnCode::kBadAddr];
        break;
      case 1:  // offset + length wraps 2^64 to inside the region
        r.offset = ~uint64_t{0} - rng() % 4096;
        r.length = 4096 + static_cast<uint32_t>(rng() % 4096);
        ++expected[wire::SesReturnCode::kBadAddr];
        break;
      case 2:  // no such region
        r.key = 2 + rng() % 1000000;
        r.offset = 0;
        r.length = 0xFFFFFFFFu;
        ++expected[wire::SesReturnCode::kBadMkey];
        break;
      default:  // inside the region but more than one packet's data
        r.offset = 0;
        r.length = c.payload_bytes + 1 + static_cast<uint32_t>(rng() % 8192);
        ++expected[wire::SesReturnCode::kUnsupportedSize];
        break;
    }
    deliver(*target, forge(r), now);
    if (i % 32 == 31) {  // the host sends between bursts (the response ring holds mpr)
      tick(*target, now);
      const Sent s = drain(*target, now);
      answered.read_data_bytes += s.read_data_bytes;
      for (const auto& [code, k] : s.rsp_codes) answered.rsp_codes[code] += k;
      peak = std::max(peak, target->memory_bytes());
      ASSERT_LE(target->memory_bytes(), bound);
      if (i == 1023) mem_warm = target->memory_bytes();
    }
  }
  const Sent s = drain(*target, static_cast<Time>(kFrames) * 10 * kNanosecond);
  answered.read_data_bytes += s.read_data_bytes;
  for (const auto& [code, k] : s.rsp_codes) answered.rsp_codes[code] += k;
  const UetCounters& k = target->counters();
  // Expect: every READ refused with its code, one response each, no byte of data sent.
  EXPECT_EQ(answered.read_data_bytes, 0u);
  EXPECT_EQ(k.tx_read_data, 0u);
  EXPECT_EQ(answered.rsp_codes[wire::SesReturnCode::kBadAddr],
            expected[wire::SesReturnCode::kBadAddr]);
  EXPECT_EQ(answered.rsp_codes[wire::SesReturnCode::kBadMkey],
            expected[wire::SesReturnCode::kBadMkey]);
  EXPECT_EQ(answered.rsp_codes[wire::SesReturnCode::kUnsupportedSize],
            expected[wire::SesReturnCode::kUnsupportedSize]);
  EXPECT_EQ(answered.rsp_codes.count(wire::SesReturnCode::kOk), 0u);
  EXPECT_EQ(k.rx_bad_range, expected[wire::SesReturnCode::kBadAddr]);
  EXPECT_EQ(k.rx_bad_key, expected[wire::SesReturnCode::kBadMkey]);
  EXPECT_EQ(k.rx_out_of_window, 0u);  // the forged clear PSNs keep the window moving
  // Expect: no allocation after the first rings filled, none proportional to any length.
  EXPECT_EQ(target->memory_bytes(), mem_warm);
  EXPECT_LT(peak, size_t{1} << 20);
  EXPECT_TRUE(std::all_of(mem.begin(), mem.end(), [](uint8_t x) { return x == 0x5A; }));
  report("oversized/wrapping READ at a target", kFrames, peak, bound, rss_delta_kib(rss_before));
}

}  // namespace
}  // namespace uet
