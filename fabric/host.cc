// The domain's packet host (io_uring or DPDK) and its progress, by the application or a thread.
#include <unistd.h>

#include <future>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "fabric/uetref.h"
#ifdef UETREF_HAVE_DPDK
#include "dpdk-io/dpdk_io.h"
#endif

namespace uet::fabric {

namespace {

// A few passes: one receives and answers, the next sends what the answers released.
size_t poll_passes(io::HostLoop& loop) {
  size_t moved = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t m = loop.poll_once();
    if (m == 0) break;
    moved += m;
  }
  return moved;
}

// A free loopback address for a process that named none: 127.128.0.0/9 keyed by the process
// id, so that two processes on one host rarely try the same one first. RoCEv2 takes them from
// 127.129.0.0/16: addresses bound there differ in their low 16 bits, which name the QPs
// (rc_messaging.h).
uint32_t loopback_candidate(uint32_t attempt, bool rocev2) {
  const uint32_t pid = static_cast<uint32_t>(getpid()) + attempt * 7919;
  uint32_t host = pid & (rocev2 ? 0xffff : 0x7fffff);
  if ((host & 0xff) == 0 || (host & 0xff) == 0xff) host ^= 0x1;
  return rocev2 ? (127u << 24 | 129u << 16 | host) : ((127u << 24) | 0x800000 | host);
}

int open_uring(Domain& d, const Params& p, uint32_t wanted_ip4) {
  const bool pick = wanted_ip4 == 0;
  for (uint32_t attempt = 0; attempt < (pick ? 64u : 1u); ++attempt) {
    const uint32_t ip = pick ? loopback_candidate(attempt, p.transport == "rocev2") : wanted_ip4;
    io::UringIoConfig c;
    c.local_ip4 = ip;
    c.udp_port = port_of(p);
    c.local_mac = mac_of(ip);
    // Inside an application: our completions must not cut its own blocking calls short.
    c.defer_taskrun = true;
    c.wakeable = d.auto_progress;  // posts wake the progress thread
    // Bulk data in 64 KiB sends and receives, as libfabric's tcp provider moves it
    // (dpdk-io/uring_io.h); the EVs map onto ev_sockets wire ports, so fewer make longer
    // GSO groups (each group leaves on one port, i.e. one path).
    c.gso = c.gro = p.udp_offload;
    c.ev_sockets = static_cast<uint16_t>(p.ev_sockets);
    // §5.2: TSS authenticates the UDP ports, but the socket picks the source port: one socket
    // sends, and the engine seals its port (UetConfig::udp_source_port).
    if (!p.tss_key_file.empty()) c.ev_sockets = 1;
    auto u = io::UringIo::create(c);
    if (!u.ok()) {
      if (pick && absl::StrContains(u.status().message(), "in use")) continue;
      FI_WARN(&kProvider, FI_LOG_DOMAIN, "%s\n", std::string(u.status().message()).c_str());
      return -FI_EADDRNOTAVAIL;
    }
    d.uring = std::move(*u);
    d.io = d.uring.get();
    d.local_ip4 = ip;
    return 0;
  }
  FI_WARN(&kProvider, FI_LOG_DOMAIN, "no free loopback address after 64 tries; set FI_UETREF_ADDR\n");
  return -FI_EADDRINUSE;
}

// FI_UETREF_HOST=dpdk: the EAL (once per process, with FI_UETREF_EAL's arguments, and kept to
// the end of it: DPDK cannot start twice) and one DpdkIo on FI_UETREF_DPDK_PORT. The domain
// owns the port: a second domain of the process on it is refused.
int open_dpdk(Domain& d, const Params& p, uint32_t ip) {
#ifdef UETREF_HAVE_DPDK
  if (ip == 0) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN,
            "FI_UETREF_HOST=dpdk: give the port's IPv4 address (FI_UETREF_ADDR)\n");
    return -FI_EINVAL;
  }
  static io::DpdkEal* eal = nullptr;  // the process's, never torn down
  static std::string eal_args;
  if (eal == nullptr) {
    std::vector<std::string> args{"uetref"};
    for (absl::string_view a : absl::StrSplit(p.eal, ' ', absl::SkipEmpty())) args.emplace_back(a);
    auto e = io::DpdkEal::init(args);
    if (!e.ok()) {
      FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_EAL=\"%s\": %s\n", p.eal.c_str(),
              std::string(e.status().message()).c_str());
      return -FI_EINVAL;
    }
    eal = e->release();
    eal_args = p.eal;
  } else if (p.eal != eal_args) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN,
            "FI_UETREF_EAL changed after the EAL started (\"%s\"): the first arguments stand\n",
            eal_args.c_str());
  }
  if (p.dpdk_port >= eal->port_count()) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_DPDK_PORT=%u out of range: 0..%d (ports: %s)\n",
            p.dpdk_port, static_cast<int>(eal->port_count()) - 1, eal->describe_ports().c_str());
    return -FI_EINVAL;
  }
  io::DpdkIoConfig c;
  c.port_id = static_cast<uint16_t>(p.dpdk_port);
  c.local_ip4 = ip;
  c.local_mac = mac_of(ip);
  c.promiscuous = true;  // the MAC the engines use is ours, not the port's
  auto io = io::DpdkIo::create(c);
  if (!io.ok()) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_HOST=dpdk: %s\n",
            std::string(io.status().message()).c_str());
    return -FI_EBUSY;
  }
  d.ethdev = io->get();
  d.dpdk = std::move(*io);
  d.io = d.dpdk.get();
  d.local_ip4 = ip;
  return 0;
#else
  (void)d;
  (void)p;
  (void)ip;
  FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_HOST=dpdk: this provider was built without DPDK\n");
  return -FI_ENOSYS;
#endif
}

// FI_PROGRESS_AUTO's thread: opens the host (reporting how through `opened`), waits for the
// engine, then runs the host loop until the domain closes, and closes the host itself.
void run_progress(Domain& d, uint32_t ip, std::promise<int>& opened) {
  const int err = open_host(d, d.params, ip);
  opened.set_value(err);  // `opened` is gone from here on
  if (err != 0) return;
  std::unique_lock lock(d.mu);
  d.progressed.wait(lock, [&d] { return d.loop != nullptr || d.stopping; });
  while (!d.stopping) {
    const size_t moved = poll_passes(*d.loop);
    if (d.drain() > 0) d.progressed.notify_all();
    if (moved > 0) {  // more to come: let a waiting application call in between passes
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
      continue;
    }
    // Idle: sleep in the ring until a frame, the engine's next timer, or a post's wake().
    const Time deadline = std::min(d.mux.next_deadline(), io::monotonic_now() + 10 * kMillisecond);
    lock.unlock();
    d.uring->wait(deadline);
    lock.lock();
  }
  if (d.engine != nullptr) {  // none if open_engine failed
    d.linger();
    if (d.params.stats) print_stats(d);
  }
  d.loop.reset();
  d.io = nullptr;
  d.uring.reset();  // its teardown enters the ring: this thread's
}

}  // namespace

wire::MacAddr mac_of(uint32_t ip4) {
  // The io_uring host writes its own Ethernet headers; the MAC only has to be stable.
  return {0x02, 0x00, static_cast<uint8_t>(ip4 >> 24), static_cast<uint8_t>(ip4 >> 16),
          static_cast<uint8_t>(ip4 >> 8), static_cast<uint8_t>(ip4)};
}

int open_host(Domain& d, const Params& p, uint32_t ip) {
  return p.host == "dpdk" ? open_dpdk(d, p, ip) : open_uring(d, p, ip);
}

// What a peer's receive socket holds in flight at most (half of it); a DPDK host has no socket.
uint64_t socket_window(const Domain& d) {
  return d.uring != nullptr ? d.uring->setup().rx_socket_bytes / 2 : UINT64_MAX;
}

// Starts the progress thread, which opens the host; returns how that went.
int start_progress(Domain& d, uint32_t ip) {
  std::promise<int> opened;
  std::future<int> result = opened.get_future();
  d.progress_thread = std::thread([&d, ip, &opened] { run_progress(d, ip, opened); });
  const int err = result.get();
  if (err != 0) d.progress_thread.join();
  return err;
}

// A link that is not up drops what the engines send, and their retries would run out before
// a memif peer connects (its client tries about once a second): the first post or address
// waits for it, not fi_domain (a peer may open its domain only after ours answers it).
void Domain::wait_for_link() {
#ifdef UETREF_HAVE_DPDK
  if (ethdev == nullptr || link_up) return;
  link_up = true;
  if (!ethdev->wait_link_up(10 * kSecond)) {
    FI_WARN(&kProvider, FI_LOG_DOMAIN, "FI_UETREF_HOST=dpdk: port %u's link is not up after 10 s\n",
            params.dpdk_port);
  }
#endif
}

// The backend drops a frame to a neighbour ARP has not resolved yet, and the engine's
// retransmission timer (50 ms) would stall the first message: ask now, while the peer is
// being added, and poll for the answer a little (the peer answers while it polls).
void Domain::resolve(uint32_t peer) {
#ifdef UETREF_HAVE_DPDK
  if (ethdev == nullptr || peer == local_ip4) return;
  wait_for_link();
  if (ethdev->neighbour(peer) != nullptr) return;
  ethdev->solicit(peer);
  const Time end = io::monotonic_now() + 50 * kMillisecond;
  while (ethdev->neighbour(peer) == nullptr && io::monotonic_now() < end) loop->poll_once();
#else
  (void)peer;
#endif
}

void Domain::progress() {
  if (!auto_progress) poll_passes(*loop);
  drain();
}

void Domain::posted() {
  if (auto_progress) {
    uring->wake();
  } else {
    progress();
  }
}

void Domain::idle(Time deadline) {
  std::unique_lock lock(mu);
  if (!auto_progress) {
    io->wait(std::min(deadline, mux.next_deadline()));
    return;
  }
  // Bounded: a completion the thread drained just before this wait began is seen by the
  // caller's next read, at most this late.
  const Time now = io::monotonic_now();
  if (deadline <= now) return;
  progressed.wait_for(lock, std::chrono::nanoseconds(std::min<Time>(deadline - now, 10 * kMillisecond) / kNanosecond));
}

void Domain::stop_progress() {
  if (!progress_thread.joinable()) return;
  {
    std::lock_guard lock(mu);
    stopping = true;
    // Under the lock: the thread closes the host under it too, so `uring` is still there.
    if (uring != nullptr) uring->wake();
  }
  progressed.notify_all();
  progress_thread.join();
}

}  // namespace uet::fabric
