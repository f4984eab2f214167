// The UET engine's delivery modes besides RUD (NOTES.md, "The other delivery modes"): which
// verbs each carries, and what the modes without a PDC share (their frames' encapsulation,
// their turn in tx()). Each mode's mechanism lives in its own file: ROD's target side in
// uet_rod.cc, RUDI (§3.5) in uet_rudi.cc, UUD (§3.6) in uet_uud.cc. Comments cite
// spec/uet.md.
#include "absl/strings/str_cat.h"
#include "transport/uet/uet_endpoint.h"
#include "transport/uet/uet_internal.h"

namespace uet {

namespace {

const char* mode_name(DeliveryMode m) noexcept {
  switch (m) {
    case DeliveryMode::kRud:
      return "kRud";
    case DeliveryMode::kRod:
      return "kRod";
    case DeliveryMode::kRudi:
      return "kRudi";
    case DeliveryMode::kUud:
      return "kUud";
  }
  return "?";
}

}  // namespace

// Which verbs each mode carries: RUD and ROD all three; RUDI only idempotent ones (WRITE,
// READ: a resent SEND would consume a second receive buffer); UUD no READ (a READ needs a
// response, which an unreliable datagram does not get).
absl::Status UetEndpoint::check_mode(DeliveryMode m, Opcode op, const char* verb) {
  switch (m) {
    case DeliveryMode::kRud:
    case DeliveryMode::kRod:
      return absl::OkStatus();
    case DeliveryMode::kRudi:
      if (op == Opcode::kAtomic) {
        return absl::UnimplementedError(absl::StrCat(
            verb, ": DeliveryMode::kRudi does not carry atomics (RUDI is for idempotent "
                  "operations, spec/uet.md §3.5; an atomic must run once): use kRud or kRod"));
      }
      if (op != Opcode::kSend) return absl::OkStatus();
      return absl::UnimplementedError(absl::StrCat(
          verb,
          ": DeliveryMode::kRudi does not carry SEND (RUDI is for idempotent operations; "
          "a resent SEND would consume a second receive buffer): use kRud or kRod"));
    case DeliveryMode::kUud:
      if (op == Opcode::kAtomic) {
        return absl::UnimplementedError(absl::StrCat(
            verb, ": DeliveryMode::kUud does not carry atomics (an unreliable datagram "
                  "could be lost or run twice): use kRud or kRod"));
      }
      if (op != Opcode::kRead) return absl::OkStatus();
      return absl::UnimplementedError(
          absl::StrCat(verb,
                       ": DeliveryMode::kUud does not carry READ (its data would come back "
                       "unreliably): use kRud, kRod or kRudi"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(verb, ": unknown DeliveryMode ", static_cast<int>(m), " (", mode_name(m), ")"));
}

wire::Encap UetEndpoint::encap_to(uint32_t ip, const wire::MacAddr& mac, bool control,
                                  uint16_t sport) const {
  wire::Encap e;
  e.src_mac = local_mac_;
  e.dst_mac = mac;
  e.src_ip4 = local_ip4_;
  e.dst_ip4 = ip;
  e.dscp = control ? config_.dscp_control : config_.dscp_data;
  e.ecn = !control && config_.ect ? 2 : 0;
  e.sport = wire_sport(sport);
  e.dport = wire::kUetUdpPort;
  e.udp_checksum = udp_checksum();
  return e;
}

// RUDI's frames, then UUD's.
size_t UetEndpoint::tx_modes(std::span<Frame* const> out, Time now) {
  size_t n = tx_rudi(out, now);
  if (!modes_->uud.empty()) n += tx_uud(out.subspan(n));  // tx_modes runs once modes_ is made
  return n;
}

}  // namespace uet
