# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger: who changed what in a config file, and what was there before.

Uninstall must remove only what an owner added and put back what it changed.
The file itself cannot tell us that, so each config file gets a JSON ledger
under ``state_dir``.  Records:

- ``table``: the owner created this table; uninstall deletes it whole.
- ``key``: the owner set this key in a table it did not create; ``prior`` is
  the raw TOML text that was there (``None``: the key was absent), ``value``
  the raw text the owner wrote.  When several owners change one key, the
  records form a stack: releasing a lower one hands its prior to the one above.
- other kinds (``import``, ``key_created``...) belong to a module and carry
  their own fields.

The ledger is written before the config is renamed, with the hash of the
config it describes and the state before; ``recover`` uses those to roll back
a ledger whose config write never happened (a crash between the two).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    atomic_write,
    clean_stale_temps,
    makedirs_private,
    read_bytes,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import raw_values_match

FORMAT = 1


def file_identity(path):
    """[inode, mtime in ns] of path, or None: what tells the file a crashed run left from a rewrite.

    Any write to the file, or a new file in its place, changes one of them;
    a change of its attributes alone does not (chmod, chown, chattr -i after
    a write the immutable file refused: that is still the file the run read).
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_ino, st.st_mtime_ns]


def ledger_key(path):
    """The path a file's ledger is named after: a symbolic link's target (written with follow: true, where the
    records are), so every reader and the writer find one ledger whichever name the tree uses."""
    return os.path.realpath(path) if os.path.islink(path) else path


def ledger_path_for(state_dir, config_path):
    """One ledger file per config file, named after its absolute path."""
    name = os.path.abspath(config_path).strip('/').replace('%', '%25').replace('/', '%2F')
    return os.path.join(state_dir, 'ledger', name + '.json')


class LedgerError(Exception):
    pass


class Ledger(object):

    def __init__(self, state_dir, config_path):
        self.config_path = os.path.abspath(config_path)
        self.path = ledger_path_for(state_dir, config_path)
        self.records = []
        self.config_sha256 = None
        self.previous = None
        self.dirty = False
        self._saved_state = None

    @classmethod
    def load(cls, state_dir, config_path):
        ledger = cls(state_dir, config_path)
        raw = read_bytes(ledger.path)
        if raw is not None:
            try:
                data = json.loads(raw.decode('utf-8'))
                if data.get('format') != FORMAT:
                    raise ValueError('format %r' % data.get('format'))
                ledger.records = data.get('records', [])
                ledger.config_sha256 = data.get('config_sha256')
                ledger.previous = data.get('previous')
            except (ValueError, AttributeError) as exc:
                raise LedgerError('the ledger %s for %s is damaged (%s). Nothing was written. Fix: move it '
                                  'aside and take a fresh containerd_baseline snapshot; owners recorded '
                                  'in it can then not be uninstalled automatically.'
                                  % (ledger.path, config_path, exc))
        # a prior the ledger keeps may be a secret the file no longer has
        secrets.note_records(ledger.records + list((ledger.previous or {}).get('records') or []))
        ledger._saved_state = ledger._state()
        return ledger

    def _state(self):
        return {'config_sha256': self.config_sha256, 'records': copy.deepcopy(self.records)}

    def recover(self, current_sha, current_identity=None):
        """Make the ledger agree with the config file as it is now.

        Returns a note when it had to roll back (a crash between the ledger
        write and the config rename), else None. A crash leaves the very file
        the run read (same inode and ctime); a file with the old bytes that
        was written since (an operator undoing the last change by hand) is
        not a crash, and its records stay.
        """
        # Whatever happens below, the records then describe the file as it is
        # now, so that is the state the next save() must offer for rollback
        # (a fresh ledger had no hash; after a rollback the loaded state is
        # the one that never reached the file).
        note = None
        before = (self.previous or {}).get('config_identity')
        untouched = before is None or current_identity is None or list(before) == list(current_identity)
        if self.previous is not None and self.config_sha256 != current_sha \
                and self.previous.get('config_sha256') == current_sha and untouched:
            self.records = self.previous.get('records', [])
            self.config_sha256 = current_sha
            self.dirty = True
            note = 'rolled the ledger back: the previous run stopped before its config write'
        # Otherwise someone else may have rewritten the file since: our records
        # still say what we own; the file is compared key by key when they are used.
        self.previous = None
        self._saved_state = {'config_sha256': current_sha, 'config_identity': current_identity,
                             'records': copy.deepcopy(self.records)}
        return note

    # ---------------------------------------------------------------- queries
    def select(self, owner=None, resource=None, kind=None, path=None):
        out = []
        for rec in self.records:
            if owner is not None and rec.get('owner') != owner:
                continue
            if resource is not None and rec.get('resource') != resource:
                continue
            if kind is not None and rec.get('kind') != kind:
                continue
            if path is not None and rec.get('path') != list(path):
                continue
            out.append(rec)
        return out

    def owners_of_table(self, path):
        return sorted(set(r['owner'] for r in self.select(kind='table', path=path)))

    def key_stack(self, path):
        """Key records for path, oldest first."""
        return sorted(self.select(kind='key', path=path), key=lambda r: r['seq'])

    # ---------------------------------------------------------------- changes
    def _next_seq(self):
        return max([r.get('seq', 0) for r in self.records] + [0]) + 1

    def add(self, record):
        record = dict(record)
        record['seq'] = self._next_seq()
        if 'path' in record:
            record['path'] = list(record['path'])
        self.records.append(record)
        self.dirty = True
        return record

    def remove(self, record):
        self.records = [r for r in self.records if r is not record]
        self.dirty = True

    def record_table(self, owner, resource, path):
        if not self.select(owner=owner, kind='table', path=path):
            self.add({'owner': owner, 'resource': resource, 'kind': 'table', 'path': path})

    def record_key(self, owner, resource, path, prior, value):
        """Remember a key change; the first prior an owner saw is kept."""
        mine = self.select(owner=owner, resource=resource, kind='key', path=path)
        if mine:
            if self.key_stack(path)[-1] is mine[0]:
                if mine[0]['value'] != value:
                    mine[0]['value'] = value
                    self.dirty = True
                return mine[0]
            # someone changed the key after us and we change it again: our
            # old record hands its prior on, and we stack on top of theirs
            self.release_key(mine[0])
        return self.add({'owner': owner, 'resource': resource, 'kind': 'key', 'path': path,
                         'prior': prior, 'value': value})

    def release_key(self, record):
        """Drop a key record; return the raw prior to restore, or a marker.

        Returns ('restore', prior) when this record is the newest change of
        the key (the file should get prior back), or ('handover', None) when
        a newer owner changed the key since: that owner inherits our prior and
        the file is left alone.
        """
        stack = self.key_stack(record['path'])
        self.remove(record)
        newer = [r for r in stack if r['seq'] > record['seq']]
        if newer:
            # The next writer overwrote our value: it inherits our prior. When
            # it overwrote something else (a hand edit made after our write),
            # that is what its undo must give back, so its prior stays.
            if raw_values_match(newer[0].get('prior'), record.get('value')):
                newer[0]['prior'] = record['prior']
            return 'handover', None
        return 'restore', record['prior']

    def drop_under(self, path):
        """Forget every record inside a table that no longer exists."""
        path = list(path)
        keep = [r for r in self.records
                if not (r.get('path') and r['path'][:len(path)] == path and r['path'] != path)]
        if len(keep) != len(self.records):
            self.records = keep
            self.dirty = True

    # ----------------------------------------------------------------- saving
    def save(self, new_config_sha):
        """Write the ledger for the config about to be renamed into place."""
        data = {
            'format': FORMAT,
            'config': self.config_path,
            'config_sha256': new_config_sha,
            'records': self.records,
            'previous': self._saved_state,
        }
        makedirs_private(os.path.dirname(self.path))  # state_dir too: 0700, as the ledger folder
        clean_stale_temps(self.path)  # left by a run killed in atomic_write; we hold the config's lock
        atomic_write(self.path, (json.dumps(data, indent=1, sort_keys=True) + '\n').encode('utf-8'),
                     mode=0o600)
        self.config_sha256 = new_config_sha
        self.dirty = False


# -------------------------------------------------------------- one owner
RESOURCE_KINDS = (('runtime:', 'runtimes'), ('setting:', 'settings'), ('import:', 'imports'))


def owned_resources(records, owner):
    """What owner's records name, each once in record order: the one reading of the resource format.

    runtimes (any record but a 'released' mark, which only says the owner
    already undid its change to a runtime it did not create), tables (the
    runtimes whose table the owner created), defaults (the runtimes it made
    the CRI default), settings (dotted keys as in the file), imports.
    """
    out = dict(runtimes=[], tables=[], defaults=[], settings=[], imports=[])
    for rec in records:
        if not isinstance(rec, dict) or rec.get('owner') != owner or rec.get('kind') == 'released':
            continue
        resource = str(rec.get('resource') or '')
        for prefix, key in RESOURCE_KINDS:
            if not resource.startswith(prefix):
                continue
            name = resource[len(prefix):]
            if key == 'runtimes':
                name = name.split('#', 1)[0]  # older records: runtime:<name>#<detail>
                if rec.get('kind') == 'table' and name not in out['tables']:
                    out['tables'].append(name)
                path = rec.get('path')
                if rec.get('kind') == 'key' and isinstance(path, list) and path[-1:] == ['default_runtime_name'] \
                        and name not in out['defaults']:
                    out['defaults'].append(name)
            if name not in out[key]:
                out[key].append(name)
    return out
