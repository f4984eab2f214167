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
// the run (in_use_end, 0 unless one leaked).
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
// Timing: CLOCK_MONOTONIC. Bandwidth mode: from the first post to the last completion, with
// up to --tx_depth writes outstanding. Latency mode (--lat): one write in flight; each sample
// is post → completion (the write's packets out, the last ACK back: a round trip).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "dpdk-io/host_loop.h"
#include "dpdk-io/packet_io.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/tss/key_file.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/wire/pcap.h"
#ifdef UET_PERF_HAVE_DPDK
#include "dpdk-io/dpdk_io.h"
#endif
#ifdef UET_PERF_HAVE_URING
#include "dpdk-io/uring_io.h"
#endif

ABSL_FLAG(bool, server, false, "run as the server (the write target)");
ABSL_FLAG(std::string, client, "",
          "run as the client of the server at this control (TCP) address, e.g. 127.0.0.1 "
          "(exactly one of --server / --client=HOST is required)");
ABSL_FLAG(uint32_t, oob_port, 18515, "TCP port of the control connection, 1..65535");
ABSL_FLAG(std::string, transport, "uet", "uet or rocev2 (both sides must agree)");
ABSL_FLAG(std::string, io, "dpdk", "packet I/O backend: dpdk or uring");
ABSL_FLAG(std::string, op, "write",
          "operation: write (into the server's memory), read (from it) or send (into receive "
          "buffers the server posts)");
ABSL_FLAG(uint64_t, s, 65536, "message size in bytes, 1..67108864 (client; the server adopts it)");
ABSL_FLAG(uint64_t, n, 1000, "iterations (messages), 1..100000000; ignored when -D is set");
ABSL_FLAG(uint32_t, D, 0, "duration in seconds, 0..3600; 0 = use -n");
ABSL_FLAG(bool, bidir, false,
          "bidirectional (perftest -b): the server writes into the client's memory while the "
          "client writes into the server's; each side reports its own direction and checks what "
          "it received; --op=write only");
ABSL_FLAG(bool, lat, false, "latency mode: one message in flight, report min/p50/p99/p99.9/max");
ABSL_FLAG(bool, pingpong, false,
          "DPDK client, no transport: the device's own round trip, for --lat to be read against: "
          "-n raw UDP frames of -s bytes (at least 42), one at a time, to the --neigh peer, "
          "bounced back by a reflector there (dpdk-testpmd --forward-mode=macswap)");
ABSL_FLAG(uint32_t, tx_depth, 128, "bandwidth mode: writes outstanding at most, 1..256");
ABSL_FLAG(uint32_t, mtu, 4096,
          "payload bytes per packet: UET 256..9000, RoCEv2 one of 256, 512, 1024, 2048, 4096; "
          "must fit the device MTU");
ABSL_FLAG(std::string, ip, "",
          "local data-plane IPv4 address, lane i uses IP + i (default \"\": 10.0.0.1 as server, "
          "10.0.0.(1 + --lcores_io) as client)");
ABSL_FLAG(std::string, mac, "", "local MAC, aa:bb:cc:dd:ee:ff (default \"\": the port's own)");
ABSL_FLAG(std::vector<std::string>, neigh, {},
          "static neighbours IP=MAC, comma-separated (default none: ARP resolves)");
ABSL_FLAG(uint32_t, port, 0, "DPDK: ethdev port id, 0..(ports-1)");
ABSL_FLAG(uint32_t, lcores_io, 1,
          "DPDK: engines (lanes), 1..16: one RX/TX queue pair, FEP (--ip + i), control port "
          "(--oob_port + i) and EAL lcore each (the EAL needs as many lcores, e.g. -l 0-1 for 2); "
          "both sides must agree");
ABSL_FLAG(uint32_t, mbufs, 8191, "DPDK: mbuf pool size (shared by the lanes), 512..1048575");
ABSL_FLAG(uint32_t, dev_mtu, 9000, "DPDK: device (L3) MTU to configure, 1500..9600");
ABSL_FLAG(double, loss, 0, "drop this fraction of sent frames before the device, 0..0.5");
ABSL_FLAG(uint64_t, seed, 1, "seed of the data pattern, the loss and the start PSNs");
ABSL_FLAG(uint32_t, window_kb, 256, "UET: bytes in flight per PDC in KiB, 16..65536");
ABSL_FLAG(std::string, cc, "nscc",
          "UET: congestion control, nscc, rccc or nscc+rccc (also: both); the server adopts the "
          "client's");
ABSL_FLAG(uint32_t, rto_us, 2000,
          "UET: retransmission timeout before the first RTT sample in microseconds, 10..1000000 "
          "(--io=uring: 50000)");
ABSL_FLAG(uint32_t, min_rto_us, 1000,
          "UET: lower bound of the RTT-estimated retransmission timeout in microseconds, "
          "1..--rto_us (the simulator's 10 us is far below a software path's scheduling jitter; "
          "--io=uring: 50000)");
ABSL_FLAG(uint32_t, max_rto_us, 10000,
          "UET: upper bound of the retransmission timeout in microseconds, --rto_us..60000000 "
          "(--io=uring: 200000)");
ABSL_FLAG(uint32_t, rto_rtt_max_pct, 0,
          "UET: floor of the retransmission timeout as a percentage of the largest RTT sample, "
          "0..1000, 0 = none (--io=uring: 150)");
ABSL_FLAG(uint32_t, base_rtt_us, 0,
          "UET: the path's unloaded round trip for NSCC in microseconds, 0..100000; 0 = the "
          "control connection's smallest round trip of 16, measured at start-up");
ABSL_FLAG(uint32_t, ack_timeout_exp, 12,
          "RoCEv2: local ACK timeout 4.096 us * 2^t, 1..31 (12 = 16.8 ms; --io=uring: 14 = 67 "
          "ms)");
ABSL_FLAG(uint32_t, max_retries, 8,
          "UET: timeouts of one PSN, with the peer silent, before its PDC's operations fail "
          "(kRetriesExhausted), 1..64; the retry budget is at most 2 x (max_retries + 1) x "
          "--max_rto_us");
ABSL_FLAG(uint32_t, retry_cnt, 6,
          "RoCEv2: go-back-N restarts without progress before the QP's requests fail "
          "(IB_WC_RETRY_EXC_ERR), 0..7, 7 = for ever (as rxe); the retry budget is "
          "(retry_cnt + 1) ACK timeouts");
ABSL_FLAG(uint32_t, progress_ms, 0,
          "print a progress line (operations posted, completed and failed; frames received) "
          "every this many milliseconds, 0..60000, 0 = none");
ABSL_FLAG(uint32_t, tx_hold_us, 20000,
          "DPDK: frames the device takes none of for this long are dropped and counted "
          "(tx_stalled), 1..60000000");
ABSL_FLAG(uint32_t, timeout_s, 60,
          "give up after this many seconds without progress (link, control connection; "
          "operations and the server's wait for DONE: this long past the retry budget), 1..3600");
ABSL_FLAG(std::string, json, "", "write the result as one JSON object to this file (default none)");
ABSL_FLAG(std::string, pcap, "", "write every frame sent and received to this pcap (default none)");
ABSL_FLAG(bool, tss, false,
          "UET: seal every frame (TSS, spec/uet.md §5: AES-256-GCM) and accept only sealed ones; "
          "needs --key_file, the same file on both sides");
ABSL_FLAG(std::string, key_file, "",
          "with --tss: the TSS key file, as the Wireshark plugin reads it (dissector/README.md, "
          "\"TSS keys\"); every domain in it is accepted");
ABSL_FLAG(int64_t, tss_sdi, -1,
          "with --tss: the secure domain to send in, 0..16777215 (default -1: the key file's "
          "first)");
ABSL_FLAG(uint32_t, tss_an, 0, "with --tss: the association (key) to send with, 0..1");
ABSL_FLAG(bool, xstats, false, "DPDK: print the port's non-zero extended statistics at the end");
ABSL_FLAG(bool, zero_copy, true,
          "DPDK: send payloads from registered memory by reference (external-buffer mbufs) "
          "where the port gathers; false copies them into the frame");

namespace uet::perf {
namespace {

std::atomic<bool> g_stop{false};

// The flags named on the command line (main() fills it before parsing), whatever their value.
std::set<std::string>& given_flags() {
  static std::set<std::string> names;
  return names;
}
void on_signal(int) { g_stop.store(true, std::memory_order_relaxed); }

constexpr uint64_t kRegionCap = 64ull << 20;  // bytes of the target region at most
constexpr uint32_t kQpn = 0x100;              // RoceConfig::qpn_base: our one QP

// ---------------------------------------------------------------------------------------------
// Options

struct Options {
  bool server = false;
  Time base_rtt = 0;      // UET NSCC's base RTT: --base_rtt_us, else measured at start-up
  Time rto = 0, min_rto = 0, max_rto = 0;  // UET
  uint32_t rto_rtt_max_pct = 0;             // UET
  CcMode cc = CcMode::kNscc;                // UET; the server adopts the client's
  uint32_t ack_timeout_exp = 0;             // RoCEv2
  uint32_t max_retries = 0;                 // UET
  uint32_t retry_cnt = 0;                   // RoCEv2
  Time progress = 0;                        // --progress_ms, 0 = none
  std::string server_host;
  uint16_t oob_port = 0;
  bool uet = true;
  std::string io;
  uint64_t size = 0;
  uint64_t iters = 0;
  uint32_t duration_s = 0;
  bool lat = false;
  bool pingpong = false;
  uint32_t depth = 0;
  uint32_t mtu = 0;
  uint32_t ip = 0;
  wire::MacAddr mac{};
  std::vector<std::pair<uint32_t, wire::MacAddr>> neigh;
  double loss = 0;
  uint64_t seed = 0;
  Time timeout = 0;
  std::string op = "write";  // write, read or send
  bool bidir = false;
  uint32_t lanes = 1;  // --lcores_io
  uint32_t lane = 0;   // this engine's index (a lane's copy of the options)
  std::optional<tss::TssConfig> tss;  // --tss: the domains of --key_file
  // DPDK
  uint16_t port = 0;
  uint32_t dev_mtu = 0, mbufs = 0;
  Time tx_hold = 0;
  bool zero_copy = true, xstats = false;
  uint64_t window_bytes = 0;  // UET
  std::string json_path, pcap_path;
};

struct Check {
  std::string error;
  void range(const char* flag, double v, double lo, double hi) {
    if (error.empty() && !(v >= lo && v <= hi))
      error = absl::StrFormat("--%s=%.15g out of range: %.15g..%.15g", flag, v, lo, hi);
  }
  void fail(std::string e) {
    if (error.empty()) error = std::move(e);
  }
};

std::optional<uint32_t> parse_ip(const std::string& s) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

std::optional<wire::MacAddr> parse_mac(const std::string& s) {
  wire::MacAddr m{};
  unsigned v[6];
  char tail;
  if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                  &tail) != 6)
    return std::nullopt;
  for (int i = 0; i < 6; ++i) m[static_cast<size_t>(i)] = static_cast<uint8_t>(v[i]);
  return m;
}

std::string ip_str(uint32_t ip) {
  return absl::StrFormat("%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}
std::string mac_str(const wire::MacAddr& m) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

absl::StatusOr<Options> options_from_flags() {
  Options o;
  Check c;
  o.server = absl::GetFlag(FLAGS_server);
  o.server_host = absl::GetFlag(FLAGS_client);
  if (o.server == !o.server_host.empty())
    c.fail("exactly one of --server and --client=HOST is required");
  c.range("oob_port", absl::GetFlag(FLAGS_oob_port), 1, 65535);
  o.oob_port = static_cast<uint16_t>(absl::GetFlag(FLAGS_oob_port));
  const std::string tr = absl::GetFlag(FLAGS_transport);
  if (tr != "uet" && tr != "rocev2") c.fail("--transport=" + tr + " unknown: uet or rocev2");
  o.uet = tr == "uet";
  const bool tss_on = absl::GetFlag(FLAGS_tss);
  const std::string key_file = absl::GetFlag(FLAGS_key_file);
  const int64_t tss_sdi = absl::GetFlag(FLAGS_tss_sdi);
  const uint32_t tss_an = absl::GetFlag(FLAGS_tss_an);
  if (tss_on && tr == "rocev2") {
    c.fail("--tss is UET only (spec/uet.md §5), not with --transport=rocev2");
  } else if (tss_on && key_file.empty()) {
    c.fail("--tss needs --key_file=PATH (the TSS key file, dissector/README.md \"TSS keys\")");
  } else if (!tss_on && (!key_file.empty() || tss_sdi != -1 || tss_an != 0)) {
    c.fail("--key_file, --tss_sdi and --tss_an need --tss");
  }
  c.range("tss_sdi", static_cast<double>(tss_sdi), -1, 0xFFFFFF);
  c.range("tss_an", tss_an, 0, 1);
  if (tss_on && c.error.empty()) {
    auto t = tss::read_key_file(
        key_file,
        tss_sdi < 0 ? std::nullopt : std::optional<uint32_t>(static_cast<uint32_t>(tss_sdi)),
        static_cast<uint8_t>(tss_an));
    if (t.ok()) {
      o.tss = std::move(*t);
    } else if (t.status().code() == absl::StatusCode::kOutOfRange) {
      c.fail(absl::StrCat(tss_sdi < 0 ? "" : absl::StrCat("--tss_sdi=", tss_sdi, " "),
                          "--tss_an=", tss_an, ": ", t.status().message()));
    } else {
      c.fail(absl::StrCat("--key_file: ", t.status().message()));
    }
  }
  o.io = absl::GetFlag(FLAGS_io);
  if (o.io != "dpdk" && o.io != "uring") c.fail("--io=" + o.io + " unknown: dpdk or uring");
  o.op = absl::GetFlag(FLAGS_op);
  if (o.op != "write" && o.op != "read" && o.op != "send") {
    c.fail("--op=" + o.op + " unknown: write, read or send");
  }
  o.size = absl::GetFlag(FLAGS_s);
  c.range("s", static_cast<double>(o.size), 1, 67108864);
  o.iters = absl::GetFlag(FLAGS_n);
  c.range("n", static_cast<double>(o.iters), 1, 100000000);
  o.duration_s = absl::GetFlag(FLAGS_D);
  c.range("D", o.duration_s, 0, 3600);
  o.lat = absl::GetFlag(FLAGS_lat);
  o.pingpong = absl::GetFlag(FLAGS_pingpong);
  o.bidir = absl::GetFlag(FLAGS_bidir);
  if (o.bidir && o.op != "write") c.fail("--bidir supports --op=write only");
  o.depth = o.lat ? 1 : absl::GetFlag(FLAGS_tx_depth);
  c.range("tx_depth", absl::GetFlag(FLAGS_tx_depth), 1, 256);
  o.mtu = absl::GetFlag(FLAGS_mtu);
  if (o.uet) {
    c.range("mtu", o.mtu, 256, 9000);
  } else if (o.mtu != 256 && o.mtu != 512 && o.mtu != 1024 && o.mtu != 2048 && o.mtu != 4096) {
    c.fail(absl::StrFormat("--mtu=%u invalid for rocev2: one of 256, 512, 1024, 2048, 4096", o.mtu));
  }
  std::string ip = absl::GetFlag(FLAGS_ip);
  const uint32_t lanes_flag = absl::GetFlag(FLAGS_lcores_io);
  // Lanes take consecutive addresses: the server 10.0.0.1.., the client right after them.
  if (ip.empty())
    ip = o.server ? "10.0.0.1" : absl::StrCat("10.0.0.", 1 + std::clamp<uint32_t>(lanes_flag, 1, 16));
  if (auto v = parse_ip(ip); v && *v != 0) {
    o.ip = *v;
  } else {
    c.fail("--ip=" + ip + " invalid: a dotted-quad IPv4 address, not 0.0.0.0");
  }
  if (const std::string m = absl::GetFlag(FLAGS_mac); !m.empty()) {
    if (auto v = parse_mac(m)) {
      o.mac = *v;
    } else {
      c.fail("--mac=" + m + " invalid: aa:bb:cc:dd:ee:ff");
    }
  }
  for (const std::string& e : absl::GetFlag(FLAGS_neigh)) {
    const std::vector<std::string> kv = absl::StrSplit(e, absl::MaxSplits('=', 1));
    auto nip = kv.size() == 2 ? parse_ip(kv[0]) : std::nullopt;
    auto nmac = kv.size() == 2 ? parse_mac(kv[1]) : std::nullopt;
    if (!nip || !nmac) {
      c.fail("--neigh=" + e + " invalid: IP=MAC, e.g. 10.0.0.1=02:00:00:00:00:01");
    } else {
      o.neigh.emplace_back(*nip, *nmac);
    }
  }
  c.range("port", absl::GetFlag(FLAGS_port), 0, 1023);
  o.port = static_cast<uint16_t>(std::min<uint32_t>(absl::GetFlag(FLAGS_port), 1023));
  if (o.pingpong && (o.server || o.io != "dpdk" || o.neigh.size() != 1)) {
    c.fail("--pingpong needs --client, --io=dpdk and exactly one --neigh=IP=MAC (the "
           "reflector's)");
  }
  o.lanes = absl::GetFlag(FLAGS_lcores_io);
  c.range("lcores_io", o.lanes, 1, 16);
  if (o.lanes > 1 && o.io != "dpdk")
    c.fail(absl::StrFormat("--lcores_io=%u needs --io=dpdk (--io=%s runs one engine): 1..1 here",
                           o.lanes, o.io));
  if (o.lanes > 1 && o.oob_port + o.lanes - 1 > 65535)
    c.fail(absl::StrFormat("--oob_port=%u out of range for --lcores_io=%u: 1..%u", o.oob_port,
                           o.lanes, 65536 - o.lanes));
  if (o.lanes > 1 && uint64_t{o.ip} + o.lanes - 1 > 0xFFFFFFFFull)
    c.fail("--ip + --lcores_io - 1 overflows IPv4");
  o.mbufs = absl::GetFlag(FLAGS_mbufs);
  c.range("mbufs", o.mbufs, 512, 1048575);
  o.dev_mtu = absl::GetFlag(FLAGS_dev_mtu);
  c.range("dev_mtu", o.dev_mtu, 1500, 9600);
  o.zero_copy = absl::GetFlag(FLAGS_zero_copy);
  o.xstats = absl::GetFlag(FLAGS_xstats);
  o.json_path = absl::GetFlag(FLAGS_json);
  o.pcap_path = absl::GetFlag(FLAGS_pcap);
  o.loss = absl::GetFlag(FLAGS_loss);
  c.range("loss", o.loss, 0, 0.5);
  o.seed = absl::GetFlag(FLAGS_seed);
  c.range("window_kb", absl::GetFlag(FLAGS_window_kb), 16, 65536);
  o.window_bytes = uint64_t{absl::GetFlag(FLAGS_window_kb)} * 1024;
  const std::string cc = absl::GetFlag(FLAGS_cc);
  if (cc == "nscc") {
    o.cc = CcMode::kNscc;
  } else if (cc == "rccc") {
    o.cc = CcMode::kRccc;
  } else if (cc == "nscc+rccc" || cc == "both") {
    o.cc = CcMode::kNsccRccc;
  } else {
    c.fail("--cc=" + cc + " unknown: nscc, rccc or nscc+rccc (both)");
  }
  // Kernel-socket hosts stall threads for milliseconds; shorter timers would fire spuriously.
  const bool host_io = o.io == "uring";
  const auto flag_or = [&](const char* flag, uint32_t value, uint32_t host_value) {
    return host_io && !given_flags().contains(flag) ? host_value : value;
  };
  const uint32_t rto_us = flag_or("rto_us", absl::GetFlag(FLAGS_rto_us), 50000);
  const uint32_t min_rto_us = flag_or("min_rto_us", absl::GetFlag(FLAGS_min_rto_us), 50000);
  const uint32_t max_rto_us = flag_or("max_rto_us", absl::GetFlag(FLAGS_max_rto_us), 200000);
  o.rto_rtt_max_pct = flag_or("rto_rtt_max_pct", absl::GetFlag(FLAGS_rto_rtt_max_pct), 150);
  o.ack_timeout_exp = flag_or("ack_timeout_exp", absl::GetFlag(FLAGS_ack_timeout_exp), 14);
  c.range("rto_us", rto_us, 10, 1000000);
  c.range("min_rto_us", min_rto_us, 1, rto_us);
  c.range("max_rto_us", max_rto_us, rto_us, 60000000);
  c.range("rto_rtt_max_pct", o.rto_rtt_max_pct, 0, 1000);
  c.range("base_rtt_us", absl::GetFlag(FLAGS_base_rtt_us), 0, 100000);
  o.rto = static_cast<Time>(rto_us) * kMicrosecond;
  o.min_rto = static_cast<Time>(min_rto_us) * kMicrosecond;
  o.max_rto = static_cast<Time>(max_rto_us) * kMicrosecond;
  o.base_rtt = static_cast<Time>(absl::GetFlag(FLAGS_base_rtt_us)) * kMicrosecond;
  c.range("ack_timeout_exp", o.ack_timeout_exp, 1, 31);
  o.max_retries = absl::GetFlag(FLAGS_max_retries);
  c.range("max_retries", o.max_retries, 1, 64);
  o.retry_cnt = absl::GetFlag(FLAGS_retry_cnt);
  c.range("retry_cnt", o.retry_cnt, 0, 7);
  c.range("progress_ms", absl::GetFlag(FLAGS_progress_ms), 0, 60000);
  o.progress = static_cast<Time>(absl::GetFlag(FLAGS_progress_ms)) * kMillisecond;
  c.range("tx_hold_us", absl::GetFlag(FLAGS_tx_hold_us), 1, 60000000);
  o.tx_hold = static_cast<Time>(absl::GetFlag(FLAGS_tx_hold_us)) * kMicrosecond;
  c.range("timeout_s", absl::GetFlag(FLAGS_timeout_s), 1, 3600);
  o.timeout = static_cast<Time>(absl::GetFlag(FLAGS_timeout_s)) * kSecond;
  if (!c.error.empty()) return absl::InvalidArgumentError(c.error);
  return o;
}

// ---------------------------------------------------------------------------------------------
// Neighbours the engines' resolver sees (control path: once per PDC/QP). The DPDK backend
// rewrites the destination MAC of every frame from its own table anyway (dpdk_io.h).

// One per lane (thread): the engines' resolver is a plain function pointer.
std::unordered_map<uint32_t, wire::MacAddr>& resolver_table() {
  thread_local std::unordered_map<uint32_t, wire::MacAddr> t;
  return t;
}
wire::MacAddr resolve_mac(uint32_t ip4) {
  auto it = resolver_table().find(ip4);
  // Unknown yet: broadcast; the DPDK backend writes the resolved MAC on every frame anyway.
  static constexpr wire::MacAddr kBroadcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  return it == resolver_table().end() ? kBroadcast : it->second;
}

// ---------------------------------------------------------------------------------------------
// The tap: random loss before the device and the pcap of what went out and came in. A
// PacketIo around the backend, so it works for every backend.

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

class TapIo final : public io::PacketIo {
 public:
  // A frame's bytes as they go on the wire (a payload sent by reference copied in).
  std::span<const uint8_t> gathered(const Frame& f) {
    if (f.ref_len == 0) return {f.data, f.len};
    scratch_.resize(f.len + f.ref_len);
    std::memcpy(scratch_.data(), f.data, f.ref_at);
    std::memcpy(scratch_.data() + f.ref_at, f.ref, f.ref_len);
    std::memcpy(scratch_.data() + f.ref_at + f.ref_len, f.data + f.ref_at, f.len - f.ref_at);
    return scratch_;
  }

  TapIo(io::PacketIo& inner, double loss, uint64_t seed, std::optional<wire::PcapWriter> pcap)
      : inner_(inner), loss_(loss), rng_(seed), pcap_(std::move(pcap)) {}

  size_t rx_burst(std::span<Frame*> out) override {
    const size_t n = inner_.rx_burst(out);
    if (pcap_) {
      const uint64_t t = realtime_ns();
      for (size_t i = 0; i < n; ++i) (void)pcap_->write({out[i]->data, out[i]->len}, t);
    }
    return n;
  }
  void release_rx(std::span<Frame* const> frames) override { inner_.release_rx(frames); }
  size_t alloc_tx(std::span<Frame*> out) override { return inner_.alloc_tx(out); }
  size_t tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) override {
    if (loss_ <= 0 && !pcap_) return inner_.tx_burst(filled, unused);
    std::array<Frame*, 2 * io::kMaxBurst> keep{}, drop{};
    size_t k = 0, d = 0;
    for (Frame* f : filled) {
      if (loss_ > 0 && dist_(rng_) < loss_) {
        drop[d++] = f;
        ++lost_;
      } else {
        keep[k++] = f;
      }
    }
    if (pcap_) {
      const uint64_t t = realtime_ns();
      for (size_t i = 0; i < k; ++i) (void)pcap_->write(gathered(*keep[i]), t);
    }
    for (Frame* f : unused) drop[d++] = f;
    return inner_.tx_burst({keep.data(), k}, {drop.data(), d});
  }
  void wait(Time deadline) override { inner_.wait(deadline); }
  io::IoStats stats() const override { return inner_.stats(); }

  uint64_t lost() const noexcept { return lost_; }
  void close() {
    if (pcap_) (void)pcap_->close();
    pcap_.reset();
  }

 private:
  io::PacketIo& inner_;
  double loss_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> dist_{0.0, 1.0};
  std::optional<wire::PcapWriter> pcap_;
  std::vector<uint8_t> scratch_;  // gathered(): kept, so a capture allocates once
  uint64_t lost_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Backend selection: one function, one branch per backend.

// One lane's view of its backend (owned by IoSet).
struct Io {
#ifdef UET_PERF_HAVE_DPDK
  io::DpdkIo* dpdk = nullptr;
#endif
#ifdef UET_PERF_HAVE_URING
  io::UringIo* uring = nullptr;
#endif
  io::PacketIo* backend = nullptr;
  wire::MacAddr mac{};
  uint32_t max_frame = 0;
  uint16_t udp_source_port = 0;  // UetConfig::udp_source_port: the one port the socket sends from
  // uring: the receiving socket's SO_RCVBUF as granted (0: no socket, no bound), and whether
  // net.core.rmem_max capped it; the peer learns it at RXCAP.
  uint32_t rx_socket_bytes = 0;
  bool rx_socket_capped = false;
  std::string description;

  // The peer's MAC if known (uring: any; the kernel routes). Sends an ARP request when asked.
  bool resolved(uint32_t ip4, bool solicit) {
#ifdef UET_PERF_HAVE_DPDK
    if (dpdk != nullptr) {
      if (const wire::MacAddr* m = dpdk->neighbour(ip4)) {
        resolver_table()[ip4] = *m;
        return true;
      }
      if (solicit) dpdk->solicit(ip4);
      return false;
    }
#endif
    (void)ip4;
    (void)solicit;
    return true;
  }
};

// The backends of all lanes.
struct IoSet {
#ifdef UET_PERF_HAVE_DPDK
  std::unique_ptr<io::DpdkEal> eal;  // declared first: destroyed after the port
#endif
  std::vector<std::unique_ptr<io::PacketIo>> backends;
  std::vector<Io> lanes;
};

absl::StatusOr<IoSet> make_io(const Options& o, const std::vector<std::string>& eal_args) {
  IoSet set;
  if (o.io == "dpdk") {
#ifdef UET_PERF_HAVE_DPDK
    auto eal = io::DpdkEal::init(eal_args);
    if (!eal.ok()) return eal.status();
    set.eal = std::move(*eal);
    if (o.lanes > set.eal->lcore_count()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--lcores_io=%u out of range: 1..%u, the EAL lcores (one per engine; give -l 0-%u "
          "after --)",
          o.lanes, set.eal->lcore_count(), o.lanes - 1));
    }
    if (o.port >= set.eal->port_count()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--port=", o.port, " out of range: 0..",
          static_cast<int>(set.eal->port_count()) - 1, " (ports: ", set.eal->describe_ports(),
          "; add --vdev=... or a NIC after --)"));
    }
    io::DpdkIoConfig c;
    c.port_id = o.port;
    c.local_ip4 = o.ip;
    c.local_mac = o.mac;
    c.mtu = o.dev_mtu;
    c.mbufs = o.mbufs;
    c.tx_hold = o.tx_hold;
    c.queues = static_cast<uint16_t>(o.lanes);
    c.promiscuous = o.mac != wire::MacAddr{};
    for (const auto& [ip, mac] : o.neigh) c.neighbours.push_back({ip, mac});
    auto qs = io::DpdkIo::create_queues(c);
    if (!qs.ok()) return qs.status();
    for (std::unique_ptr<io::DpdkIo>& d : *qs) {
      Io out;
      out.dpdk = d.get();
      out.backend = d.get();
      out.mac = d->mac();
      out.max_frame = d->max_frame();
      const io::Offloads& off = d->offloads();
      out.description = absl::StrFormat(
          "dpdk port %u (%s) queue %u mac %s mtu %u (frames up to %u B), rx csum offload %s, tx "
          "csum offload %s (unused)",
          c.port_id, d->driver_name(), d->queue(), mac_str(out.mac), d->mtu(), d->max_frame(),
          off.rx_ipv4_checksum || off.rx_udp_checksum ? "on" : "n/a",
          off.tx_ipv4_checksum || off.tx_udp_checksum ? "available" : "n/a");
      if (o.lanes > 1 && d->queue() == 0) std::printf("uet-perf: steering: %s\n", d->steering().c_str());
      set.lanes.push_back(out);
      set.backends.push_back(std::move(d));
    }
    return set;
#else
    (void)eal_args;
    return absl::UnimplementedError("--io=dpdk: not built (libdpdk was not found at configure time)");
#endif
  }
  if (o.io == "uring") {
#ifdef UET_PERF_HAVE_URING
    if (eal_args.size() > 1) std::fprintf(stderr, "uet-perf: --io=uring ignores the arguments after --\n");
    io::UringIoConfig c;
    c.local_ip4 = o.ip;
    c.udp_port = o.uet ? 4793 : 4791;
    c.local_mac = o.mac != wire::MacAddr{} ? o.mac
                                           : wire::MacAddr{0x02, 0, static_cast<uint8_t>(o.ip >> 24),
                                                           static_cast<uint8_t>(o.ip >> 16),
                                                           static_cast<uint8_t>(o.ip >> 8),
                                                           static_cast<uint8_t>(o.ip)};
    // §5.2: TSS authenticates the UDP ports, but the socket, not the engine, picks the source
    // port; so one socket sends, and the engine seals its port instead of the EV.
    if (o.tss) c.ev_sockets = 1;
    auto u = io::UringIo::create(c);
    if (!u.ok()) return u.status();
    Io out;
    out.uring = u->get();
    out.backend = u->get();
    out.mac = c.local_mac;
    out.max_frame = c.frame_capacity;
    const io::UringSetup& su = (*u)->setup();
    out.rx_socket_bytes = su.rx_socket_bytes;
    out.rx_socket_capped = su.rx_socket_capped;
    out.description = absl::StrFormat(
        "io_uring UDP %s:%u, receive socket %u bytes%s, %s", ip_str(o.ip), c.udp_port,
        su.rx_socket_bytes,
        su.rx_socket_capped
            ? absl::StrFormat(" (asked %u: capped by net.core.rmem_max, raise it for more in flight)",
                              c.socket_buffer_bytes)
            : std::string(),
        su.coop_taskrun ? "cooperative task running" : "task running by interrupt (kernel < 5.19)");
    if (o.tss) {
      out.udp_source_port = (*u)->ev_ports()[0];
      absl::StrAppendFormat(&out.description, ", TSS: every frame from source port %u",
                            out.udp_source_port);
    }
    set.lanes.push_back(out);
    set.backends.push_back(std::move(*u));
    return set;
#else
    (void)eal_args;
    return absl::UnimplementedError("--io=uring: not built (dpdk-io/uring_io.h / uet_uring missing)");
#endif
  }
  return absl::InvalidArgumentError("--io=" + o.io + " unknown: dpdk or uring");
}

// ---------------------------------------------------------------------------------------------
// The control connection: text lines "WORD key=value ...".

using Fields = std::map<std::string, std::string>;

class Oob {
 public:
  Oob() = default;
  explicit Oob(int fd) : fd_(fd) {}
  Oob(Oob&& o) noexcept : fd_(std::exchange(o.fd_, -1)), buf_(std::move(o.buf_)) {}
  Oob& operator=(Oob&& o) noexcept {
    std::swap(fd_, o.fd_);
    std::swap(buf_, o.buf_);
    return *this;
  }
  ~Oob() {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status send(const std::string& word, const Fields& f) {
    std::string line = word;
    for (const auto& [k, v] : f) absl::StrAppend(&line, " ", k, "=", v);
    line += "\n";
    size_t off = 0;
    while (off < line.size()) {
      const ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return absl::UnavailableError("control connection: send failed (peer gone?)");
      off += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  // Waits for one line, calling `idle` (the data path) between checks. Returns its first word
  // in fields["_"].
  absl::StatusOr<Fields> recv(const std::function<void()>& idle, Time timeout) {
    const Time give_up = io::monotonic_now() + timeout;
    uint32_t spins = 0;
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        const std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        Fields f;
        bool first = true;
        const std::vector<std::string> toks = absl::StrSplit(line, ' ', absl::SkipEmpty());
        for (const std::string& tok : toks) {
          if (first) {
            f["_"] = tok;
            first = false;
            continue;
          }
          const std::vector<std::string> kv = absl::StrSplit(tok, absl::MaxSplits('=', 1));
          f[kv[0]] = kv.size() > 1 ? kv[1] : "";
        }
        return f;
      }
      if (g_stop.load(std::memory_order_relaxed)) return absl::CancelledError("interrupted");
      if (io::monotonic_now() > give_up)
        return absl::DeadlineExceededError("control connection: no answer before --timeout_s");
      // Check the socket every 64 idle calls (a syscall), the data path in between.
      if (idle && (++spins & 63) != 0) {
        idle();
        continue;
      }
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, idle ? 0 : 10);
      if (r > 0) {
        char tmp[4096];
        const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n == 0) return absl::UnavailableError("control connection closed by the peer");
        if (n < 0 && errno != EINTR && errno != EAGAIN)
          return absl::UnavailableError("control connection: recv failed");
        if (n > 0) buf_.append(tmp, static_cast<size_t>(n));
      } else if (idle) {
        idle();
      }
    }
  }

  // Waits, without touching the data path, until the peer closes the connection.
  absl::Status wait_closed(Time timeout) {
    const Time give_up = io::monotonic_now() + timeout;
    for (;;) {
      if (g_stop.load(std::memory_order_relaxed)) return absl::CancelledError("interrupted");
      if (io::monotonic_now() > give_up)
        return absl::DeadlineExceededError("control connection: still open after --timeout_s");
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      char tmp[256];
      const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return absl::OkStatus();
    }
  }

  static absl::StatusOr<int> listen_on(uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return absl::InternalError("socket() failed");
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1) != 0) {
      ::close(fd);
      return absl::UnavailableError(absl::StrCat("--oob_port=", port, ": cannot listen (",
                                                 std::string(std::strerror(errno)), ")"));
    }
    return fd;
  }

  static absl::StatusOr<Oob> accept_on(int lfd, Time timeout) {
    const Time give_up = io::monotonic_now() + timeout;
    while (!g_stop.load()) {
      pollfd p{lfd, POLLIN, 0};
      if (::poll(&p, 1, 10) > 0) {
        const int fd = ::accept(lfd, nullptr, nullptr);
        if (fd >= 0) {
          const int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          return Oob(fd);
        }
      }
      if (io::monotonic_now() > give_up)
        return absl::DeadlineExceededError("no client connected before --timeout_s");
    }
    return absl::CancelledError("interrupted");
  }

  static absl::StatusOr<Oob> connect_to(const std::string& host, uint16_t port, Time timeout) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || res == nullptr)
      return absl::InvalidArgumentError("--client=" + host + ": cannot resolve the host");
    const Time give_up = io::monotonic_now() + timeout;
    absl::Status last;
    while (!g_stop.load()) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
        freeaddrinfo(res);
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return Oob(fd);
      }
      if (fd >= 0) ::close(fd);
      if (io::monotonic_now() > give_up) {
        freeaddrinfo(res);
        return absl::DeadlineExceededError(absl::StrCat("--client=", host, " --oob_port=", port,
                                                        ": no server before --timeout_s"));
      }
      usleep(20'000);  // control path: the server may not be listening yet
    }
    freeaddrinfo(res);
    return absl::CancelledError("interrupted");
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

uint64_t field_u64(const Fields& f, const std::string& k, bool* ok) {
  uint64_t v = 0;
  auto it = f.find(k);
  if (it == f.end() || !absl::SimpleAtoi(it->second, &v)) *ok = false;
  return v;
}

// ---------------------------------------------------------------------------------------------
// The data pattern.

uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
uint8_t pattern_byte(uint64_t seed, uint64_t o) {
  return static_cast<uint8_t>(mix(seed + o / 8) >> (8 * (o % 8)));
}
void fill_pattern(std::vector<uint8_t>& v, uint64_t seed, bool complement) {
  const uint64_t x = complement ? ~uint64_t{0} : 0;
  size_t o = 0;
  for (; o + 8 <= v.size(); o += 8) {
    const uint64_t w = mix(seed + o / 8) ^ x;
    std::memcpy(v.data() + o, &w, 8);  // little-endian hosts: byte i = bits 8i..8i+7
  }
  for (; o < v.size(); ++o) v[o] = static_cast<uint8_t>(pattern_byte(seed, o) ^ x);
}

// ---------------------------------------------------------------------------------------------
// Engines.

// Whether `t` holds a key for (sdi, an): the peer's frames in it can be opened (§5.4).
bool has_tss_key(const tss::TssConfig& t, uint64_t sdi, uint64_t an) {
  for (const tss::DomainConfig& d : t.domains)
    if (d.sdi == sdi && an < 2 && d.installed[an]) return true;
  return false;
}

// Zero-copy transmit where the backend gathers (DpdkIo::gathers()) and --zero_copy allows.
bool by_reference(const Options& o, const Io& io) {
#ifdef UET_PERF_HAVE_DPDK
  return io.dpdk != nullptr && io.dpdk->gathers() && o.zero_copy;
#else
  (void)o;
  (void)io;
  return false;
#endif
}

// Payloads sent by reference may still sit in the device's ring: wait until it has let go of
// them before their memory is freed.
void release_references(const Io& io) {
#ifdef UET_PERF_HAVE_DPDK
  if (io.dpdk != nullptr && !io.dpdk->drain_references(kSecond)) {
    std::fprintf(stderr, "uet-perf: the device still holds %lu payloads sent by reference\n",
                 io.dpdk->references_in_flight());
  }
#else
  (void)io;
#endif
}

// peer_rx_payload: payload bytes the peer's receive socket holds (RXCAP), 0 = no bound.
absl::StatusOr<std::unique_ptr<Endpoint>> make_engine(const Options& o, const Io& io,
                                                      uint32_t mtu, uint64_t peer_rx_payload) {
  if (mtu + 160 > io.max_frame) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--mtu=%u too large for the device: frames hold %u bytes, so at most %u", mtu,
        io.max_frame, io.max_frame > 160 ? io.max_frame - 160 : 0));
  }
  if (o.uet) {
    UetConfig c;
    c.local_ip4 = o.ip;
    c.local_mac = io.mac;
    c.resolve_mac = &resolve_mac;
    c.payload_bytes = mtu;
    c.window_bytes = o.window_bytes;
    c.rto = o.rto;
    c.min_rto = o.min_rto;
    c.max_rto = o.max_rto;
    c.rto_rtt_max_pct = o.rto_rtt_max_pct;
    c.max_retries = o.max_retries;
    c.cc = o.cc;
    // The peer's receive socket drops what does not fit: no more than it holds in flight.
    if (peer_rx_payload > 0) c.window_bytes = std::clamp<uint64_t>(peer_rx_payload, mtu, c.window_bytes);
    // io_uring sends the payload after our UDP header through a socket: the kernel computes
    // the real UDP checksum, so computing one here would be wasted work.
    c.udp_checksum = o.io != "uring";
    c.tx_by_reference = by_reference(o, io) && !o.tss;
    if (o.base_rtt > 0) c.base_rtt = o.base_rtt;
    c.seed = o.seed * 2 + (o.server ? 1 : 0);
    if (o.tss) c.tss = *o.tss;
    c.udp_source_port = io.udp_source_port;
    auto e = UetEndpoint::create(c);
    if (!e.ok()) return e.status();
    return std::unique_ptr<Endpoint>(std::move(*e));
  }
  RoceConfig c;
  c.local_ip4 = o.ip;
  c.local_mac = io.mac;
  c.resolve_mac = &resolve_mac;
  c.mtu = mtu;
  c.qpn_base = kQpn;
  c.max_qps = 1;
  c.ack_timeout_exp = static_cast<uint8_t>(o.ack_timeout_exp);
  c.retry_cnt = static_cast<uint8_t>(o.retry_cnt);
  // RC has no send window (go-back-N resends all after one drop): bound the packets in flight
  // by what the peer's receive socket holds.
  if (peer_rx_payload > 0) {
    c.max_outstanding_psns = static_cast<uint32_t>(
        std::clamp<uint64_t>(peer_rx_payload / mtu, 1, c.max_outstanding_psns));
  }
  c.seed = o.seed;
  c.tx_by_reference = by_reference(o, io);
  auto e = RoceEndpoint::create(c);
  if (!e.ok()) return e.status();
  return std::unique_ptr<Endpoint>(std::move(*e));
}

// ---------------------------------------------------------------------------------------------
// Results.

struct Result {
  bool ok = true;
  std::string error;
  uint64_t completed = 0;
  uint64_t failed = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  // From the last successful completion to the first error completion (-1: no error): how
  // long the engine took to give up on a peer that went silent.
  double error_after_ms = -1;
  uint64_t tx_packets = 0, rx_packets = 0;
  std::vector<double> lat_us;
  std::string verify = "n/a";  // server: ok | mismatch
  uint64_t mismatched_bytes = 0, checked_bytes = 0;
};

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())));
  return sorted[i];
}

// TSS (spec/uet.md §5) with --tss: the sublayer's counters and the clear frames the endpoint
// refused.
struct TssOut {
  bool on = false;
  tss::Counters c;
  uint64_t clear_refused = 0;
  void add(const TssOut& t) {
    on = on || t.on;
    c.sealed += t.c.sealed;
    c.seal_failed += t.c.seal_failed;
    c.opened += t.c.opened;
    c.trimmed_unverified += t.c.trimmed_unverified;
    c.rekeys += t.c.rekeys;
    for (size_t i = 0; i < c.drops.size(); ++i) c.drops[i] += t.c.drops[i];
    clear_refused += t.clear_refused;
  }
  uint64_t drops(tss::Drop d) const { return c.drops[static_cast<size_t>(d)]; }
};

TssOut tss_of(const Options& o, const Endpoint& ep) {
  TssOut t;
  if (!o.uet) return t;
  const auto& u = static_cast<const UetEndpoint&>(ep);
  if (u.tss() == nullptr) return t;
  t.on = true;
  t.c = u.tss()->counters();
  t.clear_refused = u.counters().rx_clear_refused;
  return t;
}

// " (bad_tag 3, replay 1)": the reasons that dropped something.
std::string tss_drop_reasons(const TssOut& t) {
  std::string out;
  for (size_t i = 0; i < t.c.drops.size(); ++i) {
    if (t.c.drops[i] == 0) continue;
    absl::StrAppend(&out, out.empty() ? " (" : ", ", tss::drop_name(static_cast<tss::Drop>(i)), " ",
                    t.c.drops[i]);
  }
  return out.empty() ? out : out + ")";
}

std::string tss_json(const TssOut& t) {
  if (!t.on) return "null";
  std::string drops;
  for (size_t i = 0; i < t.c.drops.size(); ++i) {
    absl::StrAppendFormat(&drops, "%s\"%s\": %lu", i == 0 ? "" : ", ",
                          tss::drop_name(static_cast<tss::Drop>(i)), t.c.drops[i]);
  }
  return absl::StrFormat(
      "{\"sealed\": %lu, \"opened\": %lu, \"dropped\": %lu, \"drops\": {%s}, "
      "\"seal_failed\": %lu, \"trimmed_unverified\": %lu, \"rekeys\": %lu, "
      "\"clear_refused\": %lu}",
      t.c.sealed, t.c.opened, t.c.dropped(), drops, t.c.seal_failed, t.c.trimmed_unverified,
      t.c.rekeys, t.clear_refused);
}

// What a lane hands back to the main thread once it has joined.
struct LaneOut {
  int rc = 1;
  Result r;
  double gbps = 0, mpps = 0, pkt_mpps = 0;
  uint64_t size = 0;
  io::IoStats frames;
  uint64_t lost = 0, retransmitted = 0, timeouts = 0;
  uint64_t socket_drops = 0;  // uring: datagrams the receive socket dropped (SO_RXQ_OVFL)
  // RXCAP: this side's receive socket as granted, whether rmem_max capped it, the peer's, and
  // the payload bytes this side keeps in flight at most because of it (0: no bound).
  uint64_t rx_socket_bytes = 0, peer_rx_socket_bytes = 0, inflight_bound = 0;
  bool rx_socket_capped = false;
  Time rtt_max = 0;                // UET: the largest RTT sample
  uint64_t rto_below_rtt_max = 0;  // UET: RTOs raised (past min_rto) to --rto_rtt_max_pct of it
  uint64_t tlp_probes = 0, fast_retx = 0;  // UET: resends by tail-loss probe, by reorder
  uint64_t go_back_n = 0;          // RoCEv2: restarts from a PSN
  TssOut tss;
  // The server: the control connection, open until the port is closed (the client waits).
  Oob control;
  // DPDK: the pool's mbufs and how many were still out of it once every lane had stopped and
  // drained its backlog (-1: not measured, e.g. io_uring); the backend's TX backpressure.
  int64_t mbufs_pool = -1, mbufs_in_use_end = -1;
  uint64_t tx_ring_full = 0, tx_ring_full_waits = 0, tx_stalled = 0, tx_stalls = 0,
           tx_drained = 0;
  bool reported = false;  // report() ran (else the lane failed before its operations)
  Options shown;          // the options as run (the client's parameters adopted)
  std::string json;  // the lane's result as one JSON object
};

// The longest a silent peer keeps an operation pending before the engine fails it: UET gives
// up a PDC after max_retries + 1 timeouts of one PSN (spec/uet.md §3.10, "complete the messages
// with an error when the retry limit is reached"), each up to two RTOs of at most max_rto (the
// PDC's timer is re-armed at its expiry, so a PSN resent just after it waits one more); RoCEv2
// fails the QP once retry_cnt go-back-N restarts found no progress, one ACK timeout apart (IB
// retry count, IB_WC_RETRY_EXC_ERR). kNever: no budget (retry_cnt 7).
Time retry_budget(const Options& o) {
  if (o.uet) return 2 * static_cast<Time>(o.max_retries + 1) * o.max_rto;
  if (o.retry_cnt == 7) return kNever;
  return static_cast<Time>(o.retry_cnt + 1) * ((Time{4096} * kNanosecond) << o.ack_timeout_exp);
}

// How long the tool waits without progress (no completion; the server: no frame and no DONE)
// before it gives up: --timeout_s past the retry budget, so that the engine, not the tool,
// decides whether a silent peer's operations fail.
Time stall_bound(const Options& o) {
  const Time budget = retry_budget(o);
  return budget == kNever ? o.timeout : o.timeout + budget;
}

std::string json_of(const Options& o, const LaneOut& l) {
  const Result& r = l.r;
  double sum = 0;
  for (double v : r.lat_us) sum += v;
  return absl::StrFormat(
      "{\"tool\": \"uet-perf\", \"role\": \"%s\", \"transport\": \"%s\", \"io\": \"%s\", "
      "\"op\": \"%s\", \"bidir\": %s, \"mode\": \"%s\", \"lane\": %u, \"local_ip\": \"%s\", "
      "\"bytes\": %lu, "
      "\"iterations\": %lu, "
      "\"failed\": %lu, \"total_bytes\": %lu, \"seconds\": %.6f, \"bw_gbps\": %.4f, "
      "\"msg_mpps\": %.6f, \"pkt_mpps\": %.6f, \"latency_us\": {\"samples\": %zu, "
      "\"min\": %.3f, \"p50\": %.3f, \"p99\": %.3f, \"p999\": %.3f, \"max\": %.3f, "
      "\"avg\": %.3f}, \"frames\": {\"tx\": %lu, \"rx\": %lu, \"tx_dropped\": %lu, "
      "\"rx_dropped\": %lu, \"injected_loss\": %lu}, \"retransmitted\": %lu, \"timeouts\": %lu, "
      "\"verify\": \"%s\", \"checked_bytes\": %lu, \"mismatched_bytes\": %lu, \"mtu\": %u, "
      "\"loss\": %g, \"seed\": %lu, \"base_rtt_us\": %.3f, \"ok\": %s, \"error\": \"%s\", "
      "\"tss\": %s, \"cc\": \"%s\", \"rto_us\": %.0f, \"min_rto_us\": %.0f, "
      "\"max_rto_us\": %.0f, \"rto_rtt_max_pct\": %u, \"ack_timeout_exp\": %u, "
      "\"socket_drops\": %lu, \"rx_socket_bytes\": %lu, \"rx_socket_capped\": %s, "
      "\"peer_rx_socket_bytes\": %lu, \"inflight_bound\": %lu, \"rtt_max_us\": %.3f, "
      "\"rto_below_rtt_max\": %lu, \"tlp_probes\": %lu, \"fast_retx\": %lu, "
      "\"go_back_n\": %lu, \"error_completions\": %lu, \"max_retries\": %u, "
      "\"retry_cnt\": %u, \"retry_budget_ms\": %.3f, \"error_after_ms\": %.3f, "
      "\"mbufs\": %s, \"dpdk_tx\": %s}",
      o.server ? "server" : "client", o.uet ? "uet" : "rocev2", o.io, o.op,
      o.bidir ? "true" : "false", o.lat ? "latency" : "bandwidth", o.lane, ip_str(o.ip), l.size,
      r.completed, r.failed, r.bytes, r.seconds, l.gbps, l.mpps, l.pkt_mpps, r.lat_us.size(),
      percentile(r.lat_us, 0), percentile(r.lat_us, 0.5), percentile(r.lat_us, 0.99),
      percentile(r.lat_us, 0.999), r.lat_us.empty() ? 0.0 : r.lat_us.back(),
      r.lat_us.empty() ? 0.0 : sum / static_cast<double>(r.lat_us.size()), l.frames.tx_packets,
      l.frames.rx_packets, l.frames.tx_dropped, l.frames.rx_dropped, l.lost, l.retransmitted,
      l.timeouts, r.verify, r.checked_bytes, r.mismatched_bytes, o.mtu, o.loss, o.seed,
      static_cast<double>(o.base_rtt) / kMicrosecond, r.ok ? "true" : "false", r.error,
      tss_json(l.tss), o.uet ? to_string(o.cc) : "n/a", static_cast<double>(o.rto) / kMicrosecond,
      static_cast<double>(o.min_rto) / kMicrosecond, static_cast<double>(o.max_rto) / kMicrosecond,
      o.rto_rtt_max_pct, o.ack_timeout_exp, l.socket_drops, l.rx_socket_bytes,
      l.rx_socket_capped ? "true" : "false", l.peer_rx_socket_bytes, l.inflight_bound,
      static_cast<double>(l.rtt_max) / kMicrosecond, l.rto_below_rtt_max, l.tlp_probes,
      l.fast_retx, l.go_back_n, r.failed, o.max_retries, o.retry_cnt,
      retry_budget(o) == kNever ? -1.0 : static_cast<double>(retry_budget(o)) / kMillisecond,
      r.error_after_ms,
      l.mbufs_pool < 0 ? std::string("null")
                       : absl::StrFormat("{\"pool\": %d, \"in_use_end\": %d}", l.mbufs_pool,
                                         l.mbufs_in_use_end),
      l.mbufs_pool < 0
          ? std::string("null")
          : absl::StrFormat("{\"ring_full\": %lu, \"ring_full_waits\": %lu, \"stalled\": %lu, "
                            "\"stalls\": %lu, \"drained\": %lu}",
                            l.tx_ring_full, l.tx_ring_full_waits, l.tx_stalled, l.tx_stalls,
                            l.tx_drained));
}

bool write_json(const std::string& path, const std::string& text) {
  if (path.empty()) return true;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "uet-perf: --json=%s: cannot open for writing\n", path.c_str());
    return false;
  }
  std::fputs(text.c_str(), f);
  std::fputs("\n", f);
  std::fclose(f);
  return true;
}

// Prints the lane's table in one write (lanes run concurrently) and fills `out`.
void report(const Options& o, const Io& io, TapIo& tap, const Endpoint& ep, Result& r,
            uint64_t size, LaneOut& out) {
  const io::IoStats s = io.backend->stats();
  const EndpointStats es = ep.stats();
  const double gbps = r.seconds > 0 ? static_cast<double>(r.bytes) * 8 / r.seconds / 1e9 : 0;
  const double mpps = r.seconds > 0 ? static_cast<double>(r.completed) / r.seconds / 1e6 : 0;
  const double pkt_mpps = r.seconds > 0 ? static_cast<double>(r.tx_packets) / r.seconds / 1e6 : 0;
  std::sort(r.lat_us.begin(), r.lat_us.end());
  const char* mode = o.lat ? "latency" : "bandwidth";
  const std::string rule(87, '-');
  std::string t = rule + "\n";
  // perftest's titles: RDMA_Write / RDMA_Read / Send.
  const char* title = o.op == "read" ? "RDMA_Read" : o.op == "send" ? "Send" : "RDMA_Write";
  absl::StrAppendFormat(&t, " %s %s test, transport %s, io %s, %s%s\n", title, mode,
                        o.uet ? "uet" : "rocev2", o.io, o.server ? "server" : "client",
                        o.lanes > 1 ? absl::StrFormat(", lane %u (lcore %u of %u), %s", o.lane,
                                                      o.lane, o.lanes, ip_str(o.ip))
                                    : std::string());
  if (!o.server) {
    if (o.lat) {
      absl::StrAppendFormat(&t, " %-10s %-12s %-10s %-10s %-10s %-10s %-10s %-10s\n", "#bytes",
                            "#iterations", "t_min[us]", "t_p50[us]", "t_p99[us]", "t_p99.9[us]",
                            "t_max[us]", "t_avg[us]");
      double sum = 0;
      for (double v : r.lat_us) sum += v;
      absl::StrAppendFormat(&t, " %-10lu %-12lu %-10.2f %-10.2f %-10.2f %-10.2f %-10.2f %-10.2f\n",
                            size, r.completed, percentile(r.lat_us, 0), percentile(r.lat_us, 0.5),
                            percentile(r.lat_us, 0.99), percentile(r.lat_us, 0.999),
                            r.lat_us.empty() ? 0.0 : r.lat_us.back(),
                            r.lat_us.empty() ? 0.0 : sum / static_cast<double>(r.lat_us.size()));
    } else {
      absl::StrAppendFormat(&t, " %-10s %-12s %-20s %-14s %-14s %-10s\n", "#bytes", "#iterations",
                            "BW average[Gb/sec]", "MsgRate[Mpps]", "PktRate[Mpps]", "seconds");
      absl::StrAppendFormat(&t, " %-10lu %-12lu %-20.3f %-14.6f %-14.6f %-10.3f\n", size,
                            r.completed, gbps, mpps, pkt_mpps, r.seconds);
    }
  }
  absl::StrAppendFormat(&t,
                        " frames tx %lu rx %lu, dropped tx %lu rx %lu, injected loss %lu; "
                        "retransmitted %lu, timeouts %lu, engine rx drops %lu\n",
                        s.tx_packets, s.rx_packets, s.tx_dropped, s.rx_dropped, tap.lost(),
                        es.retransmitted_packets, es.timeouts, es.rx_dropped);
  if (o.uet) {
    const UetCounters& k = static_cast<const UetEndpoint&>(ep).counters();
    out.rtt_max = k.rtt_max;
    out.rto_below_rtt_max = k.rto_below_rtt_max;
    out.tlp_probes = k.tlp_probes;
    out.fast_retx = k.fast_retx;
    absl::StrAppendFormat(&t, " rto: %.0f us (min %.0f, max %.0f), largest rtt %.1f us, RTO "
                              "raised to %u %% of it %lu times; resent by probe %lu, by reorder "
                              "%lu, by NACK %lu; cc %s\n",
                          static_cast<double>(o.rto) / kMicrosecond,
                          static_cast<double>(o.min_rto) / kMicrosecond,
                          static_cast<double>(o.max_rto) / kMicrosecond,
                          static_cast<double>(k.rtt_max) / kMicrosecond, o.rto_rtt_max_pct,
                          k.rto_below_rtt_max, k.tlp_probes, k.fast_retx, k.nack_retx,
                          to_string(o.cc));
    absl::StrAppendFormat(&t, " pdc: rx unknown-pdc %lu out-of-window %lu duplicates %lu "
                              "stale-ack %lu bad-ctrl %lu; close tx %lu rx %lu, req-close tx %lu "
                              "rx %lu, closed %lu, abandoned %lu/%lu, reopened %lu\n",
                          k.rx_unknown_pdc, k.rx_out_of_window, k.rx_duplicates, k.rx_stale_ack,
                          k.rx_bad_ctrl, k.tx_close, k.rx_close, k.tx_req_close, k.rx_req_close,
                          k.pdcs_closed, k.close_abandoned, k.req_close_abandoned, k.pdc_reopened);
  } else {
    out.go_back_n = static_cast<const RoceEndpoint&>(ep).counters().go_back_n;
    absl::StrAppendFormat(&t, " ack timeout 4.096 us * 2^%u; go-back-N restarts %lu\n",
                          o.ack_timeout_exp, out.go_back_n);
  }
#ifdef UET_PERF_HAVE_URING
  if (io.uring != nullptr) {
    out.socket_drops = io.uring->counters().rx_kernel_dropped;
    out.rx_socket_bytes = io.rx_socket_bytes;
    out.rx_socket_capped = io.rx_socket_capped;
    absl::StrAppendFormat(&t,
                          " receive socket %lu bytes%s, dropped %lu; peer's %lu bytes: at most "
                          "%lu payload bytes in flight\n",
                          out.rx_socket_bytes, out.rx_socket_capped ? " (capped by rmem_max)" : "",
                          out.socket_drops, out.peer_rx_socket_bytes, out.inflight_bound);
  }
#endif
  const TssOut tss = tss_of(o, ep);
  if (tss.on) {
    absl::StrAppendFormat(&t,
                          " tss: sealed %lu, opened %lu, dropped %lu%s; seal failed %lu, trimmed "
                          "unverified %lu, clear refused %lu, packet keys derived %lu\n",
                          tss.c.sealed, tss.c.opened, tss.c.dropped(), tss_drop_reasons(tss),
                          tss.c.seal_failed, tss.c.trimmed_unverified, tss.clear_refused,
                          tss.c.rekeys);
  }
  if (o.server) {
    absl::StrAppendFormat(&t, " data check: %s (%lu bytes checked, %lu mismatched)\n", r.verify,
                          r.checked_bytes, r.mismatched_bytes);
  }
  if (!r.error.empty()) absl::StrAppendFormat(&t, " error: %s\n", r.error);
  t += rule + "\n";
#ifdef UET_PERF_HAVE_DPDK
  if (io.dpdk != nullptr) {
    const io::DpdkCounters& c = io.dpdk->counters();
    absl::StrAppendFormat(&t,
                          " dpdk: arp rx %lu answered %lu sent %lu learned %lu; tx no-neighbour %lu "
                          "ring-full %lu too-big %lu; rx not-ip %lu bad-csum %lu multi-seg %lu\n"
                          " dpdk: payloads sent by reference %lu, copied %lu (no small mbuf %lu)\n",
                          c.arp_rx, c.arp_requests_answered, c.arp_requests_sent, c.arp_learned,
                          c.tx_no_neighbour, c.tx_ring_full, c.tx_too_big, c.rx_not_ip,
                          c.rx_bad_checksum, c.rx_multi_segment, c.tx_referenced, c.tx_flattened,
                          c.tx_no_ext_mbuf);
    absl::StrAppendFormat(&t,
                          " dpdk tx backpressure: bursts held %lu; device took nothing for "
                          "--tx_hold_us %lu times (%lu frames dropped); left at the end %lu\n",
                          c.tx_ring_full_waits, c.tx_stalls, c.tx_stalled, c.tx_drained);
    out.tx_ring_full = c.tx_ring_full;
    out.tx_ring_full_waits = c.tx_ring_full_waits;
    out.tx_stalled = c.tx_stalled;
    out.tx_stalls = c.tx_stalls;
    out.tx_drained = c.tx_drained;
    if (o.lanes > 1) {
      absl::StrAppendFormat(&t, " dpdk queue %u: redirected to other FEPs %lu (inbox full %lu), "
                                "from other queues %lu\n",
                            io.dpdk->queue(), c.rx_redirected, c.rx_redirect_full, c.rx_from_inbox);
    }
    if (o.xstats && o.lane == 0) {
      for (const auto& [name, v] : io.dpdk->xstats())
        if (v != 0) absl::StrAppendFormat(&t, " xstat %-40s %lu\n", name, v);
    }
  }
#endif
  std::fputs(t.c_str(), stdout);
  std::fflush(stdout);
  out.r = r;
  out.gbps = gbps;
  out.mpps = mpps;
  out.pkt_mpps = pkt_mpps;
  out.size = size;
  out.frames = s;
  out.lost = tap.lost();
  out.retransmitted = es.retransmitted_packets;
  out.timeouts = es.timeouts;
  out.tss = tss;
  out.reported = true;
}

// ---------------------------------------------------------------------------------------------
// The run.

// RXCAP: payload bytes a receive socket granted `granted` bytes holds with room to spare. The
// kernel charges each datagram its buffer's true size, about twice a payload (socket(7));
// half of the rest is left for the peer's other datagrams and for slack.
uint64_t rx_payload_bound(uint64_t granted) { return granted / 4; }

// Region layout both sides derive from the client's parameters.
uint64_t slots_for(uint64_t size, uint64_t iters, bool by_duration) {
  uint64_t slots = std::max<uint64_t>(1, kRegionCap / size);
  if (!by_duration) slots = std::min(slots, iters);
  return slots;
}

// Resolves `peer` (ARP through the data path when needed), then meets the peer at a barrier.
absl::Status resolve_and_meet(Io& io, Oob& oob, uint32_t peer, const std::function<void()>& idle,
                              Time timeout) {
  const Time give_up = io::monotonic_now() + timeout;
  Time next_ask = 0;
  while (!io.resolved(peer, false)) {
    if (g_stop.load()) return absl::CancelledError("interrupted");
    const Time now = io::monotonic_now();
    if (now > give_up)
      return absl::DeadlineExceededError(absl::StrCat(
          "no ARP answer from ", ip_str(peer), " before --timeout_s (or give --neigh=IP=MAC)"));
    if (now >= next_ask) {
      io.resolved(peer, true);
      next_ask = now + 20 * kMillisecond;
    }
    idle();
  }
  if (auto s = oob.send("RESOLVED", {}); !s.ok()) return s;
  auto f = oob.recv(idle, timeout);
  if (!f.ok()) return f.status();
  if ((*f)["_"] != "RESOLVED") return absl::InternalError("control: expected RESOLVED");
  return absl::OkStatus();
}

// One lane: the control connection, one engine over one backend, the writes (client) or the
// check (server). `o` is the lane's copy of the options (ip, oob_port and seed offset by the
// lane); `listen_fd` the server's bound control socket.
int run_lane(const Options& o, Io& io, int listen_fd, LaneOut& out) {
  std::printf("uet-perf: %s, local %s\n", io.description.c_str(), ip_str(o.ip).c_str());
  for (const auto& [ip, mac] : o.neigh) resolver_table()[ip] = mac;

  std::optional<wire::PcapWriter> pcap;
  if (std::string path = o.pcap_path; !path.empty()) {
    if (o.lanes > 1) absl::StrAppend(&path, ".", o.lane);  // one capture per lane
    auto w = wire::PcapWriter::open(path);
    if (!w.ok()) {
      std::fprintf(stderr, "uet-perf: --pcap=%s: %s\n", path.c_str(),
                   std::string(w.status().message()).c_str());
      return 1;
    }
    pcap.emplace(std::move(*w));
  }
  TapIo tap(*io.backend, o.loss, mix(o.seed ^ (o.server ? 0x5e : 0xc1)), std::move(pcap));

  out.shown = o;
  auto fail = [&](const absl::Status& s) {
    std::fprintf(stderr, "uet-perf: %s%s\n",
                 o.lanes > 1 ? absl::StrFormat("lane %u: ", o.lane).c_str() : "",
                 std::string(s.message()).c_str());
    out.r.ok = false;
    out.r.error = std::string(s.message());
#ifdef UET_PERF_HAVE_DPDK
    if (io.dpdk != nullptr) io.dpdk->drain_tx();
#endif
    tap.close();
    return g_stop.load() ? 130 : 1;
  };

  // Control connection.
  Oob oob;
  if (o.server) {
    auto c = Oob::accept_on(listen_fd, o.timeout);
    if (!c.ok()) return fail(c.status());
    oob = std::move(*c);
  } else {
    auto c = Oob::connect_to(o.server_host, o.oob_port, o.timeout);
    if (!c.ok()) return fail(c.status());
    oob = std::move(*c);
  }
#ifdef UET_PERF_HAVE_DPDK
  if (io.dpdk != nullptr && !io.dpdk->wait_link_up(o.timeout))
    return fail(absl::UnavailableError("the DPDK port's link did not come up before --timeout_s"));
#endif

  // Parameters: the client's win; the server checks what must match.
  const uint32_t sq_psn = static_cast<uint32_t>(mix(o.seed ^ (o.server ? 0x11 : 0x22))) & 0xFFFFFF;
  uint64_t size = o.size, iters = o.iters, slots = 0, duration_s = o.duration_s, seed = o.seed;
  uint32_t mtu = o.mtu;
  bool lat = o.lat;
  std::string op = o.op;  // the client's choice; the server learns it from HELLO
  bool bidir = o.bidir;   // likewise
  Time base_rtt = o.base_rtt;  // UET: given, measured (client) or learnt from HELLO (server)
  uint32_t back_rkey = 0;  // --bidir: the client's region, the server's writes' target
  // --bidir: the server's writes carry a different pattern than the client's, so a write that
  // lands in the wrong direction cannot pass the check.
  const uint64_t kBackSalt = 0xB1D1;
  uint32_t peer_ip = 0, peer_qpn = 0, peer_psn = 0, rkey = 0;
  uint64_t peer_rx_socket = 0;  // RXCAP: the peer's receive socket as granted (0: no bound)
  CcMode cc = o.cc;             // UET: the client's, adopted by the server
  std::unique_ptr<Endpoint> ep;
  std::vector<uint8_t> region;
  std::unique_ptr<io::HostLoop> loop;
  std::function<void()> idle = [&] {
    if (loop) {
      loop->poll_once();
    } else {
      Frame* f[io::kMaxBurst];
      const size_t n = tap.rx_burst(f);
      tap.release_rx({f, n});
    }
  };

  if (!o.server) {
    slots = slots_for(size, iters, duration_s > 0);
    // The path's round trip for NSCC, unless given: the smallest of 16 round trips over the
    // control connection (same hosts and kernel; the simulator's 12 us base RTT would make
    // NSCC read every real queueing and scheduling delay as congestion and shrink the window
    // to a packet). The server adopts it from HELLO.
    Options eo = o;
    if (eo.uet && eo.base_rtt == 0) {
      Time best = kNever;
      for (int i = 0; i < 16; ++i) {
        const Time t0 = io::monotonic_now();
        if (auto s = oob.send("PING", {{"i", std::to_string(i)}}); !s.ok()) return fail(s);
        auto pong = oob.recv(idle, o.timeout);
        if (!pong.ok()) return fail(pong.status());
        if ((*pong)["_"] != "PONG") return fail(absl::InternalError("control: expected PONG"));
        best = std::min(best, io::monotonic_now() - t0);
      }
      eo.base_rtt = std::clamp<Time>(best, kMicrosecond, 100 * kMillisecond);
      std::printf("uet-perf: base RTT %.1f us (control connection, min of 16)\n",
                  static_cast<double>(eo.base_rtt) / kMicrosecond);
    }
    base_rtt = eo.base_rtt;
    // RXCAP: each side tells the other its receive socket, so neither sends more than fits.
    if (auto s = oob.send("RXCAP", {{"bytes", std::to_string(io.rx_socket_bytes)}}); !s.ok())
      return fail(s);
    auto cap = oob.recv(idle, o.timeout);
    if (!cap.ok()) return fail(cap.status());
    bool cap_ok = (*cap)["_"] == "RXCAP";
    peer_rx_socket = field_u64(*cap, "bytes", &cap_ok);
    if (!cap_ok) return fail(absl::InternalError("control: expected RXCAP bytes=N"));
    auto e = make_engine(eo, io, mtu, rx_payload_bound(peer_rx_socket));
    if (!e.ok()) return fail(e.status());
    cc = eo.cc;
    ep = std::move(*e);
    if (bidir) {
      region.resize(slots * size);
      fill_pattern(region, seed ^ kBackSalt, /*complement=*/true);
      auto k = ep->register_memory(region.data(), region.size());
      if (!k.ok()) return fail(k.status());
      back_rkey = *k;
    }
    if (auto s = oob.send("HELLO", {{"v", "1"},
                                    {"bidir", bidir ? "1" : "0"},
                                    {"back_rkey", std::to_string(back_rkey)},
                                    {"transport", o.uet ? "uet" : "rocev2"},
                                    {"op", op},
                                    {"size", std::to_string(size)},
                                    {"iters", std::to_string(iters)},
                                    {"duration", std::to_string(duration_s)},
                                    {"slots", std::to_string(slots)},
                                    {"mtu", std::to_string(mtu)},
                                    {"lat", lat ? "1" : "0"},
                                    {"seed", std::to_string(seed)},
                                    {"ip", std::to_string(o.ip)},
                                    {"mac", mac_str(io.mac)},
                                    {"qpn", std::to_string(kQpn)},
                                    {"psn", std::to_string(sq_psn)},
                                    {"lanes", std::to_string(o.lanes)},
                                    {"base_rtt_ps", std::to_string(eo.base_rtt)},
                                    {"cc", to_string(eo.cc)},
                                    {"tss", o.tss ? "1" : "0"},
                                    {"tss_sdi", o.tss ? std::to_string(o.tss->tx_sdi) : "0"},
                                    {"tss_an", o.tss ? std::to_string(o.tss->tx_an) : "0"},
                                    {"lane", std::to_string(o.lane)}});
        !s.ok())
      return fail(s);
    auto w = oob.recv(idle, o.timeout);
    if (!w.ok()) return fail(w.status());
    if ((*w)["_"] == "ERROR") return fail(absl::FailedPreconditionError(
          "server refused: " + absl::StrReplaceAll((*w)["why"], {{"_", " "}})));
    bool ok = (*w)["_"] == "WELCOME";
    peer_ip = static_cast<uint32_t>(field_u64(*w, "ip", &ok));
    peer_qpn = static_cast<uint32_t>(field_u64(*w, "qpn", &ok));
    peer_psn = static_cast<uint32_t>(field_u64(*w, "psn", &ok));
    rkey = static_cast<uint32_t>(field_u64(*w, "rkey", &ok));
    if (!ok) return fail(absl::InternalError("control: malformed WELCOME"));
    if (o.tss) {
      const uint64_t sdi = field_u64(*w, "tss_sdi", &ok), an = field_u64(*w, "tss_an", &ok);
      if (!ok || !has_tss_key(*o.tss, sdi, an)) {
        return fail(absl::FailedPreconditionError(absl::StrCat(
            "the server sends TSS in sdi ", sdi, " an ", an,
            ", for which this side's --key_file has no key (use the same file on both sides)")));
      }
    }
    std::printf("uet-perf: server %s mac %s qpn 0x%x psn %u rkey %u\n", ip_str(peer_ip).c_str(),
                (*w)["mac"].c_str(), peer_qpn, peer_psn, rkey);
  } else {
    auto h = oob.recv(nullptr, o.timeout);
    // The client measures the round trip (PING) and tells its receive socket (RXCAP).
    while (h.ok() && ((*h)["_"] == "PING" || (*h)["_"] == "RXCAP")) {
      if ((*h)["_"] == "PING") {
        if (auto s = oob.send("PONG", {{"i", (*h)["i"]}}); !s.ok()) return fail(s);
      } else {
        bool cap_ok = true;
        peer_rx_socket = field_u64(*h, "bytes", &cap_ok);
        if (!cap_ok) return fail(absl::InternalError("control: malformed RXCAP"));
        if (auto s = oob.send("RXCAP", {{"bytes", std::to_string(io.rx_socket_bytes)}}); !s.ok())
          return fail(s);
      }
      h = oob.recv(nullptr, o.timeout);
    }
    if (!h.ok()) return fail(h.status());
    Fields& f = *h;
    bool ok = f["_"] == "HELLO";
    size = field_u64(f, "size", &ok);
    iters = field_u64(f, "iters", &ok);
    duration_s = field_u64(f, "duration", &ok);
    slots = field_u64(f, "slots", &ok);
    mtu = static_cast<uint32_t>(field_u64(f, "mtu", &ok));
    lat = field_u64(f, "lat", &ok) != 0;
    op = f.count("op") ? f["op"] : "write";
    bidir = f.count("bidir") && f["bidir"] == "1";
    back_rkey = f.count("back_rkey") ? static_cast<uint32_t>(field_u64(f, "back_rkey", &ok)) : 0;
    seed = field_u64(f, "seed", &ok);
    peer_ip = static_cast<uint32_t>(field_u64(f, "ip", &ok));
    peer_qpn = static_cast<uint32_t>(field_u64(f, "qpn", &ok));
    peer_psn = static_cast<uint32_t>(field_u64(f, "psn", &ok));
    std::string why;
    if (!ok) why = "malformed HELLO";
    if (why.empty() && f["transport"] != (o.uet ? "uet" : "rocev2"))
      why = absl::StrCat("transport mismatch: server --transport=", o.uet ? "uet" : "rocev2",
                         ", client ", f["transport"]);
    const uint64_t lanes = f.count("lanes") ? field_u64(f, "lanes", &ok) : 1;
    if (why.empty() && lanes != o.lanes)
      why = absl::StrCat("--lcores_io mismatch: server ", o.lanes, ", client ", lanes);
    const uint32_t server_base = o.ip - o.lane;
    if (why.empty() && peer_ip - server_base < o.lanes)
      why = absl::StrCat("address clash: the client's --ip ", ip_str(peer_ip), " is one of the server's ",
                         ip_str(server_base), " + 0..", o.lanes - 1);
    if (why.empty() && (size == 0 || size > 67108864 || slots == 0 || slots * size > kRegionCap + size))
      why = "size/slots out of range";
    if (why.empty() && op != "write" && op != "read" && op != "send")
      why = absl::StrCat("unknown op ", op);
    if (why.empty() && bidir && op != "write") why = "--bidir supports --op=write only";
    // §5: a sealing side refuses every clear frame and the reverse, so both must agree.
    const bool client_tss = f.count("tss") && f["tss"] == "1";
    if (why.empty() && client_tss != o.tss.has_value())
      why = absl::StrCat("--tss mismatch: server ", o.tss ? "on" : "off", ", client ",
                         client_tss ? "on" : "off");
    if (why.empty() && o.tss) {
      const uint64_t sdi = field_u64(f, "tss_sdi", &ok), an = field_u64(f, "tss_an", &ok);
      if (!ok || !has_tss_key(*o.tss, sdi, an))
        why = absl::StrCat("the client sends TSS in sdi ", sdi, " an ", an,
                           ", for which the server's --key_file has no key (use the same file on "
                           "both sides)");
    }
    Options eo = o;
    eo.mtu = mtu;
    if (f.count("cc")) {
      const std::string& asked = f["cc"];
      if (asked == "nscc") {
        eo.cc = CcMode::kNscc;
      } else if (asked == "rccc") {
        eo.cc = CcMode::kRccc;
      } else if (asked == "nscc+rccc") {
        eo.cc = CcMode::kNsccRccc;
      } else if (why.empty()) {
        why = "unknown cc " + asked;
      }
    }
    if (eo.base_rtt == 0 && f.count("base_rtt_ps"))
      eo.base_rtt = std::min<Time>(static_cast<Time>(field_u64(f, "base_rtt_ps", &ok)),
                                   100 * kMillisecond);
    base_rtt = eo.base_rtt;
    if (why.empty()) {
      cc = eo.cc;
      auto e = make_engine(eo, io, mtu, rx_payload_bound(peer_rx_socket));
      if (!e.ok()) {
        why = std::string(e.status().message());
      } else {
        ep = std::move(*e);
      }
    }
    if (why.empty()) {
      region.resize(slots * size);
      // Writes and sends must replace the complement; reads must return the pattern.
      fill_pattern(region, seed, /*complement=*/op != "read");
      auto k = ep->register_memory(region.data(), region.size());
      if (!k.ok()) {
        why = std::string(k.status().message());
      } else {
        rkey = *k;
      }
    }
    if (!why.empty()) {
      (void)oob.send("ERROR", {{"why", absl::StrReplaceAll(why, {{" ", "_"}})}});
      return fail(absl::FailedPreconditionError(why));
    }
    std::printf("uet-perf: client %s mac %s qpn 0x%x psn %u; %lu-byte %ss, %lu slots\n",
                ip_str(peer_ip).c_str(), f["mac"].c_str(), peer_qpn, peer_psn, size, op.c_str(),
                slots);
    if (auto s = oob.send("WELCOME", {{"ip", std::to_string(o.ip)},
                                      {"tss_sdi", o.tss ? std::to_string(o.tss->tx_sdi) : "0"},
                                      {"tss_an", o.tss ? std::to_string(o.tss->tx_an) : "0"},
                                      {"mac", mac_str(io.mac)},
                                      {"qpn", std::to_string(kQpn)},
                                      {"psn", std::to_string(sq_psn)},
                                      {"rkey", std::to_string(rkey)}});
        !s.ok())
      return fail(s);
  }
  loop = std::make_unique<io::HostLoop>(tap, *ep);
  if (auto s = resolve_and_meet(io, oob, peer_ip, idle, o.timeout); !s.ok()) return fail(s);
  if (!o.uet) {
    auto* roce = static_cast<RoceEndpoint*>(ep.get());
    if (auto s = roce->connect_qp(peer_ip, kQpn, peer_qpn, sq_psn, peer_psn); !s.ok()) return fail(s);
  }
  // Sends: the server posts a receive buffer per slot before the first message (the engine's
  // receive queue may hold fewer; the rest wait for reposts).
  uint64_t recv_posted = 0;
  if (o.server && op == "send") {
    for (; recv_posted < slots; ++recv_posted) {
      RecvBuffer rb;
      rb.wr_id = recv_posted;
      rb.base = region.data() + recv_posted * size;
      rb.length = size;
      if (!ep->post_recv(rb).ok()) break;
    }
    if (recv_posted == 0) return fail(absl::FailedPreconditionError("post_recv refused every buffer"));
  }
  // Second barrier: both QPs are connected before the first write.
  if (auto s = oob.send("GO", {}); !s.ok()) return fail(s);
  if (auto g = oob.recv(idle, o.timeout); !g.ok()) return fail(g.status());

  // Posts operations to the peer (into its region `dst_rkey`, from `src`) and polls until
  // all are complete (or --timeout_s passes without progress); fills r. Used by the client,
  // and by the server too with --bidir.
  auto drive = [&](std::vector<uint8_t>& src, uint32_t dst_rkey, uint64_t pattern_seed,
                   Result& r) -> uint64_t {
    std::vector<uint8_t> busy(slots, 0);
    std::vector<Time> posted_at(lat ? slots : 0);
    if (lat) r.lat_us.reserve(duration_s > 0 ? 1 << 20 : iters);
    const bool by_time = duration_s > 0;
    const Time start = io::monotonic_now();
    const Time stop_posting = by_time ? start + static_cast<Time>(duration_s) * kSecond : kNever;
    uint64_t posted = 0;
    bool unsupported = false;  // the transport refused the operation (Unimplemented)
    Time last_progress = start, end = start, last_success = start;
    Time next_report = o.progress > 0 ? start + o.progress : kNever;
    const uint32_t depth = lat ? 1 : o.depth;
    Completion comp[64];
    for (;;) {
      if (g_stop.load(std::memory_order_relaxed)) {
        r.error = "interrupted";
        break;
      }
      const Time now = io::monotonic_now();
      if (now >= next_report) {
        const EndpointStats es = ep->stats();
        std::printf("uet-perf: progress: posted %lu completed %lu failed %lu; resent %lu, "
                    "timeouts %lu\n",
                    posted, r.completed, r.failed, es.retransmitted_packets, es.timeouts);
        next_report = now + o.progress;
      }
      // As perftest, the first error completion ends the run: post nothing more, wait for
      // what is outstanding (the engine fails or flushes it within its retry budget).
      const bool may_post = r.failed == 0 && (by_time ? now < stop_posting : posted < iters);
      if (unsupported || (!may_post && r.completed + r.failed == posted)) break;
      while (may_post && posted - (r.completed + r.failed) < depth && (by_time || posted < iters)) {
        const uint64_t slot = posted % slots;
        if (busy[slot]) break;
        absl::Status posted_ok;
        if (op == "write") {
          WriteRequest wr;
          wr.wr_id = posted;
          wr.peer = peer_ip;
          wr.rkey = dst_rkey;
          wr.remote_offset = slot * size;
          wr.local = src.data() + slot * size;
          wr.length = size;
          posted_ok = ep->post_write(wr);
        } else if (op == "read") {
          ReadRequest rr;
          rr.wr_id = posted;
          rr.peer = peer_ip;
          rr.rkey = dst_rkey;
          rr.remote_offset = slot * size;
          rr.local = src.data() + slot * size;
          rr.length = size;
          posted_ok = ep->post_read(rr);
        } else {
          SendRequest sr;
          sr.wr_id = posted;
          sr.peer = peer_ip;
          sr.local = src.data() + slot * size;
          sr.length = size;
          posted_ok = ep->post_send(sr);
        }
        if (posted_ok.code() == absl::StatusCode::kUnimplemented) {
          r.error = std::string(posted_ok.message());
          unsupported = true;
          break;
        }
        if (!posted_ok.ok()) break;  // engine ring full: poll first
        busy[slot] = 1;
        if (lat) posted_at[slot] = io::monotonic_now();
        ++posted;
      }
      loop->poll_once();
      const size_t n = ep->poll_completions(comp);
      if (n > 0) {
        const Time t = io::monotonic_now();
        last_progress = end = t;
        for (size_t i = 0; i < n; ++i) {
          const uint64_t slot = comp[i].wr_id % slots;
          busy[slot] = 0;
          if (comp[i].status == OpStatus::kSuccess) {
            ++r.completed;
            last_success = t;
            // A read is checked the first time its slot is read (the slot still held the
            // complement, so a read that placed nothing cannot pass); later reads of the slot
            // are not, to keep the check out of the measured loop's steady state.
            if (op == "read" && comp[i].wr_id < slots) {
              const uint8_t* b = src.data() + slot * size;
              for (uint64_t j = 0; j < size; ++j)
                if (b[j] != pattern_byte(pattern_seed, slot * size + j)) ++r.mismatched_bytes;
              r.checked_bytes += size;
            }
            if (lat) r.lat_us.push_back(static_cast<double>(t - posted_at[slot]) / kMicrosecond);
          } else {
            if (r.failed++ == 0)
              r.error_after_ms = static_cast<double>(t - last_success) / kMillisecond;
            if (r.error.empty())
              r.error = absl::StrCat(op, " ", comp[i].wr_id, " failed: ", to_string(comp[i].status));
          }
        }
      } else if (now - last_progress > stall_bound(o)) {
        r.error = absl::StrCat("stalled: no completion for --timeout_s past the retry budget (",
                               r.completed, " of ",
                               posted, " posted ", op, "s completed)");
        break;
      }
    }
    r.seconds = static_cast<double>(end - start) / kSecond;
    r.bytes = r.completed * size;
    r.ok = r.error.empty() && r.failed == 0;
    return posted;
  };

  Result r;
  const io::IoStats before = tap.stats();
  Options shown = o;
  shown.lat = lat;
  shown.mtu = mtu;
  shown.op = op;
  shown.bidir = bidir;
  shown.base_rtt = base_rtt;
  shown.cc = cc;
  out.peer_rx_socket_bytes = peer_rx_socket;
  out.inflight_bound = rx_payload_bound(peer_rx_socket);
  if (o.server) {
    // Serve until the client is done, then check the region. For sends, every received
    // message is checked as it completes (message i came from the client's slot i % slots and
    // filled the buffer posted i-th), then its buffer is refilled with the complement and
    // posted again.
    uint64_t recvs = 0;
    std::function<void()> serve = idle;
    if (op == "send") {
      serve = [&] {
        idle();
        Completion c[64];
        const size_t n = ep->poll_completions(c);
        for (size_t i = 0; i < n; ++i) {
          if (c[i].op != Opcode::kRecv) continue;
          const uint64_t buf = c[i].wr_id;
          uint8_t* b = region.data() + buf * size;
          const uint64_t from = (recvs % slots) * size;
          ++recvs;
          if (c[i].status != OpStatus::kSuccess || c[i].bytes != size) {
            ++r.failed;
            r.mismatched_bytes += size;
          } else {
            for (uint64_t j = 0; j < size; ++j)
              if (b[j] != pattern_byte(seed, from + j)) ++r.mismatched_bytes;
            r.checked_bytes += size;
          }
          for (uint64_t j = 0; j < size; ++j) b[j] = static_cast<uint8_t>(~pattern_byte(seed, buf * size + j));
          RecvBuffer rb;
          rb.wr_id = buf;
          rb.base = b;
          rb.length = size;
          (void)ep->post_recv(rb);
        }
      };
    }
    // --bidir: the server's own direction first (the client's DONE waits in the socket).
    Result back;
    uint64_t back_posted = 0;
    std::vector<uint8_t> back_src;
    if (bidir) {
      back_src.resize(slots * size);
      fill_pattern(back_src, seed ^ kBackSalt, /*complement=*/false);
      back_posted = drive(back_src, back_rkey, seed ^ kBackSalt, back);
    }
    // The client's DONE, for as long as its frames keep arriving: a client that stops (killed,
    // stalled, its link down) without closing the control connection is given up once both
    // have been silent for stall_bound().
    uint64_t rx_seen = tap.stats().rx_packets;
    Time next_report = o.progress > 0 ? io::monotonic_now() + o.progress : kNever;
    const Time slice = std::min(o.timeout, o.progress > 0 ? o.progress : 100 * kMillisecond);
    Time silent_since = io::monotonic_now();
    absl::StatusOr<Fields> d = absl::DeadlineExceededError("");
    for (;;) {
      d = oob.recv(serve, slice);
      if (d.ok() || d.status().code() != absl::StatusCode::kDeadlineExceeded) break;
      const Time now = io::monotonic_now();
      const uint64_t rx_now = tap.stats().rx_packets;
      if (now >= next_report) {
        std::printf("uet-perf: progress: received frames %lu\n", rx_now);
        next_report = now + o.progress;
      }
      if (rx_now != rx_seen) {
        rx_seen = rx_now;
        silent_since = now;
      } else if (now - silent_since >= stall_bound(o)) {
        d = absl::DeadlineExceededError(absl::StrFormat(
            "control connection stalled: no DONE and no frame from the client for --timeout_s "
            "past the retry budget "
            "(%lu frames received)", rx_now));
        break;
      }
    }
    if (!d.ok()) {
      r.ok = false;
      r.error = std::string(d.status().message());
    } else {
      bool ok = true;
      const uint64_t writes = field_u64(*d, "writes", &ok);
      const uint64_t completed = field_u64(*d, "completed", &ok);
      r.completed = writes;
      r.bytes = writes * size;
      if (op == "write") {
        const uint64_t written_slots = std::min(writes, slots);
        r.checked_bytes = written_slots * size;
        for (uint64_t i = 0; i < r.checked_bytes; ++i)
          if (region[i] != pattern_byte(seed, i)) ++r.mismatched_bytes;
      } else if (op == "send") {
        // Every completed send must have arrived whole (late completions are drained first).
        const Time until = io::monotonic_now() + o.timeout;
        while (recvs < completed && io::monotonic_now() < until) serve();
        r.completed = recvs;
        r.bytes = recvs * size;
        if (recvs < completed) ++r.mismatched_bytes;
      } else {
        // Reads: the client checks what it read; the region must be untouched.
        r.checked_bytes = region.size();
        for (uint64_t i = 0; i < region.size(); ++i)
          if (region[i] != pattern_byte(seed, i)) ++r.mismatched_bytes;
      }
      r.verify = r.mismatched_bytes == 0 && ok ? "ok" : "mismatch";
      r.ok = r.verify == "ok" && (*d)["ok"] == "1";
      if (bidir) {
        // Report the server's own direction (what it sent); the check stays that of the
        // client's writes into this region.
        r.completed = back.completed;
        r.failed = back.failed;
        r.error_after_ms = back.error_after_ms;
        r.bytes = back.bytes;
        r.seconds = back.seconds;
        r.lat_us = std::move(back.lat_us);
        if (!back.ok) {
          r.ok = false;
          r.error = back.error.empty() ? "the server's writes failed" : back.error;
        }
      }
      if ((*d)["ok"] != "1") r.error = "the client reported errors";
      // §5.2: a wrong key shows only as tags that do not match; say so where it is seen.
      const TssOut tss = tss_of(o, *ep);
      if (!r.ok && tss.c.dropped() > 0) {
        absl::StrAppend(
            &r.error, r.error.empty() ? "" : "; ", "TSS refused ", tss.c.dropped(),
            " frames from the client", tss_drop_reasons(tss),
            tss.drops(tss::Drop::kBadTag) > 0 ? ": do both sides use the same --key_file?" : "");
      }
      (void)oob.send("VERIFY", {{"ok", r.verify == "ok" ? "1" : "0"},
                                {"tss_dropped", std::to_string(tss.c.dropped())},
                                {"tss_bad_tag", std::to_string(tss.drops(tss::Drop::kBadTag))},
                                {"back_writes", std::to_string(back_posted)},
                                {"back_ok", back.ok ? "1" : "0"},
                                {"checked", std::to_string(r.checked_bytes)},
                                {"mismatched", std::to_string(r.mismatched_bytes)}});
      // Keep answering briefly so the client's last ACKs/retransmissions are not stranded.
      const Time until = io::monotonic_now() + 20 * kMillisecond;
      while (io::monotonic_now() < until) idle();
      // The client has stopped its data path once it says BYE; the connection stays open
      // until this process has closed its port (see the client's side).
      if (auto bye = oob.recv(nullptr, o.timeout); bye.ok() && (*bye)["_"] == "BYE")
        out.control = std::move(oob);
    }
  } else {
    std::vector<uint8_t> src(slots * size);
    // Writes and sends carry the pattern; reads land in the complement and must replace it.
    fill_pattern(src, seed, /*complement=*/op == "read");
    const uint64_t posted = drive(src, rkey, seed, r);
    // A failed operation's error comes first; the control connection's (a dead peer's) after.
    const auto control_error = [&r](const absl::Status& s) {
      r.ok = false;
      absl::StrAppend(&r.error, r.error.empty() ? "" : "; ", s.message());
    };
    if (auto s = oob.send("DONE", {{"writes", std::to_string(posted)},
                                   {"completed", std::to_string(r.completed)},
                                   {"ok", r.ok ? "1" : "0"}});
        !s.ok()) {
      control_error(s);
    } else if (auto v = oob.recv(idle, o.timeout); !v.ok()) {
      control_error(v.status());
    } else {
      if (bidir) {
        // The server's writes into this region: every slot they reached holds its pattern.
        bool vok = true;
        const uint64_t back_writes = field_u64(*v, "back_writes", &vok);
        const uint64_t reached = std::min(back_writes, slots) * size;
        for (uint64_t i = 0; i < reached; ++i)
          if (region[i] != pattern_byte(seed ^ kBackSalt, i)) ++r.mismatched_bytes;
        r.checked_bytes = reached;
        if (!vok || (*v)["back_ok"] != "1") {
          r.ok = false;
          if (r.error.empty()) r.error = "the server's writes failed";
        }
        std::printf("uet-perf: bidirectional: the server wrote %lu messages; this side checked %lu bytes, %lu mismatched\n",
                    back_writes, reached, r.mismatched_bytes);
      }
      r.verify = (*v)["ok"] == "1" && r.mismatched_bytes == 0 ? "ok" : "mismatch";
      if (r.verify != "ok") {
        r.ok = false;
        if (r.error.empty()) {
          r.error = r.mismatched_bytes > 0 ? "read data mismatched" : "the server found mismatched bytes";
        }
      }
      bool tok = true;
      const uint64_t peer_dropped = field_u64(*v, "tss_dropped", &tok);
      const uint64_t peer_bad_tag = field_u64(*v, "tss_bad_tag", &tok);
      if (!r.ok && tok && peer_dropped > 0) {
        absl::StrAppend(&r.error, r.error.empty() ? "" : "; ", "the server's TSS refused ",
                        peer_dropped, " of this side's frames (bad_tag ", peer_bad_tag, ")",
                        peer_bad_tag > 0 ? ": do both sides use the same --key_file?" : "");
      }
      std::printf("uet-perf: server data check: %s\n", r.verify.c_str());
      release_references(io);  // before src goes
      // Leave the link after the server: it closes its port while this side neither polls
      // nor closes, then the connection. A memif peer's disconnect runs on the EAL's
      // interrupt thread and must not meet a burst or this side's own teardown.
      if (oob.send("BYE", {}).ok() && oob.wait_closed(o.timeout).ok()) {
#ifdef UET_PERF_HAVE_DPDK
        if (io.dpdk != nullptr) (void)io.dpdk->wait_peer_gone(kSecond);
#endif
      }
    }
    release_references(io);  // before src goes
  }
  release_references(io);  // before region goes
  const io::IoStats after = tap.stats();
  r.tx_packets = after.tx_packets - before.tx_packets;
  r.rx_packets = after.rx_packets - before.rx_packets;
#ifdef UET_PERF_HAVE_DPDK
  if (io.dpdk != nullptr) io.dpdk->drain_tx();  // what the device never took: freed, counted
#endif
  out.shown = shown;
  report(shown, io, tap, *ep, r, size, out);
  tap.close();
  if (g_stop.load()) return 130;
  return r.ok ? 0 : 1;
}

// --pingpong: raw frames bounced by a reflector, one at a time; the round trip of the device
// and the two hosts' polling, with no transport (what --lat adds to it is the engines' work).
int run_pingpong(const Options& o, Io& io) {
#ifdef UET_PERF_HAVE_DPDK
  if (io.dpdk != nullptr && !io.dpdk->wait_link_up(o.timeout)) {
    std::fprintf(stderr, "uet-perf: the DPDK port's link did not come up before --timeout_s\n");
    return 1;
  }
#endif
  io::PacketIo& dev = *io.backend;
  const size_t len = std::max<uint64_t>(o.size, 42);
  wire::Encap e;
  e.src_mac = io.mac;
  e.dst_mac = o.neigh[0].second;
  e.src_ip4 = o.ip;
  e.dst_ip4 = o.neigh[0].first;
  e.sport = 4793;
  e.dport = 4793;
  std::vector<double> rtt_us;
  std::array<Frame*, io::kMaxBurst> out{}, in{};
  const uint64_t warmup = 100;
  for (uint64_t i = 0; i < o.iters + warmup && !g_stop.load(); ++i) {
    if (dev.alloc_tx(std::span<Frame*>(out.data(), 1)) != 1) continue;
    Frame& f = *out[0];
    wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), e);
    uint8_t* body = b.add_bytes(len - 42);
    size_t n = 0;
    if ((len > 42 && body == nullptr) || b.finish(&n) != wire::WireError::kOk) {
      std::fprintf(stderr, "uet-perf: -s %zu does not fit a frame of the device\n", len);
      dev.tx_burst({}, std::span<Frame* const>(out.data(), 1));
      return 2;
    }
    f.len = static_cast<uint32_t>(n);
    const Time sent = io::monotonic_now();
    dev.tx_burst(std::span<Frame* const>(out.data(), 1), {});
    size_t got = 0;
    while (got == 0 && io::monotonic_now() - sent < o.timeout && !g_stop.load())
      got = dev.rx_burst(std::span<Frame*>(in.data(), in.size()));
    const Time back = io::monotonic_now();
    if (got == 0) {
      std::fprintf(stderr, "uet-perf: no frame came back within --timeout_s: is a reflector "
                           "(dpdk-testpmd --forward-mode=macswap) on the peer?\n");
      return 1;
    }
    dev.release_rx(std::span<Frame* const>(in.data(), got));
    if (i >= warmup) rtt_us.push_back(static_cast<double>(back - sent) / kMicrosecond);
  }
  std::sort(rtt_us.begin(), rtt_us.end());
  std::printf("uet-perf pingpong: %zu round trips of %zu-byte frames: min %.2f us, p50 %.2f us, "
              "p99 %.2f us, p99.9 %.2f us, max %.2f us\n",
              rtt_us.size(), len, percentile(rtt_us, 0), percentile(rtt_us, 0.5),
              percentile(rtt_us, 0.99), percentile(rtt_us, 0.999),
              rtt_us.empty() ? 0.0 : rtt_us.back());
  if (const std::string& path = o.json_path; !path.empty()) {
    if (FILE* j = std::fopen(path.c_str(), "w")) {
      std::fprintf(j,
                   "{\"tool\": \"uet-perf\", \"mode\": \"pingpong\", \"bytes\": %zu, "
                   "\"samples\": %zu, \"min_us\": %.3f, \"p50_us\": %.3f, \"p99_us\": %.3f}\n",
                   len, rtt_us.size(), percentile(rtt_us, 0), percentile(rtt_us, 0.5),
                   percentile(rtt_us, 0.99));
      std::fclose(j);
    }
  }
  return g_stop.load() ? 130 : 0;
}

int run(const Options& o, const std::vector<std::string>& eal_args) {
  // Closed after the ports (declared before them): each client leaves once its control
  // connection closes.
  std::vector<Oob> controls;
  auto set_or = make_io(o, eal_args);
  if (!set_or.ok()) {
    std::fprintf(stderr, "uet-perf: %s\n", std::string(set_or.status().message()).c_str());
    return set_or.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  IoSet& set = *set_or;
  if (o.pingpong) return run_pingpong(o, set.lanes[0]);
  const uint32_t n = o.lanes;

  // The server binds every lane's control port before it says it is ready.
  std::vector<int> listen_fds(n, -1);
  auto close_listeners = [&] {
    for (int& fd : listen_fds)
      if (fd >= 0) ::close(std::exchange(fd, -1));
  };
  if (o.server) {
    for (uint32_t i = 0; i < n; ++i) {
      auto lfd = Oob::listen_on(static_cast<uint16_t>(o.oob_port + i));
      if (!lfd.ok()) {
        std::fprintf(stderr, "uet-perf: %s\n", std::string(lfd.status().message()).c_str());
        close_listeners();
        return 1;
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
  }

  std::vector<Options> lane_opts(n, o);
  std::vector<LaneOut> outs(n);
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
  int rc = 0;
  if (n == 1) {
    rc = fns[0]();
  } else {
#ifdef UET_PERF_HAVE_DPDK
    auto rcs = set.eal->run_on_lcores(fns);
    if (!rcs.ok()) {
      std::fprintf(stderr, "uet-perf: %s\n", std::string(rcs.status().message()).c_str());
      rc = 1;
    }
#endif
    for (const LaneOut& l : outs) rc = std::max(rc, l.rc);
  }
  close_listeners();
  for (LaneOut& l : outs) controls.push_back(std::move(l.control));

  // Every lane has stopped and drained its backlog: whatever is still out of the pool leaked.
  int64_t pool = -1, in_use = -1;
#ifdef UET_PERF_HAVE_DPDK
  if (!set.lanes.empty() && set.lanes[0].dpdk != nullptr) {
    pool = set.lanes[0].dpdk->pool_size();
    in_use = set.lanes[0].dpdk->pool_in_use();
    std::printf(" mbufs: %ld of the pool's %ld still in use after the run%s\n", in_use, pool,
                in_use == 0 ? "" : " (leaked)");
  }
#endif
  for (uint32_t i = 0; i < n; ++i) {
    outs[i].mbufs_pool = pool;
    outs[i].mbufs_in_use_end = in_use;
    outs[i].json = json_of(outs[i].shown, outs[i]);
  }
  if (n == 1) {
    if (!write_json(o.json_path, outs[0].json)) rc = std::max(rc, 1);
    return rc;
  }
  // The lanes' sums (each lane's rate over its own interval).
  LaneOut sum;
  std::string per_lane;
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
  sum.mbufs_pool = pool;
  sum.mbufs_in_use_end = in_use;
  sum.r.ok = all_ok;
  sum.r.verify = all_verified ? "ok" : "mismatch";
  const std::string rule(87, '-');
  std::printf("%s\n Sum of %u lanes (one engine, queue, FEP and lcore each), %s\n", rule.c_str(), n,
              o.server ? "server" : "client");
  if (!o.server && !o.lat) {
    std::printf(" %-10s %-12s %-20s %-14s %-14s %-10s\n", "#bytes", "#iterations",
                "BW sum[Gb/sec]", "MsgRate[Mpps]", "PktRate[Mpps]", "seconds");
    std::printf(" %-10lu %-12lu %-20.3f %-14.6f %-14.6f %-10.3f\n", sum.size, sum.r.completed,
                sum.gbps, sum.mpps, sum.pkt_mpps, max_seconds);
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
  Options shown = o;
  shown.ip = o.ip;
  std::string json = json_of(shown, sum);
  json.pop_back();  // the closing brace
  absl::StrAppend(&json, ", \"lcores_io\": ", n, ", \"lanes\": [", per_lane, "]}");
  if (!write_json(o.json_path, json)) rc = std::max(rc, 1);
  if (!all_ok || !all_verified) rc = std::max(rc, 1);
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
  if (!o.ok()) {
    std::fprintf(stderr, "uet-perf: %s\n", std::string(o.status().message()).c_str());
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // the test driver waits for the "ready" line
  std::signal(SIGINT, uet::perf::on_signal);
  std::signal(SIGTERM, uet::perf::on_signal);
  return uet::perf::run(*o, eal_args);
}
