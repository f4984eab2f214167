// Timers (spec/uet.md §3.7, §3.12, RFC 6298, RFC 8985): on_timer() by role, the RTO, the
// RCCC re-ask (a PDC's teardown, CLOSE and REQ_CLOSE, is uet_close.cc's).
#include <algorithm>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::psn_before;

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
  const std::vector<uint16_t>& active = pdcs_.active();
  for (size_t i = 0; i < active.size(); ++i) {
    const uint16_t id = active[i];
    Pdc& p = pdcs_[id];
    // Each role's deadlines alone: a PDC holds the state of its own role only (uet_pdc.h).
    bool freed = false;
    if (p.role == Role::kTarget) {
      if (std::min(p.tgt.ack_pending ? p.tgt.ack_deadline : kNever, p.idle_deadline) <= now) {
        mark_ready(p);  // a timer of its fires: it may have a frame for tx()
      }
      timer_target(p, id, now, next);
    } else {
      if (std::min({p.idle_deadline, p.ini.close_deadline, p.ini.credit_deadline,
                    p.ini.tlp_deadline, p.ini.rack_deadline, p.ini.rto_deadline,
                    p.ini.results_held ? p.ini.clear_at : kNever}) <= now) {
        mark_ready(p);
      }
      freed = p.closing ? timer_closing(p, id, now, next) : timer_initiator(p, now, next);
    }
    if (freed) --i;  // free_pdc swapped another PDC into this position
  }
  deadline_ = std::min(next, rudi_timer(now));  // RUDI packets' RTOs (uet_rudi.cc)
  if (rdv_live_ > 0) deadline_ = std::min(deadline_, rdv_timer(now));  // rendezvous sources
  if (sinks_live_ > 0) deadline_ = std::min(deadline_, sink_timer(now));  // ... and sinks
  if ((deferred_reserved_ | restarts_due_) != 0) {  // deferrable sends' reservations, restarts
    deadline_ = std::min(deadline_, defer_timer(now));
  }
}

// A target PDC's timers: the delayed ACK (§3.7) and, idle, its REQ_CLOSE (§3.12,
// uet_close.cc).
[[gnu::always_inline]] inline void UetEndpoint::timer_target(Pdc& p, uint16_t id, Time now,
                                                             Time& next) {
  if (p.tgt.ack_pending && p.tgt.ack_deadline <= now) p.tgt.ack_now = true;
  if (p.tgt.ack_pending && !p.tgt.ack_now) next = std::min(next, p.tgt.ack_deadline);
  if (p.idle_deadline <= now) req_close_due(p, id, now);
  next = std::min(next, p.idle_deadline);
}

// hold_probe_after: operations wait on the target with nothing in flight. REQ_ACK (§3.12)
// with backoff; max_retries unanswered: the target is gone, its operations fail. True when
// the PDC failed (freed).
bool UetEndpoint::probe_held(Pdc& p, Time now) {
  if (hot_.hold_probe_after == 0 || !p.established || p.ini.op_head == p.ini.op_tail ||
      psn_before(p.ini.base_psn, p.ini.next_psn))
    return false;  // data in flight: the RTO watches the target
  if (p.ini.req_acks >= hot_.max_retries) {
    ++rare().hold_probe_failures;
    fail_pdc(p, OpStatus::kRetriesExhausted);
    return true;
  }
  ++p.ini.req_acks;
  p.ini.req_ack_pending = true;
  p.idle_deadline = now + std::min(p.ini.rto << std::min<int>(p.ini.req_acks, 16), hot_.max_rto);
  return false;
}

// An initiator PDC's timers: idle close (§3.12), the RCCC re-ask, CLEAR, the tail-loss probe,
// RACK's reorder timer and the RTO. True when the PDC failed (freed).
[[gnu::always_inline]] inline bool UetEndpoint::timer_initiator(Pdc& p, Time now, Time& next) {
  if (p.idle_deadline <= now) {  // idle for idle_timeout: close (§3.12)
    p.idle_deadline = kNever;
    if (p.ini.op_head == p.ini.op_tail && !psn_before(p.ini.base_psn, p.ini.next_psn)) {
      start_close(p, now);
      next = std::min(next, p.ini.close_deadline);
      return false;
    }
    if (probe_held(p, now)) return true;
  }
  next = std::min(next, p.idle_deadline);
  if (p.ini.credit_deadline <= now) credit_timeout(p);
  next = std::min(next, p.ini.credit_deadline);
  if (p.ini.clear_at > now) next = std::min(next, p.ini.clear_at);  // a CLEAR may go again (tx)
  if (p.ini.tlp_deadline <= now) {
    p.ini.tlp_deadline = kNever;
    send_tlp(p);
  }
  if (p.ini.rack_deadline <= now) rack_detect(p, now);
  next = std::min(next, p.ini.rack_deadline);
  if (p.ini.rto_deadline > now) {
    next = std::min({next, p.ini.rto_deadline, p.ini.tlp_deadline});
    return false;
  }
  if (p.ini.frame_refused) [[unlikely]] {  // frames too small for an RTO (frame_too_small)
    fail_pdc(p, OpStatus::kFrameTooSmall);
    return true;
  }
  if (!rto_fired(p, now)) {
    fail_pdc(p, OpStatus::kRetriesExhausted);
    return true;
  }
  next = std::min(next, p.ini.rto_deadline);
  return false;
}

// RCCC: an RTO blocked on credit without any arriving: the grants (or what asked for them)
// were lost. Ask again; before the PDC is established there is no target PDC to name, so let
// one packet go as a probe (its SYN opens the PDC, its target asks).
void UetEndpoint::credit_timeout(Pdc& p) {
  p.ini.credit_deadline = kNever;
  if (p.ini.credit_blocked && !p.ini.rccc.can_send() && credit_backlog(p) > 0) {
    if (p.established) {
      p.ini.credit_req_pending = true;
    } else {
      p.ini.rccc.on_credit(static_cast<uint64_t>(1 - p.ini.rccc.credit()));  // credit becomes 1
      ++counters_.credit_probes;
    }
  }
  p.ini.credit_blocked = false;  // the next stall re-arms the timer
}

// RTO: every PSN in flight longer than the timeout is resent; backoff doubles. A PSN waiting
// after an RNR NACK is resent too, without counting as a timeout. False: a PSN used up its
// retries with the peer silent (the PDC fails).
bool UetEndpoint::rto_fired(Pdc& p, Time now) {
  uint32_t timed_out = 0;
  for (uint32_t psn = p.ini.base_psn; psn_before(psn, p.ini.next_psn); ++psn) {
    Slot& s = p.ini.slots[psn];
    if (!s.in_flight() || s.sent + p.ini.rto > now) continue;
    if (s.rnr_wait()) {
      mark_lost(p, psn);
      ++rare().rnr_retx;
      continue;
    }
    // Giving up means the peer stopped answering: a timeout counts towards max_retries only
    // if no ACK arrived since this PSN was sent. Otherwise the peer is alive and the packet
    // sat in a slow queue or was lost on one path (the path selector hears of it): on
    // degraded links a PSN can time out many times while its PDC makes progress.
    const bool peer_silent = p.ini.last_ack_at == kNever || p.ini.last_ack_at <= s.sent;
    if (peer_silent) {
      s.add_retry();
      if (s.retries() > hot_.max_retries) return false;
    }
    p.ini.sel.on_timeout(s.ev, now);
    mark_lost(p, psn);
    ++counters_.timeouts;
    ++timed_out;
  }
  if (timed_out > 0) {
    p.ini.nscc.on_timeout(now);
    p.ini.rto = std::min(p.ini.rto * 2, hot_.max_rto);
  }
  p.ini.rto_deadline = psn_before(p.ini.base_psn, p.ini.next_psn) ? now + p.ini.rto : kNever;
  p.ini.tlp_deadline = kNever;  // after a timeout, the RTO alone until the next progress
  return true;
}

}  // namespace uet
