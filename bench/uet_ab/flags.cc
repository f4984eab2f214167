// uet-ab's flags (bench/uet_ab/uet_ab.h declares them). report.cc writes every flag defined in
// this file into experiment files.
#include "bench/uet_ab/uet_ab.h"

ABSL_FLAG(std::string, scenario, "standard",
          "standard (permutation + incast + loss), permutation, incast, mix (a permutation plus "
          "--incasts incasts of --fan_in senders, as uet-htsim's permutation + incasts), alltoall, "
          "allreduce, "
          "collective (nccl-tests style: --coll, --algo, --sizes), trace (a Chakra trace: --trace), "
          "websearch, loss, loss-sweep, failure (a permutation on a fabric with failed or "
          "degraded links), cm (with --cm=FILE)");
ABSL_FLAG(std::string, cm, "",
          "run an htsim connection matrix (.cm) instead of a built-in scenario: flows, start times "
          "(whole microseconds, as uet-htsim) and triggers; its Nodes must fit the fabric's hosts");
ABSL_FLAG(std::string, topo, "",
          "build the fabric from an htsim topology file (.topo: Nodes, Tiers, per-tier rates, "
          "radices, latencies, oversubscription) instead of --topology and its size flags");
ABSL_FLAG(std::string, transport, "both", "uet, rocev2 or both");
ABSL_FLAG(std::string, topology, "leafspine",
          "leafspine, fattree, dragonfly (--df_*), dragonflyplus (--dfp_*, --df_h, --df_g), torus "
          "(--torus, --torus_wrap, --hosts_per_switch), hypercube (--hypercube_dim, "
          "--hosts_per_switch), rail (--rail_*, --gpus_per_server) or graph (--graph=FILE)");
ABSL_FLAG(uint32_t, df_p, 4, "dragonfly: hosts per router p, 1..256 (balanced: a = 2p = 2h)");
ABSL_FLAG(uint32_t, df_a, 8, "dragonfly: routers per group a (all-to-all), 1..256");
ABSL_FLAG(uint32_t, df_h, 4,
          "dragonfly: global links per router h; dragonflyplus: global links per spine; 1..256");
ABSL_FLAG(uint32_t, df_g, 0,
          "dragonfly and dragonflyplus: groups, 2..(global ports per group)+1 with g-1 dividing "
          "the global ports per group (a*h, or spines*h); 0: one global link per pair of groups "
          "(a*h+1, or spines*h+1)");
ABSL_FLAG(uint32_t, dfp_leaves, 4, "dragonflyplus: leaves per group, 1..256");
ABSL_FLAG(uint32_t, dfp_spines, 4, "dragonflyplus: spines per group, 1..256");
ABSL_FLAG(uint32_t, dfp_hosts_per_leaf, 4, "dragonflyplus: hosts per leaf, 1..256");
ABSL_FLAG(std::string, torus, "4x4x4",
          "torus: switches along each dimension, K, KxK or KxKxK, each 2..256 (a dimension of 2 "
          "has one link between its two switches)");
ABSL_FLAG(bool, torus_wrap, true, "torus: wraparound links; false: a mesh");
ABSL_FLAG(uint32_t, hosts_per_switch, 1, "torus and hypercube: hosts per switch, 1..256");
ABSL_FLAG(uint32_t, hypercube_dim, 4, "hypercube: dimension n (2^n switches), 1..16");
ABSL_FLAG(uint32_t, rail_servers, 16,
          "rail: servers, 1..65536, each of --gpus_per_server GPUs with a NIC per GPU (a rail)");
ABSL_FLAG(uint32_t, rail_servers_per_leaf, 8,
          "rail: servers per leaf (each rail's leaf serves that GPU of this many servers), 1..256");
ABSL_FLAG(uint32_t, rail_spines, 8, "rail: spines per plane, 1..256");
ABSL_FLAG(std::string, rail_planes, "joined",
          "rail: joined (one plane: spines reach every rail's leaves) or apart (a plane per rail; "
          "scenarios run on each rail's hosts separately, flows that leave their rail are "
          "refused)");
ABSL_FLAG(std::string, graph, "",
          "graph: the fabric from a graph file (host NAME, switch NAME, link A B GBPS DELAY_NS; "
          "sim/topology_graph.h); its links keep their own rates and delays");
ABSL_FLAG(std::string, routing, "minimal",
          "minimal (shortest-path ECMP), valiant (through a random intermediate: a dragonfly's or "
          "dragonflyplus's group, on other fabrics a switch, then minimally) or ugal (UGAL-L: at "
          "the first switch, valiant when the minimal port's queue x hops exceeds the valiant "
          "port's by --ugal_bias_bytes)");
ABSL_FLAG(bool, group_minimal, true,
          "dragonfly and dragonflyplus: paths with the fewest global links, then the fewest local "
          "ones (the dragonfly's MIN; valiant's and ugal's legs too); false: shortest paths in "
          "switch hops, some through two global links");
ABSL_FLAG(bool, dimension_order, false,
          "torus and hypercube: route the first differing dimension first (each leg of valiant "
          "too)");
ABSL_FLAG(std::string, deadlock_free, "auto",
          "off, tagger or auto: lossless classes as virtual channels where PFC routes close a "
          "cycle (Tagger after each dragonfly global link: 2 classes for group-minimal routes, "
          "3 for valiant and ugal; the dateline on a torus with --dimension_order: 2), each "
          "class its own PFC priority at the switches, which have 3; tagger refuses routes "
          "needing more. auto: tagger on a dragonfly or Dragonfly+ whose routes fit and on a "
          "torus with --dimension_order, as a lossless deployment would; off elsewhere (a Clos "
          "needs one class); and on a torus or hypercube routed minimally without "
          "--dimension_order, PFC runs take dimension-order routes (the dateline's classes on a "
          "torus) while lossy runs keep every shortest path");
ABSL_FLAG(uint64_t, ugal_bias_bytes, 4096,
          "--routing=ugal: bytes x hops the minimal path may exceed the valiant path by before a "
          "packet detours, 0..1073741824");
ABSL_FLAG(double, global_gbps, 0,
          "dragonfly and dragonflyplus: global link rate in Gb/s, 1..1600; 0: --fabric_gbps");
ABSL_FLAG(int32_t, global_latency_ns, -1,
          "dragonfly and dragonflyplus: global link delay in ns, 0..1000000; -1: --latency_ns");
ABSL_FLAG(uint32_t, leaves, 16, "leaf-spine: leaves, 1..1024");
ABSL_FLAG(uint32_t, spines, 8, "leaf-spine: spines, 1..256");
ABSL_FLAG(uint32_t, hosts_per_leaf, 8, "leaf-spine: hosts per leaf, 1..256");
ABSL_FLAG(uint32_t, k, 8, "fat-tree: arity, even 2..256 (k^3/4 hosts)");
ABSL_FLAG(double, gbps, 100, "link rate in Gb/s, 1..1600");
ABSL_FLAG(uint64_t, bytes, 1 << 20, "bytes per flow (permutation, incast, alltoall, allreduce total), 1..1073741824");
ABSL_FLAG(uint32_t, fan_in, 32, "incast and mix: senders per incast, 1..hosts-1");
ABSL_FLAG(uint32_t, incasts, 8,
          "mix: incasts beside the permutation, each to a distinct receiver, 1..hosts (with "
          "hosts + incasts x fan_in flows at most 16777216)");
ABSL_FLAG(double, loss, 0.01, "loss scenario: loss probability on fabric links, 0..0.5");
ABSL_FLAG(uint32_t, failed_links, 8,
          "failure scenario: top-tier links (leaf-spine, or aggregation-core in a fat-tree; picked "
          "by --seed) that fail or degrade, 1..the fabric's count");
ABSL_FLAG(double, degrade, 0.1,
          "failure scenario: the failed links' rate as a fraction of their own, 0..1 (0: down)");
ABSL_FLAG(std::string, degrade_queues, "scaled",
          "failure scenario: a degraded link's switch buffers and ECN thresholds: scaled (shrink "
          "with its rate, as uet-htsim models a reduced-speed link) or fixed (full-rate bytes)");
ABSL_FLAG(uint32_t, fail_at_us, 0, "failure scenario: when the links fail, in microseconds");
ABSL_FLAG(std::string, loss_rates, "0,0.001,0.01,0.05",
          "loss-sweep: comma-separated loss probabilities, each 0..0.5, per fabric link or per "
          "path (--loss_per)");
ABSL_FLAG(std::string, loss_per, "link",
          "loss-sweep: what --loss_rates mean: link (every fabric link drops that fraction, both "
          "directions) or path (each link drops 1-(1-r)^(1/L), L the fabric links the flow "
          "crosses, so a packet is lost with probability r end to end, as a NIC-to-NIC loss rate "
          "is usually quoted)");
ABSL_FLAG(uint64_t, sweep_bytes, 16 << 20,
          "loss-sweep: bytes of the one flow (host 0 to the last host), 1..1073741824");
ABSL_FLAG(double, load, 0.5, "websearch: offered load per host link, 0.01..1");
ABSL_FLAG(uint32_t, websearch_us, 200, "websearch: arrival window in microseconds, 1..100000");
ABSL_FLAG(std::string, coll, "allreduce",
          "collective scenario: allreduce, reducescatter, allgather, broadcast, alltoall, reduce, "
          "gather or scatter");
ABSL_FLAG(std::string, algo, "",
          "collective scenario: allreduce ring, tree or hd; reducescatter and allgather ring or "
          "hd; broadcast and reduce ring (a chain); alltoall pairwise or batched; gather and "
          "scatter batched; empty: the first named");
ABSL_FLAG(uint32_t, ranks, 0, "collective scenario: ranks, one per host, 2..hosts; 0: every host");
ABSL_FLAG(std::string, placement, "contiguous",
          "collective scenario: ranks on hosts: contiguous, strided or random (drawn from --seed)");
ABSL_FLAG(std::string, sizes, "64K:16M:4",
          "collective scenario: sizes as nccl-tests' -b/-e/-f, BEGIN:END:FACTOR with K, M, G "
          "suffixes, or one size");
ABSL_FLAG(uint32_t, channels, 1,
          "collective scenario: channels (parallel rings or trees, each a share of the buffer), "
          "1..64");
ABSL_FLAG(uint32_t, chunk_kb, 512, "collective scenario: pipelining chunk in KiB, 4..1048576");
ABSL_FLAG(uint32_t, slots, 8,
          "collective scenario: chunks in flight per rank pair and channel (NCCL_STEPS), 1..64");
ABSL_FLAG(uint32_t, iters, 1,
          "collective scenario: iterations per size, runs with seeds seed, seed+1, ..., 1..1000");
ABSL_FLAG(uint32_t, root, 0,
          "collective scenario: the root rank of broadcast, reduce, gather and scatter, "
          "0..ranks-1");
ABSL_FLAG(uint32_t, dp, 0,
          "collective scenario: data-parallel degree; with --tp, ranks = dp x tp (0: ranks / tp)");
ABSL_FLAG(uint32_t, tp, 1,
          "collective scenario: tensor-parallel degree, ranks d*tp..d*tp+tp-1 form a group, 1..ranks");
ABSL_FLAG(std::string, coll_group, "world",
          "collective scenario: the communicators that run the collective at once: world (every "
          "rank), tp (dp groups of tp adjacent ranks) or dp (tp groups of dp strided ranks)");
ABSL_FLAG(uint32_t, gpus_per_server, 1,
          "rail topology: GPUs (rails) per server, 1..64; collective scenario: hosts per "
          "multi-GPU server, 1 (flat) or 2..64: each host is one "
          "GPU with its own NIC (a rail); all-reduce runs hierarchically (intra-server "
          "reduce-scatter, all-reduce per rail over the fabric, intra-server all-gather)");
ABSL_FLAG(double, intra_gbps, 3600,
          "collective scenario, --gpus_per_server > 1: the intra-server rate per GPU and "
          "direction in Gb/s (NVLink 4: 3600), 1..1000000");
ABSL_FLAG(double, intra_us, 1,
          "collective scenario, --gpus_per_server > 1: the latency of an intra-server phase in "
          "us, 0..1000000");
ABSL_FLAG(std::string, trace, "",
          "trace scenario: Chakra execution trace files PREFIX.0.et, PREFIX.1.et, ... (one per "
          "rank; the ranks placed by --placement); collectives use --channels, --chunk_kb, --slots");
ABSL_FLAG(std::string, comm_groups, "",
          "trace scenario: the communicators pg_name attributes name, as ASTRA-sim's "
          "--comm-group-configuration: a JSON object {\"name\": [ranks...], ...}");
ABSL_FLAG(double, coll_loss, 0,
          "collective scenario: loss probability on fabric links, 0..0.5 (> 0: RoCEv2 without PFC "
          "under --pfc=auto, as in the loss scenario)");
ABSL_FLAG(uint32_t, coll_failed_links, 0,
          "collective scenario: top-tier links that fail or degrade as in the failure scenario "
          "(--degrade, --degrade_queues, --fail_at_us), 0..the fabric's count");
ABSL_FLAG(uint32_t, mtu, 4096, "payload bytes per packet: 256, 512, 1024, 2048 or 4096");
ABSL_FLAG(uint32_t, evs, 32, "UET: entropy values to spray over, 1..4096 (1 = one path)");
ABSL_FLAG(std::string, lb, "reps",
          "UET: path selection over --evs: fixed (one EV per PDC, single path), oblivious "
          "(spraying), reps (recycled entropy), bitmap (penalised EVs skipped), mixed (reps, exploring as bitmap); pathsel/");
ABSL_FLAG(std::string, cc, "nscc",
          "UET congestion control: nscc (the sender's window), rccc (receiver credit: RUD_CC "
          "requests, CREDIT grants paced at the receiver's line rate) or both; RoCEv2 runs DCQCN "
          "whatever this says");
ABSL_FLAG(std::string, uet_mode, "rud",
          "UET: delivery mode of the flows' WRITEs: rud, rod (one EV per PDC, in-order "
          "execution at the target), rudi (no PDC: per-packet IDs, idempotent WRITEs) or uud "
          "(unreliable single-packet datagrams that complete when sent: flows of at most --mtu)");
ABSL_FLAG(std::string, verb, "write",
          "what each flow is: write (an RDMA WRITE of its bytes), send (a message matched at the "
          "destination, which posts its receive as the flow starts: UET tagged send into a "
          "tagged receive, RoCEv2 SEND into the shared receive queue) or atomic (one fetching "
          "64-bit add at the destination: UET FETCHING_ATOMIC, RoCEv2 FETCH_ADD; --bytes "
          "ignored)");
ABSL_FLAG(uint64_t, rendezvous_bytes, 0,
          "UET, --verb=send: tagged sends longer than this go by rendezvous (spec/uet.md §4.5.3: "
          "the first packet eagerly, the rest READ by the destination once matched); 0 (the "
          "default): all eager, or --mtu..4294967295");
ABSL_FLAG(bool, deferrable, false,
          "UET, --verb=send: tagged sends are deferrable (spec/uet.md §4.2: one that finds no "
          "receive is deferred without its bytes, and restarted on the destination's "
          "DEFERRABLE_RTR once the receive is posted); RoCEv2 runs as without it (RC answers a "
          "missing receive with RNR NAKs)");
ABSL_FLAG(bool, rack, true,
          "UET: infer losses from the SACKs (RACK, RFC 8985); false: resend only on NACKs, the "
          "tail-loss probe and the RTO, as uet-htsim's sender without -sleek");
ABSL_FLAG(bool, ack_ooo, true,
          "UET: the target ACKs a request that arrived out of order at once; false: it "
          "coalesces like any other (ack every 4 packets or 2 us), as uet-htsim's sink");
ABSL_FLAG(double, min_rto_us, 0,
          "UET: the RTO estimate's floor in us (UetConfig::min_rto), and the first RTO at least "
          "this; 0 (the default): the engine's 10 us, the first RTO the base RTT plus one "
          "buffer's drain; else 1..10000");
ABSL_FLAG(double, recv_delay_us, 0,
          "--verb=send: the destination posts each flow's receive this long after the send "
          "starts, as a late application would; 0 (the default): as it starts, or 0..1000000");
ABSL_FLAG(bool, tss, false,
          "UET: seal every frame (TSS, spec/uet.md §5: AES-256-GCM, 28 more bytes a frame); "
          "RoCEv2 has no security sublayer and runs as without it");
ABSL_FLAG(double, tss_ns_per_frame, 0,
          "UET with --tss: host work per frame, charged as time its NIC is busy, 0..1e6 ns "
          "(0: an inline crypto engine at line rate; software sealing and opening on one core "
          "here: see bench/README.md, \"TSS\")");
ABSL_FLAG(double, tss_ns_per_kib, 0,
          "UET with --tss: host work per KiB of frame, as --tss_ns_per_frame, 0..1e6 ns");
ABSL_FLAG(std::string, tss_backend, "auto",
          "UET with --tss: the AES-256-GCM library the simulated hosts seal with (wall time "
          "only: results are the same bytes), auto, ipsec-mb or openssl");
ABSL_FLAG(std::string, tss_key_file, "",
          "UET with --tss: the secure domains' keys (the key file format of dissector/README.md, "
          "which Wireshark reads too, so the --pcap captures open decrypted); the first "
          "domain sends. Empty: one domain with a key drawn from --seed");
ABSL_FLAG(std::string, dcqcn, "htsim",
          "RoCEv2: DCQCN parameter profile: htsim, dcqcn-ns3 (the DCQCN authors' code) or "
          "connectx (NVIDIA firmware defaults); cc/dcqcn.h lists the values");
ABSL_FLAG(double, fabric_gbps, 0,
          "switch-to-switch link rate in Gb/s, 1..1600; 0: the same as --gbps (below it: "
          "oversubscribed uplinks)");
ABSL_FLAG(uint32_t, hosts_per_tor, 0,
          "fat-tree: hosts per ToR, 0..256; 0: k/2 (non-blocking); more oversubscribe the ToR");
ABSL_FLAG(uint32_t, latency_ns, 500, "propagation delay of every link in ns, 0..1000000");
ABSL_FLAG(bool, ecn, true, "switches mark ECN (RED on the data-class queue)");
ABSL_FLAG(uint32_t, ecn_kmin_kb, 100, "ECN: marking starts at this queue in KiB, 1..65536");
ABSL_FLAG(uint32_t, ecn_kmax_kb, 400,
          "ECN: the probability reaches --ecn_pmax below this queue and 1 from it, KiB, "
          "--ecn_kmin_kb..65536");
ABSL_FLAG(double, ecn_pmax, 0.2, "ECN: the marking probability just below kmax, 0..1");
ABSL_FLAG(bool, trimming, true, "switches trim UET requests instead of dropping (UET runs)");
ABSL_FLAG(bool, trim_last_half, false,
          "with trimming, a request that finds the queue full is trimmed or, with probability "
          "1/2, the last one queued is and it takes its place (NDP; uet-htsim's switches)");
ABSL_FLAG(std::string, pfc, "auto",
          "PFC on the data class: auto (RoCEv2 runs lossless except in loss scenarios, UET "
          "never), on (both transports), off (neither)");
ABSL_FLAG(uint32_t, pfc_xoff_kb, 64,
          "PFC: an ingress pauses its upstream above this many KiB of the lossless class, "
          "1..65536 (128 KiB of headroom beyond it); below --ecn_kmin_kb PFC acts before ECN");
ABSL_FLAG(uint32_t, pfc_xon_kb, 48, "PFC: and resumes it below this, KiB, 0..--pfc_xoff_kb - 1");
ABSL_FLAG(std::string, pfc_watchdog, "report",
          "PFC watchdog on every switch egress (sim/pfc_watchdog.h): report (a pause that "
          "outlasts --pfc_watchdog_us is counted and a deadlock, a cycle of paused queues, "
          "stops the run), drop (SONiC's default: the queue is emptied and drops arrivals until "
          "no pause holds it for --pfc_watchdog_us), off");
ABSL_FLAG(uint32_t, pfc_watchdog_us, 10000,
          "PFC watchdog: detection and restoration time in us, 1..60000000");
ABSL_FLAG(uint64_t, buffer_kb, 1024, "switch buffer per port in KiB, 16..65536");
ABSL_FLAG(uint64_t, control_buffer_kb, 256,
          "switch buffer per port for the control class (trimmed headers, ACKs, NACKs: a header "
          "that finds it full is dropped with its NACK) in KiB, 1..65536; uet-htsim's header "
          "queue holds twice the data queue");
ABSL_FLAG(uint64_t, seed, 1, "seed of the fabric and the workload");
ABSL_FLAG(uint32_t, max_ms, 200, "simulated time limit per run in milliseconds, 1..100000");
ABSL_FLAG(std::string, json, "", "write one JSON object per run to this file");
ABSL_FLAG(std::string, csv, "", "write one row per flow per run to this file");
ABSL_FLAG(std::string, plot, "",
          "directory for charts rendered by gnuplot (SVG): per scenario the FCT CDF, delivered "
          "throughput and switch queues over time, both transports on each; loss-sweep: goodput "
          "against loss");
ABSL_FLAG(double, plot_sample_us, 5,
          "--plot: sampling interval of the throughput and queue charts in microseconds, 0.1..10000");
ABSL_FLAG(std::string, save_config, "",
          "write the experiment file (every parameter of this run, seed included, as --flag=value "
          "lines) here; runs with --json=F also write F.flags, runs with --plot=DIR DIR/experiment.flags");
ABSL_FLAG(std::string, config, "",
          "read an experiment file written by --save_config (flags given after it override it)");
ABSL_FLAG(double, max_memory_gb, 0,
          "refuse a request whose estimated peak memory exceeds this many GiB, 0..1000000; 0: "
          "the machine's MemAvailable");
ABSL_FLAG(bool, progress, false,
          "print the progress line on stderr even when stderr is not a terminal (on a terminal "
          "it is always shown once a run takes 2 s)");
ABSL_FLAG(std::string, pcap, "",
          "directory for pcaps of host 0's traffic, one pair per run (SCENARIO_TRANSPORT_h0_tx.pcap, _rx)");
