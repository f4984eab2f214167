// Internet checksums (RFC 1071) for the IPv4 header and UDP over IPv4/IPv6.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace uet::wire {

// Adds `len` bytes as big-endian 16-bit words to a running ones'-complement sum.
// Chained calls must pass even lengths except for the last.
uint64_t csum_add(uint64_t sum, const uint8_t* data, size_t len) noexcept;
// csum_add() over `src` while copying it to `dst` (non-overlapping): one pass for the payload a
// frame carries. Chained calls: even lengths except for the last, as csum_add().
uint64_t csum_copy(uint64_t sum, uint8_t* dst, const uint8_t* src, size_t len) noexcept;
// Folds a running sum to 16 bits and complements it: the value to put on the wire.
uint16_t csum_finish(uint64_t sum) noexcept;

// Checksum of an IPv4 header of `len` bytes, computed as if its checksum field were zero.
uint16_t ipv4_header_checksum(const uint8_t* ip, size_t len) noexcept;

// The receive check: ipv4_header_checksum(ip, len) == the header's checksum field, exactly
// (0x0000 and 0xFFFF are not taken as equal). Inline for the 20-byte header of every frame:
// the sum of five native words with the field masked, folded, complemented and compared with
// the field as loaded, all in native byte order (the ones'-complement sum commutes with the
// byte swap, RFC 1071 §2(B)).
inline bool ipv4_header_checksum_ok(const uint8_t* ip, size_t len) noexcept {
  if (len != 20) {
    return ipv4_header_checksum(ip, len) == static_cast<uint16_t>(ip[10] << 8 | ip[11]);
  }
  // Five separate 4-byte loads: copied to a local array first, the words would be read back
  // from the stack after a vector store (a store-forwarding stall per frame).
  auto word = [ip](size_t i) {
    uint32_t w;
    std::memcpy(&w, ip + 4 * i, 4);
    return uint64_t{w};
  };
  constexpr uint32_t kKeep = std::endian::native == std::endian::little ? 0x0000FFFFu : 0xFFFF0000u;
  uint64_t sum = word(0) + word(1) + (word(2) & kKeep) + word(3) + word(4);  // < 2^35
  sum = (sum & 0xFFFFFFFF) + (sum >> 32);  // < 2^32 + 8
  sum = (sum & 0xFFFF) + (sum >> 16);      // < 2^17
  sum = (sum & 0xFFFF) + (sum >> 16);      // < 2^16 + 2
  sum = (sum & 0xFFFF) + (sum >> 16);      // 16 bits
  uint16_t field;
  std::memcpy(&field, ip + 10, 2);
  return static_cast<uint16_t>(~sum) == field;
}

// UDP checksum over the pseudo-header, the UDP header (checksum field taken as zero) and
// `udp_len - 8` bytes of payload. `ip` points at the IPv4 or IPv6 header. A computed zero is
// returned as 0xFFFF (RFC 768).
uint16_t udp_checksum(const uint8_t* ip, bool ipv6, const uint8_t* udp, size_t udp_len) noexcept;

namespace detail {
// csum_add() without the vector kernel (AVX2 where the CPU has it): the reference it is
// tested and benchmarked against.
uint64_t csum_add_portable(uint64_t sum, const uint8_t* data, size_t len) noexcept;
}  // namespace detail

}  // namespace uet::wire
