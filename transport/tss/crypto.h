// TSS cryptography (spec/uet.md §5.2, §5.3): AES-256-GCM per packet from Intel's ipsec-mb
// (VAES/AVX-512 where the CPU has them) or OpenSSL 3, and the CMAC-AES counter-mode KDF from
// OpenSSL; nothing here implements a cipher. Both libraries live in the module
// libuet_tss_crypto.so (crypto_module.h), opened when TSS first asks for a backend or a key:
// a program that never keys TSS does not map them.
//
// Ownership: a Gcm owns one key schedule (ipsec-mb's expanded key and GHASH table, or an
// OpenSSL context) prepared once per key; every packet only sets its IV, so the data path
// neither allocates nor re-expands the key. Not thread-safe: one owner.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "spec/uet.def"
#include "transport/tss/crypto_module.h"

namespace uet::tss {

inline constexpr size_t kKeyBytes = UET_TSS_KEY_BYTES;
inline constexpr size_t kIvBytes = UET_TSS_IV_BYTES;
inline constexpr size_t kTagBytes = UET_TSS_TAG_BYTES;

using Key = std::array<uint8_t, kKeyBytes>;
using Iv = std::array<uint8_t, kIvBytes>;
using Tag = std::array<uint8_t, kTagBytes>;

// What the KDF yields: the packet key and the mask XORed into every IV (§5.3).
struct DerivedKey {
  Key key{};
  Iv iv_mask{};
};

// NIST SP 800-108 counter mode, PRF AES-256-CMAC, an 8-bit counter from 1 before the fixed
// data Label || 0x00 || Context || L (L = 352 as 2 bytes, big-endian): 44 bytes, key then IV
// mask (spec/uet.md §5.3). False only if OpenSSL fails (no CMAC in the provider) or the
// module does not load (crypto_status()).
bool kdf(const Key& master, std::string_view label, std::span<const uint8_t> context,
         DerivedKey* out) noexcept;

// Heap bytes one keyed Kdf holds at most (OpenSSL's CMAC context and its AES key schedule).
inline constexpr size_t kKdfStateBytes = 1024;

// The same KDF under one master key, its CMAC keyed once: a derivation is then three CMAC
// blocks, where kdf() builds and keys an OpenSSL context each time. One owner.
class Kdf {
 public:
  Kdf() noexcept = default;
  ~Kdf();
  Kdf(Kdf&& o) noexcept : ctx_(o.ctx_) { o.ctx_ = nullptr; }
  Kdf& operator=(Kdf&& o) noexcept;
  Kdf(const Kdf&) = delete;
  Kdf& operator=(const Kdf&) = delete;

  bool set_key(const Key& master) noexcept;  // false if OpenSSL or the module fails
  void clear() noexcept;                      // forgets the key
  bool keyed() const noexcept { return ctx_ != nullptr; }
  bool derive(std::string_view label, std::span<const uint8_t> context,
              DerivedKey* out) noexcept;

 private:
  void* ctx_ = nullptr;  // the module's CMAC state
};

// The KDF context (§5.3): epoch (2) || rekey (4) || address (4), IPv4 or SSI form...
std::array<uint8_t, 10> kdf_context4(uint16_t epoch, uint32_t rekey, uint32_t addr) noexcept;
// ... or 0 (4) || epoch (2) || rekey (4) || address (16), the IPv6 form.
std::array<uint8_t, 26> kdf_context6(uint16_t epoch, uint32_t rekey,
                                     std::span<const uint8_t, 16> addr) noexcept;

// The packet IV (§5.2): `source` (SSI, IPv4 source or SDI, big-endian) || TSC (big-endian),
// XORed with the IV mask (zero in direct mode).
Iv packet_iv(uint32_t source, uint64_t tsc, const Iv& mask) noexcept;

// Which library seals and opens: both give the same bytes (the differential tests hold them
// to it); kAuto is ipsec-mb where it was built in and the CPU has AES-NI, else OpenSSL.
enum class Backend : uint8_t { kAuto, kIpsecMb, kOpenSsl };
// Whether libuet_tss_crypto.so loaded (opening it on the first call): the error names the
// module, the paths tried and the loader's reason. Every backend is unavailable without it.
absl::Status crypto_status();
// kAuto resolved on this machine (never kAuto).
Backend best_backend() noexcept;
bool backend_available(Backend b) noexcept;
const char* backend_name(Backend b) noexcept;  // "auto", "ipsec-mb", "openssl"
bool parse_backend(std::string_view name, Backend* out) noexcept;
// For reports: library, version and the code path it chose, e.g. "ipsec-mb 1.3.0 (avx512)".
std::string backend_detail(Backend b);

// Heap bytes one keyed Gcm holds at most: ipsec-mb's 1 KiB key data and its alignment, or an
// OpenSSL context (about the same).
inline constexpr size_t kGcmStateBytes = 1152;

// AES-256-GCM with a 96-bit IV and a 16-byte tag, in place.
class Gcm {
 public:
  Gcm() noexcept = default;
  ~Gcm();
  Gcm(Gcm&& o) noexcept
      : state_(o.state_), ops_(o.ops_), encrypt_(o.encrypt_), backend_(o.backend_) {
    o.state_ = nullptr;
  }
  Gcm& operator=(Gcm&& o) noexcept;
  Gcm(const Gcm&) = delete;
  Gcm& operator=(const Gcm&) = delete;

  // Keys the context for sealing (encrypt) or opening with `backend` (kAuto: the best here);
  // false if that backend is unavailable or fails. Re-keying reuses the storage.
  bool set_key(const Key& key, bool encrypt, Backend backend = Backend::kAuto) noexcept;
  bool keyed() const noexcept { return state_ != nullptr; }
  Backend backend() const noexcept { return backend_; }

  // Encrypts data in place and writes the tag; `aad` is authenticated only.
  bool seal(const Iv& iv, std::span<const uint8_t> aad, std::span<uint8_t> data,
            uint8_t* tag) noexcept {
    return seal(iv, aad, data, {}, nullptr, tag);
  }
  // As seal(), with `from` (when not empty) encrypted into `to` after `data`: a payload read
  // from registered memory straight into the frame, in the same pass that encrypts it.
  // Inline: the engine calls the module's function straight, one indirect call as a PLT's.
  bool seal(const Iv& iv, std::span<const uint8_t> aad, std::span<uint8_t> data,
            std::span<const uint8_t> from, uint8_t* to, uint8_t* tag) noexcept {
    return encrypt_ && state_ != nullptr && ops_->seal(state_, iv.data(), aad, data, from, to, tag);
  }
  // Decrypts data in place; true only if the tag matches (data is then the plaintext; on
  // false its bytes are undefined and must not be used).
  bool open(const Iv& iv, std::span<const uint8_t> aad, std::span<uint8_t> data,
            const uint8_t* tag) noexcept {
    return !encrypt_ && state_ != nullptr && ops_->open(state_, iv.data(), aad, data, tag);
  }
  // Decrypts a prefix in place without authenticating it: a trimmed packet lost its tag
  // (§5.5), so its headers can be read but never trusted.
  bool decrypt_unverified(const Iv& iv, std::span<uint8_t> data) noexcept {
    return !encrypt_ && state_ != nullptr && ops_->decrypt_unverified(state_, iv.data(), data);
  }

 private:
  void release() noexcept;

  void* state_ = nullptr;         // the backend's keyed context (ops_'s)
  const GcmOps* ops_ = nullptr;   // set with state_
  bool encrypt_ = true;
  Backend backend_ = Backend::kOpenSsl;
};

// Parses 64 hex digits into a key; false on any other input.
bool parse_key(std::string_view hex, Key* out) noexcept;

}  // namespace uet::tss
