// Generated training steps in the trace format, for tests and examples (sim/trace/trace.h).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/trace/chakra.pb.h"
#include "sim/trace/trace.h"

namespace uet::sim {

namespace {

// A compute node of `us` microseconds, after `deps`.
TraceNode compute_node(uint64_t id, std::string name, uint64_t us, std::vector<uint64_t> deps) {
  TraceNode n;
  n.id = id;
  n.name = std::move(name);
  n.duration_us = us;
  n.deps = std::move(deps);
  return n;
}

// A collective of `bytes` over every rank (group "") after `deps`.
TraceNode collective_node(uint64_t id, std::string name, Collective c, uint64_t bytes,
                          std::vector<uint64_t> deps) {
  TraceNode n;
  n.id = id;
  n.name = std::move(name);
  n.kind = TraceNode::Kind::kCollective;
  n.collective = c;
  n.bytes = bytes;
  n.deps = std::move(deps);
  return n;
}

}  // namespace

Trace data_parallel_step(uint32_t ranks, uint32_t layers, uint64_t bucket_bytes,
                         uint64_t forward_us, uint64_t backward_us_per_layer) {
  std::vector<TraceNode> nodes = {compute_node(0, "forward", forward_us, {})};
  uint64_t prev = 0, next_id = 1;
  std::vector<uint64_t> reduces;
  for (uint32_t l = layers; l-- > 0;) {
    const uint64_t bwd = next_id++, ar = next_id++;
    nodes.push_back(compute_node(bwd, absl::StrCat("backward layer ", l), backward_us_per_layer,
                                 {prev}));
    nodes.push_back(collective_node(ar, absl::StrCat("all-reduce gradients of layer ", l),
                                    Collective::kAllReduce, bucket_bytes, {bwd}));
    prev = bwd;
    reduces.push_back(ar);
  }
  reduces.push_back(prev);
  nodes.push_back(compute_node(next_id, "optimizer step", forward_us / 4, std::move(reduces)));
  Trace trace;
  trace.ranks.assign(ranks, nodes);
  return trace;
}

Trace moe_layer(uint32_t ranks, uint64_t bytes, uint64_t attention_us, uint64_t expert_us) {
  const std::vector<TraceNode> nodes = {
      compute_node(0, "attention", attention_us, {}),
      collective_node(1, "dispatch tokens to experts", Collective::kAllToAll, bytes, {0}),
      compute_node(2, "experts", expert_us, {1}),
      collective_node(3, "combine expert outputs", Collective::kAllToAll, bytes, {2})};
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
      auto compute = [&](std::string name, uint64_t us, std::vector<uint64_t> deps) {
        return nodes.emplace_back(compute_node(next_id++, std::move(name), us, std::move(deps))).id;
      };
      auto all_reduce = [&](std::string name, uint64_t after, std::string group, uint64_t bytes) {
        TraceNode& n = nodes.emplace_back(collective_node(next_id++, std::move(name),
                                                          Collective::kAllReduce, bytes, {after}));
        n.group = std::move(group);
        return n.id;
      };
      const std::string tp_group = absl::StrCat("tp", d), dp_group = absl::StrCat("dp", t);
      std::vector<uint64_t> prev;
      for (uint32_t l = 0; l < layers; ++l) {
        const uint64_t f = compute(absl::StrCat("forward layer ", l), compute_us_per_layer, prev);
        prev = {all_reduce(absl::StrCat("tensor-parallel all-reduce, forward layer ", l), f,
                           tp_group, tp_bytes)};
      }
      std::vector<uint64_t> grads;
      for (uint32_t l = layers; l-- > 0;) {
        // Input and weight gradients: twice the forward's compute.
        const uint64_t b =
            compute(absl::StrCat("backward layer ", l), 2 * compute_us_per_layer, prev);
        const uint64_t act = all_reduce(absl::StrCat("tensor-parallel all-reduce, backward layer ", l),
                                        b, tp_group, tp_bytes);
        prev = {act};
        grads.push_back(all_reduce(absl::StrCat("data-parallel all-reduce of layer ", l,
                                                "'s gradients"),
                                   act, dp_group, dp_bytes));
      }
      grads.insert(grads.end(), prev.begin(), prev.end());
      compute("optimizer step", compute_us_per_layer, std::move(grads));
    }
  }
  return trace;
}

Trace converted_step(uint32_t ranks, uint32_t layers, uint64_t bucket_bytes, uint64_t kernel_us) {
  Trace trace;
  trace.ranks.resize(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    std::vector<TraceNode>& nodes = trace.ranks[r];
    // Ids as the converter numbers them: sparse, starting anywhere.
    uint64_t next_id = 1000, rf_id = 0;
    uint64_t host_prev = 0, gpu_prev = 0;  // 0: none yet (no node has id 0)
    auto node = [&](std::string name, bool cpu, uint64_t us) -> TraceNode& {
      TraceNode& n = nodes.emplace_back();
      n.id = next_id;
      next_id += 2;
      n.name = std::move(name);
      n.cpu = cpu;
      n.duration_us = us;
      n.extra = {{"rf_id", static_cast<int64_t>(rf_id++)},
                 {"seq_id", static_cast<int64_t>(rf_id / 3)},
                 {"tid", cpu ? 1 : 7},
                 {"fw_parent", 0}};
      return n;
    };
    // A host op: after the previous one on the host thread (the converter's ctrl_deps).
    auto host_op = [&](std::string name, uint64_t us, std::string schema) -> TraceNode& {
      TraceNode& n = node(std::move(name), true, us);
      if (host_prev != 0) n.ctrl_deps = {host_prev};
      n.extra.emplace_back("op_schema", std::move(schema));
      host_prev = n.id;
      return n;
    };
    // A GPU kernel launched by `launch`, reading what the previous kernel wrote (data_deps).
    auto kernel = [&](std::string name, uint64_t us, uint64_t launch) -> TraceNode& {
      TraceNode& n = node(std::move(name), false, us);
      n.deps = {launch};
      if (gpu_prev != 0) n.deps.push_back(gpu_prev);
      gpu_prev = n.id;
      return n;
    };
    auto scaled = [&](uint32_t l, uint64_t num, uint64_t den) {
      return kernel_us * (2 + l % 3) * num / (2 * den);  // 1x, 1.5x, 2x by layer
    };
    for (uint32_t l = 0; l < layers; ++l) {
      const uint64_t mm = host_op("aten::linear", 3, "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor").id;
      kernel("ampere_sgemm_128x64_tn", scaled(l, 1, 1), mm);
      const uint64_t act = host_op("aten::relu", 2, "aten::relu(Tensor self) -> Tensor").id;
      kernel("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar", scaled(l, 1, 8), act);
    }
    std::vector<uint64_t> reduced;
    for (uint32_t l = layers; l-- > 0;) {
      const uint64_t bw = host_op("autograd::engine::evaluate_function: AddmmBackward0", 4, "").id;
      kernel("ampere_sgemm_64x64_nn", scaled(l, 1, 1), bw);
      kernel("ampere_sgemm_64x64_nt", scaled(l, 1, 1), bw);
      const uint64_t grad = gpu_prev;
      // The c10d call on the host, then the NCCL kernel that moves the bucket.
      TraceNode& call = host_op("c10d::allreduce_", 5, "c10d::allreduce_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup process_group, __torch__.torch.classes.c10d.ReduceOp reduce_op, Tensor? sparse_indices, int timeout) -> (Tensor[], __torch__.torch.classes.c10d.Work)");
      call.chakra_type = chakra::COMM_COLL_NODE;
      const uint64_t call_id = call.id;
      TraceNode& nccl = node("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", false, 0);
      nccl.kind = TraceNode::Kind::kCollective;
      nccl.collective = Collective::kAllReduce;
      nccl.bytes = bucket_bytes;
      nccl.deps = {call_id, grad};
      nccl.extra.emplace_back("pg_name", std::string("0"));
      reduced.push_back(nccl.id);
    }
    const uint64_t step = host_op("Optimizer.step#SGD.step", 10, "").id;
    TraceNode& apply = kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel", kernel_us, step);
    apply.deps.insert(apply.deps.end(), reduced.begin(), reduced.end());
    const uint64_t zero = host_op("aten::zero_", 2, "aten::zero_(Tensor(a!) self) -> Tensor(a!)").id;
    kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>", kernel_us / 8, zero);
  }
  return trace;
}

}  // namespace uet::sim
