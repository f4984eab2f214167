// The UET engine for one fabric endpoint (FEP), sans-IO: PDS RUD and ROD (spec/uet.md §3.3)
// carrying SES WRITE, READ, SEND, tagged sends and atomics with job-based access (§4), RUDI
// (§3.5) and UUD (§3.6) datagrams; PDCs opened on first use with a 0-RTT SYN and closed when
// idle (§3.3, §3.12), ACK_CC with SACK (§3.8), NACKs (§3.10), selective retransmission, NSCC
// or RCCC (§3.4, §3.8.1, §3.8.2) and each packet's EV from pathsel/ (§2.4). transport/uet/NOTES.md says how each operation and mode
// travels on the PDS, how a PDC lives and closes, and how the congestion control is wired.
//
// Ownership and threads: one Endpoint per FEP, driven by one thread (its host's). Memory
// follows live state, never past the config's bounds (transport/pool.h): the PDC table grows
// a chunk at a time up to max_pdcs (all a peer's SYNs can take; then NACK NO_PDC_AVAIL); an
// initiator's send window grows with its flight up to mpr and goes back when its PDC is freed,
// the other windows (mpr) come with the PDC and are parked for the next one; a PDC's
// operations and responses, the receive buffers and the completions are rings or vectors
// that grow with the work posted, up to their bounds; RUDI's and UUD's tables and ROD's
// reorder buffers are allocated when a mode is first used. memory_bytes() counts all of it,
// memory_bound() is its most for a config (NOTES.md, "Ownership and threads", says where each
// table grows and goes back). Frames that do not fit the bounds are dropped or NACKed and
// counted (UetCounters).
//
// Data path: rx()/tx()/on_timer() make no virtual calls per packet and allocate only while a
// table is still growing towards its bound (a SYN's PDC, the first responses, credit
// grants or refusals of a PDC, a freed PDC's parked windows): a few times per table in a
// run's warm-up, never in steady state.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/nscc.h"
#include "cc/rccc.h"
#include "pathsel/path_selector.h"
#include "transport/api.h"
#include "transport/pool.h"
#include "transport/rare.h"
#include "transport/region_table.h"
#include "transport/tss/sublayer.h"
#include "transport/uet/uet_config.h"
// The engine's private state types, admitted here for UetEndpoint's own members.
#define UET_ENDPOINT_H_MEMBERS
#include "transport/uet/uet_pdc.h"
#include "transport/uet/uet_pdc_table.h"
#include "transport/uet/uet_rod.h"
#include "transport/uet/uet_rudi.h"
#include "transport/uet/uet_uud.h"
#undef UET_ENDPOINT_H_MEMBERS
#include "transport/wire/builder.h"
#include "transport/wire/decode.h"

namespace uet {

// UetCounters that every data packet or credit grant can move (UetEndpoint::HotCounters).
#define UET_HOT_COUNTERS(X) \
  X(uint64_t, tx_data) X(uint64_t, tx_retx) X(uint64_t, tx_acks) X(uint64_t, tx_nacks) \
  X(uint64_t, rx_data) X(uint64_t, rx_acks) X(uint64_t, rx_nacks) X(uint64_t, rx_duplicates) \
  X(uint64_t, rx_trimmed) X(uint64_t, rx_out_of_window) X(uint64_t, timeouts) \
  X(uint64_t, fast_retx) X(uint64_t, nack_retx) X(uint64_t, tlp_probes) \
  X(uint64_t, tx_pdc_visits) X(Time, rtt_max) X(uint64_t, rto_below_rtt_max) \
  X(uint64_t, tx_read_data) X(uint64_t, rx_read_data) X(uint64_t, tx_credit) \
  X(uint64_t, tx_credit_acks) X(uint64_t, credit_granted) X(uint64_t, rx_credit) \
  X(uint64_t, rx_credit_acks) X(uint64_t, credit_received) X(uint64_t, credit_stalls) \
  X(uint64_t, tx_credit_req) X(uint64_t, tx_req_ack) X(uint64_t, rx_req_ack) \
  X(uint64_t, rx_credit_req) X(uint64_t, credit_probes)

// A UetConfig validated, and its congestion controls' configs derived, once for the endpoints
// of one host kind to share (read in place, never changed); each endpoint takes its own
// address and seed (UetHost) beside it.
class UetShared {
 public:
  static absl::StatusOr<std::shared_ptr<const UetShared>> create(const UetConfig& config);
  const UetConfig& config() const noexcept { return config_; }

 private:
  friend class UetEndpoint;
  explicit UetShared(const UetConfig& config) : config_(config) {}
  UetConfig config_;
  cc::NsccConfig nscc_;  // every PDC's Nscc reads it
  cc::RcccConfig rccc_;
};

class UetEndpoint final : public Endpoint {
 public:
  // An endpoint of its own config (a UetShared of its own; config's address and seed).
  static absl::StatusOr<std::unique_ptr<UetEndpoint>> create(const UetConfig& config);
  // One of many endpoints of one config: `host`'s address and seed in place of the config's.
  static absl::StatusOr<std::unique_ptr<UetEndpoint>> create(
      std::shared_ptr<const UetShared> shared, const UetHost& host);
  UetEndpoint(const UetEndpoint&) = delete;
  UetEndpoint& operator=(const UetEndpoint&) = delete;

  // Endpoint. The requests' `channel` is ignored: one PDC per peer (and mode) carries every
  // channel, spraying its packets over EVs itself (spec/uet.md §2.4; transport/api.h).
  absl::StatusOr<uint32_t> register_memory(uint8_t* base, uint64_t length) override;
  absl::Status deregister_memory(uint32_t key) override;
  absl::Status post_write(const WriteRequest& wr) override;
  absl::Status post_read(const ReadRequest& rr) override;
  absl::Status post_send(const SendRequest& sr) override;
  absl::Status post_recv(const RecvBuffer& rb) override;
  absl::Status post_tsend(const TaggedSendRequest& ts) override;
  absl::Status post_trecv(const TaggedRecv& tr) override;
  absl::Status post_atomic(const AtomicRequest& ar) override;
  absl::Status cancel_recv(uint64_t wr_id) override;
  absl::Status probe_tagged(const TaggedRecv& match, bool claim, Probed* out) override;
  absl::Status recv_claimed(uint64_t claim, const TaggedRecv& tr) override;
  size_t poll_completions(std::span<Completion> out) override;
  EndpointStats stats() const override;

  // Transport.
  void rx(std::span<Frame* const> frames, Time now) override;
  size_t tx(std::span<Frame* const> out, Time now) override;
  Time next_deadline() const override;
  void on_timer(Time now) override;

  // A copy: the counters a fault-free run moves per packet, and the rest (UetCounters).
  UetCounters counters() const noexcept;
  // Job-based access (spec/uet.md §4.1): resource index `ri` refuses requests (DISABLED)
  // until enabled again; enabling starts its next generation (returned), so an initiator
  // still naming the old one is refused BAD_GENERATION. Refused for an index not configured
  // (UetConfig::resource_indexes).
  absl::Status disable_resource(uint16_t ri);
  absl::StatusOr<uint8_t> enable_resource(uint16_t ri);
  // TSS (spec/uet.md §5), null unless UetConfig::tss.enabled: its counters, and key rotation
  // (install_key, activate, retire) as a management entity drives it.
  tss::Sublayer* tss() noexcept { return tss_.get(); }
  const tss::Sublayer* tss() const noexcept { return tss_.get(); }
  size_t pdcs_in_use() const noexcept;
  // PSN slots the send windows of the PDCs in use hold now: each grows with its PDC's flight
  // (at most mpr) and goes back when the PDC is freed.
  size_t window_slots() const noexcept;
  // PDCs made so far (in use or free for reuse): the PDC table's size, at most max_pdcs.
  size_t pdcs_allocated() const noexcept { return pdcs_.size(); }
  // Bytes the endpoint's tables hold beyond the object itself (the PDC table and each PDC's
  // windows and rings, receive, RUDI, UUD, ROD and completion storage): what it costs, to
  // compare against the bounds its config names.
  size_t memory_bytes() const noexcept;
  // The most memory_bytes() can reach for `config` with `regions` memory regions registered
  // (at most kMaxRegions): every table at its bound. Completions are the application's to
  // poll: counted as if no more wait than operations can be outstanding at once.
  static size_t memory_bound(const UetConfig& config, uint32_t regions) noexcept;
  static constexpr uint32_t kMaxRegions = 65535;  // register_memory's slots (key & 0xFFFF)
  // The config fields the per-packet paths read, as copied in (HotConfig, below): for the
  // test that each equals its source in the shared config.
  const auto& hot_config() const noexcept { return hot_; }

 private:
  UetEndpoint(std::shared_ptr<const UetShared> shared, const UetHost& host);

  // The PDS state types (uet_pdc.h), by the names the engine's files use.
  using Op = pds::Op;
  using Slot = pds::Slot;
  using Role = pds::Role;
  using Pdc = pds::Pdc;
  // A posted receive buffer (endpoint-wide FIFO).
  struct Recv {
    RecvBuffer rb;
    bool done = false;
    OpStatus status = OpStatus::kSuccess;
    uint64_t bytes = 0;
    uint32_t peer = 0;
    bool has_imm = false;
    uint32_t imm = 0;
  };
  // A SEND or tagged message being received: which buffer it claimed and how much is still
  // to come.
  struct RxMsg {
    bool in_use = false;
    uint16_t pdc = 0;
    uint16_t message_id = 0;
    uint32_t recv = 0;       // SEND: position in recvs_ (monotonic counter)
    uint64_t length = 0;     // request_length
    uint64_t remaining = 0;  // bytes not yet arrived
    OpStatus status = OpStatus::kSuccess;
    // Tagged (uet_tagged.cc): its bytes go to `dst` (the matched receive's buffer, or its
    // staging in the unexpected list `unexp`), of which `cap` bytes are there to fill.
    bool tagged = false;
    bool has_data = false;
    int32_t unexp = -1;
    uint8_t* dst = nullptr;
    uint64_t cap = 0;
    uint64_t wr_id = 0, tag = 0, data = 0;
    uint32_t peer = 0;
    // Rendezvous (uet_rendezvous.cc): the eager bytes are placed; a READ brings the rest, or
    // (pushed) the initiator WRITEs it under key `sink`, due by `deadline` (`remaining` left).
    bool rdv = false;
    uint64_t eager = 0;
    uint32_t sink = 0;
    Time deadline = kNever;
    // Its CTS (operation cts_op on initiator PDC cts_pdc) stays unretired while `cts_held`:
    // the PDC then probes the initiator (hold_probe_after) until the push is done.
    bool cts_held = false;
    uint16_t cts_pdc = 0;
    uint32_t cts_op = 0;
  };
  // Rendezvous (§4.5.3): what a rendezvous request names for the target to READ from.
  struct RdvRead {
    uint32_t key = 0;
    uint16_t pid_on_fep = 0, resource_index = 0;
    uint64_t offset = 0;
  };
  // A rendezvous send's source, exposed at the initiator under its own key (rdv_key) until
  // the target's READs of it are all cleared (§3.3 clear_psn_offset) or it times out.
  struct RdvSource {
    bool live = false;
    uint16_t gen = 0;   // in its key: a READ of an earlier use is refused
    uint16_t pdc = 0;   // the send's PDC and operation (posting count)
    uint32_t op = 0;
    const uint8_t* base = nullptr;  // the bytes the target READs, past the eager ones
    uint64_t length = 0;
    uint64_t cleared = 0;  // bytes whose READ answers the reader has cleared
    Time deadline = kNever;
    bool pushing = false;  // a CTS came: its WRITE of the rest is posted
    // The send's completion, which its pushed WRITE makes once the send handed it over.
    uint64_t send_wr_id = 0;
    Opcode send_op = Opcode::kSend;
  };
  // Tagged receives and unexpected messages (uet_tagged.cc): each in a table of its bound,
  // linked in posting (arrival) order so a match leaves from anywhere.
  static constexpr uint32_t kNoLink = 0xFFFFFFFFu;
  struct TRecv {
    TaggedRecv tr;
    uint32_t prev = kNoLink, next = kNoLink;
  };
  struct Unexp {
    uint32_t peer = 0;
    bool complete = false;  // every byte arrived
    bool bound = false;     // a receive matched it before it was complete: `recv`
    bool has_data = false;
    uint64_t tag = 0, data = 0;
    uint64_t length = 0;
    uint64_t at = 0;  // its bytes: [at, at + length) of the staging arena
    // A rendezvous message: `length` eager bytes staged of `rdv_length`, the rest to READ.
    bool rdv = false;
    uint64_t rdv_length = 0;
    RdvRead read;
    TaggedRecv recv;
    uint32_t prev = kNoLink, next = kNoLink;
    // A deferred message (§4.2, uet_deferrable.cc): no bytes; its sender's restart token and
    // PID, the PDC and message ID of the deferred attempt; once a receive is reserved for it
    // (`recv`, or an untagged one's recvs_ position recv_at), the restart due by `deadline`.
    bool deferred = false;
    bool untagged = false;  // a DEFERRABLE_SEND, matched by post_recv
    // Probed with FI_CLAIM: only recv_claimed() with (claim_gen << 32 | index) takes it.
    bool claimed = false;
    uint32_t claim_gen = 0;
    bool reserved = false;
    uint16_t pdc = 0, message_id = 0, pid = 0;
    uint32_t recv_at = 0;
    uint64_t token = 0;
    Time deadline = kNever;
  };
  // A deferrable send at its initiator (uet_deferrable.cc), from post to completion: in
  // flight (its first attempt or a restart), or deferred by the target until its RTR.
  struct DeferSlot {
    bool live = false;
    bool deferred = false;
    bool rtr_seen = false;  // the RTR came while the deferred attempt was still in flight
    bool rod = false;
    uint16_t gen = 0;  // in its token: an RTR for an earlier use names no live send
    uint32_t peer = 0;
    Op op;  // as posted
  };
  struct LinkedList {
    uint32_t head = kNoLink, tail = kNoLink;
  };

  // The other delivery modes' state (uet_rod.h, uet_rudi.h, uet_uud.h).
  using Staged = pds::Staged;
  using PeerOp = pds::PeerOp;
  using RudiRsp = pds::RudiRsp;

  // Packets that have no PDC to come from: NACKs (INV_DPDCID, NO_PDC_AVAIL), the ACK of a
  // CLOSE (the target PDC is freed), a CLOSE answering a REQ_CLOSE for a PDC we no longer
  // have. A small bounded ring.
  enum class Stateless : uint8_t { kNack, kCloseAck, kClose };
  struct StatelessNack {
    uint32_t peer_ip4;
    uint16_t peer_pdcid;
    uint8_t code;
    uint32_t psn;
    Stateless kind = Stateless::kNack;
    uint16_t local_pdcid = 0;
    uint32_t payload = 0;  // a NACK's payload: psn, or NEW_START_PSN's start (§5.6)
  };

  // What executing one request at the target did: recorded (the PSN is received now), done
  // without recording (refused: Pdc::Target::gtd), or waiting (a READ's response is queued,
  // or NACKed or dropped: it comes again).
  enum class Exec : uint8_t { kRecord, kDone, kWait };

  // Data path helpers (uet_rx.cc, uet_ses.cc, uet_initiator.cc, uet_tx.cc, uet_frames.cc,
  // uet_timers.cc; NOTES.md says which holds what).
  void rx_one(const Frame& f, Time now);
  void rx_request(const wire::Decoded& d, Time now);
  Pdc* syn_target(const wire::Decoded& d, const wire::PdsRudRod& h, bool rod, bool trimmed);
  Pdc* known_target(const wire::Decoded& d, const wire::PdsRudRod& h, bool trimmed);
  void note_request(Pdc& p, uint16_t id, const wire::Decoded& d, const wire::PdsRudRod& h,
                    bool trimmed, Time now);
  bool request_is_new(Pdc& p, uint32_t psn, const wire::SesStandardRequest* ses, bool trimmed);
  // `ext`: where the SES header's extension (§4.5) is, when its opcode has one.
  Exec execute(Pdc& p, uint16_t id, const wire::SesStandardRequest& ses, const uint8_t* ext,
               std::span<const uint8_t> payload, size_t elided, uint32_t psn);
  // execute()'s body, always inline into rx_request() (every request runs it); execute() is
  // the out-of-line copy for rod_drain().
  Exec execute_inline(Pdc& p, uint16_t id, const wire::SesStandardRequest& ses,
                      const uint8_t* ext, std::span<const uint8_t> payload, size_t elided,
                      uint32_t psn);
  void rx_ack(const wire::Decoded& d, Time now);
  Time ack_response(Pdc& p, const wire::Decoded& d, uint32_t trig, bool trig_in_window, Time now);
  void ack_covered(Pdc& p, uint32_t cack, uint32_t trig, bool marked, const wire::PdsAckCc* cc,
                   Time data_sent, Time retx_sent, Time now);
  void nscc_on_ack(Pdc& p, const wire::PdsAckCc* cc, bool marked, Time rtt,
                   uint64_t in_flight_before, Time now);
  void rx_nack(const wire::Decoded& d, Time now);
  void rnr_nack(Pdc& p, uint32_t psn, wire::NackCode code);
  uint8_t rnr_count(const Pdc& p, uint32_t psn) const noexcept;
  void count_rnr(Pdc& p, uint32_t psn);
  void rx_ctrl(const wire::Decoded& d, Time now);
  void refuse(Pdc& p, uint32_t psn, uint8_t code, uint16_t message_id, uint16_t result = 0,
              uint32_t len = 0);
  void clear_to(Pdc& p, uint32_t clear_psn);
  void clear_for_close(Pdc& p, uint32_t clear_psn);
  void note_idle(Pdc& p, Time now);
  void note_held(Pdc& p, Time now);
  bool probe_held(Pdc& p, Time now);
  // A PDC's closing and freeing (uet_close.cc).
  void start_close(Pdc& p, Time now);
  void release_target(uint16_t id);
  void req_close_due(Pdc& p, uint16_t id, Time now);
  void close_acked(Pdc& p, uint16_t spdcid, uint32_t cack);
  void rx_close(const wire::PdsCtrl& h, Pdc* p, uint32_t src);
  void rx_req_close(const wire::PdsCtrl& h, Pdc* p, uint32_t src, Time now);
  bool build_ctrl(Pdc& p, uint16_t pdcid, wire::CtrlType type, uint32_t psn, Frame& f,
                  uint32_t payload = 0);
  // RCCC helpers.
  bool rccc_sender() const noexcept { return hot_.cc != CcMode::kNscc; }
  uint64_t credit_backlog(const Pdc& p) const noexcept {
    return p.ini.unsent_bytes + uint64_t{p.ini.resend_pending} * hot_.payload_bytes;
  }
  void on_credit(Pdc& p, uint64_t bytes);
  void take_grants(Time now);
  size_t tx_grants(std::span<Frame* const> out, size_t n, Time now);
  // What one PDC's turn in tx() did: sent a frame; nothing (its ready bit goes if only a
  // change from outside can give it work); or nothing yet, waiting on credit or a CLEAR.
  enum class Turn : uint8_t { kSent, kIdle, kWaiting };
  Turn tx_close(Pdc& p, uint16_t id, Frame& f);
  Turn tx_target(Pdc& p, uint16_t id, Frame& f, Time now);
  Turn tx_initiator(Pdc& p, uint16_t id, Frame& f, Time now);
  bool take_resend(Pdc& p, bool credit, Time now, uint32_t* psn);
  Turn tx_clear(Pdc& p, uint16_t id, Frame& f, Time now);
  // on_timer() by role; true when the PDC was freed.
  void timer_target(Pdc& p, uint16_t id, Time now, Time& next);
  bool timer_closing(Pdc& p, uint16_t id, Time now, Time& next);
  bool timer_initiator(Pdc& p, Time now, Time& next);
  void credit_timeout(Pdc& p);
  bool rto_fired(Pdc& p, Time now);
  void credit_blocked(Pdc& p, Time now);
  void ack_psn(Pdc& p, uint32_t psn, bool ce, Time now);
  // Records `psn` and advances the cumulative point past every PSN received in order. (Inline:
  // every request received runs it.)
  void mark_received(Pdc& p, uint32_t psn) noexcept {
    if (psn == p.tgt.rcv_base) {
      // In order (nearly every packet): rcv_base's bit is always clear (the loop below leaves
      // it so), and setting it would only have the loop clear it again.
      ++p.tgt.rcv_base;
    } else {
      const uint32_t idx = psn & mpr_mask_;
      p.tgt.rcv_bits[idx / 64] |= uint64_t{1} << (idx % 64);
    }
    for (;;) {
      const uint32_t b = p.tgt.rcv_base & mpr_mask_;
      if (!(p.tgt.rcv_bits[b / 64] >> (b % 64) & 1)) break;
      p.tgt.rcv_bits[b / 64] &= ~(uint64_t{1} << (b % 64));
      ++p.tgt.rcv_base;
    }
  }
  void mark_lost(Pdc& p, uint32_t psn);
  void covered_psn(Pdc& p, uint32_t psn, bool ce, Time data_sent, Time now);
  void retire_ops(Pdc& p);
  void retire(Pdc& p);  // retire_ops() for the other files
  void queue_nack(Pdc& p, wire::NackCode code, uint32_t psn);
  bool queue_response(Pdc& p, const Pdc::Response& r, bool repeat);
  Exec rx_send(Pdc& p, uint16_t id, std::span<const uint8_t> payload, size_t elided,
               const wire::SesStandardRequest& ses, uint32_t psn);
  bool msg_packet_end(RxMsg& m, const wire::SesStandardRequest& ses, uint64_t len) noexcept;
  void rx_msg_error(uint16_t id, const wire::SesStandardRequest& ses);
  // Tagged messages (uet_tagged.cc).
  Exec rx_tagged(Pdc& p, uint16_t id, std::span<const uint8_t> payload, size_t elided,
                 const wire::SesStandardRequest& ses, uint32_t psn);
  RxMsg* start_tagged(Pdc& p, uint16_t id, const wire::SesStandardRequest& ses, uint32_t psn);
  void tagged_tables();
  void unlink_trecv(uint32_t t);
  void unlink_unexpected(uint32_t u);
  // Atomics (uet_atomic.cc): the target's execution, its held results, the request's
  // extension header and operands.
  Exec rx_atomic(Pdc& p, const wire::SesStandardRequest& ses, const uint8_t* ext,
                 std::span<const uint8_t> payload, size_t elided, uint32_t psn);
  wire::SesReturnCode atomic_refusal(const wire::SesStandardRequest& ses, const uint8_t* ext,
                                     std::span<const uint8_t> payload, size_t elided);
  void free_result(uint16_t result) noexcept;
  const uint8_t* result_bytes(uint16_t result) const noexcept {
    return tab().amo_results.data() + size_t{result - 1u} * kMaxAtomicBytes;
  }
  bool put_atomic(const Op& o, wire::FrameBuilder& b);
  // Rendezvous (uet_rendezvous.cc): the initiator's sources and the READs they answer, the
  // target's requests and the READs it posts.
  uint32_t rdv_eager() const noexcept {
    return hot_.payload_bytes - static_cast<uint32_t>(wire::SesRendezvous::kSize);
  }
  static uint32_t rdv_key(uint32_t source, uint16_t gen) noexcept {
    return 0x80000000u | uint32_t{gen & 0x7FFFu} << 16 | source;
  }
  static bool is_rdv_key(uint64_t key) noexcept { return key >> 31 == 1; }
  void rdv_expose(Pdc& p, Op& o);
  void rdv_release(Op& o) noexcept;
  void rdv_free(uint32_t i) noexcept;
  bool put_rendezvous(const Op& o, wire::FrameBuilder& b);
  wire::SesReturnCode rdv_read_check(uint32_t peer, uint64_t key, uint64_t at, uint64_t len);
  const uint8_t* rdv_bytes(uint32_t key, uint64_t offset) const noexcept {
    return tab().rdv[key & 0xFFFF].base + offset;
  }
  void rdv_hold(Pdc& p, Pdc::Response& r);
  void rdv_cleared(uint32_t key, uint16_t len);
  Time rdv_timer(Time now);
  Exec rx_rendezvous(Pdc& p, const wire::SesStandardRequest& ses, const uint8_t* ext,
                     std::span<const uint8_t> payload, size_t elided, uint32_t psn);
  // rx_rendezvous()'s two ways on, once message state `m` holds the request.
  Exec rdv_untagged(Pdc& p, RxMsg& m, const RdvRead& rd, uint16_t message_id,
                    std::span<const uint8_t> payload, uint32_t psn);
  Exec rdv_tagged(Pdc& p, RxMsg& m, const RdvRead& rd, std::span<const uint8_t> payload,
                  uint32_t psn);
  void rdv_keep(RxMsg& m, std::span<const uint8_t> payload);
  absl::Status rdv_matched(const TaggedRecv& tr, uint32_t u);
  bool rdv_read(RxMsg& m, const RdvRead& rd);
  bool rdv_fetch(RxMsg& m, const RdvRead& rd) {
    return config_.rendezvous_push ? rdv_cts(m, rd) : rdv_read(m, rd);
  }
  bool rdv_cts(RxMsg& m, const RdvRead& rd);
  static bool is_cts(const Op& o) noexcept { return o.rdv != 0 && o.op == Opcode::kRecv; }
  void cts_posted(const Pdc& p, const Op& o) noexcept;
  bool cts_holds(const Op& o) const noexcept;
  void cts_drop(Op& o) noexcept;
  void cts_release(RxMsg& m);
  Exec rdv_push(Pdc& p, const wire::SesStandardRequest& ses, uint32_t psn);
  void rdv_hand_over(uint32_t i);
  void rdv_pushed(const Op& w);
  Exec rdv_sink(Pdc& p, const wire::SesStandardRequest& ses, uint64_t key, uint64_t at,
                uint64_t len, std::span<const uint8_t> payload, uint32_t psn);
  Time sink_timer(Time now);
  static bool is_rdv_send(const Op& o) noexcept {
    return o.rdv != 0 && (o.op == Opcode::kSend || o.op == Opcode::kTaggedSend);
  }
  void rdv_read_done(const Op& o);
  void rdv_place(const Op& o, uint64_t at, std::span<const uint8_t> data);
  void complete_rdv(RxMsg& m, OpStatus status);
  // Deferrable sends (uet_deferrable.cc): the initiator's slots and restarts, the target's
  // deferred messages, reservations and RTRs.
  absl::Status defer_post(DeliveryMode mode, uint32_t peer, Op op, const void* buffer,
                          const char* verb);
  uint64_t defer_token(uint32_t slot) const noexcept {
    // (15 bits of generation: bit 31 set names a rendezvous source, rdv_key)
    return uint64_t{tab().defer[slot].gen & 0x7FFFu} << 16 | slot;
  }
  void defer_free(uint32_t slot) noexcept;
  void defer_retired(const Op& o);
  bool defer_restart(uint32_t slot);
  Exec rx_rtr(Pdc& p, const wire::SesStandardRequest& ses, uint32_t psn);
  Exec rx_deferrable(Pdc& p, uint16_t id, std::span<const uint8_t> payload, size_t elided,
                     const wire::SesStandardRequest& ses, uint32_t psn);
  bool defer_message(Pdc& p, uint16_t id, const wire::SesStandardRequest& ses);
  bool bind_restart(Pdc& p, uint16_t id, const wire::SesStandardRequest& ses, uint32_t psn,
                    uint32_t u);
  uint32_t find_deferred(uint32_t peer, uint64_t token) const noexcept;
  void free_deferred(uint32_t u);
  bool post_rtr(uint32_t u);
  void reserve_untagged();
  absl::Status defer_matched(const TaggedRecv& tr, uint32_t u);
  Time defer_timer(Time now);
  bool trecv_waits(uint64_t tag, uint32_t peer) const noexcept;
  bool stage_unexpected(RxMsg& m, uint64_t length);
  void free_unexpected(uint32_t u);
  // Receive `tr` takes unexpected entry `u` (in the arrival list): placed now, bound to it
  // while it arrives, or its rendezvous READ or deferred restart started.
  absl::Status take_unexpected(const TaggedRecv& tr, uint32_t u);
  void complete_trecv(const TaggedRecv& tr, const RxMsg& m, const uint8_t* staged);
  void close_tagged(RxMsg& m);
  static bool tag_matches(const TaggedRecv& tr, uint64_t tag, uint32_t peer) noexcept {
    return ((tr.tag ^ tag) & ~tr.ignore) == 0 && (tr.source == 0 || tr.source == peer);
  }
  // §4.1 job-based access: kNull when the request's target address (SES bytes 4..11 and
  // `rel`, alike in the three request headers) names this endpoint's job, process and an
  // enabled resource index of the current generation; else the code refusing it, counted.
  // (Inline: every request checks it; the common case is one compare.)
  wire::SesReturnCode check_access(const uint8_t* ses) noexcept {
    if (wire::load_be_n<8>(ses + 4) == access_word_ && (ses[1] & kRelBit) == 0) [[likely]] {
      return wire::SesReturnCode::kNull;
    }
    return access_refusal(ses);
  }
  wire::SesReturnCode access_refusal(const uint8_t* ses) noexcept;
  void update_access_word() noexcept;
  // `peer`: the reader (a rendezvous source answers only its send's peer; 0: none).
  Pdc::Response read_response(const wire::SesStandardRequest& ses, uint32_t psn,
                              uint32_t peer = 0);
  // §4.2: a WRITE packet's bytes go to [at, at + len) of region `key` (a SOM packet carries
  // its payload in full; the others say their length).
  struct Placement {
    uint64_t key = 0, at = 0, len = 0;
  };
  static Placement write_placement(const wire::SesStandardRequest& ses, size_t payload) noexcept {
    return {ses.match_bits(), ses.buffer_offset() + (ses.som() ? 0 : ses.message_offset()),
            ses.som() ? payload : ses.payload_length()};
  }
  // Whether `key` names a registered region of the current generation (a deregistered one's
  // key is refused: transport/region_table.h), and (for such a key) whether [at, at + len)
  // lies in it. (Inline here, as check_region: every WRITE packet checks its placement.)
  bool key_ok(uint64_t key) const noexcept { return regions_.find(key) != nullptr; }
  static bool in_region(const Region& r, uint64_t at, uint64_t len) noexcept {
    return at <= r.length && len <= r.length - at;
  }
  bool region_ok(uint64_t key, uint64_t at, uint64_t len) const noexcept {
    const Region* r = regions_.find(key);
    return r != nullptr && in_region(*r, at, len);
  }
  // The region a WRITE packet's bytes land in, or null: refused (check_region says why).
  const Region* writable(uint64_t key, uint64_t at, uint64_t len) const noexcept {
    const Region* r = regions_.find(key);
    return r != nullptr && in_region(*r, at, len) ? r : nullptr;
  }
  // A checked key's memory.
  uint8_t* region_base(uint64_t key) const noexcept {
    return regions_[Regions::slot_of(key)].base;
  }
  // The same for an SES request: kNull, or the code refusing it (kBadMkey, kBadAddr), counted.
  wire::SesReturnCode check_region(uint64_t key, uint64_t at, uint64_t len) noexcept {
    const Region* r = regions_.find(key);
    if (r == nullptr) {
      ++rare().rx_bad_key;
      return wire::SesReturnCode::kBadMkey;
    }
    if (!in_region(*r, at, len)) {
      ++rare().rx_bad_range;
      return wire::SesReturnCode::kBadAddr;
    }
    return wire::SesReturnCode::kNull;
  }
  // deregister_memory()'s steps (uet_endpoint.cc): what still uses [base, base + length) at
  // this endpoint as an initiator; the READ answers queued for `key` refused BAD_MKEY.
  uint32_t ops_using(const uint8_t* base, uint64_t length) const noexcept;
  void refuse_queued_reads(uint32_t key) noexcept;
  RxMsg* find_msg(uint16_t pdc, uint16_t message_id) noexcept;
  RxMsg* take_msg(Pdc& p, uint32_t psn);
  void deliver_recvs();
  absl::StatusOr<uint16_t> initiator_pdc(uint32_t peer, bool rod, uint16_t pid,
                                         const char* verb);
  absl::Status post_op(uint32_t peer, bool rod, const Op& op, const char* verb);
  absl::Status post_verb(DeliveryMode mode, uint32_t peer, const Op& op, const void* buffer,
                         const char* verb);
  absl::Status post_in_mode(DeliveryMode mode, uint32_t peer, const Op& op, const char* verb);
  void fail_pdc(Pdc& p, OpStatus why);
  // An ACK to send (§3.7, §3.8; uet_frames.cc): send_ack() decides it from the target PDC's
  // state (plan_ack), has build_ack() encode it, which changes nothing, and accounts for it
  // once built (ack_sent).
  struct AckPlan {
    const Pdc::Response* r = nullptr;  // the response it carries (one per ACK), if any
    bool ce = false;                   // it echoes the CE mark of `trigger`
    uint32_t trigger = 0;              // the PSN it names
  };
  bool send_ack(Pdc& p, uint16_t pdcid, Frame& f);
  AckPlan plan_ack(Pdc& p);
  bool build_ack(const Pdc& p, uint16_t pdcid, const AckPlan& a, Frame& f);
  void ack_sent(Pdc& p, const AckPlan& a);
  const Pdc::Response* take_response(Pdc& p);
  void ack_cc_state(const Pdc& p, const AckPlan& a, wire::HeaderWords<wire::PdsAckCc>& ack);
  uint64_t sack_bitmap(const Pdc& p, uint32_t sack_base) const noexcept;
  bool ack_response_header(const Pdc::Response& r, wire::SesResponse* rsp,
                           wire::SesResponseData* rd, wire::FrameBuilder& b, size_t capacity,
                           size_t* elided);
  bool put_read_data(wire::SesResponseData& rd, uint16_t message_id, const uint8_t* src,
                     uint32_t len, wire::FrameBuilder& b, size_t capacity, size_t* elided);
  uint8_t advertised_mpr(const Pdc& p) const noexcept;
  bool mpr_room(const Pdc& p) const noexcept;
  bool build_nack(Pdc& p, uint16_t pdcid, Frame& f);
  bool build_stateless_nack(const StatelessNack& n, Frame& f);
  void queue_stateless_nack(uint32_t ip, uint16_t peer_pdcid, uint8_t code, uint32_t psn,
                            Stateless kind = Stateless::kNack, uint16_t local_pdcid = 0,
                            const uint32_t* payload = nullptr);
  bool build_data(Pdc& p, uint16_t pdcid, uint32_t psn, const Op& o, uint32_t packet, bool retx,
                  Frame& f, Time now);
  [[gnu::cold, gnu::noinline]] bool frame_too_small(Pdc& p, Time now);
  void data_pds(Pdc& p, uint16_t pdcid, uint32_t psn, bool retx, bool last, uint32_t payload,
                Time now, wire::HeaderWords<wire::PdsRudRodCc>& pds);
  static void data_ses(const Op& o, uint32_t packet, uint64_t offset, uint32_t len, bool last,
                       wire::HeaderWords<wire::SesStandardRequest>& ses);
  wire::Encap encap_for(const Pdc& p, bool control, uint16_t ev) const;
  void set_peer(Pdc& p, uint32_t ip4);  // peer_ip4, peer_mac and the encap templates
  static uint16_t ev_port(const Pdc& p, uint16_t ev) noexcept;
  // The source port a frame goes out with: `port`, unless UetConfig::udp_source_port fixes it.
  uint16_t wire_sport(uint16_t port) const noexcept {
    return hot_.udp_source_port != 0 ? hot_.udp_source_port : port;
  }
  void on_rtt_sample(Pdc& p, Time rtt) noexcept;
  Time rto_estimate(const Pdc& p) noexcept;
  // RFC 8985 §6.2 step 4: the configured window, plus reo_wnd_mult steps of min_rtt / 4 once
  // resends proved spurious, up to srtt and short of the RTO (s.sent + rto, rto_fired): ours
  // is as short as 2 srtt, and a loss handed to it costs a backoff and NSCC's window.
  Time reorder_window(const Pdc& p) const noexcept {
    if (p.ini.srtt == 0 || hot_.reorder_srtt_pct == 0) return hot_.reorder_window;
    const Time base = std::min(hot_.reorder_window, p.ini.srtt * hot_.reorder_srtt_pct / 100);
    if (p.ini.reo_wnd_mult != 0) [[unlikely]] {
      return widened_window(p, base);
    }
    return base;
  }
  [[gnu::noinline]] static Time widened_window(const Pdc& p, Time base) noexcept;
  void note_retx_ack(Pdc& p, const Slot& s, bool retx);
  void note_spurious(Pdc& p, bool duplicate);
  void rack_rounds(Pdc& p);
  void arm_tlp(Pdc& p, Time now) noexcept;
  void send_tlp(Pdc& p);
  void rack_detect(Pdc& p, Time now);

  // Other delivery modes: which verbs each carries and their frames' encapsulation
  // (uet_modes.cc), ROD's target side (uet_rod.cc), RUDI (uet_rudi.cc), UUD (uet_uud.cc).
  static absl::Status check_mode(DeliveryMode m, Opcode op, const char* verb);
  wire::Encap encap_to(uint32_t ip, const wire::MacAddr& mac, bool control, uint16_t sport) const;
  size_t tx_modes(std::span<Frame* const> out, Time now);
  // Whether tx_modes() has anything to send: RUDI responses, resends or new packets, UUD
  // datagrams (tested inline by tx(): most endpoints use neither mode).
  bool modes_pending() const noexcept {
    return modes_ != nullptr && (modes_->rudi.pending() || !modes_->uud.empty());
  }
  bool rod_stage(Pdc& p, const wire::Decoded& d, const wire::SesStandardRequest* ses,
                 uint32_t psn);
  bool rod_staged(const Pdc& p, uint32_t psn) const noexcept;
  void rod_drain(Pdc& p, uint16_t id);
  void rod_release_buffer(Pdc& p) noexcept;
  absl::Status post_rudi(const PeerOp& op, const char* verb);
  size_t tx_rudi(std::span<Frame* const> out, Time now);
  bool build_rudi_req(uint32_t slot, bool retx, Frame& f, Time now);
  bool build_rudi_resp(const RudiRsp& r, Frame& f);
  void rx_rudi_req(const wire::Decoded& d);
  void rx_rudi_resp(const wire::Decoded& d);
  void retire_rudi();
  Time rudi_timer(Time now);
  absl::Status post_uud(const PeerOp& op, const char* verb);
  size_t tx_uud(std::span<Frame* const> out);
  bool build_uud(const PeerOp& u, Frame& f);
  void rx_uud(const wire::Decoded& d);

  int32_t alloc_pdc(Role role);
  [[gnu::noinline]] void grow_window(Pdc& p);
  void free_pdc(uint16_t id);
  uint64_t next_random() noexcept;
  // null: never allocated. A frame's look-up: the PDC it reaches may have work for tx().
  Pdc* pdc(uint16_t id) noexcept {
    Pdc* p = pdcs_.get(id);
    if (p != nullptr && p->role != Role::kFree) mark_ready(*p);
    return p;
  }

  std::shared_ptr<const UetShared> shared_;
  const UetConfig& config_;  // shared_'s: its local_ip4, local_mac and seed are not this host's
  uint32_t local_ip4_;
  wire::MacAddr local_mac_;
  uint32_t mpr_mask_ = 0;  // hot_.mpr - 1 (a power of 2): PSN -> position in a PDC's rings
  // The fields of config_ the per-packet paths read, copied in: at a fixed offset from `this`
  // they cost no load of the shared config's address.
  struct HotConfig {
    uint64_t window_bytes;
    Time ack_delay, idle_timeout, base_rtt, reorder_window, rto, min_rto, max_rto;
    Time hold_probe_after;
    uint32_t payload_bytes, mpr, rod_window, max_pdcs, ack_every, reorder_threshold;
    uint32_t reorder_srtt_pct, rto_srtt_pct, rto_rtt_max_pct, reorder_adapt_recoveries;
    uint32_t max_retries;
    uint16_t udp_source_port;
    CcMode cc;
    bool tx_by_reference, ack_out_of_order, tlp, rack, udp_checksum;
    explicit HotConfig(const UetConfig& c) noexcept
        : window_bytes(c.window_bytes), ack_delay(c.ack_delay), idle_timeout(c.idle_timeout),
          base_rtt(c.base_rtt), reorder_window(c.reorder_window), rto(c.rto),
          min_rto(c.min_rto), max_rto(c.max_rto), hold_probe_after(c.hold_probe_after),
          payload_bytes(c.payload_bytes), mpr(c.mpr), rod_window(c.rod_window),
          max_pdcs(c.max_pdcs), ack_every(c.ack_every), reorder_threshold(c.reorder_threshold),
          reorder_srtt_pct(c.reorder_srtt_pct), rto_srtt_pct(c.rto_srtt_pct),
          rto_rtt_max_pct(c.rto_rtt_max_pct),
          reorder_adapt_recoveries(c.reorder_adapt_recoveries), max_retries(c.max_retries),
          udp_source_port(c.udp_source_port), cc(c.cc), tx_by_reference(c.tx_by_reference),
          ack_out_of_order(c.ack_out_of_order), tlp(c.tlp), rack(c.rack),
          udp_checksum(c.udp_checksum) {}
  };
  const HotConfig hot_;
  uint64_t window(const Pdc& p) const noexcept {
    return hot_.cc != CcMode::kRccc
               ? std::min<uint64_t>(hot_.window_bytes, p.ini.nscc.window())
               : hot_.window_bytes;
  }
  cc::RcccReceiver rccc_rx_;  // target side: the senders of this endpoint, by target PDC id
  // Target PDCs with credit to send (grows in take_grants() to max_pdcs).
  GrowRing<uint16_t> credit_ring_;
  uint32_t credit_head_ = 0, credit_tail_ = 0;
  // Target PDCs whose REQ_CLOSEs all went unanswered, oldest first: a SYN that finds the
  // table full takes the oldest still unanswered (grows to max_pdcs; stale entries skipped).
  GrowRing<uint16_t> unanswered_;
  uint32_t unanswered_head_ = 0, unanswered_tail_ = 0;
  int32_t reclaim_unanswered();
  pds::PdcTable pdcs_;  // grows to max_pdcs
  uint32_t rr_ = 0;     // round-robin position in pdcs_.active() for tx()
  void mark_ready(const Pdc& p) noexcept { pdcs_.mark_ready(p); }
  // Whether p's ready bit may go: only a frame for it, a post or a timer of its that fires
  // could give it work (transport/ready_bits.h). An all-to-all keeps a PDC to every peer open.
  bool tx_may_act(const Pdc& p) const noexcept;
  Time deadline_ = kNever;        // earliest timer of any PDC (may be early, never late)
  // Taken at the first such packet, at most kStateless.
  static constexpr uint32_t kStateless = 64;
  GrowRing<StatelessNack, 4> stateless_;
  uint32_t stateless_head_ = 0, stateless_tail_ = 0;
  // Registered memory: a key = its slot + 1, and the slot's generation in bits 16..23
  // (transport/region_table.h; rendezvous keys, rdv_key, have bit 31 set).
  using Regions = RegionTable<16>;
  static_assert(Regions::kMaxRegions == kMaxRegions);
  Regions regions_;
  bool streamed_ = false;        // streaming stores since the last fence (rx() ends with one)
  // SEND receive side: posted buffers [recv_head_, recv_tail_), of which [recv_head_,
  // recv_claim_) are claimed by messages (completed in this order); message states.
  GrowRing<Recv> recvs_;  // by the counters below (grows in post_recv() to max_recvs)
  uint32_t recv_head_ = 0, recv_claim_ = 0, recv_tail_ = 0;
  std::vector<RxMsg> rx_msgs_;  // max_recv_messages, from the first post_recv()
  uint32_t rx_msgs_used_ = 0;
  // The tagged, atomic-result, rendezvous and deferrable tables (SesTables), made at the
  // first use of any, so a host that runs WRITEs and SENDs alone carries none of them; const
  // members read them as empty.
  struct SesTables {
    // Tagged messages (uet_tagged.cc): posted receives (max_trecvs) and unexpected messages
    // (max_unexpected), each a table with a free list and a list in posting (arrival) order;
    // the unexpected messages' bytes in the arena (unexpected_bytes), their entries by
    // offset. All taken when the endpoint first sees a tagged receive or message.
    std::vector<TRecv> trecvs;
    std::vector<uint32_t> trecv_free;
    LinkedList trecv_list;
    std::vector<Unexp> unexp;
    std::vector<uint32_t> unexp_free;
    LinkedList unexp_list;
    std::vector<uint32_t> unexp_by_at;
    uint64_t arena_used = 0;
    // Atomics: the fetched values held (atomic_results x kMaxAtomicBytes) and the free ones
    // (result numbers, 1-based), taken at the first fetching atomic.
    std::vector<uint8_t> amo_results;
    std::vector<uint16_t> amo_free;
    // Rendezvous sources (rendezvous_sources, taken at the first rendezvous send), the free
    // ones.
    std::vector<RdvSource> rdv;
    std::vector<uint32_t> rdv_free;
    // Deferrable sends (deferrable_sends, taken at the first), the free ones. Target: its
    // deferred messages (entries of unexp).
    std::vector<DeferSlot> defer;
    std::vector<uint32_t> defer_free;
    std::vector<uint32_t> deferred;
  };
  Rare<SesTables> tables_;
  SesTables& tab() { return tables_.get(); }
  const SesTables& tab() const noexcept { return tables_.get(); }
  std::unique_ptr<uint8_t[]> arena_;  // the unexpected messages' bytes (tagged, above)
  // §4.1: the states of the resource indexes served (resource_indexes); SES bytes 4..11 of a
  // request in absolute addressing for this job and PID at resource index 0's generation
  // (check_access).
  struct Resource {
    uint8_t generation = 0;
    bool enabled = true;
  };
  std::vector<Resource> resources_;  // empty until the first change: all as Resource{}
  Resource resource(uint16_t ri) const noexcept {
    return resources_.empty() ? Resource{} : resources_[ri];
  }
  uint64_t access_word_ = 0;
  uint32_t rdv_live_ = 0;  // rendezvous sources live (tab().rdv)
  // Receives waiting for a pushed rendezvous WRITE, and the generation in their sink keys.
  uint32_t sinks_live_ = 0;
  uint16_t sink_gen_ = 0;
  // Deferrable sends: restarts an RTR asked for that found no room to post (retried by
  // on_timer). Target: its deferred messages (tab().deferred) the untagged ones no receive
  // has reserved yet, and the reserved ones (the deferral timer's).
  uint32_t restarts_due_ = 0;
  uint32_t deferred_untagged_ = 0, deferred_reserved_ = 0;
  uint32_t claim_gen_ = 0;  // FI_CLAIM handles: a claim names one claiming, never a reuse
  static constexpr uint8_t kRelBit = 0x08;  // §4.1 `rel`, byte 1 of every request header
  // Waiting to be polled from completions_head_; polled entries are dropped once they are
  // half the vector (poll_completions), so it holds fewer than twice the waiting ones.
  std::vector<Completion> completions_;
  size_t completions_head_ = 0;
  // ROD's reorder buffers, RUDI's initiator and target state, UUD's datagram queue: made
  // together when one of those modes is first used (modes(): a post, a ROD request staged, a
  // RUDI request received), so an endpoint that runs RUD alone carries none of them; each
  // makes its tables at its own first use, as before.
  struct Modes {
    pds::RodBuffers rod;
    pds::Rudi rudi;
    pds::UudQueue uud;
  };
  std::unique_ptr<Modes> modes_;
  Modes& modes() {
    if (modes_ == nullptr) [[unlikely]]
      return make_modes();
    return *modes_;
  }
  [[gnu::cold, gnu::noinline]] Modes& make_modes();
  size_t modes_bytes() const noexcept;  // the Modes and their tables, 0 until made
  uint64_t rng_;
  // The counters a fault-free run moves per packet (UET_HOT_COUNTERS) live in the endpoint;
  // the rest (errors, other modes and verbs) in a UetCounters made at the first such event,
  // so a host that never sees one does not carry its 1.1 KiB.
  struct HotCounters {
#define UET_HOT_FIELD(type, name) type name = 0;
    UET_HOT_COUNTERS(UET_HOT_FIELD)
#undef UET_HOT_FIELD
  };
  HotCounters counters_;
  Rare<UetCounters> rare_counters_;
  UetCounters& rare() { return rare_counters_.get(); }
  const UetCounters& rare() const noexcept { return rare_counters_.get(); }
  Time now_ = 0;
  // TSS (§5): reserve the header after the encapsulation; seal and finish the frame.
  std::unique_ptr<tss::Sublayer> tss_;
  uint32_t tss_overhead_ = 0;  // header + tag when sealing, else 0
  void tss_begin(wire::FrameBuilder& b) {
    if (tss_ != nullptr) b.add_bytes(tss_->header_bytes());
  }
  // Whether frames carry a UDP checksum: not when sealed unless TssConfig::udp_checksum (the
  // tag covers the same bytes; spec/uet.md §5.2).
  bool udp_checksum() const noexcept {
    return hot_.udp_checksum && (tss_ == nullptr || config_.tss.udp_checksum);
  }
  // `payload`: the frame's last bytes, reserved but not yet copied, which sealing encrypts
  // from registered memory into the frame (TSS only; empty otherwise).
  bool finish(wire::FrameBuilder& b, Frame& f, size_t elided,
              std::span<const uint8_t> payload = {});
  // Opens a sealed frame (or refuses a clear one under TSS); false: dropped and counted.
  bool tss_open(const Frame& f, wire::DecodedStorage& decoded, bool trimmed);
};

}  // namespace uet
