#!/usr/bin/env python3
"""uet-ab results pinned: JSON (all but wall_s), CSV and pcaps of a set of small runs, hashed.

Memory and speed work on the engines and the simulator (pools that grow on demand, ECMP
tables, payloads by length) must not change a single result. This test runs every scenario
kind on small fabrics and a 1024-host fat-tree permutation, both transports, with loss, PFC,
trimming, failures, ROD, RCCC and an htsim connection matrix, and compares a SHA-256 of each run's outputs with the value recorded
when the behaviour last changed on purpose. A deliberate change of behaviour re-records them
(`pinned_test.py BUILD_BIN_DIR --print`) and says why in its commit.
Usage: pinned_test.py BUILD_BIN_DIR [--print]
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> uet-ab flags. Each run writes --json, --csv and --pcap into its own folder.
RUNS = {
    "standard": [],
    "fattree_perm": ["--scenario=permutation", "--topology=fattree", "--k=8",
                     "--bytes=262144"],
    "failure_down": ["--scenario=failure", "--topology=fattree", "--k=8", "--degrade=0",
                     "--fail_at_us=20", "--failed_links=4", "--bytes=262144"],
    "failure_degraded": ["--scenario=failure", "--leaves=4", "--hosts_per_leaf=8",
                         "--spines=4", "--failed_links=4"],
    "rod_rccc_mixed": ["--scenario=permutation", "--topology=fattree", "--k=8",
                       "--uet_mode=rod", "--cc=both", "--lb=mixed", "--transport=uet",
                       "--bytes=262144"],
    "alltoall": ["--scenario=alltoall", "--leaves=4", "--hosts_per_leaf=4", "--spines=2",
                 "--bytes=65536"],
    "allreduce": ["--scenario=allreduce", "--leaves=4", "--hosts_per_leaf=4", "--spines=2",
                  "--bytes=1048576"],
    "websearch": ["--scenario=websearch", "--leaves=4", "--hosts_per_leaf=8", "--spines=4",
                  "--websearch_us=50"],
    "loss_sweep": ["--scenario=loss-sweep", "--leaves=4", "--hosts_per_leaf=4", "--spines=2",
                   "--loss_rates=0,0.01", "--sweep_bytes=1048576"],
    "fattree_k16": ["--scenario=permutation", "--topology=fattree", "--k=16",
                    "--bytes=65536", "--lb=mixed", "--evs=128"],
    "cm": ["--cm=" + os.path.join(HERE, "chain.cm"), "--leaves=2", "--hosts_per_leaf=8",
           "--spines=2"],
}

# name -> SHA-256 of the run's outputs (recorded with --print).
PINNED = {
    "standard": "89f1e201574d87971c979b81dda8f9c142baa9601b28eeb504c31c69c2bbc723",
    "fattree_perm": "058958452d5349f7c4c1458425934572d3dc75a532bb2451c7dbab88619ab3d4",
    "failure_down": "6f9f5bd8bfe1ef86199cb965d577e921ab0fb53cf22cd50504a5a7c99ea4a39e",
    "failure_degraded": "0901f5fca24c684ea541ea2c82001db7f5cfb3c70ec8e6fc49eba67a710ebdd0",
    "rod_rccc_mixed": "625f5f7acb93fc95124b6e188bfa151d45a60dd62caa14ac4017175e9f40603e",
    "alltoall": "acdcafc4c6df9d777daae86ad35f2df84e4dd57471eae889c0019503e6742ca5",
    "allreduce": "4aa442418b87063a0dbbe9260a2c030f2e3f3adecbd153371f2503087dce6525",
    "websearch": "07435ab2000dbcf43bd54f00ac41d9820a2edb6131b09525455247f9a6dd6bd0",
    "loss_sweep": "855bc501fdd66812c5364417569749856210925b8301e5cbe4103acfb5cf9c74",
    "fattree_k16": "e95bd913615e78d5ca114493abd1332e4ad4eae7c4eacec0c0245f2d818c1ca5",
    "cm": "a78c633c7ea71b58b819339d387da72357a7aa95c737ecaf7e4d352f44edfe81",
}


def digest(folder):
    h = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isdir(path):
            for pcap in sorted(os.listdir(path)):
                h.update(pcap.encode())
                h.update(open(os.path.join(path, pcap), "rb").read())
            continue
        if name.endswith(".flags"):
            continue  # the experiment file names this run's temporary paths
        data = open(path, "rb").read()
        if name.endswith(".json"):
            runs = json.loads(data)
            for r in runs:
                r.pop("wall_s")
            data = json.dumps(runs, sort_keys=True).encode()
        h.update(name.encode())
        h.update(data)
    return h.hexdigest()


def main():
    bindir = sys.argv[1]
    record = "--print" in sys.argv[2:]
    failures = []
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in RUNS.items():
            folder = os.path.join(tmp, name)
            os.makedirs(os.path.join(folder, "pcap"))
            cmd = [os.path.join(bindir, "uet-ab")] + flags + [
                "--json=" + os.path.join(folder, "out.json"),
                "--csv=" + os.path.join(folder, "out.csv"),
                "--pcap=" + os.path.join(folder, "pcap")]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                failures.append(f"{name}: rc {proc.returncode}: {proc.stderr}")
                continue
            got[name] = digest(folder)
            if not record and PINNED.get(name) != got[name]:
                failures.append(f"{name}: outputs changed (sha256 {got[name]}, pinned "
                                f"{PINNED.get(name)}): {' '.join(cmd[1:])}")
    if record:
        for name, d in got.items():
            print(f'    "{name}": "{d}",')
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
