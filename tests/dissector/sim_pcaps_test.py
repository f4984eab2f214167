#!/usr/bin/env python3
"""Simulated runs open cleanly in Wireshark: uet-ab --pcap taps host 0 of a small fabric while
the real UET and RoCEv2 engines run every standard scenario (permutation, incast, loss). Every
frame of every pcap must be dissected by the plugin (UET frames by uetref; RoCEv2 frames by
InfiniBand plus uetref.rocev2), with no malformed-packet item and no expert info at Error.
Payloads travel by length in these runs, so the captures are shorter than the packets, as with
a snap length; that must not read as malformed either. A sealed run (--tss --tss_key_file)
opens with the same key file: every UET frame's PDS decrypted, no bad tag. Runs in UET's
datagram modes carry only RUDI (request and response) or only UUD frames. Runs of the other
verbs (uet-ab --verb=send|atomic) carry tagged sends, or fetching atomics with the atomic
extension and their answers (responses with data), or (--rendezvous_bytes) rendezvous tagged
sends with their extension and the READs of the rest, or (--deferrable with late receives)
deferrable tagged sends deferred with NO_MATCH and restarted on the RTR, each without a
warning.
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import harness  # noqa: E402

ERROR = 0x00800000  # PI_ERROR


def main():
    p = harness.args_parser(__doc__)
    p.add_argument('--ab', required=True, help='build/bin/uet-ab')
    a = p.parse_args()
    errors = []
    with harness.Tshark(a.plugin, a.tshark, a.keep) as ts:
        ts.check_plugin_loaded()
        paths = ts.simulated_pcaps(a.ab)
        if len(paths) != 12:
            errors.append('expected 12 pcaps (3 scenarios x 2 transports x tx/rx), got %d' % len(paths))
        total = 0
        for path in paths:
            name = os.path.basename(path)
            pkts = harness.packets(ts.run(['-n', '-r', path, '-T', 'json']).stdout)
            total += len(pkts)
            if not pkts:
                errors.append('%s: no frames' % name)
            uet = '_uet_' in name
            for i, pk in enumerate(pkts, 1):
                if '_ws.malformed' in pk['*']:
                    errors.append('%s frame %d: malformed' % (name, i))
                protos = ['uetref'] if uet else ['uetref.rocev2', 'infiniband']
                for proto in protos:
                    if proto not in pk:
                        errors.append('%s frame %d: not dissected by %s' % (name, i, proto))
                for proto in ('uetref', 'uetref.rocev2'):
                    o = pk.get(proto, {})
                    for sev, msg in zip(o.get('_ws.expert.severity', []), o.get('_ws.expert.message', [])):
                        if int(sev) >= ERROR:
                            errors.append('%s frame %d: error expert info: %s' % (name, i, msg))
        print('%d pcaps, %d frames' % (len(paths), total))

        # Sealed (uet-ab --tss with a key file): the same file opens the UET pcaps. Every UET
        # frame shows its PDS header decrypted, and none a bad tag. (Payloads travel by length,
        # so most tags lie past the captured bytes: those frames read as unverified, §5.5.)
        sealed = ts.path('sealed')
        os.makedirs(sealed)
        keys = ts.write_file('keys.txt', 'sdi=0x00c0de an=0 mode=cluster key=' + '5a' * 32 + '\n')
        subprocess.run([a.ab, '--leaves=2', '--hosts_per_leaf=4', '--spines=2', '--scenario=permutation',
                        '--transport=uet', '--bytes=65536', '--tss', '--tss_key_file=' + keys,
                        '--pcap=' + sealed], check=True, stdout=subprocess.DEVNULL)
        os.chmod(sealed, 0o755)
        n_sealed, statuses = 0, {}
        for name in sorted(os.listdir(sealed)):
            path = os.path.join(sealed, name)
            os.chmod(path, 0o644)
            for i, pk in enumerate(harness.packets(ts.run(['-n', '-r', path, '-T', 'json', '-o',
                                                           'uetref.tss_key_file:' + keys]).stdout), 1):
                o = pk.get('uetref', {})
                n_sealed += 1
                for st in o.get('uetref.tss.tag_status', ['none']):
                    statuses[st] = statuses.get(st, 0) + 1
                if 'uetref.pds.type' not in o:
                    errors.append('sealed %s frame %d: PDS not decrypted' % (name, i))
                if 'uetref.expert.tss_bad_tag' in o:
                    errors.append('sealed %s frame %d: bad tag' % (name, i))
        if n_sealed == 0 or statuses.get('1', 0) == 0:
            errors.append('sealed run: %d frames, tag statuses %s (none verified)' % (n_sealed, statuses))
        print('sealed run: %d UET frames decrypted with the key file, tag statuses %s' % (n_sealed, statuses))
        # UET's datagram modes (uet-ab --uet_mode=rudi|uud): host 0's frames are RUDI requests
        # and responses, or UUD requests, and decode as such.
        for mode, want in (('rudi', {'4', '5'}), ('uud', {'6'})):
            d = ts.path(mode)
            os.makedirs(d)
            subprocess.run([a.ab, '--leaves=2', '--hosts_per_leaf=4', '--spines=2',
                            '--scenario=collective', '--coll=alltoall', '--sizes=16K',
                            '--transport=uet', '--uet_mode=' + mode, '--pcap=' + d],
                           check=True, stdout=subprocess.DEVNULL)
            os.chmod(d, 0o755)
            types = {}
            for name in sorted(os.listdir(d)):
                path = os.path.join(d, name)
                os.chmod(path, 0o644)
                for i, pk in enumerate(harness.packets(ts.run(['-n', '-r', path, '-T', 'json']).stdout), 1):
                    if '_ws.malformed' in pk['*']:
                        errors.append('%s %s frame %d: malformed' % (mode, name, i))
                    for t in pk.get('uetref', {}).get('uetref.pds.type', []):
                        types[t] = types.get(t, 0) + 1
            if set(types) != want:
                errors.append('--uet_mode=%s: PDS types %s, expected %s' % (mode, types, sorted(want)))
            print('--uet_mode=%s: PDS types %s' % (mode, types))
        # The SES verbs (uet-ab --verb): host 0 sends and receives TAGGED_SEND (0x09), or
        # FETCHING_ATOMIC (0x04) with the atomic extension (SUM) answered by responses with
        # data (2), or (--rendezvous_bytes) RENDEZVOUS_TSEND (0x0A) with the rendezvous
        # extension, whose rest the destination READs (0x02: answered with data); no expert
        # info at Warning or above in any frame.
        WARN = 0x00600000
        # Or (--deferrable, the receives 20 us late) DEFERRABLE_TSEND (0x0b) deferred with
        # NO_MATCH (0x05), the destination's DEFERRABLE_RTR (0x0c) and the restart.
        for verb, flags, opcodes, extra, with_data in (
                ('send', [], {'0x09'}, None, False),
                ('atomic', [], {'0x04'}, ('uetref.ses.atomic.atomic_opcode', '0x02'), True),
                ('send', ['--rendezvous_bytes=8192', '--bytes=65536'], {'0x0a', '0x02'},
                 ('uetref.ses.rdv.eager_length', None), True),
                ('send', ['--deferrable', '--recv_delay_us=20'], {'0x0b', '0x0c'},
                 ('uetref.ses.rsp.return_code', '0x05'), False)):
            d = ts.path('verb_' + verb + ('_' + flags[0].strip('-').split('=')[0] if flags else ''))
            os.makedirs(d)
            subprocess.run([a.ab, '--leaves=2', '--hosts_per_leaf=4', '--spines=2',
                            '--scenario=permutation', '--transport=uet', '--bytes=16384',
                            '--verb=' + verb, '--pcap=' + d] + flags, check=True,
                           stdout=subprocess.DEVNULL)
            if flags:
                verb += ' ' + ' '.join(flags)
            os.chmod(d, 0o755)
            seen, extras, answers = set(), 0, 0
            for name in sorted(os.listdir(d)):
                path = os.path.join(d, name)
                os.chmod(path, 0o644)
                for i, pk in enumerate(harness.packets(ts.run(['-n', '-r', path, '-T', 'json']).stdout), 1):
                    o = pk.get('uetref', {})
                    if '_ws.malformed' in pk['*']:
                        errors.append('--verb=%s %s frame %d: malformed' % (verb, name, i))
                    seen.update(o.get('uetref.ses.std.opcode', []))
                    if extra and o.get(extra[0]) and (extra[1] is None or extra[1] in o[extra[0]]):
                        extras += 1
                    answers += o.get('uetref.ses.rsp.opcode', []).count('2')
                    for sev, msg in zip(o.get('_ws.expert.severity', []), o.get('_ws.expert.message', [])):
                        if int(sev) >= WARN:
                            errors.append('--verb=%s %s frame %d: expert info %s' % (verb, name, i, msg))
            if seen != opcodes:
                errors.append('--verb=%s: SES opcodes %s, expected %s' % (verb, sorted(seen), sorted(opcodes)))
            if extra and (extras == 0 or (with_data and answers == 0)):
                errors.append('--verb=%s: %d extensions or codes, %d responses with data' %
                              (verb, extras, answers))
            print('--verb=%s: SES opcodes %s, %d extensions or codes, %d responses with data' %
                  (verb, sorted(seen), extras, answers))
    for e in errors[:50]:
        print('FAIL:', e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
