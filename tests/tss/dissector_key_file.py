#!/usr/bin/env python3
"""Writes the TSS key file the dissector's vector test gives tshark (tests/dissector/
vectors_test.py: harness.tss_key_file_text() of the golden vectors), so key_file_test can
check that transport/tss reads the same file.

    dissector_key_file.py SPEC_DIR OUT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'dissector'))
import harness  # noqa: E402


def main():
    spec, out = sys.argv[1], sys.argv[2]
    vectors = harness.read_vectors(spec)
    with open(out, 'w') as f:
        f.write(harness.tss_key_file_text(vectors))
    return 0


if __name__ == '__main__':
    sys.exit(main())
