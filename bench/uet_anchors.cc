// uet-anchors: our simulator and engines against the results the UEC simulator (uet-htsim)
// publishes for its own validation runs (uet-htsim 40ccb05, validate_outputs/), side by side.
//
//   build/bin/uet-anchors               # 1024-host k=16 fat-tree, as uet-htsim's runs
//   build/bin/uet-anchors --scale=small # the same shapes on 128 hosts (k=8), in seconds
//   build/bin/uet-anchors --anchor="1 path" --path_report   # one row, with its flows per link
//
// Each anchor names the htsim run it mirrors, on a fabric like its: 100 Gb/s, 1 us links, our
// queues (1 MiB per port, RED from 100 to 400 KiB at most 20 %, headers in 256 KiB) or with
// --queues=htsim its (one BDP per port, ECN marking rising from 20 % to 80 % of it, headers in
// two BDPs, the arrival or half the time the last packet queued trimmed); trimming for UET,
// PFC for RoCEv2. The incasts run on its connection matrices' fabrics (16 and 128 hosts). Frames are ours (the spec's headers), so absolute FCTs differ by the bytes on the
// wire too (bench/README.md, "Where we differ from uet-htsim").
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/ab_runner.h"
#include "bench/tool_main.h"
#include "sim/htsim_cm.h"
#include "sim/rng.h"

ABSL_FLAG(std::string, scale, "full", "full (1024 hosts, k=16 fat-tree) or small (128, k=8)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the fabric and the workloads");
ABSL_FLAG(std::string, json, "", "write one JSON object per anchor to this file");
ABSL_FLAG(bool, path_report, false,
          "under each anchor, how many flows crossed each link, tier by tier (flows per link: "
          "links), and the busiest link's flows x their bytes at line rate");
ABSL_FLAG(bool, rack, true,
          "UET: infer losses from the SACKs (RACK, RFC 8985: the engine's default); false: "
          "resend on NACKs, the tail-loss probe and the RTO only, as uet-htsim's published "
          "runs (no -sleek; with --queues=htsim, its configuration)");
ABSL_FLAG(bool, ack_ooo, true,
          "UET: the target ACKs a request that arrived out of order at once (the engine's "
          "default); false: it coalesces like any other, as uet-htsim's sink (with "
          "--queues=htsim --rack=false, its configuration)");
ABSL_FLAG(bool, resend_report, false,
          "under each anchor, what the switches trimmed, dropped and marked, and the packets "
          "resent by what asked for each (NACK, RACK, tail-loss probe, RTO)");
ABSL_FLAG(std::string, anchor, "", "run only the anchors whose name contains this");
ABSL_FLAG(std::string, cm, "",
          "the permutation rows' flows from this htsim connection matrix (uet-htsim's own "
          "perm_1024n_1024c_0u_2000000b.cm at full scale) instead of a permutation drawn from "
          "--seed");
ABSL_FLAG(std::string, queues, "ours",
          "switch queues: htsim (one BDP per port, ECN from 20 % to 80 % of it, headers in "
          "twice the BDP) or ours (uet-ab's defaults: 1 MiB, RED from 100 to 400 KiB at most "
          "20 %, headers in 256 KiB)");
ABSL_FLAG(std::string, failures, "ours",
          "the degraded rows' links: htsim (8 core -> agg links into the first aggregation "
          "switch at 25 % of their rate, one direction: what uet-htsim's -failed 8 builds) or "
          "ours (8 core links drawn from the seed at 10 %, both directions)");
ABSL_FLAG(uint64_t, control_buffer_kb, 0,
          "the switches' control class per port (trimmed headers, ACKs, NACKs) in KiB, "
          "1..65536; 0: --queues' own (ours 256 KiB, htsim's twice its data queue)");

namespace uet::ab {
namespace {

struct Anchor {
  std::string name;
  std::string htsim_run;  // its file in uet-htsim's validate_outputs/
  double published_min_us = 0, published_tail_us = 0;  // 0: not published
  RunConfig config;
  double ideal_us = 0;  // incasts: N x bytes at line rate
};

Fabric fat_tree(uint32_t k, bool htsim_queues) {
  Fabric f;
  f.kind = Fabric::Kind::kFatTree;
  f.k = k;
  f.link_delay = kMicrosecond;
  f.frame_capacity = 256;
  if (htsim_queues) {
    // uet-htsim's main_uec.cpp for 100 Gb/s and a 6 us diameter: queues of one BDP (43 of its
    // 4150-byte packets) and ECN from 20 % to 80 % of the BDP in packets, marking with a
    // probability rising linearly to 1 (its log: "QueueSize 178450", "ECN ... low 37350 high
    // 145250").
    f.buffer_bytes = 178'450;
    f.ecn_kmin_bytes = 37'350;
    f.ecn_kmax_bytes = 145'250;
    f.ecn_pmax = 1.0;
    // Its CompositeQueue drops a header only past twice the data queue, and trims the
    // arrival or, half the time, the last packet queued (compositequeue.cpp).
    f.control_buffer_bytes = 2 * f.buffer_bytes;
    f.trim_last_half = true;
  }
  if (const uint64_t kb = absl::GetFlag(FLAGS_control_buffer_kb); kb != 0) {
    f.control_buffer_bytes = kb * 1024;
  }
  return f;
}

constexpr uint64_t kTwoMb = 2'000'000;

// The permutation rows' flows: --cm's, or a permutation of 2 MB flows drawn from the seed.
absl::StatusOr<std::vector<sim::FlowSpec>> permutation_flows(uint32_t hosts, uint64_t seed) {
  const std::string path = absl::GetFlag(FLAGS_cm);
  if (path.empty()) {
    sim::Rng rng(seed);
    return sim::permutation(hosts, kTwoMb, rng);
  }
  auto cm = sim::load_connection_matrix(path);
  if (!cm.ok()) return cm.status();
  if (cm->nodes != hosts) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--cm=%s: Nodes %u, but this scale's fat-tree has %u hosts", path, cm->nodes, hosts));
  }
  return std::move(cm->flows);
}

std::vector<Anchor> anchors(bool full, uint64_t seed, bool htsim_queues,
                            const std::vector<sim::FlowSpec>& perm) {
  const uint32_t k = full ? 16 : 8;
  const uint32_t hosts = k * k * k / 4;
  std::vector<Anchor> out;
  auto add = [&](std::string name, std::string run, double pmin, double ptail, TransportKind t,
                 uint16_t evs, pathsel::Algorithm lb, std::vector<sim::FlowSpec> flows) {
    Anchor a;
    a.name = std::move(name);
    a.htsim_run = std::move(run);
    a.published_min_us = pmin;
    a.published_tail_us = ptail;
    a.config.scenario = a.name;
    a.config.fabric = fat_tree(k, htsim_queues);
    a.config.fabric.pfc = t == TransportKind::kRocev2;
    a.config.flows = std::move(flows);
    a.config.transport = t;
    a.config.seed = seed;
    a.config.uet_evs = evs;
    a.config.uet_lb = lb;
    a.config.uet_rack = absl::GetFlag(FLAGS_rack);
    a.config.uet_ack_ooo = absl::GetFlag(FLAGS_ack_ooo);
    out.push_back(std::move(a));
    return &out.back();
  };
  using pathsel::Algorithm;
  add("permutation 2MB, UET REPS 128 EVs", "validate_uec_sender: NSCC 128 EVs", 167.6, 200.5,
      TransportKind::kUet, 128, Algorithm::kReps, perm);
  add("permutation 2MB, UET oblivious 128 EVs", "validate_load_balancing_snd: oblivious", 167.8,
      212.8, TransportKind::kUet, 128, Algorithm::kOblivious, perm);
  add("permutation 2MB, UET mixed 128 EVs", "validate_load_balancing_snd: mixed, 1 SACK/pkt",
      169.2, 193.2, TransportKind::kUet, 128, Algorithm::kMixed, perm);
  add("permutation 2MB, UET 1 path", "validate_uec_sender: NSCC -paths 1", 168.0, 889.9,
      TransportKind::kUet, 1, Algorithm::kFixed, perm);
  add("permutation 2MB, RoCEv2 (ECMP, PFC)", "(no htsim_roce run published)", 0, 0,
      TransportKind::kRocev2, 1, Algorithm::kFixed, perm);
  for (const auto& [lb, name, pmin, ptail] :
       {std::tuple{Algorithm::kReps, "REPS", 169.2, 206.7},
        std::tuple{Algorithm::kMixed, "mixed", 169.3, 211.8},
        std::tuple{Algorithm::kOblivious, "oblivious", 167.6, 280.8}}) {
    // 8 of the 64 core links of k=16; the same eighth (2 of 16) at k=8.
    const uint32_t degraded = full ? 8 : 2;
    const bool htsim_failures = absl::GetFlag(FLAGS_failures) == "htsim";
    Anchor* a = add(absl::StrFormat(htsim_failures ? "%u core->agg links at 25%%, UET %s"
                                                   : "%u core links at 10%%, UET %s",
                                    degraded, name),
                    absl::StrFormat("validate_load_balancing_failed_snd: %s", name), pmin, ptail,
                    TransportKind::kUet, 128, lb, perm);
    a->config.fabric.failed_links = degraded;
    a->config.fabric.degrade = 0.1;
    if (htsim_failures) {
      // fat_tree_topology.cpp: -failed N slows the core -> agg queues of agg 0, then agg 1,
      // ..., to _failed_link_ratio (0.25) of their rate and buffer.
      a->config.fabric.degrade = 0.25;
      a->config.fabric.fail_downward_in_order = true;
    }
  }
  // The incasts run on uet-htsim's fabrics at both scales: its connection matrices name 16
  // hosts (incast.cm: 0..14 -> 15, a k=4 fat-tree) and 128 (incast_128.cm: the others -> 33,
  // k=8), so the senders' paths are its: 1 of 15 (3 of 127) under the receiver's ToR, 2 (12)
  // in its pod, the rest across the core.
  auto on_htsim_fabric = [&](Anchor* a, uint32_t incast_k) {
    a->config.fabric = fat_tree(incast_k, htsim_queues);
    a->config.fabric.pfc = a->config.transport == TransportKind::kRocev2;
  };
  // 15 -> 1 incast of 2 MB: the ideal is 15 x 2 MB at 100 Gb/s = 2400 us.
  const auto incast = *sim::incast(16, 15, 15, kTwoMb);
  for (const TransportKind t : {TransportKind::kUet, TransportKind::kRocev2}) {
    Anchor* a = add(absl::StrFormat("incast 15->1 2MB, %s", to_string(t)),
                    t == TransportKind::kUet ? "validate_uec_sender: 15->1 NSCC" : "(none)",
                    t == TransportKind::kUet ? 1273.6 : 0, t == TransportKind::kUet ? 2478.5 : 0,
                    t, 128, Algorithm::kReps, incast);
    a->ideal_us = 15 * kTwoMb * 8 / 100e3;
    on_htsim_fabric(a, 4);
  }
  // The same incasts with RCCC's receiver credits, and 127 -> 1 (ideal 20320 us) both ways
  // (uet-htsim's RCCC runs: validate_uec_rcv.out).
  Anchor* r15 = add("incast 15->1 2MB, UET RCCC", "validate_uec_rcv: 15->1 RCCC", 2368.4, 2464.4,
                    TransportKind::kUet, 128, Algorithm::kReps, incast);
  r15->ideal_us = 15 * kTwoMb * 8 / 100e3;
  r15->config.uet_cc = CcMode::kRccc;
  on_htsim_fabric(r15, 4);
  const auto incast127 = *sim::incast(128, 127, 33, kTwoMb);
  for (const auto& [cc, name, run, pmin, ptail] :
       {std::tuple{CcMode::kNscc, "NSCC", "validate_uec_sender: 127->1 NSCC", 10788.0, 21029.0},
        std::tuple{CcMode::kRccc, "RCCC", "validate_uec_rcv: 127->1 RCCC", 20355.0, 20891.0}}) {
    Anchor* a = add(absl::StrFormat("incast 127->1 2MB, UET %s", name), run, pmin, ptail,
                    TransportKind::kUet, 128, Algorithm::kReps, incast127);
    a->ideal_us = 127 * kTwoMb * 8 / 100e3;
    a->config.uet_cc = cc;
    on_htsim_fabric(a, 8);
  }
  sim::FlowSpec one;
  one.src = 0;
  one.dst = hosts - 1;
  one.bytes = kTwoMb;
  add("single 2MB flow, UET", "validate_uec_sender: single flow", 176.2, 176.2, TransportKind::kUet,
      128, Algorithm::kReps, {one});
  return out;
}

// The anchor's row: published and measured FCTs side by side (and the incasts' ideal).
void print_row(const Anchor& a, const RunResult& r) {
  const double min = r.flows.fct_min_us, tail = r.flows.fct_max_us;
  const std::string pub = a.published_tail_us > 0
                              ? absl::StrFormat("%8.1f / %8.1f", a.published_min_us, a.published_tail_us)
                              : std::string("-");
  const std::string pub_ratio =
      a.published_tail_us > 0 ? absl::StrFormat("%.2f", a.published_tail_us / a.published_min_us)
                              : std::string("-");
  std::printf("%-40s %21s %8.1f / %8.1f %9s %9.2f %8.2f%s\n", a.name.c_str(), pub.c_str(), min,
              tail, pub_ratio.c_str(), tail / min, r.wall_s,
              r.flows.completed == r.flows.total ? "" : "  (not all flows completed)");
  if (a.ideal_us > 0) {
    std::printf("%-40s %21s %21s %9s %9.3f\n", "  tail / ideal (N x 2MB at line rate)",
                a.published_tail_us > 0 ? absl::StrFormat("%.3f", a.published_tail_us / a.ideal_us).c_str() : "-",
                "", "", tail / a.ideal_us);
  }
}

// A flow's time on a link at line rate: its bytes in full frames with their headers.
double flow_wire_us(const Anchor& a, uint64_t bytes) {
  const uint64_t frames = (bytes + a.config.mtu - 1) / a.config.mtu;
  const uint64_t wire = bytes + frames * frame_overhead(a.config.transport);
  return static_cast<double>(wire) * 8 / (a.config.fabric.host_gbps * 1e3);
}

// --path_report: each tier's histogram of flows per link, and what the busiest link alone
// predicts for the tail. One path per flow: its flows one after another at line rate (every
// flow is 2 MB). Sprayed: its bytes at line rate (the data frames each host sent, walked
// along their paths: retransmissions in, trimming not).
void print_paths(const Anchor& a, const PathReport& p) {
  std::printf("  paths: %lu flows, %lu paths, %lu flow-links%s; flows per link (flows:links)\n",
              p.flows, p.paths, p.flow_links, p.unreached ? " (some path unreached!)" : "");
  uint32_t busiest = 0;
  uint64_t busiest_bytes = 0;
  for (const TierLoad& t : p.tiers) {
    std::string hist;
    for (size_t n = 0; n < t.histogram.size(); ++n) {
      if (t.histogram[n] != 0) absl::StrAppendFormat(&hist, " %zu:%u", n, t.histogram[n]);
    }
    std::printf("    %-12s %5u links, max %3u flows, busiest %6.2f MB, %lu trims (%lu at most "
                "at a port), %lu ECN marks:%s\n",
                t.name.c_str(), t.links, t.max_flows, static_cast<double>(t.max_bytes) / 1e6,
                t.trims, t.max_trims, t.ecn_marks, hist.c_str());
    busiest = std::max(busiest, t.max_flows);
    if (t.from_level != 0 && t.to_level != 0) busiest_bytes = std::max(busiest_bytes, t.max_bytes);
  }
  const double gbps = a.config.fabric.host_gbps;
  if (p.paths == p.flows) {
    const uint64_t bytes = a.config.flows.empty() ? 0 : a.config.flows[0].bytes;
    std::printf("    busiest link: %u flows x %.2f us (2 MB on the wire at %.0f Gb/s) = %.1f us\n",
                busiest, flow_wire_us(a, bytes), gbps, busiest * flow_wire_us(a, bytes));
  } else {
    std::printf("    busiest switch link: %.2f MB at %.0f Gb/s = %.1f us\n",
                static_cast<double>(busiest_bytes) / 1e6, gbps,
                static_cast<double>(busiest_bytes) * 8 / (gbps * 1e3));
  }
}

// --resend_report: the switches' trims, drops and ECN marks, and UET's resends by cause.
void print_resends(const RunResult& r) {
  const auto& u = r.uet_resends;
  std::printf("  switches: %lu trims, %lu drops, %lu ECN marks; targets NACKed %lu trimmed\n",
              r.ports.trims, r.ports.drops, r.ports.ecn_marks, u.trimmed_rx);
  std::printf("  resent %lu: NACK %lu, RACK %lu, tail-loss probe %lu, RTO %lu; %lu spurious "
              "(the target got them twice)\n",
              r.endpoints.retransmitted_packets, u.nack, u.rack, u.tlp, u.rto,
              r.endpoints.spurious_retransmits);
}

void write_json(std::FILE* json, bool first, const Anchor& a, const RunResult& r) {
  std::string tiers;
  for (const TierLoad& t : r.paths.tiers) {
    absl::StrAppendFormat(&tiers, "%s{\"tier\": \"%s\", \"links\": %u, \"max_flows\": %u, "
                          "\"max_bytes\": %lu, \"histogram\": [%s]}", tiers.empty() ? "" : ", ",
                          t.name, t.links, t.max_flows, t.max_bytes,
                          absl::StrJoin(t.histogram, ", "));
  }
  std::fprintf(json,
               "%s  {\"anchor\": \"%s\", \"htsim_run\": \"%s\", \"published_min_us\": %.1f, "
               "\"published_tail_us\": %.1f, \"min_us\": %.3f, \"tail_us\": %.3f, "
               "\"ideal_us\": %.1f, \"flows\": %zu, \"completed\": %zu, \"retransmits\": %lu, "
               "\"resends\": {\"nack\": %lu, \"rack\": %lu, \"tlp\": %lu, \"rto\": %lu, "
               "\"spurious\": %lu}, \"trims\": %lu, \"drops\": %lu, \"control_buffer_bytes\": %lu, "
               "\"rack\": %s, \"ack_ooo\": %s, "
               "\"hosts\": %zu, \"seed\": %lu, \"wall_s\": %.3f%s}",
               first ? "" : ",\n", a.name.c_str(), a.htsim_run.c_str(), a.published_min_us,
               a.published_tail_us, r.flows.fct_min_us, r.flows.fct_max_us, a.ideal_us,
               r.flows.total, r.flows.completed, r.endpoints.retransmitted_packets,
               r.uet_resends.nack, r.uet_resends.rack, r.uet_resends.tlp, r.uet_resends.rto,
               r.endpoints.spurious_retransmits, r.ports.trims, r.ports.drops,
               a.config.fabric.control_buffer_bytes,
               a.config.uet_rack ? "true" : "false", a.config.uet_ack_ooo ? "true" : "false",
               r.hosts,
               a.config.seed, r.wall_s,
               r.paths.tiers.empty()
                   ? ""
                   : absl::StrFormat(", \"path_flows\": %lu, \"path_flow_links\": %lu, "
                                     "\"tiers\": [%s]",
                                     r.paths.flows, r.paths.flow_links, tiers)
                         .c_str());
}

// The flags' checks; 0 when they pass, else the exit code.
int check_flags() {
  const std::string scale = absl::GetFlag(FLAGS_scale);
  if (scale != "full" && scale != "small") {
    std::fprintf(stderr, "uet-anchors: --scale=%s unknown: full or small\n", scale.c_str());
    return 2;
  }
  const std::string queues = absl::GetFlag(FLAGS_queues);
  if (queues != "htsim" && queues != "ours") {
    std::fprintf(stderr, "uet-anchors: --queues=%s unknown: htsim or ours\n", queues.c_str());
    return 2;
  }
  const std::string failures = absl::GetFlag(FLAGS_failures);
  if (failures != "htsim" && failures != "ours") {
    std::fprintf(stderr, "uet-anchors: --failures=%s unknown: htsim or ours\n", failures.c_str());
    return 2;
  }
  if (const uint64_t kb = absl::GetFlag(FLAGS_control_buffer_kb); kb > 65536) {
    std::fprintf(stderr, "uet-anchors: --control_buffer_kb=%lu out of range: 0, or 1..65536\n", kb);
    return 2;
  }
  return 0;
}

int run_main() {
  if (const int rc = check_flags(); rc != 0) return rc;
  const std::string scale = absl::GetFlag(FLAGS_scale), queues = absl::GetFlag(FLAGS_queues);
  const bool full = scale == "full";
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const auto perm = permutation_flows(full ? 1024 : 128, seed);
  if (!perm.ok()) {
    std::fprintf(stderr, "uet-anchors: %s\n", std::string(perm.status().message()).c_str());
    return 2;
  }
  std::FILE* json = nullptr;
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    json = std::fopen(path.c_str(), "w");
    if (json == nullptr) {
      std::fprintf(stderr, "uet-anchors: --json=%s: cannot open for writing\n", path.c_str());
      return 1;
    }
    std::fprintf(json, "[\n");
  }
  std::printf("uet-anchors: %s scale (%s), %s queues (headers in %lu bytes), %s%s, seed %lu; "
              "published = uet-htsim 40ccb05 validate_outputs (1024 hosts)\n\n",
              scale.c_str(), full ? "1024 hosts, k=16 fat-tree" : "128 hosts, k=8 fat-tree",
              queues.c_str(), fat_tree(8, queues == "htsim").control_buffer_bytes,
              absl::GetFlag(FLAGS_rack) ? "RACK" : "no RACK",
              absl::GetFlag(FLAGS_ack_ooo) ? "" : ", out-of-order ACKs coalesced",
              seed);
  std::printf("%-40s %21s %21s %9s %9s %8s\n", "anchor", "published min/tail", "ours min/tail",
              "pub t/m", "ours t/m", "wall s");
  int rc = 0;
  bool first = true;
  const std::string only = absl::GetFlag(FLAGS_anchor);
  for (Anchor& a : anchors(full, seed, queues == "htsim", *perm)) {
    if (!absl::StrContains(a.name, only)) continue;
    a.config.path_report = absl::GetFlag(FLAGS_path_report);
    auto r = run(a.config);
    if (!r.ok()) {
      std::fprintf(stderr, "uet-anchors: %s: %s\n", a.name.c_str(),
                   std::string(r.status().message()).c_str());
      rc = 1;
      continue;
    }
    print_row(a, *r);
    if (a.config.path_report) print_paths(a, r->paths);
    if (absl::GetFlag(FLAGS_resend_report)) print_resends(*r);
    if (json != nullptr) write_json(json, first, a, *r);
    first = false;
  }
  if (json != nullptr) {
    std::fprintf(json, "\n]\n");
    std::fclose(json);
  }
  return rc;
}

}  // namespace
}  // namespace uet::ab

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "uet-anchors: our runs next to uet-htsim's published validation results.\n"
      "Usage: uet-anchors [--scale=full|small] [--seed=N] [--json=FILE] [--anchor=SUBSTRING]\n"
      "                   [--path_report] [--resend_report] [--cm=FILE] [--queues=htsim|ours]\n"
      "                   [--rack=false] [--ack_ooo=false] [--control_buffer_kb=N]\n"
      "                   [--failures=htsim|ours]");
  // Under mpirun or srun every run is split over the ranks; rank 0 prints and writes.
  auto ranks = uet::ab::start_tool_ranks(&argc, &argv);
  if (!ranks.ok()) return uet::bench::tool_error("uet-anchors", ranks.status(), 2);
  absl::ParseCommandLine(argc, argv);
  if ((*ranks)->rank() != 0) absl::SetFlag(&FLAGS_json, "/dev/null");  // rank 0 writes
  const int rc = uet::ab::run_main();
  std::fflush(stdout);
  return rc;
}
