// uet-ab --scenario=trace.
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

namespace {

// A step's collectives by kind and size, one list per run (sim::summarize_collectives).
std::vector<std::vector<sim::CollectiveSummary>> collective_rows(
    const sim::TracePlan& plan, const std::vector<RunResult>& runs) {
  std::vector<std::vector<sim::CollectiveSummary>> out;
  for (const RunResult& r : runs) {
    std::vector<Time> finish(r.records.size());
    for (size_t i = 0; i < r.records.size(); ++i) finish[i] = r.records[i].finish;
    out.push_back(sim::summarize_collectives(plan, finish));
  }
  return out;
}

// The table under the step's: per kind and size, the count, and per run the time at least one
// of them was in progress and its share of the step (rows overlap each other).
void print_collective_rows(const std::vector<std::vector<sim::CollectiveSummary>>& rows,
                           const std::vector<RunResult>& runs, const std::vector<double>& step_us) {
  if (rows.empty() || rows[0].empty()) return;
  std::printf("\n%-32s %7s", "collectives by kind and size", "count");
  for (const RunResult& r : runs) std::printf(" %9s busy us %6s", to_string(r.transport), "share");
  std::printf("\n");
  for (size_t k = 0; k < rows[0].size(); ++k) {
    const sim::CollectiveSummary& c = rows[0][k];
    std::printf("%-32s %7lu", absl::StrCat(c.kind, " ", c.bytes, " B").c_str(), c.count);
    for (size_t i = 0; i < runs.size(); ++i) {
      const bool same = k < rows[i].size() && rows[i][k].kind == c.kind && rows[i][k].bytes == c.bytes;
      const double us = same ? static_cast<double>(rows[i][k].busy) / kMicrosecond : 0;
      std::printf(" %15.1f %6.3f", us, step_us[i] > 0 ? us / step_us[i] : 0);
    }
    std::printf("\n");
  }
}

// --plot: DIR/trace_step.svg, per transport the step, its compute alone, the exposed
// communication and each collective row's busy time.
absl::Status plot_trace(const std::string& dir, double compute_only_us,
                        const std::vector<double>& step_us, const std::vector<double>& exposed_us,
                        const std::vector<std::vector<sim::CollectiveSummary>>& collectives,
                        const std::vector<RunResult>& runs) {
  std::vector<std::string> rows = {"step", "compute alone", "exposed communication"};
  std::vector<std::vector<double>> values(3);
  std::vector<std::string> columns;
  for (size_t i = 0; i < runs.size(); ++i) {
    columns.emplace_back(to_string(runs[i].transport));
    values[0].push_back(step_us[i]);
    values[1].push_back(compute_only_us);
    values[2].push_back(exposed_us[i]);
  }
  for (size_t k = 0; !collectives.empty() && k < collectives[0].size(); ++k) {
    const sim::CollectiveSummary& c = collectives[0][k];
    rows.push_back(absl::StrCat(c.kind, " ", c.bytes, " B busy"));
    std::vector<double>& row = values.emplace_back();
    for (const auto& per_run : collectives) {
      const bool same = k < per_run.size() && per_run[k].kind == c.kind && per_run[k].bytes == c.bytes;
      row.push_back(same ? static_cast<double>(per_run[k].busy) / kMicrosecond : 0);
    }
  }
  return plot_bars(dir, "trace_step", "trace: the step and its communication", "us", rows,
                   columns, values);
}

std::string collectives_json(const std::vector<sim::CollectiveSummary>& rows) {
  std::string out = "[";
  for (const sim::CollectiveSummary& c : rows) {
    absl::StrAppendFormat(&out, "%s{\"kind\": \"%s\", \"bytes\": %lu, \"count\": %lu, "
                          "\"busy_us\": %.3f, \"total_us\": %.3f, \"longest_us\": %.3f}",
                          out.size() > 1 ? ", " : "", c.kind, c.bytes, c.count,
                          static_cast<double>(c.busy) / kMicrosecond,
                          static_cast<double>(c.total) / kMicrosecond,
                          static_cast<double>(c.longest) / kMicrosecond);
  }
  return out + "]";
}

// A trace request read, checked, planned and estimated: what the runs play.
struct TraceRequest {
  std::string prefix;
  uint32_t ranks = 0;
  sim::TracePlan plan;
};

// Reads the trace and its groups, lays its ranks on the hosts and plans the flows; every run's
// configuration checked and the largest estimated, before the first run. InvalidArgument
// carries the refusal.
absl::StatusOr<TraceRequest> plan_trace(uint32_t hosts, const std::vector<TransportKind>& transports,
                                        const std::function<RunConfig(TransportKind)>& config_for) {
  auto refuse = [](std::string why) { return absl::InvalidArgumentError(std::move(why)); };
  TraceRequest req;
  req.prefix = absl::GetFlag(FLAGS_trace);
  if (req.prefix.empty()) return refuse("--scenario=trace needs --trace=PREFIX (PREFIX.0.et, ...)");
  const auto reader = sim::chakra_reader();
  if (!reader.ok()) return refuse(absl::StrCat("--trace: ", reader.status().message()));
  auto trace = (*reader)->read_chakra(req.prefix);
  if (!trace.ok()) return refuse(absl::StrCat("--trace: ", trace.status().message()));
  req.ranks = static_cast<uint32_t>(trace->ranks.size());
  if (const std::string groups = absl::GetFlag(FLAGS_comm_groups); !groups.empty()) {
    auto g = (*reader)->read_comm_groups(groups, req.ranks);
    if (!g.ok()) return refuse(absl::StrCat("--comm_groups: ", g.status().message()));
    trace->groups = std::move(*g);
  }
  if (req.ranks > hosts) {
    return refuse(absl::StrFormat("--trace: %u ranks, the fabric has %u hosts (one rank per host)",
                                  req.ranks, hosts));
  }
  const auto placement = sim::parse_rank_placement(absl::GetFlag(FLAGS_placement));
  if (!placement.ok()) return refuse(absl::StrCat("--placement: ", placement.status().message()));
  Check check;
  check.range(FLAGS_channels, 1, sim::kMaxCollectiveChannels);
  check.range(FLAGS_chunk_kb, 4, 1048576);
  check.range(FLAGS_slots, 1, sim::kMaxCollectiveSlots);
  if (!check.error.empty()) return refuse(check.error);
  sim::Rng rng(sim::mix64(absl::GetFlag(FLAGS_seed), 0xC0111EC7));
  const auto rank_hosts = sim::place_ranks(req.ranks, hosts, *placement, rng);
  if (!rank_hosts.ok()) return refuse(std::string(rank_hosts.status().message()));
  sim::TraceOptions options;
  options.channels = absl::GetFlag(FLAGS_channels);
  options.chunk_bytes = uint64_t{absl::GetFlag(FLAGS_chunk_kb)} * 1024;
  options.slots = absl::GetFlag(FLAGS_slots);
  auto plan = sim::trace_flows(*trace, *rank_hosts, options);
  if (!plan.ok()) return refuse(absl::StrCat("--trace=", req.prefix, ": ", plan.status().message()));
  req.plan = std::move(*plan);
  MemoryEstimate peak;
  for (TransportKind t : transports) {
    RunConfig c = config_for(t);
    c.flows = std::move(req.plan.flows);
    const absl::Status s = validate(c);
    if (s.ok()) {
      if (MemoryEstimate e = estimate_memory(c); e.bytes > peak.bytes) peak = std::move(e);
    }
    req.plan.flows = std::move(c.flows);
    if (!s.ok()) return refuse(absl::StrFormat("trace %s: %s", to_string(t), s.message()));
  }
  // The trace's nodes stay read beside the runs, as does the plan each run copies.
  uint64_t nodes = 0;
  for (const auto& rank : trace->ranks) nodes += rank.size();
  const double need = peak.bytes + static_cast<double>(nodes) * sizeof(sim::TraceNode) +
                      static_cast<double>(req.plan.flows.size()) * sizeof(sim::FlowSpec);
  if (std::string no = memory_refusal(need, absl::StrCat(peak.why, " + ", nodes, " trace nodes"),
                                      "the trace's ranks or layers, or raise --chunk_kb");
      !no.empty()) {
    return refuse(std::move(no));
  }
  return req;
}

// One run's step: it ends with its last task and is complete when every flow and task is.
struct Step {
  bool complete = false;
  double us = 0, exposed_us = 0, share = 0;
};

std::vector<Step> steps_of(const std::vector<RunResult>& runs, Time compute_only) {
  std::vector<Step> steps;
  for (const RunResult& r : runs) {
    Step s;
    s.complete = r.failed == 0;
    Time end = 0;
    for (const sim::FlowRecord& f : r.records) {
      if (f.finish == kNever) s.complete = false;
      else end = std::max(end, f.finish);
    }
    s.us = static_cast<double>(end) / kMicrosecond;
    s.exposed_us = s.us - static_cast<double>(compute_only) / kMicrosecond;
    s.share = s.us > 0 ? s.exposed_us / s.us : 0;
    steps.push_back(s);
  }
  return steps;
}

void print_steps(const std::vector<RunResult>& runs, const std::vector<Step>& steps) {
  print_heading(32, runs);
  auto row = [&](const char* name, auto get, const char* fmt) {
    std::vector<double> v;
    for (size_t i = 0; i < runs.size(); ++i) v.push_back(get(i));
    print_row(32, name, v, fmt);
  };
  row("step complete", [&](size_t i) { return steps[i].complete ? 1.0 : 0.0; }, " %14.0f");
  row("step time (us)", [&](size_t i) { return steps[i].us; }, " %14.1f");
  row("exposed communication (us)", [&](size_t i) { return steps[i].exposed_us; }, " %14.1f");
  row("communication share", [&](size_t i) { return steps[i].share; }, " %14.3f");
  row("retransmitted packets", [&](size_t i) { return double(runs[i].endpoints.retransmitted_packets); }, " %14.0f");
  row("timeouts", [&](size_t i) { return double(runs[i].endpoints.timeouts); }, " %14.0f");
  row("drops (buffer + wire)", [&](size_t i) { return double(runs[i].ports.drops + runs[i].ports.wire_losses); }, " %14.0f");
  row("PFC pauses", [&](size_t i) { return double(runs[i].ports.pauses); }, " %14.0f");
  row("wall (s)", [&](size_t i) { return runs[i].wall_s; }, " %14.2f");
}

// --json: one object per run, the step's figures beside the run's own.
bool write_trace_json(const std::string& path, const TraceRequest& req,
                      const std::vector<RunResult>& runs, const std::vector<RunConfig>& configs,
                      const std::vector<Step>& steps,
                      const std::vector<std::vector<sim::CollectiveSummary>>& collectives) {
  std::FILE* json = open_output(path);
  if (json == nullptr) {
    std::fprintf(stderr, "uet-ab: --json=%s: cannot open for writing\n", path.c_str());
    return false;
  }
  const sim::TracePlan& plan = req.plan;
  std::fprintf(json, "[\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    std::fprintf(json,
                 "%s  {\"scenario\": \"trace\", \"trace\": \"%s\", \"transport\": \"%s\", "
                 "\"ranks\": %u, \"collectives\": %lu, \"sends\": %lu, \"compute_nodes\": %lu, "
                 "\"network_bytes\": %lu, \"complete\": %s, \"step_us\": %.3f, "
                 "\"compute_only_us\": %.3f, \"exposed_comm_us\": %.3f, \"comm_share\": %.5f, "
                 "\"collectives_by_kind\": %s, \"run\": %s}",
                 i == 0 ? "" : ",\n", req.prefix.c_str(), to_string(runs[i].transport), req.ranks,
                 plan.collectives, plan.p2p, plan.compute_nodes, plan.network_bytes,
                 steps[i].complete ? "true" : "false", steps[i].us,
                 static_cast<double>(plan.compute_only) / kMicrosecond, steps[i].exposed_us,
                 steps[i].share, collectives_json(collectives[i]).c_str(),
                 json_of(runs[i], configs[i]).c_str());
  }
  std::fprintf(json, "\n]\n");
  std::fclose(json);
  return true;
}

}  // namespace

int run_trace(uint32_t hosts, const std::vector<TransportKind>& transports,
              const std::string& fabric_name,
              const std::function<RunConfig(TransportKind)>& config_for) {
  auto req = plan_trace(hosts, transports, config_for);
  if (!req.ok()) return bench::tool_error("uet-ab", req.status(), 2);
  const sim::TracePlan& plan = req->plan;
  if (!write_experiment_files()) return 1;
  std::printf(
      "\ntrace: %s, %u ranks (%s) on %u hosts, %s, %g Gb/s; %lu collectives, %lu sends, %lu "
      "compute nodes, %.3f MB on the network; compute alone %.1f us; seed %lu\n",
      req->prefix.c_str(), req->ranks, absl::GetFlag(FLAGS_placement).c_str(), hosts,
      fabric_name.c_str(), config_for(transports.front()).fabric.host_gbps, plan.collectives,
      plan.p2p, plan.compute_nodes, static_cast<double>(plan.network_bytes) / 1e6,
      static_cast<double>(plan.compute_only) / kMicrosecond, absl::GetFlag(FLAGS_seed));
  std::vector<RunResult> runs;
  std::vector<RunConfig> configs;
  std::signal(SIGINT, on_sigint);
  for (TransportKind t : transports) {
    if (g_stop.load(std::memory_order_relaxed)) break;
    RunConfig c = config_for(t);
    c.flows = plan.flows;
    ProgressLine progress(absl::StrCat("trace ", to_string(t)));
    if (progress.on()) {
      c.progress = [&progress](const Progress& pr) { progress(pr); };
    }
    c.stop = &g_stop;
    auto r = run(c);
    if (!r.ok()) {
      std::fprintf(stderr, "uet-ab: trace %s: %s\n", to_string(t),
                   std::string(r.status().message()).c_str());
      return 1;
    }
    c.flows.clear();
    configs.push_back(std::move(c));
    runs.push_back(std::move(*r));
  }
  const std::vector<Step> steps = steps_of(runs, plan.compute_only);
  print_steps(runs, steps);
  const auto collectives = collective_rows(plan, runs);
  std::vector<double> step_us, exposed_us;
  for (const Step& s : steps) {
    step_us.push_back(s.us);
    exposed_us.push_back(s.exposed_us);
  }
  print_collective_rows(collectives, runs, step_us);
  if (const std::string dir = absl::GetFlag(FLAGS_plot); !dir.empty()) {
    if (absl::Status s = plot_trace(dir, static_cast<double>(plan.compute_only) / kMicrosecond,
                                    step_us, exposed_us, collectives, runs);
        !s.ok()) {
      return bench::tool_error("uet-ab", s, 1);
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_json);
      !path.empty() && !write_trace_json(path, *req, runs, configs, steps, collectives)) {
    return 1;
  }
  if (g_stop.load(std::memory_order_relaxed)) return 130;
  for (const Step& s : steps)
    if (!s.complete) return 1;
  return 0;
}

}  // namespace uet::ab
