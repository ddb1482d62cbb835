# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Set or restore one key (enable_cdi, disable_snapshot_annotations, ...)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nodeguard.containerd.plugins.module_utils._config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._ownership import (
    dotted,
    release,
    set_owned,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._toml_text import (
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
