// Fuzz targets: each takes arbitrary bytes and must neither crash nor hang nor grow without
// bound. Built two ways (tests/fuzz/CMakeLists.txt): as libFuzzer targets with clang
// (-DUET_LIBFUZZER=ON, long runs, README.md here), and as a short seeded run in the test suite
// with any compiler (fuzz_driver.cc), seeded from spec/vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace uet::fuzz {

// A target's invariant does not hold: says which, and stops as a crash the fuzzer keeps.
[[noreturn]] inline void invariant_failed(const char* what) {
  std::fprintf(stderr, "fuzz invariant failed: %s\n", what);
  __builtin_trap();
}

// decode_frame() on the bytes as one frame, with and without checks, and decode_uet() on them.
void decode_frame_target(const uint8_t* data, size_t size);
// A UET endpoint's receive path fed a sequence of frames ([u16 length][bytes]...). Frames that
// parse as Ethernet/IPv4/UDP are readdressed to the endpoint and their checksums re-sealed, so
// mutations reach the PDS and SES logic instead of dying at the IP checksum.
void uet_rx_target(const uint8_t* data, size_t size);
// The same for a RoCEv2 RC endpoint with a connected QP (the ICRC is re-sealed too).
void roce_rx_target(const uint8_t* data, size_t size);
// As uet_rx at an endpoint under TSS (spec/uet.md §5): inputs with a TSS header are sealed
// with the target's key first (their TSC's low bit set: delivered unsealed, to be refused).
void uet_tss_rx_target(const uint8_t* data, size_t size);

// The text readers (text_targets.cc). Each either refuses the text with a message that names
// the file and says why, or returns a result every consumer can use as it is.
// An htsim connection matrix (.cm): flows name hosts below `Nodes`, prerequisites name flows.
void htsim_cm_target(const uint8_t* data, size_t size);
// An htsim topology (.topo): what it maps to is a fabric our builders accept, of its `Nodes`.
void htsim_topo_target(const uint8_t* data, size_t size);
// A flow-size CDF (sim/data/*.cdf): samples and the mean lie within its points.
void cdf_target(const uint8_t* data, size_t size);
// An experiment's values ("--name=value" lines, as uet-ab --save_config writes them, and
// "flow=src,dst,bytes" lines) through ab::validate() and the memory estimate uet-ab makes
// before a run. (Reading the file itself is Abseil's --flagfile.)
void ab_config_target(const uint8_t* data, size_t size);

// What the runs so far reached, to check that mutations get past the decoder: frames the
// endpoints accepted as data / ACK / NACK, and frames they answered.
struct Reach {
  uint64_t uet_data = 0, uet_acks = 0, uet_nacks = 0, uet_answers = 0;
  // Tagged messages matched or kept unexpected; requests refused for their job, PID, resource
  // index or generation (spec/uet.md §4.1).
  uint64_t uet_tagged = 0, uet_access_refused = 0;
  uint64_t uet_atomic = 0;  // atomics executed or refused by the atomic checks
  uint64_t uet_rendezvous = 0;  // rendezvous requests taken or refused
  uint64_t uet_deferrable = 0;  // deferrable sends deferred or restarted, RTRs taken
  uint64_t roce_data = 0, roce_answers = 0;
};
const Reach& reach();

}  // namespace uet::fuzz
