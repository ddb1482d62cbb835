# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read-only facts about a node's containerd config (containerd_info).

Everything here is read through the engine's own code, never a second copy:
the binary and its version through ``_engine.Context``, the import tree and
the merged view through ``_effective.load_effective`` (``_validate.load_tree``),
the ledgers through ``_ledger.Ledger``, and drift from a baseline through the
code of ``containerd_baseline state=check``.

Nothing is written and no lock is taken: every nodeguard write (config and
ledger) is an atomic rename, so each file read is whole; the ledger is
written before its config with the state before, and ``Ledger.recover``
(applied in memory only, never saved) gives the records that describe the
config bytes actually read, also in the middle of another task's write.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import read_bytes, sha256_bytes, sha256_file
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.drift import has_drift, same_tree
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.effective import (
    effective_records,
    merged_path,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    ConfigError,
    TomlParseError,
    bom_refused_message,
    detect_version,
    parse_error_message,
    parse_toml,
    split_bom,
    version_text,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import iter_leaves, load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    MAX_CONFIG_BYTES,
    Context,
    tree_records,
    unique_in_order,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import entry_key, entry_missing
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import (
    Ledger,
    LedgerError,
    file_identity,
    ledger_key,
    ledger_path_for,
    owned_resources,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import dotted_path, get_in, render_key
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    check_tree,
    expand_import,
    file_version,
    import_pattern,
    is_glob,
    refuse_generated,
    refuse_unreadable_version,
    self_import_warning,
    self_imports,
    version_word,
)

BUILTIN_RUNC = {'runtime_type': 'io.containerd.runc.v2'}
# handler settings lifted out of a runtime table (null when the table does not set them)
RUNTIME_KEYS = ('runtime_type', 'runtime_path', 'privileged_without_host_devices', 'snapshotter', 'pod_annotations')
OPTION_KEYS = ('BinaryName', 'SystemdCgroup', 'ConfigPath')
# systemd's catalog id of "Started <unit>" (SD_MESSAGE_UNIT_STARTED): the same
# in every language and for every unit description
UNIT_STARTED = '39f53479d3a045ac8e11786248231fbf'


class InfoError(Exception):
    """A file that cannot be read at all: the module fails with this message (and the facts gathered so far)."""

    def __init__(self, msg, **facts):
        super(InfoError, self).__init__(msg)
        self.facts = facts


class RecordingContext(Context):
    """The engine's Context; each command runs once and its output is kept (the --version text)."""

    def __init__(self, module, path):
        super(RecordingContext, self).__init__(module, path)
        self.outputs = {}

    def run_command(self, cmd):
        key = tuple(cmd)
        if key not in self.outputs:
            self.outputs[key] = super(RecordingContext, self).run_command(cmd)
        return self.outputs[key]


def _plain_msg(text):
    return str(text).replace(' Nothing was written.', '').replace('Nothing was written. ', '')


# ------------------------------------------------------------------ containerd
def containerd_facts(ctx):
    """bin, version (the full text of --version), major_minor, known_from."""
    binary = ctx.containerd_bin
    ver = ctx.containerd_version  # the engine's one lookup (runs --version once)
    version = known = None
    if binary and ver:
        rc, out, _err = ctx.run_command([binary, '--version'])  # recorded: not run again
        word = version_word(out) if rc == 0 else None
        want = '%d.%d' % tuple(ver)
        if word and word.startswith(want) and not word[len(want):len(want) + 1].isdigit():
            version, known = word, 'binary'
    if version is None and ver:
        # no binary (or no version in its output): the containerd_version option stands in
        version, known = ctx.module.params.get('containerd_version') or '%d.%d' % tuple(ver), 'containerd_version'
    return dict(bin=binary, version=version, major_minor='%d.%d' % tuple(ver) if ver else None, known_from=known)


# ------------------------------------------------------------------ the main file
def read_main(path, ver):
    """(config facts, parsed data or None, problems) of the main file; InfoError when it cannot be read."""
    facts = dict(path=path, exists=False, version=None, sha256=None, generated_by=None)
    problems = []
    raw = read_bytes(path)
    if raw is None:
        problems.append('%s does not exist: containerd runs on its built-in defaults (if it starts with this '
                        'path at all).' % path)
        return facts, None, problems
    facts.update(exists=True, sha256=sha256_bytes(raw), size=len(raw))
    if len(raw) > MAX_CONFIG_BYTES:
        raise InfoError('%s is %.1f MB; nodeguard reads configs of up to %d MB (containerd\'s default config is '
                        'about 10 KB). Fix: check what filled the file.'
                        % (path, len(raw) / 1048576.0, MAX_CONFIG_BYTES // 1048576), config=facts)
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise InfoError('%s is not UTF-8 text (byte %d): it is not a containerd config. Fix: put back a known-good '
                        'copy with nodeguard.containerd.containerd_baseline (state: restore).' % (path, exc.start),
                        config=facts)
    text, bom = split_bom(text)
    try:
        data = parse_toml(text)
    except TomlParseError as exc:
        raise InfoError(parse_error_message(path, exc) + '. Fix the file by hand, or put back a known-good copy '
                        'with nodeguard.containerd.containerd_baseline (state: restore).', config=facts,
                        line=getattr(exc, 'line', None), col=getattr(exc, 'col', None))
    if not text.strip():
        problems.append('%s is empty: containerd runs on its built-in defaults only.' % path)
    version = data.get('version', 1)
    facts['version'] = version if isinstance(version, int) and not isinstance(version, bool) else None
    if text.strip():
        try:
            detect_version(path, data)
        except ConfigError as exc:
            problems.append(_plain_msg(exc))
    try:
        refuse_unreadable_version(path, file_version(data), ver)
    except ConfigError as exc:
        problems.append(_plain_msg(exc))
    if bom:
        facts['byte_order_mark'] = True
        refused = bom_refused_message(path, ver, file_version(data))
        if refused:
            problems.append(refused)
    try:
        refuse_generated(path, text)
    except ConfigError as exc:
        facts['generated_by'] = exc.details.get('generated_by')
    return facts, data, problems


# ------------------------------------------------------------------ imports
def imports_facts(view, ver):
    """The import tree of the merged view: every entry of every loaded file, with what it loads."""
    loaded = [p for p, _d in view.files]
    problems_of = {}
    for prob in view.problems:
        problems_of.setdefault((prob.importing_file, prob.entry), []).append(prob.message)
    entries, missing, duplicates = [], [], []
    for path, data in view.files:
        imports = data.get('imports')
        if not isinstance(imports, list):
            continue
        seen = set()
        for entry in imports:
            if not isinstance(entry, str):
                continue
            key = entry_key(entry, path, ver)
            glob = is_glob(entry)
            files = [f for f in expand_import(entry, path, ver) if glob or os.path.exists(f)]
            item = dict(entry=entry, imported_by=path, resolved=import_pattern(entry, path, ver), glob=glob,
                        files=files, missing=entry_missing(entry, path), duplicate=key in seen,
                        problems=problems_of.get((path, entry), []))
            seen.add(key)
            entries.append(item)
            if item['missing']:
                missing.append(dict(entry=entry, path=item['resolved'], imported_by=path))
            if item['duplicate']:
                duplicates.append(dict(entry=entry, resolved=key, imported_by=path))
    problems = unique_in_order(p.message for p in view.problems)
    for ignored, reason in view.ignored:
        problems.append('containerd %s ignores %s: %s' % (version_text(ver, '?'), ignored, reason))
    mirrors = [p for p, d in view.files if self_imports(p, d, ver)]
    return dict(entries=entries, files=loaded, missing=missing, duplicates=duplicates, problems=problems,
                self_imports=mirrors, warnings=[self_import_warning(p) for p in mirrors])


def unparseable_import(view):
    """The first imported file that is not valid TOML (its load_tree problem), or None."""
    for prob in view.problems:
        if ' is not valid TOML' in prob.message:
            return prob.message
    return None


# ------------------------------------------------------------------ runtimes
def _runtime_key(name):
    return 'cri.runtimes.' + render_key(str(name))


def _builtin_runc(view, merged_runtimes):
    """containerd's own runc: 2.x merges the files over its defaults; 1.x drops it once a runtimes table exists."""
    if isinstance(merged_runtimes, dict) and 'runc' in merged_runtimes:
        return False
    return not view.replace or not isinstance(merged_runtimes, dict)


def runtime_facts(view, dump=None):
    """(runtimes, default_runtime, records) from the merged view; records keep what config dump shows."""
    rt_path = merged_path(view, 'cri.runtimes')
    merged = view.value(rt_path)
    names = sorted(merged) if isinstance(merged, dict) else []
    keys = ['cri.runtimes', 'cri.default_runtime_name'] + [_runtime_key(n) for n in names]
    records = dict((r['key'], r) for r in effective_records(view, keys, dump))
    runtimes = {}
    for name in names:
        rec = records[_runtime_key(name)]
        table = rec['value'] if isinstance(rec['value'], dict) else {}
        options = table.get('options') if isinstance(table.get('options'), dict) else {}
        entry = dict(file=rec.get('file'), files=rec.get('files') or ([rec['file']] if rec.get('file') else []),
                     builtin=False, options=options, table=table)
        for k in RUNTIME_KEYS:
            entry[k] = table.get(k)
        for k in OPTION_KEYS:
            entry[k] = options.get(k)
        runtimes[name] = entry
    if _builtin_runc(view, merged):
        entry = dict(file=None, files=[], builtin=True, options={}, table=dict(BUILTIN_RUNC))
        for k in RUNTIME_KEYS:
            entry[k] = BUILTIN_RUNC.get(k)
        for k in OPTION_KEYS:
            entry[k] = None
        runtimes['runc'] = entry
    drec = records['cri.default_runtime_name']
    default = dict(name=drec['value'], file=drec.get('file'), default=bool(drec.get('default')),
                   exists=drec['value'] in runtimes)
    return runtimes, default, records


def cri_plugins(view):
    ids = [CRI_V2] if view.replace else [CRI_V3_RUNTIME, CRI_V3_IMAGES, CRI_V2]
    return ids, dict((pid, view.plugin_owner(pid)) for pid in ids)


# ------------------------------------------------------------------ config dump
def run_dump(ctx, path):
    """(parsed config dump or None, why there is none or None)."""
    binary = ctx.containerd_bin
    if not binary:
        return None, 'no containerd binary in PATH or the usual folders (set containerd_bin): not confirmed'
    rc, out, err = ctx.run_command([binary, '--config', path, 'config', 'dump'])
    if rc != 0:
        tail = ' | '.join([line for line in (err or out or '').strip().splitlines() if line.strip()][-3:])
        return None, 'containerd --config %s config dump failed (rc=%s): %s' % (path, rc, tail or 'no output')
    try:
        return parse_toml(out), None
    except TomlParseError as exc:
        return None, 'the config dump could not be read (%s)' % exc


def dump_disagreements(records, runtimes, default):
    """Where the merged view and the node's config dump differ (runtimes, default runtime, loaded files)."""
    out = []
    rt_rec = records['cri.runtimes']
    dumped = rt_rec.get('dumped')
    dumped = dumped if isinstance(dumped, dict) else {}
    path = rt_rec['path']
    for name in sorted(set(runtimes) | set(dumped)):
        key = '%s.%s' % (path, render_key(str(name)))
        if name not in dumped:
            out.append(dict(key=key, model='a runtime table', dump=None,
                            why='nodeguard\'s merged view has runtime %r; containerd config dump does not' % name))
            continue
        if name not in runtimes:
            out.append(dict(key=key, model=None, dump='a runtime table',
                            why='containerd config dump has runtime %r; nodeguard\'s merged view does not' % name))
            continue
        for leaf, value in iter_leaves(runtimes[name]['table']):
            have = get_in(dumped[name], leaf)
            if value == {} and (have is None or isinstance(have, dict)):
                continue  # an empty table: the dump may leave it out
            if not same_tree(value, have):
                why = ('containerd config dump does not show it: the key is unknown to this containerd and dropped'
                       if have is None else 'containerd config dump runs %r, nodeguard\'s merged view says %r'
                       % (have, value))
                out.append(dict(key='%s.%s' % (key, dotted_path(leaf)), model=value, dump=have, why=why))
    d_rec = records['cri.default_runtime_name']
    if 'dumped' in d_rec and d_rec.get('dumped') != default['name']:
        out.append(dict(key=d_rec['path'], model=default['name'], dump=d_rec.get('dumped'),
                        why='containerd config dump runs default runtime %r, nodeguard\'s merged view says %r'
                        % (d_rec.get('dumped'), default['name'])))
    return out


# ------------------------------------------------------------------ ledgers
def ledger_facts(state_dir, files):
    """One entry per file of the tree that has a ledger: its records by owner, as the engine reads them."""
    out, problems = [], []
    for path in files:
        key_path = ledger_key(path)
        lpath = ledger_path_for(state_dir, key_path)
        if not os.path.isfile(lpath):
            continue
        item = dict(file=path, ledger_path=lpath, records_by_owner={}, owners=[], config_sha256=None,
                    in_sync=None, note=None, error=None)
        try:
            ledger = Ledger.load(state_dir, key_path)
        except LedgerError as exc:
            item['error'] = _plain_msg(exc)
            problems.append(item['error'])
            out.append(item)
            continue
        raw = read_bytes(path)
        sha = sha256_bytes(raw or b'')
        item['config_sha256'] = ledger.config_sha256
        item['in_sync'] = ledger.config_sha256 == sha
        # in memory only (never saved): the records that describe the bytes read now, by the engine's rule
        # (the file's identity too), so these and owned (tree_records) tell one story
        item['note'] = ledger.recover(sha, file_identity(path))
        by_owner = {}
        for rec in ledger.records:
            rec = dict(rec)
            if isinstance(rec.get('path'), list):
                rec['key'] = dotted_path(rec['path'])
            if isinstance(rec.get('replaced'), dict):
                # a drop-in taken over: what it replaced, without its bytes (they may hold secrets)
                rec['replaced'] = dict((k, v) for k, v in rec['replaced'].items() if k != 'base64')
            by_owner.setdefault(rec.get('owner'), []).append(rec)
        item['records_by_owner'] = by_owner
        item['owners'] = sorted(str(o) for o in by_owner)
        out.append(item)
    return out, problems


# ------------------------------------------------------------------ one owner, named files
def owned_facts(state_dir, path, owner, files, ver):
    """What the ledgers say owner added: the records of config.toml's ledger and of the ledgers of the files it
    loads (edit_in may have written a change to a drop-in) by kind, as containerd_config's release_all reads
    them, and which of files it wrote or created."""
    out = dict(owner=owner, runtimes=[], tables=[], defaults=[], settings=[], imports=[], files=[], error=None)
    try:
        records = tree_records(state_dir, path, ver)
    except LedgerError as exc:
        out['error'] = _plain_msg(exc)
        records = []
    owned = owned_resources(records, owner)
    for key in ('runtimes', 'tables', 'defaults', 'settings', 'imports'):
        out[key] = owned[key]
    for name, item in sorted(files.items()):
        if owner in item['owners']:
            out['files'].append(name)
    return out


def file_facts(state_dir, paths, view, ver):
    """Each named path: exists, type, executable, sha256, imported (a plain entry of the tree names it), loaded,
    owners."""
    named = {}
    for path, data in view.files:
        entries = data.get('imports')
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, str) and not is_glob(entry):
                named.setdefault(import_pattern(entry, path, ver), []).append(path)
    loaded = set(p for p, _d in view.files)
    out, problems = {}, []
    for given in paths:
        path = os.path.abspath(given)
        kind = None
        if os.path.islink(path):
            kind = 'link'
        elif os.path.isdir(path):
            kind = 'directory'
        elif os.path.isfile(path):
            kind = 'file'
        elif os.path.lexists(path):
            kind = 'other'
        owners = []
        try:
            # records of containerd_dropin: the owner that wrote the file or created the folder
            owners = sorted(set(str(r.get('owner')) for r in Ledger.load(state_dir, ledger_key(path)).records
                                if r.get('kind') in ('file', 'folder')))
        except LedgerError as exc:
            problems.append(_plain_msg(exc))
        out[given] = dict(path=path, exists=kind is not None, type=kind,
                          dangling=kind == 'link' and not os.path.exists(path),
                          # as the shell's [ -f ] && [ -x ]: links followed (a runtime's BinaryName)
                          executable=os.path.isfile(path) and os.access(path, os.X_OK),
                          sha256=sha256_file(path) if kind == 'file' else None,
                          imported=path in named, imported_by=unique_in_order(named.get(path, [])), loaded=path in loaded,
                          owners=owners)
    return out, problems


# ------------------------------------------------------------------ settings
def setting_facts(view, keys):
    """Each key (logical, as images.disable_snapshot_annotations, or a dotted TOML path) with its value as
    containerd runs the tree: the merged view, null when no file sets it."""
    return dict((rec['key'], rec['value']) for rec in effective_records(view, keys))


# ------------------------------------------------------------------ drift
def drift_facts(module, ctx, path, data, dump):
    """Drift of the node from a baseline, by containerd_baseline state=check's own code (read-only, no lock)."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import Store
    from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.states import (
        Comparison,
        effective_now,
        in_effect_note,
        protected_keys,
        require_baseline,
    )
    params = module.params
    store = Store(params['baseline_store'], params['baseline'])
    baseline = store.load()
    require_baseline(store, baseline, path)
    protect = protected_keys(dict(protect=params.get('protect')))
    cmp = Comparison(baseline, path, protect)
    out = dict(baseline=store.folder, snapshot=baseline.folder, created=baseline.manifest.get('created'),
               protect=protect, tree=cmp.drift, protected_drift=cmp.protected_drift, effective=None,
               effective_drift=None, drifted=bool(cmp.drift and has_drift(cmp.drift)), error=cmp.error)
    if cmp.error or data is None:
        out['drifted'] = True
        return out

    class _Dumped(object):
        pass
    judged = _Dumped()
    judged.dump = dump
    records, edrift, _view = effective_now(module, ctx, baseline, path, data, protect, judged)
    in_effect_note(cmp.protected_drift, records, path)
    out.update(effective=records, effective_drift=edrift,
               drifted=bool(has_drift(cmp.drift) or edrift or cmp.protected_drift))
    return out


# ------------------------------------------------------------------ commands on PATH
def command_facts(names, search_path):
    """Each name as bash's ``command -v`` finds it (the path, or None): a name with a "/" is that file if executable.

    Read-only, so a role can learn where e.g. kubectl is within this one call.
    """
    out = {}
    for name in names:
        if '/' in name:
            found = name if os.path.isfile(name) and os.access(name, os.X_OK) else None
        else:
            found = next((os.path.join(d or '.', name) for d in (search_path or '').split(os.pathsep)
                          if os.path.isfile(os.path.join(d or '.', name))
                          and os.access(os.path.join(d or '.', name), os.X_OK)), None)
        out[name] = found
    return out


# ------------------------------------------------------------------ starts of the service
def service_start_facts(module, unit, since):
    """How often systemd started ``unit`` since ``since`` (epoch seconds), from the unit's journal.

    The count is of systemd's own "Started" entries (by their catalog id),
    so a restart and a start after a crash both count, and containerd's own
    log lines never do.  count is None when the journal cannot be read.
    """
    out = dict(unit=unit, since=since, count=None, error=None)
    journalctl = module.get_bin_path('journalctl')
    if journalctl is None:
        out['error'] = 'no journalctl on this node (a node without systemd\'s journal)'
        return out
    rc, stdout, stderr = module.run_command([journalctl, '-u', unit, '-o', 'json', '--no-pager',
                                             '--since', '@%.6f' % since])
    if rc != 0:
        out['error'] = '%s -u %s failed (rc=%s): %s' % (journalctl, unit, rc, (stderr or stdout).strip()[-400:])
        return out
    out['count'] = sum(1 for entry in journal_entries(stdout) if entry.get('MESSAGE_ID') == UNIT_STARTED)
    return out


def journal_entries(text):
    """The entries of ``journalctl -o json`` output: one JSON object a line, any other line left out."""
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


# ------------------------------------------------------------------ all of it
def gather(module):
    """The facts containerd_info returns (a dict), or InfoError."""
    params = module.params
    path = os.path.abspath(params['path'])
    ctx = RecordingContext(module, path)
    containerd = containerd_facts(ctx)
    ver = ctx.containerd_version
    config, data, problems = read_main(path, ver)
    view = load_effective(path, data if data is not None else {}, ver)
    imports = imports_facts(view, ver)
    if data is None:
        imports['files'] = []
    facts = dict(changed=False, containerd=containerd, config=config, imports=imports, node_name=os.uname()[1],
                 commands=command_facts(params.get('commands') or [], os.environ.get('PATH')))
    bad = unparseable_import(view)
    if bad:
        raise InfoError(bad + '. Fix the file by hand, or put back a known-good copy with '
                        'nodeguard.containerd.containerd_baseline (state: restore).', **facts)
    problems.extend(imports['problems'])
    if data is not None:
        problems.extend(_plain_msg(e) for e in check_tree(path, data, ver))
    dump, dump_error, dump_ran = None, None, False
    if not params.get('dump'):
        dump_error = 'not run (dump: false)'
    elif data is None:
        dump_error = '%s does not exist' % path
    else:
        dump, dump_error = run_dump(ctx, path)
        dump_ran = ctx.containerd_bin is not None
    runtimes, default, records = runtime_facts(view, dump)
    ids, owners = cri_plugins(view)
    ledgers, ledger_problems = ledger_facts(params['state_dir'], imports['files'] if data is not None else [])
    problems.extend(ledger_problems)
    facts.update(runtimes=runtimes, default_runtime=default, cri_plugin_ids=ids, cri_plugin_files=owners,
                 ledgers=ledgers, dump_confirmed=None, dump_disagreements=[], dump_error=dump_error)
    if dump is not None:
        disagree = dump_disagreements(records, runtimes, default)
        facts.update(dump_confirmed=not disagree, dump_disagreements=disagree)
    elif dump_ran:
        facts['dump_confirmed'] = False  # config dump failed: containerd does not load this tree
    files, file_problems = file_facts(params['state_dir'], params.get('files') or [], view, ver)
    problems.extend(file_problems)
    facts['files'] = files
    if params.get('settings'):
        facts['settings'] = setting_facts(view, params['settings'])
    if params.get('owner'):
        facts['owned'] = owned_facts(params['state_dir'], path, params['owner'], files, ver)
        if facts['owned']['error'] and facts['owned']['error'] not in problems:
            problems.append(facts['owned']['error'])
    if params.get('baseline'):
        facts['drift'] = drift_facts(module, ctx, path, data, dump)
    if params.get('starts_since') is not None:
        facts['service_starts'] = service_start_facts(module, params['service'], params['starts_since'])
    facts['problems'] = unique_in_order(problems)
    return facts
