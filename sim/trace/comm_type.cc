// Chakra's collective types (CollectiveCommType in sim/trace/chakra.proto) and the collectives
// they are played as (trace.h), one table read both ways: by the reader and by the writer.
#include <cstdint>

#include "sim/collective.h"
#include "sim/trace/chakra.pb.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_internal.h"

namespace uet::sim::trace_internal {
namespace {

namespace pb = ::uet::chakra;

struct CommType {
  int comm_type;
  Collective collective;
  bool barrier;  // BARRIER: an all-reduce of one element per rank (trace.h)
};

// The writer takes a collective's first row: BARRIER before ALL_REDUCE, so that only a node
// flagged barrier is written as one, and REDUCE_SCATTER before its _BLOCK form.
constexpr CommType kCommTypes[] = {
    {pb::BARRIER, Collective::kAllReduce, true},
    {pb::ALL_REDUCE, Collective::kAllReduce, false},
    {pb::ALL_GATHER, Collective::kAllGather, false},
    {pb::REDUCE_SCATTER, Collective::kReduceScatter, false},
    // Equal blocks: what reduce-scatter moves here anyway.
    {pb::REDUCE_SCATTER_BLOCK, Collective::kReduceScatter, false},
    {pb::BROADCAST, Collective::kBroadcast, false},
    {pb::ALL_TO_ALL, Collective::kAllToAll, false},
    {pb::REDUCE, Collective::kReduce, false},
    {pb::GATHER, Collective::kGather, false},
    {pb::SCATTER, Collective::kScatter, false},
};

}  // namespace

bool collective_of(int64_t comm_type, TraceNode* t) {
  for (const CommType& c : kCommTypes) {
    if (c.comm_type != comm_type) continue;
    t->collective = c.collective;
    if (c.barrier) t->barrier = true;
    return true;
  }
  return false;
}

int64_t comm_type(const TraceNode& t) {
  for (const CommType& c : kCommTypes) {
    if (c.collective == t.collective && (t.barrier || !c.barrier)) return c.comm_type;
  }
  return pb::ALL_REDUCE;  // not reached: every collective has a row
}

}  // namespace uet::sim::trace_internal
