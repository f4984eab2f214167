// UUD's datagram queue at the sender (spec/uet.md §3.6): single-packet messages that need no
// PDC, sent in posting order and complete once they leave. Internal to transport/uet/.
//
// Ownership: the endpoint owns one UudQueue; its thread alone touches it. The ring is made
// at the first datagram, `capacity` (UetConfig::uud_queue) entries.
#pragma once

#ifndef UET_PRIVATE_TRANSPORT_UET
#ifndef UET_ENDPOINT_H_MEMBERS
#error "transport/uet/uet_uud.h is private to transport/uet (use transport/uet/uet_endpoint.h)"
#endif
#endif

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/uet/uet_pdc.h"

namespace uet::pds {

class UudQueue {
 public:
  bool full(uint32_t capacity) const noexcept { return tail_ - head_ >= capacity; }
  bool empty() const noexcept { return head_ == tail_; }
  // Queues `op` (the ring is made at the first), giving it the next message ID.
  PeerOp& push(const PeerOp& op, uint32_t capacity);
  const PeerOp& front() const noexcept { return q_[head_ % q_.size()]; }
  void pop() noexcept { ++head_; }
  // How many queued datagrams satisfy `pred` (deregister_memory's check).
  template <typename Pred>
  uint32_t count_if(Pred pred) const {
    uint32_t n = 0;
    for (uint32_t i = head_; i != tail_; ++i) n += pred(q_[i % q_.size()]) ? 1 : 0;
    return n;
  }
  size_t memory_bytes() const noexcept { return q_.capacity() * sizeof(PeerOp); }

 private:
  std::vector<PeerOp> q_;
  uint32_t head_ = 0, tail_ = 0;
  uint16_t message_id_ = 1;
};

}  // namespace uet::pds
