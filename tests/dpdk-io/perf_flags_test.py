#!/usr/bin/env python3
"""uet-perf refuses bad TSS flags (and a bad --uring_zc or --clock, or an --mtu whose packets do not
fit --dev_mtu's frames) before it touches a device: exit code 2 and a message that names the flag
and the valid range (and, for a bad key file, the file and line), never a key.

    perf_flags_test.py UET_PERF
"""
import os
import subprocess
import sys
import tempfile

KEY = "5f" * 16 + "a0" * 16


def main():
    uet_perf = sys.argv[1]
    work = tempfile.mkdtemp(prefix="uetperf_flags_")
    good = os.path.join(work, "keys.txt")
    with open(good, "w") as f:
        f.write(f"sdi=77 an=0 mode=cluster key={KEY}\n")
    bad = os.path.join(work, "bad.txt")
    with open(bad, "w") as f:
        f.write(f"# one good line, then a duplicate\nsdi=77 an=0 mode=cluster key={KEY}\n"
                f"sdi=77 an=0 mode=cluster key={KEY[::-1]}\n")
    missing = os.path.join(work, "missing.txt")
    cases = [
        (["--tss", f"--key_file={good}", "--transport=rocev2"],
         "--tss is UET only (spec/uet.md §5), not with --transport=rocev2"),
        (["--tss"], "--tss needs --key_file=PATH"),
        ([f"--key_file={good}"], "--key_file, --tss_sdi and --tss_an need --tss"),
        (["--tss", f"--key_file={missing}"], f"--key_file: key file {missing}: cannot be read"),
        (["--tss", f"--key_file={bad}"],
         f"--key_file: key file {bad} line 3: sdi 77 an 0 already has a key (line 2)"),
        (["--tss", f"--key_file={good}", "--tss_sdi=78"],
         f"--tss_sdi=78 --tss_an=0: key file {good} has no key for sdi 78 an 0"),
        (["--tss", f"--key_file={good}", "--tss_an=1"], "--tss_an=1: key file"),
        (["--tss", f"--key_file={good}", "--tss_an=2"], "--tss_an=2 out of range: 0..1"),
        (["--tss", f"--key_file={good}", "--tss_sdi=16777216"],
         "--tss_sdi=16777216 out of range: -1..16777215"),
        (["--tss", f"--key_file={good}", "--tss_backend=aesni"],
         "--tss_backend=aesni: auto, ipsec-mb or openssl"),
        (["--tss_backend=openssl"], "--tss_backend needs --tss"),
        (["--io=uring", "--uring_zc=yes"], "--uring_zc=yes unknown: auto, on or off"),
        (["--clock=rdtsc"], "--clock=rdtsc unknown: auto, tsc or monotonic"),
        # A DPDK frame is --dev_mtu + 18 bytes: 1518 hold UET's 102 bytes of headers (Ethernet,
        # IPv4, UDP, RUD_CC 16 + SES 44, or ACK_CCX 40 + response with data 20) and 1416 more;
        # sealed, TSS's header (12) and tag (16) too; RoCEv2's longest stack is 86 bytes.
        (["--io=dpdk", "--mtu=9000", "--dev_mtu=1500"],
         "--mtu=9000 out of range for --dev_mtu=1500: 256..1416 (frames of 1518 bytes, 102 of "
         "them headers)"),
        (["--io=dpdk", "--mtu=1400", "--dev_mtu=1500", "--tss", f"--key_file={good}"],
         "--mtu=1400 out of range for --dev_mtu=1500: 256..1388"),
        (["--io=dpdk", "--mtu=4096", "--dev_mtu=1500", "--transport=rocev2"],
         "--mtu=4096 out of range for --dev_mtu=1500: 256..1432"),
    ]
    failed = 0
    for flags, want in cases:
        p = subprocess.run([uet_perf, "--server", *flags], capture_output=True, text=True,
                           timeout=30)
        out = p.stdout + p.stderr
        problems = []
        if p.returncode != 2:
            problems.append(f"exit code {p.returncode}, want 2")
        if want not in out:
            problems.append(f"no '{want}'")
        if KEY[:16] in out or KEY[::-1][:16] in out:
            problems.append("a key in the output")
        if problems:
            failed += 1
            print(f"FAIL: uet-perf --server {' '.join(flags)}: {'; '.join(problems)}\n{out}")
    if failed == 0:
        print(f"OK: {len(cases)} bad flag combinations refused, naming the flag")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
