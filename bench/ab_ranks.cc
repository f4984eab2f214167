#include "bench/ab_ranks.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/status/statusor.h"
#include "bench/ab_runner.h"
#include "sim/mpi_ranks.h"

namespace uet::ab {
namespace {

sim::Ranks* g_default_ranks = nullptr;

}  // namespace

sim::Ranks* default_ranks() noexcept { return g_default_ranks; }

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

void merge_ranks(sim::Ranks& ranks, sim::Network& net, std::vector<sim::FlowRecord>& records) {
  std::vector<uint8_t> mine;
  auto put = [&mine](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    mine.insert(mine.end(), b, b + n);
  };
  uint64_t count = 0;
  for (const sim::FlowRecord& r : records) count += net.owns_host(r.src) ? 1 : 0;
  mine.reserve(sizeof(count) + count * (sizeof(uint32_t) + sizeof(sim::FlowRecord)));
  put(&count, sizeof(count));
  for (uint32_t i = 0; i < records.size(); ++i) {
    if (!net.owns_host(records[i].src)) continue;
    put(&i, sizeof(i));
    put(&records[i], sizeof(sim::FlowRecord));
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
    if (at != in.size()) ranks.abort("merge: a rank sent more than its records");
  }
}

sim::PortSummary port_summary_ranks(sim::Ranks& ranks, sim::Network& net, Time window) {
  sim::PortSummary s = sim::port_summary(net, window);  // another rank's ports count 0 here
  std::array<uint64_t, 8> sums{s.drops,  s.lossless_drops, s.wire_losses, s.corruptions,
                               s.trims,  s.ecn_marks,      s.pauses,
                               static_cast<uint64_t>(s.paused_time)};
  // Non-negative doubles order as their bit patterns do, so the largest average travels as
  // its bits; then the lowest port holding it.
  const double busiest =
      s.busiest_port == sim::kNone ? -1 : net.port_stats(s.busiest_port).queue_byte_ps;
  std::array<uint64_t, 2> most{s.max_queue_bytes,
                               busiest < 0 ? 0 : std::bit_cast<uint64_t>(busiest)};
  ranks.sum_all(sums);
  ranks.max_all(most);
  const int64_t port =
      ranks.min_all(busiest >= 0 && std::bit_cast<uint64_t>(busiest) == most[1]
                        ? static_cast<int64_t>(s.busiest_port)
                        : INT64_MAX);
  s.drops = sums[0];
  s.lossless_drops = sums[1];
  s.wire_losses = sums[2];
  s.corruptions = sums[3];
  s.trims = sums[4];
  s.ecn_marks = sums[5];
  s.pauses = sums[6];
  s.paused_time = static_cast<Time>(sums[7]);
  s.max_queue_bytes = most[0];
  s.busiest_port = port == INT64_MAX ? sim::kNone : static_cast<uint32_t>(port);
  const Time over = window > 0 ? window : net.now();
  s.busiest_avg_queue_bytes = s.busiest_port != sim::kNone && over > 0
                                  ? std::bit_cast<double>(most[1]) / static_cast<double>(over)
                                  : 0;
  return s;
}

}  // namespace uet::ab
