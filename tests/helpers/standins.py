# -*- coding: utf-8 -*-
"""What the stand-in tests share: where the stand-ins and the probe image builder are, a command run with
its output kept, a systemctl that says containerd is active, and the end of a containerd they started."""

import os
import subprocess

import pytest

from helpers.common import REPO

STANDINS = os.path.join(REPO, "tests", "standins")
MAKE_PROBE = os.path.join(REPO, "tests", "images", "make_probe_image.py")
PROBE_IMAGE = "localhost/ng-probe:latest"
SYSTEMCTL_ACTIVE = '#!/bin/sh\nprintf "ActiveState=active\\nSubState=running\\nResult=success\\nLoadState=loaded\\n"\n'


def sh(argv, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("universal_newlines", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(argv, check=False, **kw)


def require(condition, msg):
    if not condition:
        pytest.fail(msg + " (run: make deps)", pytrace=False)


def active_systemctl(folder):
    """folder/systemctl saying the unit is active; the folder, to put first in PATH."""
    os.makedirs(str(folder), exist_ok=True)
    path = os.path.join(str(folder), "systemctl")
    with open(path, "w") as fh:
        fh.write(SYSTEMCTL_ACTIVE)
    os.chmod(path, 0o755)
    return str(folder)


def stop_containerd(proc, ctr, base, log):
    """Kill the probe tasks, stop the daemon, close its log and unmount what it left under base."""
    for task in sh(ctr + ["-n", "k8s.io", "tasks", "ls", "-q"]).stdout.split():
        sh(ctr + ["-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", task])
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()
    unmount_below(base)


def unmount_below(base):
    """Lazily unmount what a containerd left mounted under base (its root, state and probe tasks), deepest first."""
    with open("/proc/self/mounts") as fh:
        mounts = [line.split()[1] for line in fh if line.split()[1].startswith(str(base))]
    for mnt in sorted(mounts, reverse=True):
        sh(["umount", "-l", mnt])
