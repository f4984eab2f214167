// A fabric split over processes (sim/partition.h): which ports' peers another rank runs, the
// records a port's events for them travel as, and their checks on arrival. Frames reach
// send_remote only at a cut port; the per-event path is in network.cc.
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/network.h"

namespace uet::sim {

namespace {
// An event for another rank's port, as its outbox carries it: this header, then for an
// arrival the frame's `len` bytes, padded to 8. Both ranks run the same build (the caller
// checks), so the layout is the same at both ends.
struct RemoteHeader {
  Time time;
  uint64_t key;
  uint32_t port;      // kCall: the NIC port of the host it is for
  uint32_t b;         // kPfc: priority | pause << 8; kCall: the cookie
  uint32_t len;       // arrival: Frame::len, the bytes that follow
  uint32_t wire_len;  // arrival: Frame::wire_len; kCall: the callback's number
  uint8_t kind;
  uint8_t priority;   // arrival: Frame::priority
  uint8_t pad[6];
  uint8_t meta[16];   // arrival: the frame's FrameMeta, as parsed at its first hop
};
static_assert(sizeof(RemoteHeader) == 56);
constexpr size_t padded8(size_t n) { return (n + 7) & ~size_t{7}; }
}  // namespace

void Network::send_remote(uint32_t port, Time at, uint64_t key, uint8_t kind, uint32_t b,
                          FrameId f, uint32_t callback) {
  RemoteHeader h{};
  h.time = at;
  h.key = key;
  h.port = port;
  h.b = b;
  h.kind = kind;
  if (kind == kCall) h.wire_len = callback;
  ++remote_records_;
  const Frame* fr = nullptr;
  if (f != kNoFrame) {
    fr = &pool_[f];
    h.len = fr->len;
    h.wire_len = fr->wire_len;
    h.priority = static_cast<uint8_t>(fr->priority);
    static_assert(sizeof(FrameMeta) == sizeof(h.meta));
    std::memcpy(h.meta, &meta(f), sizeof(h.meta));
  }
  std::vector<uint8_t>& out = outboxes_[rank_of_node_[port_node_[port]]];
  const size_t at_byte = out.size();
  out.resize(at_byte + sizeof(h) + padded8(h.len));
  std::memcpy(out.data() + at_byte, &h, sizeof(h));
  if (fr != nullptr) {
    std::memcpy(out.data() + at_byte + sizeof(h), fr->data, fr->len);
    drop(f);
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
    RemoteHeader h;
    if (records.size() - at < sizeof(h)) {
      return absl::DataLossError(absl::StrCat("deliver_remote: a record cut at byte ", at));
    }
    std::memcpy(&h, records.data() + at, sizeof(h));
    at += sizeof(h);
    if (h.port >= ports_.size() || !owns_port(h.port) ||
        (h.kind != kCall && !ports_[h.port].remote)) {
      return absl::DataLossError(
          absl::StrCat("deliver_remote: port ", h.port, " is not a cut port of rank ", rank_));
    }
    if (h.time < now_ || h.key > EventQueue::kMaxKey) {
      return absl::DataLossError(absl::StrCat("deliver_remote: an event at ", h.time,
                                              " ps, before this rank's time ", now_,
                                              " ps (or a bad key): the ranks lost step"));
    }
    if (h.kind == kPfc) {
      if ((h.b & 0xFF) >= kNumPriorities || (h.b >> 8) > 1) {
        return absl::DataLossError(absl::StrCat("deliver_remote: a PFC frame for priority ",
                                                h.b & 0xFF, " (pause ", h.b >> 8, ")"));
      }
      events_q_.push(h.time, kPfc, h.port, h.b, h.key);
      continue;
    }
    if (h.kind == kCall) {
      if (h.wire_len >= callbacks_.size() || h.key != call_key(h.wire_len, h.b)) {
        return absl::DataLossError(absl::StrCat("deliver_remote: a call to callback ",
                                                h.wire_len, " of ", callbacks_.size()));
      }
      events_q_.push(h.time, kCall, h.wire_len, h.b, h.key);
      continue;
    }
    if (h.kind != kArrive || h.len > pool_.capacity() || padded8(h.len) > records.size() - at ||
        h.priority >= kNumPriorities) {
      return absl::DataLossError(absl::StrCat("deliver_remote: a bad record (kind ", h.kind,
                                              ", ", h.len, " bytes) for port ", h.port));
    }
    const FrameId f = pool_.alloc();
    Frame& fr = pool_[f];
    std::memcpy(fr.data, records.data() + at, h.len);
    fr.len = h.len;
    fr.wire_len = h.wire_len;
    fr.priority = static_cast<Priority>(h.priority);
    std::memcpy(&meta(f), h.meta, sizeof(h.meta));
    at += padded8(h.len);
    events_q_.push(h.time, kArrive, h.port, f, h.key);
  }
  return absl::OkStatus();
}

}  // namespace uet::sim
