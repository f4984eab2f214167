"""What the uet-perf pair tests share (perf_pair_test.py, perf_fault_test.py): a free TCP port,
a bounded wait on a condition, and two network namespaces joined by a veth pair for the
af_packet runs (each side's uet-perf runs net_af_packet on its end; the kernel addresses on
the veth carry only the control connection)."""
import os
import random
import socket
import subprocess
import time


def run(cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def free_port(count=1):
    """A base port with `count` consecutive ports free to listen on (uet-perf's lane i listens
    on base + i). Drawn below the kernel's ephemeral range, so no outgoing connection of any
    process takes one between this check and uet-perf's listen; each is checked bindable."""
    low, high = 20000, 32000
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            high = min(high, int(f.read().split()[0]))
    except (OSError, ValueError, IndexError):
        pass
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        base = rng.randrange(low, high - count)
        try:
            for p in range(base, base + count):
                with socket.socket() as s:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uet-perf
                    s.bind(("0.0.0.0", p))
                    s.listen()
        except OSError:
            continue
        return base
    raise RuntimeError(f"no {count} consecutive free TCP ports in {low}..{high}")


def wait_for(pred, timeout, what, procs=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: a process exited early (rc {p.returncode})")
        time.sleep(0.01)  # polling interval, not synchronisation
    raise RuntimeError(f"timed out waiting for {what}")


def make(tag, pid, subnet, netns):
    """Creates namespaces uet{tag}a/b<pid> with veths {tag}a/b<pid>, addressed subnet.1 and
    subnet.2/24, every link up. Each namespace is appended to `netns` as soon as it exists, so
    the caller's cleanup removes what was made even if a later step fails. Returns
    (namespace a, namespace b, veth a, veth b)."""
    na, nb = f"uet{tag}a{pid}", f"uet{tag}b{pid}"
    va, vb = f"{tag}a{pid % 100000}", f"{tag}b{pid % 100000}"
    for ns in (na, nb):
        run(["ip", "netns", "add", ns])
        netns.append(ns)
    run(["ip", "link", "add", va, "type", "veth", "peer", "name", vb])
    run(["ip", "link", "set", va, "netns", na])
    run(["ip", "link", "set", vb, "netns", nb])
    run(["ip", "-n", na, "addr", "add", f"{subnet}.1/24", "dev", va])
    run(["ip", "-n", nb, "addr", "add", f"{subnet}.2/24", "dev", vb])
    for ns, v in ((na, va), (nb, vb)):
        run(["ip", "-n", ns, "link", "set", v, "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
    return na, nb, va, vb


def remove(netns):
    for ns in netns:
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
