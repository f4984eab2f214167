// SES rendezvous (spec/uet.md §4.5.3): at the initiator, a long send's source exposed under its
// own key, the READs of it answered and held until the reader clears them (§3.3), then the
// send's completion; at the target, the rendezvous request matched as a SEND or tagged send
// is, its eager bytes placed, and the READ of the rest posted back to the initiator, whose
// completion completes the receive. NOTES.md, "Rendezvous", says how it travels.
#include <algorithm>
#include <cstring>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

// --------------------------------------------------------------------- initiator: sources

// Send `o` (about to be posted on `p`) goes by rendezvous if a source is free: its bytes past
// the eager ones are exposed, and it completes when they have all been read and cleared.
void UetEndpoint::rdv_expose(Pdc& p, Op& o) {
  if (tab().rdv.empty()) {  // the endpoint's first rendezvous send: its source table
    tab().rdv.assign(config_.rendezvous_sources, RdvSource{});
    tab().rdv_free.resize(config_.rendezvous_sources);
    for (uint32_t i = 0; i < config_.rendezvous_sources; ++i) {
      tab().rdv_free[i] = config_.rendezvous_sources - 1 - i;
    }
  }
  if (tab().rdv_free.empty()) {  // every source exposed: this one goes eagerly
    ++rare().tx_rendezvous_eager;
    return;
  }
  const uint32_t i = tab().rdv_free.back();
  tab().rdv_free.pop_back();
  RdvSource& s = tab().rdv[i];
  s.live = true;
  ++s.gen;
  s.pdc = p.id;
  s.op = p.ini.op_tail;
  s.base = o.src;
  s.length = o.length;
  s.cleared = 0;
  s.deadline = now_ + config_.rendezvous_timeout;
  s.send_wr_id = o.wr_id;
  s.send_op = o.op;
  deadline_ = std::min(deadline_, s.deadline);
  ++rdv_live_;
  ++rare().tx_rendezvous;
  o.rdv = i + 1;
}

// Send `o`'s source is withdrawn (its READs done, or the send failed): a READ naming its key
// now is refused, and the send no longer waits for it.
void UetEndpoint::rdv_release(Op& o) noexcept {
  rdv_free(o.rdv - 1);
  o.rdv = 0;
  --o.unacked;
}

void UetEndpoint::rdv_free(uint32_t i) noexcept {
  tab().rdv[i].live = false;
  tab().rdv[i].pushing = false;
  tab().rdv[i].base = nullptr;
  tab().rdv_free.push_back(i);
  --rdv_live_;
}

// §4.5.3: the extension after a rendezvous request's standard header. The key exposes the
// whole message; the target reads from read_offset = eager_length to request_length.
bool UetEndpoint::put_rendezvous(const Op& o, wire::FrameBuilder& b) {
  wire::SesRendezvous* h = b.add<wire::SesRendezvous>();
  if (h == nullptr) return false;
  const uint32_t i = o.rdv - 1;
  h->set_eager_length(rdv_eager());
  h->set_read_pid_on_fep(static_cast<uint16_t>(config_.pid_on_fep));
  h->set_read_resource_index(0);
  h->set_read_offset(rdv_eager());
  h->set_read_match_bits(rdv_key(i, tab().rdv[i].gen));
  return true;
}

// A READ of a source: kNull if the key is a live source's, the reader its send's peer, and
// [at, at + len) inside it; else why not (BAD_MKEY, BAD_ADDR), counted.
wire::SesReturnCode UetEndpoint::rdv_read_check(uint32_t peer, uint64_t key, uint64_t at,
                                                uint64_t len) {
  const uint32_t i = key & 0xFFFF;
  // (A pushed source is read by no one: its send has handed over and retired.)
  if (key > 0xFFFFFFFFu || i >= tab().rdv.size() || !tab().rdv[i].live || tab().rdv[i].pushing ||
      key != rdv_key(i, tab().rdv[i].gen) || pdcs_[tab().rdv[i].pdc].peer_ip4 != peer) {
    ++rare().rx_rdv_bad_read;
    return wire::SesReturnCode::kBadMkey;
  }
  RdvSource& s = tab().rdv[i];
  if (at > s.length || len > s.length - at) {
    ++rare().rx_rdv_bad_read;
    return wire::SesReturnCode::kBadAddr;
  }
  s.deadline = now_ + config_.rendezvous_timeout;  // the reader is at work
  ++rare().rx_rdv_reads;
  return wire::SesReturnCode::kNull;
}

// The ACK answering READ `r` of a source is being built: the answer is held as a refusal is
// (Pdc::Target::gtd) until the reader's clear PSN passes it, which tells the source that the
// reader has these bytes. A source withdrawn since the READ was queued answers BAD_MKEY.
void UetEndpoint::rdv_hold(Pdc& p, Pdc::Response& r) {
  const uint32_t i = r.key & 0xFFFF;
  const bool live = tab().rdv[i].live && r.key == rdv_key(i, tab().rdv[i].gen);
  if (!live) {
    ++rare().rx_rdv_bad_read;
    r.data = false;
    r.code = static_cast<uint8_t>(wire::SesReturnCode::kBadMkey);
  }
  if (r.repeat) return;
  const uint32_t idx = r.psn & mpr_mask_;
  if (!internal::test_bit(p.tgt.gtd_bits, idx)) {
    internal::set_bit(p.tgt.gtd_bits, idx);
    ++p.tgt.gtd_live;
  }
  if (p.tgt.gtd.empty()) p.tgt.gtd.assign(hot_.mpr, Pdc::Refusal{});
  Pdc::Refusal g;
  g.code = r.code;
  g.message_id = r.message_id;
  if (live) {
    g.rdv = r.key;
    g.rdv_len = static_cast<uint16_t>(r.len);
  }
  p.tgt.gtd[idx] = g;
}

// The reader cleared a READ answer of source `key` carrying `len` bytes: when every byte past
// the eager ones is cleared, the send is complete.
void UetEndpoint::rdv_cleared(uint32_t key, uint16_t len) {
  const uint32_t i = key & 0xFFFF;
  if (i >= tab().rdv.size()) return;
  RdvSource& s = tab().rdv[i];
  if (!s.live || s.pushing || key != rdv_key(i, s.gen)) return;  // withdrawn (timed out)
  s.cleared += len;
  s.deadline = now_ + config_.rendezvous_timeout;
  if (s.cleared < s.length - rdv_eager()) return;
  Pdc& p = pdcs_[s.pdc];
  rdv_release(p.ini.ops[s.op]);
  retire(p);
  note_idle(p, now_);
  mark_ready(p);
}

// Sources no READ touched for rendezvous_timeout: the send completes kRetriesExhausted (the
// target never read it, or stopped) and its key is withdrawn. Returns the next deadline.
Time UetEndpoint::rdv_timer(Time now) {
  Time next = kNever;
  for (uint32_t i = 0; i < tab().rdv.size() && rdv_live_ > 0; ++i) {
    RdvSource& s = tab().rdv[i];
    if (!s.live) continue;
    if (s.deadline > now) {
      next = std::min(next, s.deadline);
      continue;
    }
    ++rare().rdv_timeouts;
    Pdc& p = pdcs_[s.pdc];
    Op& o = p.ini.ops[s.op];
    if (!o.failed) {
      o.failed = true;
      o.status = OpStatus::kRetriesExhausted;
    }
    rdv_release(o);
    retire(p);
    note_idle(p, now);
    mark_ready(p);
  }
  return next;
}

// ------------------------------------------------------------------------ target: requests

// §4.5.3 at the target: a rendezvous request is one packet, its eager bytes and the name of
// the rest. Matched as its SEND or tagged send would be; once the receive is known, the rest
// is READ into it and the receive completes with that READ. kRecord; kWait: NACKed (no
// buffer, no message state, no room to post the READ: it comes again); kDone: refused.
UetEndpoint::Exec UetEndpoint::rx_rendezvous(Pdc& p, const wire::SesStandardRequest& ses,
                                             const uint8_t* ext,
                                             std::span<const uint8_t> payload, size_t elided,
                                             uint32_t psn) {
  if (ses.ie()) {  // §4.1: given up by its sender (no buffer): nothing to match or read
    ++rare().rx_initiator_err;
    return Exec::kRecord;
  }
  const wire::SesRendezvous& h = *wire::as<wire::SesRendezvous>(ext);
  const uint64_t length = ses.request_length();
  const uint64_t eager = h.eager_length();
  // One packet, its eager bytes all here (or carried by length: the simulator), the rest
  // named by a key our READs can carry (32 bits).
  if (!ses.som() || !ses.eom() || eager >= length || payload.size() + elided != eager ||
      h.read_match_bits() > 0xFFFFFFFFu) {
    ++rare().rx_rdv_refused;
    refuse(p, psn, static_cast<uint8_t>(wire::SesReturnCode::kUnsupportedSize),
           ses.message_id());
    return Exec::kDone;
  }
  ++rare().rx_rendezvous;
  const bool tagged = ses.opcode() == wire::SesOpcode::kRendezvousTsend;
  if (tagged) tagged_tables();
  if (rx_msgs_.empty()) rx_msgs_.assign(config_.max_recv_messages, RxMsg{});
  if (!tagged && recv_claim_ == recv_tail_) {  // no buffer posted: "still processing" (§3.10)
    ++rare().rx_rnr;
    queue_nack(p, wire::NackCode::kRcvdSesProcg, psn);
    return Exec::kWait;
  }
  RxMsg* const mp = take_msg(p, psn);
  if (mp == nullptr) return Exec::kWait;
  RxMsg& m = *mp;
  m.rdv = true;
  m.tagged = tagged;
  m.length = length;
  m.eager = eager;
  m.peer = p.peer_ip4;
  m.tag = ses.match_bits();
  if (ses.hd()) {  // §4.2: header data rides on the SOM packet
    m.has_data = true;
    m.data = ses.header_data();
  }
  const RdvRead rd{static_cast<uint32_t>(h.read_match_bits()), h.read_pid_on_fep(),
                   h.read_resource_index(), h.read_offset()};
  return tagged ? rdv_tagged(p, m, rd, payload, psn)
                : rdv_untagged(p, m, rd, ses.message_id(), payload, psn);
}

// An untagged rendezvous takes the next posted buffer (§4.5.3): refused kTooLong when the
// whole message would not fit, else the READ of the rest is posted into it.
UetEndpoint::Exec UetEndpoint::rdv_untagged(Pdc& p, RxMsg& m, const RdvRead& rd,
                                            uint16_t message_id,
                                            std::span<const uint8_t> payload, uint32_t psn) {
  Recv& r = recvs_[recv_claim_];
  if (m.length > r.rb.length) {  // nothing of it is written; both ends complete kLengthError
    ++rare().rx_length_error;
    r.peer = p.peer_ip4;
    r.done = true;
    r.status = OpStatus::kLengthError;
    ++recv_claim_;
    deliver_recvs();
    refuse(p, psn, static_cast<uint8_t>(wire::SesReturnCode::kTooLong), message_id);
    return Exec::kDone;
  }
  m.dst = r.rb.base;
  m.cap = r.rb.length;
  m.recv = recv_claim_;
  if (!rdv_fetch(m, rd)) {
    queue_nack(p, wire::NackCode::kNoSesMsgAvail, psn);
    return Exec::kWait;
  }
  r.peer = p.peer_ip4;
  r.has_imm = m.has_data;
  r.imm = static_cast<uint32_t>(m.data);
  ++recv_claim_;
  rdv_keep(m, payload);
  return Exec::kRecord;
}

// A tagged rendezvous matches a posted receive (its READ posted into it), or waits in the
// unexpected list with its eager bytes and the name of the rest (§4.1).
UetEndpoint::Exec UetEndpoint::rdv_tagged(Pdc& p, RxMsg& m, const RdvRead& rd,
                                          std::span<const uint8_t> payload, uint32_t psn) {
  uint32_t t = tab().trecv_list.head;
  while (t != kNoLink && !tag_matches(tab().trecvs[t].tr, m.tag, m.peer)) t = tab().trecvs[t].next;
  if (t != kNoLink) {
    const TaggedRecv& tr = tab().trecvs[t].tr;
    m.wr_id = tr.wr_id;
    m.dst = tr.base;
    m.cap = tr.length;
    if (!rdv_fetch(m, rd)) {
      queue_nack(p, wire::NackCode::kNoSesMsgAvail, psn);
      return Exec::kWait;
    }
    unlink_trecv(t);
    ++rare().rx_tagged_matched;
    rdv_keep(m, payload);
    return Exec::kRecord;
  }
  if (!stage_unexpected(m, m.eager)) {
    ++rare().rx_unexpected_full;
    queue_nack(p, wire::NackCode::kNoSesMsgAvail, psn);
    return Exec::kWait;
  }
  Unexp& e = tab().unexp[static_cast<uint32_t>(m.unexp)];
  e.complete = true;
  e.has_data = m.has_data;
  e.data = m.data;
  e.rdv = true;
  e.rdv_length = m.length;
  e.read = rd;
  if (!payload.empty()) std::memcpy(m.dst, payload.data(), payload.size());
  ++rare().rx_tagged_unexpected;
  return Exec::kRecord;  // no message state held: the entry has all it needs
}

// The eager bytes go to the receive now; the message state waits for the READ of the rest.
void UetEndpoint::rdv_keep(RxMsg& m, std::span<const uint8_t> payload) {
  if (const uint64_t fit = std::min<uint64_t>(payload.size(), m.cap); fit > 0) {
    std::memcpy(m.dst, payload.data(), fit);
  }
  m.in_use = true;
  ++rx_msgs_used_;
}

// A tagged receive matched unexpected rendezvous message `u`: its eager bytes are copied and
// the rest READ into the receive. Refused (nothing taken) without a message state or room to
// post the READ.
absl::Status UetEndpoint::rdv_matched(const TaggedRecv& tr, uint32_t u) {
  Unexp& e = tab().unexp[u];
  if (rx_msgs_used_ == rx_msgs_.size()) {
    return absl::ResourceExhaustedError(
        "post_trecv: the rendezvous message it matches needs a message state "
        "(max_recv_messages)");
  }
  RxMsg& m = *std::find_if(rx_msgs_.begin(), rx_msgs_.end(),
                           [](const RxMsg& x) { return !x.in_use; });
  m = RxMsg{};
  m.rdv = true;
  m.tagged = true;
  m.length = e.rdv_length;
  m.eager = e.length;
  m.peer = e.peer;
  m.tag = e.tag;
  m.has_data = e.has_data;
  m.data = e.data;
  m.wr_id = tr.wr_id;
  m.dst = tr.base;
  m.cap = tr.length;
  if (!rdv_fetch(m, e.read)) {
    return absl::ResourceExhaustedError(
        "post_trecv: no room to post the READ or CTS of the rendezvous message it matches "
        "(max_ops, max_pdcs)");
  }
  if (const uint64_t fit = std::min(e.length, tr.length); fit > 0) {
    std::memcpy(tr.base, arena_.get() + e.at, fit);
  }
  m.in_use = true;
  ++rx_msgs_used_;
  unlink_unexpected(u);
  free_unexpected(u);
  return absl::OkStatus();
}

// Posts the READ of message m's rest (past its eager bytes) from the source `rd` names, on a
// PDC to its sender; its completion completes the receive. False: no room (max_ops, PDCs).
bool UetEndpoint::rdv_read(RxMsg& m, const RdvRead& rd) {
  Op op;
  op.op = Opcode::kRead;
  op.rkey = rd.key;
  op.remote_offset = rd.offset;
  op.length = m.length - m.eager;
  op.to = SesAddress{.pid_on_fep = rd.pid_on_fep, .resource_index = rd.resource_index};
  op.rdv = static_cast<uint32_t>(&m - rx_msgs_.data()) + 1;
  return post_op(m.peer, /*rod=*/false, op, "rendezvous READ").ok();
}

// READ data of message o.rdv - 1 at `at` past its eager bytes: the bytes that fit its buffer.
void UetEndpoint::rdv_place(const Op& o, uint64_t at, std::span<const uint8_t> data) {
  const RxMsg& m = rx_msgs_[o.rdv - 1];
  const uint64_t to = m.eager + at;
  if (to < m.cap && !data.empty()) {
    std::memcpy(m.dst + to, data.data(), std::min<uint64_t>(data.size(), m.cap - to));
  }
}

// A rendezvous READ completed (or failed): so does its receive. A CTS only when it failed
// (refused, or its PDC failed: the initiator is gone) and its receive still waits for the push.
void UetEndpoint::rdv_read_done(const Op& o) {
  RxMsg& m = rx_msgs_[o.rdv - 1];
  if (o.op == Opcode::kRecv) {
    if (o.failed && m.in_use && m.rdv && m.sink == o.remote_offset) {
      m.cts_held = false;  // the CTS is retiring or its PDC is being freed
      complete_rdv(m, o.status);
    }
    return;
  }
  complete_rdv(m, o.failed ? o.status : OpStatus::kSuccess);
}

void UetEndpoint::complete_rdv(RxMsg& m, OpStatus status) {
  cts_release(m);
  m.in_use = false;
  m.rdv = false;
  if (m.sink != 0) {
    m.sink = 0;
    --sinks_live_;
  }
  --rx_msgs_used_;
  if (m.tagged) {
    TaggedRecv tr;
    tr.wr_id = m.wr_id;
    tr.base = m.dst;
    tr.length = m.cap;
    m.status = status;
    complete_trecv(tr, m, nullptr);
    return;
  }
  Recv& r = recvs_[m.recv];
  r.done = true;
  r.status = status;
  r.bytes = status == OpStatus::kSuccess ? m.length : 0;
  deliver_recvs();
}

// ------------------------------------------------------------------ pushed rendezvous

// The target's other way to the rest (UetConfig::rendezvous_push): a DEFERRABLE_RTR to the
// initiator (§4.2; the CTS), the source's key as its token and in buffer_offset a key of our
// own naming message m (bit 31 set, a generation, m's number: never a region's key), under
// which the initiator WRITEs the rest. False: no room (max_ops, max_pdcs).
bool UetEndpoint::rdv_cts(RxMsg& m, const RdvRead& rd) {
  const auto index = static_cast<uint32_t>(&m - rx_msgs_.data());
  const uint32_t sink = rdv_key(index, ++sink_gen_);
  Op op;
  op.op = Opcode::kRecv;
  op.tag = rd.key;
  op.remote_offset = sink;
  op.to = SesAddress{.pid_on_fep = rd.pid_on_fep, .resource_index = rd.resource_index};
  op.rdv = index + 1;
  if (!post_op(m.peer, /*rod=*/false, op, "rendezvous CTS").ok()) return false;
  m.sink = sink;
  m.remaining = m.length - m.eager;
  m.deadline = now_ + config_.rendezvous_timeout;
  deadline_ = std::min(deadline_, m.deadline);
  ++sinks_live_;
  ++rare().tx_rdv_cts;
  return true;
}

// CTS `o` was posted on `p`: it holds its PDC (one more than its PSNs unacknowledged) until
// the push is done, so that PDC asks the initiator whether it lives while the receive waits
// (hold_probe_after, spec/uet.md §3.12 REQ_ACK) and its failure fails the receive: a sender
// that dies after the CTS is found within the retry budget, not rendezvous_timeout.
void UetEndpoint::cts_posted(const Pdc& p, const Op& o) noexcept {
  RxMsg& m = rx_msgs_[o.rdv - 1];
  m.cts_held = true;
  m.cts_pdc = p.id;
  m.cts_op = p.ini.op_tail;
}

// Whether CTS `o` still holds its PDC for the push (it may outlive its receive).
bool UetEndpoint::cts_holds(const Op& o) const noexcept {
  if (!is_cts(o)) return false;
  const RxMsg& m = rx_msgs_[o.rdv - 1];
  return m.cts_held && m.in_use && m.sink == o.remote_offset;
}

// CTS `o` failed (refused, or given up after RNR): no push will come; it retires with its PSN.
void UetEndpoint::cts_drop(Op& o) noexcept {
  if (!cts_holds(o)) return;
  rx_msgs_[o.rdv - 1].cts_held = false;
  --o.unacked;
}

// Message m's receive is complete (pushed, or timed out): its CTS no longer holds its PDC.
void UetEndpoint::cts_release(RxMsg& m) {
  if (!m.cts_held) return;
  m.cts_held = false;
  Pdc& p = pdcs_[m.cts_pdc];
  --p.ini.ops[m.cts_op].unacked;
  retire(p);
  note_idle(p, now_);
  mark_ready(p);
}

// A CTS at the initiator: the rest of the source its token names is WRITTEN under the key
// it carries, to the send's target address, on a RUD PDC (its order matters to no one: the
// message is matched already). A token naming no live source (timed out, failed) is refused
// BAD_MKEY, as a READ of it would be, and the target's receive completes with that error.
// kWait: NACKed, no room to post the WRITE (the CTS comes again).
UetEndpoint::Exec UetEndpoint::rdv_push(Pdc& p, const wire::SesStandardRequest& ses,
                                        uint32_t psn) {
  const uint64_t key = ses.match_bits();
  const uint32_t i = key & 0xFFFF;
  if (key > 0xFFFFFFFFu || i >= tab().rdv.size() || !tab().rdv[i].live || key != rdv_key(i, tab().rdv[i].gen) ||
      pdcs_[tab().rdv[i].pdc].peer_ip4 != p.peer_ip4 || tab().rdv[i].pushing ||
      ses.buffer_offset() > 0xFFFFFFFFu) {
    ++rare().rx_rdv_bad_read;
    refuse(p, psn, static_cast<uint8_t>(wire::SesReturnCode::kBadMkey), ses.message_id());
    return Exec::kDone;
  }
  RdvSource& s = tab().rdv[i];
  Op w;
  w.op = Opcode::kWrite;
  w.src = s.base + rdv_eager();
  w.length = s.length - rdv_eager();
  w.rkey = static_cast<uint32_t>(ses.buffer_offset());
  w.to = pdcs_[s.pdc].ini.ops[s.op].to;
  w.push = i + 1;
  w.tag = key;
  if (!post_op(p.peer_ip4, /*rod=*/false, w, "rendezvous WRITE").ok()) {
    queue_nack(p, wire::NackCode::kNoSesMsgAvail, psn);
    return Exec::kWait;
  }
  s.pushing = true;
  s.deadline = kNever;  // the WRITE's own retries bound it now
  ++rare().tx_rdv_pushes;
  rdv_hand_over(i);
  return Exec::kRecord;
}

// Source i's WRITE is posted: its send hands its completion over to it and retires once its
// request is acknowledged, completing nothing, so each completes in its own PDC's order (a
// RUD send and its WRITE share a PDC, where the send would otherwise wait for the WRITE
// behind it).
void UetEndpoint::rdv_hand_over(uint32_t i) {
  Pdc& p = pdcs_[tab().rdv[i].pdc];
  Op& o = p.ini.ops[tab().rdv[i].op];
  o.push = i + 1;
  o.rdv = 0;
  --o.unacked;
  retire(p);
  note_idle(p, now_);
  mark_ready(p);
}

// Pushed WRITE `w` retired (acknowledged to its last PSN) or failed: it completes its send,
// as the send would have, and withdraws the source.
void UetEndpoint::rdv_pushed(const Op& w) {
  const uint32_t i = w.push - 1;
  const RdvSource& s = tab().rdv[i];
  if (!s.live || w.tag != rdv_key(i, s.gen)) return;
  Completion c{s.send_wr_id, w.failed ? w.status : OpStatus::kSuccess, w.failed ? 0 : s.length,
               s.send_op};
  c.return_code = w.rc;
  completions_.push_back(c);
  rdv_free(i);
}

// A WRITE packet under a sink key at the target: its bytes go to the message's receive past
// the eager ones (what fits), and the receive completes with its last byte. Each PSN runs
// once (PDS), so counting bytes is exact. Refused BAD_MKEY (no such sink: completed, timed
// out) or BAD_ADDR (outside the message).
UetEndpoint::Exec UetEndpoint::rdv_sink(Pdc& p, const wire::SesStandardRequest& ses,
                                        uint64_t key, uint64_t at, uint64_t len,
                                        std::span<const uint8_t> payload, uint32_t psn) {
  const uint32_t i = key & 0xFFFF;
  wire::SesReturnCode why = wire::SesReturnCode::kBadMkey;
  if (i < rx_msgs_.size() && rx_msgs_[i].in_use && rx_msgs_[i].rdv && rx_msgs_[i].sink == key &&
      rx_msgs_[i].peer == p.peer_ip4) {
    RxMsg& m = rx_msgs_[i];
    if (at <= m.length - m.eager && len <= m.remaining && len <= m.length - m.eager - at) {
      if (const uint64_t to = m.eager + at; to < m.cap && !payload.empty()) {
        std::memcpy(m.dst + to, payload.data(), std::min<uint64_t>(payload.size(), m.cap - to));
      }
      m.remaining -= len;
      m.deadline = now_ + config_.rendezvous_timeout;
      if (m.remaining == 0) {
        ++rare().rx_rdv_pushed;
        complete_rdv(m, OpStatus::kSuccess);
      }
      return Exec::kRecord;
    }
    why = wire::SesReturnCode::kBadAddr;
  }
  ++rare().rx_rdv_bad_push;
  refuse(p, psn, static_cast<uint8_t>(why), ses.message_id());
  return Exec::kDone;
}

// Receives whose push has not moved for rendezvous_timeout complete kRetriesExhausted (the
// initiator died after the CTS). Returns the next deadline.
Time UetEndpoint::sink_timer(Time now) {
  Time next = kNever;
  for (RxMsg& m : rx_msgs_) {
    if (!m.in_use || m.sink == 0) continue;
    if (m.deadline > now) {
      next = std::min(next, m.deadline);
      continue;
    }
    ++rare().rdv_push_timeouts;
    complete_rdv(m, OpStatus::kRetriesExhausted);
  }
  return next;
}

}  // namespace uet
