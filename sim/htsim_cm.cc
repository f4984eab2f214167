#include "sim/htsim_cm.h"

#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace uet::sim {
namespace {

enum class TriggerKind { kOneshot, kMultishot, kBarrier };

struct Trigger {
  TriggerKind kind = TriggerKind::kOneshot;
  std::optional<uint64_t> count;
  size_t line = 0;
};

}  // namespace

absl::StatusOr<ConnectionMatrix> parse_connection_matrix(std::string_view text,
                                                         std::string_view where) {
  ConnectionMatrix cm;
  std::optional<uint64_t> nodes, connections, triggers_declared;
  std::map<uint64_t, Trigger> triggers;
  std::map<uint64_t, std::vector<uint32_t>> fired_by;  // trigger -> flows that fire it
  std::vector<std::pair<uint32_t, uint64_t>> waits;    // (flow, trigger it waits for)
  std::vector<size_t> flow_line;
  size_t line_no = 0;

  auto error = [&](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(where), ":", line_no, ": ",
                                                   std::string(what)));
  };

  // Debian's Abseil has its own string_view: split and parse in it.
  const absl::string_view body(text.data(), text.size());
  for (absl::string_view raw : absl::StrSplit(body, '\n')) {
    ++line_no;
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> tok = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    auto number = [&](size_t i, uint64_t* out) {
      return i < tok.size() && absl::SimpleAtoi(tok[i], out);
    };

    if (tok[0] == "Nodes" || tok[0] == "Connections" || tok[0] == "Triggers" ||
        tok[0] == "Failures") {
      uint64_t v = 0;
      if (tok.size() != 2 || !number(1, &v)) {
        return error(absl::StrCat(std::string(tok[0]), " needs one non-negative integer"));
      }
      if (tok[0] == "Nodes") nodes = v;
      if (tok[0] == "Connections") connections = v;
      if (tok[0] == "Triggers") triggers_declared = v;
      if (tok[0] == "Failures" && v != 0) {
        return error("failures in connection matrices are not supported; use uet-ab's link "
                     "failure options");
      }
      continue;
    }
    if (tok[0] == "failure") {
      return error("failures in connection matrices are not supported; use uet-ab's link "
                   "failure options");
    }
    if (tok[0] == "trigger") {
      // trigger id K oneshot|multishot|barrier [count N]
      uint64_t id = 0;
      if (tok.size() < 4 || tok[1] != "id" || !number(2, &id)) {
        return error("expected 'trigger id K oneshot|multishot|barrier [count N]'");
      }
      Trigger t;
      t.line = line_no;
      if (tok[3] == "oneshot") {
        t.kind = TriggerKind::kOneshot;
      } else if (tok[3] == "multishot") {
        t.kind = TriggerKind::kMultishot;
      } else if (tok[3] == "barrier") {
        t.kind = TriggerKind::kBarrier;
      } else {
        return error(absl::StrCat("trigger type '", std::string(tok[3]),
                                  "' unknown: oneshot, multishot or barrier"));
      }
      if (tok.size() == 6 && tok[4] == "count") {
        uint64_t n = 0;
        if (!number(5, &n) || n == 0) return error("trigger count must be a positive integer");
        t.count = n;
      } else if (tok.size() != 4) {
        return error("expected 'trigger id K oneshot|multishot|barrier [count N]'");
      }
      if (!triggers.emplace(id, t).second) {
        return error(absl::StrCat("trigger ", id, " defined twice"));
      }
      continue;
    }

    // A flow: "S->D" then key/value pairs.
    const size_t arrow = tok[0].find("->");
    uint64_t src = 0, dst = 0;
    if (arrow == absl::string_view::npos || !absl::SimpleAtoi(tok[0].substr(0, arrow), &src) ||
        !absl::SimpleAtoi(tok[0].substr(arrow + 2), &dst)) {
      return error(absl::StrCat("expected a flow 'SRC->DST ...', a header (Nodes, Connections, "
                                "Triggers, Failures) or a trigger, got '",
                                std::string(tok[0]), "'"));
    }
    if (cm.flows.size() >= kMaxWorkloadFlows) return error("too many flows");
    if (src == dst) return error(absl::StrCat("flow from node ", src, " to itself"));
    const auto index = static_cast<uint32_t>(cm.flows.size());
    FlowSpec f;
    f.id = index;
    f.src = static_cast<uint32_t>(std::min<uint64_t>(src, UINT32_MAX));
    f.dst = static_cast<uint32_t>(std::min<uint64_t>(dst, UINT32_MAX));
    uint64_t htsim_id = index;
    bool have_size = false;
    for (size_t i = 1; i < tok.size(); i += 2) {
      const absl::string_view key = tok[i];
      if (i + 1 >= tok.size()) return error(absl::StrCat("'", std::string(key), "' has no value"));
      const absl::string_view value = tok[i + 1];
      uint64_t v = 0;
      if (key != "start" && key != "id" && key != "size" && key != "prio" && key != "trigger" &&
          key != "send_done_trigger" && key != "recv_done_trigger") {
        return error(absl::StrCat("unknown key '", std::string(key),
                                  "': id, start, size, prio, trigger, send_done_trigger, "
                                  "recv_done_trigger"));
      }
      if (key == "start") {
        double us = 0;
        if (!absl::SimpleAtod(value, &us) || !(us >= 0) || us > 1e9) {
          return error("start must be a time in microseconds, 0..1e9");
        }
        f.start = static_cast<Time>(std::floor(us)) * kMicrosecond;
        continue;
      }
      if (!absl::SimpleAtoi(value, &v)) {
        return error(absl::StrCat("'", std::string(key), "' needs a non-negative integer, got '",
                                  std::string(value), "'"));
      }
      if (key == "id") {
        htsim_id = v;
      } else if (key == "size") {
        if (v == 0) return error("size must be at least 1 byte");
        f.bytes = v;
        have_size = true;
      } else if (key == "prio") {
        if (v != 0) return error("prio other than 0 is not supported");
      } else if (key == "trigger") {
        waits.emplace_back(index, v);
      } else {  // send_done_trigger, recv_done_trigger
        fired_by[v].push_back(index);
      }
    }
    if (!have_size) return error("flow has no size");
    cm.flows.push_back(std::move(f));
    cm.htsim_ids.push_back(htsim_id);
    flow_line.push_back(line_no);
  }

  line_no = 0;  // whole-file checks
  if (!nodes) return error("no 'Nodes N' line");
  if (*nodes < 2 || *nodes > kMaxWorkloadHosts) {
    return error(absl::StrCat("Nodes ", *nodes, " out of range: 2..", kMaxWorkloadHosts));
  }
  cm.nodes = static_cast<uint32_t>(*nodes);
  if (connections && *connections != cm.flows.size()) {
    return error(absl::StrCat("'Connections ", *connections, "' but ", cm.flows.size(),
                              " flow lines"));
  }
  if (triggers_declared && *triggers_declared != triggers.size()) {
    return error(absl::StrCat("'Triggers ", *triggers_declared, "' but ", triggers.size(),
                              " trigger lines"));
  }
  for (size_t i = 0; i < cm.flows.size(); ++i) {
    const FlowSpec& f = cm.flows[i];
    if (f.src >= cm.nodes || f.dst >= cm.nodes) {
      line_no = flow_line[i];
      return error(absl::StrCat("node out of range: Nodes is ", cm.nodes));
    }
  }
  for (const auto& [flow, id] : waits) {
    line_no = flow_line[flow];
    const auto t = triggers.find(id);
    if (t == triggers.end()) return error(absl::StrCat("trigger ", id, " is not defined"));
    const auto by = fired_by.find(id);
    const size_t n = by == fired_by.end() ? 0 : by->second.size();
    if (n == 0) return error(absl::StrCat("trigger ", id, " is never fired: the flow would never start"));
    if (t->second.kind == TriggerKind::kBarrier) {
      if (t->second.count && *t->second.count != n) {
        line_no = t->second.line;
        return error(absl::StrCat("barrier trigger ", id, " has count ", *t->second.count,
                                  " but ", n, " flows fire it"));
      }
    } else if (n != 1) {
      line_no = t->second.line;
      return error(absl::StrCat("oneshot/multishot trigger ", id, " is fired by ", n,
                                " flows; only one is supported (use a barrier)"));
    }
    FlowSpec& f = cm.flows[flow];
    f.start = 0;  // a triggered flow starts when its trigger fires
    for (uint32_t pre : by->second) {
      if (pre == flow) return error("a flow waits for a trigger it fires itself");
      f.after.push_back(pre);
    }
  }
  return cm;
}

absl::StatusOr<ConnectionMatrix> load_connection_matrix(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return parse_connection_matrix(text.str(), path);
}

}  // namespace uet::sim
