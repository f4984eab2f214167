// SES deferrable sends (spec/uet.md §4.2 DEFERRABLE_SEND, DEFERRABLE_TSEND, DEFERRABLE_RTR):
// at the initiator, each send's restart slot and token, the deferral its target answers, and
// the restart its RTR asks for; at the target, the message deferred without its bytes, the
// receive reserved for it and the RTR sent, and the restart placed into that receive.
// NOTES.md, "Deferrable sends", says how they travel.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::link_tail;
using internal::unlink;

// ------------------------------------------------------------------------------ initiator

// A deferrable send or tagged send takes a restart slot (its token: the slot and its
// generation) and goes as a PDC operation; refused when every slot is taken.
absl::Status UetEndpoint::defer_post(DeliveryMode mode, uint32_t peer, Op op, const void* buffer,
                                     const char* verb) {
  if (mode != DeliveryMode::kRud && mode != DeliveryMode::kRod) {
    // A deferral is answered and its restart asked for on a PDC; RUDI and UUD have none.
    return absl::UnimplementedError(
        absl::StrCat(verb, ": a deferrable send travels on a PDC: use kRud or kRod"));
  }
  if (tab().defer.empty()) {
    tab().defer.assign(config_.deferrable_sends, DeferSlot{});
    tab().defer_free.resize(config_.deferrable_sends);
    for (uint32_t i = 0; i < config_.deferrable_sends; ++i) {
      tab().defer_free[i] = config_.deferrable_sends - 1 - i;
    }
  }
  if (tab().defer_free.empty()) {
    return absl::ResourceExhaustedError(
        absl::StrCat(verb, ": too many deferrable sends not yet complete (deferrable_sends)"));
  }
  const uint32_t i = tab().defer_free.back();
  DeferSlot& s = tab().defer[i];
  ++s.gen;
  op.defer = i + 1;
  op.remote_offset = defer_token(i);
  op.rkey = config_.pid_on_fep;  // §4.2 `initiator`: where the target sends the RTR
  if (absl::Status st = post_verb(mode, peer, op, buffer, verb); !st.ok()) return st;
  tab().defer_free.pop_back();
  s.live = true;
  s.deferred = false;
  s.rtr_seen = false;
  s.rod = mode == DeliveryMode::kRod;
  s.peer = peer;
  s.op = op;
  return absl::OkStatus();
}

void UetEndpoint::defer_free(uint32_t slot) noexcept {
  tab().defer[slot].live = false;
  tab().defer_free.push_back(slot);
}

// A deferrable send's attempt retired (or a target's RTR, which completes nothing): refused
// NO_MATCH, the target has deferred it, and it waits for the RTR (restarted at once if that
// came first); otherwise it completes.
void UetEndpoint::defer_retired(const Op& o) {
  if (o.op == Opcode::kRecv) return;  // an RTR: the restart, or the deferral timer, follows
  const uint32_t i = o.defer - 1;
  DeferSlot& s = tab().defer[i];
  if (o.failed && o.rc == static_cast<uint8_t>(wire::SesReturnCode::kNoMatch)) {
    ++rare().tx_deferred;
    s.deferred = true;
    if (s.rtr_seen && !defer_restart(i)) {  // on_timer tries again
      ++restarts_due_;
      deadline_ = std::min(deadline_, now_ + hot_.rto);
    }
    return;
  }
  completions_.push_back(internal::op_completion(o));
  defer_free(i);
}

// The deferred send of slot `i` goes again, the same token in it. False: no room to post it
// (max_ops, max_pdcs).
bool UetEndpoint::defer_restart(uint32_t i) {
  DeferSlot& s = tab().defer[i];
  Op op = s.op;  // (a copy: posting may move the ring the caller's operation is in)
  if (!post_op(s.peer, s.rod, op, "deferrable send restart").ok()) return false;
  s.rtr_seen = false;
  s.deferred = false;
  ++rare().tx_restarts;
  return true;
}

// §4.2 DEFERRABLE_RTR at the initiator: the target has a receive for the send the token
// names. A deferred send restarts; one whose deferral is still in flight restarts when it
// retires; a token naming no send is counted and acknowledged (the target's reservation
// times out). kWait: NACKed, no room to post the restart (the RTR comes again).
UetEndpoint::Exec UetEndpoint::rx_rtr(Pdc& p, const wire::SesStandardRequest& ses,
                                      uint32_t psn) {
  if (ses.ie()) {  // §4.1: given up by its target (RNR): nothing to restart or push
    ++rare().rx_initiator_err;
    return Exec::kRecord;
  }
  const uint64_t token = ses.match_bits();
  if (is_rdv_key(token)) return rdv_push(p, ses, psn);  // a rendezvous CTS
  const uint32_t i = token & 0xFFFF;
  if (i >= tab().defer.size() || !tab().defer[i].live || token != defer_token(i) ||
      tab().defer[i].peer != p.peer_ip4 || tab().defer[i].rtr_seen) {
    ++rare().rx_rtr_stale;
    return Exec::kRecord;
  }
  DeferSlot& s = tab().defer[i];
  if (!s.deferred) {  // the deferral is still on its way back: restart when it retires
    s.rtr_seen = true;
    return Exec::kRecord;
  }
  if (!defer_restart(i)) {
    queue_nack(p, wire::NackCode::kNoSesMsgAvail, psn);
    return Exec::kWait;
  }
  return Exec::kRecord;
}

// ------------------------------------------------------------------------------- target

// The deferred message `token` of `peer`, or kNoLink.
uint32_t UetEndpoint::find_deferred(uint32_t peer, uint64_t token) const noexcept {
  for (const uint32_t u : tab().deferred) {
    if (tab().unexp[u].token == token && tab().unexp[u].peer == peer) return u;
  }
  return kNoLink;
}

// Whether a posted tagged receive matches `tag` from `peer`.
bool UetEndpoint::trecv_waits(uint64_t tag, uint32_t peer) const noexcept {
  for (uint32_t r = tab().trecv_list.head; r != kNoLink; r = tab().trecvs[r].next) {
    if (tag_matches(tab().trecvs[r].tr, tag, peer)) return true;
  }
  return false;
}

// §4.2 DEFERRABLE_SEND / DEFERRABLE_TSEND at the target. A message a receive waits for (or
// one already started) goes as its SEND or tagged send would; one with none is deferred: its
// packets answered NO_MATCH, nothing staged, and the sender asked to restart once a receive
// is posted (post_rtr). The restart, the same token in a new message, lands in the receive
// reserved for it. With no entry free, it goes as its plain send would (staged or NACKed).
UetEndpoint::Exec UetEndpoint::rx_deferrable(Pdc& p, uint16_t id,
                                             std::span<const uint8_t> payload, size_t elided,
                                             const wire::SesStandardRequest& ses, uint32_t psn) {
  const bool tagged = ses.opcode() == wire::SesOpcode::kDeferrableTsend;
  tagged_tables();
  if (!ses.ie() && find_msg(id, ses.message_id()) == nullptr) {
    const uint32_t u = find_deferred(p.peer_ip4, ses.buffer_offset());
    if (u != kNoLink) {
      const Unexp& e = tab().unexp[u];
      if (!e.reserved || (e.pdc == id && e.message_id == ses.message_id())) {
        // The deferred attempt's other packets, or a restart no RTR asked for: still none.
        refuse(p, psn, static_cast<uint8_t>(wire::SesReturnCode::kNoMatch), ses.message_id());
        return Exec::kDone;
      }
      if (!bind_restart(p, id, ses, psn, u)) return Exec::kWait;
    } else if (tagged ? !trecv_waits(ses.match_bits(), p.peer_ip4) : recv_claim_ == recv_tail_) {
      if (defer_message(p, id, ses)) {
        refuse(p, psn, static_cast<uint8_t>(wire::SesReturnCode::kNoMatch), ses.message_id());
        return Exec::kDone;
      }
    }
  }
  return tagged ? rx_tagged(p, id, payload, elided, ses, psn)
                : rx_send(p, id, payload, elided, ses, psn);
}

// Records message `ses` as deferred, in arrival order among the unexpected messages. False:
// no entry free.
bool UetEndpoint::defer_message(Pdc& p, uint16_t id, const wire::SesStandardRequest& ses) {
  if (tab().unexp_free.empty()) return false;
  const uint32_t u = tab().unexp_free.back();
  tab().unexp_free.pop_back();
  Unexp& e = tab().unexp[u];
  e = Unexp{};
  e.peer = p.peer_ip4;
  e.tag = ses.match_bits();
  e.deferred = true;
  e.untagged = ses.opcode() == wire::SesOpcode::kDeferrableSend;
  e.pdc = id;
  e.message_id = ses.message_id();
  e.pid = static_cast<uint16_t>(ses.initiator() & 0xFFF);
  e.token = ses.buffer_offset();
  link_tail(tab().unexp, tab().unexp_list.head, tab().unexp_list.tail, u);
  tab().deferred.push_back(u);
  if (e.untagged) ++deferred_untagged_;
  ++rare().rx_deferred;
  // A receive posted before this one (untagged) went to a message that came first; one
  // posted now finds it in reserve_untagged or post_trecv.
  return true;
}

// The restart of deferred message `u` arrived: its message state is bound to the receive
// reserved for it. False: no message state (NACKed; it comes again).
bool UetEndpoint::bind_restart(Pdc& p, uint16_t id, const wire::SesStandardRequest& ses,
                               uint32_t psn, uint32_t u) {
  RxMsg* m = take_msg(p, psn);
  if (m == nullptr) return false;
  const Unexp& e = tab().unexp[u];
  m->in_use = true;
  m->pdc = id;
  m->message_id = ses.message_id();
  m->length = m->remaining = ses.request_length();
  if (e.untagged) {
    m->recv = e.recv_at;
    Recv& r = recvs_[e.recv_at];
    r.peer = p.peer_ip4;
    if (m->length > r.rb.length) {  // nothing of it is written (rx_send refuses TOO_LONG)
      ++rare().rx_length_error;
      m->status = OpStatus::kLengthError;
    }
  } else {
    m->tagged = true;
    m->tag = e.tag;
    m->peer = p.peer_ip4;
    m->wr_id = e.recv.wr_id;
    m->dst = e.recv.base;
    m->cap = e.recv.length;
    m->unexp = -1;
  }
  ++rx_msgs_used_;
  ++rare().rx_restarts;
  free_deferred(u);
  return true;
}

// Deferred entry `u` (out of the arrival list if reserved) goes back.
void UetEndpoint::free_deferred(uint32_t u) {
  Unexp& e = tab().unexp[u];
  if (!e.reserved) {
    unlink(tab().unexp, tab().unexp_list.head, tab().unexp_list.tail, u);
    if (e.untagged) --deferred_untagged_;
  } else {
    --deferred_reserved_;
  }
  tab().deferred.erase(std::find(tab().deferred.begin(), tab().deferred.end(), u));
  e = Unexp{};
  tab().unexp_free.push_back(u);
}

// §4.2: a DEFERRABLE_RTR to deferred message u's sender, its token in match_bits, on our own
// PDC to it; the restart is then due within deferral_timeout. False: no room (max_ops,
// max_pdcs).
bool UetEndpoint::post_rtr(uint32_t u) {
  Unexp& e = tab().unexp[u];
  Op op;
  op.op = Opcode::kRecv;
  op.tag = e.token;
  op.to = SesAddress{.pid_on_fep = e.pid};
  op.defer = u + 1;
  if (!post_op(e.peer, /*rod=*/false, op, "deferrable RTR").ok()) return false;
  ++rare().tx_rtr;
  unlink(tab().unexp, tab().unexp_list.head, tab().unexp_list.tail, u);
  e.reserved = true;
  e.deadline = now_ + config_.deferral_timeout;
  deadline_ = std::min(deadline_, e.deadline);
  ++deferred_reserved_;
  return true;
}

// Receives posted while untagged messages wait deferred are reserved for them, first
// deferred first, each with its RTR. One whose RTR finds no room stays posted for the next
// SEND.
void UetEndpoint::reserve_untagged() {
  for (uint32_t u = tab().unexp_list.head; u != kNoLink && recv_claim_ != recv_tail_;) {
    const uint32_t next = tab().unexp[u].next;
    if (tab().unexp[u].untagged) {
      if (!post_rtr(u)) return;
      --deferred_untagged_;
      tab().unexp[u].recv_at = recv_claim_++;
      if (deferred_untagged_ == 0) return;
    }
    u = next;
  }
}

// A tagged receive matched deferred message `u`: reserved for its restart. Refused (nothing
// taken) when the RTR finds no room.
absl::Status UetEndpoint::defer_matched(const TaggedRecv& tr, uint32_t u) {
  if (!post_rtr(u)) {
    return absl::ResourceExhaustedError(
        "post_trecv: no room to post the RTR of the deferred message it matches (max_ops, "
        "max_pdcs)");
  }
  tab().unexp[u].recv = tr;
  return absl::OkStatus();
}

// Reserved receives whose restart has not come in deferral_timeout complete
// kRetriesExhausted (the sender is gone, or failed); restarts an RTR asked for that found no
// room go now. Returns the next deadline.
Time UetEndpoint::defer_timer(Time now) {
  for (uint32_t i = 0; restarts_due_ > 0 && i < tab().defer.size(); ++i) {
    if (tab().defer[i].live && tab().defer[i].deferred && tab().defer[i].rtr_seen && defer_restart(i)) {
      --restarts_due_;
    }
  }
  Time next = restarts_due_ > 0 ? now + hot_.rto : kNever;
  for (size_t k = 0; k < tab().deferred.size() && deferred_reserved_ > 0;) {
    const uint32_t u = tab().deferred[k];
    Unexp& e = tab().unexp[u];
    if (!e.reserved || e.deadline > now) {
      if (e.reserved) next = std::min(next, e.deadline);
      ++k;
      continue;
    }
    ++rare().defer_timeouts;
    if (e.untagged) {
      Recv& r = recvs_[e.recv_at];
      r.done = true;
      r.status = OpStatus::kRetriesExhausted;
      r.peer = e.peer;
      deliver_recvs();
    } else {
      RxMsg m;
      m.status = OpStatus::kRetriesExhausted;
      m.tag = e.tag;
      m.peer = e.peer;
      complete_trecv(e.recv, m, nullptr);
    }
    free_deferred(u);  // tab().deferred[k] is now the next one
  }
  return next;
}

}  // namespace uet
