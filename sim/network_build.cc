// Building a fabric (control path): its nodes and links, their checks, and the graph its
// routes are computed from (sim/routing/), at finalize() and again when a link's state changes.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/network.h"

namespace uet::sim {

uint32_t Network::add_node(NodeKind kind, uint32_t index, absl::string_view name) {
  const auto n = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(NodeEntry{kind, index});
  names_.append(name.data(), name.size());
  name_end_.push_back(static_cast<uint32_t>(names_.size()));
  return n;
}

// Counting sort of the ports by node: each node's stay in the order connected.
void Network::index_node_ports() {
  port_first_.assign(nodes_.size() + 1, 0);
  for (const uint32_t n : port_node_) ++port_first_[n + 1];
  for (size_t n = 0; n < nodes_.size(); ++n) port_first_[n + 1] += port_first_[n];
  node_ports_.resize(port_node_.size());
  std::vector<uint32_t> at(port_first_.begin(), port_first_.end() - 1);
  for (uint32_t p = 0; p < port_node_.size(); ++p) node_ports_[at[port_node_[p]]++] = p;
}

uint32_t Network::add_host(std::string name) {
  const auto h = static_cast<uint32_t>(hosts_.size());
  const uint32_t n = add_node(NodeKind::kHost, h, name);
  hosts_.push_back(Host{n, kNone, host_ip4(h)});
  return n;
}

uint32_t Network::add_switch(std::string name) {
  const auto s = static_cast<uint32_t>(switches_.size());
  const uint32_t n = add_node(NodeKind::kSwitch, s, name);
  Switch sw;
  sw.node = n;
  sw.config = config_.switches;
  sw.seed = mix64(s, config_.switches.ecmp_seed ^ config_.seed);
  switches_.push_back(std::move(sw));
  return n;
}

absl::Status check_link(const LinkConfig& link) {
  if (!(link.gbps >= 0.001 && link.gbps <= 10000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("link rate ", link.gbps, " Gb/s out of range [0.001, 10000]"));
  }
  const auto probability = [](double p) { return p >= 0 && p <= 1; };
  const auto delay = [](Time t) { return t >= 0 && t <= 10 * kSecond; };
  if (!delay(link.delay) || !delay(link.reorder_delay) || !probability(link.loss) ||
      !probability(link.corrupt) || !probability(link.duplicate) || !probability(link.reorder)) {
    return absl::InvalidArgumentError(
        "delay and reorder_delay must be in [0, 10 s]; loss, corrupt, duplicate and reorder "
        "in [0, 1]");
  }
  return absl::OkStatus();
}

void Network::set_rate(Port& p, int64_t rate_bps) noexcept {
  constexpr uint64_t kPsBits = 8 * 1'000'000'000'000ULL;  // picoseconds per second * bits per byte
  p.rate_bps = rate_bps;
  const auto rate = static_cast<uint64_t>(rate_bps);
  p.ps_per_byte = rate > 0 && kPsBits % rate == 0 && kPsBits / rate <= UINT32_MAX
                      ? static_cast<uint32_t>(kPsBits / rate)
                      : 0;
}

uint32_t Network::link_class_of(const LinkConfig& link) {
  std::array<uint64_t, 7> key;
  std::memcpy(key.data(), &link, sizeof(link));
  const auto [it, added] =
      link_class_index_.emplace(key, static_cast<uint32_t>(link_classes_.size()));
  if (added) link_classes_.push_back(link);
  return it->second;
}

absl::Status Network::connect(uint32_t a, uint32_t b, const LinkConfig& link) {
  if (finalized_) return absl::FailedPreconditionError("connect: network already finalized");
  if (a >= nodes_.size() || b >= nodes_.size() || a == b) {
    return absl::InvalidArgumentError(absl::StrCat("connect: bad node ids ", a, ", ", b));
  }
  if (port_node_.size() + 2 > kMaxPorts) {
    return absl::InvalidArgumentError(absl::StrCat("connect: at most ", kMaxPorts, " ports"));
  }
  if (absl::Status s = check_link(link); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("connect: ", s.message()));
  }
  for (uint32_t n : {a, b}) {
    if (nodes_[n].kind == NodeKind::kHost && hosts_[nodes_[n].index].port != kNone) {
      return absl::InvalidArgumentError(
          absl::StrCat("connect: host ", node(n).name, " already has its one NIC port"));
    }
  }
  // Only the link's facts here; its two ports are stored at finalize() (Network::store_ports).
  const auto pa = static_cast<uint32_t>(port_node_.size());
  for (uint32_t i = 0; i < 2; ++i) {
    const uint32_t n = i == 0 ? a : b;
    if (nodes_[n].kind == NodeKind::kHost) hosts_[nodes_[n].index].port = pa + i;
    port_node_.push_back(n);
  }
  link_up_.push_back(true);
  link_class_.push_back(link_class_of(link));
  return absl::OkStatus();
}

absl::Status Network::finalize() {
  index_node_ports();
  for (const Host& h : hosts_) {
    if (h.port == kNone) {
      return absl::FailedPreconditionError(
          absl::StrCat("finalize: host ", node(h.node).name, " is not connected"));
    }
  }
  if (hosts_.size() > kMaxHosts) {
    return absl::InvalidArgumentError(absl::StrCat("finalize: at most ", kMaxHosts, " hosts"));
  }
  finalized_ = true;
  if (!config_.ports_at_partition && ports_.empty()) store_ports();
  return compute_routes();
}

// A port as connect() made it: everything follows from its node and its link.
Port Network::make_port(uint32_t port) const {
  Port p;
  const LinkConfig& link = link_config(port);
  p.node = port_node_[port];
  p.peer = peer_of(port);
  set_rate(p, static_cast<int64_t>(link.gbps * 1e9));
  p.rng = Rng(mix64(port, config_.seed));
  p.at_host = nodes_[p.node].kind == NodeKind::kHost;
  p.delay = link.delay;
  p.impaired = link.loss > 0 || link.corrupt > 0 || link.reorder > 0 || link.duplicate > 0;
  p.owner = nodes_[p.node].index;
  p.remote = rank_of_node(p.node) != rank_of_node(port_node_[p.peer]);
  update_plain(p);
  return p;
}

void Network::store_ports() {
  ports_.resize(port_node_.size());  // the kernel's zero pages, not resident until written
  for (uint32_t p = 0; p < port_node_.size(); ++p) {
    if (owns_port(p)) std::construct_at(&ports_[p], make_port(p));
  }
}

void Network::attach(uint32_t host, Transport* transport) {
  hosts_[host].transport = transport;
  kick(host);
}

absl::Status Network::tap(uint32_t port, const std::string& pcap_path) {
  if (port >= ports_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("tap: no port ", port, " stored (", num_ports(),
                                                   " ports; tap after finalize())"));
  }
  if (!owns_port(port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tap: port ", port, " runs on rank ", rank_of_node(port_node_[port])));
  }
  auto w = wire::PcapWriter::open(pcap_path);
  if (!w.ok()) return w.status();
  if (taps_.size() <= port) taps_.resize(ports_.size());
  taps_[port] = std::make_unique<wire::PcapWriter>(std::move(*w));
  ports_[port].tapped = true;
  update_plain(ports_[port]);
  return absl::OkStatus();
}

absl::Status Network::set_routing(const RoutingConfig& config) {
  if (absl::Status s = check_routing(config); !s.ok()) return s;
  RoutingConfig old = config;
  std::swap(routing_config_, old);
  return reroute([&] { routing_config_ = old; });
}

absl::Status Network::reroute(absl::FunctionRef<void()> undo) {
  if (!finalized_) return absl::OkStatus();
  absl::Status s = compute_routes();
  if (!s.ok()) {
    undo();
    (void)compute_routes();  // what it was: computed before
  }
  return s;
}

absl::Status Network::set_switch_groups(std::vector<uint32_t> group_of_switch) {
  if (group_of_switch.size() != switches_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("set_switch_groups: ", group_of_switch.size(),
                                                   " groups for ", switches_.size(), " switches"));
  }
  std::vector<bool> used(group_of_switch.size());
  for (uint32_t g : group_of_switch) {
    if (g >= used.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("set_switch_groups: group ", g, " out of range [0, ", used.size(), ")"));
    }
    used[g] = true;
  }
  const auto groups = static_cast<size_t>(
      group_of_switch.empty()
          ? 0
          : *std::max_element(group_of_switch.begin(), group_of_switch.end()) + 1);
  if (const auto gap = std::find(used.begin(), used.begin() + groups, false);
      gap != used.begin() + groups) {
    return absl::InvalidArgumentError(absl::StrCat("set_switch_groups: group ", gap - used.begin(),
                                                   " has no switch (groups are numbered from 0)"));
  }
  std::swap(switch_groups_, group_of_switch);
  return reroute([&] { switch_groups_ = std::move(group_of_switch); });
}

absl::Status Network::set_port_classes(std::vector<uint8_t> class_of_port) {
  if (class_of_port.size() != num_ports()) {
    return absl::InvalidArgumentError(absl::StrCat("set_port_classes: ", class_of_port.size(),
                                                   " classes for ", num_ports(), " ports"));
  }
  std::swap(port_classes_, class_of_port);
  return reroute([&] { port_classes_ = std::move(class_of_port); });
}

// The graph routing reads: per switch its up links to other switches in port order, per
// host its ToR and the ToR's port to it (kNone where the link reaches no switch or is down).
absl::Status Network::compute_routes() {
  RoutingGraph g;
  g.switches = static_cast<uint32_t>(switches_.size());
  g.first.resize(size_t{g.switches} + 1);
  for (uint32_t s = 0; s < g.switches; ++s) {
    g.first[s] = static_cast<uint32_t>(g.links.size());
    g.seeds.push_back(switches_[s].seed);
    for (uint32_t p : node_ports(switches_[s].node)) {
      const NodeEntry& peer = nodes_[port_node_[peer_of(p)]];
      if (link_up(p) && peer.kind == NodeKind::kSwitch) {
        g.links.push_back(RoutingGraph::Link{p, peer.index});
      }
    }
  }
  g.first[g.switches] = static_cast<uint32_t>(g.links.size());
  g.hosts.reserve(hosts_.size());
  for (const Host& h : hosts_) {
    const uint32_t q = peer_of(h.port);
    const NodeEntry& tor = nodes_[port_node_[q]];
    RoutingGraph::HostLink l{kNone, kNone};
    if (tor.kind == NodeKind::kSwitch) {
      l.tor = tor.index;
      if (link_up(q)) l.tor_port = q;
    }
    g.hosts.push_back(l);
  }
  g.port_class = port_classes_;
  g.group_of_switch = switch_groups_;
  g.seed = config_.switches.ecmp_seed ^ config_.seed;
  if (absl::Status s = routing_.build(g, routing_config_); !s.ok()) return s;
  // The further lossless classes' queues, where PFC is on and the routes need them: zero pages
  // until a frame uses them (sim/network_pages.h). Never shrunk, and once the run has begun
  // never turned off: frames may be queued in them, which only the classes' loop serves.
  tagging_ = (config_.switches.pfc.enabled && routing_.lossless().classes() > 1) ||
             (tagging_ && now_ != 0);
  if (tagging_ && classes_.size() < num_ports()) classes_.resize(num_ports());
  return absl::OkStatus();
}

}  // namespace uet::sim
