// sim_bench: how fast the fabric simulator runs. A k-ary fat-tree (k=16: 1024 hosts, 320
// switches) carries a line-rate UDP permutation; the tool reports events per wall second,
// simulated time per wall second, packets delivered and peak RSS.
//
//   build/bin/sim_bench                      # k=16, 100 Gb/s, 200 us simulated, headers only
//   build/bin/sim_bench --k=8 --us=1000 --spray
//   mpirun -np 2 build/bin/sim_bench --k=32   # the fabric split over two ranks (sim/partition.h)
#include <sys/resource.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "bench/tool_main.h"
#include "sim/mpi_ranks.h"
#include "sim/network.h"
#include "sim/partition.h"
#include "sim/rng.h"
#include "sim/topology.h"
#include "sim/udp_app.h"
#include "transport/wire/net_headers.h"

ABSL_FLAG(uint32_t, k, 16, "fat-tree arity (even, 2..256): k^3/4 hosts");
ABSL_FLAG(double, gbps, 100, "every link's rate in Gb/s, 1..1600");
ABSL_FLAG(uint32_t, us, 200, "simulated time in microseconds, 1..100000");
ABSL_FLAG(uint32_t, capacity, 128,
          "bytes stored per frame, 64..9216: below the packet size payloads travel by length");
ABSL_FLAG(bool, spray, false, "vary the UDP source port per packet (oblivious spraying)");
ABSL_FLAG(uint64_t, seed, 1, "simulation seed");

namespace uet::sim {
namespace {

// CPU time of this process: on a shared machine it moves less than wall time.
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

struct Options {
  uint32_t k = 0;
  double gbps = 0;
  uint32_t us = 0;
  uint32_t capacity = 0;
  bool spray = false;
  uint64_t seed = 0;
};

// The flags, in range; false after naming the one that is not.
bool read_options(Options& o) {
  o.k = absl::GetFlag(FLAGS_k);
  o.gbps = absl::GetFlag(FLAGS_gbps);
  o.us = absl::GetFlag(FLAGS_us);
  o.capacity = absl::GetFlag(FLAGS_capacity);
  o.spray = absl::GetFlag(FLAGS_spray);
  o.seed = absl::GetFlag(FLAGS_seed);
  if (o.k < 2 || o.k > 256 || o.k % 2) return std::fprintf(stderr, "--k=%u: even, 2..256\n", o.k), false;
  if (!(o.gbps >= 1 && o.gbps <= 1600)) return std::fprintf(stderr, "--gbps=%g: 1..1600\n", o.gbps), false;
  if (o.us < 1 || o.us > 100000) return std::fprintf(stderr, "--us=%u: 1..100000\n", o.us), false;
  if (o.capacity < 64 || o.capacity > 9216) {
    return std::fprintf(stderr, "--capacity=%u: 64..9216\n", o.capacity), false;
  }
  return true;
}

// The fat-tree. Split over ranks: each runs its part of the fabric and the flows its hosts
// send, `lookahead` ahead of the others.
absl::Status build_fabric(Network& net, const Options& o, Ranks& ranks, Time* lookahead) {
  FatTreeConfig fc;
  fc.k = o.k;
  LinkConfig l;
  l.gbps = o.gbps;
  l.delay = 500 * kNanosecond;
  fc.host_link = fc.tor_agg_link = fc.agg_core_link = l;
  if (absl::Status s = build_fat_tree(net, fc); !s.ok()) return s;
  if (ranks.size() <= 1) return absl::OkStatus();
  auto split = split_fabric(net, ranks.size());
  if (!split.ok()) return split.status();
  *lookahead = split->lookahead;
  return net.set_partition(split->rank_of_node, ranks.rank(), ranks.size());
}

// A random derangement: every host sends to one other host and receives from one.
std::vector<uint32_t> derangement(uint32_t hosts, uint64_t seed) {
  std::vector<uint32_t> dst(hosts);
  for (uint32_t i = 0; i < hosts; ++i) dst[i] = i;
  Rng rng(seed);
  for (;;) {
    for (uint32_t i = hosts - 1; i > 0; --i) std::swap(dst[i], dst[rng.below(i + 1)]);
    bool fixed = false;
    for (uint32_t i = 0; i < hosts; ++i) fixed |= dst[i] == i;
    if (!fixed) break;
  }
  return dst;
}

// A UDP app on every host this rank runs, its one flow to `dst[h]`.
std::vector<std::unique_ptr<UdpApp>> attach_apps(Network& net, const std::vector<uint32_t>& dst,
                                                 uint64_t bytes, bool spray,
                                                 std::vector<FlowRecord>* records) {
  const auto hosts = static_cast<uint32_t>(dst.size());
  std::vector<std::unique_ptr<UdpApp>> apps(hosts);
  for (uint32_t h = 0; h < hosts; ++h) {
    if (!net.owns_host(h)) continue;
    apps[h] = std::make_unique<UdpApp>(h, records);
    apps[h]->add_flow(UdpFlow{h, dst[h], bytes, 0, wire::dynamic_port(h), spray});
    net.attach(h, apps[h].get());
  }
  return apps;
}

// What the run did. Summed over ranks (each counts what it ran: its sinks' bytes, its ports'
// drops); the pool and RSS are the largest rank's.
struct Totals {
  std::array<uint64_t, 7> sum;  // events, frames and bytes received, drops, windows, records, bytes
  std::array<uint64_t, 2> most;  // frame pool peak, peak RSS (KiB)
};

Totals totals(Network& net, Ranks& ranks, const std::vector<std::unique_ptr<UdpApp>>& apps,
              const std::vector<FlowRecord>& records, const WindowStats& windows) {
  uint64_t rx_frames = 0, rx_bytes = 0;
  for (const auto& app : apps) rx_frames += app != nullptr ? app->rx_frames() : 0;
  for (const FlowRecord& r : records) rx_bytes += r.received;
  uint64_t drops = 0;
  for (size_t p = 0; p < net.num_ports(); ++p) drops += net.port(static_cast<uint32_t>(p)).stats.drops;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  Totals t{{net.events_processed(), rx_frames, rx_bytes, drops, windows.windows,
            windows.records_sent, windows.bytes_sent},
           {net.frames().peak(), static_cast<uint64_t>(ru.ru_maxrss)}};
  ranks.sum_all(t.sum);
  ranks.max_all(t.most);
  return t;
}

struct Times {
  double build_s = 0, run_s = 0, run_cpu_s = 0;
};

void print_report(const Options& o, const Network& net, uint16_t ranks, const Times& times,
                  const Totals& t) {
  const auto hosts = static_cast<uint32_t>(net.num_hosts());
  const uint64_t events = t.sum[0], rx_frames = t.sum[1], rx_bytes = t.sum[2], drops = t.sum[3];
  const double sim_s = static_cast<double>(o.us) * 1e-6;
  std::printf("fat-tree k=%u: %u hosts, %zu switches, %zu ports, %.0f Gb/s links, %s\n", o.k, hosts,
              net.num_switches(), net.num_ports(), o.gbps,
              o.spray ? "sprayed" : "one path per flow (ECMP)");
  std::printf("UDP permutation at line rate, %u us simulated, %u bytes stored per frame\n\n", o.us,
              o.capacity);
  std::printf("%-36s %14.3f\n", "build (s)", times.build_s);
  std::printf("%-36s %14.3f\n", "run (s)", times.run_s);
  std::printf("%-36s %14.3f\n", "run CPU (s)", times.run_cpu_s);
  std::printf("%-36s %14lu\n", "events", events);
  std::printf("%-36s %14.2f\n", "events per second (M)", double(events) / times.run_s / 1e6);
  std::printf("%-36s %14.2f\n", "events per CPU second (M)", double(events) / times.run_cpu_s / 1e6);
  std::printf("%-36s %14.5f\n", "simulated s per wall s", sim_s / times.run_s);
  std::printf("%-36s %14lu\n", "packets delivered", rx_frames);
  std::printf("%-36s %14.1f\n", "delivered Gb/s per host (mean)",
              double(rx_bytes) * 8 / sim_s / 1e9 / hosts);
  std::printf("%-36s %14lu\n", "drops", drops);
  std::printf("%-36s %14lu\n", "frame pool peak (frames)", t.most[0]);
  std::printf("%-36s %14.2f\n", "ECMP tables (MiB)", double(net.ecmp_table_bytes()) / (1 << 20));
  std::printf("%-36s %14.1f\n", "peak RSS (MiB)", double(t.most[1]) / 1024);
  if (ranks > 1) {  // the pool and RSS above: the largest rank's
    std::printf("%-36s %14u\n", "ranks", ranks);
    std::printf("%-36s %14.2f\n", "windows per simulated us", double(t.sum[4]) / ranks / o.us);
    std::printf("%-36s %14.1f\n", "events between ranks per sim. us", double(t.sum[5]) / o.us);
    std::printf("%-36s %14.1f\n", "MB between ranks", double(t.sum[6]) / 1e6);
  }
}

int run(Ranks& ranks) {
  Options o;
  if (!read_options(o)) return 2;
  const auto t0 = std::chrono::steady_clock::now();
  NetworkConfig nc;
  nc.seed = o.seed;
  nc.frame_capacity = o.capacity;
  Network net(nc);
  Time lookahead = kNever;
  if (absl::Status s = build_fabric(net, o, ranks, &lookahead); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  const auto hosts = static_cast<uint32_t>(net.num_hosts());
  const auto bytes_per_flow = static_cast<uint64_t>(o.gbps / 8 * 1e9 * o.us * 1e-6 * 2);  // never runs dry
  // Every flow's record (flow h is host h's), so that a sink knows a flow's size when its
  // source runs on another rank.
  std::vector<FlowRecord> records(hosts);
  for (FlowRecord& r : records) r.bytes = bytes_per_flow;
  const auto apps = attach_apps(net, derangement(hosts, nc.seed), bytes_per_flow, o.spray, &records);

  const double cpu1 = cpu_seconds();
  const auto t1 = std::chrono::steady_clock::now();
  WindowStats windows;
  if (ranks.size() > 1) {
    run_windows(net, ranks, lookahead, static_cast<Time>(o.us) * kMicrosecond, &windows);
  } else {
    net.run_until(static_cast<Time>(o.us) * kMicrosecond);
  }
  const auto t2 = std::chrono::steady_clock::now();
  Times times;
  times.run_cpu_s = cpu_seconds() - cpu1;
  times.build_s = std::chrono::duration<double>(t1 - t0).count();
  times.run_s = std::chrono::duration<double>(t2 - t1).count();
  const Totals t = totals(net, ranks, apps, records, windows);
  if (ranks.rank() != 0) return 0;
  print_report(o, net, ranks.size(), times, t);
  return 0;
}

}  // namespace
}  // namespace uet::sim

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("sim_bench: simulator speed on a fat-tree UDP permutation");
  auto ranks = uet::sim::start_ranks(&argc, &argv);
  if (!ranks.ok()) return uet::bench::tool_error("sim_bench", ranks.status(), 2);
  absl::ParseCommandLine(argc, argv);
  return uet::sim::run(**ranks);
}
