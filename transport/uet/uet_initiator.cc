// The initiator's send window (spec/uet.md §3.7, §3.8, §3.10): ACKs and the PSNs they cover,
// SES responses, NACKs, loss detection (RACK, tail-loss probe), the RTT estimate, NSCC and
// RCCC credit at the sender, and an idle PDC's close.
#include <algorithm>
#include <bit>
#include <cstring>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::psn_before;
using internal::status_for;

// `ce`: the ACK echoed CE for this very PSN (it was the ACK's trigger). Inline (here and
// covered_psn): an ACK runs it for every PSN it covers, and the out-of-line calls cost about
// as much as their bodies (bench/NOTES.md, "Fourth round (h/engine4)").
[[gnu::always_inline]] inline void UetEndpoint::ack_psn(Pdc& p, uint32_t psn, bool ce, Time now) {
  Slot& s = p.ini.slots[psn];
  const Slot::State was = s.state;  // (the path selector does not touch the slot)
  if ((was & Slot::kAcked) != 0) return;
  p.ini.sel.on_ack(s.ev, ce, now);
  if ((was & Slot::kInFlight) != 0) p.ini.bytes_in_flight -= s.len;
  if ((was & Slot::kResend) != 0) --p.ini.resend_pending;
  s.state = Slot::kAcked;
  ++p.ini.acked_total;
  --p.ini.ops[s.op].unacked;
}

// RFC 6298 §2: SRTT/RTTVAR from one sample of a packet sent once.
void UetEndpoint::on_rtt_sample(Pdc& p, Time rtt) noexcept {
  if (p.ini.srtt == 0) {
    p.ini.srtt = rtt;
    p.ini.rttvar = rtt / 2;
  } else {
    const Time err = p.ini.srtt > rtt ? p.ini.srtt - rtt : rtt - p.ini.srtt;
    p.ini.rttvar = (3 * p.ini.rttvar + err) / 4;
    p.ini.srtt = (7 * p.ini.srtt + rtt) / 8;
  }
  p.ini.rtt_max = std::max(p.ini.rtt_max, rtt);
  p.ini.rtt_min = std::min(p.ini.rtt_min, rtt);
  counters_.rtt_max = std::max(counters_.rtt_max, rtt);
}

// RFC 6298 §2.3, floored at rto_srtt_pct of srtt and at rto_rtt_max_pct of the largest sample.
Time UetEndpoint::rto_estimate(const Pdc& p) noexcept {
  if (p.ini.srtt == 0) return hot_.rto;
  const Time est = std::max(p.ini.srtt + 4 * p.ini.rttvar, p.ini.srtt * hot_.rto_srtt_pct / 100);
  const Time rto = std::clamp(est, hot_.min_rto, hot_.max_rto);
  if (hot_.rto_rtt_max_pct == 0) return rto;
  const Time floored = std::clamp(std::max(est, p.ini.rtt_max * hot_.rto_rtt_max_pct / 100),
                                  hot_.min_rto, hot_.max_rto);
  if (floored > rto) ++counters_.rto_below_rtt_max;
  return floored;
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
  p.ini.rack_deadline = kNever;
  if (!hot_.rack || p.ini.rack_sent == 0 || !psn_before(p.ini.base_psn, p.ini.next_psn)) {
    return;
  }
  // RFC 8985 §6.2 step 4: in recovery, with no reordering seen, no reordering window; and
  // with nothing new to send, no count either: every PSN sent before the newest delivered one.
  const bool no_window = p.ini.loss_repaired && !p.ini.reordering_seen;
  const Time window = no_window ? 0 : reorder_window(p);
  const bool tail_acked = p.ini.slots[p.ini.next_psn - 1].acked();
  const uint32_t end = tail_acked || (no_window && p.ini.op_send == p.ini.op_tail)
                           ? p.ini.next_psn
                           : p.ini.rack_highest + 1 - hot_.reorder_threshold;
  for (uint32_t psn = p.ini.base_psn; psn_before(psn, end); ++psn) {
    const Slot& s = p.ini.slots[psn];
    if (!s.in_flight() || s.acked() || s.sent > p.ini.rack_sent) continue;
    const Time lost_at = s.sent + p.ini.rack_rtt + window;
    if (lost_at <= now) {
      p.ini.sel.on_nack(s.ev, now);  // an inferred loss counts against its path like a NACK
      mark_lost(p, psn);
      p.ini.slots[psn].set(Slot::kInferred);
      ++counters_.fast_retx;
      if (!p.ini.in_recovery) {  // RFC 8985 §6.2 step 4 counts recoveries, not resends
        p.ini.in_recovery = true;
        p.ini.recovery_psn = p.ini.next_psn;
      }
    } else {
      p.ini.rack_deadline = std::min(p.ini.rack_deadline, lost_at);
    }
  }
  deadline_ = std::min(deadline_, p.ini.rack_deadline);
}

// RFC 8985 §6.2 step 4 (DSACK-based adaptation): a resend proved spurious. `duplicate`: the
// target got the PSN twice (spec §3.7: an ACK echoing `retx` for a PSN already acknowledged,
// UET's DSACK); else the original's ACK came first. The window grows by min_rtt / 4 at most
// once a round trip: the round ends when the PSNs in flight now are acknowledged.
void UetEndpoint::note_spurious(Pdc& p, bool duplicate) {
  if (duplicate) ++rare().spurious_retx;
  if (p.ini.spurious_round && !psn_before(p.ini.base_psn, p.ini.spurious_psn)) {
    p.ini.spurious_round = false;
  }
  if (hot_.reorder_adapt_recoveries == 0 || p.ini.spurious_round) return;
  p.ini.spurious_round = true;
  p.ini.spurious_psn = p.ini.next_psn;
  if (p.ini.reo_wnd_mult != UINT8_MAX) ++p.ini.reo_wnd_mult;
  p.ini.reo_wnd_persist = static_cast<uint8_t>(hot_.reorder_adapt_recoveries);
  ++rare().reorder_widened;
}

// reorder_window's steps, out of line: most PDCs never take one.
Time UetEndpoint::widened_window(const Pdc& p, Time base) noexcept {
  const Time wide = base + p.ini.reo_wnd_mult * (p.ini.rtt_min / 4);
  return std::max(base, std::min({wide, p.ini.srtt, p.ini.rto - p.ini.rack_rtt}));
}

// An ACK whose trigger `s` was resent, or echoes `retx` (§3.7).
void UetEndpoint::note_retx_ack(Pdc& p, const Slot& s, bool retx) {
  // RFC 8985 §6.2: the original of a resent PSN arrived, so it was late, not lost (as a
  // DSACK would say); or the resend of an inferred loss arrived first: that loss was real.
  if (s.retransmitted() && !retx) p.ini.reordering_seen = true;
  if (s.inferred() && !s.acked() && retx) p.ini.loss_repaired = true;
  // RFC 8985 §6.2 step 4: the original of a resent PSN arrived, or a resend arrived after
  // the PSN was acknowledged: a spurious resend. Only a resend that came second widens the
  // window; one that overtook its original (a slow path) gained time.
  if (s.retransmitted() && !retx) {
    if (s.acked()) {
      ++rare().spurious_retx;
    } else {
      note_spurious(p, false);
    }
  } else if (s.acked() && retx) {
    note_spurious(p, true);
  }
}

// RFC 8985 §6.2 step 4: a recovery ends once the PSNs in flight when RACK began it are
// acknowledged; reo_wnd_persist recoveries without a spurious resend drop the widening.
void UetEndpoint::rack_rounds(Pdc& p) {
  const uint32_t base = p.ini.base_psn;
  if (p.ini.spurious_round && !psn_before(base, p.ini.spurious_psn)) p.ini.spurious_round = false;
  if (p.ini.in_recovery && !psn_before(base, p.ini.recovery_psn)) {
    p.ini.in_recovery = false;
    if (p.ini.reo_wnd_persist != 0 && --p.ini.reo_wnd_persist == 0) p.ini.reo_wnd_mult = 0;
  }
}

// Resends the highest unacknowledged PSN in flight, once: its ACK carries the SACK state that
// repairs the rest, or it repairs the last packet itself.
void UetEndpoint::send_tlp(Pdc& p) {
  p.ini.tlp_done = true;
  for (uint32_t psn = p.ini.next_psn; psn_before(p.ini.base_psn, psn);) {
    --psn;
    const Slot& s = p.ini.slots[psn];
    if (!s.outstanding()) continue;
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
  Slot& s = p.ini.slots[psn];
  if (s.acked()) return;
  const Op& o = p.ini.ops[s.op];
  if (o.op == Opcode::kRead && !o.failed) {
    if (data_sent > 0 && s.in_flight() && s.sent + reorder_window(p) <= data_sent) {
      mark_lost(p, psn);
      ++rare().read_data_lost;
    }
    return;
  }
  ack_psn(p, psn, ce, now);
}

void UetEndpoint::mark_lost(Pdc& p, uint32_t psn) {
  Slot& s = p.ini.slots[psn];
  if ((s.state & (Slot::kAcked | Slot::kResend | Slot::kInFlight)) != Slot::kInFlight) return;
  p.ini.bytes_in_flight -= s.len;
  s.clear(static_cast<Slot::State>(Slot::kInFlight | Slot::kRnrWait));
  s.set(Slot::kResend);
  ++p.ini.resend_pending;
}

[[gnu::always_inline]] inline void UetEndpoint::retire_ops(Pdc& p) {
  // Slide the window past acknowledged PSNs.
  while (psn_before(p.ini.base_psn, p.ini.next_psn) && p.ini.slots[p.ini.base_psn].acked()) {
    ++p.ini.base_psn;  // (its slot is written afresh when the PSN is next new: tx_initiator)
  }
  // Complete operations whose every packet was sent (behind op_send) and acknowledged, in
  // posting order.
  while (p.ini.op_head != p.ini.op_send) {
    const Op& o = p.ini.ops[p.ini.op_head];
    if (o.unacked != 0) break;
    if ((o.rdv | o.defer | o.push) != 0) [[unlikely]] {
      if (o.push != 0) {
        // a pushed rendezvous WRITE completes its send; the send handed over completes nothing
        if (o.op == Opcode::kWrite) rdv_pushed(o);
      } else if (o.rdv != 0) {
        rdv_read_done(o);  // a rendezvous READ completes its receive, not an operation posted
      } else {
        defer_retired(o);  // a deferrable send may wait for its RTR instead
      }
    } else {
      completions_.push_back(internal::op_completion(o));
    }
    ++p.ini.op_head;
  }
}

void UetEndpoint::retire(Pdc& p) { retire_ops(p); }

// §3.7/§3.8 initiator side.
void UetEndpoint::rx_ack(const wire::Decoded& d, Time now) {
  const wire::PdsAck& h = *wire::as<wire::PdsAck>(d.pds);
  Pdc* p = pdc(h.dpdcid());
  if (p == nullptr || p->role != Role::kInitiator || p->peer_ip4 != d.ipv4->src()) {
    ++rare().rx_unknown_pdc;
    return;
  }
  const uint32_t cack = h.cack_psn();
  const wire::PdsAckCc* const cc = d.pds_as<wire::PdsAckCc>();
  if (cc != nullptr && cc->cc_type() == wire::CcType::kCredit && !p->closing) {
    ++counters_.rx_credit_acks;  // §3.8.2: RCCC credit riding the ACK
    on_credit(*p, cc->credit());
  }
  if (p->closing) {  // §3.12: only the ACK of the CLOSE matters now
    close_acked(*p, h.spdcid(), cack);
    return;
  }
  const uint32_t trig = cack + static_cast<uint32_t>(static_cast<int32_t>(h.ack_psn_offset()));
  const bool trig_in_window =
      !psn_before(trig, p->ini.base_psn) && psn_before(trig, p->ini.next_psn);
  const uint64_t in_flight_before = p->ini.bytes_in_flight;
  const uint64_t acked_before = p->ini.acked_total;
  // An RTT sample from the PSN that triggered the ACK, if it was sent once (Karn).
  Time rtt = 0;
  // RACK's newest delivered send time from a resend (RFC 8985 §6.2 step 2): the RETX echo
  // (§3.7) says the trigger's resend arrived; resent more than once, the echo does not say
  // which, and an ACK sooner than min RTT after the last one was for an earlier copy.
  Time retx_sent = 0;
  if (trig_in_window) {
    const Slot& s = p->ini.slots[trig];
    if (s.in_flight() && !s.retransmitted() && !h.retx()) rtt = now - s.sent;
    if (s.retransmitted() | h.retx()) [[unlikely]] {
      if (s.retransmitted() && h.retx() && (!s.resent_again() || now - s.sent >= p->ini.rtt_min)) {
        retx_sent = s.sent;
      }
      note_retx_ack(*p, s, h.retx());
    }
  } else if (h.retx() && psn_before(trig, p->ini.base_psn) &&
             p->ini.base_psn - trig <= hot_.mpr) [[unlikely]] {
    note_spurious(*p, true);  // the duplicate of a PSN acknowledged and retired
  }
  const Time data_sent = ack_response(*p, d, trig, trig_in_window, now);
  // Only PSNs we sent can be acknowledged: base-1 <= cack < next.
  if (psn_before(cack, p->ini.base_psn - 1) || !psn_before(cack, p->ini.next_psn)) {
    ++rare().rx_stale_ack;
    retire_ops(*p);
    return;
  }
  ++counters_.rx_acks;
  p->ini.last_ack_at = now;
  // §3.8: new PSNs stay within the window this target advertises (mpr_room); MPR 0 says
  // nothing [choice].
  if (p->ini.peer_mpr == 0 || psn_before(p->ini.peer_cack, cack)) p->ini.peer_cack = cack;
  if (cc != nullptr && cc->mpr() != 0) p->ini.peer_mpr = cc->mpr();
  if (!p->established) {  // §3.3: the first ACK carries the target's PDC id
    p->established = true;
    p->peer_pdcid = h.spdcid();
  }
  ack_covered(*p, cack, trig, h.m(), cc, data_sent, retx_sent, now);
  nscc_on_ack(*p, cc, h.m(), rtt, in_flight_before, now);
  retire_ops(*p);
  if (p->ini.in_recovery | p->ini.spurious_round) [[unlikely]] {
    rack_rounds(*p);
  }
  // Progress restarts the timer for what is still unacknowledged; a new probe may go after
  // progress. A timeout's backoff is kept until a valid RTT sample (Karn; RFC 6298 §5.7):
  // when every ACK is for a retransmitted PSN, the estimate is as old as the last sample, and
  // resetting the backoff would time out again at once (bench/NOTES.md, "Choices in the
  // sources"). An ACK that acknowledges nothing new (a duplicate, or the late original of a
  // resent PSN) restarts neither timer (RFC 6298 §5.3, RFC 8985 §7.2): such ACKs would keep
  // pushing a stuck flow's probe and RTO out.
  if (rtt > 0) on_rtt_sample(*p, rtt);
  const bool progress = p->ini.acked_total != acked_before;
  if (progress) p->ini.tlp_done = false;
  p->ini.rto = rtt > 0 ? rto_estimate(*p) : std::max(p->ini.rto, rto_estimate(*p));
  if (!psn_before(p->ini.base_psn, p->ini.next_psn)) {
    p->ini.rto_deadline = kNever;
  } else if (progress || p->ini.rto_deadline == kNever) {
    p->ini.rto_deadline = now + p->ini.rto;
  }
  deadline_ = std::min(deadline_, p->ini.rto_deadline);
  if (progress) arm_tlp(*p, now);
  note_idle(*p, now);
  note_held(*p, now);
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
      const Slot& s = p.ini.slots[trig];
      Op& o = p.ini.ops[s.op];
      const uint32_t packet = trig - o.first_psn;
      if (o.op == Opcode::kRead && !s.acked() && !o.failed &&
          rd->return_code() == wire::SesReturnCode::kOk &&
          rd->read_req_message_id() == static_cast<uint16_t>(o.message_id + packet) &&
          rd->payload_length() == s.len && rd->message_offset() == 0) {
        const size_t have = std::min<size_t>(d.payload.size(), s.len);
        if (o.rdv != 0) [[unlikely]] {  // a rendezvous READ: into its receive, what fits
          rdv_place(o, uint64_t{packet} * hot_.payload_bytes, d.payload.first(have));
          p.ini.results_held = true;  // the source holds this answer until we clear it
        } else if (have > 0) {
          std::memcpy(o.dst + uint64_t{packet} * hot_.payload_bytes, d.payload.data(), have);
        }
        data_sent = s.sent;
        ack_psn(p, trig, false, now);
        ++counters_.rx_read_data;
        placed = true;
      } else if (o.op == Opcode::kAtomic && o.dst != nullptr && !s.acked() && !o.failed &&
                 rd->return_code() == wire::SesReturnCode::kOk &&
                 rd->read_req_message_id() == o.message_id && rd->payload_length() == o.length &&
                 d.payload.size() == o.length) {
        // §4.5.1: a fetching atomic's old values (its PSN is acknowledged by this answer).
        std::memcpy(o.dst, d.payload.data(), d.payload.size());
        ack_psn(p, trig, false, now);
        p.ini.results_held = true;  // until our clear PSN passes it (tx_initiator)
        placed = true;
      }
    }
    if (!placed) ++rare().rx_stale_read_data;
  } else if (const wire::SesResponse* rsp = d.ses_as<wire::SesResponse>(); rsp != nullptr) {
    const auto rc = rsp->return_code();
    if (trig_in_window && rc != wire::SesReturnCode::kOk && rc != wire::SesReturnCode::kNull) {
      const Slot& s = p.ini.slots[trig];
      Op& o = p.ini.ops[s.op];
      const auto mid =
          static_cast<uint16_t>(o.message_id + (o.op == Opcode::kRead ? trig - o.first_psn : 0));
      if (!s.acked() && mid == rsp->message_id()) {
        if (!o.failed) {
          o.failed = true;
          o.status = status_for(rc);
          o.rc = static_cast<uint8_t>(rc);
        }
        // A refused rendezvous send: the target will not read its source; a refused CTS:
        // no push will come.
        if (is_rdv_send(o)) rdv_release(o);
        if (is_cts(o)) cts_drop(o);
        // The refusal is the acknowledgement of its PSN: the target leaves it out of CACK and
        // SACK until our clear PSN passes it (Pdc::Target::gtd).
        ack_psn(p, trig, false, now);
      }
    }
  }
  return data_sent;
}

// RFC 8985 §6.2 step 2: a PSN sent once and newly acknowledged below the highest PSN
// acknowledged before arrived out of order.
[[gnu::always_inline]] inline void note_reordering(pds::Pdc& p, const pds::Slot& s, uint32_t psn) {
  if (!s.acked() && !s.retransmitted() && psn_before(psn, p.ini.rack_highest)) {
    p.ini.reordering_seen = true;
  }
}

// The PSNs an ACK covers (CACK and SACK) are acknowledged, and RACK learns the newest delivered
// packet. `marked`: §3.7 `m` echoes CE on the trigger alone. The target ACKs at once on a CE
// mark and keeps the marked packet as the trigger, so every other PSN this ACK covers arrived
// unmarked: the path selector hears about each newly acknowledged packet's EV.
[[gnu::always_inline]] inline void UetEndpoint::ack_covered(Pdc& p, uint32_t cack, uint32_t trig,
                                                            bool marked, const wire::PdsAckCc* cc,
                                                            Time data_sent, Time retx_sent,
                                                            Time now) {
  // The send time of the newest packet (sent once: Karn) this ACK covers: holes sent well
  // before it are lost (a time guard against the reordering that spraying causes). In
  // recovery with no reordering seen, a resend the RETX echo names counts too: in a tail it
  // is the only later packet that can show an earlier one lost.
  Time newest_sent = p.ini.loss_repaired && !p.ini.reordering_seen ? retx_sent : 0;
  for (uint32_t psn = p.ini.base_psn; psn_before(psn, cack + 1); ++psn) {
    const Slot& s = p.ini.slots[psn];
    if (!s.retransmitted()) newest_sent = std::max(newest_sent, s.sent);
    note_reordering(p, s, psn);
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
      if (!psn_before(psn, p.ini.next_psn)) unsent = true;
      if (psn_before(psn, p.ini.base_psn) || !psn_before(psn, p.ini.next_psn)) continue;
      const Slot& s = p.ini.slots[psn];
      if (!s.retransmitted()) newest_sent = std::max(newest_sent, s.sent);
      note_reordering(p, s, psn);
      covered_psn(p, psn, marked && psn == trig, data_sent, now);
      if (psn_before(highest, psn)) highest = psn;
    }
    if (unsent) [[unlikely]] ++rare().rx_sack_unsent;
  }
  // RACK (RFC 8985 §6.2): remember the newest delivered packet's send time and round trip.
  if (newest_sent > 0 && newest_sent >= p.ini.rack_sent) {
    p.ini.rack_sent = newest_sent;
    p.ini.rack_rtt = now - newest_sent;
  }
  if (psn_before(p.ini.rack_highest, highest)) p.ini.rack_highest = highest;
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
      nscc_rtt = std::max(rtt - held, std::min(rtt, hot_.base_rtt));
    }
    if (const uint32_t delta = (cc->rcvd_bytes() - p.ini.peer_rcvd_bytes) & 0xFFFFFF;
        delta < 0x800000) {
      newly_rcvd = delta;
      p.ini.peer_rcvd_bytes = cc->rcvd_bytes();
    }
  }
  if (p.ini.bytes_in_flight < in_flight_before) {
    p.ini.nscc.on_ack(in_flight_before - p.ini.bytes_in_flight, marked, nscc_rtt, now);
  }
  if (newly_rcvd != 0 && cc->rcv_cwnd_pend() != 0) {
    p.ini.nscc.on_receiver_pending(newly_rcvd, cc->rcv_cwnd_pend());
  }
}

// hold_probe_after: the target answered; if operations wait on it with nothing in flight,
// ask again whether it lives after hold_probe_after.
void UetEndpoint::note_held(Pdc& p, Time now) {
  if (hot_.hold_probe_after == 0 || p.closing) return;
  if (p.ini.op_head == p.ini.op_tail || psn_before(p.ini.base_psn, p.ini.next_psn)) return;
  p.ini.req_acks = 0;
  p.idle_deadline = now + hot_.hold_probe_after;
  deadline_ = std::min(deadline_, p.idle_deadline);
}

// RCCC: credit arrived for an initiator PDC (CREDIT, or an ACK_CC with cc_type CREDIT). The
// first grant ends the speculation; the next tx() sends against it.
void UetEndpoint::on_credit(Pdc& p, uint64_t bytes) {
  counters_.credit_received += bytes;
  if (p.ini.speculating) {
    p.ini.speculating = false;
    p.ini.rccc.stop_speculating();
  }
  p.ini.rccc.on_credit(bytes);
  p.ini.credit_blocked = false;
  p.ini.credit_deadline = kNever;
}

// RCCC: initiator PDC `p` has data to send and no credit. The first time: count it, arm the
// re-ask timer (an RTO without credit), and ask at once if the receiver was last told that
// nothing more is wanted.
void UetEndpoint::credit_blocked(Pdc& p, Time now) {
  if (p.ini.credit_blocked) return;
  p.ini.credit_blocked = true;
  ++counters_.credit_stalls;
  p.ini.credit_deadline = now + p.ini.rto;
  deadline_ = std::min(deadline_, p.ini.credit_deadline);
  if (p.ini.last_target == 0 && p.established) p.ini.credit_req_pending = true;
}

// §3.10 sender reactions.
void UetEndpoint::rx_nack(const wire::Decoded& d, Time now) {
  const wire::PdsNack& h = *d.pds_as<wire::PdsNack>();
  ++counters_.rx_nacks;
  if (h.nt()) {  // §3.10 `nt`: names a RUDI packet ID; our RUDI targets answer with RUDI_RESP
    ++rare().rx_rudi_stale;
    return;
  }
  Pdc* p = pdc(h.dpdcid());
  if (p == nullptr || p->role != Role::kInitiator || p->peer_ip4 != d.ipv4->src()) {
    // A stateless NACK names our PDC in DPDCID too (we set it from our SPDCID).
    ++rare().rx_unknown_pdc;
    return;
  }
  if (p->closing) return;  // nothing outstanding; only the CLOSE's ACK matters
  const uint32_t psn = h.nack_psn();
  const bool in_window = !psn_before(psn, p->ini.base_psn) && psn_before(psn, p->ini.next_psn);
  switch (h.nack_code()) {
    case wire::NackCode::kTrimmed:
    case wire::NackCode::kRcvrInferLoss:
    case wire::NackCode::kPktNotRcvd:
      // The packet was cut or lost on its path: tell the path selector (uet-htsim reports
      // PATH_NACK here). A last-hop trim or a window overrun says nothing about the path.
      if (in_window) {
        const Slot& s = p->ini.slots[psn];
        if (s.in_flight() && !s.acked()) p->ini.sel.on_nack(s.ev, now);
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
        p->ini.nscc.on_nack(hot_.payload_bytes, now);
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
  Slot& s = p.ini.slots[psn];
  Op& o = p.ini.ops[s.op];
  if (!s.outstanding()) return;
  if (o.abandoned) {
    mark_lost(p, psn);  // goes again, with `ie`
  } else if (rnr_count(p, psn) >= config_.rnr_retries &&
             o.unacked == o.packets + (is_rdv_send(o) || cts_holds(o) ? 1 : 0)) {
    // Nothing of the message was accepted, so the target holds no state for it (a rendezvous
    // send's source and a CTS's hold count as one more unacknowledged each).
    o.abandoned = true;
    o.failed = true;
    o.status = code == wire::NackCode::kNoSesMsgAvail ? OpStatus::kNoResources
                                                      : OpStatus::kReceiverNotReady;
    if (is_rdv_send(o)) rdv_release(o);  // never to be read
    if (is_cts(o)) cts_drop(o);          // never to be pushed
    mark_lost(p, psn);
  } else {
    count_rnr(p, psn);
    s.set(Slot::kRnrWait);
  }
}

// The RNR NACKs `psn` received: counted beside the send window (Pdc::Initiator::rnr), as
// most PDCs never see one.
uint8_t UetEndpoint::rnr_count(const Pdc& p, uint32_t psn) const noexcept {
  return p.ini.slots[psn].rnr_counted() ? p.ini.rnr[psn & mpr_mask_] : 0;
}

void UetEndpoint::count_rnr(Pdc& p, uint32_t psn) {
  if (p.ini.rnr == nullptr) p.ini.rnr = std::make_unique<uint8_t[]>(hot_.mpr);
  Slot& s = p.ini.slots[psn];
  uint8_t& n = p.ini.rnr[psn & mpr_mask_];
  if (!s.rnr_counted()) n = 0;  // a PSN before it in this position left its count
  s.set(Slot::kRnrCounted);
  if (n < 255) ++n;
}

void UetEndpoint::fail_pdc(Pdc& p, OpStatus why) {
  for (uint32_t i = p.ini.op_head; i != p.ini.op_tail; ++i) {
    Op& o = p.ini.ops[i];
    if ((o.rdv != 0 && !is_rdv_send(o)) || o.push != 0) {
      // A rendezvous READ or CTS fails its receive, a pushed WRITE its send (which, handed
      // over, completes nothing itself).
      if (o.push != 0 && o.op != Opcode::kWrite) continue;
      if (!o.failed) {
        o.failed = true;
        o.status = why;
      }
      if (o.push != 0) {
        rdv_pushed(o);
      } else {
        rdv_read_done(o);
      }
      continue;
    }
    if (o.rdv != 0) rdv_release(o);
    if (o.defer != 0) {
      if (o.op == Opcode::kRecv) continue;  // an RTR: the target's deferral timer follows
      defer_free(o.defer - 1);
    }
    Completion c = internal::op_completion(o);
    c.status = o.failed ? o.status : why;
    c.bytes = 0;
    completions_.push_back(c);
  }
  free_pdc(p.id);
}

}  // namespace uet
