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

}  // namespace uet
