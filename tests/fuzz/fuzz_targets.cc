#include "tests/fuzz/fuzz_targets.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/wire/checksum.h"
#include "transport/wire/decode.h"
#include "transport/wire/icrc.h"

namespace uet::fuzz {

namespace {

constexpr uint32_t kLocal = 0x0A000002, kPeer = 0x0A000001;
Reach g_reach;
constexpr uint32_t kRoceQpn = 0x100;  // RoceConfig's default qpn_base: the first local QP

// Readdresses an Ethernet/IPv4/UDP frame to kLocal from kPeer and re-seals IPv4 and UDP
// checksums and, for RoCEv2, the ICRC. Leaves anything else as it is.
void reseal(std::vector<uint8_t>& f) {
  if (f.size() < 14 + 20 + 8 || f[12] != 0x08 || f[13] != 0x00) return;
  uint8_t* ip = f.data() + 14;
  const size_t ihl = size_t{ip[0] & 0x0Fu} * 4;
  if (ihl < 20 || f.size() < 14 + ihl + 8) return;
  auto* h = wire::as<wire::Ipv4>(ip);
  h->set_src(kPeer);
  h->set_dst(kLocal);
  h->set_checksum(wire::ipv4_header_checksum(ip, ihl));
  if (h->protocol() != 17) return;
  uint8_t* udp = ip + ihl;
  const size_t udp_len = wire::load_be(udp + 4, 2);
  if (udp_len < 8 || 14 + ihl + udp_len > f.size()) return;
  if (wire::load_be(udp + 2, 2) == wire::kRoceUdpPort && udp_len >= 8 + 12 + 4) {
    wire::store_be(udp + 8 + 5, 3, kRoceQpn);  // BTH destination QP: the connected QP
    const size_t end = 14 + ihl + udp_len;
    wire::store_icrc(f.data() + end - 4, wire::compute_icrc(ip, end - 4 - 14, false, ihl));
  }
  if (wire::load_be(udp + 6, 2) != 0) {
    wire::store_be(udp + 6, 2, wire::udp_checksum(ip, false, udp, udp_len));
  }
}

template <typename Ep>
uint64_t drive(Ep& ep, const uint8_t* data, size_t size, size_t max_tables) {
  uint64_t answers = 0;
  std::vector<uint8_t> out(9216);
  Time now = 0;
  size_t at = 0;
  while (at + 2 <= size) {
    const size_t len = std::min<size_t>(wire::load_be(data + at, 2), size - at - 2);
    std::vector<uint8_t> f(data + at + 2, data + at + 2 + len);
    at += 2 + len;
    reseal(f);
    Frame fr{f.data(), static_cast<uint32_t>(f.size()), 0, static_cast<uint32_t>(f.size())};
    Frame* fp = &fr;
    now += kMicrosecond;
    ep.rx(std::span<Frame* const>(&fp, 1), now);
    // Everything it answers must be a frame that decodes.
    for (int i = 0; i < 64; ++i) {
      Frame o{out.data(), 0, 0, static_cast<uint32_t>(out.size())};
      Frame* op = &o;
      if (ep.tx(std::span<Frame* const>(&op, 1), now) == 0) break;
      ++answers;
      wire::Decoded d;
      wire::DecodeOptions opts;
      opts.elided = o.wire_len > o.len ? o.wire_len - o.len : 0;
      if (wire::decode_frame(std::span<const uint8_t>(out.data(), o.len), &d, opts) !=
          wire::WireError::kOk) {
        invariant_failed("the endpoint sent a frame that does not decode");
      }
    }
    if (ep.next_deadline() <= now + 100 * kMicrosecond) ep.on_timer(now + 100 * kMicrosecond);
  }
  Completion c[64];
  while (ep.poll_completions(c) == std::size(c)) {
  }
  (void)max_tables;
  return answers;
}

}  // namespace

void decode_frame_target(const uint8_t* data, size_t size) {
  wire::Decoded d;
  (void)wire::decode_frame(std::span<const uint8_t>(data, size), &d);
  wire::DecodeOptions lax;
  lax.verify_ip_checksum = lax.verify_udp_checksum = lax.verify_icrc = false;
  auto inside = [&](std::span<const uint8_t> s) {
    return s.empty() || (s.data() >= data && s.data() + s.size() <= data + size);
  };
  if (wire::decode_frame(std::span<const uint8_t>(data, size), &d, lax) == wire::WireError::kOk) {
    // A frame that decodes has its payload (a sealed one: its ciphertext) inside the buffer.
    if (!inside(d.payload) || !inside(d.sealed)) invariant_failed("payload outside the frame");
    // The plaintext decoder over the same bytes, as if TSS had opened them (spec/uet.md §5).
    if (!d.sealed.empty() && wire::decode_opened(d.sealed, &d) == wire::WireError::kOk &&
        !inside(d.payload)) {
      invariant_failed("opened payload outside the frame");
    }
  }
  (void)wire::decode_uet(std::span<const uint8_t>(data, size), &d);
}

namespace {

// The UET endpoint the frame targets drive: small tables, so that floods reach their bounds.
UetConfig fuzz_uet_config() {
  UetConfig c;
  c.local_ip4 = kLocal;
  c.max_pdcs = 8;
  c.mpr = 64;
  c.max_ops = 4;
  c.max_trecvs = 4;
  c.max_unexpected = 4;
  c.unexpected_bytes = 1 << 14;
  c.resource_indexes = 2;
  c.atomic_results = 2;
  return c;
}

void note_ses_reach(const UetCounters& k) {
  g_reach.uet_tagged += k.rx_tagged_matched + k.rx_tagged_unexpected;
  g_reach.uet_access_refused +=
      k.rx_bad_job + k.rx_bad_pid + k.rx_bad_index + k.rx_disabled + k.rx_bad_generation;
  g_reach.uet_atomic += k.rx_atomics + k.rx_atomic_refused;
  g_reach.uet_rendezvous += k.rx_rendezvous + k.rx_rdv_refused;
  g_reach.uet_deferrable += k.rx_deferred + k.rx_restarts + k.rx_rtr_stale + k.tx_restarts;
}

// The receives every UET target posts: a SEND buffer, and tagged receives (tag 0x42 with the
// low byte ignored, and one directed to the peer) so tagged messages are matched, and others
// fill the unexpected list; resource index 1 disabled, so a request for it is refused.
void post_receives(UetEndpoint& ep) {
  static std::vector<uint8_t> recv(1 << 13), tagged(1 << 12);
  (void)ep.post_recv({1, recv.data(), recv.size()});
  (void)ep.post_trecv({2, tagged.data(), tagged.size(), 0x42, 0xFF});
  (void)ep.post_trecv({3, tagged.data(), 64, 0xDEADBEEF, 0, kPeer});
  (void)ep.disable_resource(1);
}

}  // namespace

void uet_rx_target(const uint8_t* data, size_t size) {
  UetConfig c = fuzz_uet_config();
  static std::vector<uint8_t> region(1 << 16);
  auto ep = std::move(*UetEndpoint::create(c));
  (void)ep->register_memory(region.data(), region.size());
  post_receives(*ep);  // SENDs (RUD, ROD, UUD) and tagged sends get further
  g_reach.uet_answers += drive(*ep, data, size, c.max_pdcs);
  if (ep->pdcs_in_use() > c.max_pdcs) invariant_failed("PDC table grew past max_pdcs");
  // Requests accepted: on PDCs (RUD, ROD), RUDI (executed) and UUD (delivered).
  g_reach.uet_data += ep->counters().rx_data + ep->counters().rx_rudi_req + ep->counters().rx_uud;
  g_reach.uet_acks += ep->counters().rx_acks;
  g_reach.uet_nacks += ep->counters().rx_nacks;
  note_ses_reach(ep->counters());
}

namespace {

// The secure domain of the uet_tss_rx target.
tss::TssConfig fuzz_tss() {
  tss::TssConfig t;
  t.enabled = true;
  tss::DomainConfig d;
  d.sdi = 48879;  // the sealed vectors' domain (their key is another: they fail the tag)
  d.key[0].fill(0x3C);
  d.key[1].fill(0xC3);
  d.installed = {true, true};
  t.domains.push_back(d);
  t.tx_sdi = d.sdi;
  t.max_sources = 4;
  t.replay_window = 64;
  return t;
}

// Seals a clear UET frame (readdressed IPv4 without options / UDP 4793) in place: a TSS
// header after UDP, the rest sealed, the tag appended. Other frames stay as they are.
void seal_input(std::vector<uint8_t>& f, tss::Sublayer& sealer) {
  constexpr size_t kUet = 14 + 20 + 8;
  if (f.size() < kUet + 2 || f[12] != 0x08 || f[13] != 0x00 || f[14] != 0x45 || f[23] != 17 ||
      wire::load_be(f.data() + 36, 2) != wire::kUetUdpPort ||
      (f[kUet] >> 3) == static_cast<uint8_t>(wire::PdsType::kEnc)) {
    return;
  }
  f.insert(f.begin() + kUet, sealer.header_bytes(), 0);
  f.resize(f.size() + tss::kTagBytes);
  wire::as<wire::Ipv4>(f.data() + 14)->set_total_length(static_cast<uint16_t>(f.size() - 14));
  wire::store_be(f.data() + 38, 2, f.size() - 34);  // UDP length
  tss::SealLayout l;
  l.l3 = 14;
  l.l4 = 34;
  l.tss = kUet;
  (void)sealer.seal(f.data(), f.size() - tss::kTagBytes, l);
}

}  // namespace

void uet_tss_rx_target(const uint8_t* data, size_t size) {
  UetConfig c = fuzz_uet_config();
  c.tss = fuzz_tss();
  static std::vector<uint8_t> region(1 << 16);
  auto ep = std::move(*UetEndpoint::create(c));
  (void)ep->register_memory(region.data(), region.size());
  post_receives(*ep);
  auto sealer = std::move(*tss::Sublayer::create(fuzz_tss(), kPeer));
  // The records of `data` ([u16 length][frame]...): a length's top bit keeps the frame clear
  // (to be refused); the others are sealed (seal_input), then driven as in uet_rx.
  std::vector<uint8_t> stream;
  size_t at = 0;
  while (at + 2 <= size) {
    const size_t word = wire::load_be(data + at, 2);
    const size_t len = std::min<size_t>(word & 0x7FFF, size - at - 2);
    std::vector<uint8_t> f(data + at + 2, data + at + 2 + len);
    at += 2 + len;
    reseal(f);
    if ((word & 0x8000) == 0) {
      seal_input(f, *sealer);
      reseal(f);  // the UDP checksum over the ciphertext
    }
    stream.push_back(static_cast<uint8_t>(f.size() >> 8));
    stream.push_back(static_cast<uint8_t>(f.size()));
    stream.insert(stream.end(), f.begin(), f.end());
  }
  g_reach.uet_answers += drive(*ep, stream.data(), stream.size(), c.max_pdcs);
  if (ep->pdcs_in_use() > c.max_pdcs) invariant_failed("PDC table grew past max_pdcs");
  if (ep->tss()->sources() > c.tss.max_sources) invariant_failed("TSS sources past max_sources");
  g_reach.uet_data += ep->counters().rx_data + ep->counters().rx_rudi_req + ep->counters().rx_uud;
  g_reach.uet_acks += ep->counters().rx_acks;
  g_reach.uet_nacks += ep->counters().rx_nacks;
  note_ses_reach(ep->counters());
}

void roce_rx_target(const uint8_t* data, size_t size) {
  RoceConfig c;
  c.local_ip4 = kLocal;
  c.max_qps = 4;
  c.cq_entries = 64;
  static std::vector<uint8_t> region(1 << 16);
  auto ep = std::move(*RoceEndpoint::create(c));
  (void)ep->register_memory(region.data(), region.size());
  // Connected as the vectors' QPs commonly are; the rest is dropped as unknown QPs.
  (void)ep->connect_qp(kPeer, kRoceQpn, 0x11, 0, 0);
  g_reach.roce_answers += drive(*ep, data, size, c.max_qps);
  g_reach.roce_data += ep->counters().rx_data;
}

const Reach& reach() { return g_reach; }

}  // namespace uet::fuzz
