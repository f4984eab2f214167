#include "transport/wire/decode.h"

#include <type_traits>

#include "transport/wire/checksum.h"
#include "transport/wire/icrc.h"

namespace uet::wire {

namespace {

// A cursor over the frame: takes headers in order, checking that each one fits and that its
// reserved fields are zero, and records it on the header stack.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, Decoded* out, bool stack = true)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()), out_(out), stack_(stack) {}

  size_t left() const noexcept { return static_cast<size_t>(end_ - p_); }
  const uint8_t* pos() const noexcept { return p_; }
  void shrink_to(size_t n) noexcept { end_ = p_ + n; }
  void skip(size_t n) noexcept { p_ += n; }  // caller checked n <= left()

  // Takes header H; `truncated` is the error when it does not fit.
  template <typename H>
  WireError take(const H** h, WireError truncated) noexcept {
    if (left() < H::kSize) return truncated;
    const H* hdr = as<H>(p_);
    if (!hdr->reserved_clear()) return WireError::kReservedBitsSet;
    push(&HeaderTraits<H>::desc);
    p_ += H::kSize;
    *h = hdr;
    return WireError::kOk;
  }

 private:
  void push(const HeaderDesc* d) noexcept {
    if (stack_ && out_->depth < out_->stack.size()) {
      out_->stack[out_->depth++] = HeaderRef{d, static_cast<uint16_t>(p_ - out_->frame.data())};
    }
  }

  const uint8_t* p_;
  const uint8_t* end_;
  Decoded* out_;
  bool stack_;
};

// Inlining: the steps every frame takes (IPv4, UDP, the PDS and SES headers) are always
// inline into decode_frame() and decode_uet_at(), so the cursor stays in registers instead of
// going through memory at each call (bench/NOTES.md, "Fourth round (h/engine4)").
// decode_uet_at() itself, decode_roce() and decode_ipv6() stay out of line:
// decode_uet_at() is reached from four places and is the largest.

#define WIRE_TRY(expr)                        \
  do {                                        \
    const WireError wire_err_ = (expr);       \
    if (wire_err_ != WireError::kOk) return wire_err_; \
  } while (0)


// spec/uet.md §6 rule 4: which SES header may follow which PDS type.
bool next_header_allowed(PdsType t, NextHeader nh) noexcept {
  const auto v = static_cast<uint32_t>(nh);
  if (v > static_cast<uint32_t>(NextHeader::kRspDataSmall)) return false;
  if (nh == NextHeader::kNone) return true;
  return is_request(t) == is_request_ses(nh);
}

template <typename H>
WireError check_ses_request(const H& h) noexcept {
  if (static_cast<uint32_t>(h.opcode()) > static_cast<uint32_t>(SesOpcode::kMsgError))
    return WireError::kUnknownSesOpcode;
  if (h.ver() != kSesVersion) return WireError::kBadSesVersion;
  return WireError::kOk;
}

enum class SesExt : uint8_t { kNone, ATOMIC, RENDEZVOUS };

SesExt ses_extension(SesOpcode op) noexcept {
  switch (op) {
#define UET_SES_EXT_CASE(k, ext) \
  case SesOpcode::k:             \
    return SesExt::ext;
    UET_SES_OPCODE_EXTENSIONS(UET_SES_EXT_CASE)
#undef UET_SES_EXT_CASE
    default:
      return SesExt::kNone;
  }
}

// spec/uet.md §4.5: atomic extensions follow any request header; the rendezvous extension
// only a standard one (as upstream Wireshark parses it).
[[gnu::always_inline]] inline WireError take_ses_extension(Cursor& c, SesOpcode op, Decoded* out,
                                                           bool standard) noexcept {
  SesExt ext = ses_extension(op);
  if (ext == SesExt::RENDEZVOUS && !standard) ext = SesExt::kNone;
  switch (ext) {
    case SesExt::kNone:
      return WireError::kOk;
    case SesExt::ATOMIC: {
      if (c.left() < 1) return WireError::kTruncatedUet;
      const uint8_t aop = c.pos()[0];
      if (aop >= UET_ATOMIC_CAS_FIRST && aop <= UET_ATOMIC_CAS_LAST)
        return c.take(&out->ses_cas, WireError::kTruncatedUet);
      return c.take(&out->ses_atomic, WireError::kTruncatedUet);
    }
    case SesExt::RENDEZVOUS:
      return c.take(&out->ses_rendezvous, WireError::kTruncatedUet);
  }
  return WireError::kOk;
}

// Sealed frames reach the SES only through decode_opened(), with the tag already cut off,
// so a header's payload_length must name exactly the bytes that follow it.
constexpr bool kExactLength = true;

// A request header H (spec/uet.md §4.2) and the extension its opcode brings.
template <typename H>
[[gnu::always_inline]] inline WireError take_ses_request(Cursor& c, Decoded* out) noexcept {
  constexpr bool standard = std::is_same_v<H, SesStandardRequest>;
  const H* h;
  WIRE_TRY(c.take(&h, WireError::kTruncatedUet));
  out->ses_desc = &HeaderTraits<H>::desc;
  WIRE_TRY(check_ses_request(*h));
  WIRE_TRY(take_ses_extension(c, h->opcode(), out, standard));
  if constexpr (standard) {
    if (!h->som()) {  // §4.2: bytes 32-39 hold payload length and message offset
      if (h->cont_rsvd() != 0) return WireError::kReservedBitsSet;
      if (kExactLength && h->payload_length() != c.left() + out->elided) {
        return WireError::kBadSesLength;
      }
    }
  }
  return WireError::kOk;
}

// A response with data, either size (spec/uet.md §4.3): its payload_length covers the rest.
template <typename H>
[[gnu::always_inline]] inline WireError take_ses_response_data(Cursor& c, Decoded* out) noexcept {
  const H* h;
  WIRE_TRY(c.take(&h, WireError::kTruncatedUet));
  out->ses_desc = &HeaderTraits<H>::desc;
  if (h->opcode() != SesRspOpcode::kResponseWithData) return WireError::kUnknownSesOpcode;
  if (h->ver() != kSesVersion) return WireError::kBadSesVersion;
  if (kExactLength && h->payload_length() != c.left() + out->elided) {
    return WireError::kBadSesLength;
  }
  return WireError::kOk;
}

// The SES header named by the PDS next-header field (spec/uet.md §4).
[[gnu::always_inline]] inline WireError take_ses(Cursor& c, Decoded* out) noexcept {
  out->ses = c.pos();
  switch (out->next_hdr) {
    case NextHeader::kNone:
      out->ses = nullptr;
      return WireError::kOk;
    case NextHeader::kReqStd:
      return take_ses_request<SesStandardRequest>(c, out);
    case NextHeader::kReqMedium:
      return take_ses_request<SesMediumRequest>(c, out);
    case NextHeader::kReqSmall:
      return take_ses_request<SesSmallRequest>(c, out);
    case NextHeader::kRsp: {
      const SesResponse* h;
      WIRE_TRY(c.take(&h, WireError::kTruncatedUet));
      out->ses_desc = &kSesResponseDesc;
      if (h->opcode() != SesRspOpcode::kDefaultResponse && h->opcode() != SesRspOpcode::kResponse &&
          h->opcode() != SesRspOpcode::kNoResponse) {
        return WireError::kUnknownSesOpcode;
      }
      if (h->ver() != kSesVersion) return WireError::kBadSesVersion;
      return WireError::kOk;
    }
    case NextHeader::kRspData:
      return take_ses_response_data<SesResponseData>(c, out);
    case NextHeader::kRspDataSmall:
      return take_ses_response_data<SesResponseDataSmall>(c, out);
  }
  return WireError::kBadNextHeader;
}

template <typename H>
[[gnu::always_inline]] inline WireError take_pds(Cursor& c, Decoded* out) noexcept {
  const H* h;
  out->pds = c.pos();
  WIRE_TRY(c.take(&h, WireError::kTruncatedUet));
  out->pds_desc = &HeaderTraits<H>::desc;
  if constexpr (requires { h->syn(); h->pdc_info_rsvd(); }) {
    if (h->syn() && h->pdc_info_rsvd() != 0) return WireError::kReservedBitsSet;  // §3.3
  }
  if constexpr (requires { h->credit_rsvd(); }) {  // §3.8.2: reserved in the credit state
    if (h->cc_type() == CcType::kCredit && h->credit_rsvd() != 0) return WireError::kReservedBitsSet;
  }
  if constexpr (requires { h->ctl_type(); }) {  // §3.12: the next-header slot is the type
    if (static_cast<uint32_t>(h->ctl_type()) > static_cast<uint32_t>(CtrlType::kCreditReq))
      return WireError::kUnknownCtrlType;
    out->next_hdr = NextHeader::kNone;
  } else {
    out->next_hdr = h->next_hdr();
    if (!next_header_allowed(out->pds_type, out->next_hdr)) return WireError::kBadNextHeader;
  }
  return WireError::kOk;
}

WireError decode_roce(Cursor& c, Decoded* out, const DecodeOptions& opts) noexcept {
  const Bth* bth;
  // With the payload carried by length the ICRC is not in the buffer either.
  const size_t icrc_len = out->elided > 0 ? 0 : kIcrcSize;
  if (c.left() < Bth::kSize + icrc_len) return WireError::kTruncatedRoce;
  const size_t icrc_at = c.left() - icrc_len;
  const uint8_t* icrc_ptr = c.pos() + icrc_at;
  c.shrink_to(icrc_at);
  WIRE_TRY(c.take(&bth, WireError::kTruncatedRoce));
  out->bth = bth;
  if (bth->tver() != 0) return WireError::kBadBthVersion;
  const RoceLayout layout = roce_layout(static_cast<uint8_t>(bth->opcode()));
  if (!layout.known) return WireError::kUnknownRoceOpcode;

  // spec/rocev2.md §4: extended headers follow the BTH in this order.
  if (layout.ext & ROCEV2_X_DETH) WIRE_TRY(c.take(&out->deth, WireError::kTruncatedRoce));
  if (layout.ext & ROCEV2_X_RETH) WIRE_TRY(c.take(&out->reth, WireError::kTruncatedRoce));
  if (layout.ext & ROCEV2_X_ATOMIC) WIRE_TRY(c.take(&out->atomic_eth, WireError::kTruncatedRoce));
  if (layout.ext & ROCEV2_X_AETH) WIRE_TRY(c.take(&out->aeth, WireError::kTruncatedRoce));
  if (layout.ext & ROCEV2_X_ATOMIC_ACK)
    WIRE_TRY(c.take(&out->atomic_ack_eth, WireError::kTruncatedRoce));
  if (layout.ext & ROCEV2_X_IMM) WIRE_TRY(c.take(&out->immdt, WireError::kTruncatedRoce));
  if (layout.ext & ROCEV2_X_IETH) WIRE_TRY(c.take(&out->ieth, WireError::kTruncatedRoce));
  if (layout.ext & ROCEV2_X_CNP) WIRE_TRY(c.take(&out->cnp, WireError::kTruncatedRoce));

  const size_t rest = c.left();
  const size_t pad = bth->pad_cnt();
  if (!layout.payload && rest + out->elided != 0) return WireError::kUnexpectedPayload;
  if (out->elided > 0) {  // headers only: nothing more to check
    out->payload = std::span<const uint8_t>(c.pos(), rest);
    out->protocol = Protocol::kRoce;
    return WireError::kOk;
  }
  if (pad > rest) return WireError::kBadPadCount;
  out->payload = std::span<const uint8_t>(c.pos(), rest - pad);

  out->icrc = load_icrc(icrc_ptr);
  if (opts.verify_icrc) {
    const uint8_t* ip = out->ipv4 ? out->ipv4->raw : out->ipv6->raw;
    const size_t ip_hlen = out->ipv4 ? size_t{out->ipv4->ihl()} * 4 : Ipv6::kSize;
    const size_t covered = static_cast<size_t>(icrc_ptr - ip);
    if (compute_icrc(ip, covered, out->ipv6 != nullptr, ip_hlen) != out->icrc)
      return WireError::kBadIcrc;
  }
  out->protocol = Protocol::kRoce;
  return WireError::kOk;
}

WireError decode_pds_ses(Cursor& c, Decoded* out) noexcept;

WireError decode_uet_at(Cursor& c, Decoded* out) noexcept {
  if (c.left() < PdsPrologue::kSize) return WireError::kTruncatedUet;

  // spec/uet.md §5: a TSS header comes first when the leading type is ENC.
  if (as<PdsPrologue>(c.pos())->type() == PdsType::kEnc) {
    if (c.left() < 4) return WireError::kTruncatedUet;
    if (as<Tss>(c.pos())->sp()) {
      WIRE_TRY(c.take(&out->tss_sp, WireError::kTruncatedUet));
    } else {
      WIRE_TRY(c.take(&out->tss, WireError::kTruncatedUet));
    }
    // §5.2: PDS, SES and payload are ciphertext up to the tag; TSS opens them.
    if (c.left() < PdsPrologue::kSize) return WireError::kTruncatedUet;
    out->sealed = std::span<const uint8_t>(c.pos(), c.left());
    out->protocol = Protocol::kUet;
    return WireError::kOk;
  }
  return decode_pds_ses(c, out);
}

WireError decode_pds_ses(Cursor& c, Decoded* out) noexcept {
  if (c.left() < PdsPrologue::kSize) return WireError::kTruncatedUet;
  // spec/uet.md §3.2: the PDS type selects the header.
  out->pds_type = as<PdsPrologue>(c.pos())->type();
  switch (out->pds_type) {
#define UET_PDS_CASE(k, id, Name)            \
  case PdsType::k:                           \
    WIRE_TRY(take_pds<Name>(c, out));        \
    break;
    UET_PDS_TYPE_HEADERS(UET_PDS_CASE)
#undef UET_PDS_CASE
    default:
      return WireError::kUnknownPdsType;
  }

  WIRE_TRY(take_ses(c, out));
  out->payload = std::span<const uint8_t>(c.pos(), c.left());
  out->protocol = Protocol::kUet;
  return WireError::kOk;
}

[[gnu::always_inline]] inline WireError decode_udp(Cursor& c, Decoded* out,
                                                   const DecodeOptions& opts) noexcept {
  const uint8_t* udp_start = c.pos();
  const size_t ip_payload = c.left() + out->elided;
  WIRE_TRY(c.take(&out->udp, WireError::kTruncatedUdp));
  const Udp& udp = *out->udp;
  if (udp.length() < Udp::kSize || udp.length() != ip_payload) return WireError::kBadUdpLength;
  if (opts.verify_udp_checksum && udp.checksum() != 0 && out->elided == 0) {
    const uint8_t* ip = out->ipv4 ? out->ipv4->raw : out->ipv6->raw;
    if (udp_checksum(ip, out->ipv6 != nullptr, udp_start, udp.length()) != udp.checksum())
      return WireError::kBadUdpChecksum;
  }
  out->ev = udp.sport();
  if (udp.dport() == opts.uet_udp_port) return decode_uet_at(c, out);
  if (udp.dport() == opts.roce_udp_port) return decode_roce(c, out, opts);
  return WireError::kUnsupportedUdpPort;
}

[[gnu::always_inline]] inline WireError decode_l4(Cursor& c, Decoded* out, uint8_t protocol,
                                                  const DecodeOptions& opts) noexcept {
  if (protocol == NET_IPPROTO_UDP) return decode_udp(c, out, opts);
  if (protocol == opts.uet_ip_proto) {  // spec/uet.md §2.2: IP-only form
    WIRE_TRY(c.take(&out->entropy, WireError::kTruncatedUet));
    out->ev = out->entropy->entropy();
    return decode_uet_at(c, out);
  }
  return WireError::kUnsupportedIpProtocol;
}

[[gnu::always_inline]] inline WireError decode_ipv4(Cursor& c, Decoded* out,
                                                    const DecodeOptions& opts) noexcept {
  if (c.left() < Ipv4::kSize) return WireError::kTruncatedIp;
  const Ipv4* ip = as<Ipv4>(c.pos());
  if (ip->version() != 4) return WireError::kBadIpVersion;
  const size_t hlen = size_t{ip->ihl()} * 4;
  if (hlen < Ipv4::kSize) return WireError::kBadIpHeaderLength;
  if (c.left() < hlen) return WireError::kTruncatedIp;
  if (ip->total_length() < hlen + out->elided || ip->total_length() > c.left() + out->elided)
    return WireError::kBadIpTotalLength;
  if (opts.verify_ip_checksum && !ipv4_header_checksum_ok(ip->raw, hlen))
    return WireError::kBadIpChecksum;
  if (ip->mf() || ip->frag_offset() != 0) return WireError::kIpFragment;
  c.shrink_to(ip->total_length() - out->elided);  // anything after is Ethernet padding
  WIRE_TRY(c.take(&out->ipv4, WireError::kTruncatedIp));
  c.skip(hlen - Ipv4::kSize);  // options are kept in the frame, not parsed
  out->ecn = ip->ecn();
  return decode_l4(c, out, ip->protocol(), opts);
}

WireError decode_ipv6(Cursor& c, Decoded* out, const DecodeOptions& opts) noexcept {
  if (c.left() < Ipv6::kSize) return WireError::kTruncatedIp;
  const Ipv6* ip = as<Ipv6>(c.pos());
  if (ip->version() != 6) return WireError::kBadIpVersion;
  if (ip->payload_length() < out->elided ||
      ip->payload_length() > c.left() - Ipv6::kSize + out->elided) {
    return WireError::kBadIpTotalLength;
  }
  c.shrink_to(Ipv6::kSize + ip->payload_length() - out->elided);
  WIRE_TRY(c.take(&out->ipv6, WireError::kTruncatedIp));
  out->ecn = ip->ecn();
  return decode_l4(c, out, ip->next_header(), opts);
}

}  // namespace

WireError decode_frame(std::span<const uint8_t> frame, Decoded* out,
                       const DecodeOptions& opts) noexcept {
  std::construct_at(out);  // every field empty again; the stack counts from 0
  out->frame = frame;
  out->elided = opts.elided;
  Cursor c(frame, out, opts.header_stack);
  WIRE_TRY(c.take(&out->eth, WireError::kTruncatedEthernet));
  uint16_t type = out->eth->ethertype();
  if (type == NET_ETHERTYPE_VLAN) {
    WIRE_TRY(c.take(&out->vlan, WireError::kTruncatedEthernet));
    type = out->vlan->ethertype();
  }
  if (type == NET_ETHERTYPE_IPV4) return decode_ipv4(c, out, opts);
  if (type == NET_ETHERTYPE_IPV6) return decode_ipv6(c, out, opts);
  return WireError::kUnsupportedEtherType;
}

WireError decode_opened(std::span<const uint8_t> plain, Decoded* out) noexcept {
  if (out->tss == nullptr && out->tss_sp == nullptr) return WireError::kTruncatedUet;
  Cursor c(plain, out, out->depth > 0);
  out->protocol = Protocol::kNone;
  return decode_pds_ses(c, out);
}

WireError decode_uet(std::span<const uint8_t> bytes, Decoded* out) noexcept {
  std::construct_at(out);  // every field empty again; the stack counts from 0
  out->frame = bytes;
  Cursor c(bytes, out);
  return decode_uet_at(c, out);
}

}  // namespace uet::wire
