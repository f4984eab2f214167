// The golden vectors of spec/vectors/ (format: spec/vectors/README.md), written by an
// independent encoder (spec/vectors/gen_vectors.py), against the C++ codec:
//   Decode:   decode_frame() gives the expected error; for good frames every field of every
//             decoded header has the value the vector states, and the payload matches.
//   ReEncode: FrameBuilder, fed the decoded values, rebuilds the frame byte for byte
//             (lengths, IPv4 and UDP checksums, ICRC).
// One test per vector file, named after it in CTest: Vectors_File.Decode/uet_ack_cc_nscc.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "transport/wire/builder.h"
#include "transport/wire/decode.h"
#include "transport/wire/field.h"
#include "transport/wire/registry.h"
#include "transport/wire/wire_error.h"
#include "transport/tss/sublayer.h"

#ifndef UET_VECTORS_DIR
#error "UET_VECTORS_DIR must name the spec/vectors directory"
#endif

namespace uet::wire {
namespace {

struct Expect {
  std::string header;
  std::string field;
  std::string value;
  int line = 0;
};

struct Vector {
  std::string name;  // file name without .vec
  std::string path;
  std::vector<uint8_t> frame;
  std::vector<Expect> expects;
  std::optional<std::vector<uint8_t>> payload;
  std::string error;
  std::string problem;  // set when the file cannot be parsed
  // Sealed vectors (spec/uet.md §5): the key of the frame's association and the domain mode.
  std::optional<tss::Key> tss_key;
  tss::Mode tss_mode = tss::Mode::kCluster;
  // Server mode (§5.3): the client (source or destination) and the key and IV mask the
  // generator derived for it.
  uint32_t tss_client = 0;
  std::vector<uint8_t> tss_client_key, tss_client_iv_mask;
};

// The parameter as gtest prints it: the vector's name. gtest_discover_tests puts the printed
// parameter in the CTest name in place of the index: Vectors_File.Decode/uet_ack_cc_nscc.
void PrintTo(const Vector& v, std::ostream* os) { *os << v.name; }

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Parses all of `s` as an unsigned integer in `base`.
template <typename T>
bool parse_all(std::string_view s, T* v, int base = 10) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v, base);
  return ec == std::errc() && end == s.data() + s.size();
}

std::optional<std::vector<uint8_t>> parse_hex(std::string_view s) {
  std::string digits;
  for (char c : s)
    if (!is_space(c)) digits.push_back(c);
  if (digits.size() % 2 != 0) return std::nullopt;
  std::vector<uint8_t> out;
  for (size_t i = 0; i < digits.size(); i += 2) {
    uint8_t byte = 0;
    if (!parse_all(std::string_view(digits).substr(i, 2), &byte, 16)) return std::nullopt;
    out.push_back(byte);
  }
  return out;
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 0xF]);
  }
  return s;
}

std::string hex_str(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Integer value of an expect line: decimal, 0x-hex, or negative decimal (two's complement).
std::optional<uint64_t> parse_int(std::string_view s) {
  uint64_t u;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    if (parse_all(s.substr(2), &u, 16)) return u;
    return std::nullopt;
  }
  if (s.starts_with("-")) {
    int64_t i;
    if (parse_all(s, &i)) return static_cast<uint64_t>(i);
    return std::nullopt;
  }
  if (parse_all(s, &u)) return u;
  return std::nullopt;
}

Vector parse_file(const std::filesystem::path& path) {
  Vector v;
  v.name = path.stem().string();
  v.path = path.string();
  std::ifstream in(path);
  if (!in) {
    v.problem = "cannot open " + v.path;
    return v;
  }
  std::string frame_hex, name;
  std::string line;
  int n = 0;
  auto fail = [&](std::string_view why) {
    if (v.problem.empty()) v.problem = v.path + ":" + std::to_string(n) + ": " + std::string(why);
  };
  while (std::getline(in, line)) {
    ++n;
    const std::string_view l = trim(line);
    if (l.empty() || l.front() == '#') continue;
    const size_t colon = l.find(':');
    if (colon == std::string_view::npos) {
      fail("expected 'key: value'");
      continue;
    }
    const std::string_view key = l.substr(0, colon);
    const std::string_view value = trim(l.substr(colon + 1));
    if (key == "name") {
      name = std::string(value);
    } else if (key == "spec") {
    } else if (key == "frame") {
      frame_hex += value;
    } else if (key == "error") {
      v.error = std::string(value);
    } else if (key == "tss_key") {
      tss::Key k;
      if (!tss::parse_key(value, &k)) fail("tss_key: not 64 hex digits");
      v.tss_key = k;
    } else if (key == "tss_mode") {
      if (value == "cluster") {
        v.tss_mode = tss::Mode::kCluster;
      } else if (value == "direct") {
        v.tss_mode = tss::Mode::kDirect;
      } else if (value == "server") {
        v.tss_mode = tss::Mode::kServer;
      } else {
        fail("tss_mode: cluster, direct or server");
      }
    } else if (key == "tss_client") {
      in_addr a{};
      if (::inet_pton(AF_INET, std::string(value).c_str(), &a) != 1) fail("tss_client: not IPv4");
      v.tss_client = ntohl(a.s_addr);
    } else if (key == "tss_client_key" || key == "tss_client_iv_mask") {
      auto bytes = parse_hex(value);
      if (!bytes) fail(std::string(key) + ": not hex");
      (key == "tss_client_key" ? v.tss_client_key : v.tss_client_iv_mask) = bytes.value_or(std::vector<uint8_t>{});
    } else if (key == "expect") {
      const size_t eq = value.find('=');
      if (eq == std::string_view::npos) {
        fail("expect without '='");
        continue;
      }
      const std::string_view lhs = trim(value.substr(0, eq));
      const std::string_view rhs = trim(value.substr(eq + 1));
      if (lhs == "payload") {
        v.payload = parse_hex(rhs);
        if (!v.payload) fail("payload is not hex");
        continue;
      }
      const size_t dot = lhs.find('.');
      if (dot == std::string_view::npos) {
        fail("expect names no HEADER.FIELD");
        continue;
      }
      v.expects.push_back(Expect{std::string(lhs.substr(0, dot)), std::string(lhs.substr(dot + 1)),
                                 std::string(rhs), n});
    } else {
      fail("unknown key '" + std::string(key) + "'");
    }
  }
  auto frame = parse_hex(frame_hex);
  if (!frame || frame->empty()) {
    fail("frame missing or not hex");
  } else {
    v.frame = std::move(*frame);
  }
  if (name != v.name) fail("name '" + name + "' differs from the file name");
  if (v.error.empty()) fail("no error: line");
  if (v.error == "ok" && !v.payload) fail("ok vector without 'expect: payload'");
  return v;
}

const std::vector<Vector>& all_vectors() {
  static const std::vector<Vector> vectors = [] {
    std::vector<std::filesystem::path> paths;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(UET_VECTORS_DIR, ec))
      if (e.path().extension() == ".vec") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    std::vector<Vector> out;
    for (const auto& p : paths) out.push_back(parse_file(p));
    return out;
  }();
  return vectors;
}

std::vector<Vector> valid_vectors() {
  std::vector<Vector> out;
  for (const Vector& v : all_vectors())
    if (v.error == "ok") out.push_back(v);
  return out;
}

// The header of this id on the decoded stack, or null.
const HeaderRef* on_stack(const Decoded& d, const HeaderDesc* desc) {
  for (size_t i = 0; i < d.depth; ++i)
    if (d.stack[i].desc == desc) return &d.stack[i];
  return nullptr;
}

// "header.field" of the byte at `offset`, for failure messages.
std::string describe_offset(const Decoded& d, size_t offset) {
  for (size_t i = 0; i < d.depth; ++i) {
    const HeaderRef& r = d.stack[i];
    if (offset < r.offset || offset >= r.offset + size_t{r.desc->size}) continue;
    const size_t in = offset - r.offset;
    std::string fields;
    for (const FieldDesc& f : r.desc->fields)
      if (in >= f.offset && in < size_t{f.offset} + f.width)
        fields += (fields.empty() ? "" : "/") + std::string(f.name);
    return std::string(r.desc->id) + " byte " + std::to_string(in) + " (" + fields + ")";
  }
  return "payload, pad or ICRC";
}

// The secure domain a sealed vector was sealed in, as the receiver (or, for re-encoding, the
// sender) configures it: the frame's SDI, its AN's key, its epoch, its SSI if it has one. In
// server mode (§5.3) the client's end holds only the key client_key() derives for it.
enum class End { kReceiver, kSender };
tss::TssConfig tss_config_of(const Vector& v, const Decoded& d, End end,
                             tss::Backend backend = tss::Backend::kAuto) {
  const bool sp = d.tss_sp != nullptr;
  const uint32_t sdi = sp ? d.tss_sp->sdi() : d.tss->sdi();
  const uint8_t an = static_cast<uint8_t>(sp ? d.tss_sp->an() : d.tss->an());
  const uint64_t tsc = sp ? d.tss_sp->tsc() : d.tss->tsc();
  tss::TssConfig c;
  c.enabled = true;
  tss::DomainConfig dom;
  dom.sdi = sdi;
  dom.mode = v.tss_mode;
  dom.key[an] = *v.tss_key;
  dom.installed[an] = true;
  dom.epoch = static_cast<uint16_t>(tsc >> tss::kCounterBits);
  if (v.tss_mode == tss::Mode::kServer && d.ipv4 != nullptr) {
    const uint32_t me = end == End::kSender ? d.ipv4->src() : d.ipv4->dst();
    tss::DerivedKey k;
    if (me == v.tss_client && tss::client_key(*v.tss_key, dom.epoch, v.tss_client, &k)) {
      dom.mode = tss::Mode::kClient;
      dom.key[an] = k.key;
      dom.iv_mask[an] = k.iv_mask;
    }
  }
  c.domains.push_back(dom);
  c.tx_sdi = sdi;
  c.tx_an = an;
  c.send_ssi = sp;
  if (sp) c.ssi = d.tss_sp->ssi();
  c.backend = backend;
  return c;
}

// Decodes a vector's frame; a sealed one is opened in `frame` (a copy) and decoded through.
WireError decode_vector(const Vector& v, std::vector<uint8_t>& frame, Decoded* d) {
  WireError err = decode_frame(frame, d);
  if (err != WireError::kOk || !v.tss_key) return err;
  EXPECT_TRUE(d->tss != nullptr || d->tss_sp != nullptr) << v.path << ": tss_key but no TSS";
  EXPECT_EQ(d->pds, nullptr) << "a sealed frame decodes no further than its TSS header";
  auto rx = tss::Sublayer::create(tss_config_of(v, *d, End::kReceiver),
                                  d->ipv4 ? d->ipv4->dst() : 0);
  EXPECT_TRUE(rx.ok()) << rx.status();
  if (!rx.ok()) return WireError::kTruncatedUet;
  std::span<uint8_t> plain;
  tss::Drop why = tss::Drop::kCount;
  if (!(*rx)->open(frame.data(), *d, &plain, &why)) {
    ADD_FAILURE() << v.path << ": TSS refuses the frame: " << tss::drop_name(why);
    return WireError::kTruncatedUet;
  }
  return decode_opened(plain, d);
}

class Vectors_File : public testing::TestWithParam<Vector> {};
class Vectors_ValidFile : public testing::TestWithParam<Vector> {};

TEST_P(Vectors_File, Decode) {
  const Vector& v = GetParam();
  ASSERT_TRUE(v.problem.empty()) << v.problem;
  Decoded d;
  std::vector<uint8_t> frame = v.frame;
  const WireError err = decode_vector(v, frame, &d);
  // "ok" or the enumerator without its k ("BadIcrc").
  const std::string err_name = err == WireError::kOk ? "ok" : std::string(name(err));
  ASSERT_EQ(err_name, v.error) << v.path << ": decoder says: " << to_string(err);
  if (err != WireError::kOk) return;

  for (size_t i = 0; i < d.depth; ++i)
    for (size_t j = 0; j < i; ++j)
      EXPECT_NE(d.stack[i].desc, d.stack[j].desc) << "header twice on the stack";

  std::map<std::string, std::set<std::string>> listed;
  for (const Expect& e : v.expects) {
    const std::string where =
        v.path + ":" + std::to_string(e.line) + ": " + e.header + "." + e.field;
    const HeaderDesc* desc = find_header(e.header);
    if (desc == nullptr) {
      ADD_FAILURE() << where << ": no header with this id in the spec tables";
      continue;
    }
    const FieldDesc* f = desc->field(e.field);
    if (f == nullptr) {
      ADD_FAILURE() << where << ": header has no field of this name";
      continue;
    }
    const HeaderRef* ref = on_stack(d, desc);
    if (ref == nullptr) {
      ADD_FAILURE() << where << ": the decoder found no " << e.header << " header in the frame";
      continue;
    }
    EXPECT_TRUE(listed[e.header].insert(e.field).second) << where << ": listed twice";
    const uint8_t* hdr = d.frame.data() + ref->offset;
    if (f->kind == Kind::BYTES) {
      const auto want = parse_hex(e.value);
      ASSERT_TRUE(want.has_value()) << where << ": not hex: " << e.value;
      EXPECT_EQ(to_hex(std::span(hdr + f->offset, f->width)), to_hex(*want)) << where;
    } else {
      const auto want = parse_int(e.value);
      ASSERT_TRUE(want.has_value()) << where << ": not a number: " << e.value;
      const uint64_t got = read_field(hdr, *f);
      if (f->kind == Kind::SDEC) {
        EXPECT_EQ(static_cast<int64_t>(got), static_cast<int64_t>(*want)) << where;
      } else {
        EXPECT_EQ(got, *want) << where << " (got " << hex_str(got) << ", want " << hex_str(*want)
                              << ")";
      }
    }
  }

  // Vectors may not silently omit a header or a field.
  for (size_t i = 0; i < d.depth; ++i) {
    const HeaderDesc& h = *d.stack[i].desc;
    const auto& names = listed[std::string(h.id)];
    for (const FieldDesc& f : h.fields)
      EXPECT_TRUE(names.count(std::string(f.name)))
          << v.path << ": decoded header " << h.id << " has field " << f.name
          << " that the vector does not list";
  }

  ASSERT_TRUE(v.payload.has_value());
  EXPECT_EQ(to_hex(d.payload), to_hex(*v.payload)) << v.path << ": payload";
}

// Encap of a decoded frame: what FrameBuilder needs to write the same Ethernet/IP/UDP headers.
Encap encap_of(const Decoded& d) {
  Encap e;
  std::copy_n(d.eth->dst().begin(), 6, e.dst_mac.begin());
  std::copy_n(d.eth->src().begin(), 6, e.src_mac.begin());
  if (d.vlan != nullptr) {
    e.vlan = true;
    e.vlan_tci = static_cast<uint16_t>(d.vlan->pcp() << 13 | uint16_t{d.vlan->dei()} << 12 |
                                       d.vlan->vid());
  }
  uint8_t proto;
  if (d.ipv6 != nullptr) {
    e.ipv6 = true;
    std::copy_n(d.ipv6->src().begin(), 16, e.src_ip6.begin());
    std::copy_n(d.ipv6->dst().begin(), 16, e.dst_ip6.begin());
    e.dscp = d.ipv6->dscp();
    e.ecn = d.ipv6->ecn();
    e.flow_label = d.ipv6->flow_label();
    e.ttl = d.ipv6->hop_limit();
    proto = d.ipv6->next_header();
  } else {
    e.src_ip4 = d.ipv4->src();
    e.dst_ip4 = d.ipv4->dst();
    e.dscp = d.ipv4->dscp();
    e.ecn = d.ipv4->ecn();
    e.ttl = d.ipv4->ttl();
    e.ip_id = d.ipv4->id();
    e.dont_fragment = d.ipv4->df();
    proto = d.ipv4->protocol();
  }
  if (d.udp != nullptr) {
    e.sport = d.udp->sport();
    e.dport = d.udp->dport();
    e.udp_checksum = d.udp->checksum() != 0;
  } else {
    e.ip_only = true;
    e.ip_proto = proto;
    e.sport = d.entropy->entropy();
  }
  e.icrc = d.protocol == Protocol::kRoce;
  return e;
}

TEST_P(Vectors_ValidFile, ReEncode) {
  const Vector& v = GetParam();
  ASSERT_TRUE(v.problem.empty()) << v.problem;
  Decoded d;
  std::vector<uint8_t> frame = v.frame;
  ASSERT_EQ(decode_vector(v, frame, &d), WireError::kOk);

  std::vector<uint8_t> buf(v.frame.size() + 64);
  FrameBuilder b(buf, encap_of(d));
  const size_t tss_at = b.transport_offset();

  // Transport headers: everything on the stack after UDP or the UET entropy header, copied
  // field by field through the reflection tables.
  size_t first = d.depth;
  for (size_t i = 0; i < d.depth; ++i) {
    const std::string_view id = d.stack[i].desc->id;
    if (id == "udp" || id == "uet_entropy") first = i + 1;
  }
  ASSERT_LT(first, size_t{d.depth} + 1);
  for (size_t i = first; i < d.depth; ++i) {
    const HeaderDesc& h = *d.stack[i].desc;
    const uint8_t* src = d.frame.data() + d.stack[i].offset;
    uint8_t* dst = b.add_bytes(h.size);
    ASSERT_NE(dst, nullptr) << h.id;
    for (const FieldDesc& f : h.fields) {
      if (f.kind == Kind::BYTES) {
        std::copy_n(src + f.offset, f.width, dst + f.offset);
      } else {
        write_field(dst, f, read_field(src, f));
      }
    }
  }
  ASSERT_TRUE(b.append(d.payload));
  if (v.tss_key) {  // sealed by our sublayer at the vector's TSC: the same bytes, tag included
    auto tx = tss::Sublayer::create(tss_config_of(v, d, End::kSender), d.ipv4 ? d.ipv4->src() : 0);
    ASSERT_TRUE(tx.ok()) << tx.status();
    const uint64_t tsc = d.tss_sp != nullptr ? d.tss_sp->tsc() : d.tss->tsc();
    ASSERT_TRUE((*tx)->resume_counter(tsc & tss::kCounterMask).ok());
    tss::SealLayout l;
    const uint8_t* ip = d.ipv4 ? d.ipv4->raw : d.ipv6->raw;
    l.l3 = static_cast<uint16_t>(ip - d.frame.data());
    l.l4 = static_cast<uint16_t>(l.l3 + (d.ipv4 ? d.ipv4->ihl() * 4 : wire::Ipv6::kSize));
    l.ipv6 = d.ipv6 != nullptr;
    l.ip_only = d.udp == nullptr;
    l.tss = static_cast<uint16_t>(tss_at);
    const size_t plain_len = b.size();
    ASSERT_NE(b.reserve(tss::kTagBytes), nullptr);
    ASSERT_TRUE((*tx)->seal(buf.data(), plain_len, l));
  }
  if (d.bth != nullptr) {  // pad bytes, as sent
    const size_t pad_at = static_cast<size_t>(d.payload.data() - d.frame.data()) + d.payload.size();
    ASSERT_TRUE(b.append(std::span(d.frame.data() + pad_at, d.bth->pad_cnt())));
  }
  size_t len = 0;
  ASSERT_EQ(b.finish(&len), WireError::kOk);

  const std::span<const uint8_t> got(buf.data(), len);
  EXPECT_EQ(len, v.frame.size()) << "frame length";
  const size_t n = std::min(len, v.frame.size());
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != v.frame[i]) {
      ADD_FAILURE() << v.path << ": first difference at byte " << i << ", in "
                    << describe_offset(d, i) << ": builder wrote " << hex_str(got[i])
                    << ", vector has " << hex_str(v.frame[i]);
      break;
    }
  }
  EXPECT_EQ(to_hex(got), to_hex(v.frame));
}

// gtest names the cases by index (Vectors_File.Decode/12, "where GetParam() = <vector>"), and
// CTest by vector, so CTest names stay put when a vector is added.
INSTANTIATE_TEST_SUITE_P(, Vectors_File, testing::ValuesIn(all_vectors()));
INSTANTIATE_TEST_SUITE_P(, Vectors_ValidFile, testing::ValuesIn(valid_vectors()));

// Every sealed vector (sealed by Python's `cryptography`) opens with each AES-GCM backend, and
// re-sealing its plaintext at the vector's TSC gives back the vector's bytes, tag included.
TEST(Vectors_Sealed, OpenAndReSealBitExactWithEachBackend) {
  size_t sealed = 0;
  for (tss::Backend backend : {tss::Backend::kIpsecMb, tss::Backend::kOpenSsl}) {
    if (!tss::backend_available(backend)) {
      ADD_FAILURE() << tss::backend_name(backend) << " unavailable: scripts/setup.sh installs it";
      continue;
    }
    SCOPED_TRACE(tss::backend_name(backend));
    for (const Vector& v : valid_vectors()) {
      if (!v.tss_key) continue;
      ++sealed;
      std::vector<uint8_t> frame = v.frame;
      Decoded d;
      ASSERT_EQ(decode_frame(frame, &d), WireError::kOk) << v.path;
      auto rx = tss::Sublayer::create(tss_config_of(v, d, End::kReceiver, backend),
                                      d.ipv4 ? d.ipv4->dst() : 0);
      auto tx = tss::Sublayer::create(tss_config_of(v, d, End::kSender, backend),
                                      d.ipv4 ? d.ipv4->src() : 0);
      ASSERT_TRUE(rx.ok() && tx.ok()) << v.path;
      EXPECT_EQ((*rx)->backend(), backend);
      std::span<uint8_t> plain;
      tss::Drop why = tss::Drop::kCount;
      ASSERT_TRUE((*rx)->open(frame.data(), d, &plain, &why)) << v.path << ": " << tss::drop_name(why);
      EXPECT_NE(frame, v.frame) << v.path << ": opening decrypts in place";

      const uint64_t tsc = d.tss_sp != nullptr ? d.tss_sp->tsc() : d.tss->tsc();
      ASSERT_TRUE((*tx)->resume_counter(tsc & tss::kCounterMask).ok());
      tss::SealLayout l;
      const uint8_t* ip = d.ipv4 ? d.ipv4->raw : d.ipv6->raw;
      l.l3 = static_cast<uint16_t>(ip - frame.data());
      l.l4 = static_cast<uint16_t>(l.l3 + (d.ipv4 ? d.ipv4->ihl() * 4 : wire::Ipv6::kSize));
      l.ipv6 = d.ipv6 != nullptr;
      l.ip_only = d.udp == nullptr;
      const uint8_t* hdr = d.tss_sp != nullptr ? d.tss_sp->raw : d.tss->raw;
      l.tss = static_cast<uint16_t>(hdr - frame.data());
      const size_t end = static_cast<size_t>(plain.data() - frame.data()) + plain.size();
      ASSERT_TRUE((*tx)->seal(frame.data(), end, l)) << v.path;
      EXPECT_EQ(to_hex(frame), to_hex(v.frame)) << v.path;
    }
  }
  EXPECT_GE(sealed, 2u) << "sealed vectors in " << UET_VECTORS_DIR;
}

// Server mode (§5.3): the key and IV mask client_key() derives for each server-mode vector's
// client are the ones the Python generator derived, and the client is one of the frame's ends.
TEST(Vectors_Sealed, ServerModeClientKeysAgreeWithTheGenerator) {
  size_t server = 0;
  for (const Vector& v : valid_vectors()) {
    if (!v.tss_key || v.tss_mode != tss::Mode::kServer) continue;
    ++server;
    Decoded d;
    std::vector<uint8_t> frame = v.frame;
    ASSERT_EQ(decode_frame(frame, &d), WireError::kOk) << v.path;
    ASSERT_NE(d.ipv4, nullptr) << v.path;
    EXPECT_TRUE(v.tss_client == d.ipv4->src() || v.tss_client == d.ipv4->dst()) << v.path;
    tss::DerivedKey k;
    ASSERT_TRUE(tss::client_key(*v.tss_key, static_cast<uint16_t>(d.tss->tsc() >> tss::kCounterBits),
                                v.tss_client, &k));
    EXPECT_EQ(to_hex(k.key), to_hex(v.tss_client_key)) << v.path;
    EXPECT_EQ(to_hex(k.iv_mask), to_hex(v.tss_client_iv_mask)) << v.path;
  }
  EXPECT_GE(server, 2u) << "server-mode vectors (both directions) in " << UET_VECTORS_DIR;
}

TEST(Vectors_Directory, HoldsAtLeast50Vectors) {
  EXPECT_GE(all_vectors().size(), 50u) << "in " << UET_VECTORS_DIR;
  size_t negative = 0;
  for (const Vector& v : all_vectors()) negative += v.error != "ok";
  EXPECT_GE(negative, 10u) << "negative vectors";
}

}  // namespace
}  // namespace uet::wire
