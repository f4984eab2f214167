#!/usr/bin/env python3
"""uet-ab --progress changes no result: with it a run is driven in sub-slices sized to wall
time (so the line moves on a large fabric), and the JSON (all but wall_s) and CSV must be the
bytes of a run without it, for both transports, a workload with dependencies and a sampled
run. The flag is display only: the experiment file leaves it out.
Usage: progress_test.py BUILD_BIN_DIR
"""
import json
import os
import sys
import tempfile

import ab_common

CASES = {
    "fattree_perm": ["--scenario=permutation", "--topology=fattree", "--k=8", "--bytes=262144"],
    "allreduce": ["--scenario=allreduce", "--leaves=4", "--hosts_per_leaf=4", "--spines=2",
                  "--bytes=1048576"],
    "sampled_incast": ["--scenario=incast", "--leaves=4", "--hosts_per_leaf=8", "--spines=4",
                       "--fan_in=16", "--plot_sample_us=3", "--transport=uet"],
}


def outputs(tmp, name, flags):
    """The run's JSON without wall_s, and its CSV; None when it failed."""
    os.makedirs(tmp, exist_ok=True)
    js, cs = os.path.join(tmp, "out.json"), os.path.join(tmp, "out.csv")
    proc = ab_common.run([*flags, "--json=" + js, "--csv=" + cs])
    if proc.returncode != 0:
        print(f"{name}: rc {proc.returncode}: {proc.stderr}", file=sys.stderr)
        return None
    runs = json.load(open(js))
    for r in runs:
        r.pop("wall_s")
    return json.dumps(runs, sort_keys=True), open(cs).read(), open(js + ".flags").read()


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in CASES.items():
            plain = outputs(os.path.join(tmp, name, "plain"), name, flags)
            watched = outputs(os.path.join(tmp, name, "progress"), name, [*flags, "--progress"])
            if plain is None or watched is None:
                failures.append(f"{name}: a run failed")
                continue
            # Expect: the same results, byte for byte, and the same experiment file.
            if plain[0] != watched[0]:
                failures.append(f"{name}: JSON differs with --progress")
            if plain[1] != watched[1]:
                failures.append(f"{name}: CSV differs with --progress")
            if "--progress" in watched[2]:
                failures.append(f"{name}: the experiment file records --progress")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
