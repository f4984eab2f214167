// An A/B run split over ranks (sim/partition.h): the ranks a run uses when its RunConfig names
// none, and the exchange after it that gives every rank the whole result.
#pragma once

#include <vector>

#include "sim/flow_stats.h"
#include "sim/network.h"
#include "sim/partition.h"
#include "sim/udp_app.h"

namespace uet::ab {

// The ranks set_default_ranks() named (ab_runner.h); null: none.
sim::Ranks* default_ranks() noexcept;

// Every rank gets what the others ran: the records of the flows their hosts started; so every
// rank returns the same result, and a caller that decides from it (a sweep, the next
// collective) decides the same on every rank.
void merge_ranks(sim::Ranks& ranks, sim::Network& net, std::vector<sim::FlowRecord>& records);

// sim::port_summary of the whole fabric, on every rank: each rank sums its own ports and the
// sums, maxima and the busiest port (the largest average, the lowest port number among equal
// ones, as one process finds it) are reduced over the ranks. No rank holds another's ports'
// counters: a fabric's ports cost each rank only its share.
sim::PortSummary port_summary_ranks(sim::Ranks& ranks, sim::Network& net, Time window);

}  // namespace uet::ab
