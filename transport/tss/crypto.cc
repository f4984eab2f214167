#include "transport/tss/crypto.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstring>

namespace uet::tss {

namespace {

void put_be16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put_be32(uint8_t* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

// The CMAC PRF of the KDF, keyed once per derivation.
class Cmac {
 public:
  explicit Cmac(const Key& key) noexcept {
    mac_ = EVP_MAC_fetch(nullptr, "CMAC", nullptr);
    if (mac_ == nullptr) return;
    ctx_ = EVP_MAC_CTX_new(mac_);
    if (ctx_ == nullptr) return;
    char cipher[] = "AES-256-CBC";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0),
        OSSL_PARAM_construct_end()};
    ok_ = EVP_MAC_init(ctx_, key.data(), key.size(), params) == 1;
  }
  ~Cmac() {
    EVP_MAC_CTX_free(ctx_);
    EVP_MAC_free(mac_);
  }
  Cmac(const Cmac&) = delete;
  Cmac& operator=(const Cmac&) = delete;

  // CMAC(key, msg) into out[16]; the context is re-initialised with the same key each time.
  bool block(std::span<const uint8_t> msg, uint8_t* out) noexcept {
    if (!ok_ || EVP_MAC_init(ctx_, nullptr, 0, nullptr) != 1) return false;
    size_t n = 0;
    return EVP_MAC_update(ctx_, msg.data(), msg.size()) == 1 &&
           EVP_MAC_final(ctx_, out, &n, 16) == 1 && n == 16;
  }

 private:
  EVP_MAC* mac_ = nullptr;
  EVP_MAC_CTX* ctx_ = nullptr;
  bool ok_ = false;
};

}  // namespace

bool kdf(const Key& master, std::string_view label, std::span<const uint8_t> context,
         DerivedKey* out) noexcept {
  // counter (1) || label || 0x00 || context (at most 26) || L (2)
  std::array<uint8_t, 1 + 8 + 1 + 26 + 2> msg{};
  if (label.size() > 8 || context.size() > 26) return false;
  size_t n = 1;
  std::memcpy(msg.data() + n, label.data(), label.size());
  n += label.size();
  msg[n++] = 0x00;
  std::memcpy(msg.data() + n, context.data(), context.size());
  n += context.size();
  put_be16(msg.data() + n, UET_TSS_KDF_BITS);
  n += 2;
  Cmac cmac(master);
  constexpr size_t kOut = UET_TSS_KDF_BITS / 8;
  std::array<uint8_t, 48> k{};  // three CMAC blocks, truncated to 44 bytes
  for (uint8_t i = 0; i < 3; ++i) {
    msg[0] = static_cast<uint8_t>(i + 1);
    if (!cmac.block(std::span<const uint8_t>(msg.data(), n), k.data() + 16 * i)) return false;
  }
  static_assert(kOut == kKeyBytes + kIvBytes);
  std::memcpy(out->key.data(), k.data(), kKeyBytes);
  std::memcpy(out->iv_mask.data(), k.data() + kKeyBytes, kIvBytes);
  return true;
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

Gcm::~Gcm() { EVP_CIPHER_CTX_free(ctx_); }

Gcm& Gcm::operator=(Gcm&& o) noexcept {
  if (this != &o) {
    EVP_CIPHER_CTX_free(ctx_);
    ctx_ = o.ctx_;
    encrypt_ = o.encrypt_;
    o.ctx_ = nullptr;
  }
  return *this;
}

bool Gcm::set_key(const Key& key, bool encrypt) noexcept {
  if (ctx_ == nullptr) ctx_ = EVP_CIPHER_CTX_new();
  if (ctx_ == nullptr) return false;
  encrypt_ = encrypt;
  // The IV length is GCM's default, 96 bits (§5.2).
  return EVP_CipherInit_ex2(ctx_, EVP_aes_256_gcm(), key.data(), nullptr, encrypt ? 1 : 0,
                            nullptr) == 1;
}

bool Gcm::seal(const Iv& iv, std::span<const uint8_t> aad, std::span<uint8_t> data,
               std::span<const uint8_t> from, uint8_t* to, uint8_t* tag) noexcept {
  int n = 0;
  if (ctx_ == nullptr || !encrypt_) return false;
  if (EVP_EncryptInit_ex2(ctx_, nullptr, nullptr, iv.data(), nullptr) != 1) return false;
  if (EVP_EncryptUpdate(ctx_, nullptr, &n, aad.data(), static_cast<int>(aad.size())) != 1)
    return false;
  if (!data.empty() && EVP_EncryptUpdate(ctx_, data.data(), &n, data.data(),
                                         static_cast<int>(data.size())) != 1) {
    return false;
  }
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
  int n = 0;
  if (ctx_ == nullptr || encrypt_) return false;
  if (EVP_DecryptInit_ex2(ctx_, nullptr, nullptr, iv.data(), nullptr) != 1) return false;
  if (EVP_DecryptUpdate(ctx_, nullptr, &n, aad.data(), static_cast<int>(aad.size())) != 1)
    return false;
  if (!data.empty() && EVP_DecryptUpdate(ctx_, data.data(), &n, data.data(),
                                         static_cast<int>(data.size())) != 1) {
    return false;
  }
  // OpenSSL takes the expected tag as non-const but only reads it.
  if (EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTagBytes),
                          const_cast<uint8_t*>(tag)) != 1) {
    return false;
  }
  uint8_t none[16];
  return EVP_DecryptFinal_ex(ctx_, none, &n) == 1;
}

bool Gcm::decrypt_unverified(const Iv& iv, std::span<uint8_t> data) noexcept {
  int n = 0;
  if (ctx_ == nullptr || encrypt_) return false;
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
