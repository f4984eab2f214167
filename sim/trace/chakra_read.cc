// Reading Chakra's protobuf files (sim/trace/chakra.proto) into per-rank node lists: each
// message length-delimited, the metadata first, and every node checked as trace.h says.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "sim/trace/chakra.pb.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_internal.h"

namespace uet::sim {
namespace {

namespace pb = ::uet::chakra;
using trace_internal::bad_node;
using trace_internal::collective_of;
using trace_internal::DefinedGroups;
using trace_internal::is_world;
using trace_internal::kMaxTraceRanks;
using trace_internal::rank_file;
using trace_internal::read_groups;

constexpr uint32_t kMaxMessageBytes = 64 << 20;  // a node far beyond any real trace's

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

// A COMM_COLL_NODE of a GPU op: comm_type, pg_name, root_rank and comm_size (trace.h).
absl::Status read_collective(const pb::Node& n, const std::string& file, size_t ranks,
                             TraceNode* t) {
  t->kind = TraceNode::Kind::kCollective;
  int64_t v = 0;
  if (!int_attr(n, "comm_type", &v)) {
    return bad_node(file, t->id,
                    "collective without comm_type (a GPU op: is_cpu_op absent or false)");
  }
  if (!collective_of(v, t)) {
    return bad_node(file, t->id,
                    absl::StrCat("collective comm_type ", v, " (",
                                 pb::CollectiveCommType_Name(static_cast<int>(v)),
                                 ") is not modelled: ALL_REDUCE, REDUCE, ALL_GATHER, "
                                 "GATHER, SCATTER, REDUCE_SCATTER(_BLOCK), BROADCAST, "
                                 "ALL_TO_ALL, BARRIER"));
  }
  // pg_name is a string in Chakra; some producers write the group's number.
  if (!string_attr(n, "pg_name", &t->group) && int_attr(n, "pg_name", &v)) {
    t->group = absl::StrCat(v);
  }
  if (is_world(t->group)) t->group.clear();
  if (int_attr(n, "root_rank", &v)) {
    if (v < 0 || static_cast<size_t>(v) >= ranks) {
      return bad_node(file, t->id,
                      absl::StrCat("root_rank ", v, " not a rank in [0, ", ranks - 1, "]"));
    }
    t->root = v;
  }
  if (!t->barrier) {
    if (!int_attr(n, "comm_size", &v) || v <= 0) {
      return bad_node(file, t->id, "collective without a positive comm_size");
    }
    t->bytes = static_cast<uint64_t>(v);
  }
  return absl::OkStatus();
}

// A COMM_SEND_NODE (comm_dst, comm_tag, comm_size) or COMM_RECV_NODE (comm_src, comm_tag).
absl::Status read_point_to_point(const pb::Node& n, const std::string& file, size_t ranks,
                                 TraceNode* t) {
  const bool send = n.type() == pb::COMM_SEND_NODE;
  t->kind = send ? TraceNode::Kind::kSend : TraceNode::Kind::kRecv;
  const char* peer = send ? "comm_dst" : "comm_src";
  int64_t v = 0;
  if (!int_attr(n, peer, &v) || v < 0 || static_cast<size_t>(v) >= ranks) {
    return bad_node(file, t->id,
                    absl::StrCat(peer, " missing or not a rank in [0, ", ranks - 1, "]"));
  }
  t->peer = static_cast<uint32_t>(v);
  t->tag = int_attr(n, "comm_tag", &v) ? v : 0;
  if (send) {
    if (!int_attr(n, "comm_size", &v) || v <= 0) {
      return bad_node(file, t->id, "send without a positive comm_size");
    }
    t->bytes = static_cast<uint64_t>(v);
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
    case pb::COMM_COLL_NODE:
      if (absl::Status st = read_collective(n, file, ranks, &t); !st.ok()) return st;
      return t;
    case pb::COMM_SEND_NODE:
    case pb::COMM_RECV_NODE:
      if (absl::Status st = read_point_to_point(n, file, ranks, &t); !st.ok()) return st;
      return t;
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
        const auto r = static_cast<uint32_t>(ranks);
        if (absl::Status g = read_groups(n, file, r, groups); !g.ok()) return g;
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
        first_error =
            bad_node(rank_file(prefix, r), g.node,
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
      return absl::InvalidArgumentError(
          absl::StrCat("node ", t.id, ": a point-to-point ",
                       t.kind == TraceNode::Kind::kSend ? "send" : "receive",
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

}  // namespace uet::sim
