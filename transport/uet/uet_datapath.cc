// Data path of the UET engine: rx(), tx(), on_timer(). No allocation, no per-packet virtual
// call. Comments cite spec/uet.md.
#include <algorithm>
#include <cstring>

#include "transport/uet/uet_endpoint.h"
#include "transport/wire/checksum.h"

namespace uet {

using wire::NextHeader;
using wire::PdsType;

namespace {

constexpr uint8_t kDscpTrimmed = 45;  // spec/uet.md §3.14: the fabric's trimmed code point

// PSN arithmetic is modulo 2^32 (§3.3): a is before b when (a - b) is "negative".
constexpr bool psn_before(uint32_t a, uint32_t b) noexcept {
  return static_cast<int32_t>(a - b) < 0;
}

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
  e.sport = ev;  // §2.1: the EV rides in the UDP source port
  e.dport = wire::kUetUdpPort;
  return e;
}

// §2.4: EV index i (pathsel/) travels as a UDP source port in the dynamic range 49152..65535,
// spread from the PDC's random base by an odd stride, so indices 0..16383 are distinct ports.
uint16_t UetEndpoint::ev_port(const Pdc& p, uint16_t ev) noexcept {
  return static_cast<uint16_t>(0xC000 | ((p.ev_base + uint32_t{ev} * 0x9E37u) & 0x3FFF));
}

// Finishes a frame whose payload may not fit the host's buffer: then only the headers are
// real bytes and the payload travels by length (Frame::wire_len), with the UDP checksum 0.
static bool finish_frame(wire::FrameBuilder& b, Frame& f, size_t elided) {
  size_t n = 0;
  if (b.finish(&n) != wire::WireError::kOk) return false;
  f.len = static_cast<uint32_t>(n);
  f.wire_len = 0;
  if (elided > 0) {
    f.wire_len = static_cast<uint32_t>(n + elided);
    wire::Ipv4* ip = wire::as<wire::Ipv4>(f.data + wire::Ethernet::kSize);
    ip->set_total_length(static_cast<uint16_t>(ip->total_length() + elided));
    ip->set_checksum(wire::ipv4_header_checksum(ip->raw, wire::Ipv4::kSize));
    wire::Udp* udp = wire::as<wire::Udp>(f.data + wire::Ethernet::kSize + wire::Ipv4::kSize);
    udp->set_length(static_cast<uint16_t>(udp->length() + elided));
    udp->set_checksum(0);
  }
  return true;
}

// §3.3 RUD request + §4.2 standard SES WRITE header for packet `psn` of its write.
bool UetEndpoint::build_data(Pdc& p, uint16_t pdcid, uint32_t psn, bool retx, Frame& f,
                             Time now) {
  Slot& s = p.slots[psn % config_.mpr];
  Write& w = p.writes[s.write % config_.max_writes];
  const uint64_t offset = uint64_t{s.packet} * config_.payload_bytes;
  const auto len = static_cast<uint32_t>(std::min<uint64_t>(config_.payload_bytes, w.wr.length - offset));
  const size_t headers = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize +
                         wire::PdsRudRod::kSize + wire::SesStandardRequest::kSize;
  const size_t elided = headers + len > f.capacity ? len : 0;
  const uint16_t ev = p.sel.next_ev(now);  // §2.4: pathsel/ picks every packet's EV
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), encap_for(p, false, ev_port(p, ev)));
  wire::PdsRudRod* pds = b.add<wire::PdsRudRod>();
  wire::SesStandardRequest* ses = b.add<wire::SesStandardRequest>();
  if (ses == nullptr) return false;
  pds->set_type(PdsType::kRudReq);
  pds->set_next_hdr(NextHeader::kReqStd);
  pds->set_retx(retx);
  pds->set_psn(psn);
  pds->set_spdcid(pdcid);
  if (p.established) {
    pds->set_dpdcid(p.peer_pdcid);
  } else {  // §3.3: SYN until the first ACK; the PDC info tells the target the start PSN
    pds->set_syn(true);
    pds->set_psn_offset(static_cast<uint16_t>(psn - p.start_psn));
  }
  // The last packet of a write asks for an ACK at once (AR), so completions are prompt.
  const bool last = s.packet + 1 == w.packets;
  pds->set_ar(last);
  ses->set_opcode(wire::SesOpcode::kWrite);
  ses->set_message_id(w.message_id);
  ses->set_buffer_offset(w.wr.remote_offset);
  ses->set_match_bits(w.wr.rkey);
  ses->set_request_length(static_cast<uint32_t>(w.wr.length));
  ses->set_som(s.packet == 0);
  ses->set_eom(last);
  if (s.packet != 0) {
    ses->set_payload_length(static_cast<uint16_t>(len));
    ses->set_message_offset(static_cast<uint32_t>(offset));
  }
  if (elided == 0) {
    uint8_t* payload = b.add_bytes(len);
    if (payload == nullptr) return false;
    std::memcpy(payload, w.wr.local + offset, len);
  }
  if (!finish_frame(b, f, elided)) return false;
  f.priority = Priority::kData;
  s.sent = now;
  s.ev = ev;
  s.in_flight = true;
  p.bytes_in_flight += len;
  ++(retx ? counters_.tx_retx : counters_.tx_data);
  return true;
}

// §3.8: ACK_CC with the cumulative ACK, a 64-bit SACK bitmap from CACK+1 and NSCC state; an
// SES response header only when the target refused a write (§4.6).
bool UetEndpoint::build_ack(Pdc& p, uint16_t pdcid, Frame& f) {
  if (p.rsp_pending()) mark_received(p, p.rsp[p.rsp_head % p.rsp.size()].psn);
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), encap_for(p, true, p.ev_base));
  wire::PdsAckCc* ack = b.add<wire::PdsAckCc>();
  const bool with_rsp = p.rsp_pending();
  wire::SesResponse* rsp = with_rsp ? b.add<wire::SesResponse>() : nullptr;
  if (ack == nullptr || (with_rsp && rsp == nullptr)) return false;
  const uint32_t cack = p.rcv_base - 1;
  // §3.7: the ACK names the packet that triggered it and `m` echoes that packet's CE mark.
  // A CE-marked arrival stays the trigger even if more packets came before this ACK could be
  // sent, so the initiator knows exactly which packet, and so which EV, was marked; another
  // ACK follows at once for the newer arrivals.
  const bool ce = p.ce_seen;
  const uint32_t trigger = ce ? p.ce_psn : p.last_psn;
  ack->set_type(PdsType::kAckCc);
  ack->set_next_hdr(rsp != nullptr ? NextHeader::kRsp : NextHeader::kNone);
  ack->set_m(ce);
  ack->set_ack_psn_offset(static_cast<int16_t>(std::clamp<int64_t>(
      static_cast<int32_t>(trigger - cack), INT16_MIN, INT16_MAX)));
  ack->set_cack_psn(cack);
  ack->set_spdcid(pdcid);
  ack->set_dpdcid(p.peer_pdcid);
  ack->set_cc_type(wire::CcType::kNscc);
  ack->set_mpr(static_cast<uint8_t>(std::min<uint32_t>(255, config_.mpr / 16)));  // [choice]
  // The 64 PSNs the bitmap reports end at the PSN that triggered this ACK (as htsim does), so
  // every arrival is reported by at least its own ACK even when the window spans more than
  // 64 packets past a hole; they start right after CACK when that is close enough.
  uint32_t sack_base = p.rcv_base;
  if (static_cast<int32_t>(trigger - p.rcv_base) > 63) sack_base = trigger - 63;
  ack->set_sack_psn_offset(static_cast<uint16_t>(sack_base - cack));
  uint64_t bitmap = 0;
  for (uint32_t i = 0; i < 64 && i < config_.mpr; ++i) {
    const uint32_t psn = sack_base + i;
    if (psn - p.rcv_base >= config_.mpr) break;
    const uint32_t idx = psn % config_.mpr;
    if (p.rcv_bits[idx / 64] >> (idx % 64) & 1) bitmap |= uint64_t{1} << i;
  }
  ack->set_sack_bitmap(bitmap);
  if (rsp != nullptr) {
    const Pdc::Response& r = p.rsp[p.rsp_head % p.rsp.size()];
    rsp->set_opcode(wire::SesRspOpcode::kResponse);
    rsp->set_return_code(static_cast<wire::SesReturnCode>(r.code));
    rsp->set_message_id(r.message_id);
  }
  if (!finish_frame(b, f, 0)) return false;
  f.priority = Priority::kControl;
  if (rsp != nullptr) ++p.rsp_head;
  p.ack_now = p.rsp_pending() ||  // one response per ACK: more follow at once
              (ce && trigger != p.last_psn);  // newer arrivals than the CE trigger
  p.ack_pending = p.ce_seen = false;
  p.unacked_rx = 0;
  p.ack_deadline = kNever;
  ++counters_.tx_acks;
  return true;
}

bool UetEndpoint::build_nack(Pdc& p, uint16_t pdcid, Frame& f) {
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), encap_for(p, true, p.ev_base));
  wire::PdsNack* n = b.add<wire::PdsNack>();
  if (n == nullptr) return false;
  n->set_type(PdsType::kNack);
  n->set_nack_code(static_cast<wire::NackCode>(p.nack_code));
  n->set_nack_psn(p.nack_psn);
  n->set_spdcid(pdcid);
  n->set_dpdcid(p.peer_pdcid);
  n->set_nack_payload(p.rcv_base);  // §3.10: max received PSN + 1 (the next expected)
  if (!finish_frame(b, f, 0)) return false;
  f.priority = Priority::kControl;
  p.nack_code = 0;
  ++counters_.tx_nacks;
  return true;
}

bool UetEndpoint::build_stateless_nack(const StatelessNack& sn, Frame& f) {
  Pdc tmp;
  tmp.peer_ip4 = sn.peer_ip4;
  tmp.peer_mac = config_.resolve_mac(sn.peer_ip4);
  tmp.peer_pdcid = sn.peer_pdcid;
  tmp.nack_code = sn.code;
  tmp.nack_psn = sn.psn;
  tmp.rcv_base = sn.psn;
  return build_nack(tmp, 0, f);
}

void UetEndpoint::queue_stateless_nack(uint32_t ip, uint16_t peer_pdcid, uint8_t code,
                                       uint32_t psn) {
  if (stateless_tail_ - stateless_head_ >= stateless_.size()) return;  // bounded: drop
  stateless_[stateless_tail_++ % stateless_.size()] = StatelessNack{ip, peer_pdcid, code, psn};
}

// ------------------------------------------------------------------------------ rx

void UetEndpoint::rx(std::span<Frame* const> frames, Time now) {
  now_ = now;
  for (const Frame* f : frames) rx_one(*f, now);
}

void UetEndpoint::rx_one(const Frame& f, Time now) {
  wire::Decoded d;
  wire::DecodeOptions opts;
  opts.elided = f.wire_len > f.len ? f.wire_len - f.len : 0;  // payload carried by length
  const wire::WireError err =
      wire::decode_frame(std::span<const uint8_t>(f.data, f.len), &d, opts);
  const bool trimmed = d.ipv4 != nullptr && d.ipv4->dscp() == kDscpTrimmed;
  // A trimmed later packet fails the SES length check only (spec/uet.md §3.14).
  if (err != wire::WireError::kOk && !(err == wire::WireError::kBadSesLength && trimmed)) {
    counters_.wire.add(err);
    ++counters_.rx_malformed;
    return;
  }
  // (After a tolerated length error the decoder has every header but did not set protocol.)
  if (d.pds == nullptr || d.ipv4 == nullptr || d.ipv4->dst() != config_.local_ip4) {
    ++counters_.rx_malformed;
    return;
  }
  switch (d.pds_type) {
    case PdsType::kRudReq:
      rx_request(d, now);
      break;
    case PdsType::kAckCc:
    case PdsType::kAck:
      rx_ack(d, now);
      break;
    case PdsType::kNack:
      rx_nack(d, now);
      break;
    default:
      ++counters_.rx_malformed;  // a mode this engine does not speak yet
      break;
  }
}

// §3.3 target side: find or create the PDC, check the window, place the write, note the ACK.
void UetEndpoint::rx_request(const wire::Decoded& d, Time now) {
  const wire::PdsRudRod& h = *d.pds_as<wire::PdsRudRod>();
  const uint32_t src = d.ipv4->src();
  const uint32_t psn = h.psn();
  Pdc* p = nullptr;
  uint16_t id = 0;
  if (h.syn()) {
    const uint64_t key = uint64_t{src} << 16 | h.spdcid();
    if (auto it = target_by_peer_pdc_.find(key); it != target_by_peer_pdc_.end()) {
      id = it->second;
    } else {
      const int32_t n = alloc_pdc(Role::kTarget);
      if (n < 0) {  // §3.10 NO_PDC_AVAIL: the table is full
        ++counters_.rx_no_pdc_avail;
        queue_stateless_nack(src, h.spdcid(), static_cast<uint8_t>(wire::NackCode::kNoPdcAvail), psn);
        return;
      }
      id = static_cast<uint16_t>(n);
      Pdc& np = pdcs_[id];
      np.peer_ip4 = src;
      np.peer_mac = config_.resolve_mac(src);
      np.peer_pdcid = h.spdcid();
      np.ev_base = static_cast<uint16_t>(next_random());
      np.rcv_base = psn - h.psn_offset();  // the start PSN
      target_by_peer_pdc_.emplace(key, id);
    }
    p = &pdcs_[id];
  } else {
    id = h.dpdcid();
    p = pdc(id);
    if (p == nullptr || p->role != Role::kTarget || p->peer_ip4 != src ||
        p->peer_pdcid != h.spdcid()) {  // §3.10 INV_DPDCID
      ++counters_.rx_unknown_pdc;
      queue_stateless_nack(src, h.spdcid(), static_cast<uint8_t>(wire::NackCode::kInvDpdcid), psn);
      return;
    }
  }
  ++counters_.rx_data;
  p->last_psn = psn;
  if (d.ecn == 3 && !p->ce_seen) {  // the first CE since the last ACK triggers the next one
    p->ce_seen = true;
    p->ce_psn = psn;
  }
  const uint32_t delta = psn - p->rcv_base;
  const uint32_t idx = psn % config_.mpr;
  if (psn_before(psn, p->rcv_base) || (delta < config_.mpr && (p->rcv_bits[idx / 64] >> (idx % 64) & 1))) {
    ++counters_.rx_duplicates;  // never delivered twice; re-ACK at once
    p->ack_now = true;
    return;
  }
  if (delta >= config_.mpr) {  // §3.10 PSN_OOR_WINDOW
    ++counters_.rx_out_of_window;
    p->nack_code = static_cast<uint8_t>(wire::NackCode::kPsnOorWindow);
    p->nack_psn = psn;
    return;
  }
  if (d.ipv4->dscp() == kDscpTrimmed) {  // §3.14: a trimmed request: ask for it again
    ++counters_.rx_trimmed;
    p->nack_code = static_cast<uint8_t>(wire::NackCode::kTrimmed);
    p->nack_psn = psn;
    return;
  }
  // §4.2 placement: payload at buffer_offset + message_offset in region match_bits.
  const wire::SesStandardRequest* ses = d.ses_as<wire::SesStandardRequest>();
  if (ses != nullptr && ses->opcode() == wire::SesOpcode::kWrite) {
    const uint64_t key = ses->match_bits();
    const uint64_t at = ses->buffer_offset() + (ses->som() ? 0 : ses->message_offset());
    const uint64_t len = ses->som() ? d.payload.size() : ses->payload_length();
    wire::SesReturnCode refuse = wire::SesReturnCode::kNull;
    if (key == 0 || key > regions_.size()) {
      refuse = wire::SesReturnCode::kBadMkey;
    } else if (at > regions_[key - 1].length || len > regions_[key - 1].length - at) {
      refuse = wire::SesReturnCode::kBadAddr;
    }
    if (refuse != wire::SesReturnCode::kNull) {
      for (uint32_t i = p->rsp_head; i != p->rsp_tail; ++i) {
        if (p->rsp[i % p->rsp.size()].psn == psn) {  // already refused, answer pending
          ++counters_.rx_duplicates;
          return;
        }
      }
      p->ack_now = true;
      if (p->rsp_tail - p->rsp_head >= p->rsp.size()) return;  // no room to say why: drop
      ++(refuse == wire::SesReturnCode::kBadMkey ? counters_.rx_bad_key : counters_.rx_bad_range);
      p->rsp[p->rsp_tail++ % p->rsp.size()] =
          Pdc::Response{static_cast<uint8_t>(refuse), ses->message_id(), psn};
      return;  // recorded as received with its response (build_ack)
    }
    if (!d.payload.empty()) {
      std::memcpy(regions_[key - 1].base + at, d.payload.data(), d.payload.size());
    }
  }
  const bool in_order = delta == 0;
  mark_received(*p, psn);
  // §3.7 ACK coalescing: at once on AR, ECN-CE, out of order or a refused write; else every
  // ack_every packets or after ack_delay.
  ++p->unacked_rx;
  if (h.ar() || d.ecn == 3 || !in_order || p->rsp_pending() || p->unacked_rx >= config_.ack_every) {
    p->ack_now = true;
  } else if (!p->ack_pending) {
    p->ack_pending = true;
    p->ack_deadline = now + config_.ack_delay;
    deadline_ = std::min(deadline_, p->ack_deadline);
  }
}

// Records `psn` and advances the cumulative point past every PSN received in order.
void UetEndpoint::mark_received(Pdc& p, uint32_t psn) {
  const uint32_t idx = psn % config_.mpr;
  p.rcv_bits[idx / 64] |= uint64_t{1} << (idx % 64);
  for (;;) {
    const uint32_t b = p.rcv_base % config_.mpr;
    if (!(p.rcv_bits[b / 64] >> (b % 64) & 1)) break;
    p.rcv_bits[b / 64] &= ~(uint64_t{1} << (b % 64));
    ++p.rcv_base;
  }
}

// `ce`: the ACK echoed CE for this very PSN (it was the ACK's trigger).
void UetEndpoint::ack_psn(Pdc& p, uint32_t psn, bool ce, Time now) {
  Slot& s = p.slots[psn % config_.mpr];
  if (s.acked) return;
  p.sel.on_ack(s.ev, ce, now);
  Write& w = p.writes[s.write % config_.max_writes];
  const uint64_t offset = uint64_t{s.packet} * config_.payload_bytes;
  const uint64_t len = std::min<uint64_t>(config_.payload_bytes, w.wr.length - offset);
  if (s.in_flight) p.bytes_in_flight -= len;
  if (s.resend) --p.resend_pending;
  s.acked = true;
  s.in_flight = false;
  s.resend = false;
  --w.unacked;
}

void UetEndpoint::mark_lost(Pdc& p, uint32_t psn) {
  Slot& s = p.slots[psn % config_.mpr];
  if (s.acked || s.resend || !s.in_flight) return;
  const Write& w = p.writes[s.write % config_.max_writes];
  const uint64_t offset = uint64_t{s.packet} * config_.payload_bytes;
  p.bytes_in_flight -= std::min<uint64_t>(config_.payload_bytes, w.wr.length - offset);
  s.in_flight = false;
  s.resend = true;
  ++p.resend_pending;
}

void UetEndpoint::retire_writes(Pdc& p) {
  // Slide the window past acknowledged PSNs.
  while (psn_before(p.base_psn, p.next_psn) && p.slots[p.base_psn % config_.mpr].acked) {
    p.slots[p.base_psn % config_.mpr] = Slot{};
    ++p.base_psn;
  }
  // Complete writes whose every packet is acknowledged, in posting order.
  // A write is done when all its packets were sent (it is behind write_send) and acknowledged.
  while (p.write_head != p.write_send) {
    Write& w = p.writes[p.write_head % config_.max_writes];
    if (w.unacked != 0) break;
    completions_.push_back(Completion{w.wr.wr_id, w.failed ? w.status : OpStatus::kSuccess,
                                      w.failed ? 0 : w.wr.length});
    ++p.write_head;
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
  // Only PSNs we sent can be acknowledged: base-1 <= cack < next.
  if (psn_before(cack, p->base_psn - 1) || !psn_before(cack, p->next_psn)) {
    ++counters_.rx_stale_ack;
    return;
  }
  ++counters_.rx_acks;
  if (!p->established) {  // §3.3: the first ACK carries the target's PDC id
    p->established = true;
    p->peer_pdcid = h.spdcid();
  }
  // The send time of the newest packet this ACK covers: holes sent well before it are lost
  // (a time guard against the reordering that spraying causes).
  Time newest_sent = 0;
  const uint64_t in_flight_before = p->bytes_in_flight;
  // An RTT sample from the PSN that triggered the ACK, if it was sent once.
  Time rtt = 0;
  const uint32_t trig = cack + static_cast<uint32_t>(static_cast<int32_t>(h.ack_psn_offset()));
  if (!psn_before(trig, p->base_psn) && psn_before(trig, p->next_psn)) {
    const Slot& s = p->slots[trig % config_.mpr];
    if (s.in_flight && s.retries == 0 && !h.retx()) rtt = now - s.sent;
  }
  // §3.7: `m` echoes CE on the trigger alone. The target ACKs at once on a CE mark and keeps
  // the marked packet as the trigger, so every other PSN this ACK covers arrived unmarked:
  // the path selector hears about each newly acknowledged packet's EV.
  const bool marked = h.m();
  for (uint32_t psn = p->base_psn; psn_before(psn, cack + 1); ++psn) {
    newest_sent = std::max(newest_sent, p->slots[psn % config_.mpr].sent);
    ack_psn(*p, psn, marked && psn == trig, now);
  }
  uint32_t highest = cack;
  if (const wire::PdsAckCc* cc = d.pds_as<wire::PdsAckCc>(); cc != nullptr) {
    const uint32_t sack_base = cack + cc->sack_psn_offset();
    const uint64_t bits = cc->sack_bitmap();
    for (uint32_t i = 0; i < 64; ++i) {
      const uint32_t psn = sack_base + i;
      if (!(bits >> i & 1)) continue;
      if (psn_before(psn, p->base_psn) || !psn_before(psn, p->next_psn)) continue;
      newest_sent = std::max(newest_sent, p->slots[psn % config_.mpr].sent);
      ack_psn(*p, psn, marked && psn == trig, now);
      if (psn_before(highest, psn)) highest = psn;
    }
    // A hole with reorder_threshold SACKed PSNs past it is lost: resend just it.
    for (uint32_t psn = p->base_psn; psn_before(psn + config_.reorder_threshold, highest + 1); ++psn) {
      const Slot& s = p->slots[psn % config_.mpr];
      if (s.in_flight && !s.acked && s.sent + config_.reorder_window <= newest_sent) {
        p->sel.on_nack(s.ev, now);  // an inferred loss counts against its path like a NACK
        mark_lost(*p, psn);
        ++counters_.fast_retx;
      }
    }
  }
  // NSCC (cc/nscc.h) sees the bytes this ACK took out of flight and its ECN echo.
  if (p->bytes_in_flight < in_flight_before) {
    p->nscc.on_ack(in_flight_before - p->bytes_in_flight, h.m(), rtt, now);
  }
  // §4.6: a refused write ends with an error completion.
  if (const wire::SesResponse* rsp = d.ses_as<wire::SesResponse>(); rsp != nullptr) {
    const auto rc = rsp->return_code();
    if (rc != wire::SesReturnCode::kOk && rc != wire::SesReturnCode::kNull) {
      for (uint32_t i = p->write_head; i != p->write_tail; ++i) {
        Write& w = p->writes[i % config_.max_writes];
        if (w.message_id == rsp->message_id()) {
          w.failed = true;
          w.status = OpStatus::kRemoteAccessError;
        }
      }
    }
  }
  retire_writes(*p);
  // Progress: reset the backoff and restart the timer for what is still in flight.
  p->rto = config_.rto;
  p->rto_deadline = p->bytes_in_flight > 0 ? now + p->rto : kNever;
  deadline_ = std::min(deadline_, p->rto_deadline);
}

// §3.10 sender reactions.
void UetEndpoint::rx_nack(const wire::Decoded& d, Time now) {
  const wire::PdsNack& h = *d.pds_as<wire::PdsNack>();
  ++counters_.rx_nacks;
  Pdc* p = pdc(h.dpdcid());
  if (p == nullptr || p->role != Role::kInitiator || p->peer_ip4 != d.ipv4->src()) {
    // A stateless NACK names our PDC in DPDCID too (we set it from our SPDCID).
    ++counters_.rx_unknown_pdc;
    return;
  }
  const uint32_t psn = h.nack_psn();
  const bool in_window = !psn_before(psn, p->base_psn) && psn_before(psn, p->next_psn);
  switch (h.nack_code()) {
    case wire::NackCode::kTrimmed:
    case wire::NackCode::kRcvrInferLoss:
    case wire::NackCode::kPktNotRcvd:
      // The packet was cut or lost on its path: tell the path selector (uet-htsim reports
      // PATH_NACK here). A last-hop trim or a window overrun says nothing about the path.
      if (in_window) {
        const Slot& s = p->slots[psn % config_.mpr];
        if (s.in_flight && !s.acked) p->sel.on_nack(s.ev, now);
      }
      [[fallthrough]];
    case wire::NackCode::kTrimmedLastHop:
    case wire::NackCode::kPsnOorWindow:
      // Resend exactly that PSN at once.
      if (in_window) {
        mark_lost(*p, psn);
        ++counters_.nack_retx;
        p->nscc.on_nack(config_.payload_bytes, now);
      }
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
    default:
      break;  // counted above; no defined reaction here yet
  }
}

void UetEndpoint::fail_pdc(Pdc& p, OpStatus why) {
  for (uint32_t i = p.write_head; i != p.write_tail; ++i) {
    const Write& w = p.writes[i % config_.max_writes];
    completions_.push_back(Completion{w.wr.wr_id, w.failed ? w.status : why, 0});
  }
  free_pdc(static_cast<uint16_t>(&p - pdcs_.data()));
}

// ------------------------------------------------------------------------------ tx

size_t UetEndpoint::tx(std::span<Frame* const> out, Time now) {
  now_ = now;
  size_t n = 0;
  // NACKs without a PDC first.
  while (n < out.size() && stateless_head_ != stateless_tail_) {
    if (build_stateless_nack(stateless_[stateless_head_++ % stateless_.size()], *out[n])) ++n;
  }
  // Round robin over the active PDCs, one frame per PDC per turn, until the burst is full or
  // a whole turn finds nothing to send.
  for (size_t idle = 0; n < out.size() && idle < active_.size();) {
    if (rr_ >= active_.size()) rr_ = 0;
    const uint16_t id = active_[rr_];
    Pdc& p = pdcs_[id];
    bool sent = false;
    if (p.role == Role::kTarget) {
      if (p.nack_code != 0) {
        sent = build_nack(p, id, *out[n]);
      } else if (p.ack_now || (p.ack_pending && now >= p.ack_deadline)) {
        sent = build_ack(p, id, *out[n]);
      }
    } else if (p.role == Role::kInitiator) {
      if (p.resend_pending > 0) {  // exactly the missing PSNs, RETX set
        for (uint32_t psn = p.base_psn; psn_before(psn, p.next_psn); ++psn) {
          Slot& s = p.slots[psn % config_.mpr];
          if (!s.resend) continue;
          s.resend = false;
          --p.resend_pending;
          sent = build_data(p, id, psn, /*retx=*/true, *out[n], now);
          break;
        }
      } else if (p.write_send != p.write_tail && p.next_psn - p.base_psn < config_.mpr &&
                 p.bytes_in_flight + config_.payload_bytes <= window(p)) {
        Write& w = p.writes[p.write_send % config_.max_writes];
        const uint32_t psn = p.next_psn;
        Slot& s = p.slots[psn % config_.mpr];
        s = Slot{};
        s.write = p.write_send;
        s.packet = p.send_packet;
        if (p.send_packet == 0) w.first_psn = psn;
        sent = build_data(p, id, psn, /*retx=*/false, *out[n], now);
        if (sent) {
          ++p.next_psn;
          if (++p.send_packet == w.packets) {
            p.send_packet = 0;
            ++p.write_send;
          }
        }
      }
      if (sent && p.rto_deadline == kNever) {
        p.rto_deadline = now + p.rto;
        deadline_ = std::min(deadline_, p.rto_deadline);
      }
    }
    if (sent) {
      ++n;
      idle = 0;
    } else {
      ++idle;
    }
    ++rr_;  // round robin: the next frame comes from the next PDC
  }
  return n;
}

// ------------------------------------------------------------------------------ timers

Time UetEndpoint::next_deadline() const { return deadline_; }

void UetEndpoint::on_timer(Time now) {
  now_ = now;
  Time next = kNever;
  for (size_t i = 0; i < active_.size(); ++i) {
    const uint16_t id = active_[i];
    Pdc& p = pdcs_[id];
    if (p.role == Role::kTarget) {
      if (p.ack_pending && p.ack_deadline <= now) p.ack_now = true;
      if (p.ack_pending && !p.ack_now) next = std::min(next, p.ack_deadline);
      continue;
    }
    if (p.rto_deadline > now) {
      next = std::min(next, p.rto_deadline);
      continue;
    }
    // RTO: every PSN in flight longer than the timeout is resent; backoff doubles.
    bool give_up = false;
    for (uint32_t psn = p.base_psn; psn_before(psn, p.next_psn); ++psn) {
      Slot& s = p.slots[psn % config_.mpr];
      if (!s.in_flight || s.sent + p.rto > now) continue;
      if (++s.retries > config_.max_retries) {
        give_up = true;
        break;
      }
      p.sel.on_timeout(s.ev, now);
      mark_lost(p, psn);
      ++counters_.timeouts;
    }
    if (give_up) {
      fail_pdc(p, OpStatus::kRetriesExhausted);
      --i;  // fail_pdc swapped another PDC into this position
      continue;
    }
    p.nscc.on_timeout(now);
    p.rto = std::min(p.rto * 2, config_.max_rto);
    p.rto_deadline = p.bytes_in_flight > 0 || p.resend_pending > 0 ? now + p.rto : kNever;
    next = std::min(next, p.rto_deadline);
  }
  deadline_ = next;
}

}  // namespace uet
