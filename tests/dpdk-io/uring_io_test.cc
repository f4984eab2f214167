// The io_uring UDP backend on real loopback sockets: two UringIo instances in one process, on
// two addresses of 127/8, each driving a real engine through HostLoop on the real clock.
// Unprivileged-safe. Every test uses its own /24 (127.0.<k>.1 and .2), so that tests run in
// parallel by ctest, or other suites using the standard ports on 127.0.0.1, do not collide.
// No sleeps: waiting is PacketIo::wait() (io_uring_wait_cqe_timeout), always with a deadline.
#include "dpdk-io/uring_io.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dpdk-io/host_loop.h"
#include "tests/common/payload.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/wire/checksum.h"
#include "transport/wire/decode.h"

namespace uet::io {
namespace {

using testing::write_request;

constexpr uint32_t ip_of(uint32_t net, uint32_t host) { return 0x7F000000u | net << 8 | host; }
wire::MacAddr mac_of(uint32_t ip) {
  return {0x02, 0, 0, 0, static_cast<uint8_t>(ip >> 8), static_cast<uint8_t>(ip)};
}

UringIoConfig io_config(uint32_t ip, uint16_t port) {
  UringIoConfig c;
  c.local_ip4 = ip;
  c.udp_port = port;
  c.local_mac = mac_of(ip);
  return c;
}

std::unique_ptr<UringIo> make_io(const UringIoConfig& c) {
  auto io = UringIo::create(c);
  EXPECT_TRUE(io.ok()) << io.status();
  return io.ok() ? std::move(*io) : nullptr;
}

UetConfig uet_config(uint32_t ip) {
  UetConfig c;
  c.local_ip4 = ip;
  c.local_mac = mac_of(ip);
  c.pathsel.ev_count = 16;         // spray: many EVs, so many pool sockets are used
  c.base_rtt = 50 * kMicrosecond;  // loopback through one polling thread is slower than 12 µs
  c.rto = 2 * kMillisecond;
  c.max_retries = 30;
  return c;
}

RoceConfig roce_config(uint32_t ip) {
  RoceConfig c;
  c.local_ip4 = ip;
  c.local_mac = mac_of(ip);
  c.ack_timeout_exp = 9;  // 2 ms
  return c;
}

struct Buffers {
  std::vector<uint8_t> src, dst;
  explicit Buffers(size_t bytes) : src(bytes), dst(bytes) {
    std::mt19937_64 rng(11);
    for (size_t i = 0; i < bytes; i += 8) {
      const uint64_t v = rng();
      std::memcpy(src.data() + i, &v, std::min<size_t>(8, bytes - i));
    }
  }
};

// Loses a fraction of what the engine sends, between the engine and the device.
class LossyIo final : public PacketIo {
 public:
  LossyIo(PacketIo& inner, uint32_t one_in, uint32_t seed)
      : inner_(inner), one_in_(one_in), rng_(seed) {}
  size_t rx_burst(std::span<Frame*> out) override { return inner_.rx_burst(out); }
  void release_rx(std::span<Frame* const> f) override { inner_.release_rx(f); }
  size_t alloc_tx(std::span<Frame*> out) override { return inner_.alloc_tx(out); }
  size_t tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) override {
    Frame* keep[kMaxBurst];
    Frame* back[2 * kMaxBurst];
    size_t k = 0, b = 0;
    for (Frame* f : filled) {
      if (rng_() % one_in_ == 0) {
        back[b++] = f;
        ++lost_;
      } else {
        keep[k++] = f;
      }
    }
    for (Frame* f : unused) back[b++] = f;
    return inner_.tx_burst(std::span<Frame* const>(keep, k), std::span<Frame* const>(back, b));
  }
  void wait(Time deadline) override { inner_.wait(deadline); }
  IoStats stats() const override { return inner_.stats(); }
  uint64_t lost() const { return lost_; }

 private:
  PacketIo& inner_;
  uint32_t one_in_;
  std::mt19937 rng_;
  uint64_t lost_ = 0;
};

// Polls both loops in turn on the real clock until `a` has `want` completions or `timeout`
// passes; when a round moves nothing, waits in one backend until the engines' next deadline.
uint64_t g_idle_waits = 0;

std::vector<Completion> run_pair(HostLoop& la, HostLoop& lb, PacketIo& ia, PacketIo& ib,
                                 Endpoint& a, Endpoint& b, size_t want,
                                 Time timeout = 30 * kSecond) {
  std::vector<Completion> done;
  g_idle_waits = 0;
  Completion c[8];
  const Time give_up = monotonic_now() + timeout;
  for (uint64_t round = 0; done.size() < want; ++round) {
    const Time now = monotonic_now();
    if (now >= give_up) break;
    const size_t moved = la.poll_once() + lb.poll_once();
    const size_t n = a.poll_completions(c);
    done.insert(done.end(), c, c + n);
    if (moved == 0 && n == 0) {
      const Time deadline =
          std::min({a.next_deadline(), b.next_deadline(), now + 50 * kMicrosecond});
      (round % 2 == 0 ? ia : ib).wait(deadline);
      ++g_idle_waits;
    }
  }
  return done;
}

// Receives on `io` until `pred()` or 5 s; returns pred().
bool rx_until(UringIo& io, const std::function<void(Frame&)>& on_frame,
              const std::function<bool()>& pred) {
  const Time give_up = monotonic_now() + 5 * kSecond;
  while (!pred() && monotonic_now() < give_up) {
    Frame* f[kMaxBurst];
    const size_t n = io.rx_burst(f);
    for (size_t i = 0; i < n; ++i) on_frame(*f[i]);
    io.release_rx(std::span<Frame* const>(f, n));
    if (n == 0) io.wait(monotonic_now() + 10 * kMillisecond);
  }
  return pred();
}

int udp_socket_to(uint32_t local_ip) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(local_ip);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

void send_datagram(int fd, uint32_t ip, uint16_t port, const std::vector<uint8_t>& bytes) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(ip);
  to.sin_port = htons(port);
  ASSERT_EQ(sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to)),
            static_cast<ssize_t>(bytes.size()));
}

// ----------------------------------------------------------------------------- config

TEST(UringIoConfig, RejectsEachBadField) {
  const UringIoConfig good = io_config(ip_of(90, 1), 4793);
  ASSERT_TRUE(good.validate().ok());
  struct Case {
    const char* field;
    std::function<void(UringIoConfig&)> mutate;
  };
  const Case cases[] = {
      {"local_ip4", [](UringIoConfig& c) { c.local_ip4 = 0; }},
      {"udp_port", [](UringIoConfig& c) { c.udp_port = 0; }},
      {"frames", [](UringIoConfig& c) { c.frames = 63; }},
      {"frames", [](UringIoConfig& c) { c.frames = 65537; }},
      {"frame_capacity", [](UringIoConfig& c) { c.frame_capacity = 255; }},
      {"frame_capacity", [](UringIoConfig& c) { c.frame_capacity = 65550; }},
      {"queue_depth", [](UringIoConfig& c) { c.queue_depth = 7; }},
      {"queue_depth", [](UringIoConfig& c) { c.queue_depth = 4097; }},
      {"ev_sockets", [](UringIoConfig& c) { c.ev_sockets = 0; }},
      {"ev_sockets", [](UringIoConfig& c) { c.ev_sockets = 1025; }},
      {"ev_port_base", [](UringIoConfig& c) { c.ev_port_base = 1023; }},
      {"ev_port_base", [](UringIoConfig& c) { c.ev_port_base = 65530; }},  // 16 ports overflow
      {"ev_port_base", [](UringIoConfig& c) { c.ev_port_base = 4790; }},   // contains 4793
      {"socket_buffer_bytes", [](UringIoConfig& c) { c.socket_buffer_bytes = 65535; }},
      {"socket_buffer_bytes", [](UringIoConfig& c) { c.socket_buffer_bytes = (1u << 30) + 1; }},
      {"zero_copy_send", [](UringIoConfig& c) { c.zero_copy_send = static_cast<ZeroCopySend>(3); }},
  };
  for (const Case& k : cases) {
    UringIoConfig c = good;
    k.mutate(c);
    const absl::Status s = c.validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << k.field;
    EXPECT_NE(std::string(s.message()).find(k.field), std::string::npos) << s;
    EXPECT_FALSE(UringIo::create(c).ok()) << k.field;
  }
}

TEST(UringIoConfig, ZeroCopySendNamesItsValues) {
  UringIoConfig c = io_config(ip_of(90, 1), 4793);
  c.zero_copy_send = static_cast<ZeroCopySend>(7);
  // Expect: the refusal names the field, the bad value and every valid one.
  const std::string m(c.validate().message());
  EXPECT_NE(m.find("UringIoConfig.zero_copy_send = 7"), std::string::npos) << m;
  EXPECT_NE(m.find("auto, on, off"), std::string::npos) << m;
  for (const ZeroCopySend z : {ZeroCopySend::kAuto, ZeroCopySend::kOn, ZeroCopySend::kOff}) {
    auto parsed = parse_zero_copy_send(to_string(z));
    ASSERT_TRUE(parsed.ok()) << to_string(z);
    EXPECT_EQ(*parsed, z);
  }
  const absl::StatusOr<ZeroCopySend> bad = parse_zero_copy_send("yes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("\"yes\": valid values auto, on, off"),
            std::string::npos)
      << bad.status();
}

TEST(UringIo, BindConflictIsATypedError) {
  const UringIoConfig c = io_config(ip_of(91, 1), 4793);
  auto first = make_io(c);
  ASSERT_NE(first, nullptr);
  // Expect: the second bind of 127.0.91.1:4793 fails with a status naming the address.
  auto second = UringIo::create(c);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(std::string(second.status().message()).find("127.0.91.1:4793"), std::string::npos)
      << second.status();
  // A fixed pool range that overlaps itself in a second instance fails the same way.
  UringIoConfig d = io_config(ip_of(91, 2), 4793);
  d.ev_port_base = 40000;
  auto third = make_io(d);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third->ev_ports()[0], 40000);
  EXPECT_EQ(third->ev_ports()[15], 40015);
  d.udp_port = 4791;
  EXPECT_FALSE(UringIo::create(d).ok());
  // Expect: destroying an instance releases its ports at once (the ring's teardown is
  // asynchronous, the sockets' release must not be).
  first.reset();
  third.reset();
  EXPECT_TRUE(UringIo::create(c).ok());
  EXPECT_TRUE(UringIo::create(d).ok());
}

// setup() reports the receive buffer the kernel granted (socket(7): twice what was asked,
// unless net.core.rmem_max capped it and the process may not force it) and whether it was
// capped; the taskrun flags are on where the kernel has them (5.19+), which setup() says.
TEST(UringIo, SetupReportsTheGrantedReceiveBuffer) {
  UringIoConfig c = io_config(ip_of(92, 1), 4793);
  c.socket_buffer_bytes = 1u << 20;
  auto io = make_io(c);
  ASSERT_NE(io, nullptr);
  const UringSetup& s = io->setup();
  uint64_t rmem_max = 0;
  if (std::FILE* f = std::fopen("/proc/sys/net/core/rmem_max", "r")) {
    unsigned long v = 0;
    if (std::fscanf(f, "%lu", &v) == 1) rmem_max = v;
    std::fclose(f);
  }
  // Expect: at least twice the request or twice the sysctl, whichever is less; capped exactly
  // when below twice the request.
  if (rmem_max > 0) {
    EXPECT_GE(s.rx_socket_bytes, 2 * std::min<uint64_t>(c.socket_buffer_bytes, rmem_max));
  }
  EXPECT_EQ(s.rx_socket_capped, s.rx_socket_bytes < 2 * uint64_t{c.socket_buffer_bytes});
  if (!s.rx_socket_capped) {
    EXPECT_GE(s.rx_socket_bytes, 2u << 20);
  }
}

// A progress thread sleeps in wait() while the application's threads post work: wake() from
// another thread ends the wait whether it comes before the wait begins or during it, and the
// next pass (rx_burst reaps) uses it up, so the wait after that sleeps to its deadline.
TEST(UringIo, WakeFromAnotherThreadEndsAWait) {
  UringIoConfig c = io_config(ip_of(93, 1), 4793);
  c.wakeable = true;
  c.defer_taskrun = true;  // as the provider hosts it: every ring call from this thread
  auto io = make_io(c);
  ASSERT_NE(io, nullptr);
  constexpr Time kFar = 60 * kSecond;
  std::array<Frame*, 8> frames{};
  for (int round = 0; round < 20; ++round) {
    std::thread waker([&io] { io->wake(); });
    const Time t0 = monotonic_now();
    io->wait(t0 + kFar);
    const Time waited = monotonic_now() - t0;
    waker.join();
    EXPECT_LT(waited, kFar / 2) << "round " << round << ": the wake was lost";
    EXPECT_EQ(io->rx_burst(frames), 0u);  // reaps the wake; nothing was received
  }
  const Time t0 = monotonic_now();
  io->wait(t0 + 20 * kMillisecond);
  EXPECT_GE(monotonic_now() - t0, 20 * kMillisecond) << "a wake was not used up";
}

// ---------------------------------------------------------------------- end to end

// GSO and GRO on, four pool sockets (so that a burst's frames share them), and payloads sent
// by reference from registered memory (the kernel gathers them).
UringIoConfig offload_config(uint32_t ip, uint16_t port) {
  UringIoConfig c = io_config(ip, port);
  c.gso = c.gro = true;
  c.ev_sockets = 4;
  return c;
}

void uet_write(uint32_t net, size_t bytes, uint32_t loss_one_in, bool print_rate,
               bool offload = false) {
  const uint32_t ip_a = ip_of(net, 1), ip_b = ip_of(net, 2);
  auto ia = make_io(offload ? offload_config(ip_a, 4793) : io_config(ip_a, 4793));
  auto ib = make_io(offload ? offload_config(ip_b, 4793) : io_config(ip_b, 4793));
  ASSERT_TRUE(ia && ib);
  UetConfig ca = uet_config(ip_a), cb = uet_config(ip_b);
  ca.tx_by_reference = cb.tx_by_reference = offload;
  auto a = std::move(*UetEndpoint::create(ca));
  auto b = std::move(*UetEndpoint::create(cb));
  Buffers buf(bytes);
  const uint32_t rkey = *b->register_memory(buf.dst.data(), buf.dst.size());

  LossyIo lossy_a(*ia, loss_one_in == 0 ? 1 : loss_one_in, 3);
  LossyIo lossy_b(*ib, loss_one_in == 0 ? 1 : loss_one_in, 4);
  PacketIo& pa = loss_one_in == 0 ? static_cast<PacketIo&>(*ia) : lossy_a;
  PacketIo& pb = loss_one_in == 0 ? static_cast<PacketIo&>(*ib) : lossy_b;
  HostLoop la(pa, *a), lb(pb, *b);
  constexpr size_t kWrites = 8;
  const uint64_t chunk = bytes / kWrites;
  for (size_t i = 0; i < kWrites; ++i) {
    const auto part = std::span(buf.src).subspan(i * chunk, chunk);
    ASSERT_TRUE(a->post_write(write_request(i, ip_b, rkey, part, i * chunk)).ok());
  }
  const Time start = monotonic_now();
  const auto done = run_pair(la, lb, pa, pb, *a, *b, kWrites);
  const Time elapsed = monotonic_now() - start;

  // Expect: every write completes and the bytes landed intact; nothing was malformed.
  ASSERT_EQ(done.size(), kWrites);
  for (const auto& c : done) EXPECT_EQ(c.status, OpStatus::kSuccess) << c.wr_id;
  EXPECT_TRUE(buf.dst == buf.src);
  EXPECT_EQ(a->counters().rx_malformed, 0u);
  EXPECT_EQ(b->counters().rx_malformed, 0u);
  EXPECT_EQ(ia->counters().tx_unparseable + ib->counters().tx_unparseable, 0u);
  EXPECT_EQ(ia->counters().tx_send_errors + ib->counters().tx_send_errors, 0u);
  EXPECT_GE(b->counters().rx_data, bytes / 4096);
  if (loss_one_in != 0) {
    EXPECT_GT(lossy_a.lost() + lossy_b.lost(), 0u);
    EXPECT_GT(a->counters().tx_retx, 0u);
  }
  if (offload) {
    // Expect: data left in groups and arrived coalesced, and the kernel split nothing wrongly
    // (the bytes compare above).
    ASSERT_TRUE(ia->setup().gso && ib->setup().gro);
    EXPECT_GT(ia->counters().tx_gso_sends, 0u);
    EXPECT_GT(ia->counters().tx_gso_datagrams, ia->counters().tx_gso_sends);
    EXPECT_GT(ib->counters().rx_gro_receives, 0u);
    std::printf("[ gso ] %lu sends of %lu datagrams; [ gro ] %lu receives of %lu datagrams\n",
                ia->counters().tx_gso_sends, ia->counters().tx_gso_datagrams,
                ib->counters().rx_gro_receives, ib->counters().rx_gro_datagrams);
  }
  if (print_rate) {
    const double s = static_cast<double>(elapsed) / kSecond;
    const IoStats sa = ia->stats(), sb = ib->stats();
    std::printf(
        "[ perf ] UET one-way %zu MB over loopback: %.3f s, %.0f data pkt/s (%.2f Gb/s "
        "goodput), %.0f pkt/s both directions; retx %llu, kernel drops %llu, idle waits %llu\n",
        bytes >> 20, s, static_cast<double>(a->counters().tx_data) / s,
        static_cast<double>(bytes) * 8 / s / 1e9,
        static_cast<double>(sa.tx_packets + sb.tx_packets) / s,
        static_cast<unsigned long long>(a->counters().tx_retx),
        static_cast<unsigned long long>(ib->counters().rx_kernel_dropped),
        static_cast<unsigned long long>(g_idle_waits));
  }
}

TEST(UringIo, UetWriteOverLoopback) { uet_write(101, 8 << 20, 0, false); }

TEST(UringIo, UetWriteWithInjectedLoss) { uet_write(102, 4 << 20, 100, false); }

TEST(UringIo, UetOneWayPacketRate) { uet_write(103, 64 << 20, 0, true); }

TEST(UringIo, UetWriteWithGsoGroAndReferences) { uet_write(114, 8 << 20, 0, false, true); }

TEST(UringIo, UetWriteWithGsoGroReferencesAndLoss) { uet_write(115, 4 << 20, 100, false, true); }

void roce_write(uint32_t net, size_t bytes, uint32_t loss_one_in, bool offload = false) {
  const uint32_t ip_a = ip_of(net, 1), ip_b = ip_of(net, 2);
  auto ia = make_io(offload ? offload_config(ip_a, 4791) : io_config(ip_a, 4791));
  auto ib = make_io(offload ? offload_config(ip_b, 4791) : io_config(ip_b, 4791));
  ASSERT_TRUE(ia && ib);
  RoceConfig ca = roce_config(ip_a), cb = roce_config(ip_b);
  ca.tx_by_reference = cb.tx_by_reference = offload;  // gathered in: the ICRC is rewritten
  auto a = std::move(*RoceEndpoint::create(ca));
  auto b = std::move(*RoceEndpoint::create(cb));
  ASSERT_TRUE(a->connect_qp(ip_b, 0x100, 0x105, 1000, 777000).ok());
  ASSERT_TRUE(b->connect_qp(ip_a, 0x105, 0x100, 777000, 1000).ok());
  Buffers buf(bytes);
  const uint32_t rkey = *b->register_memory(buf.dst.data(), buf.dst.size());

  LossyIo lossy_a(*ia, loss_one_in == 0 ? 1 : loss_one_in, 5);
  PacketIo& pa = loss_one_in == 0 ? static_cast<PacketIo&>(*ia) : lossy_a;
  HostLoop la(pa, *a), lb(*ib, *b);
  ASSERT_TRUE(a->post_write(write_request(42, ip_b, rkey, buf.src)).ok());

  const auto done = run_pair(la, lb, pa, *ib, *a, *b, 1);
  // Expect: the write completes intact, and no frame failed the ICRC although the wire's
  // source port (the pool's) differs from the QP's: the backend updated every ICRC.
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, OpStatus::kSuccess);
  EXPECT_TRUE(buf.dst == buf.src);
  EXPECT_EQ(a->counters().rx_bad_icrc, 0u);
  EXPECT_EQ(b->counters().rx_bad_icrc, 0u);
  EXPECT_EQ(b->counters().rx_malformed, 0u);
  EXPECT_GT(ia->counters().tx_icrc_updates, 0u);
  EXPECT_GE(b->counters().rx_placed, bytes / 4096);
  if (loss_one_in != 0) {
    EXPECT_GT(lossy_a.lost(), 0u);
    EXPECT_GT(a->counters().tx_retx, 0u);
  }
}

TEST(UringIo, RoceWriteOverLoopback) { roce_write(104, 8 << 20, 0); }

TEST(UringIo, RoceWriteWithInjectedLoss) { roce_write(105, 4 << 20, 100); }

TEST(UringIo, RoceWriteWithGsoGroAndReferences) { roce_write(116, 8 << 20, 0, true); }

// ------------------------------------------------------------------- frames and drops

// The frames the receiver synthesises decode, and carry the sender's DSCP and ECN (including
// CE set on the way), its address and the pool's source port.
TEST(UringIo, ReceivedFramesDecodeWithSendersDscpAndEcn) {
  const uint32_t ip_a = ip_of(106, 1), ip_b = ip_of(106, 2);
  auto ia = make_io(io_config(ip_a, 4793));
  auto ib = make_io(io_config(ip_b, 4793));
  ASSERT_TRUE(ia && ib);
  auto a = std::move(*UetEndpoint::create(uet_config(ip_a)));
  Buffers buf(64 << 10);
  ASSERT_TRUE(a->post_write(write_request(0, ip_b, 1, buf.src)).ok());

  // The engine's first data packet (a SYN: the PDC is new), as a template.
  Frame* f[kMaxBurst];
  ASSERT_EQ(ia->alloc_tx(std::span<Frame*>(f, 1)), 1u);
  ASSERT_EQ(a->tx(std::span<Frame* const>(f, 1), monotonic_now()), 1u);
  const std::vector<uint8_t> original(f[0]->data, f[0]->data + f[0]->len);
  ASSERT_EQ(ia->tx_burst({}, std::span<Frame* const>(f, 1)), 0u);
  {
    wire::Decoded d;
    ASSERT_EQ(wire::decode_frame(original, &d), wire::WireError::kOk);
    EXPECT_EQ(d.ipv4->dscp(), 26);  // the engine's data class, ECT(0)
    EXPECT_EQ(d.ecn, 2);
  }

  // Sent as is, then re-marked as a switch would: CE; DSCP 10 + ECT(1); DSCP 45 (trimmed
  // code point), not ECN-capable. One at a time, each received before the next is sent.
  struct Mark {
    uint8_t dscp, ecn;
  };
  const Mark marks[] = {{26, 2}, {26, 3}, {10, 1}, {45, 0}};
  for (const Mark& m : marks) {
    ASSERT_EQ(ia->alloc_tx(std::span<Frame*>(f, 1)), 1u);
    std::memcpy(f[0]->data, original.data(), original.size());
    f[0]->len = static_cast<uint32_t>(original.size());
    auto* ip = wire::as<wire::Ipv4>(f[0]->data + wire::Ethernet::kSize);
    ip->set_dscp(m.dscp);
    ip->set_ecn(m.ecn);
    ip->set_checksum(wire::ipv4_header_checksum(ip->raw, wire::Ipv4::kSize));
    const uint16_t ev = wire::as<wire::Udp>(ip->raw + wire::Ipv4::kSize)->sport();
    ASSERT_EQ(ia->tx_burst(std::span<Frame* const>(f, 1), {}), 1u);

    size_t got = 0;
    ASSERT_TRUE(rx_until(
        *ib,
        [&](Frame& r) {
          ++got;
          wire::Decoded d;
          ASSERT_EQ(wire::decode_frame(std::span<const uint8_t>(r.data, r.len), &d),
                    wire::WireError::kOk);
          // Expect: the sender's marking, addresses and pool port; the bytes above UDP as sent.
          EXPECT_EQ(d.protocol, wire::Protocol::kUet);
          EXPECT_EQ(d.ipv4->dscp(), m.dscp);
          EXPECT_EQ(d.ecn, m.ecn);
          EXPECT_EQ(d.ipv4->src(), ip_a);
          EXPECT_EQ(d.ipv4->dst(), ip_b);
          EXPECT_EQ(d.ipv4->ttl(), 64);
          EXPECT_EQ(d.udp->sport(), ia->ev_ports()[ev % 16]);
          EXPECT_EQ(d.udp->dport(), 4793);
          const wire::MacAddr mac = mac_of(ip_b);
          EXPECT_TRUE(std::equal(mac.begin(), mac.end(), d.eth->dst().begin()));
          ASSERT_EQ(r.len, original.size());
          EXPECT_TRUE(std::equal(r.data + 42, r.data + r.len, original.begin() + 42));
        },
        [&] { return got >= 1; }));
    EXPECT_EQ(got, 1u);
  }
  EXPECT_EQ(ib->stats().rx_packets, 4u);
  EXPECT_EQ(ib->stats().rx_dropped, 0u);
  EXPECT_TRUE(rx_until(
      *ia, [](Frame&) {}, [&] { return ia->stats().tx_packets == 4; }));
}

// A RoCEv2 frame from the engine, sent through the pool (another source port than the QP's),
// decodes on the other side with its ICRC verified, and carries ECT(0).
TEST(UringIo, RoceFramesPassTheIcrcCheck) {
  const uint32_t ip_a = ip_of(107, 1), ip_b = ip_of(107, 2);
  auto ia = make_io(io_config(ip_a, 4791));
  auto ib = make_io(io_config(ip_b, 4791));
  ASSERT_TRUE(ia && ib);
  auto a = std::move(*RoceEndpoint::create(roce_config(ip_a)));
  ASSERT_TRUE(a->connect_qp(ip_b, 0x100, 0x105, 1000, 777000).ok());
  Buffers buf(20000);
  ASSERT_TRUE(a->post_write(write_request(0, ip_b, 1, buf.src)).ok());
  Frame* f[kMaxBurst];
  const size_t lent = ia->alloc_tx(f);
  const size_t filled = a->tx(std::span<Frame* const>(f, lent), monotonic_now());
  ASSERT_EQ(filled, 5u);  // 20000 bytes at a 4096-byte MTU
  const uint16_t qp_sport = a->udp_sport(0x100);
  EXPECT_NE(qp_sport, ia->ev_ports()[qp_sport % 16]);  // so the ICRC must be updated
  ASSERT_EQ(ia->tx_burst(std::span<Frame* const>(f, filled),
                         std::span<Frame* const>(f + filled, lent - filled)),
            filled);
  EXPECT_EQ(ia->counters().tx_icrc_updates, filled);

  size_t ok = 0, got = 0;
  ASSERT_TRUE(rx_until(
      *ib,
      [&](Frame& r) {
        ++got;
        wire::Decoded d;
        const wire::WireError e = wire::decode_frame(std::span<const uint8_t>(r.data, r.len), &d);
        EXPECT_EQ(e, wire::WireError::kOk);
        if (e != wire::WireError::kOk) return;
        EXPECT_EQ(d.protocol, wire::Protocol::kRoce);
        EXPECT_EQ(d.udp->sport(), ia->ev_ports()[qp_sport % 16]);
        EXPECT_EQ(d.ecn, 2);
        EXPECT_EQ(d.ipv4->dscp(), 26);
        ++ok;
      },
      [&] { return got >= filled; }));
  EXPECT_EQ(ok, filled);
}

// Bad input from the outside: garbage is handed to the engine, which drops and counts it; a
// datagram too large for a buffer is dropped and counted by the backend (MSG_TRUNC).
TEST(UringIo, GarbageAndOversizedDatagramsAreCounted) {
  const uint32_t ip_b = ip_of(108, 2);
  UringIoConfig cb = io_config(ip_b, 4793);
  cb.frame_capacity = 1024;
  auto ib = make_io(cb);
  ASSERT_TRUE(ib);
  auto b = std::move(*UetEndpoint::create(uet_config(ip_b)));
  HostLoop lb(*ib, *b);
  const int fd = udp_socket_to(ip_of(108, 1));

  send_datagram(fd, ip_b, 4793, std::vector<uint8_t>(100, 0xA5));
  const Time give_up = monotonic_now() + 5 * kSecond;
  EXPECT_TRUE(lb.run_until([&] { return b->counters().rx_malformed >= 1; }, 5 * kSecond));
  // Expect: one frame handed up, the engine counted it malformed, nothing else happened.
  EXPECT_EQ(ib->stats().rx_packets, 1u);
  EXPECT_EQ(b->counters().rx_malformed, 1u);
  EXPECT_EQ(b->counters().rx_data, 0u);

  send_datagram(fd, ip_b, 4793, std::vector<uint8_t>(1024 - 42 + 1, 0x5A));  // one byte too many
  send_datagram(fd, ip_b, 4793, std::vector<uint8_t>(1024 - 42, 0x5A));      // fits exactly
  EXPECT_TRUE(
      lb.run_until([&] { return b->counters().rx_malformed >= 2; }, give_up - monotonic_now()));
  EXPECT_EQ(ib->counters().rx_truncated, 1u);
  EXPECT_EQ(ib->stats().rx_dropped, 1u);
  EXPECT_EQ(ib->stats().rx_packets, 2u);
  EXPECT_EQ(ib->stats().rx_bytes, 142u + 1024u);
  close(fd);
}

// Frames the backend cannot send as a datagram are dropped and counted, and their buffers
// come back.
TEST(UringIo, UnparseableFramesAreCountedOnTx) {
  auto io = make_io(io_config(ip_of(109, 1), 4793));
  ASSERT_TRUE(io);
  const uint32_t pool = io->tx_buffers();
  Frame* f[kMaxBurst];
  ASSERT_EQ(io->alloc_tx(std::span<Frame*>(f, 3)), 3u);
  f[0]->len = 10;  // shorter than Ethernet
  f[1]->len = 60;  // Ethernet type 0 (zero-filled)
  std::memset(f[2]->data, 0, 60);
  f[2]->data[12] = 0x08;  // IPv4 with a lying total length
  f[2]->data[14] = 0x45;
  f[2]->data[16] = 0xFF;
  f[2]->len = 60;
  EXPECT_EQ(io->tx_burst(std::span<Frame* const>(f, 3), {}), 0u);
  EXPECT_EQ(io->stats().tx_dropped, 3u);
  EXPECT_EQ(io->counters().tx_unparseable, 3u);
  // Expect: the whole pool can be lent again.
  std::vector<Frame*> all(pool);
  size_t lent = 0;
  while (lent < pool) {
    const size_t n = io->alloc_tx(std::span<Frame*>(all.data() + lent, pool - lent));
    if (n == 0) break;
    lent += n;
  }
  EXPECT_EQ(lent, pool);
  EXPECT_EQ(io->alloc_tx(std::span<Frame*>(f, 1)), 0u);
  EXPECT_EQ(io->stats().tx_no_buffer, 1u);
  io->tx_burst({}, all);
}

// ------------------------------------------------------------------- zero-copy send

// The byte of datagram `seq` at offset i: every datagram differs from its neighbours.
uint8_t pattern(uint32_t seq, size_t i) { return static_cast<uint8_t>(seq * 131 + i * 7 + 1); }

// Fills `f` with Ethernet / IPv4 / UDP to ip_b:4793 carrying datagram `seq` (its number, then
// the pattern) of `len` bytes.
void fill_datagram(Frame& f, uint32_t ip_a, uint32_t ip_b, uint32_t seq, size_t len) {
  constexpr size_t kL3 = wire::Ethernet::kSize, kL4 = kL3 + wire::Ipv4::kSize;
  std::memset(f.data, 0, kL4 + wire::Udp::kSize);
  wire::as<wire::Ethernet>(f.data)->set_ethertype(NET_ETHERTYPE_IPV4);
  auto* ip = wire::as<wire::Ipv4>(f.data + kL3);
  ip->set_version(4);
  ip->set_ihl(5);
  ip->set_total_length(static_cast<uint16_t>(wire::Ipv4::kSize + wire::Udp::kSize + len));
  ip->set_ttl(64);
  ip->set_protocol(NET_IPPROTO_UDP);
  ip->set_src(ip_a);
  ip->set_dst(ip_b);
  auto* udp = wire::as<wire::Udp>(f.data + kL4);
  udp->set_sport(static_cast<uint16_t>(seq));
  udp->set_dport(4793);
  udp->set_length(static_cast<uint16_t>(wire::Udp::kSize + len));
  uint8_t* payload = f.data + kL4 + wire::Udp::kSize;
  std::memcpy(payload, &seq, sizeof(seq));
  for (size_t i = sizeof(seq); i < len; ++i) payload[i] = pattern(seq, i);
  f.len = static_cast<uint32_t>(kL4 + wire::Udp::kSize + len);
}

// Sends `count` datagrams of `len` bytes from a to b, 32 at a time, each burst received
// before the next is sent (so the receiving socket never overflows); returns how many arrived
// byte for byte as sent.
size_t send_and_check(UringIo& a, UringIo& b, uint32_t ip_a, uint32_t ip_b, uint32_t count,
                      size_t len) {
  size_t intact = 0;
  for (uint32_t seq = 0; seq < count;) {
    Frame* f[32];
    const size_t want = std::min<size_t>(32, count - seq);
    size_t lent = 0;
    for (const Time give_up = monotonic_now() + 5 * kSecond;
         lent < want && monotonic_now() < give_up;) {
      lent += a.alloc_tx(std::span<Frame*>(f + lent, want - lent));
      if (lent < want) a.wait(monotonic_now() + 10 * kMillisecond);  // buffers still sending
    }
    EXPECT_EQ(lent, want) << "transmit buffers did not come back";
    if (lent < want) return intact;
    for (size_t i = 0; i < want; ++i) fill_datagram(*f[i], ip_a, ip_b, seq + uint32_t(i), len);
    EXPECT_EQ(a.tx_burst(std::span<Frame* const>(f, want), {}), want);
    size_t got = 0;
    EXPECT_TRUE(rx_until(
        b,
        [&](Frame& r) {
          ++got;
          const uint8_t* p = r.data + 42;
          uint32_t n = 0;
          std::memcpy(&n, p, sizeof(n));
          bool same = r.len == 42 + len && n >= seq && n < seq + want;
          for (size_t i = sizeof(n); same && i < len; ++i) same = p[i] == pattern(n, i);
          intact += same;
        },
        [&] { return got >= want; }));
    seq += static_cast<uint32_t>(want);
  }
  return intact;
}

// Lends the whole transmit pool once every send's completions are in (bounded), gives it
// back, and returns how many buffers were lent; one more than the pool is asked for, so
// that a buffer freed twice shows.
size_t lend_whole_pool(UringIo& io) {
  const size_t pool = io.tx_buffers();
  std::vector<Frame*> all(pool + 1);
  size_t lent = 0;
  for (const Time give_up = monotonic_now() + 5 * kSecond; monotonic_now() < give_up;) {
    lent += io.alloc_tx(std::span<Frame*>(all.data() + lent, all.size() - lent));
    if (lent >= pool) break;
    io.wait(monotonic_now() + 10 * kMillisecond);
  }
  io.tx_burst({}, std::span<Frame* const>(all.data(), lent));
  return lent;
}

// A sender on 127.0.<net>.1 with zero-copy send forced on (and GSO over one socket, if
// asked) and a plain receiver on .2; `unavailable` is set where the kernel has no SENDMSG_ZC.
struct ZeroCopyPair {
  std::unique_ptr<UringIo> a, b;
  UringIoConfig ca;
  absl::Status unavailable;
};
ZeroCopyPair zero_copy_pair(uint32_t net, bool gso) {
  ZeroCopyPair p;
  p.ca = io_config(ip_of(net, 1), 4793);
  p.ca.zero_copy_send = ZeroCopySend::kOn;
  p.ca.gso = gso;
  if (gso) p.ca.ev_sockets = 1;
  auto created = UringIo::create(p.ca);
  if (created.status().code() == absl::StatusCode::kUnimplemented) {
    p.unavailable = created.status();
    return p;
  }
  EXPECT_TRUE(created.ok()) << created.status();
  if (created.ok()) p.a = std::move(*created);
  p.b = make_io(io_config(ip_of(net, 2), 4793));
  return p;
}

// Zero-copy forced on: three pools' worth of 4000-byte datagrams arrive intact; each send's
// buffer comes back after its notification, and the kernel says it copied (loopback does).
TEST(UringIo, ZeroCopySendDeliversAndReturnsEveryBuffer) {
  const uint32_t ip_a = ip_of(111, 1), ip_b = ip_of(111, 2);
  ZeroCopyPair p = zero_copy_pair(111, false);
  if (!p.unavailable.ok()) GTEST_SKIP() << p.unavailable;
  ASSERT_TRUE(p.a && p.b);
  std::unique_ptr<UringIo>& ia = p.a;
  std::unique_ptr<UringIo>& ib = p.b;
  const UringIoConfig& ca = p.ca;
  ASSERT_TRUE(ia->setup().zero_copy_send);
  const uint32_t n = 3 * ia->tx_buffers();
  EXPECT_EQ(send_and_check(*ia, *ib, ip_a, ip_b, n, 4000), n);
  // Expect: every buffer back, none twice; one notification per zero-copy send.
  EXPECT_EQ(lend_whole_pool(*ia), ia->tx_buffers());
  const UringCounters& k = ia->counters();
  EXPECT_EQ(k.tx_zc_sends, n);
  EXPECT_EQ(k.tx_zc_notifs, n);
  if (ia->setup().zc_usage_known) {
    EXPECT_EQ(k.tx_zc_copied, n);
  }
  EXPECT_EQ(ia->stats().tx_packets, n);
  EXPECT_EQ(ia->stats().tx_dropped, 0u);
  std::printf("[ zc ] %lu sends, %lu notifications, %lu copied by the kernel (usage %s)\n",
              k.tx_zc_sends, k.tx_zc_notifs, k.tx_zc_copied,
              ia->setup().zc_usage_known ? "reported" : "not reported by this kernel");

  // Expect: torn down with sends and notifications outstanding, the destructor waits for
  // them, well within its bound, and the ports are free at once.
  Frame* f[32];
  ASSERT_EQ(ia->alloc_tx(f), 32u);
  for (uint32_t i = 0; i < 32; ++i) fill_datagram(*f[i], ip_a, ip_b, n + i, 4000);
  ASSERT_EQ(ia->tx_burst(f, {}), 32u);
  const Time before = monotonic_now();
  ia.reset();
  EXPECT_LT(monotonic_now() - before, 500 * kMillisecond);
  EXPECT_TRUE(UringIo::create(ca).ok());
}

// Zero-copy off: the same traffic through plain sendmsg, no notifications.
TEST(UringIo, CopiedSendDeliversAndReturnsEveryBuffer) {
  const uint32_t ip_a = ip_of(112, 1), ip_b = ip_of(112, 2);
  UringIoConfig ca = io_config(ip_a, 4793);
  ca.zero_copy_send = ZeroCopySend::kOff;
  auto ia = make_io(ca);
  auto ib = make_io(io_config(ip_b, 4793));
  ASSERT_TRUE(ia && ib);
  EXPECT_FALSE(ia->setup().zero_copy_send);
  const uint32_t n = 3 * ia->tx_buffers();
  EXPECT_EQ(send_and_check(*ia, *ib, ip_a, ip_b, n, 4000), n);
  EXPECT_EQ(lend_whole_pool(*ia), ia->tx_buffers());
  EXPECT_EQ(ia->counters().tx_zc_sends, 0u);
  EXPECT_EQ(ia->counters().tx_zc_notifs, 0u);
  EXPECT_EQ(ia->stats().tx_packets, n);
}

// Zero-copy and GSO together: groups go copied (a zero-copy skb holds at most 17 pinned
// pages, fewer than a group's buffers span: EMSGSIZE), so every datagram arrives intact, and
// only the sends no group took are zero-copy.
TEST(UringIo, GsoGroupsAreCopiedWhereZeroCopyIsOn) {
  ZeroCopyPair p = zero_copy_pair(119, true);
  if (!p.unavailable.ok()) GTEST_SKIP() << p.unavailable;
  ASSERT_TRUE(p.a && p.b);
  UringIo& ia = *p.a;
  ASSERT_TRUE(ia.setup().gso && ia.setup().zero_copy_send);
  const uint32_t n = 3 * ia.tx_buffers();
  EXPECT_EQ(send_and_check(ia, *p.b, ip_of(119, 1), ip_of(119, 2), n, 4000), n);
  EXPECT_EQ(lend_whole_pool(ia), ia.tx_buffers());
  const UringCounters& k = ia.counters();
  EXPECT_EQ(k.tx_send_errors, 0u);
  EXPECT_GT(k.tx_gso_sends, 0u);
  EXPECT_EQ(k.tx_zc_sends + k.tx_gso_datagrams, n);
  EXPECT_EQ(k.tx_zc_notifs, k.tx_zc_sends);
  EXPECT_EQ(ia.stats().tx_packets, n);
}

// The default, auto, leaves loopback to plain sendmsg: loopback delivery copies anyway.
TEST(UringIo, ZeroCopySendAutoIsOffOnLoopback) {
  const UringIoConfig c = io_config(ip_of(113, 1), 4793);
  ASSERT_EQ(c.zero_copy_send, ZeroCopySend::kAuto);
  auto io = make_io(c);
  ASSERT_TRUE(io);
  EXPECT_FALSE(io->setup().zero_copy_send);
}

// Pool exhaustion: while the engine holds no buffers back but the host does not poll, the
// ring fills, the socket buffer overflows, and the kernel's drops show up as rx_dropped.
TEST(UringIo, KernelDropsWhenThePoolIsExhaustedAreCounted) {
  const uint32_t ip_b = ip_of(110, 2);
  UringIoConfig cb = io_config(ip_b, 4793);
  cb.frames = 64;  // 32 receive buffers
  cb.frame_capacity = 2048;
  cb.socket_buffer_bytes = 65536;
  auto ib = make_io(cb);
  ASSERT_TRUE(ib);
  ASSERT_EQ(ib->rx_buffers(), 32u);
  const int fd = udp_socket_to(ip_of(110, 1));
  for (int i = 0; i < 400; ++i) send_datagram(fd, ip_b, 4793, std::vector<uint8_t>(1500, 1));
  size_t got = 0;
  ASSERT_TRUE(rx_until(
      *ib, [&](Frame&) { ++got; }, [&] { return ib->stats().rx_packets >= 32; }));
  // Drain what the socket still holds, then one more datagram carries the drop count.
  send_datagram(fd, ip_b, 4793, std::vector<uint8_t>(100, 2));
  bool last = false;
  EXPECT_TRUE(rx_until(
      *ib, [&](Frame& r) { last |= r.len == 142; }, [&] { return last; }));
  EXPECT_GT(ib->counters().rx_kernel_dropped, 0u);
  EXPECT_GE(ib->counters().rx_rearms, 1u);  // the multishot receive stopped and was re-armed
  // Expect: every datagram is accounted for: handed up or dropped.
  EXPECT_EQ(ib->stats().rx_packets + ib->stats().rx_dropped, 401u);
  close(fd);
}

// ------------------------------------------------------------------------- GSO and GRO

// Receives one datagram on a plain socket within 5 s; empty when none came.
std::vector<uint8_t> recv_datagram(int fd, uint16_t* sport = nullptr) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::vector<uint8_t> b(65536);
  sockaddr_in from{};
  socklen_t from_len = sizeof(from);
  const ssize_t n = recvfrom(fd, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
  b.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (sport != nullptr) *sport = ntohs(from.sin_port);
  return b;
}

// Whether `d` is datagram `seq` of `len` bytes as fill_datagram wrote it.
bool is_datagram(const std::vector<uint8_t>& d, uint32_t seq, size_t len) {
  uint32_t n = 0;
  if (d.size() != len) return false;
  std::memcpy(&n, d.data(), sizeof(n));
  bool same = n == seq;
  for (size_t i = sizeof(n); same && i < len; ++i) same = d[i] == pattern(seq, i);
  return same;
}

// One burst through one pool socket: 1000-byte datagrams with a 600-byte one at 21 (it ends
// a group) and one for another host at 5. Two GSO sends and one plain send; plain receiving
// sockets (no GRO) see every datagram as sent, in order, from the pool's port.
TEST(UringIo, GsoGroupsAreCutIntoTheDatagramsSent) {
  const uint32_t ip_a = ip_of(117, 1), ip_b = ip_of(117, 2), ip_c = ip_of(117, 3);
  UringIoConfig ca = io_config(ip_a, 4793);
  ca.gso = true;
  ca.ev_sockets = 1;
  auto ia = make_io(ca);
  ASSERT_TRUE(ia);
  ASSERT_TRUE(ia->setup().gso);
  auto bound = [](uint32_t ip) {  // a plain receiver on ip:4793
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(ip);
    a.sin_port = htons(4793);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    return fd;
  };
  const int rb = bound(ip_b), rc = bound(ip_c);
  constexpr uint32_t kCount = 32;
  auto len_of = [](uint32_t seq) -> size_t { return seq == 21 ? 600 : 1000; };
  Frame* f[kCount];
  ASSERT_EQ(ia->alloc_tx(f), kCount);
  for (uint32_t i = 0; i < kCount; ++i) fill_datagram(*f[i], ip_a, i == 5 ? ip_c : ip_b, i, len_of(i));
  ASSERT_EQ(ia->tx_burst(f, {}), kCount);

  // Expect: to b every datagram but 5, in order, each as sent; to c datagram 5.
  for (uint32_t i = 0; i < kCount; ++i) {
    if (i == 5) continue;
    uint16_t sport = 0;
    const std::vector<uint8_t> d = recv_datagram(rb, &sport);
    EXPECT_TRUE(is_datagram(d, i, len_of(i))) << "datagram " << i << ", " << d.size() << " bytes";
    EXPECT_EQ(sport, ia->ev_ports()[0]);
  }
  EXPECT_TRUE(is_datagram(recv_datagram(rc), 5, 1000));
  const UringCounters& k = ia->counters();
  EXPECT_EQ(k.tx_gso_sends, 2u);
  EXPECT_EQ(k.tx_gso_datagrams, kCount - 1);
  EXPECT_TRUE(rx_until(
      *ia, [](Frame&) {}, [&] { return ia->stats().tx_packets == kCount; }));
  EXPECT_EQ(ia->stats().tx_dropped, 0u);
  EXPECT_EQ(lend_whole_pool(*ia), ia->tx_buffers());  // every buffer of the groups came back
  close(rb);
  close(rc);
}

// A plain socket sends coalesced datagrams (UDP_SEGMENT 1000: 20 full and a 300-byte tail, then
// 20 more); the receiver lends one frame per datagram, each behind headers of its own. The
// split pool (32 frames) runs out while the caller holds them: it waits, and loses nothing.
TEST(UringIo, GroReceiveIsSplitIntoOneFramePerDatagram) {
  const uint32_t ip_a = ip_of(118, 1), ip_b = ip_of(118, 2);
  UringIoConfig cb = io_config(ip_b, 4793);
  cb.gro = true;
  cb.frames = 64;
  auto ib = make_io(cb);
  ASSERT_TRUE(ib);
  ASSERT_TRUE(ib->setup().gro);
  ASSERT_EQ(ib->split_buffers(), 32u);
  const int fd = udp_socket_to(ip_a);
  const int segment = 1000;
  ASSERT_EQ(setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &segment, sizeof(segment)), 0);
  sockaddr_in self{};
  socklen_t self_len = sizeof(self);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len), 0);
  // Datagram k of the sends: its number, then the pattern.
  std::vector<std::vector<uint8_t>> sent;
  for (uint32_t send = 0; send < 2; ++send) {
    const uint32_t count = send == 0 ? 21 : 20;
    std::vector<uint8_t> bytes;
    for (uint32_t i = 0; i < count; ++i) {
      const auto seq = static_cast<uint32_t>(sent.size());
      std::vector<uint8_t> d(i == 20 ? 300 : segment);
      std::memcpy(d.data(), &seq, sizeof(seq));
      for (size_t j = sizeof(seq); j < d.size(); ++j) d[j] = pattern(seq, j);
      bytes.insert(bytes.end(), d.begin(), d.end());
      sent.push_back(std::move(d));
    }
    send_datagram(fd, ip_b, 4793, bytes);
  }

  std::vector<Frame*> held;
  const Time give_up = monotonic_now() + 5 * kSecond;
  while (held.size() < 32 && monotonic_now() < give_up) {
    Frame* f[kMaxBurst];
    const size_t n = ib->rx_burst(f);
    held.insert(held.end(), f, f + n);
    if (n == 0) ib->wait(monotonic_now() + 10 * kMillisecond);
  }
  ASSERT_EQ(held.size(), 32u);
  Frame* more[kMaxBurst];
  EXPECT_EQ(ib->rx_burst(more), 0u);  // the split pool is lent out: nothing, and nothing lost
  EXPECT_GT(ib->counters().rx_split_waits, 0u);
  std::vector<std::vector<uint8_t>> got;
  auto take = [&](Frame& r) {
    // The payloads are not UET: the headers are checked as they are.
    ASSERT_GE(r.len, 42u);
    const auto* ip = wire::as<wire::Ipv4>(r.data + wire::Ethernet::kSize);
    const auto* udp = wire::as<wire::Udp>(r.data + wire::Ethernet::kSize + wire::Ipv4::kSize);
    EXPECT_EQ(ip->src(), ip_a);
    EXPECT_EQ(ip->dst(), ip_b);
    EXPECT_EQ(ip->total_length(), r.len - wire::Ethernet::kSize);
    EXPECT_TRUE(wire::ipv4_header_checksum_ok(ip->raw, wire::Ipv4::kSize));
    EXPECT_EQ(udp->sport(), ntohs(self.sin_port));
    EXPECT_EQ(udp->dport(), 4793);
    EXPECT_EQ(udp->length(), r.len - 34);
    got.emplace_back(r.data + 42, r.data + r.len);
  };
  for (Frame* f : held) take(*f);
  ib->release_rx(held);
  EXPECT_TRUE(rx_until(*ib, take, [&] { return got.size() >= sent.size(); }));

  // Expect: every datagram, in order, byte for byte; two coalesced receives of 41 datagrams.
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(got[i], sent[i]) << "datagram " << i;
  EXPECT_EQ(ib->counters().rx_gro_receives, 2u);
  EXPECT_EQ(ib->counters().rx_gro_datagrams, 41u);
  EXPECT_EQ(ib->stats().rx_packets, 41u);
  EXPECT_EQ(ib->stats().rx_dropped, 0u);
  close(fd);
}

}  // namespace
}  // namespace uet::io
