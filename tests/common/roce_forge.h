// Forged RoCEv2 frames for the tests that play a hostile or flooding peer: whatever extended
// headers the opcode's layout has (spec/rocev2.md §4), the fields given, a valid ICRC.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/wire/builder.h"
#include "transport/wire/roce_headers.h"

namespace uet::testing {

// The fields a forged frame carries; each test sets its own defaults on top.
struct RoceForged {
  wire::RoceOpcode op = wire::RoceOpcode::kRcWriteOnly;
  uint32_t dest_qp = 0;
  uint32_t psn = 0;
  std::vector<uint8_t> payload;
  bool ack_req = false;
  uint64_t va = 0;  // RETH, AtomicETH
  uint32_t rkey = 0;
  uint32_t dma_length = 0;
  uint64_t swap_add = 0, compare = 0;               // AtomicETH
  uint64_t orig_data = 0;                           // AtomicAckETH
  wire::AethType aeth_type = wire::AethType::kAck;  // AETH
  uint8_t aeth_value = ROCEV2_AETH_CREDITS_UNLIMITED;
  uint32_t msn = 0;
  uint32_t src = 0, dst = 0;
  bool pad = true;  // false: the payload goes as is, pad_cnt 0, whatever its length
};

inline std::vector<uint8_t> forge(const RoceForged& f) {
  std::vector<uint8_t> buf(9216);
  wire::Encap e;
  e.src_ip4 = f.src;
  e.dst_ip4 = f.dst;
  e.dscp = ROCEV2_DSCP_DATA;
  e.sport = 0xC123;
  e.dport = wire::kRoceUdpPort;
  e.udp_checksum = false;
  e.icrc = true;
  wire::FrameBuilder b(buf, e);
  wire::Bth* bth = b.add<wire::Bth>();
  const wire::RoceLayout layout = wire::roce_layout(static_cast<uint8_t>(f.op));
  if (layout.ext & ROCEV2_X_DETH) b.add<wire::Deth>();
  if (layout.ext & ROCEV2_X_RETH) {
    wire::Reth* r = b.add<wire::Reth>();
    r->set_va(f.va);
    r->set_rkey(f.rkey);
    r->set_dma_length(f.dma_length);
  }
  if (layout.ext & ROCEV2_X_ATOMIC) {
    wire::AtomicEth* a = b.add<wire::AtomicEth>();
    a->set_va(f.va);
    a->set_rkey(f.rkey);
    a->set_swap_add(f.swap_add);
    a->set_compare(f.compare);
  }
  if (layout.ext & ROCEV2_X_AETH) {
    wire::Aeth* a = b.add<wire::Aeth>();
    a->set_syndrome_type(f.aeth_type);
    a->set_syndrome_value(f.aeth_value);
    a->set_msn(f.msn);
  }
  if (layout.ext & ROCEV2_X_ATOMIC_ACK) b.add<wire::AtomicAckEth>()->set_orig_data(f.orig_data);
  if (layout.ext & ROCEV2_X_IMM) b.add<wire::ImmDt>();
  if (layout.ext & ROCEV2_X_IETH) b.add<wire::Ieth>();
  if (layout.ext & ROCEV2_X_CNP) b.add<wire::Cnp>();
  size_t pad = 0;
  if (layout.payload) {
    EXPECT_TRUE(b.append(f.payload));
    if (f.pad) pad = (4 - f.payload.size() % 4) % 4;
    b.add_bytes(pad);
  }
  bth->set_opcode(f.op);
  bth->set_pad_cnt(static_cast<uint8_t>(pad));
  bth->set_pkey(ROCEV2_DEFAULT_PKEY);
  bth->set_dest_qp(f.dest_qp);
  bth->set_ack_req(f.ack_req);
  bth->set_psn(f.psn);
  size_t n = 0;
  EXPECT_EQ(b.finish(&n), wire::WireError::kOk);
  buf.resize(n);
  return buf;
}

}  // namespace uet::testing
