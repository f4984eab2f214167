// The PDC table (spec/uet.md §3.3): the endpoint's PDCs by id, the ids free for reuse, the
// windows freed PDCs leave behind, the PDCs in use (the order tx() visits them in) with their
// ready bits, and the control path's two look-ups (an initiator PDC by peer and mode, a target
// PDC by the peer's address and PDC id). Internal to transport/uet/.
//
// Ownership and bounds: one table per UetEndpoint, touched only by its thread. It grows a
// chunk at a time up to max_pdcs (alloc()); the free ring, the active list, the ready bits and
// the look-ups hold at most max_pdcs entries each; parked windows at most one set per free id.
// PDC ids are indices: a frame's PDC is found without hashing.
#pragma once

// Only transport/uet/'s target and its unit tests define the macro; uet_endpoint.h admits this
// header for its own members.
#ifndef UET_PRIVATE_TRANSPORT_UET
#ifndef UET_ENDPOINT_H_MEMBERS
#error \
    "transport/uet/uet_pdc_table.h is private to transport/uet (use transport/uet/uet_endpoint.h)"
#endif
#endif

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "transport/pool.h"
#include "transport/ready_bits.h"
#include "transport/uet/uet_pdc.h"

namespace uet::pds {

class PdcTable {
 public:
  // `mpr`: an initiator's RNR counts (Pdc::Initiator::rnr) hold one byte per PSN of it.
  PdcTable(uint32_t max_pdcs, uint32_t mpr) : max_pdcs_(max_pdcs), rnr_bytes_(mpr) {}

  // A fresh PDC of `role` (state reset, parked windows moved in, active and ready); its id, or
  // -1 when all max_pdcs are in use. Ids are fresh (0, 1, ...) until max_pdcs have been made,
  // then reused FIFO.
  int32_t alloc(Role role);
  // The table's part of freeing: this PDC's look-up entries, its place in the active list
  // (swap-remove, the last PDC's ready bit moving with it), its windows parked, its id to the
  // back of the free ring.
  void free(uint16_t id);

  Pdc& operator[](uint32_t id) noexcept { return pdcs_[id]; }
  const Pdc& operator[](uint32_t id) const noexcept { return pdcs_[id]; }
  // null: never allocated.
  Pdc* get(uint32_t id) noexcept { return pdcs_.get(id); }
  // PDCs made so far (in use or free for reuse).
  uint32_t size() const noexcept { return pdcs_.size(); }

  // PDCs in use, in no particular order (free() swaps the last into the freed position).
  const std::vector<uint16_t>& active() const noexcept { return active_; }
  // Per position in active(): the PDC may have a frame for tx() (transport/ready_bits.h).
  ReadyBits& ready() noexcept { return ready_; }
  void mark_ready(const Pdc& p) noexcept { ready_.set(p.active_index); }

  // §3.3: an initiator PDC per (peer, ROD or RUD, the PIDonFEP addressed there: processes
  // behind one address with PDS state of their own, as the libfabric provider's endpoints);
  // -1: none.
  int32_t find_initiator(uint32_t peer, bool rod, uint16_t pid) const noexcept {
    const auto it = initiator_by_peer_.find(initiator_key(peer, rod, pid));
    return it != initiator_by_peer_.end() ? it->second : -1;
  }
  void insert_initiator(uint32_t peer, bool rod, uint16_t pid, uint16_t id) {
    initiator_by_peer_.emplace(initiator_key(peer, rod, pid), id);
  }
  // Only if the peer's entry is still `id`: a closing PDC is no longer the peer's.
  void erase_initiator(uint32_t peer, bool rod, uint16_t pid, uint16_t id) noexcept {
    if (auto it = initiator_by_peer_.find(initiator_key(peer, rod, pid));
        it != initiator_by_peer_.end() && it->second == id) {
      initiator_by_peer_.erase(it);
    }
  }
  // §3.3: a target PDC per (peer, its PDC id), for SYNs; -1: none. (Inline: syn_target() runs
  // it inside rx().)
  [[gnu::always_inline]] int32_t find_target(uint32_t peer_ip, uint16_t peer_pdcid) const noexcept {
    const auto it = target_by_peer_pdc_.find(target_key(peer_ip, peer_pdcid));
    return it != target_by_peer_pdc_.end() ? it->second : -1;
  }
  void set_target(uint32_t peer_ip, uint16_t peer_pdcid, uint16_t id) {
    target_by_peer_pdc_.insert_or_assign(target_key(peer_ip, peer_pdcid), id);
  }

  // Bytes the table holds (PDCs, every PDC's and every parked set's windows, free ring,
  // active list, ready bits, look-ups); the most its own part (without windows) reaches.
  size_t memory_bytes() const noexcept;
  static size_t bytes_bound(uint32_t max_pdcs) noexcept;

 private:
  static uint64_t initiator_key(uint32_t peer, bool rod, uint16_t pid) noexcept {
    return uint64_t{pid} << 33 | uint64_t{rod} << 32 | peer;
  }
  static uint64_t target_key(uint32_t peer_ip, uint16_t peer_pdcid) noexcept {
    return uint64_t{peer_ip} << 16 | peer_pdcid;
  }
  // A PDC's windows while no PDC holds them, by role: free() parks them, alloc() takes the
  // last parked of its role, so window memory follows the PDCs live at once, not the ids ever
  // used. The send window and the NACK ring are not parked: free() gives them back.
  struct TargetWindows {
    std::vector<uint64_t> rcv_bits;
    GrowRing<Pdc::Response> rsp;
    std::vector<uint64_t> rsp_bits;
    std::vector<Pdc::Refusal> gtd;
    std::vector<uint64_t> gtd_bits;
  };
  void park_windows(Pdc& from);
  void take_windows(Pdc& to) noexcept;

  uint32_t max_pdcs_;
  uint32_t rnr_bytes_;
  ChunkedTable<Pdc> pdcs_;  // grows to max_pdcs
  // A freed id goes to the back of the ring: reused last, so a peer's stale packets for a
  // closed PDC rarely meet a new PDC under the same id.
  uint32_t fresh_ = 0;
  GrowRing<uint16_t> free_;
  uint32_t free_head_ = 0, free_tail_ = 0;
  std::vector<GrowRing<Op, 2>> spare_ops_;  // initiators' operation rings
  std::vector<TargetWindows> spare_target_;
  std::vector<uint16_t> active_;
  ReadyBits ready_;
  absl::flat_hash_map<uint64_t, uint16_t> initiator_by_peer_;
  absl::flat_hash_map<uint64_t, uint16_t> target_by_peer_pdc_;
};

}  // namespace uet::pds
