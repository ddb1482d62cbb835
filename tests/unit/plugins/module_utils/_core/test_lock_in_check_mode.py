# -*- coding: utf-8 -*-
"""FileLock in check mode (create=False): it never makes a lock file, but where one exists it takes the lock
as an ordinary run does, so a check-mode task still waits for a writer that holds it."""

import fcntl
import os
import subprocess
import sys

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    FileLock,
    LockTimeout,
    lock_path_for,
)

# tries the lock the way a second nodeguard task would; prints whether it got it
TRY_LOCK = r'''
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("free")
except OSError:
    print("held")
'''


def _other_task_sees(path):
    out = subprocess.run([sys.executable, '-c', TRY_LOCK, lock_path_for(path)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return out.strip()


@pytest.mark.parametrize('timeout', [0, 5], ids=['polling', 'blocking'])
def test_check_mode_takes_an_existing_lock_file(tmp_path, timeout):
    path = str(tmp_path / 'config.toml')
    with FileLock(path, 5):   # an earlier run left its lock file
        pass
    assert os.path.exists(lock_path_for(path))
    lock = FileLock(path, timeout, create=False)
    with lock:
        assert lock.fd is not None
        # the descriptor is open for reading and writing, as the kernel needs for flock
        assert fcntl.fcntl(lock.fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR
        assert _other_task_sees(path) == 'held'
    assert lock.fd is None
    assert _other_task_sees(path) == 'free'


def test_check_mode_waits_for_a_writer_that_holds_the_lock(tmp_path):
    path = str(tmp_path / 'config.toml')
    with FileLock(path, 5):
        # held by this process through another descriptor: a second open file description is refused
        with pytest.raises(LockTimeout):
            FileLock(path, 0.2, create=False).acquire()


def test_check_mode_leaves_no_lock_file_where_there_was_none(tmp_path):
    path = str(tmp_path / 'config.toml')
    lock = FileLock(path, 5, create=False)
    with lock:
        assert lock.fd is None
    assert os.listdir(str(tmp_path)) == []
