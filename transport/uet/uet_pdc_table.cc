// The PDC table (spec/uet.md §3.3): allocation, freeing and what it holds. Control path: a PDC
// opens (a SYN, the first post to a peer) or closes here, not per packet.
#include "transport/uet/uet_pdc_table.h"

#include <utility>

namespace uet::pds {

namespace {
template <typename V>
size_t held(const V& v) noexcept {
  return v.capacity() * sizeof(typename V::value_type);
}
}  // namespace

// The send window and the NACK ring go back to the heap (they grow with a flight, again for
// the next PDC); what is kept is small or grows only with what the application posts.
void PdcTable::park_windows(Pdc& from) {
  if (from.role == Role::kInitiator) {
    from.ini.slots.release();
    from.ini.rnr.reset();
    spare_ops_.push_back(std::move(from.ini.ops));
    return;
  }
  from.tgt.nacks.release();
  spare_target_.push_back({std::move(from.tgt.rcv_bits), std::move(from.tgt.rsp),
                           std::move(from.tgt.rsp_bits), std::move(from.tgt.gtd),
                           std::move(from.tgt.gtd_bits)});
}

void PdcTable::take_windows(Pdc& to) noexcept {
  if (to.role == Role::kInitiator) {
    if (spare_ops_.empty()) return;
    to.ini.ops = std::move(spare_ops_.back());
    spare_ops_.pop_back();
    return;
  }
  if (spare_target_.empty()) return;
  TargetWindows& w = spare_target_.back();
  to.tgt.rcv_bits = std::move(w.rcv_bits);
  to.tgt.rsp = std::move(w.rsp);
  to.tgt.rsp_bits = std::move(w.rsp_bits);
  to.tgt.gtd = std::move(w.gtd);
  to.tgt.gtd_bits = std::move(w.gtd_bits);
  spare_target_.pop_back();
}

// The table grows here, a chunk at a time, up to max_pdcs: the only memory a peer's frame (a
// SYN) can take. The windows parked last keep their capacity (the caller sizes them).
int32_t PdcTable::alloc(Role role) {
  uint16_t id;
  if (fresh_ < max_pdcs_) {
    if (fresh_ == pdcs_.size()) {
      pdcs_.grow(max_pdcs_);
      free_.reserve32(free_head_, free_tail_, pdcs_.size(), max_pdcs_);  // all may be freed
    }
    id = static_cast<uint16_t>(fresh_++);
  } else if (free_head_ != free_tail_) {
    id = free_[free_head_++];
  } else {
    return -1;
  }
  Pdc& p = pdcs_[id];
  p.start(role);
  take_windows(p);
  p.id = id;
  p.active_index = static_cast<uint32_t>(active_.size());
  active_.push_back(id);
  ready_.grow_to(active_.size());
  mark_ready(p);
  return id;
}

void PdcTable::free(uint16_t id) {
  Pdc& p = pdcs_[id];
  if (p.role == Role::kInitiator) erase_initiator(p.peer_ip4, p.rod, p.peer_pid, id);
  if (p.role == Role::kTarget) {
    if (auto it = target_by_peer_pdc_.find(target_key(p.peer_ip4, p.peer_pdcid));
        it != target_by_peer_pdc_.end() && it->second == id) {
      target_by_peer_pdc_.erase(it);
    }
  }
  const uint16_t last = active_.back();
  ready_.move(static_cast<uint32_t>(active_.size() - 1), p.active_index);
  active_[p.active_index] = last;
  pdcs_[last].active_index = p.active_index;
  active_.pop_back();
  park_windows(p);
  p.role = Role::kFree;
  free_[free_tail_++] = id;
}

size_t PdcTable::memory_bytes() const noexcept {
  size_t n = pdcs_.bytes() + free_.bytes() + held(active_) + ready_.bytes() +
             hash_bytes(initiator_by_peer_) + hash_bytes(target_by_peer_pdc_);
  auto target = [](const auto& t) {
    return held(t.rcv_bits) + t.rsp.bytes() + held(t.rsp_bits) + held(t.gtd) + held(t.gtd_bits);
  };
  for (uint32_t id = 0; id < pdcs_.size(); ++id) {
    const Pdc& p = pdcs_[id];
    if (p.state == Role::kInitiator) {
      n += p.ini.ops.bytes() + p.ini.slots.bytes() + (p.ini.rnr != nullptr ? rnr_bytes_ : 0);
    }
    if (p.state == Role::kTarget) n += target(p.tgt) + p.tgt.nacks.bytes();
  }
  n += held(spare_ops_) + held(spare_target_);
  for (const GrowRing<Op, 2>& r : spare_ops_) n += r.bytes();
  for (const TargetWindows& w : spare_target_) n += target(w);
  return n;
}

size_t PdcTable::bytes_bound(uint32_t max_pdcs) noexcept {
  const size_t pdcs = max_pdcs;
  return ChunkedTable<Pdc>::bytes_bound(max_pdcs) +
         appended_capacity(pdcs) * (sizeof(GrowRing<Op, 2>) + sizeof(TargetWindows)) +  // parked
         GrowRing<uint16_t>::bytes_bound(max_pdcs) +                // free ids
         appended_capacity(pdcs) * sizeof(uint16_t) +               // active_
         appended_capacity((pdcs + 63) / 64) * sizeof(uint64_t) +   // ready_
         2 * hash_bytes_bound<decltype(initiator_by_peer_)>(pdcs);  // both look-ups
}

}  // namespace uet::pds
