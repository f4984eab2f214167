#!/usr/bin/env python3
"""tshark -2 (two passes, the second over visited frames, as a click in Wireshark) never aborts.

Each capture is read with -2 -V, the expert and PDC/EV statistics (-z expert, -z uetref_ev,tree),
checksum checks, the sealed vectors' keys and WIRESHARK_ABORT_ON_DISSECTOR_BUG=1, with every
built-in heuristic on: the golden vectors, the fuzz test's four pcaps of corrupted frames, the
pcaps of a simulated run (uet-ab --pcap), and RC SENDs split over First, Middle and Last.
tshark must exit with 0, show every frame and print no assertion, abort or dissector bug.

Wireshark 4.0.17's RPC-over-RDMA heuristic, which InfiniBand runs on RC payloads, asserts
(tvbuff.c:748) when it revisits an RC SEND Last whose message it did not complete in that frame;
the plugin runs InfiniBand without it there (dissector/rocev2.c). A SEND Last that does complete
the message (First, Middle, Last in order) keeps the reassembled message in both passes.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import fuzz_test  # noqa: E402
import harness  # noqa: E402

BAD = re.compile(r'failed assertion|assertion failed|Aborted|Dissector bug|core dumped', re.I)
REASSEMBLED = 'Reassembled RPCoRDMA length'
SEND_LAST_INV = 0x16  # RC SEND Last with Invalidate (spec/rocev2.def)


def main():
    p = harness.args_parser(__doc__)
    p.add_argument('--ab', required=True, help='build/bin/uet-ab')
    a = p.parse_args()
    vectors = harness.read_vectors(a.spec)
    vec = {v['name']: v['frame'] for v in vectors}
    errors = []
    with harness.Tshark(a.plugin, a.tshark, a.keep) as ts:
        ts.check_plugin_loaded()
        keys = ts.write_file('tss_keys.txt', harness.tss_key_file_text(vectors))
        opts = ['-n', '-V', '-d', 'ip.proto==253,uetref', '-o', 'ip.check_checksum:TRUE', '-o',
                'udp.check_checksum:TRUE', '-o', 'uetref.tss_key_file:' + keys, '-z', 'expert', '-z',
                'uetref_ev,tree']

        def read(path, passes=('-2',)):
            """tshark's -V text of path, or None when it failed (the failure recorded)."""
            out = '%s.%s.out' % (path, '2' if passes else '1')
            with open(out, 'w') as sink:
                r = ts.run(['-r', path] + list(passes) + opts, check=False, stdout=sink)
            text = open(out, errors='replace').read()
            what = '%s (%s)' % (os.path.basename(path), ' '.join(passes) or 'one pass')
            if r.returncode != 0 or BAD.search(r.stderr) or '[Dissector bug' in text:
                errors.append('%s: exit %d\n%s' % (what, r.returncode, r.stderr[-1500:]))
                return None
            return text

        def frames_of(text):
            """-V text split per frame (the statistics after the last frame dropped)."""
            parts = re.split(r'^(?=Frame \d+:)', text, flags=re.M)[1:]
            if parts:
                parts[-1] = re.split(r'^=+$', parts[-1], flags=re.M)[0]
            return parts

        def check(name, frames):
            path = ts.write_pcap(name, frames)
            text = read(path)
            if text is not None and len(frames_of(text)) != len(frames):
                errors.append('%s: %d of %d frames shown' % (name, len(frames_of(text)), len(frames)))
            return path, text

        check('vectors.pcap', [v['frame'] for v in vectors])
        for n, batch in enumerate(fuzz_test.batches([v['frame'] for v in vectors], 4)):
            check('fuzz%d.pcap' % n, batch)

        paths = ts.simulated_pcaps(a.ab)
        names = [os.path.basename(p) for p in paths]
        if not any('rocev2' in n for n in names) or not any('uet' in n for n in names):
            errors.append('the simulated run wrote no UET or no RoCEv2 pcap: %s' % names)
        for path in paths:
            read(path)

        # A SEND Last (and one with Invalidate) alone: no message to complete on either pass.
        inv = bytearray(vec['rocev2_rc_send_last'])
        inv[harness.ip_offsets(inv)[2] + 8] = SEND_LAST_INV
        check('send_last_alone.pcap', [vec['rocev2_rc_send_last'], bytes(inv)])
        # First, Middle, Last in PSN order: the Last completes the message, in both passes.
        path, two = check('send_in_order.pcap', [vec['rocev2_rc_send_first'], vec['rocev2_rc_send_middle'],
                                                 vec['rocev2_rc_send_last']])
        one = read(path, ())
        for passes, text in (('one pass', one), ('-2', two)):
            if text is not None and REASSEMBLED not in ''.join(frames_of(text)[2:3]):
                errors.append('send_in_order.pcap (%s): the SEND Last shows no reassembled message' % passes)
    harness.verdict(errors, 'two-pass failures', 'tshark -2 over the vectors, 4 fuzz pcaps, %d simulated pcaps '
                    'and split RC SENDs: exit 0, no assertion or dissector bug' % len(names))


if __name__ == '__main__':
    main()
