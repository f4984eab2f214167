// uet-spec-doc: keeps the tables of spec/uet.md and spec/rocev2.md expanded from spec/*.def.
//
//   uet-spec-doc --update FILE...   rewrites every marked block (markdown.h) in place
//   uet-spec-doc --check FILE...    exits 1, naming each stale block, if any block differs
//   uet-spec-doc --list             prints the ids a marker may name
//
// Both modes also check that each block sits in the section its table names (the "section"
// column of a header row, the § of a value table's title), that a file declaring
// <!-- covers:FAMILY --> renders every header and value table of that .def file, and that the
// hand-written columns of values blocks are filled in. The CTest test spec_docs_in_sync runs
// --check on both docs, so a table edit that is not carried into the docs fails the build.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/wire/registry.h"
#include "transport/wire/specdoc/markdown.h"
#include "transport/wire/specdoc/tables.h"
#include "transport/wire/specdoc/text.h"

namespace uet::specdoc {
namespace {

enum class Mode { kCheck, kUpdate };

absl::StatusOr<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(cat(path, ": cannot open for reading"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(cat(path, ": read failed"));
  return text.str();
}

// Writes next to the file, then renames over it, so a failed write leaves the old file.
absl::Status write_file(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".uet-spec-doc.tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(cat(tmp, ": cannot open for writing"));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) return absl::DataLossError(cat(tmp, ": write failed"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::PermissionDeniedError(cat(path, ": cannot replace with ", tmp));
  }
  return absl::OkStatus();
}

// True if some block of `doc` renders value table `id` in full.
bool renders_value_table(const Doc& doc, std::string_view id) {
  for (const Block& b : doc.blocks) {
    if (b.kind == BlockKind::kValues && b.id == id) return true;
    if (b.kind == BlockKind::kTable) {
      const DerivedTable* t = find_derived_table(b.id);
      if (t != nullptr && t->covers == id) return true;
    }
  }
  return false;
}

bool renders_header(const Doc& doc, std::string_view id) {
  for (const Block& b : doc.blocks) {
    if (b.kind == BlockKind::kFields && b.id == id) return true;
  }
  return false;
}

// Checks (and in kUpdate mode rewrites) one file; appends every problem to `problems`.
absl::Status process(const std::string& path, Mode mode, std::vector<std::string>* problems) {
  absl::StatusOr<std::string> text = read_file(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<Doc> parsed = parse_doc(path, *text);
  if (!parsed.ok()) return parsed.status();
  Doc& doc = *parsed;
  const size_t problems_before = problems->size();

  size_t stale = 0;
  for (size_t i = 0; i < doc.blocks.size(); ++i) {
    const Block b = doc.blocks[i];
    const std::string where = cat(path, ":", b.begin + 1, ": ", b.marker());
    absl::StatusOr<Rendered> r = render_block(b, block_body(doc, b));
    if (!r.ok()) {
      problems->push_back(cat(where, ": ", std::string(r.status().message())));
      continue;
    }
    const std::string want = required_section(b);
    if (!want.empty() && !inside_section(b.section, want)) {
      problems->push_back(cat(where, ": sits in section ", b.section.empty() ? "(none)" : b.section,
                              " but its table belongs to §", want,
                              "; move the block or fix the section in the table"));
    }
    for (const std::string& cell : r->empty_cells) {
      problems->push_back(cat(where, ": hand-written cell is empty (", cell, ")"));
    }
    if (r->body == block_body(doc, b)) continue;
    ++stale;
    if (mode == Mode::kUpdate) {
      replace_body(doc, i, r->body);
    } else {
      problems->push_back(cat(where, ": stale; run `uet-spec-doc --update ", path, "`"));
    }
  }

  for (const std::string& family : doc.covers) {
    if (!is_family(family)) {
      problems->push_back(
          cat(path, ": <!-- covers:", family, " --> names no family (uet, rocev2 or net)"));
      continue;
    }
    for (const wire::HeaderDesc* h : family_headers(family)) {
      if (!renders_header(doc, h->id)) {
        problems->push_back(cat(path, ": covers ", family, " but has no <!-- fields:", h->id,
                                " --> block (section ", h->section, ")"));
      }
    }
    for (const ValueTableInfo& t : value_tables()) {
      if (t.family != family || renders_value_table(doc, t.id)) continue;
      problems->push_back(cat(path, ": covers ", family, " but has no <!-- values:", t.id,
                              " --> block (", t.title, ")"));
    }
  }

  if (mode == Mode::kUpdate) {
    if (stale > 0) {
      const absl::Status s = write_file(path, join_lines(doc));
      if (!s.ok()) return s;
    }
    std::printf("%s: %zu of %zu blocks rewritten\n", path.c_str(), stale, doc.blocks.size());
  } else if (problems->size() == problems_before) {
    std::printf("%s: %zu blocks in sync\n", path.c_str(), doc.blocks.size());
  }
  return absl::OkStatus();
}

void list_ids() {
  std::printf("fields:<header>\n");
  for (const wire::HeaderDesc* h : wire::all_headers()) {
    std::printf("  %-22s %s (%s)\n", std::string(h->id).c_str(), std::string(h->title).c_str(),
                std::string(h->section).c_str());
  }
  std::printf("values:<table>\n");
  for (const ValueTableInfo& t : value_tables()) {
    std::printf("  %-22s %s\n", std::string(t.id).c_str(), std::string(t.title).c_str());
  }
  std::printf("table:<derived>\n");
  for (const DerivedTable& t : derived_tables()) {
    std::printf("  %-22s %s (section %s)\n", std::string(t.id).c_str(), std::string(t.what).c_str(),
                std::string(t.section).c_str());
  }
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s --check FILE...   exit 1 if a generated block is stale\n"
               "       %s --update FILE...  rewrite the generated blocks in place\n"
               "       %s --list            the ids a block marker may name\n",
               argv0, argv0, argv0);
  return 2;
}

int run(int argc, char** argv) {
  if (argc < 2) return usage(argv[0]);
  const std::string_view flag = argv[1];
  if (flag == "--list" && argc == 2) {
    list_ids();
    return 0;
  }
  Mode mode;
  if (flag == "--check") {
    mode = Mode::kCheck;
  } else if (flag == "--update") {
    mode = Mode::kUpdate;
  } else {
    std::fprintf(stderr, "%s: unknown flag '%s'; expected --check, --update or --list\n", argv[0],
                 argv[1]);
    return usage(argv[0]);
  }
  if (argc < 3) {
    std::fprintf(stderr, "%s: %s needs at least one FILE\n", argv[0], argv[1]);
    return usage(argv[0]);
  }

  std::vector<std::string> problems;
  for (int i = 2; i < argc; ++i) {
    const absl::Status s = process(argv[i], mode, &problems);
    if (!s.ok()) problems.emplace_back(s.message());
  }
  for (const std::string& p : problems) std::fprintf(stderr, "%s\n", p.c_str());
  return problems.empty() ? 0 : 1;
}

}  // namespace
}  // namespace uet::specdoc

int main(int argc, char** argv) { return uet::specdoc::run(argc, argv); }
