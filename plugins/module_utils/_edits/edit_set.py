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
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import read_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigDocument,
    ConfigError,
    TomlParseError,
    parse_toml,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.dropin import remove_all, write
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    transaction_result,
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
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import RuntimeBatch, batch_entries
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.setting import SettingBatch, setting_entries

IMPORT_RESULT_KEYS = ('added', 'removed', 'pruned', 'kept', 'duplicates_removed')

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
        if self.imports:
            # the last step that edited imports saw the final list (config.toml comes after the drop-ins)
            seen = [s['imports'] for s in steps if s.get('imports')]
            merged = dict(seen[-1])
            for key in IMPORT_RESULT_KEYS:
                merged[key] = unique_in_order(e for s in seen for e in s.get(key) or [])
            result['imports'] = merged
        if self.settings:
            result['settings'] = SettingBatch(self.settings, self.owner).combine({}, steps)['settings']
        if self.runtimes:
            scratch = RuntimeBatch(self.runtimes, self.owner).combine({}, steps)
            result['runtimes'] = scratch['runtimes']
            result['default_runtime_name'] = [s['default_runtime_name'] for s in steps
                                              if 'default_runtime_name' in s][-1]
        return result


def with_owned(ctx, params):
    """release_all: params with every runtime, setting and import the ledgers record for the owner added to
    those named (config.toml's ledger and those of the files it loads: edit_in may have written a change to a
    drop-in), and what was found (the module's ``released``).

    The runtime the owner made the CRI default comes first, so its prior
    default is back before the other tables go (a runtime that is still the
    default is not removed). Entries named in the call stay as given.
    """
    if params['state'] != 'absent':
        raise ConfigError('release_all: true undoes what owner %s recorded, so it needs state: absent. Nothing '
                          'was written. Fix: set state: absent, or leave release_all out.' % params['owner'],
                          key='release_all')
    owned = owned_resources(tree_records(params['state_dir'], params['path'], ctx.containerd_version),
                            params['owner'])
    runtimes = list(params['runtimes'] or [])
    named = set(r.get('name') for r in runtimes)
    # owned_resources lists every default among the runtimes too
    order = owned['defaults'] + [n for n in owned['runtimes'] if n not in owned['defaults']]
    runtimes.extend(dict(name=n, force=False) for n in order if n not in named)
    settings = list(params['settings'] or [])
    keys = set(e.get('key') for e in settings)
    settings.extend(dict(key=k, raw=True) for k in owned['settings'] if k not in keys)
    imports = list(params['imports'] or [])
    listed = set(entry_key(i, params['path']) for i in imports)
    imports.extend(i for i in owned['imports'] if entry_key(i, params['path']) not in listed)
    released = dict((k, owned[k]) for k in ('runtimes', 'tables', 'settings', 'imports'))
    return dict(params, runtimes=runtimes, settings=settings, imports=imports), released


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
        listed = set(ImportsArray(doc).keys())
    except (ConfigError, UnicodeDecodeError):
        return  # the transaction names what is wrong with config.toml, before anything is written
    for entry in params['imports']:
        if entry_key(entry, doc.path) not in listed:  # as the imports edit: only entries it adds
            refuse_plugin_override(doc, entry, ctx.containerd_version, pending)


def apply_set(module, ctx):
    """containerd_config's run: the module's result (a failure fails the module, naming what was written)."""
    params = module.params
    state = params['state']
    released = None
    if params.get('release_all'):
        params, released = with_owned(ctx, params)
    settings, runtimes = entries_of(params)
    dropins = dropins_of(params)
    result = dict(changed=False, dropins=[])
    diffs = []

    if state == 'present':
        refuse_overrides_first(ctx, params, dropins)
        result['dropins'] = [write(module, ctx, one) for one in dropins]
        for each in result['dropins']:
            _take_diff(each, diffs)
    imports_params = dict(position=params['position'], require_exists=params['require_exists'],
                          prune_missing=False, allow_plugin_override=False,
                          # check mode wrote none of them: their imports are judged as if it had
                          will_exist=[d['dropin'] for d, r in zip(dropins, result['dropins'])
                                      if r['changed']] if module.check_mode else [])
    edit = EditSet(params['imports'] or [], settings, runtimes, params['owner'], state, imports_params)
    if edit.imports or edit.settings or edit.runtimes:
        # the imports edit itself refuses a drop-in that would replace a plugin table (allow_plugin_override off)
        done = transaction_result(module, ctx, edit, allow_plugin_override=False, load_test=None)
        _take_diff(done, diffs)
        result.update(done)
    if state == 'absent' and dropins:
        # after the imports are gone: a drop-in still imported (by another owner) is kept
        done = remove_all(module, ctx, dict(dropins[0], dropins=[d['dropin'] for d in dropins]))
        result['dropins'] = done['dropins']
        _take_diff(done, diffs)  # remove_all moved each drop-in's diff into its own list
    result['changed'] = bool(result['changed'] or any(r['changed'] for r in result['dropins']))
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
