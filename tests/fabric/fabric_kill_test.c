// A peer killed mid-transfer: two processes over the provider, the receiver SIGKILLed while the
// sender has tagged messages in flight (rendezvous-sized, so the target reads them). The
// survivor must get a completion for every operation it posted, the failed ones in the error
// queue with a transport error, within its retry budget, and sends posted after the kill must
// fail the same way: no hang, no operation lost. With the argument `sender`, the other way
// round: the sender of one 8 MiB rendezvous message is SIGKILLed once part of the rest has
// landed in the receive (under UET's pushed rendezvous: after the receiver's CTS was
// acknowledged), and the receive must complete in error, FI_ETIMEDOUT with no SES return code
// (UET only). Over UET, or the RC engine with FI_UETREF_TRANSPORT=rocev2. Exits 0 when every
// check holds; prints each failure.
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

enum { kLen = 1 << 20, kInFlight = 8, kBeforeKill = 4, kAfterKill = 4 };

static int failures;

struct node {
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_ep* ep;
  struct sockaddr_in name;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Opens an RDM endpoint with tagged messaging; 0 on success.
static int open_node(struct node* n) {
  memset(n, 0, sizeof *n);
  struct fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup("uetref");
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_TAGGED;
  int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &n->info);
  fi_freeinfo(h);
  if (rc != 0) return rc;
  struct fi_av_attr av = {.type = FI_AV_TABLE};
  struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .size = 256};
  size_t len = sizeof n->name;
  if ((rc = fi_fabric(n->info->fabric_attr, &n->fabric, NULL)) != 0 ||
      (rc = fi_domain(n->fabric, n->info, &n->domain, NULL)) != 0 ||
      (rc = fi_av_open(n->domain, &av, &n->av, NULL)) != 0 ||
      (rc = fi_cq_open(n->domain, &cq, &n->cq, NULL)) != 0 ||
      (rc = fi_endpoint(n->domain, n->info, &n->ep, NULL)) != 0 ||
      (rc = fi_ep_bind(n->ep, &n->av->fid, 0)) != 0 ||
      (rc = fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV)) != 0 ||
      (rc = fi_enable(n->ep)) != 0 || (rc = fi_getname(&n->ep->fid, &n->name, &len)) != 0) {
    return rc;
  }
  return 0;
}

// Closes what open_node opened, the endpoint first.
static void close_node(struct node* n) {
  fi_close(&n->ep->fid);
  fi_close(&n->cq->fid);
  fi_close(&n->av->fid);
  fi_close(&n->domain->fid);
  fi_close(&n->fabric->fid);
  fi_freeinfo(n->info);
}

// The receiver: posts receives, tells the sender its address, then only drives progress
// (and reposts) until it is killed.
static void receiver(int to_sender) {
  struct node n;
  if (open_node(&n) != 0) _exit(2);
  static char bufs[16][kLen];
  static struct fi_context ctx[16];
  for (int i = 0; i < 16; ++i) {
    if (fi_trecv(n.ep, bufs[i], kLen, NULL, FI_ADDR_UNSPEC, 7, 0, &ctx[i]) != 0) _exit(3);
  }
  if (write(to_sender, &n.name, sizeof n.name) != (ssize_t)sizeof n.name) _exit(4);
  for (;;) {
    struct fi_cq_tagged_entry e;
    if (fi_cq_read(n.cq, &e, 1) == 1) {
      const int i = (int)((struct fi_context*)e.op_context - ctx);
      fi_trecv(n.ep, bufs[i], kLen, NULL, FI_ADDR_UNSPEC, 7, 0, &ctx[i]);
    }
  }
}

enum { kBig = 8 << 20, kStride = 4096 };

// The sender of the `sender` test: one message to the address the pipe brings, then progress
// until it is killed.
static void big_sender(int from_receiver) {
  struct sockaddr_in peer;
  struct node n;
  if (read(from_receiver, &peer, sizeof peer) != (ssize_t)sizeof peer) _exit(2);
  if (open_node(&n) != 0) _exit(3);
  fi_addr_t to = FI_ADDR_NOTAVAIL;
  if (fi_av_insert(n.av, &peer, 1, &to, 0, NULL) != 1) _exit(4);
  static char src[kBig];
  memset(src, 0x5a, sizeof src);
  static struct fi_context ctx;
  if (fi_tsend(n.ep, src, kBig, NULL, to, 9, &ctx) != 0) _exit(5);
  for (;;) {
    struct fi_cq_tagged_entry e;
    fi_cq_read(n.cq, &e, 1);
  }
}

// Strides of `buf` (one byte each) the message has reached: 0 before the rest arrives, all
// of them once it is whole.
static int strides_landed(const char* buf) {
  int n = 0;
  for (size_t i = kStride; i < kBig; i += kStride) n += buf[i] != 0;
  return n;
}

// Forks a child that runs `child_main` (which never returns) on one end of a pipe: its read
// end when `child_reads`, else its write end; the other end in *mine. -1 if either call fails.
static pid_t fork_piped(void (*child_main)(int), int child_reads, int* mine) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    close(fd[child_reads ? 1 : 0]);
    child_main(fd[child_reads ? 0 : 1]);
  }
  close(fd[child_reads ? 0 : 1]);
  *mine = fd[child_reads ? 1 : 0];
  return child;
}

// The `sender` test: the receiver survives a sender killed mid-message.
static int sender_killed(void) {
  int to_sender = -1;
  const pid_t child = fork_piped(big_sender, /*child_reads=*/1, &to_sender);
  if (child < 0) return 1;
  struct node n;
  int rc = open_node(&n);
  CHECK(rc == 0, "open: %d", rc);
  if (rc != 0) return kill(child, SIGKILL), 1;
  static char buf[kBig];
  static struct fi_context ctx;
  CHECK(fi_trecv(n.ep, buf, kBig, NULL, FI_ADDR_UNSPEC, 9, 0, &ctx) == 0, "fi_trecv");
  CHECK(write(to_sender, &n.name, sizeof n.name) == (ssize_t)sizeof n.name, "write");
  const int strides = kBig / kStride - 1;
  int landed = 0, ok = 0, errors = 0;
  double killed_at = 0, failed_at = 0;
  const double give_up = now_s() + 60;
  while (ok + errors == 0 && now_s() < give_up) {
    struct fi_cq_tagged_entry e;
    ssize_t r = fi_cq_read(n.cq, &e, 1);
    if (r == 1) ++ok;
    if (r == -FI_EAVAIL) {
      struct fi_cq_err_entry err = {0};
      CHECK(fi_cq_readerr(n.cq, &err, 0) == 1, "fi_cq_readerr");
      ++errors;
      failed_at = now_s();
      char text[128];
      const char* why = fi_cq_strerror(n.cq, err.prov_errno, NULL, text, sizeof text);
      printf("the receive failed: %s (%s)\n", fi_strerror(err.err), why);
      CHECK(err.op_context == &ctx, "the error names another operation");
      CHECK(err.err == FI_ETIMEDOUT, "error %s, want FI_ETIMEDOUT", fi_strerror(err.err));
      // No SES return code: the provider reports the engine's status, negated (cq.cc).
      CHECK(err.prov_errno < 0 && strstr(why, "no answer from the peer") != NULL,
            "prov_errno %d (%s): want no SES return code", err.prov_errno, why);
    }
    // Mid-message: part of the rest is in the receive buffer, not all of it.
    if (killed_at == 0 && (landed = strides_landed(buf)) > 0 && landed < strides) {
      kill(child, SIGKILL);
      waitpid(child, NULL, 0);
      killed_at = now_s();
    }
  }
  if (killed_at == 0) kill(child, SIGKILL), waitpid(child, NULL, 0);
  CHECK(killed_at > 0, "the message was never caught part-way (%d of %d strides)", landed, strides);
  CHECK(ok == 0, "the receive completed successfully though its sender died");
  CHECK(errors == 1, "no error completion within 60 s: the receive hangs");
  if (errors == 1 && killed_at > 0) {
    printf("sender killed with %d of %d strides landed; the receive failed %.2f s later\n",
           landed, strides, failed_at - killed_at);
  }
  close_node(&n);
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const char* transport = getenv("FI_UETREF_TRANSPORT");
  printf("transport: %s\n", transport != NULL ? transport : "uet");
  if (argc > 1 && strcmp(argv[1], "sender") == 0) return sender_killed();
  int from_receiver = -1;
  const pid_t child = fork_piped(receiver, /*child_reads=*/0, &from_receiver);
  if (child < 0) return 1;
  struct sockaddr_in peer;
  if (read(from_receiver, &peer, sizeof peer) != (ssize_t)sizeof peer) {
    fprintf(stderr, "FAIL: the receiver never started\n");
    kill(child, SIGKILL);
    return 1;
  }
  struct node n;
  int rc = open_node(&n);
  CHECK(rc == 0, "open: %d", rc);
  if (rc != 0) return 1;
  fi_addr_t to = FI_ADDR_NOTAVAIL;
  CHECK(fi_av_insert(n.av, &peer, 1, &to, 0, NULL) == 1, "fi_av_insert");
  static char src[kLen];
  memset(src, 0x5a, sizeof src);
  static struct fi_context ctx[kInFlight + kAfterKill];
  int posted = 0, ok = 0, errors = 0, other = 0;
  for (; posted < kInFlight; ++posted) {
    CHECK(fi_tsend(n.ep, src, kLen, NULL, to, 7, &ctx[posted]) == 0, "fi_tsend %d", posted);
  }
  // Mid-transfer: once kBeforeKill messages have landed, the receiver dies with the rest in
  // flight; sends posted after that go to a dead peer.
  double killed_at = 0, last = 0;
  const double give_up = now_s() + 120;
  while (ok + errors < posted && now_s() < give_up) {
    struct fi_cq_tagged_entry e;
    ssize_t r = fi_cq_read(n.cq, &e, 1);
    if (r == 1) {
      ++ok;
    } else if (r == -FI_EAVAIL) {
      struct fi_cq_err_entry err = {0};
      CHECK(fi_cq_readerr(n.cq, &err, 0) == 1, "fi_cq_readerr");
      ++errors;
      last = now_s();
      // A transport error: retries spent, or the operation flushed with its connection.
      if (err.err != FI_ETIMEDOUT && err.err != FI_ECANCELED && err.err != FI_EIO &&
          err.err != FI_ENORX) {
        ++other;
        fprintf(stderr, "unexpected error completion: %s\n", fi_strerror(err.err));
      }
    }
    if (killed_at == 0 && ok >= kBeforeKill) {
      kill(child, SIGKILL);
      waitpid(child, NULL, 0);
      killed_at = now_s();
      for (int i = 0; i < kAfterKill; ++i, ++posted) {
        CHECK(fi_tsend(n.ep, src, kLen, NULL, to, 7, &ctx[posted]) == 0, "fi_tsend after the kill");
      }
    }
  }
  if (killed_at == 0) kill(child, SIGKILL), waitpid(child, NULL, 0);
  CHECK(killed_at > 0, "only %d of %d messages landed before the deadline", ok, kBeforeKill);
  CHECK(ok + errors == posted, "%d of %d operations completed (%d ok, %d failed): a hang", ok + errors,
        posted, ok, errors);
  CHECK(errors >= kAfterKill, "%d error completions, want at least the %d sent after the kill",
        errors, kAfterKill);
  CHECK(other == 0, "%d error completions were not transport errors", other);
  if (killed_at > 0 && errors > 0) {
    printf("killed after %d messages: %d more landed, %d failed, the last %.2f s after the kill\n",
           kBeforeKill, ok - kBeforeKill, errors, last - killed_at);
  }
  close_node(&n);
  if (failures == 0) printf("a killed peer: every operation completed, the failed ones in error\n");
  return failures == 0 ? 0 : 1;
}
