"""Shared by the dissector tests: runs tshark with the uetref plugin, writes pcaps, reads the
golden vectors and tshark's JSON.

tshark ignores the personal plugin folder and WIRESHARK_PLUGIN_DIR when it runs as root (it
treats root as "special privileges"). So the plugin is copied into the personal folder of a
temporary HOME that any user can read, and, when we are root, tshark runs as nobody through
setpriv. The built-in dissectors (Ethernet, IP, UDP, InfiniBand) are part of libwireshark and
are there either way.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import spec_tables  # noqa: E402


def fail(msg):
    print('FAIL: ' + msg, file=sys.stderr)
    sys.exit(1)


def verdict(errors, what, passed, most=None):
    """Fails with the count of `what` when there are errors (the first `most` printed), else
    prints the PASS line."""
    if errors:
        for e in errors[:most]:
            print('  ' + e, file=sys.stderr)
        fail('%d %s' % (len(errors), what))
    print('PASS: ' + passed)


def args_parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument('--plugin', required=True, help='the built uetref.so')
    p.add_argument('--spec', required=True, help='the spec/ folder')
    p.add_argument('--wire-ab', help='build/bin/uet-wire-ab')
    p.add_argument('--tshark', default=shutil.which('tshark') or 'tshark')
    p.add_argument('--keep', action='store_true', help='keep the temporary folder')
    return p


class Tshark:
    """tshark with the plugin in the personal plugin folder of a throw-away HOME."""

    def __init__(self, plugin, tshark='tshark', keep=False):
        self.tshark = tshark
        self.keep = keep
        self.tmp = tempfile.mkdtemp(prefix='uetref-dissector-')
        os.chmod(self.tmp, 0o755)
        # The plugin is built into <dir>/<major>.<minor>/epan/uetref.so; keep that release.
        release = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(plugin))))
        self.home = os.path.join(self.tmp, 'home')
        epan = os.path.join(self.home, '.local', 'lib', 'wireshark', 'plugins', release, 'epan')
        os.makedirs(epan)
        shutil.copy(plugin, os.path.join(epan, 'uetref.so'))
        self.config = os.path.join(self.tmp, 'config')  # no user preferences
        os.makedirs(self.config)
        for root, dirs, files in os.walk(self.tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)

    def close(self):
        if self.keep:
            print('kept ' + self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def run(self, args, check=True, stdout=subprocess.PIPE):
        env = dict(os.environ)
        env.update(HOME=self.home, WIRESHARK_CONFIG_DIR=self.config, WIRESHARK_ABORT_ON_DISSECTOR_BUG='1',
                   LC_ALL='C.UTF-8')
        env.pop('WIRESHARK_PLUGIN_DIR', None)
        cmd = [self.tshark] + list(args)
        if os.geteuid() == 0:
            cmd = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups'] + cmd
        p = subprocess.run(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE, universal_newlines=True)
        if 'Dissector bug' in (p.stderr or '') or (isinstance(p.stdout, str) and '[Dissector bug' in p.stdout):
            fail('tshark reports a dissector bug: %s\n%s' % (' '.join(args), p.stderr[-2000:]))
        if check and p.returncode != 0:
            fail('tshark %s exited with %d\n%s' % (' '.join(args), p.returncode, p.stderr[-2000:]))
        return p

    def check_plugin_loaded(self):
        out = self.run(['-G', 'plugins']).stdout
        if 'uetref.so' not in out:
            fail('tshark did not load uetref.so (running as root ignores personal plugins):\n' + out)

    def write_file(self, name, text):
        """A file tshark (perhaps running as nobody) can read."""
        path = self.path(name)
        with open(path, 'w') as f:
            f.write(text)
        os.chmod(path, 0o644)
        return path

    def simulated_pcaps(self, ab):
        """A small simulated run's pcaps (uet-ab --pcap: 3 scenarios x 2 transports x tx/rx)
        in a folder tshark can read; returns their paths, sorted."""
        out = self.path('sim')
        os.makedirs(out)
        subprocess.run([ab, '--leaves=2', '--hosts_per_leaf=4', '--spines=2', '--fan_in=4',
                        '--bytes=65536', '--pcap=' + out], check=True, stdout=subprocess.DEVNULL)
        os.chmod(out, 0o755)
        paths = [os.path.join(out, n) for n in sorted(os.listdir(out))]
        for path in paths:
            os.chmod(path, 0o644)
        return paths

    def write_pcap(self, name, frames):
        """frames: bytes, or (captured bytes, original length) pairs. Linktype Ethernet."""
        path = self.path(name)
        with open(path, 'wb') as f:
            f.write(struct.pack('<IHHiIII', 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
            for i, fr in enumerate(frames):
                data, orig = (fr, len(fr)) if isinstance(fr, (bytes, bytearray)) else fr
                f.write(struct.pack('<IIII', i // 1000000, i % 1000000, len(data), orig))
                f.write(bytes(data))
        os.chmod(path, 0o644)
        return path


# ---------------------------------------------------------------- vectors
def read_vector(path):
    v = dict(name=os.path.basename(path)[:-4], frame=b'', expect=[], error='ok', payload=None, tss_key=None,
             tss_mode=None, tss_client=None, tss_client_key=None, tss_client_iv_mask=None)
    hexs = ''
    for line in open(path):
        line = line.rstrip('\n')
        if not line or line.startswith('#'):
            continue
        key, _, val = line.partition(':')
        val = val.strip()
        if key == 'frame':
            hexs += val.replace(' ', '')
        elif key == 'expect':
            name, _, value = val.partition('=')
            name, value = name.strip(), value.strip()
            if name == 'payload':
                v['payload'] = bytes.fromhex(value)
            else:
                hdr, _, field = name.partition('.')
                v['expect'].append((hdr, field, value))
        elif key == 'error':
            v['error'] = val
        elif key in ('tss_key', 'tss_mode', 'tss_client', 'tss_client_key', 'tss_client_iv_mask'):  # uet.md §5
            v[key] = val
        elif key == 'name':
            v['vname'] = val
    v['frame'] = bytes.fromhex(hexs)
    return v


def read_vectors(spec_dir):
    vdir = os.path.join(spec_dir, 'vectors')
    return [read_vector(os.path.join(vdir, f)) for f in sorted(os.listdir(vdir)) if f.endswith('.vec')]


def tss_domain(v):
    """(sdi, an) of a sealed vector, from its expected TSS header fields."""
    f = {(h, k): val for h, k, val in v['expect']}
    hid = 'tss_sp' if ('tss_sp', 'sdi') in f else 'tss'
    return int(f[(hid, 'sdi')], 0), int(f[(hid, 'an')], 0)


def tss_key_lines(vectors):
    """The uetref.tss_key_file lines that open every sealed vector (dissector/README.md)."""
    keys = {}
    for v in vectors:
        if v['tss_key'] is None:
            continue
        dom, k = tss_domain(v), (v['tss_key'], v['tss_mode'])
        if keys.setdefault(dom, k) != k:
            fail('%s: sdi %d an %d has two keys among the vectors' % (v['name'], dom[0], dom[1]))
    return ['sdi=%d an=%d mode=%s key=%s' % (sdi, an, mode, key) for (sdi, an), (key, mode) in sorted(keys.items())]


def tss_key_file_text(vectors):
    """The key file vectors_test.py gives tshark; tests/tss/key_file_test.cc reads it too."""
    return '\n'.join(['# sdi/an of each sealed vector and its key'] + tss_key_lines(vectors)) + '\n'


class SpecIndex:
    """Header id -> (header, filter name prefix), from both tables."""

    def __init__(self, spec_dir):
        self.uet, self.roce = spec_tables.load(spec_dir)
        self.headers = {}
        for d, pfx in ((self.uet, 'uetref.'), (self.roce, 'uetref.rocev2.')):
            for h in d.headers:
                self.headers[h['id']] = (h, pfx + h['prefix'], d)

    def abbrev(self, hid, field):
        return self.headers[hid][1] + '.' + field

    def row(self, hid, field):
        for r in self.headers[hid][0]['fields']:
            if r['name'] == field:
                return r
        return None

    def shown(self, hid, field, values):
        """Whether the dissector shows a row, given the header's values {field: str}."""
        cond = spec_tables.overlay_condition(self.row(hid, field))
        if not cond:
            return True
        cfield, token = cond
        crow = self.row(hid, cfield)
        if token[0].isdigit():
            want = int(token, 0)
        else:
            d = self.headers[hid][2]
            want = [v['value'] for v in d.value_tables[crow['vals']] if v['name'] == token][0]
        return int(values[cfield], 0) == want


# ------------------------------------------------------------------- json
class Obj(list):
    """A JSON object as its (key, value) pairs, so repeated keys survive."""


def parse_json(text):
    return json.loads(text, object_pairs_hook=Obj)


def flatten(node, out=None, key=None):
    """abbrev -> [values] for every field under node (subtree items count as present)."""
    if out is None:
        out = {}
    if isinstance(node, Obj):
        if key is not None:
            out.setdefault(key, [])
        for k, v in node:
            if isinstance(v, str):
                out.setdefault(k, []).append(v)
            else:
                flatten(v, out, k)
    elif isinstance(node, list):
        for e in node:
            if isinstance(e, str):
                out.setdefault(key, []).append(e)
            else:
                flatten(e, out, key)
    elif isinstance(node, str) and key is not None:
        out.setdefault(key, []).append(node)
    return out


def packets(text):
    """[{protocol filter name: flattened fields}] per frame, plus '*' for the whole frame."""
    out = []
    for pkt in parse_json(text):
        lay = dict(dict(pkt)['_source'])['layers']
        frame = {'*': flatten(lay)}
        for k, v in lay:
            frame[k] = flatten(v)
        out.append(frame)
    return out


def same_value(expected, got, kind):
    if kind == 'BYTES':
        return got.replace(':', '').lower() == expected.lower()
    if kind == 'FLAG':
        return {'1': 1, 'true': 1, '0': 0, 'false': 0}.get(got.lower(), -1) == int(expected, 0)
    try:
        return int(got, 0) == int(expected, 0)
    except ValueError:
        return False


# ------------------------------------------------------------- frame edits
def ip_offsets(frame):
    """(ip offset, ip version, l4 offset) of an Ethernet frame, one 802.1Q tag at most."""
    off = 12
    etype = struct.unpack('!H', frame[off:off + 2])[0]
    off += 2
    if etype == 0x8100:
        etype = struct.unpack('!H', frame[off + 2:off + 4])[0]
        off += 4
    if etype == 0x0800:
        return off, 4, off + (frame[off] & 0x0F) * 4
    return off, 6, off + 40


def ipv4_checksum(hdr):
    hdr = bytes(hdr) + b"\0" * (len(hdr) % 2)  # a header cut short (a fuzzed frame) sums padded
    s = 0
    for i in range(0, len(hdr), 2):
        if i == 10:
            continue
        s += (hdr[i] << 8) | hdr[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def fix_lengths(frame, new_l4_len=None, dscp=None):
    """Sets the IP payload (and UDP) length to new_l4_len, the DSCP, zeroes the UDP checksum,
    fixes the IPv4 header checksum. Returns a new bytearray."""
    f = bytearray(frame)
    ip, ver, l4 = ip_offsets(f)
    if new_l4_len is None:
        new_l4_len = len(f) - l4
    if ver == 4:
        ihl = (f[ip] & 0x0F) * 4
        struct.pack_into('!H', f, ip + 2, ihl + new_l4_len)
        if dscp is not None:
            f[ip + 1] = (dscp << 2) | (f[ip + 1] & 3)
        proto = f[ip + 9]
        struct.pack_into('!H', f, ip + 10, ipv4_checksum(f[ip:ip + ihl]))
    else:
        struct.pack_into('!H', f, ip + 4, new_l4_len)
        if dscp is not None:
            tc = (dscp << 2) | ((f[ip + 1] >> 4) & 3)
            f[ip] = 0x60 | (tc >> 4)
            f[ip + 1] = ((tc & 0x0F) << 4) | (f[ip + 1] & 0x0F)
        proto = f[ip + 6]
    if proto == 17:
        struct.pack_into('!H', f, l4 + 4, new_l4_len)
        struct.pack_into('!H', f, l4 + 6, 0)
    return f


def put_field(frame, base, row, value):
    """Writes one table row (big-endian, masked) into frame at header offset base."""
    off, w = base + row['offset'], row['width']
    word = int.from_bytes(frame[off:off + w], 'big')
    mask = row['mask'] or (1 << (8 * w)) - 1
    shift = (mask & -mask).bit_length() - 1
    word = (word & ~mask) | ((value << shift) & mask)
    frame[off:off + w] = word.to_bytes(w, 'big')


def get_field(frame, base, row):
    off, w = base + row['offset'], row['width']
    word = int.from_bytes(frame[off:off + w], 'big')
    mask = row['mask'] or (1 << (8 * w)) - 1
    shift = (mask & -mask).bit_length() - 1
    return (word & mask) >> shift
