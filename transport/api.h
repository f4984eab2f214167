// The application verbs both transports implement (UET and, later, RoCEv2 RC), on top of the
// sans-IO frame surface of transport.h. Every tool switches transport by constructing a
// different Endpoint; nothing else changes.
//
// Control path: registration and posting return absl::Status (posting checks arguments and
// bounds and never blocks). Completions are polled.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/transport.h"

namespace uet {

enum class DeliveryMode : uint8_t {
  kRud,   // reliable, unordered (default)
  kRod,   // reliable, ordered
  kRudi,  // reliable, unordered, idempotent operations
  kUud,   // unreliable datagrams
};

// Why an operation ended.
enum class OpStatus : uint8_t {
  kSuccess,
  kRetriesExhausted,   // the peer stopped answering: every retransmission timed out
  kRemoteAccessError,  // the target refused the key or the range
  kPdcClosed,          // the connection was closed or failed under the operation
  kNoResources,        // the target had no PDC (NACK NO_PDC_AVAIL) after the retries
};

const char* to_string(OpStatus s) noexcept;

struct Completion {
  uint64_t wr_id = 0;
  OpStatus status = OpStatus::kSuccess;
  uint64_t bytes = 0;
};

// A one-sided RDMA write: `length` bytes from `local` land at `remote_offset` within the
// peer's region `rkey`.
struct WriteRequest {
  uint64_t wr_id = 0;
  uint32_t peer = 0;  // the peer endpoint's IPv4 address
  uint32_t rkey = 0;
  uint64_t remote_offset = 0;
  const uint8_t* local = nullptr;
  uint64_t length = 0;
  DeliveryMode mode = DeliveryMode::kRud;
};

// Counters every transport keeps, for side-by-side reports.
struct EndpointStats {
  uint64_t data_packets = 0;           // first transmissions of data
  uint64_t retransmitted_packets = 0;  // every resend, whatever triggered it
  uint64_t control_packets = 0;        // ACKs, NACKs, CNPs, credits sent
  uint64_t timeouts = 0;
  uint64_t rx_dropped = 0;             // received frames dropped (malformed, unknown, ...)
};

class Endpoint : public Transport {
 public:
  // Makes [base, base + length) writable by peers; returns its key.
  virtual absl::StatusOr<uint32_t> register_memory(uint8_t* base, uint64_t length) = 0;
  virtual absl::Status post_write(const WriteRequest& wr) = 0;
  // Moves up to out.size() completions into `out`; returns how many.
  virtual size_t poll_completions(std::span<Completion> out) = 0;
  virtual EndpointStats stats() const = 0;
};

}  // namespace uet
