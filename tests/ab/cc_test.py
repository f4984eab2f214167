#!/usr/bin/env python3
"""uet-ab --cc: UET's congestion control chosen per run, recorded and validated.

Asserts: --cc=rccc and --cc=both run an incast to completion on a small fabric, with the
choice in the JSON params ("rccc"/"both" for UET, "-" for RoCEv2, which runs DCQCN) and as
--cc=... in the experiment file; under RCCC the fastest sender finishes within 10 % of the
slowest (the issue's fairness target); --cc=nscc (the default) gives the same FCTs as no
flag; an unknown --cc is refused (exit 2) naming the flag and its values.
Usage: cc_test.py BUILD_BIN_DIR
"""
import os
import sys
import tempfile

import ab_common

FABRIC = ["--leaves=2", "--hosts_per_leaf=8", "--spines=2", "--scenario=incast", "--fan_in=8",
          "--bytes=1048576"]


def run(tmp, name, extra):
    """The runs by transport and the experiment file uet-ab wrote, or (None, None)."""
    out = os.path.join(tmp, name + ".json")
    runs = ab_common.run_json([*FABRIC, *extra], out)
    if runs is None:
        return None, None
    return ab_common.by_transport(runs), open(out + ".flags").read()


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        default, _ = run(tmp, "default", ["--transport=uet"])
        nscc, nscc_flags = run(tmp, "nscc", ["--transport=uet", "--cc=nscc"])
        if default is None or nscc is None:
            return 1
        if default["uet"]["fct_us"] != nscc["uet"]["fct_us"] or default["uet"]["params"]["cc"] != "nscc":
            failures.append(f"--cc=nscc differs from the default: {default['uet']['fct_us']} vs {nscc['uet']['fct_us']}")
        if "--cc=nscc\n" not in nscc_flags:
            failures.append("experiment file lacks --cc=nscc")
        for cc in ("rccc", "both"):
            runs, flags = run(tmp, cc, ["--transport=both", "--cc=" + cc])
            if runs is None:
                failures.append(f"--cc={cc}: uet-ab failed")
                continue
            if f"--cc={cc}\n" not in flags:
                failures.append(f"experiment file lacks --cc={cc}")
            for t, r in runs.items():
                want = cc if t == "uet" else "-"
                if r["params"].get("cc") != want:
                    failures.append(f"{cc}/{t}: params.cc {r['params'].get('cc')}, expected {want}")
                if r["completed"] != r["flows"] or r["failed"] != 0:
                    failures.append(f"{cc}/{t}: {r['completed']}/{r['flows']} completed")
            u = runs["uet"]["fct_us"]
            print(f"--cc={cc}: UET fastest/slowest {u['min'] / u['max']:.3f}")
            if u["min"] < 0.9 * u["max"]:
                failures.append(f"--cc={cc}: fastest sender {u['min']} us, slowest {u['max']} us (> 10 %)")
        bad = ab_common.run(["--cc=dctcp"], timeout=60)
        if bad.returncode != 2 or "--cc=dctcp unknown: nscc, rccc or both" not in bad.stderr:
            failures.append(f"--cc=dctcp: exit {bad.returncode}, stderr {bad.stderr!r}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
