#!/usr/bin/env python3
"""uet-perf under faults on real I/O: a server and a client process over a DPDK virtual device
(bench/README.md "Faults on real I/O"), one fault injected while the client writes, and what
the survivor must do about it.

    perf_fault_test.py UET_PERF --transport=uet|rocev2 --fault=FAULT [--uring]

FAULT (the device it runs on):
  kill       (af_packet) the server is SIGKILLed mid-transfer. The client must end its writes
             with an error completion (retries exhausted) within its retry budget of the last
             success (JSON error_after_ms <= retry_budget_ms + slack), exit 1 naming it, and
             have every mbuf back in its pool.
  memif-freeze (memif) the server is SIGSTOPped mid-transfer and held until the client has
             exited (then killed): a peer gone silent with the link up. The client must fail
             as in kill. (A memif peer killed outright is not tested: DPDK 22.11's memif unmaps
             the rings from its interrupt thread while the survivor's data path may be inside
             a burst; bench/README.md.)
  stall      (memif) the server is SIGSTOPped for STALL_S seconds, then SIGCONTed: it reads
             nothing, so the client's memif TX ring stays full. Budgets above STALL_S: the
             transfer must recover (both exit 0, every byte checked), the client's JSON showing
             the held backlog dropped (dpdk_tx.stalls) and frames resent; no mbuf left out.
  linkflap   (af_packet) the client's veth is set down for FLAP_S seconds, then up. Budgets
             above FLAP_S: the transfer must recover and verify; no mbuf left out.
  linkdown   (af_packet) the server's veth goes down and stays down (it also carries the control
             connection). The client must fail its writes within its retry budget and both must
             exit 1 within the retry budget + --timeout_s, naming what failed; no mbuf left out.
  ctrl-done  (memif) the client is SIGSTOPped mid-transfer and held until the server exits: the
             server, waiting for DONE, must give up after --timeout_s (past its retry budget)
             without frames or DONE, exit 1 naming the stalled control connection; no mbuf out.
  ctrl-hello (memif) the server is SIGSTOPped right after its "ready" line, before the client
             connects: the client's handshake must fail after --timeout_s (exit 1, the control
             connection named, a JSON with ok=false and no mbuf out); once resumed, the server
             finds the client gone and exits 1.

--uring runs kill and ctrl-done over io_uring UDP sockets on loopback instead (no mbufs:
the pool check is skipped; uet-perf's io_uring timers make the budgets seconds long).

Synchronisation is on observable events only: the server's "ready" line, the memif socket
file, the client's "progress:" lines (--progress_ms) showing completed writes, a process's
exit. The SIGSTOP held for STALL_S and the link down for FLAP_S are the faults themselves.
af_packet cases need root (network namespaces; skipped with 77 otherwise).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from perf_common import free_port, run, wait_for
import perf_common

SKIP = 77
STALL_S = 2.0
FLAP_S = 1.0
TIMEOUT_S = 3     # uet-perf --timeout_s: the control connection's and the stall bound
SLACK_S = 4.0     # process start-up/teardown (EAL, memif) on a loaded 2-vCPU host
TX_HOLD_MS = 20   # uet-perf's --tx_hold_us default








def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def completed_writes(log):
    """The latest completed count of the client's progress lines (0 if none yet)."""
    m = re.findall(r"progress: posted \d+ completed (\d+)", log)
    return int(m[-1]) if m else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uet_perf")
    ap.add_argument("--transport", default="uet", choices=["uet", "rocev2"])
    ap.add_argument("--fault", required=True,
                    choices=["kill", "memif-freeze", "stall", "linkflap", "linkdown", "ctrl-done",
                             "ctrl-hello"])
    ap.add_argument("--uring", action="store_true")
    args = ap.parse_args()
    if args.uring and args.fault not in ("kill", "ctrl-done"):
        ap.error("--uring: kill and ctrl-done only")
    uet = args.transport == "uet"
    # ctrl-hello runs on af_packet: a memif link comes up only with both processes running,
    # so a server stopped before HELLO would show as a link that never came up.
    dev = "afpacket" if args.fault in ("kill", "linkflap", "linkdown", "ctrl-hello") else "memif"
    if args.uring:
        dev = "uring"

    # Retry budgets. Recovering faults get budgets well above the fault's length; the others
    # keep uet-perf's defaults (UET: 9 RTOs of at most 10 ms; RoCEv2: 7 ACK timeouts of 16.8
    # ms).
    budget = []
    if args.fault == "stall":  # UET 17 x 0.5 s; RoCEv2 7 x 1.07 s: above STALL_S
        budget = (["--max_rto_us=500000", "--max_retries=16"] if uet
                  else ["--ack_timeout_exp=18", "--retry_cnt=6"])
    elif args.fault == "linkflap":  # UET 17 x 0.25 s; RoCEv2 7 x 0.54 s: above FLAP_S
        budget = (["--max_rto_us=250000", "--max_retries=16"] if uet
                  else ["--ack_timeout_exp=17", "--retry_cnt=6"])
    if args.fault == "stall" and uet:
        budget.append("--window_kb=1024")  # more in flight than the memif ring (rsize) holds

    tag = f"flt{args.transport[:1]}{os.getpid()}"
    work = tempfile.mkdtemp(prefix=f"uetfault_{tag}_")
    eal = ["--no-huge", "-m", "512", "--no-pci", "--no-telemetry"]
    netns = []
    srv_ip, cli_ip = "10.0.0.1", "10.0.0.2"
    if dev == "uring":
        sock = None
        eal, srv_pre, cli_pre, srv_dev, cli_dev = [], [], [], [], []
        control_ip = "127.0.0.1"
        size_flags = ["--io=uring"]
        k = os.getpid() % 250 + 1
        srv_ip, cli_ip = f"127.79.{k}.1", f"127.79.{k}.2"
    elif dev == "memif":
        sock = os.path.join(work, "memif.sock")
        vdev = f"net_memif0,socket={sock},socket-abstract=no,bsize=9216"
        if args.fault == "stall":
            vdev += ",rsize=5"  # a 32-slot ring, so that a stopped reader leaves it full
        srv_pre, cli_pre = [], []
        srv_dev = ["-l", "0", f"--file-prefix={tag}s", f"--vdev={vdev},role=server"]
        cli_dev = ["-l", "1", f"--file-prefix={tag}c", f"--vdev={vdev},role=client"]
        control_ip = "127.0.0.1"
        size_flags = []
    else:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            print("SKIP: af_packet in network namespaces needs root and iproute2")
            return SKIP
        sock = None
        na, nb, va, vb = perf_common.make("f", os.getpid(), "192.168.78", netns)
        srv_pre = ["ip", "netns", "exec", na]
        cli_pre = ["ip", "netns", "exec", nb]
        srv_dev = ["-l", "0", f"--file-prefix={tag}s", f"--vdev=net_af_packet0,iface={va}"]
        cli_dev = ["-l", "1", f"--file-prefix={tag}c", f"--vdev=net_af_packet0,iface={vb}"]
        control_ip = "192.168.78.1"
        size_flags = ["--mtu=1024"]  # af_packet's default frame size is 2048 bytes

    port = free_port()
    srv_out, cli_out = os.path.join(work, "server.log"), os.path.join(work, "client.log")
    srv_json, cli_json = os.path.join(work, "server.json"), os.path.join(work, "client.json")
    common = [f"--transport={args.transport}", "--mbufs=4095", f"--timeout_s={TIMEOUT_S}",
              "--progress_ms=20", *budget]
    # Recovering faults run for a fixed time (-D) so the fault lands mid-transfer; the others
    # write for longer than the test lasts.
    duration = "6" if args.fault in ("stall", "linkflap") else "30"
    if dev == "uring":
        common.append("--io=uring")
        size_flags = []
    srv_cmd = srv_pre + [args.uet_perf, "--server", f"--oob_port={port}", f"--ip={srv_ip}",
                         *common, f"--json={srv_json}"]
    cli_cmd = cli_pre + [args.uet_perf, f"--client={control_ip}", f"--oob_port={port}",
                         f"--ip={cli_ip}", *common, *size_flags, "-s", "65536", "-D", duration,
                         f"--json={cli_json}"]
    if eal:
        srv_cmd += ["--"] + eal + srv_dev
        cli_cmd += ["--"] + eal + cli_dev
    procs = []
    rc = 1

    def logs():
        return f"--- server ---\n{read(srv_out)}\n--- client ---\n{read(cli_out)}"

    def fail(msg):
        print(f"FAIL: {args.fault} {args.transport}: {msg}\n{logs()}")
        return 1

    def mbufs_ok(path, side):
        res = json.load(open(path))
        if dev == "uring":
            return res, None  # no mbufs: io_uring's buffers are the backend's own
        m = res.get("mbufs")
        if not m or m.get("in_use_end") != 0 or m.get("pool", 0) <= 0:
            return res, f"{side}: mbufs not all back in the pool after the run: {m}"
        return res, None

    try:
        with open(srv_out, "w") as so:
            srv = subprocess.Popen(srv_cmd, stdout=so, stderr=subprocess.STDOUT)
        procs.append(srv)
        wait_for(lambda: "ready" in read(srv_out), 20, "the server's ready line", procs)
        if sock is not None:
            wait_for(lambda: os.path.exists(sock), 10, "the memif socket file", procs)
        if args.fault == "ctrl-hello":
            srv.send_signal(signal.SIGSTOP)  # the control connection stalls before HELLO
        with open(cli_out, "w") as co:
            cli = subprocess.Popen(cli_cmd, stdout=co, stderr=subprocess.STDOUT)
        procs.append(cli)

        if args.fault == "ctrl-hello":
            t0 = time.monotonic()
            cli_rc = cli.wait(timeout=TIMEOUT_S + 30)
            took = time.monotonic() - t0
            srv.send_signal(signal.SIGCONT)
            srv_rc = srv.wait(timeout=TIMEOUT_S + 30)
            # Expect: the client gives up after --timeout_s naming the control connection and
            # writes its JSON; the server, resumed, finds the client gone. Both exit 1.
            if cli_rc != 1 or srv_rc != 1:
                return fail(f"exit codes: client {cli_rc}, server {srv_rc} (want 1 and 1)")
            if took > TIMEOUT_S + SLACK_S:
                return fail(f"the client took {took:.1f} s to give up (--timeout_s={TIMEOUT_S})")
            if "control connection" not in read(cli_out):
                return fail("the client did not name the control connection")
            cres, err = mbufs_ok(cli_json, "client")
            if err or mbufs_ok(srv_json, "server")[1]:
                return fail(err or mbufs_ok(srv_json, "server")[1])
            if cres["ok"] is not False or "control connection" not in cres["error"]:
                return fail(f"client JSON: ok {cres['ok']}, error {cres['error']!r}")
            print(f"OK: ctrl-hello {args.transport}: the client gave up in {took:.1f} s "
                  f"(--timeout_s={TIMEOUT_S}): {cres['error']}")
            rc = 0
            return rc

        # Every other fault lands mid-transfer: once writes complete.
        wait_for(lambda: completed_writes(read(cli_out)) > 0, 30, "the client's first writes",
                 procs)
        t0 = time.monotonic()
        if args.fault == "kill":
            srv.kill()
            srv.wait()
        elif args.fault == "memif-freeze":
            srv.send_signal(signal.SIGSTOP)  # killed below, once the client has exited
        elif args.fault == "stall":
            srv.send_signal(signal.SIGSTOP)
            time.sleep(STALL_S)  # the fault: the server reads nothing for STALL_S
            srv.send_signal(signal.SIGCONT)
        elif args.fault == "linkflap":
            run(["ip", "-n", nb, "link", "set", vb, "down"])
            time.sleep(FLAP_S)  # the fault: the link is down for FLAP_S
            run(["ip", "-n", nb, "link", "set", vb, "up"])
        elif args.fault == "linkdown":
            run(["ip", "-n", na, "link", "set", va, "down"])
        elif args.fault == "ctrl-done":
            cli.send_signal(signal.SIGSTOP)  # held until the server has given up

        if args.fault == "ctrl-done":
            srv_rc = srv.wait(timeout=TIMEOUT_S + 30)
            took = time.monotonic() - t0
            cli.send_signal(signal.SIGCONT)
            cli.kill()
            cli.wait()
            # Expect: the server, waiting for DONE with no frame arriving, gives up after
            # --timeout_s, exits 1 naming the stalled control connection, no mbuf out.
            if srv_rc != 1:
                return fail(f"server exit code {srv_rc} (want 1)")
            sres, err = mbufs_ok(srv_json, "server")
            if err:
                return fail(err)
            bound = TIMEOUT_S + sres["retry_budget_ms"] / 1000
            if took > bound + SLACK_S:
                return fail(f"the server took {took:.1f} s to give up (--timeout_s={TIMEOUT_S} "
                            f"past its {sres['retry_budget_ms']} ms retry budget)")
            if "control connection stalled" not in sres["error"]:
                return fail(f"server error {sres['error']!r}")
            print(f"OK: ctrl-done {args.transport}: the server gave up in {took:.1f} s: "
                  f"{sres['error']}")
            rc = 0
            return rc

        cli_rc = cli.wait(timeout=60)
        cli_took = time.monotonic() - t0
        if args.fault == "memif-freeze":
            srv.kill()
            srv.wait()
        srv_rc = srv.wait(timeout=30) if args.fault not in ("kill", "memif-freeze") else None
        if not os.path.exists(cli_json):
            return fail(f"the client wrote no JSON (exit code {cli_rc}, server {srv_rc})")
        cres, err = mbufs_ok(cli_json, "client")
        if err:
            return fail(err)
        budget_s = cres["retry_budget_ms"] / 1000
        if args.fault in ("kill", "memif-freeze"):
            # Expect: the client's writes end in error completions (retries exhausted) within
            # the retry budget (+ the backlog's hold and teardown), and it exits 1 saying so.
            if cli_rc != 1:
                return fail(f"client exit code {cli_rc} (want 1)")
            # A frozen server's kernel keeps the control connection open: the client's wait
            # for VERIFY ends at --timeout_s.
            bound = budget_s + SLACK_S + (TIMEOUT_S if args.fault == "memif-freeze" else 0)
            if cli_took > bound:
                return fail(f"the client took {cli_took:.1f} s (retry budget {budget_s:.3f} s)")
            if cres["error_completions"] < 1 or "retries exhausted" not in cres["error"]:
                return fail(f"client JSON: error_completions {cres['error_completions']}, "
                            f"error {cres['error']!r}")
            # The first error completion came within the budget (+ --tx_hold_us and timer
            # lateness on a loaded host) of the last success.
            if not 0 <= cres["error_after_ms"] <= cres["retry_budget_ms"] + TX_HOLD_MS + 250:
                return fail(f"first error completion {cres['error_after_ms']} ms after the last "
                            f"success (budget {cres['retry_budget_ms']} ms)")
            print(f"OK: {args.fault} {args.transport}: the client failed its writes in {cli_took:.2f} s "
                  f"(budget {budget_s:.3f} s; first error {cres['error_after_ms']:.1f} ms after "
                  f"the last success): {cres['error_completions']} error completions, "
                  f"{cres['error']}; mbufs {cres['mbufs']}")
        elif args.fault == "linkdown":
            # Expect: error completions within the budget; with the control connection on the
            # same dead link both give up after --timeout_s more and exit 1.
            if cli_rc != 1 or srv_rc != 1:
                return fail(f"exit codes: client {cli_rc}, server {srv_rc} (want 1 and 1)")
            if cli_took > budget_s + TIMEOUT_S + SLACK_S:
                return fail(f"the client took {cli_took:.1f} s (budget {budget_s:.3f} s + "
                            f"--timeout_s {TIMEOUT_S})")
            if cres["error_completions"] < 1 or "retries exhausted" not in cres["error"]:
                return fail(f"client JSON: error_completions {cres['error_completions']}, "
                            f"error {cres['error']!r}")
            sres, err = mbufs_ok(srv_json, "server")
            if err:
                return fail(err)
            if "control connection" not in sres["error"]:
                return fail(f"server error {sres['error']!r}")
            print(f"OK: linkdown {args.transport}: the client failed its writes ({cres['error']}), "
                  f"exit after {cli_took:.1f} s; server: {sres['error']}")
        else:
            # Expect: the transfer survives the fault, every byte checked, both exit 0.
            if cli_rc != 0 or srv_rc != 0:
                return fail(f"exit codes: client {cli_rc}, server {srv_rc} (want 0 and 0)")
            if cres["verify"] != "ok" or cres["failed"] != 0 or cres["iterations"] == 0:
                return fail(f"client JSON: verify {cres['verify']}, failed {cres['failed']}")
            sres, err = mbufs_ok(srv_json, "server")
            if err:
                return fail(err)
            if "data check: ok" not in read(srv_out):
                return fail("the server did not check its region")
            # The fault hit: frames were lost and resent, and (stall) the backlog the full ring
            # held was dropped after --tx_hold_us.
            if cres["retransmitted"] == 0:
                return fail("nothing resent by the client: the fault did not hit the transfer")
            if args.fault == "stall" and cres["dpdk_tx"]["stalls"] == 0:
                return fail(f"the client's TX ring never stayed full: {cres['dpdk_tx']}")
            print(f"OK: {args.fault} {args.transport}: recovered, {cres['total_bytes']} bytes "
                  f"verified; resent {cres['retransmitted']}, timeouts {cres['timeouts']}, "
                  f"go-back-N {cres['go_back_n']}, tx {cres['dpdk_tx']}, mbufs "
                  f"{cres['mbufs']} / {sres['mbufs']}")
        rc = 0
    except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError, OSError) as e:
        print(f"FAIL: {args.fault} {args.transport}: {type(e).__name__}: {e}\n{logs()}")
        rc = 1
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
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
