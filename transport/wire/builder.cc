#include "transport/wire/builder.h"

#include <cstring>

#include "transport/wire/checksum.h"
#include "transport/wire/icrc.h"

namespace uet::wire {

FrameBuilder::FrameBuilder(std::span<uint8_t> buf, const Encap& encap) noexcept
    : buf_(buf), encap_(encap) {
  Ethernet* eth = add<Ethernet>();
  if (eth == nullptr) return;
  eth->set_dst(encap.dst_mac);
  eth->set_src(encap.src_mac);
  const uint16_t l3_type = encap.ipv6 ? NET_ETHERTYPE_IPV6 : NET_ETHERTYPE_IPV4;
  if (encap.vlan) {
    eth->set_ethertype(NET_ETHERTYPE_VLAN);
    Vlan* vlan = add<Vlan>();
    if (vlan == nullptr) return;
    vlan->raw[0] = static_cast<uint8_t>(encap.vlan_tci >> 8);
    vlan->raw[1] = static_cast<uint8_t>(encap.vlan_tci);
    vlan->set_ethertype(l3_type);
  } else {
    eth->set_ethertype(l3_type);
  }

  l3_ = len_;
  const uint8_t l4_proto = encap.ip_only ? encap.ip_proto : uint8_t{NET_IPPROTO_UDP};
  if (encap.ipv6) {
    Ipv6* ip = add<Ipv6>();
    if (ip == nullptr) return;
    ip->set_version(6);
    ip->set_dscp(encap.dscp);
    ip->set_ecn(encap.ecn);
    ip->set_flow_label(encap.flow_label);
    ip->set_next_header(l4_proto);
    ip->set_hop_limit(encap.ttl);
    ip->set_src(encap.src_ip6);
    ip->set_dst(encap.dst_ip6);
  } else {
    Ipv4* ip = add<Ipv4>();
    if (ip == nullptr) return;
    ip->set_version(4);
    ip->set_ihl(5);
    ip->set_dscp(encap.dscp);
    ip->set_ecn(encap.ecn);
    ip->set_id(encap.ip_id);
    ip->set_df(encap.dont_fragment);
    ip->set_ttl(encap.ttl);
    ip->set_protocol(l4_proto);
    ip->set_src(encap.src_ip4);
    ip->set_dst(encap.dst_ip4);
  }

  l4_ = len_;
  if (encap.ip_only) {
    UetEntropy* e = add<UetEntropy>();
    if (e == nullptr) return;
    e->set_entropy(encap.sport);
  } else {
    Udp* udp = add<Udp>();
    if (udp == nullptr) return;
    udp->set_sport(encap.sport);
    udp->set_dport(encap.dport);
  }
  transport_ = len_;
}

uint8_t* FrameBuilder::add_bytes(size_t n) noexcept {
  if (overflow_ || buf_.size() - len_ < n) {
    overflow_ = true;
    return nullptr;
  }
  uint8_t* p = buf_.data() + len_;
  std::memset(p, 0, n);
  len_ += n;
  return p;
}

bool FrameBuilder::append(std::span<const uint8_t> bytes) noexcept {
  uint8_t* p = add_bytes(bytes.size());
  if (p == nullptr) return false;
  if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
  return true;
}

WireError FrameBuilder::finish(size_t* frame_len) noexcept {
  uint8_t* icrc = encap_.icrc ? add_bytes(kIcrcSize) : nullptr;
  if (overflow_ || len_ > 0xFFFF) return WireError::kNoRoom;

  uint8_t* l3 = buf_.data() + l3_;
  const size_t l3_len = len_ - l3_;
  size_t ip_hlen;
  if (encap_.ipv6) {
    as<Ipv6>(l3)->set_payload_length(static_cast<uint16_t>(l3_len - Ipv6::kSize));
    ip_hlen = Ipv6::kSize;
  } else {
    Ipv4* ip = as<Ipv4>(l3);
    ip->set_total_length(static_cast<uint16_t>(l3_len));
    ip->set_checksum(ipv4_header_checksum(l3, Ipv4::kSize));
    ip_hlen = Ipv4::kSize;
  }
  uint8_t* l4 = buf_.data() + l4_;
  const size_t udp_len = len_ - l4_;
  if (!encap_.ip_only) as<Udp>(l4)->set_length(static_cast<uint16_t>(udp_len));
  // The ICRC covers the UDP length but masks the UDP checksum, which in turn covers the ICRC.
  if (icrc != nullptr) {
    store_icrc(icrc, encap_.icrc_compute
                         ? compute_icrc(l3, static_cast<size_t>(icrc - l3), encap_.ipv6, ip_hlen)
                         : 0);
  }
  if (!encap_.ip_only) {
    Udp* udp = as<Udp>(l4);
    udp->set_checksum(0);
    if (encap_.udp_checksum) udp->set_checksum(udp_checksum(l3, encap_.ipv6, l4, udp_len));
  }
  *frame_len = len_;
  return WireError::kOk;
}

}  // namespace uet::wire
