// An MPI program of our own for the libfabric provider (tests/fabric/mpi_test.sh runs it over
// Open MPI's ofi MTL): every byte it moves is checked.
//
//   mpi_fabric check   ping-pong 0 B..4 MiB, windowed uni- and bi-directional bandwidth,
//                      MPI_Allreduce, MPI_Alltoallv, MPI_ANY_SOURCE / MPI_ANY_TAG receives, a
//                      canceled receive (MPI_Cancel), probes (MPI_Iprobe, MPI_Probe,
//                      MPI_Improbe and MPI_Mrecv) and a truncated receive
//                      (MPI_ERR_TRUNCATE); exits 1 on the first wrong byte
//   mpi_fabric check [no-truncate] [no-window] [no-probe]   ... without the truncated receive,
//                      the windowed bandwidth or the probes (for peers that cannot take them,
//                      tests/fabric)
//   mpi_fabric bench   the OSU micro-benchmarks' method and columns (osu_latency, osu_bw,
//                      osu_bibw: a window of 64 messages, then a 4-byte ack), ranks 0 and 1
//   mpi_fabric bench SIZE...   the same rows for these message sizes alone (bench/mpi_bw.sh)
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxSize = 4 << 20, kWindow = 64 };

static int rank, nranks;
static int failures;
static long only[16];  // bench SIZE...: the sizes to measure (none: every size)
static int n_only;

static int measured(long len) {
  for (int i = 0; i < n_only; ++i) {
    if (only[i] == len) return 1;
  }
  return n_only == 0;
}

static void fail(const char* what, long a, long b) {
  fprintf(stderr, "rank %d: %s (%ld, %ld)\n", rank, what, a, b);
  ++failures;
}

// The byte at offset i of a message tagged by `seed`: differs between sizes, senders and
// iterations, so a stale or misplaced message shows.
static uint8_t pattern(long seed, long i) { return (uint8_t)(seed * 131 + i * 7 + (i >> 8)); }

static void fill(uint8_t* p, long len, long seed) {
  for (long i = 0; i < len; ++i) p[i] = pattern(seed, i);
}

static int check(const uint8_t* p, long len, long seed, const char* what) {
  for (long i = 0; i < len; ++i) {
    if (p[i] != pattern(seed, i)) {
      fail(what, len, i);
      return 0;
    }
  }
  return 1;
}

static double now_us(void) { return MPI_Wtime() * 1e6; }

// Ping-pong between ranks 0 and 1; returns the half round trip in microseconds.
static double pingpong(uint8_t* sbuf, uint8_t* rbuf, long len, int iters, int checked) {
  const int peer = 1 - rank;
  const int warm = iters / 10;  // untimed first round trips
  double start = 0;
  for (int it = 0; it < iters; ++it) {
    if (it == warm) start = now_us();
    const long seed = len + it;
    if (rank == 0) {
      if (checked) fill(sbuf, len, seed);
      MPI_Send(sbuf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (checked) check(rbuf, len, seed + 1, "ping-pong reply");
    } else {
      MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (checked) {
        check(rbuf, len, seed, "ping-pong request");
        fill(sbuf, len, seed + 1);
      }
      MPI_Send(sbuf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
  }
  return (now_us() - start) / (2.0 * (iters - warm));
}

// osu_bw / osu_bibw: a window of messages one way (or both), then an ack; MB/s (10^6 B/s).
static double bandwidth(uint8_t* sbuf, uint8_t* rbuf, long len, int iters, int bidir, int checked) {
  const int peer = 1 - rank;
  MPI_Request reqs[2 * kWindow];
  double start = now_us();
  for (int it = 0; it < iters; ++it) {
    if (it == 1) start = now_us();  // the first window warms up
    const int sends = rank == 0 || bidir;
    const int recvs = rank == 1 || bidir;
    int n = 0;
    if (recvs) {
      for (int w = 0; w < kWindow; ++w) {
        MPI_Irecv(rbuf + (size_t)w * len, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &reqs[n++]);
      }
    }
    if (sends) {
      if (checked) {
        for (int w = 0; w < kWindow; ++w) fill(sbuf + (size_t)w * len, len, len * 3 + w + rank);
      }
      for (int w = 0; w < kWindow; ++w) {
        MPI_Isend(sbuf + (size_t)w * len, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &reqs[n++]);
      }
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    if (recvs && checked) {
      for (int w = 0; w < kWindow; ++w) check(rbuf + (size_t)w * len, len, len * 3 + w + peer, "bandwidth window");
    }
    int ack = 0;
    if (rank == 1) MPI_Send(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
    else MPI_Recv(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  const int timed = iters > 1 ? iters - 1 : 1;
  const double bytes = (double)len * kWindow * timed * (bidir ? 2 : 1);
  return bytes / (now_us() - start);
}

static void allreduce(void) {
  const long counts[] = {1, 1000, 1 << 18};
  for (int c = 0; c < 3; ++c) {
    const long n = counts[c];
    int64_t* in = malloc(n * sizeof(int64_t));
    int64_t* out = malloc(n * sizeof(int64_t));
    for (long i = 0; i < n; ++i) in[i] = (int64_t)(rank + 1) * (i + 1);
    MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    const int64_t ranks_sum = (int64_t)nranks * (nranks + 1) / 2;
    for (long i = 0; i < n; ++i) {
      if (out[i] != ranks_sum * (i + 1)) {
        fail("MPI_Allreduce", n, i);
        break;
      }
    }
    free(in);
    free(out);
  }
}

// Rank r sends (r + d + 1) * 1000 bytes to rank d, patterned by (r, d).
static void alltoallv(void) {
  int* scounts = malloc(nranks * sizeof(int));
  int* sdispls = malloc(nranks * sizeof(int));
  int* rcounts = malloc(nranks * sizeof(int));
  int* rdispls = malloc(nranks * sizeof(int));
  int stotal = 0, rtotal = 0;
  for (int d = 0; d < nranks; ++d) {
    scounts[d] = (rank + d + 1) * 1000;
    sdispls[d] = stotal;
    stotal += scounts[d];
    rcounts[d] = (d + rank + 1) * 1000;
    rdispls[d] = rtotal;
    rtotal += rcounts[d];
  }
  uint8_t* s = malloc(stotal);
  uint8_t* r = malloc(rtotal);
  for (int d = 0; d < nranks; ++d) fill(s + sdispls[d], scounts[d], rank * 64 + d);
  MPI_Alltoallv(s, scounts, sdispls, MPI_BYTE, r, rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);
  for (int d = 0; d < nranks; ++d) check(r + rdispls[d], rcounts[d], d * 64 + rank, "MPI_Alltoallv");
  free(s);
  free(r);
  free(scounts);
  free(sdispls);
  free(rcounts);
  free(rdispls);
}

// Every other rank sends two messages to rank 0 with tags of its own; rank 0 takes them with
// MPI_ANY_SOURCE and MPI_ANY_TAG and checks each against the status it came with.
static void any_source_any_tag(void) {
  enum { kLen = 3000 };
  uint8_t buf[kLen];
  if (rank != 0) {
    for (int k = 0; k < 2; ++k) {
      fill(buf, kLen, rank * 10 + k);
      MPI_Send(buf, kLen, MPI_BYTE, 0, rank * 10 + k, MPI_COMM_WORLD);
    }
    return;
  }
  int seen[64] = {0};
  for (int m = 0; m < 2 * (nranks - 1); ++m) {
    MPI_Status st;
    MPI_Recv(buf, kLen, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    if (st.MPI_TAG / 10 != st.MPI_SOURCE || st.MPI_SOURCE <= 0 || st.MPI_SOURCE >= nranks) {
      fail("MPI_ANY_SOURCE status", st.MPI_SOURCE, st.MPI_TAG);
      continue;
    }
    check(buf, kLen, st.MPI_TAG, "MPI_ANY_TAG message");
    ++seen[st.MPI_SOURCE];
  }
  for (int r = 1; r < nranks; ++r) {
    if (seen[r] != 2) fail("MPI_ANY_SOURCE: messages from rank", r, seen[r]);
  }
}

// Rank 0 posts a receive no one sends to and cancels it (MPI_Cancel: the ofi MTL's
// fi_cancel); MPI_Test_cancelled must say so. Then a receive posted after it with the tag the
// canceled one waited for gets rank 1's message, whole.
static void canceled(void) {
  enum { kLen = 2000 };
  uint8_t buf[kLen];
  if (rank == 1) {
    MPI_Barrier(MPI_COMM_WORLD);
    fill(buf, kLen, 55);
    MPI_Send(buf, kLen, MPI_BYTE, 0, 55, MPI_COMM_WORLD);
    return;
  }
  if (rank != 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    return;
  }
  MPI_Request req;
  MPI_Status st;
  int flag = 0;
  memset(buf, 0, sizeof buf);
  MPI_Irecv(buf, kLen, MPI_BYTE, 1, 55, MPI_COMM_WORLD, &req);
  MPI_Cancel(&req);
  MPI_Wait(&req, &st);
  MPI_Test_cancelled(&st, &flag);
  if (!flag) fail("MPI_Cancel of a waiting receive: not cancelled", flag, 1);
  MPI_Barrier(MPI_COMM_WORLD);  // rank 1 sends only now
  MPI_Recv(buf, kLen, MPI_BYTE, 1, 55, MPI_COMM_WORLD, &st);
  check(buf, kLen, 55, "the message after a canceled receive");
}

// Rank 1 sends three messages of sizes rank 0 does not know: MPI_Iprobe finds nothing before
// they are sent; MPI_Probe then gives the first's size and tag, and MPI_Recv of that size gets
// it whole; MPI_Improbe claims the next, which a receive for any tag passes by, and MPI_Mrecv
// takes it. (The ofi MTL probes with FI_PEEK, and claims with FI_CLAIM.)
static void probes(void) {
  enum { kMax = 100000 };
  static const int kSizes[3] = {777, 90000, 5000};  // the second is a rendezvous one
  uint8_t* buf = malloc(kMax);
  if (rank == 1) {  // nonblocking: the claimed message is received after the one behind it
    uint8_t* out[3];
    MPI_Request reqs[3];
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 3; ++k) {
      out[k] = malloc(kSizes[k]);
      fill(out[k], kSizes[k], 60 + k);
      MPI_Isend(out[k], kSizes[k], MPI_BYTE, 0, 60 + k, MPI_COMM_WORLD, &reqs[k]);
    }
    MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
    for (int k = 0; k < 3; ++k) free(out[k]);
  } else if (rank != 0) {
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Status st;
    int flag = 1, n = 0;
    MPI_Iprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (flag) fail("MPI_Iprobe before any send found a message", st.MPI_TAG, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (st.MPI_TAG != 60 || n != kSizes[0]) fail("MPI_Probe: tag, size", st.MPI_TAG, n);
    MPI_Recv(buf, n, MPI_BYTE, 1, st.MPI_TAG, MPI_COMM_WORLD, &st);
    check(buf, kSizes[0], 60, "the probed message");
    MPI_Message msg;
    flag = 0;
    while (!flag) MPI_Improbe(1, 61, MPI_COMM_WORLD, &flag, &msg, &st);
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (n != kSizes[1]) fail("MPI_Improbe: size", n, kSizes[1]);
    MPI_Recv(buf, kMax, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);  // not the claimed one
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (st.MPI_TAG != 62 || n != kSizes[2]) fail("a receive took the claimed message", st.MPI_TAG, n);
    check(buf, kSizes[2], 62, "the message after the claimed one");
    MPI_Mrecv(buf, kMax, MPI_BYTE, &msg, &st);
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (n != kSizes[1] || st.MPI_TAG != 61) fail("MPI_Mrecv: size, tag", n, st.MPI_TAG);
    check(buf, kSizes[1], 61, "the claimed message");
  }
  free(buf);
}

// Rank 1 sends 5000 bytes where rank 0 posted 1000: MPI_ERR_TRUNCATE. (What the buffer then
// holds is not the standard's to say: uetref places the bytes that fit, tcp;ofi_rxm none.)
static void truncated(void) {
  enum { kSent = 5000, kRoom = 1000 };
  uint8_t buf[kSent];
  if (rank == 1) {
    fill(buf, kSent, 77);
    MPI_Send(buf, kSent, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
  } else if (rank == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Status st;
    memset(buf, 0, sizeof buf);
    const int rc = MPI_Recv(buf, kRoom, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &st);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_TRUNCATE) fail("truncated receive: error class", cls, MPI_ERR_TRUNCATE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const int bench = argc > 1 && strcmp(argv[1], "bench") == 0;
  int no_truncate = 0, no_window = 0, no_probe = 0;
  for (int a = 2; a < argc; ++a) {
    no_truncate |= strcmp(argv[a], "no-truncate") == 0;
    no_window |= strcmp(argv[a], "no-window") == 0;
    no_probe |= strcmp(argv[a], "no-probe") == 0;
    if (bench && n_only < 16 && argv[a][0] >= '0' && argv[a][0] <= '9') only[n_only++] = atol(argv[a]);
  }
  if (nranks < 2 || nranks > 64) {
    if (rank == 0) fprintf(stderr, "mpi_fabric: 2..64 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  uint8_t* sbuf = malloc((size_t)kMaxSize * 2);
  uint8_t* rbuf = malloc((size_t)kMaxSize * 2);
  const long window_max = bench ? kMaxSize / 2 : 1 << 16;  // window x size in memory
  uint8_t* wsbuf = malloc(window_max * kWindow);
  uint8_t* wrbuf = malloc(window_max * kWindow);

  if (rank < 2) {
    if (rank == 0) printf("# ping-pong\n# Size       Latency (us)\n");
    for (long len = 0; len <= kMaxSize; len = len ? len * 2 : 1) {
      if (!measured(len)) continue;
      const int iters = bench ? (len <= 8192 ? 1000 : 100) : (len <= 65536 ? 20 : 4);
      const double us = pingpong(sbuf, rbuf, len, iters, !bench);
      if (rank == 0) printf("%-10ld %18.2f\n", len, us);
    }
    for (int bidir = 0; bidir < 2 && !no_window; ++bidir) {
      if (rank == 0) printf("# %s bandwidth, window %d\n# Size      Bandwidth (MB/s)\n", bidir ? "bi-directional" : "uni-directional", kWindow);
      for (long len = 1; len <= window_max; len *= bench ? 2 : 16) {
        if (!measured(len)) continue;
        const int iters = bench ? (len <= 65536 ? 40 : 10) : 3;
        const double mbs = bandwidth(wsbuf, wrbuf, len, iters, bidir, !bench);
        if (rank == 0) printf("%-10ld %18.2f\n", len, mbs);
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (!bench) {
    // A barrier between phases: a later phase's message must not meet an earlier phase's
    // wildcard receive.
    allreduce();
    alltoallv();
    any_source_any_tag();
    MPI_Barrier(MPI_COMM_WORLD);
    canceled();
    MPI_Barrier(MPI_COMM_WORLD);
    if (!no_probe) probes();
    MPI_Barrier(MPI_COMM_WORLD);
    if (!no_truncate) truncated();
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("# %d ranks: %s\n", nranks, total == 0 ? "every byte checked, all correct" : "FAILED");
  free(sbuf);
  free(rbuf);
  free(wsbuf);
  free(wrbuf);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
