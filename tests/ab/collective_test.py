#!/usr/bin/env python3
"""uet-ab --scenario=collective: nccl-tests figures for every collective, both transports.

Asserts:
- every collective with every algorithm completes on both transports on a small fabric (no
  failed flow), and the JSON's count, algbw and busbw follow nccl-tests' definitions from the
  size, the time and the collective's factor;
- a large ring all-reduce on an idle non-blocking fabric with NCCL's defaults reaches >= 98 % of
  the host link's payload bound on both transports, and one piece per ring step
  (--chunk_steps=1) stays at least 3 % below that;
- under 1 % fabric loss and with 2 failed spine links UET completes the all-reduce; each
  transport's outcome is reported (a RoCEv2 row that does not finish says so under the table);
- UET's datagram modes run the all-to-all (RUDI reliably; UUD with every datagram delivered);
- --tp/--coll_group run one collective per tensor-parallel group at once; --gpus_per_server
  runs the hierarchical all-reduce, its intra-server phases inside the time;
- RoCEv2 opens one QP per rank pair and channel: --channels=4 uses 4x the QPs of
  --channels=1 and spreads a ring over more spine links; UET's PDCs do not change;
- the same flags and seed give byte-identical JSON apart from wall time;
- bad flags are refused with exit 2 and a message naming the flag.
Usage: collective_test.py BUILD_BIN_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import ab_common

SMALL = ["--leaves=2", "--hosts_per_leaf=4", "--spines=2"]
NONBLOCKING = ["--leaves=4", "--hosts_per_leaf=4", "--spines=4"]
SPINES8 = ["--leaves=4", "--hosts_per_leaf=4", "--spines=8"]  # more paths than inter-leaf hops
ALGOS = {"allreduce": ["ring", "tree", "hd"], "reducescatter": ["ring", "hd"],
         "allgather": ["ring", "hd"], "broadcast": ["ring"], "alltoall": ["pairwise", "batched"],
         "reduce": ["ring"], "gather": ["batched"], "scatter": ["batched"]}
FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "broadcast": lambda n: 1.0,
          "reduce": lambda n: 1.0}


def uet_ab(bindir, tmp, name, args):
    out = os.path.join(tmp, name + ".json")
    proc = subprocess.run([os.path.join(bindir, "uet-ab"), "--scenario=collective", *args,
                           "--json=" + out], capture_output=True, text=True, timeout=600)
    return proc, (json.load(open(out)) if proc.returncode == 0 else None)


def strip_wall(rows):
    text = json.dumps(rows, sort_keys=True)
    return re.sub(r'"wall_s": [0-9.eE+-]+', '"wall_s": 0', text)


def main():
    bindir = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        # Every collective and algorithm, both transports.
        for coll, algos in ALGOS.items():
            for algo in algos:
                proc, rows = uet_ab(bindir, tmp, f"{coll}_{algo}",
                                    [*SMALL, f"--coll={coll}", f"--algo={algo}", "--sizes=64K:1M:16",
                                     "--chunk_kb=64"])
                if rows is None:
                    failures.append(f"{coll} {algo}: exit {proc.returncode}: {proc.stderr.strip()}")
                    continue
                if "busbw" not in proc.stdout or "algbw" not in proc.stdout:
                    failures.append(f"{coll} {algo}: no nccl-tests header in the table")
                if len(rows) != 4:
                    failures.append(f"{coll} {algo}: {len(rows)} JSON rows, expected 2 sizes x 2")
                for r in rows:
                    key = f"{coll} {algo} {r['transport']} {r['bytes']}"
                    n = r["ranks"]
                    if r["failed"] != 0 or not r["iteration_us"]:
                        failures.append(f"{key}: {r['failed']} flows failed")
                        continue
                    if r["count"] != r["bytes"] // 4:
                        failures.append(f"{key}: count {r['count']} for {r['bytes']} bytes")
                    algbw = r["bytes"] / (r["time_us"] * 1e3)
                    busbw = algbw * FACTOR.get(coll, lambda n: (n - 1) / n)(n)
                    if abs(r["algbw_gbytes"] - algbw) > 1e-3 * algbw:
                        failures.append(f"{key}: algbw {r['algbw_gbytes']} vs size/time {algbw}")
                    if abs(r["busbw_gbytes"] - busbw) > 1e-3 * busbw:
                        failures.append(f"{key}: busbw {r['busbw_gbytes']} vs {busbw}")

        # A large ring all-reduce on an idle non-blocking fabric, NCCL's defaults (512 KiB
        # steps, 4 a ring step, 8 slots): within 2 % of the link's payload bound. One piece per
        # ring step (--chunk_steps=1) waits out every piece's completion before forwarding it
        # and stays at least 3 % further from the bound.
        shares = {}
        for name, extra in (("bound", []), ("bound_one_step", ["--chunk_steps=1"])):
            proc, rows = uet_ab(bindir, tmp, name, [*NONBLOCKING, "--sizes=64M", *extra])
            print(proc.stdout)
            if rows is None:
                failures.append(f"{name}: exit {proc.returncode}: {proc.stderr.strip()}")
                continue
            for r in rows:
                share = r["busbw_gbytes"] / r["link_bound_gbytes"]
                shares[(name, r["transport"])] = share
                print(f"{name} {r['transport']}: busbw {r['busbw_gbytes']:.2f} GB/s = "
                      f"{share:.3f} of the {r['link_bound_gbytes']:.2f} GB/s bound")
        for t in ("uet", "rocev2"):
            full, one = shares.get(("bound", t)), shares.get(("bound_one_step", t))
            if full is None or one is None:
                continue
            if full < 0.98 or full > 1.0:
                failures.append(f"bound {t}: busbw {full:.3f} of the bound, want 0.98..1")
            if one > full - 0.03:
                failures.append(f"bound {t}: one piece a step {one:.3f}, not 3 % below {full:.3f}")

        # Loss and failures: UET completes; every transport's outcome is on the table.
        proc, rows = uet_ab(bindir, tmp, "faults",
                            [*NONBLOCKING, "--sizes=4M", "--coll_loss=0.01",
                             "--coll_failed_links=2", "--degrade=0", "--max_ms=2000"])
        print(proc.stdout)
        if rows is None:
            failures.append(f"faults: exit {proc.returncode}: {proc.stderr.strip()}")
        else:
            for r in rows:
                if r["coll_loss"] != 0.01 or r["coll_failed_links"] != 2 or r["drops"] == 0:
                    failures.append(f"faults {r['transport']}: loss not applied: {r['drops']} drops")
                done = r["failed"] == 0 and r["iteration_us"]
                if r["transport"] == "uet" and not done:
                    failures.append(f"faults uet: {r['failed']} flows not done")
                if not done and "not done at" not in proc.stdout:
                    failures.append(f"faults {r['transport']}: unfinished row without a note")

        # UET's datagram modes: RUDI carries the collective reliably; UUD its single-packet
        # all-to-all, every datagram delivered on an idle fabric, with the note that says so.
        for mode in ("rudi", "uud"):
            proc, rows = uet_ab(bindir, tmp, mode, [*SMALL, "--coll=alltoall", "--sizes=16K",
                                                    "--transport=uet", "--uet_mode=" + mode])
            if rows is None:
                failures.append(f"--uet_mode={mode}: exit {proc.returncode}: {proc.stderr.strip()}")
                continue
            d = rows[0]["run"]["datagrams"]
            if rows[0]["failed"] != 0 or rows[0]["run"]["params"]["uet_mode"] != mode:
                failures.append(f"--uet_mode={mode}: {rows[0]['failed']} failed")
            if mode == "rudi" and (d["rudi_sent"] == 0 or d["rudi_executed"] < d["rudi_sent"]):
                failures.append(f"--uet_mode=rudi: datagrams {d}")
            if mode == "uud" and (d["uud_sent"] != 56 or d["uud_delivered"] != 56 or
                                  "56 of 56 datagrams delivered" not in proc.stdout):
                failures.append(f"--uet_mode=uud: datagrams {d} (8 ranks x 7 peers = 56)")

        # Several communicators at once: 4 tensor-parallel groups of 4 ranks, each a 4-rank ring.
        proc, rows = uet_ab(bindir, tmp, "groups", [*NONBLOCKING, "--tp=4", "--coll_group=tp",
                                                    "--sizes=1M"])
        if rows is None:
            failures.append(f"groups: exit {proc.returncode}: {proc.stderr.strip()}")
        else:
            for r in rows:
                if (r["communicators"], r["members"], r["ranks"]) != (4, 4, 16):
                    failures.append(f"groups: {r['communicators']} x {r['members']} of {r['ranks']}")
                if abs(r["busbw_factor"] - 2 * 3 / 4) > 1e-9 or r["failed"] != 0:
                    failures.append(f"groups: busbw factor {r['busbw_factor']}, {r['failed']} failed")
                # 4 rings of 4 ranks, 6 steps each; a rank's 256 KiB part of a step goes as
                # NCCL's two slices: 4 x 6 x 4 x 2 = 192 flows.
                if r["flows"] != 4 * 2 * 3 * 4 * 2:
                    failures.append(f"groups: {r['flows']} flows, expected 192")

        # Multi-GPU servers: 4 servers of 4 GPUs; the time covers both intra-server phases.
        proc, rows = uet_ab(bindir, tmp, "servers", [*NONBLOCKING, "--gpus_per_server=4",
                                                     "--intra_us=50", "--sizes=4M"])
        if rows is None:
            failures.append(f"servers: exit {proc.returncode}: {proc.stderr.strip()}")
        else:
            for r in rows:
                if r["gpus_per_server"] != 4 or r["failed"] != 0 or r["time_us"] < 100:
                    failures.append(f"servers {r['transport']}: {r['gpus_per_server']} GPUs, "
                                    f"{r['failed']} failed, {r['time_us']} us (< 2 x 50 us)")

        # Channels take different paths under RoCEv2: one QP per rank pair and channel (4x the
        # QPs at --channels=4), each with its own UDP source port, so the ring's inter-leaf hops
        # hash onto more spine links; UET keeps one PDC per pair and sprays it either way.
        spread = {}
        for channels in (1, 4):
            proc, rows = uet_ab(bindir, tmp, f"channels{channels}",
                                [*SPINES8, "--sizes=1M", f"--channels={channels}"])
            if rows is None:
                failures.append(f"--channels={channels}: exit {proc.returncode}: "
                                f"{proc.stderr.strip()}")
                continue
            for r in rows:
                if r["failed"] != 0 or r["channels"] != channels:
                    failures.append(f"--channels={channels} {r['transport']}: {r['failed']} "
                                    f"failed, {r['channels']} channels")
                spread[(r["transport"], channels)] = (r["connections"], r["top_ports_used"],
                                                      r["top_ports"])
        if len(spread) == 4:
            print("channels: (transport, channels) -> (connections, top ports used, top ports):",
                  spread)
            q1, used1, ports = spread[("rocev2", 1)]
            q4, used4, _ = spread[("rocev2", 4)]
            # 16 ranks in a ring: 16 rank pairs, a QP at each end per channel.
            if q1 != 32 or q4 != 4 * q1:
                failures.append(f"channels: rocev2 QPs {q1} at 1 channel, {q4} at 4 (want 32, 128)")
            if not used1 < used4 <= ports:
                failures.append(f"channels: rocev2 used {used1} spine ports at 1 channel, {used4} "
                                f"at 4, of {ports}: more channels should spread wider")
            if spread[("uet", 1)][0] != spread[("uet", 4)][0]:
                failures.append(f"channels: uet PDCs {spread[('uet', 1)][0]} at 1 channel, "
                                f"{spread[('uet', 4)][0]} at 4: one per pair whatever the channels")

        # Reproducible from the seed.
        args = [*SMALL, "--coll=alltoall", "--sizes=256K", "--iters=2", "--placement=random"]
        _, a = uet_ab(bindir, tmp, "rep_a", args)
        _, b = uet_ab(bindir, tmp, "rep_b", args)
        if a is None or b is None or strip_wall(a) != strip_wall(b):
            failures.append("the same seed gave different JSON")
        elif len(a[0]["iteration_us"]) != 2:
            failures.append(f"--iters=2 gave {len(a[0]['iteration_us'])} iterations")

        # Bad flags: refused, naming the flag.
        for bad, flag in ((["--coll=allsum"], "--coll"), (["--coll=alltoall", "--algo=ring"], "ring"),
                          (["--sizes=8K:1K:2"], "--sizes"), (["--sizes=8Q"], "--sizes"),
                          (["--ranks=99"], "--ranks"), (["--channels=0"], "--channels"),
                          (["--chunk_steps=0"], "--chunk_steps"),
                          (["--coll=reducescatter", "--algo=hd", "--ranks=6"], "power-of-two"),
                          (["--coll=broadcast", "--root=8"], "--root"),
                          (["--coll_loss=0.9"], "--coll_loss"),
                          (["--coll=alltoall", "--sizes=1M", "--uet_mode=uud"], "--uet_mode=uud"),
                          (["--uet_mode=udp"], "--uet_mode"),
                          (["--dp=3", "--tp=2", "--ranks=8"], "--dp=3 x --tp=2"),
                          (["--coll_group=pp"], "--coll_group"),
                          (["--gpus_per_server=3"], "--gpus_per_server=3 must divide"),
                          (["--coll=alltoall", "--gpus_per_server=4"], "allreduce only")):
            proc, _ = uet_ab(bindir, tmp, "bad", [*SMALL, *bad])
            if proc.returncode != 2 or flag not in proc.stderr:
                failures.append(f"{bad}: exit {proc.returncode}, stderr {proc.stderr.strip()!r}")

    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
