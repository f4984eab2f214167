// Control path of the UET engine: configuration, PDC allocation, registration, posting,
// completions. The per-packet work is in uet_rx.cc, uet_tx.cc and the files beside them.
#include "transport/uet/uet_endpoint.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "transport/uet/uet_internal.h"

namespace uet {

namespace {

wire::MacAddr sim_mac(uint32_t ip4) {
  const uint32_t h = ip4 - 0x0A000001u;
  return {0x02, 0x00, static_cast<uint8_t>(h >> 24), static_cast<uint8_t>(h >> 16),
          static_cast<uint8_t>(h >> 8), static_cast<uint8_t>(h)};
}

absl::Status out_of_range(const char* field, uint64_t value, const char* range) {
  return absl::InvalidArgumentError(absl::StrCat("UetConfig.", field, "=", value,
                                                 " out of range: ", range));
}

// RCCC's derived fields: the receiver's line rate is the host link's; senders are PDC ids.
cc::RcccConfig derive_rccc(const UetConfig& c) {
  cc::RcccConfig r = c.rccc;
  r.link_gbps = c.link_gbps;
  r.max_senders = c.max_pdcs;
  return r;
}

}  // namespace

const char* to_string(CcMode m) noexcept {
  switch (m) {
    case CcMode::kNscc:
      return "nscc";
    case CcMode::kRccc:
      return "rccc";
    case CcMode::kNsccRccc:
      return "nscc+rccc";
  }
  return "?";
}

absl::Status UetConfig::validate() const {
  if (absl::Status s = validate_tables(); !s.ok()) return s;
  if (absl::Status s = validate_ses(); !s.ok()) return s;
  if (absl::Status s = validate_timing(); !s.ok()) return s;
  return validate_modes();
}

// The PDS and SES tables' bounds (each sized from these: memory_bound()).
absl::Status UetConfig::validate_tables() const {
  if (payload_bytes < 256 || payload_bytes > 9000)
    return out_of_range("payload_bytes", payload_bytes, "256..9000");
  if (max_pdcs < 1 || max_pdcs > 65535) return out_of_range("max_pdcs", max_pdcs, "1..65535");
  if (mpr < 64 || mpr > 4096 || !std::has_single_bit(mpr))
    return out_of_range("mpr", mpr, "64..4096, a power of 2");
  if (max_ops < 1 || max_ops > 65536)
    return out_of_range("max_ops", max_ops, "1..65536");
  if (max_recvs < 1 || max_recvs > 65536) return out_of_range("max_recvs", max_recvs, "1..65536");
  if (max_recv_messages < 1 || max_recv_messages > 4096)
    return out_of_range("max_recv_messages", max_recv_messages, "1..4096");
  if (rnr_retries > 64) return out_of_range("rnr_retries", rnr_retries, "0..64");
  if (max_trecvs < 1 || max_trecvs > 65536)
    return out_of_range("max_trecvs", max_trecvs, "1..65536");
  if (max_unexpected < 1 || max_unexpected > 65536)
    return out_of_range("max_unexpected", max_unexpected, "1..65536");
  if (unexpected_bytes < payload_bytes || unexpected_bytes > (uint64_t{1} << 30))
    return out_of_range("unexpected_bytes", unexpected_bytes, "payload_bytes..1 GiB");
  if (atomic_results < 1 || atomic_results > 65535)
    return out_of_range("atomic_results", atomic_results, "1..65535");
  return absl::OkStatus();
}

// Rendezvous, deferrable sends and job-based access (spec/uet.md §4.1, §4.2, §4.5.3).
absl::Status UetConfig::validate_ses() const {
  if (rendezvous_bytes != 0 && (rendezvous_bytes < payload_bytes || rendezvous_bytes > 0xFFFFFFFFu))
    return out_of_range("rendezvous_bytes", rendezvous_bytes, "0, or payload_bytes..4294967295");
  if (rendezvous_sources < 1 || rendezvous_sources > 65535)
    return out_of_range("rendezvous_sources", rendezvous_sources, "1..65535");
  if (rendezvous_timeout < kMicrosecond || rendezvous_timeout > 1000 * kSecond)
    return out_of_range("rendezvous_timeout", static_cast<uint64_t>(rendezvous_timeout),
                        "1 us..1000 s (ps)");
  if (hold_probe_after != 0 && (hold_probe_after < kMicrosecond || hold_probe_after > 1000 * kSecond))
    return out_of_range("hold_probe_after", static_cast<uint64_t>(hold_probe_after),
                        "0, or 1 us..1000 s (ps)");
  if (deferrable_sends < 1 || deferrable_sends > 65535)
    return out_of_range("deferrable_sends", deferrable_sends, "1..65535");
  if (deferral_timeout < kMicrosecond || deferral_timeout > 1000 * kSecond)
    return out_of_range("deferral_timeout", static_cast<uint64_t>(deferral_timeout),
                        "1 us..1000 s (ps)");
  if (job_id > 0xFFFFFF) return out_of_range("job_id", job_id, "0..16777215 (24 bits)");
  if (pid_on_fep > 0xFFF) return out_of_range("pid_on_fep", pid_on_fep, "0..4095 (12 bits)");
  if (job_pid_base > pid_on_fep)
    return out_of_range("job_pid_base", job_pid_base, "0..pid_on_fep");
  if (resource_indexes < 1 || resource_indexes > 4096)
    return out_of_range("resource_indexes", resource_indexes, "1..4096");
  return absl::OkStatus();
}

// The window, the RTO and its estimator, ACK pacing, reordering and idle close.
absl::Status UetConfig::validate_timing() const {
  if (window_bytes < payload_bytes || window_bytes > (uint64_t{1} << 32))
    return out_of_range("window_bytes", window_bytes, "payload_bytes..4 GiB");
  if (rto < kMicrosecond || rto > kSecond) return out_of_range("rto", rto, "1 us..1 s (ps)");
  if (min_rto < kMicrosecond || min_rto > rto)
    return out_of_range("min_rto", min_rto, "1 us..rto (ps)");
  if (max_rto < rto || max_rto > 60 * kSecond)
    return out_of_range("max_rto", max_rto, "rto..60 s (ps)");
  if (rto_srtt_pct > 1000) return out_of_range("rto_srtt_pct", rto_srtt_pct, "0..1000");
  if (rto_rtt_max_pct > 1000) return out_of_range("rto_rtt_max_pct", rto_rtt_max_pct, "0..1000");
  if (max_retries < 1 || max_retries > 64) return out_of_range("max_retries", max_retries, "1..64");
  if (reorder_threshold < 1 || reorder_threshold > 63)
    return out_of_range("reorder_threshold", reorder_threshold, "1..63");
  if (ack_every < 1 || ack_every > 64) return out_of_range("ack_every", ack_every, "1..64");
  if (reorder_window < 0 || reorder_window > kSecond)
    return out_of_range("reorder_window", reorder_window, "0..1 s (ps)");
  if (reorder_srtt_pct > 1000)
    return out_of_range("reorder_srtt_pct", reorder_srtt_pct, "0..1000");
  if (reorder_adapt_recoveries > 255)
    return out_of_range("reorder_adapt_recoveries", reorder_adapt_recoveries, "0..255");
  if (ack_delay < 0 || ack_delay > kMillisecond)
    return out_of_range("ack_delay", ack_delay, "0..1 ms (ps)");
  if (idle_timeout != 0 && (idle_timeout < kMicrosecond || idle_timeout > 10 * kSecond))
    return out_of_range("idle_timeout", static_cast<uint64_t>(idle_timeout), "0, or 1 us..10 s (ps)");
  return absl::OkStatus();
}

// ROD, RUDI and UUD (§3.3, §3.5, §3.6), the DSCP marks (§2.5), the congestion control, the
// path selection and the local address.
absl::Status UetConfig::validate_modes() const {
  if (rod_window != 0 && (rod_window < 64 || rod_window > mpr || !std::has_single_bit(rod_window)))
    return out_of_range("rod_window", rod_window, "0 (= mpr), or 64..mpr, a power of 2");
  if (rudi_packets < 1 || rudi_packets > 65536)
    return out_of_range("rudi_packets", rudi_packets, "1..65536");
  if (rudi_responses < 1 || rudi_responses > 65536)
    return out_of_range("rudi_responses", rudi_responses, "1..65536");
  if (rod_buffers < 1 || rod_buffers > 65535)
    return out_of_range("rod_buffers", rod_buffers, "1..65535");
  if (uud_queue < 1 || uud_queue > 65536) return out_of_range("uud_queue", uud_queue, "1..65536");
  if (dscp_data > 63) return out_of_range("dscp_data", dscp_data, "0..63");
  if (dscp_control > 63) return out_of_range("dscp_control", dscp_control, "0..63");
  if (cc != CcMode::kNscc && cc != CcMode::kRccc && cc != CcMode::kNsccRccc)
    return out_of_range("cc", static_cast<uint64_t>(cc), "kNscc, kRccc or kNsccRccc");
  if (absl::Status s = derive_rccc(*this).validate(); !s.ok()) {
    // "RcccConfig.quantum=..." -> "UetConfig.rccc.quantum=..."
    std::string m(s.message());
    if (m.rfind("RcccConfig.", 0) == 0) m = m.substr(11);
    return absl::InvalidArgumentError(absl::StrCat("UetConfig.rccc.", m));
  }
  if (absl::Status s = pathsel.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("UetConfig.", std::string(s.message())));
  }
  if (local_ip4 == 0) return absl::InvalidArgumentError("UetConfig.local_ip4 must be set");
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const UetShared>> UetShared::create(const UetConfig& config) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  cc::NsccConfig nc;
  nc.link_gbps = config.link_gbps;
  nc.base_rtt = config.base_rtt;
  nc.mtu = config.payload_bytes;
  auto derived = cc::NsccConfig::derive(nc);
  if (!derived.ok()) return derived.status();
  auto s = std::shared_ptr<UetShared>(new UetShared(config));
  if (s->config_.resolve_mac == nullptr) s->config_.resolve_mac = sim_mac;
  if (s->config_.rod_window == 0) s->config_.rod_window = s->config_.mpr;
  s->nscc_ = *derived;
  s->rccc_ = derive_rccc(config);
  return s;
}

absl::StatusOr<std::unique_ptr<UetEndpoint>> UetEndpoint::create(const UetConfig& config) {
  auto shared = UetShared::create(config);
  if (!shared.ok()) return shared.status();
  return create(std::move(*shared), UetHost{config.local_ip4, config.local_mac, config.seed});
}

absl::StatusOr<std::unique_ptr<UetEndpoint>> UetEndpoint::create(
    std::shared_ptr<const UetShared> shared, const UetHost& host) {
  if (shared == nullptr) return absl::InvalidArgumentError("UetShared must be given");
  if (host.local_ip4 == 0) return absl::InvalidArgumentError("UetHost.local_ip4 must be set");
  const tss::TssConfig& tss = shared->config_.tss;
  auto ep = std::unique_ptr<UetEndpoint>(new UetEndpoint(std::move(shared), host));
  if (tss.enabled) {
    auto t = tss::Sublayer::create(tss, host.local_ip4);
    if (!t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("UetConfig.tss: ", t.status().message()));
    }
    ep->tss_ = std::move(*t);
    ep->tss_overhead_ = static_cast<uint32_t>(ep->tss_->overhead());
  }
  return ep;
}

UetEndpoint::UetEndpoint(std::shared_ptr<const UetShared> shared, const UetHost& host)
    : shared_(std::move(shared)),
      config_(shared_->config_),
      local_ip4_(host.local_ip4),
      local_mac_(host.local_mac),
      mpr_mask_(config_.mpr - 1),
      hot_(config_),
      rccc_rx_(shared_->rccc_),
      pdcs_(hot_.max_pdcs, hot_.mpr),
      rng_(host.seed ^ host.local_ip4) {
  update_access_word();
}

uint64_t UetEndpoint::next_random() noexcept {
  uint64_t z = (rng_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Allocating a PDC sizes the windows its role needs once; later lives keep the capacity (the
// vectors are kept across the reset). RCCC's receiver grows with the table (senders are PDC
// ids).
int32_t UetEndpoint::alloc_pdc(Role role) {
  const uint32_t made = pdcs_.size();
  const int32_t n = pdcs_.alloc(role);
  if (n < 0) return -1;
  if (pdcs_.size() != made) rccc_rx_.reserve(pdcs_.size());
  Pdc& p = pdcs_[static_cast<uint16_t>(n)];
  // An initiator's send window grows with its flight (grow_window()), its operations ring in
  // post_op() (every entry is written there before use).
  if (role == Role::kTarget) {
    // The response ring grows in queue_response() (every entry is written there before
    // use), refusals' codes come with the first refusal (refuse()); their bitmaps are here.
    p.tgt.rcv_bits.assign(hot_.mpr / 64, 0);
    p.tgt.rsp_bits.assign(hot_.mpr / 64, 0);
    std::fill(p.tgt.gtd.begin(), p.tgt.gtd.end(), Pdc::Refusal{});
    p.tgt.gtd_bits.assign(hot_.mpr / 64, 0);
    return n;
  }
  p.ini.rto = hot_.rto;
  p.ini.nscc = cc::Nscc(shared_->nscc_);
  p.ini.rccc = cc::RcccSender(shared_->rccc_);
  return n;
}

size_t UetEndpoint::pdcs_in_use() const noexcept { return pdcs_.active().size(); }

size_t UetEndpoint::window_slots() const noexcept {
  size_t n = 0;
  for (const uint16_t id : pdcs_.active()) {
    if (pdcs_[id].role == Role::kInitiator) n += pdcs_[id].ini.slots.capacity();
  }
  return n;
}

// A new PSN found the send window full: it doubles (from 16 slots), never past mpr (tx
// keeps next_psn - base_psn below it). A few times per PDC as its flight grows, not per
// packet.
void UetEndpoint::grow_window(Pdc& p) {
  p.ini.slots.reserve32(p.ini.base_psn, p.ini.next_psn, p.ini.next_psn - p.ini.base_psn + 1,
                        hot_.mpr);
}

namespace {
template <typename V>
size_t held(const V& v) noexcept {
  return v.capacity() * sizeof(typename V::value_type);
}
}  // namespace

size_t UetEndpoint::memory_bytes() const noexcept {
  size_t n = pdcs_.memory_bytes() + credit_ring_.bytes() + unanswered_.bytes() + recvs_.bytes() +
             stateless_.bytes() + held(rx_msgs_) + held(completions_) + modes_bytes() +
             regions_.memory_bytes() + rccc_rx_.memory_bytes() + held(tab().trecvs) + held(tab().trecv_free) +
             held(tab().unexp) + held(tab().unexp_free) + held(tab().unexp_by_at) + held(resources_) +
             held(tab().amo_results) + held(tab().amo_free) + held(tab().rdv) + held(tab().rdv_free) + held(tab().defer) +
             held(tab().defer_free) + held(tab().deferred) +
             (arena_ != nullptr ? config_.unexpected_bytes : 0);
  if (tss_ != nullptr) n += tss_->memory_bytes();
  return n;
}

// memory_bytes()'s terms, each at its bound (NOTES.md, "Ownership and threads").
size_t UetEndpoint::memory_bound(const UetConfig& c, uint32_t regions) noexcept {
  const size_t pdcs = c.max_pdcs, mpr = c.mpr, words = mpr / 64 * sizeof(uint64_t);
  const uint32_t rod_window = c.rod_window != 0 ? c.rod_window : c.mpr;
  // One set of windows serves either role in turn and keeps what each role sized (alloc_pdc
  // moves a parked set in as it is): the initiator's operations ring, the target's response
  // ring and refusals, the three mpr-bit maps. Besides, by role, an initiator's send window or
  // a target's NACK ring, each given back when its PDC is freed (an initiator's with its RNR
  // counts, a byte per PSN).
  const size_t by_role = std::max(GrowRing<Slot, 16>::bytes_bound(c.mpr) + mpr,
                                  GrowRing<Pdc::Nack, 4>::bytes_bound(Pdc::Target::kNacks));
  const size_t window = by_role + GrowRing<Op, 2>::bytes_bound(c.max_ops) +
                        GrowRing<Pdc::Response>::bytes_bound(c.mpr) + mpr * sizeof(Pdc::Refusal) +
                        3 * words;
  // Every operation posted (max_ops per RUD/ROD PDC, and on RUDI), receive buffer and UUD
  // datagram completes once; poll_completions() compacts the queue once half of it is
  // polled, so it holds fewer than twice those.
  const size_t outstanding =
      pdcs * c.max_ops + c.max_recvs + c.max_trecvs + c.max_ops + c.uud_queue;
  return pds::PdcTable::bytes_bound(c.max_pdcs) + pdcs * window +  // the table, windows
         2 * GrowRing<uint16_t>::bytes_bound(c.max_pdcs) +         // RCCC credits, unanswered
         GrowRing<StatelessNack, 4>::bytes_bound(kStateless) +
         cc::RcccReceiver::memory_bound(derive_rccc(c)) +  // RCCC: a sender per PDC id
         GrowRing<Recv>::bytes_bound(c.max_recvs) + c.max_recv_messages * sizeof(RxMsg) +
         appended_capacity(2 * outstanding) * sizeof(Completion) + sizeof(Modes) +
         pds::RodBuffers::memory_bound(rod_window, c.payload_bytes, c.rod_buffers) +
         size_t{c.max_ops} * sizeof(PeerOp) +  // RUDI (§3.5): operations, packets, free
         size_t{c.rudi_packets} * (sizeof(pds::RudiPkt) + sizeof(uint16_t)) +  // ids, responses
         size_t{c.rudi_responses} * sizeof(RudiRsp) + size_t{c.uud_queue} * sizeof(PeerOp) +
         Regions::bytes_bound(regions) +
         // Tagged messages: receives, unexpected entries (four tables), their bytes.
         size_t{c.max_trecvs} * (sizeof(TRecv) + sizeof(uint32_t)) +
         size_t{c.max_unexpected} * (sizeof(Unexp) + 3 * sizeof(uint32_t)) + c.unexpected_bytes +
         size_t{c.resource_indexes} * sizeof(Resource) +
         size_t{c.atomic_results} * (kMaxAtomicBytes + sizeof(uint16_t)) +  // fetched values
         size_t{c.rendezvous_sources} * (sizeof(RdvSource) + sizeof(uint32_t)) +
         size_t{c.deferrable_sends} * (sizeof(DeferSlot) + sizeof(uint32_t)) +
         (c.tss.enabled ? tss::Sublayer::memory_bound(c.tss) : 0);
}

absl::StatusOr<uint32_t> UetEndpoint::register_memory(uint8_t* base, uint64_t length) {
  return regions_.add(base, length,
                      config_.stream_placement_from > 0 && length >= config_.stream_placement_from,
                      "register_memory");
}

namespace {
// Whether operation `o` has a buffer in [lo, lo + n): its payload or operands, its READ
// destination or fetched values, its compare values.
bool op_uses(const pds::Op& o, const uint8_t* lo, uint64_t n) noexcept {
  return overlaps(o.src, o.length, lo, n) || overlaps(o.dst, o.length, lo, n) ||
         overlaps(o.compare, o.length, lo, n);
}
}  // namespace

// The operations posted here and not completed with a buffer in [base, base + length): on a
// PDC (RUD, ROD; a rendezvous send until its source is read), on RUDI, queued for UUD, or a
// deferrable send waiting for its RTR.
uint32_t UetEndpoint::ops_using(const uint8_t* base, uint64_t length) const noexcept {
  uint32_t n = 0;
  for (const uint16_t id : pdcs_.active()) {
    const Pdc& p = pdcs_[id];
    if (p.role != Role::kInitiator) continue;
    for (uint32_t i = p.ini.op_head; i != p.ini.op_tail; ++i) {
      n += op_uses(p.ini.ops[i], base, length);
    }
  }
  if (modes_ != nullptr) {
    const pds::Rudi& r = modes_->rudi;
    for (uint32_t i = r.op_head; i != r.op_tail; ++i) {
      n += op_uses(r.ops[i % config_.max_ops], base, length);
    }
    n += modes_->uud.count_if([&](const PeerOp& o) { return op_uses(o, base, length); });
  }
  for (const DeferSlot& d : tab().defer) n += d.live && d.deferred && op_uses(d.op, base, length);
  return n;
}

// READ answers already queued read their data when their ACK (or RUDI response) is built:
// those of region `key` go out as refusals instead, as if the READ had come now.
void UetEndpoint::refuse_queued_reads(uint32_t key) noexcept {
  const auto refuse_read = [&](auto& r) {
    if (!r.data || r.key != key) return;
    r.data = false;
    r.code = static_cast<uint8_t>(wire::SesReturnCode::kBadMkey);
    ++rare().rx_bad_key;
  };
  for (const uint16_t id : pdcs_.active()) {
    Pdc& p = pdcs_[id];
    if (p.role != Role::kTarget) continue;
    for (uint32_t i = p.tgt.rsp_head; i != p.tgt.rsp_tail; ++i) {
      if (p.tgt.rsp[i].result == 0) refuse_read(p.tgt.rsp[i]);  // (not an atomic's values)
    }
  }
  if (modes_ == nullptr) return;
  pds::Rudi& r = modes_->rudi;
  for (uint32_t i = r.rsp_head; i != r.rsp_tail; ++i) refuse_read(r.rsp[i % r.rsp.size()]);
}

// Deregistration (transport/api.h): refused while this endpoint's own operations use the
// memory; then queued READ answers from it are refused, and its key (regions_.remove) with
// every packet that names it, so nothing reads or writes the region after this returns.
absl::Status UetEndpoint::deregister_memory(uint32_t key) {
  const auto count = [this](const uint8_t* base, uint64_t length) {
    return ops_using(base, length);
  };
  if (absl::Status s = regions_.check_deregister(key, count, "operation(s)"); !s.ok()) return s;
  refuse_queued_reads(key);
  return regions_.remove(key, "deregister_memory");
}

absl::StatusOr<uint16_t> UetEndpoint::initiator_pdc(uint32_t peer, bool rod, uint16_t pid,
                                                     const char* verb) {
  if (peer == 0 || peer == local_ip4_) {
    return absl::InvalidArgumentError(
        absl::StrCat(verb, ": peer must be another endpoint's address"));
  }
  if (const int32_t known = pdcs_.find_initiator(peer, rod, pid); known >= 0) {
    return static_cast<uint16_t>(known);
  }
  const int32_t n = alloc_pdc(Role::kInitiator);
  if (n < 0) return absl::ResourceExhaustedError(absl::StrCat(verb, ": PDC table full (max_pdcs)"));
  const auto id = static_cast<uint16_t>(n);
  Pdc& p = pdcs_[id];
  set_peer(p, peer);
  p.rod = rod;  // one delivery mode per PDC (§3.3)
  p.peer_pid = pid;
  // spec/uet.md §3.3: a random start PSN; SYN until the first ACK. Under TSS (§5.6) the
  // PDC after another to the same peer starts past it.
  p.start_psn = static_cast<uint32_t>(next_random());
  if (tss_ != nullptr) {
    p.start_psn = tss_->initiator_start_psn(peer, p.start_psn);
    // A PDC opened while this one lives (the other mode, or after this one starts closing)
    // starts 2^24 PSNs on, past anything this one sends before its target frees it.
    tss_->initiator_next_start(peer, p.start_psn + kSecurePdcPsnStride);
  }
  p.ini.next_psn = p.ini.base_psn = p.start_psn;
  p.ini.rack_highest = p.start_psn - 1;  // nothing acknowledged yet
  p.ev_base = static_cast<uint16_t>(next_random());
  // §2.4 [choice]: a ROD PDC keeps one EV for its lifetime (a fixed selector, one EV).
  pathsel::PathSelConfig ps = config_.pathsel;
  if (rod) {
    ps.algorithm = pathsel::Algorithm::kFixed;
    ps.ev_count = 1;
  }
  p.ini.sel = pathsel::PathSelector(ps, next_random());
  pdcs_.insert_initiator(peer, rod, pid, id);
  return id;
}

// Queues `op` on the PDC to `peer`; message IDs and packet counts are assigned here.
absl::Status UetEndpoint::post_op(uint32_t peer, bool rod, const Op& op, const char* verb) {
  auto id = initiator_pdc(peer, rod, op.to.pid_on_fep, verb);
  if (!id.ok()) return id.status();
  Pdc& p = pdcs_[*id];
  mark_ready(p);
  if (p.ini.op_tail - p.ini.op_head >= config_.max_ops) {
    return absl::ResourceExhaustedError(
        absl::StrCat(verb, ": too many operations posted on this PDC (max_ops)"));
  }
  p.ini.ops.reserve32(p.ini.op_head, p.ini.op_tail, uint64_t{p.ini.op_tail - p.ini.op_head} + 1,
                      config_.max_ops);
  p.idle_deadline = kNever;  // busy again
  Op& o = p.ini.ops[p.ini.op_tail];
  o = op;
  o.address = internal::address_words(config_.job_id, op.to);  // once, for all its packets
  o.first_psn = p.ini.next_psn;  // if none posted before it is unsent; else tx sets it
  o.packets = std::max<uint32_t>(
      1, static_cast<uint32_t>((op.length + hot_.payload_bytes - 1) / hot_.payload_bytes));
  uint64_t carried = op.length;
  if (config_.rendezvous_bytes != 0 && op.length > config_.rendezvous_bytes && op.defer == 0 &&
      (op.op == Opcode::kSend || op.op == Opcode::kTaggedSend)) {
    rdv_expose(p, o);  // §4.5.3: one packet, the eager bytes; the target READs the rest
    if (o.rdv != 0) {
      o.packets = 1;
      carried = rdv_eager();
    }
  }
  // A rendezvous send is also waiting for its source's READs or push (rdv_release), a CTS
  // for the push it asked for (cts_release).
  o.unacked = o.packets + (is_rdv_send(o) || is_cts(o) ? 1 : 0);
  if (is_cts(o)) [[unlikely]] cts_posted(p, o);
  // RCCC's backlog: the payload bytes that need credit (not READs' or atomics', above tx).
  o.carries = op.op != Opcode::kRead && op.op != Opcode::kAtomic && op.op != Opcode::kRecv;
  if (o.carries) p.ini.unsent_bytes += carried;
  o.message_id = p.ini.next_message_id;
  // A READ is one single-packet READ message per chunk (NOTES.md, "How the SES operations travel
  // on the PDS"): one ID each.
  p.ini.next_message_id = static_cast<uint16_t>(p.ini.next_message_id +
                                            (op.op == Opcode::kRead ? o.packets : 1));
  ++p.ini.op_tail;
  return absl::OkStatus();
}

// What write, read and send share: the mode must carry the opcode (check_mode), and `buffer`
// hold the length, 1 (0 for a SEND) to 2^32 - 1 bytes; then the operation goes to its mode.
absl::Status UetEndpoint::post_verb(DeliveryMode mode, uint32_t peer, const Op& op,
                                    const void* buffer, const char* verb) {
  if (absl::Status s = check_mode(mode, op.op, verb); !s.ok()) return s;
  const uint64_t least = op.op == Opcode::kSend || op.op == Opcode::kTaggedSend ? 0 : 1;
  if (op.length < least || op.length > 0xFFFFFFFFu || (op.length > 0 && buffer == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat(verb, ": length must be ", least, "..4294967295 with a buffer"));
  }
  return post_in_mode(mode, peer, op, verb);
}

absl::Status UetEndpoint::post_write(const WriteRequest& wr) {
  Op op{posted_verb(wr)};
  op.to = wr.to;
  return post_verb(wr.mode, wr.peer, op, wr.local, "post_write");
}

absl::Status UetEndpoint::post_read(const ReadRequest& rr) {
  Op op{posted_verb(rr)};
  op.to = rr.to;
  return post_verb(rr.mode, rr.peer, op, rr.local, "post_read");
}

// The immediate travels in ses_std.header_data with `hd` (spec/uet.md §4.2).
absl::Status UetEndpoint::post_send(const SendRequest& sr) {
  Op op{posted_verb(sr)};
  op.to = sr.to;
  if (sr.deferrable) return defer_post(sr.mode, sr.peer, op, sr.local, "post_send");
  return post_verb(sr.mode, sr.peer, op, sr.local, "post_send");
}

// One operation, checked by the verb, to the machinery of its delivery mode: a PDC (RUD,
// ROD), RUDI's packet IDs or UUD's datagrams (check_mode has refused the pairs not carried).
absl::Status UetEndpoint::post_in_mode(DeliveryMode mode, uint32_t peer, const Op& op,
                                       const char* verb) {
  if (mode != DeliveryMode::kRudi && mode != DeliveryMode::kUud) {
    return post_op(peer, mode == DeliveryMode::kRod, op, verb);
  }
  if (peer == 0 || peer == local_ip4_) {
    return absl::InvalidArgumentError(
        absl::StrCat(verb, ": peer must be another endpoint's address"));
  }
  PeerOp m;
  static_cast<Op&>(m) = op;
  m.peer = peer;
  return mode == DeliveryMode::kUud ? post_uud(m, verb) : post_rudi(m, verb);
}

absl::Status UetEndpoint::post_recv(const RecvBuffer& rb) {
  if (rb.length > 0 && rb.base == nullptr) {
    return absl::InvalidArgumentError("post_recv: a buffer with length > 0 needs a base");
  }
  if (recv_tail_ - recv_head_ >= config_.max_recvs) {
    return absl::ResourceExhaustedError("post_recv: too many receive buffers posted (max_recvs)");
  }
  if (rx_msgs_.empty()) rx_msgs_.assign(config_.max_recv_messages, RxMsg{});
  recvs_.reserve32(recv_head_, recv_tail_, uint64_t{recv_tail_ - recv_head_} + 1,
                   config_.max_recvs);
  Recv& r = recvs_[recv_tail_];
  r = Recv{};
  r.rb = rb;
  ++recv_tail_;
  if (deferred_untagged_ > 0) reserve_untagged();  // a deferred SEND gets it (§4.2)
  return absl::OkStatus();
}

size_t UetEndpoint::poll_completions(std::span<Completion> out) {
  size_t n = 0;
  while (n < out.size() && completions_head_ < completions_.size()) {
    out[n++] = completions_[completions_head_++];
  }
  // Polled entries go once they are at least half the queue (at once when all are): an
  // application that polls part of the queue each time would otherwise grow it without end.
  // Moving the rest costs no more than the polls that passed them.
  if (completions_head_ >= completions_.size() - completions_head_) {
    completions_.erase(completions_.begin(),
                       completions_.begin() + static_cast<ptrdiff_t>(completions_head_));
    completions_head_ = 0;
  }
  return n;
}

UetEndpoint::Modes& UetEndpoint::make_modes() {
  modes_ = std::make_unique<Modes>();
  modes_->rod.configure(hot_.rod_window, hot_.payload_bytes, config_.rod_buffers);
  return *modes_;
}

size_t UetEndpoint::modes_bytes() const noexcept {
  if (modes_ == nullptr) return 0;
  return sizeof(Modes) + modes_->rod.memory_bytes() + modes_->rudi.memory_bytes() +
         modes_->uud.memory_bytes();
}

UetCounters UetEndpoint::counters() const noexcept {
  UetCounters c = rare();
#define UET_HOT_COPY(type, name) c.name = counters_.name;
  UET_HOT_COUNTERS(UET_HOT_COPY)
#undef UET_HOT_COPY
  return c;
}

EndpointStats UetEndpoint::stats() const {
  const HotCounters& h = counters_;
  EndpointStats s;
  s.data_packets = h.tx_data;
  s.retransmitted_packets = h.tx_retx;
  s.control_packets = h.tx_acks + h.tx_nacks + h.tx_credit + h.tx_credit_req + h.tx_req_ack;
  s.timeouts = h.timeouts;
  s.rx_dropped = h.rx_out_of_window;
  if (const UetCounters* r = rare_counters_.get_if()) {
    s.data_packets += r->tx_rudi + r->tx_uud;
    s.retransmitted_packets += r->tx_rudi_retx;
    s.control_packets += r->tx_rudi_resp;
    s.timeouts += r->rudi_timeouts;
    s.spurious_retransmits = r->spurious_retx;
    s.rx_dropped += r->rx_malformed + r->rx_unknown_pdc + r->rx_no_pdc_avail +
                    r->rx_stale_read_data + r->rx_bad_send + r->rx_rudi_stale + r->rudi_rsp_full +
                    r->rx_uud_dropped + r->rx_mode_mismatch;
  }
  return s;
}

}  // namespace uet
