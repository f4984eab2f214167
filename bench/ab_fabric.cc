#include "bench/ab_fabric.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace uet::ab {
namespace {

using Kind = Fabric::Kind;

Time fabric_delay(const Fabric& f) noexcept {
  return f.fabric_delay >= 0 ? f.fabric_delay : f.link_delay;
}
Time core_delay(const Fabric& f) noexcept {
  return f.core_delay >= 0 ? f.core_delay : fabric_delay(f);
}

struct Tiers {
  sim::LinkConfig host, fabric, core;
};
Tiers tiers(const Fabric& f) {
  Tiers t;
  t.host.gbps = f.host_gbps;
  t.host.delay = f.link_delay;
  t.fabric.gbps = f.fabric_gbps;
  t.fabric.delay = fabric_delay(f);
  t.fabric.loss = f.fabric_loss;
  t.core = t.fabric;
  if (f.core_gbps > 0) t.core.gbps = f.core_gbps;
  t.core.delay = core_delay(f);
  return t;
}

sim::LeafSpineConfig leaf_spine_config(const Fabric& f) {
  sim::LeafSpineConfig c;
  c.leaves = f.leaves;
  c.spines = f.spines;
  c.hosts_per_leaf = f.hosts_per_leaf;
  c.host_link = tiers(f).host;
  c.fabric_link = tiers(f).fabric;
  return c;
}

sim::FatTreeConfig fat_tree_config(const Fabric& f) {
  sim::FatTreeConfig c;
  c.k = f.k;
  c.hosts_per_tor = f.hosts_per_tor;
  c.host_link = tiers(f).host;
  c.tor_agg_link = tiers(f).fabric;
  c.agg_core_link = tiers(f).core;
  return c;
}

// The families' sizes from the Fabric, their links from its tiers (global links: the core's).
template <typename Config>
Config with_links(Config c, const Fabric& f) {
  const Tiers t = tiers(f);
  c.host_link = t.host;
  if constexpr (requires { c.global_link; }) {
    c.local_link = t.fabric;
    c.global_link = t.core;
  } else {
    c.fabric_link = t.fabric;
  }
  return c;
}

// A graph's switch-to-switch links with the run's fabric loss.
sim::GraphTopology lossy_graph(const Fabric& f) {
  sim::GraphTopology g = *f.graph;
  for (sim::GraphTopology::Link& l : g.links) {
    if (!l.a.host && !l.b.host) l.config.loss = f.fabric_loss;
  }
  return g;
}

sim::TopologySize size_of(const Fabric& f) noexcept {
  switch (f.kind) {
    case Kind::kDragonfly:
      return sim::dragonfly_size(f.dragonfly);
    case Kind::kDragonflyPlus:
      return sim::dragonfly_plus_size(f.dragonfly_plus);
    case Kind::kTorus:
      return sim::torus_size(f.torus);
    case Kind::kHypercube:
      return sim::hypercube_size(f.hypercube);
    case Kind::kRail:
      return sim::rail_size(f.rail);
    case Kind::kGraph:
      return f.graph ? sim::graph_size(*f.graph) : sim::TopologySize{};
    default:
      return {};
  }
}

bool closed_form(const Fabric& f) noexcept {
  return f.kind == Kind::kLeafSpine || f.kind == Kind::kFatTree;
}

// Links between two hosts of a leaf-spine or fat-tree.
uint32_t closed_form_links(const Fabric& f, uint32_t a, uint32_t b) {
  if (f.kind == Kind::kLeafSpine) return a / f.hosts_per_leaf == b / f.hosts_per_leaf ? 2 : 4;
  const uint32_t per_tor = f.hosts_per_tor > 0 ? f.hosts_per_tor : f.k / 2;
  const uint32_t per_pod = per_tor * (f.k / 2);
  if (a / per_tor == b / per_tor) return 2;
  if (a / per_pod == b / per_pod) return 4;
  return 6;
}

}  // namespace

const char* to_string(Fabric::Kind k) noexcept {
  switch (k) {
    case Kind::kLeafSpine:
      return "leafspine";
    case Kind::kFatTree:
      return "fattree";
    case Kind::kDragonfly:
      return "dragonfly";
    case Kind::kDragonflyPlus:
      return "dragonflyplus";
    case Kind::kTorus:
      return "torus";
    case Kind::kHypercube:
      return "hypercube";
    case Kind::kRail:
      return "rail";
    case Kind::kGraph:
      return "graph";
  }
  return "?";
}

absl::Status check_fabric(const Fabric& f) {
  switch (f.kind) {
    case Kind::kLeafSpine:
      return sim::check_leaf_spine(leaf_spine_config(f));
    case Kind::kFatTree:
      return sim::check_fat_tree(fat_tree_config(f));
    case Kind::kDragonfly:
      return sim::check_dragonfly(with_links(f.dragonfly, f));
    case Kind::kDragonflyPlus:
      return sim::check_dragonfly_plus(with_links(f.dragonfly_plus, f));
    case Kind::kTorus:
      return sim::check_torus(with_links(f.torus, f));
    case Kind::kHypercube:
      return sim::check_hypercube(with_links(f.hypercube, f));
    case Kind::kRail:
      return sim::check_rail(with_links(f.rail, f));
    case Kind::kGraph:
      if (!f.graph) return absl::InvalidArgumentError("graph: no graph file read");
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("unknown fabric kind");
}

namespace {

absl::Status build_family(sim::Network& net, const Fabric& f, sim::TopologyLayout* layout) {
  switch (f.kind) {
    case Kind::kLeafSpine:
      return sim::build_leaf_spine(net, leaf_spine_config(f));
    case Kind::kFatTree:
      return sim::build_fat_tree(net, fat_tree_config(f));
    case Kind::kDragonfly:
      return sim::build_dragonfly(net, with_links(f.dragonfly, f), layout);
    case Kind::kDragonflyPlus:
      return sim::build_dragonfly_plus(net, with_links(f.dragonfly_plus, f), layout);
    case Kind::kTorus:
      return sim::build_torus(net, with_links(f.torus, f), layout);
    case Kind::kHypercube:
      return sim::build_hypercube(net, with_links(f.hypercube, f), layout);
    case Kind::kRail:
      return sim::build_rail(net, with_links(f.rail, f), layout);
    case Kind::kGraph:
      if (!f.graph) return absl::InvalidArgumentError("graph: no graph file read");
      return f.fabric_loss > 0 ? sim::build_graph(net, lossy_graph(f))
                               : sim::build_graph(net, *f.graph);
  }
  return absl::InvalidArgumentError("unknown fabric kind");
}

// The routing mode on the built fabric. A dragonfly's and Dragonfly+'s intermediates are
// groups (Kim et al., ISCA 2008, §4.2: Valiant through a random group); everywhere else one
// switch each, Valiant's original scheme on any graph (a Clos's random switch may be a leaf:
// the detour is real, if longer than a spine's). Dimension order needs the ports' dimensions.
// Group-minimal paths (RoutingConfig::group_minimal) need the groups: only dragonflies have them.
absl::Status apply_routing(sim::Network& net, const Fabric& f, const sim::TopologyLayout& layout) {
  const sim::RoutingConfig r = routing_of(f);
  const bool grouped = f.kind == Kind::kDragonfly || f.kind == Kind::kDragonflyPlus;
  const bool by_groups = grouped && r.group_minimal;
  // Lossless classes read the groups (Tagger) or the torus dimensions (the dateline).
  const bool classes = r.deadlock_free != sim::DeadlockFree::kOff;
  if (r.mode == sim::RoutingMode::kMinimal && !r.dimension_order && !by_groups && !classes) {
    return absl::OkStatus();
  }
  if ((r.mode != sim::RoutingMode::kMinimal || by_groups || classes) && grouped) {
    if (absl::Status s = net.set_switch_groups(layout.group); !s.ok()) return s;
  }
  if (r.dimension_order) {
    if (f.kind != Kind::kTorus && f.kind != Kind::kHypercube) {
      return absl::InvalidArgumentError("--dimension_order: torus or hypercube only");
    }
    if (absl::Status s = net.set_port_classes(layout.port_dim); !s.ok()) return s;
  } else if (classes && f.kind == Kind::kTorus) {
    if (absl::Status s = net.set_port_classes(layout.port_dim); !s.ok()) return s;
  }
  return net.set_routing(r);
}

}  // namespace

sim::RoutingConfig routing_of(const Fabric& f) noexcept {
  sim::RoutingConfig r = f.routing;
  const bool torus = f.kind == Kind::kTorus;
  if (f.pfc && f.lossless_dimension_order && (torus || f.kind == Kind::kHypercube) &&
      r.mode == sim::RoutingMode::kMinimal && !r.dimension_order) {
    r.dimension_order = true;
    if (torus) r.deadlock_free = sim::DeadlockFree::kTagger;
  }
  return r;
}

absl::Status build_fabric(sim::Network& net, const Fabric& f, sim::TopologyLayout* layout) {
  sim::TopologyLayout own;
  if (layout == nullptr) layout = &own;
  if (absl::Status s = build_family(net, f, layout); !s.ok()) return s;
  return apply_routing(net, f, *layout);
}

bool failure_candidate(const Fabric& f, const sim::Network& net, const sim::TopologyLayout& layout,
                       uint32_t first_top, uint32_t p) {
  // From the nodes, not the ports: split over ranks, another rank's ports are not stored.
  const sim::Node a = net.node(net.port_node(p));
  const sim::Node b = net.node(net.port_node(sim::Network::peer_of(p)));
  if (a.kind == sim::NodeKind::kHost || b.kind == sim::NodeKind::kHost) return false;
  switch (f.kind) {
    case Kind::kLeafSpine:
    case Kind::kFatTree:
      return a.index >= first_top || b.index >= first_top;
    case Kind::kDragonfly:
    case Kind::kDragonflyPlus:
      return layout.group[a.index] != layout.group[b.index];
    default:
      return true;
  }
}

uint32_t host_count(const Fabric& f) noexcept {
  if (f.kind == Kind::kLeafSpine) return f.leaves * f.hosts_per_leaf;
  if (f.kind == Kind::kFatTree) {
    const uint32_t per_tor = f.hosts_per_tor > 0 ? f.hosts_per_tor : f.k / 2;
    return f.k * (f.k / 2) * per_tor;
  }
  return static_cast<uint32_t>(std::min<uint64_t>(size_of(f).hosts, UINT32_MAX));
}

uint32_t top_tier_links(const Fabric& f) noexcept {
  switch (f.kind) {
    case Kind::kLeafSpine:
      return f.leaves * f.spines;
    case Kind::kFatTree:
      return f.k * (f.k / 2) * (f.k / 2);  // every core has one link per pod
    case Kind::kDragonfly: {
      const sim::DragonflyConfig& c = f.dragonfly;
      return static_cast<uint32_t>(uint64_t{c.groups()} * c.a * c.h / 2);
    }
    case Kind::kDragonflyPlus: {
      const sim::DragonflyPlusConfig& c = f.dragonfly_plus;
      return static_cast<uint32_t>(uint64_t{c.groups()} * c.spines * c.h / 2);
    }
    default:
      return static_cast<uint32_t>(std::min<uint64_t>(size_of(f).fabric_links, UINT32_MAX));
  }
}

const char* top_tier_name(const Fabric& f) noexcept {
  switch (f.kind) {
    case Kind::kLeafSpine:
    case Kind::kFatTree:
      return "spine or core";
    case Kind::kDragonfly:
    case Kind::kDragonflyPlus:
      return "global";
    case Kind::kRail:
      return "leaf-spine";
    default:
      return "switch-to-switch";
  }
}

uint64_t port_count(const Fabric& f) noexcept {
  // Two ports per link: host links, then leaf-spine or ToR-aggregation and aggregation-core.
  if (f.kind == Kind::kLeafSpine) return 2 * (uint64_t{host_count(f)} + top_tier_links(f));
  if (f.kind == Kind::kFatTree)
    return 2 * (uint64_t{host_count(f)} + 2 * uint64_t{top_tier_links(f)});
  return 2 * size_of(f).links;
}

uint32_t switch_count(const Fabric& f) noexcept {
  if (f.kind == Kind::kLeafSpine) return f.leaves + f.spines;
  if (f.kind == Kind::kFatTree)
    return f.k * f.k + (f.k / 2) * (f.k / 2);  // k pods of k/2 ToRs and k/2 aggregation, cores
  return static_cast<uint32_t>(std::min<uint64_t>(size_of(f).switches, UINT32_MAX));
}

uint32_t tor_count(const Fabric& f) noexcept {
  switch (f.kind) {
    case Kind::kLeafSpine:
      return f.leaves;
    case Kind::kFatTree:
      return f.k * (f.k / 2);
    case Kind::kDragonflyPlus:
      return f.dragonfly_plus.groups() * f.dragonfly_plus.leaves;
    case Kind::kRail:
      return f.rail.blocks() * f.rail.gpus_per_server;
    default:
      return switch_count(f);  // every switch may have hosts (a graph: at most)
  }
}

Time path_delay(const Fabric& f, uint32_t hops) noexcept {
  Time d = 2 * f.link_delay;  // the two host links
  if (hops >= 4) d += 2 * fabric_delay(f);
  if (hops >= 6) d += 2 * core_delay(f);
  return d;
}

uint32_t host_path_links(const Fabric& f, uint32_t a, uint32_t b) {
  if (closed_form(f)) return closed_form_links(f, a, b);
  sim::NetworkConfig nc;
  nc.frame_capacity = 256;
  sim::Network net(nc);
  if (!build_fabric(net, f, nullptr).ok() || a >= net.num_hosts() || b >= net.num_hosts()) return 0;
  sim::FlowSpec flow;
  flow.src = a;
  flow.dst = b;
  auto paths = IdealPaths::compute(f, net, {flow});
  return paths.ok() ? paths->links(a, b) : 0;
}

// ----- IdealPaths

namespace {

// From switch `from`: every switch's fewest links and, over paths of that many, the least
// propagation (breadth first: a switch's delay is final before any switch one link further
// is taken from the queue).
void search(const sim::Network& net, uint32_t from, std::vector<uint32_t>& links,
            std::vector<Time>& delay, std::vector<uint32_t>& queue) {
  std::fill(links.begin(), links.end(), sim::kNone);
  links[from] = 0;
  delay[from] = 0;
  queue.assign(1, from);
  for (size_t i = 0; i < queue.size(); ++i) {
    const uint32_t s = queue[i];
    for (uint32_t p : net.node(net.switch_node(s)).ports) {
      // From the nodes, not the ports: a rank of a split fabric has not stored them yet.
      const sim::Node peer = net.node(net.port_node(sim::Network::peer_of(p)));
      if (peer.kind == sim::NodeKind::kHost) continue;
      const Time d = delay[s] + net.link_config(p).delay;
      if (links[peer.index] == sim::kNone) {
        links[peer.index] = links[s] + 1;
        delay[peer.index] = d;
        queue.push_back(peer.index);
      } else if (links[peer.index] == links[s] + 1) {
        delay[peer.index] = std::min(delay[peer.index], d);
      }
    }
  }
}

uint64_t key(uint32_t a, uint32_t b) noexcept { return uint64_t{a} << 32 | b; }

}  // namespace

absl::StatusOr<IdealPaths> IdealPaths::compute(const Fabric& f, const sim::Network& net,
                                               const std::vector<sim::FlowSpec>& flows) {
  IdealPaths p;
  p.fabric_ = &f;
  if (closed_form(f)) return p;
  p.searched_ = true;
  for (uint32_t h = 0; h < net.num_hosts(); ++h) {
    const uint32_t nic = net.host(h).port;
    p.tor_.push_back(net.node(net.port_node(sim::Network::peer_of(nic))).index);
    p.host_delay_.push_back(net.link_config(nic).delay);
  }
  // The switch pairs needed, by source: each flow's, and each notice's (a prerequisite's host
  // to its dependent's, Player).
  std::vector<std::pair<uint32_t, uint32_t>> need;
  for (const sim::FlowSpec& fl : flows) {
    if (!fl.compute) need.emplace_back(p.tor_[fl.src], p.tor_[fl.dst]);
    for (uint32_t pre : fl.after) {
      if (pre < flows.size()) need.emplace_back(p.tor_[flows[pre].src], p.tor_[fl.src]);
    }
  }
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  std::vector<uint32_t> links(net.num_switches()), queue;
  std::vector<Time> delay(net.num_switches());
  for (size_t i = 0; i < need.size(); ++i) {
    if (i == 0 || need[i].first != need[i - 1].first)
      search(net, need[i].first, links, delay, queue);
    p.between_.emplace(key(need[i].first, need[i].second),
                       Path{links[need[i].second], delay[need[i].second]});
  }
  for (const sim::FlowSpec& fl : flows) {
    if (!fl.compute && p.between_.at(key(p.tor_[fl.src], p.tor_[fl.dst])).links == sim::kNone) {
      return absl::InvalidArgumentError(absl::StrCat("flow ", fl.id, ": no path from host ", fl.src,
                                                     " to host ", fl.dst, " on the ",
                                                     to_string(f.kind), " fabric"));
    }
  }
  return p;
}

IdealPaths::Path IdealPaths::path(uint32_t a, uint32_t b) const {
  auto it = between_.find(key(tor_[a], tor_[b]));
  if (it == between_.end() || it->second.links == sim::kNone)
    return Path{2, host_delay_[a] + host_delay_[b]};
  return Path{it->second.links + 2, it->second.delay + host_delay_[a] + host_delay_[b]};
}

uint32_t IdealPaths::links(uint32_t a, uint32_t b) const {
  return searched_ ? path(a, b).links : closed_form_links(*fabric_, a, b);
}

Time IdealPaths::propagation(uint32_t a, uint32_t b) const {
  return searched_ ? path(a, b).delay : path_delay(*fabric_, closed_form_links(*fabric_, a, b));
}

}  // namespace uet::ab
