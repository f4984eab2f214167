// uet-ab (bench/uet_ab/main.cc): what its files share. flags.cc defines every flag; process.cc
// the process's plumbing (Ctrl-C, output files under MPI, memory, the progress line);
// scenarios.cc the fabric and flows the flags ask for; report.cc the text, JSON and experiment
// files; plots.cc --plot; collective.cc and trace.cc their scenarios; main.cc the rest.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
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
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/ab_collective.h"
#include "bench/ab_eta.h"
#include "bench/ab_memory.h"
#include "bench/ab_runner.h"
#include "bench/flag_check.h"
#include "bench/tool_main.h"
#include "cc/dcqcn.h"
#include "sim/collective.h"
#include "sim/htsim_cm.h"
#include "sim/htsim_topo.h"
#include "sim/rng.h"
#include "sim/trace/chakra_module.h"
#include "sim/trace/trace.h"
#include "transport/tss/key_file.h"

ABSL_DECLARE_FLAG(std::string, scenario);
ABSL_DECLARE_FLAG(std::string, cm);
ABSL_DECLARE_FLAG(std::string, topo);
ABSL_DECLARE_FLAG(std::string, transport);
ABSL_DECLARE_FLAG(std::string, topology);
ABSL_DECLARE_FLAG(uint32_t, df_p);
ABSL_DECLARE_FLAG(uint32_t, df_a);
ABSL_DECLARE_FLAG(uint32_t, df_h);
ABSL_DECLARE_FLAG(uint32_t, df_g);
ABSL_DECLARE_FLAG(uint32_t, dfp_leaves);
ABSL_DECLARE_FLAG(uint32_t, dfp_spines);
ABSL_DECLARE_FLAG(uint32_t, dfp_hosts_per_leaf);
ABSL_DECLARE_FLAG(std::string, torus);
ABSL_DECLARE_FLAG(bool, torus_wrap);
ABSL_DECLARE_FLAG(uint32_t, hosts_per_switch);
ABSL_DECLARE_FLAG(uint32_t, hypercube_dim);
ABSL_DECLARE_FLAG(uint32_t, rail_servers);
ABSL_DECLARE_FLAG(uint32_t, rail_servers_per_leaf);
ABSL_DECLARE_FLAG(uint32_t, rail_spines);
ABSL_DECLARE_FLAG(std::string, rail_planes);
ABSL_DECLARE_FLAG(std::string, graph);
ABSL_DECLARE_FLAG(std::string, routing);
ABSL_DECLARE_FLAG(bool, dimension_order);
ABSL_DECLARE_FLAG(std::string, deadlock_free);
ABSL_DECLARE_FLAG(bool, group_minimal);
ABSL_DECLARE_FLAG(uint64_t, ugal_bias_bytes);
ABSL_DECLARE_FLAG(double, global_gbps);
ABSL_DECLARE_FLAG(int32_t, global_latency_ns);
ABSL_DECLARE_FLAG(uint32_t, leaves);
ABSL_DECLARE_FLAG(uint32_t, spines);
ABSL_DECLARE_FLAG(uint32_t, hosts_per_leaf);
ABSL_DECLARE_FLAG(uint32_t, k);
ABSL_DECLARE_FLAG(double, gbps);
ABSL_DECLARE_FLAG(uint64_t, bytes);
ABSL_DECLARE_FLAG(uint32_t, fan_in);
ABSL_DECLARE_FLAG(uint32_t, incasts);
ABSL_DECLARE_FLAG(double, loss);
ABSL_DECLARE_FLAG(uint32_t, failed_links);
ABSL_DECLARE_FLAG(double, degrade);
ABSL_DECLARE_FLAG(std::string, degrade_queues);
ABSL_DECLARE_FLAG(uint32_t, fail_at_us);
ABSL_DECLARE_FLAG(std::string, loss_rates);
ABSL_DECLARE_FLAG(std::string, loss_per);
ABSL_DECLARE_FLAG(uint64_t, sweep_bytes);
ABSL_DECLARE_FLAG(double, load);
ABSL_DECLARE_FLAG(uint32_t, websearch_us);
ABSL_DECLARE_FLAG(std::string, coll);
ABSL_DECLARE_FLAG(std::string, algo);
ABSL_DECLARE_FLAG(uint32_t, ranks);
ABSL_DECLARE_FLAG(std::string, placement);
ABSL_DECLARE_FLAG(std::string, sizes);
ABSL_DECLARE_FLAG(uint32_t, channels);
ABSL_DECLARE_FLAG(uint32_t, chunk_kb);
ABSL_DECLARE_FLAG(uint32_t, slots);
ABSL_DECLARE_FLAG(uint32_t, iters);
ABSL_DECLARE_FLAG(uint32_t, root);
ABSL_DECLARE_FLAG(uint32_t, dp);
ABSL_DECLARE_FLAG(uint32_t, tp);
ABSL_DECLARE_FLAG(std::string, coll_group);
ABSL_DECLARE_FLAG(uint32_t, gpus_per_server);
ABSL_DECLARE_FLAG(double, intra_gbps);
ABSL_DECLARE_FLAG(double, intra_us);
ABSL_DECLARE_FLAG(std::string, trace);
ABSL_DECLARE_FLAG(std::string, comm_groups);
ABSL_DECLARE_FLAG(double, coll_loss);
ABSL_DECLARE_FLAG(uint32_t, coll_failed_links);
ABSL_DECLARE_FLAG(uint32_t, mtu);
ABSL_DECLARE_FLAG(uint32_t, evs);
ABSL_DECLARE_FLAG(std::string, lb);
ABSL_DECLARE_FLAG(std::string, cc);
ABSL_DECLARE_FLAG(std::string, uet_mode);
ABSL_DECLARE_FLAG(std::string, verb);
ABSL_DECLARE_FLAG(uint64_t, rendezvous_bytes);
ABSL_DECLARE_FLAG(bool, deferrable);
ABSL_DECLARE_FLAG(bool, rack);
ABSL_DECLARE_FLAG(bool, ack_ooo);
ABSL_DECLARE_FLAG(double, min_rto_us);
ABSL_DECLARE_FLAG(double, recv_delay_us);
ABSL_DECLARE_FLAG(bool, tss);
ABSL_DECLARE_FLAG(double, tss_ns_per_frame);
ABSL_DECLARE_FLAG(double, tss_ns_per_kib);
ABSL_DECLARE_FLAG(std::string, tss_backend);
ABSL_DECLARE_FLAG(std::string, tss_key_file);
ABSL_DECLARE_FLAG(std::string, dcqcn);
ABSL_DECLARE_FLAG(double, fabric_gbps);
ABSL_DECLARE_FLAG(uint32_t, hosts_per_tor);
ABSL_DECLARE_FLAG(uint32_t, latency_ns);
ABSL_DECLARE_FLAG(bool, ecn);
ABSL_DECLARE_FLAG(uint32_t, ecn_kmin_kb);
ABSL_DECLARE_FLAG(uint32_t, ecn_kmax_kb);
ABSL_DECLARE_FLAG(double, ecn_pmax);
ABSL_DECLARE_FLAG(bool, trimming);
ABSL_DECLARE_FLAG(bool, trim_last_half);
ABSL_DECLARE_FLAG(std::string, pfc);
ABSL_DECLARE_FLAG(uint32_t, pfc_xoff_kb);
ABSL_DECLARE_FLAG(uint32_t, pfc_xon_kb);
ABSL_DECLARE_FLAG(std::string, pfc_watchdog);
ABSL_DECLARE_FLAG(uint32_t, pfc_watchdog_us);
ABSL_DECLARE_FLAG(uint64_t, buffer_kb);
ABSL_DECLARE_FLAG(uint64_t, control_buffer_kb);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(uint32_t, max_ms);
ABSL_DECLARE_FLAG(std::string, json);
ABSL_DECLARE_FLAG(std::string, csv);
ABSL_DECLARE_FLAG(std::string, plot);
ABSL_DECLARE_FLAG(double, plot_sample_us);
ABSL_DECLARE_FLAG(std::string, save_config);
ABSL_DECLARE_FLAG(std::string, config);
ABSL_DECLARE_FLAG(double, max_memory_gb);
ABSL_DECLARE_FLAG(std::string, pcap);
ABSL_DECLARE_FLAG(bool, progress);

namespace uet::ab {

// Ctrl-C: the first stops the current run at its next slice, prints what it has and skips the
// rest; the handler then restores the default, so a second Ctrl-C kills.
extern std::atomic<bool> g_stop;
extern "C" void on_sigint(int);

// Split over MPI ranks, only rank 0 writes results (stdout, --json, --csv, --plot, experiment
// files); the others run the same code on the same flags, their files going to /dev/null, so
// that every rank makes the same collective calls in the same order.
extern bool g_writes;
std::FILE* open_output(const std::string& path);

// The process's resident memory now (/proc/self/statm), in bytes; 0 when unknown.
double resident_bytes();
// Every request is estimated before its first run and refused when it would not fit: "" when
// `need` bytes fit --max_memory_gb (else MemAvailable), otherwise the refusal with the
// estimate, its terms (`why`), the limit and what to lower (`lower`).
std::string memory_refusal(double need, const std::string& why, const std::string& lower);

// A progress line on stderr once a run has taken 2 s of wall time, on a terminal or with
// --progress (never in the results): rewritten in place every 2 s on a terminal, a line every
// 5 s otherwise. Events/s over the last interval, simulated time, RSS (/proc/self/statm), flows
// done, the share of the flows' bytes hosts have received, the set-up's wall time and an ETA
// (work_done(): the bytes the links have carried, against the workload's on its paths; at the
// rate of the recent past, bench/ab_eta.h).
class ProgressLine {
 public:
  explicit ProgressLine(std::string label);
  ~ProgressLine();
  void operator()(const Progress& p);
  // Shown at all (a terminal, or --progress): only then does a run report to it.
  bool on() const noexcept { return on_; }

 private:
  std::string label_;
  bool tty_;
  bool on_;
  bool shown_ = false;
  double last_wall_ = 0;
  uint64_t last_events_ = 0;
  EtaEstimate eta_;
};


// The flags' checks: numbers in refusals as printf's %g.
using Check = bench::FlagCheck;

// What the flags ask for, checked before anything is built (options.cc). The flags that are
// read where they are used stay flags.
struct Options {
  std::vector<TransportKind> transports;
  uint32_t mtu = 4096;
  std::string topology, uet_mode, verb, loss_per, plot_dir;
  pathsel::Algorithm lb = pathsel::Algorithm::kOblivious;
  CcMode cc = CcMode::kNscc;
  std::vector<double> loss_rates;  // --loss_rates, in order
  tss::Backend tss_backend = tss::Backend::kAuto;
  std::vector<tss::DomainConfig> tss_domains;
};
// Every flag's range and spelling; the first refusal, naming its flag, as InvalidArgument.
absl::StatusOr<Options> read_options();
// --tss_backend and --tss_key_file (read after the fabric is known).
absl::Status read_tss_options(Options& o);
// One run's configuration without its flows: the same for the checks before the first run
// and for the run itself.
RunConfig run_config(const Options& o, const Fabric& base, const std::string& scenario,
                     double fabric_loss, TransportKind t);

absl::StatusOr<Fabric> fabric_from_flags();
// --torus's "8x8x8" into sizes; empty when it is not 1 to 3 sizes of 2..256 joined by 'x'.
std::vector<uint32_t> torus_dims(const std::string& text);
// The fabric's name in titles: --topology and its sizes ("dragonfly p=4 a=8 h=4 g=33").
std::string fabric_title(const Fabric& f);
// The flags that size a fabric of this kind, for a refusal to name ("--k / --hosts_per_tor").
const char* size_flags_of(Fabric::Kind k);
// Planes kept apart (--topology=rail --rail_planes=apart): scenarios run on each rail's hosts.
bool rails_apart(const Fabric& f);
// The scenario's flows on `hosts` hosts; refused with the flag to change.
absl::StatusOr<std::vector<sim::FlowSpec>> flows_for(const std::string& scenario, uint32_t hosts,
                                                     uint64_t seed);

// --cc's and --uet_mode's spellings.
const char* cc_flag(CcMode m);
const char* mode_flag(DeliveryMode m);
// One run as a JSON object, its parameters included.
std::string json_of(const RunResult& r, const RunConfig& c);
void print_table(const std::string& title, const std::vector<RunResult>& runs);
// One row of a side-by-side table: the name in `width` columns, each run's value in `fmt`
// and, with two runs, their ratio (uet/rocev2; "-" when the second is 0).
void print_row(int width, const char* name, const std::vector<double>& values, const char* fmt);
// The heading over such rows: `width` blank columns, each run's transport and, with two runs,
// "uet/rocev2".
void print_heading(int width, const std::vector<RunResult>& runs);
// How a run split over ranks went (stdout only: result files must not depend on the split).
void print_split(const std::vector<RunResult>& runs);
// The experiment file wherever the flags ask for one (--save_config, beside --json, in
// --plot); false, with the reason on stderr, when one cannot be written.
bool write_experiment_files();

// One row per loss rate: goodput of each transport and the ratio.
struct SweepRow {
  double loss = 0;       // per fabric link
  double path_loss = 0;  // end to end over the flow's fabric links, each way
  std::vector<RunResult> runs;
};
void print_sweep(const std::string& title, const std::vector<SweepRow>& rows);

// --plot.
// DIR/SCENARIO: the prefix of a scenario's plot files.
std::string plot_base(const std::string& dir, const std::string& scenario);
// Writes `path` or returns why not.
absl::Status write_file(const std::string& path, const std::string& text);
// FCT CDF, throughput and queue over time: one SVG each, every transport of the scenario on it.
absl::Status plot_scenario(const std::string& dir, const std::string& scenario,
                           const std::string& title, const std::vector<RunResult>& runs);
// A clustered bar chart DIR/NAME.svg (and its .dat and .gp): one group per row, one bar per
// column; values[row][column].
absl::Status plot_bars(const std::string& dir, const std::string& name, const std::string& title,
                       const std::string& ylabel, const std::vector<std::string>& rows,
                       const std::vector<std::string>& columns,
                       const std::vector<std::vector<double>>& values);
// Goodput against loss, one line per transport.
absl::Status plot_sweep(const std::string& dir, const std::vector<SweepRow>& rows);
// Goodput of one flow: its bytes over its FCT, or, if it did not finish, what arrived over the
// time it had.
double flow_goodput_gbps(const RunResult& r);
// Fabric (switch-to-switch) links on the loss-sweep flow's path.
uint32_t sweep_path_links(const Fabric& f);

// The scenarios with a flow plan of their own; exit codes as main's.
int run_collective(uint32_t hosts, const std::vector<TransportKind>& transports,
                   const std::string& fabric_name,
                   const std::function<RunConfig(TransportKind)>& config_for);
int run_trace(uint32_t hosts, const std::vector<TransportKind>& transports,
              const std::string& fabric_name,
              const std::function<RunConfig(TransportKind)>& config_for);
int run_main();

}  // namespace uet::ab
