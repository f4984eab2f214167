// Control path of path selection: config validation and construction.
#include "pathsel/path_selector.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace uet::pathsel {

static_assert(std::variant_size_v<std::variant<FixedEv, Oblivious, Reps, Bitmap, Mixed>> ==
              kNumAlgorithms);

const char* to_string(Algorithm a) noexcept {
  switch (a) {
    case Algorithm::kFixed:
      return "fixed";
    case Algorithm::kOblivious:
      return "oblivious";
    case Algorithm::kReps:
      return "reps";
    case Algorithm::kBitmap:
      return "bitmap";
    case Algorithm::kMixed:
      return "mixed";
  }
  return "unknown";
}

namespace {

absl::Status out_of_range(const char* field, int64_t value, const std::string& range) {
  return absl::InvalidArgumentError(
      absl::StrCat("pathsel.", std::string(field), " must be in ", range, ", got ", value));
}

}  // namespace

absl::Status PathSelConfig::validate() const {
  if (static_cast<int>(algorithm) >= kNumAlgorithms) {
    return out_of_range("algorithm", static_cast<int>(algorithm),
                        "0..4 (fixed, oblivious, reps, bitmap, mixed)");
  }
  if (ev_count < 1 || ev_count > 16384) return out_of_range("ev_count", ev_count, "1..16384");
  if (reps_buffer < 1 || reps_buffer > Reps::kMaxBuffer) {
    return out_of_range("reps_buffer", reps_buffer, absl::StrCat("1..", Reps::kMaxBuffer));
  }
  if (reps_freeze < kMicrosecond || reps_freeze > kSecond) {
    return out_of_range("reps_freeze", reps_freeze, "1000000..1000000000000 ps (1 us..1 s)");
  }
  if (reps_explore_after_freeze > 65535) {
    return out_of_range("reps_explore_after_freeze", reps_explore_after_freeze, "0..65535");
  }
  if (bitmap_max_penalty < 1 || bitmap_max_penalty > 255) {
    return out_of_range("bitmap_max_penalty", bitmap_max_penalty, "1..255");
  }
  const std::string penalty_range =
      absl::StrCat("0..", bitmap_max_penalty, " (bitmap_max_penalty)");
  if (bitmap_ecn_penalty > bitmap_max_penalty) {
    return out_of_range("bitmap_ecn_penalty", bitmap_ecn_penalty, penalty_range);
  }
  if (bitmap_nack_penalty > bitmap_max_penalty) {
    return out_of_range("bitmap_nack_penalty", bitmap_nack_penalty, penalty_range);
  }
  return absl::OkStatus();
}

PathSelector::PathSelector(const PathSelConfig& c, uint64_t seed) {
  switch (c.algorithm) {
    case Algorithm::kFixed:
      impl_.emplace<FixedEv>(c, seed);
      break;
    case Algorithm::kOblivious:
      impl_.emplace<Oblivious>(c, seed);
      break;
    case Algorithm::kReps:
      impl_.emplace<Reps>(c, seed);
      break;
    case Algorithm::kBitmap:
      impl_.emplace<Bitmap>(c, seed);
      break;
    case Algorithm::kMixed:
      impl_.emplace<Mixed>(c, seed);
      break;
  }
}

absl::StatusOr<PathSelector> PathSelector::create(const PathSelConfig& c, uint64_t seed) {
  if (absl::Status s = c.validate(); !s.ok()) return s;
  return PathSelector(c, seed);
}

}  // namespace uet::pathsel
