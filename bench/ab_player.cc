#include "bench/ab_player.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <new>
#include <span>
#include <utility>

namespace uet::ab {
namespace {

// What every request of flow `f` carries whatever its verb: its id, peer, bytes and channel.
template <typename Request>
Request flow_request(const sim::FlowSpec& f, uint32_t peer, const uint8_t* local) {
  Request r;
  r.wr_id = f.id;
  r.peer = peer;
  r.local = local;
  r.length = f.bytes;
  r.channel = f.channel;
  return r;
}

}  // namespace

void HostAdapter::rx(std::span<Frame* const> frames, Time now) {
  ep_->rx(frames, now);
  drain(now);
}

void HostAdapter::on_timer(Time now) {
  ep_->on_timer(now);
  drain(now);
}

void HostAdapter::drain(Time now) {
  // Storage the endpoint assigns whole completions into (C++20: a byte array implicitly
  // creates them), so that a call, which most often finds none, initialises nothing.
  alignas(Completion) std::byte storage[16 * sizeof(Completion)];
  const std::span<Completion> c(std::launder(reinterpret_cast<Completion*>(storage)), 16);
  for (;;) {
    const size_t n = ep_->poll_completions(c);
    for (size_t i = 0; i < n; ++i) player_->on_completion(c[i], now);
    if (n < c.size()) return;
  }
}

Player::Player(sim::Network& net, const std::vector<sim::FlowSpec>& flows,
               std::vector<std::unique_ptr<Endpoint>>& eps, const uint8_t* src, uint8_t* dst,
               uint64_t dst_bytes, uint32_t rkey, DeliveryMode mode, Verb verb, Time recv_delay,
               bool tagged, bool deferrable, std::function<Time(uint32_t, uint32_t)> notice)
    : net_(net), flows_(flows), eps_(eps), src_(src), dst_(dst), dst_bytes_(dst_bytes),
      rkey_(rkey), mode_(mode), verb_(verb), recv_delay_(recv_delay), tagged_(tagged),
      deferrable_(deferrable), notice_(std::move(notice)),
      records_(flows.size()) {
  if (verb == Verb::kAtomic) fetched_.assign(flows.size(), 0);
  const bool edges = std::any_of(flows.begin(), flows.end(),
                                 [](const sim::FlowSpec& f) { return !f.after.empty(); });
  if (edges) {
    waiting_.assign(flows.size(), 0);
    dependents_ = sim::flow_dependents(flows);
  }
  for (const sim::FlowSpec& f : flows) {
    records_[f.id].src = f.src;
    records_[f.id].dst = f.dst;
    records_[f.id].bytes = verb == Verb::kAtomic && !f.compute ? 8 : f.bytes;
    records_[f.id].start = kNever;
    if (edges) waiting_[f.id] = static_cast<uint32_t>(f.after.size());
  }
  net.register_callback(this);  // the same number on every rank: notices name it
}

void Player::schedule_initial() {
  for (const sim::FlowSpec& f : flows_)
    if (f.after.empty() && net_.owns_host(f.src)) ready(f.id, 0);
}

void Player::fire(sim::Network& net, Time now, uint32_t cookie) {
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
absl::Status Player::post(const sim::FlowSpec& f) {
  const uint32_t peer = sim::Network::host_ip4(f.dst);
  Endpoint& ep = *eps_[f.src];
  switch (verb_) {
    case Verb::kWrite: {
      auto wr = flow_request<WriteRequest>(f, peer, src_);
      wr.rkey = rkey_;
      wr.mode = mode_;
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
        auto ts = flow_request<TaggedSendRequest>(f, peer, src_);
        ts.tag = f.id;
        ts.mode = mode_;
        ts.deferrable = deferrable_;
        return ep.post_tsend(ts);
      }
      return ep.post_send(flow_request<SendRequest>(f, peer, src_));
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
absl::Status Player::post_recv(const sim::FlowSpec& f) {
  Endpoint& rx = *eps_[f.dst];
  if (tagged_) {
    return rx.post_trecv(
        {f.id | kRecvBit, dst_, dst_bytes_, f.id, 0, sim::Network::host_ip4(f.src)});
  }
  return rx.post_recv({f.id | kRecvBit, dst_, dst_bytes_});
}

void Player::complete(uint32_t id, Time now, bool ok) {
  sim::FlowRecord& r = records_[id];
  if (r.finish != kNever) return;
  r.finish = now;
  r.received = ok ? r.bytes : 0;
  r.sent = r.bytes;
  ++completed_;
  // A waiting flow on this host starts `start` after its last prerequisite completes; one
  // on another host hears of it a path's unloaded propagation later, as a message from
  // here would (which also keeps every rank of a split fabric a cut link's delay ahead).
  if (dependents_.begin.empty()) return;  // no flow waits for another
  const uint32_t host = flows_[id].src;
  for (uint32_t i = dependents_.begin[id]; i < dependents_.begin[id + 1]; ++i) {
    const uint32_t next = dependents_.ids[i];
    const sim::FlowSpec& d = flows_[next];
    if (d.src == host) {
      if (--waiting_[next] == 0) ready(next, now);
    } else {
      net_.schedule_at_host(d.src, now + notice_(host, d.src), this, next | kNotice);
    }
  }
}

void Player::on_completion(const Completion& c, Time now) {
  if ((c.wr_id & kRecvBit) != 0) {  // a receive (--verb=send): its flow completes at the sender
    if (c.status != OpStatus::kSuccess) fail(static_cast<uint32_t>(c.wr_id & ~kRecvBit));
    return;
  }
  if (c.status != OpStatus::kSuccess) fail(static_cast<uint32_t>(c.wr_id));
  complete(static_cast<uint32_t>(c.wr_id), now, c.status == OpStatus::kSuccess);
}

// Flow `id` failed (its send, its receive or both: counted once).
void Player::fail(uint32_t id) {
  if (flow_failed_.empty()) flow_failed_.assign(flows_.size(), false);
  if (!flow_failed_[id]) {
    flow_failed_[id] = true;
    ++failed_;
  }
}

// Flow `id`'s prerequisites are done: it starts `start` from now, or a compute task on a
// stream waits its turn there.
void Player::ready(uint32_t id, Time now) {
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
void Player::release(uint32_t host, uint8_t stream, Time now) {
  Stream& s = streams_[uint64_t{host} << 8 | stream];
  s.busy = !s.ready.empty();
  if (!s.busy) return;
  std::pop_heap(s.ready.begin(), s.ready.end(), std::greater<>());
  const uint32_t next = s.ready.back();
  s.ready.pop_back();
  net_.schedule(now + flows_[next].start, this, next);
}

}  // namespace uet::ab
