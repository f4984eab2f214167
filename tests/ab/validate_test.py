#!/usr/bin/env python3
"""uet-ab refuses a bad request before its first run starts.

Asserts: every scenario's fabric, flows and configuration are checked before anything runs,
so a request that would fail in its second or third scenario fails at once: exit code 2, a
message naming the flag and its valid range, no table printed, no JSON written. Cases: an odd
fat-tree arity; the standard comparison on a fabric too small for its incast (permutation
would have run first); a connection matrix with more Nodes than the fabric has hosts; more
failed links than the top tier has; a ring all-reduce with fewer bytes than hosts; an unknown
--verb, or one the delivery mode cannot carry; a mix with
--incasts or --fan_in out of range, or too many flows in all. A run whose
estimated peak memory exceeds --max_memory_gb is refused the same way, with the estimate and
the flags that shrink it; the estimate grows with the hosts, and at a million hosts (k=160)
counts every term (hosts, flows, ports, route entries) exactly; under a large enough limit the
same run goes ahead.
Usage: validate_test.py BUILD_BIN_DIR
"""
import os
import re
import sys
import tempfile

import ab_common

HERE = ab_common.HERE

# name -> (flags, what stderr must contain)
REFUSED = {
    "odd_k": (["--scenario=standard", "--k=7", "--topology=fattree"],
              "--k=7 out of range: even, 2..256"),
    "incast_after_permutation": (["--scenario=standard", "--leaves=2", "--hosts_per_leaf=4"],
                                 "--fan_in=32 out of range: 1..7"),
    "cm_too_large": (["--cm=" + os.path.join(HERE, "chain.cm"), "--leaves=2",
                      "--hosts_per_leaf=4"],
                     "Nodes 16, but the fabric has 8 hosts"),
    "mix_incasts": (["--scenario=mix", "--leaves=2", "--hosts_per_leaf=4", "--incasts=9",
                     "--fan_in=2"],
                    "--incasts=9 out of range: 1..8"),
    "mix_fan_in": (["--scenario=mix", "--leaves=2", "--hosts_per_leaf=4", "--incasts=2",
                    "--fan_in=8"],
                   "--fan_in=8 out of range: 1..7"),
    "mix_flows": (["--scenario=mix", "--topology=fattree", "--k=32", "--incasts=8192",
                   "--fan_in=8191"],
                  "make 67108864 flows, at most 16777216: lower --incasts or --fan_in"),
    "failed_links": (["--scenario=failure", "--leaves=4", "--spines=2", "--hosts_per_leaf=2",
                      "--failed_links=9"],
                     "--failed_links=9 out of range: 1..8"),
    "allreduce_bytes": (["--scenario=allreduce", "--leaves=4", "--hosts_per_leaf=4",
                         "--bytes=8"],
                        "--bytes=8 out of range for --scenario=allreduce: 16.."),
    "verb": (["--scenario=permutation", "--verb=rendezvous"],
             "--verb=rendezvous unknown: write, send or atomic"),
    "verb_mode": (["--scenario=permutation", "--verb=atomic", "--uet_mode=rudi"],
                  "--verb=atomic runs on --uet_mode=rud or rod"),
    "deferrable_verb": (["--scenario=permutation", "--deferrable"],
                        "--deferrable applies to --verb=send only"),
    "recv_delay": (["--scenario=permutation", "--verb=send", "--recv_delay_us=-1"],
                   "--recv_delay_us=-1 out of range: 0..1e+06"),
    "min_rto": (["--scenario=permutation", "--min_rto_us=20000"],
                "--min_rto_us=20000 out of range: 0, or 1..10000"),
}


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (flags, want) in REFUSED.items():
            out = os.path.join(tmp, name + ".json")
            proc = ab_common.run(flags + ["--json=" + out], timeout=30)
            # Expect: refused at once, naming the flag; nothing ran, nothing was written.
            if proc.returncode != 2:
                failures.append(f"{name}: rc {proc.returncode}, want 2")
            if want not in proc.stderr:
                failures.append(f"{name}: stderr {proc.stderr!r} lacks {want!r}")
            if "flows completed" in proc.stdout or os.path.exists(out):
                failures.append(f"{name}: a run started: {proc.stdout!r}")
        # A memory limit below the estimate: refused up front, with the estimate.
        small = ["--scenario=permutation", "--leaves=2", "--hosts_per_leaf=4", "--spines=2",
                 "--bytes=65536"]
        estimates = {}
        for name, flags in (("small", small),
                            ("large", small[:1] + ["--leaves=8", "--hosts_per_leaf=16"] +
                             small[3:])):
            out = os.path.join(tmp, name + "_mem.json")
            proc = ab_common.run(flags + ["--max_memory_gb=0.001", "--json=" + out], timeout=30)
            m = re.search(r"this run needs about ([0-9.e+]+) GiB \((\d+) hosts x ", proc.stderr)
            if proc.returncode != 2 or m is None or "--max_memory_gb" not in proc.stderr:
                failures.append(f"memory {name}: rc {proc.returncode}, stderr {proc.stderr!r}")
                continue
            if "--leaves / --hosts_per_leaf, or --bytes" not in proc.stderr:
                failures.append(f"memory {name}: no flags to change in {proc.stderr!r}")
            if "flows completed" in proc.stdout or os.path.exists(out):
                failures.append(f"memory {name}: a run started")
            estimates[name] = (float(m.group(1)), int(m.group(2)))
        # Expect: 8 and 128 hosts; the larger fabric needs more (linear in hosts, MiB a host).
        if len(estimates) == 2:
            (small_gib, small_hosts), (large_gib, large_hosts) = estimates["small"], estimates["large"]
            if (small_hosts, large_hosts) != (8, 128) or not 0 < small_gib < large_gib < 1:
                failures.append(f"memory estimates {estimates}")
        # A million hosts (fat-tree k=160): every term of the estimate counted without overflow
        # or truncation, the sum several GiB, the flags to change named; no route
        # entries (a fat-tree's minimal routes are computed from addresses).
        proc = ab_common.run(["--scenario=permutation", "--topology=fattree", "--k=160",
                              "--bytes=65536", "--transport=uet", "--max_memory_gb=1"],
                             timeout=60)
        m = re.search(r"this run needs about ([0-9.e+]+) GiB \(1024000 hosts x .* \+ 1024000 "
                      r"flows .* \+ 6144000 ports", proc.stderr)
        if (proc.returncode != 2 or m is None or not 5 < float(m.group(1)) < 100
                or "route entries" in proc.stderr):
            failures.append(f"memory at 10^6 hosts: rc {proc.returncode}, {proc.stderr!r}")
        elif "lower --k / --hosts_per_tor" not in proc.stderr:
            failures.append(f"memory at 10^6 hosts: no flags to change in {proc.stderr!r}")
        ran = ab_common.run(small + ["--transport=uet", "--max_memory_gb=64"], timeout=60)
        if ran.returncode != 0 or "flows completed" not in ran.stdout:
            failures.append(f"--max_memory_gb=64: rc {ran.returncode}, {ran.stderr!r}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
