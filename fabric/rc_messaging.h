// RoCEv2 under the provider (FI_UETREF_TRANSPORT=rocev2): libfabric's messaging above the RC
// engine of transport/rocev2, as libfabric's rxm runs above verbs. RC carries SEND, WRITE,
// READ and two atomics and matches nothing, so FI_MSG and FI_TAGGED are built here:
// - Every message starts with a header (Header: kind, tag, CQ data, length) in a SEND.
//   Messages up to `eager_bytes` travel whole in it (eager), copied into a transmit buffer
//   and out of a receive buffer; longer ones send only the header (RTS) naming the source
//   region, the target READs the bytes straight into the matched receive and answers FIN,
//   which completes the send (rendezvous).
// - The target posts `rx_buffers` receive buffers to the engine's shared receive queue and
//   matches each arriving header against the posted receives (tagged ones by tag, ignore bits
//   and source in posting order; untagged ones first come, first served), else keeps it, with
//   its buffer, on an unexpected list. A peer's messages arrive in send order (one QP per
//   peer), so matching keeps that order, as MPI needs. With every buffer held unexpected the
//   engine answers RNR and the sender waits (rnr_retry 7: for ever), so the list is bounded.
// - QPs: one per peer, connected when the peer enters the address vector (connect()) or its
//   first frame arrives (an RDM target need not know its initiators). Both sides derive the
//   QP numbers from the addresses (the low 16 bits of each), so no connection exchange is
//   needed; two peers whose addresses share those bits are refused.
// - A QP that failed (an access error, retries spent) is in the error state on both sides,
//   as in IB; RDM has no connection to lose, so the next operation to the peer connects it
//   again (PSNs from 0 on both sides), and so does the target when a frame of the peer finds
//   its QP in error: at its next receive, once the NAK that failed the QP has gone out.
// - Rendezvous sources are registered with the engine once per buffer and stay registered
//   (the engine has no deregistration yet).
// - A rendezvous send waits for its FIN as long as the target takes to post the receive, but
//   not on a dead target: after `hold_probe_after` without a FIN the sender sends the target
//   a PING, which RC acknowledges or fails (retry_cnt spent), failing every send it holds.
// Everything runs on the domain's thread, under its lock; the matching happens in rx() and
// on_timer(), right after the engine's own work, and poll_completions hands out what completed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "transport/api.h"
#include "transport/rocev2/roce_endpoint.h"

namespace uet::fabric {

struct RcMessagingConfig {
  uint32_t eager_bytes = 16384;  // longer messages go by rendezvous, 0..65536
  uint32_t rx_buffers = 128;     // receive buffers posted to the engine, 8..4096
  uint32_t tx_buffers = 256;     // transmit buffers (eager sends, RTS, FIN), 8..4096
  uint32_t max_sends = 4096;     // sends in flight (eager and rendezvous)
  Time hold_probe_after = kSecond;  // a rendezvous send waits this long before a PING
};

// What the layer counted (FI_UETREF_STATS).
struct RcMessagingCounters {
  uint64_t eager_sent = 0, rendezvous_sent = 0, fins_sent = 0, pings_sent = 0;
  uint64_t pings_failed = 0;  // a target that held our sends did not answer: they failed
  uint64_t eager_received = 0, rendezvous_read = 0, unexpected = 0, truncated = 0;
  uint64_t malformed = 0;  // receives too short for a header, or an unknown kind
};

class RcMessaging final : public Endpoint {
 public:
  RcMessaging(std::unique_ptr<RoceEndpoint> rc, const RcMessagingConfig& c);

  // Posts the receive buffers.
  absl::Status init();
  // Connects the QP to `peer` (IPv4, host order); a second call for it does nothing.
  absl::Status connect(uint32_t peer);
  RoceEndpoint& rc() noexcept { return *rc_; }
  const RcMessagingCounters& counters() const noexcept { return counters_; }

  // Transport: the engine's, and the layer's own work on what the engine completed (matching,
  // READs, FINs, reposted buffers) right after each receive and timer, so that the layer moves
  // as the engine does, whoever polls.
  void rx(std::span<Frame* const> frames, Time now) override {
    now_ = now;
    if (!revive_next_.empty()) revive_waiting();
    for (Frame* f : frames) accept_peer(*f);
    const uint64_t refused = rc_->counters().rx_qp_error;
    rc_->rx(frames, now);
    if (rc_->counters().rx_qp_error != refused) note_refused(frames);
    pump();
  }
  size_t tx(std::span<Frame* const> out, Time now) override {
    now_ = now;
    probe_holders();
    return rc_->tx(out, now);
  }
  Time next_deadline() const override {
    const Time d = rc_->next_deadline();
    return rendezvous_live_ > 0 ? std::min(d, next_probe_) : d;
  }
  void on_timer(Time now) override {
    now_ = now;
    rc_->on_timer(now);
    pump();
    probe_holders();
  }

  // Endpoint: one-sided operations go to the engine as they are; messages through the layer.
  absl::StatusOr<uint32_t> register_memory(uint8_t* base, uint64_t length) override {
    return rc_->register_memory(base, length);
  }
  absl::Status deregister_memory(uint32_t key) override { return rc_->deregister_memory(key); }
  absl::Status post_write(const WriteRequest& wr) override {
    revive(wr.peer);
    return rc_->post_write(wr);
  }
  absl::Status post_read(const ReadRequest& rr) override {
    revive(rr.peer);
    return rc_->post_read(rr);
  }
  absl::Status post_atomic(const AtomicRequest& ar) override {
    revive(ar.peer);
    return rc_->post_atomic(ar);
  }
  absl::Status post_send(const SendRequest& sr) override;
  absl::Status post_recv(const RecvBuffer& rb) override;
  absl::Status post_tsend(const TaggedSendRequest& ts) override;
  absl::Status post_trecv(const TaggedRecv& tr) override;
  absl::Status cancel_recv(uint64_t wr_id) override;
  absl::Status probe_tagged(const TaggedRecv& match, bool claim, Probed* out) override;
  absl::Status recv_claimed(uint64_t claim, const TaggedRecv& tr) override;
  size_t poll_completions(std::span<Completion> out) override;
  EndpointStats stats() const override { return rc_->stats(); }

  // The QP numbers both sides derive (connect()).
  static constexpr uint32_t kQpnBase = 0x100;
  static uint32_t qpn_for(uint32_t ip4) noexcept { return kQpnBase + (ip4 & 0xFFFF); }

 private:
  enum class Kind : uint8_t { kEager = 1, kRts = 2, kFin = 3, kPing = 4 };
  // The header every message starts with, in the host's byte order (both ends run this
  // provider).
  struct Header {
    Kind kind;
    uint8_t flags;  // kTagged, kHasData; FIN: kFailed
    uint16_t reserved;
    uint32_t rkey;    // RTS: the source region
    uint64_t tag;
    uint64_t data;    // CQ data
    uint64_t length;  // the whole message's bytes
    uint64_t addr;    // RTS: the source's offset in its region
    uint64_t cookie;  // RTS: the sender's send slot, echoed by FIN
  };
  static constexpr uint8_t kTagged = 1, kHasData = 2, kFailed = 4;
  static constexpr size_t kHeader = sizeof(Header);

  // Internal work requests carry bit 63 and their kind in bits 56..62 (the application's are
  // op slots, far below).
  enum class Work : uint8_t { kTx = 1, kRx = 2, kRead = 3 };
  static uint64_t work_id(Work w, uint32_t index) noexcept {
    return uint64_t{1} << 63 | uint64_t{static_cast<uint8_t>(w)} << 56 | index;
  }

  struct Send {
    uint64_t wr_id = 0;
    Opcode op = Opcode::kSend;
    uint64_t length = 0;
    uint32_t peer = 0;
    Time since = 0;  // rendezvous: when it last heard from the target (RTS or PING acknowledged)
    bool live = false;
    bool rendezvous = false;
    uint32_t source = 0;  // rendezvous: the R_Key its RTS names, withdrawn when it finishes
  };
  struct Posted {
    uint64_t wr_id;
    uint8_t* base;
    uint64_t length;
    uint64_t tag, ignore;
    uint32_t source;
    bool tagged;
  };
  struct Unexpected {
    uint32_t peer;
    uint32_t buf;        // the receive buffer holding it
    uint64_t claim = 0;  // FI_CLAIM's handle; 0: not claimed
  };
  struct Read {  // a rendezvous receive whose READ is under way
    Posted posted;
    uint32_t peer;
    Header h;
    bool live = false;
  };

  uint8_t* tx_buf(uint32_t i) noexcept { return tx_mem_.data() + size_t{i} * buf_bytes_; }
  uint8_t* rx_buf(uint32_t i) noexcept { return rx_mem_.data() + size_t{i} * buf_bytes_; }
  Header header_of(uint32_t rx) const noexcept;

  absl::Status send_message(uint64_t wr_id, Opcode op, uint32_t peer, const uint8_t* local,
                            uint64_t length, uint8_t flags, uint64_t tag, uint64_t data);
  absl::Status post_receive(const Posted& p);
  static bool matches(const Posted& p, const Header& h, uint32_t peer) noexcept;
  // Hands the message in receive buffer `buf` to `p`: copies it (eager) or READs it (RTS).
  void deliver(const Posted& p, uint32_t peer, uint32_t buf);
  void complete_recv(const Posted& p, uint32_t peer, const Header& h, OpStatus status,
                     uint64_t bytes);
  void send_fin(uint32_t peer, uint64_t cookie, bool failed);
  // PINGs the targets holding rendezvous sends that have waited hold_probe_after.
  void probe_holders();
  // Connects the QP of a RoCEv2 frame's sender if it is not yet: one load per frame.
  void accept_peer(const Frame& f) {
    if (f.len < 42 || f.data[12] != 0x08 || f.data[13] != 0x00 || f.data[14] != 0x45 ||
        f.data[23] != 17 || f.data[36] != (kRoceUdpPort >> 8) || f.data[37] != (kRoceUdpPort & 255)) {
      return;
    }
    const uint32_t src = uint32_t{f.data[26]} << 24 | uint32_t{f.data[27]} << 16 |
                         uint32_t{f.data[28]} << 8 | f.data[29];
    if (peers_[src & 0xFFFF] != src) (void)connect(src);
  }
  static constexpr uint16_t kRoceUdpPort = 4791;
  // Connects the QP to `peer` again if it is in the error state.
  void revive(uint32_t peer);
  void note_refused(std::span<Frame* const> frames);
  void revive_waiting();
  void on_ping_done(uint32_t peer, OpStatus status);
  void finish_send(uint32_t slot, OpStatus status);
  void repost(uint32_t buf);
  void on_completion(const Completion& c);
  // Takes the engine's completions: the layer's own work, and the application's into done_.
  void pump();
  void on_received(uint32_t buf, const Completion& c);
  // A rendezvous source's key is withdrawn when its send finishes (a late READ is refused);
  // one the engine keeps because a WR of ours still uses the memory waits in unreleased_.
  void release_source(uint32_t key);

  std::unique_ptr<RoceEndpoint> rc_;
  RcMessagingConfig config_;
  size_t buf_bytes_;
  std::vector<uint8_t> tx_mem_, rx_mem_;
  std::vector<uint32_t> tx_free_;
  // Transmit buffer -> its send slot, or kFinOwner / kPingOwner (then tx_peer_ names whom).
  static constexpr uint32_t kFinOwner = UINT32_MAX, kPingOwner = UINT32_MAX - 1;
  std::vector<uint32_t> tx_owner_;
  std::vector<uint32_t> tx_peer_;
  std::vector<Send> sends_;
  std::vector<uint32_t> sends_free_;
  std::vector<Read> reads_;
  std::vector<uint32_t> reads_free_;
  std::vector<Posted> tagged_;              // posted tagged receives, in posting order
  std::deque<Posted> untagged_;             // posted untagged receives, FIFO
  std::deque<Unexpected> unexpected_;       // in arrival order
  std::deque<Completion> done_;             // completions for the application
  std::deque<std::pair<uint32_t, uint64_t>> fins_waiting_;  // (peer, cookie | failed << 63)
  std::vector<uint32_t> unreleased_;  // rendezvous sources' keys to withdraw again
  uint64_t next_claim_ = 1;
  Time now_ = 0;         // as the host loop's last tx() saw it
  Time next_probe_ = 0;  // probe_holders() looks again then
  uint32_t rendezvous_live_ = 0;
  std::vector<uint32_t> pinging_;  // peers with a PING in flight
  std::vector<uint32_t> peers_;    // low 16 bits of an address -> the peer connected there
  std::vector<uint32_t> revive_next_;  // peers whose frames found their QP in error
  RcMessagingCounters counters_;
};

}  // namespace uet::fabric
