# -*- coding: utf-8 -*-
"""Run a nodeguard module exactly as Ansible does, with crash points.

    python ng_crashable.py MODULE ARGS.json

Same as ``python -m ansible_collections.nodeguard.containerd.plugins.modules.MODULE
ARGS.json`` (what Ansible runs on the node), except that the engine's write
steps are wrapped (calling the real functions) so that a test can:

- NG_CRASH_AT=<point>: SIGKILL this process at that point (deterministic
  crash: e.g. between the ledger write and the config rename);
- NG_SYNC_FD=<fd>: get one byte on that fd when a point is reached, so that
  the test can SIGKILL at a random instant *after* it (random kills aimed
  at the write phase, which is a few ms of a ~150 ms run);
- NG_PAUSE_AT=<point>, NG_PAUSE_S=<s>: sleep there (a test writes meanwhile);
- NG_TIMELOG=<file>: append "<point> <CLOCK_MONOTONIC>" lines (the
  concurrency test uses them to tell the foreign writer's own lost updates
  from nodeguard's).

Points, in the order a write passes them:
  lock_wait       before the lock is taken
  locked          the lock is held
  temp_start      before the temporary config file is written
  temp_written    the temporary file is complete and fsynced
  validated       the validate command ran
  compare         the engine re-reads the file to catch a foreign writer
  ledger_temp     the ledger's temporary file is written, not yet renamed
  ledger_saved    the ledger is in place; the config is not yet renamed
  compare         (again: the last check before the rename)
  renamed         the config is renamed into place; folder not yet fsynced
  committed       the folder is fsynced
"""

import os
import runpy
import signal
import sys
import time

CRASH_AT = os.environ.get('NG_CRASH_AT')
PAUSE_AT = os.environ.get('NG_PAUSE_AT')
PAUSE_S = float(os.environ.get('NG_PAUSE_S') or 1.0)
SYNC_FD = int(os.environ['NG_SYNC_FD']) if os.environ.get('NG_SYNC_FD') else None
TIMELOG = os.environ.get('NG_TIMELOG')
_log = []


def point(name):
    if TIMELOG:
        _log.append('%s %.9f\n' % (name, time.monotonic()))
    if SYNC_FD is not None:
        try:
            os.write(SYNC_FD, (name + '\n').encode())
        except OSError:
            pass
    if CRASH_AT == name:
        os.kill(os.getpid(), signal.SIGKILL)
    if PAUSE_AT == name:
        time.sleep(PAUSE_S)


def flush_log():
    if TIMELOG and _log:
        fd = os.open(TIMELOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, ('pid %d\n' % os.getpid() + ''.join(_log)).encode())
        finally:
            os.close(fd)
        del _log[:]


def install():
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core import atomic as _atomic
    from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core import ledger as _ledger

    real_write_temp = _engine.write_temp
    real_run_validate = _engine.run_validate
    real_read_bytes = _engine.read_bytes
    real_atomic_write = _ledger.atomic_write
    state = {'temp': False}

    def write_temp(*a, **kw):
        point('temp_start')
        tmp = real_write_temp(*a, **kw)
        state['temp'] = True
        point('temp_written')
        return tmp

    def run_validate(*a, **kw):
        out = real_run_validate(*a, **kw)
        point('validated')
        return out

    def read_bytes(path):
        # reads of the config after the temp file was written are the
        # compares that catch a foreign writer (the ledger is a .json)
        if state['temp'] and not path.endswith('.json'):
            point('compare')
        return real_read_bytes(path)

    real_remove_quietly = _engine.remove_quietly

    def remove_quietly(path):
        state['temp'] = False   # the temp file is dropped: the edit starts over
        return real_remove_quietly(path)

    def ledger_atomic_write(path, data, mode=None, uid=None, gid=None):
        tmp = _atomic.write_temp(path, data, mode, uid, gid)
        point('ledger_temp')
        try:
            _atomic.commit_temp(tmp, path)
        except BaseException:
            _atomic.remove_quietly(tmp)
            raise
        point('ledger_saved')

    def commit_temp(tmp, path):
        state['temp'] = False
        os.rename(tmp, path)
        point('renamed')
        _atomic.fsync_dir(os.path.dirname(path) or '.')
        point('committed')

    real_acquire = _atomic.FileLock.acquire

    def acquire(self):
        point('lock_wait')
        out = real_acquire(self)
        point('locked')
        return out

    _atomic.FileLock.acquire = acquire
    _engine.write_temp = write_temp
    _engine.remove_quietly = remove_quietly
    _engine.run_validate = run_validate
    _engine.read_bytes = read_bytes
    _engine.commit_temp = commit_temp
    _ledger.atomic_write = ledger_atomic_write


def main():
    module, argfile = sys.argv[1], sys.argv[2]
    install()
    sys.argv = [module, argfile]
    try:
        runpy.run_module('ansible_collections.nodeguard.containerd.plugins.modules.' + module,
                         run_name='__main__', alter_sys=True)
    finally:
        flush_log()


if __name__ == '__main__':
    main()
