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
    "standard": "75c6e0ea5a004be32ec1397691b4b92f16606b07f97b2d6256805f80fed1b1d1",
    "fattree_perm": "423d3dc2138945a817527cd7a1d90e9f82c5fc8e9db07798ec302b3769ead02f",
    "failure_down": "93755e0d5fbb55fe143ff4f43681a76722fc8a2f6320355afc299cc355e1ee41",
    "failure_degraded": "f3c434191ff48262372ef28b827f9c00db2d9773c2efc508e6883ea5fe4f5acf",
    "rod_rccc_mixed": "aecd09094e0dd3e66c4b562ffd39e124dee7fe8f3e8baee09988138891b620b3",
    "alltoall": "0614702aa200f3420bd4ab349ea9b0ae25ebea0283d66b288bc2d52d10e5050c",
    "allreduce": "025eafc16309e04983a8f5e583fb275c6b2d5ca1f073f3c7cd679f68cbf0bd24",
    "websearch": "92e50d9e6b6f9f20e2d766a9c0ac56f3c78b7216cd38785d8207924ad577d048",
    "loss_sweep": "262ee9f4b032c384f909b4122b9e4490cf934c7a22ea10b55d64200acda00e61",
    "fattree_k16": "e02b52b57e70b1fc57ea42b25023bd9e9dc48085fae057e51576bec1e15f6cec",
    "cm": "7a175b99e28046461819de4d221fd47380fb43c4fe8fba624c0fd725eded4ef4",
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
