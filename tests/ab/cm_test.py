#!/usr/bin/env python3
"""uet-ab --cm: an htsim connection matrix runs under both transports.

Asserts: every flow of the file runs with its source, destination and size; the flow with a
start time starts then (whole microseconds); the triggered flow starts exactly when the flow
that fires its trigger finishes; a matrix larger than the fabric is refused with a message; --plot renders
three SVG charts per run with gnuplot, and the sampled throughput integrates to the bytes the
flows carried (plus headers and ACKs, under 25 % more); one host writing to 1100 peers (more
than the UET engine's default PDC table) completes every write.
Usage: cm_test.py BUILD_BIN_DIR
"""
import csv
import os
import sys
import tempfile

import ab_common


def main():
    cm = os.path.join(ab_common.HERE, "chain.cm")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "flows.csv")
        plots = os.path.join(tmp, "plots")
        proc = ab_common.run(["--cm=" + cm, "--leaves=4", "--hosts_per_leaf=4", "--spines=2",
                              "--csv=" + out, "--plot=" + plots, "--plot_sample_us=2"],
                             timeout=120, echo=True)
        if proc.returncode != 0:
            return 1
        rows = list(csv.DictReader(open(out)))
        for chart in ("fct_cdf", "throughput", "queue"):
            path = os.path.join(plots, f"cm_{chart}.svg")
            if not os.path.exists(path) or "<svg" not in open(path).read():
                failures.append(f"{path}: missing or not an SVG")
        flow_bytes = 2000000 + 2000000 + 1000000 + 100000
        for t in ("uet", "rocev2"):
            series = [list(map(float, line.split()))
                      for line in open(os.path.join(plots, f"cm_series_{t}.dat"))
                      if not line.startswith("#")]
            delivered = sum(gbps * 2e-6 / 8 * 1e9 for _, gbps, _, _ in series)
            if not flow_bytes <= delivered <= 1.25 * flow_bytes:
                failures.append(f"{t}: sampled throughput integrates to {delivered:.0f} bytes, "
                                f"flows carried {flow_bytes}")
            if any(q < 0 for _, _, q, _ in series) or max(q for _, _, q, _ in series) <= 0:
                failures.append(f"{t}: queue series never above 0")
    want = [(0, 8, 2000000), (1, 9, 2000000), (2, 10, 1000000), (8, 0, 100000)]
    for t in ("uet", "rocev2"):
        mine = [r for r in rows if r["transport"] == t and r["scenario"] == "cm"]
        got = [(int(r["src"]), int(r["dst"]), int(r["bytes"])) for r in mine]
        if got != want:
            failures.append(f"{t}: flows {got} != {want}")
            continue
        if any(r["completed"] != "1" for r in mine):
            failures.append(f"{t}: not every flow completed")
        if float(mine[2]["start_us"]) != 5.0:
            failures.append(f"{t}: flow 2 started at {mine[2]['start_us']} us, not 5")
        # Flow 3 (host 8) waits for flow 0, which completes on host 0, on the other leaf: it
        # hears of it the unloaded one-way propagation later, four 500 ns links.
        if abs(float(mine[3]["start_us"]) - float(mine[0]["finish_us"]) - 2.0) > 0.001:
            failures.append(f"{t}: triggered flow started at {mine[3]['start_us']}, "
                            f"trigger fired at {mine[0]['finish_us']} (+ 2 us to reach host 8)")
    small = ab_common.run(["--cm=" + cm, "--leaves=2", "--hosts_per_leaf=4"], timeout=60)
    if small.returncode == 0 or "Nodes 16, but the fabric has 8 hosts" not in small.stderr:
        failures.append(f"oversized matrix: rc {small.returncode}, stderr {small.stderr!r}")
    # One host writing to 1100 peers: more PDCs than the engine's default table (1024), so
    # the runner sizes each host's table to the PDCs its flows open; every flow completes.
    with tempfile.TemporaryDirectory() as tmp:
        fanout = os.path.join(tmp, "fanout.cm")
        with open(fanout, "w") as f:
            f.write("Nodes 1104\nConnections 1100\n")
            for i in range(1100):
                f.write(f"0->{i + 1} id {i + 1} start 0 size 4096\n")
        out = os.path.join(tmp, "fanout.csv")
        wide = ab_common.run(["--cm=" + fanout, "--leaves=138", "--hosts_per_leaf=8",
                              "--spines=8", "--transport=uet", "--csv=" + out], timeout=120)
        done = sum(r["completed"] == "1" for r in csv.DictReader(open(out))) if wide.returncode == 0 else -1
        if done != 1100:
            failures.append(f"fan-out to 1100 peers: {done} of 1100 completed, rc {wide.returncode}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
