# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Set or restore one key (enable_cdi, disable_snapshot_annotations, ...)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ownership import (
    check_batch_entries,
    dotted,
    release,
    set_owned,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    parse_dotted_key,
)


def resolve_key(doc, params):
    """The key path for this file's config version."""
    key = params['key']
    if not params.get('raw'):
        return doc.layout.resolve(key)
    try:
        path = parse_dotted_key(key)
    except TomlLayoutError as exc:
        raise ConfigError('%s: key %r is not a dotted TOML key (%s). Fix: write it as in the file, e.g. '
                          'plugins."io.containerd.grpc.v1.cri".enable_cdi.' % (doc.path, key, exc), key=key)
    if path[0] == 'version' or len(path) < 2:
        raise ConfigError('%s: key %r cannot be managed with containerd_setting. Fix: name a key inside a '
                          'table, e.g. plugins."<plugin id>".<key>.' % (doc.path, key), key=key)
    return path


def apply_setting(doc, ledger, ctx, params):
    path = resolve_key(doc, params)
    owner = params['owner']
    resource = 'setting:' + dotted(path)
    if params['state'] == 'present':
        if params.get('value') is None:
            raise ConfigError('%s: state=present needs a value for %s. Fix: give value.' % (doc.path, dotted(path)),
                              key='value')
        current = doc.toml.get(path)
        if isinstance(current, dict):
            raise ConfigError('%s: %s is a table, not a value. Fix: name a key inside it.' % (doc.path, dotted(path)),
                              key=dotted(path))
        set_owned(doc, ledger, owner, resource, path, params['value'])
        restored = []
    else:
        kept = []
        if not ledger.select(owner=owner, resource=resource) and doc.toml.get(path) is not None:
            ctx.warn('%s: %s was not set by owner %s (no ledger record), so it is kept as it is.'
                     % (doc.path, dotted(path), owner))
            kept.append(dotted(path))
        summary = release(doc, ledger, owner, resource, ctx.warn)
        restored = summary['restored_keys']
        return dict(key_path=list(path), value=doc.toml.get(path), restored=restored, kept=kept + summary['kept_keys'],
                    owner=owner)
    return dict(key_path=list(path), value=doc.toml.get(path), restored=restored, owner=owner)


def setting_entries(params):
    """The settings option as one params dict per key (owner and state filled in); one state per call."""
    entries = []
    for index, given in enumerate(params['settings']):
        entry = dict(key=given['key'], value=given.get('value'), raw=bool(given.get('raw')),
                     state=given.get('state') or params['state'], owner=params['owner'], index=index)
        if entry['state'] == 'present' and entry['value'] is None:
            raise ConfigError('settings[%d] (%s): state=present needs a value. Nothing was written. Fix: give value.'
                              % (index, entry['key']), key='settings[%d].value' % index)
        entries.append(entry)
    return check_batch_entries(entries, 'settings', 'key', 'key', 'sets or puts back')


class SettingBatch(object):
    """Several keys as one edit: one lock, one candidate, one validation, one write, one ledger update.

    Each entry is applied as apply_setting applies one key, in order, so the
    text and the ledger records are those of one call per key.  When they
    would not all go to one file, the engine runs ``parts`` one by one
    (SplitEdit); ``combine`` gives the one result either way.
    """

    def __init__(self, entries, owner):
        self.entries = entries
        self.owner = owner
        self.parts = [SettingBatch([e], owner) for e in entries] if len(entries) > 1 else None

    def __call__(self, doc, ledger, ctx):
        results = []
        for entry in self.entries:
            try:
                out = apply_setting(doc, ledger, ctx, entry)
            except ConfigError as exc:
                details = dict(exc.details)
                details['key'] = 'settings[%d]' % entry['index']
                raise ConfigError('settings[%d] (%s): %s' % (entry['index'], entry['key'], exc), **details)
            out['key'] = entry['key']
            results.append(out)
        for out in results:
            out['value'] = doc.toml.get(tuple(out['key_path']))
        return dict(settings=results, owner=self.owner, **_summary(results))

    def combine(self, result, steps):
        """One result from the steps (an uninstall's files, or the parts): each key once, in the given order."""
        merged = {}
        for step in steps:
            for out in step.get('settings') or []:
                prior = merged.setdefault(out['key'], dict(out))
                prior['value'] = out.get('value')  # a later step saw the later state
                for key in ('restored', 'kept'):
                    if key in out:
                        prior[key] = sorted(set((prior.get(key) or []) + (out[key] or [])))
        settings = [merged[e['key']] for e in self.entries if e['key'] in merged]
        result.update(settings=settings, **_summary(settings))
        return result  # changed, effects, diff and files of the steps: the engine's merge_batch_steps


def _summary(settings):
    """The single-key lists for a batch: the union of restored and kept."""
    out = {}
    for entry in settings:
        for key in ('restored', 'kept'):
            if key in entry:
                out[key] = sorted(set(out.get(key, []) + list(entry[key] or [])))
    return out
