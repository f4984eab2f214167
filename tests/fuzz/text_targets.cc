// Fuzz targets for the text readers (fuzz_targets.h): htsim .cm and .topo files, flow-size
// CDFs, and the values of an experiment file. A refusal must name the file it was given; an
// acceptance must hold what the reader's header promises, checked here against the consumers
// (the topology builders' own checks, the flow player's indices).
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "bench/ab_memory.h"
#include "bench/ab_runner.h"
#include "sim/htsim_cm.h"
#include "sim/htsim_topo.h"
#include "sim/rng.h"
#include "sim/topology.h"
#include "sim/workload.h"
#include "tests/fuzz/fuzz_targets.h"

namespace uet::fuzz {
namespace {

std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Errors name `where` first ("fuzz.cm:7: ...", or "fuzz.cm: ..." for the file as a whole).
void expect_named(const absl::Status& s, absl::string_view where) {
  if (s.ok()) return;
  if (s.message().substr(0, where.size()) != where) invariant_failed("error without the file");
}

}  // namespace

void htsim_cm_target(const uint8_t* data, size_t size) {
  auto cm = sim::parse_connection_matrix(as_text(data, size), "fuzz.cm");
  if (!cm.ok()) return expect_named(cm.status(), "fuzz.cm");
  if (cm->htsim_ids.size() != cm->flows.size()) invariant_failed("an htsim id per flow");
  for (size_t i = 0; i < cm->flows.size(); ++i) {
    const sim::FlowSpec& f = cm->flows[i];
    if (f.id != i) invariant_failed("flows[i].id == i");
    if (f.src >= cm->nodes || f.dst >= cm->nodes) invariant_failed("a host beyond Nodes");
    if (f.bytes == 0) invariant_failed("an empty flow");
    // The player starts a flow when its prerequisites complete: each must be another flow.
    for (uint32_t pre : f.after) {
      if (pre >= cm->flows.size() || pre == i) invariant_failed("a prerequisite that is no flow");
    }
  }
}

void htsim_topo_target(const uint8_t* data, size_t size) {
  auto t = sim::parse_htsim_topology(as_text(data, size), "fuzz.topo");
  if (!t.ok()) return expect_named(t.status(), "fuzz.topo");
  // What the reader accepts, the builder accepts, with the hosts the file declared.
  uint64_t hosts = 0;
  if (t->kind == sim::HtsimTopology::Kind::kLeafSpine) {
    if (!sim::check_leaf_spine(t->leaf_spine).ok()) invariant_failed("a leaf-spine we refuse");
    hosts = uint64_t{t->leaf_spine.leaves} * t->leaf_spine.hosts_per_leaf;
  } else {
    if (!sim::check_fat_tree(t->fat_tree).ok()) invariant_failed("a fat-tree we refuse");
    const uint32_t per_tor =
        t->fat_tree.hosts_per_tor == 0 ? t->fat_tree.k / 2 : t->fat_tree.hosts_per_tor;
    hosts = uint64_t{t->fat_tree.k} * (t->fat_tree.k / 2) * per_tor;
  }
  if (hosts != t->hosts) invariant_failed("hosts differ from Nodes");
  if (!(t->host_gbps > 0) || !std::isfinite(t->host_gbps)) invariant_failed("host rate");
  if (t->host_delay < 0) invariant_failed("negative delay");
}

void cdf_target(const uint8_t* data, size_t size) {
  auto cdf = sim::parse_cdf(as_text(data, size), "fuzz.cdf");
  if (!cdf.ok()) return expect_named(cdf.status(), "fuzz.cdf");
  const uint64_t lo = 1, hi = cdf->points.back().bytes;
  sim::Rng rng(size);
  for (int i = 0; i < 16; ++i) {
    const uint64_t b = cdf->sample(rng);
    if (b < lo || b > hi) invariant_failed("a sample outside the points");
  }
  const double mean = cdf->mean();
  // (Not below 1: a segment from 0 bytes samples at least 1, its mean counts from 0.)
  if (!(mean > 0) || mean > static_cast<double>(hi)) invariant_failed("a mean outside the points");
}

void ab_config_target(const uint8_t* data, size_t size) {
  ab::RunConfig rc;
  ab::Fabric& f = rc.fabric;
  // The fabric and run values an experiment file sets, by their uet-ab flag names.
  using Set = std::function<bool(absl::string_view)>;
  auto u32 = [](uint32_t* p) {
    return Set([p](absl::string_view v) { return absl::SimpleAtoi(v, p); });
  };
  auto u64 = [](uint64_t* p) {
    return Set([p](absl::string_view v) { return absl::SimpleAtoi(v, p); });
  };
  auto dbl = [](double* p) {
    return Set([p](absl::string_view v) { return absl::SimpleAtod(v, p); });
  };
  auto flag = [](bool* p) {
    return Set([p](absl::string_view v) { return absl::SimpleAtob(v, p); });
  };
  auto ns = [](Time* p) {
    return Set([p](absl::string_view v) {
      int64_t x = 0;
      if (!absl::SimpleAtoi(v, &x) || x > int64_t{1} << 40 || x < -(int64_t{1} << 40)) return false;
      *p = x * kNanosecond;
      return true;
    });
  };
  uint32_t evs = rc.uet_evs;
  const std::map<absl::string_view, Set> setters = {
      {"leaves", u32(&f.leaves)},
      {"spines", u32(&f.spines)},
      {"hosts_per_leaf", u32(&f.hosts_per_leaf)},
      {"k", u32(&f.k)},
      {"hosts_per_tor", u32(&f.hosts_per_tor)},
      {"gbps", dbl(&f.host_gbps)},
      {"fabric_gbps", dbl(&f.fabric_gbps)},
      {"core_gbps", dbl(&f.core_gbps)},
      {"latency_ns", ns(&f.link_delay)},
      {"fabric_latency_ns", ns(&f.fabric_delay)},
      {"buffer_bytes", u64(&f.buffer_bytes)},
      {"ecn", flag(&f.ecn)},
      {"ecn_kmin_bytes", u64(&f.ecn_kmin_bytes)},
      {"ecn_kmax_bytes", u64(&f.ecn_kmax_bytes)},
      {"ecn_pmax", dbl(&f.ecn_pmax)},
      {"pfc", flag(&f.pfc)},
      {"pfc_xoff_bytes", u64(&f.pfc_xoff_bytes)},
      {"pfc_xon_bytes", u64(&f.pfc_xon_bytes)},
      {"failed_links", u32(&f.failed_links)},
      {"degrade", dbl(&f.degrade)},
      {"loss", dbl(&f.fabric_loss)},
      {"mtu", u32(&rc.mtu)},
      {"evs", u32(&evs)},
      {"seed", u64(&rc.seed)},
  };
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(reinterpret_cast<const char*>(data), size), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "--transport=")) {
      rc.transport = line == "rocev2" ? ab::TransportKind::kRocev2 : ab::TransportKind::kUet;
    } else if (absl::ConsumePrefix(&line, "--topology=")) {
      f.kind = line == "fattree" ? ab::Fabric::Kind::kFatTree : ab::Fabric::Kind::kLeafSpine;
    } else if (absl::ConsumePrefix(&line, "flow=")) {
      std::vector<absl::string_view> v = absl::StrSplit(line, ',');
      sim::FlowSpec fl;
      if (v.size() != 3 || rc.flows.size() >= 64 || !absl::SimpleAtoi(v[0], &fl.src) ||
          !absl::SimpleAtoi(v[1], &fl.dst) || !absl::SimpleAtoi(v[2], &fl.bytes)) {
        continue;
      }
      fl.id = static_cast<uint32_t>(rc.flows.size());
      rc.flows.push_back(fl);
    } else if (absl::ConsumePrefix(&line, "--")) {
      const size_t eq = line.find('=');
      if (eq == absl::string_view::npos) continue;
      const auto it = setters.find(line.substr(0, eq));
      if (it != setters.end()) (void)it->second(line.substr(eq + 1));
    }
  }
  rc.uet_evs = static_cast<uint16_t>(evs);
  if (!ab::validate(rc).ok()) return;
  // A run validate() accepts has a fabric whose sizes and memory estimate are sane numbers.
  const uint32_t hosts = ab::host_count(f);
  if (hosts == 0 || hosts > sim::kMaxHosts) invariant_failed("hosts out of range");
  if (ab::port_count(f) < hosts) invariant_failed("fewer ports than hosts");
  if (ab::path_delay(f, 6) < 0) invariant_failed("negative path delay");
  const ab::MemoryEstimate m = ab::estimate_memory(rc);
  if (!(m.bytes > 0) || !std::isfinite(m.bytes) || m.why.empty()) invariant_failed("estimate");
}

}  // namespace uet::fuzz
