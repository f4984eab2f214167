"""Reads the spec/*.def X-macro tables with plain text parsing (independent of the C code).

Gives the headers (id, size, filter prefix, title), their field rows (with the macros they use
expanded), and the value tables, so the tests can name every field the dissector must show.
"""
import os
import re

_DEFINE = re.compile(r'^#define\s+(\w+)(?:\((\w+)\))?\s*(.*)$')
_CALL = re.compile(r'(\w+)\s*\(')


def _logical_lines(text):
    """Joins backslash-continued lines and drops C comments."""
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    out, cur = [], ''
    for line in text.split('\n'):
        if line.rstrip().endswith('\\'):
            cur += line.rstrip()[:-1] + ' '
            continue
        out.append(cur + line)
        cur = ''
    if cur:
        out.append(cur)
    return out


def _split_args(s):
    """Splits 'a, b, "c, d"' at top-level commas."""
    args, depth, cur, in_str = [], 0, '', False
    i = 0
    while i < len(s):
        c = s[i]
        if in_str:
            cur += c
            if c == '\\':
                cur += s[i + 1]
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            cur += c
        elif c in '([':
            depth += 1
            cur += c
        elif c in ')]':
            depth -= 1
            cur += c
        elif c == ',' and depth == 0:
            args.append(cur.strip())
            cur = ''
        else:
            cur += c
        i += 1
    if cur.strip():
        args.append(cur.strip())
    return args


def _calls(body):
    """Yields (name, [args]) for each top-level NAME(...) in a macro body."""
    i = 0
    while True:
        m = _CALL.search(body, i)
        if not m:
            return
        start = m.end()
        depth, j, in_str = 1, start, False
        while depth:
            c = body[j]
            if in_str:
                if c == '\\':
                    j += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == '(':
                depth += 1
            elif c == ')':
                depth -= 1
            j += 1
        yield m.group(1), _split_args(body[start:j - 1])
        i = j


class Def:
    def __init__(self, path, family):
        self.family = family  # "UET" or "ROCEV2"
        self.macros = {}      # name -> (param, body)
        self.consts = {}
        for line in _logical_lines(open(path).read()):
            m = _DEFINE.match(line.strip())
            if not m:
                continue
            name, param, body = m.groups()
            if param:
                self.macros[name] = (param, body)
            else:
                self.consts[name] = body.strip()
        self.headers = []     # dicts: id, name, size, prefix, section, title, fields
        param, body = self.macros[family + '_HEADERS']
        for _, a in _calls(body):
            hid = a[0]
            self.headers.append(dict(id=hid, name=a[1], size=int(a[2], 0), prefix=_unq(a[3]),
                                     section=_unq(a[4]), title=_unq(a[5]),
                                     fields=self.rows(family + '_FIELDS_' + hid)))
        self.value_tables = {}
        param, body = self.macros[family + '_VALUE_TABLES']
        for _, a in _calls(body):
            vals = []
            for _, v in _calls(self.macros[family + '_VALS_' + a[0]][1]):
                vals.append(dict(enum=v[0], value=int(v[1], 0), name=_unq(v[2]), meaning=_unq(v[3])))
            self.value_tables[a[0]] = vals

    def rows(self, macro):
        """The F rows of a field macro, with the helper macros it calls expanded."""
        param, body = self.macros[macro]
        out = []
        for name, a in _calls(body):
            if name == param:
                out.append(dict(name=a[0], offset=int(a[1], 0), width=int(a[2], 0),
                                mask=int(a[3], 0), kind=a[4], vals=a[5], title=_unq(a[6])))
            elif name in self.macros:
                out.extend(self.rows(name))
            else:
                raise ValueError('%s: unknown macro %s' % (macro, name))
        return out

    def header(self, hid):
        for h in self.headers:
            if h['id'] == hid:
                return h
        return None


def _unq(s):
    s = s.strip()
    assert s.startswith('"') and s.endswith('"'), s
    return bytes(s[1:-1], 'utf-8').decode('unicode_escape')


def load(spec_dir):
    return (Def(os.path.join(spec_dir, 'uet.def'), 'UET'),
            Def(os.path.join(spec_dir, 'rocev2.def'), 'ROCEV2'))


_COND = re.compile(r'\((\w+)=(\w+)\)\s*$')


def overlay_condition(row):
    """(field, value-token) when the row's title ends in an overlay condition like (SYN=1)."""
    m = _COND.search(row['title'])
    return (m.group(1).lower(), m.group(2)) if m else None
