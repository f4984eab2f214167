#include "sim/trace/trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
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

// ASTRA-sim's default communicator: no pg_name, an empty one or "0" is every rank.
bool is_world(const std::string& group) { return group.empty() || group == "0"; }

absl::StatusOr<TraceNode> from_proto(const pb::Node& n, const std::string& file, size_t ranks) {
  TraceNode t;
  t.id = n.id();
  t.name = n.name();
  t.deps.assign(n.data_deps().begin(), n.data_deps().end());
  t.deps.insert(t.deps.end(), n.ctrl_deps().begin(), n.ctrl_deps().end());
  int64_t v = 0;
  switch (static_cast<int>(n.type())) {
    case pb::COMP_NODE:
    case pb::MEM_LOAD_NODE:
    case pb::MEM_STORE_NODE:
    case pb::METADATA_NODE:
      t.kind = TraceNode::Kind::kCompute;
      t.duration_us = n.duration_micros();
      return t;
    case pb::COMM_COLL_NODE: {
      t.kind = TraceNode::Kind::kCollective;
      if (!int_attr(n, "comm_type", &v))
        return bad_node(file, t.id, "collective without comm_type");
      switch (v) {
        case pb::ALL_REDUCE:
          t.collective = Collective::kAllReduce;
          break;
        case pb::ALL_GATHER:
          t.collective = Collective::kAllGather;
          break;
        case pb::REDUCE_SCATTER:
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
                                       "GATHER, SCATTER, REDUCE_SCATTER, BROADCAST, ALL_TO_ALL, "
                                       "BARRIER"));
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
                      absl::StrCat("node type ", static_cast<int>(n.type()),
                                   " is not modelled: COMP, MEM_LOAD, MEM_STORE, METADATA, "
                                   "COMM_COLL, COMM_SEND, COMM_RECV"));
  }
}

absl::StatusOr<std::vector<TraceNode>> read_rank(const std::string& file, int fd, size_t ranks) {
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
    auto nodes = read_rank(rank_file(prefix, r), fds[r], fds.size());  // closes the file
    if (!nodes.ok()) {
      first_error = nodes.status();
      continue;
    }
    t.ranks.push_back(std::move(*nodes));
  }
  if (!first_error.ok()) return first_error;
  return t;
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
        switch (t.kind) {
          case TraceNode::Kind::kCompute:
            n.set_type(pb::COMP_NODE);
            n.set_duration_micros(t.duration_us);
            break;
          case TraceNode::Kind::kCollective: {
            n.set_type(pb::COMM_COLL_NODE);
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
            n.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
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
    if (value.kind_case() != google::protobuf::Value::kListValue) {
      return bad_group("not an array of ranks");
    }
    std::vector<uint32_t> members;
    std::vector<bool> seen(ranks, false);
    for (const google::protobuf::Value& m : value.list_value().values()) {
      const double r = m.kind_case() == google::protobuf::Value::kNumberValue ? m.number_value() : -1;
      if (!(r >= 0 && r < ranks) || r != static_cast<double>(static_cast<uint32_t>(r))) {
        const std::string shown = m.kind_case() == google::protobuf::Value::kNumberValue
                                      ? absl::StrCat(m.number_value())
                                      : std::string("that is not a number");
        return bad_group(
            absl::StrCat("member ", shown, " is not a rank in [0, ", ranks - 1, "]"));
      }
      const auto rank = static_cast<uint32_t>(r);
      if (seen[rank]) return bad_group(absl::StrCat("rank ", rank, " listed twice"));
      seen[rank] = true;
      members.push_back(rank);
    }
    if (members.empty()) return bad_group("no members");
    groups.emplace(name, std::move(members));
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
        ++plan.compute_nodes;
      } else {
        gate[r][i] = task(r, 0);
        done[r][i] = task(r, 0);
      }
    }
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      for (uint64_t d : nodes[i].deps) {
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
  std::vector<Time> ready(total, 0);
  std::vector<uint32_t> queue;
  for (uint32_t i = 0; i < total; ++i)
    if (waiting[i] == 0) queue.push_back(i);
  size_t seen = 0;
  while (!queue.empty()) {
    const uint32_t f = queue.back();
    queue.pop_back();
    ++seen;
    const Time end = ready[f] + (flows[f].compute ? flows[f].start : 0);
    plan.compute_only = std::max(plan.compute_only, end);
    for (uint32_t k = begin[f]; k < begin[f + 1]; ++k) {
      const uint32_t d = deps[k];
      ready[d] = std::max(ready[d], end);
      if (--waiting[d] == 0) queue.push_back(d);
    }
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

}  // namespace uet::sim
