// The fault-injection soak: many messages of random sizes between many host pairs
// of a leaf-spine fabric whose every link loses, corrupts, duplicates and reorders frames and
// which has links failing and recovering, for either transport (UET or RoCEv2 RC).
//
// Every message is a real RDMA WRITE of real bytes: a pseudo-random pattern unique to the
// message, from a source ring owned by the (source, destination) pair into a target ring the
// destination registered for that pair. Each message must complete exactly once, and then:
// - with success: the target range holds exactly the source bytes;
// - with an error: the status says why (a write posted with a key the target never issued
//   must end in kRemoteAccessError with the target range untouched).
// A completed range is re-poisoned; the next message placed there first checks that nothing
// (a late duplicate, a stale retransmission) wrote into it since. Bytes lost = bytes of
// messages that never completed + bytes of successful messages that arrived wrong.
//
// RUDI and UUD writes (UET) have no PDC. A RUDI target executes every copy it receives
// (WRITE is idempotent, §3.5), so a duplicate may land after the completion; a UUD write is
// completed when sent and arrives whole or not at all (§3.6). Their ranges are therefore
// re-poisoned and reused only `mpl` after the completion (the longest a frame lives in this
// fabric), a UUD range is judged then (the message's bytes, or untouched: lost), and a copy
// that lands later still shows as a stray write.
//
// expect_sound() is stricter than "or an error that says why": the only error completions it
// accepts are those of bad-key writes. Errors are legitimate outcomes in principle (a QP or
// PDC may give up), but at the seeds the tests use none occurs, and those seen while
// building this soak came from engine bugs (tests/soak/soak_fast_test.cc,
// tests/rocev2/roce_hostile_test.cc) or from retry budgets too small for this fault load.
//
// The harness is single-threaded and deterministic for a given SoakConfig (seeded);
// UET_SOAK_SEED and UET_SOAK_MESSAGES override the seed and the message count.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "transport/api.h"
#include "transport/transport.h"
#include "transport/wire/wire_error.h"

namespace uet::soak {

enum class Kind { kUet, kRoce };
// Who writes to whom: each host to `peers` random destinations; or a permutation (each host
// to one other, each receiving from one) plus `incasts` hosts each written to by
// `incast_fan_in` others.
enum class Pattern { kRandomPeers, kPermutationIncast };

struct SoakConfig {
  Kind kind = Kind::kUet;
  uint64_t seed = 1;
  uint64_t messages = 100'000;
  // Fabric: leaf-spine, 100 Gb/s links. RoCEv2 runs over PFC (its data class lossless, as
  // deployed); UET over lossy switches that trim.
  uint32_t leaves = 4, spines = 4, hosts_per_leaf = 8;
  uint64_t switch_buffer = 192 * 1024;  // per output port: small, so that bursts trim or pause
  // Traffic.
  Pattern pattern = Pattern::kRandomPeers;
  uint32_t peers = 8;
  uint32_t incasts = 0, incast_fan_in = 0;
  uint64_t max_message = 64 * 1024;  // sizes log-uniform in [1, max_message]: mostly small
  uint64_t ring_bytes = 128 * 1024;  // per (source, destination): the buffers messages use
  uint32_t max_outstanding_per_pair = 16;
  uint32_t max_outstanding_per_host = 48;
  // Faults, on every link (host and fabric).
  double loss = 2e-3;
  double corrupt = 2e-3;
  double duplicate = 2e-3;
  double reorder = 1e-2;
  Time reorder_delay = 2 * kMicrosecond;    // 6 full-size frames at 100 Gb/s
  Time failure_every = 100 * kMicrosecond;  // a random link goes down this often on average
  Time down_min = 20 * kMicrosecond;        // (exponential gaps), for a time uniform in
  Time down_max = 300 * kMicrosecond;       // [down_min, down_max], then comes back up
  double bad_key = 0;      // UET only: share of writes posted with a key never issued
  double uet_rod = 0;      // UET only: share of writes posted as ROD (their own PDCs)
  double uet_rudi = 0;     // UET only: share of writes posted as RUDI (no PDC, §3.5)
  double uet_uud = 0;      // UET only: share posted as UUD (one packet at most, §3.6)
  double uet_rccc = 0;     // UET only: share of hosts whose initiators run NSCC+RCCC credit
  // UET only: share of RUD and ROD messages sent as tagged sends (tag = the message's number)
  // into a tagged receive the destination posts over the message's target range: half before
  // the send (matched on arrival), half once the send completed (waiting unexpected till then).
  double uet_tagged = 0;
  // UET only: UetConfig::rendezvous_bytes at every host (0: off). A tagged send longer goes by
  // rendezvous; one whose receive is posted "after the send" gets it 4 ticks after the post
  // instead (the send completes only once its receive has READ it).
  uint64_t uet_rendezvous_bytes = 0;
  // UET only: share of tagged sends posted deferrable (spec/uet.md §4.2). One whose receive
  // is posted "after the send" is deferred by its target and gets the receive 4 ticks after
  // the post (the send completes only once restarted into it).
  double uet_deferrable = 0;
  // Share of RUD and ROD messages that are a fetching atomic add of 1 to a 64-bit counter per
  // pair at the destination (UET FETCHING_ATOMIC SUM; RoCEv2 FETCH_ADD): at the end every
  // counter equals its pair's successful adds, which fetched 0, 1, 2, ... each exactly once.
  double atomics = 0;
  // The longest a frame lives here: a queue of switch_buffer drains in 16 us at 100 Gb/s,
  // three switches and four reorder delays make it under 60 us, with margin.
  Time mpl = 250 * kMicrosecond;
  Time uet_idle_timeout = kMillisecond;  // UET only: UetConfig::idle_timeout (PDC teardown)
  // UET only: every host seals its frames in one secure domain (TSS, spec/uet.md §5), and
  // every tss_rotate_every the keys rotate: a new key under the idle AN at every host, every
  // host sending with it mpl later, the old AN retired mpl after that (0: never).
  bool uet_tss = false;
  Time tss_rotate_every = 0;
  Time give_up = kSecond;  // simulated time without any completion: a hang
};

struct SoakResult {
  uint64_t seed = 0, target = 0;  // as run (UET_SOAK_SEED / UET_SOAK_MESSAGES override)
  // Messages.
  uint64_t posted = 0, completed = 0, succeeded = 0;
  uint64_t bytes_posted = 0, bytes_verified = 0, bytes_failed = 0;
  std::array<uint64_t, kNumOpStatus> errors{};  // by OpStatus
  uint64_t bad_key_posted = 0, bad_key_refused = 0;
  uint64_t double_completions = 0, unknown_completions = 0;
  uint64_t corrupt_messages = 0;  // success, but the target bytes differ
  uint64_t stray_writes = 0;      // bytes found in a target range nobody had a write into
  uint64_t bytes_lost = 0;
  // Faults injected (summed over every port).
  uint64_t frames = 0, wire_losses = 0, corruptions = 0, duplicates = 0, reorders = 0;
  uint64_t trims = 0, buffer_drops = 0, lossless_drops = 0, ecn_marks = 0, pauses = 0;
  uint64_t link_failures = 0, host_link_failures = 0;
  uint64_t corrupted_arrivals = 0, damaged_arrivals = 0;  // at hosts (sim::PortStats)
  uint64_t corrupted_rewrites = 0, corrupted_unchecked = 0;
  // What the transports did about them.
  uint64_t check_failures = 0;  // frames the receivers rejected in decode (checksum, ICRC, ...)
  // ... or in TSS for reasons damage alone explains (bad tag, unknown domain, stale epoch,
  // short, clear); and TSS drops damage or the fabric explains (replay and too old: a
  // duplicate; no key: a frame of a retired association).
  uint64_t check_failures_ambiguous = 0;
  wire::WireCounters wire;      // why, summed over the hosts
  uint64_t retransmissions = 0, timeouts = 0, rx_duplicates = 0;
  uint64_t naks = 0, go_back_n = 0, naks_in_round = 0, trimmed_nacks = 0, cnps = 0;
  // Tables and memory.
  uint64_t hosts = 0;
  uint64_t pdcs_peak = 0, pdcs_end = 0;          // UET: most PDCs on one host
  uint64_t pdc_bound = 0;                        // UET: the most a host can need
  uint64_t pdcs_closed = 0, pdcs_reopened = 0;   // UET: closes completed, stale PDCs replaced
  uint64_t rod_posted = 0, rod_staged = 0;  // UET: writes posted as ROD; requests held in order
  uint64_t rudi_posted = 0, rudi_executed = 0;  // UET: RUDI writes; requests the targets ran
  uint64_t uud_posted = 0, uud_delivered = 0, uud_lost = 0;  // UET: judged `mpl` after sending
  uint64_t uud_partial = 0;  // UET: neither the message's bytes nor untouched (never allowed)
  uint64_t rccc_hosts = 0, credit_granted = 0;  // UET: hosts on RCCC; bytes of credit granted
  // UET tagged sends: posted; their receives posted after the send completed; receives
  // completed (each must, once, whole); sends that succeeded whose receive never completed.
  uint64_t tagged_posted = 0, tagged_late = 0, tagged_received = 0, tagged_unreceived = 0;
  uint64_t tagged_unexpected = 0;  // messages the targets held unexpected (counters)
  // Rendezvous (counters): sends that went by rendezvous; READs of their sources served;
  // sends timed out waiting for their READs.
  uint64_t rendezvous = 0, rendezvous_reads = 0, rendezvous_timeouts = 0;
  // Deferrable sends (counters): deferred by their targets; restarted on an RTR; receives
  // whose restart never came.
  uint64_t deferrals = 0, deferral_restarts = 0, deferral_timeouts = 0;
  // Atomics: posted; succeeded; pairs whose counter or fetched values were wrong; duplicates
  // of fetching atomics the targets answered from the held result, never running them again.
  uint64_t atomics_posted = 0, atomics_ok = 0, atomic_miscounts = 0, atomic_replays = 0;
  // UET with TSS: frames sealed and opened; refused by reason (tss::Drop); trimmed frames
  // read without their tag; rotations completed; clear frames refused.
  uint64_t tss_sealed = 0, tss_opened = 0, tss_trimmed = 0, tss_rotations = 0;
  std::array<uint64_t, 9> tss_drops{};  // indexed by tss::Drop
  uint64_t tss_clear_refused = 0;
  uint64_t tss_start_psn_refused = 0;  // SYNs below the expected start PSN (NEW_START_PSN)
  // Messages that never completed, by DeliveryMode, and how many of them an RCCC host posted;
  // the first one (pair, length) to start a diagnosis from.
  std::array<uint64_t, 4> stuck{};
  uint64_t stuck_on_rccc = 0;
  std::string first_stuck;
  uint64_t qps_connected = 0, qps_in_error = 0;  // RoCEv2, over every host
  uint64_t writes_outstanding_end = 0;           // RoCEv2, over every QP
  uint64_t frame_pool_peak = 0, frames_in_use_end = 0, events_pending_end = 0;
  uint64_t rss_quarter_kib = 0, rss_end_kib = 0, peak_rss_kib = 0;
  // Time.
  Time sim_time = 0;
  double wall_seconds = 0;
  uint64_t events = 0;
};

SoakResult run_soak(const SoakConfig& config);
std::string report(const SoakConfig& config, const SoakResult& r);
// The assertions every soak makes (gtest EXPECTs).
void expect_sound(const SoakConfig& config, const SoakResult& r);
// What every soak test does first: run_soak(), its report() on stdout (the numbers
// tests/README.md quotes), expect_sound(); the result, for what a test asserts beyond that.
SoakResult run_checked(const SoakConfig& config);

}  // namespace uet::soak
