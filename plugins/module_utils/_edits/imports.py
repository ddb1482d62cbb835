# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The top-level ``imports`` array of a containerd config, edited safely.

Two users:

- ``containerd_imports`` (``apply_imports``): each listed entry once, owned in
  the ledger (kind ``import``, resource ``import:<absolute path>``), so that
  uninstall removes only what an owner added and gives back the original
  bytes (the ``imports`` key itself is deleted again when an owner created it).
- ``containerd_baseline`` (``clean_imports``): fold duplicates and drop
  dangling entries, with no ledger involvement.

Edits are splices of the array's own text: a multi-line array stays
multi-line with its indentation, each kept entry keeps its quoting, a
trailing comma style is kept, and a comment after the array survives.
Adding an entry and removing it again gives back the original text.
Entries are compared the way the node's containerd reads them
(``import_pattern``): a relative file against the config file's folder, a
relative glob there too except on containerd 1.6, which expands it against
its working folder; two entries are the same only when they resolve alike.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    skip_string,
    dotted_path,
    render_value,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    DAEMON_CWD,
    describe_lost,
    import_pattern,
    is_glob,
    load_tree,
    reads_v3,
    replaces_plugin_tables,
    resolve_import,
)

IMPORTS = ('imports',)
KIND = 'import'


def resource_of(key):
    """Ledger resource for an entry, by its resolved absolute path."""
    return 'import:' + key


def entry_key(entry, config_path, containerd_ver=None):
    """What an entry means to containerd: its absolute, normalised path (or pattern), as containerd_ver resolves it."""
    return import_pattern(entry, config_path, containerd_ver)


def record_key(rec, config_path, containerd_ver=None):
    """The entry an import record holds, as containerd_ver resolves it (its resource for a record without one)."""
    entry = rec.get('entry')
    if isinstance(entry, str):
        return entry_key(entry, config_path, containerd_ver)
    return rec.get('resource', '')[len('import:'):]


def relative_glob_elsewhere(entry, config_path, containerd_ver):
    """The warning for a relative glob containerd_ver expands against its working folder, else None."""
    pattern = import_pattern(entry, config_path, containerd_ver)
    meant = resolve_import(entry, config_path)
    if pattern == meant:
        return None
    return ('%s: containerd %d.%d expands the relative glob %s in imports against its working folder (%s), not '
            'against the config\'s folder: it reads %s (%d file(s) now), not %s (%d file(s) now). Fix: write the '
            'entry absolute: %s.'
            % (config_path, containerd_ver[0], containerd_ver[1], entry, DAEMON_CWD, pattern,
               len(glob.glob(pattern)), meant, len(glob.glob(meant)), meant))


def entry_missing(entry, config_path):
    """True for a non-glob entry whose file does not exist (containerd refuses to start)."""
    return not is_glob(entry) and not os.path.exists(resolve_import(entry, config_path))


# --------------------------------------------------------------- array text
class _Element(object):
    __slots__ = ('vstart', 'vend', 'comma')

    def __init__(self, vstart, vend, comma):
        self.vstart = vstart
        self.vend = vend
        self.comma = comma      # offset of the comma after the value, or None


def _skip_blank(raw, pos):
    """Skip blanks, newlines and comments inside an array."""
    n = len(raw)
    while pos < n:
        c = raw[pos]
        if c in ' \t\r\n':
            pos += 1
        elif c == '#':
            nl = raw.find('\n', pos)
            pos = n if nl < 0 else nl + 1
        else:
            break
    return pos


def _elements(raw):
    """The string elements of an array's raw text, with their offsets."""
    if not raw.startswith('['):
        raise TomlLayoutError('imports is not an array')
    out = []
    pos = 1
    while True:
        pos = _skip_blank(raw, pos)
        if pos >= len(raw):
            raise TomlLayoutError('unterminated imports array')
        if raw[pos] == ']':
            return out
        if raw[pos] not in '"\'':
            raise TomlLayoutError('imports holds a value that is not a string at offset %d' % pos)
        vend = skip_string(raw, pos)
        after = _skip_blank(raw, vend)
        comma = None
        if after < len(raw) and raw[after] == ',':
            comma = after
            after += 1
        out.append(_Element(pos, vend, comma))
        pos = after
        if comma is None:
            pos = _skip_blank(raw, pos)
            if pos >= len(raw) or raw[pos] != ']':
                raise TomlLayoutError('"," or "]" expected in imports at offset %d' % pos)


def _line_start(raw, pos):
    return raw.rfind('\n', 0, pos) + 1


def _own_line(raw, el):
    """(start, end, indent) of the line that holds only this element, else None."""
    start = _line_start(raw, el.vstart)
    if start == 0 or raw[start:el.vstart].strip(' \t'):
        return None
    pos = el.vend
    while pos < len(raw) and raw[pos] in ' \t':
        pos += 1
    if el.comma is not None:
        if pos != el.comma:
            return None
        pos += 1
        while pos < len(raw) and raw[pos] in ' \t':
            pos += 1
    if pos < len(raw) and raw[pos] == '#':
        nl = raw.find('\n', pos)
        pos = len(raw) if nl < 0 else nl
    if pos < len(raw) and raw[pos] == '\r':
        pos += 1
    if pos >= len(raw) or raw[pos] != '\n':
        return None
    return start, pos + 1, raw[start:el.vstart]


def _separator(raw, els):
    """How the file separates entries written on one line (', ' by default)."""
    for a, b in zip(els, els[1:]):
        sep = raw[a.vend:b.vstart]
        if '\n' not in sep and '#' not in sep:
            return sep
    return ', '


def _inner_blank(raw):
    return not raw[1:-1].strip(' \t\r\n')


def insert_raw(raw, index, rendered):
    """Array text with the rendered string inserted before element index."""
    els = _elements(raw)
    if not els:
        if _inner_blank(raw):
            return '[' + rendered + ']'
        # only comments inside: a line before the closing bracket
        close = len(raw) - 1
        start = _line_start(raw, close)
        indent = raw[start:close]
        if start and not indent.strip(' \t'):
            return raw[:start] + indent + '  ' + rendered + ',\n' + raw[start:]
        return raw[:close] + rendered + raw[close:]
    if index >= len(els):
        last = els[-1]
        line = _own_line(raw, last)
        if line is not None:
            start, end, indent = line
            if last.comma is None:
                return raw[:last.vend] + ',' + raw[last.vend:end] + indent + rendered + '\n' + raw[end:]
            return raw[:end] + indent + rendered + ',\n' + raw[end:]
        return raw[:last.vend] + _separator(raw, els) + rendered + raw[last.vend:]
    el = els[index]
    line = _own_line(raw, el)
    if line is not None:
        start, end, indent = line
        return raw[:start] + indent + rendered + ',\n' + raw[start:]
    return raw[:el.vstart] + rendered + _separator(raw, els) + raw[el.vstart:]


def remove_raw(raw, index):
    """Array text without element index (the inverse of insert_raw)."""
    els = _elements(raw)
    el = els[index]
    line = _own_line(raw, el)
    if line is not None:
        start, end, _indent = line
        out = raw[:start] + raw[end:]
        if index == len(els) - 1 and el.comma is None and index > 0:
            prev = els[index - 1]
            out = out[:prev.comma] + out[prev.comma + 1:]
        return '[]' if _inner_blank(out) else out
    if len(els) == 1:
        out = raw[:el.vstart] + raw[(el.comma + 1) if el.comma is not None else el.vend:]
        return '[]' if _inner_blank(out) else out
    if index < len(els) - 1:
        return raw[:el.vstart] + raw[els[index + 1].vstart:]
    return raw[:els[index - 1].vend] + raw[el.vend:]


class ImportsArray(object):
    """The ``imports`` key of a ConfigDocument, edited as text."""

    def __init__(self, doc, containerd_ver=None):
        self.doc = doc
        self.containerd_ver = containerd_ver    # the node's containerd: how it resolves the entries
        value = doc.toml.get(IMPORTS)
        if value is not None:
            if not isinstance(value, list):
                raise ConfigError('%s: "imports" must be an array of file paths, found %r. Nothing was written. '
                                  'Fix: write it as imports = ["/etc/containerd/conf.d/*.toml"].'
                                  % (doc.path, value), key='imports')
            for item in value:
                if not isinstance(item, str):
                    raise ConfigError('%s: "imports" entry %r is not a string: containerd refuses this file. '
                                      'Nothing was written. Fix: make every entry a quoted path.'
                                      % (doc.path, item), key='imports')
            if doc.toml.find_keyval(IMPORTS) is None:
                raise ConfigError('%s: "imports" is not written as a top-level key line; nodeguard cannot '
                                  'edit it. Nothing was written.' % doc.path, key='imports')

    @property
    def present(self):
        return self.doc.toml.get(IMPORTS) is not None

    @property
    def entries(self):
        return list(self.doc.toml.get(IMPORTS) or [])

    def keys(self):
        return [entry_key(e, self.doc.path, self.containerd_ver) for e in self.entries]

    def _literal(self):
        raw = self.doc.toml.raw_value(IMPORTS)
        if raw:
            try:
                els = _elements(raw)
            except TomlLayoutError:
                els = []
            single = sum(1 for e in els if raw[e.vstart] == "'")
            if els:
                return single * 2 > len(els)
        return self.doc.toml.literal_style()

    def _apply(self, what, func, *args):
        try:
            return func(*args)
        except TomlLayoutError as exc:
            raise ConfigError('%s: cannot %s in "imports" (%s). Nothing was written; please report the layout '
                              'of the imports line.' % (self.doc.path, what, exc), key='imports')

    def insert(self, index, entry):
        """Insert entry before element index; returns True when the key was created."""
        if not self.present:
            self._apply('add %s' % entry, self.doc.toml.set_value, IMPORTS, [entry])
            return True
        rendered = render_value(entry, self._literal())
        raw = self.doc.toml.raw_value(IMPORTS)
        new = self._apply('add %s' % entry, insert_raw, raw, index, rendered)
        self._apply('add %s' % entry, self.doc.toml.restore_raw, IMPORTS, new)
        return False

    def remove(self, index):
        entry = self.entries[index]
        raw = self.doc.toml.raw_value(IMPORTS)
        new = self._apply('remove %s' % entry, remove_raw, raw, index)
        self._apply('remove %s' % entry, self.doc.toml.restore_raw, IMPORTS, new)
        return entry

    def remove_key(self, key):
        """Remove every occurrence of key; returns the entries removed."""
        out = []
        keys = self.keys()
        for i in range(len(keys) - 1, -1, -1):
            if keys[i] == key:
                out.insert(0, self.remove(i))
        return out

    def delete(self):
        self._apply('delete the key', self.doc.toml.delete_value, IMPORTS)

    def duplicate_indexes(self, only=None):
        """Indexes of entries that repeat an earlier one (the same path or pattern to the node's containerd)."""
        seen = set()
        out = []
        for i, key in enumerate(self.keys()):
            if key in seen and (only is None or key in only):
                out.append(i)
            seen.add(key)
        return out

    def fold_duplicates(self, only=None):
        """Drop later occurrences, keeping the first; returns the entries dropped (in file order)."""
        entries = self.entries
        idx = self.duplicate_indexes(only)
        for i in reversed(idx):
            self.remove(i)
        return [entries[i] for i in idx]


def clean_imports(doc, drop_missing=True, containerd_ver=None):
    """Fold duplicate imports and drop dangling ones, in a ConfigDocument.

    For containerd_baseline (repair); no ledger records are read or written.
    Duplicates (compared as containerd_ver resolves them: import_pattern)
    are folded into the first occurrence.
    With drop_missing, entries that are not globs and whose file does not
    exist are removed (containerd refuses to start on them; a glob that
    matches nothing is harmless and stays).  An array that ends up empty
    stays as ``imports = []``.

    Returns dict(duplicates_removed=[entries...], removed_missing=[entries...]).
    Raises ConfigError when ``imports`` is not an array of strings.
    """
    arr = ImportsArray(doc, containerd_ver)
    result = dict(duplicates_removed=[], removed_missing=[])
    if not arr.present:
        return result
    result['duplicates_removed'] = arr.fold_duplicates()
    if drop_missing:
        entries = arr.entries
        for i in range(len(entries) - 1, -1, -1):
            if entry_missing(entries[i], doc.path):
                arr.remove(i)
                result['removed_missing'].insert(0, entries[i])
    return result


# ------------------------------------------------------------ owned edits
def _check_entry(doc, entry):
    if not isinstance(entry, str) or not entry.strip():
        raise ConfigError('%s: imports entry %r is empty. Fix: give a file path or a glob.' % (doc.path, entry),
                          key='imports')
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in entry):
        raise ConfigError('%s: imports entry %r holds a control character (a newline?). Fix: give a plain '
                          'file path or glob.' % (doc.path, entry), key='imports')


def _version_text(containerd_ver, doc):
    if containerd_ver:
        return 'containerd %d.%d' % tuple(containerd_ver)
    return 'containerd 1.x (assumed: the version is unknown and %s is config version %d)' % (doc.path, doc.version)


def plugin_overrides(doc, entry, containerd_ver, pending=None):
    """Plugin tables of the main config that importing entry would replace whole.

    Returns [(file, plugin id, [what would be lost])] - empty on containerd
    2.x, which merges plugin tables.  pending maps drop-ins not written yet
    (absolute path: parsed data) to what they will hold.
    """
    if not replaces_plugin_tables(containerd_ver, doc.version):
        return []
    main_plugins = doc.data.get('plugins') or {}
    files, _problems = load_tree(doc.path, {'imports': [entry]}, containerd_ver, overrides=pending)
    out = []
    for path, data in files[1:]:
        for plugin_id, table in sorted((data.get('plugins') or {}).items()):
            main = main_plugins.get(plugin_id)
            if isinstance(main, dict) and isinstance(table, dict):
                cri = plugin_id if plugin_id == doc.layout.cri_plugin else None
                lost = describe_lost(main, table, cri)
                if lost:
                    out.append((path, plugin_id, lost))
    return out


def refuse_plugin_override(doc, entry, containerd_ver, pending=None):
    """The refusal (a ConfigError) when importing entry would replace a plugin table of doc (containerd 1.x)."""
    overrides = plugin_overrides(doc, entry, containerd_ver, pending)
    if overrides:
        raise _override_error(doc, entry, overrides, containerd_ver)


def unread_keys(doc, entries, containerd_ver):
    """[(file, {why: [keys]})] of entries' files whose version 2 CRI keys containerd 2.x would not read.

    The merged view's measured rules (2.1): the merged version 2 CRI table
    moves to the version 3 plugins only when the last file read with a
    version line says version = 2, runtime keys only where the version 3
    table lacks them, snapshot keys only beside a runtimes table.
    """
    if not entries or doc.version < 3 and not reads_v3(containerd_ver):
        return []
    view = load_effective(doc.path, doc.data, containerd_ver or (2, 0))
    added, _problems = load_tree(doc.path, {'imports': list(entries)})
    out = []
    for path, _data in added[1:]:
        reasons = {}
        for (where, key), why in sorted(view.unread.items()):
            if where == path:
                reasons.setdefault(why, []).append(dotted_path(key))
        if reasons:
            out.append((path, reasons))
    return out


def _override_error(doc, entry, overrides, containerd_ver):
    parts = []
    for path, plugin_id, lost in overrides:
        parts.append('%s defines plugins."%s", which replaces the main config\'s plugins."%s" table whole, '
                     'so %s would be lost' % (path, plugin_id, plugin_id, ', '.join(lost)))
    default = doc.default_runtime() or 'runc'
    consequence = ''
    if any("runtime %r" % default in lost for _p, _i, lost in overrides):
        consequence = (' Without the default runtime\'s table (%r) the CRI plugin fails to load and no pod can '
                       'start.' % default)
    return ConfigError(
        '%s: refusing to import %s: on %s an imported file\'s plugins.<id> table replaces the main file\'s '
        'table for that id instead of merging with it (containerd issues 5837 and 7982): %s.%s Nothing was '
        'written. Fix: make the change in %s itself (nodeguard.containerd.containerd_runtime or containerd_setting), '
        'let the drop-in carry the whole plugin table, move to containerd 2.x with config version 3 (which '
        'merges plugin tables), or set allow_plugin_override: true if replacing the table is intended.'
        % (doc.path, entry, _version_text(containerd_ver, doc), '; '.join(parts), consequence, doc.path),
        key='imports', overrides=[dict(file=p, plugin=i, lost=l) for p, i, l in overrides])


def _held(ledger, arr, key, owner=None):
    """The import records (of owner, or of anyone) whose entry the node's containerd resolves to key."""
    return [rec for rec in ledger.select(owner=owner, kind=KIND)
            if record_key(rec, arr.doc.path, arr.containerd_ver) == key]


def _release_records(ledger, arr, records, flags):
    """Drop import records; pass 'added' on to a remaining holder of the entry."""
    for rec in records:
        key = record_key(rec, arr.doc.path, arr.containerd_ver)
        ledger.remove(rec)
        if rec.get('created_key'):
            flags['created_key'] = True
        rest = sorted(_held(ledger, arr, key), key=lambda r: r['seq'])
        if rest and rec.get('added'):
            rest[0]['added'] = True


def _settle_key(arr, ledger, flags):
    """Delete the imports key again when it is empty and an owner had created it."""
    if not flags.get('created_key'):
        return
    if arr.present and not arr.entries:
        arr.delete()
        return
    rest = sorted(ledger.select(kind=KIND), key=lambda r: r['seq'])
    if rest:
        rest[0]['created_key'] = True
        ledger.dirty = True


def _insert_position(arr, keys, k, position):
    """Where the k-th wanted entry goes so the wanted entries keep their order."""
    current = arr.keys()
    if position == 'append':
        later = [current.index(key) for key in keys[k + 1:] if key in current]
        return min(later) if later else len(current)
    earlier = [len(current) - 1 - current[::-1].index(key) for key in keys[:k] if key in current]
    return max(earlier) + 1 if earlier else 0


def _unique_wanted(doc, entries, containerd_ver):
    """(entries, keys): the wanted entries, each checked and once."""
    wanted, keys = [], []
    for entry in entries:
        _check_entry(doc, entry)
        key = entry_key(entry, doc.path, containerd_ver)
        if key not in keys:
            wanted.append(entry)
            keys.append(key)
    return wanted, keys


def _prune_missing(doc, ledger, ctx, arr, protect, flags):
    """Repair: remove entries whose file is gone (never those in protect); the entries pruned."""
    pruned = []
    seen = set()
    for entry in arr.entries:
        key = entry_key(entry, doc.path, arr.containerd_ver)
        if key in protect or key in seen or not entry_missing(entry, doc.path):
            continue
        seen.add(key)
        removed_now = arr.remove_key(key)
        if removed_now:
            pruned.append(entry)
            for gone in removed_now:
                ctx.allow_missing_import(gone)
        _release_records(ledger, arr, _held(ledger, arr, key), flags)
    return pruned


def _allow_or_refuse_missing(doc, ctx, params, entry):
    """An entry to add whose file does not exist yet: allowed, warned or refused."""
    full = resolve_import(entry, doc.path)
    if full in (params.get('will_exist') or ()):
        # a file the same call writes first (containerd_config in check mode, which writes nothing)
        ctx.allow_missing_import(entry)
    elif params['require_exists']:
        raise ConfigError('%s: cannot import %s: %s does not exist, and containerd refuses to start '
                          'when an imported file is missing. Nothing was written. Fix: create the '
                          'file first (e.g. ansible.builtin.copy before this task), or set '
                          'require_exists: false if it will exist before containerd restarts.'
                          % (doc.path, entry, full), key='imports')
    else:
        ctx.warn('%s: %s imports %s, which does not exist yet: containerd will refuse to start until it '
                 'does' % (doc.path, entry, full))
        ctx.allow_missing_import(entry)


def _add_entries(doc, ledger, ctx, params, arr, wanted, keys):
    """state=present: add what is not there yet, record it for the owner; the entries added."""
    owner = params['owner']
    position = params.get('position') or 'append'
    added = []
    containerd_ver = arr.containerd_ver
    for k, (entry, key) in enumerate(zip(wanted, keys)):
        resource = resource_of(key)
        mine = _held(ledger, arr, key, owner)
        if key in arr.keys():
            if not mine:
                ledger.add({'owner': owner, 'resource': resource, 'kind': KIND, 'entry': entry,
                            'added': False, 'created_key': False})
            continue
        if entry_missing(entry, doc.path):
            _allow_or_refuse_missing(doc, ctx, params, entry)
        if not params.get('allow_plugin_override'):
            refuse_plugin_override(doc, entry, containerd_ver)
        created = arr.insert(_insert_position(arr, keys, k, position), entry)
        added.append(entry)
        if mine:
            mine[0]['added'] = True
            mine[0]['created_key'] = mine[0].get('created_key') or created
            ledger.dirty = True
        else:
            ledger.add({'owner': owner, 'resource': resource, 'kind': KIND, 'entry': entry,
                        'added': True, 'created_key': created})
    _warn_unread_and_order(doc, ctx, arr, wanted, keys, added, containerd_ver)
    return added


def _warn_unread_and_order(doc, ctx, arr, wanted, keys, added, containerd_ver):
    """Warnings after an add: CRI keys the binary would not read, and entries found in another order."""
    for path, reasons in unread_keys(doc, added, containerd_ver):
        ctx.warn('%s: containerd %s would not read these of its version 2 CRI keys: %s. Fix: write the '
                 'drop-in with version = 3 and the version 3 plugin ids (plugins."io.containerd.cri.v1.runtime", '
                 'plugins."io.containerd.cri.v1.images").'
                 % (path, '%d.%d' % tuple(containerd_ver[:2]) if containerd_ver else '2.x', '; '.join(
                     '%s (%s)' % (', '.join(keys), why) for why, keys in sorted(reasons.items()))))
    order = [arr.keys().index(key) for key in keys if key in arr.keys()]
    if order != sorted(order):
        ctx.warn('%s: the imports %s are in the file in another order than listed; they were left where they '
                 'are (later files win when containerd merges them). Remove them with state: absent and add '
                 'them again to reorder.' % (doc.path, ', '.join(wanted)))


def _remove_entries(doc, ledger, ctx, owner, arr, wanted, keys, flags):
    """state=absent: remove what this owner added and nobody else imports; (removed, kept)."""
    removed, kept = [], []
    for entry, key in zip(wanted, keys):
        mine = _held(ledger, arr, key, owner)
        others = sorted(set(r['owner'] for r in _held(ledger, arr, key)) - set([owner]))
        if not mine and not others and key in arr.keys() and not entry_missing(entry, doc.path):
            # nobody recorded it: not this owner's to remove (prune_missing removes dangling ones)
            kept.append(entry)
            ctx.warn('%s: %s is kept: owner %s did not add it (no ledger record). A dangling entry (its file is '
                     'gone) is removed whoever added it, since containerd cannot start with it.'
                     % (doc.path, entry, owner))
            continue
        _release_records(ledger, arr, mine, flags)
        if others:
            if key in arr.keys():
                kept.append(entry)
                ctx.warn('%s: %s is kept: owner(s) %s still import it' % (doc.path, entry, ', '.join(others)))
            continue
        if key in arr.keys() and not any(r.get('added') for r in mine) and not entry_missing(entry, doc.path):
            # the owner found it there (its record says not added): it stays, as it was before the install
            kept.append(entry)
            continue
        if arr.remove_key(key):
            removed.append(entry)
    return removed, kept


def _fold_duplicates(doc, ctx, arr, keys):
    """Duplicates of the listed entries always; all of them when the file is written anyway."""
    dupes = arr.duplicate_indexes(only=set(keys))
    if dupes or doc.changed:
        return arr.fold_duplicates(None)
    others = [arr.entries[i] for i in arr.duplicate_indexes()]
    if others:
        ctx.warn('%s: imports lists %s more than once (harmless to containerd); the duplicates are folded at '
                 'the next change of the file' % (doc.path, ', '.join(sorted(set(others)))))
    return []


def dangling_in_imported(doc, entries, containerd_ver):
    """[(file, entry)]: entries of the files doc's imports load whose file is gone (containerd refuses to start).

    The imports of doc itself are not listed; this edit changes only doc.
    """
    files, _problems = load_tree(doc.path, {'imports': list(entries)}, containerd_ver)
    out = []
    for path, data in files[1:]:
        value = data.get('imports')
        for entry in value if isinstance(value, list) else ():
            if isinstance(entry, str) and entry_missing(entry, path) and (path, entry) not in out:
                out.append((path, entry))
    return out


def _dangling_fix(doc, main_path, elsewhere):
    """What is wrong with the dangling entries of drop-ins, and how to remove them."""
    files = []
    for path, _entry in elsewhere:
        if path not in files:
            files.append(path)
    return ('%s: containerd refuses to start while the entry is there, and this task edits only the imports of '
            '%s. Fix: remove the entry from the file that holds it, for example with '
            'nodeguard.containerd.containerd_imports (path: %s, edit_in: %s, prune_missing: true)%s'
            % ('; '.join('%s imports %s, which does not exist' % (path, entry) for path, entry in elsewhere),
               doc.path, main_path, files[0],
               '' if len(files) == 1 else ', and the same with edit_in: %s' % ', '.join(files[1:])))


def _report_dangling_elsewhere(doc, ctx, params, keys, elsewhere):
    """Dangling entries of a drop-in: a refusal when the task asked to remove them, else a warning."""
    if not elsewhere:
        return
    msg = _dangling_fix(doc, ctx.path or doc.path, elsewhere)
    asked = params.get('prune_missing') or (params.get('state') == 'absent' and any(
        entry_key(entry, path, ctx.containerd_version) in keys for path, entry in elsewhere))
    if asked:
        raise ConfigError(msg + '. Nothing was written.', key='imports',
                          missing=[entry for _path, entry in elsewhere],
                          missing_in=[dict(file=path, entry=entry) for path, entry in elsewhere])
    ctx.warn(msg + '.')


def apply_imports(doc, ledger, ctx, params):
    """The containerd_imports edit: see the module's documentation.

    Entries it prunes, and those require_exists: false adds before their
    file exists, are known to be missing: ctx.allow_missing_import lets the
    engine's built-in check pass them (every other missing import refuses).
    Entries are compared as the node's containerd resolves them.
    """
    owner = params['owner']
    state = params.get('state') or 'present'
    containerd_ver = ctx.containerd_version
    arr = ImportsArray(doc, containerd_ver)
    flags = dict(created_key=False)
    added, removed, pruned, kept = [], [], [], []
    wanted, keys = _unique_wanted(doc, params.get('imports') or [], containerd_ver)
    if params.get('prune_missing'):
        pruned = _prune_missing(doc, ledger, ctx, arr, set(keys) if state == 'present' else set(), flags)
    if state == 'present':
        added = _add_entries(doc, ledger, ctx, params, arr, wanted, keys)
    else:
        removed, kept = _remove_entries(doc, ledger, ctx, owner, arr, wanted, keys, flags)
    duplicates_removed = _fold_duplicates(doc, ctx, arr, keys)
    # the key itself: deleted again when the owner who created it is gone and it is empty
    _settle_key(arr, ledger, flags)
    final = arr.entries
    elsewhere = dangling_in_imported(doc, final, containerd_ver)
    _report_dangling_elsewhere(doc, ctx, params, keys, elsewhere)
    for entry in final:
        warning = relative_glob_elsewhere(entry, doc.path, containerd_ver)
        if warning:
            ctx.warn(warning)
    missing = [e for e in final if entry_missing(e, doc.path)]
    if missing and not params.get('prune_missing'):
        ctx.warn('%s imports %s, which do(es) not exist: containerd refuses to start with this config. Fix: '
                 'prune_missing: true, or state: absent for those entries.' % (doc.path, ', '.join(missing)))
    return dict(imports=final, added=added, removed=pruned + removed, pruned=pruned, kept=kept,
                duplicates_removed=duplicates_removed, missing=missing + [e for _p, e in elsewhere],
                missing_in=[dict(file=p, entry=e) for p, e in elsewhere], owner=owner)
