// Writing traces in Chakra's protobuf format (sim/trace/chakra.proto): per rank, the metadata
// and then each node, every message preceded by its length as a varint.
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "sim/trace/chakra.pb.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_internal.h"

namespace uet::sim {
namespace {

namespace pb = ::uet::chakra;
using trace_internal::comm_type;

int own_type(TraceNode::Kind k) {
  switch (k) {
    case TraceNode::Kind::kCollective:
      return pb::COMM_COLL_NODE;
    case TraceNode::Kind::kSend:
      return pb::COMM_SEND_NODE;
    case TraceNode::Kind::kRecv:
      return pb::COMM_RECV_NODE;
    case TraceNode::Kind::kCompute:
      break;
  }
  return pb::COMP_NODE;
}

pb::AttributeProto int_attribute(const char* name, int64_t v) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_int64_val(v);
  return a;
}

// The attributes of the node's kind, after is_cpu_op and the extra ones.
void add_kind(const TraceNode& t, pb::Node* n) {
  switch (t.kind) {
    case TraceNode::Kind::kCompute:
      n->set_duration_micros(t.duration_us);
      break;
    case TraceNode::Kind::kCollective:
      *n->add_attr() = int_attribute("comm_type", comm_type(t));
      if (!t.barrier) *n->add_attr() = int_attribute("comm_size", static_cast<int64_t>(t.bytes));
      if (!t.group.empty()) {
        pb::AttributeProto* a = n->add_attr();
        a->set_name("pg_name");
        a->set_string_val(t.group);
      }
      if (t.root >= 0) *n->add_attr() = int_attribute("root_rank", t.root);
      break;
    case TraceNode::Kind::kSend:
    case TraceNode::Kind::kRecv: {
      const bool send = t.kind == TraceNode::Kind::kSend;
      *n->add_attr() = int_attribute(send ? "comm_dst" : "comm_src", t.peer);
      *n->add_attr() = int_attribute("comm_tag", t.tag);
      if (send) *n->add_attr() = int_attribute("comm_size", static_cast<int64_t>(t.bytes));
      break;
    }
  }
}

pb::Node to_proto(const TraceNode& t) {
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
  add_kind(t, &n);
  return n;
}

// One rank's file: the metadata message, then its nodes in order.
absl::Status write_rank(const std::string& file, const std::vector<TraceNode>& nodes) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(absl::StrCat(file, ": cannot open for writing"));
  {
    google::protobuf::io::FileOutputStream raw(fd);
    google::protobuf::io::CodedOutputStream out(&raw);
    pb::GlobalMetadata m;
    m.set_version("0.0.4");
    out.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
    m.SerializeToCodedStream(&out);
    for (const TraceNode& t : nodes) {
      const pb::Node n = to_proto(t);
      out.WriteVarint32(static_cast<uint32_t>(n.ByteSizeLong()));
      n.SerializeToCodedStream(&out);
    }
    if (out.HadError()) {
      ::close(fd);
      return absl::UnavailableError(absl::StrCat(file, ": write failed"));
    }
  }
  if (::close(fd) != 0) return absl::UnavailableError(absl::StrCat(file, ": write failed"));
  return absl::OkStatus();
}

}  // namespace

absl::Status write_chakra(const std::string& prefix, const Trace& trace) {
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    const std::string file = trace_internal::rank_file(prefix, r);
    if (absl::Status st = write_rank(file, trace.ranks[r]); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace uet::sim
