// A status-message check without gmock, shared by the tests that assert on refusals: prints the
// message and the expected text when the first does not contain the second.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"

namespace uet::testing_util {

inline ::testing::AssertionResult Mentions(const absl::Status& s, const std::string& text) {
  if (std::string(s.message()).find(text) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "\"" << s.message() << "\" does not mention \"" << text
                                       << "\"";
}

}  // namespace uet::testing_util
