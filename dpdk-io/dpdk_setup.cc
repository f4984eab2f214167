// The DPDK backend's control path (dpdk_io.h): the EAL, the port's set-up (pools, inbox rings,
// queues, MAC, steering), the queues' creation and teardown, and the port's queries. The data
// path (bursts, ARP, backlog) is dpdk_io.cc; what both share is dpdk_internal.h.
#include "dpdk-io/dpdk_internal.h"

#include <unistd.h>

#include <rte_alarm.h>
#include <rte_bus.h>
#include <rte_dev.h>
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

std::string driver_of(const rte_eth_dev_info& info) {
  return info.driver_name != nullptr ? info.driver_name : "";
}

// Shared-memory devices: any frame size whatever they report, and their queues pair up.
bool shared_memory(const rte_eth_dev_info& info) {
  const std::string driver = driver_of(info);
  return driver == "net_memif" || driver == "net_ring" || driver == "net_null";
}

uint64_t rss_types(const rte_eth_dev_info& info) {
  return info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
}

absl::Status check_queues(uint16_t queues, uint16_t port, const rte_eth_dev_info& info) {
  if (queues <= info.max_rx_queues && queues <= info.max_tx_queues) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "DpdkIoConfig.queues=", queues, " out of range for port ", port, " (", driver_of(info),
      "): 1..", std::min(info.max_rx_queues, info.max_tx_queues)));
}

// MTU: what was asked for, within what the device allows (ethdev's own rule: the frame is
// the MTU plus the overhead, at most max_rx_pktlen).
uint32_t fit_mtu(uint32_t asked, const rte_eth_dev_info& info) {
  const uint32_t overhead =
      info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu
          ? info.max_rx_pktlen - info.max_mtu
          : RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  uint32_t mtu = asked;
  if (info.max_mtu != 0 && mtu > info.max_mtu) mtu = info.max_mtu;
  if (info.max_rx_pktlen > overhead && mtu + overhead > info.max_rx_pktlen)
    mtu = info.max_rx_pktlen - overhead;
  if (info.min_mtu != 0 && mtu < info.min_mtu) mtu = info.min_mtu;
  return mtu;
}

}  // namespace

DpdkIo::Port::~Port() {
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
  if (auto s = port->start(config); !s.ok()) return s;  // ~Port undoes what was done
  std::vector<std::unique_ptr<DpdkIo>> out;
  for (uint16_t q = 0; q < config.queues; ++q) out.emplace_back(new DpdkIo(config, port, q));
  return out;
}

const std::string& DpdkIo::steering() const noexcept { return port_->steering; }

absl::Status DpdkIo::Port::start(const DpdkIoConfig& config) {
  rte_eth_dev_info info{};
  if (int r = rte_eth_dev_info_get(port_id, &info); r != 0) return dpdk_error("rte_eth_dev_info_get", r);
  if (auto s = check_queues(config.queues, port_id, info); !s.ok()) return s;
  mtu = fit_mtu(config.mtu, info);
  // Shared-memory devices report a 1518-byte maximum but move frames of any size (memif
  // chains its 2 KiB buffers; ring and null pass mbufs): there the asked-for MTU holds.
  max_frame = frame_bytes(shared_memory(info) ? config.mtu : mtu);
  int socket = rte_eth_dev_socket_id(port_id);
  if (socket < 0) socket = static_cast<int>(rte_socket_id());
  if (auto s = create_pools(config, info, socket); !s.ok()) return s;
  if (auto s = create_inboxes(config.queues, socket); !s.ok()) return s;
  if (auto s = configure(config, info, socket); !s.ok()) return s;
  if (auto s = set_mac(config); !s.ok()) return s;
  if (int r = rte_eth_dev_start(port_id); r != 0) return dpdk_error("rte_eth_dev_start", r);
  rx_posted = rte_mempool_in_use_count(pool);
  started = true;
  if (config.promiscuous) (void)rte_eth_promiscuous_enable(port_id);
  if (config.queues > 1) steer(config, info);
  return absl::OkStatus();
}

// The mbuf pool (frames of max_frame), and the small mbufs of zero-copy transmit when the
// port can gather.
absl::Status DpdkIo::Port::create_pools(const DpdkIoConfig& config, const rte_eth_dev_info& info,
                                        int socket) {
  const uint32_t room = std::max<uint32_t>(max_frame, 2048) + RTE_PKTMBUF_HEADROOM;
  const std::string pool_name = absl::StrCat("uet_pool_p", port_id);
  pool = rte_pktmbuf_pool_create(pool_name.c_str(), config.mbufs, config.mbuf_cache, 0,
                                 static_cast<uint16_t>(room), socket);
  if (pool == nullptr) {
    return dpdk_error(absl::StrCat("rte_pktmbuf_pool_create(", config.mbufs, " mbufs of ", room,
                                   " bytes; lower --mbufs or raise EAL -m)"),
                      rte_errno);
  }
  // Zero-copy transmit needs a device that takes chained mbufs, and addresses it can use: any
  // with IOVA as VA, or a virtual device (memif, af_packet), which copies by CPU.
  const bool virtual_device =
      info.device != nullptr && std::string(rte_bus_name(rte_dev_bus(info.device))) == "vdev";
  if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) == 0 ||
      (rte_eal_iova_mode() != RTE_IOVA_VA && !virtual_device)) {
    return absl::OkStatus();
  }
  // Two per frame (payload, then pad and ICRC) for every descriptor and backlog slot.
  const auto n = static_cast<uint32_t>(2u * config.queues * (config.tx_desc + 6 * kMaxBurst));
  const std::string name = absl::StrCat("uet_ext_p", port_id);
  ext_pool = rte_pktmbuf_pool_create(
      name.c_str(), n, std::min<uint32_t>(config.mbuf_cache, n / 4),
      RTE_ALIGN(sizeof(rte_mbuf_ext_shared_info), RTE_MBUF_PRIV_ALIGN),
      RTE_PKTMBUF_HEADROOM + dpdk_detail::kExtTailRoom, socket);
  if (ext_pool == nullptr) {
    return dpdk_error(absl::StrCat("rte_pktmbuf_pool_create(", n, " small mbufs for "
                                   "zero-copy transmit; raise EAL -m)"),
                      rte_errno);
  }
  references = std::make_unique<uint64_t[]>(config.queues);
  return absl::OkStatus();
}

// One inbox ring per queue when there are several (dpdk_io.h "Queues, lcores and FEPs").
absl::Status DpdkIo::Port::create_inboxes(uint16_t queues, int socket) {
  if (queues == 1) return absl::OkStatus();
  for (uint16_t q = 0; q < queues; ++q) {
    const std::string name = absl::StrCat("uet_inbox_p", port_id, "_q", q);
    rte_ring* r = rte_ring_create(name.c_str(), kInboxSize, socket, RING_F_SC_DEQ);
    if (r == nullptr) return dpdk_error(absl::StrCat("rte_ring_create(", name, ")"), rte_errno);
    inbox.push_back(r);
  }
  return absl::OkStatus();
}

// The device's offloads, RSS, and its RX/TX queues.
absl::Status DpdkIo::Port::configure(const DpdkIoConfig& config, const rte_eth_dev_info& info,
                                     int socket) {
  const uint16_t queues = config.queues;
  rte_eth_conf conf{};
  conf.rxmode.mtu = mtu;
  if (ext_pool != nullptr) conf.txmode.offloads = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  const uint64_t rx_csum = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
  conf.rxmode.offloads = info.rx_offload_capa & rx_csum;
  // RSS spreads what the rte_flow rules do not steer (or everything, when the PMD refuses
  // them); the inboxes take each frame to its FEP's queue.
  const uint64_t rss = rss_types(info);
  if (queues > 1 && rss != 0) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = rss;
  }
  offloads.rx_ipv4_checksum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) != 0;
  offloads.rx_udp_checksum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM) != 0;
  offloads.tx_ipv4_checksum = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
  offloads.tx_udp_checksum = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
  offloads.tx_udp_checksum_used = config.tx_checksum_offload && offloads.tx_udp_checksum;
  if (offloads.tx_udp_checksum_used) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
  if (int r = rte_eth_dev_configure(port_id, queues, queues, &conf); r != 0) {
    return dpdk_error(absl::StrCat("rte_eth_dev_configure(port ", port_id, ", ", queues,
                                   " queues, mtu ", mtu, ")"),
                      r);
  }
  uint16_t rxd = config.rx_desc, txd = config.tx_desc;
  if (int r = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rxd, &txd); r != 0)
    return dpdk_error("rte_eth_dev_adjust_nb_rx_tx_desc", r);
  rte_eth_rxconf rxconf = info.default_rxconf;
  rxconf.offloads = conf.rxmode.offloads;
  rte_eth_txconf txconf = info.default_txconf;
  txconf.offloads = conf.txmode.offloads;
  for (uint16_t q = 0; q < queues; ++q) {
    if (int r = rte_eth_rx_queue_setup(port_id, q, rxd, static_cast<unsigned>(socket), &rxconf, pool);
        r != 0)
      return dpdk_error(absl::StrCat("rte_eth_rx_queue_setup(queue ", q, ")"), r);
    if (int r = rte_eth_tx_queue_setup(port_id, q, txd, static_cast<unsigned>(socket), &txconf);
        r != 0)
      return dpdk_error(absl::StrCat("rte_eth_tx_queue_setup(queue ", q, ")"), r);
  }
  return absl::OkStatus();
}

// The MAC asked for, set on the port, or else the port's own.
absl::Status DpdkIo::Port::set_mac(const DpdkIoConfig& config) {
  if (config.local_mac != wire::MacAddr{}) {
    rte_ether_addr addr;
    std::memcpy(addr.addr_bytes, config.local_mac.data(), 6);
    // Virtual devices may refuse; then promiscuous mode (if asked) still lets frames in.
    (void)rte_eth_dev_default_mac_addr_set(port_id, &addr);
    mac = config.local_mac;
    return absl::OkStatus();
  }
  rte_ether_addr addr{};
  if (int r = rte_eth_macaddr_get(port_id, &addr); r != 0) return dpdk_error("rte_eth_macaddr_get", r);
  std::memcpy(mac.data(), addr.addr_bytes, 6);
  return absl::OkStatus();
}

// How frames reach their FEP's queue (dpdk_io.h "Queues, lcores and FEPs"): shared-memory
// devices pair queues (what the peer sends on its queue i arrives on our queue i), other
// devices get rte_flow rules, and a PMD that refuses them leaves it to software.
void DpdkIo::Port::steer(const DpdkIoConfig& config, const rte_eth_dev_info& info) {
  const uint16_t queues = config.queues;
  const std::string driver = driver_of(info);
  const std::string fep_range =
      absl::StrFormat("%u.%u.%u.%u + 0..%u", config.local_ip4 >> 24, (config.local_ip4 >> 16) & 255,
                      (config.local_ip4 >> 8) & 255, config.local_ip4 & 255, queues - 1);
  if (shared_memory(info)) {
    steering = absl::StrCat("queue pairing (", driver, ": peer queue i -> queue i; FEP ",
                            fep_range, "), software inboxes for strays");
  } else if (std::string why = add_flow_rules(config.local_ip4, queues); why.empty()) {
    steering = absl::StrCat("rte_flow: ", queues, " rules IPv4 dst ", fep_range, " -> queue i");
  } else {
    steering = absl::StrCat("software: ", driver, " refused rte_flow rules (", why, "); ",
                            rss_types(info) != 0 ? "RSS" : "queue 0",
                            " receives, each queue hands other FEPs' frames to their inbox");
  }
}

// One rule per queue: ETH / IPV4 dst == base + q -> QUEUE q. Returns "" or why the PMD
// refused (then no rule is left in place).
std::string DpdkIo::Port::add_flow_rules(uint32_t base_ip4, uint16_t queues) {
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
    rte_flow* f = rte_flow_create(port_id, &attr, pattern.data(), actions.data(), &err);
    if (f == nullptr) {
      std::string why = err.message != nullptr ? std::string(err.message)
                                               : std::string(rte_strerror(rte_errno));
      rte_flow_error ignored{};
      if (!flows.empty()) (void)rte_flow_flush(port_id, &ignored);
      flows.clear();
      return why.empty() ? std::string("no reason given") : why;
    }
    flows.push_back(f);
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

}  // namespace uet::io
