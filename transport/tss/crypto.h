// TSS cryptography (spec/uet.md §5.2, §5.3): AES-256-GCM per packet and the CMAC-AES
// counter-mode KDF, both from OpenSSL 3 (AES-NI; VAES from OpenSSL 3.2 on); nothing here
// implements a cipher.
//
// Ownership: a Gcm owns one OpenSSL context keyed once; every packet only sets its IV, so
// the data path neither allocates nor re-expands the key. Not thread-safe: one owner.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "spec/uet.def"

typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;

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
// mask (spec/uet.md §5.3). False only if OpenSSL fails (no CMAC in the provider).
bool kdf(const Key& master, std::string_view label, std::span<const uint8_t> context,
         DerivedKey* out) noexcept;

// The KDF context (§5.3): epoch (2) || rekey (4) || address (4), IPv4 or SSI form...
std::array<uint8_t, 10> kdf_context4(uint16_t epoch, uint32_t rekey, uint32_t addr) noexcept;
// ... or 0 (4) || epoch (2) || rekey (4) || address (16), the IPv6 form.
std::array<uint8_t, 26> kdf_context6(uint16_t epoch, uint32_t rekey,
                                     std::span<const uint8_t, 16> addr) noexcept;

// The packet IV (§5.2): `source` (SSI, IPv4 source or SDI, big-endian) || TSC (big-endian),
// XORed with the IV mask (zero in direct mode).
Iv packet_iv(uint32_t source, uint64_t tsc, const Iv& mask) noexcept;

// AES-256-GCM with a 96-bit IV and a 16-byte tag, in place.
class Gcm {
 public:
  Gcm() noexcept = default;
  ~Gcm();
  Gcm(Gcm&& o) noexcept : ctx_(o.ctx_), encrypt_(o.encrypt_) { o.ctx_ = nullptr; }
  Gcm& operator=(Gcm&& o) noexcept;
  Gcm(const Gcm&) = delete;
  Gcm& operator=(const Gcm&) = delete;

  // Keys the context for sealing (encrypt) or opening; false if OpenSSL fails.
  bool set_key(const Key& key, bool encrypt) noexcept;
  bool keyed() const noexcept { return ctx_ != nullptr; }

  // Encrypts data in place and writes the tag; `aad` is authenticated only.
  bool seal(const Iv& iv, std::span<const uint8_t> aad, std::span<uint8_t> data,
            uint8_t* tag) noexcept {
    return seal(iv, aad, data, {}, nullptr, tag);
  }
  // As seal(), with `from` (when not empty) encrypted into `to` after `data`: a payload read
  // from registered memory straight into the frame, in the same pass that encrypts it.
  bool seal(const Iv& iv, std::span<const uint8_t> aad, std::span<uint8_t> data,
            std::span<const uint8_t> from, uint8_t* to, uint8_t* tag) noexcept;
  // Decrypts data in place; true only if the tag matches (data is then the plaintext; on
  // false its bytes are undefined and must not be used).
  bool open(const Iv& iv, std::span<const uint8_t> aad, std::span<uint8_t> data,
            const uint8_t* tag) noexcept;
  // Decrypts a prefix in place without authenticating it: a trimmed packet lost its tag
  // (§5.5), so its headers can be read but never trusted.
  bool decrypt_unverified(const Iv& iv, std::span<uint8_t> data) noexcept;

 private:
  EVP_CIPHER_CTX* ctx_ = nullptr;
  bool encrypt_ = true;
};

// Parses 64 hex digits into a key; false on any other input.
bool parse_key(std::string_view hex, Key* out) noexcept;

}  // namespace uet::tss
