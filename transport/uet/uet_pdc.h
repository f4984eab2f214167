// The PDS state of one PDC (spec/uet.md §3.3): the operations its initiator posts, the PSNs it
// has in flight, and the Pdc itself with its initiator's and its target's sides. Internal to
// transport/uet/: the engine's files and the PDC table (uet_pdc_table.h) name these types;
// everything else sees UetEndpoint alone.
//
// Ownership: every Pdc lives in the endpoint's PDC table and is touched only by the endpoint's
// thread; its windows (mpr) and rings (max_ops, mpr) are bounded by the endpoint's UetConfig.
#pragma once

// Only transport/uet/'s target and its unit tests define the macro; uet_endpoint.h admits this
// header for its own members.
#ifndef UET_PRIVATE_TRANSPORT_UET
#ifndef UET_ENDPOINT_H_MEMBERS
#error "transport/uet/uet_pdc.h is private to transport/uet (use transport/uet/uet_endpoint.h)"
#endif
#endif

#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "cc/nscc.h"
#include "cc/rccc.h"
#include "pathsel/path_selector.h"
#include "transport/api.h"
#include "transport/pool.h"
#include "transport/wire/builder.h"

// pds: these are the PDS sublayer's state (§3), as ses/ and cms/ would be the other rooms.
namespace uet::pds {

// One posted operation (write, read, send, tagged send, atomic), as the initiator tracks it:
// the verb as posted (transport/api.h), then what UET adds to it and its progress.
struct Op : PostedVerb {
  // atomic (§4.5.1): src the operands, dst the fetched values (null: not fetching), length
  // their bytes; compare the CSWAP compare values or MSWAP masks.
  AtomicOp amo_op = AtomicOp::kSum;
  AtomicType amo_type = AtomicType::kUint64;
  const uint8_t* compare = nullptr;
  uint64_t tag = 0;  // tagged send: match bits (imm: its 64 bits of header data)
  SesAddress to{};   // §4.1: the process and resource at the target
  // `to` from our job, packed when posted as it lies in the SES header's first two words
  // (internal::address_words; PDC operations only).
  std::array<uint64_t, 2> address{};
  uint8_t rc = 0;  // the SES return code that failed it (§4.9), 0 if none
  OpStatus status = OpStatus::kSuccess;
  uint16_t message_id = 0;  // read: chunk k is message message_id + k
  uint32_t packets = 0;
  uint32_t unacked = 0;
  bool failed = false;
  bool abandoned = false;  // send: given up (RNR); remaining PSNs go out with SES `ie`
  // A WRITE's or SEND's payload, which needs RCCC credit (not a READ's or an atomic's
  // operands): known at post, so the data path tests one byte.
  bool carries = true;
  // Rendezvous (§4.5.3): a send's source (its number + 1), whose READs must all be done
  // before it completes; or a READ's receive (RxMsg number + 1), which it completes. 0: none.
  uint32_t rdv = 0;
  // A rendezvous send's rest, WRITTEN on the target's CTS (NOTES.md, "Rendezvous"): the
  // source's number + 1 (its key in `tag`); it completes the send instead of itself. On the
  // send, the same once it handed its completion to that WRITE (it completes nothing). 0: none.
  uint32_t push = 0;
  // Deferrable send (§4.2): its restart slot + 1, the token in remote_offset and our PID in
  // rkey; or (op kRecv) a target's DEFERRABLE_RTR, the token in tag. 0: neither.
  uint32_t defer = 0;
  uint32_t first_psn = 0;  // its packet 0's PSN, once sent (PDC operations only)
};
// An operation carried without a PDC (RUDI §3.5, UUD §3.6): it names its peer.
struct PeerOp : Op {
  uint32_t peer = 0;
  wire::MacAddr mac{};
};
// One PSN in flight at the initiator, in 16 bytes: a flight's window is most of an initiator's
// memory. Its packet within the operation is psn - Op::first_psn (an operation's PSNs are
// consecutive); the RNR NACKs it received, rare, are counted beside the window
// (Pdc::Initiator::rnr).
struct Slot {
  // State bits, and in `tries` the retry count (bits 0..6) and kRetransmitted. Enums of their
  // own, not character types: a uint8_t may alias any store, and would be read again after each.
  enum State : uint8_t {
    kInFlight = 1,
    kAcked = 2,
    kResend = 4,
    kRnrWait = 8,       // NACKed RNR: resent when the RTO fires, not counted as a loss
    kInferred = 16,     // resent because RACK inferred its loss
    kRnrCounted = 32,   // Initiator::rnr holds its RNR NACKs (else none)
    kResentAgain = 64,  // sent three times or more: a RETX echo names no one copy
  };
  enum Tries : uint8_t {
    kRetries = 0x7F,        // timeouts with the peer silent, at most max_retries + 1 (<= 65)
    kRetransmitted = 0x80,  // sent more than once: no RTT sample from it (Karn)
  };
  Time sent = 0;
  uint16_t op = 0;   // the operation's posting count mod 2^16: its key in ops (<= 65536 entries)
  uint16_t len = 0;  // data bytes this PSN moves (read: the data it asks for), <= payload_bytes
  uint16_t ev = 0;   // EV index (< 16384) of the last transmission, for the path selector
  State state{};     // an ACK leaves kAcked alone: the other bits are read only before it
  Tries tries{};

  bool in_flight() const noexcept { return (state & kInFlight) != 0; }
  bool acked() const noexcept { return (state & kAcked) != 0; }
  bool resend() const noexcept { return (state & kResend) != 0; }
  bool rnr_wait() const noexcept { return (state & kRnrWait) != 0; }
  bool inferred() const noexcept { return (state & kInferred) != 0; }
  bool rnr_counted() const noexcept { return (state & kRnrCounted) != 0; }
  bool retransmitted() const noexcept { return (tries & kRetransmitted) != 0; }
  bool resent_again() const noexcept { return (state & kResentAgain) != 0; }
  // In flight, neither acknowledged nor waiting after an RNR NACK.
  bool outstanding() const noexcept {
    return (state & (kInFlight | kAcked | kRnrWait)) == kInFlight;
  }
  void set(State bits) noexcept { state = static_cast<State>(state | bits); }
  void clear(State bits) noexcept { state = static_cast<State>(state & ~bits); }
  uint32_t retries() const noexcept { return tries & kRetries; }
  void add_retry() noexcept {  // max_retries <= 64: the count never reaches kRetransmitted
    tries = static_cast<Tries>(tries + 1);
  }
};
static_assert(sizeof(Slot) == 16);
enum class Role : uint8_t { kFree, kInitiator, kTarget };
// What a PDC holds in either role: what tx(), rx_ack() and rx_request() look at first.
struct PdcHead {
  Role role = Role::kFree;
  // Which member of Pdc's role union is constructed: the role the PDC has, or had when it
  // was freed (that state stays until the id is allocated again, for a late look).
  Role state = Role::kFree;
  uint16_t id = 0;           // its index in the PDC table (its PDC id on the wire)
  bool rod = false;          // ROD (requests ROD_REQ, executed in PSN order) or RUD
  bool established = false;  // initiator: an ACK arrived, SYN no longer sent
  bool closing = false;
  bool ctrl_pending = false;  // a CLOSE (initiator) / REQ_CLOSE (target) to send
  uint8_t close_tries = 0;    // CLOSEs / REQ_CLOSEs sent
  uint16_t peer_pdcid = 0;    // learned from the first ACK (initiator) or the SYN (target)
  uint16_t ev_base = 0;       // EV index i travels as UDP source port f(ev_base, i)
  uint16_t peer_pid = 0;      // initiator: the PIDonFEP its requests are for (§4.1)
  uint32_t start_psn = 0;     // §3.3: the PDC's first PSN (the SYN's PDC info)
  uint32_t active_index = 0;  // position in the active list of PDCs
  uint32_t peer_ip4 = 0;
  // §3.12: idle since idle_deadline - idle_timeout (initiator) or 2 x idle_timeout (target).
  Time idle_deadline = kNever;
};
struct Pdc : PdcHead {
  // SES responses, one per ACK: refusals (§4.6) and read data (§4.7). A PSN with a
  // response is recorded as received only when the ACK carrying it is built (its bit in
  // rsp_bits until then), so no ACK acknowledges it without its answer. Bounded (mpr
  // entries): when full, the request is dropped and comes again.
  struct Response {
    uint8_t code = 0;     // SesReturnCode; kOk with data for a READ
    bool data = false;    // read data: `len` bytes of region `key` at `offset`
    bool repeat = false;  // answers a duplicate: the PSN is already recorded
    uint16_t message_id = 0;
    uint16_t result = 0;  // a fetching atomic's values: held result result - 1 (0: read data)
    uint32_t psn = 0;
    uint32_t key = 0;
    uint32_t len = 0;
    uint64_t offset = 0;
    Time queued = 0;  // §3.8.1: the ACK's service_time counts from here
  };
  // Guaranteed delivery (§3.3 clear_psn_offset): a refused PSN (an SES response with an
  // error code) stays a hole in the receive state -- not covered by CACK, not in the SACK
  // bitmap -- with its refusal stored here, until the initiator's clear PSN passes it (it
  // clears PSNs below its oldest unacknowledged one, and acknowledges a refused PSN only
  // through the response that carries its refusal). A duplicate is answered with the
  // stored refusal. So no ACK can acknowledge a refused PSN without its refusal.
  // A fetching atomic's answer is held the same way (code OK, `result` its values: Response),
  // and a rendezvous source's READ answer (code OK, `rdv`: read again for a duplicate).
  struct Refusal {
    uint8_t code = 0;
    uint8_t len = 0;  // a fetching atomic's value bytes (at most kMaxAtomicBytes)
    uint16_t message_id = 0;
    uint16_t result = 0;
    uint16_t rdv_len = 0;  // a rendezvous READ's answer: the bytes it carried ...
    uint32_t rdv = 0;      // ... of the source with this key (NOTES.md, "Rendezvous")
  };
  struct Nack {
    uint8_t code;
    uint32_t psn;
  };

  // The initiator's side of a PDC: its send window (slots, RTO, RACK, TLP), its
  // operations, NSCC and RCCC at the sender, and its close. What tx() and rx_ack() touch
  // per packet comes first.
  struct Initiator {
    bool speculating = true;          // no grant has arrived and base_rtt has not passed
    bool credit_req_pending = false;  // a CREDIT_REQ to send
    bool req_ack_pending = false;     // a REQ_ACK to send (hold_probe_after)
    uint8_t req_acks = 0;             // ... sent since the target last answered
    bool tlp_done = false;            // a probe went since the last progress
    bool results_held = false;        // a fetching atomic was answered: the target holds it
    // RACK (RFC 8985 §6.2): a PSN was delivered out of order; a PSN RACK inferred lost was
    // delivered first by its resend (a loss repaired: the PDC is in recovery).
    bool reordering_seen = false;
    bool loss_repaired = false;
    // The host's frame was too small for the packet to send; still so when the RTO fires,
    // the PDC fails kFrameTooSmall (UetEndpoint::frame_too_small).
    bool frame_refused = false;
    uint32_t next_psn = 0;  // next new PSN
    uint32_t base_psn = 0;  // oldest unacknowledged PSN
    // §3.8: the target's window as its ACK_CCs last said: the highest CACK and the latest
    // MPR (0: no ACK_CC yet, the configured window alone bounds new PSNs).
    uint32_t peer_cack = 0;
    uint16_t peer_mpr = 0;
    // RACK's window adaptation (RFC 8985 §6.2 step 4, note_spurious): min_rtt / 4 steps
    // added to the window, and recoveries left before they are dropped.
    uint8_t reo_wnd_mult = 0;
    uint8_t reo_wnd_persist = 0;
    uint32_t op_head = 0, op_tail = 0;  // posted, not yet completed: [head, tail)
    uint32_t op_send = 0;               // next operation with packets still to send
    uint32_t send_packet = 0;           // next packet of ops[op_send]
    uint32_t resend_pending = 0;
    uint64_t bytes_in_flight = 0;
    Time rto = 0;  // current RTO (estimate, doubled per timeout)
    Time rto_deadline = kNever;
    Time tlp_deadline = kNever;
    // RACK (rack_detect): the newest delivered packet sent once, its round trip, the
    // highest PSN acknowledged, and the reorder timer.
    Time rack_sent = 0, rack_rtt = 0, rack_deadline = kNever;
    uint32_t rack_highest = 0;
    uint32_t recovery_psn = 0;  // in_recovery: RACK's recovery ends when base_psn passes it
    // By PSN, [base_psn, next_psn) live: grows with the flight (tx_initiator(), a doubling
    // when a new PSN finds it full) up to mpr, given back when the PDC is freed.
    GrowRing<Slot, 16> slots;
    GrowRing<Op, 2> ops;  // by posting count (grows in post_op() to max_ops)
    // RNR NACKs by PSN % mpr, of the PSNs whose slot says rnr_counted: taken at the PDC's
    // first RNR NACK (rnr_nack), given back with the send window.
    std::unique_ptr<uint8_t[]> rnr;
    uint16_t next_message_id = 1;
    // RFC 8985 §6.2 step 4: the window widened this round (until base_psn passes
    // spurious_psn); RACK inferred a loss and its recovery has not ended.
    bool spurious_round = false;
    bool in_recovery = false;
    uint32_t spurious_psn = 0;
    Time srtt = 0, rttvar = 0;     // RFC 6298; srtt 0: no sample yet
    Time rtt_max = 0;              // the largest sample (UetConfig::rto_rtt_max_pct)
    Time rtt_min = kNever;         // the smallest sample (RACK's min_RTT, RFC 8985 §6.2)
    uint64_t acked_total = 0;      // PSNs acknowledged so far (progress)
    uint32_t peer_rcvd_bytes = 0;  // §3.8.1: the target's rcvd_bytes in its newest ACK_CC
    Time clear_at = 0;             // §3.12: a CLEAR of clear_psn may go again from then (tx)
    uint32_t clear_psn = 0;        // ... the clear PSN the last CLEAR carried
    Time last_ack_at = kNever;     // the last valid ACK (is the peer alive?)
    cc::Nscc nscc;                 // reads the endpoint's NsccConfig (UetShared::nscc_)
    // RCCC sender (UetConfig::cc rccc or nscc+rccc).
    cc::RcccSender rccc{cc::RcccConfig{}};
    uint64_t unsent_bytes = 0;      // WRITE/SEND payload posted, not yet sent once
    uint32_t last_target = 0;       // credit_target in the last RUD_CC request or CREDIT_REQ
    Time speculate_until = kNever;  // the first send + base_rtt
    bool credit_blocked = false;    // has data to send, no credit
    Time credit_deadline = kNever;  // blocked this long without credit: ask again (or probe)
    // Teardown (§3.12): closing: CLOSE (PSN close_psn) sent, waiting for the ACK that
    // covers it; the PDC is then no longer the peer's (the table's initiator look-up points to
    // a new one, if any).
    bool close_requested = false;  // the target sent REQ_CLOSE: close as soon as idle
    uint32_t close_psn = 0;
    Time close_deadline = kNever;
    pathsel::PathSelector sel;  // picks each packet's EV index
  };

  // The target's side of a PDC: its receive window (bitmap, ACK coalescing, SACK), the
  // responses and refusals it owes, its NACKs, RCCC grants and ROD's next PSN. What
  // rx_request() and build_ack() touch per packet comes first.
  struct Target {
    bool ack_now = false;
    bool ack_pending = false;
    bool ce_seen = false;
    bool last_retx = false;  // the newest arrival, or ...
    bool ce_retx = false;    // ... the CE trigger, was a retransmission: the ACK echoes it
    bool ar_held = false;    // an AR request arrived past a hole: ACK once the hole fills
    uint32_t rcv_base = 0;   // lowest PSN not yet received
    uint32_t unacked_rx = 0;
    uint32_t last_psn = 0;                  // the newest arrival
    uint32_t ce_psn = 0;                    // the first CE-marked arrival since the last ACK
    uint32_t ar_psn = 0;                    // that AR request's PSN
    Time last_arrival = 0, ce_arrival = 0;  // when they arrived (§3.8.1 service_time)
    uint32_t rcvd_bytes = 0;  // §3.8.1: payload bytes of new requests (sent modulo 2^24)
    uint16_t ooo_count = 0;   // §3.8: new requests that arrived past a hole (saturating)
    uint32_t nack_head = 0, nack_tail = 0;  // the nacks ring below
    Time ack_deadline = kNever;
    std::vector<uint64_t> rcv_bits;  // mpr bits: PSN rcv_base + i received
    uint64_t credit_pending = 0;  // RCCC grants for this sender not yet sent (rides the next ACK)
    bool credit_queued = false;   // in the endpoint's credit ring
    bool unanswered = false;      // every REQ_CLOSE went unanswered (in the endpoint's list)
    GrowRing<Response> rsp;       // by rsp_head/rsp_tail (grows in queue_response() to mpr)
    std::vector<Refusal> gtd;     // mpr entries, PSN % mpr
    std::vector<uint64_t> gtd_bits;  // mpr bits: PSN (rcv_base + i) refused, not cleared
    uint32_t gtd_live = 0;
    std::vector<uint64_t> rsp_bits;  // mpr bits: PSN rcv_base + i has a response queued
    uint32_t rsp_head = 0, rsp_tail = 0;
    bool rsp_pending() const noexcept { return rsp_head != rsp_tail; }
    // NACKs to send: a small ring, taken at the PDC's first NACK, of at most kNacks (when
    // full, the NACKed packet is only dropped; its RTO recovers it).
    static constexpr uint32_t kNacks = 16;
    GrowRing<Nack, 4> nacks;
    // build_nack's input (set from the ring, or for stateless NACKs).
    uint8_t nack_code = 0;
    uint32_t nack_psn = 0;
    // ROD target (uet_rod.cc): the next PSN to execute; the reorder buffer (an index into
    // the endpoint's ROD pool, -1: none) holding `rod_held` requests staged past it.
    uint32_t rod_next = 0;
    int32_t rod_buf = -1;
    uint32_t rod_held = 0;
  };

  // The role's state alone (`state` says which is constructed: PdcTable::alloc starts it): a
  // target carries no send window, operations, CC or path selector, an initiator no receive
  // window. Then the per-connection encapsulation.
  union {
    Initiator ini;
    Target tgt;
  };
  wire::MacAddr peer_mac{};
  // Ethernet/IPv4/UDP to the peer, written once by set_peer(): data frames' (dscp_data,
  // ECT); a frame copies it and writes its EV and lengths. Control frames (dscp_control)
  // differ in the TOS byte and so in the IPv4 header's sum alone: those two are kept.
  wire::EncapTemplate data_encap;
  uint8_t ctrl_tos = 0;
  uint32_t ctrl_ip_sum = 0;

  Pdc() noexcept {}
  ~Pdc() { end_state(); }
  Pdc(const Pdc&) = delete;
  Pdc& operator=(const Pdc&) = delete;
  // A fresh PDC of `r`: the head and encapsulation as new, the previous role's state
  // destroyed and r's constructed.
  void start(Role r) {
    end_state();
    static_cast<PdcHead&>(*this) = PdcHead{};
    peer_mac = {};
    data_encap = {};
    ctrl_tos = 0;
    ctrl_ip_sum = 0;
    if (r == Role::kInitiator) new (&ini) Initiator();
    if (r == Role::kTarget) new (&tgt) Target();
    role = state = r;
  }

 private:
  void end_state() noexcept {
    if (state == Role::kInitiator) ini.~Initiator();
    if (state == Role::kTarget) tgt.~Target();
    state = Role::kFree;
  }
};

}  // namespace uet::pds
