# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an owner added to the node's packages and repository files, so that uninstall removes only that
(package_record).

One JSON record per owner, ``{"packages": [...], "files": [...]}`` as release 1.2.0 wrote it:
the packages that were not installed and the files that did not exist
before the owner's install. ``replaced`` (written only when there is one)
adds the files the install overwrote: their prior bytes (base64), mode and
owner, and the SHA-256 of what the install writes there, so uninstall can
put the prior bytes back and can tell a later change by someone else from
its own. The record is written before the install adds anything, through
``_core/atomic`` under its lock, and only when it changes; check mode runs
the same plan and writes nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import errno
import json
import os
import re
import stat

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    FileLock,
    atomic_write,
    makedirs_private,
    read_bytes,
    read_json,
    sha256_bytes,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.process import run_command, which

# a version pin (pkg=1.2-1, pkg>=1.2): the package database knows the name before it
PIN = re.compile(r'[<>=].*$')


class RecordError(Exception):
    pass


# ------------------------------------------------------------------ the node's package database
def detect_package_manager(find=which):
    """(manager, database) of the node: ('apt', 'dpkg'), ('yum', 'rpm') (dnf or yum), or ('other', db).

    The manager decides whose repository files apply; the database answers which packages are installed.
    """
    if find('dpkg-query') and find('apt-get'):
        return 'apt', 'dpkg'
    if find('rpm') and (find('dnf') or find('yum')):
        return 'yum', 'rpm'
    if find('rpm'):
        return 'other', 'rpm'
    if find('dpkg-query'):
        return 'other', 'dpkg'
    raise RecordError('cannot tell which packages are installed: the node has neither dpkg-query nor rpm in PATH '
                      '(nor in /usr/bin, /bin, /usr/sbin, /sbin). Nothing was recorded. Fix: run on a Debian- or '
                      'RedHat-family node, or install the packages another way (the role: '
                      'gpu_toolkit_manage_packages: false).')


def package_name(spec):
    """The name of a package spec without its version pin (nvidia-container-toolkit=1.17.8-1)."""
    return PIN.sub('', spec).strip()


def is_installed(name, database, run=run_command):
    """Whether the package database has name installed (dpkg: status '... installed'; rpm: rpm -q)."""
    if database == 'dpkg':
        rc, out, _err = run(['dpkg-query', '-W', '-f=${Status}', name])
        return rc == 0 and out.strip().endswith(' installed')
    rc, _out, _err = run(['rpm', '-q', '--quiet', name])
    return rc == 0


def installed_packages(names, database, run=run_command):
    return [n for n in names if is_installed(n, database, run)]


# ------------------------------------------------------------------ the record
def empty_record():
    return {'packages': [], 'files': [], 'replaced': []}


def _string_list(data, key, path):
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecordError('the record %s is damaged: "%s" is not a list of strings. Nothing was changed. Fix: '
                          'correct it to {"packages": [...], "files": [...]} or move it aside (what it names is '
                          'then kept on uninstall).' % (path, key))
    return sorted(set(value))


def _replaced_entries(data, path):
    entries = data.get('replaced', [])
    wanted = ('path', 'prior', 'prior_sha256', 'written_sha256', 'mode')
    if not isinstance(entries, list) or not all(isinstance(e, dict) and all(k in e for k in wanted)
                                                for e in entries):
        raise RecordError('the record %s is damaged: each "replaced" entry needs %s. Nothing was changed. Fix: '
                          'move the record aside; the overwritten files it names must then be put back by hand.'
                          % (path, ', '.join(wanted)))
    return sorted(entries, key=lambda e: e['path'])


def load_record(path):
    """The record at path (files, packages, replaced; each sorted), or None when there is none."""
    data = read_json(path, lambda why: RecordError('the record %s is not JSON (%s). Nothing was changed. Fix: move it '
                                                   'aside (what it names is then kept on uninstall).' % (path, why)))
    if data is None:
        return None
    if not isinstance(data, dict):
        raise RecordError('the record %s is damaged: not a JSON object. Nothing was changed. Fix: move it aside.'
                          % path)
    return {'packages': _string_list(data, 'packages', path), 'files': _string_list(data, 'files', path),
            'replaced': _replaced_entries(data, path)}


def record_text(record):
    """The record as written: the 1.2.0 keys, ``replaced`` only when a file was overwritten."""
    data = {'packages': record['packages'], 'files': record['files']}
    if record['replaced']:
        data['replaced'] = record['replaced']
    return json.dumps(data, indent=4, sort_keys=True, separators=(',', ': ')) + '\n'


def shown(record):
    """The record as the diff shows it: as written, the prior bytes by their hash only."""
    if record is None:
        return None
    out = {'packages': record['packages'], 'files': record['files']}
    if record['replaced']:
        out['replaced'] = [dict((k, v) for k, v in e.items() if k != 'prior') for e in record['replaced']]
    return out


def save_record(path, record):
    makedirs_private(os.path.dirname(path))
    atomic_write(path, record_text(record).encode('utf-8'), mode=0o600)


def record_lock(path, timeout, create):
    """The record's lock (two runs for one owner wait for each other); None when it cannot exist yet."""
    if not create and not os.path.isdir(os.path.dirname(path)):
        return None
    if create:
        makedirs_private(os.path.dirname(path))
    return FileLock(path, timeout, create=create)


# ------------------------------------------------------------------ files
def applicable_files(files, manager):
    """The file entries for this node: those without a package_manager, or naming the node's."""
    return [f for f in files if not f.get('package_manager') or f['package_manager'] == manager]


def existing_paths(files):
    return [f['path'] for f in files if os.path.lexists(f['path'])]


def _prior_of(path, written):
    """The replaced entry of an existing file the install overwrites with the bytes written."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise RecordError('%s is not a regular file (%s), and the install would write over it. Nothing was '
                          'recorded or written. Fix: remove it or put a regular file there, then run again.'
                          % (path, 'a symbolic link' if stat.S_ISLNK(st.st_mode) else 'a folder or device'))
    prior = read_bytes(path)
    return {'path': path, 'prior': base64.b64encode(prior).decode('ascii'), 'prior_sha256': sha256_bytes(prior),
            'written_sha256': sha256_bytes(written), 'mode': '%04o' % stat.S_IMODE(st.st_mode),
            'uid': st.st_uid, 'gid': st.st_gid}


def _note_file(record, entry):
    """Add to record what the install is about to do to one file; returns what it noted, or None."""
    path = entry['path']
    content = entry.get('content')
    written = None if content is None else content.encode('utf-8')
    replaced = dict((e['path'], e) for e in record['replaced'])
    if path in record['files']:
        return None
    if path in replaced:
        if written is not None and replaced[path]['written_sha256'] != sha256_bytes(written):
            replaced[path]['written_sha256'] = sha256_bytes(written)  # the install writes other bytes now
            return 'replaced'
        return None
    if not os.path.lexists(path):
        record['files'] = sorted(record['files'] + [path])
        return 'files'
    if written is None or read_bytes(path) == written:
        return None  # the install keeps it (or writes the same bytes): nothing to undo
    record['replaced'] = sorted(record['replaced'] + [_prior_of(path, written)], key=lambda e: e['path'])
    return 'replaced'


def plan_present(record, not_installed, files):
    """(the record with what this install adds, {'packages', 'files', 'replaced'}: what is new in it)."""
    after = copy.deepcopy(record or empty_record())
    added = {'packages': sorted(set(not_installed) - set(after['packages'])), 'files': [], 'replaced': []}
    after['packages'] = sorted(set(after['packages']) | set(not_installed))
    for entry in files:
        kind = _note_file(after, entry)
        if kind:
            added[kind].append(entry['path'])
    return after, added


# ------------------------------------------------------------------ uninstall of the files
def _undo_of(entry, keep_changed):
    """What uninstall does with one overwritten file: 'restore', 'done' (prior bytes there), 'keep' or 'changed'."""
    if os.path.isdir(entry['path']):
        return 'keep' if keep_changed else 'changed'  # a folder now: someone else's, whatever the prior bytes
    current = read_bytes(entry['path'])
    if current is None or sha256_bytes(current) == entry['written_sha256']:
        return 'restore'
    if sha256_bytes(current) == entry['prior_sha256']:
        return 'done'
    return 'keep' if keep_changed else 'changed'


def changed_message(changed, record_path):
    return ('%s changed since the install wrote %s: %s neither what it wrote nor what was there before. Not overwritten; '
            'nothing was removed and the record %s is kept. Fix: to get back what was there before, put back the '
            'bytes the install wrote (or remove the file), then run the uninstall again; to keep the file as it '
            'is now, run it with keep_changed: true (its prior content is then dropped with the record).'
            % (', '.join(changed), 'it' if len(changed) == 1 else 'them',
               'it holds' if len(changed) == 1 else 'they hold', record_path))


def plan_absent(record, keep_changed, record_path):
    """{'removed': created files there, 'restored', 'kept_changed'}; raises when an overwritten file changed since."""
    plan = {'removed': [p for p in record['files'] if os.path.lexists(p)], 'restored': [], 'kept_changed': []}
    changed = []
    for entry in record['replaced']:
        verdict = _undo_of(entry, keep_changed)
        if verdict == 'restore':
            plan['restored'].append(entry)
        elif verdict == 'keep':
            plan['kept_changed'].append(entry['path'])
        elif verdict == 'changed':
            changed.append(entry['path'])
    if changed:
        raise RecordError(changed_message(changed, record_path))
    return plan


def restore_prior(entry):
    """Put the prior bytes back, with their mode and owner, in one rename."""
    try:
        atomic_write(entry['path'], base64.b64decode(entry['prior']), mode=int(entry['mode'], 8),
                     uid=entry.get('uid', -1), gid=entry.get('gid', -1))
    except (IOError, OSError) as exc:
        raise RecordError('cannot put back what was in %s before the install: %s. The record is kept, so a run '
                          'after the fix finishes the uninstall. Fix: %s'
                          % (entry['path'], exc.strerror or exc,
                             'create its folder %s' % os.path.dirname(entry['path']) if exc.errno == errno.ENOENT
                             else 'make the file writable by the task\'s user'))


def remove_created(path):
    try:
        os.unlink(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise RecordError('cannot remove %s, which the install created: %s. The record is kept, so a run '
                              'after the fix finishes the uninstall.' % (path, exc.strerror or exc))


def apply_absent(plan, record_path):
    """Restore the overwritten files, remove the created ones, then the record (last: a failure keeps it)."""
    for entry in plan['restored']:
        restore_prior(entry)
    for path in plan['removed']:
        remove_created(path)
    os.unlink(record_path)


# ------------------------------------------------------------------ the calls
def read_node(params, run=run_command, find=which):
    """What the node has of the listed packages and files, and the record: the base of every state's result."""
    manager, database = detect_package_manager(find)
    names = [package_name(p) for p in params['packages']]
    names = [n for i, n in enumerate(names) if n and n not in names[:i]]
    installed = installed_packages(names, database, run)
    files = applicable_files(params['files'], manager)
    record = load_record(params['record'])
    return {'package_manager': manager, 'package_db': database, 'installed': installed,
            'not_installed': [n for n in names if n not in installed], 'files_listed': [f['path'] for f in files],
            'existing_files': existing_paths(files), 'record_data': record, 'file_entries': files}


def _recorded_paths(record):
    return set(record['files']) | set(e['path'] for e in record['replaced'])


def summary(node, record):
    """The result's view of a record and of what it does not name."""
    record = record or empty_record()
    return {'packages': record['packages'], 'files': record['files'],
            'replaced': [e['path'] for e in record['replaced']],
            'unrecorded': {'packages': [p for p in node['installed'] if p not in record['packages']],
                           'files': [p for p in node['existing_files'] if p not in _recorded_paths(record)]}}


def changed_since(record):
    """The overwritten files of record that someone changed since the install wrote them (uninstall refuses them)."""
    return [e['path'] for e in (record or empty_record())['replaced'] if _undo_of(e, False) == 'changed']


def query(params, run=run_command, find=which):
    node = read_node(params, run, find)
    result = dict(public(node), changed=False, recorded=node['record_data'] is not None,
                  changed_since=changed_since(node['record_data']))
    result.update(summary(node, node['record_data']))
    return result


def public(node):
    return dict((k, v) for k, v in node.items() if k not in ('record_data', 'file_entries'))


def record_present(params, check_mode, run=run_command, find=which):
    """Union the record with what the install is about to add; written only when it changes."""
    node = read_node(params, run, find)
    before = node['record_data']
    after, added = plan_present(before, node['not_installed'], node['file_entries'])
    changed = after != (before or empty_record())
    if changed and not check_mode:
        save_record(params['record'], after)
    recorded = before is not None or changed
    result = dict(public(node), changed=changed, recorded=recorded, added=added,
                  before=shown(before), after=shown(after if recorded else None))
    result.update(summary(node, after))
    return result


def undo_files(params, check_mode):
    """Put back the overwritten files, remove the created ones, delete the record."""
    record = load_record(params['record'])
    if record is None:
        return {'changed': False, 'recorded': False, 'removed': [], 'restored': [], 'kept_changed': [],
                'before': None, 'after': None}
    plan = plan_absent(record, params['keep_changed'], params['record'])
    if not check_mode:
        apply_absent(plan, params['record'])
    return {'changed': True, 'recorded': True, 'removed': plan['removed'],
            'restored': [e['path'] for e in plan['restored']], 'kept_changed': plan['kept_changed'],
            'before': shown(record), 'after': None}


def diff_of(result, record_path):
    """The record before and after, as text (prior bytes by their hash)."""
    def text(data):
        return '' if data is None else json.dumps(data, indent=4, sort_keys=True, separators=(',', ': ')) + '\n'
    return {'before': text(result.get('before')), 'after': text(result.get('after')),
            'before_header': record_path, 'after_header': record_path}
