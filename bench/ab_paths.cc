#include "bench/ab_paths.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>

#include "absl/strings/str_cat.h"
#include "sim/frame_parse.h"

namespace uet::ab {
namespace {

// The host or switch a port belongs to. From the fabric's structure, which every rank of a
// split run holds (Network::port() reads zero for another rank's ports).
struct PortEnd {
  bool at_host;
  uint32_t owner;  // host or switch index
};

PortEnd end_of(const sim::Network& net, uint32_t port) {
  const sim::Node n = net.node(net.port_node(port));
  return {n.kind == sim::NodeKind::kHost, n.index};
}

// By switch, its level: 1 with a host port, else one more than its nearest such switch
// (breadth first); 0 for a switch no host reaches.
std::vector<uint32_t> switch_levels(const sim::Network& net) {
  std::vector<uint32_t> level(net.num_switches(), 0);
  std::deque<uint32_t> todo;
  for (uint32_t h = 0; h < net.num_hosts(); ++h) {
    const PortEnd peer = end_of(net, sim::Network::peer_of(net.host(h).port));
    if (!peer.at_host && level[peer.owner] == 0) {
      level[peer.owner] = 1;
      todo.push_back(peer.owner);
    }
  }
  while (!todo.empty()) {
    const uint32_t s = todo.front();
    todo.pop_front();
    for (const uint32_t p : net.node(net.switch_node(s)).ports) {
      const PortEnd peer = end_of(net, sim::Network::peer_of(p));
      if (peer.at_host || level[peer.owner] != 0) continue;
      level[peer.owner] = level[s] + 1;
      todo.push_back(peer.owner);
    }
  }
  return level;
}

// A level's name on a fabric whose highest level is `top`: a fat-tree's ToR, agg and core, a
// leaf-spine's leaf and spine, else L1, L2, ...
std::string level_name(uint32_t level, uint32_t top) {
  if (level == 0) return "host";
  if (top == 3) return level == 1 ? "ToR" : level == 2 ? "agg" : "core";
  if (top == 2) return level == 1 ? "leaf" : "spine";
  if (top == 1) return "ToR";
  return absl::StrCat("L", level);
}

// The ports a frame from `src` to `dst` with this flow hash leaves through, the source's NIC
// first, as the switches forward it. False when it does not reach `dst`.
bool walk(const sim::Network& net, uint32_t src, uint32_t dst, uint64_t hash,
          std::vector<uint32_t>& ports) {
  ports.assign(1, net.host(src).port);
  PortEnd at = end_of(net, sim::Network::peer_of(ports[0]));
  uint8_t state = 0;
  for (size_t hops = 0; !at.at_host && hops <= net.num_switches(); ++hops) {
    const uint32_t out = net.route_port(at.owner, dst, hash, state);
    if (out == sim::kNone) return false;
    ports.push_back(out);
    at = end_of(net, sim::Network::peer_of(out));
  }
  return at.at_host && at.owner == dst;
}

struct PortCounts {
  std::vector<uint64_t> flows, bytes;  // by port
  std::vector<uint64_t> trims, marks;  // by port: the switches' own counts
};

// Walks every logged path; a flow (source, destination) counts once on each port any of its
// paths crossed.
void count_ports(const sim::Network& net, const PathLog& log, PortCounts& c, PathReport& r) {
  std::vector<std::pair<PathLog::Key, PathLog::Sent>> paths(log.sent().begin(), log.sent().end());
  std::sort(paths.begin(), paths.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<uint32_t> walked, flow_ports;
  for (size_t i = 0; i < paths.size();) {
    const uint64_t pair = paths[i].first.first;
    flow_ports.clear();
    for (; i < paths.size() && paths[i].first.first == pair; ++i) {
      const auto src = static_cast<uint32_t>(pair >> 32), dst = static_cast<uint32_t>(pair);
      if (!walk(net, src, dst, paths[i].first.second, walked)) r.unreached = true;
      for (const uint32_t p : walked) c.bytes[p] += paths[i].second.bytes;
      flow_ports.insert(flow_ports.end(), walked.begin(), walked.end());
      ++r.paths;
    }
    std::sort(flow_ports.begin(), flow_ports.end());
    flow_ports.erase(std::unique(flow_ports.begin(), flow_ports.end()), flow_ports.end());
    for (const uint32_t p : flow_ports) ++c.flows[p];
    ++r.flows;
  }
}

// Tiers in the order a path climbs and descends them: up by level, then across, then down.
uint32_t tier_order(uint32_t from, uint32_t to, uint32_t top) {
  if (to > from) return from;
  if (to == from) return top + 1 + from;
  return 2 * top + 2 + (top - from);
}

std::vector<TierLoad> tiers(const sim::Network& net, const PortCounts& c) {
  const std::vector<uint32_t> level = switch_levels(net);
  const uint32_t top = level.empty() ? 0 : *std::max_element(level.begin(), level.end());
  auto level_of = [&](uint32_t port) {
    const PortEnd e = end_of(net, port);
    return e.at_host ? 0 : level[e.owner];
  };
  std::map<uint32_t, TierLoad> by_order;
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    const uint32_t from = level_of(p), to = level_of(sim::Network::peer_of(p));
    TierLoad& t = by_order[tier_order(from, to, top)];
    if (t.links == 0) {
      t.name = level_name(from, top) + "->" + level_name(to, top);
      t.from_level = from;
      t.to_level = to;
    }
    ++t.links;
    const auto n = static_cast<uint32_t>(c.flows[p]);
    if (t.histogram.size() <= n) t.histogram.resize(n + 1, 0);
    ++t.histogram[n];
    t.max_flows = std::max(t.max_flows, n);
    t.max_bytes = std::max(t.max_bytes, c.bytes[p]);
    t.trims += c.trims[p];
    t.max_trims = std::max(t.max_trims, c.trims[p]);
    t.ecn_marks += c.marks[p];
  }
  std::vector<TierLoad> out;
  for (auto& [order, t] : by_order) out.push_back(std::move(t));
  return out;
}

}  // namespace

void PathLog::note(uint32_t src_host, const Frame& f) {
  sim::FrameInfo info;
  if (!sim::parse_frame(f, &info) || sim::classify_dscp(info.dscp) != Priority::kData) return;
  const uint64_t pair = uint64_t{src_host} << 32 | sim::Network::host_of_ip4(info.dst_ip4);
  Sent& s = sent_[Key{pair, info.flow_hash}];
  ++s.frames;
  s.bytes += f.bytes_on_wire();
}

PathReport path_report(const sim::Network& net, const PathLog& log, sim::Ranks& ranks) {
  PathReport r;
  PortCounts c;
  c.flows.assign(net.num_ports(), 0);
  c.bytes.assign(net.num_ports(), 0);
  count_ports(net, log, c, r);
  c.trims.assign(net.num_ports(), 0);
  c.marks.assign(net.num_ports(), 0);
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    if (!net.owns_port(p)) continue;  // another rank's: counted there
    const sim::PortStats s = net.port_stats(p);
    c.trims[p] = s.trims;
    c.marks[p] = s.ecn_marks;
  }
  ranks.sum_all(c.flows);
  ranks.sum_all(c.bytes);
  ranks.sum_all(c.trims);
  ranks.sum_all(c.marks);
  std::array<uint64_t, 3> totals{r.flows, r.paths, r.unreached ? 1u : 0u};
  ranks.sum_all(totals);
  r.flows = totals[0];
  r.paths = totals[1];
  r.unreached = totals[2] != 0;
  for (const uint64_t n : c.flows) r.flow_links += n;
  r.tiers = tiers(net, c);
  return r;
}

}  // namespace uet::ab
