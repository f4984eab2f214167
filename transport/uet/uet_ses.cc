// SES at the target (spec/uet.md §4): READ answers, SEND messages into posted receive
// buffers, and receive completions in posting order.
#include <algorithm>
#include <cstring>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

// The answer to READ `psn`: its data, or why not (§4.9). Key and range are checked here, at
// every (re)execution; the data is read when the ACK is built.
UetEndpoint::Pdc::Response UetEndpoint::read_response(const wire::SesStandardRequest& ses,
                                                      uint32_t psn, uint32_t peer) {
  Pdc::Response r;
  r.message_id = ses.message_id();
  r.psn = psn;
  const uint64_t key = ses.match_bits();
  const uint64_t at = ses.buffer_offset();
  const uint64_t len = ses.request_length();
  // A key no region has may name a rendezvous source (uet_rendezvous.cc).
  if (const wire::SesReturnCode why = !key_ok(key) && is_rdv_key(key)
                                          ? rdv_read_check(peer, key, at, len)
                                          : check_region(key, at, len);
      why != wire::SesReturnCode::kNull) {
    r.code = static_cast<uint8_t>(why);
  } else if (len > hot_.payload_bytes) {  // one response packet per READ request
    ++rare().rx_unsupported;
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
    // (A rendezvous message's packet has arrived: what remains comes by its READ.)
    if (m.in_use && m.pdc == pdc_id && m.message_id == message_id && !m.rdv) return &m;
  }
  return nullptr;
}

// A message state for a message starting now, cleared; null (counted, and the request NACKed
// NO_SES_MSG_AVAIL: its initiator retries) when all max_recv_messages are in use.
UetEndpoint::RxMsg* UetEndpoint::take_msg(Pdc& p, uint32_t psn) {
  if (rx_msgs_used_ == rx_msgs_.size()) {
    ++rare().rx_no_msg_state;
    queue_nack(p, wire::NackCode::kNoSesMsgAvail, psn);
    return nullptr;
  }
  RxMsg& m = *std::find_if(rx_msgs_.begin(), rx_msgs_.end(),
                           [](const RxMsg& e) { return !e.in_use; });
  m = RxMsg{};
  return &m;
}

// Receive completions leave in buffer posting order.
void UetEndpoint::deliver_recvs() {
  while (recv_head_ != recv_claim_) {
    const Recv& r = recvs_[recv_head_];
    if (!r.done) break;
    completions_.push_back(
        Completion{r.rb.wr_id, r.status, r.bytes, Opcode::kRecv, r.peer, r.has_imm, r.imm});
    ++recv_head_;
  }
}

// §4.2 SEND at the target: the first packet of a message to arrive claims the next posted
// buffer; each packet lands at its message_offset. kRecord: the PSN is to be recorded now;
// kWait: NACKed (no buffer, no message state: the initiator retries); kDone: refused.
UetEndpoint::Exec UetEndpoint::rx_send(Pdc& p, uint16_t id, std::span<const uint8_t> payload,
                                       size_t elided, const wire::SesStandardRequest& ses,
                                       uint32_t psn) {
  auto [at, len] = internal::msg_packet(ses, payload.size() + elided);
  RxMsg* m = find_msg(id, ses.message_id());
  if (m == nullptr) {
    if (ses.ie()) {  // §4.1: given up by its sender: nothing to place, no buffer to claim
      ++rare().rx_initiator_err;
      return Exec::kRecord;
    }
    if (recv_claim_ == recv_tail_) {  // no buffer posted: "still processing; retry" (§3.10)
      ++rare().rx_rnr;
      queue_nack(p, wire::NackCode::kRcvdSesProcg, psn);
      return Exec::kWait;
    }
    m = take_msg(p, psn);
    if (m == nullptr) return Exec::kWait;
    Recv& r = recvs_[recv_claim_];
    r.peer = p.peer_ip4;
    *m = RxMsg{true,
               id,
               ses.message_id(),
               recv_claim_,
               ses.request_length(),
               ses.request_length(),
               OpStatus::kSuccess};
    ++recv_claim_;
    ++rx_msgs_used_;
    if (m->length > r.rb.length) {  // nothing of it is written
      ++rare().rx_length_error;
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
    ++rare().rx_bad_send;  // outside its own message: counted, never placed
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
  if (msg_packet_end(*m, ses, len)) {
    r.done = true;
    r.status = m->status;
    r.bytes = m->status == OpStatus::kSuccess ? m->length : 0;
    m->in_use = false;
    --rx_msgs_used_;
    deliver_recvs();
  }
  return result;
}

// §4.1 MSG_ERROR [choice]: the initiator declares its message `message_id` on this PDC in
// error, as the `ie` flag on its packets would: nothing of it is delivered, and its receive
// completes kRemoteInvalidRequest when the rest has arrived (or its PDC closes). One naming
// no message in progress (done, not begun, deferred) is acknowledged and counted.
void UetEndpoint::rx_msg_error(uint16_t id, const wire::SesStandardRequest& ses) {
  RxMsg* m = find_msg(id, ses.message_id());
  if (m == nullptr) {
    ++rare().rx_msg_error_unknown;
    return;
  }
  ++rare().rx_msg_error;
  if (m->status == OpStatus::kSuccess) m->status = OpStatus::kRemoteInvalidRequest;
}

}  // namespace uet
