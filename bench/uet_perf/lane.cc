// uet-perf (bench/uet_perf/main.cc): one lane's run: the operations (drive), the server's
// check of what arrived (serve), the client's end (write) and the report; the handshake before
// them is hello.cc's (bench/uet_perf/lane_phases.h).
#include "bench/uet_perf/lane_phases.h"

namespace uet::perf {
namespace {

// What a bad tag most often means (spec/uet.md §5.2, §5.3).
constexpr char kKeyHint[] =
    ": do both sides use the same --key_file (server mode: the server's domain key, the "
    "client's key derived for its own address)?";

// Lane::drive's state between passes of its loop: the slots with an operation outstanding,
// when each was posted (--lat), how many were posted, and when the last completion came.
class Driver {
 public:
  Driver(Lane& lane, std::vector<uint8_t>& src, uint32_t dst_rkey, uint64_t pattern_seed,
         Result& r)
      : l_(lane),
        src_(src),
        dst_rkey_(dst_rkey),
        pattern_seed_(pattern_seed),
        r_(r),
        busy_(lane.slots, 0),
        posted_at_(lane.lat ? lane.slots : 0),
        by_time_(lane.duration_s > 0),
        depth_(lane.lat ? 1 : lane.o.depth),
        start_(io::monotonic_now()),
        stop_posting_(by_time_ ? start_ + static_cast<Time>(lane.duration_s) * kSecond : kNever),
        last_progress_(start_),
        end_(start_),
        last_success_(start_),
        next_report_(lane.o.progress > 0 ? start_ + lane.o.progress : kNever) {}

  // Posts and polls until every operation is complete (or the run stops); fills r and returns
  // the operations posted.
  uint64_t run();

 private:
  // The --progress_ms line.
  void report_progress(Time now);
  // Posts while fewer than --tx_depth are outstanding and the next slot is free.
  void post_some();
  // One operation on the slot at `off` (here and in the peer's region).
  absl::Status post(uint64_t off);
  // Frees the completions' slots and counts them.
  void complete(std::span<const Completion> done);
  void succeeded(const Completion& c, uint64_t slot, Time t);
  void failed(const Completion& c, Time t);

  Lane& l_;
  std::vector<uint8_t>& src_;
  const uint32_t dst_rkey_;
  const uint64_t pattern_seed_;
  Result& r_;
  std::vector<uint8_t> busy_;
  std::vector<Time> posted_at_;
  const bool by_time_;
  const uint32_t depth_;
  const Time start_, stop_posting_;
  Time last_progress_, end_, last_success_, next_report_;
  uint64_t posted_ = 0;
  bool unsupported_ = false;  // the transport refused the operation (Unimplemented)
};

uint64_t Driver::run() {
  Completion comp[64];
  for (;;) {
    if (g_stop.load(std::memory_order_relaxed)) {
      r_.error = "interrupted";
      break;
    }
    // The clock of the last pass: one read fewer per pass (completions read it themselves).
    const Time now = std::max(l_.loop->last_now(), start_);
    if (now >= next_report_) report_progress(now);
    // As perftest, the first error completion ends the run: post nothing more, wait for
    // what is outstanding (the engine fails or flushes it within its retry budget).
    const bool may_post = r_.failed == 0 && (by_time_ ? now < stop_posting_ : posted_ < l_.iters);
    if (unsupported_ || (!may_post && r_.completed + r_.failed == posted_)) break;
    if (may_post) post_some();
    l_.loop->poll_once();
    const size_t n = l_.ep->poll_completions(comp);
    if (n > 0) {
      complete({comp, n});
    } else if (now - last_progress_ > stall_bound(l_.o)) {
      r_.error = absl::StrCat("stalled: no completion for --timeout_s past the retry budget (",
                              r_.completed, " of ",
                              posted_, " posted ", l_.op, "s completed)");
      break;
    }
  }
  r_.seconds = static_cast<double>(end_ - start_) / kSecond;
  r_.bytes = r_.completed * l_.size;
  r_.ok = r_.error.empty() && r_.failed == 0;
  return posted_;
}

void Driver::report_progress(Time now) {
  const EndpointStats es = l_.ep->stats();
  std::printf("uet-perf: progress: posted %lu completed %lu failed %lu; resent %lu, "
              "timeouts %lu\n",
              posted_, r_.completed, r_.failed, es.retransmitted_packets, es.timeouts);
  next_report_ = now + l_.o.progress;
}

void Driver::post_some() {
  while (posted_ - (r_.completed + r_.failed) < depth_ && (by_time_ || posted_ < l_.iters)) {
    const uint64_t slot = posted_ % l_.slots;
    const uint64_t off = slot * l_.size;  // the slot's bytes, here and in the peer's region
    if (busy_[slot]) break;
    const absl::Status posted_ok = post(off);
    if (posted_ok.code() == absl::StatusCode::kUnimplemented) {
      r_.error = std::string(posted_ok.message());
      unsupported_ = true;
      break;
    }
    if (!posted_ok.ok()) break;  // engine ring full: poll first
    busy_[slot] = 1;
    if (l_.lat) posted_at_[slot] = io::monotonic_now();
    ++posted_;
  }
}

absl::Status Driver::post(uint64_t off) {
  Endpoint& ep = *l_.ep;
  if (l_.op == "write") {
    return ep.post_write({posted_, l_.peer_ip, dst_rkey_, off, src_.data() + off, l_.size});
  } else if (l_.op == "read") {
    return ep.post_read({posted_, l_.peer_ip, dst_rkey_, off, src_.data() + off, l_.size});
  }
  SendRequest sr;
  sr.wr_id = posted_;
  sr.peer = l_.peer_ip;
  sr.local = src_.data() + off;
  sr.length = l_.size;
  return ep.post_send(sr);
}

void Driver::complete(std::span<const Completion> done) {
  const Time t = io::monotonic_now();
  last_progress_ = end_ = t;
  for (const Completion& c : done) {
    const uint64_t slot = c.wr_id % l_.slots;
    busy_[slot] = 0;
    if (c.status == OpStatus::kSuccess) {
      succeeded(c, slot, t);
    } else {
      failed(c, t);
    }
  }
}

void Driver::succeeded(const Completion& c, uint64_t slot, Time t) {
  ++r_.completed;
  last_success_ = t;
  // A read is checked the first time its slot is read (the slot still held the
  // complement, so a read that placed nothing cannot pass); later reads of the slot
  // are not, to keep the check out of the measured loop's steady state.
  if (l_.op == "read" && c.wr_id < l_.slots) {
    const uint64_t size = l_.size;
    const uint8_t* b = src_.data() + slot * size;
    for (uint64_t j = 0; j < size; ++j)
      if (b[j] != pattern_byte(pattern_seed_, slot * size + j)) ++r_.mismatched_bytes;
    r_.checked_bytes += size;
  }
  if (l_.lat) r_.lat_us.push_back(static_cast<double>(t - posted_at_[slot]) / kMicrosecond);
}

void Driver::failed(const Completion& c, Time t) {
  if (r_.failed++ == 0)
    r_.error_after_ms = static_cast<double>(t - last_success_) / kMillisecond;
  if (r_.error.empty())
    r_.error = absl::StrCat(l_.op, " ", c.wr_id, " failed: ", to_string(c.status));
}

// --bidir: the server reports its own direction (what it sent); the check stays that of the
// client's writes into its region.
void adopt_back(Result& r, Result& back) {
  r.completed = back.completed;
  r.failed = back.failed;
  r.error_after_ms = back.error_after_ms;
  r.bytes = back.bytes;
  r.seconds = back.seconds;
  r.lat_us = std::move(back.lat_us);
  if (!back.ok) {
    r.ok = false;
    r.error = back.error.empty() ? "the server's writes failed" : back.error;
  }
}

}  // namespace

int Lane::run(int listen_fd) {
  out.shown = o;
  if (auto s = connect(listen_fd); !s.ok()) return fail(s);
  if (auto s = o.server ? server_hello() : client_hello(); !s.ok()) return fail(s);
  if (auto s = meet(); !s.ok()) return fail(s);
  Result r;
  const io::IoStats before = tap.stats();
  Options shown = o;
  shown.lat = lat;
  shown.mtu = mtu;
  shown.op = op;
  shown.bidir = bidir;
  shown.base_rtt = base_rtt;
  shown.cc = cc;
  out.peer_rx_socket_bytes = peer_rx_socket;
  out.inflight_bound = rx_payload_bound(peer_rx_socket);
  if (o.server) {
    serve(r);
  } else {
    write(r);
  }
  release_references(io);  // before region goes
  const io::IoStats after = tap.stats();
  r.tx_packets = after.tx_packets - before.tx_packets;
  r.rx_packets = after.rx_packets - before.rx_packets;
#ifdef UET_PERF_HAVE_DPDK
  if (io.dpdk != nullptr) io.dpdk->drain_tx();  // what the device never took: freed, counted
#endif
  out.shown = shown;
  report(shown, io, tap, *ep, r, size, out);
  tap.close();
  if (g_stop.load()) return 130;
  return r.ok ? 0 : 1;
}

int Lane::fail(const absl::Status& s) {
  std::fprintf(stderr, "uet-perf: %s%s\n",
               o.lanes > 1 ? absl::StrFormat("lane %u: ", o.lane).c_str() : "",
               std::string(s.message()).c_str());
  out.r.ok = false;
  out.r.error = std::string(s.message());
#ifdef UET_PERF_HAVE_DPDK
  if (io.dpdk != nullptr) io.dpdk->drain_tx();
#endif
  tap.close();
  return g_stop.load() ? 130 : 1;
}

uint64_t Lane::drive(std::vector<uint8_t>& src, uint32_t dst_rkey, uint64_t pattern_seed,
                     Result& r) {
  if (lat) r.lat_us.reserve(duration_s > 0 ? 1 << 20 : iters);
  return Driver(*this, src, dst_rkey, pattern_seed, r).run();
}

void Lane::serve(Result& r) {
  // Serve until the client is done, then check the region. For sends, every received
  // message is checked as it completes (check_received).
  uint64_t recvs = 0;
  std::function<void()> serve = idle;
  if (op == "send") serve = [&] { check_received(r, recvs); };
  // --bidir: the server's own direction first (the client's DONE waits in the socket).
  Result back;
  uint64_t back_posted = 0;
  std::vector<uint8_t> back_src;
  if (bidir) {
    back_src.resize(slots * size);
    fill_pattern(back_src, seed ^ kBackSalt, /*complement=*/false);
    back_posted = drive(back_src, back_rkey, seed ^ kBackSalt, back);
  }
  absl::StatusOr<Fields> d = await_done(serve);
  if (!d.ok()) {
    r.ok = false;
    r.error = std::string(d.status().message());
    return;
  }
  check_region(*d, recvs, serve, r);
  if (bidir) adopt_back(r, back);
  answer_verify(*d, r, back, back_posted);
}

// Sends: message i came from the client's slot i % slots and filled the buffer posted i-th;
// each is checked as it completes, then its buffer is refilled with the complement and
// posted again.
void Lane::check_received(Result& r, uint64_t& recvs) {
  idle();
  Completion c[64];
  const size_t n = ep->poll_completions(c);
  for (size_t i = 0; i < n; ++i) {
    if (c[i].op != Opcode::kRecv) continue;
    const uint64_t buf = c[i].wr_id;
    uint8_t* b = region.data() + buf * size;
    const uint64_t from = (recvs % slots) * size;
    ++recvs;
    if (c[i].status != OpStatus::kSuccess || c[i].bytes != size) {
      ++r.failed;
      r.mismatched_bytes += size;
    } else {
      for (uint64_t j = 0; j < size; ++j)
        if (b[j] != pattern_byte(seed, from + j)) ++r.mismatched_bytes;
      r.checked_bytes += size;
    }
    for (uint64_t j = 0; j < size; ++j) b[j] = static_cast<uint8_t>(~pattern_byte(seed, buf * size + j));
    RecvBuffer rb;
    rb.wr_id = buf;
    rb.base = b;
    rb.length = size;
    (void)ep->post_recv(rb);
  }
}

// The client's DONE, for as long as its frames keep arriving: a client that stops (killed,
// stalled, its link down) without closing the control connection is given up once both
// have been silent for stall_bound().
absl::StatusOr<Fields> Lane::await_done(const std::function<void()>& serve) {
  uint64_t rx_seen = tap.stats().rx_packets;
  Time next_report = o.progress > 0 ? io::monotonic_now() + o.progress : kNever;
  const Time slice = std::min(o.timeout, o.progress > 0 ? o.progress : 100 * kMillisecond);
  Time silent_since = io::monotonic_now();
  absl::StatusOr<Fields> d = absl::DeadlineExceededError("");
  for (;;) {
    d = oob.recv(serve, slice);
    if (d.ok() || d.status().code() != absl::StatusCode::kDeadlineExceeded) break;
    const Time now = io::monotonic_now();
    const uint64_t rx_now = tap.stats().rx_packets;
    if (now >= next_report) {
      std::printf("uet-perf: progress: received frames %lu\n", rx_now);
      next_report = now + o.progress;
    }
    if (rx_now != rx_seen) {
      rx_seen = rx_now;
      silent_since = now;
    } else if (now - silent_since >= stall_bound(o)) {
      d = absl::DeadlineExceededError(absl::StrFormat(
          "control connection stalled: no DONE and no frame from the client for --timeout_s "
          "past the retry budget "
          "(%lu frames received)", rx_now));
      break;
    }
  }
  return d;
}

// The region against the pattern, as the operation left it (DONE `d` says how many there
// were); fills r's counts and verdict.
void Lane::check_region(Fields& d, uint64_t& recvs, const std::function<void()>& serve,
                        Result& r) {
  bool ok = true;
  const uint64_t writes = field_u64(d, "writes", &ok);
  const uint64_t completed = field_u64(d, "completed", &ok);
  r.completed = writes;
  r.bytes = writes * size;
  if (op == "write") {
    const uint64_t written_slots = std::min(writes, slots);
    r.checked_bytes = written_slots * size;
    for (uint64_t i = 0; i < r.checked_bytes; ++i)
      if (region[i] != pattern_byte(seed, i)) ++r.mismatched_bytes;
  } else if (op == "send") {
    // Every completed send must have arrived whole (late completions are drained first).
    const Time until = io::monotonic_now() + o.timeout;
    while (recvs < completed && io::monotonic_now() < until) serve();
    r.completed = recvs;
    r.bytes = recvs * size;
    if (recvs < completed) ++r.mismatched_bytes;
  } else {
    // Reads: the client checks what it read; the region must be untouched.
    r.checked_bytes = region.size();
    for (uint64_t i = 0; i < region.size(); ++i)
      if (region[i] != pattern_byte(seed, i)) ++r.mismatched_bytes;
  }
  r.verify = r.mismatched_bytes == 0 && ok ? "ok" : "mismatch";
  r.ok = r.verify == "ok" && d["ok"] == "1";
}

// VERIFY to the client (the check, TSS's refusals, --bidir's writes), then its BYE.
void Lane::answer_verify(Fields& d, Result& r, Result& back, uint64_t back_posted) {
  if (d["ok"] != "1") r.error = "the client reported errors";
  // §5.2: a wrong key shows only as tags that do not match; say so where it is seen.
  const TssOut tss = tss_of(o, *ep);
  if (!r.ok && tss.c.dropped() > 0) {
    absl::StrAppend(
        &r.error, r.error.empty() ? "" : "; ", "TSS refused ", tss.c.dropped(),
        " frames from the client", tss_drop_reasons(tss),
        tss.drops(tss::Drop::kBadTag) > 0 ? kKeyHint : "");
  }
  (void)oob.send("VERIFY", {{"ok", r.verify == "ok" ? "1" : "0"},
                            {"tss_dropped", std::to_string(tss.c.dropped())},
                            {"tss_bad_tag", std::to_string(tss.drops(tss::Drop::kBadTag))},
                            {"back_writes", std::to_string(back_posted)},
                            {"back_ok", back.ok ? "1" : "0"},
                            {"checked", std::to_string(r.checked_bytes)},
                            {"mismatched", std::to_string(r.mismatched_bytes)}});
  // Keep answering briefly so the client's last ACKs/retransmissions are not stranded.
  const Time until = io::monotonic_now() + 20 * kMillisecond;
  while (io::monotonic_now() < until) idle();
  // The client has stopped its data path once it says BYE; the connection stays open
  // until this process has closed its port (see the client's side).
  if (auto bye = oob.recv(nullptr, o.timeout); bye.ok() && (*bye)["_"] == "BYE")
    out.control = std::move(oob);
}

void Lane::write(Result& r) {
  std::vector<uint8_t> src(slots * size);
  // Writes and sends carry the pattern; reads land in the complement and must replace it.
  fill_pattern(src, seed, /*complement=*/op == "read");
  const uint64_t posted = drive(src, rkey, seed, r);
  // A failed operation's error comes first; the control connection's (a dead peer's) after.
  const auto control_error = [&r](const absl::Status& s) {
    r.ok = false;
    absl::StrAppend(&r.error, r.error.empty() ? "" : "; ", s.message());
  };
  if (auto s = oob.send("DONE", {{"writes", std::to_string(posted)},
                                 {"completed", std::to_string(r.completed)},
                                 {"ok", r.ok ? "1" : "0"}});
      !s.ok()) {
    control_error(s);
  } else if (auto v = oob.recv(idle, o.timeout); !v.ok()) {
    control_error(v.status());
  } else {
    if (bidir) {
      // The server's writes into this region: every slot they reached holds its pattern.
      bool vok = true;
      const uint64_t back_writes = field_u64(*v, "back_writes", &vok);
      const uint64_t reached = std::min(back_writes, slots) * size;
      for (uint64_t i = 0; i < reached; ++i)
        if (region[i] != pattern_byte(seed ^ kBackSalt, i)) ++r.mismatched_bytes;
      r.checked_bytes = reached;
      if (!vok || (*v)["back_ok"] != "1") {
        r.ok = false;
        if (r.error.empty()) r.error = "the server's writes failed";
      }
      std::printf("uet-perf: bidirectional: the server wrote %lu messages; this side checked %lu bytes, %lu mismatched\n",
                  back_writes, reached, r.mismatched_bytes);
    }
    r.verify = (*v)["ok"] == "1" && r.mismatched_bytes == 0 ? "ok" : "mismatch";
    if (r.verify != "ok") {
      r.ok = false;
      if (r.error.empty()) {
        r.error = r.mismatched_bytes > 0 ? "read data mismatched" : "the server found mismatched bytes";
      }
    }
    bool tok = true;
    const uint64_t peer_dropped = field_u64(*v, "tss_dropped", &tok);
    const uint64_t peer_bad_tag = field_u64(*v, "tss_bad_tag", &tok);
    if (!r.ok && tok && peer_dropped > 0) {
      absl::StrAppend(&r.error, r.error.empty() ? "" : "; ", "the server's TSS refused ",
                      peer_dropped, " of this side's frames (bad_tag ", peer_bad_tag, ")",
                      peer_bad_tag > 0 ? kKeyHint : "");
    }
    std::printf("uet-perf: server data check: %s\n", r.verify.c_str());
    release_references(io);  // before src goes
    // Leave the link after the server: it closes its port while this side neither polls
    // nor closes, then the connection. A memif peer's disconnect runs on the EAL's
    // interrupt thread and must not meet a burst or this side's own teardown.
    if (oob.send("BYE", {}).ok() && oob.wait_closed(o.timeout).ok()) {
#ifdef UET_PERF_HAVE_DPDK
      if (io.dpdk != nullptr) (void)io.dpdk->wait_peer_gone(kSecond);
#endif
    }
  }
  release_references(io);  // before src goes
}

int run_lane(const Options& o, Io& io, int listen_fd, LaneOut& out) {
  std::printf("uet-perf: %s, local %s\n", io.description.c_str(), ip_str(o.ip).c_str());
  for (const auto& [ip, mac] : o.neigh) resolver_table()[ip] = mac;

  std::optional<wire::PcapWriter> pcap;
  if (std::string path = o.pcap_path; !path.empty()) {
    if (o.lanes > 1) absl::StrAppend(&path, ".", o.lane);  // one capture per lane
    auto w = wire::PcapWriter::open(path);
    if (!w.ok()) {
      std::fprintf(stderr, "uet-perf: --pcap=%s: %s\n", path.c_str(),
                   std::string(w.status().message()).c_str());
      return 1;
    }
    pcap.emplace(std::move(*w));
  }
  TapIo tap(*io.backend, o.loss, mix(o.seed ^ (o.server ? 0x5e : 0xc1)), std::move(pcap));

  return Lane(o, io, tap, out).run(listen_fd);
}

}  // namespace uet::perf
