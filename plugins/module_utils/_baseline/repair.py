# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Repair: put the protected keys of a baseline back into the current config.

Everything else in the file stays as it is now (an ``nvidia`` runtime added
since the snapshot stays).  A protected table that is gone is copied back
from the baseline's own text, comments and all; one that changed is brought
back key by key in place, so the diff shows only what differed.  Duplicate
and dangling ``imports`` entries are folded by ``_imports_edit.clean_imports``.
The engine's transaction then verifies, checks and validates the result.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.drift import (
    lookup,
    resolve_protect,
    same_tree,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument, ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ownership import recorded_edit, dotted
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import set_in


def _is_inline(toml, path):
    """True when the value at path is written as one key line (inline table/array)."""
    return toml.find_keyval(path) is not None


def _remove(doc, path, value):
    if isinstance(value, dict) and not _is_inline(doc.toml, path):
        recorded_edit(doc, 'delete %s' % dotted(path), doc.toml.delete_table, path)
    else:
        recorded_edit(doc, 'delete %s' % dotted(path), doc.toml.delete_value, path)


def _section_block(src, path, flat=False):
    """The baseline's own text of table path and its sub-tables, or None.

    None when part of the table is written outside its sections (dotted keys
    in a parent section, an inline table): it is then rendered afresh.
    """
    toml = src.toml
    if _is_inline(toml, path):
        return None
    heads = toml._subtree_headers(path)
    if not heads:
        return None
    for e in toml.entries:
        if e.kind == 'keyval' and tuple(e.path[:len(path)]) == tuple(path) \
                and tuple(e.table[:len(path)]) != tuple(path):
            return None
    chunks = []
    multiline = False
    headers = toml.headers()
    end = None
    for i, h in enumerate(heads):
        section = toml._section(h)
        if not i:
            start = h.start
        elif headers[headers.index(h) - 1] is heads[i - 1]:
            start = end  # right after the previous section: its trailing comments and this header's come too
        else:
            start = toml._leading_blank_start(h)
        end = toml._content_end(section)
        chunks.append(toml.text[start:end])
        multiline = multiline or any(e.kind == 'keyval' and toml.text.count('\n', e.start, e.end) > 1
                                     for e in section)
    block = ''.join(chunks)
    if not block.endswith('\n'):
        block += '\n'
    if flat and not multiline:
        # the file is written flat (as nvidia-ctk re-serialises it): so is the table put back
        block = ''.join(line.lstrip(' \t') for line in block.splitlines(True))
    return block


def _flat(toml):
    """True when no header or key line of the file is indented."""
    return not any(e.indent for e in toml.entries if e.kind in ('header', 'keyval'))


def _add_rendered(doc, path, table):
    """Write a table as [sections], sub-tables as their own sections."""
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
    subs = [(k, v) for k, v in table.items() if isinstance(v, dict)]
    if scalars or not subs:
        recorded_edit(doc, 'add %s' % dotted(path), doc.toml.add_section, path, scalars)
    for k, v in subs:
        _add_rendered(doc, path + (k,), v)


def _add(doc, src, path, value):
    if isinstance(value, dict):
        block = _section_block(src, path, _flat(doc.toml))
        if block is None:
            _add_rendered(doc, path, value)
            return
        recorded_edit(doc, 'add %s' % dotted(path), doc.toml._insert_block, path, block)
        set_in(doc.toml.data, path, copy.deepcopy(value))
        return
    if doc.toml.get(path) is None and _put_line_back(doc, src, path, value):
        return
    raw = src.toml.raw_value(path)
    if raw is not None:
        recorded_edit(doc, 'set %s' % dotted(path), doc.toml.restore_raw, path, raw)
    else:
        recorded_edit(doc, 'set %s' % dotted(path), doc.toml.set_value, path, value)


def _put_line_back(doc, src, path, value):
    """A key the file lost goes back as the baseline's line, beside the key it followed there."""
    line = src.toml.key_line(path)
    if line is None:
        return False
    siblings = [e.path[-1] for e in src.toml.entries
                if e.kind == 'keyval' and tuple(e.table) == path[:-1] and e.nkey == 1]
    at = siblings.index(path[-1])
    neighbours = [(k, 'after') for k in reversed(siblings[:at])] + [(k, 'before') for k in siblings[at + 1:]]
    return recorded_edit(doc, 'set %s' % dotted(path), doc.toml.insert_key_line, path,
                         src.toml.text[line.start:line.end], value, neighbours)


def put_back(doc, src, path, base, cur):
    """Make doc's value at path equal the baseline's (src), touching as little as possible."""
    path = tuple(path)
    if same_tree(base, cur):
        return
    if isinstance(base, dict) and isinstance(cur, dict) and not _is_inline(doc.toml, path) \
            and not _is_inline(src.toml, path):
        for k in [k for k in cur if k not in base]:
            _remove(doc, path + (k,), cur[k])
        for k in base:
            put_back(doc, src, path + (k,), base[k], lookup(doc.toml.data, path + (k,)))
        return
    if cur is not None:
        if not isinstance(base, dict) and not isinstance(cur, dict) and base is not None:
            # a value that changed: put the baseline's text back in place
            _add(doc, src, path, base)
            return
        _remove(doc, path, cur)
    if base is not None:
        _add(doc, src, path, base)


def repair(doc, baseline_doc, protect, clean_imports, shadowed=None):
    """The edit callback's work; returns the module's result values.

    shadowed(data_before, data_after): None when putting a key back in this
    file is in effect, else dict(file=..., why=...) naming the later file
    that hides it; such keys are left as they are and listed in ``left``.
    """
    if baseline_doc.version != doc.version:
        raise ConfigError('%s declares version = %s but the baseline was taken of a version %s file: repair copies '
                          'keys between files of one config version. Nothing was written. Fix: use state: restore '
                          'to put the whole baseline back, or take a new snapshot.'
                          % (doc.path, doc.version, baseline_doc.version), key='version')
    restored = []
    left = []
    for key in protect:
        path = resolve_protect(doc.layout, key)
        base = lookup(baseline_doc.data, path)
        cur = lookup(doc.data, path)
        if same_tree(base, cur):
            continue
        change = 'added' if base is None else 'removed' if cur is None else 'changed'
        if shadowed is not None:
            trial = ConfigDocument(doc.path, doc.text, default_version=doc.version)
            put_back(trial, baseline_doc, path, base, lookup(trial.data, path))
            hidden = shadowed(doc.data, trial.data)
            if hidden:
                left.append(dict(key=key, path=dotted(path), file=doc.path, change=change,
                                 shadowed_by=hidden.get('file'),
                                 why='%s was %s in %s, but putting it back there would have no effect: %s. Left as '
                                     'it is (it comes into effect again if that file goes: state: restore puts '
                                     'the whole baseline back)' % (key, change, doc.path, hidden.get('why'))))
                continue
        put_back(doc, baseline_doc, path, base, cur)
        restored.append(dict(key=key, path=dotted(path), change=change))
    imports = clean_imports(doc, drop_missing=True)
    return dict(restored=[r['path'] for r in restored], restored_keys=restored, left=left,
                duplicates_removed=imports.get('duplicates_removed', []),
                removed_missing=imports.get('removed_missing', []))
