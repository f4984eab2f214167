// MPI one-sided communication over the libfabric provider: Open MPI's osc/rdma component on
// its ofi BTL, which moves every MPI_Put and MPI_Get as fi_write / fi_read and every lock,
// MPI_Accumulate, MPI_Fetch_and_op and MPI_Compare_and_swap as fi_atomic, fi_fetch_atomic and
// fi_compare_atomic (tests/fabric/mpi_test.sh runs it). Every value is checked; it exits 1 on
// the first wrong one.
//
//   mpi_rma            all of it
//   mpi_rma no-swap    without MPI_Fetch_and_op(MPI_REPLACE) (an atomic swap, which RoCEv2's
//                      RC has not: its atomics are FETCH_ADD and CMP_SWAP)
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWords = 1 << 17, kBulkWords = kWords / 2, kCounterWords = 8, kRounds = 50 };

// Window layout, in int64 words: [0, kCounterWords) counters, then a bulk area.
enum {
  kSum = 0, kTicket = 1, kCasSlot = 2, kLocked = 3, kSwap = 4, kCasCount = 5,
  kBulk = kCounterWords
};

static int rank, nranks;
static int failures;

static void fail(const char* what, long a, long b) {
  fprintf(stderr, "rank %d: %s (%ld, %ld)\n", rank, what, a, b);
  ++failures;
}

static int64_t pattern(int owner, long i) { return (int64_t)owner * 1000003 + i * 7919; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int swap = 1;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "no-swap") == 0) swap = 0;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  // MPI_Win_create, not MPI_Win_allocate: osc/rdma maps an allocated window of ranks on one
  // node as shared memory and moves nothing over the network (and Open MPI 4.1 then passes a
  // null registration to the BTL for MPI_Compare_and_swap).
  int64_t* base = malloc(kWords * sizeof(int64_t));
  MPI_Win win;
  if (MPI_Win_create(base, kWords * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &win) != MPI_SUCCESS) {
    fail("MPI_Win_create", 0, 0);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  int64_t* local = malloc(kBulkWords * sizeof(int64_t));

  // 1. Active target (fences): each rank puts its pattern into its right neighbour's bulk
  //    area, then reads its left neighbour's back.
  for (long i = 0; i < kWords; ++i) base[i] = 0;
  base[kCasSlot] = -1;
  MPI_Win_fence(0, win);
  for (long i = 0; i < kBulkWords; ++i) local[i] = pattern(rank, i);
  MPI_Put(local, kBulkWords, MPI_INT64_T, right, kBulk, kBulkWords, MPI_INT64_T, win);
  MPI_Win_fence(0, win);
  for (long i = 0; i < kBulkWords; ++i) {
    if (base[kBulk + i] != pattern(left, i)) {
      fail("MPI_Put: word", i, (long)base[kBulk + i]);
      break;
    }
  }
  memset(local, 0, kBulkWords * sizeof(int64_t));
  MPI_Get(local, kBulkWords, MPI_INT64_T, left, kBulk, kBulkWords, MPI_INT64_T, win);
  MPI_Win_fence(0, win);
  const int left2 = (left + nranks - 1) % nranks;  // what the left neighbour received
  for (long i = 0; i < kBulkWords; ++i) {
    if (local[i] != pattern(left2, i)) {
      fail("MPI_Get: word", i, (long)local[i]);
      break;
    }
  }

  // 2. Passive target: every rank adds into rank 0's counters at once.
  MPI_Win_lock_all(0, win);
  // (Open MPI 4.1's ofi BTL maps only SUM and REPLACE to libfabric atomics, and aborts the
  // job on any other operation: MPI_MAX, MPI_BOR ... cannot be asked of it.)
  int64_t tickets[kRounds], swapped[kRounds];
  for (int r = 0; r < kRounds; ++r) {
    const int64_t one = 1, mine = rank + 1;
    MPI_Accumulate(&mine, 1, MPI_INT64_T, 0, kSum, 1, MPI_INT64_T, MPI_SUM, win);
    MPI_Fetch_and_op(&one, &tickets[r], MPI_INT64_T, 0, kTicket, MPI_SUM, win);
    const int64_t value = (int64_t)rank * kRounds + r + 1;
    swapped[r] = 0;
    if (swap) MPI_Fetch_and_op(&value, &swapped[r], MPI_INT64_T, 0, kSwap, MPI_REPLACE, win);
    MPI_Win_flush(0, win);
  }
  // Compare-and-swap, from every rank but rank 0 (Open MPI 4.1's osc/rdma crashes on one to
  // its own window): each tries to claim one slot, and exactly one wins; then each adds 1 to
  // a counter kRounds times by compare-and-swap alone, retrying when another came first.
  const int64_t expected = -1, me = rank;
  int64_t seen = -1;
  if (rank != 0) {
    MPI_Compare_and_swap(&me, &expected, &seen, MPI_INT64_T, 0, kCasSlot, win);
    MPI_Win_flush(0, win);
    int64_t old = 0;
    for (int r = 0; r < kRounds;) {
      const int64_t next = old + 1;
      int64_t found = 0;
      MPI_Compare_and_swap(&next, &old, &found, MPI_INT64_T, 0, kCasCount, win);
      MPI_Win_flush(0, win);
      if (found == old) ++r;
      old = found == old ? next : found;
    }
  }
  MPI_Win_unlock_all(win);
  // Exclusive locks: a read-modify-write of one word, which only mutual exclusion keeps whole.
  for (int r = 0; r < kRounds; ++r) {
    int64_t v = 0;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Get(&v, 1, MPI_INT64_T, 0, kLocked, 1, MPI_INT64_T, win);
    MPI_Win_flush(0, win);
    ++v;
    MPI_Put(&v, 1, MPI_INT64_T, 0, kLocked, 1, MPI_INT64_T, win);
    MPI_Win_unlock(0, win);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // The tickets are a permutation of 0 .. nranks x kRounds - 1.
  const long total = (long)nranks * kRounds;
  int64_t* all = malloc((size_t)total * sizeof(int64_t));
  uint8_t* hit = malloc((size_t)total + 1);
  MPI_Allgather(tickets, kRounds, MPI_INT64_T, all, kRounds, MPI_INT64_T, MPI_COMM_WORLD);
  memset(hit, 0, (size_t)total + 1);
  for (long i = 0; i < total; ++i) {
    if (all[i] < 0 || all[i] >= total || hit[all[i]]) {
      fail("MPI_Fetch_and_op SUM: ticket", i, (long)all[i]);
      break;
    }
    hit[all[i]] = 1;
  }
  // Atomic swaps lose no value: the values they fetched and the one left in the word are the
  // initial 0 and every value swapped in (1 .. total), each once.
  if (swap) {
    MPI_Allgather(swapped, kRounds, MPI_INT64_T, all, kRounds, MPI_INT64_T, MPI_COMM_WORLD);
    int64_t last = 0;
    if (rank == 0) {
      MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
      last = base[kSwap];
      MPI_Win_unlock(0, win);
    }
    MPI_Bcast(&last, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    memset(hit, 0, (size_t)total + 1);
    for (long i = 0; i <= total; ++i) {
      const int64_t v = i < total ? all[i] : last;
      if (v < 0 || v > total || hit[v]) {
        fail("MPI_Fetch_and_op REPLACE: value", i, (long)v);
        break;
      }
      hit[v] = 1;
    }
  }
  int won = rank != 0 && seen == -1, winners = 0;
  MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (winners != 1) fail("MPI_Compare_and_swap: winners", winners, 1);
  if (rank == 0) {
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    const int64_t want_sum = (int64_t)kRounds * nranks * (nranks + 1) / 2;
    if (base[kSum] != want_sum) fail("MPI_Accumulate SUM", (long)base[kSum], (long)want_sum);
    if (base[kTicket] != total) fail("MPI_Fetch_and_op total", (long)base[kTicket], total);
    if (base[kLocked] != total) fail("exclusive lock increments", (long)base[kLocked], total);
    if (base[kCasSlot] < 1 || base[kCasSlot] >= nranks)
      fail("MPI_Compare_and_swap slot", (long)base[kCasSlot], nranks);
    if (base[kCasCount] != (int64_t)(nranks - 1) * kRounds)
      fail("MPI_Compare_and_swap increments", (long)base[kCasCount], (nranks - 1L) * kRounds);
    MPI_Win_unlock(0, win);
  }

  int bad = 0;
  MPI_Allreduce(&failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && bad == 0) {
    printf("# %d ranks: one-sided, every value checked, all correct\n", nranks);
  }
  free(hit);
  free(all);
  free(local);
  MPI_Win_free(&win);
  free(base);
  MPI_Finalize();
  return bad == 0 ? 0 : 1;
}
