// Any fabric, described link by link in a text file, for a topology no builder makes.
//
//   # a leaf-spine of two leaves; '#' starts a comment that runs to the end of the line
//   host h0                  # hosts are numbered in file order: h0 is host 0 (10.0.0.1)
//   host h1
//   switch leaf0
//   switch leaf1
//   switch spine0
//   link h0 leaf0 100 500    # link A B GBPS DELAY_NS: rate in Gb/s, one-way delay in ns
//   link h1 leaf1 100 500
//   link leaf0 spine0 400 1000
//   link leaf1 spine0 400 1000
//
// Lines hold a keyword and its fields, separated by blanks; keywords are lower case. A name
// (letters, digits and _ . : - /) is declared once, by `host` or `switch`, before a link names
// it. Every host has exactly one link, to a switch (its NIC); a switch has at least one link;
// parallel links between two switches are allowed (ECMP spreads over them). Rates are
// 0.001..10000 Gb/s, delays 0..10^10 ns (10 s). Links are connected in file order, so port
// numbers follow it (two per link, Network::connect). Every error names the file and line.
// Routes: shortest-path ECMP over the graph (Network::finalize); hosts with no path between
// them have no route, and their frames are dropped at the first switch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/network.h"
#include "sim/topology.h"

namespace uet::sim {

struct GraphTopology {
  struct End {
    bool host = false;
    uint32_t index = 0;  // host or switch number, in file order
  };
  struct Link {
    End a, b;
    LinkConfig config;
  };
  std::vector<std::string> hosts;
  std::vector<std::string> switches;
  std::vector<Link> links;
};

absl::StatusOr<GraphTopology> parse_graph_topology(std::string_view text,
                                                   std::string_view where = "graph");
absl::StatusOr<GraphTopology> load_graph_topology(const std::string& path);

TopologySize graph_size(const GraphTopology& g) noexcept;

// Hosts (in file order), then switches, then links; then finalize().
absl::Status build_graph(Network& net, const GraphTopology& g);

}  // namespace uet::sim
