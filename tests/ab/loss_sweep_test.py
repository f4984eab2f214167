#!/usr/bin/env python3
"""uet-ab --scenario=loss-sweep: one flow across a small lossy fabric, both transports.

Asserts: one run per (loss rate, transport) with that rate in its params and no PFC; without
loss nothing is lost or resent and both reach most of the line rate; with loss, frames are lost
and resent; UET keeps most of its loss-free goodput at 5 % per link (selective retransmission)
while RoCEv2's go-back-N does worse than UET at every non-zero rate. The experiment file the run
writes beside its JSON reproduces it exactly (--config), and a flag after --config overrides it.
With --loss_per=path (rates end to end: each of the 2 fabric links on the path drops
1-sqrt(1-r)), the runs carry that per-link rate, and one 16 MiB UET flow keeps >= 97 % of its
loss-free goodput at 1 % path loss and >= 90 % at 5 % (issue 4's goodput targets; a public ns-3
UET model reaches 83 % and 52 %).
Usage: loss_sweep_test.py BUILD_BIN_DIR
"""
import json
import os
import sys
import tempfile

import ab_common

RATES = (0.0, 0.01, 0.05)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sweep.json")
        runs = ab_common.run_json(["--scenario=loss-sweep", "--leaves=2", "--hosts_per_leaf=2",
                                   "--spines=2", "--sweep_bytes=4194304", "--max_ms=50",
                                   "--loss_rates=" + ",".join(str(r) for r in RATES)], out)
        if runs is None:
            return 1
        again = os.path.join(tmp, "again.json")
        other = os.path.join(tmp, "other.json")
        rerun = ab_common.run(["--config=" + out + ".flags", "--json=" + again])
        reseed = ab_common.run(["--config=" + out + ".flags", "--seed=9", "--json=" + other])
        path_json = os.path.join(tmp, "path.json")
        path = ab_common.run(["--scenario=loss-sweep", "--leaves=2", "--hosts_per_leaf=2",
                              "--spines=2", "--sweep_bytes=16777216", "--max_ms=50",
                              "--transport=uet", "--loss_per=path",
                              "--loss_rates=" + ",".join(str(r) for r in RATES),
                              "--json=" + path_json])
        print(path.stdout)
        path_runs = json.load(open(path_json)) if path.returncode == 0 else None
        rerun_runs = json.load(open(again)) if rerun.returncode == 0 else None
        reseed_runs = json.load(open(other)) if reseed.returncode == 0 else None
    failures = []
    strip = lambda rs: [{k: v for k, v in r.items() if k != "wall_s"} for r in rs]
    if rerun_runs is None or strip(rerun_runs) != strip(runs):
        failures.append(f"--config rerun differs (rc {rerun.returncode}): {rerun.stderr}")
    if reseed_runs is None or any(r["params"]["seed"] != 9 for r in reseed_runs):
        failures.append(f"--seed after --config did not override (rc {reseed.returncode})")
    by = {(r["params"]["fabric_loss"], r["transport"]): r for r in runs}
    want = {(rate, t) for rate in RATES for t in ("uet", "rocev2")}
    if set(by) != want or len(runs) != len(want):
        failures.append(f"runs {sorted(by)} != {sorted(want)}")
        runs = []
    for r in runs:
        key = (r["params"]["fabric_loss"], r["transport"])
        if r["scenario"] != "loss-sweep" or r["flows"] != 1 or r["params"]["pfc"]:
            failures.append(f"{key}: scenario {r['scenario']}, {r['flows']} flows, pfc {r['params']['pfc']}")
        if r["params"]["bytes"] != 4194304:
            failures.append(f"{key}: params.bytes {r['params']['bytes']}")
    if not failures:
        for t in ("uet", "rocev2"):
            clean = by[(0.0, t)]
            if clean["drops"] or clean["retransmits"] or clean["goodput_gbps"] < 80:
                failures.append(f"{t} without loss: {clean['drops']} drops, "
                                f"{clean['retransmits']} retransmits, {clean['goodput_gbps']} Gb/s")
        for rate in RATES[1:]:
            u, r = by[(rate, "uet")], by[(rate, "rocev2")]
            if u["drops"] == 0 or u["retransmits"] == 0:
                failures.append(f"uet at {rate}: no loss or no retransmission")
            if u["completed"] != 1:
                failures.append(f"uet at {rate}: the flow did not complete")
            if not u["goodput_gbps"] > r["goodput_gbps"]:
                failures.append(f"at {rate}: uet {u['goodput_gbps']} Gb/s <= rocev2 {r['goodput_gbps']}")
        if by[(0.05, "uet")]["goodput_gbps"] < 0.6 * by[(0.0, "uet")]["goodput_gbps"]:
            failures.append(f"uet at 5 %: {by[(0.05, 'uet')]['goodput_gbps']} Gb/s, "
                            f"below 60 % of {by[(0.0, 'uet')]['goodput_gbps']}")
    if path_runs is None or len(path_runs) != len(RATES):
        failures.append(f"--loss_per=path run failed (rc {path.returncode}): {path.stderr}")
    else:
        good = {}
        for rate, r in zip(RATES, path_runs):
            link = 1 - (1 - rate) ** 0.5
            if abs(r["params"]["fabric_loss"] - link) > 1e-5 * link + 1e-12:
                failures.append(f"path {rate}: per-link loss {r['params']['fabric_loss']}, want {link}")
            if r["completed"] != 1:
                failures.append(f"path {rate}: the flow did not complete")
            good[rate] = r["goodput_gbps"]
        for rate, share in ((0.01, 0.97), (0.05, 0.90)):
            if good.get(rate, 0) < share * good.get(0.0, 0):
                failures.append(f"uet at {rate} path loss: {good.get(rate)} Gb/s, below "
                                f"{share:.0%} of {good.get(0.0)}")
        if "5.00%" not in path.stdout:
            failures.append("the sweep table has no path-loss column")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
