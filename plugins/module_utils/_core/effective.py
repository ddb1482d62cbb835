# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What containerd runs: config.toml merged with its drop-ins.

containerd loads the main file, then its imports breadth first (later files
win), and merges them by its own version's rules (facts note, measured on
1.6, 1.7 and 2.1):

- 1.x: an imported file's ``plugins.<id>`` table replaces the main one's
  whole; ``proxy_plugins``/``stream_processors`` entries are replaced one by
  one; top-level lists are appended; other top-level tables deep-merge.
- 2.x: plugin tables deep-merge (arrays inside them are replaced), then the
  merged version 2 CRI table moves to the version 3 plugins when the last
  file read with a version line says version = 2 (``migrate_merged_v2``),
  also when the main file says version = 2 and a version 3 drop-in comes
  later; otherwise only the gRPC server's own keys of that table are read
  (from a version 3 file as well); a drop-in without a version line merges
  as written (version 1's ``cri`` id renamed): its version 2 CRI tables
  are migrated with the others or not at all, its version 3 tables count
  (measured on 2.1: such a runtime table stops the migration of a version
  2 drop-in's runtimes).
- every version: a file whose ``imports`` is not a list is refused.

The view keeps, for every key, the file its value came from, so a module can
say where a change lives and whether it is in effect.  The model is
confirmed against the node's own ``containerd config dump`` when one is run
(``confirm_with_dump``): where the two disagree, the dump wins.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    ConfigError,
    version_text,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import dotted_path, get_in
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    file_version,
    load_tree,
    replaces_plugin_tables,
)

ABSENT = object()
APPENDED_LISTS = ('imports', 'disabled_plugins', 'required_plugins')
REPLACED_PER_KEY = ('proxy_plugins', 'stream_processors')

# containerd 2.x's migration of the version 2 CRI plugin table: these keys of
# plugins."io.containerd.grpc.v1.cri" move to the images plugin, these stay
# with the gRPC server, everything else goes to the runtime plugin.
_V2_IMAGES_KEYS = ('registry', 'image_decryption', 'max_concurrent_downloads', 'image_pull_progress_timeout',
                   'image_pull_with_sync_fs', 'stats_collect_period')
_V2_IMAGES_CONTAINERD_KEYS = ('snapshotter', 'disable_snapshot_annotations', 'discard_unpacked_layers')
_V2_GRPC_KEYS = ('disable_tcp_service', 'stream_server_address', 'stream_server_port', 'stream_idle_timeout',
                 'enable_tls_streaming', 'x509_key_pair_streaming')


# CRI keys containerd 1.6 accepts and drops (measured with config dump of 1.6.20: CDI came in 1.7)
NOT_IN_1_6 = (('plugins', CRI_V2, 'enable_cdi'), ('plugins', CRI_V2, 'cdi_spec_dirs'))
NOT_MIGRATED = 'a version 3 file is read after it, and containerd 2.x then migrates no version 2 CRI table'


def translate_v2_path(path):
    """A version 2 key path as containerd 2.x reads it (version 3 layout)."""
    path = tuple(path)
    if len(path) < 3 or path[:2] != ('plugins', CRI_V2):
        return path
    rest = path[2:]
    head = rest[0]
    if head == 'sandbox_image':
        return ('plugins', CRI_V3_IMAGES, 'pinned_images', 'sandbox')
    if head in _V2_IMAGES_KEYS:
        return ('plugins', CRI_V3_IMAGES) + rest
    if head in _V2_GRPC_KEYS:
        return path
    if head == 'containerd' and len(rest) > 1 and rest[1] in _V2_IMAGES_CONTAINERD_KEYS:
        return ('plugins', CRI_V3_IMAGES) + rest[1:]
    return ('plugins', CRI_V3_RUNTIME) + rest


def migrate_merged_v2(merged, origin, migrate=True, order=()):
    """containerd 2.x reading the merged version 2 CRI table; {(file, path): why} of the keys it does not read.

    Measured on 2.1 (config dump): the merged files are migrated only when
    the last one read with a version line says version = 2 (migrate);
    otherwise only the gRPC plugin's own keys are read.  Image keys replace
    the images plugin's whole; runtime keys (``containerd.<key>`` one by one)
    count only where the merged version 3 runtime table has no such key;
    snapshotter, disable_snapshot_annotations and discard_unpacked_layers
    move only when the CRI ``containerd`` table has a ``runtimes`` table (an
    empty one will do), else they are dropped.  order: the files in load
    order, to name the last one behind each plugin table.
    """
    cri = get_in(merged, ('plugins', CRI_V2))
    if not isinstance(cri, dict):
        return {}
    came_from = dict((p, origin.pop(p)) for p in list(origin) if p[:2] == ('plugins', CRI_V2) and len(p) > 2)
    containerd = cri.get('containerd')
    has_runtimes = isinstance(containerd, dict) and 'runtimes' in containerd
    keep, unread, owners = {}, {}, {}
    for old, value in _cri_keys(cri):
        new = translate_v2_path(old)
        sources = dict((new + p[len(old):], s) for p, s in came_from.items() if p[:len(old)] == old)
        why = None
        if new[1] == CRI_V2:
            _set(keep, old[2:], value)  # the gRPC plugin reads these as they are
        elif not migrate:
            why = NOT_MIGRATED
        elif old[2] == 'containerd' and old[-1] in _V2_IMAGES_CONTAINERD_KEYS and not has_runtimes:
            why = ('containerd 2.x moves containerd.%s of a version 2 CRI table to the images plugin only when '
                   'that table has a runtimes table' % old[-1])
        elif new[1] == CRI_V3_RUNTIME and get_in(merged, new) is not None:
            why = 'a version 3 file sets it, and containerd 2.x keeps that over a version 2 file\'s'
        else:
            for known in [p for p in origin if p[:len(new)] == new]:
                del origin[known]
            _set(merged, new, value)
            owners.setdefault(new[1], set()).update(sources.values())
        if why:
            unread.update(((s, p), why) for p, s in sources.items())
        else:
            origin.update(sources)
    rank = dict((p, i) for i, p in enumerate(order))
    for pid, files in owners.items():
        files.add(origin.get(('plugins', pid)))
        origin[('plugins', pid)] = max(files - {None}, key=lambda f: rank.get(f, -1))
    merged['plugins'][CRI_V2] = keep
    return unread


def _cri_keys(cri):
    """(path, value) of each key of a version 2 CRI table, and of each key of its containerd table."""
    for key, value in cri.items():
        if key == 'containerd' and isinstance(value, dict) and value:
            for sub, sub_value in value.items():
                yield ('plugins', CRI_V2, key, sub), sub_value
        else:
            yield ('plugins', CRI_V2, key), value


def _set(tree, path, value):
    cur = tree
    for part in path[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[path[-1]] = value


def iter_leaves(data, prefix=()):
    """(path, value) of every non-table value under data; empty tables count as leaves."""
    if isinstance(data, dict):
        if not data and prefix:
            yield prefix, {}
        for key, value in data.items():
            yield from iter_leaves(value, prefix + (key,))
    else:
        yield prefix, data


def changed_leaves(before, after):
    """What an edit changed: [(path, new value or ABSENT)], sorted by path."""
    old = dict(iter_leaves(before))
    new = dict(iter_leaves(after))
    out = []
    for path in set(old) | set(new):
        a, b = old.get(path, ABSENT), new.get(path, ABSENT)
        if a is ABSENT or b is ABSENT or not _same(a, b):
            if b is ABSENT and any(p[:len(path)] == path and p != path for p in new):
                continue  # an empty table that gained keys
            out.append((path, b))
    return sorted(out, key=lambda item: tuple(str(p) for p in item[0]))


def _same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return a == b and type(a) is type(b)


class EffectiveConfig(object):
    """The merged view of one config tree, with the file behind every value.

    files: [(path, data)] in containerd's load order; problems: imports that
    could not be read; merged: the data containerd runs (before its own
    defaults), in the main file's layout for 1.x and version 3 layout for
    2.x; origin: key path -> file that provided it.
    """

    def __init__(self, main_path, main_data, containerd_ver, overrides=None):
        self.main_path = main_path
        self.containerd_ver = containerd_ver
        self.main_version = file_version(main_data)
        self.files, self.problems = load_tree(main_path, main_data, containerd_ver, overrides=overrides)
        for problem in self.problems:
            if problem.whole:   # an imports that is not a list: containerd refuses the whole config
                raise ConfigError(problem.message, key='imports')
        self.replace = replaces_plugin_tables(containerd_ver, self.main_version)
        # containerd 2.x reads a version 2 main file by migrating it to 3
        self.migrates = not self.replace and self.main_version == 2 and containerd_ver is not None \
            and containerd_ver[0] >= 2
        # containerd 2.3 migrates each file from its own version before the merge (facts note, 2.3.4)
        self.per_file = containerd_ver is not None and tuple(containerd_ver[:2]) >= (2, 3)
        self.merged = {}
        self.origin = {}
        self.ignored = []       # (file, reason) containerd skips
        self.unread = {}        # (file, merged path): why containerd does not read that key (2.x: version 2 ones)
        self._last_version = self.main_version  # of the last file read that has a version line
        self._last_versioned = main_path
        for index, (path, data) in enumerate(self.files):
            self._merge_file(index, path, data)
        # on 2.3 each file's version 2 CRI table was migrated as it was read (_migrated_alone)
        if not self.replace and not self.per_file:
            self._read_v2_cri()
        elif self.replace and containerd_ver is not None and tuple(containerd_ver[:2]) < (1, 7):
            self._drop_keys(NOT_IN_1_6, 'containerd %s has no CDI (it came in 1.7): the key is accepted and dropped'
                            % version_text(containerd_ver))

    def _read_v2_cri(self):
        """2.x: the merged version 2 CRI table is migrated, or (a version 3 file read last) read as the gRPC
        plugin's table, which keeps only its own keys: from a version 3 file too (measured on 2.1)."""
        self.unread = migrate_merged_v2(self.merged, self.origin, self._last_version == 2,
                                        [p for p, _d in self.files])
        order = [p for p, _d in self.files]
        for (path, key), why in list(self.unread.items()):
            if why == NOT_MIGRATED and order.index(path) > order.index(self._last_versioned):
                self.unread[(path, key)] = ('it has no version line, and the last file read with one (%s) says '
                                            'version = %d, so containerd 2.x migrates no version 2 CRI table'
                                            % (self._last_versioned, self._last_version))
        versions = dict((p, file_version(d)) for p, d in self.files)
        for (path, key) in [k for k in self.unread if versions.get(k[0], 2) >= 3]:
            # measured on 2.1: the version 2 plugin id in a version 3 file is the gRPC plugin's, which
            # does not know the CRI keys ("Ignoring unknown key")
            self.unread[(path, key)] = ('%s is version 3, so containerd 2.x reads its plugins."%s" as the gRPC '
                                        'plugin\'s, which has no such key' % (path, CRI_V2))

    def _drop_keys(self, paths, why):
        """Keys the node's containerd does not know: out of the merged view wherever a file sets them."""
        for key in paths:
            for path, data in self.files:
                if get_in(data, key) is not None or (file_version(data) == 1 and
                                                     get_in(data, ('plugins', 'cri') + key[2:]) is not None):
                    self.unread[(path, key)] = why
            if get_in(self.merged, key) is not None:
                del get_in(self.merged, key[:-1])[key[-1]]
                for known in [p for p in self.origin if p[:len(key)] == key]:
                    del self.origin[known]

    # ------------------------------------------------------------ merging
    def _as_read(self, index, path, data):
        """A file's data as containerd reads it, or None when it ignores the file."""
        version = file_version(data)
        # 2.x reads a version 3 drop-in of a version 2 main file (measured on 2.1); 1.7 refuses it, 1.6 ignores it
        if index and version > self.main_version and not (self.migrates and version == 3):
            self.ignored.append((path, 'version = %d is higher than the main file\'s %d' % (version, self.main_version)))
            return None
        if version == 1 and not index and not self.replace and self.main_version != 2:
            if 'plugins' in data:
                self.ignored.append((path, 'no version line: containerd 2.x reads it as version 1 and ignores its '
                                           'plugins tables'))
            return dict((k, v) for k, v in data.items() if k != 'plugins')
        if version == 1:
            # no version line: merged as written, version 1's CRI plugin id renamed (measured on 1.6, 1.7 and
            # 2.1); on 2.x its version 2 CRI tables are migrated with the others when the last file with a
            # version line says version = 2, and its version 3 tables merge as they are
            plugins = data.get('plugins')
            if isinstance(plugins, dict) and 'cri' in plugins:
                plugins = dict(plugins)
                plugins[CRI_V2] = plugins.pop('cri')
                return dict(data, plugins=plugins)
            return data
        # a version 2 file merges as written; on 2.x migrate_merged_v2 reads the merged CRI table at the end,
        # which a version 3 file read last stops
        self._last_version = version
        self._last_versioned = path
        return data

    def _migrated_alone(self, path, data):
        """containerd 2.3: one file's version 2 CRI table in version 3 layout (also in a version 3 file, which
        2.1 ignored); its own version 3 keys win, as in 2.1's migration. Files then deep-merge."""
        if not isinstance(get_in(data, ('plugins', CRI_V2)), dict):
            return data
        data = copy.deepcopy(data)
        origin = dict((leaf, path) for leaf, _v in iter_leaves(data))
        for (_file, key), why in migrate_merged_v2(data, origin, True, [path]).items():
            self.unread[(path, key)] = why
        if not data['plugins'][CRI_V2]:
            del data['plugins'][CRI_V2]
        return data

    def _merge_file(self, index, path, data):
        data = self._as_read(index, path, data)
        if data is not None and self.per_file:
            data = self._migrated_alone(path, data)
        if data is None:
            return
        if not index:
            self.merged = copy.deepcopy(dict((k, v) for k, v in data.items() if k != 'version'))
            for leaf, _value in iter_leaves(self.merged):
                self.origin[leaf] = path
            for pid in self.merged.get('plugins') or {}:
                self.origin[('plugins', pid)] = path
            return
        for key, value in data.items():
            if key == 'version':
                continue
            if key in APPENDED_LISTS and isinstance(value, list):
                have = self.merged.setdefault(key, [])
                have.extend(v for v in value if v not in have)
                self.origin[(key,)] = path
            elif key == 'plugins' and isinstance(value, dict):
                plugins = self.merged.setdefault('plugins', {})
                for pid, table in value.items():
                    # 2.x deep-merges a table into whatever is there (nothing, or a value it replaces)
                    if self.replace or not isinstance(table, dict):
                        self._replace(('plugins', pid), table, path)
                    else:
                        self._deep_merge(('plugins', pid), table, path)
                    self.origin[('plugins', pid)] = path
            elif key in REPLACED_PER_KEY and isinstance(value, dict):
                for name, table in value.items():
                    self._replace((key, name), table, path)
            elif isinstance(value, dict):
                self._deep_merge((key,), value, path)
            else:
                self._replace((key,), value, path)

    def _replace(self, at, value, path):
        for known in [p for p in self.origin if p[:len(at)] == at]:
            del self.origin[known]
        _set(self.merged, at, copy.deepcopy(value))
        for leaf, _value in iter_leaves(value, at):
            self.origin[leaf] = path
        self.origin.setdefault(at, path)

    def _deep_merge(self, at, value, path):
        for leaf, leaf_value in iter_leaves(value, at):
            if leaf_value == {} and isinstance(get_in(self.merged, leaf), dict):
                continue  # an empty table adds nothing to a deep merge
            cur = get_in(self.merged, leaf[:-1])
            if not isinstance(cur, dict):
                # a value where a table now comes: the table replaces it
                self._replace(leaf[:-1], {}, path)
            self._replace(leaf, leaf_value, path)

    # ------------------------------------------------------------ questions
    def read_path(self, path, file_path=None):
        """A key path of one file (default: main) as it appears in the merged view."""
        path = tuple(path)
        version = self._version_of(file_path)
        if version == 1 and (self.replace or self.main_version == 2 or file_path not in (None, self.main_path)):
            # read as version 2 (_as_read): version 1's CRI plugin id is the version 2 one
            if path[:2] == ('plugins', 'cri'):
                path = ('plugins', CRI_V2) + path[2:]
            version = 2
        if self.per_file and path[:2] == ('plugins', CRI_V2):
            return translate_v2_path(path)  # 2.3 migrates the version 2 CRI table of every file
        if not self.replace and (self.migrates or self.main_version >= 3) and version == 2:
            return translate_v2_path(path)
        return path

    def _version_of(self, file_path):
        for p, data in self.files:
            if file_path is None or p == file_path:
                return file_version(data)
        return self.main_version

    def value(self, path):
        return get_in(self.merged, tuple(path))

    def source_of(self, path):
        """The file whose value is in effect at path (merged layout), or None."""
        path = tuple(path)
        for n in range(len(path), 0, -1):
            if path[:n] in self.origin:
                return self.origin[path[:n]]
        return None

    def files_behind(self, path):
        """The files whose values containerd runs at path or under it (merged layout)."""
        path = tuple(path)
        found = set(f for p, f in self.origin.items() if p[:len(path)] == path and len(p) > len(path))
        source = self.source_of(path)
        if source and self.value(path) is not None:
            found.add(source)
        return found

    def plugin_owner(self, plugin_id):
        """The file whose plugins.<id> table containerd uses (1.x: the last one defining it)."""
        return self.origin.get(('plugins', plugin_id))

    def imported(self):
        return [p for p, _d in self.files[1:]]


class EditElsewhere(Exception):
    """Raised by an edit callback: what it edits lives in another file of the tree (path).

    reason: what is wrong, without the fix; fix (optional): how to put it
    right, for a caller that does not move the edit itself (the message then
    ends with it).
    """

    def __init__(self, msg, path, fix=None):
        super(EditElsewhere, self).__init__(msg if fix is None else '%s Fix: %s.' % (msg, fix))
        self.reason = msg
        self.path = path
        self.fix = fix


def load_effective(main_path, main_data, containerd_ver, overrides=None):
    return EffectiveConfig(main_path, main_data, containerd_ver, overrides=overrides)


class Effect(object):
    """Where one intended change lives and whether containerd will run it."""

    def __init__(self, key, value, file_path, in_effect, shadowed_by=None, effective=ABSENT, why=None):
        self.key = tuple(key)
        self.value = value
        self.file = file_path
        self.in_effect = in_effect
        self.shadowed_by = shadowed_by
        self.effective = effective
        self.why = why
        self.confirmed = None

    def as_dict(self):
        out = dict(key=dotted_path(self.key), file=self.file, in_effect=self.in_effect,
                   value=None if self.value is ABSENT else self.value, removed=self.value is ABSENT)
        if self.shadowed_by:
            out['shadowed_by'] = self.shadowed_by
        if self.effective is not ABSENT:
            out['effective_value'] = self.effective
        if self.why:
            out['why'] = self.why
        if self.confirmed is not None:
            out['confirmed_by'] = self.confirmed
        return out


def effects_of(view, file_path, changes):
    """Judge each (path, value) a file's edit changed against the merged view."""
    out = []
    for path, value in changes:
        merged_path = view.read_path(path, file_path)
        have = view.value(merged_path)
        source = view.source_of(merged_path)
        if merged_path[0] in APPENDED_LISTS and len(merged_path) == 1:
            # top-level lists are appended across files: each entry counts
            listed = have if isinstance(have, list) else []
            ok = value is ABSENT or all(v in listed for v in value)
            eff = Effect(path, value, file_path, ok, why=None if ok else 'containerd does not read %s' % file_path)
            eff.confirmed = 'model'
            out.append(eff)
            continue
        if value is ABSENT:
            gone = have is None
            out.append(Effect(path, value, file_path, gone, None if gone else source,
                              ABSENT if gone else have,
                              None if gone else '%s still sets it' % source))
            continue
        ok = have is not None and _same(have, value)
        later = source if source and source != file_path else None
        eff = Effect(path, value, file_path, ok, later, ABSENT if have is None else have)
        if not ok:
            eff.why = _why_shadowed(view, merged_path, file_path, source)
        out.append(eff)
    return out


def _why_shadowed(view, merged_path, file_path, source):
    ver = version_text(view.containerd_ver, '1.x')
    for candidate in (merged_path, translate_v2_path(merged_path)):  # unread keys are kept in version 3 layout
        for n in range(len(candidate), 2, -1):
            unread = view.unread.get((file_path, candidate[:n]))
            if unread:
                return 'containerd %s does not read it from %s: %s' % (ver, file_path, unread)
    if source and source != file_path:
        if view.replace and merged_path[:1] == ('plugins',) and len(merged_path) > 1:
            return ('%s defines plugins."%s" too, and containerd %s replaces the whole plugin table with the '
                    'imported one' % (source, merged_path[1], ver))
        return '%s sets %s later, and the later file wins' % (source, dotted_path(merged_path))
    for ignored, reason in view.ignored:
        if ignored == file_path:
            return 'containerd %s ignores %s (%s)' % (ver, file_path, reason)
    return 'containerd %s does not read it from %s' % (ver, file_path)


def confirm_with_dump(effects, view, dump_data):
    """Check each effect against ``containerd config dump`` of the candidate tree.

    The dump shows what containerd will run (defaults filled in).  A value the
    model calls in effect but the dump does not show is not in effect.
    """
    if dump_data is None:
        return effects
    dump_version = file_version(dump_data)
    for eff in effects:
        if eff.confirmed == 'model':
            continue  # top-level lists: config dump shows the loaded files, not the entries
        path = view.read_path(eff.key, eff.file)
        if dump_version >= 3 and view.main_version == 2 and not view.migrates:
            path = translate_v2_path(path)
        have = get_in(dump_data, path)
        if eff.value is ABSENT:
            # containerd's defaults may hold a key the file no longer sets: only a table counts
            if isinstance(have, dict) and eff.in_effect and path[-2:-1] == ('runtimes',):
                eff.in_effect = False
                eff.why = 'containerd config dump still lists it'
            eff.confirmed = 'config dump'
            continue
        ok = have is not None and _same(have, eff.value)
        if eff.in_effect and not ok:
            eff.in_effect = False
            eff.effective = ABSENT if have is None else have
            ver = version_text(view.containerd_ver, '?')
            eff.why = ('containerd %s config dump of the new config does not show it (%s)'
                       % (ver, 'the key is unknown to it and dropped' if have is None else 'it runs %r' % (have,)))
        eff.confirmed = 'config dump'
    return effects
