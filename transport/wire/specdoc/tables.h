// Markdown renderings of the spec/ tables, for the blocks of spec/uet.md and spec/rocev2.md.
//
// Everything here reads the tables through the uet_wire library: the reflection rows of
// transport/wire/registry.h, the value tables, the helper tables of the .def files (which
// header each PDS type uses, the RoCEv2 opcode layouts, the AETH credit and RNR timer codes)
// and, for the table of decoder rule 4, the decoder itself. Nothing is typed twice.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "transport/wire/field.h"
#include "transport/wire/specdoc/markdown.h"

namespace uet::specdoc {

// A value table of spec/uet.def or spec/rocev2.def.
struct ValueTableInfo {
  std::string_view id;
  std::string_view title;       // "NACK code (§3.10)"
  std::string_view family;      // "uet" or "rocev2"
  std::string section() const;  // the § number in the title, or ""
};

std::span<const ValueTableInfo> value_tables();
const ValueTableInfo* find_value_table(std::string_view id);

// The families a doc may cover: "uet", "rocev2", "net" (one per .def file).
bool is_family(std::string_view family);
std::span<const wire::HeaderDesc* const> family_headers(std::string_view family);

// A table rendered from several spec rows at once (<!-- table:ID -->).
struct DerivedTable {
  std::string_view id;
  std::string_view covers;   // the value table it lists in full, or ""
  std::string_view section;  // the section it belongs to
  std::string_view what;     // one line, for --list
};
std::span<const DerivedTable> derived_tables();
const DerivedTable* find_derived_table(std::string_view id);

// The generated body of a block: the lines between its markers, each ending with '\n'.
struct Rendered {
  std::string body;
  // Hand-written cells of a values block that are empty ("0x1B: sender reaction").
  std::vector<std::string> empty_cells;
};

// Renders block `b`. `old_body` is its current body: a values block with extra columns keeps
// their cells from it, matched by the value in the first column. Fails on an unknown id.
absl::StatusOr<Rendered> render_block(const Block& b, std::string_view old_body);

// The section a block must sit in, or "" when its table names none (net.def headers).
std::string required_section(const Block& b);

}  // namespace uet::specdoc
