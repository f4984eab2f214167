// The simulated fabric: hosts and switches joined by links, driven by one event loop.
//
// Every frame is real bytes (Ethernet/IP/UDP/...): switches parse the real headers, hash the
// real 5-tuple for ECMP, set CE in the real IP header, trim the real payload. Time is integer
// picoseconds; serialization is exact; randomness comes from per-link generators derived from
// one seed, so a run is reproducible bit for bit.
//
// Ownership and threads: a Network owns its nodes, ports, frames and event list and runs on
// one thread (a fabric split over processes runs one Network per process: sim/partition.h). Hosts hold a Transport* they do not own. Bounds: every queue is bounded by its
// buffer limit (frames beyond it are dropped or trimmed and counted); the frame pool grows
// only as far as the frames in flight and queued.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/event_queue.h"
#include "sim/fast_mod.h"
#include "sim/frame_pool.h"
#include "sim/network_pages.h"
#include "sim/pfc_watchdog.h"
#include "sim/ring.h"
#include "sim/rng.h"
#include "sim/routing/routing.h"
#include "transport/transport.h"
#include "transport/wire/pcap.h"
#include "transport/wire/uet_headers.h"

namespace uet::sim {

// A frame's destination is kept in 24 bits (FrameMeta); hosts are also 10.0.0.1 + index.
// The priorities a Port keeps inline: data (lossless class 0 under PFC) and control. The
// further lossless classes (kNumPriorities: Tagger's, the dateline's) live beside the ports,
// made only for a fabric whose routes need them (Network::classes_).
inline constexpr int kPortPriorities = 2;
inline constexpr uint32_t kMaxHosts = (1u << 24) - 2;
inline constexpr uint32_t kMaxPorts = 1u << 24;  // a port number fills 24 bits of an event key

// The DSCP code points the fabric classifies on: kDscpData, kDscpControl, kDscpCnp
// (transport/transport.h) and a trimmed UET request's (spec/uet.md §3.14).
using wire::kDscpTrimmed;

struct LinkConfig {
  double gbps = 100;
  Time delay = 500 * kNanosecond;  // propagation, one way
  double loss = 0;                 // probability a frame is lost on the wire
  double corrupt = 0;              // probability a frame arrives with one bit flipped after
                                   // its Ethernet header
  double duplicate = 0;            // probability a frame arrives twice: a byte-identical copy
                                   // follows it, up to reorder_delay later
  double reorder = 0;              // probability a frame is held on the wire for an extra
                                   // delay uniform in (0, reorder_delay], so that frames sent
                                   // after it may overtake it
  Time reorder_delay = 2 * kMicrosecond;
};

// A link's rate in [0.001, 10000] Gb/s, delays in [0, 10 s], probabilities in [0, 1].
absl::Status check_link(const LinkConfig& link);

struct EcnConfig {
  bool enabled = true;
  uint64_t kmin_bytes = 100 * 1024;  // RED on the instantaneous queue of the data class
  uint64_t kmax_bytes = 400 * 1024;
  double pmax = 0.2;
};

// RED on the instantaneous data-class queue, as the frame is enqueued: 0 up to kmin, rising
// linearly to pmax just below kmax, 1 from kmax.
double ecn_mark_probability(const EcnConfig& ecn, uint64_t queue_bytes) noexcept;

// PFC on the data class (and on the further lossless classes routing's deadlock_free rule
// moves frames into: sim/routing/lossless_classes.h), per ingress port and priority. A lossless
// class is admitted by its ingress counter (XOFF + headroom), not by the output buffer limit;
// headroom must cover a round trip of the upstream link plus a frame, or frames are lost
// (counted as lossless_drops).
struct PfcConfig {
  bool enabled = false;  // makes the data class lossless
  uint64_t xoff_bytes = 64 * 1024;       // pause the upstream when an ingress holds more
  uint64_t xon_bytes = 48 * 1024;        // resume below this
  uint64_t headroom_bytes = 128 * 1024;  // accepted past XOFF while the pause travels
  PfcWatchdogConfig watchdog;  // sim/pfc_watchdog.h
};

struct SwitchConfig {
  uint64_t buffer_bytes = 1024 * 1024;        // per output port, data class
  uint64_t control_buffer_bytes = 256 * 1024;  // per output port, control class
  EcnConfig ecn;
  bool trimming = true;           // cut UET requests to their headers instead of dropping
  // With trimming, a request that finds the data class full is trimmed; or, with this, the
  // last request queued is, with probability 1/2, and the arrival takes its place: frames
  // arriving in step with the port's departures no longer win every freed slot (NDP,
  // SIGCOMM 2017 §3.1; uet-htsim's CompositeQueue).
  bool trim_last_half = false;
  PfcConfig pfc;
  Time failure_detection = 10 * kMicrosecond;  // a dead link leaves routes after this
  uint64_t ecmp_seed = 0x5EED;    // mixed with the switch index
};

// Every counter of a port, as Network::port_stats reports it.
struct PortStats {
  uint64_t tx_frames = 0;
  uint64_t tx_bytes = 0;
  uint64_t max_queue_bytes = 0;
  double queue_byte_ps = 0;      // integral of queue bytes over time, for the average
  uint64_t drops = 0;            // buffer overflow (lossy class), down link (sent into it,
                                 // or in flight when it died: at the receiving end)
  uint64_t lossless_drops = 0;   // lossless class beyond headroom: PFC misconfigured
  uint64_t wire_losses = 0;      // random loss on the link
  uint64_t corruptions = 0;
  uint64_t duplicates = 0;       // extra copies this link delivered
  uint64_t reorders = 0;         // frames this link held back (LinkConfig::reorder)
  uint64_t trims = 0;
  uint64_t ecn_marks = 0;
  uint64_t pauses_sent = 0;      // PFC XOFF sent upstream from this ingress
  Time paused_time = 0;          // time this egress spent paused, summed over lossless classes
  // Corruption accounting. At a host's port: frames that reached the host still damaged (a
  // bit flipped upstream where a check covers it, and no switch rewrote them since), which
  // its transport must reject; and every damaged frame that reached it (its transport may
  // reject no other). At a switch port: damaged frames it trimmed or CE-marked;
  // those rewrites fix the IPv4 checksum (and trimming zeroes the UDP checksum), so the
  // damage may pass undetected. At the damaging port: flips no end-to-end check covers (past
  // the IP header of a non-RoCEv2 frame whose UDP checksum is 0, e.g. a trimmed UET header).
  uint64_t corrupted_arrivals = 0;
  uint64_t damaged_arrivals = 0;  // at a host's port: every frame with a flipped bit
  uint64_t corrupted_rewrites = 0;
  uint64_t corrupted_unchecked = 0;
};

// The counters every frame may touch, kept in the port (meanings as in PortStats).
struct PortCounters {
  uint64_t tx_frames = 0;
  uint64_t tx_bytes = 0;
  uint64_t max_queue_bytes = 0;
  double queue_byte_ps = 0;
  uint64_t drops = 0;
  uint64_t trims = 0;
  uint64_t ecn_marks = 0;
};

// The counters only impaired links, PFC and damaged frames touch: kept beside the ports
// (Network::rare_stats), made for a port when it first counts one, so a clean lossy fabric
// holds none.
struct PortRareStats {
  uint64_t lossless_drops = 0;
  uint64_t wire_losses = 0;
  uint64_t corruptions = 0;
  uint64_t duplicates = 0;
  uint64_t reorders = 0;
  uint64_t pauses_sent = 0;
  Time paused_time = 0;
  uint64_t corrupted_arrivals = 0;
  uint64_t damaged_arrivals = 0;
  uint64_t corrupted_rewrites = 0;
  uint64_t corrupted_unchecked = 0;
  bool operator==(const PortRareStats&) const = default;
};

enum class NodeKind : uint8_t { kHost, kSwitch };

// A node as Network::node reports it: views into the network's flat arrays, valid while the
// network lives (`ports` is filled by finalize()).
struct Node {
  NodeKind kind;
  uint32_t index;                   // host or switch number
  std::span<const uint32_t> ports;  // in the order connected
  absl::string_view name;
};

// A frame waiting in a port's queue, with what start_tx needs, so that sending it does not
// read the frame's metadata: its size and the switch ingress it is buffered under (PFC).
struct QueuedFrame {
  FrameId frame;
  uint32_t bytes;    // Frame::bytes_on_wire() as queued
  // kNone at a host NIC. Where frames change class (Network::tagging_): the ingress port in
  // the low 24 bits (kMaxPorts) and above them the priority the frame arrived in, the
  // ingress counter it is buffered under (Tagger: buffered by the old tag, queued by the new).
  uint32_t ingress;
};
inline constexpr uint32_t kIngressPortMask = (1u << 24) - 1;

// Hot fields first (what every frame touches at a hop), by cache line: line 0 is what the
// port a frame arrives through needs (owner, link state, and at a switch the PFC ingress
// counter that enqueue and start_tx both update), so that port costs one line; lines 0-2 are
// what the egress needs (wire state, queues, the counters it bumps); the rarer state after
// them. The link's configuration is the Network's, per link (Network::link_config), and the
// rare counters are Network::rare_stats's: four lines a port.
struct alignas(64) Port {
  uint32_t peer = kNone;   // the port at the other end of the link
  uint32_t owner = kNone;  // the host or switch index of `node` (cached: no Node lookup per frame)
  bool at_host = false;    // `node` is a host (its NIC port)
  bool up = true;
  bool done_scheduled = false;
  bool impaired = false;   // the link may lose, corrupt, reorder or duplicate (cached from `link`)
  bool tapped = false;     // Network::taps_ holds a pcap writer for the frames it transmits
  bool scaled = false;     // buffers and ECN thresholds scaled (degraded): see Network::scaled_
  bool plain = true;       // up, not impaired, not tapped, not remote (cached): start_tx's common case
  std::array<bool, kPortPriorities> paused{};
  uint8_t pause_sent = 0;  // at a switch ingress, by priority (bit p): PFC XOFF sent upstream
  // The further lossless classes' state kept here (Network::classes_ holds their queues): bit
  // c - 1 while class c holds frames, bit 4 + c - 1 while it is paused. 0 on a Clos.
  uint8_t classes = 0;
  bool remote = false;     // the peer's node runs in another process (Network::set_partition)
  // Picoseconds per byte when rate_bps divides 8e12 (every whole Gb/s rate that divides 8000,
  // e.g. 25, 100, 400, 800), so serialization is one multiplication; 0 otherwise.
  uint32_t ps_per_byte = 0;
  // The wire is busy until busy_until. A kTxDone event is scheduled only when something must
  // happen then (a host NIC pulls its next frame; a switch port has more frames waiting), so
  // an idle fabric costs one event per frame per hop, not two.
  Time busy_until = 0;
  int64_t rate_bps = 0;   // current rate (degradable)
  Time delay = 0;         // link.delay (cached)
  // At a switch: bytes in this switch's buffers that entered through this port (PFC).
  std::array<uint64_t, kPortPriorities> ingress_bytes{};
  std::array<Ring<QueuedFrame>, kPortPriorities> queue;
  std::array<uint64_t, kPortPriorities> queued_bytes{};
  Time last_queue_change = 0;
  PortCounters stats;
  Rng rng;
  uint32_t node = kNone;  // the node this port belongs to (control path only)
  uint32_t rare = kNone;  // its entry in Network::rare_ (kNone: every rare counter is 0)
};
static_assert(sizeof(Port) == 4 * 64);

// A lossless class beyond the first at one port (its priority's queue, the bytes buffered
// under it as an ingress, since when it is paused), beside the ports (Network::classes_):
// zero bytes until used, so a fabric that needs one class holds none.
struct PortClass {
  Ring<QueuedFrame> queue;
  uint64_t queued_bytes = 0;
  uint64_t ingress_bytes = 0;
  Time paused_since = 0;
  Time last_change = 0;  // in the port's first entry: when the classes' bytes last changed
};
inline constexpr int kExtraClasses = kNumPriorities - kPortPriorities;
using PortClasses = std::array<PortClass, kExtraClasses>;

struct Host {
  uint32_t node;
  uint32_t port;
  uint32_t ip4;
  Transport* transport = nullptr;
  Time deadline = kNever;   // the timer event we have scheduled
  uint32_t timer_gen = 0;   // stale timer events carry an older generation
};

struct Switch {
  uint32_t node;
  SwitchConfig config;
  uint64_t seed;  // its ECMP hash seed (Network::ecmp_port)
};

class Network;

// Something that wants to be called at a given time (workloads starting flows).
class Scheduled {
 public:
  virtual ~Scheduled() = default;
  virtual void fire(Network& net, Time now, uint32_t cookie) = 0;
};

// Per-frame work a host does before its NIC sends a frame (TSS sealing in software, an inline
// crypto engine's rate): the host port is busy for serialization + ps_per_frame +
// ps_per_byte * bytes. 0 and 0 (the default): the host sends at line rate.
struct HostCost {
  Time ps_per_frame = 0;
  double ps_per_byte = 0;
};

struct NetworkConfig {
  uint64_t seed = 1;
  uint32_t frame_capacity = 4096 + 256;  // bytes stored per frame; smaller: payload by length
  SwitchConfig switches;
  HostCost host_cost;
  // finalize() stores no port: set_partition() stores this rank's ports only, so a rank of a
  // split fabric never holds the whole fabric's (its pages are never touched). A process that
  // sets this must call set_partition() before anything reads a port.
  bool ports_at_partition = false;
};

class Network {
 public:
  explicit Network(const NetworkConfig& config);
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // ----- building (control path)
  uint32_t add_host(std::string name);
  uint32_t add_switch(std::string name);
  // Joins two nodes (host or switch indices given as node ids) with a full-duplex link.
  absl::Status connect(uint32_t node_a, uint32_t node_b, const LinkConfig& link);
  // Computes the routes and stores the ports (NetworkConfig::ports_at_partition: not yet).
  // Call after the last connect().
  absl::Status finalize();
  // Routing (sim/routing/routing.h), before the run: each may come before or after
  // finalize() (the routes are recomputed then), in any order; every rank of a split fabric
  // must make the same calls. The mode (default: minimal, shortest-path ECMP).
  absl::Status set_routing(const RoutingConfig& config);
  // By switch, its group: Valiant's and UGAL's intermediates are groups (a dragonfly's
  // groups); groups numbered from 0, each with a switch. Default: every switch its own.
  absl::Status set_switch_groups(std::vector<uint32_t> group_of_switch);
  // By port (num_ports() entries), the class it moves along (a torus dimension), for
  // RoutingConfig::dimension_order; only switch-to-switch ports' classes are read.
  absl::Status set_port_classes(std::vector<uint8_t> class_of_port);
  const RoutingConfig& routing_config() const noexcept { return routing_config_; }
  // The routes as computed (its intermediate groups, its choices with given queues).
  const Routing& routing() const noexcept { return routing_; }
  void attach(uint32_t host, Transport* transport);
  absl::Status tap(uint32_t port, const std::string& pcap_path);

  // ----- failures (at a given simulated time)
  void set_link_up(uint32_t port, bool up, Time at);
  // The link runs at `fraction` of its configured rate from `at`. With `scale_queues` its two
  // switch ports' buffer limits and ECN thresholds shrink by the same fraction, so a queue
  // holds as much time as on a healthy link (uet-htsim models a reduced-speed link so:
  // FatTreeTopology::alloc_queue scales queue size and ECN thresholds by the failed-link ratio).
  void set_link_rate(uint32_t port, double fraction, Time at, bool scale_queues = false);
  void schedule(Time at, Scheduled* target, uint32_t cookie);
  // The same, on the rank that runs host `host` (here when this rank runs it): a workload's
  // event that starts work on another host. `target` must be registered (register_callback)
  // on every rank in the same order, so that its number names it everywhere.
  void schedule_at_host(uint32_t host, Time at, Scheduled* target, uint32_t cookie);
  uint32_t register_callback(Scheduled* target);

  // ----- running
  // Runs events until the list is empty or simulated time would pass `until`.
  void run_until(Time until);
  Time now() const noexcept { return now_; }
  // The fabric's events; the PFC watchdog's checks (a switch's management plane) apart.
  uint64_t events_processed() const noexcept { return events_; }
  uint64_t pfc_watchdog_checks() const noexcept { return pfc_watch_events_; }
  size_t events_pending() const noexcept { return events_q_.size(); }
  // Pokes a host's NIC: the transport may have something to send (after an application
  // posted work from outside the event loop).
  void kick(uint32_t host);

  // ----- a fabric split over processes (sim/partition.h)
  // This process runs the nodes whose rank_of_node is `rank`: it runs their events only, and
  // what its ports send to another rank's node (frames with their metadata, PFC frames) is
  // appended to outbox(that rank) instead of scheduled. Every process builds the whole fabric's
  // graph (nodes, links, routes) and schedules the same link changes, but stores only its own
  // ports (made here with NetworkConfig::ports_at_partition, else copied from finalize()'s);
  // transports are attached to its own hosts only. Call after finalize() and before the run.
  absl::Status set_partition(std::vector<uint16_t> rank_of_node, uint16_t rank, uint16_t ranks);
  uint16_t rank() const noexcept { return rank_; }
  uint16_t ranks() const noexcept { return ranks_; }
  uint16_t rank_of_node(uint32_t n) const noexcept {
    return rank_of_node_.empty() ? 0 : rank_of_node_[n];
  }
  bool owns_host(uint32_t h) const noexcept { return rank_of_node(hosts_[h].node) == rank_; }
  bool owns_port(uint32_t p) const noexcept { return rank_of_node(port_node_[p]) == rank_; }
  // By rank, the records for it since they were last cleared; deliver_remote() schedules
  // them there. The events sent since the last call are written out first (their frames'
  // bytes copied then, and the frames released): sending one only notes it.
  std::vector<std::vector<uint8_t>>& outboxes();
  uint64_t remote_records() const noexcept { return remote_records_; }
  // The earliest time of the events sent to other ranks and not yet written out (kNever:
  // none): with next_event_time(), the earliest event this rank's sends can make anywhere.
  Time earliest_sent() const noexcept { return earliest_sent_; }
  // Schedules what another rank's outbox held for this one. Every record is checked (kind,
  // port owned here, times not before now, lengths within a frame): a bad one is refused with
  // the reason, and nothing after it is scheduled.
  absl::Status deliver_remote(std::span<const uint8_t> records);
  // The earliest pending event's time here, kNever if none.
  Time next_event_time() noexcept { return events_q_.next_time(); }

  // ----- frames for transports that build their own (the UDP app, tests)
  FramePool& frames() noexcept { return pool_; }

  // ----- topology and addressing
  size_t num_hosts() const noexcept { return hosts_.size(); }
  size_t num_switches() const noexcept { return switches_.size(); }
  size_t num_ports() const noexcept { return port_node_.size(); }
  const Host& host(uint32_t h) const noexcept { return hosts_[h]; }
  const Switch& sw(uint32_t s) const noexcept { return switches_[s]; }
  Node node(uint32_t n) const noexcept {
    const uint32_t from = n == 0 ? 0 : name_end_[n - 1];
    const absl::string_view name(names_.data() + from, name_end_[n] - from);
    return Node{nodes_[n].kind, nodes_[n].index, node_ports(n), name};
  }
  // A port this process runs. Split over ranks, another rank's port is not stored here (its
  // entry reads as zero bytes): port_node(), peer_of() and link_up() answer for every port.
  const Port& port(uint32_t p) const noexcept { return ports_[p]; }
  uint32_t port_node(uint32_t p) const noexcept { return port_node_[p]; }
  // Ports 2i and 2i + 1 are link i's two ends (connect()).
  static uint32_t peer_of(uint32_t p) noexcept { return p ^ 1; }
  bool link_up(uint32_t p) const noexcept { return link_up_[p / 2]; }
  // The configuration of the link through port `p` (as connected; the rate may be degraded).
  const LinkConfig& link_config(uint32_t p) const noexcept {
    return link_classes_[link_class_[p / 2]];
  }
  uint32_t host_node(uint32_t h) const noexcept { return hosts_[h].node; }
  uint32_t switch_node(uint32_t s) const noexcept { return switches_[s].node; }
  static uint32_t host_ip4(uint32_t h) noexcept { return 0x0A000001u + h; }  // 10.0.0.1 + h
  static uint32_t host_of_ip4(uint32_t ip) noexcept { return ip - 0x0A000001u; }
  static std::array<uint8_t, 6> host_mac(uint32_t h) noexcept {
    return {0x02, 0x00, static_cast<uint8_t>(h >> 24), static_cast<uint8_t>(h >> 16),
            static_cast<uint8_t>(h >> 8), static_cast<uint8_t>(h)};
  }
  // The port a switch would forward a frame to host `dst` with this flow hash through on a
  // shortest path (the minimal mode's choice).
  uint32_t ecmp_port(uint32_t sw, uint32_t dst_host, uint64_t flow_hash) const noexcept {
    return routing_.port(sw, dst_host, flow_hash);
  }
  // The port a switch forwards such a frame through in the configured mode, as forwarding
  // does: `state` is the frame's RouteState (0 before its first switch), updated as the
  // frame's would be; UGAL reads the switch's queues as they are now.
  uint32_t route_port(uint32_t sw, uint32_t dst_host, uint64_t flow_hash,
                      uint8_t& state) const noexcept;
  // What UGAL-L weighs at a switch port now (RoutingConfig::ugal_signal): its queued bytes,
  // and with kDownstream the bytes the switch at the link's other end holds from it.
  uint64_t ugal_load(uint32_t port) const noexcept;
  // Bytes the routing tables hold (routes, groups, ports, per switch and per destination host).
  size_t ecmp_table_bytes() const noexcept { return routing_.table_bytes(); }
  // Folds the queue integrals up to now (call before reading PortStats averages).
  void flush_stats();
  // PFC watchdog (sim/pfc_watchdog.h): the deadlocks it found, in the order found, and a
  // switch egress port's counters (this process's ports).
  const std::vector<PfcDeadlock>& pfc_deadlocks() const noexcept { return pfc_deadlocks_; }
  PfcWatchdogStats pfc_watchdog(uint32_t port) const noexcept;
  // Every counter of a port (the hot ones it holds and its rare ones).
  PortStats port_stats(uint32_t port) const noexcept;
  // Whether PFC pauses a port's queue of `priority` (< kNumPriorities) now; and the bytes it
  // holds (this process's ports).
  bool queue_paused(uint32_t port, int priority) const noexcept {
    return paused_at(port, priority);
  }
  uint64_t queue_bytes(uint32_t port, int priority) const noexcept {
    if (priority < kPortPriorities) return ports_[port].queued_bytes[priority];
    return classes_.empty() ? 0 : classes_[port][priority - kPortPriorities].queued_bytes;
  }

 private:
  enum Kind : uint8_t {
    kTxDone, kArrive, kHostTimer, kPfc, kLinkState, kLinkRate, kRouteRefresh, kCall, kPfcWatch
  };

  // The per-event path, compiled twice: kClasses where frames change lossless class
  // (tagging_), so a fabric with one class does no per-frame class work.
  template <bool kClasses>
  void run_events(Time until);
  template <bool kClasses>
  void dispatch(const EventQueue::Due& e, Time until);  // `until`: run_events's
  // Its event kinds but kArrive and kTxDone (on_arrive, on_tx_done).
  void on_host_timer(uint32_t host, uint32_t gen);
  template <bool kClasses>
  void on_pfc(uint32_t port, uint32_t b);
  template <bool kClasses>
  void on_link_state(uint32_t port, bool up);
  void on_link_rate(uint32_t port, uint32_t b);  // out of line, in network_impair.cc: rare
  // Link changes and route refreshes run on every rank of a split fabric (each keeps the whole
  // fabric's link states and routes): events_processed() counts them on rank 0 only, so the
  // ranks' counts add up to one process's.
  void count_once_per_fabric() noexcept {
    if (rank_ != 0) --events_;
  }
  void prefetch_ahead() const noexcept;  // for the next few events of the current bucket
  // Its stages, by how far ahead of the current event they run (network.cc, "Prefetching").
  void prefetch_far(const EventQueue::Node& e) const noexcept;
  void prefetch_mid(const EventQueue::Node& e) const noexcept;
  void prefetch_near(const EventQueue::Node& e) const noexcept;
  void prefetch_last(const EventQueue::Node& e) const noexcept;
  template <bool kClasses>
  void start_tx(uint32_t port);
  template <bool kClasses>
  void start_tx_inline(uint32_t port);  // start_tx's body, inlined into the tx-done path
  void start_tx_rare(uint32_t port, FrameId f, uint32_t bytes, Time done);  // not Port::plain
  template <bool kClasses>
  void kick_port(uint32_t port);  // start now if idle, else make sure kTxDone will come
  void duplicate(uint32_t port, FrameId f, Time at);
  static bool damage_detectable(const Frame& f, size_t at, bool sealed) noexcept;
  static bool sealed_untrimmed(const Frame& f) noexcept;
  template <bool kClasses>
  void on_tx_done(uint32_t port);
  template <bool kClasses>
  void on_arrive(uint32_t port, FrameId f);
  template <bool kClasses>
  void switch_forward(uint32_t in_port, FrameId f);
  // Where frames keep their class (every host NIC; a switch unless tagging_).
  bool enqueue(uint32_t port, FrameId f, Priority prio, uint32_t ingress);
  struct FrameMeta;
  // The per-hop pieces both enqueue paths inline (network_inline.h); `p` is ports_[port].
  void mark_ecn(Port& p, uint32_t port, FrameId f, FrameMeta& m, uint64_t queue_bytes);
  Time send_frame(Port& p, uint32_t port, FrameId f, uint32_t bytes);
  // The lossless classes (network_classes.cc): forwarding and admission where frames change
  // class (tagging_), the further classes' transmission, pause and accounting.
  void forward_tagged(uint32_t in_port, uint32_t out, FrameId f);
  bool enqueue_tagged(uint32_t port, FrameId f, int prio, uint32_t ingress, int in_prio);
  void start_tx_class(uint32_t port);
  void release_ingress(uint32_t packed, uint32_t bytes);
  void on_pfc_class(uint32_t port, int prio, bool pause);
  uint64_t classes_bytes(uint32_t port) const noexcept;
  void account_classes(uint32_t port) noexcept;  // account_queue's for the further classes
  uint64_t queue_total(uint32_t port) const noexcept {
    const Port& p = ports_[port];
    const uint64_t q = p.queued_bytes[0] + p.queued_bytes[1];
    return p.classes == 0 ? q : q + classes_bytes(port);
  }
  bool paused_at(uint32_t port, int prio) const noexcept {
    const Port& p = ports_[port];
    return prio < kPortPriorities ? p.paused[prio] : ((p.classes >> (2 + prio)) & 1) != 0;
  }
  Ring<QueuedFrame>& queue_of(uint32_t port, int prio) noexcept {
    return prio < kPortPriorities ? ports_[port].queue[prio] : classes_[port][prio - 2].queue;
  }
  const Ring<QueuedFrame>& queue_of(uint32_t port, int prio) const noexcept {
    return prio < kPortPriorities ? ports_[port].queue[prio] : classes_[port][prio - 2].queue;
  }
  uint64_t& ingress_bytes_of(uint32_t port, int prio) noexcept {
    return prio < kPortPriorities ? ports_[port].ingress_bytes[prio]
                                  : classes_[port][prio - 2].ingress_bytes;
  }
  static bool parse_meta(const Frame& fr, FrameMeta& m) noexcept;
  // Frame f for a rewrite of its headers that keeps its lengths (ECN, DSCP): frame_, as no
  // host call is under way.
  Frame& frame_bytes(FrameId f) noexcept {
    pool_.view_into(f, frame_);
    return frame_;
  }
  bool trim(FrameId f) noexcept;  // trim_uet() on frame f, its new lengths kept
  bool trim_last(Port& p, uint32_t port, uint64_t bytes, uint64_t limit, uint64_t control_limit);
  static bool reparse_meta(const Frame& fr, FrameMeta& m) noexcept;
  void host_deliver(uint32_t host, FrameId f);
  void host_pull(uint32_t host);
  void host_arm_timer(uint32_t host);
  void send_pfc(uint32_t ingress_port, int prio, bool pause);
  // The PFC watchdog (network_pfc.cc): a pause to watch, a check due, an arrival at a
  // stormed queue (true: dropped).
  // A queue is (port, priority), as one number in the wait-for graph: port * 4 + priority.
  void pfc_watch_paused(uint32_t port, int prio);
  void on_pfc_watch(uint32_t port, uint32_t b);
  bool pfc_storm_drop(uint32_t port, int prio, FrameId f);
  void pfc_storm(uint32_t port, int prio);
  void pfc_restore(uint32_t port, int prio);
  void pfc_schedule_check(uint32_t port, int prio, Time at, uint32_t b);
  PfcWatchState& pfc_watch(uint32_t port, int prio) noexcept {
    return pfc_watch_[size_t{port} * kNumPriorities + static_cast<uint32_t>(prio)];
  }
  const PfcWatchState& pfc_watch(uint32_t port, int prio) const noexcept {
    return pfc_watch_[size_t{port} * kNumPriorities + static_cast<uint32_t>(prio)];
  }
  void pfc_waits_on(uint32_t queue, std::vector<uint32_t>& out) const;
  std::vector<uint32_t> pfc_wait_cycle(uint32_t from) const;
  // Folds the port's queued bytes (data and control) since their last change into its
  // integral; the further classes' bytes are folded apart (account_classes).
  [[gnu::always_inline]] void account_queue(Port& p) noexcept {
    const uint64_t bytes = p.queued_bytes[0] + p.queued_bytes[1];
    // Through int64_t: the same double (q is far below 2^63), one instruction where the
    // unsigned conversion takes a test and a branch.
    const auto q = static_cast<int64_t>(bytes);
    // An empty queue adds exactly 0 to the (non-negative) integral: skip the arithmetic.
    if (q != 0) {
      p.stats.queue_byte_ps +=
          static_cast<double>(q) * static_cast<double>(now_ - p.last_queue_change);
    }
    p.last_queue_change = now_;
  }
  void drop(FrameId f) { pool_.release(f); }
  absl::Status compute_routes();
  // After a routing setting changed: the routes recomputed if finalized; where that fails,
  // `undo` puts the setting back and the routes are as they were.
  absl::Status reroute(absl::FunctionRef<void()> undo);
  // Forwarding's choice where the memo has none: minimal (and memoised), or by the frame's
  // routing state.
  uint32_t route_miss(Routing::Memo& memo, uint32_t sw, FrameMeta& m) noexcept;
  Time serialization(const Port& p, uint32_t bytes) const noexcept;
  static void set_rate(Port& p, int64_t rate_bps) noexcept;
  // Port `port` as its link and nodes make it (the rank's split, if any, included), and every
  // port this process runs made so, the others' entries left as zero pages.
  Port make_port(uint32_t port) const;
  void store_ports();
  static void update_plain(Port& p) noexcept {
    p.plain = p.up && !p.impaired && !p.tapped && !p.remote;
  }
  // A frame leaves through `port` to arrive at its peer at `at`: scheduled here, or recorded
  // for the peer's rank (and released here).
  void arrive_at_peer(uint32_t port, Time at, FrameId f, uint64_t key);
  // Appends an event for `port` (run by another rank) to that rank's outbox: an arrival
  // carries frame `f` (released here), a PFC frame only `b`, a call its callback's number.
  void send_remote(uint32_t port, Time at, uint64_t key, uint8_t kind, uint32_t b, FrameId f,
                   uint32_t callback = 0);
  static uint64_t call_key(uint32_t callback, uint32_t cookie) noexcept {
    return uint64_t{cookie} << 16 | (callback & 0xFFFF);
  }
  // Events due at the same picosecond run in the order of their keys: the port or host that
  // scheduled them, then its own counter of such events (a sending port's frames, a PFC
  // ingress's pause frames, a host's timers; a port has one tx-done pending at a time), so
  // the order never depends on how many other events a process holds, and a fabric split
  // over processes runs every node's events as one process does. The counter's low 24 bits
  // break ties only between one scheduler's events of one picosecond, never 2^24 apart.
  static uint64_t event_key(uint32_t scheduler, uint64_t counter) noexcept {
    return uint64_t{scheduler} << 24 | (counter & 0xFFFFFF);
  }
  // A frame's arrival at the peer of `port`: by the port's transmissions, two keys per frame
  // (+ 1 for a duplicate of it).
  std::span<const uint32_t> node_ports(uint32_t n) const noexcept {
    if (n + 1 >= port_first_.size()) return {};  // before finalize()
    return {node_ports_.data() + port_first_[n], node_ports_.data() + port_first_[n + 1]};
  }
  void index_node_ports();
  uint32_t add_node(NodeKind kind, uint32_t index, absl::string_view name);
  // A port's rare counters, made on its first rare event (the vector grows, amortized).
  PortRareStats& rare_stats(uint32_t port) {
    uint32_t& r = ports_[port].rare;
    if (r == kNone) [[unlikely]] {
      r = static_cast<uint32_t>(rare_.size());
      rare_.emplace_back();
    }
    return rare_[r];
  }
  static uint64_t arrival_key(uint32_t port, const Port& p) noexcept {
    return event_key(port, p.stats.tx_frames << 1);
  }

  NetworkConfig config_;
  bool host_cost_ = false;  // config_.host_cost is not zero
  // The Frame handed out for one frame at a time: to a host's transport (rx, tx), pointed at
  // a pool frame with its lengths (FramePool::alloc_into, view_into; what tx wrote is kept
  // with store()), or to a rewrite of a frame's headers that keeps its lengths (frame_bytes).
  // Its priority is kData between calls, as real hosts deliver frames.
  Frame frame_;
  Frame* const frame_span_[1] = {&frame_};  // what rx() and tx() take
  Time host_cost(uint32_t bytes) const noexcept {
    return config_.host_cost.ps_per_frame +
           static_cast<Time>(config_.host_cost.ps_per_byte * static_cast<double>(bytes));
  }
  FramePool pool_;
  // Per frame, in the pool beside it (FramePool's metadata): what switches read from its
  // headers, parsed once when the frame enters the fabric and again only when its bytes change
  // (corruption, trimming). Every frame that enters the fabric (host_pull, duplicate) sets its
  // entry; the per-hop code and the prefetch stages read it for any frame in flight or queued.
  // 16 bytes, four to a cache line.
  struct FrameMeta {
    uint64_t flow_hash = 0;
    uint32_t bytes = 0;  // Frame::bytes_on_wire(), kept here so a hop need not read the Frame
    // The destination host, or kNoHost24 for any address that is not one (at most kMaxHosts
    // hosts, so kNoHost24 is never a host and ECMP finds no route for it, as for any other).
    uint32_t dst_host : 24 = kNoHost24;
    // The priority it was last queued in: 1 (control) where classify_dscp() of its DSCP is
    // the control class; else its lossless class's (lossless_priority), 0 until a switch
    // moves it up (Tagger, the dateline).
    uint8_t prio : 2 = 0;
    bool parsed : 1 = false;
    bool damaged : 1 = false;    // a bit was flipped on its way (at most one per frame)
    bool corrupted : 1 = false;  // ... where a check covers it, and no switch rewrote it since
    uint8_t route_state : 3 = 0;  // RouteState: the non-minimal modes' decision, as it goes
  };
  static constexpr uint32_t kNoHost24 = (1u << 24) - 1;
  static_assert(sizeof(FrameMeta) == FramePool::kMetaBytes);
  static_assert(std::is_trivially_copyable_v<FrameMeta>);
  static const FrameMeta kFreshMeta;  // a new slab's frames' metadata
  FrameMeta& meta(FrameId f) noexcept {
    return *std::launder(reinterpret_cast<FrameMeta*>(pool_.meta(f)));
  }
  const FrameMeta& meta(FrameId f) const noexcept {
    return *std::launder(reinterpret_cast<const FrameMeta*>(pool_.meta(f)));
  }
  EventQueue events_q_;
  Time now_ = 0;
  uint64_t events_ = 0;
  uint64_t control_events_ = 0;  // link changes scheduled from outside the loop: their keys
  struct NodeEntry {
    NodeKind kind;
    uint32_t index;
  };
  std::vector<NodeEntry> nodes_;
  std::string names_;                // every node's name, back to back
  std::vector<uint32_t> name_end_;   // by node: where its name ends in names_
  // Each node's ports, node by node (built by finalize() from Port::node): node n's are
  // node_ports_[port_first_[n], port_first_[n + 1]).
  std::vector<uint32_t> port_first_;
  std::vector<uint32_t> node_ports_;
  // By port. A rank of a split fabric stores only its own ports (set_partition): the others'
  // entries stay the kernel's untouched zero pages (sim/network_pages.h).
  std::vector<Port, PageAllocator<Port>> ports_;
  std::vector<uint32_t> port_node_;  // by port, its node (every port, on every rank)
  std::vector<bool> link_up_;        // by link, up (every link, on every rank: routes need it)
  std::vector<PortRareStats> rare_;  // by Port::rare
  RingPool<QueuedFrame> ring_pool_;  // the ports' queues' buffers
  // The links' configurations, each distinct one once (a fabric has a few: one per tier),
  // and by link its entry (ports 2i and 2i+1 are link i's two ends).
  std::vector<LinkConfig> link_classes_;
  std::vector<uint32_t> link_class_;
  static_assert(sizeof(LinkConfig) == 7 * sizeof(uint64_t));
  absl::flat_hash_map<std::array<uint64_t, 7>, uint32_t> link_class_index_;  // by its bytes
  uint32_t link_class_of(const LinkConfig& link);  // its entry, added if new
  // By port, while its data class is paused (sized at the first pause), and with the watchdog
  // on, by port and priority (sized likewise); zero until written, so only the pages of ports
  // that paused cost.
  std::vector<Time, PageAllocator<Time>> paused_since_;
  std::vector<PfcWatchState, PageAllocator<PfcWatchState>> pfc_watch_;
  std::vector<PfcDeadlock> pfc_deadlocks_;
  // Frames change lossless class at some hops (PFC on and routing's lossless classes more than
  // one): set by compute_routes, which then sizes classes_ (by port; zero pages until used).
  bool tagging_ = false;
  std::vector<PortClasses, PageAllocator<PortClasses>> classes_;
  uint32_t pfc_stormed_ = 0;  // ports whose queue the watchdog drops now
  uint64_t pfc_watch_events_ = 0;
  // A scaled (degraded) port's buffer limits and ECN thresholds, by port: the switch's
  // config scaled to the link's fraction of its rate, computed once when the rate changes
  // (kLinkRate), not per frame. Sized on the first scaled degradation; read only where
  // Port::scaled.
  struct ScaledLimits {
    uint64_t buffer_bytes;
    uint64_t control_buffer_bytes;
    EcnConfig ecn;
  };
  std::vector<ScaledLimits> scaled_;
  std::vector<std::unique_ptr<wire::PcapWriter>> taps_;  // by port, for ports with `tapped`
  std::vector<Host> hosts_;
  std::vector<Switch> switches_;
  // Which port a switch forwards a frame through, rebuilt by compute_routes(), and what it is
  // built from besides the ports.
  Routing routing_;
  RoutingConfig routing_config_;
  std::vector<uint32_t> switch_groups_;  // empty: every switch its own group
  std::vector<uint8_t> port_classes_;    // empty: none
  // Set by set_partition(): by node, the rank that runs it (empty: this process runs all).
  std::vector<uint16_t> rank_of_node_;
  uint16_t rank_ = 0;
  uint16_t ranks_ = 1;
  std::vector<std::vector<uint8_t>> outboxes_;  // by rank
  // Events for other ranks as sent, written out to outboxes_ by outboxes(): an arrival's
  // frame stays in the pool until then, so the copies of a window's frames run together,
  // prefetched, instead of one cache miss per frame in the middle of the event loop.
  struct RemoteEvent {
    Time time;
    uint64_t key;
    uint32_t port;
    uint32_t b;      // kPfc: priority | pause << 8; kCall: the cookie
    uint32_t frame;  // kArrive: the frame; kCall: the callback's number
    uint8_t kind;
  };
  std::vector<RemoteEvent> sent_;
  Time earliest_sent_ = kNever;
  uint64_t remote_records_ = 0;  // appended to outboxes, for WindowStats
  void write_out(const RemoteEvent& e, std::vector<uint8_t>& out);
  absl::Status deliver_one(std::span<const uint8_t> records, size_t& at);
  std::vector<Scheduled*> callbacks_;  // each target once
  absl::flat_hash_map<Scheduled*, uint32_t> callback_index_;
  Scheduled* last_callback_ = nullptr;
  uint32_t last_callback_index_ = 0;
  bool finalized_ = false;
};

}  // namespace uet::sim
