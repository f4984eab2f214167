// A fabric split over processes (ranks), each running its part of the event loop, with
// conservative synchronisation in windows: ranks run every event earlier than the earliest
// pending one anywhere plus the lookahead (the smallest delay of a link between two ranks),
// then swap what their cut links carried, and repeat. Nothing a rank sends in a window can be
// due inside it, so every rank runs exactly the events one process would, in the same order
// (Network's event keys do not depend on which events a process holds): results are the
// same for any number of ranks.
//
// The transport between ranks is the caller's (`Ranks`: MPI in sim/mpi_ranks.h, or one
// process); this file only decides who runs what and drives the windows.
//
// Ownership and threads: a Ranks object is the caller's and outlives the run; one thread per
// process. Bounds: a window moves what the cut links carry in one lookahead (the queues'
// limits bound it); a rank refuses a record it cannot place (Network::deliver_remote).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/network.h"

namespace uet::sim {

// The processes of one run. Every call is collective: each rank makes it, in the same order.
class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual uint16_t size() const noexcept = 0;
  virtual uint16_t rank() const noexcept = 0;
  // Sends out[r] to rank r for every r != rank(), clears them, and points in[r] at what rank
  // r sent to this one (in[rank()] empty), valid until the next exchange. Returns the
  // smallest of every rank's `bound`, carried in the same messages: one round, no collective.
  virtual absl::StatusOr<int64_t> exchange(std::vector<std::vector<uint8_t>>& out,
                                           std::vector<std::span<const uint8_t>>& in,
                                           int64_t bound) = 0;
  // The smallest of every rank's `v`.
  virtual int64_t min_all(int64_t v) = 0;
  // In place: each element summed (max_all: the largest) over the ranks.
  virtual void sum_all(std::span<uint64_t> v) = 0;
  virtual void max_all(std::span<uint64_t> v) = 0;
  // Every rank gets every rank's bytes, by rank.
  virtual std::vector<std::vector<uint8_t>> all_gather(std::span<const uint8_t> mine) = 0;
  // Ends the run on every rank with this message (a rank that cannot go on: the others
  // would wait for it forever).
  [[noreturn]] virtual void abort(std::string_view why) = 0;
};

// One process: no partner to wait for.
class OneRank final : public Ranks {
 public:
  uint16_t size() const noexcept override { return 1; }
  uint16_t rank() const noexcept override { return 0; }
  absl::StatusOr<int64_t> exchange(std::vector<std::vector<uint8_t>>& out,
                                   std::vector<std::span<const uint8_t>>& in,
                                   int64_t bound) override;
  int64_t min_all(int64_t v) override { return v; }
  void sum_all(std::span<uint64_t>) override {}
  void max_all(std::span<uint64_t>) override {}
  std::vector<std::vector<uint8_t>> all_gather(std::span<const uint8_t> mine) override;
  [[noreturn]] void abort(std::string_view why) override;
};

// Who runs what: hosts with their ToR (the switch their NIC link reaches); the ToRs in `ranks`
// contiguous blocks by switch number (topology builders number a pod's or a leaf group's
// ToRs together); every other switch, tier by tier away from the ToRs, on the rank it has
// most links to, ties to the rank whose even block of the tier (by switch number) holds it,
// else to the rank with fewest switches of that tier so far (spines and cores spread evenly,
// in blocks). With more ranks than ToRs some ranks run nothing (they only keep step).
// Refused: a cut link without delay (no lookahead).
// With `group_of_switch` (a builder's TopologyLayout::group: a dragonfly group, a torus slab, a
// rail fabric's block of servers) and at least as many groups as ranks, whole groups go to
// ranks instead, group x to rank x * ranks / groups, every switch of the group with it (a
// Dragonfly+ group's spines too); switches without a group (kNone) are placed tier by tier as
// above. Fewer groups than ranks: the groups are ignored.
struct FabricSplit {
  std::vector<uint16_t> rank_of_node;  // by Network node
  Time lookahead = kNever;             // the smallest delay of a cut link (kNever: none cut)
  uint64_t cut_links = 0;
};
absl::StatusOr<FabricSplit> split_fabric(const Network& net, uint16_t ranks,
                                         std::span<const uint32_t> group_of_switch = {});

// What run_windows() did, summed over its calls on this rank.
struct WindowStats {
  uint64_t windows = 0;        // windows run (each ends with one exchange)
  uint64_t records_sent = 0;   // events sent to other ranks (frames, PFC frames, calls)
  uint64_t bytes_sent = 0;
  // Wall time on this rank: running its events, in the reductions and exchanges (waiting
  // for the slowest rank included), and scheduling what arrived.
  double events_s = 0, sync_s = 0, deliver_s = 0;
};

// Runs `net` (split by set_partition) up to `until` in windows, as Network::run_until runs it
// alone: afterwards every rank's now() is `until` and every event due by then has run.
// `lookahead` is split_fabric's. When `stop` is set on any rank, every rank stops after the
// same window and this returns false (now() is that window's end). An error (a record a rank
// refused) ends the run on every rank through Ranks::abort.
bool run_windows(Network& net, Ranks& ranks, Time lookahead, Time until, WindowStats* stats,
                 const std::atomic<bool>* stop = nullptr);

}  // namespace uet::sim
