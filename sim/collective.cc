#include "sim/collective.h"

#include <algorithm>
#include <bit>
#include <initializer_list>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace uet::sim {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
static_assert(kMaxCollectiveChannels - 1 <= UINT16_MAX, "a channel fits FlowSpec::channel");

absl::Status bad(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("collective: ", std::string(what)));
}

// Part i of `total` cut into `parts` pieces that differ by at most one byte.
constexpr uint64_t split(uint64_t total, uint64_t parts, uint64_t i) noexcept {
  return total / parts + (i < total % parts ? 1 : 0);
}

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) noexcept { return a / b + (a % b != 0); }

// Appends flows, resolving ranks to hosts and tagging each with the channel being built;
// `after` may name kNone (no such prerequisite).
class Dag {
 public:
  Dag(CollectivePlan& plan, const std::vector<uint32_t>& hosts) : plan_(plan), hosts_(hosts) {}

  // The channel the flows added from now on belong to (FlowSpec::channel).
  void set_channel(uint32_t c) { channel_ = static_cast<uint16_t>(c); }

  uint32_t add(uint32_t src, uint32_t dst, uint64_t bytes, std::initializer_list<uint32_t> after) {
    const auto id = static_cast<uint32_t>(plan_.flows.size());
    FlowSpec f{id, hosts_[src], hosts_[dst], bytes, 0, {}};
    f.channel = channel_;
    for (uint32_t a : after)
      if (a != kNone && std::find(f.after.begin(), f.after.end(), a) == f.after.end())
        f.after.push_back(a);
    plan_.flows.push_back(std::move(f));
    plan_.sent_by_rank[src] += bytes;
    return id;
  }
  // For prerequisite lists built at run time (a tree root waits on all its children).
  uint32_t add(uint32_t src, uint32_t dst, uint64_t bytes, const std::vector<uint32_t>& after) {
    const uint32_t id = add(src, dst, bytes, {});
    for (uint32_t a : after)
      if (a != kNone) plan_.flows[id].after.push_back(a);
    return id;
  }

 private:
  CollectivePlan& plan_;
  const std::vector<uint32_t>& hosts_;
  uint16_t channel_ = 0;
};

// ----- ring (and chain): the part each rank sends at each step.

uint32_t ring_steps(Collective c, uint32_t n) {
  return c == Collective::kAllReduce ? 2 * (n - 1) : n - 1;
}

// All-reduce and reduce-scatter: at step k < n-1 rank i passes part i-k on, reduced with its
// own; after n-1 steps it holds part i+1 complete, which the all-gather phase circulates.
// All-gather: rank i starts with part i and at step k passes part i-k on.
uint32_t ring_part(Collective c, uint32_t n, uint32_t k, uint32_t i) {
  if (c == Collective::kAllGather || k < n - 1) return (i + n - k % n) % n;
  const uint32_t g = k - (n - 1);
  return (i + 1 + n - g) % n;
}

uint64_t ring_loops(uint64_t channel_bytes, uint32_t n, uint64_t chunk) {
  return ceil_div(channel_bytes, uint64_t{n} * chunk);
}

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

// One channel of the ring: `loops` pieces of the channel's share, each cut into n parts; a
// step's send waits for the part it reduces or forwards (its predecessor's previous step) and
// for a free slot in its stream to the next rank.
void ring_channel(Dag& dag, Collective c, uint32_t n, uint64_t channel_bytes, uint64_t chunk,
                  uint32_t slots) {
  const uint32_t steps = ring_steps(c, n);
  const uint64_t loops = ring_loops(channel_bytes, n, chunk);
  std::vector<uint32_t> prev_step(n, kNone), step(n, kNone);
  Window window(n, slots);
  for (uint64_t l = 0; l < loops; ++l) {
    const uint64_t piece = split(channel_bytes, loops, l);
    for (uint32_t k = 0; k < steps; ++k) {
      const uint64_t m = l * steps + k;
      for (uint32_t i = 0; i < n; ++i) {
        const uint64_t bytes = split(piece, n, ring_part(c, n, k, i));
        const uint32_t from_pred = k > 0 ? prev_step[(i + n - 1) % n] : kNone;
        step[i] = dag.add(i, (i + 1) % n, bytes, {from_pred, window.free_slot(i, m)});
        window.sent(i, m, step[i]);
      }
      std::swap(prev_step, step);
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

// Blocks [lo, lo + len) of a buffer cut into `blocks` exact parts: their bytes.
uint64_t block_bytes(uint64_t total, uint32_t blocks, uint32_t lo, uint32_t len) {
  const uint64_t base = total / blocks, extra = total % blocks;
  // Blocks below `extra` carry one byte more.
  const uint64_t big = lo >= extra ? 0 : std::min<uint64_t>(len, extra - lo);
  return base * len + big;
}

// Per virtual rank: the range of blocks it holds and its last send and receive.
struct HdState {
  std::vector<uint32_t> lo, last_send, last_recv;
  explicit HdState(uint32_t p) : lo(p, 0), last_send(p, kNone), last_recv(p, kNone) {}
};

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

// ----- sizes and counts, checked before any flow is built.

bool is_chain(const CollectiveSpec& s) {
  return s.collective == Collective::kBroadcast || s.collective == Collective::kReduce;
}

bool is_ring(const CollectiveSpec& s) { return s.algo == CollectiveAlgo::kRing && !is_chain(s); }

// Collectives that move each rank's part once, unchunked, on one channel.
bool is_direct(Collective c) {
  return c == Collective::kAllToAll || c == Collective::kGather || c == Collective::kScatter;
}


// The smallest share of the buffer a channel can carry: an element in every part.
uint64_t min_channel_bytes(const CollectiveSpec& s, uint32_t n) {
  uint64_t parts = n;
  if (is_chain(s)) parts = 1;
  if (s.algo == CollectiveAlgo::kTree) parts = 2;
  if (s.algo == CollectiveAlgo::kHalvingDoubling) parts = std::bit_floor(n);
  return parts * kCollectiveElementBytes;
}

uint64_t flow_count(const CollectiveSpec& s, uint32_t n, uint64_t bytes, uint32_t channels) {
  if (s.collective == Collective::kAllToAll) return uint64_t{n} * (n - 1);
  if (is_direct(s.collective)) return n - 1;
  uint64_t flows = 0;
  for (uint32_t c = 0; c < channels; ++c) {
    const uint64_t share = split(bytes, channels, c);
    if (is_ring(s)) {
      flows += ring_loops(share, n, s.chunk_bytes) * ring_steps(s.collective, n) * n;
    } else if (s.algo == CollectiveAlgo::kRing) {  // broadcast and reduce chains
      flows += ceil_div(share, s.chunk_bytes) * (n - 1);
    } else if (s.algo == CollectiveAlgo::kTree) {
      for (uint64_t t = 0; t < 2; ++t)
        flows += ceil_div(split(share, 2, t), s.chunk_bytes) * 2 * uint64_t{n - 1};
    } else {
      const uint32_t p = std::bit_floor(n);
      const uint64_t steps = std::countr_zero(p);
      const uint64_t phases = s.collective == Collective::kAllReduce ? 2 : 1;
      flows += phases * steps * p + 2 * uint64_t{n - p};
    }
  }
  return flows;
}

}  // namespace

std::string_view to_string(Collective c) noexcept {
  switch (c) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kReduce:
      return "reduce";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
  }
  return "?";
}

std::string_view to_string(CollectiveAlgo a) noexcept {
  switch (a) {
    case CollectiveAlgo::kRing:
      return "ring";
    case CollectiveAlgo::kTree:
      return "tree";
    case CollectiveAlgo::kHalvingDoubling:
      return "hd";
    case CollectiveAlgo::kPairwise:
      return "pairwise";
    case CollectiveAlgo::kBatched:
      return "batched";
  }
  return "?";
}

absl::StatusOr<Collective> parse_collective(std::string_view name) {
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast, Collective::kAllToAll, Collective::kReduce,
                       Collective::kGather, Collective::kScatter}) {
    if (name == to_string(c)) return c;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown collective \"", std::string(name),
      "\": allreduce, reducescatter, allgather, broadcast, alltoall, reduce, gather, scatter"));
}

absl::StatusOr<CollectiveAlgo> parse_collective_algo(std::string_view name) {
  for (CollectiveAlgo a :
       {CollectiveAlgo::kRing, CollectiveAlgo::kTree, CollectiveAlgo::kHalvingDoubling,
        CollectiveAlgo::kPairwise, CollectiveAlgo::kBatched}) {
    if (name == to_string(a)) return a;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown algorithm \"", std::string(name),
                                                 "\": ring, tree, hd, pairwise, batched"));
}

bool collective_has_root(Collective c) noexcept {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}

bool collective_reduces(Collective c) noexcept {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

std::vector<CollectiveAlgo> collective_algos(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return {CollectiveAlgo::kRing, CollectiveAlgo::kTree, CollectiveAlgo::kHalvingDoubling};
    case Collective::kReduceScatter:
    case Collective::kAllGather:
      return {CollectiveAlgo::kRing, CollectiveAlgo::kHalvingDoubling};
    case Collective::kBroadcast:
    case Collective::kReduce:
      return {CollectiveAlgo::kRing};
    case Collective::kAllToAll:
      return {CollectiveAlgo::kPairwise, CollectiveAlgo::kBatched};
    case Collective::kGather:
    case Collective::kScatter:
      return {CollectiveAlgo::kBatched};
  }
  return {};
}

double bus_bandwidth_factor(Collective c, uint32_t ranks) noexcept {
  const double n = ranks;
  switch (c) {
    case Collective::kAllReduce:
      return 2 * (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return 1;
    default:
      return (n - 1) / n;
  }
}

uint64_t collective_aligned_bytes(Collective c, uint32_t ranks, uint64_t bytes) noexcept {
  const bool by_rank = c == Collective::kReduceScatter || c == Collective::kAllGather ||
                       c == Collective::kAllToAll || c == Collective::kGather ||
                       c == Collective::kScatter;
  const uint64_t unit =
      by_rank ? uint64_t{kCollectiveElementBytes} * ranks : kCollectiveElementBytes;
  return bytes / unit * unit;
}

absl::StatusOr<CollectivePlan> collective_flows(const CollectiveSpec& spec) {
  const auto n = static_cast<uint32_t>(spec.hosts.size());
  if (n < 2 || n > kMaxWorkloadHosts) {
    return bad(absl::StrCat("ranks ", n, " out of range [2, ", kMaxWorkloadHosts, "]"));
  }
  {
    std::vector<uint32_t> sorted = spec.hosts;
    std::sort(sorted.begin(), sorted.end());
    if (auto d = std::adjacent_find(sorted.begin(), sorted.end()); d != sorted.end()) {
      return bad(absl::StrCat("host ", *d, " runs two ranks (one rank per host)"));
    }
  }
  const std::vector<CollectiveAlgo> algos = collective_algos(spec.collective);
  if (std::find(algos.begin(), algos.end(), spec.algo) == algos.end()) {
    std::vector<std::string> names;
    for (CollectiveAlgo a : algos) names.emplace_back(std::string(to_string(a)));
    return bad(absl::StrCat(std::string(to_string(spec.collective)), " has no algorithm ",
                            std::string(to_string(spec.algo)), ": ", absl::StrJoin(names, ", ")));
  }
  if (spec.algo == CollectiveAlgo::kHalvingDoubling && spec.collective != Collective::kAllReduce &&
      !std::has_single_bit(n)) {
    return bad(absl::StrCat("hd ", std::string(to_string(spec.collective)),
                            " needs a power-of-two rank count, ", "not ", n,
                            " (hd all-reduce takes any)"));
  }
  if (spec.channels < 1 || spec.channels > kMaxCollectiveChannels) {
    return bad(absl::StrCat("channels ", spec.channels, " out of range [1, ",
                            kMaxCollectiveChannels, "]"));
  }
  if (spec.chunk_bytes < kMinCollectiveChunk || spec.chunk_bytes > kMaxCollectiveChunk) {
    return bad(absl::StrCat("chunk_bytes ", spec.chunk_bytes, " out of range [",
                            kMinCollectiveChunk, ", ", kMaxCollectiveChunk, "]"));
  }
  if (spec.slots < 1 || spec.slots > kMaxCollectiveSlots) {
    return bad(absl::StrCat("slots ", spec.slots, " out of range [1, ", kMaxCollectiveSlots, "]"));
  }
  if (collective_has_root(spec.collective) && spec.root >= n) {
    return bad(absl::StrCat("root ", spec.root, " out of range [0, ", n - 1, "]"));
  }
  if (spec.bytes > kMaxCollectiveBytes) {
    return bad(absl::StrCat("bytes ", spec.bytes, " out of range [1, 2^40]"));
  }
  const uint64_t bytes = collective_aligned_bytes(spec.collective, n, spec.bytes);
  const uint64_t min_share = min_channel_bytes(spec, n);
  if (bytes < min_share) {
    return bad(absl::StrCat(
        "bytes ", spec.bytes, " too small for ", std::string(to_string(spec.collective)), " ",
        std::string(to_string(spec.algo)), " on ", n, " ranks: at least ", min_share));
  }
  const uint32_t channels = is_direct(spec.collective)
                                ? 1
                                : static_cast<uint32_t>(std::min<uint64_t>(
                                      spec.channels, std::max<uint64_t>(1, bytes / min_share)));
  if (const uint64_t count = flow_count(spec, n, bytes, channels); count > kMaxWorkloadFlows) {
    return bad(absl::StrCat(std::string(to_string(spec.collective)), " ",
                            std::string(to_string(spec.algo)), " of ", bytes, " bytes on ", n,
                            " ranks makes ", count, " flows, at most ", kMaxWorkloadFlows,
                            ": raise chunk_bytes or lower channels"));
  }

  CollectivePlan plan;
  plan.bytes = bytes;
  plan.channels = channels;
  plan.sent_by_rank.assign(n, 0);
  plan.flows.reserve(flow_count(spec, n, bytes, channels));
  Dag dag(plan, spec.hosts);
  if (spec.collective == Collective::kAllToAll) {
    alltoall(dag, n, bytes, spec.algo == CollectiveAlgo::kPairwise);
    return plan;
  }
  if (is_direct(spec.collective)) {
    direct(dag, n, spec.root, bytes, spec.collective == Collective::kGather);
    return plan;
  }
  std::vector<TreeNode> trees[2];
  if (spec.algo == CollectiveAlgo::kTree)
    trees[0] = binary_tree(n, 0), trees[1] = binary_tree(n, 1);
  for (uint32_t c = 0; c < channels; ++c) {
    const uint64_t share = split(bytes, channels, c);
    dag.set_channel(c);
    switch (spec.algo) {
      case CollectiveAlgo::kRing:
        if (spec.collective == Collective::kBroadcast) {
          chain_channel(dag, n, spec.root, share, spec.chunk_bytes, spec.slots);
        } else if (spec.collective == Collective::kReduce) {
          // The chain that ends at the root: each rank adds its own and passes the piece on.
          chain_channel(dag, n, (spec.root + 1) % n, share, spec.chunk_bytes, spec.slots);
        } else {
          ring_channel(dag, spec.collective, n, share, spec.chunk_bytes, spec.slots);
        }
        break;
      case CollectiveAlgo::kTree:
        for (int t = 0; t < 2; ++t)
          tree_channel(dag, trees[t], split(share, 2, t), spec.chunk_bytes, spec.slots);
        break;
      case CollectiveAlgo::kHalvingDoubling: {
        if (spec.collective == Collective::kAllReduce) {
          hd_allreduce_channel(dag, n, share);
          break;
        }
        std::vector<uint32_t> real(n);
        std::iota(real.begin(), real.end(), 0u);
        HdState s(n);
        if (spec.collective == Collective::kReduceScatter) {
          hd_halving(dag, s, real, share);
        } else {
          for (uint32_t v = 0; v < n; ++v) s.lo[v] = v;
          hd_doubling(dag, s, real, share);
        }
        break;
      }
      default:
        break;
    }
  }
  return plan;
}

absl::StatusOr<CollectivePlan> hierarchical_flows(const CollectiveSpec& spec,
                                                  const ServerSpec& server) {
  const auto n = static_cast<uint32_t>(spec.hosts.size());
  const uint32_t g = server.gpus;
  if (spec.collective != Collective::kAllReduce) {
    return bad(absl::StrCat("the hierarchical form models all-reduce only, not ",
                            std::string(to_string(spec.collective))));
  }
  if (g < 2 || g > 64 || n % g != 0 || n / g < 2) {
    return bad(absl::StrCat("gpus per server ", g, " must be in [2, 64] and divide the ", n,
                            " ranks into at least 2 servers"));
  }
  if (!(server.gbps > 0 && server.gbps <= 1e6) || server.latency < 0) {
    return bad(absl::StrCat("intra-server link ", server.gbps, " Gb/s, ", server.latency,
                            " ps: rate in (0, 10^6], latency >= 0"));
  }
  const uint64_t bytes = collective_aligned_bytes(spec.collective, n, spec.bytes);
  const uint64_t share = bytes / g / kCollectiveElementBytes * kCollectiveElementBytes;
  const Time intra =
      server.latency + static_cast<Time>(static_cast<double>(bytes) * (g - 1) / g * 8 /
                                         server.gbps * 1000.0);  // bits / (Gb/s) = ns; x1000 ps
  CollectivePlan plan;
  plan.bytes = bytes;
  plan.sent_by_rank.assign(n, 0);
  // Per rank: the intra-server reduce-scatter before, the all-gather after.
  std::vector<uint32_t> before(n), after(n);
  for (uint32_t r = 0; r < n; ++r) {
    before[r] = static_cast<uint32_t>(plan.flows.size());
    FlowSpec f{before[r], spec.hosts[r], spec.hosts[r], 0, intra, {}};
    f.compute = true;
    plan.flows.push_back(f);
  }
  for (uint32_t r = 0; r < n; ++r) {
    after[r] = static_cast<uint32_t>(plan.flows.size());
    FlowSpec f{after[r], spec.hosts[r], spec.hosts[r], 0, intra, {before[r]}};
    f.compute = true;
    plan.flows.push_back(f);
  }
  absl::flat_hash_map<uint32_t, uint32_t> rank_of;  // host -> rank
  rank_of.reserve(n);
  for (uint32_t r = 0; r < n; ++r) rank_of[spec.hosts[r]] = r;
  const uint32_t servers = n / g;
  plan.channels = spec.channels;
  for (uint32_t rail = 0; rail < g; ++rail) {
    CollectiveSpec s = spec;
    s.hosts.resize(servers);
    for (uint32_t k = 0; k < servers; ++k) s.hosts[k] = spec.hosts[k * g + rail];
    s.bytes = share;
    auto p = collective_flows(s);
    if (!p.ok()) return p.status();
    plan.channels = std::min(plan.channels, p->channels);
    const auto base = static_cast<uint32_t>(plan.flows.size());
    append_flows(plan.flows, std::move(p->flows));
    if (plan.flows.size() > kMaxWorkloadFlows) {
      return bad(absl::StrCat("more than ", kMaxWorkloadFlows, " flows: raise chunk_bytes"));
    }
    for (uint32_t id = base; id < plan.flows.size(); ++id) {
      FlowSpec& f = plan.flows[id];
      const uint32_t src = rank_of[f.src], dst = rank_of[f.dst];
      f.after.push_back(before[src]);
      plan.flows[after[src]].after.push_back(id);
      plan.flows[after[dst]].after.push_back(id);
      plan.sent_by_rank[src] += f.bytes;
    }
  }
  return plan;
}

std::vector<TreeNode> binary_tree(uint32_t ranks, int tree) {
  const std::vector<TreeNode> t0 = tree0(ranks);
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

absl::StatusOr<ParallelGroup> parse_parallel_group(std::string_view name) {
  if (name == "world") return ParallelGroup::kWorld;
  if (name == "dp") return ParallelGroup::kData;
  if (name == "tp") return ParallelGroup::kTensor;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown group \"", std::string(name), "\": world, dp, tp"));
}

absl::StatusOr<std::vector<std::vector<uint32_t>>> communicators(
    const std::vector<uint32_t>& rank_hosts, uint32_t dp, uint32_t tp, ParallelGroup group) {
  const auto ranks = static_cast<uint64_t>(rank_hosts.size());
  if (dp < 1 || tp < 1 || uint64_t{dp} * tp != ranks) {
    return bad(absl::StrCat("dp ", dp, " x tp ", tp, " must equal the ", ranks, " ranks"));
  }
  std::vector<std::vector<uint32_t>> out;
  switch (group) {
    case ParallelGroup::kWorld:
      out.push_back(rank_hosts);
      break;
    case ParallelGroup::kTensor:
      for (uint32_t d = 0; d < dp; ++d)
        out.emplace_back(rank_hosts.begin() + size_t{d} * tp,
                         rank_hosts.begin() + size_t{d + 1} * tp);
      break;
    case ParallelGroup::kData:
      for (uint32_t t = 0; t < tp; ++t) {
        std::vector<uint32_t> c(dp);
        for (uint32_t d = 0; d < dp; ++d) c[d] = rank_hosts[size_t{d} * tp + t];
        out.push_back(std::move(c));
      }
      break;
  }
  const size_t members = out.front().size();
  if (members < 2) {
    return bad(absl::StrCat("the ", group == ParallelGroup::kTensor ? "tp" : "dp",
                            " communicators have 1 rank: nothing to exchange"));
  }
  return out;
}

absl::StatusOr<RankPlacement> parse_rank_placement(std::string_view name) {
  if (name == "contiguous") return RankPlacement::kContiguous;
  if (name == "strided") return RankPlacement::kStrided;
  if (name == "random") return RankPlacement::kRandom;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown placement \"", std::string(name), "\": contiguous, strided, random"));
}

absl::StatusOr<std::vector<uint32_t>> place_ranks(uint32_t ranks, uint32_t hosts,
                                                  RankPlacement placement, Rng& rng) {
  if (hosts < 2 || hosts > kMaxWorkloadHosts) {
    return bad(absl::StrCat("hosts ", hosts, " out of range [2, ", kMaxWorkloadHosts, "]"));
  }
  if (ranks < 2 || ranks > hosts) {
    return bad(absl::StrCat("ranks ", ranks, " out of range [2, ", hosts, "] (one rank per host)"));
  }
  std::vector<uint32_t> h(ranks);
  switch (placement) {
    case RankPlacement::kContiguous:
      std::iota(h.begin(), h.end(), 0u);
      break;
    case RankPlacement::kStrided:
      for (uint32_t r = 0; r < ranks; ++r)
        h[r] = static_cast<uint32_t>(uint64_t{r} * hosts / ranks);
      break;
    case RankPlacement::kRandom: {
      std::vector<uint32_t> all(hosts);
      std::iota(all.begin(), all.end(), 0u);
      for (uint32_t i = 0; i < ranks; ++i) {  // a partial Fisher-Yates shuffle
        const auto j = static_cast<uint32_t>(i + rng.below(hosts - i));
        std::swap(all[i], all[j]);
        h[i] = all[i];
      }
      break;
    }
  }
  return h;
}

}  // namespace uet::sim
