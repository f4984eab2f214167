// The UET engine for one fabric endpoint (FEP): PDS RUD with SES WRITE, sans-IO.
//
// What it does (spec/uet.md): PDCs created on first use with 0-RTT SYN (§3.3), 32-bit PSNs,
// ACK_CC with cumulative ACK + 64-bit SACK bitmap (§3.8), NACKs for trimmed requests and
// out-of-window PSNs (§3.10), selective retransmission of exactly the missing PSNs (RTO with
// exponential backoff, NACK, SACK gaps), SES standard WRITE headers with placement by offset
// (§4.2), completions when every PSN of a message is acknowledged. Each PDC's EVs come from
// a path selector (pathsel/, §2.4) that hears, per packet, how its EV fared: ACKed with or
// without an ECN echo, NACKed, timed out.
//
// Ownership and threads: one Endpoint per FEP, driven by one thread (its host's). All tables
// are fixed-size and allocated at construction: PDCs (`max_pdcs`), per-PDC windows (`mpr`
// packets), posted writes per PDC (`max_writes`). A peer's frames can never grow them;
// frames that do not fit are dropped or NACKed and counted (Counters).
//
// Data path: rx()/tx()/on_timer() never allocate and make no virtual calls per packet.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "cc/nscc.h"
#include "pathsel/path_selector.h"
#include "transport/api.h"
#include "transport/wire/builder.h"
#include "transport/wire/decode.h"

namespace uet {

struct UetConfig {
  uint32_t local_ip4 = 0;
  wire::MacAddr local_mac{};
  // Peer MACs are resolved once per PDC; the default maps 10.0.0.1 + i to 02:00:i (the
  // simulator's addressing).
  wire::MacAddr (*resolve_mac)(uint32_t ip4) = nullptr;

  uint32_t payload_bytes = 4096;          // bytes of data per packet, 256..9000
  uint32_t max_pdcs = 1024;               // PDC table size (initiator + target), 1..65535
  uint32_t mpr = 256;                     // PSN window per PDC in packets, 64..4096, power of 2
  uint32_t max_writes = 256;              // posted writes per PDC, 1..65536
  uint64_t window_bytes = 256 * 1024;     // bytes in flight per PDC at most
  bool nscc = true;                       // NSCC (cc/nscc.h) sizes the window below that
  double link_gbps = 100;                 // NSCC: the host link rate ...
  Time base_rtt = 12 * kMicrosecond;      // ... and the fabric's unloaded round trip
  Time rto = 50 * kMicrosecond;           // initial retransmission timeout
  Time max_rto = 10 * kMillisecond;
  uint32_t max_retries = 8;               // consecutive timeouts of one PSN before giving up
  uint32_t reorder_threshold = 8;         // SACKed PSNs past a hole before it is resent ...
  Time reorder_window = 20 * kMicrosecond;  // ... and sent this much before the newest SACKed
  uint32_t ack_every = 4;                 // ACK after this many in-order packets
  Time ack_delay = 2 * kMicrosecond;      // ... or after this long
  uint8_t dscp_data = 26;
  uint8_t dscp_control = 46;
  bool ect = true;                        // send data ECN-capable
  // Path selection per PDC (pathsel/config.h). The default sprays obliviously over
  // pathsel.ev_count EVs; with ev_count 1 (the default) every PDC keeps one EV.
  pathsel::PathSelConfig pathsel;
  uint64_t seed = 1;                      // start PSNs and the path selectors' seeds

  // Checks every field; the message names the field and its valid range.
  absl::Status validate() const;
};

// Why frames were dropped or answered specially; always on.
struct UetCounters {
  uint64_t tx_data = 0, tx_retx = 0, tx_acks = 0, tx_nacks = 0;
  uint64_t rx_data = 0, rx_acks = 0, rx_nacks = 0;
  uint64_t rx_duplicates = 0, rx_trimmed = 0, rx_out_of_window = 0;
  uint64_t rx_malformed = 0;      // failed decode (wire.count says why)
  uint64_t rx_unknown_pdc = 0;    // DPDCID not ours and no SYN
  uint64_t rx_no_pdc_avail = 0;   // SYN with a full PDC table
  uint64_t rx_bad_key = 0, rx_bad_range = 0;
  uint64_t rx_stale_ack = 0;      // ACK for PSNs never sent
  uint64_t timeouts = 0, fast_retx = 0, nack_retx = 0;
  wire::WireCounters wire;
};

class UetEndpoint final : public Endpoint {
 public:
  static absl::StatusOr<std::unique_ptr<UetEndpoint>> create(const UetConfig& config);

  // Endpoint.
  absl::StatusOr<uint32_t> register_memory(uint8_t* base, uint64_t length) override;
  absl::Status post_write(const WriteRequest& wr) override;
  size_t poll_completions(std::span<Completion> out) override;
  EndpointStats stats() const override;

  // Transport.
  void rx(std::span<Frame* const> frames, Time now) override;
  size_t tx(std::span<Frame* const> out, Time now) override;
  Time next_deadline() const override;
  void on_timer(Time now) override;

  const UetCounters& counters() const noexcept { return counters_; }
  size_t pdcs_in_use() const noexcept;

 private:
  explicit UetEndpoint(const UetConfig& config);

  // One posted write, as the initiator tracks it.
  struct Write {
    WriteRequest wr;
    uint16_t message_id = 0;
    uint32_t first_psn = 0;
    uint32_t packets = 0;
    uint32_t unacked = 0;
    bool failed = false;
    OpStatus status = OpStatus::kSuccess;
  };
  // One PSN in flight at the initiator.
  struct Slot {
    uint32_t write = 0;  // index into writes
    uint32_t packet = 0; // packet number within the write
    Time sent = 0;
    uint16_t retries = 0;
    uint16_t ev = 0;     // EV index of the last transmission, for the path selector
    bool in_flight = false;
    bool acked = false;
    bool resend = false;
  };
  enum class Role : uint8_t { kFree, kInitiator, kTarget };
  struct Pdc {
    Role role = Role::kFree;
    uint32_t active_index = 0;  // position in active_
    uint32_t peer_ip4 = 0;
    wire::MacAddr peer_mac{};
    uint16_t peer_pdcid = 0;   // learned from the first ACK (initiator) or the SYN (target)
    bool established = false;  // initiator: an ACK arrived, SYN no longer sent
    uint16_t ev_base = 0;      // EV index i travels as UDP source port f(ev_base, i)
    pathsel::PathSelector sel; // initiator: picks each packet's EV index

    // Initiator.
    uint32_t start_psn = 0;
    uint32_t next_psn = 0;     // next new PSN
    uint32_t base_psn = 0;     // oldest unacknowledged PSN
    uint64_t bytes_in_flight = 0;
    std::vector<Slot> slots;   // mpr entries, PSN % mpr
    std::vector<Write> writes; // ring of max_writes
    uint32_t write_head = 0, write_tail = 0;  // posted, not yet completed: [head, tail)
    uint32_t write_send = 0;   // next write with packets still to send
    uint32_t send_packet = 0;  // next packet of writes[write_send]
    uint16_t next_message_id = 1;
    uint32_t resend_pending = 0;
    Time rto = 0;
    Time rto_deadline = kNever;
    cc::Nscc nscc{cc::NsccConfig{}};

    // Target.
    uint32_t rcv_base = 0;     // lowest PSN not yet received
    std::vector<uint64_t> rcv_bits;  // mpr bits: PSN rcv_base + i received
    uint32_t unacked_rx = 0;
    bool ack_now = false;
    bool ack_pending = false;
    bool ce_seen = false;
    uint32_t ce_psn = 0;       // the first CE-marked arrival since the last ACK
    uint32_t last_psn = 0;     // the newest arrival
    Time ack_deadline = kNever;
    // SES responses for refused writes, one per ACK (§4.6). A refused PSN is recorded as
    // received only when the ACK carrying its response is built, so no ACK acknowledges it
    // without saying why. Bounded: when full, a refused packet is dropped and comes again.
    struct Response {
      uint8_t code;
      uint16_t message_id;
      uint32_t psn;
    };
    std::array<Response, 8> rsp{};
    uint32_t rsp_head = 0, rsp_tail = 0;
    bool rsp_pending() const noexcept { return rsp_head != rsp_tail; }
    // NACK to send (code 0: none).
    uint8_t nack_code = 0;
    uint32_t nack_psn = 0;
  };

  // NACKs that have no PDC to come from (INV_DPDCID, NO_PDC_AVAIL): a small bounded ring.
  struct StatelessNack {
    uint32_t peer_ip4;
    uint16_t peer_pdcid;
    uint8_t code;
    uint32_t psn;
  };

  // Data path helpers (uet_datapath.cc).
  void rx_one(const Frame& f, Time now);
  void rx_request(const wire::Decoded& d, Time now);
  void rx_ack(const wire::Decoded& d, Time now);
  void rx_nack(const wire::Decoded& d, Time now);
  void ack_psn(Pdc& p, uint32_t psn, bool ce, Time now);
  void mark_received(Pdc& p, uint32_t psn);
  void mark_lost(Pdc& p, uint32_t psn);
  void retire_writes(Pdc& p);
  void fail_pdc(Pdc& p, OpStatus why);
  bool build_ack(Pdc& p, uint16_t pdcid, Frame& f);
  bool build_nack(Pdc& p, uint16_t pdcid, Frame& f);
  bool build_stateless_nack(const StatelessNack& n, Frame& f);
  void queue_stateless_nack(uint32_t ip, uint16_t peer_pdcid, uint8_t code, uint32_t psn);
  bool build_data(Pdc& p, uint16_t pdcid, uint32_t psn, bool retx, Frame& f, Time now);
  wire::Encap encap_for(const Pdc& p, bool control, uint16_t ev) const;
  static uint16_t ev_port(const Pdc& p, uint16_t ev) noexcept;
  void arm_rto(Pdc& p, Time now);

  int32_t alloc_pdc(Role role);
  void free_pdc(uint16_t id);
  uint64_t next_random() noexcept;
  Pdc* pdc(uint16_t id) noexcept { return id < pdcs_.size() ? &pdcs_[id] : nullptr; }

  UetConfig config_;
  cc::NsccConfig nscc_config_;
  uint64_t window(const Pdc& p) const noexcept {
    return config_.nscc ? std::min<uint64_t>(config_.window_bytes, p.nscc.window())
                        : config_.window_bytes;
  }
  std::vector<Pdc> pdcs_;
  std::vector<uint16_t> free_pdcs_;
  std::vector<uint16_t> active_;  // PDCs in use, in no particular order
  uint32_t rr_ = 0;               // round-robin position in active_ for tx()
  Time deadline_ = kNever;        // earliest timer of any PDC (may be early, never late)
  std::array<StatelessNack, 64> stateless_{};
  uint32_t stateless_head_ = 0, stateless_tail_ = 0;
  // Control path look-ups: initiator PDC by peer; target PDC by (peer, its PDC id) for SYNs.
  absl::flat_hash_map<uint32_t, uint16_t> initiator_by_peer_;
  absl::flat_hash_map<uint64_t, uint16_t> target_by_peer_pdc_;
  struct Region {
    uint8_t* base;
    uint64_t length;
  };
  std::vector<Region> regions_;  // key = index + 1
  std::vector<Completion> completions_;  // bounded by max_pdcs * max_writes
  size_t completions_head_ = 0;
  uint64_t rng_;
  UetCounters counters_;
  Time now_ = 0;
};

}  // namespace uet
