// What the two htsim file readers (htsim_cm.cc, htsim_topo.cc) share: reading a file whole, and
// walking its lines as tokens, with errors that name the file and the line ("perm.cm:7: ...").
// Private to those readers and the graph reader (topology_graph.cc); the formats themselves are
// described in htsim_cm.h, htsim_topo.h and topology_graph.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uet::sim {

// The file's bytes, or NotFound "PATH: cannot open".
absl::StatusOr<std::string> read_htsim_file(const std::string& path);

// The lines of a text that hold something, split on spaces (runs of blanks are one separator;
// a tab inside a token stays in it). Lines are numbered from 1 and ended by '\n'; blanks at both
// ends of a line are not part of it.
class HtsimLines {
 public:
  enum class Comments : uint8_t {
    kWholeLine,    // a line whose first non-blank character is '#' (connection matrices)
    kToEndOfLine,  // from a '#' to the end of its line (topology files)
  };

  HtsimLines(std::string_view text, std::string_view where, Comments comments);

  // Moves to the next line with tokens; false after the last one.
  bool next();
  // The current line's tokens: at least one, none empty.
  const std::vector<absl::string_view>& tokens() const noexcept { return tokens_; }
  size_t line() const noexcept { return line_; }

  // InvalidArgument "WHERE:LINE: what", at the current line or at `line` (0: the whole file).
  absl::Status error(std::string_view what) const { return error_at(line_, what); }
  absl::Status error_at(size_t line, std::string_view what) const;

 private:
  absl::string_view rest_;  // Debian's Abseil has its own string_view: split and parse in it
  std::string where_;
  Comments comments_;
  bool at_end_ = false;
  size_t line_ = 0;
  std::vector<absl::string_view> tokens_;
};

}  // namespace uet::sim
