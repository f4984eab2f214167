#include "sim/workload.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#ifndef UET_SIM_DATA_DIR
#error "UET_SIM_DATA_DIR must name the sim/data directory (set in sim/CMakeLists.txt)"
#endif

namespace uet::sim {
namespace {

absl::Status bad(std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(where), ": ", std::string(what)));
}

absl::Status check_hosts(std::string_view generator, uint32_t hosts) {
  if (hosts < 2 || hosts > kMaxWorkloadHosts) {
    return bad(generator,
               absl::StrCat("hosts ", hosts, " out of range [2, ", kMaxWorkloadHosts, "]"));
  }
  return absl::OkStatus();
}

absl::Status check_bytes(std::string_view generator, std::string_view name, uint64_t bytes,
                         uint64_t min = 1) {
  if (bytes < min) {
    return bad(generator,
               absl::StrCat(std::string(name), " ", bytes, " out of range [", min, ", 2^64)"));
  }
  return absl::OkStatus();
}

// The rule between two consecutive CDF points (or the first one, prev == nullptr); empty when
// the point is acceptable.
std::string check_point(const FlowSizeCdf::Point* prev, const FlowSizeCdf::Point& cur) {
  if (!(cur.p >= 0 && cur.p <= 1)) {
    return absl::StrCat("probability ", cur.p, " out of range [0, 1]");
  }
  if (prev != nullptr && cur.bytes <= prev->bytes) {
    return absl::StrCat("sizes must increase: ", cur.bytes, " after ", prev->bytes);
  }
  if (prev != nullptr && cur.p < prev->p) {
    return absl::StrCat("probabilities must not decrease: ", cur.p, " after ", prev->p);
  }
  return {};
}

constexpr double kLastPTolerance = 1e-9;

}  // namespace

// ------------------------------------------------------------------ flow-size CDF

absl::StatusOr<FlowSizeCdf> FlowSizeCdf::create(std::vector<Point> points, std::string_view where) {
  if (points.empty()) return bad(where, "no points");
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string err = check_point(i == 0 ? nullptr : &points[i - 1], points[i]);
    if (!err.empty()) return bad(where, absl::StrCat("point ", i, ": ", err));
  }
  if (std::abs(points.back().p - 1) > kLastPTolerance) {
    return bad(where, absl::StrCat("the last probability is ", points.back().p, ", must be 1"));
  }
  if (points.back().bytes == 0) return bad(where, "the largest size must be at least 1 byte");
  if (points[0].bytes == 0 && points[0].p > 0) {  // a flow carries at least one byte
    return bad(where, absl::StrCat("P[size <= 0] is ", points[0].p, ", must be 0"));
  }
  // Sizes are interpolated in doubles: above 2^53 bytes they would no longer be exact.
  if (points.back().bytes > kMaxCdfBytes) {
    return bad(where, absl::StrCat("the largest size is ", points.back().bytes, " bytes, at most ",
                                   kMaxCdfBytes));
  }
  points.back().p = 1;
  FlowSizeCdf cdf;
  cdf.points = std::move(points);
  return cdf;
}

uint64_t FlowSizeCdf::sample(Rng& rng) const {
  const double u = rng.uniform();  // [0, 1)
  // The first point with p >= u; it exists because the last p is 1.
  const auto it = std::lower_bound(points.begin(), points.end(), u,
                                   [](const Point& pt, double v) { return pt.p < v; });
  double x;
  if (it == points.begin()) {
    x = static_cast<double>(it->bytes);
  } else {
    const Point& a = *(it - 1);
    const Point& b = *it;
    const double frac = (u - a.p) / (b.p - a.p);  // b.p > a.p since a.p < u <= b.p
    x = static_cast<double>(a.bytes) + frac * static_cast<double>(b.bytes - a.bytes);
  }
  // Never past the last point, whatever the rounding.
  const auto bytes =
      std::min<uint64_t>(static_cast<uint64_t>(std::llround(x)), points.back().bytes);
  return std::max<uint64_t>(1, bytes);
}

double FlowSizeCdf::mean() const {
  if (points.empty()) return 0;
  double m = points[0].p * static_cast<double>(points[0].bytes);
  for (size_t i = 1; i < points.size(); ++i) {
    m += (points[i].p - points[i - 1].p) *
         (static_cast<double>(points[i - 1].bytes) + static_cast<double>(points[i].bytes)) / 2;
  }
  return m;
}

absl::StatusOr<FlowSizeCdf> parse_cdf(std::string_view text, std::string_view where) {
  std::vector<FlowSizeCdf::Point> points;
  size_t line_no = 0;
  size_t last_line = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    // Split into whitespace-separated fields.
    std::vector<std::string_view> fields;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
      if (j > i) fields.push_back(line.substr(i, j - i));
      i = j;
    }
    if (fields.empty()) continue;
    const std::string at = absl::StrCat(std::string(where), ":", line_no);
    if (fields.size() != 2) {
      return bad(at, absl::StrCat("expected \"bytes cumulative_probability\", got ", fields.size(),
                                  " fields"));
    }
    FlowSizeCdf::Point pt{};
    const auto [bend, berr] =
        std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), pt.bytes);
    if (berr != std::errc() || bend != fields[0].data() + fields[0].size()) {
      return bad(
          at, absl::StrCat("size \"", std::string(fields[0]), "\" is not a whole number of bytes"));
    }
    const auto [pend, perr] =
        std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), pt.p);
    if (perr != std::errc() || pend != fields[1].data() + fields[1].size()) {
      return bad(at, absl::StrCat("probability \"", std::string(fields[1]), "\" is not a number"));
    }
    const std::string err = check_point(points.empty() ? nullptr : &points.back(), pt);
    if (!err.empty()) return bad(at, err);
    points.push_back(pt);
    last_line = line_no;
  }
  if (points.empty()) return bad(where, "no points");
  if (std::abs(points.back().p - 1) > kLastPTolerance) {
    return bad(absl::StrCat(std::string(where), ":", last_line),
               absl::StrCat("the last probability is ", points.back().p, ", must be 1"));
  }
  return FlowSizeCdf::create(std::move(points), where);
}

absl::StatusOr<FlowSizeCdf> load_cdf(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open flow-size CDF ", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_cdf(ss.str(), path);
}

std::string sim_data_path(std::string_view file) {
  return absl::StrCat(UET_SIM_DATA_DIR, "/", std::string(file));
}

// ------------------------------------------------------------------ generators

absl::StatusOr<std::vector<FlowSpec>> permutation(uint32_t hosts, uint64_t bytes, Rng& rng) {
  if (auto s = check_hosts("permutation", hosts); !s.ok()) return s;
  if (auto s = check_bytes("permutation", "bytes", bytes); !s.ok()) return s;
  // Rejection sampling: shuffle until no host maps to itself. Uniform over derangements; a
  // random permutation is a derangement with probability ~1/e, so ~2.7 shuffles on average.
  std::vector<uint32_t> dst(hosts);
  for (;;) {
    std::iota(dst.begin(), dst.end(), 0u);
    for (uint32_t i = hosts - 1; i > 0; --i) {
      const auto j = static_cast<uint32_t>(rng.below(uint64_t{i} + 1));
      std::swap(dst[i], dst[j]);
    }
    bool fixed_point = false;
    for (uint32_t i = 0; i < hosts && !fixed_point; ++i) fixed_point = dst[i] == i;
    if (!fixed_point) break;
  }
  std::vector<FlowSpec> flows(hosts);
  for (uint32_t i = 0; i < hosts; ++i) flows[i] = FlowSpec{i, i, dst[i], bytes, 0, {}};
  return flows;
}

absl::StatusOr<std::vector<FlowSpec>> incast(uint32_t hosts, uint32_t fan_in, uint32_t dst,
                                             uint64_t bytes) {
  if (auto s = check_hosts("incast", hosts); !s.ok()) return s;
  if (fan_in < 1 || fan_in > hosts - 1) {
    return bad("incast", absl::StrCat("fan_in ", fan_in, " out of range [1, ", hosts - 1, "]"));
  }
  if (dst >= hosts)
    return bad("incast", absl::StrCat("dst ", dst, " out of range [0, ", hosts - 1, "]"));
  if (auto s = check_bytes("incast", "bytes", bytes); !s.ok()) return s;
  std::vector<FlowSpec> flows(fan_in);
  for (uint32_t i = 0; i < fan_in; ++i) {
    const auto src = static_cast<uint32_t>((uint64_t{dst} + 1 + i) % hosts);
    flows[i] = FlowSpec{i, src, dst, bytes, 0, {}};
  }
  return flows;
}

absl::StatusOr<std::vector<FlowSpec>> permutation_incasts(uint32_t hosts, uint32_t incasts,
                                                          uint32_t fan_in, uint64_t bytes,
                                                          Rng& rng) {
  constexpr std::string_view kWhere = "permutation_incasts";
  if (auto s = check_hosts(kWhere, hosts); !s.ok()) return s;
  if (incasts < 1 || incasts > hosts) {
    return bad(kWhere, absl::StrCat("incasts ", incasts, " out of range [1, ", hosts, "]"));
  }
  if (fan_in < 1 || fan_in > hosts - 1) {
    return bad(kWhere, absl::StrCat("fan_in ", fan_in, " out of range [1, ", hosts - 1, "]"));
  }
  if (const uint64_t n = hosts + uint64_t{incasts} * fan_in; n > kMaxWorkloadFlows) {
    return bad(kWhere, absl::StrCat("hosts ", hosts, " + incasts ", incasts, " x fan_in ", fan_in,
                                    " gives ", n, " flows, more than ", kMaxWorkloadFlows));
  }
  auto flows = permutation(hosts, bytes, rng);
  if (!flows.ok()) return flows.status();
  flows->reserve(hosts + size_t{incasts} * fan_in);
  // Receivers: the first `incasts` places of a partial Fisher-Yates shuffle. Senders: drawn
  // uniformly and redrawn when they are the receiver or already send to it (marked with the
  // incast's number), expected O(fan_in) draws while fan_in is well below hosts.
  std::vector<uint32_t> order(hosts);
  std::iota(order.begin(), order.end(), 0u);
  std::vector<uint32_t> mark(hosts, 0);
  for (uint32_t j = 0; j < incasts; ++j) {
    const auto pick = j + static_cast<uint32_t>(rng.below(uint64_t{hosts} - j));
    std::swap(order[j], order[pick]);
    const uint32_t dst = order[j];
    mark[dst] = j + 1;
    for (uint32_t i = 0; i < fan_in; ++i) {
      uint32_t src;
      do {
        src = static_cast<uint32_t>(rng.below(hosts));
      } while (mark[src] == j + 1);
      mark[src] = j + 1;
      const auto id = static_cast<uint32_t>(flows->size());
      flows->push_back(FlowSpec{id, src, dst, bytes, 0, {}});
    }
  }
  return flows;
}

absl::StatusOr<std::vector<FlowSpec>> all_to_all(uint32_t hosts, uint64_t bytes) {
  if (auto s = check_hosts("all_to_all", hosts); !s.ok()) return s;
  if (auto s = check_bytes("all_to_all", "bytes", bytes); !s.ok()) return s;
  const uint64_t n = uint64_t{hosts} * (hosts - 1);
  if (n > kMaxWorkloadFlows) {
    return bad("all_to_all", absl::StrCat("hosts ", hosts, " gives ", n, " flows, more than ",
                                          kMaxWorkloadFlows, "; at most 4096 hosts"));
  }
  std::vector<FlowSpec> flows;
  flows.reserve(n);
  for (uint32_t src = 0; src < hosts; ++src) {
    for (uint32_t k = 1; k < hosts; ++k) {
      const auto id = static_cast<uint32_t>(flows.size());
      flows.push_back(FlowSpec{id, src, (src + k) % hosts, bytes, 0, {}});
    }
  }
  return flows;
}

absl::StatusOr<std::vector<FlowSpec>> ring_allreduce(uint32_t hosts, uint64_t total_bytes) {
  if (auto s = check_hosts("ring_allreduce", hosts); !s.ok()) return s;
  if (auto s = check_bytes("ring_allreduce", "total_bytes", total_bytes, hosts); !s.ok()) return s;
  const uint32_t steps = ring_allreduce_steps(hosts);
  const uint64_t n = uint64_t{steps} * hosts;
  if (n > kMaxWorkloadFlows) {
    return bad("ring_allreduce", absl::StrCat("hosts ", hosts, " gives ", n, " flows, more than ",
                                              kMaxWorkloadFlows));
  }
  // The buffer is cut into N chunks; all chunks are modelled with the larger size.
  const uint64_t chunk = total_bytes / hosts + (total_bytes % hosts != 0 ? 1 : 0);
  std::vector<FlowSpec> flows;
  flows.reserve(n);
  for (uint32_t k = 0; k < steps; ++k) {
    for (uint32_t i = 0; i < hosts; ++i) {
      FlowSpec f{k * hosts + i, i, (i + 1) % hosts, chunk, 0, {}};
      if (k > 0) {
        const uint32_t pred = (i + hosts - 1) % hosts;
        // Host i's own previous chunk has arrived at its successor, and the chunk host i
        // combines into this step (its predecessor's previous send) has arrived at i.
        f.after = {(k - 1) * hosts + i, (k - 1) * hosts + pred};
      }
      flows.push_back(std::move(f));
    }
  }
  return flows;
}

absl::StatusOr<std::vector<FlowSpec>> poisson(uint32_t hosts, double load, double host_gbps,
                                              const FlowSizeCdf& cdf, Time duration, Rng& rng) {
  if (auto s = check_hosts("poisson", hosts); !s.ok()) return s;
  if (!(load > 0 && load <= 1)) {
    return bad("poisson", absl::StrCat("load ", load, " out of range (0, 1]"));
  }
  if (!(host_gbps > 0 && host_gbps <= 10000)) {
    return bad("poisson", absl::StrCat("host_gbps ", host_gbps, " out of range (0, 10000]"));
  }
  if (duration <= 0) {
    return bad("poisson", absl::StrCat("duration ", duration, " ps out of range (0, 2^63)"));
  }
  const double mean = cdf.mean();
  if (cdf.points.empty() || !(mean > 0)) return bad("poisson", "cdf is empty or has mean 0");
  // Flows per picosecond at one host.
  const double rate = load * host_gbps * 1e9 / 8 / mean / static_cast<double>(kSecond);
  const double expected = rate * static_cast<double>(duration) * hosts;
  if (expected > static_cast<double>(kMaxWorkloadFlows)) {
    return bad("poisson", absl::StrCat("about ", static_cast<uint64_t>(expected),
                                       " flows expected, more than ", kMaxWorkloadFlows,
                                       "; shorten duration or lower load"));
  }
  std::vector<FlowSpec> flows;
  flows.reserve(static_cast<size_t>(expected * 1.1) + 16);
  for (uint32_t h = 0; h < hosts; ++h) {
    double t = 0;
    for (;;) {
      t += -std::log1p(-rng.uniform()) / rate;  // exponential inter-arrival gap
      if (t >= static_cast<double>(duration)) break;
      if (flows.size() >= kMaxWorkloadFlows) {
        return bad("poisson", absl::StrCat("more than ", kMaxWorkloadFlows, " flows"));
      }
      auto dst = static_cast<uint32_t>(rng.below(hosts - 1));
      if (dst >= h) ++dst;  // uniform over the other hosts
      flows.push_back(FlowSpec{0, h, dst, cdf.sample(rng), static_cast<Time>(t), {}});
    }
  }
  std::stable_sort(flows.begin(), flows.end(),
                   [](const FlowSpec& a, const FlowSpec& b) { return a.start < b.start; });
  for (size_t i = 0; i < flows.size(); ++i) flows[i].id = static_cast<uint32_t>(i);
  return flows;
}

void append_flows(std::vector<FlowSpec>& flows, std::vector<FlowSpec> more) {
  const auto base = static_cast<uint32_t>(flows.size());
  flows.reserve(flows.size() + more.size());
  for (FlowSpec& f : more) {
    f.id += base;
    for (uint32_t& a : f.after) a += base;
    flows.push_back(std::move(f));
  }
}

FlowDependents flow_dependents(const std::vector<FlowSpec>& flows) {
  const size_t n = flows.size();
  FlowDependents out;
  out.begin.assign(n + 1, 0);
  for (const FlowSpec& f : flows)
    for (uint32_t a : f.after) ++out.begin[a + 1];
  for (size_t i = 0; i < n; ++i) out.begin[i + 1] += out.begin[i];
  out.ids.resize(out.begin[n]);
  std::vector<uint32_t> fill(out.begin.begin(), out.begin.end() - 1);
  for (const FlowSpec& f : flows)
    for (uint32_t a : f.after) out.ids[fill[a]++] = f.id;
  return out;
}

}  // namespace uet::sim
