# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Add, change and remove CRI runtime handlers (one, or several in one edit), on behalf of an owner."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError, Layout, version_text
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import EditElsewhere, load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    file_version,
    load_tree,
    replaces_plugin_tables,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ownership import (
    recorded_edit,
    check_batch_entries,
    dotted,
    record_new_sections,
    release,
    set_owned,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in, same_value

DEFAULT_RUNTIME_TYPE = 'io.containerd.runc.v2'
# RuntimeClass handlers are DNS labels; containerd also allows dots and
# underscores in table names.  Anything else is refused before it can
# reach the file (quotes, brackets, newlines).
NAME_RE = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$')
KEY_RE = re.compile(r'^[A-Za-z0-9_-]+$')
RESERVED_SETTINGS = ('options', 'runtime_type', 'runtime_path')


def resource_of(name):
    return 'runtime:' + name


def _check_input(path, params):
    name = params['name']
    if not NAME_RE.match(name or ''):
        raise ConfigError('%s: runtime name %r is not valid. Fix: use letters, digits, "-", "_" or "." (at '
                          'most 63, starting and ending with a letter or digit), as a RuntimeClass handler '
                          'requires.' % (path, name), key='name')
    for opt in ('options', 'settings'):
        for key in (params.get(opt) or {}):
            if not KEY_RE.match(str(key)):
                raise ConfigError('%s: %s key %r is not valid. Fix: use letters, digits, "-" and "_" only.'
                                  % (path, opt, key), key='%s.%s' % (opt, key))
    for key in (params.get('settings') or {}):
        if key in RESERVED_SETTINGS:
            raise ConfigError('%s: settings may not hold %r. Fix: use the %s option instead.'
                              % (path, key, key), key='settings.' + key)
    for opt in ('options', 'settings'):
        for key, value in (params.get(opt) or {}).items():
            if value is None:
                raise ConfigError('%s: %s.%s has no value (null). Fix: give a value; TOML has no null.'
                                  % (path, opt, key), key='%s.%s' % (opt, key))


def _inherit_source(doc, params, ctx):
    """The runtime whose table a new runtime starts from, or None."""
    inherit = params.get('inherit')
    if inherit == 'none':
        return None
    runtimes = doc.runtimes()
    if inherit:
        if inherit not in runtimes:
            raise ConfigError('%s: inherit names runtime %r, which %s does not define (defined: %s). Fix: name '
                              'one of those, or inherit: none.' % (doc.path, inherit, doc.path,
                                                                   ', '.join(sorted(runtimes)) or 'none'),
                              key='inherit')
        return inherit
    default = doc.default_runtime() or 'runc'
    if default in runtimes and default != params['name']:
        return default
    if 'runc' in runtimes and params['name'] != 'runc':
        return 'runc'
    ctx.warn('%s: no runtime %r to inherit settings from; %s starts empty' % (doc.path, default, params['name']))
    return None


def _wanted_keys(params, table_path):
    """The (path, value) pairs the parameters ask for, in a stable order."""
    out = []
    if params.get('runtime_type'):
        out.append((table_path + ('runtime_type',), params['runtime_type']))
    if params.get('runtime_path'):
        out.append((table_path + ('runtime_path',), params['runtime_path']))
    for key, value in (params.get('settings') or {}).items():
        out.append((table_path + (str(key),), value))
    for key, value in (params.get('options') or {}).items():
        out.append((table_path + ('options', str(key)), value))
    return out


def _defined_in_imports(doc, name, ctx=None):
    """(file, table) of another file of the config tree that defines runtime name, or (None, None).

    When doc is a drop-in being edited (ctx.tree_files set by the engine),
    config.toml and the other drop-ins count too.
    """
    files = getattr(ctx, 'tree_files', None)
    ver = getattr(ctx, 'containerd_version', None)
    view = None
    if files is None:
        files, view = _tree_of(doc, ctx)
    for path, data in files:
        version = file_version(data)
        runtimes = get_in(data, Layout(version).runtimes) if version in (2, 3, 4) else None
        if path != doc.path and isinstance(runtimes, dict) and name in runtimes:
            view = view or _tree_view(files, ver)
            # a definition containerd does not run there (a version 2 drop-in's runtimes under a version 3
            # file's on 2.x; a plugin table a later file replaces on 1.x) is no home for the edit; a file
            # containerd refuses or skips whole is (the check names it)
            if view is None or path in [p for p, _why in view.ignored] \
                    or path in view.files_behind(view.read_path(Layout(version).runtime(name), path)):
                return path, runtimes[name]
    return None, None


def _refuse_unrun_table(doc, ctx, name, path):
    """config.toml defines the runtime, but containerd does not run that table: the edit goes where it would.

    containerd 1.x: a drop-in's CRI table (with or without a version line)
    replaces config.toml's whole, so config.toml's runtimes are not run.
    """
    files, view = _tree_of(doc, ctx)
    if len(files) < 2 or not any(isinstance(d.get('plugins'), dict) for _p, d in files[1:]):
        return  # no other file has a plugin table (the merged view of a big config is not cheap)
    view = view or _tree_view(files, getattr(ctx, 'containerd_version', None))
    if view is None:
        return
    merged = view.read_path(path, doc.path)
    if view.value(merged) is not None:
        return
    home = view.plugin_owner(merged[1])
    if home and home != doc.path:
        raise EditElsewhere('%s: runtime %s is defined here, but containerd %s does not run this table: %s defines '
                            'plugins."%s" too and its table replaces this one.'
                            % (doc.path, name, version_text(view.containerd_ver, '1.x'), home, merged[1]), home,
                            fix='make the change to runtime %s in %s, where containerd reads it (edit_in: auto writes '
                            'it there)' % (name, home))


def _tree_of(doc, ctx):
    """(files, view) of the tree doc heads: the engine's view of it as read while doc is as read (view is then
    that view), else the tree loaded again (view None: the caller builds it when it needs it)."""
    before = getattr(ctx, 'view_before', None)
    if before is not None and before.files and before.files[0][0] == doc.path and not doc.changed:
        return before.files, before
    return load_tree(doc.path, doc.data, getattr(ctx, 'containerd_version', None))[0], None


def _tree_view(files, ver):
    try:
        return load_effective(files[0][0], files[0][1], ver, overrides=dict(files[1:]))
    except ConfigError:
        return None  # the engine names what is wrong with the tree


def _holds_wanted(table, width, wanted):
    """True when the runtime's table (in another file) has every wanted value already; width: the
    length of the table's path in this file's layout, which each wanted key path starts with."""
    for key_path, value in wanted:
        have = get_in(table, key_path[width:])
        if have is None or not same_value(have, value):
            return False
    return True


def _keep_builtin_runc(doc, ledger, ctx, owner, resource):
    """On containerd 1.x, the first runtimes table in a file hides the built-in runc.

    Debian's stock config has no runtimes table: containerd's own runc is the
    default.  Adding any runtime there would make runc vanish and the CRI
    plugin fail, so write runc out as containerd defines it, recorded so that
    it goes again when it is the last runtime left.
    """
    if doc.runtimes() or not replaces_plugin_tables(ctx.containerd_version, doc.version):
        return
    if (doc.default_runtime() or 'runc') != 'runc':
        return
    runc = doc.layout.runtime('runc')
    recorded_edit(doc, 'add runtime runc', doc.toml.add_section, runc, [('runtime_type', DEFAULT_RUNTIME_TYPE)])
    ledger.add({'owner': owner, 'resource': resource, 'kind': 'builtin', 'path': runc})


def runtime_present(doc, ledger, ctx, params):
    name, owner = params['name'], params['owner']
    resource = resource_of(name)
    for rec in ledger.select(owner=owner, resource=resource, kind='released'):
        ledger.remove(rec)
    path = doc.layout.runtime(name)
    created = False
    if doc.toml.get(path) is None:
        dropin, table = _defined_in_imports(doc, name, ctx)
        if dropin:
            wanted = _wanted_keys(params, path)
            moved_here = getattr(ctx, 'tree_files', None) is not None
            # an edit the engine moved to this drop-in (it decides the default) while config.toml or
            # another drop-in holds the runtime as asked: only the default is left to write here
            if not params.get('inherit') and (not wanted or moved_here and _holds_wanted(table, len(path), wanted)):
                if params.get('default') is True:
                    set_owned(doc, ledger, owner, resource, doc.layout.default_runtime_name, name)
                return dict(created=False)
            # a second table here would merge into (2.x) or be replaced by (1.x)
            # the drop-in's: the runtime is edited where containerd reads it
            where = ('%s, another file of the config tree containerd reads' % dropin if moved_here
                     else 'the drop-in %s, which %s imports' % (dropin, doc.path))
            raise EditElsewhere('%s: runtime %s is defined in %s.' % (doc.path, name, where), dropin)
        if name != 'runc':
            _keep_builtin_runc(doc, ledger, ctx, owner, resource)
        source = _inherit_source(doc, params, ctx)
        since = len(doc.toml.created_sections)
        if source:
            recorded_edit(doc, 'copy runtime %s' % source, doc.toml.copy_table, doc.layout.runtime(source), path)
        else:
            recorded_edit(doc, 'add runtime %s' % name, doc.toml.add_section, path,
                          [('runtime_type', params.get('runtime_type') or DEFAULT_RUNTIME_TYPE)])
        # parent sections (e.g. [...containerd.runtimes]) made on the way
        doc.toml.created_sections = [p for p in doc.toml.created_sections if p[:len(path)] != path]
        record_new_sections(doc, ledger, owner, resource, since)
        ledger.record_table(owner, resource, path)
        set_owned(doc, ledger, owner, resource, path + ('runtime_type',),
                  params.get('runtime_type') or DEFAULT_RUNTIME_TYPE, own_table=True)
        created = True
    elif getattr(ctx, 'tree_files', None) is None:
        _refuse_unrun_table(doc, ctx, name, path)
    own_table = bool(ledger.select(owner=owner, kind='table', path=path))
    for key_path, value in _wanted_keys(params, path):
        set_owned(doc, ledger, owner, resource, key_path, value, own_table=own_table)
    if params.get('default') is True:
        set_owned(doc, ledger, owner, resource, doc.layout.default_runtime_name, name)
    elif params.get('default') is False and doc.default_runtime() == name:
        mine = ledger.select(owner=owner, resource=resource, path=doc.layout.default_runtime_name)
        if not mine:
            raise ConfigError('%s: %s is the default runtime, but %s did not make it so. Fix: make another '
                              'runtime the default first.' % (doc.path, name, owner),
                              key=dotted(doc.layout.default_runtime_name))
        release_default(doc, ledger, ctx, owner, resource)
    return dict(created=created)


def default_setter(ledger, default_path, owner, resource):
    """Who set the default_runtime_name that names owner's runtime resource (the owner of the newest record,
    'no recorded owner' when none), or None when that record is owner's own change for resource, which a
    release of the runtime puts back."""
    stack = ledger.key_stack(default_path)
    if stack and stack[-1]['owner'] == owner and stack[-1]['resource'] == resource:
        return None
    return stack[-1]['owner'] if stack else 'no recorded owner'


def default_removal_refused(path, entry, setter, default_path, before_writes=False):
    """The refusal to remove entry's runtime, the default runtime of file path (set by setter).

    An entry the call did not give (released_by: exclusive, release_all)
    is named by the option that released it, with the fixes that option
    takes; before_writes: refused before anything of the call was written.
    """
    name, released_by = entry['name'], entry.get('released_by')
    default = ('%s is the default runtime (default_runtime_name, set by %s), so removing it would stop the CRI '
               'plugin from loading.' % (name, setter))
    if released_by == 'exclusive':
        done = ('Nothing was written.' if before_writes else
                'The release comes after the install: the install\'s changes are kept, the release\'s are not '
                'written.')
        return ConfigError('%s: exclusive: true releases runtime %s (owner %s recorded it, the call\'s runtimes do '
                           'not name it), but %s %s Fix: make another runtime the default first, or keep %s by naming '
                           'it in runtimes.' % (path, name, entry['owner'], default, done, name), key='exclusive')
    if released_by == 'release_all':
        return ConfigError('%s: release_all: true releases runtime %s (owner %s recorded it), but %s Fix: make '
                           'another runtime the default first, or name it in runtimes with force: true to remove it '
                           'and the default_runtime_name key.' % (path, name, entry['owner'], default),
                           key='release_all')
    return ConfigError('%s: %s Fix: make another runtime the default first, or set force: true to remove it and the '
                       'default_runtime_name key.' % (path, default), key=dotted(default_path))


def release_default(doc, ledger, ctx, owner, resource):
    """Undo only this owner's change of default_runtime_name."""
    release(doc, ledger, owner, resource, ctx.warn, path=doc.layout.default_runtime_name)


def _drop_default(doc, ledger, default_path):
    """Forced removal of the default runtime: the oldest recorded default comes back, else none is set."""
    stack = ledger.key_stack(default_path)
    prior = stack[0]['prior'] if stack else None
    recorded_edit(doc, 'restore %s' % dotted(default_path), doc.toml.restore_raw, default_path, prior)
    for rec in stack:
        ledger.remove(rec)


def runtime_absent(doc, ledger, ctx, params):
    name, owner, force = params['name'], params['owner'], params.get('force')
    resource = resource_of(name)
    path = doc.layout.runtime(name)
    mine = [r for r in ledger.select(owner=owner, resource=resource) if r['kind'] != 'released']
    exists = doc.toml.get(path) is not None
    if not mine and exists and ledger.select(owner=owner, resource=resource, kind='released'):
        # this owner already undid its changes to a runtime it did not create:
        # a second uninstall (a retry, a second converge) has nothing to do
        return dict(removed=False, restored=[], kept=[])
    created_by = ledger.owners_of_table(path)
    default_path = doc.layout.default_runtime_name
    if owner in created_by and doc.default_runtime() == name:
        # deleting our table would leave a default that points nowhere,
        # unless the default is our own change, which release puts back
        setter = default_setter(ledger, default_path, owner, resource)
        if setter is not None and not force:
            raise default_removal_refused(doc.path, params, setter, default_path)
        if setter is not None:
            _drop_default(doc, ledger, default_path)
    if mine:
        summary = release(doc, ledger, owner, resource, ctx.warn)
        if doc.toml.get(path) is not None and not ledger.select(owner=owner, resource=resource, kind='released'):
            ledger.add({'owner': owner, 'resource': resource, 'kind': 'released', 'path': path})
        return dict(removed=bool(summary['deleted_tables']), restored=summary['restored_keys'],
                    kept=summary['kept_keys'])
    if not exists:
        return dict(removed=False, restored=[], kept=[])
    if not force:
        if not created_by:
            # shipped by the image (EKS GPU AMI, k3s): not this owner's to remove
            ctx.warn('%s: runtime %s was not added or changed by owner %s (no ledger record), so it is kept. '
                     'Set force: true to delete it anyway.' % (doc.path, name, owner))
            return dict(removed=False, restored=[], kept=[dotted(path)])
        raise ConfigError('%s: runtime %s was not added by owner %s (created by: %s). nodeguard removes only '
                          'what an owner added, so it is left alone. Fix: run with the owner that added it, or '
                          'set force: true to delete it anyway.'
                          % (doc.path, name, owner, ', '.join(created_by)), key=dotted(path))
    if doc.default_runtime() == name:
        _drop_default(doc, ledger, default_path)
    recorded_edit(doc, 'delete %s' % dotted(path), doc.toml.delete_table, path)
    for rec in ledger.select(kind='table', path=path):
        ledger.remove(rec)
    ledger.drop_under(path)
    return dict(removed=True, restored=[], kept=[])


def apply_runtime(doc, ledger, ctx, params):
    _check_input(doc.path, params)
    if params['state'] == 'present':
        out = runtime_present(doc, ledger, ctx, params)
    else:
        out = runtime_absent(doc, ledger, ctx, params)
    table = doc.toml.get(doc.layout.runtime(params['name']))
    out['runtime'] = table
    out['default_runtime_name'] = doc.default_runtime()
    out['owner'] = params['owner']
    return out


# the per-runtime keys of the runtimes option; state and force default to the module's own
ENTRY_KEYS = ('name', 'state', 'runtime_type', 'runtime_path', 'options', 'settings', 'inherit', 'default', 'force')

# the argument spec of one entry of a runtimes option (containerd_runtime adds state; containerd_config's
# entries all have the call's state)
RUNTIME_ENTRY_OPTIONS = dict(
    name=dict(type='str', required=True),
    runtime_type=dict(type='str'),
    runtime_path=dict(type='path'),
    options=dict(type='dict'),
    settings=dict(type='dict'),
    inherit=dict(type='str'),
    default=dict(type='bool'),
    force=dict(type='bool'),
)


def batch_entries(params):
    """The runtimes option as one params dict per runtime (owner, state and force filled in).

    All entries of one call have one state: an uninstall goes through the
    tree's files drop-ins first, an install where containerd reads each key.
    """
    entries = []
    for index, given in enumerate(params['runtimes']):
        entry = dict((k, given.get(k)) for k in ENTRY_KEYS)
        entry['owner'] = params['owner']
        entry['state'] = entry['state'] or params['state']
        entry['force'] = params['force'] if entry['force'] is None else entry['force']
        entry['index'] = index
        # exclusive or release_all: an entry the call did not give, which that option released
        entry['released_by'] = given.get('released_by')
        entries.append(entry)
    return check_batch_entries(entries, 'runtimes', 'name', 'runtime', 'installs or removes')


def _named(entry, exc):
    """A ConfigError of one entry, saying which entry of runtimes it is (one the call did not give: as raised,
    the message names the runtime and the option that released it)."""
    if entry.get('released_by'):
        return exc
    details = dict(exc.details)
    key = details.get('key')
    details['key'] = 'runtimes[%d]%s' % (entry['index'], '.' + key if key else '')
    return ConfigError('runtimes[%d] (%s): %s' % (entry['index'], entry['name'], exc), **details)


class RuntimeBatch(object):
    """Several runtimes as one edit: one lock, one candidate, one validation, one write, one ledger update.

    Each entry is applied as apply_runtime applies one runtime, in order, so
    the text and the ledger records are those of one call per runtime.  When
    they would not all go to one file (one is defined in a drop-in), the
    engine runs ``parts`` one by one (SplitEdit); ``combine`` gives the one
    result either way.
    """

    def __init__(self, entries, owner):
        self.entries = entries
        self.owner = owner
        self.parts = [RuntimeBatch([e], owner) for e in entries] if len(entries) > 1 else None

    def __call__(self, doc, ledger, ctx):
        for entry in self.entries:
            try:
                _check_input(doc.path, entry)
            except ConfigError as exc:
                raise _named(entry, exc)
        results = []
        for entry in self.entries:
            try:
                out = runtime_present(doc, ledger, ctx, entry) if entry['state'] == 'present' else \
                    runtime_absent(doc, ledger, ctx, entry)
            except EditElsewhere:
                raise  # the message names the runtime; the engine decides where it goes
            except ConfigError as exc:
                raise _named(entry, exc)
            out.update(name=entry['name'], state=entry['state'])
            results.append(out)
        for out in results:
            out['runtime'] = doc.toml.get(doc.layout.runtime(out['name']))
        return dict(runtimes=results, default_runtime_name=doc.default_runtime(), owner=self.owner,
                    **_summary(results))

    def combine(self, result, steps):
        """One result from the steps (an uninstall's files, or the parts): each runtime once, in the given order."""
        merged = {}
        for step in steps:
            for out in step.get('runtimes') or []:
                prior = merged.get(out['name'])
                if prior is None:
                    merged[out['name']] = dict(out)
                    continue
                # a later step saw the later state of the runtime
                prior['runtime'] = out.get('runtime')
                for key in ('created', 'removed'):
                    if key in out:
                        prior[key] = bool(prior.get(key) or out[key])
                for key in ('restored', 'kept'):
                    if key in out:
                        prior[key] = sorted(set((prior.get(key) or []) + (out[key] or [])))
        runtimes = [merged[e['name']] for e in self.entries if e['name'] in merged]
        result.update(runtimes=runtimes, **_summary(runtimes))
        if self.parts and len(steps) > 1:
            # the engine merged changed, effects, diff and files of the steps (merge_batch_steps)
            result['default_runtime_name'] = steps[-1].get('default_runtime_name')
        return result


def _summary(runtimes):
    """The single-runtime keys for a batch: true when true of any runtime, the union of the key lists."""
    out = {}
    for entry in runtimes:
        for key in ('created', 'removed'):
            if key in entry:
                out[key] = bool(out.get(key) or entry[key])
        for key in ('restored', 'kept'):
            if key in entry:
                out[key] = sorted(set(out.get(key, []) + list(entry[key] or [])))
    return out


__all__ = ['apply_runtime', 'batch_entries', 'RuntimeBatch', 'same_value']
