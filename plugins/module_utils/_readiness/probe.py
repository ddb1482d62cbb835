# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Probe containers: one ``ctr run`` per expected runtime handler, through that handler's own settings.

The command line is derived from the handler's table in the live config
(``config dump``): a runc-type handler's BinaryName, Root and SystemdCgroup, a
shim's runtime_path (or its type, which containerd looks up in PATH) and
options.ConfigPath. The container is removed afterwards whatever happened.

Two kinds of probe. Without a command (the default, with the node's sandbox
image: every kubelet node has it, and its entrypoint /pause runs until it is
signalled) the task is started detached, seen running, stopped with SIGTERM
and removed: a ``start`` probe. With a command (a handler's own, for example
``nvidia-smi -L``) the container runs it and must exit 0: a ``run`` probe.
An image missing from the namespace is imported from an archive or pulled;
when that is impossible the probe fails and says why.

A probe that passed may stand in for the next one while nothing it depends
on changes: stamps.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.service import run

RUNC_TYPES = ('io.containerd.runc.v2', 'io.containerd.runc.v1')
# a start probe: how long the task must stay up to count as running, how long SIGTERM may take
SETTLE_SECONDS = 0.3
STOP_SECONDS = 10.0


def handler_spec(item):
    """An expected handler: a name, or a dict with name and optional probe, required, pass_config_path, image,
    command and env."""
    if isinstance(item, dict):
        return dict(item)
    return dict(name=str(item))


def probe_command(spec, opts):
    """The handler's probe command as a list ([]: none, a start probe); a string is split as a shell would."""
    command = spec['command'] if spec.get('command') is not None else opts.get('probe_command')
    if isinstance(command, str):
        return shlex.split(command)
    return [str(word) for word in command or []]


def probe_env(spec):
    """The handler's probe environment as ['K=V', ...], from a dict or a list of K=V strings."""
    env = spec.get('env') or {}
    if isinstance(env, dict):
        return ['%s=%s' % (key, env[key]) for key in sorted(env)]
    return [str(item) for item in env]


def _runtime_args(name, table, spec, opts, probe_id):
    """(ctr run options that choose the handler's runtime as containerd would, notes)."""
    runtime_type = table.get('runtime_type') or table.get('type') or ''
    runtime_path = table.get('runtime_path') or ''
    options = table.get('options') or {}
    argv, notes = [], []
    if runtime_type in RUNC_TYPES:
        argv += ['--runtime', 'io.containerd.runc.v2']
        if runtime_path:
            notes.append('runtime_path %s not used by ctr for a runc-type runtime' % runtime_path)
        if options.get('BinaryName'):
            argv += ['--runc-binary', options['BinaryName']]
        if options.get('Root'):
            argv += ['--runc-root', options['Root']]
        if options.get('SystemdCgroup'):
            argv += ['--runc-systemd-cgroup', '--cgroup', 'system.slice:nodeguard-probe:%s' % probe_id]
    else:
        argv += ['--runtime', runtime_path or runtime_type]
        config_path = options.get('ConfigPath')
        if config_path and spec.get('pass_config_path', opts['pass_config_path']):
            argv += ['--runtime-config-path', config_path]
        elif config_path:
            notes.append('options.ConfigPath %s not passed (pass_config_path is false)' % config_path)
    if table.get('snapshotter'):
        notes.append('handler snapshotter %s not used: the probe runs on the default snapshotter' % table['snapshotter'])
    return argv, notes


def probe_argv(name, table, spec, opts):
    """(probe id, ctr argv, notes) for one handler table. opts: ctr, address, namespace, probe_image,
    probe_command, pass_config_path. A start probe (no command) runs detached (``-d``), a run probe with
    ``--rm``."""
    probe_id = 'nodeguard-probe-%s-%d-%d' % (re.sub(r'[^A-Za-z0-9_.-]', '-', name), os.getpid(),
                                             int(time.time() * 1000) % 100000000)
    command = probe_command(spec, opts)
    argv = [opts['ctr'], '--address', opts['address'], '-n', opts['namespace'], 'run']
    argv += ['--rm'] if command else ['-d', '--null-io']
    runtime, notes = _runtime_args(name, table, spec, opts, probe_id)
    argv += runtime
    for item in probe_env(spec):
        argv += ['--env', item]
    argv += [spec.get('image') or opts['probe_image'] or '', probe_id] + command
    return probe_id, argv, notes


def handlers(items, runtimes, opts, probe_default):
    """Each expected handler: present in the live config, probed, required, and its probe command line."""
    out = []
    for item in items:
        spec = handler_spec(item)
        name = spec['name']
        table = runtimes.get(name)
        entry = dict(name=name, present=isinstance(table, dict), probe=bool(spec.get('probe', probe_default)),
                     required=bool(spec.get('required', True)), probe_image=spec.get('image') or opts['probe_image'])
        if isinstance(table, dict):
            entry.update(runtime_type=table.get('runtime_type', ''), runtime_path=table.get('runtime_path', ''),
                         options=table.get('options') or {})
            entry['probe_id'], entry['probe_argv'], entry['probe_notes'] = probe_argv(name, table, spec, opts)
            entry['probe_kind'] = probe_kind(entry['probe_argv'])
        out.append(entry)
    return out


def probe_kind(argv):
    """'start' for a probe started detached (no command: seen running, then stopped), else 'run'."""
    return 'start' if argv[argv.index('run') + 1] == '-d' else 'run'


def _images(opts):
    rc, out, _err = run([opts['ctr'], '--address', opts['address'], '-n', opts['namespace'], 'images', 'ls', '-q'],
                        timeout=30)
    return out.split() if rc == 0 else None


def _pull(opts, image):
    """(rc, error) of ``ctr images pull`` into the namespace, through the CRI's registry hosts folder if any."""
    argv = [opts['ctr'], '--address', opts['address'], '-n', opts['namespace'], 'images', 'pull']
    if opts.get('hosts_dir'):
        argv += ['--hosts-dir', opts['hosts_dir']]
    rc, out, err = run(argv + [image], timeout=opts.get('pull_timeout') or 120)
    lines = [line.strip() for line in (err or out).strip().splitlines() if line.strip()]
    return rc, ('' if rc == 0 else (lines[-1] if lines else 'rc=%s' % rc)[-400:])


def probe_image(opts, archive, may_import=True, pull=False):
    """Whether the probe image is in the namespace; imported from archive, else pulled, when missing (not in
    check mode: containerd's image store is not changed then)."""
    result = dict(probe_image=opts['probe_image'], probe_image_present=opts['probe_image'] in (_images(opts) or []))
    can_import = bool(archive) and os.path.exists(archive)
    if result['probe_image_present'] or not (can_import or pull):
        return result
    if not may_import:
        result['probe_image_import_skipped'] = True
        return result
    if can_import:
        rc, out, err = run([opts['ctr'], '--address', opts['address'], '-n', opts['namespace'], 'images', 'import',
                            archive], timeout=120)
        result['probe_image_imported'] = rc == 0
        result['probe_image_import_error'] = (err or out).strip() if rc != 0 else ''
        result['probe_image_present'] = opts['probe_image'] in (_images(opts) or [])
    if pull and not result['probe_image_present']:
        rc, error = _pull(opts, opts['probe_image'])
        result['probe_image_pulled'] = rc == 0
        result['probe_image_pull_error'] = error
        result['probe_image_present'] = opts['probe_image'] in (_images(opts) or [])
    return result


def _cleanup(prefix, probe_id):
    """Remove the probe's task and container whatever state they are in; what could not be removed."""
    run(prefix + ['tasks', 'delete', '-f', probe_id], timeout=15)
    rc, out, err = run(prefix + ['containers', 'delete', probe_id], timeout=15)
    text = (err or out).strip()
    return '' if rc == 0 or 'not found' in text else (text.splitlines() or [''])[-1][-300:]


# what task_status says when ``ctr tasks ls`` itself failed: not a sign the task stopped
LIST_FAILED = 'UNKNOWN (ctr tasks ls failed)'


def task_status(prefix, probe_id):
    """The task's status in ``ctr tasks ls`` (RUNNING, STOPPED, ...), None when it is not listed,
    LIST_FAILED when the list could not be read."""
    rc, out, _err = run(prefix + ['tasks', 'ls'], timeout=15)
    if rc != 0:
        return LIST_FAILED
    for line in out.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 3 and cols[0] == probe_id:
            return cols[-1]
    return None


def _stop(prefix, probe_id):
    """SIGTERM, as the kubelet stops a sandbox; SIGKILL when it is not stopped within STOP_SECONDS.
    (seconds, signal that stopped it or None)."""
    start = time.monotonic()
    for signal, limit in (('SIGTERM', STOP_SECONDS), ('SIGKILL', 5.0)):
        run(prefix + ['tasks', 'kill', '-s', signal, probe_id], timeout=15)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if task_status(prefix, probe_id) in ('STOPPED', None):
                return round(time.monotonic() - start, 3), signal
            time.sleep(0.1)
    return round(time.monotonic() - start, 3), None


def start_probe(argv, probe_id, timeout):
    """A start probe: the task started detached, seen running, stopped, removed."""
    prefix = argv[:argv.index('run')]
    start = time.monotonic()
    rc, out, err = run(argv, timeout=timeout)
    result = dict(kind='start', ok=False, rc=rc, seconds=round(time.monotonic() - start, 3), stdout=out[-2000:],
                  stderr=err[-2000:], argv=argv, status=None, stopped_by=None, stop_seconds=None)
    if rc == 0:
        time.sleep(SETTLE_SECONDS)  # a task that dies at once is not running
        result['status'] = task_status(prefix, probe_id)
        if result['status'] == 'RUNNING':
            result['stop_seconds'], result['stopped_by'] = _stop(prefix, probe_id)
            # a task that neither signal stopped is a handler that does not work as the kubelet needs
            result['ok'] = result['stopped_by'] is not None
    result['cleanup_error'] = _cleanup(prefix, probe_id)
    return result


def run_probe(argv, probe_id, timeout):
    """Run one probe container (bounded) and make sure it is gone afterwards."""
    ctr_prefix = argv[:argv.index('run')]  # ctr --address A -n NS
    if probe_kind(argv) == 'start':
        return start_probe(argv, probe_id, timeout)
    start = time.monotonic()
    rc, out, err = run(argv, timeout=timeout)
    elapsed = round(time.monotonic() - start, 3)
    if rc == 124:
        run(ctr_prefix + ['tasks', 'kill', '-s', 'SIGKILL', probe_id], timeout=15)
        time.sleep(0.5)
    # --rm removes the container on a normal exit; make sure of it
    cleanup_error = _cleanup(ctr_prefix, probe_id)
    return dict(kind='run', ok=rc == 0, rc=rc, seconds=elapsed, stdout=out[-2000:], stderr=err[-2000:], argv=argv,
                cleanup_error=cleanup_error)


# at most this many probe containers at once (a node with many kata handlers)
MAX_PARALLEL_PROBES = 4


def run_probes(probes, timeout):
    """run_probe for each (name, argv, probe_id), side by side (each its own container); {name: result}.

    The probes of a readiness check are independent containers, so their
    start-up times do not add up; each is bounded by timeout as alone.
    """
    if not probes:
        return {}
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_PROBES, len(probes))) as pool:
        results = pool.map(lambda probe: run_probe(probe[1], probe[2], timeout), probes)
        return dict((probe[0], res) for probe, res in zip(probes, results))
