// RCCC, UET's receiver-credit congestion control (spec/uet.md §3.8.2): a pure engine for each
// side. The receiver shares its line rate among the senders that want to send to it, granting
// credit in quanta, round robin, paced at the line rate; a sender starts with a speculative
// allowance and then sends only against credit. It targets last-hop incast, where the
// receiver's link is the bottleneck and only the receiver sees every sender.
//
// Wire mapping (spec/uet.md §3.4, §3.8.2; the engine does it, not this file): a sender puts
// its credit_target (Sender::credit_target(): the credit it still wants) in RUD_CC requests;
// the receiver answers with CREDIT packets or the credit field of ACK_CC (cc_type CREDIT).
//
// Defaults after the UEC simulator (htsim uec.cpp): grants of 4 MTUs, a sender's
// speculative allowance of one max window, credit counted in bytes (htsim's quantum of 256 B
// is a wire encoding: the 24-bit credit field is in bytes here, up to 16 MiB).
//
// Pure: time comes in, decisions come out, no clock. The receiver's tables grow with the
// senders it is told of (reserve(), or a request from a sender beyond them), up to
// max_senders; senders are indices (the engine's PDC ids).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "transport/time.h"

namespace uet::cc {

struct RcccConfig {
  double link_gbps = 100;               // the receiver's line rate, shared by its senders
  uint32_t quantum = 4 * 4096;          // bytes per grant, 256..1 MiB
  uint64_t speculative = 225'000;       // a sender's allowance before any grant, 0..16 MiB
  uint64_t max_credit_target = 225'000; // a sender asks for at most this much at once
  uint32_t max_senders = 1024;          // senders a receiver tracks (the PDC table size)
  // Grants are paced at this fraction of the line rate, (0, 1]: 0.99 as uet-htsim's pull
  // pacer (main_uec.cpp: UecPullPacer(linkspeed, 0.99, ...)). Grants count payload bytes and
  // the wire also carries ~3 % of headers, so this asks for ~2 % more than the last hop
  // carries: its buffer stays full and trimming takes the excess, which is what keeps the
  // link busy (bench/NOTES.md, "Choices in the sources").
  double grant_rate_fraction = 0.99;

  // Names the field and its valid range on error.
  absl::Status validate() const;
};

// The receiver side: one per endpoint (its NIC's line rate), senders by index.
class RcccReceiver {
 public:
  explicit RcccReceiver(const RcccConfig& c);

  // A request from `sender` carried credit_target `bytes` (0: it wants nothing more).
  void on_request(uint32_t sender, uint64_t bytes, Time now) noexcept;
  // The sender's connection went away: forget it.
  void on_close(uint32_t sender) noexcept;

  struct Grant {
    uint32_t sender;
    uint32_t bytes;
  };
  // The next grant due at `now`, if any (pacing and demand allow); the engine sends it.
  std::optional<Grant> next_grant(Time now) noexcept;
  // When next_grant() may next return a grant: kNever if nobody wants credit.
  Time next_event() const noexcept { return active_ == 0 ? kNever : next_grant_at_; }

  uint64_t granted(uint32_t sender) const noexcept {
    return sender < senders_.size() ? senders_[sender].granted : 0;
  }
  // Makes room for senders 0..n-1 (at most max_senders): the table grows as its owner's
  // connections do (on_request() grows it too, for a sender beyond it).
  void reserve(uint32_t n);
  size_t memory_bytes() const noexcept {
    return senders_.capacity() * sizeof(Sender) + ring_.capacity() * sizeof(uint32_t);
  }
  // The most memory_bytes() reaches: both tables hold max_senders entries at most.
  static size_t memory_bound(const RcccConfig& c) noexcept {
    return size_t{c.max_senders} * (sizeof(Sender) + sizeof(uint32_t));
  }
  uint32_t active_senders() const noexcept { return active_; }

 private:
  struct Sender {
    uint64_t want = 0;     // credit still to grant against the latest target
    uint64_t granted = 0;  // total, for reports and tests
    bool active = false;
  };
  void set_active(uint32_t s, bool on) noexcept;

  RcccConfig c_;
  double ps_per_byte_;
  std::vector<Sender> senders_;
  std::vector<uint32_t> ring_;  // active senders, round robin order
  uint32_t active_ = 0;
  uint32_t cursor_ = 0;
  Time next_grant_at_ = 0;
};

// The sender side: one per PDC.
class RcccSender {
 public:
  explicit RcccSender(const RcccConfig& c)
      : max_credit_target_(c.max_credit_target), credit_(static_cast<int64_t>(c.speculative)) {}

  // May `bytes` go now? Any positive credit lets one packet go (as htsim): credit may dip
  // below zero by less than one packet.
  bool can_send() const noexcept { return credit_ > 0; }
  void on_sent(uint32_t bytes) noexcept { credit_ -= bytes; }
  void on_credit(uint64_t bytes) noexcept { credit_ += static_cast<int64_t>(bytes); }
  // The receiver has taken over (its first grant arrived): what is left of the speculative
  // allowance goes (as htsim's stopSpeculating), so senders that speculated do not keep a
  // standing queue at the receiver's link on top of what it grants. A debt stays.
  void stop_speculating() noexcept { credit_ = std::min<int64_t>(credit_, 0); }
  // The credit to ask for: what the backlog needs beyond the credit held, and a debt too
  // (else a backlog smaller than the debt asks for less than it takes to send at all, and
  // waits a credit timeout per grant), capped.
  uint64_t credit_target(uint64_t backlog) const noexcept {
    const int64_t need = static_cast<int64_t>(backlog) - credit_;
    return need <= 0 ? 0 : std::min<uint64_t>(static_cast<uint64_t>(need), max_credit_target_);
  }
  int64_t credit() const noexcept { return credit_; }

 private:
  uint64_t max_credit_target_;  // the one field of RcccConfig it reads (one copy per PDC)
  int64_t credit_;
};

}  // namespace uet::cc
