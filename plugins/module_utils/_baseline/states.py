# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The states of containerd_baseline: snapshot, check, restore, repair, absent."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import functools
import json
import os
import traceback

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    read_bytes,
    sha256_bytes,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import (
    Store,
    TreeFile,
    read_tree,
    record_attrs,
    utc_now,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.drift import (
    DEFAULT_PROTECT,
    describe,
    diff_data,
    has_drift,
    lookup,
    plain,
    protected_drift,
    resolve_protect,
    same_tree,
    tree_drift,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.effective import (
    Mirror,
    describe_effective,
    effective_drift,
    effective_records,
    merged_path,
    parse_ver,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.repair import put_back, repair
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.restore import restore
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigDocument,
    ConfigError,
    Layout,
    detect_version,
    lock_or_fail,
    version_text,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import (
    ABSENT,
    changed_leaves,
    effects_of,
    load_effective,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    Checked,
    Context,
    file_args,
    stat_owner,
    target_path,
    check_builtin,
    check_with_containerd,
    json_safe,
    require_tomlkit,
    run_transaction,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import clean_imports
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_key, ledger_path_for
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ownership import dotted
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    file_version,
    refuse_unreadable_version,
    self_import_warning,
    self_imports,
    version_answer,
    version_word,
)


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
    rc, out, _err = version_answer(ctx.run_command, binary)
    if rc != 0:
        return dict(binary=binary, version=None, output=None)
    return dict(binary=binary, version=version_word(out), output=out.strip())


def _config_lock(module, path):
    if not os.path.isdir(os.path.dirname(path)):
        return None
    return lock_or_fail(path, module.params['lock_timeout'])


def require_baseline(store, baseline, path):
    if baseline is None:
        raise ConfigError('there is no baseline %r in %s. Fix: take one first with state: snapshot.'
                          % (store.name, store.root), key='name')
    if baseline.manifest.get('config') != path:
        raise ConfigError('baseline %r in %s was taken of %s, not %s. Nothing was changed. Fix: use another name '
                          'for this config.' % (store.name, store.root, baseline.manifest.get('config'), path),
                          key='name')


def protected_keys(params):
    """The protect list: the default when not given; an empty list protects nothing."""
    return list(DEFAULT_PROTECT) if params.get('protect') is None else list(params['protect'])


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


# ------------------------------------------------------------------ judging the node
def judge(ctx, path, data, validate, load_test):
    """Would the node's containerd load the tree at path as it is?  The engine's check step, on the node's files.

    Every problem is listed (the built-in ones and containerd's); a Checked.
    """
    checked = Checked()
    try:
        refuse_unreadable_version(path, file_version(data), ctx.containerd_version)
    except ConfigError as exc:
        checked.refuse('built-in', [str(exc).replace(' Nothing was written.', '')])
    check_builtin(ctx, checked, path, data)
    return check_with_containerd(ctx, checked, path, validate, load_test=load_test, dump_must_load=True)


def _judge(module, ctx, path, data, load_test=None):
    params = module.params
    return judge(ctx, path, data, params.get('validate'),
                 params.get('load_test', True) if load_test is None else load_test)


def _warn_self_import(module, path, data, ctx):
    """A config that imports itself (NVIDIA's toolkit before 1.18 writes one) is named: it works, but it
    is the toolkit's mark on the file, and it makes a copy checked elsewhere read the live file."""
    for me in self_imports(path, data or {}, ctx.containerd_version):
        module.warn(self_import_warning(me))


def _warn_unjudged(module, path, validated):
    """A load test that could not run judges nothing: say so."""
    for note in (validated or {}).get('notes') or []:
        if note.startswith('load test could not run'):
            module.warn('%s: %s; the result was judged without it' % (path, note))


def _view(path, data, ctx):
    return load_effective(path, data, ctx.containerd_version)


def _snapshot_protect(params):
    """The keys whose effective values a snapshot records: the protect list and the default ones."""
    keys = protected_keys(params)
    return keys + [k for k in DEFAULT_PROTECT if k not in keys]


def _baseline_containerd(baseline):
    eff = baseline.manifest.get('effective') or {}
    return parse_ver(eff.get('containerd')) or parse_ver((baseline.manifest.get('containerd') or {}).get('version'))


def baseline_records(baseline, path, protect, ctx):
    """The baseline's effective value of each protected key.

    Recorded at snapshot time where the key was; otherwise computed from the
    stored files (a mirror of them, so drop-ins added since do not count) and
    the stored config dump.
    """
    eff = baseline.manifest.get('effective') or {}
    stored = dict((r['key'], r) for r in eff.get('values') or [])
    missing = [k for k in protect if k not in stored]
    computed = {}
    if missing and baseline.config_record is not None:
        files = list(_stored_tree_files(baseline).values())
        ver = _baseline_containerd(baseline) or ctx.containerd_version
        with Mirror(files, path) as mirror:
            if mirror.main_data is not None:
                view = load_effective(mirror.main, mirror.main_data, ver)
                for rec in effective_records(view, missing, baseline.dump_data(), mirror.real):
                    computed[rec['key']] = rec
    return [stored.get(k) or computed[k] for k in protect if k in stored or k in computed]


def in_effect_note(entries, records, path):
    """Mark each config.toml protected-drift entry: is config.toml's value the one containerd runs?"""
    by_key = dict((r['key'], r) for r in records)
    for e in entries:
        rec = by_key.get(e['key'])
        if rec is None:
            continue
        holder = rec.get('file') or rec.get('owner')
        e['in_effect'] = holder == path
        if not e['in_effect']:
            e['shadowed_by'] = holder
    return entries


# ------------------------------------------------------------------ states
def do_snapshot(module, store, path):
    params = module.params
    baseline = store.load()
    if baseline is not None and baseline.manifest.get('config') != path:
        require_baseline(store, baseline, path)
    result = dict(changed=False)
    if baseline is not None and not params['overwrite']:
        result.update(_info(store, baseline))
        result['msg'] = 'baseline %r exists already (taken %s); overwrite: true replaces it' % (
            store.name, baseline.manifest.get('created'))
        return result
    ctx = Context(module, path)
    protect = _snapshot_protect(params)
    lock = _config_lock(module, path)
    judged = None
    records = None
    try:
        tree = read_tree(path, params['include_imports'])
        main = tree.config
        problems = []
        version = _snapshot_version(main, path, protect)
        if baseline is not None and _same_snapshot(baseline, tree, params['include_imports']):
            result.update(_info(store, baseline))
            if not module.check_mode:
                result['pruned'] = store.prune(params['keep'])
                result['changed'] = bool(result['pruned'])
            return result
        if main is not None:
            judged = _judge(module, ctx, path, main.data)
            problems = judged.problems + tree.problems
            records = effective_records(_view(path, main.data, ctx), protect, judged.dump)
            if problems and not params['allow_broken']:
                raise ConfigError(
                    'containerd would not load %s, so no snapshot was taken (a baseline is what restore and repair '
                    'put back). %s Fix: repair the config first (or put back an older baseline with state: '
                    'restore); to record this tree anyway, with its problems, set allow_broken: true.'
                    % (path, ' '.join(problems)), key='path', problems=problems, validated=judged.as_dict())
        if module.check_mode:
            result.update(_info(store, baseline))
            result.update(changed=True, files=[dict(path=f.path, role=f.role, sha256=f.sha256) for f in tree.files],
                          effective=records, problems=problems,
                          validated=judged.as_dict() if judged is not None else None)
            return result
        ledger_raw, ledger_info = _ledger_of(params['state_dir'], path, main.sha256 if main is not None else None)
        now, stamp = utc_now()
        ver = ctx.containerd_version
        effective = None
        if records is not None:
            effective = dict(containerd=list(ver) if ver else None, values=records, validated=judged.as_dict())
        manifest = dict(
            format=1, name=store.name, config=path, created=stamp.isoformat().replace('+00:00', 'Z'),
            created_unix=now, containerd=_containerd_info(ctx), config_version=version,
            config_missing=main is None, include_imports=params['include_imports'],
            missing_imports=tree.missing, globs=tree.globs, problems=problems, ledger=ledger_info,
            effective=effective, broken=bool(problems))
    finally:
        if lock is not None:
            lock.release()
    dump_raw = judged.dump_text.encode('utf-8') if judged is not None and judged.dump_text else None
    store.write(manifest, tree.files, ledger_raw, stamp, dump_raw)
    pruned = store.prune(params['keep'])
    baseline = store.load()
    result.update(_info(store, baseline))
    result.update(changed=True, pruned=pruned, problems=manifest['problems'], missing_imports=tree.missing,
                  effective=records, validated=judged.as_dict() if judged is not None else None)
    _warn_after_snapshot(module, store, path, main is None, manifest['problems'], judged)
    return result


def _snapshot_version(main, path, protect):
    """The config version of the file to snapshot (None when it is missing); refuses a file that cannot be read
    and bad protect entries before anything is judged."""
    if main is None:
        return None
    if main.error:
        raise ConfigError('%s. A baseline must be a config containerd can load, so no snapshot was taken. '
                          'Fix: repair the file first (or put back an older baseline with state: restore).'
                          % main.error, key='path')
    doc = ConfigDocument(path, main.text)
    for key in protect:
        resolve_protect(doc.layout, key)
    return doc.version


def _ledger_of(state_dir, path, config_sha):
    """(the ledger's bytes or None, what the manifest says of it: path, sha256, in_sync with the config)."""
    lpath = ledger_path_for(state_dir, ledger_key(path))
    ledger_raw = read_bytes(lpath)
    if ledger_raw is None:
        return None, None
    ledger_info = dict(path=lpath, sha256=sha256_bytes(ledger_raw))
    try:
        ledger_info['in_sync'] = json.loads(ledger_raw.decode('utf-8')).get('config_sha256') == config_sha
    except ValueError:
        ledger_info['in_sync'] = False
    return ledger_raw, ledger_info


def _warn_after_snapshot(module, store, path, missing, problems, judged):
    if missing:
        module.warn('%s does not exist: baseline %r records that it was missing' % (path, store.name))
    for p in problems:
        module.warn('baseline %r was taken of a config that would not load (allow_broken: true): %s'
                    % (store.name, p))
    if judged is not None:
        _warn_unjudged(module, path, judged.as_dict())
    if judged is not None and not judged.dump and module.params.get('validate') != 'none':
        module.warn('%s: the baseline holds no effective values from containerd itself (%s)'
                    % (path, '; '.join(judged.notes)))


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


def effective_now(module, ctx, baseline, path, data, protect, judged=None):
    """(records now, effective drift from the baseline, the view) of the tree whose main data is given."""
    view = _view(path, data, ctx)
    records = effective_records(view, protect, judged.dump if judged is not None else None)
    if baseline.config_record is None:
        return records, [], view
    before = baseline_records(baseline, path, protect, ctx)
    same = _baseline_containerd(baseline) == ctx.containerd_version
    return records, effective_drift(before, records, same, view, ver=ctx.containerd_version), view


def do_check(module, store, path, load_test=None, ctx=None):
    params = module.params
    baseline = store.load()
    require_baseline(store, baseline, path)
    result = dict(changed=False)
    result.update(_info(store, baseline))
    protect = protected_keys(params)
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
    ctx = ctx or Context(module, path)
    judged = _judge(module, ctx, path, cmp.main.data, load_test=load_test)
    _warn_unjudged(module, path, judged.as_dict())
    _warn_self_import(module, path, cmp.main.data, ctx)
    problems = judged.problems + cmp.tree.problems
    records, edrift, _view_now = effective_now(module, ctx, baseline, path, cmp.main.data, protect, judged)
    in_effect_note(cmp.protected_drift, records, path)
    result.update(drifted=has_drift(cmp.drift), problems=problems, effective=records, effective_drift=edrift,
                  validated=judged.as_dict(),
                  protect=[dict(key=k, path=dotted(resolve_protect(cmp.layout, k))) for k in protect])
    msgs = []
    if edrift:
        msgs.append('what containerd runs drifted from %s: %s. Fix: state: repair puts the protected values back '
                    'where containerd reads them (edit_in: auto) and says what it could not; state: restore puts '
                    'back the whole baseline.' % (name, describe_effective(edrift)))
    if cmp.protected_drift:
        hidden = [e for e in cmp.protected_drift if e.get('in_effect') is False]
        hiders = sorted(set(e['shadowed_by'] for e in hidden if e.get('shadowed_by')))
        note = (' (%s: not what containerd runs now, because of %s; it would be once that file goes)'
                % (', '.join(e['key'] for e in hidden), ', '.join(hiders)) if hidden else '')
        msgs.append('protected keys drifted in %s from %s: %s%s. Fix: state: repair puts them back and keeps the '
                    'other changes; state: restore puts back the whole file.'
                    % (path, name, describe(cmp.protected_drift), note))
    if problems:
        msgs.append('%s would not load: %s' % (path, ' '.join(problems)))
    if msgs:
        result['msg'] = ' '.join(msgs)
        raise Done(result, failed=True)
    return result


def do_restore(module, store, path):
    baseline = store.load()
    require_baseline(store, baseline, path)
    target = target_path(module, path)
    ctx = Context(module, target)
    recorded = record_attrs(baseline.config_record).mode if baseline.config_record is not None else None
    uid, gid, mode = stat_owner(module, module.params, base_mode=recorded)
    result = dict(changed=False)
    result.update(_info(store, baseline))
    protect = protected_keys(module.params)
    cmp = Comparison(baseline, path, protect)
    result.update(drift=cmp.drift, protected_drift=cmp.protected_drift)
    if cmp.main is not None and cmp.main.data is not None and cmp.error is None:
        result['effective_drift'] = effective_now(module, ctx, baseline, path, cmp.main.data, protect)[1]
    try:
        result.update(restore(module, ctx, baseline, path, target, (mode, uid, gid)))
        _warn_unjudged(module, path, result.get('validated'))
    finally:
        for w in ctx.warnings:
            module.warn(w)
    if os.path.exists(target):   # in check mode it only says what it would change
        if module.set_fs_attributes_if_different(file_args(module, target), False):
            result['changed'] = True
    return result


# ------------------------------------------------------------------ repair
class _Exit(Exception):
    def __init__(self, result, failed):
        super(_Exit, self).__init__(result.get('msg', ''))
        self.result = result
        self.failed = failed


def _transaction(module, edit, edit_in):
    """The engine's run_transaction on one file of the tree, returning (result, failed) instead of exiting.

    edit_in: 'config' (config.toml, changes that would not be in effect are
    refused) or the path of a file config.toml imports.
    """
    saved = (module.exit_json, module.fail_json, module.params.get('edit_in'))

    def finished(**kw):
        raise _Exit(kw, False)

    def failed(**kw):
        raise _Exit(kw, True)

    module.exit_json, module.fail_json = finished, failed
    module.params['edit_in'] = edit_in
    try:
        # the engine's check step also starts containerd on the candidate (load_test; its summary: load_tested)
        # check mode: the repair judges its candidate files on nodeguard's model (no config dump, no start)
        run_transaction(module, edit, load_test=module.params.get('load_test', True), checks_in_check_mode=False)
    except _Exit as done:
        return done.result, done.failed
    finally:
        module.exit_json, module.fail_json = saved[0], saved[1]
        module.params['edit_in'] = saved[2]
    raise ConfigError('the edit of %s ended without a result' % edit_in)   # run_transaction always exits


def _hidden_by(path, ver):
    """shadowed(before, after) for repair: is config.toml's change what containerd runs?"""
    def shadowed(before, after):
        changes = changed_leaves(before, after)
        if not changes:
            return None
        view = load_effective(path, after, ver)
        effects = effects_of(view, path, changes)
        lost = [e for e in effects if not e.in_effect and e.value is not ABSENT]
        homes = sorted(set(e.shadowed_by for e in effects if e.shadowed_by))
        if lost:
            return dict(file=lost[0].shadowed_by, why=lost[0].why)
        if len(homes) > 1:
            return dict(file=homes[0], why='several drop-ins set it too (%s)' % ', '.join(homes))
        return None
    return shadowed


def _plan_dropins(view, drift, path, edit_in):
    """Which drop-in each remaining effective drift entry must be fixed in; the rest, with why it is left."""
    targets, left = {}, []
    imported = view.imported()
    for d in drift:
        src = d.get('file') or view.source_of(merged_path(view, d['key']))
        if src and src != path and src in imported:
            if edit_in == 'config':
                left.append(dict(d, file=src, why='%s; edit_in: config keeps the repair in %s, and %s decides this '
                                                  'key (edit_in: auto repairs it there)' % (d['why'], path, src)))
            else:
                targets.setdefault(src, []).append(d)
            continue
        gone = d.get('before_file') and d['before_file'] != path and d['before_file'] not in imported
        if gone:
            why = ('%s; the baseline\'s value came from %s, which containerd no longer loads. Left as it is: state: '
                   'restore puts that file back' % (d['why'], d['before_file']))
        else:
            why = ('%s; the value in effect comes from %s, and putting the baseline\'s value there would not make '
                   'containerd run it. Left as it is: state: restore puts back the whole baseline' % (d['why'], src))
        left.append(dict(d, why=why))
    return targets, left


def _base_doc_for(baseline, path, file_path, key, main_version):
    """A document whose text holds the baseline's value of key (raw text is copied from it), or None."""
    for rec in baseline.files:
        if rec['path'] == file_path:
            try:
                doc = ConfigDocument(file_path, baseline.read(rec).decode('utf-8'), default_version=main_version)
            except ConfigError:
                return None
            return doc
    return None


def _dropin_edit(module, baseline, path, entries, base_recs, state):
    """The edit callback that puts the baseline's effective values back into one drop-in."""
    by_key = dict((r['key'], r) for r in base_recs)

    def edit(doc, ledger, ctx):
        done, left = [], []
        main_version = file_version(state['main_data']) if state.get('main_data') else doc.version
        view = load_effective(path, state['main_data'], ctx.containerd_version) if state.get('main_data') else None
        for d in entries:
            key = d['key']
            dpath = tuple(resolve_protect(doc.layout, key))
            want_at = merged_path(view, key) if view is not None else None
            if view is not None and tuple(view.read_path(dpath, doc.path)) != want_at:
                left.append(dict(d, file=doc.path, why='%s; %s keeps it at %s, which containerd %s does not read as '
                                                       '%s' % (d['why'], doc.path, dotted(dpath),
                                                               version_text(ctx.containerd_version), d['path'])))
                continue
            rec = by_key.get(key) or {}
            want = None if rec.get('default') else rec.get('value')
            cur = lookup(doc.data, dpath)
            if same_tree(want, cur):
                continue
            src = None
            if rec.get('file'):
                src = _base_doc_for(baseline, path, rec['file'], key, main_version)
                if src is not None and not same_tree(lookup(src.data, dpath), want):
                    src = None
            if src is None:
                src = ConfigDocument(doc.path, 'version = %d\n' % doc.version)
            put_back(doc, src, dpath, want, cur)
            done.append(dict(key=key, path=dotted(dpath), file=doc.path,
                             change='added' if want is None else 'removed' if cur is None else 'changed',
                             before=plain(cur), after=plain(want)))
        state.setdefault('dropin_data', {})[doc.path] = copy.deepcopy(doc.data)
        return dict(repaired_in_dropin=done, left_in_dropin=left)
    return edit


def _diffs(results):
    diffs = [r['diff'] for r in results if r.get('diff')]
    if not diffs:
        return None
    return diffs[0] if len(diffs) == 1 else diffs


def do_repair(module, store, path):
    params = module.params
    baseline = store.load()
    require_baseline(store, baseline, path)
    info = _info(store, baseline)
    base_doc, protect = _repair_source(store, baseline, path, params)
    ctx = Context(module, path)
    base_recs = baseline_records(baseline, path, protect, ctx)
    store.unlock()
    state = {}

    def edit_main(doc, ledger, ctx):
        out = dict(info)
        out['drift'] = diff_data(base_doc.data, doc.data, file=path)
        out['protected_drift'] = protected_drift(protect, base_doc.data, base_doc.layout, doc.data, doc.layout)
        cleaner = functools.partial(clean_imports, containerd_ver=ctx.containerd_version)
        out.update(repair(doc, base_doc, protect, cleaner, _hidden_by(path, ctx.containerd_version)))
        state['main_data'] = copy.deepcopy(doc.data)
        return out

    first, failed = _transaction(module, edit_main, 'config')
    if failed:
        raise Done(first, failed=True)
    results = [first]
    written = [first.get('file') or path] if first.get('changed') else []
    repaired = [dict(r, file=path) for r in first.get('restored_keys', [])]
    left = list(first.get('left', []))

    # what containerd runs now (the candidate in check mode), and the drop-ins that decide what still drifts
    main_data = state.get('main_data')
    if main_data is None:
        raise Done(first)
    judged = None
    if not module.check_mode and params.get('validate') != 'none':
        judged = judge(ctx, path, main_data, params.get('validate'), None)
    records, drift, view = effective_now(module, ctx, baseline, path, main_data, protect, judged)
    targets, not_here = _plan_dropins(view, drift, path, params['edit_in'])
    left.extend(not_here)
    for dropin in sorted(targets):
        results.append(_repair_dropin(module, baseline, path, dropin, targets[dropin], base_recs, state,
                                      first, repaired, written, left))
    if module.check_mode or len(results) > 1:
        # judged again on what is there now (in check mode, on the candidate files)
        records, drift = _effective_after_repair(module, ctx, baseline, path, main_data, protect, base_recs, state)
    left_keys = set(x['key'] for x in left)
    for d in drift:
        if d['key'] not in left_keys:
            left.append(dict(d, why='%s; the repair did not change that' % d['why']))
    out = dict(first)
    out.update(changed=any(r.get('changed') for r in results), repaired=repaired, left=left, effective=records,
               effective_drift=drift, written=written)
    for k in ('repaired_in_dropin', 'left_in_dropin', 'load_tested'):
        out.pop(k, None)
    out['load_test'] = [r['load_tested'] for r in results if r.get('load_tested')]
    for checked in out['load_test']:
        _warn_unjudged(module, path, checked)
    diff = _diffs(results)
    if diff is not None:
        out['diff'] = diff
    for x in left:
        module.warn('repair left %s (%s): %s' % (x['key'], x.get('file') or path, x['why']))
    raise Done(out)


def _repair_source(store, baseline, path, params):
    """(the baseline's config as a document, the protected keys), refused before anything is read."""
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
    protect = protected_keys(params)
    for key in protect:
        resolve_protect(base_doc.layout, key)
    return base_doc, protect


def _repair_dropin(module, baseline, path, dropin, drift, base_recs, state, first, repaired, written, left):
    """Repair the keys a drop-in decides, in its own transaction; its result (refused: Done, failed)."""
    second, failed = _transaction(module, _dropin_edit(module, baseline, path, drift, base_recs, state), dropin)
    if failed:
        second['msg'] = ('%s was repaired as far as it goes (%s); the repair of %s, which decides %s, was '
                         'refused: %s' % (path, ', '.join(r['key'] for r in repaired) or 'nothing to do there',
                                          dropin, ', '.join(d['key'] for d in drift), second.get('msg')))
        second.update(restored=first.get('restored', []), restored_keys=first.get('restored_keys', []),
                      repaired=repaired, written=written)
        raise Done(second, failed=True)
    if second.get('changed'):
        written.append(dropin)
    repaired.extend(second.get('repaired_in_dropin', []))
    left.extend(second.get('left_in_dropin', []))
    if second.get('repaired_in_dropin'):
        module.warn('%s: the repair was written to %s, which decides %s; the program that writes that drop-in '
                    '(e.g. the NVIDIA toolkit with --set-as-default) may write it again: configure it not to, or '
                    'run the repair again after it' % (path, dropin, ', '.join(
                        d['key'] for d in second['repaired_in_dropin'])))
    return second


def _effective_after_repair(module, ctx, baseline, path, main_data, protect, base_recs, state):
    """(records, drift) of what containerd runs after the repair (in check mode: of the candidate files)."""
    params = module.params
    if module.check_mode:
        view_after = load_effective(path, main_data, ctx.containerd_version, overrides=state.get('dropin_data'))
        records = effective_records(view_after, protect)
        same = _baseline_containerd(baseline) == ctx.containerd_version
        return records, effective_drift(base_recs, records, same, view_after, ver=ctx.containerd_version)
    now = ConfigDocument(path, read_bytes(path).decode('utf-8')).data
    judged = judge(ctx, path, now, params.get('validate'), None) if params.get('validate') != 'none' else None
    records, drift, _v = effective_now(module, ctx, baseline, path, now, protect, judged)
    return records, drift


STATES = dict(snapshot=do_snapshot, check=do_check, restore=do_restore, repair=do_repair)

# containerd_baseline's options a snapshot reads besides name, store, include_imports and protect, as its
# argument spec gives them; containerd_config's baseline option takes its snapshot with these defaults
SNAPSHOT_OPTIONS = dict(overwrite=dict(type='bool', default=False), keep=dict(type='int', default=3),
                        allow_broken=dict(type='bool', default=False), load_test=dict(type='bool', default=True))


def run_state(module, state, store_root, name, path, load_test=None, ctx=None):
    """One state of containerd_baseline on the baseline store_root/name, without exiting: (result, failed).

    The module exits with exactly these (main below); containerd_readiness's
    baseline_drift check calls it for state check in its own run, with
    load_test False (state check only: None keeps the module's option) and
    its own Context as ctx (state check only: the commands it ran already,
    containerd's --version, are not run again).
    """
    store = None
    try:
        store = Store(store_root, name)
        if state == 'absent':
            if not store.exists():
                return dict(changed=False, baseline=store.folder, removed=False), False
            store.lock(module.params['lock_timeout'])
            if module.check_mode:
                store.load()
                return dict(changed=True, baseline=store.folder, removed=True), False
            removed = store.remove()
            return dict(changed=removed, baseline=store.folder, removed=removed), False
        create = state == 'snapshot' and not module.check_mode
        if store.lock(module.params['lock_timeout'], create=create) is None:
            if state == 'snapshot':
                # check mode and no store yet: a snapshot would be taken
                return dict(changed=True, baseline=store.folder, snapshot=None, files=[]), False
            raise ConfigError('there is no baseline %r in %s (the folder does not exist). Fix: take one first '
                              'with state: snapshot.' % (store.name, store.root), key='name')
        if state == 'check':
            return json_safe(do_check(module, store, path, load_test=load_test, ctx=ctx)), False
        return json_safe(STATES[state](module, store, path)), False
    except Done as done:
        return json_safe(done.result), done.failed
    except ConfigError as exc:
        return dict(msg=str(exc), **exc.given_details()), True
    except Exception as exc:  # a clear failure, never a traceback on stdout
        return dict(msg='containerd_baseline failed on %s: %s' % (path, exc), exception=traceback.format_exc()), True
    finally:
        if store is not None:
            store.unlock()


def main(module):
    require_tomlkit(module)
    params = module.params
    if params['keep'] < 0:
        module.fail_json(msg='keep must be 0 or more, got %d' % params['keep'])
    path = os.path.abspath(params['path'])
    result, failed = run_state(module, params['state'], params['store'], params['name'], path)
    if failed:
        module.fail_json(**result)
    module.exit_json(**result)
