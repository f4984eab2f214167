// Lookup of every header and value table of the spec tables by id, for generic tools and
// tests (golden vectors name fields as "header_id.field").
#pragma once

#include <span>
#include <string_view>

#include "transport/wire/field.h"

namespace uet::wire {

// All headers of spec/net.def, spec/uet.def and spec/rocev2.def.
std::span<const HeaderDesc* const> all_headers() noexcept;
const HeaderDesc* find_header(std::string_view id) noexcept;

// The value table with this id ("pds_type", "roce_opcode", ...), empty if unknown.
std::span<const ValueDesc> find_values(std::string_view table_id) noexcept;
// The name of `value` in table `table_id`, or an empty view.
std::string_view value_name(std::string_view table_id, uint64_t value) noexcept;

}  // namespace uet::wire
