// RC requester (rxe, NOTES.md §2): request packets, ACK/NAK handling, READ responses.
#include <algorithm>
#include <cstring>

#include "transport/rocev2/roce_datapath.h"

namespace uet {

using roce::payload_len;
using roce::psn_add;
using roce::psn_diff;
using roce::psn_prev;
using wire::AethNak;
using wire::AethType;
using wire::RoceOpcode;

// The packet at the go-back-N cursor (NOTES.md §2), then the cursor moves on.
bool RoceEndpoint::build_data(Qp& q, Frame& f, Time now) {
  Write& w = q.writes[q.send_write];
  const bool fresh = q.send_write == q.write_started;  // first transmission of this WR
  const bool read = w.op == Opcode::kRead;
  const bool atomic = w.op == Opcode::kAtomic;
  const bool last = read || atomic || q.send_packet + 1 == w.packets;
  Packet p;
  if (read) {
    read_request_packet(q, w, p);
  } else if (atomic) {
    atomic_request_packet(q, w, p);
  } else {
    message_packet(q, w, last, p);
  }
  if (!build_packet(q, f, p)) [[unlikely]] return frame_refused(q, now);
  if (q.frame_refused) [[unlikely]] q.frame_refused = false;
  ++q.since_ack_req;
  if (p.ack_req) q.since_ack_req = 0;
  advance_cursor(q, w, p.len, fresh, last);
  if (q.rto_deadline == kNever) arm_rto(q, now);
  pace(q, f, now);
  return true;
}

// The host lent a frame too small for the request's headers (build_packet counted it). A
// host lends frames of one size, so a refusal that lasts until the ACK timer fires is final:
// on_timer fails the QP kFrameTooSmall instead of stalling it. With no ACK timer (t = 0) the
// next on_timer does.
bool RoceEndpoint::frame_refused(Qp& q, Time now) {
  q.frame_refused = true;
  if (q.rto_deadline == kNever) {
    q.rto_deadline = now + ack_timeout_;
    deadline_ = std::min(deadline_, q.rto_deadline);
  }
  return false;
}

// A READ REQUEST (§3.1 RETH). Resumed at response k it is a new READ REQUEST at PSN first + k
// with the RETH advanced by k MTUs (IB: the requester re-issues the read from the first
// missing response).
void RoceEndpoint::read_request_packet(const Qp& q, const Write& w, Packet& p) const {
  const uint64_t offset = uint64_t{q.send_packet} * config_.mtu;
  p.psn = q.next_psn;
  p.op = RoceOpcode::kRcReadRequest;
  p.ack_req = true;
  p.reth = true;
  p.va = w.remote_offset + offset;
  p.rkey = w.rkey;
  p.dma_length = static_cast<uint32_t>(w.length - offset);
}

// A CMP_SWAP or FETCH_ADD (spec/rocev2.md §3.3): one packet, AtomicETH only, always AckReq
// (its ATOMIC ACKNOWLEDGE is the response); resent whole by go-back-N.
void RoceEndpoint::atomic_request_packet(const Qp& q, const Write& w, Packet& p) const {
  p.psn = q.next_psn;
  p.op = w.cmp_swap ? RoceOpcode::kRcCompareSwap : RoceOpcode::kRcFetchAdd;
  p.ack_req = true;
  p.atomic_eth = true;
  p.va = w.remote_offset;
  p.rkey = w.rkey;
  p.swap_add = w.swap_add;
  p.compare = w.compare;
}

// A WRITE or SEND packet (§4). One that is not the first of its message is a MIDDLE or LAST
// without RETH, also when go-back-N resumes mid-message (as rxe does, NOTES.md §2).
void RoceEndpoint::message_packet(const Qp& q, const Write& w, bool last, Packet& p) const {
  const uint32_t k = q.send_packet;
  const uint64_t offset = uint64_t{k} * config_.mtu;
  p.psn = q.next_psn;
  p.len = static_cast<uint32_t>(std::min<uint64_t>(config_.mtu, w.length - offset));
  const bool first = k == 0;
  const bool imm = last && w.has_imm;
  if (w.op == Opcode::kWrite) {
    p.op = first ? (last ? (imm ? RoceOpcode::kRcWriteOnlyImm : RoceOpcode::kRcWriteOnly)
                         : RoceOpcode::kRcWriteFirst)
                 : (last ? (imm ? RoceOpcode::kRcWriteLastImm : RoceOpcode::kRcWriteLast)
                         : RoceOpcode::kRcWriteMiddle);
    p.reth = first;
    p.va = w.remote_offset;
    p.rkey = w.rkey;
    p.dma_length = static_cast<uint32_t>(w.length);
  } else {
    p.op = first ? (last ? (imm ? RoceOpcode::kRcSendOnlyImm : RoceOpcode::kRcSendOnly)
                         : RoceOpcode::kRcSendFirst)
                 : (last ? (imm ? RoceOpcode::kRcSendLastImm : RoceOpcode::kRcSendLast)
                         : RoceOpcode::kRcSendMiddle);
  }
  p.imm = imm;
  p.imm_data = static_cast<uint32_t>(w.imm);  // §3.5 ImmDt: 32 bits, as RC posts it
  p.payload = p.len > 0 ? w.src + offset : nullptr;
  // AckReq on the last packet of a message and at least every ack_req_every packets.
  p.ack_req = last || q.since_ack_req + 1 >= config_.ack_req_every;
}

// A packet of `w` went out: a fresh WR takes its first PSN, the send counts as first or
// resent, and the cursor passes it (a READ: all its response PSNs at once). Reads and atomics
// count against max_rd_atomic until they complete.
void RoceEndpoint::advance_cursor(Qp& q, Write& w, uint32_t len, bool fresh, bool last) {
  if (fresh) {
    w.first_psn = q.next_psn;
    ++q.write_started;
    if (awaits_response(w.op)) ++q.reads_in_flight;
    if (w.op == Opcode::kRead) ++counters_.tx_reads;
    if (w.op == Opcode::kAtomic) ++counters_.tx_atomics;
  }
  if (psn_diff(q.next_psn, q.max_psn) < 0) {
    ++counters_.tx_retx;
    counters_.bytes_resent += len;
    if (w.op == Opcode::kRead) ++counters_.read_reissues;
    if (w.op == Opcode::kAtomic) ++counters_.atomic_resends;
  } else {
    ++counters_.tx_data;
  }
  if (w.op == Opcode::kRead) {
    q.next_psn = psn_add(w.first_psn, w.packets);  // the responses' PSNs
  } else {
    q.next_psn = psn_add(q.next_psn, 1);
  }
  if (psn_diff(q.next_psn, q.max_psn) > 0) q.max_psn = q.next_psn;
  if (last) {
    q.send_packet = 0;
    ++q.send_write;
  } else {
    ++q.send_packet;
  }
}

// Requester (NOTES.md §2, rxe check_psn / check_ack): ACKs, NAKs, RNR NAKs.
void RoceEndpoint::rx_ack(Qp& q, const wire::Decoded& d, Time now) {
  if (q.state != QpState::kRts) {
    ++rare().rx_qp_error;
    return;
  }
  const uint32_t psn = d.bth->psn();
  const wire::Aeth& a = *d.aeth;
  const AethType type = a.syndrome_type();
  if (type == AethType::kAck) {
    rx_positive_ack(q, psn, now);
    return;
  }
  if (type != AethType::kNak && type != AethType::kRnrNak) {
    ++counters_.rx_stale_acks;  // §3.2: type 2 reserved, ignored
    return;
  }
  // A NAK names a PSN in [una, max_psn - 1] and implicitly acknowledges those before it.
  if (psn_diff(psn, q.una) < 0 || psn_diff(psn, q.max_psn) >= 0) {
    ++counters_.rx_stale_acks;
    return;
  }
  // A NAK other than PSN sequence error or RNR is fatal whatever else it implies.
  const bool fatal =
      type == AethType::kNak && a.syndrome_value() != static_cast<uint8_t>(AethNak::kPsnSeqError);
  if (psn != q.una && !nak_progress(q, psn, fatal, now)) return;
  if (type == AethType::kRnrNak) {
    rx_rnr_nak(q, psn, a.syndrome_value(), now);
  } else if (!fatal) {
    rx_nak_seq(q, psn, now);
  } else {
    rx_nak_fatal(q, a.syndrome_value());
  }
}

// §3.2 ACK: coalesced, it acknowledges every PSN up to and including `psn`, which must be in
// [una - 1, max_psn - 1].
void RoceEndpoint::rx_positive_ack(Qp& q, uint32_t psn, Time now) {
  if (psn_diff(psn, psn_prev(q.una)) < 0 || psn_diff(psn, q.max_psn) >= 0) {
    ++counters_.rx_stale_acks;
    return;
  }
  ++counters_.rx_acks;
  const bool was_started = q.retry_started;
  q.retry_left = config_.retry_cnt;  // rxe: any ACK restores the retry counter ...
  q.retry_started = false;           // ... and ends the go-back-N round (reset_retry_counters)
  const int r = ack_through(q, psn);
  if (r & kAckProgress) q.rnr_left = config_.rnr_retry;
  if (r & kAckReadGap) {  // the ACK passed a read whose responses are missing
    ++rare().rx_read_gap;
    q.retry_started = was_started && !(r & kAckProgress);
    read_gap(q, now);
    return;
  }
  if (!(r & kAckProgress)) return;  // no progress: the timer keeps running
  // Lost ACKs and a timeout can leave the cursor behind what the peer already has.
  if (psn_diff(q.next_psn, q.una) < 0) seek(q, q.una);
  q.rto_deadline = kNever;
  if (q.una != q.max_psn) arm_rto(q, now);
}

// A NAK beyond una: the peer has everything before `psn`. Like an ACK, that restores the retry
// budget, and it ends the round under way (it got past its start): this NAK names a new gap
// and starts a new round. [choice] rxe keeps its round until a work request completes and so
// waits for the ACK timeout (ms) on every loss inside a round; recovering from the NAK is what
// RNICs' go-back-N is for, and not doing it would make the comparison a strawman.
// False when the NAK is answered here: responses of an earlier read are missing.
bool RoceEndpoint::nak_progress(Qp& q, uint32_t psn, bool fatal, Time now) {
  const int r = ack_through(q, psn_prev(psn));
  if (r & kAckProgress) restore_retries(q);
  if ((r & kAckReadGap) && !fatal) {  // responses of an earlier read are missing: resend
    ++rare().rx_read_gap;
    read_gap(q, now);
    return false;
  }
  return true;
}

// §3.2 RNR NAK: the responder had no receive buffer for the request at `psn`. Wait the coded
// time, then resend from `psn`; rnr_retry times per stall (7: for ever), then kReceiverNotReady.
void RoceEndpoint::rx_rnr_nak(Qp& q, uint32_t psn, uint8_t timer, Time now) {
  ++rare().rx_rnr_naks;
  if (q.rnr_wait && q.rnr_psn == psn) {  // a copy for the stall already waited on
    ++rare().rx_rnr_ignored;
    return;
  }
  if (config_.rnr_retry != 7) {
    if (q.rnr_left == 0) {
      fail_qp(q, OpStatus::kReceiverNotReady);
      return;
    }
    --q.rnr_left;
  }
  q.rnr_wait = true;
  q.rnr_psn = psn;
  q.rnr_until = now + Time{wire::rnr_timer_us(timer)} * kMicrosecond;
  q.retry_started = false;
  seek(q, psn);
  q.rto_deadline = kNever;  // re-armed by the resend
  deadline_ = std::min(deadline_, q.rnr_until);
}

// NAK PSN sequence error (NOTES.md §2): go back to `psn`, unless the round under way
// already resends it.
void RoceEndpoint::rx_nak_seq(Qp& q, uint32_t psn, Time now) {
  ++counters_.rx_nak_seq;
  if (q.retry_started) {  // rxe started_retry: the round under way resends `psn` (no
                          // progress since it began: a duplicate or reordered NAK)
    ++counters_.rx_nak_seq_ignored;
    if (psn_diff(q.next_psn, q.una) < 0) seek(q, q.una);
    return;
  }
  go_back(q, psn, now);
}

// §3.2 fatal NAK: the WR holding the PSN fails; those behind it are flushed.
void RoceEndpoint::rx_nak_fatal(Qp& q, uint8_t code) {
  ++rare().rx_nak_fatal;
  const auto nak = static_cast<AethNak>(code);
  fail_qp(q, nak == AethNak::kRemoteAccessError ? OpStatus::kRemoteAccessError
             : nak == AethNak::kInvalidRequest  ? OpStatus::kRemoteInvalidRequest
                                                : OpStatus::kPdcClosed);
}

// Requester: an RDMA READ response (§4). Accepted in PSN order only (at una), placed by
// offset; a gap (a lost response) starts a go-back-N that re-issues the READ from una.
void RoceEndpoint::rx_read_response(Qp& q, const wire::Decoded& d, Time now) {
  if (q.state != QpState::kRts) {
    ++rare().rx_qp_error;
    return;
  }
  note_ce(q, d, now);
  const uint32_t psn = d.bth->psn();
  if (psn_diff(psn, q.una) < 0) {  // already placed: a duplicate (old round, network copy)
    ++rare().rx_read_dup;
    return;
  }
  if (psn_diff(psn, q.max_psn) >= 0) {
    ++rare().rx_read_unexpected;
    return;
  }
  Write* const w = read_holding(q, psn);
  if (w == nullptr) {
    ++rare().rx_read_unexpected;  // a response for a PSN that is no read's
    return;
  }
  const auto k = static_cast<uint32_t>(psn_diff(psn, w->first_psn));
  if (psn != q.una && !read_response_at_una(q, psn, k, now)) return;
  if (!read_response_fits(*w, d, k)) {  // dropped; timer recovers
    ++rare().rx_read_unexpected;
    return;
  }
  place_read_response(q, *w, d, psn, k, now);
}

// Requester: an ATOMIC ACKNOWLEDGE (spec/rocev2.md §3.4). Like a read response: accepted at
// una only (earlier responses missing: go back), it implicitly acknowledges what came before
// it; the original value lands at the atomic's result, once (copies behind una are dropped).
void RoceEndpoint::rx_atomic_ack(Qp& q, const wire::Decoded& d, Time now) {
  if (q.state != QpState::kRts) {
    ++rare().rx_qp_error;
    return;
  }
  const uint32_t psn = d.bth->psn();
  if (psn_diff(psn, q.una) < 0) {  // already completed: a replay or a network copy
    ++rare().rx_atomic_ack_dup;
    return;
  }
  // §3.2: an atomic's response is an ACK; NAKs travel as plain ACKNOWLEDGE packets.
  Write* const w = psn_diff(psn, q.max_psn) < 0 && d.aeth->syndrome_type() == AethType::kAck
                       ? read_holding(q, psn, Opcode::kAtomic)
                       : nullptr;
  if (w == nullptr) {
    ++rare().rx_atomic_ack_unexpected;
    return;
  }
  if (psn != q.una && !read_response_at_una(q, psn, 0, now)) return;
  if (w->dst != nullptr) {
    const uint64_t orig = d.atomic_ack_eth->orig_data();  // host order in memory
    std::memcpy(w->dst, &orig, sizeof(orig));
  }
  ++rare().rx_atomic_acks;
  response_taken(q, psn, /*completes=*/true, now);
}

// The WR whose PSNs hold `psn`, if it is a `op` (a read or an atomic); nullptr otherwise.
RoceEndpoint::Write* RoceEndpoint::read_holding(Qp& q, uint32_t psn, Opcode op) {
  uint64_t i = q.write_head;
  for (; i != q.write_started; ++i) {
    const Write& w = q.writes[i];
    const int32_t k = psn_diff(psn, w.first_psn);
    if (k >= 0 && static_cast<uint32_t>(k) < w.packets) break;
  }
  if (i == q.write_started || q.writes[i].op != op) return nullptr;
  return &q.writes[i];
}

// A response ahead of una. IB: a read's first response acknowledges the writes and sends
// before it; anything else ahead of una means responses went missing (false: go back).
bool RoceEndpoint::read_response_at_una(Qp& q, uint32_t psn, uint32_t k, Time now) {
  int r = 0;
  if (k == 0) r = ack_through(q, psn_prev(psn));
  if (r & kAckProgress) restore_retries(q);
  if (psn != q.una) {
    ++rare().rx_read_gap;
    read_gap(q, now);
    return false;
  }
  return true;
}

// The opcode must fit the position (§4): the final response is LAST or ONLY, another FIRST or
// MIDDLE, the first one FIRST or ONLY. A re-issued READ's responses start again with FIRST
// (or ONLY) at the re-issue PSN, and a late response of the older round may still arrive
// there, so FIRST/ONLY and MIDDLE/LAST are both accepted past the first packet.
bool RoceEndpoint::read_response_fits(const Write& w, const wire::Decoded& d, uint32_t k) const {
  const RoceOpcode op = d.bth->opcode();
  const bool last = k + 1 == w.packets;
  const bool op_last =
      op == RoceOpcode::kRcReadResponseLast || op == RoceOpcode::kRcReadResponseOnly;
  const bool op_first =
      op == RoceOpcode::kRcReadResponseFirst || op == RoceOpcode::kRcReadResponseOnly;
  const uint64_t offset = uint64_t{k} * config_.mtu;
  const uint64_t want_len = last ? w.length - offset : config_.mtu;
  return op_last == last && (k != 0 || op_first) && payload_len(d) == want_len;
}

// The response at una is placed at its offset in the read's buffer; the last one completes it.
void RoceEndpoint::place_read_response(Qp& q, Write& w, const wire::Decoded& d, uint32_t psn,
                                       uint32_t k, Time now) {
  const uint64_t offset = uint64_t{k} * config_.mtu;
  const uint64_t len = payload_len(d);
  if (d.elided == 0 && len > 0) std::memcpy(w.dst + offset, d.payload.data(), len);
  ++counters_.rx_read_responses;
  response_taken(q, psn, k + 1 == w.packets, now);
}

// The response at una (a read's or an atomic's) was taken: una passes it, progress restores
// the retry budgets, the last one completes its WR, and the ACK timer restarts.
void RoceEndpoint::response_taken(Qp& q, uint32_t psn, bool completes, Time now) {
  q.una = psn_add(psn, 1);
  restore_retries(q);
  if (completes) complete_through(q, psn);
  if (psn_diff(q.next_psn, q.una) < 0) seek(q, q.una);
  q.rto_deadline = kNever;
  if (q.una != q.max_psn) arm_rto(q, now);
}

// rxe reset_retry_counters: progress restores the retry and RNR budgets and ends the round.
void RoceEndpoint::restore_retries(Qp& q) const noexcept {
  q.retry_left = config_.retry_cnt;
  q.retry_started = false;
  q.rnr_left = config_.rnr_retry;
}

// Acknowledges every PSN through `psn` (an ACK, or what a NAK or read response implies), but
// never past a read or atomic whose responses have not all arrived: an ACK beyond it means
// they were lost (rxe check_psn: COMPST_ERROR_RETRY).
int RoceEndpoint::ack_through(Qp& q, uint32_t psn) {
  uint32_t una = psn_add(psn, 1);
  int r = 0;
  for (uint64_t i = q.write_head; i != q.write_started; ++i) {
    const Write& w = q.writes[i];
    if (awaits_response(w.op)) {
      const uint32_t start = psn_diff(q.una, w.first_psn) > 0 ? q.una : w.first_psn;
      if (psn_diff(una, start) > 0) {
        una = start;
        r |= kAckReadGap;
      }
      break;
    }
    if (psn_diff(psn_add(w.first_psn, w.packets - 1), psn) >= 0) break;  // not all covered
  }
  if (psn_diff(una, q.una) > 0) {
    q.una = una;
    complete_through(q, psn_prev(una));
    r |= kAckProgress;
  }
  return r;
}

// Responses are missing at una: go back and re-issue the READ from there, unless a
// go-back-N under way already does (rxe started_retry).
void RoceEndpoint::read_gap(Qp& q, Time now) {
  if (q.retry_started) {
    if (psn_diff(q.next_psn, q.una) < 0) seek(q, q.una);
    return;
  }
  go_back(q, q.una, now);
}

// Completes, in order, every WR whose last PSN is at or before `psn` (for a read: whose last
// response was placed, since una never passes a read's missing responses).
void RoceEndpoint::complete_through(Qp& q, uint32_t psn) {
  while (q.write_head != q.write_started) {
    const Write& w = q.writes[q.write_head];
    const uint32_t last = psn_add(w.first_psn, w.packets - 1);
    if (psn_diff(last, q.max_psn) >= 0 || psn_diff(last, psn) > 0) break;
    if (awaits_response(w.op)) --q.reads_in_flight;
    complete(w, OpStatus::kSuccess);
    ++q.write_head;
  }
  note_drained(q);
}

}  // namespace uet
