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
    "standard": "eb768c64ee70c093e07b9eed58213a9ad19581dc63b4e82a406f1b0a98c654da",
    "fattree_perm": "50b6bc18aeb1dcb56f9cbd6dfe3bb29a8ba1e71b7e20041e8cad8fe5acd534e7",
    "failure_down": "62f6333e7261bf9e079fc52ca97e2f2cc81da10af44308b9ef772e89a9bd1ee2",
    "failure_degraded": "cbc31cf157891f852ee1a4d1f9656ac854265eedcacb428d95cd6b1d3ef83e97",
    "rod_rccc_mixed": "c2e784b76de3600cee11af58003f8cbf7345c2b031a6eae2dcb4885d7daf50a2",
    "alltoall": "68050eb9212c633c01c1fa393d56aa8df3fd08d4cddc1ca55a72fdf9bae1531b",
    "allreduce": "9842be9b601e10df58ba630af5dd7ed384e57450425dcea0698cf328f08c7586",
    "websearch": "632538594f91c6bd5f7656863e24d8620124780e70ff601c9ae28efe3ebee219",
    "loss_sweep": "f100992a4481689e734e672322e392202a43a7443f34364b89f75befdf94f9d1",
    "fattree_k16": "1cef5550c73ecc54716ce0a96497630e14c52875a091e6a0a6e7c4a771a7bda0",
    "cm": "40df36b410d79630bd33a72f76cf6d409d93c081679ed5e563141783f34a8ed1",
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
