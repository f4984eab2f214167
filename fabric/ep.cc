// The endpoint: binding, enabling, its name, and the data calls (FI_MSG, FI_TAGGED, FI_RMA;
// FI_ATOMIC in atomic.cc), each a post to the domain's engine (transport/api.h) with an op slot as its wr_id.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "absl/functional/function_ref.h"
#include "fabric/uetref.h"

namespace uet::fabric {

// ---------------------------------------------------------------------------------------------
// Posting.

ssize_t post(Ep* ep, Dir dir, uint64_t op_flags, uint64_t flags, void* context, void* buf,
             size_t len, bool inject, Post fn) {
  Domain* d = ep->domain;
  std::lock_guard lock(d->mu);
  if (!ep->enabled) return -FI_EOPBADSTATE;
  d->wait_for_link();
  if (len > kMaxMsgSize || (inject && len > kInjectSize)) return -FI_EMSGSIZE;
  const bool tx = dir == Dir::kTx;
  Cq* cq = tx ? ep->tx_cq : ep->rx_cq;
  const bool selective = tx ? ep->tx_selective : ep->rx_selective;
  const bool report = cq != nullptr && !inject && (!selective || (flags & FI_COMPLETION) != 0);
  if (report && !cq->reserve()) {
    d->progress();
    if (!cq->reserve()) return -FI_EAGAIN;
  }
  int64_t slot = d->take_op();
  if (slot < 0) {
    d->progress();
    slot = d->take_op();
  }
  if (slot < 0) {
    if (report) cq->unreserve();
    return -FI_EAGAIN;
  }
  const auto i = static_cast<uint32_t>(slot);
  OpCtx& op = d->ops[i];
  op.context = context;
  op.flags = op_flags;
  op.buf = buf;
  op.cq = report ? cq : nullptr;
  op.ep = ep;
  op.inject = inject;
  op.cntr = tx ? ((op_flags & FI_READ) ? ep->read_cntr
                  : (op_flags & FI_WRITE) ? ep->write_cntr
                                          : ep->send_cntr)
               : ep->recv_cntr;
  const uint8_t* local = static_cast<const uint8_t*>(buf);
  if (inject) {
    if (len > 0) std::memcpy(d->inject_buf(i), buf, len);
    local = d->inject_buf(i);
  }
  const absl::Status s = fn(i, local);
  if (!s.ok()) {
    d->free_op(i);
    if (report) cq->unreserve();
    FI_WARN_SPARSE(&kProvider, FI_LOG_EP_DATA, "%s\n", std::string(s.message()).c_str());
    return to_fi_errno(s);
  }
  ++(tx ? ep->tx_in_flight : ep->rx_in_flight);
  d->posted();
  return 0;
}

uint32_t peer_of(const Ep* ep, fi_addr_t a) {
  return ep->av != nullptr ? ep->av->ip(a) : 0;
}

SesAddress ses_of(const Ep* ep, fi_addr_t a) {
  return ep->av != nullptr ? ep->av->to(a) : SesAddress{};
}

namespace {

Ep* ep_of(fid_ep* f) { return of<Ep>(f); }

// The vectored calls (fi_sendv, ...): iov_limit is 1 (fi_getinfo), so each is its plain call
// on the one iovec, or on none.
template <auto Plain, typename... Rest>
ssize_t one_iov(fid_ep* f, const iovec* iov, void** desc, size_t count, Rest... rest) {
  if (count > 1) return -FI_EINVAL;
  return Plain(f, count ? iov->iov_base : nullptr, count ? iov->iov_len : 0,
               desc ? desc[0] : nullptr, rest...);
}

// The one buffer of a message call (fi_sendmsg, ...), whose iov_count is 0 or 1.
template <typename Msg>
void* msg_buf(const Msg* m) {
  return m->iov_count ? m->msg_iov->iov_base : nullptr;
}
template <typename Msg>
size_t msg_len(const Msg* m) {
  return m->iov_count ? m->msg_iov->iov_len : 0;
}

uint64_t tx_flags(const Ep* ep) { return ep->info->tx_attr->op_flags; }
uint64_t rx_flags(const Ep* ep) { return ep->info->rx_attr->op_flags; }

// ---------------------------------------------------------------------------------------------
// FI_MSG: UET SEND (deferrable, so a target with no receive posted keeps no bytes and asks for
// the message again once it has one, spec/uet.md §4.2).

ssize_t send_common(Ep* ep, const void* buf, size_t len, fi_addr_t dest, void* context,
                    uint64_t flags, bool has_data, uint64_t data, bool inject) {
  const uint32_t peer = peer_of(ep, dest);
  if (peer == 0) return -FI_EINVAL;
  return post(ep, Dir::kTx, FI_SEND | FI_MSG, flags, context, const_cast<void*>(buf), len, inject,
              [&](uint64_t wr_id, const uint8_t* local) {
                SendRequest r;
                r.wr_id = wr_id;
                r.peer = peer;
                r.local = local;
                r.length = len;
                r.mode = ep->mode;
                r.has_imm = has_data;
                r.imm = static_cast<uint32_t>(data);
                r.deferrable = true;
                r.to = ses_of(ep, dest);  // §4.1: the peer endpoint's process
                return ep->engine->post_send(r);
              });
}

ssize_t msg_send(fid_ep* f, const void* buf, size_t len, void*, fi_addr_t dest, void* ctx) {
  Ep* ep = ep_of(f);
  return send_common(ep, buf, len, dest, ctx, tx_flags(ep), false, 0, false);
}

ssize_t msg_senddata(fid_ep* f, const void* buf, size_t len, void*, uint64_t data,
                     fi_addr_t dest, void* ctx) {
  Ep* ep = ep_of(f);
  return send_common(ep, buf, len, dest, ctx, tx_flags(ep), true, data, false);
}

ssize_t msg_inject(fid_ep* f, const void* buf, size_t len, fi_addr_t dest) {
  return send_common(ep_of(f), buf, len, dest, nullptr, 0, false, 0, true);
}

ssize_t msg_injectdata(fid_ep* f, const void* buf, size_t len, uint64_t data, fi_addr_t dest) {
  return send_common(ep_of(f), buf, len, dest, nullptr, 0, true, data, true);
}

ssize_t msg_sendmsg(fid_ep* f, const fi_msg* m, uint64_t flags) {
  if (m->iov_count > 1) return -FI_EINVAL;
  return send_common(ep_of(f), msg_buf(m), msg_len(m), m->addr, m->context, flags,
                     (flags & FI_REMOTE_CQ_DATA) != 0, m->data, (flags & FI_INJECT) != 0);
}

ssize_t recv_common(Ep* ep, void* buf, size_t len, fi_addr_t src, void* ctx, uint64_t flags) {
  // The engine's untagged receives form one queue for every sender (an SRC).
  if ((ep->info->caps & FI_DIRECTED_RECV) && src != FI_ADDR_UNSPEC) return -FI_EOPNOTSUPP;
  return post(ep, Dir::kRx, FI_RECV | FI_MSG, flags, ctx, buf, len, false,
              [&](uint64_t wr_id, const uint8_t*) {
                RecvBuffer r;
                r.wr_id = wr_id;
                r.base = static_cast<uint8_t*>(buf);
                r.length = len;
                return ep->engine->post_recv(r);
              });
}

ssize_t msg_recv(fid_ep* f, void* buf, size_t len, void*, fi_addr_t src, void* ctx) {
  Ep* ep = ep_of(f);
  return recv_common(ep, buf, len, src, ctx, rx_flags(ep));
}

ssize_t msg_recvmsg(fid_ep* f, const fi_msg* m, uint64_t flags) {
  if (m->iov_count > 1 || (flags & FI_MULTI_RECV)) return -FI_EINVAL;
  return recv_common(ep_of(f), msg_buf(m), msg_len(m), m->addr, m->context, flags);
}

fi_ops_msg kMsgOps = {
    .size = sizeof(fi_ops_msg),
    .recv = msg_recv,
    .recvv = one_iov<msg_recv>,
    .recvmsg = msg_recvmsg,
    .send = msg_send,
    .sendv = one_iov<msg_send>,
    .sendmsg = msg_sendmsg,
    .inject = msg_inject,
    .senddata = msg_senddata,
    .injectdata = msg_injectdata,
};

// ---------------------------------------------------------------------------------------------
// FI_TAGGED: UET TAGGED_SEND (spec/uet.md §4.1), matched by the engine as FI_TAGGED says.

ssize_t tsend_common(Ep* ep, const void* buf, size_t len, fi_addr_t dest, uint64_t tag,
                     void* context, uint64_t flags, bool has_data, uint64_t data, bool inject) {
  const uint32_t peer = peer_of(ep, dest);
  if (peer == 0) return -FI_EINVAL;
  return post(ep, Dir::kTx, FI_SEND | FI_TAGGED, flags, context, const_cast<void*>(buf), len,
              inject, [&](uint64_t wr_id, const uint8_t* local) {
                TaggedSendRequest r;
                r.wr_id = wr_id;
                r.peer = peer;
                r.local = local;
                r.length = len;
                r.tag = tag;
                r.mode = ep->mode;
                r.has_data = has_data;
                r.data = data;
                r.to = ses_of(ep, dest);
                return ep->engine->post_tsend(r);
              });
}

ssize_t tagged_send(fid_ep* f, const void* buf, size_t len, void*, fi_addr_t dest, uint64_t tag,
                    void* ctx) {
  Ep* ep = ep_of(f);
  return tsend_common(ep, buf, len, dest, tag, ctx, tx_flags(ep), false, 0, false);
}

ssize_t tagged_senddata(fid_ep* f, const void* buf, size_t len, void*, uint64_t data,
                        fi_addr_t dest, uint64_t tag, void* ctx) {
  Ep* ep = ep_of(f);
  return tsend_common(ep, buf, len, dest, tag, ctx, tx_flags(ep), true, data, false);
}

ssize_t tagged_inject(fid_ep* f, const void* buf, size_t len, fi_addr_t dest, uint64_t tag) {
  return tsend_common(ep_of(f), buf, len, dest, tag, nullptr, 0, false, 0, true);
}

ssize_t tagged_injectdata(fid_ep* f, const void* buf, size_t len, uint64_t data, fi_addr_t dest,
                          uint64_t tag) {
  return tsend_common(ep_of(f), buf, len, dest, tag, nullptr, 0, true, data, true);
}

ssize_t tagged_sendmsg(fid_ep* f, const fi_msg_tagged* m, uint64_t flags) {
  if (m->iov_count > 1) return -FI_EINVAL;
  return tsend_common(ep_of(f), msg_buf(m), msg_len(m), m->addr, m->tag, m->context, flags,
                      (flags & FI_REMOTE_CQ_DATA) != 0, m->data, (flags & FI_INJECT) != 0);
}

ssize_t trecv_common(Ep* ep, void* buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore,
                     void* ctx, uint64_t flags) {
  uint32_t source = 0;
  if ((ep->info->caps & FI_DIRECTED_RECV) && src != FI_ADDR_UNSPEC) {
    source = peer_of(ep, src);
    if (source == 0) return -FI_EINVAL;
  }
  return post(ep, Dir::kRx, FI_RECV | FI_TAGGED, flags, ctx, buf, len, false,
              [&](uint64_t wr_id, const uint8_t*) {
                TaggedRecv r;
                r.wr_id = wr_id;
                r.base = static_cast<uint8_t*>(buf);
                r.length = len;
                r.tag = tag;
                r.ignore = ignore;
                r.source = source;
                return ep->engine->post_trecv(r);
              });
}

ssize_t tagged_recv(fid_ep* f, void* buf, size_t len, void*, fi_addr_t src, uint64_t tag,
                    uint64_t ignore, void* ctx) {
  Ep* ep = ep_of(f);
  return trecv_common(ep, buf, len, src, tag, ignore, ctx, rx_flags(ep));
}

// FI_CLAIM: the handle of the message an FI_PEEK | FI_CLAIM set aside, kept in the
// application's fi_context (tagged_peek).
uint64_t claim_of(void* context) {
  return static_cast<uint64_t>(
      reinterpret_cast<uintptr_t>(static_cast<fi_context*>(context)->internal[0]));
}

// FI_DISCARD: the claimed message is received into no buffer (its bytes dropped; a rendezvous
// one is not read). With a context, the receive completes with length 0; without one (the
// discard of an FI_PEEK), silently.
ssize_t discard_claimed(Ep* ep, uint64_t claim, void* context) {
  Domain* d = ep->domain;
  const ssize_t rc = post(ep, Dir::kRx, FI_RECV | FI_TAGGED, 0, context, nullptr, 0,
                          context == nullptr, [&](uint64_t wr_id, const uint8_t*) {
                            d->ops[wr_id].discard = true;
                            TaggedRecv r;
                            r.wr_id = wr_id;
                            return ep->engine->recv_claimed(claim, r);
                          });
  return rc;
}

// FI_PEEK (MPI_Iprobe, MPI_Improbe with FI_CLAIM): the engine's probe of its unexpected list,
// answered at once in the receive CQ: the message's length, tag, data and source, or an
// FI_ENOMSG error entry. A claim's handle lives in the application's fi_context, as
// libfabric asks of FI_CLAIM, for the paired receive.
ssize_t tagged_peek(Ep* ep, const fi_msg_tagged* m, uint64_t flags) {
  Domain* d = ep->domain;
  std::lock_guard lock(d->mu);
  if (!ep->enabled) return -FI_EOPBADSTATE;
  d->wait_for_link();
  Cq* cq = ep->rx_cq;
  if (cq == nullptr) return -FI_ENOCQ;
  if ((flags & FI_CLAIM) && m->context == nullptr) return -FI_EINVAL;
  TaggedRecv match;
  match.tag = m->tag;
  match.ignore = m->ignore;
  if ((ep->info->caps & FI_DIRECTED_RECV) && m->addr != FI_ADDR_UNSPEC) {
    match.source = peer_of(ep, m->addr);
    if (match.source == 0) return -FI_EINVAL;
  }
  d->progress();  // what has arrived by now
  if (!cq->reserve()) return -FI_EAGAIN;
  Probed p;
  const absl::Status s =
      ep->engine->probe_tagged(match, (flags & (FI_CLAIM | FI_DISCARD)) != 0, &p);
  if (!s.ok()) {
    cq->unreserve();
    if (!absl::IsNotFound(s)) return to_fi_errno(s);
    fi_cq_err_entry e{};
    e.op_context = m->context;
    e.flags = FI_RECV | FI_TAGGED;
    e.tag = m->tag;
    e.err = FI_ENOMSG;
    cq->push_error(e);
    return 0;
  }
  if (flags & FI_CLAIM) static_cast<fi_context*>(m->context)->internal[0] =
      reinterpret_cast<void*>(static_cast<uintptr_t>(p.claim));
  if (flags & FI_DISCARD) {  // found, reported below, and dropped unread
    if (const ssize_t rc = discard_claimed(ep, p.claim, nullptr); rc != 0) {
      cq->unreserve();
      return rc;
    }
  }
  CqEntry e{};
  e.e.op_context = m->context;
  e.e.flags = FI_RECV | FI_TAGGED | (p.has_data ? FI_REMOTE_CQ_DATA : 0);
  e.e.len = p.length;
  e.e.data = p.data;
  e.e.tag = p.tag;
  e.src = source_of(ep, p.peer);
  cq->push(e);
  return 0;
}

ssize_t tagged_recvmsg(fid_ep* f, const fi_msg_tagged* m, uint64_t flags) {
  if (m->iov_count > 1 || (flags & FI_MULTI_RECV)) return -FI_EOPNOTSUPP;
  // fi_tagged(3): FI_DISCARD goes with FI_PEEK (drop what it finds) or FI_CLAIM (drop what
  // an FI_PEEK | FI_CLAIM set aside).
  if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM))) return -FI_EINVAL;
  Ep* ep = ep_of(f);
  if (flags & FI_PEEK) return tagged_peek(ep, m, flags);
  if (flags & FI_DISCARD) {
    if (m->context == nullptr) return -FI_EINVAL;
    return discard_claimed(ep, claim_of(m->context), m->context);
  }
  void* buf = msg_buf(m);
  const size_t len = msg_len(m);
  if (flags & FI_CLAIM) {  // the message an FI_PEEK | FI_CLAIM set aside under this context
    if (m->context == nullptr) return -FI_EINVAL;
    const uint64_t claim = claim_of(m->context);
    return post(ep, Dir::kRx, FI_RECV | FI_TAGGED, flags, m->context, buf, len, false,
                [&](uint64_t wr_id, const uint8_t*) {
                  TaggedRecv r;
                  r.wr_id = wr_id;
                  r.base = static_cast<uint8_t*>(buf);
                  r.length = len;
                  return ep->engine->recv_claimed(claim, r);
                });
  }
  return trecv_common(ep, buf, len, m->addr, m->tag, m->ignore, m->context, flags);
}

fi_ops_tagged kTaggedOps = {
    .size = sizeof(fi_ops_tagged),
    .recv = tagged_recv,
    .recvv = one_iov<tagged_recv>,
    .recvmsg = tagged_recvmsg,
    .send = tagged_send,
    .sendv = one_iov<tagged_send>,
    .sendmsg = tagged_sendmsg,
    .inject = tagged_inject,
    .senddata = tagged_senddata,
    .injectdata = tagged_injectdata,
};

// ---------------------------------------------------------------------------------------------
// FI_RMA: UET WRITE and READ. `addr` is an offset in the region the key names (no
// FI_MR_VIRT_ADDR: the engine's regions are addressed from their start).

ssize_t write_common(Ep* ep, const void* buf, size_t len, fi_addr_t dest, uint64_t addr,
                     uint64_t key, void* ctx, uint64_t flags, bool inject) {
  const uint32_t peer = peer_of(ep, dest);
  if (peer == 0 || key > UINT32_MAX) return -FI_EINVAL;
  if (flags & FI_REMOTE_CQ_DATA) return -FI_EOPNOTSUPP;  // WRITE carries no immediate here
  return post(ep, Dir::kTx, FI_WRITE | FI_RMA, flags, ctx, const_cast<void*>(buf), len, inject,
              [&](uint64_t wr_id, const uint8_t* local) {
                WriteRequest r;
                r.wr_id = wr_id;
                r.peer = peer;
                r.rkey = static_cast<uint32_t>(key);
                r.remote_offset = addr;
                r.local = local;
                r.length = len;
                r.mode = ep->mode;
                r.to = kDomainMemory;
                return ep->engine->post_write(r);
              });
}

ssize_t rma_write(fid_ep* f, const void* buf, size_t len, void*, fi_addr_t dest, uint64_t addr,
                  uint64_t key, void* ctx) {
  Ep* ep = ep_of(f);
  return write_common(ep, buf, len, dest, addr, key, ctx, tx_flags(ep), false);
}

ssize_t rma_writemsg(fid_ep* f, const fi_msg_rma* m, uint64_t flags) {
  if (m->iov_count > 1 || m->rma_iov_count != 1) return -FI_EINVAL;
  return write_common(ep_of(f), msg_buf(m), msg_len(m), m->addr, m->rma_iov->addr, m->rma_iov->key,
                      m->context, flags, (flags & FI_INJECT) != 0);
}

ssize_t rma_inject(fid_ep* f, const void* buf, size_t len, fi_addr_t dest, uint64_t addr,
                   uint64_t key) {
  return write_common(ep_of(f), buf, len, dest, addr, key, nullptr, 0, true);
}

ssize_t rma_writedata(fid_ep*, const void*, size_t, void*, uint64_t, fi_addr_t, uint64_t,
                      uint64_t, void*) {
  return -FI_EOPNOTSUPP;
}

ssize_t rma_injectdata(fid_ep*, const void*, size_t, uint64_t, fi_addr_t, uint64_t, uint64_t) {
  return -FI_EOPNOTSUPP;
}

ssize_t read_common(Ep* ep, void* buf, size_t len, fi_addr_t src, uint64_t addr, uint64_t key,
                    void* ctx, uint64_t flags) {
  const uint32_t peer = peer_of(ep, src);
  if (peer == 0 || key > UINT32_MAX) return -FI_EINVAL;
  return post(ep, Dir::kTx, FI_READ | FI_RMA, flags, ctx, buf, len, false,
              [&](uint64_t wr_id, const uint8_t*) {
                ReadRequest r;
                r.wr_id = wr_id;
                r.peer = peer;
                r.rkey = static_cast<uint32_t>(key);
                r.remote_offset = addr;
                r.local = static_cast<uint8_t*>(buf);
                r.length = len;
                r.mode = ep->mode;
                r.to = kDomainMemory;
                return ep->engine->post_read(r);
              });
}

ssize_t rma_read(fid_ep* f, void* buf, size_t len, void*, fi_addr_t src, uint64_t addr,
                 uint64_t key, void* ctx) {
  Ep* ep = ep_of(f);
  return read_common(ep, buf, len, src, addr, key, ctx, tx_flags(ep));
}

ssize_t rma_readmsg(fid_ep* f, const fi_msg_rma* m, uint64_t flags) {
  if (m->iov_count > 1 || m->rma_iov_count != 1) return -FI_EINVAL;
  return read_common(ep_of(f), msg_buf(m), msg_len(m), m->addr, m->rma_iov->addr, m->rma_iov->key,
                     m->context, flags);
}

fi_ops_rma kRmaOps = {
    .size = sizeof(fi_ops_rma),
    .read = rma_read,
    .readv = one_iov<rma_read>,
    .readmsg = rma_readmsg,
    .write = rma_write,
    .writev = one_iov<rma_write>,
    .writemsg = rma_writemsg,
    .inject = rma_inject,
    .writedata = rma_writedata,
    .injectdata = rma_injectdata,
};

// ---------------------------------------------------------------------------------------------
// Connection management: an RDM endpoint only has a name.

int cm_getname(fid_t f, void* addr, size_t* addrlen) {
  Ep* ep = of<Ep>(f);
  sockaddr_in sin;
  name_of(ep->domain->local_ip4, ep->domain->port(),
          {.pid_on_fep = ep->pid, .ri_generation = ep->generation}, &sin);
  const bool fits = *addrlen >= sizeof(sin);
  if (addr != nullptr) std::memcpy(addr, &sin, std::min(*addrlen, sizeof(sin)));
  *addrlen = sizeof(sin);
  return fits ? 0 : -FI_ETOOSMALL;
}

int cm_setname(fid_t, void*, size_t) { return -FI_ENOSYS; }
int cm_getpeer(fid_ep*, void*, size_t*) { return -FI_ENOSYS; }
int cm_connect(fid_ep*, const void*, const void*, size_t) { return -FI_ENOSYS; }
int cm_listen(fid_pep*) { return -FI_ENOSYS; }
int cm_accept(fid_ep*, const void*, size_t) { return -FI_ENOSYS; }
int cm_reject(fid_pep*, fid_t, const void*, size_t) { return -FI_ENOSYS; }
int cm_shutdown(fid_ep*, uint64_t) { return -FI_ENOSYS; }
int cm_join(fid_ep*, const void*, uint64_t, fid_mc**, void*) { return -FI_ENOSYS; }

fi_ops_cm kCmOps = {
    .size = sizeof(fi_ops_cm),
    .setname = cm_setname,
    .getname = cm_getname,
    .getpeer = cm_getpeer,
    .connect = cm_connect,
    .listen = cm_listen,
    .accept = cm_accept,
    .reject = cm_reject,
    .shutdown = cm_shutdown,
    .join = cm_join,
};

// ---------------------------------------------------------------------------------------------
// Endpoint control.

// fi_cancel: a receive no message has claimed yet is withdrawn (the engine's cancel_recv) and
// completes with FI_ECANCELED in the error queue. A send, READ or WRITE is on its way once
// posted, and a receive a message claimed completes as it lands: -FI_ENOENT.
ssize_t ep_cancel(fid_t f, void* context) {
  Ep* ep = of<Ep>(f);
  Domain* d = ep->domain;
  std::lock_guard lock(d->mu);
  for (size_t i = 0; i < d->ops.size(); ++i) {
    const OpCtx& op = d->ops[i];
    if (!op.in_use || op.ep != ep || op.context != context || (op.flags & FI_RECV) == 0)
      continue;
    if (ep->engine->cancel_recv(i).ok()) {
      d->drain();  // its error completion, now
      return 0;
    }
  }
  return -FI_ENOENT;
}
int ep_getopt(fid_t, int, int, void*, size_t*) { return -FI_ENOPROTOOPT; }
int ep_setopt(fid_t, int, int, const void*, size_t) { return -FI_ENOPROTOOPT; }
int ep_no_ctx(fid_ep*, int, fi_tx_attr*, fid_ep**, void*) { return -FI_ENOSYS; }
int ep_no_rx_ctx(fid_ep*, int, fi_rx_attr*, fid_ep**, void*) { return -FI_ENOSYS; }

ssize_t ep_rx_size_left(fid_ep* f) {
  Ep* ep = ep_of(f);
  std::lock_guard lock(ep->domain->mu);
  return static_cast<ssize_t>(kRxSize - std::min(kRxSize, ep->rx_in_flight));
}

ssize_t ep_tx_size_left(fid_ep* f) {
  Ep* ep = ep_of(f);
  std::lock_guard lock(ep->domain->mu);
  return static_cast<ssize_t>(kTxSize - std::min(kTxSize, ep->tx_in_flight));
}

fi_ops_ep kEpOps = {
    .size = sizeof(fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = ep_no_ctx,
    .rx_ctx = ep_no_rx_ctx,
    .rx_size_left = ep_rx_size_left,
    .tx_size_left = ep_tx_size_left,
};

int ep_bind(fid* f, fid* bf, uint64_t flags) {
  Ep* ep = of<Ep>(f);
  std::lock_guard lock(ep->domain->mu);
  if (ep->enabled) return -FI_EOPBADSTATE;
  switch (bf->fclass) {
    case FI_CLASS_AV: {
      if (ep->av != nullptr) return -FI_EINVAL;
      ep->av = of<Av>(bf);
      ++ep->av->bound;
      return 0;
    }
    case FI_CLASS_CQ: {
      Cq* cq = of<Cq>(bf);
      if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) return -FI_EBADFLAGS;
      if (flags & FI_TRANSMIT) {
        if (ep->tx_cq != nullptr) return -FI_EINVAL;
        ep->tx_cq = cq;
        ep->tx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
        ++cq->bound;
      }
      if (flags & FI_RECV) {
        if (ep->rx_cq != nullptr) return -FI_EINVAL;
        ep->rx_cq = cq;
        ep->rx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
        ++cq->bound;
      }
      return 0;
    }
    case FI_CLASS_CNTR: {
      Cntr* c = of<Cntr>(bf);
      if (flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE)) return -FI_EBADFLAGS;
      for (auto [bit, slot] : {std::pair{FI_SEND, &ep->send_cntr}, std::pair{FI_RECV, &ep->recv_cntr},
                               std::pair{FI_READ, &ep->read_cntr}, std::pair{FI_WRITE, &ep->write_cntr}}) {
        if ((flags & bit) == 0) continue;
        if (*slot != nullptr) return -FI_EINVAL;
        *slot = c;
        ++c->bound;
      }
      return 0;
    }
    case FI_CLASS_EQ:
      return 0;  // an RDM endpoint has no connection events
    default:
      return -FI_EINVAL;
  }
}

int ep_enable(Ep* ep) {
  std::lock_guard lock(ep->domain->mu);
  if (ep->av == nullptr) return -FI_ENOAV;
  if (ep->tx_cq == nullptr && ep->send_cntr == nullptr && ep->write_cntr == nullptr &&
      ep->read_cntr == nullptr) {
    return -FI_ENOCQ;
  }
  ep->enabled = true;
  return 0;
}

int ep_control(fid* f, int command, void* arg) {
  Ep* ep = of<Ep>(f);
  switch (command) {
    case FI_ENABLE: return ep_enable(ep);
    case FI_GETOPSFLAG:
    case FI_SETOPSFLAG: {
      auto* flags = static_cast<uint64_t*>(arg);
      std::lock_guard lock(ep->domain->mu);
      uint64_t& target = (*flags & FI_TRANSMIT) ? ep->info->tx_attr->op_flags
                                                 : ep->info->rx_attr->op_flags;
      if (command == FI_GETOPSFLAG) {
        *flags = target;
      } else {
        target = *flags & ~(FI_TRANSMIT | FI_RECV);
      }
      return 0;
    }
    default: return -FI_ENOSYS;
  }
}

int ep_close(fid* f) {
  Ep* ep = of<Ep>(f);
  Domain* d = ep->domain;
  std::lock_guard lock(d->mu);
  // Its operations in the domain's engine complete silently from now on; in its own, end.
  for (uint32_t i = 0; i < d->ops.size(); ++i) {
    if (!d->ops[i].in_use || d->ops[i].ep != ep) continue;
    // No CQ, counter or endpoint to report to; its direction kept for the domain's linger.
    d->ops[i] = OpCtx{.flags = d->ops[i].flags & FI_RECV, .in_use = true};
    if (ep->own != nullptr) d->free_op(i);
  }
  endpoint_closed(*d, *ep);
  for (Cq* cq : {ep->tx_cq, ep->rx_cq}) {
    if (cq != nullptr) --cq->bound;
  }
  for (Cntr* c : {ep->send_cntr, ep->recv_cntr, ep->read_cntr, ep->write_cntr}) {
    if (c != nullptr) --c->bound;
  }
  if (ep->av != nullptr) --ep->av->bound;
  std::erase(d->eps, ep);
  --d->children;
  fi_freeinfo(ep->info);
  delete ep;
  return 0;
}

fi_ops kEpFiOps = fid_ops(ep_close, ep_bind, ep_control);

}  // namespace

int ep_open(fid_domain* domain, fi_info* info, fid_ep** out, void* context) {
  Domain* d = of<Domain>(domain);
  if (info == nullptr || info->ep_attr == nullptr || info->ep_attr->type != FI_EP_RDM)
    return -FI_EINVAL;
  std::lock_guard lock(d->mu);
  uint32_t pid = 0;
  std::unique_ptr<Endpoint> own;
  if (int err = endpoint_engine(*d, &pid, &own); err != 0) return err;
  auto* ep = open_child<Ep>(d, FI_CLASS_EP, context, &kEpFiOps);
  ep->pid = static_cast<uint16_t>(pid);
  ep->generation = pid == 0 ? d->pid0_generation : 0;
  ep->own = std::move(own);
  ep->engine = ep->own != nullptr ? ep->own.get() : d->engine.get();
  if (ep->own != nullptr) d->mux.set(pid, ep->own.get());
  ep->fid.ops = &kEpOps;
  ep->fid.cm = &kCmOps;
  ep->fid.msg = &kMsgOps;
  ep->fid.rma = &kRmaOps;
  ep->fid.tagged = &kTaggedOps;
  ep->fid.atomic = &kAtomicOps;
  ep->fid.collective = nullptr;
  ep->info = fi_dupinfo(info);
  const uint64_t order = (info->tx_attr ? info->tx_attr->msg_order : 0) |
                         (info->rx_attr ? info->rx_attr->msg_order : 0);
  // FI_ORDER_SAS: messages processed in the order they were sent, UET's ROD (spec/uet.md §3.3).
  ep->mode = (order & FI_ORDER_SAS) ? DeliveryMode::kRod : DeliveryMode::kRud;
  d->eps.push_back(ep);
  *out = &ep->fid;
  return 0;
}

}  // namespace uet::fabric
