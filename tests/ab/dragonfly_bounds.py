#!/usr/bin/env python3
"""Analytic saturation bounds of the simulator's routing on a balanced dragonfly (g = a*h + 1).

Built from the wiring sim/topology.h documents (router r of group i is switch i*a + r, hosts p
per router, routers of a group all-to-all, global links in the consecutive arrangement), not
from the simulator. Minimal routing is the simulator's: shortest paths in switch hops, each
switch splitting a destination's traffic equally over its next hops on shortest paths (packets
with random source ports hash evenly). Where a path through two global links is as short as
local-global-local, it is one of them, so this is not Kim et al.'s MIN (one global hop).
Valiant: an intermediate group uniform over all g groups, reached minimally (nearest switch
of the group), then minimally to the destination; a source in the intermediate group goes
minimally. Each (traffic, routing) pair gives the per-unit-load traffic on every link; the
bound is 1 / max(busiest link, 1 for the host links).
Usage: dragonfly_bounds.py P A H   (prints the four bounds)
"""
import collections
import sys


def dragonfly(p, a, h):
    """(groups, routers, adjacency by router) of the balanced dragonfly."""
    g = a * h + 1
    n = g * a
    adj = [[] for _ in range(n)]
    for i in range(g):
        for r in range(a):
            adj[i * a + r] += [i * a + s for s in range(a) if s != r]
    for i in range(g):
        for j in range(g):
            if i != j:  # group i's global port k = (j, skipping i) leads to j; router k // h
                adj[i * a + (j if j < i else j - 1) // h].append(j * a + (i if i < j else i - 1) // h)
    return g, n, adj


def distances(adj, targets):
    dist = [None] * len(adj)
    queue = collections.deque(targets)
    for t in targets:
        dist[t] = 0
    while queue:
        u = queue.popleft()
        for v in adj[u]:
            if dist[v] is None:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def spread(adj, dist, inflow, load):
    """Moves `inflow` (router -> amount) towards distance 0, split equally over next hops,
    adding to `load` per link; returns what arrives, by router."""
    todo = collections.Counter(inflow)
    for d in range(max([dist[s] for s in todo] + [0]), 0, -1):
        for s in [s for s in todo if dist[s] == d]:
            f = todo.pop(s)
            nexts = [v for v in adj[s] if dist[v] == d - 1]
            for v in nexts:
                load[(s, v)] += f / len(nexts)
                todo[v] += f / len(nexts)
    return todo


def bound(p, a, h, traffic, routing):
    """The offered load (fraction of line rate) at which the busiest link reaches its rate."""
    g, n, adj = dragonfly(p, a, h)
    hosts = n * p
    load = collections.Counter()
    to_group = [distances(adj, range(G * a, G * a + a)) for G in range(g)]
    for t in range(n):
        demand = collections.Counter()  # by source router, towards router t, per unit load
        if traffic == "wc":  # every host of group t//a - 1 to a random host of t's group
            src = (t // a - 1) % g
            for r in range(a):
                demand[src * a + r] = p / a
        else:
            for s in range(n):
                if s != t:
                    demand[s] = p * p / (hosts - 1)
        minimal = demand
        if routing == "valiant":
            minimal = collections.Counter()
            for G in range(g):
                phase1 = collections.Counter()
                for s, f in demand.items():
                    (minimal if s // a == G else phase1)[s] += f / g
                minimal.update(spread(adj, to_group[G], phase1, load))
        spread(adj, distances(adj, [t]), minimal, load)
    return 1 / max(max(load.values()), 1.0)


if __name__ == "__main__":
    p, a, h = (int(x) for x in sys.argv[1:4])
    for traffic in ("ur", "wc"):
        for routing in ("minimal", "valiant"):
            print(f"{traffic} {routing}: {bound(p, a, h, traffic, routing):.4f}")
