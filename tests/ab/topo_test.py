#!/usr/bin/env python3
"""uet-ab --topo: htsim topology files build the same fabric as the equivalent flags.

Asserts: a 3-tier htsim .topo (k = 8 fat-tree, 500 ns links) gives bit-identical flow results
to --topology=fattree --k=8, and a 2-tier one (4 leaves x 8 hosts, 2 spines, 4:1
oversubscribed) to --leaves=4 --hosts_per_leaf=8 --spines=2, for both transports; a .topo the
builders cannot honour is refused with its line. The fabric knobs reach the run: --pfc=on makes
UET lossless too, --trimming=false stops trims, a longer --latency_ns lengthens the fastest
flow, a higher --pfc_xoff_kb lets RoCEv2's ECN marks come before the pauses (fewer pauses,
more marks), every knob is recorded in the JSON params, and an XON at or above XOFF is refused.
Usage: topo_test.py BUILD_BIN_DIR
"""
import json
import os
import sys
import tempfile

import ab_common

HERE = ab_common.HERE


def run(tmp, name, args):
    out = os.path.join(tmp, name + ".json")
    proc = ab_common.run(["--scenario=permutation", "--bytes=262144", "--json=" + out] + args)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: rc {proc.returncode}: {proc.stderr}")
    return ab_common.by_transport(json.load(open(out)))


def same(a, b):
    keys = ("flows", "completed", "fct_us", "retransmits", "drops", "trims", "ecn_marks",
            "pfc_pauses", "events")
    return all(a[k] == b[k] for k in keys)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        ft_file = run(tmp, "ft_file", ["--topo=" + os.path.join(HERE, "fat_tree_128.topo")])
        ft_flags = run(tmp, "ft_flags", ["--topology=fattree", "--k=8"])
        ls_file = run(tmp, "ls_file", ["--topo=" + os.path.join(HERE, "leaf_spine_32.topo")])
        ls_flags = run(tmp, "ls_flags", ["--leaves=4", "--hosts_per_leaf=8", "--spines=2"])
        knobs = run(tmp, "knobs", ["--leaves=4", "--hosts_per_leaf=8", "--spines=2",
                                           "--pfc=on", "--trimming=false", "--latency_ns=2000",
                                           "--ecn_kmin_kb=50", "--ecn_kmax_kb=200",
                                           "--ecn_pmax=0.5", "--fabric_gbps=200"])
        xoff = run(tmp, "xoff", ["--leaves=4", "--hosts_per_leaf=8", "--spines=2",
                                         "--transport=rocev2", "--pfc_xoff_kb=512",
                                         "--pfc_xon_kb=448"])
        bad_xon = ab_common.run(["--pfc_xoff_kb=64", "--pfc_xon_kb=64"], timeout=60)
        bad = os.path.join(tmp, "bad.topo")
        open(bad, "w").write("Nodes 32\nTiers 2\nTier 0\nBundle 2\n")
        refused = ab_common.run(["--topo=" + bad], timeout=60)
    for t in ("uet", "rocev2"):
        if not same(ft_file[t], ft_flags[t]):
            failures.append(f"{t}: fat-tree from .topo {ft_file[t]['fct_us']} != flags {ft_flags[t]['fct_us']}")
        if not same(ls_file[t], ls_flags[t]):
            failures.append(f"{t}: leaf-spine from .topo {ls_file[t]['fct_us']} != flags {ls_flags[t]['fct_us']}")
        if ft_file[t]["params"]["hosts"] != 128 or ls_file[t]["params"]["hosts"] != 32:
            failures.append(f"{t}: host counts {ft_file[t]['params']['hosts']}, {ls_file[t]['params']['hosts']}")
    kp = knobs["uet"]["params"]
    want = {"pfc": True, "trimming": False, "latency_ns": 2000, "ecn_kmin_kb": 50,
            "ecn_kmax_kb": 200, "ecn_pmax": 0.5, "fabric_gbps": 200}
    if any(kp[k] != v for k, v in want.items()):
        failures.append(f"knobs not recorded: {kp}")
    xp, base = xoff["rocev2"], ls_flags["rocev2"]
    if (xp["params"]["pfc_xoff_kb"], xp["params"]["pfc_xon_kb"]) != (512, 448):
        failures.append(f"PFC thresholds not recorded: {xp['params']}")
    if base["params"]["pfc_xoff_kb"] != 64 or not base["pfc_pauses"] > 0:
        failures.append(f"default PFC: {base['params']['pfc_xoff_kb']} KiB, {base['pfc_pauses']} pauses")
    if not (xp["pfc_pauses"] < base["pfc_pauses"] and xp["ecn_marks"] > base["ecn_marks"]):
        failures.append(f"--pfc_xoff_kb=512: pauses {base['pfc_pauses']} -> {xp['pfc_pauses']}, "
                        f"marks {base['ecn_marks']} -> {xp['ecn_marks']}")
    if bad_xon.returncode != 2 or "--pfc_xon_kb=64 out of range: 0..63" not in bad_xon.stderr:
        failures.append(f"XON = XOFF: rc {bad_xon.returncode}, stderr {bad_xon.stderr!r}")
    if knobs["uet"]["trims"] != 0:
        failures.append(f"--trimming=false but {knobs['uet']['trims']} trims")
    if not knobs["uet"]["fct_us"]["min"] > ls_flags["uet"]["fct_us"]["min"]:
        failures.append("--latency_ns=2000 did not lengthen the fastest flow")
    if refused.returncode != 2 or "bad.topo:4: Bundle > 1" not in refused.stderr:
        failures.append(f"bad .topo: rc {refused.returncode}, stderr {refused.stderr!r}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
