// The Chakra reader (read_chakra, read_comm_groups in trace.h) for programs that read traces
// only when asked: it and libprotobuf live in the module libuet_chakra.so, opened on first use
// (transport/module.h), so a run without a trace never maps them. Programs that always read or
// write traces link uet_chakra and call trace.h's functions directly.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "sim/trace/trace.h"

namespace uet::sim {

struct ChakraReader {
  absl::StatusOr<Trace> (*read_chakra)(const std::string& prefix);
  absl::StatusOr<CommGroups> (*read_comm_groups)(const std::string& path, uint32_t ranks);
};

// The module's reader, loaded once; FailedPrecondition, naming the module and why, when it
// cannot be opened.
absl::StatusOr<const ChakraReader*> chakra_reader();

}  // namespace uet::sim

// The module's one entry point.
extern "C" const uet::sim::ChakraReader* uet_chakra_reader();
