// udp-blast: a plain UDP sender and receiver (sendmmsg / recvmmsg, one thread each), the
// yardstick for uet-perf over io_uring: the same datagram size through the same kernel path,
// with no transport on top. bench/uet_perf_pair.py --udp_blast runs both in one go and reports
// uet-perf's rate as a ratio of this one (bench/README.md, "io_uring on loopback").
//
//   receiver:  udp-blast --recv --ip=127.0.0.1 --port=9000 --json=r.json
//   sender:    udp-blast --send=127.0.0.1 --port=9000 --size=4152 --count=16000
//
// The receiver binds, prints "ready", and counts datagrams until --count have arrived or none
// has for --idle_ms after the first; its rate is the bytes received from the first datagram to
// the last (what arrives, not what was sent: a UDP sender has no brake, so the receive socket
// may overflow, and the kernel's drop count is reported). The sender sends --count datagrams
// as fast as sendmmsg takes them. Every datagram carries its index, so the receiver also
// counts datagrams that arrive behind a later one.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"

ABSL_FLAG(bool, recv, false, "run as the receiver");
ABSL_FLAG(std::string, send, "",
          "run as the sender to the receiver at this IPv4 address (exactly one of --recv and "
          "--send=IP is required)");
ABSL_FLAG(std::string, ip, "", "local IPv4 address to bind (default \"\": any)");
ABSL_FLAG(uint32_t, port, 9000, "the receiver's UDP port, 1..65535");
ABSL_FLAG(uint32_t, size, 4152, "UDP payload bytes per datagram, 8..65507");
ABSL_FLAG(uint64_t, count, 16000, "datagrams, 1..100000000");
ABSL_FLAG(uint32_t, batch, 32, "datagrams per sendmmsg / recvmmsg, 1..1024");
ABSL_FLAG(uint32_t, socket_buffer_bytes, 4u << 20,
          "SO_RCVBUF / SO_SNDBUF asked (SO_*BUFFORCE when privileged), 65536..1073741824");
ABSL_FLAG(uint32_t, idle_ms, 500, "receiver: stop this long after the last datagram, 1..60000");
ABSL_FLAG(uint32_t, timeout_s, 30, "receiver: give up waiting for the first datagram, 1..3600");
ABSL_FLAG(std::string, json, "", "write the result as one JSON object to this file");

namespace {

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

bool in_range(const char* flag, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v >= lo && v <= hi) return true;
  std::fprintf(stderr, "udp-blast: --%s=%lu out of range: %lu..%lu\n", flag, v, lo, hi);
  return false;
}

bool parse_ip(const std::string& s, const char* flag, in_addr* out) {
  if (inet_pton(AF_INET, s.c_str(), out) == 1) return true;
  std::fprintf(stderr, "udp-blast: --%s=%s invalid: a dotted-quad IPv4 address\n", flag, s.c_str());
  return false;
}

void set_buffer(int fd, int force_opt, int opt, uint32_t bytes) {
  const int v = static_cast<int>(bytes);
  if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) != 0)
    (void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

// The kernel's count of datagrams dropped for a full receive buffer (SO_RXQ_OVFL), from the
// control message of the newest datagram.
uint32_t overflow_of(const msghdr& h) {
  auto* m = const_cast<msghdr*>(&h);
  for (cmsghdr* c = CMSG_FIRSTHDR(m); c != nullptr; c = CMSG_NXTHDR(m, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
      uint32_t v = 0;
      std::memcpy(&v, CMSG_DATA(c), sizeof(v));
      return v;
    }
  }
  return 0;
}

bool write_json(const std::string& text) {
  const std::string path = absl::GetFlag(FLAGS_json);
  if (path.empty()) return true;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "udp-blast: --json=%s: cannot open for writing\n", path.c_str());
    return false;
  }
  std::fprintf(f, "%s\n", text.c_str());
  std::fclose(f);
  return true;
}

int receive(int fd, uint32_t size, uint64_t count, uint32_t batch) {
  const int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
  // Room for one byte more than a datagram, so a larger one shows as truncated.
  std::vector<uint8_t> bufs(size_t{batch} * (size + 1));
  std::vector<iovec> iov(batch);
  std::vector<mmsghdr> msgs(batch);
  constexpr size_t kControl = CMSG_SPACE(sizeof(uint32_t));
  std::vector<uint8_t> control(batch * kControl);
  for (uint32_t i = 0; i < batch; ++i) {
    iov[i] = {bufs.data() + size_t{i} * (size + 1), size + 1};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_control = control.data() + i * kControl;
  }
  const int64_t idle_ns = int64_t{absl::GetFlag(FLAGS_idle_ms)} * 1'000'000;
  const int64_t give_up = now_ns() + int64_t{absl::GetFlag(FLAGS_timeout_s)} * 1'000'000'000;
  timeval tv{0, 1000 * std::min<int>(absl::GetFlag(FLAGS_idle_ms), 100)};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::printf("udp-blast: ready, receiving %u-byte datagrams\n", size);
  std::fflush(stdout);

  uint64_t got = 0, bytes = 0, wrong_size = 0, out_of_order = 0, next_index = 0;
  uint32_t overflow = 0;
  int64_t first = 0, last = 0;
  for (;;) {
    for (uint32_t i = 0; i < batch; ++i) msgs[i].msg_hdr.msg_controllen = kControl;
    const int n = recvmmsg(fd, msgs.data(), batch, MSG_WAITFORONE, nullptr);
    const int64_t t = now_ns();
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        std::fprintf(stderr, "udp-blast: recvmmsg: %s\n", std::strerror(errno));
        return 1;
      }
      if (got == 0 ? t > give_up : t - last > idle_ns) break;
      continue;
    }
    if (got == 0) first = t;
    last = t;
    for (int i = 0; i < n; ++i) {
      const msghdr& h = msgs[i].msg_hdr;
      overflow = std::max(overflow, overflow_of(h));
      if (msgs[i].msg_len != size || (h.msg_flags & MSG_TRUNC)) ++wrong_size;
      uint64_t index = 0;
      std::memcpy(&index, iov[i].iov_base, sizeof(index));
      if (index < next_index) ++out_of_order;  // a gap ahead is a drop
      next_index = std::max(next_index, index + 1);
      ++got;
      bytes += msgs[i].msg_len;
    }
    if (got >= count) break;
  }
  if (got == 0) {
    std::fprintf(stderr, "udp-blast: no datagram before --timeout_s\n");
    return 1;
  }
  const double seconds = static_cast<double>(last - first) / 1e9;
  const double gbps = seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0;
  std::printf(
      "udp-blast: received %lu of %lu datagrams (%lu bytes) in %.6f s: %.3f Gb/s, "
      "%.3f Mpps; socket drops %u, out of order %lu, wrong size %lu\n",
      got, count, bytes, seconds, gbps,
      seconds > 0 ? static_cast<double>(got) / seconds / 1e6 : 0.0, overflow, out_of_order,
      wrong_size);
  const bool ok = write_json(
      absl::StrFormat("{\"tool\": \"udp-blast\", \"role\": \"recv\", \"size\": %u, \"count\": %lu, "
                      "\"received\": %lu, \"bytes\": %lu, \"seconds\": %.6f, \"bw_gbps\": %.4f, "
                      "\"socket_drops\": %u, \"out_of_order\": %lu, \"wrong_size\": %lu}",
                      size, count, got, bytes, seconds, gbps, overflow, out_of_order, wrong_size));
  return ok && wrong_size == 0 ? 0 : 1;
}

int send_all(int fd, const sockaddr_in& to, uint32_t size, uint64_t count, uint32_t batch) {
  std::vector<uint8_t> bufs(size_t{batch} * size, 0x5A);
  std::vector<iovec> iov(batch);
  std::vector<mmsghdr> msgs(batch);
  for (uint32_t i = 0; i < batch; ++i) {
    iov[i] = {bufs.data() + size_t{i} * size, size};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_name = const_cast<sockaddr_in*>(&to);
    msgs[i].msg_hdr.msg_namelen = sizeof(to);
  }
  const int64_t start = now_ns();
  uint64_t sent = 0, errors = 0;
  while (sent < count) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(batch, count - sent));
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t index = sent + i;
      std::memcpy(iov[i].iov_base, &index, sizeof(index));
    }
    const int r = sendmmsg(fd, msgs.data(), n, 0);
    if (r < 0) {
      if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN) {
        ++errors;
        continue;
      }
      std::fprintf(stderr, "udp-blast: sendmmsg: %s\n", std::strerror(errno));
      return 1;
    }
    sent += static_cast<uint64_t>(r);
  }
  const double seconds = static_cast<double>(now_ns() - start) / 1e9;
  std::printf("udp-blast: sent %lu %u-byte datagrams in %.6f s: %.3f Gb/s (%lu sends refused)\n",
              sent, size, seconds,
              seconds > 0 ? static_cast<double>(sent * size) * 8 / seconds / 1e9 : 0.0, errors);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "udp-blast: plain UDP sendmmsg/recvmmsg throughput, the yardstick for uet-perf.\n"
      "  udp-blast --recv --ip=A --port=P    then    udp-blast --send=A --port=P --size=S "
      "--count=N");
  absl::ParseCommandLine(argc, argv);
  const bool recv = absl::GetFlag(FLAGS_recv);
  const std::string peer = absl::GetFlag(FLAGS_send);
  if (recv == !peer.empty()) {
    std::fprintf(stderr, "udp-blast: exactly one of --recv and --send=IP is required\n");
    return 2;
  }
  const uint32_t port = absl::GetFlag(FLAGS_port), size = absl::GetFlag(FLAGS_size);
  const uint32_t batch = absl::GetFlag(FLAGS_batch);
  const uint64_t count = absl::GetFlag(FLAGS_count);
  if (!in_range("port", port, 1, 65535) || !in_range("size", size, 8, 65507) ||
      !in_range("count", count, 1, 100000000) || !in_range("batch", batch, 1, 1024) ||
      !in_range("socket_buffer_bytes", absl::GetFlag(FLAGS_socket_buffer_bytes), 65536, 1u << 30) ||
      !in_range("idle_ms", absl::GetFlag(FLAGS_idle_ms), 1, 60000) ||
      !in_range("timeout_s", absl::GetFlag(FLAGS_timeout_s), 1, 3600)) {
    return 2;
  }
  sockaddr_in local{};
  local.sin_family = AF_INET;
  if (const std::string ip = absl::GetFlag(FLAGS_ip); !ip.empty()) {
    if (!parse_ip(ip, "ip", &local.sin_addr)) return 2;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  if (!recv && !parse_ip(peer, "send", &to.sin_addr)) return 2;

  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    std::fprintf(stderr, "udp-blast: socket: %s\n", std::strerror(errno));
    return 1;
  }
  const uint32_t buffer = absl::GetFlag(FLAGS_socket_buffer_bytes);
  if (recv) {
    set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, buffer);
    local.sin_port = htons(static_cast<uint16_t>(port));
  } else {
    set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, buffer);
  }
  if (bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof(local)) != 0) {
    std::fprintf(stderr, "udp-blast: bind (--ip, --port=%u): %s\n", recv ? port : 0,
                 std::strerror(errno));
    close(fd);
    return 1;
  }
  const int rc = recv ? receive(fd, size, count, batch) : send_all(fd, to, size, count, batch);
  close(fd);
  return rc;
}
