# -*- coding: utf-8 -*-
"""The start probe's clock: the task is looked at 0.3 s after ``ctr run`` returned, a stop is looked for every
0.1 s, SIGTERM has 10 s and SIGKILL 5 s more, and the times reported are the probe's own, in milliseconds.

ctr is answered by the test on a virtual clock (whole microseconds, so deadlines are met exactly): a real task
would make these tests take the 15 s they measure. The same probes against real containerd are in
tests/standins/test_sandbox_probes.py."""

import types

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import probe

OPTS = dict(ctr='ctr', address='/run/c.sock', namespace='k8s.io', probe_image='registry.k8s.io/pause:3.10',
            probe_command=[], pass_config_path=True)
RUNC = dict(runtime_type='io.containerd.runc.v2')
START = 5000 * 10 ** 6  # the virtual clock's first reading, in microseconds: far from zero, as a node's uptime


def micro(seconds):
    return int(round(seconds * 10 ** 6))


class Node(object):
    """ctr on a virtual clock. ctr run takes run_seconds, every other call call_seconds; the task stops
    term_after seconds after SIGTERM (None: it ignores SIGTERM) and at once on SIGKILL unless kill_stops is
    False. calls: (words, microseconds at the call's start)."""

    def __init__(self, run_seconds=0.0, call_seconds=0.0, term_after=0.0, kill_stops=True):
        self.now = START
        self.run_us, self.call_us = micro(run_seconds), micro(call_seconds)
        self.term_after, self.kill_stops = term_after, kill_stops
        self.stops_at = None
        self.calls = []
        self.pid = None

    def monotonic(self):
        return self.now / 10.0 ** 6

    def sleep(self, seconds):
        self.now += micro(seconds)

    def ctr(self, argv, timeout=30):
        words = argv[5:]
        self.calls.append((words, self.now))
        self.now += self.run_us if words[0] == 'run' else self.call_us
        if words[:2] == ['tasks', 'kill']:
            self._signalled(words[3])
        if words[:2] == ['tasks', 'ls']:
            stopped = self.stops_at is not None and self.now >= self.stops_at
            return 0, 'TASK    PID    STATUS\n%s    4242    %s\n' % (self.pid, 'STOPPED' if stopped else 'RUNNING'), ''
        return 0, '', ''

    def _signalled(self, signal):
        if signal == 'SIGTERM' and self.term_after is not None:
            self.stops_at = self.now + micro(self.term_after)
        if signal == 'SIGKILL' and self.kill_stops:
            self.stops_at = self.now

    def at(self, words):
        """The virtual times (s) at which calls starting with words began."""
        return [t / 10.0 ** 6 for w, t in self.calls if w[:len(words)] == words]

    def looks_after(self, words, until=None):
        """The virtual times (s) of the status looks (tasks ls) made after the call starting with words (and
        before the one starting with until)."""
        order = [w for w, _t in self.calls]
        first = next(i for i, w in enumerate(order) if w[:len(words)] == words)
        last = next((i for i, w in enumerate(order) if until and w[:len(until)] == until), len(order))
        return [t / 10.0 ** 6 for w, t in self.calls[first + 1:last] if w[:2] == ['tasks', 'ls']]


@pytest.fixture
def node(monkeypatch):
    def make(**kw):
        fake = Node(**kw)
        monkeypatch.setattr(probe, 'run', fake.ctr)
        clock = types.SimpleNamespace(monotonic=fake.monotonic, sleep=fake.sleep, time=lambda: 1764810000.0)
        monkeypatch.setattr(probe, 'time', clock)
        probe_id, argv, _notes = probe.probe_argv('runc', RUNC, dict(name='runc'), OPTS)
        fake.pid = probe_id
        return fake, probe_id, argv
    return make


def test_the_task_is_looked_at_0_3_s_after_it_started_and_the_times_are_the_probe_s_own(node):
    fake, probe_id, argv = node(run_seconds=1.23456, call_seconds=0.00035, term_after=0.0)
    res = probe.start_probe(argv, probe_id, 30)
    assert res['ok'] and res['status'] == 'RUNNING' and res['stopped_by'] == 'SIGTERM'
    # ctr run's own duration, in milliseconds, not a clock reading
    assert res['seconds'] == 1.235
    (run_started,) = fake.at(['run'])
    first_look = fake.at(['tasks', 'ls'])[0]
    assert first_look - (run_started + 1.23456) == pytest.approx(0.3, abs=1e-6)
    # SIGTERM sent, the task gone at the first look: two ctr calls of 0.35 ms
    assert res['stop_seconds'] == 0.001


def test_a_stop_is_looked_for_every_0_1_s(node):
    fake, probe_id, argv = node(term_after=0.25)
    res = probe.start_probe(argv, probe_id, 30)
    assert res['ok'] and res['stopped_by'] == 'SIGTERM'
    (term,) = fake.at(['tasks', 'kill', '-s', 'SIGTERM'])
    looks = [t - term for t in fake.looks_after(['tasks', 'kill', '-s', 'SIGTERM'])]
    assert looks == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert res['stop_seconds'] == 0.3


def test_sigterm_has_10_s_looked_at_100_times_then_sigkill(node):
    fake, probe_id, argv = node(term_after=None)
    res = probe.start_probe(argv, probe_id, 30)
    assert res['ok'] and res['stopped_by'] == 'SIGKILL'
    (term,) = fake.at(['tasks', 'kill', '-s', 'SIGTERM'])
    (kill,) = fake.at(['tasks', 'kill', '-s', 'SIGKILL'])
    assert kill - term == 10.0
    # at 0, 0.1 ... 9.9 s: the look that would fall on the deadline is SIGKILL's
    assert len(fake.looks_after(['tasks', 'kill', '-s', 'SIGTERM'], until=['tasks', 'kill', '-s', 'SIGKILL'])) == 100
    assert res['stop_seconds'] == 10.0


def test_a_task_no_signal_stops_fails_after_15_s(node):
    fake, probe_id, argv = node(call_seconds=0.00035, term_after=None, kill_stops=False)
    res = probe.start_probe(argv, probe_id, 30)
    assert not res['ok'] and res['status'] == 'RUNNING' and res['stopped_by'] is None
    (term,) = fake.at(['tasks', 'kill', '-s', 'SIGTERM'])
    (kill,) = fake.at(['tasks', 'kill', '-s', 'SIGKILL'])
    (cleanup,) = fake.at(['tasks', 'delete'])
    assert 10.0 <= kill - term < 10.2
    assert 15.0 <= cleanup - term < 15.3
    # from SIGTERM to giving up, in milliseconds
    assert res['stop_seconds'] == round(cleanup - term, 3)
    assert res['stop_seconds'] != round(cleanup - term, 4)  # the clock had a fraction of a millisecond to drop
