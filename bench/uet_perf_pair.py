#!/usr/bin/env python3
"""Runs one uet-perf server and client pair on this host and appends the client's JSON result
as one line to --out: over net_memif (two DPDK processes, --no-huge, lcores 0 and 1) or over
io_uring UDP sockets on loopback. For side-by-side timing of two configurations (bench/README.md,
"TSS over real I/O").

    uet_perf_pair.py UET_PERF --dev=memif|uring --out=FILE [-s BYTES] [-n ITERS] [-- FLAGS...]

FLAGS go to both sides (e.g. --tss --key_file=keys.txt). Exits 0 only if both sides exit 0 and
the server checked the bytes it received ("data check: ok"); the server's and the client's
lines are appended to FILE.server.log and FILE.client.log. The client starts once the server has printed "ready" (and, for memif, its
socket file exists): polled with a timeout, not slept on.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout, what, proc):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: the server exited early (rc {proc.returncode})")
        time.sleep(0.01)  # polling interval, not synchronisation
    raise RuntimeError(f"timed out waiting for {what}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uet_perf")
    ap.add_argument("--dev", choices=["memif", "uring"], default="memif")
    ap.add_argument("--out", required=True, help="append the client's JSON line here")
    ap.add_argument("-s", type=int, default=1 << 20)
    ap.add_argument("-n", type=int, default=300)
    argv = sys.argv[1:]
    flags = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)

    work = tempfile.mkdtemp(prefix="uetperf_pair_")
    tag = f"pp{os.getpid()}"
    port = free_port()
    srv_log, cli_json = os.path.join(work, "server.log"), os.path.join(work, "client.json")
    common = ["--timeout_s=30", *flags]
    if a.dev == "memif":
        sock = os.path.join(work, "memif.sock")
        vdev = f"net_memif0,socket={sock},socket-abstract=no,bsize=9216"
        eal = ["--", "--no-huge", "-m", "512", "--no-pci", "--no-telemetry"]
        srv = ["--ip=10.0.0.1", "--mbufs=4095", *common, *eal, "-l", "0",
               f"--file-prefix={tag}s", f"--vdev={vdev},role=server"]
        cli = ["--ip=10.0.0.2", "--mbufs=4095", *common, "-s", str(a.s), "-n", str(a.n),
               f"--json={cli_json}", *eal, "-l", "1", f"--file-prefix={tag}c",
               f"--vdev={vdev},role=client"]
    else:
        sock = None
        k = os.getpid() % 250 + 1
        srv = ["--io=uring", f"--ip=127.78.{k}.1", *common]
        cli = ["--io=uring", f"--ip=127.78.{k}.2", *common, "-s", str(a.s), "-n", str(a.n),
               f"--json={cli_json}"]
    server = None
    try:
        with open(srv_log, "w") as so:
            server = subprocess.Popen([a.uet_perf, "--server", f"--oob_port={port}", *srv],
                                      stdout=so, stderr=subprocess.STDOUT)
        wait_for(lambda: "ready" in open(srv_log).read(), 20, "the server's ready line", server)
        if sock is not None:
            wait_for(lambda: os.path.exists(sock), 10, "the memif socket file", server)
        client = subprocess.run([a.uet_perf, "--client=127.0.0.1", f"--oob_port={port}", *cli],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=120)
        with open(a.out + ".client.log", "a") as f:
            f.write(client.stdout)
        srv_rc = server.wait(timeout=60)
        log = open(srv_log).read()
        with open(a.out + ".server.log", "a") as f:
            f.write(log)
        if client.returncode != 0 or srv_rc != 0 or "data check: ok" not in log:
            print(f"uet_perf_pair: client {client.returncode}, server {srv_rc}", file=sys.stderr)
            return 1
        with open(a.out, "a") as f:
            f.write(open(cli_json).read().strip() + "\n")
        return 0
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"uet_perf_pair: {e}", file=sys.stderr)
        return 1
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait()
        for prefix in (f"{tag}s", f"{tag}c"):
            shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
