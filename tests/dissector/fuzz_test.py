#!/usr/bin/env python3
"""Seeded random corruptions and truncations of the golden-vector frames never crash tshark.

4 pcaps x 900 frames: bit flips and byte overwrites in the UET/RoCEv2 headers, the PDS type,
next header and SES opcode set at random, truncation (as sent and as a short snapshot), IP and
UDP lengths that cut into the headers, trailing bytes, the trimmed DSCP. Each pcap is read
once, with WIRESHARK_ABORT_ON_DISSECTOR_BUG=1, in a different mode: full tree (-V), two-pass,
JSON, and summary lines only (no tree). tshark must exit with 0 and report no dissector bug.
The sealed vectors' keys are given (uetref.tss_key_file), so corrupted sealed frames reach the
decryption: bad tags, trimmed frames decrypted unverified into random plaintext, short ones.

The RPC-over-RDMA heuristic that InfiniBand runs on RoCEv2 payloads is turned off here: in
Wireshark 4.0.17 it hits a dissector-bug assertion (tvbuff.c:748) when it revisits an RC SEND
Last, with or without this plugin. The plugin steers InfiniBand around that (dissector/rocev2.c);
two_pass_test.py reads these same pcaps with the heuristic on.
"""
import random
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import harness  # noqa: E402

SEED = 20250601
PER_PCAP = 900


def mutate(rng, frame):
    """One corrupted version of frame: (captured bytes, original length)."""
    f = bytearray(frame)
    _, _, l4 = harness.ip_offsets(f)
    start = l4 + 8  # the transport headers (entropy form: a few bytes early)
    orig = None

    def refit(g, l4_len=None, dscp=None):  # rewrite IP/UDP lengths when the headers are there
        return harness.fix_lengths(g, l4_len, dscp) if len(g) >= l4 + 8 else g

    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(10)
        if op <= 2 and len(f) > start:  # bit flips in the transport headers
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(start, len(f))
                f[i] ^= 1 << rng.randrange(8)
        elif op == 3 and len(f) > start:  # a byte overwritten
            f[rng.randrange(start, min(len(f), start + 64))] = rng.choice([0x00, 0xFF, rng.randrange(256)])
        elif op == 4 and len(f) > start + 1:  # PDS type / next header / BTH opcode
            f[start] = rng.randrange(256)
            f[start + 1] = rng.randrange(256)
        elif op == 5 and len(f) > start + 16:  # somewhere in the SES or extended headers
            f[rng.randrange(start + 2, len(f))] = rng.randrange(256)
        elif op == 6 and len(f) > start:  # cut as sent: lengths rewritten to the new size
            cut = rng.randrange(start, len(f) + 1)
            f = refit(f[:cut], cut - l4)
        elif op == 7:  # cut by the capture's snapshot length
            orig = max(orig or 0, len(f))
            f = f[:rng.randrange(14, len(f) + 1)]
        elif op == 8:  # trailing bytes, lengths rewritten
            f += bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
            f = refit(f)
        elif op == 9 and len(f) > start:  # the trimmed code point, maybe with the payload gone
            if rng.random() < 0.5:
                f = refit(f, dscp=45)
            else:
                cut = rng.randrange(start, len(f) + 1)
                f = refit(f[:cut], cut - l4, 45)
    return bytes(f), max(orig or 0, len(f))


def batches(frames, n):
    """n pcaps' worth of frames, PER_PCAP each, the same for a given SEED."""
    rng = random.Random(SEED)
    out = []
    for _ in range(n):
        batch = []
        for i in range(PER_PCAP):
            base = frames[rng.randrange(len(frames))]
            batch.append(mutate(rng, base) if i % 10 else (base, len(base)))  # some intact, for PDC state
        out.append(batch)
    return out


def main():
    a = harness.args_parser(__doc__).parse_args()
    vectors = harness.read_vectors(a.spec)
    frames = [v['frame'] for v in vectors]
    modes = [
        ('full tree', ['-V']),
        ('two-pass', ['-V', '-2']),
        ('json', ['-T', 'json']),
        ('summary, no tree', []),
    ]
    total = 0
    with harness.Tshark(a.plugin, a.tshark, a.keep) as ts:
        ts.check_plugin_loaded()
        keys = ts.write_file('tss_keys.txt', '\n'.join(harness.tss_key_lines(vectors)) + '\n')
        for n, ((mode, extra), batch) in enumerate(zip(modes, batches(frames, len(modes)))):
            pcap = ts.write_pcap('fuzz%d.pcap' % n, batch)
            out = ts.path('fuzz%d.out' % n)
            with open(out, 'w') as sink:
                ts.run(['-n', '-r', pcap, '-d', 'ip.proto==253,uetref', '--disable-heuristic', 'rpcrdma_infiniband',
                        '-o', 'uetref.tss_key_file:' + keys] + extra, stdout=sink)
            text = open(out, errors='replace').read()
            if '[Dissector bug' in text:
                harness.fail('%s: dissector bug:\n%s' % (mode, re.findall(r'.*Dissector bug.*', text)[:5]))
            seen = len(re.findall(r'^Frame \d+:', text, re.M)) if '-V' in extra else \
                text.count('"_index"') if 'json' in extra else len(text.splitlines())
            if seen != PER_PCAP:
                harness.fail('%s: tshark showed %d of %d frames' % (mode, seen, PER_PCAP))
            print('%s: %d corrupted frames, no crash, no dissector bug' % (mode, PER_PCAP))
            total += PER_PCAP
    print('PASS: %d frames (seed %d)' % (total, SEED))


if __name__ == '__main__':
    main()
