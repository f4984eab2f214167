#!/usr/bin/env python3
"""Sealed frames (spec/uet.md §5) with and without keys, from the sealed golden vectors:

* no key file: the TSS header, the ciphertext (uetref.tss.ciphertext) and the tag are shown,
  the tag Unverified with a no-key note, and nothing of the ciphertext is read as PDS or SES;
* one byte of ciphertext or tag flipped (UDP checksum zeroed), or a byte of the AAD (UDP port,
  IP address, TSS header), or the wrong key or mode for the domain: uetref.expert.tss_bad_tag,
  tag Bad, no PDS or SES fields and no decrypted data source;
* bytes outside the AAD (DSCP, ECN, TTL) changed: still Good, as §5.2 allows switches to;
* trimmed (§5.5: cut to the TSS header + 64 bytes, DSCP 45): decrypted unverified, the PDS and
  SES fields of the vector shown with uetref.expert.tss_unverified and the trim; a frame with
  DSCP 45 whose tag is intact is verified (without a key it looks trimmed: only the key can
  tell); a snapshot that cuts the tag off: unverified;
* the key file: bad lines are reported (expert info naming the line, a warning on stderr) and
  the good lines still work; an unreadable file is reported; no key ever shows in the output;
* server mode (§5.3): the server's line opens both directions and names the client
  (uetref.tss.client); the client's own lines (key and IV mask, no domain key) open both too,
  tried in order after another client's line; another client's key alone gets a bad tag;
* one pass and two (-2) show the same.
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import harness  # noqa: E402

TRIM_DSCP = 45  # uetref.trimmed_dscp's default, as in sim/
TRIM_KEEP = 64  # spec/uet.md §5.5: ciphertext bytes a switch keeps of a sealed frame


def sealed_offsets(frame):
    """(TSS header offset, ciphertext offset) of a sealed vector's frame."""
    ip, ver, l4 = harness.ip_offsets(frame)
    ip_only = ver == 4 and frame[ip + 9] == 253
    tss = l4 + (4 if ip_only else 8)
    return tss, tss + (16 if frame[tss] & 0x04 else 12)


def flip(frame, at):
    f = bytearray(frame)
    f[at] ^= 0x01
    return bytes(harness.fix_lengths(f))  # zeroes the UDP checksum, fixes the IPv4 one


def pds_fields(layer):
    return sorted(k for k in layer if k.startswith('uetref.pds') or k.startswith('uetref.ses'))


def main():
    a = harness.args_parser(__doc__).parse_args()
    spec = harness.SpecIndex(a.spec)
    sealed = [v for v in harness.read_vectors(a.spec) if v['tss_key'] is not None]
    if len(sealed) < 2:
        harness.fail('fewer than two sealed vectors in %s/vectors' % a.spec)
    by_name = {v['name']: v for v in sealed}
    errors = []
    err = errors.append

    # Frames: (label, frame or (captured, original length), what to expect).
    cases = []
    for v in sealed:
        f = v['frame']
        tss, ct = sealed_offsets(f)
        ip, _, l4 = harness.ip_offsets(f)
        cases.append(('%s: intact' % v['name'], f, 'good', v))
        cases.append(('%s: ciphertext byte 0 flipped' % v['name'], flip(f, ct), 'bad', v))
        cases.append(('%s: last ciphertext byte flipped' % v['name'], flip(f, len(f) - 17), 'bad', v))
        cases.append(('%s: tag byte flipped' % v['name'], flip(f, len(f) - 1), 'bad', v))
        cases.append(('%s: TSC flipped (AAD, IV)' % v['name'], flip(f, tss + (15 if f[tss] & 4 else 11)), 'bad', v))
        v6 = (f[ip] >> 4) == 6
        cases.append(('%s: IP destination flipped (AAD)' % v['name'], flip(f, ip + (39 if v6 else 19)), 'bad', v))
        cases.append(('%s: 4 bytes after IP flipped (AAD)' % v['name'], flip(f, l4 + 1), 'bad', v))
        g = bytearray(f)
        if v6:  # traffic class (DSCP, ECN) in bits 4..11, hop limit in byte 7
            g[ip + 7] = 7
            tc = ((g[ip] & 0x0F) << 4 | g[ip + 1] >> 4) ^ 0xAB
            g[ip] = (g[ip] & 0xF0) | tc >> 4
            g[ip + 1] = (tc & 0x0F) << 4 | (g[ip + 1] & 0x0F)
        else:
            g[ip + 8] = 7  # TTL
            g[ip + 1] = (10 << 2) | (g[ip + 1] & 3) ^ 3  # DSCP 10, ECN changed
        cases.append(('%s: DSCP, ECN, TTL changed (outside the AAD)' % v['name'], bytes(harness.fix_lengths(g)),
                      'good', v))
    # §5.5: a trimmed request, and DSCP 45 on a frame nobody cut.
    req = by_name.get('uet_tss_rud_req_std') or sealed[0]
    tss, ct = sealed_offsets(req['frame'])
    _, _, l4 = harness.ip_offsets(req['frame'])
    cut = ct + TRIM_KEEP
    if cut >= len(req['frame']) - 16:
        harness.fail('%s is too short to trim' % req['name'])
    trimmed = bytes(harness.fix_lengths(req['frame'][:cut], cut - l4, dscp=TRIM_DSCP))
    cases.append(('%s: trimmed to TSS + %d' % (req['name'], TRIM_KEEP), trimmed, 'trimmed', req))
    cases.append(('%s: DSCP 45, not cut' % req['name'], bytes(harness.fix_lengths(req['frame'], dscp=TRIM_DSCP)),
                  'dscp45', req))
    cases.append(('%s: snapshot cuts the tag' % req['name'], (req['frame'][:cut], len(req['frame'])), 'snapshot',
                  req))

    key_lines = harness.tss_key_lines(sealed)
    with harness.Tshark(a.plugin, a.tshark, a.keep) as ts:
        ts.check_plugin_loaded()
        pcap = ts.write_pcap('tss.pcap', [c[1] for c in cases])
        keys = ts.write_file('keys.txt', '\n'.join(key_lines) + '\n')
        base = ['-n', '-r', pcap, '-T', 'json', '-d', 'ip.proto==253,uetref']
        no_key = harness.packets(ts.run(base).stdout)
        with_key = harness.packets(ts.run(base + ['-o', 'uetref.tss_key_file:' + keys]).stdout)
        # The two-pass run's file binds each domain to a job (spec/uet.md §5.7): read, and the
        # frames open as without it.
        keys_job = ts.write_file('keys_job.txt', '\n'.join(l + ' job=%d' % i for i, l in
                                                           enumerate(key_lines)) + '\n')
        two_pass = harness.packets(ts.run(base + ['-2', '-o', 'uetref.tss_key_file:' + keys_job]).stdout)
        verbose = ts.run(['-n', '-r', pcap, '-V', '-x', '-d', 'ip.proto==253,uetref', '-o',
                          'uetref.tss_key_file:' + keys]).stdout

        # The wrong key, and the right key in the wrong mode, for every domain.
        wrong = []
        for line in key_lines:
            f = dict(kv.split('=') for kv in line.split())
            wrong.append(line.replace(f['key'], f['key'][::-1]))
        wrong_key = harness.packets(ts.run(base + ['-o', 'uetref.tss_key_file:' + ts.write_file(
            'wrong_key.txt', '\n'.join(wrong) + '\n')]).stdout)
        swapped = [l.replace('mode=cluster', 'mode=X').replace('mode=direct', 'mode=cluster').replace('mode=X', 'mode=direct')
                   .replace('mode=server', 'mode=cluster') for l in key_lines]
        wrong_mode = harness.packets(ts.run(base + ['-o', 'uetref.tss_key_file:' + ts.write_file(
            'wrong_mode.txt', '\n'.join(swapped) + '\n')]).stdout)

        # A key file with problems around the good lines.
        messy = ts.write_file('messy.txt', '\n'.join(
            ['# comment line', '', 'sdi=1 an=2 mode=cluster key=' + '00' * 32, 'nonsense',
             'sdi=5 an=0 mode=cluster key=abc   # short key', 'sdi=6 an=0 mode=client key=' + '11' * 32,
             'sdi=7 an=0 mode=direct key=%s colour=blue' % ('22' * 32)] + key_lines + key_lines[:1]) + '\n')
        messy_run = ts.run(base + ['-o', 'uetref.tss_key_file:' + messy])
        messy_pkts = harness.packets(messy_run.stdout)
        missing = harness.packets(ts.run(base + ['-o', 'uetref.tss_key_file:' + ts.path('no-such-file')]).stdout)

        # Server mode (§5.3): the client's own lines, after another client's; that one alone.
        server_vs = [v for v in sealed if v['tss_mode'] == 'server']
        if len(server_vs) < 2:
            harness.fail('fewer than two server-mode vectors (both directions) in %s/vectors' % a.spec)
        client_lines, other_lines = [], []
        for v in server_vs:
            sdi, an = harness.tss_domain(v)
            line = 'sdi=%d an=%d mode=client key=%s iv_mask=%s' % (sdi, an, v['tss_client_key'],
                                                                   v['tss_client_iv_mask'])
            other = line.replace(v['tss_client_key'], v['tss_client_key'][::-1])
            if line not in client_lines:
                client_lines.append(line)
                other_lines.append(other)
        as_client = harness.packets(ts.run(base + ['-o', 'uetref.tss_key_file:' + ts.write_file(
            'client.txt', '\n'.join(other_lines + client_lines) + '\n')]).stdout)
        other_client = harness.packets(ts.run(base + ['-o', 'uetref.tss_key_file:' + ts.write_file(
            'other_client.txt', '\n'.join(other_lines) + '\n')]).stdout)

    if not (len(no_key) == len(with_key) == len(two_pass) == len(wrong_key) == len(wrong_mode) == len(cases)):
        harness.fail('%d cases, but tshark showed %d/%d/%d/%d/%d frames' % (
            len(cases), len(no_key), len(with_key), len(two_pass), len(wrong_key), len(wrong_mode)))

    def check_sealed_only(label, p, status, expert):
        ours = p.get('uetref', {})
        if pds_fields(ours):
            err('%s: shows %s from ciphertext' % (label, pds_fields(ours)[:4]))
        if ours.get('uetref.tss.tag_status') != [status]:
            err('%s: tag status %s, expected %s' % (label, ours.get('uetref.tss.tag_status'), status))
        if expert not in ours:
            err('%s: no %s (experts: %s)' % (label, expert, ours.get('_ws.expert.message')))
        if 'uetref.tss.ciphertext' not in ours:
            err('%s: no uetref.tss.ciphertext' % label)
        if 'data.data' in p['*']:
            err('%s: ciphertext passed on as data: %s' % (label, p['*']['data.data'][0][:40]))

    def check_opened(label, p, v, status, unverified=False):
        ours = p.get('uetref', {})
        if ours.get('uetref.tss.tag_status') != [status]:
            err('%s: tag status %s, expected %s (experts: %s)' % (label, ours.get('uetref.tss.tag_status'), status,
                                                                ours.get('_ws.expert.message')))
        for bad in ('uetref.expert.tss_bad_tag', 'uetref.expert.tss_no_key'):
            if bad in ours:
                err('%s: shows %s' % (label, bad))
        if unverified != ('uetref.expert.tss_unverified' in ours):
            err('%s: uetref.expert.tss_unverified %s' % (label, 'missing' if unverified else 'shown'))
        for hid, field, value in v['expect']:
            if hid not in spec.headers or hid.startswith('tss') or not spec.shown(hid, field, {
                    k: val for h, k, val in v['expect'] if h == hid}):
                continue
            got = ours.get(spec.abbrev(hid, field))
            if unverified and not got:
                continue  # past the trim: the headers in the kept bytes are checked below
            if not got or not any(harness.same_value(value, g, spec.row(hid, field)['kind']) for g in got):
                err('%s: %s = %s, expected %s' % (label, spec.abbrev(hid, field), got, value))
        if not pds_fields(ours):
            err('%s: no PDS fields' % label)

    n = {'good': 0, 'bad': 0, 'trimmed': 0, 'dscp45': 0, 'snapshot': 0}
    for (label, frame, kind, v), p0, p1, p2, pw, pm in zip(cases, no_key, with_key, two_pass, wrong_key, wrong_mode):
        n[kind] += 1
        data = frame if isinstance(frame, bytes) else frame[0]
        # Without keys nothing is decrypted; a trimmed frame has no tag to show.
        # With the trimmed DSCP, only the key can tell whether the tag is there.
        check_sealed_only(label + ' [no key]', p0, '3' if kind in ('trimmed', 'dscp45') else '2',
                          'uetref.expert.tss_no_key')
        if kind in ('trimmed', 'dscp45'):
            if 'uetref.tss.tag' in p0.get('uetref', {}):
                err('%s [no key]: a trimmed frame shows a tag' % label)
        elif kind != 'snapshot' and p0.get('uetref', {}).get('uetref.tss.tag', [''])[0].replace(':', '') != \
                data[-16:].hex():
            err('%s [no key]: uetref.tss.tag %s is not the last 16 bytes' % (label, p0['uetref'].get('uetref.tss.tag')))
        if kind in ('good', 'dscp45'):
            check_opened(label, p1, v, '1')
        elif kind == 'bad':
            check_sealed_only(label, p1, '0', 'uetref.expert.tss_bad_tag')
        elif kind == 'trimmed':
            check_opened(label, p1, v, '3', unverified=True)
            ours = p1.get('uetref', {})
            if ours.get('uetref.analysis.trimmed') is None:
                err('%s: no uetref.analysis.trimmed' % label)
            for hid in ('pds_rud_rod', 'ses_std'):
                for f, val in [(k, x) for h, k, x in v['expect'] if h == hid]:
                    got = ours.get(spec.abbrev(hid, f))
                    if spec.shown(hid, f, {k: x for h, k, x in v['expect'] if h == hid}) and not (
                            got and any(harness.same_value(val, g, spec.row(hid, f)['kind']) for g in got)):
                        err('%s: %s = %s, expected %s' % (label, spec.abbrev(hid, f), got, val))
        elif kind == 'snapshot':
            check_opened(label, p1, v, '2', unverified=True)
        for k in ('uetref.tss.tag_status', 'uetref.pds.psn', 'uetref.pds.type', 'uetref.pdc'):
            if p1.get('uetref', {}).get(k) != p2.get('uetref', {}).get(k):
                err('%s: %s differs between one pass and two' % (label, k))
        if kind == 'good':
            check_sealed_only(label + ' [wrong key]', pw, '0', 'uetref.expert.tss_bad_tag')
            check_sealed_only(label + ' [wrong mode]', pm, '0', 'uetref.expert.tss_bad_tag')

    # Server mode: the server's key names the client either way; the client's key opens both.
    n_server = 0
    for (label, _frame, kind, v), p1, pc, po in zip(cases, with_key, as_client, other_client):
        if v['tss_mode'] != 'server' or kind != 'good':
            continue
        n_server += 1
        if p1.get('uetref', {}).get('uetref.tss.client') != [v['tss_client']]:
            err('%s: uetref.tss.client %s, expected %s' % (label, p1.get('uetref', {}).get('uetref.tss.client'),
                                                           v['tss_client']))
        check_opened(label + ' [client key]', pc, v, '1')
        if pc.get('uetref', {}).get('uetref.tss.key_line') != [str(len(other_lines) + 1)] or \
                pc.get('uetref', {}).get('uetref.tss.mode') != ['3']:
            err('%s [client key]: key line %s mode %s, expected line %d mode 3' % (
                label, pc.get('uetref', {}).get('uetref.tss.key_line'), pc.get('uetref', {}).get('uetref.tss.mode'),
                len(other_lines) + 1))
        check_sealed_only(label + " [another client's key]", po, '0', 'uetref.expert.tss_bad_tag')
    if n_server < 4:
        err('%d server-mode frames opened good, expected at least 4' % n_server)

    # The key file with problems: every problem counted, the first one named, good lines used.
    for label, p in zip([c[0] for c in cases], messy_pkts):
        ours = p.get('uetref', {})
        msgs = [m for m in ours.get('_ws.expert.message', []) if 'TSS key file' in m]
        if 'uetref.expert.tss_key_file' not in ours or not msgs or '6 problem(s)' not in msgs[0] or \
                'line 3' not in msgs[0]:
            err('%s [messy key file]: key file expert %s' % (label, msgs))
            break
    for (label, _frame, kind, v), p in zip(cases, messy_pkts):
        if kind in ('good', 'dscp45') and p.get('uetref', {}).get('uetref.tss.tag_status') != ['1']:
            err('%s [messy key file]: the good lines do not open it' % label)
    for want in ('line 4: expected name=value pairs', 'line 5: key must be 64 hex digits',
                 'line 6: iv_mask= missing (mode=client)',
                 'line 7: unknown name "colour"', 'line 3: an must be 0 or 1', 'already has a key'):
        if want not in messy_run.stderr:
            err('messy key file: no warning with "%s" on stderr' % want)
    p = missing[0].get('uetref', {})
    if not any('cannot be read' in m for m in p.get('_ws.expert.message', [])):
        err('missing key file: no expert info saying it cannot be read (%s)' % p.get('_ws.expert.message'))
    check_sealed_only(cases[0][0] + ' [missing key file]', missing[0], '2', 'uetref.expert.tss_no_key')

    # No key, in any spelling, anywhere in the output.
    flat = verbose.lower().replace(':', '').replace(' ', '')
    for line in key_lines + client_lines:
        key = dict(kv.split('=') for kv in line.split())['key']
        if key in flat or key[:16] in flat:
            err('a key from the key file shows in tshark -V -x output')

    print('%d sealed vectors: %d intact or changed outside the AAD, %d with a flipped byte, %d trimmed, '
          '%d with DSCP 45 but whole, %d cut by the snapshot; without keys, with keys, two-pass, wrong key, '
          'wrong mode, messy key file' % (len(sealed), n['good'], n['bad'], n['trimmed'], n['dscp45'], n['snapshot']))
    harness.verdict(errors, 'TSS mismatches',
                    'sealed frames open with their keys, stay sealed without, and a changed byte is caught')


if __name__ == '__main__':
    main()
