// What libuet_tss_crypto.so (crypto_module.cc) gives crypto.cc: the AES-256-GCM and CMAC of
// ipsec-mb and OpenSSL behind tables of functions, so that a program maps those libraries only
// once TSS keys something. Both sides are built together from this header: no ABI promise
// beyond one build tree (kCryptoModuleAbi catches a stale module).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace uet::tss {

inline constexpr uint32_t kCryptoModuleAbi = 1;

// One library's AES-256-GCM with a 96-bit IV and a 16-byte tag (crypto.h, Gcm): `state` is
// its keyed context, made and re-keyed by set_key, wiped and freed by release.
struct GcmOps {
  bool (*set_key)(void** state, const uint8_t* key, bool encrypt) noexcept;
  void (*release)(void* state) noexcept;
  bool (*seal)(void* state, const uint8_t* iv, std::span<const uint8_t> aad,
               std::span<uint8_t> data, std::span<const uint8_t> from, uint8_t* to,
               uint8_t* tag) noexcept;
  bool (*open)(void* state, const uint8_t* iv, std::span<const uint8_t> aad,
               std::span<uint8_t> data, const uint8_t* tag) noexcept;
  bool (*decrypt_unverified)(void* state, const uint8_t* iv, std::span<uint8_t> data) noexcept;
  const char* detail;  // library, version and code path, e.g. "ipsec-mb 1.3.0 (avx512)"
};

struct CryptoModule {
  uint32_t abi;
  const GcmOps* ipsec_mb;  // null when not built in or the CPU lacks AES-NI
  const GcmOps* openssl;
  // AES-256-CMAC under one master key (crypto.h, Kdf): null if OpenSSL fails.
  void* (*cmac_new)(const uint8_t* master) noexcept;
  void (*cmac_free)(void* state) noexcept;  // wipes the key schedule
  // One 16-byte MAC of `msg` under the key `state` holds.
  bool (*cmac)(void* state, std::span<const uint8_t> msg, uint8_t* out) noexcept;
};

}  // namespace uet::tss

// The module's one entry point (exported from a library built with hidden visibility).
extern "C" [[gnu::visibility("default")]] const uet::tss::CryptoModule*
uet_tss_crypto_module() noexcept;
