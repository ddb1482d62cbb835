# -*- coding: utf-8 -*-
"""A stamp stands in for a probe only when the CRI plugin check of the same report passed: the report in process
(the daemon side answered as in test_report.py), systemctl a stand-in script first in PATH that names this test's
own process as containerd's main process."""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import CRI_V2

from helpers.report_node import Node

SYSTEMCTL = '#!/bin/sh\nprintf "MainPID=%d\\nExecMainStartTimestampMonotonic=123456\\n"\n'


@pytest.fixture
def node(monkeypatch, tmp_path):
    systemctl = tmp_path / 'bin' / 'systemctl'
    systemctl.parent.mkdir()
    systemctl.write_text(SYSTEMCTL % os.getpid())
    systemctl.chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (systemctl.parent, os.environ['PATH']))
    return Node(monkeypatch, tmp_path)


def probes_run(node):
    return [name for call in node.calls.get('run_probes', []) for name, _argv, _pid in call[0][0]]


def test_a_stamp_is_reused_while_the_cri_plugin_passes(node):
    node.report(probe_reuse_seconds=60)
    assert probes_run(node) == ['runc']
    node.calls.clear()
    node.report(probe_reuse_seconds=60)
    assert probes_run(node) == []


@pytest.mark.parametrize('cri', [{CRI_V2: 'error'}, {}])
def test_without_a_passing_cri_plugin_check_the_probe_runs_again(node, cri):
    node.report(probe_reuse_seconds=60)
    node.calls.clear()
    node.wait['cri_plugins'] = cri
    node.rows = []
    report = node.report(probe_reuse_seconds=60)
    assert [c['status'] for c in report['checks'] if c['name'] == 'cri_plugin'] == ['fail']
    assert probes_run(node) == ['runc']
