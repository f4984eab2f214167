#include "tests/soak/soak.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/network.h"
#include "sim/rng.h"
#include "sim/topology.h"
#include "sim/workload.h"
#include "tests/common/rss.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::soak {
namespace {

constexpr uint8_t kPoison = 0xEE;

// The secure domain's key number `n` of a run (TSS): distinct per seed and rotation.
tss::Key soak_key(uint64_t seed, uint64_t n) {
  tss::Key k{};
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + n * 0xBF58476D1CE4E5B9ULL + 1;
  for (uint8_t& b : k) {
    x ^= x >> 29;
    x *= 0x94D049BB133111EBULL;
    b = static_cast<uint8_t>(x >> 56);
  }
  return k;
}
constexpr uint32_t kQpnBase = 0x100;      // host h's QP to peer p is kQpnBase + p
constexpr Time kTick = 5 * kMicrosecond;  // the application polls and posts this often
constexpr const char* kModeNames[] = {"RUD", "ROD", "RUDI", "UUD"};  // by DeliveryMode

using testing::peak_rss_kib;

// The bytes of message `id`: unique to it, so a stray write from any other message shows.
void fill_pattern(uint8_t* p, uint64_t n, uint64_t id) {
  uint64_t x = id * 0x9E3779B97F4A7C15ULL + 0x50A4;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = sim::splitmix64(x);
    std::memcpy(p + i, &v, 8);
  }
  const uint64_t v = sim::splitmix64(x);
  for (uint64_t k = 0; i < n; ++i, ++k) p[i] = static_cast<uint8_t>(v >> (8 * k));
}

// A (source, destination) pair: the source ring holds the bytes of its writes in flight; the
// target ring, registered at the destination, receives them at the same offsets. Ring space
// is handed out in posting order and given back in posting order.
struct Pair {
  uint32_t src = 0, dst = 0;
  uint32_t rkey = 0;
  std::unique_ptr<uint8_t[]> src_ring, dst_ring;
  uint64_t head = 0, tail = 0;  // ring positions (monotonic)
  std::deque<uint64_t> fifo;    // messages holding ring space, oldest first
  // Atomics: the counter at the destination, its key, and the values successful adds fetched.
  std::unique_ptr<uint64_t[]> counter;
  uint32_t counter_key = 0;
  std::vector<uint64_t> fetched_ok;
};

struct Msg {
  uint32_t pair = 0;
  uint32_t len = 0;
  uint64_t offset = 0;  // in both rings
  uint64_t end = 0;     // ring position after it (and any skip before it)
  DeliveryMode mode = DeliveryMode::kRud;
  bool bad_key = false;
  bool sent = false;      // completed with success (a UUD write: sent)
  bool done = false;      // completed
  bool released = false;  // its range re-poisoned and given back (RUDI, UUD: mpl later)
  bool tagged = false;    // a tagged send into a receive over its range ...
  bool late = false;      // ... posted when the send completed (else before it was sent)
  bool deferrable = false;  // a deferrable tagged send
  bool received = false;  // its receive completed
  bool atomic = false;    // a fetching add of 1 to its pair's counter ...
  uint64_t fetch = 0;     // ... whose old value lands in Soak::fetched_[fetch]
};
// A tagged receive's wr_id: the message's number with this bit.
constexpr uint64_t kRecvBit = uint64_t{1} << 62;

class Soak {
 public:
  explicit Soak(const SoakConfig& c) : c_(c), rng_(c.seed), poison_(c.ring_bytes, kPoison) {}
  SoakResult run();

 private:
  void build();
  bool post_one(uint32_t host);
  void on_completion(const Completion& cq, Time now);
  void on_tagged_recv(const Completion& cq);
  void post_tagged_recv(uint64_t id);
  void release(uint64_t id);
  void release_due(Time now);
  void add_pair(uint32_t src, uint32_t dst);
  void fail_links(Time horizon);
  void sample_tables();
  void collect();

  const SoakConfig c_;
  sim::Rng rng_;
  std::vector<uint8_t> poison_;
  std::unique_ptr<sim::Network> net_;
  std::vector<std::unique_ptr<Endpoint>> eps_;
  std::vector<UetEndpoint*> uet_;
  std::vector<RoceEndpoint*> roce_;
  std::vector<Pair> pairs_;
  std::vector<std::vector<uint32_t>> pairs_of_;  // per source host
  std::vector<uint32_t> host_outstanding_;
  std::vector<Msg> msgs_;
  std::deque<uint64_t> fetched_;  // atomics' result buffers (a deque: they never move)
  std::vector<bool> rccc_host_;                     // UET: hosts whose initiators run NSCC+RCCC
  std::deque<std::pair<Time, uint64_t>> deferred_;  // (release time, message), in time order
  // Rendezvous and deferrable messages' "late" receives: (when to post, message), in order.
  std::deque<std::pair<Time, uint64_t>> late_rdv_;
  Time now_ = 0;  // the current tick
  bool rendezvous(const Msg& m) const {
    return c_.uet_rendezvous_bytes != 0 && m.len > c_.uet_rendezvous_bytes;
  }
  // A send that completes only once its receive has the bytes (rendezvous, deferrable): its
  // "late" receive comes a few ticks after the post instead of after its completion.
  bool waits_for_recv(const Msg& m) const { return m.deferrable || rendezvous(m); }
  std::vector<uint32_t> links_;   // one port of every link
  std::vector<Time> link_up_at_;  // per link: down until then
  Time next_failure_ = 0;
  // TSS rotation (uet_tss): the next step's time and what it is (0 install, 1 activate, 2
  // retire); the AN the hosts send with.
  Time next_rotation_ = kNever;
  int rotation_step_ = 0;
  uint8_t tss_an_ = 0;
  void rotate_keys(Time t);
  SoakResult r_;
};

void Soak::build() {
  sim::NetworkConfig nc;
  nc.seed = c_.seed;
  nc.switches.buffer_bytes = c_.switch_buffer;
  nc.switches.ecn.kmin_bytes = c_.switch_buffer / 6;
  nc.switches.ecn.kmax_bytes = c_.switch_buffer / 2;
  nc.switches.pfc.enabled = c_.kind == Kind::kRoce;
  net_ = std::make_unique<sim::Network>(nc);
  sim::LeafSpineConfig ls;
  ls.leaves = c_.leaves;
  ls.spines = c_.spines;
  ls.hosts_per_leaf = c_.hosts_per_leaf;
  for (sim::LinkConfig* l : {&ls.host_link, &ls.fabric_link}) {
    l->loss = c_.loss;
    l->corrupt = c_.corrupt;
    l->duplicate = c_.duplicate;
    l->reorder = c_.reorder;
    l->reorder_delay = c_.reorder_delay;
  }
  ASSERT_TRUE(sim::build_leaf_spine(*net_, ls).ok());
  const auto n = static_cast<uint32_t>(net_->num_hosts());
  r_.hosts = n;
  ASSERT_LT(c_.peers, n);
  ASSERT_GE(c_.ring_bytes, c_.max_message);
  for (uint32_t p = 0; p < net_->num_ports(); p += 2) links_.push_back(p);  // connect() pairs
  link_up_at_.assign(links_.size(), 0);

  // Endpoints.
  for (uint32_t h = 0; h < n; ++h) {
    if (c_.kind == Kind::kUet) {
      UetConfig u;
      u.local_ip4 = sim::Network::host_ip4(h);
      u.local_mac = sim::Network::host_mac(h);
      u.pathsel.ev_count = 16;  // spray: more reordering; a failed link hits some packets of a PDC
      u.seed = c_.seed * 1000 + h;
      u.idle_timeout = c_.uet_idle_timeout;
      if (c_.uet_tss) {
        u.tss.enabled = true;
        tss::DomainConfig d;
        d.sdi = 0x00C0DE;
        d.key[0] = soak_key(c_.seed, 0);
        d.installed[0] = true;
        u.tss.domains.push_back(d);
        u.tss.tx_sdi = d.sdi;
        u.tss.replay_window = 4096;  // sprayed over 16 EVs with reordering: arrivals far apart
      }
      // Tagged messages held unexpected until the send completes: up to every incoming
      // message in flight.
      if (c_.uet_tagged > 0) u.unexpected_bytes = uint64_t{16} << 20;
      u.rendezvous_bytes = c_.uet_rendezvous_bytes;
      if (c_.uet_rccc > 0 && rng_.chance(c_.uet_rccc)) {  // receivers grant to either kind
        u.cc = CcMode::kNsccRccc;
        ++r_.rccc_hosts;
        rccc_host_.resize(n);
        rccc_host_[h] = true;
      }
      auto ep = UetEndpoint::create(u);
      ASSERT_TRUE(ep.ok()) << ep.status();
      uet_.push_back(ep->get());
      eps_.push_back(std::move(*ep));
    } else {
      RoceConfig rc;
      rc.local_ip4 = sim::Network::host_ip4(h);
      rc.local_mac = sim::Network::host_mac(h);
      rc.qpn_base = kQpnBase;
      rc.max_qps = n;
      rc.ack_timeout_exp = 7;  // 524 us: far above the fabric's queueing
      // Retry for ever (7, as rxe and most deployments): with this much loss, corruption and
      // reordering a go-back-N round of tens of packets fails more often than not, so any
      // finite budget ends some QPs by chance (retry_cnt 6: 5 of 30 seeds). The soak's hang
      // check (give_up) stands in for the limit.
      rc.retry_cnt = 7;
      rc.seed = c_.seed * 1000 + h;
      auto ep = RoceEndpoint::create(rc);
      ASSERT_TRUE(ep.ok()) << ep.status();
      roce_.push_back(ep->get());
      eps_.push_back(std::move(*ep));
    }
  }
  // Pairs.
  pairs_of_.resize(n);
  host_outstanding_.assign(n, 0);
  if (c_.pattern == Pattern::kRandomPeers) {  // each host to `peers` distinct destinations
    for (uint32_t h = 0; h < n; ++h) {
      std::vector<uint32_t> others;
      for (uint32_t d = 0; d < n; ++d)
        if (d != h) others.push_back(d);
      for (uint32_t k = 0; k < c_.peers; ++k) {
        const auto j = k + static_cast<uint32_t>(rng_.below(others.size() - k));
        std::swap(others[k], others[j]);
        add_pair(h, others[k]);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  } else {  // a permutation, then the incasts' senders
    auto perm = sim::permutation(n, 1, rng_);
    ASSERT_TRUE(perm.ok()) << perm.status();
    for (const sim::FlowSpec& f : *perm) add_pair(f.src, f.dst);
    ASSERT_LT(c_.incasts + c_.incast_fan_in, n);
    std::vector<uint32_t> hosts(n);
    for (uint32_t h = 0; h < n; ++h) hosts[h] = h;
    for (uint32_t i = 0; i < c_.incasts; ++i) {
      const auto k = i + static_cast<uint32_t>(rng_.below(n - i));  // distinct targets
      std::swap(hosts[i], hosts[k]);
      const uint32_t dst = hosts[i];
      for (uint32_t added = 0; added < c_.incast_fan_in;) {
        const auto src = static_cast<uint32_t>(rng_.below(n));
        const std::vector<uint32_t>& mine = pairs_of_[src];
        if (src == dst || std::any_of(mine.begin(), mine.end(),
                                      [&](uint32_t p) { return pairs_[p].dst == dst; })) {
          continue;
        }
        add_pair(src, dst);
        ++added;
      }
    }
  }
  // RoCEv2: one RC QP per host pair that talks (either way), connected out of band. A quarter
  // of them start just below the 24-bit PSN wrap, so the wrap is crossed under faults.
  if (c_.kind == Kind::kRoce) {
    std::vector<std::vector<bool>> connected(n, std::vector<bool>(n, false));
    for (const Pair& p : pairs_) {
      if (connected[p.src][p.dst]) continue;
      connected[p.src][p.dst] = connected[p.dst][p.src] = true;
      const auto start = [&] {
        return rng_.below(4) == 0 ? 0xFFFFFFu - static_cast<uint32_t>(rng_.below(500))
                                  : static_cast<uint32_t>(rng_.below(0x1000000));
      };
      const uint32_t psn_sd = start(), psn_ds = start();
      ASSERT_TRUE(roce_[p.src]
                      ->connect_qp(sim::Network::host_ip4(p.dst), kQpnBase + p.dst,
                                   kQpnBase + p.src, psn_sd, psn_ds)
                      .ok());
      ASSERT_TRUE(roce_[p.dst]
                      ->connect_qp(sim::Network::host_ip4(p.src), kQpnBase + p.src,
                                   kQpnBase + p.dst, psn_ds, psn_sd)
                      .ok());
    }
  }
  for (uint32_t h = 0; h < n; ++h) net_->attach(h, eps_[h].get());
  msgs_.reserve(c_.messages);
  next_failure_ = c_.failure_every;
  if (c_.uet_tss && c_.tss_rotate_every > 0) next_rotation_ = c_.tss_rotate_every;
  // UET: a host holds an initiator PDC per destination and a target PDC per source.
  for (uint32_t h = 0; h < n; ++h) {
    uint64_t sources = 0;
    for (const Pair& p : pairs_) sources += p.dst == h;
    // A PDC per peer and mode in each role (RUD, and ROD when some writes go ROD).
    const uint64_t modes = c_.kind == Kind::kUet && c_.uet_rod > 0 ? 2 : 1;
    // Rendezvous: a RUD PDC per source to READ from it, and per destination to be read;
    // deferrable sends: one per source to send its RTRs on.
    const uint64_t reads =
        c_.uet_rendezvous_bytes > 0 || c_.uet_deferrable > 0 ? c_.peers + sources : 0;
    r_.pdc_bound = std::max<uint64_t>(r_.pdc_bound, modes * (c_.peers + sources) + reads);
  }
}

void Soak::add_pair(uint32_t src, uint32_t dst) {
  Pair p;
  p.src = src;
  p.dst = dst;
  p.src_ring = std::make_unique<uint8_t[]>(c_.ring_bytes);
  p.dst_ring = std::make_unique<uint8_t[]>(c_.ring_bytes);
  std::memset(p.dst_ring.get(), kPoison, c_.ring_bytes);
  auto key = eps_[dst]->register_memory(p.dst_ring.get(), c_.ring_bytes);
  ASSERT_TRUE(key.ok()) << key.status();
  p.rkey = *key;
  if (c_.atomics > 0) {
    p.counter = std::make_unique<uint64_t[]>(1);
    auto ck = eps_[dst]->register_memory(reinterpret_cast<uint8_t*>(p.counter.get()), 8);
    ASSERT_TRUE(ck.ok()) << ck.status();
    p.counter_key = *ck;
  }
  pairs_of_[src].push_back(static_cast<uint32_t>(pairs_.size()));
  pairs_.push_back(std::move(p));
}

// Posts one write from `host` to one of its destinations, if that pair has room.
bool Soak::post_one(uint32_t host) {
  const uint32_t pi = pairs_of_[host][rng_.below(pairs_of_[host].size())];
  Pair& p = pairs_[pi];
  // Log-uniform size in [1, max_message]: mostly small, a few large.
  const double u = rng_.uniform();
  auto len = static_cast<uint32_t>(std::clamp<double>(
      std::floor(std::exp(u * std::log(static_cast<double>(c_.max_message) + 1))), 1.0,
      static_cast<double>(c_.max_message)));
  // The delivery mode: one draw over the shares.
  DeliveryMode mode = DeliveryMode::kRud;
  if (c_.kind == Kind::kUet && c_.uet_rod + c_.uet_rudi + c_.uet_uud > 0) {
    const double m = rng_.uniform();
    if (m < c_.uet_rod) {
      mode = DeliveryMode::kRod;
    } else if (m < c_.uet_rod + c_.uet_rudi) {
      mode = DeliveryMode::kRudi;
    } else if (m < c_.uet_rod + c_.uet_rudi + c_.uet_uud) {
      mode = DeliveryMode::kUud;
      len = std::min(len, UetConfig{}.payload_bytes);  // one packet (§3.6)
    }
  }
  // An atomic (drawn only when the share is set, so other soaks keep their sequences): no
  // ring space, judged by its pair's counter at the end.
  if (c_.atomics > 0 && (mode == DeliveryMode::kRud || mode == DeliveryMode::kRod) &&
      rng_.chance(c_.atomics)) {
    static constexpr uint64_t kOne = 1;
    Msg m;
    m.pair = pi;
    m.len = 8;
    m.mode = mode;
    m.atomic = true;
    m.fetch = fetched_.size();
    fetched_.push_back(~uint64_t{0});
    AtomicRequest ar;
    ar.wr_id = msgs_.size();
    ar.peer = sim::Network::host_ip4(p.dst);
    ar.rkey = p.counter_key;
    ar.op = AtomicOp::kSum;
    ar.type = AtomicType::kUint64;
    ar.operand = reinterpret_cast<const uint8_t*>(&kOne);
    ar.result = reinterpret_cast<uint8_t*>(&fetched_.back());
    ar.mode = mode;
    if (absl::Status s = eps_[host]->post_atomic(ar); !s.ok()) {
      ADD_FAILURE() << "post_atomic: " << s;
      return false;
    }
    msgs_.push_back(m);
    ++host_outstanding_[host];
    ++r_.posted;
    ++r_.atomics_posted;
    r_.bytes_posted += m.len;
    r_.rod_posted += mode == DeliveryMode::kRod;
    return true;
  }
  if (p.fifo.size() >= c_.max_outstanding_per_pair) return false;
  uint64_t offset = p.head % c_.ring_bytes;
  uint64_t skip = 0;
  if (offset + len > c_.ring_bytes) {  // no wrap inside a message
    skip = c_.ring_bytes - offset;
    offset = 0;
  }
  if (p.head + skip + len - p.tail > c_.ring_bytes) return false;
  // (Not UUD: its target drops a bad key silently, and nothing tells the initiator.)
  const bool bad_key =
      rng_.chance(c_.kind == Kind::kUet ? c_.bad_key : 0) && mode != DeliveryMode::kUud;
  const uint64_t id = msgs_.size();
  // Nothing may have written into this range since its last message was verified.
  if (std::memcmp(p.dst_ring.get() + offset, poison_.data(), len) != 0) {
    for (uint64_t i = 0; i < len; ++i) r_.stray_writes += p.dst_ring[offset + i] != kPoison;
    std::memset(p.dst_ring.get() + offset, kPoison, len);
  }
  fill_pattern(p.src_ring.get() + offset, len, id);
  // A tagged send (drawn only when the share is set, so other soaks keep their sequences).
  const bool tagged = c_.uet_tagged > 0 && !bad_key &&
                      (mode == DeliveryMode::kRud || mode == DeliveryMode::kRod) &&
                      rng_.chance(c_.uet_tagged);
  if (tagged) {
    Msg m;
    m.pair = pi;
    m.len = len;
    m.offset = offset;
    m.mode = mode;
    m.tagged = true;
    m.late = rng_.chance(0.5);
    m.deferrable = c_.uet_deferrable > 0 && rng_.chance(c_.uet_deferrable);
    msgs_.push_back(m);
    if (!m.late) post_tagged_recv(id);
    if (m.late && waits_for_recv(m)) late_rdv_.emplace_back(now_ + 4 * kTick, id);
    TaggedSendRequest ts;
    ts.wr_id = id;
    ts.peer = sim::Network::host_ip4(p.dst);
    ts.local = p.src_ring.get() + offset;
    ts.length = len;
    ts.tag = id;
    ts.mode = mode;
    ts.has_data = true;
    ts.data = ~id;
    ts.deferrable = m.deferrable;
    if (absl::Status s = eps_[host]->post_tsend(ts); !s.ok()) {
      ADD_FAILURE() << "post_tsend: " << s;
      msgs_.pop_back();
      return false;
    }
    r_.tagged_late += m.late;
  } else {
    msgs_.push_back(Msg{});
  }
  WriteRequest wr;
  wr.wr_id = id;
  wr.peer = sim::Network::host_ip4(p.dst);
  wr.rkey = bad_key ? 0xBAD0000u : p.rkey;
  wr.remote_offset = offset;
  wr.local = p.src_ring.get() + offset;
  wr.length = len;
  wr.mode = mode;
  r_.rod_posted += mode == DeliveryMode::kRod;
  r_.rudi_posted += mode == DeliveryMode::kRudi;
  r_.uud_posted += mode == DeliveryMode::kUud;
  r_.tagged_posted += tagged;
  if (absl::Status s = tagged ? absl::OkStatus() : eps_[host]->post_write(wr); !s.ok()) {
    ADD_FAILURE() << "post_write: " << s;
    msgs_.pop_back();
    return false;
  }
  p.head += skip + len;
  Msg& m = msgs_.back();
  m.pair = pi;
  m.len = len;
  m.offset = offset;
  m.end = p.head;
  m.mode = mode;
  m.bad_key = bad_key;
  p.fifo.push_back(id);
  ++host_outstanding_[host];
  ++r_.posted;
  r_.bytes_posted += len;
  r_.bad_key_posted += bad_key;
  return true;
}

// The tagged receive of message `id`, over its target range, at its destination.
void Soak::post_tagged_recv(uint64_t id) {
  const Msg& m = msgs_[id];
  const Pair& p = pairs_[m.pair];
  TaggedRecv tr;
  tr.wr_id = id | kRecvBit;
  tr.base = p.dst_ring.get() + m.offset;
  tr.length = m.len;
  tr.tag = id;
  tr.source = sim::Network::host_ip4(p.src);
  if (absl::Status s = eps_[p.dst]->post_trecv(tr); !s.ok()) ADD_FAILURE() << "post_trecv: " << s;
}

// A tagged receive completed: once, whole, with its message's tag, source and header data.
// Its range is judged here, and released once the send completed too.
void Soak::on_tagged_recv(const Completion& cq) {
  const uint64_t id = cq.wr_id & ~kRecvBit;
  if (id >= msgs_.size() || !msgs_[id].tagged) {
    ++r_.unknown_completions;
    return;
  }
  Msg& m = msgs_[id];
  if (m.received) {
    ++r_.double_completions;
    return;
  }
  m.received = true;
  ++r_.tagged_received;
  const Pair& p = pairs_[m.pair];
  const bool whole = cq.status == OpStatus::kSuccess && cq.op == Opcode::kTaggedRecv &&
                     cq.bytes == m.len && cq.tag == id && cq.has_imm && cq.imm == ~id &&
                     cq.peer == sim::Network::host_ip4(p.src) &&
                     std::memcmp(p.dst_ring.get() + m.offset, p.src_ring.get() + m.offset,
                                 m.len) == 0;
  if (whole) {
    r_.bytes_verified += m.len;
  } else {
    ++r_.corrupt_messages;
    r_.bytes_lost += m.len;
  }
  if (m.done) release(id);
}

void Soak::on_completion(const Completion& cq, Time now) {
  if ((cq.wr_id & kRecvBit) != 0) {
    on_tagged_recv(cq);
    return;
  }
  if (cq.wr_id >= msgs_.size()) {
    ++r_.unknown_completions;
    return;
  }
  Msg& m = msgs_[cq.wr_id];
  if (m.done) {
    ++r_.double_completions;
    return;
  }
  m.done = true;
  ++r_.completed;
  --host_outstanding_[pairs_[m.pair].src];
  m.sent = cq.status == OpStatus::kSuccess;
  if (cq.status == OpStatus::kSuccess) {
    ++r_.succeeded;
    if (m.bad_key) ++r_.corrupt_messages;  // a write the target should have refused
  } else {
    ++r_.errors[static_cast<size_t>(cq.status)];
    r_.bytes_failed += m.len;
  }
  if (m.atomic) {  // judged with its pair's counter at the end (collect)
    if (cq.status == OpStatus::kSuccess) {
      ++r_.atomics_ok;
      r_.bytes_verified += m.len;
      pairs_[m.pair].fetched_ok.push_back(fetched_[m.fetch]);
    }
    return;
  }
  if (m.mode == DeliveryMode::kUud) {  // sent, not known to have arrived: judged mpl later
    deferred_.emplace_back(now + c_.mpl, cq.wr_id);
    return;
  }
  if (m.tagged && cq.status == OpStatus::kSuccess) {  // judged when its receive completes
    // (At once: it waits unexpected. A rendezvous or deferrable send completes only after
    // its receive.)
    if (m.late && !waits_for_recv(m)) post_tagged_recv(cq.wr_id);
    if (m.received) release(cq.wr_id);
    return;
  }
  const Pair& p = pairs_[m.pair];
  const uint8_t* got = p.dst_ring.get() + m.offset;
  if (cq.status == OpStatus::kSuccess) {
    if (cq.bytes != m.len || std::memcmp(got, p.src_ring.get() + m.offset, m.len) != 0) {
      ++r_.corrupt_messages;
      r_.bytes_lost += m.len;
    } else {
      r_.bytes_verified += m.len;
    }
  } else if (m.bad_key && cq.status == OpStatus::kRemoteAccessError &&
             std::memcmp(got, poison_.data(), m.len) == 0) {
    ++r_.bad_key_refused;  // refused with the reason, and nothing placed
  }
  if (m.mode == DeliveryMode::kRudi) {  // copies may still land: reuse the range mpl later
    deferred_.emplace_back(now + c_.mpl, cq.wr_id);
    return;
  }
  release(cq.wr_id);
}

// Re-poisons a completed message's target range (the next message placed there checks it)
// and gives back the ring space of the pair's oldest messages that are released.
void Soak::release(uint64_t id) {
  Msg& m = msgs_[id];
  Pair& p = pairs_[m.pair];
  std::memset(p.dst_ring.get() + m.offset, kPoison, m.len);
  m.released = true;
  while (!p.fifo.empty() && msgs_[p.fifo.front()].released) {
    p.tail = msgs_[p.fifo.front()].end;
    p.fifo.pop_front();
  }
}

// RUDI and UUD messages whose mpl has passed. A UUD range holds the message or nothing.
void Soak::release_due(Time now) {
  while (!deferred_.empty() && deferred_.front().first <= now) {
    const uint64_t id = deferred_.front().second;
    deferred_.pop_front();
    const Msg& m = msgs_[id];
    if (m.mode == DeliveryMode::kUud && m.sent) {
      const Pair& p = pairs_[m.pair];
      const uint8_t* got = p.dst_ring.get() + m.offset;
      if (std::memcmp(got, p.src_ring.get() + m.offset, m.len) == 0) {
        ++r_.uud_delivered;
        r_.bytes_verified += m.len;
      } else if (std::memcmp(got, poison_.data(), m.len) == 0) {
        ++r_.uud_lost;  // unreliable by design: counted, not a failure
        r_.bytes_failed += m.len;
      } else {
        ++r_.uud_partial;
        r_.bytes_lost += m.len;
      }
    }
    release(id);
  }
}

// About every failure_every (exponential gaps, so that failures do not line up with timers
// that are multiples of a round number), a link that is up goes down for a random while,
// then comes back.
void Soak::fail_links(Time horizon) {
  while (horizon >= next_failure_) {
    uint32_t l = 0;
    for (int tries = 0; tries < 16; ++tries) {
      l = static_cast<uint32_t>(rng_.below(links_.size()));
      if (link_up_at_[l] <= next_failure_) break;
    }
    if (link_up_at_[l] <= next_failure_) {
      const Time down =
          c_.down_min +
          static_cast<Time>(rng_.below(static_cast<uint64_t>(c_.down_max - c_.down_min) + 1));
      net_->set_link_up(links_[l], false, next_failure_);
      net_->set_link_up(links_[l], true, next_failure_ + down);
      link_up_at_[l] = next_failure_ + down;
      ++r_.link_failures;
      const sim::Port& port = net_->port(links_[l]);
      if (net_->node(port.node).kind == sim::NodeKind::kHost ||
          net_->node(net_->port(port.peer).node).kind == sim::NodeKind::kHost) {
        ++r_.host_link_failures;
      }
    }
    next_failure_ += 1 + static_cast<Time>(-std::log(1 - rng_.uniform()) *
                                           static_cast<double>(c_.failure_every));
  }
}

void Soak::sample_tables() {
  for (UetEndpoint* ep : uet_) r_.pdcs_peak = std::max<uint64_t>(r_.pdcs_peak, ep->pdcs_in_use());
}

SoakResult Soak::run() {
  const auto wall0 = std::chrono::steady_clock::now();
  r_.seed = c_.seed;
  r_.target = c_.messages;
  build();
  if (::testing::Test::HasFatalFailure()) return r_;
  const auto n = static_cast<uint32_t>(eps_.size());
  std::vector<Completion> cq(256);
  Time t = 0, last_completion = 0;
  bool sampled_quarter = false;
  uint64_t ticks = 0;
  while (r_.completed < c_.messages) {
    // Post: every host keeps up to max_outstanding_per_host writes in flight.
    for (uint32_t h = 0; h < n && r_.posted < c_.messages; ++h) {
      bool any = false;
      for (uint32_t tries = 0; tries < 4 && host_outstanding_[h] < c_.max_outstanding_per_host &&
                               r_.posted < c_.messages;) {
        if (post_one(h)) {
          any = true;
        } else {
          ++tries;
        }
      }
      if (any) net_->kick(h);
    }
    fail_links(t + kTick);  // failures due before the next tick, at their exact times
    if (t >= next_rotation_) rotate_keys(t);
    t += kTick;
    net_->run_until(t);
    for (uint32_t h = 0; h < n; ++h) {
      for (size_t k; (k = eps_[h]->poll_completions(cq)) > 0;) {
        for (size_t i = 0; i < k; ++i) on_completion(cq[i], t);
        last_completion = t;
      }
    }
    release_due(t);
    now_ = t;
    while (!late_rdv_.empty() && late_rdv_.front().first <= t) {
      post_tagged_recv(late_rdv_.front().second);
      late_rdv_.pop_front();
    }
    if (++ticks % 64 == 0) sample_tables();
    if (!sampled_quarter && r_.completed >= c_.messages / 4) {
      sampled_quarter = true;
      r_.rss_quarter_kib = testing::rss_kib();
    }
    if (t - last_completion > c_.give_up) {
      ADD_FAILURE() << "no completion for " << c_.give_up / kMillisecond << " ms of simulated time";
      break;
    }
  }
  r_.sim_time = t;
  // Let the last ACKs and timers play out, then look at what is left.
  net_->run_until(t + 50 * kMillisecond);
  for (uint32_t h = 0; h < n; ++h) {
    for (size_t k; (k = eps_[h]->poll_completions(cq)) > 0;) {
      for (size_t i = 0; i < k; ++i) on_completion(cq[i], t + 50 * kMillisecond);
    }
  }
  net_->run_until(t + 50 * kMillisecond + c_.mpl);  // copies of the last RUDI/UUD writes
  release_due(kNever);
  sample_tables();
  collect();
  r_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r_;
}

// §5.4 as a management entity drives it: install everywhere, then send with it everywhere,
// then retire the old association once nothing sealed under it can still be in flight.
void Soak::rotate_keys(Time t) {
  const uint8_t next = static_cast<uint8_t>(tss_an_ ^ 1);
  for (UetEndpoint* ep : uet_) {
    tss::Sublayer& s = *ep->tss();
    absl::Status st;
    if (rotation_step_ == 0) st = s.install_key(0x00C0DE, next, soak_key(c_.seed, r_.tss_rotations + 1));
    if (rotation_step_ == 1) st = s.activate(next);
    if (rotation_step_ == 2) st = s.retire(0x00C0DE, tss_an_);
    ASSERT_TRUE(st.ok()) << st;
  }
  if (rotation_step_ == 2) {
    tss_an_ = next;
    ++r_.tss_rotations;
  }
  rotation_step_ = (rotation_step_ + 1) % 3;
  next_rotation_ = rotation_step_ == 0 ? t + c_.tss_rotate_every - 2 * c_.mpl : t + c_.mpl;
}

void Soak::collect() {
  // Messages that never completed are lost; target rings must be poison everywhere now.
  for (uint64_t id = 0; id < msgs_.size(); ++id) {
    const Msg& m = msgs_[id];
    if (m.tagged && m.sent && !m.received) {  // sent, never received: lost
      ++r_.tagged_unreceived;
      r_.bytes_lost += m.len;
    }
    if (m.done) continue;
    r_.bytes_lost += m.len;
    ++r_.stuck[static_cast<size_t>(m.mode)];
    const Pair& p = pairs_[m.pair];
    r_.stuck_on_rccc += rccc_host_.empty() ? 0 : rccc_host_[p.src];
    if (r_.first_stuck.empty()) {
      r_.first_stuck =
          absl::StrFormat("message %d: host %d -> %d, %d bytes at offset %d, %s%s", id, p.src,
                          p.dst, m.len, m.offset, kModeNames[static_cast<size_t>(m.mode)],
                          !m.tagged ? "" : m.late ? ", tagged (receive after the send)"
                                                  : ", tagged (receive before the send)");
    }
  }
  for (Pair& p : pairs_) {
    if (p.counter == nullptr) continue;
    // Each add ran once: the counter is the successes' count, and they fetched 0..count-1.
    std::sort(p.fetched_ok.begin(), p.fetched_ok.end());
    bool exact = p.counter[0] == p.fetched_ok.size();
    for (uint64_t i = 0; exact && i < p.fetched_ok.size(); ++i) exact = p.fetched_ok[i] == i;
    r_.atomic_miscounts += !exact;
  }
  for (const Pair& p : pairs_) {
    if (std::memcmp(p.dst_ring.get(), poison_.data(), c_.ring_bytes) != 0) {
      for (uint64_t i = 0; i < c_.ring_bytes; ++i) r_.stray_writes += p.dst_ring[i] != kPoison;
    }
  }
  for (size_t i = 0; i < net_->num_ports(); ++i) {
    const sim::PortStats s = net_->port_stats(static_cast<uint32_t>(i));
    r_.frames += s.tx_frames;
    r_.wire_losses += s.wire_losses;
    r_.corruptions += s.corruptions;
    r_.duplicates += s.duplicates;
    r_.reorders += s.reorders;
    r_.trims += s.trims;
    r_.buffer_drops += s.drops;
    r_.lossless_drops += s.lossless_drops;
    r_.ecn_marks += s.ecn_marks;
    r_.pauses += s.pauses_sent;
    r_.corrupted_arrivals += s.corrupted_arrivals;
    r_.damaged_arrivals += s.damaged_arrivals;
    r_.corrupted_rewrites += s.corrupted_rewrites;
    r_.corrupted_unchecked += s.corrupted_unchecked;
  }
  // The counters both engines keep under the same names.
  auto add_shared = [this](const auto& k) {
    for (size_t i = 0; i < wire::kNumWireErrors; ++i) r_.wire.count[i] += k.wire.count[i];
    r_.retransmissions += k.tx_retx;
    r_.timeouts += k.timeouts;
    r_.rx_duplicates += k.rx_duplicates;
  };
  for (UetEndpoint* ep : uet_) {
    const UetCounters& k = ep->counters();
    add_shared(k);
    r_.trimmed_nacks += k.rx_trimmed;
    r_.naks += k.tx_nacks;
    r_.pdcs_end = std::max<uint64_t>(r_.pdcs_end, ep->pdcs_in_use());
    r_.pdcs_closed += k.pdcs_closed;
    r_.pdcs_reopened += k.pdc_reopened;
    r_.rod_staged += k.rod_staged;
    r_.rudi_executed += k.rx_rudi_req;
    r_.credit_granted += k.credit_granted;
    r_.tagged_unexpected += k.rx_tagged_unexpected;
    r_.rendezvous += k.tx_rendezvous;
    r_.rendezvous_reads += k.rx_rdv_reads;
    r_.rendezvous_timeouts += k.rdv_timeouts;
    r_.deferrals += k.rx_deferred;
    r_.deferral_restarts += k.tx_restarts;
    r_.deferral_timeouts += k.defer_timeouts;
    r_.atomic_replays += k.rx_atomic_replays;
    r_.tss_clear_refused += k.rx_clear_refused;
    r_.tss_start_psn_refused += k.rx_start_psn_refused;
    if (const tss::Sublayer* t = ep->tss(); t != nullptr) {
      r_.tss_sealed += t->counters().sealed;
      r_.tss_opened += t->counters().opened;
      r_.tss_trimmed += t->counters().trimmed_unverified;
      for (size_t i = 0; i < r_.tss_drops.size(); ++i) r_.tss_drops[i] += t->counters().drops[i];
    }
  }
  for (RoceEndpoint* ep : roce_) {
    const RoceCounters& k = ep->counters();
    add_shared(k);
    r_.naks += k.tx_naks;
    r_.go_back_n += k.go_back_n;
    r_.atomic_replays += k.rx_atomic_replays;  // duplicates answered from the replay cache
    r_.naks_in_round += k.rx_nak_seq_ignored;
    r_.cnps += k.tx_cnps;
    for (uint32_t q = 0; q < ep->config().max_qps; ++q) {
      auto info = ep->qp_info(kQpnBase + q);
      if (!info.ok() || info->state == QpState::kReset) continue;
      ++r_.qps_connected;
      r_.qps_in_error += info->state == QpState::kError;
      r_.writes_outstanding_end += info->writes_outstanding;
    }
  }
  for (size_t i = 0; i < wire::kNumWireErrors; ++i) r_.check_failures += r_.wire.count[i];
  // Sealed frames carry UDP checksum 0 (spec/uet.md §5.2): their damage is TSS's to find.
  auto tss_drops = [&](tss::Drop d) { return r_.tss_drops[static_cast<size_t>(d)]; };
  for (tss::Drop d : {tss::Drop::kShort, tss::Drop::kUnknownSdi, tss::Drop::kStaleEpoch,
                      tss::Drop::kBadTag}) {
    r_.check_failures += tss_drops(d);
  }
  r_.check_failures += r_.tss_clear_refused;
  for (tss::Drop d : {tss::Drop::kTooOld, tss::Drop::kReplay, tss::Drop::kNoKey})
    r_.check_failures_ambiguous += tss_drops(d);
  r_.frame_pool_peak = net_->frames().peak();
  r_.frames_in_use_end = net_->frames().in_use();
  r_.events_pending_end = net_->events_pending();
  r_.events = net_->events_processed();
  r_.rss_end_kib = testing::rss_kib();
  r_.peak_rss_kib = peak_rss_kib();
}

}  // namespace

SoakResult run_soak(const SoakConfig& config) {
  // Longer or other runs without a rebuild: UET_SOAK_SEED, UET_SOAK_MESSAGES.
  SoakConfig c = config;
  if (const char* s = std::getenv("UET_SOAK_SEED")) c.seed = std::strtoull(s, nullptr, 10);
  if (const char* s = std::getenv("UET_SOAK_MESSAGES")) c.messages = std::strtoull(s, nullptr, 10);
  return Soak(c).run();
}

SoakResult run_checked(const SoakConfig& config) {
  const SoakResult r = run_soak(config);
  std::fputs(report(config, r).c_str(), stdout);
  expect_sound(config, r);
  return r;
}

std::string report(const SoakConfig& c, const SoakResult& r) {
  const char* name = c.kind == Kind::kUet ? "UET" : "RoCEv2";
  std::string s = absl::StrFormat(
      "[ soak %s ] %d hosts, seed %d: %d messages posted, %d completed (%d ok, %.1f MB verified "
      "of %.1f MB posted), bytes lost %d\n",
      name, r.hosts, r.seed, r.posted, r.completed, r.succeeded,
      static_cast<double>(r.bytes_verified) / 1e6, static_cast<double>(r.bytes_posted) / 1e6,
      r.bytes_lost);
  if (!r.first_stuck.empty()) {
    absl::StrAppend(&s, absl::StrFormat("[ soak %s ] never completed: RUD %d, ROD %d, RUDI %d, "
                                        "UUD %d (%d posted by RCCC hosts); first: %s\n",
                                        name, r.stuck[0], r.stuck[1], r.stuck[2], r.stuck[3],
                                        r.stuck_on_rccc, r.first_stuck));
  }
  if (c.uet_tss) {
    std::string drops;
    for (size_t i = 0; i < r.tss_drops.size(); ++i) {
      if (r.tss_drops[i] != 0) {
        absl::StrAppend(&drops, " ", tss::drop_name(static_cast<tss::Drop>(i)), "=", r.tss_drops[i]);
      }
    }
    absl::StrAppend(&s, absl::StrFormat("[ soak %s ] TSS: %d frames sealed, %d opened, %d trimmed "
                                        "read untrusted, %d rotations, %d SYNs below the expected "
                                        "start PSN; dropped:%s\n",
                                        name, r.tss_sealed, r.tss_opened, r.tss_trimmed,
                                        r.tss_rotations, r.tss_start_psn_refused,
                                        drops.empty() ? " none" : drops));
  }
  if (c.uet_tagged > 0) {
    absl::StrAppend(&s, absl::StrFormat("[ soak %s ] tagged sends: %d posted (%d with the receive "
                                        "posted after the send), %d received whole, %d held "
                                        "unexpected, %d never received\n",
                                        name, r.tagged_posted, r.tagged_late, r.tagged_received,
                                        r.tagged_unexpected, r.tagged_unreceived));
  }
  if (c.uet_rendezvous_bytes > 0) {
    absl::StrAppend(&s, absl::StrFormat("[ soak %s ] rendezvous (above %d bytes): %d sends, "
                                        "%d READs of their sources, %d timed out\n",
                                        name, c.uet_rendezvous_bytes, r.rendezvous,
                                        r.rendezvous_reads, r.rendezvous_timeouts));
  }
  if (c.uet_deferrable > 0) {
    absl::StrAppend(&s, absl::StrFormat("[ soak %s ] deferrable tagged sends: %d deferred by "
                                        "their target, %d restarted on its RTR, %d receives "
                                        "whose restart never came\n",
                                        name, r.deferrals, r.deferral_restarts,
                                        r.deferral_timeouts));
  }
  if (c.atomics > 0) {
    absl::StrAppend(&s, absl::StrFormat("[ soak %s ] atomics: %d fetching adds posted, %d "
                                        "succeeded, %d duplicates answered from the held result (RoCEv2: replay cache), "
                                        "%d pairs miscounted\n",
                                        name, r.atomics_posted, r.atomics_ok, r.atomic_replays,
                                        r.atomic_miscounts));
  }
  std::string errs;
  for (size_t i = 1; i < r.errors.size(); ++i) {
    if (r.errors[i] != 0) {
      absl::StrAppend(&errs, " ", to_string(static_cast<OpStatus>(i)), "=", r.errors[i]);
    }
  }
  absl::StrAppend(
      &s, absl::StrFormat("[ soak %s ] error completions:%s (writes posted with a bad key: %d, "
                          "refused untouched: %d); double %d, unknown %d, corrupt %d, stray "
                          "bytes %d\n",
                          name, errs.empty() ? std::string(" none") : errs, r.bad_key_posted,
                          r.bad_key_refused, r.double_completions, r.unknown_completions,
                          r.corrupt_messages, r.stray_writes));
  absl::StrAppend(
      &s,
      absl::StrFormat("[ soak %s ] faults: %d frames sent; lost %d, corrupted %d, duplicated %d, "
                      "reordered %d, trimmed %d, buffer/link-down drops %d, lossless drops %d, ECN "
                      "marks %d, PFC pauses %d, link failures %d (%d host links)\n",
                      name, r.frames, r.wire_losses, r.corruptions, r.duplicates, r.reorders,
                      r.trims, r.buffer_drops, r.lossless_drops, r.ecn_marks, r.pauses,
                      r.link_failures, r.host_link_failures));
  std::string why;
  for (size_t i = 1; i < wire::kNumWireErrors; ++i) {
    if (r.wire.count[i] != 0) {
      absl::StrAppend(&why, " ", std::string(wire::name(static_cast<wire::WireError>(i))), "=",
                      r.wire.count[i]);
    }
  }
  if (r.check_failures_ambiguous + r.tss_clear_refused > 0 ||
      std::any_of(r.tss_drops.begin(), r.tss_drops.end(), [](uint64_t n) { return n != 0; })) {
    for (tss::Drop d : {tss::Drop::kShort, tss::Drop::kUnknownSdi, tss::Drop::kStaleEpoch,
                        tss::Drop::kBadTag}) {
      if (const uint64_t n = r.tss_drops[static_cast<size_t>(d)]; n != 0)
        absl::StrAppend(&why, " tss_", tss::drop_name(d), "=", n);
    }
    if (r.tss_clear_refused != 0) absl::StrAppend(&why, " tss_clear=", r.tss_clear_refused);
    absl::StrAppend(&why, "; and ", r.check_failures_ambiguous,
                    " TSS drops a duplicate or a retired key may explain (replay, too old, no key)");
  }
  absl::StrAppend(
      &s, absl::StrFormat("[ soak %s ] damaged frames that reached a host %d, %d of them "
                          "detectably (fabric-wide: %d damaged frames rewritten by a switch, %d "
                          "damaged where no check covers); rejected by the receivers %d:%s\n",
                          name, r.damaged_arrivals, r.corrupted_arrivals, r.corrupted_rewrites,
                          r.corrupted_unchecked, r.check_failures,
                          why.empty() ? std::string(" none") : why));
  absl::StrAppend(
      &s, absl::StrFormat("[ soak %s ] repair: retransmissions %d, timeouts %d, duplicates "
                          "received %d, NAKs/NACKs sent %d, go-back-N %d (NAKs during one: %d), "
                          "trimmed NACKed %d, CNPs %d\n",
                          name, r.retransmissions, r.timeouts, r.rx_duplicates, r.naks, r.go_back_n,
                          r.naks_in_round, r.trimmed_nacks, r.cnps));
  if (c.kind == Kind::kUet) {
    absl::StrAppend(
        &s, absl::StrFormat("[ soak %s ] modes: ROD %d (staged %d), RUDI %d (requests run %d), "
                            "UUD %d (delivered %d, lost %d, partial %d); RCCC hosts %d, "
                            "credit granted %.1f MB\n",
                            name, r.rod_posted, r.rod_staged, r.rudi_posted, r.rudi_executed,
                            r.uud_posted, r.uud_delivered, r.uud_lost, r.uud_partial, r.rccc_hosts,
                            static_cast<double>(r.credit_granted) / 1e6));
    absl::StrAppend(
        &s, absl::StrFormat("[ soak %s ] tables: PDCs per host peak %d, at end %d "
                            "(bound %d, max_pdcs %d), closed %d, replaced by a new SYN %d",
                            name, r.pdcs_peak, r.pdcs_end, r.pdc_bound, UetConfig{}.max_pdcs,
                            r.pdcs_closed, r.pdcs_reopened));
  } else {
    absl::StrAppend(
        &s, absl::StrFormat("[ soak %s ] tables: QPs connected %d (in error %d), "
                            "writes outstanding at end %d",
                            name, r.qps_connected, r.qps_in_error, r.writes_outstanding_end));
  }
  absl::StrAppend(
      &s, absl::StrFormat("; sim frame pool peak %d (in use at end %d), events pending at end "
                          "%d\n",
                          r.frame_pool_peak, r.frames_in_use_end, r.events_pending_end));
  absl::StrAppend(
      &s, absl::StrFormat(
              "[ soak %s ] memory: RSS at 25%% of completions %.1f MiB, at end %.1f "
              "MiB, peak %.1f MiB; %.2f ms simulated, %d events, %.1f s wall\n",
              name, static_cast<double>(r.rss_quarter_kib) / 1024,
              static_cast<double>(r.rss_end_kib) / 1024, static_cast<double>(r.peak_rss_kib) / 1024,
              static_cast<double>(r.sim_time) / kMillisecond, r.events, r.wall_seconds));
  return s;
}

void expect_sound(const SoakConfig& c, const SoakResult& r) {
  // Every message completed exactly once, and nothing was lost or damaged.
  EXPECT_EQ(r.posted, r.target);
  EXPECT_EQ(r.completed, r.target);
  EXPECT_EQ(r.double_completions, 0u);
  EXPECT_EQ(r.unknown_completions, 0u);
  EXPECT_EQ(r.corrupt_messages, 0u);
  EXPECT_EQ(r.stray_writes, 0u);
  EXPECT_EQ(r.bytes_lost, 0u);
  // Every tagged send was received, whole, exactly once (on_tagged_recv checks each).
  EXPECT_EQ(r.tagged_received, r.tagged_posted);
  EXPECT_EQ(r.tagged_unreceived, 0u);
  if (c.uet_tagged > 0) {
    EXPECT_GT(r.tagged_unexpected, 0u);
  }
  // Every atomic ran exactly once: each pair's counter is its successful adds (collect).
  EXPECT_EQ(r.atomic_miscounts, 0u);
  if (c.atomics > 0) {
    EXPECT_GT(r.atomics_ok, 0u);
  }
  // Error completions say why, and only the writes built to fail fail: a bad key ends in a
  // remote access error with nothing placed.
  EXPECT_EQ(r.bad_key_refused, r.bad_key_posted);
  uint64_t errors = 0;
  for (uint64_t e : r.errors) errors += e;
  EXPECT_EQ(r.errors[static_cast<size_t>(OpStatus::kSuccess)], 0u);
  EXPECT_EQ(errors, r.bad_key_posted) << "error completions beyond the bad-key writes";
  EXPECT_EQ(r.succeeded + errors, r.completed);
  EXPECT_EQ(r.bytes_verified + r.bytes_failed + r.bytes_lost, r.bytes_posted);
  // Every fault happened.
  EXPECT_GT(r.wire_losses, 0u);
  EXPECT_GT(r.corruptions, 0u);
  EXPECT_GT(r.duplicates, 0u);
  EXPECT_GT(r.reorders, 0u);
  EXPECT_GT(r.link_failures, 0u);
  // RUDI and UUD: what was posted ran; a UUD write arrived whole or not at all.
  EXPECT_EQ(r.uud_partial, 0u);
  EXPECT_EQ(r.uud_delivered + r.uud_lost, r.uud_posted);
  if (c.uet_rudi > 0) {
    EXPECT_GT(r.rudi_posted, 0u);
    EXPECT_GE(r.rudi_executed, r.rudi_posted);
  }
  if (c.uet_uud > 0) {
    EXPECT_GT(r.uud_delivered, 0u);
  }
  if (r.rccc_hosts > 0) {
    EXPECT_GT(r.credit_granted, 0u);
  }
  if (c.uet_tss) {
    // Frames went sealed and only sealed frames were taken (a clear one is damage, counted in
    // check_failures below); trimmed ones were read.
    EXPECT_GT(r.tss_opened, 0u);
    EXPECT_GT(r.tss_trimmed, 0u);
    if (c.tss_rotate_every > 0) {
      EXPECT_GT(r.tss_rotations, 0u);
    }
  }
  if (c.kind == Kind::kUet) {
    EXPECT_GT(r.trims, 0u);
    if (c.bad_key > 0) {
      EXPECT_GT(r.bad_key_posted, 0u);
    }
  }
  // Damaged frames fail their checks: each one that reached a host still damaged was
  // rejected, and no clean frame was. (In between: damage a switch's rewrite hid, or that no
  // checksum covers, which may still fail another check: see sim::PortStats.)
  EXPECT_GT(r.corrupted_arrivals, 0u);
  EXPECT_GE(r.check_failures + r.check_failures_ambiguous, r.corrupted_arrivals);
  EXPECT_LE(r.check_failures, r.damaged_arrivals);
  // Memory: engine tables within their bounds and drained; the simulator's frames returned.
  if (c.kind == Kind::kUet) {
    EXPECT_LE(r.pdcs_peak, r.pdc_bound);
    EXPECT_LE(r.pdcs_end, r.pdc_bound);
  } else {
    EXPECT_EQ(r.writes_outstanding_end, 0u);
    EXPECT_EQ(r.qps_in_error, 0u);
  }
  EXPECT_EQ(r.frames_in_use_end, 0u);
  EXPECT_LT(r.frame_pool_peak, 64u * 1024);  // 64 Ki frames of 4.3 KB: 280 MB
  // RSS: the buffers (2 rings per pair) and the pool, plus a margin; flat after warm-up.
  // (Not under AddressSanitizer, whose shadow memory and quarantine move RSS on their own.)
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(r.peak_rss_kib, 1024u * 1024);
  EXPECT_LT(r.rss_end_kib, r.rss_quarter_kib + 64 * 1024);
#endif
}

}  // namespace uet::soak
