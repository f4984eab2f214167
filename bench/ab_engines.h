// Each host's protocol engine configuration for an A/B run: the run's fabric, MTU, seed and
// transport options turned into a UetConfig or a RoceConfig, one per host.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "bench/ab_runner.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_config.h"

namespace uet::ab {

// Host h's engine configuration for the run. `pdcs`: the PDCs it will open at once at most
// (a PDC to each peer it writes to, one from each peer that writes to it).
UetConfig uet_config(const RunConfig& rc, uint32_t h, uint32_t pdcs = 0);

// `qps`: the QPs the host will connect (its QP table is sized to them).
absl::StatusOr<RoceConfig> roce_config(const RunConfig& rc, uint32_t h, uint32_t qps);

}  // namespace uet::ab
