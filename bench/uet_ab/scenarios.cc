// uet-ab: the fabric and the flows the flags ask for.
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

namespace {

// --deadlock_free=auto: where a lossless deployment needs and has the classes (Hu et al.,
// CoNEXT 2017: Tagger on the fabrics whose routes close cycles): a dragonfly's routes within
// the switches' lossless priorities (sim::LosslessClasses::tagger's count), a torus's
// dimension-order routes (the dateline); on a torus or hypercube routed by every shortest
// path, PFC runs go in dimension order (Fabric::lossless_dimension_order). Clos routes need one
// class: off, unchanged.
bool tagger_fits(const Fabric& f) {
  if (f.kind == Fabric::Kind::kDragonfly || f.kind == Fabric::Kind::kDragonflyPlus) {
    const int per_leg = f.routing.group_minimal ? 1 : 2;
    const int legs = f.routing.mode == sim::RoutingMode::kMinimal ? 1 : 2;
    return 1 + per_leg * legs <= sim::kLosslessPriorities;
  }
  return f.kind == Fabric::Kind::kTorus && f.routing.dimension_order &&
         f.routing.mode == sim::RoutingMode::kMinimal;
}

Fabric::Kind kind_of(const std::string& topology) {
  for (auto k : {Fabric::Kind::kFatTree, Fabric::Kind::kDragonfly, Fabric::Kind::kDragonflyPlus,
                 Fabric::Kind::kTorus, Fabric::Kind::kHypercube, Fabric::Kind::kRail,
                 Fabric::Kind::kGraph}) {
    if (topology == to_string(k)) return k;
  }
  return Fabric::Kind::kLeafSpine;
}

// The AI/HPC families' sizes (their links come from the tiers: ab_fabric.cc), and the graph.
absl::Status family_from_flags(Fabric& f) {
  f.dragonfly.p = absl::GetFlag(FLAGS_df_p);
  f.dragonfly.a = absl::GetFlag(FLAGS_df_a);
  f.dragonfly.h = f.dragonfly_plus.h = absl::GetFlag(FLAGS_df_h);
  f.dragonfly.g = f.dragonfly_plus.g = absl::GetFlag(FLAGS_df_g);
  f.dragonfly_plus.leaves = absl::GetFlag(FLAGS_dfp_leaves);
  f.dragonfly_plus.spines = absl::GetFlag(FLAGS_dfp_spines);
  f.dragonfly_plus.hosts_per_leaf = absl::GetFlag(FLAGS_dfp_hosts_per_leaf);
  f.torus.dims = torus_dims(absl::GetFlag(FLAGS_torus));
  f.torus.wraparound = absl::GetFlag(FLAGS_torus_wrap);
  f.torus.hosts_per_switch = f.hypercube.hosts_per_switch = absl::GetFlag(FLAGS_hosts_per_switch);
  f.hypercube.dim = absl::GetFlag(FLAGS_hypercube_dim);
  f.rail.servers = absl::GetFlag(FLAGS_rail_servers);
  f.rail.gpus_per_server = absl::GetFlag(FLAGS_gpus_per_server);
  f.rail.servers_per_leaf = absl::GetFlag(FLAGS_rail_servers_per_leaf);
  f.rail.spines = absl::GetFlag(FLAGS_rail_spines);
  f.rail.planes_joined = absl::GetFlag(FLAGS_rail_planes) != "apart";
  if (absl::GetFlag(FLAGS_global_gbps) > 0) f.core_gbps = absl::GetFlag(FLAGS_global_gbps);
  if (absl::GetFlag(FLAGS_global_latency_ns) >= 0) {
    f.core_delay = static_cast<Time>(absl::GetFlag(FLAGS_global_latency_ns)) * kNanosecond;
  }
  const std::string routing = absl::GetFlag(FLAGS_routing);
  f.routing.mode = routing == "valiant" ? sim::RoutingMode::kValiant
                   : routing == "ugal"  ? sim::RoutingMode::kUgal
                                        : sim::RoutingMode::kMinimal;
  f.routing.dimension_order = absl::GetFlag(FLAGS_dimension_order);
  f.routing.group_minimal = absl::GetFlag(FLAGS_group_minimal);
  f.routing.ugal_bias_bytes = absl::GetFlag(FLAGS_ugal_bias_bytes);
  const std::string deadlock_free = absl::GetFlag(FLAGS_deadlock_free);
  f.routing.deadlock_free =
      deadlock_free == "tagger" || (deadlock_free == "auto" && tagger_fits(f))
          ? sim::DeadlockFree::kTagger
          : sim::DeadlockFree::kOff;
  f.lossless_dimension_order = deadlock_free == "auto";
  if (f.kind == Fabric::Kind::kGraph) {
    auto g = sim::load_graph_topology(absl::GetFlag(FLAGS_graph));
    if (!g.ok()) return absl::InvalidArgumentError(absl::StrCat("--graph: ", g.status().message()));
    f.graph = std::make_shared<const sim::GraphTopology>(std::move(*g));
  }
  return absl::OkStatus();
}

}  // namespace

const char* size_flags_of(Fabric::Kind k) {
  switch (k) {
    case Fabric::Kind::kLeafSpine:
      return "--leaves / --hosts_per_leaf";
    case Fabric::Kind::kFatTree:
      return "--k / --hosts_per_tor";
    case Fabric::Kind::kDragonfly:
      return "--df_p / --df_a / --df_h / --df_g";
    case Fabric::Kind::kDragonflyPlus:
      return "--dfp_leaves / --dfp_hosts_per_leaf / --df_h / --df_g";
    case Fabric::Kind::kTorus:
      return "--torus / --hosts_per_switch";
    case Fabric::Kind::kHypercube:
      return "--hypercube_dim / --hosts_per_switch";
    case Fabric::Kind::kRail:
      return "--rail_servers / --gpus_per_server";
    case Fabric::Kind::kGraph:
      return "the --graph file";
  }
  return "the fabric's size";
}

namespace {

// What sizes the fabric the flags ask for, in a refusal: the --topo file, or the kind's flags.
std::string size_flags() {
  if (!absl::GetFlag(FLAGS_topo).empty()) return "the --topo file's Nodes";
  return size_flags_of(kind_of(absl::GetFlag(FLAGS_topology)));
}

}  // namespace

bool rails_apart(const Fabric& f) {
  return f.kind == Fabric::Kind::kRail && !f.rail.planes_joined && f.rail.gpus_per_server > 1;
}

std::string fabric_title(const Fabric& f) {
  switch (f.kind) {
    case Fabric::Kind::kDragonfly:
      return absl::StrFormat("dragonfly p=%u a=%u h=%u g=%u", f.dragonfly.p, f.dragonfly.a,
                             f.dragonfly.h, f.dragonfly.groups());
    case Fabric::Kind::kDragonflyPlus:
      return absl::StrFormat("dragonflyplus %u leaves x %u hosts, %u spines, h=%u g=%u per group",
                             f.dragonfly_plus.leaves, f.dragonfly_plus.hosts_per_leaf,
                             f.dragonfly_plus.spines, f.dragonfly_plus.h,
                             f.dragonfly_plus.groups());
    case Fabric::Kind::kTorus:
      return absl::StrFormat("%s %s, %u hosts per switch", f.torus.wraparound ? "torus" : "mesh",
                             absl::StrJoin(f.torus.dims, "x"), f.torus.hosts_per_switch);
    case Fabric::Kind::kHypercube:
      return absl::StrFormat("hypercube n=%u, %u hosts per switch", f.hypercube.dim,
                             f.hypercube.hosts_per_switch);
    case Fabric::Kind::kRail:
      return absl::StrFormat("rail %u servers x %u GPUs, %u servers per leaf, %u spines%s",
                             f.rail.servers, f.rail.gpus_per_server, f.rail.servers_per_leaf,
                             f.rail.spines, f.rail.planes_joined ? "" : " per plane, planes apart");
    case Fabric::Kind::kGraph:
      return absl::StrCat("graph ", absl::GetFlag(FLAGS_graph));
    default:
      return to_string(f.kind);
  }
}

absl::StatusOr<Fabric> fabric_from_flags() {
  Fabric f;
  f.kind = kind_of(absl::GetFlag(FLAGS_topology));
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
  f.trim_last_half = absl::GetFlag(FLAGS_trim_last_half);
  f.buffer_bytes = absl::GetFlag(FLAGS_buffer_kb) * 1024;
  f.control_buffer_bytes = absl::GetFlag(FLAGS_control_buffer_kb) * 1024;
  f.frame_capacity = 256;  // headers are real bytes; payloads travel by length
  if (absl::Status st = family_from_flags(f); !st.ok()) return st;
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
  // A frame keeps only its headers as bytes: half the memory per frame in flight. Without
  // TSS the largest stack uet-ab's verbs make is 126 bytes (a UET rendezvous send with RCCC;
  // a fetching add 114); TSS adds 28 or 32 (ab::validate refuses a frame below the run's
  // longest stack: an engine refuses such a frame, never cuts one),
  // so with TSS, and with pcaps (which show what bytes a frame holds), fabrics from 4096
  // hosts keep 160 and smaller ones 256.
  if (absl::GetFlag(FLAGS_pcap).empty() && !absl::GetFlag(FLAGS_tss)) {
    f.frame_capacity = 128;
  } else if (host_count(f) >= 4096) {
    f.frame_capacity = 160;
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
  if (scenario == "mix") {
    return sim::permutation_incasts(hosts, absl::GetFlag(FLAGS_incasts),
                                    absl::GetFlag(FLAGS_fan_in), bytes, rng);
  }
  if (scenario == "alltoall") return sim::all_to_all(hosts, bytes);
  if (scenario == "allreduce") return sim::ring_allreduce(hosts, bytes);
  if (scenario == "cm") {
    const std::string path = absl::GetFlag(FLAGS_cm);
    if (path.empty()) return absl::InvalidArgumentError("--scenario=cm needs --cm=FILE");
    auto cm = sim::load_connection_matrix(path);
    if (!cm.ok()) return cm.status();
    if (cm->nodes > hosts) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--cm=%s: Nodes %u, but the fabric has %u hosts (size it with %s)", path,
                          cm->nodes, hosts, size_flags()));
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
      " unknown: standard, permutation, incast, mix, alltoall, allreduce, collective, trace, websearch, loss, "
      "loss-sweep, failure, cm"));
}

absl::StatusOr<std::vector<sim::FlowSpec>> flows_on(const std::string& scenario, uint32_t hosts,
                                                    uint64_t seed);

// Rail planes kept apart: the scenario drawn on each rail's hosts (GPU r of server s is host
// s*G + r), rail r's from the seed mixed with r (rail 0's: the seed), ids and prerequisites
// numbered rail after rail. loss-sweep's one flow stays one, on rail 0.
absl::StatusOr<std::vector<sim::FlowSpec>> per_rail(const std::string& scenario, uint32_t hosts,
                                                    uint32_t rails, uint64_t seed) {
  std::vector<sim::FlowSpec> all;
  for (uint32_t r = 0; r < (scenario == "loss-sweep" ? 1 : rails); ++r) {
    auto flows = flows_on(scenario, hosts / rails, r == 0 ? seed : sim::mix64(r, seed));
    if (!flows.ok()) return flows.status();
    const auto base = static_cast<uint32_t>(all.size());
    for (sim::FlowSpec& f : *flows) {
      f.id += base;
      f.src = f.src * rails + r;
      f.dst = f.dst * rails + r;
      for (uint32_t& a : f.after) a += base;
      all.push_back(std::move(f));
    }
  }
  return all;
}

}  // namespace

absl::StatusOr<std::vector<sim::FlowSpec>> flows_for(const std::string& scenario, uint32_t hosts,
                                                     uint64_t seed) {
  const uint32_t rails = absl::GetFlag(FLAGS_gpus_per_server);
  if (absl::GetFlag(FLAGS_topo).empty() && absl::GetFlag(FLAGS_topology) == "rail" &&
      absl::GetFlag(FLAGS_rail_planes) == "apart" && rails > 1 && scenario != "cm") {
    return per_rail(scenario, hosts, rails, seed);
  }
  return flows_on(scenario, hosts, seed);
}

namespace {

// The scenario's flows on `hosts` hosts, checked.
absl::StatusOr<std::vector<sim::FlowSpec>> flows_on(const std::string& scenario, uint32_t hosts,
                                                    uint64_t seed) {
  const auto refuse = [](std::string why) { return absl::InvalidArgumentError(std::move(why)); };
  const uint64_t bytes = absl::GetFlag(FLAGS_bytes);
  if (scenario == "mix" && (absl::GetFlag(FLAGS_incasts) < 1 || absl::GetFlag(FLAGS_incasts) > hosts)) {
    return refuse(absl::StrFormat("--incasts=%u out of range: 1..%u (the fabric's hosts)",
                                  absl::GetFlag(FLAGS_incasts), hosts));
  }
  if (scenario == "mix" && hosts + uint64_t{absl::GetFlag(FLAGS_incasts)} *
                                       absl::GetFlag(FLAGS_fan_in) > sim::kMaxWorkloadFlows) {
    return refuse(absl::StrFormat(
        "--scenario=mix: %u hosts + --incasts=%u x --fan_in=%u make %lu flows, at most %lu: "
        "lower --incasts or --fan_in",
        hosts, absl::GetFlag(FLAGS_incasts), absl::GetFlag(FLAGS_fan_in),
        hosts + uint64_t{absl::GetFlag(FLAGS_incasts)} * absl::GetFlag(FLAGS_fan_in),
        sim::kMaxWorkloadFlows));
  }
  if ((scenario == "incast" || scenario == "mix") &&
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
        "--scenario=alltoall: %u hosts make %lu flows, at most %lu (4096 hosts): lower %s", hosts,
        uint64_t{hosts} * (hosts - 1), sim::kMaxWorkloadFlows, size_flags()));
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

}  // namespace
}  // namespace uet::ab
