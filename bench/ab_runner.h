// The A/B runner's core: one scenario (fabric + workload) played on the simulator over one
// transport, returning the numbers the report compares. uet-ab runs it once per transport with
// the same seed, fabric and flows.
//
// Flows are RDMA WRITEs posted through the Endpoint API at their start time; a flow completes
// when the initiator's write completes (every byte acknowledged), so its FCT includes the
// return of the last ACK. Flows with prerequisites start when those complete.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/ab_paths.h"
#include "pathsel/config.h"
#include "sim/flow_stats.h"
#include "sim/network.h"
#include "sim/partition.h"
#include "sim/topology.h"
#include "sim/topology_graph.h"
#include "sim/workload.h"
#include "transport/api.h"
#include "transport/tss/sublayer.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::ab {

enum class TransportKind : uint8_t { kUet, kRocev2 };
const char* to_string(TransportKind t) noexcept;

struct Fabric {
  enum class Kind : uint8_t {
    kLeafSpine,
    kFatTree,
    kDragonfly,
    kDragonflyPlus,
    kTorus,
    kHypercube,
    kRail,
    kGraph
  } kind = Kind::kLeafSpine;
  // Leaf-spine.
  uint32_t leaves = 8;
  uint32_t spines = 4;
  uint32_t hosts_per_leaf = 16;
  // Fat-tree.
  uint32_t k = 8;
  // The AI/HPC families and a graph file (sim/topology.h, sim/topology_graph.h); their host
  // links are host_gbps and link_delay, their fabric links fabric_gbps and fabric_delay, a
  // dragonfly's (and Dragonfly+'s) global links core_gbps and core_delay.
  sim::DragonflyConfig dragonfly;                   // sizes only (p, a, h, g)
  sim::DragonflyPlusConfig dragonfly_plus;          // sizes only
  sim::TorusConfig torus;                           // sizes and wraparound
  sim::HypercubeConfig hypercube;                   // sizes only
  sim::RailConfig rail;                             // sizes and planes
  std::shared_ptr<const sim::GraphTopology> graph;  // kGraph: its links carry their own rates
  double host_gbps = 100;
  uint32_t hosts_per_tor = 0;  // fat-tree: 0 = k/2 (non-blocking)
  double fabric_gbps = 100;    // leaf-spine and ToR-aggregation links
  double core_gbps = 0;        // fat-tree aggregation-core links; 0 = fabric_gbps
  Time link_delay = 500 * kNanosecond;  // host links, and every tier without its own
  Time fabric_delay = -1;      // < 0: link_delay
  Time core_delay = -1;        // < 0: fabric delay
  double fabric_loss = 0;  // random loss on switch-to-switch links
  uint64_t buffer_bytes = 1024 * 1024;
  // The control class per switch port (trimmed headers, ACKs, NACKs): a header that finds it
  // full is dropped, and its NACK with it.
  uint64_t control_buffer_bytes = sim::SwitchConfig{}.control_buffer_bytes;
  bool ecn = true;
  uint64_t ecn_kmin_bytes = 100 * 1024;  // RED on the data-class queue: from kmin ...
  uint64_t ecn_kmax_bytes = 400 * 1024;  // ... rising to pmax below kmax, 1 from kmax
  double ecn_pmax = 0.2;
  bool trimming = true;   // UET runs only: RoCEv2 frames are never trimmed
  bool trim_last_half = false;  // sim::SwitchConfig::trim_last_half
  bool pfc = false;       // set per transport by the caller (RoCEv2 is deployed lossless)
  // PFC thresholds per ingress (sim::PfcConfig's defaults): with XOFF below ecn_kmin an
  // ingress pauses its upstream before the egress marks, and DCQCN hears little.
  uint64_t pfc_xoff_bytes = sim::PfcConfig{}.xoff_bytes;
  uint64_t pfc_xon_bytes = sim::PfcConfig{}.xon_bytes;
  // The switches' PFC watchdog (sim/pfc_watchdog.h), with PFC on. Reporting rather than SONiC's
  // drop, after 10 ms rather than its 200 ms (runs are shorter: the shortest a Broadcom ASIC's
  // watchdog takes, PicOS granularity 10 ms x 1): a run that deadlocks stops and says so.
  sim::PfcWatchdogConfig pfc_watchdog{true, 10 * kMillisecond, 10 * kMillisecond,
                                      sim::PfcWatchdogAction::kReport};
  uint32_t frame_capacity = 4096 + 256;  // smaller: payloads by length (large fabrics)
  // Failures: `failed_links` switch-to-switch links, picked by the run's seed, go down (both
  // directions) at `fail_at`, or run at `degrade` of their rate from then when degrade > 0.
  uint32_t failed_links = 0;
  double degrade = 0;
  Time fail_at = 0;
  // A degraded link's switch buffers and ECN thresholds shrink with its rate (the queue holds
  // as much time as a healthy one), as uet-htsim models a reduced-speed link; false keeps
  // the full-rate byte limits (a 10 % link then queues ten times as long).
  bool degrade_scales_queues = true;
  // Fat-tree and leaf-spine: the failed links are the top tier's links into the first
  // switches below it, in order (the first one's, then the next one's), and only their
  // downward direction fails, as uet-htsim's -failed places them (core -> agg 0's queues);
  // false: a seeded random pick, both directions.
  bool fail_downward_in_order = false;
  // Routing (sim/routing/routing.h), applied once the fabric is built (build_fabric): Valiant's
  // and UGAL's intermediates are a dragonfly's (or Dragonfly+'s) groups, on every other fabric
  // one switch each; dimension order on a torus or hypercube only.
  sim::RoutingConfig routing;
  // --deadlock_free=auto: a run with PFC on a torus or hypercube routed minimally takes
  // dimension-order routes, with the dateline's classes on a torus (routing_of).
  bool lossless_dimension_order = false;
};

// Where a run is, for a progress line.
struct Progress {
  Time sim_time = 0;
  uint64_t events = 0;
  size_t flows_done = 0, flows = 0;
  double wall_s = 0;   // since run() was called
  double setup_s = 0;  // of wall_s, building the fabric, endpoints and flows
  // Bytes the fabric has delivered to hosts (frames whole, ACKs too), and the flows' data
  // frames whole: a share of the work for runs whose flows all end together.
  uint64_t delivered_bytes = 0, total_bytes = 0;
  // What the simulator's work follows (events are per frame and hop): the frames every link
  // has carried, against the flows' data frames times the links of their paths; and the bytes
  // and frames hosts have sent, whose ratio to a full data frame tells how many more frames
  // (ACKs, resends) each data frame brings.
  uint64_t link_frames = 0, total_link_frames = 0;
  uint64_t sent_bytes = 0, sent_frames = 0, data_frame_bytes = 0;
};

// The builder's own check of the fabric's shape (sizes in range, at most kMaxHosts hosts),
// naming the family's field and range.
absl::Status check_fabric(const Fabric& f);

// The routes a run of `f` takes: f.routing, except that a lossless (PFC) run with
// lossless_dimension_order on a torus or hypercube routed minimally goes in dimension order
// (deadlock-free on a hypercube and a mesh; on a torus with the dateline's two classes), as
// lossless tori route (Dally and Seitz, IEEE TC 1987); a lossy run keeps every shortest path.
sim::RoutingConfig routing_of(const Fabric& f) noexcept;

// --topology's spelling of a kind.
const char* to_string(Fabric::Kind k) noexcept;

// Hosts, links per path and the one-way propagation of a path, for the fabric above.
uint32_t host_count(const Fabric& f) noexcept;
Time path_delay(const Fabric& f, uint32_t hops) noexcept;
// Switches, ports (two per link), switches with hosts, and the top-tier links that
// `failed_links` picks from (leaf-spine; a fat-tree's aggregation-core; a dragonfly's and
// Dragonfly+'s global links; a rail fabric's leaf-spine links; every switch-to-switch link of a
// torus, hypercube or graph), without building the fabric.
uint32_t switch_count(const Fabric& f) noexcept;
uint64_t port_count(const Fabric& f) noexcept;
uint32_t tor_count(const Fabric& f) noexcept;
uint32_t top_tier_links(const Fabric& f) noexcept;
// What those links are, as a refusal names them: "spine or core", "global", ...
const char* top_tier_name(const Fabric& f) noexcept;
// Links on a shortest path between hosts a and b (2 under one switch), built and searched
// for the families without a closed form; 0 when they have no path.
uint32_t host_path_links(const Fabric& f, uint32_t a, uint32_t b);

// What each flow is (uet-ab --verb). kWrite: an RDMA WRITE of its bytes. kSend: a message
// of its bytes matched at the destination, which posts its receive as the flow starts (UET: a
// tagged send, tag = the flow's id, into a tagged receive; RoCEv2: a SEND into the shared
// receive queue, as a provider carries tagged messages over RC). kAtomic: one fetching 64-bit
// add at the destination (UET FETCHING_ATOMIC SUM, RoCEv2 FETCH_ADD), its bytes ignored.
enum class Verb : uint8_t { kWrite, kSend, kAtomic };
const char* to_string(Verb v) noexcept;

struct RunConfig {
  std::string scenario;
  Verb verb = Verb::kWrite;
  Fabric fabric;
  std::vector<sim::FlowSpec> flows;
  TransportKind transport = TransportKind::kUet;
  uint64_t seed = 1;
  Time max_time = kSecond;   // simulated time limit
  uint32_t mtu = 4096;       // payload bytes per packet
  std::string dcqcn_preset = "htsim";  // RoCEv2: DcqcnConfig::preset() name
  uint16_t uet_evs = 32;     // UET: EVs sprayed over (1 = a fixed path, as RoCEv2)
  pathsel::Algorithm uet_lb = pathsel::Algorithm::kReps;  // UET: how EVs are chosen
  CcMode uet_cc = CcMode::kNscc;  // UET: NSCC, RCCC or both (RoCEv2 runs DCQCN)
  DeliveryMode uet_mode = DeliveryMode::kRud;  // UET: the flows' WRITEs go RUD or ROD
  // UET, --verb=send: tagged sends longer than this go by rendezvous (the destination READs
  // all but the first packet; UetConfig::rendezvous_bytes). 0: every send eager.
  uint64_t uet_rendezvous_bytes = 0;
  // UET, --verb=send: tagged sends are deferrable (spec/uet.md §4.2): one that finds no
  // receive is deferred without its bytes and restarted when the receive comes.
  bool uet_deferrable = false;
  // UET: RACK infers losses from the SACKs (UetConfig::rack); false: NACKs, probe and RTO only.
  bool uet_rack = true;
  // UET: the target ACKs an out-of-order request at once (UetConfig::ack_out_of_order);
  // false: it coalesces, as uet-htsim's sink.
  bool uet_ack_ooo = true;
  // UET: the RTO estimate's floor (UetConfig::min_rto), the first RTO at least this; 0: the
  // engine's.
  Time uet_min_rto = 0;
  // --verb=send: the destination posts each flow's receive this long after the send starts
  // (0: as it starts), as a late application would.
  Time recv_delay = 0;
  // UET: every host seals its frames (TSS, spec/uet.md §5) in one secure domain, and its NIC
  // is busy tss_cost longer per frame (sealing in software, or a crypto engine's rate).
  bool uet_tss = false;
  sim::HostCost tss_cost;
  // The secure domains every host has (a key file's, tss::read_key_file), sending in the
  // first one under AN 0; empty: one domain with a key drawn from the seed.
  std::vector<tss::DomainConfig> tss_domains;
  tss::Backend tss_backend = tss::Backend::kAuto;  // the AES-256-GCM library the hosts seal with
  // When set: pcaps of everything host 0 sends and receives, PREFIX_h0_tx.pcap / _h0_rx.pcap.
  std::string pcap_prefix;
  // When > 0: sample the fabric this often (RunResult::series), for throughput and queue plots.
  Time sample_every = 0;
  // When set: RunResult::paths counts the flows that crossed each link, tier by tier
  // (bench/ab_paths.h), from the data frames each host sent.
  bool path_report = false;
  // Called between slices of simulated time (at least every 100 us of it) and, in one process,
  // within them, about every quarter second of wall time.
  std::function<void(const Progress&)> progress;
  // When set and true, the run stops at the next slice and returns what it has (interrupted).
  // Split over ranks, a stop asked on any rank stops them all.
  const std::atomic<bool>* stop = nullptr;
  // The processes the fabric is split over (sim/partition.h); null: set_default_ranks()'s, or
  // this process alone. Every rank calls run() with the same configuration and gets the same
  // result, the one one process would give.
  sim::Ranks* ranks = nullptr;
};

// The fabric at one instant of a run (RunConfig::sample_every).
struct Sample {
  Time t = 0;
  double delivered_gbps = 0;     // bytes the fabric delivered to hosts since the last sample
  uint64_t max_queue_bytes = 0;  // the fullest switch port's queue at `t`
  uint64_t queued_bytes = 0;     // every switch port's queue at `t`, summed
};

struct RunResult {
  std::string scenario;
  TransportKind transport;
  sim::FlowStats flows;
  std::vector<sim::FlowRecord> records;  // per flow id: start, finish, bytes
  sim::PortSummary ports;
  EndpointStats endpoints;  // summed over hosts
  // UET's datagram modes, summed over hosts (zero under RUD/ROD and RoCEv2): RUDI packets sent,
  // resent and executed at targets (duplicates included); UUD datagrams sent and delivered.
  struct {
    uint64_t rudi_sent = 0, rudi_resent = 0, rudi_executed = 0;
    uint64_t uud_sent = 0, uud_delivered = 0;
  } datagrams;
  // UET's resends by what asked for them, summed over hosts: a NACK (a trimmed packet's,
  // ...), RACK's inference from the SACKs, a tail-loss probe, the RTO (one a PSN); and the
  // trimmed requests the targets NACKed. Zero under RoCEv2.
  struct {
    uint64_t nack = 0, rack = 0, tlp = 0, rto = 0, trimmed_rx = 0;
  } uet_resends;
  uint64_t failed = 0;      // writes that completed with an error
  // The routes the run took: its fabric's routing (routing_of), as the network applied it.
  sim::RoutingConfig routing;
  // Connections the hosts set up, summed over hosts: RoCEv2 QPs (one at each end per host
  // pair and FlowSpec::channel), UET PDCs (one at each end per host pair and direction that
  // writes, whatever the channels).
  uint64_t connections = 0;
  // Ports of top-tier links (leaf-spine; a fat-tree's aggregation-core), two per link, and
  // those that sent any frame: how widely the run spread over the fabric's paths.
  uint32_t top_ports = 0, top_ports_used = 0;
  uint64_t events = 0;
  Time sim_time = 0;
  double wall_s = 0;
  size_t hosts = 0;
  std::vector<Sample> series;
  PathReport paths;  // RunConfig::path_report; empty otherwise
  bool interrupted = false;  // stopped through RunConfig::stop before every flow completed
  // The PFC watchdog, summed over ranks: pauses that outlasted its detection time, frames its
  // drop action discarded, deadlocks it found and the first one's time (kNever: none). With
  // its action report the run stops at the first deadlock (`deadlocked`).
  struct {
    uint64_t firings = 0, drops = 0, deadlocks = 0;
    Time first_deadlock = kNever;
    bool deadlocked = false;
  } pfc;
  // Split over ranks: how (never in the results files, which must not depend on it).
  struct {
    uint16_t ranks = 1;
    uint64_t windows = 0;  // windows each rank ran (each ends with one exchange)
    uint64_t records = 0;  // events sent between ranks (frames, PFC frames, notices)
    uint64_t bytes = 0;
    Time lookahead = 0;    // the smallest delay of a link between two ranks
    // Wall seconds, the largest over the ranks: set-up, running events, exchanging (waiting
    // for the slowest rank included), scheduling what arrived.
    std::array<double, 4> most_s{};
  } split;
};

// Bytes a data frame adds to its payload on the wire (headers, FCS, preamble and gap), and
// the payload rate a host link carries at most with full frames of `mtu`, in GB/s.
uint32_t frame_overhead(TransportKind t) noexcept;
double payload_bound_gbytes(const RunConfig& c) noexcept;

// What run() refuses before it simulates: the fabric's shape, failed_links beyond the top
// tier, a flow naming a host the fabric lacks, a transport configuration its engine refuses.
absl::Status validate(const RunConfig& config);

// Builds the fabric, the endpoints and the flows, runs to completion (or max_time), collects.
absl::StatusOr<RunResult> run(const RunConfig& config);

// The ranks a run whose RunConfig::ranks is null is split over (uet-ab: mpirun's).
void set_default_ranks(sim::Ranks* ranks) noexcept;

// First in a tool's main(): starts the ranks (sim/mpi_ranks.h); when there are several, makes
// them every run's default and sends every rank's stdout but rank 0's to /dev/null (the
// others run the same code, so that every rank makes the same collective calls).
absl::StatusOr<std::unique_ptr<sim::Ranks>> start_tool_ranks(int* argc, char*** argv);

}  // namespace uet::ab
