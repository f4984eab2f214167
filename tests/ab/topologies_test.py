#!/usr/bin/env python3
"""uet-ab on the AI/HPC topologies and a graph file: every scenario runs, flows complete, flags
are refused by name.

Asserts: a permutation on each small fabric (dragonfly, Dragonfly+, torus, mesh, hypercube, rail
with planes joined and apart, a graph file) completes every flow on both transports, writes host
0's pcaps, records the topology and its shape in the JSON, and no flow beats its ideal (the
shortest path of the built fabric: slowdown >= 1); a single flow's ideal grows with the links
a torus path crosses. Every other scenario (incast, alltoall, allreduce, loss, failure,
websearch, cm where the fabric has its 16 hosts, collective) runs on every topology, and a
Chakra trace on the torus: UET completes every flow, RoCEv2 too or the PFC-deadlock note says
why not. On planes kept apart each rail runs the permutation on
its own hosts, and a flow across rails is refused. Bad sizes are refused naming the flag and
range.
Usage: topologies_test.py BUILD_BIN_DIR
"""
import glob
import json
import os
import sys
import tempfile

import ab_common

HERE = ab_common.HERE
TRACES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "sim", "data", "traces")
GRAPH = os.path.join(HERE, "two_tier_12.graph")

FABRICS = {
    "dragonfly": ["--topology=dragonfly", "--df_p=1", "--df_a=4", "--df_h=2", "--df_g=5"],
    "dragonflyplus": ["--topology=dragonflyplus", "--dfp_leaves=2", "--dfp_spines=2",
                      "--dfp_hosts_per_leaf=2", "--df_h=1"],
    "torus": ["--topology=torus", "--torus=4x4", "--hosts_per_switch=1"],
    "mesh": ["--topology=torus", "--torus=2x3x2", "--torus_wrap=false"],
    "hypercube": ["--topology=hypercube", "--hypercube_dim=4"],
    "rail": ["--topology=rail", "--rail_servers=4", "--gpus_per_server=4",
             "--rail_servers_per_leaf=2", "--rail_spines=2"],
    "rail_apart": ["--topology=rail", "--rail_servers=4", "--gpus_per_server=4",
                   "--rail_servers_per_leaf=2", "--rail_spines=2", "--rail_planes=apart"],
    "graph": ["--topology=graph", "--graph=" + GRAPH],
}
HOSTS = {"dragonfly": 20, "dragonflyplus": 12, "torus": 16, "mesh": 12, "hypercube": 16,
         "rail": 16, "rail_apart": 16, "graph": 12}

SCENARIOS = {
    "incast": ["--scenario=incast", "--fan_in=3"],
    "alltoall": ["--scenario=alltoall", "--bytes=8192"],
    "allreduce": ["--scenario=allreduce", "--bytes=65536"],
    "loss": ["--scenario=loss", "--loss=0.001", "--bytes=262144", "--max_ms=200"],
    "failure": ["--scenario=failure", "--failed_links=1", "--degrade=0"],
    "websearch": ["--scenario=websearch", "--load=0.2", "--websearch_us=20"],
    "cm": ["--scenario=cm", "--cm=" + os.path.join(HERE, "chain.cm")],
}

REFUSED = [
    (["--topology=dragonfly", "--df_g=4"],
     "--df_g=4 invalid: g - 1 must divide --df_a x --df_h = 32"),
    (["--topology=dragonfly", "--df_p=0"], "--df_p=0 out of range: 1..256"),
    (["--topology=dragonflyplus", "--df_g=40"], "--df_g=40 out of range: 2..17"),
    (["--topology=torus", "--torus=8x1"], "--torus=8x1 invalid: K, KxK or KxKxK, each 2..256"),
    (["--topology=torus", "--torus=256x256x256"],
     "--topology=torus: torus: 16777216 hosts, at most 16777214"),
    (["--topology=hypercube", "--hypercube_dim=17"], "--hypercube_dim=17 out of range: 1..16"),
    (["--topology=rail", "--gpus_per_server=65"], "--gpus_per_server=65 out of range: 1..64"),
    (["--topology=rail", "--rail_planes=split"],
     "--rail_planes=split unknown: joined or apart"),
    (["--topology=graph"], "--topology=graph needs --graph=FILE"),
    (["--graph=" + GRAPH], "--graph needs --topology=graph"),
    (["--topology=ring"], "--topology=ring unknown: leafspine, fattree, dragonfly"),
    (["--topology=dragonfly", "--df_p=1", "--df_a=4", "--df_h=2", "--scenario=failure",
      "--failed_links=37"],
     "--failed_links=37 out of range: 1..36 (the fabric has 36 top-tier (global) links)"),
]


def check_permutation(tmp, name, flags, failures):
    out = os.path.join(tmp, name + ".json")
    pcap = os.path.join(tmp, name + "_pcap")
    os.makedirs(pcap)
    runs = ab_common.run_json(["--scenario=permutation", "--bytes=65536", "--pcap=" + pcap,
                               *flags], out)
    if runs is None:
        failures.append(f"{name}: permutation failed")
        return
    for r in runs:
        if r["completed"] != r["flows"] or r["flows"] != HOSTS[name]:
            failures.append(f"{name} {r['transport']}: {r['completed']} of {r['flows']} flows")
        want = "torus" if name == "mesh" else "rail" if name == "rail_apart" else name
        if r["params"]["topology"] != want or not r["params"].get("shape"):
            failures.append(f"{name}: params {r['params']}")
        if r["params"]["hosts"] != HOSTS[name]:
            failures.append(f"{name}: {r['params']['hosts']} hosts")
        if not r["slowdown"]["p50"] >= 1.0:
            failures.append(f"{name} {r['transport']}: slowdown {r['slowdown']} below its ideal")
    pcaps = glob.glob(os.path.join(pcap, "*.pcap"))
    if len(pcaps) != 4 or any(os.path.getsize(p) <= 24 for p in pcaps):
        failures.append(f"{name}: pcaps {pcaps}")


def check_scenario(tmp, name, flags, scenario, args, failures):
    out = os.path.join(tmp, f"{name}_{scenario}.json")
    proc = ab_common.run(["--max_ms=20", *args, *flags, "--json=" + out], timeout=120)
    if proc.returncode != 0:
        failures.append(f"{name} {scenario}: rc {proc.returncode}: {proc.stderr[-400:]}")
        return
    for r in json.load(open(out)):
        if r["completed"] == r["flows"]:
            continue
        if r["transport"] == "rocev2" and "PFC deadlock" in proc.stdout:
            print(f"{name} {scenario}: rocev2 {r['completed']} of {r['flows']} (PFC deadlock)")
            continue
        failures.append(f"{name} {scenario} {r['transport']}: {r['completed']} of {r['flows']}")


def check_collective(name, args, failures):
    """The one size's row: no failed rank on either transport."""
    proc = ab_common.run(args, timeout=120)
    rows = [l for l in proc.stdout.splitlines() if l and not l.startswith("#") and "|" in l]
    fails = [part.split()[-1] for row in rows for part in row.split("|")[1:3]]
    if proc.returncode != 0 or len(rows) != 1 or fails != ["0", "0"]:
        failures.append(f"{name} collective: rc {proc.returncode}: {rows} {proc.stderr[-300:]}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in FABRICS.items():
            check_permutation(tmp, name, flags, failures)
            for scenario, args in SCENARIOS.items():
                if scenario == "cm" and HOSTS[name] < 16:
                    continue  # chain.cm names 16 hosts
                check_scenario(tmp, name, flags, scenario, args, failures)
            if name != "rail_apart":  # a flat ring crosses rails: refused below
                check_collective(name, ["--scenario=collective", "--sizes=64K", *flags], failures)
        # The hierarchical all-reduce on rails kept apart: each rail's phase stays on its rail.
        check_collective("rail_apart hierarchical", ["--scenario=collective", "--sizes=256K",
                                                     *FABRICS["rail_apart"]], failures)
        trace = ab_common.run(["--scenario=trace", "--trace=" + os.path.join(TRACES, "dp16"),
                               "--max_ms=50", *FABRICS["torus"]], timeout=120)
        if trace.returncode != 0:
            failures.append(f"torus trace: rc {trace.returncode}: {trace.stderr[-300:]}")

        # Planes kept apart: each rail's permutation on its own hosts; a flat all-gather crosses
        # rails and is refused, naming the flags.
        for r in json.load(open(os.path.join(tmp, "rail_apart.json"))):
            if r["completed"] != 16:
                failures.append(f"rail_apart: {r['completed']} flows")
        flat = ab_common.run(["--scenario=collective", "--coll=allgather", "--sizes=64K",
                              *FABRICS["rail_apart"]], timeout=60)
        if flat.returncode != 2 or "--rail_planes=apart) route within a rail only" not in flat.stderr:
            failures.append(f"cross-rail all-gather: rc {flat.returncode}: {flat.stderr!r}")

        # A single flow's ideal: on a 6x6 torus host 0 to host 35 crosses 2 fabric links (the
        # wraparound ones) and to host 21 (3, 3) six: the slowdown stays near 1 for both.
        single = {}
        for dst in (35, 21):
            cm = os.path.join(tmp, f"one{dst}.cm")
            open(cm, "w").write(f"Nodes 36\nConnections 1\n0->{dst} id 1 start 0 size 65536\n")
            out = os.path.join(tmp, f"one{dst}.json")
            r = ab_common.run_json(["--cm=" + cm, "--topology=torus", "--torus=6x6",
                                    "--transport=uet"], out)
            single[dst] = r[0] if r else None
        if None in single.values():
            failures.append("single flows on a torus failed")
        else:
            near, far = single[35], single[21]
            if not (far["fct_us"]["min"] > near["fct_us"]["min"]
                    and 1.0 <= near["slowdown"]["p50"] < 1.5 and 1.0 <= far["slowdown"]["p50"] < 1.5):
                failures.append(f"torus single flows: near {near['fct_us']} {near['slowdown']}, "
                                f"far {far['fct_us']} {far['slowdown']}")

        for flags, want in REFUSED:
            proc = ab_common.run(["--scenario=permutation", *flags], timeout=60)
            if proc.returncode != 2 or want not in proc.stderr:
                failures.append(f"{flags}: rc {proc.returncode}, stderr {proc.stderr!r}, "
                                f"wanted {want!r}")
        bad = os.path.join(tmp, "bad.graph")
        open(bad, "w").write("host a\nswitch s\nlink a s 100 fast\n")
        proc = ab_common.run(["--topology=graph", "--graph=" + bad], timeout=60)
        if proc.returncode != 2 or f"--graph: {bad}:3: DELAY_NS 'fast' out of range" not in proc.stderr:
            failures.append(f"bad graph: rc {proc.returncode}, {proc.stderr!r}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
