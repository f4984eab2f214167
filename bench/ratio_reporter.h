// Google Benchmark console output plus a closing table of UET / RoCEv2 ratios: every benchmark
// registered as "X/uet..." is paired with "X/rocev2..." and their median real times are
// compared (bench/README.md: speed is reported as ratios side by side in one run).
#pragma once

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uet::bench {

// The console reporter, plus a closing table: for every pair "X/uet..." and "X/rocev2...", the
// median real time of each and their ratio (the single run's time without repetitions).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter(OutputOptions opts, std::string caption)
      : benchmark::ConsoleReporter(opts), caption_(std::move(caption)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    benchmark::ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      // Paired by name without the time type: rows timed manually (BM_Engine) end in
      // "/manual_time", which would keep them out of the table.
      benchmark::BenchmarkName name = run.run_name;
      name.time_type.clear();
      const std::string key = name.str();
      Times& t = times_[key];
      if (t.order < 0) t.order = next_order_++;
      if (run.run_type == Run::RT_Aggregate) {
        if (run.aggregate_name == "median") t.median = run.GetAdjustedRealTime();
      } else {
        t.samples.push_back(run.GetAdjustedRealTime());
      }
    }
  }

  void Finalize() override {
    benchmark::ConsoleReporter::Finalize();
    std::vector<std::pair<int, std::string>> keys;
    for (const auto& [key, t] : times_) keys.emplace_back(t.order, key);
    std::sort(keys.begin(), keys.end());
    std::string out;
    for (const auto& [order, key] : keys) {
      const size_t slash = key.rfind('/');
      if (slash == std::string::npos || key.compare(slash + 1, 3, "uet") != 0) continue;
      const std::string prefix = key.substr(0, slash + 1);
      for (const auto& [other, t] : times_) {
        if (other.compare(0, prefix.size(), prefix) != 0 ||
            other.compare(prefix.size(), 6, "rocev2") != 0 ||
            other.find('/', prefix.size()) != std::string::npos)
          continue;
        const double u = middle(times_.at(key));
        const double r = middle(t);
        if (u <= 0 || r <= 0) continue;
        char line[160];
        std::snprintf(line, sizeof(line), "%-22s %-12s %-12s %10.1f %10.1f %8.3f\n",
                      prefix.substr(0, prefix.size() - 1).c_str(), key.substr(slash + 1).c_str(),
                      other.substr(prefix.size()).c_str(), u, r, u / r);
        out += line;
      }
    }
    if (out.empty()) return;
    std::ostream& os = GetOutputStream();
    os << "\n" << caption_ << "\n";
    char head[160];
    std::snprintf(head, sizeof(head), "%-22s %-12s %-12s %10s %10s %8s\n", "benchmark", "uet",
                  "rocev2", "uet ns", "rocev2 ns", "ratio");
    os << head << std::string(80, '-') << "\n" << out;
  }

 private:
  struct Times {
    int order = -1;
    double median = -1;
    std::vector<double> samples;
  };

  // The median aggregate if there is one, else the median of the runs seen (one without
  // --benchmark_repetitions).
  static double middle(const Times& t) {
    if (t.median >= 0) return t.median;
    if (t.samples.empty()) return -1;
    std::vector<double> s = t.samples;
    std::sort(s.begin(), s.end());
    const size_t n = s.size();
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }

  std::string caption_;
  std::map<std::string, Times> times_;
  int next_order_ = 0;
};

// The value of "--flag=value" in argv, or "" (read before benchmark::Initialize consumes it).
inline std::string flag_value(int argc, char** argv, std::string_view flag) {
  std::string found;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.size() > flag.size() + 1 && a.substr(0, flag.size()) == flag && a[flag.size()] == '=')
      found = std::string(a.substr(flag.size() + 1));
  }
  return found;
}

inline bool truthy(const std::string& v) { return v == "true" || v == "yes" || v == "1"; }

// main() of a ratio benchmark: parses Google Benchmark's flags, registers, runs; console output
// gets the ratio table, JSON/CSV output does not.
inline int ratio_main(int argc, char** argv, void (*register_all)(), const char* caption) {
  const std::string format = flag_value(argc, argv, "--benchmark_format");
  const std::string color = flag_value(argc, argv, "--benchmark_color");
  const bool tabular = truthy(flag_value(argc, argv, "--benchmark_counters_tabular"));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  if (!format.empty() && format != "console") {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    const bool use_color =
        color.empty() || color == "auto" ? isatty(STDOUT_FILENO) != 0 : truthy(color);
    int opts = benchmark::ConsoleReporter::OO_None;
    if (use_color) opts |= benchmark::ConsoleReporter::OO_Color;
    if (tabular) opts |= benchmark::ConsoleReporter::OO_Tabular;
    RatioReporter reporter(static_cast<benchmark::ConsoleReporter::OutputOptions>(opts), caption);
    benchmark::RunSpecifiedBenchmarks(&reporter);
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace uet::bench
