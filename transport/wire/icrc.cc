#include "transport/wire/icrc.h"

#include <isa-l/crc.h>

#include <cstring>

namespace uet::wire {

namespace {
constexpr size_t kUdpLen = 8;
constexpr size_t kBthLen = 12;
constexpr size_t kMaxMasked = 60 + kUdpLen + kBthLen;
// crc32(0, 8 bytes of 0xFF): the masked LRH every ICRC starts with (spec/rocev2.md §6).
constexpr uint32_t kAfterMaskedLrh = 0x2144DF1C;
}  // namespace

uint32_t icrc_crc32(uint32_t crc, const uint8_t* data, size_t len) noexcept {
  return crc32_gzip_refl(crc, data, len);
}

uint32_t compute_icrc(const uint8_t* ip, size_t len, bool ipv6, size_t ip_header_len) noexcept {
  const size_t masked_len = ip_header_len + kUdpLen + kBthLen;
  if (masked_len > kMaxMasked || len < masked_len) return 0;

  uint8_t hdr[kMaxMasked];
  std::memcpy(hdr, ip, masked_len);
  if (ipv6) {
    hdr[0] |= 0x0F;  // traffic class (low nibble of byte 0, high nibble of byte 1)
    hdr[1] = 0xFF;   // ... and flow label
    hdr[2] = 0xFF;
    hdr[3] = 0xFF;
    hdr[7] = 0xFF;  // hop limit
  } else {
    hdr[1] = 0xFF;   // TOS: DSCP and ECN
    hdr[8] = 0xFF;   // TTL
    hdr[10] = 0xFF;  // header checksum
    hdr[11] = 0xFF;
  }
  uint8_t* udp = hdr + ip_header_len;
  udp[6] = 0xFF;  // UDP checksum
  udp[7] = 0xFF;
  udp[kUdpLen + 4] = 0xFF;  // BTH byte 4: FECN, BECN, reserved

  uint32_t crc = icrc_crc32(kAfterMaskedLrh, hdr, masked_len);
  return icrc_crc32(crc, ip + masked_len, len - masked_len);
}

}  // namespace uet::wire
