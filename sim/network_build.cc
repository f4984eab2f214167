// Building a fabric (control path): its nodes and links, their checks, and the ECMP tables
// that switches forward by, computed at finalize() and again when a link's state changes.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/network.h"

namespace uet::sim {

uint32_t Network::add_host(std::string name) {
  const auto n = static_cast<uint32_t>(nodes_.size());
  const auto h = static_cast<uint32_t>(hosts_.size());
  nodes_.push_back(Node{NodeKind::kHost, h, {}, std::move(name)});
  hosts_.push_back(Host{n, kNone, host_ip4(h)});
  return n;
}

uint32_t Network::add_switch(std::string name) {
  const auto n = static_cast<uint32_t>(nodes_.size());
  const auto s = static_cast<uint32_t>(switches_.size());
  nodes_.push_back(Node{NodeKind::kSwitch, s, {}, std::move(name)});
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

absl::Status Network::connect(uint32_t a, uint32_t b, const LinkConfig& link) {
  if (finalized_) return absl::FailedPreconditionError("connect: network already finalized");
  if (a >= nodes_.size() || b >= nodes_.size() || a == b) {
    return absl::InvalidArgumentError(absl::StrCat("connect: bad node ids ", a, ", ", b));
  }
  if (ports_.size() + 2 > kMaxPorts) {
    return absl::InvalidArgumentError(absl::StrCat("connect: at most ", kMaxPorts, " ports"));
  }
  if (absl::Status s = check_link(link); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("connect: ", s.message()));
  }
  for (uint32_t n : {a, b}) {
    if (nodes_[n].kind == NodeKind::kHost && !nodes_[n].ports.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("connect: host ", nodes_[n].name, " already has its one NIC port"));
    }
  }
  const auto pa = static_cast<uint32_t>(ports_.size());
  const uint32_t pb = pa + 1;
  for (uint32_t i = 0; i < 2; ++i) {
    Port p;
    p.node = i == 0 ? a : b;
    p.peer = i == 0 ? pb : pa;
    set_rate(p, static_cast<int64_t>(link.gbps * 1e9));
    p.rng = Rng(mix64(pa + i, config_.seed));
    p.at_host = nodes_[p.node].kind == NodeKind::kHost;
    p.delay = link.delay;
    p.impaired = link.loss > 0 || link.corrupt > 0 || link.reorder > 0 || link.duplicate > 0;
    p.owner = nodes_[p.node].index;
    update_plain(p);
    ports_.push_back(std::move(p));
    nodes_[i == 0 ? a : b].ports.push_back(i == 0 ? pa : pb);
  }
  links_.push_back(link);
  for (uint32_t n : {a, b}) {
    if (nodes_[n].kind == NodeKind::kHost) hosts_[nodes_[n].index].port = nodes_[n].ports[0];
  }
  return absl::OkStatus();
}

absl::Status Network::finalize() {
  for (const Host& h : hosts_) {
    if (h.port == kNone) {
      return absl::FailedPreconditionError(
          absl::StrCat("finalize: host ", nodes_[h.node].name, " is not connected"));
    }
  }
  if (hosts_.size() > kMaxHosts) {
    return absl::InvalidArgumentError(absl::StrCat("finalize: at most ", kMaxHosts, " hosts"));
  }
  finalized_ = true;
  return compute_ecmp();
}

void Network::attach(uint32_t host, Transport* transport) {
  hosts_[host].transport = transport;
  kick(host);
}

absl::Status Network::tap(uint32_t port, const std::string& pcap_path) {
  if (port >= ports_.size()) return absl::InvalidArgumentError(absl::StrCat("tap: no port ", port));
  auto w = wire::PcapWriter::open(pcap_path);
  if (!w.ok()) return w.status();
  if (taps_.size() <= port) taps_.resize(ports_.size());
  taps_[port] = std::make_unique<wire::PcapWriter>(std::move(*w));
  ports_[port].tapped = true;
  update_plain(ports_[port]);
  return absl::OkStatus();
}

namespace {
// Per switch, its up links to other switches in port order (a group keeps that order).
struct SwitchLinks {
  struct Hop {
    uint32_t port;
    uint32_t peer;  // switch index
  };
  // By switch, and one past the last: switch s's hops are [first[s], first[s + 1]).
  std::vector<uint32_t> first;
  std::vector<Hop> hops;
};

SwitchLinks up_switch_links(const std::vector<Node>& nodes, const std::vector<Switch>& switches,
                            const std::vector<Port>& ports) {
  const auto n_sw = static_cast<uint32_t>(switches.size());
  SwitchLinks links;
  links.first.resize(n_sw + 1);
  for (uint32_t s = 0; s < n_sw; ++s) {
    links.first[s] = static_cast<uint32_t>(links.hops.size());
    for (uint32_t p : nodes[switches[s].node].ports) {
      const Port& peer = ports[ports[p].peer];
      if (ports[p].up && !peer.at_host) links.hops.push_back(SwitchLinks::Hop{p, peer.owner});
    }
  }
  links.first[n_sw] = static_cast<uint32_t>(links.hops.size());
  return links;
}

// A column of routes per ToR (switch with a host), numbered as the hosts first reach them;
// after them the routing table has a last one of no routes, for hosts whose link is down or
// reaches no switch.
struct TorColumns {
  std::vector<uint32_t> column_of;  // by switch; kNone: not a ToR
  std::vector<uint32_t> tors;       // by column
};

TorColumns tor_columns(const std::vector<Host>& hosts, const std::vector<Port>& ports,
                       uint32_t n_sw) {
  TorColumns t;
  t.column_of.assign(n_sw, kNone);
  for (const Host& h : hosts) {
    const Port& peer = ports[ports[h.port].peer];
    if (!peer.at_host && t.column_of[peer.owner] == kNone) {
      t.column_of[peer.owner] = static_cast<uint32_t>(t.tors.size());
      t.tors.push_back(peer.owner);
    }
  }
  return t;
}

// Every switch's distance in hops to switch `tor` (kNone: unreachable), breadth first;
// `frontier` is scratch.
void distances_to(uint32_t tor, const SwitchLinks& links, std::vector<uint32_t>& dist,
                  std::vector<uint32_t>& frontier) {
  std::fill(dist.begin(), dist.end(), kNone);
  dist[tor] = 0;
  frontier.assign(1, tor);
  for (size_t next = 0; next < frontier.size(); ++next) {
    const uint32_t n = frontier[next];
    for (uint32_t i = links.first[n]; i < links.first[n + 1]; ++i) {
      if (dist[links.hops[i].peer] == kNone) {
        dist[links.hops[i].peer] = dist[n] + 1;
        frontier.push_back(links.hops[i].peer);
      }
    }
  }
}

// Each switch's ECMP groups, identical ones stored once: a route names its switch's group by
// number, 16 bits, group 0 being the empty one (no route).
class SwitchGroups {
 public:
  explicit SwitchGroups(uint32_t n_sw)
      : groups_(n_sw, std::vector<std::vector<uint32_t>>(1)), index_(n_sw) {
    for (auto& index : index_) index.emplace(std::vector<uint32_t>{}, 0);
  }
  // Sets `id` to the number of `group` at switch `s`, numbering it if new; false when the
  // switch has no number left.
  bool number(uint32_t s, const std::vector<uint32_t>& group, uint16_t& id) {
    auto it = index_[s].find(group);
    if (it == index_[s].end()) {
      if (groups_[s].size() >= 65535) return false;
      it = index_[s].emplace(group, static_cast<uint16_t>(groups_[s].size())).first;
      groups_[s].push_back(group);
    }
    id = it->second;
    return true;
  }
  // Switch `s`'s groups by number.
  const std::vector<std::vector<uint32_t>>& of(uint32_t s) const { return groups_[s]; }

 private:
  std::vector<std::vector<std::vector<uint32_t>>> groups_;
  std::vector<std::map<std::vector<uint32_t>, uint16_t>> index_;
};

// The routes towards one ToR, by switch, from every switch's distance `dist` to it: a
// switch's group is its links to switches one hop closer. `group` is scratch.
absl::Status route_column(const SwitchLinks& links, const std::vector<uint32_t>& dist,
                          SwitchGroups& groups, std::vector<uint32_t>& group, uint16_t* route) {
  for (uint32_t s = 0; s < dist.size(); ++s) {
    const uint32_t d = dist[s];
    if (d == 0 || d == kNone) continue;  // the ToR itself (EcmpDst::tor_port), or no route
    group.clear();
    for (uint32_t i = links.first[s]; i < links.first[s + 1]; ++i) {
      if (dist[links.hops[i].peer] + 1 == d) group.push_back(links.hops[i].port);
    }
    if (!groups.number(s, group, route[s])) {
      return absl::ResourceExhaustedError("too many ECMP groups");
    }
  }
  return absl::OkStatus();
}
}  // namespace

// Shortest-path ECMP over links that are up: a switch's group towards a host is every up
// port whose peer is one hop closer to it. Hosts do not forward, and a host's one link leads
// to its ToR, so a breadth-first search from each ToR over the switch-to-switch links gives
// every switch's distance to all the ToR's hosts at once (one less than to the host); at the
// ToR itself the group is its port to the host. Identical groups are stored once per switch.
absl::Status Network::compute_ecmp() {
  const auto n_sw = static_cast<uint32_t>(switches_.size());
  const SwitchLinks links = up_switch_links(nodes_, switches_, ports_);
  const TorColumns columns = tor_columns(hosts_, ports_, n_sw);
  const std::vector<uint32_t>& tors = columns.tors;
  const size_t routes = (tors.size() + 1) * n_sw;  // the last column: no routes
  if (routes > UINT32_MAX) return absl::ResourceExhaustedError("ECMP table too large");
  SwitchGroups groups(n_sw);
  ecmp_route_.assign(routes, 0);
  std::vector<uint32_t> dist(n_sw);
  std::vector<uint32_t> frontier;
  std::vector<uint32_t> group;
  for (uint32_t c = 0; c < tors.size(); ++c) {
    distances_to(tors[c], links, dist, frontier);
    uint16_t* route = ecmp_route_.data() + size_t{c} * n_sw;
    if (absl::Status s = route_column(links, dist, groups, group, route); !s.ok()) return s;
  }
  ecmp_dst_.clear();
  const auto no_route = static_cast<uint32_t>(tors.size() * n_sw);
  for (const Host& h : hosts_) {
    const uint32_t q = ports_[h.port].peer;
    EcmpDst d{kNone, kNone, no_route};
    if (!ports_[q].at_host) {
      d.tor = ports_[q].owner;
      if (ports_[q].up) {
        d.tor_port = q;
        d.route_base = columns.column_of[d.tor] * n_sw;
      }
    }
    ecmp_dst_.push_back(d);
  }
  ecmp_memo_.fill(EcmpMemo{});
  ecmp_switch_.clear();
  ecmp_group_.clear();
  ecmp_ports_.clear();
  ecmp_hosts_ = hosts_.size();
  for (uint32_t s = 0; s < n_sw; ++s) {
    ecmp_switch_.push_back(EcmpSwitch{switches_[s].seed * 0x9E3779B97F4A7C15ULL,
                                      static_cast<uint32_t>(ecmp_group_.size())});
    for (const std::vector<uint32_t>& g : groups.of(s)) {
      // An empty group (no route) keeps size 0 as its mark; FastMod::of needs d >= 1.
      const FastMod mod = g.empty() ? FastMod{0, 0} : FastMod::of(static_cast<uint32_t>(g.size()));
      ecmp_group_.push_back(EcmpGroup{mod.m, mod.d, static_cast<uint32_t>(ecmp_ports_.size())});
      ecmp_ports_.insert(ecmp_ports_.end(), g.begin(), g.end());
    }
  }
  ecmp_switches_ = n_sw;
  return absl::OkStatus();
}

size_t Network::ecmp_table_bytes() const noexcept {
  return ecmp_route_.size() * sizeof(uint16_t) + ecmp_dst_.size() * sizeof(EcmpDst) +
         ecmp_switch_.size() * sizeof(EcmpSwitch) + ecmp_group_.size() * sizeof(EcmpGroup) +
         ecmp_ports_.size() * sizeof(uint32_t);
}

}  // namespace uet::sim
