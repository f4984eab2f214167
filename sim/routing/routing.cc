// Routing's tables (control path) and its non-minimal choices: Valiant's and UGAL-L's first
// switch, and the hops of a frame on its way to its intermediate group.
#include "sim/routing/routing.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace uet::sim {

absl::Status check_routing(const RoutingConfig& config) {
  if (config.mode != RoutingMode::kMinimal && config.mode != RoutingMode::kValiant &&
      config.mode != RoutingMode::kUgal) {
    return absl::InvalidArgumentError(
        absl::StrCat("routing mode ", static_cast<int>(config.mode),
                     " is none of minimal (0), valiant (1), ugal (2)"));
  }
  if (config.deadlock_free != DeadlockFree::kOff && config.deadlock_free != DeadlockFree::kTagger) {
    return absl::InvalidArgumentError(absl::StrCat("deadlock_free ",
                                                   static_cast<int>(config.deadlock_free),
                                                   " is none of off (0), tagger (1)"));
  }
  if (config.ugal_signal != UgalSignal::kQueue && config.ugal_signal != UgalSignal::kDownstream) {
    return absl::InvalidArgumentError(absl::StrCat("ugal_signal ",
                                                   static_cast<int>(config.ugal_signal),
                                                   " is none of queue (0), downstream (1)"));
  }
  // Two local hops in the intermediate group, one class: the tagger's classes would not
  // break cycles among them.
  if (config.valiant_via_switch && config.deadlock_free != DeadlockFree::kOff) {
    return absl::InvalidArgumentError(
        "valiant_via_switch: no lossless-class rule for a detour through a switch (deadlock_free "
        "must be off)");
  }
  if (config.ugal_bias_bytes > (uint64_t{1} << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ugal_bias_bytes ", config.ugal_bias_bytes, " out of range [0, 1073741824]"));
  }
  return absl::OkStatus();
}

absl::Status Routing::build(const RoutingGraph& g, const RoutingConfig& config) {
  if (absl::Status s = check_routing(config); !s.ok()) return s;
  config_ = config;
  memo_.fill(Memo{});
  if (absl::Status s = build_minimal(g); !s.ok()) return s;
  absl::StatusOr<LosslessClasses> lossless = LosslessClasses::build(g, config_, kLosslessPriorities);
  if (!lossless.ok()) return lossless.status();
  lossless_ = *std::move(lossless);
  groups_ = EcmpTable();
  group_of_.clear();
  peer_.clear();
  group_first_.clear();
  group_switches_.clear();
  if (minimal()) return absl::OkStatus();
  return build_groups(g);
}

// Computed where the graph is a fat-tree or leaf-spine (clos.h) and the mode allows; else
// tables: a column per ToR (switch with a host), numbered as the hosts first reach them, then
// one of no routes, for hosts whose link is down or reaches no switch.
absl::Status Routing::build_minimal(const RoutingGraph& g) {
  structured_ = false;
  tors_ = EcmpTable();
  dst_.clear();
  hosts_ = static_cast<uint32_t>(g.hosts.size());
  if (!g.group_of_switch.empty() && g.group_of_switch.size() != g.switches) {
    return absl::InvalidArgumentError(absl::StrCat("switch groups: ", g.group_of_switch.size(),
                                                   " entries for ", g.switches, " switches"));
  }
  // Group-minimal paths are a Clos's shortest ones only without groups.
  const bool by_groups = config_.group_minimal && !g.group_of_switch.empty();
  if (config_.computes_clos(!g.group_of_switch.empty())) {
    absl::StatusOr<bool> built = clos_.build(g);
    if (!built.ok()) return built.status();
    if (*built) {
      dst_.shrink_to_fit();
      structured_ = true;
      return absl::OkStatus();
    }
  }
  clos_ = ClosRouting();
  std::vector<uint32_t> column_of(g.switches, kNone);
  EcmpTable::Columns columns;
  for (const RoutingGraph::HostLink& h : g.hosts) {
    if (h.tor != kNone && column_of[h.tor] == kNone) {
      column_of[h.tor] = columns.count();
      columns.switches.push_back(h.tor);
      columns.first.push_back(static_cast<uint32_t>(columns.switches.size()));
    }
  }
  const uint32_t no_route = columns.count();
  columns.first.push_back(static_cast<uint32_t>(columns.switches.size()));
  const EcmpTable::Options options{.distances = config_.mode == RoutingMode::kUgal,
                                   .dimension_order = config_.dimension_order,
                                   .group_minimal = by_groups};
  if (absl::Status s = tors_.build(g, columns, options); !s.ok()) return s;
  tor_base_.clear();
  if (config_.valiant_via_switch && !minimal()) {
    tor_base_.assign(g.switches, kNone);
    for (uint32_t s = 0; s < g.switches; ++s) {
      if (column_of[s] != kNone) tor_base_[s] = tors_.base(column_of[s]);
    }
  }
  dst_.reserve(g.hosts.size());
  for (const RoutingGraph::HostLink& h : g.hosts) {
    Dst d{h.tor, kNone, tors_.base(no_route)};
    if (h.tor != kNone && h.tor_port != kNone) {
      d.tor_port = h.tor_port;
      d.route_base = tors_.base(column_of[h.tor]);
    }
    dst_.push_back(d);
  }
  return absl::OkStatus();
}

// A column per intermediate group, its targets the group's switches; UGAL also walks a
// detour's hops (peer_).
absl::Status Routing::build_groups(const RoutingGraph& g) {
  const uint32_t n_sw = g.switches;
  if (g.group_of_switch.empty()) {
    group_of_.resize(n_sw);
    for (uint32_t s = 0; s < n_sw; ++s) group_of_[s] = s;
  } else if (g.group_of_switch.size() != n_sw) {
    return absl::InvalidArgumentError(absl::StrCat("switch groups: ", g.group_of_switch.size(),
                                                   " entries for ", n_sw, " switches"));
  } else {
    group_of_.assign(g.group_of_switch.begin(), g.group_of_switch.end());
  }
  const uint32_t n_groups =
      group_of_.empty() ? 0 : *std::max_element(group_of_.begin(), group_of_.end()) + 1;
  EcmpTable::Columns columns;
  columns.first.assign(size_t{n_groups} + 1, 0);
  for (uint32_t grp : group_of_) ++columns.first[grp + 1];
  for (uint32_t c = 0; c < n_groups; ++c) {
    if (columns.first[c + 1] == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("switch groups: group ", c, " of [0, ", n_groups, ") has no switch"));
    }
    columns.first[c + 1] += columns.first[c];
  }
  columns.switches.resize(n_sw);
  std::vector<uint32_t> next(columns.first.begin(), columns.first.end() - 1);
  for (uint32_t s = 0; s < n_sw; ++s) columns.switches[next[group_of_[s]]++] = s;
  const EcmpTable::Options options{
      .distances = false,
      .dimension_order = config_.dimension_order,
      .group_minimal = config_.group_minimal && !g.group_of_switch.empty()};
  if (absl::Status s = groups_.build(g, columns, options); !s.ok()) return s;
  if (config_.valiant_via_switch) {
    group_first_ = columns.first;
    group_switches_ = columns.switches;
  }
  groups_mod_ = FastMod::of(std::max<uint32_t>(n_groups, 1));
  via_mul_ = mix64(g.seed, 0x1A7E2ED1A7E5EEDULL) * 0x9E3779B97F4A7C15ULL;
  if (config_.mode == RoutingMode::kUgal) {
    for (const RoutingGraph::Link& l : g.links) {
      if (l.port >= peer_.size()) peer_.resize(size_t{l.port} + 1, kNone);
      peer_[l.port] = l.peer;
    }
  }
  return absl::OkStatus();
}

// valiant_via_switch: traffic within a group stays minimal (booksim2 detours only frames
// bound for another group).
bool Routing::local_only(uint32_t s, uint32_t dst_host) const noexcept {
  const uint32_t t = dst_[dst_host].tor;
  return config_.valiant_via_switch && t < group_of_.size() && group_of_[t] == group_of_[s];
}

// Valiant: every frame detours, but where its first switch is its destination's ToR (no path
// to spread) or already in its intermediate group (the detour is the minimal path).
uint8_t Routing::valiant_state(uint32_t s, uint32_t dst_host, uint64_t flow_hash) const noexcept {
  if (dst_host >= hosts_ || s == dst_[dst_host].tor || s >= group_of_.size() ||
      group_of_[s] == via_group(flow_hash) || local_only(s, dst_host)) {
    return RouteState::kDecided;
  }
  return RouteState::kDecided | RouteState::kDetour;
}

uint32_t Routing::walk_to_group(uint32_t s, uint32_t via, uint64_t flow_hash,
                                uint32_t& hops) const noexcept {
  hops = 0;
  while (group_of_[s] != via) {
    const uint32_t p = groups_.port(groups_.base(via), s, flow_hash);
    if (p == kNone || p >= peer_.size() || hops >= group_of_.size()) return kNone;
    s = peer_[p];
    ++hops;
  }
  return s;
}

uint32_t Routing::via_switch(uint64_t flow_hash) const noexcept {
  if (group_switches_.empty()) return kNone;
  const uint32_t via = via_group(flow_hash);
  uint64_t x = flow_hash ^ via_mul_;
  // The low half of the draw whose high half chose the group.
  const auto pick = static_cast<uint32_t>(splitmix64(x));
  return group_switches_[group_first_[via] + pick % (group_first_[via + 1] - group_first_[via])];
}

uint32_t Routing::toward_via_switch(uint32_t s, uint64_t flow_hash) const noexcept {
  const uint32_t w = via_switch(flow_hash);
  if (w == kNone || w == s || w >= tor_base_.size() || tor_base_[w] == kNone) return kNone;
  return tors_.port(tor_base_[w], s, flow_hash);
}

// The two candidates at the first switch and their paths' hops to the destination host: the
// minimal one, and the Valiant one through the switch the frame would enter its group at (or
// on through via_switch()).
Routing::UgalChoice Routing::ugal_choice(uint32_t s, uint32_t dst_host,
                                         uint64_t flow_hash) const noexcept {
  UgalChoice c;
  if (dst_host >= hosts_ || s >= group_of_.size()) return c;
  const Dst& d = dst_[dst_host];
  const uint32_t via = via_group(flow_hash);
  if (s == d.tor || d.tor_port == kNone || group_of_[s] == via || local_only(s, dst_host)) return c;
  c.min_port = tors_.port(d.route_base, s, flow_hash);
  const uint32_t via_port = groups_.port(groups_.base(via), s, flow_hash);
  if (c.min_port == kNone || via_port == kNone) return c;
  uint32_t hops = 0;
  uint32_t v = walk_to_group(s, via, flow_hash, hops);
  if (v == kNone) return c;
  if (const uint32_t w = via_switch(flow_hash);
      w != kNone && w != v && w < tor_base_.size() && tor_base_[w] != kNone) {
    const uint32_t in_group = tors_.distance(tor_base_[w], v);
    if (in_group == EcmpTable::kNoDistance) return c;
    hops += in_group;
    v = w;
  }
  const uint32_t rest = tors_.distance(d.route_base, v);
  if (rest == EcmpTable::kNoDistance) return c;
  // Links to the host: the switch hops, and its own link.
  c.min_hops = tors_.distance(d.route_base, s) + 1;
  c.via_port = via_port;
  c.via_hops = hops + rest + 1;
  return c;
}

uint32_t Routing::port_stateful(uint32_t s, uint32_t dst_host, uint64_t flow_hash,
                                uint8_t& state) const noexcept {
  constexpr uint8_t kOnDetour = RouteState::kDetour | RouteState::kReached;
  if ((state & kOnDetour) == RouteState::kDetour && s < group_of_.size()) {
    const uint32_t via = via_group(flow_hash);
    if (group_of_[s] != via) {
      const uint32_t p = groups_.port(groups_.base(via), s, flow_hash);
      if (p != kNone) return p;
    } else if (const uint32_t p = toward_via_switch(s, flow_hash); p != kNone) {
      return p;
    }
    // At the intermediate (group, or switch), or cut off from it since the first switch
    // chose it: minimal from here.
    state |= RouteState::kReached;
  }
  return port(s, dst_host, flow_hash);
}

// Structured routes with links down; out of line, so that its call does not cost
// port_remember a stack frame.
[[gnu::noinline]] uint32_t Routing::remember_exceptional(Memo& m, uint32_t s, uint32_t dst_host,
                                                         uint64_t flow_hash) const noexcept {
  const uint32_t out = clos_.port(s, dst_host, flow_hash);
  m = Memo{flow_hash, minimal() ? s : kNone, dst_host, out};
  return out;
}

uint32_t Routing::port_remember(Memo& m, uint32_t s, uint32_t dst_host,
                                uint64_t flow_hash) const noexcept {
  if (structured_ && clos_.exceptional()) [[unlikely]]
    return remember_exceptional(m, s, dst_host, flow_hash);
  const uint32_t out = structured_ ? clos_.port_intact(s, dst_host, flow_hash)
                                   : table_port(s, dst_host, flow_hash);
  m = Memo{flow_hash, minimal() ? s : kNone, dst_host, out};
  return out;
}

size_t Routing::table_bytes() const noexcept {
  return clos_.bytes() + tors_.bytes() + lossless_.bytes() + dst_.size() * sizeof(Dst) + groups_.bytes() +
         (group_of_.size() + peer_.size() + group_first_.size() + group_switches_.size() +
          tor_base_.size()) * sizeof(uint32_t);
}

}  // namespace uet::sim
