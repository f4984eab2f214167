#!/usr/bin/env python3
"""Writes libFuzzer seed corpora from the golden vectors: one file per vector.
  make_corpus.py spec/vectors OUT_DIR
OUT_DIR/frames/ holds raw frames (decode_frame_fuzz); OUT_DIR/sequences/ the same frames with
the two-byte length prefix the receive-path targets read (uet_rx_fuzz, roce_rx_fuzz).
"""
import os
import sys


def main():
    src, out = sys.argv[1], sys.argv[2]
    frames = os.path.join(out, 'frames')
    seqs = os.path.join(out, 'sequences')
    os.makedirs(frames, exist_ok=True)
    os.makedirs(seqs, exist_ok=True)
    n = 0
    for name in sorted(os.listdir(src)):
        if not name.endswith('.vec'):
            continue
        hexstr = ''.join(line[len('frame:'):] for line in open(os.path.join(src, name))
                         if line.startswith('frame:'))
        data = bytes.fromhex(''.join(hexstr.split()))
        base = name[:-len('.vec')]
        open(os.path.join(frames, base), 'wb').write(data)
        open(os.path.join(seqs, base), 'wb').write(len(data).to_bytes(2, 'big') + data)
        n += 1
    print('%d seeds in %s' % (n, out))


if __name__ == '__main__':
    main()
