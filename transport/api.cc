#include "transport/api.h"

#include "absl/strings/str_cat.h"

namespace uet {

const char* to_string(OpStatus s) noexcept {
  switch (s) {
    case OpStatus::kSuccess:
      return "success";
    case OpStatus::kRetriesExhausted:
      return "retries exhausted";
    case OpStatus::kRemoteAccessError:
      return "remote access error";
    case OpStatus::kPdcClosed:
      return "PDC closed";
    case OpStatus::kNoResources:
      return "no resources at the target";
    case OpStatus::kReceiverNotReady:
      return "receiver not ready";
    case OpStatus::kLengthError:
      return "length error";
    case OpStatus::kRemoteInvalidRequest:
      return "remote invalid request";
    case OpStatus::kFlushed:
      return "flushed";
    case OpStatus::kTruncated:
      return "truncated";
    case OpStatus::kAccessDenied:
      return "access denied";
    case OpStatus::kCanceled:
      return "canceled";
    case OpStatus::kFrameTooSmall:
      return "frame too small for the headers";
  }
  return "unknown";
}

const char* to_string(Opcode op) noexcept {
  switch (op) {
    case Opcode::kWrite:
      return "write";
    case Opcode::kRead:
      return "read";
    case Opcode::kSend:
      return "send";
    case Opcode::kRecv:
      return "recv";
    case Opcode::kTaggedSend:
      return "tsend";
    case Opcode::kTaggedRecv:
      return "trecv";
    case Opcode::kAtomic:
      return "atomic";
  }
  return "unknown";
}

absl::Status Endpoint::post_read(const ReadRequest&) {
  return absl::UnimplementedError("post_read: this transport does not carry RDMA READ");
}

absl::Status Endpoint::post_send(const SendRequest&) {
  return absl::UnimplementedError("post_send: this transport does not carry SEND");
}

absl::Status Endpoint::post_recv(const RecvBuffer&) {
  return absl::UnimplementedError("post_recv: this transport does not carry SEND");
}

absl::Status Endpoint::post_tsend(const TaggedSendRequest&) {
  return absl::UnimplementedError(
      "post_tsend: this transport does not carry tagged messages (match them above it)");
}

absl::Status Endpoint::post_trecv(const TaggedRecv&) {
  return absl::UnimplementedError(
      "post_trecv: this transport does not carry tagged messages (match them above it)");
}

absl::Status Endpoint::post_atomic(const AtomicRequest&) {
  return absl::UnimplementedError("post_atomic: this transport does not carry atomics");
}

absl::Status Endpoint::probe_tagged(const TaggedRecv&, bool, Probed*) {
  return absl::UnimplementedError("probe_tagged: this transport does not carry tagged messages");
}

absl::Status Endpoint::recv_claimed(uint64_t, const TaggedRecv&) {
  return absl::UnimplementedError("recv_claimed: this transport does not carry tagged messages");
}

absl::Status Endpoint::cancel_recv(uint64_t) {
  return absl::UnimplementedError("cancel_recv: this transport cannot withdraw a receive");
}

const char* to_string(AtomicOp op) noexcept {
  static constexpr const char* kNames[kNumAtomicOps] = {
      "MIN",  "MAX",   "SUM",   "DIFF",     "PROD",     "LOR",      "LAND",
      "BOR",  "BAND",  "LXOR",  "BXOR",     "READ",     "WRITE",    "CSWAP",
      "CSWAP_NE", "CSWAP_LE", "CSWAP_LT", "CSWAP_GE", "CSWAP_GT", "MSWAP"};
  const auto i = static_cast<size_t>(op);
  return i < kNumAtomicOps ? kNames[i] : "unknown";
}

const char* to_string(AtomicType t) noexcept {
  static constexpr const char* kNames[kNumAtomicTypes] = {
      "INT8",  "UINT8",  "INT16",         "UINT16",         "INT32",       "UINT32",
      "INT64", "UINT64", "INT128",        "UINT128",        "FLOAT",       "DOUBLE",
      "FLOAT_COMPLEX", "DOUBLE_COMPLEX", "LONG_DOUBLE", "LONG_DOUBLE_COMPLEX", "BF16", "FP16"};
  const auto i = static_cast<size_t>(t);
  return i < kNumAtomicTypes ? kNames[i] : "unknown";
}

size_t atomic_size(AtomicType t) noexcept {
  static constexpr uint8_t kSizes[kNumAtomicTypes] = {1, 1, 2, 2, 4, 4, 8,  8,  16,
                                                      16, 4, 8, 8, 16, 16, 32, 2, 2};
  const auto i = static_cast<size_t>(t);
  return i < kNumAtomicTypes ? kSizes[i] : 0;
}

}  // namespace uet
