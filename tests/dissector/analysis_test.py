#!/usr/bin/env python3
"""The analysis the plugin adds, on a capture built from golden-vector frames edited field by
field (through the spec tables):

* one PDC per SPDCID/DPDCID pair, the SYN form joined to the PDC the target's first ACK names;
* retransmissions (RETX and duplicate PSNs), the request an ACK or NACK names, NACK expert info;
* trimmed requests (spec/uet.md §3.14), by DSCP 45 and by a short SOM=0 payload, also in the
  IP-only form; a short payload that is not a trim is a length error instead;
* the ACK_CC SACK bitmap as SACKed PSNs and gaps, ACK PSN, clear PSN and start PSN;
* a PSN beyond the window the last ACK_CC advertised; EV counts per PDC direction, per packet
  and in the statistics tree (-z uetref_ev,tree);
* the same results in one pass and two (-2).
"""
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import harness  # noqa: E402


def main():
    a = harness.args_parser(__doc__).parse_args()
    spec = harness.SpecIndex(a.spec)
    vec = {v['name']: v for v in harness.read_vectors(a.spec)}

    def edit(name, hid, dscp=None, keep_payload=None, sport=None, **fields):
        f = bytearray(vec[name]['frame'])
        _, _, l4 = harness.ip_offsets(f)
        base = l4 + (4 if f[harness.ip_offsets(f)[0] + 9] == 253 else 8)
        for k, val in fields.items():
            harness.put_field(f, base, spec.row(hid, k), val)
        if sport is not None:
            f[l4:l4 + 2] = sport.to_bytes(2, 'big')
        if keep_payload is not None:
            f = f[:len(f) - len(vec[name]['payload']) + keep_payload]
        return bytes(harness.fix_lengths(f, dscp=dscp))

    REQ = 'uet_rod_req_std_tsend_middle'  # ROD_REQ, SES standard SOM=0, payload_length 64
    P = 180150001
    frames = [
        edit(REQ, 'pds_rud_rod', retx=0, clear_psn_offset=0xFFF0),  # 1 original (clear PSN = P - 16)
        edit(REQ, 'pds_rud_rod', retx=1),                           # 2 RETX
        edit(REQ, 'pds_rud_rod', retx=0),                           # 3 duplicate without RETX
        edit(REQ, 'pds_rud_rod', retx=0, psn=P + 1, keep_payload=0, dscp=45),  # 4 trimmed, DSCP
        edit(REQ, 'pds_rud_rod', retx=0, psn=P + 2, keep_payload=0),  # 5 trimmed, no DSCP
        edit(REQ, 'pds_rud_rod', retx=0, psn=P + 3, keep_payload=10),  # 6 short: length error
        edit('uet_ack_cc_nscc', 'pds_ack_cc', spdcid=12289, dpdcid=4099, cack_psn=P, ack_psn_offset=0,
             sack_psn_offset=2, sack_bitmap=0b1001, mpr=128),       # 7 ACK_CC
        edit('uet_nack_trimmed', 'pds_nack', spdcid=12289, dpdcid=4099, nack_psn=P + 1),  # 8 NACK TRIMMED
        edit(REQ, 'pds_rud_rod', retx=0, psn=P + 300, sport=4242),  # 9 beyond CACK + MPR, new EV
        edit('uet_rud_req_syn_std_send', 'pds_rud_rod'),            # 10 SYN, PDC 561 -> ?
        edit('uet_ack_clear_req', 'pds_ack', spdcid=7777, dpdcid=561, cack_psn=2654435769,
             ack_psn_offset=0),                                     # 11 target's first ACK
        edit(REQ, 'pds_rud_rod', retx=0, spdcid=561, dpdcid=7777, psn=2654435770),  # 12 SYN cleared
        edit('uet_ip_only_rud_req', 'pds_rud_rod', dscp=45),        # 13 IP-only, trimmed DSCP
    ]
    with harness.Tshark(a.plugin, a.tshark, a.keep) as ts:
        ts.check_plugin_loaded()
        pcap = ts.write_pcap('analysis.pcap', frames)
        base = ['-n', '-r', pcap, '-T', 'json', '-d', 'ip.proto==253,uetref']
        one = harness.packets(ts.run(base).stdout)
        two = harness.packets(ts.run(base + ['-2']).stdout)
        stats = ts.run(['-n', '-q', '-r', pcap, '-z', 'uetref_ev,tree', '-d', 'ip.proto==253,uetref']).stdout

    errors = []
    u = [p.get('uetref', {}) for p in one]

    def want(i, field, values):
        got = u[i - 1].get(field)
        if [str(x) for x in values] != [str(int(g, 0)) if g[:1].isdigit() else g for g in (got or [])]:
            errors.append('frame %d: %s = %s, expected %s' % (i, field, got, values))

    def has(i, field, yes=True):
        if (field in u[i - 1]) != yes:
            errors.append('frame %d: %s %s' % (i, field, 'missing' if yes else 'present: %s'
                                                 % u[i - 1].get('_ws.expert.message')))

    pdc = u[0].get('uetref.pdc')
    for i in (1, 2, 3, 4, 5, 6, 7, 8, 9):
        want(i, 'uetref.pdc', [int(pdc[0])] if pdc else ['?'])
    want(1, 'uetref.pdc.initiator_pdcid', [4099])
    want(1, 'uetref.pdc.target_pdcid', [12289])
    want(1, 'uetref.pdc.direction', [0])
    want(7, 'uetref.pdc.direction', [1])
    has(1, 'uetref.analysis.retransmission', False)
    want(2, 'uetref.analysis.original_frame', [1])
    has(2, 'uetref.expert.retransmission')
    has(2, 'uetref.analysis.duplicate_psn')
    want(3, 'uetref.analysis.original_frame', [1])
    has(3, 'uetref.expert.duplicate_psn')
    for i in (4, 5, 13):
        want(i, 'uetref.analysis.trimmed', [1])
        has(i, 'uetref.expert.trimmed')
        has(i, 'uetref.expert.ses_length', False)
    has(6, 'uetref.expert.ses_length')
    has(6, 'uetref.analysis.trimmed', False)
    has(1, 'uetref.analysis.trimmed', False)
    want(7, 'uetref.analysis.acked_frame', [1])
    want(7, 'uetref.pds.ack_psn', [P])
    want(7, 'uetref.pds.sack.base', [P + 2])
    want(7, 'uetref.pds.sack.psn', [P + 2, P + 5])
    want(7, 'uetref.pds.sack.gap', [P + 1, P + 3, P + 4])
    want(7, 'uetref.pds.sack.count', [2])
    want(7, 'uetref.pds.sack.gaps', [3])
    has(7, 'uetref.expert.sack_gap')
    want(8, 'uetref.analysis.nacked_frame', [4])
    has(8, 'uetref.expert.nack')
    has(9, 'uetref.analysis.out_of_window')
    has(1, 'uetref.analysis.out_of_window', False)
    want(1, 'uetref.analysis.ev_count', [1])
    want(3, 'uetref.analysis.ev_packets', [3])
    want(9, 'uetref.analysis.ev_count', [2])
    want(1, 'uetref.pds.clear_psn', [P - 16])
    want(10, 'uetref.pds.start_psn', [2654435769 - 42])
    has(10, 'uetref.pds.dpdcid', False)
    syn_pdc = u[9].get('uetref.pdc')
    if syn_pdc == pdc:
        errors.append('frame 10: the SYN PDC is the same as the first one')
    for i in (10, 11, 12):
        want(i, 'uetref.pdc', [int(syn_pdc[0])] if syn_pdc else ['?'])
    want(10, 'uetref.pdc.initiator_pdcid', [561])
    want(11, 'uetref.pdc.target_pdcid', [7777])
    want(12, 'uetref.pdc.target_pdcid', [7777])
    want(11, 'uetref.analysis.acked_frame', [10])

    # The statistics tree: packets per EV for each PDC direction (tshark -z uetref_ev,tree).
    counts, node = {}, None
    for line in stats.splitlines():
        m = re.match(r'^ (PDC \d+ .*?\))\s+(\d+)', line)
        if m:
            node = m.group(1)
            counts[node] = {'*': int(m.group(2))}
        m = re.match(r'^  (EV 0x[0-9a-f]+)\s+(\d+)', line)
        if m and node:
            counts[node][m.group(1)] = int(m.group(2))
    name = "PDC %s initiator to target (initiator's PDC ID 4099)" % (pdc[0] if pdc else '?')
    if counts.get(name) != {'*': 7, 'EV 0xc1c2': 6, 'EV 0x1092': 1}:
        errors.append('statistics tree: %s = %s (all: %s)' % (name, counts.get(name), sorted(counts)))

    keys = ('uetref.pdc', 'uetref.analysis.original_frame', 'uetref.analysis.acked_frame',
            'uetref.analysis.nacked_frame', 'uetref.analysis.out_of_window', 'uetref.analysis.ev_count')
    for i, (x, y) in enumerate(zip(one, two), 1):
        for k in keys:
            if x.get('uetref', {}).get(k) != y.get('uetref', {}).get(k):
                errors.append('frame %d: %s differs between one pass and two' % (i, k))

    harness.verdict(errors, 'analysis mismatches',
                    'PDC pairing, retransmissions, trims, SACK, ACK/NACK links, window and EV counts '
                    '(%d frames)' % len(frames))


if __name__ == '__main__':
    main()
