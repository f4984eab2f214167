#include "sim/udp_app.h"

#include <algorithm>
#include <cstring>

#include "transport/wire/builder.h"
#include "transport/wire/checksum.h"
#include "transport/wire/decode.h"

namespace uet::sim {

UdpApp::UdpApp(uint32_t host, std::vector<FlowRecord>* records, uint32_t payload_per_packet,
               bool ect)
    : host_(host), records_(records), mss_(payload_per_packet), ect_(ect) {}

void UdpApp::add_flow(const UdpFlow& flow) {
  if (records_->size() <= flow.id) records_->resize(flow.id + 1);
  FlowRecord& r = (*records_)[flow.id];
  r.src = host_;
  r.dst = flow.dst;
  r.bytes = flow.bytes;
  r.start = flow.start;
  // Pending flows form a min-heap on start time; started ones move to the active list, and
  // finished ones leave it, so the per-packet work does not grow with the flows ever added.
  pending_.push_back(Active{flow});
  std::push_heap(pending_.begin(), pending_.end(), later_start);
}

// Only flows that have not started yet need a timer; started ones are pulled by the NIC.
Time UdpApp::next_deadline() const {
  return pending_.empty() ? kNever : std::max(pending_.front().flow.start, now_ + 1);
}

void UdpApp::start_due(Time now) {
  while (!pending_.empty() && pending_.front().flow.start <= now) {
    std::pop_heap(pending_.begin(), pending_.end(), later_start);
    flows_.push_back(pending_.back());
    pending_.pop_back();
  }
}

namespace {

constexpr size_t kHeaders = 14 + 20 + 8 + UdpApp::kAppHeader;  // Ethernet, IPv4, UDP, app
constexpr size_t kSportAt = 14 + 20;
constexpr size_t kOffsetAt = 14 + 20 + 8 + 8;

// A headers-only frame like `head` (the last one built for a packet of this size), its source
// port and offset patched: byte for byte what build_frame would write.
void patch_head(Frame& f, const uint8_t* head, uint32_t head_len, uint16_t sport, uint64_t offset,
                size_t full) {
  f.len = head_len;
  f.wire_len = static_cast<uint32_t>(full);
  std::memcpy(f.data, head, head_len);
  wire::store_be_n<2>(f.data + kSportAt, sport);
  wire::store_be_n<8>(f.data + kOffsetAt, offset);
}

// Host `host`'s frame to `dst`: data DSCP, ECT if `ect`, UDP to UdpApp::kPort.
wire::Encap data_encap(uint32_t host, uint32_t dst, bool ect, uint16_t sport, bool udp_checksum) {
  wire::Encap e;
  e.src_mac = Network::host_mac(host);
  e.dst_mac = Network::host_mac(dst);
  e.src_ip4 = Network::host_ip4(host);
  e.dst_ip4 = Network::host_ip4(dst);
  e.dscp = kDscpData;
  e.ecn = ect ? 2 : 0;
  e.sport = sport;
  e.dport = UdpApp::kPort;
  e.udp_checksum = udp_checksum;
  return e;
}

// Writes a packet of `len` payload bytes at `offset` of flow `id` into `f`: with the payload
// if all `full` bytes fit, else headers only (the UDP checksum then 0) whose IP and UDP lengths
// describe the frame on the wire. False if even the headers do not fit.
bool build_frame(Frame& f, const wire::Encap& e, uint32_t id, uint64_t offset, uint64_t len,
                 size_t full) {
  const bool elide = full > f.capacity;
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity), e);
  uint8_t* app = b.add_bytes(UdpApp::kAppHeader);
  if (app == nullptr) return false;
  wire::store_be_n<4>(app, id);
  wire::store_be_n<8>(app + 8, offset);
  if (!elide) {
    uint8_t* p = b.add_bytes(len);
    for (uint64_t i = 0; i < len; ++i) p[i] = static_cast<uint8_t>(id + offset + i);
  }
  size_t flen = 0;
  if (b.finish(&flen) != wire::WireError::kOk) return false;
  f.len = static_cast<uint32_t>(flen);
  f.wire_len = elide ? static_cast<uint32_t>(full) : 0;
  if (elide) {
    wire::as<wire::Ipv4>(f.data + 14)->set_total_length(static_cast<uint16_t>(full - 14));
    wire::as<wire::Ipv4>(f.data + 14)->set_checksum(0);
    wire::as<wire::Ipv4>(f.data + 14)->set_checksum(wire::ipv4_header_checksum(f.data + 14, 20));
    wire::as<wire::Udp>(f.data + 34)->set_length(static_cast<uint16_t>(full - 34));
  }
  return true;
}

}  // namespace

size_t UdpApp::tx(std::span<Frame* const> out, Time now) {
  now_ = now;
  start_due(now);
  size_t n = 0;
  while (n < out.size() && !flows_.empty()) {
    if (rr_ >= flows_.size()) rr_ = 0;
    Active& a = flows_[rr_];
    if (a.next_offset >= a.flow.bytes) {  // all sent: leave the active list
      a = flows_.back();
      flows_.pop_back();
      continue;
    }
    ++rr_;
    Frame& f = *out[n];
    const uint64_t len = std::min<uint64_t>(mss_, a.flow.bytes - a.next_offset);
    const uint16_t sport =
        a.flow.spray ? wire::dynamic_port(a.flow.sport + a.packets * 0x9E37u) : a.flow.sport;
    // Store the payload if it fits, else carry it by length (and leave the UDP checksum 0).
    const size_t full = kHeaders + len;
    const bool elide = full > f.capacity;
    if (elide && a.head_payload == len && a.head_len <= f.capacity) {
      patch_head(f, a.head.data(), a.head_len, sport, a.next_offset, full);
    } else {
      const wire::Encap e = data_encap(host_, a.flow.dst, ect_, sport, !elide);
      if (!build_frame(f, e, a.flow.id, a.next_offset, len, full)) return n;
      if (elide && f.len <= a.head.size()) {  // the next packet of this size patches a copy
        std::memcpy(a.head.data(), f.data, f.len);
        a.head_len = f.len;
        a.head_payload = len;
      }
    }
    f.priority = Priority::kData;
    a.next_offset += len;
    ++a.packets;
    (*records_)[a.flow.id].sent += len;
    ++n;
  }
  return n;
}

void UdpApp::rx(std::span<Frame* const> frames, Time now) {
  now_ = now;
  for (Frame* f : frames) {
    ++rx_frames_;
    // A corrupted frame must fail its checks, not count as data.
    const bool elided = f->wire_len > f->len;
    constexpr size_t kApp = 14 + 20 + 8;
    if (f->len < kApp + kAppHeader) {
      ++rx_bad_;
      continue;
    }
    if (!elided) {
      wire::Decoded d;
      wire::DecodeOptions o;
      if (wire::decode_frame(std::span<const uint8_t>(f->data, f->len), &d, o) !=
          wire::WireError::kUnsupportedUdpPort) {  // valid IP/UDP, not UET/RoCE: ours
        ++rx_bad_;
        continue;
      }
    }
    const auto id = static_cast<uint32_t>(wire::load_be_n<4>(f->data + kApp));
    if (id >= records_->size()) {
      ++rx_bad_;
      continue;
    }
    FlowRecord& r = (*records_)[id];
    const uint64_t len = f->bytes_on_wire() - kApp - kAppHeader;
    r.received += len;
    if (r.received >= r.bytes && r.finish == kNever) {
      r.finish = now;
      if (on_complete_) on_complete_(id, now);
    }
  }
}

}  // namespace uet::sim
