// Frames out (spec/uet.md §3): tx()'s round robin over the PDCs, one frame per PDC per turn,
// the data packets it encodes (§3.3, §4.2) and the RCCC grants the target sends (§3.8.2).
#include <algorithm>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::psn_before;
using wire::NextHeader;
using wire::PdsType;

// §3.3 RUD request + §4.2 standard SES request (WRITE, READ or SEND) for packet `psn`: packet
// `packet` of operation `o`.
[[gnu::always_inline]] inline bool UetEndpoint::build_data(Pdc& p, uint16_t pdcid, uint32_t psn,
                                                           const Op& o, uint32_t packet, bool retx,
                                                           Frame& f, Time now) {
  Slot& s = p.ini.slots[psn];
  const uint64_t offset = uint64_t{packet} * hot_.payload_bytes;
  const uint32_t len = s.len;
  // A READ request has no payload; an atomic's operands follow its extension (put_atomic).
  const bool carries = o.carries;
  // §4.5.3: a rendezvous send's one packet carries the extension before its eager bytes.
  const bool rdv = o.rdv != 0 && carries;
  // §3.4: with RCCC every request is RUD_CC, its CC state four bytes longer.
  const bool cc_req = rccc_sender();
  const size_t headers = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize +
                         (cc_req ? wire::PdsRudRodCc::kSize : wire::PdsRudRod::kSize) +
                         wire::SesStandardRequest::kSize + tss_overhead_ +
                         (rdv ? wire::SesRendezvous::kSize : 0);
  const size_t elided = carries && headers + len > f.capacity ? len : 0;
  const uint16_t ev = p.ini.sel.next_ev(now);  // §2.4: pathsel/ picks every packet's EV (ROD: one)
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), p.data_encap,
                       wire_sport(ev_port(p, ev)));
  tss_begin(b);
  // The PDS and SES headers are built in registers (wire::HeaderWords) and stored into one
  // reserved run a word at a time: filled in memory by their accessors' narrow stores and then
  // copied, they would stall on store forwarding (bench/NOTES.md, "Third round (h/engine3)").
  // RUD_CC begins with the RUD request's fields (spec/uet.def): one word set for both.
  if (f.capacity < headers) [[unlikely]]
    return frame_too_small(p, now);  // no state changed
  using Pds = wire::PdsRudRodCc;
  using Ses = wire::SesStandardRequest;
  wire::HeaderWords<Pds> pds;
  wire::HeaderWords<Ses> ses;
  // The last packet of an operation asks for an ACK at once (AR), so completions are prompt.
  const bool last = packet + 1 == o.packets;
  data_pds(p, pdcid, psn, retx, last, carries ? len : 0, now, pds);
  data_ses(o, packet, offset, len, last, ses);
  // PDS and SES in one reserved run.
  if (cc_req) {
    uint8_t* h = b.reserve(Pds::kSize + Ses::kSize);
    if (h == nullptr) return false;
    pds.store(h);
    ses.store(h + Pds::kSize);
  } else {
    uint8_t* h = b.reserve(wire::PdsRudRod::kSize + Ses::kSize);
    if (h == nullptr) return false;
    pds.store<wire::PdsRudRod::kSize>(h);
    ses.store(h + wire::PdsRudRod::kSize);
  }
  if (rdv && !put_rendezvous(o, b)) [[unlikely]]
    return false;
  std::span<const uint8_t> payload;
  if (carries && elided == 0 && len > 0) {
    payload = {o.src + offset, len};
    if (tss_ != nullptr) {  // §5.2: sealed straight from registered memory (finish())
      if (b.reserve(len) == nullptr) return false;
    } else if (hot_.tx_by_reference ? !b.reference(payload) : !b.append_summed(payload)) {
      return false;
    }
  } else if (!carries && o.op == Opcode::kAtomic && !put_atomic(o, b)) [[unlikely]] {
    return frame_too_small(p, now);  // no room for the operands (nothing changed yet)
  }
  if (!finish(b, f, elided, tss_ != nullptr ? payload : std::span<const uint8_t>{})) return false;
  f.priority = Priority::kData;
  s.sent = now;
  if (retx) {  // (a new PSN's slot was made in flight: tx_initiator)
    if (s.retransmitted()) s.set(Slot::kResentAgain);
    s.tries = static_cast<Slot::Tries>(s.tries | Slot::kRetransmitted);
    s.set(Slot::kInFlight);
  }
  s.ev = ev;
  p.ini.bytes_in_flight += len;
  ++(retx ? counters_.tx_retx : counters_.tx_data);
  return true;
}

// The host lent a frame too small for a data packet's headers. A host lends frames of one
// size, so a refusal that lasts until the RTO fires is final: timer_initiator fails the PDC
// kFrameTooSmall instead of leaving it idle for ever.
bool UetEndpoint::frame_too_small(Pdc& p, Time now) {
  ++rare().tx_no_room;
  p.ini.frame_refused = true;
  if (p.ini.rto_deadline == kNever) {
    p.ini.rto_deadline = now + p.ini.rto;
    deadline_ = std::min(deadline_, p.ini.rto_deadline);
  }
  return false;
}

// §3.3 / §3.4: a data packet's RUD or ROD request header (RUD_CC, ROD_CC with RCCC), and the
// sender state it spends: the bytes not yet sent once, RCCC credit. `payload`: bytes it
// carries (0 for a READ request).
[[gnu::always_inline]] inline void UetEndpoint::data_pds(
    Pdc& p, uint16_t pdcid, uint32_t psn, bool retx, bool last, uint32_t payload, Time now,
    wire::HeaderWords<wire::PdsRudRodCc>& pds) {
  using Pds = wire::PdsRudRodCc;
  if (payload > 0 && !retx) p.ini.unsent_bytes -= std::min<uint64_t>(p.ini.unsent_bytes, payload);
  if (rccc_sender()) {
    // RCCC: a packet with payload spends credit, a retransmission too (as htsim); the
    // request tells the receiver what the backlog still needs beyond the credit held.
    // Speculation ends a base RTT after the first send if no grant ended it before.
    if (p.ini.speculate_until == kNever) p.ini.speculate_until = now + hot_.base_rtt;
    if (payload > 0) p.ini.rccc.on_sent(payload);
    p.ini.last_target = static_cast<uint32_t>(p.ini.rccc.credit_target(credit_backlog(p)));
    pds.set<Pds::type_field>(p.rod ? PdsType::kRodCcReq : PdsType::kRudCcReq);  // §3.4
    pds.set<Pds::ccc_id_field>(0);
    pds.set<Pds::credit_target_field>(p.ini.last_target);
  } else {
    pds.set<Pds::type_field>(p.rod ? PdsType::kRodReq : PdsType::kRudReq);
  }
  pds.set<Pds::next_hdr_field>(NextHeader::kReqStd);
  pds.set<Pds::retx_field>(retx);
  pds.set<Pds::psn_field>(psn);
  pds.set<Pds::spdcid_field>(pdcid);
  // §3.3: Clear PSN = psn + clear_psn_offset: every PSN before base_psn is acknowledged here
  // (a refused one through the response that carried its refusal), so the target may drop
  // its guaranteed-delivery state (stored refusals) up to base_psn - 1.
  pds.set<Pds::clear_psn_offset_field>(
      static_cast<int16_t>(static_cast<int32_t>(p.ini.base_psn - 1 - psn)));
  if (p.established) {
    pds.set<Pds::dpdcid_field>(p.peer_pdcid);
  } else {  // §3.3: SYN until the first ACK; the PDC info tells the target the start PSN
    pds.set<Pds::syn_field>(true);
    pds.set<Pds::psn_offset_field>(static_cast<uint16_t>(psn - p.start_psn));
  }
  pds.set<Pds::ar_field>(last);
}

// §4.2: a data packet's standard SES request: WRITE or SEND message `o`'s packet `packet`,
// or one READ chunk.
[[gnu::always_inline]] inline void UetEndpoint::data_ses(
    const Op& o, uint32_t packet, uint64_t offset, uint32_t len, bool last,
    wire::HeaderWords<wire::SesStandardRequest>& ses) {
  using Ses = wire::SesStandardRequest;
  switch (o.op) {
    case Opcode::kRecv:  // a target's DEFERRABLE_RTR (§4.2): the restart token in match_bits
      ses.set<Ses::opcode_field>(wire::SesOpcode::kDeferrableRtr);
      ses.set<Ses::message_id_field>(o.message_id);
      ses.set<Ses::match_bits_field>(o.tag);
      // A rendezvous CTS (token: a source's key) names in buffer_offset the key to WRITE
      // the rest under (NOTES.md, "Rendezvous"); a deferral's RTR carries 0 there.
      ses.set<Ses::buffer_offset_field>(o.remote_offset);
      break;
    case Opcode::kWrite:
    case Opcode::kTaggedRecv:  // (never posted at an initiator)
      ses.set<Ses::opcode_field>(wire::SesOpcode::kWrite);
      ses.set<Ses::message_id_field>(o.message_id);
      ses.set<Ses::buffer_offset_field>(o.remote_offset);
      ses.set<Ses::match_bits_field>(o.rkey);
      ses.set<Ses::request_length_field>(static_cast<uint32_t>(o.length));
      break;
    case Opcode::kRead:
      // One single-packet READ message per chunk (NOTES.md, "How the SES operations travel on
      // the PDS"): the target returns exactly `len` bytes from buffer_offset, in one response
      // with data.
      ses.set<Ses::opcode_field>(wire::SesOpcode::kRead);
      ses.set<Ses::message_id_field>(static_cast<uint16_t>(o.message_id + packet));
      ses.set<Ses::buffer_offset_field>(o.remote_offset + offset);
      ses.set<Ses::match_bits_field>(o.rkey);
      ses.set<Ses::request_length_field>(len);
      break;
    case Opcode::kAtomic:  // §4.5.1: one packet; the extension header follows (put_atomic)
      ses.set<Ses::opcode_field>(o.dst != nullptr ? wire::SesOpcode::kFetchingAtomic
                                                  : wire::SesOpcode::kAtomic);
      ses.set<Ses::message_id_field>(o.message_id);
      ses.set<Ses::buffer_offset_field>(o.remote_offset);
      ses.set<Ses::match_bits_field>(o.rkey);
      ses.set<Ses::request_length_field>(static_cast<uint32_t>(o.length));
      ses.set<Ses::ie_field>(o.abandoned);  // §4.1: given up (no result free at the target)
      break;
    case Opcode::kTaggedSend:  // §4.1: the tag in match_bits, header data as a SEND's immediate
      ses.set<Ses::match_bits_field>(o.tag);
      [[fallthrough]];
    case Opcode::kSend:
      if ((o.rdv | o.defer) == 0) [[likely]] {
        ses.set<Ses::opcode_field>(o.op == Opcode::kSend ? wire::SesOpcode::kSend
                                                         : wire::SesOpcode::kTaggedSend);
      } else if (o.defer != 0) {  // §4.2: the restart token in buffer_offset, our PID (rkey)
        ses.set<Ses::opcode_field>(o.op == Opcode::kSend ? wire::SesOpcode::kDeferrableSend
                                                         : wire::SesOpcode::kDeferrableTsend);
        ses.set<Ses::buffer_offset_field>(o.remote_offset);
        ses.set<Ses::initiator_field>(o.rkey);
      } else {  // §4.5.3: request_length is the whole message; the extension follows
        ses.set<Ses::opcode_field>(o.op == Opcode::kSend ? wire::SesOpcode::kRendezvousSend
                                                         : wire::SesOpcode::kRendezvousTsend);
      }
      ses.set<Ses::message_id_field>(o.message_id);
      ses.set<Ses::request_length_field>(static_cast<uint32_t>(o.length));
      ses.set<Ses::ie_field>(o.abandoned);  // §4.1: the initiator gave this message up (RNR)
      if (packet == 0 && o.has_imm) {       // §4.2: header_data on the SOM packet, `hd` set
        ses.set<Ses::hd_field>(true);
        ses.set<Ses::header_data_field>(o.imm);
      }
      break;
  }
  if (o.op != Opcode::kRead) {
    ses.set<Ses::som_field>(packet == 0);
    ses.set<Ses::eom_field>(last);
    if (packet != 0) {
      ses.set<Ses::payload_length_field>(static_cast<uint16_t>(len));
      ses.set<Ses::message_offset_field>(static_cast<uint32_t>(offset));
    }
  } else {
    ses.set<Ses::som_field>(true);
    ses.set<Ses::eom_field>(true);
  }
  // §4.1: the target's process and resource, and our job (all zero by default), packed when
  // the operation was posted; no field above lies in their bits.
  ses.merge_words(o.address);
}

// §3.8: a new PSN goes at most the target's latest MPR past its CACK.
[[gnu::always_inline]] inline bool UetEndpoint::mpr_room(const Pdc& p) const noexcept {
  return p.ini.peer_mpr == 0 ||
         p.ini.next_psn - p.ini.peer_cack <= p.ini.peer_mpr;  // 0: no ACK_CC yet
}

// §5.1: a sealed frame is the TSS header, the ciphertext of everything built after it, and
// the tag; sealing comes before finish() because a UDP checksum (TssConfig::udp_checksum) would
// cover the ciphertext.
bool UetEndpoint::finish(wire::FrameBuilder& b, Frame& f, size_t elided,
                         std::span<const uint8_t> payload) {
  if (tss_ != nullptr) {
    b.forget_payload_sum();  // sealing encrypts the payload in place (spec/uet.md §5)
    const size_t len = b.size();
    if (b.reserve(tss::kTagBytes) == nullptr) return false;
    tss::SealLayout l;
    l.l3 = static_cast<uint16_t>(b.l3_offset());
    l.l4 = static_cast<uint16_t>(b.l4_offset());
    l.ipv6 = b.is_ipv6();
    l.ip_only = b.is_ip_only();
    l.tss = static_cast<uint16_t>(b.transport_offset());
    if (!tss_->seal(f.data, len, l, payload)) return false;  // counted by the sublayer
  }
  return internal::finish_frame(b, f, elided);
}

// RCCC receiver: takes the grants due now (the engine paces them) into their target PDCs'
// credit_pending and queues those PDCs for tx(). Taken here, from tx() and on_timer(), so the
// next grant's time is what next_deadline() reports even while the NIC is busy.
void UetEndpoint::take_grants(Time now) {
  while (const auto g = rccc_rx_.next_grant(now)) {
    Pdc* p = pdc(static_cast<uint16_t>(g->sender));
    if (p == nullptr || p->role != Role::kTarget) {
      rccc_rx_.on_close(g->sender);
      continue;
    }
    counters_.credit_granted += g->bytes;
    p->tgt.credit_pending += g->bytes;
    if (!p->tgt.credit_queued && credit_tail_ - credit_head_ < hot_.max_pdcs) {
      p->tgt.credit_queued = true;  // when the ring is full, the PDC's next ACK carries it
      credit_ring_.reserve32(credit_head_, credit_tail_, uint64_t{credit_tail_ - credit_head_} + 1,
                             hot_.max_pdcs);
      credit_ring_[credit_tail_++] = static_cast<uint16_t>(g->sender);
    }
  }
}

// RCCC receiver: sends the credit taken for each queued PDC: in the PDC's next ACK when one
// is due anyway (§3.8.2), else as a CREDIT packet (§3.12). Returns the new n.
size_t UetEndpoint::tx_grants(std::span<Frame* const> out, size_t n, Time now) {
  while (n < out.size() && credit_head_ != credit_tail_) {
    const uint16_t id = credit_ring_[credit_head_++];
    Pdc& p = pdcs_[id];
    if (p.role != Role::kTarget || !p.tgt.credit_queued) continue;  // freed since
    p.tgt.credit_queued = false;
    if (p.tgt.credit_pending == 0) continue;
    if (p.tgt.ack_now || (p.tgt.ack_pending && now >= p.tgt.ack_deadline))
      continue;  // rides the ACK
    const auto c = static_cast<uint32_t>(std::min<uint64_t>(p.tgt.credit_pending, 0xFFFFFF));
    if (!build_ctrl(p, id, wire::CtrlType::kCredit, p.tgt.rcv_base, *out[n], c)) continue;
    p.tgt.credit_pending -= c;
    ++counters_.tx_credit;
    ++n;
  }
  return n;
}

// CLOSE (initiator) or REQ_CLOSE (target), §3.12. Out of line: rare, and tx() keeps fewer
// registers live without it.
UetEndpoint::Turn UetEndpoint::tx_close(Pdc& p, uint16_t id, Frame& f) {
  const bool init = p.role == Role::kInitiator;
  if (!build_ctrl(p, id, init ? wire::CtrlType::kClose : wire::CtrlType::kReqClose,
                  init ? p.ini.close_psn : p.tgt.rcv_base, f)) {
    return Turn::kIdle;
  }
  p.ctrl_pending = false;
  ++(init ? rare().tx_close : rare().tx_req_close);
  return Turn::kSent;
}

// A target PDC's turn: a queued NACK first, else the ACK when one is due (§3.7).
[[gnu::always_inline]] inline UetEndpoint::Turn UetEndpoint::tx_target(Pdc& p, uint16_t id,
                                                                       Frame& f, Time now) {
  if (p.tgt.nack_head != p.tgt.nack_tail) {
    const Pdc::Nack& k = p.tgt.nacks[p.tgt.nack_head];
    p.tgt.nack_code = k.code;
    p.tgt.nack_psn = k.psn;
    if (!build_nack(p, id, f)) return Turn::kIdle;
    ++p.tgt.nack_head;
    return Turn::kSent;
  }
  if (p.tgt.ack_now || (p.tgt.ack_pending && now >= p.tgt.ack_deadline)) {
    return send_ack(p, id, f) ? Turn::kSent : Turn::kIdle;
  }
  return Turn::kIdle;
}

// An initiator PDC's turn: a CREDIT_REQ, or one data packet (a resend first, else the next new
// PSN) within the window, the target's MPR and the credit.
[[gnu::always_inline]] inline UetEndpoint::Turn UetEndpoint::tx_initiator(Pdc& p, uint16_t id,
                                                                          Frame& f, Time now) {
  // RCCC: may a packet with payload go? (READ requests carry none and need no credit, nor
  // do atomics: a few operand bytes, like a request header.)
  if (p.ini.speculating && now >= p.ini.speculate_until && rccc_sender()) {
    p.ini.speculating = false;
    p.ini.rccc.stop_speculating();
  }
  const bool credit = !rccc_sender() || p.ini.rccc.can_send();
  if (p.ini.req_ack_pending) [[unlikely]] {  // is the target that holds our operations alive?
    if (build_ctrl(p, id, wire::CtrlType::kReqAck, p.ini.next_psn - 1, f)) {
      p.ini.req_ack_pending = false;
      ++counters_.tx_req_ack;
      return Turn::kSent;
    }
  }
  if (p.ini.credit_req_pending && p.established) {  // RCCC: ask for credit again (§3.12)
    const auto target = static_cast<uint32_t>(p.ini.rccc.credit_target(credit_backlog(p)));
    if (build_ctrl(p, id, wire::CtrlType::kCreditReq, p.ini.next_psn, f, target)) {
      p.ini.credit_req_pending = false;
      p.ini.last_target = target;
      ++counters_.tx_credit_req;
      return Turn::kSent;  // a control frame: no RTO to arm
    }
  }
  // The PSN to send, if any: a resend (exactly the missing PSNs, RETX set), or the next new
  // one. build_data is called at one place (always inline: it runs for every data packet).
  const bool retx = p.ini.resend_pending > 0;
  uint32_t psn = 0;
  const Op* op = nullptr;  // its operation, and its packet there
  uint32_t packet = 0;
  if (retx) {
    if (!take_resend(p, credit, now, &psn)) return Turn::kIdle;
    op = &p.ini.ops[p.ini.slots[psn].op];
    packet = psn - op->first_psn;  // an operation's PSNs are consecutive
  } else {
    if (p.ini.op_send == p.ini.op_tail) {
      // §3.3: all sent and acknowledged, but the target still holds answers for us (fetched
      // values, a rendezvous source's READ data: its CACK lags): no request will carry our
      // clear PSN, so a CLEAR does (again each RTO until the CACK passes). Held until then,
      // also while PSNs are still in flight.
      const bool lagging = psn_before(p.ini.peer_cack, p.ini.base_psn - 1);
      if (!lagging) p.ini.results_held = false;
      const bool held =
          p.ini.results_held && lagging && !psn_before(p.ini.base_psn, p.ini.next_psn);
      return held && tx_clear(p, id, f, now) == Turn::kSent ? Turn::kSent : Turn::kIdle;
    }
    if (p.ini.next_psn - p.ini.base_psn >= (p.rod ? hot_.rod_window : hot_.mpr) ||
        p.ini.bytes_in_flight + hot_.payload_bytes > window(p)) {
      return Turn::kIdle;
    }
    if (!mpr_room(p)) return tx_clear(p, id, f, now);
    const Op& o = p.ini.ops[p.ini.op_send];
    if (!credit && o.carries) {
      credit_blocked(p, now);
      return Turn::kWaiting;
    }
    op = &o;
    packet = p.ini.send_packet;
    psn = p.ini.next_psn;
    if (psn - p.ini.base_psn >= p.ini.slots.capacity()) [[unlikely]]
      grow_window(p);
    // In flight once build_data() sends it; until then next_psn leaves it out of the window.
    Slot& s = p.ini.slots[psn];
    s = Slot{};
    s.state = Slot::kInFlight;
    s.op = static_cast<uint16_t>(p.ini.op_send);
    s.len = static_cast<uint16_t>(std::min<uint64_t>(
        hot_.payload_bytes, o.length - uint64_t{p.ini.send_packet} * hot_.payload_bytes));
    if (o.rdv != 0 && o.carries) [[unlikely]]
      s.len = static_cast<uint16_t>(rdv_eager());
  }
  if (!build_data(p, id, psn, *op, packet, retx, f, now)) return Turn::kIdle;
  if (p.ini.frame_refused) [[unlikely]]
    p.ini.frame_refused = false;
  if (!retx) {
    ++p.ini.next_psn;
    if (++p.ini.send_packet == op->packets) {
      p.ini.send_packet = 0;
      // The next operation's first PSN (post_op set it if it was posted with none unsent).
      if (++p.ini.op_send != p.ini.op_tail) p.ini.ops[p.ini.op_send].first_psn = p.ini.next_psn;
    }
  }
  if (p.ini.rto_deadline == kNever) {
    p.ini.rto_deadline = now + p.ini.rto;
    deadline_ = std::min(deadline_, p.ini.rto_deadline);
  }
  arm_tlp(p, now);
  return Turn::kSent;
}

// The oldest PSN marked for resending, if the credit and the window let it go now.
[[gnu::always_inline]] inline bool UetEndpoint::take_resend(Pdc& p, bool credit, Time now,
                                                            uint32_t* psn) {
  for (uint32_t q = p.ini.base_psn; psn_before(q, p.ini.next_psn); ++q) {
    Slot& s = p.ini.slots[q];
    if (!s.resend()) continue;
    if (!credit && p.ini.ops[s.op].carries) {
      credit_blocked(p, now);
      return false;
    }
    // Resends count against the window like new data (one may always go when nothing is in
    // flight): a trimmed packet's NACK must not send it again at once whatever the window,
    // or under a large incast the trimmed headers' NACKs and their resends keep the last hop
    // full of trimmed frames and nothing completes.
    if (p.ini.bytes_in_flight > 0 && p.ini.bytes_in_flight + s.len > window(p)) return false;
    s.clear(Slot::kResend);
    --p.ini.resend_pending;
    *psn = q;
    return true;
  }
  return false;
}

// §3.12 CLEAR: CACK waits behind PSNs refused and acknowledged here (§3.3) until a clear PSN
// passes them; with no request left in range to carry it, a CLEAR does at once, and the same
// clear PSN again after an RTO if CACK has not moved (a newer clear PSN does not wait: the
// source of a rendezvous completes only when it hears it).
UetEndpoint::Turn UetEndpoint::tx_clear(Pdc& p, uint16_t id, Frame& f, Time now) {
  const uint32_t clear = p.ini.base_psn - 1;
  const bool due = clear != p.ini.clear_psn || now >= p.ini.clear_at;
  if (psn_before(p.ini.peer_cack, clear) && due && p.established &&
      build_ctrl(p, id, wire::CtrlType::kClear, p.ini.next_psn, f, clear)) {
    p.ini.clear_psn = clear;
    p.ini.clear_at = now + p.ini.rto;
    deadline_ = std::min(deadline_, p.ini.clear_at);
    ++rare().tx_clear;
    return Turn::kSent;
  }
  return Turn::kWaiting;
}

size_t UetEndpoint::tx(std::span<Frame* const> out, Time now) {
  now_ = now;
  size_t n = 0;
  // NACKs without a PDC first.
  while (n < out.size() && stateless_head_ != stateless_tail_) {
    if (build_stateless_nack(stateless_[stateless_head_++], *out[n])) ++n;
  }
  // RCCC grants due now (paced by the receiver engine).
  if (rccc_rx_.next_event() <= now) take_grants(now);
  if (credit_head_ != credit_tail_) n = tx_grants(out, n, now);
  // RUDI and UUD (no PDC: uet_rudi.cc, uet_uud.cc).
  if (modes_pending()) n += tx_modes(out.subspan(n), now);
  // Round robin over the active PDCs, one frame per PDC per turn, until the burst is full or
  // a whole turn finds nothing to send. PDCs whose ready bit is clear are passed over as if
  // visited (each counts as idle), so the order, and every frame, is what visiting them
  // would give.
  for (size_t idle = 0; n < out.size() && idle < pdcs_.active().size();) {
    const size_t active = pdcs_.active().size();
    if (rr_ >= active) rr_ = 0;
    if (!pdcs_.ready().skip_idle(rr_, idle, active)) break;  // the turn ends among idle PDCs
    if (rr_ >= active) continue;
    const uint16_t id = pdcs_.active()[rr_];
    Pdc& p = pdcs_[id];
    ++counters_.tx_pdc_visits;
    Turn t = Turn::kIdle;
    if (p.ctrl_pending) {
      t = tx_close(p, id, *out[n]);
    } else if (p.role == Role::kTarget) {
      t = tx_target(p, id, *out[n], now);
    } else if (p.role == Role::kInitiator && !p.closing) {
      t = tx_initiator(p, id, *out[n], now);
    }
    ++rr_;  // round robin: the next frame comes from the next PDC
    if (t == Turn::kSent) {
      ++n;
      idle = 0;
      continue;
    }
    ++idle;
    if (t == Turn::kIdle && !tx_may_act(p)) pdcs_.ready().clear(rr_ - 1);
  }
  return n;
}

// Whether tx() could act on `p` at a later time with nothing else changing it: every branch
// of tx() that sends or changes state, with its time conditions taken as true.
bool UetEndpoint::tx_may_act(const Pdc& p) const noexcept {
  if (p.ctrl_pending) return true;
  if (p.role == Role::kTarget)
    return p.tgt.nack_head != p.tgt.nack_tail || p.tgt.ack_now || p.tgt.ack_pending;
  if (p.role != Role::kInitiator || p.closing) return false;
  if ((p.ini.speculating && rccc_sender()) || (p.ini.credit_req_pending && p.established) ||
      p.ini.resend_pending > 0) {
    return true;
  }
  return p.ini.op_send != p.ini.op_tail &&
         p.ini.next_psn - p.ini.base_psn < (p.rod ? hot_.rod_window : hot_.mpr) &&
         p.ini.bytes_in_flight + hot_.payload_bytes <= window(p);
}

}  // namespace uet
