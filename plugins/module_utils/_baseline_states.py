# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The states of containerd_baseline: snapshot, check, restore, repair, absent."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import traceback

from ansible_collections.nodeguard.containerd.plugins.module_utils._atomic import (
    read_bytes,
    sha256_bytes,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline import (
    Store,
    TreeFile,
    read_tree,
    record_attrs,
    utc_now,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline_drift import (
    DEFAULT_PROTECT,
    describe,
    diff_data,
    has_drift,
    protected_drift,
    resolve_protect,
    tree_drift,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline_repair import repair
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline_restore import restore
from ansible_collections.nodeguard.containerd.plugins.module_utils._config_model import (
    ConfigDocument,
    ConfigError,
    Layout,
    detect_version,
    lock_or_fail,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._engine import (
    Context,
    _file_args,
    _stat_owner,
    _target_path,
    require_tomlkit,
    run_transaction,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._imports_edit import clean_imports
from ansible_collections.nodeguard.containerd.plugins.module_utils._ledger import ledger_path_for
from ansible_collections.nodeguard.containerd.plugins.module_utils._ownership import dotted
from ansible_collections.nodeguard.containerd.plugins.module_utils._validate import check_tree

_VERSION_WORD = re.compile(r'^v?\d+\.\d+')


class Done(Exception):
    """Raised to end the module with a result (exit or fail)."""

    def __init__(self, result, failed=False):
        super(Done, self).__init__(result.get('msg', ''))
        self.result = result
        self.failed = failed


def _info(store, baseline):
    out = dict(baseline=store.folder, snapshot=None, files=[])
    if baseline is not None:
        m = baseline.manifest
        out.update(snapshot=baseline.folder, files=baseline.public_files(), created=m.get('created'),
                   containerd_version=(m.get('containerd') or {}).get('version'),
                   config_version=m.get('config_version'), config_missing=m.get('config_missing'))
    return out


def _containerd_info(ctx):
    binary = ctx.containerd_bin
    if not binary:
        return None
    rc, out, _err = ctx.run_command([binary, '--version'])
    if rc != 0:
        return dict(binary=binary, version=None, output=None)
    version = None
    for word in out.split()[1:]:
        if _VERSION_WORD.match(word):
            version = word.lstrip('v')
            break
    return dict(binary=binary, version=version, output=out.strip())


def _config_lock(module, path):
    if not os.path.isdir(os.path.dirname(path)):
        return None
    return lock_or_fail(path, module.params['lock_timeout'])


def _require(store, baseline, path):
    if baseline is None:
        raise ConfigError('there is no baseline %r in %s. Fix: take one first with state: snapshot.'
                          % (store.name, store.root), key='name')
    if baseline.manifest.get('config') != path:
        raise ConfigError('baseline %r in %s was taken of %s, not %s. Nothing was changed. Fix: use another name '
                          'for this config.' % (store.name, store.root, baseline.manifest.get('config'), path),
                          key='name')


def _protect(params):
    """The protect list: the default when not given; an empty list protects nothing."""
    return list(DEFAULT_PROTECT) if params.get('protect') is None else list(params['protect'])


def _ledger_key_path(path):
    return os.path.realpath(path) if os.path.islink(path) else path


def _same_snapshot(baseline, tree, include_imports):
    m = baseline.manifest
    if bool(m.get('include_imports')) != include_imports or bool(m.get('config_missing')) != tree.config_missing:
        return False
    have = dict((r['path'], (r['sha256'], record_attrs(r))) for r in baseline.files)
    if set(have) != set(f.path for f in tree.files):
        return False
    for f in tree.files:
        sha, attrs = have[f.path]
        if sha != f.sha256 or (attrs.mode, attrs.uid, attrs.gid) != (f.attrs.mode, f.attrs.uid, f.attrs.gid):
            return False
    return True


# ------------------------------------------------------------------ states
def do_snapshot(module, store, path):
    params = module.params
    baseline = store.load()
    if baseline is not None and baseline.manifest.get('config') != path:
        _require(store, baseline, path)
    result = dict(changed=False)
    if baseline is not None and not params['overwrite']:
        result.update(_info(store, baseline))
        result['msg'] = 'baseline %r exists already (taken %s); overwrite: true replaces it' % (
            store.name, baseline.manifest.get('created'))
        return result
    ctx = Context(module, path)
    lock = _config_lock(module, path)
    try:
        tree = read_tree(path, params['include_imports'])
        main = tree.config
        problems = []
        version = None
        if main is not None:
            if main.error:
                raise ConfigError('%s. A baseline must be a config containerd can load, so no snapshot was taken. '
                                  'Fix: repair the file first (or put back an older baseline with state: restore).'
                                  % main.error, key='path')
            version = ConfigDocument(path, main.text).version
            problems = check_tree(path, main.data, ctx.containerd_version)
        if baseline is not None and _same_snapshot(baseline, tree, params['include_imports']):
            result.update(_info(store, baseline))
            if not module.check_mode:
                result['pruned'] = store.prune(params['keep'])
                result['changed'] = bool(result['pruned'])
            return result
        if module.check_mode:
            result.update(_info(store, baseline))
            result.update(changed=True, files=[dict(path=f.path, role=f.role, sha256=f.sha256) for f in tree.files])
            return result
        lpath = ledger_path_for(params['state_dir'], _ledger_key_path(path))
        ledger_raw = read_bytes(lpath)
        now, stamp = utc_now()
        config_sha = main.sha256 if main is not None else None
        ledger_info = None
        if ledger_raw is not None:
            ledger_info = dict(path=lpath, sha256=sha256_bytes(ledger_raw))
            try:
                ledger_info['in_sync'] = json.loads(ledger_raw.decode('utf-8')).get('config_sha256') == config_sha
            except ValueError:
                ledger_info['in_sync'] = False
        manifest = dict(
            format=1, name=store.name, config=path, created=stamp.isoformat().replace('+00:00', 'Z'),
            created_unix=now, containerd=_containerd_info(ctx), config_version=version,
            config_missing=main is None, include_imports=params['include_imports'],
            missing_imports=tree.missing, globs=tree.globs, problems=problems + tree.problems, ledger=ledger_info)
    finally:
        if lock is not None:
            lock.release()
    store.write(manifest, tree.files, ledger_raw, stamp)
    pruned = store.prune(params['keep'])
    baseline = store.load()
    result.update(_info(store, baseline))
    result.update(changed=True, pruned=pruned, problems=manifest['problems'], missing_imports=tree.missing)
    if main is None:
        module.warn('%s does not exist: baseline %r records that it was missing' % (path, store.name))
    for p in manifest['problems']:
        module.warn('baseline %r was taken of a config that would not load: %s' % (store.name, p))
    return result


def _stored_tree_files(baseline):
    out = {}
    for rec in baseline.files:
        out[rec['path']] = TreeFile(rec['path'], baseline.read(rec), record_attrs(rec), rec['role'])
    return out


class Comparison(object):
    """The node now against a baseline: drift, protected drift, why it cannot be compared."""

    def __init__(self, baseline, path, protect):
        stored = _stored_tree_files(baseline)
        self.base_main = stored.get(path)
        self.tree = read_tree(path, bool(baseline.manifest.get('include_imports')))
        self.main = main = self.tree.config
        self.error = None
        self.drift = self.protected_drift = self.layout = None
        base_shas = dict((p, f.sha256) for p, f in stored.items())
        base_data = dict((p, f.data) for p, f in stored.items())
        if main is None:
            self.error = '%s does not exist' % path
            self.drift = tree_drift(base_shas, {}, base_data, {})
            return
        if main.error:
            self.error = main.error
            return
        try:
            self.layout = Layout(detect_version(path, main.data))
        except ConfigError as exc:
            self.error = str(exc)
            return
        base_layout = None
        if self.base_main is not None and self.base_main.data is not None:
            try:
                base_layout = Layout(detect_version(path, self.base_main.data))
            except ConfigError:
                base_layout = None
        self.drift = tree_drift(base_shas, dict((f.path, f.sha256) for f in self.tree.files),
                                base_data, dict((f.path, f.data) for f in self.tree.files))
        self.protected_drift = protected_drift(protect, self.base_main.data if self.base_main is not None else None,
                                               base_layout, main.data, self.layout)


def do_check(module, store, path):
    params = module.params
    baseline = store.load()
    _require(store, baseline, path)
    result = dict(changed=False)
    result.update(_info(store, baseline))
    protect = _protect(params)
    cmp = Comparison(baseline, path, protect)
    name = 'baseline %r (taken %s)' % (store.name, baseline.manifest.get('created'))
    result.update(drift=cmp.drift, protected_drift=cmp.protected_drift)
    if cmp.error:
        result['problems'] = [cmp.error]
        if cmp.main is None:
            result['msg'] = ('%s (it did when %s was taken). Fix: state: restore puts it back.' % (cmp.error, name)
                             if cmp.base_main is not None else cmp.error)
        elif cmp.main.error:
            result['msg'] = '%s. Fix: state: restore puts back %s byte for byte.' % (cmp.error, name)
        else:
            result['msg'] = cmp.error
        raise Done(result, failed=True)
    ctx = Context(module, path)
    problems = check_tree(path, cmp.main.data, ctx.containerd_version)
    result.update(drifted=has_drift(cmp.drift), problems=problems,
                  protect=[dict(key=k, path=dotted(resolve_protect(cmp.layout, k))) for k in protect])
    msgs = []
    if cmp.protected_drift:
        msgs.append('protected keys drifted from %s: %s. Fix: state: repair puts them back and keeps the other '
                    'changes; state: restore puts back the whole file.' % (name, describe(cmp.protected_drift)))
    if problems:
        msgs.append('%s would not load: %s' % (path, ' '.join(problems)))
    if msgs:
        result['msg'] = ' '.join(msgs)
        raise Done(result, failed=True)
    return result


def do_restore(module, store, path):
    baseline = store.load()
    _require(store, baseline, path)
    target = _target_path(module, path)
    ctx = Context(module, target)
    uid, gid, mode = _stat_owner(module, module.params)
    result = dict(changed=False)
    result.update(_info(store, baseline))
    cmp = Comparison(baseline, path, _protect(module.params))
    result.update(drift=cmp.drift, protected_drift=cmp.protected_drift)
    try:
        result.update(restore(module, ctx, baseline, path, target, (mode, uid, gid)))
    finally:
        for w in ctx.warnings:
            module.warn(w)
    if not module.check_mode and os.path.exists(target):
        if module.set_fs_attributes_if_different(_file_args(module, target), False):
            result['changed'] = True
    return result


def do_repair(module, store, path):
    params = module.params
    baseline = store.load()
    _require(store, baseline, path)
    info = _info(store, baseline)
    rec = baseline.config_record
    if rec is None:
        raise ConfigError('baseline %r recorded that %s did not exist when it was taken, so it has no keys to put '
                          'back. Nothing was written.' % (store.name, path), key='name')
    text = baseline.read(rec).decode('utf-8', 'replace')
    try:
        base_doc = ConfigDocument(path, text)
    except ConfigError as exc:
        raise ConfigError('the copy of %s in baseline %r cannot be read as a config: %s' % (path, store.name, exc),
                          key='name')
    protect = _protect(params)
    for key in protect:
        resolve_protect(base_doc.layout, key)   # bad entries fail before anything is read
    store.unlock()

    def edit(doc, ledger, ctx):
        out = dict(info)
        out['drift'] = diff_data(base_doc.data, doc.data, file=path)
        out['protected_drift'] = protected_drift(protect, base_doc.data, base_doc.layout, doc.data, doc.layout)
        out.update(repair(doc, base_doc, protect, clean_imports))
        return out

    run_transaction(module, edit)   # exits the module


STATES = dict(snapshot=do_snapshot, check=do_check, restore=do_restore, repair=do_repair)


def main(module):
    require_tomlkit(module)
    params = module.params
    if params['keep'] < 0:
        module.fail_json(msg='keep must be 0 or more, got %d' % params['keep'])
    path = os.path.abspath(params['path'])
    store = None
    try:
        store = Store(params['store'], params['name'])
        if params['state'] == 'absent':
            if not store.exists():
                module.exit_json(changed=False, baseline=store.folder, removed=False)
            store.lock(params['lock_timeout'])
            if module.check_mode:
                store.load()
                module.exit_json(changed=True, baseline=store.folder, removed=True)
            removed = store.remove()
            module.exit_json(changed=removed, baseline=store.folder, removed=removed)
        create = params['state'] == 'snapshot' and not module.check_mode
        if store.lock(params['lock_timeout'], create=create) is None:
            if params['state'] == 'snapshot':
                # check mode and no store yet: a snapshot would be taken
                module.exit_json(changed=True, baseline=store.folder, snapshot=None, files=[])
            raise ConfigError('there is no baseline %r in %s (the folder does not exist). Fix: take one first '
                              'with state: snapshot.' % (store.name, store.root), key='name')
        result = STATES[params['state']](module, store, path)
    except Done as done:
        if done.failed:
            module.fail_json(**done.result)
        module.exit_json(**done.result)
    except ConfigError as exc:
        module.fail_json(msg=str(exc), **dict((k, v) for k, v in exc.details.items() if v is not None))
    except Exception as exc:  # a clear failure, never a traceback on stdout
        module.fail_json(msg='containerd_baseline failed on %s: %s' % (path, exc), exception=traceback.format_exc())
    finally:
        if store is not None:
            store.unlock()
    module.exit_json(**result)
