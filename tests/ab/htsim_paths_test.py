#!/usr/bin/env python3
"""bench/htsim_paths.py on a made-up htsim path log of a k=4 fat-tree (16 hosts): each tier's
histogram counts a flow once per queue (whatever its path ids), covers all 16 links of the
tier, and sums to the flows' links; the busiest switch-to-switch queue's bytes come from the
BYTES lines (a host's link aside); ideal ECMP draws put between one and two flows on the
busiest link, whole or sprayed.
Usage: htsim_paths_test.py
"""
import os
import re
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                      "htsim_paths.py")

CM = """Nodes 16
Connections 3
0->15 id 1 start 0 size 2000000
1->14 id 2 start 0 size 2000000
2->3 id 3 start 0 size 2000000
"""

# Flows 1 and 2 cross pods (ToR 0 -> agg 0 -> core -> agg 6 -> ToR 7); flow 1 twice, by two
# path ids over the same queues but one. Flow 3 stays under ToR 1.
LOG = """PATH 1 15 7 LS0->US0(0)
PATH 1 15 7 US0->CS0(0)
PATH 1 15 7 CS0->US6(0)
PATH 1 15 7 US6->LS_7(0)
PATH 1 15 7 LS7->DST15(0)
PATH 1 15 9 LS0->US0(0)
PATH 1 15 9 US0->CS1(0)
PATH 1 15 9 CS1->US6(0)
PATH 1 15 9 US6->LS_7(0)
PATH 1 15 9 LS7->DST15(0)
PATH 2 14 3 LS0->US0(0)
PATH 2 14 3 US0->CS0(0)
PATH 2 14 3 CS0->US6(0)
PATH 2 14 3 US6->LS_7(0)
PATH 2 14 3 LS7->DST14(0)
PATH 3 3 5 LS1->DST3(0)
BYTES LS0->US0(0) 4150000 1000
BYTES US0->CS0(0) 3000000 700
BYTES LS7->DST15(0) 5000000 1200
"""


def run(args):
    return subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True,
                          timeout=120)


def tier_line(out, tier):
    m = re.search(rf"^\s+{re.escape(tier)}\s+(\d+) links, max\s+(\d+) flows(.*?): (.*)$", out,
                  re.M)
    return (int(m.group(1)), int(m.group(2)), m.group(3),
            {int(n): int(c) for n, c in (x.split(":") for x in m.group(4).split())}) if m else None


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        cm, log = os.path.join(tmp, "t.cm"), os.path.join(tmp, "paths.log")
        with open(cm, "w") as f:
            f.write(CM)
        with open(log, "w") as f:
            f.write(LOG)
        p = run(["log", log, "--cm", cm, "--k", "4"])
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            return 1
        out = p.stdout
        expect = {"host->ToR": {0: 13, 1: 3}, "ToR->agg": {0: 15, 2: 1},
                  "agg->core": {0: 14, 1: 1, 2: 1}, "core->agg": {0: 14, 1: 1, 2: 1},
                  "agg->ToR": {0: 15, 2: 1}, "ToR->host": {0: 13, 1: 3}}
        for tier, hist in expect.items():
            line = tier_line(out, tier)
            if line is None or line[0] != 16 or line[3] != hist:
                failures.append(f"{tier}: {line}, expected 16 links and {hist}")
        # 2 cross-pod flows x 6 links, one under its ToR x 2, plus flow 1's second core pair.
        if "16 flow-links" not in out:
            failures.append(f"flow-links: {out.splitlines()[0]}")
        if not re.search(r"busiest switch link: 4\.15 MB at 100 Gb/s = 332\.0 us", out):
            failures.append(f"busiest bytes: {out}")
        p = run(["random", "--cm", cm, "--k", "4", "--trials", "50"])
        busiest = [int(m) for m in re.findall(r"^\s+(\d+):", p.stdout, re.M)]
        if p.returncode != 0 or not busiest or min(busiest) < 1 or max(busiest) > 2:
            failures.append(f"random: {p.stdout} {p.stderr}")
        # Sprayed: flows 1 and 2 put 20 packets on ToR 0's two up links: 1 to 2 flows' worth.
        p = run(["random", "--cm", cm, "--k", "4", "--trials", "20", "--evs", "2",
                 "--packets", "10"])
        m = re.search(r"min ([\d.]+) / median ([\d.]+) / max ([\d.]+) flows", p.stdout)
        if p.returncode != 0 or not m or float(m.group(1)) < 1.0 or float(m.group(3)) > 2.0:
            failures.append(f"random --evs: {p.stdout} {p.stderr}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
