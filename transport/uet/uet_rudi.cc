// RUDI (spec/uet.md §3.5): reliable, unordered delivery of idempotent operations without a
// PDC. The initiator's packets carry IDs and are resent on RTO; the target runs each request
// (again, for a resend) and answers it once. The state is pds::Rudi (uet_rudi.h). Posting is
// control path; the rest is data path: no allocation after the first use, no per-packet
// virtual call. Comments cite spec/uet.md.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::spray_port;
using internal::status_for;
using wire::kDscpTrimmed;
using wire::NextHeader;
using wire::PdsType;

// ------------------------------------------------------------------------------ state

pds::PeerOp& pds::Rudi::post(const PeerOp& op, uint32_t packets, uint32_t max_ops,
                        uint32_t rudi_packets) {
  if (ops.empty()) {  // the endpoint's first RUDI operation: the initiator's tables
    ops.assign(max_ops, PeerOp{});
    pkts.assign(rudi_packets, RudiPkt{});
    free.resize(rudi_packets);
    for (uint32_t i = 0; i < rudi_packets; ++i) free[i] = static_cast<uint16_t>(i);
    free_tail = rudi_packets;
  }
  PeerOp& o = ops[op_tail % max_ops];
  o = op;
  o.packets = packets;
  o.unacked = packets;
  o.message_id = message_id;
  message_id = static_cast<uint16_t>(message_id + (op.op == Opcode::kRead ? packets : 1));
  ++op_tail;
  return o;
}

uint32_t pds::Rudi::start_packet(uint32_t payload_bytes, uint32_t max_ops, Time now) noexcept {
  const PeerOp& o = ops[op_send % max_ops];
  const uint32_t slot = free[free_head++ % pkts.size()];
  RudiPkt& k = pkts[slot];
  k.in_use = true;
  k.resend = false;
  ++k.gen;
  k.retries = 0;
  k.op = op_send;
  k.packet = send_packet;
  k.len = static_cast<uint32_t>(
      std::min<uint64_t>(payload_bytes, o.length - uint64_t{send_packet} * payload_bytes));
  k.sent = now;  // if the frame cannot be built, the RTO sends it
  if (++send_packet == o.packets) {
    send_packet = 0;
    ++op_send;
  }
  return slot;
}

// ------------------------------------------------------------------------------ initiator

absl::Status UetEndpoint::post_rudi(const PeerOp& op, const char* verb) {
  if (modes().rudi.op_tail - modes().rudi.op_head >= config_.max_ops) {
    return absl::ResourceExhaustedError(
        absl::StrCat(verb, ": too many DeliveryMode::kRudi operations posted (max_ops)"));
  }
  const auto packets =
      static_cast<uint32_t>((op.length + hot_.payload_bytes - 1) / hot_.payload_bytes);
  PeerOp& o = modes().rudi.post(op, packets, config_.max_ops, config_.rudi_packets);
  o.mac = config_.resolve_mac(op.peer);
  return absl::OkStatus();
}

// RUDI responses, then resends, then new packets (within rudi_packets in flight).
size_t UetEndpoint::tx_rudi(std::span<Frame* const> out, Time now) {
  size_t n = 0;
  while (n < out.size() && modes().rudi.rsp_head != modes().rudi.rsp_tail) {
    if (build_rudi_resp(modes().rudi.rsp[modes().rudi.rsp_head % modes().rudi.rsp.size()], *out[n]))
      ++n;
    ++modes().rudi.rsp_head;
  }
  for (uint32_t slot = 0;
       modes().rudi.resend > 0 && n < out.size() && slot < modes().rudi.pkts.size(); ++slot) {
    pds::RudiPkt& k = modes().rudi.pkts[slot];
    if (!k.in_use || !k.resend) continue;
    k.resend = false;
    --modes().rudi.resend;
    if (build_rudi_req(slot, /*retx=*/true, *out[n], now)) ++n;
  }
  while (n < out.size() && modes().rudi.op_send != modes().rudi.op_tail &&
         modes().rudi.free_head != modes().rudi.free_tail) {
    const uint32_t slot = modes().rudi.start_packet(hot_.payload_bytes, config_.max_ops, now);
    deadline_ = std::min(deadline_, now + hot_.rto);
    if (build_rudi_req(slot, /*retx=*/false, *out[n], now)) ++n;
  }
  return n;
}

// §3.5 RUDI request + §4.2 standard SES request for packet slot `slot`: one packet of a WRITE
// (placed by offset, like RUD) or one single-packet READ of a chunk.
bool UetEndpoint::build_rudi_req(uint32_t slot, bool retx, Frame& f, Time now) {
  pds::RudiPkt& k = modes().rudi.pkts[slot];
  const PeerOp& o = modes().rudi.op_of(k, config_.max_ops);
  const uint32_t id = uint32_t{k.gen} << 16 | slot;
  const uint64_t offset = uint64_t{k.packet} * hot_.payload_bytes;
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
  ++(retx ? rare().tx_rudi_retx : rare().tx_rudi);
  deadline_ = std::min(
      deadline_, now + std::min(hot_.rto << std::min<int>(k.retries, 20), hot_.max_rto));
  return true;
}

// §3.5 RUDI initiator: the response to packet ID `pkt_id` acknowledges it (with a READ's
// data, placed once). IDs of no packet in flight (late duplicates, garbage) are counted.
void UetEndpoint::rx_rudi_resp(const wire::Decoded& d) {
  const wire::PdsRudi& h = *d.pds_as<wire::PdsRudi>();
  pds::RudiPkt* const kp = modes_ != nullptr ? modes_->rudi.find(h.pkt_id()) : nullptr;
  if (kp == nullptr) {
    ++rare().rx_rudi_stale;
    return;
  }
  pds::RudiPkt& k = *kp;
  PeerOp& o = modes().rudi.op_of(k, config_.max_ops);
  if (d.ipv4->src() != o.peer) {
    ++rare().rx_rudi_stale;
    return;
  }
  wire::SesReturnCode rc = wire::SesReturnCode::kOk;
  if (const wire::SesResponseData* rd = d.ses_as<wire::SesResponseData>(); rd != nullptr) {
    if (o.op != Opcode::kRead || rd->return_code() != wire::SesReturnCode::kOk ||
        rd->read_req_message_id() != static_cast<uint16_t>(o.message_id + k.packet) ||
        rd->payload_length() != k.len || rd->message_offset() != 0) {
      ++rare().rx_rudi_stale;
      return;
    }
    const size_t have = std::min<size_t>(d.payload.size(), k.len);
    if (have > 0) {
      std::memcpy(o.dst + uint64_t{k.packet} * hot_.payload_bytes, d.payload.data(), have);
    }
  } else if (const wire::SesResponse* rsp = d.ses_as<wire::SesResponse>(); rsp != nullptr) {
    rc = rsp->return_code();
    if (rc == wire::SesReturnCode::kNull) rc = wire::SesReturnCode::kOk;
    // A READ is answered with its data; an OK without it answers nothing.
    if (o.op == Opcode::kRead && rc == wire::SesReturnCode::kOk) {
      ++rare().rx_rudi_stale;
      return;
    }
  } else {
    ++rare().rx_rudi_stale;
    return;
  }
  if (rc != wire::SesReturnCode::kOk && !o.failed) {
    o.failed = true;
    o.status = status_for(rc);
    o.rc = static_cast<uint8_t>(rc);
  }
  ++rare().rx_rudi_resp;
  if (k.resend) --modes().rudi.resend;
  k.resend = false;
  modes().rudi.free_slot(h.pkt_id() & 0xFFFF);
  --o.unacked;
  retire_rudi();
}

// Operations complete in posting order once every packet was answered (or given up).
void UetEndpoint::retire_rudi() {
  while (modes().rudi.op_head != modes().rudi.op_send) {
    const PeerOp& o = modes().rudi.ops[modes().rudi.op_head % config_.max_ops];
    if (o.unacked != 0) break;
    completions_.push_back(internal::op_completion(o));
    ++modes().rudi.op_head;
  }
}

// RUDI RTOs (§3.5: all reliability state sits at the initiator): a packet unanswered for
// rto << tries is sent again under its ID; after max_retries its operation fails. Returns
// the next RUDI deadline.
Time UetEndpoint::rudi_timer(Time now) {
  if (modes_ == nullptr || modes_->rudi.none_in_flight()) return kNever;  // none in flight
  Time next = kNever;
  bool gave_up = false;
  for (uint32_t slot = 0; slot < modes().rudi.pkts.size(); ++slot) {
    pds::RudiPkt& k = modes().rudi.pkts[slot];
    if (!k.in_use || k.resend) continue;
    const Time due =
        k.sent + std::min(hot_.rto << std::min<int>(k.retries, 20), hot_.max_rto);
    if (due > now) {
      next = std::min(next, due);
      continue;
    }
    if (k.retries >= hot_.max_retries) {
      PeerOp& o = modes().rudi.op_of(k, config_.max_ops);
      if (!o.failed) {
        o.failed = true;
        o.status = OpStatus::kRetriesExhausted;
      }
      --o.unacked;
      modes().rudi.free_slot(slot);
      ++rare().rudi_gave_up;
      gave_up = true;
      continue;
    }
    ++k.retries;
    k.resend = true;
    ++modes().rudi.resend;
    ++rare().rudi_timeouts;
  }
  if (gave_up) retire_rudi();
  return next;
}

// ------------------------------------------------------------------------------ target

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
    ++rare().rx_unsupported;
    return;
  }
  if (modes().rudi.rsp.empty())
    modes().rudi.rsp.assign(config_.rudi_responses, RudiRsp{});  // first request
  if (modes().rudi.rsp_tail - modes().rudi.rsp_head >=
      modes().rudi.rsp.size()) {  // bounded: dropped, comes again
    ++rare().rudi_rsp_full;
    return;
  }
  ++rare().rx_rudi_req;
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
    modes().rudi.rsp[modes().rudi.rsp_tail++ % modes().rudi.rsp.size()] = r;
    return;
  }
  switch (ses->opcode()) {
    case wire::SesOpcode::kWrite: {
      const auto [key, at, len] = write_placement(*ses, d.payload.size());
      if (const wire::SesReturnCode why = check_region(key, at, len);
          why != wire::SesReturnCode::kNull) {
        r.code = static_cast<uint8_t>(why);
      } else if (!d.payload.empty()) {
        std::memcpy(region_base(key) + at, d.payload.data(), d.payload.size());
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
      ++rare().rx_unsupported;
      r.code = static_cast<uint8_t>(wire::SesReturnCode::kUnsupportedOp);
      break;
  }
  modes().rudi.rsp[modes().rudi.rsp_tail++ % modes().rudi.rsp.size()] = r;
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
    if (!put_read_data(*rd, r.message_id, region_base(r.key) + r.offset, r.len, b,
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
  ++rare().tx_rudi_resp;
  return true;
}

}  // namespace uet
