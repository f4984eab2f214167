// What the topology builders (topology*.cc) share: returning a failed step's status, and the
// per-tier link checks. Private to those files.
#pragma once

#include <initializer_list>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sim/network.h"

#define SIM_TRY(expr)                                  \
  do {                                                 \
    if (absl::Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

namespace uet::sim::topology_internal {

// Each tier's links, named in the message: "fabric links: link rate inf Gb/s out of ...".
inline absl::Status check_links(
    std::initializer_list<std::pair<const char*, const LinkConfig*>> tiers) {
  for (const auto& [name, link] : tiers) {
    if (absl::Status s = check_link(*link); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, " links: ", s.message()));
    }
  }
  return absl::OkStatus();
}

// "WHAT: FIELD V out of range: LO..HI" unless lo <= v <= hi.
inline absl::Status check_range(const char* what, const char* field, uint64_t v, uint64_t lo,
                                uint64_t hi) {
  if (v >= lo && v <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": ", field, " ", v, " out of range: ", lo, "..", hi));
}

// "WHAT: N hosts, at most kMaxHosts" unless hosts fit.
inline absl::Status check_hosts(const char* what, uint64_t hosts) {
  if (hosts <= kMaxHosts) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", hosts, " hosts, at most ", kMaxHosts));
}

}  // namespace uet::sim::topology_internal
