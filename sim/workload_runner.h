// Plays a workload (sim/workload.h) on a Network with raw UDP sources and sinks.
//
// The runner creates one UdpApp per host and attaches it. Flows without prerequisites are
// scheduled at creation, at now + start; a flow with prerequisites is scheduled when the last
// of them completes (its sink's completion hook fires), `start` later. At its start time a flow
// is added to its source's app and the source's NIC is kicked. No polling: the only events the
// runner adds are one Network::schedule() per flow.
//
// Ownership and threads: the runner owns the apps and the FlowRecords (indexed by flow id) and
// must outlive the network's run; the network holds pointers to both. One runner per network
// (it attaches every host). Single-threaded, like the Network. Bounds: flow ids are indices
// (flows[i].id == i), at most kMaxWorkloadFlows flows, validated at creation.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/network.h"
#include "transport/wire/net_headers.h"
#include "sim/udp_app.h"
#include "sim/workload.h"

namespace uet::sim {

struct WorkloadRunnerConfig {
  bool spray = false;                  // vary the UDP source port per packet (UdpFlow::spray)
  uint32_t payload_per_packet = 4096;  // UdpApp's MSS
  bool ect = true;                     // send ECN-capable frames
};

class WorkloadRunner : public Scheduled {
 public:
  // Validates the flows (ids are indices; src and dst are distinct hosts of `net`; bytes >= 1;
  // `after` names other flows and has no cycle), attaches an app to every host and schedules
  // the flows that have no prerequisites.
  static absl::StatusOr<std::unique_ptr<WorkloadRunner>> create(
      Network& net, std::vector<FlowSpec> flows, const WorkloadRunnerConfig& config = {});

  // The UDP source port of a flow (the ECMP input; the base of its spray sequence).
  static uint16_t source_port(uint32_t flow_id) noexcept {
    return wire::dynamic_port(flow_id);
  }

  void fire(Network& net, Time now, uint32_t flow_id) override;

  const std::vector<FlowSpec>& flows() const noexcept { return flows_; }
  // Per flow id: start (kNever until the flow has started), finish, bytes sent and received.
  const std::vector<FlowRecord>& records() const noexcept { return records_; }
  size_t started() const noexcept { return started_; }
  size_t completed() const noexcept { return completed_; }
  bool done() const noexcept { return completed_ == flows_.size(); }
  const UdpApp& app(uint32_t host) const noexcept { return *apps_[host]; }

 private:
  WorkloadRunner(Network& net, std::vector<FlowSpec> flows, const WorkloadRunnerConfig& config);
  // Records for every flow, and an app on every host, attached to the network.
  void attach_apps();
  void on_complete(uint32_t flow_id, Time now);

  Network& net_;
  WorkloadRunnerConfig config_;
  std::vector<FlowSpec> flows_;
  std::vector<FlowRecord> records_;
  std::vector<std::unique_ptr<UdpApp>> apps_;
  FlowDependents dependents_;  // the flows each flow's completion may release
  std::vector<uint32_t> waiting_on_;  // prerequisites not yet complete, per flow
  size_t started_ = 0;
  size_t completed_ = 0;
};

}  // namespace uet::sim
