// PathSelConfig::validate(): every field is checked, and the message names the field and its
// valid range.
#include "pathsel/config.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace uet::pathsel {
namespace {

TEST(PathSelConfig_Validate, DefaultsAreValid) { EXPECT_TRUE(PathSelConfig{}.validate().ok()); }

TEST(PathSelConfig_Validate, MessageNamesTheFieldTheRangeAndTheValue) {
  PathSelConfig c;
  c.ev_count = 0;
  const absl::Status s = c.validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message()), "pathsel.ev_count must be in 1..16384, got 0");
}

TEST(PathSelConfig_Validate, RejectsEachBadField) {
  struct Case {
    const char* field;
    std::function<void(PathSelConfig&)> spoil;
  };
  const Case cases[] = {
      {"pathsel.algorithm must be in 0..4",
       [](PathSelConfig& c) { c.algorithm = static_cast<Algorithm>(5); }},
      {"pathsel.ev_count must be in 1..16384, got 0", [](PathSelConfig& c) { c.ev_count = 0; }},
      {"pathsel.ev_count must be in 1..16384, got 16385",
       [](PathSelConfig& c) { c.ev_count = 16385; }},
      {"pathsel.reps_buffer must be in 1..32, got 0", [](PathSelConfig& c) { c.reps_buffer = 0; }},
      {"pathsel.reps_buffer must be in 1..32, got 33",
       [](PathSelConfig& c) { c.reps_buffer = 33; }},
      {"pathsel.reps_freeze must be in", [](PathSelConfig& c) { c.reps_freeze = 0; }},
      {"pathsel.reps_freeze must be in", [](PathSelConfig& c) { c.reps_freeze = 2 * kSecond; }},
      {"pathsel.reps_explore_after_freeze must be in 0..65535",
       [](PathSelConfig& c) { c.reps_explore_after_freeze = 65536; }},
      {"pathsel.bitmap_max_penalty must be in 1..255, got 0",
       [](PathSelConfig& c) { c.bitmap_max_penalty = 0; }},
      {"pathsel.bitmap_max_penalty must be in 1..255, got 256",
       [](PathSelConfig& c) { c.bitmap_max_penalty = 256; }},
      {"pathsel.bitmap_ecn_penalty must be in 0..15",
       [](PathSelConfig& c) { c.bitmap_ecn_penalty = 16; }},
      {"pathsel.bitmap_nack_penalty must be in 0..15",
       [](PathSelConfig& c) { c.bitmap_nack_penalty = 16; }},
  };
  for (const Case& k : cases) {
    PathSelConfig c;
    k.spoil(c);
    const absl::Status s = c.validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << k.field;
    EXPECT_EQ(std::string(s.message()).rfind(k.field, 0), 0u)
        << "want prefix '" << k.field << "', got '" << s.message() << "'";
  }
}

TEST(PathSelConfig_Validate, AcceptsTheEdgesOfEachRange) {
  PathSelConfig c;
  c.algorithm = Algorithm::kBitmap;
  c.ev_count = 16384;
  c.reps_buffer = 32;
  c.reps_freeze = kMicrosecond;
  c.reps_explore_after_freeze = 0;
  c.bitmap_max_penalty = 255;
  c.bitmap_ecn_penalty = 255;
  c.bitmap_nack_penalty = 0;
  EXPECT_TRUE(c.validate().ok()) << c.validate();
  c.ev_count = 1;
  c.reps_buffer = 1;
  c.reps_freeze = kSecond;
  EXPECT_TRUE(c.validate().ok()) << c.validate();
}

}  // namespace
}  // namespace uet::pathsel
