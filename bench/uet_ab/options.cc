// uet-ab: the flags checked and read into Options before anything is built, and one run's
// configuration from them (bench/uet_ab/uet_ab.h).
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

std::vector<uint32_t> torus_dims(const std::string& text) {
  std::vector<uint32_t> dims;
  for (absl::string_view part : absl::StrSplit(text, 'x')) {
    uint32_t k = 0;
    if (!absl::SimpleAtoi(part, &k) || k < 2 || k > 256) return {};
    dims.push_back(k);
  }
  if (dims.size() > 3) return {};
  return dims;
}

namespace {

// The fabric's and the switches' flags, and --plot's directory (created here).
void check_fabric_flags(Check& check, Options& o) {
  check.range(FLAGS_leaves, 1, 1024);
  check.range(FLAGS_spines, 1, 256);
  check.range(FLAGS_hosts_per_leaf, 1, 256);
  check.range(FLAGS_gbps, 1, 1600);
  check.range(FLAGS_tss_ns_per_frame, 0, 1e6);
  check.range(FLAGS_tss_ns_per_kib, 0, 1e6);
  check.range(FLAGS_bytes, 1, 1073741824);
  check.range(FLAGS_loss, 0, 0.5);
  check.range(FLAGS_degrade, 0, 1);
  check.one_of("degrade_queues", absl::GetFlag(FLAGS_degrade_queues), {"scaled", "fixed"});
  if (absl::GetFlag(FLAGS_fabric_gbps) != 0) check.range(FLAGS_fabric_gbps, 1, 1600);
  check.range(FLAGS_hosts_per_tor, 0, 256);
  check.range(FLAGS_latency_ns, 0, 1e6);
  check.range(FLAGS_ecn_kmin_kb, 1, 65536);
  check.range(FLAGS_ecn_kmax_kb, absl::GetFlag(FLAGS_ecn_kmin_kb), 65536);
  check.range(FLAGS_ecn_pmax, 0, 1);
  check.range(FLAGS_pfc_xoff_kb, 1, 65536);
  check.range(FLAGS_pfc_xon_kb, 0, absl::GetFlag(FLAGS_pfc_xoff_kb) - 1.0);
  check.one_of("pfc", absl::GetFlag(FLAGS_pfc), {"auto", "on", "off"});
  check.one_of("pfc_watchdog", absl::GetFlag(FLAGS_pfc_watchdog), {"report", "drop", "off"});
  check.range(FLAGS_pfc_watchdog_us, 1, 60e6);
  check.range(FLAGS_failed_links, 1, 1e6);
  check.range(FLAGS_plot_sample_us, 0.1, 10000);
  o.plot_dir = absl::GetFlag(FLAGS_plot);
  if (check.error.empty() && !o.plot_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.plot_dir, ec);
    if (ec) check.error = absl::StrCat("--plot=", o.plot_dir, ": cannot create: ", ec.message());
  }
}

// The workloads' flags: loss sweeps, web search, the verbs' options, the run's limits.
void check_workload_flags(Check& check, Options& o) {
  check.range(FLAGS_sweep_bytes, 1, 1073741824);
  o.loss_per = absl::GetFlag(FLAGS_loss_per);
  check.one_of("loss_per", o.loss_per, {"link", "path"});
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_loss_rates), ',')) {
    double v = -1;
    if (check.error.empty() && (!absl::SimpleAtod(item, &v) || !(v >= 0 && v <= 0.5))) {
      check.error = absl::StrCat("--loss_rates: '", std::string(item),
                                 "' is not a probability in 0..0.5");
    }
    o.loss_rates.push_back(v);
  }
  check.range(FLAGS_load, 0.01, 1);
  check.range(FLAGS_websearch_us, 1, 100000);
  check.range(FLAGS_evs, 1, 4096);
  if (const uint64_t rdv = absl::GetFlag(FLAGS_rendezvous_bytes); check.error.empty() && rdv != 0) {
    if (absl::GetFlag(FLAGS_verb) != "send") {
      check.error = "--rendezvous_bytes applies to --verb=send only";
    } else if (rdv < absl::GetFlag(FLAGS_mtu) || rdv > 0xFFFFFFFFu) {
      check.error = absl::StrFormat("--rendezvous_bytes=%u out of range: 0, or --mtu..4294967295",
                                    rdv);
    }
  }
  check.range(FLAGS_recv_delay_us, 0, 1e6);
  if (const double m = absl::GetFlag(FLAGS_min_rto_us);
      check.error.empty() && m != 0 && !(m >= 1 && m <= 1e4)) {
    check.error = absl::StrFormat("--min_rto_us=%g out of range: 0, or 1..10000", m);
  }
  if (check.error.empty() && absl::GetFlag(FLAGS_verb) != "send") {
    if (absl::GetFlag(FLAGS_deferrable)) {
      check.error = "--deferrable applies to --verb=send only";
    } else if (absl::GetFlag(FLAGS_recv_delay_us) != 0) {
      check.error = "--recv_delay_us applies to --verb=send only";
    }
  }
  check.range(FLAGS_buffer_kb, 16, 65536);
  check.range(FLAGS_control_buffer_kb, 1, 65536);
  check.range(FLAGS_max_ms, 1, 100000);
  check.range(FLAGS_max_memory_gb, 0, 1e6);
}

// Groups g of a dragonfly (or Dragonfly+) with `ports` global ports per group: 0, or
// 2..ports+1 with g - 1 dividing them.
void check_groups(Check& check, uint64_t ports, const char* ports_flags) {
  const uint32_t g = absl::GetFlag(FLAGS_df_g);
  if (g == 0) return;
  check.range(FLAGS_df_g, 2, static_cast<double>(ports + 1));
  if (check.error.empty() && ports % (g - 1) != 0) {
    check.fail(
        absl::StrFormat("--df_g=%u invalid: g - 1 must divide %s = %u (as many global "
                        "links between every two groups); 0: %u",
                        g, ports_flags, ports, ports + 1));
  }
}

// The families' size flags: every range, and what only the chosen family needs.
void check_topology_flags(Check& check, const Options& o) {
  for (const auto* f : {&FLAGS_df_p, &FLAGS_df_a, &FLAGS_df_h, &FLAGS_dfp_leaves, &FLAGS_dfp_spines,
                        &FLAGS_dfp_hosts_per_leaf, &FLAGS_hosts_per_switch,
                        &FLAGS_rail_servers_per_leaf, &FLAGS_rail_spines}) {
    check.range(*f, 1, 256);
  }
  check.range(FLAGS_hypercube_dim, 1, 16);
  check.range(FLAGS_rail_servers, 1, 65536);
  check.one_of("rail_planes", absl::GetFlag(FLAGS_rail_planes), {"joined", "apart"});
  if (absl::GetFlag(FLAGS_global_gbps) != 0) check.range(FLAGS_global_gbps, 1, 1600);
  check.range(FLAGS_global_latency_ns, -1, 1e6);
  check.one_of("routing", absl::GetFlag(FLAGS_routing), {"minimal", "valiant", "ugal"});
  check.one_of("deadlock_free", absl::GetFlag(FLAGS_deadlock_free), {"off", "tagger", "auto"});
  if (const uint64_t bias = absl::GetFlag(FLAGS_ugal_bias_bytes); bias > (uint64_t{1} << 30)) {
    check.fail(absl::StrFormat("--ugal_bias_bytes=%d out of range: 0..1073741824", bias));
  }
  if (check.error.empty() && absl::GetFlag(FLAGS_dimension_order) &&
      (!absl::GetFlag(FLAGS_topo).empty() ||
       (o.topology != "torus" && o.topology != "hypercube"))) {
    check.fail(absl::StrCat("--dimension_order applies to --topology=torus or hypercube only (not ",
                            absl::GetFlag(FLAGS_topo).empty() ? o.topology : "--topo", ")"));
  }
  if (!absl::GetFlag(FLAGS_topo).empty()) return;  // the file's fabric
  if (o.topology == "dragonfly") {
    check_groups(check, uint64_t{absl::GetFlag(FLAGS_df_a)} * absl::GetFlag(FLAGS_df_h),
                 "--df_a x --df_h");
  } else if (o.topology == "dragonflyplus") {
    check_groups(check, uint64_t{absl::GetFlag(FLAGS_dfp_spines)} * absl::GetFlag(FLAGS_df_h),
                 "--dfp_spines x --df_h");
  } else if (o.topology == "torus" && check.error.empty() &&
             torus_dims(absl::GetFlag(FLAGS_torus)).empty()) {
    check.fail(absl::StrCat("--torus=", absl::GetFlag(FLAGS_torus),
                            " invalid: K, KxK or KxKxK, each 2..256"));
  } else if (o.topology == "rail") {
    check.range(FLAGS_gpus_per_server, 1, 64);
  } else if (o.topology == "graph" && check.error.empty() && absl::GetFlag(FLAGS_graph).empty()) {
    check.fail("--topology=graph needs --graph=FILE");
  }
  if (check.error.empty() && o.topology != "graph" && !absl::GetFlag(FLAGS_graph).empty()) {
    check.fail("--graph needs --topology=graph");
  }
}

// The packet size, the topology's kind, and what each transport runs with.
void check_transport_flags(Check& check, Options& o) {
  o.mtu = absl::GetFlag(FLAGS_mtu);
  if (!bench::is_roce_mtu(o.mtu))
    check.fail(absl::StrFormat("--mtu=%u invalid: one of %s", o.mtu, bench::kRoceMtus));
  o.topology = absl::GetFlag(FLAGS_topology);
  check.one_of("topology", o.topology,
               {"leafspine", "fattree", "dragonfly", "dragonflyplus", "torus", "hypercube", "rail",
                "graph"});
  check_topology_flags(check, o);
  if (const uint32_t k = absl::GetFlag(FLAGS_k); check.error.empty() && o.topology == "fattree" &&
                                                 absl::GetFlag(FLAGS_topo).empty() &&
                                                 (k < 2 || k > 256 || k % 2 != 0)) {
    check.error = absl::StrFormat("--k=%u out of range: even, 2..256 (--topology=fattree)", k);
  }
  if (check.error.empty()) {
    if (auto p = DcqcnConfig::preset(absl::GetFlag(FLAGS_dcqcn), 100); !p.ok()) {
      check.error = absl::StrCat("--dcqcn: ", std::string(p.status().message()));
    }
  }
  const std::string lb = absl::GetFlag(FLAGS_lb);
  bool found = false;
  for (int a = 0; a < pathsel::kNumAlgorithms; ++a) {
    if (lb == pathsel::to_string(static_cast<pathsel::Algorithm>(a))) {
      o.lb = static_cast<pathsel::Algorithm>(a);
      found = true;
    }
  }
  if (check.error.empty() && !found) {
    check.error = "--lb=" + lb + " unknown: fixed, oblivious, reps, bitmap or mixed";
  }
  const std::string cc = absl::GetFlag(FLAGS_cc);
  check.one_of("cc", cc, {"nscc", "rccc", "both"});
  if (cc == "rccc") o.cc = CcMode::kRccc;
  if (cc == "both") o.cc = CcMode::kNsccRccc;
  o.uet_mode = absl::GetFlag(FLAGS_uet_mode);
  check.one_of("uet_mode", o.uet_mode, {"rud", "rod", "rudi", "uud"});
  o.verb = absl::GetFlag(FLAGS_verb);
  check.one_of("verb", o.verb, {"write", "send", "atomic"});
  if (check.error.empty() && o.verb != "write" && (o.uet_mode == "rudi" || o.uet_mode == "uud")) {
    check.error = "--verb=" + o.verb + " runs on --uet_mode=rud or rod (RUDI carries idempotent "
                  "operations only, UUD no matching or atomics)";
  }
  const std::string tr = absl::GetFlag(FLAGS_transport);
  check.one_of("transport", tr, {"uet", "rocev2", "both"});
  if (tr == "uet" || tr == "both") o.transports.push_back(TransportKind::kUet);
  if (tr == "rocev2" || tr == "both") o.transports.push_back(TransportKind::kRocev2);
}

}  // namespace

absl::StatusOr<Options> read_options() {
  Options o;
  Check check;
  check_fabric_flags(check, o);
  check_workload_flags(check, o);
  check_transport_flags(check, o);
  if (!check.error.empty()) return absl::InvalidArgumentError(check.error);
  return o;
}

absl::Status read_tss_options(Options& o) {
  auto refuse = [](std::string why) { return absl::InvalidArgumentError(std::move(why)); };
  if (std::string why = bench::tss_backend_refusal(absl::GetFlag(FLAGS_tss_backend),
                                                   absl::GetFlag(FLAGS_tss), &o.tss_backend);
      !why.empty()) {
    return refuse(std::move(why));
  }
  if (const std::string kf = absl::GetFlag(FLAGS_tss_key_file); !kf.empty()) {
    if (!absl::GetFlag(FLAGS_tss)) return refuse("--tss_key_file needs --tss");
    auto keys = tss::read_key_file(kf);
    if (!keys.ok()) return refuse(absl::StrCat("--tss_key_file: ", keys.status().message()));
    o.tss_domains = keys->domains;
  }
  return absl::OkStatus();
}

RunConfig run_config(const Options& o, const Fabric& base, const std::string& scenario,
                     double fabric_loss, TransportKind t) {
  const bool lossy = scenario == "loss" || scenario == "loss-sweep";
  RunConfig c;
  c.scenario = scenario;
  c.fabric = base;
  c.fabric.fabric_loss = fabric_loss;
  if (scenario == "failure") {
    c.fabric.failed_links = absl::GetFlag(FLAGS_failed_links);
    c.fabric.degrade = absl::GetFlag(FLAGS_degrade);
    c.fabric.degrade_scales_queues = absl::GetFlag(FLAGS_degrade_queues) == "scaled";
    c.fabric.fail_at = static_cast<Time>(absl::GetFlag(FLAGS_fail_at_us)) * kMicrosecond;
  }
  // RoCEv2 as deployed: a lossless (PFC) class with ECN; except under random loss, where
  // PFC cannot help and go-back-N shows.
  const std::string pfc = absl::GetFlag(FLAGS_pfc);
  c.fabric.pfc = pfc == "on" || (pfc == "auto" && t == TransportKind::kRocev2 && !lossy);
  c.transport = t;
  c.seed = absl::GetFlag(FLAGS_seed);
  c.mtu = o.mtu;
  c.uet_evs = static_cast<uint16_t>(absl::GetFlag(FLAGS_evs));
  c.dcqcn_preset = absl::GetFlag(FLAGS_dcqcn);
  c.uet_lb = o.lb;
  c.uet_cc = o.cc;
  c.uet_mode = o.uet_mode == "rod"    ? DeliveryMode::kRod
               : o.uet_mode == "rudi" ? DeliveryMode::kRudi
               : o.uet_mode == "uud"  ? DeliveryMode::kUud
                                      : DeliveryMode::kRud;
  c.verb = o.verb == "send" ? Verb::kSend : o.verb == "atomic" ? Verb::kAtomic : Verb::kWrite;
  c.uet_rendezvous_bytes = absl::GetFlag(FLAGS_rendezvous_bytes);
  c.uet_deferrable = absl::GetFlag(FLAGS_deferrable);
  c.uet_rack = absl::GetFlag(FLAGS_rack);
  c.uet_ack_ooo = absl::GetFlag(FLAGS_ack_ooo);
  c.recv_delay = static_cast<Time>(absl::GetFlag(FLAGS_recv_delay_us) * kMicrosecond);
  c.uet_min_rto = static_cast<Time>(absl::GetFlag(FLAGS_min_rto_us) * kMicrosecond);
  c.uet_tss = absl::GetFlag(FLAGS_tss);
  c.tss_cost.ps_per_frame = static_cast<Time>(absl::GetFlag(FLAGS_tss_ns_per_frame) * kNanosecond);
  c.tss_cost.ps_per_byte = absl::GetFlag(FLAGS_tss_ns_per_kib) * kNanosecond / 1024.0;
  c.tss_domains = o.tss_domains;
  c.tss_backend = o.tss_backend;
  c.max_time = static_cast<Time>(absl::GetFlag(FLAGS_max_ms)) * kMillisecond;
  if (!o.plot_dir.empty()) {
    c.sample_every = static_cast<Time>(absl::GetFlag(FLAGS_plot_sample_us) * kMicrosecond);
  }
  if (const std::string dir = absl::GetFlag(FLAGS_pcap); !dir.empty()) {
    c.pcap_prefix = absl::StrCat(dir, "/", scenario, "_", to_string(t));
    if (scenario == "loss-sweep") {
      absl::StrAppend(&c.pcap_prefix, absl::StrFormat("_loss%g", fabric_loss));
    }
  }
  return c;
}

}  // namespace uet::ab
