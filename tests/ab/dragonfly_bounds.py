#!/usr/bin/env python3
"""Analytic saturation bounds of the simulator's routing on a balanced dragonfly (g = a*h + 1).

Built from the wiring sim/topology.h documents (router r of group i is switch i*a + r, hosts p
per router, routers of a group all-to-all, global links in the consecutive arrangement), not
from the simulator. Minimal routing is the simulator's, each switch splitting a destination's
traffic equally over its next hops (packets with random source ports hash evenly), in one of
two families. Group-minimal (the default, RoutingConfig::group_minimal): fewest global links,
then fewest local ones, Kim et al.'s MIN (local-global-local). Shortest paths
(group_minimal=False): fewest switch hops; where a path through two global links is as short
as local-global-local it is one of them, so not Kim et al.'s MIN.
Valiant: an intermediate group uniform over all g groups, reached minimally (nearest switch
of the group), then minimally to the destination; a source in the intermediate group goes
minimally. With via_switch (RoutingConfig::valiant_via_switch, booksim2's dragonflynew) a
detour goes on from where it enters the group to a switch of it drawn uniformly, then
minimally, and traffic within a group does not detour. Each (traffic, routing) pair gives the
per-unit-load traffic on every link; the bound is 1 / max(busiest link, 1 for the host links).
Usage: dragonfly_bounds.py P A H   (prints the four bounds of each family, then Valiant's via
a switch)
"""
import collections
import heapq
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


def distances(adj, targets, weight):
    """Least cost from every router to the nearest target (None: unreachable), `weight(u, v)`
    per link (links come in pairs, so outgoing costs equal incoming)."""
    dist = [None] * len(adj)
    heap = [(0, t) for t in targets]
    for t in targets:
        dist[t] = 0
    while heap:
        c, u = heapq.heappop(heap)
        if c != dist[u]:
            continue
        for v in adj[u]:
            if dist[v] is None or c + weight(u, v) < dist[v]:
                dist[v] = c + weight(u, v)
                heapq.heappush(heap, (dist[v], v))
    return dist


def spread(adj, dist, weight, inflow, load):
    """Moves `inflow` (router -> amount) towards cost 0, split equally over next hops (links
    one weight closer), adding to `load` per link; returns what arrives, by router."""
    todo = collections.Counter(inflow)
    while any(dist[s] > 0 for s in todo):
        s = max((s for s in todo if dist[s] > 0), key=lambda s: dist[s])
        f = todo.pop(s)
        nexts = [v for v in adj[s] if dist[v] is not None and dist[v] + weight(s, v) == dist[s]]
        for v in nexts:
            load[(s, v)] += f / len(nexts)
            todo[v] += f / len(nexts)
    return todo


def bound(p, a, h, traffic, routing, group_minimal=True, via_switch=False):
    """The offered load (fraction of line rate) at which the busiest link reaches its rate."""
    g, n, adj = dragonfly(p, a, h)
    entered = collections.Counter()  # via_switch: detours' arrivals by router, all destinations
    hosts = n * p

    def weight(u, v):  # group-minimal: a global link outweighs any local path (< n links)
        return n + 1 if group_minimal and u // a != v // a else 1

    load = collections.Counter()
    to_group = [distances(adj, range(G * a, G * a + a), weight) for G in range(g)]
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
                    local = via_switch and s // a == t // a
                    (minimal if s // a == G or local else phase1)[s] += f / g
                arrived = spread(adj, to_group[G], weight, phase1, load)
                if not via_switch:
                    minimal.update(arrived)
                    continue
                entered.update(arrived)
                for w in range(G * a, G * a + a):  # then from the drawn switch, minimally
                    minimal[w] += sum(arrived.values()) / a
        spread(adj, distances(adj, [t], weight), weight, minimal, load)
    for r, f in entered.items():  # the legs inside the intermediate group, every destination's
        for w in range(r // a * a, r // a * a + a):
            spread(adj, distances(adj, [w], weight), weight, {r: f / a}, load)
    return 1 / max(max(load.values()), 1.0)


if __name__ == "__main__":
    p, a, h = (int(x) for x in sys.argv[1:4])
    for family in (True, False):
        for traffic in ("ur", "wc"):
            for routing in ("minimal", "valiant"):
                b = bound(p, a, h, traffic, routing, family)
                name = "group-minimal" if family else "shortest paths"
                print(f"{name} {traffic} {routing}: {b:.4f}")
    for traffic in ("ur", "wc"):
        b = bound(p, a, h, traffic, "valiant", True, True)
        print(f"group-minimal {traffic} valiant via a switch: {b:.4f}")
