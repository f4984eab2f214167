// ROD at the target (spec/uet.md §3.3, ROD [choice]; NOTES.md, "The other delivery modes"):
// a ROD PDC shares everything with RUD but executes its requests in PSN order. One that
// arrives early waits in a reorder buffer (pds::RodBuffers, uet_rod.h) and runs when the
// PSNs before it have. Data path: no allocation once a buffer is made, no per-packet virtual
// call. Comments cite spec/uet.md.
#include <algorithm>
#include <cstring>

#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

using internal::psn_before;
using internal::test_bit;

// ------------------------------------------------------------------------------ buffers

bool pds::RodBuffers::lend(int32_t& buf) {
  if (buf >= 0) return true;
  if (!free_.empty()) {  // a returned one, the last returned first
    buf = free_.back();
    free_.pop_back();
  } else if (pool_.size() < count_) {  // a new one
    buf = static_cast<int32_t>(pool_.size());
    pool_.emplace_back();
  } else {
    return false;
  }
  Buffer& b = pool_[static_cast<size_t>(buf)];
  if (b.slots.empty()) {
    b.bits.assign(window_ / 64, 0);
    b.slots.resize(window_);
    // Not zeroed: pages are touched only as payloads are held.
    b.bytes.reset(new uint8_t[size_t{window_} * payload_bytes_]);
  }
  return true;
}

void pds::RodBuffers::give_back(int32_t& buf) noexcept {
  if (buf < 0) return;
  Buffer& b = pool_[static_cast<size_t>(buf)];
  std::fill(b.bits.begin(), b.bits.end(), 0);
  free_.push_back(static_cast<uint16_t>(buf));
  buf = -1;
}

size_t pds::RodBuffers::memory_bytes() const noexcept {
  size_t n = pool_.capacity() * sizeof(Buffer) + free_.capacity() * sizeof(uint16_t);
  for (const Buffer& b : pool_) {
    if (b.bytes != nullptr) {
      n += b.bits.capacity() * sizeof(uint64_t) + b.slots.capacity() * sizeof(Staged) +
           size_t{window_} * payload_bytes_;
    }
  }
  return n;
}

// Every buffer made: the pool's two vectors (grown by appending) and each buffer's bitmap,
// entries and payload bytes.
size_t pds::RodBuffers::memory_bound(uint32_t window, uint32_t payload_bytes,
                                     uint32_t count) noexcept {
  const size_t buffer = window / 64 * sizeof(uint64_t) + window * sizeof(Staged) +
                        size_t{window} * payload_bytes;
  return appended_capacity(count) * (sizeof(Buffer) + sizeof(uint16_t)) + count * buffer;
}

// ------------------------------------------------------------------------------ target

// Returns `p`'s reorder buffer (it holds nothing more, or the PDC is freed).
void UetEndpoint::rod_release_buffer(Pdc& p) noexcept {
  if (p.tgt.rod_buf >= 0) modes_->rod.give_back(p.tgt.rod_buf);  // lent by modes().rod
  p.tgt.rod_held = 0;
}

bool UetEndpoint::rod_staged(const Pdc& p, uint32_t psn) const noexcept {
  return p.tgt.rod_buf >= 0 && psn - p.tgt.rod_next < hot_.rod_window &&
         modes_->rod.staged(p.tgt.rod_buf, psn);
}

// ROD target, [choice] in spec/uet.md §3.3: request `psn` arrived before the PSNs ahead of it
// ran. It waits in the reorder buffer (one copy of its SES header and payload) and runs when
// they have. A WRITE is checked (key, range) and recorded as received now, so the initiator's
// SACK machinery resends only the holes; a READ or SEND is recorded when it runs (it may be
// refused or NACKed then). True when it was staged.
bool UetEndpoint::rod_stage(Pdc& p, const wire::Decoded& d, const wire::SesStandardRequest* ses,
                            uint32_t psn) {
  if (psn - p.tgt.rod_next >= hot_.rod_window) {  // beyond the buffer: §3.10 PSN_OOR_WINDOW
    ++counters_.rx_out_of_window;
    queue_nack(p, wire::NackCode::kPsnOorWindow, psn);
    return false;
  }
  if (rod_staged(p, psn)) {  // staged already: a resend
    ++counters_.rx_duplicates;
    return false;
  }
  // §4.5: an atomic's extension header is staged in front of its operands.
  const uint8_t* const ext = d.ses_cas != nullptr          ? d.ses_cas->raw
                             : d.ses_atomic != nullptr     ? d.ses_atomic->raw
                             : d.ses_rendezvous != nullptr ? d.ses_rendezvous->raw
                                                           : nullptr;
  const uint8_t ext_len = d.ses_cas != nullptr          ? wire::SesCompareSwap::kSize
                          : d.ses_atomic != nullptr     ? wire::SesAtomic::kSize
                          : d.ses_rendezvous != nullptr ? wire::SesRendezvous::kSize
                                                        : 0;
  if (d.payload.size() + ext_len > hot_.payload_bytes) {  // not ours to hold; it comes again
    ++rare().rod_unstageable;
    return false;
  }
  const bool write = ses != nullptr && ses->opcode() == wire::SesOpcode::kWrite;
  if (write) {  // refused now if it would be refused when it runs (checked again then)
    const auto [key, at, len] = write_placement(*ses, d.payload.size());
    if (const wire::SesReturnCode why = check_region(key, at, len);
        why != wire::SesReturnCode::kNull) {
      refuse(p, psn, static_cast<uint8_t>(why), ses->message_id());
      return false;  // rod_drain passes it (Pdc::Target::gtd)
    }
  }
  if (!modes().rod.lend(
          p.tgt.rod_buf)) {  // every buffer lent: dropped, its retransmission comes again
    ++rare().rod_no_buffer;
    return false;
  }
  Staged& st = modes().rod.entry(p.tgt.rod_buf, psn);
  st.has_ses = ses != nullptr;
  if (ses != nullptr) std::memcpy(st.ses.data(), ses->raw, st.ses.size());
  st.ext = ext_len;
  st.len = static_cast<uint32_t>(d.payload.size());
  st.elided = static_cast<uint32_t>(d.elided);
  st.recorded = write || ses == nullptr;
  uint8_t* const at = modes().rod.bytes(p.tgt.rod_buf, psn);
  if (st.ext > 0) std::memcpy(at, ext, st.ext);
  if (st.len > 0) std::memcpy(at + st.ext, d.payload.data(), st.len);
  modes().rod.set_staged(p.tgt.rod_buf, psn, true);
  ++p.tgt.rod_held;
  ++rare().rod_staged;
  if (st.recorded) mark_received(p, psn);
  return true;
}

// Runs the staged requests from rod_next on, in PSN order, until a hole, a READ whose data is
// not yet read (its ACK is built later: build_ack continues from there), or a request that
// was NACKed (it comes again). Refused PSNs (Pdc::Target::gtd) are passed: they have no effect.
void UetEndpoint::rod_drain(Pdc& p, uint16_t id) {
  for (;;) {
    const uint32_t psn = p.tgt.rod_next;
    if (!psn_before(psn, p.tgt.rcv_base) && psn - p.tgt.rcv_base < hot_.mpr &&
        test_bit(p.tgt.gtd_bits, (psn & mpr_mask_))) {
      ++p.tgt.rod_next;
      continue;
    }
    if (!rod_staged(p, psn)) return;
    modes().rod.set_staged(p.tgt.rod_buf, psn, false);
    const Staged st = modes().rod.entry(p.tgt.rod_buf, psn);
    ++rare().rod_executed_late;
    Exec e = Exec::kRecord;
    if (st.has_ses) {
      const uint8_t* const at = modes().rod.bytes(p.tgt.rod_buf, psn);
      e = execute(p, id, *wire::as<wire::SesStandardRequest>(st.ses.data()), at,
                  std::span<const uint8_t>(at + st.ext, st.len), st.elided, psn);
    }
    if (--p.tgt.rod_held == 0) rod_release_buffer(p);  // after execute: it read the payload
    if (e == Exec::kWait) return;
    ++p.tgt.rod_next;
    if (e == Exec::kRecord && !st.recorded) {
      mark_received(p, psn);
      p.tgt.ack_now = true;
    }
  }
}

}  // namespace uet
