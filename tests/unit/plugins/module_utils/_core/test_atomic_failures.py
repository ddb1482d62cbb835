# -*- coding: utf-8 -*-
"""The atomic writes and the lock when something goes wrong: a write or a lock
that fails cleans up after itself, stale temporaries are cleaned as far as they
can be, a taken temporary name is skipped, and the special mode bits survive a
rewrite."""

import errno
import io
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import atomic as _atomic
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    TEMP_SUFFIX,
    FileLock,
    atomic_symlink,
    atomic_write,
    atomic_write_stream,
    clean_stale_temps,
)


def open_paths():
    """What the descriptors of this process point at."""
    out = []
    for fd in os.listdir('/proc/self/fd'):
        try:
            out.append(os.readlink('/proc/self/fd/' + fd))
        except OSError:
            pass
    return out


# ------------------------------------------------------------------ mode bits
@pytest.mark.parametrize('mode', [0o4755, 0o2755, 0o6750], ids=oct)
def test_rewriting_a_setuid_or_setgid_file_keeps_its_mode(tmp_path, mode):
    """chown clears S_ISUID and S_ISGID, even for root: the owner must be set before the mode."""
    path = str(tmp_path / 'shim')
    with open(path, 'wb') as f:
        f.write(b'old')
    os.chmod(path, mode)
    atomic_write(path, b'new')
    assert oct(os.stat(path).st_mode & 0o7777) == oct(mode)


@pytest.mark.parametrize('owner', [{}, {'uid': os.getuid()}, {'gid': os.getgid()}])
def test_a_streamed_setuid_file_gets_its_mode_with_or_without_an_owner(tmp_path, owner):
    path = str(tmp_path / 'shim')
    atomic_write_stream(path, io.BytesIO(b'#!/bin/sh\n'), 0o4755, **owner)
    assert oct(os.stat(path).st_mode & 0o7777) == '0o4755'


# ------------------------------------------------------------------ failures
class _FailingReader(io.BytesIO):
    """A stream whose second read fails, as a truncated archive or a dying disk does."""

    def __init__(self, data):
        super().__init__(data)
        self.reads = 0

    def read(self, size=-1):
        self.reads += 1
        if self.reads > 1:
            raise OSError(errno.EIO, 'read failed in the test')
        return super().read(size)


def test_a_copy_that_fails_midway_leaves_the_old_file_and_no_temp(tmp_path):
    path = str(tmp_path / 'kata-kernel')
    with open(path, 'wb') as f:
        f.write(b'old')
    with pytest.raises(OSError, match='read failed in the test'):
        atomic_write_stream(path, _FailingReader(b'x' * 64), chunk=16)
    assert os.listdir(str(tmp_path)) == ['kata-kernel']
    with open(path, 'rb') as f:
        assert f.read() == b'old'
    # and the temporary file's descriptor is closed
    assert not [p for p in open_paths() if p.startswith(str(tmp_path))]


def test_a_lock_that_fails_closes_the_lock_file(tmp_path, monkeypatch):
    """An flock error other than contention (e.g. ENOLCK on a network file system) is raised, no descriptor kept."""
    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, 'No locks available')
    monkeypatch.setattr(_atomic.fcntl, 'flock', no_locks)
    path = str(tmp_path / 'config.toml')
    for timeout in (0, 5):          # no wait, and a wait (bounded by an alarm or polled, whichever is free)
        lock = FileLock(path, timeout)
        with pytest.raises(OSError) as err:
            lock.acquire()
        assert err.value.errno == errno.ENOLCK and lock.fd is None
        assert _atomic.lock_path_for(path) not in open_paths()


# ------------------------------------------------------------------ stale temporaries
def test_cleaning_beside_a_file_in_a_missing_folder_finds_nothing(tmp_path):
    assert clean_stale_temps(str(tmp_path / 'not-yet' / 'config.toml')) == []


def test_a_stale_temp_that_cannot_be_removed_does_not_stop_the_cleanup(tmp_path):
    """A folder with a temporary file's name (unlink fails: EISDIR) is left, the real leftovers go."""
    path = str(tmp_path / 'config.toml')
    stuck = tmp_path / ('.config.toml.aaaa' + TEMP_SUFFIX)
    stuck.mkdir()
    for token in ('0000', 'zzzz'):      # listed before and after the folder
        (tmp_path / ('.config.toml.%s%s' % (token, TEMP_SUFFIX))).write_bytes(b'half')
    removed = clean_stale_temps(path)
    names = ['.config.toml.0000' + TEMP_SUFFIX, '.config.toml.zzzz' + TEMP_SUFFIX]
    assert sorted(os.path.basename(p) for p in removed) == names
    assert os.listdir(str(tmp_path)) == [stuck.name]


# ------------------------------------------------------------------ symlinks
def test_a_symlink_skips_a_temporary_name_already_taken(tmp_path, monkeypatch):
    path = str(tmp_path / 'shim')
    taken = str(tmp_path / ('.shim.taken' + TEMP_SUFFIX))
    with open(taken, 'wb') as f:
        f.write(b'a leftover of a killed run')
    names = iter([taken, str(tmp_path / ('.shim.fresh' + TEMP_SUFFIX))])
    monkeypatch.setattr(_atomic, '_temp_name', lambda p: next(names))
    atomic_symlink(path, 'containerd-shim-kata-v2')
    assert os.readlink(path) == 'containerd-shim-kata-v2'
    with open(taken, 'rb') as f:
        assert f.read() == b'a leftover of a killed run'


def test_a_symlink_gives_up_when_every_temporary_name_is_taken(tmp_path, monkeypatch):
    """Bounded: after 100 taken names an error names the path, rather than a loop without end."""
    taken = str(tmp_path / ('.shim.taken' + TEMP_SUFFIX))
    with open(taken, 'wb') as f:
        f.write(b'x')
    tried = []
    monkeypatch.setattr(_atomic, '_temp_name', lambda p: tried.append(p) or taken)
    path = str(tmp_path / 'shim')
    with pytest.raises(OSError) as err:
        atomic_symlink(path, 'target')
    assert err.value.errno == errno.EEXIST and path in str(err.value)
    assert len(tried) == 100
    assert not os.path.lexists(path)
