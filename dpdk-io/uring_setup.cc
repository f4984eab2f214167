// The io_uring UDP backend's set-up and teardown (uring_io.h): validate, create, the sockets,
// the buffer pool and the ring, and the bounded wait for the kernel at the end. The data path
// is in uring_io.cc.
#include "dpdk-io/uring_internal.h"

namespace uet::io {

using namespace uring_detail;  // NOLINT: this backend's own helpers

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
  std::vector<uint32_t> split_free(split_count_);
  for (uint32_t i = 0; i < split_count_; ++i) {
    rx_frames_[rx_count_ + i].data = split_base + tx_stride * i;
    rx_frames_[rx_count_ + i].capacity = config_.frame_capacity;
    split_free[i] = rx_count_ + split_count_ - 1 - i;
  }
  split_free_.fill(std::move(split_free));

  uint8_t* tx_base = split_base + tx_stride * split_count_;
  tx_frames_.resize(tx_count_);
  tx_slots_.resize(tx_count_);
  std::vector<uint32_t> tx_free(tx_count_);
  for (uint32_t i = 0; i < tx_count_; ++i) {
    tx_frames_[i].data = tx_base + tx_stride * i;
    tx_frames_[i].capacity = config_.frame_capacity;
    TxSlot& s = tx_slots_[i];
    s.dst.sin_family = AF_INET;
    s.msg.msg_name = &s.dst;
    s.msg.msg_namelen = sizeof(s.dst);
    s.msg.msg_iov = s.iov;
    s.msg.msg_control = s.control;
    tx_free[i] = tx_count_ - 1 - i;
  }
  tx_free_.fill(std::move(tx_free));
  // Every group holds two buffers or more, so tx_count_ / 2 groups are never all in use.
  gso_.resize(setup_.gso ? tx_count_ / 2 : 0);
  std::vector<uint32_t> gso_free(gso_.size());
  for (uint32_t i = 0; i < gso_.size(); ++i) {
    GsoSend& g = gso_[i];
    g.msg.msg_name = &g.dst;
    g.msg.msg_namelen = sizeof(g.dst);
    g.msg.msg_iov = g.iov;
    g.msg.msg_control = g.control;
    gso_free[i] = static_cast<uint32_t>(gso_.size() - 1 - i);
  }
  gso_free_.fill(std::move(gso_free));
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

}  // namespace uet::io
