# -*- coding: utf-8 -*-
"""Every ctr call of the probes is bounded (ctr on a dead or stuck socket must not
hang the readiness check): the image calls, the probe container, and its clean-up."""

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import probe

OPTS = dict(ctr='/usr/bin/ctr', address='/run/containerd/containerd.sock', namespace='nodeguard',
            probe_image='localhost/ng-probe:latest')
PREFIX = ['/usr/bin/ctr', '--address', '/run/containerd/containerd.sock', '-n', 'nodeguard']


class Ctr(object):
    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, argv, timeout=30):
        self.calls.append((argv[5:], timeout))
        for words, answer in self.answers:
            if argv[5:5 + len(words)] == words:
                return answer() if callable(answer) else answer
        return 0, '', ''


def test_the_image_calls_are_bounded_the_import_longest(monkeypatch, tmp_path):
    archive = tmp_path / 'probe.tar'
    archive.write_text('')
    listed = iter([(0, '', ''), (0, 'localhost/ng-probe:latest\n', '')])
    ctr = Ctr([(['images', 'ls'], lambda: next(listed))])
    monkeypatch.setattr(probe, 'run', ctr)
    assert probe.probe_image(OPTS, str(archive))['probe_image_present'] is True
    assert ctr.calls == [(['images', 'ls', '-q'], 30), (['images', 'import', str(archive)], 120),
                         (['images', 'ls', '-q'], 30)]


def test_a_probe_that_timed_out_is_killed_and_deleted_each_call_bounded(monkeypatch):
    sleeps = []
    monkeypatch.setattr(probe.time, 'sleep', sleeps.append)
    ctr = Ctr([(['run'], (124, '', 'killed after 7s'))])
    monkeypatch.setattr(probe, 'run', ctr)
    res = probe.run_probe(PREFIX + ['run', '--rm', 'img', 'p1', 'true'], 'p1', 7)
    assert res['ok'] is False and res['rc'] == 124 and 0 <= res['seconds'] < 5
    assert ctr.calls == [(['run', '--rm', 'img', 'p1', 'true'], 7), (['tasks', 'kill', '-s', 'SIGKILL', 'p1'], 15),
                         (['tasks', 'delete', '-f', 'p1'], 15), (['containers', 'delete', 'p1'], 15)]
    assert sleeps == [0.5]  # the killed task's exit is reaped before the delete


def test_a_start_probe_s_looks_stop_and_clean_up_are_bounded(monkeypatch):
    monkeypatch.setattr(probe.time, 'sleep', lambda s: None)
    statuses = iter(['RUNNING', 'STOPPED'])
    ctr = Ctr([(['tasks', 'ls'], lambda: (0, 'TASK PID STATUS\np1 42 %s\n' % next(statuses), ''))])
    monkeypatch.setattr(probe, 'run', ctr)
    res = probe.run_probe(PREFIX + ['run', '-d', '--null-io', 'img', 'p1'], 'p1', 7)
    assert res['ok'] is True and res['stopped_by'] == 'SIGTERM'
    assert ctr.calls == [(['run', '-d', '--null-io', 'img', 'p1'], 7), (['tasks', 'ls'], 15),
                         (['tasks', 'kill', '-s', 'SIGTERM', 'p1'], 15), (['tasks', 'ls'], 15),
                         (['tasks', 'delete', '-f', 'p1'], 15), (['containers', 'delete', 'p1'], 15)]


def test_a_pull_without_its_own_bound_has_two_minutes(monkeypatch):
    listed = iter([(0, '', ''), (0, 'localhost/ng-probe:latest\n', '')])
    ctr = Ctr([(['images', 'ls'], lambda: next(listed))])
    monkeypatch.setattr(probe, 'run', ctr)
    assert probe.probe_image(OPTS, None, pull=True)['probe_image_pulled'] is True
    assert ctr.calls[1] == (['images', 'pull', 'localhost/ng-probe:latest'], 120)
