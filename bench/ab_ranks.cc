#include "bench/ab_ranks.h"

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
  net.flush_stats();
  std::vector<uint8_t> mine;
  auto put = [&mine](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    mine.insert(mine.end(), b, b + n);
  };
  uint64_t count = 0;
  for (const sim::FlowRecord& r : records) count += net.owns_host(r.src) ? 1 : 0;
  put(&count, sizeof(count));
  for (uint32_t i = 0; i < records.size(); ++i) {
    if (!net.owns_host(records[i].src)) continue;
    put(&i, sizeof(i));
    put(&records[i], sizeof(sim::FlowRecord));
  }
  for (uint32_t p = 0; p < net.num_ports(); ++p) {
    if (!net.owns_port(p)) continue;
    put(&p, sizeof(p));
    const sim::PortStats stats = net.port_stats(p);
    put(&stats, sizeof(stats));
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
    while (at < in.size()) {
      uint32_t p = 0;
      sim::PortStats stats;
      get(&p, sizeof(p));
      get(&stats, sizeof(stats));
      if (p >= net.num_ports()) ranks.abort("merge: counters of a port beyond the fabric");
      net.set_port_stats(p, stats);
    }
  }
}

}  // namespace uet::ab
