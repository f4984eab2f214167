// uet-perf (bench/uet_perf/main.cc): a lane's control connection, the handshake (the client's
// PING and RXCAP, HELLO, the server's WELCOME or ERROR) and the barrier before the first
// operation (bench/uet_perf/lane_phases.h).
#include "bench/uet_perf/lane_phases.h"

namespace uet::perf {
namespace {

// Whether `t` holds a key for (sdi, an): the peer's frames in it can be opened (§5.4).
bool has_tss_key(const tss::TssConfig& t, uint64_t sdi, uint64_t an) {
  for (const tss::DomainConfig& d : t.domains)
    if (d.sdi == sdi && an < 2 && d.installed[an]) return true;
  return false;
}

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

}  // namespace

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

// ---------------------------------------------------------------------------------------------
// The client.

absl::Status Lane::client_hello() {
  slots = slots_for(size, iters, duration_s > 0);
  Options eo = o;  // the engine's options: the measured base RTT in them
  if (auto s = measure_base_rtt(eo); !s.ok()) return s;
  base_rtt = eo.base_rtt;
  if (auto s = client_rxcap(); !s.ok()) return s;
  if (auto s = client_engine(eo); !s.ok()) return s;
  if (auto s = send_hello(eo); !s.ok()) return s;
  return read_welcome();
}

// The path's round trip for NSCC, unless given: the smallest of 16 round trips over the
// control connection (same hosts and kernel; the simulator's 12 us base RTT would make
// NSCC read every real queueing and scheduling delay as congestion and shrink the window
// to a packet). The server adopts it from HELLO.
absl::Status Lane::measure_base_rtt(Options& eo) {
  if (!eo.uet || eo.base_rtt != 0) return absl::OkStatus();
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
  return absl::OkStatus();
}

// RXCAP: each side tells the other its receive socket, so neither sends more than fits.
absl::Status Lane::client_rxcap() {
  if (auto s = oob.send("RXCAP", {{"bytes", std::to_string(io.rx_socket_bytes)}}); !s.ok())
    return s;
  auto cap = oob.recv(idle, o.timeout);
  if (!cap.ok()) return cap.status();
  bool cap_ok = (*cap)["_"] == "RXCAP";
  peer_rx_socket = field_u64(*cap, "bytes", &cap_ok);
  if (!cap_ok) return absl::InternalError("control: expected RXCAP bytes=N");
  return absl::OkStatus();
}

// The client's engine, and with --bidir the region the server writes into.
absl::Status Lane::client_engine(const Options& eo) {
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
  return absl::OkStatus();
}

// HELLO: the client's parameters, which the server checks or adopts.
absl::Status Lane::send_hello(const Options& eo) {
  return oob.send("HELLO", {{"v", "1"},
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
}

// The server's WELCOME (its address, QP, start PSN, region and TSS domain) or its ERROR.
absl::Status Lane::read_welcome() {
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

// ---------------------------------------------------------------------------------------------
// The server.

absl::Status Lane::server_hello() {
  auto h = await_hello();
  if (!h.ok()) return h.status();
  Fields& f = *h;
  bool ok = read_hello(f);
  std::string why = hello_refusal(f, ok);
  Options eo = o;  // the engine's options: the client's choices in them
  eo.mtu = mtu;
  adopt_client(f, eo, why);
  base_rtt = eo.base_rtt;
  if (why.empty()) why = server_engine(eo);
  if (!why.empty()) {
    (void)oob.send("ERROR", {{"why", absl::StrReplaceAll(why, {{" ", "_"}})}});
    return absl::FailedPreconditionError(why);
  }
  std::printf("uet-perf: client %s mac %s qpn 0x%x psn %u; %lu-byte %ss, %lu slots\n",
              ip_str(peer_ip).c_str(), f["mac"].c_str(), peer_qpn, peer_psn, size, op.c_str(),
              slots);
  return send_welcome();
}

// The client measures the round trip (PING) and tells its receive socket (RXCAP) before its
// HELLO: answered here.
absl::StatusOr<Fields> Lane::await_hello() {
  auto h = oob.recv(nullptr, o.timeout);
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
  return h;
}

// HELLO's parameters into the lane; false when one is missing or not a number.
bool Lane::read_hello(Fields& f) {
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
  return ok;
}

// Why the server refuses HELLO against its own flags ("" when it does not): the first reason.
std::string Lane::hello_refusal(Fields& f, bool& ok) const {
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
  return why;
}

// The client's congestion control and base RTT, which the server's engine runs with too.
void Lane::adopt_client(Fields& f, Options& eo, std::string& why) const {
  if (f.count("cc")) {
    const std::string& asked = f["cc"];
    if (auto m = cc_mode_of(asked)) {
      eo.cc = *m;
    } else if (why.empty()) {
      why = "unknown cc " + asked;
    }
  }
  bool ok = true;  // optional, and not part of HELLO's check
  if (eo.base_rtt == 0 && f.count("base_rtt_ps"))
    eo.base_rtt = std::min<Time>(static_cast<Time>(field_u64(f, "base_rtt_ps", &ok)),
                                 100 * kMillisecond);
}

// The server's engine and its region, filled for the check; why not ("" when built).
std::string Lane::server_engine(const Options& eo) {
  cc = eo.cc;
  auto e = make_engine(eo, io, mtu, rx_payload_bound(peer_rx_socket));
  if (!e.ok()) return std::string(e.status().message());
  ep = std::move(*e);
  region.resize(slots * size);
  // Writes and sends must replace the complement; reads must return the pattern.
  fill_pattern(region, seed, /*complement=*/op != "read");
  auto k = ep->register_memory(region.data(), region.size());
  if (!k.ok()) return std::string(k.status().message());
  rkey = *k;
  return "";
}

absl::Status Lane::send_welcome() {
  return oob.send("WELCOME", {{"ip", std::to_string(o.ip)},
                              {"tss_sdi", o.tss ? std::to_string(o.tss->tx_sdi) : "0"},
                              {"tss_an", o.tss ? std::to_string(o.tss->tx_an) : "0"},
                              {"mac", mac_str(io.mac)},
                              {"qpn", std::to_string(kQpn)},
                              {"psn", std::to_string(sq_psn)},
                              {"rkey", std::to_string(rkey)}});
}

// ---------------------------------------------------------------------------------------------
// Both sides.

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

}  // namespace uet::perf
