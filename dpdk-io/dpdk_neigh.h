// Neighbours of the DPDK backend: a fixed-size IPv4 → MAC table (static entries from the
// tool's --neigh flags, plus entries learned from ARP) and the ARP codec (RFC 826, IPv4 over
// Ethernet). No DPDK here: the backend (dpdk_io.h) feeds it bytes, so it tests on a laptop.
//
// How the backend uses it (dpdk_io.h, "Neighbours"): the engines write a destination MAC once
// per PDC/QP from their resolver; on every transmitted IPv4 frame the backend looks the
// destination IP up here and rewrites the Ethernet destination. A miss sends (at most once per
// `arp_interval`) an ARP request and drops the frame, counted: the engine retransmits it.
//
// Bounds: the table holds `capacity` entries (a power of two, open addressing, no deletion);
// when it is full, ARP learning stops (counted by the caller) and static entries still win.
// One thread (the backend's) reads and writes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "spec/net.def"
#include "transport/wire/builder.h"

namespace uet::io {

inline constexpr uint16_t kEtherTypeIpv4 = NET_ETHERTYPE_IPV4;
inline constexpr uint16_t kEtherTypeArp = NET_ETHERTYPE_ARP;
inline constexpr uint16_t kEtherTypeVlan = NET_ETHERTYPE_VLAN;
inline constexpr uint16_t kEtherTypeIpv6 = NET_ETHERTYPE_IPV6;
inline constexpr uint16_t kArpRequest = 1;
inline constexpr uint16_t kArpReply = 2;
inline constexpr size_t kArpFrameLen = 60;  // Ethernet (14) + ARP (28) + padding to the minimum

inline constexpr wire::MacAddr kBroadcastMac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

class NeighbourTable {
 public:
  // `capacity` is rounded up to a power of two (at least 8).
  explicit NeighbourTable(size_t capacity = 256);

  // Adds or updates `ip4` (host byte order). A learned entry never overwrites a static one.
  // Returns false when the table is full.
  bool set(uint32_t ip4, const wire::MacAddr& mac, bool is_static);
  // The MAC of `ip4`, or null. Data path: a probe or two, and a one-entry cache.
  const wire::MacAddr* find(uint32_t ip4) const noexcept;
  size_t size() const noexcept { return size_; }

 private:
  struct Entry {
    uint32_t ip4 = 0;
    bool used = false;
    bool is_static = false;
    wire::MacAddr mac{};
  };
  std::vector<Entry> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  mutable size_t last_ = 0;  // index of the last hit
};

// One decoded ARP packet (IPv4 over Ethernet); addresses in host byte order.
struct ArpPacket {
  uint16_t op = 0;
  wire::MacAddr sha{};  // sender hardware address
  uint32_t spa = 0;     // sender protocol address
  wire::MacAddr tha{};
  uint32_t tpa = 0;
};

// The EtherType after at most one 802.1Q tag, and the offset of the L3 header; 0 if the
// frame is too short.
uint16_t ether_type(std::span<const uint8_t> frame, size_t* l3_offset = nullptr) noexcept;
// The IPv4 destination address of an IPv4 frame (host byte order), if it is one.
std::optional<uint32_t> ipv4_destination(std::span<const uint8_t> frame) noexcept;
// Decodes an Ethernet/ARP frame (no VLAN); nullopt unless it is IPv4-over-Ethernet ARP.
std::optional<ArpPacket> parse_arp(std::span<const uint8_t> frame) noexcept;
// Writes an Ethernet/ARP frame of kArpFrameLen bytes; returns its length, 0 if `buf` is short.
// A request goes to broadcast with tha zero; a reply goes to the requester.
size_t build_arp(std::span<uint8_t> buf, uint16_t op, const wire::MacAddr& src_mac,
                 uint32_t src_ip4, const wire::MacAddr& dst_mac, uint32_t dst_ip4) noexcept;

// Text forms for flags: "02:00:00:00:00:02" and dotted-quad "10.0.0.2" (host byte order).
std::optional<wire::MacAddr> parse_mac(std::string_view text) noexcept;
std::optional<uint32_t> parse_ip4(std::string_view text) noexcept;

}  // namespace uet::io
