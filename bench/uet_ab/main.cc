// uet-ab: UET against RoCEv2 on the same simulated fabric, workload and seed, side by side.
//
//   build/bin/uet-ab                                   # the standard comparison (README)
//   build/bin/uet-ab --scenario=incast --fan_in=32 --transport=both --json=out.json
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

int run_main() {
  Check check;
  check.range("leaves", absl::GetFlag(FLAGS_leaves), 1, 1024);
  check.range("spines", absl::GetFlag(FLAGS_spines), 1, 256);
  check.range("hosts_per_leaf", absl::GetFlag(FLAGS_hosts_per_leaf), 1, 256);
  check.range("gbps", absl::GetFlag(FLAGS_gbps), 1, 1600);
  check.range("tss_ns_per_frame", absl::GetFlag(FLAGS_tss_ns_per_frame), 0, 1e6);
  check.range("tss_ns_per_kib", absl::GetFlag(FLAGS_tss_ns_per_kib), 0, 1e6);
  check.range("bytes", static_cast<double>(absl::GetFlag(FLAGS_bytes)), 1, 1073741824);
  check.range("loss", absl::GetFlag(FLAGS_loss), 0, 0.5);
  check.range("degrade", absl::GetFlag(FLAGS_degrade), 0, 1);
  if (const std::string dq = absl::GetFlag(FLAGS_degrade_queues); dq != "scaled" && dq != "fixed") {
    check.fail("--degrade_queues=" + dq + " unknown: scaled or fixed");
  }
  if (absl::GetFlag(FLAGS_fabric_gbps) != 0) check.range("fabric_gbps", absl::GetFlag(FLAGS_fabric_gbps), 1, 1600);
  check.range("hosts_per_tor", absl::GetFlag(FLAGS_hosts_per_tor), 0, 256);
  check.range("latency_ns", absl::GetFlag(FLAGS_latency_ns), 0, 1e6);
  check.range("ecn_kmin_kb", absl::GetFlag(FLAGS_ecn_kmin_kb), 1, 65536);
  check.range("ecn_kmax_kb", absl::GetFlag(FLAGS_ecn_kmax_kb), absl::GetFlag(FLAGS_ecn_kmin_kb), 65536);
  check.range("ecn_pmax", absl::GetFlag(FLAGS_ecn_pmax), 0, 1);
  check.range("pfc_xoff_kb", absl::GetFlag(FLAGS_pfc_xoff_kb), 1, 65536);
  check.range("pfc_xon_kb", absl::GetFlag(FLAGS_pfc_xon_kb), 0, absl::GetFlag(FLAGS_pfc_xoff_kb) - 1.0);
  if (const std::string pfc = absl::GetFlag(FLAGS_pfc); pfc != "auto" && pfc != "on" && pfc != "off") {
    check.fail("--pfc=" + pfc + " unknown: auto, on or off");
  }
  check.range("failed_links", absl::GetFlag(FLAGS_failed_links), 1, 1e6);
  check.range("plot_sample_us", absl::GetFlag(FLAGS_plot_sample_us), 0.1, 10000);
  const std::string plot_dir = absl::GetFlag(FLAGS_plot);
  if (check.error.empty() && !plot_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(plot_dir, ec);
    if (ec) check.error = absl::StrCat("--plot=", plot_dir, ": cannot create: ", ec.message());
  }
  check.range("sweep_bytes", static_cast<double>(absl::GetFlag(FLAGS_sweep_bytes)), 1, 1073741824);
  const std::string loss_per = absl::GetFlag(FLAGS_loss_per);
  if (check.error.empty() && loss_per != "link" && loss_per != "path")
    check.error = "--loss_per=" + loss_per + " unknown: link or path";
  std::vector<double> loss_rates;
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_loss_rates), ',')) {
    double v = -1;
    if (check.error.empty() && (!absl::SimpleAtod(item, &v) || !(v >= 0 && v <= 0.5))) {
      check.error = absl::StrCat("--loss_rates: '", std::string(item),
                                 "' is not a probability in 0..0.5");
    }
    loss_rates.push_back(v);
  }
  check.range("load", absl::GetFlag(FLAGS_load), 0.01, 1);
  check.range("websearch_us", absl::GetFlag(FLAGS_websearch_us), 1, 100000);
  check.range("evs", absl::GetFlag(FLAGS_evs), 1, 4096);
  if (const uint64_t rdv = absl::GetFlag(FLAGS_rendezvous_bytes); check.error.empty() && rdv != 0) {
    if (absl::GetFlag(FLAGS_verb) != "send") {
      check.error = "--rendezvous_bytes applies to --verb=send only";
    } else if (rdv < absl::GetFlag(FLAGS_mtu) || rdv > 0xFFFFFFFFu) {
      check.error = absl::StrFormat("--rendezvous_bytes=%u out of range: 0, or --mtu..4294967295",
                                    rdv);
    }
  }
  check.range("recv_delay_us", absl::GetFlag(FLAGS_recv_delay_us), 0, 1e6);
  if (check.error.empty() && absl::GetFlag(FLAGS_verb) != "send") {
    if (absl::GetFlag(FLAGS_deferrable)) {
      check.error = "--deferrable applies to --verb=send only";
    } else if (absl::GetFlag(FLAGS_recv_delay_us) != 0) {
      check.error = "--recv_delay_us applies to --verb=send only";
    }
  }
  check.range("buffer_kb", static_cast<double>(absl::GetFlag(FLAGS_buffer_kb)), 16, 65536);
  check.range("max_ms", absl::GetFlag(FLAGS_max_ms), 1, 100000);
  check.range("max_memory_gb", absl::GetFlag(FLAGS_max_memory_gb), 0, 1e6);
  const uint32_t mtu = absl::GetFlag(FLAGS_mtu);
  if (check.error.empty() && mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
    check.error = absl::StrFormat("--mtu=%u invalid: one of 256, 512, 1024, 2048, 4096", mtu);
  const std::string topo = absl::GetFlag(FLAGS_topology);
  if (check.error.empty() && topo != "leafspine" && topo != "fattree")
    check.error = "--topology=" + topo + " unknown: leafspine or fattree";
  if (const uint32_t k = absl::GetFlag(FLAGS_k); check.error.empty() && topo == "fattree" &&
                                                 absl::GetFlag(FLAGS_topo).empty() &&
                                                 (k < 2 || k > 256 || k % 2 != 0)) {
    check.error = absl::StrFormat("--k=%u out of range: even, 2..256 (--topology=fattree)", k);
  }
  if (check.error.empty()) {
    if (auto p = DcqcnConfig::preset(absl::GetFlag(FLAGS_dcqcn), 100); !p.ok()) {
      check.error = absl::StrCat("--dcqcn: ", std::string(p.status().message()));
    }
  }
  pathsel::Algorithm lb = pathsel::Algorithm::kOblivious;
  {
    const std::string name = absl::GetFlag(FLAGS_lb);
    bool found = false;
    for (int a = 0; a < pathsel::kNumAlgorithms; ++a) {
      if (name == pathsel::to_string(static_cast<pathsel::Algorithm>(a))) {
        lb = static_cast<pathsel::Algorithm>(a);
        found = true;
      }
    }
    if (check.error.empty() && !found) {
      check.error = "--lb=" + name + " unknown: fixed, oblivious, reps, bitmap or mixed";
    }
  }
  CcMode cc = CcMode::kNscc;
  if (const std::string name = absl::GetFlag(FLAGS_cc); name == "rccc") {
    cc = CcMode::kRccc;
  } else if (name == "both") {
    cc = CcMode::kNsccRccc;
  } else if (name != "nscc" && check.error.empty()) {
    check.error = "--cc=" + name + " unknown: nscc, rccc or both";
  }
  const std::string uet_mode = absl::GetFlag(FLAGS_uet_mode);
  if (check.error.empty() && uet_mode != "rud" && uet_mode != "rod" && uet_mode != "rudi" &&
      uet_mode != "uud") {
    check.error = "--uet_mode=" + uet_mode + " unknown: rud, rod, rudi or uud";
  }
  const std::string verb = absl::GetFlag(FLAGS_verb);
  if (check.error.empty() && verb != "write" && verb != "send" && verb != "atomic") {
    check.error = "--verb=" + verb + " unknown: write, send or atomic";
  }
  if (check.error.empty() && verb != "write" && (uet_mode == "rudi" || uet_mode == "uud")) {
    check.error = "--verb=" + verb + " runs on --uet_mode=rud or rod (RUDI carries idempotent "
                  "operations only, UUD no matching or atomics)";
  }
  const std::string tr = absl::GetFlag(FLAGS_transport);
  if (check.error.empty() && tr != "uet" && tr != "rocev2" && tr != "both")
    check.error = "--transport=" + tr + " unknown: uet, rocev2 or both";
  if (!check.error.empty()) {
    std::fprintf(stderr, "uet-ab: %s\n", check.error.c_str());
    return 2;
  }

  std::vector<TransportKind> transports;
  if (tr == "uet" || tr == "both") transports.push_back(TransportKind::kUet);
  if (tr == "rocev2" || tr == "both") transports.push_back(TransportKind::kRocev2);

  const auto fabric = fabric_from_flags();
  if (!fabric.ok()) {
    std::fprintf(stderr, "uet-ab: --topo: %s\n", std::string(fabric.status().message()).c_str());
    return 2;
  }
  const Fabric base = *fabric;
  const std::string fabric_name =
      absl::GetFlag(FLAGS_topo).empty()
          ? topo
          : absl::StrCat(base.kind == Fabric::Kind::kLeafSpine ? "leafspine" : "fattree", " from ",
                         absl::GetFlag(FLAGS_topo));
  const uint32_t hosts = host_count(base);
  if (absl::GetFlag(FLAGS_topo).empty() && hosts > sim::kMaxHosts) {
    if (base.kind == Fabric::Kind::kLeafSpine) {
      std::fprintf(stderr, "uet-ab: --leaves=%u x --hosts_per_leaf=%u = %u hosts: at most %u\n",
                   base.leaves, base.hosts_per_leaf, hosts, sim::kMaxHosts);
    } else {
      std::fprintf(
          stderr, "uet-ab: --k=%u with %u hosts per ToR (--hosts_per_tor) = %u hosts: at most %u\n",
          base.k, hosts / (base.k * (base.k / 2)), hosts, sim::kMaxHosts);
    }
    return 2;
  }
  std::vector<std::string> scenarios;
  if (!absl::GetFlag(FLAGS_cm).empty() &&
      (absl::GetFlag(FLAGS_scenario) == "standard" || absl::GetFlag(FLAGS_scenario) == "cm")) {
    scenarios = {"cm"};
  } else if (!absl::GetFlag(FLAGS_cm).empty()) {
    std::fprintf(stderr, "uet-ab: --cm runs its own flows: it cannot be combined with --scenario=%s\n",
                 absl::GetFlag(FLAGS_scenario).c_str());
    return 2;
  } else if (absl::GetFlag(FLAGS_scenario) == "standard") {
    scenarios = {"permutation", "incast", "loss"};
  } else {
    scenarios = {absl::GetFlag(FLAGS_scenario)};
  }
  tss::Backend tss_backend = tss::Backend::kAuto;
  if (const std::string b = absl::GetFlag(FLAGS_tss_backend); !tss::parse_backend(b, &tss_backend)) {
    std::fprintf(stderr, "uet-ab: --tss_backend=%s: auto, ipsec-mb or openssl\n", b.c_str());
    return 2;
  } else if (tss_backend != tss::Backend::kAuto && !absl::GetFlag(FLAGS_tss)) {
    std::fprintf(stderr, "uet-ab: --tss_backend needs --tss\n");
    return 2;
  } else if (!tss::backend_available(tss_backend)) {
    std::fprintf(stderr,
                 "uet-ab: --tss_backend=%s is not available here (built without it, or the CPU "
                 "lacks AES-NI): auto or openssl\n",
                 b.c_str());
    return 2;
  }
  std::vector<tss::DomainConfig> tss_domains;
  if (const std::string kf = absl::GetFlag(FLAGS_tss_key_file); !kf.empty()) {
    if (!absl::GetFlag(FLAGS_tss)) {
      std::fprintf(stderr, "uet-ab: --tss_key_file needs --tss\n");
      return 2;
    }
    auto keys = tss::read_key_file(kf);
    if (!keys.ok()) {
      std::fprintf(stderr, "uet-ab: --tss_key_file: %s\n", std::string(keys.status().message()).c_str());
      return 2;
    }
    tss_domains = keys->domains;
  }
  // One run's configuration (without its flows): the same for the checks before the first
  // run and for the run itself.
  auto config_for = [&](const std::string& scenario, double fabric_loss, TransportKind t) {
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
    c.mtu = mtu;
    c.uet_evs = static_cast<uint16_t>(absl::GetFlag(FLAGS_evs));
    c.dcqcn_preset = absl::GetFlag(FLAGS_dcqcn);
    c.uet_lb = lb;
    c.uet_cc = cc;
    c.uet_mode = uet_mode == "rod"    ? DeliveryMode::kRod
                 : uet_mode == "rudi" ? DeliveryMode::kRudi
                 : uet_mode == "uud"  ? DeliveryMode::kUud
                                      : DeliveryMode::kRud;
    c.verb = verb == "send" ? Verb::kSend : verb == "atomic" ? Verb::kAtomic : Verb::kWrite;
    c.uet_rendezvous_bytes = absl::GetFlag(FLAGS_rendezvous_bytes);
    c.uet_deferrable = absl::GetFlag(FLAGS_deferrable);
    c.recv_delay = static_cast<Time>(absl::GetFlag(FLAGS_recv_delay_us) * kMicrosecond);
    c.uet_tss = absl::GetFlag(FLAGS_tss);
    c.tss_cost.ps_per_frame =
        static_cast<Time>(absl::GetFlag(FLAGS_tss_ns_per_frame) * kNanosecond);
    c.tss_cost.ps_per_byte = absl::GetFlag(FLAGS_tss_ns_per_kib) * kNanosecond / 1024.0;
    c.tss_domains = tss_domains;
    c.tss_backend = tss_backend;
    c.max_time = static_cast<Time>(absl::GetFlag(FLAGS_max_ms)) * kMillisecond;
    if (!plot_dir.empty()) {
      c.sample_every = static_cast<Time>(absl::GetFlag(FLAGS_plot_sample_us) * kMicrosecond);
    }
    if (const std::string dir = absl::GetFlag(FLAGS_pcap); !dir.empty()) {
      c.pcap_prefix = absl::StrCat(dir, "/", scenario, "_", to_string(t));
      if (scenario == "loss-sweep") {
        absl::StrAppend(&c.pcap_prefix, absl::StrFormat("_loss%g", fabric_loss));
      }
    }
    return c;
  };
  if (absl::GetFlag(FLAGS_scenario) == "trace" && absl::GetFlag(FLAGS_cm).empty()) {
    return run_trace(hosts, transports, fabric_name,
                     [&](TransportKind t) { return config_for("trace", 0, t); });
  }
  if (absl::GetFlag(FLAGS_scenario) == "collective" && absl::GetFlag(FLAGS_cm).empty()) {
    return run_collective(hosts, transports, fabric_name,
                          [&](TransportKind t) { return config_for("collective", 0, t); });
  }
  // Every scenario's flows and every run's configuration, built and checked before the
  // first run starts: a bad combination is refused at once, not after other runs.
  struct Planned {
    std::string scenario;
    std::vector<sim::FlowSpec> flows;
    std::vector<double> fabric_losses;  // one case per rate (loss-sweep: the per-link rates)
  };
  std::vector<Planned> plan;
  MemoryEstimate peak;  // the largest run's: runs come one at a time
  double planned_flows = 0;
  const bool fails = std::find(scenarios.begin(), scenarios.end(), "failure") != scenarios.end();
  if (fails && absl::GetFlag(FLAGS_failed_links) > top_tier_links(base)) {
    std::fprintf(stderr,
                 "uet-ab: --failed_links=%u out of range: 1..%u (the fabric has %u top-tier (spine "
                 "or core) links)\n",
                 absl::GetFlag(FLAGS_failed_links), top_tier_links(base), top_tier_links(base));
    return 2;
  }
  for (const std::string& scenario : scenarios) {
    auto flows = flows_for(scenario, hosts, absl::GetFlag(FLAGS_seed));
    if (!flows.ok()) {
      std::fprintf(stderr, "uet-ab: %s\n", std::string(flows.status().message()).c_str());
      return 2;
    }
    Planned p{scenario, std::move(*flows), {}};
    if (scenario == "loss-sweep") {
      const uint32_t links = sweep_path_links(base);
      if (links == 0 && loss_per == "path") {
        std::fprintf(stderr,
                     "uet-ab: --loss_per=path: the flow crosses no fabric link (one leaf)\n");
        return 2;
      }
      for (double rate : loss_rates) {
        p.fabric_losses.push_back(loss_per == "path" ? 1 - std::pow(1 - rate, 1.0 / links) : rate);
      }
    } else {
      p.fabric_losses = {scenario == "loss" ? absl::GetFlag(FLAGS_loss) : 0};
    }
    for (double loss : p.fabric_losses) {
      for (TransportKind t : transports) {
        RunConfig c = config_for(scenario, loss, t);
        c.flows = std::move(p.flows);  // checked in place, not copied
        const absl::Status s = validate(c);
        if (s.ok()) {
          if (MemoryEstimate e = estimate_memory(c); e.bytes > peak.bytes) peak = std::move(e);
        }
        p.flows = std::move(c.flows);
        if (!s.ok()) {
          std::fprintf(stderr, "uet-ab: %s %s: %s\n", scenario.c_str(), to_string(t),
                       std::string(s.message()).c_str());
          return 2;
        }
      }
    }
    planned_flows += static_cast<double>(p.flows.size());
    plan.push_back(std::move(p));
  }
  // Too large for the machine: refused with the estimate, not killed by the OOM killer.
  const double need = peak.bytes + planned_flows * static_cast<double>(sizeof(sim::FlowSpec));
  const char* size_flags = !absl::GetFlag(FLAGS_topo).empty()      ? "the --topo file's Nodes"
                           : base.kind == Fabric::Kind::kLeafSpine ? "--leaves / --hosts_per_leaf"
                                                                   : "--k / --hosts_per_tor";
  if (const std::string no = memory_refusal(need, peak.why, absl::StrCat(size_flags, ", or --bytes"));
      !no.empty()) {
    std::fprintf(stderr, "uet-ab: %s\n", no.c_str());
    return 2;
  }

  if (!write_experiment_files()) return 1;

  std::FILE* json = nullptr;
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    json = open_output(path);
    if (json == nullptr) {
      std::fprintf(stderr, "uet-ab: --json=%s: cannot open for writing\n", path.c_str());
      return 1;
    }
    std::fprintf(json, "[\n");
  }
  bool first_json = true;
  std::FILE* csv = nullptr;
  if (const std::string path = absl::GetFlag(FLAGS_csv); !path.empty()) {
    csv = open_output(path);
    if (csv == nullptr) {
      std::fprintf(stderr, "uet-ab: --csv=%s: cannot open for writing\n", path.c_str());
      return 1;
    }
    std::fprintf(csv, "scenario,transport,flow,src,dst,bytes,start_us,finish_us,fct_us,completed\n");
  }
  int rc = 0;
  // Runs one case (a scenario at one fabric loss rate) under every transport; writes its
  // JSON objects and CSV rows.
  auto run_case = [&](const std::string& scenario, const std::vector<sim::FlowSpec>& flows,
                      double fabric_loss) {
    std::vector<RunResult> runs;
    for (TransportKind t : transports) {
      RunConfig c = config_for(scenario, fabric_loss, t);
      c.flows = flows;
      if (g_stop.load(std::memory_order_relaxed)) break;
      ProgressLine progress(absl::StrCat(scenario, " ", to_string(t)));
      c.progress = [&progress](const Progress& p) { progress(p); };
      c.stop = &g_stop;
      auto r = run(c);
      if (!r.ok()) {
        std::fprintf(stderr, "uet-ab: %s %s: %s\n", scenario.c_str(), to_string(t),
                     std::string(r.status().message()).c_str());
        rc = 1;
        continue;
      }
      if (json != nullptr) {
        std::fprintf(json, "%s  %s", first_json ? "" : ",\n", json_of(*r, c).c_str());
        first_json = false;
      }
      if (csv != nullptr) {
        for (size_t id = 0; id < r->records.size(); ++id) {
          const sim::FlowRecord& f = r->records[id];
          const bool done = f.finish != kNever && f.received == f.bytes;
          const double start = static_cast<double>(f.start) / kMicrosecond;
          const double finish = f.finish == kNever ? -1 : static_cast<double>(f.finish) / kMicrosecond;
          std::fprintf(csv, "%s,%s,%zu,%u,%u,%lu,%.3f,%.3f,%.3f,%d\n", scenario.c_str(),
                       to_string(t), id, f.src, f.dst, f.bytes, start, finish,
                       done ? finish - start : -1.0, done ? 1 : 0);
        }
      }
      runs.push_back(std::move(*r));
    }
    return runs;
  };

  std::signal(SIGINT, on_sigint);
  for (const Planned& planned : plan) {
    if (g_stop.load(std::memory_order_relaxed)) break;
    const std::string& scenario = planned.scenario;
    const std::vector<sim::FlowSpec>* flows = &planned.flows;
    if (scenario == "loss-sweep") {
      const uint32_t links = sweep_path_links(base);
      std::vector<SweepRow> rows;
      for (double link : planned.fabric_losses) {
        const double path = 1 - std::pow(1 - link, links);
        rows.push_back({link, path, run_case(scenario, *flows, link)});
      }
      if (!rows.front().runs.empty()) {
        print_sweep(absl::StrFormat("loss-sweep: one %lu-byte flow, host 0 to host %u, %s, %g Gb/s; "
                                    "random loss on every fabric link, both directions (%u on "
                                    "the path: path = 1-(1-link)^%u); no PFC; seed %lu",
                                    absl::GetFlag(FLAGS_sweep_bytes), hosts - 1, fabric_name,
                                    base.host_gbps, links, links, absl::GetFlag(FLAGS_seed)),
                    rows);
        if (!plot_dir.empty()) {
          if (absl::Status s = plot_sweep(plot_dir, rows); !s.ok()) {
            std::fprintf(stderr, "uet-ab: %s\n", std::string(s.message()).c_str());
            rc = 1;
          } else {
            std::printf("plot: %s_goodput.svg\n", plot_base(plot_dir, scenario).c_str());
          }
        }
      }
      continue;
    }
    const std::vector<RunResult> runs = run_case(scenario, *flows, planned.fabric_losses.front());
    if (runs.empty()) continue;  // every run failed; the reasons are on stderr
    std::string title = absl::StrFormat("%s: %u hosts, %s, %g Gb/s, %lu bytes per flow, seed %lu",
                                        scenario, hosts, fabric_name, base.host_gbps,
                                        absl::GetFlag(FLAGS_bytes), absl::GetFlag(FLAGS_seed));
    if (scenario == "incast") title += absl::StrFormat(", fan-in %u", absl::GetFlag(FLAGS_fan_in));
    if (cc != CcMode::kNscc) title += absl::StrFormat(", UET cc %s", cc_flag(cc));
    if (scenario == "failure") {
      const double d = absl::GetFlag(FLAGS_degrade);
      title += absl::StrFormat(", %u top-tier links %s at %u us", absl::GetFlag(FLAGS_failed_links),
                               d > 0 ? absl::StrFormat("at %g%% of their rate", 100 * d) : "down",
                               absl::GetFlag(FLAGS_fail_at_us));
    }
    if (scenario == "cm") {
      title = absl::StrFormat("cm: %s, %zu flows on %u hosts, %s, %g Gb/s, seed %lu",
                              absl::GetFlag(FLAGS_cm), flows->size(), hosts, fabric_name, base.host_gbps,
                              absl::GetFlag(FLAGS_seed));
    }
    if (scenario == "loss") title += absl::StrFormat(", %.2f%% loss on fabric links", 100 * absl::GetFlag(FLAGS_loss));
    for (const RunResult& r : runs) {
      if (r.interrupted) {
        absl::StrAppend(&title, absl::StrFormat(
            "\n  INTERRUPTED (Ctrl-C): %s stopped at %.3f ms simulated; partial results",
            to_string(r.transport), static_cast<double>(r.sim_time) / kMillisecond));
      }
    }
    print_table(title, runs);
    if (!plot_dir.empty() && !runs.empty()) {
      if (absl::Status s = plot_scenario(plot_dir, scenario, scenario, runs); !s.ok()) {
        std::fprintf(stderr, "uet-ab: %s\n", std::string(s.message()).c_str());
        rc = 1;
      } else {
        const std::string b = plot_base(plot_dir, scenario);
        std::printf("plots: %s_fct_cdf.svg %s_throughput.svg %s_queue.svg\n", b.c_str(), b.c_str(),
                    b.c_str());
      }
    }
  }
  if (json != nullptr) {
    std::fprintf(json, "\n]\n");
    std::fclose(json);
  }
  if (csv != nullptr) std::fclose(csv);
  if (g_stop.load(std::memory_order_relaxed)) {
    if (g_writes) std::fprintf(stderr, "uet-ab: interrupted; the results above are partial\n");
    return 130;
  }
  return rc;
}

}  // namespace uet::ab

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "uet-ab: UET vs RoCEv2 on the same simulated fabric and workload.\n"
      "Usage: uet-ab [--scenario=standard|permutation|incast|alltoall|allreduce|collective|trace|"
      "websearch|loss|loss-sweep|failure|cm] [--cm=FILE.cm] "
      "[--transport=uet|rocev2|both] [--topology=leafspine|fattree] [--json=FILE] [--csv=FILE] "
      "[--pcap=DIR] ...");
  // --config=FILE is Abseil's --flagfile: the file's flags apply where it stands, so flags
  // after it override the experiment's values.
  std::vector<std::string> args(argv, argv + argc);
  for (std::string& a : args) {
    if (a.rfind("--config=", 0) == 0) a = "--flagfile=" + a.substr(9);
    if (a == "--config") a = "--flagfile";
  }
  std::vector<char*> argv2;
  for (std::string& a : args) argv2.push_back(a.data());
  argv2.push_back(nullptr);
  // Under mpirun or srun the fabric is split over the ranks (sim/partition.h): every rank runs
  // this same program; rank 0 prints and writes the results.
  auto ranks = uet::ab::start_tool_ranks(&argc, &argv);
  if (!ranks.ok()) {
    std::fprintf(stderr, "uet-ab: %s\n", std::string(ranks.status().message()).c_str());
    return 2;
  }
  absl::ParseCommandLine(argc, argv2.data());
  if ((*ranks)->size() > 1) {
    uet::ab::g_writes = (*ranks)->rank() == 0;
    // mpirun turns Ctrl-C into SIGTERM to the ranks a second later (and SIGKILL a second
    // after that); it passes SIGUSR1 on as it is, with no deadline. Either stops every rank
    // after the current window, and rank 0 writes what the run has.
    std::signal(SIGTERM, uet::ab::on_sigint);
    std::signal(SIGUSR1, uet::ab::on_sigint);
  }
  const int rc = uet::ab::run_main();
  std::fflush(stdout);
  return rc;
}
