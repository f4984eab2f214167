#include "transport/wire/specdoc/tables.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "transport/wire/decode.h"
#include "transport/wire/net_headers.h"
#include "transport/wire/registry.h"
#include "transport/wire/roce_headers.h"
#include "transport/wire/specdoc/text.h"
#include "transport/wire/uet_headers.h"

namespace uet::specdoc {

namespace {

using wire::FieldDesc;
using wire::HeaderDesc;
using wire::Kind;
using wire::ValueDesc;

#define SPECDOC_UET_TABLE(id, Name, title) ValueTableInfo{#id, title, "uet"},
#define SPECDOC_ROCE_TABLE(id, Name, title) ValueTableInfo{#id, title, "rocev2"},
const ValueTableInfo kValueTables[] = {UET_VALUE_TABLES(SPECDOC_UET_TABLE)
                                           ROCEV2_VALUE_TABLES(SPECDOC_ROCE_TABLE)};
#undef SPECDOC_UET_TABLE
#undef SPECDOC_ROCE_TABLE

constexpr DerivedTable kDerivedTables[] = {
    {"uet_headers", "", "1", "every header of spec/uet.def: size, section, filter prefix"},
    {"rocev2_headers", "", "1", "every header of spec/rocev2.def: size, section, filter prefix"},
    {"pds_types", "pds_type", "3.2", "PDS type values and the header each one uses"},
    {"next_headers", "next_hdr", "3.13", "next-header values and the SES header each selects"},
    {"ses_extensions", "", "4.5", "SES opcodes followed by an extension header"},
    {"next_header_rule", "", "6", "decoder rule 4, probed from the decoder itself"},
    {"aeth_credits", "", "3.2", "AETH credit count codes"},
    {"rnr_timers", "", "3.2", "RNR NAK timer codes"},
    {"roce_opcodes", "roce_opcode", "4", "BTH opcodes, their headers and payload"},
};

// Which header each PDS type and next-header value selects (spec/uet.def helper tables).
struct ValueHeader {
  uint32_t value;
  std::string_view header;
};
#define SPECDOC_PDS_TYPE_HEADER(k, id, Name) \
  ValueHeader{static_cast<uint32_t>(wire::PdsType::k), #id},
constexpr ValueHeader kPdsTypeHeaders[] = {UET_PDS_TYPE_HEADERS(SPECDOC_PDS_TYPE_HEADER)};
#undef SPECDOC_PDS_TYPE_HEADER
#define SPECDOC_NEXT_HDR_HEADER(k, id, Name) \
  ValueHeader{static_cast<uint32_t>(wire::NextHeader::k), #id},
constexpr ValueHeader kNextHeaderHeaders[] = {UET_NEXT_HDR_HEADERS(SPECDOC_NEXT_HDR_HEADER)};
#undef SPECDOC_NEXT_HDR_HEADER

struct OpcodeExtension {
  uint32_t opcode;
  std::string_view extension;  // "ATOMIC" or "RENDEZVOUS"
};
#define SPECDOC_SES_EXT(k, ext) OpcodeExtension{static_cast<uint32_t>(wire::SesOpcode::k), #ext},
constexpr OpcodeExtension kSesExtensions[] = {UET_SES_OPCODE_EXTENSIONS(SPECDOC_SES_EXT)};
#undef SPECDOC_SES_EXT

// RoCEv2 extended headers by ROCEV2_X_* bit; the decoder takes them in ascending bit order.
struct ExtensionBit {
  uint8_t bit;
  std::string_view header;
};
constexpr ExtensionBit kRoceExtensions[] = {
    {ROCEV2_X_DETH, "deth"},
    {ROCEV2_X_RETH, "reth"},
    {ROCEV2_X_ATOMIC, "atomic_eth"},
    {ROCEV2_X_AETH, "aeth"},
    {ROCEV2_X_ATOMIC_ACK, "atomic_ack_eth"},
    {ROCEV2_X_IMM, "immdt"},
    {ROCEV2_X_IETH, "ieth"},
    {ROCEV2_X_CNP, "cnp"},
};

struct CodeValue {
  uint32_t code;
  uint32_t value;
};
#define SPECDOC_CODE_VALUE(c, v) CodeValue{c, v},
constexpr CodeValue kAethCredits[] = {ROCEV2_AETH_CREDITS(SPECDOC_CODE_VALUE)};
constexpr CodeValue kRnrTimers[] = {ROCEV2_RNR_TIMER_US(SPECDOC_CODE_VALUE)};
#undef SPECDOC_CODE_VALUE

// ------------------------------------------------------------------ cells

std::string_view kind_cell(Kind k) {
  switch (k) {
    case Kind::UDEC:
      return "UDEC";
    case Kind::UHEX:
      return "UHEX";
    case Kind::SDEC:
      return "SDEC";
    case Kind::FLAG:
      return "FLAG";
    case Kind::RSVD:
      return "RSVD";
    case Kind::BYTES:
      return "BYTES";
  }
  return "?";
}

std::string section_ref(std::string_view section) {
  return is_section_number(section) ? cat("§", section) : std::string(section);
}

std::string bits_cell(const FieldDesc& f) {
  if (f.kind == Kind::BYTES || f.mask == wire::width_mask(f.width)) return "all";
  return hex(f.mask, static_cast<int>(f.width) * 2);
}

int hex_digits(std::span<const ValueDesc> values) {
  uint32_t max = 0;
  for (const ValueDesc& v : values) max = std::max(max, v.value);
  int digits = 2;
  while (digits < 8 && (max >> (4 * digits)) != 0) ++digits;
  return digits;
}

std::string row(const std::vector<std::string>& cells) {
  return cat("| ", join(cells, " | "), " |\n");
}

std::string separator(std::string_view aligns) {
  std::string s = "|";
  for (const char a : aligns) s += a == 'r' ? "---:|" : "---|";
  return s + "\n";
}

std::string header_ref(const HeaderDesc& h) {
  return cat("`", h.id, "` (", h.size, " bytes, ", section_ref(h.section), ")");
}

absl::StatusOr<const HeaderDesc*> header_or_error(std::string_view id) {
  const HeaderDesc* h = wire::find_header(id);
  if (h == nullptr) {
    return absl::InternalError(
        cat("spec table names header '", id, "', which transport/wire/registry.h does not know"));
  }
  return h;
}

std::string value_name(std::string_view table, uint32_t v) {
  const std::string_view n = wire::value_name(table, v);
  return n.empty() ? "?" : cat("`", n, "`");
}

// ---------------------------------------------------------- field tables

std::string render_fields(const HeaderDesc& h) {
  std::string out = cat("\nHeader `", h.id, "` (", escape_cell(h.title), "): ", h.size, " bytes, ",
                        section_ref(h.section), ", display-filter prefix `", h.prefix, "`.\n\n");
  out += row({"field", "byte offset", "width", "bits", "kind", "values", "meaning"});
  out += separator("lrrllll");
  for (const FieldDesc& f : h.fields) {
    out += row({cat("`", f.name, "`"), cat(f.offset), cat(f.width), bits_cell(f),
                std::string(kind_cell(f.kind)), f.vals == "none" ? "—" : cat("`", f.vals, "`"),
                escape_cell(f.title)});
  }
  return out + "\n";
}

// ---------------------------------------------------------- value tables

Rendered render_values(const ValueTableInfo& t, const std::vector<std::string>& extras,
                       std::string_view old_body) {
  // Hand-written cells of the current body, by the text of the first cell ("0x01").
  std::map<std::string, std::vector<std::string>> kept;
  size_t table_row = 0;
  for (std::string_view line : split(old_body, '\n')) {
    if (!line.starts_with("|")) continue;
    if (table_row++ < 2) continue;  // column names and alignment
    std::vector<std::string> cells = split_row(line);
    if (cells.size() <= 3) continue;
    kept[cells[0]] = std::vector<std::string>(cells.begin() + 3, cells.end());
  }

  const std::span<const ValueDesc> values = wire::find_values(t.id);
  const int digits = hex_digits(values);
  Rendered r;
  r.body = cat("\nValue table `", t.id, "`: ", escape_cell(t.title), ", ", values.size(),
               " values.\n\n");
  std::vector<std::string> names = {"value", "name", "meaning"};
  names.insert(names.end(), extras.begin(), extras.end());
  r.body += row(names);
  r.body += separator(std::string("rll") + std::string(extras.size(), 'l'));
  for (const ValueDesc& v : values) {
    const std::string key = hex(v.value, digits);
    std::vector<std::string> cells = {key, cat("`", v.name, "`"), escape_cell(v.meaning)};
    const auto it = kept.find(key);
    for (size_t i = 0; i < extras.size(); ++i) {
      std::string cell = (it != kept.end() && i < it->second.size()) ? it->second[i] : "";
      if (cell.empty()) r.empty_cells.push_back(cat(key, ": ", extras[i]));
      cells.push_back(std::move(cell));
    }
    r.body += row(cells);
  }
  r.body += "\n";
  return r;
}

// -------------------------------------------------------- derived tables

absl::StatusOr<std::string> render_header_index(std::string_view family) {
  std::string out = cat("\nEvery header of `spec/", family, ".def`.\n\n");
  out += row({"header", "title", "bytes", "section", "filter prefix"});
  out += separator("llrll");
  for (const HeaderDesc* h : family_headers(family)) {
    out += row({cat("`", h->id, "`"), escape_cell(h->title), cat(h->size), section_ref(h->section),
                cat("`", h->prefix, "`")});
  }
  return out + "\n";
}

// A value table with one more column: the header each value selects.
absl::StatusOr<std::string> render_value_headers(std::string_view table,
                                                 std::span<const ValueHeader> map) {
  const std::span<const ValueDesc> values = wire::find_values(table);
  const int digits = hex_digits(values);
  std::string out = cat("\nValue table `", table, "` (", values.size(),
                        " values) and the header each value selects.\n\n");
  out += row({"value", "name", "meaning", "header", "bytes", "section"});
  out += separator("rlllrl");
  for (const ValueDesc& v : values) {
    std::vector<std::string> cells = {hex(v.value, digits), cat("`", v.name, "`"),
                                      escape_cell(v.meaning)};
    const HeaderDesc* h = nullptr;
    for (const ValueHeader& m : map) {
      if (m.value != v.value) continue;
      absl::StatusOr<const HeaderDesc*> found = header_or_error(m.header);
      if (!found.ok()) return found.status();
      h = *found;
    }
    if (h == nullptr) {
      cells.insert(cells.end(), {"—", "—", "—"});
    } else {
      cells.insert(cells.end(), {cat("`", h->id, "`"), cat(h->size), section_ref(h->section)});
    }
    out += row(cells);
  }
  return out + "\n";
}

absl::StatusOr<std::string> render_ses_extensions() {
  absl::StatusOr<const HeaderDesc*> atomic = header_or_error("ses_atomic");
  absl::StatusOr<const HeaderDesc*> cas = header_or_error("ses_cas");
  absl::StatusOr<const HeaderDesc*> rdv = header_or_error("ses_rendezvous");
  for (const auto* s : {&atomic, &cas, &rdv}) {
    if (!s->ok()) return s->status();
  }
  std::string out = "\nSES request opcodes followed by an extension header (all others: none).\n\n";
  out += row({"opcode", "name", "extension header"});
  out += separator("rll");
  std::vector<OpcodeExtension> sorted(std::begin(kSesExtensions), std::end(kSesExtensions));
  std::sort(sorted.begin(), sorted.end(),
            [](const OpcodeExtension& a, const OpcodeExtension& b) { return a.opcode < b.opcode; });
  for (const OpcodeExtension& e : sorted) {
    std::string ext;
    if (e.extension == "ATOMIC") {
      ext = cat(header_ref(**atomic), "; ", header_ref(**cas), " when its atomic opcode is ",
                hex(UET_ATOMIC_CAS_FIRST, 2), "–", hex(UET_ATOMIC_CAS_LAST, 2));
    } else if (e.extension == "RENDEZVOUS") {
      ext = header_ref(**rdv);
    } else {
      return absl::InternalError(cat("UET_SES_OPCODE_EXTENSIONS names extension '", e.extension,
                                     "', unknown to uet-spec-doc"));
    }
    out += row({hex(e.opcode, 2), value_name("ses_opcode", e.opcode), ext});
  }
  return out + "\n";
}

// Rule 4 of spec/uet.md §6, read off the decoder: a PDS header of each type with each
// next-header value and zeros elsewhere; the decoder answers kBadNextHeader or goes on.
absl::StatusOr<std::string> render_next_header_rule() {
  const std::span<const ValueDesc> nh_values = wire::find_values("next_hdr");
  std::vector<std::string> names = {"PDS type", "name"};
  for (const ValueDesc& v : nh_values) names.push_back(cat(v.value, " `", v.name, "`"));
  const uint32_t first_unnamed = static_cast<uint32_t>(nh_values.size());
  names.push_back(cat(first_unnamed, "–15"));

  std::string out =
      "\nWhich next-header value each PDS type may carry (yes: the decoder goes on to the SES "
      "header; —: `BadNextHeader`).\n\n";
  out += row(names);
  out += separator(std::string("rl") + std::string(nh_values.size() + 1, 'l'));
  for (const ValueHeader& t : kPdsTypeHeaders) {
    if (t.header == "pds_ctrl") continue;  // the slot holds the control type (rule 5)
    auto probe = [&](uint32_t nh) {
      std::array<uint8_t, 256> buf{};
      auto* p = wire::as<wire::PdsPrologue>(buf.data());
      p->set_type(static_cast<wire::PdsType>(t.value));
      p->set_next_hdr(static_cast<wire::NextHeader>(nh));
      wire::Decoded d;
      return wire::decode_uet(std::span<const uint8_t>(buf.data(), buf.size()), &d);
    };
    const wire::WireError bare = probe(0);
    if (bare != wire::WireError::kOk) {
      return absl::InternalError(cat("decoder refuses a bare PDS header of type ", t.value,
                                     " with next header 0: ", wire::name(bare)));
    }
    std::vector<std::string> cells = {cat(t.value), value_name("pds_type", t.value)};
    for (const ValueDesc& v : nh_values) {
      cells.push_back(probe(v.value) == wire::WireError::kBadNextHeader ? "—" : "yes");
    }
    int allowed = 0;
    for (uint32_t nh = first_unnamed; nh < 16; ++nh) {
      if (probe(nh) != wire::WireError::kBadNextHeader) ++allowed;
    }
    cells.push_back(
        allowed == 0 ? "—" : (allowed == static_cast<int>(16 - first_unnamed) ? "yes" : "some"));
    out += row(cells);
  }
  return out + "\n";
}

std::string_view roce_service(uint32_t opcode) {
  switch (opcode >> 5) {
    case 0:
      return "RC";
    case 1:
      return "UC";
    case 2:
      return "RD";
    case 3:
      return "UD";
    case 4:
      return "CNP";
    case 5:
      return "XRC";
    default:
      return "vendor";
  }
}

absl::StatusOr<std::string> render_roce_opcodes() {
  const std::span<const ValueDesc> values = wire::find_values("roce_opcode");
  std::string out =
      cat("\nValue table `roce_opcode` (", values.size(),
          " values): the extended headers that follow the BTH, in wire order, and whether a "
          "payload may follow them.\n\n");
  out += row({"opcode", "name", "service", "headers after the BTH", "payload"});
  out += separator("rllll");
  for (const ValueDesc& v : values) {
    const wire::RoceLayout layout = wire::roce_layout(static_cast<uint8_t>(v.value));
    if (!layout.known) {
      return absl::InternalError(
          cat("opcode ", hex(v.value, 2), " (", v.name, ") has no row in ROCEV2_OPCODE_LAYOUT"));
    }
    std::vector<std::string> headers;
    uint8_t seen = 0;
    for (const ExtensionBit& e : kRoceExtensions) {
      if ((layout.ext & e.bit) == 0) continue;
      absl::StatusOr<const HeaderDesc*> h = header_or_error(e.header);
      if (!h.ok()) return h.status();
      headers.push_back(cat("`", (*h)->id, "` (", (*h)->size, ")"));
      seen |= e.bit;
    }
    if (seen != layout.ext) {
      return absl::InternalError(
          cat("opcode ", hex(v.value, 2), " uses ROCEV2_X_* bits unknown to uet-spec-doc"));
    }
    out += row({hex(v.value, 2), cat("`", v.name, "`"), std::string(roce_service(v.value)),
                headers.empty() ? "—" : join(headers, ", "), layout.payload ? "yes" : "no"});
  }
  return out + "\n";
}

// A code -> value list laid out four pairs to a row.
std::string render_code_pairs(std::string_view intro, std::string_view value_name,
                              const std::vector<std::pair<uint32_t, std::string>>& pairs) {
  constexpr size_t kPerRow = 4;
  std::string out = cat("\n", intro, "\n\n");
  std::vector<std::string> names;
  for (size_t i = 0; i < kPerRow; ++i) names.insert(names.end(), {"code", std::string(value_name)});
  out += row(names);
  std::string aligns;
  for (size_t i = 0; i < kPerRow; ++i) aligns += "rr";
  out += separator(aligns);
  const size_t rows = (pairs.size() + kPerRow - 1) / kPerRow;
  for (size_t r = 0; r < rows; ++r) {
    std::vector<std::string> cells;
    for (size_t c = 0; c < kPerRow; ++c) {
      const size_t i = c * rows + r;  // down the columns, so codes read in order
      if (i < pairs.size()) {
        cells.insert(cells.end(), {hex(pairs[i].first, 2), pairs[i].second});
      } else {
        cells.insert(cells.end(), {"", ""});
      }
    }
    out += row(cells);
  }
  return out + "\n";
}

std::string render_aeth_credits() {
  std::vector<std::pair<uint32_t, std::string>> pairs;
  for (const CodeValue& c : kAethCredits) pairs.emplace_back(c.code, cat(c.value));
  pairs.emplace_back(ROCEV2_AETH_CREDITS_UNLIMITED, "unlimited");
  return render_code_pairs(
      "AETH credit count code (syndrome type ACK) and the number of credits it stands for.",
      "credits", pairs);
}

std::string render_rnr_timers() {
  std::vector<std::pair<uint32_t, std::string>> pairs;
  for (const CodeValue& c : kRnrTimers) {
    std::string delay;
    if (c.value < 1000) {
      delay = cat(c.value, " µs");
    } else if (c.value % 1000 == 0) {
      delay = cat(c.value / 1000, " ms");
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f ms", c.value / 1000.0);
      delay = buf;
    }
    pairs.emplace_back(c.code, delay);
  }
  return render_code_pairs(
      "RNR NAK timer code (syndrome type RNR_NAK) and the delay before the requester retries.",
      "delay", pairs);
}

absl::StatusOr<std::string> render_derived(const DerivedTable& t) {
  const std::string_view id = t.id;
  if (id == "uet_headers") return render_header_index("uet");
  if (id == "rocev2_headers") return render_header_index("rocev2");
  if (id == "pds_types") return render_value_headers("pds_type", kPdsTypeHeaders);
  if (id == "next_headers") return render_value_headers("next_hdr", kNextHeaderHeaders);
  if (id == "ses_extensions") return render_ses_extensions();
  if (id == "next_header_rule") return render_next_header_rule();
  if (id == "aeth_credits") return render_aeth_credits();
  if (id == "rnr_timers") return render_rnr_timers();
  if (id == "roce_opcodes") return render_roce_opcodes();
  return absl::InternalError(cat("derived table '", id, "' has no renderer"));
}

}  // namespace

std::string ValueTableInfo::section() const {
  const size_t at = title.find("§");
  if (at == std::string_view::npos) return "";
  std::string_view s = title.substr(at + std::string_view("§").size());
  size_t n = 0;
  while (n < s.size() && ((s[n] >= '0' && s[n] <= '9') || s[n] == '.')) ++n;
  s = s.substr(0, n);
  if (!s.empty() && s.back() == '.') s.remove_suffix(1);
  return is_section_number(s) ? std::string(s) : "";
}

std::span<const ValueTableInfo> value_tables() { return kValueTables; }

const ValueTableInfo* find_value_table(std::string_view id) {
  for (const ValueTableInfo& t : kValueTables) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

bool is_family(std::string_view family) {
  return family == "uet" || family == "rocev2" || family == "net";
}

std::span<const HeaderDesc* const> family_headers(std::string_view family) {
  if (family == "uet") return wire::kUetHeaders;
  if (family == "rocev2") return wire::kRoceHeaders;
  if (family == "net") return wire::kNetHeaders;
  return {};
}

std::span<const DerivedTable> derived_tables() { return kDerivedTables; }

const DerivedTable* find_derived_table(std::string_view id) {
  for (const DerivedTable& t : kDerivedTables) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

absl::StatusOr<Rendered> render_block(const Block& b, std::string_view old_body) {
  switch (b.kind) {
    case BlockKind::kFields: {
      const HeaderDesc* h = wire::find_header(b.id);
      if (h == nullptr) {
        return absl::NotFoundError(
            cat("no header '", b.id, "' in spec/uet.def, spec/rocev2.def or spec/net.def"));
      }
      return Rendered{render_fields(*h), {}};
    }
    case BlockKind::kValues: {
      const ValueTableInfo* t = find_value_table(b.id);
      if (t == nullptr) {
        return absl::NotFoundError(
            cat("no value table '", b.id, "' in spec/uet.def or spec/rocev2.def"));
      }
      return render_values(*t, b.extra_columns, old_body);
    }
    case BlockKind::kTable: {
      const DerivedTable* t = find_derived_table(b.id);
      if (t == nullptr) {
        std::vector<std::string> ids;
        for (const DerivedTable& d : kDerivedTables) ids.emplace_back(d.id);
        return absl::NotFoundError(cat("no derived table '", b.id, "'; known: ", join(ids, ", ")));
      }
      absl::StatusOr<std::string> body = render_derived(*t);
      if (!body.ok()) return body.status();
      return Rendered{*std::move(body), {}};
    }
  }
  return absl::InternalError("unknown block kind");
}

std::string required_section(const Block& b) {
  switch (b.kind) {
    case BlockKind::kFields: {
      const HeaderDesc* h = wire::find_header(b.id);
      return h != nullptr && is_section_number(h->section) ? std::string(h->section) : "";
    }
    case BlockKind::kValues: {
      const ValueTableInfo* t = find_value_table(b.id);
      return t != nullptr ? t->section() : "";
    }
    case BlockKind::kTable: {
      const DerivedTable* t = find_derived_table(b.id);
      return t != nullptr ? std::string(t->section) : "";
    }
  }
  return "";
}

}  // namespace uet::specdoc
