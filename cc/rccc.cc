#include "cc/rccc.h"

#include "absl/strings/str_cat.h"

namespace uet::cc {

absl::Status RcccConfig::validate() const {
  auto bad = [](const char* field, double v, const char* range) {
    return absl::InvalidArgumentError(
        absl::StrCat("RcccConfig.", field, "=", v, " out of range: ", range));
  };
  if (!(link_gbps >= 1 && link_gbps <= 3200)) return bad("link_gbps", link_gbps, "1..3200");
  if (quantum < 256 || quantum > (1u << 20)) return bad("quantum", quantum, "256..1048576");
  if (speculative > (uint64_t{1} << 24)) {
    return bad("speculative", static_cast<double>(speculative), "0..16777216");
  }
  if (max_credit_target < quantum || max_credit_target > (uint64_t{1} << 24) - 1) {
    return bad("max_credit_target", static_cast<double>(max_credit_target),
               "quantum..16777215 (the 24-bit credit_target field)");
  }
  if (max_senders < 1 || max_senders > 65536) return bad("max_senders", max_senders, "1..65536");
  if (!(grant_rate_fraction > 0 && grant_rate_fraction <= 1)) {
    return bad("grant_rate_fraction", grant_rate_fraction, "(0, 1]");
  }
  return absl::OkStatus();
}

RcccReceiver::RcccReceiver(const RcccConfig& c)
    : c_(c), ps_per_byte_(8e3 / (c.link_gbps * c.grant_rate_fraction)) {}

void RcccReceiver::reserve(uint32_t n) {
  n = std::min(n, c_.max_senders);
  if (n <= senders_.size()) return;
  // Doubling, but never past max_senders (resize() alone may round the capacity up past it).
  const size_t cap = std::min<size_t>(std::max<size_t>(senders_.capacity() * 2, n), c_.max_senders);
  senders_.reserve(cap);
  ring_.reserve(cap);
  senders_.resize(n);
  ring_.resize(n);
}

void RcccReceiver::set_active(uint32_t s, bool on) noexcept {
  Sender& x = senders_[s];
  if (x.active == on) return;
  x.active = on;
  if (on) {
    ring_[active_++] = s;
    return;
  }
  for (uint32_t i = 0; i < active_; ++i) {
    if (ring_[i] != s) continue;
    ring_[i] = ring_[--active_];  // order changes; fairness holds over a round
    if (cursor_ > i) --cursor_;
    break;
  }
}

void RcccReceiver::on_request(uint32_t sender, uint64_t bytes, Time now) noexcept {
  if (sender >= c_.max_senders) return;
  if (sender >= senders_.size()) {
    reserve(std::max<uint32_t>(sender + 1, static_cast<uint32_t>(senders_.size()) * 2));
  }
  Sender& x = senders_[sender];
  x.want = std::min<uint64_t>(bytes, c_.max_credit_target);
  if (x.want > 0 && active_ == 0) next_grant_at_ = std::max(next_grant_at_, now);
  set_active(sender, x.want > 0);
}

void RcccReceiver::on_close(uint32_t sender) noexcept {
  if (sender >= senders_.size()) return;
  senders_[sender].want = 0;
  set_active(sender, false);
}

std::optional<RcccReceiver::Grant> RcccReceiver::next_grant(Time now) noexcept {
  if (active_ == 0 || now < next_grant_at_) return std::nullopt;
  if (cursor_ >= active_) cursor_ = 0;
  const uint32_t s = ring_[cursor_++];
  Sender& x = senders_[s];
  const auto bytes = static_cast<uint32_t>(std::min<uint64_t>(x.want, c_.quantum));
  x.want -= bytes;
  x.granted += bytes;
  if (x.want == 0) set_active(s, false);
  // The receiver's link carries what it grants: the next grant when these bytes have arrived
  // at line rate. An idle receiver does not bank credit for later.
  next_grant_at_ = std::max(next_grant_at_, now - static_cast<Time>(c_.quantum * ps_per_byte_)) +
                   static_cast<Time>(bytes * ps_per_byte_);
  return Grant{s, bytes};
}

}  // namespace uet::cc
