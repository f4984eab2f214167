// uet-wire-ab: the same RDMA WRITE as real UET frames and as real RoCEv2 frames, side by side.
//
// For one message it builds every packet of both transports with the project's codecs,
// decodes them back, places each payload at its offset and checks the message arrived intact;
// then it reports packets, header bytes, wire efficiency and the goodput ceiling at a line
// rate, and how fast the codecs build and parse the frames (median of repeated runs, one core).
// What it does not model: ACKs, loss, congestion, the fabric. That is the A/B runner's job.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/flag_check.h"
#include "transport/transport.h"
#include "transport/wire/builder.h"
#include "transport/wire/decode.h"
#include "transport/wire/pcap.h"

ABSL_FLAG(uint64_t, size, 1 << 20, "message size in bytes, 1..1073741824");
ABSL_FLAG(uint32_t, mtu, 4096, "payload bytes per packet: 256, 512, 1024, 2048 or 4096");
ABSL_FLAG(double, gbps, 400, "line rate in Gb/s for the goodput ceiling, 1..3200");
ABSL_FLAG(uint32_t, reps, 9, "timed repetitions of encode and decode (median reported), 1..1000");
ABSL_FLAG(std::string, pcap, "", "directory to write uet.pcap and rocev2.pcap into (optional)");
ABSL_FLAG(std::string, json, "", "file to write the results to as JSON (optional)");

namespace uet::wire {
namespace {

// Ethernet preamble + SFD (8), inter-frame gap (12) and FCS (4): bytes on the wire per frame
// that no header counts.
constexpr size_t kEthOverhead = 8 + 12 + 4;

struct Message {
  uint64_t remote_va = 0x7f0000000000;
  uint32_t rkey = 0x2b8;
  uint32_t job_id = 0x000101;
  uint16_t message_id = 1;
  uint32_t first_psn = 0x00F00000;
  std::vector<uint8_t> data;
};

Encap base_encap(uint16_t dport, uint16_t sport) {
  Encap e;
  e.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  e.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  e.src_ip4 = 0x0A000001;  // 10.0.0.1 -> 10.0.0.2
  e.dst_ip4 = 0x0A000002;
  e.dscp = kDscpData;
  e.ecn = 2;  // ECT(0)
  e.sport = sport;
  e.dport = dport;
  return e;
}

// UET RUD request per packet: PDS RUD_REQ + SES standard WRITE header. The first packet has
// SOM=1 (header data), later ones SOM=0 with payload length and message offset (uet.md §4.2).
// The EV (UDP source port) changes per packet: the sender sprays.
size_t encode_uet_packet(const Message& m, size_t i, size_t mtu, std::span<uint8_t> out) {
  const size_t offset = i * mtu;
  const size_t len = std::min(mtu, m.data.size() - offset);
  Encap e = base_encap(kUetUdpPort, wire::dynamic_port(static_cast<uint32_t>(i) * 0x9E37u));
  FrameBuilder b(out, e);
  PdsRudRod* pds = b.add<PdsRudRod>();
  SesStandardRequest* ses = b.add<SesStandardRequest>();
  uint8_t* payload = b.add_bytes(len);
  if (payload == nullptr) return 0;
  pds->set_type(PdsType::kRudReq);
  pds->set_next_hdr(NextHeader::kReqStd);
  pds->set_psn(m.first_psn + static_cast<uint32_t>(i));
  pds->set_spdcid(1);
  pds->set_dpdcid(1);
  ses->set_opcode(SesOpcode::kWrite);
  ses->set_message_id(m.message_id);
  ses->set_job_id(m.job_id);
  ses->set_buffer_offset(m.remote_va);
  ses->set_match_bits(m.rkey);
  ses->set_request_length(static_cast<uint32_t>(m.data.size()));
  ses->set_som(i == 0);
  ses->set_eom(offset + len == m.data.size());
  if (i != 0) {
    ses->set_payload_length(static_cast<uint16_t>(len));
    ses->set_message_offset(static_cast<uint32_t>(offset));
  }
  std::memcpy(payload, m.data.data() + offset, len);
  size_t n = 0;
  return b.finish(&n) == WireError::kOk ? n : 0;
}

// RoCEv2 RC RDMA WRITE FIRST (RETH) / MIDDLE / LAST, or ONLY (RETH); one UDP source port per
// QP (rocev2.md §1); ICRC last.
size_t encode_roce_packet(const Message& m, size_t i, size_t mtu, std::span<uint8_t> out) {
  const size_t n_pkts = (m.data.size() + mtu - 1) / mtu;
  const size_t offset = i * mtu;
  const size_t len = std::min(mtu, m.data.size() - offset);
  const size_t pad = (4 - len % 4) % 4;
  Encap e = base_encap(kRoceUdpPort, 0xC011);
  e.icrc = true;
  e.udp_checksum = false;  // as RoCEv2 NICs send it
  FrameBuilder b(out, e);
  Bth* bth = b.add<Bth>();
  RoceOpcode op;
  if (n_pkts == 1) {
    op = RoceOpcode::kRcWriteOnly;
  } else if (i == 0) {
    op = RoceOpcode::kRcWriteFirst;
  } else if (i + 1 == n_pkts) {
    op = RoceOpcode::kRcWriteLast;
  } else {
    op = RoceOpcode::kRcWriteMiddle;
  }
  if (op == RoceOpcode::kRcWriteOnly || op == RoceOpcode::kRcWriteFirst) {
    Reth* reth = b.add<Reth>();
    if (reth == nullptr) return 0;
    reth->set_va(m.remote_va);
    reth->set_rkey(m.rkey);
    reth->set_dma_length(static_cast<uint32_t>(m.data.size()));
  }
  uint8_t* payload = b.add_bytes(len + pad);
  if (payload == nullptr) return 0;
  bth->set_opcode(op);
  bth->set_pad_cnt(static_cast<uint8_t>(pad));
  bth->set_pkey(ROCEV2_DEFAULT_PKEY);
  bth->set_dest_qp(0x000011);
  bth->set_ack_req(i + 1 == n_pkts);
  bth->set_psn((m.first_psn + static_cast<uint32_t>(i)) & 0xFFFFFF);
  std::memcpy(payload, m.data.data() + offset, len);
  size_t n = 0;
  return b.finish(&n) == WireError::kOk ? n : 0;
}

// Decodes one frame and places its payload; returns false on any error.
bool place_uet(std::span<const uint8_t> frame, size_t mtu, std::vector<uint8_t>& dst,
               WireError* err) {
  Decoded d;
  *err = decode_frame(frame, &d);
  if (*err != WireError::kOk) return false;
  const SesStandardRequest* ses = d.ses_as<SesStandardRequest>();
  if (ses == nullptr) return false;
  const size_t offset = ses->som() ? 0 : ses->message_offset();
  (void)mtu;
  if (offset + d.payload.size() > dst.size()) return false;
  std::memcpy(dst.data() + offset, d.payload.data(), d.payload.size());
  return true;
}

bool place_roce(std::span<const uint8_t> frame, size_t mtu, uint32_t first_psn,
                std::vector<uint8_t>& dst, WireError* err) {
  Decoded d;
  *err = decode_frame(frame, &d);
  if (*err != WireError::kOk) return false;
  const size_t index = (d.bth->psn() - first_psn) & 0xFFFFFF;
  const size_t offset = index * mtu;
  if (offset + d.payload.size() > dst.size()) return false;
  std::memcpy(dst.data() + offset, d.payload.data(), d.payload.size());
  return true;
}

struct Side {
  const char* name;
  size_t packets = 0;
  size_t frame_bytes = 0;       // sum of frame lengths (Ethernet header .. ICRC, no FCS)
  size_t first_header = 0;      // header bytes of the first packet
  size_t middle_header = 0;     // header bytes of a middle packet
  double encode_ns = 0;         // per packet, median
  double decode_ns = 0;         // per packet, decode + place, median
  bool intact = false;
  std::string error;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename Encode, typename Place>
Side run_side(const char* name, const Message& m, size_t mtu, uint32_t reps, Encode encode,
              Place place) {
  Side s;
  s.name = name;
  s.packets = (m.data.size() + mtu - 1) / mtu;
  constexpr size_t kSlot = 4096 + 256;
  std::vector<uint8_t> pool(s.packets * kSlot);
  std::vector<size_t> lens(s.packets);
  std::vector<uint8_t> dst(m.data.size());

  std::vector<double> enc, dec;
  for (uint32_t r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < s.packets; ++i)
      lens[i] = encode(m, i, mtu, std::span<uint8_t>(pool.data() + i * kSlot, kSlot));
    auto t1 = std::chrono::steady_clock::now();
    std::fill(dst.begin(), dst.end(), 0);
    bool ok = true;
    WireError err = WireError::kOk;
    // Deliver in reverse order: RDMA placement by offset does not need order.
    auto t2 = std::chrono::steady_clock::now();
    for (size_t i = s.packets; i-- > 0;) {
      if (lens[i] == 0 ||
          !place(std::span<const uint8_t>(pool.data() + i * kSlot, lens[i]), mtu, dst, &err)) {
        ok = false;
      }
    }
    auto t3 = std::chrono::steady_clock::now();
    enc.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(s.packets));
    dec.push_back(std::chrono::duration<double, std::nano>(t3 - t2).count() / double(s.packets));
    if (r == 0) {
      s.intact = ok && dst == m.data;
      if (!ok) s.error = "decode failed: " + std::string(to_string(err));
    }
  }
  s.encode_ns = median(enc);
  s.decode_ns = median(dec);
  for (size_t i = 0; i < s.packets; ++i) s.frame_bytes += lens[i];
  const size_t first_payload = std::min(mtu, m.data.size());
  s.first_header = lens[0] - first_payload;
  if (s.packets > 2) s.middle_header = lens[1] - mtu;
  else s.middle_header = s.first_header;
  return s;
}

absl::Status write_pcaps(const std::string& dir, const Message& m, size_t mtu, double gbps) {
  for (int which = 0; which < 2; ++which) {
    const std::string path = absl::StrCat(dir, which == 0 ? "/uet.pcap" : "/rocev2.pcap");
    auto w = PcapWriter::open(path);
    if (!w.ok()) return w.status();
    const size_t n = (m.data.size() + mtu - 1) / mtu;
    std::vector<uint8_t> buf(4096 + 256);
    double t_ns = 0;
    for (size_t i = 0; i < n; ++i) {
      const size_t len = which == 0 ? encode_uet_packet(m, i, mtu, buf) : encode_roce_packet(m, i, mtu, buf);
      if (auto st = w->write(std::span<const uint8_t>(buf.data(), len), static_cast<uint64_t>(t_ns));
          !st.ok()) {
        return st;
      }
      t_ns += double(len + kEthOverhead) * 8 / gbps;  // back to back at line rate
    }
    if (auto st = w->close(); !st.ok()) return st;
    std::printf("wrote %s (%zu frames)\n", path.c_str(), n);
  }
  return absl::OkStatus();
}

struct Options {
  uint64_t size = 0;
  uint32_t mtu = 0;
  double gbps = 0;
  uint32_t reps = 0;
};

// The flags, in range; false after naming the one that is not.
bool read_options(Options& o) {
  o.size = absl::GetFlag(FLAGS_size);
  o.mtu = absl::GetFlag(FLAGS_mtu);
  o.gbps = absl::GetFlag(FLAGS_gbps);
  o.reps = absl::GetFlag(FLAGS_reps);
  if (o.size < 1 || o.size > (uint64_t{1} << 30)) {
    std::fprintf(stderr, "--size=%lu out of range: 1..1073741824 bytes\n", o.size);
    return false;
  }
  if (!bench::is_roce_mtu(o.mtu)) {
    std::fprintf(stderr, "--mtu=%u invalid: one of %s\n", o.mtu, bench::kRoceMtus);
    return false;
  }
  if (!(o.gbps >= 1 && o.gbps <= 3200)) {
    std::fprintf(stderr, "--gbps=%g out of range: 1..3200\n", o.gbps);
    return false;
  }
  if (o.reps < 1 || o.reps > 1000) {
    std::fprintf(stderr, "--reps=%u out of range: 1..1000\n", o.reps);
    return false;
  }
  return true;
}

Message make_message(uint64_t size) {
  Message m;
  m.data.resize(size);
  uint64_t x = 0x9E3779B97F4A7C15ULL;  // deterministic content
  for (auto& b : m.data) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  return m;
}

double wire_bytes(const Side& s) { return double(s.frame_bytes + s.packets * kEthOverhead); }
double efficiency(const Side& s, uint64_t size) { return double(size) / wire_bytes(s); }

void print_table(const Options& o, const Side& uet, const Side& roce) {
  auto ratio = [](double a, double b) { return b == 0 ? 0.0 : a / b; };
  std::printf("RDMA WRITE of %lu bytes, %u-byte payload per packet, %.0f Gb/s line rate\n",
              o.size, o.mtu, o.gbps);
  std::printf("(IPv4, no VLAN; wire bytes count Ethernet preamble, IFG and FCS: %zu B/frame)\n\n",
              kEthOverhead);
  std::printf("%-34s %18s %18s %10s\n", "", uet.name, roce.name, "UET/RoCEv2");
  auto row = [&](const char* what, double a, double b, const char* fmt) {
    std::printf("%-34s ", what);
    std::printf(fmt, a);
    std::printf(" ");
    std::printf(fmt, b);
    std::printf(" %10.3f\n", ratio(a, b));
  };
  const double eff_uet = efficiency(uet, o.size), eff_roce = efficiency(roce, o.size);
  row("packets", double(uet.packets), double(roce.packets), "%18.0f");
  row("header bytes, first packet", double(uet.first_header), double(roce.first_header), "%18.0f");
  row("header bytes, other packets", double(uet.middle_header), double(roce.middle_header), "%18.0f");
  row("bytes on the wire", wire_bytes(uet), wire_bytes(roce), "%18.0f");
  row("wire efficiency (%)", 100 * eff_uet, 100 * eff_roce, "%18.2f");
  row("goodput ceiling (Gb/s)", o.gbps * eff_uet, o.gbps * eff_roce, "%18.2f");
  row("encode, ns/packet (median)", uet.encode_ns, roce.encode_ns, "%18.1f");
  row("decode+place, ns/packet (median)", uet.decode_ns, roce.decode_ns, "%18.1f");
  row("codec Mpps, one core (enc+dec)", 1e3 / (uet.encode_ns + uet.decode_ns),
      1e3 / (roce.encode_ns + roce.decode_ns), "%18.2f");
  std::printf("\nintegrity: UET %s, RoCEv2 %s (every frame decoded, payload placed by offset, "
              "delivered in reverse order)\n",
              uet.intact ? "intact" : ("BROKEN: " + uet.error).c_str(),
              roce.intact ? "intact" : ("BROKEN: " + roce.error).c_str());
}

// False: the file could not be opened (named on stderr).
bool write_json(const std::string& path, const Options& o, const Side& uet, const Side& roce) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "--json=%s: cannot open for writing\n", path.c_str());
    return false;
  }
  std::fprintf(f, "[\n");
  for (int i = 0; i < 2; ++i) {
    const Side& s = i == 0 ? uet : roce;
    std::fprintf(f,
                 "  {\"scenario\": \"wire-write\", \"transport\": \"%s\", \"packets\": %zu, "
                 "\"header_bytes_first\": %zu, \"header_bytes_other\": %zu, "
                 "\"wire_bytes\": %.0f, \"wire_efficiency\": %.6f, \"goodput_ceiling_gbps\": "
                 "%.3f, \"encode_ns\": %.2f, \"decode_ns\": %.2f, \"intact\": %s, "
                 "\"params\": {\"size\": %lu, \"mtu\": %u, \"gbps\": %g, \"reps\": %u}}%s\n",
                 i == 0 ? "uet" : "rocev2", s.packets, s.first_header, s.middle_header,
                 wire_bytes(s), efficiency(s, o.size), o.gbps * efficiency(s, o.size), s.encode_ns,
                 s.decode_ns, s.intact ? "true" : "false", o.size, o.mtu, o.gbps, o.reps,
                 i == 0 ? "," : "");
  }
  std::fprintf(f, "]\n");
  std::fclose(f);
  return true;
}

int run() {
  Options o;
  if (!read_options(o)) return 2;
  const Message m = make_message(o.size);
  const Side uet = run_side("UET (RUD, SES std)", m, o.mtu, o.reps, encode_uet_packet, place_uet);
  const Side roce = run_side(
      "RoCEv2 (RC WRITE)", m, o.mtu, o.reps, encode_roce_packet,
      [&](std::span<const uint8_t> f, size_t mt, std::vector<uint8_t>& dst, WireError* err) {
        return place_roce(f, mt, m.first_psn, dst, err);
      });
  print_table(o, uet, roce);
  if (const std::string dir = absl::GetFlag(FLAGS_pcap); !dir.empty()) {
    if (auto st = write_pcaps(dir, m, o.mtu, o.gbps); !st.ok()) {
      std::fprintf(stderr, "--pcap=%s: %s\n", dir.c_str(), std::string(st.message()).c_str());
      return 1;
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    if (!write_json(path, o, uet, roce)) return 1;
  }
  return uet.intact && roce.intact ? 0 : 1;
}

}  // namespace
}  // namespace uet::wire

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "uet-wire-ab: one RDMA WRITE as UET and as RoCEv2 frames, side by side.\n"
      "Usage: uet-wire-ab [--size=BYTES] [--mtu=BYTES] [--gbps=N] [--pcap=DIR] [--json=FILE]");
  absl::ParseCommandLine(argc, argv);
  return uet::wire::run();
}
