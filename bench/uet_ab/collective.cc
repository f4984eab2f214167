// uet-ab --scenario=collective.
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

// --scenario=collective: one collective at every --sizes size on every transport, printed
// as nccl-tests prints (bench/ab_collective.h). Every size is planned and checked before the
// first run; rows print as they finish.
int run_collective(uint32_t hosts, const std::vector<TransportKind>& transports,
                   const std::string& fabric_name,
                   const std::function<RunConfig(TransportKind)>& config_for) {
  auto refuse = [](const std::string& why) {
    std::fprintf(stderr, "uet-ab: %s\n", why.c_str());
    return 2;
  };
  const auto coll = sim::parse_collective(absl::GetFlag(FLAGS_coll));
  if (!coll.ok()) return refuse(absl::StrCat("--coll: ", coll.status().message()));
  sim::CollectiveAlgo algo = sim::collective_algos(*coll).front();
  if (const std::string a = absl::GetFlag(FLAGS_algo); !a.empty()) {
    const auto parsed = sim::parse_collective_algo(a);
    if (!parsed.ok()) return refuse(absl::StrCat("--algo: ", parsed.status().message()));
    algo = *parsed;
  }
  const uint32_t tp = absl::GetFlag(FLAGS_tp), dp_flag = absl::GetFlag(FLAGS_dp);
  if (tp < 1 || tp > hosts) return refuse(absl::StrFormat("--tp=%u out of range: 1..%u", tp, hosts));
  uint32_t ranks = absl::GetFlag(FLAGS_ranks);
  if (ranks == 0) ranks = dp_flag > 0 ? dp_flag * tp : hosts / tp * tp;
  if (ranks < 2 || ranks > hosts) {
    return refuse(absl::StrFormat("--ranks=%u out of range: 2..%u (one rank per host; 0: all, or "
                                  "--dp x --tp)", ranks, hosts));
  }
  if (ranks % tp != 0 || (dp_flag > 0 && dp_flag * tp != ranks)) {
    return refuse(absl::StrFormat("--dp=%u x --tp=%u must equal --ranks=%u", dp_flag, tp, ranks));
  }
  const uint32_t dp = ranks / tp;
  const auto group = sim::parse_parallel_group(absl::GetFlag(FLAGS_coll_group));
  if (!group.ok()) return refuse(absl::StrCat("--coll_group: ", group.status().message()));
  const auto placement = sim::parse_rank_placement(absl::GetFlag(FLAGS_placement));
  if (!placement.ok()) return refuse(absl::StrCat("--placement: ", placement.status().message()));
  const auto sizes = parse_sizes(absl::GetFlag(FLAGS_sizes));
  if (!sizes.ok()) return refuse(std::string(sizes.status().message()));
  Check check;
  check.range("channels", absl::GetFlag(FLAGS_channels), 1, sim::kMaxCollectiveChannels);
  check.range("chunk_kb", absl::GetFlag(FLAGS_chunk_kb), 4, 1048576);
  check.range("iters", absl::GetFlag(FLAGS_iters), 1, 1000);
  check.range("slots", absl::GetFlag(FLAGS_slots), 1, sim::kMaxCollectiveSlots);
  if (!check.error.empty()) return refuse(check.error);
  check.range("coll_loss", absl::GetFlag(FLAGS_coll_loss), 0, 0.5);
  if (!check.error.empty()) return refuse(check.error);
  const double loss = absl::GetFlag(FLAGS_coll_loss);
  const uint32_t failed_links = absl::GetFlag(FLAGS_coll_failed_links);
  if (const uint32_t top = top_tier_links(config_for(transports.front()).fabric); failed_links > top) {
    return refuse(absl::StrFormat(
        "--coll_failed_links=%u out of range: 0..%u (the fabric's top-tier links)", failed_links, top));
  }
  // The run's fabric with the collective's loss and failures, PFC as the loss scenario sets it.
  auto config_of = [&](TransportKind t) {
    RunConfig c = config_for(t);
    c.fabric.fabric_loss = loss;
    if (loss > 0 && absl::GetFlag(FLAGS_pfc) == "auto") c.fabric.pfc = false;
    if (failed_links > 0) {
      c.fabric.failed_links = failed_links;
      c.fabric.degrade = absl::GetFlag(FLAGS_degrade);
      c.fabric.degrade_scales_queues = absl::GetFlag(FLAGS_degrade_queues) == "scaled";
      c.fabric.fail_at = static_cast<Time>(absl::GetFlag(FLAGS_fail_at_us)) * kMicrosecond;
    }
    return c;
  };
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  sim::Rng rng(sim::mix64(seed, 0xC0111EC7));  // its own stream: placement never shifts the fabric's
  const auto rank_hosts = sim::place_ranks(ranks, hosts, *placement, rng);
  if (!rank_hosts.ok()) return refuse(std::string(rank_hosts.status().message()));
  const auto comms = sim::communicators(*rank_hosts, dp, tp, *group);
  if (!comms.ok()) return refuse(absl::StrCat("--coll_group: ", comms.status().message()));
  const auto members = static_cast<uint32_t>(comms->front().size());
  sim::ServerSpec server;
  server.gpus = absl::GetFlag(FLAGS_gpus_per_server);
  server.gbps = absl::GetFlag(FLAGS_intra_gbps);
  server.latency = static_cast<Time>(absl::GetFlag(FLAGS_intra_us) * kMicrosecond);
  {
    Check c;
    c.range("gpus_per_server", server.gpus, 1, 64);
    c.range("intra_gbps", server.gbps, 1, 1e6);
    c.range("intra_us", absl::GetFlag(FLAGS_intra_us), 0, 1e6);
    if (c.error.empty() && server.gpus > 1 && *coll != sim::Collective::kAllReduce) {
      c.fail("--gpus_per_server > 1: the hierarchical form models --coll=allreduce only");
    }
    if (c.error.empty() && server.gpus > 1 && (members % server.gpus != 0 || members / server.gpus < 2)) {
      c.fail(absl::StrFormat("--gpus_per_server=%u must divide the %u ranks of a communicator "
                             "into at least 2 servers", server.gpus, members));
    }
    if (!c.error.empty()) return refuse(c.error);
  }
  if (absl::GetFlag(FLAGS_root) >= members) {
    return refuse(absl::StrFormat("--root=%u out of range: 0..%u (ranks of a communicator)",
                                  absl::GetFlag(FLAGS_root), members - 1));
  }

  struct Planned {
    uint64_t asked;
    sim::CollectivePlan plan;
  };
  std::vector<Planned> plan;
  MemoryEstimate peak;
  for (uint64_t size : *sizes) {
    sim::CollectiveSpec spec;
    spec.collective = *coll;
    spec.algo = algo;
    spec.bytes = size;
    spec.channels = absl::GetFlag(FLAGS_channels);
    spec.chunk_bytes = uint64_t{absl::GetFlag(FLAGS_chunk_kb)} * 1024;
    spec.slots = absl::GetFlag(FLAGS_slots);
    spec.root = absl::GetFlag(FLAGS_root);
    // Every communicator runs the collective at once, sharing the fabric.
    absl::StatusOr<sim::CollectivePlan> p;
    for (const std::vector<uint32_t>& comm : *comms) {
      spec.hosts = comm;
      auto one = server.gpus > 1 ? sim::hierarchical_flows(spec, server) : sim::collective_flows(spec);
      if (!one.ok()) {
        return refuse(absl::StrFormat("--sizes: %u bytes: %s", size, one.status().message()));
      }
      if (!p.ok()) {
        p = std::move(one);
      } else {
        if (p->flows.size() + one->flows.size() > sim::kMaxWorkloadFlows) {
          return refuse(absl::StrFormat("--sizes: %u bytes: %zu communicators make more than %lu "
                                        "flows: raise --chunk_kb or lower the size",
                                        size, comms->size(), sim::kMaxWorkloadFlows));
        }
        p->channels = std::min(p->channels, one->channels);
        sim::append_flows(p->flows, std::move(one->flows));
      }
    }
    for (TransportKind t : transports) {
      RunConfig c = config_of(t);
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
    plan.push_back({size, std::move(*p)});
  }
  if (const std::string no = memory_refusal(peak.bytes, peak.why, "--sizes, --ranks or the fabric");
      !no.empty()) {
    return refuse(no);
  }
  if (!write_experiment_files()) return 1;
  std::FILE* json = nullptr;
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    if ((json = open_output(path)) == nullptr) {
      std::fprintf(stderr, "uet-ab: --json=%s: cannot open for writing\n", path.c_str());
      return 1;
    }
    std::fprintf(json, "[\n");
  }
  std::FILE* csv = nullptr;
  if (const std::string path = absl::GetFlag(FLAGS_csv); !path.empty()) {
    if ((csv = open_output(path)) == nullptr) {
      std::fprintf(stderr, "uet-ab: --csv=%s: cannot open for writing\n", path.c_str());
      if (json != nullptr) std::fclose(json);
      return 1;
    }
    std::fprintf(csv, "collective,algo,transport,bytes,iteration,seed,time_us,completed\n");
  }

  const uint32_t iters = absl::GetFlag(FLAGS_iters);
  const RunConfig shown = config_of(transports.front());
  std::printf(
      "\ncollective: %s %s, %s, %u ranks (%s) on %u hosts, %s, %g Gb/s, %u channel(s), %u KiB "
      "chunks, %u slots, %u iteration(s), seed %lu\n",
      to_string(*coll).data(), to_string(algo).data(),
      comms->size() == 1
          ? "one communicator"
          : absl::StrFormat("%zu %s communicators of %u ranks at once (dp %u x tp %u)",
                            comms->size(), absl::GetFlag(FLAGS_coll_group), members, dp, tp)
                .c_str(),
      ranks,
      absl::GetFlag(FLAGS_placement).c_str(), hosts, fabric_name.c_str(), shown.fabric.host_gbps, absl::GetFlag(FLAGS_channels),
      absl::GetFlag(FLAGS_chunk_kb), absl::GetFlag(FLAGS_slots), iters, seed);
  if (server.gpus > 1) {
    std::printf("#  hierarchical: servers of %u GPUs, one NIC each (rails); intra-server phases at "
                "%g Gb/s + %g us\n", server.gpus, server.gbps, absl::GetFlag(FLAGS_intra_us));
  }
  if (loss > 0) std::printf("#  %.2f%% loss on fabric links\n", 100 * loss);
  if (failed_links > 0) {
    const double d = absl::GetFlag(FLAGS_degrade);
    std::printf("#  %u top-tier links %s at %u us\n", failed_links,
                d > 0 ? absl::StrFormat("at %g%% of their rate", 100 * d).c_str() : "down",
                absl::GetFlag(FLAGS_fail_at_us));
  }
  for (TransportKind t : transports) {
    std::printf("#  %s link bound: %.2f GB/s of payload (%g Gb/s less %u B of headers per %u B)\n",
                to_string(t), payload_bound_gbytes(config_of(t)), shown.fabric.host_gbps,
                frame_overhead(t), shown.mtu);
  }
  std::printf("#  busbw = algbw x %s; time: start on every rank to the last WRITE's completion\n",
              *coll == sim::Collective::kAllReduce ? "2(n-1)/n"
              : sim::bus_bandwidth_factor(*coll, 2) == 1 ? "1"
                                                     : "(n-1)/n");
  std::printf("%s", collective_header(transports).c_str());
  std::fflush(stdout);
  bool first_json = true;
  int rc = 0;
  std::signal(SIGINT, on_sigint);
  for (const Planned& p : plan) {
    std::vector<CollectiveFigures> figures;
    std::vector<std::string> notes;  // why a row has no time: printed under it
    for (TransportKind t : transports) {
      std::vector<RunResult> runs;
      RunConfig last;
      for (uint32_t it = 0; it < iters && !g_stop.load(std::memory_order_relaxed); ++it) {
        RunConfig c = config_of(t);
        c.seed = seed + it;
        c.flows = p.plan.flows;
        ProgressLine progress(absl::StrFormat("collective %u B %s", p.plan.bytes, to_string(t)));
        c.progress = [&progress](const Progress& pr) { progress(pr); };
        c.stop = &g_stop;
        auto r = run(c);
        if (!r.ok()) {
          std::fprintf(stderr, "uet-ab: collective %lu B %s: %s\n", p.plan.bytes, to_string(t),
                       std::string(r.status().message()).c_str());
          rc = 1;
          break;
        }
        if (csv != nullptr) {
          const bool done = r->flows.completed == r->flows.total;
          Time end = 0;
          for (const sim::FlowRecord& f : r->records)
            if (f.finish != kNever) end = std::max(end, f.finish);
          std::fprintf(csv, "%s,%s,%s,%lu,%u,%lu,%.3f,%d\n", to_string(*coll).data(),
                       to_string(algo).data(), to_string(t), p.plan.bytes, it, c.seed,
                       done ? static_cast<double>(end) / kMicrosecond : -1.0, done ? 1 : 0);
        }
        c.flows.clear();
        last = std::move(c);
        runs.push_back(std::move(*r));
      }
      if (runs.empty()) continue;
      for (size_t it = 0; it < runs.size(); ++it) {
        const RunResult& r = runs[it];
        if (r.flows.completed == r.flows.total) continue;
        notes.push_back(absl::StrFormat(
            "#    %s, %lu B, seed %lu: %lu of %lu flows not done at %.1f ms simulated (%lu failed "
            "with an error)%s\n",
            to_string(t), p.plan.bytes, seed + it, r.flows.total - r.flows.completed,
            r.flows.total, static_cast<double>(r.sim_time) / kMillisecond, r.failed,
            r.interrupted ? ", interrupted" : "; --max_ms raises the limit"));
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
            p.plan.bytes, delivered, sent));
      }
      CollectiveFigures f = collective_figures(runs, *coll, members, p.plan.bytes);
      if (json != nullptr) {
        std::string iterations;
        for (double v : f.iteration_us) absl::StrAppend(&iterations, iterations.empty() ? "" : ", ", absl::StrFormat("%.3f", v));
        std::fprintf(
            json,
            "%s  {\"scenario\": \"collective\", \"collective\": \"%s\", \"algo\": \"%s\", "
            "\"transport\": \"%s\", \"ranks\": %u, \"communicators\": %zu, \"members\": %u, "
            "\"placement\": \"%s\", \"bytes\": %lu, "
            "\"asked_bytes\": %lu, \"count\": %lu, \"channels\": %u, \"chunk_kb\": %u, "
            "\"slots\": %u, \"gpus_per_server\": %u, "
            "\"iterations\": %u, \"time_us\": %.3f, \"p99_us\": %.3f, \"iteration_us\": [%s], "
            "\"algbw_gbytes\": %.4f, \"busbw_gbytes\": %.4f, \"busbw_factor\": %.6f, "
            "\"flows\": %lu, \"failed\": %lu, \"retransmits\": %lu, \"timeouts\": %lu, "
            "\"drops\": %lu, \"trims\": %lu, \"pfc_pauses\": %lu, \"events\": %lu, "
            "\"wall_s\": %.3f, \"link_bound_gbytes\": %.4f, \"coll_loss\": %g, "
            "\"coll_failed_links\": %u, \"connections\": %lu, \"top_ports\": %u, "
            "\"top_ports_used\": %u, \"run\": %s}",
            first_json ? "" : ",\n", to_string(*coll).data(), to_string(algo).data(), to_string(t),
            ranks, comms->size(), members, absl::GetFlag(FLAGS_placement).c_str(), p.plan.bytes,
            p.asked,
            p.plan.bytes / sim::kCollectiveElementBytes, p.plan.channels,
            absl::GetFlag(FLAGS_chunk_kb), absl::GetFlag(FLAGS_slots), server.gpus,
            static_cast<uint32_t>(runs.size()), f.time_us, f.p99_us,
            iterations.c_str(), f.algbw_gbytes, f.busbw_gbytes,
            sim::bus_bandwidth_factor(*coll, members),
            f.flows, f.failed, f.retransmitted, f.timeouts, f.drops, f.trims, f.pfc_pauses,
            f.events, f.wall_s, payload_bound_gbytes(last), loss, failed_links,
            runs.front().connections, runs.front().top_ports, runs.front().top_ports_used,
            json_of(runs.front(), last).c_str());
        first_json = false;
      }
      figures.push_back(std::move(f));
    }
    if (figures.size() == transports.size()) {
      std::printf("%s", collective_row(p.plan.bytes, *coll, absl::GetFlag(FLAGS_root), figures).c_str());
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

// --scenario=trace: one training step from a Chakra trace on every transport: the step's time,
// the time it would take with a network that costs nothing (compute alone), and the exposed
// communication between the two.

}  // namespace uet::ab
