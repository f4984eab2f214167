#include "sim/trace/trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <queue>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "sim/trace/chakra.pb.h"

namespace uet::sim {
namespace {

namespace pb = ::uet::chakra;

constexpr uint32_t kMaxMessageBytes = 64 << 20;  // a node far beyond any real trace's
constexpr uint32_t kMaxTraceRanks = kMaxWorkloadHosts;

std::string rank_file(const std::string& prefix, size_t rank) {
  return absl::StrCat(prefix, ".", rank, ".et");
}

absl::Status bad_node(const std::string& file, uint64_t id, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": node ", id, ": ", std::string(why)));
}

// The attribute's value as an integer, whichever integer kind the producer chose.
bool int_attr(const pb::Node& n, std::string_view name, int64_t* out) {
  for (const pb::AttributeProto& a : n.attr()) {
    if (a.name() != name) continue;
    switch (a.value_case()) {
      case pb::AttributeProto::kInt32Val:
        *out = a.int32_val();
        return true;
      case pb::AttributeProto::kInt64Val:
        *out = a.int64_val();
        return true;
      case pb::AttributeProto::kUint32Val:
        *out = a.uint32_val();
        return true;
      case pb::AttributeProto::kUint64Val:
        *out = static_cast<int64_t>(a.uint64_val());
        return true;
      default:
        return false;
    }
  }
  return false;
}

// The attribute's string value; false when absent or not a string.
bool string_attr(const pb::Node& n, std::string_view name, std::string* out) {
  for (const pb::AttributeProto& a : n.attr()) {
    if (a.name() != name || a.value_case() != pb::AttributeProto::kStringVal) continue;
    *out = a.string_val();
    return true;
  }
  return false;
}

// is_cpu_op: a bool (Chakra's converter), or an integer (older feeders read int32_val).
bool cpu_op(const pb::Node& n) {
  for (const pb::AttributeProto& a : n.attr()) {
    if (a.name() != "is_cpu_op") continue;
    if (a.value_case() == pb::AttributeProto::kBoolVal) return a.bool_val();
    int64_t v = 0;
    return int_attr(n, "is_cpu_op", &v) && v != 0;
  }
  return false;  // absent: a GPU op (trace.h)
}

int own_type(TraceNode::Kind k) {
  switch (k) {
    case TraceNode::Kind::kCollective: return pb::COMM_COLL_NODE;
    case TraceNode::Kind::kSend: return pb::COMM_SEND_NODE;
    case TraceNode::Kind::kRecv: return pb::COMM_RECV_NODE;
    case TraceNode::Kind::kCompute: break;
  }
  return pb::COMP_NODE;
}

// Each dependency once, in the order first named.
void add_deps(std::vector<uint64_t>& to, const google::protobuf::RepeatedField<uint64_t>& from,
              const std::vector<uint64_t>& also) {
  for (uint64_t d : from) {
    if (std::find(to.begin(), to.end(), d) == to.end() &&
        std::find(also.begin(), also.end(), d) == also.end()) {
      to.push_back(d);
    }
  }
}

// ASTRA-sim's default communicator: no pg_name, an empty one or "0" is every rank.
bool is_world(const std::string& group) { return group.empty() || group == "0"; }

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

// Process groups a rank's metadata defines, by pg_name, with the node that defined each.
struct DefinedGroup {
  std::vector<uint32_t> members;
  uint64_t node = 0;
};
using DefinedGroups = std::map<std::string, DefinedGroup>;

// PyTorch's "## process_group:init ##" record, converted to a METADATA_NODE: its inputs' values
// hold the groups as JSON ([{"pg_name": "1", "ranks": [0, 2], ...}, ...]) inside the
// converter's Python list (ASTRA-sim strips two characters each side); empty ranks is every
// rank. Other metadata nodes define nothing.
absl::Status read_groups(const pb::Node& n, const std::string& file, uint32_t ranks,
                         DefinedGroups* out) {
  const std::string& v = n.inputs().values();
  const size_t begin = v.find("[{"), end = v.rfind("}]");
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    return absl::OkStatus();
  }
  google::protobuf::ListValue list;
  if (const auto st = google::protobuf::util::JsonStringToMessage(v.substr(begin, end + 2 - begin), &list);
      !st.ok()) {
    return bad_node(file, n.id(), absl::StrCat("process-group metadata is not JSON (",
                                               std::string(st.message()), ")"));
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
      return bad_node(file, n.id(), absl::StrCat("process group \"", pg, "\": ",
                                                 std::string(m.status().message())));
    }
    (*out)[pg] = DefinedGroup{std::move(*m), n.id()};
  }
  return absl::OkStatus();
}

absl::StatusOr<TraceNode> from_proto(const pb::Node& n, const std::string& file, size_t ranks) {
  TraceNode t;
  t.id = n.id();
  t.name = n.name();
  add_deps(t.deps, n.data_deps(), {});
  add_deps(t.ctrl_deps, n.ctrl_deps(), t.deps);
  t.cpu = cpu_op(n);
  const int type = static_cast<int>(n.type());
  if (t.cpu) {  // host work, whatever the node's type (trace.h)
    t.kind = TraceNode::Kind::kCompute;
    t.duration_us = n.duration_micros();
    if (type != pb::COMP_NODE) t.chakra_type = type;
    return t;
  }
  int64_t v = 0;
  switch (type) {
    case pb::INVALID_NODE:  // ASTRA-sim skips it: done as soon as its dependencies are
      t.kind = TraceNode::Kind::kCompute;
      t.chakra_type = type;
      return t;
    case pb::COMP_NODE:
    case pb::MEM_LOAD_NODE:
    case pb::MEM_STORE_NODE:
    case pb::METADATA_NODE:
      t.kind = TraceNode::Kind::kCompute;
      t.duration_us = n.duration_micros();
      if (type != pb::COMP_NODE) t.chakra_type = type;
      return t;
    case pb::COMM_COLL_NODE: {
      t.kind = TraceNode::Kind::kCollective;
      if (!int_attr(n, "comm_type", &v)) {
        return bad_node(file, t.id,
                        "collective without comm_type (a GPU op: is_cpu_op absent or false)");
      }
      switch (v) {
        case pb::ALL_REDUCE:
          t.collective = Collective::kAllReduce;
          break;
        case pb::ALL_GATHER:
          t.collective = Collective::kAllGather;
          break;
        case pb::REDUCE_SCATTER:
        case pb::REDUCE_SCATTER_BLOCK:  // equal blocks: what reduce-scatter moves here anyway
          t.collective = Collective::kReduceScatter;
          break;
        case pb::BROADCAST:
          t.collective = Collective::kBroadcast;
          break;
        case pb::ALL_TO_ALL:
          t.collective = Collective::kAllToAll;
          break;
        case pb::BARRIER:
          t.collective = Collective::kAllReduce, t.barrier = true;
          break;
        case pb::REDUCE:
          t.collective = Collective::kReduce;
          break;
        case pb::GATHER:
          t.collective = Collective::kGather;
          break;
        case pb::SCATTER:
          t.collective = Collective::kScatter;
          break;
        default:
          return bad_node(file, t.id,
                          absl::StrCat("collective comm_type ", v, " (",
                                       pb::CollectiveCommType_Name(static_cast<int>(v)),
                                       ") is not modelled: ALL_REDUCE, REDUCE, ALL_GATHER, "
                                       "GATHER, SCATTER, REDUCE_SCATTER(_BLOCK), BROADCAST, "
                                       "ALL_TO_ALL, BARRIER"));
      }
      // pg_name is a string in Chakra; some producers write the group's number.
      if (!string_attr(n, "pg_name", &t.group) && int_attr(n, "pg_name", &v)) {
        t.group = absl::StrCat(v);
      }
      if (is_world(t.group)) t.group.clear();
      if (int_attr(n, "root_rank", &v)) {
        if (v < 0 || static_cast<size_t>(v) >= ranks) {
          return bad_node(file, t.id, absl::StrCat("root_rank ", v, " not a rank in [0, ",
                                                   ranks - 1, "]"));
        }
        t.root = v;
      }
      if (!t.barrier) {
        if (!int_attr(n, "comm_size", &v) || v <= 0) {
          return bad_node(file, t.id, "collective without a positive comm_size");
        }
        t.bytes = static_cast<uint64_t>(v);
      }
      return t;
    }
    case pb::COMM_SEND_NODE:
    case pb::COMM_RECV_NODE: {
      const bool send = n.type() == pb::COMM_SEND_NODE;
      t.kind = send ? TraceNode::Kind::kSend : TraceNode::Kind::kRecv;
      const char* peer = send ? "comm_dst" : "comm_src";
      if (!int_attr(n, peer, &v) || v < 0 || static_cast<size_t>(v) >= ranks) {
        return bad_node(file, t.id,
                        absl::StrCat(peer, " missing or not a rank in [0, ", ranks - 1, "]"));
      }
      t.peer = static_cast<uint32_t>(v);
      t.tag = int_attr(n, "comm_tag", &v) ? v : 0;
      if (send) {
        if (!int_attr(n, "comm_size", &v) || v <= 0) {
          return bad_node(file, t.id, "send without a positive comm_size");
        }
        t.bytes = static_cast<uint64_t>(v);
      }
      return t;
    }
    default:
      return bad_node(file, t.id,
                      absl::StrCat("node type ", type,
                                   " is not modelled: INVALID, COMP, MEM_LOAD, MEM_STORE, "
                                   "METADATA, COMM_COLL, COMM_SEND, COMM_RECV, or any with "
                                   "is_cpu_op"));
  }
}

absl::StatusOr<std::vector<TraceNode>> read_rank(const std::string& file, int fd, size_t ranks,
                                                 DefinedGroups* groups) {
  google::protobuf::io::FileInputStream raw(fd);
  raw.SetCloseOnDelete(true);
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT32_MAX);
  std::vector<TraceNode> nodes;
  bool metadata = false;
  for (uint64_t message = 0;; ++message) {
    uint32_t len = 0;
    if (!in.ReadVarint32(&len)) break;  // end of file
    if (len > kMaxMessageBytes) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": message ", message, " claims ", len,
                                                     " bytes (at most ", kMaxMessageBytes, ")"));
    }
    const auto limit = in.PushLimit(static_cast<int>(len));
    if (!metadata) {
      pb::GlobalMetadata m;
      if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ": the metadata message is truncated or malformed"));
      }
      metadata = true;
    } else {
      pb::Node n;
      if (!n.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ": message ", message, " (after node ",
                         nodes.empty() ? std::string("none") : absl::StrCat(nodes.back().id),
                         ") is truncated or malformed"));
      }
      if (groups != nullptr && n.type() == pb::METADATA_NODE && n.has_inputs()) {
        if (absl::Status g = read_groups(n, file, static_cast<uint32_t>(ranks), groups); !g.ok()) return g;
      }
      auto t = from_proto(n, file, ranks);
      if (!t.ok()) return t.status();
      nodes.push_back(std::move(*t));
    }
    in.PopLimit(limit);
  }
  if (!metadata)
    return absl::InvalidArgumentError(absl::StrCat(file, ": empty (no metadata message)"));
  return nodes;
}

pb::AttributeProto int_attribute(const char* name, int64_t v) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_int64_val(v);
  return a;
}

}  // namespace

absl::StatusOr<Trace> read_chakra(const std::string& prefix) {
  std::vector<int> fds;
  for (size_t r = 0; r <= kMaxTraceRanks; ++r) {
    const int fd = ::open(rank_file(prefix, r).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  if (fds.size() < 2) {
    for (int fd : fds) ::close(fd);
    return absl::NotFoundError(absl::StrCat("trace ", prefix, ": needs ", rank_file(prefix, 0),
                                            " and ", rank_file(prefix, 1),
                                            " at least (one file per rank)"));
  }
  Trace t;
  absl::Status first_error;
  for (size_t r = 0; r < fds.size(); ++r) {
    if (!first_error.ok()) {
      ::close(fds[r]);
      continue;
    }
    DefinedGroups defined;
    auto nodes = read_rank(rank_file(prefix, r), fds[r], fds.size(), &defined);  // closes the file
    if (!nodes.ok()) {
      first_error = nodes.status();
      continue;
    }
    t.ranks.push_back(std::move(*nodes));
    // Every rank's file records the job's groups: they must agree.
    for (auto& [name, g] : defined) {
      const auto [it, added] = t.groups.try_emplace(name, g.members);
      if (!added && it->second != g.members && first_error.ok()) {
        first_error = bad_node(rank_file(prefix, r), g.node,
                               absl::StrCat("process group \"", name, "\" is [",
                                            absl::StrJoin(g.members, ", "), "] here, [",
                                            absl::StrJoin(it->second, ", "), "] in an earlier rank's file"));
      }
    }
  }
  if (!first_error.ok()) return first_error;
  return t;
}

absl::StatusOr<std::vector<TraceNode>> read_chakra_file(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(file, ": cannot open"));
  return read_rank(file, fd, kMaxTraceRanks, nullptr);  // closes the file
}

absl::StatusOr<Trace> replicate_rank(const std::vector<TraceNode>& nodes, uint32_t ranks,
                                     uint64_t* regrouped) {
  if (ranks < 2 || ranks > kMaxTraceRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("ranks ", ranks, " out of range: 2..", kMaxTraceRanks));
  }
  std::vector<TraceNode> job = nodes;
  *regrouped = 0;
  for (TraceNode& t : job) {
    if (t.kind == TraceNode::Kind::kSend || t.kind == TraceNode::Kind::kRecv) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", t.id, ": a point-to-point ", t.kind == TraceNode::Kind::kSend ? "send" : "receive",
          " has no partner in a replicated data-parallel job"));
    }
    if (t.kind == TraceNode::Kind::kCollective && !t.group.empty()) {
      t.group.clear();
      ++*regrouped;
    }
  }
  Trace trace;
  trace.ranks.assign(ranks, job);
  return trace;
}

absl::Status write_chakra(const std::string& prefix, const Trace& trace) {
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    const std::string file = rank_file(prefix, r);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return absl::UnavailableError(absl::StrCat(file, ": cannot open for writing"));
    {
      google::protobuf::io::FileOutputStream raw(fd);
      google::protobuf::io::CodedOutputStream out(&raw);
      pb::GlobalMetadata m;
      m.set_version("0.0.4");
      out.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
      m.SerializeToCodedStream(&out);
      for (const TraceNode& t : trace.ranks[r]) {
        pb::Node n;
        n.set_id(t.id);
        n.set_name(t.name);
        for (uint64_t d : t.deps) n.add_data_deps(d);
        for (uint64_t d : t.ctrl_deps) n.add_ctrl_deps(d);
        n.set_type(static_cast<pb::NodeType>(t.chakra_type >= 0 ? t.chakra_type : own_type(t.kind)));
        pb::AttributeProto* is_cpu = n.add_attr();
        is_cpu->set_name("is_cpu_op");
        is_cpu->set_bool_val(t.cpu);
        for (const auto& [name, value] : t.extra) {
          pb::AttributeProto* a = n.add_attr();
          a->set_name(name);
          if (const auto* i = std::get_if<int64_t>(&value)) {
            a->set_int64_val(*i);
          } else {
            a->set_string_val(std::get<std::string>(value));
          }
        }
        switch (t.kind) {
          case TraceNode::Kind::kCompute:
            n.set_duration_micros(t.duration_us);
            break;
          case TraceNode::Kind::kCollective: {
            int64_t type = pb::ALL_REDUCE;
            switch (t.collective) {
              case Collective::kAllGather:
                type = pb::ALL_GATHER;
                break;
              case Collective::kReduceScatter:
                type = pb::REDUCE_SCATTER;
                break;
              case Collective::kBroadcast:
                type = pb::BROADCAST;
                break;
              case Collective::kAllToAll:
                type = pb::ALL_TO_ALL;
                break;
              case Collective::kReduce:
                type = pb::REDUCE;
                break;
              case Collective::kGather:
                type = pb::GATHER;
                break;
              case Collective::kScatter:
                type = pb::SCATTER;
                break;
              default:
                type = t.barrier ? pb::BARRIER : pb::ALL_REDUCE;
                break;
            }
            *n.add_attr() = int_attribute("comm_type", type);
            if (!t.barrier)
              *n.add_attr() = int_attribute("comm_size", static_cast<int64_t>(t.bytes));
            if (!t.group.empty()) {
              pb::AttributeProto* a = n.add_attr();
              a->set_name("pg_name");
              a->set_string_val(t.group);
            }
            if (t.root >= 0) *n.add_attr() = int_attribute("root_rank", t.root);
            break;
          }
          case TraceNode::Kind::kSend:
          case TraceNode::Kind::kRecv: {
            const bool send = t.kind == TraceNode::Kind::kSend;
            *n.add_attr() = int_attribute(send ? "comm_dst" : "comm_src", t.peer);
            *n.add_attr() = int_attribute("comm_tag", t.tag);
            if (send) *n.add_attr() = int_attribute("comm_size", static_cast<int64_t>(t.bytes));
            break;
          }
        }
        out.WriteVarint32(static_cast<uint32_t>(n.ByteSizeLong()));
        n.SerializeToCodedStream(&out);
      }
      if (out.HadError()) {
        ::close(fd);
        return absl::UnavailableError(absl::StrCat(file, ": write failed"));
      }
    }
    if (::close(fd) != 0) return absl::UnavailableError(absl::StrCat(file, ": write failed"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CommGroups> read_comm_groups(const std::string& path, uint32_t ranks) {
  constexpr uintmax_t kMaxFileBytes = 64 << 20;
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  if (size > kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": larger than ", kMaxFileBytes, " bytes"));
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
    if (is_world(name)) return bad_group("\"\" and \"0\" name every rank and cannot be defined");
    auto members = members_of(value, ranks, /*empty_is_every_rank=*/false);
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

absl::StatusOr<TracePlan> trace_flows(const Trace& trace, const std::vector<uint32_t>& rank_hosts,
                                      const TraceOptions& options) {
  const auto n = static_cast<uint32_t>(trace.ranks.size());
  if (n < 2 || rank_hosts.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("trace: ", n, " ranks, ", rank_hosts.size(),
                                                   " hosts given (one host per rank, at least 2)"));
  }
  auto file = [](uint32_t r) { return absl::StrCat("rank ", r, " (", r, ".et)"); };
  TracePlan plan;
  std::vector<FlowSpec>& flows = plan.flows;
  auto task = [&](uint32_t rank, Time delay) {
    const auto id = static_cast<uint32_t>(flows.size());
    FlowSpec f{id, rank_hosts[rank], rank_hosts[rank], 0, delay, {}};
    f.compute = true;
    flows.push_back(std::move(f));
    return id;
  };
  // Per rank and node: `gate` starts the node once its own prerequisites are done, `done` is
  // what its dependents wait for (for a compute node the same task, carrying the duration).
  std::vector<std::vector<uint32_t>> gate(n), done(n);
  for (uint32_t r = 0; r < n; ++r) {
    const std::vector<TraceNode>& nodes = trace.ranks[r];
    std::unordered_map<uint64_t, uint32_t> index;
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      if (!index.emplace(nodes[i].id, i).second) {
        return bad_node(file(r), nodes[i].id, "the id appears twice");
      }
    }
    gate[r].resize(nodes.size());
    done[r].resize(nodes.size());
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      const TraceNode& t = nodes[i];
      if (t.kind == TraceNode::Kind::kCompute) {
        gate[r][i] = done[r][i] = task(r, static_cast<Time>(t.duration_us) * kMicrosecond);
        flows[gate[r][i]].stream = stream_of(t);
        ++plan.compute_nodes;
      } else {
        gate[r][i] = task(r, 0);
        done[r][i] = task(r, 0);
      }
    }
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      std::vector<uint64_t> all = nodes[i].deps;
      all.insert(all.end(), nodes[i].ctrl_deps.begin(), nodes[i].ctrl_deps.end());
      for (uint64_t d : all) {
        const auto it = index.find(d);
        if (it == index.end()) {
          return bad_node(file(r), nodes[i].id,
                          absl::StrCat("depends on node ", d, ", not in the file"));
        }
        if (it->second == i) return bad_node(file(r), nodes[i].id, "depends on itself");
        flows[gate[r][i]].after.push_back(done[r][it->second]);
      }
    }
  }
  auto add_flows = [&](std::vector<FlowSpec> more) {
    const auto base = static_cast<uint32_t>(flows.size());
    append_flows(flows, std::move(more));
    return base;
  };
  std::unordered_map<uint32_t, uint32_t> rank_of_host;
  for (uint32_t r = 0; r < n; ++r) rank_of_host[rank_hosts[r]] = r;

  // Collectives: per communicator, the k-th node naming it in every member's file is one
  // collective over its members, in the communicator's rank order.
  std::vector<uint32_t> world(n);
  for (uint32_t r = 0; r < n; ++r) world[r] = r;
  struct Communicator {
    const std::vector<uint32_t>* members = nullptr;
    std::vector<int32_t> position;             // per trace rank: its index, or -1
    std::vector<std::vector<uint32_t>> nodes;  // per member: its collective nodes, in order
  };
  std::map<std::string, Communicator> comms;
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t i = 0; i < trace.ranks[r].size(); ++i) {
      const TraceNode& t = trace.ranks[r][i];
      if (t.kind != TraceNode::Kind::kCollective) continue;
      auto [it, added] = comms.try_emplace(t.group);
      Communicator& c = it->second;
      if (added) {
        if (t.group.empty()) {
          c.members = &world;
        } else if (const auto g = trace.groups.find(t.group); g != trace.groups.end()) {
          c.members = &g->second;
        } else {
          return bad_node(file(r), t.id,
                          absl::StrCat("pg_name \"", t.group, "\" is not a communicator group",
                                       trace.groups.empty() ? " (no groups were given)" : ""));
        }
        c.position.assign(n, -1);
        for (uint32_t m = 0; m < c.members->size(); ++m) {
          const uint32_t member = (*c.members)[m];
          if (member >= n) {
            return absl::InvalidArgumentError(absl::StrCat(
                "trace: communicator \"", t.group, "\" names rank ", member, ", the trace has ", n));
          }
          c.position[member] = static_cast<int32_t>(m);
        }
        c.nodes.resize(c.members->size());
      }
      if (c.position[r] < 0) {
        return bad_node(file(r), t.id,
                        absl::StrCat("pg_name \"", t.group, "\" does not include rank ", r));
      }
      c.nodes[static_cast<size_t>(c.position[r])].push_back(i);
    }
  }
  for (const auto& [name, c] : comms) {
    const std::vector<uint32_t>& members = *c.members;
    const uint32_t lead = members[0];
    const std::string which = name.empty() ? std::string("") : absl::StrCat(" of \"", name, "\"");
    for (size_t m = 1; m < members.size(); ++m) {
      if (c.nodes[m].size() != c.nodes[0].size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "trace: ", file(members[m]), " has ", c.nodes[m].size(), " collective nodes", which,
            ", rank ", lead, " has ", c.nodes[0].size()));
      }
    }
    std::vector<uint32_t> hosts(members.size());
    for (size_t m = 0; m < members.size(); ++m) hosts[m] = rank_hosts[members[m]];
    for (size_t k = 0; k < c.nodes[0].size(); ++k) {
      const TraceNode& c0 = trace.ranks[lead][c.nodes[0][k]];
      for (size_t m = 1; m < members.size(); ++m) {
        const TraceNode& t = trace.ranks[members[m]][c.nodes[m][k]];
        if (t.collective != c0.collective || t.barrier != c0.barrier || t.bytes != c0.bytes ||
            t.root != c0.root) {
          return bad_node(
              file(members[m]), t.id,
              absl::StrCat("collective #", k, which, " is ", std::string(to_string(t.collective)),
                           " of ", t.bytes, " bytes", t.root >= 0 ? absl::StrCat(" to/from rank ", t.root) : "",
                           "; rank ", lead, "'s (node ", c0.id, ") is ",
                           std::string(to_string(c0.collective)), " of ", c0.bytes));
        }
      }
      TraceCollective& record = plan.collective_list.emplace_back();
      record.collective = c0.collective;
      record.barrier = c0.barrier;
      record.bytes = c0.bytes;
      record.group = name;
      for (size_t m = 0; m < members.size(); ++m) {
        record.gates.push_back(gate[members[m]][c.nodes[m][k]]);
        record.dones.push_back(done[members[m]][c.nodes[m][k]]);
      }
      if (members.size() == 1) {  // a communicator of one rank: nothing crosses the network
        const uint32_t i = c.nodes[0][k];
        flows[done[lead][i]].after.push_back(gate[lead][i]);
        ++plan.collectives;
        continue;
      }
      CollectiveSpec spec;
      spec.collective = c0.collective;
      spec.algo = collective_algos(c0.collective).front();
      spec.hosts = hosts;
      spec.bytes = c0.barrier ? uint64_t{kCollectiveElementBytes} * members.size() : c0.bytes;
      spec.channels = options.channels;
      spec.chunk_bytes = options.chunk_bytes;
      spec.slots = options.slots;
      if (c0.root >= 0) {
        const int32_t at = c.position[static_cast<size_t>(c0.root)];
        if (at < 0) {
          return bad_node(file(lead), c0.id,
                          absl::StrCat("root_rank ", c0.root, " is not in the communicator", which));
        }
        spec.root = static_cast<uint32_t>(at);
      }
      auto p = collective_flows(spec);
      if (!p.ok()) return bad_node(file(lead), c0.id, std::string(p.status().message()));
      const uint32_t base = add_flows(std::move(p->flows));
      for (uint32_t id = base; id < flows.size(); ++id) {
        const uint32_t s = rank_of_host[flows[id].src], d = rank_of_host[flows[id].dst];
        const uint32_t si = c.nodes[static_cast<size_t>(c.position[s])][k];
        const uint32_t di = c.nodes[static_cast<size_t>(c.position[d])][k];
        flows[id].after.push_back(gate[s][si]);
        flows[done[s][si]].after.push_back(id);
        flows[done[d][di]].after.push_back(id);
        plan.network_bytes += flows[id].bytes;
      }
      // Every algorithm has each member send or receive; were one idle, its node would still
      // wait for its own prerequisites.
      for (size_t m = 0; m < members.size(); ++m) {
        const uint32_t i = c.nodes[m][k];
        if (flows[done[members[m]][i]].after.empty()) {
          flows[done[members[m]][i]].after.push_back(gate[members[m]][i]);
        }
      }
      ++plan.collectives;
    }
  }

  // Point to point: the i-th send from s to d with a tag meets the i-th receive of it.
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, std::vector<uint32_t>> sends, recvs;
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t i = 0; i < trace.ranks[r].size(); ++i) {
      const TraceNode& t = trace.ranks[r][i];
      if (t.kind == TraceNode::Kind::kSend) {
        if (t.peer == r) return bad_node(file(r), t.id, "sends to its own rank");
        sends[{r, t.peer, t.tag}].push_back(i);
      } else if (t.kind == TraceNode::Kind::kRecv) {
        recvs[{t.peer, r, t.tag}].push_back(i);
      }
    }
  }
  for (const auto& [key, list] : sends) {
    const auto [s, d, tag] = key;
    const auto it = recvs.find(key);
    const size_t matched = it == recvs.end() ? 0 : it->second.size();
    if (matched != list.size()) {
      const uint32_t extra = list[std::min(matched, list.size() - 1)];
      return bad_node(file(s), trace.ranks[s][extra].id,
                      absl::StrCat(list.size(), " sends to rank ", d, " with tag ", tag, ", ",
                                   matched, " receives of them in rank ", d));
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const uint32_t si = list[i], ri = it->second[i];
      const auto id = static_cast<uint32_t>(flows.size());
      flows.push_back(FlowSpec{id,
                               rank_hosts[s],
                               rank_hosts[d],
                               trace.ranks[s][si].bytes,
                               0,
                               {gate[s][si], gate[d][ri]}});
      flows[done[s][si]].after.push_back(id);
      flows[done[d][ri]].after.push_back(id);
      plan.network_bytes += trace.ranks[s][si].bytes;
      ++plan.p2p;
    }
  }
  for (const auto& [key, list] : recvs) {
    if (sends.count(key) == 0) {
      const auto [s, d, tag] = key;
      return bad_node(
          file(d), trace.ranks[d][list.front()].id,
          absl::StrCat("receives from rank ", s, " with tag ", tag, ", which sends nothing so"));
    }
  }
  if (flows.size() > kMaxWorkloadFlows) {
    return absl::InvalidArgumentError(absl::StrCat("trace: ", flows.size(),
                                                   " flows and tasks, at most ", kMaxWorkloadFlows,
                                                   ": raise the chunk size"));
  }

  // A cycle (within a rank, or through sends and collectives across ranks) would never finish:
  // refused. The same pass gives the step's length with a network that takes no time.
  const size_t total = flows.size();
  std::vector<uint32_t> waiting(total), begin(total + 1, 0), deps;
  for (const FlowSpec& f : flows) {
    waiting[f.id] = static_cast<uint32_t>(f.after.size());
    for (uint32_t a : f.after) ++begin[a + 1];
  }
  for (size_t i = 0; i < total; ++i) begin[i + 1] += begin[i];
  deps.resize(begin[total]);
  {
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (const FlowSpec& f : flows)
      for (uint32_t a : f.after) deps[fill[a]++] = f.id;
  }
  // Played as the A/B runner plays the plan (bench/ab_runner.cc): flows take no time, a
  // compute task its duration, one at a time on its stream, lowest ready id first.
  using Event = std::pair<Time, uint32_t>;  // (end, flow)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  struct Stream {
    bool busy = false;
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  };
  std::map<uint64_t, Stream> streams;
  auto stream_key = [&](uint32_t f) { return uint64_t{flows[f].src} << 8 | flows[f].stream; };
  auto run_next = [&](Stream& st, Time now) {
    st.busy = !st.ready.empty();
    if (!st.busy) return;
    const uint32_t f = st.ready.top();
    st.ready.pop();
    events.emplace(now + flows[f].start, f);
  };
  auto launch = [&](uint32_t f, Time now) {  // f's prerequisites are done
    if (!flows[f].compute) {
      events.emplace(now, f);
    } else if (flows[f].stream == 0) {
      events.emplace(now + flows[f].start, f);
    } else {
      Stream& st = streams[stream_key(f)];
      st.ready.push(f);
      if (!st.busy) run_next(st, now);
    }
  };
  for (uint32_t i = 0; i < total; ++i)
    if (waiting[i] == 0) launch(i, 0);
  size_t seen = 0;
  while (!events.empty()) {
    const auto [end, f] = events.top();
    events.pop();
    ++seen;
    plan.compute_only = std::max(plan.compute_only, end);
    for (uint32_t k = begin[f]; k < begin[f + 1]; ++k)
      if (--waiting[deps[k]] == 0) launch(deps[k], end);
    if (flows[f].compute && flows[f].stream != 0) run_next(streams[stream_key(f)], end);
  }
  if (seen != total) {
    for (uint32_t r = 0; r < n; ++r) {
      for (uint32_t i = 0; i < trace.ranks[r].size(); ++i) {
        if (waiting[gate[r][i]] != 0) {
          return bad_node(file(r), trace.ranks[r][i].id,
                          "waits on a dependency cycle (within the rank, or through sends and "
                          "collectives of other ranks)");
        }
      }
    }
    return absl::InvalidArgumentError("trace: a dependency cycle");
  }
  return plan;
}

std::vector<CollectiveSummary> summarize_collectives(const TracePlan& plan,
                                                     const std::vector<Time>& finish) {
  std::map<std::pair<std::string, uint64_t>, CollectiveSummary> rows;
  std::map<std::pair<std::string, uint64_t>, std::vector<std::pair<Time, Time>>> spans;
  for (const TraceCollective& c : plan.collective_list) {
    Time start = kNever, end = 0;
    bool done = true;
    for (uint32_t g : c.gates) start = std::min(start, finish[g]);
    for (uint32_t d : c.dones) {
      done = done && finish[d] != kNever;
      end = std::max(end, finish[d]);
    }
    if (!done || start == kNever) continue;
    const std::string kind = c.barrier ? "barrier" : std::string(to_string(c.collective));
    CollectiveSummary& row = rows[{kind, c.bytes}];
    row.kind = kind;
    row.bytes = c.bytes;
    ++row.count;
    row.total += end - start;
    row.longest = std::max(row.longest, end - start);
    spans[{kind, c.bytes}].emplace_back(start, end);
  }
  std::vector<CollectiveSummary> out;
  for (auto& [key, row] : rows) {
    std::vector<std::pair<Time, Time>>& s = spans[key];
    std::sort(s.begin(), s.end());
    Time covered_to = 0;
    for (const auto& [start, end] : s) {  // the union of the spans
      if (end <= covered_to) continue;
      row.busy += end - std::max(start, covered_to);
      covered_to = end;
    }
    out.push_back(std::move(row));
  }
  return out;
}

uint8_t stream_of(const TraceNode& t) {
  if (t.cpu) return kCpuStream;
  if (t.chakra_type == pb::INVALID_NODE) return 0;  // no time, no resource (ASTRA-sim)
  if (t.chakra_type == pb::MEM_LOAD_NODE || t.chakra_type == pb::MEM_STORE_NODE)
    return kMemoryStream;
  return kGpuStream;
}

// ------------------------------------------------------------------ generated steps

Trace data_parallel_step(uint32_t ranks, uint32_t layers, uint64_t bucket_bytes,
                         uint64_t forward_us, uint64_t backward_us_per_layer) {
  std::vector<TraceNode> nodes;
  TraceNode fwd;
  fwd.id = 0;
  fwd.name = "forward";
  fwd.duration_us = forward_us;
  nodes.push_back(fwd);
  uint64_t prev = 0, next_id = 1;
  std::vector<uint64_t> reduces;
  for (uint32_t l = layers; l-- > 0;) {
    TraceNode bwd;
    bwd.id = next_id++;
    bwd.name = absl::StrCat("backward layer ", l);
    bwd.duration_us = backward_us_per_layer;
    bwd.deps = {prev};
    nodes.push_back(bwd);
    prev = bwd.id;
    TraceNode ar;
    ar.id = next_id++;
    ar.name = absl::StrCat("all-reduce gradients of layer ", l);
    ar.kind = TraceNode::Kind::kCollective;
    ar.collective = Collective::kAllReduce;
    ar.bytes = bucket_bytes;
    ar.deps = {bwd.id};
    nodes.push_back(ar);
    reduces.push_back(ar.id);
  }
  TraceNode opt;
  opt.id = next_id++;
  opt.name = "optimizer step";
  opt.duration_us = forward_us / 4;
  opt.deps = reduces;
  opt.deps.push_back(prev);
  nodes.push_back(opt);
  Trace trace;
  trace.ranks.assign(ranks, nodes);
  return trace;
}

Trace moe_layer(uint32_t ranks, uint64_t bytes, uint64_t attention_us, uint64_t expert_us) {
  std::vector<TraceNode> nodes(4);
  nodes[0].id = 0;
  nodes[0].name = "attention";
  nodes[0].duration_us = attention_us;
  nodes[1].id = 1;
  nodes[1].name = "dispatch tokens to experts";
  nodes[1].kind = TraceNode::Kind::kCollective;
  nodes[1].collective = Collective::kAllToAll;
  nodes[1].bytes = bytes;
  nodes[1].deps = {0};
  nodes[2].id = 2;
  nodes[2].name = "experts";
  nodes[2].duration_us = expert_us;
  nodes[2].deps = {1};
  nodes[3].id = 3;
  nodes[3].name = "combine expert outputs";
  nodes[3].kind = TraceNode::Kind::kCollective;
  nodes[3].collective = Collective::kAllToAll;
  nodes[3].bytes = bytes;
  nodes[3].deps = {2};
  Trace trace;
  trace.ranks.assign(ranks, nodes);
  return trace;
}

Trace hybrid_step(uint32_t dp, uint32_t tp, uint32_t layers, uint64_t tp_bytes,
                  uint64_t dp_bytes, uint64_t compute_us_per_layer) {
  Trace trace;
  for (uint32_t d = 0; d < dp; ++d) {
    std::vector<uint32_t>& g = trace.groups[absl::StrCat("tp", d)];
    for (uint32_t t = 0; t < tp; ++t) g.push_back(d * tp + t);
  }
  for (uint32_t t = 0; t < tp; ++t) {
    std::vector<uint32_t>& g = trace.groups[absl::StrCat("dp", t)];
    for (uint32_t d = 0; d < dp; ++d) g.push_back(d * tp + t);
  }
  trace.ranks.resize(size_t{dp} * tp);
  for (uint32_t d = 0; d < dp; ++d) {
    for (uint32_t t = 0; t < tp; ++t) {
      std::vector<TraceNode>& nodes = trace.ranks[size_t{d} * tp + t];
      uint64_t next_id = 0;
      auto add = [&](std::string name, std::vector<uint64_t> deps) -> TraceNode& {
        TraceNode& n = nodes.emplace_back();
        n.id = next_id++;
        n.name = std::move(name);
        n.deps = std::move(deps);
        return n;
      };
      auto all_reduce = [&](std::string name, uint64_t after, std::string group, uint64_t bytes) {
        TraceNode& n = add(std::move(name), {after});
        n.kind = TraceNode::Kind::kCollective;
        n.collective = Collective::kAllReduce;
        n.group = std::move(group);
        n.bytes = bytes;
        return n.id;
      };
      const std::string tp_group = absl::StrCat("tp", d), dp_group = absl::StrCat("dp", t);
      std::vector<uint64_t> prev;
      for (uint32_t l = 0; l < layers; ++l) {
        TraceNode& f = add(absl::StrCat("forward layer ", l), prev);
        f.duration_us = compute_us_per_layer;
        prev = {all_reduce(absl::StrCat("tensor-parallel all-reduce, forward layer ", l), f.id,
                           tp_group, tp_bytes)};
      }
      std::vector<uint64_t> grads;
      for (uint32_t l = layers; l-- > 0;) {
        TraceNode& b = add(absl::StrCat("backward layer ", l), prev);
        b.duration_us = 2 * compute_us_per_layer;  // input and weight gradients
        const uint64_t act = all_reduce(absl::StrCat("tensor-parallel all-reduce, backward layer ", l),
                                        b.id, tp_group, tp_bytes);
        prev = {act};
        grads.push_back(all_reduce(absl::StrCat("data-parallel all-reduce of layer ", l,
                                                "'s gradients"),
                                   act, dp_group, dp_bytes));
      }
      grads.insert(grads.end(), prev.begin(), prev.end());
      TraceNode& opt = add("optimizer step", std::move(grads));
      opt.duration_us = compute_us_per_layer;
    }
  }
  return trace;
}

Trace converted_step(uint32_t ranks, uint32_t layers, uint64_t bucket_bytes, uint64_t kernel_us) {
  Trace trace;
  trace.ranks.resize(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    std::vector<TraceNode>& nodes = trace.ranks[r];
    // Ids as the converter numbers them: sparse, starting anywhere.
    uint64_t next_id = 1000, rf_id = 0;
    uint64_t host_prev = 0, gpu_prev = 0;  // 0: none yet (no node has id 0)
    auto node = [&](std::string name, bool cpu, uint64_t us) -> TraceNode& {
      TraceNode& n = nodes.emplace_back();
      n.id = next_id;
      next_id += 2;
      n.name = std::move(name);
      n.cpu = cpu;
      n.duration_us = us;
      n.extra = {{"rf_id", static_cast<int64_t>(rf_id++)},
                 {"seq_id", static_cast<int64_t>(rf_id / 3)},
                 {"tid", cpu ? 1 : 7},
                 {"fw_parent", 0}};
      return n;
    };
    // A host op: after the previous one on the host thread (the converter's ctrl_deps).
    auto host_op = [&](std::string name, uint64_t us, std::string schema) -> TraceNode& {
      TraceNode& n = node(std::move(name), true, us);
      if (host_prev != 0) n.ctrl_deps = {host_prev};
      n.extra.emplace_back("op_schema", std::move(schema));
      host_prev = n.id;
      return n;
    };
    // A GPU kernel launched by `launch`, reading what the previous kernel wrote (data_deps).
    auto kernel = [&](std::string name, uint64_t us, uint64_t launch) -> TraceNode& {
      TraceNode& n = node(std::move(name), false, us);
      n.deps = {launch};
      if (gpu_prev != 0) n.deps.push_back(gpu_prev);
      gpu_prev = n.id;
      return n;
    };
    auto scaled = [&](uint32_t l, uint64_t num, uint64_t den) {
      return kernel_us * (2 + l % 3) * num / (2 * den);  // 1x, 1.5x, 2x by layer
    };
    for (uint32_t l = 0; l < layers; ++l) {
      const uint64_t mm = host_op("aten::linear", 3, "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor").id;
      kernel("ampere_sgemm_128x64_tn", scaled(l, 1, 1), mm);
      const uint64_t act = host_op("aten::relu", 2, "aten::relu(Tensor self) -> Tensor").id;
      kernel("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar", scaled(l, 1, 8), act);
    }
    std::vector<uint64_t> reduced;
    for (uint32_t l = layers; l-- > 0;) {
      const uint64_t bw = host_op("autograd::engine::evaluate_function: AddmmBackward0", 4, "").id;
      kernel("ampere_sgemm_64x64_nn", scaled(l, 1, 1), bw);
      kernel("ampere_sgemm_64x64_nt", scaled(l, 1, 1), bw);
      const uint64_t grad = gpu_prev;
      // The c10d call on the host, then the NCCL kernel that moves the bucket.
      TraceNode& call = host_op("c10d::allreduce_", 5, "c10d::allreduce_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup process_group, __torch__.torch.classes.c10d.ReduceOp reduce_op, Tensor? sparse_indices, int timeout) -> (Tensor[], __torch__.torch.classes.c10d.Work)");
      call.chakra_type = pb::COMM_COLL_NODE;
      const uint64_t call_id = call.id;
      TraceNode& nccl = node("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", false, 0);
      nccl.kind = TraceNode::Kind::kCollective;
      nccl.collective = Collective::kAllReduce;
      nccl.bytes = bucket_bytes;
      nccl.deps = {call_id, grad};
      nccl.extra.emplace_back("pg_name", std::string("0"));
      reduced.push_back(nccl.id);
    }
    const uint64_t step = host_op("Optimizer.step#SGD.step", 10, "").id;
    TraceNode& apply = kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel", kernel_us, step);
    apply.deps.insert(apply.deps.end(), reduced.begin(), reduced.end());
    const uint64_t zero = host_op("aten::zero_", 2, "aten::zero_(Tensor(a!) self) -> Tensor(a!)").id;
    kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>", kernel_us / 8, zero);
  }
  return trace;
}

}  // namespace uet::sim
