// Simulated and real time as the protocol engines see it: an integer passed in by the host,
// never read from a clock (DESIGN.md, "The one rule"). The base of cc/, pathsel/ and the
// engines, so it includes nothing of the project.
#pragma once

#include <cstdint>
#include <limits>

namespace uet {

// Picoseconds since the start of the run. The simulator counts in picoseconds so that
// serialization at any line rate is exact; real hosts convert their clock.
using Time = int64_t;
inline constexpr Time kPicosecond = 1;
inline constexpr Time kNanosecond = 1'000;
inline constexpr Time kMicrosecond = 1'000'000;
inline constexpr Time kMillisecond = 1'000'000'000;
inline constexpr Time kSecond = 1'000'000'000'000;
inline constexpr Time kNever = std::numeric_limits<Time>::max();

}  // namespace uet
