# -*- coding: utf-8 -*-
"""FileLock: a blocking flock bounded by an alarm (main thread), polling elsewhere.

Another process holds the lock through a real flock on the same lock file,
as a second nodeguard task on the node would.
"""

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import atomic as _atomic
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    FileLock,
    LockTimeout,
    lock_path_for,
)

HOLDER = r'''
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
'''


def hold(path, seconds):
    """A process that holds the lock of path for seconds; returns once it holds it."""
    proc = subprocess.Popen([sys.executable, '-c', HOLDER, lock_path_for(path), str(seconds)],
                            stdout=subprocess.PIPE, universal_newlines=True)
    assert proc.stdout.readline().strip() == 'locked'
    return proc


def holder_of(path):
    """True when some process holds the lock (a LOCK_NB probe on a fresh descriptor)."""
    fd = os.open(lock_path_for(path), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.fixture
def free_timer(monkeypatch):
    """No interval timer running (pytest-timeout arms one), and a record of
    which wait FileLock used; the caller's timer is put back afterwards."""
    handler = signal.getsignal(signal.SIGALRM)
    remaining, interval = signal.setitimer(signal.ITIMER_REAL, 0)
    used = []
    real_until, real_polling = _atomic._flock_until, _atomic._flock_polling
    monkeypatch.setattr(_atomic, '_flock_until', lambda *a: used.append('alarm') or real_until(*a))
    monkeypatch.setattr(_atomic, '_flock_polling', lambda *a: used.append('polling') or real_polling(*a))
    yield used
    signal.signal(signal.SIGALRM, handler)
    if remaining:
        signal.setitimer(signal.ITIMER_REAL, remaining, interval)


def test_timeout_names_the_lock_and_restores_the_alarm(tmp_path, free_timer):
    path = str(tmp_path / 'config.toml')
    proc = hold(path, 30)
    marker = []
    previous = signal.signal(signal.SIGALRM, lambda *a: marker.append(1))
    try:
        with pytest.raises(LockTimeout) as err:
            FileLock(path, 0.5).acquire()
        assert lock_path_for(path) in str(err.value) and 'lock_timeout' in str(err.value)
        # our alarm is gone and the caller's handler is back
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
        assert signal.getsignal(signal.SIGALRM) is not None
        os.kill(os.getpid(), signal.SIGALRM)
        time.sleep(0.05)
        assert marker == [1]
        assert free_timer == ['alarm']
    finally:
        signal.signal(signal.SIGALRM, previous)
        proc.kill()
        proc.wait()


def test_waiter_gets_the_lock_when_the_holder_lets_go(tmp_path, free_timer):
    path = str(tmp_path / 'config.toml')
    proc = hold(path, 1.5)
    t0 = time.monotonic()
    lock = FileLock(path, 30).acquire()
    elapsed = time.monotonic() - t0
    try:
        assert proc.wait() == 0  # the holder finished before we got the lock
        # waited is the time spent waiting, in seconds, as measured around the call
        assert 0.8 < lock.waited <= elapsed + 0.01 and elapsed - lock.waited < 0.3
        assert holder_of(path)
    finally:
        lock.release()
    assert not holder_of(path)
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    assert free_timer == ['alarm']


def test_threads_poll_and_exclude_each_other(tmp_path):
    """Off the main thread there is no alarm: the polling path must still exclude."""
    path = str(tmp_path / 'config.toml')
    inside = []
    overlaps = []
    errors = []

    def worker():
        try:
            for dummy in range(5):
                with FileLock(path, 30):
                    inside.append(1)
                    if len(inside) > 1:
                        overlaps.append(len(inside))
                    time.sleep(0.01)
                    inside.pop()
        except Exception as exc:  # reported below, not swallowed
            errors.append(exc)

    threads = [threading.Thread(target=worker) for dummy in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and overlaps == []


def test_thread_times_out_cleanly(tmp_path):
    path = str(tmp_path / 'config.toml')
    proc = hold(path, 30)
    outcome = []
    try:
        def worker():
            try:
                FileLock(path, 0.3).acquire()
                outcome.append('locked')
            except LockTimeout:
                outcome.append('timeout')
        t = threading.Thread(target=worker)
        t0 = time.monotonic()
        t.start()
        t.join(10)
        elapsed = time.monotonic() - t0
        assert outcome == ['timeout']
        assert 0.28 <= elapsed < 5  # it polled for its whole timeout, not less
    finally:
        proc.kill()
        proc.wait()


def test_busy_timer_falls_back_to_polling(tmp_path, free_timer):
    """A caller's running interval timer is left alone (no blocking wait then)."""
    path = str(tmp_path / 'config.toml')
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    signal.setitimer(signal.ITIMER_REAL, 60)
    proc = hold(path, 0.4)
    try:
        with FileLock(path, 30) as lock:
            assert lock.fd is not None
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < remaining <= 60
        assert fired == []
        assert free_timer == ['polling']
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        proc.kill()
        proc.wait()


def test_polling_sleeps_in_short_steps(tmp_path, monkeypatch):
    """The polling wait sleeps in short steps, so a waiter gets the lock soon after its
    holder lets go. (The lock file's mode: test_atomic_files.py, where FileLock creates it.)"""
    path = str(tmp_path / 'config.toml')
    proc = hold(path, 0.3)
    naps = []
    real_sleep = time.sleep
    monkeypatch.setattr(_atomic.time, 'sleep', lambda s: naps.append(s) or real_sleep(s))
    try:
        fd = os.open(lock_path_for(path), os.O_RDWR)
        try:
            assert _atomic._flock_polling(fd, 30) is True
        finally:
            os.close(fd)
    finally:
        proc.kill()
        proc.wait()
    assert naps and all(0 < s <= 0.05 for s in naps), naps


def test_zero_timeout_does_not_wait(tmp_path, free_timer):
    path = str(tmp_path / 'config.toml')
    proc = hold(path, 30)
    try:
        t0 = time.monotonic()
        with pytest.raises(LockTimeout):
            FileLock(path, 0).acquire()
        assert time.monotonic() - t0 < 5
        assert free_timer == ['polling']   # no alarm of 0 seconds (that would block for ever)
    finally:
        proc.kill()
        proc.wait()
