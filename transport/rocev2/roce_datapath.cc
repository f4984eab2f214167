// Data path of the RoCEv2 engine: rx(), tx(), on_timer(). No allocation, no per-packet
// virtual call. Comments cite spec/rocev2.md (wire) and research/rocev2-wireshark.md §2 (RC
// behaviour as rxe implements it) and §3 (DCQCN).
#include <algorithm>
#include <cstring>

#include "transport/rocev2/psn.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/wire/checksum.h"

namespace uet {

using roce::psn_add;
using roce::psn_diff;
using roce::psn_prev;
using wire::AethNak;
using wire::AethType;
using wire::RoceOpcode;

namespace {

constexpr uint8_t kEct0 = 2;
constexpr uint8_t kCe = 3;
constexpr uint8_t kCreditsUnlimited = ROCEV2_AETH_CREDITS_UNLIMITED;  // §3.2: rxe always sends it
constexpr uint32_t kFrameOverhead = 24;  // preamble, inter-frame gap and FCS, for the pacer

constexpr size_t kEncapSize = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize;

// Finishes a frame; `elided` bytes travel by length only (IP and UDP lengths count them).
bool finish_frame(wire::FrameBuilder& b, Frame& f, uint32_t elided = 0) {
  size_t n = 0;
  if (b.finish(&n) != wire::WireError::kOk) return false;
  f.len = static_cast<uint32_t>(n);
  f.wire_len = 0;
  if (elided > 0) {
    f.wire_len = f.len + elided;
    wire::Ipv4* ip = wire::as<wire::Ipv4>(f.data + wire::Ethernet::kSize);
    ip->set_total_length(static_cast<uint16_t>(ip->total_length() + elided));
    ip->set_checksum(wire::ipv4_header_checksum(ip->raw, wire::Ipv4::kSize));
    wire::Udp* udp = wire::as<wire::Udp>(f.data + wire::Ethernet::kSize + wire::Ipv4::kSize);
    udp->set_length(static_cast<uint16_t>(udp->length() + elided));
  }
  return true;
}

}  // namespace

// ------------------------------------------------------------------------------ frames

// spec/rocev2.md §1: one UDP source port per QP, destination 4791, UDP checksum 0, ICRC.
wire::Encap RoceEndpoint::encap_for(const Qp& q, uint8_t dscp, uint8_t ecn) const {
  wire::Encap e;
  e.src_mac = config_.local_mac;
  e.dst_mac = q.peer_mac;
  e.src_ip4 = config_.local_ip4;
  e.dst_ip4 = q.peer_ip4;
  e.dscp = dscp;
  e.ecn = ecn;
  e.sport = q.sport;
  e.dport = wire::kRoceUdpPort;
  e.udp_checksum = false;
  e.icrc = true;
  return e;
}

// The packet at the go-back-N cursor. A packet that is not the first of its message is a
// MIDDLE or LAST without RETH, also when go-back-N resumes mid-message (as rxe does, §2.1).
bool RoceEndpoint::build_data(Qp& q, Frame& f, Time now) {
  Write& w = q.writes[q.send_write % config_.max_writes];
  const uint32_t k = q.send_packet;
  const uint64_t offset = uint64_t{k} * config_.mtu;
  const auto len = static_cast<uint32_t>(std::min<uint64_t>(config_.mtu, w.wr.length - offset));
  const bool first = k == 0;
  const bool last = k + 1 == w.packets;
  const RoceOpcode op = first ? (last ? RoceOpcode::kRcWriteOnly : RoceOpcode::kRcWriteFirst)
                              : (last ? RoceOpcode::kRcWriteLast : RoceOpcode::kRcWriteMiddle);
  const uint32_t pad = (4 - len % 4) % 4;  // §2: payload padded to a multiple of 4
  const size_t headers = kEncapSize + wire::Bth::kSize + (first ? wire::Reth::kSize : 0);
  // A frame too small for the packet carries its headers only, and the payload, pad and ICRC
  // by length (Frame::wire_len: the simulator at scale). No ICRC can be computed then.
  const bool elide = headers + len + pad + wire::kIcrcSize > f.capacity;
  if (headers > f.capacity) {
    ++counters_.tx_no_room;
    return false;
  }
  wire::Encap encap = encap_for(q, config_.dscp_data, config_.ect ? kEct0 : 0);
  encap.icrc = !elide;
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), encap);
  wire::Bth* bth = b.add<wire::Bth>();
  wire::Reth* reth = first ? b.add<wire::Reth>() : nullptr;
  uint8_t* payload = elide ? nullptr : b.add_bytes(len + pad);
  if (bth == nullptr || (!elide && payload == nullptr)) {
    ++counters_.tx_no_room;
    return false;
  }
  // AckReq on the last packet of a message and at least every ack_req_every packets.
  ++q.since_ack_req;
  const bool ack_req = last || q.since_ack_req >= config_.ack_req_every;
  bth->set_opcode(op);
  bth->set_pad_cnt(static_cast<uint8_t>(pad));
  bth->set_pkey(ROCEV2_DEFAULT_PKEY);
  bth->set_dest_qp(q.remote_qpn);
  bth->set_ack_req(ack_req);
  bth->set_psn(q.next_psn);
  if (reth != nullptr) {  // §3.1: VA = byte offset within the region (zero-based)
    reth->set_va(w.wr.remote_offset);
    reth->set_rkey(w.wr.rkey);
    reth->set_dma_length(static_cast<uint32_t>(w.wr.length));
  }
  if (payload != nullptr) std::memcpy(payload, w.wr.local + offset, len);
  if (!finish_frame(b, f, elide ? len + pad + static_cast<uint32_t>(wire::kIcrcSize) : 0)) {
    ++counters_.tx_no_room;
    return false;
  }
  f.priority = Priority::kData;
  if (ack_req) q.since_ack_req = 0;

  // Advance the cursor.
  if (q.send_write == q.write_started) {  // first transmission of this write's first packet
    w.first_psn = q.next_psn;
    ++q.write_started;
  }
  if (psn_diff(q.next_psn, q.max_psn) < 0) {
    ++counters_.tx_retx;
    counters_.bytes_resent += len;
  } else {
    ++counters_.tx_data;
    q.max_psn = psn_add(q.next_psn, 1);
  }
  q.next_psn = psn_add(q.next_psn, 1);
  if (last) {
    q.send_packet = 0;
    ++q.send_write;
  } else {
    ++q.send_packet;
  }
  if (q.rto_deadline == kNever) arm_rto(q, now);
  // DCQCN: pace at the current rate; at line rate the NIC's own link is the pacer.
  q.cc.on_sent(f.bytes_on_wire(), now);
  if (q.cc.limited()) {
    q.next_send = std::max(now, q.next_send) + q.cc.gap(f.bytes_on_wire() + kFrameOverhead);
    if (has_data(q)) deadline_ = std::min(deadline_, q.next_send);
  }
  return true;
}

// §3.2: ACKNOWLEDGE with an AETH. ACKs and NAKs ride in the QP's traffic class (dscp_data),
// not ECN-capable, as RNICs send them.
bool RoceEndpoint::build_ack(Qp& q, Frame& f, AethType type, uint8_t value, uint32_t psn) {
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), encap_for(q, config_.dscp_data, 0));
  wire::Bth* bth = b.add<wire::Bth>();
  wire::Aeth* aeth = b.add<wire::Aeth>();
  if (aeth == nullptr) {
    ++counters_.tx_no_room;
    return false;
  }
  bth->set_opcode(RoceOpcode::kRcAck);
  bth->set_pkey(ROCEV2_DEFAULT_PKEY);
  bth->set_dest_qp(q.remote_qpn);
  bth->set_psn(psn);
  aeth->set_syndrome_type(type);
  aeth->set_syndrome_value(value);
  aeth->set_msn(q.msn);
  if (!finish_frame(b, f)) {
    ++counters_.tx_no_room;
    return false;
  }
  f.priority = Priority::kData;
  return true;
}

// §5: BTH opcode 0x81 with BECN, DestQP = the QP whose traffic was marked (the sender's),
// PSN 0, 16 zero bytes; DSCP 48, not ECN-capable, in the control class.
bool RoceEndpoint::build_cnp(Qp& q, Frame& f) {
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), encap_for(q, config_.dscp_cnp, 0));
  wire::Bth* bth = b.add<wire::Bth>();
  wire::Cnp* cnp = b.add<wire::Cnp>();
  if (cnp == nullptr) {
    ++counters_.tx_no_room;
    return false;
  }
  bth->set_opcode(RoceOpcode::kCnp);
  bth->set_pkey(ROCEV2_DEFAULT_PKEY);
  bth->set_becn(true);
  bth->set_dest_qp(q.remote_qpn);
  if (!finish_frame(b, f)) {
    ++counters_.tx_no_room;
    return false;
  }
  f.priority = Priority::kControl;
  return true;
}

// ------------------------------------------------------------------------------ rx

void RoceEndpoint::rx(std::span<Frame* const> frames, Time now) {
  for (const Frame* f : frames) rx_one(*f, now);
}

void RoceEndpoint::rx_one(const Frame& f, Time now) {
  wire::Decoded d;
  wire::DecodeOptions opts;
  opts.elided = f.wire_len > f.len ? f.wire_len - f.len : 0;  // payload carried by length
  const wire::WireError err = wire::decode_frame(std::span<const uint8_t>(f.data, f.len), &d, opts);
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
  // DestQP is an index: no look-up.
  const uint32_t idx = d.bth->dest_qp() - config_.qpn_base;
  if (idx >= config_.max_qps) {
    ++counters_.rx_unknown_qp;
    return;
  }
  Qp& q = qps_[idx];
  if (q.state == QpState::kReset || q.peer_ip4 != d.ipv4->src()) {
    ++counters_.rx_unknown_qp;
    return;
  }
  switch (d.bth->opcode()) {
    case RoceOpcode::kRcWriteFirst:
    case RoceOpcode::kRcWriteMiddle:
    case RoceOpcode::kRcWriteLast:
    case RoceOpcode::kRcWriteOnly:
      rx_write(q, d, now);
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

// Responder (§2.1, rxe check_psn / check_op_seq / execute).
void RoceEndpoint::rx_write(Qp& q, const wire::Decoded& d, Time now) {
  ++counters_.rx_data;
  if (q.state != QpState::kRts) {
    ++counters_.rx_qp_error;
    return;
  }
  // Notification point (research §3.1): a CNP for CE-marked data, at most one per interval
  // per QP, whatever the PSN: the mark is about the path, not the packet.
  if (d.ecn == kCe) {
    ++counters_.rx_ce;
    if (!q.cnp_pending && (!q.cnp_sent || now - q.last_cnp >= config_.cnp_interval)) {
      q.cnp_pending = true;
      q.cnp_sent = true;
      q.last_cnp = now;
    }
  }
  const uint32_t psn = d.bth->psn();
  const int32_t delta = psn_diff(psn, q.epsn);
  if (delta < 0) {  // duplicate: ACK again with the last in-order PSN, never place again
    ++counters_.rx_duplicates;
    q.ack_pending = true;
    return;
  }
  if (delta > 0) {  // a gap: one NAK (PSN sequence error) per gap, then silence
    ++counters_.rx_out_of_order;
    if (!q.nak_latch) {
      q.nak_latch = true;
      q.nak_pending = true;
      q.nak_code = static_cast<uint8_t>(AethNak::kPsnSeqError);
      q.nak_psn = q.epsn;  // the NAK carries the expected PSN
    }
    return;
  }

  // In order. Opcode sequence: FIRST/ONLY start a message, MIDDLE/LAST continue one.
  const RoceOpcode op = d.bth->opcode();
  const bool first = op == RoceOpcode::kRcWriteFirst || op == RoceOpcode::kRcWriteOnly;
  const bool last = op == RoceOpcode::kRcWriteLast || op == RoceOpcode::kRcWriteOnly;
  // With the payload carried by length, only its size is known (pad and ICRC elided too).
  uint64_t len = d.payload.size();
  if (d.elided > 0) {
    const uint64_t tail = d.bth->pad_cnt() + wire::kIcrcSize;
    len = d.elided >= tail ? len + d.elided - tail : 0;
  }
  if (first == q.in_message) {
    ++counters_.rx_invalid_request;
    responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
    return;
  }
  if (first) {
    // RETH access check: the R_Key names a region, VA is an offset within it.
    const uint32_t key = d.reth->rkey();
    const uint64_t va = d.reth->va();
    const uint64_t dma = d.reth->dma_length();
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
    q.va = va;
    q.remaining = dma;
  }
  // Lengths: FIRST and MIDDLE carry exactly one MTU; LAST and ONLY what remains.
  const bool length_ok =
      last ? len == q.remaining && len <= config_.mtu : len == config_.mtu && len < q.remaining;
  if (!length_ok) {
    ++counters_.rx_invalid_request;
    responder_fatal(q, static_cast<uint8_t>(AethNak::kInvalidRequest), psn);
    return;
  }
  if (d.elided == 0 && len > 0) std::memcpy(regions_[q.region].base + q.va, d.payload.data(), len);
  q.va += len;
  q.remaining -= len;
  q.in_message = !last;
  ++counters_.rx_placed;
  q.epsn = psn_add(q.epsn, 1);
  if (q.nak_latch) {  // the gap is filled: a NAK not yet sent is moot
    q.nak_latch = false;
    q.nak_pending = false;
  }
  if (last) q.msn = psn_add(q.msn, 1);
  ++q.unacked;
  if (d.bth->ack_req() || (config_.ack_every != 0 && q.unacked >= config_.ack_every)) {
    q.ack_pending = true;
  }
}

// A request the responder cannot execute: NAK it and move the QP to the error state (rxe
// does so for access and invalid-request errors). The NAK still goes out.
void RoceEndpoint::responder_fatal(Qp& q, uint8_t nak_code, uint32_t psn) {
  fail_qp(q, OpStatus::kPdcClosed);
  q.nak_pending = true;
  q.nak_code = nak_code;
  q.nak_psn = psn;
}

// Requester (§2.1, rxe check_psn / check_ack): ACKs, NAKs.
void RoceEndpoint::rx_ack(Qp& q, const wire::Decoded& d, Time now) {
  if (q.state != QpState::kRts) {
    ++counters_.rx_qp_error;
    return;
  }
  const uint32_t psn = d.bth->psn();
  const wire::Aeth& a = *d.aeth;
  switch (a.syndrome_type()) {
    case AethType::kAck: {
      // Coalesced: acknowledges every PSN up to and including `psn`, which must be in
      // [una - 1, max_psn - 1].
      if (psn_diff(psn, psn_prev(q.una)) < 0 || psn_diff(psn, q.max_psn) >= 0) {
        ++counters_.rx_stale_acks;
        return;
      }
      ++counters_.rx_acks;
      q.retry_left = config_.retry_cnt;  // rxe: any ACK restores the retry counter ...
      q.retry_started = false;           // ... and ends the go-back-N round (reset_retry_counters)
      const uint32_t una = psn_add(psn, 1);
      if (una == q.una) return;  // no progress: the timer keeps running
      q.una = una;
      complete_through(q, psn);
      // Lost ACKs and a timeout can leave the cursor behind what the peer already has.
      if (psn_diff(q.next_psn, q.una) < 0) seek(q, q.una);
      q.rto_deadline = kNever;
      if (q.una != q.max_psn) arm_rto(q, now);
      return;
    }
    case AethType::kNak: {
      // A NAK names a PSN in [una, max_psn - 1] and implicitly acknowledges those before it.
      if (psn_diff(psn, q.una) < 0 || psn_diff(psn, q.max_psn) >= 0) {
        ++counters_.rx_stale_acks;
        return;
      }
      if (psn != q.una) {
        // Progress: the peer has everything before `psn`. Like an ACK, that restores the retry
        // budget, and it ends the round under way (it got past its start): this NAK names a
        // new gap and starts a new round. [choice] rxe keeps its round until a work request
        // completes and so waits for the ACK timeout (ms) on every loss inside a round;
        // recovering from the NAK is what RNICs' go-back-N is for, and not doing it would
        // make the comparison a strawman.
        q.una = psn;
        q.retry_started = false;
        q.retry_left = config_.retry_cnt;
        complete_through(q, psn_prev(psn));
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
      // Fatal: the write holding `psn` fails; those behind it are flushed.
      ++counters_.rx_nak_fatal;
      fail_qp(q, a.syndrome_value() == static_cast<uint8_t>(AethNak::kRemoteAccessError)
                     ? OpStatus::kRemoteAccessError
                     : OpStatus::kPdcClosed);
      return;
    }
    case AethType::kRnrNak:
      ++counters_.rx_rnr_naks;  // only SENDs consume receive WQEs; we post none
      return;
    default:
      ++counters_.rx_stale_acks;  // §3.2: type 2 reserved, ignored
      return;
  }
}

// Reaction point: DCQCN cuts the QP's rate (dcqcn.h).
void RoceEndpoint::rx_cnp(Qp& q, Time now) {
  ++counters_.rx_cnps;
  if (q.state != QpState::kRts) return;
  q.cc.on_cnp(now);
  deadline_ = std::min(deadline_, q.cc.next_event());
}

// Completes, in order, every write whose last PSN is at or before `psn`.
void RoceEndpoint::complete_through(Qp& q, uint32_t psn) {
  while (q.write_head != q.write_started) {
    const Write& w = q.writes[q.write_head % config_.max_writes];
    const uint32_t last = psn_add(w.first_psn, w.packets - 1);
    if (psn_diff(last, q.max_psn) >= 0 || psn_diff(last, psn) > 0) break;
    complete(w.wr.wr_id, OpStatus::kSuccess, w.wr.length);
    ++q.write_head;
  }
}

// Moves the go-back-N cursor to `psn` (una <= psn <= max_psn): the write and packet it
// belongs to, found by walking the writes that have PSNs.
void RoceEndpoint::seek(Qp& q, uint32_t psn) {
  q.next_psn = psn;
  for (uint64_t i = q.write_head; i != q.write_started; ++i) {
    const Write& w = q.writes[i % config_.max_writes];
    const int32_t k = psn_diff(psn, w.first_psn);
    if (k >= 0 && static_cast<uint32_t>(k) < w.packets) {
      q.send_write = i;
      q.send_packet = static_cast<uint32_t>(k);
      return;
    }
  }
  q.send_write = q.write_started;  // psn == max_psn at a message boundary
  q.send_packet = 0;
}

// Go-back-N (§2.1): resend everything from `psn`, if the retry counter allows.
bool RoceEndpoint::go_back(Qp& q, uint32_t psn, Time now) {
  if (config_.retry_cnt != 7) {
    if (q.retry_left == 0) {
      fail_qp(q, OpStatus::kRetriesExhausted);
      return false;
    }
    --q.retry_left;
  }
  ++counters_.go_back_n;
  q.retry_started = true;
  seek(q, psn);
  q.rto_deadline = kNever;
  arm_rto(q, now);
  return true;
}

void RoceEndpoint::arm_rto(Qp& q, Time now) {
  if (ack_timeout_ == 0) return;  // t = 0: no timer
  q.rto_deadline = now + ack_timeout_;
  deadline_ = std::min(deadline_, q.rto_deadline);
}

// The QP enters the error state: the oldest write ends with `first`, every other one is
// flushed (kPdcClosed).
void RoceEndpoint::fail_qp(Qp& q, OpStatus first) {
  for (uint64_t i = q.write_head; i != q.write_tail; ++i) {
    const Write& w = q.writes[i % config_.max_writes];
    complete(w.wr.wr_id, i == q.write_head ? first : OpStatus::kPdcClosed, 0);
  }
  q.write_head = q.write_started = q.write_tail;
  q.send_write = q.write_tail;
  q.send_packet = 0;
  q.state = QpState::kError;
  q.rto_deadline = kNever;
  q.ack_pending = false;
  q.nak_pending = false;
  q.cnp_pending = false;
}

// ------------------------------------------------------------------------------ tx

bool RoceEndpoint::has_data(const Qp& q) const noexcept {
  return q.state == QpState::kRts && q.send_write != q.write_tail &&
         static_cast<uint32_t>(psn_diff(q.next_psn, q.una)) < config_.max_outstanding_psns;
}

// One frame from QP q, most urgent first: NAK, ACK, CNP, then data as the pacer allows.
bool RoceEndpoint::tx_one(Qp& q, Frame& f, Time now) {
  if (q.nak_pending) {
    // A NAK acknowledges what came before it; a coalesced ACK is folded into it.
    if (!build_ack(q, f, AethType::kNak, q.nak_code, q.nak_psn)) return false;
    q.nak_pending = false;
    q.ack_pending = false;
    q.unacked = 0;
    ++counters_.tx_naks;
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
  if (!has_data(q)) return false;
  if (q.cc.limited() && now < q.next_send) {
    ++counters_.pacing_waits;
    deadline_ = std::min(deadline_, q.next_send);
    return false;
  }
  return build_data(q, f, now);
}

size_t RoceEndpoint::tx(std::span<Frame* const> out, Time now) {
  size_t n = 0;
  // Round robin: one frame per QP per turn, until a whole turn finds nothing.
  size_t idle = 0;
  while (n < out.size() && idle < active_.size()) {
    if (rr_ >= active_.size()) rr_ = 0;
    Qp& q = qps_[active_[rr_++]];
    if (tx_one(q, *out[n], now)) {
      ++n;
      idle = 0;
    } else {
      ++idle;
    }
  }
  return n;
}

// ------------------------------------------------------------------------------ timers

Time RoceEndpoint::next_deadline() const { return deadline_; }

void RoceEndpoint::on_timer(Time now) {
  Time next = kNever;
  for (const uint32_t idx : active_) {
    Qp& q = qps_[idx];
    // ACK timeout (§2.1): resend from the oldest unacknowledged PSN.
    if (q.rto_deadline <= now) {
      q.rto_deadline = kNever;
      if (q.state == QpState::kRts && q.una != q.max_psn) {
        ++counters_.timeouts;
        go_back(q, q.una, now);
      }
    }
    q.cc.on_timer(now);
    next = std::min({next, q.rto_deadline, q.cc.next_event()});
    // A pacing deadline already reached is not a timer: the QP is ready, and the host pulls
    // frames when its link is free.
    if (q.cc.limited() && q.next_send > now && has_data(q)) next = std::min(next, q.next_send);
  }
  deadline_ = next;
}

}  // namespace uet
