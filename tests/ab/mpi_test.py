#!/usr/bin/env python3
"""uet-ab split over MPI ranks gives the same results as one process, byte for byte.

Runs every pinned run (and uet-anchors' small scale, and sim_bench's raw UDP fabric) (tests/ab/pinned_test.py: each scenario kind, both transports, with loss,
PFC, trimming, failures, ROD, RCCC, an htsim connection matrix, leaf-spine and fat-tree) under
`mpirun -np N` and compares the SHA-256 of its JSON (all but wall_s), CSV and pcaps with the
value pinned for one process. Also: a build/flag mismatch between ranks is refused, and a rank
that dies ends the run with an error instead of a hang.
Usage: mpi_test.py BUILD_BIN_DIR RANKS
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pinned_test  # noqa: E402

# As root (CI containers) Open MPI refuses to start without these.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def mpirun(ranks):
    return ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"]


def main():
    bindir, ranks = sys.argv[1], int(sys.argv[2])
    uet_ab = os.path.join(bindir, "uet-ab")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in pinned_test.RUNS.items():
            folder = os.path.join(tmp, name)
            os.makedirs(os.path.join(folder, "pcap"))
            cmd = mpirun(ranks) + [uet_ab] + flags + [
                "--json=" + os.path.join(folder, "out.json"),
                "--csv=" + os.path.join(folder, "out.csv"),
                "--pcap=" + os.path.join(folder, "pcap")]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=ENV)
            if proc.returncode != 0:
                failures.append(f"{name}: rc {proc.returncode}: {proc.stderr[-2000:]}")
                continue
            if f"split over {ranks} ranks" not in proc.stdout:
                failures.append(f"{name}: the run was not split over {ranks} ranks: "
                                f"{proc.stdout[-500:]}")
            got = pinned_test.digest(folder)
            if got != pinned_test.PINNED[name]:
                failures.append(f"{name}: {ranks} ranks differ from one process (sha256 {got}, "
                                f"pinned {pinned_test.PINNED[name]}): {' '.join(cmd)}")
            else:
                print(f"{name}: {ranks} ranks = 1 process")

        # Scenarios beyond the pinned set, against one process here: a tree all-reduce, a
        # training step from a Chakra trace (compute tasks, collectives) and a permutation with
        # incasts, JSON less wall times.
        def strip(x):
            if isinstance(x, dict):
                return {k: strip(v) for k, v in x.items() if "wall" not in k}
            if isinstance(x, list):
                return [strip(v) for v in x]
            return x
        traces = os.path.join(os.path.dirname(os.path.dirname(HERE)), "sim", "data", "traces")
        small = ["--leaves=4", "--hosts_per_leaf=4", "--spines=2"]
        for name, flags in {
                "tree": ["--scenario=collective", "--coll=allreduce", "--algo=tree", "--sizes=1M"],
                "trace": ["--scenario=trace", "--trace=" + os.path.join(traces, "dp16")],
                "mix": ["--scenario=mix", "--incasts=3", "--fan_in=4", "--bytes=65536"]}.items():
            got = {}
            for n, prefix in ((1, []), (ranks, mpirun(ranks))):
                out = os.path.join(tmp, f"{name}{n}.json")
                proc = subprocess.run(prefix + [uet_ab, *flags, *small, "--json=" + out],
                                      capture_output=True, text=True, timeout=600, env=ENV)
                if proc.returncode != 0:
                    failures.append(f"{name} on {n} ranks: rc {proc.returncode}: "
                                    f"{proc.stderr[-500:]}")
                    continue
                got[n] = strip(json.load(open(out)))
            if len(got) == 2 and got[1] != got[ranks]:
                failures.append(f"{name}: {ranks} ranks differ from one process")

        # uet-anchors (the htsim anchors' runs) the same way: its JSON less wall times, with
        # each run's flows per link (each rank walks its own hosts' paths).
        anchors = os.path.join(bindir, "uet-anchors")
        runs = {}
        for n, prefix in ((1, []), (ranks, mpirun(ranks))):
            out = os.path.join(tmp, f"anchors{n}.json")
            proc = subprocess.run(prefix + [anchors, "--scale=small", "--path_report", "--json=" + out],
                                  capture_output=True, text=True, timeout=600, env=ENV)
            if proc.returncode != 0:
                failures.append(f"uet-anchors on {n} ranks: rc {proc.returncode}: "
                                f"{proc.stderr[-500:]}")
                continue
            runs[n] = [{k: v for k, v in r.items() if "wall" not in k}
                       for r in json.load(open(out))]
        if len(runs) == 2 and runs[1] != runs[ranks]:
            failures.append(f"uet-anchors: {ranks} ranks differ from one process")

        # sim_bench (raw UDP at line rate, ECMP and sprayed): the same events, packets,
        # throughput and drops.
        sim_bench = os.path.join(bindir, "sim_bench")
        keep = ("events  ", "packets delivered", "delivered Gb/s", "drops")
        for spray in ([], ["--spray"]):
            lines = {}
            for n, prefix in ((1, []), (ranks, mpirun(ranks))):
                proc = subprocess.run(prefix + [sim_bench, "--k=8", "--us=100", *spray],
                                      capture_output=True, text=True, timeout=600, env=ENV)
                lines[n] = [l for l in proc.stdout.splitlines() if l.startswith(keep)]
                if proc.returncode != 0 or len(lines[n]) != 4:
                    failures.append(f"sim_bench {spray} on {n} ranks: rc {proc.returncode}, "
                                    f"{proc.stdout[-300:]} {proc.stderr[-300:]}")
            if lines[1] != lines[ranks]:
                failures.append(f"sim_bench {spray}: {ranks} ranks {lines[ranks]} != {lines[1]}")

        # Ranks that disagree on their flags are refused, by name, before any run.
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "1", uet_ab, "--seed=1",
               ":", "-np", str(ranks - 1), uet_ab, "--seed=2"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV)
        if proc.returncode == 0 or "other flags than rank 0" not in proc.stderr:
            failures.append(f"mismatched flags: rc {proc.returncode}, stderr {proc.stderr[-500:]}")

        # A stop (SIGUSR1 to mpirun, which passes it to every rank): all ranks stop after the
        # same window and rank 0 writes the partial results.
        out = os.path.join(tmp, "partial.json")
        proc = subprocess.Popen(mpirun(ranks) + [uet_ab, "--scenario=alltoall", "--transport=uet",
                                                 "--progress", "--json=" + out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        first = proc.stderr.readline()  # blocks until rank 0's first progress line (after 2 s)
        if not first.startswith("[alltoall uet] simulated"):
            failures.append(f"interrupt: first stderr line is not a progress line: {first!r}")
        proc.send_signal(signal.SIGUSR1)
        try:
            stdout, stderr = proc.communicate(timeout=120)
            if proc.returncode != 130 or "INTERRUPTED (Ctrl-C): uet stopped at" not in stdout:
                failures.append(f"interrupt: exit {proc.returncode}, stdout {stdout[-300:]!r}")
            runs = json.load(open(out))
            if len(runs) != 1 or runs[0]["completed"] >= runs[0]["flows"]:
                failures.append(f"interrupt: JSON has {len(runs)} runs, expected one partial run")
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            failures.append("interrupt: the ranks did not stop within 120 s of SIGUSR1")
        except (OSError, ValueError) as e:
            failures.append(f"interrupt: JSON not valid: {e}")

        # A rank that dies mid-run (SIGKILL from inside, as the OOM killer would) ends the run
        # with an error on every rank; the timeout catches a hang.
        script = os.path.join(tmp, "die.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n"
                    "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then\n"
                    f"  exec timeout -s KILL 0.3 {uet_ab} \"$@\"\n"
                    "fi\n"
                    f"exec {uet_ab} \"$@\"\n")
        os.chmod(script, 0o755)
        cmd = mpirun(ranks) + [script, "--scenario=permutation", "--topology=fattree", "--k=8",
                               "--bytes=8388608"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=ENV)
            if proc.returncode == 0:
                failures.append("a rank killed mid-run: mpirun exited 0")
        except subprocess.TimeoutExpired:
            failures.append("a rank killed mid-run: the others hung (no exit in 120 s)")

        # MPI is a module beside the tools (lib/libuet_mpi_ranks.so), opened under a launcher
        # only: a copy of uet-ab without it runs alone, and refuses to run as a rank.
        alone = os.path.join(tmp, "alone", "bin")
        os.makedirs(alone)
        shutil.copy(uet_ab, alone)
        small = [os.path.join(alone, "uet-ab"), "--scenario=permutation", "--topology=fattree",
                 "--k=2", "--bytes=4096"]
        env = dict(ENV, LD_LIBRARY_PATH="")
        proc = subprocess.run(small, capture_output=True, text=True, timeout=60, env=env)
        if proc.returncode != 0:
            failures.append(f"no MPI module, one process: rc {proc.returncode}, "
                            f"stderr {proc.stderr[-500:]}")
        proc = subprocess.run(small, capture_output=True, text=True, timeout=60,
                              env=dict(env, OMPI_COMM_WORLD_SIZE=str(ranks)))
        if proc.returncode == 0 or "needs the module libuet_mpi_ranks.so" not in proc.stderr:
            failures.append(f"no MPI module as a rank: rc {proc.returncode}, "
                            f"stderr {proc.stderr[-500:]}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
