#include "fabric/engine_mux.h"

#include <algorithm>

namespace uet::fabric {

namespace {

// UET over IPv4/UDP as the provider's hosts frame it: the PDS header at byte 42.
constexpr size_t kPds = 14 + 20 + 8;
// SPDCID and DPDCID: bytes 8 and 10 of requests, ACKs, NACKs and CTRL (spec/uet.md §3.3-§3.12).
constexpr size_t kSpdcid = kPds + 8, kDpdcid = kPds + 10;
constexpr uint16_t kSyn = 0x0004;                          // §3.3 PDS request flag

// PDS types (§3.2): the requests, and the types with SPDCID and DPDCID at bytes 8 and 10.
constexpr uint8_t kRudReq = 2, kRodReq = 3, kRudiReq = 4, kUudReq = 6, kAck = 7, kCtrl = 11,
                  kRudCcReq = 13, kRodCcReq = 14;
constexpr bool has_pdcids(uint8_t type) noexcept {
  return type == kRudReq || type == kRodReq || (type >= kAck && type <= kRodCcReq);
}
constexpr bool is_pdc_request(uint8_t type) noexcept {
  return type == kRudReq || type == kRodReq || type == kRudCcReq || type == kRodCcReq;
}

uint16_t load16(const uint8_t* p) noexcept { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
void store16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

bool is_uet_udp4(const Frame& f) noexcept {
  return f.len >= kPds + 12 && f.data[12] == 0x08 && f.data[13] == 0x00 && f.data[14] == 0x45 &&
         f.data[23] == 17 && f.data[36] == (4793 >> 8) && f.data[37] == (4793 & 255);
}

// §4.1: the PIDonFEP a SES request addresses (bytes 8..9, low 12 bits, in every request format).
uint32_t pid_of_request(const Frame& f, size_t ses) noexcept {
  return ses + 10 <= f.len ? load16(f.data + ses + 8) & 0x0FFFu : EngineMux::kMaxEngines;
}

}  // namespace

void EngineMux::set(uint32_t pid, Transport* engine) noexcept {
  if (pid >= kMaxEngines) return;
  routed_ = routed_ || pid > 0;
  engines_[pid] = engine;
  top_ = kMaxEngines;
  while (top_ > 0 && engines_[top_ - 1] == nullptr) --top_;
  if (next_ >= top_) next_ = 0;
}

uint32_t EngineMux::route(Frame& f) noexcept {
  if (!is_uet_udp4(f)) return 0;  // not ours to read: engine 0 counts it as its own drop
  const uint16_t word = load16(f.data + kPds);
  const auto type = static_cast<uint8_t>(word >> 11);
  if (is_pdc_request(type) && (word & kSyn) != 0) {
    // §3.3: a SYN's DPDCID carries the PDC info; the process it is for names the engine.
    return pid_of_request(f, kPds + (type >= kRudCcReq ? 16 : 12));
  }
  if (has_pdcids(type)) {
    if (type == kCtrl && (word & kSyn) != 0) return kMaxEngines;  // names no PDC of ours yet
    const uint16_t dpdcid = load16(f.data + kDpdcid);
    store16(f.data + kDpdcid, dpdcid & (kPdcsPerEngine - 1));
    return dpdcid >> kPdcBits;
  }
  if (type == kRudiReq) return pid_of_request(f, kPds + 8);  // §3.5: no PDC
  if (type == kUudReq) return pid_of_request(f, kPds + 4);   // §3.6
  return 0;  // RUDI responses and the rest: engine 0, the provider's only user of them
}

void EngineMux::rx(std::span<Frame* const> frames, Time now) {
  if (!routed_) {  // PID 0 alone, ever: every frame is its engine's, unread
    if (engines_[0] != nullptr) engines_[0]->rx(frames, now);
    return;
  }
  // Runs of consecutive frames for one engine go to it together, in arrival order.
  size_t start = 0;
  uint32_t run = kMaxEngines;
  for (size_t i = 0; i <= frames.size(); ++i) {
    uint32_t e = kMaxEngines;
    if (i < frames.size()) {
      e = route(*frames[i]);
      if (e >= kMaxEngines || engines_[e] == nullptr) {
        ++counters_.rx_no_endpoint;
        e = kMaxEngines + 1;  // a dropped frame ends the run
      }
    }
    if (e == run) continue;
    if (run < kMaxEngines && i > start) engines_[run]->rx(frames.subspan(start, i - start), now);
    run = e;
    start = i;
  }
}

size_t EngineMux::tx(std::span<Frame* const> out, Time now) {
  if (!routed_) return engines_[0] != nullptr ? engines_[0]->tx(out, now) : 0;
  size_t filled = 0;
  const uint32_t first = next_;
  next_ = next_ + 1 < top_ ? next_ + 1 : 0;
  for (uint32_t k = 0; k < top_ && filled < out.size(); ++k) {
    const uint32_t pid = (first + k) % top_;
    Transport* e = engines_[pid];
    if (e == nullptr) continue;
    const size_t n = e->tx(out.subspan(filled), now);
    if (pid != 0) {  // its PDC ids on the wire carry its PID
      for (size_t i = filled; i < filled + n; ++i) {
        Frame& f = *out[i];
        if (!is_uet_udp4(f) || !has_pdcids(static_cast<uint8_t>(f.data[kPds] >> 3))) continue;
        store16(f.data + kSpdcid,
                static_cast<uint16_t>(load16(f.data + kSpdcid) | pid << kPdcBits));
      }
    }
    filled += n;
  }
  return filled;
}

Time EngineMux::next_deadline() const {
  Time d = kNever;
  for (uint32_t k = 0; k < top_; ++k) {
    if (engines_[k] != nullptr) d = std::min(d, engines_[k]->next_deadline());
  }
  return d;
}

void EngineMux::on_timer(Time now) {
  for (uint32_t k = 0; k < top_; ++k) {
    if (engines_[k] != nullptr && engines_[k]->next_deadline() <= now) engines_[k]->on_timer(now);
  }
}

}  // namespace uet::fabric
