// The Transport Security Sublayer of one endpoint (spec/uet.md §5): secure domains, sealing
// every frame it sends, opening every sealed frame it receives, the per-source replay window
// and the start-PSN guard of secure PDC establishment.
//
// Ownership and bounds: one Sublayer per endpoint, driven by the endpoint's thread only. Key
// material lives in `domains_` (a few per endpoint) and is never logged or printed. Receive
// state is one Source per (domain, association, sender), at most TssConfig::max_sources, each
// a key schedule (~1 KiB) and a replay bitmap; a new sender beyond the bound is refused
// and counted, never grown into. A server-mode sender also keeps TssConfig::server_tx_keys
// per-client sending keys. The data path allocates only while those tables fill.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/tss/crypto.h"
#include "transport/wire/decode.h"

namespace uet::tss {

inline constexpr int kCounterBits = UET_TSS_COUNTER_BITS;
inline constexpr uint64_t kCounterMask = (uint64_t{1} << kCounterBits) - 1;

// §5.3: direct uses the domain key as the packet key; cluster derives a packet key per
// sender (and epoch and rekey interval) with label "U1". Server mode: the server holds the
// domain key and derives each client's key and IV mask with label "U2" from the client's IPv4
// address and the epoch (rekey 0), one key for both directions; the client (kClient) is given
// that key and mask (client_key()) and never sees the domain key.
enum class Mode : uint8_t { kDirect = 1, kCluster = 2, kServer = 3, kClient = 4 };

inline constexpr uint32_t kAnyJob = 0xFFFFFFFF;  // DomainConfig::job_id: not bound

// Server mode (§5.3): the key and IV mask a server derives for the client at `client_ip4`
// under `master` at `epoch`; what a key manager hands that client for its kClient domain.
bool client_key(const Key& master, uint16_t epoch, uint32_t client_ip4, DerivedKey* out) noexcept;

struct DomainConfig {
  uint32_t sdi = 1;  // 24 bits (§5.1)
  Mode mode = Mode::kCluster;
  // One secure domain key per association number (AN, §5.4); only installed ones are used.
  std::array<Key, 2> key{};
  std::array<bool, 2> installed{};
  std::array<Iv, 2> iv_mask{};  // kClient: the IV mask derived with each key
  // §5.3: rekey = (counter & rekey_mask) >> rekey_shift enters the KDF, so the packet key
  // changes every 2^shift packets without a word on the wire. The default is the spec's
  // example (a new key every 2^32 packets).
  uint64_t rekey_mask = 0x0000FFFF00000000;
  uint8_t rekey_shift = 32;
  uint16_t epoch = 0;          // TSC bits 63..48 this endpoint sends (§5.1)
  uint16_t max_epoch_age = 16;  // received epochs older than epoch - this are dropped
  // The job whose traffic this domain carries (0..16777215, spec/uet.md §5.7): a request or
  // response opened in it that names another job is refused, so a tenant's keys reach no
  // other job's resources. kAnyJob: any job.
  uint32_t job_id = kAnyJob;
};

struct TssConfig {
  bool enabled = false;
  std::vector<DomainConfig> domains;  // every domain this endpoint may receive in
  uint32_t tx_sdi = 1;                // the domain it sends in (must be among domains)
  uint8_t tx_an = 0;                  // ... with this association's key (installed)
  bool send_ssi = false;              // SP = 1: a 32-bit SSI names the sender (§5.1)
  uint32_t ssi = 0;
  uint32_t replay_window = 1024;  // TSCs remembered per sender, 64..65536, a power of 2
  uint32_t max_sources = 4096;    // senders tracked at once, 1..1048576
  // Sending in a kServer domain: per-client keys kept, 1..65536, a power of 2; a client whose
  // slot another took is derived again (counted in Counters::rekeys).
  uint32_t server_tx_keys = 256;
  Backend backend = Backend::kAuto;  // the AES-256-GCM library (crypto.h); must be available
  // Sealed IPv4 frames go with UDP checksum 0 (RFC 768: "not computed"): the tag covers the
  // ciphertext and the AAD the ports and addresses, so the checksum would cover nothing more
  // (spec/uet.md §5.2 [choice]). True computes it anyway.
  bool udp_checksum = false;
  // Refuses bad values with a message naming TssConfig.FIELD and its range.
  absl::Status validate() const;
};

// Why a sealed frame was not delivered (always-on counters, one per reason).
#define UET_TSS_DROPS(X)                                                        \
  X(kShort, "shorter than a TSS header and a tag")                             \
  X(kUnknownSdi, "secure domain not configured")                               \
  X(kNoKey, "no installed key for the association (retired or not yet) or epoch") \
  X(kStaleEpoch, "epoch older than the domain's allowed age")                   \
  X(kTooOld, "TSC below the sender's replay window")                           \
  X(kReplay, "TSC already received from this sender")                           \
  X(kBadTag, "authentication tag does not match")                               \
  X(kSourcesFull, "receive state for another sender would exceed max_sources")  \
  X(kCrypto, "the cipher library failed")

enum class Drop : uint8_t {
#define UET_TSS_DROP_ENUM(k, why) k,
  UET_TSS_DROPS(UET_TSS_DROP_ENUM)
#undef UET_TSS_DROP_ENUM
      kCount
};
const char* drop_name(Drop d) noexcept;  // "kBadTag" -> "bad_tag"

struct Counters {
  uint64_t sealed = 0;            // frames sent sealed
  uint64_t seal_failed = 0;       // ... not sent: counter exhausted or the cipher failed
  uint64_t opened = 0;            // sealed frames authenticated and decrypted
  uint64_t trimmed_unverified = 0;  // trimmed sealed frames read without a tag (§5.5)
  uint64_t rekeys = 0;              // packet keys derived (KDF runs)
  uint64_t start_psn_unrecorded = 0;  // closing PDCs whose expected start PSN found no room
  uint64_t peer_epochs = 0;  // server or client domains: a peer authenticated in a newer epoch
  std::array<uint64_t, static_cast<size_t>(Drop::kCount)> drops{};
  uint64_t dropped() const noexcept;
};

// Where the parts of a frame being sealed are (offsets from the frame's first byte).
struct SealLayout {
  uint16_t l3 = 0;      // IP header
  bool ipv6 = false;
  uint16_t l4 = 0;      // UDP header, or the entropy header of the IP-only form
  bool ip_only = false;
  uint16_t tss = 0;     // TSS header (reserved by the builder, written by seal())
};

class Sublayer {
 public:
  static absl::StatusOr<std::unique_ptr<Sublayer>> create(const TssConfig& config,
                                                          uint32_t local_ip4);

  // Bytes a sealed frame carries beyond the plain one: header and tag.
  size_t header_bytes() const noexcept { return header_bytes_; }
  size_t overhead() const noexcept { return header_bytes_ + kTagBytes; }

  // Writes the TSS header at l.tss with the next TSC, encrypts [l.tss + header, len) in
  // place and writes the tag at frame + len (the caller reserved kTagBytes there). False if
  // the counter is exhausted (2^48 packets under one key: rotate) or the cipher failed.
  // `payload`, when not empty, is the frame's last payload.size() bytes before the tag, still
  // to be read from registered memory: it is encrypted from there into the frame (no copy).
  bool seal(uint8_t* frame, size_t len, const SealLayout& l,
            std::span<const uint8_t> payload = {}) noexcept;

  // Opens the sealed frame `d` decoded (d.tss or d.tss_sp set, d.sealed its ciphertext and
  // tag, inside `frame`): checks domain, key, epoch and replay window, authenticates and
  // decrypts in place. On success *plain is the PDS header onward without the tag, for
  // wire::decode_opened(). On failure the reason is counted and returned.
  bool open(uint8_t* frame, const wire::Decoded& d, std::span<uint8_t>* plain,
            Drop* why) noexcept;
  // A trimmed sealed frame has lost its tag: decrypts its prefix without authenticating it
  // (§5.5), for a NACK and nothing else. No replay state changes.
  bool open_trimmed(uint8_t* frame, const wire::Decoded& d, std::span<uint8_t>* plain,
                    Drop* why) noexcept;

  // §5.6 secure PDC establishment (0-RTT): a SYN from `source`'s PDC `spdcid` may start a
  // PDC only at or above the PSN expected of that PDC id; a PDC that ends moves the
  // expectation to the PSN after its last, so a replayed SYN of a closed PDC is refused.
  // (Per PDC id, not per source: an older PDC of the same source may still be opening.)
  bool start_psn_ok(uint32_t source, uint16_t spdcid, uint32_t start) const noexcept;
  void start_psn_used(uint32_t source, uint16_t spdcid, uint32_t next) noexcept;
  uint32_t expected_start_psn(uint32_t source, uint16_t spdcid, uint32_t fallback) const noexcept;
  // The initiator's side of the same rule: where its next PDC to `peer` starts (after the
  // last PSN of its previous one, or where a NACK NEW_START_PSN said), else `fallback`.
  uint32_t initiator_start_psn(uint32_t peer, uint32_t fallback) const noexcept;
  void initiator_next_start(uint32_t peer, uint32_t next) noexcept;

  // Key rotation (§5.4). Install a fresh key for `an` in domain `sdi` (receivers accept it
  // at once; the receive state of that association is reset), switch sending to it (the
  // TSC counter starts again at 0), retire an association (its frames are dropped).
  absl::Status install_key(uint32_t sdi, uint8_t an, const Key& key, const Iv& iv_mask = {});
  absl::Status activate(uint8_t an);
  absl::Status retire(uint32_t sdi, uint8_t an);

  // Per-client rotation in server mode (§5.3): this client (its sending domain kClient) moves
  // to `epoch`, serially newer than its current one, with the key and mask client_key()
  // derives there. Its counter goes on. The server follows on the first frame it
  // authenticates in the new epoch, for both directions; frames either side sealed in the
  // old epoch before its peer switched still open, later ones are dropped (stale_epoch).
  absl::Status rotate_client_epoch(uint16_t epoch, const Key& key, const Iv& iv_mask);

  // A restarted sender continues its counter where the key left off (persisted outside);
  // going back would repeat IVs under one key and is refused.
  absl::Status resume_counter(uint64_t counter);

  // The job a sealed frame's domain is bound to (DomainConfig::job_id; kAnyJob when unbound
  // or the domain is unknown), and whether any domain is bound (else no frame needs asking).
  uint32_t bound_job(const wire::Decoded& d) const noexcept;
  bool binds_jobs() const noexcept { return binds_jobs_; }

  // The AES-256-GCM library every key of this endpoint uses (kAuto resolved).
  Backend backend() const noexcept { return backend_; }
  uint8_t tx_an() const noexcept { return tx_an_; }
  uint64_t tx_counter() const noexcept { return tx_counter_; }
  const Counters& counters() const noexcept { return counters_; }
  size_t sources() const noexcept { return sources_.size(); }
  size_t memory_bytes() const noexcept;
  // The most memory_bytes() reaches for `config`: every table at its bound.
  static size_t memory_bound(const TssConfig& config) noexcept;
  // Expected start PSNs kept (§5.6) per receive-state entry allowed: beyond max_sources x
  // this, a closing PDC records none (counted) and its SYNs rest on the replay window alone.
  static constexpr size_t kStartPsnsPerSource = 16;

 private:
  struct Domain {
    DomainConfig config;
    std::array<bool, 2> fresh{};  // installed and never sent with: activate() may use it
    // kClient: the key of the epoch before rotate_client_epoch(), for the server's frames
    // sealed before it followed.
    bool previous = false;
    uint8_t previous_an = 0;
    uint16_t previous_epoch = 0;
    Key previous_key{};
    Iv previous_mask{};
    std::array<Kdf, 2> kdf;  // cluster and server: each installed key's KDF, keyed once
    bool key_kdfs() noexcept;
  };
  // Receive state of one sender in one association of one domain.
  struct Source {
    Gcm gcm;
    bool keyed = false;
    uint16_t epoch = 0;
    uint32_t rekey = 0;
    Iv mask{};
    uint64_t top = 0;  // highest counter accepted + 1 (0: none yet)
    // Server and client domains, where each client has its own epoch (§5.3): the newest
    // epoch authenticated from this peer and the lowest counter seen in it. A frame of an
    // older epoch opens only below that counter: it was sealed before the peer switched.
    bool per_client = false;  // its domain is a server's or a client's
    bool heard = false;
    uint16_t newest = 0;
    uint64_t switch_at = 0;
    std::vector<uint64_t> seen;  // replay bitmap, bit (counter % window)
  };

  Sublayer() = default;
  Domain* domain(uint32_t sdi) noexcept;
  // addr6: the sender's IPv6 address when the frame is IPv6 without an SSI (§5.3), else null.
  bool key_tx(uint16_t epoch, uint32_t rekey, const uint8_t* addr6) noexcept;
  // kCount when keyed, else why not.
  Drop key_source(Source& s, Domain& dom, uint8_t an, uint16_t epoch, uint32_t rekey,
                  uint32_t addr, const uint8_t* addr6) noexcept;
  // Finds the sealed frame's domain, source state, key and IV, checking everything but the
  // tag. *gcm is the source's own key, or scratch_'s for an epoch it has left.
  Source* locate(const wire::Decoded& d, bool create, Iv* iv, uint64_t* counter, Gcm** gcm,
                 Drop* why) noexcept;
  void heard_epoch(Source& s, const wire::Decoded& d, uint64_t counter) noexcept;
  size_t aad(const wire::Decoded& d, uint8_t* out) const noexcept;
  Drop fail(Drop d) noexcept {
    ++counters_.drops[static_cast<size_t>(d)];
    return d;
  }

  uint32_t local_ip4_ = 0;
  Backend backend_ = Backend::kOpenSsl;
  bool binds_jobs_ = false;
  uint32_t replay_window_ = 1024;
  uint32_t max_sources_ = 4096;
  bool send_ssi_ = false;
  uint32_t ssi_ = 0;
  size_t header_bytes_ = 12;
  std::vector<Domain> domains_;
  size_t tx_domain_ = 0;
  uint8_t tx_an_ = 0;
  uint64_t tx_counter_ = 0;
  Gcm tx_gcm_;
  bool tx_keyed_ = false;
  uint16_t tx_epoch_ = 0;
  uint32_t tx_rekey_ = 0;
  Iv tx_mask_{};
  absl::flat_hash_map<uint64_t, uint32_t> source_index_;  // (sdi, an, addr) -> sources_
  std::vector<std::unique_ptr<Source>> sources_;
  Source scratch_;  // a trimmed frame's key when its sender has no state (open_trimmed)
  // Sending in a kServer domain: per-client keys, direct-mapped by client address.
  struct TxKey {
    bool valid = false;
    uint8_t an = 0;
    uint16_t epoch = 0;
    uint32_t client = 0;
    Gcm gcm;
    Iv mask{};
  };
  std::vector<TxKey> tx_keys_;
  TxKey* server_tx_key(uint32_t client) noexcept;
  uint32_t tx_slot(uint32_t client) const noexcept {
    // Fibonacci hashing: neighbouring addresses land far apart.
    return static_cast<uint32_t>((uint64_t{client} * 0x9E3779B97F4A7C15u) >> 40) &
           static_cast<uint32_t>(tx_keys_.size() - 1);
  }
  absl::flat_hash_map<uint64_t, uint32_t> start_psn_;  // (source, spdcid) -> expected start
  absl::flat_hash_map<uint32_t, uint32_t> next_start_;  // peer -> our next start PSN
  Counters counters_;
};

}  // namespace uet::tss
