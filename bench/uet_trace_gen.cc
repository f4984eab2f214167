// uet-trace-gen: writes the generated training steps of sim/trace/trace.h as Chakra trace files
// (PREFIX.0.et, PREFIX.1.et, ...), for uet-ab --scenario=trace and as a template for
// converters. Traces with communicators (--kind=hybrid) also get PREFIX.comm_groups.json, the
// groups their pg_name attributes name (uet-ab --comm_groups).
//
//   build/bin/uet-trace-gen --kind=dp --ranks=16 --layers=8 --bucket_kb=16384 --out=/tmp/dp
//   build/bin/uet-trace-gen --kind=hybrid --dp=4 --tp=4 --layers=4 --out=/tmp/hybrid
//   build/bin/uet-trace-gen --kind=converted --ranks=8 --layers=200 --out=/tmp/pytorch
//   build/bin/uet-trace-gen --from_et=/data/rank0.et --ranks=32 --out=/tmp/job
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "bench/flag_check.h"
#include "bench/tool_main.h"
#include "sim/trace/trace.h"

ABSL_FLAG(std::string, kind, "dp",
          "dp (a data-parallel step: gradient all-reduces overlapping the backward pass), moe "
          "(an expert layer: all-to-all dispatch and combine around expert compute) or hybrid "
          "(data x tensor parallel: --dp, --tp; communicators per group) or converted (a "
          "data-parallel step in the shape Chakra's PyTorch converter writes: CPU ops launching "
          "GPU kernels, each all-reduce as a c10d host call and an NCCL kernel; --layers, "
          "--bucket_kb, --backward_us as the kernel time)");
ABSL_FLAG(uint32_t, ranks, 8, "dp, moe, converted: ranks (one file each), 2..65535");
ABSL_FLAG(uint32_t, dp, 4, "hybrid: data-parallel degree, 1..65535 (dp x tp ranks, at least 2)");
ABSL_FLAG(uint32_t, tp, 4, "hybrid: tensor-parallel degree, 1..65535");
ABSL_FLAG(uint32_t, layers, 4, "dp, hybrid: layers, one gradient bucket each, 1..10000");
ABSL_FLAG(uint64_t, bucket_kb, 4096,
          "dp, hybrid: gradient bucket per layer in KiB; moe: tokens per rank in KiB; "
          "1..1048576");
ABSL_FLAG(uint64_t, activation_kb, 1024,
          "hybrid: activations all-reduced in the tensor-parallel group per layer and pass, in "
          "KiB, 1..1048576");
ABSL_FLAG(uint64_t, forward_us, 2000,
          "dp: forward compute; moe: attention compute; hybrid: forward compute per layer "
          "(backward twice it), in us, 0..10^9");
ABSL_FLAG(uint64_t, backward_us, 1000,
          "dp: backward compute per layer; moe: expert compute, in us, 0..10^9");
ABSL_FLAG(std::string, out, "", "output prefix: writes PREFIX.0.et ... PREFIX.<ranks-1>.et");
ABSL_FLAG(std::string, from_et, "",
          "instead of --kind: one rank's Chakra trace (a real one, converted from PyTorch), "
          "replicated to --ranks ranks as a data-parallel job whose collectives span every rank");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "uet-trace-gen --kind=dp|moe --ranks=N --out=PREFIX [...], or --kind=hybrid --dp=D --tp=T");
  absl::ParseCommandLine(argc, argv);
  const std::string kind = absl::GetFlag(FLAGS_kind), out = absl::GetFlag(FLAGS_out);
  const uint32_t ranks = absl::GetFlag(FLAGS_ranks), layers = absl::GetFlag(FLAGS_layers);
  const uint64_t kb = absl::GetFlag(FLAGS_bucket_kb);
  const uint64_t fwd = absl::GetFlag(FLAGS_forward_us), bwd = absl::GetFlag(FLAGS_backward_us);
  auto refuse = [](absl::string_view why) {
    return uet::bench::tool_error("uet-trace-gen", why, 2);
  };
  // Refusals name the flag, not its value; every digit of a bound (1048576, not 1.04858e+06).
  using uet::bench::FlagCheck;
  FlagCheck c(15, FlagCheck::Quote::kFlag);
  if (out.empty()) return refuse("--out=PREFIX is required");
  if (const std::string from = absl::GetFlag(FLAGS_from_et); !from.empty()) {
    c.range("ranks", ranks, 2, 65535);
    if (!c.error.empty()) return refuse(c.error);
    auto nodes = uet::sim::read_chakra_file(from);
    if (!nodes.ok()) return refuse(absl::StrCat("--from_et: ", nodes.status().message()));
    uint64_t regrouped = 0;
    auto job = uet::sim::replicate_rank(*nodes, ranks, &regrouped);
    if (!job.ok()) return refuse(absl::StrCat("--from_et=", from, ": ", job.status().message()));
    if (absl::Status s = uet::sim::write_chakra(out, *job); !s.ok()) {
      return uet::bench::tool_error("uet-trace-gen", s, 1);
    }
    std::printf("wrote %s.0.et .. %s.%u.et: %zu nodes per rank from %s%s\n", out.c_str(),
                out.c_str(), ranks - 1, nodes->size(), from.c_str(),
                regrouped == 0 ? ""
                               : absl::StrCat("; ", regrouped, " collectives named another "
                                              "process group and span every rank here").c_str());
    return 0;
  }
  c.one_of("kind", kind, {"dp", "moe", "hybrid", "converted"});
  c.range("ranks", ranks, 2, 65535);
  const uint32_t dp = absl::GetFlag(FLAGS_dp), tp = absl::GetFlag(FLAGS_tp);
  const uint64_t act_kb = absl::GetFlag(FLAGS_activation_kb);
  if (kind == "hybrid" && (dp < 1 || tp < 1 || uint64_t{dp} * tp < 2 || uint64_t{dp} * tp > 65535))
    c.fail("--dp x --tp out of range: 2..65535 ranks, each at least 1");
  c.range("activation_kb", static_cast<double>(act_kb), 1, 1048576);
  c.range("layers", layers, 1, 10000);
  c.range("bucket_kb", static_cast<double>(kb), 1, 1048576);
  if (fwd > 1000000000 || bwd > 1000000000)
    c.fail("--forward_us / --backward_us out of range: 0..10^9");
  if (!c.error.empty()) return refuse(c.error);
  const uet::sim::Trace t =
      kind == "dp"    ? uet::sim::data_parallel_step(ranks, layers, kb * 1024, fwd, bwd)
      : kind == "moe" ? uet::sim::moe_layer(ranks, kb * 1024, fwd, bwd)
      : kind == "converted"
          ? uet::sim::converted_step(ranks, layers, kb * 1024, bwd)
          : uet::sim::hybrid_step(dp, tp, layers, act_kb * 1024, kb * 1024, fwd);
  absl::Status s = uet::sim::write_chakra(out, t);
  if (s.ok() && !t.groups.empty()) s = uet::sim::write_comm_groups(out + ".comm_groups.json", t.groups);
  if (!s.ok()) return uet::bench::tool_error("uet-trace-gen", s, 1);
  std::printf("wrote %s.0.et .. %s.%zu.et%s\n", out.c_str(), out.c_str(), t.ranks.size() - 1,
              t.groups.empty() ? "" : absl::StrCat(" and ", out, ".comm_groups.json").c_str());
  return 0;
}
