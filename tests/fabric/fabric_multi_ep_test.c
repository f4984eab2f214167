// Several endpoints in one domain, through libfabric's public API (two domains of one process,
// io_uring loopback). Under UET each endpoint of a domain is a process on the domain's FEP,
// a PIDonFEP of its own behind the domain's one address (spec/uet.md §4.1), and fi_getname
// says which: two endpoints of domain A exchange tagged messages (eager and rendezvous) and
// untagged ones with two endpoints of domain B, each landing at the endpoint it was sent to,
// every byte checked; an RMA WRITE and READ through either endpoint reach B's memory and
// complete at the endpoint that posted them. Then B's second endpoint closes while the first
// keeps working, and a send to it, like one to a PIDonFEP that never had an endpoint, fails at
// the sender while B drops its frames and counts them (FI_UETREF_STATS' "no-endpoint"); the
// first closes too, a send to it is refused (the PID's resource index is disabled) while B's
// memory still answers RMA, and an endpoint opened in its place has a name of another
// generation: the old name is refused, the new one works. Over RoCEv2 a domain keeps one
// endpoint: the second fi_endpoint is refused. Exits 0 when every check holds.
#define _POSIX_C_SOURCE 200809L
#include <netinet/in.h>
#include <rdma/fabric.h>
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
#include <unistd.h>

#include "check.h"

static int failures;

struct dom {
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* idle;  // bound to nothing: reading it (always empty) drives the domain
};

struct ep {
  struct fid_ep* ep;
  struct fid_cq* cq;
  struct sockaddr_in name;
};

enum { kMaxDoms = 2 };
static struct dom* g_doms[kMaxDoms];  // driven while a test waits (a domain moves when called)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void open_dom(struct fi_info* info, struct dom* d) {
  memset(d, 0, sizeof *d);
  CHECK(fi_fabric(info->fabric_attr, &d->fabric, NULL) == 0, "fi_fabric");
  CHECK(fi_domain(d->fabric, info, &d->domain, NULL) == 0, "fi_domain");
  struct fi_av_attr av = {.type = FI_AV_TABLE};
  CHECK(fi_av_open(d->domain, &av, &d->av, NULL) == 0, "fi_av_open");
  struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .size = 4};
  CHECK(fi_cq_open(d->domain, &cq, &d->idle, NULL) == 0, "fi_cq_open");
  for (int i = 0; i < kMaxDoms; ++i) {
    if (g_doms[i] == NULL) {
      g_doms[i] = d;
      break;
    }
  }
}

// Opens an endpoint of `d` with a CQ of its own, of `cq_size` entries; returns fi_endpoint's
// result.
static int open_ep_sized(struct fi_info* info, struct dom* d, struct ep* e, size_t cq_size) {
  memset(e, 0, sizeof *e);
  const int rc = fi_endpoint(d->domain, info, &e->ep, NULL);
  if (rc != 0) return rc;
  struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .size = cq_size};
  CHECK(fi_cq_open(d->domain, &cq, &e->cq, NULL) == 0, "fi_cq_open");
  CHECK(fi_ep_bind(e->ep, &d->av->fid, 0) == 0, "bind av");
  CHECK(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV) == 0, "bind cq");
  CHECK(fi_enable(e->ep) == 0, "fi_enable");
  size_t len = sizeof e->name;
  CHECK(fi_getname(&e->ep->fid, &e->name, &len) == 0, "fi_getname");
  return 0;
}

static int open_ep(struct fi_info* info, struct dom* d, struct ep* e) {
  return open_ep_sized(info, d, e, 64);
}

static void close_ep(struct ep* e) {
  CHECK(fi_close(&e->ep->fid) == 0, "close ep");
  CHECK(fi_close(&e->cq->fid) == 0, "close cq");
}

static void close_dom(struct dom* d) {
  for (int i = 0; i < kMaxDoms; ++i) {
    if (g_doms[i] == d) g_doms[i] = NULL;
  }
  CHECK(fi_close(&d->idle->fid) == 0, "close idle cq");
  CHECK(fi_close(&d->av->fid) == 0, "close av");
  CHECK(fi_close(&d->domain->fid) == 0, "close domain");
  CHECK(fi_close(&d->fabric->fid) == 0, "close fabric");
}

// One completion of `e` (every domain driven meanwhile): 1 with *ok and the entry (or the
// error entry), 0 after `timeout_s`.
static int next(struct ep* e, int* ok, struct fi_cq_tagged_entry* out, struct fi_cq_err_entry* err,
                double timeout_s) {
  const double end = now_s() + timeout_s;
  struct fi_cq_tagged_entry tmp;
  while (now_s() < end) {
    const ssize_t rc = fi_cq_read(e->cq, out, 1);
    if (rc == 1) {
      *ok = 1;
      return 1;
    }
    if (rc == -FI_EAVAIL) {
      memset(err, 0, sizeof *err);
      CHECK(fi_cq_readerr(e->cq, err, 0) == 1, "fi_cq_readerr");
      *ok = 0;
      return 1;
    }
    for (int i = 0; i < kMaxDoms; ++i) {
      if (g_doms[i] != NULL) fi_cq_read(g_doms[i]->idle, &tmp, 0);
    }
  }
  return 0;
}

// `n` successful completions of `e`, their contexts in `ctx` (in completion order).
static int expect_ok(struct ep* e, int n, void** ctx, const char* what) {
  int ok = 0;
  struct fi_cq_tagged_entry c;
  struct fi_cq_err_entry err;
  for (int k = 0; k < n; ++k) {
    if (next(e, &ok, &c, &err, 10.0) != 1 || !ok) {
      CHECK(0, "%s: completion %d of %d: %s", what, k + 1, n,
            ok ? "none in 10 s" : fi_strerror(err.err));
      return 0;
    }
    if (ctx != NULL) ctx[k] = c.op_context;
  }
  return 1;
}

// The error `e` reports next (0 when none came in `timeout_s`, -1 for a success).
static int expect_error(struct ep* e, double timeout_s) {
  int ok = 0;
  struct fi_cq_tagged_entry c;
  struct fi_cq_err_entry err;
  if (next(e, &ok, &c, &err, timeout_s) != 1) return 0;
  return ok ? -1 : err.err;
}

static unsigned char pattern(int i, int j, size_t k) {
  return (unsigned char)(k * 7 + 31 * (size_t)i + 17 * (size_t)j + 1);
}

static int holds(const unsigned char* p, size_t n, int i, int j) {
  for (size_t k = 0; k < n; ++k) {
    if (p[k] != pattern(i, j, k)) return 0;
  }
  return 1;
}

// Tagged messages from a[i] to b[j] for every pair, tag 0x100 i + j, lengths from eager to
// rendezvous: each lands in the receive b[j] posted for it, every byte as a[i] sent it.
static void tagged_all_pairs(struct ep* a, struct ep* b, const fi_addr_t to_b[2],
                             const fi_addr_t from_a[2]) {
  static const size_t kLens[2][2] = {{1000, 200000}, {300000, 4096}};
  unsigned char* src[2][2];
  unsigned char* dst[2][2];
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      src[i][j] = malloc(kLens[i][j]);
      dst[i][j] = calloc(kLens[i][j], 1);
      for (size_t k = 0; k < kLens[i][j]; ++k) src[i][j][k] = pattern(i, j, k);
      CHECK(fi_trecv(b[j].ep, dst[i][j], kLens[i][j], NULL, from_a[i], 0x100u * i + j, 0,
                     dst[i][j]) == 0, "fi_trecv b%d from a%d", j, i);
    }
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      CHECK(fi_tsend(a[i].ep, src[i][j], kLens[i][j], NULL, to_b[j], 0x100u * i + j,
                     src[i][j]) == 0, "fi_tsend a%d to b%d", i, j);
    }
  }
  for (int i = 0; i < 2; ++i) expect_ok(&a[i], 2, NULL, "tagged sends");
  for (int j = 0; j < 2; ++j) {
    void* got[2] = {NULL, NULL};
    if (!expect_ok(&b[j], 2, got, "tagged receives")) continue;
    for (int k = 0; k < 2; ++k) {
      const int i = got[k] == dst[0][j] ? 0 : got[k] == dst[1][j] ? 1 : -1;
      CHECK(i >= 0, "b%d completed a receive it did not post", j);
      if (i >= 0) CHECK(holds(dst[i][j], kLens[i][j], i, j), "a%d -> b%d: bytes differ", i, j);
    }
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      free(src[i][j]);
      free(dst[i][j]);
    }
  }
}

// Untagged, crosswise: a0 -> b1 and a1 -> b0, one receive posted at each of b0 and b1 (their
// receive queues are their own: a message for b1 cannot take b0's buffer).
static void untagged_cross(struct ep* a, struct ep* b, const fi_addr_t to_b[2]) {
  enum { kLen = 5000 };
  unsigned char src[2][kLen], dst[2][kLen];
  memset(dst, 0, sizeof dst);
  for (int j = 0; j < 2; ++j) {
    CHECK(fi_recv(b[j].ep, dst[j], kLen, NULL, FI_ADDR_UNSPEC, NULL) == 0, "fi_recv b%d", j);
  }
  for (int i = 0; i < 2; ++i) {
    for (size_t k = 0; k < kLen; ++k) src[i][k] = pattern(i, 1 - i, k);
    CHECK(fi_send(a[i].ep, src[i], kLen, NULL, to_b[1 - i], NULL) == 0, "fi_send a%d", i);
  }
  for (int i = 0; i < 2; ++i) expect_ok(&a[i], 1, NULL, "untagged sends");
  for (int j = 0; j < 2; ++j) {
    if (expect_ok(&b[j], 1, NULL, "untagged receives"))
      CHECK(holds(dst[j], kLen, 1 - j, j), "untagged a%d -> b%d: bytes differ", 1 - j, j);
  }
}

// One tagged message of `len` bytes from `from` to `at` (at `to` in from's AV), every byte
// checked.
static void one_tagged(struct ep* from, fi_addr_t to, struct ep* at, size_t len) {
  unsigned char* src = malloc(len);
  unsigned char* dst = calloc(len, 1);
  for (size_t k = 0; k < len; ++k) src[k] = pattern(2, 3, k);
  CHECK(fi_trecv(at->ep, dst, len, NULL, FI_ADDR_UNSPEC, 7, 0, NULL) == 0, "fi_trecv");
  CHECK(fi_tsend(from->ep, src, len, NULL, to, 7, NULL) == 0, "fi_tsend");
  expect_ok(from, 1, NULL, "one tagged send");
  if (expect_ok(at, 1, NULL, "one tagged receive"))
    CHECK(holds(dst, len, 2, 3), "one tagged message of %zu bytes: bytes differ", len);
  free(src);
  free(dst);
}

// Whether `cq` holds nothing to read now.
static int empty(struct fid_cq* cq) {
  struct fi_cq_tagged_entry c;
  return fi_cq_read(cq, &c, 0) == -FI_EAGAIN;
}

// B's FI_UETREF_STATS line, printed when its domain closes, read back from stderr: its
// "no-endpoint" count (-1 when the line is missing).
static long close_and_count_drops(struct dom* d) {
  char path[] = "/tmp/fabric_multi_ep_XXXXXX";
  const int fd = mkstemp(path);
  fflush(stderr);
  const int saved = dup(2);
  dup2(fd, 2);
  close_dom(d);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char buf[8192] = "";
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  unlink(path);
  if (n > 0) buf[n] = '\0';
  const char* at = strstr(buf, "no-endpoint ");
  fprintf(stderr, "%s", buf);
  return at != NULL ? strtol(at + strlen("no-endpoint "), NULL, 10) : -1;
}

// b0 (PID 0) closes: a send to it is refused, B's memory still answers; the endpoint opened
// in its place (*b0) has a new name, and the old one is refused.
static void pid0_closed(struct fi_info* info, struct dom* A, struct dom* B, struct ep* a0,
                        struct ep* old_b0, fi_addr_t to_old, struct fid_mr* mr,
                        unsigned char* back, size_t len, struct ep* b0) {
  unsigned char msg[64] = {0};
  int e;
  close_ep(old_b0);
  CHECK(fi_tsend(a0->ep, msg, sizeof msg, NULL, to_old, 1, NULL) == 0, "tsend to closed b0");
  e = expect_error(a0, 10.0);
  CHECK(e == FI_EACCES, "a send to a closed PID 0: %d (%s)", e, e > 0 ? fi_strerror(e) : "");
  memset(back, 0, len);
  CHECK(fi_read(a0->ep, back, len, NULL, to_old, 0, fi_mr_key(mr), NULL) == 0, "fi_read 2");
  expect_ok(a0, 1, NULL, "READ with no endpoint at B");
  CHECK(holds(back, len, 1, 1), "READ with no endpoint at B: bytes differ");
  CHECK(open_ep(info, B, b0) == 0, "b0 again");
  CHECK(memcmp(&b0->name, &old_b0->name, sizeof b0->name) != 0, "b0 again has the old name");
  CHECK(fi_tsend(a0->ep, msg, sizeof msg, NULL, to_old, 1, NULL) == 0, "tsend, old name");
  e = expect_error(a0, 10.0);
  CHECK(e == FI_EACCES, "a send to the old name: %d (%s)", e, e > 0 ? fi_strerror(e) : "");
  fi_addr_t to_b0;
  CHECK(fi_av_insert(A->av, &b0->name, 1, &to_b0, 0, NULL) == 1, "insert b0 again");
  one_tagged(a0, to_b0, b0, 5000);
}

// Endpoints past the first, each with as many receives posted as it takes (its engine's
// tagged receives), close one after another, the receives still waiting: their operation
// slots must return to the domain, or a later round could not post as many (the rounds post
// twice the domain's slots in all).
static void closed_endpoints_return_their_slots(struct fi_info* info) {
  struct dom D;
  struct ep first, e;
  open_dom(info, &D);
  CHECK(open_ep(info, &D, &first) == 0, "the domain's first endpoint");
  const size_t slots = info->tx_attr->size + info->rx_attr->size;
  static unsigned char sink[8];
  size_t per_round = 0, total = 0;
  for (int round = 0; total <= 2 * slots && round < 60; ++round) {
    CHECK(open_ep_sized(info, &D, &e, info->rx_attr->size) == 0, "endpoint of round %d", round);
    size_t posted = 0;
    while (posted < info->rx_attr->size &&
           fi_trecv(e.ep, sink, sizeof sink, NULL, FI_ADDR_UNSPEC, 0x5eed, 0, NULL) == 0) {
      ++posted;
    }
    if (round == 0) per_round = posted;
    CHECK(posted > 0 && posted == per_round, "round %d posted %zu receives, round 0 %zu", round,
          posted, per_round);
    total += posted;
    close_ep(&e);
    if (posted == 0) break;
  }
  CHECK(total > 2 * slots, "%zu receives posted in all, against %zu slots", total, slots);
  close_ep(&first);
  close_dom(&D);
}

static void uet(struct fi_info* info) {
  struct dom A, B;
  struct ep a[2], b[2];
  open_dom(info, &A);
  open_dom(info, &B);
  for (int i = 0; i < 2; ++i) {
    CHECK(open_ep(info, &A, &a[i]) == 0, "a%d", i);
    CHECK(open_ep(info, &B, &b[i]) == 0, "b%d", i);
  }
  // One address, two names: the PIDonFEP tells them apart.
  CHECK(a[0].name.sin_addr.s_addr == a[1].name.sin_addr.s_addr &&
        a[0].name.sin_port == a[1].name.sin_port, "a0 and a1 on different addresses");
  CHECK(memcmp(&a[0].name, &a[1].name, sizeof a[0].name) != 0, "a0 and a1 share a name");
  fi_addr_t to_b[2], from_a[2];
  for (int i = 0; i < 2; ++i) {
    CHECK(fi_av_insert(A.av, &b[i].name, 1, &to_b[i], 0, NULL) == 1, "insert b%d", i);
    CHECK(fi_av_insert(B.av, &a[i].name, 1, &from_a[i], 0, NULL) == 1, "insert a%d", i);
  }
  tagged_all_pairs(a, b, to_b, from_a);
  untagged_cross(a, b, to_b);

  // RMA: B's memory through either of its endpoints' addresses; each WRITE or READ completes
  // at the endpoint of A that posted it, and only there.
  enum { kLen = 70000 };
  unsigned char* region = calloc(kLen, 1);
  unsigned char* src = malloc(kLen);
  unsigned char* back = calloc(kLen, 1);
  for (size_t k = 0; k < kLen; ++k) src[k] = pattern(1, 1, k);
  struct fid_mr* mr = NULL;
  CHECK(fi_mr_reg(B.domain, region, kLen, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr,
                  NULL) == 0, "fi_mr_reg");
  CHECK(fi_write(a[1].ep, src, kLen, NULL, to_b[1], 0, fi_mr_key(mr), NULL) == 0, "fi_write");
  expect_ok(&a[1], 1, NULL, "WRITE by a1 to b1");
  CHECK(empty(a[0].cq), "a1's WRITE completed at a0");
  CHECK(holds(region, kLen, 1, 1), "WRITE: B's memory differs");
  CHECK(fi_read(a[0].ep, back, kLen, NULL, to_b[0], 0, fi_mr_key(mr), NULL) == 0, "fi_read");
  expect_ok(&a[0], 1, NULL, "READ by a0 from b0");
  CHECK(empty(a[1].cq), "a0's READ completed at a1");
  CHECK(holds(back, kLen, 1, 1), "READ: bytes differ");

  // b1 closes; b0 goes on. A send to b1, and one to a PIDonFEP of B no endpoint ever had,
  // fail at the sender: B drops their frames, and counts them.
  close_ep(&b[1]);
  for (int i = 0; i < 2; ++i) one_tagged(&a[i], to_b[0], &b[0], 1000u * (size_t)(i + 1) + 70000);
  struct sockaddr_in nobody = b[0].name;
  nobody.sin_zero[0] = 0;
  nobody.sin_zero[1] = 9;
  fi_addr_t to_nobody;
  CHECK(fi_av_insert(A.av, &nobody, 1, &to_nobody, 0, NULL) == 1, "insert PID 9");
  static unsigned char msg[64];
  CHECK(fi_tsend(a[1].ep, msg, sizeof msg, NULL, to_b[1], 1, NULL) == 0, "tsend to closed b1");
  CHECK(fi_tsend(a[0].ep, msg, sizeof msg, NULL, to_nobody, 1, NULL) == 0, "tsend to PID 9");
  int e = expect_error(&a[1], 10.0);
  CHECK(e == FI_ETIMEDOUT, "a send to a closed endpoint: %d (%s)", e, e > 0 ? fi_strerror(e) : "");
  e = expect_error(&a[0], 10.0);
  CHECK(e == FI_ETIMEDOUT, "a send to PID 9: %d (%s)", e, e > 0 ? fi_strerror(e) : "");

  struct ep b0;
  pid0_closed(info, &A, &B, &a[0], &b[0], to_b[0], mr, back, kLen, &b0);
  CHECK(fi_close(&mr->fid) == 0, "close mr");
  close_ep(&b0);
  for (int i = 0; i < 2; ++i) close_ep(&a[i]);
  close_dom(&A);
  const long drops = close_and_count_drops(&B);
  CHECK(drops >= 2, "B's no-endpoint drops: %ld (a frame to b1 and one to PID 9 at least)", drops);
  printf("B dropped %ld frames for no endpoint\n", drops);
  free(region);
  free(src);
  free(back);
}

static void rocev2(struct fi_info* info) {
  struct dom A;
  struct ep a0, a1;
  open_dom(info, &A);
  CHECK(open_ep(info, &A, &a0) == 0, "a0");
  CHECK(open_ep(info, &A, &a1) == -FI_ENOSPC, "a second RoCEv2 endpoint was not refused");
  CHECK(info->domain_attr->ep_cnt == 1, "RoCEv2 ep_cnt %zu", info->domain_attr->ep_cnt);
  close_ep(&a0);
  close_dom(&A);
}

int main(void) {
  const char* transport = getenv("FI_UETREF_TRANSPORT");
  const int roce = transport != NULL && strcmp(transport, "rocev2") == 0;
  printf("transport: %s\n", roce ? "rocev2" : "uet");
  struct fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup("uetref");
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_MSG | FI_TAGGED | FI_RMA;
  h->domain_attr->mr_mode = FI_MR_PROV_KEY;
  struct fi_info* info = NULL;
  const int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
  CHECK(rc == 0 && info != NULL, "fi_getinfo: %d", rc);
  if (rc != 0) return 1;
  if (roce) {
    rocev2(info);
  } else {
    CHECK(info->domain_attr->ep_cnt > 1, "UET ep_cnt %zu", info->domain_attr->ep_cnt);
    uet(info);
    closed_endpoints_return_their_slots(info);
  }
  fi_freeinfo(info);
  fi_freeinfo(h);
  printf("%s\n", failures == 0 ? "all checks hold" : "FAILED");
  return failures == 0 ? 0 : 1;
}
