#include "transport/wire/builder.h"

#include <cstring>

#include "transport/wire/checksum.h"
#include "transport/wire/icrc.h"

namespace uet::wire {

EncapTemplate::EncapTemplate(const Encap& encap) noexcept {
  EncapLayout& t = layout_;
  t.ipv6 = encap.ipv6;
  t.ip_only = encap.ip_only;
  t.udp_checksum = encap.udp_checksum;
  t.icrc = encap.icrc;
  t.icrc_compute = encap.icrc_compute;
  uint8_t* const b = bytes_.data();
  Ethernet* eth = as<Ethernet>(b);
  eth->set_dst(encap.dst_mac);
  eth->set_src(encap.src_mac);
  const uint16_t l3_type = encap.ipv6 ? NET_ETHERTYPE_IPV6 : NET_ETHERTYPE_IPV4;
  t.l3 = Ethernet::kSize;
  if (encap.vlan) {
    eth->set_ethertype(NET_ETHERTYPE_VLAN);
    Vlan* vlan = as<Vlan>(b + Ethernet::kSize);
    vlan->raw[0] = static_cast<uint8_t>(encap.vlan_tci >> 8);
    vlan->raw[1] = static_cast<uint8_t>(encap.vlan_tci);
    vlan->set_ethertype(l3_type);
    t.l3 += Vlan::kSize;
  } else {
    eth->set_ethertype(l3_type);
  }

  const uint8_t l4_proto = encap.ip_only ? encap.ip_proto : uint8_t{NET_IPPROTO_UDP};
  if (encap.ipv6) {
    Ipv6* ip = as<Ipv6>(b + t.l3);
    ip->set_version(6);
    ip->set_dscp(encap.dscp);
    ip->set_ecn(encap.ecn);
    ip->set_flow_label(encap.flow_label);
    ip->set_next_header(l4_proto);
    ip->set_hop_limit(encap.ttl);
    std::memcpy(ip->raw + 8, encap.src_ip6.data(), 16);   // src (RFC 8200 §3)
    std::memcpy(ip->raw + 24, encap.dst_ip6.data(), 16);  // dst
    t.l4 = static_cast<uint8_t>(t.l3 + Ipv6::kSize);
  } else {
    Ipv4* ip = as<Ipv4>(b + t.l3);
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
    // Total length and checksum are still 0: what finish() adds the length to.
    t.ip_sum = static_cast<uint32_t>(csum_add(0, ip->raw, Ipv4::kSize));
    t.l4 = static_cast<uint8_t>(t.l3 + Ipv4::kSize);
  }
  // The UDP pseudo-header without its length (RFC 768; RFC 8200 §8.1), and the destination
  // port; finish() adds the source port, the lengths and the datagram's bytes.
  {
    const uint8_t* ip = b + t.l3;
    uint64_t sum = encap.ipv6 ? csum_add(0, ip + 8, 32) : csum_add(0, ip + 12, 8);
    sum += NET_IPPROTO_UDP;
    sum += encap.dport;
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);  // so a port added never carries out
    t.udp_sum = static_cast<uint32_t>(sum);
  }

  if (encap.ip_only) {
    as<UetEntropy>(b + t.l4)->set_entropy(encap.sport);
    t.len = static_cast<uint8_t>(t.l4 + UetEntropy::kSize);
  } else {
    Udp* udp = as<Udp>(b + t.l4);
    udp->set_sport(encap.sport);
    udp->set_dport(encap.dport);
    t.len = static_cast<uint8_t>(t.l4 + Udp::kSize);
  }
}

FrameBuilder::FrameBuilder(std::span<uint8_t> buf, const Encap& encap) noexcept : buf_(buf) {
  start(EncapTemplate(encap), encap.sport);
}

WireError FrameBuilder::finish_other(size_t* frame_len, size_t elided) noexcept {
  uint8_t* icrc = t_.icrc ? add_bytes(kIcrcSize) : nullptr;
  const size_t total = len_ + ref_len_ + elided;  // on the wire
  if (overflow_ || total > 0xFFFF || (icrc != nullptr && elided > 0)) {
    return WireError::kNoRoom;
  }

  uint8_t* l3 = buf_.data() + t_.l3;
  const size_t l3_len = total - t_.l3;
  size_t ip_hlen;
  if (t_.ipv6) {
    as<Ipv6>(l3)->set_payload_length(static_cast<uint16_t>(l3_len - Ipv6::kSize));
    ip_hlen = Ipv6::kSize;
  } else {
    Ipv4* ip = as<Ipv4>(l3);
    ip->set_total_length(static_cast<uint16_t>(l3_len));
    ip->set_checksum(csum_finish(t_.ip_sum + l3_len));  // the template's sum + the length word
    ip_hlen = Ipv4::kSize;
  }
  uint8_t* l4 = buf_.data() + t_.l4;
  const size_t udp_len = total - t_.l4;
  if (!t_.ip_only) as<Udp>(l4)->set_length(static_cast<uint16_t>(udp_len));
  // The ICRC covers the UDP length but masks the UDP checksum, which in turn covers the ICRC.
  if (icrc != nullptr && !t_.icrc_compute) {
    store_icrc(icrc, 0);
  } else if (icrc != nullptr && ref_ == nullptr) {
    store_icrc(icrc, compute_icrc(l3, static_cast<size_t>(icrc - l3), t_.ipv6, ip_hlen));
  } else if (icrc != nullptr) {  // the headers, the referenced run, then the pad
    const uint8_t* ref_end = buf_.data() + ref_at_;
    uint32_t crc = compute_icrc(l3, static_cast<size_t>(ref_end - l3), t_.ipv6, ip_hlen);
    crc = icrc_crc32(crc, ref_, ref_len_);
    store_icrc(icrc, icrc_crc32(crc, ref_end, static_cast<size_t>(icrc - ref_end)));
  }
  if (!t_.ip_only) {
    Udp* udp = as<Udp>(l4);
    udp->set_checksum(0);
    if (t_.udp_checksum && elided == 0) udp->set_checksum(udp_checksum_from_sum(udp_len));
  }
  *frame_len = len_;
  return WireError::kOk;
}

}  // namespace uet::wire
