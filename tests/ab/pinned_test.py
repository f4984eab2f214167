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
    "standard": "95915c2a4bbe6898ba02041cda9b4098096ddb0f2aafe907471af9be5ff63aab",
    "fattree_perm": "608e154e00a510ad51108d943d0acc0e79cb11a579f53f25c754680882a128f9",
    "failure_down": "03cc69489699f13c41f8986ceaac74254d87e6952b5b7263a0c28ea83b09855a",
    "failure_degraded": "bdaa32abb95af3421d6a1b190c1e069dd0b54c7b43838424b1cac022b3a0e1fd",
    "rod_rccc_mixed": "43ee21add286cc5fb42262f201ddbf861ed8a035333a992b1877f48875293898",
    "alltoall": "31ea769353ae40dc0f44449315427b718b13e6fb8f96e98fd3ebc07400ca8052",
    "allreduce": "959ca1280f1cbfd5a276205ff3bc4259ec2169f95b8c2b61af56e34fa4010609",
    "websearch": "f7e2b9eb218b76d4c5ff6050113b3343ec41a53ee87ce100e8df518ce41bbee6",
    "loss_sweep": "f100992a4481689e734e672322e392202a43a7443f34364b89f75befdf94f9d1",
    "fattree_k16": "ad9799f404821db0ae9db0f8fd7ca4a1ece983b1bc4dc8e7be001ec911db4f40",
    "cm": "75f7025169d367ee8b0d1c6763447eae34f4538339e2bac5ac07703e7c207e40",
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
