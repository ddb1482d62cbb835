# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Restore: put a baseline's files back byte for byte.

Works whatever the current file is (missing, not TOML, not UTF-8): it is not
read as a config, only compared.  Before anything is replaced, the tree as it
will be after the restore (the baseline's files over what is on disk) is
checked the way every write is: the engine's built-in checks, the config
version the node reads, the ``validate`` command (by default the node's
``containerd config dump``) and a real start of the node's containerd on the
tree in isolation (``load_test``).  Those run on a mirror of the tree in a
temporary folder whose ``imports`` entries point into the mirror, because the
files the restore brings back (a deleted drop-in) are not on disk yet.  A
baseline that would not load is refused.

Imported files are written first and the config last, each atomically, under
the config's lock; then the ledger copy is put back so the ledger agrees with
the restored file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import stat

from ansible_collections.nodeguard.containerd.plugins.module_utils._atomic import (
    atomic_write,
    clean_stale_temps,
    read_bytes,
    remove_quietly,
    sha256_bytes,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline import (
    OverlaySource,
    read_tree,
    record_attrs,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._config_model import (
    ConfigDocument,
    ConfigError,
    lock_or_fail,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline_effective import Mirror, judge_tree
from ansible_collections.nodeguard.containerd.plugins.module_utils._ledger import ledger_path_for


def validate_candidate(ctx, validate, path, overlay, load_test=True):
    """Refuse (ConfigError) a restore whose result containerd would not load.

    overlay: path -> (bytes, Attrs) of the files the restore writes.
    Returns (the Tree as it will be after the restore, the Judgement of it).
    """
    tree = read_tree(path, True, OverlaySource(overlay))
    main = tree.config
    broken = ('Nothing was written. The baseline itself is broken: restoring it would break containerd. Fix: take '
              'a new snapshot (overwrite: true) of a config that works, or repair the file by hand.')
    if main.error:
        raise ConfigError('refusing to restore %s: the baseline copy %s. %s' % (path, main.error, broken),
                          key='name')
    try:
        ConfigDocument(path, main.text)
    except ConfigError as exc:
        raise ConfigError('refusing to restore %s: in the baseline copy, %s %s' % (path, exc, broken), key='name')
    with Mirror(tree.files, path) as mirror:
        judged = judge_tree(ctx, mirror.main, mirror.main_data, validate, load_test, mirror)
    if judged.problems:
        raise ConfigError('refusing to restore %s: with the baseline\'s files in place the config would not '
                          'load. %s %s' % (path, ' '.join(judged.problems), broken), key='name',
                          check_errors=judged.problems, validated=judged.as_dict())
    return tree, judged


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
    def __init__(self, rec, dest, raw, attrs):
        self.rec = rec
        self.dest = dest
        self.raw = raw
        self.attrs = attrs          # (mode, uid, gid) wanted
        self.current, self.current_attrs = _current(dest)
        self.content = self.current != raw
        self.fix_attrs = not self.content and self.current_attrs != attrs

    @property
    def needed(self):
        return self.content or self.fix_attrs


def _wanted_attrs(rec, overrides):
    a = record_attrs(rec)
    mode, uid, gid = overrides
    return (a.mode if mode is None else mode, a.uid if uid is None else uid, a.gid if gid is None else gid)


def restore(module, ctx, baseline, path, target, overrides):
    """Put the baseline back; returns the module's result values (exits nothing)."""
    params = module.params
    manifest = baseline.manifest
    config_rec = baseline.config_record
    if config_rec is None:
        raise ConfigError('baseline %s recorded that %s did not exist when it was taken, so there is nothing to '
                          'restore. Nothing was written. Fix: take a snapshot of a working config (overwrite: true).'
                          % (baseline.folder, path), key='name')
    files = baseline.read_all()
    folder = os.path.dirname(target)
    lock = None
    try:
        if not os.path.isdir(folder) and not module.check_mode:
            os.makedirs(folder, 0o755)   # the config's folder went too: the restore brings it back
        if os.path.isdir(folder):
            lock = lock_or_fail(target, params['lock_timeout'])
            clean_stale_temps(target)
        tree, judged = validate_candidate(ctx, params.get('validate'), path, files, params.get('load_test', True))
        plans = []
        for rec in [r for r in baseline.files if r['role'] != 'config'] + [config_rec]:
            raw = files[rec['path']][0]
            if rec['role'] == 'config':
                dest, attrs = target, _wanted_attrs(rec, overrides)
            else:
                dest = os.path.realpath(rec['path']) if os.path.islink(rec['path']) else rec['path']
                attrs = _wanted_attrs(rec, (None, None, None))
            plans.append(Plan(rec, dest, raw, attrs))
        config_sha = sha256_bytes(files[path][0])
        lpath = ledger_path_for(params['state_dir'], target)
        want_ledger = ledger_for_restore(baseline.ledger_bytes(), config_sha)
        have_ledger = read_bytes(lpath)
        ledger_action = None
        if want_ledger is not None and want_ledger != have_ledger:
            ledger_action = 'restored'
        elif want_ledger is None and have_ledger is not None:
            ledger_action = 'removed'
        known = set(r['path'] for r in baseline.files)
        extra = [tf for tf in tree.files if tf.path not in known] if manifest.get('include_imports') else []
        for tf in extra:
            ctx.warn('%s is imported by %s (entry %r) but was not in baseline %s; it was left as it is and '
                     'containerd will load it.' % (tf.path, tf.imported_by, tf.entry, manifest.get('name')))
        result = dict(changed=any(p.needed for p in plans) or ledger_action is not None,
                      restored=[p.dest for p in plans if p.needed], ledger=ledger_action, validated=judged.as_dict(),
                      created_files=[p.dest for p in plans if p.current is None])
        if module._diff:
            result['diff'] = [dict(before=_text(p.current), after=_text(p.raw),
                                   before_header='%s (%s)' % (p.dest, 'absent' if p.current is None else 'before'),
                                   after_header='%s (baseline)' % p.dest)
                              for p in plans if p.content]
        if module.check_mode or not result['changed']:
            return result
        backups = []
        for p in plans:
            if not p.needed:
                continue
            mode, uid, gid = p.attrs
            if p.content:
                parent = os.path.dirname(p.dest)
                if not os.path.isdir(parent):
                    os.makedirs(parent, 0o755)
                if params.get('backup') and p.current is not None:
                    backups.append((p.dest, module.backup_local(p.dest)))
                same_uid = uid == os.geteuid()
                same_gid = gid == os.getegid()
                atomic_write(p.dest, p.raw, mode=mode, uid=-1 if same_uid else uid, gid=-1 if same_gid else gid)
            else:
                os.chmod(p.dest, mode)
                if p.current_attrs[1:] != (uid, gid):
                    os.chown(p.dest, uid, gid)
        if ledger_action == 'restored':
            if not os.path.isdir(os.path.dirname(lpath)):
                os.makedirs(os.path.dirname(lpath), 0o700)
            atomic_write(lpath, want_ledger, mode=0o600)
        elif ledger_action == 'removed':
            remove_quietly(lpath)
        if backups:
            result['backup_files'] = [b for _dest, b in backups]
            for dest, b in backups:
                if dest == target:
                    result['backup_file'] = b
        return result
    finally:
        if lock is not None:
            lock.release()
