// Frames in (spec/uet.md §3): decode, TSS open (§5) and dispatch by PDS type; at the target,
// a request's PDC (SYN, §3.3), its receive window (§3.10), its execution (§4) and the
// refusals and responses it queues; control packets (§3.12).
#include <algorithm>
#include <cstring>
#include <utility>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"
#include "transport/wire/stream_copy.h"

namespace uet {

using internal::psn_before;
using internal::test_bit;
using wire::kDscpTrimmed;
using wire::PdsType;

void UetEndpoint::queue_nack(Pdc& p, wire::NackCode code, uint32_t psn) {
  const auto c = static_cast<uint8_t>(code);
  for (uint32_t i = p.tgt.nack_head; i != p.tgt.nack_tail; ++i) {
    const Pdc::Nack& n = p.tgt.nacks[i];
    if (n.code == c && n.psn == psn) return;  // already queued
  }
  const uint32_t queued = p.tgt.nack_tail - p.tgt.nack_head;
  if (queued >= Pdc::Target::kNacks) return;  // bounded: the RTO recovers it
  p.tgt.nacks.reserve32(p.tgt.nack_head, p.tgt.nack_tail, queued + 1, Pdc::Target::kNacks);
  p.tgt.nacks[p.tgt.nack_tail++] = Pdc::Nack{c, psn};
}

// Queues a response for `r.psn` (one ACK each). A first answer marks the PSN pending so a
// duplicate is not answered twice before it is recorded; a repeat (the PSN is recorded
// already) does not. False when the ring is full: the request is dropped and comes again.
bool UetEndpoint::queue_response(Pdc& p, const Pdc::Response& r, bool repeat) {
  if (p.tgt.rsp_tail - p.tgt.rsp_head >= hot_.mpr) {
    ++rare().rsp_ring_full;
    return false;
  }
  p.tgt.rsp.reserve32(p.tgt.rsp_head, p.tgt.rsp_tail, uint64_t{p.tgt.rsp_tail - p.tgt.rsp_head} + 1,
                      hot_.mpr);
  Pdc::Response& e = p.tgt.rsp[p.tgt.rsp_tail++];
  e = r;
  e.repeat = repeat;
  e.queued = now_;
  if (!repeat) {
    const uint32_t idx = (r.psn & mpr_mask_);
    p.tgt.rsp_bits[idx / 64] |= uint64_t{1} << (idx % 64);
  }
  p.tgt.ack_now = true;
  return true;
}

// The target refuses `psn` (§4.6): the PSN stays a hole with its refusal stored until the
// initiator clears it (see Pdc::Target::gtd); this first answer goes at once. A fetching
// atomic's answer is held so too, with its `len` values in held result `result`.
void UetEndpoint::refuse(Pdc& p, uint32_t psn, uint8_t code, uint16_t message_id, uint16_t result,
                         uint32_t len) {
  const uint32_t idx = (psn & mpr_mask_);
  if (!test_bit(p.tgt.gtd_bits, idx)) {
    p.tgt.gtd_bits[idx / 64] |= uint64_t{1} << (idx % 64);
    ++p.tgt.gtd_live;
  }
  if (p.tgt.gtd.empty()) p.tgt.gtd.assign(hot_.mpr, Pdc::Refusal{});  // the PDC's first refusal
  p.tgt.gtd[idx] = Pdc::Refusal{code, static_cast<uint8_t>(len), message_id, result};
  Pdc::Response r;
  r.code = code;
  r.message_id = message_id;
  r.psn = psn;
  r.data = result != 0;
  r.result = result;
  r.len = len;
  queue_response(p, r, /*repeat=*/true);  // if the ring is full, a duplicate gets it later
}

// §3.3: the initiator no longer needs the refusals of PSNs up to `clear_psn`: they become
// received, and the cumulative ACK moves past them.
[[gnu::always_inline]] inline void UetEndpoint::clear_to(Pdc& p, uint32_t clear_psn) {
  if (p.tgt.gtd_live == 0 || !psn_before(p.tgt.rcv_base, clear_psn + 1)) return;
  const uint32_t base = p.tgt.rcv_base;
  const uint32_t n = std::min<uint32_t>(clear_psn + 1 - base, hot_.mpr);
  for (uint32_t i = 0; i < n && p.tgt.gtd_live > 0; ++i) {
    const uint32_t psn = base + i;
    const uint32_t idx = (psn & mpr_mask_);
    if (!test_bit(p.tgt.gtd_bits, idx)) continue;
    p.tgt.gtd_bits[idx / 64] &= ~(uint64_t{1} << (idx % 64));
    --p.tgt.gtd_live;
    ++rare().refusals_cleared;
    Pdc::Refusal& g = p.tgt.gtd[idx];
    if (g.result != 0) free_result(std::exchange(g.result, 0));
    if (g.rdv != 0) rdv_cleared(std::exchange(g.rdv, 0), g.rdv_len);  // the reader has them
    mark_received(p, psn);
  }
}

// clear_to()'s out-of-line copy, for a CLOSE (uet_close.cc).
void UetEndpoint::clear_for_close(Pdc& p, uint32_t clear_psn) { clear_to(p, clear_psn); }

// §5: under TSS only sealed frames are taken, opened in place and decoded through; a trimmed
// one (§5.5) is read without its tag and must be a request. Without TSS a sealed frame is
// refused.
bool UetEndpoint::tss_open(const Frame& f, wire::DecodedStorage& decoded, bool trimmed) {
  wire::Decoded& d = *decoded.get_mutable();
  const bool sealed = !d.sealed.empty();
  if (tss_ == nullptr) {
    if (!sealed) return true;
    ++rare().rx_sealed_unexpected;
    return false;
  }
  if (!sealed) {
    ++rare().rx_clear_refused;
    return false;
  }
  std::span<uint8_t> plain;
  tss::Drop why = tss::Drop::kCount;
  if (!(trimmed ? tss_->open_trimmed(f.data, d, &plain, &why)
                : tss_->open(f.data, d, &plain, &why))) {
    ++rare().rx_tss_dropped;
    return false;
  }
  const wire::WireError err = wire::decode_opened(plain, &d);
  if (trimmed) {
    // A cut request fails only its SES length (or loses its extension): its PDS is readable.
    if (d.pds == nullptr || !wire::is_pdc_request(d.pds_type)) {
      ++rare().rx_trimmed_sealed_other;
      return false;
    }
    return true;
  }
  if (err != wire::WireError::kOk) {
    rare().wire.add(err);
    ++rare().rx_malformed;
    return false;
  }
  // §5.7: a domain bound to a job carries only that job's requests and responses (every SES
  // header but the small response names its job in bytes 5..7).
  if (tss_->binds_jobs() && d.ses != nullptr &&
      d.ses_desc != &wire::HeaderTraits<wire::SesResponseDataSmall>::desc) {
    const uint32_t job = tss_->bound_job(d);
    if (job != tss::kAnyJob && wire::load_be_n<3>(d.ses + 5) != job) {
      ++rare().rx_tss_cross_job;
      return false;
    }
  }
  return true;
}

void UetEndpoint::rx(std::span<Frame* const> frames, Time now) {
  now_ = now;
  for (const Frame* f : frames) rx_one(*f, now);
  if (streamed_) {  // placed bytes visible before anything this burst caused is sent
    wire::stream_fence();
    streamed_ = false;
  }
}

[[gnu::always_inline]] inline void UetEndpoint::rx_one(const Frame& f, Time now) {
  wire::DecodedStorage decoded;  // decode_frame constructs it
  wire::DecodeOptions opts;
  opts.elided = f.wire_len > f.len ? f.wire_len - f.len : 0;  // payload carried by length
  opts.header_stack = false;  // the engine reads the named headers only
  if (f.checksums_ok) opts.verify_ip_checksum = opts.verify_udp_checksum = false;  // host did
  const wire::WireError err =
      wire::decode_frame(std::span<const uint8_t>(f.data, f.len), decoded.slot(), opts);
  const wire::Decoded& d = decoded.get();
  const bool trimmed = d.ipv4 != nullptr && d.ipv4->dscp() == kDscpTrimmed;
  // A trimmed later packet fails the SES length check only (spec/uet.md §3.14).
  if (err != wire::WireError::kOk && !(err == wire::WireError::kBadSesLength && trimmed)) {
    rare().wire.add(err);
    ++rare().rx_malformed;
    return;
  }
  if ((tss_ != nullptr || !d.sealed.empty()) && !tss_open(f, decoded, trimmed)) return;
  // (After a tolerated length error the decoder has every header but did not set protocol.)
  if (d.pds == nullptr || d.ipv4 == nullptr || d.ipv4->dst() != local_ip4_) {
    ++rare().rx_malformed;
    return;
  }
  switch (d.pds_type) {
    case PdsType::kRudReq:
    case PdsType::kRudCcReq:  // §3.4: the same request with RCCC state
    case PdsType::kRodReq:
    case PdsType::kRodCcReq:
      rx_request(d, now);
      break;
    case PdsType::kRudiReq:  // §3.5, uet_rudi.cc
      rx_rudi_req(d);
      break;
    case PdsType::kRudiResp:
      rx_rudi_resp(d);
      break;
    case PdsType::kUudReq:  // §3.6, uet_uud.cc
      rx_uud(d);
      break;
    case PdsType::kAckCc:
    case PdsType::kAck:
      rx_ack(d, now);
      break;
    case PdsType::kNack:
      rx_nack(d, now);
      break;
    case PdsType::kCtrl:
      rx_ctrl(d, now);
      break;
    default:
      ++rare().rx_malformed;  // a mode this engine does not speak yet
      break;
  }
}

// §3.3 target side: find or create the PDC, check the window, serve the SES request, note
// the ACK.
[[gnu::always_inline]] inline void UetEndpoint::rx_request(const wire::Decoded& d, Time now) {
  // A RUD_CC request (§3.4) begins with the RUD request's fields.
  const wire::PdsRudRod& h = *wire::as<wire::PdsRudRod>(d.pds);
  const bool rod = d.pds_type == PdsType::kRodReq || d.pds_type == PdsType::kRodCcReq;
  const uint32_t psn = h.psn();
  // §3.14: a trimmed request has no UDP checksum, so its PDS header may be damaged without
  // anyone noticing: it never earns a PDC-fatal NACK (INV_DPDCID, NO_PDC_AVAIL) and never
  // replaces a PDC; the initiator's RTO recovers it.
  const bool trimmed = d.ipv4->dscp() == kDscpTrimmed;
  Pdc* const p = h.syn() ? syn_target(d, h, rod, trimmed) : known_target(d, h, trimmed);
  if (p == nullptr) return;
  const uint16_t id = p->id;
  if (p->rod != rod) {  // §3.10 PDC_MODE_MISMATCH (PDC-fatal)
    if (trimmed) {
      ++rare().rx_trimmed_unverified;
      return;
    }
    ++rare().rx_mode_mismatch;
    queue_nack(*p, wire::NackCode::kPdcModeMismatch, psn);
    return;
  }
  ++counters_.rx_data;
  note_request(*p, id, d, h, trimmed, now);
  const wire::SesStandardRequest* ses = d.ses_as<wire::SesStandardRequest>();
  if (!request_is_new(*p, psn, ses, trimmed)) return;
  // §3.8.1 rcvd_bytes and §3.8 ooo_count: a new, whole request.
  const uint32_t delta = psn - p->tgt.rcv_base;
  p->tgt.rcvd_bytes += static_cast<uint32_t>(d.payload.size() + d.elided);
  if (delta != 0 && p->tgt.ooo_count != 0xFFFF) ++p->tgt.ooo_count;
  // ROD (uet_rod.cc): a request past the next one to execute waits in the reorder buffer.
  if (p->rod && psn != p->tgt.rod_next) {
    if (rod_stage(*p, d, ses, psn) && ses != nullptr && ses->opcode() == wire::SesOpcode::kWrite) {
      p->tgt.ack_now = true;  // out of order: SACK it at once
    }
    return;
  }
  const Exec e =
      ses != nullptr
          ? execute_inline(*p, id, *ses, ses->raw + wire::SesStandardRequest::kSize, d.payload,
                           d.elided, psn)
          : Exec::kRecord;
  if (p->rod && e != Exec::kWait) ++p->tgt.rod_next;
  if (e != Exec::kRecord) {
    if (p->rod && e == Exec::kDone) rod_drain(*p, id);
    return;
  }
  const bool in_order = delta == 0;
  mark_received(*p, psn);
  if (p->rod) rod_drain(*p, id);  // staged requests behind it run now, in PSN order
  // §3.7 ACK coalescing: at once on AR, ECN-CE, out of order (ack_out_of_order) or a pending
  // response; else every ack_every packets or after ack_delay. An AR that overtook packets is
  // answered again when they have all arrived (as uet-htsim's sink does), not an ack_delay
  // later.
  ++p->tgt.unacked_rx;
  if (h.ar() && !in_order) {
    p->tgt.ar_held = true;
    p->tgt.ar_psn = psn;
  }
  const bool ar_filled = p->tgt.ar_held && psn_before(p->tgt.ar_psn, p->tgt.rcv_base);
  if (ar_filled) p->tgt.ar_held = false;
  if (h.ar() || ar_filled || d.ecn == 3 || (!in_order && hot_.ack_out_of_order) ||
      p->tgt.rsp_pending() || p->tgt.unacked_rx >= hot_.ack_every) {
    p->tgt.ack_now = true;
  } else if (!p->tgt.ack_pending) {
    p->tgt.ack_pending = true;
    p->tgt.ack_deadline = now + hot_.ack_delay;
    deadline_ = std::min(deadline_, p->tgt.ack_deadline);
  }
}

// A SYN's target PDC: the one this (peer, PDC id) has, or a new one (§3.3); null when refused
// (NACKed or, trimmed, dropped).
[[gnu::always_inline]] inline UetEndpoint::Pdc* UetEndpoint::syn_target(const wire::Decoded& d,
                                                                        const wire::PdsRudRod& h,
                                                                        bool rod, bool trimmed) {
  const uint32_t src = d.ipv4->src();
  const uint32_t psn = h.psn();
  const uint32_t start = psn - h.psn_offset();
  if (const int32_t known = pdcs_.find_target(src, h.spdcid()); known >= 0) {
    const auto id = static_cast<uint16_t>(known);
    // §3.3: a SYN names its PDC's start PSN. Another start PSN under the same (peer, PDC
    // id) is a new PDC of that peer (the old one failed or closed without our knowing):
    // the stale state goes, the new PDC starts afresh.
    if (pdcs_[id].start_psn == start) {
      Pdc* p = &pdcs_[id];
      mark_ready(*p);
      return p;
    }
    if (trimmed) {
      ++rare().rx_trimmed_unverified;
      return nullptr;
    }
    ++rare().pdc_reopened;
    release_target(id);
  }
  // §5.6 secure establishment: a new PDC starts at or above the expected PSN.
  if (tss_ != nullptr && !tss_->start_psn_ok(src, h.spdcid(), start)) {
    if (trimmed) {
      ++rare().rx_trimmed_unverified;
      return nullptr;
    }
    ++rare().rx_start_psn_refused;
    const uint32_t expected = tss_->expected_start_psn(src, h.spdcid(), start);
    queue_stateless_nack(src, h.spdcid(), static_cast<uint8_t>(wire::NackCode::kNewStartPsn), psn,
                         Stateless::kNack, 0, &expected);
    return nullptr;
  }
  int32_t n = alloc_pdc(Role::kTarget);
  if (n < 0 && !trimmed) n = reclaim_unanswered();
  if (n < 0) {  // §3.10 NO_PDC_AVAIL: the table is full
    if (trimmed) {
      ++rare().rx_trimmed_unverified;
      return nullptr;
    }
    ++rare().rx_no_pdc_avail;
    queue_stateless_nack(src, h.spdcid(), static_cast<uint8_t>(wire::NackCode::kNoPdcAvail), psn);
    return nullptr;
  }
  const auto id = static_cast<uint16_t>(n);
  Pdc& np = pdcs_[id];
  set_peer(np, src);
  np.peer_pdcid = h.spdcid();
  np.ev_base = static_cast<uint16_t>(next_random());
  np.tgt.rcv_base = np.start_psn = start;
  np.rod = rod;  // the SYN fixes the PDC's mode
  np.tgt.rod_next = start;
  pdcs_.set_target(src, h.spdcid(), id);
  mark_ready(np);
  return &np;
}

// A request's target PDC named by DPDCID; null (§3.10 INV_DPDCID, or dropped if trimmed) when
// it is not this peer's.
[[gnu::always_inline]] inline UetEndpoint::Pdc* UetEndpoint::known_target(const wire::Decoded& d,
                                                                          const wire::PdsRudRod& h,
                                                                          bool trimmed) {
  const uint32_t src = d.ipv4->src();
  Pdc* p = pdc(h.dpdcid());
  if (p != nullptr && p->role == Role::kTarget && p->peer_ip4 == src &&
      p->peer_pdcid == h.spdcid()) {
    return p;
  }
  if (trimmed) {
    ++rare().rx_trimmed_unverified;
    return nullptr;
  }
  ++rare().rx_unknown_pdc;
  queue_stateless_nack(src, h.spdcid(), static_cast<uint8_t>(wire::NackCode::kInvDpdcid), h.psn());
  return nullptr;
}

// What a request tells its target PDC whether or not it is new: the sender's credit wish, that
// the initiator is alive, its clear PSN, and the newest arrival (and CE mark) the ACK reports.
[[gnu::always_inline]] inline void UetEndpoint::note_request(Pdc& p, uint16_t id,
                                                             const wire::Decoded& d,
                                                             const wire::PdsRudRod& h, bool trimmed,
                                                             Time now) {
  const uint32_t psn = h.psn();
  // RCCC: each RUD_CC request says what its sender still wants (want is set, not added, so
  // a lost grant is asked for again). A trimmed header is used too: the target is bounded.
  if (const wire::PdsRudRodCc* cc = d.pds_as<wire::PdsRudRodCc>(); cc != nullptr) {
    rccc_rx_.on_request(id, cc->credit_target(), now);
  }
  p.close_tries = 0;  // the initiator is alive: REQ_CLOSE may start over when idle again
  p.tgt.unanswered = false;
  if (hot_.idle_timeout != 0) {
    p.idle_deadline = now + 2 * hot_.idle_timeout;
    deadline_ = std::min(deadline_, p.idle_deadline);
  }
  // §3.3: refusals up to the clear PSN are no longer needed (not from a trimmed header).
  if (!trimmed)
    clear_to(p, psn + static_cast<uint32_t>(static_cast<int32_t>(h.clear_psn_offset())));
  p.tgt.last_psn = psn;
  p.tgt.last_retx = h.retx();
  p.tgt.last_arrival = now;
  if (d.ecn == 3 && !p.tgt.ce_seen) {  // the first CE since the last ACK triggers the next one
    p.tgt.ce_seen = true;
    p.tgt.ce_psn = psn;
    p.tgt.ce_retx = h.retx();
    p.tgt.ce_arrival = now;
  }
}

// §3.10 receive window: whether `psn` is new and inside it. If not, it is answered: NACKed out
// of the window or trimmed, its refusal again (refused, §4.6), its data again (a READ
// answered), or a re-ACK (a duplicate).
[[gnu::always_inline]] inline bool UetEndpoint::request_is_new(Pdc& p, uint32_t psn,
                                                               const wire::SesStandardRequest* ses,
                                                               bool trimmed) {
  const uint32_t delta = psn - p.tgt.rcv_base;
  const uint32_t idx = (psn & mpr_mask_);
  const bool old = psn_before(psn, p.tgt.rcv_base);
  if (!old && delta >= hot_.mpr) {  // §3.10 PSN_OOR_WINDOW
    ++counters_.rx_out_of_window;
    queue_nack(p, wire::NackCode::kPsnOorWindow, psn);
    return false;
  }
  if (!old && test_bit(p.tgt.gtd_bits, idx)) {  // a refused PSN again: its refusal again
    ++counters_.rx_duplicates;
    if (!trimmed) {
      const Pdc::Refusal& g = p.tgt.gtd[idx];
      Pdc::Response r;
      r.code = g.code;
      r.message_id = g.message_id;
      r.psn = psn;
      if (g.result != 0) {  // a fetching atomic: its values again, never executed again
        r.data = true;
        r.result = g.result;
        r.len = g.len;
        ++rare().rx_atomic_replays;
      } else if (g.rdv != 0 && ses != nullptr) {  // a rendezvous source's READ: read again
        r = read_response(*ses, psn, p.peer_ip4);
      }
      if (queue_response(p, r, /*repeat=*/true)) ++rare().tx_refusal_repeats;
    }
    p.tgt.ack_now = true;
    return false;
  }
  const bool received = old || test_bit(p.tgt.rcv_bits, idx);
  if (received || test_bit(p.tgt.rsp_bits, idx)) {
    ++counters_.rx_duplicates;  // never delivered twice; re-ACK at once
    // A READ already answered is answered again: its data ACK may have been lost, and a read
    // is idempotent. One that is still queued (rsp_bits) is not answered twice.
    if (received && !trimmed && ses != nullptr && ses->opcode() == wire::SesOpcode::kRead) {
      queue_response(p, read_response(*ses, psn, p.peer_ip4), /*repeat=*/true);
    }
    p.tgt.ack_now = true;
    return false;
  }
  if (trimmed) {  // §3.14: a trimmed request: ask for it again
    ++counters_.rx_trimmed;
    queue_nack(p, wire::NackCode::kTrimmed, psn);
    return false;
  }
  return true;
}

UetEndpoint::Exec UetEndpoint::execute(Pdc& p, uint16_t id, const wire::SesStandardRequest& ses,
                                       const uint8_t* ext, std::span<const uint8_t> payload,
                                       size_t elided, uint32_t psn) {
  return execute_inline(p, id, ses, ext, payload, elided, psn);
}

// Executes request `psn` at the target (§4.2 WRITE placement, §4.7 READ, SEND): from the frame,
// or (ROD) from the reorder buffer.
[[gnu::always_inline]] inline UetEndpoint::Exec UetEndpoint::execute_inline(
    Pdc& p, uint16_t id, const wire::SesStandardRequest& ses, const uint8_t* ext,
    std::span<const uint8_t> payload, size_t elided, uint32_t psn) {
  // §4.1: the job, process and resource index first: nothing is placed for another's.
  if (const wire::SesReturnCode why = check_access(ses.raw); why != wire::SesReturnCode::kNull)
      [[unlikely]] {
    refuse(p, psn, static_cast<uint8_t>(why), ses.message_id());
    return Exec::kDone;
  }
  switch (ses.opcode()) {
    case wire::SesOpcode::kWrite: {
      // §4.2 placement: payload at buffer_offset + message_offset in region match_bits.
      const auto [key, at, len] = write_placement(ses, payload.size());
      const Region* r = writable(key, at, len);
      if (r == nullptr) [[unlikely]] {
        if (is_rdv_key(key)) return rdv_sink(p, ses, key, at, len, payload, psn);
        refuse(p, psn, static_cast<uint8_t>(check_region(key, at, len)), ses.message_id());
        return Exec::kDone;  // a hole until cleared (Pdc::Target::gtd)
      }
      if (!payload.empty()) {
        if (r->stream) {
          wire::stream_copy(r->base + at, payload.data(), payload.size());
          streamed_ = true;
        } else {
          std::memcpy(r->base + at, payload.data(), payload.size());
        }
      }
      break;
    }
    case wire::SesOpcode::kRead: {
      // Answered by one ACK carrying the data, recorded with it; or refused (Pdc::Target::gtd).
      const Pdc::Response r = read_response(ses, psn, p.peer_ip4);
      if (r.data) {
        queue_response(p, r, /*repeat=*/false);
        return Exec::kWait;
      }
      refuse(p, psn, r.code, r.message_id);
      return Exec::kDone;
    }
    case wire::SesOpcode::kSend:
      return rx_send(p, id, payload, elided, ses, psn);
    case wire::SesOpcode::kTaggedSend:
      return rx_tagged(p, id, payload, elided, ses, psn);
    case wire::SesOpcode::kAtomic:
    case wire::SesOpcode::kFetchingAtomic:
      return rx_atomic(p, ses, ext, payload, elided, psn);
    case wire::SesOpcode::kRendezvousSend:
    case wire::SesOpcode::kRendezvousTsend:
      return rx_rendezvous(p, ses, ext, payload, elided, psn);
    case wire::SesOpcode::kDeferrableSend:
    case wire::SesOpcode::kDeferrableTsend:
      return rx_deferrable(p, id, payload, elided, ses, psn);
    case wire::SesOpcode::kDeferrableRtr:
      return rx_rtr(p, ses, psn);
    case wire::SesOpcode::kMsgError:
      rx_msg_error(id, ses);
      break;
    case wire::SesOpcode::kNoop:
      break;
    default: {  // §4.9 UNSUPPORTED_OP
      ++rare().rx_unsupported;
      refuse(p, psn, static_cast<uint8_t>(wire::SesReturnCode::kUnsupportedOp), ses.message_id());
      return Exec::kDone;
    }
  }
  return Exec::kRecord;
}

// §3.12 control packets: CLOSE, REQ_ACK and CREDIT_REQ (target), REQ_CLOSE and CREDIT
// (initiator).
void UetEndpoint::rx_ctrl(const wire::Decoded& d, Time now) {
  const wire::PdsCtrl& h = *d.pds_as<wire::PdsCtrl>();
  const uint32_t src = d.ipv4->src();
  Pdc* p = pdc(h.dpdcid());
  switch (h.ctl_type()) {
    case wire::CtrlType::kClose:
      rx_close(h, p, src);
      return;
    case wire::CtrlType::kReqClose:
      rx_req_close(h, p, src, now);
      return;
    case wire::CtrlType::kClear:  // the initiator's clear PSN (§3.3) without a request
      if (p != nullptr && p->role == Role::kTarget && p->peer_ip4 == src &&
          p->peer_pdcid == h.spdcid()) {
        ++rare().rx_clear;
        clear_to(*p, h.ctrl_payload());
        p->tgt.ack_now = true;  // the ACK shows the CACK that moved
        return;
      }
      ++rare().rx_bad_ctrl;
      return;
    case wire::CtrlType::kReqAck:  // the initiator asks whether we live: ACK what arrived
      if (p != nullptr && p->role == Role::kTarget && p->peer_ip4 == src &&
          p->peer_pdcid == h.spdcid()) {
        ++counters_.rx_req_ack;
        p->tgt.ack_now = true;
        mark_ready(*p);
        return;
      }
      ++rare().rx_bad_ctrl;
      return;
    case wire::CtrlType::kCredit:  // RCCC: credit granted by the target, in bytes
      if (p != nullptr && p->role == Role::kInitiator && p->peer_ip4 == src && !p->closing &&
          (!p->established || p->peer_pdcid == h.spdcid())) {
        ++counters_.rx_credit;
        on_credit(*p, h.ctrl_payload());
        return;
      }
      ++rare().rx_bad_ctrl;
      return;
    case wire::CtrlType::kCreditReq:  // RCCC: the sender asks again (a grant may be lost)
      if (p != nullptr && p->role == Role::kTarget && p->peer_ip4 == src &&
          p->peer_pdcid == h.spdcid()) {
        ++counters_.rx_credit_req;
        rccc_rx_.on_request(h.dpdcid(), h.ctrl_payload(), now);
        return;
      }
      ++rare().rx_bad_ctrl;
      return;
    default:
      ++rare().rx_bad_ctrl;  // control types this engine does not act on
      return;
  }
}

}  // namespace uet
