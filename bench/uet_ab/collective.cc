// uet-ab --scenario=collective: one collective at every --sizes size on every transport, printed
// as nccl-tests prints (bench/ab_collective.h). Every size is planned and checked before the
// first run; rows print as they finish.
#include "bench/uet_ab/uet_ab.h"

ABSL_FLAG(uint32_t, chunk_steps, 4,
          "collective scenario: ring chunks each step moves per rank, each its own send (NCCL's "
          "CHUNKSTEPS, NCCL_STEPS/2), 1..64");

namespace uet::ab {
namespace {

using ConfigFor = std::function<RunConfig(TransportKind)>;

struct Planned {
  uint64_t asked;
  sim::CollectivePlan plan;
};

// A collective request, checked and planned for every size before the first run.
struct CollectiveRequest {
  sim::Collective coll = sim::Collective::kAllReduce;
  sim::CollectiveAlgo algo = sim::CollectiveAlgo::kRing;
  uint32_t ranks = 0, dp = 0, tp = 0, members = 0;
  std::vector<std::vector<uint32_t>> comms;  // the communicators, running at once
  sim::ServerSpec server;
  double loss = 0;
  uint32_t failed_links = 0;
  uint64_t seed = 0;
  std::vector<uint64_t> sizes;
  std::vector<Planned> plan;
};

// The run's fabric with the collective's loss and failures, PFC as the loss scenario sets it.
RunConfig config_of(const CollectiveRequest& req, TransportKind t, const ConfigFor& config_for) {
  RunConfig c = config_for(t);
  c.fabric.fabric_loss = req.loss;
  if (req.loss > 0 && absl::GetFlag(FLAGS_pfc) == "auto") c.fabric.pfc = false;
  if (req.failed_links > 0) {
    c.fabric.failed_links = req.failed_links;
    c.fabric.degrade = absl::GetFlag(FLAGS_degrade);
    c.fabric.degrade_scales_queues = absl::GetFlag(FLAGS_degrade_queues) == "scaled";
    c.fabric.fail_at = static_cast<Time>(absl::GetFlag(FLAGS_fail_at_us)) * kMicrosecond;
  }
  return c;
}

// The collective, its algorithm, the ranks and their groups, the sizes and the faults, from
// the flags; InvalidArgument carries the refusal.
absl::Status parse_request(uint32_t hosts, const Fabric& fabric, CollectiveRequest& req) {
  auto refuse = [](std::string why) { return absl::InvalidArgumentError(std::move(why)); };
  const auto coll = sim::parse_collective(absl::GetFlag(FLAGS_coll));
  if (!coll.ok()) return refuse(absl::StrCat("--coll: ", coll.status().message()));
  req.coll = *coll;
  req.algo = sim::collective_algos(req.coll).front();
  if (const std::string a = absl::GetFlag(FLAGS_algo); !a.empty()) {
    const auto parsed = sim::parse_collective_algo(a);
    if (!parsed.ok()) return refuse(absl::StrCat("--algo: ", parsed.status().message()));
    req.algo = *parsed;
  }
  req.tp = absl::GetFlag(FLAGS_tp);
  const uint32_t dp_flag = absl::GetFlag(FLAGS_dp);
  if (req.tp < 1 || req.tp > hosts) {
    return refuse(absl::StrFormat("--tp=%u out of range: 1..%u", req.tp, hosts));
  }
  req.ranks = absl::GetFlag(FLAGS_ranks);
  if (req.ranks == 0) req.ranks = dp_flag > 0 ? dp_flag * req.tp : hosts / req.tp * req.tp;
  if (req.ranks < 2 || req.ranks > hosts) {
    return refuse(absl::StrFormat("--ranks=%u out of range: 2..%u (one rank per host; 0: all, or "
                                  "--dp x --tp)", req.ranks, hosts));
  }
  if (req.ranks % req.tp != 0 || (dp_flag > 0 && dp_flag * req.tp != req.ranks)) {
    return refuse(absl::StrFormat("--dp=%u x --tp=%u must equal --ranks=%u", dp_flag, req.tp,
                                  req.ranks));
  }
  req.dp = req.ranks / req.tp;
  const auto sizes = parse_sizes(absl::GetFlag(FLAGS_sizes));
  if (!sizes.ok()) return refuse(std::string(sizes.status().message()));
  req.sizes = *sizes;
  Check check;
  check.range(FLAGS_channels, 1, sim::kMaxCollectiveChannels);
  check.range(FLAGS_chunk_kb, 4, 1048576);
  check.range(FLAGS_iters, 1, 1000);
  check.range(FLAGS_slots, 1, sim::kMaxCollectiveSlots);
  check.range(FLAGS_chunk_steps, 1, sim::kMaxCollectiveChunkSteps);
  check.range(FLAGS_coll_loss, 0, 0.5);
  if (!check.error.empty()) return refuse(check.error);
  req.loss = absl::GetFlag(FLAGS_coll_loss);
  req.failed_links = absl::GetFlag(FLAGS_coll_failed_links);
  if (const uint32_t top = top_tier_links(fabric); req.failed_links > top) {
    return refuse(absl::StrFormat("--coll_failed_links=%u out of range: 0..%u (the fabric's "
                                  "top-tier links)", req.failed_links, top));
  }
  req.seed = absl::GetFlag(FLAGS_seed);
  return absl::OkStatus();
}

// The ranks on the hosts, their communicators and the servers they sit in.
absl::Status place_ranks(uint32_t hosts, CollectiveRequest& req) {
  auto refuse = [](std::string why) { return absl::InvalidArgumentError(std::move(why)); };
  const auto group = sim::parse_parallel_group(absl::GetFlag(FLAGS_coll_group));
  if (!group.ok()) return refuse(absl::StrCat("--coll_group: ", group.status().message()));
  const auto placement = sim::parse_rank_placement(absl::GetFlag(FLAGS_placement));
  if (!placement.ok()) return refuse(absl::StrCat("--placement: ", placement.status().message()));
  sim::Rng rng(sim::mix64(req.seed, 0xC0111EC7));  // its own stream: placement never shifts the fabric's
  const auto rank_hosts = sim::place_ranks(req.ranks, hosts, *placement, rng);
  if (!rank_hosts.ok()) return refuse(std::string(rank_hosts.status().message()));
  auto comms = sim::communicators(*rank_hosts, req.dp, req.tp, *group);
  if (!comms.ok()) return refuse(absl::StrCat("--coll_group: ", comms.status().message()));
  req.comms = std::move(*comms);
  req.members = static_cast<uint32_t>(req.comms.front().size());
  req.server.gpus = absl::GetFlag(FLAGS_gpus_per_server);
  // On a rail fabric --gpus_per_server sizes the rails; collectives other than all-reduce
  // (which runs hierarchically, per rail) run flat over the GPUs' NICs.
  if (absl::GetFlag(FLAGS_topology) == "rail" && absl::GetFlag(FLAGS_topo).empty() &&
      req.coll != sim::Collective::kAllReduce) {
    req.server.gpus = 1;
  }
  req.server.gbps = absl::GetFlag(FLAGS_intra_gbps);
  req.server.latency = static_cast<Time>(absl::GetFlag(FLAGS_intra_us) * kMicrosecond);
  Check c;
  c.range("gpus_per_server", req.server.gpus, 1, 64);
  c.range("intra_gbps", req.server.gbps, 1, 1e6);
  c.range(FLAGS_intra_us, 0, 1e6);
  if (c.error.empty() && req.server.gpus > 1 && req.coll != sim::Collective::kAllReduce) {
    c.fail("--gpus_per_server > 1: the hierarchical form models --coll=allreduce only");
  }
  if (c.error.empty() && req.server.gpus > 1 &&
      (req.members % req.server.gpus != 0 || req.members / req.server.gpus < 2)) {
    c.fail(absl::StrFormat("--gpus_per_server=%u must divide the %u ranks of a communicator "
                           "into at least 2 servers", req.server.gpus, req.members));
  }
  if (!c.error.empty()) return refuse(c.error);
  if (absl::GetFlag(FLAGS_root) >= req.members) {
    return refuse(absl::StrFormat("--root=%u out of range: 0..%u (ranks of a communicator)",
                                  absl::GetFlag(FLAGS_root), req.members - 1));
  }
  return absl::OkStatus();
}

// Every size: every communicator runs the collective at once, sharing the fabric; each run's
// configuration checked, and the largest estimated and held to the machine's memory.
absl::Status plan_sizes(const std::vector<TransportKind>& transports, const ConfigFor& config_for,
                        CollectiveRequest& req) {
  auto refuse = [](std::string why) { return absl::InvalidArgumentError(std::move(why)); };
  MemoryEstimate peak;
  for (uint64_t size : req.sizes) {
    sim::CollectiveSpec spec;
    spec.collective = req.coll;
    spec.algo = req.algo;
    spec.bytes = size;
    spec.channels = absl::GetFlag(FLAGS_channels);
    spec.chunk_bytes = uint64_t{absl::GetFlag(FLAGS_chunk_kb)} * 1024;
    spec.slots = absl::GetFlag(FLAGS_slots);
    spec.chunk_steps = absl::GetFlag(FLAGS_chunk_steps);
    spec.root = absl::GetFlag(FLAGS_root);
    absl::StatusOr<sim::CollectivePlan> p;
    for (const std::vector<uint32_t>& comm : req.comms) {
      spec.hosts = comm;
      auto one = req.server.gpus > 1 ? sim::hierarchical_flows(spec, req.server)
                                     : sim::collective_flows(spec);
      if (!one.ok()) {
        return refuse(absl::StrFormat("--sizes: %u bytes: %s", size, one.status().message()));
      }
      if (!p.ok()) {
        p = std::move(one);
        continue;
      }
      if (p->flows.size() + one->flows.size() > sim::kMaxWorkloadFlows) {
        return refuse(absl::StrFormat("--sizes: %u bytes: %zu communicators make more than %lu "
                                      "flows: raise --chunk_kb or lower the size",
                                      size, req.comms.size(), sim::kMaxWorkloadFlows));
      }
      p->channels = std::min(p->channels, one->channels);
      sim::append_flows(p->flows, std::move(one->flows));
    }
    for (TransportKind t : transports) {
      RunConfig c = config_of(req, t, config_for);
      c.flows = std::move(p->flows);  // checked in place, not copied
      const absl::Status s = validate(c);
      if (s.ok()) {
        if (MemoryEstimate e = estimate_memory(c); e.bytes > peak.bytes) peak = std::move(e);
      }
      p->flows = std::move(c.flows);
      if (!s.ok()) {
        return refuse(absl::StrFormat("collective %u bytes %s: %s", size, to_string(t), s.message()));
      }
    }
    req.plan.push_back({size, std::move(*p)});
  }
  if (std::string no = memory_refusal(peak.bytes, peak.why, "--sizes, --ranks or the fabric");
      !no.empty()) {
    return refuse(std::move(no));
  }
  return absl::OkStatus();
}

// The lines above the table: what runs, on what, with which faults, and each link bound.
void print_banner(const CollectiveRequest& req, uint32_t hosts, const std::string& fabric_name,
                  const std::vector<TransportKind>& transports, const ConfigFor& config_for) {
  const RunConfig shown = config_of(req, transports.front(), config_for);
  std::printf(
      "\ncollective: %s %s, %s, %u ranks (%s) on %u hosts, %s, %g Gb/s, %u channel(s), %u KiB "
      "chunks, %u per ring step, %u slots, %u iteration(s), seed %lu\n",
      to_string(req.coll).data(), to_string(req.algo).data(),
      req.comms.size() == 1
          ? "one communicator"
          : absl::StrFormat("%zu %s communicators of %u ranks at once (dp %u x tp %u)",
                            req.comms.size(), absl::GetFlag(FLAGS_coll_group), req.members,
                            req.dp, req.tp)
                .c_str(),
      req.ranks, absl::GetFlag(FLAGS_placement).c_str(), hosts, fabric_name.c_str(),
      shown.fabric.host_gbps, absl::GetFlag(FLAGS_channels), absl::GetFlag(FLAGS_chunk_kb),
      absl::GetFlag(FLAGS_chunk_steps), absl::GetFlag(FLAGS_slots), absl::GetFlag(FLAGS_iters),
      req.seed);
  if (req.server.gpus > 1) {
    std::printf("#  hierarchical: servers of %u GPUs, one NIC each (rails); intra-server phases at "
                "%g Gb/s + %g us\n", req.server.gpus, req.server.gbps, absl::GetFlag(FLAGS_intra_us));
  }
  if (req.loss > 0) std::printf("#  %.2f%% loss on fabric links\n", 100 * req.loss);
  if (req.failed_links > 0) {
    const double d = absl::GetFlag(FLAGS_degrade);
    std::printf("#  %u top-tier links %s at %u us\n", req.failed_links,
                d > 0 ? absl::StrFormat("at %g%% of their rate", 100 * d).c_str() : "down",
                absl::GetFlag(FLAGS_fail_at_us));
  }
  for (TransportKind t : transports) {
    std::printf("#  %s link bound: %.2f GB/s of payload (%g Gb/s less %u B of headers per %u B)\n",
                to_string(t), payload_bound_gbytes(config_of(req, t, config_for)),
                shown.fabric.host_gbps, frame_overhead(t), shown.mtu);
  }
  std::printf("#  busbw = algbw x %s; time: start on every rank to the last WRITE's completion\n",
              req.coll == sim::Collective::kAllReduce        ? "2(n-1)/n"
              : sim::bus_bandwidth_factor(req.coll, 2) == 1 ? "1"
                                                             : "(n-1)/n");
  std::printf("%s", collective_header(transports).c_str());
  std::fflush(stdout);
}

// Why a row lacks a time, or what its time means: printed under it.
std::vector<std::string> row_notes(TransportKind t, const std::vector<RunResult>& runs,
                                   const RunConfig& last, uint64_t bytes, uint64_t seed) {
  std::vector<std::string> notes;
  for (size_t it = 0; it < runs.size(); ++it) {
    const RunResult& r = runs[it];
    if (r.flows.completed == r.flows.total) continue;
    notes.push_back(absl::StrFormat(
        "#    %s, %lu B, seed %lu: %lu of %lu flows not done at %.1f ms simulated (%lu failed "
        "with an error)%s\n",
        to_string(t), bytes, seed + it, r.flows.total - r.flows.completed, r.flows.total,
        static_cast<double>(r.sim_time) / kMillisecond, r.failed,
        r.interrupted      ? ", interrupted"
        : r.pfc.deadlocked ? "; stopped at a PFC deadlock the watchdog found"
                           : "; --max_ms raises the limit"));
  }
  if (t == TransportKind::kUet && last.uet_mode == DeliveryMode::kUud) {
    uint64_t sent = 0, delivered = 0;
    for (const RunResult& r : runs) {
      sent += r.datagrams.uud_sent;
      delivered += r.datagrams.uud_delivered;
    }
    // spec/uet.md §3.6: a UUD WRITE completes when it leaves; nothing says it arrived.
    notes.push_back(absl::StrFormat(
        "#    uet uud, %lu B: %lu of %lu datagrams delivered; UUD WRITEs complete when sent, "
        "so UET's time is the senders'\n",
        bytes, delivered, sent));
  }
  return notes;
}

// One size on one transport as a --json object.
std::string json_row(const CollectiveRequest& req, TransportKind t, const Planned& p,
                     const CollectiveFigures& f, const std::vector<RunResult>& runs,
                     const RunConfig& last) {
  std::string iterations;
  for (double v : f.iteration_us) {
    absl::StrAppend(&iterations, iterations.empty() ? "" : ", ", absl::StrFormat("%.3f", v));
  }
  return absl::StrFormat(
      "  {\"scenario\": \"collective\", \"collective\": \"%s\", \"algo\": \"%s\", "
      "\"transport\": \"%s\", \"ranks\": %u, \"communicators\": %zu, \"members\": %u, "
      "\"placement\": \"%s\", \"bytes\": %lu, "
      "\"asked_bytes\": %lu, \"count\": %lu, \"channels\": %u, \"chunk_kb\": %u, "
      "\"chunk_steps\": %u, \"slots\": %u, \"gpus_per_server\": %u, "
      "\"iterations\": %u, \"time_us\": %.3f, \"p99_us\": %.3f, \"iteration_us\": [%s], "
      "\"algbw_gbytes\": %.4f, \"busbw_gbytes\": %.4f, \"busbw_factor\": %.6f, "
      "\"flows\": %lu, \"failed\": %lu, \"retransmits\": %lu, \"timeouts\": %lu, "
      "\"drops\": %lu, \"trims\": %lu, \"pfc_pauses\": %lu, \"events\": %lu, "
      "\"wall_s\": %.3f, \"link_bound_gbytes\": %.4f, \"coll_loss\": %g, "
      "\"coll_failed_links\": %u, \"connections\": %lu, \"top_ports\": %u, "
      "\"top_ports_used\": %u, \"run\": %s}",
      to_string(req.coll).data(), to_string(req.algo).data(), to_string(t), req.ranks,
      req.comms.size(), req.members, absl::GetFlag(FLAGS_placement).c_str(), p.plan.bytes, p.asked,
      p.plan.bytes / sim::kCollectiveElementBytes, p.plan.channels, absl::GetFlag(FLAGS_chunk_kb),
      absl::GetFlag(FLAGS_chunk_steps), absl::GetFlag(FLAGS_slots), req.server.gpus,
      static_cast<uint32_t>(runs.size()), f.time_us, f.p99_us, iterations.c_str(), f.algbw_gbytes,
      f.busbw_gbytes,
      sim::bus_bandwidth_factor(req.coll, req.members), f.flows, f.failed, f.retransmitted,
      f.timeouts, f.drops, f.trims, f.pfc_pauses, f.events, f.wall_s, payload_bound_gbytes(last),
      req.loss, req.failed_links, runs.front().connections, runs.front().top_ports,
      runs.front().top_ports_used, json_of(runs.front(), last).c_str());
}

// --iters runs of one size on one transport (each seed the next); a CSV row each. False when a
// run could not be started.
bool run_iterations(const CollectiveRequest& req, TransportKind t, const Planned& p,
                    const ConfigFor& config_for, std::FILE* csv, std::vector<RunResult>& runs,
                    RunConfig& last) {
  const uint32_t iters = absl::GetFlag(FLAGS_iters);
  for (uint32_t it = 0; it < iters && !g_stop.load(std::memory_order_relaxed); ++it) {
    RunConfig c = config_of(req, t, config_for);
    c.seed = req.seed + it;
    c.flows = p.plan.flows;
    ProgressLine progress(absl::StrFormat("collective %u B %s", p.plan.bytes, to_string(t)));
    if (progress.on()) {
      c.progress = [&progress](const Progress& pr) { progress(pr); };
    }
    c.stop = &g_stop;
    auto r = run(c);
    if (!r.ok()) {
      std::fprintf(stderr, "uet-ab: collective %lu B %s: %s\n", p.plan.bytes, to_string(t),
                   std::string(r.status().message()).c_str());
      return false;
    }
    if (csv != nullptr) {
      const bool done = r->flows.completed == r->flows.total;
      Time end = 0;
      for (const sim::FlowRecord& f : r->records)
        if (f.finish != kNever) end = std::max(end, f.finish);
      std::fprintf(csv, "%s,%s,%s,%lu,%u,%lu,%.3f,%d\n", to_string(req.coll).data(),
                   to_string(req.algo).data(), to_string(t), p.plan.bytes, it, c.seed,
                   done ? static_cast<double>(end) / kMicrosecond : -1.0, done ? 1 : 0);
    }
    c.flows.clear();
    last = std::move(c);
    runs.push_back(std::move(*r));
  }
  return true;
}

// The --json and --csv files, opened before the first run (nullptr: not asked for).
bool open_outputs(std::FILE** json, std::FILE** csv) {
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    if ((*json = open_output(path)) == nullptr) {
      std::fprintf(stderr, "uet-ab: --json=%s: cannot open for writing\n", path.c_str());
      return false;
    }
    std::fprintf(*json, "[\n");
  }
  if (const std::string path = absl::GetFlag(FLAGS_csv); !path.empty()) {
    if ((*csv = open_output(path)) == nullptr) {
      std::fprintf(stderr, "uet-ab: --csv=%s: cannot open for writing\n", path.c_str());
      if (*json != nullptr) std::fclose(*json);
      return false;
    }
    std::fprintf(*csv, "collective,algo,transport,bytes,iteration,seed,time_us,completed\n");
  }
  return true;
}

}  // namespace

int run_collective(uint32_t hosts, const std::vector<TransportKind>& transports,
                   const std::string& fabric_name, const ConfigFor& config_for) {
  CollectiveRequest req;
  absl::Status s = parse_request(hosts, config_for(transports.front()).fabric, req);
  if (s.ok()) s = place_ranks(hosts, req);
  if (s.ok()) s = plan_sizes(transports, config_for, req);
  if (!s.ok()) return bench::tool_error("uet-ab", s, 2);
  if (!write_experiment_files()) return 1;
  std::FILE* json = nullptr;
  std::FILE* csv = nullptr;
  if (!open_outputs(&json, &csv)) return 1;
  print_banner(req, hosts, fabric_name, transports, config_for);
  bool first_json = true;
  int rc = 0;
  std::signal(SIGINT, on_sigint);
  for (const Planned& p : req.plan) {
    std::vector<CollectiveFigures> figures;
    std::vector<std::string> notes;  // why a row has no time: printed under it
    for (TransportKind t : transports) {
      std::vector<RunResult> runs;
      RunConfig last;
      if (!run_iterations(req, t, p, config_for, csv, runs, last)) rc = 1;
      if (runs.empty()) continue;
      for (std::string& n : row_notes(t, runs, last, p.plan.bytes, req.seed)) notes.push_back(std::move(n));
      CollectiveFigures f = collective_figures(runs, req.coll, req.members, p.plan.bytes);
      if (json != nullptr) {
        std::fprintf(json, "%s%s", first_json ? "" : ",\n", json_row(req, t, p, f, runs, last).c_str());
        first_json = false;
      }
      figures.push_back(std::move(f));
    }
    if (figures.size() == transports.size()) {
      std::printf("%s", collective_row(p.plan.bytes, req.coll, absl::GetFlag(FLAGS_root), figures).c_str());
      for (const std::string& note : notes) std::printf("%s", note.c_str());
      std::fflush(stdout);
    }
    if (g_stop.load(std::memory_order_relaxed)) break;
  }
  if (json != nullptr) {
    std::fprintf(json, "\n]\n");
    std::fclose(json);
  }
  if (csv != nullptr) std::fclose(csv);
  if (g_stop.load(std::memory_order_relaxed)) {
    std::fprintf(stderr, "uet-ab: interrupted; the rows above are complete, the rest did not run\n");
    return 130;
  }
  return rc;
}

}  // namespace uet::ab
