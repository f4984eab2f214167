// wire_bench: the wire codec's cost per frame, UET next to RoCEv2 (Google Benchmark).
//
//   BM_Encode/{uet,rocev2}          build one full data frame (headers, 4 KiB payload copy,
//                                   lengths, IPv4 checksum, UET: UDP checksum, RoCEv2: ICRC)
//   BM_Decode/{uet,rocev2}          decode_frame with every check on (UDP checksum / ICRC)
//   BM_DecodeNoVerify/{uet,rocev2}  the same with the UDP checksum and ICRC checks off
//   BM_Checksum/N/{uet_udp,rocev2_icrc}  the integrity check alone over N bytes
//   BM_Csum/N/{portable,vector,copy,memcpy_then_sum}  the UDP checksum's sum alone: the
//                                   portable code, the vector kernel, the sum fused with a
//                                   copy of the N bytes, and a memcpy followed by the sum
//   BM_Place/4096/{check_then_copy,fused}  receive placement into a large region: the sum,
//                                   then a copy (the engines), against the sum while copying
//   BM_Crc32/N/{zlib,isal}          the ICRC's CRC-32 over N bytes: zlib's table code against
//                                   ISA-L's carry-less multiply (what compute_icrc uses)
//
// The frames: UET  = Eth/IPv4/UDP/PDS RUD_REQ/SES standard request (WRITE, SOM+EOM)/4096 B,
//                    UDP checksum on;
//             RoCE = Eth/IPv4/UDP/BTH RC RDMA WRITE ONLY/RETH/4096 B/ICRC, UDP checksum 0
//                    (what RoCEv2 NICs send).
// Time is per frame (per call for BM_Checksum); items are frames, bytes are frame bytes.
// With console output, a table of UET/RoCEv2 ratios of the medians follows the results.
// Run: build/bin/wire_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/ratio_reporter.h"
#include "transport/transport.h"
#include "transport/tss/sublayer.h"
#include "transport/wire/builder.h"
#include "transport/wire/checksum.h"
#include "transport/wire/decode.h"
#include "transport/wire/icrc.h"

namespace uet::wire {
namespace {

enum class Proto { kUet, kRocev2 };

constexpr size_t kPayloadSize = 4096;
constexpr size_t kBufferSize = 9216;  // jumbo frame
constexpr size_t kChecksumSizes[] = {64, 1024, 4096, 9000};

const std::vector<uint8_t>& payload() {
  static const std::vector<uint8_t> p = [] {
    std::vector<uint8_t> v(kPayloadSize);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 131 + 7);
    return v;
  }();
  return p;
}

Encap encap_for(Proto p) {
  Encap e;
  e.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  e.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  e.src_ip4 = 0x0A000001;
  e.dst_ip4 = 0x0A000002;
  e.dscp = kDscpData;
  e.ecn = 2;  // ECT(0)
  e.sport = 0xC123;
  if (p == Proto::kUet) {
    e.dport = kUetUdpPort;
    e.udp_checksum = true;
  } else {
    e.dport = kRoceUdpPort;
    e.udp_checksum = false;
    e.icrc = true;
  }
  return e;
}

// One single-packet RDMA WRITE as UET (spec/uet.md §3.3, §4.2). Returns the frame length, 0 if
// the buffer is too small.
size_t encode_uet(std::span<uint8_t> buf, const Encap& e, uint32_t psn,
                  std::span<const uint8_t> data) {
  FrameBuilder b(buf, e);
  PdsRudRod* pds = b.add<PdsRudRod>();
  SesStandardRequest* ses = b.add<SesStandardRequest>();
  if (pds == nullptr || ses == nullptr) return 0;
  pds->set_type(PdsType::kRudReq);
  pds->set_next_hdr(NextHeader::kReqStd);
  pds->set_ar(true);
  pds->set_psn(psn);
  pds->set_spdcid(17);
  pds->set_dpdcid(42);
  ses->set_opcode(SesOpcode::kWrite);
  ses->set_ver(kSesVersion);
  ses->set_som(true);
  ses->set_eom(true);
  ses->set_message_id(static_cast<uint16_t>(psn));
  ses->set_job_id(0x1234);
  ses->set_pid_on_fep(7);
  ses->set_resource_index(3);
  ses->set_buffer_offset(uint64_t{psn} * kPayloadSize);
  ses->set_initiator(0x0A000001);
  ses->set_match_bits(0xABCD'EF01'2345'6789);  // memory key
  ses->set_request_length(static_cast<uint32_t>(data.size()));
  b.append(data);
  size_t len = 0;
  return b.finish(&len) == WireError::kOk ? len : 0;
}

// The same WRITE as RoCEv2 RC (spec/rocev2.md §2, §3.1).
size_t encode_rocev2(std::span<uint8_t> buf, const Encap& e, uint32_t psn,
                     std::span<const uint8_t> data) {
  FrameBuilder b(buf, e);
  Bth* bth = b.add<Bth>();
  Reth* reth = b.add<Reth>();
  if (bth == nullptr || reth == nullptr) return 0;
  const size_t pad = (4 - data.size() % 4) % 4;
  bth->set_opcode(RoceOpcode::kRcWriteOnly);
  bth->set_pad_cnt(static_cast<uint8_t>(pad));
  bth->set_pkey(ROCEV2_DEFAULT_PKEY);
  bth->set_dest_qp(0x000123);
  bth->set_ack_req(true);
  bth->set_psn(psn & 0xFFFFFF);
  reth->set_va(0x7F00'0000'0000 + uint64_t{psn} * kPayloadSize);
  reth->set_rkey(0xABCD'EF01);
  reth->set_dma_length(static_cast<uint32_t>(data.size()));
  b.append(data);
  b.add_bytes(pad);
  size_t len = 0;
  return b.finish(&len) == WireError::kOk ? len : 0;
}

size_t encode(Proto p, std::span<uint8_t> buf, const Encap& e, uint32_t psn) {
  return p == Proto::kUet ? encode_uet(buf, e, psn, payload())
                          : encode_rocev2(buf, e, psn, payload());
}

void BM_Encode(benchmark::State& state, Proto p) {
  std::vector<uint8_t> buf(kBufferSize);
  const Encap e = encap_for(p);
  uint32_t psn = 0;
  size_t len = 0;
  for (auto _ : state) {
    len = encode(p, buf, e, psn++);
    benchmark::DoNotOptimize(len);
    benchmark::ClobberMemory();
  }
  if (len == 0) state.SkipWithError("encode failed");
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(len));
  state.counters["frame_B"] = static_cast<double>(len);
}

void BM_Decode(benchmark::State& state, Proto p, bool verify) {
  std::vector<uint8_t> buf(kBufferSize);
  const size_t len = encode(p, buf, encap_for(p), 1);
  const std::span<const uint8_t> frame(buf.data(), len);
  DecodeOptions opts;
  opts.verify_udp_checksum = verify;
  opts.verify_icrc = verify;
  Decoded d;
  if (len == 0 || decode_frame(frame, &d, opts) != WireError::kOk) {
    state.SkipWithError("frame does not decode");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    const WireError err = decode_frame(frame, &d, opts);
    benchmark::DoNotOptimize(err);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(len));
  state.counters["frame_B"] = static_cast<double>(len);
}

// The integrity check alone over n bytes: UET's UDP checksum (pseudo-header + n-byte datagram)
// and RoCEv2's ICRC (CRC-32 over n bytes from the IPv4 header on, with the masked copy).
void BM_Checksum(benchmark::State& state, Proto p, size_t n) {
  constexpr size_t kIp = 20;
  std::vector<uint8_t> buf(kIp + n);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 37 + 1);
  buf[0] = 0x45;
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    if (p == Proto::kUet) {
      const uint16_t c = udp_checksum(buf.data(), false, buf.data() + kIp, n);
      benchmark::DoNotOptimize(c);
    } else {
      const uint32_t c = compute_icrc(buf.data(), n, false, kIp);
      benchmark::DoNotOptimize(c);
    }
  }
  const auto bytes = static_cast<double>(state.iterations()) * static_cast<double>(n);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
  state.counters["GB"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsRate);
}

enum class Csum { kPortable, kVector, kCopy, kMemcpyThenSum };

// The RFC 1071 sum over n bytes, alone or with a copy of them (what placement does).
void BM_Csum(benchmark::State& state, Csum kind, size_t n) {
  std::vector<uint8_t> src(n), dst(n);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(i * 37 + 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(src.data());
    uint64_t sum = 0;
    switch (kind) {
      case Csum::kPortable: sum = detail::csum_add_portable(0, src.data(), n); break;
      case Csum::kVector: sum = csum_add(0, src.data(), n); break;
      case Csum::kCopy: sum = csum_copy(0, dst.data(), src.data(), n); break;
      case Csum::kMemcpyThenSum:
        std::memcpy(dst.data(), src.data(), n);
        sum = csum_add(0, src.data(), n);
        break;
    }
    benchmark::DoNotOptimize(sum);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

// Receive placement of a 4 KiB payload: a received frame (in cache, as after the NIC's DMA and
// the header decode) into a 64 MiB target region, a new 4 KiB slot each time. check_then_copy
// is what the engines do (the sum, then a copy from L1); fused sums while it copies, which
// would write the region before the check has passed.
void BM_Place(benchmark::State& state, bool fused) {
  constexpr size_t kPayload = 4096, kRegion = size_t{64} << 20;
  std::vector<uint8_t> frame(kPayload), region(kRegion);
  for (size_t i = 0; i < kPayload; ++i) frame[i] = static_cast<uint8_t>(i * 37 + 1);
  size_t at = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(frame.data());
    uint64_t sum = 0;
    if (fused) {
      sum = csum_copy(0, region.data() + at, frame.data(), kPayload);
    } else {
      sum = csum_add(0, frame.data(), kPayload);
      std::memcpy(region.data() + at, frame.data(), kPayload);
    }
    benchmark::DoNotOptimize(sum);
    benchmark::ClobberMemory();
    at = (at + kPayload) % kRegion;
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kPayload));
}

// The CRC-32 alone, zlib against ISA-L (icrc_crc32): the same value, checked once.
void BM_Crc32(benchmark::State& state, bool isal, size_t n) {
  std::vector<uint8_t> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<uint8_t>(i * 37 + 1);
  if (icrc_crc32(0, buf.data(), n) != crc32(0, buf.data(), static_cast<uInt>(n))) {
    state.SkipWithError("ISA-L and zlib disagree");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    const uint32_t c = isal ? icrc_crc32(0, buf.data(), n)
                            : static_cast<uint32_t>(crc32(0, buf.data(), static_cast<uInt>(n)));
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

// TSS (spec/uet.md §5.2): sealing and opening n bytes after the TSS header (AES-256-GCM from
// `backend`, AAD as a sealed UET/UDP frame has it), against the UDP checksum over the same
// bytes, which a sealed frame still carries.
void BM_Tss(benchmark::State& state, bool seal, size_t n, tss::Backend backend) {
  tss::TssConfig c;
  c.enabled = true;
  c.backend = backend;
  tss::DomainConfig d;
  d.key[0].fill(0x5A);
  d.installed[0] = true;
  c.domains.push_back(d);
  auto tx = tss::Sublayer::create(c, 0x0A000001);
  auto rx = tss::Sublayer::create(c, 0x0A000002);
  if (!tx.ok() || !rx.ok()) {
    state.SkipWithError(("TSS set-up failed: " + std::string(tx.ok() ? "" : tx.status().message())).c_str());
    return;
  }
  // Ethernet, IPv4, UDP, the TSS header, n bytes, the tag.
  constexpr size_t kTss = 14 + 20 + 8;
  std::vector<uint8_t> frame(kTss + 12 + n + tss::kTagBytes);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>(i * 37 + 1);
  tss::SealLayout l;
  l.l3 = 14;
  l.l4 = 34;
  l.tss = kTss;
  const size_t len = frame.size() - tss::kTagBytes;
  std::vector<uint8_t> sealed;
  Decoded dec;
  if (!seal) {  // one sealed frame, opened afresh each time from a copy
    (*tx)->seal(frame.data(), len, l);
    sealed = frame;
    dec.ipv4 = as<Ipv4>(sealed.data() + 14);
    dec.udp = as<Udp>(sealed.data() + 34);
    dec.tss = as<Tss>(sealed.data() + kTss);
  }
  uint64_t counter = 0;
  for (auto _ : state) {
    if (seal) {
      benchmark::DoNotOptimize((*tx)->seal(frame.data(), len, l));
    } else {
      // Each open needs a counter the replay window has not seen: rewrite the TSC and accept
      // the bad tag that gives (the work done is the same: the tag is checked last).
      std::memcpy(frame.data(), sealed.data(), sealed.size());
      frame[kTss + 11] = static_cast<uint8_t>(++counter);
      frame[kTss + 10] = static_cast<uint8_t>(counter >> 8);
      dec.ipv4 = as<Ipv4>(frame.data() + 14);
      dec.udp = as<Udp>(frame.data() + 34);
      dec.tss = as<Tss>(frame.data() + kTss);
      dec.sealed = std::span<const uint8_t>(frame.data() + kTss + 12, n + tss::kTagBytes);
      std::span<uint8_t> plain;
      tss::Drop why;
      benchmark::DoNotOptimize((*rx)->open(frame.data(), dec, &plain, &why));
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

// Server mode (spec/uet.md §5.3): what a server pays for a client whose key it does not hold:
// the "U2" derivation (three CMAC blocks under the domain key, keyed once as the sublayer
// keeps it) and the key schedule and GHASH table of `backend`.
// `keyed_once` false: client_key() as a key manager calls it, a CMAC context built and keyed
// per derivation (for comparison).
void BM_TssClientKey(benchmark::State& state, tss::Backend backend, bool keyed_once) {
  tss::Key master;
  master.fill(0x5A);
  tss::Kdf kdf;
  if (!kdf.set_key(master)) {
    state.SkipWithError("the CMAC did not key");
    return;
  }
  tss::Gcm gcm;
  uint32_t client = 0x0B000000;
  for (auto _ : state) {
    tss::DerivedKey k;
    ++client;
    benchmark::DoNotOptimize(
        keyed_once ? kdf.derive(UET_TSS_LABEL_SERVER, tss::kdf_context4(0, 0, client), &k)
                   : tss::client_key(master, 0, client, &k));
    benchmark::DoNotOptimize(gcm.set_key(k.key, true, backend));
  }
}

void register_all() {
  using benchmark::RegisterBenchmark;
  constexpr std::pair<Proto, const char*> kProtos[] = {{Proto::kUet, "uet"},
                                                       {Proto::kRocev2, "rocev2"}};
  for (const auto& [p, tag] : kProtos)
    RegisterBenchmark(("BM_Encode/" + std::string(tag)).c_str(), BM_Encode, p)
        ->Unit(benchmark::kNanosecond);
  for (const auto& [p, tag] : kProtos)
    RegisterBenchmark(("BM_Decode/" + std::string(tag)).c_str(), BM_Decode, p, true)
        ->Unit(benchmark::kNanosecond);
  for (const auto& [p, tag] : kProtos)
    RegisterBenchmark(("BM_DecodeNoVerify/" + std::string(tag)).c_str(), BM_Decode, p, false)
        ->Unit(benchmark::kNanosecond);
  for (size_t n : kChecksumSizes) {
    const std::string base = "BM_Checksum/" + std::to_string(n) + "/";
    RegisterBenchmark((base + "uet_udp").c_str(), BM_Checksum, Proto::kUet, n)
        ->Unit(benchmark::kNanosecond);
    RegisterBenchmark((base + "rocev2_icrc").c_str(), BM_Checksum, Proto::kRocev2, n)
        ->Unit(benchmark::kNanosecond);
  }
  for (size_t n : kChecksumSizes) {
    const std::string base = "BM_Csum/" + std::to_string(n) + "/";
    constexpr std::pair<Csum, const char*> kKinds[] = {{Csum::kPortable, "portable"},
                                                       {Csum::kVector, "vector"},
                                                       {Csum::kCopy, "copy"},
                                                       {Csum::kMemcpyThenSum, "memcpy_then_sum"}};
    for (const auto& [k, tag] : kKinds)
      RegisterBenchmark((base + tag).c_str(), BM_Csum, k, n)->Unit(benchmark::kNanosecond);
  }
  RegisterBenchmark("BM_Place/4096/check_then_copy", BM_Place, false)->Unit(benchmark::kNanosecond);
  RegisterBenchmark("BM_Place/4096/fused", BM_Place, true)->Unit(benchmark::kNanosecond);
  for (size_t n : kChecksumSizes) {
    const std::string base = "BM_Crc32/" + std::to_string(n) + "/";
    RegisterBenchmark((base + "zlib").c_str(), BM_Crc32, false, n)->Unit(benchmark::kNanosecond);
    RegisterBenchmark((base + "isal").c_str(), BM_Crc32, true, n)->Unit(benchmark::kNanosecond);
  }
  // Each backend side by side: BM_Tss/4096/seal/ipsec-mb beside BM_Tss/4096/seal/openssl.
  for (size_t n : kChecksumSizes) {
    for (const char* op : {"seal", "open"}) {
      for (tss::Backend b : {tss::Backend::kIpsecMb, tss::Backend::kOpenSsl}) {
        const std::string name = "BM_Tss/" + std::to_string(n) + "/" + op + "/" +
                                 tss::backend_name(b);
        RegisterBenchmark(name.c_str(), BM_Tss, std::string_view(op) == "seal", n, b)
            ->Unit(benchmark::kNanosecond);
      }
    }
  }
  for (tss::Backend b : {tss::Backend::kIpsecMb, tss::Backend::kOpenSsl}) {
    for (const bool once : {true, false}) {
      RegisterBenchmark(("BM_TssClientKey/" + std::string(tss::backend_name(b)) +
                         (once ? "/keyed_once" : "/per_call"))
                            .c_str(),
                        BM_TssClientKey, b, once)
          ->Unit(benchmark::kNanosecond);
    }
  }
}


}  // namespace
}  // namespace uet::wire

int main(int argc, char** argv) {
  return uet::bench::ratio_main(
      argc, argv, uet::wire::register_all,
      "UET / RoCEv2, median real time per frame (per call for BM_Checksum); ratio < 1: UET "
      "costs less");
}
