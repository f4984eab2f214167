// uet-ab: the fabric and the flows the flags ask for.
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

absl::StatusOr<Fabric> fabric_from_flags() {
  Fabric f;
  f.kind = absl::GetFlag(FLAGS_topology) == "fattree" ? Fabric::Kind::kFatTree
                                                      : Fabric::Kind::kLeafSpine;
  f.leaves = absl::GetFlag(FLAGS_leaves);
  f.spines = absl::GetFlag(FLAGS_spines);
  f.hosts_per_leaf = absl::GetFlag(FLAGS_hosts_per_leaf);
  f.k = absl::GetFlag(FLAGS_k);
  f.host_gbps = f.fabric_gbps = absl::GetFlag(FLAGS_gbps);
  if (absl::GetFlag(FLAGS_fabric_gbps) > 0) f.fabric_gbps = absl::GetFlag(FLAGS_fabric_gbps);
  f.hosts_per_tor = absl::GetFlag(FLAGS_hosts_per_tor);
  f.link_delay = static_cast<Time>(absl::GetFlag(FLAGS_latency_ns)) * kNanosecond;
  f.ecn = absl::GetFlag(FLAGS_ecn);
  f.ecn_kmin_bytes = uint64_t{absl::GetFlag(FLAGS_ecn_kmin_kb)} * 1024;
  f.ecn_kmax_bytes = uint64_t{absl::GetFlag(FLAGS_ecn_kmax_kb)} * 1024;
  f.ecn_pmax = absl::GetFlag(FLAGS_ecn_pmax);
  f.pfc_xoff_bytes = uint64_t{absl::GetFlag(FLAGS_pfc_xoff_kb)} * 1024;
  f.pfc_xon_bytes = uint64_t{absl::GetFlag(FLAGS_pfc_xon_kb)} * 1024;
  const std::string watchdog = absl::GetFlag(FLAGS_pfc_watchdog);
  f.pfc_watchdog.enabled = watchdog != "off";
  f.pfc_watchdog.action =
      watchdog == "drop" ? sim::PfcWatchdogAction::kDrop : sim::PfcWatchdogAction::kReport;
  f.pfc_watchdog.detection_time = f.pfc_watchdog.restoration_time =
      static_cast<Time>(absl::GetFlag(FLAGS_pfc_watchdog_us)) * kMicrosecond;
  f.trimming = absl::GetFlag(FLAGS_trimming);
  f.buffer_bytes = absl::GetFlag(FLAGS_buffer_kb) * 1024;
  f.frame_capacity = 256;  // headers are real bytes; payloads travel by length
  if (const std::string path = absl::GetFlag(FLAGS_topo); !path.empty()) {
    auto t = sim::load_htsim_topology(path);
    if (!t.ok()) return t.status();
    f.host_gbps = t->host_gbps;
    f.link_delay = t->host_delay;
    if (t->kind == sim::HtsimTopology::Kind::kLeafSpine) {
      f.kind = Fabric::Kind::kLeafSpine;
      f.leaves = t->leaf_spine.leaves;
      f.spines = t->leaf_spine.spines;
      f.hosts_per_leaf = t->leaf_spine.hosts_per_leaf;
      f.fabric_gbps = t->leaf_spine.fabric_link.gbps;
      f.fabric_delay = t->leaf_spine.fabric_link.delay;
    } else {
      f.kind = Fabric::Kind::kFatTree;
      f.k = t->fat_tree.k;
      f.hosts_per_tor = t->fat_tree.hosts_per_tor;
      f.fabric_gbps = t->fat_tree.tor_agg_link.gbps;
      f.fabric_delay = t->fat_tree.tor_agg_link.delay;
      f.core_gbps = t->fat_tree.agg_core_link.gbps;
      f.core_delay = t->fat_tree.agg_core_link.delay;
    }
  }
  return f;
}

namespace {

// The scenario's flows on `hosts` hosts.
absl::StatusOr<std::vector<sim::FlowSpec>> scenario_flows(const std::string& scenario,
                                                          uint32_t hosts, uint64_t seed) {
  sim::Rng rng(seed);
  const uint64_t bytes = absl::GetFlag(FLAGS_bytes);
  if (scenario == "permutation" || scenario == "loss" || scenario == "failure") {
    return sim::permutation(hosts, bytes, rng);
  }
  if (scenario == "incast") return sim::incast(hosts, absl::GetFlag(FLAGS_fan_in), 0, bytes);
  if (scenario == "alltoall") return sim::all_to_all(hosts, bytes);
  if (scenario == "allreduce") return sim::ring_allreduce(hosts, bytes);
  if (scenario == "cm") {
    const std::string path = absl::GetFlag(FLAGS_cm);
    if (path.empty()) return absl::InvalidArgumentError("--scenario=cm needs --cm=FILE");
    auto cm = sim::load_connection_matrix(path);
    if (!cm.ok()) return cm.status();
    if (cm->nodes > hosts) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--cm=%s: Nodes %u, but the fabric has %u hosts (size it with --leaves/--hosts_per_leaf "
          "or --k)", path, cm->nodes, hosts));
    }
    return std::move(cm->flows);
  }
  if (scenario == "loss-sweep") {
    // One flow across the fabric: host 0 to the last host (another leaf or pod).
    sim::FlowSpec f;
    f.src = 0;
    f.dst = hosts - 1;
    f.bytes = absl::GetFlag(FLAGS_sweep_bytes);
    return std::vector<sim::FlowSpec>{f};
  }
  if (scenario == "websearch") {
    auto cdf = sim::load_cdf(sim::sim_data_path("websearch.cdf"));
    if (!cdf.ok()) return cdf.status();
    return sim::poisson(hosts, absl::GetFlag(FLAGS_load), absl::GetFlag(FLAGS_gbps), *cdf,
                        static_cast<Time>(absl::GetFlag(FLAGS_websearch_us)) * kMicrosecond, rng);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--scenario=", scenario,
      " unknown: standard, permutation, incast, alltoall, allreduce, collective, trace, websearch, loss, "
      "loss-sweep, failure, cm"));
}

}  // namespace

absl::StatusOr<std::vector<sim::FlowSpec>> flows_for(const std::string& scenario, uint32_t hosts,
                                                     uint64_t seed) {
  const auto refuse = [](std::string why) { return absl::InvalidArgumentError(std::move(why)); };
  const uint64_t bytes = absl::GetFlag(FLAGS_bytes);
  if (scenario == "incast" &&
      (absl::GetFlag(FLAGS_fan_in) < 1 || absl::GetFlag(FLAGS_fan_in) >= hosts)) {
    return refuse(absl::StrFormat("--fan_in=%u out of range: 1..%u (the fabric's hosts - 1)",
                                  absl::GetFlag(FLAGS_fan_in), hosts - 1));
  }
  if (scenario == "allreduce" && bytes < hosts) {
    return refuse(absl::StrFormat(
        "--bytes=%lu out of range for --scenario=allreduce: %u..1073741824 (a byte per host)",
        bytes, hosts));
  }
  if (scenario == "alltoall" && uint64_t{hosts} * (hosts - 1) > sim::kMaxWorkloadFlows) {
    return refuse(absl::StrFormat(
        "--scenario=alltoall: %u hosts make %lu flows, at most %lu (4096 hosts): lower "
        "--leaves / --hosts_per_leaf or --k",
        hosts, uint64_t{hosts} * (hosts - 1), sim::kMaxWorkloadFlows));
  }
  if (scenario != "cm" && hosts < 2) {
    return refuse(absl::StrFormat("--scenario=%s needs at least 2 hosts, the fabric has %u",
                                  scenario, hosts));
  }
  auto flows = scenario_flows(scenario, hosts, seed);
  if (!flows.ok() && absl::IsInvalidArgument(flows.status()) && scenario != "cm" &&
      flows.status().message().substr(0, 2) != "--") {
    // A generator's own check (websearch: too many flows): name the scenario's flags.
    return refuse(absl::StrCat("--scenario=", scenario, ": ", flows.status().message(),
                               scenario == "websearch" ? " (--load, --websearch_us)" : ""));
  }
  return flows;
}


}  // namespace uet::ab
