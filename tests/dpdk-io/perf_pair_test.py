#!/usr/bin/env python3
"""uet-perf end to end: a server and a client process exchange data over a DPDK virtual
device or io_uring UDP sockets, and the server checks every byte.

    perf_pair_test.py UET_PERF --dev=memif|afpacket|tap|uring --transport=uet|rocev2 [--loss=P]
                      [--pcap] [--lcores-io=N] [--op=write|read|send] [--bidir]
                      [--tss | --tss-wrong-key | --tss-server] [--lossless] [--uring-zc=on|off]

memif: two processes on one host joined by net_memif (path socket, socket-abstract=no), the
server started first; the client starts once the server has printed its "ready" line and the
socket file exists (polled, with a timeout: no sleeps as synchronisation).
afpacket: two network namespaces the test creates (and always removes) joined by a veth pair;
each process runs net_af_packet on its end. The kernel addresses on the veth carry only the
TCP control connection; the data-plane addresses are DPDK's own (ARP answered by uet-perf).
Needs root (CAP_NET_ADMIN, CAP_NET_RAW): skipped (exit 77) otherwise.
tap: one network namespace the test creates (and removes); each process runs net_tap, and
tc redirects what one tap interface receives out of the other (join_taps). net_tap offers UDP
TX checksum offload and checks checksums on receive: UET's data must leave with its checksums
filled by the device and be found good by the peer's, RoCEv2's keep 0. Root only.
uring: --io=uring, two processes on loopback (data plane 127.77.K.1 / .2, K from the pid),
unprivileged (registered only when uet-perf is built with io_uring).
--lcores-io=N (memif): each process runs N engines on N EAL lcores (-l 0-(N-1); the lcores
oversubscribe the 2 vCPUs, fine for a functional test) over N queue pairs of one memif port,
client engine i writing to server engine i.

--bidir: the server writes into the client's memory at the same time (the client checks it).
--op=read|send: the client reads the server's region (checking each slot the first time it
lands) or sends messages into receive buffers the server posts (checking each as it arrives).

--tss: both sides seal every frame (spec/uet.md §5) with keys from one key file the test
writes (two domains, both ANs of the first); besides the checks below, each side's JSON shows
frames sealed and opened (the server opened at least one frame per data packet) and no TSS
drop. --tss-wrong-key: the client's file has the same domain with another key; the run must
fail within a bound (--timeout_s=5 on both sides), the client naming the server's bad_tag
refusals, and the server's JSON counting bad_tag drops and nothing opened.
--tss-server: server mode (spec/uet.md §5.3): the server's file holds the domain key
(mode=server, epoch 0), the client's only its own key and IV mask (mode=client) in its own
epoch 5, which the test derives with the KDF (label U2, over the client's address and epoch)
in Python's `cryptography`, independently of the C++ code; the server must follow the
client's epoch both ways. The checks of --tss apply.

--lossless (uring): 1000 writes of 64 KiB (uet-perf's own defaults for io_uring: timers above
the host's scheduling stalls, data in flight bounded by the peer's receive socket) and no loss
injected; besides the checks below, both sides' JSON must show 0 timeouts, 0 resends and 0
datagrams dropped by their receive socket. No rate is asserted.

--uring-zc=on|off (uring): both sides run with --uring_zc and without GSO/GRO; with on, the
client's summary must show its data sent zero-copy, one notification per zero-copy send (every
buffer came back) and no send error. Skipped (exit 77) where the kernel has no
IORING_OP_SENDMSG_ZC. Without it (uring's default GSO and GRO), the client's summary must show
GSO sends of more than one datagram each and the server's coalesced receives.

Asserts: both exit codes 0; the server prints "data check: ok" (once per engine, each for
its own ITERS * MSG_SIZE bytes); the client's JSON has verify=ok, iterations=N (per engine
and summed), failed=0; with --loss, frames were dropped and retransmitted; with
--pcap, tshark reads the client's capture (exit 0; for RoCEv2 it decodes InfiniBand BTHs and
prints no "Malformed").
"""
import argparse
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

from perf_common import free_port, run, wait_for
import perf_common

SKIP = 77
MSG_SIZE = 262144
ITERS = 32  # 8 MiB


def join_taps(ns, ta, tb, procs):
    """Joins the two processes' tap interfaces (each PMD creates its own as it starts): what
    one PMD sends, the kernel receives on its interface and tc redirects out of the other.
    A bridge would not do: the PMD gives its kernel interface its own MAC, which a bridge takes
    as its local address and keeps. Frames sent before the redirect (ARP) are lost and resent."""
    def exists(name):
        return subprocess.run(["ip", "-n", ns, "link", "show", name], capture_output=True).returncode == 0
    wait_for(lambda: exists(tb), 20, f"the client's tap interface {tb}", procs)
    for a, b in ((ta, tb), (tb, ta)):
        perf_common.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", a, "ingress"])
        perf_common.run(["ip", "netns", "exec", ns, "tc", "filter", "add", "dev", a, "parent",
                         "ffff:", "protocol", "all", "u32", "match", "u32", "0", "0", "action",
                         "mirred", "egress", "redirect", "dev", b])


def kernel_clocksource():
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            return f.read().strip()
    except OSError:
        return ""


def tss_key_files(work, args, cli_ip):
    """The server's and the client's key files (dissector/README.md "TSS keys"); each side
    sends in its file's first domain."""
    def write(name, lines):
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write("# uet-perf test keys\n" + "".join(line + "\n" for line in lines))
        return path

    def cluster(key):
        return [f"sdi=0x5e1 an=0 mode=cluster key={key}",
                f"sdi=0x5e1 an=1 mode=cluster key={os.urandom(32).hex()}",
                f"sdi=9 an=0 mode=direct key={os.urandom(32).hex()}"]

    key = os.urandom(32).hex()
    if args.tss_server:
        # spec/uet.md §5.3: SP 800-108 counter mode, AES-256-CMAC, label U2, context epoch (the
        # client's own, 5) || rekey (0) || the client's IPv4 address, L = 352: the key, then
        # the IV mask.
        from cryptography.hazmat.primitives import cmac
        from cryptography.hazmat.primitives.ciphers import algorithms
        a, b, c, d = (int(x) for x in cli_ip.split("."))
        context = struct.pack(">HII", 5, 0, a << 24 | b << 16 | c << 8 | d)
        out = b""
        for i in (1, 2, 3):
            m = cmac.CMAC(algorithms.AES(bytes.fromhex(key)))
            m.update(bytes([i]) + b"U2\x00" + context + struct.pack(">H", 352))
            out += m.finalize()
        return (write("server_keys.txt", [f"sdi=0x5e1 an=0 mode=server key={key}"]),
                write("client_keys.txt", [f"sdi=0x5e1 an=0 mode=client key={out[:32].hex()} "
                                          f"iv_mask={out[32:44].hex()} epoch=5"]))
    srv = write("keys.txt", cluster(key))
    if args.tss_wrong_key:
        return srv, write("other_keys.txt", cluster(os.urandom(32).hex()))
    return srv, srv


def main():
    global MSG_SIZE, ITERS
    ap = argparse.ArgumentParser()
    ap.add_argument("uet_perf")
    ap.add_argument("--dev", default="memif", choices=["memif", "afpacket", "tap", "uring"])
    ap.add_argument("--transport", default="uet", choices=["uet", "rocev2"])
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--pcap", action="store_true")
    ap.add_argument("--lcores-io", type=int, default=1)
    ap.add_argument("--op", default="write", choices=["write", "read", "send"])
    ap.add_argument("--bidir", action="store_true")
    ap.add_argument("--tss", action="store_true")
    ap.add_argument("--tss-wrong-key", action="store_true")
    ap.add_argument("--tss-server", action="store_true")
    ap.add_argument("--lossless", action="store_true")
    ap.add_argument("--uring-zc", choices=["on", "off"])
    args = ap.parse_args()
    if args.lossless:
        if args.dev != "uring" or args.loss > 0:
            ap.error("--lossless is a loss-free --dev=uring run")
        MSG_SIZE, ITERS = 65536, 1000  # 64 MB, as bench/README.md "io_uring on loopback"
    tss = args.tss or args.tss_wrong_key or args.tss_server
    if tss and args.transport != "uet":
        ap.error("--tss is UET only")
    lanes = args.lcores_io
    if lanes > 1 and args.dev != "memif":
        ap.error("--lcores-io > 1 is tested over memif only")

    tag = f"{args.dev[:3]}{args.transport[:1]}{os.getpid()}"
    work = tempfile.mkdtemp(prefix=f"uetperf_{tag}_")
    eal = ["--no-huge", "-m", "512", "--no-pci", "--no-telemetry"]
    timeout_s = 5 if args.tss_wrong_key else 30
    common = [f"--transport={args.transport}", "--mbufs=4095", f"--timeout_s={timeout_s}"]
    if lanes > 1:
        common = [f"--transport={args.transport}", "--mbufs=8191", "--timeout_s=30",
                  f"--lcores-io={lanes}"]
    if args.loss > 0:
        common += [f"--loss={args.loss}", "--seed=7"]
    netns = []
    if args.dev == "memif":
        sock = os.path.join(work, "memif.sock")
        # bsize: one memif buffer per frame (22.11's chained-buffer path splits frames under
        # pressure).
        vdev = f"net_memif0,socket={sock},socket-abstract=no,bsize=9216"
        srv_pre, cli_pre = [], []
        if lanes == 1:
            srv_l, cli_l = ["-l", "0"], ["-l", "1"]
        else:
            srv_l = cli_l = ["-l", f"0-{lanes - 1}"]
        srv_dev = srv_l + [f"--file-prefix={tag}s", f"--vdev={vdev},role=server"]
        cli_dev = cli_l + [f"--file-prefix={tag}c", f"--vdev={vdev},role=client"]
        control_ip = "127.0.0.1"
        size_flags = []
        srv_ip, cli_ip = "10.0.0.1", f"10.0.0.{1 + lanes}"
    elif args.dev == "uring":
        sock = None
        srv_pre, cli_pre = [], []
        eal = []
        srv_dev, cli_dev = [], []
        control_ip = "127.0.0.1"
        size_flags = ["--io=uring"]
        common += ["--io=uring"]
        if args.uring_zc:
            # Every send one datagram, so that each can go zero-copy (GSO groups go copied).
            common += [f"--uring_zc={args.uring_zc}", "--uring_offload=false"]
        k = os.getpid() % 250 + 1
        srv_ip, cli_ip = f"127.77.{k}.1", f"127.77.{k}.2"
    elif args.dev == "tap":
        if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None:
            print("SKIP: net_tap in a network namespace needs root, iproute2 and tc")
            return SKIP
        sock = None
        tap_ns = f"uettap{os.getpid()}"
        perf_common.run(["ip", "netns", "add", tap_ns])
        netns.append(tap_ns)
        perf_common.run(["ip", "-n", tap_ns, "link", "set", "lo", "up"])
        ta, tb = f"ta{os.getpid()}", f"tb{os.getpid()}"
        srv_pre = cli_pre = ["ip", "netns", "exec", tap_ns]
        srv_dev = ["-l", "0", f"--file-prefix={tag}s", f"--vdev=net_tap0,iface={ta}"]
        cli_dev = ["-l", "1", f"--file-prefix={tag}c", f"--vdev=net_tap0,iface={tb}"]
        control_ip = "127.0.0.1"
        size_flags = ["--mtu=1024"]  # the tap interfaces' 1500-byte MTU
        srv_ip, cli_ip = "10.0.0.1", "10.0.0.2"
    else:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            print("SKIP: af_packet in network namespaces needs root and iproute2")
            return SKIP
        sock = None
        na, nb, va, vb = perf_common.make("p", os.getpid(), "192.168.77", netns)
        srv_pre = ["ip", "netns", "exec", na]
        cli_pre = ["ip", "netns", "exec", nb]
        srv_dev = ["-l", "0", f"--file-prefix={tag}s", f"--vdev=net_af_packet0,iface={va}"]
        cli_dev = ["-l", "1", f"--file-prefix={tag}c", f"--vdev=net_af_packet0,iface={vb}"]
        control_ip = "192.168.77.1"
        size_flags = ["--mtu=1024"]  # af_packet's default frame size is 2048 bytes
        srv_ip, cli_ip = "10.0.0.1", "10.0.0.2"

    srv_tss, cli_tss = [], []
    if tss:
        srv_keys, cli_keys = tss_key_files(work, args, cli_ip)
        srv_tss = ["--tss", f"--key_file={srv_keys}"]
        cli_tss = ["--tss", f"--key_file={cli_keys}"]

    port = free_port(max(1, args.lcores_io))
    srv_out = os.path.join(work, "server.log")
    cli_out = os.path.join(work, "client.log")
    cli_json = os.path.join(work, "client.json")
    srv_json = os.path.join(work, "server.json")
    pcap = os.path.join(work, "client.pcap")
    procs = []
    rc = 1
    try:
        srv_cmd = srv_pre + [args.uet_perf, "--server", f"--oob_port={port}", f"--ip={srv_ip}",
                             *common, *srv_tss, f"--json={srv_json}"]
        cli_cmd = cli_pre + [args.uet_perf, f"--client={control_ip}", f"--oob_port={port}",
                             f"--ip={cli_ip}", *common, *cli_tss, *size_flags, "-s", str(MSG_SIZE), "-n",
                             str(ITERS), f"--json={cli_json}", f"--op={args.op}"]
        if args.bidir:
            cli_cmd.append("--bidir")
        if args.pcap:
            cli_cmd.append(f"--pcap={pcap}")
        if eal:
            srv_cmd += ["--"] + eal + srv_dev
            cli_cmd += ["--"] + eal + cli_dev
        with open(srv_out, "w") as so:
            srv = subprocess.Popen(srv_cmd, stdout=so, stderr=subprocess.STDOUT)
        procs.append(srv)
        wait_for(lambda: "ready" in open(srv_out).read(), 20, "the server's ready line", procs)
        if sock is not None:
            wait_for(lambda: os.path.exists(sock), 10, "the memif socket file", procs)
        with open(cli_out, "w") as co:
            cli = subprocess.Popen(cli_cmd, stdout=co, stderr=subprocess.STDOUT)
        procs.append(cli)
        if args.dev == "tap":
            join_taps(tap_ns, ta, tb, procs)
        started = time.monotonic()
        cli_rc = cli.wait(timeout=60)
        srv_rc = srv.wait(timeout=30)
        elapsed = time.monotonic() - started
        srv_log, cli_log = open(srv_out).read(), open(cli_out).read()

        def fail(msg):
            print(f"FAIL: {msg}\n--- server ---\n{srv_log}\n--- client ---\n{cli_log}")
            return 1

        if args.uring_zc == "on" and "no IORING_OP_SENDMSG_ZC" in srv_log + cli_log:
            print("SKIP: this kernel has no IORING_OP_SENDMSG_ZC")
            return SKIP
        if args.tss_wrong_key:
            # Expect: nothing the client seals opens at the server, so the writes fail, both
            # sides exit 1 (not a crash, not the test's timeout), and the tool says why.
            if cli_rc != 1 or srv_rc != 1:
                return fail(f"exit codes: client {cli_rc}, server {srv_rc} (want 1 and 1)")
            if elapsed > 4 * timeout_s:
                return fail(f"took {elapsed:.1f} s with --timeout_s={timeout_s}")
            if "the server's TSS refused" not in cli_log or "bad_tag" not in cli_log:
                return fail("the client did not report the server's bad_tag refusals")
            srv_result = json.load(open(srv_json))
            st = srv_result.get("tss") or {}
            if st.get("drops", {}).get("bad_tag", 0) == 0 or st.get("opened") != 0:
                return fail(f"server TSS counters: {st}")
            print(f"OK: {args.dev} wrong TSS key refused in {elapsed:.1f} s: server bad_tag "
                  f"{st['drops']['bad_tag']}, opened 0")
            return 0

        if cli_rc != 0 or srv_rc != 0:
            return fail(f"exit codes: client {cli_rc}, server {srv_rc}")
        checked = f"data check: ok ({ITERS * MSG_SIZE} bytes checked, 0 mismatched)"
        if srv_log.count(checked) != lanes:
            return fail(f"the server did not report '{checked}' once per engine ({lanes})")
        result = json.load(open(cli_json))
        if args.bidir:
            back = (f"bidirectional: the server wrote {ITERS} messages; this side checked "
                    f"{ITERS * MSG_SIZE} bytes, 0 mismatched")
            if back not in cli_log or result.get("bidir") is not True:
                return fail(f"the client did not check the server's {ITERS} writes")
        if (result["verify"] != "ok" or result["iterations"] != ITERS * lanes
                or result["failed"] != 0):
            return fail(f"client JSON: {result}")
        if result["total_bytes"] != ITERS * MSG_SIZE * lanes:
            return fail(f"total_bytes {result['total_bytes']}")
        if args.dev == "tap":
            # The tap PMD offers UDP TX checksum offload and verifies checksums on receive:
            # UET's data leaves with its checksum 0 and the device's filled in, which the
            # server's device then finds good (it reports a 0 checksum as absent, not good);
            # RoCEv2 keeps 0 (the ICRC covers it). No mbuf is left out of either pool.
            srv_result = json.load(open(srv_json))
            data_packets = ITERS * MSG_SIZE // 1024
            sent, good = result["udp_checksums"]["tx_filled_by_device"], \
                srv_result["udp_checksums"]["rx_verified_by_device"]
            if args.transport == "uet" and (sent < data_packets or good < data_packets):
                return fail(f"UDP checksums filled by the client's device {sent}, found good by "
                            f"the server's {good}: want at least {data_packets} each")
            if args.transport == "rocev2" and (sent != 0 or good != 0):
                return fail(f"RoCEv2 frames had UDP checksums: {sent} filled, {good} verified")
            for side, r in (("client", result), ("server", srv_result)):
                if r["mbufs"]["in_use_end"] != 0:
                    return fail(f"{side}: {r['mbufs']['in_use_end']} mbufs out of the pool at the end")
        # --clock=auto: the TSC exactly where the kernel keeps its own time with it.
        want_clock = "tsc" if kernel_clocksource() == "tsc" and os.uname().machine == "x86_64" \
            else "monotonic"
        if result.get("clock") != want_clock:
            return fail(f"clock {result.get('clock')}, want {want_clock} (clocksource "
                        f"{kernel_clocksource()})")
        if tss:
            srv_result = json.load(open(srv_json))
            packets = ITERS * MSG_SIZE // 4096  # --mtu default: 4096 payload bytes a packet
            for side, res, min_opened in (("client", result, 1), ("server", srv_result, packets)):
                t = res.get("tss")
                if (not t or t["sealed"] == 0 or t["opened"] < min_opened or t["dropped"] != 0
                        or any(t["drops"].values()) or t["clear_refused"] != 0):
                    return fail(f"{side} TSS counters: {t} (want sealed > 0, opened >= "
                                f"{min_opened}, no drop)")
            # The backend chosen at start is named, in the text and in the JSON.
            if " tss (ipsec-mb " not in cli_log or " tss (ipsec-mb " not in srv_log:
                return fail("the TSS counters and backend are missing from the text output")
            for side, res in (("client", result), ("server", srv_result)):
                if not res["tss"].get("backend", "").startswith("ipsec-mb 1."):
                    return fail(f"{side} TSS backend: {res['tss'].get('backend')}")
        if lanes > 1:
            per = result.get("lanes", [])
            if result.get("lcores_io") != lanes or len(per) != lanes:
                return fail(f"client JSON has no per-engine results: {result}")
            for i, lane in enumerate(per):
                want_ip = f"10.0.0.{1 + lanes + i}"
                if (lane["lane"] != i or lane["local_ip"] != want_ip or lane["verify"] != "ok"
                        or lane["iterations"] != ITERS or lane["failed"] != 0
                        or lane["frames"]["rx"] == 0):
                    return fail(f"engine {i}: {lane}")
            if srv_log.count("steering: queue pairing") != 1:
                return fail("the server did not report memif queue pairing")
            # The server's summary reports what ran: the operation the client chose.
            srv_result = json.load(open(srv_json))
            if srv_result.get("op") != args.op or srv_result.get("lcores_io") != lanes:
                return fail(f"server summary: op {srv_result.get('op')}, lcores_io "
                            f"{srv_result.get('lcores_io')} (want {args.op}, {lanes})")
        if args.lossless:
            # Expect: with nothing lost, nothing timed out, nothing was sent twice and neither
            # receive socket overflowed (RXCAP kept the data in flight within the peer's).
            srv_result = json.load(open(srv_json))
            for side, res in (("client", result), ("server", srv_result)):
                bad = {k: res.get(k) for k in ("timeouts", "retransmitted", "socket_drops")
                       if res.get(k) != 0}
                if res["frames"]["rx_dropped"] != 0:
                    bad["frames.rx_dropped"] = res["frames"]["rx_dropped"]
                if bad:
                    return fail(f"{side} not lossless: {bad} (want 0; inflight_bound "
                                f"{res.get('inflight_bound')}, rtt_max_us {res.get('rtt_max_us')})")
            if result.get("inflight_bound", 0) == 0 or srv_result.get("rx_socket_bytes", 0) == 0:
                return fail("no RXCAP bound: the server's receive socket was not reported")
        if args.dev == "uring" and not args.uring_zc:
            # Expect: the bulk left in GSO sends and arrived coalesced (uet-perf's defaults).
            pat = (r"io_uring offload: GSO on, (\d+) sends of (\d+) datagrams; GRO on, (\d+) "
                   r"receives of (\d+) datagrams")
            mc, ms = re.search(pat, cli_log), re.search(pat, srv_log)
            if not mc or not ms:
                return fail("a summary has no io_uring offload line with GSO and GRO on")
            sends, grouped = int(mc.group(1)), int(mc.group(2))
            if sends == 0 or grouped <= sends or int(ms.group(3)) == 0:
                return fail(f"client GSO {sends} sends of {grouped} datagrams, server GRO "
                            f"{ms.group(3)} receives: the offloads carried nothing")
        if args.uring_zc == "on":
            # Expect: the data went out zero-copy and every send's buffer came back.
            m = re.search(r"io_uring send: zero-copy on; sends zero-copy (\d+), notifications "
                          r"(\d+), copied by the kernel \d+(?: \(not reported by this "
                          r"kernel\))?; send errors (\d+)", cli_log)
            if not m:
                return fail("the client's summary has no zero-copy send line")
            sends, notifs, errors = (int(x) for x in m.groups())
            if sends < result["frames"]["tx"] or notifs != sends or errors != 0:
                return fail(f"zero-copy sends {sends} (frames sent {result['frames']['tx']}), "
                            f"notifications {notifs}, send errors {errors}")
        if args.loss > 0:
            if result["frames"]["injected_loss"] == 0 or result["retransmitted"] == 0:
                return fail("loss injected but nothing dropped or retransmitted")
        if args.pcap:
            if shutil.which("tshark") is None:
                print("note: tshark not installed; pcap not decoded")
            else:
                t = subprocess.run(["tshark", "-r", pcap], capture_output=True, text=True)
                if t.returncode != 0:
                    return fail(f"tshark -r exit {t.returncode}: {t.stderr}")
                lines = t.stdout.splitlines()
                if len(lines) < ITERS:
                    return fail(f"tshark shows {len(lines)} frames")
                if args.transport == "rocev2":
                    if "Malformed" in t.stdout:
                        return fail("tshark: Malformed frames in the RoCEv2 pcap")
                    ib = subprocess.run(["tshark", "-r", pcap, "-Y", "infiniband.bth.opcode",
                                         "-T", "fields", "-e", "infiniband.bth.opcode"],
                                        capture_output=True, text=True)
                    if ib.returncode != 0 or len(ib.stdout.split()) < ITERS:
                        return fail("tshark did not decode RoCEv2 BTHs")
        print(f"OK: {args.dev} {args.transport} loss={args.loss} engines={lanes} tss={tss}: "
              f"{ITERS * MSG_SIZE * lanes} bytes verified, {result['bw_gbps']:.3f} Gb/s, "
              f"retransmitted {result['retransmitted']}")
        rc = 0
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"FAIL: {e}")
        for name in (srv_out, cli_out):
            if os.path.exists(name):
                print(f"--- {name} ---\n{open(name).read()}")
        rc = 1
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        perf_common.remove(netns)
        for prefix in (f"{tag}s", f"{tag}c"):
            shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
        if rc == 0:
            shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
