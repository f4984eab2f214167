// A fake host for two endpoints of any transport: an in-memory link with simulated time, where
// the test decides, frame by frame, what is lost, duplicated, delayed or rewritten. Every frame
// an endpoint emits must decode with decode_frame() (for RoCEv2: ICRC included) and is logged.
// A frame that references its payload (zero-copy transmit) is gathered, as a NIC would.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "transport/api.h"
#include "transport/wire/decode.h"
#include "transport/wire/icrc.h"

namespace uet::testing {

// A config of either engine (UetConfig, RoceConfig) for the host at `ip` on the fake link,
// MAC 02:00:00:00:00:<last byte of ip>; everything else the engine's defaults.
template <class Config>
Config host_config(uint32_t ip) {
  Config c;
  c.local_ip4 = ip;
  c.local_mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(ip)};
  return c;
}

// What to do with one frame: how many copies to deliver (0 = lose it), extra delay for the
// first copy, and for each further copy.
struct Verdict {
  int copies = 1;
  Time delay = 0;
  Time dup_delay = 0;
};

// `from` is 0 for A and 1 for B; `bytes` may be rewritten (mark CE, corrupt, ...).
using Filter =
    std::function<Verdict(int from, const wire::Decoded& d, std::vector<uint8_t>& bytes)>;

// One emitted frame, as the log keeps it.
struct Sent {
  Time at = 0;
  int from = 0;
  Priority priority = Priority::kData;
  uint32_t len = 0;
  uint8_t dscp = 0, ecn = 0;
  uint16_t sport = 0, dport = 0, udp_checksum = 0, ip_total_length = 0, udp_length = 0;
  // RoCEv2 only.
  bool roce = false;
  uint8_t opcode = 0;
  uint32_t psn = 0, dest_qp = 0;
  bool ack_req = false, becn = false, has_reth = false;
  uint8_t aeth_type = 0, aeth_value = 0;
  uint32_t msn = 0;
  // Zero-copy transmit: the payload the frame referenced (Frame::ref) before the link gathered
  // it, and a CRC-32 of the frame's bytes as they went on the wire.
  const uint8_t* ref = nullptr;
  uint32_t ref_len = 0;
  uint32_t digest = 0;
};

class FakeLink {
 public:
  static constexpr Time kDelay = 2 * kMicrosecond;

  FakeLink(Endpoint* a, Endpoint* b) : ep_{a, b} {}
  void set_filter(Filter f) { filter_ = std::move(f); }
  // 0 (the default): an endpoint sends everything it may at once. Otherwise each side has a
  // transmitter of this rate and pulls its next frame only when the last one has left, as a
  // NIC does (sim/network.cc host_pull).
  void set_rate_gbps(double gbps) { gbps_ = gbps; }
  Time now() const { return now_; }
  const std::vector<Sent>& log() const { return log_; }
  // Moves time forward with nothing happening (to post work at a later time).
  void advance_to(Time t) { now_ = std::max(now_, t); }

  // Runs until nothing is in flight and no timer is due before `until`.
  void run(Time until) {
    std::vector<uint8_t> buf(9216);
    for (int guard = 0; guard < 5'000'000; ++guard) {
      for (int i = 0; i < 2; ++i) {
        while (gbps_ == 0 || busy_[i] <= now_) {
          Frame f{buf.data(), 0, 0, static_cast<uint32_t>(buf.size())};
          Frame* fp = &f;
          if (ep_[i]->tx(std::span<Frame* const>(&fp, 1), now_) == 0) break;
          Time left = now_;  // the last bit leaves
          if (gbps_ > 0) {
            busy_[i] = now_ + static_cast<Time>(static_cast<double>(f.len) * 8e3 / gbps_);
            left = busy_[i];
          }
          const uint8_t* ref = f.ref;
          const uint32_t ref_len = f.ref_len;
          EXPECT_TRUE(flatten(f)) << "a referenced frame that does not fit the buffer";
          std::vector<uint8_t> bytes(buf.begin(), buf.begin() + f.len);
          wire::Decoded d;
          EXPECT_EQ(wire::decode_frame(bytes, &d), wire::WireError::kOk) << "frame from " << i;
          if (d.protocol == wire::Protocol::kRoce) {
            EXPECT_EQ(d.udp->checksum(), 0) << "RoCEv2 sends UDP checksum 0";
          }
          log_.push_back(summarize(i, f, d));
          log_.back().ref = ref;
          log_.back().ref_len = ref_len;
          log_.back().digest = wire::icrc_crc32(0, bytes.data(), bytes.size());
          const Verdict v = filter_ ? filter_(i, d, bytes) : Verdict{};
          for (int c = 0; c < v.copies; ++c) {
            wires_.push_back(Wire{left + kDelay + v.delay + c * v.dup_delay, seq_++, 1 - i, bytes});
          }
        }
      }
      Time next = std::min(ep_[0]->next_deadline(), ep_[1]->next_deadline());
      for (const Wire& w : wires_) next = std::min(next, w.at);
      for (int i = 0; i < 2; ++i)
        if (busy_[i] > now_) next = std::min(next, busy_[i]);
      if (next == kNever || next > until) return;
      now_ = std::max(now_, next);
      std::stable_sort(wires_.begin(), wires_.end(), [](const Wire& x, const Wire& y) {
        return x.at < y.at || (x.at == y.at && x.seq < y.seq);
      });
      while (!wires_.empty() && wires_.front().at <= now_) {
        Wire w = std::move(wires_.front());
        wires_.erase(wires_.begin());
        Frame f{w.bytes.data(), static_cast<uint32_t>(w.bytes.size()), 0,
                static_cast<uint32_t>(w.bytes.size())};
        Frame* fp = &f;
        ep_[w.to]->rx(std::span<Frame* const>(&fp, 1), now_);
      }
      for (int i = 0; i < 2; ++i)
        if (ep_[i]->next_deadline() <= now_) ep_[i]->on_timer(now_);
    }
    ADD_FAILURE() << "fake link did not settle";
  }

 private:
  struct Wire {
    Time at;
    uint64_t seq;
    int to;
    std::vector<uint8_t> bytes;
  };

  Sent summarize(int from, const Frame& f, const wire::Decoded& d) const {
    Sent s;
    s.at = now_;
    s.from = from;
    s.priority = f.priority;
    s.len = f.len;
    if (d.ipv4 != nullptr) {
      s.dscp = d.ipv4->dscp();
      s.ecn = d.ipv4->ecn();
      s.ip_total_length = d.ipv4->total_length();
    }
    if (d.udp != nullptr) {
      s.sport = d.udp->sport();
      s.dport = d.udp->dport();
      s.udp_checksum = d.udp->checksum();
      s.udp_length = d.udp->length();
    }
    if (d.bth != nullptr) {
      s.roce = true;
      s.opcode = static_cast<uint8_t>(d.bth->opcode());
      s.psn = d.bth->psn();
      s.dest_qp = d.bth->dest_qp();
      s.ack_req = d.bth->ack_req();
      s.becn = d.bth->becn();
      s.has_reth = d.reth != nullptr;
      if (d.aeth != nullptr) {
        s.aeth_type = static_cast<uint8_t>(d.aeth->syndrome_type());
        s.aeth_value = d.aeth->syndrome_value();
        s.msn = d.aeth->msn();
      }
    }
    return s;
  }

  Endpoint* ep_[2];
  Filter filter_;
  double gbps_ = 0;
  Time busy_[2] = {0, 0};
  std::vector<Wire> wires_;
  std::vector<Sent> log_;
  uint64_t seq_ = 0;
  Time now_ = 0;
};

// Hands a copy of `bytes` to `ep` as one received frame. The engine reads frames in place:
// the copy keeps a forged original intact for the next delivery, and allocates nothing.
inline void deliver(Transport& ep, std::span<const uint8_t> bytes, Time now = 0) {
  static std::vector<uint8_t> scratch(9216);
  std::copy(bytes.begin(), bytes.end(), scratch.begin());
  Frame f{scratch.data(), static_cast<uint32_t>(bytes.size()), 0,
          static_cast<uint32_t>(bytes.size())};
  Frame* fp = &f;
  ep.rx(std::span<Frame* const>(&fp, 1), now);
}

// A's frames in `log` of a transfer from `src`, sent zero-copy (`by_ref`) or copied: each
// one's digest appended to `digests`; every referenced payload lies within `src`, and the
// frame's own buffer held under 128 bytes (headers, pad, ICRC). Returns the bytes referenced.
inline uint64_t collect_references(const std::vector<Sent>& log, bool by_ref,
                                   std::span<const uint8_t> src, std::vector<uint32_t>* digests) {
  uint64_t referenced = 0;
  for (const Sent& s : log) {
    digests->push_back(s.digest);
    if (s.ref == nullptr) continue;
    EXPECT_TRUE(by_ref);
    EXPECT_EQ(s.from, 0);
    EXPECT_GE(s.ref, src.data());
    EXPECT_LE(s.ref + s.ref_len, src.data() + src.size());
    EXPECT_LT(s.len - s.ref_len, 128u);
    referenced += s.ref_len;
  }
  return referenced;
}

// Takes the next frame `ep` sends at `now`, built in `buf`, and decodes it into `d`: its
// length, or 0 when `ep` sends none.
inline uint32_t take_decoded(Transport& ep, std::span<uint8_t> buf, Time now, wire::Decoded* d) {
  Frame f{buf.data(), 0, 0, static_cast<uint32_t>(buf.size())};
  Frame* fp = &f;
  if (ep.tx(std::span<Frame* const>(&fp, 1), now) == 0) return 0;
  EXPECT_EQ(wire::decode_frame(std::span<const uint8_t>(buf.data(), f.len), d),
            wire::WireError::kOk);
  return f.len;
}

}  // namespace uet::testing
