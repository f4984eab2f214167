// Control path of the RoCEv2 engine: configuration, QP connection, registration, posting,
// completions. The per-packet work: roce_datapath.cc (rx/tx entry points), roce_responder.cc,
// roce_requester.cc, roce_retransmit.cc (go-back-N, timers) and roce_frames.cc (encoder).
#include "transport/rocev2/roce_endpoint.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/rocev2/psn.h"

namespace uet {

using roce::kPsnMask;

namespace {

wire::MacAddr sim_mac(uint32_t ip4) {
  const uint32_t h = ip4 - 0x0A000001u;
  return {0x02,
          0x00,
          static_cast<uint8_t>(h >> 24),
          static_cast<uint8_t>(h >> 16),
          static_cast<uint8_t>(h >> 8),
          static_cast<uint8_t>(h)};
}

absl::Status out_of_range(const char* field, int64_t value, const char* range) {
  return absl::InvalidArgumentError(
      absl::StrCat("RoceConfig.", field, "=", value, " out of range: ", range));
}

// Largest RDMA message (IB: 2^31 bytes).
constexpr uint64_t kMaxMessage = uint64_t{1} << 31;

}  // namespace

absl::Status RoceConfig::validate() const {
  if (local_ip4 == 0) return absl::InvalidArgumentError("RoceConfig.local_ip4 must be set");
  if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
    return out_of_range("mtu", mtu, "256, 512, 1024, 2048 or 4096");
  if (max_qps < 1 || max_qps > 65536) return out_of_range("max_qps", max_qps, "1..65536");
  if (qpn_base < 2 || uint64_t{qpn_base} + max_qps - 1 > kPsnMask)
    return out_of_range("qpn_base", qpn_base, "2..2^24 - max_qps (QPNs 0 and 1 are special)");
  if (max_send_wr < 1 || max_send_wr > 65536)
    return out_of_range("max_send_wr", max_send_wr, "1..65536");
  if (max_recvs < 1 || max_recvs > 65536) return out_of_range("max_recvs", max_recvs, "1..65536");
  if (max_rd_atomic < 1 || max_rd_atomic > 256)
    return out_of_range("max_rd_atomic", max_rd_atomic, "1..256");
  if (min_rnr_timer > 31)
    return out_of_range("min_rnr_timer", min_rnr_timer, "0..31 (RNR timer code, 0 = 655.36 ms)");
  if (rnr_retry > 7) return out_of_range("rnr_retry", rnr_retry, "0..7 (7 = infinite)");
  if (max_outstanding_psns < 1 || max_outstanding_psns > roce::kPsnHalf - 1)
    return out_of_range("max_outstanding_psns", max_outstanding_psns, "1..8388607 (2^23 - 1)");
  if (cq_entries < 1 || cq_entries > (1u << 24))
    return out_of_range("cq_entries", cq_entries, "1..16777216");
  if (ack_timeout_exp > 31)
    return out_of_range("ack_timeout_exp", ack_timeout_exp, "0..31 (0 = no timer)");
  if (retry_cnt > 7) return out_of_range("retry_cnt", retry_cnt, "0..7 (7 = infinite)");
  if (ack_req_every < 1 || ack_req_every > roce::kPsnHalf)
    return out_of_range("ack_req_every", ack_req_every, "1..8388608");
  if (ack_every > roce::kPsnHalf)
    return out_of_range("ack_every", ack_every, "0..8388608 (0 = AckReq only)");
  if (dscp_data > 63) return out_of_range("dscp_data", dscp_data, "0..63");
  if (dscp_cnp > 63) return out_of_range("dscp_cnp", dscp_cnp, "0..63");
  if (cnp_interval < 0 || cnp_interval > 10 * kMillisecond)
    return out_of_range("cnp_interval", cnp_interval, "0..10 ms (ps)");
  if (absl::Status s = dcqcn.validate(); !s.ok()) return s;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RoceEndpoint>> RoceEndpoint::create(const RoceConfig& config) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  return std::unique_ptr<RoceEndpoint>(new RoceEndpoint(config));
}

RoceEndpoint::RoceEndpoint(const RoceConfig& config)
    : config_(config), ack_timeout_(config.ack_timeout()) {
  if (config_.resolve_mac == nullptr) config_.resolve_mac = sim_mac;
}

// The QP at `idx` (< max_qps), allocating its chunk (reset QPs) if it has none yet.
RoceEndpoint::Qp& RoceEndpoint::allocate_qp(uint32_t idx) {
  const uint32_t c = idx / kQpChunk;
  if (c >= qp_chunks_.size()) {
    qp_chunks_.resize(c + 1);
    qp_limit_ = std::min<uint32_t>(config_.max_qps, (c + 1) * kQpChunk);
  }
  if (qp_chunks_[c] == nullptr) {
    const uint32_t first = c * kQpChunk;
    const uint32_t n = std::min(kQpChunk, config_.max_qps - first);
    qp_chunks_[c] = std::make_unique<Qp[]>(n);
    for (uint32_t i = 0; i < n; ++i) qp_chunks_[c][i].local_qpn = config_.qpn_base + first + i;
    qps_allocated_ += n;
  }
  return qp_chunks_[c][idx % kQpChunk];
}

size_t RoceEndpoint::footprint() const {
  size_t bytes =
      qp_chunks_.capacity() * sizeof(qp_chunks_[0]) + size_t{qps_allocated_} * sizeof(Qp);
  for (uint32_t c = 0; c < qp_chunks_.size(); ++c) {
    if (qp_chunks_[c] == nullptr) continue;
    const uint32_t n = std::min(kQpChunk, config_.max_qps - c * kQpChunk);
    for (uint32_t i = 0; i < n; ++i)
      bytes += qp_chunks_[c][i].writes.bytes() + qp_chunks_[c][i].reads.bytes() +
               qp_chunks_[c][i].atomics.bytes();
  }
  bytes += active_.capacity() * sizeof(active_[0]) + ready_.bytes() + drained_.bytes();
  bytes += hash_bytes(qp_by_conn_);
  bytes += regions_.memory_bytes();
  return bytes + cq_.bytes() + recvs_.bytes();
}

// footprint()'s terms, each at its bound (NOTES.md §6).
size_t RoceEndpoint::footprint_bound(const RoceConfig& c, uint32_t regions) noexcept {
  const size_t chunks = (size_t{c.max_qps} + kQpChunk - 1) / kQpChunk;
  // Every QP with its send queue (max_send_wr WRs), responder read queue and atomic replay
  // cache (max_rd_atomic each).
  const size_t qp = sizeof(Qp) + GrowRing<Write, 1>::bytes_bound(c.max_send_wr) +
                    GrowRing<ReadResp, 1>::bytes_bound(c.max_rd_atomic) +
                    GrowRing<AtomicResult, 1>::bytes_bound(c.max_rd_atomic);
  // The ready and drained bits: a word per 64 connected QPs each, appended.
  const size_t bits = 2 * appended_capacity((size_t{c.max_qps} + 63) / 64) * sizeof(uint64_t);
  return resized_capacity(chunks) * sizeof(std::unique_ptr<Qp[]>) +  // chunk index (resize)
         size_t{c.max_qps} * qp +
         appended_capacity(c.max_qps) * sizeof(Qp*) +          // active list: one per connected QP
         hash_bytes_bound<decltype(qp_by_conn_)>(c.max_qps) +  // one per connected QP
         Regions::bytes_bound(regions) +
         GrowRing<Completion, 1>::bytes_bound(c.cq_entries) +
         GrowRing<RecvBuffer, 1>::bytes_bound(c.max_recvs) + bits;
}

// spec/rocev2.md §1: 0xC000 plus a 14-bit hash of the QPN (ours: a multiplicative hash of
// the QPN salted with the seed), so every packet of a QP takes one path.
uint16_t RoceEndpoint::udp_sport(uint32_t local_qpn) const noexcept {
  const uint64_t h = (uint64_t{local_qpn} ^ config_.seed) * 0x9E37'79B9'7F4A'7C15ULL;
  return wire::dynamic_port(static_cast<uint32_t>(h >> 50));
}

absl::Status RoceEndpoint::connect_qp(uint32_t peer_ip4, uint32_t local_qpn, uint32_t remote_qpn,
                                      uint32_t sq_psn, uint32_t rq_psn, uint16_t channel) {
  const uint32_t idx = local_qpn - config_.qpn_base;
  if (idx >= config_.max_qps) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect_qp: local_qpn ", local_qpn, " outside ", config_.qpn_base, "..",
                     config_.qpn_base + config_.max_qps - 1, " (qpn_base, max_qps)"));
  }
  if (peer_ip4 == 0 || peer_ip4 == config_.local_ip4) {
    return absl::InvalidArgumentError("connect_qp: peer_ip4 must be another endpoint's address");
  }
  if (remote_qpn < 2 || remote_qpn > kPsnMask) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect_qp: remote_qpn ", remote_qpn, " outside 2..16777215"));
  }
  if (sq_psn > kPsnMask || rq_psn > kPsnMask) {
    return absl::InvalidArgumentError("connect_qp: sq_psn and rq_psn are 24-bit (0..16777215)");
  }
  if (const Qp* q = qp_at(idx); q != nullptr && q->state == QpState::kRts) {
    return absl::FailedPreconditionError(
        absl::StrCat("connect_qp: QP ", local_qpn, " is already connected"));
  }
  if (auto it = qp_by_conn_.find(conn_key(peer_ip4, channel));
      it != qp_by_conn_.end() && it->second != idx) {
    return absl::AlreadyExistsError(
        absl::StrCat("connect_qp: QP ", config_.qpn_base + it->second,
                     " already serves this peer on channel ", channel,
                     " (one QP per peer and channel)"));
  }
  Qp& q = allocate_qp(idx);
  const bool was_active = q.state != QpState::kReset;
  if (was_active) qp_by_conn_.erase(conn_key(q.peer_ip4, q.channel));
  // Reconnecting keeps the queues' storage; the send queue grows as WRs are posted, the
  // responder's queues as READs and atomics arrive.
  GrowRing<Write, 1> writes = std::move(q.writes);
  GrowRing<ReadResp, 1> reads = std::move(q.reads);
  GrowRing<AtomicResult, 1> atomics = std::move(q.atomics);
  const uint32_t active_index = q.active_index;
  q = Qp{};
  q.writes = std::move(writes);
  q.reads = std::move(reads);
  q.atomics = std::move(atomics);
  q.state = QpState::kRts;
  q.local_qpn = local_qpn;
  q.remote_qpn = remote_qpn;
  q.peer_ip4 = peer_ip4;
  q.channel = channel;
  q.peer_mac = config_.resolve_mac(peer_ip4);
  q.sport = udp_sport(local_qpn);
  q.next_psn = q.max_psn = q.una = sq_psn;
  q.retry_left = config_.retry_cnt;
  q.rnr_left = config_.rnr_retry;
  q.epsn = rq_psn;
  q.cc.reset(&config_.dcqcn);
  if (was_active) {
    q.active_index = active_index;
  } else {
    q.active_index = static_cast<uint32_t>(active_.size());
    active_.push_back(&q);
    ready_.grow_to(active_.size());
    drained_.grow_to(active_.size());
  }
  mark_ready(q);
  qp_by_conn_[conn_key(peer_ip4, channel)] = idx;
  return absl::OkStatus();
}

absl::StatusOr<QpInfo> RoceEndpoint::qp_info(uint32_t local_qpn) const {
  const uint32_t idx = local_qpn - config_.qpn_base;
  if (idx >= config_.max_qps)
    return absl::NotFoundError(absl::StrCat("qp_info: no QP ", local_qpn));
  static const Qp kReset;  // a QP whose chunk was never allocated
  const Qp* p = qp_at(idx);
  const Qp& q = p != nullptr ? *p : kReset;
  QpInfo i;
  i.state = q.state;
  i.peer_ip4 = q.peer_ip4;
  i.remote_qpn = q.remote_qpn;
  i.udp_sport = q.sport;
  i.channel = q.channel;
  i.next_psn = q.next_psn;
  i.max_psn = q.max_psn;
  i.una = q.una;
  i.epsn = q.epsn;
  i.msn = q.msn;
  i.writes_outstanding = static_cast<uint32_t>(q.write_tail - q.write_head);
  i.reads_outstanding = q.reads_in_flight;
  i.responses_queued = static_cast<uint32_t>(q.rd_tail - q.rd_head);
  i.send_queue_slots = q.writes.capacity();
  i.response_slots = q.reads.capacity();
  i.rate_gbps = q.state == QpState::kReset ? 0 : q.cc.rate_bps() / 1e9;
  i.alpha = q.cc.alpha();
  return i;
}

absl::StatusOr<uint32_t> RoceEndpoint::register_memory(uint8_t* base, uint64_t length) {
  return regions_.add(base, length,
                      config_.stream_placement_from > 0 && length >= config_.stream_placement_from,
                      "register_memory");
}

// The WRs posted here and not completed with a buffer in [base, base + length): a payload, a
// READ's destination, an atomic's original-value destination.
uint32_t RoceEndpoint::ops_using(const uint8_t* base, uint64_t length) const noexcept {
  uint32_t n = 0;
  for (const Qp* q : active_) {
    for (uint64_t i = q->write_head; i != q->write_tail; ++i) {
      const Write& w = q->writes[i];
      n += overlaps(w.src, w.length, base, length) || overlaps(w.dst, w.length, base, length);
    }
  }
  return n;
}

// The responder side of every QP that would still touch region `slot`: one placing a WRITE
// message into it (its next packets would land there) or with READ responses from it queued
// fails with NAK remote access error (IB class C, as for a bad R_Key: the QP goes to the
// error state; rx_bad_rkey counts it).
void RoceEndpoint::stop_responding(uint32_t slot) {
  for (Qp* const qp : active_) {
    Qp& q = *qp;
    if (q.state != QpState::kRts) continue;
    uint32_t psn = q.epsn;
    bool uses = q.in_message && q.kind == MsgKind::kWrite && q.region == slot;
    for (uint64_t i = q.rd_head; !uses && i != q.rd_tail; ++i) {
      const ReadResp& r = q.reads[i];
      if (!r.atomic && r.length > 0 && r.region == slot) {
        uses = true;
        psn = roce::psn_add(r.first_psn, r.sent);  // the requester has those before (§3.2)
      }
    }
    if (!uses) continue;
    ++rare().rx_bad_rkey;
    responder_fatal(q, static_cast<uint8_t>(wire::AethNak::kRemoteAccessError), psn);
    mark_ready(q);
  }
}

// Deregistration (transport/api.h): refused while this endpoint's own WRs use the memory;
// then the QPs still touching it fail, and its R_Key is refused from now on.
absl::Status RoceEndpoint::deregister_memory(uint32_t key) {
  const auto count = [this](const uint8_t* base, uint64_t length) {
    return ops_using(base, length);
  };
  if (absl::Status s = regions_.check_deregister(key, count, "work request(s)"); !s.ok()) return s;
  stop_responding(Regions::slot_of(key));
  return regions_.remove(key, "deregister_memory");
}

// One more completion-ring slot for a post the caller accepted (cq_reserved_ < cq_entries):
// the ring doubles when the reserved slots would not fit.
void RoceEndpoint::reserve_completion() {
  ++cq_reserved_;
  cq_.reserve(cq_head_, cq_tail_, cq_reserved_, config_.cq_entries);
}

void RoceEndpoint::complete(const Write& w, OpStatus status) {
  Completion& c = cq_[cq_tail_++];
  c = Completion{};
  c.wr_id = w.wr_id;
  c.status = status;
  c.bytes = status == OpStatus::kSuccess ? w.length : 0;
  c.op = w.op;
}

void RoceEndpoint::complete_recv(uint64_t wr_id, uint32_t peer, OpStatus status, uint64_t bytes,
                                 bool has_imm, uint32_t imm) {
  Completion& c = cq_[cq_tail_++];
  c = Completion{};
  c.wr_id = wr_id;
  c.status = status;
  c.bytes = bytes;
  c.op = Opcode::kRecv;
  c.peer = peer;
  c.has_imm = has_imm;
  c.imm = imm;
}

namespace {

absl::Status check_mode(DeliveryMode mode, const char* what) {
  if (mode == DeliveryMode::kRud || mode == DeliveryMode::kRod) return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrCat(what, ": mode must be kRud or kRod (RC delivers reliably in order)"));
}

}  // namespace

// Every post: the QP of the peer and channel, a completion slot, a send-queue slot (the rings
// grow here, once the post is accepted). A WR posted to a QP in the error state is flushed at
// once (IB).
absl::Status RoceEndpoint::post_wqe(uint32_t peer, uint16_t channel, const Write& w,
                                    const char* what) {
  auto it = qp_by_conn_.find(conn_key(peer, channel));
  if (it == qp_by_conn_.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": no QP connected to peer ", peer, " on channel ", channel, " (connect_qp first)"));
  }
  if (cq_reserved_ >= config_.cq_entries) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": completion queue full (cq_entries); poll first"));
  }
  Qp& q = *qp_at(it->second);
  mark_ready(q);
  if (q.state == QpState::kError) {
    reserve_completion();
    complete(w, OpStatus::kFlushed);
    return absl::OkStatus();
  }
  if (q.write_tail - q.write_head >= config_.max_send_wr) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": send queue full (max_send_wr)"));
  }
  q.writes.reserve(q.write_head, q.write_tail, q.write_tail - q.write_head + 1, config_.max_send_wr);
  reserve_completion();
  Write& slot = q.writes[q.write_tail];
  slot = w;
  slot.packets = static_cast<uint32_t>(
      std::max<uint64_t>(1, (w.length + config_.mtu - 1) / config_.mtu));
  ++q.write_tail;
  return absl::OkStatus();
}

// What every verb checks (its delivery mode, the length, a buffer behind it) before its work
// request is queued; SEND and WRITE with immediate may carry nothing.
absl::Status RoceEndpoint::post_verb(DeliveryMode mode, uint32_t peer, uint16_t channel,
                                     const Write& w, const void* buffer, bool empty_ok,
                                     const char* verb) {
  if (absl::Status s = check_mode(mode, verb); !s.ok()) return s;
  if (w.length > kMaxMessage || (w.length == 0 && !empty_ok) ||
      (w.length > 0 && buffer == nullptr)) {
    return absl::InvalidArgumentError(
        empty_ok ? absl::StrCat(verb, ": length must be 0..2^31 bytes, with a buffer when > 0")
                 : absl::StrCat(verb, ": length must be 1..2^31 bytes with a buffer"));
  }
  return post_wqe(peer, channel, w, verb);
}

absl::Status RoceEndpoint::post_write(const WriteRequest& wr) {
  return post_verb(wr.mode, wr.peer, wr.channel, Write{posted_verb(wr)}, wr.local, false,
                   "post_write");
}

absl::Status RoceEndpoint::post_write_with_imm(const WriteRequest& wr, uint32_t imm) {
  Write w{posted_verb(wr)};
  w.has_imm = true;
  w.imm = imm;
  return post_verb(wr.mode, wr.peer, wr.channel, w, wr.local, true, "post_write_with_imm");
}

absl::Status RoceEndpoint::post_read(const ReadRequest& rr) {
  return post_verb(rr.mode, rr.peer, rr.channel, Write{posted_verb(rr)}, rr.local, false,
                   "post_read");
}

absl::Status RoceEndpoint::post_send(const SendRequest& sr) {
  if (sr.deferrable) {  // RC answers a missing receive with an RNR NAK and a retry
    return absl::UnimplementedError(
        "post_send: RoCEv2 has no deferrable sends (UET DEFERRABLE_SEND): set deferrable=false");
  }
  return post_verb(sr.mode, sr.peer, sr.channel, Write{posted_verb(sr)}, sr.local, true,
                   "post_send");
}

// spec/rocev2.md §3.3: RC carries FETCH_ADD and CMP_SWAP on one aligned 64-bit word; every
// other AtomicRequest is refused here, naming the field and what RC accepts.
absl::Status RoceEndpoint::post_atomic(const AtomicRequest& ar) {
  if (absl::Status s = check_mode(ar.mode, "post_atomic"); !s.ok()) return s;
  const bool cswap = ar.op == AtomicOp::kCswap;
  if (ar.op != AtomicOp::kSum && !cswap) {
    return absl::UnimplementedError(absl::StrCat("post_atomic: op ", to_string(ar.op),
                                                 " not carried by RC: kSum (FETCH_ADD) or "
                                                 "kCswap (CMP_SWAP)"));
  }
  if (ar.type != AtomicType::kUint64 && ar.type != AtomicType::kInt64) {
    return absl::UnimplementedError(absl::StrCat("post_atomic: type ", to_string(ar.type),
                                                 " not carried by RC: kUint64 or kInt64"));
  }
  if (ar.count != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "post_atomic: count ", ar.count, " must be 1 (an RC atomic acts on one 64-bit word)"));
  }
  if (ar.remote_offset % 8 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("post_atomic: remote_offset ", ar.remote_offset,
                                                   " must be a multiple of 8 (IB)"));
  }
  if (ar.operand == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("post_atomic: operand must point to 8 bytes (",
                                                   cswap ? "the swap value" : "the addend", ")"));
  }
  if (cswap && ar.compare == nullptr) {
    return absl::InvalidArgumentError(
        "post_atomic: compare must point to 8 bytes (kCswap's compare value)");
  }
  Write w{posted_verb(ar)};  // length: the one 64-bit word checked above
  w.cmp_swap = cswap;
  std::memcpy(&w.swap_add, ar.operand, 8);  // verbs copy the operands into the WQE
  if (cswap) std::memcpy(&w.compare, ar.compare, 8);
  return post_wqe(ar.peer, ar.channel, w, "post_atomic");
}

// The endpoint's shared receive queue (an SRQ): consumed in posting order by SENDs and
// WRITEs with immediate from any QP.
absl::Status RoceEndpoint::post_recv(const RecvBuffer& rb) {
  if (rb.length > 0 && rb.base == nullptr) {
    return absl::InvalidArgumentError("post_recv: a buffer with length > 0 needs a base");
  }
  if (recv_tail_ - recv_head_ >= config_.max_recvs) {
    return absl::ResourceExhaustedError("post_recv: receive queue full (max_recvs)");
  }
  if (cq_reserved_ >= config_.cq_entries) {
    return absl::ResourceExhaustedError("post_recv: completion queue full (cq_entries); poll first");
  }
  recvs_.reserve(recv_head_, recv_tail_, recv_tail_ - recv_head_ + 1, config_.max_recvs);
  reserve_completion();
  recvs_[recv_tail_++] = rb;
  return absl::OkStatus();
}

size_t RoceEndpoint::poll_completions(std::span<Completion> out) {
  size_t n = 0;
  while (n < out.size() && cq_head_ != cq_tail_) out[n++] = cq_[cq_head_++];
  cq_reserved_ -= n;
  give_back();
  return n;
}

// Storage follows the flight (NOTES.md §6): the send queues that drained since the last poll
// and the completion ring shrink to what they must still hold (kQueueKeep slots at least).
// Here, on the application's call, so the data path never frees.
void RoceEndpoint::give_back() {
  const auto size = static_cast<uint32_t>(active_.size());
  for (uint32_t i = drained_.next(0, size); i < size; i = drained_.next(i + 1, size)) {
    drained_.clear(i);
    Qp& q = *active_[i];
    q.writes.shrink(q.write_head, q.write_tail, q.write_tail - q.write_head, kQueueKeep);
  }
  cq_.shrink(cq_head_, cq_tail_, cq_reserved_, kQueueKeep);
}

RoceCounters RoceEndpoint::counters() const noexcept {
  RoceCounters c = rare();
#define ROCE_HOT_COPY(name) c.name = counters_.name;
  ROCE_HOT_COUNTERS(ROCE_HOT_COPY)
#undef ROCE_HOT_COPY
  return c;
}

EndpointStats RoceEndpoint::stats() const {
  const HotCounters& h = counters_;
  EndpointStats s;
  s.data_packets = h.tx_data;
  s.retransmitted_packets = h.tx_retx;
  s.control_packets = h.tx_acks + h.tx_naks + h.tx_cnps;
  s.timeouts = h.timeouts;
  // Out-of-order packets are dropped by RC (go-back-N resends them); duplicates are answered.
  s.rx_dropped = h.rx_out_of_order + h.rx_stale_acks;
  if (const RoceCounters* r = rare_counters_.get_if()) {
    s.rx_dropped += r->rx_malformed + r->rx_not_ours + r->rx_unknown_qp + r->rx_qp_error +
                    r->rx_unsupported + r->rx_read_dup + r->rx_read_unexpected +
                    r->rx_atomic_ack_dup + r->rx_atomic_ack_unexpected + r->rx_atomic_replay_miss;
  }
  return s;
}

}  // namespace uet
