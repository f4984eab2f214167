// Seeded random numbers for the simulator: xoshiro256** seeded through SplitMix64, so any
// 64-bit seed (global seed mixed with a link or switch index) gives an independent stream.
#pragma once

#include <cstdint>

namespace uet::sim {

constexpr uint64_t splitmix64(uint64_t& x) noexcept {
  uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A well-mixed 64-bit hash of a value and a seed (ECMP, derived seeds).
constexpr uint64_t mix64(uint64_t v, uint64_t seed) noexcept {
  uint64_t x = v ^ (seed * 0x9E3779B97F4A7C15ULL);
  return splitmix64(x);
}

class Rng {
 public:
  Rng() : Rng(1) {}
  explicit Rng(uint64_t seed) noexcept {
    for (auto& w : s_) w = splitmix64(seed);
  }
  uint64_t next() noexcept {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n).
  uint64_t below(uint64_t n) noexcept {
    __extension__ using U128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<U128>(next()) * n) >> 64);
  }
  bool chance(double p) noexcept { return p > 0 && uniform() < p; }

 private:
  static constexpr uint64_t rotl(uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace uet::sim
