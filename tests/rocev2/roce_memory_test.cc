// Memory that follows use (transport/rocev2/NOTES.md §6): a QP's send queue growing with its
// flight and given back once drained, the responder's queue growing with the READs that
// arrive, and the bounds enforced all the while.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tests/common/fake_link.h"
#include "tests/common/roce_forge.h"
#include "tests/common/roce_pair.h"
#include "transport/rocev2/roce_endpoint.h"

namespace uet {
namespace {

using wire::RoceOpcode;

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kQpA = 0x100, kQpB = 0x101;
constexpr uint32_t kPsnA = 1000, kPsnB = 5000;

// --------------------------------------------------------------------- a QP's send queue

RoceConfig config_for(uint32_t ip) { return testing::roce_config(ip, /*ack_timeout_exp=*/8); }

struct Pair : testing::RocePair {
  std::vector<uint8_t> src = std::vector<uint8_t>(64 * 1024, 0x5A);
  std::vector<uint8_t> dst = std::vector<uint8_t>(64 * 1024, 0);
  uint32_t rkey = 0;
  Pair(const RoceConfig& ca, const RoceConfig& cb)
      : RocePair(ca, cb, {kQpA, kQpB, kPsnA, kPsnB}) {
    rkey = *b->register_memory(dst.data(), dst.size());
  }
  absl::Status write(uint64_t id) {
    return a->post_write({id, kIpB, rkey, (id % 64) * 1024, src.data(), 1024});
  }
  uint32_t slots() const { return a->qp_info(kQpA)->send_queue_slots; }
  size_t poll() {
    std::vector<Completion> out(512);
    size_t n = 0, got = 0;
    while ((got = a->poll_completions(out)) > 0) n += got;
    return n;
  }
};

// A flight of one message at a time holds one slot however many messages go; a burst of 100
// grows the queue to 128 slots; once they complete and are polled, the storage goes back to
// two slots and footprint() to where the small flight had it.
TEST(RoceMemory_SendQueue, GrowsWithTheFlightAndComesBack) {
  Pair p(config_for(kIpA), config_for(kIpB));
  EXPECT_EQ(p.slots(), 0u);
  for (uint64_t i = 0; i < 50; ++i) {
    ASSERT_TRUE(p.write(i).ok());
    p.link->run(p.link->now() + kMillisecond);
    ASSERT_EQ(p.poll(), 1u);
    ASSERT_EQ(p.slots(), 1u) << "message " << i;
  }
  const size_t small = p.a->footprint();
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(p.write(100 + i).ok());
  const uint32_t burst = p.slots();
  const size_t grown = p.a->footprint();
  p.link->run(p.link->now() + 10 * kMillisecond);
  EXPECT_EQ(p.a->qp_info(kQpA)->writes_outstanding, 0u);
  const uint32_t unpolled = p.slots();
  EXPECT_EQ(p.poll(), 100u);
  // Expect: 128 slots for the burst, still there until the completions are polled (the data
  // path frees nothing), then two; the endpoint back within the two slots' and the CQ's
  // difference of where it was.
  EXPECT_EQ(burst, 128u);
  EXPECT_GT(grown, small + 100 * 64);
  EXPECT_EQ(unpolled, 128u);
  EXPECT_EQ(p.slots(), 2u);
  EXPECT_LE(p.a->footprint(), small + 256);
  EXPECT_EQ(p.a->counters().tx_data, 150u);
}

// The bound holds while the queue grows: max_send_wr = 5 takes five WRs (in 8 slots), refuses
// the sixth, and takes five again once they completed, never passing footprint_bound().
TEST(RoceMemory_SendQueue, BoundStillEnforced) {
  RoceConfig ca = config_for(kIpA);
  ca.max_send_wr = 5;
  ca.max_qps = 1;
  ca.cq_entries = 8;
  Pair p(ca, config_for(kIpB));
  const size_t bound = RoceEndpoint::footprint_bound(ca, 0);
  for (int round = 0; round < 3; ++round) {
    for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(p.write(i).ok()) << "round " << round;
    const absl::Status full = p.write(5);
    EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(full.message().find("max_send_wr"), std::string::npos) << full.message();
    EXPECT_EQ(p.slots(), 8u);
    EXPECT_LE(p.a->footprint(), bound);
    p.link->run(p.link->now() + 10 * kMillisecond);
    EXPECT_EQ(p.poll(), 5u);
    EXPECT_EQ(p.slots(), 2u);
  }
}

// ------------------------------------------------------------ the responder's read queue

// No storage until a READ arrives; READ requests from a peer that ignores max_rd_atomic (20
// in order, none answered yet) grow the queue to max_rd_atomic entries and no further: the
// oldest are recycled (rx_read_overflow), as rxe does.
TEST(RoceMemory_Responses, GrowWithTheReadsThatArriveUpToMaxRdAtomic) {
  RoceConfig cb = config_for(kIpB);
  cb.max_rd_atomic = 4;
  Pair p(config_for(kIpA), cb);
  EXPECT_EQ(p.b->qp_info(kQpB)->response_slots, 0u);
  const size_t before = p.b->footprint();
  std::vector<uint32_t> slots;
  for (uint32_t i = 0; i < 20; ++i) {
    testing::RoceForged f;
    f.op = RoceOpcode::kRcReadRequest;
    f.src = kIpA;
    f.dst = kIpB;
    f.dest_qp = kQpB;
    f.psn = kPsnA + i;
    f.rkey = p.rkey;
    f.va = 0;
    f.dma_length = 64;
    testing::deliver(*p.b, testing::forge(f));
    slots.push_back(p.b->qp_info(kQpB)->response_slots);
  }
  // Expect: 1, 2, 4, then 4 for ever; 16 recycled; the growth is the queue's storage only.
  EXPECT_EQ(slots[0], 1u);
  EXPECT_EQ(slots[1], 2u);
  EXPECT_EQ(slots[2], 4u);
  EXPECT_EQ(slots.back(), 4u);
  EXPECT_EQ(p.b->qp_info(kQpB)->responses_queued, 4u);
  EXPECT_EQ(p.b->counters().rx_read_overflow, 16u);
  EXPECT_GT(p.b->footprint(), before);
  EXPECT_LE(p.b->footprint(), RoceEndpoint::footprint_bound(cb, 1));
}

// ------------------------------------------------------------------ frames, headers only

// A fetching add of 5 from A into the first of B's four registered words (the longest request
// stack, AtomicETH), its operand and result here.
struct FetchAdd {
  absl::Status post(testing::RocePair& p, uint64_t wr_id) {
    AtomicRequest ar;
    ar.wr_id = wr_id;
    ar.peer = kIpB;
    ar.rkey = *p.b->register_memory(reinterpret_cast<uint8_t*>(words.data()), 32);
    ar.op = AtomicOp::kSum;
    ar.type = AtomicType::kUint64;
    ar.count = 1;
    ar.operand = reinterpret_cast<const uint8_t*>(&add);
    ar.result = reinterpret_cast<uint8_t*>(&result);
    return p.a->post_atomic(ar);
  }
  std::vector<uint64_t> words = std::vector<uint64_t>(4, 0);
  uint64_t add = 5;
  uint64_t result = 0;
};

// Expect: an atomic request (AtomicETH and its ICRC), the longest stack the engine writes, is
// exactly RoceEndpoint::kMaxHeaderBytes, so a host that carries payloads by length may size
// its frames by it: a frame one byte shorter is refused (tx_no_room) with nothing sent, and
// the same request then goes whole in a frame of that size.
TEST(RoceEndpoint_Frames, AnAtomicRequestFillsKMaxHeaderBytes) {
  testing::RocePair p(config_for(kIpA), config_for(kIpB), {kQpA, kQpB, kPsnA, kPsnB});
  FetchAdd fa;
  ASSERT_TRUE(fa.post(p, 1).ok());
  std::vector<uint8_t> buf(RoceEndpoint::kMaxHeaderBytes);
  wire::Decoded d;
  EXPECT_EQ(testing::take_decoded(*p.a, std::span<uint8_t>(buf.data(), buf.size() - 1), 0, &d),
            0u);
  EXPECT_EQ(p.a->counters().tx_no_room, 1u);
  ASSERT_EQ(testing::take_decoded(*p.a, buf, 0, &d), RoceEndpoint::kMaxHeaderBytes);
  EXPECT_EQ(d.bth->opcode(), RoceOpcode::kRcFetchAdd);
  EXPECT_EQ(d.bth->psn(), kPsnA);
}

// Expect: a host that lends only frames one byte short of the request's headers gets nothing
// sent (each refusal counted) but no silent stall: the ACK timer stays armed, and when it
// fires the atomic completes kFrameTooSmall and the QP enters the error state.
TEST(RoceEndpoint_Frames, FramesTooSmallForTheHeadersFailTheQpAtTheAckTimeout) {
  testing::RocePair p(config_for(kIpA), config_for(kIpB), {kQpA, kQpB, kPsnA, kPsnB});
  FetchAdd fa;
  ASSERT_TRUE(fa.post(p, 7).ok());
  std::vector<uint8_t> buf(RoceEndpoint::kMaxHeaderBytes - 1);
  wire::Decoded d;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(testing::take_decoded(*p.a, buf, 0, &d), 0u);
  EXPECT_EQ(p.a->counters().tx_no_room, 3u);
  std::vector<Completion> done(4);
  EXPECT_EQ(p.a->poll_completions(done), 0u);
  const Time at = p.a->next_deadline();
  ASSERT_NE(at, kNever) << "a refused frame must leave a timer, or the atomic waits for ever";
  p.a->on_timer(at);
  ASSERT_EQ(p.a->poll_completions(done), 1u);
  EXPECT_EQ(done[0].wr_id, 7u);
  EXPECT_EQ(done[0].status, OpStatus::kFrameTooSmall);
  EXPECT_EQ(p.a->qp_info(kQpA)->state, QpState::kError);
  EXPECT_EQ(p.a->counters().timeouts, 0u);  // failed, not retried
}

}  // namespace
}  // namespace uet
