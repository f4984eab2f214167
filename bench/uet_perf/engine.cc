// uet-perf (bench/uet_perf/main.cc): a lane's engine over its backend, and the zero-copy
// payloads it leaves with the device (bench/uet_perf/lane_phases.h).
#include "bench/uet_perf/lane_phases.h"

namespace uet::perf {
namespace {

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

}  // namespace

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

absl::StatusOr<std::unique_ptr<Endpoint>> make_engine(const Options& o, const Io& io,
                                                      uint32_t mtu, uint64_t peer_rx_payload) {
  Options sized = o;
  sized.mtu = mtu;
  if (std::string why = mtu_refusal(sized, io.max_frame, "the device"); !why.empty()) {
    return absl::InvalidArgumentError(why);
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

}  // namespace uet::perf
