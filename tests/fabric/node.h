// Two endpoints of one process, each in its own fabric and domain, as the fabric tests written
// in C open them: an AV table, a tagged-format CQ for both directions and a counter of
// completed WRITEs. Include after check.h and after the test's `static int failures`.
#pragma once

#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <string.h>
#include <time.h>

#include "check.h"

struct node {
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_cntr* wcntr;
  struct fid_ep* ep;
  struct sockaddr_in name;
};

static inline void open_node(struct fi_info* info, struct node* n) {
  memset(n, 0, sizeof *n);
  int rc = fi_fabric(info->fabric_attr, &n->fabric, NULL);
  CHECK(rc == 0, "fi_fabric: %d", rc);
  rc = fi_domain(n->fabric, info, &n->domain, NULL);
  CHECK(rc == 0, "fi_domain: %d", rc);
  struct fi_av_attr av = {.type = FI_AV_TABLE};
  CHECK(fi_av_open(n->domain, &av, &n->av, NULL) == 0, "fi_av_open");
  struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .size = 64};
  CHECK(fi_cq_open(n->domain, &cq, &n->cq, NULL) == 0, "fi_cq_open");
  struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP};
  CHECK(fi_cntr_open(n->domain, &ca, &n->wcntr, NULL) == 0, "fi_cntr_open");
  CHECK(fi_endpoint(n->domain, info, &n->ep, NULL) == 0, "fi_endpoint");
  CHECK(fi_ep_bind(n->ep, &n->av->fid, 0) == 0, "bind av");
  CHECK(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) == 0, "bind cq");
  CHECK(fi_ep_bind(n->ep, &n->wcntr->fid, FI_WRITE) == 0, "bind cntr");
  CHECK(fi_enable(n->ep) == 0, "fi_enable");
  size_t len = 0;
  CHECK(fi_getname(&n->ep->fid, NULL, &len) == -FI_ETOOSMALL && len == sizeof n->name,
        "fi_getname size probe: %zu", len);
  CHECK(fi_getname(&n->ep->fid, &n->name, &len) == 0, "fi_getname");
}

static inline void close_node(struct node* n) {
  CHECK(fi_close(&n->ep->fid) == 0, "close ep");
  CHECK(fi_close(&n->cq->fid) == 0, "close cq");
  CHECK(fi_close(&n->wcntr->fid) == 0, "close cntr");
  CHECK(fi_close(&n->av->fid) == 0, "close av");
  CHECK(fi_close(&n->domain->fid) == 0, "close domain");
  CHECK(fi_close(&n->fabric->fid) == 0, "close fabric");
}

static inline double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Reads one completion from `a`, driving `b` too when given (each domain moves only when
// called). Returns 1 with *ok = 1 and *flags (when not NULL) the completion's flags for a
// successful one, 1 with *ok = 0 and *err for an error one, 0 after `timeout_s`.
static inline int next_completion(struct node* a, struct node* b, int* ok,
                                  struct fi_cq_err_entry* err, uint64_t* flags,
                                  double timeout_s) {
  const double end = now_s() + timeout_s;
  struct fi_cq_tagged_entry e;
  while (now_s() < end) {
    const ssize_t rc = fi_cq_read(a->cq, &e, 1);
    if (rc == 1) {
      if (flags != NULL) *flags = e.flags;
      *ok = 1;
      return 1;
    }
    if (rc == -FI_EAVAIL) {
      memset(err, 0, sizeof *err);
      CHECK(fi_cq_readerr(a->cq, err, 0) == 1, "fi_cq_readerr");
      *ok = 0;
      return 1;
    }
    if (b != NULL) fi_cq_read(b->cq, &e, 0);
  }
  return 0;
}
