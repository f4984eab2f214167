#include "transport/wire/specdoc/markdown.h"

#include <cstddef>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "transport/wire/specdoc/text.h"

namespace uet::specdoc {

namespace {

// A marker line, parsed.
struct Marker {
  bool closing = false;
  BlockKind kind = BlockKind::kFields;
  bool covers = false;  // <!-- covers:FAMILY -->
  std::string id;
  std::vector<std::string> extra_columns;
};

std::optional<BlockKind> parse_kind(std::string_view s) {
  if (s == "fields") return BlockKind::kFields;
  if (s == "values") return BlockKind::kValues;
  if (s == "table") return BlockKind::kTable;
  return std::nullopt;
}

// Returns the marker on `line`, or nullopt if the line is not one of ours (other HTML
// comments are ordinary text).
std::optional<Marker> parse_marker(std::string_view line) {
  std::string_view s = strip(line);
  if (!consume_prefix(&s, "<!--") || !consume_suffix(&s, "-->")) return std::nullopt;
  s = strip(s);
  Marker m;
  if (consume_prefix(&s, "/")) {
    const std::optional<BlockKind> kind = parse_kind(strip(s));
    if (!kind) return std::nullopt;
    m.closing = true;
    m.kind = *kind;
    return m;
  }
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view kind_text = s.substr(0, colon);
  std::string_view rest = s.substr(colon + 1);
  if (kind_text == "covers") {
    m.covers = true;
    m.id = std::string(strip(rest));
    return m;
  }
  const std::optional<BlockKind> kind = parse_kind(kind_text);
  if (!kind) return std::nullopt;
  m.kind = *kind;
  std::vector<std::string_view> parts = split(rest, '|');
  m.id = std::string(strip(parts[0]));
  for (size_t i = 1; i < parts.size(); ++i) {
    m.extra_columns.emplace_back(strip(parts[i]));
  }
  return m;
}

bool is_fence(std::string_view line) { return strip(line).starts_with("```"); }

}  // namespace

std::string_view kind_name(BlockKind k) {
  switch (k) {
    case BlockKind::kFields:
      return "fields";
    case BlockKind::kValues:
      return "values";
    case BlockKind::kTable:
      return "table";
  }
  return "?";
}

std::string Block::marker() const {
  std::string s = cat("<!-- ", kind_name(kind), ":", id);
  for (const std::string& c : extra_columns) s += cat(" | ", c);
  s += cat(" -->");
  return s;
}

absl::StatusOr<Doc> parse_doc(std::string path, std::string_view text) {
  Doc doc;
  doc.path = std::move(path);
  for (std::string_view l : split(text, '\n')) doc.lines.emplace_back(l);
  if (!doc.lines.empty() && doc.lines.back().empty()) doc.lines.pop_back();
  for (std::string& l : doc.lines) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
  }

  std::string section;
  bool in_fence = false;
  std::optional<Block> open;
  for (size_t i = 0; i < doc.lines.size(); ++i) {
    const std::string& line = doc.lines[i];
    const std::string where = cat(doc.path, ":", i + 1, ": ");
    if (is_fence(line)) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence) continue;
    if (!open) {
      const std::string number = heading_number(line);
      if (!number.empty()) section = number;
    }
    const std::optional<Marker> m = parse_marker(line);
    if (!m) continue;
    if (m->covers) {
      if (m->id.empty())
        return absl::InvalidArgumentError(where + "<!-- covers: --> names no family");
      doc.covers.push_back(m->id);
      continue;
    }
    if (m->closing) {
      if (!open) {
        return absl::InvalidArgumentError(
            cat(where, "<!-- /", kind_name(m->kind), " --> closes no block"));
      }
      if (open->kind != m->kind) {
        return absl::InvalidArgumentError(cat(where, "<!-- /", kind_name(m->kind), " --> closes ",
                                              open->marker(), " opened at line ", open->begin + 1,
                                              "; expected <!-- /", kind_name(open->kind), " -->"));
      }
      open->end = i;
      doc.blocks.push_back(std::move(*open));
      open.reset();
      continue;
    }
    if (open) {
      return absl::InvalidArgumentError(cat(where, "marker opens a block inside ", open->marker(),
                                            " opened at line ", open->begin + 1));
    }
    if (m->id.empty()) {
      return absl::InvalidArgumentError(
          cat(where, "<!-- ", kind_name(m->kind), ": --> names no table"));
    }
    if (m->kind != BlockKind::kValues && !m->extra_columns.empty()) {
      return absl::InvalidArgumentError(
          cat(where, "only values blocks take extra columns ('|' after the id)"));
    }
    Block b;
    b.kind = m->kind;
    b.id = m->id;
    b.extra_columns = m->extra_columns;
    b.begin = i;
    b.section = section;
    open = std::move(b);
  }
  if (open) {
    return absl::InvalidArgumentError(
        cat(doc.path, ":", open->begin + 1, ": ", open->marker(), " is never closed"));
  }
  return doc;
}

std::string block_body(const Doc& doc, const Block& b) {
  std::string body;
  for (size_t i = b.begin + 1; i < b.end; ++i) body += cat(doc.lines[i], "\n");
  return body;
}

void replace_body(Doc& doc, size_t i, std::string_view body) {
  Block& b = doc.blocks[i];
  std::vector<std::string> fresh;
  for (std::string_view l : split(body, '\n')) fresh.emplace_back(l);
  if (!fresh.empty() && fresh.back().empty()) fresh.pop_back();
  const size_t old_count = b.end - b.begin - 1;
  auto first = doc.lines.begin() + static_cast<std::ptrdiff_t>(b.begin + 1);
  doc.lines.erase(first, first + static_cast<std::ptrdiff_t>(old_count));
  doc.lines.insert(doc.lines.begin() + static_cast<std::ptrdiff_t>(b.begin + 1), fresh.begin(),
                   fresh.end());
  const std::ptrdiff_t shift =
      static_cast<std::ptrdiff_t>(fresh.size()) - static_cast<std::ptrdiff_t>(old_count);
  b.end = static_cast<size_t>(static_cast<std::ptrdiff_t>(b.end) + shift);
  for (size_t j = i + 1; j < doc.blocks.size(); ++j) {
    doc.blocks[j].begin =
        static_cast<size_t>(static_cast<std::ptrdiff_t>(doc.blocks[j].begin) + shift);
    doc.blocks[j].end = static_cast<size_t>(static_cast<std::ptrdiff_t>(doc.blocks[j].end) + shift);
  }
}

std::string join_lines(const Doc& doc) {
  std::string out;
  for (const std::string& l : doc.lines) out += cat(l, "\n");
  return out;
}

std::vector<std::string> split_row(std::string_view line) {
  std::string_view s = strip(line);
  consume_prefix(&s, "|");
  // A trailing pipe ends the row unless it is escaped.
  if (s.ends_with("|") && !s.ends_with("\\|")) s.remove_suffix(1);
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '|') {
      cell += "\\|";
      ++i;
    } else if (s[i] == '|') {
      cells.emplace_back(strip(cell));
      cell.clear();
    } else {
      cell += s[i];
    }
  }
  cells.emplace_back(strip(cell));
  return cells;
}

std::string escape_cell(std::string_view text) { return replace_all(text, "|", "\\|"); }

std::string heading_number(std::string_view line) {
  std::string_view s = line;
  if (!s.starts_with("#")) return "";
  while (consume_prefix(&s, "#")) {
  }
  if (!consume_prefix(&s, " ")) return "";
  s = strip(s);
  size_t n = 0;
  while (n < s.size() && (is_digit(s[n]) || s[n] == '.')) {
    ++n;
  }
  std::string_view number = s.substr(0, n);
  consume_suffix(&number, ".");
  return is_section_number(number) ? std::string(number) : "";
}

bool inside_section(std::string_view actual, std::string_view expected) {
  return actual == expected || (actual.starts_with(expected) && actual.size() > expected.size() &&
                                actual[expected.size()] == '.');
}

bool is_section_number(std::string_view s) {
  if (s.empty()) return false;
  bool digit_before = false;
  for (const char c : s) {
    if (is_digit(c)) {
      digit_before = true;
    } else if (c == '.' && digit_before) {
      digit_before = false;
    } else {
      return false;
    }
  }
  return digit_before;
}

}  // namespace uet::specdoc
