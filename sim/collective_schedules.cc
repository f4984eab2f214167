// The per-channel schedules of the collectives: which rank sends what to whom at each step,
// and which earlier sends each waits for (sim/collective.h names the algorithms).
#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

#include "sim/collective.h"
#include "sim/collective_internal.h"

namespace uet::sim {
namespace collective_internal {
namespace {

// The sends of one rank pair in one channel are a stream through `slots` buffers, as NCCL's
// FIFO of NCCL_STEPS: send m waits for send m - slots of the same stream to complete (its
// buffer is free), besides the data it carries.
class Window {
 public:
  Window(size_t streams, uint32_t slots) : slots_(slots), ids_(streams * slots, kNone) {}
  // The send that must complete before send `m` of `stream`.
  uint32_t free_slot(size_t stream, uint64_t m) const { return ids_[at(stream, m)]; }
  void sent(size_t stream, uint64_t m, uint32_t id) { ids_[at(stream, m)] = id; }

 private:
  size_t at(size_t stream, uint64_t m) const { return stream * slots_ + m % slots_; }
  uint32_t slots_;
  std::vector<uint32_t> ids_;
};

}  // namespace

// ----- ring (and chain): the part each rank sends at each step.

namespace {

// All-reduce and reduce-scatter: at step k < n-1 rank i passes part i-k on, reduced with its
// own; after n-1 steps it holds part i+1 complete, which the all-gather phase circulates.
// All-gather: rank i starts with part i and at step k passes part i-k on.
uint32_t ring_part(Collective c, uint32_t n, uint32_t k, uint32_t i) {
  if (c == Collective::kAllGather || k < n - 1) return (i + n - k % n) % n;
  const uint32_t g = k - (n - 1);
  return (i + 1 + n - g) % n;
}

}  // namespace

// One channel of the ring: `loops` pieces of the channel's share, each cut into n parts, run
// `chunk_steps` loops at a time: a ring step moves one part of each loop of the group, each its
// own send, as NCCL's step moves a chunk of CHUNKSTEPS buffer steps (src/include/collectives.h)
// that the next rank forwards step by step as they arrive. A send waits for the part it reduces
// or forwards (its predecessor's send of the same loop at the previous step) and for a free slot
// in its stream to the next rank; while one part's completion is on its way back, the group's
// other parts keep the link busy.
void ring_channel(Dag& dag, Collective c, uint32_t n, uint64_t channel_bytes, uint64_t chunk,
                  uint32_t slots, uint32_t chunk_steps) {
  const uint32_t steps = ring_steps(c, n);
  const uint64_t loops = ring_loops(channel_bytes, n, chunk, chunk_steps);
  // prev[j * n + i]: rank i's send of the group's loop j at the previous step.
  std::vector<uint32_t> prev(size_t{chunk_steps} * n, kNone), cur(prev.size(), kNone);
  Window window(n, slots);
  uint64_t m = 0;  // sends so far on every rank's stream (all streams advance together)
  for (uint64_t first = 0; first < loops; first += chunk_steps) {
    const auto group = static_cast<uint32_t>(std::min<uint64_t>(chunk_steps, loops - first));
    for (uint32_t k = 0; k < steps; ++k) {
      for (uint32_t j = 0; j < group; ++j, ++m) {
        const uint64_t piece = split(channel_bytes, loops, first + j);
        const uint32_t* pred = &prev[size_t{j} * n];
        for (uint32_t i = 0; i < n; ++i) {
          const uint64_t bytes = split(piece, n, ring_part(c, n, k, i));
          const uint32_t from_pred = k > 0 ? pred[(i + n - 1) % n] : kNone;
          const uint32_t id = dag.add(i, (i + 1) % n, bytes, {from_pred, window.free_slot(i, m)});
          cur[size_t{j} * n + i] = id;
          window.sent(i, m, id);
        }
      }
      std::swap(prev, cur);
    }
  }
}

// Broadcast and reduce as NCCL runs them: a chain along the ring from `first`, pipelined in
// chunks; a hop forwards a piece once the previous hop has brought it.
void chain_channel(Dag& dag, uint32_t n, uint32_t first, uint64_t channel_bytes, uint64_t chunk,
                   uint32_t slots) {
  const uint64_t loops = ceil_div(channel_bytes, chunk);
  std::vector<uint32_t> hop(n, kNone);
  Window window(n, slots);
  for (uint64_t l = 0; l < loops; ++l) {
    const uint64_t piece = split(channel_bytes, loops, l);
    for (uint32_t h = 0; h + 1 < n; ++h) {
      const uint32_t from = (first + h) % n, to = (first + h + 1) % n;
      hop[h] = dag.add(from, to, piece, {h > 0 ? hop[h - 1] : kNone, window.free_slot(h, l)});
      window.sent(h, l, hop[h]);
    }
  }
}

// ----- double binary tree

namespace {

std::vector<TreeNode> tree0(uint32_t n) {
  std::vector<TreeNode> t(n);
  auto link = [&t](uint32_t parent, uint32_t child, int slot) {
    t[parent].child[slot] = static_cast<int32_t>(child);
    t[child].parent = static_cast<int32_t>(parent);
  };
  if (n < 2) return t;
  link(0, std::bit_floor(n - 1), 1);  // the root has one child: the top of the in-order tree
  for (uint32_t r = 1; r < n; ++r) {
    const uint32_t low = r & (~r + 1);  // r's lowest set bit: its height in the full tree
    if (low < 2) continue;              // a leaf
    link(r, r - low / 2, 0);            // the left subtree always exists below r
    // The right child, or where it is missing (beyond n - 1) the highest node of the right
    // subtree that exists: its own parent would have been the missing one.
    for (uint32_t step = low / 2; step > 0; step /= 2) {
      if (r + step < n) {
        link(r, r + step, 1);
        break;
      }
    }
  }
  return t;
}

// Post-order (children before parents) of the ranks of a tree; BFS order reversed.
std::vector<uint32_t> bfs_order(const std::vector<TreeNode>& t) {
  std::vector<uint32_t> order;
  order.reserve(t.size());
  for (uint32_t r = 0; r < t.size(); ++r)
    if (t[r].parent < 0) order.push_back(r);
  for (size_t i = 0; i < order.size(); ++i)
    for (int32_t c : t[order[i]].child)
      if (c >= 0) order.push_back(static_cast<uint32_t>(c));
  return order;
}

}  // namespace

// One tree's share of one channel: reduce up (a rank sends a piece to its parent once it has
// that piece from all its children), then broadcast down from the root, pipelined in chunks.
// Streams: each rank's up link (stream r) and its two down links (streams n + 2r + slot).
void tree_channel(Dag& dag, const std::vector<TreeNode>& t, uint64_t bytes, uint64_t chunk,
                  uint32_t slots) {
  const auto n = static_cast<uint32_t>(t.size());
  const std::vector<uint32_t> bfs = bfs_order(t);
  const uint64_t loops = ceil_div(bytes, chunk);
  std::vector<uint32_t> up(n, kNone);    // this piece: rank -> parent
  std::vector<uint32_t> into(n, kNone);  // this piece: parent -> rank
  Window window(3 * size_t{n}, slots);
  for (uint64_t l = 0; l < loops; ++l) {
    const uint64_t piece = split(bytes, loops, l);
    for (auto it = bfs.rbegin(); it != bfs.rend(); ++it) {
      const uint32_t r = *it;
      if (t[r].parent < 0) continue;
      const int32_t c0 = t[r].child[0], c1 = t[r].child[1];
      up[r] = dag.add(r, static_cast<uint32_t>(t[r].parent), piece,
                      {c0 >= 0 ? up[c0] : kNone, c1 >= 0 ? up[c1] : kNone, window.free_slot(r, l)});
      window.sent(r, l, up[r]);
    }
    for (const uint32_t r : bfs) {
      for (int s = 0; s < 2; ++s) {
        const int32_t c = t[r].child[s];
        if (c < 0) continue;
        const size_t stream = n + 2 * size_t{r} + s;
        std::vector<uint32_t> after{window.free_slot(stream, l)};
        if (t[r].parent >= 0) {
          after.push_back(into[r]);
        } else {  // the root: the reduction is complete when all its children's pieces are in
          for (int32_t rc : t[r].child)
            if (rc >= 0) after.push_back(up[rc]);
        }
        into[c] = dag.add(r, static_cast<uint32_t>(c), piece, after);
        window.sent(stream, l, into[c]);
      }
    }
  }
}

// ----- recursive halving-doubling

namespace {

// Blocks [lo, lo + len) of a buffer cut into `blocks` exact parts: their bytes.
uint64_t block_bytes(uint64_t total, uint32_t blocks, uint32_t lo, uint32_t len) {
  const uint64_t base = total / blocks, extra = total % blocks;
  // Blocks below `extra` carry one byte more.
  const uint64_t big = lo >= extra ? 0 : std::min<uint64_t>(len, extra - lo);
  return base * len + big;
}

}  // namespace

// Reduce-scatter by recursive halving over p (a power of two) virtual ranks: at the step with
// distance d each rank keeps the half of its range its bit d selects and sends the other half.
void hd_halving(Dag& dag, HdState& s, const std::vector<uint32_t>& real, uint64_t bytes) {
  const auto p = static_cast<uint32_t>(real.size());
  for (uint32_t len = p; len > 1; len /= 2) {
    const uint32_t d = len / 2;
    std::vector<uint32_t> recv(p, kNone);
    for (uint32_t v = 0; v < p; ++v) {
      const bool upper = (v & d) != 0;
      const uint32_t sent_lo = upper ? s.lo[v] : s.lo[v] + d;
      const uint32_t id = dag.add(real[v], real[v ^ d], block_bytes(bytes, p, sent_lo, d),
                                  {s.last_send[v], s.last_recv[v]});
      s.last_send[v] = id;
      recv[v ^ d] = id;
    }
    for (uint32_t v = 0; v < p; ++v) {
      if ((v & d) != 0) s.lo[v] += d;
      s.last_recv[v] = recv[v];
    }
  }
}

// All-gather by recursive doubling: at distance d = 1, 2, 4, ... each rank sends the range it
// holds (d blocks) to its partner and then holds both.
void hd_doubling(Dag& dag, HdState& s, const std::vector<uint32_t>& real, uint64_t bytes) {
  const auto p = static_cast<uint32_t>(real.size());
  for (uint32_t d = 1; d < p; d *= 2) {
    std::vector<uint32_t> recv(p, kNone);
    for (uint32_t v = 0; v < p; ++v) {
      const uint32_t id = dag.add(real[v], real[v ^ d], block_bytes(bytes, p, s.lo[v], d),
                                  {s.last_send[v], s.last_recv[v]});
      s.last_send[v] = id;
      recv[v ^ d] = id;
    }
    for (uint32_t v = 0; v < p; ++v) {
      s.lo[v] = std::min(s.lo[v], s.lo[v ^ d]);
      s.last_recv[v] = recv[v];
    }
  }
}

// Rabenseifner's all-reduce at any n: with p the largest power of two <= n and r = n - p, the
// first 2r ranks pair up, the even one hands its buffer to the odd one, the p remaining ranks
// run halving then doubling, and the odd ones hand the result back.
void hd_allreduce_channel(Dag& dag, uint32_t n, uint64_t bytes) {
  const uint32_t p = std::bit_floor(n), extra = n - p;
  std::vector<uint32_t> real(p);
  for (uint32_t v = 0; v < p; ++v) real[v] = v < extra ? 2 * v + 1 : v + extra;
  HdState s(p);
  for (uint32_t v = 0; v < extra; ++v) s.last_recv[v] = dag.add(2 * v, 2 * v + 1, bytes, {});
  hd_halving(dag, s, real, bytes);
  hd_doubling(dag, s, real, bytes);
  for (uint32_t v = 0; v < extra; ++v)
    dag.add(2 * v + 1, 2 * v, bytes, {s.last_send[v], s.last_recv[v]});
}

// ----- all-to-all

// Pairwise: exchange k (1..n-1) sends rank i's block to i + k and receives i - k's, one
// MPI_Sendrecv per step (Open MPI's and MPICH's pairwise all-to-all). Rank r is through
// exchange k when its send and the block from r - k have both completed. A send of exchange
// k waits for both its ends to be through exchange k-1: the sender, and the receiver, which
// posts the receive of exchange k only then; a block larger than the eager limit moves by
// rendezvous, when its receive is posted (and an RDMA WRITE needs the buffer the receiver
// names then). So every rank receives one block at a time, as the schedule intends.
void alltoall(Dag& dag, uint32_t n, uint64_t bytes, bool pairwise) {
  std::vector<uint32_t> prev(n, kNone), cur(n, kNone);
  for (uint32_t k = 1; k < n; ++k) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t to = (i + k) % n;
      if (!pairwise) {
        dag.add(i, to, split(bytes, n, to), {});
        continue;
      }
      // Exchange k-1 of rank r: its send prev[r] and its receive, sent by r - (k-1).
      const auto received = [&](uint32_t r) { return k > 1 ? prev[(r + n - (k - 1)) % n] : kNone; };
      cur[i] = dag.add(i, to, split(bytes, n, to), {prev[i], received(i), prev[to], received(to)});
    }
    std::swap(prev, cur);
  }
}

// Gather and scatter as NCCL runs them, grouped sends: every rank's part goes straight to the
// root (gather) or from it (scatter), all posted at once.
void direct(Dag& dag, uint32_t n, uint32_t root, uint64_t bytes, bool to_root) {
  for (uint32_t i = 0; i < n; ++i) {
    if (i != root) dag.add(to_root ? i : root, to_root ? root : i, split(bytes, n, i), {});
  }
}

}  // namespace collective_internal

std::vector<TreeNode> binary_tree(uint32_t ranks, int tree) {
  const std::vector<TreeNode> t0 = collective_internal::tree0(ranks);
  if (tree == 0 || ranks < 2) return t0;
  // Rank r plays the role of tree 0's rank role(r); tree 1 maps roles back to ranks.
  const bool mirror = ranks % 2 == 0;
  auto role = [&](uint32_t r) { return mirror ? ranks - 1 - r : (r + ranks - 1) % ranks; };
  auto rank_of = [&](int32_t x) -> int32_t {
    if (x < 0) return -1;
    const auto u = static_cast<uint32_t>(x);
    return static_cast<int32_t>(mirror ? ranks - 1 - u : (u + 1) % ranks);
  };
  std::vector<TreeNode> t1(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    const TreeNode& n0 = t0[role(r)];
    t1[r].parent = rank_of(n0.parent);
    t1[r].child[0] = rank_of(n0.child[0]);
    t1[r].child[1] = rank_of(n0.child[1]);
  }
  return t1;
}

}  // namespace uet::sim
