// A fabric split over processes (sim/partition.h): which ports' peers another rank runs, the
// records a port's events for them travel as, and their checks on arrival. Frames reach
// send_remote only at a cut port; the per-event path is in network.cc.
#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/network.h"

namespace uet::sim {

namespace {
// An event for another rank's port, as its outbox carries it: only what that rank needs, no
// padding. Every record starts with its time and a word (the port it is for, 24 bits; its
// kind); then by kind (a frame's class travels in its FrameMeta):
//   arrival:  the key's low 24 bits, wire_len, len, the FrameMeta (16 bytes), `len` bytes;
//   PFC:      the key's low 24 bits, b (priority | pause << 8);
//   call:     the whole key, the cookie, the callback's number.
// An arrival's or a PFC frame's key names the port that sent it (Network::event_key), the
// other end of the link: the receiver knows that port, so only the counter travels. Both
// ranks run the same build (the caller checks), so fields are in this machine's byte order.
constexpr size_t kCommonBytes = 8 + 4;
constexpr size_t kArriveBytes = kCommonBytes + 4 + 4 + 4 + 16;
constexpr size_t kPfcBytes = kCommonBytes + 4 + 4;
constexpr size_t kCallBytes = kCommonBytes + 8 + 4 + 4;
constexpr uint32_t kPortBits = 24;
static_assert(kMaxPorts == 1u << kPortBits);
constexpr uint64_t kCounterMask = (uint64_t{1} << 24) - 1;

template <typename T>
uint8_t* put(uint8_t* at, T v) noexcept {
  std::memcpy(at, &v, sizeof(v));
  return at + sizeof(v);
}
template <typename T>
const uint8_t* get(const uint8_t* at, T& v) noexcept {
  std::memcpy(&v, at, sizeof(v));
  return at + sizeof(v);
}
}  // namespace

void Network::schedule_at_host(uint32_t host, Time at, Scheduled* target, uint32_t cookie) {
  if (owns_host(host)) return schedule(at, target, cookie);
  // The record names the host (its rank checks it runs it) and the callback by number.
  const uint32_t index = register_callback(target);
  send_remote(hosts_[host].port, std::max(at, now_), call_key(index, cookie), kCall, cookie,
              kNoFrame, index);
}

void Network::send_remote(uint32_t port, Time at, uint64_t key, uint8_t kind, uint32_t b,
                          FrameId f, uint32_t callback) {
  sent_.push_back({at, key, port, b, kind == kCall ? callback : f, kind});
  earliest_sent_ = std::min(earliest_sent_, at);
  ++remote_records_;
}

std::vector<std::vector<uint8_t>>& Network::outboxes() {
  // A few events ahead, what writing one reads: its port's node, its frame, metadata, bytes.
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < sent_.size(); ++i) {
    if (i + kAhead < sent_.size()) {
      const RemoteEvent& e = sent_[i + kAhead];
      __builtin_prefetch(&port_node_[e.port]);
      if (e.kind == kArrive) {
        const uint8_t* frame = pool_.frame_hint(e.frame);  // its slot, then its bytes
        __builtin_prefetch(frame);
        __builtin_prefetch(frame + 64);
        __builtin_prefetch(pool_.meta_hint(e.frame));
      }
    }
    write_out(sent_[i], outboxes_[rank_of_node_[port_node_[sent_[i].port]]]);
  }
  sent_.clear();
  earliest_sent_ = kNever;
  return outboxes_;
}

void Network::write_out(const RemoteEvent& e, std::vector<uint8_t>& out) {
  uint8_t rec[kArriveBytes];
  uint8_t* at = put(rec, e.time);
  const Frame frame = e.kind == kArrive ? pool_.view(e.frame) : Frame{};
  const Frame* fr = e.kind == kArrive ? &frame : nullptr;
  at = put(at, e.port | uint32_t{e.kind} << kPortBits);
  if (e.kind == kCall) {
    at = put(put(put(at, e.key), e.b), e.frame);
  } else {
    at = put(at, static_cast<uint32_t>(e.key & kCounterMask));
    if (fr == nullptr) {
      at = put(at, e.b);
    } else {
      at = put(put(at, fr->wire_len), fr->len);
      std::memcpy(at, &meta(e.frame), sizeof(FrameMeta));
      at += sizeof(FrameMeta);
    }
  }
  out.insert(out.end(), rec, at);
  if (fr != nullptr) {
    out.insert(out.end(), fr->data, fr->data + fr->len);
    drop(e.frame);
  }
}

absl::Status Network::set_partition(std::vector<uint16_t> rank_of_node, uint16_t rank,
                                    uint16_t ranks) {
  if (!finalized_) return absl::FailedPreconditionError("set_partition: finalize() first");
  if (!rank_of_node_.empty()) {
    return absl::FailedPreconditionError(
        "set_partition: already split (another rank's ports are no longer stored here)");
  }
  if (rank_of_node.size() != nodes_.size() || ranks == 0 || rank >= ranks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "set_partition: ", rank_of_node.size(), " ranks for ", nodes_.size(), " nodes, rank ",
        rank, " of ", ranks));
  }
  for (uint16_t r : rank_of_node) {
    if (r >= ranks) {
      return absl::InvalidArgumentError(
          absl::StrCat("set_partition: a node on rank ", r, " of ", ranks));
    }
  }
  rank_of_node_ = std::move(rank_of_node);
  rank_ = rank;
  ranks_ = ranks;
  outboxes_.assign(ranks, {});
  if (ports_.empty()) {  // NetworkConfig::ports_at_partition: made here, this rank's only
    store_ports();
    return absl::OkStatus();
  }
  // Only this rank's ports keep their storage; the others' pages are never touched again.
  decltype(ports_) own;
  own.resize(ports_.size());  // the kernel's zero pages, not resident until written
  for (uint32_t p = 0; p < ports_.size(); ++p) {
    if (!owns_port(p)) continue;
    Port& mine = *std::construct_at(&own[p], ports_[p]);
    mine.remote = rank_of_node_[port_node_[p]] != rank_of_node_[port_node_[peer_of(p)]];
    update_plain(mine);
  }
  ports_.swap(own);
  return absl::OkStatus();
}

absl::Status Network::deliver_remote(std::span<const uint8_t> records) {
  size_t at = 0;
  while (at < records.size()) {
    if (absl::Status s = deliver_one(records, at); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The record at `at` scheduled, and `at` moved past it; or why not.
absl::Status Network::deliver_one(std::span<const uint8_t> records, size_t& at) {
  const size_t left = records.size() - at;
  auto cut = [&] {
    return absl::DataLossError(absl::StrCat("deliver_remote: a record cut at byte ", at));
  };
  if (left < kCommonBytes) return cut();
  Time time;
  uint32_t word;
  const uint8_t* p = get(get(records.data() + at, time), word);
  const uint32_t port = word & (kMaxPorts - 1);
  const uint32_t kind = word >> kPortBits;
  const size_t need = kind == kArrive ? kArriveBytes : kind == kPfc ? kPfcBytes : kCallBytes;
  if (left < need) return cut();
  if (port >= ports_.size() || !owns_port(port) || (kind != kCall && !ports_[port].remote)) {
    return absl::DataLossError(
        absl::StrCat("deliver_remote: port ", port, " is not a cut port of rank ", rank_));
  }
  if (time < now_) {
    return absl::DataLossError(absl::StrCat("deliver_remote: an event at ", time,
                                            " ps, before this rank's time ", now_,
                                            " ps: the ranks lost step"));
  }
  if (kind == kCall) {
    uint64_t key;
    uint32_t cookie, callback;
    get(get(get(p, key), cookie), callback);
    if (callback >= callbacks_.size() || key != call_key(callback, cookie)) {
      return absl::DataLossError(
          absl::StrCat("deliver_remote: a call to callback ", callback, " of ", callbacks_.size()));
    }
    events_q_.push(time, kCall, callback, cookie, key);
    at += need;
    return absl::OkStatus();
  }
  uint32_t counter;
  p = get(p, counter);
  // The port that sent it: the other end of the link.
  const uint64_t key = uint64_t{peer_of(port)} << 24 | counter;
  if (counter > kCounterMask || (kind != kArrive && kind != kPfc)) {
    return absl::DataLossError(absl::StrCat("deliver_remote: a bad record (kind ", kind,
                                            ", counter ", counter, ") for port ", port));
  }
  if (kind == kPfc) {
    uint32_t b;
    get(p, b);
    if ((b & 0xFF) >= kNumPriorities || (b >> 8) > 1) {
      return absl::DataLossError(absl::StrCat("deliver_remote: a PFC frame for priority ", b & 0xFF,
                                              " (pause ", b >> 8, ")"));
    }
    events_q_.push(time, kPfc, port, b, key);
    at += need;
    return absl::OkStatus();
  }
  uint32_t wire_len, len;
  p = get(get(p, wire_len), len);
  if (len > pool_.capacity() || len > left - need) {
    return absl::DataLossError(
        absl::StrCat("deliver_remote: a bad frame (", len, " bytes) for port ", port));
  }
  const FrameId f = pool_.alloc();
  Frame fr = pool_.view(f);
  std::memcpy(&meta(f), p, sizeof(FrameMeta));
  std::memcpy(fr.data, p + sizeof(FrameMeta), len);
  fr.len = len;
  fr.wire_len = wire_len;
  pool_.store(f, fr);
  events_q_.push(time, kArrive, port, f, key);
  at += need + len;
  return absl::OkStatus();
}

}  // namespace uet::sim
