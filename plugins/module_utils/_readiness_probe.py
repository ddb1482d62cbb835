# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Probe containers: one ``ctr run`` per expected runtime handler, through that handler's own settings.

The command line is derived from the handler's table in the live config
(``config dump``): a runc-type handler's BinaryName, Root and SystemdCgroup, a
shim's runtime_path (or its type, which containerd looks up in PATH) and
options.ConfigPath. The container is removed afterwards whatever happened.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness_service import run

RUNC_TYPES = ('io.containerd.runc.v2', 'io.containerd.runc.v1')


def handler_spec(item):
    """An expected handler: a name, or a dict with name and optional probe, required, pass_config_path, image, command."""
    if isinstance(item, dict):
        return dict(item)
    return dict(name=str(item))


def probe_argv(name, table, spec, opts):
    """(probe id, ctr argv, notes) for one handler table. opts: ctr, address, namespace, probe_image,
    probe_command, pass_config_path."""
    runtime_type = table.get('runtime_type') or table.get('type') or ''
    runtime_path = table.get('runtime_path') or ''
    options = table.get('options') or {}
    probe_id = 'nodeguard-probe-%s-%d-%d' % (re.sub(r'[^A-Za-z0-9_.-]', '-', name), os.getpid(),
                                             int(time.time() * 1000) % 100000000)
    argv = [opts['ctr'], '--address', opts['address'], '-n', opts['namespace'], 'run', '--rm']
    notes = []
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
    argv += [spec.get('image') or opts['probe_image'], probe_id]
    argv += list(spec.get('command') or opts['probe_command'])
    return probe_id, argv, notes


def handlers(items, runtimes, opts, probe_default):
    """Each expected handler: present in the live config, probed, required, and its probe command line."""
    out = []
    for item in items:
        spec = handler_spec(item)
        name = spec['name']
        table = runtimes.get(name)
        entry = dict(name=name, present=isinstance(table, dict), probe=bool(spec.get('probe', probe_default)),
                     required=bool(spec.get('required', True)))
        if isinstance(table, dict):
            entry.update(runtime_type=table.get('runtime_type', ''), runtime_path=table.get('runtime_path', ''),
                         options=table.get('options') or {})
            entry['probe_id'], entry['probe_argv'], entry['probe_notes'] = probe_argv(name, table, spec, opts)
        out.append(entry)
    return out


def _images(opts):
    rc, out, _err = run([opts['ctr'], '--address', opts['address'], '-n', opts['namespace'], 'images', 'ls', '-q'],
                        timeout=30)
    return out.split() if rc == 0 else None


def probe_image(opts, archive, may_import=True):
    """Whether the probe image is in the namespace; imported from archive when missing (not in check mode)."""
    result = dict(probe_image=opts['probe_image'], probe_image_present=opts['probe_image'] in (_images(opts) or []))
    if result['probe_image_present'] or not archive or not os.path.exists(archive):
        return result
    if not may_import:
        result['probe_image_import_skipped'] = True  # check mode: containerd's image store is not changed
        return result
    rc, out, err = run([opts['ctr'], '--address', opts['address'], '-n', opts['namespace'], 'images', 'import',
                        archive], timeout=120)
    result['probe_image_imported'] = rc == 0
    result['probe_image_import_error'] = (err or out).strip() if rc != 0 else ''
    result['probe_image_present'] = opts['probe_image'] in (_images(opts) or [])
    return result


def run_probe(argv, probe_id, timeout):
    """Run one probe container (bounded) and make sure it is gone afterwards."""
    ctr_prefix = argv[:argv.index('run')]  # ctr --address A -n NS
    start = time.monotonic()
    rc, out, err = run(argv, timeout=timeout)
    elapsed = round(time.monotonic() - start, 3)
    if rc == 124:
        run(ctr_prefix + ['tasks', 'kill', '-s', 'SIGKILL', probe_id], timeout=15)
        time.sleep(0.5)
    # --rm removes the container on a normal exit; make sure of it
    run(ctr_prefix + ['tasks', 'delete', '-f', probe_id], timeout=15)
    run(ctr_prefix + ['containers', 'delete', probe_id], timeout=15)
    return dict(ok=rc == 0, rc=rc, seconds=elapsed, stdout=out[-2000:], stderr=err[-2000:], argv=argv)


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
