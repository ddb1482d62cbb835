# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift between a baseline and the config as it is now, as key paths.

Protected keys are named logically (``cri.runtimes.runc``,
``cri.default_runtime_name``, ``images.snapshotter``) and resolved for each
file's own config version, or given as raw dotted TOML paths.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    dotted_path as dotted,
    get_in,
    parse_dotted_key,
)

DEFAULT_PROTECT = ('cri.runtimes.runc', 'cri.default_runtime_name')
LOGICAL_HEADS = ('cri', 'images')


def resolve_protect(layout, key):
    """A protect entry to its key path in a file of this layout.

    Logical names start with ``cri`` (the CRI runtime plugin's table) or
    ``images`` (where the version keeps image settings); ``cri.runtimes.<name>``
    is that runtime's table.  Anything else is a raw dotted TOML path.
    """
    if key in layout.logical:
        return tuple(layout.logical[key])
    try:
        parts = tuple(parse_dotted_key(key))
    except TomlLayoutError as exc:
        raise ConfigError('protect entry %r is neither a logical key (e.g. cri.runtimes.runc, '
                          'cri.default_runtime_name, images.snapshotter) nor a dotted TOML path (%s).'
                          % (key, exc), key='protect')
    if not parts or not all(parts):
        raise ConfigError('protect entry %r is empty.' % key, key='protect')
    head, rest = parts[0], parts[1:]
    if head == 'cri':
        if rest[:1] == ('runtimes',):
            if len(rest) == 1:
                return tuple(layout.runtimes)
            return tuple(layout.runtime(rest[1])) + rest[2:]
        return tuple(layout.cri) + rest
    if head == 'images':
        return tuple(layout.resolve('images.snapshotter')[:-1]) + rest
    return parts


lookup = get_in  # shared with the editor and the validator


def same_tree(a, b):
    """Deep equality that tells true from 1 and 1 from 1.0."""
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same_tree(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_tree(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def plain(value):
    """A TOML value as JSON-safe data (dates become ISO strings)."""
    def default(obj):
        if isinstance(obj, (datetime.date, datetime.time)):
            return obj.isoformat()
        return str(obj)
    return json.loads(json.dumps(value, default=default))


def diff_data(before, after, file=None, prefix=()):
    """Keys added, removed and changed from before to after.

    A table that exists on one side only is reported once, whole (a table
    holding only tables is reported by its sub-tables).
    """
    out = dict(added=[], removed=[], changed=[])
    _diff(before or {}, after or {}, tuple(prefix), file, out)
    return out


def _entry(path, file, **values):
    e = dict(key=dotted(path), path=list(path))
    if file is not None:
        e['file'] = file
    for k, v in values.items():
        e[k] = plain(v)
    return e


def _super_table(value):
    """A table that holds only tables: reported by its sub-tables, not as one unit."""
    return isinstance(value, dict) and bool(value) and all(isinstance(v, dict) for v in value.values())


def _diff(before, after, prefix, file, out):
    for k in before:
        path = prefix + (k,)
        if k not in after:
            if _super_table(before[k]):
                _diff(before[k], {}, path, file, out)
            else:
                out['removed'].append(_entry(path, file, value=before[k]))
        elif isinstance(before[k], dict) and isinstance(after[k], dict):
            _diff(before[k], after[k], path, file, out)
        elif not same_tree(before[k], after[k]):
            out['changed'].append(_entry(path, file, before=before[k], after=after[k]))
    for k in after:
        if k not in before:
            if _super_table(after[k]):
                _diff({}, after[k], prefix + (k,), file, out)
            else:
                out['added'].append(_entry(prefix + (k,), file, value=after[k]))


def tree_drift(baseline_files, current_files, base_data, cur_data):
    """Drift of a whole config tree.

    baseline_files / current_files: path -> sha256 of each file of the tree;
    base_data / cur_data: path -> parsed data (files that parse).
    """
    drift = dict(added=[], removed=[], changed=[],
                 files=dict(added=sorted(p for p in current_files if p not in baseline_files),
                            removed=sorted(p for p in baseline_files if p not in current_files),
                            changed=sorted(p for p in baseline_files if p in current_files
                                           and baseline_files[p] != current_files[p])))
    order = list(baseline_files) + [p for p in current_files if p not in baseline_files]
    for p in order:
        if p in baseline_files and p in current_files and baseline_files[p] == current_files[p]:
            continue
        before, after = base_data.get(p), cur_data.get(p)
        if before is None or after is None:
            # a whole file came or went: its tables, not its version line
            before = dict((k, v) for k, v in (before or {}).items() if k != 'version')
            after = dict((k, v) for k, v in (after or {}).items() if k != 'version')
        one = diff_data(before, after, file=p)
        for k in ('added', 'removed', 'changed'):
            drift[k].extend(one[k])
    return drift


def has_drift(drift):
    return bool(drift['added'] or drift['removed'] or drift['changed']
                or any(drift['files'].values()))


def protected_drift(protect, base_data, base_layout, cur_data, cur_layout):
    """Protected keys whose value differs between baseline and now.

    Each entry: key (as given), path (dotted, in the current file's version),
    change (added/removed/changed), before, after.
    """
    out = []
    for key in protect:
        cur_path = resolve_protect(cur_layout, key) if cur_layout is not None else None
        base_path = resolve_protect(base_layout, key) if base_layout is not None else cur_path
        if cur_path is None:
            cur_path = base_path
        before = lookup(base_data or {}, base_path) if base_path else None
        after = lookup(cur_data or {}, cur_path) if cur_path else None
        if same_tree(before, after):
            continue
        change = 'removed' if after is None else 'added' if before is None else 'changed'
        out.append(dict(key=key, path=dotted(cur_path), change=change, before=plain(before), after=plain(after)))
    return out


def describe(entries):
    """'cri.runtimes.runc (plugins."...".runc) was removed; ...' for messages."""
    return '; '.join('%s (%s) was %s' % (e['key'], e['path'], e['change']) for e in entries)
