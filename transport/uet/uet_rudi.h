// RUDI's state (spec/uet.md §3.5): reliable, unordered delivery of idempotent operations
// without a PDC. The initiator gives each packet an ID (slot and generation), keeps it until
// its response comes and resends it on RTO; the target answers each request once and keeps
// nothing but the responses waiting to go. Internal to transport/uet/.
//
// Ownership: the endpoint owns one Rudi; its thread alone touches it. The initiator's tables
// are made at the first RUDI operation (max_ops operations, rudi_packets packets), the
// target's ring at the first request (rudi_responses).
#pragma once

#ifndef UET_PRIVATE_TRANSPORT_UET
#ifndef UET_ENDPOINT_H_MEMBERS
#error "transport/uet/uet_rudi.h is private to transport/uet (use transport/uet/uet_endpoint.h)"
#endif
#endif

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/uet/uet_pdc.h"

namespace uet::pds {

// A packet in flight at the initiator: ID = gen << 16 | slot.
struct RudiPkt {
  bool in_use = false;
  bool resend = false;   // to send again (RTO)
  uint16_t gen = 0;
  uint16_t retries = 0;
  uint32_t op = 0;       // the operation's position in the ring (monotonic)
  uint32_t packet = 0;
  uint32_t len = 0;
  Time sent = 0;
};

// A response the target owes: built by tx().
struct RudiRsp {
  uint32_t peer = 0;
  wire::MacAddr mac{};
  uint32_t id = 0;
  uint8_t code = 0;      // SesReturnCode
  bool data = false;     // READ data: `len` bytes of region `key` at `offset`
  bool m = false;        // echoes the request's CE mark
  uint16_t message_id = 0;
  uint32_t key = 0;
  uint32_t len = 0;
  uint64_t offset = 0;
};

struct Rudi {
  // Initiator: operations [op_head, op_tail) posted, [op_send, op_tail) with packets to send
  // (the next is packet send_packet of op_send); packets in flight; free slots (a ring).
  std::vector<PeerOp> ops;
  uint32_t op_head = 0, op_send = 0, op_tail = 0, send_packet = 0;
  std::vector<RudiPkt> pkts;
  std::vector<uint16_t> free;
  uint32_t free_head = 0, free_tail = 0;
  uint32_t resend = 0;  // packets marked resend
  uint16_t message_id = 1;
  // Target: responses to send (a ring).
  std::vector<RudiRsp> rsp;
  uint32_t rsp_head = 0, rsp_tail = 0;

  // Whether tx() has anything of RUDI's to send: responses, resends or new packets.
  bool pending() const noexcept {
    return rsp_head != rsp_tail || resend > 0 || op_send != op_tail;
  }
  bool none_in_flight() const noexcept { return free_tail - free_head == pkts.size(); }
  // Posts `op` of `packets` packets (the initiator's tables made at the first): a READ is one
  // single-packet READ per chunk, each with its own message ID (as on RUD).
  PeerOp& post(const PeerOp& op, uint32_t packets, uint32_t max_ops, uint32_t rudi_packets);
  // Takes a free slot for packet `send_packet` of operation `op_send` (a new ID: answers to
  // the slot's earlier packets are stale) and moves on to the next packet. The caller checks
  // that there is one to send and a free slot.
  uint32_t start_packet(uint32_t payload_bytes, uint32_t max_ops, Time now) noexcept;
  // The packet's slot is free again (answered, or given up).
  void free_slot(uint32_t slot) noexcept {
    pkts[slot].in_use = false;
    free[free_tail++ % pkts.size()] = static_cast<uint16_t>(slot);
  }
  // The packet named by `id`, if it is in flight; null for a stale or unknown ID.
  RudiPkt* find(uint32_t id) noexcept {
    const uint32_t slot = id & 0xFFFF;
    if (slot >= pkts.size() || !pkts[slot].in_use || pkts[slot].gen != static_cast<uint16_t>(id >> 16))
      return nullptr;
    return &pkts[slot];
  }
  PeerOp& op_of(const RudiPkt& k, uint32_t max_ops) noexcept { return ops[k.op % max_ops]; }
  size_t memory_bytes() const noexcept {
    return ops.capacity() * sizeof(PeerOp) + pkts.capacity() * sizeof(RudiPkt) +
           free.capacity() * sizeof(uint16_t) + rsp.capacity() * sizeof(RudiRsp);
  }
};

}  // namespace uet::pds
