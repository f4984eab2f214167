// The provider through libfabric's public API, as an application calls it (no MPI, no
// fi_pingpong): hints it must refuse, misuse it must answer with libfabric's errors, and RMA
// (which neither fi_pingpong nor the MPI MTL exercise) between two domains of one process:
// WRITE then READ back, a WRITE outside the region failing with the target's return code,
// counters, atomics of every family (values checked, what is not offered refused), a send to an address no one listens on and one held by a peer that dies both
// failing within the retry budget.
// With FI_UETREF_TRANSPORT=rocev2 the same runs over the RC engine, where RoCEv2 differs:
// its atomics (FETCH_ADD and CMP_SWAP on one 64-bit word) and no JobID (auth_key refused).
// Exits 0 when every check holds; prints each failure.
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int failures;
static int rocev2;  // FI_UETREF_TRANSPORT=rocev2

#include "node.h"

static struct fi_info* hints_for(uint64_t caps) {
  struct fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup("uetref");
  h->ep_attr->type = FI_EP_RDM;
  h->caps = caps;
  h->domain_attr->mr_mode = FI_MR_PROV_KEY;
  return h;
}

static int getinfo_rc(struct fi_info* h) {
  struct fi_info* info = NULL;
  const int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
  if (info != NULL) fi_freeinfo(info);
  fi_freeinfo(h);
  return rc;
}

// The flags of the last successful completion one_completion() read.
static uint64_t last_flags;

static int one_completion(struct node* a, struct node* b, int* ok, struct fi_cq_err_entry* err,
                          double timeout_s) {
  return next_completion(a, b, ok, err, &last_flags, timeout_s);
}

// Runs one atomic call's completion and reports whether it succeeded with `want_flags`.
static int atomic_done(struct node* a, struct node* b, uint64_t want_flags, const char* what) {
  int ok = 0;
  struct fi_cq_err_entry err;
  if (one_completion(a, b, &ok, &err, 5.0) != 1 || !ok) {
    CHECK(0, "%s: no completion, or an error one (%d)", what, ok ? 0 : err.err);
    return 0;
  }
  CHECK(last_flags == want_flags, "%s: completion flags %#lx, want %#lx", what,
        (unsigned long)last_flags, (unsigned long)want_flags);
  return 1;
}

// RoCEv2's atomics: FETCH_ADD (fi_atomic and fi_fetch_atomic FI_SUM) and CMP_SWAP
// (fi_compare_atomic FI_CSWAP) on one 64-bit word; every other pair refused.
static void check_rc_atomics(struct node* a, struct node* b, fi_addr_t to_b, uint64_t key,
                             unsigned char* region, size_t len) {
  size_t count = 0;
  CHECK(fi_fetch_atomicvalid(a->ep, FI_UINT64, FI_SUM, &count) == 0 && count == 1,
        "fi_fetch_atomicvalid UINT64 SUM: count %zu", count);
  CHECK(fi_compare_atomicvalid(a->ep, FI_INT64, FI_CSWAP, &count) == 0 && count == 1,
        "fi_compare_atomicvalid INT64 CSWAP: count %zu", count);
  CHECK(fi_atomicvalid(a->ep, FI_UINT32, FI_SUM, &count) == -FI_EOPNOTSUPP, "32-bit SUM offered");
  CHECK(fi_fetch_atomicvalid(a->ep, FI_UINT64, FI_MIN, &count) == -FI_EOPNOTSUPP, "MIN offered");
  CHECK(fi_compare_atomicvalid(a->ep, FI_UINT64, FI_MSWAP, &count) == -FI_EOPNOTSUPP,
        "MSWAP offered");
  uint64_t* t = (uint64_t*)region;
  t[0] = 10;
  uint64_t five = 5, fetched = 0;
  CHECK(fi_fetch_atomic(a->ep, &five, 1, NULL, &fetched, NULL, to_b, 0, key, FI_UINT64, FI_SUM,
                        NULL) == 0, "fi_fetch_atomic SUM");
  if (atomic_done(a, b, FI_ATOMIC | FI_READ, "fi_fetch_atomic SUM")) {
    CHECK(t[0] == 15 && fetched == 10, "FETCH_ADD: target %lu fetched %lu",
          (unsigned long)t[0], (unsigned long)fetched);
  }
  CHECK(fi_atomic(a->ep, &five, 1, NULL, to_b, 0, key, FI_UINT64, FI_SUM, NULL) == 0,
        "fi_atomic SUM");
  if (atomic_done(a, b, FI_ATOMIC | FI_WRITE, "fi_atomic SUM")) {
    CHECK(t[0] == 20, "SUM without fetching: target %lu", (unsigned long)t[0]);
  }
  uint64_t swap = 99, compare = 20, result = 0;
  CHECK(fi_compare_atomic(a->ep, &swap, 1, NULL, &compare, NULL, &result, NULL, to_b, 0, key,
                          FI_UINT64, FI_CSWAP, NULL) == 0, "fi_compare_atomic");
  if (atomic_done(a, b, FI_ATOMIC | FI_READ, "fi_compare_atomic")) {
    CHECK(t[0] == 99 && result == 20, "CMP_SWAP: target %lu fetched %lu", (unsigned long)t[0],
          (unsigned long)result);
  }
  compare = 20;  // no longer what it holds: kept
  CHECK(fi_compare_atomic(a->ep, &swap, 1, NULL, &compare, NULL, &result, NULL, to_b, 0, key,
                          FI_UINT64, FI_CSWAP, NULL) == 0, "fi_compare_atomic again");
  if (atomic_done(a, b, FI_ATOMIC | FI_READ, "fi_compare_atomic again")) {
    CHECK(t[0] == 99 && result == 99, "CMP_SWAP that fails: target %lu fetched %lu",
          (unsigned long)t[0], (unsigned long)result);
  }
  CHECK(fi_atomic(a->ep, &five, 1, NULL, to_b, len, key, FI_UINT64, FI_SUM, NULL) == 0,
        "fi_atomic past the region");
  int ok = 1;
  struct fi_cq_err_entry err;
  CHECK(one_completion(a, b, &ok, &err, 5.0) == 1 && !ok && err.err == FI_EACCES &&
            (err.flags & FI_ATOMIC),
        "an atomic past the region: ok %d err %d", ok, err.err);
  printf("atomics (RoCEv2: FETCH_ADD, CMP_SWAP): checked at the target and in the fetched values\n");
}

// FI_ATOMIC into b's region (registered with `key`, `len` bytes), each family with its values
// checked at the target and in the fetched results, libfabric's semantics (FI_CSWAP_LE swaps
// when compare <= target), and what the provider does not offer refused.
static void check_atomics(struct node* a, struct node* b, fi_addr_t to_b, uint64_t key,
                          unsigned char* region, size_t len) {
  size_t count = 0;
  CHECK(fi_atomicvalid(a->ep, FI_UINT64, FI_SUM, &count) == 0 && count == 4,
        "fi_atomicvalid UINT64 SUM: count %zu", count);
  CHECK(fi_fetch_atomicvalid(a->ep, FI_DOUBLE, FI_ATOMIC_READ, &count) == 0 && count == 4,
        "fi_fetch_atomicvalid DOUBLE READ: count %zu", count);
  CHECK(fi_compare_atomicvalid(a->ep, FI_UINT64, FI_CSWAP, &count) == 0 && count == 1,
        "fi_compare_atomicvalid UINT64 CSWAP: count %zu", count);
  CHECK(fi_atomicvalid(a->ep, FI_FLOAT, FI_BOR, &count) == -FI_EOPNOTSUPP, "BOR on FLOAT offered");
  CHECK(fi_atomicvalid(a->ep, FI_UINT64, FI_CSWAP, &count) == -FI_EOPNOTSUPP,
        "CSWAP offered by fi_atomic");
  CHECK(fi_atomicvalid(a->ep, FI_UINT64, FI_ATOMIC_READ, &count) == -FI_EOPNOTSUPP,
        "READ offered by fi_atomic");
  CHECK(fi_compare_atomicvalid(a->ep, FI_UINT64, FI_SUM, &count) == -FI_EOPNOTSUPP,
        "SUM offered by fi_compare_atomic");
  struct fi_atomic_attr attr = {0};
  CHECK(fi_query_atomic(a->domain, FI_LONG_DOUBLE, FI_SUM, &attr, FI_FETCH_ATOMIC) == 0 &&
            attr.count == 2 && attr.size == 16,
        "fi_query_atomic LONG_DOUBLE SUM: count %zu size %zu", attr.count, attr.size);

  uint64_t* t = (uint64_t*)region;  // the target's words (b's memory, read directly)
  // fi_atomic SUM on four words; the write counter counts it.
  const uint64_t before = fi_cntr_read(a->wcntr);
  t[0] = 10, t[1] = 20, t[2] = 30, t[3] = UINT64_MAX;
  uint64_t add[4] = {1, 2, 3, 2};
  CHECK(fi_atomic(a->ep, add, 4, NULL, to_b, 0, key, FI_UINT64, FI_SUM, NULL) == 0, "fi_atomic");
  if (atomic_done(a, b, FI_ATOMIC | FI_WRITE, "fi_atomic SUM")) {
    CHECK(t[0] == 11 && t[1] == 22 && t[2] == 33 && t[3] == 1, "SUM: %lu %lu %lu %lu",
          (unsigned long)t[0], (unsigned long)t[1], (unsigned long)t[2], (unsigned long)t[3]);
    CHECK(fi_cntr_read(a->wcntr) == before + 1, "write counter after fi_atomic");
  }
  // fi_fetch_atomic MIN on eight signed 32-bit words: the old values come back.
  int32_t* w = (int32_t*)(region + 64);
  const int32_t old[8] = {5, -5, 0, 100, -100, 7, INT32_MIN, INT32_MAX};
  const int32_t op[8] = {3, -3, -1, 100, -200, 8, 0, INT32_MIN};
  int32_t fetched[8] = {0};
  memcpy(w, old, sizeof old);
  CHECK(fi_fetch_atomic(a->ep, op, 8, NULL, fetched, NULL, to_b, 64, key, FI_INT32, FI_MIN,
                        NULL) == 0, "fi_fetch_atomic");
  if (atomic_done(a, b, FI_ATOMIC | FI_READ, "fi_fetch_atomic MIN")) {
    for (int i = 0; i < 8; ++i) {
      const int32_t want = op[i] < old[i] ? op[i] : old[i];
      CHECK(w[i] == want && fetched[i] == old[i], "MIN[%d]: target %d (want %d) fetched %d", i,
            w[i], want, fetched[i]);
    }
  }
  // fi_compare_atomic: CSWAP that matches, one that does not, CSWAP_LE both ways, MSWAP.
  struct {
    enum fi_op op;
    uint64_t target, compare, swap, want;
  } cases[] = {
      {FI_CSWAP, 7, 7, 9, 9},
      {FI_CSWAP, 7, 8, 9, 7},
      {FI_CSWAP_LE, 5, 3, 1, 1},  // compare 3 <= target 5: swapped
      {FI_CSWAP_LE, 5, 7, 1, 5},  // compare 7 > target 5: kept
      {FI_MSWAP, 0xff00ff00u, 0x0ff00ff0u, 0x12345678u, (0x12345678u & 0x0ff00ff0u) |
                                                         (0xff00ff00u & ~0x0ff00ff0u)},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    t[16] = cases[i].target;
    uint64_t result = 0;
    CHECK(fi_compare_atomic(a->ep, &cases[i].swap, 1, NULL, &cases[i].compare, NULL, &result,
                            NULL, to_b, 128, key, FI_UINT64, cases[i].op, NULL) == 0,
          "fi_compare_atomic %zu", i);
    if (atomic_done(a, b, FI_ATOMIC | FI_READ, "fi_compare_atomic")) {
      CHECK(t[16] == cases[i].want && result == cases[i].target,
            "case %zu (op %d): target %#lx want %#lx, fetched %#lx", i, cases[i].op,
            (unsigned long)t[16], (unsigned long)cases[i].want, (unsigned long)result);
    }
  }
  // fi_inject_atomic WRITE of a double (no completion), read back by FI_ATOMIC_READ.
  const double pi = 3.25;
  double got = 0;
  CHECK(fi_inject_atomic(a->ep, &pi, 1, to_b, 256, key, FI_DOUBLE, FI_ATOMIC_WRITE) == 0,
        "fi_inject_atomic");
  CHECK(fi_fetch_atomic(a->ep, NULL, 1, NULL, &got, NULL, to_b, 256, key, FI_DOUBLE,
                        FI_ATOMIC_READ, NULL) == 0, "fi_fetch_atomic READ");
  if (atomic_done(a, b, FI_ATOMIC | FI_READ, "fi_fetch_atomic READ")) {
    CHECK(got == pi, "the injected WRITE read back as %g", got);
  }
  // Refused at the call: more elements than one call moves, a pair not offered.
  uint64_t five[5] = {0};
  CHECK(fi_atomic(a->ep, five, 5, NULL, to_b, 0, key, FI_UINT64, FI_SUM, NULL) == -FI_EINVAL,
        "five 64-bit elements taken");
  CHECK(fi_atomic(a->ep, five, 1, NULL, to_b, 0, key, FI_DOUBLE, FI_BXOR, NULL) ==
            -FI_EOPNOTSUPP, "BXOR on a double taken");
  // Refused by the target: past the region (its return code in prov_errno).
  CHECK(fi_atomic(a->ep, add, 1, NULL, to_b, len, key, FI_UINT64, FI_SUM, NULL) == 0,
        "fi_atomic past the region");
  int ok = 1;
  struct fi_cq_err_entry err;
  CHECK(one_completion(a, b, &ok, &err, 5.0) == 1 && !ok && err.err == FI_EACCES &&
            err.prov_errno != 0 && (err.flags & FI_ATOMIC),
        "an atomic past the region: ok %d err %d prov_errno %d", ok, err.err, err.prov_errno);
  printf("atomics: every family checked at the target and in the fetched values\n");
}

// FI_PROGRESS_AUTO: each domain's own thread moves it. After b posts its receive and
// registers its region, nothing calls into b until a is done: a's WRITE, READ and a rendezvous
// SEND (which b's side must READ from a) complete only because b's thread answers. Then b's
// receive is waited for with fi_cq_sread (the thread wakes it) and its bytes checked.
static void check_auto_progress(void) {
  struct fi_info* h = hints_for(FI_MSG | FI_RMA);
  h->domain_attr->data_progress = FI_PROGRESS_AUTO;
  struct fi_info* info = NULL;
  int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
  fi_freeinfo(h);
  CHECK(rc == 0 && info->domain_attr->data_progress == FI_PROGRESS_AUTO,
        "FI_PROGRESS_AUTO: fi_getinfo %d", rc);
  if (rc != 0) return;
  struct node a, b;
  open_node(info, &a);
  open_node(info, &b);
  fi_addr_t to_b = FI_ADDR_NOTAVAIL;
  CHECK(fi_av_insert(a.av, &b.name, 1, &to_b, 0, NULL) == 1, "AUTO: insert b");
  enum { kLen = 300000 };  // over the rendezvous threshold
  unsigned char* region = calloc(kLen, 1);
  unsigned char* inbox = calloc(kLen, 1);
  unsigned char* src = malloc(kLen);
  unsigned char* back = calloc(kLen, 1);
  for (int i = 0; i < kLen; ++i) src[i] = (unsigned char)(i * 13 + (i >> 11));
  struct fid_mr* mr = NULL;
  CHECK(fi_mr_reg(b.domain, region, kLen, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0,
        "AUTO: fi_mr_reg");
  int rctx = 0;
  CHECK(fi_recv(b.ep, inbox, kLen, NULL, FI_ADDR_UNSPEC, &rctx) == 0, "AUTO: fi_recv");
  int ok = 0;
  struct fi_cq_err_entry err;
  CHECK(fi_write(a.ep, src, kLen, NULL, to_b, 0, fi_mr_key(mr), NULL) == 0, "AUTO: fi_write");
  CHECK(one_completion(&a, NULL, &ok, &err, 5.0) == 1 && ok, "AUTO: no WRITE completion");
  CHECK(memcmp(region, src, kLen) == 0, "AUTO: WRITE bytes differ");
  CHECK(fi_cntr_wait(a.wcntr, 1, 5000) == 0, "AUTO: fi_cntr_wait of the WRITE");
  CHECK(fi_read(a.ep, back, kLen, NULL, to_b, 0, fi_mr_key(mr), NULL) == 0, "AUTO: fi_read");
  CHECK(one_completion(&a, NULL, &ok, &err, 5.0) == 1 && ok, "AUTO: no READ completion");
  CHECK(memcmp(back, src, kLen) == 0, "AUTO: READ bytes differ");
  CHECK(fi_send(a.ep, src, kLen, NULL, to_b, NULL) == 0, "AUTO: fi_send");
  CHECK(one_completion(&a, NULL, &ok, &err, 5.0) == 1 && ok, "AUTO: no SEND completion");
  struct fi_cq_tagged_entry e;
  const ssize_t n = fi_cq_sread(b.cq, &e, 1, NULL, 5000);
  CHECK(n == 1 && e.op_context == &rctx && e.len == kLen && memcmp(inbox, src, kLen) == 0,
        "AUTO: the receive: %zd, len %lu", n, n == 1 ? (unsigned long)e.len : 0ul);
  printf("FI_PROGRESS_AUTO: WRITE, READ and a %d-byte SEND with the target never called\n", kLen);
  CHECK(fi_close(&mr->fid) == 0, "AUTO: close mr");
  close_node(&a);
  close_node(&b);
  fi_freeinfo(info);
  free(region);
  free(inbox);
  free(src);
  free(back);
}

int main(void) {
  const char* transport = getenv("FI_UETREF_TRANSPORT");
  rocev2 = transport != NULL && strcmp(transport, "rocev2") == 0;
  printf("transport: %s\n", rocev2 ? "rocev2" : "uet");
  // Hints the provider does not serve are refused with -FI_ENODATA.
  struct fi_info* h = hints_for(FI_MSG);
  h->ep_attr->type = FI_EP_MSG;
  CHECK(getinfo_rc(h) == -FI_ENODATA, "FI_EP_MSG not refused");
  CHECK(getinfo_rc(hints_for(FI_COLLECTIVE)) == -FI_ENODATA, "FI_COLLECTIVE not refused");
  h = hints_for(FI_ATOMIC);
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR;  // no FI_MR_PROV_KEY
  CHECK(getinfo_rc(h) == -FI_ENODATA, "FI_ATOMIC without FI_MR_PROV_KEY not refused");
  h = hints_for(FI_RMA);
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR;  // no FI_MR_PROV_KEY
  CHECK(getinfo_rc(h) == -FI_ENODATA, "FI_RMA without FI_MR_PROV_KEY not refused");
  check_auto_progress();

  h = hints_for(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC);
  struct fi_info* info = NULL;
  int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
  CHECK(rc == 0 && info != NULL, "fi_getinfo: %d", rc);
  if (rc != 0) return 1;
  CHECK(info->domain_attr->mr_mode == FI_MR_PROV_KEY, "mr_mode %d", info->domain_attr->mr_mode);

  struct node a, b;
  open_node(info, &a);
  open_node(info, &b);
  CHECK(a.name.sin_addr.s_addr != b.name.sin_addr.s_addr, "two domains, one address");

  // Misuse: objects in use are not closed under the endpoint.
  CHECK(fi_close(&a.domain->fid) == -FI_EBUSY, "domain closed with an endpoint open");
  CHECK(fi_close(&a.cq->fid) == -FI_EBUSY, "CQ closed while bound");
  CHECK(fi_close(&a.av->fid) == -FI_EBUSY, "AV closed while bound");

  // The AV takes IPv4 names on port 4793 only.
  fi_addr_t to_b = FI_ADDR_NOTAVAIL, bad = 0;
  CHECK(fi_av_insert(a.av, &b.name, 1, &to_b, 0, NULL) == 1, "insert b");
  struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
  CHECK(fi_av_insert(a.av, &v6, 1, &bad, 0, NULL) == 0 && bad == FI_ADDR_NOTAVAIL,
        "an IPv6 name inserted");
  char small[8] = {0};
  CHECK(fi_send(a.ep, small, sizeof small, NULL, 12345, NULL) == -FI_EINVAL,
        "send to an fi_addr never inserted");
  char big[1024] = {0};
  CHECK(fi_inject(a.ep, big, sizeof big, to_b) == -FI_EMSGSIZE, "inject over inject_size");

  // RMA: a WRITE into b's region, then a READ of it back, every byte compared.
  enum { kLen = 200000 };
  unsigned char* region = calloc(kLen, 1);
  unsigned char* src = malloc(kLen);
  unsigned char* back = calloc(kLen, 1);
  for (int i = 0; i < kLen; ++i) src[i] = (unsigned char)(i * 7 + (i >> 9));
  struct fid_mr* mr = NULL;
  CHECK(fi_mr_reg(b.domain, region, kLen, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0,
        "fi_mr_reg");
  const uint64_t key = fi_mr_key(mr);
  int ok = 0;
  struct fi_cq_err_entry err;
  // At offset 1000, the last 1000 bytes fall past the region: the target refuses it whole.
  CHECK(fi_write(a.ep, src, kLen, NULL, to_b, 1000, key, NULL) == 0, "fi_write past the region");
  CHECK(one_completion(&a, &b, &ok, &err, 5.0) == 1, "no completion for a WRITE past the region");
  CHECK(!ok && err.err == FI_EACCES && err.prov_errno != 0,
        "a WRITE past the region: ok %d err %d prov_errno %d", ok, err.err, err.prov_errno);
  CHECK(fi_cntr_readerr(a.wcntr) == 1, "write error counter %lu",
        (unsigned long)fi_cntr_readerr(a.wcntr));
  char msg[128];
  fi_cq_strerror(a.cq, err.prov_errno, NULL, msg, sizeof msg);
  printf("a WRITE past the region: %s (%s)\n", fi_strerror(err.err), msg);

  CHECK(fi_write(a.ep, src, kLen, NULL, to_b, 0, key, NULL) == 0, "fi_write");
  CHECK(one_completion(&a, &b, &ok, &err, 5.0) == 1 && ok, "WRITE completion");
  CHECK(memcmp(region, src, kLen) == 0, "WRITE: bytes differ at the target");
  CHECK(fi_cntr_read(a.wcntr) == 1, "write counter %lu", (unsigned long)fi_cntr_read(a.wcntr));
  CHECK(fi_read(a.ep, back, kLen, NULL, to_b, 0, key, NULL) == 0, "fi_read");
  CHECK(one_completion(&a, &b, &ok, &err, 5.0) == 1 && ok, "READ completion");
  CHECK(memcmp(back, src, kLen) == 0, "READ: bytes differ");
  printf("WRITE and READ of %d bytes: every byte checked\n", kLen);
  if (rocev2) {
    check_rc_atomics(&a, &b, to_b, key, region, kLen);
  } else {
    check_atomics(&a, &b, to_b, key, region, kLen);
  }
  CHECK(fi_close(&mr->fid) == 0, "close mr");

  // fi_cancel: a receive no message claimed is withdrawn: FI_ECANCELED, its context, no bytes,
  // in the error queue. Canceling it again, or a context never posted, is -FI_ENOENT; a send
  // is not withdrawn. The message sent afterwards lands in the receive posted after it.
  {
    char r1[64], r2[64], text[16] = "after a cancel";
    int c1 = 0, c2 = 0, cs = 0;
    memset(r1, 0xEE, sizeof r1);
    memset(r2, 0xEE, sizeof r2);
    CHECK(fi_trecv(b.ep, r1, sizeof r1, NULL, FI_ADDR_UNSPEC, 5, 0, &c1) == 0, "fi_trecv 1");
    CHECK(fi_trecv(b.ep, r2, sizeof r2, NULL, FI_ADDR_UNSPEC, 5, 0, &c2) == 0, "fi_trecv 2");
    CHECK(fi_cancel(&b.ep->fid, &c1) == 0, "fi_cancel of a waiting receive");
    CHECK(fi_cancel(&b.ep->fid, &c1) == -FI_ENOENT, "fi_cancel of it again");
    CHECK(fi_cancel(&b.ep->fid, &failures) == -FI_ENOENT, "fi_cancel of a context never posted");
    CHECK(one_completion(&b, NULL, &ok, &err, 5.0) == 1 && !ok && err.err == FI_ECANCELED &&
              err.op_context == &c1 && (err.flags & FI_RECV) && err.len == 0,
          "canceled receive: ok %d err %d context %s len %lu", ok, err.err,
          err.op_context == &c1 ? "its own" : "another", (unsigned long)err.len);
    CHECK(r1[0] == (char)0xEE, "a canceled receive was written");
    CHECK(fi_tsend(a.ep, text, sizeof text, NULL, to_b, 5, &cs) == 0, "fi_tsend tag 5");
    CHECK(fi_cancel(&a.ep->fid, &cs) == -FI_ENOENT, "a send withdrawn");
    struct fi_cq_tagged_entry e;
    int got = 0;
    for (const double end = now_s() + 5.0; now_s() < end && got == 0;) {
      got = fi_cq_read(b.cq, &e, 1) == 1;
      fi_cq_read(a.cq, &e, 0);
    }
    CHECK(got && e.op_context == &c2 && e.len == sizeof text && memcmp(r2, text, sizeof text) == 0,
          "the message after a cancel: %s", got ? "in the wrong receive or bytes" : "none");
    for (const double end = now_s() + 5.0; now_s() < end;) {  // the send's own completion
      if (fi_cq_read(a.cq, &e, 1) == 1) break;
      fi_cq_read(b.cq, &e, 0);
    }
  }

  // FI_PEEK (MPI_Iprobe): with nothing sent, an FI_ENOMSG error entry with the context; once a
  // tagged message arrived, its length and tag, and it stays. FI_PEEK | FI_CLAIM sets it aside:
  // a plain receive of its tag waits on, the FI_CLAIM receive with the same fi_context gets it.
  {
    struct fi_context pctx, cctx;
    char pbuf[64], other[64], text[24] = "probed, then claimed";
    int oc = 0;
    struct fi_msg_tagged tm = {.addr = FI_ADDR_UNSPEC, .tag = 9, .context = &pctx};
    struct fi_cq_tagged_entry e;
    CHECK(fi_trecvmsg(b.ep, &tm, FI_PEEK) == 0, "FI_PEEK");
    CHECK(one_completion(&b, NULL, &ok, &err, 5.0) == 1 && !ok && err.err == FI_ENOMSG &&
              err.op_context == &pctx,
          "FI_PEEK with nothing sent: ok %d err %d", ok, err.err);
    CHECK(fi_tsend(a.ep, text, sizeof text, NULL, to_b, 9, NULL) == 0, "fi_tsend tag 9");
    int found = 0, sent = 0;
    for (const double end = now_s() + 5.0; now_s() < end && !found;) {
      sent += fi_cq_read(a.cq, &e, 1) == 1;  // a sends, and its completion goes
      CHECK(fi_trecvmsg(b.ep, &tm, FI_PEEK) == 0, "FI_PEEK again");
      ssize_t n;
      while ((n = fi_cq_read(b.cq, &e, 1)) == 0) {
      }
      if (n == 1) {
        found = e.op_context == &pctx && e.len == sizeof text && e.tag == 9 ? 1 : -1;
      } else {
        CHECK(n == -FI_EAVAIL && fi_cq_readerr(b.cq, &err, 0) == 1 && err.err == FI_ENOMSG,
              "FI_PEEK: rc %ld err %d", (long)n, err.err);
      }
    }
    for (const double end = now_s() + 5.0; now_s() < end && !sent;) {
      sent = fi_cq_read(a.cq, &e, 1) == 1;
    }
    CHECK(sent, "the tag-9 send did not complete");
    CHECK(found == 1, "FI_PEEK never reported the message (or wrongly: %d)", found);
    tm.context = &cctx;
    CHECK(fi_trecvmsg(b.ep, &tm, FI_PEEK | FI_CLAIM) == 0, "FI_PEEK | FI_CLAIM");
    CHECK(fi_cq_read(b.cq, &e, 1) == 1 && e.op_context == &cctx && e.len == sizeof text,
          "FI_PEEK | FI_CLAIM: no entry for the message");
    CHECK(fi_trecv(b.ep, other, sizeof other, NULL, FI_ADDR_UNSPEC, 9, 0, &oc) == 0,
          "a plain receive of tag 9");
    struct iovec iov = {.iov_base = pbuf, .iov_len = sizeof pbuf};
    tm.msg_iov = &iov;
    tm.iov_count = 1;
    CHECK(fi_trecvmsg(b.ep, &tm, FI_CLAIM) == 0, "the FI_CLAIM receive");
    int got = 0;
    for (const double end = now_s() + 5.0; now_s() < end && !got;) got = fi_cq_read(b.cq, &e, 1) == 1;
    CHECK(got && e.op_context == &cctx && e.len == sizeof text && memcmp(pbuf, text, sizeof text) == 0,
          "the claimed message: %s", got ? "wrong context, length or bytes" : "no completion");
    CHECK(fi_trecvmsg(b.ep, &tm, FI_CLAIM) == -FI_ENOENT, "an FI_CLAIM of a message received");
    CHECK(fi_cancel(&b.ep->fid, &oc) == 0, "the plain receive took the claimed message");
    CHECK(one_completion(&b, NULL, &ok, &err, 5.0) == 1 && !ok && err.err == FI_ECANCELED,
          "the plain receive's cancel");
  }

  // FI_DISCARD: with FI_PEEK, a message found is reported and dropped unread (a later receive
  // of its tag does not get it); with FI_CLAIM, a claimed one is dropped and the receive
  // completes with length 0. Alone it is refused.
  {
    struct fi_context pctx, cctx;
    char text[32] = "dropped unread", pbuf[64];
    struct fi_cq_tagged_entry e;
    struct fi_msg_tagged tm = {.addr = FI_ADDR_UNSPEC, .tag = 11, .context = &pctx};
    CHECK(fi_trecvmsg(b.ep, &tm, FI_DISCARD) == -FI_EINVAL, "FI_DISCARD alone taken");
    CHECK(fi_tsend(a.ep, text, sizeof text, NULL, to_b, 11, NULL) == 0, "fi_tsend tag 11");
    int found = 0;
    for (const double end = now_s() + 5.0; now_s() < end && !found;) {
      fi_cq_read(a.cq, &e, 0);
      CHECK(fi_trecvmsg(b.ep, &tm, FI_PEEK | FI_DISCARD) == 0, "FI_PEEK | FI_DISCARD");
      ssize_t n;
      while ((n = fi_cq_read(b.cq, &e, 1)) == 0) {
      }
      if (n == 1) {
        found = e.op_context == &pctx && e.len == sizeof text && e.tag == 11 ? 1 : -1;
      } else {
        fi_cq_readerr(b.cq, &err, 0);
      }
    }
    CHECK(found == 1, "FI_PEEK | FI_DISCARD never reported the message (or wrongly: %d)", found);
    int rc1 = 0;
    CHECK(fi_trecv(b.ep, pbuf, sizeof pbuf, NULL, FI_ADDR_UNSPEC, 11, 0, &rc1) == 0,
          "a receive of tag 11 after the discard");
    CHECK(one_completion(&b, &a, &ok, &err, 0.2) == 0, "the discarded message was received");
    CHECK(fi_cancel(&b.ep->fid, &rc1) == 0, "the receive after the discard was not waiting");
    CHECK(one_completion(&b, NULL, &ok, &err, 5.0) == 1 && !ok && err.err == FI_ECANCELED,
          "its cancel");
    // FI_PEEK | FI_CLAIM, then FI_CLAIM | FI_DISCARD.
    CHECK(fi_tsend(a.ep, text, sizeof text, NULL, to_b, 12, NULL) == 0, "fi_tsend tag 12");
    tm.tag = 12;
    tm.context = &cctx;
    found = 0;
    for (const double end = now_s() + 5.0; now_s() < end && !found;) {
      fi_cq_read(a.cq, &e, 0);
      CHECK(fi_trecvmsg(b.ep, &tm, FI_PEEK | FI_CLAIM) == 0, "FI_PEEK | FI_CLAIM");
      ssize_t n;
      while ((n = fi_cq_read(b.cq, &e, 1)) == 0) {
      }
      if (n == 1) {
        found = e.op_context == &cctx && e.len == sizeof text ? 1 : -1;
      } else {
        fi_cq_readerr(b.cq, &err, 0);
      }
    }
    CHECK(found == 1, "FI_PEEK | FI_CLAIM of tag 12: %d", found);
    CHECK(fi_trecvmsg(b.ep, &tm, FI_CLAIM | FI_DISCARD) == 0, "FI_CLAIM | FI_DISCARD");
    int got = 0;
    for (const double end = now_s() + 5.0; now_s() < end && !got;) got = fi_cq_read(b.cq, &e, 1) == 1;
    CHECK(got && e.op_context == &cctx && e.len == 0, "FI_CLAIM | FI_DISCARD: %s",
          got ? "wrong context or a length" : "no completion");
    int sends = 0;  // both sends complete: a discarded message is not a failed one
    for (const double end = now_s() + 5.0; now_s() < end && sends < 2;) {
      sends += fi_cq_read(a.cq, &e, 1) == 1;
      fi_cq_read(b.cq, &e, 0);
    }
    CHECK(sends == 2, "%d of the 2 discarded messages' sends completed", sends);
  }

  // A 1 MiB tagged message goes by rendezvous (under UET as FI_UETREF_RENDEZVOUS says: the
  // sender WRITEs on the receiver's CTS, or the receiver READs): its receive posted before the
  // send, then posted only once FI_PEEK reports the request arrived (unexpected). Every byte
  // checked; both ends complete.
  {
    const size_t len = 1 << 20;
    uint8_t* out = malloc(len);
    uint8_t* in = malloc(len);
    for (size_t i = 0; i < len; ++i) out[i] = (uint8_t)(i * 131 + (i >> 12));
    for (int unexpected = 0; unexpected <= 1; ++unexpected) {
      const char* order = unexpected ? "receive after the request" : "receive first";
      struct fi_context rctx, pctx;
      struct fi_cq_tagged_entry e;
      const uint64_t tag = 40 + (uint64_t)unexpected;
      memset(in, 0xEE, len);
      if (!unexpected) {
        CHECK(fi_trecv(b.ep, in, len, NULL, FI_ADDR_UNSPEC, tag, 0, &rctx) == 0, "fi_trecv");
      }
      CHECK(fi_tsend(a.ep, out, len, NULL, to_b, tag, NULL) == 0, "fi_tsend 1 MiB");
      if (unexpected) {
        struct fi_msg_tagged tm = {.addr = FI_ADDR_UNSPEC, .tag = tag, .context = &pctx};
        int found = 0;
        for (const double end = now_s() + 5.0; now_s() < end && !found;) {
          fi_cq_read(a.cq, &e, 0);  // a moves
          CHECK(fi_trecvmsg(b.ep, &tm, FI_PEEK) == 0, "FI_PEEK of the 1 MiB message");
          ssize_t n;
          while ((n = fi_cq_read(b.cq, &e, 1)) == 0) {
          }
          if (n == 1) {
            found = e.op_context == &pctx && e.len == len && e.tag == tag ? 1 : -1;
          } else {
            CHECK(n == -FI_EAVAIL && fi_cq_readerr(b.cq, &err, 0) == 1 && err.err == FI_ENOMSG,
                  "FI_PEEK of the 1 MiB message: rc %ld err %d", (long)n, err.err);
          }
        }
        CHECK(found == 1, "FI_PEEK never reported the 1 MiB request (or wrongly: %d)", found);
        CHECK(fi_trecv(b.ep, in, len, NULL, FI_ADDR_UNSPEC, tag, 0, &rctx) == 0, "fi_trecv");
      }
      int sent = 0, got = 0;
      for (const double end = now_s() + 10.0; now_s() < end && !(sent && got);) {
        ssize_t n = fi_cq_read(a.cq, &e, 1);
        CHECK(n == 1 || n == -FI_EAGAIN, "1 MiB send, %s: fi_cq_read %ld", order, (long)n);
        sent += n == 1;
        n = fi_cq_read(b.cq, &e, 1);
        CHECK(n == 1 || n == -FI_EAGAIN, "1 MiB receive, %s: fi_cq_read %ld", order, (long)n);
        if (n == 1) {
          CHECK(e.op_context == &rctx && e.len == len && e.tag == tag,
                "1 MiB receive, %s: context %p len %zu tag %lu", order, e.op_context, e.len,
                (unsigned long)e.tag);
          got = 1;
        }
      }
      CHECK(sent == 1 && got == 1, "1 MiB, %s: sent %d received %d", order, sent, got);
      CHECK(memcmp(in, out, len) == 0, "1 MiB, %s: the bytes differ", order);
      printf("1 MiB by rendezvous, %s: every byte\n", order);
    }
    free(out);
    free(in);
  }

  // auth_key is the UET JobID: an endpoint of job 42 refuses job 0's message (BAD_JOB_ID), and
  // a key longer than the JobID's 24 bits is refused by fi_domain (RoCEv2: any key).
  struct fi_info* job42 = fi_dupinfo(info);
  job42->domain_attr->auth_key = malloc(1);
  job42->domain_attr->auth_key[0] = 42;
  job42->domain_attr->auth_key_size = 1;
  if (rocev2) {  // RoCEv2 has no JobID: a domain asked for one is refused
    struct fid_fabric* f1 = NULL;
    struct fid_domain* d1 = NULL;
    CHECK(fi_fabric(job42->fabric_attr, &f1, NULL) == 0, "fi_fabric");
    CHECK(fi_domain(f1, job42, &d1, NULL) == -FI_EINVAL, "an auth_key taken by RoCEv2");
    fi_close(&f1->fid);
  } else {
    struct node c;
    open_node(job42, &c);
    fi_addr_t to_c = FI_ADDR_NOTAVAIL;
    CHECK(fi_av_insert(a.av, &c.name, 1, &to_c, 0, NULL) == 1, "insert c");
    CHECK(fi_tsend(a.ep, small, sizeof small, NULL, to_c, 7, NULL) == 0, "fi_tsend to job 42");
    CHECK(one_completion(&a, &c, &ok, &err, 5.0) == 1, "no completion for a send to job 42");
    fi_cq_strerror(a.cq, err.prov_errno, NULL, msg, sizeof msg);
    CHECK(!ok && err.err == FI_EACCES && strstr(msg, "BAD_JOB_ID") != NULL,
          "job 0 to job 42: ok %d err %d (%s)", ok, err.err, msg);
    printf("job 0 to job 42: %s (%s)\n", fi_strerror(err.err), msg);
    close_node(&c);
    struct fi_info* long_key = fi_dupinfo(info);
    long_key->domain_attr->auth_key = calloc(4, 1);
    long_key->domain_attr->auth_key_size = 4;
    struct fid_fabric* f2 = NULL;
    struct fid_domain* d2 = NULL;
    CHECK(fi_fabric(long_key->fabric_attr, &f2, NULL) == 0, "fi_fabric");
    CHECK(fi_domain(f2, long_key, &d2, NULL) == -FI_EINVAL, "a 4-byte auth_key accepted");
    fi_close(&f2->fid);
    fi_freeinfo(long_key);
  }
  fi_freeinfo(job42);

  // A tagged send to an address no one listens on fails within the retry budget (seconds),
  // with an error completion, not a hang.
  struct sockaddr_in nobody = b.name;
  nobody.sin_addr.s_addr = htonl(ntohl(b.name.sin_addr.s_addr) ^ 0x00004000);
  fi_addr_t to_nobody = FI_ADDR_NOTAVAIL;
  CHECK(fi_av_insert(a.av, &nobody, 1, &to_nobody, 0, NULL) == 1, "insert nobody");
  const double t0 = now_s();
  CHECK(fi_tsend(a.ep, small, sizeof small, NULL, to_nobody, 7, NULL) == 0, "fi_tsend");
  CHECK(one_completion(&a, NULL, &ok, &err, 30.0) == 1, "no completion for a send to no one");
  CHECK(!ok && err.err == FI_ETIMEDOUT, "send to no one: ok %d err %d", ok, err.err);
  printf("a send to no one: %s after %.1f s\n", fi_strerror(err.err), now_s() - t0);

  // A peer that dies holding our send: a 1 MiB tagged send goes by rendezvous, the target
  // takes the request (unexpected: no receive posted) and is closed before it reads, as a
  // killed process would be. The send fails within the retry budget (the provider asks the
  // silent target whether it lives: REQ_ACK; over RoCEv2 a PING), not after the rendezvous
  // timeout (1000 s).
  struct node d;
  open_node(info, &d);
  fi_addr_t to_d = FI_ADDR_NOTAVAIL;
  CHECK(fi_av_insert(a.av, &d.name, 1, &to_d, 0, NULL) == 1, "insert d");
  const size_t big_len = 1 << 20;
  uint8_t* held = calloc(big_len, 1);
  CHECK(fi_tsend(a.ep, held, big_len, NULL, to_d, 9, NULL) == 0, "fi_tsend 1 MiB to d");
  CHECK(one_completion(&a, &d, &ok, &err, 0.05) == 0, "the send completed before d read it");
  close_node(&d);
  const double t1 = now_s();
  CHECK(one_completion(&a, NULL, &ok, &err, 30.0) == 1, "no completion for a send to a dead peer");
  fi_cq_strerror(a.cq, err.prov_errno, NULL, msg, sizeof msg);
  CHECK(!ok && err.err == FI_ETIMEDOUT &&
            strstr(msg, rocev2 ? "retries exhausted" : "no answer") != NULL,
        "send to a dead peer: ok %d err %d (%s)", ok, err.err, msg);
  printf("a send held by a peer that died: %s (%s) after %.1f s\n", fi_strerror(err.err), msg,
         now_s() - t1);
  free(held);

  close_node(&a);
  close_node(&b);
  fi_freeinfo(info);
  fi_freeinfo(h);
  free(region);
  free(src);
  free(back);
  printf("%s\n", failures == 0 ? "all checks hold" : "FAILED");
  return failures == 0 ? 0 : 1;
}
