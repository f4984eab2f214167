// uet-ab --plot: data files and a gnuplot script per scenario, rendered to SVG.
#include "bench/uet_ab/uet_ab.h"

namespace uet::ab {

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

namespace {

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

}  // namespace

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

// Fabric (switch-to-switch) links on the loss-sweep flow's path, host 0 to the last host:
// leaf-spine 2 (up, down) when there is more than one leaf; fat-tree 4 (ToR-agg-core-agg-ToR)
// across pods, 2 within one; the other families from a shortest path of the built fabric (to
// the last host of rail 0 when rail planes are kept apart).
uint32_t sweep_path_links(const Fabric& f) {
  if (f.kind == Fabric::Kind::kLeafSpine) return f.leaves > 1 ? 2 : 0;
  if (f.kind == Fabric::Kind::kFatTree) return f.k > 2 ? 4 : 2;
  const uint32_t hosts = host_count(f);
  const uint32_t last = rails_apart(f) ? hosts - f.rail.gpus_per_server : hosts - 1;
  const uint32_t links = host_path_links(f, 0, last);
  return links >= 2 ? links - 2 : 0;
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

absl::Status plot_bars(const std::string& dir, const std::string& name, const std::string& title,
                       const std::string& ylabel, const std::vector<std::string>& rows,
                       const std::vector<std::string>& columns,
                       const std::vector<std::vector<double>>& values) {
  const std::string base = plot_base(dir, name);
  std::string dat = "# row";
  for (const std::string& c : columns) absl::StrAppend(&dat, " ", c);
  dat += "\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    absl::StrAppend(&dat, "\"", rows[r], "\"");
    for (size_t c = 0; c < columns.size(); ++c) absl::StrAppend(&dat, absl::StrFormat(" %.3f", values[r][c]));
    dat += "\n";
  }
  if (absl::Status s = write_file(base + ".dat", dat); !s.ok()) return s;
  std::string gp = absl::StrCat(
      "set terminal svg size 900,500 dynamic background rgb 'white'\nset grid ytics\n",
      "set output '", base, ".svg'\nset title '", title, "'\nset ylabel '", ylabel, "'\n",
      "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8\n",
      "set yrange [0:*]\nset xtics rotate by -20\nset key top right\nplot ");
  for (size_t c = 0; c < columns.size(); ++c) {
    absl::StrAppend(&gp, c == 0 ? "" : ", ", "'", base, ".dat' using ", c + 2,
                    c == 0 ? ":xtic(1)" : "", " title '", columns[c], "'");
  }
  gp += "\n";
  if (absl::Status s = write_file(base + ".gp", gp); !s.ok()) return s;
  return run_gnuplot(base + ".gp");
}

}  // namespace uet::ab
