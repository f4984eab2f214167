#!/usr/bin/env python3
"""uet-ab on the AI/HPC topologies split over MPI ranks gives one process's results, byte for byte.

Runs a permutation (and a failure scenario on the dragonfly) on a dragonfly (whole groups per
rank), a Dragonfly+, a torus (slabs per rank), a hypercube, a rail fabric and a graph file under
`mpirun -np N` and in one process, and compares the SHA-256 of their JSON (all but wall_s), CSV
and pcaps (tests/ab/pinned_test.py's digest).
Usage: topologies_mpi_test.py BUILD_BIN_DIR RANKS
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mpi_test  # noqa: E402
import pinned_test  # noqa: E402

RUNS = {
    "dragonfly": ["--topology=dragonfly", "--df_p=2", "--df_a=4", "--df_h=2"],
    "dragonfly_failure": ["--topology=dragonfly", "--df_p=2", "--df_a=4", "--df_h=2",
                          "--scenario=failure", "--failed_links=4", "--degrade=0",
                          "--fail_at_us=20"],
    "dragonflyplus": ["--topology=dragonflyplus", "--dfp_leaves=2", "--dfp_spines=2",
                      "--dfp_hosts_per_leaf=2", "--df_h=2"],
    "torus": ["--topology=torus", "--torus=4x4x4", "--hosts_per_switch=1"],
    "hypercube": ["--topology=hypercube", "--hypercube_dim=5"],
    "rail": ["--topology=rail", "--rail_servers=8", "--gpus_per_server=4",
             "--rail_servers_per_leaf=2", "--rail_spines=2"],
    "graph": ["--topology=graph", "--graph=" + os.path.join(HERE, "two_tier_12.graph")],
}


def main():
    bindir, ranks = sys.argv[1], int(sys.argv[2])
    uet_ab = os.path.join(bindir, "uet-ab")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in RUNS.items():
            if "--scenario=failure" not in flags:
                flags = ["--scenario=permutation", *flags]
            digests = {}
            for n, prefix in ((1, []), (ranks, mpi_test.mpirun(ranks))):
                folder = os.path.join(tmp, f"{name}{n}")
                os.makedirs(os.path.join(folder, "pcap"))
                cmd = prefix + [uet_ab, *flags, "--bytes=262144",
                                "--json=" + os.path.join(folder, "out.json"),
                                "--csv=" + os.path.join(folder, "out.csv"),
                                "--pcap=" + os.path.join(folder, "pcap")]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                                      env=mpi_test.ENV)
                if proc.returncode != 0:
                    failures.append(f"{name} on {n} ranks: rc {proc.returncode}: "
                                    f"{proc.stderr[-500:]}")
                    continue
                if n > 1 and f"split over {n} ranks" not in proc.stdout:
                    failures.append(f"{name}: not split over {n} ranks: {proc.stdout[-300:]}")
                digests[n] = pinned_test.digest(folder)
            if len(digests) == 2 and digests[1] != digests[ranks]:
                failures.append(f"{name}: {ranks} ranks differ from one process")
            elif len(digests) == 2:
                print(f"{name}: {ranks} ranks = 1 process")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("1 passed, 0 failed" if not failures else "0 passed, 1 failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
