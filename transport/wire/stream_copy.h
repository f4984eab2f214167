// Copies that bypass the cache (non-temporal stores), for placing payloads into regions larger
// than the cache: a plain copy there first reads every destination line in (write-allocate),
// doubling the memory traffic, and evicts what the engine works on. stream_fence() must come
// before any other agent may rely on the bytes (x86 orders streaming stores only at a fence).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>  // SSE2: part of every x86-64 CPU
#endif

namespace uet::wire {

inline void stream_copy(uint8_t* dst, const uint8_t* src, size_t len) noexcept {
#if defined(__x86_64__)
  // Up to a 16-byte aligned destination by plain copy, then 64 bytes per step.
  const size_t head =
      std::min(len, (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & size_t{15});
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= len; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  for (; i + 16 <= len; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  std::memcpy(dst + i, src + i, len - i);
#else
  std::memcpy(dst, src, len);
#endif
}

inline void stream_fence() noexcept {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace uet::wire
