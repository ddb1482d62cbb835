# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Baselines judged on what containerd runs, not on config.toml alone.

- ``effective_records``: the protected keys as containerd runs them (the
  merged view of config.toml and its drop-ins, ``_effective``), each with
  the file its value comes from, and the value ``config dump`` shows.
- ``effective_drift``: baseline against now, naming the file that caused
  each change (a drop-in that changed the default runtime counts).
- ``Mirror``: a copy of a tree in a temporary folder whose absolute imports
  point into the copy, to judge a tree that is not on disk (a restore, a
  repair's candidate, a baseline's own files).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import tempfile

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.drift import (
    plain,
    resolve_protect,
    same_tree,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_RUNTIME,
    UTF8_BOM,
    Layout,
    parse_toml,
    split_bom,
    version_text,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import (
    load_effective,
    translate_v2_path,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import dotted_path as dotted, get_in
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import file_version

DEFAULT_RUNTIME = 'runc'   # containerd's own default when default_runtime_name is unset


def parse_ver(text):
    """'1.6.20~ds1' or [1, 6] -> (1, 6), or None."""
    if not text:
        return None
    if isinstance(text, (list, tuple)):
        return tuple(int(x) for x in text[:2]) if len(text) >= 2 else None
    parts = str(text).lstrip('v').split('.')
    try:
        return int(parts[0]), int(''.join(c for c in parts[1] if c.isdigit()) or 0)
    except (ValueError, IndexError):
        return None


# ------------------------------------------------------------------ mirror
def _rebase_imports(text, mirror):
    """The file's text with absolute imports entries moved into the mirror."""
    import tomlkit
    doc = tomlkit.parse(text)
    imports = doc.get('imports')
    if not isinstance(imports, list):
        return text
    doc['imports'] = [mirror + e if isinstance(e, str) and os.path.isabs(e) else e for e in imports]
    return tomlkit.dumps(doc)


class Mirror(object):
    """A config tree copied under a temporary folder; absolute imports point into it.

    files: objects with ``path``, ``raw`` (bytes), ``text`` and ``data`` (as
    ``_baseline.TreeFile``).  Use as a context manager; the folder is removed
    at the end.
    """

    def __init__(self, files, main_path):
        self.root = tempfile.mkdtemp(prefix='nodeguard-baseline-')
        self.main = self.root + main_path
        self.main_data = None
        try:
            for tf in files:
                dest = self.root + tf.path
                if not os.path.isdir(os.path.dirname(dest)):
                    os.makedirs(os.path.dirname(dest), 0o700)
                raw = tf.raw
                if tf.data is not None and 'imports' in tf.data:
                    body, bom = split_bom(tf.text)
                    raw = ((UTF8_BOM if bom else '') + _rebase_imports(body, self.root)).encode('utf-8')
                with open(dest, 'wb') as f:
                    f.write(raw)
                if tf.path == main_path and tf.data is not None:
                    self.main_data = parse_toml(split_bom(raw.decode('utf-8'))[0])
        except Exception:
            self.close()
            raise

    def real(self, text):
        """A message or path about the mirror, about the real tree instead."""
        if text is None:
            return None
        return text.replace(self.root, '')

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# ------------------------------------------------------------------ effective values
def merged_path(view, key):
    """Where a protect entry lives in the merged view (version 3 layout on containerd 2.x)."""
    version = view.main_version if view.main_version in (2, 3, 4) else 2
    return tuple(view.read_path(resolve_protect(Layout(version), key), view.main_path))


def _is_default_runtime_name(path):
    return len(path) == 4 and path[0] == 'plugins' and path[1] in (CRI_V2, CRI_V3_RUNTIME) \
        and path[2:] == ('containerd', 'default_runtime_name')


def _dump_path(dump, path):
    if file_version(dump) >= 3 and len(path) > 1 and path[1] == CRI_V2:
        return translate_v2_path(path)
    return path


def file_path_of(view, file_path, key):
    """The key's path inside one file of the view (its own version's layout), or None."""
    for p, data in view.files:
        if p == file_path:
            version = file_version(data)
            return tuple(resolve_protect(Layout(version if version in (2, 3, 4) else view.main_version), key))
    return None


def file_sets(view, file_path, key):
    """Does that file of the tree itself set the key?"""
    fpath = file_path_of(view, file_path, key)
    for p, data in view.files:
        if p == file_path and fpath is not None:
            return get_in(data, fpath) is not None
    return False


def _sources(view, path, value):
    """The files the merged value at path comes from, in load order (a table may gather keys from several)."""
    if value is None:
        return []
    if isinstance(value, dict):
        found = set(f for p, f in view.origin.items() if len(p) > len(path) and p[:len(path)] == path)
        if path in view.origin:
            found.add(view.origin[path])
        if found:
            order = [p for p, _d in view.files]
            return sorted(found, key=lambda f: order.index(f) if f in order else len(order))
    src = view.source_of(path)
    return [src] if src else []


def effective_records(view, protect, dump=None, real=None):
    """The protected keys as containerd runs them: one dict per key.

    key, path (dotted, merged layout), value (merged model; containerd's
    "runc" when default_runtime_name is unset, with default: true), file (the
    file that sets it, None when nothing does; for a table gathered from
    several files the last of them, and files lists them all), owner (the
    file whose table holds it: on containerd 1.x the last file defining the
    plugin table), and
    dumped (the value ``config dump`` shows) when a dump was made.
    """
    real = real or (lambda s: s)
    out = []
    for key in protect:
        path = merged_path(view, key)
        value = view.value(path)
        sources = _sources(view, path, value)
        rec = dict(key=key, path=dotted(path), value=plain(value), default=False,
                   file=real(sources[-1]) if sources else None,
                   owner=real(view.source_of(path[:-1]) if len(path) > 1 else view.main_path))
        if len(sources) > 1:
            rec['files'] = [real(f) for f in sources]
        if value is None and _is_default_runtime_name(path):
            rec.update(value=DEFAULT_RUNTIME, default=True)
        if dump is not None:
            rec['dumped'] = plain(get_in(dump, _dump_path(dump, path)))
        out.append(rec)
    return out


def _compared_by(before, after, same_containerd):
    return 'config dump' if same_containerd and 'dumped' in before and 'dumped' in after else 'model'


def _cause(before, after, view, key, real):
    """The file that made the key what it is now."""
    if after.get('file'):
        return after['file']
    bfile = before.get('file')
    if bfile and view is not None:
        mirrored = [p for p, _d in view.files if real(p) == bfile]
        if mirrored and file_sets(view, mirrored[0], key):
            # still set there, but not in effect: the file that holds the table now hides it
            return after.get('owner') or bfile
    return bfile or after.get('owner')


def effective_drift(before_recs, after_recs, same_containerd, view=None, real=None, ver=None):
    """Protected keys whose effective value differs from the baseline's.

    Each entry: key, path, change (added/removed/changed), before, after,
    file (the file that caused it), before_file (where the baseline's value
    came from), compared ('config dump' or 'model'), why.
    """
    real = real or (lambda s: s)
    base = dict((r['key'], r) for r in before_recs)
    out = []
    for after in after_recs:
        before = base.get(after['key'])
        if before is None:
            continue
        how = _compared_by(before, after, same_containerd)
        field = 'dumped' if how == 'config dump' else 'value'
        if same_tree(before.get(field), after.get(field)):
            continue
        b, a = before.get(field), after.get(field)
        change = 'removed' if a is None else 'added' if b is None else 'changed'
        cause = _cause(before, after, view, after['key'], real)
        out.append(dict(key=after['key'], path=after['path'], change=change, before=b, after=a, file=cause,
                        before_file=before.get('file'), compared=how,
                        why=_why(after['key'], before, after, change, cause, ver)))
    return out


def _shown(rec, field='value'):
    v = rec.get(field)
    if rec.get('default') and field == 'value':
        return '%r (containerd\'s default: nothing sets it)' % (v,)
    return 'nothing' if v is None else 'a table' if isinstance(v, dict) else repr(v)


def _why(key, before, after, change, cause, ver):
    run = 'containerd %s' % version_text(ver) if ver else 'containerd'
    b_from = (' from %s' % before['file']) if before.get('file') else ''
    if change == 'removed':
        return '%s no longer runs %s (the baseline ran %s%s); %s is where it went' % (
            run, key, _shown(before), b_from, cause)
    now = _shown(after)
    if after.get('file'):
        return '%s now runs %s = %s, set by %s (the baseline ran %s%s)' % (
            run, key, now, after['file'], _shown(before), b_from)
    return '%s now runs %s = %s because of %s (the baseline ran %s%s)' % (
        run, key, now, cause, _shown(before), b_from)


def view_of(path, data, ver):
    return load_effective(path, data, ver)


def describe_effective(entries):
    return '; '.join('%s is %s (%s): %s' % (e['key'], e['change'], e['compared'], e['why']) for e in entries)
