// uet-perf (bench/uet_perf/main.cc): options, the backends and the tap, shared by its files.
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "dpdk-io/host_loop.h"
#include "dpdk-io/packet_io.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/tss/key_file.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/wire/pcap.h"
#ifdef UET_PERF_HAVE_DPDK
#include "dpdk-io/dpdk_io.h"
#endif
#ifdef UET_PERF_HAVE_URING
#include "dpdk-io/uring_io.h"
#endif


namespace uet::perf {

extern std::atomic<bool> g_stop;
// The flags named on the command line (main() fills it before parsing), whatever their value.
std::set<std::string>& given_flags();
void on_signal(int);

inline constexpr uint64_t kRegionCap = 64ull << 20;  // bytes of the target region at most
inline constexpr uint32_t kQpn = 0x100;              // RoceConfig::qpn_base: our one QP

// ---------------------------------------------------------------------------------------------
// Options (options.cc)

struct Options {
  bool server = false;
  Time base_rtt = 0;      // UET NSCC's base RTT: --base_rtt_us, else measured at start-up
  Time rto = 0, min_rto = 0, max_rto = 0;  // UET
  uint32_t rto_rtt_max_pct = 0;             // UET
  CcMode cc = CcMode::kNscc;                // UET; the server adopts the client's
  uint32_t ack_timeout_exp = 0;             // RoCEv2
  uint32_t max_retries = 0;                 // UET
  uint32_t retry_cnt = 0;                   // RoCEv2
  Time progress = 0;                        // --progress_ms, 0 = none
  std::string server_host;
  uint16_t oob_port = 0;
  bool uet = true;
  std::string io;
  uint64_t size = 0;
  uint64_t iters = 0;
  uint32_t duration_s = 0;
  bool lat = false;
  bool pingpong = false;
  uint32_t depth = 0;
  uint32_t mtu = 0;
  uint32_t ip = 0;
  wire::MacAddr mac{};
  std::vector<std::pair<uint32_t, wire::MacAddr>> neigh;
  double loss = 0;
  uint64_t seed = 0;
  Time timeout = 0;
  std::string op = "write";  // write, read or send
  bool bidir = false;
  uint32_t lanes = 1;  // --lcores_io
  uint32_t lane = 0;   // this engine's index (a lane's copy of the options)
  std::optional<tss::TssConfig> tss;  // --tss: the domains of --key_file
  // DPDK
  uint16_t port = 0;
  uint32_t dev_mtu = 0, mbufs = 0;
  Time tx_hold = 0;
  bool zero_copy = true, xstats = false;
  bool csum_offload = true;  // UET over DPDK: UDP checksums by the device where it offers it
  uint64_t window_bytes = 0;  // UET
  std::string uring_zc = "auto";  // io_uring: zero-copy transmit, auto, on or off
  bool uring_offload = true;      // io_uring: UDP GSO and GRO
  std::string clock = "auto";     // the host clock: auto, tsc or monotonic
  std::string json_path, pcap_path;
};

absl::StatusOr<Options> options_from_flags();
// What a frame holds besides --mtu bytes of payload at most (UetConfig::frame_overhead(), with
// --tss; RoceEndpoint::kMaxHeaderBytes), and the refusal of an --mtu whose packets do not fit
// frames of `frame` bytes (`whose`: what sets that size), or "".
uint32_t frame_headers(const Options& o);
std::string mtu_refusal(const Options& o, uint32_t frame, const std::string& whose);
// The congestion control a name spells (to_string(CcMode): --cc, and the client's in HELLO).
std::optional<CcMode> cc_mode_of(absl::string_view name);
std::string ip_str(uint32_t ip);
std::string mac_str(const wire::MacAddr& m);

// Neighbours the engines' resolver sees (io.cc).
std::unordered_map<uint32_t, wire::MacAddr>& resolver_table();
wire::MacAddr resolve_mac(uint32_t ip4);

// ---------------------------------------------------------------------------------------------
// The tap: random loss before the device and the pcap of what went out and came in. A
// PacketIo around the backend, so it works for every backend.

inline uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

class TapIo final : public io::PacketIo {
 public:
  // A frame's bytes as they go on the wire (a payload sent by reference copied in).
  std::span<const uint8_t> gathered(const Frame& f) {
    if (f.ref_len == 0) return {f.data, f.len};
    scratch_.resize(f.len + f.ref_len);
    std::memcpy(scratch_.data(), f.data, f.ref_at);
    std::memcpy(scratch_.data() + f.ref_at, f.ref, f.ref_len);
    std::memcpy(scratch_.data() + f.ref_at + f.ref_len, f.data + f.ref_at, f.len - f.ref_at);
    return scratch_;
  }

  TapIo(io::PacketIo& inner, double loss, uint64_t seed, std::optional<wire::PcapWriter> pcap)
      : inner_(inner), loss_(loss), rng_(seed), pcap_(std::move(pcap)) {}

  size_t rx_burst(std::span<Frame*> out) override {
    const size_t n = inner_.rx_burst(out);
    if (pcap_) {
      const uint64_t t = realtime_ns();
      for (size_t i = 0; i < n; ++i) (void)pcap_->write({out[i]->data, out[i]->len}, t);
    }
    return n;
  }
  void release_rx(std::span<Frame* const> frames) override { inner_.release_rx(frames); }
  size_t alloc_tx(std::span<Frame*> out) override { return inner_.alloc_tx(out); }
  size_t tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) override {
    if (loss_ <= 0 && !pcap_) return inner_.tx_burst(filled, unused);
    std::array<Frame*, 2 * io::kMaxBurst> keep{}, drop{};
    size_t k = 0, d = 0;
    for (Frame* f : filled) {
      if (loss_ > 0 && dist_(rng_) < loss_) {
        drop[d++] = f;
        ++lost_;
      } else {
        keep[k++] = f;
      }
    }
    if (pcap_) {
      const uint64_t t = realtime_ns();
      for (size_t i = 0; i < k; ++i) (void)pcap_->write(gathered(*keep[i]), t);
    }
    for (Frame* f : unused) drop[d++] = f;
    return inner_.tx_burst({keep.data(), k}, {drop.data(), d});
  }
  void wait(Time deadline) override { inner_.wait(deadline); }
  io::IoStats stats() const override { return inner_.stats(); }

  uint64_t lost() const noexcept { return lost_; }
  void close() {
    if (pcap_) (void)pcap_->close();
    pcap_.reset();
  }

 private:
  io::PacketIo& inner_;
  double loss_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> dist_{0.0, 1.0};
  std::optional<wire::PcapWriter> pcap_;
  std::vector<uint8_t> scratch_;  // gathered(): kept, so a capture allocates once
  uint64_t lost_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Backend selection (io.cc)

// One lane's view of its backend (owned by IoSet).
struct Io {
#ifdef UET_PERF_HAVE_DPDK
  io::DpdkIo* dpdk = nullptr;
#endif
#ifdef UET_PERF_HAVE_URING
  io::UringIo* uring = nullptr;
#endif
  io::PacketIo* backend = nullptr;
  wire::MacAddr mac{};
  uint32_t max_frame = 0;
  uint16_t udp_source_port = 0;  // UetConfig::udp_source_port: the one port the socket sends from
  // uring: the receiving socket's SO_RCVBUF as granted (0: no socket, no bound), and whether
  // net.core.rmem_max capped it; the peer learns it at RXCAP.
  uint32_t rx_socket_bytes = 0;
  bool rx_socket_capped = false;
  std::string description;

  // The peer's MAC if known (uring: any; the kernel routes). Sends an ARP request when asked.
  bool resolved(uint32_t ip4, bool solicit) {
#ifdef UET_PERF_HAVE_DPDK
    if (dpdk != nullptr) {
      if (const wire::MacAddr* m = dpdk->neighbour(ip4)) {
        resolver_table()[ip4] = *m;
        return true;
      }
      if (solicit) dpdk->solicit(ip4);
      return false;
    }
#endif
    (void)ip4;
    (void)solicit;
    return true;
  }
};

// The backends of all lanes.
struct IoSet {
#ifdef UET_PERF_HAVE_DPDK
  std::unique_ptr<io::DpdkEal> eal;  // declared first: destroyed after the port
#endif
  std::vector<std::unique_ptr<io::PacketIo>> backends;
  std::vector<Io> lanes;
};

absl::StatusOr<IoSet> make_io(const Options& o, const std::vector<std::string>& eal_args);

}  // namespace uet::perf
