# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Format-preserving edits of a TOML document as text.

Why text and not a re-serialised tree: operators diff and review
config.toml, and an install followed by an uninstall must give back the
original bytes.  Every edit here is a splice of the original text that copies
the file's own indentation and quoting; after the edits the caller re-parses
the text and compares it with the expected data (see ``TomlText.verify``), so
a layout this scanner misreads ends in an error, never in a wrong file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime
import json
import re

BARE_KEY = re.compile(r'^[A-Za-z0-9_-]+$')
_BARE_RUN = re.compile(r'[A-Za-z0-9_-]+')
_WS = ' \t'


class TomlLayoutError(Exception):
    """The text could not be scanned or edited safely."""


class Entry(object):
    """One logical line of the document (a value may span several lines)."""

    __slots__ = ('kind', 'start', 'end', 'indent', 'path', 'raw_parts',
                 'value_start', 'value_end', 'array', 'table', 'nkey')

    def __init__(self, kind, start, end, indent, path=(), raw_parts=(),
                 value_start=None, value_end=None, array=False, table=(), nkey=0):
        self.kind = kind            # header, keyval, comment, blank
        self.start = start          # offset of the first character of the line
        self.end = end              # offset after the newline (or EOF)
        self.indent = indent
        self.path = path            # header: table path; keyval: full key path
        self.raw_parts = raw_parts  # key parts as written in the file
        self.value_start = value_start
        self.value_end = value_end
        self.array = array          # [[array of tables]] header
        self.table = table          # keyval: path of the section it sits in
        self.nkey = nkey            # keyval: number of (dotted) key parts

    def __repr__(self):
        return 'Entry(%s, %r, %d-%d)' % (self.kind, self.path, self.start, self.end)


def _line_end(text, pos):
    """Offset after the newline that ends the line holding pos."""
    nl = text.find('\n', pos)
    return len(text) if nl < 0 else nl + 1


def _skip_ws(text, pos):
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _decode_basic(raw):
    try:
        return json.loads(raw)
    except ValueError:
        # TOML escapes JSON lacks (\e, \UXXXXXXXX): rare in keys; keep the
        # text so that the key still compares equal with itself.
        return raw[1:-1]


# Fast path for the keys real configs use: bare parts and quoted parts
# without escapes.  Anything else goes through the careful loop below.
_SIMPLE_PART = r'(?:[A-Za-z0-9_-]+|"[^"\\\n]*"|\'[^\'\n]*\')'
_SIMPLE_KEY = re.compile(r'[ \t]*(%s(?:[ \t]*\.[ \t]*%s)*)[ \t]*' % (_SIMPLE_PART, _SIMPLE_PART))
_SIMPLE_PARTS = re.compile(_SIMPLE_PART)


def _parse_key(text, pos):
    """Parse a (dotted) key at pos; return (parts, raw_parts, new_pos)."""
    m = _SIMPLE_KEY.match(text, pos)
    if m:
        end = m.end()
        if end >= len(text) or text[end] not in '"\'.':
            raws = tuple(_SIMPLE_PARTS.findall(m.group(1)))
            parts = tuple(r[1:-1] if r[0] in '"\'' else r for r in raws)
            return parts, raws, end
    parts, raws = [], []
    while True:
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            raise TomlLayoutError('key expected at offset %d' % pos)
        c = text[pos]
        if c == '"':
            end = pos + 1
            while end < len(text) and text[end] != '"':
                if text[end] == '\\':
                    end += 1
                elif text[end] == '\n':
                    raise TomlLayoutError('unterminated key at offset %d' % pos)
                end += 1
            raw = text[pos:end + 1]
            parts.append(_decode_basic(raw))
            pos = end + 1
        elif c == "'":
            end = text.find("'", pos + 1)
            if end < 0 or '\n' in text[pos:end]:
                raise TomlLayoutError('unterminated key at offset %d' % pos)
            raw = text[pos:end + 1]
            parts.append(raw[1:-1])
            pos = end + 1
        else:
            m = _BARE_RUN.match(text, pos)
            if not m:
                raise TomlLayoutError('key expected at offset %d' % pos)
            raw = m.group(0)
            parts.append(raw)
            pos = m.end()
        raws.append(raw)
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == '.':
            pos += 1
            continue
        return tuple(parts), tuple(raws), pos


def skip_string(text, pos):
    """pos is at a quote; return the offset after the closing quote."""
    if text.startswith('"""', pos) or text.startswith("'''", pos):
        delim = text[pos:pos + 3]
        i = pos + 3
        while True:
            j = text.find(delim, i)
            if j < 0:
                raise TomlLayoutError('unterminated string at offset %d' % pos)
            if delim == '"""':
                # a quote preceded by an odd number of backslashes is escaped
                k, slashes = j - 1, 0
                while k >= 0 and text[k] == '\\':
                    slashes += 1
                    k -= 1
                if slashes % 2:
                    i = j + 1
                    continue
            j += 3
            # up to two more quotes may belong to the content
            extra = 0
            while extra < 2 and j < len(text) and text[j] == delim[0]:
                j += 1
                extra += 1
            return j
    quote = text[pos]
    i = pos + 1
    while i < len(text):
        c = text[i]
        if c == '\\' and quote == '"':
            i += 2
            continue
        if c == quote:
            return i + 1
        if c == '\n':
            break
        i += 1
    raise TomlLayoutError('unterminated string at offset %d' % pos)


def _skip_value(text, pos):
    """Return the offset just after the value that starts at pos."""
    depth = 0
    i = pos
    n = len(text)
    while i < n:
        c = text[i]
        if c in '"\'':
            i = skip_string(text, i)
            if depth == 0:
                return i
            continue
        if c in '[{':
            depth += 1
            i += 1
            continue
        if c in ']}':
            depth -= 1
            i += 1
            if depth == 0:
                return i
            continue
        if c == '#':
            if depth == 0:
                break
            i = _line_end(text, i)
            continue
        if c == '\n' and depth == 0:
            break
        i += 1
    if depth:
        raise TomlLayoutError('unterminated array or inline table at offset %d' % pos)
    # a bare scalar: drop trailing blanks (and a \r of a CRLF line)
    while i > pos and text[i - 1] in ' \t\r':
        i -= 1
    return i


def _rest_of_line(text, pos):
    """After a header or value: blanks, an optional comment, the newline."""
    pos = _skip_ws(text, pos)
    if pos < len(text) and text[pos] == '#':
        return _line_end(text, pos)
    if pos < len(text) and text[pos] == '\r':
        pos += 1
    if pos >= len(text):
        return pos
    if text[pos] != '\n':
        raise TomlLayoutError('unexpected text at offset %d' % pos)
    return pos + 1


def scan(text):
    """Split the document into entries (headers, key/values, comments, blanks)."""
    entries = []
    table = ()
    array_counts = {}
    pos = 0
    n = len(text)
    while pos < n:
        start = pos
        pos = _skip_ws(text, pos)
        indent = text[start:pos]
        if pos >= n:
            entries.append(Entry('blank', start, n, indent))
            break
        c = text[pos]
        if c == '\n' or (c == '\r' and text.startswith('\r\n', pos)):
            end = _line_end(text, pos)
            entries.append(Entry('blank', start, end, indent))
            pos = end
        elif c == '#':
            end = _line_end(text, pos)
            entries.append(Entry('comment', start, end, indent))
            pos = end
        elif c == '[':
            array = text.startswith('[[', pos)
            parts, raws, pos = _parse_key(text, pos + (2 if array else 1))
            close = ']]' if array else ']'
            if not text.startswith(close, pos):
                raise TomlLayoutError('unterminated table header at offset %d' % start)
            close_end = pos + len(close)
            end = _rest_of_line(text, close_end)
            if array:
                # elements of an array of tables are never edited here: give
                # each its own path so it cannot be mistaken for a table
                count = array_counts.get(parts, 0)
                array_counts[parts] = count + 1
                table = parts + ('[%d]' % count,)
            else:
                table = parts
            entries.append(Entry('header', start, end, indent, table, raws,
                                 value_end=close_end, array=array))
            pos = end
        else:
            parts, raws, pos = _parse_key(text, pos)
            if not text.startswith('=', pos):
                raise TomlLayoutError('"=" expected at offset %d' % pos)
            vstart = _skip_ws(text, pos + 1)
            vend = _skip_value(text, vstart)
            end = _rest_of_line(text, vend)
            entries.append(Entry('keyval', start, end, indent, table + parts, raws,
                                 vstart, vend, table=table, nkey=len(parts)))
            pos = end
    return entries


def render_key(part, literal=False):
    """Render one key part: bare when possible, else quoted safely."""
    if BARE_KEY.match(part):
        return part
    if literal and "'" not in part and not any(ord(ch) < 32 or ord(ch) == 127 for ch in part):
        return "'%s'" % part
    return _basic_string(part)


def _basic_string(text):
    # json.dumps leaves DEL as is; TOML does not allow it raw in a string
    return json.dumps(text, ensure_ascii=False).replace('\x7f', '\\u007f')


def dotted_path(path):
    """A key path as TOML spells it: plugins."io.containerd.grpc.v1.cri".enable_cdi."""
    return '.'.join(render_key(p) for p in path)


def render_value(value, literal=False):
    """Render a Python value as TOML; strings cannot break out of their quotes."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        if literal and "'" not in value and not any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            return "'%s'" % value
        return _basic_string(value)
    if isinstance(value, (list, tuple)):
        return '[' + ', '.join(render_value(v, literal) for v in value) + ']'
    if isinstance(value, dict):
        if not value:
            return '{}'
        return '{ ' + ', '.join('%s = %s' % (render_key(str(k), literal), render_value(v, literal))
                                for k, v in value.items()) + ' }'
    raise TomlLayoutError('cannot write a value of type %s' % type(value).__name__)


def get_in(data, path):
    """The value at path in nested dicts, or None."""
    cur = data
    for part in path:
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def set_in(data, path, value):
    """Set the value at path in nested dicts, creating tables on the way."""
    cur = data
    for part in path[:-1]:
        cur = cur.setdefault(part, {})
        if not isinstance(cur, dict):  # e.g. [[...runtimes]], which containerd refuses too
            raise TomlLayoutError('%s is not a table (it is an array or a value)' % part)
    cur[path[-1]] = value


def _del_in(data, path):
    cur = get_in(data, path[:-1])
    if isinstance(cur, dict):
        cur.pop(path[-1], None)


class TomlText(object):
    """A TOML document kept as text, with the data it is expected to parse to.

    ``data`` is the parsed document (plain dicts); every edit changes both the
    text and ``data``, and ``verify`` checks that the text parses to ``data``.
    """

    def __init__(self, text, data):
        self.text = text
        self.data = data
        self.entries = scan(text)
        # sections add_section created, so an owner can remove them again
        self.created_sections = []

    # ----------------------------------------------------------------- queries
    def _rescan(self):
        self.entries = scan(self.text)

    def literal_style(self):
        """True when the file writes its strings and quoted keys with '...'."""
        single = double = 0
        for e in self.entries:
            if e.kind in ('header', 'keyval'):
                for raw in e.raw_parts:
                    if raw.startswith("'"):
                        single += 1
                    elif raw.startswith('"'):
                        double += 1
            if e.kind == 'keyval':
                c = self.text[e.value_start:e.value_start + 1]
                if c == "'":
                    single += 1
                elif c == '"':
                    double += 1
        return single > double

    def headers(self):
        return [e for e in self.entries if e.kind == 'header']

    def find_header(self, path):
        for e in self.entries:
            if e.kind == 'header' and not e.array and e.path == tuple(path):
                return e
        return None

    def find_keyval(self, path):
        path = tuple(path)
        for e in self.entries:
            if e.kind == 'keyval' and e.path == path:
                return e
        return None

    def raw_value(self, path):
        e = self.find_keyval(path)
        return None if e is None else self.text[e.value_start:e.value_end]

    def get(self, path):
        return get_in(self.data, path)

    def _section(self, header):
        """Entries of the section that header opens (header included)."""
        idx = self.entries.index(header)
        out = [header]
        for e in self.entries[idx + 1:]:
            if e.kind == 'header':
                break
            out.append(e)
        return out

    def _content_end(self, section):
        """End offset of the last header/key line of a section."""
        last = section[0]
        for e in section:
            if e.kind in ('header', 'keyval'):
                last = e
        return last.end

    def _leading_blank_start(self, entry):
        """Start of the run of blank lines right before entry."""
        idx = self.entries.index(entry)
        start = entry.start
        while idx > 0 and self.entries[idx - 1].kind == 'blank':
            idx -= 1
            start = self.entries[idx].start
        return start

    def _subtree_headers(self, path):
        path = tuple(path)
        return [h for h in self.headers() if h.path[:len(path)] == path]

    def _body_step(self):
        """Indent of key lines relative to their header, as the file does it."""
        counts = {}
        for e in self.entries:
            if e.kind == 'keyval' and e.table:
                head = self.find_header(e.table)
                if head is not None and e.indent.startswith(head.indent):
                    step = e.indent[len(head.indent):]
                    counts[step] = counts.get(step, 0) + 1
        if not counts:
            return '  ' if any(e.indent for e in self.entries if e.kind == 'keyval') else ''
        return max(counts.items(), key=lambda kv: kv[1])[0]

    def _header_indent(self, path):
        """Indent for a new header at path, copying the file's habit."""
        heads = [h for h in self.headers() if not h.array]
        same_depth = [h.indent for h in heads if len(h.path) == len(path)]
        if same_depth:
            return max(set(same_depth), key=same_depth.count)
        if not any(h.indent for h in heads):
            return ''
        # nested headers are indented: find the nearest ancestor header
        for cut in range(len(path) - 1, 0, -1):
            anc = self.find_header(path[:cut])
            if anc is not None:
                return anc.indent + '  ' * (len(path) - cut)
        return ''

    def render_path(self, path):
        """Render a table path, reusing the file's spelling of known prefixes."""
        path = tuple(path)
        best = ()
        for e in self.entries:
            if e.kind != 'header' or e.array:
                continue
            n = 0
            while n < min(len(path), len(e.path)) and path[n] == e.path[n]:
                n += 1
            if n > len(best):
                best = e.raw_parts[:n]
        literal = self.literal_style()
        rest = [render_key(p, literal) for p in path[len(best):]]
        return '.'.join(list(best) + rest)

    # ------------------------------------------------------------------- edits
    def _splice(self, start, end, new):
        self.text = self.text[:start] + new + self.text[end:]
        self._rescan()

    def _insert_lines(self, pos, lines_text):
        """Insert whole lines at pos (a line start, or EOF)."""
        crlf = self.text.count('\r\n') * 2 > self.text.count('\n')  # a CRLF file gets CRLF lines
        if crlf:
            lines_text = lines_text.replace('\r\n', '\n')
        if pos == len(self.text) and self.text and not self.text.endswith('\n'):
            # keep the file's "no newline at the end" style, so that removing
            # these lines again gives back the same bytes
            lines_text = '\n' + lines_text[:-1] if lines_text.endswith('\n') else '\n' + lines_text
        if crlf:
            lines_text = lines_text.replace('\n', '\r\n')
        self._splice(pos, pos, lines_text)

    def _remove(self, start, end):
        """Remove whole lines [start, end); at an unterminated end, take the newline before."""
        if end == len(self.text) and not self.text.endswith('\n') and start > 0 \
                and self.text[start - 1] == '\n':
            start -= 1
            if start > 0 and self.text[start - 1] == '\r':  # ... all of it, in a CRLF file
                start -= 1
        self._splice(start, end, '')

    def set_value(self, path, value):
        """Set a key; returns the raw text of the prior value, or None.

        An existing value is replaced in place (its line, comment and quoting
        style kept); a new key goes after the last key line of its table.
        """
        path = tuple(path)
        literal = self.literal_style()
        existing = self.find_keyval(path)
        if existing is not None:
            prior = self.text[existing.value_start:existing.value_end]
            if self.get(path) == value and type(self.get(path)) is type(value):
                return prior
            style = literal if not prior[:1] in '"\'' else prior.startswith("'")
            self._splice(existing.value_start, existing.value_end, render_value(value, style))
            set_in(self.data, path, copy.deepcopy(value))
            return prior
        current = self.get(path)
        if current is not None:
            raise TomlLayoutError('%s is a table or is written inline; it cannot be set as a value'
                                  % dotted_path(path))
        self._add_key_to_table(path[:-1], path[-1], value, literal)
        set_in(self.data, path, copy.deepcopy(value))
        return None

    def _add_key_to_table(self, table, key, value, literal):
        table = tuple(table)
        rendered = render_value(value, literal)
        if not table:
            self._insert_lines(self._top_level_end(), '%s = %s\n' % (render_key(key, literal), rendered))
            return
        header = self.find_header(table)
        if header is not None:
            section = self._section(header)
            keyvals = [e for e in section if e.kind == 'keyval']
            indent = keyvals[-1].indent if keyvals else header.indent + self._body_step()
            self._insert_lines(self._content_end(section),
                               '%s%s = %s\n' % (indent, render_key(key, literal), rendered))
            return
        # The table may be defined by dotted keys inside an ancestor section.
        dotted = [e for e in self.entries if e.kind == 'keyval' and e.nkey > 1
                  and e.path[:len(table)] == table and len(e.table) < len(table)]
        if dotted:
            anchor = dotted[-1]
            prefix = anchor.raw_parts[:len(table) - len(anchor.table)]
            dotted_key = '.'.join(list(prefix) + [render_key(key, literal)])
            self._insert_lines(anchor.end, '%s%s = %s\n' % (anchor.indent, dotted_key, rendered))
            return
        if self.get(table) is not None and not self._subtree_headers(table):
            raise TomlLayoutError('%s is written as an inline table; nodeguard edits only '
                                  '[table] sections: rewrite it as a [%s] section'
                                  % (dotted_path(table), dotted_path(table)))
        self.add_section(table, [(key, value)])
        # add_section stored the value in data already

    def _top_level_end(self):
        """Where a new top-level key goes: after the last one, before any table."""
        last = None
        for e in self.entries:
            if e.kind == 'header':
                break
            if e.kind == 'keyval':
                last = e
        if last is not None:
            return last.end
        heads = self.headers()
        if heads:
            return self._leading_blank_start(heads[0])
        return len(self.text)

    def delete_value(self, path):
        """Delete a key line; returns the raw prior value, or None if absent."""
        path = tuple(path)
        e = self.find_keyval(path)
        if e is None:
            if self.get(path) is not None:
                raise TomlLayoutError('%s is written inside an inline table; remove it by hand'
                                      % dotted_path(path))
            return None
        prior = self.text[e.value_start:e.value_end]
        self._remove(e.start, e.end)
        _del_in(self.data, path)
        self._prune_implicit(path)
        return prior

    def restore_raw(self, path, raw):
        """Put back a value exactly as it was written (raw TOML text)."""
        path = tuple(path)
        if raw is None:
            return self.delete_value(path)
        value = parse_raw_value(raw)
        e = self.find_keyval(path)
        if e is not None:
            self._splice(e.value_start, e.value_end, raw)
            set_in(self.data, path, value)
            return
        self.set_value(path, value)
        e = self.find_keyval(path)
        self._splice(e.value_start, e.value_end, raw)

    def key_line(self, path):
        """The key's line in its own table's section (not a dotted key of a parent, not inline), or None."""
        path = tuple(path)
        e = self.find_keyval(path)
        return e if e is not None and tuple(e.table) == path[:-1] and e.nkey == 1 else None

    def insert_key_line(self, path, line, value, neighbours):
        """Put key path back as a line of another file's text, next to a key it sat beside there.

        line: the key's line as written elsewhere (its comment too), re-indented
        like the neighbour here.  neighbours: (key, 'after' or 'before') in order
        of preference.  False, and nothing changed, when no neighbour is a key
        line of the table's own section here.
        """
        path = tuple(path)
        for key, side in neighbours:
            e = self.key_line(path[:-1] + (key,))
            if e is None:
                continue
            body = line.lstrip(' \t').rstrip('\r\n')
            self._insert_lines(e.end if side == 'after' else e.start, '%s%s\n' % (e.indent, body))
            set_in(self.data, path, copy.deepcopy(value))
            return True
        return False

    def _refuse_inside_inline(self, path):
        """TOML cannot extend an inline table ({ ... }) with a [section]."""
        for cut in range(len(path) - 1, 0, -1):
            if self.find_keyval(path[:cut]) is not None and isinstance(self.get(path[:cut]), dict):
                raise TomlLayoutError('%s is written as an inline table ({ ... }), which TOML cannot extend '
                                      'with [%s]; nodeguard edits only [table] sections. Fix: rewrite %s as '
                                      '[sections] by hand (one [..] header per table), then run again'
                                      % (dotted_path(path[:cut]), dotted_path(path), dotted_path(path[:cut])))

    def add_section(self, path, items):
        """Add a [path] section holding the given (key, value) pairs."""
        path = tuple(path)
        self._refuse_inside_inline(path)
        if not isinstance(get_in(self.data, path), (dict, type(None))):  # e.g. [[...unpack_config]]
            raise TomlLayoutError('%s is not a table (it is an array or a value)' % dotted_path(path))
        if self.find_header(path) is not None:
            raise TomlLayoutError('[%s] exists already' % dotted_path(path))
        literal = self.literal_style()
        indent = self._header_indent(path)
        body = indent + self._body_step()
        lines = ''.join('%s%s = %s\n' % (body, render_key(k, literal), render_value(v, literal))
                        for k, v in items)
        self._insert_block(path, indent + '[' + self.render_path(path) + ']\n' + lines)
        self.created_sections.append(path)
        cur = get_in(self.data, path)
        if cur is None:
            set_in(self.data, path, {})
            cur = get_in(self.data, path)
        for k, v in items:
            cur[k] = copy.deepcopy(v)

    def _insert_block(self, path, block):
        """Place a block of sections for path where a reader would look for it."""
        descendants = self._subtree_headers(path)
        if descendants:
            # parent defined after its children is legal but odd: put it first
            first = descendants[0]
            pos = self._leading_blank_start(first)
            gap = self.text[pos:first.start].count('\n')
            self._insert_lines(pos, '\n' * gap + block)
            return
        pos = None
        for cut in range(len(path) - 1, 0, -1):
            sub = self._subtree_headers(path[:cut])
            if sub:
                last = sub[-1]
                pos = self._content_end(self._section(last))
                sibling = [h for h in sub if len(h.path) == len(path)]
                ref = sibling[-1] if sibling else last
                gap = self.text[self._leading_blank_start(ref):ref.start].count('\n')
                break
        if pos is None:
            content = [e for e in self.entries if e.kind in ('header', 'keyval', 'comment')]
            pos = content[-1].end if content else 0
            gap = 1 if content else 0
        self._insert_lines(pos, '\n' * gap + block)

    def copy_table(self, src, dst):
        """Create table dst as a copy of table src and its sub-tables, text and all."""
        src, dst = tuple(src), tuple(dst)
        self._refuse_inside_inline(dst)
        heads = self._subtree_headers(src)
        if self.find_header(src) is None:
            # src is written with dotted keys or inline (maybe with [src.x]
            # sections of its own): no one text to copy, so write its values
            # out as sections
            table = get_in(self.data, src)
            if not isinstance(table, dict):
                raise TomlLayoutError('[%s] is not a table' % dotted_path(src))
            self._insert_block(dst, self._table_block(dst, table, self.literal_style()))
            set_in(self.data, dst, copy.deepcopy(table))
            return
        prefix = self.render_path(dst)
        chunks = []
        for i, h in enumerate(heads):
            section = self._section(h)
            if i:
                lead = self._leading_blank_start(h)
                chunks.append(self.text[lead:h.start])
            rest = '.'.join(h.raw_parts[len(src):])
            # header value_end is the offset after its closing bracket
            chunks.append(h.indent + '[' + prefix + ('.' + rest if rest else '') + ']'
                          + self.text[h.value_end:h.end])
            chunks.append(self.text[h.end:self._content_end(section)])
        block = ''.join(chunks)
        if not block.endswith('\n'):
            block += '\n'
        self._insert_block(dst, block)
        set_in(self.data, dst, copy.deepcopy(get_in(self.data, src)))

    def _table_block(self, path, table, literal):
        """[path] with the table's plain keys, then a section per sub-table."""
        indent = self._header_indent(path)
        body = indent + self._body_step()
        plain = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
        subs = [(k, v) for k, v in table.items() if isinstance(v, dict)]
        block = indent + '[' + self.render_path(path) + ']\n'
        block += ''.join('%s%s = %s\n' % (body, render_key(k, literal), render_value(v, literal)) for k, v in plain)
        for k, v in subs:
            block += '\n' + self._table_block(tuple(path) + (k,), v, literal)
        return block

    def delete_table(self, path):
        """Delete table path with its sub-tables (the sections and key lines)."""
        path = tuple(path)
        if get_in(self.data, path) is None:
            return False
        heads = self._subtree_headers(path)
        if not heads and self.find_keyval(path) is None:
            dotted = [e for e in self.entries if e.kind == 'keyval' and e.path[:len(path)] == path]
            if not dotted:
                raise TomlLayoutError('%s is written inline; remove it by hand' % dotted_path(path))
        # key lines that define parts of the table with dotted keys elsewhere
        for e in reversed([e for e in self.entries if e.kind == 'keyval'
                           and e.path[:len(path)] == path and e.table[:len(path)] != path]):
            self._remove(e.start, e.end)
        heads = self._subtree_headers(path)
        # when the sections stand together, remove them as one block, with the
        # blank lines that separated them from what came before
        spans = []
        for h in heads:
            spans.append((self._leading_blank_start(h), self._content_end(self._section(h))))
        contiguous = False
        if heads:
            first, last = self.entries.index(heads[0]), self.entries.index(heads[-1])
            contiguous = all(e.kind != 'header' or e in heads
                             for e in self.entries[first:last + 1])
        if contiguous:
            spans = [(spans[0][0], spans[-1][1])]
        for start, end in reversed(spans):
            self._remove(start, end)
        _del_in(self.data, path)
        self._prune_implicit(path)
        return True

    def _prune_implicit(self, path):
        """After a delete, forget parent tables that nothing in the text defines any more.

        [a.b.c] alone defines a and a.b implicitly; once [a.b.c] is gone the
        parsed file has no a at all, so the expected data must not either.
        """
        path = tuple(path)
        for cut in range(len(path) - 1, 0, -1):
            anc = path[:cut]
            if get_in(self.data, anc) != {}:
                return
            if any(e.kind in ('header', 'keyval') and e.path[:cut] == anc for e in self.entries):
                return
            _del_in(self.data, anc)

    def remove_empty_section(self, path):
        """Remove a [path] header whose section holds no keys of its own.

        Sub-tables written with their own headers stay: only the header line
        (and the blank lines before it) goes.  Returns True when removed.
        """
        path = tuple(path)
        header = self.find_header(path)
        if header is None or any(e.kind == 'keyval' for e in self._section(header)):
            return False
        self._remove(self._leading_blank_start(header), header.end)
        if get_in(self.data, path) == {}:
            _del_in(self.data, path)
            self._prune_implicit(path)
        return True

    def verify(self, parse):
        """Re-parse the text and compare with the data the edits promised."""
        got = parse(self.text)
        if got != self.data:
            raise TomlLayoutError('the edited text does not parse to the expected data')


def plain(value):
    """A tomlkit document or item as plain Python: dict, list, str, int, float,
    bool, datetime, date, time.

    The one unwrap every caller uses: tomlkit < 0.11 has no ``unwrap()``, and
    0.11.0 - 0.11.4 leave tomlkit objects (dotted-key tables, booleans) in what
    theirs returns, which then break comparisons and Ansible's result
    serialisation (``TypeError: __init__() missing 3 required positional
    arguments`` from ansible-core 2.16 - 2.18).  Built only from the types
    Python and every tomlkit since 0.6 share (tomlkit's containers are dict
    subclasses, its arrays list subclasses, its scalars str/int/float/datetime
    subclasses; only its Bool has to be read through ``.value``).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, dict):
        return dict((str(k), plain(value[k])) for k in value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, datetime.datetime):
        return datetime.datetime(value.year, value.month, value.day, value.hour, value.minute, value.second,
                                 value.microsecond, value.tzinfo)
    if isinstance(value, datetime.date):
        return datetime.date(value.year, value.month, value.day)
    if isinstance(value, datetime.time):
        return datetime.time(value.hour, value.minute, value.second, value.microsecond, value.tzinfo)
    inner = getattr(value, 'value', None)  # tomlkit's Bool (bool cannot be subclassed)
    if isinstance(inner, bool):
        return inner
    if hasattr(value, 'value') and inner is not value and inner is not None:
        return plain(inner)
    raise TomlLayoutError('cannot read a TOML value of type %s' % type(value).__name__)


def parse_raw_value(raw):
    """The Python value of a raw TOML value text."""
    import tomlkit  # imported here: callers check for tomlkit first
    return plain(tomlkit.parse('v = ' + raw + '\n')['v'])


def same_value(a, b):
    """Equal and of the same type (1 is not 1.0 is not true to containerd)."""
    return a == b and type(a) is type(b)


def raw_values_match(a, b):
    """Two raw TOML value texts (or None: no such key) hold the same value of the same type."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    try:
        return same_value(parse_raw_value(a), parse_raw_value(b))
    except Exception:
        return False


def parse_dotted_key(text):
    """A dotted key as written in TOML ('a."b.c".d') to its parts."""
    parts, _raws, pos = _parse_key(text, 0)
    if pos != len(text.rstrip()):
        raise TomlLayoutError('unexpected text after the key at offset %d' % pos)
    return parts
