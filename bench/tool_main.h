// What the benchmark tools' main() paths share: a refusal or failure is one line on stderr,
// "TOOL: WHY", and the tool exits with the caller's code (2: refused, 1: a run or output failed).
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace uet::bench {

// Writes "TOOL: WHY" and a newline to stderr; returns rc, the exit code to give back.
int tool_error(const char* tool, absl::string_view why, int rc);
// The same with the status's message.
int tool_error(const char* tool, const absl::Status& s, int rc);

}  // namespace uet::bench
