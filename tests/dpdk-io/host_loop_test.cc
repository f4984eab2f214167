// HostLoop drives real engines over a PacketIo: two endpoints, each with its own loop, over the
// in-memory wire (dpdk-io/mem_io.h), on a deterministic clock. The same loop runs over DPDK and
// io_uring; here only the device is fake.
#include "dpdk-io/host_loop.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "dpdk-io/mem_io.h"
#include "tests/common/payload.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::io {
namespace {

using testing::write_request;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

// A clock the test owns: every read moves time 200 ns forward, so timers fire without sleeping.
Time g_now = 0;
Time fake_clock() { return g_now += 200 * kNanosecond; }

wire::MacAddr mac_of(uint32_t ip) { return {0x02, 0, 0, 0, 0, static_cast<uint8_t>(ip)}; }

struct Buffers {
  std::vector<uint8_t> src, dst;
  explicit Buffers(size_t bytes) : src(bytes), dst(bytes) {
    std::mt19937 rng(7);
    for (auto& b : src) b = static_cast<uint8_t>(rng());
  }
};

// Polls both loops in turn until `a` has `want` completions; returns them.
std::vector<Completion> run_pair(HostLoop& la, HostLoop& lb, Endpoint& a, size_t want) {
  std::vector<Completion> done;
  Completion c[8];
  for (int pass = 0; pass < 2'000'000 && done.size() < want; ++pass) {
    la.poll_once();
    lb.poll_once();
    const size_t n = a.poll_completions(c);
    done.insert(done.end(), c, c + n);
  }
  return done;
}

TEST(HostLoop, UetWriteOverMemoryWireWithLoss) {
  MemoryWire wire(512, 9216);
  std::mt19937 rng(3);
  uint64_t lost = 0;
  wire.set_filter([&](int, const Frame&) {
    const bool keep = rng() % 100 != 0;  // 1 % loss in both directions
    lost += keep ? 0 : 1;
    return keep;
  });

  UetConfig ca, cb;
  ca.local_ip4 = kIpA;
  ca.local_mac = mac_of(kIpA);
  cb.local_ip4 = kIpB;
  cb.local_mac = mac_of(kIpB);
  auto a = std::move(*UetEndpoint::create(ca));
  auto b = std::move(*UetEndpoint::create(cb));
  Buffers buf(2 << 20);
  const uint32_t rkey = *b->register_memory(buf.dst.data(), buf.dst.size());

  HostLoop la(wire.end(0), *a, &fake_clock), lb(wire.end(1), *b, &fake_clock);
  constexpr size_t kWrites = 8;
  const uint64_t chunk = buf.src.size() / kWrites;
  for (size_t i = 0; i < kWrites; ++i) {
    const auto part = std::span(buf.src).subspan(i * chunk, chunk);
    ASSERT_TRUE(a->post_write(write_request(i, kIpB, rkey, part, i * chunk)).ok());
  }

  const auto done = run_pair(la, lb, *a, kWrites);
  ASSERT_EQ(done.size(), kWrites);
  for (const auto& c : done) EXPECT_EQ(c.status, OpStatus::kSuccess) << c.wr_id;
  EXPECT_EQ(buf.dst, buf.src);
  EXPECT_GT(lost, 0u);
  EXPECT_GT(a->counters().tx_retx, 0u);
  EXPECT_GT(la.stats().rx_frames, 0u);
  EXPECT_EQ(la.stats().tx_frames, wire.end(0).stats().tx_packets + wire.end(0).stats().tx_dropped);
}

TEST(HostLoop, RoceWriteOverMemoryWireWithLoss) {
  MemoryWire wire(512, 9216);
  std::mt19937 rng(5);
  wire.set_filter([&](int, const Frame&) { return rng() % 200 != 0; });

  RoceConfig ca, cb;
  ca.local_ip4 = kIpA;
  ca.local_mac = mac_of(kIpA);
  ca.ack_timeout_exp = 8;
  cb.local_ip4 = kIpB;
  cb.local_mac = mac_of(kIpB);
  cb.ack_timeout_exp = 8;
  auto a = std::move(*RoceEndpoint::create(ca));
  auto b = std::move(*RoceEndpoint::create(cb));
  ASSERT_TRUE(a->connect_qp(kIpB, 0x100, 0x101, 10, 20).ok());
  ASSERT_TRUE(b->connect_qp(kIpA, 0x101, 0x100, 20, 10).ok());
  Buffers buf(1 << 20);
  const uint32_t rkey = *b->register_memory(buf.dst.data(), buf.dst.size());

  HostLoop la(wire.end(0), *a, &fake_clock), lb(wire.end(1), *b, &fake_clock);
  ASSERT_TRUE(a->post_write(write_request(42, kIpB, rkey, buf.src)).ok());

  const auto done = run_pair(la, lb, *a, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 42u);
  EXPECT_EQ(done[0].status, OpStatus::kSuccess);
  EXPECT_EQ(buf.dst, buf.src);
}

TEST(HostLoop, RunUntilGivesUpAtTheTimeout) {
  MemoryWire wire(8, 2048);
  UetConfig c;
  c.local_ip4 = kIpA;
  c.local_mac = mac_of(kIpA);
  auto a = std::move(*UetEndpoint::create(c));
  HostLoop loop(wire.end(0), *a, &fake_clock);
  const Time start = g_now;
  EXPECT_FALSE(loop.run_until([] { return false; }, 50 * kMicrosecond));
  EXPECT_GE(g_now - start, 50 * kMicrosecond);
  EXPECT_GT(loop.stats().idle_passes, 0u);
}

// A's one write to B, whose first frame back (the write's ACK) is lost; then B's application
// closes, and B lingers (HostLoop::linger for `quiet`, capped at `cap`, A polled between its
// passes) or stops. A is then polled alone until its write completes; returns its status.
struct LastAck {
  OpStatus status = OpStatus::kSuccess;
  bool quiet_ended = false;  // linger ended by its quiet interval, not its cap
  uint64_t b_tx_lingering = 0;  // frames B sent while it lingered
};
LastAck last_ack_lost(Endpoint& a, Endpoint& b, bool linger, Time quiet, Time cap) {
  MemoryWire wire(64, 9216);
  bool dropped = false;
  wire.set_filter([&](int from, const Frame&) {
    if (from != 1 || dropped) return true;
    dropped = true;
    return false;
  });
  Buffers buf(1024);
  const uint32_t rkey = *b.register_memory(buf.dst.data(), buf.dst.size());
  HostLoop la(wire.end(0), a, &fake_clock), lb(wire.end(1), b, &fake_clock);
  EXPECT_TRUE(a.post_write(write_request(7, kIpB, rkey, buf.src)).ok());
  for (int pass = 0; pass < 100'000 && !dropped; ++pass) {
    la.poll_once();
    lb.poll_once();
  }
  EXPECT_TRUE(dropped) << "B never answered";
  EXPECT_EQ(buf.dst, buf.src);  // B has the write: only its ACK is missing
  LastAck r;
  std::vector<Completion> done;
  Completion c[8];
  const auto poll_a = [&] {
    la.poll_once();
    const size_t n = a.poll_completions(c);
    done.insert(done.end(), c, c + n);
  };
  if (linger) {
    const uint64_t tx = lb.stats().tx_frames;
    r.quiet_ended = lb.linger(quiet, cap, [&] {
      poll_a();  // the peer runs between B's passes
      return false;
    });
    r.b_tx_lingering = lb.stats().tx_frames - tx;
  }
  for (int pass = 0; pass < 2'000'000 && done.empty(); ++pass) poll_a();
  EXPECT_EQ(done.size(), 1u);
  if (!done.empty()) r.status = done[0].status;
  return r;
}

// The retry budgets of the endpoints below, short so that a write with no ACK fails soon.
UetConfig uet_config(uint32_t ip) {
  UetConfig c;
  c.local_ip4 = ip;
  c.local_mac = mac_of(ip);
  c.max_retries = 3;
  c.max_rto = 200 * kMicrosecond;
  return c;
}
RoceConfig roce_config(uint32_t ip) {
  RoceConfig c;
  c.local_ip4 = ip;
  c.local_mac = mac_of(ip);
  c.ack_timeout_exp = 4;  // 65.5 us
  c.retry_cnt = 2;
  return c;
}

TEST(HostLoop, LingerAnswersTheRetransmissionWhoseAckWasLostUet) {
  // B's RTO is 50 us; its linger waits twice that without an arrival.
  for (const bool linger : {true, false}) {
    auto a = std::move(*UetEndpoint::create(uet_config(kIpA)));
    auto b = std::move(*UetEndpoint::create(uet_config(kIpB)));
    const LastAck r = last_ack_lost(*a, *b, linger, 100 * kMicrosecond, 10 * kMillisecond);
    // Expect: lingering, B ACKs A's resend and A's write succeeds, the linger ending on its
    // own; gone, B leaves A to retry until its budget ends.
    EXPECT_EQ(r.status, linger ? OpStatus::kSuccess : OpStatus::kRetriesExhausted) << linger;
    EXPECT_EQ(r.quiet_ended, linger);
    EXPECT_GT(a->counters().tx_retx, 0u);  // a tail-loss probe or a timeout
    EXPECT_EQ(b->counters().tx_acks, linger ? 2u : 1u);
    EXPECT_EQ(r.b_tx_lingering, linger ? 1u : 0u);
  }
}

TEST(HostLoop, LingerAnswersTheRetransmissionWhoseAckWasLostRoce) {
  for (const bool linger : {true, false}) {
    auto a = std::move(*RoceEndpoint::create(roce_config(kIpA)));
    auto b = std::move(*RoceEndpoint::create(roce_config(kIpB)));
    ASSERT_TRUE(a->connect_qp(kIpB, 0x100, 0x101, 10, 20).ok());
    ASSERT_TRUE(b->connect_qp(kIpA, 0x101, 0x100, 20, 10).ok());
    const LastAck r = last_ack_lost(*a, *b, linger, 2 * a->config().ack_timeout(),
                                    10 * kMillisecond);
    EXPECT_EQ(r.status, linger ? OpStatus::kSuccess : OpStatus::kRetriesExhausted) << linger;
    EXPECT_EQ(r.quiet_ended, linger);
    EXPECT_GT(a->counters().tx_retx, 0u);  // a tail-loss probe or a timeout
    EXPECT_EQ(r.b_tx_lingering, linger ? 1u : 0u);
  }
}

TEST(HostLoop, LingerEndsAtItsCapAndNotBeforeAnyExchange) {
  MemoryWire wire(8, 2048);
  auto a = std::move(*UetEndpoint::create(uet_config(kIpA)));
  HostLoop loop(wire.end(0), *a, &fake_clock);
  // Expect: a loop that never moved a frame does not linger at all.
  EXPECT_TRUE(loop.linger(kMillisecond, 10 * kMillisecond, [] { return true; }));
  EXPECT_EQ(loop.stats().passes, 0u);
  // One frame sent (A's write, to no one); the caller waits on it for ever: the cap ends it.
  Buffers buf(256);
  ASSERT_TRUE(a->post_write(write_request(1, kIpB, 1, buf.src)).ok());
  loop.poll_once();
  ASSERT_EQ(loop.stats().tx_frames, 1u);
  const Time start = g_now;
  EXPECT_FALSE(loop.linger(kMicrosecond, kMillisecond, [] { return true; }));
  EXPECT_GE(g_now - start, kMillisecond);
  EXPECT_LT(g_now - start, kMillisecond + 10 * kMicrosecond);
}

TEST(MemoryWire, ReturnsEveryLentFrame) {
  MemoryWire wire(4, 256);
  PacketIo& io = wire.end(0);
  Frame* f[kMaxBurst];
  // The pool has 4 frames: lending all and sending none must give them all back.
  for (int round = 0; round < 3; ++round) {
    const size_t n = io.alloc_tx(f);
    ASSERT_EQ(n, 4u) << "round " << round;
    f[0]->len = 60;
    EXPECT_EQ(io.tx_burst(std::span<Frame* const>(f, 1), std::span<Frame* const>(f + 1, n - 1)), 1u);
    Frame* r[kMaxBurst];
    const size_t got = wire.end(1).rx_burst(r);
    ASSERT_EQ(got, 1u);
    EXPECT_EQ(r[0]->len, 60u);
    wire.end(1).release_rx(std::span<Frame* const>(r, got));
  }
  EXPECT_EQ(io.stats().tx_packets, 3u);
}

}  // namespace
}  // namespace uet::io
