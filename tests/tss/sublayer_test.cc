// transport/tss/sublayer.h: frames sealed by one endpoint's sublayer and opened by another's,
// with every check that must drop a frame (replay, age, tag, domain, key, epoch, bound), key
// rotation with the AN bit, trimmed frames, and the start-PSN guard; each with both AES-GCM
// backends.
#include "transport/tss/sublayer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/wire/builder.h"
#include "transport/wire/decode.h"

namespace uet::tss {
namespace {

using wire::Decoded;
using wire::FrameBuilder;
using wire::NextHeader;
using wire::PdsType;
using wire::WireError;

constexpr uint32_t kA = 0x0A000001;  // 10.0.0.1
constexpr uint32_t kB = 0x0A000002;

Key key_n(uint8_t n) {
  Key k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(n * 31 + i);
  return k;
}

// The backend the running test seals and opens with (its fixture sets it).
Backend g_backend = Backend::kAuto;

class BackendTest : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(backend_available(GetParam())) << backend_name(GetParam()) << " unavailable";
    g_backend = GetParam();
  }
  void TearDown() override { g_backend = Backend::kAuto; }
};

TssConfig config(Mode mode = Mode::kCluster, bool ssi = false, uint32_t ssi_value = 0) {
  TssConfig c;
  c.enabled = true;
  c.backend = g_backend;
  DomainConfig d;
  d.sdi = 0x123456;
  d.mode = mode;
  d.key[0] = key_n(1);
  d.installed[0] = true;
  c.domains.push_back(d);
  c.tx_sdi = d.sdi;
  c.send_ssi = ssi;
  c.ssi = ssi_value;
  c.replay_window = 64;
  return c;
}

class Sublayer_Seal : public BackendTest {};
class Sublayer_Open : public BackendTest {};
class Sublayer_Rotate : public BackendTest {};
class Sublayer_Trimmed : public BackendTest {};
class Sublayer_StartPsn : public BackendTest {};
class Sublayer_Server : public BackendTest {};

std::unique_ptr<Sublayer> make(const TssConfig& c, uint32_t ip) {
  auto s = Sublayer::create(c, ip);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

// A RUD WRITE request from A to B with `payload` bytes, sealed by `tx`.
std::vector<uint8_t> sealed_write(Sublayer& tx, uint32_t psn, size_t payload = 200,
                                  uint32_t src = kA, uint32_t dst = kB) {
  std::vector<uint8_t> buf(2048);
  wire::Encap e;
  e.src_ip4 = src;
  e.dst_ip4 = dst;
  e.sport = 0xC123;
  FrameBuilder b(buf, e);
  SealLayout l;
  l.l3 = wire::Ethernet::kSize;
  l.l4 = static_cast<uint16_t>(l.l3 + wire::Ipv4::kSize);
  l.tss = static_cast<uint16_t>(b.transport_offset());
  b.add_bytes(tx.header_bytes());
  wire::PdsRudRod* pds = b.add<wire::PdsRudRod>();
  pds->set_type(PdsType::kRudReq);
  pds->set_next_hdr(NextHeader::kReqStd);
  pds->set_psn(psn);
  pds->set_spdcid(7);
  pds->set_dpdcid(9);
  wire::SesStandardRequest* ses = b.add<wire::SesStandardRequest>();
  ses->set_opcode(wire::SesOpcode::kWrite);
  ses->set_som(true);
  ses->set_eom(true);
  ses->set_request_length(static_cast<uint32_t>(payload));
  uint8_t* p = b.add_bytes(payload);
  for (size_t i = 0; i < payload; ++i) p[i] = static_cast<uint8_t>(i * 7);
  const size_t len = b.size();
  EXPECT_NE(b.reserve(kTagBytes), nullptr);
  EXPECT_TRUE(tx.seal(buf.data(), len, l));
  size_t n = 0;
  EXPECT_EQ(b.finish(&n), WireError::kOk);
  buf.resize(n);
  return buf;
}

// Opens `frame` at `rx` and decodes the plaintext; the drop reason when it fails.
struct Opened {
  bool ok = false;
  Drop why = Drop::kCount;
  Decoded d;
};
Opened open_at(Sublayer& rx, std::vector<uint8_t>& frame) {
  Opened o;
  // A test that flips bytes has broken the UDP checksum: 0 reads "not computed".
  wire::as<wire::Udp>(frame.data() + 34)->set_checksum(0);
  EXPECT_EQ(wire::decode_frame(frame, &o.d), WireError::kOk);
  EXPECT_TRUE(o.d.tss != nullptr || o.d.tss_sp != nullptr);
  EXPECT_EQ(o.d.pds, nullptr);  // ciphertext is not decoded
  std::span<uint8_t> plain;
  o.ok = rx.open(frame.data(), o.d, &plain, &o.why);
  if (o.ok) {
    EXPECT_EQ(wire::decode_opened(plain, &o.d), WireError::kOk);
  }
  return o;
}

// Whether `o` failed to open for the reason `why`.
::testing::AssertionResult DroppedAs(const Opened& o, Drop why) {
  if (o.ok) return ::testing::AssertionFailure() << "opened";
  if (o.why != why) return ::testing::AssertionFailure() << "dropped as " << drop_name(o.why);
  return ::testing::AssertionSuccess();
}

TEST_P(Sublayer_Seal, OpensIntactAtThePeerWithExactLengths) {
  for (Mode m : {Mode::kCluster, Mode::kDirect}) {
    auto a = make(config(m), kA);
    auto b = make(config(m), kB);
    auto f = sealed_write(*a, 1000);
    // Expect: 12 bytes of header and 16 of tag on the wire, the PDS type hidden.
    EXPECT_EQ(f.size(), 14u + 20 + 8 + 12 + 12 + 44 + 200 + 16);
    Opened o = open_at(*b, f);
    ASSERT_TRUE(o.ok) << drop_name(o.why);
    ASSERT_NE(o.d.pds_as<wire::PdsRudRod>(), nullptr);
    EXPECT_EQ(o.d.pds_as<wire::PdsRudRod>()->psn(), 1000u);
    ASSERT_EQ(o.d.payload.size(), 200u);
    EXPECT_EQ(o.d.payload[3], 21);
    EXPECT_EQ(o.d.protocol, wire::Protocol::kUet);
    EXPECT_EQ(b->counters().opened, 1u);
  }
}

TEST_P(Sublayer_Seal, SsiFormCarriesTheSsiAndOpens) {
  auto a = make(config(Mode::kCluster, true, 0xABCD0001), kA);
  auto b = make(config(), kB);
  auto f = sealed_write(*a, 5);
  Opened o = open_at(*b, f);
  ASSERT_TRUE(o.ok) << drop_name(o.why);
  ASSERT_NE(o.d.tss_sp, nullptr);
  EXPECT_EQ(o.d.tss_sp->ssi(), 0xABCD0001u);
}

TEST_P(Sublayer_Open, DropsAReplayAndCountsIt) {
  auto a = make(config(), kA);
  auto b = make(config(), kB);
  auto f = sealed_write(*a, 1);
  auto copy = f;
  ASSERT_TRUE(open_at(*b, f).ok);
  Opened again = open_at(*b, copy);
  EXPECT_FALSE(again.ok);
  EXPECT_EQ(again.why, Drop::kReplay);
  EXPECT_EQ(b->counters().drops[static_cast<size_t>(Drop::kReplay)], 1u);
}

TEST_P(Sublayer_Open, AcceptsReorderedWithinTheWindowAndDropsOlder) {
  auto a = make(config(), kA);
  auto b = make(config(), kB);
  std::vector<std::vector<uint8_t>> f;
  for (uint32_t i = 0; i < 100; ++i) f.push_back(sealed_write(*a, i, 16));
  ASSERT_TRUE(open_at(*b, f[99]).ok);
  ASSERT_TRUE(open_at(*b, f[50]).ok);  // 49 behind, inside a 64-TSC window
  Opened old = open_at(*b, f[10]);     // 89 behind
  EXPECT_FALSE(old.ok);
  EXPECT_EQ(old.why, Drop::kTooOld);
  ASSERT_TRUE(open_at(*b, f[51]).ok);
}

TEST_P(Sublayer_Open, AForgedFrameNeitherPassesNorMovesTheWindow) {
  auto a = make(config(), kA);
  auto b = make(config(), kB);
  auto first = sealed_write(*a, 1);
  std::vector<std::vector<uint8_t>> later;
  for (int i = 0; i < 200; ++i) later.push_back(sealed_write(*a, 2 + i, 16));
  // A frame far ahead with a bad tag: dropped, and the window must not have slid past `first`.
  auto& far = later.back();
  far[far.size() - 1] ^= 1;
  Opened forged = open_at(*b, far);
  EXPECT_FALSE(forged.ok);
  EXPECT_EQ(forged.why, Drop::kBadTag);
  EXPECT_TRUE(open_at(*b, first).ok);
}

TEST_P(Sublayer_Open, EveryAuthenticatedByteIsCoveredAndRewritableOnesAreNot) {
  auto a = make(config(), kA);
  auto b = make(config(), kB);
  auto f = sealed_write(*a, 1);
  const size_t ip = 14;
  // Authenticated: IP addresses (12..19 of IP), UDP ports, TSS header, ciphertext, tag.
  std::vector<size_t> covered = {ip + 12, ip + 19, ip + 20, ip + 21, 44, 47, 53, 54, 60, f.size() - 1};
  for (size_t at : covered) {
    auto t = sealed_write(*a, 1);
    t[at] ^= 0x10;
    Decoded d;
    // Keep the frame decodable: refresh the IP and UDP checksums the flip broke.
    wire::DecodeOptions opts;
    opts.verify_ip_checksum = opts.verify_udp_checksum = false;
    ASSERT_EQ(wire::decode_frame(t, &d, opts), WireError::kOk) << at;
    std::span<uint8_t> plain;
    Drop why = Drop::kCount;
    EXPECT_FALSE(b->open(t.data(), d, &plain, &why)) << "byte " << at;
  }
  // Not authenticated (switches rewrite them, §5.2): DSCP/ECN, TTL.
  for (size_t at : {ip + 1, ip + 8}) {
    auto t = sealed_write(*a, 1);
    t[at] ^= 0x01;
    Decoded d;
    wire::DecodeOptions opts;
    opts.verify_ip_checksum = false;
    ASSERT_EQ(wire::decode_frame(t, &d, opts), WireError::kOk);
    std::span<uint8_t> plain;
    Drop why = Drop::kCount;
    EXPECT_TRUE(b->open(t.data(), d, &plain, &why)) << "byte " << at << " " << drop_name(why);
  }
}

TEST_P(Sublayer_Open, UnknownDomainAndUninstalledKeyAreDropped) {
  auto a = make(config(), kA);
  TssConfig other = config();
  other.domains[0].sdi = 77;
  other.tx_sdi = 77;
  auto c = make(other, kB);
  auto f = sealed_write(*a, 1);
  EXPECT_TRUE(DroppedAs(open_at(*c, f), Drop::kUnknownSdi));
}

TEST_P(Sublayer_Rotate, BothAssociationsOpenDuringTheOverlapAndTheRetiredOneIsDropped) {
  auto a = make(config(), kA);
  auto b = make(config(), kB);
  auto old_frame = sealed_write(*a, 1);
  // The management entity installs key 2 as AN 1 everywhere, then A switches to it.
  ASSERT_TRUE(b->install_key(0x123456, 1, key_n(2)).ok());
  ASSERT_TRUE(a->install_key(0x123456, 1, key_n(2)).ok());
  ASSERT_TRUE(a->activate(1).ok());
  EXPECT_EQ(a->tx_counter(), 0u);  // §5.4: the counter starts again under a new key
  auto new_frame = sealed_write(*a, 2);
  auto late_old = old_frame;
  Opened n = open_at(*b, new_frame);
  ASSERT_TRUE(n.ok) << drop_name(n.why);
  EXPECT_EQ(n.d.tss->an(), 1u);
  Opened o = open_at(*b, old_frame);  // AN 0 still accepted in the overlap
  ASSERT_TRUE(o.ok) << drop_name(o.why);
  // B cannot retire the association it sends with; once it switched too, it can.
  EXPECT_FALSE(b->retire(0x123456, 0).ok());
  ASSERT_TRUE(b->activate(1).ok());
  ASSERT_TRUE(b->retire(0x123456, 0).ok());
  auto old2 = late_old;
  Opened r = open_at(*b, old2);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.why, Drop::kNoKey);
}

TEST_P(Sublayer_Rotate, RefusesToReuseAKeyThatHasSent) {
  auto a = make(config(), kA);
  ASSERT_TRUE(a->install_key(0x123456, 1, key_n(2)).ok());
  ASSERT_TRUE(a->activate(1).ok());
  // AN 0's key sent before: going back to it would repeat TSCs under it.
  absl::Status s = a->activate(0);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(a->install_key(0x123456, 1, key_n(3)).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(a->install_key(0x123456, 0, key_n(3)).ok());
  EXPECT_TRUE(a->activate(0).ok());
}

TEST_P(Sublayer_Open, StaleEpochIsDropped) {
  TssConfig old = config();
  old.domains[0].epoch = 3;
  auto a = make(old, kA);
  TssConfig cur = config();
  cur.domains[0].epoch = 30;
  auto b = make(cur, kB);
  auto f = sealed_write(*a, 1);
  EXPECT_TRUE(DroppedAs(open_at(*b, f), Drop::kStaleEpoch));
}

TEST_P(Sublayer_Open, SendersBeyondMaxSourcesAreRefusedNotGrownInto) {
  TssConfig c = config();
  c.max_sources = 2;
  auto b = make(c, kB);
  for (uint32_t i = 0; i < 3; ++i) {
    auto a = make(config(), kA + 10 + i);
    auto f = sealed_write(*a, 1, 16, kA + 10 + i);
    Opened o = open_at(*b, f);
    EXPECT_EQ(o.ok, i < 2) << i;
    if (i == 2) {
      EXPECT_EQ(o.why, Drop::kSourcesFull);
    }
  }
  EXPECT_EQ(b->sources(), 2u);
}

TEST_P(Sublayer_Trimmed, HeadersOfATrimmedFrameDecryptWithoutItsTag) {
  auto a = make(config(), kA);
  auto b = make(config(), kB);
  auto f = sealed_write(*a, 4321);
  // A switch cuts it after 12 + 56 bytes of ciphertext (PDS + SES headers).
  const size_t keep = 14 + 20 + 8 + 12 + 12 + 44;
  f.resize(keep);
  wire::Ipv4* ip = wire::as<wire::Ipv4>(f.data() + 14);
  ip->set_total_length(static_cast<uint16_t>(keep - 14));
  wire::as<wire::Udp>(f.data() + 34)->set_length(static_cast<uint16_t>(keep - 34));
  wire::as<wire::Udp>(f.data() + 34)->set_checksum(0);
  wire::DecodeOptions opts;
  opts.verify_ip_checksum = false;
  Decoded d;
  ASSERT_EQ(wire::decode_frame(f, &d, opts), WireError::kOk);
  std::span<uint8_t> plain;
  Drop why = Drop::kCount;
  ASSERT_TRUE(b->open_trimmed(f.data(), d, &plain, &why));
  ASSERT_EQ(wire::decode_opened(plain, &d), WireError::kOk);
  EXPECT_EQ(d.pds_as<wire::PdsRudRod>()->psn(), 4321u);
  EXPECT_EQ(b->counters().trimmed_unverified, 1u);
  EXPECT_EQ(b->sources(), 0u);  // a trimmed frame keeps no state
}

TEST_P(Sublayer_StartPsn, ASynBelowTheExpectedStartIsRefused) {
  auto b = make(config(), kB);
  EXPECT_TRUE(b->start_psn_ok(kA, 7, 100));
  b->start_psn_used(kA, 7, 101);
  EXPECT_FALSE(b->start_psn_ok(kA, 7, 100));
  EXPECT_TRUE(b->start_psn_ok(kA, 7, 101));
  EXPECT_TRUE(b->start_psn_ok(kA, 8, 100));  // another PDC of the same sender: its own
  b->start_psn_used(kA, 7, 50);              // never moves back
  EXPECT_EQ(b->expected_start_psn(kA, 7, 0), 101u);
  // Serial arithmetic across the wrap.
  b->start_psn_used(kA, 7, 0x80000000u + 50);
  b->start_psn_used(kA, 7, 0xFFFFFFF0u);
  EXPECT_TRUE(b->start_psn_ok(kA, 7, 5));
}

// Server mode (§5.3): the server holds the domain key (key_n(1)); each client is given the key
// and IV mask derived for its address (client_key) and never the domain key.
TssConfig client_config(uint32_t ip) {
  TssConfig c = config(Mode::kClient);
  DerivedKey k;
  EXPECT_TRUE(client_key(key_n(1), 0, ip, &k));
  c.domains[0].key[0] = k.key;
  c.domains[0].iv_mask[0] = k.iv_mask;
  return c;
}

// The reference provider's KDF test vector for server mode (spec/tss-sources.md §4: label U2,
// context epoch 0x1DC0, rekey 0, client 192.168.42.1, the spec example's master key).
TEST(ClientKey, MatchesTheReferenceProvidersServerVector) {
  Key master{};
  ASSERT_TRUE(parse_key("34448a064292601b11a0978f56a2d34cf3fc35ede1a6bc04f8db3e5243a2b0ca", &master));
  DerivedKey k;
  ASSERT_TRUE(client_key(master, 0x1DC0, 0xC0A82A01, &k));
  auto hex = [](std::span<const uint8_t> b) {
    std::string out;
    for (uint8_t v : b) out += "0123456789abcdef"[v >> 4], out += "0123456789abcdef"[v & 15];
    return out;
  };
  const std::string key = hex(k.key);
  EXPECT_EQ(key.substr(0, 8), "245e67ab") << key;
  EXPECT_EQ(key.substr(56), "1c5d304b") << key;
  EXPECT_EQ(hex(k.iv_mask), "02d5ee33684201990e1629e0");
}

TEST_P(Sublayer_Server, EachClientOpensItsOwnFramesAndNoOtherClients) {
  auto server = make(config(Mode::kServer), kA);
  constexpr uint32_t kClient0 = 0x0A000100;
  std::vector<std::unique_ptr<Sublayer>> clients;
  for (uint32_t i = 0; i < 3; ++i) clients.push_back(make(client_config(kClient0 + i), kClient0 + i));
  for (uint32_t i = 0; i < 3; ++i) {
    auto up = sealed_write(*clients[i], 10 + i, 300, kClient0 + i, kA);
    const Opened o = open_at(*server, up);
    EXPECT_TRUE(o.ok) << i << ": " << drop_name(o.why);
    auto again = up;  // the replay window holds per client
    EXPECT_TRUE(DroppedAs(open_at(*server, again), Drop::kReplay));
    auto down = sealed_write(*server, 20 + i, 300, kA, kClient0 + i);
    auto stolen = down;
    EXPECT_TRUE(open_at(*clients[i], down).ok) << i;
    // Another client of the same server and domain cannot read it.
    EXPECT_TRUE(DroppedAs(open_at(*clients[(i + 1) % 3], stolen), Drop::kBadTag)) << i;
  }
  // A client configured with the domain key itself (cluster-style) opens nothing of the server's.
  auto wrong = make(config(Mode::kClient), kClient0);
  auto down = sealed_write(*server, 30, 100, kA, kClient0);
  EXPECT_TRUE(DroppedAs(open_at(*wrong, down), Drop::kBadTag));
  EXPECT_EQ(server->sources(), 3u);
}

// One server, 10,000 clients, each sending once and answered once: the receive state stays at
// its bound (the 10,001st client is refused), the sending keys at server_tx_keys slots, and
// memory_bytes() within memory_bound().
TEST_P(Sublayer_Server, TenThousandClientsStayWithinTheBound) {
  constexpr uint32_t kClients = 10000, kFirst = 0x0B000000;
  TssConfig sc = config(Mode::kServer);
  sc.max_sources = kClients;
  sc.server_tx_keys = 256;
  auto server = make(sc, kA);
  size_t opened_up = 0, opened_down = 0;
  for (uint32_t i = 0; i < kClients; ++i) {
    auto client = make(client_config(kFirst + i), kFirst + i);
    auto up = sealed_write(*client, 1, 64, kFirst + i, kA);
    opened_up += open_at(*server, up).ok;
    auto down = sealed_write(*server, 1, 64, kA, kFirst + i);
    opened_down += open_at(*client, down).ok;
  }
  EXPECT_EQ(opened_up, kClients);
  EXPECT_EQ(opened_down, kClients);
  EXPECT_EQ(server->sources(), kClients);
  EXPECT_LE(server->memory_bytes(), Sublayer::memory_bound(sc));
  // A derivation per client received and one per client sent to (256 slots for 10,000).
  EXPECT_GE(server->counters().rekeys, 2u * kClients);
  auto late = make(client_config(kFirst + kClients), kFirst + kClients);
  auto up = sealed_write(*late, 1, 64, kFirst + kClients, kA);
  EXPECT_TRUE(DroppedAs(open_at(*server, up), Drop::kSourcesFull));
}

// The epoch a sealed frame carries (TSC bits 63..48).
uint16_t epoch_of(const std::vector<uint8_t>& frame) {
  Decoded d;
  EXPECT_EQ(wire::decode_frame(frame, &d), WireError::kOk);
  return d.tss != nullptr ? static_cast<uint16_t>(d.tss->tsc() >> kCounterBits) : 0xFFFF;
}

// Per-client rotation (§5.3): one client moves to epoch 1 with its new derived key; the
// server follows it on the first frame it authenticates there, for that client alone. Frames
// either side sealed in epoch 0 before the switch still open; epoch-0 frames sealed after it
// (an old key's holder, counter past the switch) are refused.
TEST_P(Sublayer_Server, AClientRotatesItsOwnEpochAndTheServerFollowsForItAlone) {
  constexpr uint32_t kC = 0x0A000100, kOther = 0x0A000101;
  auto server = make(config(Mode::kServer), kA);
  auto client = make(client_config(kC), kC);
  auto other = make(client_config(kOther), kOther);
  auto up0 = sealed_write(*client, 1, 100, kC, kA);
  auto up0_late = sealed_write(*client, 2, 100, kC, kA);  // held back on the way
  ASSERT_TRUE(open_at(*server, up0).ok);
  auto down0_late = sealed_write(*server, 1, 100, kA, kC);  // held back on the way
  EXPECT_EQ(epoch_of(down0_late), 0);

  DerivedKey k1;
  ASSERT_TRUE(client_key(key_n(1), 1, kC, &k1));
  ASSERT_TRUE(client->rotate_client_epoch(1, k1.key, k1.iv_mask).ok());
  EXPECT_FALSE(client->rotate_client_epoch(1, k1.key, k1.iv_mask).ok());  // not newer
  EXPECT_FALSE(server->rotate_client_epoch(2, k1.key, k1.iv_mask).ok());  // not a client
  auto up1 = sealed_write(*client, 3, 100, kC, kA);
  EXPECT_EQ(epoch_of(up1), 1);
  ASSERT_TRUE(open_at(*server, up1).ok);
  EXPECT_EQ(server->counters().peer_epochs, 1u);
  // The straggler sealed before the switch opens (its counter is below the switch).
  EXPECT_TRUE(open_at(*server, up0_late).ok);
  // The server now seals towards this client in epoch 1, and towards the other in epoch 0.
  auto down1 = sealed_write(*server, 2, 100, kA, kC);
  EXPECT_EQ(epoch_of(down1), 1);
  EXPECT_TRUE(open_at(*client, down1).ok);
  EXPECT_TRUE(open_at(*client, down0_late).ok);  // sealed before the server followed
  auto to_other = sealed_write(*server, 3, 100, kA, kOther);
  EXPECT_EQ(epoch_of(to_other), 0);
  EXPECT_TRUE(open_at(*other, to_other).ok);

  // Whoever kept the client's epoch-0 key cannot use it any more: a frame sealed with it and a
  // counter past the switch is stale at the server...
  auto old_client = make(client_config(kC), kC);
  ASSERT_TRUE(old_client->resume_counter(100).ok());
  auto forged_up = sealed_write(*old_client, 4, 100, kC, kA);
  EXPECT_TRUE(DroppedAs(open_at(*server, forged_up), Drop::kStaleEpoch));
  // ... and the same holds at the client for epoch-0 frames from the server's side.
  auto old_server = make(config(Mode::kServer), kA);
  ASSERT_TRUE(old_server->resume_counter(100).ok());
  auto forged_down = sealed_write(*old_server, 4, 100, kA, kC);
  EXPECT_EQ(epoch_of(forged_down), 0);
  EXPECT_TRUE(DroppedAs(open_at(*client, forged_down), Drop::kStaleEpoch));
  // An epoch the client holds no key for opens nothing.
  TssConfig ahead = config(Mode::kServer);
  ahead.domains[0].epoch = 5;
  auto ahead_server = make(ahead, kA);
  auto down5 = sealed_write(*ahead_server, 5, 100, kA, kOther);
  EXPECT_EQ(epoch_of(down5), 5);
  EXPECT_TRUE(DroppedAs(open_at(*other, down5), Drop::kNoKey));
}

const auto kBackends = testing::Values(Backend::kIpsecMb, Backend::kOpenSsl);
std::string backend_label(const testing::TestParamInfo<Backend>& i) {
  return i.param == Backend::kIpsecMb ? "IpsecMb" : "OpenSsl";
}
INSTANTIATE_TEST_SUITE_P(, Sublayer_Seal, kBackends, backend_label);
INSTANTIATE_TEST_SUITE_P(, Sublayer_Open, kBackends, backend_label);
INSTANTIATE_TEST_SUITE_P(, Sublayer_Rotate, kBackends, backend_label);
INSTANTIATE_TEST_SUITE_P(, Sublayer_Trimmed, kBackends, backend_label);
INSTANTIATE_TEST_SUITE_P(, Sublayer_StartPsn, kBackends, backend_label);
INSTANTIATE_TEST_SUITE_P(, Sublayer_Server, kBackends, backend_label);

TEST(TssConfig_Validate, NamesTheFieldAndItsRange) {
  TssConfig c = config();
  c.replay_window = 100;
  EXPECT_NE(c.validate().message().find("TssConfig.replay_window=100"), std::string::npos);
  c = config();
  c.tx_sdi = 5;
  EXPECT_NE(c.validate().message().find("TssConfig.tx_sdi"), std::string::npos);
  c = config();
  c.domains[0].installed[0] = false;
  EXPECT_FALSE(c.validate().ok());
  c = config();
  c.domains[0].sdi = 1 << 24;
  EXPECT_NE(c.validate().message().find("0..16777215"), std::string::npos);
  c = config();
  c.domains[0].job_id = 1 << 24;
  EXPECT_NE(c.validate().message().find("TssConfig.domains.job_id=16777216"), std::string::npos)
      << c.validate();
  c.domains[0].job_id = kAnyJob;
  EXPECT_TRUE(c.validate().ok());
  c = config(Mode::kServer, /*ssi=*/true, 5);
  EXPECT_NE(c.validate().message().find("TssConfig.send_ssi with a server or client domain"),
            std::string::npos);
  c = config(Mode::kServer);
  c.server_tx_keys = 3;
  EXPECT_NE(c.validate().message().find("TssConfig.server_tx_keys=3"), std::string::npos);
  c.domains[0].mode = static_cast<Mode>(5);
  EXPECT_FALSE(c.validate().ok());
}

}  // namespace
}  // namespace uet::tss
