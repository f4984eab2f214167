// The engines of one domain behind its one address: each libfabric endpoint of the domain is a
// process on the domain's FEP with a PIDonFEP of its own (spec/uet.md §4.1), served by an
// engine of its own, and EngineMux is the one Transport the domain's host loop drives.
//
// UET: every engine keeps its own PDCs (ids 0..kPdcsPerEngine-1). On the wire an engine's PDC
// ids carry its PID above those bits (the mux writes them into SPDCID as frames leave), so a
// peer's frame names its engine by DPDCID; a SYN, which has no DPDCID yet, names it by the PID
// its SES header addresses. A frame for a PID no engine serves is dropped and counted
// (rx_no_endpoint); the sender's retries then run out. Engine 0's ids are the plain ids, and
// until a second endpoint opens the mux reads no frame: a domain with one endpoint runs as its
// engine alone (which answers a request for another PID BAD_PID, §4.9). The mux reads
// and writes the PDS header in the clear: not under TSS (whose seal covers it) and not where
// the device checks UDP checksums (DPDK), where a domain keeps one endpoint.
// RoCEv2: a domain keeps one endpoint, and its engine takes every frame.
//
// Ownership: the domain owns the engines (engine 0, its own; the rest, their endpoints'); the
// mux holds pointers, set and cleared under the domain's lock, on the domain's thread. Per
// frame: a few loads and, for engines past 0, a 2-byte store; no allocation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/transport.h"

namespace uet::fabric {

struct EngineMuxCounters {
  uint64_t rx_no_endpoint = 0;  // frames for a PIDonFEP no engine serves
};

class EngineMux final : public Transport {
 public:
  static constexpr uint32_t kMaxEngines = 64;      // PIDs 0..63: the PDC id's top 6 bits
  static constexpr uint32_t kPdcsPerEngine = 1024;  // UET: an engine's max_pdcs
  static constexpr uint32_t kPdcBits = 10;
  static_assert(kPdcsPerEngine == 1u << kPdcBits && kMaxEngines << kPdcBits <= 65536,
                "the PID and the engine's PDC id share the 16-bit PDC id (spec/uet.md §3.3)");

  EngineMux() = default;

  // Engine `pid` (0..kMaxEngines-1) serves frames for that PID from now on; nullptr: none.
  void set(uint32_t pid, Transport* engine) noexcept;
  const EngineMuxCounters& counters() const noexcept { return counters_; }

  void rx(std::span<Frame* const> frames, Time now) override;
  size_t tx(std::span<Frame* const> out, Time now) override;
  Time next_deadline() const override;
  void on_timer(Time now) override;

 private:
  // The engine a received frame is for (kMaxEngines: none); UET: rewrites its DPDCID to the
  // engine's own id.
  uint32_t route(Frame& f) noexcept;

  std::array<Transport*, kMaxEngines> engines_{};
  uint32_t top_ = 0;   // engines_[top_..] are all null
  uint32_t next_ = 0;  // tx() starts at this engine: each gets the burst's front in turn
  bool routed_ = false;  // an engine past PID 0 was set: frames are read and routed from now on
  EngineMuxCounters counters_;
};

}  // namespace uet::fabric
