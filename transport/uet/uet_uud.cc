// UUD (spec/uet.md §3.6): unreliable, unordered single-packet messages without a PDC. The
// sender's queue is pds::UudQueue (uet_uud.h); the target places a WRITE or fills the next
// posted receive with a SEND, and drops anything else (there is no one to tell). Posting is
// control path; the rest is data path. Comments cite spec/uet.md.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::spray_port;
using wire::kDscpTrimmed;
using wire::NextHeader;
using wire::PdsType;

pds::PeerOp& pds::UudQueue::push(const PeerOp& op, uint32_t capacity) {
  if (q_.empty()) q_.assign(capacity, PeerOp{});  // the first UUD datagram
  PeerOp& u = q_[tail_++ % capacity];
  u = op;
  u.message_id = message_id_++;
  return u;
}

absl::Status UetEndpoint::post_uud(const PeerOp& op, const char* verb) {
  if (op.length > hot_.payload_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(verb, ": DeliveryMode::kUud carries single-packet messages only: length ",
                     op.length, " > payload_bytes ", hot_.payload_bytes));
  }
  if (modes().uud.full(config_.uud_queue)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(verb, ": too many DeliveryMode::kUud datagrams queued (uud_queue)"));
  }
  PeerOp& u = modes().uud.push(op, config_.uud_queue);
  u.mac = config_.resolve_mac(op.peer);
  return absl::OkStatus();
}

// UUD datagrams, each complete as it leaves (§3.6: no ACK), or once it could not be built.
size_t UetEndpoint::tx_uud(std::span<Frame* const> out) {
  size_t n = 0;
  while (n < out.size() && !modes().uud.empty()) {
    const PeerOp& u = modes().uud.front();
    const bool sent = build_uud(u, *out[n]);
    if (sent) {
      ++n;
      ++rare().tx_uud;
    }
    completions_.push_back(Completion{u.wr_id, sent ? OpStatus::kSuccess : OpStatus::kFlushed,
                                      sent ? u.length : 0, u.op});
    modes().uud.pop();
  }
  return n;
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

// §3.6 UUD target: a whole single-packet SEND goes into the next posted receive buffer, a
// WRITE is placed; anything else is dropped and counted (there is no one to tell).
void UetEndpoint::rx_uud(const wire::Decoded& d) {
  const wire::SesStandardRequest* ses = d.ses_as<wire::SesStandardRequest>();
  if (d.ipv4->dscp() == kDscpTrimmed || ses == nullptr || !ses->som() || !ses->eom()) {
    ++rare().rx_uud_dropped;
    return;
  }
  const uint64_t len = d.payload.size() + d.elided;
  if (ses->request_length() != len) {  // more than one packet, or damaged
    ++rare().rx_uud_dropped;
    return;
  }
  if (check_access(ses->raw) != wire::SesReturnCode::kNull) {  // §4.1, counted by its code
    ++rare().rx_uud_dropped;
    return;
  }
  switch (ses->opcode()) {
    case wire::SesOpcode::kSend: {
      if (recv_claim_ == recv_tail_ ||
          len > recvs_[recv_claim_].rb.length) {  // no buffer, too long
        ++rare().rx_uud_dropped;
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
      ++rare().rx_uud;
      deliver_recvs();
      return;
    }
    case wire::SesOpcode::kWrite: {
      const uint64_t key = ses->match_bits();
      const uint64_t at = ses->buffer_offset();
      if (!region_ok(key, at, len)) {
        ++rare().rx_uud_dropped;
        return;
      }
      if (!d.payload.empty()) {
        std::memcpy(region_base(key) + at, d.payload.data(), d.payload.size());
      }
      ++rare().rx_uud;
      return;
    }
    default:
      ++rare().rx_uud_dropped;
      return;
  }
}

}  // namespace uet
