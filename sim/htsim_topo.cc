#include "sim/htsim_topo.h"

#include <array>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace uet::sim {
namespace {

struct Tier {
  std::optional<double> gbps, latency_ns, switch_ns, oversub;
  std::optional<uint64_t> radix_down, radix_up, bundle;
  size_t line = 0;
};

}  // namespace

absl::StatusOr<HtsimTopology> parse_htsim_topology(std::string_view text, std::string_view where) {
  std::optional<uint64_t> nodes, tiers, podsize;
  std::array<Tier, 3> tier;
  int current = -1;
  size_t line_no = 0;
  auto error = [&](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(where), ":", line_no, ": ",
                                                   std::string(what)));
  };

  const absl::string_view body(text.data(), text.size());  // Debian's Abseil string_view
  for (absl::string_view raw : absl::StrSplit(body, '\n')) {
    ++line_no;
    absl::string_view line = absl::StripAsciiWhitespace(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    std::vector<absl::string_view> tok = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (tok.size() != 2) return error("expected 'Key value'");
    const std::string key = absl::AsciiStrToLower(tok[0]);
    double num = 0;
    if (!absl::SimpleAtod(tok[1], &num) || !(num >= 0) || num > 1e9) {
      return error(absl::StrCat(std::string(tok[0]), " needs a non-negative number, got '",
                                std::string(tok[1]), "'"));
    }
    const bool integral = num == std::floor(num);
    auto whole = [&]() -> std::optional<uint64_t> {
      if (!integral) return std::nullopt;
      return static_cast<uint64_t>(num);
    };
    if (key == "tier") {
      if (!integral || num > 2) return error("Tier must be 0, 1 or 2");
      current = static_cast<int>(num);
      tier[current].line = line_no;
      continue;
    }
    if (key == "nodes" || key == "tiers" || key == "podsize") {
      if (current >= 0) return error(absl::StrCat(std::string(tok[0]), " belongs before the first Tier"));
      if (!whole()) return error(absl::StrCat(std::string(tok[0]), " needs an integer"));
      (key == "nodes" ? nodes : key == "tiers" ? tiers : podsize) = whole();
      continue;
    }
    if (current < 0) return error(absl::StrCat(std::string(tok[0]), " outside a Tier block"));
    Tier& t = tier[current];
    if (key == "downlink_speed_gbps") {
      if (num <= 0) return error("Downlink_speed_Gbps must be positive");
      t.gbps = num;
    } else if (key == "downlink_latency_ns") {
      t.latency_ns = num;
    } else if (key == "switch_latency_ns") {
      t.switch_ns = num;
    } else if (key == "oversubscribed") {
      if (num < 1) return error("Oversubscribed must be >= 1");
      t.oversub = num;
    } else if (key == "radix_down" || key == "radix_up" || key == "bundle") {
      if (!whole() || num < 1) return error(absl::StrCat(std::string(tok[0]), " needs a positive integer"));
      (key == "radix_down" ? t.radix_down : key == "radix_up" ? t.radix_up : t.bundle) = whole();
      if (key == "bundle" && num != 1) return error("Bundle > 1 (parallel links) is not supported");
    } else if (key == "queue_down" || key == "queue_up") {
      return error(absl::StrCat(std::string(tok[0]),
                                " is not supported: set the switch buffer with uet-ab --buffer_kb"));
    } else {
      return error(absl::StrCat("unknown key '", std::string(tok[0]),
                                "': Nodes, Tiers, Podsize, Tier, Downlink_speed_Gbps, Radix_Down, "
                                "Radix_Up, Downlink_Latency_ns, Switch_Latency_ns, "
                                "Oversubscribed, Bundle"));
    }
  }

  line_no = 0;
  if (!nodes || !tiers) return error("Nodes and Tiers are required");
  if (*tiers != 2 && *tiers != 3) return error(absl::StrCat("Tiers ", *tiers, ": 2 or 3"));
  if (*nodes < 2 || *nodes > 65535) return error(absl::StrCat("Nodes ", *nodes, " out of range: 2..65535"));
  const int n = static_cast<int>(*tiers);
  std::array<LinkConfig, 3> link;
  for (int i = 0; i < n; ++i) {
    const Tier& t = tier[i];
    line_no = t.line;
    if (t.line == 0) return error(absl::StrCat("no 'Tier ", i, "' block"));
    if (!t.gbps || !t.radix_down || !t.latency_ns) {
      return error(absl::StrCat("Tier ", i, " needs Downlink_speed_Gbps, Radix_Down and Downlink_Latency_ns"));
    }
    link[i].gbps = *t.gbps;
    // This tier's downlinks, plus the switch at their top (the frame crosses it on the way).
    link[i].delay = static_cast<Time>(std::llround((*t.latency_ns + t.switch_ns.value_or(0)) * 1000));
  }
  for (int i = n; i < 3; ++i) {
    if (tier[i].line != 0) {
      line_no = tier[i].line;
      return error(absl::StrCat("Tier ", i, " beyond Tiers ", n));
    }
  }

  // The ToR's uplinks, as htsim derives them: downlink capacity over (uplink rate x oversub).
  const Tier& tor = tier[0];
  const double up_exact = static_cast<double>(*tor.radix_down) * *tor.gbps /
                          (*tier[1].gbps * tor.oversub.value_or(1));
  line_no = tor.line;
  if (!(up_exact >= 1 && up_exact <= kMaxHosts)) {  // also NaN; then the casts below are exact
    return error(absl::StrCat("Tier 0: Radix_Down x speed / (Tier 1 speed x Oversubscribed) = ",
                              up_exact, " uplinks: 1..", kMaxHosts));
  }
  const auto tor_up = static_cast<uint64_t>(std::llround(up_exact));
  if (std::abs(up_exact - static_cast<double>(tor_up)) > 1e-9) {
    return error(absl::StrCat("Tier 0: Radix_Down x speed / (Tier 1 speed x Oversubscribed) = ",
                              up_exact, " uplinks: not a whole number"));
  }
  if (tor.radix_up && *tor.radix_up != tor_up) {
    return error(absl::StrCat("Tier 0: Radix_Up ", *tor.radix_up, " but the rates and "
                              "Oversubscribed give ", tor_up, " uplinks"));
  }

  HtsimTopology out;
  out.hosts = static_cast<uint32_t>(*nodes);
  out.host_gbps = link[0].gbps;
  out.host_delay = link[0].delay;
  if (n == 2) {
    if (*nodes % *tor.radix_down != 0) {
      return error(absl::StrCat("Nodes ", *nodes, " is not a multiple of Tier 0 Radix_Down ",
                                *tor.radix_down));
    }
    const uint64_t leaves = *nodes / *tor.radix_down;
    line_no = tier[1].line;
    if (*tier[1].radix_down != leaves) {
      return error(absl::StrCat("Tier 1: Radix_Down ", *tier[1].radix_down, " but there are ",
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
    line_no = 0;
    if (absl::Status s = check_leaf_spine(out.leaf_spine); !s.ok()) return error(std::string(s.message()));
    return out;
  }
  // Three tiers: our k-ary fat-tree with hosts_per_tor hosts under each ToR.
  line_no = 0;
  if (!podsize || *podsize == 0 || *nodes % *podsize != 0) {
    return error("Tiers 3 needs Podsize dividing Nodes");
  }
  const uint64_t k = *nodes / *podsize;  // pods
  const uint64_t tors_per_pod = *podsize / *tor.radix_down;
  if (k < 2 || k % 2 != 0 || tors_per_pod * *tor.radix_down != *podsize || tors_per_pod != k / 2 ||
      tor_up != k / 2) {
    return error(absl::StrCat("Tiers 3: ", k, " pods of ", tors_per_pod, " ToRs with ", tor_up,
                              " uplinks each is not a k-ary fat-tree (k pods of k/2 ToRs, k/2 "
                              "uplinks per ToR); the only 3-tier shape built here"));
  }
  line_no = tier[1].line;
  if (*tier[1].radix_down != k / 2) {
    return error(absl::StrCat("Tier 1: Radix_Down ", *tier[1].radix_down, " but a pod has ",
                              k / 2, " ToRs"));
  }
  line_no = tier[2].line;
  if (*tier[2].radix_down != k) {
    return error(absl::StrCat("Tier 2: Radix_Down ", *tier[2].radix_down, " but there are ", k,
                              " pods"));
  }
  out.kind = HtsimTopology::Kind::kFatTree;
  out.fat_tree.k = static_cast<uint32_t>(k);
  out.fat_tree.hosts_per_tor = static_cast<uint32_t>(*tor.radix_down);
  out.fat_tree.host_link = link[0];
  out.fat_tree.tor_agg_link = link[1];
  out.fat_tree.agg_core_link = link[2];
  line_no = 0;
  if (absl::Status s = check_fat_tree(out.fat_tree); !s.ok()) return error(std::string(s.message()));
  return out;
}

absl::StatusOr<HtsimTopology> load_htsim_topology(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return parse_htsim_topology(text.str(), path);
}

}  // namespace uet::sim
