// The domain: its variables, the engine it hosts, its op slots and their completions.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "fabric/rc_messaging.h"
#include "fabric/uetref.h"
#include "transport/tss/key_file.h"
#include "transport/uet/uet_endpoint.h"
#ifdef UETREF_HAVE_DPDK
#include "dpdk-io/dpdk_io.h"
#endif

namespace uet::fabric {

namespace {

// The variables' ranges, refused by name before the engine sees them.
bool params_ok(const Params& p) {
  struct Range {
    const char* name;
    uint64_t value, lo, hi;
  };
  const Range ranges[] = {
      {"FI_UETREF_PAYLOAD_BYTES", p.payload_bytes, 256, 8192},
      {"FI_UETREF_WINDOW_BYTES", p.window_bytes, 4096, uint64_t{1} << 30},
      {"FI_UETREF_BASE_RTT_US", p.base_rtt_us, 1, 100000},
      {"FI_UETREF_RENDEZVOUS_BYTES", p.rendezvous_bytes, 0, UINT32_MAX},
      {"FI_UETREF_EV_SOCKETS", p.ev_sockets, 1, 1024},
      {"FI_UETREF_LINGER_MS", p.linger_ms, 0, 60000},
  };
  for (const Range& r : ranges) {
    if (r.value < r.lo || r.value > r.hi) {
      FI_WARN(&kProvider, FI_LOG_DOMAIN, "%s=%lu out of range: %lu..%lu\n", r.name,
              static_cast<unsigned long>(r.value), static_cast<unsigned long>(r.lo),
              static_cast<unsigned long>(r.hi));
      return false;
    }
  }
  if (p.rendezvous_bytes != 0 && p.rendezvous_bytes < p.payload_bytes) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN,
            "FI_UETREF_RENDEZVOUS_BYTES=%lu out of range: 0, or FI_UETREF_PAYLOAD_BYTES..%u\n",
            static_cast<unsigned long>(p.rendezvous_bytes), UINT32_MAX);
    return false;
  }
  if (p.timeout_ms != 0 && (p.timeout_ms < 50 || p.timeout_ms > 60000)) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_TIMEOUT_MS=%u out of range: 50..60000\n",
            p.timeout_ms);
    return false;
  }
  if (p.transport != "uet" && p.transport != "rocev2") {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_TRANSPORT=%s unknown: uet or rocev2\n",
            p.transport.c_str());
    return false;
  }
  if (p.rendezvous != "write" && p.rendezvous != "read") {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_RENDEZVOUS=%s unknown: write or read\n",
            p.rendezvous.c_str());
    return false;
  }
  if (p.host != "uring" && p.host != "dpdk") {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_HOST=%s unknown: uring or dpdk\n",
            p.host.c_str());
    return false;
  }
  if (p.transport == "rocev2" && !p.tss_key_file.empty()) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN,
            "FI_UETREF_TSS_KEY_FILE seals UET frames: not with FI_UETREF_TRANSPORT=rocev2\n");
    return false;
  }
  return true;
}

// auth_key (fi_domain(3)) is the endpoint's UET JobID (spec/uet.md §4.1): up to 3 bytes, least
// significant first; a target answers requests of another job BAD_JOB_ID.
int job_of(const fi_info* info, uint32_t* job) {
  *job = 0;
  if (info == nullptr || info->domain_attr == nullptr || info->domain_attr->auth_key_size == 0)
    return 0;
  const size_t n = info->domain_attr->auth_key_size;
  if (n > 3 || info->domain_attr->auth_key == nullptr) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN,
            "auth_key of %zu bytes: the UET JobID is 24 bits, 1..3 bytes\n", n);
    return -FI_EINVAL;
  }
  for (size_t i = 0; i < n; ++i) *job |= uint32_t{info->domain_attr->auth_key[i]} << (8 * i);
  return 0;
}

// FI_PROGRESS_AUTO for either kind of progress. The DPDK host polls and never sleeps: a thread
// of its own would spin on a core the application did not give it.
int auto_progress_of(const fi_info* info, const Params& p, bool* on) {
  const fi_domain_attr* a = info != nullptr ? info->domain_attr : nullptr;
  *on = a != nullptr &&
        (a->data_progress == FI_PROGRESS_AUTO || a->control_progress == FI_PROGRESS_AUTO);
  if (*on && p.host == "dpdk") {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_PROGRESS_AUTO: not with FI_UETREF_HOST=dpdk\n");
    return -FI_ENODATA;
  }
  return 0;
}

// The bytes a frame of the domain's host holds: the io_uring host's buffers, or the DPDK
// port's largest frame (its MTU plus Ethernet and one 802.1Q tag).
uint32_t host_frame_bytes(const Domain& d) {
#ifdef UETREF_HAVE_DPDK
  if (d.ethdev != nullptr) return d.ethdev->max_frame();
#endif
  return d.uring != nullptr ? d.uring->config().frame_capacity : 0;
}

// A packet's headers (`headers`) and FI_UETREF_PAYLOAD_BYTES of payload must fit the host's
// frames, or every operation would fail kFrameTooSmall: refused here, with the range.
bool payload_fits(const Domain& d, const Params& p, uint32_t headers) {
  const uint32_t frame = host_frame_bytes(d);
  if (frame == 0 || uint64_t{p.payload_bytes} + headers <= frame) return true;
  const uint32_t hi = frame > headers ? frame - headers : 0;
  FI_WARN(&kProvider, FI_LOG_DOMAIN,
          "FI_UETREF_PAYLOAD_BYTES=%u out of range for FI_UETREF_HOST=%s: 256..%u (frames of %u "
          "bytes, %u of them headers)\n",
          p.payload_bytes, p.host.c_str(), hi, frame, headers);
  return false;
}

// FI_UETREF_TIMEOUT_MS under UET: the RTO's ceiling. 200 ms by default, uet-perf's for
// --io=uring: a kernel-socket host inside someone else's process stalls for milliseconds.
Time uet_max_rto(const Params& p) {
  return (p.timeout_ms != 0 ? p.timeout_ms : 200) * kMillisecond;
}

// FI_UETREF_TIMEOUT_MS under RoCEv2: the ACK timeout 4.096 us x 2^n (IB's encoding), the
// smallest at least as long; 14 (67 ms) by default.
uint8_t rocev2_ack_timeout_exp(const Params& p) {
  if (p.timeout_ms == 0) return 14;
  uint8_t n = 0;
  while ((Time{4096} * kNanosecond << n) < Time{p.timeout_ms} * kMillisecond) ++n;
  return n;
}

// FI_UETREF_TRANSPORT=rocev2: the RC engine under the messaging layer of rc_messaging.h, with
// the timers and window a kernel-socket host needs (as open_engine's UET).
int open_rocev2(Domain& d, const Params& p) {
  RoceConfig c;
  c.local_ip4 = d.local_ip4;
  c.local_mac = mac_of(d.local_ip4);
  c.resolve_mac = &mac_of;
  c.mtu = 4096;
  while (c.mtu > p.payload_bytes && c.mtu > 256) c.mtu /= 2;  // a power of 2 up to the payload
  if (!payload_fits(d, p, RoceEndpoint::kMaxHeaderBytes)) return -FI_EINVAL;
  c.max_qps = 65536;  // QP numbers come from the peers' addresses' low 16 bits
  c.qpn_base = RcMessaging::kQpnBase;
  c.max_send_wr = 4096;
  c.max_recvs = 4096;
  // RC has no window but the PSN space, and a receive socket drops what does not fit: as
  // much in flight per QP as UET's window (at most half the socket), acknowledged often.
  const uint64_t window = std::min<uint64_t>(p.window_bytes, socket_window(d));
  c.max_outstanding_psns = static_cast<uint32_t>(std::max<uint64_t>(window / c.mtu, 4));
  c.ack_req_every = std::max<uint32_t>(c.max_outstanding_psns / 4, 1);
  // The ACK timeout of a kernel host and a bounded retry budget, so a dead peer fails an
  // operation (7 would retry for ever).
  c.ack_timeout_exp = rocev2_ack_timeout_exp(p);
  c.retry_cnt = 6;
  c.seed = d.local_ip4;
  auto e = RoceEndpoint::create(c);
  if (!e.ok()) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_*: %s\n", std::string(e.status().message()).c_str());
    return -FI_EINVAL;
  }
  RcMessagingConfig m;
  // Eager up to the rendezvous threshold (64 KiB at most: every receive buffer holds one).
  m.eager_bytes = static_cast<uint32_t>(
      std::min<uint64_t>(p.rendezvous_bytes == 0 ? 65536 : p.rendezvous_bytes, 65536));
  auto rc = std::make_unique<RcMessaging>(std::move(*e), m);
  if (absl::Status s = rc->init(); !s.ok()) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "%s\n", std::string(s.message()).c_str());
    return -FI_ENOMEM;
  }
  d.rc = rc.get();
  d.engine = std::move(rc);
  d.mux.set(0, d.engine.get());
  d.loop = std::make_unique<io::HostLoop>(*d.io, d.mux);
  return 0;
}

}  // namespace

int make_uet_engine(const Domain& d, uint32_t pid, std::unique_ptr<Endpoint>* out) {
  const Params& p = d.params;
  UetConfig c;
  c.local_ip4 = d.local_ip4;
  c.local_mac = mac_of(d.local_ip4);
  c.resolve_mac = &mac_of;
  c.payload_bytes = p.payload_bytes;
  // The peer's receive socket drops what does not fit: keep no more than it holds in flight.
  c.window_bytes = std::min<uint64_t>(p.window_bytes, socket_window(d));
  // The kernel computes the real UDP checksum (dpdk-io/uring_io.h); over DPDK the engine does.
  c.udp_checksum = d.uring == nullptr;
  c.rendezvous_bytes = p.rendezvous_bytes;
  c.rendezvous_push = p.rendezvous == "write";
  // The kernel gathers the payload from the registered buffer (no copy into the frame).
  c.tx_by_reference = p.udp_offload;
  // A kernel-socket host inside someone else's process stalls for milliseconds (scheduling,
  // the application's own work between calls): uet-perf's timers for --io=uring, so that a
  // stall is not taken for a loss.
  c.rto = 50 * kMillisecond;
  c.min_rto = 50 * kMillisecond;
  c.max_rto = uet_max_rto(p);
  c.rto_rtt_max_pct = 150;
  c.base_rtt = static_cast<Time>(p.base_rtt_us) * kMicrosecond;
  // PDCs to the peers of a job stay open between its phases (spec/uet.md §3.12 lets either
  // side close an idle one; reopening is cheap, but not free on a host that stalls).
  c.idle_timeout = kSecond;
  // A libfabric send waits for its receive however late it is posted (an MPI rank may compute
  // for minutes first): rendezvous sources and deferred sends are held as long as the engine
  // allows (its tables bound how many).
  c.rendezvous_timeout = 1000 * kSecond;
  c.deferral_timeout = 1000 * kSecond;
  // ... but not on a dead peer: a target that holds our operations is asked whether it lives
  // (REQ_ACK) once idle this long, so a killed process fails them within the retry budget.
  c.hold_probe_after = kSecond;
  c.job_id = d.job;
  c.pid_on_fep = pid;  // §4.1: the endpoint's process on the domain's FEP
  // Engine 0 serves its endpoint's messages at resource index 0 and the domain's memory at 1.
  c.resource_indexes = pid == 0 ? 2 : 1;
  c.max_pdcs = EngineMux::kPdcsPerEngine;  // the mux's PID sits above its PDC ids
  c.seed = d.local_ip4 + pid;
  if (!p.tss_key_file.empty()) {
    auto t = tss::read_key_file(p.tss_key_file);
    if (!t.ok()) {
      FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_TSS_KEY_FILE: %s\n",
              std::string(t.status().message()).c_str());
      return -FI_EINVAL;
    }
    c.tss = std::move(*t);
    if (d.uring != nullptr) c.udp_source_port = d.uring->ev_ports()[0];
  }
  if (!payload_fits(d, p, c.frame_overhead())) return -FI_EINVAL;
  auto e = UetEndpoint::create(c);
  if (!e.ok()) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_*: %s\n", std::string(e.status().message()).c_str());
    return -FI_EINVAL;
  }
  *out = std::move(*e);
  return 0;
}

namespace {

int open_engine(Domain& d, const Params& p) {
  if (p.transport == "rocev2") return open_rocev2(d, p);
  if (int err = make_uet_engine(d, 0, &d.engine); err != 0) return err;
  d.mux.set(0, d.engine.get());
  d.loop = std::make_unique<io::HostLoop>(*d.io, d.mux);
  return 0;
}

uint32_t wanted_address(const fi_info* info, const Params& p, int* err) {
  *err = 0;
  if (!p.addr.empty()) {
    in_addr a{};
    if (inet_pton(AF_INET, p.addr.c_str(), &a) != 1) {
      FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_ADDR=%s is not a dotted IPv4 address\n",
              p.addr.c_str());
      *err = -FI_EINVAL;
      return 0;
    }
    return ntohl(a.s_addr);
  }
  if (info != nullptr && info->src_addr != nullptr && info->src_addrlen == sizeof(sockaddr_in)) {
    return ntohl(static_cast<const sockaddr_in*>(info->src_addr)->sin_addr.s_addr);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The domain object.

// The host's half of the FI_UETREF_STATS line.
std::string host_stats(const Domain& d) {
  const io::IoStats io = d.io->stats();
  if (d.uring == nullptr) {
    std::string s = absl::StrCat("host (dpdk) rx ", io.rx_packets, " tx ", io.tx_packets,
                                 " no-buffer ", io.tx_no_buffer);
#ifdef UETREF_HAVE_DPDK
    absl::StrAppend(&s, " no-neighbour ", d.ethdev->counters().tx_no_neighbour);
#endif
    return s;
  }
  const io::UringCounters& h = d.uring->counters();
  return absl::StrCat(
      "host rx ", io.rx_packets, " tx ", io.tx_packets, " no-buffer ", io.tx_no_buffer,
      " send errors ", h.tx_send_errors, " (errno ", h.last_send_errno, ") rx errors ",
      h.rx_errors, " (errno ", h.last_rx_errno, ") rearms ", h.rx_rearms, " truncated ",
      h.rx_truncated, " bad ", h.rx_bad, " kernel drops ", h.rx_kernel_dropped, "; gso ",
      h.tx_gso_sends, "/", h.tx_gso_datagrams, " gro ", h.rx_gro_receives, "/",
      h.rx_gro_datagrams, " split waits ", h.rx_split_waits,
      d.auto_progress ? "; progress thread" : "", "; endpoints ", d.eps.size(),
      " no-endpoint ", d.mux.counters().rx_no_endpoint);
}

}  // namespace

void print_stats(const Domain& d) {
  const std::string host = host_stats(d);
  if (d.rc != nullptr) {
    const RoceCounters& k = d.rc->rc().counters();
    const RcMessagingCounters& m = d.rc->counters();
    std::fprintf(stderr,
                 "uetref %s (rocev2): data %lu retx %lu (go-back-n %lu timeouts %lu rnr naks %lu) "
                 "read responses %lu acks %lu/%lu naks %lu reads %lu atomics executed %lu; "
                 "messages eager %lu/%lu rendezvous %lu/%lu fins %lu pings %lu/%lu unexpected "
                 "%lu truncated %lu malformed %lu; %s; ack timeout %lu ms\n",
                 inet_ntoa(in_addr{htonl(d.local_ip4)}), k.tx_data, k.tx_retx, k.go_back_n,
                 k.timeouts, k.rx_rnr_naks, k.tx_read_responses, k.tx_acks, k.rx_acks, k.tx_naks,
                 k.tx_reads, k.rx_atomics, m.eager_sent, m.eager_received, m.rendezvous_sent,
                 m.rendezvous_read, m.fins_sent, m.pings_sent, m.pings_failed, m.unexpected,
                 m.truncated, m.malformed, host.c_str(),
                 static_cast<unsigned long>(d.rc->rc().config().ack_timeout() / kMillisecond));
    return;
  }
  const auto& u = static_cast<const UetEndpoint&>(*d.engine);
  const UetCounters& k = u.counters();
  std::fprintf(stderr,
               "uetref %s: data %lu retx %lu (timeouts %lu fast %lu nack %lu tlp %lu rnr %lu) "
               "acks %lu/%lu rendezvous %lu reads %lu cts %lu pushes %lu/%lu timeouts %lu "
               "deferred %lu/%lu "
               "unexpected %lu; %s; rod staged %lu late %lu unstageable %lu no-buffer %lu; "
               "tss sealed %lu opened %lu dropped %lu clear refused %lu cross-job %lu; atomics "
               "executed %lu replayed %lu refused %lu; max rto %lu ms\n",
               inet_ntoa(in_addr{htonl(d.local_ip4)}), k.tx_data, k.tx_retx, k.timeouts,
               k.fast_retx, k.nack_retx, k.tlp_probes, k.rnr_retx, k.tx_acks, k.rx_acks,
               k.tx_rendezvous, k.rx_rdv_reads, k.tx_rdv_cts, k.tx_rdv_pushes, k.rx_rdv_pushed,
               k.rdv_timeouts + k.rdv_push_timeouts, k.tx_deferred, k.rx_deferred,
               k.rx_tagged_unexpected, host.c_str(), k.rod_staged, k.rod_executed_late,
               k.rod_unstageable, k.rod_no_buffer, u.tss() ? u.tss()->counters().sealed : 0,
               u.tss() ? u.tss()->counters().opened : 0, u.tss() ? u.tss()->counters().dropped() : 0,
               k.rx_clear_refused, k.rx_tss_cross_job, k.rx_atomics, k.rx_atomic_replays,
               k.rx_atomic_refused,
               static_cast<unsigned long>(uet_max_rto(d.params) / kMillisecond));
}

namespace {

int domain_close(fid* f) {
  Domain* d = of<Domain>(f);
  {
    std::lock_guard lock(d->mu);
    if (d->children > 0) return -FI_EBUSY;  // fi_domain(3): close its objects first
  }
  if (!d->auto_progress) {
    std::lock_guard lock(d->mu);
    d->linger();
    if (d->params.stats) print_stats(*d);
  }
  delete d;  // AUTO: ends the thread, which lingers and prints the stats
  return 0;
}

fi_ops kDomainFiOps = fid_ops(domain_close);

int no_sep(fid_domain*, fi_info*, fid_ep**, void*) { return -FI_ENOSYS; }
int no_poll(fid_domain*, fi_poll_attr*, fid_poll**) { return -FI_ENOSYS; }
int no_stx(fid_domain*, fi_tx_attr*, fid_stx**, void*) { return -FI_ENOSYS; }
int no_srx(fid_domain*, fi_rx_attr*, fid_ep**, void*) { return -FI_ENOSYS; }
int no_query_collective(fid_domain*, fi_collective_op, fi_collective_attr*, uint64_t) {
  return -FI_ENOSYS;
}
int endpoint2(fid_domain* d, fi_info* info, fid_ep** ep, uint64_t flags, void* ctx) {
  return flags == 0 ? ep_open(d, info, ep, ctx) : -FI_EINVAL;
}

fi_ops_domain kDomainOps = {
    .size = sizeof(fi_ops_domain),
    .av_open = av_open,
    .cq_open = cq_open,
    .endpoint = ep_open,
    .scalable_ep = no_sep,
    .cntr_open = cntr_open,
    .poll_open = no_poll,
    .stx_ctx = no_stx,
    .srx_ctx = no_srx,
    .query_atomic = query_atomic,
    .query_collective = no_query_collective,
    .endpoint2 = endpoint2,
};

}  // namespace

int domain_open(fid_fabric* fabric, fi_info* info, fid_domain** dom, void* context) {
  if (info != nullptr && info->domain_attr != nullptr && info->domain_attr->name != nullptr &&
      std::strcmp(info->domain_attr->name, "uet") != 0) {
    return -FI_EINVAL;
  }
  auto d = std::make_unique<Domain>();
  d->fid.fid.fclass = FI_CLASS_DOMAIN;
  d->fid.fid.context = context;
  d->fid.fid.ops = &kDomainFiOps;
  d->fid.ops = &kDomainOps;
  d->fid.mr = &kMrOps;
  d->fabric = fabric;
  d->params = read_params();
  if (!params_ok(d->params)) return -FI_EINVAL;
  int err = 0;
  const uint32_t ip = wanted_address(info, d->params, &err);
  if (err != 0) return err;
  if ((err = job_of(info, &d->job)) != 0) return err;
  if (d->job != 0 && d->params.transport == "rocev2") {
    FI_WARN(&kProvider, FI_LOG_DOMAIN,
            "auth_key is the UET JobID (spec/uet.md §4.1): RoCEv2 has none to carry it\n");
    return -FI_EINVAL;
  }
  if ((err = auto_progress_of(info, d->params, &d->auto_progress)) != 0) return err;
  if ((err = d->auto_progress ? start_progress(*d, ip) : open_host(*d, d->params, ip)) != 0)
    return err;
  {
    std::lock_guard lock(d->mu);  // the progress thread waits for the engine
    if ((err = open_engine(*d, d->params)) != 0) return err;
  }
  d->progressed.notify_all();
  d->ops.resize(kTxSize + kRxSize);
  d->free_ops.reserve(d->ops.size());
  for (size_t i = d->ops.size(); i-- > 0;) d->free_ops.push_back(static_cast<uint32_t>(i));
  d->inject_bufs.resize(d->ops.size() * kInjectSize);
  FI_INFO(&kProvider, FI_LOG_DOMAIN, "domain on %s:%u (%s)\n",
          inet_ntoa(in_addr{htonl(d->local_ip4)}), d->port(), d->params.transport.c_str());
  *dom = &d.release()->fid;
  return 0;
}

int64_t Domain::take_op() noexcept {
  if (free_ops.empty()) return -1;
  const uint32_t i = free_ops.back();
  free_ops.pop_back();
  ops[i] = OpCtx{};
  ops[i].in_use = true;
  return i;
}

void Domain::free_op(uint32_t i) noexcept {
  ops[i].in_use = false;
  free_ops.push_back(i);
}

int endpoint_engine(Domain& d, uint32_t* pid, std::unique_ptr<Endpoint>* own) {
  *pid = 0;
  if (std::none_of(d.eps.begin(), d.eps.end(), [](const Ep* e) { return e->pid == 0; })) {
    if (!d.pid0_disabled) return 0;
    auto g = static_cast<UetEndpoint&>(*d.engine).enable_resource(0);
    if (!g.ok()) return to_fi_errno(g.status());
    d.pid0_disabled = false;
    d.pid0_generation = *g;
    return 0;
  }
  const char* why = d.rc != nullptr               ? "over RoCEv2"
                    : !d.params.tss_key_file.empty() ? "under TSS (its seal covers the PDC ids)"
                    : d.uring == nullptr          ? "on DPDK (the device checks the UDP checksum)"
                    : d.next_pid >= EngineMux::kMaxEngines ? "past the last PIDonFEP"
                                                           : nullptr;
  if (why != nullptr) {
    FI_WARN(&kProvider, FI_LOG_EP_CTRL, "a second endpoint of a domain: not %s\n", why);
    return -FI_ENOSPC;
  }
  *pid = d.next_pid++;
  return make_uet_engine(d, *pid, own);
}

void endpoint_closed(Domain& d, const Ep& ep) {
  if (ep.own != nullptr) {
    d.mux.set(ep.pid, nullptr);
  } else if (d.rc == nullptr) {
    d.pid0_disabled = static_cast<UetEndpoint&>(*d.engine).disable_resource(0).ok();
  }
}

// Quiet for the longest a peer waits before it sends again (UET: the RTO's ceiling, backoff
// included; RoCEv2: twice its fixed ACK timeout), so a resend of what our lost ACK answered
// arrives while we still listen.
void Domain::linger() {
  if (loop == nullptr || params.linger_ms == 0) return;
  const Time quiet = rc != nullptr ? 2 * rc->rc().config().ack_timeout() : uet_max_rto(params);
  const Time cap = Time{params.linger_ms} * kMillisecond;
  const bool ended_quiet = loop->linger(std::min(quiet, cap), cap, [this] {
    drain();
    return std::any_of(ops.begin(), ops.end(),
                       [](const OpCtx& o) { return o.in_use && (o.flags & FI_RECV) == 0; });
  });
  if (!ended_quiet) {
    FI_INFO(&kProvider, FI_LOG_DOMAIN, "closed after lingering %u ms (FI_UETREF_LINGER_MS)\n",
            params.linger_ms);
  }
}

uint16_t port_of(const Params& p) noexcept {
  return p.transport == "rocev2" ? kRocePort : kUetPort;
}

namespace {

int fi_error_of(OpStatus s) {
  switch (s) {
    case OpStatus::kSuccess: return 0;
    case OpStatus::kTruncated:
    case OpStatus::kLengthError: return FI_ETRUNC;
    case OpStatus::kRetriesExhausted: return FI_ETIMEDOUT;
    case OpStatus::kRemoteAccessError:
    case OpStatus::kAccessDenied: return FI_EACCES;
    case OpStatus::kPdcClosed:
    case OpStatus::kFlushed:
    case OpStatus::kCanceled: return FI_ECANCELED;
    // An error completion is final: FI_EAGAIN would say "try the call again".
    case OpStatus::kReceiverNotReady: return FI_ENORX;  // no receive posted, RNR retries spent
    case OpStatus::kNoResources: return FI_EIO;
    case OpStatus::kRemoteInvalidRequest: return FI_EINVAL;
    case OpStatus::kFrameTooSmall: return FI_EMSGSIZE;  // the host's frames, not the peer
  }
  return FI_EIO;
}

}  // namespace

size_t Domain::drain() {
  size_t total = drain(*engine);
  for (Ep* e : eps) {
    if (e->own != nullptr) total += drain(*e->own);
  }
  return total;
}

size_t Domain::drain(Endpoint& from) {
  Completion cs[32];
  size_t n, total = 0;
  while ((n = from.poll_completions(cs)) > 0) {
    total += n;
    for (size_t k = 0; k < n; ++k) {
      const Completion& c = cs[k];
      const auto i = static_cast<uint32_t>(c.wr_id);
      if (c.wr_id >= ops.size() || !ops[i].in_use) {  // never: each op completes once
        FI_WARN(&kProvider, FI_LOG_CQ, "a completion (%s, %s) for no operation in flight: %lu\n",
                to_string(c.op), to_string(c.status), static_cast<unsigned long>(c.wr_id));
        continue;
      }
      OpCtx& op = ops[i];
      Ep* ep = op.ep;
      const bool rx = (op.flags & FI_RECV) != 0;
      if (ep != nullptr) --(rx ? ep->rx_in_flight : ep->tx_in_flight);
      // FI_DISCARD received the message into no buffer: its truncation is the point.
      const int err = op.discard && c.status == OpStatus::kTruncated ? 0 : fi_error_of(c.status);
      if (op.cntr != nullptr) ++(err == 0 ? op.cntr->value : op.cntr->errors);
      Cq* cq = op.cq != nullptr || ep == nullptr ? op.cq : (rx ? ep->rx_cq : ep->tx_cq);
      if (err == 0 && op.cq != nullptr) {
        CqEntry e{};
        e.e.op_context = op.context;
        e.e.flags = op.flags;
        e.e.len = rx ? c.bytes : 0;
        e.e.buf = rx ? op.buf : nullptr;
        if (c.has_imm) {
          e.e.flags |= FI_REMOTE_CQ_DATA;
          e.e.data = c.imm;
        }
        e.e.tag = c.tag;
        e.src = rx ? source_of(ep, c.peer) : FI_ADDR_NOTAVAIL;
        op.cq->push(e);
      } else if (err != 0 && op.inject) {
        // fi_inject has no context to report against: the failure is logged and counted.
        FI_WARN(&kProvider, FI_LOG_CQ, "an injected %s of %lu bytes failed: %s\n",
                to_string(c.op), static_cast<unsigned long>(c.bytes), to_string(c.status));
      } else if (err != 0 && cq != nullptr) {
        if (op.cq != nullptr) op.cq->unreserve();
        fi_cq_err_entry e{};
        e.op_context = op.context;
        e.flags = op.flags;
        e.len = c.bytes;
        e.buf = rx ? op.buf : nullptr;
        e.data = c.imm;
        e.tag = c.tag;
        e.err = err;
        // The SES return code (spec/uet.md §4.9), for fi_cq_strerror; where the target gave
        // none (no answer at all), the engine's status, negated.
        e.prov_errno = c.return_code != 0 ? c.return_code : -static_cast<int>(c.status);
        FI_INFO(&kProvider, FI_LOG_CQ, "%s of %lu bytes failed: %s (return code %u)\n",
                to_string(c.op), static_cast<unsigned long>(c.bytes), to_string(c.status),
                c.return_code);
        cq->push_error(e);
      }
      free_op(i);
    }
  }
  return total;
}

}  // namespace uet::fabric
