#include "bench/ab_memory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace uet::ab {
namespace {

std::string human(double bytes) {
  if (bytes >= double(1 << 30)) return absl::StrFormat("%.1f GiB", bytes / double(1 << 30));
  if (bytes < 1024) return absl::StrFormat("%.0f B", bytes);
  if (bytes >= double(1 << 20)) return absl::StrFormat("%.2f MiB", bytes / double(1 << 20));
  return absl::StrFormat("%.1f KiB", bytes / 1024);
}

// Distinct communicating pairs of the flows: ordered (UET: a PDC per direction, whatever the
// channel) or not (RoCEv2: one QP pair per pair of hosts and channel).
uint64_t pairs(const std::vector<sim::FlowSpec>& flows, bool ordered) {
  std::vector<std::pair<uint64_t, uint16_t>> keys;
  keys.reserve(flows.size());
  for (const sim::FlowSpec& f : flows) {
    const uint32_t a = ordered ? f.src : std::min(f.src, f.dst);
    const uint32_t b = ordered ? f.dst : std::max(f.src, f.dst);
    keys.emplace_back(uint64_t{a} << 32 | b, ordered ? 0 : f.channel);
  }
  std::sort(keys.begin(), keys.end());
  return static_cast<uint64_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
}

}  // namespace

uint64_t route_entries(const Fabric& f) noexcept {
  // Minimal routes on a fat-tree or leaf-spine come from address arithmetic (sim/routing/
  // clos.h): a failed link adds a column, nothing a run's size depends on.
  const bool clos = f.kind == Fabric::Kind::kFatTree || f.kind == Fabric::Kind::kLeafSpine;
  if (clos && f.routing.computes_clos(/*has_switch_groups=*/false)) return 0;
  return (uint64_t{tor_count(f)} + 1) * switch_count(f);
}

MemoryEstimate estimate_memory(const RunConfig& c) {
  using M = MeasuredMemory;
  const bool uet = c.transport == TransportKind::kUet;
  const auto hosts = static_cast<double>(host_count(c.fabric));
  const auto n_pairs = static_cast<double>(pairs(c.flows, uet));
  const auto flows = static_cast<double>(c.flows.size());
  const auto ports = static_cast<double>(port_count(c.fabric));
  const auto routes = static_cast<double>(route_entries(c.fabric));
  uint64_t max_bytes = 0;
  for (const sim::FlowSpec& f : c.flows) max_bytes = std::max(max_bytes, f.bytes);
  const double flight = std::min(static_cast<double>(max_bytes), M::kFlightCap);
  const double per_host = uet ? M::kUetPerHost + M::kUetPerFlightByte * flight
                              : M::kRocePerHost + M::kRocePerFlightByte * flight;
  const double per_pair = uet ? M::kUetPerPair : M::kRocePerPair;
  // Each host's first pair is in its per-host cost (the permutation it was measured with).
  const double extra_pairs = std::max(0.0, n_pairs - hosts);
  MemoryEstimate e;
  e.hosts = hosts * per_host;
  e.pairs = extra_pairs * per_pair;
  e.flows = flows * M::kPerFlow;
  e.ports = ports * M::kPerPort;
  // Lossless classes beyond the first (PFC with deadlock_free: sim::Network's PortClasses by
  // port, zero pages until used; counted whole, as a run whose every port carries them).
  const bool classes = c.fabric.pfc && routing_of(c.fabric).deadlock_free != sim::DeadlockFree::kOff &&
                       c.fabric.kind != Fabric::Kind::kFatTree &&
                       c.fabric.kind != Fabric::Kind::kLeafSpine;
  if (classes) e.ports += ports * static_cast<double>(sizeof(sim::PortClasses));
  e.routes = routes * M::kPerRoute;
  e.buffer = static_cast<double>(max_bytes);
  e.bytes = M::kBase + e.hosts + e.pairs + e.flows + e.ports + e.routes + e.buffer;
  e.why = absl::StrFormat("%.0f hosts x %s %s (%s)", hosts, human(per_host),
                          to_string(c.transport), human(e.hosts));
  if (extra_pairs > 0) {
    absl::StrAppend(&e.why, absl::StrFormat(" + %.0f more host pairs x %s (%s)", extra_pairs,
                                            human(per_pair), human(e.pairs)));
  }
  absl::StrAppend(&e.why, absl::StrFormat(" + %.0f flows (%s) + %.0f ports (%s)", flows,
                                          human(e.flows), ports, human(e.ports)));
  if (routes > 0) {
    absl::StrAppend(&e.why, absl::StrFormat(" + %.0f route entries (%s)", routes, human(e.routes)));
  }
  if (max_bytes > 0) {
    absl::StrAppend(&e.why, absl::StrFormat(" + the %s target buffer", human(e.buffer)));
  }
  return e;
}

uint64_t memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kb) == 1) return kb * 1024;
  }
  return 0;
}

}  // namespace uet::ab
