# -*- coding: utf-8 -*-
# Test harness (Molecule scenarios and bench/), not part of the collection's
# content: the host PID of a podman node, for community.docker.nsenter.
"""container_pid lookup: a podman container's host PID, from a cache that checks itself."""

from __future__ import annotations

DOCUMENTATION = r'''
name: container_pid
short_description: The host PID of a running podman container (test harness)
description:
  - Returns the PID that C(podman container inspect) reports for each named container.
  - The answer is kept in a file with the process's start time; a later lookup returns it after checking in
    C(/proc) that the same process still runs, so a node is inspected again only after it restarted (a reboot in
    the scenarios). A podman inspect costs about 100 ms and Ansible templates the connection's PID before every
    task that reaches the node; reading the cache costs well under a millisecond.
  - The cache folder is C($MOLECULE_EPHEMERAL_DIRECTORY/container-pids), else C(container-pids) in the temp folder.
options:
  _terms:
    description: Container names.
    required: true
'''

import os
import subprocess
import tempfile

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase


def _cache_dir():
    base = os.environ.get('MOLECULE_EPHEMERAL_DIRECTORY') or tempfile.gettempdir()
    return os.path.join(base, 'container-pids')


def _start_time(pid):
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: count fields after its closing parenthesis
    return stat.rsplit(')', 1)[1].split()[19]


def _cached(path):
    try:
        with open(path) as f:
            pid, started = f.read().split()
        pid = int(pid)
    except (OSError, ValueError):
        return None
    return pid if _start_time(pid) == started else None


def _inspect(name):
    proc = subprocess.run(['podman', 'container', 'inspect', '--format', '{{.State.Pid}}', name],
                          capture_output=True, text=True, check=False)
    try:
        pid = int(proc.stdout.strip())
    except ValueError:
        pid = 0
    if proc.returncode or pid <= 0:
        raise AnsibleError('container_pid: podman container %s is not running (podman: %s)'
                           % (name, (proc.stderr or proc.stdout).strip() or 'PID 0'))
    return pid


def pid_of(name):
    """The container's PID: the cached one while that process lives, else podman's answer (then cached)."""
    folder = _cache_dir()
    path = os.path.join(folder, name)
    pid = _cached(path)
    if pid is not None:
        return pid
    pid = _inspect(name)
    started = _start_time(pid)
    if started is not None:
        os.makedirs(folder, exist_ok=True)
        # forks look up different hosts, but two plays may race on one: write whole files only
        fd, tmp = tempfile.mkstemp(dir=folder, prefix='.' + name + '.')
        with os.fdopen(fd, 'w') as f:
            f.write('%d %s\n' % (pid, started))
        os.rename(tmp, path)
    return pid


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return [pid_of(str(name)) for name in terms]
