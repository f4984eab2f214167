#!/usr/bin/env python3
"""uet-ab's PFC watchdog flags, end to end on a RoCEv2 incast (PFC on, long pauses, no cycle).

Asserts: with --pfc_watchdog=report and a 5 us detection time the pauses that outlast it are
counted on stdout, no deadlock is found (a leaf-spine has no cyclic buffer dependency) and the
JSON results are those of --pfc_watchdog=off (reporting changes nothing); at the default 10 ms
nothing fires and stdout says nothing of the watchdog; --pfc_watchdog=drop at 5 us discards
frames (a watchdog set far too short turns an incast's pauses into loss, which go-back-N then
repairs). Bad values are refused naming the flag and its valid range.
Usage: pfc_watchdog_test.py BUILD_BIN_DIR
"""
import json
import os
import re
import sys
import tempfile

import ab_common

INCAST = ["--scenario=incast", "--transport=rocev2", "--leaves=2", "--hosts_per_leaf=8",
          "--fan_in=8", "--bytes=1048576"]
LINE = re.compile(r"rocev2 PFC watchdog: (\d+) pauses outlasted its detection time, "
                  r"(\d+) frames dropped, (\d+) deadlocks")


def results(runs):
    for r in runs:
        r.pop("wall_s")
    return runs


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        got = {}
        for name, flags in {"off": ["--pfc_watchdog=off"],
                            "default": [],
                            "report": ["--pfc_watchdog_us=5"],
                            "drop": ["--pfc_watchdog=drop", "--pfc_watchdog_us=5"]}.items():
            out = os.path.join(tmp, name + ".json")
            proc = ab_common.run(INCAST + flags + ["--json=" + out], echo=True)
            if proc.returncode != 0:
                failures.append(f"{name}: rc {proc.returncode}")
                continue
            with open(out) as f:
                got[name] = (LINE.search(proc.stdout), results(json.load(f)))
        if len(got) == 4:
            off, default, report, drop = (got[n] for n in ("off", "default", "report", "drop"))
            # Expect: off and the default 10 ms say nothing; the same results all three ways.
            if off[0] or default[0]:
                failures.append("a watchdog line without a pause that outlasted 10 ms")
            if report[1] != off[1] or default[1] != off[1]:
                failures.append("report (or the default) changed the results")
            # Expect: at 5 us the incast's pauses fire, none is a deadlock, nothing dropped.
            if not report[0] or int(report[0].group(1)) == 0:
                failures.append("report: no firing counted")
            elif report[0].group(2, 3) != ("0", "0"):
                failures.append(f"report: {report[0].group(0)}")
            # Expect: drop at 5 us discards frames, and no deadlock either.
            if not drop[0] or int(drop[0].group(2)) == 0 or drop[0].group(3) != "0":
                failures.append(f"drop: {drop[0].group(0) if drop[0] else 'no line'}")
    for flags, want in ((["--pfc_watchdog=forward"], "--pfc_watchdog=forward unknown: report, drop or off"),
                        (["--pfc_watchdog_us=0"], "--pfc_watchdog_us=0 out of range: 1..6e+07")):
        proc = ab_common.run(flags, timeout=30)
        if proc.returncode != 2 or want not in proc.stderr:
            failures.append(f"{flags}: rc {proc.returncode}, stderr {proc.stderr!r}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("pfc_watchdog:", "FAIL" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
