#include "transport/wire/registry.h"

#include <array>

#include "transport/wire/net_headers.h"
#include "transport/wire/roce_headers.h"
#include "transport/wire/uet_headers.h"

namespace uet::wire {

namespace {

constexpr auto kAllHeaders = [] {
  constexpr size_t n = std::size(kNetHeaders) + std::size(kUetHeaders) + std::size(kRoceHeaders);
  std::array<const HeaderDesc*, n> all{};
  size_t i = 0;
  for (const HeaderDesc* h : kNetHeaders) all[i++] = h;
  for (const HeaderDesc* h : kUetHeaders) all[i++] = h;
  for (const HeaderDesc* h : kRoceHeaders) all[i++] = h;
  return all;
}();

struct ValueTable {
  std::string_view id;
  std::span<const ValueDesc> values;
};

#define WIRE_VALUE_TABLE_ROW(id, Name, title) ValueTable{#id, k##Name##Values},
constexpr ValueTable kValueTables[] = {UET_VALUE_TABLES(WIRE_VALUE_TABLE_ROW)
                                           ROCEV2_VALUE_TABLES(WIRE_VALUE_TABLE_ROW)};
#undef WIRE_VALUE_TABLE_ROW

}  // namespace

std::span<const HeaderDesc* const> all_headers() noexcept { return kAllHeaders; }

const HeaderDesc* find_header(std::string_view id) noexcept {
  for (const HeaderDesc* h : kAllHeaders)
    if (h->id == id) return h;
  return nullptr;
}

std::span<const ValueDesc> find_values(std::string_view table_id) noexcept {
  for (const ValueTable& t : kValueTables)
    if (t.id == table_id) return t.values;
  return {};
}

std::string_view value_name(std::string_view table_id, uint64_t value) noexcept {
  for (const ValueDesc& v : find_values(table_id))
    if (v.value == value) return v.name;
  return {};
}

}  // namespace uet::wire
