# -*- coding: utf-8 -*-
"""The load test's bounds: how long each command and the daemon are given,
how often the socket is looked at, how long a kill and the removal of the
private folder keep trying, the precision of ``seconds``, and which run
folders get an overlay on each host layout of /var/run.

The bounds are seconds long; a test that waited them out would take
minutes.  Where the real clock would have to pass, ``Clock`` stands in for
the time module of _preflight: the real clock plus the seconds the test
lets each sleep add, so 20 s of the daemon's time pass in about one.
"""

import errno
import math
import os
import subprocess
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import (
    preflight as _preflight,
    process,
    sandbox,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import load_test

from helpers.preflight import BOOTED, V2_OK, Node, executable, folder


class Clock(object):
    """_preflight's time module: the real clock, plus `skew` seconds.

    steps: {seconds slept: seconds each such sleep adds to the clock}.
    sleep: False to record sleeps without sleeping.
    ms_start: read the clock in whole milliseconds, and the first reading 0.4 ms before that, so that an
    elapsed time has 0.4 ms more than whole milliseconds (its fourth decimal is 4).
    """

    def __init__(self, steps=None, sleep=True, ms_start=False):
        self.steps = dict(steps or {})
        self.real_sleep = sleep
        self.ms_start = ms_start
        self.skew = 0.0
        self.sleeps = []
        self.readings = 0

    def time(self):
        self.readings += 1
        t = time.time() + self.skew
        if self.ms_start:
            t = math.floor(t * 1000) / 1000.0 - (0.0004 if self.readings == 1 else 0.0)
        return t

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        if self.real_sleep:
            time.sleep(seconds)
        self.skew += self.steps.get(seconds, 0.0)


@pytest.fixture
def node(short_tmp):  # noqa: F811  (the fixture imported above)
    return Node(short_tmp)


@pytest.fixture
def capped_popen(monkeypatch):
    """subprocess.Popen whose communicate(timeout) records the timeout asked and waits at most 1 s of it, so
    that a command that hangs is killed by the real code, with its real message, without the real wait."""
    asked = []

    class CappedPopen(subprocess.Popen):
        def communicate(self, input=None, timeout=None):
            if timeout is not None:
                asked.append(timeout)
                timeout = min(timeout, 1.0)
            return super(CappedPopen, self).communicate(input, timeout)
    monkeypatch.setattr(_preflight.subprocess, 'Popen', CappedPopen)
    return asked


# ---------------------------------------------------------------- commands

def test_a_command_run_without_a_timeout_is_killed_after_30_seconds(capped_popen):
    """containerd --version and config dump (the default run_command) are bounded too."""
    rc, out, err = process.run_command(['sh', '-c', 'echo started; exec sleep 60'])
    assert (rc, out, err) == (124, 'started\n', '\n(killed after 30s)')
    assert capped_popen == [30]


def test_the_unshare_probe_is_bounded_by_10_seconds(capped_popen, tmp_path, monkeypatch):
    """An unshare --help that hangs does not hang the load test; what it said before still counts."""
    monkeypatch.setattr(sandbox, 'UNSHARE_FLAGS', {})
    hung = executable(str(tmp_path / 'unshare'), '#!/bin/sh\necho " --kill-child[=<signame>]"\nexec sleep 60\n')
    flags = sandbox.unshare_flags(hung)
    assert capped_popen == [10]
    assert flags == ['--mount', '--net', '--propagation', 'private', '--pid', '--fork', '--kill-child']


def test_ctr_gets_at_least_a_second_when_the_daemon_came_up_at_the_deadline(node, monkeypatch):
    """ctr plugins ls gets the time left of the test, but never less than 1 s: a ctr that hangs is killed
    after that second and the plugin list is read from the log."""
    clock = Clock()
    monkeypatch.setattr(_preflight, 'time', clock)
    real = process.connectable

    def connectable(path):
        up = real(path)
        if up:
            clock.skew += 1000.0     # the deadline has passed when the daemon is seen up
        return up
    monkeypatch.setattr(process, 'connectable', connectable)
    ctr = executable(os.path.join(node.folder, 'ctr-hangs'), '#!/bin/sh\nexec sleep 60\n')
    node.daemon(log=V2_OK + [BOOTED])
    t0 = time.time()
    res = node.test(ctr=ctr)
    assert res.warnings == ['%s plugins ls failed ((killed after 1.0s)); the plugin list was read from the log'
                            % ctr]
    assert res.method == 'log' and res.status == 'ok', res.errors
    assert time.time() - t0 < 15
    assert node.leftovers() == []


# ---------------------------------------------------------------- the daemon's time

def test_without_a_timeout_the_daemon_gets_20_seconds_polled_every_30_ms(node, monkeypatch):
    """load_test's default (the engine's load test passes none): 20 s to answer; the socket is
    looked at every 30 ms meanwhile.  Each poll adds 0.5 s to the clock here."""
    clock = Clock(steps={0.03: 0.5})
    monkeypatch.setattr(_preflight, 'time', clock)
    node.daemon(log=[], listen=False)
    t0 = time.time()
    res = load_test(node.binary, node.config, run_command=node.run_command, ctr=False, workdir=node.folder)
    assert res.status == 'timeout'
    assert res.errors[0].startswith('%s: containerd 2.1.9 did not answer within 20.0s; last log lines:'
                                    % node.config)
    assert 20 <= res.seconds < 40
    polls = [s for s in clock.sleeps if s != 0.02]      # 0.02: the kill's own pace
    assert polls and set(polls) == {0.03}
    assert time.time() - t0 < 30
    assert node.leftovers() == []


@pytest.mark.parametrize('verdict', ['ok', 'failed', 'refused', 'cannot_run'])
def test_seconds_are_whole_milliseconds_whatever_the_verdict(node, monkeypatch, verdict):
    """Started 0.4 ms off a whole millisecond, the test's seconds are still given in milliseconds: on a
    pass, a daemon that exits, a file config dump refuses before any start, and a test that cannot run."""
    clock = Clock(ms_start=True)
    monkeypatch.setattr(_preflight, 'time', clock)
    config = node.config
    if verdict == 'ok':
        node.daemon(log=V2_OK + [BOOTED])
    elif verdict == 'failed':
        node.daemon(log=['time="t" level=fatal msg="bad"'], exit=1)
    elif verdict == 'refused':
        config = node.write('bad.toml', 'version = = 3\n')
        node.dump = (1, '', 'containerd: failed to load TOML\n')
    else:
        os.chmod(node.binary, 0o644)
    res = node.test(config=config)
    assert res.status == {'refused': 'failed'}.get(verdict, verdict), res.errors
    assert 0 <= res.seconds < 15
    assert res.seconds == round(res.seconds, 3), res.seconds


# ---------------------------------------------------------------- the kill

def test_a_kill_gives_up_after_10_seconds(monkeypatch):
    """A process the group's SIGKILL does not reach (not the group leader here) is waited for 10 s by
    default, no longer.  Each 20 ms pause adds 0.5 s to the clock."""
    clock = Clock(steps={0.02: 0.5})
    monkeypatch.setattr(process, 'time', clock)
    stuck = subprocess.Popen(['sleep', '60'])
    try:
        t0 = clock.time()
        process.kill_group(stuck)
        took = clock.time() - t0
        assert 10 < took < 11
        assert stuck.poll() is None
    finally:
        stuck.kill()
        stuck.wait()


# ---------------------------------------------------------------- the private folders

@pytest.fixture
def busy(monkeypatch):
    """Folders named 'busy' cannot be removed (EBUSY, as a mount point still in use) while
    busy['left'] > 0 (each try counts down); a negative count: never."""
    state = {'left': -1, 'tries': 0}
    real = os.rmdir

    def rmdir(path, *a, **kw):
        if os.path.basename(path) == 'busy' and state['left'] != 0:
            state['tries'] += 1
            if state['left'] > 0:
                state['left'] -= 1
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), path)
        return real(path, *a, **kw)
    monkeypatch.setattr(os, 'rmdir', rmdir)
    return state


def test_a_stale_folder_that_cannot_be_removed_whole_is_no_error(tmp_path, busy):
    """What can go goes; the others are removed too, and the load test goes on."""
    old = [folder(tmp_path, 3600) for _i in range(3)]
    os.mkdir(os.path.join(old[1], 'busy'))
    os.utime(old[1], (time.time() - 3600, time.time() - 3600))
    assert sorted(sandbox.remove_stale(str(tmp_path))) == sorted(old)
    assert not os.path.exists(old[0]) and not os.path.exists(old[2])
    assert os.listdir(old[1]) == ['busy']


def test_removing_the_private_folder_is_tried_for_5_seconds_then_left(tmp_path, busy, monkeypatch):
    """Every 0.1 s, 50 times; then what can go goes, and the load test ends without an error."""
    clock = Clock(sleep=False)
    monkeypatch.setattr(sandbox, 'time', clock)
    d = tmp_path / 'nodeguard-preflight-x'
    (d / 'busy').mkdir(parents=True)
    (d / 'files').mkdir()
    (d / 'containerd.log').write_text('x')
    sandbox.remove_folder(str(d))
    assert clock.sleeps == [0.1] * 50
    assert busy['tries'] == 51
    assert os.listdir(str(d)) == ['busy']


def test_a_folder_busy_for_a_moment_is_removed_whole(tmp_path, busy, monkeypatch):
    clock = Clock(sleep=False)
    monkeypatch.setattr(sandbox, 'time', clock)
    busy['left'] = 3
    d = tmp_path / 'nodeguard-preflight-x'
    (d / 'busy').mkdir(parents=True)
    sandbox.remove_folder(str(d))
    assert not d.exists()
    assert clock.sleeps == [0.1] * 3


# ---------------------------------------------------------------- /run and /var/run

@pytest.mark.parametrize('isdir,islink,real,covered', [
    (True, True, '/run', ['/run']),              # a link to /run (most distributions)
    (True, False, '/var/run', ['/run', '/var/run']),  # a folder of its own
    (False, False, '/var/run', ['/run']),        # no /var/run
    (True, False, '/run', ['/run']),             # /run by another way (a linked /var)
    (True, True, '/srv/run', ['/run']),          # a link elsewhere: a link is never covered
])
def test_each_run_folder_is_covered_once(node, monkeypatch, isdir, islink, real, covered):
    """Whatever containerd writes in /run, and in a /var/run that is not /run, stays in the namespace."""
    path = _preflight.os.path
    real_isdir, real_islink, real_realpath = path.isdir, path.islink, path.realpath
    monkeypatch.setattr(path, 'isdir', lambda p: isdir if p == '/var/run' else real_isdir(p))
    monkeypatch.setattr(path, 'islink', lambda p: islink if p == '/var/run' else real_islink(p))
    monkeypatch.setattr(path, 'realpath', lambda p, *a, **kw: real if p == '/var/run' else real_realpath(p, *a, **kw))
    given = []

    class Stop(Exception):
        pass

    def script(sb, binary, config_path, run_dirs, tools):
        given.append(list(run_dirs))
        raise Stop()
    monkeypatch.setattr(sandbox, 'setup_script', script)
    with pytest.raises(Stop):
        node.test()
    assert given == [covered]
    assert node.leftovers() == []
