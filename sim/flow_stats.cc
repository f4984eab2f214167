#include "sim/flow_stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace uet::sim {
namespace {

// Serialisation of `bytes` at `gbps`, rounded up to the picosecond as the Network does.
Time serialization(uint64_t bytes, double gbps) {
  __extension__ using U128 = unsigned __int128;
  const auto rate = static_cast<uint64_t>(static_cast<int64_t>(gbps * 1e9));
  const U128 num = static_cast<U128>(bytes) * 8 * 1'000'000'000'000ULL;
  return static_cast<Time>((num + rate - 1) / rate);
}

// Nearest rank: the smallest value with at least q of the values at or below it.
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

double to_us(Time t) { return static_cast<double>(t) / static_cast<double>(kMicrosecond); }

}  // namespace

Time ideal_fct(uint64_t bytes, const PathModel& path) {
  if (bytes == 0 || path.payload_per_packet == 0 || !(path.gbps > 0)) return path.propagation;
  const uint64_t mss = path.payload_per_packet;
  const uint64_t full = bytes / mss;
  const uint64_t rest = bytes % mss;
  const Time full_ser = serialization(mss + path.frame_overhead, path.gbps);
  const Time last_ser = rest != 0 ? serialization(rest + path.frame_overhead, path.gbps) : full_ser;
  const uint64_t frames = full + (rest != 0 ? 1 : 0);
  const Time at_source = static_cast<Time>(frames - 1) * full_ser + last_ser;
  // Store and forward: each further hop adds one frame time of the pipeline's largest frame
  // (a short last frame catches up with the full frame ahead of it).
  const Time largest = frames >= 2 ? full_ser : last_ser;
  const Time hops_after = path.hops > 0 ? static_cast<Time>(path.hops - 1) * largest : 0;
  return at_source + hops_after + path.propagation;
}

// One flat array of doubles, sized once: the FCTs sorted, then reused for the slowdowns. Both
// are sorted, so percentiles are exact and the mean sums in the same order on every run.
absl::StatusOr<FlowStats> flow_stats(std::span<const FlowRecord> records,
                                     std::span<const FlowSpec> flows, const IdealFct& ideal) {
  if (records.size() != flows.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("flow_stats: ", records.size(), " records for ", flows.size(), " flows"));
  }
  if (!ideal) return absl::InvalidArgumentError("flow_stats: no ideal FCT function");
  FlowStats s;
  s.first_start = kNever;
  const auto done = [&](size_t i) {
    return !flows[i].compute && records[i].finish != kNever && records[i].start != kNever;
  };
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowRecord& r = records[i];
    if (flows[i].compute) continue;  // compute tasks are not flows
    ++s.total;
    if (r.start != kNever) s.first_start = std::min(s.first_start, r.start);
    if (!done(i)) continue;
    ++s.completed;
    s.last_finish = std::max(s.last_finish, r.finish);
    s.completed_bytes += r.bytes;
  }
  if (s.first_start == kNever) s.first_start = 0;
  std::vector<double> v;
  v.reserve(s.completed);
  for (size_t i = 0; i < flows.size(); ++i) {
    if (!done(i)) continue;
    const Time best = ideal(flows[i]);
    if (best <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("flow_stats: ideal FCT of flow ", i, " is ", best, " ps, must be > 0"));
    }
    v.push_back(static_cast<double>(records[i].finish - records[i].start) /
                static_cast<double>(best));
  }
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.slowdown_mean = sum / static_cast<double>(v.size());
  s.slowdown_p50 = percentile(v, 0.5);
  s.slowdown_p99 = percentile(v, 0.99);
  s.slowdown_max = v.back();
  v.clear();
  for (size_t i = 0; i < flows.size(); ++i) {
    if (done(i)) v.push_back(to_us(records[i].finish - records[i].start));
  }
  std::sort(v.begin(), v.end());
  s.fct_min_us = v.front();
  s.fct_p50_us = percentile(v, 0.5);
  s.fct_p99_us = percentile(v, 0.99);
  s.fct_max_us = v.back();
  const Time makespan = s.last_finish - s.first_start;
  if (makespan > 0) {
    s.goodput_gbps = static_cast<double>(s.completed_bytes) * 8 /
                     (static_cast<double>(makespan) / static_cast<double>(kSecond)) / 1e9;
  }
  return s;
}

std::string format_flow_stats(const FlowStats& s) {
  return absl::StrCat("flows ", s.completed, "/", s.total, " fct_us min ", s.fct_min_us, " p50 ",
                      s.fct_p50_us, " p99 ", s.fct_p99_us, " max ", s.fct_max_us, " slowdown mean ",
                      s.slowdown_mean, " p50 ", s.slowdown_p50, " p99 ", s.slowdown_p99, " max ",
                      s.slowdown_max, " goodput_gbps ", s.goodput_gbps, " makespan_us ",
                      to_us(s.last_finish - s.first_start));
}

PortSummary port_summary(Network& net, Time window) {
  net.flush_stats();
  PortSummary s;
  double busiest = -1;
  for (size_t i = 0; i < net.num_ports(); ++i) {
    const PortStats& p = net.port_stats(static_cast<uint32_t>(i));
    s.drops += p.drops;
    s.lossless_drops += p.lossless_drops;
    s.wire_losses += p.wire_losses;
    s.corruptions += p.corruptions;
    s.trims += p.trims;
    s.ecn_marks += p.ecn_marks;
    s.pauses += p.pauses_sent;
    s.paused_time += p.paused_time;
    s.max_queue_bytes = std::max(s.max_queue_bytes, p.max_queue_bytes);
    if (p.queue_byte_ps > busiest) {
      busiest = p.queue_byte_ps;
      s.busiest_port = static_cast<uint32_t>(i);
    }
  }
  const Time over = window > 0 ? window : net.now();
  if (s.busiest_port != kNone && over > 0) {
    s.busiest_avg_queue_bytes = busiest / static_cast<double>(over);
  }
  return s;
}

std::string format_port_summary(const PortSummary& s) {
  return absl::StrCat(
      "drops ", s.drops, " lossless_drops ", s.lossless_drops, " wire_losses ", s.wire_losses,
      " corruptions ", s.corruptions, " trims ", s.trims, " ecn_marks ", s.ecn_marks, " pauses ",
      s.pauses, " paused_us ", to_us(s.paused_time), " max_queue_bytes ", s.max_queue_bytes,
      " busiest_port ", s.busiest_port, " busiest_avg_queue_bytes ", s.busiest_avg_queue_bytes);
}

}  // namespace uet::sim
