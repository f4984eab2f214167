// Data path of the RoCEv2 engine: rx(), tx(). No allocation, no per-packet virtual call.
// Comments cite spec/rocev2.md (wire) and research/rocev2-wireshark.md §2 (RC behaviour as rxe
// implements it) and §3 (DCQCN).
#include <algorithm>
#include <cstring>

#include "transport/rocev2/roce_datapath.h"
#include "transport/wire/stream_copy.h"

namespace uet {

using roce::kCreditsUnlimited;
using roce::kFrameOverhead;
using roce::payload_len;
using roce::psn_add;
using roce::psn_diff;
using roce::psn_prev;
using wire::AethNak;
using wire::AethType;
using wire::RoceOpcode;

// DCQCN: pace at the current rate; at line rate the NIC's own link is the pacer.
void RoceEndpoint::pace(Qp& q, const Frame& f, Time now) {
  q.cc.on_sent(f.bytes_on_wire(), now);
  if (q.cc.limited()) {
    q.next_send = std::max(now, q.next_send) + q.cc.gap(f.bytes_on_wire() + kFrameOverhead);
    if (has_data(q) || q.rd_head != q.rd_tail) deadline_ = std::min(deadline_, q.next_send);
  }
}

// The packet at the go-back-N cursor. A packet that is not the first of its message is a
// MIDDLE or LAST without RETH, also when go-back-N resumes mid-message (as rxe does, §2.1).
// A READ resumed at response k is a new READ REQUEST at PSN first + k with the RETH advanced
// by k MTUs (IB: the requester re-issues the read from the first missing response).
bool RoceEndpoint::build_data(Qp& q, Frame& f, Time now) {
  Write& w = q.writes[q.send_write];
  const uint32_t k = q.send_packet;
  const uint64_t offset = uint64_t{k} * config_.mtu;
  const bool fresh = q.send_write == q.write_started;  // first transmission of this WR
  Packet p;
  p.psn = q.next_psn;
  bool last = true;
  if (w.op == Opcode::kRead) {
    p.op = RoceOpcode::kRcReadRequest;
    p.ack_req = true;
    p.reth = true;
    p.va = w.remote_offset + offset;
    p.rkey = w.rkey;
    p.dma_length = static_cast<uint32_t>(w.length - offset);
  } else {
    p.len = static_cast<uint32_t>(std::min<uint64_t>(config_.mtu, w.length - offset));
    const bool first = k == 0;
    last = k + 1 == w.packets;
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
    p.imm_data = w.imm;
    p.payload = p.len > 0 ? w.src + offset : nullptr;
    // AckReq on the last packet of a message and at least every ack_req_every packets.
    p.ack_req = last || q.since_ack_req + 1 >= config_.ack_req_every;
  }
  if (!build_packet(q, f, p)) return false;
  ++q.since_ack_req;
  if (p.ack_req) q.since_ack_req = 0;

  // Advance the cursor.
  if (fresh) {
    w.first_psn = q.next_psn;
    ++q.write_started;
    if (w.op == Opcode::kRead) {
      ++q.reads_in_flight;
      ++counters_.tx_reads;
    }
  }
  if (psn_diff(q.next_psn, q.max_psn) < 0) {
    ++counters_.tx_retx;
    counters_.bytes_resent += p.len;
    if (w.op == Opcode::kRead) ++counters_.read_reissues;
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
  if (q.rto_deadline == kNever) arm_rto(q, now);
  pace(q, f, now);
  return true;
}

// The next RDMA READ response of the oldest queued request (§4: FIRST/MIDDLE/LAST or ONLY,
// AETH on FIRST, LAST and ONLY), one PSN per packet from the request's PSN.
bool RoceEndpoint::build_read_response(Qp& q, Frame& f, Time now) {
  ReadResp& r = q.reads[q.rd_head];
  const uint32_t k = r.sent;
  const uint64_t offset = uint64_t{k} * config_.mtu;
  Packet p;
  p.psn = psn_add(r.first_psn, k);
  p.len = static_cast<uint32_t>(std::min<uint64_t>(config_.mtu, r.length - offset));
  const bool first = k == 0, last = k + 1 == r.packets;
  p.op = first ? (last ? RoceOpcode::kRcReadResponseOnly : RoceOpcode::kRcReadResponseFirst)
               : (last ? RoceOpcode::kRcReadResponseLast : RoceOpcode::kRcReadResponseMiddle);
  p.aeth = first || last;
  p.payload = p.len > 0 ? regions_[r.region].base + r.va + offset : nullptr;
  if (!build_packet(q, f, p)) return false;
  ++counters_.tx_read_responses;
  if (++r.sent == r.packets) ++q.rd_head;
  pace(q, f, now);
  return true;
}

// ------------------------------------------------------------------------------ rx

void RoceEndpoint::rx(std::span<Frame* const> frames, Time now) {
  for (const Frame* f : frames) rx_one(*f, now);
  if (streamed_) {  // placed bytes visible before anything this burst caused is sent
    wire::stream_fence();
    streamed_ = false;
  }
}

void RoceEndpoint::rx_one(const Frame& f, Time now) {
  wire::DecodedStorage decoded;  // decode_frame constructs it
  wire::DecodeOptions opts;
  opts.elided = f.wire_len > f.len ? f.wire_len - f.len : 0;  // payload carried by length
  opts.header_stack = false;  // the engine reads the named headers only
  if (f.checksums_ok) opts.verify_ip_checksum = false;  // the host did
  if (config_.icrc_offload) opts.verify_icrc = false;    // the NIC did
  const wire::WireError err =
      wire::decode_frame(std::span<const uint8_t>(f.data, f.len), decoded.slot(), opts);
  const wire::Decoded& d = decoded.get();
  if (err != wire::WireError::kOk) {  // §7: the decoder verifies the ICRC (rule 8)
    counters_.wire.add(err);
    ++counters_.rx_malformed;
    if (err == wire::WireError::kBadIcrc) ++counters_.rx_bad_icrc;
    return;
  }
  if (d.protocol != wire::Protocol::kRoce || d.ipv4 == nullptr ||
      d.ipv4->dst() != config_.local_ip4) {
    ++counters_.rx_not_ours;
    return;
  }
  // DestQP is an index: no look-up. Out of range, never allocated or reset: the same drop.
  Qp* const qp = qp_at(d.bth->dest_qp() - config_.qpn_base);
  if (qp == nullptr || qp->state == QpState::kReset || qp->peer_ip4 != d.ipv4->src()) {
    ++counters_.rx_unknown_qp;
    return;
  }
  Qp& q = *qp;
  mark_ready(q);
  switch (d.bth->opcode()) {
    case RoceOpcode::kRcSendFirst:
    case RoceOpcode::kRcSendMiddle:
    case RoceOpcode::kRcSendLast:
    case RoceOpcode::kRcSendLastImm:
    case RoceOpcode::kRcSendOnly:
    case RoceOpcode::kRcSendOnlyImm:
    case RoceOpcode::kRcWriteFirst:
    case RoceOpcode::kRcWriteMiddle:
    case RoceOpcode::kRcWriteLast:
    case RoceOpcode::kRcWriteLastImm:
    case RoceOpcode::kRcWriteOnly:
    case RoceOpcode::kRcWriteOnlyImm:
    case RoceOpcode::kRcReadRequest:
      rx_request(q, d, now);
      break;
    case RoceOpcode::kRcReadResponseFirst:
    case RoceOpcode::kRcReadResponseMiddle:
    case RoceOpcode::kRcReadResponseLast:
    case RoceOpcode::kRcReadResponseOnly:
      rx_read_response(q, d, now);
      break;
    case RoceOpcode::kRcAck:
      rx_ack(q, d, now);
      break;
    case RoceOpcode::kCnp:
      rx_cnp(q, now);
      break;
    default:
      ++counters_.rx_unsupported;
      break;
  }
}

// Responder (§2.1, rxe check_psn / check_op_seq / check_resource / execute): SEND, WRITE
// (with or without immediate) and READ requests.
void RoceEndpoint::rx_request(Qp& q, const wire::Decoded& d, Time now) {
  ++counters_.rx_data;
  if (q.state != QpState::kRts) {
    ++counters_.rx_qp_error;
    return;
  }
  note_ce(q, d, now);
  const RoceOpcode op = d.bth->opcode();
  const uint32_t psn = d.bth->psn();
  const int32_t delta = psn_diff(psn, q.epsn);
  if (delta < 0) {  // duplicate: ACK again with the last in-order PSN, never place again
    ++counters_.rx_duplicates;
    if (op == RoceOpcode::kRcReadRequest) {
      rx_read_request(q, d, psn, /*duplicate=*/true);  // reads are executed again
    } else {
      q.ack_pending = true;
    }
    return;
  }
  if (delta > 0) {  // a gap: one NAK (PSN sequence error) per gap, then silence
    ++counters_.rx_out_of_order;
    if (!q.nak_latch) {
      q.nak_latch = true;
      q.nak_pending = true;
      q.nak_rnr = false;
      q.nak_code = static_cast<uint8_t>(AethNak::kPsnSeqError);
      q.nak_psn = q.epsn;  // the NAK carries the expected PSN
    }
    return;
  }

  // In order. Opcode sequence: FIRST/ONLY start a message, MIDDLE/LAST continue one of the
  // same kind; a READ request stands alone.
  if (op == RoceOpcode::kRcReadRequest) {
    if (q.in_message) {
      ++counters_.rx_invalid_request;
      responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
      return;
    }
    rx_read_request(q, d, psn, /*duplicate=*/false);
    return;
  }
  const bool send = op <= RoceOpcode::kRcSendOnlyImm;
  const MsgKind kind = send ? MsgKind::kSend : MsgKind::kWrite;
  const bool first = op == RoceOpcode::kRcSendFirst || op == RoceOpcode::kRcSendOnly ||
                     op == RoceOpcode::kRcSendOnlyImm || op == RoceOpcode::kRcWriteFirst ||
                     op == RoceOpcode::kRcWriteOnly || op == RoceOpcode::kRcWriteOnlyImm;
  const bool imm = d.immdt != nullptr;
  const bool last = imm || op == RoceOpcode::kRcSendLast || op == RoceOpcode::kRcSendOnly ||
                    op == RoceOpcode::kRcWriteLast || op == RoceOpcode::kRcWriteOnly;
  const uint64_t len = payload_len(d);
  if (first == q.in_message || (!first && q.kind != kind)) {
    ++counters_.rx_invalid_request;
    responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
    return;
  }
  if (first && !send) {
    // RETH access check: the R_Key names a region, VA is an offset within it. A zero-length
    // write (with immediate) touches no memory and is not checked (IB).
    const uint32_t key = d.reth->rkey();
    const uint64_t va = d.reth->va();
    const uint64_t dma = d.reth->dma_length();
    if (dma > 0) {
      if (key == 0 || key > regions_.size()) {
        ++counters_.rx_bad_rkey;
        responder_fatal(q, static_cast<uint8_t>(AethNak::kRemoteAccessError), psn);
        return;
      }
      const Region& r = regions_[key - 1];
      if (va > r.length || dma > r.length - va) {
        ++counters_.rx_bad_range;
        responder_fatal(q, static_cast<uint8_t>(AethNak::kRemoteAccessError), psn);
        return;
      }
      q.region = key - 1;
    }
    q.va = va;
    q.remaining = dma;
  }
  // Lengths: FIRST and MIDDLE carry exactly one MTU; LAST and ONLY what remains (a write),
  // up to one MTU (a send; SEND LAST at least one byte).
  bool length_ok;
  if (send) {
    length_ok = last ? len <= config_.mtu && (first || len > 0) : len == config_.mtu;
  } else {
    length_ok =
        last ? len == q.remaining && len <= config_.mtu : len == config_.mtu && len < q.remaining;
  }
  if (!length_ok) {
    ++counters_.rx_invalid_request;
    responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
    return;
  }
  // A receive buffer: claimed by a SEND's first packet, consumed by a WRITE's immediate. None
  // posted: RNR NAK, nothing executed, the PSN stays expected (rxe RESPST_ERR_RNR); packets
  // behind it are dropped silently until the requester resends this one.
  const bool needs_recv = (send && first) || (!send && imm);
  if (needs_recv && recv_head_ == recv_tail_) {
    ++counters_.rx_rnr;
    q.nak_latch = true;
    q.nak_pending = true;
    q.nak_rnr = true;
    q.nak_psn = psn;
    return;
  }
  if (send) {
    if (first) {
      q.recv = recvs_[recv_head_++];
      q.recv_claimed = true;
      q.recv_placed = 0;
    }
    if (len > q.recv.length - q.recv_placed) {
      // IB local length error: the buffer completes in error with what earlier packets placed,
      // the requester gets NAK invalid request (IB_WC_REM_INV_REQ_ERR), the QP fails.
      ++counters_.rx_length_error;
      q.recv_claimed = false;
      complete_recv(q.recv.wr_id, q.peer_ip4, OpStatus::kLengthError, q.recv_placed, false, 0);
      responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
      return;
    }
    if (d.elided == 0 && len > 0) std::memcpy(q.recv.base + q.recv_placed, d.payload.data(), len);
    q.recv_placed += len;
  } else {
    if (d.elided == 0 && len > 0) {
      const Region& r = regions_[q.region];
      if (r.stream) {
        wire::stream_copy(r.base + q.va, d.payload.data(), len);
        streamed_ = true;
      } else {
        std::memcpy(r.base + q.va, d.payload.data(), len);
      }
    }
    q.va += len;
    q.remaining -= len;
  }
  q.in_message = !last;
  q.kind = last ? MsgKind::kNone : kind;
  ++counters_.rx_placed;
  q.epsn = psn_add(q.epsn, 1);
  if (q.nak_latch) {  // the gap is filled: a NAK not yet sent is moot
    q.nak_latch = false;
    q.nak_pending = false;
  }
  if (last) {
    q.msn = psn_add(q.msn, 1);
    const uint32_t imm_data = imm ? d.immdt->imm() : 0;
    if (send) {
      ++counters_.rx_sends;
      q.recv_claimed = false;
      complete_recv(q.recv.wr_id, q.peer_ip4, OpStatus::kSuccess, q.recv_placed, imm, imm_data);
    } else if (imm) {  // IB: RDMA WRITE with immediate consumes a receive WQE, places nothing
      ++counters_.rx_write_imm;
      const RecvBuffer& rb = recvs_[recv_head_++];
      complete_recv(rb.wr_id, q.peer_ip4, OpStatus::kSuccess, 0, true, imm_data);
    }
  }
  ++q.unacked;
  if (d.bth->ack_req() || (config_.ack_every != 0 && q.unacked >= config_.ack_every)) {
    q.ack_pending = true;
  }
}

// A READ request (§3.1 RETH): checked, then queued for build_read_response(). It uses one PSN
// per response packet. A duplicate (a re-issue after lost responses, or an old copy) is
// executed again from its own PSN and RETH; queued responses at or after its PSN are dropped
// first, since the requester's go-back-N asks for everything after it again.
void RoceEndpoint::rx_read_request(Qp& q, const wire::Decoded& d, uint32_t psn, bool duplicate) {
  const uint32_t key = d.reth->rkey();
  const uint64_t va = d.reth->va();
  const uint64_t dma = d.reth->dma_length();
  const uint64_t packets = std::max<uint64_t>(1, (dma + config_.mtu - 1) / config_.mtu);
  const uint32_t end = psn_add(psn, static_cast<uint32_t>(packets));
  bool ok_range = true;
  uint32_t region = 0;
  if (dma > 0) {
    if (key == 0 || key > regions_.size()) {
      ++counters_.rx_bad_rkey;
      ok_range = false;
    } else {
      const Region& r = regions_[key - 1];
      if (va > r.length || dma > r.length - va) {
        ++counters_.rx_bad_range;
        ok_range = false;
      }
      region = key - 1;
    }
  }
  if (duplicate) {
    // Only a request that lies within what this QP already executed can be a re-issue; a
    // forged or bad one is dropped (counted above or as a duplicate), never executed.
    if (!ok_range || psn_diff(end, q.epsn) > 0) return;
    // A re-issue from inside a queued response also replaces it: the requester resends
    // from its first missing PSN, so it holds everything before `psn` and the rest of that
    // response would only be duplicates -- and keeping it would let the queue outgrow
    // max_rd_atomic (the requester's count), failing the next new READ as a resource error.
    while (q.rd_tail != q.rd_head) {
      const ReadResp& t = q.reads[(q.rd_tail - 1)];
      const int32_t at = psn_diff(psn, t.first_psn);
      if (at <= 0 || static_cast<uint32_t>(at) < t.packets) {
        --q.rd_tail;
        if (at > 0) break;
        continue;
      }
      break;
    }
  } else if (!ok_range) {
    responder_fatal(q, static_cast<uint8_t>(AethNak::kRemoteAccessError), psn);
    return;
  }
  if (q.rd_tail - q.rd_head >= config_.max_rd_atomic) {
    // Out of responder resources: recycle the oldest (rxe check_resource: "it is the
    // requester's job to not send too many read/atomic ops"). The requester keeps at most
    // max_rd_atomic reads outstanding and completes them in order, and the queue is in PSN
    // order (a re-issue drops what follows it), so a full queue's head is a replay of a read
    // the requester has already completed -- its first copy got through while a timeout
    // re-issued it. Failing the QP here (NAK invalid request) would fail a healthy READ stream
    // whenever a timeout races a read's first copy.
    ++counters_.rx_read_overflow;
    ++q.rd_head;
  }
  ReadResp& r = q.reads[q.rd_tail++];
  r = ReadResp{psn, static_cast<uint32_t>(packets), 0, region, va, dma};
  ++counters_.rx_read_requests;
  if (!duplicate) {
    q.epsn = end;
    q.msn = psn_add(q.msn, 1);
    if (q.nak_latch) {
      q.nak_latch = false;
      q.nak_pending = false;
    }
  }
}

// A request the responder cannot execute: NAK it and move the QP to the error state (rxe
// does so for access and invalid-request errors). The NAK still goes out.
void RoceEndpoint::responder_fatal(Qp& q, uint8_t nak_code, uint32_t psn) {
  fail_qp(q, OpStatus::kFlushed);
  q.nak_pending = true;
  q.nak_rnr = false;
  q.nak_code = nak_code;
  q.nak_psn = psn;
}

// Requester: an RDMA READ response (§4). Accepted in PSN order only (at una), placed by
// offset; a gap (a lost response) starts a go-back-N that re-issues the READ from una.
void RoceEndpoint::rx_read_response(Qp& q, const wire::Decoded& d, Time now) {
  if (q.state != QpState::kRts) {
    ++counters_.rx_qp_error;
    return;
  }
  note_ce(q, d, now);
  const uint32_t psn = d.bth->psn();
  if (psn_diff(psn, q.una) < 0) {  // already placed: a duplicate (old round, network copy)
    ++counters_.rx_read_dup;
    return;
  }
  if (psn_diff(psn, q.max_psn) >= 0) {
    ++counters_.rx_read_unexpected;
    return;
  }
  uint64_t i = q.write_head;
  for (; i != q.write_started; ++i) {
    const Write& w = q.writes[i];
    const int32_t k = psn_diff(psn, w.first_psn);
    if (k >= 0 && static_cast<uint32_t>(k) < w.packets) break;
  }
  if (i == q.write_started || q.writes[i].op != Opcode::kRead) {
    ++counters_.rx_read_unexpected;  // a response for a PSN that is no read's
    return;
  }
  Write& w = q.writes[i];
  const auto k = static_cast<uint32_t>(psn_diff(psn, w.first_psn));
  if (psn != q.una) {
    // IB: a read's first response acknowledges the writes and sends before it; anything else
    // ahead of una means responses went missing.
    int r = 0;
    if (k == 0) r = ack_through(q, psn_prev(psn));
    if (r & kAckProgress) {
      q.retry_left = config_.retry_cnt;
      q.retry_started = false;
      q.rnr_left = config_.rnr_retry;
    }
    if (psn != q.una) {
      ++counters_.rx_read_gap;
      read_gap(q, now);
      return;
    }
  }
  // The opcode must fit the position: the final response is LAST or ONLY, another FIRST or
  // MIDDLE, the first one FIRST or ONLY. A re-issued READ's responses start again with FIRST
  // (or ONLY) at the re-issue PSN, and a late response of the older round may still arrive
  // there, so FIRST/ONLY and MIDDLE/LAST are both accepted past the first packet.
  const RoceOpcode op = d.bth->opcode();
  const bool last = k + 1 == w.packets;
  const bool op_last = op == RoceOpcode::kRcReadResponseLast ||
                       op == RoceOpcode::kRcReadResponseOnly;
  const bool op_first = op == RoceOpcode::kRcReadResponseFirst ||
                        op == RoceOpcode::kRcReadResponseOnly;
  const uint64_t offset = uint64_t{k} * config_.mtu;
  const uint64_t want_len = last ? w.length - offset : config_.mtu;
  const uint64_t len = payload_len(d);
  if (op_last != last || (k == 0 && !op_first) || len != want_len) {  // dropped; timer recovers
    ++counters_.rx_read_unexpected;
    return;
  }
  if (d.elided == 0 && len > 0) std::memcpy(w.dst + offset, d.payload.data(), len);
  ++counters_.rx_read_responses;
  q.una = psn_add(psn, 1);
  q.retry_left = config_.retry_cnt;
  q.retry_started = false;
  q.rnr_left = config_.rnr_retry;
  if (last) complete_through(q, psn);
  if (psn_diff(q.next_psn, q.una) < 0) seek(q, q.una);
  q.rto_deadline = kNever;
  if (q.una != q.max_psn) arm_rto(q, now);
}

// Acknowledges every PSN through `psn` (an ACK, or what a NAK or read response implies), but
// never past a read whose responses have not all arrived: an ACK beyond it means they were
// lost (rxe check_psn: COMPST_ERROR_RETRY).
int RoceEndpoint::ack_through(Qp& q, uint32_t psn) {
  uint32_t una = psn_add(psn, 1);
  int r = 0;
  for (uint64_t i = q.write_head; i != q.write_started; ++i) {
    const Write& w = q.writes[i];
    if (w.op == Opcode::kRead) {
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

// Requester (§2.1, rxe check_psn / check_ack): ACKs, NAKs, RNR NAKs.
void RoceEndpoint::rx_ack(Qp& q, const wire::Decoded& d, Time now) {
  if (q.state != QpState::kRts) {
    ++counters_.rx_qp_error;
    return;
  }
  const uint32_t psn = d.bth->psn();
  const wire::Aeth& a = *d.aeth;
  const AethType type = a.syndrome_type();
  if (type == AethType::kAck) {
    // Coalesced: acknowledges every PSN up to and including `psn`, which must be in
    // [una - 1, max_psn - 1].
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
      ++counters_.rx_read_gap;
      q.retry_started = was_started && !(r & kAckProgress);
      read_gap(q, now);
      return;
    }
    if (!(r & kAckProgress)) return;  // no progress: the timer keeps running
    // Lost ACKs and a timeout can leave the cursor behind what the peer already has.
    if (psn_diff(q.next_psn, q.una) < 0) seek(q, q.una);
    q.rto_deadline = kNever;
    if (q.una != q.max_psn) arm_rto(q, now);
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
  const bool fatal = type == AethType::kNak &&
                     a.syndrome_value() != static_cast<uint8_t>(AethNak::kPsnSeqError);
  if (psn != q.una) {
    // Progress: the peer has everything before `psn`. Like an ACK, that restores the retry
    // budget, and it ends the round under way (it got past its start): this NAK names a
    // new gap and starts a new round. [choice] rxe keeps its round until a work request
    // completes and so waits for the ACK timeout (ms) on every loss inside a round;
    // recovering from the NAK is what RNICs' go-back-N is for, and not doing it would
    // make the comparison a strawman.
    const int r = ack_through(q, psn_prev(psn));
    if (r & kAckProgress) {
      q.retry_started = false;
      q.retry_left = config_.retry_cnt;
      q.rnr_left = config_.rnr_retry;
    }
    if ((r & kAckReadGap) && !fatal) {  // responses of an earlier read are missing: resend
      ++counters_.rx_read_gap;
      read_gap(q, now);
      return;
    }
  }
  if (type == AethType::kRnrNak) {
    // §3.2: the responder had no receive buffer for the request at `psn`. Wait the coded time,
    // then resend from `psn`; rnr_retry times per stall (7: for ever), then kReceiverNotReady.
    ++counters_.rx_rnr_naks;
    if (q.rnr_wait && q.rnr_psn == psn) {  // a copy for the stall already waited on
      ++counters_.rx_rnr_ignored;
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
    q.rnr_until = now + Time{wire::rnr_timer_us(a.syndrome_value())} * kMicrosecond;
    q.retry_started = false;
    seek(q, psn);
    q.rto_deadline = kNever;  // re-armed by the resend
    deadline_ = std::min(deadline_, q.rnr_until);
    return;
  }
  if (a.syndrome_value() == static_cast<uint8_t>(AethNak::kPsnSeqError)) {
    ++counters_.rx_nak_seq;
    if (q.retry_started) {  // rxe started_retry: the round under way resends `psn` (no
                            // progress since it began: a duplicate or reordered NAK)
      ++counters_.rx_nak_seq_ignored;
      if (psn_diff(q.next_psn, q.una) < 0) seek(q, q.una);
      return;
    }
    go_back(q, psn, now);
    return;
  }
  // Fatal: the WR holding `psn` fails; those behind it are flushed.
  ++counters_.rx_nak_fatal;
  const auto code = static_cast<AethNak>(a.syndrome_value());
  fail_qp(q, code == AethNak::kRemoteAccessError  ? OpStatus::kRemoteAccessError
             : code == AethNak::kInvalidRequest ? OpStatus::kRemoteInvalidRequest
                                                : OpStatus::kPdcClosed);
}

// Reaction point: DCQCN cuts the QP's rate (dcqcn.h).
void RoceEndpoint::rx_cnp(Qp& q, Time now) {
  ++counters_.rx_cnps;
  if (q.state != QpState::kRts) return;
  q.cc.on_cnp(now);
  deadline_ = std::min(deadline_, q.cc.next_event());
}

// Completes, in order, every WR whose last PSN is at or before `psn` (for a read: whose last
// response was placed, since una never passes a read's missing responses).
void RoceEndpoint::complete_through(Qp& q, uint32_t psn) {
  while (q.write_head != q.write_started) {
    const Write& w = q.writes[q.write_head];
    const uint32_t last = psn_add(w.first_psn, w.packets - 1);
    if (psn_diff(last, q.max_psn) >= 0 || psn_diff(last, psn) > 0) break;
    if (w.op == Opcode::kRead) --q.reads_in_flight;
    complete(w, OpStatus::kSuccess);
    ++q.write_head;
  }
}

// ------------------------------------------------------------------------------ tx
// One frame from QP q, most urgent first: NAK, ACK, CNP, then data as the pacer allows.
// Read responses go first: an ACK or NAK names PSNs after them and must not overtake them.
bool RoceEndpoint::tx_one(Qp& q, Frame& f, Time now) {
  if (q.rd_head != q.rd_tail) {
    if (!q.cc.limited() || now >= q.next_send) return build_read_response(q, f, now);
    ++counters_.pacing_waits;
    deadline_ = std::min(deadline_, q.next_send);
    if (!q.cnp_pending || !build_cnp(q, f)) return false;
    q.cnp_pending = false;
    ++counters_.tx_cnps;
    return true;
  }
  if (q.nak_pending) {
    // A NAK acknowledges what came before it; a coalesced ACK is folded into it.
    const bool rnr = q.nak_rnr;
    if (!build_ack(q, f, rnr ? AethType::kRnrNak : AethType::kNak,
                   rnr ? config_.min_rnr_timer : q.nak_code, q.nak_psn)) {
      return false;
    }
    q.nak_pending = false;
    q.ack_pending = false;
    q.unacked = 0;
    ++counters_.tx_naks;
    if (rnr) ++counters_.tx_rnr_naks;
    return true;
  }
  if (q.ack_pending) {
    if (!build_ack(q, f, AethType::kAck, kCreditsUnlimited, psn_prev(q.epsn))) return false;
    q.ack_pending = false;
    q.unacked = 0;
    ++counters_.tx_acks;
    return true;
  }
  if (q.cnp_pending) {
    if (!build_cnp(q, f)) return false;
    q.cnp_pending = false;
    ++counters_.tx_cnps;
    return true;
  }
  if (q.rnr_wait) {  // an RNR NAK's timer: resend from its PSN when it ends
    if (q.state != QpState::kRts) return false;
    if (now < q.rnr_until) {
      deadline_ = std::min(deadline_, q.rnr_until);
      return false;
    }
    q.rnr_wait = false;
    ++counters_.rnr_retries;
  }
  if (!has_data(q)) return false;
  if (q.send_write == q.write_started && q.reads_in_flight >= config_.max_rd_atomic &&
      q.writes[q.send_write].op == Opcode::kRead) {
    ++counters_.read_waits;  // max_rd_atomic reads outstanding: this one (and all behind) waits
    return false;
  }
  if (q.cc.limited() && now < q.next_send) {
    ++counters_.pacing_waits;
    deadline_ = std::min(deadline_, q.next_send);
    return false;
  }
  return build_data(q, f, now);
}

size_t RoceEndpoint::tx(std::span<Frame* const> out, Time now) {
  size_t n = 0;
  // Round robin: one frame per QP per turn, until a whole turn finds nothing. QPs whose ready
  // bit is clear are passed over as if visited (each counts as idle): the same order and
  // frames as visiting them.
  size_t idle = 0;
  while (n < out.size() && idle < active_.size()) {
    if (rr_ >= active_.size()) rr_ = 0;
    if (!ready_.skip_idle(rr_, idle, active_.size())) break;  // the turn ends among idle QPs
    if (rr_ >= active_.size()) continue;
    const uint32_t at = rr_++;
    Qp& q = *active_[at];
    ++counters_.tx_qp_visits;
    if (tx_one(q, *out[n], now)) {
      ++n;
      idle = 0;
    } else {
      ++idle;
      if (!tx_may_act(q)) ready_.clear(at);
    }
  }
  return n;
}

// Whether tx_one() could act on `q` later with nothing else changing it: each branch that
// sends or counts, its time conditions (pacing, the RNR timer) taken as met.
bool RoceEndpoint::tx_may_act(const Qp& q) const noexcept {
  return q.rd_head != q.rd_tail || q.nak_pending || q.ack_pending || q.cnp_pending ||
         (q.rnr_wait && q.state == QpState::kRts) || has_data(q);
}

}  // namespace uet
