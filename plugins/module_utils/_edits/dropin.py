# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A drop-in written whole by one owner, and removed again only when it is that owner's (containerd_dropin).

The file is written like a config: under its lock, to a temporary file
beside it (``_atomic``), checked by the node's containerd and, where
config.toml's tree loads it, by nodeguard's checks of the tree with the
candidate in its place; only then renamed. Ownership lives in the one
ledger (``_ledger``): the drop-in's own ledger gets a ``file`` record, and
the folder's a ``folder`` record when this owner created the folder. Both
are saved before the rename or mkdir, so a run killed in between still knows
what is its own. A file nodeguard did not write (no ``file`` record of any
owner) that an owner takes over keeps its bytes, mode and owner in that
owner's record (``replaced``); state=absent puts them back instead of
deleting the file. The imports themselves are containerd_imports' job.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import os
import stat

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    FileLock,
    atomic_write,
    clean_stale_temps,
    commit_temp,
    fsync_dir,
    read_bytes,
    remove_quietly,
    sha256_bytes,
    write_temp,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigError,
    TomlParseError,
    parse_error_message,
    parse_toml,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger, file_identity
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    check_tree,
    import_pattern,
    is_glob,
    run_validate,
)

FILE_KIND = 'file'
FOLDER_KIND = 'folder'


def file_resource(path):
    return 'file:' + path


def folder_resource(path):
    return 'folder:' + path


def _main_data(config_path):
    """config.toml's parsed data, or None when it does not exist (or cannot be read: the editing modules say why)."""
    raw = read_bytes(config_path)
    if raw is None:
        return None
    try:
        return parse_toml(raw.decode('utf-8').lstrip(u'\ufeff'))
    except (TomlParseError, UnicodeDecodeError):
        return None


def importers(config_path, dropin, ver):
    """The files of config.toml's tree with a plain (non-glob) imports entry naming dropin.

    Deleting a file such an entry names leaves a dangling import (containerd
    refuses to start); a glob that matches it just matches one file less.
    """
    data = _main_data(config_path)
    if data is None:
        return []
    out = []
    for path, fdata in load_effective(config_path, data, ver).files:
        entries = fdata.get('imports')
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if isinstance(entry, str) and not is_glob(entry) and import_pattern(entry, path, ver) == dropin:
                out.append(path)
                break
    return out


def _owned(ledger, owner, kind, resource):
    return ledger.select(owner=owner, kind=kind, resource=resource)


def _mode_of(params):
    raw = params.get('mode')
    if raw is None:
        return 0o644
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.isdigit():
        return int(raw, 8)
    raise ConfigError('mode must be octal digits (for example "0644"), got %r' % raw, key='mode')


def _check_candidate(ctx, params, config_path, dropin, tmp, text):
    """The node's containerd on the candidate, then the tree's checks with the candidate in place; a note."""
    path = params['path']
    checked = run_validate(ctx.run_command, params.get('validate') if params.get('validate') != 'load' else 'auto',
                           ctx.containerd_bin, tmp)
    if checked is not None and checked[1] != 0:
        cmd, rc, out, err = checked
        detail = (err or out).strip().splitlines()
        raise ConfigError('refusing to write %s: validation "%s" failed (rc=%s): %s. Nothing was written.'
                          % (dropin, ' '.join(cmd).replace(tmp, '%s'), rc, ' | '.join(detail[-3:]) or 'no output'),
                          key='validate')
    try:
        data = parse_toml(text)
    except TomlParseError as exc:
        raise ConfigError('refusing to write %s: %s. Nothing was written.' % (dropin, parse_error_message(dropin, exc)),
                          key='content')
    main = _main_data(config_path)
    loaded = main is not None and any(p == dropin for p, _d in load_effective(config_path, main,
                                                                              ctx.containerd_version).files)
    if loaded:
        errors = check_tree(config_path, main, ctx.containerd_version, overrides={dropin: data})
        if errors:
            raise ConfigError('refusing to write %s: %s would not load with it. %s Nothing was written.'
                              % (dropin, path, ' '.join(errors)), key=None, check_errors=errors)
    if checked is None:
        return 'not validated by containerd (validate: none, or no containerd binary)'
    return 'containerd config dump' + (' and the tree of %s' % config_path if loaded else '')


def _make_folder(ledger_folder, owner, folder, check_mode):
    """Create the drop-in's folder; the folder record is saved first. True when it was (or would be) created."""
    if os.path.isdir(folder):
        return False
    if check_mode:
        return True
    parent = os.path.dirname(folder)
    if not os.path.isdir(parent):
        raise ConfigError('folder %s does not exist (no containerd here?). Nothing was written.' % parent,
                          key='dropin')
    if not _owned(ledger_folder, owner, FOLDER_KIND, folder_resource(folder)):
        ledger_folder.add({'owner': owner, 'resource': folder_resource(folder), 'kind': FOLDER_KIND})
        ledger_folder.save(None)
    os.mkdir(folder, 0o755)
    os.chmod(folder, 0o755)
    fsync_dir(parent)
    return True


def _prior_of(path, raw):
    """What a takeover keeps of a file nodeguard did not write: its bytes, mode and owner, for state=absent."""
    st = os.stat(path)
    return dict(base64=base64.b64encode(raw).decode('ascii'), sha256=sha256_bytes(raw),
                mode=stat.S_IMODE(st.st_mode), uid=st.st_uid, gid=st.st_gid)


def _claim(ledger, owner, dropin, prior):
    """The owner's file record; with the file it replaces (or takes over as it is) when nodeguard did not write that."""
    record = {'owner': owner, 'resource': file_resource(dropin), 'kind': FILE_KIND}
    if prior is not None:
        record['replaced'] = prior
    ledger.add(record)


def _changed_since(ledger, current):
    """The file is not what nodeguard's last write of it left (someone else changed or removed it since)."""
    return ledger.config_sha256 is not None and sha256_bytes(current or b'') != ledger.config_sha256


def _warn_replacing(ctx, dropin, owner, original, prior, ledger):
    """Say so when the write replaces bytes nodeguard did not write: a file of its own, or a hand change."""
    if prior is not None:
        ctx.warn('%s was not written by nodeguard (no ledger record): %s replaces it. Its content, mode and owner '
                 'are kept in the ledger and put back when %s removes the drop-in (state: absent).'
                 % (dropin, owner, owner))
    elif ledger is not None and original is not None and _changed_since(ledger, original):
        ctx.warn('%s was changed since nodeguard wrote it: %s replaces it, and those changes are lost (backup: true '
                 'keeps a copy).' % (dropin, owner))


def write(module, ctx, params):
    """state=present: the module's result."""
    dropin = os.path.abspath(params['dropin'])
    config_path = os.path.abspath(params['path'])
    owner, state_dir, check = params['owner'], params['state_dir'], module.check_mode
    folder = os.path.dirname(dropin)
    data = params['content'].encode('utf-8')
    mode = _mode_of(params)
    result = dict(changed=False, dropin=dropin, folder_created=False, validated=None)
    if os.path.islink(dropin):
        raise ConfigError('%s is a symbolic link; nodeguard does not write drop-ins through links. Nothing was '
                          'written.' % dropin, key='dropin')
    if os.path.lexists(dropin) and not os.path.isfile(dropin):
        raise ConfigError('%s exists and is not a regular file. Nothing was written.' % dropin, key='dropin')
    if not os.path.isdir(folder):
        if not params.get('create_folder'):
            raise ConfigError('folder %s does not exist. Nothing was written. Fix: create it, or create_folder: '
                              'true.' % folder, key='dropin')
        result['folder_created'] = _make_folder(Ledger.load(state_dir, folder), owner, folder, check)
        if check:
            result.update(changed=True, diff=dict(before='', after=params['content'],
                                                  before_header='%s (absent)' % dropin,
                                                  after_header='%s (after)' % dropin))
            return result
    # config.toml's lock: the drop-in is part of its tree, and a lock file beside the drop-in would stay in its folder
    lock = FileLock(config_path, params['lock_timeout'], create=not check)
    tmp = None
    with lock:
        if not check:
            clean_stale_temps(dropin)
        original = read_bytes(dropin)
        ledger = Ledger.load(state_dir, dropin)
        note = ledger.recover(sha256_bytes(original or b''), file_identity(dropin))
        if note:
            ctx.warn('%s: %s' % (dropin, note))
        mine = _owned(ledger, owner, FILE_KIND, file_resource(dropin))
        held = ledger.select(kind=FILE_KIND, resource=file_resource(dropin))
        prior = _prior_of(dropin, original) if original is not None and not held else None
        same_mode = original is not None and stat.S_IMODE(os.stat(dropin).st_mode) == mode
        if original == data and same_mode:
            if not mine and not check:  # the owner's content already there: it is the owner's file from now on
                _claim(ledger, owner, dropin, prior)
                ledger.save(sha256_bytes(original))
            result['owned'] = True
            return result
        _warn_replacing(ctx, dropin, owner, original, prior, ledger if held else None)
        if module._diff:
            result['diff'] = dict(before='' if original is None else original.decode('utf-8', 'replace'),
                                  after=params['content'],
                                  before_header='%s (%s)' % (dropin, 'absent' if original is None else 'before'),
                                  after_header='%s (after)' % dropin)
        result.update(changed=True, owned=True)
        if check:
            return result
        try:
            tmp = write_temp(dropin, data, mode=mode)
            result['validated'] = _check_candidate(ctx, params, config_path, dropin, tmp, params['content'])
            if params.get('backup') and original is not None:
                result['backup_file'] = module.backup_local(dropin)
            if not mine:
                _claim(ledger, owner, dropin, prior)
            ledger.save(sha256_bytes(data))  # before the rename: a kill in between still knows the file is ours
            commit_temp(tmp, dropin)
            tmp = None
            ctx.written.append(dropin)
        finally:
            if tmp:
                remove_quietly(tmp)
    return result


def _drop_ledger(ledger):
    remove_quietly(ledger.path)


def remove(module, ctx, params):
    """state=absent: the module's result. Only this owner's file goes, and only when nothing names it in imports;
    a file the owner took over gets back what was there before."""
    dropin = os.path.abspath(params['dropin'])
    config_path = os.path.abspath(params['path'])
    owner, state_dir, check = params['owner'], params['state_dir'], module.check_mode
    folder = os.path.dirname(dropin)
    result = dict(changed=False, dropin=dropin, removed=False, restored=False, kept=False, folder_removed=False,
                  imported_by=[])
    if _owned(Ledger.load(state_dir, dropin), owner, FILE_KIND, file_resource(dropin)):
        with FileLock(config_path, params['lock_timeout'], create=not check):
            ledger = Ledger.load(state_dir, dropin)  # again, under the lock
            mine = _owned(ledger, owner, FILE_KIND, file_resource(dropin))
            priors = [r['replaced'] for r in mine if isinstance(r.get('replaced'), dict)]
            if priors:
                _put_back(module, ctx, params, ledger, priors[0], result)
            elif mine:
                _delete(module, ctx, params, ledger, mine, result)
    elif os.path.lexists(dropin):
        result['msg'] = '%s is not a drop-in %s wrote (no ledger record): left alone' % (dropin, owner)
    result['folder_removed'] = _remove_folder(owner, state_dir, folder, check, dropin if result['removed'] else None)
    result['changed'] = result['changed'] or result['folder_removed']
    return result


def _delete(module, ctx, params, ledger, mine, result):
    """Remove the owner's own file (it made it): kept while a plain import names it, a dangling import stops
    containerd."""
    dropin, owner = ledger.config_path, params['owner']
    by = importers(os.path.abspath(params['path']), dropin, ctx.containerd_version)
    if by:
        # another owner still imports it (containerd_imports kept that entry)
        result.update(kept=True, imported_by=by, msg='%s is kept: still imported by %s' % (dropin, ', '.join(by)))
        return
    if os.path.lexists(dropin):
        raw = read_bytes(dropin) or b''
        if _changed_since(ledger, raw):
            ctx.warn('%s was changed since nodeguard wrote it: %s removes it all the same, with those changes.'
                     % (dropin, owner))
        result.update(changed=True, removed=True)
        if module._diff:
            result['diff'] = dict(before=raw.decode('utf-8', 'replace'), after='',
                                  before_header='%s (before)' % dropin, after_header='%s (absent)' % dropin)
        if not module.check_mode:
            os.unlink(dropin)
            fsync_dir(os.path.dirname(dropin))
            ctx.written.append(dropin)
    if module.check_mode:
        return
    if [r for r in ledger.records if r.get('owner') != owner]:
        for rec in mine:
            ledger.remove(rec)
        ledger.save(None)
    else:
        _drop_ledger(ledger)


def _attrs(path):
    """(mode, uid, gid) of path, or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def _put_back(module, ctx, params, ledger, prior, result):
    """The owner took this file over: its record goes and the file it replaced comes back (bytes, mode, owner),
    written atomically; while another owner still holds the file, that owner inherits what to put back."""
    dropin, owner = ledger.config_path, params['owner']
    current = read_bytes(dropin)
    for rec in _owned(ledger, owner, FILE_KIND, file_resource(dropin)):
        ledger.remove(rec)
    heirs = sorted(ledger.select(kind=FILE_KIND, resource=file_resource(dropin)), key=lambda r: r.get('seq', 0))
    if heirs:
        heirs[0]['replaced'] = prior
        result.update(kept=True, msg='%s is kept: %s still hold(s) it, and it is put back when the last of them '
                                     'removes it' % (dropin, ', '.join(sorted(set(r['owner'] for r in heirs)))))
        if not module.check_mode:
            ledger.save(ledger.config_sha256)
        return
    raw = base64.b64decode(prior['base64'])
    if current is None or _changed_since(ledger, current):
        ctx.warn('%s was %s since %s wrote it: the file from before %s is put back all the same.'
                 % (dropin, 'removed' if current is None else 'changed', owner, owner))
    if current != raw or _attrs(dropin) != (prior['mode'], prior['uid'], prior['gid']):
        result.update(changed=True, restored=True)
        if module._diff:
            text = raw.decode('utf-8', 'replace')
            secrets.note_text(text)  # the file put back is quoted: its secrets are masked as the current file's
            result['diff'] = dict(before='' if current is None else current.decode('utf-8', 'replace'), after=text,
                                  before_header='%s (%s)' % (dropin, 'absent' if current is None else 'before'),
                                  after_header='%s (put back)' % dropin)
    if module.check_mode:
        return
    if result['restored']:
        # the record goes only after the rename: a run killed in between leaves it, and the next state=absent
        # puts the same bytes back (a change it says so)
        atomic_write(dropin, raw, mode=prior['mode'], uid=prior['uid'], gid=prior['gid'])
        ctx.written.append(dropin)
    if ledger.records:
        ledger.save(sha256_bytes(raw))
    else:
        _drop_ledger(ledger)


def remove_all(module, ctx, params):
    """state=absent with dropins: remove() for each, in order; one result with each drop-in's."""
    each = [remove(module, ctx, dict(params, dropin=dropin)) for dropin in params['dropins']]
    diffs = [r.pop('diff') for r in each if r.get('diff')]
    result = dict(changed=any(r['changed'] for r in each), dropins=each,
                  removed=any(r['removed'] for r in each), restored=any(r['restored'] for r in each),
                  kept=any(r['kept'] for r in each),
                  folder_removed=any(r['folder_removed'] for r in each),
                  imported_by=sorted(set(p for r in each for p in r['imported_by'])))
    if diffs:
        result['diff'] = diffs
    return result


def _remove_folder(owner, state_dir, folder, check, going):
    """Remove the folder this owner created once it is empty; its record goes with it."""
    ledger = Ledger.load(state_dir, folder)
    mine = _owned(ledger, owner, FOLDER_KIND, folder_resource(folder))
    if not mine:
        return False
    others = [r for r in ledger.records if r.get('owner') != owner]
    if os.path.isdir(folder):
        left = [n for n in os.listdir(folder) if os.path.join(folder, n) != going]
        if left or others:
            return False  # something that is not this owner's lives there, or another owner created it too
        if check:
            return True
        os.rmdir(folder)
        fsync_dir(os.path.dirname(folder))
        removed = True
    else:
        removed = False
    if not check:
        _drop_ledger(ledger)
    return removed
