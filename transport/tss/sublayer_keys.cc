// The Sublayer's secure domains and their keys (sublayer.h, spec/uet.md §5.3, §5.4): the
// config's validation, create(), installing, activating and retiring an association's key, a
// client's epoch rotation, a restarted sender's counter, and the memory all of it takes. The
// per-packet sealing and opening is sublayer.cc.
#include "transport/tss/sublayer.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "transport/wire/uet_headers.h"

namespace uet::tss {

namespace {

absl::Status bad(const char* field, uint64_t value, const char* range) {
  return absl::InvalidArgumentError(
      absl::StrCat("TssConfig.", field, "=", value, " is out of range (valid: ", range, ")"));
}

}  // namespace

absl::Status TssConfig::validate() const {
  if (domains.empty()) {
    return absl::InvalidArgumentError("TssConfig.domains is empty (need at least the tx_sdi domain)");
  }
  bool tx_found = false;
  for (size_t i = 0; i < domains.size(); ++i) {
    const DomainConfig& d = domains[i];
    if (d.sdi > 0xFFFFFF) return bad("domains.sdi", d.sdi, "0..16777215");
    if (d.mode < Mode::kDirect || d.mode > Mode::kClient) {
      return bad("domains.mode", static_cast<uint64_t>(d.mode),
                 "1 (direct), 2 (cluster), 3 (server) or 4 (client)");
    }
    if ((d.mode == Mode::kServer || d.mode == Mode::kClient) && send_ssi) {
      return absl::InvalidArgumentError(
          "TssConfig.send_ssi with a server or client domain: server mode names clients by "
          "their IPv4 address here (spec/uet.md §5.3)");
    }
    if (d.rekey_shift > 47) return bad("domains.rekey_shift", d.rekey_shift, "0..47");
    if (d.job_id > 0xFFFFFF && d.job_id != kAnyJob) {
      return bad("domains.job_id", d.job_id, "0..16777215, or kAnyJob");
    }
    if ((d.rekey_mask & ~kCounterMask) != 0) {
      return bad("domains.rekey_mask", d.rekey_mask, "bits 0..47 only");
    }
    if (!d.installed[0] && !d.installed[1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("TssConfig.domains[", i, "] (sdi ", d.sdi, ") has no installed key"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (domains[j].sdi == d.sdi) {
        return absl::InvalidArgumentError(absl::StrCat("TssConfig.domains: sdi ", d.sdi, " twice"));
      }
    }
    if (d.sdi == tx_sdi) {
      tx_found = true;
      if (tx_an > 1) return bad("tx_an", tx_an, "0..1");
      if (!d.installed[tx_an]) {
        return absl::InvalidArgumentError(
            absl::StrCat("TssConfig.tx_an=", tx_an, " has no installed key in domain ", tx_sdi));
      }
    }
  }
  if (!tx_found) return bad("tx_sdi", tx_sdi, "the sdi of one of TssConfig.domains");
  if (replay_window < 64 || replay_window > 65536 || !std::has_single_bit(replay_window)) {
    return bad("replay_window", replay_window, "64..65536, a power of 2");
  }
  if (max_sources < 1 || max_sources > (1u << 20)) return bad("max_sources", max_sources, "1..1048576");
  if (server_tx_keys < 1 || server_tx_keys > 65536 || !std::has_single_bit(server_tx_keys)) {
    return bad("server_tx_keys", server_tx_keys, "1..65536, a power of 2");
  }
  // The libraries are a module (crypto.h): missing, TSS cannot run, whatever the backend.
  if (absl::Status s = crypto_status(); !s.ok()) return s;
  if (!backend_available(backend)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TssConfig.backend=", backend_name(backend),
        " is not available here (built without it, or the CPU lacks AES-NI): use auto or openssl"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Sublayer>> Sublayer::create(const TssConfig& config,
                                                           uint32_t local_ip4) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  std::unique_ptr<Sublayer> t(new Sublayer());
  t->local_ip4_ = local_ip4;
  t->backend_ = config.backend == Backend::kAuto ? best_backend() : config.backend;
  t->replay_window_ = config.replay_window;
  t->max_sources_ = config.max_sources;
  t->send_ssi_ = config.send_ssi;
  t->ssi_ = config.ssi;
  t->header_bytes_ = config.send_ssi ? wire::TssSp::kSize : wire::Tss::kSize;
  for (const DomainConfig& d : config.domains) {
    t->binds_jobs_ = t->binds_jobs_ || d.job_id != kAnyJob;
    Domain dom;
    dom.config = d;
    dom.fresh = d.installed;
    if (!dom.key_kdfs()) return absl::InternalError("TSS: OpenSSL's CMAC failed to key");
    if (d.sdi == config.tx_sdi) t->tx_domain_ = t->domains_.size();
    t->domains_.push_back(std::move(dom));
  }
  t->tx_an_ = config.tx_an;
  if (t->domains_[t->tx_domain_].config.mode == Mode::kServer)
    t->tx_keys_.resize(config.server_tx_keys);
  t->domains_[t->tx_domain_].fresh[config.tx_an] = false;
  return t;
}
bool client_key(const Key& master, uint16_t epoch, uint32_t client_ip4, DerivedKey* out) noexcept {
  return kdf(master, UET_TSS_LABEL_SERVER, kdf_context4(epoch, 0, client_ip4), out);
}
// Cluster and server domains derive keys from each installed domain key: its CMAC is keyed
// once here, not per derivation.
bool Sublayer::Domain::key_kdfs() noexcept {
  for (uint8_t an = 0; an < 2; ++an) {
    const bool derives = config.mode == Mode::kCluster || config.mode == Mode::kServer;
    if (!derives || !config.installed[an]) {
      kdf[an].clear();
    } else if (!kdf[an].set_key(config.key[an])) {
      return false;
    }
  }
  return true;
}
absl::Status Sublayer::install_key(uint32_t sdi, uint8_t an, const Key& key, const Iv& iv_mask) {
  if (an > 1) return absl::InvalidArgumentError(absl::StrCat("install_key: an=", an, " (valid: 0..1)"));
  Domain* d = domain(sdi);
  if (d == nullptr) return absl::NotFoundError(absl::StrCat("install_key: no domain with sdi ", sdi));
  if (&domains_[tx_domain_] == d && an == tx_an_) {
    return absl::FailedPreconditionError(
        "install_key: that association is sending; activate the other one first");
  }
  d->config.key[an] = key;
  d->config.iv_mask[an] = iv_mask;
  d->config.installed[an] = true;
  d->fresh[an] = true;
  if (!d->key_kdfs()) return absl::InternalError("install_key: OpenSSL's CMAC failed to key");
  // A new key starts every sender's counter again: forget their windows.
  for (auto it = source_index_.begin(); it != source_index_.end(); ++it) {
    if ((it->first >> 32) == (uint64_t{sdi} << 1 | an)) {
      Source& s = *sources_[it->second];
      s.keyed = false;
      s.top = 0;
      s.heard = false;
      std::fill(s.seen.begin(), s.seen.end(), 0);
    }
  }
  return absl::OkStatus();
}

absl::Status Sublayer::activate(uint8_t an) {
  if (an > 1) return absl::InvalidArgumentError(absl::StrCat("activate: an=", an, " (valid: 0..1)"));
  if (an == tx_an_) return absl::OkStatus();
  Domain& d = domains_[tx_domain_];
  // §5.4: the counter restarts at 0, so the key must never have sent before.
  if (!d.fresh[an]) {
    return absl::FailedPreconditionError(absl::StrCat(
        "activate: association ", an, " has no fresh key (install_key a new one first)"));
  }
  d.fresh[an] = false;
  tx_an_ = an;
  tx_counter_ = 0;
  tx_keyed_ = false;
  return absl::OkStatus();
}

absl::Status Sublayer::retire(uint32_t sdi, uint8_t an) {
  if (an > 1) return absl::InvalidArgumentError(absl::StrCat("retire: an=", an, " (valid: 0..1)"));
  Domain* d = domain(sdi);
  if (d == nullptr) return absl::NotFoundError(absl::StrCat("retire: no domain with sdi ", sdi));
  if (d == &domains_[tx_domain_] && an == tx_an_) {
    return absl::FailedPreconditionError("retire: that association is sending");
  }
  d->config.installed[an] = false;
  d->config.key[an] = Key{};
  d->kdf[an].clear();
  d->fresh[an] = false;
  return absl::OkStatus();
}

absl::Status Sublayer::rotate_client_epoch(uint16_t epoch, const Key& key, const Iv& iv_mask) {
  Domain& d = domains_[tx_domain_];
  if (d.config.mode != Mode::kClient) {
    return absl::FailedPreconditionError(
        "rotate_client_epoch: the sending domain is not a client's (Mode::kClient)");
  }
  if (static_cast<uint16_t>(epoch - d.config.epoch) - 1u >= 0x7FFFu) {
    return absl::InvalidArgumentError(absl::StrCat("rotate_client_epoch: epoch ", epoch,
                                                   " is not newer than ", d.config.epoch));
  }
  d.previous = true;
  d.previous_an = tx_an_;
  d.previous_epoch = d.config.epoch;
  d.previous_key = d.config.key[tx_an_];
  d.previous_mask = d.config.iv_mask[tx_an_];
  d.config.key[tx_an_] = key;
  d.config.iv_mask[tx_an_] = iv_mask;
  d.config.epoch = epoch;
  // The counter goes on: the new key gives new IVs, and the server's replay window and its
  // test for frames sealed before the switch both rest on one counter across epochs.
  tx_keyed_ = false;
  return absl::OkStatus();
}

absl::Status Sublayer::resume_counter(uint64_t counter) {
  if (counter > kCounterMask || counter < tx_counter_) {
    return absl::InvalidArgumentError(absl::StrCat("resume_counter: ", counter, " (valid: ",
                                                   tx_counter_, "..", kCounterMask, ")"));
  }
  tx_counter_ = counter;
  return absl::OkStatus();
}

size_t Sublayer::memory_bound(const TssConfig& c) noexcept {
  constexpr size_t kGcmBytes = kGcmStateBytes;
  const size_t sources = c.max_sources;
  // A flat_hash_map holds at most twice its entries' slots (load factor 7/8, power of 2).
  const size_t starts = sources * kStartPsnsPerSource;
  size_t server = 0;  // per-client sending keys, when the sending domain is a server's
  for (const DomainConfig& d : c.domains) {
    if (d.sdi == c.tx_sdi && d.mode == Mode::kServer)
      server = c.server_tx_keys * (sizeof(TxKey) + kGcmBytes);
  }
  return server + sizeof(Sublayer) + c.domains.size() * (sizeof(Domain) + 2 * kKdfStateBytes) +
         kGcmBytes +
         sources * (sizeof(void*) + 2 * 16 + sizeof(Source) + kGcmBytes + c.replay_window / 8) +
         2 * starts * 16 + 2 * sources * 12;
}

size_t Sublayer::memory_bytes() const noexcept {
  constexpr size_t kGcmBytes = kGcmStateBytes;  // key schedule, GHASH table
  size_t n = sizeof(*this) + domains_.capacity() * sizeof(Domain) + kGcmBytes;
  for (const Domain& d : domains_) n += (d.kdf[0].keyed() + d.kdf[1].keyed()) * kKdfStateBytes;
  n += sources_.capacity() * sizeof(void*) + source_index_.capacity() * 16;
  n += sources_.size() * (sizeof(Source) + kGcmBytes + replay_window_ / 8);
  n += start_psn_.capacity() * 16 + next_start_.capacity() * 12;
  n += tx_keys_.capacity() * sizeof(TxKey);
  for (const TxKey& k : tx_keys_) n += k.gcm.keyed() ? kGcmBytes : 0;
  return n;
}

}  // namespace uet::tss
