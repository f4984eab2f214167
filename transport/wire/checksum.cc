#include "transport/wire/checksum.h"

namespace uet::wire {

uint64_t csum_add(uint64_t sum, const uint8_t* data, size_t len) noexcept {
  size_t i = 0;
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
