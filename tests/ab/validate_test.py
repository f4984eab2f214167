#!/usr/bin/env python3
"""uet-ab refuses a bad request before its first run starts.

Asserts: every scenario's fabric, flows and configuration are checked before anything runs,
so a request that would fail in its second or third scenario fails at once: exit code 2, a
message naming the flag and its valid range, no table printed, no JSON written. Cases: an odd
fat-tree arity; the standard comparison on a fabric too small for its incast (permutation
would have run first); a connection matrix with more Nodes than the fabric has hosts; more
failed links than the top tier has; a ring all-reduce with fewer bytes than hosts.
Usage: validate_test.py BUILD_BIN_DIR
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (flags, what stderr must contain)
REFUSED = {
    "odd_k": (["--scenario=standard", "--k=7", "--topology=fattree"],
              "--k=7 out of range: even, 2..64"),
    "incast_after_permutation": (["--scenario=standard", "--leaves=2", "--hosts_per_leaf=4"],
                                 "--fan_in=32 out of range: 1..7"),
    "cm_too_large": (["--cm=" + os.path.join(HERE, "chain.cm"), "--leaves=2",
                      "--hosts_per_leaf=4"],
                     "Nodes 16, but the fabric has 8 hosts"),
    "failed_links": (["--scenario=failure", "--leaves=4", "--spines=2", "--hosts_per_leaf=2",
                      "--failed_links=9"],
                     "--failed_links=9 out of range: 1..8"),
    "allreduce_bytes": (["--scenario=allreduce", "--leaves=4", "--hosts_per_leaf=4",
                         "--bytes=8"],
                        "--bytes=8 out of range for --scenario=allreduce: 16.."),
}


def main():
    uet_ab = os.path.join(sys.argv[1], "uet-ab")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (flags, want) in REFUSED.items():
            out = os.path.join(tmp, name + ".json")
            proc = subprocess.run([uet_ab] + flags + ["--json=" + out], capture_output=True,
                                  text=True, timeout=30)
            # Expect: refused at once, naming the flag; nothing ran, nothing was written.
            if proc.returncode != 2:
                failures.append(f"{name}: rc {proc.returncode}, want 2")
            if want not in proc.stderr:
                failures.append(f"{name}: stderr {proc.stderr!r} lacks {want!r}")
            if "flows completed" in proc.stdout or os.path.exists(out):
                failures.append(f"{name}: a run started: {proc.stdout!r}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("1 passed, 0 failed" if not failures else "0 passed, 1 failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
