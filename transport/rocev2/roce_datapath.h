// Per-packet helpers the RoCEv2 data-path files share, inline so that no call crosses files.
#pragma once

// Only transport/rocev2/'s target and its unit tests define the macro.
#ifndef UET_PRIVATE_TRANSPORT_ROCEV2
#error "transport/rocev2/roce_datapath.h is private to transport/rocev2"
#endif

#include <algorithm>
#include <cstdint>

#include "transport/rocev2/psn.h"
#include "transport/rocev2/roce_endpoint.h"

namespace uet::roce {

inline constexpr uint8_t kEct0 = 2;
inline constexpr uint8_t kCe = 3;
// spec/rocev2.md §3.2: rxe always sends unlimited credits.
inline constexpr uint8_t kCreditsUnlimited = ROCEV2_AETH_CREDITS_UNLIMITED;
inline constexpr uint32_t kFrameOverhead = 24;  // preamble, inter-frame gap and FCS, for the pacer

// The payload length of a data packet; with the payload carried by length, only its size is
// known (pad and ICRC elided too).
inline uint64_t payload_len(const wire::Decoded& d) {
  uint64_t len = d.payload.size();
  if (d.elided > 0) {
    const uint64_t tail = d.bth->pad_cnt() + wire::kIcrcSize;
    len = d.elided >= tail ? len + d.elided - tail : 0;
  }
  return len;
}

}  // namespace uet::roce

namespace uet {

// Notification point (NOTES.md §2, DCQCN): a CNP for CE-marked data, at most one per interval per
// QP, whatever the PSN: the mark is about the path, not the packet.
inline void RoceEndpoint::note_ce(Qp& q, const wire::Decoded& d, Time now) {
  if (d.ecn != roce::kCe) return;
  ++counters_.rx_ce;
  if (!q.cnp_pending && (!q.cnp_sent || now - q.last_cnp >= config_.cnp_interval)) {
    q.cnp_pending = true;
    q.cnp_sent = true;
    q.last_cnp = now;
  }
}

// Requests to send: the QP is up, the cursor has a WR, and the PSN space is not exhausted.
inline bool RoceEndpoint::has_data(const Qp& q) const noexcept {
  return q.state == QpState::kRts && q.send_write != q.write_tail &&
         static_cast<uint32_t>(roce::psn_diff(q.next_psn, q.una)) < config_.max_outstanding_psns;
}

// The local ACK timer (NOTES.md §2: 4.096 µs · 2^t), from `now`.
inline void RoceEndpoint::arm_rto(Qp& q, Time now) {
  if (ack_timeout_ == 0) return;  // t = 0: no timer
  q.rto_deadline = now + ack_timeout_;
  deadline_ = std::min(deadline_, q.rto_deadline);
}

}  // namespace uet
