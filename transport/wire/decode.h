// Zero-copy decoding of whole frames: Ethernet [802.1Q] / IPv4 | IPv6 / UDP (or UET's
// IP-only form) / UET (TSS, PDS, SES) or RoCEv2 (BTH, extended headers, ICRC).
//
// decode_frame() checks every length, version, type and reserved field and returns a typed
// WireError for the first thing wrong; it never throws, allocates or copies. On success the
// Decoded struct points into the caller's buffer, which must outlive it.
//
// Data path: one call per received frame; the Decoded struct lives on the caller's stack.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

#include "transport/wire/net_headers.h"
#include "transport/wire/roce_headers.h"
#include "transport/wire/uet_headers.h"
#include "transport/wire/wire_error.h"

namespace uet::wire {

enum class Protocol : uint8_t { kNone, kUet, kRoce };

struct DecodeOptions {
  uint16_t uet_udp_port = kUetUdpPort;
  uint16_t roce_udp_port = kRoceUdpPort;
  uint8_t uet_ip_proto = kUetIpProtoDefault;  // UET's IP-only form (spec/uet.md §2.2)
  bool verify_ip_checksum = true;
  bool verify_udp_checksum = true;  // a zero UDP checksum always passes (not computed)
  bool verify_icrc = true;
  // Payload bytes the host carries by length and did not store (Frame::wire_len - len, the
  // simulator at scale): IP/UDP/SES lengths may exceed the buffer by exactly this much, and
  // the UDP checksum and ICRC (which cover absent bytes) are not checked.
  uint32_t elided = 0;
  // Record every header on Decoded::stack (generic walkers, tools, tests). The engines read
  // the named pointers only and turn it off: a store per header saved on every frame.
  bool header_stack = true;
};

// A header met while decoding, for generic walkers (tools, tests).
struct HeaderRef {
  const HeaderDesc* desc;
  uint16_t offset;  // from the start of the frame
};

struct Decoded {
  // Every field below starts empty, except stack past depth (see there).
  Decoded() noexcept {}

  std::span<const uint8_t> frame;
  Protocol protocol = Protocol::kNone;

  // Encapsulation.
  const Ethernet* eth = nullptr;
  const Vlan* vlan = nullptr;
  const Ipv4* ipv4 = nullptr;
  const Ipv6* ipv6 = nullptr;
  const Udp* udp = nullptr;  // null in UET's IP-only form
  uint8_t ecn = 0;           // the IP header's ECN bits
  uint16_t ev = 0;           // UET entropy value: UDP source port, or the entropy header

  // UET (spec/uet.md).
  const UetEntropy* entropy = nullptr;
  const Tss* tss = nullptr;
  const TssSp* tss_sp = nullptr;
  // After a TSS header (spec/uet.md §5): the ciphertext and the tag, which decode_frame()
  // does not read further; decode_opened() decodes the plaintext once TSS opened it.
  std::span<const uint8_t> sealed;
  PdsType pds_type = PdsType::kReserved;
  const HeaderDesc* pds_desc = nullptr;
  const uint8_t* pds = nullptr;
  NextHeader next_hdr = NextHeader::kNone;
  const HeaderDesc* ses_desc = nullptr;
  const uint8_t* ses = nullptr;
  const SesAtomic* ses_atomic = nullptr;
  const SesCompareSwap* ses_cas = nullptr;
  const SesRendezvous* ses_rendezvous = nullptr;

  // RoCEv2 (spec/rocev2.md).
  const Bth* bth = nullptr;
  const Deth* deth = nullptr;
  const Reth* reth = nullptr;
  const AtomicEth* atomic_eth = nullptr;
  const Aeth* aeth = nullptr;
  const AtomicAckEth* atomic_ack_eth = nullptr;
  const ImmDt* immdt = nullptr;
  const Ieth* ieth = nullptr;
  const Cnp* cnp = nullptr;
  uint32_t icrc = 0;

  // Bytes after the last header (RoCEv2: without pad and ICRC), as present in the buffer.
  std::span<const uint8_t> payload;
  uint32_t elided = 0;  // payload bytes on the wire but not in the buffer (DecodeOptions)

  // Every header in wire order: entries [0, depth) (depth stays 0 without
  // DecodeOptions::header_stack). The rest are not initialized: zeroing them for every frame
  // would cost more than the decoding (bench/NOTES.md, "First round (h/engine)").
  uint8_t depth = 0;
  std::array<HeaderRef, 12> stack;

  // The PDS / SES header as struct H, or null if the frame's header is of another kind.
  template <typename H>
  const H* pds_as() const noexcept {
    return pds_desc == &HeaderTraits<H>::desc ? as<H>(pds) : nullptr;
  }
  template <typename H>
  const H* ses_as() const noexcept {
    return ses_desc == &HeaderTraits<H>::desc ? as<H>(ses) : nullptr;
  }
};

WireError decode_frame(std::span<const uint8_t> frame, Decoded* out,
                       const DecodeOptions& opts = {}) noexcept;

// Room for the Decoded that decode_frame() (or decode_uet()) constructs: both start it afresh
// themselves (std::construct_at), so a Decoded declared first would be zeroed twice per frame
// (bench/NOTES.md, "Fourth round (h/engine4)"). The data path declares one of
// these, decodes into slot() and reads get() afterwards (whatever the WireError: the decoder
// constructs before it checks anything).
class DecodedStorage {
 public:
  Decoded* slot() noexcept { return reinterpret_cast<Decoded*>(bytes_); }
  const Decoded& get() const noexcept {
    return *std::launder(reinterpret_cast<const Decoded*>(bytes_));
  }
  // The constructed Decoded, to continue it (decode_opened()).
  Decoded* get_mutable() noexcept { return std::launder(reinterpret_cast<Decoded*>(bytes_)); }

 private:
  static_assert(std::is_trivially_destructible_v<Decoded>, "nothing to destroy, ever");
  alignas(Decoded) unsigned char bytes_[sizeof(Decoded)];
};

// Continues a Decoded of a sealed frame (tss set) over its plaintext: `plain` is the PDS header
// onward without the tag, decrypted in place inside out->frame. Applies every rule of
// decode_frame() from the PDS header on, the exact SES lengths included (spec/uet.md §6).
WireError decode_opened(std::span<const uint8_t> plain, Decoded* out) noexcept;

// Decodes UET headers starting right after the UDP header: for hosts whose kernel already
// stripped Ethernet/IP/UDP (the io_uring backend). out->frame is `bytes`.
WireError decode_uet(std::span<const uint8_t> bytes, Decoded* out) noexcept;

}  // namespace uet::wire
