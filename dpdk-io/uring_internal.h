// What the io_uring backend's files share (uring_io.h is the class): the buffer layouts, the
// completion tags, the helpers both the set-up (uring_setup.cc) and the data path
// (uring_io.cc) use, and the types that hold liburing's structures.
#pragma once

// Only dpdk-io/'s io_uring target defines the macro.
#ifndef UET_PRIVATE_DPDK_IO_URING
#error "dpdk-io/uring_internal.h is private to dpdk-io's io_uring backend (use dpdk-io/uring_io.h)"
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dpdk-io/uring_io.h"
#include "dpdk-io/uring_uapi.h"
#include "transport/wire/checksum.h"
#include "transport/wire/icrc.h"
#include "transport/wire/net_headers.h"
#include "transport/wire/roce_headers.h"

namespace uet::io {
namespace uring_detail {

constexpr size_t kEthLen = wire::Ethernet::kSize;         // 14
constexpr size_t kIpLen = wire::Ipv4::kSize;              // 20 (the synthesised header: no options)
constexpr size_t kUdpLen = wire::Udp::kSize;              // 8
constexpr size_t kSynthLen = kEthLen + kIpLen + kUdpLen;  // 42: what rx writes before a payload
constexpr size_t kMaxUdpPayload = 65507;                  // 65535 - 20 - 8

// Receive control area: IP_TOS (1 byte), IP_TTL (int), SO_RXQ_OVFL (uint32), UDP_GRO (int).
constexpr size_t kRxControl = CMSG_SPACE(1) + CMSG_SPACE(sizeof(int)) +
                              CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(int));
// Layout of a multishot recvmsg buffer: io_uring_recvmsg_out, the source sockaddr, the cmsgs,
// then the payload. The synthesised headers overwrite the tail of that prefix.
constexpr size_t kRxPrefix = sizeof(io_uring_recvmsg_out) + sizeof(sockaddr_in) + kRxControl;
static_assert(kRxPrefix >= kSynthLen, "the receive prefix must have room for Eth/IPv4/UDP");

constexpr uint64_t kRxTag = uint64_t{1} << 62;      // the multishot receive
constexpr uint64_t kGsoTag = uint64_t{1} << 60;     // | the GsoSend's index
constexpr uint32_t kGsoMaxSegments = 64;            // UDP_MAX_SEGMENTS of Linux 4.18..6.x
constexpr size_t kTxControl = CMSG_SPACE(sizeof(int)) * 2;  // IP_TOS, IP_TTL
constexpr uint64_t kCancelTag = uint64_t{1} << 61;  // teardown's cancel request
constexpr uint64_t kWakeTag = uint64_t{1} << 59;    // the poll of the wake eventfd
constexpr uint16_t kBufGroup = 0;
constexpr unsigned kRxFixedFile = 0;  // registered files: rx socket, then the pool

inline std::string ip_string(uint32_t ip) {
  return absl::StrCat(ip >> 24, ".", (ip >> 16) & 0xFF, ".", (ip >> 8) & 0xFF, ".", ip & 0xFF);
}

inline absl::Status out_of_range(const char* field, uint64_t value, const char* range) {
  return absl::InvalidArgumentError(absl::StrCat("UringIoConfig.", std::string(field), " = ", value,
                                                 ": valid range ", std::string(range)));
}

inline absl::Status errno_status(int err, const std::string& what) {
  return absl::ErrnoToStatus(err, what);
}

constexpr std::array<std::pair<ZeroCopySend, const char*>, 3> kZeroCopyNames = {{
    {ZeroCopySend::kAuto, "auto"},
    {ZeroCopySend::kOn, "on"},
    {ZeroCopySend::kOff, "off"},
}};

// The IPv4 + UDP headers (28 bytes) of a datagram as the receiving side synthesises them, so
// that the sender's ICRC and the receiver's frame agree on every field the ICRC covers.
inline void write_ip_udp(uint8_t* l3, uint32_t src, uint32_t dst, uint8_t tos, uint8_t ttl, uint16_t sport,
                  uint16_t dport, size_t payload_len) noexcept {
  std::memset(l3, 0, kIpLen + kUdpLen);  // id 0: the kernel's is not visible to the receiver
  wire::Ipv4* ip = wire::as<wire::Ipv4>(l3);
  ip->set_version(4);
  ip->set_ihl(kIpLen / 4);
  ip->set_dscp(static_cast<uint8_t>(tos >> 2));
  ip->set_ecn(static_cast<uint8_t>(tos & 3));
  ip->set_total_length(static_cast<uint16_t>(kIpLen + kUdpLen + payload_len));
  ip->set_df(true);
  ip->set_ttl(ttl);
  ip->set_protocol(NET_IPPROTO_UDP);
  ip->set_src(src);
  ip->set_dst(dst);
  wire::Udp* udp = wire::as<wire::Udp>(l3 + kIpLen);
  udp->set_sport(sport);
  udp->set_dport(dport);
  udp->set_length(static_cast<uint16_t>(kUdpLen + payload_len));
  // Checksum 0, not computed: the kernel verified the real one.
}

// The ICRC's invariant view of IPv4 + UDP headers (spec/rocev2.md §6): TOS, TTL and the
// checksums masked to ones.
inline void mask_ip_udp(uint8_t* l3, size_t ip_hlen) noexcept {
  wire::Ipv4* ip = wire::as<wire::Ipv4>(l3);
  ip->set_dscp(0x3F);
  ip->set_ecn(3);
  ip->set_ttl(0xFF);
  ip->set_checksum(0xFFFF);
  wire::as<wire::Udp>(l3 + ip_hlen)->set_checksum(0xFFFF);
}

inline void set_buffer_size(int fd, int force_opt, int opt, uint32_t bytes) {
  const int v = static_cast<int>(bytes);
  // SO_*BUFFORCE needs CAP_NET_ADMIN; without it the plain option, capped by the sysctl.
  if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) != 0) {
    (void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
  }
}

}  // namespace uring_detail

struct UringIo::Ring {
  io_uring ring{};
  bool ring_ok = false;
  io_uring_buf_ring* buf_ring = nullptr;
  size_t buf_ring_len = 0;
  msghdr rx_msg{};  // the multishot template: only the name and control lengths matter
};

struct UringIo::TxSlot {
  msghdr msg{};
  iovec iov[3]{};  // the UDP payload: header bytes, a referenced payload, the tail
  uint8_t iovcnt = 0;
  uint32_t len = 0;          // UDP payload bytes
  uint32_t frame_bytes = 0;  // the frame's, for IoStats
  sockaddr_in dst{};
  alignas(cmsghdr) uint8_t control[uring_detail::kTxControl]{};
  uint16_t socket = 0;  // index into the EV pool (registered file 1 + socket)
  uint8_t tos = 0, ttl = 0;
  uint32_t next = 0;  // the next buffer of its GSO group
  // A zero-copy send's two completions, taken in whichever order they are reaped.
  bool result_seen = false;
  bool notif_due = false;  // the result carried IORING_CQE_F_MORE: a notification follows
  bool notif_seen = false;
};

struct UringIo::GsoSend {
  msghdr msg{};
  sockaddr_in dst{};
  iovec iov[3 * uring_detail::kGsoMaxSegments]{};
  alignas(cmsghdr) uint8_t control[uring_detail::kTxControl + CMSG_SPACE(sizeof(uint16_t))]{};
  uint32_t head = 0, count = 0;  // its buffers: head, then TxSlot::next
  bool result_seen = false, notif_due = false, notif_seen = false;
};

// A coalesced receive in a kernel ring buffer, lent segment by segment from the split pool.
struct UringIo::RxSplit {
  uint32_t src_ip = 0;
  uint16_t sport = 0;
  uint8_t tos = 0, ttl = 0;
  uint32_t segment = 0;  // bytes per datagram (the last may be shorter); 0: a lone datagram
  uint32_t next = 0, end = 0;  // payload offsets: the next segment, the end
};

}  // namespace uet::io
