// RC go-back-N (rxe, NOTES.md §2): the resend cursor, the retry budget, the ACK timer.
#include <algorithm>

#include "transport/rocev2/roce_datapath.h"

namespace uet {

using roce::psn_diff;

// Moves the go-back-N cursor to `psn` (una <= psn <= max_psn): the write and packet it
// belongs to, found by walking the writes that have PSNs.
void RoceEndpoint::seek(Qp& q, uint32_t psn) {
  q.next_psn = psn;
  for (uint64_t i = q.write_head; i != q.write_started; ++i) {
    const Write& w = q.writes[i];
    const int32_t k = psn_diff(psn, w.first_psn);
    if (k >= 0 && static_cast<uint32_t>(k) < w.packets) {
      q.send_write = i;
      q.send_packet = static_cast<uint32_t>(k);
      return;
    }
  }
  q.send_write = q.write_started;  // psn == max_psn at a message boundary
  q.send_packet = 0;
}

// Go-back-N (NOTES.md §2): resend everything from `psn`, if the retry counter allows.
bool RoceEndpoint::go_back(Qp& q, uint32_t psn, Time now) {
  if (config_.retry_cnt != 7) {
    if (q.retry_left == 0) {
      fail_qp(q, OpStatus::kRetriesExhausted);
      return false;
    }
    --q.retry_left;
  }
  ++counters_.go_back_n;
  q.retry_started = true;
  seek(q, psn);
  q.rto_deadline = kNever;
  arm_rto(q, now);
  return true;
}

// The QP enters the error state: the oldest WR ends with `first`, every other one is
// flushed (kFlushed, IB_WC_WR_FLUSH_ERR), and so is a receive buffer a SEND was filling.
void RoceEndpoint::fail_qp(Qp& q, OpStatus first) {
  for (uint64_t i = q.write_head; i != q.write_tail; ++i) {
    const Write& w = q.writes[i];
    complete(w, i == q.write_head ? first : OpStatus::kFlushed);
  }
  if (q.recv_claimed) {
    q.recv_claimed = false;
    complete_recv(q.recv.wr_id, q.peer_ip4, OpStatus::kFlushed, q.recv_placed, false, 0);
  }
  q.reads_in_flight = 0;
  q.rd_head = q.rd_tail;
  q.rnr_wait = false;
  q.write_head = q.write_started = q.write_tail;
  q.send_write = q.write_tail;
  q.send_packet = 0;
  note_drained(q);
  q.state = QpState::kError;
  q.rto_deadline = kNever;
  q.ack_pending = false;
  q.nak_pending = false;
  q.cnp_pending = false;
}

Time RoceEndpoint::next_deadline() const { return deadline_; }

void RoceEndpoint::on_timer(Time now) {
  Time next = kNever;
  for (Qp* const qp : active_) {
    Qp& q = *qp;
    // ACK timeout (NOTES.md §2): resend from the oldest unacknowledged PSN.
    if (q.rto_deadline <= now) {
      mark_ready(q);
      q.rto_deadline = kNever;
      if (q.frame_refused && q.state == QpState::kRts) [[unlikely]] {
        q.frame_refused = false;
        fail_qp(q, OpStatus::kFrameTooSmall);
      } else if (q.state == QpState::kRts && q.una != q.max_psn) {
        ++counters_.timeouts;
        go_back(q, q.una, now);
      }
    }
    q.cc.on_timer(now);
    next = std::min({next, q.rto_deadline, q.cc.next_event()});
    if (q.rnr_wait && q.state == QpState::kRts && q.rnr_until > now)
      next = std::min(next, q.rnr_until);
    // A pacing deadline already reached is not a timer: the QP is ready, and the host pulls
    // frames when its link is free.
    if (q.cc.limited() && q.next_send > now && has_data(q)) next = std::min(next, q.next_send);
  }
  deadline_ = next;
}

}  // namespace uet
