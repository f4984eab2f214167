// uet-load: saturation throughput of a dragonfly under a constant-rate UDP load, the way the
// dragonfly literature measures routing (Kim, Dally, Scott, Abts, ISCA 2008, §4: uniform-random
// and worst-case traffic, minimal, Valiant and UGAL-L routing). Every host injects packets at
// a fixed fraction of its line rate, each to a destination drawn per packet (uniform random:
// any other host; worst case: a random host of the next group, as booksim's bad_dragon); after
// a warm-up, the bytes the hosts receive in a measurement window give the accepted throughput.
// The fabric is lossy (no PFC) with a finite buffer per output port, so past saturation the
// excess is dropped and the accepted throughput stays at what the fabric carries. With --pfc it
// is lossless, its switches moving a frame to a further lossless class after each global link
// (--deadlock_free, Tagger: the virtual channels of Kim et al.), and their PFC watchdog reports
// a cycle of paused queues (a deadlock) that forms anyway.
//
//   build/bin/uet-load --traffic=wc --routing=valiant --loads=0.1,0.2,0.3,0.4,0.5,0.6
//   build/bin/uet-load --df_p=2 --df_a=4 --df_h=2 --traffic=ur --routing=minimal --json=out.json
//
// Per load: offered, accepted (bytes delivered in the window / (hosts x line rate x window)),
// mean latency of the packets delivered in the window (from the time the source scheduled
// them) and the switches' drops. The saturation throughput is the highest offered load whose
// accepted throughput is within --tolerance (default 2 %) of it and at which no switch port
// drops more than --max_loss (default 0.1 %) of its packets: the onset of loss, where the
// busiest link reaches its rate (what the analytic bounds count; in booksim's lossless
// network the point where that link's sources' queues, and the mean latency, grow without
// bound), and at which no source ends more than --max_backlog_us behind its schedule (with
// --pfc, a paused NIC), refined by bisection (--refine steps)
// between the last load that passed and the first that failed. --max_latency_us adds
// booksim2's own criterion: the mean latency, source queueing included, below a threshold
// (its latency_thres, 500 cycles by default).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/flag_check.h"
#include "bench/tool_main.h"
#include "sim/network.h"
#include "sim/rng.h"
#include "sim/routing/routing.h"
#include "sim/topology.h"
#include "transport/transport.h"
#include "transport/wire/builder.h"
#include "transport/wire/checksum.h"
#include "transport/wire/net_headers.h"

ABSL_FLAG(uint32_t, df_p, 4, "hosts per router p, 1..256 (balanced: a = 2p = 2h)");
ABSL_FLAG(uint32_t, df_a, 8, "routers per group a, 1..256");
ABSL_FLAG(uint32_t, df_h, 4, "global links per router h, 1..256");
ABSL_FLAG(uint32_t, df_g, 0, "groups, 2..a*h+1 with g-1 dividing a*h; 0: a*h+1");
ABSL_FLAG(std::string, traffic, "ur",
          "ur (each packet to a uniformly random other host) or wc (worst case: each packet to a "
          "random host of the next group, group i to i+1 mod g)");
ABSL_FLAG(std::string, routing, "minimal", "minimal, valiant or ugal (UGAL-L)");
ABSL_FLAG(bool, group_minimal, true,
          "paths with the fewest global links, then the fewest local ones (the dragonfly "
          "literature's MIN, local-global-local; Valiant's and UGAL's legs too); false: shortest "
          "paths in switch hops, which may cross two global links");
ABSL_FLAG(bool, valiant_via_switch, false,
          "valiant, ugal: the detour passes a random switch of its intermediate group, as "
          "booksim2's dragonflynew (a random intermediate node); false: minimal on from where "
          "it enters the group");
ABSL_FLAG(uint64_t, ugal_bias_bytes, 4096,
          "ugal: bytes x hops the minimal path may exceed the valiant path by, 0..1073741824");
ABSL_FLAG(std::string, ugal_signal, "queue",
          "ugal: what it weighs at a candidate port: queue (the bytes queued there) or "
          "downstream (those and the bytes the next switch holds from that link, what "
          "booksim2's credits count)");
ABSL_FLAG(std::string, loads, "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0",
          "offered loads, fractions of line rate, ascending, each 0.001..1");
ABSL_FLAG(uint32_t, refine, 4, "bisection steps between the last passing and first failing load, 0..20");
ABSL_FLAG(double, tolerance, 0.02, "saturated when accepted < (1 - tolerance) x offered, 0.001..0.5");
ABSL_FLAG(double, max_loss, 0.001,
          "... or when any switch port drops more than this fraction of the packets it is given "
          "(its link is past its rate), 0..0.5");
ABSL_FLAG(uint32_t, warmup_us, 20, "simulated warm-up before the window, 1..100000 us");
ABSL_FLAG(uint32_t, measure_us, 20, "simulated measurement window, 1..100000 us");
ABSL_FLAG(double, gbps, 100, "every link's rate in Gb/s, 1..1600");
ABSL_FLAG(uint32_t, latency_ns, 100, "host and local (in-group) link delay in ns, 0..1000000");
ABSL_FLAG(uint32_t, global_latency_ns, 1000, "global link delay in ns, 0..1000000");
ABSL_FLAG(uint32_t, buffer_kb, 64, "switch buffer per output port in KiB, 4..65536");
ABSL_FLAG(double, max_backlog_us, 5,
          "... or when any source has fallen this far behind its schedule at the end (its NIC "
          "paused: the source queue grows, booksim's saturation), 0.1..100000");
ABSL_FLAG(double, max_latency_us, 0,
          "... or when the window's mean latency (from the scheduled send, so source queueing "
          "counts) exceeds this: booksim2's latency_thres criterion; 0 off, 0..100000");
ABSL_FLAG(bool, pfc, false,
          "lossless: PFC pauses an ingress's upstream (a host's NIC too) past half --buffer_kb, as "
          "booksim's credits hold flits back");
ABSL_FLAG(std::string, deadlock_free, "auto",
          "--pfc: off, tagger or auto. tagger: lossless classes as virtual channels, one more "
          "after each global link (2 for minimal, 3 for valiant and ugal; Kim et al.'s VCs), "
          "each its own PFC priority; auto: tagger where the routes fit the switches' 3 lossless "
          "classes (group-minimal, not --valiant_via_switch), else off (one class: cyclic routes "
          "may deadlock)");
ABSL_FLAG(double, pfc_watchdog_us, 20,
          "--pfc: a switch queue paused this long fires the PFC watchdog (report only), which "
          "looks for a cycle of paused queues: a deadlock saturates the load; 0 off, 0..100000");
ABSL_FLAG(uint32_t, packet_bytes, 1024, "UDP payload per packet, 64..4096");
ABSL_FLAG(uint64_t, seed, 1, "simulation seed (destinations, source ports, start phases)");
ABSL_FLAG(std::string, json, "", "write the sweep as JSON to this file");

namespace uet::bench {
namespace {

constexpr size_t kHeaders = 14 + 20 + 8;  // Ethernet, IPv4, UDP
constexpr size_t kApp = 8;                // the time the source scheduled the packet
constexpr uint16_t kPort = 9001;

struct Options {
  sim::DragonflyConfig df;
  bool worst_case = false;
  sim::RoutingConfig routing;
  std::vector<double> loads;
  uint32_t refine = 0;
  double tolerance = 0;
  double max_loss = 0;
  Time max_backlog = 0;
  double max_latency_us = 0;  // 0: off
  Time warmup = 0, window = 0;
  double gbps = 0;
  uint64_t buffer_bytes = 0;
  bool pfc = false;
  Time pfc_watchdog = 0;  // detection time; 0: off
  uint32_t payload = 0;
  uint64_t seed = 0;
  std::string json;
};

// What the sinks saw in the window, shared by every host of one run.
struct Window {
  Time from = 0, to = 0;
  uint64_t bytes = 0;
  uint64_t packets = 0;
  double latency_ps = 0;
};

// One host: a constant-rate source (a packet every `gap`, from a random phase) and a sink.
// The NIC pulls a packet when one is due; one that could not leave on time (the NIC busy)
// leaves at the next pull, so the source keeps its rate and its latency counts the wait.
class LoadHost : public Transport {
 public:
  LoadHost(uint32_t host, const Options& o, double gap_ps, Window* w)
      : host_(host), opt_(&o), gap_(gap_ps), w_(w), rng_(o.seed * 0x9E3779B97F4A7C15ull + host) {
    next_ = rng_.uniform() * gap_;
    per_group_ = o.df.p * o.df.a;
    hosts_ = per_group_ * o.df.groups();
  }
  size_t tx(std::span<Frame* const> out, Time now) override {
    now_ = now;
    size_t n = 0;
    while (n < out.size() && static_cast<Time>(next_) <= now) {
      if (!build(*out[n], static_cast<Time>(next_))) break;
      next_ += gap_;
      ++n;
    }
    sent_ += n;
    return n;
  }
  uint64_t sent() const noexcept { return sent_; }
  // How far behind its schedule the source is at `now` (0: on time).
  Time backlog(Time now) const noexcept { return std::max<Time>(0, now - static_cast<Time>(next_)); }
  // A packet already due waits for the NIC's next pull (it pulls whenever it may send), not
  // for a timer; a paused NIC keeps the source behind, its queue growing as booksim's.
  Time next_deadline() const override {
    const auto due = static_cast<Time>(next_) + 1;
    return due > now_ ? due : kNever;
  }
  void on_timer(Time now) override { now_ = now; }
  void rx(std::span<Frame* const> frames, Time now) override {
    if (now < w_->from || now >= w_->to) return;
    for (const Frame* f : frames) {
      if (f->len < kHeaders + kApp) continue;
      const auto sent = static_cast<Time>(wire::load_be_n<8>(f->data + kHeaders));
      w_->bytes += f->bytes_on_wire();
      ++w_->packets;
      w_->latency_ps += static_cast<double>(now - sent);
    }
  }

 private:
  uint32_t destination() {
    if (opt_->worst_case) {  // booksim's bad_dragon: a random host of group (mine + 1) mod g
      const uint32_t g = (host_ / per_group_ + 1) % opt_->df.groups();
      return g * per_group_ + static_cast<uint32_t>(rng_.below(per_group_));
    }
    const auto d = static_cast<uint32_t>(rng_.below(hosts_ - 1));
    return d >= host_ ? d + 1 : d;
  }
  // A headers-only frame whose IP and UDP lengths describe the whole packet on the wire.
  bool build(Frame& f, Time stamp) {
    const uint32_t dst = destination();
    wire::Encap e;
    e.src_mac = sim::Network::host_mac(host_);
    e.dst_mac = sim::Network::host_mac(dst);
    e.src_ip4 = sim::Network::host_ip4(host_);
    e.dst_ip4 = sim::Network::host_ip4(dst);
    e.dscp = kDscpData;
    e.sport = wire::dynamic_port(static_cast<uint32_t>(rng_.next()));  // a path per packet
    e.dport = kPort;
    e.udp_checksum = false;
    wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), e);
    uint8_t* app = b.add_bytes(kApp);
    if (app == nullptr) return false;
    wire::store_be_n<8>(app, static_cast<uint64_t>(stamp));
    size_t len = 0;
    if (b.finish(&len) != wire::WireError::kOk) return false;
    const size_t full = kHeaders + kApp + opt_->payload;
    f.len = static_cast<uint32_t>(len);
    f.wire_len = static_cast<uint32_t>(full);
    auto* ip = wire::as<wire::Ipv4>(f.data + 14);
    ip->set_total_length(static_cast<uint16_t>(full - 14));
    ip->set_checksum(0);
    ip->set_checksum(wire::ipv4_header_checksum(f.data + 14, 20));
    wire::as<wire::Udp>(f.data + 34)->set_length(static_cast<uint16_t>(full - 34));
    f.priority = Priority::kData;
    return true;
  }

  uint32_t host_;
  const Options* opt_;
  double gap_;  // picoseconds between packets
  Window* w_;
  sim::Rng rng_;
  double next_ = 0;  // when the next packet is due
  uint32_t per_group_ = 0, hosts_ = 0;
  uint64_t sent_ = 0;
  Time now_ = 0;
};

struct Point {
  double offered = 0;
  double accepted = 0;
  double latency_us = 0;
  uint64_t drops = 0;
  uint64_t sent = 0;  // packets, warm-up and window
  double worst_loss = 0;  // the largest fraction of its packets a switch port dropped
  Time worst_backlog = 0;  // the furthest behind its schedule a source ended
  uint64_t deadlocks = 0;  // cycles of paused queues the PFC watchdog found
  uint64_t firings = 0;    // queues paused past the watchdog's detection time
};

// The first deadlock of a run, as a comment line: when, and its queues in wait-for order, each
// as switch:port kind/class (kind L local, G global: the link's far end in another group).
void print_deadlock(const sim::Network& net, std::span<const uint32_t> group_of,
                    const sim::PfcDeadlock& d, double load) {
  std::string cycle;
  for (size_t i = 0; i < d.cycle.size(); ++i) {
    const uint32_t s = net.port(d.cycle[i]).owner;
    const uint32_t t = net.port(sim::Network::peer_of(d.cycle[i])).owner;
    const bool global = s < group_of.size() && t < group_of.size() && group_of[s] != group_of[t];
    absl::StrAppendFormat(&cycle, " %u>%u %s%d", s, t, global ? "G" : "L",
                          sim::lossless_class(d.priorities[i]));
  }
  std::printf("# offered %.4f: PFC deadlock at %.3f us, a cycle of %zu paused queues:%s\n", load,
              static_cast<double>(d.at) / kMicrosecond, d.cycle.size(), cycle.c_str());
}

// One run at `load`: a fresh fabric, warm-up, then the window.
absl::StatusOr<Point> run_load(const Options& o, double load) {
  sim::NetworkConfig nc;
  nc.seed = o.seed;
  nc.frame_capacity = 128;  // headers only: payloads travel by length
  nc.switches.buffer_bytes = o.buffer_bytes;
  nc.switches.ecn.enabled = false;
  nc.switches.trimming = false;
  nc.switches.pfc.enabled = o.pfc;
  nc.switches.pfc.xoff_bytes = o.buffer_bytes / 2;
  nc.switches.pfc.xon_bytes = o.buffer_bytes * 3 / 8;
  // Report only: a deadlock stays one, so the window shows what it does to the throughput.
  nc.switches.pfc.watchdog = {o.pfc && o.pfc_watchdog > 0, std::max<Time>(o.pfc_watchdog, 1),
                              std::max<Time>(o.pfc_watchdog, 1), sim::PfcWatchdogAction::kReport};
  sim::Network net(nc);
  sim::TopologyLayout layout;
  if (absl::Status s = sim::build_dragonfly(net, o.df, &layout); !s.ok()) return s;
  if (o.routing.mode != sim::RoutingMode::kMinimal || o.routing.group_minimal) {
    if (absl::Status s = net.set_switch_groups(layout.group); !s.ok()) return s;
  }
  if (absl::Status s = net.set_routing(o.routing); !s.ok()) return s;
  const double wire_bytes = static_cast<double>(kHeaders + kApp + o.payload);
  const double bytes_per_ps = o.gbps * 1e9 / 8 / 1e12;
  Window w{o.warmup, o.warmup + o.window};
  std::vector<std::unique_ptr<LoadHost>> hosts;
  for (uint32_t h = 0; h < net.num_hosts(); ++h) {
    hosts.push_back(std::make_unique<LoadHost>(h, o, wire_bytes / (bytes_per_ps * load), &w));
    net.attach(h, hosts.back().get());
  }
  net.run_until(w.to);
  net.flush_stats();
  Point p;
  p.offered = load;
  p.accepted = static_cast<double>(w.bytes) / (static_cast<double>(net.num_hosts()) * bytes_per_ps *
                                               static_cast<double>(o.window));
  p.latency_us = w.packets ? w.latency_ps / static_cast<double>(w.packets) / kMicrosecond : 0;
  for (uint32_t port = 0; port < net.num_ports(); ++port) {
    const sim::PortStats& st = net.port_stats(port);
    p.drops += st.drops;
    if (st.drops > 0) {
      p.worst_loss = std::max(p.worst_loss, static_cast<double>(st.drops) /
                                                static_cast<double>(st.drops + st.tx_frames));
    }
  }
  for (const auto& h : hosts) {
    p.sent += h->sent();
    p.worst_backlog = std::max(p.worst_backlog, h->backlog(w.to));
  }
  p.deadlocks = net.pfc_deadlocks().size();
  for (uint32_t port = 0; port < net.num_ports(); ++port)
    p.firings += net.pfc_watchdog(port).firings;
  if (!net.pfc_deadlocks().empty())
    print_deadlock(net, layout.group, net.pfc_deadlocks().front(), load);
  return p;
}

bool saturated(const Options& o, const Point& p) {
  return p.deadlocks > 0 || p.accepted < (1 - o.tolerance) * p.offered ||
         p.worst_loss > o.max_loss || p.worst_backlog > o.max_backlog ||
         (o.max_latency_us > 0 && p.latency_us > o.max_latency_us);
}

void print_point(const Point& p) {
  std::printf("%8.4f %9.4f %10.3f %12llu %12llu %10.4f %10.3f %9llu %9llu\n", p.offered, p.accepted,
              p.latency_us, static_cast<unsigned long long>(p.drops),
              static_cast<unsigned long long>(p.sent), p.worst_loss,
              static_cast<double>(p.worst_backlog) / kMicrosecond,
              static_cast<unsigned long long>(p.firings),
              static_cast<unsigned long long>(p.deadlocks));
  std::fflush(stdout);
}

absl::StatusOr<Options> read_options() {
  FlagCheck check;
  Options o;
  for (const auto* f : {&FLAGS_df_p, &FLAGS_df_a, &FLAGS_df_h}) check.range(*f, 1, 256);
  o.df.p = absl::GetFlag(FLAGS_df_p);
  o.df.a = absl::GetFlag(FLAGS_df_a);
  o.df.h = absl::GetFlag(FLAGS_df_h);
  o.df.g = absl::GetFlag(FLAGS_df_g);
  const std::string traffic = absl::GetFlag(FLAGS_traffic);
  check.one_of("traffic", traffic, {"ur", "wc"});
  o.worst_case = traffic == "wc";
  const std::string routing = absl::GetFlag(FLAGS_routing);
  check.one_of("routing", routing, {"minimal", "valiant", "ugal"});
  o.routing.mode = routing == "valiant" ? sim::RoutingMode::kValiant
                   : routing == "ugal"  ? sim::RoutingMode::kUgal
                                        : sim::RoutingMode::kMinimal;
  o.routing.group_minimal = absl::GetFlag(FLAGS_group_minimal);
  o.routing.valiant_via_switch = absl::GetFlag(FLAGS_valiant_via_switch);
  o.routing.ugal_bias_bytes = absl::GetFlag(FLAGS_ugal_bias_bytes);
  if (o.routing.ugal_bias_bytes > (uint64_t{1} << 30)) {
    check.fail(absl::StrFormat("--ugal_bias_bytes=%d out of range: 0..1073741824",
                               o.routing.ugal_bias_bytes));
  }
  const std::string signal = absl::GetFlag(FLAGS_ugal_signal);
  check.one_of("ugal_signal", signal, {"queue", "downstream"});
  o.routing.ugal_signal =
      signal == "downstream" ? sim::UgalSignal::kDownstream : sim::UgalSignal::kQueue;
  for (absl::string_view t : absl::StrSplit(absl::GetFlag(FLAGS_loads), ',')) {
    double v = 0;
    if (!absl::SimpleAtod(t, &v) || !(v >= 0.001 && v <= 1) ||
        (!o.loads.empty() && v <= o.loads.back())) {
      check.fail(absl::StrCat("--loads=", absl::GetFlag(FLAGS_loads),
                              " invalid: ascending fractions, each 0.001..1"));
      break;
    }
    o.loads.push_back(v);
  }
  o.refine = check.range(FLAGS_refine, 0, 20);
  o.tolerance = check.range(FLAGS_tolerance, 0.001, 0.5);
  o.max_loss = check.range(FLAGS_max_loss, 0, 0.5);
  o.max_backlog =
      static_cast<Time>(check.range(FLAGS_max_backlog_us, 0.1, 100000) * kMicrosecond);
  o.max_latency_us = check.range(FLAGS_max_latency_us, 0, 100000);
  o.warmup = check.range(FLAGS_warmup_us, 1, 100000) * kMicrosecond;
  o.window = check.range(FLAGS_measure_us, 1, 100000) * kMicrosecond;
  o.gbps = check.range(FLAGS_gbps, 1, 1600);
  check.range(FLAGS_latency_ns, 0, 1e6);
  check.range(FLAGS_global_latency_ns, 0, 1e6);
  o.buffer_bytes = uint64_t{check.range(FLAGS_buffer_kb, 4, 65536)} * 1024;
  o.payload = check.range(FLAGS_packet_bytes, 64, 4096);
  o.pfc = absl::GetFlag(FLAGS_pfc);
  const std::string deadlock_free = absl::GetFlag(FLAGS_deadlock_free);
  check.one_of("deadlock_free", deadlock_free, {"off", "tagger", "auto"});
  // Tagger's classes: one per global link a route crosses, plus one; a detour through a
  // switch adds a local hop after a local hop, which needs a class more than the switches have.
  const bool fits = o.routing.group_minimal && !o.routing.valiant_via_switch;
  o.routing.deadlock_free =
      o.pfc && (deadlock_free == "tagger" || (deadlock_free == "auto" && fits))
          ? sim::DeadlockFree::kTagger
          : sim::DeadlockFree::kOff;
  o.pfc_watchdog = static_cast<Time>(check.range(FLAGS_pfc_watchdog_us, 0, 100000) * kMicrosecond);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.json = absl::GetFlag(FLAGS_json);
  if (!check.error.empty()) return absl::InvalidArgumentError(check.error);
  sim::LinkConfig local{o.gbps, absl::GetFlag(FLAGS_latency_ns) * kNanosecond};
  o.df.host_link = o.df.local_link = local;
  o.df.global_link = {o.gbps, absl::GetFlag(FLAGS_global_latency_ns) * kNanosecond};
  if (absl::Status s = sim::check_dragonfly(o.df); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--df_p/--df_a/--df_h/--df_g: ", s.message()));
  }
  return o;
}

// The grid, then bisection between the last load that kept up and the first that did not.
absl::StatusOr<std::vector<Point>> sweep(const Options& o, double* saturation) {
  std::vector<Point> points;
  double pass = 0, fail = 0;
  for (double load : o.loads) {
    auto p = run_load(o, load);
    if (!p.ok()) return p.status();
    print_point(*p);
    points.push_back(*p);
    if (saturated(o, *p)) {
      fail = load;
      break;
    }
    pass = load;
  }
  for (uint32_t i = 0; fail > 0 && i < o.refine; ++i) {
    const double mid = (pass + fail) / 2;
    auto p = run_load(o, mid);
    if (!p.ok()) return p.status();
    print_point(*p);
    points.push_back(*p);
    (saturated(o, *p) ? fail : pass) = mid;
  }
  *saturation = pass;
  return points;
}

int main_(int argc, char** argv) {
  absl::SetProgramUsageMessage("uet-load [--traffic=ur|wc] [--routing=minimal|valiant|ugal] [--nogroup_minimal] "
                               "[--loads=...] [--df_p --df_a --df_h --df_g]");
  absl::ParseCommandLine(argc, argv);
  auto o = read_options();
  if (!o.ok()) return tool_error("uet-load", o.status(), 2);
  std::printf(
      "# dragonfly p=%u a=%u h=%u g=%u (%u hosts), %s, %s%s%s, buffer %llu KiB/port, %u B "
      "packets, warm-up %g us, window %g us, saturated below %g x offered or a port losing "
      "above %g\n",
      o->df.p, o->df.a, o->df.h, o->df.groups(), o->df.p * o->df.a * o->df.groups(),
      absl::GetFlag(FLAGS_traffic).c_str(), absl::GetFlag(FLAGS_routing).c_str(),
      o->routing.group_minimal ? " (group-minimal)" : " (shortest paths)",
      o->routing.ugal_signal == sim::UgalSignal::kDownstream ? " (ugal: downstream)" : "",
      static_cast<unsigned long long>(o->buffer_bytes / 1024), o->payload,
      static_cast<double>(o->warmup) / kMicrosecond, static_cast<double>(o->window) / kMicrosecond,
      1 - o->tolerance, o->max_loss);
  if (o->pfc) {
    const std::string watchdog =
        o->pfc_watchdog > 0 ? absl::StrFormat("reports past %g us",
                                              static_cast<double>(o->pfc_watchdog) / kMicrosecond)
                            : std::string("off");
    std::printf("# lossless: %s, PFC watchdog %s\n",
                o->routing.deadlock_free == sim::DeadlockFree::kTagger
                    ? "a class more after each global link (tagger)"
                    : "one class (deadlock_free off)",
                watchdog.c_str());
  }
  std::printf(
      "# offered  accepted  latency_us        drops         sent worst_port_loss backlog_us"
      "   firings deadlocks\n");
  double sat = 0;
  auto points = sweep(*o, &sat);
  if (!points.ok()) return tool_error("uet-load", points.status(), 1);
  double peak = 0;
  for (const Point& p : *points) peak = std::max(peak, p.accepted);
  std::printf("saturation %.4f (peak accepted %.4f)\n", sat, peak);
  if (o->json.empty()) return 0;
  std::string out = absl::StrFormat(
      "{\"traffic\": \"%s\", \"routing\": \"%s\", \"group_minimal\": %s, \"deadlock_free\": "
      "\"%s\", \"p\": %u, \"a\": %u, \"h\": %u, \"g\": %u, "
      "\"saturation\": %.4f, \"peak_accepted\": %.4f, \"points\": [",
      absl::GetFlag(FLAGS_traffic), absl::GetFlag(FLAGS_routing),
      o->routing.group_minimal ? "true" : "false",
      o->routing.deadlock_free == sim::DeadlockFree::kTagger ? "tagger" : "off", o->df.p, o->df.a,
      o->df.h, o->df.groups(), sat, peak);
  for (size_t i = 0; i < points->size(); ++i) {
    const Point& p = (*points)[i];
    absl::StrAppend(
        &out, i ? ", " : "",
        absl::StrFormat("{\"offered\": %.4f, \"accepted\": %.4f, \"latency_us\": %.3f, "
                        "\"drops\": %d, \"sent\": %d, \"worst_port_loss\": %.5f, "
                        "\"backlog_us\": %.3f, \"watchdog_firings\": %d, "
                        "\"deadlocks\": %d}",
                        p.offered, p.accepted, p.latency_us, p.drops, p.sent, p.worst_loss,
                        static_cast<double>(p.worst_backlog) / kMicrosecond, p.firings,
                        p.deadlocks));
  }
  absl::StrAppend(&out, "]}\n");
  FILE* f = std::fopen(o->json.c_str(), "w");
  if (f == nullptr || std::fputs(out.c_str(), f) < 0 || std::fclose(f) != 0) {
    return tool_error("uet-load", absl::StrCat("--json=", o->json, ": cannot write"), 1);
  }
  return 0;
}

}  // namespace
}  // namespace uet::bench

int main(int argc, char** argv) { return uet::bench::main_(argc, argv); }
