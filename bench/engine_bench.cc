// engine_bench: what one packet costs each protocol engine, UET next to RoCEv2 (Google Benchmark).
//
// Two endpoints in one thread, back to back with no fabric: the initiator's frames go straight
// into the target's rx(), the target's ACKs straight back. Time is simulated at 100 Gb/s, so
// windows, pacing, ACK coalescing and timers behave as on a link, while the CPU time measured
// is the engines' own, both sides together: posting, framing, decoding, placement, ACKs,
// completions.
//
//   BM_Engine/payload/{uet,rocev2}  4 KiB payloads as real bytes, as with a NIC that gathers:
//                                   sent by reference from registered memory (zero-copy
//                                   transmit, Frame::ref; the integrity check summed from
//                                   there), gathered into the receive buffer by the "NIC"
//                                   outside the measured time (its DMA), integrity-checked
//                                   (UET: UDP checksum, RoCEv2: ICRC) and placed at the target.
//   BM_Engine/copy/{uet,rocev2}     as payload, for a host whose device cannot gather (memif,
//                                   af_packet, io_uring): the payload copied into the frame.
//   BM_Engine/offload/{uet,rocev2}  as payload, with the integrity checks a NIC offloads left
//                                   to it (UET: UDP checksum, both ways; RoCEv2: ICRC, as RNICs
//                                   do it): engine work plus the placement.
//   BM_Engine/headers/{uet,rocev2}  payloads by length (the simulator's mode): protocol work only.
//   BM_RoundTrip/{uet,rocev2}       one 64-byte write in flight (uet-perf --lat): posting to
//                                   completion, the checks left to the engines; per round trip.
//   BM_Engine/payload/uet_tss       as copy/uet with every frame sealed and opened (TSS,
//                                   spec/uet.md §5: AES-256-GCM from ipsec-mb, the payload
//                                   encrypted from registered memory into the frame); paired
//                                   with payload/rocev2 in the table, read against payload/uet.
//   BM_Engine/payload/uet_tss_openssl  as uet_tss with OpenSSL's AES-256-GCM.
//   BM_Tagged/uet/{64,4096}         tagged sends (post_tsend, UET TAGGED_SEND, spec/uet.md
//                                   §4.1) of 64 B and 4 KiB, as payload (gathered, checksummed
//                                   both ways): the target keeps 64 tagged receives posted, one
//                                   per message to come, and posts each again as it completes,
//                                   so every message is matched on arrival; each receive is
//                                   checked for its tag. UET only: RoCEv2 has no tagged messages.
//   BM_Atomic/uet/{fetch,post}/{1,64}
//                                   atomics (post_atomic, UET FETCHING_ATOMIC / ATOMIC,
//                                   spec/uet.md §4.5): a SUM of 1 on one uint64 at the target,
//                                   its old value fetched into `result` or not, 1 or 64 in
//                                   flight, as payload. /1 is a round trip each, read against
//                                   BM_RoundTrip/uet; /64 the engines' rate. UET only.
//
// An iteration moves 32 data packets (and the ACKs they need); items are data packets, so
// items/s is packets per second per core with both endpoints on that core. BM_Tagged's
// iteration completes 32 messages (one packet each) at the target, BM_Atomic's 32 atomics at
// the initiator; items are operations, so items/s is operations per second. The time is taken
// around the engines' calls only (manual time), so the gather of the payload rows is left out
// (BM_RoundTrip, BM_Atomic: real time, the gathers of their small frames in it).
// With console output a table of UET/RoCEv2 ratios follows.
// Run: build/bin/engine_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/ratio_reporter.h"
#include "transport/rocev2/roce_endpoint.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::engine_bench {
namespace {

enum class Proto { kUet, kRocev2 };

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint64_t kWriteBytes = 1 << 20;
constexpr size_t kBurst = 32;
constexpr double kGbps = 100;

wire::MacAddr mac_of(uint32_t ip) { return {0x02, 0, 0, 0, 0, static_cast<uint8_t>(ip)}; }

enum class Mode { kPayload, kCopy, kOffload, kHeaders, kTss, kTssOpenSsl };

// Zero-copy transmit: the payload stays in registered memory and the "NIC" gathers it.
bool by_reference(Mode m) { return m == Mode::kPayload || m == Mode::kOffload; }

std::unique_ptr<Endpoint> make_endpoint(Proto p, uint32_t ip, uint32_t peer, Mode mode) {
  if (p == Proto::kUet) {
    UetConfig c;
    c.udp_checksum = mode != Mode::kOffload;
    c.local_ip4 = ip;
    c.local_mac = mac_of(ip);
    c.link_gbps = kGbps;
    c.base_rtt = 2 * kMicrosecond;
    c.tx_by_reference = by_reference(mode);
    if (mode == Mode::kTss || mode == Mode::kTssOpenSsl) {
      c.tss.enabled = true;
      c.tss.backend = mode == Mode::kTss ? tss::Backend::kIpsecMb : tss::Backend::kOpenSsl;
      tss::DomainConfig d;
      d.key[0].fill(0x42);
      d.installed[0] = true;
      c.tss.domains.push_back(d);
    }
    return std::move(*UetEndpoint::create(c));
  }
  RoceConfig c;
  c.local_ip4 = ip;
  c.local_mac = mac_of(ip);
  c.icrc_offload = mode == Mode::kOffload;
  c.tx_by_reference = by_reference(mode);
  auto ep = std::move(*RoceEndpoint::create(c));
  const bool initiator = ip == kIpA;
  (void)ep->connect_qp(peer, initiator ? 0x100 : 0x101, initiator ? 0x101 : 0x100,
                       initiator ? 1000 : 2000, initiator ? 2000 : 1000);
  return ep;
}

// A burst of frame buffers the "NIC" lends to an engine.
struct Buffers {
  std::vector<uint8_t> bytes;
  std::array<Frame, kBurst> frames{};
  std::array<Frame*, kBurst> ptrs{};
  Buffers(uint32_t capacity, bool checksums_ok) : bytes(size_t{capacity} * kBurst) {
    for (size_t i = 0; i < kBurst; ++i) {
      frames[i].data = bytes.data() + i * capacity;
      frames[i].capacity = capacity;
      frames[i].checksums_ok = checksums_ok;  // what the receiving NIC reports
      ptrs[i] = &frames[i];
    }
  }
  std::span<Frame* const> all() const { return ptrs; }
};

// The NIC's gather DMA: the first n frames of `from`, payloads sent by reference included, as
// received frames in `to`.
std::span<Frame* const> gather(const Buffers& from, size_t n, Buffers& to) {
  for (size_t i = 0; i < n; ++i) {
    const Frame& f = from.frames[i];
    Frame& g = to.frames[i];
    std::memcpy(g.data, f.data, f.ref_at + (f.ref_len == 0 ? f.len : 0));
    if (f.ref_len > 0) {
      std::memcpy(g.data + f.ref_at, f.ref, f.ref_len);
      std::memcpy(g.data + f.ref_at + f.ref_len, f.data + f.ref_at, f.len - f.ref_at);
    }
    g.len = f.len + f.ref_len;
    g.wire_len = f.wire_len;
    g.priority = f.priority;
  }
  return to.all().first(n);
}

using Clock = std::chrono::steady_clock;

// How long a frame with `payload` bytes takes to cross the link (120 bytes of headers).
Time wire_time(uint64_t payload) {
  return static_cast<Time>((static_cast<double>(payload) + 120) * 8 / kGbps * kNanosecond);
}

// Two endpoints back to back in one thread, A the initiator, and the frame buffers the "NIC"
// lends them: a pass of a host loop moves A's frames into B's rx() and B's back into A's,
// each side's timers run when due. With payloads sent by reference the "NIC" gathers each
// frame first (its DMA); when `timed`, their time is summed in `dma`, which the rows timed
// manually leave out (lap, seconds_since).
struct Pair {
  Pair(Proto proto, Mode mode, bool timed)
      : a(make_endpoint(proto, kIpA, kIpB, mode)),
        b(make_endpoint(proto, kIpB, kIpA, mode)),
        gathers(by_reference(mode)),
        time_gathers(timed),
        // Headers-only frames are too small for a payload, so the engines carry it by length.
        ab(mode != Mode::kHeaders ? 9216 : 256, mode == Mode::kOffload),
        ba(mode != Mode::kHeaders ? 9216 : 256, mode == Mode::kOffload),
        ab_wire(gathers ? 9216 : 0, mode == Mode::kOffload),
        ba_wire(gathers ? 9216 : 0, mode == Mode::kOffload) {}

  // A's frames to B, then B's timers if due; returns how many frames A sent.
  size_t a_to_b() { return cross(*a, ab, ab_wire, *b); }
  // B's frames to A, then A's timers if due.
  size_t b_to_a() { return cross(*b, ba, ba_wire, *a); }

  // The start of an iteration timed manually, and its time then, gathers left out.
  Clock::time_point lap() {
    dma = {};
    return Clock::now();
  }
  double seconds_since(Clock::time_point start) const {
    return std::chrono::duration<double>(Clock::now() - start - dma).count();
  }

  // One iteration's passes of a host loop, until `done()`: `post()` tops up A's operations,
  // A's frames go to B, `at_b()` takes B's completions, B's frames go back, `at_a()` takes
  // A's; the clock moves as A's frames cross the link, `per_packet` each (one when none). A
  // callback that fails the row returns false; so does this then.
  template <class Done, class Post, class AtB, class AtA>
  bool passes(benchmark::State& state, Time per_packet, Done done, Post post, AtB at_b, AtA at_a) {
    for (int guard = 0; !done(); ++guard) {
      if (guard > 100'000) {
        state.SkipWithError("no progress");
        return false;
      }
      if (!post()) return false;
      const size_t sent = a_to_b();
      if (!at_b()) return false;
      b_to_a();
      if (!at_a()) return false;
      now += sent > 0 ? static_cast<Time>(sent) * per_packet : per_packet;
    }
    return true;
  }

  // The packets the row cost besides its data: A's resends, B's ACKs.
  void count_packets(benchmark::State& state) const {
    state.counters["retx"] = static_cast<double>(a->stats().retransmitted_packets);
    state.counters["acks"] = static_cast<double>(b->stats().control_packets);
  }

  std::unique_ptr<Endpoint> a, b;
  Time now = 0;

 private:
  size_t cross(Endpoint& from, Buffers& out, Buffers& wire, Endpoint& to) {
    const size_t n = from.tx(out.all(), now);
    if (n > 0) to.rx(gathers ? nic(out, n, wire) : out.all().first(n), now);
    if (to.next_deadline() <= now) to.on_timer(now);
    return n;
  }
  std::span<Frame* const> nic(const Buffers& from, size_t n, Buffers& to) {
    if (!time_gathers) return gather(from, n, to);
    const Clock::time_point t0 = Clock::now();
    std::span<Frame* const> out = gather(from, n, to);
    dma += Clock::now() - t0;
    return out;
  }

  const bool gathers, time_gathers;
  Buffers ab, ba, ab_wire, ba_wire;
  Clock::duration dma{};  // the gathers of the iteration under way
};

// Moves `ep`'s completions out, each through `check` (nullptr: as it should be, else what is
// wrong), and adds how many to `count`. The first that is wrong fails the row (false).
template <class Check>
bool drain(benchmark::State& state, Endpoint& ep, uint64_t& count, Check check) {
  std::array<Completion, 16> done;
  for (size_t n; (n = ep.poll_completions(done)) > 0; count += n) {
    for (size_t i = 0; i < n; ++i) {
      if (const char* error = check(done[i]); error != nullptr) {
        state.SkipWithError(error);
        return false;
      }
    }
  }
  return true;
}

// A completion of `op` that succeeded, or `error`.
const char* expect(const Completion& c, Opcode op, const char* error) {
  return c.op == op && c.status == OpStatus::kSuccess ? nullptr : error;
}

// Whether the engine took a post; if not, the row fails with `error`.
bool taken(benchmark::State& state, const absl::Status& posted, const char* error) {
  if (!posted.ok()) state.SkipWithError(error);
  return posted.ok();
}

void BM_Engine(benchmark::State& state, Proto proto, Mode mode) {
  Pair pair(proto, mode, /*timed=*/true);
  Endpoint& a = *pair.a;
  std::vector<uint8_t> src(kWriteBytes, 0x5A), dst(kWriteBytes);
  const uint32_t rkey = *pair.b->register_memory(dst.data(), dst.size());

  uint64_t wr_id = 0, completed = 0;
  const EndpointStats before = a.stats();
  // One iteration moves kBurst data packets from A to B (and whatever ACKs that takes back):
  // the time per iteration divided by kBurst is the cost of one packet.
  auto packets_sent = [&] {
    const EndpointStats s = a.stats();
    return s.data_packets + s.retransmitted_packets;
  };
  for (auto _ : state) {
    const Clock::time_point start = pair.lap();
    const uint64_t goal = packets_sent() + kBurst;
    const bool ok = pair.passes(
        state, wire_time(4096), [&] { return packets_sent() >= goal; },
        [&] {
          for (; wr_id < completed + 2; ++wr_id) {
            WriteRequest wr;
            wr.wr_id = wr_id + 1;
            wr.peer = kIpB;
            wr.rkey = rkey;
            wr.local = src.data();
            wr.length = kWriteBytes;
            if (!taken(state, a.post_write(wr), "post_write refused")) return false;
          }
          return true;
        },
        [] { return true; },
        [&] {
          return drain(state, a, completed, [](const Completion& c) {
            return expect(c, Opcode::kWrite, "a write failed");
          });
        });
    if (!ok) return;
    state.SetIterationTime(pair.seconds_since(start));
  }
  const EndpointStats after = a.stats();
  const uint64_t packets = after.data_packets + after.retransmitted_packets -
                           before.data_packets - before.retransmitted_packets;
  state.SetItemsProcessed(static_cast<int64_t>(packets));
  state.SetBytesProcessed(static_cast<int64_t>(packets) * 4096);
  pair.count_packets(state);
}

// One 64-byte write in flight at a time (uet-perf --lat, ib_write_lat): what a round trip costs
// the two engines, posting to completion, with the checks a NIC without offloads leaves them.
void BM_RoundTrip(benchmark::State& state, Proto proto) {
  Pair pair(proto, Mode::kPayload, /*timed=*/false);
  std::vector<uint8_t> src(64, 0x5A), dst(64);
  const uint32_t rkey = *pair.b->register_memory(dst.data(), dst.size());
  uint64_t wr_id = 0;
  std::array<Completion, 4> done;
  for (auto _ : state) {
    WriteRequest wr;
    wr.wr_id = ++wr_id;
    wr.peer = kIpB;
    wr.rkey = rkey;
    wr.local = src.data();
    wr.length = src.size();
    if (!taken(state, pair.a->post_write(wr), "post_write refused")) return;
    size_t completed = 0;
    for (int guard = 0; completed == 0; ++guard) {
      if (guard > 1000) {
        state.SkipWithError("no completion");
        return;
      }
      // Each step is a pass of a host loop; the clock moves as the frames cross a 100 Gb/s link.
      pair.now += 500 * kNanosecond;
      pair.a_to_b();
      pair.b_to_a();
      completed = pair.a->poll_completions(done);
      if (completed > 0 && done[0].status != OpStatus::kSuccess) {
        state.SkipWithError("a write failed");
        return;
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
}

// Tagged sends of state.range(0) bytes (one packet each), UET only: the initiator keeps up to
// kTagDepth messages in flight and the target kTagDepth tagged receives posted, receive `seq`
// for message `seq`'s tag from the initiator alone. A message is posted only once its receive
// is, and a completed receive is posted again for the message kTagDepth on before the target's
// ACK leaves, so every message is matched on arrival (never held unexpected; checked at the
// end). Per message: posting, framing, matching, placement, both completions.
constexpr uint64_t kTagDepth = 64;
constexpr uint64_t kTagBase = uint64_t{0x7A6} << 52;  // every message's tag sets high bits too

constexpr uint64_t tag_of(uint64_t seq) { return kTagBase + seq; }

void BM_Tagged(benchmark::State& state) {
  const auto size = static_cast<uint64_t>(state.range(0));
  Pair pair(Proto::kUet, Mode::kPayload, /*timed=*/true);
  Endpoint &a = *pair.a, &b = *pair.b;
  std::vector<uint8_t> src(size, 0x5A), dst(size * kTagDepth);
  // Receive `seq` takes message `seq` into slot seq % kTagDepth.
  auto post_trecv = [&](uint64_t seq) {
    TaggedRecv tr;
    tr.wr_id = seq;
    tr.base = dst.data() + seq % kTagDepth * size;
    tr.length = size;
    tr.tag = tag_of(seq);
    tr.source = kIpA;
    return b.post_trecv(tr);
  };
  for (uint64_t seq = 1; seq <= kTagDepth; ++seq) {
    if (!taken(state, post_trecv(seq), "post_trecv refused")) return;
  }

  uint64_t sent = 0, sends_done = 0, received = 0;
  for (auto _ : state) {
    const Clock::time_point start = pair.lap();
    const uint64_t goal = received + kBurst;
    const bool ok = pair.passes(
        state, wire_time(size), [&] { return received >= goal; },
        [&] {
          while (sent < received + kTagDepth && sent - sends_done < kTagDepth) {
            TaggedSendRequest ts;
            ts.wr_id = ++sent;
            ts.peer = kIpB;
            ts.local = src.data();
            ts.length = size;
            ts.tag = tag_of(sent);
            if (!taken(state, a.post_tsend(ts), "post_tsend refused")) return false;
          }
          return true;
        },
        // Receives complete as their messages arrive: each checked, and posted again for the
        // message kTagDepth on before the ACK goes back.
        [&] {
          return drain(state, b, received, [&](const Completion& c) -> const char* {
            constexpr const char* kWrong = "a tagged receive failed or took the wrong message";
            if (expect(c, Opcode::kTaggedRecv, kWrong) != nullptr || c.tag != tag_of(c.wr_id) ||
                c.bytes != size) {
              return kWrong;
            }
            return post_trecv(c.wr_id + kTagDepth).ok() ? nullptr : "post_trecv refused";
          });
        },
        [&] {
          return drain(state, a, sends_done, [](const Completion& c) {
            return expect(c, Opcode::kTaggedSend, "a tagged send failed");
          });
        });
    if (!ok) return;
    state.SetIterationTime(pair.seconds_since(start));
  }
  if (static_cast<const UetEndpoint&>(b).counters().rx_tagged_unexpected != 0) {
    state.SkipWithError("a message arrived before its receive was posted");
    return;
  }
  state.SetItemsProcessed(static_cast<int64_t>(received));
  state.SetBytesProcessed(static_cast<int64_t>(received * size));
  pair.count_packets(state);
}

// Atomics of one uint64 (post_atomic, UET ATOMIC / FETCHING_ATOMIC, spec/uet.md §4.5), UET
// only: a SUM of 1 on one counter at the target, fetching (its old value lands in `result`) or
// not, state.range(0) of them in flight. An iteration completes kBurst at the initiator; each
// completion is checked, and a fetched value must be the count of the atomics before it (each
// executed once, in order: nothing is lost or reordered here). Per atomic: posting, framing,
// execution at the target, the answer (fetching) or ACK, the completion; a fetching one's
// CLEAR besides, when the initiator has nothing else to send.
void BM_Atomic(benchmark::State& state, bool fetching) {
  const auto depth = static_cast<uint64_t>(state.range(0));
  // Real time, the gathers in it (as BM_RoundTrip): a frame of ~100 bytes is gathered in less
  // time than the two clock reads that would take it out.
  Pair pair(Proto::kUet, Mode::kPayload, /*timed=*/false);
  Endpoint& a = *pair.a;
  uint64_t counter = 0;
  const uint64_t one = 1;
  std::vector<uint64_t> results(depth);  // atomic `seq` fetches into results[seq % depth]
  const uint32_t rkey =
      *pair.b->register_memory(reinterpret_cast<uint8_t*>(&counter), sizeof counter);

  uint64_t posted = 0, completed = 0;
  for (auto _ : state) {
    const uint64_t goal = completed + kBurst;
    const bool ok = pair.passes(
        state, wire_time(sizeof one), [&] { return completed >= goal; },
        [&] {
          for (; posted < completed + depth; ++posted) {
            AtomicRequest ar;
            ar.wr_id = posted + 1;
            ar.peer = kIpB;
            ar.rkey = rkey;
            ar.op = AtomicOp::kSum;
            ar.type = AtomicType::kUint64;
            ar.operand = reinterpret_cast<const uint8_t*>(&one);
            if (fetching) ar.result = reinterpret_cast<uint8_t*>(&results[ar.wr_id % depth]);
            if (!taken(state, a.post_atomic(ar), "post_atomic refused")) return false;
          }
          return true;
        },
        [] { return true; },
        [&] {
          return drain(state, a, completed, [&](const Completion& c) -> const char* {
            constexpr const char* kWrong = "an atomic failed or fetched the wrong value";
            if (expect(c, Opcode::kAtomic, kWrong) != nullptr || c.bytes != sizeof one) {
              return kWrong;
            }
            return !fetching || results[c.wr_id % depth] == c.wr_id - 1 ? nullptr : kWrong;
          });
        });
    if (!ok) return;
  }
  if (counter != static_cast<const UetEndpoint&>(*pair.b).counters().rx_atomics) {
    state.SkipWithError("an atomic was executed twice or not at all");
    return;
  }
  state.SetItemsProcessed(static_cast<int64_t>(completed));
  pair.count_packets(state);
}

void register_all() {
  benchmark::RegisterBenchmark("BM_Engine/payload/uet_tss", BM_Engine, Proto::kUet, Mode::kTss)
      ->UseManualTime()
      ->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark("BM_Engine/payload/uet_tss_openssl", BM_Engine, Proto::kUet,
                               Mode::kTssOpenSsl)
      ->UseManualTime()
      ->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark("BM_RoundTrip/uet", BM_RoundTrip, Proto::kUet)
      ->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark("BM_RoundTrip/rocev2", BM_RoundTrip, Proto::kRocev2)
      ->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark("BM_Tagged/uet", BM_Tagged)
      ->Arg(64)
      ->Arg(4096)
      ->UseManualTime()
      ->Unit(benchmark::kNanosecond);
  for (const bool fetching : {true, false}) {
    const char* name = fetching ? "BM_Atomic/uet/fetch" : "BM_Atomic/uet/post";
    benchmark::RegisterBenchmark(name, BM_Atomic, fetching)
        ->Arg(1)
        ->Arg(kTagDepth)
        ->UseRealTime()
        ->Unit(benchmark::kNanosecond);
  }
  for (const Mode mode : {Mode::kPayload, Mode::kCopy, Mode::kOffload, Mode::kHeaders}) {
    const std::string base = mode == Mode::kPayload   ? "BM_Engine/payload/"
                             : mode == Mode::kCopy    ? "BM_Engine/copy/"
                             : mode == Mode::kOffload ? "BM_Engine/offload/"
                                                      : "BM_Engine/headers/";
    benchmark::RegisterBenchmark((base + "uet").c_str(), BM_Engine, Proto::kUet, mode)
        ->UseManualTime()
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark((base + "rocev2").c_str(), BM_Engine, Proto::kRocev2, mode)
        ->UseManualTime()
        ->Unit(benchmark::kNanosecond);
  }
}

}  // namespace
}  // namespace uet::engine_bench

int main(int argc, char** argv) {
  return uet::bench::ratio_main(
      argc, argv, uet::engine_bench::register_all,
      "UET / RoCEv2, median real time per iteration (both endpoints): 32 data packets, or one "
      "64-byte write's round trip (BM_RoundTrip); ratio < 1: UET costs less");
}
