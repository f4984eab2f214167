// Why a frame failed to decode: one typed reason per malformed-input class.
//
// The decoder returns one of these and never throws; callers drop the frame and count the
// reason (WireCounters), the way DPDK PMDs count per-reason drops in xstats.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace uet::wire {

// X(enumerator, "reason") in the order a decoder meets them, outermost layer first.
#define UET_WIRE_ERRORS(X)                                                         \
  X(kOk, "ok")                                                                     \
  X(kTruncatedEthernet, "frame shorter than its Ethernet/802.1Q header")           \
  X(kUnsupportedEtherType, "EtherType is not IPv4, IPv6 or one 802.1Q tag")        \
  X(kTruncatedIp, "frame shorter than its IP header")                              \
  X(kBadIpVersion, "IP version does not match the EtherType")                      \
  X(kBadIpHeaderLength, "IPv4 header length below 20 bytes")                       \
  X(kBadIpTotalLength, "IP length disagrees with the frame")                       \
  X(kBadIpChecksum, "IPv4 header checksum mismatch")                               \
  X(kIpFragment, "IP fragment (not supported)")                                    \
  X(kUnsupportedIpProtocol, "IP protocol is neither UDP nor UET's IP-only protocol") \
  X(kTruncatedUdp, "IP payload shorter than a UDP header")                         \
  X(kBadUdpLength, "UDP length disagrees with the IP payload")                     \
  X(kBadUdpChecksum, "UDP checksum mismatch")                                      \
  X(kUnsupportedUdpPort, "UDP destination port is neither UET nor RoCEv2")         \
  X(kTruncatedUet, "UDP payload shorter than the UET headers it announces")        \
  X(kUnknownPdsType, "reserved or unknown PDS type")                               \
  X(kBadNextHeader, "PDS next header invalid for this PDS type")                   \
  X(kUnknownCtrlType, "unknown PDS control type")                                  \
  X(kReservedBitsSet, "reserved field not zero")                                   \
  X(kUnknownSesOpcode, "unknown SES opcode")                                       \
  X(kBadSesVersion, "unsupported SES version")                                     \
  X(kBadSesLength, "SES payload length disagrees with the packet")                 \
  X(kTruncatedRoce, "UDP payload shorter than the RoCEv2 headers it announces")    \
  X(kUnknownRoceOpcode, "unknown BTH opcode")                                      \
  X(kBadBthVersion, "BTH transport version not 0")                                 \
  X(kBadPadCount, "BTH pad count larger than the payload")                         \
  X(kUnexpectedPayload, "payload after an opcode that carries none")               \
  X(kBadIcrc, "RoCEv2 ICRC mismatch")                                              \
  X(kNoRoom, "frame buffer too small for the headers")

enum class WireError : uint8_t {
#define UET_WIRE_ERROR_ENUM(e, s) e,
  UET_WIRE_ERRORS(UET_WIRE_ERROR_ENUM)
#undef UET_WIRE_ERROR_ENUM
};

inline constexpr size_t kNumWireErrors = 0
#define UET_WIRE_ERROR_COUNT(e, s) +1
    UET_WIRE_ERRORS(UET_WIRE_ERROR_COUNT)
#undef UET_WIRE_ERROR_COUNT
    ;

std::string_view to_string(WireError e) noexcept;
// The enumerator's name without the leading k ("BadIcrc"), for counter names and tests.
std::string_view name(WireError e) noexcept;
std::ostream& operator<<(std::ostream& os, WireError e);

// One always-on counter per reason; cheap enough for the data path.
struct WireCounters {
  std::array<uint64_t, kNumWireErrors> count{};
  void add(WireError e) noexcept { ++count[static_cast<size_t>(e)]; }
  uint64_t operator[](WireError e) const noexcept { return count[static_cast<size_t>(e)]; }
};

}  // namespace uet::wire
