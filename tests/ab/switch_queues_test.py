#!/usr/bin/env python3
"""uet-ab --control_buffer_kb and --trim_last_half: the switches' control class and trimming.

Asserts: a UET incast into small data queues trims, and with the default control class (256
KiB) drops nothing; with --control_buffer_kb=1 (ten headers) it drops trimmed headers, every
flow still completes (the RTO resends what a lost NACK did not), and the params name the
size; --trim_last_half is named in the params and still completes every flow;
--control_buffer_kb out of 1..65536 is refused (exit 2) naming the flag and its range, and
uet-anchors' (0: its queues' own) above 65536, and an unknown uet-anchors --failures; uet-anchors --failures=htsim
(uet-htsim's placement: core -> agg links into the first aggregation switches at 25 %) runs its
degraded REPS row to completion with a tail other than our placement's.
Usage: switch_queues_test.py BUILD_BIN_DIR
"""
import os
import sys
import tempfile

import ab_common

INCAST = ["--leaves=2", "--hosts_per_leaf=8", "--spines=2", "--scenario=incast", "--fan_in=15",
          "--bytes=262144", "--transport=uet", "--buffer_kb=16", "--ecn=false"]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for name, extra in (("default", []), ("tight", ["--control_buffer_kb=1"]),
                            ("last_half", ["--trim_last_half"])):
            r = ab_common.run_json([*INCAST, *extra], os.path.join(tmp, name + ".json"))
            if r is None:
                failures.append(f"{name}: uet-ab failed")
                continue
            runs[name] = ab_common.by_transport(r)["uet"]
        if len(runs) == 3:
            d, t, h = runs["default"], runs["tight"], runs["last_half"]
            print(f"trims/drops/timeouts: default {d['trims']}/{d['drops']}/{d['timeouts']}, "
                  f"1 KiB {t['trims']}/{t['drops']}/{t['timeouts']}, "
                  f"last half {h['trims']}/{h['drops']}/{h['timeouts']}")
            if d["trims"] < 100 or d["drops"] != 0:
                failures.append(f"default: {d['trims']} trims, {d['drops']} drops (want trims, no drops)")
            if t["drops"] == 0:
                failures.append("--control_buffer_kb=1: no drops")
            if "control_buffer_kb" in d["params"] or t["params"].get("control_buffer_kb") != 1:
                failures.append(f"params: default {d['params'].get('control_buffer_kb')}, "
                                f"tight {t['params'].get('control_buffer_kb')}")
            if h["params"].get("trim_last_half") is not True or "trim_last_half" in d["params"]:
                failures.append("params lack trim_last_half")
            if h["trims"] < 100:
                failures.append(f"--trim_last_half: {h['trims']} trims")
            for name, r in runs.items():
                if r["completed"] != r["flows"]:
                    failures.append(f"{name}: {r['completed']}/{r['flows']} completed")
    for bad in ("0", "65537"):
        p = ab_common.run([*INCAST, "--control_buffer_kb=" + bad], timeout=60)
        want = f"--control_buffer_kb={bad} out of range: 1..65536"
        if p.returncode != 2 or want not in p.stderr:
            failures.append(f"--control_buffer_kb={bad}: exit {p.returncode}, stderr {p.stderr!r}")
    p = ab_common.run(["--control_buffer_kb=70000"], name="uet-anchors", timeout=60)
    if p.returncode != 2 or "--control_buffer_kb=70000 out of range" not in p.stderr:
        failures.append(f"uet-anchors --control_buffer_kb=70000: exit {p.returncode}, stderr {p.stderr!r}")
    with tempfile.TemporaryDirectory() as tmp:
        rows = {}
        for f in ("ours", "htsim"):
            r = ab_common.run_json(["--scale=small", "--anchor=UET REPS", "--failures=" + f],
                                   os.path.join(tmp, f + ".json"), name="uet-anchors", timeout=300)
            rows[f] = {x["anchor"]: x for x in r or []}
        ours = rows["ours"].get("2 core links at 10%, UET REPS")
        htsim = rows["htsim"].get("2 core->agg links at 25%, UET REPS")
        if ours is None or htsim is None:
            failures.append(f"uet-anchors --failures rows: {sorted(rows['ours'])} / {sorted(rows['htsim'])}")
        elif htsim["completed"] != htsim["flows"] or htsim["tail_us"] == ours["tail_us"]:
            failures.append(f"--failures=htsim: {htsim['completed']}/{htsim['flows']} completed, "
                            f"tail {htsim['tail_us']} (ours {ours['tail_us']})")
    p = ab_common.run(["--failures=random"], name="uet-anchors", timeout=60)
    if p.returncode != 2 or "--failures=random unknown: htsim or ours" not in p.stderr:
        failures.append(f"uet-anchors --failures=random: exit {p.returncode}, stderr {p.stderr!r}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
