"""What the tests/ab scripts share: the tools they drive (uet-ab, uet-anchors, uet-trace-gen in
BUILD_BIN_DIR, each script's first argument), one run of a tool with its output captured, the
JSON a run wrote, and the verdict line and exit code ctest reads."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def tool(name="uet-ab"):
    """The path of `name` in the build's bin directory (argv[1])."""
    return os.path.join(sys.argv[1], name)


def run(args, name="uet-ab", timeout=300, echo=False):
    """Runs tool `name` with `args`, output captured. With `echo`, prints its stdout, and its
    stderr when it failed, so ctest's log shows the run."""
    proc = subprocess.run([tool(name), *args], capture_output=True, text=True, timeout=timeout)
    if echo:
        print(proc.stdout)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
    return proc


def run_json(args, out, name="uet-ab", timeout=300):
    """Runs the tool with `args` and --json=`out`, echoed; the list of runs it wrote, or None
    when it failed."""
    proc = run([*args, "--json=" + out], name, timeout, echo=True)
    if proc.returncode != 0:
        return None
    with open(out) as f:
        return json.load(f)


def by_transport(runs):
    """uet-ab's runs keyed by transport ("uet", "rocev2")."""
    return {r["transport"]: r for r in runs}


def verdict(failures):
    """Prints each failure and the line the log ends with; the exit code (1 when any failed)."""
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("1 passed, 0 failed" if not failures else "0 passed, 1 failed")
    return 1 if failures else 0
