// SES tagged messages (spec/uet.md §4.1 TAGGED_SEND) and job-based access (§4.1, §4.9): at
// the initiator, posting; at the target, matching against posted tagged receives in posting
// order, the unexpected list, placement as packets arrive, and the job / PID / resource index
// checks every request passes before a byte is placed. NOTES.md, "Tagged messages" and
// "Job-based access", says how they travel.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

// ------------------------------------------------------------------------ job-based access

// SES bytes 4..11 (ri_generation, job_id, pid_on_fep, resource_index) of a request in
// absolute addressing for this endpoint's job and PID at resource index 0 (check_access's
// one compare), packed as initiators pack theirs; a disabled index 0 gets no word any request
// can equal in its reserved bits.
void UetEndpoint::update_access_word() noexcept {
  const Resource r0 = resource(0);
  access_word_ = internal::address_word(
      config_.job_id, SesAddress{.pid_on_fep = static_cast<uint16_t>(config_.pid_on_fep),
                                 .resource_index = 0, .ri_generation = r0.generation});
  if (!r0.enabled) access_word_ |= 0xF000;  // reserved bits: never on the wire (§6 rule 10)
}

// The slow path of check_access: which of §4.9's addressing codes refuses the request, in the
// order a target resolves the address: job, process, resource index, its state, generation.
wire::SesReturnCode UetEndpoint::access_refusal(const uint8_t* ses) noexcept {
  const uint64_t w = wire::load_be_n<8>(ses + 4);
  const auto generation = static_cast<uint8_t>(w >> 56);
  const auto job = static_cast<uint32_t>(w >> 32 & 0xFFFFFF);
  uint32_t pid = static_cast<uint32_t>(w >> 16 & 0xFFF);
  const auto ri = static_cast<uint32_t>(w & 0xFFF);
  if (job != config_.job_id) {
    ++rare().rx_bad_job;
    return wire::SesReturnCode::kBadJobId;
  }
  if ((ses[1] & kRelBit) != 0) pid += config_.job_pid_base;  // §4.1 `rel`: from the job's base
  if (pid != config_.pid_on_fep) {
    ++rare().rx_bad_pid;
    return wire::SesReturnCode::kBadPid;
  }
  if (ri >= config_.resource_indexes) {
    ++rare().rx_bad_index;
    return wire::SesReturnCode::kBadIndex;
  }
  const Resource r = resource(static_cast<uint16_t>(ri));
  if (!r.enabled) {
    ++rare().rx_disabled;
    return wire::SesReturnCode::kDisabled;
  }
  if (generation != r.generation) {
    ++rare().rx_bad_generation;
    return wire::SesReturnCode::kBadGeneration;
  }
  return wire::SesReturnCode::kNull;
}

absl::Status UetEndpoint::disable_resource(uint16_t ri) {
  if (ri >= config_.resource_indexes) {
    return absl::InvalidArgumentError(absl::StrCat("disable_resource: index ", ri,
                                                   " not configured: 0..",
                                                   config_.resource_indexes - 1));
  }
  if (resources_.empty()) resources_.assign(config_.resource_indexes, Resource{});
  resources_[ri].enabled = false;
  update_access_word();
  return absl::OkStatus();
}

absl::StatusOr<uint8_t> UetEndpoint::enable_resource(uint16_t ri) {
  if (ri >= config_.resource_indexes) {
    return absl::InvalidArgumentError(absl::StrCat("enable_resource: index ", ri,
                                                   " not configured: 0..",
                                                   config_.resource_indexes - 1));
  }
  if (resources_.empty()) resources_.assign(config_.resource_indexes, Resource{});
  Resource& r = resources_[ri];
  if (!r.enabled) {
    r.enabled = true;
    ++r.generation;  // wraps at 256, as the 8-bit field does
  }
  update_access_word();
  return r.generation;
}

// ------------------------------------------------------------------------------- posting

absl::Status UetEndpoint::post_tsend(const TaggedSendRequest& ts) {
  if (ts.mode == DeliveryMode::kRudi || ts.mode == DeliveryMode::kUud) {
    // RUDI resends a request whole and the target executes every copy, which would deliver a
    // message twice; an unexpected message that finds the list full needs the NACK and
    // retry only a PDC gives.
    return absl::UnimplementedError(
        "post_tsend: tagged messages travel on a PDC (a resent RUDI request would be delivered "
        "twice; UUD has no retry when the target's unexpected list is full): use kRud or kRod");
  }
  Op op{posted_verb(ts)};
  op.tag = ts.tag;
  op.to = ts.to;
  if (ts.deferrable) return defer_post(ts.mode, ts.peer, op, ts.local, "post_tsend");
  return post_verb(ts.mode, ts.peer, op, ts.local, "post_tsend");
}

// The tables tagged messages use, at their bounds, the first time the endpoint sees one.
void UetEndpoint::tagged_tables() {
  if (!tab().trecvs.empty()) return;
  if (rx_msgs_.empty()) rx_msgs_.assign(config_.max_recv_messages, RxMsg{});
  tab().trecvs.assign(config_.max_trecvs, TRecv{});
  tab().trecv_free.resize(config_.max_trecvs);
  for (uint32_t i = 0; i < config_.max_trecvs; ++i) tab().trecv_free[i] = config_.max_trecvs - 1 - i;
  tab().unexp.assign(config_.max_unexpected, Unexp{});
  tab().unexp_free.resize(config_.max_unexpected);
  for (uint32_t i = 0; i < config_.max_unexpected; ++i) {
    tab().unexp_free[i] = config_.max_unexpected - 1 - i;
  }
  tab().unexp_by_at.reserve(config_.max_unexpected);
  tab().deferred.reserve(config_.max_unexpected);  // deferrable sends' entries (of tab().unexp)
  arena_ = std::make_unique<uint8_t[]>(config_.unexpected_bytes);
}

using internal::link_tail;
using internal::unlink;

// Posted receive `t` leaves the list (matched), its slot free.
void UetEndpoint::unlink_trecv(uint32_t t) {
  unlink(tab().trecvs, tab().trecv_list.head, tab().trecv_list.tail, t);
  tab().trecv_free.push_back(t);
}

void UetEndpoint::unlink_unexpected(uint32_t u) {
  unlink(tab().unexp, tab().unexp_list.head, tab().unexp_list.tail, u);
}

// A receive takes the first unexpected message it matches (arrival order), else waits in
// posting order for one.
absl::Status UetEndpoint::post_trecv(const TaggedRecv& tr) {
  if (tr.length > 0 && tr.base == nullptr) {
    return absl::InvalidArgumentError("post_trecv: a buffer with length > 0 needs a base");
  }
  tagged_tables();
  for (uint32_t u = tab().unexp_list.head; u != kNoLink; u = tab().unexp[u].next) {
    const Unexp& e = tab().unexp[u];
    if (e.bound || e.untagged || e.claimed || !tag_matches(tr, e.tag, e.peer)) continue;
    return take_unexpected(tr, u);
  }
  if (tab().trecv_free.empty()) {
    return absl::ResourceExhaustedError(
        "post_trecv: too many tagged receives posted (max_trecvs)");
  }
  const uint32_t i = tab().trecv_free.back();
  tab().trecv_free.pop_back();
  tab().trecvs[i].tr = tr;
  link_tail(tab().trecvs, tab().trecv_list.head, tab().trecv_list.tail, i);
  return absl::OkStatus();
}

absl::Status UetEndpoint::take_unexpected(const TaggedRecv& tr, uint32_t u) {
  Unexp& e = tab().unexp[u];
  if (e.rdv) return rdv_matched(tr, u);  // the rest is READ into this receive
  if (e.deferred) return defer_matched(tr, u);  // its restart lands in this receive
  if (e.complete) {
    RxMsg m;
    m.length = e.length;
    m.tag = e.tag;
    m.peer = e.peer;
    m.has_data = e.has_data;
    m.data = e.data;
    complete_trecv(tr, m, arena_.get() + e.at);
    unlink(tab().unexp, tab().unexp_list.head, tab().unexp_list.tail, u);
    free_unexpected(u);
  } else {  // still arriving: completes when its last byte does
    e.bound = true;
    e.recv = tr;
    unlink(tab().unexp, tab().unexp_list.head, tab().unexp_list.tail, u);
  }
  return absl::OkStatus();
}

// The message a receive for `match` would take now, as post_trecv() picks it, so a probe and
// the receive after it agree (MPI_Probe, then MPI_Recv). It is reported once whole (or, by
// rendezvous, announced): its length, tag and data are then all known, and nothing can fail
// under a claim. Still arriving, or deferred (§4.2): not yet.
absl::Status UetEndpoint::probe_tagged(const TaggedRecv& match, bool claim, Probed* out) {
  tagged_tables();
  for (uint32_t u = tab().unexp_list.head; u != kNoLink; u = tab().unexp[u].next) {
    Unexp& e = tab().unexp[u];
    if (e.bound || e.untagged || e.claimed || !tag_matches(match, e.tag, e.peer)) continue;
    if (e.deferred || !e.complete) break;
    *out = Probed{.tag = e.tag, .length = e.rdv ? e.rdv_length : e.length, .peer = e.peer,
                  .has_data = e.has_data, .data = e.data};
    if (claim) {
      e.claimed = true;
      e.claim_gen = ++claim_gen_;
      out->claim = uint64_t{e.claim_gen} << 32 | u;
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError("probe_tagged: no unexpected message matches");
}

absl::Status UetEndpoint::recv_claimed(uint64_t claim, const TaggedRecv& tr) {
  if (tr.length > 0 && tr.base == nullptr) {
    return absl::InvalidArgumentError("recv_claimed: a buffer with length > 0 needs a base");
  }
  const auto u = static_cast<uint32_t>(claim);
  if (u >= tab().unexp.size() || !tab().unexp[u].claimed || tab().unexp[u].claim_gen != claim >> 32) {
    return absl::NotFoundError("recv_claimed: no message is claimed under that handle");
  }
  tab().unexp[u].claimed = false;
  const absl::Status s = take_unexpected(tr, u);
  if (!s.ok()) tab().unexp[u].claimed = true;  // refused for room: still the claimer's
  return s;
}

// A receive no message has claimed: a tagged one still in the posted list, or an untagged
// buffer past recv_claim_ (the later ones move up a place, keeping their order).
absl::Status UetEndpoint::cancel_recv(uint64_t wr_id) {
  for (uint32_t i = tab().trecv_list.head; i != kNoLink; i = tab().trecvs[i].next) {
    if (tab().trecvs[i].tr.wr_id != wr_id) continue;
    unlink(tab().trecvs, tab().trecv_list.head, tab().trecv_list.tail, i);
    tab().trecv_free.push_back(i);
    Completion c{wr_id, OpStatus::kCanceled, 0, Opcode::kTaggedRecv, 0, false, 0};
    completions_.push_back(c);
    return absl::OkStatus();
  }
  for (uint32_t p = recv_claim_; p != recv_tail_; ++p) {
    if (recvs_[p].rb.wr_id != wr_id) continue;
    for (uint32_t q = p; q + 1 != recv_tail_; ++q) recvs_[q] = recvs_[q + 1];
    --recv_tail_;
    Completion c{wr_id, OpStatus::kCanceled, 0, Opcode::kRecv, 0, false, 0};
    completions_.push_back(c);
    return absl::OkStatus();
  }
  return absl::NotFoundError(
      absl::StrCat("cancel_recv: no receive waits under wr_id ", wr_id,
                   " (a message claimed it, or it completed)"));
}

// ------------------------------------------------------------------------------- target

// Room for an unexpected message of `length` bytes: the first gap in the arena, between the
// entries held in offset order. False: the list is full (count or bytes).
bool UetEndpoint::stage_unexpected(RxMsg& m, uint64_t length) {
  if (tab().unexp_free.empty() || length > config_.unexpected_bytes - tab().arena_used) return false;
  uint64_t at = 0;
  size_t pos = 0;
  for (; pos < tab().unexp_by_at.size(); ++pos) {
    const Unexp& e = tab().unexp[tab().unexp_by_at[pos]];
    if (e.at - at >= length) break;
    at = e.at + e.length;
  }
  if (config_.unexpected_bytes - at < length) return false;  // free bytes, but no gap that long
  const uint32_t u = tab().unexp_free.back();
  tab().unexp_free.pop_back();
  Unexp& e = tab().unexp[u];
  e = Unexp{};
  e.peer = m.peer;
  e.tag = m.tag;
  e.length = length;
  e.at = at;
  tab().unexp_by_at.insert(tab().unexp_by_at.begin() + static_cast<ptrdiff_t>(pos), u);
  tab().arena_used += length;
  link_tail(tab().unexp, tab().unexp_list.head, tab().unexp_list.tail, u);
  m.unexp = static_cast<int32_t>(u);
  m.dst = arena_.get() + at;
  m.cap = length;
  return true;
}

// Entry `u` (already out of the arrival list) and its bytes go back.
void UetEndpoint::free_unexpected(uint32_t u) {
  tab().unexp_by_at.erase(std::find(tab().unexp_by_at.begin(), tab().unexp_by_at.end(), u));
  tab().arena_used -= tab().unexp[u].length;
  tab().unexp_free.push_back(u);
}

// A receive completes with message `m`: the bytes that fit (from the arena when `staged`),
// truncated when the message was longer than the buffer (FI_ETRUNC).
void UetEndpoint::complete_trecv(const TaggedRecv& tr, const RxMsg& m, const uint8_t* staged) {
  const uint64_t fit = std::min(m.length, tr.length);
  if (staged != nullptr && fit > 0) std::memcpy(tr.base, staged, fit);
  OpStatus status = m.status;
  if (status == OpStatus::kSuccess && m.length > tr.length) {
    ++rare().rx_truncated;
    status = OpStatus::kTruncated;
  }
  const bool placed = status == OpStatus::kSuccess || status == OpStatus::kTruncated;
  Completion c{tr.wr_id, status, placed ? fit : 0,
               Opcode::kTaggedRecv, m.peer, m.has_data, m.data};
  c.tag = m.tag;
  completions_.push_back(c);
}

// Tagged message `m` (no longer in use) ends unfinished, its PDC gone: its receive (or the
// receive bound to its unexpected entry) completes kPdcClosed; an entry nothing matched goes.
void UetEndpoint::close_tagged(RxMsg& m) {
  m.status = OpStatus::kPdcClosed;
  if (m.unexp < 0) {
    TaggedRecv tr;
    tr.wr_id = m.wr_id;
    tr.base = m.dst;
    tr.length = m.cap;
    complete_trecv(tr, m, nullptr);
    return;
  }
  const auto u = static_cast<uint32_t>(m.unexp);
  if (tab().unexp[u].bound) {
    complete_trecv(tab().unexp[u].recv, m, nullptr);
  } else {
    unlink(tab().unexp, tab().unexp_list.head, tab().unexp_list.tail, u);
  }
  free_unexpected(u);
}

// The first packet of a tagged message to arrive (any of them: each carries the tag) matches
// it: to the first posted receive whose tag and source agree, else into the unexpected list.
// Null: NACKed (no message state, or the unexpected list full: the initiator retries).
UetEndpoint::RxMsg* UetEndpoint::start_tagged(Pdc& p, uint16_t id,
                                              const wire::SesStandardRequest& ses, uint32_t psn) {
  tagged_tables();
  RxMsg* m = take_msg(p, psn);
  if (m == nullptr) return nullptr;
  m->pdc = id;
  m->message_id = ses.message_id();
  m->length = m->remaining = ses.request_length();
  m->tagged = true;
  m->tag = ses.match_bits();
  m->peer = p.peer_ip4;
  uint32_t r = tab().trecv_list.head;
  while (r != kNoLink && !tag_matches(tab().trecvs[r].tr, m->tag, m->peer)) r = tab().trecvs[r].next;
  if (r != kNoLink) {
    const TaggedRecv& tr = tab().trecvs[r].tr;
    m->wr_id = tr.wr_id;
    m->dst = tr.base;
    m->cap = tr.length;
    // The receive itself is kept (its slot stays taken) until the message completes.
    unlink(tab().trecvs, tab().trecv_list.head, tab().trecv_list.tail, r);
    tab().trecv_free.push_back(r);
    m->unexp = -1;
    ++rare().rx_tagged_matched;
  } else if (!stage_unexpected(*m, m->length)) {
    ++rare().rx_unexpected_full;
    queue_nack(p, wire::NackCode::kNoSesMsgAvail, psn);
    return nullptr;
  } else {
    ++rare().rx_tagged_unexpected;
  }
  m->in_use = true;
  ++rx_msgs_used_;
  return m;
}

// §4.2 TAGGED_SEND at the target: each packet lands at its message_offset in the matched
// receive (the bytes past its end are dropped: truncation) or the message's staging; the
// message completes when every byte has arrived. kRecord, or kWait when NACKed.
UetEndpoint::Exec UetEndpoint::rx_tagged(Pdc& p, uint16_t id, std::span<const uint8_t> payload,
                                         size_t elided, const wire::SesStandardRequest& ses,
                                         uint32_t psn) {
  auto [at, len] = internal::msg_packet(ses, payload.size() + elided);
  RxMsg* m = find_msg(id, ses.message_id());
  if (m == nullptr) {
    if (ses.ie()) {  // §4.1: given up by its sender: nothing to place, nothing to match
      ++rare().rx_initiator_err;
      return Exec::kRecord;
    }
    m = start_tagged(p, id, ses, psn);
    if (m == nullptr) return Exec::kWait;
  }
  if (at > m->length || len > m->length - at) {
    ++rare().rx_bad_send;  // outside its own message: counted, never placed
    m->status = OpStatus::kRemoteInvalidRequest;
    len = std::min(len, m->remaining);
  } else if (at < m->cap) {
    const size_t have = std::min<uint64_t>({payload.size(), len, m->cap - at});
    if (have > 0) std::memcpy(m->dst + at, payload.data(), have);
  }
  if (ses.som() && ses.hd()) {  // §4.2: header data rides on the SOM packet
    m->has_data = true;
    m->data = ses.header_data();
  }
  if (!msg_packet_end(*m, ses, len)) return Exec::kRecord;
  m->in_use = false;
  --rx_msgs_used_;
  if (m->unexp < 0) {
    TaggedRecv tr;
    tr.wr_id = m->wr_id;
    tr.base = m->dst;
    tr.length = m->cap;
    complete_trecv(tr, *m, nullptr);
    return Exec::kRecord;
  }
  const auto u = static_cast<uint32_t>(m->unexp);
  Unexp& e = tab().unexp[u];
  e.has_data = m->has_data;
  e.data = m->data;
  if (m->status != OpStatus::kSuccess) {  // nothing of it is delivered
    if (e.bound) {
      complete_trecv(e.recv, *m, nullptr);
    } else {
      unlink(tab().unexp, tab().unexp_list.head, tab().unexp_list.tail, u);
    }
    free_unexpected(u);
  } else if (e.bound) {
    complete_trecv(e.recv, *m, arena_.get() + e.at);
    free_unexpected(u);
  } else {
    e.complete = true;  // waits in the list for post_trecv
  }
  return Exec::kRecord;
}

}  // namespace uet
