// The DPDK backend: the neighbour table and ARP codec (no DPDK needed), then two DpdkIo ports
// in one process joined by a net_memif pair (server and client on one socket) carrying a UET
// write whose peers find each other by ARP, then a RoCEv2 write; both send their payloads by
// reference (external-buffer mbufs chained behind the headers). No NIC, no hugepages.
#include "dpdk-io/dpdk_io.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dpdk-io/dpdk_neigh.h"
#include "dpdk-io/host_loop.h"
#include "tests/common/payload.h"
#include "tests/dpdk-io/memif_eal.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/wire/builder.h"
#include "transport/wire/checksum.h"

namespace uet::io {
namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr wire::MacAddr kMacA{0x02, 0, 0, 0, 0, 1}, kMacB{0x02, 0, 0, 0, 0, 2};

TEST(NeighbourTable, StaticEntriesWinOverLearnedOnes) {
  NeighbourTable t(8);
  EXPECT_EQ(t.find(kIpA), nullptr);
  ASSERT_TRUE(t.set(kIpA, kMacA, /*is_static=*/true));
  ASSERT_TRUE(t.set(kIpA, kMacB, /*is_static=*/false));  // ARP must not override --neigh
  ASSERT_NE(t.find(kIpA), nullptr);
  EXPECT_EQ(*t.find(kIpA), kMacA);
  ASSERT_TRUE(t.set(kIpB, kMacA, false));
  ASSERT_TRUE(t.set(kIpB, kMacB, false));  // learned entries follow the latest ARP
  EXPECT_EQ(*t.find(kIpB), kMacB);
  EXPECT_EQ(t.size(), 2u);
}

TEST(NeighbourTable, IsBoundedAndRefusesWhenFull) {
  NeighbourTable t(8);
  size_t added = 0;
  for (uint32_t i = 0; i < 100; ++i) added += t.set(0x0B000000 + i, kMacA, false) ? 1 : 0;
  // Expect: a fixed table (3/4 load at most), and every entry it took is still found.
  EXPECT_EQ(added, 6u);
  for (uint32_t i = 0; i < added; ++i) EXPECT_NE(t.find(0x0B000000 + i), nullptr);
}

TEST(Arp, RequestAndReplyRoundTrip) {
  std::vector<uint8_t> buf(64);
  ASSERT_EQ(build_arp(buf, kArpRequest, kMacA, kIpA, kBroadcastMac, kIpB), kArpFrameLen);
  EXPECT_EQ(ether_type(buf), kEtherTypeArp);
  auto req = parse_arp(buf);
  ASSERT_TRUE(req.has_value());
  EXPECT_EQ(req->op, kArpRequest);
  EXPECT_EQ(req->sha, kMacA);
  EXPECT_EQ(req->spa, kIpA);
  EXPECT_EQ(req->tpa, kIpB);
  EXPECT_EQ(req->tha, wire::MacAddr{});
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 6, kBroadcastMac.begin()));

  ASSERT_EQ(build_arp(buf, kArpReply, kMacB, kIpB, req->sha, req->spa), kArpFrameLen);
  auto rep = parse_arp(buf);
  ASSERT_TRUE(rep.has_value());
  EXPECT_EQ(rep->op, kArpReply);
  EXPECT_EQ(rep->sha, kMacB);
  EXPECT_EQ(rep->spa, kIpB);
  EXPECT_EQ(rep->tha, kMacA);
  EXPECT_EQ(rep->tpa, kIpA);
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 6, kMacA.begin()));
  EXPECT_EQ(build_arp(std::span<uint8_t>(buf.data(), 20), kArpReply, kMacB, kIpB, kMacA, kIpA), 0u);
}

TEST(Arp, RejectsOtherFrames) {
  std::vector<uint8_t> buf(64);
  build_arp(buf, kArpRequest, kMacA, kIpA, kBroadcastMac, kIpB);
  buf[15] = 6;  // htype 6 (IEEE 802): not Ethernet
  EXPECT_FALSE(parse_arp(buf).has_value());
  EXPECT_FALSE(parse_arp(std::span<uint8_t>(buf.data(), 30)).has_value());
}

TEST(Frames, Ipv4DestinationBehindAVlanTag) {
  std::vector<uint8_t> f(18 + 20, 0);
  f[12] = 0x81;  // 802.1Q
  f[16] = 0x08;  // IPv4
  f[18 + 16] = 10;
  f[18 + 19] = 2;
  ASSERT_TRUE(ipv4_destination(f).has_value());
  EXPECT_EQ(*ipv4_destination(f), kIpB);
  f[17] = 0x06;  // ARP
  EXPECT_FALSE(ipv4_destination(f).has_value());
}

TEST(Text, ParsesAddresses) {
  EXPECT_EQ(parse_ip4("10.0.0.2"), kIpB);
  EXPECT_FALSE(parse_ip4("10.0.0.256").has_value());
  EXPECT_FALSE(parse_ip4("10.0.0").has_value());
  EXPECT_EQ(parse_mac("02:00:00:00:00:02"), kMacB);
  EXPECT_FALSE(parse_mac("02:00:00:00:00").has_value());
  EXPECT_FALSE(parse_mac("02:00:00:00:00:0g").has_value());
}

// The EAL of the test below, kept for the life of the process (see the end of the test): held
// in a global, so LeakSanitizer sees it as reachable.
DpdkEal* g_kept_eal = nullptr;

// Two ports of one process over a memif pair; one EAL for the whole test process.
TEST(DpdkIo, UetWriteOverMemifPairResolvedByArp) {
  const std::string sock = testing::memif_socket("dpdk_io_test");
  auto eal = testing::memif_pair_eal("dpdk_io_test", "0", sock);
  ASSERT_TRUE(eal.ok()) << eal.status();
  ASSERT_EQ((*eal)->port_count(), 2u) << (*eal)->describe_ports();
  {
    auto [ca, cb] = testing::memif_pair_configs(kIpA, kIpB);
    ca.mtu = cb.mtu = 4200;
    ca.tx_hold = 5 * kMillisecond;
    auto a = DpdkIo::create(ca);
    ASSERT_TRUE(a.ok()) << a.status();
    auto b = DpdkIo::create(cb);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE((*a)->wait_link_up(5 * kSecond));
    ASSERT_TRUE((*b)->wait_link_up(5 * kSecond));
    EXPECT_GE((*a)->max_frame(), 4200u);

    UetConfig ua, ub;
    ua.local_ip4 = kIpA;
    ua.local_mac = (*a)->mac();
    ub.local_ip4 = kIpB;
    ub.local_mac = (*b)->mac();
    ua.rto = ub.rto = 200 * kMicrosecond;
    ASSERT_TRUE((*a)->gathers());  // memif takes chained mbufs
    ua.tx_by_reference = true;
    auto ea = std::move(*UetEndpoint::create(ua));
    auto eb = std::move(*UetEndpoint::create(ub));
    std::vector<uint8_t> src(1 << 20), dst(1 << 20);
    std::mt19937 rng(11);
    for (auto& x : src) x = static_cast<uint8_t>(rng());
    const uint32_t rkey = *eb->register_memory(dst.data(), dst.size());

    HostLoop la(**a, *ea), lb(**b, *eb);
    ASSERT_TRUE(ea->post_write(testing::write_request(5, kIpB, rkey, src)).ok());

    Completion c[4];
    size_t got = 0;
    const Time give_up = monotonic_now() + 20 * kSecond;
    while (got == 0 && monotonic_now() < give_up) {
      la.poll_once();
      lb.poll_once();
      got = ea->poll_completions(c);
    }
    // Expect: the write completes and lands byte for byte; A learnt B's MAC by ARP (its first
    // frame found no neighbour, was dropped and counted, and retransmitted), B learnt A's
    // from A's request and answered it in place.
    ASSERT_EQ(got, 1u);
    EXPECT_EQ(c[0].status, OpStatus::kSuccess);
    EXPECT_EQ(dst, src);
    ASSERT_NE((*a)->neighbour(kIpB), nullptr);
    EXPECT_EQ(*(*a)->neighbour(kIpB), (*b)->mac());
    ASSERT_NE((*b)->neighbour(kIpA), nullptr);
    EXPECT_EQ(*(*b)->neighbour(kIpA), (*a)->mac());
    EXPECT_GE((*a)->counters().arp_requests_sent, 1u);
    EXPECT_GE((*a)->counters().tx_no_neighbour, 1u);
    EXPECT_GE((*b)->counters().arp_requests_answered, 1u);
    EXPECT_GE((*b)->stats().rx_packets, 256u);  // 1 MiB in 4 KiB packets
    EXPECT_TRUE((*a)->link().up);
    EXPECT_FALSE((*a)->xstats().empty());
    // Every data packet went out chained, and memif let go of each payload as it copied it.
    EXPECT_GE((*a)->counters().tx_referenced, 256u);
    EXPECT_EQ((*a)->counters().tx_flattened, 0u);
    EXPECT_TRUE((*a)->drain_references(kSecond));
    EXPECT_EQ((*a)->references_in_flight(), 0u);

    // RoCEv2 on the same ports, by reference: an odd length, so the last packet's pad and the
    // ICRC ride in a third segment, and the ICRC covers the chained payload.
    RoceConfig ra, rb;
    ra.local_ip4 = kIpA;
    ra.local_mac = (*a)->mac();
    rb.local_ip4 = kIpB;
    rb.local_mac = (*b)->mac();
    ra.tx_by_reference = true;
    auto qa = std::move(*RoceEndpoint::create(ra));
    auto qb = std::move(*RoceEndpoint::create(rb));
    ASSERT_TRUE(qa->connect_qp(kIpB, 0x100, 0x101, 100, 900).ok());
    ASSERT_TRUE(qb->connect_qp(kIpA, 0x101, 0x100, 900, 100).ok());
    std::vector<uint8_t> dst2(src.size());
    const uint32_t rkey2 = *qb->register_memory(dst2.data(), dst2.size());
    const uint64_t referenced_before = (*a)->counters().tx_referenced;
    HostLoop ra_loop(**a, *qa), rb_loop(**b, *qb);
    ASSERT_TRUE(qa->post_write({6, kIpB, rkey2, 0, src.data(), src.size() - 3}).ok());
    got = 0;
    while (got == 0 && monotonic_now() < give_up + 20 * kSecond) {
      ra_loop.poll_once();
      rb_loop.poll_once();
      got = qa->poll_completions(c);
    }
    ASSERT_EQ(got, 1u);
    EXPECT_EQ(c[0].status, OpStatus::kSuccess);
    EXPECT_TRUE(std::equal(src.begin(), src.end() - 3, dst2.begin()));
    EXPECT_EQ(qb->counters().rx_bad_icrc, 0u);
    EXPECT_GE((*a)->counters().tx_referenced - referenced_before, 256u);
    EXPECT_TRUE((*a)->drain_references(kSecond));

    // B stops reading: A's memif ring fills, then its backlog, and alloc_tx lends nothing.
    // Once the device has taken nothing for tx_hold, the backlog is dropped and counted.
    const auto fill = [](Frame& f, uint32_t ip) {
      std::fill_n(f.data, 64, uint8_t{0});
      f.data[12] = 0x08;  // IPv4, version 4, IHL 5, to `ip`
      f.data[14] = 0x45;
      for (int i = 0; i < 4; ++i) f.data[30 + i] = static_cast<uint8_t>(ip >> (24 - 8 * i));
      f.len = 64;
    };
    const DpdkCounters before = (*a)->counters();
    const Time stop_at = monotonic_now() + 5 * kSecond;
    std::array<Frame*, kMaxBurst> burst{};
    while ((*a)->counters().tx_stalls == before.tx_stalls && monotonic_now() < stop_at) {
      const size_t lent = (*a)->alloc_tx(burst);
      for (size_t i = 0; i < lent; ++i) fill(*burst[i], kIpB);
      (*a)->tx_burst({burst.data(), lent}, {});
    }
    // Expect: the ring refused frames (held, not dropped at once), then the held ones were
    // dropped after tx_hold; once drained, every mbuf of both pools is back.
    EXPECT_GT((*a)->counters().tx_ring_full_waits, before.tx_ring_full_waits);
    EXPECT_EQ((*a)->counters().tx_stalls, before.tx_stalls + 1);
    EXPECT_GT((*a)->counters().tx_stalled, 0u);
    EXPECT_EQ((*a)->counters().tx_ring_full, before.tx_ring_full);
    (*a)->drain_tx();
    EXPECT_EQ((*a)->pool_in_use(), 0u);
    for (size_t n = 1; n > 0;) {
      n = (*b)->rx_burst(burst);
      (*b)->release_rx({burst.data(), n});
    }
    (*b)->drain_tx();  // the TX mbufs B keeps between its bursts
    EXPECT_EQ((*b)->pool_in_use(), 0u);
    EXPECT_GT((*a)->pool_size(), 0u);
    testing::close_client_and_settle(*b, **a);
  }
  unlink(sock.c_str());
  // DPDK 22.11's memif tears down its in-process peer from the interrupt thread; cleaning the
  // EAL up under it crashes now and then, so this test process leaves the EAL to exit().
  g_kept_eal = eal->release();
}

// A 64-byte IPv4 frame to `ip` whose last four bytes say which frame it is.
void fill_marked(Frame& f, uint32_t ip, uint32_t marker) {
  std::fill_n(f.data, 64, uint8_t{0});
  f.data[12] = 0x08;
  f.data[14] = 0x45;
  for (int i = 0; i < 4; ++i) f.data[30 + i] = static_cast<uint8_t>(ip >> (24 - 8 * i));
  std::memcpy(f.data + 60, &marker, 4);
  f.len = 64;
}

// The frames alloc_tx lends are kept between bursts: an idle poll gives every one back in
// place, a burst that fills any subset sends those frames' own bytes, and a frame sent or
// begun and left unused is empty when it is lent again. Short payloads
// by reference are copied, long ones chained.
TEST(DpdkIo, LentFramesSendTheirOwnBytesInAnyOrderAndNoMbufIsLost) {
  const std::string sock = testing::memif_socket("dpdk_io_lend");
  auto eal = testing::memif_pair_eal("dpdk_io_lend", "0", sock);
  ASSERT_TRUE(eal.ok()) << eal.status();
  ASSERT_EQ((*eal)->port_count(), 2u) << (*eal)->describe_ports();
  {
    const auto [ca, cb] = testing::memif_pair_configs(kIpA, kIpB);
    auto a = DpdkIo::create(ca);
    ASSERT_TRUE(a.ok()) << a.status();
    auto b = DpdkIo::create(cb);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE((*a)->wait_link_up(5 * kSecond));
    ASSERT_TRUE((*b)->wait_link_up(5 * kSecond));
    std::array<Frame*, kMaxBurst> lent{}, again{};
    // A asks (again every 50 ms: a request sent while memif connects may be lost), B answers
    // in its rx_burst, A learns in its own.
    for (Time until = monotonic_now() + 5 * kSecond, next = 0;
         (*a)->neighbour(kIpB) == nullptr && monotonic_now() < until;) {
      if (monotonic_now() >= next) {
        (*a)->solicit(kIpB);
        next = monotonic_now() + 50 * kMillisecond;
      }
      (*b)->release_rx({again.data(), (*b)->rx_burst(again)});
      (*a)->release_rx({again.data(), (*a)->rx_burst(again)});
    }
    ASSERT_NE((*a)->neighbour(kIpB), nullptr);
    size_t n = (*a)->alloc_tx(lent);
    ASSERT_EQ(n, kMaxBurst);
    const size_t held = (*a)->pool_in_use();
    for (int poll = 0; poll < 1000; ++poll) {  // idle polls: nothing moves, nothing allocated
      (*a)->tx_burst({}, {lent.data(), n});
      ASSERT_EQ((*a)->alloc_tx(again), n);
      ASSERT_EQ(again, lent);
    }
    EXPECT_EQ((*a)->pool_in_use(), held);

    // Rounds that fill a prefix, a scattered subset, or the whole burst. A prefix round
    // scribbles on the first frame it leaves unused (as an engine that began a frame and gave
    // up would; packet_io.h), a scattered round on every one it leaves unused.
    std::mt19937 rng(7);
    const uint8_t payload_scribble[5] = {1, 2, 3, 4, 5};
    std::map<uint32_t, int> arrived;
    uint32_t marker = 0, sent_total = 0;
    for (int round = 0; round < 200; ++round) {
      n = (*a)->alloc_tx(lent);
      ASSERT_EQ(n, kMaxBurst);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(lent[i]->len, 0u);
        ASSERT_EQ(lent[i]->ref, nullptr);
        ASSERT_GE(lent[i]->capacity, 64u);
      }
      std::vector<Frame*> filled, unused;
      const int shape = round % 3;
      const size_t prefix = rng() % (n + 1);
      for (size_t i = 0; i < n; ++i) {
        const bool fill = shape == 0 ? i < prefix : shape == 1 ? (rng() & 1) != 0 : true;
        if (fill) {
          fill_marked(*lent[i], kIpB, ++marker);
          filled.push_back(lent[i]);
        } else {
          if (shape == 1 || unused.empty()) {
            lent[i]->len = 17;
            lent[i]->ref = payload_scribble;
            lent[i]->ref_len = 5;
          }
          unused.push_back(lent[i]);
        }
      }
      sent_total += static_cast<uint32_t>((*a)->tx_burst(filled, unused));
      for (size_t got = 1; got > 0;) {  // B reads what arrived so far
        got = (*b)->rx_burst(again);
        for (size_t i = 0; i < got; ++i) {
          uint32_t m = 0;
          std::memcpy(&m, again[i]->data + 60, 4);
          ++arrived[m];
        }
        (*b)->release_rx({again.data(), got});
      }
    }
    const Time until = monotonic_now() + 2 * kSecond;
    while (arrived.size() < sent_total && monotonic_now() < until) {
      const size_t got = (*b)->rx_burst(again);
      for (size_t i = 0; i < got; ++i) {
        uint32_t m = 0;
        std::memcpy(&m, again[i]->data + 60, 4);
        ++arrived[m];
      }
      (*b)->release_rx({again.data(), got});
      (*a)->tx_burst({}, {again.data(), (*a)->alloc_tx(again)});  // flushes a backlog
    }
    // Expect: every frame sent arrived once with its own marker (a frame sent from another
    // frame's mbuf would repeat or lose a marker); all mbufs come back.
    EXPECT_EQ(sent_total, marker);
    ASSERT_EQ(arrived.size(), marker);
    for (const auto& [m, count] : arrived) {
      EXPECT_GE(m, 1u);
      EXPECT_LE(m, marker);
      EXPECT_EQ(count, 1) << "marker " << m;
    }

    // A payload by reference shorter than reference_from (512) is copied into the frame, a
    // longer one chained; both arrive whole.
    ASSERT_TRUE((*a)->gathers());
    std::vector<uint8_t> payload(1024);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7 + 1);
    const DpdkCounters c0 = (*a)->counters();
    for (const uint32_t len : {64u, 1024u}) {
      ASSERT_EQ((*a)->alloc_tx(lent), kMaxBurst);
      fill_marked(*lent[0], kIpB, len);
      lent[0]->ref = payload.data();
      lent[0]->ref_len = len;
      lent[0]->ref_at = 64;
      ASSERT_EQ((*a)->tx_burst({lent.data(), 1}, {lent.data() + 1, kMaxBurst - 1}), 1u);
    }
    EXPECT_EQ((*a)->counters().tx_flattened - c0.tx_flattened, 1u);
    EXPECT_EQ((*a)->counters().tx_referenced - c0.tx_referenced, 1u);
    size_t whole = 0;
    for (const Time t = monotonic_now() + 2 * kSecond; whole < 2 && monotonic_now() < t;) {
      const size_t got = (*b)->rx_burst(again);
      for (size_t i = 0; i < got; ++i) {
        uint32_t len = 0;
        std::memcpy(&len, again[i]->data + 60, 4);
        ASSERT_EQ(again[i]->len, 64 + len);
        EXPECT_TRUE(std::equal(payload.begin(), payload.begin() + len, again[i]->data + 64));
        ++whole;
      }
      (*b)->release_rx({again.data(), got});
    }
    EXPECT_EQ(whole, 2u);
    EXPECT_TRUE((*a)->drain_references(kSecond));
    (*a)->drain_tx();
    (*b)->drain_tx();
    EXPECT_EQ((*a)->pool_in_use(), 0u);
    EXPECT_EQ((*b)->pool_in_use(), 0u);
    testing::close_client_and_settle(*b, **a);
  }
  unlink(sock.c_str());
  g_kept_eal = eal->release();
}

// With TX checksum offload (net_tap offers it, in software inside the PMD), exactly the UDP
// frames that carry checksum 0 leave with the device's: over IPv4, IPv6 and behind a VLAN
// tag; a frame with its own checksum keeps it. Read back on the tap's kernel side by a packet
// socket, in a network namespace of the test's own (root only).
TEST(DpdkIo, TapFillsUdpChecksumsLeftZeroAndOnlyThose) {
  if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) GTEST_SKIP() << "needs root (a netns)";
  const std::string ifname = "uetcs" + std::to_string(getpid() % 100000);
  auto eal = DpdkEal::init({"dpdk_io_tap", "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
                            "--no-telemetry", "-l", "0", "--log-level=lib.eal:error",
                            "--log-level=pmd.net.tap:error", "--vdev=net_tap0,iface=" + ifname});
  ASSERT_TRUE(eal.ok()) << eal.status();
  DpdkIoConfig c;
  c.local_ip4 = kIpA;
  c.mbufs = 2047;
  c.mbuf_cache = 64;
  c.mtu = 1500;
  c.tx_checksum_offload = true;
  c.neighbours.push_back({kIpB, kMacB});
  auto io = DpdkIo::create(c);
  ASSERT_TRUE(io.ok()) << io.status();
  ASSERT_TRUE((*io)->offloads().tx_udp_checksum_used) << (*io)->driver_name();

  const int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  ASSERT_GE(fd, 0);
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  ASSERT_GT(sll.sll_ifindex, 0);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof(sll)), 0);
  timeval tv{2, 0};  // a bound on each read, so a frame that never comes fails the test
  ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);

  struct Case {
    const char* name;
    bool ipv6, vlan, checksum;
  };
  const Case cases[] = {{"ipv4, 0", false, false, false},
                        {"ipv6, 0", true, false, false},
                        {"vlan ipv4, 0", false, true, false},
                        {"ipv4, own checksum", false, false, true}};
  const uint64_t before = (*io)->counters().tx_checksum_offloaded;
  for (uint16_t i = 0; i < 4; ++i) {
    const Case& k = cases[i];
    wire::Encap e;
    e.src_mac = kMacA;
    e.dst_mac = kMacB;
    e.ipv6 = k.ipv6;
    e.src_ip4 = kIpA;
    e.dst_ip4 = kIpB;
    e.src_ip6[15] = 1;
    e.dst_ip6[15] = 2;
    e.vlan = k.vlan;
    e.vlan_tci = 7;
    e.sport = static_cast<uint16_t>(0xC000 + i);  // which case a frame is
    e.udp_checksum = k.checksum;
    std::array<Frame*, kMaxBurst> lent{};
    const size_t n = (*io)->alloc_tx(lent);
    ASSERT_GE(n, 1u);
    wire::FrameBuilder b(std::span<uint8_t>(lent[0]->data, lent[0]->capacity), e);
    uint8_t* body = b.add_bytes(100);
    ASSERT_NE(body, nullptr);
    for (int j = 0; j < 100; ++j) body[j] = static_cast<uint8_t>(j * 13 + i);
    size_t len = 0;
    ASSERT_EQ(b.finish(&len), wire::WireError::kOk);
    lent[0]->len = static_cast<uint32_t>(len);
    ASSERT_EQ((*io)->tx_burst({lent.data(), 1}, {lent.data() + 1, n - 1}), 1u) << k.name;

    // The frame as the kernel got it (skipping whatever the kernel sent on the interface).
    std::array<uint8_t, 2048> got{};
    ssize_t r = -1;
    size_t l2 = 0, l3 = 0;
    for (int tries = 0; tries < 100; ++tries) {
      sockaddr_ll from{};
      socklen_t fl = sizeof(from);
      r = recvfrom(fd, got.data(), got.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
      ASSERT_GT(r, 0) << k.name << ": nothing came out of the tap";
      if (from.sll_pkttype == PACKET_OUTGOING) continue;
      const uint16_t type = ether_type({got.data(), static_cast<size_t>(r)}, &l2);
      l3 = type == kEtherTypeIpv4 ? 20 : type == kEtherTypeIpv6 ? 40 : 0;
      if (l3 > 0 && static_cast<size_t>(r) >= l2 + l3 + 8 &&
          (got[l2 + l3] << 8 | got[l2 + l3 + 1]) == e.sport)
        break;
      r = -1;
    }
    ASSERT_GT(r, 0) << k.name;
    // The VLAN tag stays where it was (the kernel may pass it on in metadata instead).
    const uint8_t* ip = got.data() + l2;
    const uint8_t* udp = ip + l3;
    const auto udp_len = static_cast<size_t>(udp[4] << 8 | udp[5]);
    ASSERT_EQ(l2 + l3 + udp_len, static_cast<size_t>(r)) << k.name;
    const uint16_t on_wire = static_cast<uint16_t>(udp[6] << 8 | udp[7]);
    EXPECT_NE(on_wire, 0) << k.name;
    EXPECT_EQ(on_wire, wire::udp_checksum(ip, k.ipv6, udp, udp_len)) << k.name;
    bool same = true;  // the payload came through as built
    for (size_t j = 0; j < 100; ++j)
      same = same && udp[udp_len - 100 + j] == static_cast<uint8_t>(j * 13 + i);
    EXPECT_TRUE(same) << k.name;
  }
  // Three of the four were the device's to fill.
  EXPECT_EQ((*io)->counters().tx_checksum_offloaded - before, 3u);
  EXPECT_EQ((*io)->counters().tx_prepare_refused, 0u);
  close(fd);
}

}  // namespace
}  // namespace uet::io
