#!/usr/bin/env python3
"""Flows per link, tier by tier, in uet-htsim's single-path permutation, beside ours
(bench/README.md, "Where we differ from uet-htsim": the 1-path row).

  htsim_paths.py log PATHS.log --cm FILE [--k 16]
      Reads the path log of an htsim_uec built with one logging line added to
      FatTreeSwitch::receivePacket (datacenter/fat_tree_switch.cpp; bench/README.md gives
      the line): "PATH <flow id> <dst> <path id> <egress queue>", one line per data packet
      flow, path id and egress queue first seen. Prints the histogram of flows per link for
      each tier, as uet-anchors --path_report prints ours. With "BYTES <queue> <bytes>
      <packets>" lines too (the data bytes offered to each queue), the busiest link's bytes.
  htsim_paths.py random --cm FILE [--k 16] [--trials 1000] [--seed 1] [--evs N]
      The same histogram's busiest link under ideal ECMP: every switch picks each flow's up
      link uniformly and independently (what a perfect hash gives), over many draws: the
      spread that hash luck alone gives the busiest link on this connection matrix. With
      --evs N, each flow's packets (--packets) go round N EVs, each hashed on its own: the
      busiest link's bytes in flows' worth (no retransmissions).

htsim's queue names (fat_tree_topology.cpp): LSt->USa (ToR to agg), USa->CSc (agg to core),
CSc->USa (core to agg), USa->LS_t (agg to ToR), LSt->DSTh (ToR to host). A k-ary fat-tree has
k^3/4 links in each of these tiers, and a host h hangs off ToR h / (k/2), in pod ToR / (k/2).
"""
import argparse
import collections
import random
import re
import sys

TIERS = [("host->ToR", None), ("ToR->agg", re.compile(r"^LS\d+->US\d+")),
         ("agg->core", re.compile(r"^US\d+->CS\d+")), ("core->agg", re.compile(r"^CS\d+->US\d+")),
         ("agg->ToR", re.compile(r"^US\d+->LS_\d+")), ("ToR->host", re.compile(r"^LS\d+->DST\d+"))]


def read_cm(path):
    """The connection matrix's flows as (src, dst) in file order."""
    flows = []
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*(\d+)->(\d+)", line)
            if m:
                flows.append((int(m.group(1)), int(m.group(2))))
    return flows


def histogram(loads, links):
    """{flows on a link: links}, the links no flow crossed included."""
    h = collections.Counter(loads.values())
    h[0] += links - len(loads)
    return {n: c for n, c in sorted(h.items()) if c}


def tier_of(queue):
    for name, pattern in TIERS[1:]:
        if pattern.match(queue):
            return name
    return None


def print_tiers(per_tier, links, flow_us, tier_bytes=None):
    """Each tier's histogram; with the queues' bytes (tier_bytes), its busiest queue's too."""
    busiest = 0
    for name, _ in TIERS:
        h = histogram(per_tier.get(name, {}), links)
        top = max(h)
        busiest = max(busiest, top)
        mb = (f", busiest {max(tier_bytes[name].values()) / 1e6:6.2f} MB"
              if tier_bytes and tier_bytes.get(name) else "")
        print(f"    {name:<12} {links:5d} links, max {top:3d} flows{mb}: "
              + " ".join(f"{n}:{c}" for n, c in h.items()))
    if not tier_bytes:
        print(f"    busiest link: {busiest} flows x {flow_us:.2f} us = {busiest * flow_us:.1f} us")
        return
    top = max(max(b.values()) for t, b in tier_bytes.items() if b and t != "ToR->host")
    print(f"    busiest switch link: {top / 1e6:.2f} MB at 100 Gb/s = {top * 8 / 1e5:.1f} us")


def from_log(args):
    """Flows per link from htsim's path log: a flow counts once on each queue it used."""
    flows = read_cm(args.cm)
    queues_of = collections.defaultdict(set)
    tier_bytes = collections.defaultdict(dict)  # "BYTES <queue> <bytes> <packets>" lines
    with open(args.log) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[0] == "PATH":
                queues_of[int(parts[1])].add(parts[4])
            elif len(parts) == 4 and parts[0] == "BYTES" and tier_of(parts[1]):
                tier_bytes[tier_of(parts[1])][parts[1]] = int(parts[2])
    per_tier = collections.defaultdict(collections.Counter)
    for q_set in queues_of.values():
        for q in q_set:
            if tier_of(q):
                per_tier[tier_of(q)][q] += 1
    for src, _ in flows:
        per_tier["host->ToR"][src] += 1
    flow_links = sum(sum(c.values()) for c in per_tier.values())
    print(f"  paths: {len(queues_of)} flows in the log ({len(flows)} in the cm), "
          f"{flow_links} flow-links; flows per link (flows:links)")
    print_tiers(per_tier, args.k ** 3 // 4, args.flow_us, tier_bytes)
    return 0


def draw(flows, k, rng):
    """One ideal-ECMP draw: flows per link of each switch tier, keyed by link."""
    half = k // 2
    per_tier = collections.defaultdict(collections.Counter)
    for src, dst in flows:
        ts, td = src // half, dst // half
        if ts == td:
            continue
        a = rng.randrange(half)  # the ToR's up link: the pod's agg a
        ps, pd = ts // half, td // half
        per_tier["ToR->agg"][(ts, a)] += 1
        per_tier["agg->ToR"][(pd, a, td)] += 1
        if ps != pd:
            c = rng.randrange(half)  # the agg's up link: core a * half + c
            per_tier["agg->core"][(ps, a, c)] += 1
            per_tier["core->agg"][(a, c, pd)] += 1
    return per_tier


def draw_sprayed(flows, k, evs, packets, rng):
    """One ideal-ECMP draw of a sprayed permutation: each flow's packets go round its `evs`
    EVs (as oblivious spraying does), each EV hashed to its own up links; the busiest switch
    link's packets."""
    half = k // 2
    load = collections.Counter()
    for src, dst in flows:
        ts, td = src // half, dst // half
        if ts == td:
            continue
        ps, pd = ts // half, td // half
        for e in range(evs):
            n = packets // evs + (e < packets % evs)
            a = rng.randrange(half)
            load[("up", ts, a)] += n
            load[("down", pd, a, td)] += n
            if ps != pd:
                c = rng.randrange(half)
                load[("core-up", ps, a, c)] += n
                load[("core-down", a, c, pd)] += n
    return max(load.values())


def from_random(args):
    flows = read_cm(args.cm)
    rng = random.Random(args.seed)
    if args.evs > 1:
        busiest = sorted(draw_sprayed(flows, args.k, args.evs, args.packets, rng)
                         for _ in range(args.trials))
        q = [busiest[int(f * (len(busiest) - 1))] / args.packets for f in (0, 0.5, 1)]
        print(f"  ideal ECMP, {args.trials} draws, {args.evs} EVs a flow: the busiest switch link "
              f"carries min {q[0]:.3f} / median {q[1]:.3f} / max {q[2]:.3f} flows' bytes")
        return 0
    busiest = collections.Counter()
    for _ in range(args.trials):
        per_tier = draw(flows, args.k, rng)
        busiest[max(max(c.values()) for c in per_tier.values())] += 1
    print(f"  ideal ECMP, {args.trials} draws over {len(flows)} flows: busiest link's flows "
          "(flows: draws), and its flows x the flow's time at line rate")
    for n, draws in sorted(busiest.items()):
        print(f"    {n:3d}: {draws:5d}  ({100.0 * draws / args.trials:5.1f} %)  "
              f"{n * args.flow_us:7.1f} us")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("mode", choices=["log", "random"])
    p.add_argument("log", nargs="?", help="htsim's path log (mode log)")
    p.add_argument("--cm", required=True, help="the connection matrix the run used")
    p.add_argument("--k", type=int, default=16, help="the fat-tree's k (1024 hosts: 16)")
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--evs", type=int, default=1,
                   help="random: EVs a flow sprays over (1: one path per flow)")
    p.add_argument("--packets", type=int, default=490, help="random, sprayed: packets a flow")
    # htsim's 2 MB: 490 packets of 4150 bytes at 100 Gb/s (bench/README.md, "Bytes on the wire").
    p.add_argument("--flow_us", type=float, default=162.68,
                   help="one flow's time on a link at line rate, us")
    args = p.parse_args()
    if args.k < 2 or args.k % 2:
        p.error(f"--k={args.k}: an even k of at least 2")
    if args.mode == "log":
        if not args.log:
            p.error("log: the path log's file")
        return from_log(args)
    return from_random(args)


if __name__ == "__main__":
    sys.exit(main())
