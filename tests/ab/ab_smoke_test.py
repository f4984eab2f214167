#!/usr/bin/env python3
"""uet-ab end to end on a small fabric: both transports, every scenario of the standard run.

Asserts what must hold whatever the tuning: every flow of every run completes without error,
the JSON carries the fields the README promises, UET sprays (no PFC) while RoCEv2 runs over
PFC except in the loss run, and only the loss run loses frames on the wire.
Usage: ab_smoke_test.py BUILD_BIN_DIR
"""
import csv
import os
import sys
import tempfile

import ab_common


def main():
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = os.path.join(tmp, "flows.csv")
        runs = ab_common.run_json(["--leaves=4", "--hosts_per_leaf=4", "--spines=2", "--fan_in=6",
                                   "--bytes=262144", "--csv=" + csv_path],
                                  os.path.join(tmp, "ab.json"))
        if runs is None:
            return 1
        rows = list(csv.DictReader(open(csv_path)))
    failures = []
    seen = set()
    for r in runs:
        key = (r["scenario"], r["transport"])
        seen.add(key)
        for field in ("flows", "fct_us", "goodput_gbps", "retransmits", "drops", "trims",
                      "pfc_pause_us", "events", "wall_s", "params"):
            if field not in r:
                failures.append(f"{key}: no field {field}")
        if r["completed"] != r["flows"] or r["failed"] != 0:
            failures.append(f"{key}: {r['completed']}/{r['flows']} completed, {r['failed']} failed")
        if not 0 < r["fct_us"]["min"] <= r["fct_us"]["p50"] <= r["fct_us"]["p99"] <= r["fct_us"]["max"]:
            failures.append(f"{key}: FCT percentiles out of order: {r['fct_us']}")
        want_pfc = r["transport"] == "rocev2" and r["scenario"] != "loss"
        if r["params"]["pfc"] != want_pfc:
            failures.append(f"{key}: pfc={r['params']['pfc']}, expected {want_pfc}")
        if r["transport"] == "rocev2" and r["trims"] != 0:
            failures.append(f"{key}: RoCEv2 frames were trimmed")
    # The CSV has one completed row per flow of every run, with FCT = finish - start.
    for r in runs:
        mine = [x for x in rows if x["scenario"] == r["scenario"] and x["transport"] == r["transport"]]
        if len(mine) != r["flows"] or any(x["completed"] != "1" for x in mine):
            failures.append(f"{r['scenario']}/{r['transport']}: {len(mine)} CSV rows for {r['flows']} flows")
        for x in mine:
            if abs(float(x["finish_us"]) - float(x["start_us"]) - float(x["fct_us"])) > 0.01:
                failures.append(f"CSV row {x}: fct != finish - start")
                break
        fcts = sorted(float(x["fct_us"]) for x in mine)
        if fcts and abs(fcts[-1] - r["fct_us"]["max"]) > 0.01:
            failures.append(f"{r['scenario']}/{r['transport']}: CSV max FCT {fcts[-1]} != JSON {r['fct_us']['max']}")
    expected = {(s, t) for s in ("permutation", "incast", "loss") for t in ("uet", "rocev2")}
    if seen != expected:
        failures.append(f"runs {sorted(seen)} != {sorted(expected)}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
