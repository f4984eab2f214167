// The regions of a markdown file that uet-spec-doc owns, and the headings around them.
//
// A block sits between an opening and a closing marker, each alone on its line:
//
//   <!-- fields:pds_ack -->                 field table of header pds_ack (spec/*.def)
//   <!-- /fields -->
//   <!-- values:nack_code -->               value table nack_code
//   <!-- values:nack_code | reaction -->    ... plus hand-written columns kept across updates
//   <!-- /values -->
//   <!-- table:roce_opcodes -->             a table derived from several rows (tables.h)
//   <!-- /table -->
//
// and a file may declare, anywhere, that it documents every header and value table of one
// .def file:  <!-- covers:uet -->
//
// Everything between the markers is generated; everything outside is left alone. Headings
// ("### 3.8 ACK_CC") give each block the section number it sits in, which is checked against
// the section its table names. Markers inside ``` fences are text, not markers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace uet::specdoc {

enum class BlockKind { kFields, kValues, kTable };

std::string_view kind_name(BlockKind k);  // "fields", "values", "table"

struct Block {
  BlockKind kind = BlockKind::kFields;
  std::string id;
  std::vector<std::string> extra_columns;  // values blocks: hand-written columns after ours
  size_t begin = 0;                        // line index of the opening marker
  size_t end = 0;                          // line index of the closing marker
  std::string section;                     // number of the nearest heading above, or ""

  // The opening marker as written, for messages: "<!-- fields:pds_ack -->".
  std::string marker() const;
};

struct Doc {
  std::string path;
  std::vector<std::string> lines;  // without line terminators
  std::vector<Block> blocks;       // in file order
  std::vector<std::string> covers;
};

// Splits `text` into lines and finds its blocks. Fails, naming the file and line, on a marker
// opened inside another block, a closing marker of the wrong kind or without an opening one,
// a block left open at the end of the file, or a marker with an empty id.
absl::StatusOr<Doc> parse_doc(std::string path, std::string_view text);

// The lines strictly between the markers of `b`, joined with '\n' (each line ends with '\n').
std::string block_body(const Doc& doc, const Block& b);

// Replaces the body of `doc.blocks[i]` by `body` (lines ending with '\n') and shifts the
// line indexes of the blocks after it.
void replace_body(Doc& doc, size_t i, std::string_view body);

// The whole file, each line ending with '\n'.
std::string join_lines(const Doc& doc);

// The cells of a markdown table row ("| a | b \| c |"), trimmed; escaped pipes stay escaped.
std::vector<std::string> split_row(std::string_view line);

// Escapes text for a table cell: '|' becomes "\|".
std::string escape_cell(std::string_view text);

// The section number a heading line declares ("## 3. PDS" -> "3", "### 3.8.1 NSCC" ->
// "3.8.1"), or "" if the line is not a heading or carries no number.
std::string heading_number(std::string_view line);

// True if a block in section `actual` may hold a table of section `expected`: the same
// section or one of its subsections ("3.8.1" is inside "3.8").
bool inside_section(std::string_view actual, std::string_view expected);

// True for "3", "3.8", "4.5.1"; false for "RFC 768" or "".
bool is_section_number(std::string_view s);

}  // namespace uet::specdoc
