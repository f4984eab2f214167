#include "sim/htsim_cm.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/htsim_text.h"

namespace uet::sim {
namespace {

using Tokens = std::vector<absl::string_view>;

enum class TriggerKind { kOneshot, kMultishot, kBarrier };

struct Trigger {
  TriggerKind kind = TriggerKind::kOneshot;
  std::optional<uint64_t> count;
  size_t line = 0;
};

// What the lines say, before the whole-file checks tie flows and triggers together.
struct CmLines {
  ConnectionMatrix cm;
  std::optional<uint64_t> nodes, connections, triggers_declared;
  std::map<uint64_t, Trigger> triggers;
  std::map<uint64_t, std::vector<uint32_t>> fired_by;  // trigger -> flows that fire it
  std::vector<std::pair<uint32_t, uint64_t>> waits;    // (flow, trigger it waits for)
  std::vector<size_t> flow_line;
};

// One flow line as its keys fill it in.
struct FlowLine {
  FlowSpec flow;
  uint64_t htsim_id = 0;
  bool have_size = false;
};

constexpr std::string_view kNoFailures =
    "failures in connection matrices are not supported; use uet-ab's link failure options";
constexpr std::string_view kTriggerShape =
    "expected 'trigger id K oneshot|multishot|barrier [count N]'";

// Nodes N, Connections N, Triggers N or Failures 0.
absl::Status parse_header(const HtsimLines& in, CmLines& s) {
  const Tokens& tok = in.tokens();
  uint64_t v = 0;
  if (tok.size() != 2 || !absl::SimpleAtoi(tok[1], &v)) {
    return in.error(absl::StrCat(std::string(tok[0]), " needs one non-negative integer"));
  }
  if (tok[0] == "Nodes") s.nodes = v;
  if (tok[0] == "Connections") s.connections = v;
  if (tok[0] == "Triggers") s.triggers_declared = v;
  if (tok[0] == "Failures" && v != 0) return in.error(kNoFailures);
  return absl::OkStatus();
}

// trigger id K oneshot|multishot|barrier [count N]
absl::Status parse_trigger(const HtsimLines& in, CmLines& s) {
  const Tokens& tok = in.tokens();
  uint64_t id = 0;
  if (tok.size() < 4 || tok[1] != "id" || !absl::SimpleAtoi(tok[2], &id)) {
    return in.error(kTriggerShape);
  }
  Trigger t;
  t.line = in.line();
  if (tok[3] == "oneshot") {
    t.kind = TriggerKind::kOneshot;
  } else if (tok[3] == "multishot") {
    t.kind = TriggerKind::kMultishot;
  } else if (tok[3] == "barrier") {
    t.kind = TriggerKind::kBarrier;
  } else {
    return in.error(absl::StrCat("trigger type '", std::string(tok[3]),
                                 "' unknown: oneshot, multishot or barrier"));
  }
  if (tok.size() == 6 && tok[4] == "count") {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(tok[5], &n) || n == 0) {
      return in.error("trigger count must be a positive integer");
    }
    t.count = n;
  } else if (tok.size() != 4) {
    return in.error(kTriggerShape);
  }
  if (!s.triggers.emplace(id, t).second) {
    return in.error(absl::StrCat("trigger ", id, " defined twice"));
  }
  return absl::OkStatus();
}

bool is_flow_key(absl::string_view key) {
  return key == "start" || key == "id" || key == "size" || key == "prio" || key == "trigger" ||
         key == "send_done_trigger" || key == "recv_done_trigger";
}

// One "key value" pair of a flow line.
absl::Status parse_flow_key(const HtsimLines& in, absl::string_view key, absl::string_view value,
                            FlowLine& fl, CmLines& s) {
  if (!is_flow_key(key)) {
    return in.error(absl::StrCat("unknown key '", std::string(key),
                                 "': id, start, size, prio, trigger, send_done_trigger, "
                                 "recv_done_trigger"));
  }
  if (key == "start") {
    double us = 0;
    if (!absl::SimpleAtod(value, &us) || !(us >= 0) || us > 1e9) {
      return in.error("start must be a time in microseconds, 0..1e9");
    }
    fl.flow.start = static_cast<Time>(std::floor(us)) * kMicrosecond;
    return absl::OkStatus();
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(value, &v)) {
    return in.error(absl::StrCat("'", std::string(key), "' needs a non-negative integer, got '",
                                 std::string(value), "'"));
  }
  if (key == "id") {
    fl.htsim_id = v;
  } else if (key == "size") {
    if (v == 0) return in.error("size must be at least 1 byte");
    fl.flow.bytes = v;
    fl.have_size = true;
  } else if (key == "prio") {
    if (v != 0) return in.error("prio other than 0 is not supported");
  } else if (key == "trigger") {
    s.waits.emplace_back(fl.flow.id, v);
  } else {  // send_done_trigger, recv_done_trigger
    s.fired_by[v].push_back(fl.flow.id);
  }
  return absl::OkStatus();
}

// A flow: "S->D" then key/value pairs.
absl::Status parse_flow(const HtsimLines& in, CmLines& s) {
  const Tokens& tok = in.tokens();
  const size_t arrow = tok[0].find("->");
  uint64_t src = 0, dst = 0;
  if (arrow == absl::string_view::npos || !absl::SimpleAtoi(tok[0].substr(0, arrow), &src) ||
      !absl::SimpleAtoi(tok[0].substr(arrow + 2), &dst)) {
    return in.error(
        absl::StrCat("expected a flow 'SRC->DST ...', a header (Nodes, Connections, "
                     "Triggers, Failures) or a trigger, got '",
                     std::string(tok[0]), "'"));
  }
  if (s.cm.flows.size() >= kMaxWorkloadFlows) return in.error("too many flows");
  if (src == dst) return in.error(absl::StrCat("flow from node ", src, " to itself"));
  const auto index = static_cast<uint32_t>(s.cm.flows.size());
  FlowLine fl;
  fl.flow.id = index;
  fl.flow.src = static_cast<uint32_t>(std::min<uint64_t>(src, UINT32_MAX));
  fl.flow.dst = static_cast<uint32_t>(std::min<uint64_t>(dst, UINT32_MAX));
  fl.htsim_id = index;
  for (size_t i = 1; i < tok.size(); i += 2) {
    if (i + 1 >= tok.size()) {
      return in.error(absl::StrCat("'", std::string(tok[i]), "' has no value"));
    }
    if (absl::Status st = parse_flow_key(in, tok[i], tok[i + 1], fl, s); !st.ok()) return st;
  }
  if (!fl.have_size) return in.error("flow has no size");
  s.cm.flows.push_back(std::move(fl.flow));
  s.cm.htsim_ids.push_back(fl.htsim_id);
  s.flow_line.push_back(in.line());
  return absl::OkStatus();
}

absl::Status parse_line(const HtsimLines& in, CmLines& s) {
  const absl::string_view first = in.tokens()[0];
  if (first == "Nodes" || first == "Connections" || first == "Triggers" || first == "Failures") {
    return parse_header(in, s);
  }
  if (first == "failure") return in.error(kNoFailures);
  if (first == "trigger") return parse_trigger(in, s);
  return parse_flow(in, s);
}

// The headers against what the lines hold; every flow's nodes within Nodes.
absl::Status check_counts(const HtsimLines& in, CmLines& s) {
  ConnectionMatrix& cm = s.cm;
  if (!s.nodes) return in.error_at(0, "no 'Nodes N' line");
  if (*s.nodes < 2 || *s.nodes > kMaxWorkloadHosts) {
    return in.error_at(0,
                       absl::StrCat("Nodes ", *s.nodes, " out of range: 2..", kMaxWorkloadHosts));
  }
  cm.nodes = static_cast<uint32_t>(*s.nodes);
  if (s.connections && *s.connections != cm.flows.size()) {
    return in.error_at(
        0, absl::StrCat("'Connections ", *s.connections, "' but ", cm.flows.size(), " flow lines"));
  }
  if (s.triggers_declared && *s.triggers_declared != s.triggers.size()) {
    return in.error_at(0, absl::StrCat("'Triggers ", *s.triggers_declared, "' but ",
                                       s.triggers.size(), " trigger lines"));
  }
  for (size_t i = 0; i < cm.flows.size(); ++i) {
    const FlowSpec& f = cm.flows[i];
    if (f.src >= cm.nodes || f.dst >= cm.nodes) {
      return in.error_at(s.flow_line[i], absl::StrCat("node out of range: Nodes is ", cm.nodes));
    }
  }
  return absl::OkStatus();
}

// Each wait becomes prerequisites: the flows that fire the trigger it waits for.
absl::Status resolve_triggers(const HtsimLines& in, CmLines& s) {
  for (const auto& [flow, id] : s.waits) {
    const size_t line = s.flow_line[flow];
    const auto t = s.triggers.find(id);
    if (t == s.triggers.end()) {
      return in.error_at(line, absl::StrCat("trigger ", id, " is not defined"));
    }
    const auto by = s.fired_by.find(id);
    const size_t n = by == s.fired_by.end() ? 0 : by->second.size();
    if (n == 0) {
      return in.error_at(
          line, absl::StrCat("trigger ", id, " is never fired: the flow would never start"));
    }
    const Trigger& trigger = t->second;
    if (trigger.kind == TriggerKind::kBarrier) {
      if (trigger.count && *trigger.count != n) {
        return in.error_at(trigger.line,
                           absl::StrCat("barrier trigger ", id, " has count ", *trigger.count,
                                        " but ", n, " flows fire it"));
      }
    } else if (n != 1) {
      return in.error_at(trigger.line,
                         absl::StrCat("oneshot/multishot trigger ", id, " is fired by ", n,
                                      " flows; only one is supported (use a barrier)"));
    }
    FlowSpec& f = s.cm.flows[flow];
    f.start = 0;  // a triggered flow starts when its trigger fires
    for (uint32_t pre : by->second) {
      if (pre == flow) return in.error_at(line, "a flow waits for a trigger it fires itself");
      f.after.push_back(pre);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ConnectionMatrix> parse_connection_matrix(std::string_view text,
                                                         std::string_view where) {
  HtsimLines in(text, where, HtsimLines::Comments::kWholeLine);
  CmLines s;
  while (in.next()) {
    if (absl::Status st = parse_line(in, s); !st.ok()) return st;
  }
  if (absl::Status st = check_counts(in, s); !st.ok()) return st;
  if (absl::Status st = resolve_triggers(in, s); !st.ok()) return st;
  return std::move(s.cm);
}

absl::StatusOr<ConnectionMatrix> load_connection_matrix(const std::string& path) {
  absl::StatusOr<std::string> text = read_htsim_file(path);
  if (!text.ok()) return text.status();
  return parse_connection_matrix(*text, path);
}

}  // namespace uet::sim
