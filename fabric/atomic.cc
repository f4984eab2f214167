// FI_ATOMIC: libfabric's atomics as UET atomic requests (spec/uet.md §4.5), executed by the
// target's engine on its registered memory (transport/atomic.h). libfabric's operations and
// types are UET's under other numbers; a call family admits the operations fi_atomic(3) lists
// for it, and a call moves at most kMaxAtomicBytes of operands (one frame), which the valid
// calls report as their count.
#include <iterator>

#include "fabric/uetref.h"
#include "transport/atomic.h"

namespace uet::fabric {

namespace {

enum class Family : uint8_t { kBase, kFetch, kCompare };

// libfabric's enum fi_op, in its order (UET's DIFF has no libfabric name).
bool op_of(fi_op op, AtomicOp* out) {
  static constexpr AtomicOp kOps[] = {
      AtomicOp::kMin,     AtomicOp::kMax,     AtomicOp::kSum,     AtomicOp::kProd,
      AtomicOp::kLor,     AtomicOp::kLand,    AtomicOp::kBor,     AtomicOp::kBand,
      AtomicOp::kLxor,    AtomicOp::kBxor,    AtomicOp::kRead,    AtomicOp::kWrite,
      AtomicOp::kCswap,   AtomicOp::kCswapNe, AtomicOp::kCswapLe, AtomicOp::kCswapLt,
      AtomicOp::kCswapGe, AtomicOp::kCswapGt, AtomicOp::kMswap,
  };
  static_assert(std::size(kOps) == FI_ATOMIC_OP_LAST);
  if (static_cast<unsigned>(op) >= std::size(kOps)) return false;
  *out = kOps[op];
  return true;
}

// libfabric's enum fi_datatype; BF16 and FP16 have no libfabric name in 1.17.
bool type_of(fi_datatype t, AtomicType* out) {
  static constexpr AtomicType kTypes[] = {
      AtomicType::kInt8,          AtomicType::kUint8,          AtomicType::kInt16,
      AtomicType::kUint16,        AtomicType::kInt32,          AtomicType::kUint32,
      AtomicType::kInt64,         AtomicType::kUint64,         AtomicType::kFloat,
      AtomicType::kDouble,        AtomicType::kFloatComplex,   AtomicType::kDoubleComplex,
      AtomicType::kLongDouble,    AtomicType::kLongDoubleComplex, AtomicType::kInt128,
      AtomicType::kUint128,
  };
  static_assert(std::size(kTypes) == FI_UINT128 + 1);
  if (static_cast<unsigned>(t) >= std::size(kTypes)) return false;
  *out = kTypes[t];
  return true;
}

// fi_atomic(3): which operations each family takes.
bool in_family(AtomicOp op, Family f) {
  switch (f) {
    case Family::kBase: return !atomic_has_compare(op) && op != AtomicOp::kRead;
    case Family::kFetch: return !atomic_has_compare(op);
    case Family::kCompare: return atomic_has_compare(op);
  }
  return false;
}

// Elements one call moves at most, 0 when the pair is not offered (the engine's post_atomic
// limits: UET kMaxAtomicBytes of operands, the CSWAP family one element of at most 16 bytes;
// RoCEv2 its two atomics, FETCH_ADD and CMP_SWAP, on one 64-bit word).
size_t max_count(const Domain* d, fi_datatype datatype, fi_op fop, Family f, AtomicOp* op,
                 AtomicType* type) {
  if (!op_of(fop, op) || !type_of(datatype, type) || !in_family(*op, f)) return 0;
  if (atomic_supported(*op, *type) != AtomicFault::kNone) return 0;
  if (d->rc != nullptr) {
    const bool word = *type == AtomicType::kInt64 || *type == AtomicType::kUint64;
    return word && (*op == AtomicOp::kSum || *op == AtomicOp::kCswap) ? 1 : 0;
  }
  const size_t size = atomic_size(*type);
  if (atomic_is_cswap(*op)) return size <= 16 ? 1 : 0;
  return kMaxAtomicBytes / size;
}

// One atomic call of any family: the operands, compare values and result buffer as the engine
// takes them.
struct Call {
  Ep* ep;
  Family family;
  const void* buf;
  size_t count;
  const void* compare = nullptr;
  void* result = nullptr;
  fi_addr_t dest;
  uint64_t addr;
  uint64_t key;
  fi_datatype datatype;
  fi_op op;
  void* context;
  uint64_t flags;
  bool inject = false;
};

ssize_t atomic_post(const Call& c) {
  AtomicOp op{};
  AtomicType type{};
  const size_t most = max_count(c.ep->domain, c.datatype, c.op, c.family, &op, &type);
  if (most == 0) return -FI_EOPNOTSUPP;
  if (c.count < 1 || c.count > most) return -FI_EINVAL;
  const uint32_t peer = peer_of(c.ep, c.dest);
  if (peer == 0 || c.key > UINT32_MAX) return -FI_EINVAL;
  const size_t len = c.count * atomic_size(type);
  // fi_cq(3): an atomic completes as FI_ATOMIC with FI_WRITE, or FI_READ when it fetches (so
  // fi_atomic counts on the write counter, the fetching calls on the read counter).
  const uint64_t flags = FI_ATOMIC | (c.family == Family::kBase ? FI_WRITE : FI_READ);
  return post(c.ep, Dir::kTx, flags, c.flags, c.context, const_cast<void*>(c.buf),
              op == AtomicOp::kRead ? 0 : len, c.inject,
              [&](uint64_t wr_id, const uint8_t* local) {
                AtomicRequest r;
                r.wr_id = wr_id;
                r.peer = peer;
                r.rkey = static_cast<uint32_t>(c.key);
                r.remote_offset = c.addr;
                r.op = op;
                r.type = type;
                r.count = static_cast<uint32_t>(c.count);
                r.operand = op == AtomicOp::kRead ? nullptr : local;
                r.compare = static_cast<const uint8_t*>(c.compare);
                r.result = static_cast<uint8_t*>(c.result);
                r.mode = c.ep->mode;
                r.to = kDomainMemory;
                return c.ep->engine->post_atomic(r);
              });
}

Ep* ep_of(fid_ep* f) { return of<Ep>(f); }
uint64_t tx_flags(const Ep* ep) { return ep->info->tx_attr->op_flags; }

// One fi_ioc (the engine takes one contiguous run of elements per call); a vector of several
// is -FI_EINVAL, as the provider's iov_limit of 1 says.
bool one(const fi_ioc* iov, size_t n, const void** addr, size_t* count) {
  if (n != 1 || iov == nullptr) return false;
  *addr = iov->addr;
  *count = iov->count;
  return true;
}

bool msg_ok(const fi_msg_atomic* m) { return m != nullptr && m->rma_iov_count == 1; }

// fi_atomic and its variants.

ssize_t write(fid_ep* f, const void* buf, size_t count, void*, fi_addr_t dest, uint64_t addr,
              uint64_t key, fi_datatype datatype, fi_op op, void* context) {
  Ep* ep = ep_of(f);
  return atomic_post({.ep = ep, .family = Family::kBase, .buf = buf, .count = count,
                      .dest = dest, .addr = addr, .key = key, .datatype = datatype, .op = op,
                      .context = context, .flags = tx_flags(ep)});
}

ssize_t writev(fid_ep* f, const fi_ioc* iov, void** desc, size_t n, fi_addr_t dest,
               uint64_t addr, uint64_t key, fi_datatype datatype, fi_op op, void* context) {
  const void* buf = nullptr;
  size_t count = 0;
  if (!one(iov, n, &buf, &count)) return -FI_EINVAL;
  return write(f, buf, count, desc ? desc[0] : nullptr, dest, addr, key, datatype, op, context);
}

ssize_t writemsg(fid_ep* f, const fi_msg_atomic* m, uint64_t flags) {
  const void* buf = nullptr;
  size_t count = 0;
  if (!msg_ok(m) || !one(m->msg_iov, m->iov_count, &buf, &count)) return -FI_EINVAL;
  if (m->rma_iov->count != count) return -FI_EINVAL;
  return atomic_post({.ep = ep_of(f), .family = Family::kBase, .buf = buf, .count = count,
                      .dest = m->addr, .addr = m->rma_iov->addr, .key = m->rma_iov->key,
                      .datatype = m->datatype, .op = m->op, .context = m->context,
                      .flags = flags, .inject = (flags & FI_INJECT) != 0});
}

ssize_t inject(fid_ep* f, const void* buf, size_t count, fi_addr_t dest, uint64_t addr,
               uint64_t key, fi_datatype datatype, fi_op op) {
  return atomic_post({.ep = ep_of(f), .family = Family::kBase, .buf = buf, .count = count,
                      .dest = dest, .addr = addr, .key = key, .datatype = datatype, .op = op,
                      .context = nullptr, .flags = 0, .inject = true});
}

// fi_fetch_atomic and its variants.

ssize_t readwrite(fid_ep* f, const void* buf, size_t count, void*, void* result, void*,
                  fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype datatype, fi_op op,
                  void* context) {
  Ep* ep = ep_of(f);
  if (result == nullptr) return -FI_EINVAL;
  return atomic_post({.ep = ep, .family = Family::kFetch, .buf = buf, .count = count,
                      .result = result, .dest = dest, .addr = addr, .key = key,
                      .datatype = datatype, .op = op, .context = context,
                      .flags = tx_flags(ep)});
}

ssize_t readwritev(fid_ep* f, const fi_ioc* iov, void** desc, size_t n, fi_ioc* resultv,
                   void** result_desc, size_t result_n, fi_addr_t dest, uint64_t addr,
                   uint64_t key, fi_datatype datatype, fi_op op, void* context) {
  const void* buf = nullptr;
  const void* result = nullptr;
  size_t count = 0, result_count = 0;
  // FI_ATOMIC_READ takes no operands: its iov may be empty.
  if (!(op == FI_ATOMIC_READ && n == 0) && !one(iov, n, &buf, &count)) return -FI_EINVAL;
  if (!one(resultv, result_n, &result, &result_count)) return -FI_EINVAL;
  if (op == FI_ATOMIC_READ && n == 0) count = result_count;
  if (count != result_count) return -FI_EINVAL;
  return readwrite(f, buf, count, desc ? desc[0] : nullptr, const_cast<void*>(result),
                   result_desc ? result_desc[0] : nullptr, dest, addr, key, datatype, op,
                   context);
}

ssize_t readwritemsg(fid_ep* f, const fi_msg_atomic* m, fi_ioc* resultv, void**,
                     size_t result_n, uint64_t flags) {
  const void* buf = nullptr;
  const void* result = nullptr;
  size_t count = 0, result_count = 0;
  if (!msg_ok(m) || !one(resultv, result_n, &result, &result_count)) return -FI_EINVAL;
  if (!(m->op == FI_ATOMIC_READ && m->iov_count == 0) &&
      !one(m->msg_iov, m->iov_count, &buf, &count)) {
    return -FI_EINVAL;
  }
  if (m->op == FI_ATOMIC_READ && m->iov_count == 0) count = result_count;
  if (count != result_count || m->rma_iov->count != count) return -FI_EINVAL;
  return atomic_post({.ep = ep_of(f), .family = Family::kFetch, .buf = buf, .count = count,
                      .result = const_cast<void*>(result), .dest = m->addr,
                      .addr = m->rma_iov->addr, .key = m->rma_iov->key,
                      .datatype = m->datatype, .op = m->op, .context = m->context,
                      .flags = flags});
}

// fi_compare_atomic and its variants.

ssize_t compwrite(fid_ep* f, const void* buf, size_t count, void*, const void* compare, void*,
                  void* result, void*, fi_addr_t dest, uint64_t addr, uint64_t key,
                  fi_datatype datatype, fi_op op, void* context) {
  Ep* ep = ep_of(f);
  if (compare == nullptr || result == nullptr) return -FI_EINVAL;
  return atomic_post({.ep = ep, .family = Family::kCompare, .buf = buf, .count = count,
                      .compare = compare, .result = result, .dest = dest, .addr = addr,
                      .key = key, .datatype = datatype, .op = op, .context = context,
                      .flags = tx_flags(ep)});
}

ssize_t compwritev(fid_ep* f, const fi_ioc* iov, void** desc, size_t n, const fi_ioc* comparev,
                   void** compare_desc, size_t compare_n, fi_ioc* resultv, void** result_desc,
                   size_t result_n, fi_addr_t dest, uint64_t addr, uint64_t key,
                   fi_datatype datatype, fi_op op, void* context) {
  const void *buf = nullptr, *compare = nullptr, *result = nullptr;
  size_t count = 0, compare_count = 0, result_count = 0;
  if (!one(iov, n, &buf, &count) || !one(comparev, compare_n, &compare, &compare_count) ||
      !one(resultv, result_n, &result, &result_count)) {
    return -FI_EINVAL;
  }
  if (compare_count != count || result_count != count) return -FI_EINVAL;
  return compwrite(f, buf, count, desc ? desc[0] : nullptr, compare,
                   compare_desc ? compare_desc[0] : nullptr, const_cast<void*>(result),
                   result_desc ? result_desc[0] : nullptr, dest, addr, key, datatype, op,
                   context);
}

ssize_t compwritemsg(fid_ep* f, const fi_msg_atomic* m, const fi_ioc* comparev, void**,
                     size_t compare_n, fi_ioc* resultv, void**, size_t result_n,
                     uint64_t flags) {
  const void *buf = nullptr, *compare = nullptr, *result = nullptr;
  size_t count = 0, compare_count = 0, result_count = 0;
  if (!msg_ok(m) || !one(m->msg_iov, m->iov_count, &buf, &count) ||
      !one(comparev, compare_n, &compare, &compare_count) ||
      !one(resultv, result_n, &result, &result_count)) {
    return -FI_EINVAL;
  }
  if (compare_count != count || result_count != count || m->rma_iov->count != count)
    return -FI_EINVAL;
  return atomic_post({.ep = ep_of(f), .family = Family::kCompare, .buf = buf, .count = count,
                      .compare = compare, .result = const_cast<void*>(result), .dest = m->addr,
                      .addr = m->rma_iov->addr, .key = m->rma_iov->key,
                      .datatype = m->datatype, .op = m->op, .context = m->context,
                      .flags = flags});
}

int valid(fid_ep* ep, fi_datatype datatype, fi_op fop, Family f, size_t* count) {
  AtomicOp op{};
  AtomicType type{};
  const size_t most = max_count(ep_of(ep)->domain, datatype, fop, f, &op, &type);
  if (most == 0) return -FI_EOPNOTSUPP;
  if (count != nullptr) *count = most;
  return 0;
}

int writevalid(fid_ep* ep, fi_datatype datatype, fi_op op, size_t* count) {
  return valid(ep, datatype, op, Family::kBase, count);
}
int readwritevalid(fid_ep* ep, fi_datatype datatype, fi_op op, size_t* count) {
  return valid(ep, datatype, op, Family::kFetch, count);
}
int compwritevalid(fid_ep* ep, fi_datatype datatype, fi_op op, size_t* count) {
  return valid(ep, datatype, op, Family::kCompare, count);
}

}  // namespace

fi_ops_atomic kAtomicOps = {
    .size = sizeof(fi_ops_atomic),
    .write = write,
    .writev = writev,
    .writemsg = writemsg,
    .inject = inject,
    .readwrite = readwrite,
    .readwritev = readwritev,
    .readwritemsg = readwritemsg,
    .compwrite = compwrite,
    .compwritev = compwritev,
    .compwritemsg = compwritemsg,
    .writevalid = writevalid,
    .readwritevalid = readwritevalid,
    .compwritevalid = compwritevalid,
};

int query_atomic(fid_domain* domain, fi_datatype datatype, fi_op fop, fi_atomic_attr* attr,
                 uint64_t flags) {
  if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC)) return -FI_EINVAL;
  if (flags & FI_TAGGED) return -FI_EOPNOTSUPP;  // no atomics into tagged receive buffers
  if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) return -FI_EBADFLAGS;
  const Family f = (flags & FI_FETCH_ATOMIC)     ? Family::kFetch
                   : (flags & FI_COMPARE_ATOMIC) ? Family::kCompare
                                                 : Family::kBase;
  AtomicOp op{};
  AtomicType type{};
  const size_t most = max_count(of<Domain>(domain), datatype, fop, f, &op, &type);
  if (most == 0) return -FI_EOPNOTSUPP;
  if (attr != nullptr) {
    attr->count = most;
    attr->size = atomic_size(type);
  }
  return 0;
}

}  // namespace uet::fabric
