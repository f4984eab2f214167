#include "sim/partition.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace uet::sim {

absl::StatusOr<int64_t> OneRank::exchange(std::vector<std::vector<uint8_t>>& out,
                                          std::vector<std::span<const uint8_t>>& in,
                                          int64_t bound) {
  for (auto& o : out) o.clear();
  in.assign(1, {});
  return bound;
}

std::vector<std::vector<uint8_t>> OneRank::all_gather(std::span<const uint8_t> mine) {
  return {std::vector<uint8_t>(mine.begin(), mine.end())};
}

void OneRank::abort(std::string_view why) {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(why.size()), why.data());
  std::exit(1);
}

namespace {

constexpr uint16_t kUnset = UINT16_MAX;

// The switch a host's NIC link reaches.
uint32_t tor_of(const Network& net, uint32_t host) {
  return net.port_node(Network::peer_of(net.host(host).port));
}

// The ToRs in `ranks` contiguous blocks by switch number, each host with its ToR.
absl::Status place_tors_and_hosts(const Network& net, uint16_t ranks,
                                  std::vector<uint16_t>& rank_of, std::vector<uint32_t>& tors) {
  std::vector<bool> is_tor(rank_of.size(), false);
  for (uint32_t h = 0; h < net.num_hosts(); ++h) {
    const uint32_t tor = tor_of(net, h);
    if (net.node(tor).kind != NodeKind::kSwitch) {
      return absl::InvalidArgumentError(
          absl::StrCat("split_fabric: host ", h, " is not connected to a switch"));
    }
    is_tor[tor] = true;
  }
  for (uint32_t s = 0; s < net.num_switches(); ++s) {
    if (is_tor[net.switch_node(s)]) tors.push_back(net.switch_node(s));
  }
  if (tors.empty()) return absl::InvalidArgumentError("split_fabric: no host to place");
  for (size_t i = 0; i < tors.size(); ++i) {
    if (rank_of[tors[i]] == kUnset)
      rank_of[tors[i]] = static_cast<uint16_t>(i * ranks / tors.size());
  }
  for (uint32_t h = 0; h < net.num_hosts(); ++h) {
    rank_of[net.host_node(h)] = rank_of[tor_of(net, h)];
  }
  return absl::OkStatus();
}

// The next tier away from the ToRs: each unplaced neighbour of `tier`, in node order, goes to
// the rank it has most links to; ties to the rank whose even block of this tier holds it (so
// switch numbers run in blocks per rank: builders connect consecutive switches together, and
// a link's two ports share a page of Network's port array, which a cut link makes both ranks
// hold), else to the rank with fewest switches of this tier so far.
std::vector<uint32_t> place_next_tier(const Network& net, const std::vector<uint32_t>& tier,
                                      uint16_t ranks, std::vector<uint16_t>& rank_of) {
  std::vector<uint32_t> next;
  std::vector<bool> found(rank_of.size(), false);  // a mark per node, not a search of `next`
  for (uint32_t n : tier) {
    for (uint32_t p : net.node(n).ports) {
      const uint32_t m = net.port_node(Network::peer_of(p));
      if (rank_of[m] == kUnset && !found[m]) {
        found[m] = true;
        next.push_back(m);
      }
    }
  }
  std::sort(next.begin(), next.end());
  std::vector<uint32_t> placed(ranks, 0);  // switches of this tier per rank
  std::vector<uint32_t> links(ranks);
  for (size_t i = 0; i < next.size(); ++i) {
    const uint32_t m = next[i];
    const auto block = static_cast<uint16_t>(i * ranks / next.size());
    std::fill(links.begin(), links.end(), 0);
    for (uint32_t p : net.node(m).ports) {
      const uint16_t r = rank_of[net.port_node(Network::peer_of(p))];
      if (r != kUnset) ++links[r];
    }
    uint16_t best = 0;
    for (uint16_t r = 1; r < ranks; ++r) {
      const bool tie = links[r] == links[best];
      if (links[r] > links[best] || (tie && r == block) ||
          (tie && best != block && placed[r] < placed[best])) {
        best = r;
      }
    }
    rank_of[m] = best;
    ++placed[best];
  }
  return next;
}

// The links between ranks, each with a delay to give the lookahead.
absl::Status find_cut_links(const Network& net, FabricSplit& split) {
  const std::vector<uint16_t>& rank_of = split.rank_of_node;
  for (uint32_t p = 0; p < net.num_ports(); p += 2) {
    const uint32_t q = Network::peer_of(p);
    if (rank_of[net.port_node(p)] == rank_of[net.port_node(q)]) continue;
    ++split.cut_links;
    const Time delay = net.link_config(p).delay;
    if (delay <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("split_fabric: the link ", net.node(net.port_node(p)).name, " - ",
                       net.node(net.port_node(q)).name,
                       " joins two ranks and has no delay: ranks cannot run ahead of each other"));
    }
    split.lookahead = std::min(split.lookahead, delay);
  }
  return absl::OkStatus();
}

// Whole groups to ranks (split_fabric's `group_of_switch`), when there are enough of them.
absl::Status place_groups(const Network& net, uint16_t ranks, std::span<const uint32_t> group,
                          std::vector<uint16_t>& rank_of) {
  if (group.empty()) return absl::OkStatus();
  if (group.size() != net.num_switches()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "split_fabric: ", group.size(), " switch groups for ", net.num_switches(), " switches"));
  }
  uint64_t groups = 0;
  for (uint32_t g : group) {
    if (g != kNone) groups = std::max<uint64_t>(groups, uint64_t{g} + 1);
  }
  if (groups < ranks) return absl::OkStatus();
  for (uint32_t s = 0; s < group.size(); ++s) {
    if (group[s] != kNone)
      rank_of[net.switch_node(s)] = static_cast<uint16_t>(group[s] * ranks / groups);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FabricSplit> split_fabric(const Network& net, uint16_t ranks,
                                         std::span<const uint32_t> group_of_switch) {
  const auto nodes = static_cast<uint32_t>(net.num_hosts() + net.num_switches());
  FabricSplit split;
  split.rank_of_node.assign(nodes, 0);
  if (ranks < 1) return absl::InvalidArgumentError("split_fabric: ranks must be >= 1");
  std::vector<uint16_t> rank_of(nodes, kUnset);
  std::vector<uint32_t> tors;  // switch node ids
  if (absl::Status s = place_groups(net, ranks, group_of_switch, rank_of); !s.ok()) return s;
  if (absl::Status s = place_tors_and_hosts(net, ranks, rank_of, tors); !s.ok()) return s;
  // Tier by tier away from the ToRs: each switch next to the placed ones goes where most of
  // its placed neighbours are.
  for (std::vector<uint32_t> tier = std::move(tors); !tier.empty();) {
    tier = place_next_tier(net, tier, ranks, rank_of);
  }
  for (uint32_t n = 0; n < nodes; ++n) {
    if (rank_of[n] == kUnset) {
      return absl::InvalidArgumentError(
          absl::StrCat("split_fabric: node ", net.node(n).name, " is not connected to a host"));
    }
    split.rank_of_node[n] = rank_of[n];
  }
  if (absl::Status s = find_cut_links(net, split); !s.ok()) return s;
  return split;
}

bool run_windows(Network& net, Ranks& ranks, Time lookahead, Time until, WindowStats* stats,
                 const std::atomic<bool>* stop) {
  using Clock = std::chrono::steady_clock;
  WindowStats local;
  WindowStats& st = stats != nullptr ? *stats : local;
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  // A stop anywhere (-1 wins the minimum on every rank) ends the run after the same window.
  auto stopping = [stop] { return stop != nullptr && stop->load(std::memory_order_relaxed); };
  std::vector<std::span<const uint8_t>> in;
  const uint64_t sent_before = net.remote_records();
  // A window starts at the earliest event anywhere, so an idle stretch costs nothing. The
  // first one's start takes a reduction; each exchange carries the next one's.
  auto t = Clock::now();
  Time next = ranks.min_all(stopping() ? -1 : net.next_event_time());
  st.sync_s += since(t);
  while (next >= 0 && next <= until) {
    // Whatever a rank sends from inside the window is due a cut link's delay after it was
    // sent, so after the window's end.
    const Time end = lookahead >= until - next ? until : next + lookahead - 1;
    t = Clock::now();
    net.run_until(end);
    // After the exchange, this rank's earliest event is its own or one it was sent; so the
    // earliest anywhere is the smallest over the ranks of their own and what they sent.
    const Time bound = stopping() ? -1 : std::min(net.next_event_time(), net.earliest_sent());
    std::vector<std::vector<uint8_t>>& out = net.outboxes();  // the window's sends written out
    st.events_s += since(t);
    for (const auto& o : out) st.bytes_sent += o.size();
    t = Clock::now();
    absl::StatusOr<int64_t> earliest = ranks.exchange(out, in, bound);
    if (!earliest.ok()) {
      ranks.abort(absl::StrCat("rank ", ranks.rank(), ": exchange: ", earliest.status().message()));
    }
    st.sync_s += since(t);
    t = Clock::now();
    for (const auto& records : in) {
      if (absl::Status s = net.deliver_remote(records); !s.ok()) {
        ranks.abort(absl::StrCat("rank ", ranks.rank(), ": ", s.message()));
      }
    }
    st.deliver_s += since(t);
    ++st.windows;
    next = *earliest;
    if (end == until) break;
  }
  st.records_sent += net.remote_records() - sent_before;
  if (next < 0) return false;
  net.run_until(until);  // the clock to `until` (no event is due by then any more)
  return true;
}

}  // namespace uet::sim
