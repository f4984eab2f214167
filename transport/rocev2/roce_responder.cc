// RC responder (rxe, NOTES.md §2): request receive, PSN checks, placement, READ responses,
// atomics and their replay cache.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "transport/rocev2/roce_datapath.h"
#include "transport/wire/stream_copy.h"

namespace uet {

using roce::payload_len;
using roce::psn_add;
using roce::psn_diff;
using wire::AethNak;
using wire::RoceOpcode;

// Responder (NOTES.md §2, rxe check_psn / check_op_seq / check_resource / execute): SEND, WRITE
// (with or without immediate), READ and atomic requests.
void RoceEndpoint::rx_request(Qp& q, const wire::Decoded& d, Time now) {
  ++counters_.rx_data;
  if (q.state != QpState::kRts) {
    ++rare().rx_qp_error;
    return;
  }
  note_ce(q, d, now);
  const uint32_t psn = d.bth->psn();
  if (!check_psn(q, d, psn)) return;
  if (d.bth->opcode() == RoceOpcode::kRcReadRequest) {
    if (q.in_message) {  // §4: a READ request stands alone, never inside a message
      ++rare().rx_invalid_request;
      responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
      return;
    }
    rx_read_request(q, d, psn, /*duplicate=*/false);
    return;
  }
  if (d.atomic_eth != nullptr) {
    if (q.in_message) {  // §4: an atomic stands alone, never inside a message
      ++rare().rx_invalid_request;
      responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
      return;
    }
    rx_atomic_request(q, d, psn, /*duplicate=*/false);
    return;
  }
  const Request r(d);
  if (!check_op_seq(q, r, psn)) return;
  if (r.first && !r.send && !start_write(q, *d.reth, psn)) return;
  if (!check_length(q, r, psn)) return;
  if (!check_recv(q, r, psn)) return;
  if (r.send) {
    if (!place_send(q, d, r, psn)) return;
  } else {
    place_write(q, d, r.len);
  }
  accept_request(q, d, r);
}

// rxe check_psn (NOTES.md §2): only the expected PSN goes on. A duplicate is ACKed again with the
// last in-order PSN and never placed again (a READ is executed again, an atomic answered from
// the replay cache); a gap gets one NAK (PSN sequence error), then silence.
bool RoceEndpoint::check_psn(Qp& q, const wire::Decoded& d, uint32_t psn) {
  const int32_t delta = psn_diff(psn, q.epsn);
  if (delta < 0) {
    ++counters_.rx_duplicates;
    if (d.bth->opcode() == RoceOpcode::kRcReadRequest) {
      rx_read_request(q, d, psn, /*duplicate=*/true);  // reads are executed again
    } else if (d.atomic_eth != nullptr) {
      rx_atomic_request(q, d, psn, /*duplicate=*/true);  // atomics are not
    } else {
      q.ack_pending = true;
    }
    return false;
  }
  if (delta > 0) {
    ++counters_.rx_out_of_order;
    if (!q.nak_latch) {
      q.nak_latch = true;
      q.nak_pending = true;
      q.nak_rnr = false;
      q.nak_code = static_cast<uint8_t>(AethNak::kPsnSeqError);
      q.nak_psn = q.epsn;  // the NAK carries the expected PSN
    }
    return false;
  }
  return true;
}

// §4 opcodes: FIRST and ONLY start a message; LAST, ONLY and every _WITH_IMMEDIATE end one.
RoceEndpoint::Request::Request(const wire::Decoded& d) {
  const RoceOpcode op = d.bth->opcode();
  send = op <= RoceOpcode::kRcSendOnlyImm;
  kind = send ? MsgKind::kSend : MsgKind::kWrite;
  first = op == RoceOpcode::kRcSendFirst || op == RoceOpcode::kRcSendOnly ||
          op == RoceOpcode::kRcSendOnlyImm || op == RoceOpcode::kRcWriteFirst ||
          op == RoceOpcode::kRcWriteOnly || op == RoceOpcode::kRcWriteOnlyImm;
  imm = d.immdt != nullptr;
  last = imm || op == RoceOpcode::kRcSendLast || op == RoceOpcode::kRcSendOnly ||
         op == RoceOpcode::kRcWriteLast || op == RoceOpcode::kRcWriteOnly;
  len = payload_len(d);
}

// rxe check_op_seq: FIRST/ONLY start a message, MIDDLE/LAST continue one of the same kind.
bool RoceEndpoint::check_op_seq(Qp& q, const Request& r, uint32_t psn) {
  if (r.first == q.in_message || (!r.first && q.kind != r.kind)) {
    ++rare().rx_invalid_request;
    responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
    return false;
  }
  return true;
}

// A WRITE's FIRST or ONLY packet (§3.1): its RETH is checked, then says where the message goes.
bool RoceEndpoint::start_write(Qp& q, const wire::Reth& reth, uint32_t psn) {
  if (!reth_access_ok(reth, q.region)) {
    responder_fatal(q, static_cast<uint8_t>(AethNak::kRemoteAccessError), psn);
    return false;
  }
  q.va = reth.va();
  q.remaining = reth.dma_length();
  return true;
}

// RETH access check (§3.1): the R_Key names a region and VA is an offset within it. A
// zero-length access touches no memory and is not checked (IB); `region` is set only when one
// was checked.
bool RoceEndpoint::reth_access_ok(const wire::Reth& reth, uint32_t& region) {
  const uint32_t key = reth.rkey();
  const uint64_t va = reth.va();
  const uint64_t dma = reth.dma_length();
  if (dma == 0) return true;
  const Region* r = regions_.find(key);  // a deregistered region's key is refused
  if (r == nullptr) {
    ++rare().rx_bad_rkey;
    return false;
  }
  if (va > r->length || dma > r->length - va) {
    ++rare().rx_bad_range;
    return false;
  }
  region = Regions::slot_of(key);
  return true;
}

// §4 lengths: FIRST and MIDDLE carry exactly one MTU; LAST and ONLY what remains (a write),
// up to one MTU (a send; SEND LAST at least one byte).
bool RoceEndpoint::check_length(Qp& q, const Request& r, uint32_t psn) {
  bool length_ok;
  if (r.send) {
    length_ok = r.last ? r.len <= config_.mtu && (r.first || r.len > 0) : r.len == config_.mtu;
  } else {
    length_ok = r.last ? r.len == q.remaining && r.len <= config_.mtu
                       : r.len == config_.mtu && r.len < q.remaining;
  }
  if (!length_ok) {
    ++rare().rx_invalid_request;
    responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
    return false;
  }
  return true;
}

// rxe check_resource: a receive buffer, claimed by a SEND's first packet, consumed by a WRITE's
// immediate. None posted: RNR NAK, nothing executed, the PSN stays expected (rxe
// RESPST_ERR_RNR); packets behind it are dropped silently until the requester resends this one.
bool RoceEndpoint::check_recv(Qp& q, const Request& r, uint32_t psn) {
  const bool needs_recv = (r.send && r.first) || (!r.send && r.imm);
  if (needs_recv && recv_head_ == recv_tail_) {
    ++rare().rx_rnr;
    q.nak_latch = true;
    q.nak_pending = true;
    q.nak_rnr = true;
    q.nak_psn = psn;
    return false;
  }
  return true;
}

// A SEND packet lands at its offset in the receive buffer its FIRST claimed.
bool RoceEndpoint::place_send(Qp& q, const wire::Decoded& d, const Request& r, uint32_t psn) {
  if (r.first) {
    q.recv = recvs_[recv_head_++];
    q.recv_claimed = true;
    q.recv_placed = 0;
  }
  if (r.len > q.recv.length - q.recv_placed) {
    // IB local length error: the buffer completes in error with what earlier packets placed,
    // the requester gets NAK invalid request (IB_WC_REM_INV_REQ_ERR), the QP fails.
    ++rare().rx_length_error;
    q.recv_claimed = false;
    complete_recv(q.recv.wr_id, q.peer_ip4, OpStatus::kLengthError, q.recv_placed, false, 0);
    responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
    return false;
  }
  if (d.elided == 0 && r.len > 0) {
    std::memcpy(q.recv.base + q.recv_placed, d.payload.data(), r.len);
  }
  q.recv_placed += r.len;
  return true;
}

// A WRITE packet lands at the message's next VA (§3.1: an offset within the R_Key's region).
void RoceEndpoint::place_write(Qp& q, const wire::Decoded& d, uint64_t len) {
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

// The packet is executed (NOTES.md §2): the expected PSN moves on, the gap's NAK is moot, a LAST
// ends its message, and an ACK is due on AckReq (or every ack_every packets).
void RoceEndpoint::accept_request(Qp& q, const wire::Decoded& d, const Request& r) {
  q.in_message = !r.last;
  q.kind = r.last ? MsgKind::kNone : r.kind;
  ++counters_.rx_placed;
  q.epsn = psn_add(q.epsn, 1);
  ++q.rq_psns;
  if (q.nak_latch) {  // the gap is filled: a NAK not yet sent is moot
    q.nak_latch = false;
    q.nak_pending = false;
  }
  if (r.last) complete_message(q, d, r);
  ++q.unacked;
  if (d.bth->ack_req() || (config_.ack_every != 0 && q.unacked >= config_.ack_every)) {
    q.ack_pending = true;
  }
}

// A message ends (§3.5): the MSN counts it; a SEND completes its buffer, a WRITE with immediate
// consumes one.
void RoceEndpoint::complete_message(Qp& q, const wire::Decoded& d, const Request& r) {
  q.msn = psn_add(q.msn, 1);
  const uint32_t imm_data = r.imm ? d.immdt->imm() : 0;
  if (r.send) {
    ++counters_.rx_sends;
    q.recv_claimed = false;
    complete_recv(q.recv.wr_id, q.peer_ip4, OpStatus::kSuccess, q.recv_placed, r.imm, imm_data);
  } else if (r.imm) {  // IB: RDMA WRITE with immediate consumes a receive WQE, places nothing
    ++counters_.rx_write_imm;
    const RecvBuffer& rb = recvs_[recv_head_++];
    complete_recv(rb.wr_id, q.peer_ip4, OpStatus::kSuccess, 0, true, imm_data);
  }
}

// A READ request (§3.1 RETH): checked, then queued for build_read_response(). It uses one PSN
// per response packet. A duplicate (a re-issue after lost responses, or an old copy) is
// executed again from its own PSN and RETH; queued responses at or after its PSN are dropped
// first, since the requester's go-back-N asks for everything after it again.
void RoceEndpoint::rx_read_request(Qp& q, const wire::Decoded& d, uint32_t psn, bool duplicate) {
  const wire::Reth& reth = *d.reth;
  const uint64_t dma = reth.dma_length();
  const uint64_t packets = std::max<uint64_t>(1, (dma + config_.mtu - 1) / config_.mtu);
  const uint32_t end = psn_add(psn, static_cast<uint32_t>(packets));
  uint32_t region = 0;
  const bool ok_range = reth_access_ok(reth, region);
  if (duplicate) {
    // Only a request that lies within what this QP already executed can be a re-issue; a
    // forged or bad one is dropped (counted above or as a duplicate), never executed.
    if (!ok_range || psn_diff(end, q.epsn) > 0) return;
    drop_responses_from(q, psn);
  } else if (!ok_range) {
    responder_fatal(q, static_cast<uint8_t>(AethNak::kRemoteAccessError), psn);
    return;
  }
  queue_read_response(q, ReadResp{psn, static_cast<uint32_t>(packets), 0, region, reth.va(), dma});
  if (!duplicate) {
    q.epsn = end;
    q.rq_psns += packets;
    q.msn = psn_add(q.msn, 1);
    if (q.nak_latch) {
      q.nak_latch = false;
      q.nak_pending = false;
    }
  }
}

// A re-issue from inside a queued response also replaces it: the requester resends from its
// first missing PSN, so it holds everything before `psn` and the rest of that response would
// only be duplicates -- and keeping it would let the queue outgrow max_rd_atomic (the
// requester's count), failing the next new READ as a resource error.
void RoceEndpoint::drop_responses_from(Qp& q, uint32_t psn) {
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
}

// Queues a READ request's responses behind those already queued (rxe responder resources).
void RoceEndpoint::queue_read_response(Qp& q, const ReadResp& r) {
  if (q.rd_tail - q.rd_head >= config_.max_rd_atomic) {
    // Out of responder resources: recycle the oldest (rxe check_resource: "it is the
    // requester's job to not send too many read/atomic ops"). The requester keeps at most
    // max_rd_atomic reads outstanding and completes them in order, and the queue is in PSN
    // order (a re-issue drops what follows it), so a full queue's head is a replay of a read
    // the requester has already completed -- its first copy got through while a timeout
    // re-issued it. Failing the QP here (NAK invalid request) would fail a healthy READ stream
    // whenever a timeout races a read's first copy.
    ++rare().rx_read_overflow;
    ++q.rd_head;
  }
  // Grows with the requests that arrive, up to max_rd_atomic (NOTES.md §6): a doubling at
  // most log2(max_rd_atomic) + 1 times per QP, then never again.
  q.reads.reserve(q.rd_head, q.rd_tail, q.rd_tail - q.rd_head + 1, config_.max_rd_atomic);
  q.reads[q.rd_tail++] = r;
  if (!r.atomic) ++counters_.rx_read_requests;
}

// An atomic request (spec/rocev2.md §3.3; rxe execute, atomic_reply, duplicate_request). New:
// checked, executed once, its result saved in the replay cache and answered with an ATOMIC
// ACKNOWLEDGE queued behind the read responses (PSN order). A duplicate is answered from the
// cache and never executed again; one older than the cache is dropped (IB class D, as rxe):
// the requester keeps at most max_rd_atomic outstanding, so it has completed that one.
void RoceEndpoint::rx_atomic_request(Qp& q, const wire::Decoded& d, uint32_t psn, bool duplicate) {
  if (duplicate) {
    const AtomicResult* saved = saved_atomic(q, psn);
    if (saved == nullptr) {
      ++rare().rx_atomic_replay_miss;
      return;
    }
    ++rare().rx_atomic_replays;
    drop_responses_from(q, psn);  // go-back-N asks again for everything from psn
    ReadResp r;
    r.first_psn = psn;
    r.packets = 1;
    r.atomic = true;
    r.orig = saved->orig;
    queue_read_response(q, r);
    return;
  }
  const wire::AtomicEth& a = *d.atomic_eth;
  uint32_t region = 0;
  if (!atomic_access_ok(q, a, psn, region)) return;
  const uint64_t orig = execute_atomic(d, regions_[region].base + a.va());
  ++rare().rx_atomics;
  if (q.ar_tail - q.ar_head >= config_.max_rd_atomic) ++q.ar_head;  // the oldest result goes
  q.atomics.reserve(q.ar_head, q.ar_tail, q.ar_tail - q.ar_head + 1, config_.max_rd_atomic);
  q.atomics[q.ar_tail++] = AtomicResult{q.rq_psns, orig};
  ReadResp r;
  r.first_psn = psn;
  r.packets = 1;
  r.region = region;
  r.va = a.va();
  r.length = 8;
  r.atomic = true;
  r.orig = orig;
  queue_read_response(q, r);
  q.epsn = psn_add(q.epsn, 1);
  ++q.rq_psns;
  q.msn = psn_add(q.msn, 1);
  if (q.nak_latch) {
    q.nak_latch = false;
    q.nak_pending = false;
  }
}

// AtomicETH access check (§3.3; rxe check_rkey, then the alignment at execution): the R_Key
// names a region, the 8 bytes at VA lie within it (NAK REMOTE ACCESS ERROR otherwise), and the
// word is 8-byte aligned as a VA and in memory (NAK INVALID REQUEST: rxe
// RESPST_ERR_MISALIGNED_ATOMIC, class C). Either NAK fails the QP, as for a READ.
bool RoceEndpoint::atomic_access_ok(Qp& q, const wire::AtomicEth& a, uint32_t psn,
                                    uint32_t& region) {
  const uint32_t key = a.rkey();
  const uint64_t va = a.va();
  auto nak = AethNak::kRemoteAccessError;
  const Region* r = regions_.find(key);
  if (r == nullptr) {
    ++rare().rx_bad_rkey;
  } else if (va > r->length || 8 > r->length - va) {
    ++rare().rx_bad_range;
  } else if (va % 8 != 0 || reinterpret_cast<uintptr_t>(r->base + va) % 8 != 0) {
    ++rare().rx_atomic_misaligned;
    nak = AethNak::kInvalidRequest;
  } else {
    region = Regions::slot_of(key);
    return true;
  }
  ++rare().rx_atomic_refused;
  responder_fatal(q, static_cast<uint8_t>(nak), psn);
  return false;
}

// §3.3 on the host-order word: FETCH_ADD adds modulo 2^64 (signed and unsigned alike);
// CMP_SWAP stores the swap value when the word equals the compare value. Returns the word's
// original value.
uint64_t RoceEndpoint::execute_atomic(const wire::Decoded& d, uint8_t* word) {
  const wire::AtomicEth& a = *d.atomic_eth;
  uint64_t orig = 0;
  std::memcpy(&orig, word, sizeof(orig));
  uint64_t next = orig;
  if (d.bth->opcode() == RoceOpcode::kRcFetchAdd) {
    next = orig + a.swap_add();
  } else if (orig == a.compare()) {
    next = a.swap_add();
  }
  std::memcpy(word, &next, sizeof(next));
  return orig;
}

// The saved result of the atomic at `psn`, a duplicate (behind epsn), if the replay cache
// still holds it: its PSN is counted back from epsn to a 64-bit position, so an entry from
// before a 24-bit wrap never answers.
const RoceEndpoint::AtomicResult* RoceEndpoint::saved_atomic(const Qp& q, uint32_t psn) const {
  const auto behind = static_cast<uint64_t>(psn_diff(q.epsn, psn));
  if (behind == 0 || behind > q.rq_psns) return nullptr;
  const uint64_t seq = q.rq_psns - behind;
  for (uint64_t i = q.ar_tail; i != q.ar_head; --i) {
    if (q.atomics[i - 1].seq == seq) return &q.atomics[i - 1];
  }
  return nullptr;
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

// §3.4 ATOMIC ACKNOWLEDGE: at the request's PSN, AETH (ACK) and AtomicAckETH with the word's
// original value.
void RoceEndpoint::atomic_response_packet(const ReadResp& r, Packet& p) {
  p.op = RoceOpcode::kRcAtomicAck;
  p.psn = r.first_psn;
  p.aeth = true;
  p.atomic_ack = true;
  p.orig = r.orig;
}

// The next response of the oldest queued request: an atomic's ATOMIC ACKNOWLEDGE, or an RDMA
// READ response (§4: FIRST/MIDDLE/LAST or ONLY, AETH on FIRST, LAST and ONLY), one PSN per
// packet from the request's PSN.
bool RoceEndpoint::build_read_response(Qp& q, Frame& f, Time now) {
  ReadResp& r = q.reads[q.rd_head];
  if (r.atomic) {
    Packet p;
    atomic_response_packet(r, p);
    if (!build_packet(q, f, p)) return false;
    ++rare().tx_atomic_acks;
    ++q.rd_head;
    pace(q, f, now);
    return true;
  }
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

}  // namespace uet
