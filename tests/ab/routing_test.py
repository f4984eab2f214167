#!/usr/bin/env python3
"""uet-ab's routing modes (--routing, --dimension_order, --ugal_bias_bytes) end to end.

Asserts: a permutation on a small dragonfly (p=h=2, a=4, g=9: 72 hosts) and a 4x4 torus runs
under minimal, valiant and ugal routing (and dimension order on the torus and a hypercube),
both transports, and completes every flow; the JSON names a non-minimal mode and leaves
minimal runs' params as they were (no "routing" key), but for RoCEv2's on the torus, which
--deadlock_free=auto routes in dimension order under PFC. Valiant on the dragonfly sends UET's
sprayed packets through intermediate groups, so its shortest and median flow completion take
longer than minimal routing's, on the same flows. Bad values are refused naming the flag.
Usage: routing_test.py BUILD_BIN_DIR
"""
import json
import os
import sys
import tempfile

import ab_common

FABRICS = {
    "dragonfly": ["--topology=dragonfly", "--df_p=2", "--df_a=4", "--df_h=2"],
    "torus": ["--topology=torus", "--torus=4x4"],
}
HOSTS = {"dragonfly": 72, "torus": 16, "hypercube": 16}
MODES = {
    "minimal": [],
    "valiant": ["--routing=valiant"],
    "ugal": ["--routing=ugal", "--ugal_bias_bytes=2048"],
}

REFUSED = [
    (["--routing=adaptive"], "--routing=adaptive unknown: minimal, valiant or ugal"),
    (["--topology=dragonfly", "--dimension_order"],
     "--dimension_order applies to --topology=torus or hypercube only (not dragonfly)"),
    (["--dimension_order"],
     "--dimension_order applies to --topology=torus or hypercube only (not leafspine)"),
    (["--routing=ugal", "--ugal_bias_bytes=1073741825"],
     "--ugal_bias_bytes=1073741825 out of range: 0..1073741824"),
]


def permutation(tmp, name, flags, mode, mode_flags, failures):
    """The runs by transport, or None; checks every flow completes and the params."""
    out = os.path.join(tmp, f"{name}_{mode}.json")
    runs = ab_common.run_json(["--scenario=permutation", "--bytes=65536", *flags, *mode_flags],
                              out)
    if runs is None:
        failures.append(f"{name} {mode}: run failed")
        return None
    for r in runs:
        if r["flows"] != HOSTS[name] or r["completed"] != r["flows"]:
            failures.append(f"{name} {mode} {r['transport']}: {r['completed']} of {r['flows']}")
        # --deadlock_free=auto routes a PFC (RoCEv2) run on a torus or hypercube in dimension
        # order; UET, lossy, keeps every shortest path.
        lossless_order = (name in ("torus", "hypercube") and mode == "minimal"
                          and r["transport"] == "rocev2")
        want = ("minimal" if lossless_order else None) if mode == "minimal" else mode.split("_")[0]
        if r["params"].get("routing") != want:
            failures.append(f"{name} {mode}: params routing {r['params'].get('routing')}")
        if ("dimension_order" in mode or lossless_order) != r["params"].get("dimension_order",
                                                                           False):
            failures.append(f"{name} {mode}: params {r['params']}")
    return ab_common.by_transport(runs)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for name, flags in FABRICS.items():
            for mode, mode_flags in MODES.items():
                results[(name, mode)] = permutation(tmp, name, flags, mode, mode_flags, failures)
        for mode, mode_flags in (("minimal_dimension_order", []),
                                 ("valiant_dimension_order", ["--routing=valiant"])):
            permutation(tmp, "torus", FABRICS["torus"], mode, [*mode_flags, "--dimension_order"],
                        failures)
        permutation(tmp, "hypercube", ["--topology=hypercube", "--hypercube_dim=4"],
                    "ugal_dimension_order", ["--routing=ugal", "--dimension_order"], failures)
        # Expect: valiant's detours through other groups lengthen UET's flows on the dragonfly.
        minimal, valiant = results[("dragonfly", "minimal")], results[("dragonfly", "valiant")]
        if minimal and valiant:
            for stat in ("min", "p50"):
                m, v = minimal["uet"]["fct_us"][stat], valiant["uet"]["fct_us"][stat]
                print(f"dragonfly uet fct {stat}: minimal {m} us, valiant {v} us")
                if not v > 1.2 * m:
                    failures.append(f"dragonfly uet fct {stat}: valiant {v} not > 1.2 x {m}")
        for args, want in REFUSED:
            proc = ab_common.run(args)
            if proc.returncode == 0 or want not in proc.stderr:
                failures.append(f"{args}: rc {proc.returncode}, stderr {proc.stderr[-300:]!r}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
