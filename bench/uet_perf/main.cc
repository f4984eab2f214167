// uet-perf: a perftest-style tool (ib_write_bw / ib_write_lat) for UET and RoCEv2 over real
// packet I/O (DPDK, io_uring). One process is the server (the write target), one the client.
//
//   server:  uet-perf --server --ip=10.0.0.1 -- --no-huge -m 512 --no-pci --file-prefix=s
//              --vdev=net_memif0,role=server,socket=/tmp/m.sock,socket-abstract=no
//   client:  uet-perf --client=127.0.0.1 --ip=10.0.0.2 -s 65536 -n 1000 -- --no-huge -m 512
//              --no-pci --file-prefix=c --vdev=net_memif0,role=client,socket=/tmp/m.sock,socket-abstract=no
//   (one line each)
//
// Sequence, as perftest: the server listens on a TCP control connection (--oob-port) and prints
// "ready"; the client connects and sends its parameters (transport, size, region layout, seed,
// its data-plane IP and MAC, QPN and start PSN); the server registers a region and answers with
// its IP, MAC, rkey, QPN and start PSN. Before HELLO both tell the other their receive
// socket's size (RXCAP, io_uring; 0 for DPDK) and each keeps no more data in flight than fits
// the other's: UET's window, RoCEv2's outstanding PSNs. Each side then resolves the other's MAC (static --neigh
// entry, else ARP in the DPDK backend), connects its QP (RoCEv2), and both meet at a barrier.
// The client writes; when every write has completed it sends DONE, the server compares its
// region with the seeded pattern and answers VERIFY ok|mismatch. The client stops its data
// path and says BYE; the server closes its port, then the connection, and the client leaves
// after it (a memif peer's disconnect must meet neither side's bursts nor teardown). Both
// print perftest's table (and --json); the exit code is non-zero on a mismatch, an error, a
// timeout or SIGINT.
//
// Faults (bench/README.md "Faults on real I/O"): an operation ends with the engine's error
// completion once its retry budget is spent (UET --max_retries, RoCEv2 --retry_cnt; --json
// retry_budget_ms, error_after_ms); the first error completion stops posting, as perftest, and
// the run exits 1 naming the failed operation, then what the control connection said. The tool
// gives up by itself only --timeout_s past that budget without a completion (the server: with
// neither a frame nor DONE from the client) and on a control connection silent for --timeout_s.
// Every path out drains the TX backlog; --json "mbufs" has the pool's mbufs still in use after
// the run beyond those the device keeps posted for receiving (in_use_end, 0 unless one leaked).
//
// Data pattern: region byte o (o = slot * size + k) is byte o%8 of splitmix64(seed + o/8).
// The client keeps one copy of the whole region and write i goes to slot i % slots; a slot is
// written again only after its previous write completed. The server fills its region with the
// complement first, so every byte that never arrived is a mismatch.
//
// Lanes (--lcores_io=N, DPDK): N engines, one per EAL lcore (lane 0 on the main lcore, lane i
// on the i-th worker, rte_eal_remote_launch through DpdkEal::run_on_lcores), each with its own
// RX/TX queue pair of the port, its own FEP (local IP --ip + i) and its own control connection
// (TCP --oob_port + i); client lane i writes to server lane i, which verifies its own region
// (the pattern seeded with --seed + i). Steering and ARP per FEP: dpdk-io/dpdk_io.h. The lanes
// share nothing while they run but read-only options; the results are summed after they join.
//
// TSS (--tss, UET, spec/uet.md §5): both sides read one key file (transport/tss/key_file.h, the
// Wireshark plugin's format) and check at HELLO that they agree; the counters join the report.
//
// Zero-copy transmit (DPDK, --zero_copy): where the port gathers, payloads leave from the
// registered region as external-buffer mbufs, and the region is kept until the device has let
// go of them (DpdkIo::drain_references). --pingpong: raw frames bounced by a reflector on the
// peer (testpmd macswap), the device's own round trip.
//
// Timing: the host clock (--clock: the TSC scaled to CLOCK_MONOTONIC where the kernel keeps
// time with it, else CLOCK_MONOTONIC; the JSON's "clock" says which). Bandwidth mode: from
// the first post to the last completion, with up to --tx_depth writes outstanding. Latency mode (--lat): one write in flight; each sample
// is post → completion (the write's packets out, the last ACK back: a round trip).
#include "bench/tool_main.h"
#include "bench/uet_perf/lane.h"

namespace uet::perf {
namespace {

// The TSC where it can be read as a clock (packet_io.h): the loops read it on every pass.
// false, said on stderr, when --clock=tsc asks for it and it cannot be had.
bool choose_clock(const Options& o) {
  if (o.clock == "monotonic") return true;
  const bool tsc = io::use_tsc_clock();
  if (!tsc && o.clock == "tsc") {
    std::fprintf(stderr, "uet-perf: --clock=tsc: the kernel does not keep its time with the "
                         "TSC (its clocksource is another), use auto or monotonic\n");
    return false;
  }
  return true;
}

void close_listeners(std::vector<int>& listen_fds) {
  for (int& fd : listen_fds)
    if (fd >= 0) ::close(std::exchange(fd, -1));
}

// The server binds every lane's control port before it says it is ready; false (said on
// stderr, the ports bound so far closed) when one cannot be bound.
bool listen_on_lanes(const Options& o, std::vector<int>& listen_fds) {
  const uint32_t n = o.lanes;
  for (uint32_t i = 0; i < n; ++i) {
    auto lfd = Oob::listen_on(static_cast<uint16_t>(o.oob_port + i));
    if (!lfd.ok()) {
      bench::tool_error("uet-perf", lfd.status(), 1);
      close_listeners(listen_fds);
      return false;
    }
    listen_fds[i] = *lfd;
  }
  if (n == 1) {
    std::printf("uet-perf server: ready, waiting for a client on TCP port %u\n", o.oob_port);
  } else {
    std::printf("uet-perf server: ready, %u lanes, waiting for clients on TCP ports %u..%u\n", n,
                o.oob_port, o.oob_port + n - 1);
  }
  std::fflush(stdout);
  return true;
}

// Runs every lane, each with its own copy of the options (one on this thread, more on the
// EAL's lcores), and joins them; the worst exit code.
int run_lanes(const Options& o, IoSet& set, const std::vector<int>& listen_fds,
              std::vector<LaneOut>& outs) {
  const uint32_t n = o.lanes;
  std::vector<Options> lane_opts(n, o);
  std::vector<std::function<int()>> fns;
  for (uint32_t i = 0; i < n; ++i) {
    lane_opts[i].lane = i;
    lane_opts[i].ip = o.ip + i;
    lane_opts[i].oob_port = static_cast<uint16_t>(o.oob_port + i);
    lane_opts[i].seed = o.seed + i;
    fns.emplace_back([&, i] {
      outs[i].rc = run_lane(lane_opts[i], set.lanes[i], listen_fds[i], outs[i]);
      return outs[i].rc;
    });
  }
  if (n == 1) return fns[0]();
  int rc = 0;
#ifdef UET_PERF_HAVE_DPDK
  auto rcs = set.eal->run_on_lcores(fns);
  if (!rcs.ok()) rc = bench::tool_error("uet-perf", rcs.status(), 1);
#endif
  for (const LaneOut& l : outs) rc = std::max(rc, l.rc);
  return rc;
}

// The pool's mbufs, and those still out of it (-1, -1: not DPDK).
struct Mbufs {
  int64_t pool = -1, in_use = -1;
};

// Every lane has stopped and drained its backlog: whatever is still out of the pool leaked.
Mbufs count_mbufs(const IoSet& set) {
  Mbufs m;
#ifdef UET_PERF_HAVE_DPDK
  if (!set.lanes.empty() && set.lanes[0].dpdk != nullptr) {
    m.pool = set.lanes[0].dpdk->pool_size();
    // Less what the device keeps posted for receiving, as it did from its start.
    const int64_t posted = set.lanes[0].dpdk->pool_posted_at_start();
    m.in_use = std::max<int64_t>(0, int64_t{set.lanes[0].dpdk->pool_in_use()} - posted);
    std::printf(" mbufs: %ld of the pool's %ld still in use after the run%s (beyond the %ld "
                "the device keeps posted)\n",
                m.in_use, m.pool, m.in_use == 0 ? "" : " (leaked)", posted);
  }
#else
  (void)set;
#endif
  return m;
}

// The lanes' sums (each lane's rate over its own interval; the longest lane's seconds); ok and
// verified only when every lane is. per_lane: the lanes' JSON objects, comma-separated.
LaneOut sum_lanes(const std::vector<LaneOut>& outs, const Mbufs& mbufs, std::string& per_lane) {
  LaneOut sum;
  bool all_ok = true, all_verified = true;
  double max_seconds = 0;
  for (const LaneOut& l : outs) {
    sum.r.completed += l.r.completed;
    sum.r.failed += l.r.failed;
    sum.r.bytes += l.r.bytes;
    sum.r.checked_bytes += l.r.checked_bytes;
    sum.r.mismatched_bytes += l.r.mismatched_bytes;
    sum.gbps += l.gbps;
    sum.mpps += l.mpps;
    sum.pkt_mpps += l.pkt_mpps;
    sum.frames.tx_packets += l.frames.tx_packets;
    sum.frames.rx_packets += l.frames.rx_packets;
    sum.frames.tx_dropped += l.frames.tx_dropped;
    sum.frames.rx_dropped += l.frames.rx_dropped;
    sum.lost += l.lost;
    sum.retransmitted += l.retransmitted;
    sum.timeouts += l.timeouts;
    sum.tx_ring_full += l.tx_ring_full;
    sum.tx_ring_full_waits += l.tx_ring_full_waits;
    sum.tx_stalled += l.tx_stalled;
    sum.tx_stalls += l.tx_stalls;
    sum.tx_drained += l.tx_drained;
    sum.tss.add(l.tss);
    sum.size = l.size;
    max_seconds = std::max(max_seconds, l.r.seconds);
    all_ok = all_ok && l.rc == 0 && l.reported && l.r.ok;
    all_verified = all_verified && l.r.verify == "ok";
    if (sum.r.error.empty() && !l.r.error.empty()) sum.r.error = l.r.error;
    absl::StrAppend(&per_lane, per_lane.empty() ? "" : ", ", l.json);
  }
  sum.r.seconds = max_seconds;
  sum.mbufs_pool = mbufs.pool;
  sum.mbufs_in_use_end = mbufs.in_use;
  sum.r.ok = all_ok;
  sum.r.verify = all_verified ? "ok" : "mismatch";
  return sum;
}

// The lanes' table: the sum, and each lane's line under it.
void print_sum(const Options& o, const std::vector<LaneOut>& outs, const LaneOut& sum) {
  const uint32_t n = o.lanes;
  const std::string rule(87, '-');
  std::printf("%s\n Sum of %u lanes (one engine, queue, FEP and lcore each), %s\n", rule.c_str(), n,
              o.server ? "server" : "client");
  if (!o.server && !o.lat) {
    std::printf(" %-10s %-12s %-20s %-14s %-14s %-10s\n", "#bytes", "#iterations",
                "BW sum[Gb/sec]", "MsgRate[Mpps]", "PktRate[Mpps]", "seconds");
    std::printf(" %-10lu %-12lu %-20.3f %-14.6f %-14.6f %-10.3f\n", sum.size, sum.r.completed,
                sum.gbps, sum.mpps, sum.pkt_mpps, sum.r.seconds);
    for (uint32_t i = 0; i < n; ++i)
      std::printf("   lane %-3u %-12lu %-20.3f %-14.6f %-14.6f %-10.3f\n", i, outs[i].r.completed,
                  outs[i].gbps, outs[i].mpps, outs[i].pkt_mpps, outs[i].r.seconds);
  }
  if (sum.tss.on) {
    std::printf(" tss (every lane): sealed %lu, opened %lu, dropped %lu%s\n", sum.tss.c.sealed,
                sum.tss.c.opened, sum.tss.c.dropped(), tss_drop_reasons(sum.tss).c_str());
  }
  std::printf(" frames tx %lu rx %lu; retransmitted %lu; %s: %s\n%s\n", sum.frames.tx_packets,
              sum.frames.rx_packets, sum.retransmitted,
              o.server ? "data check (every lane)" : "server data check (every lane)",
              sum.r.verify.c_str(), rule.c_str());
}

int run(const Options& o, const std::vector<std::string>& eal_args) {
  // Closed after the ports (declared before them): each client leaves once its control
  // connection closes.
  std::vector<Oob> controls;
  if (!choose_clock(o)) return 2;
  auto set_or = make_io(o, eal_args);
  if (!set_or.ok()) {
    return bench::tool_error("uet-perf", set_or.status(),
                             set_or.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1);
  }
  IoSet& set = *set_or;
  if (o.pingpong) return run_pingpong(o, set.lanes[0]);

  std::vector<int> listen_fds(o.lanes, -1);
  if (o.server && !listen_on_lanes(o, listen_fds)) return 1;
  std::vector<LaneOut> outs(o.lanes);
  int rc = run_lanes(o, set, listen_fds, outs);
  close_listeners(listen_fds);
  for (LaneOut& l : outs) controls.push_back(std::move(l.control));

  const Mbufs mbufs = count_mbufs(set);
  for (LaneOut& l : outs) {
    l.mbufs_pool = mbufs.pool;
    l.mbufs_in_use_end = mbufs.in_use;
    l.json = json_of(l.shown, l);
  }
  if (o.lanes == 1) {
    if (!write_json(o.json_path, outs[0].json)) rc = std::max(rc, 1);
    return rc;
  }
  std::string per_lane;
  const LaneOut sum = sum_lanes(outs, mbufs, per_lane);
  print_sum(o, outs, sum);
  // The parameters as run (every lane adopted the client's); lane 0 has this process's address.
  std::string json = json_of(outs[0].shown, sum);
  json.pop_back();  // the closing brace
  absl::StrAppend(&json, ", \"lcores_io\": ", o.lanes, ", \"lanes\": [", per_lane, "]}");
  if (!write_json(o.json_path, json)) rc = std::max(rc, 1);
  if (!sum.r.ok || sum.r.verify != "ok") rc = std::max(rc, 1);
  return rc;
}

}  // namespace
}  // namespace uet::perf

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "uet-perf: perftest-style RDMA WRITE bandwidth/latency for UET and RoCEv2 over DPDK or "
      "io_uring.\n"
      "  server: uet-perf --server [flags] -- EAL-ARGS\n"
      "  client: uet-perf --client=SERVER_CONTROL_IP [flags] -- EAL-ARGS\n"
      "EAL arguments (DPDK) follow --, e.g. -- --no-huge -m 512 --no-pci --file-prefix=X "
      "--vdev=net_memif0,role=server,socket=/tmp/m.sock,socket-abstract=no");
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "uet_perf");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  // perftest spells flags with dashes (--oob-port, --tx-depth): accept both, up to "--".
  std::vector<std::string> spelled(argv, argv + argc);
  std::vector<char*> args;
  for (size_t i = 0; i < spelled.size(); ++i) {
    std::string& a = spelled[i];
    if (a == "--") {
      for (; i < spelled.size(); ++i) args.push_back(spelled[i].data());
      break;
    }
    if (i > 0 && a.size() > 2 && a[0] == '-') {
      const size_t end = std::min(a.find('='), a.size());
      const size_t begin = a.find_first_not_of('-');
      for (size_t j = begin; j < end; ++j)
        if (a[j] == '-') a[j] = '_';
      std::string name = a.substr(begin, end - begin);
      if (name.starts_with("no")) uet::perf::given_flags().insert(name.substr(2));
      uet::perf::given_flags().insert(std::move(name));
    }
    args.push_back(a.data());
  }
  const std::vector<char*> rest = absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  std::vector<std::string> eal_args;
  for (char* a : rest) eal_args.emplace_back(a);  // rest[0] is the program name

  auto o = uet::perf::options_from_flags();
  if (!o.ok()) return uet::bench::tool_error("uet-perf", o.status(), 2);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // the test driver waits for the "ready" line
  std::signal(SIGINT, uet::perf::on_signal);
  std::signal(SIGTERM, uet::perf::on_signal);
  return uet::perf::run(*o, eal_args);
}
