# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd_config: one owner's drop-ins, imports, settings and runtimes in one module call.

Install: each drop-in is written first (validated, atomic; a file nothing
imports yet changes nothing containerd runs), then config.toml takes the
imports, settings and runtimes in one transaction of the engine (one
candidate, one validation, one write). Uninstall: the settings, runtimes
and imports in one transaction, then the drop-ins nothing imports any more.
Every state in between is one containerd loads, as with one call per kind.

The edits are those of containerd_imports, containerd_setting and
containerd_runtime (same text, same ledger records), so either form undoes
the other.

exclusive: after the install, what the ledgers record for the owner and the
call no longer names is undone in a transaction of its own (OwnedRelease),
run only when there is something to undo; a runtime it would release that
another change keeps the CRI default is refused before anything is written
(refuse_default_release). check_binaries refuses a runtime binary that is
not an executable before anything is written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from contextlib import contextmanager

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import read_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigDocument,
    ConfigError,
    Layout,
    TomlParseError,
    detect_version,
    parse_toml,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.dropin import remove_all, write
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    transaction_result,
    tree_ledgers,
    tree_records,
    unique_in_order,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import (
    ImportsArray,
    apply_imports,
    entry_key,
    refuse_plugin_override,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import owned_resources
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.process import which
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import TomlLayoutError, get_in, parse_dotted_key
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import (
    RuntimeBatch,
    batch_entries,
    default_removal_refused,
    default_setter,
    release_default,
    resource_of,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.setting import SettingBatch, setting_entries

IMPORT_RESULT_KEYS = ('added', 'removed', 'pruned', 'kept', 'duplicates_removed')
# the lists of ``released`` (release_all, exclusive)
RELEASED_KINDS = ('runtimes', 'tables', 'settings', 'imports')

# The order of the kinds in one call. Undo puts the settings back before the
# runtimes go: a setting may name one of them (cri.default_runtime_name), and
# a runtime that is still the default is not removed.
KIND_ORDER = {'present': ('imports', 'settings', 'runtimes'),
              'absent': ('settings', 'runtimes', 'imports')}


class EditSet(object):
    """Imports, settings and runtimes of one owner as one edit of config.toml.

    Install applies imports, then settings, then runtimes; uninstall puts
    back the settings, then removes the runtimes, then the imports
    (KIND_ORDER), and gives back the original bytes. When
    they would not all go to one file (a key decided by a drop-in), the
    engine runs ``parts`` one by one (SplitEdit): the imports, each setting,
    each runtime, as separate calls would.
    """

    def __init__(self, imports, settings, runtimes, owner, state, imports_params=None, piece=False):
        self.imports = imports
        self.settings = settings
        self.runtimes = runtimes
        self.owner = owner
        self.state = state
        self.imports_params = dict(imports_params or {}, imports=imports, owner=owner, state=state)
        self.parts = None
        if piece:
            return
        by_kind = dict(imports=[EditSet(imports, [], [], owner, state, imports_params, piece=True)] if imports else [],
                       settings=[EditSet([], [e], [], owner, state, piece=True) for e in settings],
                       runtimes=[EditSet([], [], [e], owner, state, piece=True) for e in runtimes])
        pieces = [piece for kind in KIND_ORDER[state] for piece in by_kind[kind]]
        if len(pieces) > 1:
            self.parts = pieces

    def __call__(self, doc, ledger, ctx):
        out = {}
        for kind in KIND_ORDER[self.state]:
            if getattr(self, kind):
                out.update(getattr(self, '_' + kind)(doc, ledger, ctx))
        return out

    def _imports(self, doc, ledger, ctx):
        done = apply_imports(doc, ledger, ctx, self.imports_params)
        return dict(imports=dict((k, done[k]) for k in ('imports', 'missing') + IMPORT_RESULT_KEYS))

    def _settings(self, doc, ledger, ctx):
        return dict(settings=SettingBatch(self.settings, self.owner)(doc, ledger, ctx)['settings'])

    def _runtimes(self, doc, ledger, ctx):
        done = RuntimeBatch(self.runtimes, self.owner)(doc, ledger, ctx)
        return dict(runtimes=done['runtimes'], default_runtime_name=done['default_runtime_name'])

    def combine(self, result, steps):
        """One result from the steps (an uninstall's files, or the parts): each kind once."""
        seen = [s['imports'] for s in steps if s.get('imports')]
        if self.imports and seen:
            # the last step that edited imports saw the final list (config.toml comes after the drop-ins)
            merged = dict(seen[-1])
            for key in IMPORT_RESULT_KEYS:
                merged[key] = unique_in_order(e for s in seen for e in s.get(key) or [])
            result['imports'] = merged
        if self.settings:
            result['settings'] = SettingBatch(self.settings, self.owner).combine({}, steps)['settings']
        if self.runtimes:
            scratch = RuntimeBatch(self.runtimes, self.owner).combine({}, steps)
            result['runtimes'] = scratch['runtimes']
            defaults = [s['default_runtime_name'] for s in steps if 'default_runtime_name' in s]
            if defaults:
                result['default_runtime_name'] = defaults[-1]
        return result


def owned_by(ctx, params):
    """What the ledgers of config.toml and of the files it loads record for the call's owner (owned_resources).

    edit_in may have written a change to a drop-in, so every file of the tree counts.
    """
    return owned_resources(tree_records(params['state_dir'], params['path'], ctx.containerd_version),
                           params['owner'])


def defaults_first(owned, named=()):
    """The owner's runtimes not in named, in record order, those it made the CRI default first: their prior
    default is back before the other tables go (a runtime that is still the default is not removed)."""
    # owned_resources lists every default among the runtimes too
    order = owned['defaults'] + [n for n in owned['runtimes'] if n not in owned['defaults']]
    return [n for n in order if n not in named]


def with_owned(ctx, params):
    """release_all: params with every runtime, setting and import the ledgers record for the owner added to
    those named, and what was found (the module's ``released``).

    The runtime the owner made the CRI default comes first (defaults_first).
    Entries named in the call stay as given.
    """
    if params['state'] != 'absent':
        raise ConfigError('release_all: true undoes what owner %s recorded, so it needs state: absent. Nothing '
                          'was written. Fix: set state: absent, or leave release_all out.' % params['owner'],
                          key='release_all')
    owned = owned_by(ctx, params)
    runtimes = list(params['runtimes'] or [])
    runtimes.extend(dict(name=n, force=False, released_by='release_all')
                    for n in defaults_first(owned, set(r.get('name') for r in runtimes)))
    settings = list(params['settings'] or [])
    keys = set(e.get('key') for e in settings)
    settings.extend(dict(key=k, raw=True) for k in owned['settings'] if k not in keys)
    imports = list(params['imports'] or [])
    listed = set(entry_key(i, params['path'], ctx.containerd_version) for i in imports)
    imports.extend(i for i in owned['imports'] if entry_key(i, params['path'], ctx.containerd_version) not in listed)
    released = dict((k, owned[k]) for k in RELEASED_KINDS)
    return dict(params, runtimes=runtimes, settings=settings, imports=imports), released


# ------------------------------------------------------------------ exclusive
def refuse_exclusive_uninstall(params):
    if params.get('exclusive') and params['state'] != 'present':
        raise ConfigError('exclusive: true releases what owner %s recorded and an install no longer names, so it '
                          'needs state: present. Nothing was written. Fix: leave exclusive out (release_all: true with '
                          'state: absent undoes everything the owner recorded).' % params['owner'], key='exclusive')


def setting_paths(entry):
    """The key paths a settings entry names, as ledgers record them: a raw key's own path, a logical key's path
    in each config version (the record is of the file the key was written to)."""
    if entry.get('raw'):
        path = ledger_key_path(entry['key'])
        return set([path]) if path else set()
    return set(layout.logical[entry['key']] for layout in (Layout(2), Layout(3)) if entry['key'] in layout.logical)


def ledger_key_path(dotted_key):
    """A dotted key (a settings record's, or a raw entry's) as a tuple of its parts; None when it is not one."""
    try:
        return tuple(parse_dotted_key(dotted_key))
    except TomlLayoutError:
        return None


def exclusive_plan(ctx, params):
    """exclusive: what the ledgers record for the owner and the call does not name, read before anything is
    written: ``released`` (release_all's shape), the runtimes to remove (defaults first) and ``defaults``,
    the runtimes the call names without default: true whose earlier change of the default is undone."""
    owned = owned_by(ctx, params)
    given = params['runtimes'] or []
    named = set(r['name'] for r in given)
    defaults = [dict(name=r['name'], default=r.get('default')) for r in given
                if r.get('default') is not True and r['name'] in owned['defaults']]
    undone = set(d['name'] for d in defaults)
    wanted = set(path for entry in params['settings'] or [] for path in setting_paths(entry))
    listed = set(entry_key(i, params['path'], ctx.containerd_version) for i in params['imports'] or [])
    released = dict(runtimes=[n for n in owned['runtimes'] if n not in named or n in undone],
                    tables=[n for n in owned['tables'] if n not in named],
                    settings=[k for k in owned['settings'] if ledger_key_path(k) not in wanted],
                    imports=[i for i in owned['imports'] if entry_key(i, params['path'], ctx.containerd_version) not in listed])
    return dict(released=released, runtimes=defaults_first(owned, named), defaults=defaults)


def sets_default(params):
    """Whether the call's install may change a default_runtime_name: a runtime it makes the default, or a
    setting of that key (or of a table above it)."""
    if any(r.get('default') is True for r in params['runtimes'] or []):
        return True
    defaults = [Layout(version).default_runtime_name for version in (2, 3)]
    return any(d[:len(p)] == p for entry in params['settings'] or [] for p in setting_paths(entry) for d in defaults)


def tree_layouts(ctx, params):
    """(file, data, its layout, its ledger) of each file of the tree as read now; a versionless drop-in has
    config.toml's layout, as the engine reads it. Files nodeguard cannot read are left out."""
    files = tree_ledgers(params['state_dir'], params['path'], ctx.containerd_version)
    if files[0][1] is None:
        return []
    out = []
    main_version = None
    for file_path, data, ledger in files:
        try:
            version = detect_version(file_path, data, default_version=main_version)
        except ConfigError:
            continue
        main_version = main_version or version
        out.append((file_path, data, Layout(version), ledger))
    return out


def refuse_default_release(ctx, params, plan):
    """exclusive, before anything is written: a runtime the release would remove while another's change (or a
    hand edit) keeps it the CRI default of its file is refused now, with the release's own refusal.

    The release would refuse it after the install: nothing of the call
    changes that default (sets_default) and the owner has no record of the
    key there that the release could undo first. When it has one, the
    release itself decides.
    """
    owner = params['owner']
    if not plan['runtimes'] or sets_default(params):
        return
    replaced = set(os.path.normpath(d['path']) for d in params['dropins'] or [])  # their content is the call's
    for file_path, data, layout, ledger in tree_layouts(ctx, params):
        default = get_in(data, layout.default_runtime_name)
        for name in plan['runtimes']:
            if file_path in replaced or default != name or owner not in ledger.owners_of_table(layout.runtime(name)):
                continue
            setter = default_setter(ledger, layout.default_runtime_name, owner, resource_of(name))
            if setter not in (None, owner):
                raise default_removal_refused(file_path, dict(name=name, owner=owner, released_by='exclusive'), setter,
                                              layout.default_runtime_name, before_writes=True)


class OwnedRelease(object):
    """exclusive's release as one edit: the default changes of runtimes the call names (without default:
    true) first, then what it does not name, as an uninstall undoes it (``undo``: an EditSet of state absent).

    The engine runs it as an uninstall (drop-ins first, one validated write
    per file); ``parts`` and ``combine`` as EditSet's.
    """

    def __init__(self, defaults, undo, owner, piece=False):
        self.defaults = defaults
        self.undo = undo
        self.owner = owner
        self.parts = None
        if piece:
            return
        pieces = [OwnedRelease(defaults, None, owner, piece=True)] if defaults else []
        pieces += (undo.parts or [undo]) if undo is not None else []
        if len(pieces) > 1:
            self.parts = pieces

    def __call__(self, doc, ledger, ctx):
        undone = []
        for given in self.defaults:
            name, resource = given['name'], resource_of(given['name'])
            if given['default'] is False and doc.default_runtime() == name:
                continue  # the call's own runtime edit (default: false) put it back (check mode: previews it)
            if ledger.select(owner=self.owner, resource=resource, path=doc.layout.default_runtime_name):
                release_default(doc, ledger, ctx, self.owner, resource)
                undone.append(name)
        out = dict(defaults_undone=undone, default_runtime_name=doc.default_runtime())
        here = self._recorded_in(ledger)
        if here is not None:
            out.update(here(doc, ledger, ctx))
        return out

    def _recorded_in(self, ledger):
        """The undo's entries whose records this file's ledger holds, or None.

        The others are another file's of the tree; an uninstall visits every
        file that holds the owner's records, and after a write it looks again
        while the owner has records left (with exclusive, always): an entry
        undone already is then no unrecorded key to warn about.
        """
        undo = self.undo
        if undo is None:
            return None
        held = set(r.get('resource') for r in ledger.select(owner=self.owner) if r.get('kind') != 'released')
        imports = [i for i in undo.imports if 'import:' + i in held]
        settings = [e for e in undo.settings if 'setting:' + e['key'] in held]
        runtimes = [e for e in undo.runtimes if resource_of(e['name']) in held]
        if not (imports or settings or runtimes):
            return None
        return EditSet(imports, settings, runtimes, self.owner, 'absent', undo.imports_params, piece=True)

    def combine(self, result, steps):
        """One result from the steps (the files of the tree, or the parts)."""
        if self.undo is not None:
            result = self.undo.combine(result, steps)
        result['defaults_undone'] = unique_in_order(n for s in steps for n in s.get('defaults_undone') or [])
        return result


def release_unnamed(module, ctx, params, plan):
    """exclusive, after the install: undo what exclusive_plan found, in a transaction of its own (one validated
    write per file, drop-ins first, as an uninstall; its own preview in check mode)."""
    owner = params['owner']
    given = dict(params, state='absent', runtimes=[dict(name=n, force=False, released_by='exclusive')
                                                   for n in plan['runtimes']],
                 settings=[dict(key=k, raw=True) for k in plan['released']['settings']])
    settings, runtimes = entries_of(given)
    imports = plan['released']['imports']
    undo = EditSet(imports, settings, runtimes, owner, 'absent', imports_params_of(params, [])) \
        if imports or settings or runtimes else None
    with params_as(module, state='absent'):
        return transaction_result(module, ctx, OwnedRelease(plan['defaults'], undo, owner),
                                  allow_plugin_override=False, load_test=None)


def join_release(result, done):
    """The release's result joins the install's: the files, effects and final views of both."""
    if not done.get('changed'):
        return
    written = unique_in_order(_files_of(result) + _files_of(done))
    install_changed = result.get('changed')  # the install's own (the release has not joined yet)
    for key in ('file', 'config_version', 'plugin', 'validated', 'backup_file'):
        if key in done and (not install_changed or key not in result):
            result[key] = done[key]
    result['effects'] = list(result.get('effects') or []) + list(done.get('effects') or [])
    if len(written) > 1:
        result['files'] = written
    if 'default_runtime_name' in done:
        result['default_runtime_name'] = done['default_runtime_name']
    if result.get('imports') and done.get('imports'):
        # the release saw the final list
        mine = result['imports']
        mine.update(imports=done['imports']['imports'], missing=done['imports']['missing'],
                    removed=unique_in_order(list(mine.get('removed') or []) + list(done['imports']['removed'])))


def _files_of(step):
    return list(step.get('files') or ([step['file']] if step.get('changed') and step.get('file') else []))


@contextmanager
def params_as(module, **changes):
    """module.params with changes while the block runs (the engine reads the state of the call from them)."""
    saved = module.params
    module.params = dict(saved, **changes)
    try:
        yield module.params
    finally:
        module.params = saved


# ------------------------------------------------------------------ check_binaries
# the PATH systemd gives containerd, where the shim looks up a BinaryName without a folder
SERVICE_PATH = ('/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin')


def binaries_of(runtimes):
    """(key, path) of each binary the runtimes entries name: options.BinaryName, runtime_path."""
    out = []
    for index, entry in enumerate(runtimes or []):
        binary = (entry.get('options') or {}).get('BinaryName')
        if binary not in (None, ''):
            out.append(('runtimes[%d].options.BinaryName' % index, binary))
        if entry.get('runtime_path'):
            out.append(('runtimes[%d].runtime_path' % index, entry['runtime_path']))
    return out


def binary_problem(given):
    """Why given is not an executable regular file (a link is judged by its target), or None."""
    if not isinstance(given, str):
        return 'is not a path (%s)' % type(given).__name__
    if '/' not in given:
        # as Go's exec.LookPath (containerd, the shim): the first executable; else the first file names the problem
        found = which(given, extra=SERVICE_PATH) or which(given, extra=SERVICE_PATH, executable=False)
        if found is None:
            return 'is in none of the folders of PATH (%s)' % ', '.join(SERVICE_PATH)
        given = found
    elif not os.path.isabs(given):
        return 'is not an absolute path'
    link = ' (a link to %s)' % os.path.realpath(given) if os.path.islink(given) else ''
    if not os.path.exists(given):
        return 'does not exist%s' % link
    if not os.path.isfile(given):
        return 'is not a regular file%s' % link
    if not os.access(given, os.X_OK):
        return 'is not executable%s (mode %04o)' % (link, os.stat(given).st_mode & 0o7777)
    return None


def refuse_missing_binaries(params):
    """check_binaries: before anything is written (check mode too), each BinaryName and runtime_path of the
    call's runtimes must be an executable file; a runtime whose binary is missing fails every container."""
    bad = [(key, path, binary_problem(path)) for key, path in binaries_of(params['runtimes'])]
    bad = [b for b in bad if b[2]]
    if not bad:
        return
    raise ConfigError('refusing to write %s: %s. A runtime whose binary is missing or not executable fails every '
                      'container started through it. Nothing was written. Fix: install %s as an executable file, '
                      'point %s at one that exists, or set check_binaries: false.'
                      % (params['path'], '; '.join('%s %s %s' % b for b in bad),
                         ', '.join(unique_in_order(str(b[1]) for b in bad)), ', '.join(b[0] for b in bad)),
                      key=bad[0][0], binaries=[dict(key=k, path=p, problem=why) for k, p, why in bad])


def entries_of(params):
    """The call's settings and runtimes as the batch forms take them (one state: the call's), checked first."""
    given = dict(params, force=False)
    settings = setting_entries(dict(given, settings=params['settings'])) if params['settings'] else []
    runtimes = batch_entries(dict(given, runtimes=params['runtimes'])) if params['runtimes'] else []
    return settings, runtimes


def dropins_of(params):
    """The dropins option as containerd_dropin's params, one dict per file."""
    out, seen = [], set()
    for index, given in enumerate(params['dropins'] or []):
        path = given['path']
        if not os.path.isabs(path):
            raise ConfigError('dropins[%d].path %s is not absolute. Nothing was written. Fix: give the full path of '
                              'the drop-in.' % (index, path), key='dropins[%d].path' % index)
        path = os.path.normpath(path)
        if path in seen:
            raise ConfigError('dropins[%d]: %s is listed twice. Nothing was written. Fix: list each drop-in once.'
                              % (index, path), key='dropins[%d].path' % index)
        seen.add(path)
        if params['state'] == 'present' and given.get('content') is None:
            raise ConfigError('dropins[%d] (%s): state=present needs its content. Nothing was written. Fix: give '
                              'content.' % (index, path), key='dropins[%d].content' % index)
        out.append(dict(path=params['path'], owner=params['owner'], state_dir=params['state_dir'],
                        validate=params['validate'], backup=params['backup'], lock_timeout=params['lock_timeout'],
                        dropin=path, content=given.get('content'), mode=given.get('mode'),
                        create_folder=given.get('create_folder', True)))
    return out


def refuse_overrides_first(ctx, params, dropins):
    """Before any file is written: refuse a drop-in of this call whose new import would replace a plugin table
    of config.toml (containerd 1.x), with the imports edit's own message.

    The imports edit checks it too, but only after the drop-ins are on disk
    (and in check mode, which writes none, it never sees their content).
    """
    pending = {}
    for one in dropins:
        try:
            pending[one['dropin']] = parse_toml(one['content'])
        except TomlParseError:
            pass  # the drop-in's own write names the parse error, before anything is written
    raw = read_bytes(params['path'])
    if not pending or not params['imports'] or raw is None:
        return
    try:
        doc = ConfigDocument(params['path'], raw.decode('utf-8'))
        listed = set(ImportsArray(doc, ctx.containerd_version).keys())
    except (ConfigError, UnicodeDecodeError):
        return  # the transaction names what is wrong with config.toml, before anything is written
    for entry in params['imports']:
        if entry_key(entry, doc.path, ctx.containerd_version) not in listed:  # as the imports edit: only entries it adds
            refuse_plugin_override(doc, entry, ctx.containerd_version, pending)


def imports_params_of(params, will_exist):
    """The imports edit's own options, as containerd_config gives them."""
    return dict(position=params['position'], require_exists=params['require_exists'], prune_missing=False,
                allow_plugin_override=False, will_exist=will_exist)


def apply_set(module, ctx, first=None):
    """containerd_config's run: the module's result (a failure fails the module, naming what was written).

    first: with state=present, run after every input check and before the first write (the baseline); it
    returns values for the result, ``changed`` among them.
    """
    params = module.params
    state = params['state']
    released = plan = None
    if params.get('release_all'):
        params, released = with_owned(ctx, params)
    refuse_exclusive_uninstall(params)
    settings, runtimes = entries_of(params)
    dropins = dropins_of(params)
    result = dict(changed=False, dropins=[])
    diffs, changed = [], []
    if state == 'present':
        if params.get('check_binaries'):
            refuse_missing_binaries(params)
        refuse_overrides_first(ctx, params, dropins)
    if params.get('exclusive'):
        plan = exclusive_plan(ctx, params)
        refuse_default_release(ctx, params, plan)
        released = plan['released']
    if state == 'present' and first is not None:
        values = dict(first())
        changed.append(values.pop('changed', False))
        result.update(values)
    if state == 'present':
        result['dropins'] = [write(module, ctx, one) for one in dropins]
        for each in result['dropins']:
            _take_diff(each, diffs)
    # check mode wrote none of them: their imports are judged as if it had
    will_exist = [d['dropin'] for d, r in zip(dropins, result['dropins']) if r['changed']] if module.check_mode else []
    edit = EditSet(params['imports'] or [], settings, runtimes, params['owner'], state,
                   imports_params_of(params, will_exist))
    if edit.imports or edit.settings or edit.runtimes:
        # the imports edit itself refuses a drop-in that would replace a plugin table (allow_plugin_override off)
        done = transaction_result(module, ctx, edit, allow_plugin_override=False, load_test=None)
        _take_diff(done, diffs)
        changed.append(done['changed'])
        result.update(done)
    if plan is not None and any(released[k] for k in RELEASED_KINDS):
        done = release_unnamed(module, ctx, params, plan)
        _take_diff(done, diffs)
        changed.append(done['changed'])
        join_release(result, done)
    if state == 'absent' and dropins:
        # after the imports are gone: a drop-in still imported (by another owner) is kept
        done = remove_all(module, ctx, dict(dropins[0], dropins=[d['dropin'] for d in dropins]))
        result['dropins'] = done['dropins']
        _take_diff(done, diffs)  # remove_all moved each drop-in's diff into its own list
    result['changed'] = any(changed) or any(r['changed'] for r in result['dropins'])
    if diffs:
        result['diff'] = diffs
    result['owner'] = params['owner']
    if released is not None:
        result['released'] = released
    return result


def _take_diff(done, diffs):
    """Move a step's diff (one dict or a list of them) into the call's list."""
    diff = done.pop('diff', None)
    diffs.extend(diff if isinstance(diff, list) else [diff] if diff else [])
