// fi_close on a memory region, through libfabric's public API between two domains of one
// process (io_uring loopback): the region's key is withdrawn from the engine, so a peer's
// fi_write with it completes in error in the peer's CQ error queue (fi_cq_readerr: FI_EACCES)
// and the memory, which the application may now free, is not written; a new registration gets
// another key that works while the old one stays refused; an MR whose memory one of our own
// operations still uses stays open (-FI_EBUSY) until that operation completes. Run with
// FI_UETREF_TRANSPORT=uet and rocev2 (there a refused key fails the QP, which the next
// operation connects again). Exits 0 when every check holds; prints each failure.
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int failures;

#include "node.h"

static int one_completion(struct node* a, struct node* b, int* ok, struct fi_cq_err_entry* err,
                          double timeout_s) {
  return next_completion(a, b, ok, err, NULL, timeout_s);
}

static int all(const unsigned char* p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != v) return 0;
  }
  return 1;
}

int main(void) {
  const char* transport = getenv("FI_UETREF_TRANSPORT");
  printf("transport: %s\n", transport != NULL ? transport : "uet");
  struct fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup("uetref");
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_MSG | FI_RMA;
  h->domain_attr->mr_mode = FI_MR_PROV_KEY;
  struct fi_info* info = NULL;
  const int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
  CHECK(rc == 0 && info != NULL, "fi_getinfo: %d", rc);
  if (rc != 0) return 1;
  struct node a, b;
  open_node(info, &a);
  open_node(info, &b);
  fi_addr_t to_b = FI_ADDR_NOTAVAIL;
  CHECK(fi_av_insert(a.av, &b.name, 1, &to_b, 0, NULL) == 1, "insert b");

  enum { kLen = 100000 };
  unsigned char* region = calloc(kLen, 1);
  unsigned char* src = malloc(kLen);
  memset(src, 0x5A, kLen);
  struct fid_mr* mr = NULL;
  CHECK(fi_mr_reg(b.domain, region, kLen, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0, "fi_mr_reg");
  const uint64_t old_key = fi_mr_key(mr);
  int ok = 0;
  struct fi_cq_err_entry err;
  CHECK(fi_write(a.ep, src, kLen, NULL, to_b, 0, old_key, NULL) == 0, "fi_write");
  CHECK(one_completion(&a, &b, &ok, &err, 5.0) == 1 && ok, "WRITE with a live key failed");
  CHECK(all(region, kLen, 0x5A), "WRITE: bytes differ at the target");

  // The MR closed: the same WRITE with its key fails at a, and b's memory is not written.
  CHECK(fi_close(&mr->fid) == 0, "close mr");
  memset(region, 0, kLen);
  int ctx = 0;
  CHECK(fi_write(a.ep, src, kLen, NULL, to_b, 0, old_key, &ctx) == 0, "fi_write, old key");
  CHECK(one_completion(&a, &b, &ok, &err, 10.0) == 1, "no completion for the old key");
  CHECK(!ok && err.err == FI_EACCES && err.op_context == &ctx,
        "WRITE with a closed MR's key: ok %d err %d", ok, err.err);
  char msg[128] = "";
  fi_cq_strerror(a.cq, err.prov_errno, NULL, msg, sizeof msg);
  printf("a WRITE with a closed MR's key: %s (%s)\n", fi_strerror(err.err), msg);
  CHECK(all(region, kLen, 0), "a closed MR's memory was written");

  // A new registration: another key, which works; the old one stays refused.
  CHECK(fi_mr_reg(b.domain, region, kLen, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0, "fi_mr_reg 2");
  const uint64_t new_key = fi_mr_key(mr);
  CHECK(new_key != old_key, "the new MR got the closed one's key %lu", (unsigned long)old_key);
  CHECK(fi_write(a.ep, src, kLen, NULL, to_b, 0, new_key, NULL) == 0, "fi_write, new key");
  CHECK(one_completion(&a, &b, &ok, &err, 10.0) == 1 && ok, "WRITE with the new key failed");
  CHECK(all(region, kLen, 0x5A), "WRITE with the new key: bytes differ");
  memset(region, 0, kLen);
  CHECK(fi_write(a.ep, src, kLen, NULL, to_b, 0, old_key, NULL) == 0, "fi_write, old key again");
  CHECK(one_completion(&a, &b, &ok, &err, 10.0) == 1 && !ok && err.err == FI_EACCES,
        "the old key again: ok %d err %d", ok, err.err);
  CHECK(all(region, kLen, 0), "the old key wrote into the new MR's memory");
  CHECK(fi_close(&mr->fid) == 0, "close mr 2");

  // Our own source: an MR of a whose memory a posted WRITE still sends from stays open until
  // the WRITE completes (the domain moves only when called: nothing has moved yet).
  struct fid_mr* src_mr = NULL;
  CHECK(fi_mr_reg(a.domain, src, kLen, FI_WRITE, 0, 0, 0, &src_mr, NULL) == 0, "fi_mr_reg src");
  CHECK(fi_mr_reg(b.domain, region, kLen, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0, "fi_mr_reg 3");
  CHECK(fi_write(a.ep, src, kLen, fi_mr_desc(src_mr), to_b, 0, fi_mr_key(mr), NULL) == 0,
        "fi_write from a registered source");
  CHECK(fi_close(&src_mr->fid) == -FI_EBUSY, "a source MR in use closed");
  CHECK(one_completion(&a, &b, &ok, &err, 10.0) == 1 && ok, "WRITE from a registered source");
  CHECK(fi_close(&src_mr->fid) == 0, "close the source MR after its WRITE");
  CHECK(fi_close(&mr->fid) == 0, "close mr 3");

  close_node(&a);
  close_node(&b);
  fi_freeinfo(info);
  fi_freeinfo(h);
  free(region);
  free(src);
  printf("%s\n", failures == 0 ? "all checks hold" : "FAILED");
  return failures == 0 ? 0 : 1;
}
