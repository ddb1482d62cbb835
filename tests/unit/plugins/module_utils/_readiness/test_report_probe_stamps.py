# -*- coding: utf-8 -*-
"""What the probes of a check have in common (report.probe_stamps): only when reuse is asked for or a stamps
file exists, with containerd's own PATH and folder. systemctl is a stand-in script first in PATH that names a
real process as containerd's main process."""

import os
import subprocess
import time
from types import SimpleNamespace

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import report, stamps

SYSTEMCTL = '#!/bin/sh\nprintf "MainPID=%d\\nExecMainStartTimestampMonotonic=123456\\n"\n'
CONTAINERD_PATH = '/opt/node/bin:/usr/bin:/bin'


@pytest.fixture
def containerd(tmp_path, monkeypatch):
    """A running process systemctl names as containerd's main one, started with CONTAINERD_PATH."""
    proc = subprocess.Popen(['/bin/sleep', '30'], env=dict(PATH=CONTAINERD_PATH))
    try:
        for _dummy in range(200):
            if stamps.process_path(proc.pid) == CONTAINERD_PATH:
                break
            time.sleep(0.01)
        path = tmp_path / 'bin' / 'systemctl'
        path.parent.mkdir()
        path.write_text(SYSTEMCTL % proc.pid)
        path.chmod(0o755)
        monkeypatch.setenv('PATH', '%s:%s' % (path.parent, os.environ['PATH']))
        yield proc
    finally:
        proc.kill()
        proc.wait()


def params(tmp_path, reuse):
    return dict(state_dir=str(tmp_path / 'state'), probe_reuse_seconds=reuse, service='containerd')


INFO = dict(dump_fingerprint='c' * 64)


def test_reuse_asked_for_shares_containerd_s_path_and_folder(tmp_path, containerd):
    ctx = SimpleNamespace(containerd_bin='/opt/cd/bin/containerd')
    found = report.probe_stamps(ctx, params(tmp_path, 60), INFO, True)
    assert found.active and found.daemon_answers
    assert found.common['path'] == CONTAINERD_PATH != os.environ['PATH']
    assert found.common['beside'] == '/opt/cd/bin'
    assert found.common['containerd']['pid'] == containerd.pid


def test_without_a_known_containerd_binary_nothing_is_beside_it(tmp_path, containerd):
    found = report.probe_stamps(SimpleNamespace(containerd_bin=None), params(tmp_path, 60), INFO, True)
    assert found.common['beside'] is None and found.common['path'] == CONTAINERD_PATH


@pytest.mark.parametrize('reuse', [0, None])
def test_no_reuse_and_no_stamps_file_reads_and_records_nothing(tmp_path, containerd, reuse):
    found = report.probe_stamps(SimpleNamespace(containerd_bin='/opt/cd/bin/containerd'), params(tmp_path, reuse),
                                INFO, True)
    assert found.max_age == 0 and not found.active and found.common is None
