// The small generator each selector owns: SplitMix64, seeded by the caller. No globals, no
// clock; the same seed gives the same sequence on every host.
#pragma once

#include <cstdint>

namespace uet::pathsel {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) noexcept : state_(seed) {}

  uint64_t next() noexcept {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in 0..n-1 for n >= 1 (multiply-shift; the bias is below 2^-16 for n <= 2^16).
  uint32_t below(uint32_t n) noexcept { return static_cast<uint32_t>(((next() >> 32) * n) >> 32); }

 private:
  uint64_t state_;
};

}  // namespace uet::pathsel
