// A raw UDP source and sink: the simplest Transport, for testing the fabric on its own and for
// the simulator benchmark. No reliability, no congestion control: a flow's packets leave at
// whatever rate the NIC pulls them (line rate) and the sink counts what arrives.
//
// Each packet carries a 16-byte app header after UDP: flow id (u32), reserved (u32) and the
// byte offset (u64) of its payload within the flow. With frames smaller than the packet,
// the payload travels by length (Frame::wire_len) and only the headers are real bytes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "sim/network.h"
#include "transport/transport.h"

namespace uet::sim {

// Per-flow results shared by all apps of one run; indexed by flow id.
struct FlowRecord {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint64_t bytes = 0;
  Time start = 0;
  Time finish = kNever;  // when the sink had every byte
  uint64_t received = 0;
  uint64_t sent = 0;
};

struct UdpFlow {
  uint32_t id;
  uint32_t dst;
  uint64_t bytes;
  Time start;
  uint16_t sport;      // the entropy / ECMP input
  bool spray = false;  // vary the source port per packet (oblivious spraying)
};

class UdpApp : public Transport {
 public:
  static constexpr uint16_t kPort = 9000;
  static constexpr size_t kAppHeader = 16;

  UdpApp(uint32_t host, std::vector<FlowRecord>* records, uint32_t payload_per_packet = 4096,
         bool ect = true);

  void add_flow(const UdpFlow& flow);

  // Called once per flow, from rx(), when the flow's last byte has arrived at this sink (a
  // per-flow call, not per packet). The hook must not call back into this app or the
  // Network's data path; schedule work with Network::schedule() instead.
  using CompletionHook = std::function<void(uint32_t flow_id, Time now)>;
  void set_completion_hook(CompletionHook hook) { on_complete_ = std::move(hook); }

  void rx(std::span<Frame* const> frames, Time now) override;
  size_t tx(std::span<Frame* const> out, Time now) override;
  Time next_deadline() const override;
  void on_timer(Time now) override {
    now_ = now;
    start_due(now);
  }

  uint64_t rx_frames() const noexcept { return rx_frames_; }
  uint64_t rx_bad() const noexcept { return rx_bad_; }

 private:
  struct Active {
    UdpFlow flow;
    uint64_t next_offset = 0;
    uint32_t packets = 0;
    // Headers-only frames (payload by length): the last one built, for a packet of
    // `head_payload` bytes. The next packet of that size differs only in its UDP source port
    // (the UDP checksum is 0) and its payload offset, so it is this copy with both patched.
    uint32_t head_len = 0;
    uint64_t head_payload = UINT64_MAX;
    std::array<uint8_t, 64> head{};
  };
  uint32_t host_;
  std::vector<FlowRecord>* records_;
  uint32_t mss_;
  bool ect_;
  static bool later_start(const Active& x, const Active& y) noexcept {
    return x.flow.start > y.flow.start;
  }
  void start_due(Time now);
  std::vector<Active> pending_;  // not started yet: a min-heap on start
  std::vector<Active> flows_;    // started, still sending
  size_t rr_ = 0;
  Time now_ = -1;
  uint64_t rx_frames_ = 0;
  uint64_t rx_bad_ = 0;
  CompletionHook on_complete_;
};

}  // namespace uet::sim
