#include "dpdk-io/dpdk_io.h"

#include <unistd.h>

#include <rte_alarm.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_ring.h>
#include <rte_bus.h>
#include <rte_dev.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace uet::io {
namespace {

std::atomic<bool> g_eal_up{false};

absl::Status dpdk_error(const std::string& what, int err) {
  return absl::InternalError(absl::StrCat(what, ": ", std::string(rte_strerror(err < 0 ? -err : err))));
}

absl::Status range(const char* field, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v >= lo && v <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("DpdkIoConfig.", std::string(field), "=", v, " out of range: ", lo, "..", hi));
}

uint32_t frame_bytes(uint32_t mtu) { return mtu + 18; }  // Ethernet + one 802.1Q tag

int call_function(void* arg) { return (*static_cast<std::function<int()>*>(arg))(); }

constexpr unsigned kInboxSize = 1024;  // frames waiting for another queue's FEP, per queue
// A backlog the device has taken nothing from for kStuckAfter is offered to it once per
// kStuckPoll only (a ring that drains takes frames within microseconds).
constexpr Time kStuckAfter = kMillisecond;
constexpr Time kStuckPoll = 100 * kMicrosecond;

// Bytes a small mbuf of the zero-copy pool holds after a referenced payload; longer tails are
// gathered into the frame instead.
constexpr uint32_t kExtTailRoom = 64;

// A device freed the mbuf of a referenced payload: the registered memory is no longer read.
void on_reference_freed(void* /*addr*/, void* count) { --*static_cast<uint64_t*>(count); }

void on_alarm(void* done) { static_cast<std::atomic<bool>*>(done)->store(true); }

// Waits until the EAL's interrupt thread has finished the handler it is running: an alarm's
// callback runs on that thread, after it (bounded: a thread that never gets there is given up
// on after a second).
void settle_interrupt_thread() {
  std::atomic<bool> done{false};
  if (rte_eal_alarm_set(1, on_alarm, &done) != 0) return;
  for (int i = 0; i < 1000 && !done.load(); ++i) rte_delay_us_sleep(1000);
  if (!done.load()) (void)rte_eal_alarm_cancel(on_alarm, &done);
}

}  // namespace

// The port-wide state, shared by the port's queues (read-only once started, but for the pool
// and the inbox rings, which are DPDK's lock-free structures).
struct DpdkIo::Port {
  uint16_t port_id = 0;
  rte_mempool* pool = nullptr;
  bool started = false;
  std::vector<rte_ring*> inbox;  // per queue, when there is more than one
  std::vector<rte_flow*> flows;
  std::string steering = "single queue";
  wire::MacAddr mac{};
  uint32_t mtu = 0, max_frame = 0;
  Offloads offloads;
  uint32_t rx_posted = 0;  // mbufs the device holds for receiving from its start (NICs, tap)
  // Zero-copy transmit: small mbufs that carry a referenced payload (as an external buffer,
  // its shared info in their private area) or the bytes after it; null when the port cannot
  // gather. Per queue, the referenced payloads a device still holds (the free callback runs
  // on whatever frees the mbuf, so the counts live here, past every DpdkIo).
  rte_mempool* ext_pool = nullptr;
  std::unique_ptr<uint64_t[]> references;

  ~Port() {
    if (!flows.empty()) {
      rte_flow_error err{};
      (void)rte_flow_flush(port_id, &err);
    }
    if (started) {
      // A link that went down is being (or was) torn down by the interrupt thread (memif
      // frees its regions there): the stop below must not run beside it.
      rte_eth_link l{};
      if (rte_eth_link_get_nowait(port_id, &l) == 0 && l.link_status == RTE_ETH_LINK_DOWN)
        settle_interrupt_thread();
      (void)rte_eth_dev_stop(port_id);
      (void)rte_eth_dev_close(port_id);
    }
    for (rte_ring* r : inbox) {
      void* m = nullptr;
      while (rte_ring_dequeue(r, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
      rte_ring_free(r);
    }
    if (pool != nullptr) rte_mempool_free(pool);
    if (ext_pool != nullptr) rte_mempool_free(ext_pool);
  }
};

// ---------------------------------------------------------------------------------------------
// EAL

namespace {

// A memif client connects to its server's socket when the port starts and, in DPDK 22.11, does
// not try again if the socket is not there yet: when both ends start together (mpirun, a
// script), the client waits for the server's socket file first (at most 10 s).
void wait_for_memif_servers(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a.find("net_memif") == std::string::npos || a.find("role=client") == std::string::npos ||
        a.find("socket-abstract=no") == std::string::npos) {
      continue;
    }
    const size_t at = a.find("socket=");
    if (at == std::string::npos) continue;
    const std::string path = a.substr(at + 7, a.find(',', at) - (at + 7));
    for (int i = 0; i < 1000 && access(path.c_str(), F_OK) != 0; ++i) usleep(10'000);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<DpdkEal>> DpdkEal::init(const std::vector<std::string>& args) {
  if (args.empty()) return absl::InvalidArgumentError("DpdkEal::init: args[0] must be set");
  wait_for_memif_servers(args);
  if (g_eal_up.exchange(true)) {
    return absl::FailedPreconditionError("DpdkEal::init: the EAL is already up in this process");
  }
  // rte_eal_init may permute argv and keeps pointers into it: keep the strings for ever.
  static std::vector<std::string> kept;
  static std::vector<char*> argv;
  kept = args;
  argv.clear();
  for (std::string& s : kept) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int ret = rte_eal_init(static_cast<int>(kept.size()), argv.data());
  if (ret < 0) {
    g_eal_up = false;
    return dpdk_error("rte_eal_init (check the EAL arguments after --)", rte_errno);
  }
  return std::unique_ptr<DpdkEal>(new DpdkEal());
}

DpdkEal::~DpdkEal() {
  rte_eal_cleanup();
  g_eal_up = false;
}

uint16_t DpdkEal::port_count() const noexcept { return rte_eth_dev_count_avail(); }

uint32_t DpdkEal::lcore_count() const noexcept { return rte_lcore_count(); }

absl::StatusOr<std::vector<int>> DpdkEal::run_on_lcores(
    std::vector<std::function<int()>>& fns) const {
  std::vector<int> results(fns.size(), 0);
  if (fns.empty()) return results;
  if (fns.size() > rte_lcore_count()) {
    return absl::InvalidArgumentError(absl::StrCat(fns.size(), " functions need as many EAL lcores; the EAL has ",
                                                   rte_lcore_count(), " (give -l 0-", fns.size() - 1,
                                                   " or --lcores after --)"));
  }
  std::vector<unsigned> launched;
  unsigned lcore = 0;
  absl::Status status;
  RTE_LCORE_FOREACH_WORKER(lcore) {
    if (launched.size() + 1 >= fns.size()) break;
    if (int r = rte_eal_remote_launch(&call_function, &fns[launched.size() + 1], lcore); r != 0) {
      status = dpdk_error(absl::StrCat("rte_eal_remote_launch(lcore ", lcore, ")"), r);
      break;
    }
    launched.push_back(lcore);
  }
  if (status.ok()) results[0] = fns[0]();
  for (size_t i = 0; i < launched.size(); ++i) results[i + 1] = rte_eal_wait_lcore(launched[i]);
  if (!status.ok()) return status;
  return results;
}

std::string DpdkEal::describe_ports() const {
  std::string out;
  for (uint16_t port = 0; port < RTE_MAX_ETHPORTS; ++port) {
    if (!rte_eth_dev_is_valid_port(port)) continue;
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port, name);
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(port, &info);
    absl::StrAppend(&out, out.empty() ? "" : ", ", port, ": ", std::string(name), " (",
                    std::string(info.driver_name != nullptr ? info.driver_name : "?"), ")");
  }
  return out.empty() ? std::string("none") : out;
}

// ---------------------------------------------------------------------------------------------
// Control path

absl::Status DpdkIoConfig::validate() const {
  if (local_ip4 == 0) return absl::InvalidArgumentError("DpdkIoConfig.local_ip4 must be set");
  if (auto s = range("queues", queues, 1, 64); !s.ok()) return s;
  if (uint64_t{local_ip4} + queues - 1 > UINT32_MAX) {
    return absl::InvalidArgumentError("DpdkIoConfig.local_ip4 + queues - 1 overflows IPv4");
  }
  if (auto s = range("mtu", mtu, 68, 9600); !s.ok()) return s;
  if (auto s = range("mbufs", mbufs, 512, 1048575); !s.ok()) return s;
  if (auto s = range("mbuf_cache", mbuf_cache, 0, 512); !s.ok()) return s;
  if (auto s = range("rx_desc", rx_desc, 64, 16384); !s.ok()) return s;
  if (auto s = range("tx_desc", tx_desc, 64, 16384); !s.ok()) return s;
  if (auto s = range("tx_retries", tx_retries, 0, 100000); !s.ok()) return s;
  if (auto s = range("reference_from", reference_from, 0, 65535); !s.ok()) return s;
  if (auto s = range("neighbour_capacity", neighbour_capacity, 8, 65536); !s.ok()) return s;
  if (neighbours.size() > neighbour_capacity / 2) {
    return absl::InvalidArgumentError(absl::StrCat("DpdkIoConfig.neighbours: ", neighbours.size(),
                                                   " entries, at most neighbour_capacity/2"));
  }
  if (arp_interval <= 0) return absl::InvalidArgumentError("DpdkIoConfig.arp_interval must be > 0");
  if (tx_hold < kMicrosecond || tx_hold > 60 * kSecond) {
    return absl::InvalidArgumentError(absl::StrCat("DpdkIoConfig.tx_hold=", tx_hold,
                                                   " ps out of range: 1 us..60 s"));
  }
  return absl::OkStatus();
}

DpdkIo::DpdkIo(const DpdkIoConfig& config, std::shared_ptr<Port> port, uint16_t queue)
    : config_(config),
      port_(std::move(port)),
      pool_(port_->pool),
      queue_(queue),
      local_ip4_(config.local_ip4 + queue),
      fep_count_(config.queues),
      inbox_(port_->inbox.empty() ? nullptr : port_->inbox[queue]),
      mac_(port_->mac),
      mtu_(port_->mtu),
      max_frame_(port_->max_frame),
      offloads_(port_->offloads),
      ext_pool_(port_->ext_pool),
      references_(port_->references ? &port_->references[queue] : nullptr),
      iova_is_va_(rte_eal_iova_mode() == RTE_IOVA_VA),
      neigh_(config.neighbour_capacity) {
  for (const Neighbour& n : config_.neighbours) neigh_.set(n.ip4, n.mac, /*is_static=*/true);
}

absl::StatusOr<std::unique_ptr<DpdkIo>> DpdkIo::create(const DpdkIoConfig& config) {
  if (config.queues != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DpdkIo::create: DpdkIoConfig.queues=", config.queues, "; use create_queues() for more than 1"));
  }
  auto qs = create_queues(config);
  if (!qs.ok()) return qs.status();
  return std::move((*qs)[0]);
}

absl::StatusOr<std::vector<std::unique_ptr<DpdkIo>>> DpdkIo::create_queues(
    const DpdkIoConfig& config) {
  if (auto s = config.validate(); !s.ok()) return s;
  if (!g_eal_up) return absl::FailedPreconditionError("DpdkIo::create: call DpdkEal::init first");
  if (!rte_eth_dev_is_valid_port(config.port_id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("DPDK port ", config.port_id, " does not exist (", rte_eth_dev_count_avail(),
                     " ports; give a --vdev=... or a NIC in the EAL arguments)"));
  }
  auto port = std::make_shared<Port>();
  port->port_id = config.port_id;
  if (auto s = start_port(config, *port); !s.ok()) return s;  // ~Port undoes what was done
  std::vector<std::unique_ptr<DpdkIo>> out;
  for (uint16_t q = 0; q < config.queues; ++q) out.emplace_back(new DpdkIo(config, port, q));
  return out;
}

const std::string& DpdkIo::steering() const noexcept { return port_->steering; }

absl::Status DpdkIo::start_port(const DpdkIoConfig& config, Port& p) {
  const uint16_t port = config.port_id;
  const uint16_t queues = config.queues;
  rte_eth_dev_info info{};
  if (int r = rte_eth_dev_info_get(port, &info); r != 0) return dpdk_error("rte_eth_dev_info_get", r);
  const std::string driver = info.driver_name != nullptr ? info.driver_name : "";
  if (queues > info.max_rx_queues || queues > info.max_tx_queues) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DpdkIoConfig.queues=", queues, " out of range for port ", port, " (", driver, "): 1..",
        std::min(info.max_rx_queues, info.max_tx_queues)));
  }

  // MTU: what was asked for, within what the device allows (ethdev's own rule: the frame is
  // the MTU plus the overhead, at most max_rx_pktlen).
  const uint32_t overhead =
      info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu
          ? info.max_rx_pktlen - info.max_mtu
          : RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  uint32_t mtu = config.mtu;
  if (info.max_mtu != 0 && mtu > info.max_mtu) mtu = info.max_mtu;
  if (info.max_rx_pktlen > overhead && mtu + overhead > info.max_rx_pktlen)
    mtu = info.max_rx_pktlen - overhead;
  if (info.min_mtu != 0 && mtu < info.min_mtu) mtu = info.min_mtu;
  p.mtu = mtu;
  // Shared-memory devices report a 1518-byte maximum but move frames of any size (memif
  // chains its 2 KiB buffers; ring and null pass mbufs): there the asked-for MTU holds. They
  // also pair queues: what the peer sends on its queue i arrives on our queue i.
  const bool shared_memory = driver == "net_memif" || driver == "net_ring" || driver == "net_null";
  p.max_frame = frame_bytes(shared_memory ? config.mtu : mtu);

  int socket = rte_eth_dev_socket_id(port);
  if (socket < 0) socket = static_cast<int>(rte_socket_id());
  const uint32_t room = std::max<uint32_t>(p.max_frame, 2048) + RTE_PKTMBUF_HEADROOM;
  const std::string pool_name = absl::StrCat("uet_pool_p", port);
  p.pool = rte_pktmbuf_pool_create(pool_name.c_str(), config.mbufs, config.mbuf_cache, 0,
                                   static_cast<uint16_t>(room), socket);
  if (p.pool == nullptr) {
    return dpdk_error(absl::StrCat("rte_pktmbuf_pool_create(", config.mbufs, " mbufs of ", room,
                                   " bytes; lower --mbufs or raise EAL -m)"),
                      rte_errno);
  }
  // Zero-copy transmit needs a device that takes chained mbufs, and addresses it can use: any
  // with IOVA as VA, or a virtual device (memif, af_packet), which copies by CPU.
  const bool virtual_device =
      info.device != nullptr && std::string(rte_bus_name(rte_dev_bus(info.device))) == "vdev";
  if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0 &&
      (rte_eal_iova_mode() == RTE_IOVA_VA || virtual_device)) {
    // Two per frame (payload, then pad and ICRC) for every descriptor and backlog slot.
    const auto n = static_cast<uint32_t>(2u * queues * (config.tx_desc + 6 * kMaxBurst));
    const std::string name = absl::StrCat("uet_ext_p", port);
    p.ext_pool = rte_pktmbuf_pool_create(
        name.c_str(), n, std::min<uint32_t>(config.mbuf_cache, n / 4),
        RTE_ALIGN(sizeof(rte_mbuf_ext_shared_info), RTE_MBUF_PRIV_ALIGN),
        RTE_PKTMBUF_HEADROOM + kExtTailRoom, socket);
    if (p.ext_pool == nullptr) {
      return dpdk_error(absl::StrCat("rte_pktmbuf_pool_create(", n, " small mbufs for "
                                     "zero-copy transmit; raise EAL -m)"),
                        rte_errno);
    }
    p.references = std::make_unique<uint64_t[]>(queues);
  }
  if (queues > 1) {
    for (uint16_t q = 0; q < queues; ++q) {
      const std::string name = absl::StrCat("uet_inbox_p", port, "_q", q);
      rte_ring* r = rte_ring_create(name.c_str(), kInboxSize, socket, RING_F_SC_DEQ);
      if (r == nullptr) return dpdk_error(absl::StrCat("rte_ring_create(", name, ")"), rte_errno);
      p.inbox.push_back(r);
    }
  }

  rte_eth_conf conf{};
  conf.rxmode.mtu = mtu;
  if (p.ext_pool != nullptr) conf.txmode.offloads = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  const uint64_t rx_csum = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
  conf.rxmode.offloads = info.rx_offload_capa & rx_csum;
  // RSS spreads what the rte_flow rules do not steer (or everything, when the PMD refuses
  // them); the inboxes take each frame to its FEP's queue.
  const uint64_t rss = info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
  if (queues > 1 && rss != 0) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = rss;
  }
  p.offloads.rx_ipv4_checksum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) != 0;
  p.offloads.rx_udp_checksum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM) != 0;
  p.offloads.tx_ipv4_checksum = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
  p.offloads.tx_udp_checksum = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
  p.offloads.tx_udp_checksum_used = config.tx_checksum_offload && p.offloads.tx_udp_checksum;
  if (p.offloads.tx_udp_checksum_used) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
  if (int r = rte_eth_dev_configure(port, queues, queues, &conf); r != 0) {
    return dpdk_error(absl::StrCat("rte_eth_dev_configure(port ", port, ", ", queues,
                                   " queues, mtu ", mtu, ")"),
                      r);
  }
  uint16_t rxd = config.rx_desc, txd = config.tx_desc;
  if (int r = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd); r != 0)
    return dpdk_error("rte_eth_dev_adjust_nb_rx_tx_desc", r);
  rte_eth_rxconf rxconf = info.default_rxconf;
  rxconf.offloads = conf.rxmode.offloads;
  rte_eth_txconf txconf = info.default_txconf;
  txconf.offloads = conf.txmode.offloads;
  for (uint16_t q = 0; q < queues; ++q) {
    if (int r = rte_eth_rx_queue_setup(port, q, rxd, static_cast<unsigned>(socket), &rxconf, p.pool);
        r != 0)
      return dpdk_error(absl::StrCat("rte_eth_rx_queue_setup(queue ", q, ")"), r);
    if (int r = rte_eth_tx_queue_setup(port, q, txd, static_cast<unsigned>(socket), &txconf); r != 0)
      return dpdk_error(absl::StrCat("rte_eth_tx_queue_setup(queue ", q, ")"), r);
  }

  if (config.local_mac != wire::MacAddr{}) {
    rte_ether_addr addr;
    std::memcpy(addr.addr_bytes, config.local_mac.data(), 6);
    // Virtual devices may refuse; then promiscuous mode (if asked) still lets frames in.
    (void)rte_eth_dev_default_mac_addr_set(port, &addr);
    p.mac = config.local_mac;
  } else {
    rte_ether_addr addr{};
    if (int r = rte_eth_macaddr_get(port, &addr); r != 0) return dpdk_error("rte_eth_macaddr_get", r);
    std::memcpy(p.mac.data(), addr.addr_bytes, 6);
  }

  if (int r = rte_eth_dev_start(port); r != 0) return dpdk_error("rte_eth_dev_start", r);
  p.rx_posted = rte_mempool_in_use_count(p.pool);
  p.started = true;
  if (config.promiscuous) (void)rte_eth_promiscuous_enable(port);

  if (queues > 1) {
    const std::string fep_range =
        absl::StrFormat("%u.%u.%u.%u + 0..%u", config.local_ip4 >> 24, (config.local_ip4 >> 16) & 255,
                        (config.local_ip4 >> 8) & 255, config.local_ip4 & 255, queues - 1);
    if (shared_memory) {
      p.steering = absl::StrCat("queue pairing (", driver, ": peer queue i -> queue i; FEP ",
                                fep_range, "), software inboxes for strays");
    } else if (std::string why = add_flow_rules(p, config.local_ip4, queues); why.empty()) {
      p.steering = absl::StrCat("rte_flow: ", queues, " rules IPv4 dst ", fep_range, " -> queue i");
    } else {
      p.steering = absl::StrCat("software: ", driver, " refused rte_flow rules (", why, "); ",
                                rss != 0 ? "RSS" : "queue 0",
                                " receives, each queue hands other FEPs' frames to their inbox");
    }
  }
  return absl::OkStatus();
}

// One rule per queue: ETH / IPV4 dst == base + q -> QUEUE q. Returns "" or why the PMD
// refused (then no rule is left in place).
std::string DpdkIo::add_flow_rules(Port& p, uint32_t base_ip4, uint16_t queues) {
  for (uint16_t q = 0; q < queues; ++q) {
    rte_flow_attr attr{};
    attr.ingress = 1;
    rte_flow_item_ipv4 spec{}, mask{};
    spec.hdr.dst_addr = rte_cpu_to_be_32(base_ip4 + q);
    mask.hdr.dst_addr = rte_cpu_to_be_32(0xFFFFFFFFu);
    std::array<rte_flow_item, 3> pattern{};
    pattern[0].type = RTE_FLOW_ITEM_TYPE_ETH;
    pattern[1].type = RTE_FLOW_ITEM_TYPE_IPV4;
    pattern[1].spec = &spec;
    pattern[1].mask = &mask;
    pattern[2].type = RTE_FLOW_ITEM_TYPE_END;
    rte_flow_action_queue to_queue{};
    to_queue.index = q;
    std::array<rte_flow_action, 2> actions{};
    actions[0].type = RTE_FLOW_ACTION_TYPE_QUEUE;
    actions[0].conf = &to_queue;
    actions[1].type = RTE_FLOW_ACTION_TYPE_END;
    rte_flow_error err{};
    rte_flow* f = rte_flow_create(p.port_id, &attr, pattern.data(), actions.data(), &err);
    if (f == nullptr) {
      std::string why = err.message != nullptr ? std::string(err.message)
                                               : std::string(rte_strerror(rte_errno));
      rte_flow_error ignored{};
      if (!p.flows.empty()) (void)rte_flow_flush(p.port_id, &ignored);
      p.flows.clear();
      return why.empty() ? std::string("no reason given") : why;
    }
    p.flows.push_back(f);
  }
  return "";
}

DpdkIo::~DpdkIo() {
  free_held_tx();
  if (backlog_len_ > 0) {
    rte_pktmbuf_free_bulk(backlog_.data() + backlog_head_, static_cast<unsigned>(backlog_len_));
  }
  // port_ (the port, its rings and pool) goes with the last queue.
}

void DpdkIo::drain_tx() {
  // The mbufs kept between bursts go back too: nothing of this queue's is out after this.
  free_held_tx();
  if (backlog_len_ > 0) {
    rte_pktmbuf_free_bulk(backlog_.data() + backlog_head_, static_cast<unsigned>(backlog_len_));
    counters_.tx_drained += backlog_len_;
    stats_.tx_dropped += backlog_len_;
  }
  backlog_head_ = backlog_len_ = 0;
  backlog_stuck_since_ = -1;
}

uint32_t DpdkIo::pool_size() const noexcept { return pool_->size; }

uint32_t DpdkIo::pool_in_use() const noexcept { return rte_mempool_in_use_count(pool_); }
uint32_t DpdkIo::pool_posted_at_start() const noexcept { return port_->rx_posted; }

LinkInfo DpdkIo::link() const {
  rte_eth_link l{};
  if (rte_eth_link_get_nowait(config_.port_id, &l) != 0) return {};
  return {l.link_status == RTE_ETH_LINK_UP, l.link_speed,
          l.link_duplex == RTE_ETH_LINK_FULL_DUPLEX};
}

bool DpdkIo::wait_peer_gone(Time timeout) const {
  if (driver_name() != "net_memif") return false;  // other links outlive the peer
  const Time give_up = monotonic_now() + timeout;
  while (link().up) {
    if (monotonic_now() >= give_up) return false;
    rte_delay_us_sleep(1000);
  }
  settle_interrupt_thread();
  return true;
}

bool DpdkIo::wait_link_up(Time timeout) const {
  const Time give_up = monotonic_now() + timeout;
  while (!link().up) {
    if (monotonic_now() >= give_up) return false;
    rte_delay_us_sleep(1000);
  }
  return true;
}

std::string DpdkIo::driver_name() const {
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(config_.port_id, &info) != 0 || info.driver_name == nullptr) return "?";
  return info.driver_name;
}

std::vector<std::pair<std::string, uint64_t>> DpdkIo::xstats() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  const int n = rte_eth_xstats_get_names(config_.port_id, nullptr, 0);
  if (n <= 0) return out;
  std::vector<rte_eth_xstat_name> names(static_cast<size_t>(n));
  std::vector<rte_eth_xstat> values(static_cast<size_t>(n));
  if (rte_eth_xstats_get_names(config_.port_id, names.data(), static_cast<unsigned>(n)) != n)
    return out;
  const int got = rte_eth_xstats_get(config_.port_id, values.data(), static_cast<unsigned>(n));
  for (int i = 0; i < got && i < n; ++i) {
    const rte_eth_xstat& x = values[static_cast<size_t>(i)];
    if (x.id < names.size()) out.emplace_back(names[x.id].name, x.value);
  }
  return out;
}

void DpdkIo::solicit(uint32_t ip4) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) {
    ++stats_.tx_no_buffer;
    return;
  }
  uint8_t* p = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t len = build_arp({p, rte_pktmbuf_tailroom(m)}, kArpRequest, mac_, local_ip4_,
                               kBroadcastMac, ip4);
  m->data_len = static_cast<uint16_t>(len);
  m->pkt_len = static_cast<uint32_t>(len);
  ++counters_.arp_requests_sent;
  send_control(m);
}

// ---------------------------------------------------------------------------------------------
// Data path

void DpdkIo::send_control(rte_mbuf* m) {
  const uint32_t len = m->pkt_len;  // the driver may free m as soon as it has it
  for (uint32_t attempt = 0; attempt <= config_.tx_retries; ++attempt) {
    if (rte_eth_tx_burst(config_.port_id, queue_, &m, 1) == 1) {
      ++stats_.tx_packets;
      stats_.tx_bytes += len;
      return;
    }
    rte_pause();
  }
  ++stats_.tx_dropped;
  ++counters_.tx_ring_full;
  rte_pktmbuf_free(m);
}

void DpdkIo::handle_arp(rte_mbuf* m) {
  ++counters_.arp_rx;
  uint8_t* p = rte_pktmbuf_mtod(m, uint8_t*);
  const auto arp = parse_arp({p, m->data_len});
  if (!arp || arp->tpa != local_ip4_) {
    if (!arp || !redirect(arp->tpa, m)) rte_pktmbuf_free(m);
    return;
  }
  // RFC 826: the target learns the sender (requests and replies alike).
  if (arp->spa != 0) {
    if (neigh_.set(arp->spa, arp->sha, /*is_static=*/false)) {
      ++counters_.arp_learned;
    } else {
      ++counters_.neighbour_table_full;
    }
  }
  if (arp->op != kArpRequest) {
    rte_pktmbuf_free(m);
    return;
  }
  // Answer in place: the request's mbuf becomes the reply.
  const size_t len = build_arp({p, static_cast<size_t>(m->data_len) + rte_pktmbuf_tailroom(m)},
                               kArpReply, mac_, local_ip4_, arp->sha, arp->spa);
  if (len == 0) {
    rte_pktmbuf_free(m);
    return;
  }
  m->data_len = static_cast<uint16_t>(len);
  m->pkt_len = static_cast<uint32_t>(len);
  m->ol_flags = 0;
  ++counters_.arp_requests_answered;
  send_control(m);
}

bool DpdkIo::redirect(uint32_t ip4, rte_mbuf* m) {
  const uint32_t fep = ip4 - config_.local_ip4;  // wraps for addresses below the base
  if (inbox_ == nullptr || fep >= fep_count_ || fep == queue_) return false;
  if (rte_ring_mp_enqueue(port_->inbox[fep], m) != 0) {
    ++counters_.rx_redirect_full;
    ++stats_.rx_dropped;
    rte_pktmbuf_free(m);
    return true;
  }
  ++counters_.rx_redirected;
  return true;
}

size_t DpdkIo::rx_burst(std::span<Frame*> out) {
  const auto want = static_cast<uint16_t>(std::min(out.size(), kMaxBurst));
  uint16_t n = 0;
  if (inbox_ != nullptr) {
    n = static_cast<uint16_t>(rte_ring_sc_dequeue_burst(
        inbox_, reinterpret_cast<void**>(scratch_.data()), want, nullptr));
    counters_.rx_from_inbox += n;
  }
  if (n < want) {
    n = static_cast<uint16_t>(
        n + rte_eth_rx_burst(config_.port_id, queue_, scratch_.data() + n,
                             static_cast<uint16_t>(want - n)));
  }
  size_t k = 0;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = scratch_[i];
    if (m->nb_segs != 1) {
      ++counters_.rx_multi_segment;
      ++stats_.rx_dropped;
      rte_pktmbuf_free(m);
      continue;
    }
    if ((m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK)) != 0 &&
        ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
         (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_BAD)) {
      ++counters_.rx_bad_checksum;
      ++stats_.rx_dropped;
      rte_pktmbuf_free(m);
      continue;
    }
    uint8_t* p = rte_pktmbuf_mtod(m, uint8_t*);
    const uint16_t type = ether_type({p, m->data_len});
    if (type == kEtherTypeArp) {
      handle_arp(m);
      continue;
    }
    if (type != kEtherTypeIpv4 && type != kEtherTypeIpv6) {
      ++counters_.rx_not_ip;
      ++stats_.rx_dropped;
      rte_pktmbuf_free(m);
      continue;
    }
    if (inbox_ != nullptr) {  // several FEPs on this port: another one's frame goes to it
      const auto dst = ipv4_destination({p, m->data_len});
      if (dst && *dst != local_ip4_ && redirect(*dst, m)) continue;
    }
    Frame& f = rx_frames_[k];
    f.data = p;
    f.len = m->data_len;
    f.wire_len = 0;
    f.capacity = m->data_len;
    f.priority = Priority::kData;
    // The NIC verified both checksums (RX offload): the engine need not.
    f.checksums_ok =
        (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
        (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD;
    counters_.rx_checksum_verified += f.checksums_ok ? 1 : 0;
    rx_mbufs_[k] = m;
    out[k] = &f;
    ++k;
    ++stats_.rx_packets;
    stats_.rx_bytes += m->data_len;
  }
  return k;
}

void DpdkIo::release_rx(std::span<Frame* const> frames) {
  size_t n = 0;
  for (Frame* f : frames) scratch_[n++] = rx_mbufs_[static_cast<size_t>(f - rx_frames_.data())];
  rte_pktmbuf_free_bulk(scratch_.data(), static_cast<unsigned>(n));
}

void DpdkIo::flush_backlog() {
  while (backlog_len_ > 0) {
    // A device stuck for a while is polled, not spun on: a peer that stopped or died leaves
    // this thread mostly outside the PMD (memif unmaps its rings under a running TX burst).
    if (backlog_stuck_since_ >= 0) {
      const Time now = monotonic_now();
      if (now - backlog_stuck_since_ >= kStuckAfter && now - backlog_tried_ < kStuckPoll) return;
      backlog_tried_ = now;
    }
    const uint16_t n = rte_eth_tx_burst(config_.port_id, queue_, backlog_.data() + backlog_head_,
                                        static_cast<uint16_t>(backlog_len_));
    if (n == 0) {
      // Nothing taken: hold the frames for tx_hold at most, then drop them as a NIC does on a
      // down link, so the engine's retransmissions, not the device, decide an operation's fate.
      const Time now = monotonic_now();
      if (backlog_stuck_since_ < 0) backlog_stuck_since_ = now;
      if (now - backlog_stuck_since_ < config_.tx_hold) return;
      rte_pktmbuf_free_bulk(backlog_.data() + backlog_head_, static_cast<unsigned>(backlog_len_));
      counters_.tx_stalled += backlog_len_;
      ++counters_.tx_stalls;
      stats_.tx_dropped += backlog_len_;
      backlog_len_ = 0;
      break;
    }
    backlog_stuck_since_ = -1;
    for (uint16_t i = 0; i < n; ++i) stats_.tx_bytes += backlog_lens_[backlog_head_ + i];
    stats_.tx_packets += n;
    backlog_head_ += n;
    backlog_len_ -= n;
  }
  backlog_head_ = 0;
  backlog_stuck_since_ = -1;
}

size_t DpdkIo::alloc_tx(std::span<Frame*> out) {
  // Backpressure: while the device ring is full, frames wait in the backlog and the engine is
  // lent no more than the backlog can take, so it holds its packets instead of losing them.
  if (backlog_len_ > 0) flush_backlog();
  const size_t room = backlog_.size() - backlog_len_;
  const size_t want = std::min({out.size(), kMaxBurst, room});
  if (tx_held_ < want) top_up_tx(want);
  tx_lent_ = std::min(want, tx_held_);
  // Held frames are empty already (reset when their mbuf came, or when left unused): an idle
  // poll writes no frame.
  for (size_t i = 0; i < tx_lent_; ++i) out[i] = &tx_frames_[tx_slot(i)];
  return tx_lent_;
}

// Empties a frame for lending again; its data and capacity stay its mbuf's.
void DpdkIo::reset_tx_frame(Frame& f) noexcept {
  f.len = 0;
  f.wire_len = 0;
  f.ref = nullptr;
  f.ref_len = f.ref_at = 0;
  f.priority = Priority::kData;
}

// Allocates mbufs into the slots after the held ones, up to `want` held. The bulk call is all
// or nothing: halve the top-up until it succeeds.
void DpdkIo::top_up_tx(size_t want) {
  std::array<rte_mbuf*, kTxSlots> fresh;
  unsigned more = static_cast<unsigned>(want - tx_held_);
  while (more > 0 && rte_pktmbuf_alloc_bulk(pool_, fresh.data(), more) != 0) more /= 2;
  if (more == 0) ++stats_.tx_no_buffer;
  for (unsigned j = 0; j < more; ++j) {
    const size_t s = tx_slot(tx_held_ + j);
    rte_mbuf* m = fresh[j];
    tx_mbufs_[s] = m;
    tx_frames_[s].data = rte_pktmbuf_mtod(m, uint8_t*);
    tx_frames_[s].capacity = std::min<uint32_t>(rte_pktmbuf_tailroom(m), max_frame_);
    reset_tx_frame(tx_frames_[s]);
  }
  tx_held_ += more;
}

// A caller that filled other frames than a prefix of what it was lent: the mbufs kept (the
// unused ones, then those not lent) move to the front and their frames are set again.
void DpdkIo::regroup_tx(std::span<Frame* const> unused) {
  size_t kept = 0;
  for (Frame* f : unused) scratch_[kept++] = tx_mbufs_[static_cast<size_t>(f - tx_frames_.data())];
  for (size_t i = tx_lent_; i < tx_held_; ++i) scratch_[kept++] = tx_mbufs_[tx_slot(i)];
  tx_head_ = tx_held_ = 0;
  for (size_t i = 0; i < kept; ++i) {
    tx_mbufs_[i] = scratch_[i];
    tx_frames_[i].data = rte_pktmbuf_mtod(scratch_[i], uint8_t*);
    tx_frames_[i].capacity = std::min<uint32_t>(rte_pktmbuf_tailroom(scratch_[i]), max_frame_);
    reset_tx_frame(tx_frames_[i]);
  }
  tx_held_ = kept;
}

void DpdkIo::free_held_tx() {
  for (size_t i = 0; i < tx_held_; ++i) scratch_[i] = tx_mbufs_[tx_slot(i)];
  if (tx_held_ > 0) rte_pktmbuf_free_bulk(scratch_.data(), static_cast<unsigned>(tx_held_));
  tx_head_ = tx_held_ = tx_lent_ = 0;
}

void DpdkIo::on_miss(uint32_t ip4) {
  const Time now = monotonic_now();
  for (Pending& p : pending_) {
    if (p.ip4 == ip4) {
      if (now - p.sent < config_.arp_interval) return;
      p.sent = now;
      solicit(ip4);
      return;
    }
  }
  pending_[pending_next_] = {ip4, now};
  pending_next_ = (pending_next_ + 1) % static_cast<uint32_t>(pending_.size());
  solicit(ip4);
}

// Sets the mbuf's lengths. A referenced payload (Frame::ref) is chained behind the headers as
// an external buffer, and the bytes after it (RoCEv2's pad and ICRC) in a third segment;
// without a gathering port, or with no small mbuf left, it is copied into the frame instead.
bool DpdkIo::chain_reference(rte_mbuf* m, Frame& f) {
  const uint32_t tail = f.len - f.ref_at;  // what follows the payload (RoCEv2: pad and ICRC)
  if (f.ref_len >= config_.reference_from && f.ref_len > 0 && ext_pool_ != nullptr &&
      tail <= kExtTailRoom) {
    std::array<rte_mbuf*, 2> seg{};
    if (rte_pktmbuf_alloc_bulk(ext_pool_, seg.data(), tail > 0 ? 2 : 1) == 0) {
      auto* shinfo = static_cast<rte_mbuf_ext_shared_info*>(rte_mbuf_to_priv(seg[0]));
      shinfo->free_cb = on_reference_freed;
      shinfo->fcb_opaque = references_;
      rte_mbuf_ext_refcnt_set(shinfo, 1);
      void* addr = const_cast<uint8_t*>(f.ref);
      const rte_iova_t iova = iova_is_va_
                                  ? static_cast<rte_iova_t>(reinterpret_cast<uintptr_t>(addr))
                                  : RTE_BAD_IOVA;  // a virtual device: read by CPU
      rte_pktmbuf_attach_extbuf(seg[0], addr, iova, static_cast<uint16_t>(f.ref_len), shinfo);
      seg[0]->data_len = static_cast<uint16_t>(f.ref_len);
      ++*references_;
      m->next = seg[0];
      m->nb_segs = 2;
      if (tail > 0) {
        std::memcpy(rte_pktmbuf_mtod(seg[1], uint8_t*), f.data + f.ref_at, tail);
        seg[1]->data_len = static_cast<uint16_t>(tail);
        seg[0]->next = seg[1];
        m->nb_segs = 3;
      }
      m->data_len = static_cast<uint16_t>(f.ref_at);
      m->pkt_len = f.len + f.ref_len;
      ++counters_.tx_referenced;
      return true;
    }
    ++counters_.tx_no_ext_mbuf;
  }
  if (f.ref_len > 0) {
    if (!flatten(f)) return false;
    ++counters_.tx_flattened;
  }
  m->data_len = static_cast<uint16_t>(f.len);
  m->pkt_len = f.len;
  return true;
}

// A UDP frame (over IPv4, or IPv6 without extension headers; one 802.1Q tag or none) whose
// checksum is 0 is marked for the device to fill in (RFC 768: 0 means none was computed).
bool DpdkIo::offload_udp_checksum(rte_mbuf* m, const Frame& f) noexcept {
  // The headers are in the frame's own bytes (a payload by reference comes after them).
  const std::span<const uint8_t> own(f.data, f.ref_len > 0 ? f.ref_at : f.len);
  size_t l2 = 0;
  const uint16_t type = ether_type(own, &l2);
  size_t l3 = 0;
  uint64_t flags = RTE_MBUF_F_TX_UDP_CKSUM;
  if (type == kEtherTypeIpv4 && own.size() >= l2 + 20) {
    l3 = (own[l2] & 0x0Fu) * 4u;
    if (l3 < 20 || own[l2 + 9] != NET_IPPROTO_UDP) return false;
    flags |= RTE_MBUF_F_TX_IPV4;
  } else if (type == kEtherTypeIpv6 && own.size() >= l2 + 40) {
    l3 = 40;
    if (own[l2 + 6] != NET_IPPROTO_UDP) return false;
    flags |= RTE_MBUF_F_TX_IPV6;
  } else {
    return false;
  }
  if (own.size() < l2 + l3 + 8) return false;
  const uint8_t* udp = own.data() + l2 + l3;
  if (udp[6] != 0 || udp[7] != 0) return false;
  m->tx_offload = rte_mbuf_tx_offload(l2, l3, 0, 0, 0, 0, 0);
  m->ol_flags |= flags;
  return true;
}

// rte_eth_tx_prepare: what the device needs before it fills checksums (the pseudo-header sum
// in the checksum field, for most NICs). A frame it refuses is dropped and counted.
uint16_t DpdkIo::prepare_tx(std::array<rte_mbuf*, kMaxBurst>& send,
                            std::array<uint32_t, kMaxBurst>& lens, uint16_t k) {
  uint16_t done = 0;
  while (done < k) {
    done += rte_eth_tx_prepare(config_.port_id, queue_, send.data() + done,
                               static_cast<uint16_t>(k - done));
    if (done == k) break;
    ++counters_.tx_prepare_refused;
    ++stats_.tx_dropped;
    rte_pktmbuf_free(send[done]);
    std::copy(send.begin() + done + 1, send.begin() + k, send.begin() + done);
    std::copy(lens.begin() + done + 1, lens.begin() + k, lens.begin() + done);
    --k;
  }
  return k;
}

bool DpdkIo::drain_references(Time timeout) {
  if (references_ == nullptr) return true;
  const Time until = monotonic_now() + timeout;
  while (*references_ > 0) {
    flush_backlog();
    (void)rte_eth_tx_done_cleanup(config_.port_id, queue_, 0);
    if (*references_ == 0 || monotonic_now() >= until) break;
    rte_pause();
  }
  return *references_ == 0;
}

size_t DpdkIo::tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) {
  // Frames are filled in order: of the unused ones only the first can hold a frame begun and
  // given up (packet_io.h); the others are still empty.
  if (!unused.empty()) reset_tx_frame(*unused[0]);
  if (filled.empty() && backlog_len_ == 0) {  // an idle poll: every frame stays where it is
    tx_lent_ = 0;
    return 0;
  }
  std::array<rte_mbuf*, kMaxBurst> send;
  std::array<uint32_t, kMaxBurst> lens;  // the driver may free an mbuf as soon as it has it
  uint16_t k = 0;
  size_t freed = 0;
  bool prefix = filled.size() <= tx_lent_;  // HostLoop's case: the first frames lent, in order
  for (size_t i = 0; i < filled.size(); ++i) {
    Frame* f = filled[i];
    const auto slot = static_cast<size_t>(f - tx_frames_.data());
    prefix = prefix && slot == tx_slot(i);
    rte_mbuf* m = tx_mbufs_[slot];
    const uint32_t bytes = f->len + f->ref_len;
    if (f->len == 0 || bytes > max_frame_ || f->wire_len > bytes || !chain_reference(m, *f)) {
      ++counters_.tx_too_big;
      ++stats_.tx_dropped;
      scratch_[freed++] = m;
      continue;
    }
    if (offloads_.tx_udp_checksum_used && offload_udp_checksum(m, *f))
      ++counters_.tx_checksum_offloaded;
    if (const auto dst = ipv4_destination({f->data, f->len})) {
      const wire::MacAddr* mac = neigh_.find(*dst);
      if (mac == nullptr) {
        ++counters_.tx_no_neighbour;
        ++stats_.tx_dropped;
        scratch_[freed++] = m;
        on_miss(*dst);
        continue;
      }
      std::memcpy(f->data, mac->data(), 6);
    }
    lens[k] = bytes;
    send[k++] = m;
  }
  if (freed > 0) rte_pktmbuf_free_bulk(scratch_.data(), static_cast<unsigned>(freed));
  // Kept for the next alloc_tx(): the unused frames' mbufs, then those not lent this time.
  if (prefix) {
    tx_head_ = tx_slot(filled.size());
    tx_held_ -= filled.size();
  } else {
    regroup_tx(unused);
  }
  tx_lent_ = 0;

  if (offloads_.tx_udp_checksum_used) k = prepare_tx(send, lens, k);

  // Queue behind the backlog, then push as much as the ring takes (retrying briefly); what
  // is left waits in the backlog for the next burst. Nothing is dropped for a full ring
  // unless the backlog itself is full (a frame alloc_tx lent past its room: never).
  if (backlog_head_ + backlog_len_ + k > backlog_.size()) {
    std::copy_n(backlog_.begin() + backlog_head_, backlog_len_, backlog_.begin());
    std::copy_n(backlog_lens_.begin() + backlog_head_, backlog_len_, backlog_lens_.begin());
    backlog_head_ = 0;
  }
  uint16_t queued = 0;
  for (; queued < k && backlog_len_ < backlog_.size(); ++queued) {
    backlog_[backlog_head_ + backlog_len_] = send[queued];
    backlog_lens_[backlog_head_ + backlog_len_] = lens[queued];
    ++backlog_len_;
  }
  if (queued < k) {
    counters_.tx_ring_full += k - queued;
    stats_.tx_dropped += k - queued;
    rte_pktmbuf_free_bulk(send.data() + queued, static_cast<unsigned>(k - queued));
  }
  for (uint32_t attempt = 0; backlog_len_ > 0; ++attempt) {
    flush_backlog();
    if (backlog_len_ == 0 || attempt >= config_.tx_retries) break;
    rte_pause();
  }
  if (backlog_len_ > 0) ++counters_.tx_ring_full_waits;
  return queued;  // sent, or queued in the backlog to go first next time
}

}  // namespace uet::io
