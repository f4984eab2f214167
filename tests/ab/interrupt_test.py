#!/usr/bin/env python3
"""uet-ab on a run too long to wait for: with --progress a progress line (events/s, simulated
time, RSS, flows, ETA) appears on stderr, not a terminal here, and Ctrl-C (SIGINT)
stops the run at its next slice, the partial table is printed and marked, the JSON written so
far is valid, and the exit code is 130.
Usage: interrupt_test.py BUILD_BIN_DIR
"""
import json
import os
import signal
import subprocess
import sys
import tempfile

import ab_common


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "partial.json")
        # 128 hosts all-to-all of 1 MB each: minutes of wall time, far more than the test waits.
        proc = subprocess.Popen([ab_common.tool(), "--scenario=alltoall",
                                 "--transport=uet", "--progress", "--json=" + out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = proc.stderr.readline()  # blocks until the first progress line (after 2 s)
        if not first.startswith("[alltoall uet] simulated"):
            failures.append(f"first stderr line is not a progress line: {first!r}")
        for field in ("M events/s", "flows ", "/16256", "RSS ", "GiB", "ETA "):
            if field not in first:
                failures.append(f"the progress line lacks {field!r}: {first!r}")
        proc.send_signal(signal.SIGINT)
        try:
            stdout, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            failures.append("uet-ab did not stop within 120 s of SIGINT")
        if proc.returncode != 130:
            failures.append(f"exit code {proc.returncode}, expected 130; stderr {stderr!r}")
        if "INTERRUPTED (Ctrl-C): uet stopped at" not in stdout:
            failures.append("the table is not marked as interrupted")
        if "the results above are partial" not in stderr:
            failures.append(f"no partial-results message on stderr: {stderr!r}")
        try:
            runs = json.load(open(out))
            if len(runs) != 1 or runs[0]["completed"] >= runs[0]["flows"]:
                failures.append(f"JSON: {len(runs)} runs, expected one partial run")
        except (OSError, ValueError) as e:
            failures.append(f"JSON not valid after the interrupt: {e}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
