#include "transport/wire/checksum.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace uet::wire {

namespace {

// The bytes as native 32-bit words (then a 16-bit word and a byte) summed into a 64-bit
// accumulator, unfolded: by RFC 1071 §2(B) the folded, byte-swapped result is the big-endian
// sum csum_add() takes (as long as `data` starts at an even offset of what is summed).
// Below 2^32 words nothing is lost: every frame.
uint64_t portable_sum(const uint8_t* data, size_t len) noexcept {
  uint64_t acc[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 32 <= len; i += 32) {
    uint32_t w[8];
    std::memcpy(w, data + i, sizeof(w));
    acc[0] += uint64_t{w[0]} + w[4];
    acc[1] += uint64_t{w[1]} + w[5];
    acc[2] += uint64_t{w[2]} + w[6];
    acc[3] += uint64_t{w[3]} + w[7];
  }
  for (; i + 4 <= len; i += 4) {
    uint32_t w;
    std::memcpy(&w, data + i, 4);
    acc[0] += w;
  }
  if (i + 2 <= len) {
    uint16_t h;
    std::memcpy(&h, data + i, 2);
    acc[1] += h;
    i += 2;
  }
  if (i < len) {  // the odd byte is the high byte of a zero-padded big-endian word
    acc[2] +=
        std::endian::native == std::endian::little ? uint64_t{data[i]} : uint64_t{data[i]} << 8;
  }
  return acc[0] + acc[1] + acc[2] + acc[3];
}

#if defined(__x86_64__)
// One 32-byte step: the pairwise signed sums of the flipped words (and the store, if copying).
template <bool kCopy>
__attribute__((target("avx2"), always_inline)) inline __m256i avx2_step(uint8_t* dst,
                                                                          const uint8_t* src,
                                                                          size_t at) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at));
  if constexpr (kCopy) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + at), v);
  return _mm256_madd_epi16(_mm256_xor_si256(v, _mm256_set1_epi16(static_cast<int16_t>(0x8000))),
                           _mm256_set1_epi16(1));
}

// The same sum sixteen 16-bit words at a time. vpmaddwd adds adjacent words into 32-bit lanes,
// but as signed values: flipping each word's top bit first makes it u - 32768 exactly, so the
// lanes hold the sum less 32768 per word, added back at the end (three vector operations per
// 32 bytes instead of four). A lane gains at most 2^16 per step, so the 32-bit lanes are
// widened to 64 bits every kStepsPerBlock steps. With `dst`, every block is also stored there:
// the copy and the sum in one pass.
template <bool kCopy>
__attribute__((target("avx2"))) uint64_t avx2_sum(uint8_t* dst, const uint8_t* src,
                                                  size_t len) noexcept {
  constexpr size_t kStepsPerBlock = 1 << 14;  // 2^14 steps * 2^16 < 2^31 per lane
  __m256i wide = _mm256_setzero_si256();
  size_t i = 0;
  while (i + 32 <= len) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    const size_t block_end = std::min(len, i + kStepsPerBlock * 32);
    for (; i + 128 <= block_end; i += 128) {
      a0 = _mm256_add_epi32(a0, avx2_step<kCopy>(dst, src, i));
      a1 = _mm256_add_epi32(a1, avx2_step<kCopy>(dst, src, i + 32));
      a2 = _mm256_add_epi32(a2, avx2_step<kCopy>(dst, src, i + 64));
      a3 = _mm256_add_epi32(a3, avx2_step<kCopy>(dst, src, i + 96));
    }
    for (; i + 32 <= block_end; i += 32) a0 = _mm256_add_epi32(a0, avx2_step<kCopy>(dst, src, i));
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
    wide = _mm256_add_epi64(wide, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(s)));
    wide = _mm256_add_epi64(wide, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(s, 1)));
  }
  alignas(32) int64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), wide);
  // Clean upper halves before the SSE code after us (the tail, the caller): GCC leaves this
  // one out, and a dirty state makes every later SSE instruction pay the transition.
  _mm256_zeroupper();
  // The tail starts at a multiple of 32: the same word boundaries as from `src`.
  if constexpr (kCopy) std::memcpy(dst + i, src + i, len - i);
  const int64_t words = static_cast<int64_t>(i / 2);
  return static_cast<uint64_t>(lanes[0] + lanes[1] + lanes[2] + lanes[3] + words * 32768) +
         portable_sum(src + i, len - i);
}

const bool kHaveAvx2 = [] {
  __builtin_cpu_init();  // a static initializer may run before libgcc's own (GCC manual)
  return __builtin_cpu_supports("avx2") != 0;
}();
#endif

// Below 128 bytes the vector setup and the horizontal add cost more than they save.
constexpr size_t kVectorFrom = 128;

uint64_t native_sum(const uint8_t* data, size_t len) noexcept {
#if defined(__x86_64__)
  if (len >= kVectorFrom && kHaveAvx2) return avx2_sum<false>(nullptr, data, len);
#endif
  return portable_sum(data, len);
}

uint64_t copy_native_sum(uint8_t* dst, const uint8_t* src, size_t len) noexcept {
#if defined(__x86_64__)
  if (len >= kVectorFrom && kHaveAvx2) return avx2_sum<true>(dst, src, len);
#endif
  std::memcpy(dst, src, len);
  return portable_sum(src, len);
}

// Folds a native-order sum to 16 bits (end-around carry) and byte-swaps it into the big-endian
// domain the callers add in (RFC 1071 §2(B)).
uint16_t fold_to_big_endian(uint64_t native) noexcept {
  native = (native & 0xFFFFFFFF) + (native >> 32);
  while (native >> 16) native = (native & 0xFFFF) + (native >> 16);
  auto folded = static_cast<uint16_t>(native);
  if constexpr (std::endian::native == std::endian::little) folded = __builtin_bswap16(folded);
  return folded;
}

}  // namespace

uint64_t csum_add(uint64_t sum, const uint8_t* data, size_t len) noexcept {
  // RFC 1071 §2(A, B): the ones'-complement sum does not depend on byte order and can be taken
  // over wider words, folded at the end: the bytes are summed as native words, folded to 16
  // bits and byte-swapped into the big-endian domain.
  return sum + fold_to_big_endian(native_sum(data, len));
}

uint64_t csum_copy(uint64_t sum, uint8_t* dst, const uint8_t* src, size_t len) noexcept {
  return sum + fold_to_big_endian(copy_native_sum(dst, src, len));
}

namespace detail {
uint64_t csum_add_portable(uint64_t sum, const uint8_t* data, size_t len) noexcept {
  return sum + fold_to_big_endian(portable_sum(data, len));
}
}  // namespace detail

uint16_t csum_finish(uint64_t sum) noexcept {
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xFFFF);
}

uint16_t ipv4_header_checksum(const uint8_t* ip, size_t len) noexcept {
  if (len == 20) {  // no options (every frame we build): five native words, the checksum masked
    uint32_t w[5];
    std::memcpy(w, ip, sizeof(w));
    // Bytes 10-11 are the upper half of w[2] in little-endian order, the lower in big.
    constexpr uint32_t kKeep = std::endian::native == std::endian::little ? 0x0000FFFFu : 0xFFFF0000u;
    return csum_finish(fold_to_big_endian(uint64_t{w[0]} + w[1] + (w[2] & kKeep) + w[3] + w[4]));
  }
  uint64_t sum = csum_add(0, ip, 10);          // up to the checksum field
  sum = csum_add(sum, ip + 12, len - 12);      // skip it
  return csum_finish(sum);
}


// One pass in native byte order with one fold (the pseudo-header's addresses, the UDP header
// with its checksum field masked, the payload), then protocol and length in big-endian order:
// the same sum as csum_add() over each piece (the ones'-complement sum does not depend on
// the grouping), without a fold and byte swap per piece. Every received ACK is checked here.
uint16_t udp_checksum(const uint8_t* ip, bool ipv6, const uint8_t* udp, size_t udp_len) noexcept {
  uint64_t native = ipv6 ? native_sum(ip + 8, 32)  // source and destination addresses
                         : native_sum(ip + 12, 8);
  uint32_t w[2];
  std::memcpy(w, udp, sizeof(w));
  // Bytes 6-7 (the checksum field, taken as zero) are the upper half of w[1] in little-endian
  // order, the lower in big.
  constexpr uint32_t kKeep = std::endian::native == std::endian::little ? 0x0000FFFFu : 0xFFFF0000u;
  native += uint64_t{w[0]} + (w[1] & kKeep);  // ports and length
  native += native_sum(udp + 8, udp_len - 8);
  // Protocol (next header: UDP) and length in big-endian order.
  const uint64_t sum = uint64_t{fold_to_big_endian(native)} + 17 + udp_len;
  const uint16_t c = csum_finish(sum);
  return c == 0 ? 0xFFFF : c;
}

}  // namespace uet::wire
