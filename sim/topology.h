// Topology builders: leaf-spine and 3-tier fat-tree (k-ary), with per-tier links and
// oversubscription; the AI/HPC families (dragonfly, Dragonfly+, torus and mesh, hypercube,
// rail-optimised planes: topology_*.cc); any graph from a file (topology_graph.h). Hosts are
// added first, so host i is node i and has address 10.0.0.1 + i; each builder says how it
// numbers its switches. Every builder ends with Network::finalize(), whose shortest-path ECMP
// gives minimal routing on any of these graphs: from tables, but for the leaf-spine and the
// fat-tree, whose numbering (hosts, ToRs, aggregation switches, cores or spines; links in the
// order given with their configurations) lets routing compute the same routes
// (sim/routing/clos.h).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "sim/network.h"

namespace uet::sim {

// Numbering: hosts, then leaves (switch l), then spines (switch leaves + j); host x on leaf
// x / hosts_per_leaf; links: host links, then leaf by leaf its link to each spine.
struct LeafSpineConfig {
  uint32_t leaves = 4;
  uint32_t spines = 2;
  uint32_t hosts_per_leaf = 8;  // oversubscription = hosts_per_leaf * host rate / (spines * fabric rate)
  LinkConfig host_link;
  LinkConfig fabric_link;
};

// k pods of k/2 ToRs and k/2 aggregation switches, (k/2)^2 cores. With hosts_per_tor = k/2 the
// fabric is non-blocking (k^3/4 hosts); more hosts per ToR oversubscribe the ToR uplinks.
// Numbering: switches are the ToRs (ToR i of pod p: switch p*k/2 + i), the aggregation
// switches (a of pod p: k^2/2 + p*k/2 + a), the cores (j of group a: k^2 + a*k/2 + j); host x
// on ToR x / hosts_per_tor; links: host links, then pod by pod its ToR-aggregation links (ToR by ToR) and its
// aggregation-core links (aggregation switch a to each core of group a).
struct FatTreeConfig {
  uint32_t k = 4;
  uint32_t hosts_per_tor = 0;  // 0: k/2
  LinkConfig host_link;
  LinkConfig tor_agg_link;
  LinkConfig agg_core_link;
};

absl::Status build_leaf_spine(Network& net, const LeafSpineConfig& c);
absl::Status build_fat_tree(Network& net, const FatTreeConfig& c);

// The shape checks the builders make before adding a node (sizes in range, at most
// kMaxHosts hosts), so a caller can refuse a fabric without building it.
absl::Status check_leaf_spine(const LeafSpineConfig& c);
absl::Status check_fat_tree(const FatTreeConfig& c);

// ----- the AI/HPC families

// What a builder tells about the fabric it made, for routing modes that use the structure
// (Valiant, UGAL, dimension order) and for placing the fabric on ranks (sim/partition.h).
struct TopologyLayout {
  static constexpr uint8_t kNoDim = 0xFF;
  // By switch index: its group (dragonfly, Dragonfly+), its slab (torus: its coordinate along
  // the last dimension), its block of servers (rail: the leaves of one block, every rail; spines
  // kNone). Empty for the other fabrics.
  std::vector<uint32_t> group;
  uint32_t groups = 0;  // 1 + the largest group number
  // Torus and hypercube, by port number (Network numbers ports in connect() order, two per link:
  // 2i at the link's first node, 2i + 1 at its second): the dimension the port's link runs
  // along (kNoDim: a host's link), and its direction from the port's switch: +1 towards the
  // higher coordinate (the wraparound link of a ring is +1 at k-1 and -1 at 0; a hypercube
  // link is +1 at the switch whose bit is 0), 0 for a host's link. Empty for the others.
  std::vector<uint8_t> port_dim;
  std::vector<int8_t> port_dir;
};

// Nodes and links a configuration builds, computed without building (memory estimates).
struct TopologySize {
  uint64_t hosts = 0;
  uint64_t switches = 0;
  uint64_t links = 0;         // every link, host links included
  uint64_t fabric_links = 0;  // switch-to-switch links
};

// Dragonfly (Kim, Dally, Scott, Abts, "Technology-driven, highly-scalable dragonfly topology",
// ISCA 2008): g groups of a routers, the routers of a group all-to-all; each router has p hosts
// and h global links. Balanced: a = 2p = 2h. g = a*h + 1 (the default) joins every pair of
// groups by exactly one global link; fewer groups, with g - 1 dividing a*h, by a*h / (g - 1).
// Global links, "consecutive" (absolute) arrangement: group i's global ports are numbered
// k = router * h + j (router in its group, j < h), and port k leads to the other groups in
// order, i.e. other group m = k mod (g - 1) counting from 0 and skipping i (m < i: group m,
// else m + 1); the n-th port of group i towards group j pairs with the n-th of j towards i.
// Numbering: hosts router by router (host x on router x / p); router r of group i is switch
// i*a + r; links: host links, then each group's local links (r < r' in order), then global
// links by group i < j and n. Minimal routes: at most 3 switch-to-switch hops (local, global,
// local).
struct DragonflyConfig {
  uint32_t p = 2;  // hosts per router, 1..256
  uint32_t a = 4;  // routers per group, 1..256
  uint32_t h = 2;  // global links per router, 1..256
  uint32_t g = 0;  // groups, 2..a*h+1; 0: a*h + 1
  LinkConfig host_link;
  LinkConfig local_link;
  LinkConfig global_link;
  uint32_t groups() const noexcept { return g == 0 ? a * h + 1 : g; }
};

// Dragonfly+ (Shpiner, Haramaty, Eliad, Zdornov, Gafni, Zahavi, "Dragonfly+: Low cost topology
// for scaling datacenters", HiPINeB 2017): each group a two-level leaf-spine (every leaf to
// every spine of its group); leaves carry the hosts, spines the global links, h each, arranged
// over a group's spine*h global ports as the dragonfly's above. Groups default spines*h + 1.
// Numbering: group i's leaves are switches i*(leaves+spines) + l, its spines follow them;
// links: host links, each group's leaf-spine links (leaf by leaf), then global links. Minimal
// routes: same leaf 0 switch-to-switch hops, same group 2, another group 3.
struct DragonflyPlusConfig {
  uint32_t leaves = 4;          // leaves per group, 1..256
  uint32_t spines = 4;          // spines per group, 1..256
  uint32_t hosts_per_leaf = 4;  // 1..256
  uint32_t h = 4;               // global links per spine, 1..256
  uint32_t g = 0;               // groups, 2..spines*h+1; 0: spines*h + 1
  LinkConfig host_link;
  LinkConfig local_link;  // leaf-spine within a group
  LinkConfig global_link;
  uint32_t groups() const noexcept { return g == 0 ? spines * h + 1 : g; }
};

// A torus (wraparound) or mesh of 1 to 3 dimensions, k_d switches along dimension d, each with
// hosts_per_switch hosts. Switch (x0, x1, x2) is x0 + k0*(x1 + k1*x2); host x is on switch
// x / hosts_per_switch. Links: host links, then for each switch in order, each dimension d,
// the link to the next switch along d (x_d + 1, or 0 from k_d - 1 when wrapping). A dimension
// of 2 has one link between its two switches, not two (so no parallel links). Minimal routes:
// sum over d of min(|dx_d|, k_d - |dx_d|) hops (mesh: |dx_d|).
struct TorusConfig {
  std::vector<uint32_t> dims = {4, 4};  // 1..3 dimensions, each 2..256
  uint32_t hosts_per_switch = 1;        // 1..256
  bool wraparound = true;               // false: a mesh
  LinkConfig host_link;
  LinkConfig fabric_link;
};

// A hypercube of 2^dim switches, switch s linked to s ^ (1 << d) for each d < dim, each with
// hosts_per_switch hosts (host x on switch x / hosts_per_switch). Links: host links, then for
// each switch s in order and each d with bit d of s clear, the link s - s^(1<<d). Minimal
// routes: the Hamming distance of the two switches.
struct HypercubeConfig {
  uint32_t dim = 3;               // 1..16
  uint32_t hosts_per_switch = 1;  // 1..256
  LinkConfig host_link;
  LinkConfig fabric_link;
};

// Rail-optimised fabric: servers of G = gpus_per_server GPUs, each GPU with its own NIC (a
// host): host s*G + r is GPU r of server s, on rail r. Each rail has a leaf per block of
// servers_per_leaf servers (leaf of block b, rail r = switch b*G + r, so a block's leaves are
// numbered together); host (s, r) links to the leaf of block s / servers_per_leaf and rail r.
// Planes joined: `spines` spines (after the leaves), each linked to every leaf: a two-level
// Clos over all rails, where cross-rail traffic goes leaf-spine-leaf. Planes apart: each rail
// its own plane of `spines` spines (rail r's are switches leaves + r*spines + j), linked to
// that rail's leaves only; hosts on different rails have no path (in a real server the data
// would cross NVLink to the destination's rail first): workloads must stay within a rail, and
// uet-ab refuses a flow that leaves its rail. Minimal routes: same leaf 0 switch-to-switch
// hops, otherwise 2.
struct RailConfig {
  uint32_t servers = 16;          // 1..65536
  uint32_t gpus_per_server = 8;   // rails, 1..64
  uint32_t servers_per_leaf = 8;  // 1..256: hosts per leaf
  uint32_t spines = 8;            // per plane, 1..256
  bool planes_joined = true;
  LinkConfig host_link;
  LinkConfig fabric_link;  // leaf-spine
  uint32_t blocks() const noexcept { return (servers + servers_per_leaf - 1) / servers_per_leaf; }
};

absl::Status check_dragonfly(const DragonflyConfig& c);
absl::Status check_dragonfly_plus(const DragonflyPlusConfig& c);
absl::Status check_torus(const TorusConfig& c);
absl::Status check_hypercube(const HypercubeConfig& c);
absl::Status check_rail(const RailConfig& c);

// The sizes; meaningful for a configuration its check accepts.
TopologySize dragonfly_size(const DragonflyConfig& c) noexcept;
TopologySize dragonfly_plus_size(const DragonflyPlusConfig& c) noexcept;
TopologySize torus_size(const TorusConfig& c) noexcept;
TopologySize hypercube_size(const HypercubeConfig& c) noexcept;
TopologySize rail_size(const RailConfig& c) noexcept;

// Each builds, finalizes, and (when `layout` is not null) fills the layout.
absl::Status build_dragonfly(Network& net, const DragonflyConfig& c,
                             TopologyLayout* layout = nullptr);
absl::Status build_dragonfly_plus(Network& net, const DragonflyPlusConfig& c,
                                  TopologyLayout* layout = nullptr);
absl::Status build_torus(Network& net, const TorusConfig& c, TopologyLayout* layout = nullptr);
absl::Status build_hypercube(Network& net, const HypercubeConfig& c,
                             TopologyLayout* layout = nullptr);
absl::Status build_rail(Network& net, const RailConfig& c, TopologyLayout* layout = nullptr);

}  // namespace uet::sim
