#include "sim/htsim_text.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace uet::sim {

absl::StatusOr<std::string> read_htsim_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

HtsimLines::HtsimLines(std::string_view text, std::string_view where, Comments comments)
    : rest_(text.data(), text.size()), where_(where), comments_(comments) {}

bool HtsimLines::next() {
  while (!at_end_) {
    const size_t eol = rest_.find('\n');
    absl::string_view raw = rest_.substr(0, eol);
    if (eol == absl::string_view::npos) {
      at_end_ = true;
    } else {
      rest_.remove_prefix(eol + 1);
    }
    ++line_;
    if (comments_ == Comments::kToEndOfLine) raw = raw.substr(0, raw.find('#'));
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> tokens = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    tokens_ = std::move(tokens);
    return true;
  }
  return false;
}

absl::Status HtsimLines::error_at(size_t line, std::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(where_, ":", line, ": ", std::string(what)));
}

}  // namespace uet::sim
