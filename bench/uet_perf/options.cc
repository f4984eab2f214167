// uet-perf (bench/uet_perf/main.cc): its flags and their parsing into Options (every flag is
// read here, once).
#include "bench/uet_perf/perf.h"

#include "bench/flag_check.h"

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
ABSL_FLAG(uint32_t, rto_us, 15000,
          "UET: retransmission timeout before the first RTT sample in microseconds, 10..1000000 "
          "(--io=uring: 50000)");
ABSL_FLAG(uint32_t, min_rto_us, 15000,
          "UET: lower bound of the RTT-estimated retransmission timeout in microseconds, "
          "1..--rto_us: above the host's scheduling stalls, as RoCEv2's ACK timeout (the "
          "simulator's 10 us is far below a VM's; --io=uring: 50000)");
ABSL_FLAG(uint32_t, max_rto_us, 30000,
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
ABSL_FLAG(std::string, tss_backend, "auto",
          "with --tss: the AES-256-GCM library, auto (ipsec-mb where built in and the CPU has "
          "AES-NI, else openssl), ipsec-mb or openssl");
ABSL_FLAG(bool, xstats, false, "DPDK: print the port's non-zero extended statistics at the end");
ABSL_FLAG(std::string, uring_zc, "auto",
          "io_uring: zero-copy transmit (IORING_OP_SENDMSG_ZC): auto (where the kernel has it and "
          "--ip is not loopback, which copies anyway), on (refused if the kernel lacks it) or off");
ABSL_FLAG(bool, uring_offload, true,
          "io_uring: UDP GSO on send and GRO on receive (up to 64 datagrams per system call), "
          "where the kernel offers them; the report's io_uring line counts the batches");
ABSL_FLAG(std::string, clock, "auto",
          "the host clock: auto (the CPU's TSC where the kernel keeps its time with it, else "
          "CLOCK_MONOTONIC), tsc (refused where the kernel does not) or monotonic");
ABSL_FLAG(bool, csum_offload, true,
          "DPDK, UET: the device fills the UDP checksums where the port offers UDP TX checksum "
          "offload (the engine leaves them 0); false computes them in software");
ABSL_FLAG(bool, zero_copy, true,
          "DPDK: send payloads from registered memory by reference (external-buffer mbufs) "
          "where the port gathers; false copies them into the frame");

namespace uet::perf {

std::atomic<bool> g_stop{false};

std::set<std::string>& given_flags() {
  static std::set<std::string> names;
  return names;
}
void on_signal(int) { g_stop.store(true, std::memory_order_relaxed); }

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

std::optional<CcMode> cc_mode_of(absl::string_view name) {
  for (CcMode m : {CcMode::kNscc, CcMode::kRccc, CcMode::kNsccRccc}) {
    if (name == to_string(m)) return m;
  }
  return std::nullopt;
}

std::string ip_str(uint32_t ip) {
  return absl::StrFormat("%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}
std::string mac_str(const wire::MacAddr& m) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

namespace {

// Refusals keep every digit of a number (--tss_sdi=16777216, not 1.67772e+07).
constexpr int kDigits = 15;

// Which side this is, its control connection and its transport.
void read_role(Options& o, bench::FlagCheck& c) {
  o.server = absl::GetFlag(FLAGS_server);
  o.server_host = absl::GetFlag(FLAGS_client);
  if (o.server == !o.server_host.empty())
    c.fail("exactly one of --server and --client=HOST is required");
  o.oob_port = static_cast<uint16_t>(c.range(FLAGS_oob_port, 1, 65535));
  const std::string tr = absl::GetFlag(FLAGS_transport);
  c.one_of("transport", tr, {"uet", "rocev2"});
  o.uet = tr == "uet";
}

// --tss and its key file (spec/uet.md §5), read here so that a bad file is refused up front.
void read_tss(Options& o, bench::FlagCheck& c) {
  const bool tss_on = absl::GetFlag(FLAGS_tss);
  const std::string key_file = absl::GetFlag(FLAGS_key_file);
  const int64_t tss_sdi = absl::GetFlag(FLAGS_tss_sdi);
  const uint32_t tss_an = absl::GetFlag(FLAGS_tss_an);
  if (tss_on && !o.uet) {
    c.fail("--tss is UET only (spec/uet.md §5), not with --transport=rocev2");
  } else if (tss_on && key_file.empty()) {
    c.fail("--tss needs --key_file=PATH (the TSS key file, dissector/README.md \"TSS keys\")");
  } else if (!tss_on && (!key_file.empty() || tss_sdi != -1 || tss_an != 0)) {
    c.fail("--key_file, --tss_sdi and --tss_an need --tss");
  }
  c.range("tss_sdi", static_cast<double>(tss_sdi), -1, 0xFFFFFF);
  c.range("tss_an", tss_an, 0, 1);
  tss::Backend backend = tss::Backend::kAuto;
  if (std::string why =
          bench::tss_backend_refusal(absl::GetFlag(FLAGS_tss_backend), tss_on, &backend);
      !why.empty()) {
    c.fail(std::move(why));
  }
  if (!tss_on || !c.error.empty()) return;
  auto t = tss::read_key_file(
      key_file,
      tss_sdi < 0 ? std::nullopt : std::optional<uint32_t>(static_cast<uint32_t>(tss_sdi)),
      static_cast<uint8_t>(tss_an));
  if (t.ok()) {
    o.tss = std::move(*t);
    o.tss->backend = backend;
  } else if (t.status().code() == absl::StatusCode::kOutOfRange) {
    c.fail(absl::StrCat(tss_sdi < 0 ? "" : absl::StrCat("--tss_sdi=", tss_sdi, " "),
                        "--tss_an=", tss_an, ": ", t.status().message()));
  } else {
    c.fail(absl::StrCat("--key_file: ", t.status().message()));
  }
}

// The backend, the operation, its size and count, and the packet size.
void read_operation(Options& o, bench::FlagCheck& c) {
  o.io = absl::GetFlag(FLAGS_io);
  c.one_of("io", o.io, {"dpdk", "uring"});
  o.op = absl::GetFlag(FLAGS_op);
  c.one_of("op", o.op, {"write", "read", "send"});
  o.size = c.range(FLAGS_s, 1, 67108864);
  o.iters = c.range(FLAGS_n, 1, 100000000);
  o.duration_s = c.range(FLAGS_D, 0, 3600);
  o.lat = absl::GetFlag(FLAGS_lat);
  o.pingpong = absl::GetFlag(FLAGS_pingpong);
  o.bidir = absl::GetFlag(FLAGS_bidir);
  if (o.bidir && o.op != "write") c.fail("--bidir supports --op=write only");
  const uint32_t depth = c.range(FLAGS_tx_depth, 1, 256);
  o.depth = o.lat ? 1 : depth;
  o.mtu = absl::GetFlag(FLAGS_mtu);
  if (o.uet) {
    c.range("mtu", o.mtu, 256, 9000);
  } else if (!bench::is_roce_mtu(o.mtu)) {
    c.fail(absl::StrFormat("--mtu=%u invalid for rocev2: one of %s", o.mtu, bench::kRoceMtus));
  }
}

// The data plane's addresses: this side's IP and MAC, and the static neighbours.
void read_addresses(Options& o, bench::FlagCheck& c) {
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
}

}  // namespace

uint32_t frame_headers(const Options& o) {
  if (!o.uet) return RoceEndpoint::kMaxHeaderBytes;
  UetConfig c;
  if (o.tss) c.tss = *o.tss;
  return c.frame_overhead();
}

std::string mtu_refusal(const Options& o, uint32_t frame, const std::string& whose) {
  const uint32_t headers = frame_headers(o);
  if (uint64_t{o.mtu} + headers <= frame) return "";
  constexpr uint32_t kLeast = 256;  // UetConfig::payload_bytes, RoCEv2's smallest path MTU
  if (frame < headers + kLeast) {
    return absl::StrFormat("%s too small: frames of %u bytes, %u of them headers, leave less "
                           "than --mtu's least (%u)",
                           whose, frame, headers, kLeast);
  }
  return absl::StrFormat("--mtu=%u out of range for %s: %u..%u (frames of %u bytes, %u of them "
                         "headers)",
                         o.mtu, whose, kLeast, frame - headers, frame, headers);
}

namespace {

// The device and its lanes, the backends' options, the clock and the outputs.
void read_device(Options& o, bench::FlagCheck& c) {
  o.port = static_cast<uint16_t>(std::min<uint32_t>(c.range(FLAGS_port, 0, 1023), 1023));
  if (o.pingpong && (o.server || o.io != "dpdk" || o.neigh.size() != 1)) {
    c.fail("--pingpong needs --client, --io=dpdk and exactly one --neigh=IP=MAC (the "
           "reflector's)");
  }
  o.lanes = c.range(FLAGS_lcores_io, 1, 16);
  if (o.lanes > 1 && o.io != "dpdk")
    c.fail(absl::StrFormat("--lcores_io=%u needs --io=dpdk (--io=%s runs one engine): 1..1 here",
                           o.lanes, o.io));
  if (o.lanes > 1 && o.oob_port + o.lanes - 1 > 65535)
    c.fail(absl::StrFormat("--oob_port=%u out of range for --lcores_io=%u: 1..%u", o.oob_port,
                           o.lanes, 65536 - o.lanes));
  if (o.lanes > 1 && uint64_t{o.ip} + o.lanes - 1 > 0xFFFFFFFFull)
    c.fail("--ip + --lcores_io - 1 overflows IPv4");
  o.mbufs = c.range(FLAGS_mbufs, 512, 1048575);
  o.dev_mtu = c.range(FLAGS_dev_mtu, 1500, 9600);
  // A DPDK frame is the device MTU plus Ethernet and one 802.1Q tag (dpdk-io/dpdk_io.h): it
  // must hold a packet's headers and --mtu bytes (the device may lower it: make_engine).
  if (o.io == "dpdk" && c.error.empty())
    c.fail(mtu_refusal(o, o.dev_mtu + 18, absl::StrFormat("--dev_mtu=%u", o.dev_mtu)));
  o.zero_copy = absl::GetFlag(FLAGS_zero_copy);
  o.csum_offload = absl::GetFlag(FLAGS_csum_offload);
  o.uring_zc = absl::GetFlag(FLAGS_uring_zc);
  o.uring_offload = absl::GetFlag(FLAGS_uring_offload);
  c.one_of("uring_zc", o.uring_zc, {"auto", "on", "off"});
  o.clock = absl::GetFlag(FLAGS_clock);
  c.one_of("clock", o.clock, {"auto", "tsc", "monotonic"});
  o.xstats = absl::GetFlag(FLAGS_xstats);
  o.json_path = absl::GetFlag(FLAGS_json);
  o.pcap_path = absl::GetFlag(FLAGS_pcap);
}

// The engine: injected loss, the seed, UET's window and congestion control, both transports'
// timers and retry budgets, and the tool's own progress line and time limits.
void read_engine(Options& o, bench::FlagCheck& c) {
  o.loss = c.range(FLAGS_loss, 0, 0.5);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.window_bytes = uint64_t{c.range(FLAGS_window_kb, 16, 65536)} * 1024;
  const std::string cc = absl::GetFlag(FLAGS_cc);
  if (auto m = cc_mode_of(cc == "both" ? "nscc+rccc" : cc)) {
    o.cc = *m;
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
  const uint32_t base_rtt_us = c.range(FLAGS_base_rtt_us, 0, 100000);
  o.rto = static_cast<Time>(rto_us) * kMicrosecond;
  o.min_rto = static_cast<Time>(min_rto_us) * kMicrosecond;
  o.max_rto = static_cast<Time>(max_rto_us) * kMicrosecond;
  o.base_rtt = static_cast<Time>(base_rtt_us) * kMicrosecond;
  c.range("ack_timeout_exp", o.ack_timeout_exp, 1, 31);
  o.max_retries = c.range(FLAGS_max_retries, 1, 64);
  o.retry_cnt = c.range(FLAGS_retry_cnt, 0, 7);
  o.progress = static_cast<Time>(c.range(FLAGS_progress_ms, 0, 60000)) * kMillisecond;
  o.tx_hold = static_cast<Time>(c.range(FLAGS_tx_hold_us, 1, 60000000)) * kMicrosecond;
  o.timeout = static_cast<Time>(c.range(FLAGS_timeout_s, 1, 3600)) * kSecond;
}

}  // namespace

// Every flag in the order it is checked; the first refusal wins.
absl::StatusOr<Options> options_from_flags() {
  Options o;
  bench::FlagCheck c(kDigits);
  read_role(o, c);
  read_tss(o, c);
  read_operation(o, c);
  read_addresses(o, c);
  read_device(o, c);
  read_engine(o, c);
  if (!c.error.empty()) return absl::InvalidArgumentError(c.error);
  return o;
}

}  // namespace uet::perf
