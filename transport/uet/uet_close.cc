// A PDC's closing and freeing (spec/uet.md §3.12; transport/uet/NOTES.md, "PDC lifecycle"):
// the initiator closes an idle PDC (CLOSE, freed by its ACK), the target asks for it
// (REQ_CLOSE) and frees on CLOSE; what freeing releases. Control path: it runs once per PDC.
#include <algorithm>
#include <utility>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::psn_before;

// An initiator PDC with nothing posted and nothing outstanding is idle: it closes after
// idle_timeout, or at once when the target asked (REQ_CLOSE).
void UetEndpoint::note_idle(Pdc& p, Time now) {
  if (p.closing || p.ini.op_head != p.ini.op_tail || psn_before(p.ini.base_psn, p.ini.next_psn))
    return;
  if (p.ini.close_requested) {
    start_close(p, now);
    return;
  }
  if (hot_.idle_timeout == 0 || p.idle_deadline != kNever) return;
  p.idle_deadline = now + hot_.idle_timeout;
  deadline_ = std::min(deadline_, p.idle_deadline);
}

// §3.12 CLOSE: the PDC stops being the peer's (a new write opens a new PDC), sends CLOSE with
// the next PSN and is freed when the target's ACK covers that PSN (or after max_retries
// unanswered CLOSEs: nothing is outstanding, so nothing is lost).
void UetEndpoint::start_close(Pdc& p, Time now) {
  const uint16_t id = p.id;
  pdcs_.erase_initiator(p.peer_ip4, p.rod, p.peer_pid, id);
  p.closing = true;
  p.ini.close_psn = p.ini.next_psn;
  p.close_tries = 0;
  p.ctrl_pending = p.established;  // never ACKed: the target has no PDC to close
  p.idle_deadline = kNever;
  p.ini.rto_deadline = p.ini.tlp_deadline = kNever;
  p.ini.close_deadline = now;  // not established: freed at the next timer
  if (p.established) p.ini.close_deadline = now + p.ini.rto;
  deadline_ = std::min(deadline_, p.ini.close_deadline);
}

// A closing initiator PDC (§3.12): its CLOSE again, with backoff, until answered or
// max_retries; then freed. True when freed.
bool UetEndpoint::timer_closing(Pdc& p, uint16_t id, Time now, Time& next) {
  if (p.ini.close_deadline <= now) {
    if (!p.ctrl_pending && p.close_tries < hot_.max_retries && p.established) {
      ++p.close_tries;
      p.ctrl_pending = true;  // the CLOSE (or its ACK) was lost: again, with backoff
      p.ini.close_deadline =
          now + std::min(p.ini.rto << std::min<int>(p.close_tries, 16), hot_.max_rto);
    } else if (!p.ctrl_pending) {
      if (p.established) ++rare().close_abandoned;
      free_pdc(id);
      return true;
    } else {
      p.ini.close_deadline = now + p.ini.rto;
    }
  }
  next = std::min(next, p.ini.close_deadline);
  return false;
}

// The table is full and a SYN wants a PDC: the oldest target PDC whose REQ_CLOSEs all went
// unanswered (and that has heard nothing since) is freed and allocated again; -1 if none.
int32_t UetEndpoint::reclaim_unanswered() {
  while (unanswered_head_ != unanswered_tail_) {
    const uint16_t id = unanswered_[unanswered_head_++];
    const Pdc& p = pdcs_[id];
    if (p.role != Role::kTarget || !p.tgt.unanswered) continue;  // answered since, or freed
    ++rare().req_close_abandoned;
    release_target(id);
    return alloc_pdc(Role::kTarget);
  }
  return -1;
}

// Frees a target PDC: SEND and tagged messages it was receiving end (kPdcClosed), so their
// buffers complete in order. (A rendezvous message's READ runs on a PDC of its own, and ends
// its receive itself.)
void UetEndpoint::release_target(uint16_t id) {
  if (rx_msgs_used_ > 0) {
    for (RxMsg& m : rx_msgs_) {
      if (!m.in_use || m.pdc != id || m.rdv) continue;
      if (m.tagged) {
        m.in_use = false;
        --rx_msgs_used_;
        close_tagged(m);
        continue;
      }
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

// What freeing a PDC does beyond the table (which drops its look-up entries, parks its
// windows and queues its id for reuse).
void UetEndpoint::free_pdc(uint16_t id) {
  Pdc& p = pdcs_[id];
  if (tss_ != nullptr) {  // §5.6: the peer's next PDC starts past this one's last PSN
    if (p.role == Role::kInitiator) tss_->initiator_next_start(p.peer_ip4, p.ini.next_psn);
    if (p.role == Role::kTarget) tss_->start_psn_used(p.peer_ip4, p.peer_pdcid, p.tgt.rcv_base);
  }
  if (p.role == Role::kTarget) rccc_rx_.on_close(id);  // RCCC: it wants no more credit
  if (p.role == Role::kTarget && p.tgt.gtd_live > 0) {
    for (Pdc::Refusal& g : p.tgt.gtd) {  // fetching atomics' values no one will ask for again
      if (g.result != 0) free_result(std::exchange(g.result, 0));
      // A rendezvous source's READ answers no clear reached: the reader has closed (or given
      // up on) its PDC, so it reads no more; the source counts them as cleared.
      if (g.rdv != 0) rdv_cleared(std::exchange(g.rdv, 0), g.rdv_len);
    }
  }
  if (p.role == Role::kTarget) rod_release_buffer(p);
  pdcs_.free(id);
}

// A target PDC idle for 2 x idle_timeout sends REQ_CLOSE every idle_timeout, up to
// max_retries times (§3.12). [choice] Unanswered one idle_timeout more, the initiator may be
// gone (or never was: a flood of SYNs) or cut off by a failed link: the PDC stays, but a SYN
// that finds the table full takes it (reclaim_unanswered).
void UetEndpoint::req_close_due(Pdc& p, uint16_t id, Time now) {
  p.idle_deadline = kNever;
  if (p.close_tries < hot_.max_retries) {
    ++p.close_tries;
    p.ctrl_pending = true;
    p.idle_deadline = now + hot_.idle_timeout;
  } else if (!p.tgt.unanswered) {
    p.tgt.unanswered = true;
    if (unanswered_tail_ - unanswered_head_ == hot_.max_pdcs) ++unanswered_head_;
    unanswered_.reserve32(unanswered_head_, unanswered_tail_,
                          uint64_t{unanswered_tail_ - unanswered_head_} + 1, hot_.max_pdcs);
    unanswered_[unanswered_tail_++] = id;
  }
}

// §3.12: a closing initiator PDC is freed by the ACK that covers its CLOSE's PSN; any other
// ACK for it is stale.
void UetEndpoint::close_acked(Pdc& p, uint16_t spdcid, uint32_t cack) {
  if (cack == p.ini.close_psn && spdcid == p.peer_pdcid) {
    ++rare().pdcs_closed;
    free_pdc(p.id);
  } else {
    ++rare().rx_stale_ack;
  }
}

// §3.12 CLOSE at the target: everything before its PSN is done at the initiator, so its
// refusals are cleared; the PDC is freed only when every PSN before it arrived (else the
// CLOSE is early, reordered, and comes again). Every CLOSE is ACKed, also for a PDC already
// freed (the first ACK was lost).
void UetEndpoint::rx_close(const wire::PdsCtrl& h, Pdc* p, uint32_t src) {
  ++rare().rx_close;
  if (p != nullptr && p->role == Role::kTarget && p->peer_ip4 == src &&
      p->peer_pdcid == h.spdcid()) {
    clear_for_close(*p, h.psn() - 1);
    if (p->tgt.rcv_base != h.psn()) {
      ++rare().rx_bad_ctrl;
      return;
    }
    ++rare().pdcs_closed;
    release_target(h.dpdcid());
  }
  queue_stateless_nack(src, h.spdcid(), 0, h.psn(), Stateless::kCloseAck, h.dpdcid());
}

// §3.12 REQ_CLOSE at the initiator: close once idle. For a PDC not (any more) ours, a CLOSE
// naming the REQ_CLOSE's PSN (the target's next expected), so the target frees only a PDC
// that heard nothing since.
void UetEndpoint::rx_req_close(const wire::PdsCtrl& h, Pdc* p, uint32_t src, Time now) {
  ++rare().rx_req_close;
  if (p != nullptr && p->role == Role::kInitiator && p->peer_ip4 == src) {
    if (p->closing) return;  // our CLOSE is on its way
    if (p->established && p->peer_pdcid == h.spdcid()) {
      p->ini.close_requested = true;
      note_idle(*p, now);
      return;
    }
    if (!p->established) return;  // a new PDC under a reused id: its SYN will tell
  }
  queue_stateless_nack(src, h.spdcid(), 0, h.psn(), Stateless::kClose, h.dpdcid());
}

}  // namespace uet
