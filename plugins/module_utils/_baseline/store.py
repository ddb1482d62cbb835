# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Baselines: known-good copies of a containerd config and the files it imports.

Layout of a store (default ``/var/lib/nodeguard/baselines``), one folder per
baseline name::

    <store>/.<name>.nodeguard.lock       flock serialising baseline tasks
    <store>/<name>/current -> <id>       symlink to the snapshot in use
    <store>/<name>/<id>/manifest.json    what was copied, checksums, modes
    <store>/<name>/<id>/files/NNN-<base> byte copies of the config and imports
    <store>/<name>/<id>/ledger.json      copy of the engine's ledger (if any)
    <store>/<name>/<id>/effective.toml   the node's ``containerd config dump`` of the tree (if any)

A snapshot is built in a temporary folder beside the others, flushed,
renamed to its id, and only then made current by renaming a new symlink over
``current``: a crash leaves the previous baseline or the new one.  Snapshot
folders are never changed after the rename; older ones are pruned to
``keep``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import errno
import fnmatch
import glob
import json
import os
import re
import shutil
import stat
import tempfile
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    atomic_write,
    fsync_dir,
    makedirs_private,
    read_bytes,
    sha256_bytes,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigError,
    TomlParseError,
    lock_or_fail,
    parse_error_message,
    parse_toml,
    split_bom,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    is_glob,
    resolve_import,
)

FORMAT = 1
MANIFEST = 'manifest.json'
LEDGER_COPY = 'ledger.json'
DUMP_COPY = 'effective.toml'
CURRENT = 'current'
NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z')
ID_RE = re.compile(r'^\d{8}T\d{6}\.\d{6}Z(-\d+)?$')
TMP_PREFIX = '.tmp-'
_SAFE = re.compile(r'[^A-Za-z0-9._-]')


def check_name(name):
    if not NAME_RE.match(name or '') or name in ('.', '..') or name.endswith('.nodeguard.lock'):
        raise ConfigError('baseline name %r is not valid. Fix: use letters, digits, "-", "_" and "." (at most 64, '
                          'starting with a letter or digit).' % (name,), key='name')


# ------------------------------------------------------------------ the tree
class Attrs(object):
    """Mode and owner of a file, as recorded in a manifest."""

    __slots__ = ('mode', 'uid', 'gid')

    def __init__(self, mode, uid, gid):
        self.mode = mode
        self.uid = uid
        self.gid = gid

    @classmethod
    def of(cls, st):
        return cls(stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


class TreeFile(object):
    """One file of a config tree: its bytes, attributes and parsed data."""

    def __init__(self, path, raw, attrs, role, entry=None, imported_by=None):
        self.path = path
        self.raw = raw
        self.attrs = attrs
        self.role = role
        self.entry = entry
        self.imported_by = imported_by
        self.text = None
        self.data = None
        self.error = None
        try:
            self.text = raw.decode('utf-8')
        except UnicodeDecodeError as exc:
            self.error = '%s is not UTF-8 text (byte %d)' % (path, exc.start)
            return
        try:
            # containerd 1.x skips a byte order mark; the file's bytes keep it
            self.data = parse_toml(split_bom(self.text)[0])
        except TomlParseError as exc:
            self.error = parse_error_message(path, exc)

    @property
    def sha256(self):
        return sha256_bytes(self.raw)


class DiskSource(object):
    """Files as they are on disk."""

    def read(self, path):
        """(bytes, Attrs) of a regular file (links followed), or None if it does not exist."""
        try:
            st = os.stat(path)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return None
            raise
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError('%s is not a regular file; nodeguard only copies files.' % path)
        raw = read_bytes(path)
        if raw is None:
            return None
        return raw, Attrs.of(st)

    def glob(self, pattern):
        return glob.glob(pattern)


def glob_match(pattern, path):
    """Does path match pattern the way glob.glob would find it?"""
    pp = pattern.split('/')
    cp = path.split('/')
    if len(pp) != len(cp):
        return False
    for p, c in zip(pp, cp):
        if c.startswith('.') and not p.startswith('.') and c not in ('.', '..') and p != c:
            return False
        if not fnmatch.fnmatchcase(c, p):
            return False
    return True


class OverlaySource(DiskSource):
    """Files on disk with some replaced: the tree as it will be after a restore."""

    def __init__(self, files):
        self.files = files      # path -> (bytes, Attrs)

    def read(self, path):
        if path in self.files:
            return self.files[path]
        return DiskSource.read(self, path)

    def glob(self, pattern):
        found = set(glob.glob(pattern))
        found.update(p for p in self.files if glob_match(pattern, p))
        return sorted(found)


class Tree(object):
    def __init__(self, path):
        self.path = path
        self.files = []          # TreeFile, main config first, in containerd's load order
        self.missing = []        # dict(entry, path, imported_by): imports that do not exist
        self.globs = []          # dict(entry, pattern, imported_by, matched)
        self.problems = []       # imports lists that are not lists of strings

    @property
    def config(self):
        return self.files[0] if self.files and self.files[0].role == 'config' else None

    @property
    def config_missing(self):
        return self.config is None

    def by_path(self):
        return dict((f.path, f) for f in self.files)


def read_tree(config_path, include_imports=True, source=None):
    """The config and (optionally) every file it imports, breadth first, as containerd loads them."""
    source = source or DiskSource()
    config_path = os.path.abspath(config_path)
    tree = Tree(config_path)
    got = source.read(config_path)
    if got is None:
        return tree
    main = TreeFile(config_path, got[0], got[1], 'config')
    tree.files.append(main)
    if not include_imports or main.data is None:
        return tree
    seen = set([config_path])
    queue = [main]
    while queue:
        parent = queue.pop(0)
        imports = parent.data.get('imports')
        if imports is None:
            continue
        if not isinstance(imports, list):
            tree.problems.append('%s: "imports" is not an array' % parent.path)
            continue
        for entry in imports:
            if not isinstance(entry, str):
                tree.problems.append('%s: imports entry %r is not a string' % (parent.path, entry))
                continue
            full = resolve_import(entry, parent.path)
            if is_glob(entry):
                paths = sorted(source.glob(full))
                tree.globs.append(dict(entry=entry, pattern=full, imported_by=parent.path, matched=paths))
            else:
                paths = [full]
            for p in paths:
                if p in seen:
                    continue
                seen.add(p)
                got = source.read(p)
                if got is None:
                    tree.missing.append(dict(entry=entry, path=p, imported_by=parent.path))
                    continue
                child = TreeFile(p, got[0], got[1], 'import', entry, parent.path)
                tree.files.append(child)
                if child.data is not None:
                    queue.append(child)
    return tree


# ------------------------------------------------------------------ records
def _user(uid):
    import pwd
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _group(gid):
    import grp
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return None


def file_record(tf, stored=None):
    rec = dict(path=tf.path, role=tf.role, sha256=tf.sha256, size=len(tf.raw), mode='%04o' % tf.attrs.mode,
               uid=tf.attrs.uid, gid=tf.attrs.gid, owner=_user(tf.attrs.uid), group=_group(tf.attrs.gid),
               entry=tf.entry, imported_by=tf.imported_by)
    if stored is not None:
        rec['stored'] = stored
    return rec


def record_attrs(rec):
    return Attrs(int(rec['mode'], 8), rec['uid'], rec['gid'])


def utc_now():
    now = time.time()
    stamp = datetime.datetime.fromtimestamp(now, tz=datetime.timezone.utc)
    return now, stamp


# ------------------------------------------------------------------ the store
class Baseline(object):
    """One snapshot, loaded from its folder."""

    def __init__(self, folder, manifest):
        self.folder = folder
        self.manifest = manifest
        self._cache = {}

    @property
    def files(self):
        return self.manifest.get('files', [])

    @property
    def config_record(self):
        for rec in self.files:
            if rec['role'] == 'config':
                return rec
        return None

    def stored_path(self, rec):
        return os.path.join(self.folder, rec['stored'])

    def read(self, rec):
        """Bytes of a stored file, checked against the manifest's checksum."""
        if rec['path'] in self._cache:
            return self._cache[rec['path']]
        where = self.stored_path(rec)
        raw = read_bytes(where)
        if raw is None or sha256_bytes(raw) != rec['sha256']:
            raise ConfigError('baseline copy %s of %s is %s: the baseline is damaged and cannot be used. Nothing was '
                              'written. Fix: take a new snapshot (state: snapshot, overwrite: true) from a good '
                              'config.' % (where, rec['path'], 'missing' if raw is None else
                                           'not what was recorded (checksum mismatch)'), key='name')
        self._cache[rec['path']] = raw
        _note_secrets(raw)
        return raw

    def read_all(self):
        """path -> (bytes, Attrs) of every stored file."""
        return dict((rec['path'], (self.read(rec), record_attrs(rec))) for rec in self.files)

    def ledger_bytes(self):
        info = self.manifest.get('ledger')
        if not info:
            return None
        raw = read_bytes(os.path.join(self.folder, info['stored']))
        if raw is None or sha256_bytes(raw) != info['sha256']:
            raise ConfigError('the ledger copy in baseline %s is damaged (checksum mismatch). Nothing was written. '
                              'Fix: take a new snapshot.' % self.folder, key='name')
        return raw

    def dump_data(self):
        """The stored ``config dump`` of the tree as data, or None (no binary at snapshot time, or an older baseline)."""
        info = (self.manifest.get('effective') or {}).get('dump')
        if not info:
            return None
        raw = read_bytes(os.path.join(self.folder, info['stored']))
        if raw is None or sha256_bytes(raw) != info['sha256']:
            why = 'missing' if raw is None else 'checksum mismatch'
            raise ConfigError('the config dump copy in baseline %s is damaged (%s). Nothing was written. Fix: take '
                              'a new snapshot (overwrite: true).' % (self.folder, why), key='name')
        _note_secrets(raw)
        try:
            return parse_toml(raw.decode('utf-8'))
        except (TomlParseError, UnicodeDecodeError):
            return None

    def public_files(self):
        out = []
        for rec in self.files:
            rec = dict(rec)
            rec['stored'] = self.stored_path(rec)
            out.append(rec)
        return out


class Store(object):
    """The baselines of one name in a store folder."""

    def __init__(self, root, name):
        check_name(name)
        self.root = os.path.abspath(root)
        self.name = name
        self.folder = os.path.join(self.root, name)
        self._lock = None

    # -------------------------------------------------------------- locking
    def lock(self, timeout, create=True):
        if not os.path.isdir(self.root):
            if not create:
                return None
            try:
                makedirs_private(self.root)  # the folders above the store too (state_dir): 0700
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    raise ConfigError('cannot create the baseline store %s (%s). Fix: run as root (become: true) '
                                      'or set store to a writable folder.' % (self.root, exc.strerror), key='store')
        self._lock = lock_or_fail(self.folder, timeout, key='store',
                                  fix='Fix: run as root (become: true) or set store to a writable folder.')
        return self._lock

    def unlock(self):
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # -------------------------------------------------------------- reading
    def exists(self):
        return os.path.lexists(self.folder)

    def _check_ours(self):
        """Refuse to touch a folder that is not a baseline (a mistyped store)."""
        if not os.path.lexists(self.folder):
            return
        if os.path.islink(self.folder) or not os.path.isdir(self.folder):
            raise ConfigError('%s exists and is not a baseline folder. Nothing was changed. Fix: choose another '
                              'name or store.' % self.folder, key='name')
        for entry in os.listdir(self.folder):
            if entry == CURRENT or ID_RE.match(entry) or entry.startswith(TMP_PREFIX) \
                    or entry.startswith('.' + CURRENT):
                continue
            raise ConfigError('%s holds %s, which nodeguard did not put there: it is not a baseline folder. Nothing '
                              'was changed. Fix: choose another name or store.' % (self.folder, entry), key='name')

    def snapshot_ids(self):
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return sorted(n for n in names if ID_RE.match(n) and os.path.isdir(os.path.join(self.folder, n)))

    def current_id(self):
        link = os.path.join(self.folder, CURRENT)
        try:
            target = os.readlink(link)
        except OSError:
            return None
        return target if ID_RE.match(target) else None

    def load(self):
        """The current Baseline, or None when there is none."""
        self._check_ours()
        sid = self.current_id()
        if sid is None:
            return None
        folder = os.path.join(self.folder, sid)
        raw = read_bytes(os.path.join(folder, MANIFEST))
        if raw is None:
            raise ConfigError('baseline %s has no %s: it is damaged. Fix: take a new snapshot (overwrite: true) or '
                              'remove it (state: absent).' % (folder, MANIFEST), key='name')
        try:
            manifest = json.loads(raw.decode('utf-8'))
            if manifest.get('format') != FORMAT:
                raise ValueError('format %r' % manifest.get('format'))
        except (ValueError, AttributeError) as exc:
            raise ConfigError('the manifest of baseline %s is damaged (%s). Fix: take a new snapshot '
                              '(overwrite: true) or remove it (state: absent).' % (folder, exc), key='name')
        return Baseline(folder, manifest)

    # -------------------------------------------------------------- writing
    def _new_id(self, stamp):
        base = stamp.strftime('%Y%m%dT%H%M%S.%fZ')
        sid, n = base, 1
        while os.path.lexists(os.path.join(self.folder, sid)):
            sid = '%s-%d' % (base, n)
            n += 1
        return sid

    def write(self, manifest, tree_files, ledger_raw, stamp, dump_raw=None):
        """Write a new snapshot atomically and make it current; returns its folder.

        dump_raw: the bytes of ``containerd config dump`` of the tree, kept as
        effective.toml (manifest['effective']['dump'] records it).
        """
        self._check_ours()
        if not os.path.isdir(self.folder):
            os.makedirs(self.folder, 0o700)
        self.clean_temps()
        tmp = tempfile.mkdtemp(prefix=TMP_PREFIX, dir=self.folder)
        try:
            files_dir = os.path.join(tmp, 'files')
            os.mkdir(files_dir, 0o700)
            records = []
            for index, tf in enumerate(tree_files):
                stored = 'files/%03d-%s' % (index, _SAFE.sub('_', os.path.basename(tf.path))[:80])
                _write_flushed(os.path.join(tmp, stored), tf.raw)
                records.append(file_record(tf, stored))
            fsync_dir(files_dir)
            manifest = dict(manifest)
            manifest['files'] = records
            if ledger_raw is not None:
                _write_flushed(os.path.join(tmp, LEDGER_COPY), ledger_raw)
                manifest['ledger']['stored'] = LEDGER_COPY
            if dump_raw is not None:
                _write_flushed(os.path.join(tmp, DUMP_COPY), dump_raw)
                manifest['effective'] = dict(manifest.get('effective') or {})
                manifest['effective']['dump'] = dict(stored=DUMP_COPY, sha256=sha256_bytes(dump_raw))
            sid = self._new_id(stamp)
            manifest['id'] = sid
            _write_flushed(os.path.join(tmp, MANIFEST),
                           (json.dumps(manifest, indent=1, sort_keys=True) + '\n').encode('utf-8'))
            fsync_dir(tmp)
            final = os.path.join(self.folder, sid)
            os.rename(tmp, final)
            tmp = None
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        link_tmp = os.path.join(self.folder, '.%s.%d' % (CURRENT, os.getpid()))
        if os.path.lexists(link_tmp):
            os.unlink(link_tmp)
        os.symlink(sid, link_tmp)
        os.rename(link_tmp, os.path.join(self.folder, CURRENT))
        fsync_dir(self.folder)
        return final

    def clean_temps(self):
        """Folders and links a killed run left behind (called under the lock)."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return
        for entry in names:
            full = os.path.join(self.folder, entry)
            if entry.startswith(TMP_PREFIX):
                shutil.rmtree(full, ignore_errors=True)
            elif entry.startswith('.' + CURRENT + '.') and os.path.islink(full):
                os.unlink(full)

    def prune(self, keep):
        """Delete snapshots beyond the current one and the `keep` newest others; returns their folders."""
        current = self.current_id()
        older = [s for s in self.snapshot_ids() if s != current]
        drop = older[:max(0, len(older) - keep)]
        for sid in drop:
            shutil.rmtree(os.path.join(self.folder, sid), ignore_errors=True)
        return [os.path.join(self.folder, s) for s in drop]

    def remove(self):
        """Delete the whole baseline folder; True if there was one."""
        self._check_ours()
        if not os.path.lexists(self.folder):
            return False
        doomed = tempfile.mkdtemp(prefix='.%s.deleting-' % self.name, dir=self.root)
        os.rename(self.folder, os.path.join(doomed, self.name))
        fsync_dir(self.root)
        shutil.rmtree(doomed, ignore_errors=True)
        return True


def _note_secrets(raw):
    """A stored copy's secrets are masked in the module's output (a restore's diff quotes the copy)."""
    try:
        secrets.note_text(raw.decode('utf-8-sig'))
    except Exception:  # not TOML (a drop-in being repaired): nothing to learn from it
        return


def _write_flushed(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ a copy to fetch
def export_copy(folder, dest, patterns, exact=False, check_mode=False):
    """Copy every snapshot of a baseline folder under dest, each secret value replaced by ******** unless exact.

    The copies are what leaves the node (fetched to the controller, published
    with a job): the node's own baseline stays exact for restore. The secret
    values are those of every stored TOML file (the patterns: containerd's
    registry credentials and the user's secret_keys) and the secret priors a
    stored ledger keeps; each is replaced in every file, the manifest and the
    ledger too. Folders are 0700, files 0600. Returns [(relative path,
    number of values masked)].
    """
    stored = _stored_files(folder)
    values = set()
    for _rel, raw in stored:
        values.update(_secret_values_of(raw, patterns))
    out = []
    for rel, raw in stored:
        masked = 0
        if not exact:
            for value in sorted(values, key=len, reverse=True):
                needle = value.encode('utf-8')
                masked += raw.count(needle)
                raw = raw.replace(needle, secrets.MASK.encode('utf-8'))
        out.append((rel, masked))
        if not check_mode:
            target = os.path.join(dest, rel)
            makedirs_private(os.path.dirname(target))
            atomic_write(target, raw, mode=0o600)
    return out


def _stored_files(folder):
    """[(path relative to folder, bytes)] of the regular files under a baseline folder (no link, no temp)."""
    out = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(TMP_PREFIX) and not d.startswith('.')
                         and not os.path.islink(os.path.join(root, d)))
        for name in sorted(names):
            path = os.path.join(root, name)
            if name.startswith('.') or os.path.islink(path) or not os.path.isfile(path):
                continue
            raw = read_bytes(path)
            if raw is not None:
                out.append((os.path.relpath(path, folder), raw))
    return out


def _secret_values_of(raw, patterns):
    """The secret values a stored file holds: a TOML file's, or the key records' of a ledger copy."""
    try:
        text = raw.decode('utf-8-sig')
    except UnicodeDecodeError:
        return set()
    try:
        return secrets.text_values(text, patterns)
    except Exception:  # not TOML: a ledger copy, the manifest
        pass
    try:
        records = json.loads(text).get('records') or []
    except (ValueError, AttributeError):
        return set()
    return secrets.record_values(records, patterns)
