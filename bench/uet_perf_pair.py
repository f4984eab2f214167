#!/usr/bin/env python3
"""Runs one uet-perf server and client pair on this host and appends the client's JSON result
as one line to --out: over net_memif (two DPDK processes, --no-huge, lcores 0 and 1) or over
io_uring UDP sockets on loopback. For side-by-side timing of two configurations (bench/README.md,
"TSS over real I/O").

    uet_perf_pair.py UET_PERF --dev=memif|uring --out=FILE [-s BYTES] [-n ITERS]
                     [--udp_blast[=UDP_BLAST]] [-- FLAGS...]

FLAGS go to both sides (e.g. --tss --key_file=keys.txt). Exits 0 only if both sides exit 0 and
the server checked the bytes it received ("data check: ok"); the server's and the client's
lines are appended to FILE.server.log and FILE.client.log. The client starts once the server
has printed "ready" (and, for memif, its socket file exists): polled with a timeout, not slept
on.

--udp_blast (uring): then runs udp-blast (default: next to UET_PERF) on loopback, a plain UDP
receiver and sender with uet-perf's datagram size (--mtu plus the transport's headers: UET 56
bytes, RoCEv2 16) and as many datagrams as uet-perf's data packets, and appends one more JSON
line: both rates, their ratio, the timeouts and resends of both uet-perf sides, the kernel's
UDP RcvbufErrors (/proc/net/snmp) during each run and the 1-minute load average before them.
"""
import argparse
import json
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


def rcvbuf_errors():
    """The kernel's UDP RcvbufErrors (/proc/net/snmp): datagrams dropped, receive buffer full."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


def flag_value(flags, name, default):
    for f in flags:
        if f.startswith(f"--{name}="):
            return f.split("=", 1)[1]
    return default


def udp_blast(binary, ip, size, count):
    """One udp-blast receiver and sender on loopback; returns the receiver's JSON."""
    work = tempfile.mkdtemp(prefix="udpblast_")
    log, out = os.path.join(work, "recv.log"), os.path.join(work, "recv.json")
    common = [f"--port={free_udp_port(ip)}", f"--size={size}", f"--count={count}"]
    recv = None
    try:
        with open(log, "w") as lf:
            recv = subprocess.Popen([binary, "--recv", f"--ip={ip}", *common, f"--json={out}"],
                                    stdout=lf, stderr=subprocess.STDOUT)
        wait_for(lambda: "ready" in open(log).read(), 20, "udp-blast's ready line", recv)
        subprocess.run([binary, f"--send={ip}", *common], check=True, stdout=subprocess.DEVNULL,
                       timeout=120)
        if recv.wait(timeout=60) != 0:
            raise RuntimeError(f"udp-blast receiver failed: {open(log).read()}")
        return json.load(open(out))
    finally:
        if recv is not None and recv.poll() is None:
            recv.kill()
            recv.wait()
        shutil.rmtree(work, ignore_errors=True)


def free_udp_port(ip):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uet_perf")
    ap.add_argument("--dev", choices=["memif", "uring"], default="memif")
    ap.add_argument("--out", required=True, help="append the client's JSON line here")
    ap.add_argument("-s", type=int, default=1 << 20)
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--udp_blast", nargs="?", const="", default=None,
                    help="then run udp-blast (this path, default next to UET_PERF) and report "
                         "the ratio")
    argv = sys.argv[1:]
    flags = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)

    work = tempfile.mkdtemp(prefix="uetperf_pair_")
    tag = f"pp{os.getpid()}"
    port = free_port()
    srv_log, cli_json = os.path.join(work, "server.log"), os.path.join(work, "client.json")
    srv_json = os.path.join(work, "server.json")
    if a.udp_blast is not None and a.dev != "uring":
        ap.error("--udp_blast compares with plain UDP sockets: --dev=uring only")
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
        srv = ["--io=uring", f"--ip=127.78.{k}.1", *common, f"--json={srv_json}"]
        cli = ["--io=uring", f"--ip=127.78.{k}.2", *common, "-s", str(a.s), "-n", str(a.n),
               f"--json={cli_json}"]
    server = None
    try:
        load1 = os.getloadavg()[0]
        drops_before = rcvbuf_errors()
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
        drops = rcvbuf_errors() - drops_before
        log = open(srv_log).read()
        with open(a.out + ".server.log", "a") as f:
            f.write(log)
        if client.returncode != 0 or srv_rc != 0 or "data check: ok" not in log:
            print(f"uet_perf_pair: client {client.returncode}, server {srv_rc}", file=sys.stderr)
            return 1
        with open(a.out, "a") as f:
            f.write(open(cli_json).read().strip() + "\n")
        if a.udp_blast is not None:
            binary = a.udp_blast or os.path.join(os.path.dirname(a.uet_perf), "udp-blast")
            cli_r, srv_r = json.load(open(cli_json)), json.load(open(srv_json))
            transport = flag_value(flags, "transport", "uet")
            mtu = int(flag_value(flags, "mtu", "4096"))
            size = mtu + (56 if transport == "uet" else 16)
            count = -(-a.s // mtu) * a.n
            udp_before = rcvbuf_errors()
            udp = udp_blast(binary, f"127.78.{k}.3", size, count)
            udp_drops = rcvbuf_errors() - udp_before
            ratio = cli_r["bw_gbps"] / udp["bw_gbps"] if udp["bw_gbps"] > 0 else 0.0
            summary = {
                "tool": "uet_perf_pair", "transport": transport, "size": a.s, "iterations": a.n,
                "datagram_bytes": size, "load1": round(load1, 2),
                "uet_perf_gbps": cli_r["bw_gbps"], "udp_blast_gbps": udp["bw_gbps"],
                "ratio": round(ratio, 3),
                "timeouts": cli_r["timeouts"] + srv_r["timeouts"],
                "retransmitted": cli_r["retransmitted"] + srv_r["retransmitted"],
                "socket_drops": cli_r.get("socket_drops", 0) + srv_r.get("socket_drops", 0),
                "rcvbuf_errors": drops, "udp_blast_received": udp["received"],
                "udp_blast_socket_drops": udp["socket_drops"], "udp_blast_rcvbuf_errors": udp_drops,
            }
            with open(a.out, "a") as f:
                f.write(json.dumps(summary) + "\n")
            print(f"uet_perf_pair: {transport} {cli_r['bw_gbps']:.3f} Gb/s, udp-blast "
                  f"{udp['bw_gbps']:.3f} Gb/s ({size}-byte datagrams): ratio {ratio:.2f}; "
                  f"timeouts {summary['timeouts']}, resent {summary['retransmitted']}, "
                  f"RcvbufErrors {drops} (udp-blast {udp_drops}); load {load1:.2f}")
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
