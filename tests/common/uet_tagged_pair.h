// The tagged and rendezvous tests' set-up (uet_tagged_test, uet_rendezvous_test,
// uet_rendezvous_push_test): hosts A and B on the fake link, their configs, and tagged sends
// from A to B. The files differ in their seeds and in whether and how sends go by
// rendezvous, which each names in one TaggedSetup.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/common/uet_pair.h"
#include "transport/uet/uet_endpoint.h"

namespace uet::testing {

inline constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

struct TaggedSetup {
  uint64_t seed;                  // the engines' (UetConfig::seed)
  uint64_t jitter_seed;           // the link's (UetLink)
  uint64_t rendezvous_bytes = 0;  // UetConfig::rendezvous_bytes (0: never)
  bool push = false;              // UetConfig::rendezvous_push
};

// config_for(ip) (a function object, so that `push` keeps its default): the host at `ip`.
// `push`: the target has the rest WRITten into its receive (a CTS) instead of READing it.
template <TaggedSetup kSetup>
struct TaggedConfig {
  UetConfig operator()(uint32_t ip, bool push = kSetup.push) const {
    UetConfig c = uet_config(ip, kSetup.seed);
    c.rendezvous_bytes = kSetup.rendezvous_bytes;
    c.rendezvous_push = push;
    return c;
  }
};

template <TaggedSetup kSetup>
struct TaggedLink : UetLink {
  explicit TaggedLink(const UetConfig& a = TaggedConfig<kSetup>{}(kIpA),
                      const UetConfig& b = TaggedConfig<kSetup>{}(kIpB))
      : UetLink(a, b, kSetup.jitter_seed) {}
};

// A's tagged send of `msg` to B, and a receive over `buf`.
inline TaggedSendRequest tsend(uint64_t wr_id, const std::vector<uint8_t>& msg, uint64_t tag,
                               DeliveryMode mode = DeliveryMode::kRud) {
  return tagged_send(wr_id, kIpB, msg, tag, mode);
}
inline TaggedRecv trecv(uint64_t wr_id, std::vector<uint8_t>& buf, uint64_t tag,
                        uint64_t ignore = 0, uint32_t source = 0) {
  return tagged_recv(wr_id, buf, tag, ignore, source);
}

}  // namespace uet::testing
