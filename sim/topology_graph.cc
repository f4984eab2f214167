#include "sim/topology_graph.h"

#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/htsim_text.h"
#include "sim/topology_internal.h"

namespace uet::sim {
namespace {

bool valid_name(absl::string_view name) {
  for (char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == ':' || ch == '-' ||
                    ch == '/';
    if (!ok) return false;
  }
  return true;
}

// The file as read so far: names, and per node the line that declared it and its links.
struct GraphLines {
  GraphTopology g;
  absl::flat_hash_map<std::string, GraphTopology::End> names;
  std::vector<size_t> host_line, switch_line;
  std::vector<uint32_t> host_links, switch_links;
};

absl::Status parse_declaration(const HtsimLines& in, GraphLines& s) {
  const auto& tok = in.tokens();
  if (tok.size() != 2) return in.error(absl::StrCat("expected '", std::string(tok[0]), " NAME'"));
  const std::string name(tok[1]);
  if (!valid_name(name)) {
    return in.error(absl::StrCat("name '", name, "': letters, digits and _ . : - / only"));
  }
  const bool host = tok[0] == "host";
  auto& list = host ? s.g.hosts : s.g.switches;
  const GraphTopology::End end{host, static_cast<uint32_t>(list.size())};
  if (!s.names.emplace(name, end).second)
    return in.error(absl::StrCat("'", name, "' declared twice"));
  if (host && s.g.hosts.size() >= kMaxHosts) {
    return in.error(absl::StrCat("more than ", kMaxHosts, " hosts"));
  }
  list.push_back(name);
  (host ? s.host_line : s.switch_line).push_back(in.line());
  (host ? s.host_links : s.switch_links).push_back(0);
  return absl::OkStatus();
}

absl::Status parse_link(const HtsimLines& in, GraphLines& s) {
  const auto& tok = in.tokens();
  if (tok.size() != 5) return in.error("expected 'link A B GBPS DELAY_NS'");
  GraphTopology::Link link;
  for (int i = 0; i < 2; ++i) {
    auto it = s.names.find(std::string(tok[1 + i]));
    if (it == s.names.end()) {
      return in.error(absl::StrCat("'", std::string(tok[1 + i]),
                                   "' is not declared (host NAME or switch NAME before the link)"));
    }
    (i == 0 ? link.a : link.b) = it->second;
  }
  if (tok[1] == tok[2]) return in.error("a link joins two different nodes");
  if (link.a.host && link.b.host) return in.error("a host's link must reach a switch");
  double gbps = 0, delay_ns = 0;
  if (!absl::SimpleAtod(tok[3], &gbps) || !(gbps >= 0.001 && gbps <= 10000)) {
    return in.error(absl::StrCat("GBPS '", std::string(tok[3]), "' out of range: 0.001..10000"));
  }
  if (!absl::SimpleAtod(tok[4], &delay_ns) || !(delay_ns >= 0 && delay_ns <= 1e10)) {
    return in.error(absl::StrCat("DELAY_NS '", std::string(tok[4]), "' out of range: 0..1e10"));
  }
  link.config.gbps = gbps;
  link.config.delay = static_cast<Time>(std::llround(delay_ns * kNanosecond));
  for (const GraphTopology::End& e : {link.a, link.b}) {
    if (e.host && ++s.host_links[e.index] > 1) {
      return in.error(absl::StrCat("host '", s.g.hosts[e.index], "' already has its one link"));
    }
    if (!e.host) ++s.switch_links[e.index];
  }
  s.g.links.push_back(link);
  return absl::OkStatus();
}

// What only the whole file tells: hosts, each with its link; no switch without one.
absl::Status check_whole(const HtsimLines& in, const GraphLines& s) {
  if (s.g.hosts.empty()) return in.error_at(0, "no host");
  for (size_t h = 0; h < s.g.hosts.size(); ++h) {
    if (s.host_links[h] == 0) {
      return in.error_at(s.host_line[h], absl::StrCat("host '", s.g.hosts[h], "' has no link"));
    }
  }
  for (size_t w = 0; w < s.g.switches.size(); ++w) {
    if (s.switch_links[w] == 0) {
      return in.error_at(s.switch_line[w],
                         absl::StrCat("switch '", s.g.switches[w], "' has no link"));
    }
  }
  if (2 * uint64_t{s.g.links.size()} > kMaxPorts) {
    return in.error_at(0, absl::StrCat(s.g.links.size(), " links: at most ", kMaxPorts / 2));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GraphTopology> parse_graph_topology(std::string_view text, std::string_view where) {
  HtsimLines in(text, where, HtsimLines::Comments::kToEndOfLine);
  GraphLines s;
  while (in.next()) {
    const absl::string_view key = in.tokens()[0];
    absl::Status st;
    if (key == "host" || key == "switch") {
      st = parse_declaration(in, s);
    } else if (key == "link") {
      st = parse_link(in, s);
    } else {
      st = in.error(absl::StrCat("unknown keyword '", std::string(key), "': host, switch or link"));
    }
    if (!st.ok()) return st;
  }
  SIM_TRY(check_whole(in, s));
  return std::move(s.g);
}

absl::StatusOr<GraphTopology> load_graph_topology(const std::string& path) {
  absl::StatusOr<std::string> text = read_htsim_file(path);
  if (!text.ok()) return text.status();
  return parse_graph_topology(*text, path);
}

TopologySize graph_size(const GraphTopology& g) noexcept {
  TopologySize s;
  s.hosts = g.hosts.size();
  s.switches = g.switches.size();
  s.links = g.links.size();
  s.fabric_links = s.links - s.hosts;  // each host has exactly one link
  return s;
}

absl::Status build_graph(Network& net, const GraphTopology& g) {
  std::vector<uint32_t> hosts, switches;
  for (const std::string& name : g.hosts) hosts.push_back(net.add_host(name));
  for (const std::string& name : g.switches) switches.push_back(net.add_switch(name));
  auto node = [&](const GraphTopology::End& e) {
    return e.host ? hosts[e.index] : switches[e.index];
  };
  for (const GraphTopology::Link& l : g.links) SIM_TRY(net.connect(node(l.a), node(l.b), l.config));
  return net.finalize();
}

}  // namespace uet::sim
