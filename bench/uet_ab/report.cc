// uet-ab: the text tables, JSON and experiment files.
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

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

namespace {

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
  if (!c.uet_rack && c.transport == TransportKind::kUet) {
    absl::StrAppend(&verb, "\"rack\": false, ");
  }
  if (!c.uet_ack_ooo && c.transport == TransportKind::kUet) {
    absl::StrAppend(&verb, "\"ack_ooo\": false, ");
  }
  // The control class when not the switches' default (runs with it read as before).
  if (c.fabric.control_buffer_bytes != sim::SwitchConfig{}.control_buffer_bytes) {
    absl::StrAppend(&verb, absl::StrFormat("\"control_buffer_kb\": %d, ",
                                           c.fabric.control_buffer_bytes / 1024));
  }
  if (c.fabric.trim_last_half && c.transport == TransportKind::kUet) {
    absl::StrAppend(&verb, "\"trim_last_half\": true, ");
  }
  if (c.uet_min_rto != 0 && c.transport == TransportKind::kUet) {
    absl::StrAppend(&verb, absl::StrFormat("\"min_rto_us\": %g, ",
                                           static_cast<double>(c.uet_min_rto) / kMicrosecond));
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

// The AI/HPC families' shape ("shape": "dragonfly p=4 a=8 h=4 g=33", ...); nothing for
// leaf-spine and fat-tree, whose sizes the other parameters give.
std::string shape_json(const RunConfig& c) {
  if (c.fabric.kind == Fabric::Kind::kLeafSpine || c.fabric.kind == Fabric::Kind::kFatTree)
    return "";
  return absl::StrFormat("\"shape\": \"%s\", ", fabric_title(c.fabric));
}

// The routing mode when not minimal ECMP (runs with minimal routing read as before): the
// routes the run took (RunResult::routing).
std::string routing_json(const sim::RoutingConfig& r) {
  if (r.mode == sim::RoutingMode::kMinimal && !r.dimension_order) return "";
  const char* mode = r.mode == sim::RoutingMode::kValiant ? "valiant"
                     : r.mode == sim::RoutingMode::kUgal  ? "ugal"
                                                          : "minimal";
  std::string out = absl::StrFormat("\"routing\": \"%s\", ", mode);
  if (r.dimension_order) absl::StrAppend(&out, "\"dimension_order\": true, ");
  if (r.mode == sim::RoutingMode::kUgal) {
    absl::StrAppend(&out, absl::StrFormat("\"ugal_bias_bytes\": %d, ", r.ugal_bias_bytes));
  }
  return out;
}

}  // namespace

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
      "\"dcqcn\": \"%s\", \"cc\": \"%s\", \"lb\": \"%s\", \"failed_links\": %d, \"degrade\": %g, "
      "\"degrade_queues\": \"%s\", "
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
      c.mtu, c.fabric.host_gbps, c.fabric.fabric_loss, c.fabric.pfc ? "true" : "false",
      c.fabric.trimming && c.transport == TransportKind::kUet ? "true" : "false",
      c.fabric.ecn ? "true" : "false", c.transport == TransportKind::kUet ? c.uet_evs : 1,
      c.transport == TransportKind::kRocev2 ? c.dcqcn_preset : "-",
      c.transport == TransportKind::kUet ? cc_flag(c.uet_cc) : "-",
      c.transport == TransportKind::kUet ? pathsel::to_string(c.uet_lb) : "fixed",
      c.fabric.failed_links, c.fabric.degrade, c.fabric.degrade_scales_queues ? "scaled" : "fixed",
      c.fabric.fabric_gbps, c.fabric.link_delay / kNanosecond, c.fabric.buffer_bytes / 1024,
      c.fabric.ecn_kmin_bytes / 1024, c.fabric.ecn_kmax_bytes / 1024, c.fabric.ecn_pmax,
      c.fabric.pfc_xoff_bytes / 1024, c.fabric.pfc_xon_bytes / 1024, to_string(c.fabric.kind),
      shape_json(c) + routing_json(r.routing) + datagram_params(c) + tss_json(c), c.seed, datagram_json(r, c));
}

void print_split(const std::vector<RunResult>& runs);
void print_pfc_watchdog(const std::vector<RunResult>& runs);

void print_row(int width, const char* name, const std::vector<double>& values, const char* fmt) {
  std::printf("%-*s", width, name);
  for (double v : values) std::printf(fmt, v);
  if (values.size() == 2) {
    if (values[1] != 0) {
      std::printf(" %12.3f", values[0] / values[1]);
    } else {
      std::printf(" %12s", "-");
    }
  }
  std::printf("\n");
}

void print_heading(int width, const std::vector<RunResult>& runs) {
  std::printf("%-*s", width, "");
  for (const RunResult& r : runs) std::printf(" %14s", to_string(r.transport));
  if (runs.size() == 2) std::printf(" %12s", "uet/rocev2");
  std::printf("\n");
}

void print_table(const std::string& title, const std::vector<RunResult>& runs) {
  std::printf("\n%s\n", title.c_str());
  print_heading(26, runs);
  auto row = [&](const char* name, auto get, const char* fmt) {
    std::vector<double> v;
    for (const RunResult& r : runs) v.push_back(static_cast<double>(get(r)));
    print_row(26, name, v, fmt);
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
  row("... spurious (seen twice)", [](const RunResult& r) { return r.endpoints.spurious_retransmits; }, " %14.0f");
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
  print_pfc_watchdog(runs);
}

// What the PFC watchdog saw, for the runs where it fired (stdout only: the result files are
// those of a fabric without it unless its drop action discarded frames).
void print_pfc_watchdog(const std::vector<RunResult>& runs) {
  for (const RunResult& r : runs) {
    if (r.pfc.firings == 0) continue;
    std::printf("%s PFC watchdog: %lu pauses outlasted its detection time, %lu frames dropped, "
                "%lu deadlocks (cycles of paused queues)",
                to_string(r.transport), r.pfc.firings, r.pfc.drops, r.pfc.deadlocks);
    if (r.pfc.first_deadlock != kNever) {
      std::printf(", the first at %.1f us", static_cast<double>(r.pfc.first_deadlock) / kMicrosecond);
    }
    std::printf("%s\n", r.pfc.deadlocked ? ": the run stopped there" : "");
  }
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
    std::printf(
        "%s ranks' wall time (the largest over the ranks): set-up %.2f s, events %.2f s, "
        "exchanges %.2f s, deliveries %.2f s\n",
        to_string(r.transport), r.split.most_s[0], r.split.most_s[1], r.split.most_s[2],
        r.split.most_s[3]);
  }
}

namespace {

// ----- experiment files: every uet-ab parameter as "--name=value", in name order. Output
// locations and the progress line are left out: they say where results go, not what was run.
std::string experiment_file() {
  static constexpr const char* kNotParameters[] = {"json", "csv",    "plot",    "pcap",
                                                   "save_config", "config", "progress"};
  std::vector<std::pair<std::string, std::string>> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::string_view(flag->Filename()).find("uet_ab/flags.cc") == absl::string_view::npos) continue;
    const std::string n(name);
    if (std::find(std::begin(kNotParameters), std::end(kNotParameters), n) != std::end(kNotParameters)) continue;
    flags.emplace_back(n, flag->CurrentValue());
  }
  std::sort(flags.begin(), flags.end());
  std::string out = "# uet-ab experiment file: rerun with uet-ab --config=THIS_FILE\n";
  for (const auto& [n, v] : flags) absl::StrAppend(&out, "--", n, "=", v, "\n");
  return out;
}


}  // namespace

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

}  // namespace uet::ab
