#include "bench/ab_runner.h"

#include <algorithm>
#include <span>
#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/ab_engines.h"
#include "bench/ab_fabric.h"
#include "bench/ab_player.h"
#include "bench/ab_ranks.h"
#include "sim/partition.h"
#include "sim/rng.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::ab {

const char* to_string(TransportKind t) noexcept {
  return t == TransportKind::kUet ? "uet" : "rocev2";
}

const char* to_string(Verb v) noexcept {
  return v == Verb::kWrite ? "write" : v == Verb::kSend ? "send" : "atomic";
}

namespace {

// The longest frame of a run whose flows are WRITEs (in any delivery mode) on Ethernet, IPv4
// and UDP: UET's request (RUD_CC, SES standard header: 102 bytes; an ACK_CCX with a response
// with data is as long, spec/uet.md §3.9, §4.7), RoCEv2's WRITE with RETH and ImmDt and
// its ICRC (78).
constexpr uint32_t write_header_bytes(TransportKind t) noexcept {
  constexpr size_t kEncap = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize;
  if (t == TransportKind::kRocev2) {
    return static_cast<uint32_t>(kEncap + wire::Bth::kSize + wire::Reth::kSize +
                                 wire::ImmDt::kSize + wire::kIcrcSize);
  }
  return static_cast<uint32_t>(
      kEncap + std::max(wire::PdsRudRodCc::kSize + wire::SesStandardRequest::kSize,
                        wire::PdsAckCcx::kSize + wire::SesResponseData::kSize));
}
static_assert(write_header_bytes(TransportKind::kUet) == 102);
static_assert(write_header_bytes(TransportKind::kRocev2) == 78);

// The longest header stack a run's engines write (its payloads past the frame go by length):
// RoCEv2's WRITE (above) or its longest (an atomic request); UET's request for the run's verb
// (RUD_CC with RCCC; a rendezvous send's extension §4.5.3; the atomic extension and one
// uint64 operand §4.5.1, ab_player's kSum) or a READ's response with data (§3.9, §4.7),
// whichever is longer, and TSS's header and tag when sealing (§5.1).
uint32_t run_header_bytes(const RunConfig& rc) {
  if (rc.transport == TransportKind::kRocev2) {
    return rc.verb == Verb::kWrite ? write_header_bytes(rc.transport)
                                   : RoceEndpoint::kMaxHeaderBytes;
  }
  const UetConfig c = uet_config(rc, 0);
  size_t ext = 0;
  if (rc.verb == Verb::kSend && c.rendezvous_bytes > 0) ext = wire::SesRendezvous::kSize;
  if (rc.verb == Verb::kAtomic) ext = wire::SesAtomic::kSize + sizeof(uint64_t);
  const size_t pds = c.cc == CcMode::kNscc ? wire::PdsRudRod::kSize : wire::PdsRudRodCc::kSize;
  const size_t request = pds + wire::SesStandardRequest::kSize + ext;
  constexpr size_t kResponse = wire::PdsAckCcx::kSize + wire::SesResponseData::kSize;
  constexpr size_t kEncap = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize;
  return static_cast<uint32_t>(kEncap + std::max(request, kResponse)) + c.tss_bytes();
}

sim::NetworkConfig network_config(const RunConfig& rc, bool split) {
  sim::NetworkConfig nc;
  nc.seed = rc.seed;
  nc.frame_capacity = rc.fabric.frame_capacity;
  // A fabric that keeps headers only (128 bytes: UET's longest stack) gives each run frames of
  // its own transport's and verb's longest stack (engines refuse a frame too small, never cut
  // one): RoCEv2 a multiple of 32 bytes, and a WRITE run a multiple of 8.
  if (nc.frame_capacity == 128) {
    if (rc.verb == Verb::kWrite) {
      nc.frame_capacity = (write_header_bytes(rc.transport) + 7) / 8 * 8;
    } else if (rc.transport == TransportKind::kRocev2) {
      nc.frame_capacity = (RoceEndpoint::kMaxHeaderBytes + 31) / 32 * 32;
    }
  }
  nc.switches.buffer_bytes = rc.fabric.buffer_bytes;
  nc.switches.control_buffer_bytes = rc.fabric.control_buffer_bytes;
  nc.switches.ecn.enabled = rc.fabric.ecn;
  nc.switches.ecn.kmin_bytes = rc.fabric.ecn_kmin_bytes;
  nc.switches.ecn.kmax_bytes = rc.fabric.ecn_kmax_bytes;
  nc.switches.ecn.pmax = rc.fabric.ecn_pmax;
  nc.switches.trimming = rc.fabric.trimming && rc.transport == TransportKind::kUet;
  nc.switches.trim_last_half = rc.fabric.trim_last_half;
  nc.switches.pfc.enabled = rc.fabric.pfc;
  nc.switches.pfc.xoff_bytes = rc.fabric.pfc_xoff_bytes;
  nc.switches.pfc.xon_bytes = rc.fabric.pfc_xon_bytes;
  nc.switches.pfc.watchdog = rc.fabric.pfc_watchdog;
  if (rc.uet_tss && rc.transport == TransportKind::kUet) nc.host_cost = rc.tss_cost;
  nc.ports_at_partition = split;  // Run::partition stores this rank's ports, no others
  return nc;
}

// One run on this rank: the state its phases share, in the order they build it (and tear it
// down in reverse). run() below calls the phases in order.
class Run {
 public:
  using Clock = std::chrono::steady_clock;
  Run(const RunConfig& rc, sim::Ranks& ranks, Clock::time_point t0)
      : rc_(rc), ranks_(ranks), split_(ranks.size() > 1), t0_(t0), net_(network_config(rc, split_)) {}

  // The fabric, its split over ranks, its failed links, the payload buffers and the endpoint
  // of every host this rank runs.
  absl::Status build();
  // RoCEv2's QPs, the player and the hosts' adapters, host 0's taps; the first flows start.
  absl::Status connect();
  // Slices of simulated time until every flow completes, max_time, or a stop.
  void drive();
  // Every rank's records and counters, summed into the result.
  absl::StatusOr<RunResult> collect();

 private:
  struct Free {
    void operator()(uint8_t* p) const noexcept { std::free(p); }
  };
  // RoCEv2's RC QPs: one pair per communicating pair of hosts and channel (FlowSpec::channel,
  // as NCCL opens a connection per channel), in the order the flows first name them.
  struct QpPair {
    uint32_t a, b;
    uint16_t channel;
  };

  absl::Status partition();
  absl::Status fail_links();
  absl::Status allocate_buffers();
  void plan_connections();
  absl::Status create_endpoints();
  absl::Status connect_qps();
  bool run_slice(Time until);
  bool run_watched(Time until);
  // What the fabric has carried (Progress).
  std::array<uint64_t, 4> carried() const;
  Sample sample(Time from, Time until);
  void report_progress(size_t completed, uint64_t events, std::array<uint64_t, 4> carried) const;
  absl::StatusOr<sim::FlowStats> flow_stats() const;
  void sum_counters(RunResult& r);
  void sum_pfc_watchdog(RunResult& r);
  bool top_link(uint32_t port) const {
    return failure_candidate(rc_.fabric, net_, layout_, first_top_, port);
  }

  const RunConfig& rc_;
  sim::Ranks& ranks_;
  // Over ranks: every rank builds the whole fabric's graph and routes, stores its own ports
  // and endpoints only, and runs its part.
  const bool split_;
  const Clock::time_point t0_;
  sim::Network net_;
  uint32_t hosts_ = 0;
  Time lookahead_ = kNever;
  uint32_t first_top_ = 0;      // leaf-spine and fat-tree: the first top-tier switch
  sim::TopologyLayout layout_;  // the other families': their switches' groups
  std::optional<IdealPaths> paths_;
  uint64_t max_bytes_ = 8;  // at least an atomic's operand
  std::unique_ptr<uint8_t, Free> src_, dst_;
  std::vector<QpPair> qp_pairs_;
  std::vector<uint32_t> qps_;
  // UET: the PDCs each host opens, to the peers it writes to and from those writing to it.
  // One per host pair whatever the flows' channels: spec/uet.md §2.4, a PDC joins two fabric
  // endpoints and sprays its packets over EVs itself, so channels need no PDC of their own.
  std::vector<uint32_t> pdcs_;
  std::vector<std::unique_ptr<Endpoint>> eps_;
  uint32_t rkey_ = 0;
  std::optional<Player> player_;
  std::vector<HostAdapter> adapters_;  // reserved once: the network holds their addresses
  std::optional<PathLog> path_log_;    // RunConfig::path_report: the recorders' log
  std::vector<PathRecorder> recorders_;  // reserved once, as adapters_
  std::vector<Sample> series_;
  uint64_t delivered_before_ = 0;
  sim::WindowStats windows_;
  bool stopped_ = false;
  double setup_s_ = 0;        // wall time before the first slice
  uint64_t total_bytes_ = 0;  // the flows' data frames on the wire
  uint64_t total_link_frames_ = 0;  // the flows' data frames times the links of their paths
  Time step_ = kMicrosecond;  // run_watched's sub-slice, grown or shrunk to its wall time
  bool deadlocked_ = false;  // stopped at a PFC deadlock the watchdog reported
};

absl::Status Run::build() {
  if (absl::Status s = build_fabric(net_, rc_.fabric, &layout_); !s.ok()) return s;
  hosts_ = static_cast<uint32_t>(net_.num_hosts());
  auto paths = IdealPaths::compute(rc_.fabric, net_, rc_.flows);
  if (!paths.ok()) return paths.status();
  paths_.emplace(std::move(*paths));
  if (absl::Status s = partition(); !s.ok()) return s;
  // The top tier's switches (spines; a fat-tree's cores) are built last (sim/topology.cc), so
  // they are the last `top` switch numbers. A top-tier link joins one of them to a switch.
  if (rc_.fabric.kind == Fabric::Kind::kLeafSpine || rc_.fabric.kind == Fabric::Kind::kFatTree) {
    const uint32_t top = rc_.fabric.kind == Fabric::Kind::kLeafSpine
                             ? rc_.fabric.spines
                             : (rc_.fabric.k / 2) * (rc_.fabric.k / 2);
    first_top_ = static_cast<uint32_t>(net_.num_switches()) - top;
  }
  if (absl::Status s = fail_links(); !s.ok()) return s;
  if (absl::Status s = allocate_buffers(); !s.ok()) return s;
  plan_connections();
  return create_endpoints();
}

absl::Status Run::partition() {
  if (split_ && rc_.verb == Verb::kSend) {
    return absl::InvalidArgumentError(
        "--verb=send runs in one process: a flow's receive is posted at its destination as the "
        "sender starts (use write or atomic over ranks)");
  }
  if (!split_) return absl::OkStatus();
  auto fs = sim::split_fabric(net_, ranks_.size(), layout_.group);
  if (!fs.ok()) return fs.status();
  lookahead_ = fs->lookahead;
  return net_.set_partition(std::move(fs->rank_of_node), ranks_.rank(), ranks_.size());
}

absl::Status Run::fail_links() {
  if (rc_.fabric.failed_links == 0) return absl::OkStatus();
  // Every top-tier link once (leaf-spine links; aggregation-core links of a fat-tree), by
  // its lower-numbered port, in a seeded random order.
  std::vector<uint32_t> links;
  for (uint32_t p = 0; p < net_.num_ports(); ++p) {
    if (p < sim::Network::peer_of(p) && top_link(p)) links.push_back(p);
  }
  if (rc_.fabric.failed_links > links.size()) {
    return absl::InvalidArgumentError(absl::StrCat("failed_links ", rc_.fabric.failed_links,
                                                   ": the fabric has ", links.size(), " top-tier (",
                                                   top_tier_name(rc_.fabric), ") links"));
  }
  if (rc_.fabric.fail_downward_in_order) {
    if (split_) {
      return absl::InvalidArgumentError("failures placed in order run in one process");
    }
    // Each link by its top end's port, ordered by the switch below, then the one above.
    for (uint32_t& p : links) {
      if (net_.port(p).owner < first_top_) p = sim::Network::peer_of(p);
    }
    auto below_above = [&](uint32_t p) {
      return std::pair{net_.port(sim::Network::peer_of(p)).owner, net_.port(p).owner};
    };
    std::sort(links.begin(), links.end(),
              [&](uint32_t a, uint32_t b) { return below_above(a) < below_above(b); });
  }
  sim::Rng pick(rc_.seed ^ 0xFA11ED);
  for (size_t i = 0; i < rc_.fabric.failed_links; ++i) {
    if (!rc_.fabric.fail_downward_in_order) {
      std::swap(links[i], links[i + pick.next() % (links.size() - i)]);
    }
    const uint32_t ends = rc_.fabric.fail_downward_in_order ? 1 : 2;
    const uint32_t both[2] = {links[i], sim::Network::peer_of(links[i])};
    for (const uint32_t p : std::span(both, ends)) {
      if (rc_.fabric.degrade > 0) {
        net_.set_link_rate(p, rc_.fabric.degrade, rc_.fabric.fail_at, rc_.fabric.degrade_scales_queues);
      } else {
        net_.set_link_up(p, false, rc_.fabric.fail_at);
      }
    }
  }
  return absl::OkStatus();
}

// One source buffer read by every sender and one target region written by every receiver:
// the A/B compares timing, not bytes (the integrity tests do that). With small frames the
// payload is never touched at all.
absl::Status Run::allocate_buffers() {
  for (const sim::FlowSpec& f : rc_.flows) max_bytes_ = std::max(max_bytes_, f.bytes);
  // calloc'd: zero pages the kernel backs only where they are written, so a large flow costs
  // memory only for the bytes the target places.
  src_.reset(static_cast<uint8_t*>(std::calloc(max_bytes_, 1)));
  dst_.reset(static_cast<uint8_t*>(std::calloc(max_bytes_, 1)));
  if (src_ == nullptr || dst_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate 2 x ", max_bytes_, " bytes"));
  }
  return absl::OkStatus();
}

// Distinct pairs found by sorting flat keys, not by a hash map: a few bytes per flow, once.
void Run::plan_connections() {
  qps_.assign(hosts_, 0);
  pdcs_.assign(hosts_, 0);
  if (rc_.transport == TransportKind::kUet) {
    std::vector<uint64_t> pairs;
    pairs.reserve(rc_.flows.size());
    for (const sim::FlowSpec& f : rc_.flows) {
      if (!f.compute) pairs.push_back(uint64_t{f.src} << 32 | f.dst);
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    for (uint64_t p : pairs) {
      ++pdcs_[p >> 32];
      ++pdcs_[static_cast<uint32_t>(p)];
    }
    return;
  }
  // RoCEv2: each (pair, channel) once, in the order the flows first name it (the PSN draws
  // follow that order): sorted by key and flow, the first of each key kept, then by flow.
  struct Named {
    uint64_t pair;
    uint16_t channel;
    uint32_t flow;
  };
  std::vector<Named> named;
  named.reserve(rc_.flows.size());
  for (uint32_t i = 0; i < rc_.flows.size(); ++i) {
    const sim::FlowSpec& f = rc_.flows[i];
    if (f.compute) continue;
    const uint32_t a = std::min(f.src, f.dst), b = std::max(f.src, f.dst);
    named.push_back({uint64_t{a} << 32 | b, f.channel, i});
  }
  const auto key = [](const Named& x) { return std::pair(x.pair, x.channel); };
  std::sort(named.begin(), named.end(), [&](const Named& x, const Named& y) {
    return std::tuple(x.pair, x.channel, x.flow) < std::tuple(y.pair, y.channel, y.flow);
  });
  named.erase(std::unique(named.begin(), named.end(),
                          [&](const Named& x, const Named& y) { return key(x) == key(y); }),
              named.end());
  std::sort(named.begin(), named.end(),
            [](const Named& x, const Named& y) { return x.flow < y.flow; });
  qp_pairs_.reserve(named.size());
  for (const Named& n : named) {
    const auto a = static_cast<uint32_t>(n.pair >> 32), b = static_cast<uint32_t>(n.pair);
    qp_pairs_.push_back({a, b, n.channel});
    ++qps_[a];
    ++qps_[b];
  }
}

absl::Status Run::create_endpoints() {
  // UET hosts differ in address and seed, and in their PDC table when a workload needs more
  // than the default: one shared config per table size.
  std::vector<std::pair<uint32_t, std::shared_ptr<const UetShared>>> shared;
  for (uint32_t h = 0; h < hosts_; ++h) {
    if (!net_.owns_host(h)) {  // another rank's
      eps_.push_back(nullptr);
      continue;
    }
    if (rc_.transport == TransportKind::kUet) {
      const UetConfig c = uet_config(rc_, h, pdcs_[h]);
      auto s = std::find_if(shared.begin(), shared.end(),
                            [&](const auto& x) { return x.first == c.max_pdcs; });
      if (s == shared.end()) {
        auto made = UetShared::create(c);
        if (!made.ok()) return made.status();
        s = shared.insert(shared.end(), {c.max_pdcs, std::move(*made)});
      }
      auto ep = UetEndpoint::create(s->second, UetHost{c.local_ip4, c.local_mac, c.seed});
      if (!ep.ok()) return ep.status();
      eps_.push_back(std::move(*ep));
    } else {
      auto c = roce_config(rc_, h, qps_[h]);
      if (!c.ok()) return c.status();
      auto ep = RoceEndpoint::create(*c);
      if (!ep.ok()) return ep.status();
      eps_.push_back(std::move(*ep));
    }
    auto key = eps_.back()->register_memory(dst_.get(), max_bytes_);
    if (!key.ok()) return key.status();
    rkey_ = *key;  // the same on every host: the first region
  }
  return absl::OkStatus();
}

absl::Status Run::connect() {
  if (rc_.transport == TransportKind::kRocev2) {
    if (absl::Status s = connect_qps(); !s.ok()) return s;
  }
  const bool uet = rc_.transport == TransportKind::kUet;
  player_.emplace(net_, rc_.flows, eps_, src_.get(), dst_.get(), max_bytes_, rkey_,
                  uet ? rc_.uet_mode : DeliveryMode::kRud, rc_.verb, rc_.recv_delay, uet,
                  uet && rc_.uet_deferrable,
                  [&paths = *paths_](uint32_t a, uint32_t b) { return paths.propagation(a, b); });
  adapters_.reserve(hosts_);
  if (rc_.path_report) {
    // A path per flow and EV at most; reserved up to a million (it grows past that).
    path_log_.emplace(std::min<size_t>(rc_.flows.size() * (uet ? rc_.uet_evs : 1), size_t{1} << 20));
    recorders_.reserve(hosts_);
  }
  for (uint32_t h = 0; h < hosts_; ++h) {
    if (eps_[h] == nullptr) continue;
    adapters_.emplace_back(&*player_, eps_[h].get());
    Transport* t = &adapters_.back();
    if (path_log_) t = &recorders_.emplace_back(t, h, &*path_log_);
    net_.attach(h, t);
  }
  if (!rc_.pcap_prefix.empty() && net_.owns_host(0)) {
    const uint32_t nic = net_.host(0).port;
    if (absl::Status s = net_.tap(nic, rc_.pcap_prefix + "_h0_tx.pcap"); !s.ok()) return s;
    if (absl::Status s = net_.tap(net_.port(nic).peer, rc_.pcap_prefix + "_h0_rx.pcap"); !s.ok()) return s;
  }
  player_->schedule_initial();
  return absl::OkStatus();
}

// RC needs its QPs connected out of band. Channel 0's QPs draw their start PSNs from the
// run's seed in the order they always did; other channels' from a stream of their own, so
// adding channels leaves channel 0's draws as they were.
absl::Status Run::connect_qps() {
  std::vector<uint32_t> next_qp(hosts_, 0);
  sim::Rng rng(rc_.seed);
  sim::Rng rng_channels(rc_.seed ^ 0xC4A2'2E15'0000'0000ULL);
  for (const auto& [a, b, channel] : qp_pairs_) {
    auto* ea = static_cast<RoceEndpoint*>(eps_[a].get());
    auto* eb = static_cast<RoceEndpoint*>(eps_[b].get());
    const uint32_t qa = 0x100 + next_qp[a]++, qb = 0x100 + next_qp[b]++;
    sim::Rng& psns = channel == 0 ? rng : rng_channels;
    const auto pa = static_cast<uint32_t>(psns.next() & 0xFFFFFF);
    const auto pb = static_cast<uint32_t>(psns.next() & 0xFFFFFF);
    if (ea != nullptr) {  // null: another rank's host (its rank draws the same PSNs)
      if (absl::Status s = ea->connect_qp(sim::Network::host_ip4(b), qa, qb, pa, pb, channel);
          !s.ok()) {
        return s;
      }
    }
    if (eb != nullptr) {
      if (absl::Status s = eb->connect_qp(sim::Network::host_ip4(a), qb, qa, pb, pa, channel);
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

// Run in slices so a finished workload stops the clock (and, when asked, to sample). Split
// over ranks, every rank decides from the same sums: flows done, a stop asked anywhere.
void Run::drive() {
  const Time slice = rc_.sample_every > 0 ? rc_.sample_every : 100 * kMicrosecond;
  Time sampled_at = 0;
  setup_s_ = std::chrono::duration<double>(Clock::now() - t0_).count();
  if (rc_.progress) {  // the flows' data frames whole, as the links count them
    const uint64_t overhead = frame_overhead(rc_.transport);
    for (const sim::FlowSpec& f : rc_.flows) {
      if (f.compute) continue;
      const uint64_t frames = std::max<uint64_t>(1, (f.bytes + rc_.mtu - 1) / rc_.mtu);
      total_bytes_ += f.bytes + frames * overhead;
      total_link_frames_ += frames * paths_->links(f.src, f.dst);
    }
  }
  for (;;) {
    const bool stop = rc_.stop != nullptr && rc_.stop->load(std::memory_order_relaxed);
    const std::array<uint64_t, 4> c = rc_.progress ? carried() : std::array<uint64_t, 4>{};
    std::array<uint64_t, 8> g{player_->completed(), stop ? 1u : 0u, net_.events_processed(),
                              net_.pfc_deadlocks().size(), c[0], c[1], c[2], c[3]};
    ranks_.sum_all(g);
    const size_t completed = g[0];
    report_progress(completed, g[2], {g[4], g[5], g[6], g[7]});
    if (completed == rc_.flows.size() || net_.now() >= rc_.max_time) break;
    // A deadlock the watchdog only reports never clears: nothing more to learn from the run.
    if (g[3] != 0 && rc_.fabric.pfc_watchdog.action == sim::PfcWatchdogAction::kReport) {
      deadlocked_ = true;
      break;
    }
    if (g[1] != 0) {
      stopped_ = true;
      break;
    }
    const Time until = std::min(sampled_at + slice, rc_.max_time);
    if (!run_slice(until)) {
      stopped_ = true;
      break;
    }
    if (rc_.sample_every <= 0) {
      sampled_at = std::max(until, net_.now());
      continue;
    }
    series_.push_back(sample(sampled_at, until));
    sampled_at = until;
  }
}

void Run::report_progress(size_t completed, uint64_t events,
                          std::array<uint64_t, 4> carried) const {
  if (!rc_.progress || net_.now() <= 0 || ranks_.rank() != 0) return;
  Progress p;
  p.sim_time = net_.now();
  p.events = events;
  p.flows_done = completed;
  p.flows = rc_.flows.size();
  p.wall_s = std::chrono::duration<double>(Clock::now() - t0_).count();
  p.setup_s = setup_s_;
  p.delivered_bytes = carried[0];
  p.total_bytes = total_bytes_;
  p.sent_bytes = carried[1];
  p.sent_frames = carried[2];
  p.link_frames = carried[3];
  p.total_link_frames = total_link_frames_;
  p.data_frame_bytes = rc_.mtu + frame_overhead(rc_.transport);
  rc_.progress(p);
}

// Over this rank's hosts and ports: bytes delivered to hosts, bytes and frames hosts sent,
// frames every port sent.
std::array<uint64_t, 4> Run::carried() const {
  std::array<uint64_t, 4> sum{};
  for (uint32_t h = 0; h < hosts_; ++h) {
    if (!net_.owns_host(h)) continue;
    const sim::Port& out = net_.port(net_.host(h).port);
    sum[0] += net_.port(out.peer).stats.tx_bytes;
    sum[1] += out.stats.tx_bytes;
    sum[2] += out.stats.tx_frames;
  }
  for (uint32_t p = 0; p < net_.num_ports(); ++p) {
    if (net_.owns_port(p)) sum[3] += net_.port(p).stats.tx_frames;
  }
  return sum;
}

// False: stopped (over ranks, a stop on any rank ends the slice early on all: mpirun gives a
// rank one second between SIGTERM and SIGKILL).
bool Run::run_slice(Time until) {
  if (split_) return sim::run_windows(net_, ranks_, lookahead_, until, &windows_, rc_.stop);
  if (rc_.progress) return run_watched(until);
  net_.run_until(until);
  return true;
}

// One process with a progress line: the slice in sub-slices of about a quarter second of wall
// each (a large fabric's 100 us slice takes minutes), reporting once a second and heeding a
// stop after each. Where run_until stops changes nothing: events pop in (time, key) order.
bool Run::run_watched(Time until) {
  constexpr double kShortest = 0.1, kLongest = 0.4;  // seconds of wall per sub-slice
  auto last_report = Clock::now();
  while (net_.now() < until) {
    const auto w0 = Clock::now();
    net_.run_until(std::min(until, net_.now() + step_));
    const auto w1 = Clock::now();
    const double took = std::chrono::duration<double>(w1 - w0).count();
    if (took < kShortest && step_ < 100 * kMicrosecond) step_ *= 2;
    if (took > kLongest && step_ > kNanosecond) step_ /= 2;
    if (rc_.stop != nullptr && rc_.stop->load(std::memory_order_relaxed)) return false;
    if (std::chrono::duration<double>(w1 - last_report).count() >= 1) {
      last_report = w1;
      report_progress(player_->completed(), net_.events_processed(), carried());
    }
  }
  return true;
}

// The fabric at `until`, and what it delivered to hosts since `from`.
Sample Run::sample(Time from, Time until) {
  Sample s;
  s.t = until;
  std::array<uint64_t, 2> sums{0, 0};  // delivered, queued
  std::array<uint64_t, 1> most{0};
  for (uint32_t h = 0; h < hosts_; ++h) {
    if (net_.owns_host(h)) sums[0] += net_.port(net_.port(net_.host(h).port).peer).stats.tx_bytes;
  }
  for (uint32_t p = 0; p < net_.num_ports(); ++p) {
    if (!net_.owns_port(p)) continue;
    const sim::Port& port = net_.port(p);
    if (port.at_host) continue;
    uint64_t q = 0;
    for (uint64_t b : port.queued_bytes) q += b;
    most[0] = std::max(most[0], q);
    sums[1] += q;
  }
  ranks_.sum_all(sums);
  ranks_.max_all(most);
  s.max_queue_bytes = most[0];
  s.queued_bytes = sums[1];
  s.delivered_gbps = static_cast<double>(sums[0] - delivered_before_) * 8e3 /
                     static_cast<double>(until - from);
  delivered_before_ = sums[0];
  return s;
}

absl::StatusOr<RunResult> Run::collect() {
  if (split_) merge_ranks(ranks_, net_, player_->records());
  RunResult r;
  r.scenario = rc_.scenario;
  r.transport = rc_.transport;
  r.routing = net_.routing().config();
  r.hosts = hosts_;
  auto flows = flow_stats();
  if (!flows.ok()) return flows.status();
  r.flows = *flows;
  r.records = player_->take_records();  // moved, not copied: the player is done
  r.ports = split_ ? port_summary_ranks(ranks_, net_, net_.now())
                  : sim::port_summary(net_, net_.now());
  for (uint32_t h = 0; h < hosts_; ++h)
    r.connections += rc_.transport == TransportKind::kUet ? pdcs_[h] : qps_[h];
  std::array<uint64_t, 1> used{0};  // this rank's ports: another's count there
  for (uint32_t p = 0; p < net_.num_ports(); ++p) {
    if (!top_link(p)) continue;
    ++r.top_ports;
    if (net_.owns_port(p) && net_.port(p).stats.tx_bytes > 0) ++used[0];
  }
  ranks_.sum_all(used);
  r.top_ports_used = static_cast<uint32_t>(used[0]);
  sum_counters(r);
  sum_pfc_watchdog(r);
  r.series = std::move(series_);
  if (path_log_) r.paths = path_report(net_, *path_log_, ranks_);
  r.interrupted = stopped_;
  if (split_) {
    std::array<uint64_t, 3> w{windows_.windows, windows_.records_sent, windows_.bytes_sent};
    ranks_.sum_all(w);
    r.split.ranks = ranks_.size();
    r.split.windows = windows_.windows;
    r.split.records = w[1];
    r.split.bytes = w[2];
    r.split.lookahead = lookahead_;
    // Where a rank's wall time went, the largest over the ranks, in microseconds.
    std::array<uint64_t, 4> most{};
    const std::array<double, 4> mine{setup_s_, windows_.events_s, windows_.sync_s,
                                     windows_.deliver_s};
    for (size_t i = 0; i < most.size(); ++i) most[i] = static_cast<uint64_t>(mine[i] * 1e6);
    ranks_.max_all(most);
    for (size_t i = 0; i < most.size(); ++i) r.split.most_s[i] = static_cast<double>(most[i]) / 1e6;
  }
  r.sim_time = net_.now();
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0_).count();
  return r;
}

// Each flow's figures against its ideal: its path unloaded, at the host rate.
absl::StatusOr<sim::FlowStats> Run::flow_stats() const {
  const uint32_t overhead = frame_overhead(rc_.transport);
  return sim::flow_stats(std::as_const(*player_).records(), rc_.flows, [&](const sim::FlowSpec& f) {
    sim::PathModel m;
    m.gbps = rc_.fabric.host_gbps;
    m.hops = paths_->links(f.src, f.dst);
    m.propagation = paths_->propagation(f.src, f.dst);
    m.payload_per_packet = rc_.mtu;
    m.frame_overhead = overhead;
    return sim::ideal_fct(f.bytes, m);
  });
}

// Summed over hosts (and ranks): endpoint counters, then UET's datagram counters.
void Run::sum_counters(RunResult& r) {
  std::array<uint64_t, 18> sums{};
  for (const auto& ep : eps_) {
    if (ep == nullptr) continue;
    const EndpointStats s = ep->stats();
    sums[0] += s.data_packets;
    sums[1] += s.retransmitted_packets;
    sums[2] += s.control_packets;
    sums[3] += s.timeouts;
    sums[4] += s.rx_dropped;
    sums[12] += s.spurious_retransmits;
    if (rc_.transport == TransportKind::kUet) {
      const UetCounters& u = static_cast<const UetEndpoint&>(*ep).counters();
      sums[5] += u.tx_rudi;
      sums[6] += u.tx_rudi_retx;
      sums[7] += u.rx_rudi_req;
      sums[8] += u.tx_uud;
      sums[9] += u.rx_uud;
      sums[13] += u.nack_retx;
      sums[14] += u.fast_retx;
      sums[15] += u.tlp_probes;
      sums[16] += u.timeouts;
      sums[17] += u.rx_trimmed;
    }
  }
  sums[10] = player_->failed();
  sums[11] = net_.events_processed();
  ranks_.sum_all(sums);
  r.endpoints.data_packets = sums[0];
  r.endpoints.retransmitted_packets = sums[1];
  r.endpoints.control_packets = sums[2];
  r.endpoints.timeouts = sums[3];
  r.endpoints.rx_dropped = sums[4];
  r.endpoints.spurious_retransmits = sums[12];
  r.datagrams.rudi_sent = sums[5];
  r.datagrams.rudi_resent = sums[6];
  r.datagrams.rudi_executed = sums[7];
  r.datagrams.uud_sent = sums[8];
  r.datagrams.uud_delivered = sums[9];
  r.uet_resends = {sums[13], sums[14], sums[15], sums[16], sums[17]};
  r.failed = sums[10];
  r.events = sums[11];
}

void Run::sum_pfc_watchdog(RunResult& r) {
  std::array<uint64_t, 3> sums{0, 0, net_.pfc_deadlocks().size()};
  for (uint32_t p = 0; p < net_.num_ports(); ++p) {
    const sim::PfcWatchdogStats s = net_.pfc_watchdog(p);  // zero at another rank's port
    sums[0] += s.firings;
    sums[1] += s.drops;
  }
  ranks_.sum_all(sums);
  r.pfc.firings = sums[0];
  r.pfc.drops = sums[1];
  r.pfc.deadlocks = sums[2];
  const auto& found = net_.pfc_deadlocks();
  r.pfc.first_deadlock = ranks_.min_all(found.empty() ? kNever : found.front().at);
  r.pfc.deadlocked = deadlocked_;
}

}  // namespace

absl::Status validate(const RunConfig& rc) {
  const Fabric& f = rc.fabric;
  if (absl::Status s = check_fabric(f); !s.ok()) return s;
  const uint32_t hosts = host_count(f);
  // The engines' timers are derived from these (uet_config): in range before any arithmetic.
  if (f.buffer_bytes < 1024 || f.buffer_bytes > (uint64_t{1} << 36)) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer_bytes ", f.buffer_bytes, ": 1 KiB .. 64 GiB per switch port"));
  }
  if (f.control_buffer_bytes < 1024 || f.control_buffer_bytes > (uint64_t{1} << 36)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "control_buffer_bytes ", f.control_buffer_bytes, ": 1 KiB .. 64 GiB per switch port"));
  }
  if (f.pfc && f.pfc_watchdog.enabled) {
    if (absl::Status s = sim::check_pfc_watchdog(f.pfc_watchdog); !s.ok()) return s;
  }
  if (rc.mtu < 256 || rc.mtu > 9000) {
    return absl::InvalidArgumentError(absl::StrCat("mtu ", rc.mtu, ": 256 .. 9000 bytes"));
  }
  // A frame too small for the run's headers would fail every operation (kFrameTooSmall).
  const uint32_t cap = network_config(rc, /*split=*/false).frame_capacity;
  if (const uint32_t least = run_header_bytes(rc); cap < least) {
    return absl::InvalidArgumentError(absl::StrCat(
        "frame_capacity ", rc.fabric.frame_capacity, " (", cap, " for this run) too small: at least ",
        least, " bytes, the run's longest header stack"));
  }
  if (f.failed_links > top_tier_links(f)) {
    return absl::InvalidArgumentError(absl::StrCat("failed_links ", f.failed_links,
                                                   ": the fabric has ", top_tier_links(f),
                                                   " top-tier (", top_tier_name(f), ") links"));
  }
  for (const sim::FlowSpec& fl : rc.flows) {
    if (fl.src >= hosts || fl.dst >= hosts) {
      return absl::InvalidArgumentError(
          absl::StrCat("flow ", fl.id, " names a host beyond ", hosts));
    }
    if (fl.compute && (fl.src != fl.dst || fl.bytes != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("compute task ", fl.id, " must have dst == src and no bytes"));
    }
    if (!fl.compute && fl.src == fl.dst) {
      return absl::InvalidArgumentError(absl::StrCat("flow ", fl.id, " sends to its own host"));
    }
  }
  if (f.kind == Fabric::Kind::kRail && !f.rail.planes_joined) {
    const uint32_t rails = f.rail.gpus_per_server;
    for (const sim::FlowSpec& fl : rc.flows) {
      if (fl.compute || fl.src % rails == fl.dst % rails) continue;
      return absl::InvalidArgumentError(
          absl::StrCat("flow ", fl.id, ": host ", fl.src, " (rail ", fl.src % rails, ") to host ",
                       fl.dst, " (rail ", fl.dst % rails,
                       "): planes kept apart (--rail_planes=apart) route within a "
                       "rail only; use --rail_planes=joined"));
    }
  }
  if (rc.transport == TransportKind::kUet && rc.uet_mode == DeliveryMode::kUud) {
    for (const sim::FlowSpec& fl : rc.flows) {
      if (fl.bytes > rc.mtu) {  // spec/uet.md §3.6: a UUD message is one packet
        return absl::InvalidArgumentError(absl::StrCat(
            "--uet_mode=uud carries single-packet messages: flow ", fl.id, " has ", fl.bytes,
            " bytes, more than the ", rc.mtu, "-byte payload of a packet (--mtu); use rud, rod or "
            "rudi"));
      }
    }
  }
  if (rc.transport == TransportKind::kUet) return uet_config(rc, 0).validate();
  auto c = roce_config(rc, 0, 1);
  if (!c.ok()) return c.status();
  return c->validate();
}

uint32_t frame_overhead(TransportKind t) noexcept {
  // Ethernet, IPv4, UDP, then UET's PDS+SES headers or RoCEv2's BTH and ICRC (RETH on the first
  // packet only is left out), and the 24 bytes of preamble, gap and FCS the Network charges.
  return t == TransportKind::kUet ? 14 + 20 + 8 + 12 + 44 + 24 : 14 + 20 + 8 + 12 + 4 + 24;
}

double payload_bound_gbytes(const RunConfig& c) noexcept {
  const double mtu = c.mtu;
  return c.fabric.host_gbps / 8 * mtu / (mtu + frame_overhead(c.transport));
}

absl::StatusOr<RunResult> run(const RunConfig& rc) {
  const auto t0 = std::chrono::steady_clock::now();
  if (absl::Status s = validate(rc); !s.ok()) return s;
  sim::OneRank one_rank;
  sim::Ranks& ranks = rc.ranks != nullptr ? *rc.ranks : default_ranks() != nullptr ? *default_ranks() : one_rank;
  Run run(rc, ranks, t0);
  if (absl::Status s = run.build(); !s.ok()) return s;
  if (absl::Status s = run.connect(); !s.ok()) return s;
  run.drive();
  return run.collect();
}

}  // namespace uet::ab
