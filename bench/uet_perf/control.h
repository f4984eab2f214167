// uet-perf (bench/uet_perf/main.cc): the control connection.
#pragma once

#include "bench/uet_perf/perf.h"

namespace uet::perf {

// ---------------------------------------------------------------------------------------------
// The control connection: text lines "WORD key=value ...".

using Fields = std::map<std::string, std::string>;

class Oob {
 public:
  Oob() = default;
  explicit Oob(int fd) : fd_(fd) {}
  Oob(Oob&& o) noexcept : fd_(std::exchange(o.fd_, -1)), buf_(std::move(o.buf_)) {}
  Oob& operator=(Oob&& o) noexcept {
    std::swap(fd_, o.fd_);
    std::swap(buf_, o.buf_);
    return *this;
  }
  ~Oob() {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status send(const std::string& word, const Fields& f) {
    std::string line = word;
    for (const auto& [k, v] : f) absl::StrAppend(&line, " ", k, "=", v);
    line += "\n";
    size_t off = 0;
    while (off < line.size()) {
      const ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return absl::UnavailableError("control connection: send failed (peer gone?)");
      off += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  // Waits for one line, calling `idle` (the data path) between checks. Returns its first word
  // in fields["_"].
  absl::StatusOr<Fields> recv(const std::function<void()>& idle, Time timeout) {
    const Time give_up = io::monotonic_now() + timeout;
    uint32_t spins = 0;
    Time next_poll = 0;
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        const std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        Fields f;
        bool first = true;
        const std::vector<std::string> toks = absl::StrSplit(line, ' ', absl::SkipEmpty());
        for (const std::string& tok : toks) {
          if (first) {
            f["_"] = tok;
            first = false;
            continue;
          }
          const std::vector<std::string> kv = absl::StrSplit(tok, absl::MaxSplits('=', 1));
          f[kv[0]] = kv.size() > 1 ? kv[1] : "";
        }
        return f;
      }
      if (g_stop.load(std::memory_order_relaxed)) return absl::CancelledError("interrupted");
      // The data path in between: a server's every pass runs here. The clock every 64 idle
      // calls, the socket once a millisecond: a poll() is a system call, and a frame that
      // arrives during one waits for it.
      if (idle && (++spins & 63) != 0) {
        idle();
        continue;
      }
      const Time now = io::monotonic_now();
      if (now > give_up)
        return absl::DeadlineExceededError("control connection: no answer before --timeout_s");
      if (idle && now < next_poll) {
        idle();
        continue;
      }
      next_poll = now + kMillisecond;
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, idle ? 0 : 10);
      if (r > 0) {
        char tmp[4096];
        const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n == 0) return absl::UnavailableError("control connection closed by the peer");
        if (n < 0 && errno != EINTR && errno != EAGAIN)
          return absl::UnavailableError("control connection: recv failed");
        if (n > 0) buf_.append(tmp, static_cast<size_t>(n));
      } else if (idle) {
        idle();
      }
    }
  }

  // Waits, without touching the data path, until the peer closes the connection.
  absl::Status wait_closed(Time timeout) {
    const Time give_up = io::monotonic_now() + timeout;
    for (;;) {
      if (g_stop.load(std::memory_order_relaxed)) return absl::CancelledError("interrupted");
      if (io::monotonic_now() > give_up)
        return absl::DeadlineExceededError("control connection: still open after --timeout_s");
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      char tmp[256];
      const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return absl::OkStatus();
    }
  }

  static absl::StatusOr<int> listen_on(uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return absl::InternalError("socket() failed");
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1) != 0) {
      ::close(fd);
      return absl::UnavailableError(absl::StrCat("--oob_port=", port, ": cannot listen (",
                                                 std::string(std::strerror(errno)), ")"));
    }
    return fd;
  }

  static absl::StatusOr<Oob> accept_on(int lfd, Time timeout) {
    const Time give_up = io::monotonic_now() + timeout;
    while (!g_stop.load()) {
      pollfd p{lfd, POLLIN, 0};
      if (::poll(&p, 1, 10) > 0) {
        const int fd = ::accept(lfd, nullptr, nullptr);
        if (fd >= 0) {
          const int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          return Oob(fd);
        }
      }
      if (io::monotonic_now() > give_up)
        return absl::DeadlineExceededError("no client connected before --timeout_s");
    }
    return absl::CancelledError("interrupted");
  }

  static absl::StatusOr<Oob> connect_to(const std::string& host, uint16_t port, Time timeout) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || res == nullptr)
      return absl::InvalidArgumentError("--client=" + host + ": cannot resolve the host");
    const Time give_up = io::monotonic_now() + timeout;
    absl::Status last;
    while (!g_stop.load()) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
        freeaddrinfo(res);
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return Oob(fd);
      }
      if (fd >= 0) ::close(fd);
      if (io::monotonic_now() > give_up) {
        freeaddrinfo(res);
        return absl::DeadlineExceededError(absl::StrCat("--client=", host, " --oob_port=", port,
                                                        ": no server before --timeout_s"));
      }
      usleep(20'000);  // control path: the server may not be listening yet
    }
    freeaddrinfo(res);
    return absl::CancelledError("interrupted");
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

uint64_t field_u64(const Fields& f, const std::string& k, bool* ok);

}  // namespace uet::perf
