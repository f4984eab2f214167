#!/usr/bin/env python3
"""tshark -G fields lists every field of every spec table under uetref., typed as spec/README.md
says (FT type from width and kind, bitmask from the mask column), once per (prefix, name), with
the names of its value table; the protocols do not clash with Wireshark's own "uet".

The expectations come from parsing spec/*.def as text (spec_tables.py), not from the plugin.
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import harness  # noqa: E402

UINT = {1: 'FT_UINT8', 2: 'FT_UINT16', 3: 'FT_UINT24', 4: 'FT_UINT32', 5: 'FT_UINT40', 6: 'FT_UINT48',
        7: 'FT_UINT56', 8: 'FT_UINT64'}
INT = {w: t.replace('UINT', 'INT') for w, t in UINT.items()}


def expected_type(row):
    k, w = row['kind'], row['width']
    if k == 'BYTES':
        return 'FT_BYTES', ''
    if k == 'FLAG':
        return 'FT_BOOLEAN', str(8 * w)
    if k == 'SDEC':
        return INT[w], 'BASE_DEC'
    return UINT[w], 'BASE_DEC' if k == 'UDEC' else 'BASE_HEX'


def main():
    a = harness.args_parser(__doc__).parse_args()
    spec = harness.SpecIndex(a.spec)
    with harness.Tshark(a.plugin, a.tshark, a.keep) as ts:
        ts.check_plugin_loaded()
        fields = {}
        for line in ts.run(['-G', 'fields']).stdout.splitlines():
            c = line.split('\t')
            if c[0] == 'F' and c[2].startswith('uetref'):
                fields.setdefault(c[2], []).append(dict(name=c[1], type=c[3], proto=c[4], base=c[5],
                                                        mask=int(c[6], 16)))
        values = {}
        for line in ts.run(['-G', 'values']).stdout.splitlines():
            c = line.split('\t')
            if c[0] == 'V' and c[1].startswith('uetref'):
                values.setdefault(c[1], {})[int(c[2], 0)] = c[3]
        protocols = [l.split('\t') for l in ts.run(['-G', 'protocols']).stdout.splitlines()]

    errors = []
    # (prefix, name) -> rows sharing it, across headers.
    slots = {}
    for hid, (h, prefix, d) in spec.headers.items():
        for r in h['fields']:
            slots.setdefault(prefix + '.' + r['name'], []).append((hid, r, d))
    for abbrev, rows in sorted(slots.items()):
        regs = fields.get(abbrev)
        if not regs:
            errors.append('%s (%s) is not registered' % (abbrev, ', '.join(h for h, _, _ in rows)))
            continue
        if len(regs) != 1:
            errors.append('%s is registered %d times, expected one hf per (prefix, name)' % (abbrev, len(regs)))
        reg = regs[0]
        hid, row, d = rows[0]
        ftype, base = expected_type(row)
        if reg['type'] != ftype or reg['base'] != base:
            errors.append('%s: %s %s, expected %s %s (%s.%s %s, width %d)' % (abbrev, reg['type'], reg['base'], ftype,
                                                                            base, hid, row['name'], row['kind'],
                                                                            row['width']))
        masks = {r['mask'] for _, r, _ in rows}
        want_mask = row['mask'] if len(masks) == 1 and row['kind'] != 'BYTES' else 0
        if reg['mask'] != want_mask:
            errors.append('%s: bitmask 0x%x, expected 0x%x' % (abbrev, reg['mask'], want_mask))
        want_proto = 'uetref.rocev2' if abbrev.startswith('uetref.rocev2.') else 'uetref'
        if reg['proto'] != want_proto:
            errors.append('%s: registered under %s, expected %s' % (abbrev, reg['proto'], want_proto))
        if row['vals'] != 'none' and row['width'] <= 4 and row['kind'] not in ('FLAG', 'BYTES'):
            got = values.get(abbrev, {})
            for v in d.value_tables[row['vals']]:
                if got.get(v['value']) != v['name']:
                    errors.append('%s: value %d should read %s, reads %s' % (abbrev, v['value'], v['name'],
                                                                            got.get(v['value'])))
    ours = [p for p in protocols if len(p) == 3 and p[2] in ('uetref', 'uetref.rocev2')]
    if sorted(p[2] for p in ours) != ['uetref', 'uetref.rocev2']:
        errors.append('protocols uetref and uetref.rocev2 not both registered: %s' % ours)
    if any(p[2] == 'uet' or p[1] == 'UET' for p in ours):
        errors.append('a protocol name clashes with Wireshark\'s "uet"')

    n_rows = sum(len(h['fields']) for h, _, _ in spec.headers.values())
    print('%d spec rows in %d headers -> %d distinct fields; tshark lists %d uetref fields in total'
          % (n_rows, len(spec.headers), len(slots), len(fields)))
    harness.verdict(errors, 'field registration problems',
                    'every spec field is registered once, with its type, mask and value names')


if __name__ == '__main__':
    main()
