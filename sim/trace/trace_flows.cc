// A trace turned into one flow DAG (sim/trace/trace.h): per node a gate and a done task,
// collectives within their communicators (sim/collective.h), sends matched with receives,
// and the whole played once with a network that takes no time, which refuses a cycle.
#include <algorithm>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sim/trace/chakra.pb.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_internal.h"

namespace uet::sim {
namespace {

namespace pb = ::uet::chakra;
using trace_internal::bad_node;

std::string rank_name(uint32_t r) { return absl::StrCat("rank ", r, " (", r, ".et)"); }

// Per communicator: its members and each member's collective nodes, in file order.
struct Communicator {
  const std::vector<uint32_t>* members = nullptr;
  std::vector<int32_t> position;             // per trace rank: its index, or -1
  std::vector<std::vector<uint32_t>> nodes;  // per member: its collective nodes, in order
};
using Communicators = std::map<std::string, Communicator>;

// The plan being built and what its parts look up.
struct Planner {
  Planner(const Trace& t, const std::vector<uint32_t>& hosts, const TraceOptions& o)
      : trace(t),
        rank_hosts(hosts),
        options(o),
        n(static_cast<uint32_t>(t.ranks.size())),
        gate(n),
        done(n),
        world(n) {
    for (uint32_t r = 0; r < n; ++r) world[r] = r;
  }

  const Trace& trace;
  const std::vector<uint32_t>& rank_hosts;
  const TraceOptions& options;
  uint32_t n;  // ranks
  TracePlan plan;
  // Per rank and node: `gate` starts the node once its own prerequisites are done, `done` is
  // what its dependents wait for (for a compute node the same task, carrying the duration).
  std::vector<std::vector<uint32_t>> gate, done;
  std::vector<uint32_t> world;  // every rank, in order: the default communicator
  std::unordered_map<uint32_t, uint32_t> rank_of_host;

  uint32_t task(uint32_t rank, Time delay) {
    const auto id = static_cast<uint32_t>(plan.flows.size());
    FlowSpec f{id, rank_hosts[rank], rank_hosts[rank], 0, delay, {}};
    f.compute = true;
    plan.flows.push_back(std::move(f));
    return id;
  }
};

// Rank r's tasks: one per compute node, a gate and a done per communication node; each gate
// waits for the done tasks of the node's dependencies.
absl::Status add_rank_tasks(Planner& p, uint32_t r) {
  const std::vector<TraceNode>& nodes = p.trace.ranks[r];
  std::vector<FlowSpec>& flows = p.plan.flows;
  std::unordered_map<uint64_t, uint32_t> index;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    if (!index.emplace(nodes[i].id, i).second) {
      return bad_node(rank_name(r), nodes[i].id, "the id appears twice");
    }
  }
  p.gate[r].resize(nodes.size());
  p.done[r].resize(nodes.size());
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const TraceNode& t = nodes[i];
    if (t.kind == TraceNode::Kind::kCompute) {
      p.gate[r][i] = p.done[r][i] = p.task(r, static_cast<Time>(t.duration_us) * kMicrosecond);
      flows[p.gate[r][i]].stream = stream_of(t);
      ++p.plan.compute_nodes;
    } else {
      p.gate[r][i] = p.task(r, 0);
      p.done[r][i] = p.task(r, 0);
    }
  }
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    std::vector<uint64_t> all = nodes[i].deps;
    all.insert(all.end(), nodes[i].ctrl_deps.begin(), nodes[i].ctrl_deps.end());
    for (uint64_t d : all) {
      const auto it = index.find(d);
      if (it == index.end()) {
        return bad_node(rank_name(r), nodes[i].id,
                        absl::StrCat("depends on node ", d, ", not in the file"));
      }
      if (it->second == i) return bad_node(rank_name(r), nodes[i].id, "depends on itself");
      flows[p.gate[r][i]].after.push_back(p.done[r][it->second]);
    }
  }
  return absl::OkStatus();
}

// The communicator that node t of rank r names first: its members, from the trace's groups.
absl::Status open_communicator(const Planner& p, uint32_t r, const TraceNode& t, Communicator& c) {
  if (t.group.empty()) {
    c.members = &p.world;
  } else if (const auto g = p.trace.groups.find(t.group); g != p.trace.groups.end()) {
    c.members = &g->second;
  } else {
    return bad_node(rank_name(r), t.id,
                    absl::StrCat("pg_name \"", t.group, "\" is not a communicator group",
                                 p.trace.groups.empty() ? " (no groups were given)" : ""));
  }
  c.position.assign(p.n, -1);
  for (uint32_t m = 0; m < c.members->size(); ++m) {
    const uint32_t member = (*c.members)[m];
    if (member >= p.n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "trace: communicator \"", t.group, "\" names rank ", member, ", the trace has ", p.n));
    }
    c.position[member] = static_cast<int32_t>(m);
  }
  c.nodes.resize(c.members->size());
  return absl::OkStatus();
}

// Per communicator, the collective nodes of each member: the k-th node naming it in every
// member's file is one collective over its members, in the communicator's rank order.
absl::StatusOr<Communicators> find_communicators(const Planner& p) {
  Communicators comms;
  for (uint32_t r = 0; r < p.n; ++r) {
    for (uint32_t i = 0; i < p.trace.ranks[r].size(); ++i) {
      const TraceNode& t = p.trace.ranks[r][i];
      if (t.kind != TraceNode::Kind::kCollective) continue;
      auto [it, added] = comms.try_emplace(t.group);
      Communicator& c = it->second;
      if (added) {
        if (absl::Status st = open_communicator(p, r, t, c); !st.ok()) return st;
      }
      if (c.position[r] < 0) {
        return bad_node(rank_name(r), t.id,
                        absl::StrCat("pg_name \"", t.group, "\" does not include rank ", r));
      }
      c.nodes[static_cast<size_t>(c.position[r])].push_back(i);
    }
  }
  return comms;
}

// The k-th collective of communicator c, as every member's file has it. `which` names the
// communicator in messages ("" for every rank).
struct OneCollective {
  const Communicator& c;
  size_t k;
  const std::string& name;
  const std::string& which;
};

// Every member's k-th node is the lead's collective: the same kind, size and root.
absl::Status check_same(const Planner& p, const OneCollective& one) {
  const std::vector<uint32_t>& members = *one.c.members;
  const uint32_t lead = members[0];
  const TraceNode& c0 = p.trace.ranks[lead][one.c.nodes[0][one.k]];
  for (size_t m = 1; m < members.size(); ++m) {
    const TraceNode& t = p.trace.ranks[members[m]][one.c.nodes[m][one.k]];
    if (t.collective != c0.collective || t.barrier != c0.barrier || t.bytes != c0.bytes ||
        t.root != c0.root) {
      return bad_node(rank_name(members[m]), t.id,
                      absl::StrCat("collective #", one.k, one.which, " is ",
                                   std::string(to_string(t.collective)), " of ", t.bytes, " bytes",
                                   t.root >= 0 ? absl::StrCat(" to/from rank ", t.root) : "",
                                   "; rank ", lead, "'s (node ", c0.id, ") is ",
                                   std::string(to_string(c0.collective)), " of ", c0.bytes));
    }
  }
  return absl::OkStatus();
}

// The collective's record in the plan: its members' gate and done tasks.
void record_collective(Planner& p, const OneCollective& one, const TraceNode& c0) {
  const std::vector<uint32_t>& members = *one.c.members;
  TraceCollective& record = p.plan.collective_list.emplace_back();
  record.collective = c0.collective;
  record.barrier = c0.barrier;
  record.bytes = c0.bytes;
  record.group = one.name;
  for (size_t m = 0; m < members.size(); ++m) {
    record.gates.push_back(p.gate[members[m]][one.c.nodes[m][one.k]]);
    record.dones.push_back(p.done[members[m]][one.c.nodes[m][one.k]]);
  }
}

// The collective's spec over the communicator's hosts, with the default algorithm.
absl::StatusOr<CollectiveSpec> collective_spec(const Planner& p, const OneCollective& one,
                                               const TraceNode& c0) {
  const std::vector<uint32_t>& members = *one.c.members;
  CollectiveSpec spec;
  spec.collective = c0.collective;
  spec.algo = collective_algos(c0.collective).front();
  spec.hosts.resize(members.size());
  for (size_t m = 0; m < members.size(); ++m) spec.hosts[m] = p.rank_hosts[members[m]];
  spec.bytes = c0.barrier ? uint64_t{kCollectiveElementBytes} * members.size() : c0.bytes;
  spec.channels = p.options.channels;
  spec.chunk_bytes = p.options.chunk_bytes;
  spec.slots = p.options.slots;
  if (c0.root >= 0) {
    const int32_t at = one.c.position[static_cast<size_t>(c0.root)];
    if (at < 0) {
      return bad_node(
          rank_name(members[0]), c0.id,
          absl::StrCat("root_rank ", c0.root, " is not in the communicator", one.which));
    }
    spec.root = static_cast<uint32_t>(at);
  }
  return spec;
}

// The collective's flows appended from `base` on: each starts after its sender's gate, and
// both ends' done tasks wait for it. A member that neither sends nor receives (no algorithm
// has one) would still wait for its own prerequisites.
void link_collective(Planner& p, const OneCollective& one, uint32_t base) {
  std::vector<FlowSpec>& flows = p.plan.flows;
  const Communicator& c = one.c;
  for (uint32_t id = base; id < flows.size(); ++id) {
    const uint32_t s = p.rank_of_host[flows[id].src], d = p.rank_of_host[flows[id].dst];
    const uint32_t si = c.nodes[static_cast<size_t>(c.position[s])][one.k];
    const uint32_t di = c.nodes[static_cast<size_t>(c.position[d])][one.k];
    flows[id].after.push_back(p.gate[s][si]);
    flows[p.done[s][si]].after.push_back(id);
    flows[p.done[d][di]].after.push_back(id);
    p.plan.network_bytes += flows[id].bytes;
  }
  const std::vector<uint32_t>& members = *c.members;
  for (size_t m = 0; m < members.size(); ++m) {
    const uint32_t i = c.nodes[m][one.k];
    if (flows[p.done[members[m]][i]].after.empty()) {
      flows[p.done[members[m]][i]].after.push_back(p.gate[members[m]][i]);
    }
  }
}

absl::Status add_collective(Planner& p, const OneCollective& one) {
  const std::vector<uint32_t>& members = *one.c.members;
  const uint32_t lead = members[0];
  const TraceNode& c0 = p.trace.ranks[lead][one.c.nodes[0][one.k]];
  if (absl::Status st = check_same(p, one); !st.ok()) return st;
  record_collective(p, one, c0);
  if (members.size() == 1) {  // a communicator of one rank: nothing crosses the network
    const uint32_t i = one.c.nodes[0][one.k];
    p.plan.flows[p.done[lead][i]].after.push_back(p.gate[lead][i]);
    ++p.plan.collectives;
    return absl::OkStatus();
  }
  absl::StatusOr<CollectiveSpec> spec = collective_spec(p, one, c0);
  if (!spec.ok()) return spec.status();
  auto flows = collective_flows(*spec);
  if (!flows.ok()) return bad_node(rank_name(lead), c0.id, std::string(flows.status().message()));
  const auto base = static_cast<uint32_t>(p.plan.flows.size());
  append_flows(p.plan.flows, std::move(flows->flows));
  link_collective(p, one, base);
  ++p.plan.collectives;
  return absl::OkStatus();
}

// Every member has as many collective nodes of the communicator as its first one, and each
// k-th of them becomes one collective.
absl::Status add_communicator(Planner& p, const std::string& name, const Communicator& c) {
  const std::vector<uint32_t>& members = *c.members;
  const uint32_t lead = members[0];
  const std::string which = name.empty() ? std::string("") : absl::StrCat(" of \"", name, "\"");
  for (size_t m = 1; m < members.size(); ++m) {
    if (c.nodes[m].size() != c.nodes[0].size()) {
      return absl::InvalidArgumentError(absl::StrCat("trace: ", rank_name(members[m]), " has ",
                                                     c.nodes[m].size(), " collective nodes", which,
                                                     ", rank ", lead, " has ", c.nodes[0].size()));
    }
  }
  for (size_t k = 0; k < c.nodes[0].size(); ++k) {
    if (absl::Status st = add_collective(p, OneCollective{c, k, name, which}); !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

// Point to point: the i-th send from s to d with a tag meets the i-th receive of it.
using P2pKey = std::tuple<uint32_t, uint32_t, int64_t>;  // (sender, receiver, tag)
using P2pNodes = std::map<P2pKey, std::vector<uint32_t>>;

absl::Status collect_point_to_point(const Planner& p, P2pNodes& sends, P2pNodes& recvs) {
  for (uint32_t r = 0; r < p.n; ++r) {
    for (uint32_t i = 0; i < p.trace.ranks[r].size(); ++i) {
      const TraceNode& t = p.trace.ranks[r][i];
      if (t.kind == TraceNode::Kind::kSend) {
        if (t.peer == r) return bad_node(rank_name(r), t.id, "sends to its own rank");
        sends[{r, t.peer, t.tag}].push_back(i);
      } else if (t.kind == TraceNode::Kind::kRecv) {
        recvs[{t.peer, r, t.tag}].push_back(i);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status add_point_to_point(Planner& p) {
  P2pNodes sends, recvs;
  if (absl::Status st = collect_point_to_point(p, sends, recvs); !st.ok()) return st;
  const Trace& trace = p.trace;
  std::vector<FlowSpec>& flows = p.plan.flows;
  for (const auto& [key, list] : sends) {
    const auto [s, d, tag] = key;
    const auto it = recvs.find(key);
    const size_t matched = it == recvs.end() ? 0 : it->second.size();
    if (matched != list.size()) {
      const uint32_t extra = list[std::min(matched, list.size() - 1)];
      return bad_node(rank_name(s), trace.ranks[s][extra].id,
                      absl::StrCat(list.size(), " sends to rank ", d, " with tag ", tag, ", ",
                                   matched, " receives of them in rank ", d));
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const uint32_t si = list[i], ri = it->second[i];
      const auto id = static_cast<uint32_t>(flows.size());
      const uint64_t bytes = trace.ranks[s][si].bytes;
      flows.push_back(
          FlowSpec{id, p.rank_hosts[s], p.rank_hosts[d], bytes, 0, {p.gate[s][si], p.gate[d][ri]}});
      flows[p.done[s][si]].after.push_back(id);
      flows[p.done[d][ri]].after.push_back(id);
      p.plan.network_bytes += bytes;
      ++p.plan.p2p;
    }
  }
  for (const auto& [key, list] : recvs) {
    if (sends.count(key) == 0) {
      const auto [s, d, tag] = key;
      return bad_node(
          rank_name(d), trace.ranks[d][list.front()].id,
          absl::StrCat("receives from rank ", s, " with tag ", tag, ", which sends nothing so"));
    }
  }
  return absl::OkStatus();
}

// Played as the A/B runner plays the plan (bench/ab_player.cc): flows take no time, a
// compute task its duration, one at a time on its stream, lowest ready id first. Returns how
// many flows and tasks finished; `waiting` keeps each one's unfinished prerequisites and
// `length` the last end.
size_t play_without_network(const std::vector<FlowSpec>& flows, std::vector<uint32_t>& waiting,
                            Time* length) {
  const FlowDependents next = flow_dependents(flows);
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
  for (uint32_t i = 0; i < flows.size(); ++i)
    if (waiting[i] == 0) launch(i, 0);
  size_t seen = 0;
  while (!events.empty()) {
    const auto [end, f] = events.top();
    events.pop();
    ++seen;
    *length = std::max(*length, end);
    for (uint32_t k = next.begin[f]; k < next.begin[f + 1]; ++k)
      if (--waiting[next.ids[k]] == 0) launch(next.ids[k], end);
    if (flows[f].compute && flows[f].stream != 0) run_next(streams[stream_key(f)], end);
  }
  return seen;
}

// A cycle (within a rank, or through sends and collectives across ranks) would never finish:
// refused. The same pass gives the step's length with a network that takes no time.
absl::Status play(Planner& p) {
  const std::vector<FlowSpec>& flows = p.plan.flows;
  std::vector<uint32_t> waiting(flows.size());
  for (const FlowSpec& f : flows) waiting[f.id] = static_cast<uint32_t>(f.after.size());
  if (play_without_network(flows, waiting, &p.plan.compute_only) == flows.size()) {
    return absl::OkStatus();
  }
  for (uint32_t r = 0; r < p.n; ++r) {
    for (uint32_t i = 0; i < p.trace.ranks[r].size(); ++i) {
      if (waiting[p.gate[r][i]] != 0) {
        return bad_node(rank_name(r), p.trace.ranks[r][i].id,
                        "waits on a dependency cycle (within the rank, or through sends and "
                        "collectives of other ranks)");
      }
    }
  }
  return absl::InvalidArgumentError("trace: a dependency cycle");
}

}  // namespace

absl::StatusOr<TracePlan> trace_flows(const Trace& trace, const std::vector<uint32_t>& rank_hosts,
                                      const TraceOptions& options) {
  const auto n = static_cast<uint32_t>(trace.ranks.size());
  if (n < 2 || rank_hosts.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("trace: ", n, " ranks, ", rank_hosts.size(),
                                                   " hosts given (one host per rank, at least 2)"));
  }
  Planner p(trace, rank_hosts, options);
  for (uint32_t r = 0; r < n; ++r) {
    if (absl::Status st = add_rank_tasks(p, r); !st.ok()) return st;
  }
  for (uint32_t r = 0; r < n; ++r) p.rank_of_host[rank_hosts[r]] = r;
  absl::StatusOr<Communicators> comms = find_communicators(p);
  if (!comms.ok()) return comms.status();
  for (const auto& [name, c] : *comms) {
    if (absl::Status st = add_communicator(p, name, c); !st.ok()) return st;
  }
  if (absl::Status st = add_point_to_point(p); !st.ok()) return st;
  if (p.plan.flows.size() > kMaxWorkloadFlows) {
    return absl::InvalidArgumentError(absl::StrCat("trace: ", p.plan.flows.size(),
                                                   " flows and tasks, at most ", kMaxWorkloadFlows,
                                                   ": raise the chunk size"));
  }
  if (absl::Status st = play(p); !st.ok()) return st;
  return std::move(p.plan);
}

uint8_t stream_of(const TraceNode& t) {
  if (t.cpu) return kCpuStream;
  if (t.chakra_type == pb::INVALID_NODE) return 0;  // no time, no resource (ASTRA-sim)
  if (t.chakra_type == pb::MEM_LOAD_NODE || t.chakra_type == pb::MEM_STORE_NODE)
    return kMemoryStream;
  return kGpuStream;
}

}  // namespace uet::sim
