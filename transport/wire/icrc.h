// RoCEv2 invariant CRC (spec/rocev2.md §6).
//
// CRC-32 (IEEE 802.3, reflected: zlib's crc32) over: 8 bytes of 0xFF standing for the masked
// LRH, then the IP header, UDP header and BTH with their variant fields set to all ones (IPv4:
// TOS, TTL, checksum; IPv6: traffic class, flow label, hop limit; UDP: checksum; BTH: byte 4),
// then the rest of the packet up to the ICRC. The ICRC is stored little-endian after the payload and pad.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uet::wire {

// The CRC-32 of `len` bytes continuing `crc` (0 to start), bit-exact with zlib's crc32(): ISA-L's
// carry-less-multiply kernel (crc32_gzip_refl) rather than a table per byte.
uint32_t icrc_crc32(uint32_t crc, const uint8_t* data, size_t len) noexcept;

// `ip` points at the IP header; `len` counts the bytes from there up to, not including, the
// ICRC; `ip_header_len` is 20..60 for IPv4, 40 for IPv6. Needs len >= ip_header_len + 20.
uint32_t compute_icrc(const uint8_t* ip, size_t len, bool ipv6, size_t ip_header_len) noexcept;

inline uint32_t load_icrc(const uint8_t* p) noexcept {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
inline void store_icrc(uint8_t* p, uint32_t icrc) noexcept {
  p[0] = static_cast<uint8_t>(icrc);
  p[1] = static_cast<uint8_t>(icrc >> 8);
  p[2] = static_cast<uint8_t>(icrc >> 16);
  p[3] = static_cast<uint8_t>(icrc >> 24);
}

}  // namespace uet::wire
