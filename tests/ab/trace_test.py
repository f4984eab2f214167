#!/usr/bin/env python3
"""uet-ab --scenario=trace: a training step from a Chakra trace, both transports.

Asserts: the shipped traces (sim/data/traces) are what uet-trace-gen writes today, byte for
byte; each plays to completion on both transports, its step at least as long as its compute
alone, with the exposed communication and its share in the JSON consistent with the step time;
a step in the shape Chakra's PyTorch converter writes (uet-trace-gen --kind=converted) plays on
both, and so does a job built from one of its rank files (--from_et); --plot draws the step,
its exposed communication and each collective row's busy time from the JSON's numbers; a rank's GPU kernels run one at a time (two independent 1 ms kernels take 2 ms before
the all-reduce after them, beside a 1.5 ms host op); a trace with more ranks than hosts, a
missing trace, an unmodelled node, communicators without their groups file, a groups file
that is not one and a step estimated above --max_memory_gb are refused (exit 2) naming the flag
or the file and node.
Usage: trace_test.py BUILD_BIN_DIR
"""
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile

import ab_common

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "..", "sim", "data", "traces")
SHIPPED = {"dp16": ["--kind=dp", "--ranks=16", "--layers=8", "--bucket_kb=16384",
                    "--forward_us=2000", "--backward_us=500"],
           "moe16": ["--kind=moe", "--ranks=16", "--bucket_kb=8192", "--forward_us=300",
                     "--backward_us=600"],
           "hybrid16": ["--kind=hybrid", "--dp=4", "--tp=4", "--layers=4", "--activation_kb=2048",
                        "--bucket_kb=16384", "--forward_us=200"]}
GROUPS = {"hybrid16"}  # traces whose pg_name attributes need PREFIX.comm_groups.json
FABRIC = ["--leaves=4", "--hosts_per_leaf=4", "--spines=4"]


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(number, wire, payload):
    """One protobuf field: wire 0 (payload an int) or 2 (payload bytes)."""
    key = varint(number << 3 | wire)
    return key + (varint(payload) if wire == 0 else varint(len(payload)) + payload)


def node(nid, ntype, us, attrs):
    """A Chakra Node (sim/trace/chakra.proto): attrs are (name, field number, int value)."""
    body = field(1, 0, nid) + field(3, 0, ntype) + field(7, 0, us)
    for name, number, value in attrs:
        body += field(10, 2, field(1, 2, name.encode()) + field(number, 0, value))
    return body


def write_streams_trace(prefix):
    """Per rank: two GPU kernels of 1 ms with no dependency, a host op of 1.5 ms, then a 4 KiB
    all-reduce after the three (ctrl_deps, field 4)."""
    gpu, cpu = [("is_cpu_op", 27, 0)], [("is_cpu_op", 27, 1)]
    for r in range(16):
        messages = [field(1, 2, b"1.0.1")]
        messages += [node(1, 4, 1000, gpu), node(2, 4, 1000, gpu), node(3, 4, 1500, cpu)]
        ar = node(4, 7, 0, gpu + [("comm_type", 9, 0), ("comm_size", 9, 4096)])
        messages.append(ar + b"".join(field(4, 0, d) for d in (1, 2, 3)))
        with open(f"{prefix}.{r}.et", "wb") as f:
            for m in messages:
                f.write(varint(len(m)) + m)


def play(bindir, tmp, name, prefix, extra, failures):
    """uet-ab --scenario=trace on the trace at `prefix`: its JSON runs, none if it failed."""
    js = os.path.join(tmp, name + ".json")
    proc = subprocess.run([os.path.join(bindir, "uet-ab"), "--scenario=trace", "--trace=" + prefix,
                           *extra, *FABRIC, "--json=" + js],
                          capture_output=True, text=True, timeout=300)
    print(proc.stdout)
    if proc.returncode != 0:
        failures.append(f"{name}: exit {proc.returncode}: {proc.stderr.strip()}")
        return []
    return json.load(open(js))


def main():
    bindir = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in SHIPPED.items():
            out = os.path.join(tmp, name)
            subprocess.run([os.path.join(bindir, "uet-trace-gen"), *args, "--out=" + out],
                           check=True, capture_output=True)
            files = [f"{name}.{r}.et" for r in range(16)]
            groups = []
            if name in GROUPS:
                files.append(f"{name}.comm_groups.json")
                groups = ["--comm_groups=" + os.path.join(TRACES, f"{name}.comm_groups.json")]
            for f in files:
                if not filecmp.cmp(os.path.join(tmp, f), os.path.join(TRACES, f), shallow=False):
                    failures.append(f"{f} differs from what uet-trace-gen writes")
            for r in play(bindir, tmp, name, os.path.join(TRACES, name), groups, failures):
                key = f"{name} {r['transport']}"
                if not r["complete"] or r["ranks"] != 16:
                    failures.append(f"{key}: complete {r['complete']}, ranks {r['ranks']}")
                if r["step_us"] < r["compute_only_us"]:
                    failures.append(f"{key}: step {r['step_us']} us < compute alone {r['compute_only_us']}")
                if abs(r["exposed_comm_us"] - (r["step_us"] - r["compute_only_us"])) > 1e-3:
                    failures.append(f"{key}: exposed {r['exposed_comm_us']} != step - compute")
                if not 0 < r["comm_share"] < 1:
                    failures.append(f"{key}: communication share {r['comm_share']}")
                rows = r["collectives_by_kind"]
                if sum(c["count"] for c in rows) != r["collectives"]:
                    failures.append(f"{key}: collectives by kind {rows}, {r['collectives']} in all")
                for c in rows:
                    if not 0 < c["busy_us"] <= min(c["total_us"], r["step_us"]) + 1e-3:
                        failures.append(f"{key}: {c}: busy beyond its total or the step")
        # --plot: the step's chart, its data file the JSON's numbers.
        plots = os.path.join(tmp, "plots")
        runs = play(bindir, tmp, "plotted", os.path.join(TRACES, "moe16"), ["--plot=" + plots],
                    failures)
        if runs:
            rows = {}
            for line in open(os.path.join(plots, "trace_step.dat")):
                if not line.startswith("#"):
                    label, rest = line.rsplit('"', 1)
                    rows[label.strip('"')] = [float(v) for v in rest.split()]
            want = [r["step_us"] for r in runs]
            if any(abs(a - b) > 1e-2 for a, b in zip(rows.get("step", []), want)) or \
                    not os.path.getsize(os.path.join(plots, "trace_step.svg")):
                failures.append(f"--plot: trace_step rows {rows}, JSON steps {want}")
            if not any(k.startswith("alltoall ") and k.endswith(" busy") for k in rows):
                failures.append(f"--plot: no collective row in {list(rows)}")
        conv = os.path.join(tmp, "conv")
        subprocess.run([os.path.join(bindir, "uet-trace-gen"), "--kind=converted", "--ranks=16",
                        "--layers=20", "--bucket_kb=2048", "--backward_us=100", "--out=" + conv],
                       check=True, capture_output=True)
        streams = os.path.join(tmp, "streams")
        write_streams_trace(streams)
        # One captured rank's file made a job of 16 (uet-trace-gen --from_et).
        job = os.path.join(tmp, "job")
        subprocess.run([os.path.join(bindir, "uet-trace-gen"), "--from_et=" + conv + ".5.et",
                        "--ranks=16", "--out=" + job], check=True, capture_output=True)
        compute_alone = {}
        for name, prefix, floor in (("converted", conv, None), ("streams", streams, 2000.0),
                                    ("from_et", job, None)):
            for r in play(bindir, tmp, name, prefix, [], failures):
                key = f"{name} {r['transport']}"
                if not r["complete"] or r["step_us"] < r["compute_only_us"]:
                    failures.append(f"{key}: complete {r['complete']}, step {r['step_us']} us, "
                                    f"compute alone {r['compute_only_us']} us")
                if floor is not None and r["compute_only_us"] != floor:
                    failures.append(f"{key}: compute alone {r['compute_only_us']} us, want {floor}")
                compute_alone[name] = r["compute_only_us"]
        if compute_alone.get("from_et") != compute_alone.get("converted"):
            failures.append(f"from_et: compute alone {compute_alone.get('from_et')} us, the step it "
                            f"came from {compute_alone.get('converted')} us")
        for args, want in ((["--trace=" + os.path.join(TRACES, "dp16"), "--leaves=2", "--hosts_per_leaf=4"],
                            "16 ranks, the fabric has 8 hosts"),
                           (["--trace=" + os.path.join(tmp, "nothing")], "nothing.0.et"),
                           (["--trace=" + os.path.join(TRACES, "hybrid16")],
                            'pg_name "tp0" is not a communicator group (no groups were given)'),
                           (["--trace=" + os.path.join(TRACES, "hybrid16"),
                             "--comm_groups=" + os.path.join(TRACES, "dp16.0.et")],
                            "--comm_groups: "),
                           (["--trace=" + os.path.join(TRACES, "dp16"), "--max_memory_gb=0.001"],
                            " trace nodes), the machine has 0.001 GiB allowed (--max_memory_gb)"),
                           ([], "--trace=PREFIX")):
            proc = subprocess.run([os.path.join(bindir, "uet-ab"), "--scenario=trace", *FABRIC, *args],
                                  capture_output=True, text=True, timeout=60)
            if proc.returncode != 2 or want not in proc.stderr:
                failures.append(f"{args}: exit {proc.returncode}, stderr {proc.stderr.strip()!r}")
        # A node type the simulator does not model (CHECKPOINT_NODE, type 10) in rank 1.
        odd = os.path.join(tmp, "odd")
        for r in range(2):
            with open(f"{odd}.{r}.et", "wb") as f:
                f.write(bytes([3, 0x0a, 1, ord("x")]))
                f.write(bytes([4, 0x08, 5, 0x18, 10 if r == 1 else 4]))
        proc = subprocess.run([os.path.join(bindir, "uet-ab"), "--scenario=trace", *FABRIC,
                               "--trace=" + odd], capture_output=True, text=True, timeout=60)
        if proc.returncode != 2 or "odd.1.et: node 5: node type 10" not in proc.stderr:
            failures.append(f"odd node: exit {proc.returncode}, stderr {proc.stderr.strip()!r}")
        # The reader is a module beside the tools (lib/libuet_chakra.so): a copy of uet-ab
        # without it refuses the trace, naming the module, and still runs other scenarios.
        alone = os.path.join(tmp, "alone", "bin")
        os.makedirs(alone)
        shutil.copy(os.path.join(bindir, "uet-ab"), alone)
        env = dict(os.environ, LD_LIBRARY_PATH="")
        proc = subprocess.run([os.path.join(alone, "uet-ab"), "--scenario=trace", *FABRIC,
                               "--trace=" + os.path.join(TRACES, "dp16")],
                              capture_output=True, text=True, timeout=60, env=env)
        if proc.returncode != 2 or "needs the module libuet_chakra.so" not in proc.stderr:
            failures.append(f"no module: exit {proc.returncode}, stderr {proc.stderr.strip()!r}")
        proc = subprocess.run([os.path.join(alone, "uet-ab"), "--scenario=permutation",
                               "--topology=fattree", "--k=2", "--bytes=4096"],
                              capture_output=True, text=True, timeout=60, env=env)
        if proc.returncode != 0:
            failures.append(f"no module, no trace: exit {proc.returncode}, "
                            f"stderr {proc.stderr.strip()!r}")
    return ab_common.verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
