// The RoCEv2 engine for one endpoint (one RNIC port): reliable-connected (RC) queue pairs
// carrying RDMA WRITE (with or without immediate), SEND (with or without immediate), RDMA
// READ and the 64-bit atomics (FETCH_ADD, CMP_SWAP), sans-IO, behind the same Endpoint API as
// UET (transport/api.h).
//
// What it does (spec/rocev2.md for the wire; RC as rdma_rxe and RNICs run it, research notes
// rocev2-wireshark.md §2; DCQCN §3):
// - QPs are connected out of band (connect_qp: peer, QP numbers, start PSNs, channel), as an
//   application does with rdma_cm or a socket exchange before ibv_modify_qp to RTS.
// - Requester: one send queue per QP (max_send_wr WQEs) holding writes, sends and reads in
//   posting order. A write becomes RDMA WRITE FIRST (with RETH) / MIDDLE / LAST, or ONLY (with
//   RETH), at the path MTU, the last one _WITH_IMMEDIATE when post_write_with_imm; a send
//   becomes SEND FIRST / MIDDLE / LAST or ONLY (0 bytes: one ONLY), the last one
//   _WITH_IMMEDIATE when SendRequest::has_imm; a read is one RDMA READ REQUEST (RETH) that
//   consumes one PSN per response packet (IB: the responses carry the request's PSN range).
//   24-bit PSNs; AckReq on the last packet of a message and every `ack_req_every` packets;
//   go-back-N on a NAK (PSN sequence error) and on the ACK timeout (4.096 µs · 2^t) with
//   retry_cnt; a write or send completes when an ACK (or a later read response) covers its
//   last PSN, a read when its last response is placed.
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
// - RDMA READ (requester): responses are accepted in PSN order only (at una) and placed at
//   ReadRequest::local + (PSN - first PSN) · MTU. A response or ACK beyond a read whose
//   responses are missing (rxe check_psn: COMPST_ERROR_RETRY) starts a go-back-N from the first
//   missing response PSN: the READ is re-issued from that PSN with the RETH advanced (VA +
//   k · MTU, DMA length − k · MTU), as IB does; duplicate responses (behind una) are dropped.
//   At most max_rd_atomic reads are outstanding per QP (IB max_rd_atomic): a read waits at the
//   head of the cursor, and everything behind it, until one completes.
// - Atomics (requester, spec/rocev2.md §3.3, §3.4): post_atomic maps AtomicOp::kSum on one
//   64-bit word to FETCH_ADD and kCswap to CMP_SWAP (operands copied into the WQE at post
//   time, as verbs do; AtomicETH carries them big-endian). An atomic is one request packet on
//   one PSN, counted with the reads against max_rd_atomic and handled like a READ: only its
//   ATOMIC ACKNOWLEDGE (AETH + AtomicAckETH) completes it (Opcode::kAtomic, 8 bytes, the
//   original value stored host-order at AtomicRequest::result); an ACK beyond it means that
//   response was lost, and go-back-N sends the request again (rxe COMPST_ERROR_RETRY).
// - RNR (requester): an RNR NAK (AETH type 1, timer code in the value) acknowledges what came
//   before its PSN; the requester waits the coded time (spec/rocev2.md §3.2 table) and resends
//   from that PSN, at most rnr_retry times per stall (7 = for ever, as IB); the retry budget is
//   restored by any progress. Exhausted: the WR completes kReceiverNotReady (IB_WC_RNR_RETRY_
//   EXC_ERR) and the QP moves to the error state.
// - Responder: one expected PSN per QP; in order: executed and ACKed (coalesced); ahead: one
//   NAK per gap, the rest dropped; behind: a duplicate, re-ACKed and never placed again (a
//   duplicate READ request is executed again, from its own PSN and RETH: reads are
//   idempotent, and responses queued behind it are dropped, since go-back-N re-requests them).
//   - SEND: the FIRST or ONLY packet claims the next buffer of the endpoint's shared receive
//     queue (post_recv, FIFO, max_recvs); later packets land at their offset; the LAST
//     completes Opcode::kRecv with the peer, bytes and the immediate data. No buffer posted:
//     RNR NAK with min_rnr_timer, nothing executed, the PSN not advanced (IB C9-?? / rxe
//     RESPST_ERR_RNR); later packets of that round are dropped silently (nak latch).
//   - A SEND longer than its buffer (IB "local length error", rxe RESPST_ERR_LENGTH): the
//     buffer completes kLengthError with the bytes already placed by earlier packets (IB does
//     not roll them back), the responder NAKs INVALID REQUEST and its QP enters the error
//     state; the requester completes the send kRemoteInvalidRequest (IB_WC_REM_INV_REQ_ERR).
//   - WRITE with immediate: placed like a WRITE; the LAST/ONLY_WITH_IMMEDIATE packet consumes
//     a receive buffer (RNR NAK when none) and completes kRecv with has_imm/imm and 0 bytes
//     (nothing is placed in the buffer).
//   - Atomic request (rxe check_rkey, execute, atomic_reply): R_Key and range checked (NAK
//     REMOTE ACCESS ERROR), the VA 8-byte aligned, in the wire and in memory (NAK INVALID
//     REQUEST: rxe RESPST_ERR_MISALIGNED_ATOMIC, class C); then executed once on the region's
//     host-order word, its original value saved in the QP's replay cache (the results of the
//     last max_rd_atomic atomics, keyed by their 64-bit PSN count) and answered with ATOMIC
//     ACKNOWLEDGE queued with the READ responses (responder resources), so responses keep PSN
//     order. A duplicate is never executed again: it is answered from the cache; one older
//     than the cache is dropped and counted (IB class D, as rxe duplicate_request) -- the
//     requester keeps at most max_rd_atomic outstanding, so it has completed it already.
//   - READ request: R_Key and range checked (NAK REMOTE ACCESS ERROR otherwise), then queued
//     (max_rd_atomic requests per QP; a request that finds the queue full recycles the oldest
//     entry, as rxe recycles its responder resources: the requester keeps at most that many
//     reads outstanding, so a full queue holds a replay of a read it already completed)
//     and answered with READ RESPONSE FIRST/MIDDLE/LAST (AETH on FIRST and LAST) or ONLY, one
//     PSN per packet. Responses go before any ACK or NAK of later PSNs, so the requester never
//     sees an ACK overtake a read's data.
// - Every frame carries the ICRC (spec/rocev2.md §6), UDP checksum 0, UDP destination port
//   4791 and one fixed UDP source port per QP (single path, spec/rocev2.md §1).
// - Congestion: the notification point answers CE-marked data (requests and read responses)
//   with a CNP at most once per cnp_interval per QP; the reaction point is DCQCN (dcqcn.h),
//   enforced by pacing in tx() (requests and read responses share the QP's pacer).
//
// Addressing and look-ups:
// - Local QPN = qpn_base + index into a table of up to max_qps QPs held in chunks of
//   kQpChunk: a received BTH's DestQP is an index (chunk, then slot), with no hash look-up
//   per packet. A QPN in range whose chunk was never allocated is a QP in the reset state.
// - One QP per (peer, channel): an application opens several connections to one peer, as
//   NCCL opens one per channel, and each QP has its own UDP source port, so they may take
//   different paths. post_write/post_read/post_send send on the QP connected for the request's
//   (peer, channel) (a control-path map from peer << 16 | channel to QP, read once per post,
//   never per packet). The responder finds a QP by DestQP alone.
// - WriteRequest/ReadRequest::remote_offset travels as the RETH VA, and a VA is the byte offset
//   within the region the R_Key names: registrations behave like zero-based memory regions
//   (ibv_reg_mr with IBV_ACCESS_ZERO_BASED). R_Key = region index + 1. A zero-length RETH
//   (WRITE with immediate of 0 bytes) is not checked against any region (IB).
//
// Completion statuses (IB work-completion status → OpStatus):
//   IB_WC_SUCCESS → kSuccess; IB_WC_RETRY_EXC_ERR → kRetriesExhausted;
//   IB_WC_RNR_RETRY_EXC_ERR → kReceiverNotReady;
//   IB_WC_REM_ACCESS_ERR (NAK remote access error) → kRemoteAccessError;
//   IB_WC_REM_INV_REQ_ERR (NAK invalid request) → kRemoteInvalidRequest;
//   IB_WC_LOC_LEN_ERR (responder: SEND longer than the buffer) → kLengthError;
//   IB_WC_REM_OP_ERR (NAK remote operational error, undefined NAK codes) → kPdcClosed;
//   IB_WC_WR_FLUSH_ERR (every WR behind the failed one, and every WR posted while the QP is in
//   the error state; a receive buffer a failing QP was filling) → kFlushed.
//   An error moves the QP to the error state; connect_qp() again revives it.
//
// Not implemented (counted as rx_unsupported when received): SEND with invalidate, UC/UD;
// post_atomic refuses every atomic but FETCH_ADD and CMP_SWAP on one 64-bit word. A frame too
// small for a whole packet (MTU + 78 bytes) carries the headers only, with the payload, pad
// and ICRC by length (Frame::wire_len), as the simulator does at scale: such
// frames have no ICRC and place no bytes, only lengths.
//
// Ownership and threads: one RoceEndpoint per RNIC port, driven by one thread (its host's).
// Memory follows live state (DESIGN.md): creation allocates no table; each grows on the
// control path, to a configured bound, and is kept (never shrunk) for reuse until the
// endpoint is destroyed:
// - QPs: connect_qp allocates the chunk of kQpChunk QPs holding local_qpn (and extends the
//   chunk index to reach it), up to max_qps QPs. A QP that fails or is connected again keeps
//   its slot and its queues; connect_qp reuses them.
// - A QP's send queue: post_write/post_write_with_imm/post_read/post_send double it (from 8)
//   when the WR does not fit, up to max_send_wr WRs.
// - A QP's responder read queue and atomic replay cache: connect_qp sizes each for
//   max_rd_atomic entries, once per QP (they fill from the peer's READ and atomic requests, on
//   rx, which must not allocate).
// - Completion ring: every posted WR and receive buffer reserves its slot, and the post
//   doubles the ring when the reserved slots would not fit, up to cq_entries; pushing a
//   completion never overflows and never allocates. poll_completions frees slots for reuse.
// - Shared receive queue: post_recv doubles it when the buffer does not fit, up to
//   max_recvs; consumed buffers' slots are reused.
// - connect_qp grows the active list and the connection map; register_memory the region
//   table.
// Rings (transport/pool.h) hold a power of 2 of entries, the last size the bound rounded up (the
// bounds themselves are counted exactly); growth moves the live entries to their positions'
// slots, so order is unchanged.
// A peer's frames never grow anything: state per QP is a handful of PSNs and flags, and
// frames that do not fit the state machine are dropped or NAKed and counted (RoceCounters).
// footprint() is the bytes the tables hold.
//
// Data path: rx()/tx()/on_timer() never allocate and make no virtual call per packet.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cc/dcqcn.h"
#include "transport/api.h"
#include "transport/pool.h"
#include "transport/ready_bits.h"
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
  uint32_t max_send_wr = 256; // posted, not yet completed WRs (write, send, read) per QP (SQ
                              // depth, ibv_qp_cap's max_send_wr), 1..65536
  uint32_t max_recvs = 256;   // shared receive queue: posted, unconsumed buffers, 1..65536
  // Outstanding RDMA READs per QP as requester (IB max_rd_atomic) and queued READ requests per
  // QP as responder (IB max_dest_rd_atomic); both ends should agree. 1..256 (rxe: 128).
  uint32_t max_rd_atomic = 16;
  // RNR NAK timer code this responder sends (IB min_rnr_timer, spec/rocev2.md §3.2 table),
  // 0..31; 12 = 640 µs (librdmacm's default), 0 = 655.36 ms.
  uint8_t min_rnr_timer = 12;
  uint8_t rnr_retry = 7;      // RNR NAKs per stall before kReceiverNotReady, 0..7; 7 = for ever
  // Sent, unacknowledged packets per QP, 1..2^23-1. RC has no window for writes besides the
  // PSN space (2^23 - 1, the default): the rate (DCQCN) is the only brake, as on RNICs.
  uint32_t max_outstanding_psns = 0x7F'FFFF;
  uint32_t cq_entries = 65536;   // completion ring: posted writes not yet polled, 1..2^24
  uint8_t ack_timeout_exp = 14;  // local ACK timeout 4.096 µs · 2^t, 0..31; 0 = no timer
  uint8_t retry_cnt = 7;         // 0..7; 7 = retry for ever (as rxe)
  uint32_t ack_req_every = 64;   // AckReq at least every N packets (rxe: 64), 1..2^23
  uint32_t ack_every = 0;        // the responder also ACKs after N in-order packets without
                                 // AckReq; 0 = only on AckReq (as rxe), 0..2^23
  uint8_t dscp_data = kDscpData;  // requests, ACKs and NAKs: the QP's traffic class
  uint8_t dscp_cnp = kDscpCnp;    // CNPs (NVIDIA's default), sent in Priority::kControl
  bool ect = true;               // data ECN-capable (ECT(0))
  // The NIC computes and verifies the ICRC (as RNICs do): frames carry it as zeros and
  // received ICRCs are not checked here. Only for hosts that really offload it.
  bool icrc_offload = false;
  // Zero-copy transmit: payloads are referenced in registered memory (Frame::ref), not copied,
  // for a host whose device gathers (DPDK external buffers).
  bool tx_by_reference = false;
  // WRITEs into a region of at least this many bytes are placed with streaming stores (a
  // region beyond the cache: a plain copy would first read every line it writes); 0: never.
  uint64_t stream_placement_from = uint64_t{32} << 20;
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
  uint64_t tx_qp_visits = 0;  // QPs tx() looked at (it passes over those with nothing to do)
  uint64_t rx_acks = 0;
  uint64_t rx_nak_seq = 0;     // NAK PSN sequence error
  // ... of them, while a go-back-N was under way: nothing restarted (rxe started_retry)
  uint64_t rx_nak_seq_ignored = 0;
  uint64_t rx_nak_fatal = 0;   // NAK remote access / invalid request / operational error
  uint64_t rx_rnr_naks = 0;    // RNR NAKs received (each waits the timer, then resends)
  uint64_t rnr_retries = 0;    // resends after an RNR NAK's timer
  uint64_t rx_rnr_ignored = 0; // RNR NAK for the PSN an RNR wait already holds
  uint64_t tx_reads = 0;       // READ requests first sent
  uint64_t read_reissues = 0;  // READ requests sent again from a missing response PSN
  uint64_t rx_read_responses = 0;   // read response packets placed (in order)
  uint64_t rx_read_dup = 0;         // read responses behind una: duplicates, dropped
  uint64_t rx_read_gap = 0;         // read responses (or ACKs) beyond missing responses
  uint64_t rx_read_unexpected = 0;  // responses for no outstanding read, or malformed
  uint64_t read_waits = 0;          // tx() held a READ or atomic back: max_rd_atomic outstanding
  uint64_t tx_atomics = 0;          // atomic requests first sent
  uint64_t atomic_resends = 0;      // atomic requests sent again (go-back-N)
  uint64_t rx_atomic_acks = 0;      // ATOMIC ACKNOWLEDGEs that completed an atomic
  uint64_t rx_atomic_ack_dup = 0;   // ATOMIC ACKNOWLEDGEs behind una: duplicates, dropped
  uint64_t rx_atomic_ack_unexpected = 0;  // for no outstanding atomic, or not an ACK syndrome
  uint64_t rx_stale_acks = 0;  // ACK/NAK for PSNs not outstanding, or reserved syndrome
  uint64_t rx_cnps = 0;
  uint64_t pacing_waits = 0;  // tx() found data held back by the DCQCN pacer
  // Responder.
  uint64_t rx_data = 0;             // request packets for a connected QP, any PSN
  uint64_t rx_placed = 0;           // write/send packets accepted in order and placed
  uint64_t rx_sends = 0;            // SEND messages completed into a receive buffer
  uint64_t rx_write_imm = 0;        // WRITEs with immediate completed into a receive buffer
  uint64_t rx_rnr = 0;              // SEND / WRITE-imm with no receive buffer → RNR NAK
  uint64_t rx_length_error = 0;     // SEND longer than its buffer → NAK invalid request
  uint64_t rx_read_requests = 0;    // READ requests executed (first time or duplicate)
  uint64_t rx_read_overflow = 0;    // READ requests that found max_rd_atomic queued: the
                                    // oldest queued response was dropped (recycled, as rxe)
  uint64_t tx_read_responses = 0;   // read response packets sent
  uint64_t rx_atomics = 0;          // atomic requests executed (each PSN once)
  uint64_t rx_atomic_replays = 0;   // duplicate atomics answered from the replay cache
  uint64_t rx_atomic_replay_miss = 0;  // duplicate atomics older than the cache: dropped
  uint64_t rx_atomic_refused = 0;      // atomics NAKed: bad R_Key, range or alignment
  uint64_t rx_atomic_misaligned = 0;   // ... of them, a word not 8-byte aligned (VA or memory)
  uint64_t tx_atomic_acks = 0;         // ATOMIC ACKNOWLEDGEs sent (executions and replays)
  uint64_t tx_rnr_naks = 0;
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
  uint16_t channel = 0;   // the connection to peer_ip4 it serves (connect_qp)
  uint32_t next_psn = 0;  // requester: the next PSN to send (behind max_psn after go-back-N)
  uint32_t max_psn = 0;   // requester: one past the highest PSN ever sent
  uint32_t una = 0;       // requester: the oldest unacknowledged PSN
  uint32_t epsn = 0;      // responder: the expected PSN
  uint32_t msn = 0;       // responder: messages completed
  uint32_t writes_outstanding = 0;  // WRs of any kind posted and not completed
  uint32_t reads_outstanding = 0;   // requester: READs sent and not completed
  uint32_t responses_queued = 0;    // responder: READ / atomic requests not yet answered
  double rate_gbps = 0;  // DCQCN current rate
  double alpha = 0;
};

class RoceEndpoint final : public Endpoint {
 public:
  static absl::StatusOr<std::unique_ptr<RoceEndpoint>> create(const RoceConfig& config);

  // Control path: connects local QP `local_qpn` to `remote_qpn` at `peer_ip4` and moves it to
  // RTS. `sq_psn` is the first PSN this side sends; `rq_psn` the first it expects (the peer's
  // sq_psn). `channel` names the connection among those to the same peer: posts whose
  // request names (peer_ip4, channel) go on this QP. A QP in the error state may be connected
  // again; one QP per (peer, channel).
  absl::Status connect_qp(uint32_t peer_ip4, uint32_t local_qpn, uint32_t remote_qpn,
                          uint32_t sq_psn, uint32_t rq_psn, uint16_t channel = 0);
  absl::StatusOr<QpInfo> qp_info(uint32_t local_qpn) const;
  uint16_t udp_sport(uint32_t local_qpn) const noexcept;

  // Endpoint.
  absl::StatusOr<uint32_t> register_memory(uint8_t* base, uint64_t length) override;
  absl::Status post_write(const WriteRequest& wr) override;
  // RDMA WRITE with immediate (WRITE LAST/ONLY_WITH_IMMEDIATE): placed like a write, then
  // consumes one receive buffer at the peer (kRecv, has_imm, 0 bytes). `wr.length` may be 0.
  // [API] WriteRequest has no immediate field; this is the RoCEv2 engine's own entry point.
  absl::Status post_write_with_imm(const WriteRequest& wr, uint32_t imm);
  absl::Status post_read(const ReadRequest& rr) override;
  absl::Status post_send(const SendRequest& sr) override;
  absl::Status post_recv(const RecvBuffer& rb) override;
  // RC atomics: kSum (FETCH_ADD) and kCswap (CMP_SWAP) on one kUint64/kInt64 word at an
  // 8-byte aligned remote_offset, always fetching (result may be null: discarded).
  absl::Status post_atomic(const AtomicRequest& ar) override;
  size_t poll_completions(std::span<Completion> out) override;
  EndpointStats stats() const override;

  // Transport.
  void rx(std::span<Frame* const> frames, Time now) override;
  size_t tx(std::span<Frame* const> out, Time now) override;
  Time next_deadline() const override;
  void on_timer(Time now) override;

  const RoceCounters& counters() const noexcept { return counters_; }
  const RoceConfig& config() const noexcept { return config_; }
  // Bytes held by the engine's tables (QP chunks and their index, send and read queues, the
  // completion ring, the receive queue, the active list, the connection map, the region
  // table).
  size_t footprint() const;
  // The most footprint() can reach for `config` with `regions` memory regions registered:
  // every table at its bound (a peer's frames grow none of them).
  static size_t footprint_bound(const RoceConfig& config, uint32_t regions) noexcept;
  // QPs allocated (a multiple of kQpChunk, or max_qps).
  uint32_t qps_allocated() const noexcept { return qps_allocated_; }

  static constexpr uint32_t kQpChunk = 16;  // QPs allocated together

 private:
  explicit RoceEndpoint(const RoceConfig& config);

  // One posted WR, as the requester tracks it (a send WQE): a write, a send, a read or an
  // atomic.
  struct Write {
    Opcode op = Opcode::kWrite;
    bool has_imm = false;
    uint32_t imm = 0;
    uint64_t wr_id = 0;
    uint32_t rkey = 0;
    uint64_t remote_offset = 0;
    const uint8_t* src = nullptr;  // write, send
    uint8_t* dst = nullptr;        // read; atomic: the original value (nullptr: discarded)
    uint64_t length = 0;
    bool cmp_swap = false;   // atomic: CMP_SWAP, else FETCH_ADD
    uint64_t swap_add = 0;   // atomic: the swap value or addend (host order)
    uint64_t compare = 0;    // atomic: CMP_SWAP's compare value
    uint32_t first_psn = 0;  // assigned when its first packet is first sent
    uint32_t packets = 0;    // PSNs it uses (a read: its response packets)
  };

  // One READ or atomic request the responder is answering (a responder resource).
  struct ReadResp {
    uint32_t first_psn = 0;  // PSN of the first response
    uint32_t packets = 0;
    uint32_t sent = 0;       // responses built so far
    uint32_t region = 0;
    uint64_t va = 0;
    uint64_t length = 0;
    bool atomic = false;  // an ATOMIC ACKNOWLEDGE carrying `orig` (one packet)
    uint64_t orig = 0;
  };

  // An executed atomic's result, kept to answer its duplicates (IB: the responder saves the
  // results of the last max_dest_rd_atomic atomics). `seq` is its PSN counted in 64 bits
  // (Qp::rq_psns), so a key never aliases across a 24-bit PSN wrap.
  struct AtomicResult {
    uint64_t seq = 0;
    uint64_t orig = 0;
  };

  static constexpr bool awaits_response(Opcode op) noexcept {
    return op == Opcode::kRead || op == Opcode::kAtomic;
  }

  enum class MsgKind : uint8_t { kNone, kWrite, kSend };

  struct Qp {
    QpState state = QpState::kReset;
    uint32_t local_qpn = 0;
    uint32_t remote_qpn = 0;
    uint32_t peer_ip4 = 0;
    uint16_t channel = 0;
    wire::MacAddr peer_mac{};
    uint16_t sport = 0;
    uint32_t active_index = 0;  // position in active_

    // Requester. Writes in ring slots [write_head, write_tail): completed below write_head;
    // [write_head, write_started) have PSNs; the go-back-N cursor is (send_write, send_packet)
    // at PSN next_psn. Invariant: una <= next_psn <= max_psn (24-bit order).
    GrowRing<Write> writes;  // grown by post_wqe, up to max_send_wr
    uint64_t write_head = 0, write_started = 0, write_tail = 0;
    uint64_t send_write = 0;
    uint32_t send_packet = 0;
    uint32_t next_psn = 0, max_psn = 0, una = 0;
    uint32_t since_ack_req = 0;
    uint8_t retry_left = 0;
    bool retry_started = false;  // a go-back-N runs: NAKs for its PSN start no other
    uint8_t rnr_left = 0;
    bool rnr_wait = false;       // an RNR NAK's timer runs: nothing is sent before rnr_until
    uint32_t rnr_psn = 0;
    Time rnr_until = 0;
    uint32_t reads_in_flight = 0;  // reads and atomics sent, not completed (<= max_rd_atomic)
    Time rto_deadline = kNever;
    Time next_send = 0;  // pacer: no data before this while DCQCN limits the rate
    Dcqcn cc;

    // Responder.
    uint32_t epsn = 0;
    uint64_t rq_psns = 0;  // PSNs epsn has passed since connect_qp (its 64-bit count)
    uint32_t msn = 0;
    bool nak_latch = false;   // a sequence-error NAK was sent for the current gap
    bool in_message = false;  // between a FIRST and its LAST
    MsgKind kind = MsgKind::kNone;  // of the message under way
    bool recv_claimed = false;      // a SEND under way holds `recv`
    RecvBuffer recv;                // the receive buffer it fills
    uint64_t recv_placed = 0;       // bytes placed in it
    uint32_t region = 0;      // of the message being placed
    uint64_t va = 0;          // where its next byte goes
    uint64_t remaining = 0;   // bytes of it still to come
    uint32_t unacked = 0;
    bool ack_pending = false;
    bool nak_pending = false;
    bool nak_rnr = false;  // the pending NAK is an RNR NAK (type 1, value min_rnr_timer)
    uint8_t nak_code = 0;  // wire::AethNak
    uint32_t nak_psn = 0;

    // Responder resources: READ requests being answered, ring [rd_head, rd_tail).
    GrowRing<ReadResp> reads;  // max_rd_atomic, sized by the first connect_qp
    uint64_t rd_head = 0, rd_tail = 0;
    // Replay cache: results of the last max_rd_atomic atomics executed, ring [ar_head, ar_tail),
    // oldest first; sized by the first connect_qp.
    GrowRing<AtomicResult> atomics;
    uint64_t ar_head = 0, ar_tail = 0;

    // Notification point.
    bool cnp_pending = false;
    bool cnp_sent = false;
    Time last_cnp = 0;
  };

  // Data path. Entry points, dispatch, transmit order and pacing (roce_datapath.cc).
  void rx_one(const Frame& f, Time now);
  void rx_cnp(Qp& q, Time now);
  bool tx_one(Qp& q, Frame& f, Time now);
  void pace(Qp& q, const Frame& f, Time now);
  // Per-packet helpers shared by the data-path files, defined in roce_datapath.h.
  inline void note_ce(Qp& q, const wire::Decoded& d, Time now);
  inline bool has_data(const Qp& q) const noexcept;
  inline void arm_rto(Qp& q, Time now);

  // Responder (roce_responder.cc). A SEND or WRITE packet's place in its message, built in
  // place (a constructor, not a returned value, so that its fields stay in registers).
  struct Request {
    inline explicit Request(const wire::Decoded& d);
    MsgKind kind = MsgKind::kNone;
    bool send = false;
    bool first = false;  // FIRST or ONLY
    bool last = false;   // LAST or ONLY, or with immediate
    bool imm = false;
    uint64_t len = 0;  // payload bytes
  };
  void rx_request(Qp& q, const wire::Decoded& d, Time now);
  // Steps of rx_request and rx_read_request, inline so that the per-packet path adds no call.
  inline bool check_psn(Qp& q, const wire::Decoded& d, uint32_t psn);
  inline bool check_op_seq(Qp& q, const Request& r, uint32_t psn);
  inline bool start_write(Qp& q, const wire::Reth& reth, uint32_t psn);
  inline bool check_length(Qp& q, const Request& r, uint32_t psn);
  inline bool check_recv(Qp& q, const Request& r, uint32_t psn);
  inline bool place_send(Qp& q, const wire::Decoded& d, const Request& r, uint32_t psn);
  inline void place_write(Qp& q, const wire::Decoded& d, uint64_t len);
  inline void accept_request(Qp& q, const wire::Decoded& d, const Request& r);
  inline void complete_message(Qp& q, const wire::Decoded& d, const Request& r);
  inline bool reth_access_ok(const wire::Reth& reth, uint32_t& region);
  void rx_read_request(Qp& q, const wire::Decoded& d, uint32_t psn, bool duplicate);
  void rx_atomic_request(Qp& q, const wire::Decoded& d, uint32_t psn, bool duplicate);
  inline bool atomic_access_ok(Qp& q, const wire::AtomicEth& a, uint32_t psn, uint32_t& region);
  inline uint64_t execute_atomic(const wire::Decoded& d, uint8_t* word);
  inline const AtomicResult* saved_atomic(const Qp& q, uint32_t psn) const;
  inline void drop_responses_from(Qp& q, uint32_t psn);
  inline void queue_read_response(Qp& q, const ReadResp& r);
  void responder_fatal(Qp& q, uint8_t nak_code, uint32_t psn);
  bool build_read_response(Qp& q, Frame& f, Time now);

  // One packet carrying a payload (or a READ request), as build_packet() writes it.
  struct Packet {
    wire::RoceOpcode op = wire::RoceOpcode::kRcWriteOnly;
    uint32_t psn = 0;
    bool ack_req = false;
    bool reth = false;
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t dma_length = 0;
    bool aeth = false;  // read responses FIRST/LAST/ONLY: ACK, credits unlimited, the MSN
    bool imm = false;
    uint32_t imm_data = 0;
    bool atomic_eth = false;  // CMP_SWAP / FETCH_ADD: va, rkey and these
    uint64_t swap_add = 0, compare = 0;
    bool atomic_ack = false;  // ATOMIC ACKNOWLEDGE: AETH (aeth) and this
    uint64_t orig = 0;
    const uint8_t* payload = nullptr;  // null with len > 0: payload carried by length only
    uint32_t len = 0;
  };

  // Requester (roce_requester.cc). The steps of build_data, rx_ack and rx_read_response are
  // inline so that the per-packet path adds no call.
  bool build_data(Qp& q, Frame& f, Time now);
  // They fill the caller's Packet: a returned one would be copied on the per-packet path.
  inline void read_request_packet(const Qp& q, const Write& w, Packet& p) const;
  inline void atomic_request_packet(const Qp& q, const Write& w, Packet& p) const;
  static inline void atomic_response_packet(const ReadResp& r, Packet& p);  // responder
  inline void message_packet(const Qp& q, const Write& w, bool last, Packet& p) const;
  inline void advance_cursor(Qp& q, Write& w, uint32_t len, bool fresh, bool last);
  void rx_ack(Qp& q, const wire::Decoded& d, Time now);
  inline void rx_positive_ack(Qp& q, uint32_t psn, Time now);
  inline bool nak_progress(Qp& q, uint32_t psn, bool fatal, Time now);
  inline void rx_rnr_nak(Qp& q, uint32_t psn, uint8_t timer, Time now);
  inline void rx_nak_seq(Qp& q, uint32_t psn, Time now);
  inline void rx_nak_fatal(Qp& q, uint8_t code);
  void rx_read_response(Qp& q, const wire::Decoded& d, Time now);
  void rx_atomic_ack(Qp& q, const wire::Decoded& d, Time now);
  inline Write* read_holding(Qp& q, uint32_t psn, Opcode op = Opcode::kRead);
  inline bool read_response_at_una(Qp& q, uint32_t psn, uint32_t k, Time now);
  inline bool read_response_fits(const Write& w, const wire::Decoded& d, uint32_t k) const;
  inline void place_read_response(Qp& q, Write& w, const wire::Decoded& d, uint32_t psn,
                                  uint32_t k, Time now);
  inline void response_taken(Qp& q, uint32_t psn, bool completes, Time now);
  inline void restore_retries(Qp& q) const noexcept;
  // Acknowledges through `psn`, never past a read or atomic whose responses are missing; returns
  // kAckProgress and/or kAckReadGap.
  static constexpr int kAckProgress = 1, kAckReadGap = 2;
  int ack_through(Qp& q, uint32_t psn);
  void read_gap(Qp& q, Time now);
  void complete_through(Qp& q, uint32_t psn);

  // Go-back-N, the ACK timer and the error state (roce_retransmit.cc).
  void seek(Qp& q, uint32_t psn);
  bool go_back(Qp& q, uint32_t psn, Time now);
  void fail_qp(Qp& q, OpStatus first);

  // The frame encoder (roce_frames.cc).
  bool build_packet(Qp& q, Frame& f, const Packet& p);
  bool build_ack(Qp& q, Frame& f, wire::AethType type, uint8_t value, uint32_t psn);
  bool build_cnp(Qp& q, Frame& f);
  wire::Encap encap_for(const Qp& q, uint8_t dscp, uint8_t ecn) const;
  const wire::EncapTemplate& encap_template(const Qp& q, uint8_t dscp, uint8_t ecn, bool icrc);

  // Posting and completions (roce_endpoint.cc).
  void reserve_completion();
  void complete(const Write& w, OpStatus status);
  void complete_recv(uint64_t wr_id, uint32_t peer, OpStatus status, uint64_t bytes,
                     bool has_imm, uint32_t imm);
  absl::Status post_wqe(uint32_t peer, uint16_t channel, const Write& w, const char* what);
  absl::Status post_verb(DeliveryMode mode, uint32_t peer, uint16_t channel, const Write& w,
                         const void* buffer, bool empty_ok, const char* verb);
  static Write write_wqe(const WriteRequest& wr);

  // The QP at index `idx` (QPN - qpn_base); nullptr when out of range or never allocated
  // (a reset QP).
  Qp* qp_at(uint32_t idx) const noexcept {
    if (idx >= qp_limit_) return nullptr;
    Qp* const chunk = qp_chunks_[idx / kQpChunk].get();
    return chunk == nullptr ? nullptr : chunk + idx % kQpChunk;
  }
  Qp& allocate_qp(uint32_t idx);

  RoceConfig config_;
  Time ack_timeout_ = 0;
  // QPs: chunk c holds indices c * kQpChunk .. (index = QPN - qpn_base); stable addresses.
  std::vector<std::unique_ptr<Qp[]>> qp_chunks_;
  uint32_t qp_limit_ = 0;  // min(max_qps, chunks indexed x kQpChunk): one bound check per packet
  uint32_t qps_allocated_ = 0;
  std::vector<Qp*> active_;       // connected QPs (RTS or error), in no particular order
  uint32_t rr_ = 0;               // round-robin position in active_ for tx()
  // Per position in active_: the QP may have a frame for tx() (transport/ready_bits.h); set
  // by a frame, a post or its ACK timer, cleared when tx_may_act says only such a change
  // could give it work.
  ReadyBits ready_;
  void mark_ready(const Qp& q) noexcept { ready_.set(q.active_index); }
  bool tx_may_act(const Qp& q) const noexcept;
  Time deadline_ = kNever;        // earliest timer of any QP (may be early, never late)
  // (peer << 16 | channel) -> QP index; control path only.
  static uint64_t conn_key(uint32_t peer, uint16_t channel) noexcept {
    return uint64_t{peer} << 16 | channel;
  }
  absl::flat_hash_map<uint64_t, uint32_t> qp_by_conn_;
  struct Region {
    uint8_t* base;
    uint64_t length;
    bool stream;  // placed with streaming stores (stream_placement_from)
  };
  std::vector<Region> regions_;  // R_Key = index + 1
  bool streamed_ = false;        // streaming stores since the last fence (rx() ends with one)
  // Shared receive queue (post_recv), ring [recv_head_, recv_tail_), up to max_recvs.
  GrowRing<RecvBuffer> recvs_;
  uint64_t recv_head_ = 0, recv_tail_ = 0;
  // Completion ring, up to cq_entries; every post reserves a slot, so pushing never overflows.
  GrowRing<Completion> cq_;
  uint64_t cq_head_ = 0, cq_tail_ = 0;
  uint64_t cq_reserved_ = 0;  // posted writes whose completion is not yet polled
  RoceCounters counters_;
  // The encapsulation of the last frame built to a peer, for ECN-capable frames and for the
  // others (roce_frames.cc): the next frame mostly goes to the same peer.
  struct EncapCache {
    uint32_t peer_ip4 = 0;
    wire::MacAddr peer_mac{};
    uint8_t dscp = 0, ecn = 0;
    bool icrc = false, valid = false;
    wire::EncapTemplate bytes;
  };
  std::array<EncapCache, 2> encap_cache_{};
};

}  // namespace uet
