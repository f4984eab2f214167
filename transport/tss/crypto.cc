#include "transport/tss/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

#ifdef UET_HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>
#endif

namespace uet::tss {

namespace {

void put_be16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put_be32(uint8_t* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

// OpenSSL's GCM, keyed by Gcm::set_key: the packet's IV, the AAD, then `data` in place,
// sealing or opening; the caller finishes (the bytes from elsewhere, the tag). Inlined into
// both: once per packet, a call costs more than the lines it saves.
[[gnu::always_inline]] inline bool evp_begin(EVP_CIPHER_CTX* ctx, bool encrypt, const Iv& iv, std::span<const uint8_t> aad,
               std::span<uint8_t> data) noexcept {
  int n = 0;
  if (ctx == nullptr) return false;
  if (EVP_CipherInit_ex2(ctx, nullptr, nullptr, iv.data(), encrypt ? 1 : 0, nullptr) != 1)
    return false;
  const auto update = encrypt ? EVP_EncryptUpdate : EVP_DecryptUpdate;
  if (update(ctx, nullptr, &n, aad.data(), static_cast<int>(aad.size())) != 1) return false;
  return data.empty() ||
         update(ctx, data.data(), &n, data.data(), static_cast<int>(data.size())) == 1;
}

}  // namespace

Kdf::~Kdf() { EVP_MAC_CTX_free(ctx_); }  // frees the CMAC state, wiping its key schedule

Kdf& Kdf::operator=(Kdf&& o) noexcept {
  if (this != &o) {
    EVP_MAC_CTX_free(ctx_);
    ctx_ = o.ctx_;
    o.ctx_ = nullptr;
  }
  return *this;
}

bool Kdf::set_key(const Key& master) noexcept {
  // Fetched once per process: a fetch walks OpenSSL's provider store under a lock.
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "CMAC", nullptr);
  EVP_MAC_CTX_free(ctx_);
  ctx_ = mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr;
  if (ctx_ == nullptr) return false;
  char cipher[] = "AES-256-CBC";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0),
                               OSSL_PARAM_construct_end()};
  if (EVP_MAC_init(ctx_, master.data(), master.size(), params) != 1) {
    EVP_MAC_CTX_free(ctx_);
    ctx_ = nullptr;
    return false;
  }
  return true;
}

void Kdf::clear() noexcept {
  EVP_MAC_CTX_free(ctx_);
  ctx_ = nullptr;
}

bool Kdf::derive(std::string_view label, std::span<const uint8_t> context,
                 DerivedKey* out) noexcept {
  // counter (1) || label || 0x00 || context (at most 26) || L (2)
  std::array<uint8_t, 1 + 8 + 1 + 26 + 2> msg{};
  if (ctx_ == nullptr || label.size() > 8 || context.size() > 26) return false;
  size_t n = 1;
  std::memcpy(msg.data() + n, label.data(), label.size());
  n += label.size();
  msg[n++] = 0x00;
  std::memcpy(msg.data() + n, context.data(), context.size());
  n += context.size();
  put_be16(msg.data() + n, UET_TSS_KDF_BITS);
  n += 2;
  constexpr size_t kOut = UET_TSS_KDF_BITS / 8;
  std::array<uint8_t, 48> k{};  // three CMAC blocks, truncated to 44 bytes
  bool ok = true;
  for (uint8_t i = 0; ok && i < 3; ++i) {
    msg[0] = static_cast<uint8_t>(i + 1);
    // A null key re-initialises the CMAC under the key it holds: no new key schedule.
    size_t got = 0;
    ok = EVP_MAC_init(ctx_, nullptr, 0, nullptr) == 1 &&
         EVP_MAC_update(ctx_, msg.data(), n) == 1 &&
         EVP_MAC_final(ctx_, k.data() + 16 * i, &got, 16) == 1 && got == 16;
  }
  static_assert(kOut == kKeyBytes + kIvBytes);
  if (ok) {
    std::memcpy(out->key.data(), k.data(), kKeyBytes);
    std::memcpy(out->iv_mask.data(), k.data() + kKeyBytes, kIvBytes);
  }
  OPENSSL_cleanse(k.data(), k.size());
  return ok;
}

bool kdf(const Key& master, std::string_view label, std::span<const uint8_t> context,
         DerivedKey* out) noexcept {
  Kdf k;
  return k.set_key(master) && k.derive(label, context, out);
}

std::array<uint8_t, 10> kdf_context4(uint16_t epoch, uint32_t rekey, uint32_t addr) noexcept {
  std::array<uint8_t, 10> c{};
  put_be16(c.data(), epoch);
  put_be32(c.data() + 2, rekey);
  put_be32(c.data() + 6, addr);
  return c;
}

std::array<uint8_t, 26> kdf_context6(uint16_t epoch, uint32_t rekey,
                                     std::span<const uint8_t, 16> addr) noexcept {
  std::array<uint8_t, 26> c{};
  put_be16(c.data() + 4, epoch);
  put_be32(c.data() + 6, rekey);
  std::memcpy(c.data() + 10, addr.data(), 16);
  return c;
}

Iv packet_iv(uint32_t source, uint64_t tsc, const Iv& mask) noexcept {
  Iv iv;
  put_be32(iv.data(), source);
  put_be32(iv.data() + 4, static_cast<uint32_t>(tsc >> 32));
  put_be32(iv.data() + 8, static_cast<uint32_t>(tsc));
  for (size_t i = 0; i < kIvBytes; ++i) iv[i] ^= mask[i];
  return iv;
}

#ifdef UET_HAVE_IPSEC_MB
namespace {

struct Imb {
  IMB_MGR* mgr = nullptr;
  IMB_ARCH arch = IMB_ARCH_NONE;
};

// One manager for the process: the direct GCM calls only read its function table, which
// init_mb_mgr_auto() fills once with the best code for this CPU.
const Imb& imb() noexcept {
  static const Imb m = [] {
    Imb r;
    r.mgr = alloc_mb_mgr(0);
    if (r.mgr == nullptr) return r;
    init_mb_mgr_auto(r.mgr, &r.arch);
    // Without AES-NI ipsec-mb emulates AES in software: OpenSSL is then the better fallback.
    if (imb_get_errno(r.mgr) != 0 || r.arch == IMB_ARCH_NONE || r.arch == IMB_ARCH_NOAESNI) {
      free_mb_mgr(r.mgr);
      r.mgr = nullptr;
    }
    return r;
  }();
  return m;
}

// ipsec-mb's GCM under the key `key` points to (Gcm::ImbKey): the packet's IV, the AAD, then
// `data` in place, sealing or opening; the caller finishes, as after evp_begin (inlined for the
// same reason). The key is read through its owner's pointer at each call, as the callers would,
// rather than held across them.
template <typename KeyData>
[[gnu::always_inline]] inline void imb_begin(IMB_MGR* m, KeyData* const& key, gcm_context_data* c,
                                             bool encrypt, const Iv& iv,
                                             std::span<const uint8_t> aad,
                                             std::span<uint8_t> data) noexcept {
  IMB_AES256_GCM_INIT(m, &key->k, c, iv.data(), aad.data(), aad.size());
  if (data.empty()) return;
  if (encrypt) {
    IMB_AES256_GCM_ENC_UPDATE(m, &key->k, c, data.data(), data.data(), data.size());
  } else {
    IMB_AES256_GCM_DEC_UPDATE(m, &key->k, c, data.data(), data.data(), data.size());
  }
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

}  // namespace

// ipsec-mb declares gcm_key_data 64-byte aligned only when LINUX is defined; say it here.
struct alignas(64) Gcm::ImbKey {
  gcm_key_data k;
};
#else
struct Gcm::ImbKey {};
#endif

bool backend_available(Backend b) noexcept {
  switch (b) {
    case Backend::kAuto:
    case Backend::kOpenSsl:
      return true;
    case Backend::kIpsecMb:
#ifdef UET_HAVE_IPSEC_MB
      return imb().mgr != nullptr;
#else
      return false;
#endif
  }
  return false;
}

Backend best_backend() noexcept {
  return backend_available(Backend::kIpsecMb) ? Backend::kIpsecMb : Backend::kOpenSsl;
}

const char* backend_name(Backend b) noexcept {
  switch (b) {
    case Backend::kAuto: return "auto";
    case Backend::kIpsecMb: return "ipsec-mb";
    case Backend::kOpenSsl: return "openssl";
  }
  return "?";
}

bool parse_backend(std::string_view name, Backend* out) noexcept {
  for (Backend b : {Backend::kAuto, Backend::kIpsecMb, Backend::kOpenSsl}) {
    if (name == backend_name(b)) {
      *out = b;
      return true;
    }
  }
  return false;
}

std::string backend_detail(Backend b) {
  if (b == Backend::kAuto) b = best_backend();
  if (b == Backend::kOpenSsl)
    return absl::StrCat("openssl ", OpenSSL_version(OPENSSL_VERSION_STRING));
#ifdef UET_HAVE_IPSEC_MB
  if (imb().mgr != nullptr)
    return absl::StrCat("ipsec-mb ", imb_get_version_str(), " (", arch_name(imb().arch), ")");
#endif
  return "ipsec-mb (unavailable)";
}

Gcm::~Gcm() { release(); }

void Gcm::release() noexcept {
  EVP_CIPHER_CTX_free(ctx_);
  ctx_ = nullptr;
  if (imb_ != nullptr) OPENSSL_cleanse(imb_, sizeof(*imb_));  // key material
  delete imb_;
  imb_ = nullptr;
}

Gcm& Gcm::operator=(Gcm&& o) noexcept {
  if (this != &o) {
    release();
    ctx_ = o.ctx_;
    imb_ = o.imb_;
    encrypt_ = o.encrypt_;
    backend_ = o.backend_;
    o.ctx_ = nullptr;
    o.imb_ = nullptr;
  }
  return *this;
}

bool Gcm::set_key(const Key& key, bool encrypt, Backend backend) noexcept {
  if (backend == Backend::kAuto) backend = best_backend();
  if (!backend_available(backend)) return false;
  if (backend != backend_) release();
  backend_ = backend;
  encrypt_ = encrypt;
#ifdef UET_HAVE_IPSEC_MB
  if (backend == Backend::kIpsecMb) {
    if (imb_ == nullptr) imb_ = new (std::nothrow) ImbKey;
    if (imb_ == nullptr) return false;
    // Key schedule and GHASH powers, once per key (§5.2): packets only set their IV.
    IMB_AES256_GCM_PRE(imb().mgr, key.data(), &imb_->k);
    return true;
  }
#endif
  if (ctx_ == nullptr) ctx_ = EVP_CIPHER_CTX_new();
  if (ctx_ == nullptr) return false;
  // The IV length is GCM's default, 96 bits (§5.2).
  return EVP_CipherInit_ex2(ctx_, EVP_aes_256_gcm(), key.data(), nullptr, encrypt ? 1 : 0,
                            nullptr) == 1;
}

bool Gcm::seal(const Iv& iv, std::span<const uint8_t> aad, std::span<uint8_t> data,
               std::span<const uint8_t> from, uint8_t* to, uint8_t* tag) noexcept {
  if (!encrypt_) return false;
#ifdef UET_HAVE_IPSEC_MB
  if (imb_ != nullptr) {
    IMB_MGR* m = imb().mgr;
    alignas(64) gcm_context_data c;
    imb_begin(m, imb_, &c, true, iv, aad, data);
    if (!from.empty()) IMB_AES256_GCM_ENC_UPDATE(m, &imb_->k, &c, to, from.data(), from.size());
    IMB_AES256_GCM_ENC_FINALIZE(m, &imb_->k, &c, tag, kTagBytes);
    return true;
  }
#endif
  int n = 0;
  if (!evp_begin(ctx_, true, iv, aad, data)) return false;
  if (!from.empty() &&
      EVP_EncryptUpdate(ctx_, to, &n, from.data(), static_cast<int>(from.size())) != 1) {
    return false;
  }
  uint8_t none[16];
  if (EVP_EncryptFinal_ex(ctx_, none, &n) != 1) return false;
  return EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kTagBytes), tag) == 1;
}

bool Gcm::open(const Iv& iv, std::span<const uint8_t> aad, std::span<uint8_t> data,
               const uint8_t* tag) noexcept {
  if (encrypt_) return false;
#ifdef UET_HAVE_IPSEC_MB
  if (imb_ != nullptr) {
    IMB_MGR* m = imb().mgr;
    alignas(64) gcm_context_data c;
    imb_begin(m, imb_, &c, false, iv, aad, data);
    uint8_t computed[kTagBytes];
    IMB_AES256_GCM_DEC_FINALIZE(m, &imb_->k, &c, computed, kTagBytes);
    // Constant time, so a forger learns nothing from how long the refusal took.
    return CRYPTO_memcmp(computed, tag, kTagBytes) == 0;
  }
#endif
  if (!evp_begin(ctx_, false, iv, aad, data)) return false;
  // OpenSSL takes the expected tag as non-const but only reads it.
  if (EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTagBytes),
                          const_cast<uint8_t*>(tag)) != 1) {
    return false;
  }
  uint8_t none[16];
  int n = 0;
  return EVP_DecryptFinal_ex(ctx_, none, &n) == 1;
}

bool Gcm::decrypt_unverified(const Iv& iv, std::span<uint8_t> data) noexcept {
  if (encrypt_) return false;
#ifdef UET_HAVE_IPSEC_MB
  if (imb_ != nullptr) {
    IMB_MGR* m = imb().mgr;
    alignas(64) gcm_context_data c;
    static const uint8_t kNoAad[1] = {0};
    imb_begin(m, imb_, &c, false, iv, std::span<const uint8_t>(kNoAad, 0), data);
    return true;
  }
#endif
  int n = 0;
  if (ctx_ == nullptr) return false;
  if (EVP_DecryptInit_ex2(ctx_, nullptr, nullptr, iv.data(), nullptr) != 1) return false;
  return data.empty() || EVP_DecryptUpdate(ctx_, data.data(), &n, data.data(),
                                           static_cast<int>(data.size())) == 1;
}

bool parse_key(std::string_view hex, Key* out) noexcept {
  if (hex.size() != 2 * kKeyBytes) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < kKeyBytes; ++i) {
    const int hi = nibble(hex[2 * i]);
    const int lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

}  // namespace uet::tss
