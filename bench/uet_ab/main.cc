// uet-ab: UET against RoCEv2 on the same simulated fabric, workload and seed, side by side.
//
//   build/bin/uet-ab                                   # the standard comparison (README)
//   build/bin/uet-ab --scenario=incast --fan_in=32 --transport=both --json=out.json
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

namespace {

// Every scenario's flows and every run's configuration, built and checked before the first
// run starts: a bad combination is refused at once, not after other runs.
struct Planned {
  std::string scenario;
  std::vector<sim::FlowSpec> flows;
  std::vector<double> fabric_losses;  // one case per rate (loss-sweep: the per-link rates)
};

// The fabric the flags describe, held to the simulator's bounds; InvalidArgument carries the
// refusal.
absl::StatusOr<Fabric> fabric_of_flags() {
  const auto fabric = fabric_from_flags();
  if (!fabric.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        absl::GetFlag(FLAGS_topo).empty() ? "" : "--topo: ", fabric.status().message()));
  }
  const uint32_t hosts = host_count(*fabric);
  if (fabric->kind != Fabric::Kind::kLeafSpine && fabric->kind != Fabric::Kind::kFatTree) {
    // The builder's check, naming the family's field and range (the flags are in range).
    if (absl::Status s = check_fabric(*fabric); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--topology=", to_string(fabric->kind), ": ", s.message()));
    }
    return fabric;
  }
  if (absl::GetFlag(FLAGS_topo).empty() && hosts > sim::kMaxHosts) {
    if (fabric->kind == Fabric::Kind::kLeafSpine) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--leaves=%u x --hosts_per_leaf=%u = %u hosts: at most %u", fabric->leaves,
          fabric->hosts_per_leaf, hosts, sim::kMaxHosts));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "--k=%u with %u hosts per ToR (--hosts_per_tor) = %u hosts: at most %u", fabric->k,
        hosts / (fabric->k * (fabric->k / 2)), hosts, sim::kMaxHosts));
  }
  return fabric;
}

// The scenarios to run: --scenario, the standard three, or the connection matrix's own.
absl::StatusOr<std::vector<std::string>> scenarios_of_flags() {
  const std::string scenario = absl::GetFlag(FLAGS_scenario);
  if (!absl::GetFlag(FLAGS_cm).empty() && (scenario == "standard" || scenario == "cm")) {
    return std::vector<std::string>{"cm"};
  }
  if (!absl::GetFlag(FLAGS_cm).empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--cm runs its own flows: it cannot be combined with --scenario=%s", scenario));
  }
  if (scenario == "standard") return std::vector<std::string>{"permutation", "incast", "loss"};
  return std::vector<std::string>{scenario};
}

// The fabric loss rates a scenario runs at: loss-sweep's, per link, or one.
absl::StatusOr<std::vector<double>> fabric_losses(const Options& o, const Fabric& base,
                                                  const std::string& scenario) {
  if (scenario != "loss-sweep") {
    return std::vector<double>{scenario == "loss" ? absl::GetFlag(FLAGS_loss) : 0};
  }
  const uint32_t links = sweep_path_links(base);
  if (links == 0 && o.loss_per == "path") {
    return absl::InvalidArgumentError(
        "--loss_per=path: the flow crosses no fabric link (one leaf)");
  }
  std::vector<double> losses;
  for (double rate : o.loss_rates) {
    losses.push_back(o.loss_per == "path" ? 1 - std::pow(1 - rate, 1.0 / links) : rate);
  }
  return losses;
}

// Every scenario planned and every run checked; the largest run estimated against the
// machine's memory. InvalidArgument carries the refusal.
absl::StatusOr<std::vector<Planned>> plan_scenarios(const Options& o, const Fabric& base,
                                                    uint32_t hosts,
                                                    const std::vector<std::string>& scenarios) {
  std::vector<Planned> plan;
  MemoryEstimate peak;  // the largest run's: runs come one at a time
  double planned_flows = 0;
  const bool fails = std::find(scenarios.begin(), scenarios.end(), "failure") != scenarios.end();
  if (fails && absl::GetFlag(FLAGS_failed_links) > top_tier_links(base)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--failed_links=%u out of range: 1..%u (the fabric has %u top-tier (%s) links)",
        absl::GetFlag(FLAGS_failed_links), top_tier_links(base), top_tier_links(base),
        top_tier_name(base)));
  }
  for (const std::string& scenario : scenarios) {
    auto flows = flows_for(scenario, hosts, absl::GetFlag(FLAGS_seed));
    if (!flows.ok()) return flows.status();
    auto losses = fabric_losses(o, base, scenario);
    if (!losses.ok()) return losses.status();
    Planned p{scenario, std::move(*flows), std::move(*losses)};
    for (double loss : p.fabric_losses) {
      for (TransportKind t : o.transports) {
        RunConfig c = run_config(o, base, scenario, loss, t);
        c.flows = std::move(p.flows);  // checked in place, not copied
        const absl::Status s = validate(c);
        if (s.ok()) {
          if (MemoryEstimate e = estimate_memory(c); e.bytes > peak.bytes) peak = std::move(e);
        }
        p.flows = std::move(c.flows);
        if (!s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(scenario, " ", to_string(t), ": ", s.message()));
        }
      }
    }
    planned_flows += static_cast<double>(p.flows.size());
    plan.push_back(std::move(p));
  }
  // Too large for the machine: refused with the estimate, not killed by the OOM killer.
  const double need = peak.bytes + planned_flows * static_cast<double>(sizeof(sim::FlowSpec));
  const char* size_flags =
      !absl::GetFlag(FLAGS_topo).empty() ? "the --topo file's Nodes" : size_flags_of(base.kind);
  if (std::string no = memory_refusal(need, peak.why, absl::StrCat(size_flags, ", or --bytes"));
      !no.empty()) {
    return absl::InvalidArgumentError(std::move(no));
  }
  return plan;
}

// Where the runs' results go: --json and --csv, opened before the first run.
struct Outputs {
  std::FILE* json = nullptr;
  std::FILE* csv = nullptr;
  bool first_json = true;
  int rc = 0;

  bool open() {
    if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
      if ((json = open_output(path)) == nullptr) {
        std::fprintf(stderr, "uet-ab: --json=%s: cannot open for writing\n", path.c_str());
        return false;
      }
      std::fprintf(json, "[\n");
    }
    if (const std::string path = absl::GetFlag(FLAGS_csv); !path.empty()) {
      if ((csv = open_output(path)) == nullptr) {
        std::fprintf(stderr, "uet-ab: --csv=%s: cannot open for writing\n", path.c_str());
        return false;
      }
      std::fprintf(csv, "scenario,transport,flow,src,dst,bytes,start_us,finish_us,fct_us,completed\n");
    }
    return true;
  }
  void close() {
    if (json != nullptr) {
      std::fprintf(json, "\n]\n");
      std::fclose(json);
    }
    if (csv != nullptr) std::fclose(csv);
  }
  void write(const std::string& scenario, TransportKind t, const RunResult& r, const RunConfig& c) {
    if (json != nullptr) {
      std::fprintf(json, "%s  %s", first_json ? "" : ",\n", json_of(r, c).c_str());
      first_json = false;
    }
    if (csv == nullptr) return;
    for (size_t id = 0; id < r.records.size(); ++id) {
      const sim::FlowRecord& f = r.records[id];
      const bool done = f.finish != kNever && f.received == f.bytes;
      const double start = static_cast<double>(f.start) / kMicrosecond;
      const double finish = f.finish == kNever ? -1 : static_cast<double>(f.finish) / kMicrosecond;
      std::fprintf(csv, "%s,%s,%zu,%u,%u,%lu,%.3f,%.3f,%.3f,%d\n", scenario.c_str(), to_string(t),
                   id, f.src, f.dst, f.bytes, start, finish, done ? finish - start : -1.0,
                   done ? 1 : 0);
    }
  }
};

// One case (a scenario at one fabric loss rate) under every transport, its JSON objects and
// CSV rows written as each run ends.
// The flows are lent to each run, not copied (a million flows: tens of MB each).
std::vector<RunResult> run_case(const Options& o, const Fabric& base, const std::string& scenario,
                                std::vector<sim::FlowSpec>& flows, double fabric_loss,
                                Outputs& out) {
  std::vector<RunResult> runs;
  for (TransportKind t : o.transports) {
    if (g_stop.load(std::memory_order_relaxed)) break;
    RunConfig c = run_config(o, base, scenario, fabric_loss, t);
    c.flows = std::move(flows);
    struct Return {  // the flows go back to the plan however the run ends
      std::vector<sim::FlowSpec>& to;
      RunConfig& from;
      ~Return() { to = std::move(from.flows); }
    } give_back{flows, c};
    ProgressLine progress(absl::StrCat(scenario, " ", to_string(t)));
    if (progress.on()) {
      c.progress = [&progress](const Progress& p) { progress(p); };
    }
    c.stop = &g_stop;
    auto r = run(c);
    if (!r.ok()) {
      std::fprintf(stderr, "uet-ab: %s %s: %s\n", scenario.c_str(), to_string(t),
                   std::string(r.status().message()).c_str());
      out.rc = 1;
      continue;
    }
    out.write(scenario, t, *r, c);
    // Only the plots and loss-sweep's table read a run's records once it is written.
    if (o.plot_dir.empty() && scenario != "loss-sweep") {
      std::vector<sim::FlowRecord>().swap(r->records);
    }
    runs.push_back(std::move(*r));
  }
  return runs;
}

// loss-sweep: one case per rate, then the goodput table (and --plot's chart).
void run_sweep(const Options& o, const Fabric& base, uint32_t hosts,
               const std::string& fabric_name, Planned& planned, Outputs& out) {
  const uint32_t links = sweep_path_links(base);
  std::vector<SweepRow> rows;
  for (double link : planned.fabric_losses) {
    const double path = 1 - std::pow(1 - link, links);
    rows.push_back({link, path, run_case(o, base, planned.scenario, planned.flows, link, out)});
  }
  if (rows.front().runs.empty()) return;
  print_sweep(absl::StrFormat("loss-sweep: one %lu-byte flow, host 0 to host %u, %s, %g Gb/s; "
                              "random loss on every fabric link, both directions (%u on "
                              "the path: path = 1-(1-link)^%u); no PFC; seed %lu",
                              absl::GetFlag(FLAGS_sweep_bytes), hosts - 1, fabric_name,
                              base.host_gbps, links, links, absl::GetFlag(FLAGS_seed)),
              rows);
  if (o.plot_dir.empty()) return;
  if (absl::Status s = plot_sweep(o.plot_dir, rows); !s.ok()) {
    out.rc = bench::tool_error("uet-ab", s, 1);
  } else {
    std::printf("plot: %s_goodput.svg\n", plot_base(o.plot_dir, planned.scenario).c_str());
  }
}

// A scenario's table title: what ran, on what, with which faults; Ctrl-C's partial runs named.
std::string scenario_title(const Options& o, const Fabric& base, uint32_t hosts,
                           const std::string& fabric_name, const Planned& planned,
                           const std::vector<RunResult>& runs) {
  const std::string& scenario = planned.scenario;
  std::string title = absl::StrFormat("%s: %u hosts, %s, %g Gb/s, %lu bytes per flow, seed %lu",
                                      scenario, hosts, fabric_name, base.host_gbps,
                                      absl::GetFlag(FLAGS_bytes), absl::GetFlag(FLAGS_seed));
  if (scenario == "incast") title += absl::StrFormat(", fan-in %u", absl::GetFlag(FLAGS_fan_in));
  if (scenario == "mix") {
    title += absl::StrFormat(", %u incasts of fan-in %u", absl::GetFlag(FLAGS_incasts),
                             absl::GetFlag(FLAGS_fan_in));
  }
  if (o.cc != CcMode::kNscc) title += absl::StrFormat(", UET cc %s", cc_flag(o.cc));
  if (scenario == "failure") {
    const double d = absl::GetFlag(FLAGS_degrade);
    title += absl::StrFormat(", %u top-tier links %s at %u us", absl::GetFlag(FLAGS_failed_links),
                             d > 0 ? absl::StrFormat("at %g%% of their rate", 100 * d) : "down",
                             absl::GetFlag(FLAGS_fail_at_us));
  }
  if (scenario == "cm") {
    title = absl::StrFormat("cm: %s, %zu flows on %u hosts, %s, %g Gb/s, seed %lu",
                            absl::GetFlag(FLAGS_cm), planned.flows.size(), hosts, fabric_name,
                            base.host_gbps, absl::GetFlag(FLAGS_seed));
  }
  if (scenario == "loss") {
    title += absl::StrFormat(", %.2f%% loss on fabric links", 100 * absl::GetFlag(FLAGS_loss));
  }
  for (const RunResult& r : runs) {
    if (r.routing.dimension_order && !base.routing.dimension_order) {
      absl::StrAppend(&title, absl::StrFormat("\n  %s (PFC): dimension-order routes%s, as lossless "
                                              "tori route (--deadlock_free=off: every shortest path)",
                                              to_string(r.transport),
                                              base.kind == Fabric::Kind::kTorus
                                                  ? " with the dateline's 2 lossless classes"
                                                  : ""));
    }
    if (r.interrupted) {
      absl::StrAppend(&title, absl::StrFormat(
          "\n  INTERRUPTED (Ctrl-C): %s stopped at %.3f ms simulated; partial results",
          to_string(r.transport), static_cast<double>(r.sim_time) / kMillisecond));
    }
    // Shortest paths on a torus, dragonfly or any graph with cycles can close a cycle of
    // buffers that wait on each other under PFC (no virtual channels here): a deadlock. A Clos
    // routed up and down has no such cycle.
    const bool clos = base.kind == Fabric::Kind::kLeafSpine || base.kind == Fabric::Kind::kFatTree;
    if (!clos && !r.interrupted && r.flows.completed < r.flows.total && r.ports.paused_time > 0) {
      absl::StrAppend(
          &title,
          absl::StrFormat(
              "\n  NOTE: %s: %d of %d flows incomplete at %.3f ms with PFC-paused ports: a PFC "
              "deadlock "
              "(a cycle of paused buffers along shortest paths) is likely; --pfc=off runs lossy",
              to_string(r.transport), r.flows.total - r.flows.completed, r.flows.total,
              static_cast<double>(r.sim_time) / kMillisecond));
    }
  }
  return title;
}

// The flow scenarios, one after another: run, table, plots.
void run_scenarios(const Options& o, const Fabric& base, uint32_t hosts,
                   const std::string& fabric_name, std::vector<Planned>& plan, Outputs& out) {
  std::signal(SIGINT, on_sigint);
  for (Planned& planned : plan) {
    if (g_stop.load(std::memory_order_relaxed)) break;
    if (planned.scenario == "loss-sweep") {
      run_sweep(o, base, hosts, fabric_name, planned, out);
      continue;
    }
    const std::vector<RunResult> runs =
        run_case(o, base, planned.scenario, planned.flows, planned.fabric_losses.front(), out);
    if (runs.empty()) continue;  // every run failed; the reasons are on stderr
    print_table(scenario_title(o, base, hosts, fabric_name, planned, runs), runs);
    if (o.plot_dir.empty()) continue;
    if (absl::Status s = plot_scenario(o.plot_dir, planned.scenario, planned.scenario, runs);
        !s.ok()) {
      out.rc = bench::tool_error("uet-ab", s, 1);
    } else {
      const std::string b = plot_base(o.plot_dir, planned.scenario);
      std::printf("plots: %s_fct_cdf.svg %s_throughput.svg %s_queue.svg\n", b.c_str(), b.c_str(),
                  b.c_str());
    }
  }
}

}  // namespace

int run_main() {
  auto refuse = [](const absl::Status& s) { return bench::tool_error("uet-ab", s, 2); };
  auto options = read_options();
  if (!options.ok()) return refuse(options.status());
  Options& o = *options;
  const auto fabric = fabric_of_flags();
  if (!fabric.ok()) return refuse(fabric.status());
  const Fabric& base = *fabric;
  const std::string fabric_name =
      absl::GetFlag(FLAGS_topo).empty()
          ? fabric_title(base)
          : absl::StrCat(base.kind == Fabric::Kind::kLeafSpine ? "leafspine" : "fattree", " from ",
                         absl::GetFlag(FLAGS_topo));
  const uint32_t hosts = host_count(base);
  const auto scenarios = scenarios_of_flags();
  if (!scenarios.ok()) return refuse(scenarios.status());
  if (absl::Status s = read_tss_options(o); !s.ok()) return refuse(s);
  const std::string scenario = absl::GetFlag(FLAGS_scenario);
  if ((scenario == "trace" || scenario == "collective") && absl::GetFlag(FLAGS_cm).empty()) {
    auto config_for = [&](TransportKind t) { return run_config(o, base, scenario, 0, t); };
    return scenario == "trace" ? run_trace(hosts, o.transports, fabric_name, config_for)
                               : run_collective(hosts, o.transports, fabric_name, config_for);
  }
  auto plan = plan_scenarios(o, base, hosts, *scenarios);
  if (!plan.ok()) return refuse(plan.status());
  if (!write_experiment_files()) return 1;
  Outputs out;
  if (!out.open()) {
    out.close();
    return 1;
  }
  run_scenarios(o, base, hosts, fabric_name, *plan, out);
  out.close();
  if (g_stop.load(std::memory_order_relaxed)) {
    if (g_writes) std::fprintf(stderr, "uet-ab: interrupted; the results above are partial\n");
    return 130;
  }
  return out.rc;
}

}  // namespace uet::ab

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "uet-ab: UET vs RoCEv2 on the same simulated fabric and workload.\n"
      "Usage: uet-ab [--scenario=standard|permutation|incast|mix|alltoall|allreduce|collective|trace|"
      "websearch|loss|loss-sweep|failure|cm] [--cm=FILE.cm] "
      "[--transport=uet|rocev2|both] [--topology=leafspine|fattree|dragonfly|dragonflyplus|torus|"
      "hypercube|rail|graph] [--json=FILE] [--csv=FILE] "
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
  if (!ranks.ok()) return uet::bench::tool_error("uet-ab", ranks.status(), 2);
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
