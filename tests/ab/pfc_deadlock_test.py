#!/usr/bin/env python3
"""uet-ab stops a RoCEv2 run at a PFC deadlock on a torus and says so, end to end.

Scenario: a ring of 8 switches (--torus=8, one host each), every host sending 1 MiB to the host
three hops on, so shortest paths all turn the same way round and each link carries three flows:
under PFC the paused buffers wait on each other round the ring (a cyclic buffer dependency, Hu
et al., HotNets 2016), which shortest-path routing without virtual channels does not break.
Asserts: with --pfc_watchdog=report at 1 ms the watchdog finds the cycle after its detection
time, the run stops there (before --max_ms) with exit status 0 (a deadlock is a result, not a
tool error: the JSON is written), stdout names the deadlock, when it was found and that the run
stopped, and the title's NOTE counts the flows left; UET on the same fabric and flows runs
without PFC and completes every flow. With the watchdog off the same run never finishes: no
flow completes by --max_ms and nothing names a deadlock (so it was the watchdog that stopped
the first run). On a mesh (no wraparound: no cycle) the same flows complete under PFC.
Those runs pass --deadlock_free=off: by default (auto) the PFC run on a torus routed minimally
takes dimension-order routes with the dateline, says so under the title, and completes, while
UET keeps every shortest path. On the ring with --dimension_order the same flows deadlock with --deadlock_free=off, and complete
with the dateline's two lossless classes (--deadlock_free=tagger, and auto, the default: each
class its own PFC priority at the switches); routes needing more classes than the switches' three
lossless priorities (valiant on a dragonfly with --nogroup_minimal: 5) are refused. A
collective on the ring (every all-to-all send at once, 2 hosts a switch) stops the same way, and
its row's note says the watchdog stopped it rather than sending the user to --max_ms.
Usage: pfc_deadlock_test.py BUILD_BIN_DIR
"""
import json
import os
import re
import sys
import tempfile

import ab_common

HOSTS = 8
MAX_MS = 5
WATCHDOG_US = 1000
RING = ["--topology=torus", "--torus=8", "--pfc_watchdog_us=%d" % WATCHDOG_US,
        "--max_ms=%d" % MAX_MS]
# Every shortest path, as a lossy run takes them: auto would route the PFC run in dimension order.
SHORTEST = [*RING, "--deadlock_free=off"]
AUTO_LINE = ("rocev2 (PFC): dimension-order routes with the dateline's 2 lossless classes, as "
             "lossless tori route (--deadlock_free=off: every shortest path)")
FOUND = re.compile(r"rocev2 PFC watchdog: \d+ pauses outlasted its detection time, 0 frames "
                   r"dropped, (\d+) deadlocks \(cycles of paused queues\), the first at "
                   r"([0-9.]+) us(: the run stopped there)?")
NOTE = "NOTE: rocev2: 8 of 8 flows incomplete"


def ring_cm(tmp):
    """Host i sends 1 MiB to host i+3 round the ring: every shortest path turns the same way."""
    path = os.path.join(tmp, "ring.cm")
    with open(path, "w") as f:
        f.write(f"Nodes {HOSTS}\nConnections {HOSTS}\n")
        for i in range(HOSTS):
            f.write(f"{i}->{(i + 3) % HOSTS} id {i + 1} start 0 size 1048576\n")
    return path


def run(tmp, name, args):
    """One uet-ab run: its exit status, stdout and runs by transport (None without a JSON)."""
    out = os.path.join(tmp, name + ".json")
    proc = ab_common.run([*args, "--json=" + out], echo=True, timeout=120)
    runs = None
    if os.path.exists(out):
        with open(out) as f:
            runs = ab_common.by_transport(json.load(f))
    return proc, runs


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        cm = ring_cm(tmp)

        proc, runs = run(tmp, "report", ["--cm=" + cm, "--transport=both", *SHORTEST])
        # Expect: exit status 0, both runs written; RoCEv2 stopped by the watchdog's deadlock.
        if proc.returncode != 0 or runs is None or set(runs) != {"uet", "rocev2"}:
            failures.append(f"report: rc {proc.returncode}, runs {runs and list(runs)}: "
                            f"{proc.stderr[-300:]}")
        else:
            found = FOUND.search(proc.stdout)
            roce, uet = runs["rocev2"], runs["uet"]
            if not found or int(found.group(1)) < 1 or not found.group(3):
                failures.append(f"report: no deadlock line that stopped the run: {proc.stdout!r}")
            elif not WATCHDOG_US <= float(found.group(2)) < MAX_MS * 1000:
                failures.append(f"report: deadlock found at {found.group(2)} us, not after the "
                                f"{WATCHDOG_US} us detection time")
            if NOTE not in proc.stdout:
                failures.append(f"report: no NOTE of the incomplete flows: {proc.stdout!r}")
            if not (roce["completed"] < roce["flows"] and roce["pfc_pauses"] > 0
                    and roce["sim_us"] < MAX_MS * 1000):
                failures.append(f"report: rocev2 {roce['completed']} of {roce['flows']} flows, "
                                f"{roce['pfc_pauses']} pauses, stopped at {roce['sim_us']} us")
            if uet["completed"] != HOSTS or uet["pfc_pauses"] != 0:
                failures.append(f"report: uet {uet['completed']} of {HOSTS} flows, "
                                f"{uet['pfc_pauses']} pauses")

        proc, runs = run(tmp, "off", ["--cm=" + cm, "--transport=rocev2", "--pfc_watchdog=off",
                                      *SHORTEST])
        # Expect: without the watchdog the deadlock holds to --max_ms, and no line names it.
        if proc.returncode != 0 or runs is None:
            failures.append(f"off: rc {proc.returncode}: {proc.stderr[-300:]}")
        else:
            roce = runs["rocev2"]
            if roce["completed"] != 0 or roce["sim_us"] != MAX_MS * 1000:
                failures.append(f"off: rocev2 {roce['completed']} flows done, ran to "
                                f"{roce['sim_us']} us")
            if "PFC watchdog" in proc.stdout:
                failures.append("off: a watchdog line with the watchdog off")

        proc, runs = run(tmp, "mesh", ["--cm=" + cm, "--transport=rocev2", "--torus_wrap=false",
                                       *SHORTEST])
        # Expect: the same flows on a line of switches (no cycle) complete under PFC.
        if proc.returncode != 0 or runs is None:
            failures.append(f"mesh: rc {proc.returncode}: {proc.stderr[-300:]}")
        else:
            roce = runs["rocev2"]
            if roce["completed"] != HOSTS or roce["pfc_pauses"] == 0 or "deadlock" in proc.stdout:
                failures.append(f"mesh: rocev2 {roce['completed']} of {HOSTS} flows, "
                                f"{roce['pfc_pauses']} pauses: {proc.stdout!r}")

        dor = ["--cm=" + cm, "--transport=rocev2", "--dimension_order", *RING]
        proc, runs = run(tmp, "dor_off", [*dor, "--deadlock_free=off"])
        # Expect: dimension order alone leaves the ring's cycle: the watchdog stops the run.
        found = FOUND.search(proc.stdout)
        if proc.returncode != 0 or runs is None or not found or not found.group(3):
            failures.append(f"dor off: rc {proc.returncode}, no deadlock that stopped the run: "
                            f"{proc.stdout[-300:]!r}")
        for name in ("tagger", "auto"):
            proc, runs = run(tmp, "dor_" + name, [*dor, "--deadlock_free=" + name])
            # Expect: the dateline's two classes: every flow completes, PFC paused links on the
            # way, and nothing names a deadlock.
            if proc.returncode != 0 or runs is None:
                failures.append(f"dor {name}: rc {proc.returncode}: {proc.stderr[-300:]}")
                continue
            roce = runs["rocev2"]
            if (roce["completed"] != HOSTS or roce["pfc_pauses"] == 0
                    or "deadlock" in proc.stdout):
                failures.append(f"dor {name}: rocev2 {roce['completed']} of {HOSTS} flows, "
                                f"{roce['pfc_pauses']} pauses: {proc.stdout[-300:]!r}")

        proc, runs = run(tmp, "default", ["--cm=" + cm, "--transport=both", *RING])
        # Expect: auto, the default, routes the PFC run in dimension order with the dateline and
        # says so: RoCEv2 completes every flow; UET, lossy, keeps every shortest path (no line
        # for it) and completes too.
        if proc.returncode != 0 or runs is None or set(runs) != {"uet", "rocev2"}:
            failures.append(f"default: rc {proc.returncode}: {proc.stderr[-300:]}")
        else:
            roce, uet = runs["rocev2"], runs["uet"]
            if (roce["completed"] != HOSTS or uet["completed"] != HOSTS
                    or "NOTE:" in proc.stdout or "PFC watchdog" in proc.stdout
                    or AUTO_LINE not in proc.stdout
                    or "uet (PFC)" in proc.stdout or not roce["params"].get("dimension_order")
                    or uet["params"].get("dimension_order")):
                failures.append(f"default: rocev2 {roce['completed']}, uet {uet['completed']} of "
                                f"{HOSTS} flows: {proc.stdout[-400:]!r}")

        proc, _ = run(tmp, "too_many", ["--scenario=permutation", "--topology=dragonfly",
                                        "--df_p=2", "--df_a=2", "--df_h=1", "--routing=valiant",
                                        "--nogroup_minimal", "--transport=rocev2",
                                        "--deadlock_free=tagger", "--max_ms=%d" % MAX_MS])
        # Expect: valiant's two legs of up to two global links need 5 classes; the switches have
        # 3 lossless priorities (the control class takes the fourth): refused with the count.
        if (proc.returncode == 0 or "deadlock_free" not in proc.stderr
                or "needs 5 lossless classes, the switches have 3" not in proc.stderr):
            failures.append(f"too many classes: rc {proc.returncode}: {proc.stderr[-300:]}")

        proc = ab_common.run(["--scenario=collective", "--coll=alltoall", "--algo=batched",
                              "--sizes=1M", "--hosts_per_switch=2", "--transport=both",
                              *SHORTEST],
                             echo=True, timeout=120)
        # Expect: UET's row complete, RoCEv2's without a time and its note naming the deadlock.
        notes = [l for l in proc.stdout.splitlines() if l.startswith("#    rocev2")]
        if (proc.returncode != 0 or len(notes) != 1
                or not notes[0].endswith("stopped at a PFC deadlock the watchdog found")
                or "#    uet" in proc.stdout):
            failures.append(f"collective: rc {proc.returncode}, notes {notes}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
