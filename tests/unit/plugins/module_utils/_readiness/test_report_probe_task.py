# -*- coding: utf-8 -*-
"""The verdict of a start probe (the default: the task started detached through the handler, seen running,
stopped, removed) as the readiness report words it: each outcome probe.start_probe can return, with the
daemon side answered as in test_report.py."""

import pytest

from helpers.report_node import Node


@pytest.fixture
def node(monkeypatch, tmp_path):
    return Node(monkeypatch, tmp_path)


def start_result(**kw):
    """What probe.start_probe returns for a task that started, was seen running and stopped by SIGTERM."""
    res = dict(kind='start', ok=True, rc=0, seconds=0.5, stdout='', stderr='', status='RUNNING',
               stopped_by='SIGTERM', stop_seconds=0.12, cleanup_error='')
    res.update(kw)
    return res


def probe_check(node, res):
    node.probe_results = {'runc': res}
    report = node.report()
    check, = [c for c in report['checks'] if c['name'] == 'probe:runc']
    return check['status'], check['reason']


def test_a_task_seen_running_and_stopped_passes_and_says_how_it_stopped(node):
    assert probe_check(node, start_result()) == (
        'pass', 'probe task (img) started through runc in 0.50 s, seen running, stopped by SIGTERM in 0.12 s')
    assert probe_check(node, start_result(stopped_by='SIGKILL', stop_seconds=10.25)) == (
        'pass', 'probe task (img) started through runc in 0.50 s, seen running, stopped by SIGKILL in 10.25 s')


def test_a_task_neither_signal_stopped_fails_as_seen_running_but_not_stopped(node):
    res = start_result(ok=False, stopped_by=None, stop_seconds=15.3)
    assert probe_check(node, res) == (
        'fail', 'probe task (img) started through runc in 0.50 s, seen running, not stopped by SIGTERM nor SIGKILL')


def test_a_container_left_behind_is_named_after_the_verdict(node):
    res = start_result(cleanup_error='ctr: cannot delete a non stopped container')
    assert probe_check(node, res) == (
        'pass', 'probe task (img) started through runc in 0.50 s, seen running, stopped by SIGTERM in 0.12 s; '
                'its container could not be removed: ctr: cannot delete a non stopped container')


@pytest.mark.parametrize('rc', [1, 124])
def test_a_task_that_did_not_start_quotes_ctrs_last_line(node, rc):
    res = start_result(ok=False, rc=rc, status=None, stopped_by=None, stop_seconds=None,
                       stderr='time="x" level=info\nctr: failed to create shim task: OCI runtime create failed\n')
    assert probe_check(node, res) == (
        'fail', 'probe task (img) did not start through runc: rc=%d ctr: failed to create shim task: OCI runtime '
                'create failed' % rc)


@pytest.mark.parametrize('status, said', [('STOPPED', 'STOPPED'), ('CREATED', 'CREATED'), (None, 'gone')])
def test_a_task_that_died_at_once_says_what_became_of_it(node, status, said):
    res = start_result(ok=False, status=status, stopped_by=None, stop_seconds=None)
    assert probe_check(node, res) == (
        'fail', 'probe task (img) started through runc but was not running 0.3 s later (status %s)' % said)
