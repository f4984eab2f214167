// The DPDK backend of PacketIo (packet_io.h): one ethdev port with one or more RX/TX queue
// pairs and one mbuf pool; each queue pair is one DpdkIo, driven by one thread (one engine per
// lcore), and no lock is taken anywhere on the data path.
//
// Queues, lcores and FEPs (DpdkIoConfig::queues = N): in UET a fabric endpoint (FEP) is an IP
// address, so one engine per lcore is one FEP per queue pair: queue i answers for
// local_ip4 + i. create_queues() returns the N DpdkIo of the port, to be handed to N lcores.
// Frames reach their FEP's queue by
//   - rte_flow on real NICs: one rule per queue, ETH / IPV4 dst == local_ip4 + i -> QUEUE i;
//   - queue pairing on shared-memory devices (net_memif, net_ring, net_null): what peer queue
//     i sends arrives on queue i, so engine i talks to the peer's engine i;
//   - software steering otherwise (the PMD refused the rules; steering() says why): RSS (when
//     the port has it) spreads the frames, and a queue hands a frame (IPv4 or ARP) addressed
//     to another FEP of the port to that FEP's inbox, a lock-free multi-producer /
//     single-consumer rte_ring its owner drains at the start of every rx_burst(). The rings
//     also exist with rte_flow and pairing: ARP (broadcast, not matched by the rules) and any
//     stray frame still reach their FEP. Counted: DpdkCounters::rx_redirected.
// With N = 1 there is no ring and every IP frame is handed up (the engine checks addresses).
//
// Pool: one per port, on the port's NUMA socket (so one per socket for a port's queues),
// shared by its queues through DPDK's lock-free mempool and per-lcore caches (mbuf_cache):
// mbufs is the total for all queues. Each queue owns its neighbour table, ARP state, burst
// arrays, backlog and counters; the queues share only read-only port state (the FEP addresses,
// the inbox rings' handles) and the pool. The port is stopped and closed, the rings and the
// pool freed, when the last DpdkIo of the port is destroyed (after every lcore has stopped).
//
// Frames are mbufs, lent (DESIGN.md "frames are lent, not copied"):
//   - rx_burst(): the inbox, then rte_eth_rx_burst(), fill a fixed array of kMaxBurst mbufs;
//     Frame i of a fixed
//     array points at mbuf i's data (Frame.data = rte_pktmbuf_mtod, len = data_len). The Frame*
//     handed out maps back to its mbuf by its index in that array; release_rx() frees them.
//   - alloc_tx(): rte_pktmbuf_alloc_bulk() fills the TX array; Frame i is mbuf i's data room
//     (capacity = min(tailroom, MTU + 18)). tx_burst() sets the mbufs' lengths, rewrites the
//     Ethernet destination (Neighbours, below) and hands them to rte_eth_tx_burst(); unused
//     ones are kept for the next alloc_tx(), so a poll that sends nothing costs no mbuf
//     traffic. No payload is ever copied.
//   - Zero-copy transmit (gathers(): the port takes chained mbufs, and either IOVA is VA or the
//     device is virtual): a frame whose payload stays in registered memory (Frame::ref) goes
//     out as the header mbuf, an external-buffer mbuf pointing at the payload
//     (rte_pktmbuf_attach_extbuf) and, for RoCEv2, a small mbuf with the pad and ICRC. The
//     payload is readable until the device frees its mbuf (a free callback counts them:
//     references_in_flight(), drain_references() before the memory goes).
//   - Backpressure, as a NIC gives its host: frames the TX ring refuses (after `tx_retries`
//     quick retries) wait in a backlog of 4 bursts and go first next time; while the backlog
//     is non-empty alloc_tx() lends only what it has room for (0 when full), so the engine
//     keeps its packets instead of losing them to a full ring (RoCEv2 has no window and would
//     otherwise go back N on every overflow).
//   - Bounded backpressure: a backlog the device has taken nothing from for `tx_hold` (a dead
//     link, a peer that stopped reading its memif ring) is dropped, freed and counted
//     (tx_stalled), as a NIC drops on a down link: the engine's frames go out again and its
//     retransmission timer and retry budget, not the device, decide when an operation fails.
//     Stuck for over 1 ms, the backlog is offered to the device every 100 us, not spun on.
//   - Accounting: pool_in_use() is the pool's mbufs out of it (every lcore cache counted as
//     free); after drain_tx() and with no burst lent it is pool_posted_at_start() (what the
//     device keeps on its receive rings) unless an mbuf leaked.
//   - Only one RX burst and one TX allocation are out at a time (HostLoop's pattern).
//   - A received chain of mbufs (a frame larger than the pool's data room) is dropped and
//     counted: the pool is sized for MTU-sized frames so this never happens on a sane set-up.
//
// Checksums: RX IPv4/UDP checksum offload is enabled when the port reports it, and frames the
// NIC marks bad are dropped (counted); frames it marks good skip the engine's own check. On TX,
// with DpdkIoConfig::tx_checksum_offload and a port that offers UDP checksum offload, a UDP
// frame whose checksum is 0 is marked for the device (RTE_MBUF_F_TX_UDP_CKSUM, lengths set,
// rte_eth_tx_prepare for the pseudo-header sum); everything else (the IPv4 header checksum,
// RoCEv2's ICRC) is computed by the engines in software.
//
// Neighbours (dpdk_neigh.h), per FEP: the engines write the destination MAC their resolver
// returned; the backend owns the truth. On TX the destination IPv4 address of every frame is
// looked up in the queue's neighbour table (static entries from DpdkIoConfig::neighbours, plus
// ARP-learned ones) and the Ethernet destination rewritten; a miss sends an ARP request from
// the queue's own IP (rate-limited per IP to one per `arp_interval`) and drops the frame
// (stats: tx_no_neighbour) — the engine's retransmission sends it again once the reply is in.
// On RX, ARP requests for the queue's IP are answered in place (the request's mbuf becomes the
// reply, sent on the queue's TX) and every ARP packet addressed to it teaches its sender; ARP
// for another FEP of the port goes to that FEP's inbox. ARP frames are never handed to the
// engine; non-IP frames are dropped. Off-subnet peers (via a router) need a static entry
// mapping the peer IP to the gateway MAC.
//
// Threads: everything here runs on the thread that drives the PacketIo, except DpdkEal::init,
// create() and create_queues(), which run once on the main thread before the data path
// starts, and the destructors, which run after it has stopped.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dpdk-io/dpdk_neigh.h"
#include "dpdk-io/packet_io.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace uet::io {

// Owns the EAL: rte_eal_init() in init(), rte_eal_cleanup() in the destructor. One per process
// (DPDK cannot initialise twice); destroy every DpdkIo before it.
class DpdkEal {
 public:
  // `args` are EAL arguments; args[0] is the program name. For example
  // {"uet-perf", "--no-huge", "-m", "512", "--no-pci", "--vdev=net_memif0,..."}. A memif
  // client on a path socket waits (at most 10 s) for its server's socket file first.
  static absl::StatusOr<std::unique_ptr<DpdkEal>> init(const std::vector<std::string>& args);
  ~DpdkEal();
  DpdkEal(const DpdkEal&) = delete;
  DpdkEal& operator=(const DpdkEal&) = delete;

  uint16_t port_count() const noexcept;
  // EAL lcores (-l / --lcores), the main one included.
  uint32_t lcore_count() const noexcept;
  // Runs fns[0] on the calling (main) lcore and fns[i] on the i-th worker lcore
  // (rte_eal_remote_launch), then waits for all; returns their results in order. Needs
  // fns.size() <= lcore_count() and every worker idle.
  absl::StatusOr<std::vector<int>> run_on_lcores(std::vector<std::function<int()>>& fns) const;
  // "net_memif0 (net_memif)" for each port, for error messages and --help.
  std::string describe_ports() const;

 private:
  DpdkEal() = default;
};

struct Neighbour {
  uint32_t ip4 = 0;  // host byte order
  wire::MacAddr mac{};
};

struct DpdkIoConfig {
  uint16_t port_id = 0;         // an ethdev port of the EAL (0..port_count-1)
  uint32_t local_ip4 = 0;       // answered in ARP; source of ARP requests (required); queue
                                // i's FEP is local_ip4 + i
  uint16_t queues = 1;          // RX/TX queue pairs, 1..64 (and what the device allows):
                                // one DpdkIo (FEP, engine, lcore) each
  wire::MacAddr local_mac{};    // all zero: the port's own MAC; else set on the port
  uint32_t mtu = 9000;          // L3 MTU, 68..9600; frames are at most mtu + 18 bytes
  uint32_t mbufs = 8191;        // mbuf pool size (all queues), 512..1048575 (2^k - 1 is optimal)
  uint32_t mbuf_cache = 256;    // per-lcore mempool cache, 0..512
  uint16_t rx_desc = 1024;      // RX/TX descriptors, 64..16384 (adjusted to the device)
  uint16_t tx_desc = 1024;
  uint32_t tx_retries = 8;      // rte_eth_tx_burst retries when the ring is full, 0..100000
  // A payload sent by reference (Frame::ref) shorter than this is copied into the header
  // mbuf: below it an external-buffer segment (allocation, attach, the free callback) costs
  // more than the copy, and a one-segment frame is cheaper for the device. 0..65535.
  uint32_t reference_from = 512;
  // A backlog the device took nothing from for this long is dropped (DpdkCounters::
  // tx_stalled), 1 us..60 s: above a full ring's drain time and a descheduled reader's pause,
  // short against the engines' retry budgets.
  Time tx_hold = 20 * kMillisecond;
  // The device fills the UDP checksum of every IPv4/IPv6 UDP frame that carries 0, where the
  // port offers UDP TX checksum offload (Offloads::tx_udp_checksum_used says whether it does);
  // the engine then leaves it 0 (UetConfig::udp_checksum false). Frames with a checksum, and
  // every frame when this is false, leave as they are.
  bool tx_checksum_offload = false;
  bool promiscuous = false;     // needed on real NICs when local_mac is not the port's
  std::vector<Neighbour> neighbours;  // static entries (never replaced by ARP)
  uint32_t neighbour_capacity = 256;  // 8..65536
  Time arp_interval = 10 * kMillisecond;  // ARP requests per unresolved IP at most this often

  absl::Status validate() const;
};

// Counters of the DPDK backend beyond IoStats; always on.
struct DpdkCounters {
  uint64_t rx_not_ip = 0;         // neither IPv4, IPv6 nor ARP (dropped)
  uint64_t rx_bad_checksum = 0;   // the NIC marked the IPv4 or L4 checksum bad (dropped)
  uint64_t rx_multi_segment = 0;  // larger than one mbuf (dropped)
  uint64_t rx_checksum_verified = 0;  // the NIC verified both checksums: the engine skips them
  uint64_t arp_rx = 0, arp_requests_answered = 0, arp_requests_sent = 0;
  uint64_t arp_learned = 0, neighbour_table_full = 0;
  uint64_t tx_no_neighbour = 0;   // dropped: destination not resolved yet (ARP sent)
  uint64_t tx_too_big = 0;        // dropped: over the MTU, or payload carried by length only
  uint64_t tx_checksum_offloaded = 0;  // frames whose UDP checksum the device filled in
  uint64_t tx_prepare_refused = 0;     // dropped: rte_eth_tx_prepare refused the frame
  uint64_t tx_referenced = 0;     // frames sent with their payload chained by reference
  uint64_t tx_flattened = 0;      // referenced payloads copied into the frame instead
  uint64_t tx_no_ext_mbuf = 0;    // ... because no small mbuf was left for the chain
  uint64_t tx_ring_full = 0;      // dropped: the ring and the backlog were full
  uint64_t tx_ring_full_waits = 0;  // bursts that left frames in the backlog
  uint64_t tx_stalled = 0;        // dropped: the device took nothing from the backlog for tx_hold
  uint64_t tx_stalls = 0;         // ... how many times that happened
  uint64_t tx_drained = 0;        // dropped: still in the backlog at drain_tx()
  uint64_t rx_redirected = 0;     // frames for another FEP of the port, handed to its queue
  uint64_t rx_redirect_full = 0;  // dropped: that FEP's inbox was full
  uint64_t rx_from_inbox = 0;     // frames another queue handed to this one
};

struct LinkInfo {
  bool up = false;
  uint32_t speed_mbps = 0;
  bool full_duplex = false;
};

struct Offloads {
  bool rx_ipv4_checksum = false, rx_udp_checksum = false;  // used when present
  bool tx_ipv4_checksum = false, tx_udp_checksum = false;  // what the port offers
  bool tx_udp_checksum_used = false;  // DpdkIoConfig::tx_checksum_offload, and offered
};

class DpdkIo final : public PacketIo {
 public:
  // Configures and starts the port with one RX/TX queue pair (config.queues must be 1) and
  // creates its mbuf pool.
  static absl::StatusOr<std::unique_ptr<DpdkIo>> create(const DpdkIoConfig& config);
  // The same with config.queues pairs: element i drives queue i, FEP local_ip4 + i.
  static absl::StatusOr<std::vector<std::unique_ptr<DpdkIo>>> create_queues(
      const DpdkIoConfig& config);
  // Frees the backlog; the last DpdkIo of a port stops and closes it and frees the pool.
  ~DpdkIo() override;

  // PacketIo (data path).
  size_t rx_burst(std::span<Frame*> out) override;
  void release_rx(std::span<Frame* const> frames) override;
  size_t alloc_tx(std::span<Frame*> out) override;
  size_t tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) override;
  IoStats stats() const override { return stats_; }

  // Control path.
  const wire::MacAddr& mac() const noexcept { return mac_; }
  uint16_t queue() const noexcept { return queue_; }
  uint32_t local_ip4() const noexcept { return local_ip4_; }
  // How frames reach their FEP's queue: "single queue", "rte_flow ...", "queue pairing ...",
  // or "software ..." with the PMD's reason for refusing the rules.
  const std::string& steering() const noexcept;
  // The MTU configured on the port: DpdkIoConfig::mtu, or the device's maximum if lower.
  uint32_t mtu() const noexcept { return mtu_; }
  // Bytes a frame may hold: mtu() + 18; on shared-memory devices (net_memif, net_ring,
  // net_null), which report a 1518-byte maximum but carry any size, DpdkIoConfig::mtu + 18.
  uint32_t max_frame() const noexcept { return max_frame_; }
  LinkInfo link() const;
  // Polls the link until it is up or `timeout` has passed; returns whether it is up.
  bool wait_link_up(Time timeout) const;
  // For the end of a run whose peer has closed its side, on net_memif (whose link is the
  // peer's connection; elsewhere it returns false at once): polls until the link is down or
  // `timeout` has passed, then waits for the EAL's interrupt thread to finish what it is
  // doing, so that the port's own teardown does not run beside the PMD's disconnect. Call it
  // with the data path stopped. Returns whether the link went down.
  bool wait_peer_gone(Time timeout) const;
  // Frees the frames still waiting in the backlog (counted: tx_drained); for the end of a
  // run, so that pool_in_use() shows leaks only.
  void drain_tx();
  // The pool's mbufs (all queues), and how many are out of it now (rte_mempool_in_use_count).
  uint32_t pool_size() const noexcept;
  uint32_t pool_in_use() const noexcept;
  // What was out of the pool right after the port started: the mbufs a device posts on its
  // receive rings (a NIC, tap; not memif or af_packet) and keeps posted while it runs.
  uint32_t pool_posted_at_start() const noexcept;
  const Offloads& offloads() const noexcept { return offloads_; }
  std::string driver_name() const;
  // Every extended statistic of the port (name, value).
  std::vector<std::pair<std::string, uint64_t>> xstats() const;
  const DpdkCounters& counters() const noexcept { return counters_; }
  // Zero-copy transmit: whether the port takes frames that reference their payload (Frame::ref;
  // set the engine's tx_by_reference from this), how many such payloads the device still
  // holds, and a wait until it holds none (before the memory is deregistered or freed).
  bool gathers() const noexcept { return ext_pool_ != nullptr; }
  uint64_t references_in_flight() const noexcept {
    return references_ != nullptr ? *references_ : 0;
  }
  bool drain_references(Time timeout);

  // Neighbours: look-up, and an ARP request for `ip4` sent now (the answer arrives through
  // rx_burst(), so keep polling).
  const wire::MacAddr* neighbour(uint32_t ip4) const noexcept { return neigh_.find(ip4); }
  void solicit(uint32_t ip4);

 private:
  struct Port;  // the port-wide state and its set-up (dpdk_internal.h), shared by the queues

  DpdkIo(const DpdkIoConfig& config, std::shared_ptr<Port> port, uint16_t queue);
  void handle_arp(rte_mbuf* m);  // consumes m
  bool redirect(uint32_t ip4, rte_mbuf* m);  // to another FEP's inbox; consumes m if true
  void on_miss(uint32_t ip4);
  void send_control(rte_mbuf* m);  // one frame, outside the TX burst; consumes m
  void flush_backlog();
  bool chain_reference(rte_mbuf* m, Frame& f);

  DpdkIoConfig config_;
  std::shared_ptr<Port> port_;
  rte_mempool* pool_ = nullptr;   // port_'s
  uint16_t queue_ = 0;
  uint32_t local_ip4_ = 0;        // config_.local_ip4 + queue_
  uint16_t fep_count_ = 1;        // config_.queues
  rte_ring* inbox_ = nullptr;     // frames other queues received for this FEP (queues > 1)
  wire::MacAddr mac_{};
  uint32_t mtu_ = 0;
  uint32_t max_frame_ = 0;
  Offloads offloads_;
  rte_mempool* ext_pool_ = nullptr;  // port_'s; null when the port cannot gather
  uint64_t* references_ = nullptr;   // port_'s count for this queue
  bool iova_is_va_ = false;          // the EAL's mode, read once: extbuf addresses are VAs
  NeighbourTable neigh_;
  // Unresolved IPs and when an ARP request last went out for each (a small ring).
  struct Pending {
    uint32_t ip4 = 0;
    Time sent = 0;
  };
  std::array<Pending, 16> pending_{};
  uint32_t pending_next_ = 0;

  // The fixed burst arrays: Frame i <-> mbuf i.
  std::array<rte_mbuf*, kMaxBurst> rx_mbufs_{};
  std::array<Frame, kMaxBurst> rx_frames_{};
  // Transmit mbufs kept between bursts, a ring: slots tx_slot(0 .. tx_held_) hold allocated
  // mbufs, each Frame pointing into its own; the first tx_lent_ are lent to the engine now.
  // What the engine leaves unused stays in its slot, so an idle poll moves nothing.
  static constexpr size_t kTxSlots = kMaxBurst;
  static_assert((kTxSlots & (kTxSlots - 1)) == 0, "a power of two: slots by mask");
  size_t tx_slot(size_t i) const noexcept { return (tx_head_ + i) & (kTxSlots - 1); }
  void top_up_tx(size_t want);
  static void reset_tx_frame(Frame& f) noexcept;
  bool offload_udp_checksum(rte_mbuf* m, const Frame& f) noexcept;
  uint16_t prepare_tx(std::array<rte_mbuf*, kMaxBurst>& send, std::array<uint32_t, kMaxBurst>& lens,
                      uint16_t k);
  void regroup_tx(std::span<Frame* const> unused);
  void free_held_tx();
  std::array<rte_mbuf*, kTxSlots> tx_mbufs_{};
  std::array<Frame, kTxSlots> tx_frames_{};
  size_t tx_head_ = 0;
  size_t tx_held_ = 0;
  size_t tx_lent_ = 0;
  std::array<rte_mbuf*, kMaxBurst> scratch_{};
  // Frames the ring refused, oldest first: [backlog_head_, backlog_head_ + backlog_len_).
  std::array<rte_mbuf*, 4 * kMaxBurst> backlog_{};
  std::array<uint32_t, 4 * kMaxBurst> backlog_lens_{};
  size_t backlog_head_ = 0, backlog_len_ = 0;
  Time backlog_stuck_since_ = -1;  // when the device last took nothing (-1: it took some)
  Time backlog_tried_ = 0;         // when a stuck backlog was last offered to the device

  IoStats stats_;
  DpdkCounters counters_;
};

}  // namespace uet::io
