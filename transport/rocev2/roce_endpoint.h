// The RoCEv2 engine for one endpoint (one RNIC port): reliable-connected (RC) queue pairs
// carrying RDMA WRITE (with or without immediate), SEND (with or without immediate), RDMA
// READ and the 64-bit atomics (FETCH_ADD, CMP_SWAP), sans-IO, behind the same Endpoint API as
// UET (transport/api.h). The wire is spec/rocev2.md; transport/rocev2/NOTES.md says how the
// engine runs RC (§1: requester, READ, atomics, RNR, responder, congestion; §2: as rdma_rxe
// does), finds its QPs (§3), maps IB's completion statuses (§4), what it leaves out (§5) and
// where its memory goes (§6).
//
// Ownership and threads: one RoceEndpoint per RNIC port, driven by one thread (its host's).
// Tables grow with use to their configured bounds (NOTES.md §6): on the control path, except
// a QP's responder read queue and atomic cache, which the requests that arrive grow to
// max_rd_atomic each; drained send queues and the completion ring shrink in poll_completions.
// Data path: rx()/tx()/on_timer() allocate nothing in the steady state, free nothing and make
// no virtual call per packet.
#pragma once

#include <algorithm>
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
#include "transport/rare.h"
#include "transport/ready_bits.h"
#include "transport/region_table.h"
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
  uint64_t tx_no_room = 0;      // the host's frame was too small for the headers (a request
                                // refused so until the ACK timer fails its QP kFrameTooSmall)
  wire::WireCounters wire;
};

// RoceCounters that every data packet, ACK, CNP or message can move (RoceEndpoint::HotCounters).
#define ROCE_HOT_COUNTERS(X) \
  X(tx_data) X(tx_retx) X(bytes_resent) X(go_back_n) X(timeouts) X(tx_qp_visits) X(rx_acks) \
  X(rx_nak_seq) X(rx_nak_seq_ignored) X(rx_stale_acks) X(rx_cnps) X(pacing_waits) X(rx_data) \
  X(rx_placed) X(rx_duplicates) X(rx_out_of_order) X(rx_ce) X(tx_acks) X(tx_naks) X(tx_cnps) \
  X(tx_reads) X(rx_read_responses) X(rx_read_requests) X(tx_read_responses) X(read_waits) \
  X(read_reissues) X(tx_atomics) X(atomic_resends) X(rx_sends) X(rx_write_imm)

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
  uint32_t send_queue_slots = 0;    // requester: send-queue storage, grows with the flight
  uint32_t response_slots = 0;      // responder: read-queue storage, grows with what arrives
  double rate_gbps = 0;  // DCQCN current rate
  double alpha = 0;
};

class RoceEndpoint final : public Endpoint {
 public:
  static absl::StatusOr<std::unique_ptr<RoceEndpoint>> create(const RoceConfig& config);

  // The most bytes a frame must hold when a host carries payloads by length (build_packet):
  // the longest header stack, an atomic request (AtomicETH) with its ICRC, or a WRITE with
  // RETH and ImmDt, on Ethernet, IPv4 and UDP.
  static constexpr uint32_t kMaxHeaderBytes =
      wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize + wire::Bth::kSize +
      std::max({wire::AtomicEth::kSize, wire::Reth::kSize + wire::ImmDt::kSize,
                wire::Aeth::kSize + wire::AtomicAckEth::kSize}) +
      wire::kIcrcSize;

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
  // A QP still placing a WRITE into the region or answering a READ from it fails at once
  // with NAK remote access error, as a NIC's would whose memory translation went away.
  absl::Status deregister_memory(uint32_t key) override;
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

  // A copy: the counters a fault-free run moves per packet, and the rest (RoceCounters).
  RoceCounters counters() const noexcept;
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
  // atomic; the verb as posted (transport/api.h: imm holds 32 bits), then RC's own state.
  // An atomic's dst takes the original value (nullptr: discarded); its src is not read.
  struct Write : PostedVerb {
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

  // Fields ordered so that none leaves a hole (the struct is per QP; NOTES.md §6).
  struct Qp {
    QpState state = QpState::kReset;
    // The host's frame was too small for the packet at the cursor; still so when the ACK
    // timer fires, the QP fails kFrameTooSmall (frame_refused()).
    bool frame_refused = false;
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
    GrowRing<Write, 1> writes;  // grown by post_wqe up to max_send_wr, shrunk once drained
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
    uint32_t reads_in_flight = 0;  // reads and atomics sent, not completed (<= max_rd_atomic)
    Time rnr_until = 0;
    Time rto_deadline = kNever;
    Time next_send = 0;  // pacer: no data before this while DCQCN limits the rate
    Dcqcn cc;

    // Responder.
    uint32_t epsn = 0;
    uint32_t msn = 0;
    uint64_t rq_psns = 0;  // PSNs epsn has passed since connect_qp (its 64-bit count)
    bool nak_latch = false;   // a sequence-error NAK was sent for the current gap
    bool in_message = false;  // between a FIRST and its LAST
    MsgKind kind = MsgKind::kNone;  // of the message under way
    bool recv_claimed = false;      // a SEND under way holds `recv`
    uint32_t region = 0;      // of the message being placed
    RecvBuffer recv;                // the receive buffer it fills
    uint64_t recv_placed = 0;       // bytes placed in it
    uint64_t va = 0;          // where its next byte goes
    uint64_t remaining = 0;   // bytes of it still to come
    uint32_t unacked = 0;
    bool ack_pending = false;
    bool nak_pending = false;
    bool nak_rnr = false;  // the pending NAK is an RNR NAK (type 1, value min_rnr_timer)
    uint8_t nak_code = 0;  // wire::AethNak
    uint32_t nak_psn = 0;

    // Notification point.
    bool cnp_pending = false;
    bool cnp_sent = false;
    Time last_cnp = 0;

    // Responder resources: READ requests being answered, ring [rd_head, rd_tail), grown by
    // the requests that arrive, up to max_rd_atomic.
    GrowRing<ReadResp, 1> reads;
    uint64_t rd_head = 0, rd_tail = 0;
    // Replay cache: results of the last max_rd_atomic atomics executed, ring [ar_head, ar_tail),
    // oldest first; grown by the atomics executed, up to max_rd_atomic.
    GrowRing<AtomicResult, 1> atomics;
    uint64_t ar_head = 0, ar_tail = 0;
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
  [[gnu::cold, gnu::noinline]] bool frame_refused(Qp& q, Time now);
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
  // Per position in active_: the QP's send queue drained while holding more than kQueueKeep
  // slots; poll_completions gives the storage back (the data path never frees).
  ReadyBits drained_;
  static constexpr uint32_t kQueueKeep = 2;  // slots a drained send queue or the CQ keeps
  inline void note_drained(const Qp& q) noexcept {
    if (q.write_head == q.write_tail && q.writes.capacity() > kQueueKeep)
      drained_.set(q.active_index);
  }
  void give_back();
  bool tx_may_act(const Qp& q) const noexcept;
  Time deadline_ = kNever;        // earliest timer of any QP (may be early, never late)
  // (peer << 16 | channel) -> QP index; control path only.
  static uint64_t conn_key(uint32_t peer, uint16_t channel) noexcept {
    return uint64_t{peer} << 16 | channel;
  }
  absl::flat_hash_map<uint64_t, uint32_t> qp_by_conn_;
  // Registered memory: R_Key = its slot + 1, and the slot's generation (the key byte IB keeps
  // in an R_Key) in bits 24..31 (transport/region_table.h).
  using Regions = RegionTable<24>;
  Regions regions_;
  uint32_t ops_using(const uint8_t* base, uint64_t length) const noexcept;
  void stop_responding(uint32_t slot);
  bool streamed_ = false;        // streaming stores since the last fence (rx() ends with one)
  // Shared receive queue (post_recv), ring [recv_head_, recv_tail_), up to max_recvs.
  GrowRing<RecvBuffer, 1> recvs_;
  uint64_t recv_head_ = 0, recv_tail_ = 0;
  // Completion ring, up to cq_entries; every post reserves a slot, so pushing never overflows.
  GrowRing<Completion, 1> cq_;
  uint64_t cq_head_ = 0, cq_tail_ = 0;
  uint64_t cq_reserved_ = 0;  // posted writes whose completion is not yet polled
  // The counters a fault-free run moves per packet (ROCE_HOT_COUNTERS) live in the endpoint;
  // the rest (errors, atomics, SENDs) in a RoceCounters made at the first such event, so a
  // host that never sees one does not carry its 0.6 KiB.
  struct HotCounters {
#define ROCE_HOT_FIELD(name) uint64_t name = 0;
    ROCE_HOT_COUNTERS(ROCE_HOT_FIELD)
#undef ROCE_HOT_FIELD
  };
  HotCounters counters_;
  Rare<RoceCounters> rare_counters_;
  RoceCounters& rare() { return rare_counters_.get(); }
  const RoceCounters& rare() const noexcept { return rare_counters_.get(); }
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
