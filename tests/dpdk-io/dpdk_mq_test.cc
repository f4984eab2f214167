// The DPDK backend with several queue pairs per port (dpdk_io.h, "Queues, lcores and FEPs"):
// two memif ports of one process, 2 queues each, one UET engine per queue (FEP 10.0.1.1/.2 on
// the server port, 10.0.2.1/.2 on the client port), each pair of engines driven by its own
// EAL lcore through DpdkEal::run_on_lcores. No NIC, no hugepages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dpdk-io/dpdk_io.h"
#include "dpdk-io/host_loop.h"
#include "tests/dpdk-io/memif_eal.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::io {
namespace {

constexpr uint32_t kServerBase = 0x0A000101, kClientBase = 0x0A000201;
constexpr uint16_t kQueues = 2;

// Kept for the life of the process (22.11's memif tears its in-process peer down from the
// interrupt thread; see dpdk_io_test.cc): held in a global, so LeakSanitizer sees it.
DpdkEal* g_kept_eal = nullptr;

TEST(DpdkIoConfig, RefusesBadQueueCounts) {
  DpdkIoConfig c;
  c.local_ip4 = kServerBase;
  c.queues = 0;
  EXPECT_NE(c.validate().message().find("queues=0 out of range: 1..64"), std::string::npos)
      << c.validate();
  c.queues = 65;
  EXPECT_FALSE(c.validate().ok());
  c.queues = 2;
  c.local_ip4 = 0xFFFFFFFF;
  EXPECT_FALSE(c.validate().ok());  // the second FEP's address would wrap
  c.local_ip4 = kServerBase;
  EXPECT_TRUE(c.validate().ok());
  // create() drives one queue; several take create_queues().
  EXPECT_EQ(DpdkIo::create(c).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DpdkIoConfig, RefusesAReferenceThresholdBeyondAFrame) {
  DpdkIoConfig c;
  c.local_ip4 = kServerBase;
  c.reference_from = 65536;
  EXPECT_NE(c.validate().message().find("reference_from=65536 out of range: 0..65535"),
            std::string::npos)
      << c.validate();
  c.reference_from = 0;  // every payload by reference is chained
  EXPECT_TRUE(c.validate().ok());
}

TEST(DpdkIo, TwoQueuesTwoLcoresOneFepEachOverMemif) {
  const std::string sock = testing::memif_socket("dpdk_mq_test");
  auto eal = testing::memif_pair_eal("dpdk_mq_test", "0-1", sock);
  ASSERT_TRUE(eal.ok()) << eal.status();
  ASSERT_EQ((*eal)->port_count(), 2u) << (*eal)->describe_ports();
  ASSERT_GE((*eal)->lcore_count(), 2u);
  {
    DpdkIoConfig cs, cc;
    cs.port_id = 0;
    cs.local_ip4 = kServerBase;
    cc.port_id = 1;
    cc.local_ip4 = kClientBase;
    cs.queues = cc.queues = kQueues;
    cs.mbufs = cc.mbufs = 4095;
    cs.mbuf_cache = cc.mbuf_cache = 64;
    cs.mtu = cc.mtu = 4200;
    auto server = DpdkIo::create_queues(cs);
    ASSERT_TRUE(server.ok()) << server.status();
    auto client = DpdkIo::create_queues(cc);
    ASSERT_TRUE(client.ok()) << client.status();
    ASSERT_EQ(server->size(), kQueues);
    ASSERT_EQ(client->size(), kQueues);
    ASSERT_TRUE((*server)[0]->wait_link_up(5 * kSecond));
    ASSERT_TRUE((*client)[0]->wait_link_up(5 * kSecond));
    EXPECT_NE((*server)[0]->steering().find("queue pairing"), std::string::npos)
        << (*server)[0]->steering();
    for (uint16_t q = 0; q < kQueues; ++q) {
      EXPECT_EQ((*server)[q]->queue(), q);
      EXPECT_EQ((*server)[q]->local_ip4(), kServerBase + q);
      EXPECT_EQ((*client)[q]->local_ip4(), kClientBase + q);
    }

    // One lane per lcore: client engine q writes 1 MiB to server engine q. Each lane owns its
    // engines, buffers and queues; nothing is shared between the lcores but the ports' pools.
    struct Lane {
      std::vector<uint8_t> src, dst;
      bool completed = false, ok = false;
    };
    std::vector<Lane> lanes(kQueues);
    std::vector<std::function<int()>> fns;
    for (uint16_t q = 0; q < kQueues; ++q) {
      fns.emplace_back([&, q]() -> int {
        DpdkIo& sio = *(*server)[q];
        DpdkIo& cio = *(*client)[q];
        Lane& lane = lanes[q];
        UetConfig us, uc;
        us.local_ip4 = sio.local_ip4();
        us.local_mac = sio.mac();
        uc.local_ip4 = cio.local_ip4();
        uc.local_mac = cio.mac();
        us.rto = uc.rto = 2 * kMillisecond;
        auto es = UetEndpoint::create(us);
        auto ec = UetEndpoint::create(uc);
        if (!es.ok() || !ec.ok()) return 1;
        lane.src.resize(1 << 20);
        lane.dst.resize(1 << 20);
        std::mt19937 rng(100 + q);
        for (auto& x : lane.src) x = static_cast<uint8_t>(rng());
        const uint32_t rkey = *(*es)->register_memory(lane.dst.data(), lane.dst.size());
        HostLoop ls(sio, **es), lc(cio, **ec);
        WriteRequest wr;
        wr.wr_id = q;
        wr.peer = sio.local_ip4();
        wr.rkey = rkey;
        wr.local = lane.src.data();
        wr.length = lane.src.size();
        if (!(*ec)->post_write(wr).ok()) return 2;
        Completion c[4];
        const Time give_up = monotonic_now() + 20 * kSecond;
        while (!lane.completed && monotonic_now() < give_up) {
          lc.poll_once();
          ls.poll_once();
          if ((*ec)->poll_completions(c) > 0) {
            lane.completed = true;
            lane.ok = c[0].status == OpStatus::kSuccess;
          }
        }
        // Keep the server answering briefly so its last ACKs leave.
        const Time until = monotonic_now() + 5 * kMillisecond;
        while (monotonic_now() < until) {
          lc.poll_once();
          ls.poll_once();
        }
        return 0;
      });
    }
    auto rcs = (*eal)->run_on_lcores(fns);
    ASSERT_TRUE(rcs.ok()) << rcs.status();
    // Expect: both lanes complete and land byte for byte; each server queue answered ARP for
    // its own FEP (and learnt its own client), each client queue learnt its own server FEP;
    // on memif the queues are paired, so no frame had to be handed to another queue.
    for (uint16_t q = 0; q < kQueues; ++q) {
      SCOPED_TRACE(q);
      EXPECT_EQ((*rcs)[q], 0);
      EXPECT_TRUE(lanes[q].completed);
      EXPECT_TRUE(lanes[q].ok);
      EXPECT_TRUE(lanes[q].dst == lanes[q].src);
      const DpdkIo& sio = *(*server)[q];
      const DpdkIo& cio = *(*client)[q];
      EXPECT_GE(sio.counters().arp_requests_answered, 1u);
      EXPECT_GE(cio.counters().arp_requests_sent, 1u);
      ASSERT_NE(cio.neighbour(kServerBase + q), nullptr);
      EXPECT_EQ(*cio.neighbour(kServerBase + q), sio.mac());
      ASSERT_NE(sio.neighbour(kClientBase + q), nullptr);
      EXPECT_EQ(cio.neighbour(kServerBase + (1 - q)), nullptr);  // never asked for it
      EXPECT_GE(sio.stats().rx_packets, 256u);  // 1 MiB in 4 KiB packets, on this queue
      EXPECT_EQ(sio.counters().rx_redirected + cio.counters().rx_redirected, 0u);
    }
    (*client).clear();
    const Time until = monotonic_now() + 2 * kSecond;
    while ((*server)[0]->link().up && monotonic_now() < until) usleep(1000);
    usleep(20'000);
  }
  unlink(sock.c_str());
  g_kept_eal = eal->release();
}

}  // namespace
}  // namespace uet::io
