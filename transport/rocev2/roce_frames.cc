// The RoCEv2 frame encoder: Ethernet/IPv4/UDP, BTH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt
// and CNP written in place.
#include <cstring>

#include "transport/rocev2/roce_datapath.h"
#include "transport/wire/checksum.h"

namespace uet {

using roce::kCreditsUnlimited;
using roce::kEct0;
using wire::AethType;
using wire::RoceOpcode;

namespace {

constexpr size_t kEncapSize = wire::Ethernet::kSize + wire::Ipv4::kSize + wire::Udp::kSize;

// Finishes a frame; `elided` bytes travel by length only (IP and UDP lengths count them).
bool finish_frame(wire::FrameBuilder& b, Frame& f, uint32_t elided = 0) {
  size_t n = 0;
  if (b.finish(&n) != wire::WireError::kOk) return false;
  f.len = static_cast<uint32_t>(n);
  f.wire_len = 0;
  f.ref = b.referenced();
  f.ref_len = static_cast<uint32_t>(b.referenced_len());
  f.ref_at = static_cast<uint32_t>(b.referenced_at());
  if (elided > 0) {
    f.wire_len = f.len + elided;
    wire::Ipv4* ip = wire::as<wire::Ipv4>(f.data + wire::Ethernet::kSize);
    ip->set_total_length(static_cast<uint16_t>(ip->total_length() + elided));
    ip->set_checksum(wire::ipv4_header_checksum(ip->raw, wire::Ipv4::kSize));
    wire::Udp* udp = wire::as<wire::Udp>(f.data + wire::Ethernet::kSize + wire::Ipv4::kSize);
    udp->set_length(static_cast<uint16_t>(udp->length() + elided));
  }
  return true;
}

}  // namespace

// spec/rocev2.md §1: one UDP source port per QP, destination 4791, UDP checksum 0, ICRC.
wire::Encap RoceEndpoint::encap_for(const Qp& q, uint8_t dscp, uint8_t ecn) const {
  wire::Encap e;
  e.src_mac = config_.local_mac;
  e.dst_mac = q.peer_mac;
  e.src_ip4 = config_.local_ip4;
  e.dst_ip4 = q.peer_ip4;
  e.dscp = dscp;
  e.ecn = ecn;
  e.sport = q.sport;
  e.dport = wire::kRoceUdpPort;
  e.udp_checksum = false;
  e.icrc = true;
  e.icrc_compute = !config_.icrc_offload;
  return e;
}

// The encapsulation as a template (wire/builder.h): kept from the last frame of its kind when
// that went to the same peer with the same marks, as most do (a QP's burst, a request's ACK),
// instead of built for every frame. A QP's own UDP source port is given to each FrameBuilder,
// so QPs to one peer share it.
const wire::EncapTemplate& RoceEndpoint::encap_template(const Qp& q, uint8_t dscp, uint8_t ecn,
                                                         bool icrc) {
  EncapCache& c = encap_cache_[ecn != 0 ? 0 : 1];
  if (!c.valid || c.peer_ip4 != q.peer_ip4 || c.peer_mac != q.peer_mac || c.dscp != dscp ||
      c.ecn != ecn || c.icrc != icrc) {
    wire::Encap e = encap_for(q, dscp, ecn);
    e.icrc = icrc;
    c.bytes = wire::EncapTemplate(e);
    c.peer_ip4 = q.peer_ip4;
    c.peer_mac = q.peer_mac;
    c.dscp = dscp;
    c.ecn = ecn;
    c.icrc = icrc;
    c.valid = true;
  }
  return c.bytes;
}

// One packet with its extended headers in spec order (spec/rocev2.md §4: RETH, AtomicETH, AETH,
// AtomicAckETH, ImmDt)
// and its payload. A frame too small for the packet carries its headers only, and the
// payload, pad and ICRC by length (Frame::wire_len: the simulator at scale). No ICRC can be
// computed then.
bool RoceEndpoint::build_packet(Qp& q, Frame& f, const Packet& p) {
  const uint32_t pad = (4 - p.len % 4) % 4;  // §2: payload padded to a multiple of 4
  const size_t headers =
      kEncapSize + wire::Bth::kSize + (p.reth ? wire::Reth::kSize : 0) +
      (p.atomic_eth ? wire::AtomicEth::kSize : 0) + (p.aeth ? wire::Aeth::kSize : 0) +
      (p.atomic_ack ? wire::AtomicAckEth::kSize : 0) + (p.imm ? wire::ImmDt::kSize : 0);
  if (headers > f.capacity) {
    ++rare().tx_no_room;
    return false;
  }
  // By reference the buffer holds all but the payload (the pad and ICRC follow it).
  const bool by_ref = config_.tx_by_reference && p.len > 0 && p.payload != nullptr;
  const bool elide =
      p.len > 0 &&
      (p.payload == nullptr || headers + (by_ref ? 0 : p.len) + pad + wire::kIcrcSize > f.capacity);
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity),
                       encap_template(q, config_.dscp_data, config_.ect ? kEct0 : 0, !elide),
                       q.sport);
  wire::Bth* bth = b.add<wire::Bth>();
  wire::Reth* reth = p.reth ? b.add<wire::Reth>() : nullptr;
  wire::AtomicEth* ateth = p.atomic_eth ? b.add<wire::AtomicEth>() : nullptr;
  wire::Aeth* aeth = p.aeth ? b.add<wire::Aeth>() : nullptr;
  wire::AtomicAckEth* atack = p.atomic_ack ? b.add<wire::AtomicAckEth>() : nullptr;
  wire::ImmDt* imm = p.imm ? b.add<wire::ImmDt>() : nullptr;
  bool placed = true;  // the payload (copied or referenced) and its pad
  if (!elide && p.len > 0) {
    if (by_ref) {
      placed = b.reference({p.payload, p.len});
    } else if (uint8_t* at = b.reserve(p.len); at != nullptr) {
      std::memcpy(at, p.payload, p.len);
    } else {
      placed = false;
    }
    if (placed && pad > 0) placed = b.add_bytes(pad) != nullptr;
  }
  if (bth == nullptr || (p.imm && imm == nullptr) || (p.atomic_eth && ateth == nullptr) ||
      (p.atomic_ack && atack == nullptr) || !placed) {
    ++rare().tx_no_room;
    return false;
  }
  bth->set_opcode(p.op);
  bth->set_pad_cnt(static_cast<uint8_t>(pad));
  bth->set_pkey(ROCEV2_DEFAULT_PKEY);
  bth->set_dest_qp(q.remote_qpn);
  bth->set_ack_req(p.ack_req);
  bth->set_psn(p.psn);
  if (reth != nullptr) {  // §3.1: VA = byte offset within the region (zero-based)
    reth->set_va(p.va);
    reth->set_rkey(p.rkey);
    reth->set_dma_length(p.dma_length);
  }
  if (ateth != nullptr) {  // §3.3: the operands big-endian, VA as RETH's (zero-based)
    ateth->set_va(p.va);
    ateth->set_rkey(p.rkey);
    ateth->set_swap_add(p.swap_add);
    ateth->set_compare(p.compare);
  }
  if (atack != nullptr) atack->set_orig_data(p.orig);  // §3.4
  if (aeth != nullptr) {  // §3.2: read responses FIRST/LAST/ONLY and atomic ACKs: ACK syndrome
    aeth->set_syndrome_type(AethType::kAck);
    aeth->set_syndrome_value(kCreditsUnlimited);
    aeth->set_msn(q.msn);
  }
  if (imm != nullptr) imm->set_imm(p.imm_data);  // §3.5
  if (!finish_frame(b, f, elide ? p.len + pad + static_cast<uint32_t>(wire::kIcrcSize) : 0)) {
    ++rare().tx_no_room;
    return false;
  }
  f.priority = Priority::kData;
  return true;
}

// §3.2: ACKNOWLEDGE with an AETH. ACKs and NAKs ride in the QP's traffic class (dscp_data),
// not ECN-capable, as RNICs send them.
bool RoceEndpoint::build_ack(Qp& q, Frame& f, AethType type, uint8_t value, uint32_t psn) {
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity),
                       encap_template(q, config_.dscp_data, 0, true), q.sport);
  wire::Bth* bth = b.add<wire::Bth>();
  wire::Aeth* aeth = b.add<wire::Aeth>();
  if (aeth == nullptr) {
    ++rare().tx_no_room;
    return false;
  }
  bth->set_opcode(RoceOpcode::kRcAck);
  bth->set_pkey(ROCEV2_DEFAULT_PKEY);
  bth->set_dest_qp(q.remote_qpn);
  bth->set_psn(psn);
  aeth->set_syndrome_type(type);
  aeth->set_syndrome_value(value);
  aeth->set_msn(q.msn);
  if (!finish_frame(b, f)) {
    ++rare().tx_no_room;
    return false;
  }
  f.priority = Priority::kData;
  return true;
}

// §5: BTH opcode 0x81 with BECN, DestQP = the QP whose traffic was marked (the sender's),
// PSN 0, 16 zero bytes; DSCP 48, not ECN-capable, in the control class.
bool RoceEndpoint::build_cnp(Qp& q, Frame& f) {
  wire::FrameBuilder b(std::span<uint8_t>(f.data, f.capacity),
                       encap_template(q, config_.dscp_cnp, 0, true), q.sport);
  wire::Bth* bth = b.add<wire::Bth>();
  wire::Cnp* cnp = b.add<wire::Cnp>();
  if (cnp == nullptr) {
    ++rare().tx_no_room;
    return false;
  }
  bth->set_opcode(RoceOpcode::kCnp);
  bth->set_pkey(ROCEV2_DEFAULT_PKEY);
  bth->set_becn(true);
  bth->set_dest_qp(q.remote_qpn);
  if (!finish_frame(b, f)) {
    ++rare().tx_no_room;
    return false;
  }
  f.priority = Priority::kControl;
  return true;
}

}  // namespace uet
