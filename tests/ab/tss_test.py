#!/usr/bin/env python3
"""uet-ab --tss: UET runs with every frame sealed (spec/uet.md §5), RoCEv2 as without it.

Asserts, on a small leaf-spine permutation and on the loss scenario (trimming and resends
under TSS), both transports:
- with --tss every UET flow completes, and the JSON params record the cost model; RoCEv2's
  results are byte-identical to the run without --tss (it has no security sublayer);
- sealing costs the wire 28 bytes a frame: UET's FCTs grow, but by under 5 % at zero host cost;
- a host cost (--tss_ns_per_frame, --tss_ns_per_kib) slows UET down: a cost of one full frame
  time per KiB at least doubles the p50 FCT;
- the pcap of a sealed run holds sealed frames: type ENC in the first UET byte, the PDS hidden;
- the AES-GCM library (--tss_backend) changes nothing but the recorded parameter;
- cost flags out of range, a bad --tss_backend, and a key file without --tss or with a bad line, are refused naming
  the flag (and the file's line) and never quoting a key;
- the crypto libraries are mapped only under --tss, and a uet-ab without its lib/ refuses --tss
  naming the module (exit 2) but runs without it.
Usage: tss_test.py BUILD_BIN_DIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def run(bindir, tmp, name, args, scenario="permutation"):
    out = os.path.join(tmp, name + ".json")
    proc = subprocess.run([os.path.join(bindir, "uet-ab"), "--scenario=" + scenario,
                           "--leaves=2", "--spines=2", "--hosts_per_leaf=8", "--bytes=262144",
                           "--json=" + out] + args, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: rc {proc.returncode}: {proc.stderr}")
    return {(r["scenario"], r["transport"]): r for r in json.load(open(out))}


def strip(r):
    return {k: v for k, v in r.items() if k != "wall_s"}


def pcap_frames(path):
    with open(path, "rb") as f:
        data = f.read()
    off, frames = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def check_module(bindir, tmp, failures):
    """The crypto libraries are a module (lib/libuet_tss_crypto.so) opened only under --tss: a
    run without it never maps them, and a copy of uet-ab without its lib/ refuses --tss naming
    the module but runs without TSS."""
    small = ["--scenario=permutation", "--topology=fattree", "--k=2", "--bytes=4096"]
    uet_ab = os.path.join(bindir, "uet-ab")
    for args, mapped in (([], False), (["--tss"], True)):
        # The loader names every object it maps (LD_DEBUG=files), dlopen'd ones included.
        proc = subprocess.run([uet_ab, *small, *args], capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, LD_DEBUG="files"))
        seen = {lib: f"file={lib}" in proc.stderr or f"/{lib}" in proc.stderr
                for lib in ("libuet_tss_crypto.so", "libcrypto.so")}
        if proc.returncode != 0 or any(v != mapped for v in seen.values()):
            failures.append(f"{args}: rc {proc.returncode}, mapped {seen}, want {mapped}")
    alone = os.path.join(tmp, "alone", "bin")
    os.makedirs(alone)
    shutil.copy(uet_ab, alone)
    env = dict(os.environ, LD_LIBRARY_PATH="")
    proc = subprocess.run([os.path.join(alone, "uet-ab"), *small, "--tss"], capture_output=True,
                          text=True, timeout=60, env=env)
    if proc.returncode != 2 or "--tss: TSS (AES-256-GCM and the KDF's CMAC) needs the module " \
            "libuet_tss_crypto.so, which did not load" not in proc.stderr:
        failures.append(f"no module, --tss: rc {proc.returncode}, stderr {proc.stderr.strip()!r}")
    proc = subprocess.run([os.path.join(alone, "uet-ab"), *small], capture_output=True,
                          text=True, timeout=60, env=env)
    if proc.returncode != 0:
        failures.append(f"no module, no TSS: rc {proc.returncode}: {proc.stderr.strip()!r}")


def main():
    bindir = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in ("permutation", "loss"):
            plain = run(bindir, tmp, scenario + "_plain", [], scenario)
            sealed = run(bindir, tmp, scenario + "_tss", ["--tss"], scenario)
            for key in plain:
                _, t = key
                p, s = plain[key], sealed[key]
                if t == "rocev2":
                    if strip(p) != strip(s):
                        failures.append(f"{key}: RoCEv2 changed under --tss")
                    continue
                if s["completed"] != s["flows"]:
                    failures.append(f"{key}: {s['completed']} of {s['flows']} flows completed")
                if s["params"].get("tss") != {"backend": "ipsec-mb", "ns_per_frame": 0,
                                              "ns_per_kib": 0}:
                    failures.append(f"{key}: params.tss = {s['params'].get('tss')}")
                if "tss" in p["params"]:
                    failures.append(f"{key}: params.tss without --tss")
                if scenario == "permutation":
                    grow = s["fct_us"]["p50"] / p["fct_us"]["p50"]
                    if not 1.0 <= grow < 1.05:
                        failures.append(f"{key}: p50 FCT x{grow:.3f} with free sealing")
        # A host cost: one 100 Gb/s frame time (~330 ns) per KiB of frame.
        costly = run(bindir, tmp, "costly", ["--tss", "--tss_ns_per_frame=100",
                                             "--tss_ns_per_kib=330"])
        free = run(bindir, tmp, "free", ["--tss"])
        k = ("permutation", "uet")
        if costly[k]["fct_us"]["p50"] < 2 * free[k]["fct_us"]["p50"]:
            failures.append(f"host cost: p50 {costly[k]['fct_us']['p50']} vs "
                            f"{free[k]['fct_us']['p50']} free")
        if costly[k]["params"]["tss"] != {"backend": "ipsec-mb", "ns_per_frame": 100,
                                          "ns_per_kib": 330}:
            failures.append(f"host cost params: {costly[k]['params']['tss']}")
        # The AES-GCM library changes the wall time only: OpenSSL's run is the same bytes.
        openssl = run(bindir, tmp, "openssl", ["--tss", "--tss_backend=openssl"])
        for key in free:
            a, b = strip(free[key]), strip(openssl[key])
            if key[1] == "uet":
                a["params"]["tss"].pop("backend")
                if b["params"]["tss"].pop("backend") != "openssl":
                    failures.append(f"{key}: --tss_backend=openssl not recorded")
            if a != b:
                failures.append(f"{key}: results differ between ipsec-mb and openssl")
        # The pcap shows sealed frames: UDP to 4793, then the TSS header (type 1).
        pdir = os.path.join(tmp, "pcap")
        os.mkdir(pdir)
        run(bindir, tmp, "pcap", ["--tss", "--pcap=" + pdir])
        tx = [f for f in os.listdir(pdir) if f.endswith("_uet_h0_tx.pcap")]
        if not tx:
            failures.append(f"no UET pcap in {os.listdir(pdir)}")
        else:
            frames = pcap_frames(os.path.join(pdir, tx[0]))
            uet = [f for f in frames if len(f) > 42 and f[36:38] == b"\x12\xb9"]
            if not uet or any(f[42] >> 3 != 1 for f in uet):
                failures.append(f"{len(uet)} UET frames, not all sealed")
        # A key file: needs --tss; a bad one is refused naming its line, the key never quoted.
        bad = os.path.join(tmp, "bad.keys")
        with open(bad, "w") as f:
            f.write("sdi=1 an=0 mode=cluster key=" + "ab" * 31 + "\n")
        for args, want in ((["--tss_key_file=" + bad], "--tss_key_file needs --tss"),
                           (["--tss", "--tss_key_file=" + bad], "bad.keys line 1")):
            proc = subprocess.run([os.path.join(bindir, "uet-ab")] + args, capture_output=True,
                                  text=True, timeout=30)
            if proc.returncode != 2 or want not in proc.stderr or "abab" in proc.stderr:
                failures.append(f"{args}: rc {proc.returncode}: {proc.stderr!r}")
        for args, want in ((["--tss", "--tss_backend=aesni"], "--tss_backend=aesni: auto, "),
                           (["--tss_backend=openssl"], "--tss_backend needs --tss")):
            proc = subprocess.run([os.path.join(bindir, "uet-ab")] + args, capture_output=True,
                                  text=True, timeout=30)
            if proc.returncode != 2 or want not in proc.stderr:
                failures.append(f"{args}: rc {proc.returncode}: {proc.stderr!r}")
        for flag, value in (("tss_ns_per_frame", "-1"), ("tss_ns_per_kib", "2e6")):
            proc = subprocess.run([os.path.join(bindir, "uet-ab"), "--tss", f"--{flag}={value}"],
                                  capture_output=True, text=True, timeout=30)
            if proc.returncode != 2 or f"--{flag}=" not in proc.stderr or \
                    "out of range: 0..1e+06" not in proc.stderr:
                failures.append(f"--{flag}={value}: rc {proc.returncode}: {proc.stderr!r}")
        check_module(bindir, tmp, failures)
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("uet-ab --tss: sealed UET runs complete, RoCEv2 unchanged, host cost bites, pcaps sealed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
