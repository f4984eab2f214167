// uet-ab: UET against RoCEv2 on the same simulated fabric, workload and seed, side by side.
//
//   build/bin/uet-ab                                   # the standard comparison (README)
//   build/bin/uet-ab --scenario=incast --fan_in=32 --transport=both --json=out.json
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/ab_collective.h"
#include "bench/ab_memory.h"
#include "bench/ab_runner.h"
#include "transport/tss/key_file.h"
#include "cc/dcqcn.h"
#include "sim/collective.h"
#include "sim/trace/trace.h"
#include "sim/htsim_cm.h"
#include "sim/htsim_topo.h"
#include "sim/rng.h"

ABSL_FLAG(std::string, scenario, "standard",
          "standard (permutation + incast + loss), permutation, incast, alltoall, allreduce, "
          "collective (nccl-tests style: --coll, --algo, --sizes), trace (a Chakra trace: --trace), "
          "websearch, loss, loss-sweep, failure (a permutation on a fabric with failed or "
          "degraded links), cm (with --cm=FILE)");
ABSL_FLAG(std::string, cm, "",
          "run an htsim connection matrix (.cm) instead of a built-in scenario: flows, start times "
          "(whole microseconds, as uet-htsim) and triggers; its Nodes must fit the fabric's hosts");
ABSL_FLAG(std::string, topo, "",
          "build the fabric from an htsim topology file (.topo: Nodes, Tiers, per-tier rates, "
          "radices, latencies, oversubscription) instead of --topology and its size flags");
ABSL_FLAG(std::string, transport, "both", "uet, rocev2 or both");
ABSL_FLAG(std::string, topology, "leafspine", "leafspine or fattree");
ABSL_FLAG(uint32_t, leaves, 16, "leaf-spine: leaves, 1..1024");
ABSL_FLAG(uint32_t, spines, 8, "leaf-spine: spines, 1..256");
ABSL_FLAG(uint32_t, hosts_per_leaf, 8, "leaf-spine: hosts per leaf, 1..256");
ABSL_FLAG(uint32_t, k, 8, "fat-tree: arity, even 2..256 (k^3/4 hosts)");
ABSL_FLAG(double, gbps, 100, "link rate in Gb/s, 1..1600");
ABSL_FLAG(uint64_t, bytes, 1 << 20, "bytes per flow (permutation, incast, alltoall, allreduce total), 1..1073741824");
ABSL_FLAG(uint32_t, fan_in, 32, "incast: senders, 1..hosts-1");
ABSL_FLAG(double, loss, 0.01, "loss scenario: loss probability on fabric links, 0..0.5");
ABSL_FLAG(uint32_t, failed_links, 8,
          "failure scenario: top-tier links (leaf-spine, or aggregation-core in a fat-tree; picked "
          "by --seed) that fail or degrade, 1..the fabric's count");
ABSL_FLAG(double, degrade, 0.1,
          "failure scenario: the failed links' rate as a fraction of their own, 0..1 (0: down)");
ABSL_FLAG(std::string, degrade_queues, "scaled",
          "failure scenario: a degraded link's switch buffers and ECN thresholds: scaled (shrink "
          "with its rate, as uet-htsim models a reduced-speed link) or fixed (full-rate bytes)");
ABSL_FLAG(uint32_t, fail_at_us, 0, "failure scenario: when the links fail, in microseconds");
ABSL_FLAG(std::string, loss_rates, "0,0.001,0.01,0.05",
          "loss-sweep: comma-separated loss probabilities, each 0..0.5, per fabric link or per "
          "path (--loss_per)");
ABSL_FLAG(std::string, loss_per, "link",
          "loss-sweep: what --loss_rates mean: link (every fabric link drops that fraction, both "
          "directions) or path (each link drops 1-(1-r)^(1/L), L the fabric links the flow "
          "crosses, so a packet is lost with probability r end to end, as a NIC-to-NIC loss rate "
          "is usually quoted)");
ABSL_FLAG(uint64_t, sweep_bytes, 16 << 20,
          "loss-sweep: bytes of the one flow (host 0 to the last host), 1..1073741824");
ABSL_FLAG(double, load, 0.5, "websearch: offered load per host link, 0.01..1");
ABSL_FLAG(uint32_t, websearch_us, 200, "websearch: arrival window in microseconds, 1..100000");
ABSL_FLAG(std::string, coll, "allreduce",
          "collective scenario: allreduce, reducescatter, allgather, broadcast, alltoall, reduce, "
          "gather or scatter");
ABSL_FLAG(std::string, algo, "",
          "collective scenario: allreduce ring, tree or hd; reducescatter and allgather ring or "
          "hd; broadcast and reduce ring (a chain); alltoall pairwise or batched; gather and "
          "scatter batched; empty: the first named");
ABSL_FLAG(uint32_t, ranks, 0, "collective scenario: ranks, one per host, 2..hosts; 0: every host");
ABSL_FLAG(std::string, placement, "contiguous",
          "collective scenario: ranks on hosts: contiguous, strided or random (drawn from --seed)");
ABSL_FLAG(std::string, sizes, "64K:16M:4",
          "collective scenario: sizes as nccl-tests' -b/-e/-f, BEGIN:END:FACTOR with K, M, G "
          "suffixes, or one size");
ABSL_FLAG(uint32_t, channels, 1,
          "collective scenario: channels (parallel rings or trees, each a share of the buffer), "
          "1..64");
ABSL_FLAG(uint32_t, chunk_kb, 512, "collective scenario: pipelining chunk in KiB, 4..1048576");
ABSL_FLAG(uint32_t, slots, 8,
          "collective scenario: chunks in flight per rank pair and channel (NCCL_STEPS), 1..64");
ABSL_FLAG(uint32_t, iters, 1,
          "collective scenario: iterations per size, runs with seeds seed, seed+1, ..., 1..1000");
ABSL_FLAG(uint32_t, root, 0,
          "collective scenario: the root rank of broadcast, reduce, gather and scatter, "
          "0..ranks-1");
ABSL_FLAG(uint32_t, dp, 0,
          "collective scenario: data-parallel degree; with --tp, ranks = dp x tp (0: ranks / tp)");
ABSL_FLAG(uint32_t, tp, 1,
          "collective scenario: tensor-parallel degree, ranks d*tp..d*tp+tp-1 form a group, 1..ranks");
ABSL_FLAG(std::string, coll_group, "world",
          "collective scenario: the communicators that run the collective at once: world (every "
          "rank), tp (dp groups of tp adjacent ranks) or dp (tp groups of dp strided ranks)");
ABSL_FLAG(uint32_t, gpus_per_server, 1,
          "collective scenario: hosts per multi-GPU server, 1 (flat) or 2..64: each host is one "
          "GPU with its own NIC (a rail); all-reduce runs hierarchically (intra-server "
          "reduce-scatter, all-reduce per rail over the fabric, intra-server all-gather)");
ABSL_FLAG(double, intra_gbps, 3600,
          "collective scenario, --gpus_per_server > 1: the intra-server rate per GPU and "
          "direction in Gb/s (NVLink 4: 3600), 1..1000000");
ABSL_FLAG(double, intra_us, 1,
          "collective scenario, --gpus_per_server > 1: the latency of an intra-server phase in "
          "us, 0..1000000");
ABSL_FLAG(std::string, trace, "",
          "trace scenario: Chakra execution trace files PREFIX.0.et, PREFIX.1.et, ... (one per "
          "rank; the ranks placed by --placement); collectives use --channels, --chunk_kb, --slots");
ABSL_FLAG(std::string, comm_groups, "",
          "trace scenario: the communicators pg_name attributes name, as ASTRA-sim's "
          "--comm-group-configuration: a JSON object {\"name\": [ranks...], ...}");
ABSL_FLAG(double, coll_loss, 0,
          "collective scenario: loss probability on fabric links, 0..0.5 (> 0: RoCEv2 without PFC "
          "under --pfc=auto, as in the loss scenario)");
ABSL_FLAG(uint32_t, coll_failed_links, 0,
          "collective scenario: top-tier links that fail or degrade as in the failure scenario "
          "(--degrade, --degrade_queues, --fail_at_us), 0..the fabric's count");
ABSL_FLAG(uint32_t, mtu, 4096, "payload bytes per packet: 256, 512, 1024, 2048 or 4096");
ABSL_FLAG(uint32_t, evs, 32, "UET: entropy values to spray over, 1..4096 (1 = one path)");
ABSL_FLAG(std::string, lb, "reps",
          "UET: path selection over --evs: fixed (one EV per PDC, single path), oblivious "
          "(spraying), reps (recycled entropy), bitmap (penalised EVs skipped), mixed (reps, exploring as bitmap); pathsel/");
ABSL_FLAG(std::string, cc, "nscc",
          "UET congestion control: nscc (the sender's window), rccc (receiver credit: RUD_CC "
          "requests, CREDIT grants paced at the receiver's line rate) or both; RoCEv2 runs DCQCN "
          "whatever this says");
ABSL_FLAG(std::string, uet_mode, "rud",
          "UET: delivery mode of the flows' WRITEs: rud, rod (one EV per PDC, in-order "
          "execution at the target), rudi (no PDC: per-packet IDs, idempotent WRITEs) or uud "
          "(unreliable single-packet datagrams that complete when sent: flows of at most --mtu)");
ABSL_FLAG(std::string, verb, "write",
          "what each flow is: write (an RDMA WRITE of its bytes), send (a message matched at the "
          "destination, which posts its receive as the flow starts: UET tagged send into a "
          "tagged receive, RoCEv2 SEND into the shared receive queue) or atomic (one fetching "
          "64-bit add at the destination: UET FETCHING_ATOMIC, RoCEv2 FETCH_ADD; --bytes "
          "ignored)");
ABSL_FLAG(uint64_t, rendezvous_bytes, 0,
          "UET, --verb=send: tagged sends longer than this go by rendezvous (spec/uet.md §4.5.3: "
          "the first packet eagerly, the rest READ by the destination once matched); 0 (the "
          "default): all eager, or --mtu..4294967295");
ABSL_FLAG(bool, deferrable, false,
          "UET, --verb=send: tagged sends are deferrable (spec/uet.md §4.2: one that finds no "
          "receive is deferred without its bytes, and restarted on the destination's "
          "DEFERRABLE_RTR once the receive is posted); RoCEv2 runs as without it (RC answers a "
          "missing receive with RNR NAKs)");
ABSL_FLAG(double, recv_delay_us, 0,
          "--verb=send: the destination posts each flow's receive this long after the send "
          "starts, as a late application would; 0 (the default): as it starts, or 0..1000000");
ABSL_FLAG(bool, tss, false,
          "UET: seal every frame (TSS, spec/uet.md §5: AES-256-GCM, 28 more bytes a frame); "
          "RoCEv2 has no security sublayer and runs as without it");
ABSL_FLAG(double, tss_ns_per_frame, 0,
          "UET with --tss: host work per frame, charged as time its NIC is busy, 0..1e6 ns "
          "(0: an inline crypto engine at line rate; software sealing and opening on one core "
          "here: see bench/README.md, \"TSS\")");
ABSL_FLAG(double, tss_ns_per_kib, 0,
          "UET with --tss: host work per KiB of frame, as --tss_ns_per_frame, 0..1e6 ns");
ABSL_FLAG(std::string, tss_backend, "auto",
          "UET with --tss: the AES-256-GCM library the simulated hosts seal with (wall time "
          "only: results are the same bytes), auto, ipsec-mb or openssl");
ABSL_FLAG(std::string, tss_key_file, "",
          "UET with --tss: the secure domains' keys (the key file format of dissector/README.md, "
          "which Wireshark reads too, so the --pcap captures open decrypted); the first "
          "domain sends. Empty: one domain with a key drawn from --seed");
ABSL_FLAG(std::string, dcqcn, "htsim",
          "RoCEv2: DCQCN parameter profile: htsim, dcqcn-ns3 (the DCQCN authors' code) or "
          "connectx (NVIDIA firmware defaults); cc/dcqcn.h lists the values");
ABSL_FLAG(double, fabric_gbps, 0,
          "switch-to-switch link rate in Gb/s, 1..1600; 0: the same as --gbps (below it: "
          "oversubscribed uplinks)");
ABSL_FLAG(uint32_t, hosts_per_tor, 0,
          "fat-tree: hosts per ToR, 0..256; 0: k/2 (non-blocking); more oversubscribe the ToR");
ABSL_FLAG(uint32_t, latency_ns, 500, "propagation delay of every link in ns, 0..1000000");
ABSL_FLAG(bool, ecn, true, "switches mark ECN (RED on the data-class queue)");
ABSL_FLAG(uint32_t, ecn_kmin_kb, 100, "ECN: marking starts at this queue in KiB, 1..65536");
ABSL_FLAG(uint32_t, ecn_kmax_kb, 400,
          "ECN: the probability reaches --ecn_pmax below this queue and 1 from it, KiB, "
          "--ecn_kmin_kb..65536");
ABSL_FLAG(double, ecn_pmax, 0.2, "ECN: the marking probability just below kmax, 0..1");
ABSL_FLAG(bool, trimming, true, "switches trim UET requests instead of dropping (UET runs)");
ABSL_FLAG(std::string, pfc, "auto",
          "PFC on the data class: auto (RoCEv2 runs lossless except in loss scenarios, UET "
          "never), on (both transports), off (neither)");
ABSL_FLAG(uint32_t, pfc_xoff_kb, 64,
          "PFC: an ingress pauses its upstream above this many KiB of the lossless class, "
          "1..65536 (128 KiB of headroom beyond it); below --ecn_kmin_kb PFC acts before ECN");
ABSL_FLAG(uint32_t, pfc_xon_kb, 48, "PFC: and resumes it below this, KiB, 0..--pfc_xoff_kb - 1");
ABSL_FLAG(uint64_t, buffer_kb, 1024, "switch buffer per port in KiB, 16..65536");
ABSL_FLAG(uint64_t, seed, 1, "seed of the fabric and the workload");
ABSL_FLAG(uint32_t, max_ms, 200, "simulated time limit per run in milliseconds, 1..100000");
ABSL_FLAG(std::string, json, "", "write one JSON object per run to this file");
ABSL_FLAG(std::string, csv, "", "write one row per flow per run to this file");
ABSL_FLAG(std::string, plot, "",
          "directory for charts rendered by gnuplot (SVG): per scenario the FCT CDF, delivered "
          "throughput and switch queues over time, both transports on each; loss-sweep: goodput "
          "against loss");
ABSL_FLAG(double, plot_sample_us, 5,
          "--plot: sampling interval of the throughput and queue charts in microseconds, 0.1..10000");
ABSL_FLAG(std::string, save_config, "",
          "write the experiment file (every parameter of this run, seed included, as --flag=value "
          "lines) here; runs with --json=F also write F.flags, runs with --plot=DIR DIR/experiment.flags");
ABSL_FLAG(std::string, config, "",
          "read an experiment file written by --save_config (flags given after it override it)");
ABSL_FLAG(double, max_memory_gb, 0,
          "refuse a request whose estimated peak memory exceeds this many GiB, 0..1000000; 0: "
          "the machine's MemAvailable");
ABSL_FLAG(std::string, pcap, "",
          "directory for pcaps of host 0's traffic, one pair per run (SCENARIO_TRANSPORT_h0_tx.pcap, _rx)");

namespace uet::ab {
namespace {

// Ctrl-C: the first stops the current run at its next slice, prints what it has and skips the
// rest; the handler then restores the default, so a second Ctrl-C kills.
std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) {
  g_stop.store(true, std::memory_order_relaxed);
  std::signal(SIGINT, SIG_DFL);
}

// Split over MPI ranks, only rank 0 writes results (stdout, --json, --csv, --plot, experiment
// files); the others run the same code on the same flags, their files going to /dev/null, so
// that every rank makes the same collective calls in the same order.
bool g_writes = true;
std::FILE* open_output(const std::string& path) {
  return std::fopen(g_writes ? path.c_str() : "/dev/null", "w");
}

// The process's resident memory now (/proc/self/statm), in bytes; 0 when unknown.
double resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const bool ok = std::fscanf(f, "%llu %llu", &size, &resident) == 2;
  std::fclose(f);
  return ok ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) : 0;
}

// A progress line on stderr once a run has taken 2 s of wall time: rewritten in place on a
// terminal, a line every 5 s otherwise.
class ProgressLine {
 public:
  explicit ProgressLine(std::string label) : label_(std::move(label)), tty_(isatty(STDERR_FILENO) != 0) {}
  ~ProgressLine() {
    if (shown_ && tty_) std::fprintf(stderr, "\n");
  }
  void operator()(const Progress& p) {
    if (p.wall_s < 2 || (shown_ && p.wall_s - last_ < (tty_ ? 0.5 : 5))) return;
    last_ = p.wall_s;
    shown_ = true;
    std::string eta = "?";
    if (p.flows_done > 0 && p.flows_done < p.flows) {
      eta = absl::StrFormat("~%.0f s", p.wall_s * static_cast<double>(p.flows - p.flows_done) /
                                           static_cast<double>(p.flows_done));
    }
    std::fprintf(stderr,
                 "%s[%s] simulated %.3f ms, %.2f M events/s, flows %zu/%zu, RSS %.2f GiB, wall "
                 "%.0f s, ETA %s%s",
                 tty_ ? "\r" : "", label_.c_str(), static_cast<double>(p.sim_time) / kMillisecond,
                 static_cast<double>(p.events) / 1e6 / p.wall_s, p.flows_done, p.flows,
                 resident_bytes() / double(1 << 30), p.wall_s, eta.c_str(), tty_ ? "   " : "\n");
  }

 private:
  std::string label_;
  bool tty_;
  bool shown_ = false;
  double last_ = 0;
};

struct Check {
  std::string error;
  void range(const char* flag, double v, double lo, double hi) {
    if (error.empty() && !(v >= lo && v <= hi))
      error = absl::StrFormat("--%s=%g out of range: %g..%g", flag, v, lo, hi);
  }
  void fail(std::string e) {
    if (error.empty()) error = std::move(e);
  }
};

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

// The scenario's flows on `hosts` hosts; refused with the flag to change.
absl::StatusOr<std::vector<sim::FlowSpec>> scenario_flows(const std::string& scenario,
                                                          uint32_t hosts, uint64_t seed);

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

// --cc's spelling of a UET congestion control.
const char* cc_flag(CcMode m) {
  return m == CcMode::kNscc ? "nscc" : m == CcMode::kRccc ? "rccc" : "both";
}

const char* mode_flag(DeliveryMode m) {
  switch (m) {
    case DeliveryMode::kRod: return "rod";
    case DeliveryMode::kRudi: return "rudi";
    case DeliveryMode::kUud: return "uud";
    default: return "rud";
  }
}

// UET's datagram modes: the mode in the params and what its packets did, present only in
// RUDI and UUD runs (RUD and ROD runs read as before).
bool datagram_mode(const RunConfig& c) {
  return c.transport == TransportKind::kUet &&
         (c.uet_mode == DeliveryMode::kRudi || c.uet_mode == DeliveryMode::kUud);
}
std::string datagram_params(const RunConfig& c) {
  // The verb, when not the default WRITE (runs of WRITEs read as before).
  std::string verb =
      c.verb == Verb::kWrite ? "" : absl::StrFormat("\"verb\": \"%s\", ", to_string(c.verb));
  if (c.uet_rendezvous_bytes != 0 && c.transport == TransportKind::kUet) {
    absl::StrAppend(&verb, absl::StrFormat("\"rendezvous_bytes\": %d, ", c.uet_rendezvous_bytes));
  }
  if (c.uet_deferrable && c.transport == TransportKind::kUet) {
    absl::StrAppend(&verb, "\"deferrable\": true, ");
  }
  if (c.recv_delay != 0) {
    absl::StrAppend(&verb, absl::StrFormat("\"recv_delay_us\": %g, ",
                                           static_cast<double>(c.recv_delay) / kMicrosecond));
  }
  if (!datagram_mode(c)) return verb;
  return verb + absl::StrFormat("\"uet_mode\": \"%s\", ", mode_flag(c.uet_mode));
}
std::string datagram_json(const RunResult& r, const RunConfig& c) {
  if (!datagram_mode(c)) return "";
  return absl::StrFormat(
      ", \"datagrams\": {\"rudi_sent\": %d, \"rudi_resent\": %d, \"rudi_executed\": %d, "
      "\"uud_sent\": %d, \"uud_delivered\": %d}",
      r.datagrams.rudi_sent, r.datagrams.rudi_resent, r.datagrams.rudi_executed,
      r.datagrams.uud_sent, r.datagrams.uud_delivered);
}

// The TSS parameters of a UET run with --tss (absent otherwise, so runs without it read as
// before).
std::string tss_json(const RunConfig& c) {
  if (!c.uet_tss || c.transport != TransportKind::kUet) return "";
  const tss::Backend b = c.tss_backend == tss::Backend::kAuto ? tss::best_backend() : c.tss_backend;
  return absl::StrFormat("\"tss\": {\"backend\": \"%s\", \"ns_per_frame\": %g, "
                         "\"ns_per_kib\": %g}, ",
                         tss::backend_name(b), static_cast<double>(c.tss_cost.ps_per_frame) / kNanosecond,
                         c.tss_cost.ps_per_byte * 1024.0 / kNanosecond);
}

std::string json_of(const RunResult& r, const RunConfig& c) {
  const auto& f = r.flows;
  return absl::StrFormat(
      "{\"scenario\": \"%s\", \"transport\": \"%s\", \"flows\": %d, \"completed\": %d, "
      "\"failed\": %d, \"fct_us\": {\"min\": %.3f, \"p50\": %.3f, \"p99\": %.3f, \"max\": %.3f}, "
      "\"slowdown\": {\"p50\": %.4f, \"p99\": %.4f}, \"goodput_gbps\": %.3f, \"retransmits\": %d, "
      "\"timeouts\": %d, \"drops\": %d, \"trims\": %d, \"ecn_marks\": %d, \"pfc_pauses\": %d, "
      "\"pfc_pause_us\": %.3f, \"max_queue_bytes\": %d, \"events\": %d, \"sim_us\": %.3f, "
      "\"wall_s\": %.3f, \"params\": {\"hosts\": %d, \"bytes\": %d, \"mtu\": %d, \"gbps\": %g, "
      "\"fabric_loss\": %g, \"pfc\": %s, \"trimming\": %s, \"ecn\": %s, \"evs\": %d, "
      "\"dcqcn\": \"%s\", \"cc\": \"%s\", \"lb\": \"%s\", \"failed_links\": %d, \"degrade\": %g, \"degrade_queues\": \"%s\", "
      "\"fabric_gbps\": %g, \"latency_ns\": %d, \"buffer_kb\": %d, \"ecn_kmin_kb\": %d, "
      "\"ecn_kmax_kb\": %d, \"ecn_pmax\": %g, \"pfc_xoff_kb\": %d, \"pfc_xon_kb\": %d, "
      "\"topology\": \"%s\", %s"
      "\"seed\": %d}%s}",
      r.scenario, to_string(r.transport), f.total, f.completed, r.failed, f.fct_min_us,
      f.fct_p50_us, f.fct_p99_us, f.fct_max_us, f.slowdown_p50, f.slowdown_p99, f.goodput_gbps,
      r.endpoints.retransmitted_packets, r.endpoints.timeouts, r.ports.drops + r.ports.wire_losses,
      r.ports.trims, r.ports.ecn_marks, r.ports.pauses,
      static_cast<double>(r.ports.paused_time) / kMicrosecond, r.ports.max_queue_bytes, r.events,
      static_cast<double>(r.sim_time) / kMicrosecond, r.wall_s, r.hosts,
      c.scenario == "loss-sweep" ? absl::GetFlag(FLAGS_sweep_bytes) : absl::GetFlag(FLAGS_bytes),
      c.mtu, c.fabric.host_gbps, c.fabric.fabric_loss,
      c.fabric.pfc ? "true" : "false",
      c.fabric.trimming && c.transport == TransportKind::kUet ? "true" : "false",
      c.fabric.ecn ? "true" : "false", c.transport == TransportKind::kUet ? c.uet_evs : 1,
      c.transport == TransportKind::kRocev2 ? c.dcqcn_preset : "-",
      c.transport == TransportKind::kUet ? cc_flag(c.uet_cc) : "-",
      c.transport == TransportKind::kUet ? pathsel::to_string(c.uet_lb) : "fixed",
      c.fabric.failed_links, c.fabric.degrade, c.fabric.degrade_scales_queues ? "scaled" : "fixed",
      c.fabric.fabric_gbps,
      c.fabric.link_delay / kNanosecond, c.fabric.buffer_bytes / 1024, c.fabric.ecn_kmin_bytes / 1024,
      c.fabric.ecn_kmax_bytes / 1024, c.fabric.ecn_pmax, c.fabric.pfc_xoff_bytes / 1024,
      c.fabric.pfc_xon_bytes / 1024,
      c.fabric.kind == Fabric::Kind::kLeafSpine ? "leafspine" : "fattree",
      datagram_params(c) + tss_json(c), c.seed, datagram_json(r, c));
}

void print_split(const std::vector<RunResult>& runs);

void print_table(const std::string& title, const std::vector<RunResult>& runs) {
  std::printf("\n%s\n", title.c_str());
  std::printf("%-26s", "");
  for (const RunResult& r : runs) std::printf(" %14s", to_string(r.transport));
  if (runs.size() == 2) std::printf(" %12s", "uet/rocev2");
  std::printf("\n");
  auto row = [&](const char* name, auto get, const char* fmt) {
    std::printf("%-26s", name);
    double v[2] = {0, 0};
    for (size_t i = 0; i < runs.size(); ++i) {
      v[i] = static_cast<double>(get(runs[i]));
      std::printf(fmt, v[i]);
    }
    if (runs.size() == 2) {
      if (v[1] != 0) {
        std::printf(" %12.3f", v[0] / v[1]);
      } else {
        std::printf(" %12s", "-");
      }
    }
    std::printf("\n");
  };
  row("flows completed", [](const RunResult& r) { return r.flows.completed; }, " %14.0f");
  row("flows failed", [](const RunResult& r) { return r.failed; }, " %14.0f");
  row("FCT min (us)", [](const RunResult& r) { return r.flows.fct_min_us; }, " %14.1f");
  row("FCT p50 (us)", [](const RunResult& r) { return r.flows.fct_p50_us; }, " %14.1f");
  row("FCT p99 (us)", [](const RunResult& r) { return r.flows.fct_p99_us; }, " %14.1f");
  row("FCT max (us)", [](const RunResult& r) { return r.flows.fct_max_us; }, " %14.1f");
  row("slowdown p50", [](const RunResult& r) { return r.flows.slowdown_p50; }, " %14.2f");
  row("slowdown p99", [](const RunResult& r) { return r.flows.slowdown_p99; }, " %14.2f");
  row("goodput (Gb/s)", [](const RunResult& r) { return r.flows.goodput_gbps; }, " %14.1f");
  row("retransmitted packets", [](const RunResult& r) { return r.endpoints.retransmitted_packets; }, " %14.0f");
  row("timeouts", [](const RunResult& r) { return r.endpoints.timeouts; }, " %14.0f");
  row("drops (buffer + wire)", [](const RunResult& r) { return r.ports.drops + r.ports.wire_losses; }, " %14.0f");
  row("trims", [](const RunResult& r) { return r.ports.trims; }, " %14.0f");
  row("ECN marks", [](const RunResult& r) { return r.ports.ecn_marks; }, " %14.0f");
  row("PFC pauses", [](const RunResult& r) { return r.ports.pauses; }, " %14.0f");
  row("PFC paused (us, all ports)", [](const RunResult& r) {
        return static_cast<double>(r.ports.paused_time) / kMicrosecond; }, " %14.1f");
  row("max queue (KiB)", [](const RunResult& r) { return static_cast<double>(r.ports.max_queue_bytes) / 1024.0; }, " %14.1f");
  row("events (M)", [](const RunResult& r) { return static_cast<double>(r.events) / 1e6; }, " %14.2f");
  row("wall (s)", [](const RunResult& r) { return r.wall_s; }, " %14.2f");
  print_split(runs);
}

// How a run split over ranks went (stdout only: result files must not depend on the split).
void print_split(const std::vector<RunResult>& runs) {
  for (const RunResult& r : runs) {
    if (r.split.ranks < 2) continue;
    const double us = std::max(1.0, static_cast<double>(r.sim_time) / kMicrosecond);
    std::printf("%s split over %u ranks: lookahead %.0f ns; %lu windows (%.2f per simulated us), "
                "%lu events between ranks (%.1f per simulated us, %.1f MB)\n",
                to_string(r.transport), r.split.ranks,
                static_cast<double>(r.split.lookahead) / kNanosecond, r.split.windows,
                static_cast<double>(r.split.windows) / us, r.split.records,
                static_cast<double>(r.split.records) / us, static_cast<double>(r.split.bytes) / 1e6);
  }
}

// ----- experiment files: every uet-ab parameter as "--name=value", in name order. Output
// locations are left out: they say where results go, not what was run.
std::string experiment_file() {
  static constexpr const char* kNotParameters[] = {"json", "csv", "plot", "pcap", "save_config",
                                                   "config"};
  std::vector<std::pair<std::string, std::string>> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::string_view(flag->Filename()).find("uet_ab.cc") == absl::string_view::npos) continue;
    const std::string n(name);
    if (std::find(std::begin(kNotParameters), std::end(kNotParameters), n) != std::end(kNotParameters)) continue;
    flags.emplace_back(n, flag->CurrentValue());
  }
  std::sort(flags.begin(), flags.end());
  std::string out = "# uet-ab experiment file: rerun with uet-ab --config=THIS_FILE\n";
  for (const auto& [n, v] : flags) absl::StrAppend(&out, "--", n, "=", v, "\n");
  return out;
}

// ----- --plot: data files and a gnuplot script per scenario, rendered to SVG.

std::string plot_base(const std::string& dir, const std::string& scenario) {
  return absl::StrCat(dir, "/", scenario);
}

// Writes `path` or returns why not.
absl::Status write_file(const std::string& path, const std::string& text) {
  std::FILE* f = open_output(path);
  if (f == nullptr) return absl::UnavailableError(absl::StrCat(path, ": cannot open for writing"));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return absl::UnavailableError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

absl::Status run_gnuplot(const std::string& script) {
  if (!g_writes) return absl::OkStatus();  // rank 0 renders
  const std::string cmd = absl::StrCat("gnuplot '", script, "' 2>&1");
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return absl::UnavailableError("--plot: cannot start gnuplot");
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  const int rc = pclose(p);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat(
        "--plot: gnuplot failed (exit ", rc, "; install it with apt-get install gnuplot-nox): ",
        out));
  }
  return absl::OkStatus();
}

// FCT CDF, throughput and queue over time: one SVG each, every transport of the scenario on it.
absl::Status plot_scenario(const std::string& dir, const std::string& scenario,
                           const std::string& title, const std::vector<RunResult>& runs) {
  const std::string base = plot_base(dir, scenario);
  std::string gp = absl::StrCat("set terminal svg size 800,500 dynamic background rgb 'white'\n",
                                "set grid\nset key bottom right\n");
  std::string fct_plot, tput_plot, queue_plot;
  for (const RunResult& r : runs) {
    const std::string t = to_string(r.transport);
    std::vector<double> fct;
    for (const sim::FlowRecord& f : r.records) {
      if (f.finish != kNever) fct.push_back(static_cast<double>(f.finish - f.start) / kMicrosecond);
    }
    std::sort(fct.begin(), fct.end());
    std::string dat = "# fct_us cdf\n";
    for (size_t i = 0; i < fct.size(); ++i) {
      absl::StrAppend(&dat, absl::StrFormat("%.3f %.6f\n", fct[i],
                                            static_cast<double>(i + 1) / static_cast<double>(fct.size())));
    }
    if (absl::Status s = write_file(absl::StrCat(base, "_fct_", t, ".dat"), dat); !s.ok()) return s;
    std::string series = "# t_us delivered_gbps max_queue_kib queued_kib\n";
    for (const Sample& x : r.series) {
      absl::StrAppend(&series, absl::StrFormat("%.3f %.3f %.3f %.3f\n",
                                               static_cast<double>(x.t) / kMicrosecond,
                                               x.delivered_gbps, static_cast<double>(x.max_queue_bytes) / 1024.0,
                                               static_cast<double>(x.queued_bytes) / 1024.0));
    }
    if (absl::Status s = write_file(absl::StrCat(base, "_series_", t, ".dat"), series); !s.ok()) return s;
    const std::string sep = fct_plot.empty() ? "plot " : ", ";
    absl::StrAppend(&fct_plot, sep, "'", base, "_fct_", t, ".dat' using 1:2 with steps lw 2 title '", t, "'");
    absl::StrAppend(&tput_plot, sep, "'", base, "_series_", t, ".dat' using 1:2 with lines lw 2 title '", t, "'");
    absl::StrAppend(&queue_plot, sep, "'", base, "_series_", t,
                    ".dat' using 1:3 with lines lw 2 title '", t, " (fullest port)'");
  }
  absl::StrAppend(&gp, "set output '", base, "_fct_cdf.svg'\nset title '", title,
                  ": FCT CDF'\nset xlabel 'FCT (us)'\nset ylabel 'fraction of flows'\n"
                  "set yrange [0:1]\n", fct_plot, "\n");
  absl::StrAppend(&gp, "set output '", base, "_throughput.svg'\nset title '", title,
                  ": delivered to hosts'\nset xlabel 'time (us)'\nset ylabel 'Gb/s'\n"
                  "set yrange [0:*]\nset key top right\n", tput_plot, "\n");
  absl::StrAppend(&gp, "set output '", base, "_queue.svg'\nset title '", title,
                  ": switch queue'\nset ylabel 'KiB'\n", queue_plot, "\n");
  const std::string script = base + ".gp";
  if (absl::Status s = write_file(script, gp); !s.ok()) return s;
  return run_gnuplot(script);
}

// Goodput of one flow: its bytes over its FCT, or, if it did not finish, what arrived over the
// time it had.
double flow_goodput_gbps(const RunResult& r) {
  if (r.records.empty()) return 0;
  const sim::FlowRecord& f = r.records[0];
  const Time end = f.finish != kNever ? f.finish : r.sim_time;
  if (end <= f.start) return 0;
  return static_cast<double>(f.received) * 8e3 / static_cast<double>(end - f.start);
}

// One row per loss rate: goodput of each transport and the ratio.
struct SweepRow {
  double loss = 0;       // per fabric link
  double path_loss = 0;  // end to end over the flow's fabric links, each way
  std::vector<RunResult> runs;
};

// Fabric (switch-to-switch) links on the loss-sweep flow's path, host 0 to the last host:
// leaf-spine 2 (up, down) when there is more than one leaf; fat-tree 4 (ToR-agg-core-agg-ToR)
// across pods, 2 within one.
uint32_t sweep_path_links(const Fabric& f) {
  if (f.kind == Fabric::Kind::kLeafSpine) return f.leaves > 1 ? 2 : 0;
  return f.k > 2 ? 4 : 2;
}

// Goodput against loss, one line per transport.
absl::Status plot_sweep(const std::string& dir, const std::vector<SweepRow>& rows) {
  const std::string base = plot_base(dir, "loss-sweep");
  std::string gp = "set terminal svg size 800,500 dynamic background rgb 'white'\nset grid\n";
  absl::StrAppend(&gp, "set output '", base, "_goodput.svg'\nset title 'loss-sweep: goodput of one "
                  "flow'\nset xlabel 'random loss per fabric link (%)'\nset ylabel 'Gb/s'\n"
                  "set yrange [0:*]\nset key top right\n");
  std::string plot;
  for (size_t i = 0; i < rows.front().runs.size(); ++i) {
    const std::string t = to_string(rows.front().runs[i].transport);
    std::string dat = "# loss_percent goodput_gbps\n";
    for (const SweepRow& row : rows) {
      if (i < row.runs.size()) {
        absl::StrAppend(&dat, absl::StrFormat("%g %.3f\n", 100 * row.loss, flow_goodput_gbps(row.runs[i])));
      }
    }
    if (absl::Status s = write_file(absl::StrCat(base, "_", t, ".dat"), dat); !s.ok()) return s;
    absl::StrAppend(&plot, plot.empty() ? "plot " : ", ", "'", base, "_", t,
                    ".dat' using 1:2 with linespoints lw 2 title '", t, "'");
  }
  absl::StrAppend(&gp, plot, "\n");
  if (absl::Status s = write_file(base + ".gp", gp); !s.ok()) return s;
  return run_gnuplot(base + ".gp");
}

// The experiment file wherever the flags ask for one (--save_config, beside --json, in
// --plot); false, with the reason on stderr, when one cannot be written.
bool write_experiment_files() {
  std::vector<std::string> paths;
  if (!absl::GetFlag(FLAGS_save_config).empty()) paths.push_back(absl::GetFlag(FLAGS_save_config));
  if (!absl::GetFlag(FLAGS_json).empty()) paths.push_back(absl::GetFlag(FLAGS_json) + ".flags");
  if (!absl::GetFlag(FLAGS_plot).empty()) paths.push_back(absl::GetFlag(FLAGS_plot) + "/experiment.flags");
  for (const std::string& path : paths) {
    if (absl::Status s = write_file(path, experiment_file()); !s.ok()) {
      std::fprintf(stderr, "uet-ab: experiment file: %s\n", std::string(s.message()).c_str());
      return false;
    }
    std::printf("experiment: %s (rerun: uet-ab --config=%s)\n", path.c_str(), path.c_str());
  }
  return true;
}

void print_sweep(const std::string& title, const std::vector<SweepRow>& rows) {
  std::printf("\n%s\n", title.c_str());
  // Goodput as a share of the loss-free row's, when the sweep has one.
  const SweepRow* clean = nullptr;
  for (const SweepRow& row : rows)
    if (row.loss == 0) clean = &row;
  std::printf("%-10s %-9s", "loss/link", "path");
  for (const RunResult& r : rows.front().runs) {
    std::printf(" %9s Gb/s %s %8s retx %8s done", to_string(r.transport),
                clean != nullptr ? "of loss-free" : "", "", "");
  }
  if (rows.front().runs.size() == 2) std::printf(" %12s", "uet/rocev2");
  std::printf("\n");
  for (const SweepRow& row : rows) {
    std::printf("%-10s %-9s", absl::StrFormat("%.2f%%", 100 * row.loss).c_str(),
                absl::StrFormat("%.2f%%", 100 * row.path_loss).c_str());
    double g[2] = {0, 0};
    for (size_t i = 0; i < row.runs.size(); ++i) {
      const RunResult& r = row.runs[i];
      g[i] = flow_goodput_gbps(r);
      std::printf(" %14.2f", g[i]);
      if (clean != nullptr && i < clean->runs.size()) {
        const double c = flow_goodput_gbps(clean->runs[i]);
        std::printf(" %11s", c > 0 ? absl::StrFormat("%.1f%%", 100 * g[i] / c).c_str() : "-");
      }
      std::printf(" %13lu %13s", r.endpoints.retransmitted_packets,
                  r.flows.completed == r.flows.total ? "yes" : "no");
    }
    if (row.runs.size() == 2) {
      if (g[1] > 0) {
        std::printf(" %12.2f", g[0] / g[1]);
      } else {
        std::printf(" %12s", "inf");
      }
    }
    std::printf("\n");
  }
  for (const SweepRow& row : rows) print_split(row.runs);
}

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
  const double limit = absl::GetFlag(FLAGS_max_memory_gb) > 0
                           ? absl::GetFlag(FLAGS_max_memory_gb) * double(1 << 30)
                           : static_cast<double>(memory_available());
  if (limit > 0 && peak.bytes > limit) {
    return refuse(absl::StrFormat(
        "this run needs about %.3g GiB (%s), the machine has %.3g GiB: lower --sizes, --ranks or "
        "the fabric; --max_memory_gb=N overrides the limit",
        peak.bytes / double(1 << 30), peak.why, limit / double(1 << 30)));
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

int run_trace(uint32_t hosts, const std::vector<TransportKind>& transports,
              const std::string& fabric_name,
              const std::function<RunConfig(TransportKind)>& config_for) {
  auto refuse = [](const std::string& why) {
    std::fprintf(stderr, "uet-ab: %s\n", why.c_str());
    return 2;
  };
  const std::string prefix = absl::GetFlag(FLAGS_trace);
  if (prefix.empty()) return refuse("--scenario=trace needs --trace=PREFIX (PREFIX.0.et, ...)");
  auto trace = sim::read_chakra(prefix);
  if (!trace.ok()) return refuse(absl::StrCat("--trace: ", trace.status().message()));
  const auto ranks = static_cast<uint32_t>(trace->ranks.size());
  if (const std::string groups = absl::GetFlag(FLAGS_comm_groups); !groups.empty()) {
    auto g = sim::read_comm_groups(groups, ranks);
    if (!g.ok()) return refuse(absl::StrCat("--comm_groups: ", g.status().message()));
    trace->groups = std::move(*g);
  }
  if (ranks > hosts) {
    return refuse(absl::StrFormat("--trace: %u ranks, the fabric has %u hosts (one rank per host)",
                                  ranks, hosts));
  }
  const auto placement = sim::parse_rank_placement(absl::GetFlag(FLAGS_placement));
  if (!placement.ok()) return refuse(absl::StrCat("--placement: ", placement.status().message()));
  Check check;
  check.range("channels", absl::GetFlag(FLAGS_channels), 1, sim::kMaxCollectiveChannels);
  check.range("chunk_kb", absl::GetFlag(FLAGS_chunk_kb), 4, 1048576);
  check.range("slots", absl::GetFlag(FLAGS_slots), 1, sim::kMaxCollectiveSlots);
  if (!check.error.empty()) return refuse(check.error);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  sim::Rng rng(sim::mix64(seed, 0xC0111EC7));
  const auto rank_hosts = sim::place_ranks(ranks, hosts, *placement, rng);
  if (!rank_hosts.ok()) return refuse(std::string(rank_hosts.status().message()));
  sim::TraceOptions options;
  options.channels = absl::GetFlag(FLAGS_channels);
  options.chunk_bytes = uint64_t{absl::GetFlag(FLAGS_chunk_kb)} * 1024;
  options.slots = absl::GetFlag(FLAGS_slots);
  auto plan = sim::trace_flows(*trace, *rank_hosts, options);
  if (!plan.ok()) return refuse(absl::StrCat("--trace=", prefix, ": ", plan.status().message()));
  for (TransportKind t : transports) {
    RunConfig c = config_for(t);
    c.flows = std::move(plan->flows);
    const absl::Status s = validate(c);
    plan->flows = std::move(c.flows);
    if (!s.ok()) return refuse(absl::StrFormat("trace %s: %s", to_string(t), s.message()));
  }
  if (!write_experiment_files()) return 1;
  std::printf(
      "\ntrace: %s, %u ranks (%s) on %u hosts, %s, %g Gb/s; %lu collectives, %lu sends, %lu "
      "compute nodes, %.3f MB on the network; compute alone %.1f us; seed %lu\n",
      prefix.c_str(), ranks, absl::GetFlag(FLAGS_placement).c_str(), hosts, fabric_name.c_str(),
      config_for(transports.front()).fabric.host_gbps, plan->collectives, plan->p2p,
      plan->compute_nodes, static_cast<double>(plan->network_bytes) / 1e6,
      static_cast<double>(plan->compute_only) / kMicrosecond, seed);
  std::vector<RunResult> runs;
  std::vector<RunConfig> configs;
  std::signal(SIGINT, on_sigint);
  for (TransportKind t : transports) {
    if (g_stop.load(std::memory_order_relaxed)) break;
    RunConfig c = config_for(t);
    c.flows = plan->flows;
    ProgressLine progress(absl::StrCat("trace ", to_string(t)));
    c.progress = [&progress](const Progress& pr) { progress(pr); };
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
  // The step ends with its last task; it is complete when every flow and task has.
  struct Step {
    bool complete = false;
    double us = 0, exposed_us = 0, share = 0;
  };
  std::vector<Step> steps;
  for (const RunResult& r : runs) {
    Step s;
    s.complete = true;
    Time end = 0;
    for (const sim::FlowRecord& f : r.records) {
      if (f.finish == kNever) s.complete = false;
      else end = std::max(end, f.finish);
    }
    s.complete = s.complete && r.failed == 0;
    s.us = static_cast<double>(end) / kMicrosecond;
    s.exposed_us = s.us - static_cast<double>(plan->compute_only) / kMicrosecond;
    s.share = s.us > 0 ? s.exposed_us / s.us : 0;
    steps.push_back(s);
  }
  std::printf("%-32s", "");
  for (const RunResult& r : runs) std::printf(" %14s", to_string(r.transport));
  if (runs.size() == 2) std::printf(" %12s", "uet/rocev2");
  std::printf("\n");
  auto row = [&](const char* name, auto get, const char* fmt) {
    std::printf("%-32s", name);
    double v[2] = {0, 0};
    for (size_t i = 0; i < runs.size(); ++i) {
      v[i] = get(i);
      std::printf(fmt, v[i]);
    }
    if (runs.size() == 2) {
      if (v[1] != 0) {
        std::printf(" %12.3f", v[0] / v[1]);
      } else {
        std::printf(" %12s", "-");
      }
    }
    std::printf("\n");
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
  const auto collectives = collective_rows(*plan, runs);
  std::vector<double> step_us;
  for (const Step& s : steps) step_us.push_back(s.us);
  print_collective_rows(collectives, runs, step_us);
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    std::FILE* json = open_output(path);
    if (json == nullptr) {
      std::fprintf(stderr, "uet-ab: --json=%s: cannot open for writing\n", path.c_str());
      return 1;
    }
    std::fprintf(json, "[\n");
    for (size_t i = 0; i < runs.size(); ++i) {
      std::fprintf(json,
                   "%s  {\"scenario\": \"trace\", \"trace\": \"%s\", \"transport\": \"%s\", "
                   "\"ranks\": %u, \"collectives\": %lu, \"sends\": %lu, \"compute_nodes\": %lu, "
                   "\"network_bytes\": %lu, \"complete\": %s, \"step_us\": %.3f, "
                   "\"compute_only_us\": %.3f, \"exposed_comm_us\": %.3f, \"comm_share\": %.5f, "
                   "\"collectives_by_kind\": %s, \"run\": %s}",
                   i == 0 ? "" : ",\n", prefix.c_str(), to_string(runs[i].transport), ranks,
                   plan->collectives, plan->p2p, plan->compute_nodes, plan->network_bytes,
                   steps[i].complete ? "true" : "false", steps[i].us,
                   static_cast<double>(plan->compute_only) / kMicrosecond, steps[i].exposed_us,
                   steps[i].share, collectives_json(collectives[i]).c_str(),
                   json_of(runs[i], configs[i]).c_str());
    }
    std::fprintf(json, "\n]\n");
    std::fclose(json);
  }
  if (g_stop.load(std::memory_order_relaxed)) return 130;
  for (const Step& s : steps)
    if (!s.complete) return 1;
  return 0;
}

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
  const double limit = absl::GetFlag(FLAGS_max_memory_gb) > 0
                           ? absl::GetFlag(FLAGS_max_memory_gb) * double(1 << 30)
                           : static_cast<double>(memory_available());
  if (limit > 0 && need > limit) {
    const char* size_flags = !absl::GetFlag(FLAGS_topo).empty()      ? "the --topo file's Nodes"
                             : base.kind == Fabric::Kind::kLeafSpine ? "--leaves / --hosts_per_leaf"
                                                                     : "--k / --hosts_per_tor";
    std::fprintf(
        stderr,
        "uet-ab: this run needs about %.3g GiB (%s), the machine has %.3g GiB %s: lower "
        "%s, or --bytes%s\n",
        need / double(1 << 30), peak.why.c_str(), limit / double(1 << 30),
        absl::GetFlag(FLAGS_max_memory_gb) > 0 ? "allowed (--max_memory_gb)" : "available",
        size_flags,
        absl::GetFlag(FLAGS_max_memory_gb) > 0 ? "" : "; --max_memory_gb=N overrides the limit");
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

}  // namespace
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
