// Which links a run's flows crossed (RunConfig::path_report): how many flows share each link,
// tier by tier. With one EV per PDC (single-path ECMP) a flow's tail is set by the flows its
// one path shares links with, so this is what tells hash luck from modelling when two
// simulators' single-path tails differ (bench/README.md, "Where we differ from uet-htsim").
//
// Each host's data frames are seen as they leave it (PathRecorder, wrapping the host's
// transport) and noted once per (source, destination, flow hash) with their count and bytes;
// after the run each such path is walked through the routing the switches forwarded by
// (Network::route_port, minimal or Valiant exactly; UGAL with the queues as they are at the end)
// and every port on it counted. Data frames are those of the data class (classify_dscp): UET's
// ACKs travel in the control class; RoCEv2's share its data class, so a host pair writing both
// ways counts each other's ACKs too.
//
// Ownership: the Run owns one PathLog and one recorder per host it runs; the recorders append
// to the log on the simulator's thread (a hash map reserved for the expected paths: this is a
// diagnostic, off unless asked). path_report() reads the log once the run is over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sim/network.h"
#include "sim/partition.h"
#include "transport/transport.h"

namespace uet::ab {

// The links from switches of one level to another. Level 0 is the hosts, 1 the switches with
// hosts (ToRs, leaves), and each next level one link further from every host.
struct TierLoad {
  std::string name;                 // "ToR->agg", "agg->core", "core->agg", "leaf->spine", ...
  uint32_t from_level = 0, to_level = 0;
  uint32_t links = 0;               // directed links (egress ports) of the tier
  std::vector<uint32_t> histogram;  // [n]: how many of the tier's links n flows crossed
  uint32_t max_flows = 0;
  uint64_t max_bytes = 0;           // data frame bytes through the tier's busiest port
  uint64_t trims = 0, max_trims = 0;  // frames the tier's ports trimmed: all, the most at one
  uint64_t ecn_marks = 0;
};

struct PathReport {
  std::vector<TierLoad> tiers;  // up the levels, then across, then down
  uint64_t flows = 0;           // (source, destination) host pairs that sent data frames
  uint64_t paths = 0;           // distinct (source, destination, flow hash)
  uint64_t flow_links = 0;      // summed over links: the flows crossing each
  bool unreached = false;       // some path did not reach its destination host
};

// The data frames each host sent, by (source << 32 | destination, flow hash).
class PathLog {
 public:
  struct Sent {
    uint64_t frames = 0;
    uint64_t bytes = 0;
  };
  using Key = std::pair<uint64_t, uint64_t>;

  explicit PathLog(size_t expected_paths) { sent_.reserve(expected_paths); }
  void note(uint32_t src_host, const Frame& f);
  const absl::flat_hash_map<Key, Sent>& sent() const noexcept { return sent_; }

 private:
  absl::flat_hash_map<Key, Sent> sent_;
};

// Forwards every call to the host's transport and notes the data frames it sends.
class PathRecorder final : public Transport {
 public:
  PathRecorder(Transport* inner, uint32_t host, PathLog* log)
      : inner_(inner), log_(log), host_(host) {}
  void rx(std::span<Frame* const> frames, Time now) override { inner_->rx(frames, now); }
  size_t tx(std::span<Frame* const> out, Time now) override {
    const size_t n = inner_->tx(out, now);
    for (size_t i = 0; i < n; ++i) log_->note(host_, *out[i]);
    return n;
  }
  Time next_deadline() const override { return inner_->next_deadline(); }
  void on_timer(Time now) override { inner_->on_timer(now); }

 private:
  Transport* inner_;
  PathLog* log_;
  uint32_t host_;
};

// Every port's flows and bytes from the log (summed over the ranks: each logs its own hosts),
// grouped into tiers. Every rank gets the same report.
PathReport path_report(const sim::Network& net, const PathLog& log, sim::Ranks& ranks);

}  // namespace uet::ab
