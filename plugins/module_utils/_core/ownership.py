# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make a change on behalf of an owner, and undo exactly that change later.

Every module edits through ``set_owned`` (which records what it changed in
the ledger) and reverts through ``release`` (which replays the ledger for one
owner and resource in reverse).  This is the fix for the GPU toolkit report:
a revert deletes only tables the owner created and puts back prior values
everywhere else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    dotted_path,
    raw_values_match,
    same_value,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError


dotted = dotted_path


def recorded_edit(doc, what, func, *args):
    try:
        return func(*args)
    except TomlLayoutError as exc:
        raise ConfigError('%s: cannot %s (%s). Nothing was written.' % (doc.path, what, exc))


def record_new_sections(doc, ledger, owner, resource, since):
    """Sections created while setting keys belong to the owner too."""
    for path in doc.toml.created_sections[since:]:
        if not ledger.select(kind='table', path=path) and not ledger.select(owner=owner, kind='section', path=path):
            ledger.add({'owner': owner, 'resource': resource, 'kind': 'section', 'path': path})


def set_owned(doc, ledger, owner, resource, path, value, own_table=False):
    """Set path to value for owner; record the prior value.  True if changed.

    own_table: the key lies in a table this owner created, which uninstall
    deletes whole, so no prior needs recording.
    """
    path = tuple(path)
    doc.wanted.append((path, value))
    current = doc.toml.get(path)
    if current is not None and same_value(current, value):
        # Already so.  If other owners changed this key, this owner now
        # depends on the value too: a "hold" record (prior = value) keeps it
        # when they leave, and hands their prior on when this owner leaves.
        # Also in a table this owner created: another owner's record there
        # would otherwise take the value away when that owner leaves.
        # An owner whose own record lies under another owner's moves on top:
        # it is now the newest to want this value.
        held = ledger.select(owner=owner, resource=resource, kind='key', path=path)
        stack = ledger.key_stack(path)
        raw = doc.toml.raw_value(path)
        if stack and (not held or stack[-1] is not held[0]):
            ledger.record_key(owner, resource, path, raw, raw)
        elif held and _note_hand_edit(ledger, owner, resource, path, raw):
            # the operator put this owner's wanted value there by hand over
            # its own: the owner now only holds it, and its undo leaves it
            held[0]['value'] = raw
        return False
    since = len(doc.toml.created_sections)
    prior = recorded_edit(doc, 'set %s' % dotted(path), doc.toml.set_value, path, value)
    if not own_table:
        _note_hand_edit(ledger, owner, resource, path, prior)
        ledger.record_key(owner, resource, path, prior, doc.toml.raw_value(path))
        record_new_sections(doc, ledger, owner, resource, since)
    return True


def _superseded(ledger, path, current_raw):
    """A hand edit was made over the newest owner's value: it supersedes every older owner's write too.

    Their undo must not bring back their own priors over the operator's value
    (not even when an older owner's value happens to equal it), so each is
    left to give back what is there now.
    """
    for rec in ledger.key_stack(path):
        if rec.get('prior') != current_raw or rec.get('value') != current_raw:
            rec['prior'] = rec['value'] = current_raw
            ledger.dirty = True


def _note_hand_edit(ledger, owner, resource, path, prior):
    """The owner writes its value again over a hand edit made since its last write.

    What it overwrites now is the operator's value, so that is what its undo
    gives back (the value from before the owner's first write was superseded
    by the operator). True when there was such a hand edit.
    """
    mine = ledger.select(owner=owner, resource=resource, kind='key', path=path)
    if mine and ledger.key_stack(path)[-1] is mine[0] and not raw_values_match(prior, mine[0].get('value')):
        mine[0]['prior'] = prior
        ledger.dirty = True
        return True
    return False


def release(doc, ledger, owner, resource, warn, path=None):
    """Undo everything owner recorded for resource (only at path, when given).

    Returns a summary dict.
    """
    summary = dict(deleted_tables=[], restored_keys=[], kept_keys=[])
    records = sorted(ledger.select(owner=owner, resource=resource, path=path), key=lambda r: -r['seq'])
    # keys first (newest first), then tables, then empty helper sections
    for rec in [r for r in records if r['kind'] == 'key']:
        path = tuple(rec['path'])
        current_raw = doc.toml.raw_value(path)
        action, prior = ledger.release_key(rec)
        if action == 'handover':
            summary['kept_keys'].append(dotted(path))
            continue
        if not raw_values_match(current_raw, rec.get('value')):
            warn('%s: %s was set to %s by %s but is now %s: someone else changed it since, so it is left as '
                 'it is' % (doc.path, dotted(path), rec.get('value'), owner, current_raw))
            summary['kept_keys'].append(dotted(path))
            _superseded(ledger, path, current_raw)
            continue
        recorded_edit(doc, 'restore %s' % dotted(path), doc.toml.restore_raw, path, prior)
        summary['restored_keys'].append(dotted(path))
    for rec in [r for r in records if r['kind'] == 'table']:
        path = tuple(rec['path'])
        ledger.remove(rec)
        others = [r for r in ledger.records if r.get('path') and tuple(r['path'][:len(path)]) == path
                  and tuple(r['path']) != path and r.get('owner') != owner]
        for r in others:
            warn('%s: %s changed %s inside %s, which %s created and now removes'
                 % (doc.path, r['owner'], dotted(r['path']), dotted(path), owner))
        if recorded_edit(doc, 'delete %s' % dotted(path), doc.toml.delete_table, path):
            summary['deleted_tables'].append(dotted(path))
        ledger.drop_under(path)
    for rec in [r for r in records if r['kind'] == 'builtin']:
        _release_builtin(doc, ledger, rec, summary)
    for rec in [r for r in records if r['kind'] == 'section']:
        path = tuple(rec['path'])
        ledger.remove(rec)
        if recorded_edit(doc, 'remove %s' % dotted(path), doc.toml.remove_empty_section, path):
            summary['deleted_tables'].append(dotted(path))
            continue
        # still holds another owner's keys: that owner removes it later
        inside = [r for r in ledger.records if r.get('kind') == 'key'
                  and tuple(r['path'][:len(path)]) == path]
        if inside:
            heir = max(inside, key=lambda r: r['seq'])
            ledger.add({'owner': heir['owner'], 'resource': heir['resource'], 'kind': 'section', 'path': path})
    return summary


def _release_builtin(doc, ledger, rec, summary):
    """A runc table written out for containerd 1.x goes when it is the last runtime left."""
    path = tuple(rec['path'])
    ledger.remove(rec)
    siblings = [n for n in (doc.toml.get(path[:-1]) or {}) if n != path[-1]]
    if not siblings:
        if doc.toml.get(path) is not None and recorded_edit(doc, 'delete %s' % dotted(path), doc.toml.delete_table, path):
            summary['deleted_tables'].append(dotted(path))
        return
    # other runtimes still need it: the newest of their owners inherits it
    tables = [r for r in ledger.records if r.get('kind') == 'table' and tuple(r['path'][:-1]) == path[:-1]]
    if tables:
        heir = max(tables, key=lambda r: r['seq'])
        ledger.add({'owner': heir['owner'], 'resource': heir['resource'], 'kind': 'builtin', 'path': path})


def check_batch_entries(entries, option, name, noun, verbs):
    """A batch option's entries (containerd_runtime's runtimes, containerd_setting's settings): each item once,
    and one state per call, as an uninstall walks the tree's files drop-ins first."""
    names = [e[name] for e in entries]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        raise ConfigError('%s: %s given more than once. Nothing was written. Fix: give each %s once.'
                          % (option, ', '.join(twice), noun), key=option)
    states = sorted(set(e['state'] for e in entries))
    if len(states) > 1:
        raise ConfigError('%s: %s. One call either %s. Nothing was written. Fix: give the present and the absent '
                          '%ss in two calls.'
                          % (option, '; '.join('%s: %s' % (s, ', '.join(e[name] for e in entries if e['state'] == s))
                                               for s in states), verbs, noun), key=option)
    return entries
