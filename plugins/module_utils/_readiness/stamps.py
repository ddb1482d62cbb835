# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reusing a probe that passed (containerd_readiness probe_reuse_seconds).

A probe that passed leaves a stamp (``<state_dir>/readiness/probes.json``):
when (on the wall clock and on the monotonic clock), and the fingerprint of
what it depended on. With probe_reuse_seconds, a later check reuses a stamp
of at most that age instead of running the probe again, only when every part
of the fingerprint is the same: the effective config, containerd as a process
(its MainPID and start, and the boot), the handler's runtime table, the stat
of its shim, runtime and configuration files and of the files its (kata)
configuration names, and the probe's command line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import json
import math
import os
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    FileLock,
    LockTimeout,
    atomic_write,
    makedirs_private,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigError,
    parse_toml,
    split_bom,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.process import which
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.probe import RUNC_TYPES

STAMPS_FILE = os.path.join('readiness', 'probes.json')
# what a stamp means: raised when the probe's code or the fingerprint's parts change, so older stamps are not reused
STAMP_FORMAT = 1
STAMPS_LOCK_SECONDS = 30.0
# the files a handler's configuration names that count, and the largest configuration read for them (a kata
# configuration is about 30 KB, mostly comments)
CONFIG_NAMED_FILES = 64
CONFIG_MAX_BYTES = 1 << 20
# each part of a probe's fingerprint, as the reason of a probe that ran again names it
PARTS = (('format', 'the stamp format'), ('config', 'the effective config'),
         ('containerd', 'the containerd process (restarted)'), ('table', 'the runtime table of the handler'),
         ('files', 'the shim, runtime or configuration files of the handler or a file its configuration names'),
         ('probe', 'the probe command line'))


def stamps_path(state_dir):
    return os.path.join(state_dir, STAMPS_FILE)


def load_stamps(state_dir):
    """{handler: stamp} of the probes that passed in earlier checks; {} when there is no file or it cannot be read."""
    try:
        with open(stamps_path(state_dir)) as fh:
            data = json.load(fh)
    except (IOError, OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get('format') != STAMP_FORMAT or not isinstance(data.get('handlers'), dict):
        return {}
    return dict((name, stamp) for name, stamp in data['handlers'].items() if isinstance(stamp, dict))


def file_state(path):
    """[path, device, inode, size, mtime_ns] of a file (a replaced or touched file differs), else why not."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return [path, 'missing' if exc.errno == errno.ENOENT else 'unreadable (errno %s)' % exc.errno]
    return [path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def find_program(name, search_path, beside=None):
    """The file a program name of a runtime table runs, found as containerd and its shims find it: an absolute path
    as it is, else the first executable of that name in search_path (containerd's PATH), else beside containerd."""
    if os.path.isabs(name):
        return name
    # not found: the name as it is, whose state says so
    return which(name, extra=(beside,) if beside else (), path=search_path or '') or name


def shim_binary_name(runtime):
    """The shim containerd starts for a runtime: a path as it is, io.containerd.kata-qemu.v2 ->
    containerd-shim-kata-qemu-v2 (containerd's own rule: the last two words of the type)."""
    if os.path.isabs(runtime):
        return runtime
    words = runtime.split('.')
    return 'containerd-shim-%s-%s' % (words[-2], words[-1]) if len(words) >= 2 else runtime


def string_values(data):
    """Every string of parsed TOML data, in tables and arrays at any depth, in document order (no recursion: a
    deeply nested file cannot exhaust the stack)."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))


def config_named_files(path):
    """The files a runtime's configuration names: each absolute path among its string values that is a file, once,
    in document order, at most CONFIG_NAMED_FILES. For kata these are the files of the VM the probe boots (under
    [hypervisor.<name>]: path, kernel, image, initrd, firmware, jailer_path, virtio_fs_daemon...), which a payload
    updated file by file or a distribution's qemu upgrade replace under the same shim and configuration file.
    [] when the configuration cannot be read or parsed: its own state still counts."""
    if not os.path.isabs(path):
        return []
    try:
        with open(path, 'rb') as fh:
            raw = fh.read(CONFIG_MAX_BYTES + 1)
        if len(raw) > CONFIG_MAX_BYTES:
            return []
        data = parse_toml(split_bom(raw.decode('utf-8'))[0])
    except (IOError, OSError, ValueError, ConfigError, RuntimeError):  # ValueError: not UTF-8, not TOML
        return []
    named = []
    for value in string_values(data):
        if len(named) >= CONFIG_NAMED_FILES:
            break
        if os.path.isabs(value) and value not in named and os.path.isfile(value):
            named.append(value)
    return named


def handler_files(handler, search_path, beside):
    """The state of each file a handler's probe goes through: the shim of the runtime ctr names (runtime_path, or
    the shim of runtime_type), runtime_path, options.BinaryName (runc for a runc-type handler without one),
    options.ConfigPath and the files it names (config_named_files)."""
    argv = handler['probe_argv']
    runtime = argv[argv.index('--runtime') + 1]
    options = handler.get('options') or {}
    names = [shim_binary_name(runtime), handler.get('runtime_path') or '']
    if runtime in RUNC_TYPES:
        names.append(options.get('BinaryName') or 'runc')
    elif options.get('BinaryName'):
        names.append(options['BinaryName'])
    config = find_program(options['ConfigPath'], search_path, beside) if options.get('ConfigPath') else ''
    paths = [find_program(name, search_path, beside) for name in names if name] + ([config] if config else [])
    return [file_state(path) for path in paths + config_named_files(config)]


def _digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode('utf-8')).hexdigest()


def probe_fingerprint(handler, table, common):
    """{part: sha256} of what a handler's probe depends on (PARTS); common: config (the dump's fingerprint),
    containerd (its identity as a process), path (its PATH), beside (containerd's folder)."""
    probe_id = handler['probe_id']
    parts = dict(format=STAMP_FORMAT, config=common['config'], containerd=common['containerd'], table=table,
                 files=handler_files(handler, common['path'], common['beside']),
                 probe=dict(kind=handler['probe_kind'], image=handler['probe_image'],
                            argv=[word.replace(probe_id, '<probe id>') for word in handler['probe_argv']]))
    return dict((key, _digest(value)) for key, value in parts.items())


def process_path(pid):
    """The PATH of a running process (containerd's, which finds its shims and runc), or None when unreadable."""
    try:
        with open('/proc/%d/environ' % pid, 'rb') as fh:
            env = fh.read().split(b'\0')
    except (IOError, OSError):
        return None
    for item in env:
        if item.startswith(b'PATH='):
            return item[5:].decode('utf-8', 'replace')
    return ''


def utc_text(epoch):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(epoch))


def stamp_number(stamp, key):
    """The finite number a stamp holds under key, else None: missing, text, a boolean, NaN or infinite."""
    value = stamp.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        return None
    return number if math.isfinite(number) else None


def stamp_time(stamp):
    """When the stamp's probe passed (seconds since the epoch), else None: no finite number, or none a date can
    be made of."""
    passed = stamp_number(stamp, 'time')
    if passed is None:
        return None
    try:
        utc_text(passed)
    except (OverflowError, ValueError, OSError):
        return None
    return passed


def stamp_age(stamp, wall_age, mono):
    """(age in seconds, None), else (None, why the probe runs). With the stamp's reading of the monotonic clock
    (the boot is part of the fingerprint, so it is this boot's), the age is by that clock: a wall clock set back
    does not make a stamp younger; never less than the wall clock says, though (CLOCK_MONOTONIC stands still
    while the node is suspended). Without one (a stamp of an older version), by the wall clock."""
    if mono is None or 'mono' not in stamp:
        if wall_age < 0:
            return None, 'the stamp is from the future (the clock was set back)'
        return wall_age, None
    passed = stamp_number(stamp, 'mono')
    age = None if passed is None else mono - passed
    if age is None or not math.isfinite(age):
        return None, 'the stamp cannot be read'
    if age < 0:
        return None, 'the stamp is from the future (its monotonic time is ahead of the clock)'
    return max(age, wall_age), None


def reuse_verdict(stamp, fingerprint, now, max_age, mono=None):
    """(age in seconds, None) when the stamp stands in for the probe, else (None, why the probe runs).
    now: the wall clock; mono: the monotonic clock (time.monotonic(), the same for every process of a boot)."""
    if max_age <= 0:
        return None, 'probe_reuse_seconds is 0'
    if fingerprint is None:
        return None, 'what the probe depends on could not all be read'
    if not stamp:
        return None, 'no stamp of an earlier passing probe'
    recorded = stamp.get('fingerprint')
    passed = stamp_time(stamp)
    if passed is None or not isinstance(recorded, dict):
        return None, 'the stamp cannot be read'
    changed = [what for key, what in PARTS if recorded.get(key) != fingerprint.get(key)]
    if changed:
        return None, 'changed since the probe passed: %s' % ', '.join(changed)
    age, why = stamp_age(stamp, now - passed, mono)
    if why:
        return None, why
    if age > max_age:
        return None, 'the probe passed %d s ago, more than probe_reuse_seconds=%g' % (age, max_age)
    return age, None


class ProbeStamps(object):
    """The stamps of probes that passed: which probe of this check a stamp stands in for, and what to record.

    active: reuse was asked for, or a stamps file exists (it is kept true: a probe that fails removes its
    handler's stamp, whatever probe_reuse_seconds). common (see probe_fingerprint) is None when the config's
    fingerprint or containerd's identity cannot be read: nothing is reused or recorded then.
    """

    def __init__(self, state_dir, max_age):
        self.state_dir = state_dir
        self.max_age = max_age or 0.0
        self.active = self.max_age > 0 or os.path.exists(stamps_path(state_dir))
        self.recorded = load_stamps(state_dir) if self.max_age > 0 else {}
        self.common = None
        self.daemon_answers = False  # the CRI plugin check passed in this check
        self.fingerprints = {}
        self.why_not = {}
        self.changes = {}

    def reused(self, handler, table):
        """The result that stands in for the handler's probe, or None: the probe runs (why_not says why)."""
        name = handler['name']
        if self.common is not None:
            self.fingerprints[name] = probe_fingerprint(handler, table, self.common)
        if self.max_age > 0 and not self.daemon_answers:
            self.why_not[name] = 'the CRI plugin check did not pass'
            return None
        stamp = self.recorded.get(name)
        age, self.why_not[name] = reuse_verdict(stamp, self.fingerprints.get(name), time.time(), self.max_age,
                                                time.monotonic())
        if age is None:
            return None
        return dict(kind=stamp.get('kind'), ok=True, reused=True, age_seconds=round(age, 1),
                    passed_at=utc_text(float(stamp['time'])), rc=stamp.get('rc'), seconds=stamp.get('seconds'),
                    stdout='', stderr='', argv=[], cleanup_error='')

    def note(self, results):
        """The probes that ran: a pass is stamped (when its fingerprint is known), a failure removes the stamp."""
        now, mono = time.time(), time.monotonic()
        for name, res in results.items():
            res['reused'] = False
            if self.max_age > 0:
                res['not_reused'] = self.why_not.get(name)
            if res['ok'] and self.fingerprints.get(name):
                self.changes[name] = dict(time=now, mono=mono, fingerprint=self.fingerprints[name],
                                          kind=res.get('kind'), rc=res.get('rc'), seconds=res.get('seconds'))
            else:
                self.changes[name] = None

    def save(self, check_mode, warn):
        """Apply the changes to the stamps file, under its lock (not in check mode); the file's path or None."""
        path = stamps_path(self.state_dir)
        if check_mode or not self.active or not self.changes:
            return None
        if not os.path.exists(path) and not any(self.changes.values()):
            return None
        try:
            makedirs_private(os.path.dirname(path))
            with FileLock(path, STAMPS_LOCK_SECONDS):
                current = load_stamps(self.state_dir)  # another check may have written since this one read
                for name, stamp in self.changes.items():
                    if stamp is None:
                        current.pop(name, None)
                    else:
                        current[name] = stamp
                data = dict(format=STAMP_FORMAT, handlers=current)
                atomic_write(path, (json.dumps(data, indent=2, sort_keys=True) + '\n').encode('utf-8'), mode=0o600)
        except (IOError, OSError, LockTimeout) as exc:
            warn('the probe stamps could not be recorded in %s (the next check probes again): %s' % (path, exc))
            return None
        return path
