// The RoCEv2 engine for one endpoint (one RNIC port): reliable-connected (RC) queue pairs
// carrying RDMA WRITE, sans-IO, behind the same Endpoint API as UET (transport/api.h).
//
// What it does (spec/rocev2.md for the wire; RC as rdma_rxe and RNICs run it, research notes
// rocev2-wireshark.md §2; DCQCN §3):
// - QPs are connected out of band (connect_qp: peer, QP numbers, start PSNs), as an
//   application does with rdma_cm or a socket exchange before ibv_modify_qp to RTS.
// - Requester: a write becomes RDMA WRITE FIRST (with RETH) / MIDDLE / LAST, or ONLY (with
//   RETH), at the path MTU; 24-bit PSNs; AckReq on the last packet of a message and every
//   `ack_req_every` packets; go-back-N on a NAK (PSN sequence error) and on the ACK timeout
//   (4.096 µs · 2^t) with retry_cnt; completion when an ACK covers the message's last PSN.
//   No window but the PSN space: the requester sends as fast as DCQCN and the link allow.
//   Retry counter as rxe: a NAK sequence error or a timeout consumes one retry; any ACK, or a
//   NAK that acknowledges new PSNs, restores it. A NAK sequence error naming the PSN a go-back-N
//   under way already resends (no ACK and no progress since it started) restarts nothing and
//   consumes no retry, as rxe's started_retry: it answers packets of an older round
//   (duplicated NAKs, reordered rounds). A NAK naming a newer PSN acknowledges what came
//   before it, restores the retry budget like an ACK and starts a new round: a loss inside the
//   round is recovered at once, not after the ACK timeout (rxe waits for a completion).
//   [choice] An ACK beyond the go-back-N cursor (the responder re-ACKs duplicates with its
//   latest PSN) moves the cursor forward, so a resend after lost ACKs stops as soon as the
//   responder says it has the rest.
// - Responder: one expected PSN per QP; in order: placed and ACKed (coalesced); ahead: one NAK
//   per gap, the rest dropped; behind: a duplicate, re-ACKed and never placed again.
// - Every frame carries the ICRC (spec/rocev2.md §6), UDP checksum 0, UDP destination port
//   4791 and one fixed UDP source port per QP (single path, spec/rocev2.md §1).
// - Congestion: the notification point answers CE-marked data with a CNP at most once per
//   cnp_interval per QP; the reaction point is DCQCN (dcqcn.h), enforced by pacing in tx().
//
// Addressing and look-ups:
// - Local QPN = qpn_base + index into a table of max_qps QPs fixed at creation: a received
//   BTH's DestQP is an array index, with no hash look-up per packet.
// - One QP per peer. post_write(wr) sends on the QP connected to wr.peer (a control-path map
//   from peer address to QP, read once per post, never per packet).
// - WriteRequest::remote_offset travels as the RETH VA, and a VA is the byte offset within
//   the region the R_Key names: registrations behave like zero-based memory regions
//   (ibv_reg_mr with IBV_ACCESS_ZERO_BASED). R_Key = region index + 1.
//
// Completion statuses (IB work-completion status → OpStatus):
//   IB_WC_SUCCESS → kSuccess; IB_WC_RETRY_EXC_ERR → kRetriesExhausted;
//   IB_WC_REM_ACCESS_ERR (NAK remote access error) → kRemoteAccessError;
//   IB_WC_REM_INV_REQ_ERR, IB_WC_REM_OP_ERR (other NAKs) and IB_WC_WR_FLUSH_ERR (every write
//   behind the failed one, and every write posted while the QP is in the error state) →
//   kPdcClosed. An error moves the QP to the error state; connect_qp() again revives it.
//
// Not implemented (counted as rx_unsupported when received): SEND, RDMA READ, atomics,
// WRITE with immediate (all need receive queues or responder resources), UC/UD; hence no RNR.
// A frame too small for a whole packet (MTU + 74 bytes) carries the headers only, with the
// payload, pad and ICRC by length (Frame::wire_len), as the simulator does at scale: such
// frames have no ICRC and place no bytes, only lengths.
//
// Ownership and threads: one RoceEndpoint per RNIC port, driven by one thread (its host's).
// Tables are fixed at creation (QPs: max_qps; completion ring: cq_entries) or at connect_qp
// (a QP's write ring: max_writes). A peer's frames never grow anything: state per QP is a
// handful of PSNs and flags, and frames that do not fit the state machine are dropped or
// NAKed and counted (RoceCounters).
//
// Data path: rx()/tx()/on_timer() never allocate and make no virtual call per packet.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/api.h"
#include "cc/dcqcn.h"
#include "transport/wire/builder.h"
#include "transport/wire/decode.h"

namespace uet {

struct RoceConfig {
  uint32_t local_ip4 = 0;
  wire::MacAddr local_mac{};
  // Peer MACs are resolved once per QP; the default maps 10.0.0.1 + i to 02:00:i (the
  // simulator's addressing).
  wire::MacAddr (*resolve_mac)(uint32_t ip4) = nullptr;

  uint32_t mtu = 4096;        // path MTU (payload bytes per packet): 256/512/1024/2048/4096;
                              // both ends of a QP must use the same (IB: FIRST and MIDDLE
                              // packets carry exactly one PMTU)
  uint32_t max_qps = 64;      // QP table size, 1..65536
  uint32_t qpn_base = 0x100;  // local QPNs: qpn_base .. qpn_base + max_qps - 1 (>= 2)
  uint32_t max_writes = 256;  // posted, not yet completed writes per QP (SQ depth), 1..65536
  // Sent, unacknowledged packets per QP, 1..2^23-1. RC has no window for writes besides the
  // PSN space (2^23 - 1, the default): the rate (DCQCN) is the only brake, as on RNICs.
  uint32_t max_outstanding_psns = 0x7F'FFFF;
  uint32_t cq_entries = 65536;   // completion ring: posted writes not yet polled, 1..2^24
  uint8_t ack_timeout_exp = 14;  // local ACK timeout 4.096 µs · 2^t, 0..31; 0 = no timer
  uint8_t retry_cnt = 7;         // 0..7; 7 = retry for ever (as rxe)
  uint32_t ack_req_every = 64;   // AckReq at least every N packets (rxe: 64), 1..2^23
  uint32_t ack_every = 0;        // the responder also ACKs after N in-order packets without
                                 // AckReq; 0 = only on AckReq (as rxe), 0..2^23
  uint8_t dscp_data = 26;        // requests, ACKs and NAKs: the QP's traffic class
  uint8_t dscp_cnp = 48;         // CNPs (NVIDIA's default), sent in Priority::kControl
  bool ect = true;               // data ECN-capable (ECT(0))
  Time cnp_interval = 50 * kMicrosecond;  // at most one CNP per QP per interval, 0..10 ms
  DcqcnConfig dcqcn;
  uint64_t seed = 1;  // salts the UDP source-port hash (0: the QPN alone)

  // The local ACK timeout in picoseconds, 0 for none.
  Time ack_timeout() const noexcept {
    return ack_timeout_exp == 0 ? 0 : (Time{4096} * kNanosecond) << ack_timeout_exp;
  }
  // Checks every field; the message names the field and its valid range.
  absl::Status validate() const;
};

// Every reason a frame was dropped or answered specially, and every event; always on.
struct RoceCounters {
  // Requester.
  uint64_t tx_data = 0;       // data packets sent for the first time
  uint64_t tx_retx = 0;       // data packets sent again (go-back-N)
  uint64_t bytes_resent = 0;  // payload bytes of tx_retx
  uint64_t go_back_n = 0;     // restarts from a PSN: NAK sequence error or ACK timeout
  uint64_t timeouts = 0;      // ACK timer expiries with packets outstanding
  uint64_t rx_acks = 0;
  uint64_t rx_nak_seq = 0;     // NAK PSN sequence error
  // ... of them, while a go-back-N was under way: nothing restarted (rxe started_retry)
  uint64_t rx_nak_seq_ignored = 0;
  uint64_t rx_nak_fatal = 0;   // NAK remote access / invalid request / operational error
  uint64_t rx_rnr_naks = 0;    // RNR NAK: we post no SENDs, so ignored
  uint64_t rx_stale_acks = 0;  // ACK/NAK for PSNs not outstanding, or reserved syndrome
  uint64_t rx_cnps = 0;
  uint64_t pacing_waits = 0;  // tx() found data held back by the DCQCN pacer
  // Responder.
  uint64_t rx_data = 0;             // write packets for a connected QP, any PSN
  uint64_t rx_placed = 0;           // accepted in order and placed
  uint64_t rx_duplicates = 0;       // PSN behind the expected one: re-ACKed, not placed
  uint64_t rx_out_of_order = 0;     // PSN ahead of the expected one: dropped (one NAK per gap)
  uint64_t rx_bad_rkey = 0;         // → NAK remote access error
  uint64_t rx_bad_range = 0;        // → NAK remote access error
  uint64_t rx_invalid_request = 0;  // opcode sequence or length error → NAK invalid request
  uint64_t rx_ce = 0;               // CE-marked data packets
  uint64_t tx_acks = 0, tx_naks = 0, tx_cnps = 0;
  // Either side.
  uint64_t rx_malformed = 0;    // failed decode_frame(); `wire` says why
  uint64_t rx_bad_icrc = 0;     // the ICRC did not match (also in wire[kBadIcrc])
  uint64_t rx_not_ours = 0;     // not RoCEv2 over IPv4 to our address
  uint64_t rx_unknown_qp = 0;   // DestQP not a connected QP, or not from its peer
  uint64_t rx_qp_error = 0;     // for a QP in the error state
  uint64_t rx_unsupported = 0;  // opcodes this engine does not implement
  uint64_t tx_no_room = 0;      // the host's frame was too small for the headers
  wire::WireCounters wire;
};

enum class QpState : uint8_t { kReset, kRts, kError };

// A QP as tools and tests see it.
struct QpInfo {
  QpState state = QpState::kReset;
  uint32_t peer_ip4 = 0;
  uint32_t remote_qpn = 0;
  uint16_t udp_sport = 0;
  uint32_t next_psn = 0;  // requester: the next PSN to send (behind max_psn after go-back-N)
  uint32_t max_psn = 0;   // requester: one past the highest PSN ever sent
  uint32_t una = 0;       // requester: the oldest unacknowledged PSN
  uint32_t epsn = 0;      // responder: the expected PSN
  uint32_t msn = 0;       // responder: messages completed
  uint32_t writes_outstanding = 0;
  double rate_gbps = 0;  // DCQCN current rate
  double alpha = 0;
};

class RoceEndpoint final : public Endpoint {
 public:
  static absl::StatusOr<std::unique_ptr<RoceEndpoint>> create(const RoceConfig& config);

  // Control path: connects local QP `local_qpn` to `remote_qpn` at `peer_ip4` and moves it to
  // RTS. `sq_psn` is the first PSN this side sends; `rq_psn` the first it expects (the peer's
  // sq_psn). A QP in the error state may be connected again; one QP per peer.
  absl::Status connect_qp(uint32_t peer_ip4, uint32_t local_qpn, uint32_t remote_qpn,
                          uint32_t sq_psn, uint32_t rq_psn);
  absl::StatusOr<QpInfo> qp_info(uint32_t local_qpn) const;
  uint16_t udp_sport(uint32_t local_qpn) const noexcept;

  // Endpoint.
  absl::StatusOr<uint32_t> register_memory(uint8_t* base, uint64_t length) override;
  absl::Status post_write(const WriteRequest& wr) override;
  size_t poll_completions(std::span<Completion> out) override;
  EndpointStats stats() const override;

  // Transport.
  void rx(std::span<Frame* const> frames, Time now) override;
  size_t tx(std::span<Frame* const> out, Time now) override;
  Time next_deadline() const override;
  void on_timer(Time now) override;

  const RoceCounters& counters() const noexcept { return counters_; }
  const RoceConfig& config() const noexcept { return config_; }

 private:
  explicit RoceEndpoint(const RoceConfig& config);

  // One posted write, as the requester tracks it (a send WQE).
  struct Write {
    WriteRequest wr;
    uint32_t first_psn = 0;  // assigned when its first packet is first sent
    uint32_t packets = 0;
  };

  struct Qp {
    QpState state = QpState::kReset;
    uint32_t local_qpn = 0;
    uint32_t remote_qpn = 0;
    uint32_t peer_ip4 = 0;
    wire::MacAddr peer_mac{};
    uint16_t sport = 0;
    uint32_t active_index = 0;  // position in active_

    // Requester. Writes in ring slots [write_head, write_tail): completed below write_head;
    // [write_head, write_started) have PSNs; the go-back-N cursor is (send_write, send_packet)
    // at PSN next_psn. Invariant: una <= next_psn <= max_psn (24-bit order).
    std::vector<Write> writes;  // max_writes, sized at the first connect; slot = index % max_writes
    uint64_t write_head = 0, write_started = 0, write_tail = 0;
    uint64_t send_write = 0;
    uint32_t send_packet = 0;
    uint32_t next_psn = 0, max_psn = 0, una = 0;
    uint32_t since_ack_req = 0;
    uint8_t retry_left = 0;
    bool retry_started = false;  // a go-back-N runs: NAKs for its PSN start no other
    Time rto_deadline = kNever;
    Time next_send = 0;  // pacer: no data before this while DCQCN limits the rate
    Dcqcn cc;

    // Responder.
    uint32_t epsn = 0;
    uint32_t msn = 0;
    bool nak_latch = false;   // a sequence-error NAK was sent for the current gap
    bool in_message = false;  // between a FIRST and its LAST
    uint32_t region = 0;      // of the message being placed
    uint64_t va = 0;          // where its next byte goes
    uint64_t remaining = 0;   // bytes of it still to come
    uint32_t unacked = 0;
    bool ack_pending = false;
    bool nak_pending = false;
    uint8_t nak_code = 0;  // wire::AethNak
    uint32_t nak_psn = 0;

    // Notification point.
    bool cnp_pending = false;
    bool cnp_sent = false;
    Time last_cnp = 0;
  };

  // Data path (roce_datapath.cc).
  void rx_one(const Frame& f, Time now);
  void rx_write(Qp& q, const wire::Decoded& d, Time now);
  void rx_ack(Qp& q, const wire::Decoded& d, Time now);
  void rx_cnp(Qp& q, Time now);
  void responder_fatal(Qp& q, uint8_t nak_code, uint32_t psn);
  bool tx_one(Qp& q, Frame& f, Time now);
  bool build_data(Qp& q, Frame& f, Time now);
  bool build_ack(Qp& q, Frame& f, wire::AethType type, uint8_t value, uint32_t psn);
  bool build_cnp(Qp& q, Frame& f);
  wire::Encap encap_for(const Qp& q, uint8_t dscp, uint8_t ecn) const;
  bool has_data(const Qp& q) const noexcept;
  void complete_through(Qp& q, uint32_t psn);
  void seek(Qp& q, uint32_t psn);
  bool go_back(Qp& q, uint32_t psn, Time now);
  void arm_rto(Qp& q, Time now);
  void fail_qp(Qp& q, OpStatus first);
  void complete(uint64_t wr_id, OpStatus status, uint64_t bytes);

  RoceConfig config_;
  Time ack_timeout_ = 0;
  std::vector<Qp> qps_;           // index = QPN - qpn_base
  std::vector<uint32_t> active_;  // connected QPs (RTS or error), in no particular order
  uint32_t rr_ = 0;               // round-robin position in active_ for tx()
  Time deadline_ = kNever;        // earliest timer of any QP (may be early, never late)
  absl::flat_hash_map<uint32_t, uint32_t> qp_by_peer_;  // control path only
  struct Region {
    uint8_t* base;
    uint64_t length;
  };
  std::vector<Region> regions_;  // R_Key = index + 1
  // Completion ring; post_write reserves a slot, so pushing never overflows.
  std::vector<Completion> cq_;
  uint64_t cq_head_ = 0, cq_tail_ = 0;
  uint64_t cq_reserved_ = 0;  // posted writes whose completion is not yet polled
  RoceCounters counters_;
};

}  // namespace uet
