// ROD's reorder buffers at the target (spec/uet.md §3.3, ROD [choice]; NOTES.md, "The other
// delivery modes"): a ROD target PDC that receives a request ahead of the next PSN to execute
// borrows one, stages the request there (SES header and payload) and gives it back once
// nothing is held. Internal to transport/uet/.
//
// Ownership: the endpoint owns one RodBuffers; its thread alone touches it. At most `count`
// buffers exist, each made the first time it is lent and kept; a buffer holds `window`
// entries of `payload_bytes`.
#pragma once

#ifndef UET_PRIVATE_TRANSPORT_UET
#ifndef UET_ENDPOINT_H_MEMBERS
#error "transport/uet/uet_rod.h is private to transport/uet (use transport/uet/uet_endpoint.h)"
#endif
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/pool.h"
#include "transport/wire/uet_headers.h"

namespace uet::pds {

// One staged request. A staged WRITE is recorded as received at once, a READ or SEND when it
// runs. An atomic's extension header (§4.5) is staged in front of its operands.
struct Staged {
  std::array<uint8_t, wire::SesStandardRequest::kSize> ses{};
  uint8_t ext = 0;        // extension header bytes at the start of the entry's bytes
  uint32_t len = 0;       // payload bytes present (after the extension)
  uint32_t elided = 0;    // payload bytes carried by length only (simulator)
  bool recorded = false;  // already recorded as received (a WRITE, or no SES header)
  bool has_ses = false;
};

class RodBuffers {
 public:
  void configure(uint32_t window, uint32_t payload_bytes, uint32_t count) noexcept {
    window_ = window;
    payload_bytes_ = payload_bytes;
    count_ = count;
  }
  // Lends a buffer to `buf` (a PDC's; kept when it has one, -1 when it has none): a
  // returned one, the last returned first, else a new one. False when all are lent.
  bool lend(int32_t& buf);
  // Takes `buf` back, nothing staged any more, and sets it to -1.
  void give_back(int32_t& buf) noexcept;

  // Entries are addressed by PSN modulo the window; the caller keeps PSNs within it.
  bool staged(int32_t buf, uint32_t psn) const noexcept {
    const uint32_t i = psn % window_;
    return (pool_[static_cast<size_t>(buf)].bits[i / 64] >> (i % 64) & 1) != 0;
  }
  void set_staged(int32_t buf, uint32_t psn, bool on) noexcept {
    const uint32_t i = psn % window_;
    uint64_t& w = pool_[static_cast<size_t>(buf)].bits[i / 64];
    w = on ? w | uint64_t{1} << (i % 64) : w & ~(uint64_t{1} << (i % 64));
  }
  Staged& entry(int32_t buf, uint32_t psn) noexcept {
    return pool_[static_cast<size_t>(buf)].slots[psn % window_];
  }
  // The entry's bytes: the extension header, then the payload (not zeroed).
  uint8_t* bytes(int32_t buf, uint32_t psn) noexcept {
    return pool_[static_cast<size_t>(buf)].bytes.get() + size_t{psn % window_} * payload_bytes_;
  }

  size_t memory_bytes() const noexcept;
  static size_t memory_bound(uint32_t window, uint32_t payload_bytes, uint32_t count) noexcept;

 private:
  struct Buffer {
    std::vector<uint64_t> bits;  // window bits: PSN staged
    std::vector<Staged> slots;
    std::unique_ptr<uint8_t[]> bytes;  // window x payload_bytes, not zeroed
  };
  std::vector<Buffer> pool_;
  std::vector<uint16_t> free_;
  uint32_t window_ = 0, payload_bytes_ = 0, count_ = 0;
};

}  // namespace uet::pds
