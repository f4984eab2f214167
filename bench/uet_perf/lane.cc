// uet-perf (bench/uet_perf/main.cc): one lane: the handshake, the engine, the writes or the
// check, the report.
#include "bench/uet_perf/lane.h"

#include "bench/uet_perf/control.h"

namespace uet::perf {
namespace {

// What a bad tag most often means (spec/uet.md §5.2, §5.3).
constexpr char kKeyHint[] =
    ": do both sides use the same --key_file (server mode: the server's domain key, the "
    "client's key derived for its own address)?";

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

// The device fills the UDP checksums (DpdkIoConfig::tx_checksum_offload, --csum_offload).
bool tx_checksum_offloaded(const Io& io) {
#ifdef UET_PERF_HAVE_DPDK
  return io.dpdk != nullptr && io.dpdk->offloads().tx_udp_checksum_used;
#else
  (void)io;
  return false;
#endif
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
    c.udp_checksum = o.io != "uring" && !tx_checksum_offloaded(io);
    c.tx_by_reference = by_reference(o, io);  // the engine seals from registered memory under TSS
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

// One lane's run, phase by phase; the members are what the phases share.
struct Lane {
  Lane(const Options& opts, Io& lane_io, TapIo& lane_tap, LaneOut& lane_out)
      : o(opts),
        io(lane_io),
        tap(lane_tap),
        out(lane_out),
        sq_psn(static_cast<uint32_t>(mix(o.seed ^ (o.server ? 0x11 : 0x22))) & 0xFFFFFF),
        size(o.size),
        iters(o.iters),
        duration_s(o.duration_s),
        seed(o.seed),
        mtu(o.mtu),
        lat(o.lat),
        op(o.op),
        bidir(o.bidir),
        base_rtt(o.base_rtt),
        cc(o.cc) {}

  int run(int listen_fd);
  // Ends the lane on an error before the report: said on stderr, the backlog freed.
  int fail(const absl::Status& s);
  // The control connection, and the data link up.
  absl::Status connect(int listen_fd);
  // The client: the round trip and receive socket (PING, RXCAP), its engine, HELLO; the
  // server's WELCOME.
  absl::Status client_hello();
  // The server: answers PING and RXCAP, checks HELLO against its own flags, builds its engine
  // and region, and says WELCOME (or ERROR and why).
  absl::Status server_hello();
  // Both sides: ARP, the QP connected (RoCEv2), receive buffers posted (sends), the barrier.
  absl::Status meet();
  // Posts operations to the peer (into its region `dst_rkey`, from `src`) and polls until
  // all are complete (or --timeout_s passes without progress); fills r. Used by the client,
  // and by the server too with --bidir.
  uint64_t drive(std::vector<uint8_t>& src, uint32_t dst_rkey, uint64_t pattern_seed, Result& r);
  // The server: serves until the client is done, then checks its region and says VERIFY.
  void serve(Result& r);
  // The client: the operations, DONE, the server's VERIFY, then BYE.
  void write(Result& r);

  const Options& o;
  Io& io;
  TapIo& tap;
  LaneOut& out;
  Oob oob;
  // Parameters: the client's win; the server checks what must match.
  const uint32_t sq_psn;
  uint64_t size, iters, slots = 0, duration_s, seed;
  uint32_t mtu;
  bool lat;
  std::string op;  // the client's choice; the server learns it from HELLO
  bool bidir;      // likewise
  Time base_rtt;   // UET: given, measured (client) or learnt from HELLO (server)
  uint32_t back_rkey = 0;  // --bidir: the client's region, the server's writes' target
  // --bidir: the server's writes carry a different pattern than the client's, so a write that
  // lands in the wrong direction cannot pass the check.
  static constexpr uint64_t kBackSalt = 0xB1D1;
  uint32_t peer_ip = 0, peer_qpn = 0, peer_psn = 0, rkey = 0;
  uint64_t peer_rx_socket = 0;  // RXCAP: the peer's receive socket as granted (0: no bound)
  CcMode cc;                    // UET: the client's, adopted by the server
  std::unique_ptr<Endpoint> ep;
  std::vector<uint8_t> region;
  std::unique_ptr<io::HostLoop> loop;
  std::function<void()> idle = [this] {
    if (loop) {
      loop->poll_once();
    } else {
      Frame* f[io::kMaxBurst];
      const size_t n = tap.rx_burst(f);
      tap.release_rx({f, n});
    }
  };
  uint64_t recv_posted = 0;  // sends: receive buffers the server posted before the first one
};

int Lane::run(int listen_fd) {
  out.shown = o;
  if (auto s = connect(listen_fd); !s.ok()) return fail(s);
  if (auto s = o.server ? server_hello() : client_hello(); !s.ok()) return fail(s);
  if (auto s = meet(); !s.ok()) return fail(s);
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
    serve(r);
  } else {
    write(r);
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

int Lane::fail(const absl::Status& s) {
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
}

absl::Status Lane::connect(int listen_fd) {
  if (o.server) {
    auto c = Oob::accept_on(listen_fd, o.timeout);
    if (!c.ok()) return c.status();
    oob = std::move(*c);
  } else {
    auto c = Oob::connect_to(o.server_host, o.oob_port, o.timeout);
    if (!c.ok()) return c.status();
    oob = std::move(*c);
  }
#ifdef UET_PERF_HAVE_DPDK
  if (io.dpdk != nullptr && !io.dpdk->wait_link_up(o.timeout))
    return absl::UnavailableError("the DPDK port's link did not come up before --timeout_s");
#endif
  return absl::OkStatus();
}

absl::Status Lane::client_hello() {
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
      if (auto s = oob.send("PING", {{"i", std::to_string(i)}}); !s.ok()) return s;
      auto pong = oob.recv(idle, o.timeout);
      if (!pong.ok()) return pong.status();
      if ((*pong)["_"] != "PONG") return absl::InternalError("control: expected PONG");
      best = std::min(best, io::monotonic_now() - t0);
    }
    eo.base_rtt = std::clamp<Time>(best, kMicrosecond, 100 * kMillisecond);
    std::printf("uet-perf: base RTT %.1f us (control connection, min of 16)\n",
                static_cast<double>(eo.base_rtt) / kMicrosecond);
  }
  base_rtt = eo.base_rtt;
  // RXCAP: each side tells the other its receive socket, so neither sends more than fits.
  if (auto s = oob.send("RXCAP", {{"bytes", std::to_string(io.rx_socket_bytes)}}); !s.ok())
    return s;
  auto cap = oob.recv(idle, o.timeout);
  if (!cap.ok()) return cap.status();
  bool cap_ok = (*cap)["_"] == "RXCAP";
  peer_rx_socket = field_u64(*cap, "bytes", &cap_ok);
  if (!cap_ok) return absl::InternalError("control: expected RXCAP bytes=N");
  auto e = make_engine(eo, io, mtu, rx_payload_bound(peer_rx_socket));
  if (!e.ok()) return e.status();
  cc = eo.cc;
  ep = std::move(*e);
  if (bidir) {
    region.resize(slots * size);
    fill_pattern(region, seed ^ kBackSalt, /*complement=*/true);
    auto k = ep->register_memory(region.data(), region.size());
    if (!k.ok()) return k.status();
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
    return s;
  auto w = oob.recv(idle, o.timeout);
  if (!w.ok()) return w.status();
  if ((*w)["_"] == "ERROR") return absl::FailedPreconditionError(
        "server refused: " + absl::StrReplaceAll((*w)["why"], {{"_", " "}}));
  bool ok = (*w)["_"] == "WELCOME";
  peer_ip = static_cast<uint32_t>(field_u64(*w, "ip", &ok));
  peer_qpn = static_cast<uint32_t>(field_u64(*w, "qpn", &ok));
  peer_psn = static_cast<uint32_t>(field_u64(*w, "psn", &ok));
  rkey = static_cast<uint32_t>(field_u64(*w, "rkey", &ok));
  if (!ok) return absl::InternalError("control: malformed WELCOME");
  if (o.tss) {
    const uint64_t sdi = field_u64(*w, "tss_sdi", &ok), an = field_u64(*w, "tss_an", &ok);
    if (!ok || !has_tss_key(*o.tss, sdi, an)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the server sends TSS in sdi ", sdi, " an ", an,
          ", for which this side's --key_file has no key (use the same file on both sides)"));
    }
  }
  std::printf("uet-perf: server %s mac %s qpn 0x%x psn %u rkey %u\n", ip_str(peer_ip).c_str(),
              (*w)["mac"].c_str(), peer_qpn, peer_psn, rkey);
  return absl::OkStatus();
}

absl::Status Lane::server_hello() {
  auto h = oob.recv(nullptr, o.timeout);
  // The client measures the round trip (PING) and tells its receive socket (RXCAP).
  while (h.ok() && ((*h)["_"] == "PING" || (*h)["_"] == "RXCAP")) {
    if ((*h)["_"] == "PING") {
      if (auto s = oob.send("PONG", {{"i", (*h)["i"]}}); !s.ok()) return s;
    } else {
      bool cap_ok = true;
      peer_rx_socket = field_u64(*h, "bytes", &cap_ok);
      if (!cap_ok) return absl::InternalError("control: malformed RXCAP");
      if (auto s = oob.send("RXCAP", {{"bytes", std::to_string(io.rx_socket_bytes)}}); !s.ok())
        return s;
    }
    h = oob.recv(nullptr, o.timeout);
  }
  if (!h.ok()) return h.status();
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
    return absl::FailedPreconditionError(why);
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
    return s;
  return absl::OkStatus();
}

absl::Status Lane::meet() {
  loop = std::make_unique<io::HostLoop>(tap, *ep);
  if (auto s = resolve_and_meet(io, oob, peer_ip, idle, o.timeout); !s.ok()) return s;
  if (!o.uet) {
    auto* roce = static_cast<RoceEndpoint*>(ep.get());
    if (auto s = roce->connect_qp(peer_ip, kQpn, peer_qpn, sq_psn, peer_psn); !s.ok()) return s;
  }
  // Sends: the server posts a receive buffer per slot before the first message (the engine's
  // receive queue may hold fewer; the rest wait for reposts).
  if (o.server && op == "send") {
    for (; recv_posted < slots; ++recv_posted) {
      RecvBuffer rb;
      rb.wr_id = recv_posted;
      rb.base = region.data() + recv_posted * size;
      rb.length = size;
      if (!ep->post_recv(rb).ok()) break;
    }
    if (recv_posted == 0) return absl::FailedPreconditionError("post_recv refused every buffer");
  }
  // Second barrier: both QPs are connected before the first write.
  if (auto s = oob.send("GO", {}); !s.ok()) return s;
  if (auto g = oob.recv(idle, o.timeout); !g.ok()) return g.status();
  return absl::OkStatus();
}

// Posts operations to the peer (into its region `dst_rkey`, from `src`) and polls until
// all are complete (or --timeout_s passes without progress); fills r. Used by the client,
// and by the server too with --bidir.
uint64_t Lane::drive(std::vector<uint8_t>& src, uint32_t dst_rkey, uint64_t pattern_seed,
                     Result& r) {
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
    // The clock of the last pass: one read fewer per pass (completions read it themselves).
    const Time now = std::max(loop->last_now(), start);
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
      const uint64_t off = slot * size;  // the slot's bytes, here and in the peer's region
      if (busy[slot]) break;
      absl::Status posted_ok;
      if (op == "write") {
        posted_ok = ep->post_write({posted, peer_ip, dst_rkey, off, src.data() + off, size});
      } else if (op == "read") {
        posted_ok = ep->post_read({posted, peer_ip, dst_rkey, off, src.data() + off, size});
      } else {
        SendRequest sr;
        sr.wr_id = posted;
        sr.peer = peer_ip;
        sr.local = src.data() + off;
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
}

void Lane::serve(Result& r) {
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
          tss.drops(tss::Drop::kBadTag) > 0 ? kKeyHint : "");
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
}

void Lane::write(Result& r) {
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
                      peer_bad_tag > 0 ? kKeyHint : "");
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

}  // namespace

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

  return Lane(o, io, tap, out).run(listen_fd);
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
                   "\"samples\": %zu, \"min_us\": %.3f, \"p50_us\": %.3f, \"p99_us\": %.3f, "
                   "\"clock\": \"%s\"}\n",
                   len, rtt_us.size(), percentile(rtt_us, 0), percentile(rtt_us, 0.5),
                   percentile(rtt_us, 0.99), io::tsc_clock_in_use() ? "tsc" : "monotonic");
      std::fclose(j);
    }
  }
  return g_stop.load() ? 130 : 0;
}

}  // namespace uet::perf
