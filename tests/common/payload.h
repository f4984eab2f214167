// What the endpoint tests write and collect: seeded payload bytes, and every completion an
// endpoint has ready.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "transport/api.h"

namespace uet::testing {

// n bytes from a seeded generator: any two seeds differ, a test can rebuild them.
inline std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// The same bytes with the low bit set: never 0, so a written byte is told from an unwritten one.
inline std::vector<uint8_t> nonzero_pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v = pattern(n, seed);
  for (auto& b : v) b |= 1;
  return v;
}

// Written `chunk`-byte chunks of `mem` (first byte nonzero) must form a prefix when data is
// placed in PSN order: how many chunks are written after the first unwritten one.
inline size_t out_of_order_chunks(const std::vector<uint8_t>& mem, size_t chunk) {
  size_t holes = 0, late = 0;
  for (size_t i = 0; i + chunk <= mem.size(); i += chunk) {
    if (mem[i] == 0) {
      ++holes;
    } else if (holes > 0) {
      ++late;
    }
  }
  return late;
}

// A WRITE of all of `local` to `remote_offset` in the peer's region `rkey`.
inline WriteRequest write_request(uint64_t wr_id, uint32_t peer, uint32_t rkey,
                                  std::span<const uint8_t> local, uint64_t remote_offset = 0) {
  return {.wr_id = wr_id,
          .peer = peer,
          .rkey = rkey,
          .remote_offset = remote_offset,
          .local = local.data(),
          .length = local.size()};
}

// The completions `ep` holds now, at most `most`.
inline std::vector<Completion> drain(Endpoint& ep, size_t most = 1024) {
  std::vector<Completion> out(most);
  out.resize(ep.poll_completions(out));
  return out;
}

}  // namespace uet::testing
