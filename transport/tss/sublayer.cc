// The Sublayer's per-packet work (sublayer.h, spec/uet.md §5): sealing every frame sent,
// opening every sealed frame received (domain, key, epoch, replay window, tag), the packet
// keys both derive once per rekey interval, and the start-PSN guard of secure PDC
// establishment (§5.6). Domains and their keys are set up and rotated in sublayer_keys.cc.
#include "transport/tss/sublayer.h"


#include <algorithm>
#include <cstring>

#include "transport/wire/net_headers.h"
#include "transport/wire/uet_headers.h"

namespace uet::tss {

namespace {

uint32_t load_be32(const uint8_t* p) noexcept {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

uint64_t source_key(uint32_t sdi, uint8_t an, uint32_t addr) noexcept {
  return uint64_t{sdi} << 33 | uint64_t{an} << 32 | addr;
}

// The TSS header's fields, whichever form (§5.1).
struct TssFields {
  uint32_t sdi;
  uint8_t an;
  bool sp;
  uint32_t ssi;
  uint64_t tsc;
  size_t size;
  const uint8_t* raw;
};

TssFields fields_of(const wire::Decoded& d) noexcept {
  if (d.tss_sp != nullptr) {
    const wire::TssSp& h = *d.tss_sp;
    return {h.sdi(), static_cast<uint8_t>(h.an()), true, h.ssi(), h.tsc(), wire::TssSp::kSize,
            h.raw};
  }
  const wire::Tss& h = *d.tss;
  return {h.sdi(), static_cast<uint8_t>(h.an()), false, 0, h.tsc(), wire::Tss::kSize, h.raw};
}

// §5.2: AAD = IP source and destination addresses || the 4 bytes after the IP header (the
// entropy header; over UDP, its two ports [choice]) || the TSS header.
size_t write_aad(uint8_t* out, const uint8_t* ip, bool ipv6, const uint8_t* l4,
                 const uint8_t* tss, size_t tss_size) noexcept {
  size_t n = 0;
  if (ipv6) {
    std::memcpy(out, ip + 8, 32);
    n = 32;
  } else {
    std::memcpy(out, ip + 12, 8);
    n = 8;
  }
  std::memcpy(out + n, l4, 4);
  n += 4;
  std::memcpy(out + n, tss, tss_size);
  return n + tss_size;
}

// §5.3: a packet key over the sender's IPv4 address or SSI (the 10-byte context) or, for an
// IPv6 sender without SSI, over its address (the 26-byte context).
bool derive_packet_key(Kdf& kdf, const char* label, uint16_t epoch, uint32_t rekey,
                       uint32_t addr, const uint8_t* addr6, DerivedKey* k) noexcept {
  if (addr6 != nullptr) {
    return kdf.derive(label, kdf_context6(epoch, rekey, std::span<const uint8_t, 16>(addr6, 16)),
                      k);
  }
  return kdf.derive(label, kdf_context4(epoch, rekey, addr), k);
}

}  // namespace

const char* drop_name(Drop d) noexcept {
  switch (d) {
    case Drop::kShort: return "short";
    case Drop::kUnknownSdi: return "unknown_sdi";
    case Drop::kNoKey: return "no_key";
    case Drop::kStaleEpoch: return "stale_epoch";
    case Drop::kTooOld: return "too_old";
    case Drop::kReplay: return "replay";
    case Drop::kBadTag: return "bad_tag";
    case Drop::kSourcesFull: return "sources_full";
    case Drop::kCrypto: return "crypto";
    case Drop::kCount: break;
  }
  return "?";
}

uint64_t Counters::dropped() const noexcept {
  uint64_t n = 0;
  for (uint64_t v : drops) n += v;
  return n;
}
uint32_t Sublayer::bound_job(const wire::Decoded& d) const noexcept {
  if (d.tss_sp == nullptr && d.tss == nullptr) return kAnyJob;
  const uint32_t sdi = d.tss_sp != nullptr ? d.tss_sp->sdi() : d.tss->sdi();
  for (const Domain& dom : domains_) {
    if (dom.config.sdi == sdi) return dom.config.job_id;
  }
  return kAnyJob;
}
// The key this server seals with towards `client` (its IPv4 address), in the newest epoch
// heard from it (else the domain's), derived on first use and whenever its slot held another
// client or association, or the client moved on (heard_epoch()).
Sublayer::TxKey* Sublayer::server_tx_key(uint32_t client) noexcept {
  TxKey& k = tx_keys_[tx_slot(client)];
  if (k.valid && k.client == client && k.an == tx_an_) return &k;
  k.valid = false;
  const DomainConfig& c = domains_[tx_domain_].config;
  uint16_t epoch = c.epoch;
  if (auto it = source_index_.find(source_key(c.sdi, tx_an_, client)); it != source_index_.end()) {
    if (sources_[it->second]->heard) epoch = sources_[it->second]->newest;
  }
  DerivedKey d;
  if (!domains_[tx_domain_].kdf[tx_an_].derive(UET_TSS_LABEL_SERVER,
                                                kdf_context4(epoch, 0, client), &d) ||
      !k.gcm.set_key(d.key, true, backend_)) {
    explicit_bzero(&d, sizeof d);
    return nullptr;
  }
  k.mask = d.iv_mask;
  explicit_bzero(&d, sizeof d);
  k.valid = true;
  k.client = client;
  k.epoch = epoch;
  k.an = tx_an_;
  ++counters_.rekeys;
  return &k;
}
Sublayer::Domain* Sublayer::domain(uint32_t sdi) noexcept {
  for (Domain& d : domains_) {
    if (d.config.sdi == sdi) return &d;
  }
  return nullptr;
}

// The packet key for the sending domain at (epoch, rekey): the domain key itself in direct
// mode, else the KDF over this sender's address or SSI (§5.3). Runs once per rekey interval.
bool Sublayer::key_tx(uint16_t epoch, uint32_t rekey, const uint8_t* addr6) noexcept {
  const DomainConfig& c = domains_[tx_domain_].config;
  if (c.mode == Mode::kDirect || c.mode == Mode::kClient) {
    tx_mask_ = c.mode == Mode::kClient ? c.iv_mask[tx_an_] : Iv{};
    if (!tx_gcm_.set_key(c.key[tx_an_], true, backend_)) return false;
  } else {
    DerivedKey k;
    if (!derive_packet_key(domains_[tx_domain_].kdf[tx_an_], UET_TSS_LABEL_CLUSTER, epoch, rekey,
                           send_ssi_ ? ssi_ : local_ip4_, addr6, &k) ||
        !tx_gcm_.set_key(k.key, true, backend_))
      return false;
    tx_mask_ = k.iv_mask;
    ++counters_.rekeys;
  }
  tx_keyed_ = true;
  tx_epoch_ = epoch;
  tx_rekey_ = rekey;
  return true;
}

// The AAD (§5.2) of a received frame, from its decoded headers.
size_t Sublayer::aad(const wire::Decoded& d, uint8_t* out) const noexcept {
  const uint8_t* l4 = d.udp != nullptr ? d.udp->raw : d.entropy->raw;
  const TssFields t = fields_of(d);
  return d.ipv4 != nullptr ? write_aad(out, d.ipv4->raw, false, l4, t.raw, t.size)
                           : write_aad(out, d.ipv6->raw, true, l4, t.raw, t.size);
}

bool Sublayer::seal(uint8_t* frame, size_t len, const SealLayout& l,
                    std::span<const uint8_t> payload) noexcept {
  const DomainConfig& c = domains_[tx_domain_].config;
  // §5.4: a counter never repeats under one key; at 2^48 - 1 the sender stops until rotated.
  if (tx_counter_ >= kCounterMask) {
    ++counters_.seal_failed;
    return false;
  }
  const uint64_t counter = tx_counter_;
  Gcm* gcm = &tx_gcm_;
  const Iv* mask = &tx_mask_;
  uint16_t epoch = c.epoch;
  if (c.mode == Mode::kServer) {
    // §5.3: the key of the client the frame goes to (IPv4 only, as the engines).
    TxKey* k = l.ipv6 ? nullptr : server_tx_key(load_be32(frame + l.l3 + 16));
    if (k == nullptr) {
      ++counters_.seal_failed;
      return false;
    }
    gcm = &k->gcm;
    mask = &k->mask;
    epoch = k->epoch;
  } else {
    const uint32_t rekey = c.mode == Mode::kCluster
                               ? static_cast<uint32_t>((counter & c.rekey_mask) >> c.rekey_shift)
                               : 0;
    const uint8_t* addr6 = l.ipv6 && !send_ssi_ ? frame + l.l3 + 8 : nullptr;
    if ((!tx_keyed_ || tx_epoch_ != c.epoch || tx_rekey_ != rekey) &&
        !key_tx(c.epoch, rekey, addr6)) {
      ++counters_.seal_failed;
      return false;
    }
  }
  const uint64_t tsc = uint64_t{epoch} << kCounterBits | counter;
  uint8_t* h = frame + l.tss;
  uint32_t word = uint32_t{static_cast<uint8_t>(wire::PdsType::kEnc)} << 27 |
                  uint32_t{send_ssi_} << 26 | uint32_t{tx_an_} << 24 | c.sdi;
  auto put32 = [](uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
  };
  put32(h, word);
  size_t at = 4;
  if (send_ssi_) {
    put32(h + 4, ssi_);
    at = 8;
  }
  put32(h + at, static_cast<uint32_t>(tsc >> 32));
  put32(h + at + 4, static_cast<uint32_t>(tsc));
  // AAD: the addresses and the 4 bytes after the IP header, then the TSS header (§5.2).
  uint8_t aad_buf[32 + 4 + 16];
  const size_t n = write_aad(aad_buf, frame + l.l3, l.ipv6, frame + l.l4, h, header_bytes_);
  // §5.2: the IV's first word is the SSI, else the IPv4 source, else (IPv6) the SDI.
  const uint32_t src = send_ssi_ ? ssi_ : l.ipv6 ? c.sdi : local_ip4_;
  const Iv iv = packet_iv(src, tsc, *mask);
  const size_t body = l.tss + header_bytes_;
  const size_t in_place = len - body - payload.size();
  if (!gcm->seal(iv, std::span<const uint8_t>(aad_buf, n),
                    std::span<uint8_t>(frame + body, in_place), payload,
                    frame + body + in_place, frame + len)) {
    ++counters_.seal_failed;
    return false;
  }
  ++tx_counter_;
  ++counters_.sealed;
  return true;
}

Drop Sublayer::key_source(Source& s, Domain& dom, uint8_t an, uint16_t epoch,
                          uint32_t rekey, uint32_t addr, const uint8_t* addr6) noexcept {
  const DomainConfig& c = dom.config;
  if (c.mode == Mode::kDirect) {
    s.mask = Iv{};
    if (!s.gcm.set_key(c.key[an], false, backend_)) return Drop::kCrypto;
  } else if (c.mode == Mode::kClient) {
    // A client's key is its epoch's (§5.3): the current one, or the one it rotated from.
    const bool now = epoch == c.epoch;
    if (!now && !(dom.previous && dom.previous_an == an && dom.previous_epoch == epoch)) {
      return Drop::kNoKey;
    }
    s.mask = now ? c.iv_mask[an] : dom.previous_mask;
    if (!s.gcm.set_key(now ? c.key[an] : dom.previous_key, false, backend_)) return Drop::kCrypto;
  } else {
    // Cluster: "U1" over the sender; server: "U2" over the client, who is the sender here.
    const char* label = c.mode == Mode::kServer ? UET_TSS_LABEL_SERVER : UET_TSS_LABEL_CLUSTER;
    DerivedKey k;
    if (!derive_packet_key(dom.kdf[an], label, epoch, rekey, addr, addr6, &k) ||
        !s.gcm.set_key(k.key, false, backend_))
      return Drop::kCrypto;
    s.mask = k.iv_mask;
    ++counters_.rekeys;
  }
  s.keyed = true;
  s.epoch = epoch;
  s.rekey = rekey;
  return Drop::kCount;
}

Sublayer::Source* Sublayer::locate(const wire::Decoded& d, bool create, Iv* iv,
                                   uint64_t* counter, Gcm** gcm, Drop* why) noexcept {
  const TssFields t = fields_of(d);
  Domain* dom = domain(t.sdi);
  if (dom == nullptr) {
    *why = fail(Drop::kUnknownSdi);
    return nullptr;
  }
  const DomainConfig& c = dom->config;
  if (!c.installed[t.an]) {
    *why = fail(Drop::kNoKey);
    return nullptr;
  }
  const uint16_t epoch = static_cast<uint16_t>(t.tsc >> kCounterBits);
  // RFC 1982 serial arithmetic: an epoch "older" by less than half the space (§5.4).
  const uint16_t age = static_cast<uint16_t>(c.epoch - epoch);
  if (age < 0x8000 && age > c.max_epoch_age) {
    *why = fail(Drop::kStaleEpoch);
    return nullptr;
  }
  // The receive state's name for the sender: SSI, IPv4 source, or (IPv6 without SSI) the last
  // word of its address.
  const uint32_t addr = t.sp                ? t.ssi
                        : d.ipv4 != nullptr ? d.ipv4->src()
                                            : load_be32(d.ipv6->raw + 8 + 12);
  const uint64_t key = source_key(t.sdi, t.an, addr);
  Source* s = nullptr;
  if (auto it = source_index_.find(key); it != source_index_.end()) {
    s = sources_[it->second].get();
  } else {
    if (!create) {
      // A trimmed frame from a sender never heard: its key is still derivable, into a
      // scratch state that keeps nothing.
      s = &scratch_;
      s->keyed = false;
    } else {
      if (sources_.size() >= max_sources_) {
        *why = fail(Drop::kSourcesFull);
        return nullptr;
      }
      source_index_.emplace(key, static_cast<uint32_t>(sources_.size()));
      sources_.push_back(std::make_unique<Source>());
      s = sources_.back().get();
      s->seen.assign(replay_window_ / 64, 0);
      s->per_client = c.mode == Mode::kServer || c.mode == Mode::kClient;
    }
  }
  *counter = t.tsc & kCounterMask;
  // Only cluster mode rekeys (§5.3; server mode's context has rekey 0).
  const uint32_t rekey = c.mode == Mode::kCluster
                             ? static_cast<uint32_t>((*counter & c.rekey_mask) >> c.rekey_shift)
                             : 0;
  const uint8_t* addr6 = !t.sp && d.ipv6 != nullptr ? d.ipv6->raw + 8 : nullptr;
  Source* keyed = s;
  if (s->heard && epoch != s->newest && static_cast<uint16_t>(s->newest - epoch) < 0x8000) {
    // An epoch this peer has left (§5.3): only what it sealed before switching opens, with
    // a key derived for the frame alone, so stragglers do not evict the current one.
    if (*counter >= s->switch_at) {
      *why = fail(Drop::kStaleEpoch);
      return nullptr;
    }
    keyed = &scratch_;
    keyed->keyed = false;
  }
  if (!keyed->keyed || keyed->epoch != epoch || keyed->rekey != rekey) {
    if (const Drop k = key_source(*keyed, *dom, t.an, epoch, rekey, addr, addr6);
        k != Drop::kCount) {
      *why = fail(k);
      return nullptr;
    }
  }
  const uint32_t iv_src = t.sp ? t.ssi : d.ipv4 != nullptr ? d.ipv4->src() : t.sdi;
  *iv = packet_iv(iv_src, t.tsc, keyed->mask);
  *gcm = &keyed->gcm;
  return s;
}

bool Sublayer::open(uint8_t* frame, const wire::Decoded& d, std::span<uint8_t>* plain,
                    Drop* why) noexcept {
  if (d.sealed.size() < wire::PdsPrologue::kSize + kTagBytes) {
    *why = fail(Drop::kShort);
    return false;
  }
  Iv iv;
  uint64_t counter = 0;
  Gcm* gcm = nullptr;
  Source* s = locate(d, true, &iv, &counter, &gcm, why);
  if (s == nullptr) return false;
  // The replay window is checked before and moved only after the tag matched, so a forged
  // frame can neither pass nor shift it.
  const uint64_t w = replay_window_;
  if (s->top > 0 && counter < s->top) {
    if (s->top - counter > w - 1) {
      *why = fail(Drop::kTooOld);
      return false;
    }
    if ((s->seen[(counter % w) / 64] >> (counter % 64) & 1) != 0) {
      *why = fail(Drop::kReplay);
      return false;
    }
  }
  uint8_t aad_buf[32 + 4 + 16];
  const size_t n = aad(d, aad_buf);
  const size_t off = static_cast<size_t>(d.sealed.data() - frame);
  const size_t body = d.sealed.size() - kTagBytes;
  uint8_t* data = frame + off;
  if (!gcm->open(iv, std::span<const uint8_t>(aad_buf, n), std::span<uint8_t>(data, body),
                 data + body)) {
    *why = fail(Drop::kBadTag);
    return false;
  }
  if (s->per_client) heard_epoch(*s, d, counter);
  if (counter >= s->top) {
    // Slide: clear the bits of the counters skipped between top and this one.
    const uint64_t gap = counter + 1 - s->top;
    if (s->top == 0 || gap >= w) {
      std::fill(s->seen.begin(), s->seen.end(), 0);
    } else {
      for (uint64_t c = s->top; c < counter; ++c) {
        s->seen[(c % w) / 64] &= ~(uint64_t{1} << (c % 64));
      }
    }
    s->top = counter + 1;
  }
  s->seen[(counter % w) / 64] |= uint64_t{1} << (counter % 64);
  ++counters_.opened;
  *plain = std::span<uint8_t>(data, body);
  return true;
}

// Server and client domains (§5.3): each client has its own epoch, which an authenticated
// frame moves forward; the server then seals towards that client in it.
void Sublayer::heard_epoch(Source& s, const wire::Decoded& d, uint64_t counter) noexcept {
  const TssFields t = fields_of(d);
  const Domain* dom = domain(t.sdi);
  const uint16_t epoch = static_cast<uint16_t>(t.tsc >> kCounterBits);
  if (!s.heard || static_cast<uint16_t>(epoch - s.newest) - 1u < 0x7FFFu) {
    counters_.peer_epochs += s.heard;
    s.heard = true;
    s.newest = epoch;
    s.switch_at = counter;
    if (dom->config.mode == Mode::kServer && !tx_keys_.empty() && !t.sp && d.ipv4 != nullptr) {
      TxKey& k = tx_keys_[tx_slot(d.ipv4->src())];
      if (k.client == d.ipv4->src()) k.valid = false;  // seal in its new epoch from now on
    }
  } else if (epoch == s.newest && counter < s.switch_at) {
    s.switch_at = counter;
  }
}

bool Sublayer::open_trimmed(uint8_t* frame, const wire::Decoded& d, std::span<uint8_t>* plain,
                            Drop* why) noexcept {
  Iv iv;
  uint64_t counter = 0;
  Gcm* gcm = nullptr;
  if (locate(d, false, &iv, &counter, &gcm, why) == nullptr) return false;
  uint8_t* data = frame + (d.sealed.data() - frame);
  if (!gcm->decrypt_unverified(iv, std::span<uint8_t>(data, d.sealed.size()))) {
    *why = fail(Drop::kCrypto);
    return false;
  }
  ++counters_.trimmed_unverified;
  *plain = std::span<uint8_t>(data, d.sealed.size());
  return true;
}

bool Sublayer::start_psn_ok(uint32_t source, uint16_t spdcid, uint32_t start) const noexcept {
  auto it = start_psn_.find(uint64_t{source} << 16 | spdcid);
  return it == start_psn_.end() || static_cast<int32_t>(start - it->second) >= 0;
}

void Sublayer::start_psn_used(uint32_t source, uint16_t spdcid, uint32_t next) noexcept {
  const uint64_t key = uint64_t{source} << 16 | spdcid;
  if (start_psn_.size() >= size_t{max_sources_} * kStartPsnsPerSource &&
      !start_psn_.contains(key)) {
    ++counters_.start_psn_unrecorded;  // bounded: never grown past
    return;
  }
  auto [it, added] = start_psn_.try_emplace(key, next);
  if (!added && static_cast<int32_t>(next - it->second) > 0) it->second = next;
}

uint32_t Sublayer::expected_start_psn(uint32_t source, uint16_t spdcid,
                                      uint32_t fallback) const noexcept {
  auto it = start_psn_.find(uint64_t{source} << 16 | spdcid);
  return it == start_psn_.end() ? fallback : it->second;
}

uint32_t Sublayer::initiator_start_psn(uint32_t peer, uint32_t fallback) const noexcept {
  auto it = next_start_.find(peer);
  return it == next_start_.end() ? fallback : it->second;
}

void Sublayer::initiator_next_start(uint32_t peer, uint32_t next) noexcept {
  // Bounded by max_sources peers: one forgotten starts its next PDC at random, which its
  // target refuses half the time (NEW_START_PSN) until the start PSN it names is recorded.
  if (next_start_.size() >= max_sources_ && !next_start_.contains(peer)) {
    next_start_.erase(next_start_.begin());
  }
  auto [it, added] = next_start_.try_emplace(peer, next);
  if (!added && static_cast<int32_t>(next - it->second) > 0) it->second = next;
}

}  // namespace uet::tss
