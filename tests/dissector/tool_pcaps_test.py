#!/usr/bin/env python3
"""The pcaps our own tools write decode cleanly: uet-wire-ab --pcap DIR --size 20000 --mtu 1024
writes one RDMA WRITE as UET (uet.pcap) and as RoCEv2 (rocev2.pcap). Every frame must be
dissected by the plugin with no malformed-packet item and no expert info above Note in our
subtrees; every RoCEv2 ICRC must be Good, with InfiniBand's own BTH fields still there.
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import harness  # noqa: E402

WARN = 0x00600000  # PI_WARN


def main():
    a = harness.args_parser(__doc__).parse_args()
    if not a.wire_ab:
        harness.fail('--wire-ab is required')
    errors = []
    with harness.Tshark(a.plugin, a.tshark, a.keep) as ts:
        ts.check_plugin_loaded()
        out = ts.path('ab')
        os.makedirs(out)
        subprocess.run([a.wire_ab, '--pcap=' + out, '--size=20000', '--mtu=1024'], check=True,
                       stdout=subprocess.DEVNULL)
        counts = {}
        for name, proto in (('uet.pcap', 'uetref'), ('rocev2.pcap', 'uetref.rocev2')):
            path = os.path.join(out, name)
            os.chmod(out, 0o755)
            os.chmod(path, 0o644)
            pkts = harness.packets(ts.run(['-n', '-r', path, '-T', 'json']).stdout)
            counts[name] = len(pkts)
            if not pkts:
                errors.append('%s: no frames' % name)
            for i, p in enumerate(pkts, 1):
                ours = p.get(proto)
                if ours is None:
                    errors.append('%s frame %d: not dissected by %s' % (name, i, proto))
                    continue
                if '_ws.malformed' in p['*']:
                    errors.append('%s frame %d: malformed' % (name, i))
                for sev, msg in zip(ours.get('_ws.expert.severity', []), ours.get('_ws.expert.message', [])):
                    if int(sev) >= WARN:
                        errors.append('%s frame %d: expert info %s' % (name, i, msg))
                if proto == 'uetref.rocev2':
                    if ours.get('uetref.rocev2.icrc.status') != ['1']:
                        errors.append('%s frame %d: ICRC status %s' % (name, i, ours.get('uetref.rocev2.icrc.status')))
                    if 'infiniband.bth.opcode' not in p.get('infiniband', {}):
                        errors.append('%s frame %d: infiniband.bth.opcode missing' % (name, i))
                elif 'uetref.pds.psn' not in ours:
                    errors.append('%s frame %d: no PSN' % (name, i))
    shown = ', '.join('%s: %d frames' % kv for kv in counts.items())
    harness.verdict(errors, 'problems in the tool pcaps',
                    'uet-wire-ab pcaps decode cleanly (%s)' % shown, most=50)


if __name__ == '__main__':
    main()
