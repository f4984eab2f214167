// libuet_tss_crypto.so (crypto_module.h): AES-256-GCM from Intel's ipsec-mb or OpenSSL 3 and
// the KDF's CMAC from OpenSSL, the only code that links them; nothing here implements a cipher.
#include "transport/tss/crypto_module.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstdio>
#include <new>

#ifdef UET_HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>
#endif

namespace uet::tss {
namespace {

constexpr size_t kKeyBytes = 32, kTagBytes = 16;

// OpenSSL's GCM, keyed by openssl_set_key: the packet's IV, the AAD, then `data` in place,
// sealing or opening; the caller finishes (the bytes from elsewhere, the tag). Inlined into
// both: once per packet, a call costs more than the lines it saves.
[[gnu::always_inline]] inline bool evp_begin(EVP_CIPHER_CTX* ctx, bool encrypt, const uint8_t* iv,
                                             std::span<const uint8_t> aad,
                                             std::span<uint8_t> data) noexcept {
  int n = 0;
  if (EVP_CipherInit_ex2(ctx, nullptr, nullptr, iv, encrypt ? 1 : 0, nullptr) != 1) return false;
  const auto update = encrypt ? EVP_EncryptUpdate : EVP_DecryptUpdate;
  if (update(ctx, nullptr, &n, aad.data(), static_cast<int>(aad.size())) != 1) return false;
  return data.empty() ||
         update(ctx, data.data(), &n, data.data(), static_cast<int>(data.size())) == 1;
}

bool openssl_set_key(void** state, const uint8_t* key, bool encrypt) noexcept {
  if (*state == nullptr) *state = EVP_CIPHER_CTX_new();
  if (*state == nullptr) return false;
  // The IV length is GCM's default, 96 bits (§5.2).
  return EVP_CipherInit_ex2(static_cast<EVP_CIPHER_CTX*>(*state), EVP_aes_256_gcm(), key,
                            nullptr, encrypt ? 1 : 0, nullptr) == 1;
}

void openssl_release(void* state) noexcept {
  EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(state));  // wipes its key schedule
}

bool openssl_seal(void* state, const uint8_t* iv, std::span<const uint8_t> aad,
                  std::span<uint8_t> data, std::span<const uint8_t> from, uint8_t* to,
                  uint8_t* tag) noexcept {
  auto* ctx = static_cast<EVP_CIPHER_CTX*>(state);
  int n = 0;
  if (!evp_begin(ctx, true, iv, aad, data)) return false;
  if (!from.empty() &&
      EVP_EncryptUpdate(ctx, to, &n, from.data(), static_cast<int>(from.size())) != 1) {
    return false;
  }
  uint8_t none[16];
  if (EVP_EncryptFinal_ex(ctx, none, &n) != 1) return false;
  return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kTagBytes), tag) == 1;
}

bool openssl_open(void* state, const uint8_t* iv, std::span<const uint8_t> aad,
                  std::span<uint8_t> data, const uint8_t* tag) noexcept {
  auto* ctx = static_cast<EVP_CIPHER_CTX*>(state);
  if (!evp_begin(ctx, false, iv, aad, data)) return false;
  // OpenSSL takes the expected tag as non-const but only reads it.
  if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTagBytes),
                          const_cast<uint8_t*>(tag)) != 1) {
    return false;
  }
  uint8_t none[16];
  int n = 0;
  return EVP_DecryptFinal_ex(ctx, none, &n) == 1;
}

bool openssl_decrypt_unverified(void* state, const uint8_t* iv, std::span<uint8_t> data) noexcept {
  auto* ctx = static_cast<EVP_CIPHER_CTX*>(state);
  int n = 0;
  if (EVP_DecryptInit_ex2(ctx, nullptr, nullptr, iv, nullptr) != 1) return false;
  return data.empty() || EVP_DecryptUpdate(ctx, data.data(), &n, data.data(),
                                           static_cast<int>(data.size())) == 1;
}

char g_openssl_detail[64];

const GcmOps kOpenSsl = {openssl_set_key, openssl_release, openssl_seal, openssl_open,
                         openssl_decrypt_unverified, g_openssl_detail};

#ifdef UET_HAVE_IPSEC_MB
// One manager for the process: the direct GCM calls only read its function table, which
// init_mb_mgr_auto() fills once with the best code for this CPU.
IMB_MGR* g_mgr = nullptr;

// ipsec-mb declares gcm_key_data 64-byte aligned only when LINUX is defined; say it here.
struct alignas(64) ImbKey {
  gcm_key_data k;
};

// ipsec-mb's GCM under `key`: the packet's IV, the AAD, then `data` in place, sealing or
// opening; the caller finishes, as after evp_begin (inlined for the same reason).
[[gnu::always_inline]] inline void imb_begin(IMB_MGR* m, const ImbKey* key, gcm_context_data* c,
                                             bool encrypt, const uint8_t* iv,
                                             std::span<const uint8_t> aad,
                                             std::span<uint8_t> data) noexcept {
  IMB_AES256_GCM_INIT(m, &key->k, c, iv, aad.data(), aad.size());
  if (data.empty()) return;
  if (encrypt) {
    IMB_AES256_GCM_ENC_UPDATE(m, &key->k, c, data.data(), data.data(), data.size());
  } else {
    IMB_AES256_GCM_DEC_UPDATE(m, &key->k, c, data.data(), data.data(), data.size());
  }
}

bool imb_set_key(void** state, const uint8_t* key, bool) noexcept {
  if (*state == nullptr) *state = new (std::nothrow) ImbKey;
  if (*state == nullptr) return false;
  // Key schedule and GHASH powers, once per key (§5.2): packets only set their IV.
  IMB_AES256_GCM_PRE(g_mgr, key, &static_cast<ImbKey*>(*state)->k);
  return true;
}

void imb_release(void* state) noexcept {
  if (state == nullptr) return;
  OPENSSL_cleanse(state, sizeof(ImbKey));  // key material
  delete static_cast<ImbKey*>(state);
}

bool imb_seal(void* state, const uint8_t* iv, std::span<const uint8_t> aad,
              std::span<uint8_t> data, std::span<const uint8_t> from, uint8_t* to,
              uint8_t* tag) noexcept {
  IMB_MGR* m = g_mgr;
  const auto* key = static_cast<const ImbKey*>(state);
  alignas(64) gcm_context_data c;
  imb_begin(m, key, &c, true, iv, aad, data);
  if (!from.empty()) IMB_AES256_GCM_ENC_UPDATE(m, &key->k, &c, to, from.data(), from.size());
  IMB_AES256_GCM_ENC_FINALIZE(m, &key->k, &c, tag, kTagBytes);
  return true;
}

bool imb_open(void* state, const uint8_t* iv, std::span<const uint8_t> aad,
              std::span<uint8_t> data, const uint8_t* tag) noexcept {
  IMB_MGR* m = g_mgr;
  const auto* key = static_cast<const ImbKey*>(state);
  alignas(64) gcm_context_data c;
  imb_begin(m, key, &c, false, iv, aad, data);
  uint8_t computed[kTagBytes];
  IMB_AES256_GCM_DEC_FINALIZE(m, &key->k, &c, computed, kTagBytes);
  // Constant time, so a forger learns nothing from how long the refusal took.
  return CRYPTO_memcmp(computed, tag, kTagBytes) == 0;
}

bool imb_decrypt_unverified(void* state, const uint8_t* iv, std::span<uint8_t> data) noexcept {
  alignas(64) gcm_context_data c;
  static const uint8_t kNoAad[1] = {0};
  imb_begin(g_mgr, static_cast<const ImbKey*>(state), &c, false, iv,
            std::span<const uint8_t>(kNoAad, 0), data);
  return true;
}

const char* arch_name(IMB_ARCH a) noexcept {
  switch (a) {
    case IMB_ARCH_SSE: return "sse";
    case IMB_ARCH_AVX: return "avx";
    case IMB_ARCH_AVX2: return "avx2";
    case IMB_ARCH_AVX512: return "avx512";
    default: return "none";
  }
}

char g_imb_detail[64];

const GcmOps kIpsecMb = {imb_set_key, imb_release, imb_seal, imb_open, imb_decrypt_unverified,
                         g_imb_detail};

// The manager, or null: without AES-NI ipsec-mb emulates AES in software, and OpenSSL is then
// the better fallback.
const GcmOps* ipsec_mb() noexcept {
  IMB_MGR* m = alloc_mb_mgr(0);
  if (m == nullptr) return nullptr;
  IMB_ARCH arch = IMB_ARCH_NONE;
  init_mb_mgr_auto(m, &arch);
  if (imb_get_errno(m) != 0 || arch == IMB_ARCH_NONE || arch == IMB_ARCH_NOAESNI) {
    free_mb_mgr(m);
    return nullptr;
  }
  g_mgr = m;
  std::snprintf(g_imb_detail, sizeof g_imb_detail, "ipsec-mb %s (%s)", imb_get_version_str(),
                arch_name(arch));
  return &kIpsecMb;
}
#else
const GcmOps* ipsec_mb() noexcept { return nullptr; }
#endif

void* cmac_new(const uint8_t* master) noexcept {
  // Fetched once per process: a fetch walks OpenSSL's provider store under a lock.
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "CMAC", nullptr);
  EVP_MAC_CTX* ctx = mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr;
  if (ctx == nullptr) return nullptr;
  char cipher[] = "AES-256-CBC";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0),
                               OSSL_PARAM_construct_end()};
  if (EVP_MAC_init(ctx, master, kKeyBytes, params) != 1) {
    EVP_MAC_CTX_free(ctx);
    return nullptr;
  }
  return ctx;
}

void cmac_free(void* state) noexcept { EVP_MAC_CTX_free(static_cast<EVP_MAC_CTX*>(state)); }

bool cmac(void* state, std::span<const uint8_t> msg, uint8_t* out) noexcept {
  auto* ctx = static_cast<EVP_MAC_CTX*>(state);
  size_t got = 0;
  // A null key re-initialises the CMAC under the key it holds: no new key schedule.
  return EVP_MAC_init(ctx, nullptr, 0, nullptr) == 1 &&
         EVP_MAC_update(ctx, msg.data(), msg.size()) == 1 &&
         EVP_MAC_final(ctx, out, &got, 16) == 1 && got == 16;
}

}  // namespace
}  // namespace uet::tss

const uet::tss::CryptoModule* uet_tss_crypto_module() noexcept {
  using namespace uet::tss;
  static const CryptoModule m = [] {
    std::snprintf(g_openssl_detail, sizeof g_openssl_detail, "openssl %s",
                  OpenSSL_version(OPENSSL_VERSION_STRING));
    return CryptoModule{kCryptoModuleAbi, ipsec_mb(), &kOpenSsl, cmac_new, cmac_free, cmac};
  }();
  return &m;
}
