// The UET engine's configuration (UetConfig, checked by validate()) and its counters
// (UetCounters): what a host sets before creating a UetEndpoint (uet_endpoint.h), and what it
// reads back.
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "cc/rccc.h"
#include "pathsel/config.h"
#include "transport/api.h"
#include "transport/tss/sublayer.h"
#include "transport/wire/builder.h"
#include "transport/wire/net_headers.h"
#include "transport/wire/uet_headers.h"
#include "transport/wire/wire_error.h"

namespace uet {

// Which congestion control the initiator runs (NOTES.md, "Congestion control", says how RCCC
// is wired).
enum class CcMode : uint8_t {
  kNscc,      // NSCC's window (the default)
  kRccc,      // RCCC credit alone (window_bytes still bounds what is in flight)
  kNsccRccc,  // both: credit and the NSCC window
};
const char* to_string(CcMode m) noexcept;  // "nscc", "rccc", "nscc+rccc"

// §5.6: PSNs between the start PSNs of two PDCs one initiator opens to one peer under TSS.
inline constexpr uint32_t kSecurePdcPsnStride = 1u << 24;

struct UetConfig {
  uint32_t local_ip4 = 0;
  wire::MacAddr local_mac{};
  // Peer MACs are resolved once per PDC; the default maps 10.0.0.1 + i to 02:00:i (the
  // simulator's addressing).
  wire::MacAddr (*resolve_mac)(uint32_t ip4) = nullptr;

  uint32_t payload_bytes = 4096;          // bytes of data per packet, 256..9000
  uint32_t max_pdcs = 1024;               // PDC table size (initiator + target), 1..65535
  uint32_t mpr = 256;                     // PSN window per PDC in packets, 64..4096, power of 2
  uint32_t max_ops = 256;                 // operations posted, not completed (write, read,
                                          // send) per PDC and on RUDI, 1..65536
  uint32_t max_recvs = 256;               // posted receive buffers per endpoint, 1..65536
  uint32_t max_recv_messages = 64;        // SENDs being received at once per endpoint, 1..4096
  uint32_t rnr_retries = 7;               // RNR NACKs of one PSN before a SEND gives up, 0..64
  // Tagged messages (transport/api.h TaggedRecv; NOTES.md, "Tagged messages"): posted tagged
  // receives, 1..65536; messages that arrived before a receive matched them (the unexpected
  // list), 1..65536, and the bytes that list may hold, payload_bytes..1 GiB. Taken when the
  // endpoint first sees a tagged receive or message. A message that finds the list full is
  // NACKed NO_SES_MSG_AVAIL and retried as a SEND with no buffer is (rnr_retries).
  uint32_t max_trecvs = 256;
  uint32_t max_unexpected = 256;
  uint64_t unexpected_bytes = uint64_t{4} << 20;
  // Job-based access (spec/uet.md §4.1). The job this endpoint's process belongs to
  // (0..2^24-1: requests carry it; a target answers one of another job BAD_JOB_ID), its PID
  // on the FEP (0..4095) and its job's first PID there (0..pid_on_fep: relative addressing
  // counts from it), and the resource indexes it serves, 0..resource_indexes-1 (1..4096), all
  // enabled at generation 0 until disable_resource / enable_resource change them.
  uint32_t job_id = 0;
  uint32_t pid_on_fep = 0;
  uint32_t job_pid_base = 0;
  uint32_t resource_indexes = 1;
  // Atomics (transport/api.h AtomicRequest; NOTES.md, "Atomics"): the fetched values a target
  // holds until the initiator has them (a duplicate of the request is answered from here, never
  // executed again), 1..65535, kMaxAtomicBytes each. Taken at the first fetching atomic; a
  // request that finds them all held is NACKed NO_SES_MSG_AVAIL and retried as a SEND with
  // no buffer is (rnr_retries).
  uint32_t atomic_results = 256;
  // Rendezvous (spec/uet.md §4.5.3; NOTES.md, "Rendezvous"): a SEND or tagged send longer than
  // rendezvous_bytes (0: never; else payload_bytes..2^32-1) carries its first packet's worth
  // eagerly and the target READs the rest from the source. At most rendezvous_sources such
  // sends are exposed at once (1..65535; a send that finds none free goes eagerly); one whose
  // source no READ touched for rendezvous_timeout (1 us..1000 s) completes kRetriesExhausted
  // and its source is withdrawn.
  uint64_t rendezvous_bytes = 0;
  uint32_t rendezvous_sources = 64;
  Time rendezvous_timeout = kSecond;
  // The target's choice for the rest of a rendezvous message (NOTES.md, "Rendezvous"): false,
  // READ it from the source (§4.5.3); true, answer the request with a DEFERRABLE_RTR naming
  // the matched receive (the CTS) and let the initiator WRITE the rest into it. An initiator
  // serves either, so the two ends need not agree.
  bool rendezvous_push = false;
  // Deferrable sends (spec/uet.md §4.2; NOTES.md, "Deferrable sends"): at most
  // deferrable_sends posted and not yet complete (1..65535; the next is refused at post). A
  // target keeps a deferred message in its unexpected list (max_unexpected, no bytes); a
  // receive it reserved for one whose restart has not come in deferral_timeout (1 us..1000 s)
  // completes kRetriesExhausted.
  uint32_t deferrable_sends = 64;
  Time deferral_timeout = kSecond;
  uint64_t window_bytes = 256 * 1024;     // bytes in flight per PDC at most
  CcMode cc = CcMode::kNscc;              // congestion control (CcMode)
  // RCCC (cc/rccc.h): quantum, speculative allowance, credit target cap, grant pacing.
  // rccc.link_gbps and rccc.max_senders are derived (link_gbps, max_pdcs); the rest is
  // validated as RcccConfig::validate() says, named UetConfig.rccc.FIELD.
  cc::RcccConfig rccc;
  double link_gbps = 100;                 // NSCC and RCCC: the host link rate ...
  Time base_rtt = 12 * kMicrosecond;      // ... and the fabric's unloaded round trip
  Time rto = 50 * kMicrosecond;           // retransmission timeout before the first RTT sample
  // RFC 6298 estimator from ACKs of packets sent once: RTO = clamp(max(srtt + 4 rttvar,
  // srtt * rto_srtt_pct / 100), min_rto, max_rto), doubling per timeout until a valid sample.
  Time min_rto = 10 * kMicrosecond;       // 1 us..rto
  Time max_rto = 10 * kMillisecond;
  // The estimate's floor as a percentage of srtt: under a steady queue rttvar decays to a few
  // us while a full last-hop buffer can still double the RTT, and an RTO below that times out
  // spuriously (bench/NOTES.md, "Choices in the sources"). 0: RFC 6298 alone. 0..1000.
  uint32_t rto_srtt_pct = 200;
  // The estimate's floor as a percentage of the largest RTT sample the PDC has seen (RFC 6298
  // §2.4 allows any RTO above the estimate): a host whose threads stall for milliseconds
  // shows those stalls in some samples, and an RTO below them times out spuriously when the
  // next stall comes. The tail-loss probe waits as long (below 3/4 RTO). 0 (the default): no
  // such floor. 0..1000.
  uint32_t rto_rtt_max_pct = 0;
  // Tail-loss probe: when everything posted has been sent and PSNs stay unacknowledged for
  // min(2 srtt + ack_delay, 3/4 RTO), resend the highest unacknowledged PSN once, without
  // counting a timeout or cutting the window; again only after progress.
  bool tlp = true;
  uint32_t max_retries = 8;               // consecutive timeouts of one PSN before giving up
  // RACK (RFC 8985): infer a loss from the SACKs (a hole with later PSNs acknowledged, out
  // longer than the window below). false: only NACKs (trimmed packets), the tail-loss probe
  // and the RTO resend, as uet-htsim's sender without -sleek (its published runs): on a
  // trimming fabric congestion losses come back as NACKs, and under spraying a SACK hole is
  // mostly a packet on a slower path (bench/README.md, "Where we differ from uet-htsim").
  bool rack = true;
  uint32_t reorder_threshold = 8;         // acknowledged PSNs past a hole before it is resent ...
  Time reorder_window = 20 * kMicrosecond;  // ... once out the newest delivered packet's RTT + this
  // With an RTT estimate, that window is min(reorder_window, srtt * reorder_srtt_pct / 100)
  // (RACK, RFC 8985 §6.2, starts at min_rtt / 4): 100 shortens the tails against the fixed
  // window, smaller values resend spuriously (bench/NOTES.md, "Choices in the sources").
  // 0: reorder_window fixed. 0..1000.
  uint32_t reorder_srtt_pct = 100;
  // RFC 8985 §6.2 step 4: a resend that proves spurious (the target got the PSN twice)
  // widens the PDC's window by min_rtt / 4, at most once a round trip, up to srtt; after
  // this many of RACK's recoveries without one it is back to the start. 0: the window does
  // not adapt. 0..255.
  uint32_t reorder_adapt_recoveries = 16;
  uint32_t ack_every = 4;                 // ACK after this many in-order packets
  Time ack_delay = 2 * kMicrosecond;      // ... or after this long
  // ACK a request that arrived past a hole at once, as a TCP receiver does (RFC 5681 §4.2).
  // false: it waits for ack_every or ack_delay like any other (the SACK bitmap carries it), as
  // KRFC's and uet-htsim's targets coalesce (spec/uet.md §3.7): sprayed, most packets arrive
  // past a hole, so true ACKs nearly every packet (bench/README.md, "Where we differ").
  bool ack_out_of_order = true;
  uint8_t dscp_data = kDscpData;
  uint8_t dscp_control = kDscpControl;
  bool ect = true;                        // send data ECN-capable
  // Compute the UDP checksum of every frame sent; false sends 0 for the host to fill (a NIC's
  // TX checksum offload; io_uring's kernel computes it anyway). Receiving, frames the host
  // marks Frame::checksums_ok are not checked again.
  bool udp_checksum = true;
  // Zero-copy transmit: payloads are referenced in registered memory (Frame::ref), not copied,
  // for a host whose device gathers (DPDK external buffers). Under TSS the payload is instead
  // encrypted from registered memory into the frame, one pass either way (spec/uet.md §5.2).
  bool tx_by_reference = false;
  // WRITEs into a region of at least this many bytes are placed with streaming stores (a
  // region beyond the cache: a plain copy would first read every line it writes); 0: never.
  uint64_t stream_placement_from = uint64_t{32} << 20;
  // Path selection per PDC (pathsel/config.h). The default sprays obliviously over
  // pathsel.ev_count EVs; with ev_count 1 (the default) every PDC keeps one EV.
  pathsel::PathSelConfig pathsel;
  // 0 (the default): the EV rides in the UDP source port (spec/uet.md §2.1). Else every frame
  // is sent from this port, for hosts whose sockets send from a port of their own (io_uring,
  // dpdk-io/uring_io.h): under TSS the ports are authenticated (§5.2), so a sender must seal
  // the port the receiver will see. Costs the spraying: one path per peer.
  uint16_t udp_source_port = 0;
  uint64_t seed = 1;                      // start PSNs and the path selectors' seeds
  // PDC teardown (spec/uet.md §3.12 CLOSE / REQ_CLOSE): an initiator PDC with nothing posted
  // and nothing outstanding for this long sends CLOSE (retried on its RTO, up to max_retries,
  // then freed anyway); the target frees its PDC on CLOSE. A target PDC that heard nothing for
  // 2 x idle_timeout sends REQ_CLOSE (every idle_timeout, up to max_retries times); one
  // whose REQ_CLOSEs all go unanswered may be taken by a new SYN when the table is full. 0: PDCs
  // are never closed. 0, or 1 us..10 s. Default 1 ms (~80 base RTTs).
  Time idle_timeout = kMillisecond;
  // Liveness of a peer that holds our operations (spec/uet.md §3.12 REQ_ACK): an initiator PDC
  // whose operations wait on the target with nothing in flight (a rendezvous source not yet
  // read, a deferred send not yet asked for, a CTS whose push has not all come) sends REQ_ACK
  // after this long, then on its RTO with backoff; max_retries unanswered fail the PDC's
  // operations kRetriesExhausted, so a dead peer is found within the retry budget rather than
  // rendezvous_timeout or deferral_timeout. Any ACK restarts it. 0 (the default): never; else 1 us..1000 s.
  Time hold_probe_after = 0;
  // ROD (NOTES.md, "The other delivery modes"; spec/uet.md §3.3): out-of-order requests a ROD
  // target PDC holds for in-order delivery, and the initiator's PSN window on a ROD PDC, in
  // packets. 0 (the default): mpr; else 64..mpr, a power of 2. Smaller than mpr, it stalls a
  // ROD sender behind a hole sooner than RUD; with mpr ROD runs as RUD on one EV
  // (bench/NOTES.md, "failure: degraded and failed links").
  uint32_t rod_window = 0;
  // Reorder buffers (rod_window x payload_bytes each: 1 MiB at the defaults, allocated when
  // first lent) the endpoint lends to ROD target PDCs while they hold out-of-order requests,
  // 1..65535. With all lent, an out-of-order arrival is dropped (counted) and its
  // retransmission brings it again.
  uint32_t rod_buffers = 16;
  // RUDI: packets in flight per endpoint (initiator), 1..65536; responses queued at the
  // target, 1..65536 (when full, a request is dropped and its RTO brings it again).
  uint32_t rudi_packets = 256;
  uint32_t rudi_responses = 256;
  // UUD: datagrams posted and not yet sent per endpoint, 1..65536.
  uint32_t uud_queue = 256;
  // TSS (spec/uet.md §5): with tss.enabled every frame is sealed (AES-256-GCM, 28 or 32 bytes
  // more per frame) and only sealed frames are accepted. Validated as TssConfig::validate().
  tss::TssConfig tss;

  // Checks every field; the message names the field and its valid range.
  absl::Status validate() const;

  // TSS's header and tag on every frame when sealing (spec/uet.md §5.1), else 0.
  uint32_t tss_bytes() const noexcept {
    if (!tss.enabled) return 0;
    return static_cast<uint32_t>((tss.send_ssi ? wire::TssSp::kSize : wire::Tss::kSize) +
                                 tss::kTagBytes);
  }
  // The bytes besides its payload of the longest frame carrying payload_bytes: Ethernet,
  // IPv4 and UDP; a WRITE or SEND request (RUD_CC §3.4, standard SES header §4.2; a
  // rendezvous send's extension takes the place of as many payload bytes, §4.5.3) or a READ's
  // response with data (ACK_CCX §3.9, SES response with data §4.7), whichever is longer; TSS.
  // A host whose frames hold payload_bytes + this never has a data packet refused
  // (tx_no_room) nor its payload left out.
  uint32_t frame_overhead() const noexcept {
    constexpr size_t kEncap = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize;
    constexpr size_t kLongest =
        std::max(wire::PdsRudRodCc::kSize + wire::SesStandardRequest::kSize,
                 wire::PdsAckCcx::kSize + wire::SesResponseData::kSize);
    return static_cast<uint32_t>(kEncap + kLongest) + tss_bytes();
  }

 private:
  // validate()'s parts, checked in this order.
  absl::Status validate_tables() const;
  absl::Status validate_ses() const;
  absl::Status validate_timing() const;
  absl::Status validate_modes() const;
};

// Why frames were dropped or answered specially; always on.
// What differs between the endpoints of one host kind, which share the rest of their
// UetConfig (UetShared): each takes these beside it, in place of the shared config's own.
struct UetHost {
  uint32_t local_ip4 = 0;
  wire::MacAddr local_mac{};
  uint64_t seed = 1;  // start PSNs and the path selectors' seeds
};

struct UetCounters {
  uint64_t tx_data = 0, tx_retx = 0, tx_acks = 0, tx_nacks = 0;
  uint64_t rx_data = 0, rx_acks = 0, rx_nacks = 0;
  uint64_t rx_duplicates = 0, rx_trimmed = 0, rx_out_of_window = 0;
  uint64_t rx_malformed = 0;      // failed decode (wire.count says why)
  uint64_t rx_unknown_pdc = 0;    // DPDCID not ours and no SYN
  uint64_t rx_no_pdc_avail = 0;   // SYN with a full PDC table
  uint64_t rx_bad_key = 0, rx_bad_range = 0;
  uint64_t rx_stale_ack = 0;      // ACK for PSNs never sent
  uint64_t rx_sack_unsent = 0;    // ACK whose SACK bitmap claims PSNs never sent (ignored)
  uint64_t timeouts = 0, fast_retx = 0, nack_retx = 0;
  // Initiator: resends shown spurious by an ACK whose trigger (spec §3.7, with its `retx`
  // echo) was a PSN's second copy at the target, and the reorder-window steps taken.
  uint64_t spurious_retx = 0, reorder_widened = 0;
  uint64_t tlp_probes = 0;        // tail-loss probes sent
  uint64_t tx_pdc_visits = 0;     // PDCs tx() looked at (it passes over those with nothing to do)
  Time rtt_max = 0;               // the largest valid RTT sample of any PDC (ps)
  uint64_t rto_below_rtt_max = 0; // RTOs raised (past min_rto) by the rto_rtt_max_pct floor
  // SES READ / SEND.
  uint64_t tx_read_data = 0;      // target: ACKs carrying read data (first and repeated)
  uint64_t rx_read_data = 0;      // initiator: read data placed
  uint64_t rx_stale_read_data = 0;  // initiator: read data for no waiting READ (dropped)
  uint64_t read_data_lost = 0;    // initiator: a READ PSN ACKed without its data: resent
  uint64_t rx_rnr = 0;            // target: SEND with no buffer posted (NACK RCVD_SES_PROCG)
  uint64_t rx_no_msg_state = 0;   // target: SEND with no message state free (NO_SES_MSG_AVAIL)
  uint64_t rx_length_error = 0;   // target: SEND longer than its buffer
  uint64_t rx_initiator_err = 0;  // target: SEND packets flagged `ie` (abandoned by the sender)
  // Target: MSG_ERROR requests (§4.1): naming a message in progress (ended in error), and
  // naming none (acknowledged, nothing else).
  uint64_t rx_msg_error = 0, rx_msg_error_unknown = 0;
  uint64_t rx_bad_send = 0;       // target: SEND packet outside its message
  uint64_t rx_unsupported = 0;    // target: opcode this engine does not serve
  // Tagged messages (target): messages matched to a posted receive on arrival; kept
  // unexpected until a receive matched them; NACKed with the unexpected list (count or bytes)
  // full; receives completed truncated.
  uint64_t rx_tagged_matched = 0, rx_tagged_unexpected = 0, rx_unexpected_full = 0;
  uint64_t rx_truncated = 0;
  // Job-based access (§4.1, §4.9), target: requests refused before any byte was placed, for
  // another job (BAD_JOB_ID), another process (BAD_PID), an unconfigured resource index
  // (BAD_INDEX), a disabled one (DISABLED) or a stale generation (BAD_GENERATION).
  uint64_t rx_bad_job = 0, rx_bad_pid = 0, rx_bad_index = 0, rx_disabled = 0;
  uint64_t rx_bad_generation = 0;
  // Atomics (target): executed (once per request), answered again from the held result (a
  // duplicate), refused (operation, type, size, alignment, region: AMO_*, AT_*), NACKed with
  // every result slot held.
  uint64_t rx_atomics = 0, rx_atomic_replays = 0, rx_atomic_refused = 0, rx_atomic_full = 0;
  // Rendezvous: sends that went by rendezvous, and eagerly for want of a free source
  // (initiator); READs of a source served (and refused: unknown or withdrawn key, out of range);
  // sends timed out waiting for their READs; rendezvous requests received (target) and refused
  // (a malformed extension header).
  uint64_t tx_rendezvous = 0, tx_rendezvous_eager = 0, rx_rdv_reads = 0, rx_rdv_bad_read = 0;
  uint64_t rdv_timeouts = 0, rx_rendezvous = 0, rx_rdv_refused = 0;
  // Pushed rendezvous: CTSs sent and receives completed by the WRITE (target), WRITEs of a
  // source pushed on a CTS (initiator), pushed WRITE packets refused (unknown or withdrawn
  // receive, out of range) and receives whose push never came (target).
  uint64_t tx_rdv_cts = 0, rx_rdv_pushed = 0, tx_rdv_pushes = 0, rx_rdv_bad_push = 0;
  uint64_t rdv_push_timeouts = 0;
  // Deferrable sends: deferred by their target and restarted on its DEFERRABLE_RTR
  // (initiator); RTRs received naming no deferred send; messages deferred, RTRs sent, restarts
  // received, and receives whose restart never came (target).
  uint64_t tx_deferred = 0, tx_restarts = 0, rx_rtr_stale = 0;
  uint64_t rx_deferred = 0, tx_rtr = 0, rx_restarts = 0, defer_timeouts = 0;
  uint64_t rnr_retx = 0;          // initiator: resends after an RNR NACK
  uint64_t rsp_ring_full = 0;     // target: request dropped, no room to queue its response
  // Guaranteed delivery of refusals (§3.3 clear_psn_offset, §4.6).
  uint64_t tx_refusal_repeats = 0;  // target: a duplicate of a refused PSN answered again
  uint64_t refusals_cleared = 0;    // target: refusals the initiator cleared
  // Trimmed requests carry no UDP checksum (§3.14): their headers are unverifiable, so they
  // never get a PDC-fatal NACK and never open a new incarnation of a PDC; dropped, counted.
  uint64_t rx_trimmed_unverified = 0;
  // PDC lifecycle (§3.3 SYN, §3.12 CLOSE / REQ_CLOSE).
  uint64_t pdc_reopened = 0;      // target: SYN with a new start PSN replaced a stale PDC
  uint64_t tx_close = 0, rx_close = 0, tx_req_close = 0, rx_req_close = 0;
  uint64_t pdcs_closed = 0;       // PDCs freed by a completed close (either role)
  uint64_t close_abandoned = 0;   // initiator: CLOSE never acknowledged, freed anyway
  uint64_t req_close_abandoned = 0;  // target: REQ_CLOSEs never answered, PDC given to a SYN
  uint64_t rx_bad_ctrl = 0;       // control packet for no PDC of ours, or out of place
  // Initiator: data packets refused for a host frame too small for their headers (until the
  // RTO fails the PDC kFrameTooSmall).
  uint64_t tx_no_room = 0;
  // RCCC (§3.4, §3.8.2, §3.12 CREDIT / CREDIT_REQ).
  uint64_t tx_credit = 0;         // target: CREDIT packets sent
  uint64_t tx_credit_acks = 0;    // target: ACK_CCs that carried credit (cc_type CREDIT)
  uint64_t credit_granted = 0;    // target: bytes of credit granted
  uint64_t rx_credit = 0;         // initiator: CREDIT packets received
  uint64_t rx_credit_acks = 0;    // initiator: ACK_CCs with credit received
  uint64_t credit_received = 0;   // initiator: bytes of credit received
  uint64_t credit_stalls = 0;     // initiator: times a PDC with data to send ran out of credit
  uint64_t tx_credit_req = 0;     // initiator: CREDIT_REQs sent
  uint64_t tx_req_ack = 0;        // initiator: REQ_ACKs sent (hold_probe_after)
  uint64_t rx_req_ack = 0;        // target: REQ_ACKs answered
  uint64_t hold_probe_failures = 0;  // initiator: PDCs failed with REQ_ACKs unanswered
  uint64_t rx_credit_req = 0;     // target: CREDIT_REQs received
  uint64_t credit_probes = 0;     // initiator: one-packet probes before the PDC is established
  // §3.12 CLEAR: the initiator's clear PSN when no request in the target's window carries it.
  uint64_t tx_clear = 0, rx_clear = 0;
  // ROD (target).
  uint64_t rod_staged = 0;        // out-of-order ROD requests held until the hole fills
  uint64_t rod_executed_late = 0; // staged requests executed in order later
  uint64_t rod_unstageable = 0;   // payload over payload_bytes: not staged (comes again)
  uint64_t rod_no_buffer = 0;     // every reorder buffer lent: not staged (comes again)
  uint64_t rx_mode_mismatch = 0;  // ROD request on a RUD PDC or the reverse (PDC_MODE_MISMATCH)
  // RUDI (§3.5). Initiator: packets sent (first time, again), timeouts, responses taken,
  // responses for no packet of ours (late duplicates, garbage IDs), packets given up.
  uint64_t tx_rudi = 0, tx_rudi_retx = 0, rudi_timeouts = 0, rx_rudi_resp = 0;
  uint64_t rx_rudi_stale = 0, rudi_gave_up = 0;
  // Target: requests executed (duplicates included), responses sent, requests dropped with
  // the response ring full.
  uint64_t rx_rudi_req = 0, tx_rudi_resp = 0, rudi_rsp_full = 0;
  // UUD (§3.6): datagrams sent; delivered; dropped at the target (no buffer posted, too long
  // for the buffer, bad key or range, unsupported opcode, more than one packet).
  uint64_t tx_uud = 0, rx_uud = 0, rx_uud_dropped = 0;
  // TSS (§5): sealed frames with TSS off; clear frames with TSS on (never delivered); sealed
  // frames the sublayer refused (tss()->counters() says why); trimmed sealed frames that
  // decrypt to something other than a request (dropped: only a request may earn a NACK);
  // SYNs below the expected start PSN (NACK NEW_START_PSN, §5.6); requests and responses
  // opened in a domain bound to one job (DomainConfig::job_id) that name another.
  uint64_t rx_sealed_unexpected = 0, rx_clear_refused = 0, rx_tss_dropped = 0;
  uint64_t rx_trimmed_sealed_other = 0, rx_start_psn_refused = 0, rx_tss_cross_job = 0;
  wire::WireCounters wire;
};

}  // namespace uet
