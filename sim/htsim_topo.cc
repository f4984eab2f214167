#include "sim/htsim_topo.h"

#include <array>
#include <cmath>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/htsim_text.h"

namespace uet::sim {
namespace {

struct Tier {
  std::optional<double> gbps, latency_ns, switch_ns, oversub;
  std::optional<uint64_t> radix_down, radix_up, bundle;
  size_t line = 0;
};

// What the lines say, before the whole-file checks map it onto a builder.
struct TopoLines {
  std::optional<uint64_t> nodes, tiers, podsize;
  std::array<Tier, 3> tier;
  int current = -1;  // the Tier block being read
};

std::optional<uint64_t> whole(double num) {
  if (num != std::floor(num)) return std::nullopt;
  return static_cast<uint64_t>(num);
}

// A key inside a Tier block; `num` is its value, checked to be a number in 0..1e9.
absl::Status parse_tier_key(const HtsimLines& in, const std::string& key, double num, Tier& t) {
  const std::string name(in.tokens()[0]);  // as the file spells it
  if (key == "downlink_speed_gbps") {
    if (num <= 0) return in.error("Downlink_speed_Gbps must be positive");
    t.gbps = num;
  } else if (key == "downlink_latency_ns") {
    t.latency_ns = num;
  } else if (key == "switch_latency_ns") {
    t.switch_ns = num;
  } else if (key == "oversubscribed") {
    if (num < 1) return in.error("Oversubscribed must be >= 1");
    t.oversub = num;
  } else if (key == "radix_down" || key == "radix_up" || key == "bundle") {
    if (!whole(num) || num < 1) return in.error(absl::StrCat(name, " needs a positive integer"));
    (key == "radix_down" ? t.radix_down : key == "radix_up" ? t.radix_up : t.bundle) = whole(num);
    if (key == "bundle" && num != 1)
      return in.error("Bundle > 1 (parallel links) is not supported");
  } else if (key == "queue_down" || key == "queue_up") {
    return in.error(
        absl::StrCat(name, " is not supported: set the switch buffer with uet-ab --buffer_kb"));
  } else {
    return in.error(absl::StrCat("unknown key '", name,
                                 "': Nodes, Tiers, Podsize, Tier, Downlink_speed_Gbps, Radix_Down, "
                                 "Radix_Up, Downlink_Latency_ns, Switch_Latency_ns, "
                                 "Oversubscribed, Bundle"));
  }
  return absl::OkStatus();
}

// One "Key value" line: a header key, a Tier, or a key of the current Tier block.
absl::Status parse_line(const HtsimLines& in, TopoLines& s) {
  const std::vector<absl::string_view>& tok = in.tokens();
  if (tok.size() != 2) return in.error("expected 'Key value'");
  const std::string key = absl::AsciiStrToLower(tok[0]);
  double num = 0;
  if (!absl::SimpleAtod(tok[1], &num) || !(num >= 0) || num > 1e9) {
    return in.error(absl::StrCat(std::string(tok[0]), " needs a non-negative number, got '",
                                 std::string(tok[1]), "'"));
  }
  if (key == "tier") {
    if (!whole(num) || num > 2) return in.error("Tier must be 0, 1 or 2");
    s.current = static_cast<int>(num);
    s.tier[s.current].line = in.line();
    return absl::OkStatus();
  }
  if (key == "nodes" || key == "tiers" || key == "podsize") {
    if (s.current >= 0) {
      return in.error(absl::StrCat(std::string(tok[0]), " belongs before the first Tier"));
    }
    if (!whole(num)) return in.error(absl::StrCat(std::string(tok[0]), " needs an integer"));
    (key == "nodes" ? s.nodes : key == "tiers" ? s.tiers : s.podsize) = whole(num);
    return absl::OkStatus();
  }
  if (s.current < 0) return in.error(absl::StrCat(std::string(tok[0]), " outside a Tier block"));
  return parse_tier_key(in, key, num, s.tier[s.current]);
}

// Nodes and Tiers in range and a complete block for each tier: the links below each tier.
absl::StatusOr<std::array<LinkConfig, 3>> tier_links(const HtsimLines& in, const TopoLines& s) {
  if (!s.nodes || !s.tiers) return in.error_at(0, "Nodes and Tiers are required");
  if (*s.tiers != 2 && *s.tiers != 3) {
    return in.error_at(0, absl::StrCat("Tiers ", *s.tiers, ": 2 or 3"));
  }
  if (*s.nodes < 2 || *s.nodes > 65535) {
    return in.error_at(0, absl::StrCat("Nodes ", *s.nodes, " out of range: 2..65535"));
  }
  const int n = static_cast<int>(*s.tiers);
  std::array<LinkConfig, 3> link;
  for (int i = 0; i < n; ++i) {
    const Tier& t = s.tier[i];
    if (t.line == 0) return in.error_at(0, absl::StrCat("no 'Tier ", i, "' block"));
    if (!t.gbps || !t.radix_down || !t.latency_ns) {
      return in.error_at(t.line, absl::StrCat("Tier ", i,
                                              " needs Downlink_speed_Gbps, "
                                              "Radix_Down and Downlink_Latency_ns"));
    }
    link[i].gbps = *t.gbps;
    // This tier's downlinks, plus the switch at their top (the frame crosses it on the way).
    link[i].delay =
        static_cast<Time>(std::llround((*t.latency_ns + t.switch_ns.value_or(0)) * 1000));
  }
  for (int i = n; i < 3; ++i) {
    if (s.tier[i].line != 0) {
      return in.error_at(s.tier[i].line, absl::StrCat("Tier ", i, " beyond Tiers ", n));
    }
  }
  return link;
}

// The ToR's uplinks, as htsim derives them: downlink capacity over (uplink rate x oversub).
absl::StatusOr<uint64_t> tor_uplinks(const HtsimLines& in, const TopoLines& s) {
  const Tier& tor = s.tier[0];
  const double up_exact = static_cast<double>(*tor.radix_down) * *tor.gbps /
                          (*s.tier[1].gbps * tor.oversub.value_or(1));
  if (!(up_exact >= 1 && up_exact <= kMaxHosts)) {  // also NaN; then the casts below are exact
    return in.error_at(tor.line, absl::StrCat("Tier 0: Radix_Down x speed / (Tier 1 speed x "
                                              "Oversubscribed) = ",
                                              up_exact, " uplinks: 1..", kMaxHosts));
  }
  const auto tor_up = static_cast<uint64_t>(std::llround(up_exact));
  if (std::abs(up_exact - static_cast<double>(tor_up)) > 1e-9) {
    return in.error_at(tor.line, absl::StrCat("Tier 0: Radix_Down x speed / (Tier 1 speed x "
                                              "Oversubscribed) = ",
                                              up_exact, " uplinks: not a whole number"));
  }
  if (tor.radix_up && *tor.radix_up != tor_up) {
    return in.error_at(tor.line,
                       absl::StrCat("Tier 0: Radix_Up ", *tor.radix_up,
                                    " but the rates and Oversubscribed give ", tor_up, " uplinks"));
  }
  return tor_up;
}

// Two tiers: a leaf-spine with one spine per ToR uplink.
absl::Status map_leaf_spine(const HtsimLines& in, const TopoLines& s,
                            const std::array<LinkConfig, 3>& link, uint64_t tor_up,
                            HtsimTopology& out) {
  const Tier& tor = s.tier[0];
  if (*s.nodes % *tor.radix_down != 0) {
    return in.error_at(tor.line,
                       absl::StrCat("Nodes ", *s.nodes, " is not a multiple of Tier 0 Radix_Down ",
                                    *tor.radix_down));
  }
  const uint64_t leaves = *s.nodes / *tor.radix_down;
  if (*s.tier[1].radix_down != leaves) {
    return in.error_at(s.tier[1].line,
                       absl::StrCat("Tier 1: Radix_Down ", *s.tier[1].radix_down, " but there are ",
                                    leaves, " leaves (each spine reaches every leaf)"));
  }
  out.kind = HtsimTopology::Kind::kLeafSpine;
  out.leaf_spine.leaves = static_cast<uint32_t>(leaves);
  out.leaf_spine.spines = static_cast<uint32_t>(tor_up);
  out.leaf_spine.hosts_per_leaf = static_cast<uint32_t>(*tor.radix_down);
  out.leaf_spine.host_link = link[0];
  out.leaf_spine.fabric_link = link[1];
  // What the file describes must be a fabric the builder makes (or the error would come
  // at run time, without the file's name).
  if (absl::Status st = check_leaf_spine(out.leaf_spine); !st.ok()) {
    return in.error_at(0, std::string(st.message()));
  }
  return absl::OkStatus();
}

// Three tiers: our k-ary fat-tree with hosts_per_tor hosts under each ToR.
absl::Status map_fat_tree(const HtsimLines& in, const TopoLines& s,
                          const std::array<LinkConfig, 3>& link, uint64_t tor_up,
                          HtsimTopology& out) {
  const Tier& tor = s.tier[0];
  if (!s.podsize || *s.podsize == 0 || *s.nodes % *s.podsize != 0) {
    return in.error_at(0, "Tiers 3 needs Podsize dividing Nodes");
  }
  const uint64_t k = *s.nodes / *s.podsize;  // pods
  const uint64_t tors_per_pod = *s.podsize / *tor.radix_down;
  if (k < 2 || k % 2 != 0 || tors_per_pod * *tor.radix_down != *s.podsize ||
      tors_per_pod != k / 2 || tor_up != k / 2) {
    return in.error_at(
        0, absl::StrCat("Tiers 3: ", k, " pods of ", tors_per_pod, " ToRs with ", tor_up,
                        " uplinks each is not a k-ary fat-tree (k pods of k/2 "
                        "ToRs, k/2 uplinks per ToR); the only 3-tier shape "
                        "built here"));
  }
  if (*s.tier[1].radix_down != k / 2) {
    return in.error_at(s.tier[1].line, absl::StrCat("Tier 1: Radix_Down ", *s.tier[1].radix_down,
                                                    " but a pod has ", k / 2, " ToRs"));
  }
  if (*s.tier[2].radix_down != k) {
    return in.error_at(s.tier[2].line, absl::StrCat("Tier 2: Radix_Down ", *s.tier[2].radix_down,
                                                    " but there are ", k, " pods"));
  }
  out.kind = HtsimTopology::Kind::kFatTree;
  out.fat_tree.k = static_cast<uint32_t>(k);
  out.fat_tree.hosts_per_tor = static_cast<uint32_t>(*tor.radix_down);
  out.fat_tree.host_link = link[0];
  out.fat_tree.tor_agg_link = link[1];
  out.fat_tree.agg_core_link = link[2];
  if (absl::Status st = check_fat_tree(out.fat_tree); !st.ok()) {
    return in.error_at(0, std::string(st.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HtsimTopology> parse_htsim_topology(std::string_view text, std::string_view where) {
  HtsimLines in(text, where, HtsimLines::Comments::kToEndOfLine);
  TopoLines s;
  while (in.next()) {
    if (absl::Status st = parse_line(in, s); !st.ok()) return st;
  }
  absl::StatusOr<std::array<LinkConfig, 3>> link = tier_links(in, s);
  if (!link.ok()) return link.status();
  absl::StatusOr<uint64_t> tor_up = tor_uplinks(in, s);
  if (!tor_up.ok()) return tor_up.status();
  HtsimTopology out;
  out.hosts = static_cast<uint32_t>(*s.nodes);
  out.host_gbps = (*link)[0].gbps;
  out.host_delay = (*link)[0].delay;
  const absl::Status st = *s.tiers == 2 ? map_leaf_spine(in, s, *link, *tor_up, out)
                                        : map_fat_tree(in, s, *link, *tor_up, out);
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<HtsimTopology> load_htsim_topology(const std::string& path) {
  absl::StatusOr<std::string> text = read_htsim_file(path);
  if (!text.ok()) return text.status();
  return parse_htsim_topology(*text, path);
}

}  // namespace uet::sim
