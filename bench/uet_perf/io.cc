// uet-perf (bench/uet_perf/main.cc): the neighbour table, and each lane's backend (DPDK or
// io_uring).
#include "bench/uet_perf/perf.h"

namespace uet::perf {

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
// Backend selection: one function per backend.

namespace {

// DPDK: the EAL, the port, and one RX/TX queue pair per lane.
absl::StatusOr<IoSet> make_dpdk(const Options& o, const std::vector<std::string>& eal_args) {
#ifdef UET_PERF_HAVE_DPDK
  IoSet set;
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
  // RoCEv2 frames keep their UDP checksum 0: the ICRC covers them (spec/rocev2.md §1).
  c.tx_checksum_offload = o.csum_offload && o.uet;
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
        "csum offload %s",
        c.port_id, d->driver_name(), d->queue(), mac_str(out.mac), d->mtu(), d->max_frame(),
        off.rx_ipv4_checksum || off.rx_udp_checksum ? "on" : "n/a",
        off.tx_udp_checksum_used ? "on (UDP)"
        : off.tx_udp_checksum    ? "available (unused)"
                                 : "n/a");
    if (o.lanes > 1 && d->queue() == 0) std::printf("uet-perf: steering: %s\n", d->steering().c_str());
    set.lanes.push_back(out);
    set.backends.push_back(std::move(d));
  }
  return set;
#else
  (void)o;
  (void)eal_args;
  return absl::UnimplementedError("--io=dpdk: not built (libdpdk was not found at configure time)");
#endif
}

// io_uring: UDP sockets on the local address, one lane.
absl::StatusOr<IoSet> make_uring(const Options& o, const std::vector<std::string>& eal_args) {
#ifdef UET_PERF_HAVE_URING
  IoSet set;
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
  auto zc = io::parse_zero_copy_send(o.uring_zc);
  if (!zc.ok())
    return absl::InvalidArgumentError("--uring_zc=" + std::string(zc.status().message()));
  c.zero_copy_send = *zc;
  c.gso = c.gro = o.uring_offload;
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
      "io_uring UDP %s:%u, receive socket %u bytes%s, %s, zero-copy send %s (--uring_zc=%s), "
      "GSO %s, GRO %s",
      ip_str(o.ip), c.udp_port, su.rx_socket_bytes,
      su.rx_socket_capped
          ? absl::StrFormat(" (asked %u: capped by net.core.rmem_max, raise it for more in flight)",
                            c.socket_buffer_bytes)
          : std::string(),
      su.coop_taskrun ? "cooperative task running" : "task running by interrupt (kernel < 5.19)",
      su.zero_copy_send ? "on" : "off", o.uring_zc, su.gso ? "on" : "off",
      su.gro ? "on" : "off");
  if (o.tss) {
    out.udp_source_port = (*u)->ev_ports()[0];
    absl::StrAppendFormat(&out.description, ", TSS: every frame from source port %u",
                          out.udp_source_port);
  }
  set.lanes.push_back(out);
  set.backends.push_back(std::move(*u));
  return set;
#else
  (void)o;
  (void)eal_args;
  return absl::UnimplementedError("--io=uring: not built (dpdk-io/uring_io.h / uet_uring missing)");
#endif
}

}  // namespace

absl::StatusOr<IoSet> make_io(const Options& o, const std::vector<std::string>& eal_args) {
  if (o.io == "dpdk") return make_dpdk(o, eal_args);
  if (o.io == "uring") return make_uring(o, eal_args);
  return absl::InvalidArgumentError("--io=" + o.io + " unknown: dpdk or uring");
}

}  // namespace uet::perf
