# -*- coding: utf-8 -*-
"""The Molecule scenarios' container_pid lookup (molecule/shared/lookup_plugins): podman is asked once per
container start, and a cached PID whose process is gone (the node rebooted) is never returned."""

import importlib.util
import os
import subprocess
import sys
import types

import pytest

from helpers.common import REPO

PLUGIN = os.path.join(REPO, 'molecule', 'shared', 'lookup_plugins', 'container_pid.py')


@pytest.fixture
def lookup(tmp_path, monkeypatch):
    """The plugin with a stand-in podman that prints the PID in tmp_path/pid and counts its calls."""
    # Ansible's controller plugins are not imported into this process: once they are, ansible-core sends module
    # warnings to the controller's display, and the module tests run in this worker after it see none.
    errors, lookup_base = types.ModuleType('ansible.errors'), types.ModuleType('ansible.plugins.lookup')
    errors.AnsibleError = type('AnsibleError', (Exception,), {})
    lookup_base.LookupBase = object
    monkeypatch.setitem(sys.modules, 'ansible.errors', errors)
    monkeypatch.setitem(sys.modules, 'ansible.plugins.lookup', lookup_base)
    spec = importlib.util.spec_from_file_location('container_pid_under_test', PLUGIN)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    podman = bin_dir / 'podman'
    podman.write_text('#!/bin/sh\necho call >> "%s/calls"\n'
                      '[ -s "%s/pid" ] || { echo "Error: no such container $5" >&2; exit 125; }\n'
                      'cat "%s/pid"\n' % (tmp_path, tmp_path, tmp_path))
    podman.chmod(0o755)
    monkeypatch.setenv('PATH', str(bin_dir) + os.pathsep + os.environ['PATH'])
    monkeypatch.setenv('MOLECULE_EPHEMERAL_DIRECTORY', str(tmp_path))
    procs = []

    def start_node():
        proc = subprocess.Popen(['sleep', '300'])
        procs.append(proc)
        (tmp_path / 'pid').write_text('%d\n' % proc.pid)
        return proc

    def calls():
        path = tmp_path / 'calls'
        return len(path.read_text().splitlines()) if path.exists() else 0

    yield plugin, start_node, calls
    for proc in procs:
        proc.kill()
        proc.wait()


def test_podman_is_asked_once_while_the_node_runs(lookup):
    plugin, start_node, calls = lookup
    node = start_node()
    assert [plugin.pid_of('node-a') for dummy in range(5)] == [node.pid] * 5
    assert calls() == 1


def test_a_restarted_node_is_looked_up_again(lookup):
    plugin, start_node, calls = lookup
    first = start_node()
    assert plugin.pid_of('node-a') == first.pid
    first.kill()
    first.wait()
    second = start_node()
    assert plugin.pid_of('node-a') == second.pid
    assert calls() == 2


def test_a_pid_reused_by_another_process_is_not_trusted(lookup, tmp_path):
    """Same number, other process (another start time): the cache must not answer."""
    plugin, start_node, calls = lookup
    node = start_node()
    cache = tmp_path / 'container-pids' / 'node-a'
    plugin.pid_of('node-a')
    pid, started = cache.read_text().split()
    cache.write_text('%s %d\n' % (pid, int(started) - 1))
    assert plugin.pid_of('node-a') == node.pid
    assert calls() == 2


def test_a_stopped_container_is_an_error_that_names_it(lookup):
    plugin = lookup[0]
    with pytest.raises(plugin.AnsibleError) as err:
        plugin.pid_of('node-b')
    assert 'podman container node-b is not running' in str(err.value)
    assert 'no such container' in str(err.value)


def test_a_process_name_with_spaces_and_parentheses_parses(lookup, tmp_path):
    """/proc/PID/stat's second field (the name) may hold spaces and ')': the start time is counted after it."""
    plugin = lookup[0]
    odd = tmp_path / 'a) 1 2 (b'
    odd.write_bytes(open('/bin/sleep', 'rb').read())
    odd.chmod(0o755)
    first = subprocess.Popen([str(odd), '300'])
    second = subprocess.Popen(['sleep', '300'])
    try:
        odd_start, plain_start = int(plugin._start_time(first.pid)), int(plugin._start_time(second.pid))
        # clock ticks since boot: started just before the plain one, within seconds
        assert 0 <= plain_start - odd_start < 1000
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()
