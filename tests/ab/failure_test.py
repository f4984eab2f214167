#!/usr/bin/env python3
"""uet-ab --scenario=failure: a permutation on a leaf-spine with failed or degraded links.

Asserts: with 4 of 16 spine links at 10 % of their rate, every flow of both transports
completes; REPS steers UET around the slow links (its slowest flow beats oblivious spraying's
and RoCEv2's single paths); the JSON records the failure parameters. With links going down
mid-run, frames are lost and every flow still completes (ECMP groups drop the dead links,
UET retransmits). Asking for more links than the fabric has is refused with the count.
Usage: failure_test.py BUILD_BIN_DIR
"""
import os
import sys
import tempfile

import ab_common

SMALL = ["--scenario=failure", "--leaves=4", "--hosts_per_leaf=8", "--spines=4",
         "--failed_links=4"]


def run(tmp, name, extra):
    runs = ab_common.run_json(SMALL + extra, os.path.join(tmp, name + ".json"))
    if runs is None:
        raise RuntimeError(f"{name}: uet-ab failed")
    return ab_common.by_transport(runs)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        reps = run(tmp, "reps", ["--lb=reps"])
        obl = run(tmp, "oblivious", ["--lb=oblivious", "--transport=uet"])
        down = run(tmp, "down", ["--degrade=0", "--fail_at_us=20"])
        too_many = ab_common.run(SMALL[:-1] + ["--failed_links=17", "--transport=uet"],
                                 timeout=60)
    for name, runs in (("reps", reps), ("oblivious", obl), ("down", down)):
        for t, r in runs.items():
            if r["completed"] != r["flows"] or r["failed"]:
                failures.append(f"{name}/{t}: {r['completed']}/{r['flows']} completed")
            if r["params"]["failed_links"] != 4:
                failures.append(f"{name}/{t}: params.failed_links {r['params']['failed_links']}")
    if reps["uet"]["params"]["degrade"] != 0.1 or down["uet"]["params"]["degrade"] != 0:
        failures.append("params.degrade not recorded")
    if not reps["uet"]["fct_us"]["max"] < obl["uet"]["fct_us"]["max"]:
        failures.append(f"REPS tail {reps['uet']['fct_us']['max']} us not below oblivious "
                        f"{obl['uet']['fct_us']['max']} us")
    if not reps["uet"]["fct_us"]["max"] < reps["rocev2"]["fct_us"]["max"]:
        failures.append(f"UET/REPS tail {reps['uet']['fct_us']['max']} us not below RoCEv2's "
                        f"{reps['rocev2']['fct_us']['max']} us")
    if down["uet"]["drops"] == 0:
        failures.append("links went down mid-run but no frame was lost")
    if too_many.returncode == 0 or "the fabric has 16 top-tier (spine or core) links" not in too_many.stderr:
        failures.append(f"17 of 16 links: rc {too_many.returncode}, stderr {too_many.stderr!r}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
