// Small helpers the UET engine's data path files share (uet_datapath.cc, uet_modes.cc).
// Internal to transport/uet/.
#pragma once

// Only transport/uet/'s target and its unit tests define the macro.
#ifndef UET_PRIVATE_TRANSPORT_UET
#error "transport/uet/uet_internal.h is private to transport/uet (use transport/uet/uet_endpoint.h)"
#endif

#include <cstdint>
#include <vector>

#include "transport/api.h"
#include "transport/wire/builder.h"
#include "transport/wire/checksum.h"
#include "transport/wire/decode.h"

namespace uet::internal {

// Finishes a frame whose payload may not fit the host's buffer: then only the headers are
// real bytes and the payload travels by length (Frame::wire_len), with the UDP checksum 0.
inline bool finish_frame(wire::FrameBuilder& b, Frame& f, size_t elided) {
  size_t n = 0;
  if (b.finish(&n, elided) != wire::WireError::kOk) return false;
  f.len = static_cast<uint32_t>(n);
  f.wire_len = elided > 0 ? static_cast<uint32_t>(n + elided) : 0;
  f.ref = b.referenced();
  f.ref_len = static_cast<uint32_t>(b.referenced_len());
  f.ref_at = static_cast<uint32_t>(b.referenced_at());
  return true;
}

// PSN arithmetic is modulo 2^32 (§3.3): a is before b when (a - b) is "negative".
constexpr bool psn_before(uint32_t a, uint32_t b) noexcept {
  return static_cast<int32_t>(a - b) < 0;
}

inline bool test_bit(const std::vector<uint64_t>& bits, uint32_t i) noexcept {
  return (bits[i / 64] >> (i % 64) & 1) != 0;
}
inline void set_bit(std::vector<uint64_t>& bits, uint32_t i) noexcept {
  bits[i / 64] |= uint64_t{1} << (i % 64);
}
inline void clear_bit(std::vector<uint64_t>& bits, uint32_t i) noexcept {
  bits[i / 64] &= ~(uint64_t{1} << (i % 64));
}

// What the initiator completes an operation with when the target answered `rc` (§4.9).
inline OpStatus status_for(wire::SesReturnCode rc) noexcept {
  switch (rc) {
    case wire::SesReturnCode::kBadMkey:
    case wire::SesReturnCode::kBadAddr:
    case wire::SesReturnCode::kPermViolation:
    case wire::SesReturnCode::kOpViolation:
    case wire::SesReturnCode::kAtInvalid:
    case wire::SesReturnCode::kAtPerm:
    case wire::SesReturnCode::kAtOutOfRange:
      return OpStatus::kRemoteAccessError;
    case wire::SesReturnCode::kTooLong:
      return OpStatus::kLengthError;
    case wire::SesReturnCode::kNoMatch:
      return OpStatus::kReceiverNotReady;
    default:
      return OpStatus::kRemoteInvalidRequest;  // §7.2: unknown codes give a generic error
  }
}

}  // namespace uet::internal
