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
    "standard": "18ee8970028b1fb14ca9c96f82afe31579662c6b9133ecb25d70d5962d537f58",
    "fattree_perm": "4e675c10ed1f0ece40121e82cdf3f0e8c3f9938455916a057cf697b94610c63d",
    "failure_down": "983572155949b3f0ffb1a45d121e35e4482d757e4e613624276f7092280ec54e",
    "failure_degraded": "d1c348614ab9b6223b93373f6c9d0a6678f0afb949389319027e599e9e32d769",
    "rod_rccc_mixed": "c2e784b76de3600cee11af58003f8cbf7345c2b031a6eae2dcb4885d7daf50a2",
    "alltoall": "02fd95aebebd336f63b4c1a6f8dda5d5b3be8e9f09124492116ade3b7cfd5b60",
    "allreduce": "9842be9b601e10df58ba630af5dd7ed384e57450425dcea0698cf328f08c7586",
    "websearch": "7846b1d36d0efe62d37a86aaa2da46c0aa2468eee899837fef3b611256ce4d58",
    "loss_sweep": "f100992a4481689e734e672322e392202a43a7443f34364b89f75befdf94f9d1",
    "fattree_k16": "09fbeb2fb5af650a1a0ede89f4b3229917a276e9a8d4f59dd7e5aae5f957de85",
    "cm": "4cd27d88dbdf8fafb94ad37790b966a80a4161b6fa0dd0ac97e8f5307742646e",
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
