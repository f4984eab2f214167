// The A/B runner's data path: the player that starts a run's flows on their source hosts and
// completes them there, and the adapter that hosts each Endpoint on a simulated host.
//
// Both live on the simulator's thread and are called once per event: the adapter forwards each
// burst to its endpoint and drains its completions into the player; the player reacts to them
// (dependents, streams) and to the events it scheduled itself (flow starts, notices, late
// receives). No allocation on that path but a flow's dependents and a stream's ready heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "bench/ab_runner.h"
#include "sim/network.h"
#include "sim/udp_app.h"
#include "sim/workload.h"
#include "transport/api.h"

namespace uet::ab {

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
         bool tagged, bool deferrable, std::function<Time(uint32_t, uint32_t)> notice);

  // The flows with no prerequisite whose source host this process runs start.
  void schedule_initial();
  void fire(sim::Network& net, Time now, uint32_t cookie) override;
  void on_completion(const Completion& c, Time now);

  bool done() const noexcept { return completed_ == flows_.size(); }
  size_t completed() const noexcept { return completed_; }
  const std::vector<sim::FlowRecord>& records() const noexcept { return records_; }
  std::vector<sim::FlowRecord>& records() noexcept { return records_; }
  // The records moved out, once the run is over (the player is done with them).
  std::vector<sim::FlowRecord> take_records() noexcept { return std::move(records_); }
  uint64_t failed() const noexcept { return failed_; }  // flows, each counted once

 private:
  static constexpr uint32_t kNotice = 1u << 31;  // above every flow id (kMaxWorkloadFlows)
  static constexpr uint32_t kLateRecv = 1u << 30;  // a flow's receive, posted recv_delay late
  static constexpr uint64_t kRecvBit = uint64_t{1} << 63;  // a receive's wr_id: flow | this

  absl::Status post(const sim::FlowSpec& f);
  absl::Status post_recv(const sim::FlowSpec& f);
  void complete(uint32_t id, Time now, bool ok);
  void fail(uint32_t id);
  void ready(uint32_t id, Time now);
  void release(uint32_t host, uint8_t stream, Time now);

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
  // Per flow id, flat and sized once: its record; with any `after` edge in the run, its
  // prerequisites not yet complete and the flows waiting for it (both empty without edges).
  std::vector<sim::FlowRecord> records_;
  std::vector<uint32_t> waiting_;
  sim::FlowDependents dependents_;
  absl::flat_hash_map<uint64_t, Stream> streams_;  // by host << 8 | stream
  size_t completed_ = 0;
  uint64_t failed_ = 0;
  std::vector<bool> flow_failed_;
};

}  // namespace uet::ab
