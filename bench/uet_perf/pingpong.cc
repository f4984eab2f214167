// uet-perf --pingpong (bench/uet_perf/main.cc): the device's own round trip, no transport.
#include "bench/uet_perf/lane.h"

namespace uet::perf {

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
