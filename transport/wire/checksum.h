// Internet checksums (RFC 1071) for the IPv4 header and UDP over IPv4/IPv6.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uet::wire {

// Adds `len` bytes as big-endian 16-bit words to a running ones'-complement sum.
// Chained calls must pass even lengths except for the last.
uint64_t csum_add(uint64_t sum, const uint8_t* data, size_t len) noexcept;
// Folds a running sum to 16 bits and complements it: the value to put on the wire.
uint16_t csum_finish(uint64_t sum) noexcept;

// Checksum of an IPv4 header of `len` bytes, computed as if its checksum field were zero.
uint16_t ipv4_header_checksum(const uint8_t* ip, size_t len) noexcept;

// UDP checksum over the pseudo-header, the UDP header (checksum field taken as zero) and
// `udp_len - 8` bytes of payload. `ip` points at the IPv4 or IPv6 header. A computed zero is
// returned as 0xFFFF (RFC 768).
uint16_t udp_checksum(const uint8_t* ip, bool ipv6, const uint8_t* udp, size_t udp_len) noexcept;

}  // namespace uet::wire
