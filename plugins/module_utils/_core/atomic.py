# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Locks and crash-safe writes.

A crash at any instant must leave the old file or the new one, never neither
and never half of one: the new content goes to a temporary file in the same
folder (same filesystem, so rename is atomic), is flushed to disk, renamed
over the target, and the folder is flushed so the rename itself survives a
power cut.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import errno
import fcntl
import hashlib
import json
import os
import signal
import stat
import tempfile
import threading
import time

# The temporary file's name must not match the glob a config imports
# (e.g. conf.d/*.toml), or containerd could load a half-written file.
TEMP_SUFFIX = '.nodeguard-tmp'
LOCK_SUFFIX = '.nodeguard.lock'


class LockTimeout(Exception):
    pass


# what one read of a file being hashed holds in memory: a payload archive of hundreds of MB is never read whole
HASH_CHUNK = 1 << 20


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def sha256_file(path):
    """The file's SHA-256, read in chunks of HASH_CHUNK bytes, or None when it does not exist (as read_bytes)."""
    h = hashlib.sha256()
    try:
        with open(path, 'rb') as f:
            for block in iter(lambda: f.read(HASH_CHUNK), b''):
                h.update(block)
    except IOError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise
    return h.hexdigest()


def read_bytes(path):
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, 'rb') as f:
            return f.read()
    except IOError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise


def read_json(path, damaged):
    """The JSON document of the file at path, or None when it does not exist; a file that holds no JSON raises
    damaged(why), the caller's error naming the file and the fix."""
    raw = read_bytes(path)
    if raw is None:
        return None
    try:
        return json.loads(raw.decode('utf-8'))
    except ValueError as exc:
        raise damaged(exc)


def lock_path_for(path):
    folder, name = os.path.split(path)
    return os.path.join(folder, '.' + name + LOCK_SUFFIX)


class FileLock(object):
    """An flock on a lock file beside the target, waited for up to timeout s.

    The lock file stays after use: deleting it would let two writers hold
    locks on two different inodes.  Its name cannot match an imports glob.
    """

    def __init__(self, path, timeout, create=True):
        self.lock_path = lock_path_for(path)
        self.timeout = timeout
        self.create = create  # check mode must not leave a lock file behind
        self.fd = None
        self.waited = 0.0

    def acquire(self):
        if not self.create and not os.path.exists(self.lock_path):
            return self  # nobody has ever locked this file: nothing to wait for
        fd = os.open(self.lock_path, os.O_RDWR | (os.O_CREAT if self.create else 0), 0o600)
        start = time.monotonic()
        try:
            if _can_block_with_alarm(self.timeout):
                locked = _flock_until(fd, self.timeout)
            else:
                locked = _flock_polling(fd, self.timeout)
        except Exception:
            os.close(fd)
            raise
        if not locked:
            os.close(fd)
            raise LockTimeout('could not lock %s within %s seconds: another nodeguard task '
                              'holds it. Retry later or raise lock_timeout.'
                              % (self.lock_path, self.timeout))
        self.waited = time.monotonic() - start
        self.fd = fd
        return self

    def release(self):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


class _AlarmExpired(Exception):
    pass


def _can_block_with_alarm(timeout):
    """A blocking flock bounded by SIGALRM needs the main thread and a free timer.

    Waiting in the kernel wakes every waiter the moment the lock is released,
    so under contention nobody starves behind a sleeping poller.
    """
    return (timeout > 0 and threading.current_thread() is threading.main_thread()
            and signal.getitimer(signal.ITIMER_REAL)[0] == 0)


def _try_flock(fd):
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except (IOError, OSError) as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return False


def _flock_until(fd, timeout):
    """Blocking flock, interrupted by a one-shot alarm after timeout seconds."""
    fired = []

    def on_alarm(signum, frame):
        if not fired:  # raise at most once, so the cleanup below cannot be hit
            fired.append(True)
            raise _AlarmExpired()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, timeout)
            fcntl.flock(fd, fcntl.LOCK_EX)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _AlarmExpired:
        pass
    finally:
        signal.signal(signal.SIGALRM, previous)
    # The alarm may have fired just after the flock succeeded: ask again
    # (flock on a descriptor that holds the lock succeeds).
    return _try_flock(fd)


def _flock_polling(fd, timeout):
    """flock with LOCK_NB in a short sleep loop (threads, or a busy timer)."""
    start = time.monotonic()
    while True:
        if _try_flock(fd):
            return True
        if time.monotonic() - start >= timeout:
            return False
        time.sleep(0.02)


def fsync_dir(folder):
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_temp(path, data, mode=None, uid=None, gid=None):
    """Write data to a flushed temporary file beside path; return its name.

    Mode and owner default to those of the existing file, so a rename keeps
    them (a config of mode 0600 owned by another user stays so).
    """
    return _write_temp_chunks(path, (data,), mode, uid, gid)


def _write_temp_chunks(path, chunks, mode, uid, gid):
    """write_temp for an iterable of byte strings (a stream is copied in chunks, never held whole)."""
    folder, name = os.path.split(path)
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if mode is None:
        mode = stat.S_IMODE(st.st_mode) if st else 0o644
    if uid is None:
        uid = st.st_uid if st else -1
    if gid is None:
        gid = st.st_gid if st else -1
    fd, tmp = tempfile.mkstemp(prefix='.' + name + '.', suffix=TEMP_SUFFIX, dir=folder or '.')
    try:
        for data in chunks:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        # owner first: chown clears the setuid and setgid bits (even for root), so the mode goes last
        if uid != -1 or gid != -1:
            os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        remove_quietly(tmp)
        raise
    os.close(fd)
    return tmp


def commit_temp(tmp, path):
    """Rename the temporary file over path and flush the folder."""
    os.rename(tmp, path)
    fsync_dir(os.path.dirname(path) or '.')


def atomic_write(path, data, mode=None, uid=None, gid=None):
    tmp = write_temp(path, data, mode, uid, gid)
    try:
        commit_temp(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise


def makedirs_private(folder):
    """Create folder and each missing folder above it with mode 0700 (only root reads what nodeguard keeps there).

    os.makedirs gives its mode to the last folder only: a state_dir created on
    the way to its ledger folder would be 0755. Existing folders are left as they are.
    """
    folder = os.path.abspath(folder)
    if os.path.isdir(folder):
        return
    if os.path.lexists(folder):
        raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), folder)
    makedirs_private(os.path.dirname(folder))
    try:
        os.mkdir(folder, 0o700)
    except OSError as exc:
        if exc.errno != errno.EEXIST or not os.path.isdir(folder):
            raise


def remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def clean_stale_temps(path, older_than=0):
    """Remove temporary files a killed run left beside path; return their names.

    Called under the lock, so no live writer of ours owns them.
    """
    folder, name = os.path.split(path)
    folder = folder or '.'
    removed = []
    prefix = '.' + name + '.'
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    now = time.time()
    for entry in names:
        if entry.startswith(prefix) and entry.endswith(TEMP_SUFFIX):
            full = os.path.join(folder, entry)
            try:
                if now - os.stat(full).st_mtime >= older_than:
                    os.unlink(full)
                    removed.append(full)
            except OSError:
                pass
    return removed


def _temp_name(path):
    """A fresh temporary name beside path, of the form clean_stale_temps removes."""
    folder, name = os.path.split(path)
    token = binascii.hexlify(os.urandom(6)).decode('ascii')
    return os.path.join(folder or '.', '.%s.%s%s' % (name, token, TEMP_SUFFIX))


def atomic_write_stream(path, src, mode=None, uid=None, gid=None, chunk=1 << 20):
    """atomic_write for a file object: its bytes are copied in chunks, never held in memory whole.

    A kata payload has files of hundreds of MB; the temporary file has the
    same name pattern as write_temp's, so clean_stale_temps finds it. Owner
    and group are changed only when given.
    """
    tmp = _write_temp_chunks(path, iter(lambda: src.read(chunk), b''), mode,
                             -1 if uid is None else uid, -1 if gid is None else gid)
    try:
        commit_temp(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise


def atomic_symlink(path, target):
    """Make path a symbolic link to target in one rename (an existing file or link is replaced whole)."""
    for _attempt in range(100):
        tmp = _temp_name(path)
        try:
            os.symlink(target, tmp)
            break
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
    else:
        raise OSError(errno.EEXIST, 'no free temporary name beside %s' % path)
    try:
        commit_temp(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise
