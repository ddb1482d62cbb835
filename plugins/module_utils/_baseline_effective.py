# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Baselines judged on what containerd runs, not on config.toml alone.

- ``judge_tree``: would the node's containerd load this tree?  The built-in
  checks, the config version the node reads, ``containerd config dump``
  (which refuses what 1.x cannot decode, e.g. ``pause_threshold = 1``) and,
  where a binary exists, a real start of containerd on the tree in isolation
  (``_preflight.load_test``), because ``config dump`` accepts configs whose
  CRI plugin then fails.
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

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline_drift import (
    plain,
    resolve_protect,
    same_tree,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._config_model import (
    CRI_V2,
    CRI_V3_RUNTIME,
    UTF8_BOM,
    ConfigError,
    Layout,
    TomlParseError,
    parse_toml,
    split_bom,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._effective import (
    load_effective,
    translate_v2_path,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._toml_text import dotted_path as dotted, get_in
from ansible_collections.nodeguard.containerd.plugins.module_utils._validate import (
    check_tree,
    file_version,
    refuse_unreadable_version,
    run_validate,
)

DEFAULT_RUNTIME = 'runc'   # containerd's own default when default_runtime_name is unset


def ver_text(ver):
    return '.'.join(str(x) for x in ver) if ver else 'unknown'


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


# ------------------------------------------------------------------ judging
class Judgement(object):
    """What the node's containerd makes of one tree.

    problems: why it would not load (empty: it loads as far as anything
    could tell); checked: what judged it; notes: what could not judge it and
    why; dump / dump_text: ``config dump`` output (None without a binary);
    load: the real-load test's summary (None when it did not run).
    """

    def __init__(self):
        self.problems = []
        self.checked = []
        self.notes = []
        self.dump = None
        self.dump_text = None
        self.load = None

    def as_dict(self):
        return dict(checked=list(self.checked), notes=list(self.notes), load_test=self.load)


def _tail(out, err, real):
    lines = [real(line) for line in (err or out or '').strip().splitlines() if line.strip()]
    return ' | '.join(lines[-3:]) or 'no output'


def _load_test(binary, config_path, run_command):
    """The node's containerd started on the tree in isolation (``_preflight.load_test``)."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._preflight import load_test
    return load_test(binary, config_path, run_command=run_command)


def judge_tree(ctx, path, data, validate='auto', load_test=True, mirror=None):
    """Judge the tree whose main file is path (its parsed data) the way the node's containerd will.

    mirror: the Mirror path lives in; messages then name the real files.
    """
    j = Judgement()
    real = mirror.real if mirror is not None else (lambda s: s)
    shown = real(path)
    ver = ctx.containerd_version
    try:
        refuse_unreadable_version(shown, file_version(data), ver)
    except ConfigError as exc:
        j.problems.append(str(exc).replace(' Nothing was written.', ''))
    j.problems.extend(real(e) for e in check_tree(path, data, ver))
    j.checked.append('built-in checks')
    if validate == 'none':
        j.notes.append('validate: none: containerd itself was not asked (no config dump, no load test)')
        return j
    binary = ctx.containerd_bin
    if validate == 'load':
        load_test = True    # the engine's opt-in real-load validation: here the load test is required
    if validate not in (None, 'auto', 'load'):
        cmd, rc, out, err = run_validate(ctx.run_command, validate, binary, path)
        if rc != 0:
            j.problems.append('validation "%s" failed (rc=%s): %s'
                              % (' '.join(cmd).replace(path, '%s'), rc, _tail(out, err, real)))
        j.checked.append('validate command')
    if not binary:
        if validate == 'load':
            j.problems.append('validate: load starts the node\'s containerd on the tree, but no containerd binary was '
                              'found in PATH or the usual folders (set containerd_bin)')
            return j
        j.notes.append('no containerd binary in PATH or the usual folders: judged by nodeguard\'s own model of '
                       'containerd only (set containerd_bin)')
        return j
    rc, out, err = ctx.run_command([binary, '--config', path, 'config', 'dump'])
    if rc != 0:
        j.problems.append('containerd %s cannot load %s: "containerd config dump" failed (rc=%s): %s'
                          % (ver_text(ver), shown, rc, _tail(out, err, real)))
    else:
        j.checked.append('config dump')
        try:
            j.dump = parse_toml(out)
            j.dump_text = real(out)
        except TomlParseError as exc:
            j.notes.append('the config dump could not be read (%s)' % exc)
    if not load_test:
        j.notes.append('load_test: false: containerd was not started on the tree')
    elif j.problems:
        j.notes.append('load test not run: the tree is refused already')
    else:
        res = _load_test(binary, path, ctx.run_command)
        j.load = dict(status=res.status, ok=bool(res.ok), seconds=res.seconds, required=res.required,
                      errors=[real(e) for e in res.errors], skipped=list(res.skipped or []),
                      containerd_version=res.containerd_version)
        if res.ok:
            j.checked.append('load test')
        elif res.status == 'cannot_run':
            # the test itself could not be made (not root, no unshare...): it judges nothing
            j.notes.append('load test could not run: %s' % real(res.message()))
        else:
            j.problems.append(real(res.message()))
    return j


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
    run = 'containerd %s' % ver_text(ver) if ver else 'containerd'
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
