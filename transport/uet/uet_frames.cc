// The control frames the engine encodes (spec/uet.md §3): ACK_CC with its SES response (§3.8,
// §4.6, §4.7), NACKs (§3.10), control packets (§3.12), and the encapsulation per peer (§2.1).
#include <algorithm>
#include <cstring>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::test_bit;
using wire::NextHeader;
using wire::PdsType;

wire::Encap UetEndpoint::encap_for(const Pdc& p, bool control, uint16_t ev) const {
  wire::Encap e;
  e.src_mac = local_mac_;
  e.dst_mac = p.peer_mac;
  e.src_ip4 = local_ip4_;
  e.dst_ip4 = p.peer_ip4;
  e.dscp = control ? config_.dscp_control : config_.dscp_data;
  e.ecn = !control && config_.ect ? 2 : 0;
  e.sport = wire_sport(ev);  // §2.1: the EV rides in the UDP source port
  e.dport = wire::kUetUdpPort;
  e.udp_checksum = udp_checksum();
  return e;
}

void UetEndpoint::set_peer(Pdc& p, uint32_t ip4) {
  p.peer_ip4 = ip4;
  p.peer_mac = config_.resolve_mac(ip4);
  p.data_encap = wire::EncapTemplate(encap_for(p, /*control=*/false, 0));
  const wire::EncapTemplate ctrl(encap_for(p, /*control=*/true, 0));
  p.ctrl_tos = ctrl.ipv4_tos();
  p.ctrl_ip_sum = ctrl.ipv4_sum();
}

// §3.8: the PSNs past CACK this target PDC can take, in PSNs, at most 255 [choice]: the
// receive window (mpr), or for ROD the reorder buffer (rod_window).
uint8_t UetEndpoint::advertised_mpr(const Pdc& p) const noexcept {
  return static_cast<uint8_t>(std::min<uint32_t>(255, p.rod ? hot_.rod_window : hot_.mpr));
}

// A target PDC's ACK (§3.7): planned from its receive state, encoded, then accounted for.
// Out of line, as one call from tx(); its steps inline here.
bool UetEndpoint::send_ack(Pdc& p, uint16_t pdcid, Frame& f) {
  const AckPlan a = plan_ack(p);
  if (!build_ack(p, pdcid, a, f)) return false;
  ack_sent(p, a);
  return true;
}

// The response the next ACK carries (one per ACK), if any. A PSN with a response is recorded
// as received now, with the ACK that answers it; under ROD what waited behind it may run.
[[gnu::always_inline]] inline const UetEndpoint::Pdc::Response* UetEndpoint::take_response(Pdc& p) {
  Pdc::Response* r = p.tgt.rsp_pending() ? &p.tgt.rsp[p.tgt.rsp_head] : nullptr;
  // A rendezvous source's READ answer is held until the reader clears it (uet_rendezvous.cc).
  const bool rdv = r != nullptr && r->data && r->result == 0 && is_rdv_key(r->key);
  if (rdv && r->repeat) [[unlikely]] rdv_hold(p, *r);
  if (r != nullptr && !r->repeat) {
    const uint32_t idx = (r->psn & mpr_mask_);
    if (test_bit(p.tgt.rsp_bits, idx)) {  // recorded as received with the ACK that answers it
      p.tgt.rsp_bits[idx / 64] &= ~(uint64_t{1} << (idx % 64));
      if (rdv) [[unlikely]] {
        rdv_hold(p, *r);
      } else {
        mark_received(p, r->psn);
      }
      // ROD: the READ has read its data (below, into this ACK); what follows it may run.
      if (p.rod && r->psn == p.tgt.rod_next) {
        ++p.tgt.rod_next;
        rod_drain(p, p.id);
      }
    }
  }
  return r;
}


// What the next ACK says (§3.7, §3.8): its response, if one is queued (taken now), the PSN it
// names and its CE echo. A CE-marked arrival stays the trigger even
// if more packets came before this ACK could be sent, so the initiator knows exactly which
// packet, and so which EV, was marked; another ACK follows at once for the newer arrivals. A
// response's ACK names the answered PSN and leaves the CE echo to the next plain ACK.
[[gnu::always_inline]] inline UetEndpoint::AckPlan UetEndpoint::plan_ack(Pdc& p) {
  AckPlan a;
  a.r = take_response(p);
  a.ce = a.r == nullptr && p.tgt.ce_seen;
  a.trigger = a.r != nullptr ? a.r->psn : a.ce ? p.tgt.ce_psn : p.tgt.last_psn;
  return a;
}

// The ACK left: its response is answered, its CE echo and credit given; what is not yet
// said makes the next ACK due at once.
[[gnu::always_inline]] inline void UetEndpoint::ack_sent(Pdc& p, const AckPlan& a) {
  if (a.r != nullptr) {
    ++p.tgt.rsp_head;
    if (a.r->data) ++counters_.tx_read_data;
  } else {
    p.tgt.ce_seen = false;
  }
  if (p.tgt.credit_pending > 0) {  // it rode this ACK (ack_cc_state)
    p.tgt.credit_pending -= std::min<uint64_t>(p.tgt.credit_pending, 0xFFFFFF);
    ++counters_.tx_credit_acks;
  }
  p.tgt.ack_now = p.tgt.rsp_pending() ||
                  p.tgt.ce_seen ||                        // one response per ACK: more follow
                  (a.ce && a.trigger != p.tgt.last_psn);  // newer arrivals than the CE trigger
  p.tgt.ack_pending = false;
  p.tgt.unacked_rx = 0;
  p.tgt.ack_deadline = kNever;
  ++counters_.tx_acks;
}

// §3.8: ACK_CC with the cumulative ACK, a 64-bit SACK bitmap and NSCC state or RCCC credit,
// as planned (plan_ack). With a response, the ACK carries it: an SES response (§4.6) for a
// refused request, or a response with data (§4.7) answering a READ, with the data as payload.
[[gnu::always_inline]] inline bool UetEndpoint::build_ack(const Pdc& p, uint16_t pdcid,
                                                          const AckPlan& a, Frame& f) {
  const Pdc::Response* const r = a.r;
  const bool with_data = r != nullptr && r->data;
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), p.data_encap,
                       wire_sport(p.ev_base));
  if (!with_data) b.set_ipv4_tos(p.ctrl_tos, p.ctrl_ip_sum);
  tss_begin(b);
  // The ACK is built in registers and stored once (wire::HeaderWords, as build_data).
  using Ack = wire::PdsAckCc;
  uint8_t* const ack_at = b.reserve(Ack::kSize);
  wire::SesResponse* rsp = r != nullptr && !with_data ? b.add<wire::SesResponse>() : nullptr;
  wire::SesResponseData* rd = with_data ? b.add<wire::SesResponseData>() : nullptr;
  if (ack_at == nullptr || (r != nullptr && rsp == nullptr && rd == nullptr)) return false;
  wire::HeaderWords<Ack> ack;
  const uint32_t cack = p.tgt.rcv_base - 1;
  const bool ce = a.ce;
  const uint32_t trigger = a.trigger;
  ack.set<Ack::type_field>(PdsType::kAckCc);
  ack.set<Ack::next_hdr_field>(with_data      ? NextHeader::kRspData
                               : r != nullptr ? NextHeader::kRsp
                                              : NextHeader::kNone);
  ack.set<Ack::m_field>(ce);
  // §3.7: `retx` echoes the trigger's RETX flag (a response's trigger is answered without
  // it). The initiator takes no RTT sample from such an ACK (Karn: it may answer either send;
  // bench/NOTES.md, "Choices in the sources").
  ack.set<Ack::retx_field>(r == nullptr && (ce ? p.tgt.ce_retx : p.tgt.last_retx));
  ack.set<Ack::ack_psn_offset_field>(static_cast<int16_t>(
      std::clamp<int64_t>(static_cast<int32_t>(trigger - cack), INT16_MIN, INT16_MAX)));
  ack.set<Ack::cack_psn_field>(cack);
  ack.set<Ack::spdcid_field>(pdcid);
  ack.set<Ack::dpdcid_field>(p.peer_pdcid);
  ack_cc_state(p, a, ack);
  ack.set<Ack::ooo_count_field>(p.tgt.ooo_count);
  ack.set<Ack::mpr_field>(advertised_mpr(p));
  // The 64 PSNs the bitmap reports end at the PSN that triggered this ACK (as htsim does), so
  // every arrival is reported by at least its own ACK even when the window spans more than
  // 64 packets past a hole; they start right after CACK when that is close enough.
  uint32_t sack_base = p.tgt.rcv_base;
  if (static_cast<int32_t>(trigger - p.tgt.rcv_base) > 63) sack_base = trigger - 63;
  ack.set<Ack::sack_psn_offset_field>(static_cast<uint16_t>(sack_base - cack));
  ack.set<Ack::sack_bitmap_field>(sack_bitmap(p, sack_base));
  ack.store(ack_at);
  size_t elided = 0;
  if (r != nullptr && !ack_response_header(*r, rsp, rd, b, f.capacity, &elided)) return false;
  if (!finish(b, f, elided)) return false;
  f.priority = with_data ? Priority::kData : Priority::kControl;
  return true;
}

// §3.8.1 / §3.8.2: an ACK_CC's CC state: RCCC credit granted to this sender, or NSCC's.
[[gnu::always_inline]] inline void UetEndpoint::ack_cc_state(
    const Pdc& p, const AckPlan& a, wire::HeaderWords<wire::PdsAckCc>& ack) {
  using Ack = wire::PdsAckCc;
  const Pdc::Response* const r = a.r;
  const bool ce = a.ce;
  if (p.tgt.credit_pending > 0) {
    // §3.8.2: RCCC credit granted to this sender rides the ACK (cc_type CREDIT), at most
    // what the 24-bit field holds.
    ack.set<Ack::cc_type_field>(wire::CcType::kCredit);
    ack.set<Ack::credit_field>(
        static_cast<uint32_t>(std::min<uint64_t>(p.tgt.credit_pending, 0xFFFFFF)));
  } else {
    // §3.8.1: how long the trigger waited here for this ACK (ns, saturating), the bytes
    // received so far (modulo 2^24); rc and rcv_cwnd_pend stay 0 (no receiver bottleneck).
    const Time arrived = r != nullptr ? r->queued : ce ? p.tgt.ce_arrival : p.tgt.last_arrival;
    const Time held = now_ > arrived ? (now_ - arrived) / kNanosecond : 0;
    ack.set<Ack::cc_type_field>(wire::CcType::kNscc);
    ack.set<Ack::service_time_field>(static_cast<uint16_t>(std::min<Time>(held, 0xFFFF)));
    ack.set<Ack::rcvd_bytes_field>(p.tgt.rcvd_bytes & 0xFFFFFF);
  }
}

// §3.8 SACK bitmap: bit i says PSN sack_base + i was received, for the PSNs inside the window
// [rcv_base, rcv_base + mpr): 64 bits of the ring of mpr (a multiple of 64) from sack_base's
// position, in at most two words.
[[gnu::always_inline]] inline uint64_t UetEndpoint::sack_bitmap(const Pdc& p,
                                                                uint32_t sack_base) const noexcept {
  uint64_t bitmap = 0;
  if (const uint32_t ahead = sack_base - p.tgt.rcv_base; ahead < hot_.mpr) {
    const uint32_t at = (sack_base & mpr_mask_);
    const uint32_t word = at / 64, shift = at % 64;
    bitmap = p.tgt.rcv_bits[word] >> shift;
    if (shift != 0) bitmap |= p.tgt.rcv_bits[(word + 1) % p.tgt.rcv_bits.size()] << (64 - shift);
    if (hot_.mpr - ahead < 64) bitmap &= (uint64_t{1} << (hot_.mpr - ahead)) - 1;
  }
  return bitmap;
}

// §4.6 / §4.7: the SES response an ACK carries (`rsp`), or the response with data and the
// data (`rd`); `elided`: payload bytes the host carries by length.
[[gnu::always_inline]] inline bool UetEndpoint::ack_response_header(
    const Pdc::Response& r, wire::SesResponse* rsp, wire::SesResponseData* rd,
    wire::FrameBuilder& b, size_t capacity, size_t* elided) {
  if (rsp != nullptr) {
    rsp->set_opcode(wire::SesRspOpcode::kResponse);
    rsp->set_return_code(static_cast<wire::SesReturnCode>(r.code));
    rsp->set_message_id(r.message_id);
    rsp->set_job_id(config_.job_id);  // §4.6: the target's job
  } else if (rd != nullptr) {
    // A fetching atomic's held values (§4.5.1), or the chunk a READ asked for.
    const uint8_t* src = r.result != 0          ? result_bytes(r.result)
                         : is_rdv_key(r.key) ? rdv_bytes(r.key, r.offset)
                                             : region_base(r.key) + r.offset;
    return put_read_data(*rd, r.message_id, src, r.len, b, capacity, elided);
  }
  return true;
}

// §4.7: a response with data carries the whole chunk the READ asked for (`len` bytes at
// `src`), at message_offset 0; `elided`: what the host carries by length.
bool UetEndpoint::put_read_data(wire::SesResponseData& rd, uint16_t message_id, const uint8_t* src,
                                uint32_t len, wire::FrameBuilder& b, size_t capacity,
                                size_t* elided) {
  rd.set_opcode(wire::SesRspOpcode::kResponseWithData);
  rd.set_return_code(wire::SesReturnCode::kOk);
  rd.set_message_id(message_id);
  rd.set_read_req_message_id(message_id);
  rd.set_payload_length(static_cast<uint16_t>(len));
  rd.set_modified_length(len);
  if (b.size() + len + (tss_overhead_ > 0 ? tss::kTagBytes : 0) > capacity) {
    *elided = len;  // the host carries payloads by length (see finish())
  } else if (len > 0) {
    uint8_t* payload = b.add_bytes(len);
    if (payload == nullptr) return false;
    std::memcpy(payload, src, len);
  }
  return true;
}

bool UetEndpoint::build_nack(Pdc& p, uint16_t pdcid, Frame& f) {
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), encap_for(p, true, p.ev_base));
  tss_begin(b);
  wire::PdsNack* n = b.add<wire::PdsNack>();
  if (n == nullptr) return false;
  n->set_type(PdsType::kNack);
  n->set_nack_code(static_cast<wire::NackCode>(p.tgt.nack_code));
  n->set_nack_psn(p.tgt.nack_psn);
  n->set_spdcid(pdcid);
  n->set_dpdcid(p.peer_pdcid);
  n->set_nack_payload(p.tgt.rcv_base);  // §3.10: max received PSN + 1 (the next expected)
  if (!finish(b, f, 0)) return false;
  f.priority = Priority::kControl;
  p.tgt.nack_code = 0;
  ++counters_.tx_nacks;
  return true;
}

bool UetEndpoint::build_stateless_nack(const StatelessNack& sn, Frame& f) {
  Pdc tmp;
  tmp.start(Role::kTarget);  // build_nack reads a target's NACK fields
  tmp.peer_ip4 = sn.peer_ip4;
  tmp.peer_mac = config_.resolve_mac(sn.peer_ip4);
  tmp.peer_pdcid = sn.peer_pdcid;
  switch (sn.kind) {
    case Stateless::kNack:
      tmp.tgt.nack_code = sn.code;
      tmp.tgt.nack_psn = sn.psn;
      tmp.tgt.rcv_base = sn.payload;
      return build_nack(tmp, 0, f);
    case Stateless::kClose:  // §3.12: answers a REQ_CLOSE for a PDC we no longer have
      ++rare().tx_close;
      return build_ctrl(tmp, sn.local_pdcid, wire::CtrlType::kClose, sn.psn, f);
    case Stateless::kCloseAck: {
      // The ACK of a CLOSE: CACK = the CLOSE's PSN (everything up to it is done), from the
      // target PDC that was freed.
      wire::FrameBuilder b(
          std::span<uint8_t>(f.data, f.capacity),
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
      ack->set_mpr(static_cast<uint8_t>(std::min<uint32_t>(255, hot_.mpr)));  // §3.8
      ack->set_sack_psn_offset(1);
      if (!finish(b, f, 0)) return false;
      f.priority = Priority::kControl;
      ++counters_.tx_acks;
      return true;
    }
  }
  return false;
}

void UetEndpoint::queue_stateless_nack(uint32_t ip, uint16_t peer_pdcid, uint8_t code, uint32_t psn,
                                       Stateless kind, uint16_t local_pdcid,
                                       const uint32_t* payload) {
  const uint32_t queued = stateless_tail_ - stateless_head_;
  if (queued >= kStateless) return;  // bounded: drop
  stateless_.reserve32(stateless_head_, stateless_tail_, queued + 1, kStateless);
  stateless_[stateless_tail_++] =
      StatelessNack{ip, peer_pdcid, code, psn, kind, local_pdcid, payload ? *payload : psn};
}

// §3.12 control packet (CLOSE, REQ_CLOSE, CREDIT, CREDIT_REQ) on PDC `pdcid` about `psn`.
bool UetEndpoint::build_ctrl(Pdc& p, uint16_t pdcid, wire::CtrlType type, uint32_t psn, Frame& f,
                             uint32_t payload) {
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

}  // namespace uet
