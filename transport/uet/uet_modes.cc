// The UET engine's delivery modes besides RUD (NOTES.md, "The other delivery modes"):
// ROD's in-order execution at the target (its PDCs share everything else with RUD), RUDI
// (§3.5) and UUD (§3.6), which use no PDC. Posting is control path; the rest is data path: no
// allocation, no per-packet virtual call. Comments cite spec/uet.md.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::clear_bit;
using wire::kDscpTrimmed;
using internal::psn_before;
using internal::set_bit;
using internal::status_for;
using internal::test_bit;
using wire::NextHeader;
using wire::PdsType;

namespace {

const char* mode_name(DeliveryMode m) noexcept {
  switch (m) {
    case DeliveryMode::kRud:
      return "kRud";
    case DeliveryMode::kRod:
      return "kRod";
    case DeliveryMode::kRudi:
      return "kRudi";
    case DeliveryMode::kUud:
      return "kUud";
  }
  return "?";
}

// The EV (UDP source port) of a packet without a PDC: spread over the dynamic range by its
// ID and, for a resend, its try, so a resend may take another path (§2.4).
uint16_t spray_port(uint32_t id, uint32_t attempt) noexcept {
  return wire::dynamic_port(id * 0x9E37u + attempt * 0x2F1u);
}

}  // namespace

// ------------------------------------------------------------------------------ posting

// Which verbs each mode carries: RUD and ROD all three; RUDI only idempotent ones (WRITE,
// READ: a resent SEND would consume a second receive buffer); UUD no READ (a READ needs a
// response, which an unreliable datagram does not get).
absl::Status UetEndpoint::check_mode(DeliveryMode m, Opcode op, const char* verb) {
  switch (m) {
    case DeliveryMode::kRud:
    case DeliveryMode::kRod:
      return absl::OkStatus();
    case DeliveryMode::kRudi:
      if (op == Opcode::kAtomic) {
        return absl::UnimplementedError(absl::StrCat(
            verb, ": DeliveryMode::kRudi does not carry atomics (RUDI is for idempotent "
                  "operations, spec/uet.md §3.5; an atomic must run once): use kRud or kRod"));
      }
      if (op != Opcode::kSend) return absl::OkStatus();
      return absl::UnimplementedError(absl::StrCat(
          verb,
          ": DeliveryMode::kRudi does not carry SEND (RUDI is for idempotent operations; "
          "a resent SEND would consume a second receive buffer): use kRud or kRod"));
    case DeliveryMode::kUud:
      if (op == Opcode::kAtomic) {
        return absl::UnimplementedError(absl::StrCat(
            verb, ": DeliveryMode::kUud does not carry atomics (an unreliable datagram "
                  "could be lost or run twice): use kRud or kRod"));
      }
      if (op != Opcode::kRead) return absl::OkStatus();
      return absl::UnimplementedError(
          absl::StrCat(verb,
                       ": DeliveryMode::kUud does not carry READ (its data would come back "
                       "unreliably): use kRud, kRod or kRudi"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(verb, ": unknown DeliveryMode ", static_cast<int>(m), " (", mode_name(m), ")"));
}

absl::Status UetEndpoint::post_rudi(const PeerOp& op, const char* verb) {
  if (rudi_op_tail_ - rudi_op_head_ >= config_.max_ops) {
    return absl::ResourceExhaustedError(
        absl::StrCat(verb, ": too many DeliveryMode::kRudi operations posted (max_ops)"));
  }
  if (rudi_ops_.empty()) {  // the endpoint's first RUDI operation: the initiator's tables
    rudi_ops_.assign(config_.max_ops, PeerOp{});
    rudi_pkts_.assign(config_.rudi_packets, RudiPkt{});
    rudi_free_.resize(config_.rudi_packets);
    for (uint32_t i = 0; i < config_.rudi_packets; ++i) rudi_free_[i] = static_cast<uint16_t>(i);
    rudi_free_tail_ = config_.rudi_packets;
  }
  PeerOp& o = rudi_ops_[rudi_op_tail_ % config_.max_ops];
  o = op;
  o.mac = config_.resolve_mac(op.peer);
  o.packets =
      static_cast<uint32_t>((op.length + config_.payload_bytes - 1) / config_.payload_bytes);
  o.unacked = o.packets;
  o.message_id = rudi_message_id_;
  // A READ is one single-packet READ per chunk, each with its own message ID (as on RUD).
  rudi_message_id_ =
      static_cast<uint16_t>(rudi_message_id_ + (op.op == Opcode::kRead ? o.packets : 1));
  ++rudi_op_tail_;
  return absl::OkStatus();
}

absl::Status UetEndpoint::post_uud(const PeerOp& op, const char* verb) {
  if (op.length > config_.payload_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(verb, ": DeliveryMode::kUud carries single-packet messages only: length ",
                     op.length, " > payload_bytes ", config_.payload_bytes));
  }
  if (uud_tail_ - uud_head_ >= config_.uud_queue) {
    return absl::ResourceExhaustedError(
        absl::StrCat(verb, ": too many DeliveryMode::kUud datagrams queued (uud_queue)"));
  }
  if (uud_q_.empty()) uud_q_.assign(config_.uud_queue, PeerOp{});  // the first UUD datagram
  PeerOp& u = uud_q_[uud_tail_++ % config_.uud_queue];
  u = op;
  u.mac = config_.resolve_mac(op.peer);
  u.message_id = uud_message_id_++;
  return absl::OkStatus();
}

// ------------------------------------------------------------------------------ ROD

// Lends a reorder buffer to ROD target PDC `p` (its first out-of-order request). A buffer's
// memory is allocated the first time it is lent and kept: at most rod_buffers of them.
bool UetEndpoint::rod_take_buffer(Pdc& p) {
  if (p.tgt.rod_buf >= 0) return true;
  if (!rod_pool_free_.empty()) {  // a returned one, the last returned first
    p.tgt.rod_buf = rod_pool_free_.back();
    rod_pool_free_.pop_back();
  } else if (rod_pool_.size() < config_.rod_buffers) {  // a new one
    p.tgt.rod_buf = static_cast<int32_t>(rod_pool_.size());
    rod_pool_.emplace_back();
  } else {
    return false;
  }
  RodBuffer& b = rod_pool_[static_cast<size_t>(p.tgt.rod_buf)];
  if (b.slots.empty()) {
    b.bits.assign(config_.rod_window / 64, 0);
    b.slots.resize(config_.rod_window);
    // Not zeroed: pages are touched only as payloads are held.
    b.bytes.reset(new uint8_t[size_t{config_.rod_window} * config_.payload_bytes]);
  }
  return true;
}

// Returns `p`'s reorder buffer to the pool (it holds nothing more, or the PDC is freed).
void UetEndpoint::rod_release_buffer(Pdc& p) noexcept {
  if (p.tgt.rod_buf < 0) return;
  RodBuffer& b = rod_pool_[static_cast<size_t>(p.tgt.rod_buf)];
  std::fill(b.bits.begin(), b.bits.end(), 0);
  rod_pool_free_.push_back(static_cast<uint16_t>(p.tgt.rod_buf));
  p.tgt.rod_buf = -1;
  p.tgt.rod_held = 0;
}

bool UetEndpoint::rod_staged(const Pdc& p, uint32_t psn) const noexcept {
  return p.tgt.rod_buf >= 0 && psn - p.tgt.rod_next < config_.rod_window &&
         test_bit(rod_pool_[static_cast<size_t>(p.tgt.rod_buf)].bits, psn % config_.rod_window);
}

// ROD target, [choice] in spec/uet.md §3.3: request `psn` arrived before the PSNs ahead of it
// ran. It waits in the reorder buffer (one copy of its SES header and payload) and runs when
// they have. A WRITE is checked (key, range) and recorded as received now, so the initiator's
// SACK machinery resends only the holes; a READ or SEND is recorded when it runs (it may be
// refused or NACKed then). True when it was staged.
bool UetEndpoint::rod_stage(Pdc& p, const wire::Decoded& d, const wire::SesStandardRequest* ses,
                            uint32_t psn) {
  if (psn - p.tgt.rod_next >= config_.rod_window) {  // beyond the buffer: §3.10 PSN_OOR_WINDOW
    ++counters_.rx_out_of_window;
    queue_nack(p, wire::NackCode::kPsnOorWindow, psn);
    return false;
  }
  const uint32_t slot = psn % config_.rod_window;
  if (rod_staged(p, psn)) {  // staged already: a resend
    ++counters_.rx_duplicates;
    return false;
  }
  // §4.5: an atomic's extension header is staged in front of its operands.
  const uint8_t* const ext = d.ses_cas != nullptr          ? d.ses_cas->raw
                             : d.ses_atomic != nullptr     ? d.ses_atomic->raw
                             : d.ses_rendezvous != nullptr ? d.ses_rendezvous->raw
                                                           : nullptr;
  const uint8_t ext_len = d.ses_cas != nullptr          ? wire::SesCompareSwap::kSize
                          : d.ses_atomic != nullptr     ? wire::SesAtomic::kSize
                          : d.ses_rendezvous != nullptr ? wire::SesRendezvous::kSize
                                                        : 0;
  if (d.payload.size() + ext_len > config_.payload_bytes) {  // not ours to hold; it comes again
    ++counters_.rod_unstageable;
    return false;
  }
  const bool write = ses != nullptr && ses->opcode() == wire::SesOpcode::kWrite;
  if (write) {  // refused now if it would be refused when it runs (nothing changes that)
    const auto [key, at, len] = write_placement(*ses, d.payload.size());
    if (const wire::SesReturnCode why = check_region(key, at, len);
        why != wire::SesReturnCode::kNull) {
      refuse(p, psn, static_cast<uint8_t>(why), ses->message_id());
      return false;  // rod_drain passes it (Pdc::Target::gtd)
    }
  }
  if (!rod_take_buffer(p)) {  // every buffer lent: dropped, its retransmission comes again
    ++counters_.rod_no_buffer;
    return false;
  }
  RodBuffer& buf = rod_pool_[static_cast<size_t>(p.tgt.rod_buf)];
  Staged& st = buf.slots[slot];
  st.has_ses = ses != nullptr;
  if (ses != nullptr) std::memcpy(st.ses.data(), ses->raw, st.ses.size());
  st.ext = ext_len;
  st.len = static_cast<uint32_t>(d.payload.size());
  st.elided = static_cast<uint32_t>(d.elided);
  st.recorded = write || ses == nullptr;
  uint8_t* const at = buf.bytes.get() + size_t{slot} * config_.payload_bytes;
  if (st.ext > 0) std::memcpy(at, ext, st.ext);
  if (st.len > 0) std::memcpy(at + st.ext, d.payload.data(), st.len);
  set_bit(buf.bits, slot);
  ++p.tgt.rod_held;
  ++counters_.rod_staged;
  if (st.recorded) mark_received(p, psn);
  return true;
}

// Runs the staged requests from rod_next on, in PSN order, until a hole, a READ whose data is
// not yet read (its ACK is built later: build_ack continues from there), or a request that
// was NACKed (it comes again). Refused PSNs (Pdc::Target::gtd) are passed: they have no effect.
void UetEndpoint::rod_drain(Pdc& p, uint16_t id) {
  for (;;) {
    const uint32_t psn = p.tgt.rod_next;
    if (!psn_before(psn, p.tgt.rcv_base) && psn - p.tgt.rcv_base < config_.mpr &&
        test_bit(p.tgt.gtd_bits, (psn & mpr_mask_))) {
      ++p.tgt.rod_next;
      continue;
    }
    if (!rod_staged(p, psn)) return;
    const uint32_t slot = psn % config_.rod_window;
    RodBuffer& buf = rod_pool_[static_cast<size_t>(p.tgt.rod_buf)];
    clear_bit(buf.bits, slot);
    const Staged st = buf.slots[slot];
    ++counters_.rod_executed_late;
    Exec e = Exec::kRecord;
    if (st.has_ses) {
      const uint8_t* const at = buf.bytes.get() + size_t{slot} * config_.payload_bytes;
      e = execute(p, id, *wire::as<wire::SesStandardRequest>(st.ses.data()), at,
                  std::span<const uint8_t>(at + st.ext, st.len), st.elided, psn);
    }
    if (--p.tgt.rod_held == 0) rod_release_buffer(p);  // after execute: it read the payload
    if (e == Exec::kWait) return;
    ++p.tgt.rod_next;
    if (e == Exec::kRecord && !st.recorded) {
      mark_received(p, psn);
      p.tgt.ack_now = true;
    }
  }
}

// ------------------------------------------------------------------------------ frames

wire::Encap UetEndpoint::encap_to(uint32_t ip, const wire::MacAddr& mac, bool control,
                                  uint16_t sport) const {
  wire::Encap e;
  e.src_mac = config_.local_mac;
  e.dst_mac = mac;
  e.src_ip4 = config_.local_ip4;
  e.dst_ip4 = ip;
  e.dscp = control ? config_.dscp_control : config_.dscp_data;
  e.ecn = !control && config_.ect ? 2 : 0;
  e.sport = wire_sport(sport);
  e.dport = wire::kUetUdpPort;
  e.udp_checksum = udp_checksum();
  return e;
}

// §3.5 RUDI request + §4.2 standard SES request for packet slot `slot`: one packet of a WRITE
// (placed by offset, like RUD) or one single-packet READ of a chunk.
bool UetEndpoint::build_rudi_req(uint32_t slot, bool retx, Frame& f, Time now) {
  RudiPkt& k = rudi_pkts_[slot];
  const PeerOp& o = rudi_ops_[k.op % config_.max_ops];
  const uint32_t id = uint32_t{k.gen} << 16 | slot;
  const uint64_t offset = uint64_t{k.packet} * config_.payload_bytes;
  const bool write = o.op == Opcode::kWrite;
  const size_t headers = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize +
                         wire::PdsRudi::kSize + wire::SesStandardRequest::kSize + tss_overhead_;
  const size_t elided = write && headers + k.len > f.capacity ? k.len : 0;
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity),
                       encap_to(o.peer, o.mac, false, spray_port(id, k.retries)));
  tss_begin(b);
  wire::PdsRudi* pds = b.add<wire::PdsRudi>();
  wire::SesStandardRequest* ses = b.add<wire::SesStandardRequest>();
  if (ses == nullptr) return false;
  pds->set_type(PdsType::kRudiReq);
  pds->set_next_hdr(NextHeader::kReqStd);
  pds->set_retx(retx);
  pds->set_pkt_id(id);
  ses->set_match_bits(o.rkey);
  internal::set_address(*ses, config_.job_id, o.to);
  if (write) {
    const bool last = k.packet + 1 == o.packets;
    ses->set_opcode(wire::SesOpcode::kWrite);
    ses->set_message_id(o.message_id);
    ses->set_buffer_offset(o.remote_offset);
    ses->set_request_length(static_cast<uint32_t>(o.length));
    ses->set_som(k.packet == 0);
    ses->set_eom(last);
    if (k.packet != 0) {
      ses->set_payload_length(static_cast<uint16_t>(k.len));
      ses->set_message_offset(static_cast<uint32_t>(offset));
    }
    if (elided == 0 && k.len > 0) {
      uint8_t* payload = b.add_bytes(k.len);
      if (payload == nullptr) return false;
      std::memcpy(payload, o.src + offset, k.len);
    }
  } else {
    ses->set_opcode(wire::SesOpcode::kRead);
    ses->set_message_id(static_cast<uint16_t>(o.message_id + k.packet));
    ses->set_buffer_offset(o.remote_offset + offset);
    ses->set_request_length(k.len);
    ses->set_som(true);
    ses->set_eom(true);
  }
  if (!finish(b, f, elided)) return false;
  f.priority = Priority::kData;
  k.sent = now;
  ++(retx ? counters_.tx_rudi_retx : counters_.tx_rudi);
  deadline_ = std::min(
      deadline_, now + std::min(config_.rto << std::min<int>(k.retries, 20), config_.max_rto));
  return true;
}

// §3.5 RUDI_RESP: the request's ID, its CE echo, and an SES response (§4.6) or, for a READ,
// a response with data (§4.7).
bool UetEndpoint::build_rudi_resp(const RudiRsp& r, Frame& f) {
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity),
                       encap_to(r.peer, r.mac, !r.data, spray_port(r.id, 0)));
  tss_begin(b);
  wire::PdsRudi* pds = b.add<wire::PdsRudi>();
  if (pds == nullptr) return false;
  pds->set_type(PdsType::kRudiResp);
  pds->set_next_hdr(r.data ? NextHeader::kRspData : NextHeader::kRsp);
  pds->set_m(r.m);
  pds->set_pkt_id(r.id);
  size_t elided = 0;
  if (r.data) {
    wire::SesResponseData* rd = b.add<wire::SesResponseData>();
    if (rd == nullptr) return false;
    if (!put_read_data(*rd, r.message_id, regions_[r.key - 1].base + r.offset, r.len, b,
                       f.capacity, &elided)) {
      return false;
    }
  } else {
    wire::SesResponse* rsp = b.add<wire::SesResponse>();
    if (rsp == nullptr) return false;
    rsp->set_opcode(wire::SesRspOpcode::kResponse);
    rsp->set_return_code(static_cast<wire::SesReturnCode>(r.code));
    rsp->set_message_id(r.message_id);
    rsp->set_job_id(config_.job_id);  // §4.6: the target's job
  }
  if (!finish(b, f, elided)) return false;
  f.priority = r.data ? Priority::kData : Priority::kControl;
  ++counters_.tx_rudi_resp;
  return true;
}

// §3.6 UUD request + §4.2 standard SES request: a whole message in one packet.
bool UetEndpoint::build_uud(const PeerOp& u, Frame& f) {
  const auto len = static_cast<uint32_t>(u.length);
  const size_t headers = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize +
                         wire::PdsUud::kSize + wire::SesStandardRequest::kSize + tss_overhead_;
  const size_t elided = headers + len > f.capacity ? len : 0;
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity),
                       encap_to(u.peer, u.mac, false, spray_port(u.message_id, 0)));
  tss_begin(b);
  wire::PdsUud* pds = b.add<wire::PdsUud>();
  wire::SesStandardRequest* ses = b.add<wire::SesStandardRequest>();
  if (ses == nullptr) return false;
  pds->set_type(PdsType::kUudReq);
  pds->set_next_hdr(NextHeader::kReqStd);
  ses->set_message_id(u.message_id);
  ses->set_request_length(len);
  internal::set_address(*ses, config_.job_id, u.to);
  ses->set_som(true);
  ses->set_eom(true);
  if (u.op == Opcode::kSend) {
    ses->set_opcode(wire::SesOpcode::kSend);
    if (u.has_imm) {
      ses->set_hd(true);
      ses->set_header_data(u.imm);
    }
  } else {
    ses->set_opcode(wire::SesOpcode::kWrite);
    ses->set_buffer_offset(u.remote_offset);
    ses->set_match_bits(u.rkey);
  }
  if (elided == 0 && len > 0) {
    uint8_t* payload = b.add_bytes(len);
    if (payload == nullptr) return false;
    std::memcpy(payload, u.src, len);
  }
  if (!finish(b, f, elided)) return false;
  f.priority = Priority::kData;
  return true;
}

// ------------------------------------------------------------------------------ tx

// RUDI responses, RUDI resends, new RUDI packets (within rudi_packets in flight), UUD
// datagrams (each completes as it leaves).
size_t UetEndpoint::tx_modes(std::span<Frame* const> out, Time now) {
  size_t n = 0;
  while (n < out.size() && rudi_rsp_head_ != rudi_rsp_tail_) {
    if (build_rudi_resp(rudi_rsp_[rudi_rsp_head_ % rudi_rsp_.size()], *out[n])) ++n;
    ++rudi_rsp_head_;
  }
  for (uint32_t slot = 0; rudi_resend_ > 0 && n < out.size() && slot < rudi_pkts_.size(); ++slot) {
    RudiPkt& k = rudi_pkts_[slot];
    if (!k.in_use || !k.resend) continue;
    k.resend = false;
    --rudi_resend_;
    if (build_rudi_req(slot, /*retx=*/true, *out[n], now)) ++n;
  }
  while (n < out.size() && rudi_op_send_ != rudi_op_tail_ && rudi_free_head_ != rudi_free_tail_) {
    const PeerOp& o = rudi_ops_[rudi_op_send_ % config_.max_ops];
    const uint32_t slot = rudi_free_[rudi_free_head_++ % rudi_pkts_.size()];
    RudiPkt& k = rudi_pkts_[slot];
    k.in_use = true;
    k.resend = false;
    ++k.gen;  // a new ID: answers to the slot's earlier packets are stale
    k.retries = 0;
    k.op = rudi_op_send_;
    k.packet = rudi_send_packet_;
    k.len = static_cast<uint32_t>(std::min<uint64_t>(
        config_.payload_bytes, o.length - uint64_t{rudi_send_packet_} * config_.payload_bytes));
    k.sent = now;  // if the frame cannot be built, the RTO sends it
    deadline_ = std::min(deadline_, now + config_.rto);
    if (build_rudi_req(slot, /*retx=*/false, *out[n], now)) ++n;
    if (++rudi_send_packet_ == o.packets) {
      rudi_send_packet_ = 0;
      ++rudi_op_send_;
    }
  }
  while (n < out.size() && uud_head_ != uud_tail_) {
    const PeerOp& u = uud_q_[uud_head_ % config_.uud_queue];
    const bool sent = build_uud(u, *out[n]);
    if (sent) {
      ++n;
      ++counters_.tx_uud;
    }
    // §3.6: no ACK, so the datagram is complete once it left (or could not be built).
    completions_.push_back(Completion{u.wr_id, sent ? OpStatus::kSuccess : OpStatus::kFlushed,
                                      sent ? u.length : 0, u.op});
    ++uud_head_;
  }
  return n;
}

// ------------------------------------------------------------------------------ rx

// §3.5 RUDI target: execute the request (again, for a duplicate: it is idempotent) and queue
// its one response. No state is kept per request beyond the bounded response ring.
void UetEndpoint::rx_rudi_req(const wire::Decoded& d) {
  const wire::PdsRudi& h = *d.pds_as<wire::PdsRudi>();
  const wire::SesStandardRequest* ses = d.ses_as<wire::SesStandardRequest>();
  if (d.ipv4->dscp() == kDscpTrimmed) {  // §3.14: its payload is gone; the RTO resends it
    ++counters_.rx_trimmed;
    return;
  }
  if (ses == nullptr) {  // nothing to execute, nothing to answer
    ++counters_.rx_unsupported;
    return;
  }
  if (rudi_rsp_.empty()) rudi_rsp_.assign(config_.rudi_responses, RudiRsp{});  // first request
  if (rudi_rsp_tail_ - rudi_rsp_head_ >= rudi_rsp_.size()) {  // bounded: dropped, comes again
    ++counters_.rudi_rsp_full;
    return;
  }
  ++counters_.rx_rudi_req;
  RudiRsp r;
  r.peer = d.ipv4->src();
  if (d.eth != nullptr) {
    std::memcpy(r.mac.data(), d.eth->raw + 6, r.mac.size());  // answer the sender's MAC
  } else {
    r.mac = config_.resolve_mac(r.peer);
  }
  r.id = h.pkt_id();
  r.m = d.ecn == 3;
  r.message_id = ses->message_id();
  r.code = static_cast<uint8_t>(wire::SesReturnCode::kOk);
  // §4.1: the job, process and resource index first; nothing runs for another's.
  if (const wire::SesReturnCode why = check_access(ses->raw); why != wire::SesReturnCode::kNull) {
    r.code = static_cast<uint8_t>(why);
    rudi_rsp_[rudi_rsp_tail_++ % rudi_rsp_.size()] = r;
    return;
  }
  switch (ses->opcode()) {
    case wire::SesOpcode::kWrite: {
      const auto [key, at, len] = write_placement(*ses, d.payload.size());
      if (const wire::SesReturnCode why = check_region(key, at, len);
          why != wire::SesReturnCode::kNull) {
        r.code = static_cast<uint8_t>(why);
      } else if (!d.payload.empty()) {
        std::memcpy(regions_[key - 1].base + at, d.payload.data(), d.payload.size());
      }
      break;
    }
    case wire::SesOpcode::kRead: {
      const Pdc::Response x = read_response(*ses, 0);
      r.code = x.code;
      r.data = x.data;
      r.key = x.key;
      r.len = x.len;
      r.offset = x.offset;
      break;
    }
    default:  // SEND is not idempotent; the rest is not served here (§4.9 UNSUPPORTED_OP)
      ++counters_.rx_unsupported;
      r.code = static_cast<uint8_t>(wire::SesReturnCode::kUnsupportedOp);
      break;
  }
  rudi_rsp_[rudi_rsp_tail_++ % rudi_rsp_.size()] = r;
}

// §3.5 RUDI initiator: the response to packet ID `pkt_id` acknowledges it (with a READ's
// data, placed once). IDs of no packet in flight (late duplicates, garbage) are counted.
void UetEndpoint::rx_rudi_resp(const wire::Decoded& d) {
  const wire::PdsRudi& h = *d.pds_as<wire::PdsRudi>();
  const uint32_t id = h.pkt_id();
  const uint32_t slot = id & 0xFFFF;
  if (slot >= rudi_pkts_.size() || !rudi_pkts_[slot].in_use ||
      rudi_pkts_[slot].gen != static_cast<uint16_t>(id >> 16)) {
    ++counters_.rx_rudi_stale;
    return;
  }
  RudiPkt& k = rudi_pkts_[slot];
  PeerOp& o = rudi_ops_[k.op % config_.max_ops];
  if (d.ipv4->src() != o.peer) {
    ++counters_.rx_rudi_stale;
    return;
  }
  wire::SesReturnCode rc = wire::SesReturnCode::kOk;
  if (const wire::SesResponseData* rd = d.ses_as<wire::SesResponseData>(); rd != nullptr) {
    if (o.op != Opcode::kRead || rd->return_code() != wire::SesReturnCode::kOk ||
        rd->read_req_message_id() != static_cast<uint16_t>(o.message_id + k.packet) ||
        rd->payload_length() != k.len || rd->message_offset() != 0) {
      ++counters_.rx_rudi_stale;
      return;
    }
    const size_t have = std::min<size_t>(d.payload.size(), k.len);
    if (have > 0) {
      std::memcpy(o.dst + uint64_t{k.packet} * config_.payload_bytes, d.payload.data(), have);
    }
  } else if (const wire::SesResponse* rsp = d.ses_as<wire::SesResponse>(); rsp != nullptr) {
    rc = rsp->return_code();
    if (rc == wire::SesReturnCode::kNull) rc = wire::SesReturnCode::kOk;
    // A READ is answered with its data; an OK without it answers nothing.
    if (o.op == Opcode::kRead && rc == wire::SesReturnCode::kOk) {
      ++counters_.rx_rudi_stale;
      return;
    }
  } else {
    ++counters_.rx_rudi_stale;
    return;
  }
  if (rc != wire::SesReturnCode::kOk && !o.failed) {
    o.failed = true;
    o.status = status_for(rc);
    o.rc = static_cast<uint8_t>(rc);
  }
  ++counters_.rx_rudi_resp;
  if (k.resend) --rudi_resend_;
  k.in_use = false;
  k.resend = false;
  rudi_free_[rudi_free_tail_++ % rudi_pkts_.size()] = static_cast<uint16_t>(slot);
  --o.unacked;
  retire_rudi();
}

// Operations complete in posting order once every packet was answered (or given up).
void UetEndpoint::retire_rudi() {
  while (rudi_op_head_ != rudi_op_send_) {
    const PeerOp& o = rudi_ops_[rudi_op_head_ % config_.max_ops];
    if (o.unacked != 0) break;
    completions_.push_back(internal::op_completion(o));
    ++rudi_op_head_;
  }
}

// RUDI RTOs (§3.5: all reliability state sits at the initiator): a packet unanswered for
// rto << tries is sent again under its ID; after max_retries its operation fails. Returns
// the next RUDI deadline.
Time UetEndpoint::rudi_timer(Time now) {
  if (rudi_free_tail_ - rudi_free_head_ == rudi_pkts_.size()) return kNever;  // none in flight
  Time next = kNever;
  bool gave_up = false;
  for (uint32_t slot = 0; slot < rudi_pkts_.size(); ++slot) {
    RudiPkt& k = rudi_pkts_[slot];
    if (!k.in_use || k.resend) continue;
    const Time due =
        k.sent + std::min(config_.rto << std::min<int>(k.retries, 20), config_.max_rto);
    if (due > now) {
      next = std::min(next, due);
      continue;
    }
    if (k.retries >= config_.max_retries) {
      PeerOp& o = rudi_ops_[k.op % config_.max_ops];
      if (!o.failed) {
        o.failed = true;
        o.status = OpStatus::kRetriesExhausted;
      }
      --o.unacked;
      k.in_use = false;
      rudi_free_[rudi_free_tail_++ % rudi_pkts_.size()] = static_cast<uint16_t>(slot);
      ++counters_.rudi_gave_up;
      gave_up = true;
      continue;
    }
    ++k.retries;
    k.resend = true;
    ++rudi_resend_;
    ++counters_.rudi_timeouts;
  }
  if (gave_up) retire_rudi();
  return next;
}

// §3.6 UUD target: a whole single-packet SEND goes into the next posted receive buffer, a
// WRITE is placed; anything else is dropped and counted (there is no one to tell).
void UetEndpoint::rx_uud(const wire::Decoded& d) {
  const wire::SesStandardRequest* ses = d.ses_as<wire::SesStandardRequest>();
  if (d.ipv4->dscp() == kDscpTrimmed || ses == nullptr || !ses->som() || !ses->eom()) {
    ++counters_.rx_uud_dropped;
    return;
  }
  const uint64_t len = d.payload.size() + d.elided;
  if (ses->request_length() != len) {  // more than one packet, or damaged
    ++counters_.rx_uud_dropped;
    return;
  }
  if (check_access(ses->raw) != wire::SesReturnCode::kNull) {  // §4.1, counted by its code
    ++counters_.rx_uud_dropped;
    return;
  }
  switch (ses->opcode()) {
    case wire::SesOpcode::kSend: {
      if (recv_claim_ == recv_tail_ ||
          len > recvs_[recv_claim_].rb.length) {  // no buffer, too long
        ++counters_.rx_uud_dropped;
        return;
      }
      Recv& r = recvs_[recv_claim_++];
      if (!d.payload.empty()) std::memcpy(r.rb.base, d.payload.data(), d.payload.size());
      r.peer = d.ipv4->src();
      r.done = true;
      r.status = OpStatus::kSuccess;
      r.bytes = len;
      r.has_imm = ses->hd();
      r.imm = static_cast<uint32_t>(ses->header_data());
      ++counters_.rx_uud;
      deliver_recvs();
      return;
    }
    case wire::SesOpcode::kWrite: {
      const uint64_t key = ses->match_bits();
      const uint64_t at = ses->buffer_offset();
      if (!region_ok(key, at, len)) {
        ++counters_.rx_uud_dropped;
        return;
      }
      if (!d.payload.empty()) {
        std::memcpy(regions_[key - 1].base + at, d.payload.data(), d.payload.size());
      }
      ++counters_.rx_uud;
      return;
    }
    default:
      ++counters_.rx_uud_dropped;
      return;
  }
}

}  // namespace uet
