#include "sim/workload_runner.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace uet::sim {

namespace {

constexpr Time kMaxStart = Time{1} << 62;  // so that now + start cannot overflow

absl::Status check_sizes(const std::vector<FlowSpec>& flows, size_t hosts,
                         const WorkloadRunnerConfig& config) {
  if (hosts < 2) return absl::FailedPreconditionError("workload runner: the network has < 2 hosts");
  if (flows.size() > kMaxWorkloadFlows) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload runner: ", flows.size(), " flows, at most ", kMaxWorkloadFlows));
  }
  if (config.payload_per_packet < 1 || config.payload_per_packet > 65000) {
    return absl::InvalidArgumentError(absl::StrCat("workload runner: payload_per_packet ",
                                                   config.payload_per_packet,
                                                   " out of range [1, 65000]"));
  }
  uint64_t edges = 0;
  for (const FlowSpec& f : flows) edges += f.after.size();
  if (edges > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload runner: ", edges, " `after` edges, at most 2^32 - 1"));
  }
  return absl::OkStatus();
}

// Flow i of n, on a network of `hosts` hosts.
absl::Status check_flow(const FlowSpec& f, size_t i, size_t n, size_t hosts) {
  const std::string at = absl::StrCat("workload runner: flow ", i, ": ");
  if (f.id != i) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, "id ", f.id, " must equal its index (append_flows renumbers)"));
  }
  if (f.compute) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, "a compute task: the A/B runner plays those, not raw UDP"));
  }
  if (f.src >= hosts || f.dst >= hosts || f.src == f.dst) {
    return absl::InvalidArgumentError(absl::StrCat(
        at, "src ", f.src, " and dst ", f.dst, " must be distinct hosts in [0, ", hosts - 1, "]"));
  }
  if (f.bytes < 1) return absl::InvalidArgumentError(absl::StrCat(at, "bytes must be >= 1"));
  if (f.start < 0 || f.start >= kMaxStart) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, "start ", f.start, " ps out of range [0, 2^62)"));
  }
  for (uint32_t a : f.after) {
    if (a >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, "after names flow ", a, ", ids are in [0, ", n, ")"));
    }
  }
  return absl::OkStatus();
}

// A topological pass (Kahn) over the `after` edges: every flow must be reachable from the
// flows that wait on nothing, or it would never start.
absl::Status check_acyclic(const FlowDependents& dependents, std::vector<uint32_t> left) {
  const auto n = static_cast<uint32_t>(left.size());
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (left[i] == 0) ready.push_back(i);
  size_t seen = 0;
  while (!ready.empty()) {
    const uint32_t f = ready.back();
    ready.pop_back();
    ++seen;
    for (uint32_t k = dependents.begin[f]; k < dependents.begin[f + 1]; ++k)
      if (--left[dependents.ids[k]] == 0) ready.push_back(dependents.ids[k]);
  }
  if (seen == n) return absl::OkStatus();
  uint32_t stuck = 0;
  while (left[stuck] == 0) ++stuck;
  return absl::InvalidArgumentError(absl::StrCat("workload runner: flow ", stuck,
                                                 " waits on a dependency cycle (`after` edges)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkloadRunner>> WorkloadRunner::create(
    Network& net, std::vector<FlowSpec> flows, const WorkloadRunnerConfig& config) {
  const size_t hosts = net.num_hosts();
  if (absl::Status s = check_sizes(flows, hosts, config); !s.ok()) return s;
  const size_t n = flows.size();
  for (size_t i = 0; i < n; ++i) {
    if (absl::Status s = check_flow(flows[i], i, n, hosts); !s.ok()) return s;
  }

  std::unique_ptr<WorkloadRunner> r(new WorkloadRunner(net, std::move(flows), config));
  r->dependents_ = flow_dependents(r->flows_);
  r->waiting_on_.resize(n);
  for (size_t i = 0; i < n; ++i)
    r->waiting_on_[i] = static_cast<uint32_t>(r->flows_[i].after.size());
  if (absl::Status s = check_acyclic(r->dependents_, r->waiting_on_); !s.ok()) {
    return s;
  }
  r->attach_apps();
  const Time now = net.now();
  for (uint32_t i = 0; i < n; ++i)
    if (r->waiting_on_[i] == 0) net.schedule(now + r->flows_[i].start, r.get(), i);
  return r;
}

// Records exist for every flow from the start, so the apps never resize the vector.
void WorkloadRunner::attach_apps() {
  records_.resize(flows_.size());
  for (size_t i = 0; i < flows_.size(); ++i) {
    FlowRecord& rec = records_[i];
    rec.src = flows_[i].src;
    rec.dst = flows_[i].dst;
    rec.bytes = flows_[i].bytes;
    rec.start = kNever;
  }
  const auto hosts = static_cast<uint32_t>(net_.num_hosts());
  apps_.reserve(hosts);
  for (uint32_t h = 0; h < hosts; ++h) {
    apps_.push_back(
        std::make_unique<UdpApp>(h, &records_, config_.payload_per_packet, config_.ect));
    apps_.back()->set_completion_hook(
        [this](uint32_t flow_id, Time now) { on_complete(flow_id, now); });
    net_.attach(h, apps_.back().get());
  }
}

WorkloadRunner::WorkloadRunner(Network& net, std::vector<FlowSpec> flows,
                               const WorkloadRunnerConfig& config)
    : net_(net), config_(config), flows_(std::move(flows)) {}

void WorkloadRunner::fire(Network& net, Time now, uint32_t flow_id) {
  const FlowSpec& f = flows_[flow_id];
  UdpFlow u{flow_id, f.dst, f.bytes, now, source_port(flow_id), config_.spray};
  apps_[f.src]->add_flow(u);
  ++started_;
  net.kick(f.src);
}

// From a sink's rx(): only schedules, never touches an app's data path directly (the sink may
// be the source of a dependent flow).
void WorkloadRunner::on_complete(uint32_t flow_id, Time now) {
  ++completed_;
  for (uint32_t k = dependents_.begin[flow_id]; k < dependents_.begin[flow_id + 1]; ++k) {
    const uint32_t d = dependents_.ids[k];
    if (--waiting_on_[d] == 0) net_.schedule(now + flows_[d].start, this, d);
  }
}

}  // namespace uet::sim
