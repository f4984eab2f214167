// decode_frame(): one test per malformed-input class, each asserting its typed WireError, plus
// the decode options and a no-crash sweep over truncations and random bytes.
#include "transport/wire/decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <vector>

#include "transport/wire/builder.h"
#include "transport/wire/checksum.h"
#include "transport/wire/icrc.h"

namespace uet::wire {
namespace {

constexpr size_t kEth = 14;
constexpr size_t kIp = kEth;       // IPv4 header offset in the fixtures
constexpr size_t kUdp = kIp + 20;  // UDP header offset
constexpr size_t kL5 = kUdp + 8;   // first transport byte

Encap test_encap(uint16_t dport) {
  Encap e;
  e.src_mac = {0x02, 0, 0, 0, 0, 1};
  e.dst_mac = {0x02, 0, 0, 0, 0, 2};
  e.src_ip4 = 0x0A000001;
  e.dst_ip4 = 0x0A000002;
  e.sport = 0xC123;
  e.dport = dport;
  e.icrc = dport == kRoceUdpPort;
  e.udp_checksum = dport != kRoceUdpPort;
  return e;
}

std::vector<uint8_t> finish(FrameBuilder& b, std::vector<uint8_t>& buf) {
  size_t n = 0;
  EXPECT_EQ(b.finish(&n), WireError::kOk);
  buf.resize(n);
  return buf;
}

// A valid UET frame: RUD request (SYN clear) + standard SES WRITE, SOM=1, 64-byte payload.
std::vector<uint8_t> uet_write_frame(size_t payload = 64) {
  std::vector<uint8_t> buf(2048);
  FrameBuilder b(buf, test_encap(kUetUdpPort));
  PdsRudRod* pds = b.add<PdsRudRod>();
  pds->set_type(PdsType::kRudReq);
  pds->set_next_hdr(NextHeader::kReqStd);
  pds->set_psn(1000);
  pds->set_spdcid(7);
  pds->set_dpdcid(9);
  SesStandardRequest* ses = b.add<SesStandardRequest>();
  ses->set_opcode(SesOpcode::kWrite);
  ses->set_som(true);
  ses->set_eom(true);
  ses->set_job_id(42);
  ses->set_request_length(static_cast<uint32_t>(payload));
  uint8_t* p = b.add_bytes(payload);
  for (size_t i = 0; i < payload; ++i) p[i] = static_cast<uint8_t>(i);
  return finish(b, buf);
}

// A valid RoCEv2 RDMA WRITE ONLY with a 64-byte payload.
std::vector<uint8_t> roce_write_frame() {
  std::vector<uint8_t> buf(2048);
  FrameBuilder b(buf, test_encap(kRoceUdpPort));
  Bth* bth = b.add<Bth>();
  bth->set_opcode(RoceOpcode::kRcWriteOnly);
  bth->set_pkey(0xFFFF);
  bth->set_dest_qp(0x11);
  bth->set_psn(0x123456);
  Reth* reth = b.add<Reth>();
  reth->set_va(0x1000);
  reth->set_rkey(0xABCD);
  reth->set_dma_length(64);
  b.add_bytes(64);
  return finish(b, buf);
}

// Recomputes the IPv4 header checksum, UDP checksum (if non-zero) and, for RoCEv2, the ICRC
// of a fixture frame after a test edited it.
void reseal(std::vector<uint8_t>& f) {
  Ipv4* ip = as<Ipv4>(f.data() + kIp);
  ip->set_checksum(ipv4_header_checksum(f.data() + kIp, 20));
  Udp* udp = as<Udp>(f.data() + kUdp);
  if (udp->dport() == kRoceUdpPort && f.size() >= kL5 + 16) {
    store_icrc(f.data() + f.size() - 4,
               compute_icrc(f.data() + kIp, f.size() - kIp - 4, false, 20));
  }
  if (udp->checksum() != 0 && udp->length() >= 8 && kUdp + udp->length() <= f.size()) {
    udp->set_checksum(udp_checksum(f.data() + kIp, false, f.data() + kUdp, udp->length()));
  }
}

// Removes `n` bytes at the end of the UDP payload and fixes the IP/UDP lengths.
void shrink_l5(std::vector<uint8_t>& f, size_t n) {
  f.resize(f.size() - n);
  as<Ipv4>(f.data() + kIp)->set_total_length(static_cast<uint16_t>(f.size() - kIp));
  as<Udp>(f.data() + kUdp)->set_length(static_cast<uint16_t>(f.size() - kUdp));
  reseal(f);
}

WireError decode(const std::vector<uint8_t>& f, const DecodeOptions& o = {}) {
  Decoded d;
  return decode_frame(f, &d, o);
}

TEST(Decode_Valid, UetWriteFrame) {
  const auto f = uet_write_frame();
  Decoded d;
  ASSERT_EQ(decode_frame(f, &d), WireError::kOk);
  EXPECT_EQ(d.protocol, Protocol::kUet);
  EXPECT_EQ(d.ev, 0xC123);
  EXPECT_EQ(d.pds_type, PdsType::kRudReq);
  ASSERT_NE(d.pds_as<PdsRudRod>(), nullptr);
  EXPECT_EQ(d.pds_as<PdsAck>(), nullptr);
  EXPECT_EQ(d.pds_as<PdsRudRod>()->psn(), 1000u);
  ASSERT_NE(d.ses_as<SesStandardRequest>(), nullptr);
  EXPECT_EQ(d.ses_as<SesStandardRequest>()->job_id(), 42u);
  EXPECT_EQ(d.payload.size(), 64u);
  EXPECT_EQ(d.payload[63], 63);
  ASSERT_EQ(d.depth, 5);
  EXPECT_EQ(d.stack[3].desc->id, "pds_rud_rod");
  EXPECT_EQ(d.stack[3].offset, kL5);
  EXPECT_EQ(d.stack[4].desc->id, "ses_std");
}

TEST(Decode_Valid, RoceWriteFrame) {
  const auto f = roce_write_frame();
  Decoded d;
  ASSERT_EQ(decode_frame(f, &d), WireError::kOk);
  EXPECT_EQ(d.protocol, Protocol::kRoce);
  ASSERT_NE(d.reth, nullptr);
  EXPECT_EQ(d.reth->rkey(), 0xABCDu);
  EXPECT_EQ(d.bth->psn(), 0x123456u);
  EXPECT_EQ(d.payload.size(), 64u);
  EXPECT_EQ(d.icrc, load_icrc(f.data() + f.size() - 4));
}

TEST(Decode_Valid, EthernetPaddingAfterIpIsIgnored) {
  auto f = uet_write_frame(0);
  f.insert(f.end(), 6, 0);  // short frames are padded to 60 bytes on the wire
  EXPECT_EQ(decode(f), WireError::kOk);
}

// One mutation per malformed-input class. Each starts from a valid frame.
struct Case {
  const char* name;
  std::function<std::vector<uint8_t>()> make;
  WireError want;
};

std::vector<Case> malformed_cases() {
  return {
      {"TruncatedEthernet", [] { return std::vector<uint8_t>(10, 0); },
       WireError::kTruncatedEthernet},
      {"TruncatedVlan",
       [] {
         auto f = uet_write_frame();
         f[12] = 0x81;
         f[13] = 0x00;
         f.resize(16);
         return f;
       },
       WireError::kTruncatedEthernet},
      {"ArpIsNotOurs",
       [] {
         auto f = uet_write_frame();
         f[12] = 0x08;
         f[13] = 0x06;
         return f;
       },
       WireError::kUnsupportedEtherType},
      {"TruncatedIp", [] { auto f = uet_write_frame(); f.resize(kIp + 12); return f; },
       WireError::kTruncatedIp},
      {"Ipv4HeaderSaysVersion6",
       [] {
         auto f = uet_write_frame();
         f[kIp] = 0x65;
         return f;
       },
       WireError::kBadIpVersion},
      {"IhlBelowFive",
       [] {
         auto f = uet_write_frame();
         f[kIp] = 0x44;
         return f;
       },
       WireError::kBadIpHeaderLength},
      {"IpTotalLengthBeyondFrame",
       [] {
         auto f = uet_write_frame();
         as<Ipv4>(f.data() + kIp)->set_total_length(static_cast<uint16_t>(f.size()));
         reseal(f);
         return f;
       },
       WireError::kBadIpTotalLength},
      {"IpChecksumWrong",
       [] {
         auto f = uet_write_frame();
         f[kIp + 11] ^= 0x01;
         return f;
       },
       WireError::kBadIpChecksum},
      {"IpFragment",
       [] {
         auto f = uet_write_frame();
         as<Ipv4>(f.data() + kIp)->set_mf(true);
         reseal(f);
         return f;
       },
       WireError::kIpFragment},
      {"TcpIsNotOurs",
       [] {
         auto f = uet_write_frame();
         as<Ipv4>(f.data() + kIp)->set_protocol(6);
         reseal(f);
         return f;
       },
       WireError::kUnsupportedIpProtocol},
      {"TruncatedUdp",
       [] {
         auto f = uet_write_frame();
         f.resize(kUdp + 4);
         as<Ipv4>(f.data() + kIp)->set_total_length(24);
         reseal(f);
         return f;
       },
       WireError::kTruncatedUdp},
      {"UdpLengthDisagrees",
       [] {
         auto f = uet_write_frame();
         Udp* u = as<Udp>(f.data() + kUdp);
         u->set_length(static_cast<uint16_t>(u->length() - 1));
         return f;
       },
       WireError::kBadUdpLength},
      {"UdpChecksumWrong",
       [] {
         auto f = uet_write_frame();
         f.back() ^= 0x01;
         return f;
       },
       WireError::kBadUdpChecksum},
      {"DnsIsNotOurs",
       [] {
         auto f = uet_write_frame();
         as<Udp>(f.data() + kUdp)->set_dport(53);
         reseal(f);
         return f;
       },
       WireError::kUnsupportedUdpPort},
      {"TruncatedPds",
       [] {
         auto f = uet_write_frame(0);
         shrink_l5(f, 44 + 6);  // leaves 6 of the 12 PDS bytes
         return f;
       },
       WireError::kTruncatedUet},
      {"TruncatedSes",
       [] {
         auto f = uet_write_frame(0);
         shrink_l5(f, 4);
         return f;
       },
       WireError::kTruncatedUet},
      {"PdsType15",
       [] {
         auto f = uet_write_frame();
         as<PdsPrologue>(f.data() + kL5)->set_type(static_cast<PdsType>(15));
         reseal(f);
         return f;
       },
       WireError::kUnknownPdsType},
      {"PdsTypeReserved0",
       [] {
         auto f = uet_write_frame();
         as<PdsPrologue>(f.data() + kL5)->set_type(PdsType::kReserved);
         reseal(f);
         return f;
       },
       WireError::kUnknownPdsType},
      {"RequestFlagReservedBit",
       [] {
         auto f = uet_write_frame();
         f[kL5 + 1] |= 0x40;
         reseal(f);
         return f;
       },
       WireError::kReservedBitsSet},
      {"SynWithReservedPdcInfo",
       [] {
         auto f = uet_write_frame();
         PdsRudRod* p = as<PdsRudRod>(f.data() + kL5);
         p->set_syn(true);
         p->set_dpdcid(0x1005);  // pdc_info_rsvd = 1
         reseal(f);
         return f;
       },
       WireError::kReservedBitsSet},
      {"SesReservedPidBits",
       [] {
         auto f = uet_write_frame();
         f[kL5 + 12 + 8] |= 0x80;
         reseal(f);
         return f;
       },
       WireError::kReservedBitsSet},
      {"RequestCarryingResponseHeader",
       [] {
         auto f = uet_write_frame();
         as<PdsRudRod>(f.data() + kL5)->set_next_hdr(NextHeader::kRsp);
         reseal(f);
         return f;
       },
       WireError::kBadNextHeader},
      {"NextHeader9",
       [] {
         auto f = uet_write_frame();
         as<PdsRudRod>(f.data() + kL5)->set_next_hdr(static_cast<NextHeader>(9));
         reseal(f);
         return f;
       },
       WireError::kBadNextHeader},
      {"CtrlType12",
       [] {
         auto f = uet_write_frame(0);
         shrink_l5(f, 40);  // 16 bytes left: a CTRL header
         PdsCtrl* c = as<PdsCtrl>(f.data() + kL5);
         c->set_type(PdsType::kCtrl);
         c->set_ctl_type(static_cast<CtrlType>(12));
         reseal(f);
         return f;
       },
       WireError::kUnknownCtrlType},
      {"SesOpcode0x20",
       [] {
         auto f = uet_write_frame();
         as<SesStandardRequest>(f.data() + kL5 + 12)->set_opcode(static_cast<SesOpcode>(0x20));
         reseal(f);
         return f;
       },
       WireError::kUnknownSesOpcode},
      {"SesVersion1",
       [] {
         auto f = uet_write_frame();
         as<SesStandardRequest>(f.data() + kL5 + 12)->set_ver(1);
         reseal(f);
         return f;
       },
       WireError::kBadSesVersion},
      {"SesPayloadLengthOffByOne",
       [] {
         auto f = uet_write_frame(64);
         SesStandardRequest* s = as<SesStandardRequest>(f.data() + kL5 + 12);
         s->set_som(false);
         s->set_header_data(0);
         s->set_payload_length(65);
         reseal(f);
         return f;
       },
       WireError::kBadSesLength},
      {"TruncatedBth",
       [] {
         auto f = roce_write_frame();
         shrink_l5(f, f.size() - kL5 - 10);
         return f;
       },
       WireError::kTruncatedRoce},
      {"TruncatedReth",
       [] {
         auto f = roce_write_frame();
         shrink_l5(f, 64 + 10);
         return f;
       },
       WireError::kTruncatedRoce},
      {"BthOpcode0x15",
       [] {
         auto f = roce_write_frame();
         f[kL5] = 0x15;
         reseal(f);
         return f;
       },
       WireError::kUnknownRoceOpcode},
      {"BthVersion1",
       [] {
         auto f = roce_write_frame();
         as<Bth>(f.data() + kL5)->set_tver(1);
         reseal(f);
         return f;
       },
       WireError::kBadBthVersion},
      {"PadLongerThanPayload",
       [] {
         auto f = roce_write_frame();
         shrink_l5(f, 64);  // WRITE ONLY with an empty payload ...
         as<Bth>(f.data() + kL5)->set_pad_cnt(3);  // ... claiming 3 pad bytes
         reseal(f);
         return f;
       },
       WireError::kBadPadCount},
      {"AckWithPayload",
       [] {
         auto f = roce_write_frame();
         as<Bth>(f.data() + kL5)->set_opcode(RoceOpcode::kRcAck);  // AETH + 76 stray bytes
         reseal(f);
         return f;
       },
       WireError::kUnexpectedPayload},
      {"IcrcWrong",
       [] {
         auto f = roce_write_frame();
         f[f.size() - 8] ^= 0x10;  // a payload bit
         return f;
       },
       WireError::kBadIcrc},
      {"BthReservedBits",
       [] {
         auto f = roce_write_frame();
         f[kL5 + 8] |= 0x01;
         reseal(f);
         return f;
       },
       WireError::kReservedBitsSet},
  };
}

TEST(Decode_Malformed, EachClassGivesItsTypedError) {
  for (const Case& c : malformed_cases()) {
    const auto f = c.make();
    EXPECT_EQ(decode(f), c.want) << c.name << ": got " << to_string(decode(f));
  }
}

TEST(Decode_Malformed, EveryErrorClassIsCovered) {
  std::set<WireError> covered = {WireError::kOk, WireError::kNoRoom};  // kNoRoom: Builder_NoRoom
  for (const Case& c : malformed_cases()) covered.insert(c.want);
  for (size_t i = 0; i < kNumWireErrors; ++i) {
    const auto e = static_cast<WireError>(i);
    EXPECT_TRUE(covered.count(e)) << "no malformed-input test for " << name(e);
  }
}

TEST(Decode_Options, ChecksDisabledOnRequest) {
  auto bad_ip = uet_write_frame();
  bad_ip[kIp + 11] ^= 0x01;
  DecodeOptions o;
  o.verify_ip_checksum = false;
  EXPECT_EQ(decode(bad_ip, o), WireError::kOk);

  auto bad_udp = uet_write_frame();
  bad_udp.back() ^= 0x01;
  o.verify_udp_checksum = false;
  EXPECT_EQ(decode(bad_udp, o), WireError::kOk);

  auto bad_icrc = roce_write_frame();
  bad_icrc[bad_icrc.size() - 8] ^= 0x10;
  o.verify_icrc = false;
  EXPECT_EQ(decode(bad_icrc, o), WireError::kOk);
}

// Without the header stack the frame decodes to the same headers; only the stack is empty.
TEST(Decode_Options, NoHeaderStackSameHeaders) {
  for (const auto& f : {uet_write_frame(), roce_write_frame()}) {
    DecodeOptions o;
    o.header_stack = false;
    Decoded with, without;
    ASSERT_EQ(decode_frame(f, &with), WireError::kOk);
    ASSERT_EQ(decode_frame(f, &without, o), WireError::kOk);
    EXPECT_GT(with.depth, 3);
    EXPECT_EQ(without.depth, 0);
    EXPECT_EQ(without.protocol, with.protocol);
    EXPECT_EQ(without.udp, with.udp);
    EXPECT_EQ(without.pds, with.pds);
    EXPECT_EQ(without.ses, with.ses);
    EXPECT_EQ(without.bth, with.bth);
    EXPECT_EQ(without.reth, with.reth);
    EXPECT_EQ(without.payload.data(), with.payload.data());
    EXPECT_EQ(without.payload.size(), with.payload.size());
  }
  // A malformed frame gives the same error either way.
  auto bad = uet_write_frame();
  bad[kIp + 11] ^= 0x01;
  DecodeOptions o;
  o.header_stack = false;
  EXPECT_EQ(decode(bad, o), WireError::kBadIpChecksum);
}

TEST(Decode_Storage, DecodesIntoRawStorageAsIntoADecoded) {
  // Storage filled with garbage first: decode_frame starts every field afresh itself.
  for (const auto& f : {uet_write_frame(), roce_write_frame()}) {
    DecodedStorage storage;
    std::memset(static_cast<void*>(storage.slot()), 0xA5, sizeof(Decoded));
    Decoded ref;
    ASSERT_EQ(decode_frame(f, storage.slot()), WireError::kOk);
    ASSERT_EQ(decode_frame(f, &ref), WireError::kOk);
    const Decoded& d = storage.get();
    EXPECT_EQ(d.protocol, ref.protocol);
    EXPECT_EQ(d.ipv4, ref.ipv4);
    EXPECT_EQ(d.udp, ref.udp);
    EXPECT_EQ(d.pds, ref.pds);
    EXPECT_EQ(d.ses, ref.ses);
    EXPECT_EQ(d.bth, ref.bth);
    EXPECT_EQ(d.tss, nullptr);
    EXPECT_EQ(d.ses_atomic, nullptr);
    EXPECT_EQ(d.depth, ref.depth);
    EXPECT_EQ(d.payload.data(), ref.payload.data());
    EXPECT_EQ(d.payload.size(), ref.payload.size());
  }
  // Expect: an error leaves the fields empty, not the garbage.
  auto bad = uet_write_frame();
  bad[kIp + 11] ^= 0x01;
  DecodedStorage storage;
  std::memset(static_cast<void*>(storage.slot()), 0xA5, sizeof(Decoded));
  EXPECT_EQ(decode_frame(bad, storage.slot()), WireError::kBadIpChecksum);
  EXPECT_EQ(storage.get().pds, nullptr);
  EXPECT_EQ(storage.get().udp, nullptr);
}

TEST(Decode_Options, ZeroUdpChecksumMeansNotComputed) {
  auto f = uet_write_frame();
  as<Udp>(f.data() + kUdp)->set_checksum(0);
  EXPECT_EQ(decode(f), WireError::kOk);
}

TEST(Decode_Options, CustomPorts) {
  auto f = uet_write_frame();
  as<Udp>(f.data() + kUdp)->set_dport(5432);  // the pre-1.0 kernel RFC's port
  reseal(f);
  EXPECT_EQ(decode(f), WireError::kUnsupportedUdpPort);
  DecodeOptions o;
  o.uet_udp_port = 5432;
  EXPECT_EQ(decode(f, o), WireError::kOk);
}

// Every prefix of a valid frame and random bytes: a typed error, never a crash or a read past
// the end (the sanitizer build checks the latter).
TEST(Decode_Robustness, EveryTruncationIsAnError) {
  for (const auto& full : {uet_write_frame(), roce_write_frame()}) {
    for (size_t n = 0; n < full.size(); ++n) {
      std::vector<uint8_t> f(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_NE(decode(f), WireError::kOk) << "prefix of " << n << " bytes";
    }
  }
}

TEST(Decode_Robustness, RandomBytesAndBitFlips) {
  std::mt19937_64 rng(20261129);
  const auto base = uet_write_frame();
  size_t ok = 0;
  for (int i = 0; i < 20000; ++i) {
    auto f = base;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) f[rng() % f.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    Decoded d;
    const WireError e = decode_frame(f, &d);
    if (e == WireError::kOk) ++ok;
    EXPECT_LT(static_cast<size_t>(e), kNumWireErrors);
  }
  // Flips in the MACs pass (nothing checks them); most others must be caught.
  EXPECT_LT(ok, 20000u / 4);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> f(rng() % 200);
    for (auto& b : f) b = static_cast<uint8_t>(rng());
    Decoded d;
    EXPECT_LT(static_cast<size_t>(decode_frame(f, &d)), kNumWireErrors);
  }
}

TEST(Builder_NoRoom, SmallBufferIsRefusedNotOverrun) {
  std::vector<uint8_t> buf(60);
  FrameBuilder b(buf, test_encap(kUetUdpPort));
  EXPECT_NE(b.add<PdsRudRod>(), nullptr);
  EXPECT_EQ(b.add<SesStandardRequest>(), nullptr);
  size_t n = 0;
  EXPECT_EQ(b.finish(&n), WireError::kNoRoom);
}

TEST(Builder_Encap, Ipv6VlanAndIpOnlyForms) {
  std::vector<uint8_t> buf(512);
  Encap e = test_encap(kUetUdpPort);
  e.ipv6 = true;
  e.vlan = true;
  e.vlan_tci = 0x6005;  // PCP 3, VID 5
  e.src_ip6[15] = 1;
  e.dst_ip6[15] = 2;
  e.ecn = 2;
  FrameBuilder b(buf, e);
  PdsAck* ack = b.add<PdsAck>();
  ack->set_type(PdsType::kAck);
  ack->set_cack_psn(77);
  size_t n = 0;
  ASSERT_EQ(b.finish(&n), WireError::kOk);
  Decoded d;
  ASSERT_EQ(decode_frame(std::span(buf.data(), n), &d), WireError::kOk);
  ASSERT_NE(d.vlan, nullptr);
  EXPECT_EQ(d.vlan->vid(), 5);
  EXPECT_EQ(d.vlan->pcp(), 3);
  ASSERT_NE(d.ipv6, nullptr);
  EXPECT_EQ(d.ecn, 2);
  EXPECT_EQ(d.pds_as<PdsAck>()->cack_psn(), 77u);

  Encap ip_only = test_encap(kUetUdpPort);
  ip_only.ip_only = true;
  ip_only.sport = 0xBEEF;  // the EV goes into the entropy header
  FrameBuilder b2(buf, ip_only);
  b2.add<PdsAck>()->set_type(PdsType::kAck);
  ASSERT_EQ(b2.finish(&n), WireError::kOk);
  ASSERT_EQ(decode_frame(std::span(buf.data(), n), &d), WireError::kOk);
  EXPECT_EQ(d.udp, nullptr);
  ASSERT_NE(d.entropy, nullptr);
  EXPECT_EQ(d.ev, 0xBEEF);
}

// A template reused for many frames writes each one as a fresh FrameBuilder from the Encap with
// that source port would, whatever was built from it before (the template is not changed).
TEST(Builder_Template, ReusedTemplateEqualsFreshEncapPerFrame) {
  const Encap base = test_encap(kUetUdpPort);
  const EncapTemplate t(base);
  std::mt19937 rng(5);
  for (int i = 0; i < 50; ++i) {
    const auto sport = static_cast<uint16_t>(rng());
    const size_t payload = rng() % 300;
    Encap e = base;
    e.sport = sport;
    std::vector<uint8_t> a(1024, 0xEE), b(1024, 0x11);
    FrameBuilder fa(a, t, sport), fb(b, e);
    for (FrameBuilder* f : {&fa, &fb}) {
      PdsRudRod* pds = f->add<PdsRudRod>();
      pds->set_type(PdsType::kRudReq);
      pds->set_psn(static_cast<uint32_t>(i));
      uint8_t* p = f->add_bytes(payload);
      ASSERT_NE(p, nullptr);
      for (size_t k = 0; k < payload; ++k) p[k] = static_cast<uint8_t>(k * 7 + i);
    }
    size_t na = 0, nb = 0;
    ASSERT_EQ(fa.finish(&na), WireError::kOk);
    ASSERT_EQ(fb.finish(&nb), WireError::kOk);
    ASSERT_EQ(na, nb);
    EXPECT_TRUE(std::equal(a.begin(), a.begin() + static_cast<ptrdiff_t>(na), b.begin())) << i;
    Decoded d;
    EXPECT_EQ(decode_frame(std::span(a.data(), na), &d), WireError::kOk);
    EXPECT_EQ(d.ev, sport);
  }
}

// The UDP checksum finish() takes from the template's kept pseudo-header sum is the one
// udp_checksum() computes over the whole datagram, over IPv4 and IPv6, any source port and
// odd or even lengths.
TEST(Builder_Template, UdpChecksumFromKeptSumEqualsFullSum) {
  std::mt19937 rng(11);
  for (const bool v6 : {false, true}) {
    Encap e = test_encap(kUetUdpPort);
    e.ipv6 = v6;
    e.src_ip4 = 0xFFFFFFFE;  // sums that carry
    e.src_ip6.fill(0xFF);
    e.dst_ip6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xAB, 0xCD};
    const EncapTemplate t(e);
    for (int i = 0; i < 200; ++i) {
      const auto sport = static_cast<uint16_t>(i < 2 ? 0xFFFF * i : rng());
      const size_t payload = rng() % 301;
      std::vector<uint8_t> buf(1024);
      FrameBuilder b(buf, t, sport);
      uint8_t* p = b.add_bytes(payload + 1);
      ASSERT_NE(p, nullptr);
      for (size_t k = 0; k <= payload; ++k) p[k] = static_cast<uint8_t>(rng());
      size_t n = 0;
      ASSERT_EQ(b.finish(&n), WireError::kOk);
      const size_t ip = kEth, udp = kEth + (v6 ? Ipv6::kSize : Ipv4::kSize);
      const Udp* u = as<Udp>(buf.data() + udp);
      ASSERT_EQ(u->length(), n - udp);
      EXPECT_EQ(u->checksum(), udp_checksum(buf.data() + ip, v6, buf.data() + udp, n - udp))
          << (v6 ? "v6 " : "v4 ") << i;
      // The receive check agrees (the bytes are no UET header: stop after UDP).
      DecodeOptions o;
      o.uet_udp_port = o.roce_udp_port = 1;
      Decoded d;
      EXPECT_EQ(decode_frame(std::span(buf.data(), n), &d, o), WireError::kUnsupportedUdpPort);
    }
  }
}

// finish(n, elided): IP and UDP lengths count the bytes carried by length, the IPv4 checksum
// is right for that length, the UDP checksum is 0 (it would cover absent bytes), and the
// frame decodes with DecodeOptions::elided.
TEST(Builder_Template, ElidedPayloadCountsInLengthsOnly) {
  std::vector<uint8_t> buf(256);
  const EncapTemplate t(test_encap(kUetUdpPort));
  FrameBuilder b(buf, t, 0xC777);
  PdsRudRod* pds = b.add<PdsRudRod>();
  pds->set_type(PdsType::kRudReq);
  pds->set_next_hdr(NextHeader::kReqStd);
  SesStandardRequest* ses = b.add<SesStandardRequest>();
  ses->set_opcode(SesOpcode::kWrite);
  ses->set_som(true);
  size_t n = 0;
  ASSERT_EQ(b.finish(&n, 4096), WireError::kOk);
  EXPECT_EQ(n, kL5 + PdsRudRod::kSize + SesStandardRequest::kSize);
  const Ipv4* ip = as<Ipv4>(buf.data() + kIp);
  EXPECT_EQ(ip->total_length(), n - kEth + 4096);
  EXPECT_EQ(ip->checksum(), ipv4_header_checksum(ip->raw, Ipv4::kSize));
  EXPECT_EQ(as<Udp>(buf.data() + kUdp)->length(), n - kUdp + 4096);
  EXPECT_EQ(as<Udp>(buf.data() + kUdp)->checksum(), 0);
  DecodeOptions o;
  o.elided = 4096;
  Decoded d;
  EXPECT_EQ(decode_frame(std::span(buf.data(), n), &d, o), WireError::kOk);
  // More than 64 KiB with the elided bytes: refused, not wrapped.
  FrameBuilder big(buf, t, 1);
  EXPECT_EQ(big.finish(&n, 0x10000), WireError::kNoRoom);
}

}  // namespace
}  // namespace uet::wire
