// Small helpers the UET engine's data path files share (uet_rx.cc, uet_tx.cc, ...).
// Internal to transport/uet/.
#pragma once

// Only transport/uet/'s target and its unit tests define the macro.
#ifndef UET_PRIVATE_TRANSPORT_UET
#error "transport/uet/uet_internal.h is private to transport/uet (use transport/uet/uet_endpoint.h)"
#endif

#include <cstdint>
#include <vector>

#include "transport/api.h"
#include "transport/uet/uet_endpoint.h"
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
    case wire::SesReturnCode::kBadJobId:
    case wire::SesReturnCode::kBadPid:
    case wire::SesReturnCode::kBadIndex:
    case wire::SesReturnCode::kDisabled:
    case wire::SesReturnCode::kDisabledGen:
    case wire::SesReturnCode::kBadGeneration:
      return OpStatus::kAccessDenied;
    default:
      return OpStatus::kRemoteInvalidRequest;  // §7.2: unknown codes give a generic error
  }
}

// An initiator's operation as it completes: its status, bytes and the target's return code.
inline Completion op_completion(const pds::Op& o) noexcept {
  Completion c{o.wr_id, o.failed ? o.status : OpStatus::kSuccess, o.failed ? 0 : o.length, o.op};
  c.return_code = o.rc;
  return c;
}

// §4.1: a request's target address: the initiator's job, the target's process and resource.
inline void set_address(wire::SesStandardRequest& ses, uint32_t job, const SesAddress& to) noexcept {
  ses.set_ri_generation(to.ri_generation);
  ses.set_job_id(job);
  ses.set_pid_on_fep(to.pid_on_fep);
  ses.set_resource_index(to.resource_index);
  ses.set_rel(to.relative);
}

}  // namespace uet::internal

namespace uet {

// Data-path steps that more than one of the engine's files inline.

// Tail-loss probe (RFC 8985 §7): armed only when all posted work has been sent, PSNs are
// outstanding, a sample exists and no probe went since the last progress; it fires
// 2 srtt + ack_delay after the last send or ACK.
[[gnu::always_inline]] inline void UetEndpoint::arm_tlp(Pdc& p, Time now) noexcept {
  p.ini.tlp_deadline = kNever;
  if (!config_.tlp || p.ini.srtt == 0 || p.ini.tlp_done || p.ini.op_send != p.ini.op_tail ||
      !internal::psn_before(p.ini.base_psn, p.ini.next_psn)) {
    return;
  }
  // RFC 8985 §7.2: PTO = 2 srtt (+ the peer's ACK delay), but before the RTO: with a small
  // RTO (min_rto) the probe goes at 3/4 of it, so it still saves the timeout's window cut.
  // rto_rtt_max_pct: a stall as long as an earlier one is not a lost tail either.
  const Time wait = std::max(2 * p.ini.srtt + config_.ack_delay,
                             p.ini.rtt_max * config_.rto_rtt_max_pct / 100);
  const Time pto = std::min(wait, p.ini.rto * 3 / 4);
  p.ini.tlp_deadline = now + pto;
  deadline_ = std::min(deadline_, p.ini.tlp_deadline);
}

// §2.4: EV index i (pathsel/) travels as a UDP source port in the dynamic range 49152..65535,
// spread from the PDC's random base by an odd stride, so indices 0..16383 are distinct ports.
inline uint16_t UetEndpoint::ev_port(const Pdc& p, uint16_t ev) noexcept {
  return wire::dynamic_port(p.ev_base + uint32_t{ev} * 0x9E37u);
}

}  // namespace uet
