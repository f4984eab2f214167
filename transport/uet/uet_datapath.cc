// Data path of the UET engine: rx(), tx(), on_timer(). No allocation, no per-packet virtual
// call. Comments cite spec/uet.md.
#include <algorithm>
#include <bit>
#include <cstring>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"
#include "transport/wire/checksum.h"
#include "transport/wire/stream_copy.h"

namespace uet {

using wire::NextHeader;
using wire::PdsType;
using wire::kDscpTrimmed;
using internal::psn_before;
using internal::status_for;
using internal::test_bit;

namespace {


}  // namespace

// ------------------------------------------------------------------------------ frames

wire::Encap UetEndpoint::encap_for(const Pdc& p, bool control, uint16_t ev) const {
  wire::Encap e;
  e.src_mac = config_.local_mac;
  e.dst_mac = p.peer_mac;
  e.src_ip4 = config_.local_ip4;
  e.dst_ip4 = p.peer_ip4;
  e.dscp = control ? config_.dscp_control : config_.dscp_data;
  e.ecn = !control && config_.ect ? 2 : 0;
  e.sport = wire_sport(ev);  // §2.1: the EV rides in the UDP source port
  e.dport = wire::kUetUdpPort;
  e.udp_checksum = config_.udp_checksum;
  return e;
}

void UetEndpoint::set_peer(Pdc& p, uint32_t ip4) {
  p.peer_ip4 = ip4;
  p.peer_mac = config_.resolve_mac(ip4);
  p.data_encap = wire::EncapTemplate(encap_for(p, /*control=*/false, 0));
  p.ctrl_encap = wire::EncapTemplate(encap_for(p, /*control=*/true, 0));
}

// §2.4: EV index i (pathsel/) travels as a UDP source port in the dynamic range 49152..65535,
// spread from the PDC's random base by an odd stride, so indices 0..16383 are distinct ports.
uint16_t UetEndpoint::ev_port(const Pdc& p, uint16_t ev) noexcept {
  return wire::dynamic_port(p.ev_base + uint32_t{ev} * 0x9E37u);
}

// §3.3 RUD request + §4.2 standard SES request (WRITE, READ or SEND) for packet `psn`.
[[gnu::always_inline]] inline bool UetEndpoint::build_data(Pdc& p, uint16_t pdcid, uint32_t psn,
                                                           bool retx, Frame& f, Time now) {
  Slot& s = p.slots[(psn & mpr_mask_)];
  const Op& o = p.ops[s.op];
  const uint64_t offset = uint64_t{s.packet} * config_.payload_bytes;
  const uint32_t len = s.len;
  const bool carries = o.op != Opcode::kRead;  // a READ request has no payload
  // §3.4: with RCCC every request is RUD_CC, its CC state four bytes longer.
  const bool cc_req = rccc_sender();
  const size_t headers = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize +
                         (cc_req ? wire::PdsRudRodCc::kSize : wire::PdsRudRod::kSize) +
                         wire::SesStandardRequest::kSize + tss_overhead_;
  const size_t elided = carries && headers + len > f.capacity ? len : 0;
  const uint16_t ev = p.sel.next_ev(now);  // §2.4: pathsel/ picks every packet's EV (ROD: one)
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), p.data_encap,
                       wire_sport(ev_port(p, ev)));
  tss_begin(b);
  // The PDS and SES headers are built in registers (wire::HeaderWords) and stored into one
  // reserved run a word at a time: filled in memory by their accessors' narrow stores and then
  // copied, they would stall on store forwarding (bench/NOTES.md, "Third round (h/engine3)").
  // RUD_CC begins with the RUD request's fields (spec/uet.def): one word set for both.
  if (f.capacity < headers) return false;  // before any state changes
  using Pds = wire::PdsRudRodCc;
  using Ses = wire::SesStandardRequest;
  wire::HeaderWords<Pds> pds;
  wire::HeaderWords<Ses> ses;
  // The last packet of an operation asks for an ACK at once (AR), so completions are prompt.
  const bool last = s.packet + 1 == o.packets;
  data_pds(p, pdcid, psn, retx, last, carries ? len : 0, now, pds);
  data_ses(o, s, offset, len, last, ses);
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
  std::span<const uint8_t> payload;
  if (carries && elided == 0 && len > 0) {
    payload = {o.src + offset, len};
    if (tss_ != nullptr) {  // §5.2: sealed straight from registered memory (finish())
      if (b.reserve(len) == nullptr) return false;
    } else if (config_.tx_by_reference ? !b.reference(payload) : !b.append_summed(payload)) {
      return false;
    }
  }
  if (!finish(b, f, elided, tss_ != nullptr ? payload : std::span<const uint8_t>{})) return false;
  f.priority = Priority::kData;
  s.sent = now;
  if (retx) s.retransmitted = true;
  s.ev = ev;
  s.in_flight = true;
  p.bytes_in_flight += len;
  ++(retx ? counters_.tx_retx : counters_.tx_data);
  return true;
}

// §3.3 / §3.4: a data packet's RUD or ROD request header (RUD_CC, ROD_CC with RCCC), and the
// sender state it spends: the bytes not yet sent once, RCCC credit. `payload`: bytes it
// carries (0 for a READ request).
[[gnu::always_inline]] inline void UetEndpoint::data_pds(Pdc& p, uint16_t pdcid, uint32_t psn,
                                                         bool retx, bool last, uint32_t payload,
                                                         Time now,
                                                         wire::HeaderWords<wire::PdsRudRodCc>& pds) {
  using Pds = wire::PdsRudRodCc;
  if (payload > 0 && !retx) p.unsent_bytes -= std::min<uint64_t>(p.unsent_bytes, payload);
  if (rccc_sender()) {
    // RCCC: a packet with payload spends credit, a retransmission too (as htsim); the
    // request tells the receiver what the backlog still needs beyond the credit held.
    // Speculation ends a base RTT after the first send if no grant ended it before.
    if (p.speculate_until == kNever) p.speculate_until = now + config_.base_rtt;
    if (payload > 0) p.rccc.on_sent(payload);
    p.last_target = static_cast<uint32_t>(p.rccc.credit_target(credit_backlog(p)));
    pds.set<Pds::type_field>(p.rod ? PdsType::kRodCcReq : PdsType::kRudCcReq);  // §3.4
    pds.set<Pds::ccc_id_field>(0);
    pds.set<Pds::credit_target_field>(p.last_target);
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
      static_cast<int16_t>(static_cast<int32_t>(p.base_psn - 1 - psn)));
  if (p.established) {
    pds.set<Pds::dpdcid_field>(p.peer_pdcid);
  } else {  // §3.3: SYN until the first ACK; the PDC info tells the target the start PSN
    pds.set<Pds::syn_field>(true);
    pds.set<Pds::psn_offset_field>(static_cast<uint16_t>(psn - p.start_psn));
  }
  pds.set<Pds::ar_field>(last);
}

// §4.2: a data packet's standard SES request: WRITE or SEND message `o`'s packet `s.packet`,
// or one READ chunk.
[[gnu::always_inline]] inline void UetEndpoint::data_ses(
    const Op& o, const Slot& s, uint64_t offset, uint32_t len, bool last,
    wire::HeaderWords<wire::SesStandardRequest>& ses) {
  using Ses = wire::SesStandardRequest;
  switch (o.op) {
    case Opcode::kWrite:
    case Opcode::kRecv:
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
      ses.set<Ses::message_id_field>(static_cast<uint16_t>(o.message_id + s.packet));
      ses.set<Ses::buffer_offset_field>(o.remote_offset + offset);
      ses.set<Ses::match_bits_field>(o.rkey);
      ses.set<Ses::request_length_field>(len);
      break;
    case Opcode::kSend:
      ses.set<Ses::opcode_field>(wire::SesOpcode::kSend);
      ses.set<Ses::message_id_field>(o.message_id);
      ses.set<Ses::request_length_field>(static_cast<uint32_t>(o.length));
      ses.set<Ses::ie_field>(o.abandoned);  // §4.1: the initiator gave this message up (RNR)
      if (s.packet == 0 && o.has_imm) {  // §4.2: header_data on the SOM packet, `hd` set
        ses.set<Ses::hd_field>(true);
        ses.set<Ses::header_data_field>(o.imm);
      }
      break;
  }
  if (o.op != Opcode::kRead) {
    ses.set<Ses::som_field>(s.packet == 0);
    ses.set<Ses::eom_field>(last);
    if (s.packet != 0) {
      ses.set<Ses::payload_length_field>(static_cast<uint16_t>(len));
      ses.set<Ses::message_offset_field>(static_cast<uint32_t>(offset));
    }
  } else {
    ses.set<Ses::som_field>(true);
    ses.set<Ses::eom_field>(true);
  }
}

// §3.8: the PSNs past CACK this target PDC can take, in PSNs, at most 255 [choice]: the
// receive window (mpr), or for ROD the reorder buffer (rod_window).
uint8_t UetEndpoint::advertised_mpr(const Pdc& p) const noexcept {
  return static_cast<uint8_t>(std::min<uint32_t>(255, p.rod ? config_.rod_window : config_.mpr));
}

// §3.8: a new PSN goes at most the target's latest MPR past its CACK.
[[gnu::always_inline]] inline bool UetEndpoint::mpr_room(const Pdc& p) const noexcept {
  return p.peer_mpr == 0 || p.next_psn - p.peer_cack <= p.peer_mpr;  // 0: no ACK_CC yet
}

// §3.8: ACK_CC with the cumulative ACK, a 64-bit SACK bitmap and NSCC state. When a response
// is queued, the ACK carries it and names its PSN as the trigger: an SES response (§4.6) for a
// refused request, or a response with data (§4.7) answering a READ, with the data as payload.
bool UetEndpoint::build_ack(Pdc& p, uint16_t pdcid, Frame& f) {
  const Pdc::Response* r = take_response(p);
  const bool with_data = r != nullptr && r->data;
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity),
                       with_data ? p.data_encap : p.ctrl_encap, wire_sport(p.ev_base));
  tss_begin(b);
  // The ACK is built in registers and stored once (wire::HeaderWords, as build_data).
  using Ack = wire::PdsAckCc;
  uint8_t* const ack_at = b.reserve(Ack::kSize);
  wire::SesResponse* rsp = r != nullptr && !with_data ? b.add<wire::SesResponse>() : nullptr;
  wire::SesResponseData* rd = with_data ? b.add<wire::SesResponseData>() : nullptr;
  if (ack_at == nullptr || (r != nullptr && rsp == nullptr && rd == nullptr)) return false;
  wire::HeaderWords<Ack> ack;
  const uint32_t cack = p.rcv_base - 1;
  // §3.7: the ACK names the packet that triggered it and `m` echoes that packet's CE mark.
  // A CE-marked arrival stays the trigger even if more packets came before this ACK could be
  // sent, so the initiator knows exactly which packet, and so which EV, was marked; another
  // ACK follows at once for the newer arrivals. A response's ACK names the answered PSN and
  // leaves the CE echo to the next plain ACK.
  const bool ce = r == nullptr && p.ce_seen;
  const uint32_t trigger = r != nullptr ? r->psn : ce ? p.ce_psn : p.last_psn;
  ack.set<Ack::type_field>(PdsType::kAckCc);
  ack.set<Ack::next_hdr_field>(with_data      ? NextHeader::kRspData
                               : r != nullptr ? NextHeader::kRsp
                                              : NextHeader::kNone);
  ack.set<Ack::m_field>(ce);
  // §3.7: `retx` echoes the trigger's RETX flag (a response's trigger is answered without
  // it). The initiator takes no RTT sample from such an ACK (Karn: it may answer either send;
  // bench/NOTES.md, "Choices in the sources").
  ack.set<Ack::retx_field>(r == nullptr && (ce ? p.ce_retx : p.last_retx));
  ack.set<Ack::ack_psn_offset_field>(static_cast<int16_t>(
      std::clamp<int64_t>(static_cast<int32_t>(trigger - cack), INT16_MIN, INT16_MAX)));
  ack.set<Ack::cack_psn_field>(cack);
  ack.set<Ack::spdcid_field>(pdcid);
  ack.set<Ack::dpdcid_field>(p.peer_pdcid);
  ack_cc_state(p, r, ce, ack);
  ack.set<Ack::ooo_count_field>(p.ooo_count);
  ack.set<Ack::mpr_field>(advertised_mpr(p));
  // The 64 PSNs the bitmap reports end at the PSN that triggered this ACK (as htsim does), so
  // every arrival is reported by at least its own ACK even when the window spans more than
  // 64 packets past a hole; they start right after CACK when that is close enough.
  uint32_t sack_base = p.rcv_base;
  if (static_cast<int32_t>(trigger - p.rcv_base) > 63) sack_base = trigger - 63;
  ack.set<Ack::sack_psn_offset_field>(static_cast<uint16_t>(sack_base - cack));
  ack.set<Ack::sack_bitmap_field>(sack_bitmap(p, sack_base));
  ack.store(ack_at);
  size_t elided = 0;
  if (r != nullptr && !ack_response_header(*r, rsp, rd, b, f.capacity, &elided)) return false;
  if (!finish(b, f, elided)) return false;
  f.priority = with_data ? Priority::kData : Priority::kControl;
  if (r != nullptr) {
    ++p.rsp_head;
    if (with_data) ++counters_.tx_read_data;
  } else {
    p.ce_seen = false;
  }
  p.ack_now = p.rsp_pending() || p.ce_seen ||  // one response per ACK: more follow at once
              (ce && trigger != p.last_psn);   // newer arrivals than the CE trigger
  p.ack_pending = false;
  p.unacked_rx = 0;
  p.ack_deadline = kNever;
  ++counters_.tx_acks;
  return true;
}

// The response the next ACK carries (one per ACK), if any. A PSN with a response is recorded
// as received now, with the ACK that answers it; under ROD what waited behind it may run.
[[gnu::always_inline]] inline const UetEndpoint::Pdc::Response* UetEndpoint::take_response(Pdc& p) {
  const Pdc::Response* r = p.rsp_pending() ? &p.rsp[p.rsp_head] : nullptr;
  if (r != nullptr && !r->repeat) {
    const uint32_t idx = (r->psn & mpr_mask_);
    if (test_bit(p.rsp_bits, idx)) {  // recorded as received with the ACK that answers it
      p.rsp_bits[idx / 64] &= ~(uint64_t{1} << (idx % 64));
      mark_received(p, r->psn);
      // ROD: the READ has read its data (below, into this ACK); what follows it may run.
      if (p.rod && r->psn == p.rod_next) {
        ++p.rod_next;
        rod_drain(p, p.id);
      }
    }
  }
  return r;
}

// §3.8.1 / §3.8.2: an ACK_CC's CC state: RCCC credit granted to this sender, or NSCC's.
[[gnu::always_inline]] inline void UetEndpoint::ack_cc_state(Pdc& p, const Pdc::Response* r,
                                                             bool ce,
                                                             wire::HeaderWords<wire::PdsAckCc>& ack) {
  using Ack = wire::PdsAckCc;
  if (p.credit_pending > 0) {
    // §3.8.2: RCCC credit granted to this sender rides the ACK (cc_type CREDIT).
    const auto c = static_cast<uint32_t>(std::min<uint64_t>(p.credit_pending, 0xFFFFFF));
    ack.set<Ack::cc_type_field>(wire::CcType::kCredit);
    ack.set<Ack::credit_field>(c);
    p.credit_pending -= c;
    ++counters_.tx_credit_acks;
  } else {
    // §3.8.1: how long the trigger waited here for this ACK (ns, saturating), the bytes
    // received so far (modulo 2^24); rc and rcv_cwnd_pend stay 0 (no receiver bottleneck).
    const Time arrived = r != nullptr ? r->queued : ce ? p.ce_arrival : p.last_arrival;
    const Time held = now_ > arrived ? (now_ - arrived) / kNanosecond : 0;
    ack.set<Ack::cc_type_field>(wire::CcType::kNscc);
    ack.set<Ack::service_time_field>(static_cast<uint16_t>(std::min<Time>(held, 0xFFFF)));
    ack.set<Ack::rcvd_bytes_field>(p.rcvd_bytes & 0xFFFFFF);
  }
}

// §3.8 SACK bitmap: bit i says PSN sack_base + i was received, for the PSNs inside the window
// [rcv_base, rcv_base + mpr): 64 bits of the ring of mpr (a multiple of 64) from sack_base's
// position, in at most two words.
[[gnu::always_inline]] inline uint64_t UetEndpoint::sack_bitmap(const Pdc& p,
                                                                uint32_t sack_base) const noexcept {
  uint64_t bitmap = 0;
  if (const uint32_t ahead = sack_base - p.rcv_base; ahead < config_.mpr) {
    const uint32_t at = (sack_base & mpr_mask_);
    const uint32_t word = at / 64, shift = at % 64;
    bitmap = p.rcv_bits[word] >> shift;
    if (shift != 0) bitmap |= p.rcv_bits[(word + 1) % p.rcv_bits.size()] << (64 - shift);
    if (config_.mpr - ahead < 64) bitmap &= (uint64_t{1} << (config_.mpr - ahead)) - 1;
  }
  return bitmap;
}

// §4.6 / §4.7: the SES response an ACK carries (`rsp`), or the response with data and the
// data (`rd`); `elided`: payload bytes the host carries by length.
[[gnu::always_inline]] inline bool UetEndpoint::ack_response_header(const Pdc::Response& r,
                                                                    wire::SesResponse* rsp,
                                                                    wire::SesResponseData* rd,
                                                                    wire::FrameBuilder& b,
                                                                    size_t capacity,
                                                                    size_t* elided) {
  if (rsp != nullptr) {
    rsp->set_opcode(wire::SesRspOpcode::kResponse);
    rsp->set_return_code(static_cast<wire::SesReturnCode>(r.code));
    rsp->set_message_id(r.message_id);
  } else if (rd != nullptr) {
    // §4.7: the whole chunk the READ asked for, at message_offset 0 of this response.
    rd->set_opcode(wire::SesRspOpcode::kResponseWithData);
    rd->set_return_code(wire::SesReturnCode::kOk);
    rd->set_message_id(r.message_id);
    rd->set_read_req_message_id(r.message_id);
    rd->set_payload_length(static_cast<uint16_t>(r.len));
    rd->set_modified_length(r.len);
    if (b.size() + r.len + (tss_overhead_ > 0 ? tss::kTagBytes : 0) > capacity) {
      *elided = r.len;  // the host carries payloads by length (see finish())
    } else if (r.len > 0) {
      uint8_t* payload = b.add_bytes(r.len);
      if (payload == nullptr) return false;
      std::memcpy(payload, regions_[r.key - 1].base + r.offset, r.len);
    }
  }
  return true;
}

bool UetEndpoint::build_nack(Pdc& p, uint16_t pdcid, Frame& f) {
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), encap_for(p, true, p.ev_base));
  tss_begin(b);
  wire::PdsNack* n = b.add<wire::PdsNack>();
  if (n == nullptr) return false;
  n->set_type(PdsType::kNack);
  n->set_nack_code(static_cast<wire::NackCode>(p.nack_code));
  n->set_nack_psn(p.nack_psn);
  n->set_spdcid(pdcid);
  n->set_dpdcid(p.peer_pdcid);
  n->set_nack_payload(p.rcv_base);  // §3.10: max received PSN + 1 (the next expected)
  if (!finish(b, f, 0)) return false;
  f.priority = Priority::kControl;
  p.nack_code = 0;
  ++counters_.tx_nacks;
  return true;
}

void UetEndpoint::queue_nack(Pdc& p, wire::NackCode code, uint32_t psn) {
  const auto c = static_cast<uint8_t>(code);
  for (uint32_t i = p.nack_head; i != p.nack_tail; ++i) {
    const Pdc::Nack& n = p.nacks[i % p.nacks.size()];
    if (n.code == c && n.psn == psn) return;  // already queued
  }
  if (p.nack_tail - p.nack_head >= p.nacks.size()) return;  // bounded: the RTO recovers it
  p.nacks[p.nack_tail++ % p.nacks.size()] = Pdc::Nack{c, psn};
}

// Queues a response for `r.psn` (one ACK each). A first answer marks the PSN pending so a
// duplicate is not answered twice before it is recorded; a repeat (the PSN is recorded
// already) does not. False when the ring is full: the request is dropped and comes again.
bool UetEndpoint::queue_response(Pdc& p, const Pdc::Response& r, bool repeat) {
  if (p.rsp_tail - p.rsp_head >= config_.mpr) {
    ++counters_.rsp_ring_full;
    return false;
  }
  p.rsp.reserve32(p.rsp_head, p.rsp_tail, uint64_t{p.rsp_tail - p.rsp_head} + 1, config_.mpr);
  Pdc::Response& e = p.rsp[p.rsp_tail++];
  e = r;
  e.repeat = repeat;
  e.queued = now_;
  if (!repeat) {
    const uint32_t idx = (r.psn & mpr_mask_);
    p.rsp_bits[idx / 64] |= uint64_t{1} << (idx % 64);
  }
  p.ack_now = true;
  return true;
}

bool UetEndpoint::build_stateless_nack(const StatelessNack& sn, Frame& f) {
  Pdc tmp;
  tmp.peer_ip4 = sn.peer_ip4;
  tmp.peer_mac = config_.resolve_mac(sn.peer_ip4);
  tmp.peer_pdcid = sn.peer_pdcid;
  switch (sn.kind) {
    case Stateless::kNack:
      tmp.nack_code = sn.code;
      tmp.nack_psn = sn.psn;
      tmp.rcv_base = sn.payload;
      return build_nack(tmp, 0, f);
    case Stateless::kClose:  // §3.12: answers a REQ_CLOSE for a PDC we no longer have
      ++counters_.tx_close;
      return build_ctrl(tmp, sn.local_pdcid, wire::CtrlType::kClose, sn.psn, f);
    case Stateless::kCloseAck: {
      // The ACK of a CLOSE: CACK = the CLOSE's PSN (everything up to it is done), from the
      // target PDC that was freed.
      wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity),
                           encap_for(tmp, true, static_cast<uint16_t>(NET_UDP_DYNAMIC_PORT_BASE | sn.local_pdcid)));
      tss_begin(b);
      wire::PdsAckCc* ack = b.add<wire::PdsAckCc>();
      if (ack == nullptr) return false;
      ack->set_type(PdsType::kAckCc);
      ack->set_next_hdr(NextHeader::kNone);
      ack->set_cack_psn(sn.psn);
      ack->set_spdcid(sn.local_pdcid);
      ack->set_dpdcid(sn.peer_pdcid);
      ack->set_cc_type(wire::CcType::kNscc);
      ack->set_mpr(static_cast<uint8_t>(std::min<uint32_t>(255, config_.mpr)));  // §3.8
      ack->set_sack_psn_offset(1);
      if (!finish(b, f, 0)) return false;
      f.priority = Priority::kControl;
      ++counters_.tx_acks;
      return true;
    }
  }
  return false;
}

void UetEndpoint::queue_stateless_nack(uint32_t ip, uint16_t peer_pdcid, uint8_t code,
                                       uint32_t psn, Stateless kind, uint16_t local_pdcid,
                                       const uint32_t* payload) {
  if (stateless_tail_ - stateless_head_ >= stateless_.size()) return;  // bounded: drop
  stateless_[stateless_tail_++ % stateless_.size()] =
      StatelessNack{ip, peer_pdcid, code, psn, kind, local_pdcid, payload ? *payload : psn};
}

// §3.12 control packet (CLOSE, REQ_CLOSE, CREDIT, CREDIT_REQ) on PDC `pdcid` about `psn`.
bool UetEndpoint::build_ctrl(Pdc& p, uint16_t pdcid, wire::CtrlType type, uint32_t psn,
                             Frame& f, uint32_t payload) {
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), encap_for(p, true, p.ev_base));
  tss_begin(b);
  wire::PdsCtrl* c = b.add<wire::PdsCtrl>();
  if (c == nullptr) return false;
  c->set_type(PdsType::kCtrl);
  c->set_ctl_type(type);
  c->set_psn(psn);
  c->set_spdcid(pdcid);
  c->set_dpdcid(p.peer_pdcid);
  c->set_ctrl_payload(payload);
  if (!finish(b, f, 0)) return false;
  f.priority = Priority::kControl;
  return true;
}

// The target refuses `psn` (§4.6): the PSN stays a hole with its refusal stored until the
// initiator clears it (see Pdc::gtd); this first answer goes at once.
void UetEndpoint::refuse(Pdc& p, uint32_t psn, uint8_t code, uint16_t message_id) {
  const uint32_t idx = (psn & mpr_mask_);
  if (!test_bit(p.gtd_bits, idx)) {
    p.gtd_bits[idx / 64] |= uint64_t{1} << (idx % 64);
    ++p.gtd_live;
  }
  if (p.gtd.empty()) p.gtd.assign(config_.mpr, Pdc::Refusal{});  // the PDC's first refusal
  p.gtd[idx] = Pdc::Refusal{code, message_id};
  Pdc::Response r;
  r.code = code;
  r.message_id = message_id;
  r.psn = psn;
  queue_response(p, r, /*repeat=*/true);  // if the ring is full, a duplicate gets it later
}

// §3.3: the initiator no longer needs the refusals of PSNs up to `clear_psn`: they become
// received, and the cumulative ACK moves past them.
[[gnu::always_inline]] inline void UetEndpoint::clear_to(Pdc& p, uint32_t clear_psn) {
  if (p.gtd_live == 0 || !psn_before(p.rcv_base, clear_psn + 1)) return;
  const uint32_t base = p.rcv_base;
  const uint32_t n = std::min<uint32_t>(clear_psn + 1 - base, config_.mpr);
  for (uint32_t i = 0; i < n && p.gtd_live > 0; ++i) {
    const uint32_t psn = base + i;
    const uint32_t idx = (psn & mpr_mask_);
    if (!test_bit(p.gtd_bits, idx)) continue;
    p.gtd_bits[idx / 64] &= ~(uint64_t{1} << (idx % 64));
    --p.gtd_live;
    ++counters_.refusals_cleared;
    mark_received(p, psn);
  }
}

// §5.1: a sealed frame is the TSS header, the ciphertext of everything built after it, and
// the tag; sealing comes before finish() because the UDP checksum covers the ciphertext.
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

// §5: under TSS only sealed frames are taken, opened in place and decoded through; a trimmed
// one (§5.5) is read without its tag and must be a request. Without TSS a sealed frame is
// refused.
bool UetEndpoint::tss_open(const Frame& f, wire::DecodedStorage& decoded, bool trimmed) {
  wire::Decoded& d = *decoded.get_mutable();
  const bool sealed = !d.sealed.empty();
  if (tss_ == nullptr) {
    if (!sealed) return true;
    ++counters_.rx_sealed_unexpected;
    return false;
  }
  if (!sealed) {
    ++counters_.rx_clear_refused;
    return false;
  }
  std::span<uint8_t> plain;
  tss::Drop why = tss::Drop::kCount;
  if (!(trimmed ? tss_->open_trimmed(f.data, d, &plain, &why)
                : tss_->open(f.data, d, &plain, &why))) {
    ++counters_.rx_tss_dropped;
    return false;
  }
  const wire::WireError err = wire::decode_opened(plain, &d);
  if (trimmed) {
    // A cut request fails only its SES length (or loses its extension): its PDS is readable.
    if (d.pds == nullptr || !wire::is_pdc_request(d.pds_type)) {
      ++counters_.rx_trimmed_sealed_other;
      return false;
    }
    return true;
  }
  if (err != wire::WireError::kOk) {
    counters_.wire.add(err);
    ++counters_.rx_malformed;
    return false;
  }
  return true;
}

// ------------------------------------------------------------------------------ rx

void UetEndpoint::rx(std::span<Frame* const> frames, Time now) {
  now_ = now;
  for (const Frame* f : frames) rx_one(*f, now);
  if (streamed_) {  // placed bytes visible before anything this burst caused is sent
    wire::stream_fence();
    streamed_ = false;
  }
}

[[gnu::always_inline]] inline void UetEndpoint::rx_one(const Frame& f, Time now) {
  wire::DecodedStorage decoded;  // decode_frame constructs it
  wire::DecodeOptions opts;
  opts.elided = f.wire_len > f.len ? f.wire_len - f.len : 0;  // payload carried by length
  opts.header_stack = false;  // the engine reads the named headers only
  if (f.checksums_ok) opts.verify_ip_checksum = opts.verify_udp_checksum = false;  // host did
  const wire::WireError err =
      wire::decode_frame(std::span<const uint8_t>(f.data, f.len), decoded.slot(), opts);
  const wire::Decoded& d = decoded.get();
  const bool trimmed = d.ipv4 != nullptr && d.ipv4->dscp() == kDscpTrimmed;
  // A trimmed later packet fails the SES length check only (spec/uet.md §3.14).
  if (err != wire::WireError::kOk && !(err == wire::WireError::kBadSesLength && trimmed)) {
    counters_.wire.add(err);
    ++counters_.rx_malformed;
    return;
  }
  if ((tss_ != nullptr || !d.sealed.empty()) && !tss_open(f, decoded, trimmed)) return;
  // (After a tolerated length error the decoder has every header but did not set protocol.)
  if (d.pds == nullptr || d.ipv4 == nullptr || d.ipv4->dst() != config_.local_ip4) {
    ++counters_.rx_malformed;
    return;
  }
  switch (d.pds_type) {
    case PdsType::kRudReq:
    case PdsType::kRudCcReq:  // §3.4: the same request with RCCC state
    case PdsType::kRodReq:
    case PdsType::kRodCcReq:
      rx_request(d, now);
      break;
    case PdsType::kRudiReq:  // §3.5, uet_modes.cc
      rx_rudi_req(d);
      break;
    case PdsType::kRudiResp:
      rx_rudi_resp(d);
      break;
    case PdsType::kUudReq:  // §3.6, uet_modes.cc
      rx_uud(d);
      break;
    case PdsType::kAckCc:
    case PdsType::kAck:
      rx_ack(d, now);
      break;
    case PdsType::kNack:
      rx_nack(d, now);
      break;
    case PdsType::kCtrl:
      rx_ctrl(d, now);
      break;
    default:
      ++counters_.rx_malformed;  // a mode this engine does not speak yet
      break;
  }
}

// §3.3 target side: find or create the PDC, check the window, serve the SES request, note
// the ACK.
[[gnu::always_inline]] inline void UetEndpoint::rx_request(const wire::Decoded& d, Time now) {
  // A RUD_CC request (§3.4) begins with the RUD request's fields.
  const wire::PdsRudRod& h = *wire::as<wire::PdsRudRod>(d.pds);
  const bool rod = d.pds_type == PdsType::kRodReq || d.pds_type == PdsType::kRodCcReq;
  const uint32_t psn = h.psn();
  // §3.14: a trimmed request has no UDP checksum, so its PDS header may be damaged without
  // anyone noticing: it never earns a PDC-fatal NACK (INV_DPDCID, NO_PDC_AVAIL) and never
  // replaces a PDC; the initiator's RTO recovers it.
  const bool trimmed = d.ipv4->dscp() == kDscpTrimmed;
  uint16_t id = 0;
  Pdc* const p = h.syn() ? syn_target(d, h, rod, trimmed, &id) : known_target(d, h, trimmed, &id);
  if (p == nullptr) return;
  if (p->rod != rod) {  // §3.10 PDC_MODE_MISMATCH (PDC-fatal)
    if (trimmed) {
      ++counters_.rx_trimmed_unverified;
      return;
    }
    ++counters_.rx_mode_mismatch;
    queue_nack(*p, wire::NackCode::kPdcModeMismatch, psn);
    return;
  }
  ++counters_.rx_data;
  note_request(*p, id, d, h, trimmed, now);
  const wire::SesStandardRequest* ses = d.ses_as<wire::SesStandardRequest>();
  if (!request_is_new(*p, psn, ses, trimmed)) return;
  // §3.8.1 rcvd_bytes and §3.8 ooo_count: a new, whole request.
  const uint32_t delta = psn - p->rcv_base;
  p->rcvd_bytes += static_cast<uint32_t>(d.payload.size() + d.elided);
  if (delta != 0 && p->ooo_count != 0xFFFF) ++p->ooo_count;
  // ROD (uet_modes.cc): a request past the next one to execute waits in the reorder buffer.
  if (p->rod && psn != p->rod_next) {
    if (rod_stage(*p, d, ses, psn) &&
        ses != nullptr && ses->opcode() == wire::SesOpcode::kWrite) {
      p->ack_now = true;  // out of order: SACK it at once
    }
    return;
  }
  const Exec e =
      ses != nullptr ? execute_inline(*p, id, *ses, d.payload, d.elided, psn) : Exec::kRecord;
  if (p->rod && e != Exec::kWait) ++p->rod_next;
  if (e != Exec::kRecord) {
    if (p->rod && e == Exec::kDone) rod_drain(*p, id);
    return;
  }
  const bool in_order = delta == 0;
  mark_received(*p, psn);
  if (p->rod) rod_drain(*p, id);  // staged requests behind it run now, in PSN order
  // §3.7 ACK coalescing: at once on AR, ECN-CE, out of order or a pending response; else
  // every ack_every packets or after ack_delay.
  ++p->unacked_rx;
  if (h.ar() || d.ecn == 3 || !in_order || p->rsp_pending() || p->unacked_rx >= config_.ack_every) {
    p->ack_now = true;
  } else if (!p->ack_pending) {
    p->ack_pending = true;
    p->ack_deadline = now + config_.ack_delay;
    deadline_ = std::min(deadline_, p->ack_deadline);
  }
}

// A SYN's target PDC: the one this (peer, PDC id) has, or a new one (§3.3); null when refused
// (NACKed or, trimmed, dropped).
[[gnu::always_inline]] inline UetEndpoint::Pdc* UetEndpoint::syn_target(const wire::Decoded& d,
                                                                        const wire::PdsRudRod& h,
                                                                        bool rod, bool trimmed,
                                                                        uint16_t* id) {
  const uint32_t src = d.ipv4->src();
  const uint32_t psn = h.psn();
  const uint64_t key = uint64_t{src} << 16 | h.spdcid();
  const uint32_t start = psn - h.psn_offset();
  if (auto it = target_by_peer_pdc_.find(key); it != target_by_peer_pdc_.end()) {
    *id = it->second;
    // §3.3: a SYN names its PDC's start PSN. Another start PSN under the same (peer, PDC
    // id) is a new PDC of that peer (the old one failed or closed without our knowing):
    // the stale state goes, the new PDC starts afresh.
    if (pdcs_[*id].start_psn == start) {
      Pdc* p = &pdcs_[*id];
      mark_ready(*p);
      return p;
    }
    if (trimmed) {
      ++counters_.rx_trimmed_unverified;
      return nullptr;
    }
    ++counters_.pdc_reopened;
    release_target(*id);
  }
  // §5.6 secure establishment: a new PDC starts at or above the expected PSN.
  if (tss_ != nullptr && !tss_->start_psn_ok(src, h.spdcid(), start)) {
    if (trimmed) {
      ++counters_.rx_trimmed_unverified;
      return nullptr;
    }
    ++counters_.rx_start_psn_refused;
    const uint32_t expected = tss_->expected_start_psn(src, h.spdcid(), start);
    queue_stateless_nack(src, h.spdcid(), static_cast<uint8_t>(wire::NackCode::kNewStartPsn),
                         psn, Stateless::kNack, 0, &expected);
    return nullptr;
  }
  int32_t n = alloc_pdc(Role::kTarget);
  if (n < 0 && !trimmed) n = reclaim_unanswered();
  if (n < 0) {  // §3.10 NO_PDC_AVAIL: the table is full
    if (trimmed) {
      ++counters_.rx_trimmed_unverified;
      return nullptr;
    }
    ++counters_.rx_no_pdc_avail;
    queue_stateless_nack(src, h.spdcid(), static_cast<uint8_t>(wire::NackCode::kNoPdcAvail), psn);
    return nullptr;
  }
  *id = static_cast<uint16_t>(n);
  Pdc& np = pdcs_[*id];
  set_peer(np, src);
  np.peer_pdcid = h.spdcid();
  np.ev_base = static_cast<uint16_t>(next_random());
  np.rcv_base = np.start_psn = start;
  np.rod = rod;  // the SYN fixes the PDC's mode
  np.rod_next = start;
  target_by_peer_pdc_.insert_or_assign(key, *id);
  mark_ready(np);
  return &np;
}

// A request's target PDC named by DPDCID; null (§3.10 INV_DPDCID, or dropped if trimmed) when
// it is not this peer's.
[[gnu::always_inline]] inline UetEndpoint::Pdc* UetEndpoint::known_target(const wire::Decoded& d,
                                                                          const wire::PdsRudRod& h,
                                                                          bool trimmed,
                                                                          uint16_t* id) {
  const uint32_t src = d.ipv4->src();
  *id = h.dpdcid();
  Pdc* p = pdc(*id);
  if (p != nullptr && p->role == Role::kTarget && p->peer_ip4 == src &&
      p->peer_pdcid == h.spdcid()) {
    return p;
  }
  if (trimmed) {
    ++counters_.rx_trimmed_unverified;
    return nullptr;
  }
  ++counters_.rx_unknown_pdc;
  queue_stateless_nack(src, h.spdcid(), static_cast<uint8_t>(wire::NackCode::kInvDpdcid), h.psn());
  return nullptr;
}

// What a request tells its target PDC whether or not it is new: the sender's credit wish, that
// the initiator is alive, its clear PSN, and the newest arrival (and CE mark) the ACK reports.
[[gnu::always_inline]] inline void UetEndpoint::note_request(Pdc& p, uint16_t id,
                                                             const wire::Decoded& d,
                                                             const wire::PdsRudRod& h,
                                                             bool trimmed, Time now) {
  const uint32_t psn = h.psn();
  // RCCC: each RUD_CC request says what its sender still wants (want is set, not added, so
  // a lost grant is asked for again). A trimmed header is used too: the target is bounded.
  if (const wire::PdsRudRodCc* cc = d.pds_as<wire::PdsRudRodCc>(); cc != nullptr) {
    rccc_rx_.on_request(id, cc->credit_target(), now);
  }
  p.close_tries = 0;  // the initiator is alive: REQ_CLOSE may start over when idle again
  p.unanswered = false;
  if (config_.idle_timeout != 0) {
    p.idle_deadline = now + 2 * config_.idle_timeout;
    deadline_ = std::min(deadline_, p.idle_deadline);
  }
  // §3.3: refusals up to the clear PSN are no longer needed (not from a trimmed header).
  if (!trimmed) clear_to(p, psn + static_cast<uint32_t>(static_cast<int32_t>(h.clear_psn_offset())));
  p.last_psn = psn;
  p.last_retx = h.retx();
  p.last_arrival = now;
  if (d.ecn == 3 && !p.ce_seen) {  // the first CE since the last ACK triggers the next one
    p.ce_seen = true;
    p.ce_psn = psn;
    p.ce_retx = h.retx();
    p.ce_arrival = now;
  }
}

// §3.10 receive window: whether `psn` is new and inside it. If not, it is answered: NACKed out
// of the window or trimmed, its refusal again (refused, §4.6), its data again (a READ
// answered), or a re-ACK (a duplicate).
[[gnu::always_inline]] inline bool UetEndpoint::request_is_new(Pdc& p, uint32_t psn,
                                                               const wire::SesStandardRequest* ses,
                                                               bool trimmed) {
  const uint32_t delta = psn - p.rcv_base;
  const uint32_t idx = (psn & mpr_mask_);
  const bool old = psn_before(psn, p.rcv_base);
  if (!old && delta >= config_.mpr) {  // §3.10 PSN_OOR_WINDOW
    ++counters_.rx_out_of_window;
    queue_nack(p, wire::NackCode::kPsnOorWindow, psn);
    return false;
  }
  if (!old && test_bit(p.gtd_bits, idx)) {  // a refused PSN again: its refusal again
    ++counters_.rx_duplicates;
    if (!trimmed) {
      const Pdc::Refusal& g = p.gtd[idx];
      Pdc::Response r;
      r.code = g.code;
      r.message_id = g.message_id;
      r.psn = psn;
      if (queue_response(p, r, /*repeat=*/true)) ++counters_.tx_refusal_repeats;
    }
    p.ack_now = true;
    return false;
  }
  const bool received = old || test_bit(p.rcv_bits, idx);
  if (received || test_bit(p.rsp_bits, idx)) {
    ++counters_.rx_duplicates;  // never delivered twice; re-ACK at once
    // A READ already answered is answered again: its data ACK may have been lost, and a read
    // is idempotent. One that is still queued (rsp_bits) is not answered twice.
    if (received && !trimmed && ses != nullptr && ses->opcode() == wire::SesOpcode::kRead) {
      queue_response(p, read_response(*ses, psn), /*repeat=*/true);
    }
    p.ack_now = true;
    return false;
  }
  if (trimmed) {  // §3.14: a trimmed request: ask for it again
    ++counters_.rx_trimmed;
    queue_nack(p, wire::NackCode::kTrimmed, psn);
    return false;
  }
  return true;
}

UetEndpoint::Exec UetEndpoint::execute(Pdc& p, uint16_t id, const wire::SesStandardRequest& ses,
                                      std::span<const uint8_t> payload, size_t elided,
                                      uint32_t psn) {
  return execute_inline(p, id, ses, payload, elided, psn);
}

// Executes request `psn` at the target (§4.2 WRITE placement, §4.7 READ, SEND): from the frame,
// or (ROD) from the reorder buffer.
[[gnu::always_inline]] inline UetEndpoint::Exec UetEndpoint::execute_inline(
    Pdc& p, uint16_t id, const wire::SesStandardRequest& ses, std::span<const uint8_t> payload,
    size_t elided, uint32_t psn) {
  switch (ses.opcode()) {
    case wire::SesOpcode::kWrite: {
      // §4.2 placement: payload at buffer_offset + message_offset in region match_bits.
      const auto [key, at, len] = write_placement(ses, payload.size());
      if (const wire::SesReturnCode why = check_region(key, at, len);
          why != wire::SesReturnCode::kNull) {
        refuse(p, psn, static_cast<uint8_t>(why), ses.message_id());
        return Exec::kDone;  // a hole until cleared (Pdc::gtd)
      }
      if (!payload.empty()) {
        const Region& r = regions_[key - 1];
        if (r.stream) {
          wire::stream_copy(r.base + at, payload.data(), payload.size());
          streamed_ = true;
        } else {
          std::memcpy(r.base + at, payload.data(), payload.size());
        }
      }
      break;
    }
    case wire::SesOpcode::kRead: {
      // Answered by one ACK carrying the data, recorded with it; or refused (Pdc::gtd).
      const Pdc::Response r = read_response(ses, psn);
      if (r.data) {
        queue_response(p, r, /*repeat=*/false);
        return Exec::kWait;
      }
      refuse(p, psn, r.code, r.message_id);
      return Exec::kDone;
    }
    case wire::SesOpcode::kSend:
      return rx_send(p, id, payload, elided, ses, psn);
    case wire::SesOpcode::kNoop:
      break;
    default: {  // §4.9 UNSUPPORTED_OP
      ++counters_.rx_unsupported;
      refuse(p, psn, static_cast<uint8_t>(wire::SesReturnCode::kUnsupportedOp),
             ses.message_id());
      return Exec::kDone;
    }
  }
  return Exec::kRecord;
}

// The answer to READ `psn`: its data, or why not (§4.9). Key and range are checked here, at
// every (re)execution; the data is read when the ACK is built.
UetEndpoint::Pdc::Response UetEndpoint::read_response(const wire::SesStandardRequest& ses,
                                                      uint32_t psn) {
  Pdc::Response r;
  r.message_id = ses.message_id();
  r.psn = psn;
  const uint64_t key = ses.match_bits();
  const uint64_t at = ses.buffer_offset();
  const uint64_t len = ses.request_length();
  if (const wire::SesReturnCode why = check_region(key, at, len);
      why != wire::SesReturnCode::kNull) {
    r.code = static_cast<uint8_t>(why);
  } else if (len > config_.payload_bytes) {  // one response packet per READ request
    ++counters_.rx_unsupported;
    r.code = static_cast<uint8_t>(wire::SesReturnCode::kUnsupportedSize);
  } else {
    r.code = static_cast<uint8_t>(wire::SesReturnCode::kOk);
    r.data = true;
    r.key = static_cast<uint32_t>(key);
    r.offset = at;
    r.len = static_cast<uint32_t>(len);
  }
  return r;
}

UetEndpoint::RxMsg* UetEndpoint::find_msg(uint16_t pdc_id, uint16_t message_id) noexcept {
  if (rx_msgs_used_ == 0) return nullptr;
  for (RxMsg& m : rx_msgs_) {
    if (m.in_use && m.pdc == pdc_id && m.message_id == message_id) return &m;
  }
  return nullptr;
}

// Receive completions leave in buffer posting order.
void UetEndpoint::deliver_recvs() {
  while (recv_head_ != recv_claim_) {
    const Recv& r = recvs_[recv_head_];
    if (!r.done) break;
    completions_.push_back(Completion{r.rb.wr_id, r.status, r.bytes, Opcode::kRecv, r.peer,
                                      r.has_imm, r.imm});
    ++recv_head_;
  }
}

// §4.2 SEND at the target: the first packet of a message to arrive claims the next posted
// buffer; each packet lands at its message_offset. kRecord: the PSN is to be recorded now;
// kWait: NACKed (no buffer, no message state: the initiator retries); kDone: refused.
UetEndpoint::Exec UetEndpoint::rx_send(Pdc& p, uint16_t id, std::span<const uint8_t> payload,
                                      size_t elided, const wire::SesStandardRequest& ses,
                                      uint32_t psn) {
  const uint64_t at = ses.som() ? 0 : ses.message_offset();
  uint64_t len = ses.som() ? payload.size() + elided : ses.payload_length();
  RxMsg* m = find_msg(id, ses.message_id());
  if (m == nullptr) {
    if (ses.ie()) {  // §4.1: given up by its sender: nothing to place, no buffer to claim
      ++counters_.rx_initiator_err;
      return Exec::kRecord;
    }
    if (recv_claim_ == recv_tail_) {  // no buffer posted: "still processing; retry" (§3.10)
      ++counters_.rx_rnr;
      queue_nack(p, wire::NackCode::kRcvdSesProcg, psn);
      return Exec::kWait;
    }
    if (rx_msgs_used_ == rx_msgs_.size()) {
      ++counters_.rx_no_msg_state;
      queue_nack(p, wire::NackCode::kNoSesMsgAvail, psn);
      return Exec::kWait;
    }
    for (RxMsg& e : rx_msgs_) {
      if (!e.in_use) {
        m = &e;
        break;
      }
    }
    Recv& r = recvs_[recv_claim_];
    r.peer = p.peer_ip4;
    *m = RxMsg{true, id, ses.message_id(), recv_claim_, ses.request_length(),
               ses.request_length(), OpStatus::kSuccess};
    ++recv_claim_;
    ++rx_msgs_used_;
    if (m->length > r.rb.length) {  // nothing of it is written
      ++counters_.rx_length_error;
      m->status = OpStatus::kLengthError;
    }
  }
  Recv& r = recvs_[m->recv];
  Exec result = Exec::kRecord;
  if (m->status == OpStatus::kLengthError) {
    // Every packet of the message answers TOO_LONG (§4.9), so the initiator learns it whatever
    // is lost; a packet whose answer cannot be queued is dropped and comes again.
    refuse(p, psn, static_cast<uint8_t>(wire::SesReturnCode::kTooLong), ses.message_id());
    result = Exec::kDone;
  } else if (at > m->length || len > m->length - at) {
    ++counters_.rx_bad_send;  // outside its own message: counted, never placed
    m->status = OpStatus::kRemoteInvalidRequest;
    len = std::min(len, m->remaining);
  } else {
    const size_t have = std::min<size_t>(payload.size(), static_cast<size_t>(len));
    if (have > 0) std::memcpy(r.rb.base + at, payload.data(), have);
  }
  if (ses.som() && ses.hd()) {  // §4.2: the immediate data rides in header_data
    r.has_imm = true;
    r.imm = static_cast<uint32_t>(ses.header_data());
  }
  if (ses.ie()) {
    ++counters_.rx_initiator_err;
    if (m->status == OpStatus::kSuccess) m->status = OpStatus::kRemoteInvalidRequest;
  }
  m->remaining -= std::min(len, m->remaining);
  if (m->remaining == 0) {
    r.done = true;
    r.status = m->status;
    r.bytes = m->status == OpStatus::kSuccess ? m->length : 0;
    m->in_use = false;
    --rx_msgs_used_;
    deliver_recvs();
  }
  return result;
}

// `ce`: the ACK echoed CE for this very PSN (it was the ACK's trigger). Inline (here and
// covered_psn): an ACK runs it for every PSN it covers, and the out-of-line calls cost about
// as much as their bodies (bench/NOTES.md, "Fourth round (h/engine4)").
[[gnu::always_inline]] inline void UetEndpoint::ack_psn(Pdc& p, uint32_t psn, bool ce, Time now) {
  Slot& s = p.slots[(psn & mpr_mask_)];
  if (s.acked) return;
  p.sel.on_ack(s.ev, ce, now);
  if (s.in_flight) p.bytes_in_flight -= s.len;
  if (s.resend) --p.resend_pending;
  s.acked = true;
  s.in_flight = false;
  s.resend = false;
  s.rnr_wait = false;
  ++p.acked_total;
  --p.ops[s.op].unacked;
}

// RFC 6298 §2: SRTT/RTTVAR from one sample of a packet sent once.
void UetEndpoint::on_rtt_sample(Pdc& p, Time rtt) noexcept {
  if (p.srtt == 0) {
    p.srtt = rtt;
    p.rttvar = rtt / 2;
  } else {
    const Time err = p.srtt > rtt ? p.srtt - rtt : rtt - p.srtt;
    p.rttvar = (3 * p.rttvar + err) / 4;
    p.srtt = (7 * p.srtt + rtt) / 8;
  }
  p.rtt_max = std::max(p.rtt_max, rtt);
  counters_.rtt_max = std::max(counters_.rtt_max, rtt);
}

// RFC 6298 §2.3, floored at rto_srtt_pct of srtt and at rto_rtt_max_pct of the largest sample.
Time UetEndpoint::rto_estimate(const Pdc& p) noexcept {
  if (p.srtt == 0) return config_.rto;
  const Time est = std::max(p.srtt + 4 * p.rttvar, p.srtt * config_.rto_srtt_pct / 100);
  const Time rto = std::clamp(est, config_.min_rto, config_.max_rto);
  if (config_.rto_rtt_max_pct == 0) return rto;
  const Time floored = std::clamp(std::max(est, p.rtt_max * config_.rto_rtt_max_pct / 100),
                                  config_.min_rto, config_.max_rto);
  if (floored > rto) ++counters_.rto_below_rtt_max;
  return floored;
}

// Tail-loss probe (RFC 8985 §7): armed only when all posted work has been sent, PSNs are
// outstanding, a sample exists and no probe went since the last progress; it fires
// 2 srtt + ack_delay after the last send or ACK.
[[gnu::always_inline]] inline void UetEndpoint::arm_tlp(Pdc& p, Time now) noexcept {
  p.tlp_deadline = kNever;
  if (!config_.tlp || p.srtt == 0 || p.tlp_done || p.op_send != p.op_tail ||
      !psn_before(p.base_psn, p.next_psn)) {
    return;
  }
  // RFC 8985 §7.2: PTO = 2 srtt (+ the peer's ACK delay), but before the RTO: with a small
  // RTO (min_rto) the probe goes at 3/4 of it, so it still saves the timeout's window cut.
  // rto_rtt_max_pct: a stall as long as an earlier one is not a lost tail either.
  const Time wait = std::max(2 * p.srtt + config_.ack_delay,
                             p.rtt_max * config_.rto_rtt_max_pct / 100);
  const Time pto = std::min(wait, p.rto * 3 / 4);
  p.tlp_deadline = now + pto;
  deadline_ = std::min(deadline_, p.tlp_deadline);
}

// RFC 8985 §6.2 with a count threshold: a hole with reorder_threshold acknowledged PSNs past
// it, sent before the newest delivered packet, is lost once it has been out that packet's
// round trip plus the reordering window. At an ACK this is the send-time rule (sent +
// window <= the newest delivered packet's send time); when nothing newer arrives (the flow has
// nothing left to send, or its window is full) the reorder timer (§6.3) fires at that time
// instead of waiting for the probe or the RTO.
// The count waits for later packets to show a hole. Once the last PSN sent is acknowledged
// no later ACK can show one, so every hole before it is judged by time alone, as RFC 8985
// does (it has no count): a lost first packet of a short write goes one RTT and the window
// after it was sent, not at the probe timeout after the last ACK.
void UetEndpoint::rack_detect(Pdc& p, Time now) {
  p.rack_deadline = kNever;
  if (p.rack_sent == 0 || !psn_before(p.base_psn, p.next_psn)) return;
  const Time window = reorder_window(p);
  const bool tail_acked = p.slots[(p.next_psn - 1) & mpr_mask_].acked;
  const uint32_t end = p.rack_highest + 1 - (tail_acked ? 0 : config_.reorder_threshold);
  for (uint32_t psn = p.base_psn; psn_before(psn, end); ++psn) {
    const Slot& s = p.slots[(psn & mpr_mask_)];
    if (!s.in_flight || s.acked || s.sent > p.rack_sent) continue;
    const Time lost_at = s.sent + p.rack_rtt + window;
    if (lost_at <= now) {
      p.sel.on_nack(s.ev, now);  // an inferred loss counts against its path like a NACK
      mark_lost(p, psn);
      ++counters_.fast_retx;
    } else {
      p.rack_deadline = std::min(p.rack_deadline, lost_at);
    }
  }
  deadline_ = std::min(deadline_, p.rack_deadline);
}

// Resends the highest unacknowledged PSN in flight, once: its ACK carries the SACK state that
// repairs the rest, or it repairs the last packet itself.
void UetEndpoint::send_tlp(Pdc& p) {
  p.tlp_done = true;
  for (uint32_t psn = p.next_psn; psn_before(p.base_psn, psn);) {
    --psn;
    const Slot& s = p.slots[(psn & mpr_mask_)];
    if (s.acked || !s.in_flight || s.rnr_wait) continue;
    mark_lost(p, psn);
    ++counters_.tlp_probes;
    return;
  }
}

// `psn` is covered by an ACK's CACK or SACK. A READ PSN counts only with its data: covered
// without it, its data ACK was lost (or is late). If a READ sent `reorder_window` after this
// one got its data (`data_sent`), ask again; otherwise the RTO will.
[[gnu::always_inline]] inline void UetEndpoint::covered_psn(Pdc& p, uint32_t psn, bool ce,
                                                            Time data_sent, Time now) {
  Slot& s = p.slots[(psn & mpr_mask_)];
  if (s.acked) return;
  const Op& o = p.ops[s.op];
  if (o.op == Opcode::kRead && !o.failed) {
    if (data_sent > 0 && s.in_flight && s.sent + reorder_window(p) <= data_sent) {
      mark_lost(p, psn);
      ++counters_.read_data_lost;
    }
    return;
  }
  ack_psn(p, psn, ce, now);
}

void UetEndpoint::mark_lost(Pdc& p, uint32_t psn) {
  Slot& s = p.slots[(psn & mpr_mask_)];
  if (s.acked || s.resend || !s.in_flight) return;
  p.bytes_in_flight -= s.len;
  s.in_flight = false;
  s.rnr_wait = false;
  s.resend = true;
  ++p.resend_pending;
}

[[gnu::always_inline]] inline void UetEndpoint::retire_ops(Pdc& p) {
  // Slide the window past acknowledged PSNs.
  while (psn_before(p.base_psn, p.next_psn) && p.slots[(p.base_psn & mpr_mask_)].acked) {
    p.slots[(p.base_psn & mpr_mask_)] = Slot{};
    ++p.base_psn;
  }
  // Complete operations whose every packet was sent (behind op_send) and acknowledged, in
  // posting order.
  while (p.op_head != p.op_send) {
    const Op& o = p.ops[p.op_head];
    if (o.unacked != 0) break;
    completions_.push_back(Completion{o.wr_id, o.failed ? o.status : OpStatus::kSuccess,
                                      o.failed ? 0 : o.length, o.op});
    ++p.op_head;
  }
}

// §3.7/§3.8 initiator side.
void UetEndpoint::rx_ack(const wire::Decoded& d, Time now) {
  const wire::PdsAck& h = *wire::as<wire::PdsAck>(d.pds);
  Pdc* p = pdc(h.dpdcid());
  if (p == nullptr || p->role != Role::kInitiator || p->peer_ip4 != d.ipv4->src()) {
    ++counters_.rx_unknown_pdc;
    return;
  }
  const uint32_t cack = h.cack_psn();
  const wire::PdsAckCc* const cc = d.pds_as<wire::PdsAckCc>();
  if (cc != nullptr && cc->cc_type() == wire::CcType::kCredit && !p->closing) {
    ++counters_.rx_credit_acks;  // §3.8.2: RCCC credit riding the ACK
    on_credit(*p, cc->credit());
  }
  if (p->closing) {  // §3.12: only the ACK of the CLOSE matters now
    if (cack == p->close_psn && h.spdcid() == p->peer_pdcid) {
      ++counters_.pdcs_closed;
      free_pdc(p->id);
    } else {
      ++counters_.rx_stale_ack;
    }
    return;
  }
  const uint32_t trig = cack + static_cast<uint32_t>(static_cast<int32_t>(h.ack_psn_offset()));
  const bool trig_in_window = !psn_before(trig, p->base_psn) && psn_before(trig, p->next_psn);
  const uint64_t in_flight_before = p->bytes_in_flight;
  const uint64_t acked_before = p->acked_total;
  // An RTT sample from the PSN that triggered the ACK, if it was sent once (Karn).
  Time rtt = 0;
  if (trig_in_window) {
    const Slot& s = p->slots[(trig & mpr_mask_)];
    if (s.in_flight && !s.retransmitted && !h.retx()) rtt = now - s.sent;
  }
  const Time data_sent = ack_response(*p, d, trig, trig_in_window, now);
  // Only PSNs we sent can be acknowledged: base-1 <= cack < next.
  if (psn_before(cack, p->base_psn - 1) || !psn_before(cack, p->next_psn)) {
    ++counters_.rx_stale_ack;
    retire_ops(*p);
    return;
  }
  ++counters_.rx_acks;
  p->last_ack_at = now;
  // §3.8: new PSNs stay within the window this target advertises (mpr_room); MPR 0 says
  // nothing [choice].
  if (p->peer_mpr == 0 || psn_before(p->peer_cack, cack)) p->peer_cack = cack;
  if (cc != nullptr && cc->mpr() != 0) p->peer_mpr = cc->mpr();
  if (!p->established) {  // §3.3: the first ACK carries the target's PDC id
    p->established = true;
    p->peer_pdcid = h.spdcid();
  }
  ack_covered(*p, cack, trig, h.m(), cc, data_sent, now);
  nscc_on_ack(*p, cc, h.m(), rtt, in_flight_before, now);
  retire_ops(*p);
  // Progress restarts the timer for what is still unacknowledged; a new probe may go after
  // progress. A timeout's backoff is kept until a valid RTT sample (Karn; RFC 6298 §5.7):
  // when every ACK is for a retransmitted PSN, the estimate is as old as the last sample, and
  // resetting the backoff would time out again at once (bench/NOTES.md, "Choices in the
  // sources"). An ACK that acknowledges nothing new (a duplicate, or the late original of a
  // resent PSN) restarts neither timer (RFC 6298 §5.3, RFC 8985 §7.2): such ACKs would keep
  // pushing a stuck flow's probe and RTO out.
  if (rtt > 0) on_rtt_sample(*p, rtt);
  const bool progress = p->acked_total != acked_before;
  if (progress) p->tlp_done = false;
  p->rto = rtt > 0 ? rto_estimate(*p) : std::max(p->rto, rto_estimate(*p));
  if (!psn_before(p->base_psn, p->next_psn)) {
    p->rto_deadline = kNever;
  } else if (progress || p->rto_deadline == kNever) {
    p->rto_deadline = now + p->rto;
  }
  deadline_ = std::min(deadline_, p->rto_deadline);
  if (progress) arm_tlp(*p, now);
  note_idle(*p, now);
}

// §4.6 / §4.7 at the initiator: the SES response an ACK carries answers its trigger PSN. Read
// data is placed at its chunk's offset, in any order, once: only while the chunk's slot waits
// for it. Returns the send time of the READ whose data was placed (0: none).
[[gnu::always_inline]] inline Time UetEndpoint::ack_response(Pdc& p, const wire::Decoded& d,
                                                             uint32_t trig, bool trig_in_window,
                                                             Time now) {
  Time data_sent = 0;
  if (const wire::SesResponseData* rd = d.ses_as<wire::SesResponseData>(); rd != nullptr) {
    bool placed = false;
    if (trig_in_window) {
      const Slot& s = p.slots[(trig & mpr_mask_)];
      Op& o = p.ops[s.op];
      if (o.op == Opcode::kRead && !s.acked && !o.failed &&
          rd->return_code() == wire::SesReturnCode::kOk &&
          rd->read_req_message_id() == static_cast<uint16_t>(o.message_id + s.packet) &&
          rd->payload_length() == s.len && rd->message_offset() == 0) {
        const size_t have = std::min<size_t>(d.payload.size(), s.len);
        if (have > 0) {
          std::memcpy(o.dst + uint64_t{s.packet} * config_.payload_bytes, d.payload.data(), have);
        }
        data_sent = s.sent;
        ack_psn(p, trig, false, now);
        ++counters_.rx_read_data;
        placed = true;
      }
    }
    if (!placed) ++counters_.rx_stale_read_data;
  } else if (const wire::SesResponse* rsp = d.ses_as<wire::SesResponse>(); rsp != nullptr) {
    const auto rc = rsp->return_code();
    if (trig_in_window && rc != wire::SesReturnCode::kOk && rc != wire::SesReturnCode::kNull) {
      const Slot& s = p.slots[(trig & mpr_mask_)];
      Op& o = p.ops[s.op];
      const auto mid = static_cast<uint16_t>(o.message_id + (o.op == Opcode::kRead ? s.packet : 0));
      if (!s.acked && mid == rsp->message_id()) {
        if (!o.failed) {
          o.failed = true;
          o.status = status_for(rc);
        }
        // The refusal is the acknowledgement of its PSN: the target leaves it out of CACK and
        // SACK until our clear PSN passes it (Pdc::gtd).
        ack_psn(p, trig, false, now);
      }
    }
  }
  return data_sent;
}

// The PSNs an ACK covers (CACK and SACK) are acknowledged, and RACK learns the newest delivered
// packet. `marked`: §3.7 `m` echoes CE on the trigger alone. The target ACKs at once on a CE
// mark and keeps the marked packet as the trigger, so every other PSN this ACK covers arrived
// unmarked: the path selector hears about each newly acknowledged packet's EV.
[[gnu::always_inline]] inline void UetEndpoint::ack_covered(Pdc& p, uint32_t cack, uint32_t trig,
                                                            bool marked, const wire::PdsAckCc* cc,
                                                            Time data_sent, Time now) {
  // The send time of the newest packet (sent once: Karn) this ACK covers: holes sent well
  // before it are lost (a time guard against the reordering that spraying causes).
  Time newest_sent = 0;
  for (uint32_t psn = p.base_psn; psn_before(psn, cack + 1); ++psn) {
    const Slot& s = p.slots[(psn & mpr_mask_)];
    if (!s.retransmitted) newest_sent = std::max(newest_sent, s.sent);
    covered_psn(p, psn, marked && psn == trig, data_sent, now);
  }
  uint32_t highest = cack;
  if (cc != nullptr) {
    const uint32_t sack_base = cack + cc->sack_psn_offset();
    // The set bits in ascending order. A bit at or past next_psn claims a PSN never sent
    // (a forged or corrupt ACK): ignored, counted once per ACK.
    bool unsent = false;
    for (uint64_t bits = cc->sack_bitmap(); bits != 0; bits &= bits - 1) {
      const uint32_t psn = sack_base + static_cast<uint32_t>(std::countr_zero(bits));
      if (!psn_before(psn, p.next_psn)) unsent = true;
      if (psn_before(psn, p.base_psn) || !psn_before(psn, p.next_psn)) continue;
      const Slot& s = p.slots[(psn & mpr_mask_)];
      if (!s.retransmitted) newest_sent = std::max(newest_sent, s.sent);
      covered_psn(p, psn, marked && psn == trig, data_sent, now);
      if (psn_before(highest, psn)) highest = psn;
    }
    counters_.rx_sack_unsent += unsent;
  }
  // RACK (RFC 8985 §6.2): remember the newest delivered packet's send time and round trip.
  if (newest_sent > 0 && newest_sent >= p.rack_sent) {
    p.rack_sent = newest_sent;
    p.rack_rtt = now - newest_sent;
  }
  if (psn_before(p.rack_highest, highest)) p.rack_highest = highest;
  rack_detect(p, now);
}

// NSCC (cc/nscc.h) sees the bytes this ACK took out of flight, its ECN echo and the RTT
// without the time the target held the trigger (§3.8.1 service_time), never below base_rtt for
// that (a sample already below it is kept); the receiver's penalty applies to the bytes it
// newly received (rcvd_bytes delta, modulo 2^24; a reordered ACK adds none).
[[gnu::always_inline]] inline void UetEndpoint::nscc_on_ack(Pdc& p, const wire::PdsAckCc* cc,
                                                            bool marked, Time rtt,
                                                            uint64_t in_flight_before, Time now) {
  Time nscc_rtt = rtt;
  uint32_t newly_rcvd = 0;
  if (cc != nullptr && cc->cc_type() == wire::CcType::kNscc) {
    if (rtt > 0) {
      const Time held = Time{cc->service_time()} * kNanosecond;
      nscc_rtt = std::max(rtt - held, std::min(rtt, config_.base_rtt));
    }
    if (const uint32_t delta = (cc->rcvd_bytes() - p.peer_rcvd_bytes) & 0xFFFFFF;
        delta < 0x800000) {
      newly_rcvd = delta;
      p.peer_rcvd_bytes = cc->rcvd_bytes();
    }
  }
  if (p.bytes_in_flight < in_flight_before) {
    p.nscc.on_ack(in_flight_before - p.bytes_in_flight, marked, nscc_rtt, now);
  }
  if (newly_rcvd != 0 && cc->rcv_cwnd_pend() != 0) {
    p.nscc.on_receiver_pending(newly_rcvd, cc->rcv_cwnd_pend());
  }
}

// An initiator PDC with nothing posted and nothing outstanding is idle: it closes after
// idle_timeout, or at once when the target asked (REQ_CLOSE).
void UetEndpoint::note_idle(Pdc& p, Time now) {
  if (p.closing || p.op_head != p.op_tail || psn_before(p.base_psn, p.next_psn)) return;
  if (p.close_requested) {
    start_close(p, now);
    return;
  }
  if (config_.idle_timeout == 0 || p.idle_deadline != kNever) return;
  p.idle_deadline = now + config_.idle_timeout;
  deadline_ = std::min(deadline_, p.idle_deadline);
}

// §3.12 CLOSE: the PDC stops being the peer's (a new write opens a new PDC), sends CLOSE with
// the next PSN and is freed when the target's ACK covers that PSN (or after max_retries
// unanswered CLOSEs: nothing is outstanding, so nothing is lost).
void UetEndpoint::start_close(Pdc& p, Time now) {
  const uint16_t id = p.id;
  if (auto it = initiator_by_peer_.find(pdc_key(p.peer_ip4, p.rod));
      it != initiator_by_peer_.end() && it->second == id) {
    initiator_by_peer_.erase(it);
  }
  p.closing = true;
  p.close_psn = p.next_psn;
  p.close_tries = 0;
  p.ctrl_pending = p.established;  // never ACKed: the target has no PDC to close
  p.idle_deadline = kNever;
  p.rto_deadline = p.tlp_deadline = kNever;
  p.close_deadline = now;  // not established: freed at the next timer
  if (p.established) p.close_deadline = now + p.rto;
  deadline_ = std::min(deadline_, p.close_deadline);
}

// Frees a target PDC: SEND messages it was receiving end (kPdcClosed) so their buffers
// complete in order.
// The table is full and a SYN wants a PDC: the oldest target PDC whose REQ_CLOSEs all went
// unanswered (and that has heard nothing since) is freed and allocated again; -1 if none.
int32_t UetEndpoint::reclaim_unanswered() {
  while (unanswered_head_ != unanswered_tail_) {
    const uint16_t id = unanswered_[unanswered_head_++];
    const Pdc& p = pdcs_[id];
    if (p.role != Role::kTarget || !p.unanswered) continue;  // answered since, or freed
    ++counters_.req_close_abandoned;
    release_target(id);
    return alloc_pdc(Role::kTarget);
  }
  return -1;
}

void UetEndpoint::release_target(uint16_t id) {
  if (rx_msgs_used_ > 0) {
    for (RxMsg& m : rx_msgs_) {
      if (!m.in_use || m.pdc != id) continue;
      Recv& r = recvs_[m.recv];
      r.done = true;
      r.status = OpStatus::kPdcClosed;
      r.bytes = 0;
      m.in_use = false;
      --rx_msgs_used_;
    }
    deliver_recvs();
  }
  free_pdc(id);
}

// §3.12 control packets: CLOSE and CREDIT_REQ (target), REQ_CLOSE and CREDIT (initiator).
void UetEndpoint::rx_ctrl(const wire::Decoded& d, Time now) {
  const wire::PdsCtrl& h = *d.pds_as<wire::PdsCtrl>();
  const uint32_t src = d.ipv4->src();
  Pdc* p = pdc(h.dpdcid());
  switch (h.ctl_type()) {
    case wire::CtrlType::kClose: {
      ++counters_.rx_close;
      if (p != nullptr && p->role == Role::kTarget && p->peer_ip4 == src &&
          p->peer_pdcid == h.spdcid()) {
        // Everything before the CLOSE's PSN is done at the initiator: its refusals are
        // cleared. Freed only when every PSN before it arrived; else the CLOSE is early
        // (reordered) and comes again.
        clear_to(*p, h.psn() - 1);
        if (p->rcv_base != h.psn()) {
          ++counters_.rx_bad_ctrl;
          return;
        }
        ++counters_.pdcs_closed;
        release_target(h.dpdcid());
      }
      // The ACK of the CLOSE, also for a PDC already freed (the first ACK was lost).
      queue_stateless_nack(src, h.spdcid(), 0, h.psn(), Stateless::kCloseAck, h.dpdcid());
      return;
    }
    case wire::CtrlType::kReqClose:
      ++counters_.rx_req_close;
      if (p != nullptr && p->role == Role::kInitiator && p->peer_ip4 == src) {
        if (p->closing) return;  // our CLOSE is on its way
        if (p->established && p->peer_pdcid == h.spdcid()) {
          p->close_requested = true;
          note_idle(*p, now);
          return;
        }
        if (!p->established) return;  // a new PDC under a reused id: its SYN will tell
      }
      // Not a PDC of ours (any more): tell the target to free its PDC. The CLOSE names the
      // REQ_CLOSE's PSN (the target's next expected), so the target frees only a PDC that
      // heard nothing since.
      queue_stateless_nack(src, h.spdcid(), 0, h.psn(), Stateless::kClose, h.dpdcid());
      return;
    case wire::CtrlType::kClear:  // the initiator's clear PSN (§3.3) without a request
      if (p != nullptr && p->role == Role::kTarget && p->peer_ip4 == src &&
          p->peer_pdcid == h.spdcid()) {
        ++counters_.rx_clear;
        clear_to(*p, h.ctrl_payload());
        p->ack_now = true;  // the ACK shows the CACK that moved
        return;
      }
      ++counters_.rx_bad_ctrl;
      return;
    case wire::CtrlType::kCredit:  // RCCC: credit granted by the target, in bytes
      if (p != nullptr && p->role == Role::kInitiator && p->peer_ip4 == src && !p->closing &&
          (!p->established || p->peer_pdcid == h.spdcid())) {
        ++counters_.rx_credit;
        on_credit(*p, h.ctrl_payload());
        return;
      }
      ++counters_.rx_bad_ctrl;
      return;
    case wire::CtrlType::kCreditReq:  // RCCC: the sender asks again (a grant may be lost)
      if (p != nullptr && p->role == Role::kTarget && p->peer_ip4 == src &&
          p->peer_pdcid == h.spdcid()) {
        ++counters_.rx_credit_req;
        rccc_rx_.on_request(h.dpdcid(), h.ctrl_payload(), now);
        return;
      }
      ++counters_.rx_bad_ctrl;
      return;
    default:
      ++counters_.rx_bad_ctrl;  // control types this engine does not act on
      return;
  }
}

// RCCC: credit arrived for an initiator PDC (CREDIT, or an ACK_CC with cc_type CREDIT). The
// first grant ends the speculation; the next tx() sends against it.
void UetEndpoint::on_credit(Pdc& p, uint64_t bytes) {
  counters_.credit_received += bytes;
  if (p.speculating) {
    p.speculating = false;
    p.rccc.stop_speculating();
  }
  p.rccc.on_credit(bytes);
  p.credit_blocked = false;
  p.credit_deadline = kNever;
}

// RCCC: initiator PDC `p` has data to send and no credit. The first time: count it, arm the
// re-ask timer (an RTO without credit), and ask at once if the receiver was last told that
// nothing more is wanted.
void UetEndpoint::credit_blocked(Pdc& p, Time now) {
  if (p.credit_blocked) return;
  p.credit_blocked = true;
  ++counters_.credit_stalls;
  p.credit_deadline = now + p.rto;
  deadline_ = std::min(deadline_, p.credit_deadline);
  if (p.last_target == 0 && p.established) p.credit_req_pending = true;
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
    p->credit_pending += g->bytes;
    if (!p->credit_queued && credit_tail_ - credit_head_ < config_.max_pdcs) {
      p->credit_queued = true;  // when the ring is full, the PDC's next ACK carries it
      credit_ring_.reserve32(credit_head_, credit_tail_, uint64_t{credit_tail_ - credit_head_} + 1,
                             config_.max_pdcs);
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
    if (!p.credit_queued || p.role != Role::kTarget) continue;  // freed since
    p.credit_queued = false;
    if (p.credit_pending == 0) continue;
    if (p.ack_now || (p.ack_pending && now >= p.ack_deadline)) continue;  // rides the ACK
    const auto c = static_cast<uint32_t>(std::min<uint64_t>(p.credit_pending, 0xFFFFFF));
    if (!build_ctrl(p, id, wire::CtrlType::kCredit, p.rcv_base, *out[n], c)) continue;
    p.credit_pending -= c;
    ++counters_.tx_credit;
    ++n;
  }
  return n;
}

// §3.10 sender reactions.
void UetEndpoint::rx_nack(const wire::Decoded& d, Time now) {
  const wire::PdsNack& h = *d.pds_as<wire::PdsNack>();
  ++counters_.rx_nacks;
  if (h.nt()) {  // §3.10 `nt`: names a RUDI packet ID; our RUDI targets answer with RUDI_RESP
    ++counters_.rx_rudi_stale;
    return;
  }
  Pdc* p = pdc(h.dpdcid());
  if (p == nullptr || p->role != Role::kInitiator || p->peer_ip4 != d.ipv4->src()) {
    // A stateless NACK names our PDC in DPDCID too (we set it from our SPDCID).
    ++counters_.rx_unknown_pdc;
    return;
  }
  if (p->closing) return;  // nothing outstanding; only the CLOSE's ACK matters
  const uint32_t psn = h.nack_psn();
  const bool in_window = !psn_before(psn, p->base_psn) && psn_before(psn, p->next_psn);
  switch (h.nack_code()) {
    case wire::NackCode::kTrimmed:
    case wire::NackCode::kRcvrInferLoss:
    case wire::NackCode::kPktNotRcvd:
      // The packet was cut or lost on its path: tell the path selector (uet-htsim reports
      // PATH_NACK here). A last-hop trim or a window overrun says nothing about the path.
      if (in_window) {
        const Slot& s = p->slots[(psn & mpr_mask_)];
        if (s.in_flight && !s.acked) p->sel.on_nack(s.ev, now);
      }
      [[fallthrough]];
    case wire::NackCode::kTrimmedLastHop:
    case wire::NackCode::kPsnOorWindow:
    // Our ROD targets stage out-of-order arrivals and never send ROD_OOO; from another
    // target it names the first PSN it dropped: resend that one now, the rest as SACKs show.
    case wire::NackCode::kRodOoo:
    case wire::NackCode::kFirstRodOoo:
      // Resend exactly that PSN at once.
      if (in_window) {
        mark_lost(*p, psn);
        ++counters_.nack_retx;
        p->nscc.on_nack(config_.payload_bytes, now);
      }
      break;
    case wire::NackCode::kRcvdSesProcg:
    case wire::NackCode::kNoSesMsgAvail:
      // The target had no receive buffer (or no message state) for a SEND: resend when the
      // RTO fires, up to rnr_retries times per PSN; then give the SEND up (NOTES.md, "How the
      // SES operations travel on the PDS").
      if (in_window) rnr_nack(*p, psn, h.nack_code());
      break;
    case wire::NackCode::kNoPdcAvail:
      fail_pdc(*p, OpStatus::kNoResources);
      return;
    case wire::NackCode::kInvDpdcid:
    case wire::NackCode::kClosingInErr:
    case wire::NackCode::kPdcModeMismatch:
    case wire::NackCode::kInvalidSyn:
      fail_pdc(*p, OpStatus::kPdcClosed);
      return;
    case wire::NackCode::kNewStartPsn:
      // §5.6: the target refused our SYN's start PSN; the next PDC to it starts where it said.
      // Only a PDC still in SYN can be refused so (nothing it sent was accepted).
      // A late copy of an old SYN's refusal may name a reused PDC id: the PSN must be ours.
      if (tss_ != nullptr && !p->established && in_window) {
        tss_->initiator_next_start(p->peer_ip4, h.nack_payload());
        fail_pdc(*p, OpStatus::kPdcClosed);
        return;
      }
      break;
    default:
      break;  // counted above; no defined reaction here yet
  }
}

// §3.10 RCVD_SES_PROCG / NO_SES_MSG_AVAIL for a SEND's `psn`: it waits for the RTO to go
// again, up to rnr_retries times; a SEND nothing of which was accepted is then given up (it
// goes once more, with `ie`).
void UetEndpoint::rnr_nack(Pdc& p, uint32_t psn, wire::NackCode code) {
  Slot& s = p.slots[(psn & mpr_mask_)];
  Op& o = p.ops[s.op];
  if (s.acked || !s.in_flight || s.rnr_wait) return;
  if (o.abandoned) {
    mark_lost(p, psn);  // goes again, with `ie`
  } else if (s.rnr >= config_.rnr_retries && o.unacked == o.packets) {
    // Nothing of the message was accepted, so the target holds no state for it.
    o.abandoned = true;
    o.failed = true;
    o.status = code == wire::NackCode::kNoSesMsgAvail ? OpStatus::kNoResources
                                                      : OpStatus::kReceiverNotReady;
    mark_lost(p, psn);
  } else {
    if (s.rnr < 255) ++s.rnr;
    s.rnr_wait = true;
  }
}

void UetEndpoint::fail_pdc(Pdc& p, OpStatus why) {
  for (uint32_t i = p.op_head; i != p.op_tail; ++i) {
    const Op& o = p.ops[i];
    completions_.push_back(Completion{o.wr_id, o.failed ? o.status : why, 0, o.op});
  }
  free_pdc(p.id);
}

// ------------------------------------------------------------------------------ tx

// CLOSE (initiator) or REQ_CLOSE (target), §3.12.
[[gnu::always_inline]] inline UetEndpoint::Turn UetEndpoint::tx_close(Pdc& p, uint16_t id,
                                                                      Frame& f) {
  const bool init = p.role == Role::kInitiator;
  if (!build_ctrl(p, id, init ? wire::CtrlType::kClose : wire::CtrlType::kReqClose,
                  init ? p.close_psn : p.rcv_base, f)) {
    return Turn::kIdle;
  }
  p.ctrl_pending = false;
  ++(init ? counters_.tx_close : counters_.tx_req_close);
  return Turn::kSent;
}

// A target PDC's turn: a queued NACK first, else the ACK when one is due (§3.7).
[[gnu::always_inline]] inline UetEndpoint::Turn UetEndpoint::tx_target(Pdc& p, uint16_t id,
                                                                       Frame& f, Time now) {
  if (p.nack_head != p.nack_tail) {
    const Pdc::Nack& k = p.nacks[p.nack_head % p.nacks.size()];
    p.nack_code = k.code;
    p.nack_psn = k.psn;
    if (!build_nack(p, id, f)) return Turn::kIdle;
    ++p.nack_head;
    return Turn::kSent;
  }
  if (p.ack_now || (p.ack_pending && now >= p.ack_deadline)) {
    return build_ack(p, id, f) ? Turn::kSent : Turn::kIdle;
  }
  return Turn::kIdle;
}

// An initiator PDC's turn: a CREDIT_REQ, or one data packet (a resend first, else the next new
// PSN) within the window, the target's MPR and the credit.
[[gnu::always_inline]] inline UetEndpoint::Turn UetEndpoint::tx_initiator(Pdc& p, uint16_t id,
                                                                          Frame& f, Time now) {
  // RCCC: may a packet with payload go? (READ requests carry none and need no credit.)
  if (p.speculating && now >= p.speculate_until && rccc_sender()) {
    p.speculating = false;
    p.rccc.stop_speculating();
  }
  const bool credit = !rccc_sender() || p.rccc.can_send();
  if (p.credit_req_pending && p.established) {  // RCCC: ask for credit again (§3.12)
    const auto target = static_cast<uint32_t>(p.rccc.credit_target(credit_backlog(p)));
    if (build_ctrl(p, id, wire::CtrlType::kCreditReq, p.next_psn, f, target)) {
      p.credit_req_pending = false;
      p.last_target = target;
      ++counters_.tx_credit_req;
      return Turn::kSent;  // a control frame: no RTO to arm
    }
  }
  // The PSN to send, if any: a resend (exactly the missing PSNs, RETX set), or the next new
  // one. build_data is called at one place (always inline there: it runs for every data
  // packet).
  const bool retx = p.resend_pending > 0;
  uint32_t psn = 0;
  const Op* op = nullptr;  // a new PSN's operation
  if (retx) {
    if (!take_resend(p, credit, now, &psn)) return Turn::kIdle;
  } else {
    if (p.op_send == p.op_tail ||
        p.next_psn - p.base_psn >= (p.rod ? config_.rod_window : config_.mpr) ||
        p.bytes_in_flight + config_.payload_bytes > window(p)) {
      return Turn::kIdle;
    }
    if (!mpr_room(p)) return tx_clear(p, id, f, now);
    const Op& o = p.ops[p.op_send];
    if (!credit && o.op != Opcode::kRead) {
      credit_blocked(p, now);
      return Turn::kWaiting;
    }
    op = &o;
    psn = p.next_psn;
    Slot& s = p.slots[(psn & mpr_mask_)];
    s = Slot{};
    s.op = p.op_send;
    s.packet = p.send_packet;
    s.len = static_cast<uint32_t>(std::min<uint64_t>(
        config_.payload_bytes, o.length - uint64_t{p.send_packet} * config_.payload_bytes));
  }
  if (!build_data(p, id, psn, retx, f, now)) return Turn::kIdle;
  if (!retx) {
    ++p.next_psn;
    if (++p.send_packet == op->packets) {
      p.send_packet = 0;
      ++p.op_send;
    }
  }
  if (p.rto_deadline == kNever) {
    p.rto_deadline = now + p.rto;
    deadline_ = std::min(deadline_, p.rto_deadline);
  }
  arm_tlp(p, now);
  return Turn::kSent;
}

// The oldest PSN marked for resending, if the credit and the window let it go now.
[[gnu::always_inline]] inline bool UetEndpoint::take_resend(Pdc& p, bool credit, Time now,
                                                            uint32_t* psn) {
  for (uint32_t q = p.base_psn; psn_before(q, p.next_psn); ++q) {
    Slot& s = p.slots[(q & mpr_mask_)];
    if (!s.resend) continue;
    if (!credit && p.ops[s.op].op != Opcode::kRead) {
      credit_blocked(p, now);
      return false;
    }
    // Resends count against the window like new data (one may always go when nothing is in
    // flight): a trimmed packet's NACK must not send it again at once whatever the window,
    // or under a large incast the trimmed headers' NACKs and their resends keep the last hop
    // full of trimmed frames and nothing completes.
    if (p.bytes_in_flight > 0 && p.bytes_in_flight + s.len > window(p)) return false;
    s.resend = false;
    --p.resend_pending;
    *psn = q;
    return true;
  }
  return false;
}

// §3.12 CLEAR: CACK waits behind PSNs refused and acknowledged here (§3.3) until a clear PSN
// passes them; with no request left in range to carry it, a CLEAR does, again after an RTO if
// CACK has not moved.
UetEndpoint::Turn UetEndpoint::tx_clear(Pdc& p, uint16_t id, Frame& f, Time now) {
  if (psn_before(p.peer_cack, p.base_psn - 1) && now >= p.clear_at && p.established &&
      build_ctrl(p, id, wire::CtrlType::kClear, p.next_psn, f, p.base_psn - 1)) {
    p.clear_at = now + p.rto;
    deadline_ = std::min(deadline_, p.clear_at);
    ++counters_.tx_clear;
    return Turn::kSent;
  }
  return Turn::kWaiting;
}

size_t UetEndpoint::tx(std::span<Frame* const> out, Time now) {
  now_ = now;
  size_t n = 0;
  // NACKs without a PDC first.
  while (n < out.size() && stateless_head_ != stateless_tail_) {
    if (build_stateless_nack(stateless_[stateless_head_++ % stateless_.size()], *out[n])) ++n;
  }
  // RCCC grants due now (paced by the receiver engine).
  if (rccc_rx_.next_event() <= now) take_grants(now);
  if (credit_head_ != credit_tail_) n = tx_grants(out, n, now);
  // RUDI and UUD (no PDC, uet_modes.cc).
  if (modes_pending()) n += tx_modes(out.subspan(n), now);
  // Round robin over the active PDCs, one frame per PDC per turn, until the burst is full or
  // a whole turn finds nothing to send. PDCs whose ready bit is clear are passed over as if
  // visited (each counts as idle), so the order, and every frame, is what visiting them
  // would give.
  for (size_t idle = 0; n < out.size() && idle < active_.size();) {
    if (rr_ >= active_.size()) rr_ = 0;
    if (!ready_.skip_idle(rr_, idle, active_.size())) break;  // the turn ends among idle PDCs
    if (rr_ >= active_.size()) continue;
    const uint16_t id = active_[rr_];
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
    if (t == Turn::kSent) {
      ++n;
      idle = 0;
    } else {
      ++idle;
      if (t == Turn::kIdle && !tx_may_act(p)) ready_.clear(rr_);
    }
    ++rr_;  // round robin: the next frame comes from the next PDC
  }
  return n;
}

// Whether tx() could act on `p` at a later time with nothing else changing it: every branch
// of tx() that sends or changes state, with its time conditions taken as true.
bool UetEndpoint::tx_may_act(const Pdc& p) const noexcept {
  if (p.ctrl_pending) return true;
  if (p.role == Role::kTarget) return p.nack_head != p.nack_tail || p.ack_now || p.ack_pending;
  if (p.role != Role::kInitiator || p.closing) return false;
  if ((p.speculating && rccc_sender()) || (p.credit_req_pending && p.established) ||
      p.resend_pending > 0) {
    return true;
  }
  return p.op_send != p.op_tail &&
         p.next_psn - p.base_psn < (p.rod ? config_.rod_window : config_.mpr) &&
         p.bytes_in_flight + config_.payload_bytes <= window(p);
}

// ------------------------------------------------------------------------------ timers

// The PDCs' timers, and when the RCCC receiver may next grant (its grants go out in tx()).
Time UetEndpoint::next_deadline() const { return std::min(deadline_, rccc_rx_.next_event()); }

void UetEndpoint::on_timer(Time now) {
  now_ = now;
  // RCCC: grants due now are taken (tx() sends them). If no PDC timer is due as well
  // (deadline_ is never late), that is all.
  if (rccc_rx_.next_event() <= now) {
    take_grants(now);
    if (deadline_ > now) return;
  }
  Time next = kNever;
  for (size_t i = 0; i < active_.size(); ++i) {
    const uint16_t id = active_[i];
    Pdc& p = pdcs_[id];
    if (std::min({p.ack_pending ? p.ack_deadline : kNever, p.idle_deadline, p.close_deadline,
                  p.credit_deadline, p.tlp_deadline, p.rack_deadline, p.rto_deadline}) <= now) {
      mark_ready(p);  // a timer of its fires: it may have a frame for tx()
    }
    bool freed = false;
    if (p.role == Role::kTarget) {
      timer_target(p, id, now, next);
    } else if (p.closing) {
      freed = timer_closing(p, id, now, next);
    } else {
      freed = timer_initiator(p, now, next);
    }
    if (freed) --i;  // free_pdc swapped another PDC into this position
  }
  deadline_ = std::min(next, rudi_timer(now));  // RUDI packets' RTOs (uet_modes.cc)
}

// A target PDC's timers: the delayed ACK (§3.7) and, idle for 2 x idle_timeout, REQ_CLOSE
// every idle_timeout, up to max_retries times (§3.12). [choice] Unanswered one idle_timeout
// more, the initiator may be gone (or never was: a flood of SYNs) or cut off by a failed
// link: the PDC stays, but a SYN that finds the table full takes it (reclaim_unanswered).
void UetEndpoint::timer_target(Pdc& p, uint16_t id, Time now, Time& next) {
  if (p.ack_pending && p.ack_deadline <= now) p.ack_now = true;
  if (p.ack_pending && !p.ack_now) next = std::min(next, p.ack_deadline);
  if (p.idle_deadline <= now) {
    p.idle_deadline = kNever;
    if (p.close_tries < config_.max_retries) {
      ++p.close_tries;
      p.ctrl_pending = true;
      p.idle_deadline = now + config_.idle_timeout;
    } else if (!p.unanswered) {
      p.unanswered = true;
      if (unanswered_tail_ - unanswered_head_ == config_.max_pdcs) ++unanswered_head_;
      unanswered_.reserve32(unanswered_head_, unanswered_tail_,
                            uint64_t{unanswered_tail_ - unanswered_head_} + 1, config_.max_pdcs);
      unanswered_[unanswered_tail_++] = id;
    }
  }
  next = std::min(next, p.idle_deadline);
}

// A closing initiator PDC (§3.12): its CLOSE again, with backoff, until answered or
// max_retries; then freed. True when freed.
bool UetEndpoint::timer_closing(Pdc& p, uint16_t id, Time now, Time& next) {
  if (p.close_deadline <= now) {
    if (!p.ctrl_pending && p.close_tries < config_.max_retries && p.established) {
      ++p.close_tries;
      p.ctrl_pending = true;  // the CLOSE (or its ACK) was lost: again, with backoff
      p.close_deadline = now + std::min(p.rto << std::min<int>(p.close_tries, 16), config_.max_rto);
    } else if (!p.ctrl_pending) {
      if (p.established) ++counters_.close_abandoned;
      free_pdc(id);
      return true;
    } else {
      p.close_deadline = now + p.rto;
    }
  }
  next = std::min(next, p.close_deadline);
  return false;
}

// An initiator PDC's timers: idle close (§3.12), the RCCC re-ask, CLEAR, the tail-loss probe,
// RACK's reorder timer and the RTO. True when the PDC failed (freed).
bool UetEndpoint::timer_initiator(Pdc& p, Time now, Time& next) {
  if (p.idle_deadline <= now) {  // idle for idle_timeout: close (§3.12)
    p.idle_deadline = kNever;
    if (p.op_head == p.op_tail && !psn_before(p.base_psn, p.next_psn)) {
      start_close(p, now);
      next = std::min(next, p.close_deadline);
      return false;
    }
  }
  next = std::min(next, p.idle_deadline);
  if (p.credit_deadline <= now) credit_timeout(p);
  next = std::min(next, p.credit_deadline);
  if (p.clear_at > now) next = std::min(next, p.clear_at);  // a CLEAR may go again (tx)
  if (p.tlp_deadline <= now) {
    p.tlp_deadline = kNever;
    send_tlp(p);
  }
  if (p.rack_deadline <= now) rack_detect(p, now);
  next = std::min(next, p.rack_deadline);
  if (p.rto_deadline > now) {
    next = std::min({next, p.rto_deadline, p.tlp_deadline});
    return false;
  }
  if (!rto_fired(p, now)) {
    fail_pdc(p, OpStatus::kRetriesExhausted);
    return true;
  }
  next = std::min(next, p.rto_deadline);
  return false;
}

// RCCC: an RTO blocked on credit without any arriving: the grants (or what asked for them)
// were lost. Ask again; before the PDC is established there is no target PDC to name, so let
// one packet go as a probe (its SYN opens the PDC, its target asks).
void UetEndpoint::credit_timeout(Pdc& p) {
  p.credit_deadline = kNever;
  if (p.credit_blocked && !p.rccc.can_send() && credit_backlog(p) > 0) {
    if (p.established) {
      p.credit_req_pending = true;
    } else {
      p.rccc.on_credit(static_cast<uint64_t>(1 - p.rccc.credit()));  // credit becomes 1
      ++counters_.credit_probes;
    }
  }
  p.credit_blocked = false;  // the next stall re-arms the timer
}

// RTO: every PSN in flight longer than the timeout is resent; backoff doubles. A PSN waiting
// after an RNR NACK is resent too, without counting as a timeout. False: a PSN used up its
// retries with the peer silent (the PDC fails).
bool UetEndpoint::rto_fired(Pdc& p, Time now) {
  uint32_t timed_out = 0;
  for (uint32_t psn = p.base_psn; psn_before(psn, p.next_psn); ++psn) {
    Slot& s = p.slots[(psn & mpr_mask_)];
    if (!s.in_flight || s.sent + p.rto > now) continue;
    if (s.rnr_wait) {
      mark_lost(p, psn);
      ++counters_.rnr_retx;
      continue;
    }
    // Giving up means the peer stopped answering: a timeout counts towards max_retries only
    // if no ACK arrived since this PSN was sent. Otherwise the peer is alive and the packet
    // sat in a slow queue or was lost on one path (the path selector hears of it): on
    // degraded links a PSN can time out many times while its PDC makes progress.
    const bool peer_silent = p.last_ack_at == kNever || p.last_ack_at <= s.sent;
    if (peer_silent && ++s.retries > config_.max_retries) return false;
    p.sel.on_timeout(s.ev, now);
    mark_lost(p, psn);
    ++counters_.timeouts;
    ++timed_out;
  }
  if (timed_out > 0) {
    p.nscc.on_timeout(now);
    p.rto = std::min(p.rto * 2, config_.max_rto);
  }
  p.rto_deadline = psn_before(p.base_psn, p.next_psn) ? now + p.rto : kNever;
  p.tlp_deadline = kNever;  // after a timeout, the RTO alone until the next progress
  return true;
}

}  // namespace uet
