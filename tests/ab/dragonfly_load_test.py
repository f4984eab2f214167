#!/usr/bin/env python3
"""uet-load on the 72-host balanced dragonfly (p=h=2, a=4, g=9): saturation throughput under
constant-rate UDP load against the analytic bounds.

Asserts, with group-minimal routes (uet-load's default: Kim et al.'s MIN, one global hop):
worst-case traffic with minimal routing saturates within 10 % of the bound computed from the
documented wiring (dragonfly_bounds.py: 1/(a*p) = 0.125), and so do Valiant under worst-case
(0.500) and uniform-random (0.571) traffic; Valiant under worst-case traffic saturates at more
than twice minimal; under uniform-random traffic minimal saturates above Valiant, and UGAL-L
above Valiant too; below saturation (offered 0.1) every mode delivers what it is offered. With
--nogroup_minimal (shortest paths in switch hops, some through two global links) worst-case
minimal saturates within 10 % of that family's bound (0.143), not of 0.125; with
--valiant_via_switch (booksim2's Valiant) worst-case Valiant within 10 % of its bound (0.545).
Past saturation, worst-case UGAL-L with PFC and one lossless class (--deadlock_free=off)
deadlocks and the PFC watchdog reports the cycle (the load counts as saturated); with the
default lossless classes (a class more after each global link) the same load has none.
Bad flags are refused naming the flag. --max_latency_us (booksim2's latency criterion) below Valiant's
zero-load latency (about 2.7 us here) leaves no load saturation-free.
Usage: dragonfly_load_test.py BUILD_BIN_DIR
"""
import json
import os
import sys
import tempfile

import ab_common
import dragonfly_bounds

SHAPE = ["--df_p=2", "--df_a=4", "--df_h=2", "--warmup_us=50", "--measure_us=50"]
DEADLOCK_LOAD = "0.6"
LOADS = "0.02,0.04,0.06,0.08,0.1,0.12,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0"

REFUSED = [
    (["--traffic=tornado"], "--traffic=tornado unknown: ur or wc"),
    (["--routing=par"], "--routing=par unknown: minimal, valiant or ugal"),
    (["--loads=0.5,0.2"], "--loads=0.5,0.2 invalid: ascending fractions, each 0.001..1"),
    (["--buffer_kb=2"], "--buffer_kb=2 out of range: 4..65536"),
    (["--max_latency_us=-1"], "--max_latency_us=-1 out of range: 0..100000"),
    (["--deadlock_free=dateline"], "--deadlock_free=dateline unknown: off, tagger or auto"),
    (["--pfc_watchdog_us=-1"], "--pfc_watchdog_us=-1 out of range: 0..100000"),
    (["--df_g=4"], "--df_p/--df_a/--df_h/--df_g: dragonfly: groups g 4"),
]


def sweep(tmp, traffic, routing, failures, extra=()):
    out = os.path.join(tmp, f"{traffic}_{routing}{len(extra)}.json")
    proc = ab_common.run([*SHAPE, f"--traffic={traffic}", f"--routing={routing}",
                          "--loads=" + LOADS, "--refine=5", "--json=" + out, *extra],
                         name="uet-load", timeout=120, echo=True)
    if proc.returncode != 0:
        failures.append(f"{traffic} {routing}: rc {proc.returncode}")
        return None
    result = json.load(open(out))
    low = [pt for pt in result["points"] if pt["offered"] == 0.1]
    if not low or abs(low[0]["accepted"] - 0.1) > 0.002:
        failures.append(f"{traffic} {routing}: at offered 0.1 accepted {low}")
    return result["saturation"]


def latency_sweep(tmp, failures):
    """Uniform Valiant, lossless, saturated once the mean latency passes 1 us: every load."""
    out = os.path.join(tmp, "latency.json")
    proc = ab_common.run([*SHAPE, "--traffic=ur", "--routing=valiant", "--pfc",
                          "--max_latency_us=1", "--loads=0.1,0.5", "--refine=2", "--json=" + out],
                         name="uet-load", timeout=120, echo=True)
    if proc.returncode != 0:
        failures.append(f"--max_latency_us=1: rc {proc.returncode}")
        return None
    return json.load(open(out))["saturation"]


def deadlocks(tmp, classes, failures):
    """Worst-case UGAL-L, lossless, at offered DEADLOCK_LOAD: the watchdog's cycles."""
    out = os.path.join(tmp, f"deadlock_{classes}.json")
    proc = ab_common.run([*SHAPE, "--traffic=wc", "--routing=ugal", "--pfc",
                          f"--deadlock_free={classes}", f"--loads={DEADLOCK_LOAD}", "--refine=0",
                          "--json=" + out], name="uet-load", timeout=120, echo=True)
    if proc.returncode != 0:
        failures.append(f"--deadlock_free={classes}: rc {proc.returncode}")
        return None
    result = json.load(open(out))
    if classes == "off" and "PFC deadlock at" not in proc.stdout:
        failures.append("--deadlock_free=off: no deadlock line printed")
    return result["points"][0]["deadlocks"], result["saturation"]


def main():
    failures = []
    sat = {}
    with tempfile.TemporaryDirectory() as tmp:
        for traffic in ("wc", "ur"):
            for routing in ("minimal", "valiant", "ugal"):
                sat[(traffic, routing)] = sweep(tmp, traffic, routing, failures)
        shortest = sweep(tmp, "wc", "minimal", failures, ["--nogroup_minimal"])
        via_switch = sweep(tmp, "wc", "valiant", failures, ["--valiant_via_switch"])
        latency_bound = latency_sweep(tmp, failures)
        one_class = deadlocks(tmp, "off", failures)
        tagged = deadlocks(tmp, "auto", failures)
    if failures:
        return ab_common.verdict(failures)
    print("saturation:", {f"{t} {r}": s for (t, r), s in sat.items()})
    # Expect: the measured saturation within 10 % of the analytic bound of the same routes.
    checks = [(traffic, routing, True, sat[(traffic, routing)])
              for traffic, routing in (("wc", "minimal"), ("wc", "valiant"), ("ur", "valiant"))]
    checks.append(("wc", "minimal", False, shortest))
    checks.append(("wc", "valiant", "via", via_switch))
    for traffic, routing, family, got in checks:
        want = dragonfly_bounds.bound(2, 4, 2, traffic, routing, bool(family), family == "via")
        name = f"{traffic} {routing}" + {True: "", False: " (shortest paths)",
                                         "via": " (via a switch)"}[family]
        print(f"{name}: measured {got:.4f}, bound {want:.4f}")
        if abs(got - want) > 0.1 * want:
            failures.append(f"{name}: saturation {got} not within 10 % of {want}")
    # Expect: one class deadlocks past saturation (found, and the load saturated); the
    # default classes do not.
    print("deadlocks, saturation: one class", one_class, "tagger", tagged)
    if one_class[0] == 0 or one_class[1] != 0:
        failures.append(f"wc ugal --deadlock_free=off at {DEADLOCK_LOAD}: {one_class}")
    if tagged[0] != 0:
        failures.append(f"wc ugal --deadlock_free=auto at {DEADLOCK_LOAD}: {tagged}")
    if latency_bound != 0:
        failures.append(f"--max_latency_us=1: saturation {latency_bound}, want 0")
    if not sat[("wc", "valiant")] > 2 * sat[("wc", "minimal")]:
        failures.append(f"wc: valiant {sat[('wc', 'valiant')]} not > 2 x minimal")
    if not sat[("ur", "minimal")] > sat[("ur", "valiant")] < sat[("ur", "ugal")]:
        failures.append(f"ur: minimal and ugal not above valiant: {sat}")
    for args, want in REFUSED:
        proc = ab_common.run(args, name="uet-load")
        if proc.returncode != 2 or want not in proc.stderr:
            failures.append(f"{args}: rc {proc.returncode}, stderr {proc.stderr[-300:]!r}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
