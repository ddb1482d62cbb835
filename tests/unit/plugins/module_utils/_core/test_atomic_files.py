# -*- coding: utf-8 -*-
"""The atomic write's helpers for files too big to hold and for what killed runs leave behind."""

import errno
import io
import os
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import atomic as _atomic
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    TEMP_SUFFIX,
    atomic_write,
    atomic_write_stream,
    clean_stale_temps,
    read_bytes,
)


class _RecordingReader(io.BytesIO):
    """A stream that remembers the size of every read asked of it."""

    def __init__(self, data):
        super().__init__(data)
        self.asked = []

    def read(self, size=-1):
        self.asked.append(size)
        return super().read(size)


def test_stream_is_copied_in_bounded_chunks(tmp_path):
    # 3 MiB and a bit: a kata payload file is copied 1 MiB at a time, never read whole
    data = os.urandom(3 * (1 << 20) + 17)
    src = _RecordingReader(data)
    dest = tmp_path / 'shim'
    atomic_write_stream(str(dest), src, mode=0o755)
    assert dest.read_bytes() == data
    assert oct(dest.stat().st_mode & 0o777) == '0o755'
    assert all(0 < size <= 1 << 20 for size in src.asked), src.asked
    assert len(src.asked) <= 6, len(src.asked)   # 4 chunks and the empty read that ends the copy
    assert [n for n in os.listdir(str(tmp_path)) if n.endswith(TEMP_SUFFIX)] == []


def _temp_beside(path, age):
    """A temporary file as a killed write of path leaves it (the engine's own naming), age seconds old."""
    tmp = _atomic._temp_name(path)
    with open(tmp, 'wb') as f:
        f.write(b'half-written')
    then = time.time() - age
    os.utime(tmp, (then, then))
    return tmp


def test_only_temps_older_than_the_limit_are_removed(tmp_path):
    path = str(tmp_path / 'config.toml')
    atomic_write(path, b'version = 2\n')
    old = _temp_beside(path, 7200)
    fresh = _temp_beside(path, 5)
    other = _temp_beside(str(tmp_path / 'other.toml'), 7200)   # another file's temp
    assert clean_stale_temps(path, older_than=3600) == [old]
    assert os.path.exists(fresh) and os.path.exists(other)
    # the default (under the lock: no live writer of ours) removes every temp of this file
    assert clean_stale_temps(path) == [fresh]
    assert os.path.exists(other)
    with open(path, 'rb') as f:
        assert f.read() == b'version = 2\n'


def test_read_bytes_is_none_only_for_a_missing_file(tmp_path):
    assert read_bytes(str(tmp_path / 'missing.toml')) is None
    (tmp_path / 'empty.toml').write_bytes(b'')
    assert read_bytes(str(tmp_path / 'empty.toml')) == b''
    # a folder where the config should be is an error to report, not "no config"
    (tmp_path / 'config.toml').mkdir()
    with pytest.raises(IsADirectoryError):
        read_bytes(str(tmp_path / 'config.toml'))


@pytest.mark.parametrize('code', [errno.EPERM, errno.EACCES, errno.EIO])
def test_read_bytes_reports_other_errors(monkeypatch, tmp_path, code):
    def refuse(path, mode='r'):
        raise OSError(code, os.strerror(code), path)
    monkeypatch.setattr(_atomic, 'open', refuse, raising=False)
    with pytest.raises(OSError) as err:
        read_bytes(str(tmp_path / 'config.toml'))
    assert err.value.errno == code


def test_rewrite_keeps_owner_and_a_new_file_is_the_writers(tmp_path):
    path = str(tmp_path / 'config.toml')
    atomic_write(path, b'version = 2\n')
    st = os.stat(path)
    assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())   # a new file is the writer's
    assert st.st_mode & 0o777 == 0o644                             # and readable by all, as containerd's own
    os.chown(path, 1234, 2345)
    atomic_write(path, b'version = 3\n')
    st = os.stat(path)
    assert (st.st_uid, st.st_gid) == (1234, 2345)                 # a rewrite keeps the owner
    atomic_write(path, b'version = 3\n', uid=3456)
    st = os.stat(path)
    assert (st.st_uid, st.st_gid) == (3456, 2345)                 # an owner asked for wins, group kept


def test_stream_sets_only_the_owner_asked_for(tmp_path):
    new = str(tmp_path / 'new')
    atomic_write_stream(new, io.BytesIO(b'x'))
    assert (os.stat(new).st_uid, os.stat(new).st_gid) == (os.getuid(), os.getgid())
    asked = str(tmp_path / 'asked')
    atomic_write_stream(asked, io.BytesIO(b'x'), uid=1234, gid=2345)
    assert (os.stat(asked).st_uid, os.stat(asked).st_gid) == (1234, 2345)


def test_symlink_is_made_beside_its_path(tmp_path, monkeypatch):
    made = []
    real_symlink = os.symlink

    def recording_symlink(target, link):
        made.append(link)
        return real_symlink(target, link)
    monkeypatch.setattr(os, 'symlink', recording_symlink)
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / 'opt' / 'kata' / 'bin'
    folder.mkdir(parents=True)
    _atomic.atomic_symlink(str(folder / 'shim'), 'containerd-shim-kata-v2')
    assert os.readlink(str(folder / 'shim')) == 'containerd-shim-kata-v2'
    # the temporary link is made in the link's own folder (one rename, same file system)
    assert [os.path.dirname(link) for link in made] == [str(folder)]


@pytest.mark.parametrize('uid', [1, 1234])
def test_a_new_file_gets_the_owner_asked_for_and_the_writers_group(tmp_path, uid):
    path = str(tmp_path / 'new.toml')
    atomic_write(path, b'version = 2\n', uid=uid)
    assert (os.stat(path).st_uid, os.stat(path).st_gid) == (uid, os.getgid())
    other = str(tmp_path / 'other.toml')
    atomic_write(other, b'version = 2\n', gid=uid)
    assert (os.stat(other).st_uid, os.stat(other).st_gid) == (os.getuid(), uid)


@pytest.mark.parametrize('write', [
    lambda path: atomic_write(path, b'new'),
    lambda path: atomic_write_stream(path, io.BytesIO(b'new')),
    lambda path: _atomic.atomic_symlink(path, 'target'),
])
def test_a_failed_rename_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch, write):
    path = str(tmp_path / 'config.toml')
    with open(path, 'wb') as f:
        f.write(b'old')

    def refuse(src, dst):
        raise OSError(errno.EXDEV, 'rename refused by the test')
    monkeypatch.setattr(os, 'rename', refuse)
    with pytest.raises(OSError, match='refused by the test'):
        write(path)
    assert os.listdir(str(tmp_path)) == ['config.toml']
    with open(path, 'rb') as f:
        assert f.read() == b'old'


def test_remove_quietly_ignores_a_file_already_gone(tmp_path):
    gone = str(tmp_path / 'gone')
    _atomic.remove_quietly(gone)        # no error
    (tmp_path / 'there').write_bytes(b'x')
    _atomic.remove_quietly(str(tmp_path / 'there'))
    assert os.listdir(str(tmp_path)) == []


def test_check_mode_lock_of_a_never_locked_file_waits_for_nothing(tmp_path):
    path = str(tmp_path / 'config.toml')
    with _atomic.FileLock(path, 5, create=False) as lock:
        assert lock.waited == 0.0 and lock.fd is None
    assert not os.path.exists(_atomic.lock_path_for(path))   # check mode leaves no lock file
    with _atomic.FileLock(path, 5) as lock:
        assert lock.fd is not None
    assert oct(os.stat(_atomic.lock_path_for(path)).st_mode & 0o777) == '0o600'


# ------------------------------------------------------------------ where the temporary file is made and which folder is flushed
def test_the_temporary_file_is_made_in_the_targets_folder(tmp_path, monkeypatch):
    folder = tmp_path / 'etc'
    folder.mkdir()
    elsewhere = tmp_path / 'cwd'
    elsewhere.mkdir()
    monkeypatch.chdir(str(elsewhere))
    tmp = _atomic.write_temp(str(folder / 'config.toml'), b'version = 2\n')
    assert os.path.dirname(tmp) == str(folder)
    assert os.listdir(str(elsewhere)) == []


def test_the_rename_flushes_the_targets_folder(tmp_path, monkeypatch):
    flushed = []
    monkeypatch.setattr(_atomic, 'fsync_dir', flushed.append)
    path = str(tmp_path / 'config.toml')
    _atomic.atomic_write(path, b'version = 2\n')
    assert flushed == [str(tmp_path)]
    with open(path, 'rb') as f:
        assert f.read() == b'version = 2\n'
