#include "bench/ab_engines.h"

#include <algorithm>

#include "cc/dcqcn.h"
#include "sim/network.h"

namespace uet::ab {

UetConfig uet_config(const RunConfig& rc, uint32_t h, uint32_t pdcs) {
  UetConfig c;
  // The engine's default table, or larger when the workload needs it (an all-to-all of more
  // than 512 hosts); PDCs cost memory only when opened.
  c.max_pdcs = std::clamp<uint32_t>(pdcs, c.max_pdcs, 65535);
  c.local_ip4 = sim::Network::host_ip4(h);
  c.local_mac = sim::Network::host_mac(h);
  c.payload_bytes = rc.mtu;
  c.pathsel.ev_count = rc.uet_evs;
  c.pathsel.algorithm = rc.uet_lb;
  c.cc = rc.uet_cc;  // RCCC's line rate is link_gbps below
  // NSCC's base RTT: the longest path, unloaded: propagation both ways plus one MTU frame
  // serialised per hop (store and forward) and the ACK's return.
  const uint32_t max_hops = rc.fabric.kind == Fabric::Kind::kLeafSpine ? 4 : 6;
  const Time frame = static_cast<Time>((rc.mtu + 150) * 8e3 / rc.fabric.host_gbps);
  c.link_gbps = rc.fabric.host_gbps;
  c.base_rtt = 2 * path_delay(rc.fabric, max_hops) + max_hops * frame + kMicrosecond;
  // Before its first RTT sample a sender knows nothing of the queues: its first RTO
  // covers the base RTT plus one full switch buffer draining at the host rate (1 MiB at
  // 100 Gb/s: 84 us). With the engine's 50 us a 127:1 incast's opening burst, queued
  // behind a full last-hop buffer, timed out spuriously by the thousand (7443 timeouts,
  // last completion 1.127x ideal; now 3133, 1.062x). The RFC 6298 estimate takes over
  // at the first sample; min_rto stays short for loss recovery.
  const double drain_ps = static_cast<double>(rc.fabric.buffer_bytes) * 8e3 / rc.fabric.host_gbps;
  c.rto = std::max(c.rto, c.base_rtt + static_cast<Time>(drain_ps));
  // A floor above the first samples' estimate keeps an incast's queued packets from timing
  // out spuriously (bench/NOTES.md, "The incast mix's timeouts and tail").
  if (rc.uet_min_rto != 0) {
    c.min_rto = rc.uet_min_rto;
    c.rto = std::max(c.rto, c.min_rto);
  }
  c.seed = rc.seed * 1000003 + h;
  if (rc.verb == Verb::kSend) c.max_trecvs = 65536;  // a receive per incoming flow at most
  c.rendezvous_bytes = rc.uet_rendezvous_bytes;
  c.rack = rc.uet_rack;
  c.ack_out_of_order = rc.uet_ack_ooo;
  if (rc.uet_tss) {
    // One cluster-mode domain; its key comes from the run's seed (a simulation needs no
    // secret, and the key is never written out).
    c.tss.enabled = true;
    c.tss.backend = rc.tss_backend;
    c.tss.max_sources = std::max<uint32_t>(c.max_pdcs, 1);
    if (!rc.tss_domains.empty()) {  // a key file's: the pcaps open in Wireshark with it
      c.tss.domains = rc.tss_domains;
      c.tss.tx_sdi = rc.tss_domains.front().sdi;
      c.tss.tx_an = rc.tss_domains.front().installed[0] ? 0 : 1;
      return c;
    }
    tss::DomainConfig d;
    d.sdi = 1;
    uint64_t x = rc.seed * 0x9E3779B97F4A7C15ULL + 0x7E55;
    for (uint8_t& b : d.key[0]) {
      x ^= x >> 31;
      x *= 0xBF58476D1CE4E5B9ULL;
      b = static_cast<uint8_t>(x >> 56);
    }
    d.installed[0] = true;
    c.tss.domains.push_back(d);
    c.tss.tx_sdi = d.sdi;
  }
  return c;
}

absl::StatusOr<RoceConfig> roce_config(const RunConfig& rc, uint32_t h, uint32_t qps) {
  RoceConfig c;
  c.local_ip4 = sim::Network::host_ip4(h);
  c.local_mac = sim::Network::host_mac(h);
  c.mtu = rc.mtu;
  c.max_qps = std::max<uint32_t>(qps, 1);
  auto dcqcn = DcqcnConfig::preset(rc.dcqcn_preset, rc.fabric.host_gbps);
  if (!dcqcn.ok()) return dcqcn.status();
  c.dcqcn = *dcqcn;
  c.seed = rc.seed * 1000003 + h;
  if (rc.verb == Verb::kSend) c.max_recvs = 65536;  // a receive per incoming flow at most
  return c;
}

}  // namespace uet::ab
