// x mod d for 32-bit x and a divisor fixed in advance, by two multiplications instead of a
// division (Lemire, Kaser, Kurz, "Faster Remainder by Direct Computation", 2019): with
// m = floor((2^64 - 1) / d) + 1, the remainder is the high 64 bits of (m * x mod 2^64) * d.
// Exact for every x < 2^32 and 1 <= d < 2^32, so ECMP's choice of port is unchanged.
#pragma once

#include <cstdint>

namespace uet::sim {

struct FastMod {
  uint64_t m = 0;
  uint32_t d = 1;

  static constexpr FastMod of(uint32_t divisor) noexcept {
    return FastMod{UINT64_MAX / divisor + 1, divisor};  // d = 1: m wraps to 0, x mod 1 = 0
  }
  constexpr uint32_t mod(uint32_t x) const noexcept {
    __extension__ using U128 = unsigned __int128;
    const uint64_t low = m * x;
    return static_cast<uint32_t>((static_cast<U128>(low) * d) >> 64);
  }
};

}  // namespace uet::sim
