// uet-perf (bench/uet_perf/main.cc): results, the report table and the JSON.
#pragma once

#include "bench/uet_perf/control.h"
#include "bench/uet_perf/perf.h"

namespace uet::perf {

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

// TSS (spec/uet.md §5) with --tss: the sublayer's counters and the clear frames the endpoint
// refused.
struct TssOut {
  bool on = false;
  std::string backend;  // the AES-256-GCM library, version and code path
  tss::Counters c;
  uint64_t clear_refused = 0;
  void add(const TssOut& t) {
    on = on || t.on;
    if (backend.empty()) backend = t.backend;
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
           tx_drained = 0, tx_checksum_offloaded = 0, rx_checksum_verified = 0;
  bool reported = false;  // report() ran (else the lane failed before its operations)
  Options shown;          // the options as run (the client's parameters adopted)
  std::string json;  // the lane's result as one JSON object
};

double percentile(const std::vector<double>& sorted, double p);
TssOut tss_of(const Options& o, const Endpoint& ep);
std::string tss_drop_reasons(const TssOut& t);
std::string tss_json(const TssOut& t);
Time retry_budget(const Options& o);
Time stall_bound(const Options& o);
std::string json_of(const Options& o, const LaneOut& l);
bool write_json(const std::string& path, const std::string& text);
void report(const Options& o, const Io& io, TapIo& tap, const Endpoint& ep, Result& r,
            uint64_t size, LaneOut& out);

}  // namespace uet::perf
