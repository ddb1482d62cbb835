# -*- coding: utf-8 -*-
"""The start probe (the sandbox image's /pause: start, see running, stop, remove), the probe's env and command,
the journal lines of a containerd that is not ready, and the proxy plugin's socket check, in process.

ctr and journalctl are answered by the test; the same code against real containerd daemons with only the pause
image is in tests/standins/test_sandbox_probes.py, and on the Molecule nodes in molecule/readiness."""

import json
import os
import time

REAL_SLEEP = time.sleep

import pytest

from helpers.grpc_sockets import answering
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import probe
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import proxy
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import service as svc

OPTS = dict(ctr='ctr', address='/run/c.sock', namespace='k8s.io', probe_image='registry.k8s.io/pause:3.10',
            probe_command=[], pass_config_path=True)
RUNC = dict(runtime_type='io.containerd.runc.v2', options=dict(BinaryName='/usr/bin/nvidia-container-runtime'))


class Ctr(object):
    """ctr's answers by subcommand; the task's status in `tasks ls` follows a list (the last repeats)."""

    def __init__(self, run_rc=0, statuses=('RUNNING', 'STOPPED'), delete=(0, '', '')):
        self.run_rc = run_rc
        self.statuses = list(statuses)
        self.delete = delete
        self.calls = []

    def __call__(self, argv, timeout=30):
        words = argv[5:]
        self.calls.append(words)
        if words[0] == 'run':
            return (self.run_rc, '', '' if self.run_rc == 0 else 'ctr: failed to create shim task: no kvm\n')
        if words[:2] == ['tasks', 'ls']:
            status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
            rows = '' if status is None else '%s    4242    %s\n' % (self.pid, status)
            return 0, 'TASK    PID    STATUS\n' + rows, ''
        if words[:2] == ['containers', 'delete']:
            return self.delete
        return 0, '', ''


@pytest.fixture
def ctr(monkeypatch):
    def make(**kw):
        fake = Ctr(**kw)
        monkeypatch.setattr(probe, 'run', fake)
        monkeypatch.setattr(probe.time, 'sleep', lambda s: None)
        return fake
    return make


def start_argv(spec=None):
    probe_id, argv, _notes = probe.probe_argv('nvidia', RUNC, spec or dict(name='nvidia'), OPTS)
    return probe_id, argv


def test_without_a_command_the_probe_starts_the_image_detached():
    probe_id, argv = start_argv()
    assert argv[:8] == ['ctr', '--address', '/run/c.sock', '-n', 'k8s.io', 'run', '-d', '--null-io']
    assert '--rm' not in argv and argv[-2:] == ['registry.k8s.io/pause:3.10', probe_id]
    assert argv[argv.index('--runc-binary') + 1] == '/usr/bin/nvidia-container-runtime'


def test_a_handler_s_command_and_env_make_a_run_probe():
    spec = dict(name='nvidia', image='cuda:12', env=dict(NVIDIA_VISIBLE_DEVICES='all', A='1'), command='nvidia-smi -L')
    probe_id, argv = start_argv(spec)
    assert argv[5:7] == ['run', '--rm'] and '-d' not in argv
    assert argv[-7:] == ['A=1', '--env', 'NVIDIA_VISIBLE_DEVICES=all', 'cuda:12', probe_id, 'nvidia-smi', '-L']
    assert argv[argv.index('NVIDIA_VISIBLE_DEVICES=all') - 1] == '--env'
    assert probe.probe_env(dict(env=['X=1', 'Y=2'])) == ['X=1', 'Y=2']
    assert probe.probe_command(dict(command=None), dict(probe_command=['/bin/true'])) == ['/bin/true']
    assert probe.probe_command(dict(command=[]), dict(probe_command=['/bin/true'])) == []
    entry = probe.handlers([spec, 'runc'], dict(nvidia=RUNC, runc=RUNC), OPTS, True)
    assert [e['probe_kind'] for e in entry] == ['run', 'start']
    assert [e['probe_image'] for e in entry] == ['cuda:12', 'registry.k8s.io/pause:3.10']


def test_a_start_probe_sees_the_task_running_stops_it_with_sigterm_and_removes_it(ctr):
    probe_id, argv = start_argv()
    fake = ctr(statuses=('RUNNING', 'STOPPED'))
    fake.pid = probe_id
    res = probe.run_probe(argv, probe_id, 30)
    assert res['kind'] == 'start' and res['ok'] and res['status'] == 'RUNNING' and res['stopped_by'] == 'SIGTERM'
    assert res['cleanup_error'] == ''
    assert fake.calls[1:] == [['tasks', 'ls'], ['tasks', 'kill', '-s', 'SIGTERM', probe_id], ['tasks', 'ls'],
                              ['tasks', 'delete', '-f', probe_id], ['containers', 'delete', probe_id]]


def test_a_task_that_ignores_sigterm_is_killed(ctr, monkeypatch):
    probe_id, argv = start_argv()
    monkeypatch.setattr(probe, 'STOP_SECONDS', 0.05)
    fake = ctr(statuses=['RUNNING'] * 3 + ['STOPPED'])
    fake.pid = probe_id
    monkeypatch.setattr(probe.time, 'sleep', lambda s: REAL_SLEEP(0.03))
    res = probe.run_probe(argv, probe_id, 30)
    assert res['ok'] and res['stopped_by'] == 'SIGKILL'
    assert ['tasks', 'kill', '-s', 'SIGKILL', probe_id] in fake.calls


def test_a_task_no_signal_stops_fails_and_a_failed_list_is_not_a_stop(ctr, monkeypatch):
    probe_id, argv = start_argv()
    monkeypatch.setattr(probe, 'STOP_SECONDS', 0.05)
    fake = ctr(statuses=['RUNNING'])
    fake.pid = probe_id
    monkeypatch.setattr(probe.time, 'sleep', lambda s: REAL_SLEEP(0.02))
    res = probe.run_probe(argv, probe_id, 30)
    assert not res['ok'] and res['status'] == 'RUNNING' and res['stopped_by'] is None
    assert fake.calls[-2:] == [['tasks', 'delete', '-f', probe_id], ['containers', 'delete', probe_id]]
    # ctr tasks ls failing while the probe waits says nothing about the task: it is not taken as stopped
    monkeypatch.setattr(probe, 'run', lambda argv, timeout=30: (1, '', 'ctr: connection refused\n'))
    assert probe.task_status(argv[:5], probe_id) == probe.LIST_FAILED
    assert probe._stop(argv[:5], probe_id)[1] is None


def test_a_task_that_is_not_running_fails_and_is_still_removed(ctr):
    probe_id, argv = start_argv()
    fake = ctr(statuses=('STOPPED',))
    fake.pid = probe_id
    res = probe.run_probe(argv, probe_id, 30)
    assert not res['ok'] and res['status'] == 'STOPPED' and res['stopped_by'] is None
    assert not any(c[:2] == ['tasks', 'kill'] for c in fake.calls)
    assert fake.calls[-2:] == [['tasks', 'delete', '-f', probe_id], ['containers', 'delete', probe_id]]


def test_a_task_that_does_not_start_fails_with_ctr_s_words_and_a_leftover_is_named(ctr):
    probe_id, argv = start_argv()
    fake = ctr(run_rc=1, delete=(1, '', 'ctr: container is in use\n'))
    fake.pid = probe_id
    res = probe.run_probe(argv, probe_id, 30)
    assert not res['ok'] and res['rc'] == 1 and 'no kvm' in res['stderr']
    assert res['cleanup_error'] == 'ctr: container is in use'
    assert ['tasks', 'ls'] not in fake.calls


def test_a_missing_image_is_pulled_through_the_hosts_folder(monkeypatch):
    calls = []
    listed = iter([(0, '', ''), (0, 'registry.k8s.io/pause:3.10\n', '')])

    def run(argv, timeout=30):
        calls.append((argv[5:], timeout))
        return next(listed) if argv[5:7] == ['images', 'ls'] else (0, '', '')
    monkeypatch.setattr(probe, 'run', run)
    res = probe.probe_image(dict(OPTS, hosts_dir='/etc/containerd/certs.d', pull_timeout=45), None, pull=True)
    assert res == dict(probe_image='registry.k8s.io/pause:3.10', probe_image_present=True, probe_image_pulled=True,
                       probe_image_pull_error='')
    assert calls[1] == (['images', 'pull', '--hosts-dir', '/etc/containerd/certs.d', 'registry.k8s.io/pause:3.10'],
                        45)
    calls[:] = []
    listed = iter([(0, '', '')] * 3)
    monkeypatch.setattr(probe, 'run', lambda argv, timeout=30: next(listed) if argv[5:7] == ['images', 'ls'] else (
        1, '', 'ctr: failed to resolve reference "x": dial tcp: lookup x: no such host\n'))
    res = probe.probe_image(OPTS, None, pull=True)
    assert res['probe_image_present'] is False and res['probe_image_pulled'] is False
    assert res['probe_image_pull_error'].endswith('no such host')
    assert probe.probe_image(OPTS, None, may_import=False, pull=True)['probe_image_import_skipped'] is True


# ---------------------------------------------------------------- the journal of a containerd that is not ready
JOURNAL = [
    dict(SYSLOG_IDENTIFIER='sh', _PID='412', MESSAGE='site-check: /dev/nvidia0 is missing'),
    dict(SYSLOG_IDENTIFIER='systemd', _PID='1',
         MESSAGE='containerd.service: Control process exited, code=exited, status=1/FAILURE'),
    dict(SYSLOG_IDENTIFIER='containerd', _PID='9', MESSAGE=list(b'bad \xff byte')),
]


def test_a_failed_wait_quotes_the_unit_s_journal(monkeypatch):
    seen = []

    def run(argv, timeout=30):
        seen.append(argv)
        if argv[0] == 'journalctl':
            return 0, ''.join(json.dumps(e) + '\n' for e in JOURNAL) + 'not json\n', ''
        return 0, 'ActiveState=activating\nSubState=auto-restart\nResult=exit-code\n', ''
    monkeypatch.setattr(svc, 'run', run)
    w = svc.wait_ready('containerd', 'ctr', '/s', (1, 7), 0.0, journal_since=1800000000.5)
    assert not w['ok']
    assert w['journal'] == ['sh[412]: site-check: /dev/nvidia0 is missing',
                            'systemd[1]: containerd.service: Control process exited, code=exited, status=1/FAILURE',
                            'containerd[9]: bad \ufffd byte']
    assert w['msg'] == ('containerd not active within 0.0 s (ActiveState=activating SubState=auto-restart '
                        'Result=exit-code); journal of containerd: ' + ' | '.join(w['journal']))
    assert seen[-1] == ['journalctl', '-u', 'containerd', '-o', 'json', '--no-pager', '-n', '15',
                        '--since', '@1800000000.500000']


def test_the_message_quotes_the_unit_s_own_words_before_systemd_s_routine():
    journal = ['sh[379]: site-check: /dev/nvidia0 is missing',
               'systemd[1]: containerd.service: Control process exited, code=exited, status=1/FAILURE',
               "systemd[1]: containerd.service: Failed with result 'exit-code'.",
               'systemd[1]: Failed to start containerd.service - containerd container runtime.',
               'systemd[1]: containerd.service: Scheduled restart job, restart counter is at 1.',
               'systemd[1]: Stopped containerd.service - containerd container runtime.',
               '(modprobe)[1055]: containerd.service: Executable /sbin/modprobe missing, skipping']
    assert svc.telling_lines(journal) == journal[:1] + journal[2:4]
    routine = journal[4:]
    assert svc.telling_lines(routine) == routine  # nothing telling: the last lines as they are
    many = ['containerd[9]: line %d' % i for i in range(10)] + journal[1:3]
    assert svc.telling_lines(many) == many[6:10] + journal[1:3]


def test_the_stopped_containerd_s_farewell_is_left_out(monkeypatch):
    seen = []

    def run(argv, timeout=30):
        seen.append(argv)
        return 0, ''.join(json.dumps(e) + '\n' for e in JOURNAL), ''
    monkeypatch.setattr(svc, 'run', run)
    lines, error = svc.journal_tail('containerd', skip_pid='9')
    assert error is None and lines == ['sh[412]: site-check: /dev/nvidia0 is missing',
                                       'systemd[1]: containerd.service: Control process exited, code=exited, '
                                       'status=1/FAILURE']
    assert seen[-1][-2:] == ['-n', '30']  # twice the lines: the skipped ones do not shorten the tail


def test_an_unreadable_journal_is_said(monkeypatch):
    monkeypatch.setattr(svc, 'run', lambda argv, timeout=30: (
        (1, '', 'No journal files were found.') if argv[0] == 'journalctl' else (0, 'ActiveState=failed\n', '')))
    w = svc.wait_ready('containerd', 'ctr', '/s', (1, 7), 0.0)
    assert w['journal'] == [] and w['msg'].endswith(
        '; journalctl -u containerd failed (rc=1): No journal files were found.')


# ---------------------------------------------------------------- a proxy plugin's socket
DUMP = {'version': 3, 'proxy_plugins': {'nydus': {'type': 'snapshot', 'address': None}},
        'plugins': {'io.containerd.cri.v1.images': {'snapshotter': 'overlayfs'}}}


def nydus_dump(address):
    dump = json.loads(json.dumps(DUMP))
    dump['proxy_plugins']['nydus']['address'] = address
    return dump


def test_nothing_on_the_socket_fails_and_is_required_only_when_used(tmp_path):
    address = str(tmp_path / 'nydus.sock')
    (check,) = proxy.proxy_checks(nydus_dump(address), {'runc': {}})
    assert check[:2] == ('proxy_plugin:nydus', 'fail') and check[3] is False
    assert check[2].startswith('containerd-nydus-grpc does not answer for proxy plugin nydus (type snapshot): socket '
                               '%s does not exist' % address)
    assert check[2].endswith('; used by no runtime handler nor the CRI default')
    (check,) = proxy.proxy_checks(nydus_dump(address), {'kata-qemu-coco-dev': {'snapshotter': 'nydus'}})
    assert check[3] is True and check[2].endswith('; used by runtime kata-qemu-coco-dev')


def test_a_server_that_is_not_grpc_or_not_nydus_is_named(tmp_path):
    address = str(tmp_path / 'a.sock')
    srv = answering(address, b'')
    try:
        assert proxy.socket_answers(address) == (
            False, '%s accepted the connection and closed it without a word (not a gRPC server)' % address)
    finally:
        srv.close()
    os.unlink(address)
    srv = answering(address, b'\x00\x00\x00\x04\x00\x00\x00\x00\x00')  # an HTTP/2 SETTINGS frame: gRPC
    try:
        (check,) = proxy.proxy_checks(nydus_dump(address), {})
    finally:
        srv.close()
    # this test process listens there, and it is not containerd-nydus-grpc
    assert check[1] == 'fail'
    assert ('a gRPC server answers on %s, but the process listening there is' % address) in check[2]
    assert '(pid %d), not containerd-nydus-grpc' % os.getpid() in check[2]
