// uet-perf (bench/uet_perf/main.cc): results, the report table and the JSON.
#include "bench/uet_perf/report.h"

namespace uet::perf {

// ---------------------------------------------------------------------------------------------
// Results.

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())));
  return sorted[i];
}

TssOut tss_of(const Options& o, const Endpoint& ep) {
  TssOut t;
  if (!o.uet) return t;
  const auto& u = static_cast<const UetEndpoint&>(ep);
  if (u.tss() == nullptr) return t;
  t.on = true;
  t.c = u.tss()->counters();
  t.backend = tss::backend_detail(u.tss()->backend());
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
      "{\"backend\": \"%s\", \"sealed\": %lu, \"opened\": %lu, \"dropped\": %lu, "
      "\"drops\": {%s}, \"seal_failed\": %lu, \"trimmed_unverified\": %lu, \"rekeys\": %lu, "
      "\"clear_refused\": %lu}",
      t.backend, t.c.sealed, t.c.opened, t.c.dropped(), drops, t.c.seal_failed, t.c.trimmed_unverified,
      t.c.rekeys, t.clear_refused);
}

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
      "\"clock\": \"%s\", \"mbufs\": %s, \"dpdk_tx\": %s, \"udp_checksums\": %s}",
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
      r.error_after_ms, io::tsc_clock_in_use() ? "tsc" : "monotonic",
      l.mbufs_pool < 0 ? std::string("null")
                       : absl::StrFormat("{\"pool\": %d, \"in_use_end\": %d}", l.mbufs_pool,
                                         l.mbufs_in_use_end),
      l.mbufs_pool < 0
          ? std::string("null")
          : absl::StrFormat("{\"ring_full\": %lu, \"ring_full_waits\": %lu, \"stalled\": %lu, "
                            "\"stalls\": %lu, \"drained\": %lu}",
                            l.tx_ring_full, l.tx_ring_full_waits, l.tx_stalled, l.tx_stalls,
                            l.tx_drained),
      l.mbufs_pool < 0 ? std::string("null")
                       : absl::StrFormat("{\"tx_filled_by_device\": %lu, "
                                         "\"rx_verified_by_device\": %lu}",
                                         l.tx_checksum_offloaded, l.rx_checksum_verified));
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

namespace {

// The client's line of perftest's table: latency percentiles (--lat) or rates.
void append_client_table(std::string& t, const Options& o, const Result& r, uint64_t size,
                         double gbps, double mpps, double pkt_mpps) {
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

// The engine's timers and recovery: UET's RTO, resends and PDC counters, or RoCEv2's
// go-back-N restarts.
void append_engine(std::string& t, const Options& o, const Endpoint& ep, LaneOut& out) {
  if (!o.uet) {
    out.go_back_n = static_cast<const RoceEndpoint&>(ep).counters().go_back_n;
    absl::StrAppendFormat(&t, " ack timeout 4.096 us * 2^%u; go-back-N restarts %lu\n",
                          o.ack_timeout_exp, out.go_back_n);
    return;
  }
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
}

// io_uring: the receive sockets (RXCAP), zero-copy sends and GSO/GRO.
void append_uring(std::string& t, const Io& io, LaneOut& out) {
#ifdef UET_PERF_HAVE_URING
  if (io.uring == nullptr) return;
  out.socket_drops = io.uring->counters().rx_kernel_dropped;
  out.rx_socket_bytes = io.rx_socket_bytes;
  out.rx_socket_capped = io.rx_socket_capped;
  absl::StrAppendFormat(&t,
                        " receive socket %lu bytes%s, dropped %lu; peer's %lu bytes: at most "
                        "%lu payload bytes in flight\n",
                        out.rx_socket_bytes, out.rx_socket_capped ? " (capped by rmem_max)" : "",
                        out.socket_drops, out.peer_rx_socket_bytes, out.inflight_bound);
  const io::UringCounters& u = io.uring->counters();
  absl::StrAppendFormat(&t,
                        " io_uring send: zero-copy %s; sends zero-copy %lu, notifications %lu, "
                        "copied by the kernel %lu%s; send errors %lu\n",
                        io.uring->setup().zero_copy_send ? "on" : "off", u.tx_zc_sends,
                        u.tx_zc_notifs, u.tx_zc_copied,
                        io.uring->setup().zero_copy_send && !io.uring->setup().zc_usage_known
                            ? " (not reported by this kernel)"
                            : "",
                        u.tx_send_errors);
  absl::StrAppendFormat(&t,
                        " io_uring offload: GSO %s, %lu sends of %lu datagrams; GRO %s, %lu "
                        "receives of %lu datagrams\n",
                        io.uring->setup().gso ? "on" : "off", u.tx_gso_sends, u.tx_gso_datagrams,
                        io.uring->setup().gro ? "on" : "off", u.rx_gro_receives,
                        u.rx_gro_datagrams);
#else
  (void)t;
  (void)io;
  (void)out;
#endif
}

// DPDK: the port's counters (ARP, TX backpressure, offloads, steering between the lanes'
// queues) and, with --xstats, the device's own.
void append_dpdk(std::string& t, const Options& o, const Io& io, LaneOut& out) {
#ifdef UET_PERF_HAVE_DPDK
  if (io.dpdk == nullptr) return;
  const io::DpdkCounters& c = io.dpdk->counters();
  absl::StrAppendFormat(&t,
                        " dpdk: arp rx %lu answered %lu sent %lu learned %lu; tx no-neighbour %lu "
                        "ring-full %lu too-big %lu; rx not-ip %lu bad-csum %lu multi-seg %lu\n"
                        " dpdk: payloads sent by reference %lu, copied %lu (no small mbuf %lu)\n"
                        " dpdk: UDP checksums filled by the device %lu (refused %lu), verified "
                        "by it %lu\n",
                        c.arp_rx, c.arp_requests_answered, c.arp_requests_sent, c.arp_learned,
                        c.tx_no_neighbour, c.tx_ring_full, c.tx_too_big, c.rx_not_ip,
                        c.rx_bad_checksum, c.rx_multi_segment, c.tx_referenced, c.tx_flattened,
                        c.tx_no_ext_mbuf, c.tx_checksum_offloaded, c.tx_prepare_refused,
                        c.rx_checksum_verified);
  absl::StrAppendFormat(&t,
                        " dpdk tx backpressure: bursts held %lu; device took nothing for "
                        "--tx_hold_us %lu times (%lu frames dropped); left at the end %lu\n",
                        c.tx_ring_full_waits, c.tx_stalls, c.tx_stalled, c.tx_drained);
  out.tx_ring_full = c.tx_ring_full;
  out.tx_ring_full_waits = c.tx_ring_full_waits;
  out.tx_stalled = c.tx_stalled;
  out.tx_stalls = c.tx_stalls;
  out.tx_drained = c.tx_drained;
  out.tx_checksum_offloaded = c.tx_checksum_offloaded;
  out.rx_checksum_verified = c.rx_checksum_verified;
  if (o.lanes > 1) {
    absl::StrAppendFormat(&t, " dpdk queue %u: redirected to other FEPs %lu (inbox full %lu), "
                              "from other queues %lu\n",
                          io.dpdk->queue(), c.rx_redirected, c.rx_redirect_full, c.rx_from_inbox);
  }
  if (o.xstats && o.lane == 0) {
    for (const auto& [name, v] : io.dpdk->xstats())
      if (v != 0) absl::StrAppendFormat(&t, " xstat %-40s %lu\n", name, v);
  }
#else
  (void)t;
  (void)o;
  (void)io;
  (void)out;
#endif
}

}  // namespace

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
  if (!o.server) append_client_table(t, o, r, size, gbps, mpps, pkt_mpps);
  absl::StrAppendFormat(&t,
                        " frames tx %lu rx %lu, dropped tx %lu rx %lu, injected loss %lu; "
                        "retransmitted %lu, timeouts %lu, engine rx drops %lu\n",
                        s.tx_packets, s.rx_packets, s.tx_dropped, s.rx_dropped, tap.lost(),
                        es.retransmitted_packets, es.timeouts, es.rx_dropped);
  append_engine(t, o, ep, out);
  append_uring(t, io, out);
  const TssOut tss = tss_of(o, ep);
  if (tss.on) {
    absl::StrAppendFormat(&t,
                          " tss (%s): sealed %lu, opened %lu, dropped %lu%s; seal failed %lu, "
                          "trimmed unverified %lu, clear refused %lu, packet keys derived %lu\n",
                          tss.backend, tss.c.sealed, tss.c.opened, tss.c.dropped(), tss_drop_reasons(tss),
                          tss.c.seal_failed, tss.c.trimmed_unverified, tss.clear_refused,
                          tss.c.rekeys);
  }
  if (o.server) {
    absl::StrAppendFormat(&t, " data check: %s (%lu bytes checked, %lu mismatched)\n", r.verify,
                          r.checked_bytes, r.mismatched_bytes);
  }
  if (!r.error.empty()) absl::StrAppendFormat(&t, " error: %s\n", r.error);
  t += rule + "\n";
  append_dpdk(t, o, io, out);
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

}  // namespace uet::perf
