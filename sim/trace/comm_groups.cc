// Communicator groups: those PyTorch's process-group metadata records in a trace's files, and
// ASTRA-sim's comm-group JSON read and written (sim/trace/trace.h).
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "sim/trace/chakra.pb.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_internal.h"

namespace uet::sim {
namespace trace_internal {
namespace {

// A group's members from a JSON array of ranks: integers in [0, ranks), each once. An empty
// array is every rank where `empty_is_every_rank` (PyTorch's metadata), else refused.
absl::StatusOr<std::vector<uint32_t>> members_of(const google::protobuf::Value& value,
                                                 uint32_t ranks, bool empty_is_every_rank) {
  if (value.kind_case() != google::protobuf::Value::kListValue) {
    return absl::InvalidArgumentError("not an array of ranks");
  }
  std::vector<uint32_t> members;
  std::vector<bool> seen(ranks, false);
  for (const google::protobuf::Value& m : value.list_value().values()) {
    const double r = m.kind_case() == google::protobuf::Value::kNumberValue ? m.number_value() : -1;
    if (!(r >= 0 && r < ranks) || r != static_cast<double>(static_cast<uint32_t>(r))) {
      const std::string shown = m.kind_case() == google::protobuf::Value::kNumberValue
                                    ? absl::StrCat(m.number_value())
                                    : std::string("that is not a number");
      return absl::InvalidArgumentError(
          absl::StrCat("member ", shown, " is not a rank in [0, ", ranks - 1, "]"));
    }
    const auto rank = static_cast<uint32_t>(r);
    if (seen[rank]) return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " listed twice"));
    seen[rank] = true;
    members.push_back(rank);
  }
  if (members.empty() && empty_is_every_rank) {
    for (uint32_t r = 0; r < ranks; ++r) members.push_back(r);
  }
  if (members.empty()) return absl::InvalidArgumentError("no members");
  return members;
}

}  // namespace

// PyTorch's "## process_group:init ##" record, converted to a METADATA_NODE: its inputs' values
// hold the groups as JSON ([{"pg_name": "1", "ranks": [0, 2], ...}, ...]) inside the
// converter's Python list (ASTRA-sim strips two characters each side); empty ranks is every
// rank. Other metadata nodes define nothing.
absl::Status read_groups(const chakra::Node& n, const std::string& file, uint32_t ranks,
                         DefinedGroups* out) {
  const std::string& v = n.inputs().values();
  const size_t begin = v.find("[{"), end = v.rfind("}]");
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    return absl::OkStatus();
  }
  google::protobuf::ListValue list;
  if (const auto st =
          google::protobuf::util::JsonStringToMessage(v.substr(begin, end + 2 - begin), &list);
      !st.ok()) {
    return bad_node(
        file, n.id(),
        absl::StrCat("process-group metadata is not JSON (", std::string(st.message()), ")"));
  }
  for (const google::protobuf::Value& item : list.values()) {
    if (item.kind_case() != google::protobuf::Value::kStructValue) continue;
    const auto& fields = item.struct_value().fields();
    const auto name = fields.find("pg_name");
    const auto members = fields.find("ranks");
    if (name == fields.end() || members == fields.end()) {
      return bad_node(file, n.id(), "a process group without pg_name or ranks");
    }
    const std::string pg = name->second.kind_case() == google::protobuf::Value::kNumberValue
                               ? absl::StrCat(name->second.number_value())
                               : name->second.string_value();
    if (is_world(pg)) continue;
    auto m = members_of(members->second, ranks, /*empty_is_every_rank=*/true);
    if (!m.ok()) {
      return bad_node(
          file, n.id(),
          absl::StrCat("process group \"", pg, "\": ", std::string(m.status().message())));
    }
    (*out)[pg] = DefinedGroup{std::move(*m), n.id()};
  }
  return absl::OkStatus();
}

}  // namespace trace_internal

absl::StatusOr<CommGroups> read_comm_groups(const std::string& path, uint32_t ranks) {
  constexpr uintmax_t kMaxFileBytes = 64 << 20;
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  if (size > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": larger than ", kMaxFileBytes, " bytes"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  google::protobuf::Struct root;
  if (const auto st = google::protobuf::util::JsonStringToMessage(text.str(), &root); !st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a JSON object of groups (", std::string(st.message()), ")"));
  }
  CommGroups groups;
  for (const auto& [name, value] : root.fields()) {
    auto bad_group = [&](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": group \"", name, "\": ", std::string(why)));
    };
    if (trace_internal::is_world(name)) {
      return bad_group("\"\" and \"0\" name every rank and cannot be defined");
    }
    auto members = trace_internal::members_of(value, ranks, /*empty_is_every_rank=*/false);
    if (!members.ok()) return bad_group(std::string(members.status().message()));
    groups.emplace(name, std::move(*members));
  }
  return groups;
}

absl::Status write_comm_groups(const std::string& path, const CommGroups& groups) {
  // Written by hand, one group a line in name order, so that the same groups give the same
  // bytes (protobuf's JSON printer orders a map's keys as its hash table does).
  std::string text = "{";
  bool first = true;
  for (const auto& [name, members] : groups) {
    absl::StrAppend(&text, first ? "\n  \"" : ",\n  \"");
    first = false;
    for (const char c : name) {
      if (c == '"' || c == '\\') {
        absl::StrAppend(&text, "\\", std::string(1, c));
      } else if (static_cast<unsigned char>(c) < 0x20) {
        absl::StrAppend(&text, absl::StrFormat("\\u%04x", c));
      } else {
        text.push_back(c);
      }
    }
    absl::StrAppend(&text, "\": [", absl::StrJoin(members, ", "), "]");
  }
  text += "\n}\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(absl::StrCat(path, ": cannot open for writing"));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (::close(fd) != 0 || !ok) return absl::UnavailableError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace uet::sim
