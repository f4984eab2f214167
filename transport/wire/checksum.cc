#include "transport/wire/checksum.h"

#include <cstring>

namespace uet::wire {

uint64_t csum_add(uint64_t sum, const uint8_t* data, size_t len) noexcept {
  // RFC 1071 §2(B): ones'-complement sums can be taken over wider words and folded at the
  // end. Sum big-endian 32-bit words into 64 bits (no overflow below 2^32 words).
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint32_t a, b;
    std::memcpy(&a, data + i, 4);
    std::memcpy(&b, data + i + 4, 4);
    sum += uint64_t{__builtin_bswap32(a)} + __builtin_bswap32(b);
  }
  for (; i + 1 < len; i += 2) sum += (uint32_t{data[i]} << 8) | data[i + 1];
  if (i < len) sum += uint32_t{data[i]} << 8;
  return sum;
}

uint16_t csum_finish(uint64_t sum) noexcept {
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xFFFF);
}

uint16_t ipv4_header_checksum(const uint8_t* ip, size_t len) noexcept {
  uint64_t sum = csum_add(0, ip, 10);          // up to the checksum field
  sum = csum_add(sum, ip + 12, len - 12);      // skip it
  return csum_finish(sum);
}

uint16_t udp_checksum(const uint8_t* ip, bool ipv6, const uint8_t* udp, size_t udp_len) noexcept {
  uint64_t sum = 0;
  if (ipv6) {
    sum = csum_add(sum, ip + 8, 32);  // source and destination addresses
  } else {
    sum = csum_add(sum, ip + 12, 8);
  }
  sum += 17;  // next header / protocol: UDP
  sum += udp_len;
  sum = csum_add(sum, udp, 6);  // ports and length; checksum field taken as zero
  sum = csum_add(sum, udp + 8, udp_len - 8);
  const uint16_t c = csum_finish(sum);
  return c == 0 ? 0xFFFF : c;
}

}  // namespace uet::wire
