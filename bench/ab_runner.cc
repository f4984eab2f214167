#include "bench/ab_runner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/mpi_ranks.h"
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

sim::Ranks* g_default_ranks = nullptr;

class Player;

// Hosts an Endpoint on a simulated host and reports its completions to the player. A burst-level
// forwarding layer: the simulator calls it once per frame, as it calls any Transport.
class HostAdapter final : public Transport {
 public:
  HostAdapter(Player* player, Endpoint* ep) : player_(player), ep_(ep) {}
  void rx(std::span<Frame* const> frames, Time now) override;
  // A UUD WRITE completes as it is sent: drained here too, or a host that then hears nothing
  // would hold it (and every flow waiting for it) until the run's end.
  size_t tx(std::span<Frame* const> out, Time now) override {
    const size_t n = ep_->tx(out, now);
    drain(now);
    return n;
  }
  Time next_deadline() const override { return ep_->next_deadline(); }
  void on_timer(Time now) override;

 private:
  void drain(Time now);
  Player* player_;
  Endpoint* ep_;
};

// Plays the flows on the hosts this process runs (all of them unless the fabric is split over
// ranks): a flow starts on its source host, and completes there.
class Player final : public sim::Scheduled {
 public:
  // `notice`: how long after a flow completes on one host a flow waiting for it on another
  // host hears of it.
  Player(sim::Network& net, const std::vector<sim::FlowSpec>& flows,
         std::vector<std::unique_ptr<Endpoint>>& eps, const uint8_t* src, uint8_t* dst,
         uint64_t dst_bytes, uint32_t rkey, DeliveryMode mode, Verb verb, Time recv_delay,
         bool tagged, bool deferrable, std::function<Time(uint32_t, uint32_t)> notice)
      : net_(net), flows_(flows), eps_(eps), src_(src), dst_(dst), dst_bytes_(dst_bytes),
        rkey_(rkey), mode_(mode), verb_(verb), recv_delay_(recv_delay), tagged_(tagged),
        deferrable_(deferrable), notice_(std::move(notice)),
        records_(flows.size()), waiting_(flows.size(), 0), dependents_(flows.size()) {
    if (verb == Verb::kAtomic) fetched_.assign(flows.size(), 0);
    for (const sim::FlowSpec& f : flows) {
      records_[f.id].src = f.src;
      records_[f.id].dst = f.dst;
      records_[f.id].bytes = verb == Verb::kAtomic && !f.compute ? 8 : f.bytes;
      records_[f.id].start = kNever;
      waiting_[f.id] = static_cast<uint32_t>(f.after.size());
      for (uint32_t pre : f.after) dependents_[pre].push_back(f.id);
    }
    net.register_callback(this);  // the same number on every rank: notices name it
  }

  void schedule_initial() {
    for (const sim::FlowSpec& f : flows_)
      if (f.after.empty() && net_.owns_host(f.src)) ready(f.id, 0);
  }

  void fire(sim::Network& net, Time now, uint32_t cookie) override {
    if (cookie & kLateRecv) {  // the destination posts the receive of a flow begun earlier
      const uint32_t id = cookie & ~kLateRecv;
      if (absl::Status s = post_recv(flows_[id]); !s.ok()) {
        fail(id);
        complete(id, now, false);
        return;
      }
      net.kick(flows_[id].dst);
      return;
    }
    if (cookie & kNotice) {  // a prerequisite of this flow completed on another host
      const uint32_t id = cookie & ~kNotice;
      if (--waiting_[id] == 0) ready(id, now);
      return;
    }
    const uint32_t id = cookie;
    const sim::FlowSpec& f = flows_[id];
    records_[id].start = now;
    if (f.compute) {  // its time was the delay before this event
      complete(id, now, true);  // the stream stays busy: dependents it readies queue behind
      if (f.stream != 0) release(f.src, f.stream, now);
      return;
    }
    if (absl::Status s = post(f); !s.ok()) {
      fail(id);
      complete(id, now, false);
      return;
    }
    net.kick(f.src);
  }

  // Flow `f` as its verb: a receive first where the verb matches at the destination.
  absl::Status post(const sim::FlowSpec& f) {
    const uint32_t peer = sim::Network::host_ip4(f.dst);
    Endpoint& ep = *eps_[f.src];
    switch (verb_) {
      case Verb::kWrite: {
        WriteRequest wr;
        wr.wr_id = f.id;
        wr.peer = peer;
        wr.rkey = rkey_;
        wr.local = src_;
        wr.length = f.bytes;
        wr.mode = mode_;
        wr.channel = f.channel;
        return ep.post_write(wr);
      }
      case Verb::kSend: {
        // The receiver posts as the sender starts, as an application would (or recv_delay
        // later, a late one).
        if (recv_delay_ == 0) {
          if (absl::Status r = post_recv(f); !r.ok()) return r;
        } else {
          net_.schedule_at_host(f.dst, net_.now() + recv_delay_, this, f.id | kLateRecv);
        }
        if (tagged_) {
          TaggedSendRequest ts;
          ts.wr_id = f.id;
          ts.peer = peer;
          ts.local = src_;
          ts.length = f.bytes;
          ts.tag = f.id;
          ts.mode = mode_;
          ts.channel = f.channel;
          ts.deferrable = deferrable_;
          return ep.post_tsend(ts);
        }
        SendRequest sr;
        sr.wr_id = f.id;
        sr.peer = peer;
        sr.local = src_;
        sr.length = f.bytes;
        sr.channel = f.channel;
        return ep.post_send(sr);
      }
      case Verb::kAtomic: {
        AtomicRequest ar;
        ar.wr_id = f.id;
        ar.peer = peer;
        ar.rkey = rkey_;
        ar.op = AtomicOp::kSum;
        ar.type = AtomicType::kUint64;
        ar.operand = src_;
        ar.result = reinterpret_cast<uint8_t*>(&fetched_[f.id]);
        ar.mode = mode_;
        ar.channel = f.channel;
        return ep.post_atomic(ar);
      }
    }
    return absl::InvalidArgumentError("unknown verb");
  }

  // Flow f's receive at its destination: its buffer holds the largest flow (RoCEv2's shared
  // queue hands buffers out in posting order); UET's is a tagged receive for the flow's tag.
  absl::Status post_recv(const sim::FlowSpec& f) {
    Endpoint& rx = *eps_[f.dst];
    if (tagged_) {
      return rx.post_trecv(
          {f.id | kRecvBit, dst_, dst_bytes_, f.id, 0, sim::Network::host_ip4(f.src)});
    }
    return rx.post_recv({f.id | kRecvBit, dst_, dst_bytes_});
  }

  void complete(uint32_t id, Time now, bool ok) {
    sim::FlowRecord& r = records_[id];
    if (r.finish != kNever) return;
    r.finish = now;
    r.received = ok ? r.bytes : 0;
    r.sent = r.bytes;
    ++completed_;
    // A waiting flow on this host starts `start` after its last prerequisite completes; one
    // on another host hears of it a path's unloaded propagation later, as a message from
    // here would (which also keeps every rank of a split fabric a cut link's delay ahead).
    const uint32_t host = flows_[id].src;
    for (uint32_t next : dependents_[id]) {
      const sim::FlowSpec& d = flows_[next];
      if (d.src == host) {
        if (--waiting_[next] == 0) ready(next, now);
      } else {
        net_.schedule_at_host(d.src, now + notice_(host, d.src), this, next | kNotice);
      }
    }
  }

  void on_completion(const Completion& c, Time now) {
    if ((c.wr_id & kRecvBit) != 0) {  // a receive (--verb=send): its flow completes at the sender
      if (c.status != OpStatus::kSuccess) fail(static_cast<uint32_t>(c.wr_id & ~kRecvBit));
      return;
    }
    if (c.status != OpStatus::kSuccess) fail(static_cast<uint32_t>(c.wr_id));
    complete(static_cast<uint32_t>(c.wr_id), now, c.status == OpStatus::kSuccess);
  }

  bool done() const noexcept { return completed_ == flows_.size(); }
  size_t completed() const noexcept { return completed_; }
  const std::vector<sim::FlowRecord>& records() const noexcept { return records_; }
  std::vector<sim::FlowRecord>& records() noexcept { return records_; }
  uint64_t failed() const noexcept { return failed_; }  // flows, each counted once

 private:
  static constexpr uint32_t kNotice = 1u << 31;  // above every flow id (kMaxWorkloadFlows)
  static constexpr uint32_t kLateRecv = 1u << 30;  // a flow's receive, posted recv_delay late
  static constexpr uint64_t kRecvBit = uint64_t{1} << 63;  // a receive's wr_id: flow | this
  // Flow `id` failed (its send, its receive or both: counted once).
  void fail(uint32_t id) {
    if (flow_failed_.empty()) flow_failed_.assign(flows_.size(), false);
    if (!flow_failed_[id]) {
      flow_failed_[id] = true;
      ++failed_;
    }
  }
  // Flow `id`'s prerequisites are done: it starts `start` from now, or a compute task on a
  // stream waits its turn there.
  void ready(uint32_t id, Time now) {
    const sim::FlowSpec& f = flows_[id];
    if (!f.compute || f.stream == 0) {
      net_.schedule(now + f.start, this, id);
      return;
    }
    Stream& s = streams_[uint64_t{f.src} << 8 | f.stream];
    s.ready.push_back(id);
    std::push_heap(s.ready.begin(), s.ready.end(), std::greater<>());
    if (!s.busy) release(f.src, f.stream, now);
  }
  // The stream is free: its ready task with the lowest id starts (ASTRA-sim issues a rank's
  // dependency-free nodes in id order while the resource is free).
  void release(uint32_t host, uint8_t stream, Time now) {
    Stream& s = streams_[uint64_t{host} << 8 | stream];
    s.busy = !s.ready.empty();
    if (!s.busy) return;
    std::pop_heap(s.ready.begin(), s.ready.end(), std::greater<>());
    const uint32_t next = s.ready.back();
    s.ready.pop_back();
    net_.schedule(now + flows_[next].start, this, next);
  }

  struct Stream {
    bool busy = false;
    std::vector<uint32_t> ready;  // a min-heap of flow ids
  };

  sim::Network& net_;
  const std::vector<sim::FlowSpec>& flows_;
  std::vector<std::unique_ptr<Endpoint>>& eps_;
  const uint8_t* src_;
  uint8_t* dst_;
  uint64_t dst_bytes_;
  uint32_t rkey_;
  DeliveryMode mode_;
  Verb verb_;
  Time recv_delay_;
  bool tagged_;  // UET: sends are tagged sends, into tagged receives
  bool deferrable_;
  std::vector<uint64_t> fetched_;  // kAtomic: each flow's fetched value
  std::function<Time(uint32_t, uint32_t)> notice_;
  std::vector<sim::FlowRecord> records_;
  std::vector<uint32_t> waiting_;
  std::vector<std::vector<uint32_t>> dependents_;
  absl::flat_hash_map<uint64_t, Stream> streams_;  // by host << 8 | stream
  size_t completed_ = 0;
  uint64_t failed_ = 0;
  std::vector<bool> flow_failed_;
};

void HostAdapter::rx(std::span<Frame* const> frames, Time now) {
  ep_->rx(frames, now);
  drain(now);
}

void HostAdapter::on_timer(Time now) {
  ep_->on_timer(now);
  drain(now);
}

void HostAdapter::drain(Time now) {
  Completion c[16];
  for (;;) {
    const size_t n = ep_->poll_completions(c);
    for (size_t i = 0; i < n; ++i) player_->on_completion(c[i], now);
    if (n < std::size(c)) return;
  }
}

Time fabric_delay(const Fabric& f) noexcept { return f.fabric_delay >= 0 ? f.fabric_delay : f.link_delay; }
Time core_delay(const Fabric& f) noexcept { return f.core_delay >= 0 ? f.core_delay : fabric_delay(f); }

struct Tiers {
  sim::LinkConfig host, fabric, core;
};
Tiers tiers(const Fabric& f) {
  Tiers t;
  t.host.gbps = f.host_gbps;
  t.host.delay = f.link_delay;
  t.fabric.gbps = f.fabric_gbps;
  t.fabric.delay = fabric_delay(f);
  t.fabric.loss = f.fabric_loss;
  t.core = t.fabric;
  if (f.core_gbps > 0) t.core.gbps = f.core_gbps;
  t.core.delay = core_delay(f);
  return t;
}

sim::LeafSpineConfig leaf_spine_config(const Fabric& f) {
  sim::LeafSpineConfig c;
  c.leaves = f.leaves;
  c.spines = f.spines;
  c.hosts_per_leaf = f.hosts_per_leaf;
  c.host_link = tiers(f).host;
  c.fabric_link = tiers(f).fabric;
  return c;
}

sim::FatTreeConfig fat_tree_config(const Fabric& f) {
  sim::FatTreeConfig c;
  c.k = f.k;
  c.hosts_per_tor = f.hosts_per_tor;
  c.host_link = tiers(f).host;
  c.tor_agg_link = tiers(f).fabric;
  c.agg_core_link = tiers(f).core;
  return c;
}

absl::Status build_fabric(sim::Network& net, const Fabric& f) {
  if (f.kind == Fabric::Kind::kLeafSpine) return sim::build_leaf_spine(net, leaf_spine_config(f));
  return sim::build_fat_tree(net, fat_tree_config(f));
}

// Host h's engine configuration for the run. `pdcs`: the PDCs it will open at once at most
// (a PDC to each peer it writes to, one from each peer that writes to it).
UetConfig uet_config(const RunConfig& rc, uint32_t h, uint32_t pdcs = 0) {
  UetConfig c;
  // The engine's default table, or larger when the workload needs it (an all-to-all of more
  // than 512 hosts); PDCs cost memory only when opened.
  c.max_pdcs = std::clamp<uint32_t>(pdcs, c.max_pdcs, 65535);
  c.local_ip4 = sim::Network::host_ip4(h);
  c.local_mac = sim::Network::host_mac(h);
  c.payload_bytes = rc.mtu;
  c.pathsel.ev_count = rc.uet_evs;
  c.pathsel.algorithm = rc.uet_lb;
  c.cc = rc.uet_cc;  // RCCC's line rate is link_gbps below
  // NSCC's base RTT: the longest path, unloaded: propagation both ways plus one MTU frame
  // serialised per hop (store and forward) and the ACK's return.
  const uint32_t max_hops = rc.fabric.kind == Fabric::Kind::kLeafSpine ? 4 : 6;
  const Time frame = static_cast<Time>((rc.mtu + 150) * 8e3 / rc.fabric.host_gbps);
  c.link_gbps = rc.fabric.host_gbps;
  c.base_rtt = 2 * path_delay(rc.fabric, max_hops) + max_hops * frame + kMicrosecond;
  // Before its first RTT sample a sender knows nothing of the queues: its first RTO
  // covers the base RTT plus one full switch buffer draining at the host rate (1 MiB at
  // 100 Gb/s: 84 us). With the engine's 50 us a 127:1 incast's opening burst, queued
  // behind a full last-hop buffer, timed out spuriously by the thousand (7443 timeouts,
  // last completion 1.127x ideal; now 3133, 1.062x). The RFC 6298 estimate takes over
  // at the first sample; min_rto stays short for loss recovery.
  const double drain_ps = static_cast<double>(rc.fabric.buffer_bytes) * 8e3 / rc.fabric.host_gbps;
  c.rto = std::max(c.rto, c.base_rtt + static_cast<Time>(drain_ps));
  c.seed = rc.seed * 1000003 + h;
  if (rc.verb == Verb::kSend) c.max_trecvs = 65536;  // a receive per incoming flow at most
  c.rendezvous_bytes = rc.uet_rendezvous_bytes;
  if (rc.uet_tss) {
    // One cluster-mode domain; its key comes from the run's seed (a simulation needs no
    // secret, and the key is never written out).
    c.tss.enabled = true;
    c.tss.backend = rc.tss_backend;
    c.tss.max_sources = std::max<uint32_t>(c.max_pdcs, 1);
    if (!rc.tss_domains.empty()) {  // a key file's: the pcaps open in Wireshark with it
      c.tss.domains = rc.tss_domains;
      c.tss.tx_sdi = rc.tss_domains.front().sdi;
      c.tss.tx_an = rc.tss_domains.front().installed[0] ? 0 : 1;
      return c;
    }
    tss::DomainConfig d;
    d.sdi = 1;
    uint64_t x = rc.seed * 0x9E3779B97F4A7C15ULL + 0x7E55;
    for (uint8_t& b : d.key[0]) {
      x ^= x >> 31;
      x *= 0xBF58476D1CE4E5B9ULL;
      b = static_cast<uint8_t>(x >> 56);
    }
    d.installed[0] = true;
    c.tss.domains.push_back(d);
    c.tss.tx_sdi = d.sdi;
  }
  return c;
}

// `qps`: the QPs the host will connect (its QP table is sized to them).
absl::StatusOr<RoceConfig> roce_config(const RunConfig& rc, uint32_t h, uint32_t qps) {
  RoceConfig c;
  c.local_ip4 = sim::Network::host_ip4(h);
  c.local_mac = sim::Network::host_mac(h);
  c.mtu = rc.mtu;
  c.max_qps = std::max<uint32_t>(qps, 1);
  auto dcqcn = DcqcnConfig::preset(rc.dcqcn_preset, rc.fabric.host_gbps);
  if (!dcqcn.ok()) return dcqcn.status();
  c.dcqcn = *dcqcn;
  c.seed = rc.seed * 1000003 + h;
  if (rc.verb == Verb::kSend) c.max_recvs = 65536;  // a receive per incoming flow at most
  return c;
}

// Links between two hosts: the ideal path for the slowdown.
uint32_t hops(const Fabric& f, uint32_t a, uint32_t b) {
  if (f.kind == Fabric::Kind::kLeafSpine) return a / f.hosts_per_leaf == b / f.hosts_per_leaf ? 2 : 4;
  const uint32_t per_tor = f.hosts_per_tor > 0 ? f.hosts_per_tor : f.k / 2;
  const uint32_t per_pod = per_tor * (f.k / 2);
  if (a / per_tor == b / per_tor) return 2;
  if (a / per_pod == b / per_pod) return 4;
  return 6;
}

// Every rank gets what the others ran: the records of the flows their hosts started, and
// their ports' counters; so every rank returns the same result, and a caller that decides
// from it (a sweep, the next collective) decides the same on every rank.
void merge_ranks(sim::Ranks& ranks, sim::Network& net, std::vector<sim::FlowRecord>& records) {
  net.flush_stats();
  std::vector<uint8_t> mine;
  auto put = [&mine](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    mine.insert(mine.end(), b, b + n);
  };
  uint64_t count = 0;
  for (const sim::FlowRecord& r : records) count += net.owns_host(r.src) ? 1 : 0;
  put(&count, sizeof(count));
  for (uint32_t i = 0; i < records.size(); ++i) {
    if (!net.owns_host(records[i].src)) continue;
    put(&i, sizeof(i));
    put(&records[i], sizeof(sim::FlowRecord));
  }
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    if (!net.owns_port(p)) continue;
    put(&p, sizeof(p));
    put(&net.port(p).stats, sizeof(sim::PortStats));
  }
  const std::vector<std::vector<uint8_t>> all = ranks.all_gather(mine);
  for (size_t r = 0; r < all.size(); ++r) {
    if (r == ranks.rank()) continue;
    const std::vector<uint8_t>& in = all[r];
    size_t at = 0;
    auto get = [&in, &at, &ranks](void* p, size_t n) {
      if (in.size() - at < n) ranks.abort("merge: a rank's results are cut short");
      std::memcpy(p, in.data() + at, n);
      at += n;
    };
    uint64_t n = 0;
    get(&n, sizeof(n));
    for (uint64_t k = 0; k < n; ++k) {
      uint32_t i = 0;
      get(&i, sizeof(i));
      if (i >= records.size()) ranks.abort("merge: a record of a flow beyond the workload");
      get(&records[i], sizeof(sim::FlowRecord));
    }
    while (at < in.size()) {
      uint32_t p = 0;
      sim::PortStats stats;
      get(&p, sizeof(p));
      get(&stats, sizeof(stats));
      if (p >= net.num_ports()) ranks.abort("merge: counters of a port beyond the fabric");
      net.set_port_stats(p, stats);
    }
  }
}

}  // namespace

void set_default_ranks(sim::Ranks* ranks) noexcept { g_default_ranks = ranks; }

absl::StatusOr<std::unique_ptr<sim::Ranks>> start_tool_ranks(int* argc, char*** argv) {
  auto ranks = sim::start_ranks(argc, argv);
  if (!ranks.ok() || (*ranks)->size() < 2) return ranks;
  set_default_ranks(ranks->get());
  if ((*ranks)->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) {
    return absl::InternalError("cannot send this rank's stdout to /dev/null");
  }
  return ranks;
}

uint32_t host_count(const Fabric& f) noexcept {
  if (f.kind == Fabric::Kind::kLeafSpine) return f.leaves * f.hosts_per_leaf;
  const uint32_t per_tor = f.hosts_per_tor > 0 ? f.hosts_per_tor : f.k / 2;
  return f.k * (f.k / 2) * per_tor;
}

uint32_t top_tier_links(const Fabric& f) noexcept {
  if (f.kind == Fabric::Kind::kLeafSpine) return f.leaves * f.spines;
  return f.k * (f.k / 2) * (f.k / 2);  // every core switch has one link to each pod
}

uint64_t port_count(const Fabric& f) noexcept {
  // Two ports per link: host links, then leaf-spine or ToR-aggregation and aggregation-core.
  if (f.kind == Fabric::Kind::kLeafSpine) return 2 * (uint64_t{host_count(f)} + top_tier_links(f));
  return 2 * (uint64_t{host_count(f)} + 2 * uint64_t{top_tier_links(f)});
}

uint32_t switch_count(const Fabric& f) noexcept {
  if (f.kind == Fabric::Kind::kLeafSpine) return f.leaves + f.spines;
  return f.k * f.k + (f.k / 2) * (f.k / 2);  // k pods of k/2 ToRs and k/2 aggregation, cores
}

absl::Status validate(const RunConfig& rc) {
  const Fabric& f = rc.fabric;
  if (absl::Status s = f.kind == Fabric::Kind::kLeafSpine
                           ? sim::check_leaf_spine(leaf_spine_config(f))
                           : sim::check_fat_tree(fat_tree_config(f));
      !s.ok()) {
    return s;
  }
  const uint32_t hosts = host_count(f);
  // The engines' timers are derived from these (uet_config): in range before any arithmetic.
  if (f.buffer_bytes < 1024 || f.buffer_bytes > (uint64_t{1} << 36)) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer_bytes ", f.buffer_bytes, ": 1 KiB .. 64 GiB per switch port"));
  }
  if (rc.mtu < 256 || rc.mtu > 9000) {
    return absl::InvalidArgumentError(absl::StrCat("mtu ", rc.mtu, ": 256 .. 9000 bytes"));
  }
  if (f.failed_links > top_tier_links(f)) {
    return absl::InvalidArgumentError(absl::StrCat("failed_links ", f.failed_links,
                                                   ": the fabric has ", top_tier_links(f),
                                                   " top-tier (spine or core) links"));
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

Time path_delay(const Fabric& f, uint32_t hops) noexcept {
  Time d = 2 * f.link_delay;  // the two host links
  if (hops >= 4) d += 2 * fabric_delay(f);
  if (hops >= 6) d += 2 * core_delay(f);
  return d;
}

absl::StatusOr<RunResult> run(const RunConfig& rc) {
  const auto t0 = std::chrono::steady_clock::now();
  if (absl::Status s = validate(rc); !s.ok()) return s;
  sim::NetworkConfig nc;
  nc.seed = rc.seed;
  nc.frame_capacity = rc.fabric.frame_capacity;
  nc.switches.buffer_bytes = rc.fabric.buffer_bytes;
  nc.switches.ecn.enabled = rc.fabric.ecn;
  nc.switches.ecn.kmin_bytes = rc.fabric.ecn_kmin_bytes;
  nc.switches.ecn.kmax_bytes = rc.fabric.ecn_kmax_bytes;
  nc.switches.ecn.pmax = rc.fabric.ecn_pmax;
  nc.switches.trimming = rc.fabric.trimming && rc.transport == TransportKind::kUet;
  nc.switches.pfc.enabled = rc.fabric.pfc;
  nc.switches.pfc.xoff_bytes = rc.fabric.pfc_xoff_bytes;
  nc.switches.pfc.xon_bytes = rc.fabric.pfc_xon_bytes;
  if (rc.uet_tss && rc.transport == TransportKind::kUet) nc.host_cost = rc.tss_cost;
  sim::Network net(nc);
  if (absl::Status s = build_fabric(net, rc.fabric); !s.ok()) return s;
  const auto hosts = static_cast<uint32_t>(net.num_hosts());
  // Split over ranks: every rank builds the whole fabric and runs its part of it.
  sim::OneRank one_rank;
  sim::Ranks& ranks = rc.ranks != nullptr ? *rc.ranks : g_default_ranks != nullptr ? *g_default_ranks : one_rank;
  const bool split = ranks.size() > 1;
  if (split && rc.verb == Verb::kSend) {
    return absl::InvalidArgumentError(
        "--verb=send runs in one process: a flow's receive is posted at its destination as the "
        "sender starts (use write or atomic over ranks)");
  }
  Time lookahead = kNever;
  if (split) {
    auto fs = sim::split_fabric(net, ranks.size());
    if (!fs.ok()) return fs.status();
    lookahead = fs->lookahead;
    if (absl::Status s = net.set_partition(std::move(fs->rank_of_node), ranks.rank(), ranks.size());
        !s.ok()) {
      return s;
    }
  }
  // The top tier's switches (spines; a fat-tree's cores) are built last (sim/topology.cc), so
  // they are the last `top` switch numbers. A top-tier link joins one of them to a switch.
  const uint32_t top = rc.fabric.kind == Fabric::Kind::kLeafSpine ? rc.fabric.spines
                                                                  : (rc.fabric.k / 2) * (rc.fabric.k / 2);
  const auto first_top = static_cast<uint32_t>(net.num_switches()) - top;
  auto is_top = [&](uint32_t port) {
    const sim::Node& n = net.node(net.port(port).node);
    return n.kind == sim::NodeKind::kSwitch && n.index >= first_top;
  };
  auto top_link = [&](uint32_t p) {
    const uint32_t peer = net.port(p).peer;
    return (is_top(p) || is_top(peer)) &&
           net.node(net.port(p).node).kind == sim::NodeKind::kSwitch &&
           net.node(net.port(peer).node).kind == sim::NodeKind::kSwitch;
  };
  if (rc.fabric.failed_links > 0) {
    // Every top-tier link once (leaf-spine links; aggregation-core links of a fat-tree), by
    // its lower-numbered port, in a seeded random order.
    std::vector<uint32_t> links;
    for (uint32_t p = 0; p < net.num_ports(); ++p) {
      if (p < net.port(p).peer && top_link(p)) links.push_back(p);
    }
    if (rc.fabric.failed_links > links.size()) {
      return absl::InvalidArgumentError(absl::StrCat("failed_links ", rc.fabric.failed_links,
                                                     ": the fabric has ", links.size(),
                                                     " top-tier (spine or core) links"));
    }
    sim::Rng pick(rc.seed ^ 0xFA11ED);
    for (size_t i = 0; i < rc.fabric.failed_links; ++i) {
      std::swap(links[i], links[i + pick.next() % (links.size() - i)]);
      for (const uint32_t p : {links[i], net.port(links[i]).peer}) {
        if (rc.fabric.degrade > 0) {
          net.set_link_rate(p, rc.fabric.degrade, rc.fabric.fail_at, rc.fabric.degrade_scales_queues);
        } else {
          net.set_link_up(p, false, rc.fabric.fail_at);
        }
      }
    }
  }
  uint64_t max_bytes = 8;  // at least an atomic's operand
  for (const sim::FlowSpec& f : rc.flows) max_bytes = std::max(max_bytes, f.bytes);
  // One source buffer read by every sender and one target region written by every receiver:
  // the A/B compares timing, not bytes (the integrity tests do that). With small frames the
  // payload is never touched at all.
  // calloc'd: zero pages the kernel backs only where they are written, so a large flow costs
  // memory only for the bytes the target places.
  struct Free {
    void operator()(uint8_t* p) const noexcept { std::free(p); }
  };
  const std::unique_ptr<uint8_t, Free> src(static_cast<uint8_t*>(std::calloc(max_bytes, 1)));
  const std::unique_ptr<uint8_t, Free> dst(static_cast<uint8_t*>(std::calloc(max_bytes, 1)));
  if (src == nullptr || dst == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate 2 x ", max_bytes, " bytes"));
  }

  // RoCEv2's RC QPs: one pair per communicating pair of hosts and channel (FlowSpec::channel,
  // as NCCL opens a connection per channel), in the order the flows first name them.
  struct QpPair {
    uint32_t a, b;
    uint16_t channel;
  };
  std::vector<QpPair> qp_pairs;
  std::vector<uint32_t> qps(hosts, 0);
  // UET: the PDCs each host opens, to the peers it writes to and from those writing to it.
  // One per host pair whatever the flows' channels: spec/uet.md §2.4, a PDC joins two fabric
  // endpoints and sprays its packets over EVs itself, so channels need no PDC of their own.
  std::vector<uint32_t> pdcs(hosts, 0);
  if (rc.transport == TransportKind::kUet) {
    absl::flat_hash_map<uint64_t, bool> pairs;
    for (const sim::FlowSpec& f : rc.flows) {
      if (f.compute || !pairs.emplace(uint64_t{f.src} << 32 | f.dst, true).second) continue;
      ++pdcs[f.src];
      ++pdcs[f.dst];
    }
  }
  if (rc.transport == TransportKind::kRocev2) {
    absl::flat_hash_map<std::pair<uint64_t, uint16_t>, bool> connected;
    for (const sim::FlowSpec& f : rc.flows) {
      if (f.compute) continue;
      const uint32_t a = std::min(f.src, f.dst), b = std::max(f.src, f.dst);
      if (!connected.emplace(std::pair(uint64_t{a} << 32 | b, f.channel), true).second) continue;
      qp_pairs.push_back({a, b, f.channel});
      ++qps[a];
      ++qps[b];
    }
  }
  std::vector<std::unique_ptr<Endpoint>> eps;
  uint32_t rkey = 0;
  for (uint32_t h = 0; h < hosts; ++h) {
    if (!net.owns_host(h)) {  // another rank's
      eps.push_back(nullptr);
      continue;
    }
    if (rc.transport == TransportKind::kUet) {
      auto ep = UetEndpoint::create(uet_config(rc, h, pdcs[h]));
      if (!ep.ok()) return ep.status();
      eps.push_back(std::move(*ep));
    } else {
      auto c = roce_config(rc, h, qps[h]);
      if (!c.ok()) return c.status();
      auto ep = RoceEndpoint::create(*c);
      if (!ep.ok()) return ep.status();
      eps.push_back(std::move(*ep));
    }
    auto key = eps.back()->register_memory(dst.get(), max_bytes);
    if (!key.ok()) return key.status();
    rkey = *key;  // the same on every host: the first region
  }

  if (rc.transport == TransportKind::kRocev2) {
    // RC needs its QPs connected out of band. Channel 0's QPs draw their start PSNs from the
    // run's seed in the order they always did; other channels' from a stream of their own, so
    // adding channels leaves channel 0's draws as they were.
    std::vector<uint32_t> next_qp(hosts, 0);
    sim::Rng rng(rc.seed);
    sim::Rng rng_channels(rc.seed ^ 0xC4A2'2E15'0000'0000ULL);
    for (const auto& [a, b, channel] : qp_pairs) {
      auto* ea = static_cast<RoceEndpoint*>(eps[a].get());
      auto* eb = static_cast<RoceEndpoint*>(eps[b].get());
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
  }
  Player player(net, rc.flows, eps, src.get(), dst.get(), max_bytes, rkey,
                rc.transport == TransportKind::kUet ? rc.uet_mode : DeliveryMode::kRud, rc.verb,
                rc.recv_delay, rc.transport == TransportKind::kUet,
                rc.transport == TransportKind::kUet && rc.uet_deferrable,
                [&rc](uint32_t a, uint32_t b) { return path_delay(rc.fabric, hops(rc.fabric, a, b)); });
  std::vector<std::unique_ptr<HostAdapter>> adapters;
  for (uint32_t h = 0; h < hosts; ++h) {
    if (eps[h] == nullptr) continue;
    adapters.push_back(std::make_unique<HostAdapter>(&player, eps[h].get()));
    net.attach(h, adapters.back().get());
  }
  if (!rc.pcap_prefix.empty() && net.owns_host(0)) {
    const uint32_t nic = net.host(0).port;
    if (absl::Status s = net.tap(nic, rc.pcap_prefix + "_h0_tx.pcap"); !s.ok()) return s;
    if (absl::Status s = net.tap(net.port(nic).peer, rc.pcap_prefix + "_h0_rx.pcap"); !s.ok()) return s;
  }
  player.schedule_initial();
  // Run in slices so a finished workload stops the clock (and, when asked, to sample). Split
  // over ranks, every rank decides from the same sums: flows done, a stop asked anywhere.
  const Time slice = rc.sample_every > 0 ? rc.sample_every : 100 * kMicrosecond;
  std::vector<Sample> series;
  uint64_t delivered_before = 0;
  Time sampled_at = 0;
  sim::WindowStats windows;
  bool stopped = false;
  for (;;) {
    const bool stop = rc.stop != nullptr && rc.stop->load(std::memory_order_relaxed);
    std::array<uint64_t, 3> g{player.completed(), stop ? 1u : 0u, net.events_processed()};
    ranks.sum_all(g);
    const size_t completed = g[0];
    if (rc.progress && net.now() > 0 && ranks.rank() == 0) {
      Progress p;
      p.sim_time = net.now();
      p.events = g[2];
      p.flows_done = completed;
      p.flows = rc.flows.size();
      p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rc.progress(p);
    }
    if (completed == rc.flows.size() || net.now() >= rc.max_time) break;
    if (g[1] != 0) {
      stopped = true;
      break;
    }
    const Time until = std::min(sampled_at + slice, rc.max_time);
    if (split) {
      // A stop on any rank ends the slice early on all (mpirun gives a rank one second
      // between SIGTERM and SIGKILL).
      if (!sim::run_windows(net, ranks, lookahead, until, &windows, rc.stop)) {
        stopped = true;
        break;
      }
    } else {
      net.run_until(until);
    }
    if (rc.sample_every <= 0) {
      sampled_at = std::max(until, net.now());
      continue;
    }
    Sample s;
    s.t = until;
    std::array<uint64_t, 2> sums{0, 0};  // delivered, queued
    std::array<uint64_t, 1> most{0};
    for (uint32_t h = 0; h < hosts; ++h) {
      if (net.owns_host(h)) sums[0] += net.port(net.port(net.host(h).port).peer).stats.tx_bytes;
    }
    for (uint32_t p = 0; p < net.num_ports(); ++p) {
      const sim::Port& port = net.port(p);
      if (net.node(port.node).kind != sim::NodeKind::kSwitch || !net.owns_port(p)) continue;
      uint64_t q = 0;
      for (uint64_t b : port.queued_bytes) q += b;
      most[0] = std::max(most[0], q);
      sums[1] += q;
    }
    ranks.sum_all(sums);
    ranks.max_all(most);
    s.max_queue_bytes = most[0];
    s.queued_bytes = sums[1];
    s.delivered_gbps = static_cast<double>(sums[0] - delivered_before) * 8e3 /
                       static_cast<double>(until - sampled_at);
    delivered_before = sums[0];
    sampled_at = until;
    series.push_back(s);
  }
  if (split) merge_ranks(ranks, net, player.records());

  RunResult r;
  r.scenario = rc.scenario;
  r.transport = rc.transport;
  r.hosts = hosts;
  const uint32_t overhead = frame_overhead(rc.transport);
  auto flows = sim::flow_stats(std::as_const(player).records(), rc.flows, [&](const sim::FlowSpec& f) {
    sim::PathModel m;
    m.gbps = rc.fabric.host_gbps;
    m.hops = hops(rc.fabric, f.src, f.dst);
    m.propagation = path_delay(rc.fabric, m.hops);
    m.payload_per_packet = rc.mtu;
    m.frame_overhead = overhead;
    return sim::ideal_fct(f.bytes, m);
  });
  if (!flows.ok()) return flows.status();
  r.flows = *flows;
  r.records = std::as_const(player).records();
  r.ports = sim::port_summary(net, net.now());
  for (uint32_t h = 0; h < hosts; ++h)
    r.connections += rc.transport == TransportKind::kUet ? pdcs[h] : qps[h];
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    if (!top_link(p)) continue;
    ++r.top_ports;
    if (net.port(p).stats.tx_bytes > 0) ++r.top_ports_used;
  }
  // Summed over hosts (and ranks): endpoint counters, then UET's datagram counters.
  std::array<uint64_t, 12> sums{};
  for (const auto& ep : eps) {
    if (ep == nullptr) continue;
    const EndpointStats s = ep->stats();
    sums[0] += s.data_packets;
    sums[1] += s.retransmitted_packets;
    sums[2] += s.control_packets;
    sums[3] += s.timeouts;
    sums[4] += s.rx_dropped;
    if (rc.transport == TransportKind::kUet) {
      const UetCounters& u = static_cast<const UetEndpoint&>(*ep).counters();
      sums[5] += u.tx_rudi;
      sums[6] += u.tx_rudi_retx;
      sums[7] += u.rx_rudi_req;
      sums[8] += u.tx_uud;
      sums[9] += u.rx_uud;
    }
  }
  sums[10] = player.failed();
  sums[11] = net.events_processed();
  ranks.sum_all(sums);
  r.endpoints.data_packets = sums[0];
  r.endpoints.retransmitted_packets = sums[1];
  r.endpoints.control_packets = sums[2];
  r.endpoints.timeouts = sums[3];
  r.endpoints.rx_dropped = sums[4];
  r.datagrams.rudi_sent = sums[5];
  r.datagrams.rudi_resent = sums[6];
  r.datagrams.rudi_executed = sums[7];
  r.datagrams.uud_sent = sums[8];
  r.datagrams.uud_delivered = sums[9];
  r.series = std::move(series);
  r.interrupted = stopped;
  r.failed = sums[10];
  r.events = sums[11];
  if (split) {
    std::array<uint64_t, 3> w{windows.windows, windows.records_sent, windows.bytes_sent};
    ranks.sum_all(w);
    r.split.ranks = ranks.size();
    r.split.windows = windows.windows;
    r.split.records = w[1];
    r.split.bytes = w[2];
    r.split.lookahead = lookahead;
  }
  r.sim_time = net.now();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace uet::ab
