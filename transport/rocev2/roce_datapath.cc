// RoCEv2 data-path entry points: rx() dispatch by opcode, tx() order per QP, DCQCN pacing.
#include "transport/rocev2/roce_datapath.h"

#include <algorithm>

#include "transport/wire/stream_copy.h"

namespace uet {

using roce::kCreditsUnlimited;
using roce::kFrameOverhead;
using roce::psn_prev;
using wire::AethType;
using wire::RoceOpcode;

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
  opts.header_stack = false;                            // the engine reads the named headers only
  if (f.checksums_ok) opts.verify_ip_checksum = false;  // the host did
  if (config_.icrc_offload) opts.verify_icrc = false;   // the NIC did
  const wire::WireError err =
      wire::decode_frame(std::span<const uint8_t>(f.data, f.len), decoded.slot(), opts);
  const wire::Decoded& d = decoded.get();
  if (err != wire::WireError::kOk) {  // §7: the decoder verifies the ICRC (rule 8)
    rare().wire.add(err);
    ++rare().rx_malformed;
    if (err == wire::WireError::kBadIcrc) ++rare().rx_bad_icrc;
    return;
  }
  if (d.protocol != wire::Protocol::kRoce || d.ipv4 == nullptr ||
      d.ipv4->dst() != config_.local_ip4) {
    ++rare().rx_not_ours;
    return;
  }
  // DestQP is an index: no look-up. Out of range, never allocated or reset: the same drop.
  Qp* const qp = qp_at(d.bth->dest_qp() - config_.qpn_base);
  if (qp == nullptr || qp->state == QpState::kReset || qp->peer_ip4 != d.ipv4->src()) {
    ++rare().rx_unknown_qp;
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
    case RoceOpcode::kRcCompareSwap:
    case RoceOpcode::kRcFetchAdd:
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
    case RoceOpcode::kRcAtomicAck:
      rx_atomic_ack(q, d, now);
      break;
    case RoceOpcode::kCnp:
      rx_cnp(q, now);
      break;
    default:
      ++rare().rx_unsupported;
      break;
  }
}

// Reaction point: DCQCN cuts the QP's rate (dcqcn.h).
void RoceEndpoint::rx_cnp(Qp& q, Time now) {
  ++counters_.rx_cnps;
  if (q.state != QpState::kRts) return;
  q.cc.on_cnp(now);
  deadline_ = std::min(deadline_, q.cc.next_event());
}

// ------------------------------------------------------------------------------ tx

// DCQCN: pace at the current rate; at line rate the NIC's own link is the pacer.
void RoceEndpoint::pace(Qp& q, const Frame& f, Time now) {
  q.cc.on_sent(f.bytes_on_wire(), now);
  if (q.cc.limited()) {
    q.next_send = std::max(now, q.next_send) + q.cc.gap(f.bytes_on_wire() + kFrameOverhead);
    if (has_data(q) || q.rd_head != q.rd_tail) deadline_ = std::min(deadline_, q.next_send);
  }
}

// One frame from QP q, most urgent first: NAK, ACK, CNP, then data as the pacer allows.
// Read and atomic responses go first: an ACK or NAK names PSNs after them and must not
// overtake them.
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
    if (rnr) ++rare().tx_rnr_naks;
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
    ++rare().rnr_retries;
  }
  if (!has_data(q)) return false;
  if (q.send_write == q.write_started && q.reads_in_flight >= config_.max_rd_atomic &&
      awaits_response(q.writes[q.send_write].op)) {
    // IB max_rd_atomic reads and atomics outstanding: this one (and all behind) waits.
    ++counters_.read_waits;
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
