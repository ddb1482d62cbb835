# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Restore: put a baseline's files back byte for byte, as one engine transaction.

``RestoreTransaction`` is the engine's ``Transaction`` (open, build, check,
commit) with a baseline's files as the candidate:

- open: the config's lock, the bytes and mode/owner of every file the
  baseline holds, the ledger's bytes.  Works whatever the current file is
  (missing, not TOML, not UTF-8): it is not parsed as a config, only compared.
- build: the tree as it will be after the restore (the baseline's files over
  what is on disk), the baseline's copy parsed, what differs, the diff.
- check: the engine's built-in checks, the config version the node reads,
  the ``validate`` command (by default the node's ``containerd config dump``)
  and a real start of the node's containerd on the tree in isolation
  (``load_test``), on a mirror of the tree in a temporary folder whose
  ``imports`` entries point into the mirror (a deleted drop-in the restore
  brings back is not on disk yet).  A baseline that would not load is
  refused, also in check mode and when the files already match.
- commit: the engine's order: the ledger copy (made to agree with the
  restored file), the compare with what open read (a writer that ignores
  our lock: the restore starts over on its content), then each file renamed
  into place, imported files first and the config last; then the drop-ins
  an owner wrote since the baseline that the restored tree no longer
  imports are removed, with their own ledgers (``removed_files``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import stat

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    atomic_write,
    makedirs_private,
    read_bytes,
    remove_quietly,
    sha256_bytes,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import (
    OverlaySource,
    read_tree,
    record_attrs,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.effective import Mirror
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument, ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    Checked,
    Transaction,
    check_builtin,
    check_with_containerd,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.dropin import FILE_KIND
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger, LedgerError, ledger_path_for
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    file_version,
    refuse_unreadable_version,
)


def _current(dest):
    """(bytes or None, Attrs-like tuple or None) of what is at dest now."""
    try:
        st = os.stat(dest)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None, None
        raise
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError('%s is not a regular file (a folder?); nodeguard will not replace it. Nothing was '
                          'written. Fix: move it aside, then run again.' % dest, key='path')
    return read_bytes(dest), (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def _text(raw):
    return '' if raw is None else raw.decode('utf-8', 'replace')


def ledger_for_restore(stored, config_sha):
    """The ledger bytes to put back: the copy, made to agree with the restored config."""
    if stored is None:
        return None
    try:
        data = json.loads(stored.decode('utf-8'))
    except ValueError:
        return stored
    if data.get('config_sha256') == config_sha:
        return stored
    data['config_sha256'] = config_sha
    data['previous'] = None
    return (json.dumps(data, indent=1, sort_keys=True) + '\n').encode('utf-8')


class Plan(object):
    """One file of the baseline: where it goes, its bytes and mode/owner, and what is there now."""

    def __init__(self, rec, dest, raw, attrs, now):
        self.rec = rec
        self.dest = dest
        self.raw = raw
        self.attrs = attrs          # (mode, uid, gid) wanted
        self.current, self.current_attrs = now
        self.content = self.current != raw
        self.fix_attrs = not self.content and self.current_attrs != attrs

    @property
    def needed(self):
        return self.content or self.fix_attrs


def _wanted_attrs(rec, overrides):
    a = record_attrs(rec)
    mode, uid, gid = overrides
    return (a.mode if mode is None else mode, a.uid if uid is None else uid, a.gid if gid is None else gid)


BROKEN = ('Nothing was written. The baseline itself is broken: restoring it would break containerd. Fix: take '
          'a new snapshot (overwrite: true) of a config that works, or repair the file by hand.')


class RestoreTransaction(Transaction):
    """The engine's four steps with a baseline's files as the candidate."""

    what = 'restore'
    check_first = True      # a broken baseline is refused even when nothing differs, and in check mode

    def __init__(self, module, ctx, baseline, path, target, overrides):
        super(RestoreTransaction, self).__init__(module, ctx)
        self.baseline = baseline
        self.main_path = path           # the config as the baseline names it
        self.path = target              # the file written (a link's target with follow: true)
        self.overrides = overrides      # (mode, uid, gid) asked for the config
        self.files = baseline.read_all()
        self.ledger_path = ledger_path_for(module.params['state_dir'], target)
        self.backups = {}
        self.opened = False

    def _records(self):
        """The baseline's files in write order (imported files first, the config last) with where each goes."""
        config_rec = self.baseline.config_record
        for rec in [r for r in self.baseline.files if r['role'] != 'config'] + [config_rec]:
            if rec['role'] == 'config':
                yield rec, self.path, _wanted_attrs(rec, self.overrides)
            else:
                dest = os.path.realpath(rec['path']) if os.path.islink(rec['path']) else rec['path']
                yield rec, dest, _wanted_attrs(rec, (None, None, None))

    def open(self):
        """The config's lock, what is on disk now at every file's place, the ledger's bytes."""
        if not self.opened:
            folder = os.path.dirname(self.path)
            if not os.path.isdir(folder) and not self.module.check_mode:
                os.makedirs(folder, 0o755)   # the config's folder went too: the restore brings it back
            if os.path.isdir(folder):
                self.lock(self.path)
            self.opened = True
        self.now = dict((dest, _current(dest)) for _rec, dest, _attrs in self._records())
        self.ledger_now = read_bytes(self.ledger_path)

    def build(self):
        """The tree as it will be, the baseline's copy parsed, what differs, the diff."""
        path, files = self.main_path, self.files
        self.tree = tree = read_tree(path, True, OverlaySource(files))
        main = tree.config
        if main.error:
            raise ConfigError('refusing to restore %s: the baseline copy %s. %s' % (path, main.error, BROKEN),
                              key='name')
        try:
            ConfigDocument(path, main.text)
        except ConfigError as exc:
            raise ConfigError('refusing to restore %s: in the baseline copy, %s %s' % (path, exc, BROKEN),
                              key='name')
        self.plans = [Plan(rec, dest, files[rec['path']][0], attrs, self.now[dest])
                      for rec, dest, attrs in self._records()]
        self.want_ledger = ledger_for_restore(self.baseline.ledger_bytes(), sha256_bytes(files[path][0]))
        self.ledger_action = None
        if self.want_ledger is not None and self.want_ledger != self.ledger_now:
            self.ledger_action = 'restored'
        elif self.want_ledger is None and self.ledger_now is not None:
            self.ledger_action = 'removed'
        plans = self.plans
        self.orphans = self._orphans()
        self.result = result = dict(
            changed=any(p.needed for p in plans) or self.ledger_action is not None or bool(self.orphans),
            restored=[p.dest for p in plans if p.needed], ledger=self.ledger_action,
            created_files=[p.dest for p in plans if p.current is None], removed_files=list(self.orphans))
        if self.module._diff:
            result['diff'] = [dict(before=_text(p.current), after=_text(p.raw),
                                   before_header='%s (%s)' % (p.dest, 'absent' if p.current is None else 'before'),
                                   after_header='%s (baseline)' % p.dest)
                              for p in plans if p.content]

    def _orphans(self):
        """Drop-ins a nodeguard owner wrote since the baseline that the restored tree no longer imports.

        The restore puts back config.toml's ledger, not a drop-in's own: left on
        disk, such a file is read by nobody and recorded as nobody's change.
        Only files the current tree imports, that are not in the baseline, whose
        own ledger names a writer (containerd_dropin), and that changed after the
        snapshot was taken (a file an owner adopted as it was stays) go.
        """
        state_dir = self.module.params['state_dir']
        try:
            current = read_tree(self.main_path, True)
        except (ConfigError, OSError):
            return []
        keep = set(tf.path for tf in self.tree.files) | set(r['path'] for r in self.baseline.files)
        taken = os.stat(self.baseline.folder).st_mtime
        out = []
        for tf in current.files:
            path = tf.path
            if tf.role == 'config' or path in keep or not os.path.isfile(path) or os.path.islink(path):
                continue
            try:
                written = any(r.get('kind') == FILE_KIND for r in Ledger.load(state_dir, path).records)
            except LedgerError:
                continue
            if written and os.stat(path).st_mtime > taken:
                out.append(path)
        return sorted(out)

    def check(self):
        """The engine's checks on a mirror of the tree as it will be; a tree that would not load is refused."""
        ctx, params, path = self.ctx, self.module.params, self.main_path
        checked = Checked()
        with Mirror(self.tree.files, path) as mirror:
            try:
                refuse_unreadable_version(path, file_version(mirror.main_data), ctx.containerd_version)
            except ConfigError as exc:
                checked.refuse('built-in', [str(exc).replace(' Nothing was written.', '')])
            check_builtin(ctx, checked, mirror.main, mirror.main_data, real=mirror.real)
            if not checked.problems:
                check_with_containerd(ctx, checked, mirror.main, params.get('validate'),
                                      load_test=params.get('load_test', True), real=mirror.real, dump_must_load=True)
        if checked.problems:
            raise ConfigError('refusing to restore %s: with the baseline\'s files in place the config would not '
                              'load. %s %s' % (path, ' '.join(checked.problems), BROKEN), key='name',
                              check_errors=checked.problems, validated=checked.as_dict())
        self.result['validated'] = checked.as_dict()
        known = set(r['path'] for r in self.baseline.files)
        if self.baseline.manifest.get('include_imports'):
            for tf in [tf for tf in self.tree.files if tf.path not in known]:
                ctx.warn('%s is imported by %s (entry %r) but was not in baseline %s; it was left as it is and '
                         'containerd will load it.' % (tf.path, tf.imported_by, tf.entry,
                                                       self.baseline.manifest.get('name')))

    def needs_write(self):
        return self.result['changed']

    def _write_ledger(self):
        if self.ledger_action == 'restored':
            makedirs_private(os.path.dirname(self.ledger_path))  # state_dir too, if the restore brings it back
            atomic_write(self.ledger_path, self.want_ledger, mode=0o600)
        elif self.ledger_action == 'removed':
            remove_quietly(self.ledger_path)

    def _settle_dropin_ledgers(self):
        """A drop-in put back to the bytes its own ledger had before its last write: that ledger goes back too.

        The restore puts back config.toml's ledger only. A drop-in's ledger
        offers its state before the last write for a crash's rollback, told by
        the file's identity; the restore wrote a new file with those bytes, so
        without this the ledger would keep records of changes the file no
        longer has. Any other ledger stays, its records compared key by key
        when used.
        """
        state_dir = self.module.params['state_dir']
        for p in self.plans:
            if not p.content or ledger_path_for(state_dir, p.dest) == self.ledger_path:
                continue
            try:
                ledger = Ledger.load(state_dir, p.dest)
            except LedgerError:
                continue
            restored_sha = sha256_bytes(p.raw)
            if ledger.recover(restored_sha):  # no identity: these bytes are the restore's own write
                ledger.save(restored_sha)

    def commit(self):
        """Backups and temporary files, then the engine's commit: ledger, compare, renames; then modes and owners."""
        params = self.module.params
        renames = []
        for p in self.plans:
            if not p.content:
                continue
            mode, uid, gid = p.attrs
            parent = os.path.dirname(p.dest)
            if not os.path.isdir(parent):
                os.makedirs(parent, 0o755)
            if params.get('backup') and p.current is not None and p.dest not in self.backups:
                self.backups[p.dest] = self.module.backup_local(p.dest)
            tmp = self.temp(p.dest, p.raw, mode=mode, uid=-1 if uid == os.geteuid() else uid,
                            gid=-1 if gid == os.getegid() else gid)
            renames.append((tmp, p.dest))
        compare = [(p.dest, p.current) for p in self.plans]
        if not self.commit_files(compare, renames, self._write_ledger, self.ledger_path):
            return False
        self._settle_dropin_ledgers()
        # after config.toml no longer imports them; a crash before this leaves a file containerd does not read
        for orphan in self.orphans:
            if params.get('backup') and orphan not in self.backups:
                self.backups[orphan] = self.module.backup_local(orphan)
            remove_quietly(orphan)
            remove_quietly(ledger_path_for(params['state_dir'], orphan))
        for p in self.plans:
            if p.fix_attrs:
                mode, uid, gid = p.attrs
                os.chmod(p.dest, mode)
                if p.current_attrs[1:] != (uid, gid):
                    os.chown(p.dest, uid, gid)
        if self.backups:
            self.result['backup_files'] = [self.backups[p] for p in [p.dest for p in self.plans] + self.orphans
                                           if p in self.backups]
            if self.path in self.backups:
                self.result['backup_file'] = self.backups[self.path]
        return True


def restore(module, ctx, baseline, path, target, overrides):
    """Put the baseline back; returns the module's result values (exits nothing)."""
    if baseline.config_record is None:
        raise ConfigError('baseline %s recorded that %s did not exist when it was taken, so there is nothing to '
                          'restore. Nothing was written. Fix: take a snapshot of a working config (overwrite: true).'
                          % (baseline.folder, path), key='name')
    return RestoreTransaction(module, ctx, baseline, path, target, overrides).run()
