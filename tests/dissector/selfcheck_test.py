#!/usr/bin/env python3
"""The plugin refuses to register when the code reads a field by name that no header of
spec/uet.def or spec/rocev2.def has (a renamed .def row would otherwise read as 0 everywhere).

The self-check build of the plugin (dissector/CMakeLists.txt: uetref_selfcheck) is the plugin
with one such name added. Asserts: tshark loading it exits non-zero and names the field on
stderr; the real plugin, loaded the same way, registers (tshark -G plugins lists it).
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import harness  # noqa: E402

MISSING = 'no_such_field'  # dissector/CMakeLists.txt: UETREF_MISSING_NAME_PROBE


def main():
    p = harness.args_parser(__doc__)
    p.add_argument('--selfcheck-plugin', required=True, help='the self-check build of uetref.so')
    a = p.parse_args()
    with harness.Tshark(a.plugin, a.tshark, a.keep) as t:
        t.check_plugin_loaded()
    with harness.Tshark(a.selfcheck_plugin, a.tshark, a.keep) as t:
        r = t.run(['-G', 'plugins'], check=False)
        if r.returncode == 0:
            harness.fail('tshark registered a plugin that reads a field no header has')
        if MISSING not in r.stderr or 'no header' not in r.stderr:
            harness.fail('tshark stopped (exit %d) without naming the field:\n%s' %
                         (r.returncode, r.stderr[-2000:]))
        print('OK: registration refused: ' + r.stderr.strip().splitlines()[-1])


if __name__ == '__main__':
    main()
