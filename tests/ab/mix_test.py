#!/usr/bin/env python3
"""uet-ab --scenario=mix: a permutation plus --incasts incasts of --fan_in senders, end to end.

Asserts, on a 32-host leaf-spine, both transports: the CSV holds hosts + incasts x fan_in flows
per transport, all completed; the first `hosts` are a permutation (flow i sent by host i, every
host receiving one); each incast's flows share one receiver, its senders distinct and not the
receiver, and no two incasts share a receiver; the same seed gives the same CSV (less nothing:
simulated times are deterministic), another seed other flows. Bad --incasts and --fan_in are
refused naming the flag and its range (validate_test.py has them).
Usage: mix_test.py BUILD_BIN_DIR
"""
import csv
import os
import sys
import tempfile

import ab_common

HOSTS, INCASTS, FAN_IN = 32, 5, 6
FLAGS = ["--scenario=mix", "--leaves=4", "--hosts_per_leaf=8", "--spines=2", "--bytes=16384",
         f"--incasts={INCASTS}", f"--fan_in={FAN_IN}", "--transport=both"]


def rows(tmp, name, extra):
    out = os.path.join(tmp, name + ".csv")
    proc = ab_common.run(FLAGS + extra + ["--csv=" + out], echo=True)
    if proc.returncode != 0:
        return None, f"{name}: rc {proc.returncode}: {proc.stderr[-500:]}"
    with open(out) as f:
        return list(csv.DictReader(f)), None


def check(runs, failures):
    for transport in ("uet", "rocev2"):
        flows = [r for r in runs if r["transport"] == transport]
        flows.sort(key=lambda r: int(r["flow"]))
        if len(flows) != HOSTS + INCASTS * FAN_IN:
            failures.append(f"{transport}: {len(flows)} flows, want {HOSTS + INCASTS * FAN_IN}")
            continue
        if any(r["completed"] != "1" for r in flows):
            failures.append(f"{transport}: not every flow completed")
        perm = flows[:HOSTS]
        if [int(r["src"]) for r in perm] != list(range(HOSTS)) or \
                sorted(int(r["dst"]) for r in perm) != list(range(HOSTS)):
            failures.append(f"{transport}: the first {HOSTS} flows are not a permutation")
        receivers = []
        for j in range(INCASTS):
            group = flows[HOSTS + j * FAN_IN:HOSTS + (j + 1) * FAN_IN]
            dsts = {int(r["dst"]) for r in group}
            srcs = {int(r["src"]) for r in group}
            if len(dsts) != 1 or len(srcs) != FAN_IN or dsts & srcs:
                failures.append(f"{transport}: incast {j}: receivers {dsts}, senders {srcs}")
            receivers += list(dsts)
        if len(set(receivers)) != INCASTS:
            failures.append(f"{transport}: incast receivers not distinct: {receivers}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        a, err_a = rows(tmp, "a", ["--seed=5"])
        b, err_b = rows(tmp, "b", ["--seed=5"])
        c, err_c = rows(tmp, "c", ["--seed=6"])
        failures += [e for e in (err_a, err_b, err_c) if e]
        if a is not None:
            check(a, failures)
        if a is not None and b is not None and a != b:
            failures.append("seed 5 twice: the CSVs differ")
        if a is not None and c is not None and \
                [(r["src"], r["dst"]) for r in a] == [(r["src"], r["dst"]) for r in c]:
            failures.append("seeds 5 and 6 drew the same flows")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
