// Two UET endpoints on the fake link (tests/common/fake_link.h), the set-up the engine tests
// share: a config per host, a pair with A's source and B's registered region, and a link whose
// filter says how many copies of a frame arrive, with seeded jitter for reordering.
// Each test keeps the values it asserts on (seed, idle timeout, sizes) at its call site.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/fake_link.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::testing {

// A UET endpoint at `ip` (host_config), start PSNs and path selectors seeded with `seed`.
inline UetConfig uet_config(uint32_t ip, uint64_t seed) {
  UetConfig c = host_config<UetConfig>(ip);
  c.seed = seed;
  return c;
}

// A writes `src` (`bytes` of 0x5A) into B's region `dst` (`bytes` of 0, key `rkey`).
struct UetPair {
  UetPair(const UetConfig& a, const UetConfig& b, size_t bytes)
      : ea(std::move(*UetEndpoint::create(a))),
        eb(std::move(*UetEndpoint::create(b))),
        link(ea.get(), eb.get()) {
    dst.assign(bytes, 0);
    src.assign(bytes, 0x5A);
    rkey = *eb->register_memory(dst.data(), dst.size());
  }
  // A's completions since the last call (at most 64).
  std::vector<Completion> completions() {
    std::vector<Completion> c(64);
    c.resize(ea->poll_completions(c));
    return c;
  }
  std::unique_ptr<UetEndpoint> ea, eb;
  FakeLink link;
  std::vector<uint8_t> src, dst;
  uint32_t rkey = 0;
};

// A and B on the fake link, where a filter returns how many copies of each frame arrive
// (0 = lost) and set_jitter() delays each copy by up to `max` more, drawn from a generator
// seeded with `jitter_seed` (two draws a frame, only while jitter is on).
class UetLink {
 public:
  using Filter = std::function<int(int from, const wire::Decoded& d)>;
  // The same, for a filter that rewrites the frame's bytes.
  using RewriteFilter =
      std::function<int(int from, const wire::Decoded& d, std::vector<uint8_t>& bytes)>;

  UetLink(const UetConfig& a, const UetConfig& b, uint64_t jitter_seed)
      : a_(std::move(*UetEndpoint::create(a))),
        b_(std::move(*UetEndpoint::create(b))),
        link_(a_.get(), b_.get()),
        rng_(jitter_seed) {
    link_.set_filter([this](int from, const wire::Decoded& d, std::vector<uint8_t>& bytes) {
      if (probe_) probe_();
      Verdict v;
      v.copies = filter_ ? filter_(from, d, bytes) : 1;
      if (jitter_ > 0) {
        v.delay = static_cast<Time>(rng_() % static_cast<uint64_t>(jitter_));
        v.dup_delay = static_cast<Time>(rng_() % static_cast<uint64_t>(jitter_));
      }
      return v;
    });
  }
  UetEndpoint& a() { return *a_; }
  UetEndpoint& b() { return *b_; }
  void set_filter(Filter f) {
    filter_ = [f = std::move(f)](int from, const wire::Decoded& d, std::vector<uint8_t>&) {
      return f(from, d);
    };
  }
  void set_filter(RewriteFilter f) { filter_ = std::move(f); }
  // `probe` runs before every frame either side sends (it sees B's memory between deliveries).
  void set_probe(std::function<void()> p) { probe_ = std::move(p); }
  void set_jitter(Time max) { jitter_ = max; }
  void run(Time until) { link_.run(until); }
  Time now() const { return link_.now(); }
  const std::vector<Sent>& log() const { return link_.log(); }

 private:
  std::unique_ptr<UetEndpoint> a_, b_;
  FakeLink link_;
  RewriteFilter filter_;
  std::function<void()> probe_;
  Time jitter_ = 0;
  std::mt19937_64 rng_;
};

// UetEndpoint::create refuses `c` with a message naming `field`.
inline void expect_refused(const UetConfig& c, const std::string& field) {
  auto e = UetEndpoint::create(c);
  ASSERT_FALSE(e.ok()) << field << " accepted";
  EXPECT_NE(e.status().message().find(field), std::string::npos) << e.status().message();
}

// Seeded faults for a link filter: one frame in `loss_every` lost, one in `dup_every` of the
// rest arriving twice; what it did is counted (a test asserts both happened).
struct RandomFaults {
  RandomFaults(uint32_t seed, uint32_t loss, uint32_t dup)
      : rng(seed), loss_every(loss), dup_every(dup) {}
  int operator()() {  // copies of the next frame
    if (rng() % loss_every == 0) {
      ++lost;
      return 0;
    }
    if (rng() % dup_every == 0) {
      ++duplicated;
      return 2;
    }
    return 1;
  }
  std::mt19937 rng;
  uint32_t loss_every, dup_every;
  int lost = 0, duplicated = 0;
};

// Tagged messages (the tagged and rendezvous tests): a send of `msg` to `peer`, a receive over
// `buf`, and completions by wr_id (each must come once).
inline TaggedSendRequest tagged_send(uint64_t wr_id, uint32_t peer, const std::vector<uint8_t>& msg,
                                     uint64_t tag, DeliveryMode mode = DeliveryMode::kRud) {
  TaggedSendRequest ts;
  ts.wr_id = wr_id;
  ts.peer = peer;
  ts.local = msg.data();
  ts.length = msg.size();
  ts.tag = tag;
  ts.mode = mode;
  return ts;
}
inline TaggedRecv tagged_recv(uint64_t wr_id, std::vector<uint8_t>& buf, uint64_t tag,
                              uint64_t ignore = 0, uint32_t source = 0) {
  return TaggedRecv{wr_id, buf.data(), buf.size(), tag, ignore, source};
}
inline std::map<uint64_t, Completion> by_wr_id(const std::vector<Completion>& cs) {
  std::map<uint64_t, Completion> m;
  for (const Completion& c : cs) {
    EXPECT_TRUE(m.emplace(c.wr_id, c).second) << "wr_id " << c.wr_id << " completed twice";
  }
  return m;
}

}  // namespace uet::testing
