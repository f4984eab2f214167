// Recognising a fat-tree or leaf-spine in the routing graph, and the exceptions its down
// links make (control path).
#include "sim/routing/clos.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace uet::sim {
namespace {

constexpr uint32_t kMaxDividend = 1u << 24;  // Div24's range
constexpr uint32_t kMaxDivisor = 1u << 16;

uint32_t isqrt(uint32_t x) {
  auto r = static_cast<uint64_t>(std::sqrt(static_cast<double>(x)));
  while (r * r > x) --r;
  while ((r + 1) * (r + 1) <= x) ++r;
  return static_cast<uint32_t>(r);
}

// The shapes `g` could be, from its host and switch counts and the hosts' ToRs: hosts on
// ToRs 0, 1, ... in equal runs; a fat-tree when the counts fit one, and a leaf-spine.
std::vector<ClosShape> candidates(const RoutingGraph& g) {
  std::vector<ClosShape> out;
  const size_t hosts = g.hosts.size();
  if (hosts == 0 || hosts >= kMaxDividend || g.switches >= kMaxDividend ||
      g.seeds.size() != g.switches || g.first.size() != size_t{g.switches} + 1 ||
      g.hosts[0].tor != 0) {
    return out;
  }
  uint32_t per_tor = 0;
  while (per_tor < hosts && g.hosts[per_tor].tor == 0) ++per_tor;
  if (hosts % per_tor != 0 || per_tor >= kMaxDivisor) return out;
  ClosShape c;
  c.hosts = static_cast<uint32_t>(hosts);
  c.per_tor = per_tor;
  c.tors = c.hosts / per_tor;
  c.switches = g.switches;
  if (c.switches <= c.tors) return out;
  const uint32_t half = isqrt(c.tors / 2);
  // Every link's two ports numbered below 2^32 (port arithmetic in 32 bits).
  const auto fits = [&](uint64_t fabric_links) {
    return 2 * (uint64_t{c.hosts} + fabric_links) < (uint64_t{1} << 32);
  };
  if (half > 0 && 2 * half * half == c.tors && c.switches == 2 * c.tors + half * half &&
      fits(uint64_t{4} * half * half * half)) {
    ClosShape f = c;
    f.half = half;
    f.tops = half * half;
    out.push_back(f);
  }
  c.tops = c.switches - c.tors;
  if (c.tops < kMaxDivisor && fits(uint64_t{c.tors} * c.tops)) out.push_back(c);
  return out;
}

}  // namespace

// Links in connect() order (sim/topology.cc): link L has ports 2L (its first node) and 2L + 1;
// the host links are links 0 .. hosts - 1.
template <class F>
void ClosRouting::for_each_link(uint32_t s, const F& f) const {
  const uint32_t hosts = shape_.hosts, tors = shape_.tors, h = shape_.half;
  if (!shape_.fat_tree()) {
    const uint32_t spines = shape_.tops;
    if (s < tors) {
      for (uint32_t j = 0; j < spines; ++j) f(2 * (hosts + s * spines + j), tors + j);
    } else {
      for (uint32_t l = 0; l < tors; ++l) f(2 * (hosts + l * spines + (s - tors)) + 1, l);
    }
    return;
  }
  // Pod p's links: its ToR-aggregation links (ToR i, aggregation switch a) at
  // pod_first(p) + i*h + a, then its aggregation-core links (a, core j of group a) at
  // pod_first(p) + h*h + a*h + j.
  const auto pod_first = [&](uint32_t p) { return hosts + p * 2 * h * h; };
  if (s < tors) {
    const uint32_t p = s / h, i = s % h;
    for (uint32_t a = 0; a < h; ++a) f(2 * (pod_first(p) + i * h + a), tors + p * h + a);
  } else if (s < core0_) {
    const uint32_t p = (s - tors) / h, a = (s - tors) % h;
    for (uint32_t i = 0; i < h; ++i) f(2 * (pod_first(p) + i * h + a) + 1, p * h + i);
    for (uint32_t j = 0; j < h; ++j) f(2 * (pod_first(p) + h * h + a * h + j), core0_ + a * h + j);
  } else {
    const uint32_t c = s - core0_, a = c / h;
    for (uint32_t q = 0; q < shape_.pods(); ++q) f(2 * (pod_first(q) + h * h + c) + 1, tors + q * h + a);
  }
}

uint32_t ClosRouting::distance(uint32_t s, uint32_t t) const noexcept {
  if (s == t) return 0;
  if (!shape_.fat_tree()) return s < shape_.tors ? 2 : 1;
  const uint32_t pod = pod_div_.div(t);
  if (s < shape_.tors) return pod_div_.div(s) == pod ? 2 : 4;
  if (s < core0_) return pod_div_.div(s - shape_.tors) == pod ? 1 : 3;
  return 2;
}

// The graph is the shape's fabric with some links down: every host on its ToR through its
// numbered port (or that port down), every switch's links those the numbering gives it, in
// order, less the down ones.
bool ClosRouting::matches(const RoutingGraph& g, std::vector<DownLink>& down_links,
                          std::vector<uint32_t>& down_hosts) const {
  for (uint32_t h = 0; h < shape_.hosts; ++h) {
    const RoutingGraph::HostLink& l = g.hosts[h];
    if (l.tor != tor_div_.div(h)) return false;
    if (l.tor_port == kNone) {
      down_hosts.push_back(h);
    } else if (l.tor_port != host_port(h)) {
      return false;
    }
  }
  for (uint32_t s = 0; s < shape_.switches; ++s) {
    uint32_t i = g.first[s];
    const uint32_t end = g.first[s + 1];
    bool same = true;
    for_each_link(s, [&](uint32_t port, uint32_t peer) {
      if (i < end && g.links[i].port == port) {
        same = same && g.links[i].peer == peer;
        ++i;
      } else {
        down_links.push_back(DownLink{s, port, peer});
      }
    });
    if (!same || i != end) return false;
  }
  return true;
}

void ClosRouting::set_shape(const ClosShape& c) {
  shape_ = c;
  tor_div_ = Div24::of(c.per_tor);
  pod_div_ = Div24::of(c.fat_tree() ? c.half : 1);
  up_mod_ = FastMod::of(c.fat_tree() ? c.half : c.tops);
  core0_ = c.first_top();
  agg_stride_ = 2 * c.half;                // ToR i to ToR i + 1: h links on
  core_stride_ = 4 * c.half * c.half;      // pod q to q + 1: 2 h^2 links on
  spine_stride_ = 2 * c.tops;              // leaf l to l + 1: a link per spine on
}

// Where each switch's up ports and its first down port are.
void ClosRouting::number_switches(const RoutingGraph& g) {
  const uint32_t hosts = shape_.hosts, tors = shape_.tors, h = shape_.half;
  sw_.assign(shape_.switches, Switch{0, kNone, kNone, kNone});
  for (uint32_t s = 0; s < shape_.switches; ++s) {
    Switch& w = sw_[s];
    w.seed_mul = g.seeds[s] * 0x9E3779B97F4A7C15ULL;
    if (!shape_.fat_tree()) {
      if (s < tors) {
        w.up = 2 * (hosts + s * shape_.tops);
      } else {
        w.down = 2 * (hosts + (s - tors)) + 1;
      }
      continue;
    }
    const auto pod_first = [&](uint32_t p) { return hosts + p * 2 * h * h; };
    if (s < tors) {
      w.up = 2 * (pod_first(s / h) + (s % h) * h);
    } else if (s < core0_) {
      const uint32_t p = (s - tors) / h, a = (s - tors) % h;
      w.down = 2 * (pod_first(p) + a) + 1;
      w.up = 2 * (pod_first(p) + h * h + a * h);
      w.first_tor = p * h;
    } else {
      w.down = 2 * (hosts + h * h + (s - core0_)) + 1;
    }
  }
}

absl::StatusOr<bool> ClosRouting::build(const RoutingGraph& g) {
  *this = ClosRouting();
  std::vector<DownLink> down_links;
  std::vector<uint32_t> down_hosts;
  for (const ClosShape& c : candidates(g)) {
    set_shape(c);
    down_links.clear();
    down_hosts.clear();
    if (!matches(g, down_links, down_hosts)) continue;
    number_switches(g);
    if (absl::Status s = build_exceptions(g, down_links, down_hosts); !s.ok()) return s;
    return true;
  }
  *this = ClosRouting();
  return false;
}

// The ToRs whose distances the down links change: a switch keeps its intact distance to a
// ToR while some neighbour one hop closer still reaches it (that neighbour's link to it up),
// and, by induction on the distance, every switch does unless one at a down link does not.
std::vector<uint32_t> ClosRouting::changed_columns(const std::vector<DownLink>& down_links) const {
  std::vector<uint32_t> down_ports, ends;
  for (const DownLink& d : down_links) {
    down_ports.push_back(d.port);
    ends.push_back(d.sw);
    ends.push_back(d.peer);
  }
  std::sort(down_ports.begin(), down_ports.end());
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  std::vector<uint32_t> changed;
  for (uint32_t t = 0; t < shape_.tors; ++t) {
    for (uint32_t x : ends) {
      if (x == t) continue;
      const uint32_t d = distance(x, t);
      bool reached = false;
      // The peer's port on x's link `port` is port ^ 1 (a link's two ports 2L, 2L + 1).
      for_each_link(x, [&](uint32_t port, uint32_t peer) {
        reached = reached || (distance(peer, t) + 1 == d &&
                              !std::binary_search(down_ports.begin(), down_ports.end(), port ^ 1));
      });
      if (!reached) {
        changed.push_back(t);
        break;
      }
    }
  }
  return changed;
}

absl::Status ClosRouting::build_exceptions(const RoutingGraph& g,
                                           const std::vector<DownLink>& down_links,
                                           const std::vector<uint32_t>& down_hosts) {
  exceptional_ = !down_links.empty() || !down_hosts.empty();
  if (!exceptional_) return absl::OkStatus();
  host_down_.assign((size_t{shape_.hosts} + 63) / 64, 0);
  for (uint32_t h : down_hosts) host_down_[h / 64] |= uint64_t{1} << (h % 64);
  // A row per switch with a link down (down_links is in switch order): its up ports that are
  // up, in port order, then its down ports.
  row_of_switch_.assign(shape_.switches, kNone);
  for (size_t i = 0; i < down_links.size();) {
    const uint32_t s = down_links[i].sw;
    size_t end = i;
    while (end < down_links.size() && down_links[end].sw == s) ++end;
    Row r;
    r.first_up = static_cast<uint32_t>(row_ports_.size());
    for_each_link(s, [&](uint32_t port, uint32_t peer) {
      bool down = false;
      for (size_t j = i; j < end; ++j) down = down || down_links[j].port == port;
      if (!down && tier(peer) > tier(s)) row_ports_.push_back(port);
    });
    r.up_count = static_cast<uint32_t>(row_ports_.size()) - r.first_up;
    r.up_mod_m = r.up_count == 0 ? 0 : FastMod::of(r.up_count).m;
    r.first_down = static_cast<uint32_t>(row_ports_.size());
    for (size_t j = i; j < end; ++j) row_ports_.push_back(down_links[j].port);
    r.down_count = static_cast<uint32_t>(end - i);
    row_of_switch_[s] = static_cast<uint32_t>(rows_.size());
    rows_.push_back(r);
    i = end;
  }
  // A table column per ToR whose distances changed, computed as the tables compute it.
  column_tors_ = changed_columns(down_links);
  column_of_tor_.assign(shape_.tors, kNone);
  if (column_tors_.empty()) return absl::OkStatus();
  EcmpTable::Columns columns;
  for (uint32_t t : column_tors_) {
    columns.switches.push_back(t);
    columns.first.push_back(static_cast<uint32_t>(columns.switches.size()));
  }
  if (absl::Status s = columns_.build(g, columns, EcmpTable::Options{}); !s.ok()) return s;
  for (uint32_t i = 0; i < column_tors_.size(); ++i) column_of_tor_[column_tors_[i]] = columns_.base(i);
  return absl::OkStatus();
}

uint32_t ClosRouting::port_exceptional(uint32_t s, uint32_t dst_host,
                                       uint64_t flow_hash) const noexcept {
  if (dst_host >= shape_.hosts || s >= shape_.switches) return kNone;
  // A host whose ToR's port to it is down has no route anywhere (the tables' no-route column).
  if ((host_down_[dst_host / 64] >> (dst_host % 64)) & 1) return kNone;
  const uint32_t t = tor_div_.div(dst_host);
  if (s == t) return host_port(dst_host);
  if (const uint32_t base = column_of_tor_[t]; base != kNone) return columns_.port(base, s, flow_hash);
  const uint32_t r = row_of_switch_[s];
  if (r == kNone) return intact_port(s, t, flow_hash);
  // The intact group less the switch's down links.
  const Row& row = rows_[r];
  if (const uint32_t p = down_port(s, t); p != kNone) {
    const uint32_t* down = row_ports_.data() + row.first_down;
    return std::find(down, down + row.down_count, p) != down + row.down_count ? kNone : p;
  }
  if (row.up_count == 0) return kNone;
  uint64_t x = flow_hash ^ sw_[s].seed_mul;
  const uint64_t h = splitmix64(x);
  const FastMod mod{row.up_mod_m, row.up_count};
  return row_ports_[row.first_up + mod.mod(static_cast<uint32_t>(h >> 32))];
}

size_t ClosRouting::bytes() const noexcept {
  return sw_.size() * sizeof(Switch) + host_down_.size() * sizeof(uint64_t) +
         (column_of_tor_.size() + column_tors_.size() + row_of_switch_.size() +
          row_ports_.size()) *
             sizeof(uint32_t) +
         columns_.bytes() + rows_.size() * sizeof(Row);
}

}  // namespace uet::sim
