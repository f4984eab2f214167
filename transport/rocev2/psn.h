// 24-bit PSN arithmetic (spec/rocev2.md §2): PSNs are taken modulo 2^24 and compare by the
// sign of their 24-bit difference, so a PSN is "after" another when it is less than 2^23 ahead.
#pragma once

// Only transport/rocev2/'s target and its unit tests define the macro.
#ifndef UET_PRIVATE_TRANSPORT_ROCEV2
#error "transport/rocev2/psn.h is private to transport/rocev2 (use transport/rocev2/roce_endpoint.h)"
#endif

#include <cstdint>

namespace uet::roce {

inline constexpr uint32_t kPsnMask = 0x00FF'FFFF;
inline constexpr uint32_t kPsnHalf = 0x0080'0000;  // PSNs this far apart are ambiguous

constexpr uint32_t psn_add(uint32_t psn, uint32_t n) noexcept { return (psn + n) & kPsnMask; }
constexpr uint32_t psn_prev(uint32_t psn) noexcept { return (psn - 1) & kPsnMask; }

// a - b as a signed 24-bit number: < 0 when a is before b, 0 when equal, > 0 when after.
constexpr int32_t psn_diff(uint32_t a, uint32_t b) noexcept {
  return static_cast<int32_t>((a - b) << 8) >> 8;
}

static_assert(psn_diff(0, kPsnMask) == 1, "wraps forward");
static_assert(psn_diff(kPsnMask, 0) == -1, "wraps backward");
static_assert(psn_diff(5, 5) == 0);
static_assert(psn_add(kPsnMask, 2) == 1);

}  // namespace uet::roce
