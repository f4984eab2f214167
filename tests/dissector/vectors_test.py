#!/usr/bin/env python3
"""Every golden vector (spec/vectors/*.vec), decoded by tshark with the plugin (-T json):

* ok vectors: every `expect:` field of a UET or RoCEv2 header shows its value under
  uetref.<prefix>.<field> (uetref.rocev2.<prefix>.<field>); an overlay row whose condition does
  not hold (spec/uet.md §1.3) is absent instead; the payload length (and bytes) match; none of
  our malformed/protocol-error expert infos appear; RoCEv2 frames show ICRC status Good and
  InfiniBand's own BTH fields; CNPs show the throttled QP and BECN.
* sealed vectors (spec/uet.md §5, `tss_key:` and `tss_mode:` lines): opened with a key file made
  from those lines (uetref.tss_key_file), the tag Good, and every `expect:` field of the
  plaintext checked as for clear frames;
* negative vectors: the expert info (or checksum status) for their error, and no crash.

All vectors go into one pcap and one tshark run.
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import harness  # noqa: E402

# The expert info (or field and value) each decoder error of spec/uet.md §6 and
# spec/rocev2.md §7 must produce.
ERROR_EXPERT = {
    'TruncatedUet': ('uetref', 'uetref.expert.truncated', None),
    'ReservedBitsSet': ('uetref', 'uetref.expert.reserved', None),
    'UnknownPdsType': ('uetref', 'uetref.expert.unknown_pds_type', None),
    'BadNextHeader': ('uetref', 'uetref.expert.bad_next_hdr', None),
    'UnknownSesOpcode': ('uetref', 'uetref.expert.unknown_ses_opcode', None),
    'BadSesLength': ('uetref', 'uetref.expert.ses_length', None),
    'BadIcrc': ('uetref.rocev2', 'uetref.rocev2.icrc.status', '0'),
    'BadPadCount': ('uetref.rocev2', 'uetref.rocev2.expert.bad_pad', None),
    'UnknownRoceOpcode': ('uetref.rocev2', 'uetref.rocev2.expert.unknown_opcode', None),
    'BadIpChecksum': ('ip', 'ip.checksum.status', '0'),
    'BadUdpChecksum': ('udp', 'udp.checksum.status', '0'),
}
# Expert infos that mean "malformed or not per spec"; an ok vector shows none of them.
BAD_EXPERTS = ['uetref.expert.' + n for n in (
    'truncated', 'snaplen', 'reserved', 'unknown_pds_type', 'enc_after_tss', 'bad_next_hdr', 'unknown_ctrl_type',
    'unknown_ses_opcode', 'bad_ses_version', 'bad_rsp_opcode', 'ses_length', 'trimmed', 'tss_bad_tag', 'tss_no_key',
    'tss_unverified', 'tss_short', 'tss_key_file', 'tss_crypto')] + [
    'uetref.rocev2.expert.' + n for n in ('truncated', 'snaplen', 'reserved', 'unknown_opcode', 'bad_tver', 'bad_pad',
                                          'unexpected_payload')] + ['uetref.rocev2.icrc.bad', '_ws.malformed']


def main():
    a = harness.args_parser(__doc__).parse_args()
    spec = harness.SpecIndex(a.spec)
    vectors = harness.read_vectors(a.spec)
    with harness.Tshark(a.plugin, a.tshark, a.keep) as ts:
        ts.check_plugin_loaded()
        pcap = ts.write_pcap('vectors.pcap', [v['frame'] for v in vectors])
        keys = ts.write_file('tss_keys.txt', harness.tss_key_file_text(vectors))
        out = ts.run(['-n', '-r', pcap, '-T', 'json', '-d', 'ip.proto==253,uetref', '-o', 'ip.check_checksum:TRUE',
                      '-o', 'udp.check_checksum:TRUE', '-o', 'uetref.tss_key_file:' + keys]).stdout
    pkts = harness.packets(out)
    if len(pkts) != len(vectors):
        harness.fail('%d vectors but %d decoded frames' % (len(vectors), len(pkts)))

    errors, checked, absent, n_ok, n_neg, n_sealed = [], 0, 0, 0, 0, 0
    for v, p in zip(vectors, pkts):
        err = lambda m: errors.append('%s: %s' % (v['name'], m))  # noqa: E731
        if v['error'] != 'ok':
            n_neg += 1
            if v['error'] not in ERROR_EXPERT:
                err('no expected expert info known for error %s' % v['error'])
                continue
            proto, field, value = ERROR_EXPERT[v['error']]
            got = p.get(proto, {}).get(field)
            if got is None or (value is not None and value not in got):
                err('error %s: expected %s%s in %s, got %s' % (v['error'], field, '' if value is None else '=' + value,
                                                             proto, got))
            continue
        n_ok += 1
        roce = any(h in spec.headers and h == 'bth' for h, _, _ in v['expect'])
        ours = p.get('uetref.rocev2' if roce else 'uetref')
        if ours is None:
            err('not decoded by the plugin (layers: %s)' % [k for k in p if k != '*'])
            continue
        by_hdr = {}
        for hid, field, value in v['expect']:
            by_hdr.setdefault(hid, {})[field] = value
        for hid, field, value in v['expect']:
            if hid not in spec.headers:
                continue  # Ethernet, IP, UDP: Wireshark's own dissectors
            abbrev = spec.abbrev(hid, field)
            row = spec.row(hid, field)
            got = ours.get(abbrev)
            if not spec.shown(hid, field, by_hdr[hid]):
                if got:  # another header of this frame may share the name; none does in the vectors
                    err('%s is an overlay whose condition does not hold, but shows %s' % (abbrev, got))
                absent += 1
                continue
            if not got:
                err('%s (%s.%s) missing' % (abbrev, hid, field))
            elif not any(harness.same_value(value, g, row['kind']) for g in got):
                err('%s = %s, expected %s' % (abbrev, got, value))
            checked += 1
        payload = v['payload'] or b''
        plen = ours.get('uetref.rocev2.payload_len' if roce else 'uetref.payload_len')
        if plen != [str(len(payload))]:
            err('payload length %s, expected %d' % (plen, len(payload)))
        if not roce and payload and p['*'].get('data.data', [''])[0].replace(':', '') != payload.hex():
            err('payload bytes differ: %s' % p['*'].get('data.data'))
        if v['tss_key'] is not None:
            n_sealed += 1
            if ours.get('uetref.tss.tag_status') != ['1']:
                err('TSS tag status %s, expected Good (1)' % ours.get('uetref.tss.tag_status'))
        for bad in BAD_EXPERTS:
            if bad in ours:
                err('shows %s: %s' % (bad, ours.get('_ws.expert.message')))
        if roce:
            if ours.get('uetref.rocev2.icrc.status') != ['1']:
                err('ICRC status %s, expected Good (1)' % ours.get('uetref.rocev2.icrc.status'))
            ib = p.get('infiniband', {})
            op = int(by_hdr['bth']['opcode'], 0)
            if [int(x, 0) for x in ib.get('infiniband.bth.opcode', [])] != [op]:
                err('infiniband.bth.opcode %s, expected %d' % (ib.get('infiniband.bth.opcode'), op))
            if [int(x, 0) for x in ib.get('infiniband.bth.psn', [])] != [int(by_hdr['bth']['psn'], 0)]:
                err('infiniband.bth.psn %s' % ib.get('infiniband.bth.psn'))
            if op == 0x81:
                qp = int(by_hdr['bth']['dest_qp'], 0)
                if [int(x, 0) for x in ours.get('uetref.rocev2.cnp.qp', [])] != [qp]:
                    err('CNP QP %s, expected 0x%06x' % (ours.get('uetref.rocev2.cnp.qp'), qp))
                if ours.get('uetref.rocev2.cnp.becn') != [by_hdr['bth']['becn']]:
                    err('CNP BECN %s' % ours.get('uetref.rocev2.cnp.becn'))
                if 'uetref.rocev2.expert.cnp' not in ours:
                    err('CNP without its expert note')

    print('%d ok vectors (%d sealed, opened): %d fields checked, %d overlays absent as they should be; '
          '%d negative vectors' % (n_ok, n_sealed, checked, absent, n_neg))
    harness.verdict(errors, 'mismatches',
                    'tshark shows every golden vector field; every negative vector gives its expert info')


if __name__ == '__main__':
    main()
