// Small helpers the UET engine's data path files share (uet_rx.cc, uet_tx.cc, ...).
// Internal to transport/uet/.
#pragma once

// Only transport/uet/'s target and its unit tests define the macro.
#ifndef UET_PRIVATE_TRANSPORT_UET
#error "transport/uet/uet_internal.h is private to transport/uet (use transport/uet/uet_endpoint.h)"
#endif

#include <algorithm>
#include <array>
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

// The EV (UDP source port) of a packet without a PDC (RUDI, UUD): spread over the dynamic
// range by its ID and, for a resend, its try, so a resend may take another path (§2.4).
inline uint16_t spray_port(uint32_t id, uint32_t attempt) noexcept {
  return wire::dynamic_port(id * 0x9E37u + attempt * 0x2F1u);
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

// §4.1: SES bytes 4..11 of every request (ri_generation, job_id, pid_on_fep, resource_index,
// the same bytes in the three request headers) as one field.
using AddressBytes = wire::Field<4, 8, 0, wire::Kind::UHEX, wire::vals_enum::none>;

// §4.1: the AddressBytes of a request from job `job` to process and resource `to`, each field
// as its set_ accessor would write it. check_access compares a request's against the target's
// own (access_word_), and initiators send theirs from here (address_words, set_address), so
// the two cannot disagree on the layout.
constexpr uint64_t address_word(uint32_t job, const SesAddress& to) noexcept {
  using Ses = wire::SesStandardRequest;
  wire::HeaderWords<Ses> h;
  h.set<Ses::ri_generation_field>(to.ri_generation);
  h.set<Ses::job_id_field>(job);
  h.set<Ses::pid_on_fep_field>(to.pid_on_fep);
  h.set<Ses::resource_index_field>(to.resource_index);
  const std::array<uint64_t, 2> w = h.words<2>();
  return w[0] << 32 | w[1] >> 32;
}

// §4.1: a request's whole address, AddressBytes and `rel`, as it lies in the first two words
// of its SES header (wire::HeaderWords): packed once when an operation is posted
// (pds::Op::address) and ORed into each of its packets' headers.
inline std::array<uint64_t, 2> address_words(uint32_t job, const SesAddress& to) noexcept {
  wire::HeaderWords<wire::SesStandardRequest> h;
  h.set<AddressBytes>(address_word(job, to));
  h.set<wire::SesStandardRequest::rel_field>(to.relative);
  return h.words<2>();
}

// §4.1: a request's target address, for headers built in place (RUDI, UUD).
inline void set_address(wire::SesStandardRequest& ses, uint32_t job, const SesAddress& to) noexcept {
  AddressBytes::set(ses.raw, address_word(job, to));
  ses.set_rel(to.relative);
}

// Appends entry `i` of `table` to `list`, or takes it out.
template <typename T>
void link_tail(std::vector<T>& table, uint32_t& head, uint32_t& tail, uint32_t i) {
  table[i].prev = tail;
  table[i].next = 0xFFFFFFFFu;
  if (tail != 0xFFFFFFFFu) {
    table[tail].next = i;
  } else {
    head = i;
  }
  tail = i;
}
template <typename T>
void unlink(std::vector<T>& table, uint32_t& head, uint32_t& tail, uint32_t i) {
  const uint32_t prev = table[i].prev, next = table[i].next;
  (prev != 0xFFFFFFFFu ? table[prev].next : head) = next;
  (next != 0xFFFFFFFFu ? table[next].prev : tail) = prev;
}

// §4.2: where a SEND's or TAGGED_SEND's packet lands in its message: `len` bytes at `at`.
struct MsgPacket {
  uint64_t at;   // message_offset (the first packet: 0)
  uint64_t len;  // the first packet: its payload, carried or elided; the others: payload_length
};
inline MsgPacket msg_packet(const wire::SesStandardRequest& ses, size_t carried) noexcept {
  if (ses.som()) return {0, carried};
  return {ses.message_offset(), ses.payload_length()};
}

}  // namespace uet::internal

namespace uet {

// Data-path steps that more than one of the engine's files inline.

// Tail-loss probe (RFC 8985 §7): armed only when all posted work has been sent, PSNs are
// outstanding, a sample exists and no probe went since the last progress; it fires
// 2 srtt + ack_delay after the last send or ACK.
[[gnu::always_inline]] inline void UetEndpoint::arm_tlp(Pdc& p, Time now) noexcept {
  p.ini.tlp_deadline = kNever;
  if (!hot_.tlp || p.ini.srtt == 0 || p.ini.tlp_done || p.ini.op_send != p.ini.op_tail ||
      !internal::psn_before(p.ini.base_psn, p.ini.next_psn)) {
    return;
  }
  // RFC 8985 §7.2: PTO = 2 srtt (+ the peer's ACK delay), but before the RTO: with a small
  // RTO (min_rto) the probe goes at 3/4 of it, so it still saves the timeout's window cut.
  // rto_rtt_max_pct: a stall as long as an earlier one is not a lost tail either.
  const Time wait = std::max(2 * p.ini.srtt + hot_.ack_delay,
                             p.ini.rtt_max * hot_.rto_rtt_max_pct / 100);
  const Time pto = std::min(wait, p.ini.rto * 3 / 4);
  p.ini.tlp_deadline = now + pto;
  deadline_ = std::min(deadline_, p.ini.tlp_deadline);
}

// §4.1, §4.2: the end of a SEND's or TAGGED_SEND's packet at the target. One flagged `ie`
// puts its message in error (nothing of it is delivered); the `len` bytes it stood for are
// no longer awaited. True when none are left.
[[gnu::always_inline]] inline bool UetEndpoint::msg_packet_end(
    RxMsg& m, const wire::SesStandardRequest& ses, uint64_t len) noexcept {
  if (ses.ie()) {
    ++rare().rx_initiator_err;
    if (m.status == OpStatus::kSuccess) m.status = OpStatus::kRemoteInvalidRequest;
  }
  m.remaining -= std::min(len, m.remaining);
  return m.remaining == 0;
}

// §2.4: EV index i (pathsel/) travels as a UDP source port in the dynamic range 49152..65535,
// spread from the PDC's random base by an odd stride, so indices 0..16383 are distinct ports.
inline uint16_t UetEndpoint::ev_port(const Pdc& p, uint16_t ev) noexcept {
  return wire::dynamic_port(p.ev_base + uint32_t{ev} * 0x9E37u);
}

}  // namespace uet
