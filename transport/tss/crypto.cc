#include "transport/tss/crypto.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/module.h"

namespace uet::tss {

namespace {

void put_be16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put_be32(uint8_t* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

// The module, opened on first use; its error is kept for every later caller.
struct Loaded {
  const CryptoModule* m = nullptr;
  absl::Status status;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    auto entry = module_symbol("libuet_tss_crypto.so", "uet_tss_crypto_module",
                               "TSS (AES-256-GCM and the KDF's CMAC)");
    if (!entry.ok()) {
      r.status = entry.status();
      return r;
    }
    const CryptoModule* m = reinterpret_cast<decltype(&uet_tss_crypto_module)>(*entry)();
    if (m == nullptr || m->abi != kCryptoModuleAbi) {
      r.status = absl::FailedPreconditionError(absl::StrCat(
          "TSS: the module libuet_tss_crypto.so is from another build (its ABI ",
          m == nullptr ? 0 : m->abi, ", this program's ", kCryptoModuleAbi, ")"));
      return r;
    }
    r.m = m;
    return r;
  }();
  return l;
}

// `b`'s functions (never kAuto), or null when it is unavailable.
const GcmOps* ops_of(Backend b) noexcept {
  const CryptoModule* m = loaded().m;
  if (m == nullptr) return nullptr;
  return b == Backend::kIpsecMb ? m->ipsec_mb : m->openssl;
}

}  // namespace

absl::Status crypto_status() { return loaded().status; }

Kdf::~Kdf() { clear(); }

Kdf& Kdf::operator=(Kdf&& o) noexcept {
  if (this != &o) {
    clear();
    ctx_ = o.ctx_;
    o.ctx_ = nullptr;
  }
  return *this;
}

bool Kdf::set_key(const Key& master) noexcept {
  clear();
  const CryptoModule* m = loaded().m;
  ctx_ = m != nullptr ? m->cmac_new(master.data()) : nullptr;
  return ctx_ != nullptr;
}

void Kdf::clear() noexcept {
  if (ctx_ != nullptr) loaded().m->cmac_free(ctx_);  // wipes its key schedule
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
  const CryptoModule* m = loaded().m;
  bool ok = true;
  for (uint8_t i = 0; ok && i < 3; ++i) {
    msg[0] = static_cast<uint8_t>(i + 1);
    ok = m->cmac(ctx_, std::span<const uint8_t>(msg.data(), n), k.data() + 16 * i);
  }
  static_assert(kOut == kKeyBytes + kIvBytes);
  if (ok) {
    std::memcpy(out->key.data(), k.data(), kKeyBytes);
    std::memcpy(out->iv_mask.data(), k.data() + kKeyBytes, kIvBytes);
  }
  explicit_bzero(k.data(), k.size());
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

bool backend_available(Backend b) noexcept {
  return ops_of(b == Backend::kAuto ? Backend::kOpenSsl : b) != nullptr;
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
  if (const GcmOps* ops = ops_of(b); ops != nullptr) return ops->detail;
  return absl::StrCat(backend_name(b), " (unavailable)");
}

Gcm::~Gcm() { release(); }

void Gcm::release() noexcept {
  if (state_ != nullptr) ops_->release(state_);
  state_ = nullptr;
}

Gcm& Gcm::operator=(Gcm&& o) noexcept {
  if (this != &o) {
    release();
    state_ = o.state_;
    ops_ = o.ops_;
    encrypt_ = o.encrypt_;
    backend_ = o.backend_;
    o.state_ = nullptr;
  }
  return *this;
}

bool Gcm::set_key(const Key& key, bool encrypt, Backend backend) noexcept {
  if (backend == Backend::kAuto) backend = best_backend();
  const GcmOps* ops = ops_of(backend);
  if (ops == nullptr) return false;
  if (ops != ops_) release();
  ops_ = ops;
  backend_ = backend;
  encrypt_ = encrypt;
  return ops->set_key(&state_, key.data(), encrypt);
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
