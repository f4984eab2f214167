#include "dpdk-io/dpdk_neigh.h"

#include <cstring>

namespace uet::io {
namespace {

uint16_t load16(const uint8_t* p) noexcept { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t load32(const uint8_t* p) noexcept {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
void store16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void store32(uint8_t* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
size_t hash(uint32_t ip4) noexcept { return (ip4 * 0x9E3779B1u) >> 8; }

}  // namespace

NeighbourTable::NeighbourTable(size_t capacity) {
  size_t n = 8;
  while (n < capacity) n <<= 1;
  slots_.resize(n);
  mask_ = n - 1;
}

bool NeighbourTable::set(uint32_t ip4, const wire::MacAddr& mac, bool is_static) {
  for (size_t i = hash(ip4) & mask_, probes = 0; probes <= mask_; i = (i + 1) & mask_, ++probes) {
    Entry& e = slots_[i];
    if (e.used && e.ip4 == ip4) {
      if (e.is_static && !is_static) return true;  // static entries win
      e.mac = mac;
      e.is_static = is_static;
      return true;
    }
    if (!e.used) {
      if (size_ + 1 > slots_.size() / 2 + slots_.size() / 4) return false;  // keep probes short
      e = Entry{ip4, true, is_static, mac};
      ++size_;
      return true;
    }
  }
  return false;
}

const wire::MacAddr* NeighbourTable::find(uint32_t ip4) const noexcept {
  if (const Entry& c = slots_[last_]; c.used && c.ip4 == ip4) return &c.mac;
  for (size_t i = hash(ip4) & mask_, probes = 0; probes <= mask_; i = (i + 1) & mask_, ++probes) {
    const Entry& e = slots_[i];
    if (!e.used) return nullptr;
    if (e.ip4 == ip4) {
      last_ = i;
      return &e.mac;
    }
  }
  return nullptr;
}

uint16_t ether_type(std::span<const uint8_t> frame, size_t* l3_offset) noexcept {
  if (frame.size() < 14) return 0;
  uint16_t type = load16(frame.data() + 12);
  size_t off = 14;
  if (type == kEtherTypeVlan) {
    if (frame.size() < 18) return 0;
    type = load16(frame.data() + 16);
    off = 18;
  }
  if (l3_offset != nullptr) *l3_offset = off;
  return type;
}

std::optional<uint32_t> ipv4_destination(std::span<const uint8_t> frame) noexcept {
  size_t off = 0;
  if (ether_type(frame, &off) != kEtherTypeIpv4 || frame.size() < off + 20) return std::nullopt;
  return load32(frame.data() + off + 16);
}

std::optional<ArpPacket> parse_arp(std::span<const uint8_t> frame) noexcept {
  if (frame.size() < 42 || load16(frame.data() + 12) != kEtherTypeArp) return std::nullopt;
  const uint8_t* a = frame.data() + 14;
  // htype Ethernet (1), ptype IPv4, hlen 6, plen 4 (RFC 826).
  if (load16(a) != 1 || load16(a + 2) != kEtherTypeIpv4 || a[4] != 6 || a[5] != 4)
    return std::nullopt;
  ArpPacket p;
  p.op = load16(a + 6);
  std::memcpy(p.sha.data(), a + 8, 6);
  p.spa = load32(a + 14);
  std::memcpy(p.tha.data(), a + 18, 6);
  p.tpa = load32(a + 24);
  return p;
}

size_t build_arp(std::span<uint8_t> buf, uint16_t op, const wire::MacAddr& src_mac,
                 uint32_t src_ip4, const wire::MacAddr& dst_mac, uint32_t dst_ip4) noexcept {
  if (buf.size() < kArpFrameLen) return 0;
  uint8_t* f = buf.data();
  std::memset(f, 0, kArpFrameLen);
  const bool request = op == kArpRequest;
  std::memcpy(f, request ? kBroadcastMac.data() : dst_mac.data(), 6);
  std::memcpy(f + 6, src_mac.data(), 6);
  store16(f + 12, kEtherTypeArp);
  uint8_t* a = f + 14;
  store16(a, 1);
  store16(a + 2, kEtherTypeIpv4);
  a[4] = 6;
  a[5] = 4;
  store16(a + 6, op);
  std::memcpy(a + 8, src_mac.data(), 6);
  store32(a + 14, src_ip4);
  if (!request) std::memcpy(a + 18, dst_mac.data(), 6);  // a request leaves tha zero
  store32(a + 24, dst_ip4);
  return kArpFrameLen;
}

std::optional<wire::MacAddr> parse_mac(std::string_view text) noexcept {
  wire::MacAddr mac{};
  size_t pos = 0;
  for (int i = 0; i < 6; ++i) {
    if (i > 0) {
      if (pos >= text.size() || (text[pos] != ':' && text[pos] != '-')) return std::nullopt;
      ++pos;
    }
    int v = 0;
    for (int d = 0; d < 2; ++d, ++pos) {
      if (pos >= text.size()) return std::nullopt;
      const char c = text[pos];
      int x;
      if (c >= '0' && c <= '9') {
        x = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        x = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        x = c - 'A' + 10;
      } else {
        return std::nullopt;
      }
      v = v * 16 + x;
    }
    mac[static_cast<size_t>(i)] = static_cast<uint8_t>(v);
  }
  if (pos != text.size()) return std::nullopt;
  return mac;
}

std::optional<uint32_t> parse_ip4(std::string_view text) noexcept {
  uint32_t ip = 0;
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      if (pos >= text.size() || text[pos] != '.') return std::nullopt;
      ++pos;
    }
    uint32_t v = 0;
    size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && digits < 3) {
      v = v * 10 + static_cast<uint32_t>(text[pos] - '0');
      ++pos;
      ++digits;
    }
    if (digits == 0 || v > 255) return std::nullopt;
    ip = ip << 8 | v;
  }
  if (pos != text.size()) return std::nullopt;
  return ip;
}

}  // namespace uet::io
