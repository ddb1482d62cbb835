# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Processes on the node: run a command with a time limit, find a program,
read a binary's version, and kill a process group for good.

No Ansible imports: modules, the engine and the tests call it directly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ctypes
import os
import re
import signal
import socket
import subprocess
import time

PR_SET_PDEATHSIG = 1
VERSION_RE = re.compile(r'\bv?(\d+)\.(\d+)(?:\.(\d+))?')
SYSTEM_DIRS = ('/usr/sbin', '/usr/bin', '/sbin', '/bin', '/usr/local/sbin', '/usr/local/bin')


def libc_prctl():
    """libc's prctl, resolved in the parent: the child of fork() only calls it
    (no dlopen between fork and exec, which could deadlock a threaded caller)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent_fn():
    """A preexec_fn: unshare gets SIGKILL when the thread that started it dies
    (Ansible killed mid-task), and with --kill-child takes containerd and its
    namespaces along.  None when libc has no prctl."""
    prctl = libc_prctl()
    if prctl is None:
        return None
    sig = int(signal.SIGKILL)

    def preexec():
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    return preexec


def run_command(cmd, timeout=30):
    # without a module (a caller that passes no run_command) and with a timeout run_command does not take
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                            universal_newlines=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return 124, out, err + '\n(killed after %ss)' % timeout
    return proc.returncode, out, err


def which(name, extra=SYSTEM_DIRS, path=None, executable=True):
    """The first file called name in the folders of path (this process's PATH when None), then of extra: an
    executable one, or any regular file with executable=False (the caller judges what it found); else None."""
    folders = (os.environ.get('PATH', '') if path is None else path).split(os.pathsep) + list(extra)
    for d in folders:
        cand = os.path.join(d, name)
        if d and os.path.isfile(cand) and (not executable or os.access(cand, os.X_OK)):
            return cand
    return None


def sibling_ctr(binary):
    """The ctr beside the containerd binary, else the one in PATH, else None."""
    cand = os.path.join(os.path.dirname(os.path.abspath(binary)), 'ctr')
    if os.path.isfile(cand) and os.access(cand, os.X_OK):
        return cand
    return which('ctr', extra=())


_VERSIONS = {}


def binary_version(run_command, binary):
    """((major, minor), 'x.y.z', error), cached per binary file (path, size, mtime)."""
    try:
        st = os.stat(binary)
        key = (os.path.realpath(binary), st.st_size, st.st_mtime)
    except OSError:
        key = None
    if key in _VERSIONS:
        return _VERSIONS[key]
    found = read_version(run_command, binary)
    if key is not None and found[0] is not None:
        _VERSIONS[key] = found
    return found


def read_version(run_command, binary):
    rc, out, err = run_command([binary, '--version'])
    if rc != 0:
        return None, None, (err or out).strip()
    for word in out.split()[1:]:
        m = VERSION_RE.match(word)
        if m:
            return (int(m.group(1)), int(m.group(2))), m.group(0).lstrip('v'), None
    return None, None, 'cannot read a version from %r' % out.strip()


def group_alive(pgid):
    """PIDs of live (not zombie) processes in the process group."""
    alive = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (IOError, OSError, IndexError):
            continue
        # fields after the command: state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ('Z', 'X'):
            alive.append(int(pid))
    return alive


def kill_group(proc, wait=10.0):
    """Kill the daemon's whole process group (unshare, sh, containerd and
    anything they started) and return once none of it is alive, so that the
    namespace, and with it every mount made there, is gone.  SIGKILL at
    once: the private root, state and copies are discarded anyway."""
    if proc is None:
        return
    pgid = proc.pid  # start_new_session: the group leader
    deadline = time.time() + wait
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
        if proc.poll() is None:
            try:
                proc.wait(0.05)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is not None and not group_alive(pgid):
            return
        if time.time() > deadline:
            return
        time.sleep(0.02)


def connectable(path):
    if not os.path.exists(path):
        return False
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        return True
    except (IOError, OSError):
        return False
    finally:
        s.close()


def run_bounded(cmd, timeout):
    try:
        return run_command(cmd, timeout=timeout)
    except OSError as exc:
        return 127, '', str(exc)


def read_text(path):
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')
    except (IOError, OSError):
        return ''


def last_lines(text, n=3, width=400):
    lines = [line.strip()[:width] for line in (text or '').strip().splitlines() if line.strip()]
    return ' | '.join(lines[-n:])
