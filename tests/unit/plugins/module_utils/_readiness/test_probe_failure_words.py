# -*- coding: utf-8 -*-
"""What a failed probe says: the clean-up of a container that is already gone is no error (real containerd),
a clean-up that fails keeps the last 300 characters of ctr's words (real ctr), a failed pull its last line or
its exit status, a start probe the end of ctr run's output, and the probe's own task found among the node's
other tasks."""

import os
import subprocess

import pytest

from helpers.common import CONTAINERD_1
from helpers.readiness import start_readiness_node, stop_readiness_nodes
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import probe

CTR = os.path.join(os.path.dirname(CONTAINERD_1), 'ctr') if CONTAINERD_1 else None


@pytest.fixture
def containerd(tmp_path):
    """A real containerd on a private socket; its address."""
    started = []
    try:
        yield start_readiness_node(str(tmp_path), started)['address']
    finally:
        stop_readiness_nodes(started)


def run_argv(address, probe_id):
    return [CTR, '--address', address, '-n', 'nodeguard-test', 'run', '--rm', 'example.org/absent:1', probe_id,
            'true']


def test_a_probe_whose_container_never_was_fails_and_leaves_no_clean_up_error(containerd):
    res = probe.run_probe(run_argv(containerd, 'nodeguard-probe-absent'), 'nodeguard-probe-absent', 30)
    assert res['ok'] is False and res['rc'] != 0 and 'not found' in res['stderr']
    # ctr says the container is not found: there is nothing left behind
    assert res['cleanup_error'] == ''


def test_a_clean_up_that_fails_keeps_the_last_300_characters_of_ctr_s_words(tmp_path):
    if CTR is None:
        pytest.fail('no containerd binary: run `make deps`')
    # a socket path longer than a socket's path may be: every ctr call fails at once, naming it
    address = str(tmp_path / ('s' * 300))
    res = probe.run_probe(run_argv(address, 'nodeguard-probe-x'), 'nodeguard-probe-x', 30)
    said = subprocess.run([CTR, '--address', address, '-n', 'nodeguard-test', 'containers', 'delete',
                           'nodeguard-probe-x'], capture_output=True, text=True, check=False)
    assert said.returncode != 0 and len(said.stderr.strip()) > 300
    assert res['cleanup_error'] == said.stderr.strip().splitlines()[-1][-300:]


OPTS = dict(ctr='ctr', address='/run/c.sock', namespace='k8s.io', probe_image='registry.k8s.io/pause:3.10')


def answer_pull(monkeypatch, rc, out, err):
    """ctr answering the image list with nothing and a pull with (rc, out, err)."""
    monkeypatch.setattr(probe, 'run', lambda argv, timeout=30: (0, '', '') if argv[5:7] == ['images', 'ls']
                        else (rc, out, err))


def test_a_pull_that_fails_without_a_word_gives_its_exit_status(monkeypatch):
    answer_pull(monkeypatch, 124, '', '')
    res = probe.probe_image(OPTS, None, pull=True)
    assert res['probe_image_pulled'] is False and res['probe_image_pull_error'] == 'rc=124'


def test_a_pull_that_fails_keeps_the_last_400_characters_of_its_last_line(monkeypatch):
    line = 'ctr: failed to resolve reference: ' + 'x' * 500
    answer_pull(monkeypatch, 1, 'resolving...\n', 'first line\n' + line + '\n\n')
    assert probe.probe_image(OPTS, None, pull=True)['probe_image_pull_error'] == line[-400:]


def test_a_start_probe_that_does_not_start_keeps_the_end_of_ctr_run_s_output(monkeypatch):
    out, err = 'o' * 2500 + 'END\n', 'e' * 2400 + 'ctr: failed to create shim task\n'
    monkeypatch.setattr(probe, 'run', lambda argv, timeout=30: (1, out, err) if argv[5] == 'run' else (0, '', ''))
    res = probe.start_probe(['ctr', '--address', '/run/c.sock', '-n', 'k8s.io', 'run', '-d', 'img', 'p1'], 'p1', 30)
    assert res['ok'] is False and res['stdout'] == out[-2000:] and res['stderr'] == err[-2000:]


TASKS = '''TASK                          PID     STATUS
kube-apiserver-0              1201    RUNNING
crashed-pod                   1302    STOPPED
%s
'''


def test_the_probe_s_own_task_is_found_among_the_node_s_other_tasks(monkeypatch):
    prefix = ['ctr', '--address', '/run/c.sock', '-n', 'k8s.io']
    monkeypatch.setattr(probe, 'run', lambda argv, timeout=30: (0, TASKS % 'nodeguard-probe-1    4242    RUNNING', ''))
    assert probe.task_status(prefix, 'nodeguard-probe-1') == 'RUNNING'
    # not listed (gone): not another task's status
    monkeypatch.setattr(probe, 'run', lambda argv, timeout=30: (0, TASKS % '', ''))
    assert probe.task_status(prefix, 'nodeguard-probe-1') is None
