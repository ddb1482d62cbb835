# -*- coding: utf-8 -*-
"""containerd as a process (main_process) at the edges of what systemctl shows: PID 1 and a start at the first
microsecond are a running process, 0 is none. systemctl is a stand-in script first in PATH."""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.service import main_process

SYSTEMCTL = '#!/bin/sh\nprintf "%s"\n'


def boot_id():
    with open('/proc/sys/kernel/random/boot_id') as fh:
        return fh.read().strip()


@pytest.fixture
def shows(tmp_path, monkeypatch):
    def set_shown(text):
        path = tmp_path / 'systemctl'
        path.write_text(SYSTEMCTL % text)
        path.chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (tmp_path, os.environ['PATH']))
    return set_shown


def test_pid_1_started_at_the_first_microsecond_is_a_process(shows):
    shows('MainPID=1\\nExecMainStartTimestampMonotonic=1\\n')
    assert main_process('containerd') == dict(pid=1, started=1, boot=boot_id())


@pytest.mark.parametrize('shown', ['MainPID=0\\nExecMainStartTimestampMonotonic=5000\\n',
                                   'MainPID=4242\\nExecMainStartTimestampMonotonic=0\\n'])
def test_a_zero_pid_or_start_is_no_process(shows, shown):
    shows(shown)
    assert main_process('containerd') is None
