// FI_MSG and FI_TAGGED above the RC engine: eager sends and rendezvous, matching, the
// unexpected list (rc_messaging.h).
#include "fabric/rc_messaging.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace uet::fabric {

RcMessaging::RcMessaging(std::unique_ptr<RoceEndpoint> rc, const RcMessagingConfig& c)
    : rc_(std::move(rc)), config_(c), buf_bytes_(kHeader + c.eager_bytes) {
  tx_mem_.resize(buf_bytes_ * c.tx_buffers);
  rx_mem_.resize(buf_bytes_ * c.rx_buffers);
  tx_owner_.assign(c.tx_buffers, kFinOwner);
  tx_peer_.assign(c.tx_buffers, 0);
  for (uint32_t i = c.tx_buffers; i-- > 0;) tx_free_.push_back(i);
  sends_.resize(c.max_sends);
  for (uint32_t i = c.max_sends; i-- > 0;) sends_free_.push_back(i);
  peers_.assign(65536, 0);
  reads_.resize(c.rx_buffers);  // a rendezvous READ per receive buffer at most
  for (uint32_t i = c.rx_buffers; i-- > 0;) reads_free_.push_back(i);
}

absl::Status RcMessaging::init() {
  for (uint32_t i = 0; i < config_.rx_buffers; ++i) {
    RecvBuffer rb{.wr_id = work_id(Work::kRx, i), .base = rx_buf(i), .length = buf_bytes_};
    if (absl::Status s = rc_->post_recv(rb); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status RcMessaging::connect(uint32_t peer) {
  const uint32_t local_ip = rc_->config().local_ip4;
  if (peer == local_ip) return absl::OkStatus();  // no QP to itself
  const uint32_t qpn = qpn_for(peer);
  auto info = rc_->qp_info(qpn);
  if (!info.ok()) return info.status();
  if (info->state != QpState::kReset && info->peer_ip4 == peer) {
    peers_[peer & 0xFFFF] = peer;
    return absl::OkStatus();
  }
  if (info->state != QpState::kReset) {
    return absl::FailedPreconditionError(absl::StrCat(
        "peers ", info->peer_ip4 >> 24, ".", info->peer_ip4 >> 16 & 255, ".",
        info->peer_ip4 >> 8 & 255, ".", info->peer_ip4 & 255, " and ", peer >> 24, ".",
        peer >> 16 & 255, ".", peer >> 8 & 255, ".", peer & 255,
        " share the low 16 bits of their addresses, which name their QPs (give addresses "
        "that differ in them: FI_UETREF_ADDR)"));
  }
  if (absl::Status s = rc_->connect_qp(peer, qpn, qpn_for(local_ip), 0, 0); !s.ok()) return s;
  peers_[peer & 0xFFFF] = peer;
  return absl::OkStatus();
}

void RcMessaging::revive(uint32_t peer) {
  auto info = rc_->qp_info(qpn_for(peer));
  if (!info.ok() || info->state != QpState::kError || info->peer_ip4 != peer) return;
  (void)rc_->connect_qp(peer, qpn_for(peer), qpn_for(rc_->config().local_ip4), 0, 0);
}

void RcMessaging::note_refused(std::span<Frame* const> frames) {
  for (const Frame* f : frames) {
    if (f->len < 42 || f->data[14] != 0x45) continue;
    const uint32_t src = uint32_t{f->data[26]} << 24 | uint32_t{f->data[27]} << 16 |
                         uint32_t{f->data[28]} << 8 | f->data[29];
    if (std::find(revive_next_.begin(), revive_next_.end(), src) == revive_next_.end() &&
        revive_next_.size() < 1024) {
      revive_next_.push_back(src);
    }
  }
}

void RcMessaging::revive_waiting() {
  for (const uint32_t peer : revive_next_) revive(peer);
  revive_next_.clear();
}

RcMessaging::Header RcMessaging::header_of(uint32_t rx) const noexcept {
  Header h;
  std::memcpy(&h, rx_mem_.data() + size_t{rx} * buf_bytes_, kHeader);
  return h;
}

// ---------------------------------------------------------------------------------------------
// Sending.

void RcMessaging::release_source(uint32_t key) {
  if (key != 0 && !rc_->deregister_memory(key).ok()) unreleased_.push_back(key);
}

absl::Status RcMessaging::send_message(uint64_t wr_id, Opcode op, uint32_t peer,
                                       const uint8_t* local, uint64_t length, uint8_t flags,
                                       uint64_t tag, uint64_t data) {
  if (length > 0 && local == nullptr)
    return absl::InvalidArgumentError("send: a message with bytes needs a buffer");
  if (sends_free_.empty() || tx_free_.empty())
    return absl::ResourceExhaustedError("send: every transmit buffer is in flight");
  revive(peer);
  const bool rendezvous = length > config_.eager_bytes;
  Header h{};
  h.kind = rendezvous ? Kind::kRts : Kind::kEager;
  h.flags = flags;
  h.tag = tag;
  h.data = data;
  h.length = length;
  if (rendezvous) {  // exposed for this send alone (release_source)
    auto key = rc_->register_memory(const_cast<uint8_t*>(local), length);
    if (!key.ok()) return key.status();
    h.rkey = *key;
  }
  const uint32_t slot = sends_free_.back();
  const uint32_t buf = tx_free_.back();
  h.cookie = slot;
  uint8_t* b = tx_buf(buf);
  std::memcpy(b, &h, kHeader);
  if (!rendezvous && length > 0) std::memcpy(b + kHeader, local, length);
  SendRequest sr{.wr_id = work_id(Work::kTx, buf), .peer = peer, .local = b,
                 .length = kHeader + (rendezvous ? 0 : length)};
  if (absl::Status s = rc_->post_send(sr); !s.ok()) {
    release_source(h.rkey);
    return s;
  }
  sends_free_.pop_back();
  tx_free_.pop_back();
  sends_[slot] = Send{.wr_id = wr_id, .op = op, .length = length, .peer = peer, .since = now_,
                      .live = true, .rendezvous = rendezvous, .source = h.rkey};
  tx_owner_[buf] = slot;
  rendezvous_live_ += rendezvous;
  ++(rendezvous ? counters_.rendezvous_sent : counters_.eager_sent);
  return absl::OkStatus();
}

absl::Status RcMessaging::post_send(const SendRequest& sr) {
  return send_message(sr.wr_id, Opcode::kSend, sr.peer, sr.local, sr.length,
                      sr.has_imm ? kHasData : 0, 0, sr.imm);
}

absl::Status RcMessaging::post_tsend(const TaggedSendRequest& ts) {
  return send_message(ts.wr_id, Opcode::kTaggedSend, ts.peer, ts.local, ts.length,
                      kTagged | (ts.has_data ? kHasData : 0), ts.tag, ts.data);
}

void RcMessaging::send_fin(uint32_t peer, uint64_t cookie, bool failed) {
  if (tx_free_.empty()) {
    fins_waiting_.emplace_back(peer, cookie | (failed ? uint64_t{1} << 63 : 0));
    return;
  }
  const uint32_t buf = tx_free_.back();
  Header h{};
  h.kind = Kind::kFin;
  h.flags = failed ? kFailed : 0;
  h.cookie = cookie;
  std::memcpy(tx_buf(buf), &h, kHeader);
  SendRequest sr{.wr_id = work_id(Work::kTx, buf), .peer = peer, .local = tx_buf(buf),
                 .length = kHeader};
  if (!rc_->post_send(sr).ok()) {  // the QP is gone: the sender learns it from its own
    return;
  }
  tx_free_.pop_back();
  tx_owner_[buf] = kFinOwner;
  ++counters_.fins_sent;
}

void RcMessaging::finish_send(uint32_t slot, OpStatus status) {
  Send& s = sends_[slot];
  Completion done;
  done.wr_id = s.wr_id;
  done.op = s.op;
  done.bytes = s.length;
  done.status = status;
  done_.push_back(done);
  rendezvous_live_ -= s.rendezvous;
  s.live = false;
  release_source(std::exchange(s.source, 0));
  sends_free_.push_back(slot);
}

void RcMessaging::probe_holders() {
  if (rendezvous_live_ == 0 || now_ < next_probe_) return;
  next_probe_ = now_ + config_.hold_probe_after / 4;
  for (const Send& s : sends_) {
    if (!s.live || !s.rendezvous || now_ - s.since < config_.hold_probe_after) continue;
    if (std::find(pinging_.begin(), pinging_.end(), s.peer) != pinging_.end()) continue;
    if (tx_free_.empty()) return;
    const uint32_t buf = tx_free_.back();
    Header h{};
    h.kind = Kind::kPing;
    std::memcpy(tx_buf(buf), &h, kHeader);
    SendRequest sr{.wr_id = work_id(Work::kTx, buf), .peer = s.peer, .local = tx_buf(buf),
                   .length = kHeader};
    if (!rc_->post_send(sr).ok()) {  // the QP failed already: so do the sends it holds
      on_ping_done(s.peer, OpStatus::kRetriesExhausted);
      continue;
    }
    tx_free_.pop_back();
    tx_owner_[buf] = kPingOwner;
    tx_peer_[buf] = s.peer;
    pinging_.push_back(s.peer);
    ++counters_.pings_sent;
  }
}

// The target answered (it lives: its sends wait on) or RC gave up on it (they fail).
void RcMessaging::on_ping_done(uint32_t peer, OpStatus status) {
  pinging_.erase(std::remove(pinging_.begin(), pinging_.end(), peer), pinging_.end());
  if (status != OpStatus::kSuccess) ++counters_.pings_failed;
  for (uint32_t i = 0; i < sends_.size(); ++i) {
    Send& s = sends_[i];
    if (!s.live || !s.rendezvous || s.peer != peer) continue;
    if (status == OpStatus::kSuccess) {
      s.since = now_;
    } else {
      finish_send(i, status);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Receiving.

bool RcMessaging::matches(const Posted& p, const Header& h, uint32_t peer) noexcept {
  if (p.tagged != ((h.flags & kTagged) != 0)) return false;
  if (p.source != 0 && p.source != peer) return false;
  return !p.tagged || ((p.tag ^ h.tag) & ~p.ignore) == 0;
}

void RcMessaging::complete_recv(const Posted& p, uint32_t peer, const Header& h,
                                OpStatus status, uint64_t bytes) {
  Completion c;
  c.wr_id = p.wr_id;
  c.status = status;
  c.bytes = bytes;
  c.op = p.tagged ? Opcode::kTaggedRecv : Opcode::kRecv;
  c.peer = peer;
  c.has_imm = (h.flags & kHasData) != 0;
  c.imm = h.data;
  c.tag = h.tag;
  if (status == OpStatus::kTruncated) ++counters_.truncated;
  done_.push_back(c);
}

void RcMessaging::repost(uint32_t buf) {
  RecvBuffer rb{.wr_id = work_id(Work::kRx, buf), .base = rx_buf(buf), .length = buf_bytes_};
  (void)rc_->post_recv(rb);  // the queue holds every buffer: it cannot be full
}

void RcMessaging::deliver(const Posted& p, uint32_t peer, uint32_t buf) {
  const Header h = header_of(buf);
  const uint64_t n = std::min(h.length, p.length);
  const OpStatus fits = h.length > p.length ? OpStatus::kTruncated : OpStatus::kSuccess;
  if (h.kind == Kind::kEager) {
    if (n > 0) std::memcpy(p.base, rx_buf(buf) + kHeader, n);
    ++counters_.eager_received;
    complete_recv(p, peer, h, fits, n);
    repost(buf);
    return;
  }
  repost(buf);  // RTS: the header is copied; the bytes come by READ
  if (n == 0 || reads_free_.empty()) {
    // Nothing to read (a receive of 0 bytes), or no READ slot (never: one per buffer).
    complete_recv(p, peer, h, n == 0 ? fits : OpStatus::kNoResources, 0);
    send_fin(peer, h.cookie, n != 0);
    return;
  }
  const uint32_t r = reads_free_.back();
  ReadRequest rr{.wr_id = work_id(Work::kRead, r), .peer = peer, .rkey = h.rkey,
                 .remote_offset = h.addr, .local = p.base, .length = n};
  if (!rc_->post_read(rr).ok()) {
    complete_recv(p, peer, h, OpStatus::kNoResources, 0);
    send_fin(peer, h.cookie, true);
    return;
  }
  reads_free_.pop_back();
  reads_[r] = Read{.posted = p, .peer = peer, .h = h, .live = true};
}

absl::Status RcMessaging::post_receive(const Posted& p) {
  if (p.length > 0 && p.base == nullptr)
    return absl::InvalidArgumentError("receive: a buffer with length > 0 needs a base");
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (it->claim != 0 || !matches(p, header_of(it->buf), it->peer)) continue;
    const Unexpected u = *it;
    unexpected_.erase(it);
    deliver(p, u.peer, u.buf);
    return absl::OkStatus();
  }
  if (p.tagged) {
    tagged_.push_back(p);
  } else {
    untagged_.push_back(p);
  }
  return absl::OkStatus();
}

absl::Status RcMessaging::post_recv(const RecvBuffer& rb) {
  return post_receive(Posted{.wr_id = rb.wr_id, .base = rb.base, .length = rb.length, .tag = 0,
                             .ignore = 0, .source = 0, .tagged = false});
}

absl::Status RcMessaging::post_trecv(const TaggedRecv& tr) {
  return post_receive(Posted{.wr_id = tr.wr_id, .base = tr.base, .length = tr.length,
                             .tag = tr.tag, .ignore = tr.ignore, .source = tr.source,
                             .tagged = true});
}

absl::Status RcMessaging::cancel_recv(uint64_t wr_id) {
  auto withdraw = [&](auto& list) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (it->wr_id != wr_id) continue;
      Completion c;
      c.wr_id = wr_id;
      c.status = OpStatus::kCanceled;
      c.op = it->tagged ? Opcode::kTaggedRecv : Opcode::kRecv;
      list.erase(it);
      done_.push_back(c);
      return true;
    }
    return false;
  };
  if (withdraw(tagged_) || withdraw(untagged_)) return absl::OkStatus();
  return absl::NotFoundError("cancel_recv: no receive waiting under that wr_id");
}

absl::Status RcMessaging::probe_tagged(const TaggedRecv& match, bool claim, Probed* out) {
  const Posted p{.wr_id = 0, .base = nullptr, .length = 0, .tag = match.tag,
                 .ignore = match.ignore, .source = match.source, .tagged = true};
  for (Unexpected& u : unexpected_) {
    const Header h = header_of(u.buf);
    if (u.claim != 0 || !matches(p, h, u.peer)) continue;
    out->tag = h.tag;
    out->length = h.length;
    out->peer = u.peer;
    out->has_data = (h.flags & kHasData) != 0;
    out->data = h.data;
    out->claim = 0;
    if (claim) out->claim = u.claim = next_claim_++;
    return absl::OkStatus();
  }
  return absl::NotFoundError("probe: no unexpected message matches");
}

absl::Status RcMessaging::recv_claimed(uint64_t claim, const TaggedRecv& tr) {
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (claim == 0 || it->claim != claim) continue;
    const Unexpected u = *it;
    unexpected_.erase(it);
    deliver(Posted{.wr_id = tr.wr_id, .base = tr.base, .length = tr.length, .tag = tr.tag,
                   .ignore = tr.ignore, .source = tr.source, .tagged = true},
            u.peer, u.buf);
    return absl::OkStatus();
  }
  return absl::NotFoundError("recv_claimed: no message claimed under that handle");
}

// A message's header arrived in receive buffer `buf`.
void RcMessaging::on_received(uint32_t buf, const Completion& c) {
  if (c.bytes < kHeader) {
    ++counters_.malformed;
    repost(buf);
    return;
  }
  const Header h = header_of(buf);
  if (h.kind == Kind::kFin) {
    const uint64_t slot = h.cookie;
    if (slot < sends_.size() && sends_[slot].live && sends_[slot].rendezvous &&
        sends_[slot].peer == c.peer) {
      finish_send(static_cast<uint32_t>(slot),
                  (h.flags & kFailed) ? OpStatus::kRemoteAccessError : OpStatus::kSuccess);
    } else {
      ++counters_.malformed;
    }
    repost(buf);
    return;
  }
  if (h.kind == Kind::kPing) {  // RC acknowledged it: that is the answer
    repost(buf);
    return;
  }
  if ((h.kind != Kind::kEager && h.kind != Kind::kRts) ||
      (h.kind == Kind::kEager && c.bytes != kHeader + h.length)) {
    ++counters_.malformed;
    repost(buf);
    return;
  }
  auto take_first_match = [&](auto& posted) {  // the first receive posted that matches
    for (auto it = posted.begin(); it != posted.end(); ++it) {
      if (!matches(*it, h, c.peer)) continue;
      const Posted p = *it;
      posted.erase(it);
      deliver(p, c.peer, buf);
      return true;
    }
    return false;
  };
  if ((h.flags & kTagged) ? take_first_match(tagged_) : take_first_match(untagged_)) return;
  ++counters_.unexpected;
  unexpected_.push_back(Unexpected{.peer = c.peer, .buf = buf});
}

void RcMessaging::on_completion(const Completion& c) {
  if ((c.wr_id >> 63) == 0) {  // the application's own (WRITE, READ, atomic)
    done_.push_back(c);
    return;
  }
  const auto work = static_cast<Work>((c.wr_id >> 56) & 0x7F);
  const auto index = static_cast<uint32_t>(c.wr_id & 0xFFFF'FFFF);
  switch (work) {
    case Work::kTx: {
      const uint32_t slot = tx_owner_[index];
      tx_owner_[index] = kFinOwner;
      tx_free_.push_back(index);
      if (slot == kFinOwner) break;
      if (slot == kPingOwner) {
        on_ping_done(tx_peer_[index], c.status);
        break;
      }
      // An eager send completes once its SEND is acknowledged; a rendezvous one at FIN,
      // unless its RTS never arrived.
      if (sends_[slot].rendezvous && c.status == OpStatus::kSuccess) {
        sends_[slot].since = now_;
        break;
      }
      finish_send(slot, c.status);
      break;
    }
    case Work::kRx:
      if (c.status == OpStatus::kSuccess) {
        on_received(index, c);
      } else {
        repost(index);  // flushed by a failing QP: the buffer goes back to the queue
      }
      break;
    case Work::kRead: {
      Read& r = reads_[index];
      r.live = false;
      reads_free_.push_back(index);
      ++counters_.rendezvous_read;
      const bool ok = c.status == OpStatus::kSuccess;
      const OpStatus fits =
          r.h.length > r.posted.length ? OpStatus::kTruncated : OpStatus::kSuccess;
      complete_recv(r.posted, r.peer, r.h, ok ? fits : c.status, ok ? c.bytes : 0);
      send_fin(r.peer, r.h.cookie, !ok);
      break;
    }
  }
}

void RcMessaging::pump() {
  Completion cs[32];
  size_t n;
  while ((n = rc_->poll_completions(cs)) > 0) {
    for (size_t i = 0; i < n; ++i) on_completion(cs[i]);
    if (!unreleased_.empty()) {  // a WR that used a source's memory may have completed
      for (const uint32_t key : std::exchange(unreleased_, {})) release_source(key);
    }
  }
  while (!fins_waiting_.empty() && !tx_free_.empty()) {
    const auto [peer, cookie] = fins_waiting_.front();
    fins_waiting_.pop_front();
    send_fin(peer, cookie & ~(uint64_t{1} << 63), (cookie >> 63) != 0);
  }
}

size_t RcMessaging::poll_completions(std::span<Completion> out) {
  pump();
  size_t k = 0;
  while (k < out.size() && !done_.empty()) {
    out[k++] = done_.front();
    done_.pop_front();
  }
  return k;
}

}  // namespace uet::fabric
