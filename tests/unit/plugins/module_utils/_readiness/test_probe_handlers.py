# -*- coding: utf-8 -*-
"""_readiness_probe.handlers: the expected runtime handlers as the readiness
check sees them in the live config (present or not, probed or not, required
or not) and each one's probe command line, from a name or a dict spec."""

import os
import re

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.probe import handlers, probe_argv

OPTS = dict(ctr='/usr/bin/ctr', address='/run/containerd/containerd.sock', namespace='nodeguard',
            probe_image='docker.io/library/busybox:1.36', probe_command=['true'], pass_config_path=True)
RUNTIMES = {
    'runc': {'runtime_type': 'io.containerd.runc.v2', 'options': {'BinaryName': '/usr/bin/runc'}},
    'kata': {'runtime_type': 'io.containerd.kata.v2', 'runtime_path': '/opt/kata/bin/shim',
             'options': {'ConfigPath': '/opt/kata/conf.toml'}},
    'bare': {},
    'odd': 'not a table',
}


def test_a_handler_named_by_a_string_is_probed_and_required_by_default():
    (h,) = handlers(['runc'], RUNTIMES, OPTS, True)
    assert (h['name'], h['present'], h['probe'], h['required']) == ('runc', True, True, True)
    assert h['runtime_type'] == 'io.containerd.runc.v2' and h['runtime_path'] == ''
    assert h['options'] == {'BinaryName': '/usr/bin/runc'}
    assert h['probe_argv'][-3:] == ['docker.io/library/busybox:1.36', h['probe_id'], 'true']
    assert h['probe_notes'] == []
    (off,) = handlers(['runc'], RUNTIMES, OPTS, False)
    assert off['probe'] is False


def test_a_dict_spec_overrides_probe_required_image_command_and_config_path():
    kata, runc = handlers([dict(name='kata', probe=False, required=False, pass_config_path=False),
                           dict(name='runc', image='localhost/probe:1', command=['sh', '-c', 'exit 0'])],
                          RUNTIMES, OPTS, True)
    assert (kata['probe'], kata['required']) == (False, False)
    assert '--runtime-config-path' not in kata['probe_argv']
    assert kata['probe_notes'] == ['options.ConfigPath /opt/kata/conf.toml not passed (pass_config_path is false)']
    assert runc['probe_argv'][-5:] == ['localhost/probe:1', runc['probe_id'], 'sh', '-c', 'exit 0']


def test_a_handler_missing_or_not_a_table_is_not_present_and_has_no_probe_line():
    absent, odd = handlers(['nvidia', 'odd'], RUNTIMES, OPTS, True)
    for h in (absent, odd):
        assert h['present'] is False and h['probe'] is True and h['required'] is True
        assert 'probe_argv' not in h and 'runtime_type' not in h


def test_an_empty_handler_table_has_empty_settings():
    (h,) = handlers(['bare'], RUNTIMES, OPTS, True)
    assert h['present'] and (h['runtime_type'], h['runtime_path'], h['options']) == ('', '', {})


def test_the_probe_id_names_the_handler_safely_and_is_unique():
    """The id is a container name: characters ctr refuses become '-'; pid and time keep runs apart."""
    pid, argv, _notes = probe_argv('kata/qemu tdx', RUNTIMES['kata'], {}, OPTS)
    assert re.match(r'^nodeguard-probe-kata-qemu-tdx-%d-\d+$' % os.getpid(), pid)
    assert argv[argv.index(OPTS['probe_image']) + 1] == pid


def test_a_runc_handler_with_systemd_cgroups_probes_in_a_systemd_slice():
    table = {'runtime_type': 'io.containerd.runc.v2', 'options': {'BinaryName': '/usr/bin/runc', 'Root': '/run/r',
                                                                  'SystemdCgroup': True}}
    pid, argv, _notes = probe_argv('runc', table, {}, OPTS)
    assert argv[argv.index('--runtime'):argv.index(OPTS['probe_image'])] == [
        '--runtime', 'io.containerd.runc.v2', '--runc-binary', '/usr/bin/runc', '--runc-root', '/run/r',
        '--runc-systemd-cgroup', '--cgroup', 'system.slice:nodeguard-probe:%s' % pid]
    # cgroupfs (SystemdCgroup false or unset): no slice
    for options in ({'SystemdCgroup': False}, {}):
        argv = probe_argv('runc', {'runtime_type': 'io.containerd.runc.v2', 'options': options}, {}, OPTS)[1]
        assert argv[argv.index('--runtime'):argv.index(OPTS['probe_image'])] == ['--runtime', 'io.containerd.runc.v2']


def test_a_shim_s_config_path_is_passed_when_asked():
    _pid, argv, notes = probe_argv('kata', RUNTIMES['kata'], {}, OPTS)
    assert argv[argv.index('--runtime'):argv.index(OPTS['probe_image'])] == [
        '--runtime', '/opt/kata/bin/shim', '--runtime-config-path', '/opt/kata/conf.toml']
    assert notes == []
    # a shim without a ConfigPath: nothing to pass, nothing to note
    _pid, argv, notes = probe_argv('kata', {'runtime_type': 'io.containerd.kata.v2'}, {}, OPTS)
    assert argv[argv.index('--runtime'):argv.index(OPTS['probe_image'])] == ['--runtime', 'io.containerd.kata.v2']
    assert notes == []
