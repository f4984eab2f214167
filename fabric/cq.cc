// Completion queues, counters, and the event queue (RDM endpoints post no events to it; it
// exists because applications open one whatever the endpoint type).
#include <cstdio>
#include <cstring>

#include "fabric/uetref.h"
#include "transport/wire/registry.h"

namespace uet::fabric {

bool Cq::reserve() noexcept {
  if (count + reserved >= ring.size()) return false;
  ++reserved;
  return true;
}

void Cq::push(const CqEntry& e) noexcept {
  --reserved;
  ring[(head + count) % ring.size()] = e;
  ++count;
}

void Cq::push_error(const fi_cq_err_entry& e) {
  // Every operation in flight fails at most once: the domain's op slots bound the queue.
  errs[(err_head + err_count) % errs.size()] = e;
  ++err_count;
}

namespace {

size_t entry_size(fi_cq_format f) {
  switch (f) {
    case FI_CQ_FORMAT_CONTEXT: return sizeof(fi_cq_entry);
    case FI_CQ_FORMAT_MSG: return sizeof(fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA: return sizeof(fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED: return sizeof(fi_cq_tagged_entry);
    default: return 0;
  }
}

// The end of a blocking call's wait (fi_cq_sread, fi_cntr_wait): `timeout` in milliseconds
// (fi_cq(3), fi_cntr(3)); a negative timeout never ends.
Time deadline_after(int timeout) {
  return timeout < 0 ? std::numeric_limits<Time>::max()
                     : io::monotonic_now() + Time{timeout} * kMillisecond;
}

ssize_t read_entries(Cq* cq, void* buf, size_t count, fi_addr_t* src) {
  std::lock_guard lock(cq->domain->mu);
  if (cq->count == 0) cq->domain->progress();
  if (cq->err_count > 0) return -FI_EAVAIL;
  if (cq->count == 0) return -FI_EAGAIN;
  size_t n = 0;
  auto* out = static_cast<uint8_t*>(buf);
  for (; n < count && cq->count > 0; ++n) {
    const CqEntry& e = cq->ring[cq->head];
    std::memcpy(out + n * cq->entry_size, &e.e, cq->entry_size);
    if (src != nullptr) src[n] = e.src;
    cq->head = (cq->head + 1) % cq->ring.size();
    --cq->count;
  }
  return static_cast<ssize_t>(n);
}

ssize_t cq_readfrom(fid_cq* f, void* buf, size_t count, fi_addr_t* src) {
  Cq* cq = of<Cq>(f);
  const ssize_t n = read_entries(cq, buf, count, src);
  // FI_PROGRESS_AUTO: an application polling an empty CQ gives way, so that the progress
  // thread (woken by a frame) gets the lock and a CPU.
  if (n == -FI_EAGAIN && cq->domain->auto_progress) std::this_thread::yield();
  return n;
}

ssize_t cq_read(fid_cq* f, void* buf, size_t count) { return cq_readfrom(f, buf, count, nullptr); }

ssize_t cq_readerr(fid_cq* f, fi_cq_err_entry* buf, uint64_t flags) {
  (void)flags;
  Cq* cq = of<Cq>(f);
  std::lock_guard lock(cq->domain->mu);
  if (cq->err_count == 0) return -FI_EAGAIN;
  const fi_cq_err_entry& e = cq->errs[cq->err_head];
  // API 1.5+: err_data_size says how much of err_data the caller gave; we give none.
  void* err_data = buf->err_data;
  *buf = e;
  buf->err_data = err_data;
  buf->err_data_size = 0;
  cq->err_head = (cq->err_head + 1) % cq->errs.size();
  --cq->err_count;
  return 1;
}

ssize_t cq_sreadfrom(fid_cq* f, void* buf, size_t count, fi_addr_t* src, const void* cond,
                     int timeout) {
  (void)cond;
  Cq* cq = of<Cq>(f);
  const Time deadline = deadline_after(timeout);
  for (;;) {
    const ssize_t n = cq_readfrom(f, buf, count, src);
    if (n != -FI_EAGAIN) return n;
    if (io::monotonic_now() >= deadline) return -FI_EAGAIN;
    cq->domain->idle(deadline);
  }
}

ssize_t cq_sread(fid_cq* f, void* buf, size_t count, const void* cond, int timeout) {
  return cq_sreadfrom(f, buf, count, nullptr, cond, timeout);
}

int cq_signal(fid_cq*) { return 0; }

// The SES return code (spec/uet.md §4.9) the target answered with, by name.
const char* cq_strerror(fid_cq* f, int prov_errno, const void*, char* buf, size_t len) {
  thread_local char own[96];
  if (buf == nullptr || len == 0) {
    buf = own;
    len = sizeof(own);
  }
  if (prov_errno < 0 && f != nullptr && of<Cq>(f)->domain->rc != nullptr) {
    // RoCEv2: the work completion's status (a NAK's class, or retries spent).
    std::snprintf(buf, len, "RoCEv2: %s", to_string(static_cast<OpStatus>(-prov_errno)));
    return buf;
  }
  if (prov_errno < 0) {  // no SES return code: the peer never answered (domain.cc)
    std::snprintf(buf, len, "no answer from the peer: %s",
                  to_string(static_cast<OpStatus>(-prov_errno)));
    return buf;
  }
  const std::string_view name =
      wire::value_name("ses_return_code", static_cast<uint64_t>(prov_errno));
  std::snprintf(buf, len, "UET return code %d (%.*s)", prov_errno, static_cast<int>(name.size()),
                name.data());
  return buf;
}

fi_ops kCqFiOps = fid_ops(close_child<Cq>);

fi_ops_cq kCqOps = {
    .size = sizeof(fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = cq_signal,
    .strerror = cq_strerror,
};

// ---------------------------------------------------------------------------------------------
// Counters.

// fi_cntr_read and fi_cntr_readerr: one of the two counts, once the engine has moved.
template <uint64_t Cntr::*kCount>
uint64_t cntr_get(fid_cntr* f) {
  Cntr* c = of<Cntr>(f);
  std::lock_guard lock(c->domain->mu);
  c->domain->progress();
  return c->*kCount;
}

// fi_cntr_add, _set, _adderr and _seterr: one of the two counts, added to or set.
template <uint64_t Cntr::*kCount, bool kAdd>
int cntr_update(fid_cntr* f, uint64_t v) {
  Cntr* c = of<Cntr>(f);
  std::lock_guard lock(c->domain->mu);
  c->*kCount = kAdd ? c->*kCount + v : v;
  return 0;
}

constexpr auto cntr_read = cntr_get<&Cntr::value>;
constexpr auto cntr_readerr = cntr_get<&Cntr::errors>;

int cntr_wait(fid_cntr* f, uint64_t threshold, int timeout) {
  Cntr* c = of<Cntr>(f);
  const Time deadline = deadline_after(timeout);
  const uint64_t errors = cntr_readerr(f);
  for (;;) {
    if (cntr_read(f) >= threshold) return 0;
    if (cntr_readerr(f) != errors) return -FI_EAVAIL;
    if (io::monotonic_now() >= deadline) return -FI_ETIMEDOUT;
    c->domain->idle(deadline);
  }
}

fi_ops kCntrFiOps = fid_ops(close_child<Cntr>);

fi_ops_cntr kCntrOps = {
    .size = sizeof(fi_ops_cntr),
    .read = cntr_read,
    .readerr = cntr_readerr,
    .add = cntr_update<&Cntr::value, true>,
    .set = cntr_update<&Cntr::value, false>,
    .wait = cntr_wait,
    .adderr = cntr_update<&Cntr::errors, true>,
    .seterr = cntr_update<&Cntr::errors, false>,
};

}  // namespace

int cq_open(fid_domain* domain, fi_cq_attr* attr, fid_cq** out, void* context) {
  Domain* d = of<Domain>(domain);
  const fi_cq_format format =
      attr == nullptr || attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
  if (entry_size(format) == 0) return -FI_ENOSYS;
  if (attr != nullptr && !no_wait_object(attr->wait_obj)) return -FI_ENOSYS;
  std::lock_guard lock(d->mu);
  auto* cq = open_child<Cq>(d, FI_CLASS_CQ, context, &kCqFiOps);
  cq->fid.ops = &kCqOps;
  cq->format = format;
  cq->entry_size = entry_size(format);
  cq->ring.resize(attr != nullptr && attr->size > 0 ? attr->size : kCqSize);
  cq->errs.resize(d->ops.size());
  *out = &cq->fid;
  return 0;
}

int cntr_open(fid_domain* domain, fi_cntr_attr* attr, fid_cntr** out, void* context) {
  Domain* d = of<Domain>(domain);
  if (attr != nullptr && attr->events != FI_CNTR_EVENTS_COMP) return -FI_ENOSYS;
  if (attr != nullptr && !no_wait_object(attr->wait_obj)) return -FI_ENOSYS;
  std::lock_guard lock(d->mu);
  auto* c = open_child<Cntr>(d, FI_CLASS_CNTR, context, &kCntrFiOps);
  c->fid.ops = &kCntrOps;
  *out = &c->fid;
  return 0;
}

}  // namespace uet::fabric
