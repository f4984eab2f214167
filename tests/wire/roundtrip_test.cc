// Seeded round trips through the whole wire codec (transport/wire/):
//
//   1. every accessor of every header of spec/net.def, spec/uet.def and spec/rocev2.def, expanded
//      from the same X-macro rows as the codec, against a bit-by-bit reference reader and the
//      registry's read_field/write_field;
//   2. random valid UET and RoCEv2 frames through FrameBuilder and decode_frame;
//   3. single-bit corruption against the IPv4 header checksum, the UDP checksum and the ICRC.
//
// Reproducible: each test draws from std::mt19937_64 seeded with kSeed mixed with the test's
// own stream name, and every failure message prints both seeds and the iteration. Values are
// mapped from the raw 64-bit draws by hand (no std:: distributions), so the sequence is the same
// on every standard library.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "transport/wire/builder.h"
#include "transport/wire/checksum.h"
#include "transport/wire/decode.h"
#include "transport/wire/field.h"
#include "transport/wire/icrc.h"
#include "transport/wire/net_headers.h"
#include "transport/wire/registry.h"
#include "transport/wire/roce_headers.h"
#include "transport/wire/uet_headers.h"
#include "transport/wire/wire_error.h"

namespace uet::wire {
namespace {

// The one seed of this file. Change it to explore; a failure prints it.
constexpr uint64_t kSeed = 0x5EED'0E7C'2025'0101;

constexpr int kFieldIterations = 10'000;  // per header, each sets every field twice
constexpr int kFrameIterations = 10'000;  // per protocol
constexpr size_t kMaxPayload = 1500;

// ------------------------------------------------------------------------------ randomness

constexpr uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3;
  return h;
}

constexpr uint64_t all_ones(int bits) {
  return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

constexpr int64_t sign_extend(uint64_t raw, int bits) {
  if (bits >= 64) return static_cast<int64_t>(raw);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((raw ^ sign) - sign);
}

class Rng {
 public:
  explicit Rng(std::string_view stream)
      : stream_(stream), seed_(kSeed ^ fnv1a(stream)), gen_(seed_) {}

  // Uniform in [0, max]; one draw in eight comes from the edges (0, 1, the middle, max - 1,
  // max) where sign, mask and off-by-one bugs live. Modulo bias does not matter here.
  uint64_t upto(uint64_t max) {
    const uint64_t r = gen_();
    if ((r & 7) == 0) {
      const uint64_t edges[] = {
          0, std::min<uint64_t>(1, max), max / 2, max / 2 + (max > 1), max - (max > 0), max};
      return edges[(r >> 3) % std::size(edges)];
    }
    const uint64_t u = gen_();
    return max == ~uint64_t{0} ? u : u % (max + 1);
  }
  uint64_t below(uint64_t n) { return gen_() % n; }  // n > 0
  bool coin() { return (gen_() >> 17) & 1; }
  void fill(std::span<uint8_t> out) {
    for (size_t i = 0; i < out.size(); i += 8) {
      uint64_t v = gen_();
      for (size_t j = i; j < std::min(out.size(), i + 8); ++j, v >>= 8)
        out[j] = static_cast<uint8_t>(v);
    }
  }

  // For failure messages: enough to rerun exactly this case.
  std::string where(int iteration) const {
    return absl::StrFormat("[kSeed 0x%016x, stream \"%s\" -> seed 0x%016x, iteration %d]", kSeed,
                           stream_, seed_, iteration);
  }

 private:
  std::string stream_;
  uint64_t seed_;
  std::mt19937_64 gen_;
};

// A random value within the range of integer field `Fld` (a Field<...> from header_gen.h).
template <typename Fld>
typename Fld::Value any(Rng& r) {
  using V = typename Fld::Value;
  constexpr int bits = std::popcount(Fld::kMask);
  const uint64_t raw = r.upto(Fld::kMax) & Fld::kMax;
  if constexpr (std::is_same_v<V, bool>) {
    return (raw & 1) != 0;
  } else if constexpr (std::is_signed_v<V>) {
    return static_cast<V>(sign_extend(raw, bits));
  } else {
    return static_cast<V>(raw);
  }
}

// Sets field `name` of header `h` to a random value within the field's range.
#define RT_SET_RANDOM(r, h, name) \
  (h).set_##name(any<typename std::remove_cvref_t<decltype(h)>::name##_field>(r))

template <typename E, size_t N>
E pick(Rng& r, const ValueDesc (&table)[N]) {
  return static_cast<E>(table[r.below(N)].value);
}

template <size_t N>
std::array<uint8_t, N> random_bytes(Rng& r) {
  std::array<uint8_t, N> a;
  r.fill(a);
  return a;
}

std::string hex(std::span<const uint8_t> b) {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

// ---------------------------------------------------------------- independent references

// A field read one bit at a time, most significant first, straight from the byte array: the
// oracle for Field<...>::get and read_field. Per spec/README.md the value is the word masked and
// shifted down by the mask's trailing zeros, so the bits of a scattered (reserved) mask keep
// their gaps; a contiguous mask gives the plain bit run.
uint64_t reference_bits(const uint8_t* hdr, size_t offset, size_t width, uint64_t mask) {
  uint64_t v = 0;
  const size_t nbits = width * 8;
  for (size_t bit = 0; bit < nbits; ++bit) {  // bit 0 = MSB of hdr[offset]
    const bool owned = ((mask >> (nbits - 1 - bit)) & 1) != 0;
    const uint8_t byte = hdr[offset + bit / 8];
    v = (v << 1) | (owned ? (byte >> (7 - bit % 8)) & 1 : 0);
  }
  for (uint64_t m = mask; (m & 1) == 0; m >>= 1) v >>= 1;  // mask != 0
  return v;
}

// The bits of byte `i` of a `width`-byte field that its mask owns.
uint8_t owned_bits(size_t width, uint64_t mask, size_t i) {
  return static_cast<uint8_t>(mask >> (8 * (width - 1 - i)));
}

// RFC 1071, written out again here so the codec's checksum.cc is not its own oracle.
uint16_t ref_ones_sum_finish(std::span<const uint8_t> data, uint32_t sum) {
  for (size_t i = 0; i < data.size(); i += 2) {
    sum += static_cast<uint32_t>(data[i]) << 8;
    if (i + 1 < data.size()) sum += data[i + 1];
    sum = (sum & 0xFFFF) + (sum >> 16);
  }
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

uint16_t ref_ipv4_checksum(std::span<const uint8_t> ip_header) {
  std::vector<uint8_t> h(ip_header.begin(), ip_header.end());
  h[10] = h[11] = 0;
  return ref_ones_sum_finish(h, 0);
}

uint16_t ref_udp_checksum(const uint8_t* ip, bool ipv6, std::span<const uint8_t> udp) {
  std::vector<uint8_t> pseudo;
  if (ipv6) {
    pseudo.assign(ip + 8, ip + 40);
    const uint32_t len = static_cast<uint32_t>(udp.size());
    for (int s = 24; s >= 0; s -= 8) pseudo.push_back(static_cast<uint8_t>(len >> s));
    pseudo.insert(pseudo.end(), {0, 0, 0, NET_IPPROTO_UDP});
  } else {
    pseudo.assign(ip + 12, ip + 20);
    pseudo.insert(pseudo.end(), {0, NET_IPPROTO_UDP, static_cast<uint8_t>(udp.size() >> 8),
                                 static_cast<uint8_t>(udp.size())});
  }
  pseudo.insert(pseudo.end(), udp.begin(), udp.end());
  pseudo[pseudo.size() - udp.size() + 6] = 0;
  pseudo[pseudo.size() - udp.size() + 7] = 0;
  const uint16_t c = ref_ones_sum_finish(pseudo, 0);
  return c == 0 ? 0xFFFF : c;
}

// Bitwise CRC-32 (IEEE, reflected) and the RoCEv2 ICRC masking (IBA A17.8.2) written from the
// rule, not from icrc.cc: 8 bytes of ones, then IP/UDP/BTH with the variant fields set to ones,
// then everything up to the ICRC.
uint32_t ref_crc32(std::span<const uint8_t> data) {
  uint32_t c = 0xFFFFFFFF;
  for (uint8_t b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return ~c;
}

uint32_t ref_icrc(std::span<const uint8_t> from_ip_to_icrc, bool ipv6) {
  std::vector<uint8_t> m(8, 0xFF);
  m.insert(m.end(), from_ip_to_icrc.begin(), from_ip_to_icrc.end());
  uint8_t* ip = m.data() + 8;
  size_t udp_at;
  if (ipv6) {
    ip[0] |= 0x0F;                 // traffic class, high nibble
    ip[1] = ip[2] = ip[3] = 0xFF;  // traffic class low nibble, flow label
    ip[7] = 0xFF;                  // hop limit
    udp_at = 40;
  } else {
    ip[1] = 0xFF;            // TOS
    ip[8] = 0xFF;            // TTL
    ip[10] = ip[11] = 0xFF;  // header checksum
    udp_at = 20;
  }
  ip[udp_at + 6] = ip[udp_at + 7] = 0xFF;  // UDP checksum
  ip[udp_at + 8 + 4] = 0xFF;               // BTH: FECN, BECN, reserved
  return ref_crc32(m);
}

// ===================================================================== 1. accessor round trips

// Runs the rows of one header: for each row, sets a random in-range value through the typed
// setter and checks (a) the typed getter returns it, (b) the bit-by-bit reference and the
// registry's read_field agree, (c) no bit outside the row's mask changed; then does the same
// the other way round (registry write_field, typed getter). The header starts every iteration
// filled with random bytes, so "unchanged neighbours" is a real check, overlays included.
template <typename H>
class AccessorRoundTrip {
 public:
  explicit AccessorRoundTrip(std::string_view id)
      : id_(id), rng_(absl::StrFormat("accessors/%s", id)), desc_(HeaderTraits<H>::desc) {
    EXPECT_EQ(find_header(id), &desc_) << "registry lookup of " << id;
    EXPECT_EQ(desc_.size, H::kSize) << id;
  }

  bool ok() const { return failures_ == 0; }
  int iterations() const { return iterations_; }

  void begin(int iteration) {
    iteration_ = iteration;
    row_ = 0;
    rng_.fill(h_.raw);
  }
  void end() {
    if (row_ != desc_.fields.size())
      fail("", "row count", "X-macro rows and reflection table differ");
    if (ok()) ++iterations_;
  }

  template <Kind K, size_t Off, size_t W, uint64_t Mask, typename Get, typename Set>
  void row(std::string_view name, Get get, Set set) {
    const FieldDesc* d = row_ < desc_.fields.size() ? &desc_.fields[row_] : nullptr;
    ++row_;
    if (d == nullptr || d->name != name || d->offset != Off || d->width != W || d->kind != K) {
      fail(name, "reflection", "FieldDesc does not match the X-macro row");
      return;
    }
    if constexpr (K == Kind::BYTES) {
      bytes_row<W>(*d, get, set);
    } else {
      constexpr uint64_t kM = Mask == 0 ? all_ones(static_cast<int>(8 * W)) : Mask;
      if (d->mask != kM) {
        fail(name, "reflection", absl::StrFormat("mask %#x, row says %#x", d->mask, kM));
        return;
      }
      int_row<K, W, kM>(*d, get, set);
    }
  }

 private:
  using Bytes = std::array<uint8_t, H::kSize>;

  Bytes snapshot() const {
    Bytes b;
    std::memcpy(b.data(), h_.raw, H::kSize);
    return b;
  }

  void fail(std::string_view field, std::string_view what, const std::string& detail) {
    ++failures_;
    ADD_FAILURE() << id_ << "." << field << ": " << what << ": " << detail << " "
                  << rng_.where(iteration_);
  }

  template <typename V>
  static uint64_t as_u64(V v) {
    if constexpr (std::is_enum_v<V>) {
      return static_cast<uint64_t>(static_cast<std::underlying_type_t<V>>(v));
    } else if constexpr (std::is_same_v<V, bool>) {
      return v ? 1 : 0;
    } else if constexpr (std::is_signed_v<V>) {
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    } else {
      return static_cast<uint64_t>(v);
    }
  }

  template <typename V, Kind K, int kBits>
  static V make_value(uint64_t raw) {
    if constexpr (std::is_enum_v<V>) {
      return static_cast<V>(raw);  // random raw values, named in the table or not
    } else if constexpr (std::is_same_v<V, bool>) {
      return raw != 0;
    } else if constexpr (std::is_signed_v<V>) {
      return static_cast<V>(sign_extend(raw, kBits));
    } else {
      return static_cast<V>(raw);
    }
  }

  // Every bit that changed between `before` and now must be one of the row's own.
  void check_untouched(const Bytes& before, const FieldDesc& d, bool whole_bytes,
                       std::string_view op) {
    for (size_t i = 0; i < H::kSize; ++i) {
      uint8_t own = 0;
      if (i >= d.offset && i < size_t{d.offset} + d.width)
        own = whole_bytes ? uint8_t{0xFF} : owned_bits(d.width, d.mask, i - d.offset);
      const uint8_t changed = static_cast<uint8_t>(before[i] ^ h_.raw[i]);
      if ((changed & ~own) != 0) {
        fail(d.name, op,
             absl::StrFormat("changed bits 0x%02x of byte %d outside the field's mask; "
                             "before %s after %s",
                             changed & ~own, i, hex(before), hex(std::span(h_.raw))));
        return;
      }
    }
  }

  template <Kind K, size_t W, uint64_t kM, typename Get, typename Set>
  void int_row(const FieldDesc& d, Get get, Set set) {
    using V = std::remove_cvref_t<std::invoke_result_t<Get, const H&>>;
    constexpr int kBits = std::popcount(kM);
    constexpr uint64_t kValues = kM >> std::countr_zero(kM);  // the bits a value may have
    auto expect_value = [&](uint64_t raw, std::string_view op) {
      const uint64_t want = K == Kind::SDEC ? static_cast<uint64_t>(sign_extend(raw, kBits)) : raw;
      const uint64_t typed = as_u64(get(h_));
      const uint64_t ref = reference_bits(h_.raw, d.offset, W, kM);
      const uint64_t reg = read_field(h_.raw, d);
      if (typed != want || ref != raw || reg != want) {
        fail(d.name, op,
             absl::StrFormat("wrote %#x: typed getter %#x, bit-by-bit reference %#x, "
                             "read_field %#x; header %s",
                             want, typed, ref, reg, hex(std::span(h_.raw))));
      }
    };

    // Typed setter -> typed getter, reference, registry.
    Bytes before = snapshot();
    const uint64_t raw = rng_.upto(kValues) & kValues;
    const V v = make_value<V, K, kBits>(raw);
    set(h_, v);
    if (!(get(h_) == v)) fail(d.name, "set_/get", "typed getter differs from the typed setter");
    expect_value(raw, "set_");
    check_untouched(before, d, false, "set_");

    // Registry writer -> typed getter. Pass the sign-extended value so truncation is exercised.
    before = snapshot();
    const uint64_t raw2 = rng_.upto(kValues) & kValues;
    write_field(h_.raw, d,
                K == Kind::SDEC ? static_cast<uint64_t>(sign_extend(raw2, kBits)) : raw2);
    expect_value(raw2, "write_field");
    check_untouched(before, d, false, "write_field");
  }

  template <size_t W, typename Get, typename Set>
  void bytes_row(const FieldDesc& d, Get get, Set set) {
    const Bytes before = snapshot();
    const auto value = random_bytes<W>(rng_);
    set(h_, std::span<const uint8_t, W>(value));
    const auto got = get(h_);
    if (got.data() != h_.raw + d.offset) fail(d.name, "get", "BYTES view is not in place");
    if (!std::equal(got.begin(), got.end(), value.begin()) ||
        std::memcmp(h_.raw + d.offset, value.data(), W) != 0) {
      fail(d.name, "set_/get",
           absl::StrFormat("wrote %s read %s", hex(value), hex(std::span(got.data(), W))));
    }
    check_untouched(before, d, true, "set_");
  }

  std::string id_;
  Rng rng_;
  const HeaderDesc& desc_;
  H h_{};
  size_t row_ = 0;
  int iteration_ = 0;
  int iterations_ = 0;
  int failures_ = 0;
};

// One row of a header's field list -> one row() call with the row's own constants.
#define RT_ACCESSOR_ROW(name, off, width, mask, kind, vals, title) \
  rt.row<Kind::kind, off, width, mask>(                            \
      #name, [](const auto& h) { return h.name(); }, [](auto& h, auto v) { h.set_##name(v); });

// One header row -> one test running all its field rows kFieldIterations times.
// clang-format off
#define RT_ACCESSOR_TEST(P, Suite, id, Name, size, prefix, section, title) \
  TEST(Suite, Name) {                                                     \
    AccessorRoundTrip<Name> rt(#id);                                      \
    for (int i = 0; i < kFieldIterations && rt.ok(); ++i) {               \
      rt.begin(i);                                                        \
      WIRE_PASTE3(P, _FIELDS_, id)(RT_ACCESSOR_ROW)                       \
      rt.end();                                                           \
    }                                                                     \
    EXPECT_EQ(rt.iterations(), kFieldIterations);                         \
  }
// clang-format on

#define RT_NET_ACCESSOR_TEST(...) RT_ACCESSOR_TEST(NET, Roundtrip_NetAccessors, __VA_ARGS__)
#define RT_UET_ACCESSOR_TEST(...) RT_ACCESSOR_TEST(UET, Roundtrip_UetAccessors, __VA_ARGS__)
#define RT_ROCE_ACCESSOR_TEST(...) RT_ACCESSOR_TEST(ROCEV2, Roundtrip_RoceAccessors, __VA_ARGS__)
NET_HEADERS(RT_NET_ACCESSOR_TEST)
UET_HEADERS(RT_UET_ACCESSOR_TEST)
ROCEV2_HEADERS(RT_ROCE_ACCESSOR_TEST)
#undef RT_NET_ACCESSOR_TEST
#undef RT_UET_ACCESSOR_TEST
#undef RT_ROCE_ACCESSOR_TEST

#define RT_HEADER_ID(id, ...) #id,
constexpr std::string_view kTestedHeaderIds[] = {NET_HEADERS(RT_HEADER_ID) UET_HEADERS(RT_HEADER_ID)
                                                     ROCEV2_HEADERS(RT_HEADER_ID)};
#undef RT_HEADER_ID

TEST(Roundtrip_Accessors, EveryRegisteredHeaderHasATest) {
  ASSERT_EQ(std::size(kTestedHeaderIds), all_headers().size());
  for (const HeaderDesc* h : all_headers()) {
    EXPECT_NE(std::find(std::begin(kTestedHeaderIds), std::end(kTestedHeaderIds), h->id),
              std::end(kTestedHeaderIds))
        << h->id;
  }
}

// ======================================================================== 2. frame round trips

// One header the decoder must report, where, and (for transport headers) the bytes written.
struct Layer {
  const HeaderDesc* desc = nullptr;
  size_t offset = 0;
  bool check_bytes = false;
  std::array<uint8_t, 64> bytes{};
};

struct BuiltFrame {
  Protocol protocol = Protocol::kNone;
  Encap encap;
  DecodeOptions opts;
  std::vector<uint8_t> bytes;
  std::vector<Layer> layers;
  size_t payload_offset = 0;
  std::vector<uint8_t> payload;
  // UET
  PdsType pds_type = PdsType::kReserved;
  NextHeader next_hdr = NextHeader::kNone;
  // RoCEv2
  RoceOpcode roce_opcode = RoceOpcode::kRcSendFirst;
  size_t pad = 0;
};

// Which encapsulation to draw; unset members are random.
struct Shape {
  std::optional<bool> ipv6;
  std::optional<bool> ip_only;
  std::optional<bool> udp_checksum;
};
constexpr Shape kIpv4{/*ipv6=*/false, /*ip_only=*/std::nullopt, /*udp_checksum=*/std::nullopt};
constexpr Shape kUdpChecksummed{/*ipv6=*/std::nullopt, /*ip_only=*/false, /*udp_checksum=*/true};
constexpr Shape kUdpChecksumOff{/*ipv6=*/std::nullopt, /*ip_only=*/std::nullopt,
                                /*udp_checksum=*/false};

Encap random_encap(Rng& r, Protocol p, const Shape& shape, DecodeOptions* opts) {
  Encap e;
  r.fill(e.src_mac);
  r.fill(e.dst_mac);
  e.vlan = r.coin();
  e.vlan_tci = static_cast<uint16_t>(r.upto(0xFFFF));
  e.ipv6 = shape.ipv6.value_or(r.coin());
  e.src_ip4 = static_cast<uint32_t>(r.upto(0xFFFFFFFF));
  e.dst_ip4 = static_cast<uint32_t>(r.upto(0xFFFFFFFF));
  r.fill(e.src_ip6);
  r.fill(e.dst_ip6);
  e.dscp = static_cast<uint8_t>(r.upto(63));
  e.ecn = static_cast<uint8_t>(r.upto(3));
  e.ttl = static_cast<uint8_t>(r.upto(255));
  e.ip_id = static_cast<uint16_t>(r.upto(0xFFFF));
  e.dont_fragment = r.coin();
  e.flow_label = static_cast<uint32_t>(r.upto(0xFFFFF));
  e.sport = static_cast<uint16_t>(r.upto(0xFFFF));
  e.udp_checksum = shape.udp_checksum.value_or(r.coin());
  if (p == Protocol::kUet) {
    e.ip_only = shape.ip_only.value_or(r.below(4) == 0);
    e.ip_proto = r.coin() ? uint8_t{253} : uint8_t{254};  // RFC 3692 experimental
    e.dport = kUetUdpPort;
    opts->uet_ip_proto = e.ip_proto;
  } else {
    e.dport = kRoceUdpPort;
    e.icrc = true;
  }
  return e;
}

// Builds one frame through FrameBuilder, recording what each header should decode to.
class FrameMaker {
 public:
  FrameMaker(BuiltFrame* f) : f_(f), builder_(buf_, f->encap) {
    // Encapsulation offsets, counted here independently of the builder.
    const Encap& e = f->encap;
    size_t off = 0;
    push(&kEthernetDesc, &off, Ethernet::kSize);
    if (e.vlan) push(&kVlanDesc, &off, Vlan::kSize);
    if (e.ipv6) {
      push(&kIpv6Desc, &off, Ipv6::kSize);
    } else {
      push(&kIpv4Desc, &off, Ipv4::kSize);
    }
    if (e.ip_only) {
      push(&kUetEntropyDesc, &off, UetEntropy::kSize);
    } else {
      push(&kUdpDesc, &off, Udp::kSize);
    }
    at_ = off;
    EXPECT_EQ(builder_.transport_offset(), at_);
  }

  template <typename H>
  void add(const H& h) {
    static_assert(H::kSize <= std::tuple_size_v<decltype(Layer::bytes)>);
    H* p = builder_.add<H>();
    ASSERT_NE(p, nullptr);
    *p = h;
    Layer l{&HeaderTraits<H>::desc, at_, true, {}};
    std::memcpy(l.bytes.data(), h.raw, H::kSize);
    f_->layers.push_back(l);
    at_ += H::kSize;
  }

  void add_payload(std::span<const uint8_t> payload, size_t pad) {
    f_->payload_offset = at_;
    f_->payload.assign(payload.begin(), payload.end());
    ASSERT_TRUE(builder_.append(payload));
    ASSERT_NE(builder_.add_bytes(pad), nullptr);
    f_->pad = pad;
    at_ += payload.size() + pad;
  }

  void finish() {
    size_t len = 0;
    ASSERT_EQ(builder_.finish(&len), WireError::kOk);
    const size_t want = at_ + (f_->encap.icrc ? kIcrcSize : 0);
    ASSERT_EQ(len, want) << "frame length";
    f_->bytes.assign(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(len));
  }

 private:
  void push(const HeaderDesc* d, size_t* off, size_t size) {
    f_->layers.push_back(Layer{d, *off, false, {}});
    *off += size;
  }

  BuiltFrame* f_;
  std::array<uint8_t, 4096> buf_{};
  FrameBuilder builder_;
  size_t at_ = 0;
};

// ------------------------------------------------------------------------------- UET frames

constexpr PdsType kPdsTypes[] = {
#define RT_PDS_TYPE(k, id, Name) PdsType::k,
    UET_PDS_TYPE_HEADERS(RT_PDS_TYPE)
#undef RT_PDS_TYPE
};
static_assert(std::size(kPdsTypes) == 13, "every PDS type but RESERVED and ENC (TSS)");

// Written out from spec/uet.md §3.2, apart from the UET_PDS_REQUESTS table it checks.
bool request_by_spec(PdsType t) {
  return t == PdsType::kRudReq || t == PdsType::kRodReq || t == PdsType::kRudCcReq ||
         t == PdsType::kRodCcReq || t == PdsType::kRudiReq || t == PdsType::kUudReq;
}
bool pdc_request_by_spec(PdsType t) {
  return t == PdsType::kRudReq || t == PdsType::kRodReq || t == PdsType::kRudCcReq ||
         t == PdsType::kRodCcReq;
}

enum class SesExt { kNone, ATOMIC, RENDEZVOUS };

SesExt extension_of(SesOpcode op) {
  switch (op) {
#define RT_EXT_CASE(k, ext) \
  case SesOpcode::k:        \
    return SesExt::ext;
    UET_SES_OPCODE_EXTENSIONS(RT_EXT_CASE)
#undef RT_EXT_CASE
    default:
      return SesExt::kNone;
  }
}

template <typename H>
void fill_rud_rod(Rng& r, H& h) {
  RT_SET_RANDOM(r, h, retx);
  RT_SET_RANDOM(r, h, ar);
  RT_SET_RANDOM(r, h, syn);
  RT_SET_RANDOM(r, h, clear_psn_offset);
  RT_SET_RANDOM(r, h, psn);
  RT_SET_RANDOM(r, h, spdcid);
  if (h.syn()) {  // §3.3: bytes 10-11 are PDC info
    RT_SET_RANDOM(r, h, use_rsv_pdc);
    h.set_pdc_info_rsvd(0);
    RT_SET_RANDOM(r, h, psn_offset);
  } else {
    RT_SET_RANDOM(r, h, dpdcid);
  }
}

template <typename H>
void fill_ack(Rng& r, H& h) {
  RT_SET_RANDOM(r, h, m);
  RT_SET_RANDOM(r, h, retx);
  RT_SET_RANDOM(r, h, p);
  h.set_req(pick<AckReq>(r, kAckReqValues));
  RT_SET_RANDOM(r, h, ack_psn_offset);
  RT_SET_RANDOM(r, h, cack_psn);
  RT_SET_RANDOM(r, h, spdcid);
  RT_SET_RANDOM(r, h, dpdcid);
}

template <typename H>
void fill_ack_ext(Rng& r, H& h) {
  h.set_cc_type(pick<CcType>(r, kCcTypeValues));
  RT_SET_RANDOM(r, h, cc_flags);
  RT_SET_RANDOM(r, h, mpr);
  RT_SET_RANDOM(r, h, sack_psn_offset);
  RT_SET_RANDOM(r, h, sack_bitmap);
}

template <typename H>
void fill_nack(Rng& r, H& h) {
  RT_SET_RANDOM(r, h, m);
  RT_SET_RANDOM(r, h, retx);
  RT_SET_RANDOM(r, h, nt);
  h.set_nack_code(pick<NackCode>(r, kNackCodeValues));
  RT_SET_RANDOM(r, h, vendor_code);
  RT_SET_RANDOM(r, h, nack_psn);
  RT_SET_RANDOM(r, h, spdcid);
  RT_SET_RANDOM(r, h, dpdcid);
  RT_SET_RANDOM(r, h, nack_payload);
}

template <typename H>
H make_pds(Rng& r, PdsType type, NextHeader nh) {
  H h{};
  h.set_type(type);
  if constexpr (std::is_same_v<H, PdsCtrl>) {  // §3.12: the next-header slot is the type
    h.set_ctl_type(pick<CtrlType>(r, kCtrlTypeValues));
    RT_SET_RANDOM(r, h, retx);
    RT_SET_RANDOM(r, h, ar);
    RT_SET_RANDOM(r, h, syn);
    RT_SET_RANDOM(r, h, probe_opaque);
    RT_SET_RANDOM(r, h, psn);
    RT_SET_RANDOM(r, h, spdcid);
    RT_SET_RANDOM(r, h, dpdcid);
    RT_SET_RANDOM(r, h, ctrl_payload);
  } else {
    h.set_next_hdr(nh);
  }
  if constexpr (std::is_same_v<H, PdsRudRod> || std::is_same_v<H, PdsRudRodCc>) fill_rud_rod(r, h);
  if constexpr (std::is_same_v<H, PdsRudRodCc>) {
    RT_SET_RANDOM(r, h, ccc_id);
    RT_SET_RANDOM(r, h, credit_target);
  }
  if constexpr (std::is_same_v<H, PdsRudi>) {
    RT_SET_RANDOM(r, h, m);
    RT_SET_RANDOM(r, h, retx);
    RT_SET_RANDOM(r, h, pkt_id);
  }
  if constexpr (std::is_same_v<H, PdsAck> || std::is_same_v<H, PdsAckCc> ||
                std::is_same_v<H, PdsAckCcx>) {
    fill_ack(r, h);
  }
  if constexpr (std::is_same_v<H, PdsAckCc> || std::is_same_v<H, PdsAckCcx>) fill_ack_ext(r, h);
  if constexpr (std::is_same_v<H, PdsAckCc>) {
    if (h.cc_type() == CcType::kNscc) {  // §3.8.1
      RT_SET_RANDOM(r, h, service_time);
      RT_SET_RANDOM(r, h, rc);
      RT_SET_RANDOM(r, h, rcv_cwnd_pend);
      RT_SET_RANDOM(r, h, rcvd_bytes);
    } else {  // §3.8.2
      RT_SET_RANDOM(r, h, credit);
      h.set_credit_rsvd(0);
    }
    RT_SET_RANDOM(r, h, ooo_count);
  }
  if constexpr (std::is_same_v<H, PdsAckCcx> || std::is_same_v<H, PdsNackCcx>) {
    const auto ccx = random_bytes<16>(r);
    h.set_ccx_state(ccx);
  }
  if constexpr (std::is_same_v<H, PdsNack> || std::is_same_v<H, PdsNackCcx>) fill_nack(r, h);
  return h;
}

template <typename H>
void fill_request_common(Rng& r, H& h, SesOpcode op) {
  h.set_opcode(op);
  h.set_ver(kSesVersion);
  RT_SET_RANDOM(r, h, dc);
  RT_SET_RANDOM(r, h, ie);
  RT_SET_RANDOM(r, h, rel);
  RT_SET_RANDOM(r, h, eom);
  RT_SET_RANDOM(r, h, som);
  RT_SET_RANDOM(r, h, ri_generation);
  RT_SET_RANDOM(r, h, job_id);
  RT_SET_RANDOM(r, h, pid_on_fep);
  RT_SET_RANDOM(r, h, resource_index);
}

void add_ses_request(Rng& r, FrameMaker& m, NextHeader nh, size_t payload) {
  const SesOpcode op = pick<SesOpcode>(r, kSesOpcodeValues);
  switch (nh) {
    case NextHeader::kReqStd: {
      SesStandardRequest h{};
      fill_request_common(r, h, op);
      RT_SET_RANDOM(r, h, hd);
      RT_SET_RANDOM(r, h, message_id);
      RT_SET_RANDOM(r, h, buffer_offset);
      RT_SET_RANDOM(r, h, initiator);
      RT_SET_RANDOM(r, h, match_bits);
      RT_SET_RANDOM(r, h, request_length);
      if (h.som()) {
        RT_SET_RANDOM(r, h, header_data);
      } else {  // §4.2: payload length and message offset
        h.set_cont_rsvd(0);
        h.set_payload_length(static_cast<uint16_t>(payload));
        RT_SET_RANDOM(r, h, message_offset);
      }
      m.add(h);
      break;
    }
    case NextHeader::kReqMedium: {
      SesMediumRequest h{};
      fill_request_common(r, h, op);
      RT_SET_RANDOM(r, h, hd);
      RT_SET_RANDOM(r, h, request_length);
      if (h.hd()) {
        RT_SET_RANDOM(r, h, header_data);
      } else {
        RT_SET_RANDOM(r, h, buffer_offset);
      }
      RT_SET_RANDOM(r, h, initiator);
      RT_SET_RANDOM(r, h, match_bits);
      m.add(h);
      break;
    }
    case NextHeader::kReqSmall: {
      SesSmallRequest h{};
      fill_request_common(r, h, op);
      RT_SET_RANDOM(r, h, request_length);
      RT_SET_RANDOM(r, h, buffer_offset);
      m.add(h);
      break;
    }
    default:
      FAIL() << "not a request header";
  }

  // §4.5: the extension header the opcode calls for; atomic ones after any request header,
  // the rendezvous one only after a standard request (as upstream Wireshark parses it).
  SesExt ext = extension_of(op);
  if (ext == SesExt::RENDEZVOUS && nh != NextHeader::kReqStd) ext = SesExt::kNone;
  switch (ext) {
    case SesExt::kNone:
      break;
    case SesExt::ATOMIC: {
      const AtomicOpcode aop = pick<AtomicOpcode>(r, kAtomicOpcodeValues);
      const auto v = static_cast<uint32_t>(aop);
      if (v >= UET_ATOMIC_CAS_FIRST && v <= UET_ATOMIC_CAS_LAST) {
        SesCompareSwap h{};
        h.set_atomic_opcode(aop);
        h.set_data_type(pick<AtomicDataType>(r, kAtomicDataTypeValues));
        RT_SET_RANDOM(r, h, sem_ctl);
        const auto cmp = random_bytes<16>(r);
        const auto swp = random_bytes<16>(r);
        h.set_compare(cmp);
        h.set_swap(swp);
        m.add(h);
      } else {
        SesAtomic h{};
        h.set_atomic_opcode(aop);
        h.set_data_type(pick<AtomicDataType>(r, kAtomicDataTypeValues));
        RT_SET_RANDOM(r, h, sem_ctl);
        m.add(h);
      }
      break;
    }
    case SesExt::RENDEZVOUS: {
      SesRendezvous h{};
      RT_SET_RANDOM(r, h, eager_length);
      RT_SET_RANDOM(r, h, read_pid_on_fep);
      RT_SET_RANDOM(r, h, read_resource_index);
      RT_SET_RANDOM(r, h, read_offset);
      RT_SET_RANDOM(r, h, read_match_bits);
      m.add(h);
      break;
    }
  }
}

void add_ses_response(Rng& r, FrameMaker& m, NextHeader nh, size_t payload) {
  switch (nh) {
    case NextHeader::kRsp: {
      SesResponse h{};
      RT_SET_RANDOM(r, h, list);
      SesRspOpcode op;
      do {
        op = pick<SesRspOpcode>(r, kSesRspOpcodeValues);
      } while (op == SesRspOpcode::kResponseWithData);
      h.set_opcode(op);
      h.set_ver(kSesVersion);
      h.set_return_code(pick<SesReturnCode>(r, kSesReturnCodeValues));
      RT_SET_RANDOM(r, h, message_id);
      RT_SET_RANDOM(r, h, ri_generation);
      RT_SET_RANDOM(r, h, job_id);
      RT_SET_RANDOM(r, h, modified_length);
      m.add(h);
      break;
    }
    case NextHeader::kRspData: {
      SesResponseData h{};
      RT_SET_RANDOM(r, h, list);
      h.set_opcode(SesRspOpcode::kResponseWithData);
      h.set_ver(kSesVersion);
      h.set_return_code(pick<SesReturnCode>(r, kSesReturnCodeValues));
      RT_SET_RANDOM(r, h, message_id);
      RT_SET_RANDOM(r, h, job_id);
      RT_SET_RANDOM(r, h, read_req_message_id);
      h.set_payload_length(static_cast<uint16_t>(payload));
      RT_SET_RANDOM(r, h, modified_length);
      RT_SET_RANDOM(r, h, message_offset);
      m.add(h);
      break;
    }
    case NextHeader::kRspDataSmall: {
      SesResponseDataSmall h{};
      RT_SET_RANDOM(r, h, list);
      h.set_opcode(SesRspOpcode::kResponseWithData);
      h.set_ver(kSesVersion);
      h.set_return_code(pick<SesReturnCode>(r, kSesReturnCodeValues));
      h.set_payload_length(static_cast<uint16_t>(payload));
      m.add(h);
      break;
    }
    case NextHeader::kNone:
      break;
    default:
      FAIL() << "not a response header";
  }
}

BuiltFrame random_uet_frame(Rng& r, const Shape& shape = {}) {
  BuiltFrame f;
  f.protocol = Protocol::kUet;
  f.encap = random_encap(r, Protocol::kUet, shape, &f.opts);
  FrameMaker m(&f);

  // §5: an optional TSS header, with or without SSI.
  switch (r.below(4)) {
    case 0: {
      Tss h{};
      h.set_type(PdsType::kEnc);
      h.set_sp(false);
      RT_SET_RANDOM(r, h, an);
      RT_SET_RANDOM(r, h, sdi);
      RT_SET_RANDOM(r, h, tsc);
      m.add(h);
      break;
    }
    case 1: {
      TssSp h{};
      h.set_type(PdsType::kEnc);
      h.set_sp(true);
      RT_SET_RANDOM(r, h, an);
      RT_SET_RANDOM(r, h, sdi);
      RT_SET_RANDOM(r, h, ssi);
      RT_SET_RANDOM(r, h, tsc);
      m.add(h);
      break;
    }
    default:
      break;
  }

  // §6 rule 4: requests carry request headers, ACK/NACK/RUDI_RESP responses or none, CTRL none.
  f.pds_type = kPdsTypes[r.below(std::size(kPdsTypes))];
  if (f.pds_type == PdsType::kCtrl) {
    f.next_hdr = NextHeader::kNone;
  } else if (request_by_spec(f.pds_type)) {
    constexpr NextHeader kReq[] = {NextHeader::kReqSmall, NextHeader::kReqMedium,
                                   NextHeader::kReqStd};
    f.next_hdr = kReq[r.below(std::size(kReq))];
  } else {
    constexpr NextHeader kRsp[] = {NextHeader::kNone, NextHeader::kRsp, NextHeader::kRspData,
                                   NextHeader::kRspDataSmall};
    f.next_hdr = kRsp[r.below(std::size(kRsp))];
  }
  std::vector<uint8_t> payload(r.upto(kMaxPayload));
  r.fill(payload);

  switch (f.pds_type) {
#define RT_PDS_CASE(k, id, Name)                      \
  case PdsType::k:                                    \
    m.add(make_pds<Name>(r, f.pds_type, f.next_hdr)); \
    break;
    UET_PDS_TYPE_HEADERS(RT_PDS_CASE)
#undef RT_PDS_CASE
    default:
      ADD_FAILURE() << "no header for PDS type";
  }
  if (request_by_spec(f.pds_type)) {
    add_ses_request(r, m, f.next_hdr, payload.size());
  } else {
    add_ses_response(r, m, f.next_hdr, payload.size());
  }
  m.add_payload(payload, 0);
  m.finish();
  return f;
}

// ---------------------------------------------------------------------------- RoCEv2 frames

struct RoceOp {
  RoceOpcode opcode;
  uint8_t ext;
  bool payload;
};

constexpr RoceOp kRoceOps[] = {
#define RT_ROCE_OP(k, x, p) RoceOp{RoceOpcode::k, static_cast<uint8_t>(x), (p) != 0},
    ROCEV2_OPCODE_LAYOUT(RT_ROCE_OP)
#undef RT_ROCE_OP
};

BuiltFrame random_roce_frame(Rng& r, const Shape& shape = {}) {
  BuiltFrame f;
  f.protocol = Protocol::kRoce;
  f.encap = random_encap(r, Protocol::kRoce, shape, &f.opts);
  FrameMaker m(&f);

  const RoceOp op = kRoceOps[r.below(std::size(kRoceOps))];
  f.roce_opcode = op.opcode;
  std::vector<uint8_t> payload(op.payload ? r.upto(kMaxPayload) : 0);
  r.fill(payload);
  const size_t pad = (4 - payload.size() % 4) % 4;

  Bth bth{};
  bth.set_opcode(op.opcode);
  RT_SET_RANDOM(r, bth, se);
  RT_SET_RANDOM(r, bth, mig);
  bth.set_pad_cnt(static_cast<uint8_t>(pad));
  bth.set_tver(0);
  RT_SET_RANDOM(r, bth, pkey);
  RT_SET_RANDOM(r, bth, fecn);
  RT_SET_RANDOM(r, bth, becn);
  RT_SET_RANDOM(r, bth, dest_qp);
  RT_SET_RANDOM(r, bth, ack_req);
  RT_SET_RANDOM(r, bth, psn);
  m.add(bth);

  // rocev2.md §4: extended headers in this order.
  if (op.ext & ROCEV2_X_DETH) {
    Deth h{};
    RT_SET_RANDOM(r, h, qkey);
    RT_SET_RANDOM(r, h, src_qp);
    m.add(h);
  }
  if (op.ext & ROCEV2_X_RETH) {
    Reth h{};
    RT_SET_RANDOM(r, h, va);
    RT_SET_RANDOM(r, h, rkey);
    RT_SET_RANDOM(r, h, dma_length);
    m.add(h);
  }
  if (op.ext & ROCEV2_X_ATOMIC) {
    AtomicEth h{};
    RT_SET_RANDOM(r, h, va);
    RT_SET_RANDOM(r, h, rkey);
    RT_SET_RANDOM(r, h, swap_add);
    RT_SET_RANDOM(r, h, compare);
    m.add(h);
  }
  if (op.ext & ROCEV2_X_AETH) {
    Aeth h{};
    h.set_syndrome_type(pick<AethType>(r, kAethTypeValues));
    RT_SET_RANDOM(r, h, syndrome_value);
    RT_SET_RANDOM(r, h, msn);
    m.add(h);
  }
  if (op.ext & ROCEV2_X_ATOMIC_ACK) {
    AtomicAckEth h{};
    RT_SET_RANDOM(r, h, orig_data);
    m.add(h);
  }
  if (op.ext & ROCEV2_X_IMM) {
    ImmDt h{};
    RT_SET_RANDOM(r, h, imm);
    m.add(h);
  }
  if (op.ext & ROCEV2_X_IETH) {
    Ieth h{};
    RT_SET_RANDOM(r, h, rkey);
    m.add(h);
  }
  if (op.ext & ROCEV2_X_CNP) m.add(Cnp{});  // §5: reserved, zero on send

  m.add_payload(payload, pad);
  m.finish();
  return f;
}

// ----------------------------------------------------------------------------- verification

const uint8_t* raw_of(const void* h) { return static_cast<const uint8_t*>(h); }

// Every header pointer of a Decoded with the header it names.
std::vector<std::pair<const HeaderDesc*, const uint8_t*>> decoded_headers(const Decoded& d) {
  return {
      {&kEthernetDesc, raw_of(d.eth)},
      {&kVlanDesc, raw_of(d.vlan)},
      {&kIpv4Desc, raw_of(d.ipv4)},
      {&kIpv6Desc, raw_of(d.ipv6)},
      {&kUdpDesc, raw_of(d.udp)},
      {&kUetEntropyDesc, raw_of(d.entropy)},
      {&kTssDesc, raw_of(d.tss)},
      {&kTssSpDesc, raw_of(d.tss_sp)},
      {d.pds_desc, d.pds},
      {d.ses_desc, d.ses},
      {&kSesAtomicDesc, raw_of(d.ses_atomic)},
      {&kSesCompareSwapDesc, raw_of(d.ses_cas)},
      {&kSesRendezvousDesc, raw_of(d.ses_rendezvous)},
      {&kBthDesc, raw_of(d.bth)},
      {&kDethDesc, raw_of(d.deth)},
      {&kRethDesc, raw_of(d.reth)},
      {&kAtomicEthDesc, raw_of(d.atomic_eth)},
      {&kAethDesc, raw_of(d.aeth)},
      {&kAtomicAckEthDesc, raw_of(d.atomic_ack_eth)},
      {&kImmDtDesc, raw_of(d.immdt)},
      {&kIethDesc, raw_of(d.ieth)},
      {&kCnpDesc, raw_of(d.cnp)},
  };
}

// Field-by-field comparison through the registry, so a failure names the field.
void expect_fields(const HeaderDesc& desc, const uint8_t* got, const uint8_t* want,
                   const std::string& where) {
  for (const FieldDesc& fd : desc.fields) {
    if (fd.kind == Kind::BYTES) {
      EXPECT_EQ(hex(std::span(got + fd.offset, fd.width)),
                hex(std::span(want + fd.offset, fd.width)))
          << desc.id << "." << fd.name << " " << where;
    } else {
      EXPECT_EQ(read_field(got, fd), read_field(want, fd))
          << desc.id << "." << fd.name << " " << where;
    }
  }
}

// The encapsulation as the Encap asked for it, read back with the typed accessors.
void expect_encap(const BuiltFrame& f, const Decoded& d, const std::string& where) {
  const Encap& e = f.encap;
  const size_t len = f.bytes.size();
  ASSERT_NE(d.eth, nullptr) << where;
  EXPECT_TRUE(std::ranges::equal(d.eth->dst(), e.dst_mac)) << where;
  EXPECT_TRUE(std::ranges::equal(d.eth->src(), e.src_mac)) << where;
  const uint16_t l3_type = e.ipv6 ? NET_ETHERTYPE_IPV6 : NET_ETHERTYPE_IPV4;
  if (e.vlan) {
    ASSERT_NE(d.vlan, nullptr) << where;
    EXPECT_EQ(d.eth->ethertype(), NET_ETHERTYPE_VLAN) << where;
    EXPECT_EQ(d.vlan->pcp(), e.vlan_tci >> 13) << where;
    EXPECT_EQ(d.vlan->dei(), ((e.vlan_tci >> 12) & 1) != 0) << where;
    EXPECT_EQ(d.vlan->vid(), e.vlan_tci & 0xFFF) << where;
    EXPECT_EQ(d.vlan->ethertype(), l3_type) << where;
  } else {
    EXPECT_EQ(d.vlan, nullptr) << where;
    EXPECT_EQ(d.eth->ethertype(), l3_type) << where;
  }
  const size_t l3 = e.vlan ? 18 : 14;
  const uint8_t l4_proto = e.ip_only ? e.ip_proto : uint8_t{NET_IPPROTO_UDP};
  const uint8_t* ip = f.bytes.data() + l3;
  size_t l4;
  if (e.ipv6) {
    ASSERT_NE(d.ipv6, nullptr) << where;
    EXPECT_EQ(d.ipv4, nullptr) << where;
    const Ipv6& h = *d.ipv6;
    EXPECT_EQ(h.version(), 6) << where;
    EXPECT_EQ(h.dscp(), e.dscp) << where;
    EXPECT_EQ(h.ecn(), e.ecn) << where;
    EXPECT_EQ(h.flow_label(), e.flow_label) << where;
    EXPECT_EQ(h.payload_length(), len - l3 - Ipv6::kSize) << where;
    EXPECT_EQ(h.next_header(), l4_proto) << where;
    EXPECT_EQ(h.hop_limit(), e.ttl) << where;
    EXPECT_TRUE(std::ranges::equal(h.src(), e.src_ip6)) << where;
    EXPECT_TRUE(std::ranges::equal(h.dst(), e.dst_ip6)) << where;
    l4 = l3 + Ipv6::kSize;
  } else {
    ASSERT_NE(d.ipv4, nullptr) << where;
    EXPECT_EQ(d.ipv6, nullptr) << where;
    const Ipv4& h = *d.ipv4;
    EXPECT_EQ(h.version(), 4) << where;
    EXPECT_EQ(h.ihl(), 5) << where;
    EXPECT_EQ(h.dscp(), e.dscp) << where;
    EXPECT_EQ(h.ecn(), e.ecn) << where;
    EXPECT_EQ(h.total_length(), len - l3) << where;
    EXPECT_EQ(h.id(), e.ip_id) << where;
    EXPECT_EQ(h.flag_rsvd(), 0) << where;
    EXPECT_EQ(h.df(), e.dont_fragment) << where;
    EXPECT_FALSE(h.mf()) << where;
    EXPECT_EQ(h.frag_offset(), 0) << where;
    EXPECT_EQ(h.ttl(), e.ttl) << where;
    EXPECT_EQ(h.protocol(), l4_proto) << where;
    EXPECT_EQ(h.checksum(), ref_ipv4_checksum(std::span(ip, Ipv4::kSize))) << where;
    EXPECT_EQ(h.src(), e.src_ip4) << where;
    EXPECT_EQ(h.dst(), e.dst_ip4) << where;
    l4 = l3 + Ipv4::kSize;
  }
  EXPECT_EQ(d.ecn, e.ecn) << where;
  EXPECT_EQ(d.ev, e.sport) << where;  // UET: the EV; RoCEv2: the UDP source port
  if (e.ip_only) {
    EXPECT_EQ(d.udp, nullptr) << where;
    ASSERT_NE(d.entropy, nullptr) << where;
    EXPECT_EQ(d.entropy->entropy(), e.sport) << where;
    EXPECT_EQ(d.entropy->rsvd(), 0) << where;
  } else {
    EXPECT_EQ(d.entropy, nullptr) << where;
    ASSERT_NE(d.udp, nullptr) << where;
    const Udp& u = *d.udp;
    EXPECT_EQ(u.sport(), e.sport) << where;
    EXPECT_EQ(u.dport(), e.dport) << where;
    EXPECT_EQ(u.length(), len - l4) << where;
    if (e.udp_checksum) {
      EXPECT_EQ(u.checksum(), ref_udp_checksum(ip, e.ipv6, std::span(f.bytes).subspan(l4)))
          << where;
    } else {
      EXPECT_EQ(u.checksum(), 0) << where;
    }
  }
}

void expect_decodes_to_built(const BuiltFrame& f, const std::string& where) {
  Decoded d;
  WireError err = decode_frame(f.bytes, &d, f.opts);
  ASSERT_EQ(err, WireError::kOk) << name(err) << " " << where << " frame " << hex(f.bytes);
  if (d.tss != nullptr || d.tss_sp != nullptr) {
    // §5: the decoder stops at the TSS header. These frames carry their PDS and SES in clear,
    // standing for a plaintext that TSS opened: decode_opened() must read it to the end.
    EXPECT_EQ(d.pds, nullptr) << where;
    EXPECT_EQ(d.sealed.data() + d.sealed.size(), f.bytes.data() + f.bytes.size()) << where;
    err = decode_opened(d.sealed, &d);
    ASSERT_EQ(err, WireError::kOk) << name(err) << " " << where << " frame " << hex(f.bytes);
  }
  EXPECT_EQ(d.protocol, f.protocol) << where;
  EXPECT_EQ(d.frame.data(), f.bytes.data()) << where;
  expect_encap(f, d, where);

  // The header stack: every header, in wire order, at its offset.
  ASSERT_EQ(d.depth, f.layers.size()) << where;
  for (size_t i = 0; i < f.layers.size(); ++i) {
    EXPECT_EQ(d.stack[i].desc, f.layers[i].desc)
        << "stack[" << i << "] is " << (d.stack[i].desc ? d.stack[i].desc->id : "null") << ", want "
        << f.layers[i].desc->id << " " << where;
    EXPECT_EQ(d.stack[i].offset, f.layers[i].offset) << f.layers[i].desc->id << " " << where;
  }

  // The named pointers: each one set points at its layer; the others are null.
  size_t set = 0;
  for (const auto& [desc, ptr] : decoded_headers(d)) {
    if (ptr == nullptr) continue;
    ++set;
    ASSERT_NE(desc, nullptr) << where;
    const auto it = std::find_if(f.layers.begin(), f.layers.end(),
                                 [&](const Layer& l) { return l.desc == desc; });
    ASSERT_NE(it, f.layers.end()) << "decoder set " << desc->id << " " << where;
    EXPECT_EQ(ptr, f.bytes.data() + it->offset) << desc->id << " " << where;
  }
  EXPECT_EQ(set, f.layers.size()) << where;

  // Every field of every transport header has the value written.
  for (const Layer& l : f.layers) {
    if (!l.check_bytes) continue;
    expect_fields(*l.desc, f.bytes.data() + l.offset, l.bytes.data(), where);
  }

  // Payload: in place, the bytes appended.
  EXPECT_EQ(d.payload.data(), f.bytes.data() + f.payload_offset) << where;
  EXPECT_EQ(hex(d.payload), hex(f.payload)) << where;

  if (f.protocol == Protocol::kUet) {
    EXPECT_EQ(d.pds_type, f.pds_type) << where;
    EXPECT_EQ(d.next_hdr, f.next_hdr) << where;
    ASSERT_NE(d.pds, nullptr) << where;
    EXPECT_EQ(as<PdsPrologue>(d.pds)->type(), f.pds_type) << where;
    EXPECT_EQ(d.ses == nullptr, f.next_hdr == NextHeader::kNone) << where;
    EXPECT_EQ(d.bth, nullptr) << where;
    EXPECT_EQ(d.icrc, 0u) << where;
  } else {
    ASSERT_NE(d.bth, nullptr) << where;
    EXPECT_EQ(d.bth->opcode(), f.roce_opcode) << where;
    EXPECT_EQ(d.bth->pad_cnt(), f.pad) << where;
    EXPECT_EQ(d.pds, nullptr) << where;
    const size_t n = f.bytes.size();
    EXPECT_EQ(d.icrc, load_icrc(f.bytes.data() + n - kIcrcSize)) << where;
    const size_t l3 = f.encap.vlan ? 18 : 14;
    EXPECT_EQ(d.icrc, ref_icrc(std::span(f.bytes).subspan(l3, n - kIcrcSize - l3), f.encap.ipv6))
        << "ICRC differs from the reference CRC " << where;
    for (size_t i = 0; i < f.pad; ++i)
      EXPECT_EQ(f.bytes[f.payload_offset + f.payload.size() + i], 0) << "pad " << where;
  }
}

TEST(Roundtrip_UetTables, RequestTypesAreThoseOfTheSpec) {
  for (PdsType t : kPdsTypes) {
    EXPECT_EQ(wire::is_request(t), request_by_spec(t)) << static_cast<int>(t);
    EXPECT_EQ(wire::is_pdc_request(t), pdc_request_by_spec(t)) << static_cast<int>(t);
  }
  for (uint32_t v = 0; v <= 7; ++v) {
    const auto nh = static_cast<NextHeader>(v);
    EXPECT_EQ(wire::is_request_ses(nh), v >= 1 && v <= 3) << v;  // REQ_SMALL..REQ_STD (§4)
  }
}

TEST(Roundtrip_UetFrames, RandomValidFramesDecodeToWhatWasBuilt) {
  Rng r("frames/uet");
  std::map<PdsType, int> pds_seen;
  std::map<std::string_view, int> header_seen;
  for (int i = 0; i < kFrameIterations; ++i) {
    const BuiltFrame f = random_uet_frame(r);
    if (HasFatalFailure()) return;
    expect_decodes_to_built(f, r.where(i));
    if (HasFailure()) return;  // one frame's worth of messages is enough
    ++pds_seen[f.pds_type];
    for (const Layer& l : f.layers) ++header_seen[l.desc->id];
  }
  // The generator reached every PDS type and every UET header.
  EXPECT_EQ(pds_seen.size(), std::size(kPdsTypes));
  for (const HeaderDesc* h : kUetHeaders) {
    if (h->id == "pds_prologue") continue;  // the common prefix, never a header on its own
    EXPECT_GT(header_seen[h->id], 0) << h->id << " never generated";
  }
}

TEST(Roundtrip_RoceFrames, RandomValidFramesDecodeToWhatWasBuilt) {
  Rng r("frames/rocev2");
  std::map<RoceOpcode, int> seen;
  for (int i = 0; i < kFrameIterations; ++i) {
    const BuiltFrame f = random_roce_frame(r);
    if (HasFatalFailure()) return;
    expect_decodes_to_built(f, r.where(i));
    if (HasFailure()) return;
    ++seen[f.roce_opcode];
  }
  EXPECT_EQ(seen.size(), std::size(kRoceOps)) << "every opcode of ROCEV2_OPCODE_LAYOUT";
}

// ======================================================================= 3. checksums and ICRC

WireError decode_with(std::span<const uint8_t> frame, const DecodeOptions& opts) {
  Decoded d;
  return decode_frame(frame, &d, opts);
}

bool is_typed_error(WireError e) {
  return e != WireError::kOk && static_cast<size_t>(e) < kNumWireErrors && e != WireError::kNoRoom;
}

void fix_ipv4_checksum(std::vector<uint8_t>& frame, size_t l3) {
  const uint16_t c = ref_ipv4_checksum(std::span(frame).subspan(l3, Ipv4::kSize));
  frame[l3 + 10] = static_cast<uint8_t>(c >> 8);
  frame[l3 + 11] = static_cast<uint8_t>(c);
}

constexpr int kFlipFrames = 24;

// RFC 1071: a ones'-complement sum catches every single-bit error in what it covers.
TEST(Roundtrip_UetChecksums, AnyBitFlipInTheIpv4HeaderIsDetected) {
  Rng r("flips/uet/ipv4");
  for (int i = 0; i < kFlipFrames * 8; ++i) {
    const BuiltFrame f = random_uet_frame(r, kIpv4);
    if (HasFatalFailure()) return;
    const size_t l3 = f.encap.vlan ? 18 : 14;
    ASSERT_EQ(decode_with(f.bytes, f.opts), WireError::kOk) << r.where(i);
    for (size_t bit = 0; bit < Ipv4::kSize * 8; ++bit) {
      std::vector<uint8_t> g = f.bytes;
      const size_t byte = l3 + bit / 8;
      g[byte] ^= static_cast<uint8_t>(0x80 >> (bit % 8));
      const WireError e = decode_with(g, f.opts);
      // Version, IHL and total length are checked before the checksum; the rest meet it.
      const bool before_checksum = bit < 8 || (bit >= 16 && bit < 32);
      if (before_checksum) {
        EXPECT_TRUE(is_typed_error(e))
            << "IPv4 bit " << bit << ": " << name(e) << " " << r.where(i);
      } else {
        EXPECT_EQ(e, WireError::kBadIpChecksum)
            << "IPv4 bit " << bit << ": " << name(e) << " " << r.where(i);
      }
    }
    if (HasFailure()) return;
  }
}

TEST(Roundtrip_UetChecksums, AnyBitFlipInTheUdpDatagramIsDetected) {
  Rng r("flips/uet/udp");
  std::map<WireError, int> outcomes;
  for (int i = 0; i < kFlipFrames; ++i) {
    const BuiltFrame f = random_uet_frame(r, kUdpChecksummed);
    if (HasFatalFailure()) return;
    const size_t l4 = (f.encap.vlan ? 18 : 14) + (f.encap.ipv6 ? Ipv6::kSize : Ipv4::kSize);
    ASSERT_EQ(decode_with(f.bytes, f.opts), WireError::kOk) << r.where(i);
    std::vector<uint8_t> g = f.bytes;
    for (size_t bit = 0; bit < (g.size() - l4) * 8; ++bit) {
      const size_t byte = l4 + bit / 8;
      const auto flip = static_cast<uint8_t>(0x80 >> (bit % 8));
      g[byte] ^= flip;
      const WireError e = decode_with(g, f.opts);
      ++outcomes[e];
      const size_t in_udp = bit / 8;
      if (in_udp == 4 || in_udp == 5) {
        EXPECT_EQ(e, WireError::kBadUdpLength) << "UDP bit " << bit << " " << r.where(i);
      } else if ((in_udp == 6 || in_udp == 7) && g[l4 + 6] == 0 && g[l4 + 7] == 0) {
        // RFC 768: a zero checksum means "not computed"; a flip that lands there passes.
        EXPECT_EQ(e, WireError::kOk) << "UDP bit " << bit << " " << r.where(i);
      } else {
        EXPECT_EQ(e, WireError::kBadUdpChecksum)
            << "UDP bit " << bit << ": " << name(e) << " " << r.where(i);
      }
      g[byte] ^= flip;
    }
    if (HasFailure()) return;
  }
  EXPECT_GT(outcomes[WireError::kBadUdpChecksum], 0);
}

// CRC-32 catches every single-bit error in what it covers; only BTH byte 4's FECN and BECN are
// masked (its six reserved bits are checked as reserved).
TEST(Roundtrip_RoceIcrc, AnyUnmaskedBitFlipAfterTheUdpHeaderIsDetected) {
  Rng r("flips/rocev2");
  std::map<WireError, int> outcomes;
  for (int i = 0; i < kFlipFrames; ++i) {
    // RoCEv2 senders leave the UDP checksum zero: the ICRC alone protects the transport.
    const BuiltFrame f = random_roce_frame(r, kUdpChecksumOff);
    if (HasFatalFailure()) return;
    const size_t bth =
        (f.encap.vlan ? 18 : 14) + (f.encap.ipv6 ? Ipv6::kSize : Ipv4::kSize) + Udp::kSize;
    ASSERT_EQ(decode_with(f.bytes, f.opts), WireError::kOk) << r.where(i);
    std::vector<uint8_t> g = f.bytes;
    for (size_t bit = 0; bit < (g.size() - bth) * 8; ++bit) {
      const size_t byte = bth + bit / 8;
      const auto flip = static_cast<uint8_t>(0x80 >> (bit % 8));
      g[byte] ^= flip;
      const WireError e = decode_with(g, f.opts);
      ++outcomes[e];
      if (bit / 8 == 4 && (flip & 0xC0) != 0) {
        EXPECT_EQ(e, WireError::kOk) << "FECN/BECN are masked " << r.where(i);
      } else if (bit / 8 == 4) {
        EXPECT_EQ(e, WireError::kReservedBitsSet) << "BTH rsvd6 bit " << bit << " " << r.where(i);
      } else {
        EXPECT_TRUE(is_typed_error(e))
            << "bit " << bit << " after UDP: " << name(e) << " " << r.where(i);
      }
      g[byte] ^= flip;
    }
    if (HasFailure()) return;
  }
  EXPECT_GT(outcomes[WireError::kBadIcrc], outcomes[WireError::kOk]);
}

// A switch may rewrite ECN, TTL and FECN/BECN; the ICRC ignores them, but the IPv4 header
// checksum (and a nonzero UDP checksum) do not, so the switch must fix those.
TEST(Roundtrip_RoceIcrc, VariantFieldsDecodeOnceTheIpChecksumIsFixed) {
  Rng r("variant/rocev2");
  for (int i = 0; i < kFlipFrames * 8; ++i) {
    const BuiltFrame f = random_roce_frame(r, kUdpChecksumOff);
    if (HasFatalFailure()) return;
    const size_t l3 = f.encap.vlan ? 18 : 14;
    const size_t bth = l3 + (f.encap.ipv6 ? Ipv6::kSize : Ipv4::kSize) + Udp::kSize;
    const uint8_t ecn = static_cast<uint8_t>(f.encap.ecn ^ (1 + r.below(3)));  // a different one
    Decoded d;

    // ECN and TTL.
    std::vector<uint8_t> g = f.bytes;
    if (f.encap.ipv6) {
      as<Ipv6>(g.data() + l3)->set_ecn(ecn);
      as<Ipv6>(g.data() + l3)->set_hop_limit(static_cast<uint8_t>(f.encap.ttl - 1));
      // Expect: IPv6 has no header checksum, so nothing to fix.
    } else {
      as<Ipv4>(g.data() + l3)->set_ecn(ecn);
      EXPECT_EQ(decode_with(g, f.opts), WireError::kBadIpChecksum) << "ECN " << r.where(i);
      fix_ipv4_checksum(g, l3);
      ASSERT_EQ(decode_with(g, f.opts), WireError::kOk) << "ECN, fixed " << r.where(i);
      as<Ipv4>(g.data() + l3)->set_ttl(static_cast<uint8_t>(f.encap.ttl - 1));
      EXPECT_EQ(decode_with(g, f.opts), WireError::kBadIpChecksum) << "TTL " << r.where(i);
      fix_ipv4_checksum(g, l3);
    }
    ASSERT_EQ(decode_frame(g, &d, f.opts), WireError::kOk) << "ECN+TTL " << r.where(i);
    EXPECT_EQ(d.ecn, ecn) << r.where(i);

    // FECN and BECN: no IP checksum involved; the ICRC masks them.
    g[bth + 4] ^= 0x80;
    ASSERT_EQ(decode_frame(g, &d, f.opts), WireError::kOk) << "FECN " << r.where(i);
    EXPECT_EQ(d.bth->fecn(), !as<Bth>(f.bytes.data() + bth)->fecn()) << r.where(i);
    g[bth + 4] ^= 0x40;
    ASSERT_EQ(decode_frame(g, &d, f.opts), WireError::kOk) << "BECN " << r.where(i);
    EXPECT_EQ(d.bth->becn(), !as<Bth>(f.bytes.data() + bth)->becn()) << r.where(i);
    if (HasFailure()) return;
  }
}

TEST(Roundtrip_RoceIcrc, FecnNeedsTheUdpChecksumFixedWhenOneIsSent) {
  Rng r("variant/rocev2/udp");
  for (int i = 0; i < kFlipFrames * 8; ++i) {
    const BuiltFrame f = random_roce_frame(r, kUdpChecksummed);
    if (HasFatalFailure()) return;
    const size_t l3 = f.encap.vlan ? 18 : 14;
    const size_t l4 = l3 + (f.encap.ipv6 ? Ipv6::kSize : Ipv4::kSize);
    std::vector<uint8_t> g = f.bytes;
    g[l4 + Udp::kSize + 4] ^= 0x80;
    EXPECT_EQ(decode_with(g, f.opts), WireError::kBadUdpChecksum) << r.where(i);
    const uint16_t c = ref_udp_checksum(g.data() + l3, f.encap.ipv6, std::span(g).subspan(l4));
    g[l4 + 6] = static_cast<uint8_t>(c >> 8);
    g[l4 + 7] = static_cast<uint8_t>(c);
    EXPECT_EQ(decode_with(g, f.opts), WireError::kOk) << r.where(i);
    DecodeOptions no_udp = f.opts;
    no_udp.verify_udp_checksum = false;
    g = f.bytes;
    g[l4 + Udp::kSize + 4] ^= 0x40;
    EXPECT_EQ(decode_with(g, no_udp), WireError::kOk) << "ICRC alone masks BECN " << r.where(i);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace uet::wire
