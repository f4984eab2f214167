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
#include "sim/collective_internal.h"

namespace uet::sim {
namespace {

using collective_internal::ceil_div;
using collective_internal::Dag;
using collective_internal::HdState;
using collective_internal::ring_loops;
using collective_internal::ring_steps;
using collective_internal::split;

absl::Status bad(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("collective: ", std::string(what)));
}

// `name` as the one of `values` that `name_of` names; an unknown name is refused naming the
// `kind` and every known name, in the order given.
template <typename E, typename NameOf>
absl::StatusOr<E> parse_named(std::string_view kind, std::string_view name,
                              std::initializer_list<E> values, NameOf name_of) {
  for (E v : values) {
    if (name == name_of(v)) return v;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown ", std::string(kind), " \"", std::string(name), "\": ",
      absl::StrJoin(values, ", ", [&](std::string* out, E v) { out->append(name_of(v)); })));
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
      flows += ring_loops(share, n, s.chunk_bytes, s.chunk_steps) * ring_steps(s.collective, n) * n;
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
  return parse_named(
      "collective", name,
      {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
       Collective::kBroadcast, Collective::kAllToAll, Collective::kReduce, Collective::kGather,
       Collective::kScatter},
      [](Collective c) { return to_string(c); });
}

absl::StatusOr<CollectiveAlgo> parse_collective_algo(std::string_view name) {
  return parse_named("algorithm", name,
                     {CollectiveAlgo::kRing, CollectiveAlgo::kTree,
                      CollectiveAlgo::kHalvingDoubling, CollectiveAlgo::kPairwise,
                      CollectiveAlgo::kBatched},
                     [](CollectiveAlgo a) { return to_string(a); });
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

namespace {

// The spec's fields within their bounds, and an algorithm the collective has at this n.
absl::Status check_spec(const CollectiveSpec& spec, uint32_t n) {
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
  if (spec.chunk_steps < 1 || spec.chunk_steps > kMaxCollectiveChunkSteps) {
    return bad(absl::StrCat("chunk_steps ", spec.chunk_steps, " out of range [1, ",
                            kMaxCollectiveChunkSteps, "]"));
  }
  if (collective_has_root(spec.collective) && spec.root >= n) {
    return bad(absl::StrCat("root ", spec.root, " out of range [0, ", n - 1, "]"));
  }
  if (spec.bytes > kMaxCollectiveBytes) {
    return bad(absl::StrCat("bytes ", spec.bytes, " out of range [1, 2^40]"));
  }
  return absl::OkStatus();
}

// The channels the aligned `bytes` fill (as asked, or fewer so that no share is below an
// element per part); refused when a share cannot be that large or the flows would be too many.
absl::StatusOr<uint32_t> plan_channels(const CollectiveSpec& spec, uint32_t n, uint64_t bytes) {
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
  return channels;
}

// Halving-doubling's reduce-scatter or all-gather at a power of two: every rank its own
// virtual rank.
void hd_channel(Dag& dag, Collective c, uint32_t n, uint64_t share) {
  std::vector<uint32_t> real(n);
  std::iota(real.begin(), real.end(), 0u);
  HdState s(n);
  if (c == Collective::kReduceScatter) {
    collective_internal::hd_halving(dag, s, real, share);
  } else {
    for (uint32_t v = 0; v < n; ++v) s.lo[v] = v;
    collective_internal::hd_doubling(dag, s, real, share);
  }
}

// The flows of one channel's share of the buffer, by the spec's algorithm.
void build_channel(Dag& dag, const CollectiveSpec& spec, uint32_t n, uint64_t share,
                   const std::vector<TreeNode> (&trees)[2]) {
  namespace ci = collective_internal;
  switch (spec.algo) {
    case CollectiveAlgo::kRing:
      if (spec.collective == Collective::kBroadcast) {
        ci::chain_channel(dag, n, spec.root, share, spec.chunk_bytes, spec.slots);
      } else if (spec.collective == Collective::kReduce) {
        // The chain that ends at the root: each rank adds its own and passes the piece on.
        ci::chain_channel(dag, n, (spec.root + 1) % n, share, spec.chunk_bytes, spec.slots);
      } else {
        ci::ring_channel(dag, spec.collective, n, share, spec.chunk_bytes, spec.slots,
                         spec.chunk_steps);
      }
      break;
    case CollectiveAlgo::kTree:
      for (int t = 0; t < 2; ++t)
        ci::tree_channel(dag, trees[t], split(share, 2, t), spec.chunk_bytes, spec.slots);
      break;
    case CollectiveAlgo::kHalvingDoubling:
      if (spec.collective == Collective::kAllReduce) {
        ci::hd_allreduce_channel(dag, n, share);
      } else {
        hd_channel(dag, spec.collective, n, share);
      }
      break;
    default:
      break;
  }
}

}  // namespace

absl::StatusOr<CollectivePlan> collective_flows(const CollectiveSpec& spec) {
  const auto n = static_cast<uint32_t>(spec.hosts.size());
  if (n < 2 || n > kMaxWorkloadHosts) {
    return bad(absl::StrCat("ranks ", n, " out of range [2, ", kMaxWorkloadHosts, "]"));
  }
  if (absl::Status st = check_spec(spec, n); !st.ok()) return st;
  const uint64_t bytes = collective_aligned_bytes(spec.collective, n, spec.bytes);
  const absl::StatusOr<uint32_t> channels = plan_channels(spec, n, bytes);
  if (!channels.ok()) return channels.status();

  CollectivePlan plan;
  plan.bytes = bytes;
  plan.channels = *channels;
  plan.sent_by_rank.assign(n, 0);
  plan.flows.reserve(flow_count(spec, n, bytes, *channels));
  Dag dag(plan, spec.hosts);
  if (spec.collective == Collective::kAllToAll) {
    collective_internal::alltoall(dag, n, bytes, spec.algo == CollectiveAlgo::kPairwise);
    return plan;
  }
  if (is_direct(spec.collective)) {
    collective_internal::direct(dag, n, spec.root, bytes, spec.collective == Collective::kGather);
    return plan;
  }
  std::vector<TreeNode> trees[2];
  if (spec.algo == CollectiveAlgo::kTree)
    trees[0] = binary_tree(n, 0), trees[1] = binary_tree(n, 1);
  for (uint32_t c = 0; c < *channels; ++c) {
    dag.set_channel(c);
    build_channel(dag, spec, n, split(bytes, *channels, c), trees);
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

absl::StatusOr<ParallelGroup> parse_parallel_group(std::string_view name) {
  static constexpr std::string_view kNames[] = {"world", "dp", "tp"};  // by value
  return parse_named("group", name,
                     {ParallelGroup::kWorld, ParallelGroup::kData, ParallelGroup::kTensor},
                     [](ParallelGroup g) { return kNames[static_cast<size_t>(g)]; });
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
  static constexpr std::string_view kNames[] = {"contiguous", "strided", "random"};  // by value
  return parse_named("placement", name,
                     {RankPlacement::kContiguous, RankPlacement::kStrided, RankPlacement::kRandom},
                     [](RankPlacement p) { return kNames[static_cast<size_t>(p)]; });
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
