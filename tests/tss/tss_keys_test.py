#!/usr/bin/env python3
"""uet-tss-keys (bench/uet_tss_keys.cc), run as a user would:

* --new writes a key file of fresh keys, owner-only (0600), one line per AN, keys that differ
  between ANs and between runs, the job when asked;
* --client derives a server-mode client's file from the server's (spec/uet.md §5.3): for each
  mode=server domain and AN, the key and IV mask of SP 800-108 counter mode with AES-256-CMAC,
  label U2, context epoch || 0 || client address, computed here with Python's `cryptography`
  (independently of the C++ KDF); epoch= as asked or the server's; no other domain; never the
  domain key;
* bad requests are refused with exit code 2 and a message naming the flag, and no key is ever
  printed on stdout or stderr.

    tss_keys_test.py UET_TSS_KEYS
"""
import os
import re
import stat
import struct
import subprocess
import sys
import tempfile

from cryptography.hazmat.primitives import cmac
from cryptography.hazmat.primitives.ciphers import algorithms


def kdf_u2(master, epoch, client):
    """spec/uet.md §5.3: three CMAC blocks over i || "U2" || 0 || context || L (352)."""
    a, b, c, d = (int(x) for x in client.split("."))
    ctx = struct.pack(">HII", epoch, 0, a << 24 | b << 16 | c << 8 | d)
    out = b""
    for i in (1, 2, 3):
        m = cmac.CMAC(algorithms.AES(master))
        m.update(bytes([i]) + b"U2\x00" + ctx + struct.pack(">H", 352))
        out += m.finalize()
    return out[:32], out[32:44]


def lines_of(path):
    """The key lines of a file: dicts of name -> value."""
    out = []
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            out.append(dict(kv.split("=", 1) for kv in line.split()))
    return out


def main():
    tool = sys.argv[1]
    errors = []
    err = errors.append
    seen_keys = []
    outputs = []

    def run(*args, want=0):
        p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=30)
        outputs.append(p.stdout + p.stderr)
        if p.returncode != want:
            err("%s: exit %d, expected %d (%s)" % (" ".join(args), p.returncode, want, p.stderr.strip()))
        return p

    with tempfile.TemporaryDirectory() as work:
        cluster = os.path.join(work, "cluster.txt")
        run("--new", "--sdi=0x5e1", "--out=" + cluster)
        server = os.path.join(work, "server.txt")
        run("--new", "--mode=server", "--sdi=9", "--job=77", "--out=" + server)
        again = os.path.join(work, "again.txt")
        run("--new", "--mode=server", "--sdi=9", "--ans=1", "--out=" + again)
        for path in (cluster, server, again):
            if stat.S_IMODE(os.stat(path).st_mode) != 0o600:
                err("%s: mode %o, want 600" % (path, stat.S_IMODE(os.stat(path).st_mode)))
        srv = lines_of(server)
        if [(l["sdi"], l["an"], l["mode"], l.get("job")) for l in srv] != [("9", "0", "server", "77"),
                                                                           ("9", "1", "server", "77")]:
            err("server file lines: %s" % [{k: v for k, v in l.items() if k != "key"} for l in srv])
        keys = [l["key"] for f in (cluster, server, again) for l in lines_of(f)]
        if any(not re.fullmatch("[0-9a-f]{64}", k) for k in keys) or len(set(keys)) != len(keys):
            err("fresh keys are not 5 distinct 64-digit keys: %d of %d distinct" % (len(set(keys)), len(keys)))
        seen_keys += keys

        # The client's file: U2 over its address, in the server's epoch (0) and in epoch 7.
        both = os.path.join(work, "both.txt")
        with open(both, "w") as f:  # a cluster domain beside the server one: not the client's
            f.write(open(server).read() + open(cluster).read())
        for epoch_flag, epoch in ((None, 0), ("--epoch=7", 7)):
            out = os.path.join(work, "client%d.txt" % epoch)
            run("--key_file=" + both, "--client=10.0.0.2", "--out=" + out, *([epoch_flag] if epoch_flag else []))
            got = lines_of(out)
            if len(got) != 2 or any(l["sdi"] != "9" or l["mode"] != "client" or l.get("job") != "77" for l in got):
                err("client file (epoch %d): %s" % (epoch, [{k: v for k, v in l.items() if k not in ("key", "iv_mask")}
                                                            for l in got]))
                continue
            for l, s in zip(got, srv):
                key, mask = kdf_u2(bytes.fromhex(s["key"]), epoch, "10.0.0.2")
                if l["key"] != key.hex() or l["iv_mask"] != mask.hex():
                    err("client file (epoch %d) an %s: not the U2 derivation over 10.0.0.2" % (epoch, l["an"]))
                if l.get("epoch", "0") != str(epoch):
                    err("client file (epoch %d): epoch=%s" % (epoch, l.get("epoch")))
                if l["key"] == s["key"]:
                    err("client file holds the domain key")
                seen_keys += [l["key"], l["iv_mask"]]

        # Refusals, each naming its flag.
        x = os.path.join(work, "x.txt")
        for args, want in ((["--client=10.0.0.256", "--key_file=" + server, "--out=" + x], "--client=10.0.0.256"),
                           (["--client=10.0.0.2", "--key_file=" + cluster, "--out=" + x], "no mode=server domain"),
                           (["--client=10.0.0.2", "--out=" + x], "--client needs --key_file"),
                           (["--client=10.0.0.2", "--key_file=" + server, "--epoch=65536", "--out=" + x],
                            "--epoch=65536 out of range"),
                           (["--new", "--mode=client", "--out=" + x], "--mode=client"),
                           (["--new", "--sdi=16777216", "--out=" + x], "--sdi=16777216 out of range"),
                           (["--new", "--ans=3", "--out=" + x], "--ans=3 out of range"),
                           (["--new", "--job=16777216", "--out=" + x], "--job=16777216 out of range"),
                           (["--new"], "--out=PATH is required"),
                           (["--new", "--client=10.0.0.2", "--out=" + x], "one of them"),
                           (["--client=10.0.0.2", "--key_file=" + os.path.join(work, "none.txt"), "--out=" + x],
                            "cannot be read")):
            p = run(*args, want=2)
            if want not in p.stderr:
                err("%s: stderr %r does not name %r" % (" ".join(args), p.stderr.strip(), want))
        if os.path.exists(x):
            err("a refused request wrote %s" % x)

    printed = "".join(outputs)
    for k in seen_keys:
        if k in printed or k[:16] in printed:
            err("a key or IV mask shows in the tool's output")
            break
    if errors:
        print("FAIL: %d uet-tss-keys mismatches\n  %s" % (len(errors), "\n  ".join(errors)))
        return 1
    print("OK: fresh key files, client files equal to the U2 derivation in two epochs, %d refusals" % 11)
    return 0


if __name__ == "__main__":
    sys.exit(main())
