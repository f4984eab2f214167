// PathSelector: one PDC's path selection, whichever algorithm the config names. A
// std::variant of the five pure engines, dispatched with std::visit (for one variant of a few
// alternatives libstdc++ compiles it to a switch on the index; next_ev spells that switch out,
// and GCC leaves on_ack's out of line, see there): no virtual call per packet, no allocation
// after construction (only Bitmap and Mixed allocate, once, in their constructors).
//
// Events (time injected, nothing read from a clock):
//   next_ev(now)               the EV index (0..ev_count-1) of the next packet sent
//   on_ack(ev, ecn, now)       a packet sent on `ev` was acknowledged; `ecn`: its ACK echoed CE
//   on_nack(ev, now)           a packet sent on `ev` was trimmed or lost
//   on_timeout(ev, now)        a packet sent on `ev` timed out
//
// Ownership and threads: owned by its PDC, driven by the thread that drives the PDC.
#pragma once

#include <cstdint>
#include <variant>

#include "absl/status/statusor.h"
#include "pathsel/bitmap.h"
#include "pathsel/config.h"
#include "pathsel/fixed_ev.h"
#include "pathsel/mixed.h"
#include "pathsel/oblivious.h"
#include "pathsel/reps.h"

namespace uet::pathsel {

class PathSelector {
 public:
  PathSelector() = default;  // FixedEv on EV 0 (a PDC that sends nothing)
  // `c` must be valid (c.validate()); `seed` drives the selector's own generator.
  PathSelector(const PathSelConfig& c, uint64_t seed);
  // Validates `c` first.
  static absl::StatusOr<PathSelector> create(const PathSelConfig& c, uint64_t seed);

  // Called for every packet sent: the visit spelled out as a switch, always inline, so the
  // engine's tx() makes no call for it (GCC -O2 left std::visit's dispatch out of line once
  // tx() grew; bench/NOTES.md, "Tagged messages: the per-packet cost mended").
  [[gnu::always_inline]] uint16_t next_ev(Time now) noexcept {
    switch (algorithm()) {
      case Algorithm::kFixed:
        return std::get_if<FixedEv>(&impl_)->next_ev(now);
      case Algorithm::kOblivious:
        return std::get_if<Oblivious>(&impl_)->next_ev(now);
      case Algorithm::kReps:
        return std::get_if<Reps>(&impl_)->next_ev(now);
      case Algorithm::kBitmap:
        return std::get_if<Bitmap>(&impl_)->next_ev(now);
      case Algorithm::kMixed:
        return std::get_if<Mixed>(&impl_)->next_ev(now);
    }
    // Valueless (a constructor threw while replacing it), as std::visit would find it.
    return std::visit([now](auto& s) { return s.next_ev(now); }, impl_);
  }
  // Called for every packet acknowledged. FixedEv and Oblivious ignore it: tested before the
  // visit, which GCC leaves out of line (Reps and Bitmap inline into it), so their ACKs cost
  // no call per packet (bench/NOTES.md, "Fourth round (h/engine4)").
  void on_ack(uint16_t ev, bool ecn, Time now) noexcept {
    if (std::holds_alternative<Oblivious>(impl_) || std::holds_alternative<FixedEv>(impl_)) return;
    std::visit([=](auto& s) { s.on_ack(ev, ecn, now); }, impl_);
  }
  void on_nack(uint16_t ev, Time now) noexcept {
    std::visit([=](auto& s) { s.on_nack(ev, now); }, impl_);
  }
  void on_timeout(uint16_t ev, Time now) noexcept {
    std::visit([=](auto& s) { s.on_timeout(ev, now); }, impl_);
  }

  Algorithm algorithm() const noexcept { return static_cast<Algorithm>(impl_.index()); }
  // The engine itself, for tests and statistics; nullptr if it is another algorithm.
  template <class T>
  const T* as() const noexcept {
    return std::get_if<T>(&impl_);
  }

 private:
  // In the order of Algorithm.
  std::variant<FixedEv, Oblivious, Reps, Bitmap, Mixed> impl_;
};

}  // namespace uet::pathsel
