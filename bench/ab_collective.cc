#include "bench/ab_collective.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace uet::ab {
namespace {

constexpr size_t kMaxSizes = 64;

absl::StatusOr<uint64_t> parse_size(std::string_view text) {
  uint64_t unit = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        unit = uint64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        unit = uint64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        unit = uint64_t{1} << 30;
        break;
      default:
        break;
    }
    if (unit != 1) text.remove_suffix(1);
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &v) || v == 0 ||
      v > (sim::kMaxCollectiveBytes / unit)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", std::string(text), "\""));
  }
  return v * unit;
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> parse_sizes(std::string_view text) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(text.data(), text.size()), ':');
  auto refuse = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sizes=", std::string(text), ": ", std::string(why),
                     " (BEGIN:END:FACTOR, e.g. 8K:1G:2, or one size; 4 B..1T; K, M, G suffixes)"));
  };
  if (parts.size() != 1 && parts.size() != 3) return refuse("expected one or three fields");
  auto begin = parse_size(std::string_view(parts[0].data(), parts[0].size()));
  if (!begin.ok()) return refuse(absl::StrCat("BEGIN ", begin.status().message()));
  if (*begin < 4) return refuse("BEGIN is below 4 bytes (one element)");
  if (parts.size() == 1) return std::vector<uint64_t>{*begin};
  auto end = parse_size(std::string_view(parts[1].data(), parts[1].size()));
  if (!end.ok()) return refuse(absl::StrCat("END ", end.status().message()));
  if (*end < *begin) return refuse("END is below BEGIN");
  uint64_t factor = 0;
  if (!absl::SimpleAtoi(parts[2], &factor) || factor < 2 || factor > 1024) {
    return refuse("FACTOR must be a whole number in 2..1024");
  }
  std::vector<uint64_t> sizes;
  for (uint64_t s = *begin; s <= *end; s *= factor) {
    if (sizes.size() == kMaxSizes) return refuse(absl::StrCat("more than ", kMaxSizes, " sizes"));
    sizes.push_back(s);
    if (s > *end / factor) break;  // the next size would pass END (or overflow)
  }
  return sizes;
}

CollectiveFigures collective_figures(const std::vector<RunResult>& iterations,
                                     sim::Collective collective, uint32_t ranks, uint64_t bytes) {
  CollectiveFigures f;
  if (iterations.empty()) return f;
  f.transport = iterations.front().transport;
  for (const RunResult& r : iterations) {
    Time end = 0;
    for (const sim::FlowRecord& rec : r.records) {
      if (rec.finish == kNever || rec.received != rec.bytes) {
        ++f.failed;
        continue;
      }
      end = std::max(end, rec.finish);
    }
    // An iteration that did not complete has no time: it is counted in `failed` only.
    if (r.flows.completed == r.flows.total) {
      f.iteration_us.push_back(static_cast<double>(end) / kMicrosecond);
    }
    f.flows = r.records.size();
    f.failed += r.failed;
    f.retransmitted += r.endpoints.retransmitted_packets;
    f.timeouts += r.endpoints.timeouts;
    f.drops += r.ports.drops + r.ports.wire_losses;
    f.trims += r.ports.trims;
    f.pfc_pauses += r.ports.pauses;
    f.events += r.events;
    f.wall_s += r.wall_s;
  }
  if (f.iteration_us.empty()) return f;
  std::vector<double> sorted = f.iteration_us;
  std::sort(sorted.begin(), sorted.end());
  f.time_us =
      std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  // Nearest rank: the smallest value with at least 99 % of the iterations at or below it.
  const auto idx = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(sorted.size()))) - 1;
  f.p99_us = sorted[std::min(idx, sorted.size() - 1)];
  f.algbw_gbytes = static_cast<double>(bytes) / (f.time_us * 1e3);  // bytes/us * 1e-3 = GB/s
  f.busbw_gbytes = f.algbw_gbytes * sim::bus_bandwidth_factor(collective, ranks);
  return f;
}

std::string collective_header(const std::vector<TransportKind>& transports) {
  std::string top = absl::StrFormat("#%12s %12s %6s %6s %5s", "", "", "", "", "");
  std::string names =
      absl::StrFormat("#%12s %12s %6s %6s %5s", "size", "count", "type", "redop", "root");
  std::string units = absl::StrFormat("#%12s %12s %6s %6s %5s", "(B)", "(elements)", "", "", "");
  for (TransportKind t : transports) {
    absl::StrAppend(&top, absl::StrFormat(" | %-44s", to_string(t)));
    absl::StrAppend(&names, absl::StrFormat(" | %10s %7s %7s %10s %5s", "time", "algbw", "busbw",
                                            "p99", "#fail"));
    absl::StrAppend(&units, absl::StrFormat(" | %10s %7s %7s %10s %5s", "(us)", "(GB/s)", "(GB/s)",
                                            "(us)", ""));
  }
  if (transports.size() == 2) {
    absl::StrAppend(&top, " |");
    absl::StrAppend(&names, absl::StrFormat(" | %10s", "busbw"));
    absl::StrAppend(&units, absl::StrFormat(" | %10s", "uet/rocev2"));
  }
  return absl::StrCat(top, "\n", names, "\n", units, "\n");
}

std::string collective_row(uint64_t bytes, sim::Collective collective, uint32_t root,
                           const std::vector<CollectiveFigures>& figures) {
  std::string row = absl::StrFormat(
      " %12u %12u %6s %6s %5s", bytes, bytes / sim::kCollectiveElementBytes, "float",
      sim::collective_reduces(collective) ? "sum" : "none",
      sim::collective_has_root(collective) ? absl::StrCat(root) : std::string("-1"));
  for (const CollectiveFigures& f : figures) {
    if (f.iteration_us.empty()) {
      absl::StrAppend(&row,
                      absl::StrFormat(" | %10s %7s %7s %10s %5u", "-", "-", "-", "-", f.failed));
      continue;
    }
    absl::StrAppend(&row, absl::StrFormat(" | %10.1f %7.2f %7.2f %10.1f %5u", f.time_us,
                                          f.algbw_gbytes, f.busbw_gbytes, f.p99_us, f.failed));
  }
  if (figures.size() == 2) {
    const double b = figures[1].busbw_gbytes;
    absl::StrAppend(&row, b > 0 && figures[0].busbw_gbytes > 0
                              ? absl::StrFormat(" | %10.3f", figures[0].busbw_gbytes / b)
                              : absl::StrFormat(" | %10s", "-"));
  }
  return row + "\n";
}

}  // namespace uet::ab
