// The io_uring UDP backend (uring_io.h). Control path first (validate, create, sockets, ring,
// teardown), then the data path (rx_burst/release_rx/alloc_tx/tx_burst/wait), which never
// allocates: every buffer, msghdr and cmsg area is carved at create().
#include "dpdk-io/uring_io.h"

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

#include "absl/strings/str_cat.h"
#include "dpdk-io/uring_uapi.h"
#include "transport/wire/checksum.h"
#include "transport/wire/icrc.h"
#include "transport/wire/net_headers.h"
#include "transport/wire/roce_headers.h"

namespace uet::io {

namespace {

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

std::string ip_string(uint32_t ip) {
  return absl::StrCat(ip >> 24, ".", (ip >> 16) & 0xFF, ".", (ip >> 8) & 0xFF, ".", ip & 0xFF);
}

absl::Status out_of_range(const char* field, uint64_t value, const char* range) {
  return absl::InvalidArgumentError(absl::StrCat("UringIoConfig.", std::string(field), " = ", value,
                                                 ": valid range ", std::string(range)));
}

absl::Status errno_status(int err, const std::string& what) {
  return absl::ErrnoToStatus(err, what);
}

constexpr std::array<std::pair<ZeroCopySend, const char*>, 3> kZeroCopyNames = {{
    {ZeroCopySend::kAuto, "auto"},
    {ZeroCopySend::kOn, "on"},
    {ZeroCopySend::kOff, "off"},
}};

// The IPv4 + UDP headers (28 bytes) of a datagram as the receiving side synthesises them, so
// that the sender's ICRC and the receiver's frame agree on every field the ICRC covers.
void write_ip_udp(uint8_t* l3, uint32_t src, uint32_t dst, uint8_t tos, uint8_t ttl, uint16_t sport,
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
void mask_ip_udp(uint8_t* l3, size_t ip_hlen) noexcept {
  wire::Ipv4* ip = wire::as<wire::Ipv4>(l3);
  ip->set_dscp(0x3F);
  ip->set_ecn(3);
  ip->set_ttl(0xFF);
  ip->set_checksum(0xFFFF);
  wire::as<wire::Udp>(l3 + ip_hlen)->set_checksum(0xFFFF);
}

void set_buffer_size(int fd, int force_opt, int opt, uint32_t bytes) {
  const int v = static_cast<int>(bytes);
  // SO_*BUFFORCE needs CAP_NET_ADMIN; without it the plain option, capped by the sysctl.
  if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) != 0) {
    (void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
  }
}

}  // namespace

// ------------------------------------------------------------------------- control path

const char* to_string(ZeroCopySend z) noexcept {
  for (const auto& [value, name] : kZeroCopyNames)
    if (value == z) return name;
  return "?";
}

absl::StatusOr<ZeroCopySend> parse_zero_copy_send(std::string_view s) {
  for (const auto& [value, name] : kZeroCopyNames)
    if (s == name) return value;
  return absl::InvalidArgumentError(
      absl::StrCat("\"", std::string(s), "\": valid values auto, on, off"));
}

absl::Status UringIoConfig::validate() const {
  if (local_ip4 == 0) return out_of_range("local_ip4", local_ip4, "a unicast IPv4 address, not 0");
  if (udp_port == 0) return out_of_range("udp_port", udp_port, "1..65535");
  if (frames < 64 || frames > 65536) return out_of_range("frames", frames, "64..65536");
  if (frame_capacity < 256 || frame_capacity > kMaxUdpPayload + kSynthLen)
    return out_of_range("frame_capacity", frame_capacity, "256..65549");
  if (queue_depth < 8 || queue_depth > 4096)
    return out_of_range("queue_depth", queue_depth, "8..4096");
  if (ev_sockets < 1 || ev_sockets > 1024) return out_of_range("ev_sockets", ev_sockets, "1..1024");
  if (ev_port_base != 0) {
    const uint32_t last = uint32_t{ev_port_base} + ev_sockets - 1;
    if (ev_port_base < 1024 || last > 65535)
      return out_of_range("ev_port_base", ev_port_base,
                          "0 (ephemeral) or 1024..65536 - ev_sockets");
    if (udp_port >= ev_port_base && udp_port <= last)
      return out_of_range("ev_port_base", ev_port_base,
                          "a range of ev_sockets ports that does not contain udp_port");
  }
  if (socket_buffer_bytes < 65536 || socket_buffer_bytes > (1u << 30))
    return out_of_range("socket_buffer_bytes", socket_buffer_bytes, "65536..1073741824");
  if (std::string_view(to_string(zero_copy_send)) == "?")
    return absl::InvalidArgumentError(
        absl::StrCat("UringIoConfig.zero_copy_send = ", static_cast<int>(zero_copy_send),
                     ": valid values auto, on, off"));
  return absl::OkStatus();
}

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
  alignas(cmsghdr) uint8_t control[kTxControl]{};
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
  iovec iov[3 * kGsoMaxSegments]{};
  alignas(cmsghdr) uint8_t control[kTxControl + CMSG_SPACE(sizeof(uint16_t))]{};
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

UringIo::UringIo(const UringIoConfig& config) : config_(config), ring_(std::make_unique<Ring>()) {}

absl::StatusOr<std::unique_ptr<UringIo>> UringIo::create(const UringIoConfig& config) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  std::unique_ptr<UringIo> io(new UringIo(config));
  if (absl::Status s = io->init(); !s.ok()) return s;
  return io;
}

absl::Status UringIo::init() {
  if (config_.wakeable) {
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return errno_status(errno, "eventfd");
  }
  if (absl::Status s = open_sockets(); !s.ok()) return s;
  if (absl::Status s = carve_pool(); !s.ok()) return s;
  return open_ring();
}

// The receiver on udp_port, then the source-port pool; GSO and GRO are asked of them here,
// since what is granted decides the pool's layout.
absl::Status UringIo::open_sockets() {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(config_.local_ip4);
  const std::string where = absl::StrCat(ip_string(config_.local_ip4), ":", config_.udp_port);
  rx_fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (rx_fd_ < 0) return errno_status(errno, "socket(AF_INET, SOCK_DGRAM)");
  const int one = 1;
  if (setsockopt(rx_fd_, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) != 0 ||
      setsockopt(rx_fd_, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one)) != 0 ||
      setsockopt(rx_fd_, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) != 0) {
    return errno_status(errno, "setsockopt IP_RECVTOS/IP_RECVTTL/SO_RXQ_OVFL");
  }
  setup_.gro = config_.gro && setsockopt(rx_fd_, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) == 0;
  set_buffer_size(rx_fd_, SO_RCVBUFFORCE, SO_RCVBUF, config_.socket_buffer_bytes);
  // socket(7): the kernel doubles what it grants (for its bookkeeping); below twice the
  // request, net.core.rmem_max capped it.
  int granted = 0;
  socklen_t granted_len = sizeof(granted);
  if (getsockopt(rx_fd_, SOL_SOCKET, SO_RCVBUF, &granted, &granted_len) != 0)
    return errno_status(errno, "getsockopt SO_RCVBUF");
  setup_.rx_socket_bytes = static_cast<uint32_t>(std::max(granted, 0));
  setup_.rx_socket_capped = uint64_t{setup_.rx_socket_bytes} < 2 * uint64_t{config_.socket_buffer_bytes};
  addr.sin_port = htons(config_.udp_port);
  if (bind(rx_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    return errno_status(err, absl::StrCat("UringIo: bind of the receiving socket to ", where,
                                          err == EADDRINUSE ? " (port in use)" : "",
                                          err == EADDRNOTAVAIL ? " (address not local)" : ""));
  }

  // GSO is granted when the kernel knows UDP_SEGMENT; 0 leaves each send to its own cmsg.
  const int no_segment = 0;
  setup_.gso = config_.gso;
  ev_fds_.reserve(config_.ev_sockets);
  ev_ports_.reserve(config_.ev_sockets);
  for (uint32_t i = 0; i < config_.ev_sockets; ++i) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno_status(errno, "socket(AF_INET, SOCK_DGRAM) for the EV pool");
    ev_fds_.push_back(fd);
    set_buffer_size(fd, SO_SNDBUFFORCE, SO_SNDBUF, config_.socket_buffer_bytes);
    const int small = 4096;  // nothing should arrive here; keep strays from piling up
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    if (setup_.gso &&
        setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &no_segment, sizeof(no_segment)) != 0)
      setup_.gso = false;
    const uint16_t port =
        config_.ev_port_base == 0 ? 0 : static_cast<uint16_t>(config_.ev_port_base + i);
    addr.sin_port = htons(port);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      const int err = errno;
      return errno_status(err, absl::StrCat("UringIo: bind of EV pool socket ", i, " to ",
                                            ip_string(config_.local_ip4), ":", port,
                                            err == EADDRINUSE ? " (port in use)" : ""));
    }
    sockaddr_in got{};
    socklen_t got_len = sizeof(got);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&got), &got_len) != 0)
      return errno_status(errno, "getsockname of an EV pool socket");
    ev_ports_.push_back(ntohs(got.sin_port));
  }
  return absl::OkStatus();
}

// One mmap: the kernel ring's receive buffers, the split pool (gro), the transmit buffers.
absl::Status UringIo::carve_pool() {
  const uint32_t rx_half = std::bit_floor(config_.frames / 2);
  tx_count_ = config_.frames - rx_half;
  // A power of two for the kernel's buffer ring. Under GRO each must hold a coalesced
  // datagram, so fewer, larger ones; the segments are lent from the split pool instead.
  rx_count_ = setup_.gro ? std::max<uint32_t>(8, std::bit_floor(config_.frames / 16)) : rx_half;
  split_count_ = setup_.gro ? rx_half : 0;
  const size_t rx_payload = setup_.gro ? kMaxUdpPayload : config_.frame_capacity - kSynthLen;
  rx_buf_len_ = static_cast<uint32_t>(kRxPrefix + rx_payload);
  const size_t rx_stride = (rx_buf_len_ + 63) & ~size_t{63};
  const size_t tx_stride = (size_t{config_.frame_capacity} + 63) & ~size_t{63};
  memory_len_ = rx_stride * rx_count_ + tx_stride * (split_count_ + tx_count_);
  void* mem =
      mmap(nullptr, memory_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    const int err = errno;
    const size_t len = memory_len_;
    memory_len_ = 0;
    return errno_status(err, absl::StrCat("mmap of ", len, " bytes of frame buffers"));
  }
  memory_ = static_cast<uint8_t*>(mem);

  rx_frames_.resize(rx_count_ + split_count_);
  rx_ready_.resize(rx_count_);
  rx_split_.resize(setup_.gro ? rx_count_ : 0);
  for (uint32_t i = 0; i < rx_count_; ++i) {
    rx_frames_[i].data = memory_ + rx_stride * i + kRxPrefix - kSynthLen;
    rx_frames_[i].capacity = static_cast<uint32_t>(kSynthLen + rx_payload);
  }
  uint8_t* split_base = memory_ + rx_stride * rx_count_;
  split_free_.resize(split_count_);
  for (uint32_t i = 0; i < split_count_; ++i) {
    rx_frames_[rx_count_ + i].data = split_base + tx_stride * i;
    rx_frames_[rx_count_ + i].capacity = config_.frame_capacity;
    split_free_[i] = rx_count_ + split_count_ - 1 - i;
  }
  split_free_count_ = split_count_;

  uint8_t* tx_base = split_base + tx_stride * split_count_;
  tx_frames_.resize(tx_count_);
  tx_slots_.resize(tx_count_);
  tx_free_.resize(tx_count_);
  for (uint32_t i = 0; i < tx_count_; ++i) {
    tx_frames_[i].data = tx_base + tx_stride * i;
    tx_frames_[i].capacity = config_.frame_capacity;
    TxSlot& s = tx_slots_[i];
    s.dst.sin_family = AF_INET;
    s.msg.msg_name = &s.dst;
    s.msg.msg_namelen = sizeof(s.dst);
    s.msg.msg_iov = s.iov;
    s.msg.msg_control = s.control;
    tx_free_[i] = tx_count_ - 1 - i;
  }
  tx_free_count_ = tx_count_;
  // Every group holds two buffers or more, so tx_count_ / 2 groups are never all in use.
  gso_.resize(setup_.gso ? tx_count_ / 2 : 0);
  gso_free_.resize(gso_.size());
  for (uint32_t i = 0; i < gso_.size(); ++i) {
    GsoSend& g = gso_[i];
    g.msg.msg_name = &g.dst;
    g.msg.msg_namelen = sizeof(g.dst);
    g.msg.msg_iov = g.iov;
    g.msg.msg_control = g.control;
    gso_free_[i] = static_cast<uint32_t>(gso_.size() - 1 - i);
  }
  gso_free_count_ = static_cast<uint32_t>(gso_.size());
  return absl::OkStatus();
}

absl::Status UringIo::open_ring() {
  // The ring: CQ room for every buffer's completions (a zero-copy send has two: result and
  // notification; one per received datagram) and then some.
  // COOP_TASKRUN | TASKRUN_FLAG (Linux 5.19+): completion work waits for our next entry
  // into the kernel (flagged in the SQ ring, which reap() checks) instead of interrupting
  // the polling thread once per datagram; refused (EINVAL) by older kernels, then without.
  const uint32_t cq_entries = std::min<uint32_t>(
      65536, std::bit_ceil(std::max(2 * config_.queue_depth, config_.frames + tx_count_ + 64)));
  // DEFER_TASKRUN | SINGLE_ISSUER (6.1+, when asked): not even the flag, so a blocking call
  // of the hosting process is never woken with EINTR by our completions.
  constexpr uint32_t kDefer = IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
                              IORING_SETUP_TASKRUN_FLAG;
  constexpr uint32_t kCoop = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
  int r = -EINVAL;
  for (const uint32_t taskrun : {kDefer, kCoop, 0u}) {
    if (taskrun == kDefer && !config_.defer_taskrun) continue;
    io_uring_params p{};
    p.flags = IORING_SETUP_CQSIZE | taskrun;
    p.cq_entries = cq_entries;
    r = io_uring_queue_init_params(config_.queue_depth, &ring_->ring, &p);
    if (r == 0) {
      setup_.coop_taskrun = taskrun != 0;
      setup_.defer_taskrun = taskrun == kDefer;
    }
    if (r != -EINVAL) break;
  }
  if (r < 0) return errno_status(-r, "io_uring_queue_init_params");
  ring_->ring_ok = true;
  io_uring* ring = &ring_->ring;

  std::vector<int> files;  // control path: allocation is fine here
  files.push_back(rx_fd_);
  files.insert(files.end(), ev_fds_.begin(), ev_fds_.end());
  if (int rf = io_uring_register_files(ring, files.data(), static_cast<unsigned>(files.size()));
      rf < 0)
    return errno_status(-rf, "io_uring_register_files");
  if (absl::Status s = probe_zero_copy(); !s.ok()) return s;

  // The provided-buffer ring the multishot receive draws from (Linux 5.19+).
  ring_->buf_ring_len = (sizeof(io_uring_buf) * rx_count_ + 4095) & ~size_t{4095};
  void* br = mmap(nullptr, ring_->buf_ring_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
  if (br == MAP_FAILED) {
    ring_->buf_ring_len = 0;
    return errno_status(errno, "mmap of the receive buffer ring");
  }
  ring_->buf_ring = static_cast<io_uring_buf_ring*>(br);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(br);
  reg.ring_entries = rx_count_;
  reg.bgid = kBufGroup;
  if (int rb = io_uring_register_buf_ring(ring, &reg, 0); rb < 0) {
    return errno_status(-rb, "io_uring_register_buf_ring (provided buffer rings need Linux 5.19+)");
  }
  io_uring_buf_ring_init(ring_->buf_ring);
  const int mask = io_uring_buf_ring_mask(rx_count_);
  for (uint32_t i = 0; i < rx_count_; ++i) {
    io_uring_buf_ring_add(ring_->buf_ring, rx_buffer(i), rx_buf_len_, static_cast<uint16_t>(i),
                          mask, static_cast<int>(i));
  }
  io_uring_buf_ring_advance(ring_->buf_ring, static_cast<int>(rx_count_));
  rx_in_kernel_ = rx_count_;

  ring_->rx_msg.msg_namelen = sizeof(sockaddr_in);
  ring_->rx_msg.msg_controllen = kRxControl;
  arm_rx();
  counters_.rx_rearms = 0;
  // An unsupported multishot receive (Linux < 6.0) fails at once: say so now, not later.
  io_uring_cqe* cqe = nullptr;
  if (io_uring_peek_cqe(ring, &cqe) == 0 && cqe != nullptr && cqe->user_data == kRxTag &&
      cqe->res < 0 && !(cqe->flags & IORING_CQE_F_MORE)) {
    const int err = -cqe->res;
    io_uring_cqe_seen(ring, cqe);
    return errno_status(err, "multishot IORING_OP_RECVMSG (needs Linux 6.0+)");
  }
  if (!rx_armed_) return absl::InternalError("UringIo: could not post the receive");
  return absl::OkStatus();
}

// Registering the transmit pool (io_uring_register_buffers) would spare the page pinning per
// send, but a SENDMSG_ZC from registered buffers needs Linux 6.15 and a liburing newer than
// 2.3 (io_uring_prep_sendmsg_zc_fixed), with no probe for it; so transmit buffers stay plain.
absl::Status UringIo::probe_zero_copy() {
  bool offered = false;
  if (io_uring_probe* p = io_uring_get_probe_ring(&ring_->ring); p != nullptr) {
    offered = io_uring_opcode_supported(p, IORING_OP_SENDMSG_ZC) != 0;
    io_uring_free_probe(p);
  }
  bool use = false;
  switch (config_.zero_copy_send) {
    case ZeroCopySend::kOff:
      break;
    case ZeroCopySend::kOn:
      if (!offered)
        return absl::UnimplementedError(
            "UringIoConfig.zero_copy_send = on: this kernel has no IORING_OP_SENDMSG_ZC (Linux "
            "6.1+); valid values here auto, off");
      use = true;
      break;
    case ZeroCopySend::kAuto:
      // Loopback delivery copies every zero-copy payload anyway (skb_orphan_frags_rx).
      use = offered && (config_.local_ip4 >> 24) != 127;
      break;
  }
  setup_.zero_copy_send = use;
  // io_uring_enter(2): each notification then says whether the kernel copied after all.
  if (use) zc_flags_ = uapi::kSendZcReportUsage;
  setup_.zc_usage_known = zc_flags_ != 0;
  return absl::OkStatus();
}

UringIo::~UringIo() {
  if (ring_ && ring_->ring_ok) {
    io_uring* ring = &ring_->ring;
    // Cancel the receive and any send still waiting for socket room, then wait (bounded) for
    // their completions, and zero-copy sends' notifications, so that no request refers to the
    // buffers unmapped below. A notification still pending past the bound keeps its pages
    // pinned by the kernel, not mapped here, so the unmap stays safe.
    if (io_uring_sqe* sqe = io_uring_get_sqe(ring); sqe != nullptr) {
      io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
      io_uring_sqe_set_data64(sqe, kCancelTag);
      io_uring_submit(ring);
    }
    const Time give_up = monotonic_now() + 1 * kSecond;
    while ((tx_in_flight_ > 0 || rx_armed_ || wake_armed_) && monotonic_now() < give_up) {
      __kernel_timespec ts{0, 10'000'000};
      io_uring_cqe* cqe = nullptr;
      io_uring_wait_cqe_timeout(ring, &cqe, &ts);
      reap();
    }
    // The registered file table holds the sockets open; the ring's own teardown is
    // asynchronous, so unregister first (synchronous): then close() really releases the
    // ports, and a new instance can bind them at once.
    io_uring_unregister_files(ring);
  }
  if (rx_fd_ >= 0) close(rx_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  for (int fd : ev_fds_) close(fd);
  if (ring_ && ring_->ring_ok) io_uring_queue_exit(&ring_->ring);
  if (ring_ && ring_->buf_ring != nullptr) munmap(ring_->buf_ring, ring_->buf_ring_len);
  if (memory_ != nullptr) munmap(memory_, memory_len_);
}

// ---------------------------------------------------------------------------- data path

uint8_t* UringIo::rx_buffer(uint32_t bid) const noexcept {
  return rx_frames_[bid].data - (kRxPrefix - kSynthLen);
}

// A free SQE; when the queue is full, what is queued is handed to the kernel first. Null
// only if the kernel took none of it.
io_uring_sqe* UringIo::next_sqe() {
  io_uring* ring = &ring_->ring;
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe != nullptr) return sqe;
  io_uring_submit(ring);
  return io_uring_get_sqe(ring);
}

void UringIo::arm_rx() {
  io_uring* ring = &ring_->ring;
  io_uring_sqe* sqe = next_sqe();
  if (sqe == nullptr) return;  // tried again on the next burst
  io_uring_prep_recvmsg_multishot(sqe, kRxFixedFile, &ring_->rx_msg, 0);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
  sqe->buf_group = kBufGroup;
  io_uring_sqe_set_data64(sqe, kRxTag);
  io_uring_submit(ring);
  rx_armed_ = true;
  ++counters_.rx_rearms;
}

void UringIo::maybe_arm_rx() {
  // Re-arm only when the kernel has a buffer to fill; otherwise it would stop again at once.
  if (!rx_armed_ && !rx_failed_ && rx_in_kernel_ > 0) arm_rx();
}

void UringIo::recycle_rx(uint16_t bid) {
  io_uring_buf_ring_add(ring_->buf_ring, rx_buffer(bid), rx_buf_len_, bid,
                        io_uring_buf_ring_mask(rx_count_), 0);
  io_uring_buf_ring_advance(ring_->buf_ring, 1);
  ++rx_in_kernel_;
}

void UringIo::on_rx_completion(int32_t res, uint32_t flags) {
  if (!(flags & IORING_CQE_F_MORE)) {
    rx_armed_ = false;
    // -ENOBUFS: every buffer is lent out; re-armed when one comes back. Anything else that
    // ends the receive for good (a kernel without it) must not be retried in a loop.
    if (res < 0 && res != -ENOBUFS && res != -ECANCELED && res != -EINTR) rx_failed_ = true;
  }
  if (res < 0 && res != -ENOBUFS && res != -ECANCELED) {
    ++counters_.rx_errors;
    counters_.last_rx_errno = -res;
  }
  if (!(flags & IORING_CQE_F_BUFFER)) return;
  const auto bid = static_cast<uint16_t>(flags >> IORING_CQE_BUFFER_SHIFT);
  --rx_in_kernel_;
  if (bid >= rx_count_) return;  // not ours: cannot happen with one buffer group
  if (res < 0) {
    recycle_rx(bid);
    return;
  }
  uint8_t* buf = rx_buffer(bid);
  msghdr* msg = &ring_->rx_msg;
  io_uring_recvmsg_out* out = io_uring_recvmsg_validate(buf, res, msg);
  if (out == nullptr || out->namelen < sizeof(sockaddr_in)) {
    ++counters_.rx_bad;
    ++stats_.rx_dropped;
    recycle_rx(bid);
    return;
  }
  uint8_t tos = 0, ttl = 64;
  int segment = 0;  // UDP_GRO: the size of each coalesced datagram
  for (cmsghdr* c = io_uring_recvmsg_cmsg_firsthdr(out, msg); c != nullptr;
       c = io_uring_recvmsg_cmsg_nexthdr(out, msg, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && c->cmsg_len >= CMSG_LEN(1)) {
      tos = *CMSG_DATA(c);
    } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL &&
               c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int v = 0;
      std::memcpy(&v, CMSG_DATA(c), sizeof(v));
      ttl = static_cast<uint8_t>(v);
    } else if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO &&
               c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      std::memcpy(&segment, CMSG_DATA(c), sizeof(segment));
    } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL &&
               c->cmsg_len >= CMSG_LEN(sizeof(uint32_t))) {
      uint32_t v = 0;
      std::memcpy(&v, CMSG_DATA(c), sizeof(v));
      const uint32_t lost = v - rxq_ovfl_seen_;  // cumulative, modulo 2^32
      rxq_ovfl_seen_ = v;
      counters_.rx_kernel_dropped += lost;
      stats_.rx_dropped += lost;
    }
  }
  if (out->flags & MSG_TRUNC) {
    ++counters_.rx_truncated;
    ++stats_.rx_dropped;
    recycle_rx(bid);
    return;
  }
  sockaddr_in src{};
  std::memcpy(&src, io_uring_recvmsg_name(out), sizeof(src));
  const auto* payload = static_cast<const uint8_t*>(io_uring_recvmsg_payload(out, msg));
  const size_t payload_len = io_uring_recvmsg_payload_length(out, res, msg);

  const uint32_t src_ip = ntohl(src.sin_addr.s_addr);
  const uint16_t sport = ntohs(src.sin_port);
  if (segment > 0 && payload_len > static_cast<size_t>(segment)) {
    // Coalesced: split when lent (lend_split), each segment into a frame of the split pool.
    const size_t count = (payload_len + segment - 1) / segment;
    if (static_cast<size_t>(segment) + kSynthLen > config_.frame_capacity) {
      counters_.rx_truncated += count;
      stats_.rx_dropped += count;
      recycle_rx(bid);
      return;
    }
    ++counters_.rx_gro_receives;
    counters_.rx_gro_datagrams += count;
    rx_split_[bid] = RxSplit{src_ip, sport, tos, ttl, static_cast<uint32_t>(segment),
                             static_cast<uint32_t>(payload - rx_buffer(bid)),
                             static_cast<uint32_t>(payload - rx_buffer(bid) + payload_len)};
  } else {
    // Everything needed is read: write Ethernet / IPv4 / UDP over the consumed prefix.
    if (setup_.gro) rx_split_[bid].segment = 0;
    assert(payload == rx_frames_[bid].data + kSynthLen);
    synthesize(rx_frames_[bid], src_ip, sport, tos, ttl, payload_len);
  }
  rx_ready_[(rx_ready_head_ + rx_ready_count_) % rx_count_] = bid;
  ++rx_ready_count_;
}

// Ethernet / IPv4 / UDP in front of the payload at f.data + 42, as a NIC would deliver them.
void UringIo::synthesize(Frame& f, uint32_t src_ip, uint16_t sport, uint8_t tos, uint8_t ttl,
                         size_t payload_len) const noexcept {
  wire::Ethernet* eth = wire::as<wire::Ethernet>(f.data);
  std::memcpy(eth->raw, config_.local_mac.data(), 6);  // dst
  eth->raw[6] = 0x02;  // src: a locally administered MAC made of the source address
  eth->raw[7] = 0x00;
  wire::store_be_n<4>(eth->raw + 8, src_ip);
  eth->set_ethertype(NET_ETHERTYPE_IPV4);
  uint8_t* ip = f.data + kEthLen;
  write_ip_udp(ip, src_ip, config_.local_ip4, tos, ttl, sport, config_.udp_port, payload_len);
  wire::as<wire::Ipv4>(ip)->set_checksum(wire::ipv4_header_checksum(ip, kIpLen));
  f.len = static_cast<uint32_t>(kSynthLen + payload_len);
  f.wire_len = 0;
  f.priority = Priority::kData;
  f.checksums_ok = true;  // the kernel verified the UDP checksum; the IP header is ours
}

void UringIo::reap() {
  io_uring* ring = &ring_->ring;
  // DEFER_TASKRUN: the kernel posts our completions only when we ask (IORING_ENTER_GETEVENTS).
  // TASKRUN_FLAG: the kernel flags the SQ ring when work is pending, so the (costly) entry is
  // made only then, not on every poll of an idle ring.
  if (setup_.defer_taskrun && io_uring_cq_ready(ring) == 0 &&
      (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_TASKRUN) != 0)
    io_uring_get_events(ring);
  std::array<io_uring_cqe*, 64> cqes{};
  for (;;) {
    const unsigned n = io_uring_peek_batch_cqe(ring, cqes.data(), cqes.size());
    if (n == 0) return;
    for (unsigned i = 0; i < n; ++i) {
      const io_uring_cqe* cqe = cqes[i];
      const uint64_t tag = cqe->user_data;
      if (tag == kRxTag) {
        on_rx_completion(cqe->res, cqe->flags);
      } else if (tag == kWakeTag) {
        wake_armed_ = false;
        uint64_t count;
        [[maybe_unused]] const ssize_t r = read(wake_fd_, &count, sizeof(count));  // resets it
      } else if (tag < tx_count_) {
        on_tx_completion(static_cast<uint32_t>(tag), cqe->res, cqe->flags);
      } else if ((tag & kGsoTag) != 0 && (tag & ~kGsoTag) < gso_.size()) {
        on_gso_completion(static_cast<uint32_t>(tag & ~kGsoTag), cqe->res, cqe->flags);
      }
    }
    io_uring_cq_advance(ring, n);
  }
}

// Takes one of a send's completions: its result, or for a zero-copy send also its
// notification (io_uring_prep_send_zc(3)); true once the kernel no longer reads the buffers.
bool UringIo::send_zc_done(bool& result_seen, bool& notif_due, bool& notif_seen, int32_t res,
                           uint32_t flags) {
  if (flags & IORING_CQE_F_NOTIF) {
    ++counters_.tx_zc_notifs;
    if (static_cast<uint32_t>(res) & uapi::kNotifUsageZcCopied) ++counters_.tx_zc_copied;
    notif_seen = true;
  } else {
    if (res < 0) {
      ++counters_.tx_send_errors;
      counters_.last_send_errno = -res;
      if (res == -EINVAL && zc_flags_ != 0) {
        // Linux 6.1 has SENDMSG_ZC but refuses IORING_SEND_ZC_REPORT_USAGE (6.2): go without.
        zc_flags_ = 0;
        setup_.zc_usage_known = false;
      }
    }
    result_seen = true;
    notif_due = (flags & IORING_CQE_F_MORE) != 0;
  }
  if (!result_seen || (notif_due && !notif_seen)) return false;  // the kernel still reads it
  result_seen = notif_due = notif_seen = false;
  return true;
}

void UringIo::on_tx_completion(uint32_t index, int32_t res, uint32_t flags) {
  TxSlot& s = tx_slots_[index];
  if (!(flags & IORING_CQE_F_NOTIF)) {
    if (res < 0) {
      ++stats_.tx_dropped;
    } else {
      ++stats_.tx_packets;
      stats_.tx_bytes += tx_slots_[index].frame_bytes;
    }
  }
  if (!send_zc_done(s.result_seen, s.notif_due, s.notif_seen, res, flags)) return;
  tx_free_[tx_free_count_++] = index;
  --tx_in_flight_;
}

void UringIo::on_gso_completion(uint32_t gi, int32_t res, uint32_t flags) {
  GsoSend& g = gso_[gi];
  if (!(flags & IORING_CQE_F_NOTIF)) {
    if (res < 0) {
      stats_.tx_dropped += g.count;
      // A segment longer than the route's MTU allows (EINVAL before Linux 6.x, EMSGSIZE
      // since): datagrams sent one by one may be fragmented, a GSO segment may not. One by
      // one from now on.
      if (res == -EINVAL || res == -EMSGSIZE) {
        setup_.gso = false;
        ++counters_.tx_gso_refused;
      }
    } else {
      stats_.tx_packets += g.count;
      for (uint32_t i = 0, at = g.head; i < g.count; ++i, at = tx_slots_[at].next)
        stats_.tx_bytes += tx_slots_[at].frame_bytes;
    }
  }
  if (!send_zc_done(g.result_seen, g.notif_due, g.notif_seen, res, flags)) return;
  for (uint32_t i = 0, at = g.head; i < g.count; ++i, at = tx_slots_[at].next)
    tx_free_[tx_free_count_++] = at;
  tx_in_flight_ -= g.count;
  gso_free_[gso_free_count_++] = gi;
}

size_t UringIo::rx_burst(std::span<Frame*> out) {
  reap();
  maybe_arm_rx();
  size_t n = 0;
  while (n < out.size() && rx_ready_count_ > 0) {
    const uint16_t bid = rx_ready_[rx_ready_head_];
    if (setup_.gro && rx_split_[bid].segment != 0) {
      const size_t lent = lend_split(out.subspan(n));
      n += lent;
      if (lent == 0) break;  // the split pool is lent out
      continue;
    }
    Frame* f = &rx_frames_[bid];
    rx_ready_head_ = (rx_ready_head_ + 1) % rx_count_;
    --rx_ready_count_;
    ++stats_.rx_packets;
    stats_.rx_bytes += f->len;
    out[n++] = f;
  }
  return n;
}

// Copies segments of the coalesced receive at the head of rx_ready_ into split frames; the
// kernel's buffer goes back once its last segment is out.
size_t UringIo::lend_split(std::span<Frame*> out) {
  const uint16_t bid = rx_ready_[rx_ready_head_];
  RxSplit& r = rx_split_[bid];
  const uint8_t* buf = rx_buffer(bid);
  size_t n = 0;
  while (n < out.size() && r.next < r.end) {
    if (split_free_count_ == 0) {
      ++counters_.rx_split_waits;
      break;
    }
    Frame* f = &rx_frames_[split_free_[--split_free_count_]];
    const uint32_t len = std::min(r.segment, r.end - r.next);
    std::memcpy(f->data + kSynthLen, buf + r.next, len);
    synthesize(*f, r.src_ip, r.sport, r.tos, r.ttl, len);
    r.next += len;
    ++stats_.rx_packets;
    stats_.rx_bytes += f->len;
    out[n++] = f;
  }
  if (r.next >= r.end) {
    r.segment = 0;
    rx_ready_head_ = (rx_ready_head_ + 1) % rx_count_;
    --rx_ready_count_;
    recycle_rx(bid);
  }
  return n;
}

void UringIo::release_rx(std::span<Frame* const> frames) {
  for (Frame* f : frames) {
    const auto index = static_cast<uint32_t>(f - rx_frames_.data());
    if (index < rx_count_) {
      recycle_rx(static_cast<uint16_t>(index));
    } else {
      split_free_[split_free_count_++] = index;
    }
  }
}

size_t UringIo::alloc_tx(std::span<Frame*> out) {
  if (tx_free_count_ < out.size()) reap();  // sends completed since the last burst
  size_t n = 0;
  while (n < out.size() && tx_free_count_ > 0) {
    Frame* f = &tx_frames_[tx_free_[--tx_free_count_]];
    f->len = 0;
    f->wire_len = 0;
    f->priority = Priority::kData;
    f->ref = nullptr;
    f->ref_len = f->ref_at = 0;
    out[n++] = f;
  }
  if (n < out.size() && tx_free_count_ == 0) ++stats_.tx_no_buffer;
  return n;
}

// Reads Ethernet [802.1Q] / IPv4 / UDP in place and fills the frame's sendmsg.
bool UringIo::prepare_send(Frame& f, uint32_t tx_index) {
  if (f.wire_len > f.len) return false;  // payload carried by length: nothing to send
  uint8_t* p = f.data;
  // The headers must come before a referenced payload; the lengths they state cover it.
  const size_t n = f.ref_len > 0 ? std::min(f.ref_at, f.len) : f.len;
  const size_t logical = size_t{f.len} + f.ref_len;
  size_t l3 = kEthLen;
  if (n < kEthLen) return false;
  uint16_t type = wire::as<wire::Ethernet>(p)->ethertype();
  if (type == NET_ETHERTYPE_VLAN) {
    if (n < kEthLen + wire::Vlan::kSize) return false;
    type = wire::as<wire::Vlan>(p + kEthLen)->ethertype();
    l3 += wire::Vlan::kSize;
  }
  if (type != NET_ETHERTYPE_IPV4 || n < l3 + kIpLen) return false;
  uint8_t* ip = p + l3;
  const wire::Ipv4& h = *wire::as<wire::Ipv4>(ip);
  const size_t ihl = size_t{h.ihl()} * 4;
  const uint16_t total = h.total_length();
  if (h.version() != 4 || ihl < kIpLen || total < ihl + kUdpLen || total > logical - l3 ||
      l3 + ihl + kUdpLen > n)
    return false;
  if (h.protocol() != NET_IPPROTO_UDP || h.mf() || h.frag_offset() != 0)
    return false;  // not UDP, fragment
  uint8_t* udp_at = ip + ihl;
  const wire::Udp& udp = *wire::as<wire::Udp>(udp_at);
  const uint16_t udp_len = udp.length();
  if (udp_len < kUdpLen || udp_len > total - ihl) return false;
  uint8_t* payload = udp_at + kUdpLen;
  const size_t payload_len = udp_len - kUdpLen;
  const auto tos = static_cast<uint8_t>(h.dscp() << 2 | h.ecn());
  const uint8_t ttl = h.ttl();
  const uint16_t sport = udp.sport(), dport = udp.dport();
  const uint32_t socket = sport % config_.ev_sockets;
  // The ICRC below is rewritten in one buffer: a RoCEv2 payload is gathered in first.
  if (f.ref_len > 0 && dport == wire::kRoceUdpPort && !flatten(f)) return false;

  // RoCEv2: make the ICRC cover the headers the receiver will see (uring_io.h).
  if (dport == wire::kRoceUdpPort && payload_len >= wire::Bth::kSize + wire::kIcrcSize) {
    uint8_t want[kIpLen + kUdpLen];
    write_ip_udp(want, config_.local_ip4, h.dst(), tos, ttl, ev_ports_[socket], dport,
                 payload_len);
    mask_ip_udp(want, kIpLen);
    uint8_t* icrc_at = payload + payload_len - wire::kIcrcSize;
    const size_t after = payload_len - wire::kIcrcSize;  // bytes after the UDP header
    if (ihl == kIpLen) {
      uint8_t delta[kIpLen + kUdpLen];
      std::memcpy(delta, ip, sizeof(delta));
      mask_ip_udp(delta, kIpLen);
      bool differs = false;
      for (size_t i = 0; i < sizeof(delta); ++i) {
        delta[i] ^= want[i];
        differs |= delta[i] != 0;
      }
      if (differs) {
        // CRC-32 is affine: crc(M') = crc(M) ^ lin(M ^ M'), and lin(delta . 0^k) is
        // lin(delta) shifted over k zero bytes, which crc32_combine computes in O(log k).
        static constexpr uint8_t kZeros[kIpLen + kUdpLen] = {};
        const uLong lin = crc32(0, delta, sizeof(delta)) ^ crc32(0, kZeros, sizeof(kZeros));
        const uLong shifted = crc32_combine(lin, 0, static_cast<z_off_t>(after));
        wire::store_icrc(icrc_at, wire::load_icrc(icrc_at) ^ static_cast<uint32_t>(shifted));
        ++counters_.tx_icrc_updates;
      }
    } else {
      // IP options (never sent by our engines): recompute over the wire headers.
      static constexpr uint8_t kMaskedLrh[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
      uint8_t bth[wire::Bth::kSize];
      std::memcpy(bth, payload, sizeof(bth));
      bth[4] = 0xFF;
      uint32_t crc = wire::icrc_crc32(0, kMaskedLrh, sizeof(kMaskedLrh));
      crc = wire::icrc_crc32(crc, want, sizeof(want));
      crc = wire::icrc_crc32(crc, bth, sizeof(bth));
      crc = wire::icrc_crc32(crc, payload + sizeof(bth), after - sizeof(bth));
      wire::store_icrc(icrc_at, crc);
      ++counters_.tx_icrc_updates;
    }
  }

  TxSlot& s = tx_slots_[tx_index];
  s.dst.sin_addr.s_addr = htonl(h.dst());
  s.dst.sin_port = htons(dport);
  // The payload as up to three pieces: after the UDP header, the referenced bytes, the rest;
  // cut at the UDP length. The kernel gathers them (no copy here).
  const iovec pieces[3] = {
      {payload, static_cast<size_t>((f.ref_len > 0 ? f.data + f.ref_at : f.data + f.len) - payload)},
      {const_cast<uint8_t*>(f.ref), f.ref_len},
      {f.data + f.ref_at, f.ref_len > 0 ? f.len - f.ref_at : 0},
  };
  size_t left = payload_len;
  s.iovcnt = 0;
  for (const iovec& piece : pieces) {
    const size_t take = std::min(piece.iov_len, left);
    if (take == 0) continue;
    s.iov[s.iovcnt++] = iovec{piece.iov_base, take};
    left -= take;
  }
  if (left > 0) return false;  // cannot happen: the lengths were checked against `logical`
  s.msg.msg_iovlen = s.iovcnt;
  s.len = static_cast<uint32_t>(payload_len);
  s.frame_bytes = static_cast<uint32_t>(logical);
  s.socket = static_cast<uint16_t>(socket);
  s.tos = tos;
  s.ttl = ttl;
  // IP_TOS carries DSCP and ECN (the kernel keeps the ECN bits of a UDP socket's TOS);
  // IP_TTL the hop limit, when the frame has a valid one.
  size_t control = 0;
  cmsghdr* c = reinterpret_cast<cmsghdr*>(s.control);
  c->cmsg_level = IPPROTO_IP;
  c->cmsg_type = IP_TOS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  const int tos_v = tos;
  std::memcpy(CMSG_DATA(c), &tos_v, sizeof(tos_v));
  control += CMSG_SPACE(sizeof(int));
  if (ttl != 0) {
    c = reinterpret_cast<cmsghdr*>(s.control + control);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_TTL;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    const int ttl_v = ttl;
    std::memcpy(CMSG_DATA(c), &ttl_v, sizeof(ttl_v));
    control += CMSG_SPACE(sizeof(int));
  }
  s.msg.msg_controllen = control;
  return true;
}

size_t UringIo::tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) {
  for (Frame* f : unused) tx_free_[tx_free_count_++] = static_cast<uint32_t>(f - tx_frames_.data());
  size_t queued = 0;
  uint32_t ready[kMaxBurst];
  size_t n = 0;
  for (Frame* f : filled) {
    const auto index = static_cast<uint32_t>(f - tx_frames_.data());
    if (!prepare_send(*f, index)) {
      ++counters_.tx_unparseable;
      ++stats_.tx_dropped;
      tx_free_[tx_free_count_++] = index;
      continue;
    }
    if (!setup_.gso) {
      queued += submit_one(index);
      continue;
    }
    ready[n++] = index;
    if (n == kMaxBurst) {
      queued += send_grouped(std::span<const uint32_t>(ready, n));
      n = 0;
    }
  }
  if (n > 0) queued += send_grouped(std::span<const uint32_t>(ready, n));
  if (queued > 0) io_uring_submit(&ring_->ring);
  return queued;
}

// Groups the prepared buffers for UDP_SEGMENT (uring_io.h): same socket, destination, TOS and
// TTL; one payload size but the last; at most 64 datagrams and 65507 bytes. A group is sent
// in the order its first buffer came, so each socket's and destination's order holds.
size_t UringIo::send_grouped(std::span<const uint32_t> ready) {
  struct Group {
    uint32_t head, tail, count, segment, bytes;
    bool closed;  // a shorter datagram ended it
  };
  Group groups[kMaxBurst];
  size_t open[kMaxBurst];  // per group: index of the newest group with the same key, or ~0
  size_t g = 0;
  for (const uint32_t index : ready) {
    TxSlot& s = tx_slots_[index];
    const uint32_t len = s.len;
    size_t k = g;  // the newest group with this one's key
    for (size_t i = g; i-- > 0;) {
      const TxSlot& h = tx_slots_[groups[i].head];
      if (open[i] == ~size_t{0} && h.socket == s.socket && h.tos == s.tos && h.ttl == s.ttl &&
          h.dst.sin_addr.s_addr == s.dst.sin_addr.s_addr && h.dst.sin_port == s.dst.sin_port) {
        k = i;
        break;
      }
    }
    if (k < g) {
      Group& grp = groups[k];
      if (!grp.closed && len <= grp.segment && grp.count < kGsoMaxSegments &&
          grp.bytes + len <= kMaxUdpPayload) {
        tx_slots_[grp.tail].next = index;
        grp.tail = index;
        ++grp.count;
        grp.bytes += len;
        grp.closed = len < grp.segment;
        continue;
      }
      open[k] = g;  // superseded: later buffers of this key go to the new group
    }
    groups[g] = Group{index, index, 1, len, len, false};
    open[g] = ~size_t{0};
    ++g;
  }
  size_t queued = 0;
  for (size_t i = 0; i < g; ++i) {
    const Group& grp = groups[i];
    queued += grp.count == 1 ? submit_one(grp.head) : submit_group(grp.head, grp.count, grp.segment);
  }
  return queued;
}

// Returns 1 if queued; else the buffer is dropped (counted) and free again.
bool UringIo::submit_one(uint32_t index) {
  io_uring_sqe* sqe = next_sqe();
  if (sqe == nullptr) {
    ++counters_.tx_no_sqe;
    ++stats_.tx_dropped;
    tx_free_[tx_free_count_++] = index;
    return false;
  }
  const TxSlot& s = tx_slots_[index];
  if (setup_.zero_copy_send) {
    io_uring_prep_sendmsg_zc(sqe, static_cast<int>(1 + s.socket), &s.msg, 0);
    sqe->ioprio |= zc_flags_;
    ++counters_.tx_zc_sends;
  } else {
    io_uring_prep_sendmsg(sqe, static_cast<int>(1 + s.socket), &s.msg, 0);
  }
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, index);
  ++tx_in_flight_;
  return true;
}

// One sendmsg for `count` datagrams chained from `head`; returns how many were queued (all
// or none: then they are dropped and counted).
uint32_t UringIo::submit_group(uint32_t head, uint32_t count, uint32_t segment) {
  io_uring_sqe* sqe = gso_free_count_ > 0 ? next_sqe() : nullptr;
  if (sqe == nullptr) {  // no SQE (a group is never short of a GsoSend: see carve_pool)
    for (uint32_t i = 0, at = head; i < count; ++i, at = tx_slots_[at].next)
      tx_free_[tx_free_count_++] = at;
    counters_.tx_no_sqe += count;
    stats_.tx_dropped += count;
    return 0;
  }
  const uint32_t gi = gso_free_[--gso_free_count_];
  GsoSend& g = gso_[gi];
  const TxSlot& h = tx_slots_[head];
  g.dst = h.dst;
  g.head = head;
  g.count = count;
  size_t iovs = 0;
  for (uint32_t i = 0, at = head; i < count; ++i, at = tx_slots_[at].next) {
    const TxSlot& m = tx_slots_[at];
    std::copy_n(m.iov, m.iovcnt, g.iov + iovs);
    iovs += m.iovcnt;
  }
  g.msg.msg_iovlen = iovs;
  // The head's IP_TOS / IP_TTL, then UDP_SEGMENT: the size the kernel cuts at.
  std::memcpy(g.control, h.control, h.msg.msg_controllen);
  cmsghdr* c = reinterpret_cast<cmsghdr*>(g.control + h.msg.msg_controllen);
  c->cmsg_level = IPPROTO_UDP;
  c->cmsg_type = UDP_SEGMENT;
  c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
  const auto seg = static_cast<uint16_t>(segment);
  std::memcpy(CMSG_DATA(c), &seg, sizeof(seg));
  g.msg.msg_controllen = h.msg.msg_controllen + CMSG_SPACE(sizeof(uint16_t));
  // Copied, never zero-copy: a zero-copy skb pins each page as a fragment, at most
  // MAX_SKB_FRAGS (17) of them, and a group's buffers span more: EMSGSIZE.
  io_uring_prep_sendmsg(sqe, static_cast<int>(1 + h.socket), &g.msg, 0);
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, kGsoTag | gi);
  ++counters_.tx_gso_sends;
  counters_.tx_gso_datagrams += count;
  tx_in_flight_ += count;
  return count;
}

void UringIo::wait(Time deadline) {
  maybe_arm_rx();
  io_uring* ring = &ring_->ring;
  if (wake_fd_ >= 0 && !wake_armed_) {
    if (io_uring_sqe* sqe = next_sqe(); sqe != nullptr) {
      io_uring_prep_poll_add(sqe, wake_fd_, POLLIN);
      io_uring_sqe_set_data64(sqe, kWakeTag);
      io_uring_submit(ring);
      wake_armed_ = true;
    }
  }
  if (rx_ready_count_ > 0 || io_uring_cq_ready(ring) > 0) return;
  const Time now = monotonic_now();
  if (deadline <= now) return;
  const Time ns = (deadline - now + kNanosecond - 1) / kNanosecond;
  __kernel_timespec ts{};
  ts.tv_sec = ns / 1'000'000'000;
  ts.tv_nsec = ns % 1'000'000'000;
  io_uring_cqe* cqe = nullptr;
  io_uring_wait_cqe_timeout(ring, &cqe, &ts);  // -ETIME at the deadline; the CQE stays queued
}

void UringIo::wake() noexcept {
  const uint64_t one = 1;
  // Fails only when the counter would overflow, i.e. a wake is pending anyway.
  if (wake_fd_ < 0) return;
  [[maybe_unused]] const ssize_t r = write(wake_fd_, &one, sizeof(one));
}

}  // namespace uet::io
