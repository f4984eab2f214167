// The application verbs both transports implement (UET and RoCEv2 RC), on top of the
// sans-IO frame surface of transport.h. Every tool switches transport by constructing a
// different Endpoint; nothing else changes.
//
// Control path: registration and posting return absl::Status (posting checks arguments and
// bounds and never blocks). Completions are polled.
#pragma once

#include <cstddef>
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
  kRetriesExhausted,     // the peer stopped answering: every retransmission timed out
  kRemoteAccessError,    // the target refused the key or the range
  kPdcClosed,            // the connection was closed or failed under the operation
  kNoResources,          // the target had no PDC (NACK NO_PDC_AVAIL) after the retries
  kReceiverNotReady,     // SEND: the peer had no receive buffer posted, after the retries
  kLengthError,          // SEND: longer than the receive buffer (sender and receiver both)
  kRemoteInvalidRequest, // the peer refused the request as malformed or unsupported
  kFlushed,              // never carried out: its connection failed or closed first
  kTruncated,            // tagged receive: the message was longer than the buffer; the bytes
                         // that fit were placed (the sender completes with kSuccess)
  kAccessDenied,         // the target refused the job, process or resource index
                         // (Completion::return_code says which, spec/uet.md §4.1, §4.9)
  kCanceled,             // a receive withdrawn by cancel_recv() before a message claimed it
  kFrameTooSmall,        // never sent: the host's frames cannot hold the operation's headers
                         // (counted as tx_no_room; a host checks its frame size up front)
};
inline constexpr size_t kNumOpStatus = 13;  // OpStatus values, for tables indexed by them

const char* to_string(OpStatus s) noexcept;

// What a completion completes.
enum class Opcode : uint8_t {
  kWrite,  // initiator: a post_write
  kRead,   // initiator: a post_read
  kSend,   // initiator: a post_send
  kRecv,   // target: a posted receive buffer consumed by a SEND (or a WRITE with immediate)
  kTaggedSend,  // initiator: a post_tsend
  kTaggedRecv,  // target: a post_trecv matched by a tagged message
  kAtomic,      // initiator: a post_atomic (fetching or not)
};

const char* to_string(Opcode op) noexcept;

struct Completion {
  uint64_t wr_id = 0;
  OpStatus status = OpStatus::kSuccess;
  uint64_t bytes = 0;          // bytes moved (kRecv: bytes placed in the buffer)
  Opcode op = Opcode::kWrite;
  uint32_t peer = 0;           // kRecv: the sender's IPv4 address
  bool has_imm = false;        // kRecv, kTaggedRecv: the message carried immediate (header)
  uint64_t imm = 0;            // data: this, host order (32 bits for SEND, 64 for tagged)
  uint64_t tag = 0;            // kTaggedRecv: the message's tag (match bits)
  // The SES return code (spec/uet.md §4.9) the target refused the operation with, as it came
  // on the wire (0 NULL: none; RoCEv2 leaves it 0). `status` is its class.
  uint8_t return_code = 0;
};

// Every request names its connection to the peer by `channel` (an application's parallel
// streams to one peer, as NCCL's channels): RoCEv2 sends on the QP connected for (peer,
// channel) (RoceEndpoint::connect_qp) and refuses a channel with none; UET ignores it, since
// one PDC per pair of endpoints carries every channel and sprays its packets over paths
// itself (spec/uet.md §2.4).

// spec/uet.md §4.1: which process and resource at the peer's FEP a request is for. The
// initiator's own job (UetConfig::job_id) rides beside it; the target checks all of them
// before it places a byte. The defaults address process 0's resource 0, generation 0.
struct SesAddress {
  uint16_t pid_on_fep = 0;      // 12 bits: the target process ...
  bool relative = false;        // ... counted from its job's first PID on that FEP (`rel`)
  uint16_t resource_index = 0;  // 12 bits
  uint8_t ri_generation = 0;    // the generation the initiator knows of that index
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
  uint16_t channel = 0;  // the connection to the peer (above)
  SesAddress to{};       // UET: the process and resource at the peer (RoCEv2: ignored)
};

// A one-sided RDMA read: `length` bytes at `remote_offset` within the peer's region `rkey`
// land at `local`. `local` must stay valid until the completion.
struct ReadRequest {
  uint64_t wr_id = 0;
  uint32_t peer = 0;
  uint32_t rkey = 0;
  uint64_t remote_offset = 0;
  uint8_t* local = nullptr;
  uint64_t length = 0;
  DeliveryMode mode = DeliveryMode::kRud;
  uint16_t channel = 0;  // the connection to the peer (above WriteRequest)
  SesAddress to{};       // UET: the process and resource at the peer (RoCEv2: ignored)
};

// A two-sided send: `length` bytes from `local` land in the next receive buffer the peer
// posted (post_recv), which completes there with Opcode::kRecv.
struct SendRequest {
  uint64_t wr_id = 0;
  uint32_t peer = 0;
  const uint8_t* local = nullptr;
  uint64_t length = 0;
  DeliveryMode mode = DeliveryMode::kRud;
  bool has_imm = false;  // carry 32 bits of immediate data to the receive completion
  uint32_t imm = 0;
  uint16_t channel = 0;  // the connection to the peer (above WriteRequest)
  SesAddress to{};       // UET: the process and resource at the peer (RoCEv2: ignored)
  // UET (DEFERRABLE_SEND, spec/uet.md §4.2): a target with no buffer for it records it and
  // asks for it again (DEFERRABLE_RTR) once a receive is posted, instead of refusing it.
  bool deferrable = false;
};

// A tagged send (libfabric's FI_TAGGED; UET TAGGED_SEND, spec/uet.md §4.1): `length` bytes
// from `local` land in the first receive the peer posted with post_trecv whose tag matches
// `tag` (TaggedRecv), or wait in its unexpected list for one. `local` stays valid until the
// completion.
struct TaggedSendRequest {
  uint64_t wr_id = 0;
  uint32_t peer = 0;
  const uint8_t* local = nullptr;
  uint64_t length = 0;
  uint64_t tag = 0;
  DeliveryMode mode = DeliveryMode::kRud;
  bool has_data = false;  // carry 64 bits of header data (FI_REMOTE_CQ_DATA) ...
  uint64_t data = 0;      // ... to the receive completion
  uint16_t channel = 0;   // the connection to the peer (above WriteRequest)
  SesAddress to{};
  // DEFERRABLE_TSEND (§4.2): a target with no matching receive records the message without
  // staging its bytes, and asks for it again when one is posted.
  bool deferrable = false;
};

// spec/uet.md §4.5.1: what an atomic does to each element of the target, in the wire's
// order (libfabric's enum fi_op has the same operations). CSWAP*: the target takes the swap
// value when `compare <cmp> target` holds (CSWAP_LE: compare <= target, as FI_CSWAP_LE);
// MSWAP: target = (target & ~mask) | (swap & mask).
enum class AtomicOp : uint8_t {
  kMin, kMax, kSum, kDiff, kProd, kLor, kLand, kBor, kBand, kLxor, kBxor, kRead, kWrite,
  kCswap, kCswapNe, kCswapLe, kCswapLt, kCswapGe, kCswapGt, kMswap,
};
inline constexpr size_t kNumAtomicOps = 20;

// spec/uet.md §4.5.1: the element types, in the wire's order. Elements travel and sit in
// memory in the host's byte order (x86-64: little-endian; LONG_DOUBLE is the 80-bit extended
// format in 16 bytes).
enum class AtomicType : uint8_t {
  kInt8, kUint8, kInt16, kUint16, kInt32, kUint32, kInt64, kUint64, kInt128, kUint128,
  kFloat, kDouble, kFloatComplex, kDoubleComplex, kLongDouble, kLongDoubleComplex, kBf16, kFp16,
};
inline constexpr size_t kNumAtomicTypes = 18;

const char* to_string(AtomicOp op) noexcept;
const char* to_string(AtomicType t) noexcept;
size_t atomic_size(AtomicType t) noexcept;  // bytes per element

// The operand bytes of one atomic (count x atomic_size), so its request and answer fit one
// frame of the smallest the hosts take (256 bytes, with TSS and MSWAP's masks).
inline constexpr uint32_t kMaxAtomicBytes = 32;

// A one-sided atomic (libfabric's fi_atomic, fi_fetch_atomic, fi_compare_atomic): `count`
// elements of `type` at `remote_offset` within the peer's region `rkey` are each updated by
// `op`, executed once at the target however often the request travels. With `result`, the
// values they held before land there (a fetching atomic). The buffers stay valid until the
// completion (Opcode::kAtomic, `bytes` = count x atomic_size(type)).
struct AtomicRequest {
  uint64_t wr_id = 0;
  uint32_t peer = 0;
  uint32_t rkey = 0;
  uint64_t remote_offset = 0;  // aligned to the element size (to 8 for larger elements)
  AtomicOp op = AtomicOp::kSum;
  AtomicType type = AtomicType::kUint64;
  uint32_t count = 1;  // 1..kMaxAtomicBytes / atomic_size(type); 1 for the CSWAP family
  const uint8_t* operand = nullptr;  // count elements (CSWAP*, MSWAP: the swap values; READ: none)
  const uint8_t* compare = nullptr;  // CSWAP*: count compare values; MSWAP: count masks
  uint8_t* result = nullptr;         // fetching: count elements; nullptr: not fetching
  DeliveryMode mode = DeliveryMode::kRud;
  uint16_t channel = 0;  // the connection to the peer (above WriteRequest)
  SesAddress to{};       // UET: the process and resource at the peer (RoCEv2: ignored)
};

// One operation as the application posted it (a write, read, send, tagged send or atomic):
// what both engines' requesters keep of every request, made from it by posted_verb() below.
// UET's pds::Op and RoCEv2's send WQE (RoceEndpoint::Write) extend it with their own state.
// The buffers stay the application's: the engine reads `src` and fills `dst` in place until
// the operation completes. The narrow fields come last, so an extending struct's own narrow
// fields fill the tail.
struct PostedVerb {
  uint64_t wr_id = 0;
  uint64_t remote_offset = 0;    // write, read, atomic: within the peer's region `rkey`
  const uint8_t* src = nullptr;  // write, send, tagged send: the payload; atomic: the operands
  uint8_t* dst = nullptr;        // read: where the data lands; atomic: the fetched values
                                 // (nullptr: not fetching)
  uint64_t length = 0;           // bytes (atomic: count x atomic_size(type))
  uint64_t imm = 0;  // send, RoCEv2 write with immediate: 32 bits; tagged send: 64 of data
  uint32_t rkey = 0;
  Opcode op = Opcode::kWrite;
  bool has_imm = false;
};

// The operation each request posts; the engines add what they alone carry (UET: the SES
// address `to`, a tagged send's tag, an atomic's op, type and compare values).
inline PostedVerb posted_verb(const WriteRequest& wr) noexcept {
  return {.wr_id = wr.wr_id, .remote_offset = wr.remote_offset, .src = wr.local,
          .length = wr.length, .rkey = wr.rkey, .op = Opcode::kWrite};
}
inline PostedVerb posted_verb(const ReadRequest& rr) noexcept {
  return {.wr_id = rr.wr_id, .remote_offset = rr.remote_offset, .dst = rr.local,
          .length = rr.length, .rkey = rr.rkey, .op = Opcode::kRead};
}
inline PostedVerb posted_verb(const SendRequest& sr) noexcept {
  return {.wr_id = sr.wr_id, .src = sr.local, .length = sr.length, .imm = sr.imm,
          .op = Opcode::kSend, .has_imm = sr.has_imm};
}
inline PostedVerb posted_verb(const TaggedSendRequest& ts) noexcept {
  return {.wr_id = ts.wr_id, .src = ts.local, .length = ts.length, .imm = ts.data,
          .op = Opcode::kTaggedSend, .has_imm = ts.has_data};
}
inline PostedVerb posted_verb(const AtomicRequest& ar) noexcept {
  return {.wr_id = ar.wr_id, .remote_offset = ar.remote_offset, .src = ar.operand,
          .dst = ar.result, .length = ar.count * atomic_size(ar.type), .rkey = ar.rkey,
          .op = Opcode::kAtomic};
}

// A tagged receive buffer. A message matches it when their tags agree on every bit not set in
// `ignore` and it comes from `source` (0: any source); messages match receives in posting
// order, as FI_TAGGED says: a message takes the first posted receive it matches, and a
// receive the first unexpected message it matches. Under RUD a peer's messages are matched in
// the order their first packets arrive; ROD keeps its send order (spec/uet.md §3.3).
struct TaggedRecv {
  uint64_t wr_id = 0;
  uint8_t* base = nullptr;
  uint64_t length = 0;
  uint64_t tag = 0;
  uint64_t ignore = 0;
  uint32_t source = 0;  // the sender's IPv4 address; 0: any
};

// What a probe found (Endpoint::probe_tagged): an unexpected tagged message, not received.
struct Probed {
  uint64_t tag = 0;
  uint64_t length = 0;  // the whole message's bytes
  uint32_t peer = 0;    // the sender's IPv4 address
  bool has_data = false;
  uint64_t data = 0;
  uint64_t claim = 0;  // with `claim`: the handle recv_claimed() takes
};

// A receive buffer for incoming SENDs. An endpoint's posted buffers form one shared queue,
// consumed in posting order by SENDs from any peer (an SRQ, in verbs terms).
struct RecvBuffer {
  uint64_t wr_id = 0;
  uint8_t* base = nullptr;
  uint64_t length = 0;
};

// Counters every transport keeps, for side-by-side reports.
struct EndpointStats {
  uint64_t data_packets = 0;           // first transmissions of data
  uint64_t retransmitted_packets = 0;  // every resend, whatever triggered it
  uint64_t spurious_retransmits = 0;   // ... of them, those the peer showed it got twice (UET)
  uint64_t control_packets = 0;        // ACKs, NACKs, CNPs, credits sent
  uint64_t timeouts = 0;
  uint64_t rx_dropped = 0;             // received frames dropped (malformed, unknown, ...)
};

class Endpoint : public Transport {
 public:
  // Makes [base, base + length) writable by peers; returns its key.
  virtual absl::StatusOr<uint32_t> register_memory(uint8_t* base, uint64_t length) = 0;
  // Withdraws the region `key` names: from now on a peer's operation naming the key is
  // refused as one naming no region (UET BAD_MKEY, RoCEv2 NAK remote access error; the
  // initiator completes it kRemoteAccessError), including the packets still to come of a
  // message that started before, and the READ answers not yet sent from it. The next
  // registration of its slot gets another key (transport/region_table.h says when one comes
  // back). NotFound for a key that names no registered region; FailedPrecondition, nothing
  // changed, while an operation this endpoint posted and has not completed still has a
  // buffer in the region (a payload, a READ's destination, an atomic's operands or result):
  // poll its completion first.
  virtual absl::Status deregister_memory(uint32_t key) = 0;
  virtual absl::Status post_write(const WriteRequest& wr) = 0;
  // Transports that do not carry an operation refuse it with Unimplemented, naming it.
  virtual absl::Status post_read(const ReadRequest& rr);
  virtual absl::Status post_send(const SendRequest& sr);
  virtual absl::Status post_recv(const RecvBuffer& rb);
  virtual absl::Status post_tsend(const TaggedSendRequest& ts);
  virtual absl::Status post_trecv(const TaggedRecv& tr);
  virtual absl::Status post_atomic(const AtomicRequest& ar);
  // Withdraws the receive posted with `wr_id` (post_recv or post_trecv) if no message has
  // claimed it yet: it completes with OpStatus::kCanceled and no bytes. NotFound when none
  // is waiting under that wr_id (a message claimed it, or it completed).
  virtual absl::Status cancel_recv(uint64_t wr_id);
  // FI_PEEK (MPI_Iprobe): the first unexpected tagged message (in arrival order) that
  // `match` would take (its tag, ignore bits and source; no buffer), every byte of it
  // arrived or, rendezvous, announced. Not received: it stays for the receive that matches
  // it, or, with `claim` (FI_CLAIM, MPI_Improbe), for recv_claimed(out->claim) alone.
  // NotFound: none.
  virtual absl::Status probe_tagged(const TaggedRecv& match, bool claim, Probed* out);
  // FI_CLAIM (MPI_Mrecv): receives the claimed message into `tr` (its buffer and wr_id) as
  // post_trecv() would. NotFound for a handle that names no claimed message.
  virtual absl::Status recv_claimed(uint64_t claim, const TaggedRecv& tr);
  // Moves up to out.size() completions into `out`; returns how many.
  virtual size_t poll_completions(std::span<Completion> out) = 0;
  virtual EndpointStats stats() const = 0;
};

}  // namespace uet
